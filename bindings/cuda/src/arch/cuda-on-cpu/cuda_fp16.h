// half on the CPU target: the compiler's IEEE binary16 (../cpu.cuh), with CUDA's conversions.
#pragma once
#include "cuda_runtime.h"
typedef half __half;
inline half __float2half(float f) { return (half)f; }
inline float __half2float(half h) { return (float)h; }
inline half __int2half_rn(int i) { return (half)(float)i; }
