// The out-of-line cores of the device API, compiled once: routing, the proxy ring, the IBGDA
// operations, the byte-generic put/get (one instance per scope), AMOs, barriers and the
// byte-generic collectives. The headers only declare them unless OXSHMEMI_CORE_IMPL is
// defined, so the generated wrappers' files stay thin (relocatable device code links them).
#define OXSHMEMI_CORE_IMPL
#include "oxshmem_device.cuh"

namespace oxshmemi {

#define OXSHMEMI_INSTANTIATE(V)                                                                              \
    template __device__ void put_bytes<V>(uint32_t, void *, const void *, ptrdiff_t, ptrdiff_t, size_t, size_t, \
                                          int, bool, uint64_t *, uint64_t, int);                             \
    template __device__ void get_bytes<V>(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, size_t, int, bool); \
    template __device__ int team_barrier<V>(uint32_t, nvshmem_team_t, bool);

OXSHMEMI_INSTANTIATE(Thread)
OXSHMEMI_INSTANTIATE(Warp)
OXSHMEMI_INSTANTIATE(Block)
OXSHMEMI_INSTANTIATE(Warpgroup)

}  // namespace oxshmemi
