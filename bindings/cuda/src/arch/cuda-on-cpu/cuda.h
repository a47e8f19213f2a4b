// The CUDA driver API's types on the CPU target: what NVSHMEM's headers bring in with <cuda.h>
// and programs name (CUresult, CUdeviceptr, CUstream, CUdevice, CUcontext). The CPU target has
// no driver API calls of its own; the host library talks to the emulated driver directly.
#pragma once
#include "cuda_runtime.h"

#define CUDA_VERSION 13000
typedef int CUresult;
#define CUDA_SUCCESS 0
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
