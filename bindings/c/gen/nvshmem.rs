//! NVSHMEM's host API: the templates of its typed families, its untyped routines, and the text
//! of `nvshmem.h`.
//!
//! The typed routines come from the same `types.tsv` as OpenSHMEM's (the `nv_*` families say
//! which types each has; `half` and `bfloat16` exist only there), and their bodies call the same
//! `crate::ops` functions as the `shmem_` routines, so an NVSHMEM name costs what its OpenSHMEM
//! twin costs. What NVSHMEM does differently is translated in `crate::nvshmem`: team handles are
//! integers, the comparison and signal-operation constants have other values, and the
//! `*_on_stream` forms run through a stream executor.
//!
//! Prototypes follow NVSHMEM 3.4's headers (`bindings/api/nvshmem_host_prototypes.tsv` is the
//! reference the header tests hold them to).

use super::ops::{Api, Header, Special};

/// One routine of a typed NVSHMEM family.
#[derive(Clone, Copy)]
pub(crate) struct NvOp {
    /// Header section.
    pub(crate) group: &'static str,
    /// Full name with `{T}` for the TYPENAME (`nvshmem_{T}_put`).
    pub(crate) name: &'static str,
    /// The `types.tsv` family whose types have the typed form.
    pub(crate) fam: &'static str,
    /// Full name of the sized forms (`nvshmem_put{S}`) and the families that have them.
    pub(crate) sized: Option<(&'static str, &'static str)>,
    /// C return type.
    pub(crate) ret: &'static str,
    /// C parameters, `TYPE` for the element type; a `*_on_stream` form gets
    /// `cudaStream_t cstrm` appended.
    pub(crate) params: &'static str,
    /// A `*_on_stream` form: runs through the stream executor.
    pub(crate) stream: bool,
    /// Reduction operation (`{OP}`).
    pub(crate) op: &'static str,
    /// The Rust body: an expression; `{F}` the name, `{ES}` the element size, `{OP}` the
    /// operation, `{CTX}` the default context.
    pub(crate) body: &'static str,
}

const N: NvOp =
    NvOp { group: "", name: "", fam: "nv_rma", sized: None, ret: "void", params: "", stream: false, op: "", body: "" };

const RMA: &str = "RMA";
const RMA_STREAM: &str = "RMA on a stream";
const AMO: &str = "Atomic memory operations";
const SIG_STREAM: &str = "Signals on a stream";
const WAIT_STREAM: &str = "Point-to-point synchronization on a stream";
const COLL: &str = "Collectives";
const COLL_STREAM: &str = "Collectives on a stream";

const PUT: &str = "TYPE *dest, const TYPE *source, size_t nelems, int pe";
const STRIDED: &str = "TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe";
const PUT_SIGNAL: &str =
    "TYPE *dest, const TYPE *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe";
const VALUE: &str = "TYPE *dest, TYPE value, int pe";
const TEAM_2: &str = "nvshmem_team_t team, TYPE *dest, const TYPE *src, size_t nelem";
const REDUCE: &str = "nvshmem_team_t team, TYPE *dest, const TYPE *src, size_t nreduce";

const P_BODY: &str = "ops::p({F}, {CTX}, dest, value, pe)";
const G_BODY: &str = "ops::g({F}, {CTX}, src, pe)";
const PUT_BODY: &str = "ops::put({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, pe)";
const GET_BODY: &str = "ops::get({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, pe)";
const IPUT_BODY: &str = "ops::iput({F}, {CTX}, dest.cast(), source.cast(), dst, sst, nelems, {ES}, pe)";
const IGET_BODY: &str = "ops::iget({F}, {CTX}, dest.cast(), source.cast(), dst, sst, nelems, {ES}, pe)";
const PUT_NBI_BODY: &str = "ops::put_nbi({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, pe)";
const GET_NBI_BODY: &str = "ops::get_nbi({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, pe)";
const PUT_SIGNAL_BODY: &str = "ops::put_signal({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, sig_addr, signal, nvshmem::sig_op({F}, sig_op), pe)";
const BCAST_BODY: &str =
    "nvshmem::team_status({F}, team, |t| ops::broadcast({F}, t, dest.cast(), src.cast(), nelem, {ES}, PE_root))";
const FCOLLECT_BODY: &str =
    "nvshmem::team_status({F}, team, |t| ops::collect({F}, t, dest.cast(), src.cast(), nelem, {ES}, true))";
const ALLTOALL_BODY: &str =
    "nvshmem::team_status({F}, team, |t| ops::alltoalls({F}, t, dest.cast(), src.cast(), 1, 1, nelem, {ES}))";
