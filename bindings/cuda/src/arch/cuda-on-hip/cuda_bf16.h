// CUDA's __nv_bfloat16 on HIP (see cuda_runtime.h here): HIP's hip_bfloat16, with its
// arithmetic.
#pragma once
#include <hip/hip_bfloat16.h>
typedef hip_bfloat16 __nv_bfloat16;
