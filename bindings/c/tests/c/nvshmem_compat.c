/* The headers NVSHMEM's programs include besides nvshmem.h, used from C the way NVSHMEM's
 * perftests use them: the error macros (which nvshmem.h brings, as NVSHMEM's does), assert
 * without <assert.h>, and the NVSHMEMI_REPT_* type lists. header.rs compiles it with -Werror and
 * compares what it prints. */
#include <stdio.h>
#include "nvshmem.h"
#include "nvshmemx.h"
#include "non_abi/nvshmemx_error.h"
#include "device_host/nvshmem_common.cuh"

#define COUNT3(NAME, TYPE, OP) +1
#define COUNT2(NAME, TYPE) +1
#define COUNT_SC(SC, NAME, TYPE) +1
#define COUNT1(BITS) +1
#define SIZE2(NAME, TYPE) +(int)sizeof(TYPE)

static int jumps(int status) {
    int rc = 0;
    NVSHMEMI_NZ_ERROR_JMP(status, NVSHMEMX_ERROR_INTERNAL, out, "step %d", 3);
    NVSHMEMI_NULL_ERROR_JMP((void *)0, rc, NVSHMEMX_ERROR_OUT_OF_MEMORY, out, "no buffer");
out:
    return status ? status : rc;
}

static int returns(int status) {
    NVSHMEMI_NE_ERROR_RET(status, 0, NVSHMEMX_ERROR_INVALID_VALUE, "ret %s", "path");
    return 0;
}

static int checks(int bad) {
    int status = 0;
    NVSHMEMI_CHECK_ERROR_JMP(bad > 1, status, NVSHMEMX_ERROR_SYMMETRY, out, "bad %d", bad);
    NVSHMEMI_EQ_ERROR_JMP(bad, 1, NVSHMEMX_ERROR_NOT_SUPPORTED, out, "one");
out:
    return status ? status : bad;
}

int main(void) {
    assert(NVSHMEMX_SUCCESS == 0);
    NVSHMEMI_ERROR_PRINT("compat %d", 42);
    NVSHMEMI_WARN_PRINT("careful %s", "now");
    printf("jmp %d %d\n", jumps(5), jumps(0));
    printf("ret %d %d\n", returns(9), returns(0));
    printf("check %d %d %d\n", checks(2), checks(1), checks(0));
    printf("string %s %s\n", nvshmemx_status_string(NVSHMEMX_ERROR_SYMMETRY), nvshmemx_status_string(99));
    printf("counts %d %d %d %d %d\n", 0 NVSHMEMI_REPT_TYPES_AND_OPS_FOR_REDUCE(COUNT3),
           0 NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES_WITH_SCOPE(COUNT_SC, warp),
           0 NVSHMEMI_REPT_FOR_WAIT_TYPES(COUNT2), 0 NVSHMEMI_REPT_FOR_SIZES(COUNT1),
           0 NVSHMEMI_REPT_FOR_WAIT_TYPES(SIZE2));
    printf("round %d %d\n", NVSHMEMI_TEAM_ROUND_UP(10, 8), NVSHMEMI_TEAM_ROUND_UP_DIV(17, 8));
    return 0;
}
