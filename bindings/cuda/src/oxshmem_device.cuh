// The device API's templates, one header per area; the generated wrappers (generated/*.cu)
// include this and call oxshmemi::api::KEY<SCOPE[, T][, OP]>(...).
//
// What is not implemented (every device/both name of bindings/api/nvshmem_api.tsv is defined
// except the first row):
//
// | what                                   | names | status                                          |
// |----------------------------------------|-------|-------------------------------------------------|
// | nvshmemx::tile_* (C++ templates)       | 44    | neither declared nor defined                    |
// | nvshmemx_qp_* (explicit QP handle)     | 507   | defined; the handle is ignored (same ordering)  |
// | IBGDA fence                            | -     | completes the thread's queues (NVSHMEM fences   |
// |                                        |       | the next WQE; that needs per-thread state)      |
// | IBGDA soft-NIC kick                    | -     | the device cannot wake a sleeping software NIC: |
// |                                        |       | the host's NIC must poll the doorbells          |
// | nvshmemx_mc_ptr                        | 1     | returns NULL (no multicast objects)             |
#pragma once

#include "state.cuh"
#include "rma.cuh"
#include "amo.cuh"
#include "wait.cuh"
#include "sync.cuh"
#include "coll.cuh"
#include "misc.cuh"