const REDUCE_BODY: &str =
    "nvshmem::team_status({F}, team, |t| ops::reduce({F}, t, ReduceOp::{OP}, dest, src, nreduce))";
const RS_BODY: &str =
    "nvshmem::team_status({F}, team, |t| nvshmem::reducescatter({F}, t, ReduceOp::{OP}, dest, src, nreduce))";

/// The RMA templates; each also has an `nvshmemx_..._on_stream` form.
const RMA_OPS: &[NvOp] = &[
    NvOp { name: "nvshmem_{T}_p", params: "TYPE *dest, const TYPE value, int pe", body: P_BODY, ..N },
    NvOp { name: "nvshmem_{T}_put", sized: Some(("nvshmem_put{S}", "bits mem")), params: PUT, body: PUT_BODY, ..N },
    NvOp { name: "nvshmem_{T}_iput", sized: Some(("nvshmem_iput{S}", "bits")), params: STRIDED, body: IPUT_BODY, ..N },
    NvOp {
        name: "nvshmem_{T}_put_nbi",
        sized: Some(("nvshmem_put{S}_nbi", "bits mem")),
        params: PUT,
        body: PUT_NBI_BODY,
        ..N
    },
    NvOp { name: "nvshmem_{T}_g", ret: "TYPE", params: "const TYPE *src, int pe", body: G_BODY, ..N },
    NvOp { name: "nvshmem_{T}_get", sized: Some(("nvshmem_get{S}", "bits mem")), params: PUT, body: GET_BODY, ..N },
    NvOp { name: "nvshmem_{T}_iget", sized: Some(("nvshmem_iget{S}", "bits")), params: STRIDED, body: IGET_BODY, ..N },
    NvOp {
        name: "nvshmem_{T}_get_nbi",
        sized: Some(("nvshmem_get{S}_nbi", "bits mem")),
        params: PUT,
        body: GET_NBI_BODY,
        ..N
    },
];

/// The collective templates; each also has an `nvshmemx_..._on_stream` form.
const COLL_OPS: &[NvOp] = &[
    NvOp {
        name: "nvshmem_{T}_alltoall",
        sized: Some(("nvshmem_alltoall{S}", "mem")),
        ret: "int",
        params: TEAM_2,
        body: ALLTOALL_BODY,
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_broadcast",
        sized: Some(("nvshmem_broadcast{S}", "mem")),
        ret: "int",
        params: "nvshmem_team_t team, TYPE *dest, const TYPE *src, size_t nelem, int PE_root",
        body: BCAST_BODY,
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_fcollect",
        sized: Some(("nvshmem_fcollect{S}", "mem")),
        ret: "int",
        params: TEAM_2,
        body: FCOLLECT_BODY,
        ..N
    },
];

/// The reductions (reduce and reducescatter of each operation); each also has an
/// `nvshmemx_..._on_stream` form.
const REDUCE_OPS: &[(&str, &str, &str)] = &[
    ("and", "And", "nv_red_bit"),
    ("or", "Or", "nv_red_bit"),
    ("xor", "Xor", "nv_red_bit"),
    ("max", "Max", "nv_red_arith"),
    ("min", "Min", "nv_red_arith"),
    ("sum", "Sum", "nv_red_arith"),
    ("prod", "Prod", "nv_red_arith"),
];

/// The templates that exist only as `*_on_stream` forms.
const STREAM_ONLY: &[NvOp] = &[
    NvOp {
        group: SIG_STREAM,
        name: "nvshmemx_{T}_put_signal_on_stream",
        sized: Some(("nvshmemx_put{S}_signal_on_stream", "bits mem")),
        params: PUT_SIGNAL,
        stream: true,
        body: PUT_SIGNAL_BODY,
        ..N
    },
    NvOp {
        group: SIG_STREAM,
        name: "nvshmemx_{T}_put_signal_nbi_on_stream",
        sized: Some(("nvshmemx_put{S}_signal_nbi_on_stream", "bits mem")),
        params: PUT_SIGNAL,
        stream: true,
        body: PUT_SIGNAL_BODY,
        ..N
    },
    NvOp {
        group: WAIT_STREAM,
        name: "nvshmemx_{T}_wait_until_on_stream",
        fam: "nv_wait",
        params: "TYPE *ivar, int cmp, TYPE cmp_value",
        stream: true,
        body: "ops::wait_until({F}, ivar, nvshmem::cmp({F}, cmp), cmp_value)",
        ..N
    },
    NvOp {
        group: WAIT_STREAM,
        name: "nvshmemx_{T}_wait_until_all_on_stream",
        fam: "nv_wait",
        params: "TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value",
        stream: true,
        body: "ops::wait_until_all({F}, ivars, nelems, status, nvshmem::cmp({F}, cmp), Vals::One(cmp_value))",
        ..N
    },
    NvOp {
        group: WAIT_STREAM,
        name: "nvshmemx_{T}_wait_until_all_vector_on_stream",
        fam: "nv_wait",
        params: "TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_value",
        stream: true,
        body: "ops::wait_until_all({F}, ivars, nelems, status, nvshmem::cmp({F}, cmp), Vals::Each(cmp_value))",
        ..N
    },
];

/// The atomic memory operations (host-callable, no stream forms).
const AMO_OPS: &[NvOp] = &[
    NvOp {
        name: "nvshmem_{T}_atomic_fetch",
        fam: "nv_ext",
        ret: "TYPE",
        params: "const TYPE *dest, int pe",
        body: "ops::amo({F}, {CTX}, dest.cast_mut(), Amo::Fetch, pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_set",
        fam: "nv_ext",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::Set(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_swap",
        fam: "nv_ext",
        ret: "TYPE",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::Swap(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_compare_swap",
        fam: "nv_amo",
        ret: "TYPE",
        params: "TYPE *dest, TYPE cond, TYPE value, int pe",
        body: "ops::amo({F}, {CTX}, dest, Amo::CompareSwap(cond, value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_fetch_inc",
        fam: "nv_amo",
        ret: "TYPE",
        params: "TYPE *dest, int pe",
        body: "ops::amo({F}, {CTX}, dest, Amo::Inc, pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_inc",
        fam: "nv_amo",
        params: "TYPE *dest, int pe",
        body: "ops::amo({F}, {CTX}, dest, Amo::Inc, pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_fetch_add",
        fam: "nv_amo",
        ret: "TYPE",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::Add(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_add",
        fam: "nv_amo",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::Add(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_fetch_and",
        fam: "nv_bitwise",
        ret: "TYPE",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::And(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_and",
        fam: "nv_bitwise",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::And(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_fetch_or",
        fam: "nv_bitwise",
        ret: "TYPE",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::Or(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_or",
        fam: "nv_bitwise",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::Or(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_fetch_xor",
        fam: "nv_bitwise",
        ret: "TYPE",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::Xor(value), pe)",
        ..N
    },
    NvOp {
        name: "nvshmem_{T}_atomic_xor",
        fam: "nv_bitwise",
        params: VALUE,
        body: "ops::amo({F}, {CTX}, dest, Amo::Xor(value), pe)",
        ..N
    },
];

/// Every typed NVSHMEM routine template, in header order: each thread form followed by its
/// stream form where one exists.
pub(crate) fn nv_ops() -> Vec<NvOp> {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let stream_form = |op: &NvOp, group: &'static str| NvOp {
        group,
        name: leak(op.name.replacen("nvshmem_", "nvshmemx_", 1) + "_on_stream"),
        sized: op.sized.map(|(p, f)| (leak(p.replacen("nvshmem_", "nvshmemx_", 1) + "_on_stream"), f)),
        stream: true,
        ..*op
    };
    let mut out = Vec::new();
    for op in RMA_OPS {
        out.push(NvOp { group: RMA, ..*op });
    }
    for op in RMA_OPS {
        out.push(stream_form(op, RMA_STREAM));
    }
    out.extend(STREAM_ONLY.iter().copied());
    for op in AMO_OPS {
        out.push(NvOp { group: AMO, ..*op });
    }
    let mut coll = Vec::new();
    for op in COLL_OPS {
        coll.push(NvOp { group: COLL, ..*op });
    }
    for (name, op, fam) in REDUCE_OPS {
        coll.push(NvOp {
            group: COLL,
            name: leak(format!("nvshmem_{{T}}_{name}_reduce")),
            fam,
            ret: "int",
            params: REDUCE,
            op,
            body: REDUCE_BODY,
            ..N
        });
        coll.push(NvOp {
            group: COLL,
            name: leak(format!("nvshmem_{{T}}_{name}_reducescatter")),
            fam,
            ret: "int",
            params: REDUCE,
            op,
            body: RS_BODY,
            ..N
        });
    }
    let streams: Vec<NvOp> = coll.iter().map(|op| stream_form(op, COLL_STREAM)).collect();
    out.extend(coll);
    out.extend(streams);
    out
}

const NV: Api = Api {
    group: "",
    name: "",
    ret: "void",
    params: "void",
    deprecated: false,
    special: Special::None,
    header: Header::Nvshmem,
    c_body: None,
};

const SETUP: &str = "Library setup, exit, and query";
const MEMORY: &str = "Memory management";
const TEAMS: &str = "Team management";
const SYNC: &str = "Ordering, barriers and synchronization";
const SIGNAL: &str = "Signals";
const LAUNCH: &str = "Collective kernel launch";

/// Every untyped NVSHMEM host routine (written by hand in `src/nvshmem/`).
pub(crate) const NV_API: &[Api] = &[
    Api { group: SETUP, name: "nvshmem_init", ..NV },
    Api { group: SETUP, name: "nvshmem_init_thread", ret: "int", params: "int requested, int *provided", ..NV },
    Api { group: SETUP, name: "nvshmem_query_thread", params: "int *provided", ..NV },
    Api { group: SETUP, name: "nvshmem_finalize", ..NV },
    Api { group: SETUP, name: "nvshmem_global_exit", params: "int status", ..NV },
    Api { group: SETUP, name: "nvshmem_my_pe", ret: "int", ..NV },
    Api { group: SETUP, name: "nvshmem_n_pes", ret: "int", ..NV },
    Api { group: SETUP, name: "nvshmem_info_get_version", params: "int *major, int *minor", ..NV },
    Api { group: SETUP, name: "nvshmem_info_get_name", params: "char *name", ..NV },
    Api { group: SETUP, name: "nvshmemx_vendor_get_version_info", params: "int *major, int *minor, int *patch", ..NV },
    Api { group: SETUP, name: "nvshmemx_init_status", ret: "int", ..NV },
    Api {
        group: SETUP,
        name: "nvshmemx_init_attr",
        ret: "int",
        params: "unsigned int flags, nvshmemx_init_attr_t *attributes",
        ..NV
    },
    Api {
        group: SETUP,
        name: "nvshmemx_hostlib_init_attr",
        ret: "int",
        params: "unsigned int flags, nvshmemx_init_attr_t *attr",
        ..NV
    },
    Api { group: SETUP, name: "nvshmemx_hostlib_finalize", ..NV },
    Api {
        group: SETUP,
        name: "nvshmemx_set_attr_uniqueid_args",
        ret: "int",
        params: "const int myrank, const int nranks, const nvshmemx_uniqueid_t *uniqueid, nvshmemx_init_attr_t *attr",
        ..NV
    },
    Api {
        group: SETUP,
        name: "nvshmemx_set_attr_mpi_comm_args",
        ret: "int",
        params: "void *mpi_comm, nvshmemx_init_attr_t *nvshmem_attr",
        ..NV
    },
    Api { group: SETUP, name: "nvshmemx_get_uniqueid", ret: "int", params: "nvshmemx_uniqueid_t *uniqueid", ..NV },
    Api { group: SETUP, name: "nvshmemx_cumodule_init", ret: "int", params: "CUmodule module", ..NV },
    Api { group: SETUP, name: "nvshmemx_cumodule_finalize", ret: "int", params: "CUmodule module", ..NV },
    Api { group: SETUP, name: "nvshmemx_culibrary_init", ret: "int", params: "CUlibrary library", ..NV },
    Api { group: SETUP, name: "nvshmemx_culibrary_finalize", ret: "int", params: "CUlibrary library", ..NV },
    Api {
        group: SETUP,
        name: "nvshmemx_qp_create",
        ret: "int",
        params: "int num_qps, nvshmemx_qp_handle_t **out_qp_array",
        ..NV
    },
    Api { group: MEMORY, name: "nvshmem_malloc", ret: "void *", params: "size_t size", ..NV },
    Api { group: MEMORY, name: "nvshmem_calloc", ret: "void *", params: "size_t count, size_t size", ..NV },
    Api { group: MEMORY, name: "nvshmem_align", ret: "void *", params: "size_t alignment, size_t size", ..NV },
    Api { group: MEMORY, name: "nvshmem_free", params: "void *ptr", ..NV },
    Api { group: MEMORY, name: "nvshmem_ptr", ret: "void *", params: "const void *ptr, int pe", ..NV },
    Api { group: MEMORY, name: "nvshmemx_mc_ptr", ret: "void *", params: "nvshmem_team_t team, const void *ptr", ..NV },
    Api { group: MEMORY, name: "nvshmemx_buffer_register", ret: "int", params: "void *addr, size_t length", ..NV },
    Api { group: MEMORY, name: "nvshmemx_buffer_unregister", ret: "int", params: "void *addr", ..NV },
    Api { group: MEMORY, name: "nvshmemx_buffer_unregister_all", ..NV },
    Api {
        group: MEMORY,
        name: "nvshmemx_buffer_register_symmetric",
        ret: "void *",
        params: "void *buf_ptr, size_t size, int flags",
        ..NV
    },
    Api {
        group: MEMORY,
        name: "nvshmemx_buffer_unregister_symmetric",
        ret: "int",
        params: "void *mmap_ptr, size_t size",
        ..NV
    },
    Api { group: TEAMS, name: "nvshmem_team_my_pe", ret: "int", params: "nvshmem_team_t team", ..NV },
    Api { group: TEAMS, name: "nvshmem_team_n_pes", ret: "int", params: "nvshmem_team_t team", ..NV },
    Api {
        group: TEAMS,
        name: "nvshmem_team_get_config",
        params: "nvshmem_team_t team, nvshmem_team_config_t *config",
        ..NV
    },
    Api {
        group: TEAMS,
        name: "nvshmem_team_translate_pe",
        ret: "int",
        params: "nvshmem_team_t src_team, int src_pe, nvshmem_team_t dest_team",
        ..NV
    },
    Api {
        group: TEAMS,
        name: "nvshmem_team_split_strided",
        ret: "int",
        params: "nvshmem_team_t parent_team, int PE_start, int PE_stride, int PE_size, const nvshmem_team_config_t *config, long config_mask, nvshmem_team_t *new_team",
        ..NV
    },
    Api {
        group: TEAMS,
        name: "nvshmem_team_split_2d",
        ret: "int",
        params: "nvshmem_team_t parent_team, int xrange, const nvshmem_team_config_t *xaxis_config, long xaxis_mask, nvshmem_team_t *xaxis_team, const nvshmem_team_config_t *yaxis_config, long yaxis_mask, nvshmem_team_t *yaxis_team",
        ..NV
    },
    Api { group: TEAMS, name: "nvshmem_team_destroy", params: "nvshmem_team_t team", ..NV },
    Api {
        group: TEAMS,
        name: "nvshmemx_team_get_uniqueid",
        ret: "int",
        params: "nvshmemx_team_uniqueid_t *uniqueid",
        ..NV
    },
    Api {
        group: TEAMS,
        name: "nvshmemx_team_init",
        ret: "int",
        params: "nvshmem_team_t *team, nvshmem_team_config_t *config, long config_mask, int npes, int pe_idx_in_team",
        ..NV
    },
    Api { group: SYNC, name: "nvshmem_barrier", ret: "int", params: "nvshmem_team_t team", ..NV },
    Api { group: SYNC, name: "nvshmem_barrier_all", ..NV },
    Api { group: SYNC, name: "nvshmem_team_sync", ret: "int", params: "nvshmem_team_t team", ..NV },
    Api { group: SYNC, name: "nvshmem_sync_all", ..NV },
    Api { group: SYNC, name: "nvshmem_quiet", ..NV },
    Api { group: SYNC, name: "nvshmem_fence", ..NV },
    Api {
        group: SYNC,
        name: "nvshmemx_barrier_on_stream",
        ret: "int",
        params: "nvshmem_team_t team, cudaStream_t stream",
        ..NV
    },
    Api { group: SYNC, name: "nvshmemx_barrier_all_on_stream", params: "cudaStream_t stream", ..NV },
    Api {
        group: SYNC,
        name: "nvshmemx_team_sync_on_stream",
        ret: "int",
        params: "nvshmem_team_t team, cudaStream_t stream",
        ..NV
    },
    Api { group: SYNC, name: "nvshmemx_sync_all_on_stream", params: "cudaStream_t stream", ..NV },
    Api { group: SYNC, name: "nvshmemx_quiet_on_stream", params: "cudaStream_t cstrm", ..NV },
    Api { group: SIGNAL, name: "nvshmem_signal_fetch", ret: "uint64_t", params: "uint64_t *sig_addr", ..NV },
    Api {
        group: SIGNAL,
        name: "nvshmemx_signal_op",
        params: "uint64_t *sig_addr, uint64_t signal, int sig_op, int pe",
        ..NV
    },
    Api {
        group: SIGNAL,
        name: "nvshmemx_signal_op_on_stream",
        params: "uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, cudaStream_t cstrm",
        ..NV
    },
    Api {
        group: SIGNAL,
        name: "nvshmemx_signal_wait_until_on_stream",
        params: "uint64_t *sig_addr, int cmp, uint64_t cmp_value, cudaStream_t cstream",
        ..NV
    },
    Api {
        group: LAUNCH,
        name: "nvshmemx_collective_launch",
        ret: "int",
        params: "const void *func, dim3 gridDims, dim3 blockDims, void **args, size_t sharedMem, cudaStream_t stream",
        ..NV
    },
    Api {
        group: LAUNCH,
        name: "nvshmemx_collective_launch_query_gridsize",
        ret: "int",
        params: "const void *func, dim3 blockDims, void **args, size_t sharedMem, int *gridsize",
        ..NV
    },
];

/// The declarations before the prototypes: the CUDA types the API names, NVSHMEM's types and
/// constants. `{VERSION}` is oxshmem's version.
pub(crate) const PREAMBLE: &str = r#"
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SIZEOF_LONG__) && __SIZEOF_LONG__ != 8
#error "oxshmem's nvshmem.h is generated for LP64 targets (64-bit long and pointers)"
#endif

/* The CUDA types the host API names. Where CUDA's headers are on the include path they are
 * included, as NVSHMEM's own headers do, so that they may also be included before or after
 * this one; without CUDA the same types are declared here: cudaStream_t, CUmodule and
 * CUlibrary exactly as CUDA declares them (a repeated identical typedef is valid C11 and C++),
 * dim3 as a plain struct, and half and bfloat16 as 16-bit storage (CUDA's C++ classes hold
 * the same two bytes; C has no such classes, not even with CUDA's headers). Define
 * OXSHMEM_NVSHMEM_NO_CUDA_HEADERS to keep CUDA's headers out. */
#if !defined(OXSHMEM_NVSHMEM_NO_CUDA_HEADERS) && defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#define OXSHMEM_NVSHMEM_CUDA_RUNTIME 1
#endif
/* NVSHMEM's headers include the driver API's (CUresult, cuCtxGetDevice, CUdeviceptr...) and
 * <assert.h>; programs written against NVSHMEM rely on both without including them. */
#if __has_include(<cuda.h>) && !defined(__HIP__)
#include <cuda.h>
#endif
#if defined(__cplusplus) && __has_include(<cuda_fp16.h>) && __has_include(<cuda_bf16.h>)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define OXSHMEM_NVSHMEM_CUDA_HALF 1
#endif
#endif

typedef struct CUstream_st *cudaStream_t;
typedef struct CUmod_st *CUmodule;
typedef struct CUlib_st *CUlibrary;

#if !defined(OXSHMEM_NVSHMEM_CUDA_RUNTIME) && !defined(__VECTOR_TYPES_H__)
typedef struct dim3 {
    unsigned int x, y, z;
} dim3;
#endif

#if !defined(OXSHMEM_NVSHMEM_CUDA_HALF)
typedef struct oxshmem_half {
    unsigned short x;
} half;
typedef struct oxshmem_bfloat16 {
    unsigned short x;
} __nv_bfloat16;
#endif

#ifndef NVSHMEMI_HOST_API
#define NVSHMEMI_HOST_API
#endif

/* Routines callable from host and device code are __host__ __device__ in nvcc's device pass
 * (as NVSHMEM declares them) and in both of clang's HIP passes (clang checks device code in
 * its host pass too); the device-only ones are in nvshmem_device.h. */
#ifndef NVSHMEMI_HOSTDEVICE_PREFIX
#if (defined(__CUDACC__) && defined(__CUDA_ARCH__)) || defined(__HIP__)
#define NVSHMEMI_HOSTDEVICE_PREFIX __host__ __device__
#else
#define NVSHMEMI_HOSTDEVICE_PREFIX
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The OpenSHMEM version NVSHMEM reports, NVSHMEM's own version (the API this header follows),
 * and the implementation's */
#define NVSHMEM_MAJOR_VERSION 1
#define NVSHMEM_MINOR_VERSION 3
#define NVSHMEM_VENDOR_MAJOR_VERSION 3
#define NVSHMEM_VENDOR_MINOR_VERSION 4
#define NVSHMEM_VENDOR_PATCH_VERSION 5
#define NVSHMEM_VENDOR_VERSION                                                               \
    ((NVSHMEM_VENDOR_MAJOR_VERSION) * 10000 + (NVSHMEM_VENDOR_MINOR_VERSION) * 100 +        \
     (NVSHMEM_VENDOR_PATCH_VERSION))
#define NVSHMEM_VENDOR_STRING "oxshmem {VERSION} (NVSHMEM 3.4 API)"
#define NVSHMEM_MAX_NAME_LEN 256
#define OXSHMEM_NVSHMEM 1

/* oxshmem internal, not NVSHMEM API: libnvshmem_device.a registers the callback that sets its
 * device state from a load-time constructor; nvshmem_init calls it once the CUDA back end has
 * built the state. OXSHMEM_DEVICE_ABI_VERSION is what this host library speaks. */
#define OXSHMEM_DEVICE_ABI_VERSION 5
NVSHMEMI_HOST_API int oxshmemi_register_device_library(int abi_version,
                                                       int (*attach)(const void *device_state,
                                                                     const void *cuda_state));
/* oxshmem internal: the device library's host-callable atomic on GPU memory (a one-thread
 * kernel), which host atomics and the proxy use on GPU heap addresses. `flags`: an
 * OXSHMEM_AMO_* operation, | OXSHMEM_AMO_W64 for a 64-bit word; the prior value goes to `*old`.
 * Returns 0 or a CUDA error. */
NVSHMEMI_HOST_API int oxshmemi_register_device_amo(int (*amo)(uint64_t addr, uint32_t flags, uint64_t value,
                                                              uint64_t cond, uint64_t *old));
/* oxshmem internal: the CPU target's libnvshmem_device.a registers its question "is this a device
 * thread's local or shared memory?", which the proxy and the software NIC ask before touching
 * memory on a device thread's behalf (1 and a description in `what`, else 0). */
NVSHMEMI_HOST_API int oxshmemi_register_cpu_target(int (*local_memory)(uint64_t addr, uint64_t len, char *what,
                                                                       size_t what_len));

/* Thread levels (nvshmem_init_thread) */
enum nvshmemx_thread_support_t {
    NVSHMEM_THREAD_SINGLE = 0,
    NVSHMEM_THREAD_FUNNELED = 1,
    NVSHMEM_THREAD_SERIALIZED = 2,
    NVSHMEM_THREAD_MULTIPLE = 3
};

/* Comparisons of the wait routines (NVSHMEM's values: LE and GE are swapped from OpenSHMEM's) */
typedef enum {
    NVSHMEM_CMP_EQ = 0,
    NVSHMEM_CMP_NE = 1,
    NVSHMEM_CMP_GT = 2,
    NVSHMEM_CMP_LE = 3,
    NVSHMEM_CMP_LT = 4,
    NVSHMEM_CMP_GE = 5,
    NVSHMEM_CMP_SENTINEL = INT32_MAX
} nvshmemx_cmp_type_t;

/* Signal operations (NVSHMEM's values) */
typedef enum {
    NVSHMEM_SIGNAL_SET = 9,
    NVSHMEM_SIGNAL_ADD = 10
} nvshmemx_signal_op_t;

/* Teams: integer handles */
typedef int32_t nvshmem_team_t;
typedef nvshmem_team_t nvshmemx_team_t;
typedef uint64_t nvshmemx_team_uniqueid_t;
typedef enum {
    NVSHMEM_TEAM_INVALID = -1,
    NVSHMEM_TEAM_WORLD = 0,
    NVSHMEM_TEAM_WORLD_INDEX = 0,
    NVSHMEM_TEAM_SHARED = 1,
    NVSHMEM_TEAM_SHARED_INDEX = 1,
    NVSHMEMX_TEAM_NODE = 2,
    NVSHMEM_TEAM_NODE_INDEX = 2,
    NVSHMEMX_TEAM_SAME_MYPE_NODE = 3,
    NVSHMEM_TEAM_SAME_MYPE_NODE_INDEX = 3,
    NVSHMEM_TEAMS_MIN = 7,
    NVSHMEM_TEAM_INDEX_MAX = INT32_MAX
} nvshmem_team_id_t;

typedef struct {
    int version;
    int num_contexts;
    nvshmemx_team_uniqueid_t uniqueid;
    char padding[48];
} nvshmem_team_config_t;
#define NVSHMEM_TEAM_CONFIG_INITIALIZER {(2 << 16) + (int)sizeof(nvshmem_team_config_t), -1, 0xFFFFFFFFFFFFFFFFull, {0}}
#define NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS 0x00000001
#define NVSHMEM_TEAM_CONFIG_MASK_UNIQUEID 0x00000002

/* Initialization with attributes (nvshmemx_init_attr) */
enum flags {
    NVSHMEMX_INIT_THREAD_PES = 1,
    NVSHMEMX_INIT_WITH_MPI_COMM = 1 << 1,
    NVSHMEMX_INIT_WITH_SHMEM = 1 << 2,
    NVSHMEMX_INIT_WITH_UNIQUEID = 1 << 3,
    NVSHMEMX_INIT_MAX = -2147483647 - 1 /* 1 << 31, as NVSHMEM spells it in C++ */
};

/* A unique id: what rank 0's nvshmemx_get_uniqueid writes and every rank passes to
 * nvshmemx_set_attr_uniqueid_args. Its bytes carry rank 0's address and the job's key; rank 0
 * and the others prove to each other that they hold it without sending the key. */
typedef struct {
    int version;
    char internal[124];
} nvshmemx_uniqueid_t;
#define NVSHMEMX_UNIQUEID_INITIALIZER {(1 << 16) + (int)sizeof(nvshmemx_uniqueid_t), {0}}

typedef struct {
    int version;
    nvshmemx_uniqueid_t *id;
    int myrank;
    int nranks;
} nvshmemx_uniqueid_args_t;
#define NVSHMEMX_UNIQUEID_ARGS_INITIALIZER {(1 << 16) + (int)sizeof(nvshmemx_uniqueid_args_t), NULL, -1, -1}

typedef struct {
    int version;
    nvshmemx_uniqueid_args_t uid_args;
    int cuda_device_id;
    char content[92];
} nvshmemx_init_args_t;

typedef struct {
    int version;
    void *mpi_comm;
    nvshmemx_init_args_t args;
} nvshmemx_init_attr_t;
#define NVSHMEM_INIT_ATTR_V2_IDENTIFIER ((2 << 16) + (int)sizeof(nvshmemx_init_attr_t))
#define NVSHMEMX_INIT_ATTR_INITIALIZER                                                          \
    {(2 << 16) + (int)sizeof(nvshmemx_init_attr_t), NULL,                                      \
     {(2 << 16) + (int)sizeof(nvshmemx_init_args_t),                                           \
      {(1 << 16) + (int)sizeof(nvshmemx_uniqueid_args_t), NULL, -1, -1}, -1, {0}}}

/* What nvshmemx_init_status returns */
typedef enum {
    NVSHMEM_STATUS_NOT_INITIALIZED = 0,
    NVSHMEM_STATUS_IS_BOOTSTRAPPED = 1,
    NVSHMEM_STATUS_IS_INITIALIZED = 2,
    NVSHMEM_STATUS_LIMITED_MPG = 3,
    NVSHMEM_STATUS_FULL_MPG = 4,
    NVSHMEM_STATUS_INVALID = INT32_MAX
} nvshmemx_init_status_t;

/* Return codes */
enum nvshmemx_status {
    NVSHMEMX_SUCCESS = 0,
    NVSHMEMX_ERROR_INVALID_VALUE = 1,
    NVSHMEMX_ERROR_OUT_OF_MEMORY = 2,
    NVSHMEMX_ERROR_NOT_SUPPORTED = 3,
    NVSHMEMX_ERROR_SYMMETRY = 4,
    NVSHMEMX_ERROR_GPU_NOT_SELECTED = 5,
    NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED = 6,
    NVSHMEMX_ERROR_INTERNAL = 7,
    NVSHMEMX_ERROR_SENTINEL = INT32_MAX
};

/* Queue pairs (nvshmemx_qp_create) */
typedef int nvshmemx_qp_handle_t;

/* Shared memory a block lends to NVSHMEM 3.8's TMA transfers (nvshmemx_ask_smem,
 * nvshmemx_give_smem); NVSHMEM's values */
typedef enum nvshmemx_smem_amount_t {
    NVSHMEMX_SMEM_RECOMMENDED = 0,
    NVSHMEMX_SMEM_MINIMUM = 1,
    NVSHMEMX_SMEM_BARRIERS_ONLY = 2,
    NVSHMEMX_SMEM_AMOUNT_MAX = INT32_MAX
} nvshmemx_smem_amount_t;

/* Device regions (nvshmemx_region_start_block, nvshmemx_region_stop_block,
 * nvshmemx_region_is_active); NVSHMEM 3.8's layout */
typedef uint64_t nvshmemx_region_handle_t;
typedef enum {
    NVSHMEMX_REGION_HINT_NONE = 0,
    NVSHMEMX_REGION_HINT_BATCH_RMA = 1u << 0
} nvshmemx_region_hint_t;
#define NVSHMEMX_REGION_ATTRS_RESERVED_BYTES 60
#define NVSHMEMX_REGION_ATTRS_INITIALIZER {NVSHMEMX_REGION_HINT_NONE, {0}}
typedef struct nvshmemx_region_attrs {
    uint32_t hints;
    char reserved[NVSHMEMX_REGION_ATTRS_RESERVED_BYTES];
} nvshmemx_region_attrs_t;
"#;
