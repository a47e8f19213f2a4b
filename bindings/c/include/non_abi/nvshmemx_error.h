/*
 * non_abi/nvshmemx_error.h -- oxshmem's counterpart of the NVSHMEM header of that name.
 *
 * NVSHMEM's nvshmem.h includes it, and NVSHMEM's perftests and tests use what it defines: the
 * NVSHMEMI_*_PRINT / _EXIT / _JMP / _RET reporting macros and nvshmemx_status_string(). The
 * macros take the same arguments and do the same thing as NVSHMEM's (a line on stderr, or
 * stdout for warnings, that starts with the file and line, then the caller's printf format;
 * then nothing, exit(-1), a goto or a return). Written for oxshmem; see docs/nvshmem.md. Not
 * generated.
 */
#ifndef OXSHMEM_NVSHMEMX_ERROR_H
#define OXSHMEM_NVSHMEMX_ERROR_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* enum nvshmemx_status (NVSHMEMX_SUCCESS, NVSHMEMX_ERROR_*) */
#include "../nvshmem.h"

/* The name of an nvshmemx_status value ("NVSHMEMX_ERROR_<unknown>" for any other). */
static inline const char *nvshmemx_status_string(int status) {
    switch (status) {
        case NVSHMEMX_SUCCESS: return "NVSHMEMX_SUCCESS";
        case NVSHMEMX_ERROR_INVALID_VALUE: return "NVSHMEMX_ERROR_INVALID_VALUE";
        case NVSHMEMX_ERROR_OUT_OF_MEMORY: return "NVSHMEMX_ERROR_OUT_OF_MEMORY";
        case NVSHMEMX_ERROR_NOT_SUPPORTED: return "NVSHMEMX_ERROR_NOT_SUPPORTED";
        case NVSHMEMX_ERROR_SYMMETRY: return "NVSHMEMX_ERROR_SYMMETRY";
        case NVSHMEMX_ERROR_GPU_NOT_SELECTED: return "NVSHMEMX_ERROR_GPU_NOT_SELECTED";
        case NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED: return "NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED";
        case NVSHMEMX_ERROR_INTERNAL: return "NVSHMEMX_ERROR_INTERNAL";
        default: return "NVSHMEMX_ERROR_<unknown>";
    }
}

#define nvshmemxi_error_unlikely(x) __builtin_expect(!!(x), 0)

/* One report: `head` (a printf format with its own arguments in parentheses), then the caller's
 * format and arguments, then a newline. */
#define OXSHMEMI_REPORT(stream, head, ...) \
    do {                                   \
        fprintf head;                      \
        fprintf(stream, __VA_ARGS__);      \
        fputc('\n', stream);               \
    } while (0)

#define NVSHMEMI_ERROR_PRINT(...) OXSHMEMI_REPORT(stderr, (stderr, "%s:%s:%d: ", __FILE__, __func__, __LINE__), __VA_ARGS__)
#define NVSHMEMI_WARN_PRINT(...) OXSHMEMI_REPORT(stdout, (stdout, "WARN: "), __VA_ARGS__)
#define NVSHMEMI_ERROR_EXIT(...)      \
    do {                              \
        NVSHMEMI_ERROR_PRINT(__VA_ARGS__); \
        exit(-1);                     \
    } while (0)

/* Report, set status = err, goto label. */
#define OXSHMEMI_FAIL_JMP(head, status, err, label, ...)   \
    do {                                                   \
        OXSHMEMI_REPORT(stderr, head, __VA_ARGS__);        \
        (status) = (err);                                  \
        goto label;                                        \
    } while (0)
/* Report, set status = err, return it. */
#define OXSHMEMI_FAIL_RET(head, status, err, ...)          \
    do {                                                   \
        OXSHMEMI_REPORT(stderr, head, __VA_ARGS__);        \
        (status) = (err);                                  \
        return (status);                                   \
    } while (0)
#define OXSHMEMI_STATUS_HEAD(s) \
    (stderr, "%s:%d: error status: %d (%s) ", __FILE__, __LINE__, (int)(s), nvshmemx_status_string((int)(s)))
#define OXSHMEMI_NONZERO_HEAD(s) (stderr, "%s:%d: non-zero status: %d ", __FILE__, __LINE__, (int)(s))

