// The CPU target's runtime API: see cuda_runtime.h.
#pragma once
#include "cuda_runtime.h"
