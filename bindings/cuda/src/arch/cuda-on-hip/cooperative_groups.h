// CUDA's cooperative groups on HIP (see cuda_runtime.h here): HIP's own, in the same namespace.
#pragma once
#include <hip/hip_cooperative_groups.h>