#define NVSHMEMI_ERROR_JMP(status, err, label, ...) OXSHMEMI_FAIL_JMP(OXSHMEMI_STATUS_HEAD(err), status, err, label, __VA_ARGS__)
#define NVSHMEMI_NULL_ERROR_JMP(var, status, err, label, ...)                                                 \
    do {                                                                                                      \
        if (nvshmemxi_error_unlikely((var) == NULL))                                                          \
            OXSHMEMI_FAIL_JMP((stderr, "%s:%d: NULL value ", __FILE__, __LINE__), status, err, label, __VA_ARGS__); \
    } while (0)
#define NVSHMEMI_EQ_ERROR_JMP(status, expected, err, label, ...)                                    \
    do {                                                                                            \
        if (nvshmemxi_error_unlikely((status) == (expected)))                                       \
            OXSHMEMI_FAIL_JMP(OXSHMEMI_STATUS_HEAD(status), status, err, label, __VA_ARGS__);       \
    } while (0)
#define NVSHMEMI_NE_ERROR_JMP(status, expected, err, label, ...)                                    \
    do {                                                                                            \
        if (nvshmemxi_error_unlikely((status) != (expected)))                                       \
            OXSHMEMI_FAIL_JMP(OXSHMEMI_STATUS_HEAD(status), status, err, label, __VA_ARGS__);       \
    } while (0)
#define NVSHMEMI_NZ_ERROR_JMP(status, err, label, ...)                                              \
    do {                                                                                            \
        if (nvshmemxi_error_unlikely((status) != 0))                                                \
            OXSHMEMI_FAIL_JMP(OXSHMEMI_STATUS_HEAD(status), status, err, label, __VA_ARGS__);       \
    } while (0)
#define NVSHMEMI_CHECK_ERROR_JMP(statement, status, err, label, ...)                                \
    do {                                                                                            \
        if (nvshmemxi_error_unlikely(statement))                                                    \
            OXSHMEMI_FAIL_JMP((stderr, "%s:%d: ", __FILE__, __LINE__), status, err, label, __VA_ARGS__); \
    } while (0)

#define NVSHMEMI_ERROR_RET(status, err, ...) OXSHMEMI_FAIL_RET(OXSHMEMI_NONZERO_HEAD(err), status, err, __VA_ARGS__)
#define NVSHMEMI_NULL_ERROR_RET(var, status, err, ...)                                                  \
    do {                                                                                                \
        if (nvshmemxi_error_unlikely((var) == NULL))                                                    \
            OXSHMEMI_FAIL_RET((stderr, "%s:%d: NULL value ", __FILE__, __LINE__), status, err, __VA_ARGS__); \
    } while (0)
#define NVSHMEMI_NZ_ERROR_RET(status, err, ...)                                                     \
    do {                                                                                            \
        if (nvshmemxi_error_unlikely((status) != 0))                                                \
            OXSHMEMI_FAIL_RET(OXSHMEMI_NONZERO_HEAD(status), status, err, __VA_ARGS__);             \
    } while (0)
#define NVSHMEMI_NE_ERROR_RET(status, expected, err, ...)                                           \
    do {                                                                                            \
        if (nvshmemxi_error_unlikely((status) != (expected)))                                       \
            OXSHMEMI_FAIL_RET(OXSHMEMI_NONZERO_HEAD(status), status, err, __VA_ARGS__);             \
    } while (0)

/* Report with errno's text (NZ_EXIT) or the status's own (SYSCHECK: a pthread-style code), exit. */
#define NVSHMEMI_NZ_EXIT(status, ...)                                                                      \
    do {                                                                                                   \
        if (nvshmemxi_error_unlikely((status) != 0)) {                                                     \
            OXSHMEMI_REPORT(stderr, (stderr, "%s:%d: non-zero status: %d: %s, exiting... ", __FILE__, __LINE__, \
                                     (int)(status), strerror(errno)), __VA_ARGS__);                        \
            exit(-1);                                                                                      \
        }                                                                                                  \
    } while (0)
#define NVSHMEMI_NZ_SYSCHECK_EXIT(sys_status, ...)                                                         \
    do {                                                                                                   \
        int oxshmemi_sys_ = (int)(sys_status);                                                             \
        if (nvshmemxi_error_unlikely(oxshmemi_sys_ != 0)) {                                                \
            OXSHMEMI_REPORT(stderr, (stderr, "%s:%d: non-zero status: %d: %s, exiting... ", __FILE__, __LINE__, \
                                     oxshmemi_sys_, strerror(oxshmemi_sys_)), __VA_ARGS__);                \
            exit(-1);                                                                                      \
        }                                                                                                  \
    } while (0)

#endif /* OXSHMEMX_ERROR_H */
