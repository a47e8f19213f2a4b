// __nv_bfloat16 on the CPU target (../cpu.cuh), with CUDA's conversions.
#pragma once
#include "cuda_runtime.h"
typedef __nv_bfloat16 nv_bfloat16;
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }
