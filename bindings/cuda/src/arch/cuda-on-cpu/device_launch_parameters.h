// threadIdx, blockIdx, blockDim, gridDim and warpSize on the CPU target: see cuda_runtime.h.
#pragma once
#include "cuda_runtime.h"
