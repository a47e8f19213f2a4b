// CUDA's half on HIP (see cuda_runtime.h here): HIP's __half, with its arithmetic.
#pragma once
#include <hip/hip_fp16.h>
#define OXSHMEM_NVSHMEM_CUDA_HALF 1
