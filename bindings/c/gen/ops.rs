//! The operation templates of the typed families, and the prototypes of every other routine.
//!
//! A template is one routine of the specification written once with `TYPE` for the element
//! type; `types.tsv` says which types each family has. From one template the generator makes
//! the exported Rust function for every type (and the `shmem_ctx_` form, and the sized forms),
//! its prototype, its `_Generic` association and its C++ overload. The routines that are not
//! typed are listed in [`API`]: their prototypes come from there, and the generated code checks
//! at compile time that the hand-written Rust function has exactly that signature.
//!
//! Body placeholders: `{F}` the routine's C name (a string literal, for error messages),
//! `{CTX}` the context (`ctx`, or the default context for the forms without one), `{ES}` the
//! element size in bytes, `{OP}` the reduction operation. Parameter names are used as written.

/// One routine of a typed family.
#[derive(Clone, Copy)]
pub(crate) struct Op {
    /// Header section the prototypes go under.
    pub(crate) group: &'static str,
    /// Name of the typed form without `shmem_`; `{T}` is the TYPENAME (`{T}_put`).
    pub(crate) typed: &'static str,
    /// The `types.tsv` family whose types have the typed form.
    pub(crate) fam: &'static str,
    /// Name of the sized forms (`put{S}`) and the families that have them (`bits mem`).
    pub(crate) sized: Option<(&'static str, &'static str)>,
    /// C return type (`TYPE` for the element type).
    pub(crate) ret: &'static str,
    /// C parameters, `TYPE` for the element type (of the form without a context).
    pub(crate) params: &'static str,
    /// Whether a `shmem_ctx_` form exists (first argument `shmem_ctx_t ctx`).
    pub(crate) ctx: bool,
    /// Deprecated in OpenSHMEM 1.5 (marked so in the header).
    pub(crate) deprecated: bool,
    /// Name of the C11 `_Generic` interface and the C++ overloads, if any.
    pub(crate) generic: Option<&'static str>,
    /// Index of the argument whose type selects the typed routine.
    pub(crate) garg: usize,
    /// For deprecated routines: the current routine (typed pattern) the C++ overloads call.
    pub(crate) alias: Option<&'static str>,
    /// Reduction operation (`{OP}`).
    pub(crate) op: &'static str,
    /// The Rust body: an expression calling `crate::ops`.
    pub(crate) body: &'static str,
    /// The C body, for types that Rust cannot pass by value (`c_by_value`).
    pub(crate) c_body: Option<&'static str>,
    /// Header the prototypes go to (`shmemx.h` for the extensions and the OpenSHMEM 1.6 names).
    pub(crate) header: Header,
    /// What the names begin with instead of `shmem_` (`shmemx_`: `shmemx_TYPE_ibput`,
    /// `shmemx_ctx_TYPE_ibput`, `shmemx_ibput8`).
    pub(crate) prefix: &'static str,
}

const D: Op = Op {
    group: "",
    typed: "",
    fam: "rma",
    sized: None,
    ret: "void",
    params: "",
    ctx: false,
    deprecated: false,
    generic: None,
    garg: 0,
    alias: None,
    op: "",
    body: "",
    c_body: None,
    header: Header::Shmem,
    prefix: "shmem_",
};

const RMA_PUT: &str = "TYPE *dest, const TYPE *source, size_t nelems, int pe";
const RMA_STRIDED: &str = "TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe";
const PUT_SIGNAL: &str =
    "TYPE *dest, const TYPE *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe";
const AMO_VALUE: &str = "TYPE *dest, TYPE value, int pe";
const AMO_NBI_VALUE: &str = "TYPE *fetch, TYPE *dest, TYPE value, int pe";
const WAIT_ALL: &str = "TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value";
const WAIT_SOME: &str = "TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE cmp_value";
const WAIT_ALL_V: &str = "TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values";
const WAIT_SOME_V: &str = "TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE *cmp_values";
const REDUCE: &str = "shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce";
const TO_ALL: &str =
    "TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync";
const REDUCE_BODY: &str = "ops::reduce({F}, team, ReduceOp::{OP}, dest, source, nreduce)";
const TO_ALL_BODY: &str =
    "ops::to_all({F}, ReduceOp::{OP}, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync)";

const RMA_BLOCKED: &str =
    "TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe";
const IBPUT_BODY: &str =
    "crate::ext::ibput({F}, {CTX}, dest.cast(), source.cast(), dst, sst, bsize, nblocks, {ES}, pe)";
const IBGET_BODY: &str =
    "crate::ext::ibget({F}, {CTX}, dest.cast(), source.cast(), dst, sst, bsize, nblocks, {ES}, pe)";
const SCAN: &str = "shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems";
const INSCAN_BODY: &str = "crate::ext::scan({F}, team, dest, source, nelems, false)";
const EXSCAN_BODY: &str = "crate::ext::scan({F}, team, dest, source, nelems, true)";
/// Sandia OpenSHMEM's extensions, in `shmemx.h` under the `shmemx_` prefix.
const SX: Op = Op { header: Header::Shmemx, prefix: "shmemx_", ..D };
/// The same routines under their OpenSHMEM 1.6 names, in `shmemx.h` (after the extensions):
/// `shmem.h` holds the OpenSHMEM 1.5 API exactly.
const S16: Op = Op { header: Header::Shmemx, prefix: "shmem_", ..D };

/// Every typed routine, in header order.
pub(crate) const OPS: &[Op] = &[
    // RMA
    Op {
        group: "RMA: elemental put",
        typed: "{T}_p",
        params: "TYPE *dest, TYPE value, int pe",
        ctx: true,
        generic: Some("shmem_p"),
        body: "crate::ext::counted_write({CTX}, move || ops::p({F}, {CTX}, dest, value, pe))",
        c_body: Some("oxshmem_ld_rma(0, {CTX}, dest, &value, sizeof value, pe, {F});"),
        ..D
    },
    Op {
        group: "RMA: contiguous put",
        typed: "{T}_put",
        sized: Some(("put{S}", "bits mem")),
        params: RMA_PUT,
        ctx: true,
        generic: Some("shmem_put"),
        body: "crate::ext::counted_write({CTX}, move || ops::put({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, pe))",
        ..D
    },
    Op {
        group: "RMA: strided put",
        typed: "{T}_iput",
        sized: Some(("iput{S}", "bits")),
        params: RMA_STRIDED,
        ctx: true,
        generic: Some("shmem_iput"),
        body: "crate::ext::counted_write({CTX}, move || ops::iput({F}, {CTX}, dest.cast(), source.cast(), dst, sst, nelems, {ES}, pe))",
        ..D
    },
    Op {
        group: "RMA: elemental get",
        typed: "{T}_g",
        ret: "TYPE",
        params: "const TYPE *source, int pe",
        ctx: true,
        generic: Some("shmem_g"),
        body: "crate::ext::counted_read({CTX}, move || ops::g({F}, {CTX}, source, pe))",
        c_body: Some("TYPE value; oxshmem_ld_rma(1, {CTX}, &value, source, sizeof value, pe, {F}); return value;"),
        ..D
    },
    Op {
        group: "RMA: contiguous get",
        typed: "{T}_get",
        sized: Some(("get{S}", "bits mem")),
        params: RMA_PUT,
        ctx: true,
        generic: Some("shmem_get"),
        body: "crate::ext::counted_read({CTX}, move || ops::get({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, pe))",
        ..D
    },
    Op {
        group: "RMA: strided get",
        typed: "{T}_iget",
        sized: Some(("iget{S}", "bits")),
        params: RMA_STRIDED,
        ctx: true,
        generic: Some("shmem_iget"),
        body: "crate::ext::counted_read({CTX}, move || ops::iget({F}, {CTX}, dest.cast(), source.cast(), dst, sst, nelems, {ES}, pe))",
        ..D
    },
    Op {
        group: "RMA: nonblocking contiguous put",
        typed: "{T}_put_nbi",
        sized: Some(("put{S}_nbi", "bits mem")),
        params: RMA_PUT,
        ctx: true,
        generic: Some("shmem_put_nbi"),
        body: "crate::ext::counted_write({CTX}, move || ops::put_nbi({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, pe))",
        ..D
    },
    Op {
        group: "RMA: nonblocking contiguous get",
        typed: "{T}_get_nbi",
        sized: Some(("get{S}_nbi", "bits mem")),
        params: RMA_PUT,
        ctx: true,
        generic: Some("shmem_get_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::get_nbi({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, pe))",
        ..D
    },
    Op {
        group: "Blocking put with signal",
        typed: "{T}_put_signal",
        sized: Some(("put{S}_signal", "bits mem")),
        params: PUT_SIGNAL,
        ctx: true,
        generic: Some("shmem_put_signal"),
        body: "crate::ext::counted_write({CTX}, move || ops::put_signal({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, sig_addr, signal, sig_op, pe))",
        ..D
    },
    Op {
        group: "Nonblocking put with signal",
        typed: "{T}_put_signal_nbi",
        sized: Some(("put{S}_signal_nbi", "bits mem")),
        params: PUT_SIGNAL,
        ctx: true,
        generic: Some("shmem_put_signal_nbi"),
        body: "crate::ext::counted_write({CTX}, move || ops::put_signal({F}, {CTX}, dest.cast(), source.cast(), nelems, {ES}, sig_addr, signal, sig_op, pe))",
        ..D
    },
    // AMO
    Op {
        group: "AMO: atomic fetch",
        typed: "{T}_atomic_fetch",
        fam: "ext",
        ret: "TYPE",
        params: "const TYPE *source, int pe",
        ctx: true,
        generic: Some("shmem_atomic_fetch"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, source.cast_mut(), Amo::Fetch, pe))",
        ..D
    },
    Op {
        group: "AMO: atomic set",
        typed: "{T}_atomic_set",
        fam: "ext",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_set"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Set(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic swap",
        typed: "{T}_atomic_swap",
        fam: "ext",
        ret: "TYPE",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_swap"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Swap(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic conditional swap",
        typed: "{T}_atomic_compare_swap",
        fam: "amo",
        ret: "TYPE",
        params: "TYPE *dest, TYPE cond, TYPE value, int pe",
        ctx: true,
        generic: Some("shmem_atomic_compare_swap"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::CompareSwap(cond, value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic fetch-and-increment",
        typed: "{T}_atomic_fetch_inc",
        fam: "amo",
        ret: "TYPE",
        params: "TYPE *dest, int pe",
        ctx: true,
        generic: Some("shmem_atomic_fetch_inc"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Inc, pe))",
        ..D
    },
    Op {
        group: "AMO: atomic increment",
        typed: "{T}_atomic_inc",
        fam: "amo",
        params: "TYPE *dest, int pe",
        ctx: true,
        generic: Some("shmem_atomic_inc"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Inc, pe))",
        ..D
    },
    Op {
        group: "AMO: atomic fetch-and-add",
        typed: "{T}_atomic_fetch_add",
        fam: "amo",
        ret: "TYPE",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_fetch_add"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Add(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic add",
        typed: "{T}_atomic_add",
        fam: "amo",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_add"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Add(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic fetch-and-and",
        typed: "{T}_atomic_fetch_and",
        fam: "bitwise",
        ret: "TYPE",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_fetch_and"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::And(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic and",
        typed: "{T}_atomic_and",
        fam: "bitwise",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_and"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::And(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic fetch-and-or",
        typed: "{T}_atomic_fetch_or",
        fam: "bitwise",
        ret: "TYPE",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_fetch_or"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Or(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic or",
        typed: "{T}_atomic_or",
        fam: "bitwise",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_or"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Or(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic fetch-and-xor",
        typed: "{T}_atomic_fetch_xor",
        fam: "bitwise",
        ret: "TYPE",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_fetch_xor"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Xor(value), pe))",
        ..D
    },
    Op {
        group: "AMO: atomic xor",
        typed: "{T}_atomic_xor",
        fam: "bitwise",
        params: AMO_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_xor"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Xor(value), pe))",
        ..D
    },
    // Nonblocking AMO
    Op {
        group: "AMO: nonblocking atomic fetch",
        typed: "{T}_atomic_fetch_nbi",
        fam: "ext",
        params: "TYPE *fetch, const TYPE *source, int pe",
        ctx: true,
        generic: Some("shmem_atomic_fetch_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo_nbi({F}, {CTX}, fetch, source.cast_mut(), Amo::Fetch, pe))",
        ..D
    },
    Op {
        group: "AMO: nonblocking atomic swap",
        typed: "{T}_atomic_swap_nbi",
        fam: "ext",
        params: AMO_NBI_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_swap_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo_nbi({F}, {CTX}, fetch, dest, Amo::Swap(value), pe))",
        ..D
    },
    Op {
        group: "AMO: nonblocking atomic conditional swap",
        typed: "{T}_atomic_compare_swap_nbi",
        fam: "amo",
        params: "TYPE *fetch, TYPE *dest, TYPE cond, TYPE value, int pe",
        ctx: true,
        generic: Some("shmem_atomic_compare_swap_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo_nbi({F}, {CTX}, fetch, dest, Amo::CompareSwap(cond, value), pe))",
        ..D
    },
    Op {
        group: "AMO: nonblocking atomic fetch-and-increment",
        typed: "{T}_atomic_fetch_inc_nbi",
        fam: "amo",
        params: "TYPE *fetch, TYPE *dest, int pe",
        ctx: true,
        generic: Some("shmem_atomic_fetch_inc_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo_nbi({F}, {CTX}, fetch, dest, Amo::Inc, pe))",
        ..D
    },
    Op {
        group: "AMO: nonblocking atomic fetch-and-add",
        typed: "{T}_atomic_fetch_add_nbi",
        fam: "amo",
        params: AMO_NBI_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_fetch_add_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo_nbi({F}, {CTX}, fetch, dest, Amo::Add(value), pe))",
        ..D
    },
    Op {
        group: "AMO: nonblocking atomic fetch-and-and",
        typed: "{T}_atomic_fetch_and_nbi",
        fam: "bitwise",
        params: AMO_NBI_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_fetch_and_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo_nbi({F}, {CTX}, fetch, dest, Amo::And(value), pe))",
        ..D
    },
    Op {
        group: "AMO: nonblocking atomic fetch-and-or",
        typed: "{T}_atomic_fetch_or_nbi",
        fam: "bitwise",
        params: AMO_NBI_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_fetch_or_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo_nbi({F}, {CTX}, fetch, dest, Amo::Or(value), pe))",
        ..D
    },
    Op {
        group: "AMO: nonblocking atomic fetch-and-xor",
        typed: "{T}_atomic_fetch_xor_nbi",
        fam: "bitwise",
        params: AMO_NBI_VALUE,
        ctx: true,
        generic: Some("shmem_atomic_fetch_xor_nbi"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo_nbi({F}, {CTX}, fetch, dest, Amo::Xor(value), pe))",
        ..D
    },
    // Deprecated AMO names (OpenSHMEM 1.4 and before)
    Op {
        group: "AMO: deprecated names",
        typed: "{T}_fetch",
        fam: "ext",
        ret: "TYPE",
        params: "const TYPE *source, int pe",
        deprecated: true,
        generic: Some("shmem_fetch"),
        alias: Some("{T}_atomic_fetch"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, source.cast_mut(), Amo::Fetch, pe))",
        ..D
    },
    Op {
        group: "AMO: deprecated names",
        typed: "{T}_set",
        fam: "ext",
        params: AMO_VALUE,
        deprecated: true,
        generic: Some("shmem_set"),
        alias: Some("{T}_atomic_set"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Set(value), pe))",
        ..D
    },
    Op {
        group: "AMO: deprecated names",
        typed: "{T}_swap",
        fam: "ext",
        ret: "TYPE",
        params: AMO_VALUE,
        deprecated: true,
        generic: Some("shmem_swap"),
        alias: Some("{T}_atomic_swap"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Swap(value), pe))",
        ..D
    },
    Op {
        group: "AMO: deprecated names",
        typed: "{T}_cswap",
        fam: "amo",
        ret: "TYPE",
        params: "TYPE *dest, TYPE cond, TYPE value, int pe",
        deprecated: true,
        generic: Some("shmem_cswap"),
        alias: Some("{T}_atomic_compare_swap"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::CompareSwap(cond, value), pe))",
        ..D
    },
    Op {
        group: "AMO: deprecated names",
        typed: "{T}_finc",
        fam: "amo",
        ret: "TYPE",
        params: "TYPE *dest, int pe",
        deprecated: true,
        generic: Some("shmem_finc"),
        alias: Some("{T}_atomic_fetch_inc"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Inc, pe))",
        ..D
    },
    Op {
        group: "AMO: deprecated names",
        typed: "{T}_inc",
        fam: "amo",
        params: "TYPE *dest, int pe",
        deprecated: true,
        generic: Some("shmem_inc"),
        alias: Some("{T}_atomic_inc"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Inc, pe))",
        ..D
    },
    Op {
        group: "AMO: deprecated names",
        typed: "{T}_fadd",
        fam: "amo",
        ret: "TYPE",
        params: AMO_VALUE,
        deprecated: true,
        generic: Some("shmem_fadd"),
        alias: Some("{T}_atomic_fetch_add"),
        body: "crate::ext::counted_read({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Add(value), pe))",
        ..D
    },
    Op {
        group: "AMO: deprecated names",
        typed: "{T}_add",
        fam: "amo",
        params: AMO_VALUE,
        deprecated: true,
        generic: Some("shmem_add"),
        alias: Some("{T}_atomic_add"),
        body: "crate::ext::counted_write({CTX}, move || ops::amo({F}, {CTX}, dest, Amo::Add(value), pe))",
        ..D
    },
    // Point-to-point synchronization
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_wait_until",
        fam: "sync",
        params: "TYPE *ivar, int cmp, TYPE cmp_value",
        generic: Some("shmem_wait_until"),
        body: "ops::wait_until({F}, ivar, cmp, cmp_value)",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_wait_until_all",
        fam: "sync",
        params: WAIT_ALL,
        generic: Some("shmem_wait_until_all"),
        body: "ops::wait_until_all({F}, ivars, nelems, status, cmp, Vals::One(cmp_value))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_wait_until_any",
        fam: "sync",
        ret: "size_t",
        params: WAIT_ALL,
        generic: Some("shmem_wait_until_any"),
        body: "ops::wait_until_any({F}, ivars, nelems, status, cmp, Vals::One(cmp_value))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_wait_until_some",
        fam: "sync",
        ret: "size_t",
        params: WAIT_SOME,
        generic: Some("shmem_wait_until_some"),
        body: "ops::wait_until_some({F}, ivars, nelems, indices, status, cmp, Vals::One(cmp_value))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_wait_until_all_vector",
        fam: "sync",
        params: WAIT_ALL_V,
        generic: Some("shmem_wait_until_all_vector"),
        body: "ops::wait_until_all({F}, ivars, nelems, status, cmp, Vals::Each(cmp_values))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_wait_until_any_vector",
        fam: "sync",
        ret: "size_t",
        params: WAIT_ALL_V,
        generic: Some("shmem_wait_until_any_vector"),
        body: "ops::wait_until_any({F}, ivars, nelems, status, cmp, Vals::Each(cmp_values))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_wait_until_some_vector",
        fam: "sync",
        ret: "size_t",
        params: WAIT_SOME_V,
        generic: Some("shmem_wait_until_some_vector"),
        body: "ops::wait_until_some({F}, ivars, nelems, indices, status, cmp, Vals::Each(cmp_values))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_test",
        fam: "sync",
        ret: "int",
        params: "TYPE *ivar, int cmp, TYPE cmp_value",
        generic: Some("shmem_test"),
        body: "ops::test({F}, ivar, cmp, cmp_value)",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_test_all",
        fam: "sync",
        ret: "int",
        params: WAIT_ALL,
        generic: Some("shmem_test_all"),
        body: "ops::test_all({F}, ivars, nelems, status, cmp, Vals::One(cmp_value))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_test_any",
        fam: "sync",
        ret: "size_t",
        params: WAIT_ALL,
        generic: Some("shmem_test_any"),
        body: "ops::test_any({F}, ivars, nelems, status, cmp, Vals::One(cmp_value))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_test_some",
        fam: "sync",
        ret: "size_t",
        params: WAIT_SOME,
        generic: Some("shmem_test_some"),
        body: "ops::test_some({F}, ivars, nelems, indices, status, cmp, Vals::One(cmp_value))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_test_all_vector",
        fam: "sync",
        ret: "int",
        params: WAIT_ALL_V,
        generic: Some("shmem_test_all_vector"),
        body: "ops::test_all({F}, ivars, nelems, status, cmp, Vals::Each(cmp_values))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_test_any_vector",
        fam: "sync",
        ret: "size_t",
        params: WAIT_ALL_V,
        generic: Some("shmem_test_any_vector"),
        body: "ops::test_any({F}, ivars, nelems, status, cmp, Vals::Each(cmp_values))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization",
        typed: "{T}_test_some_vector",
        fam: "sync",
        ret: "size_t",
        params: WAIT_SOME_V,
        generic: Some("shmem_test_some_vector"),
        body: "ops::test_some({F}, ivars, nelems, indices, status, cmp, Vals::Each(cmp_values))",
        ..D
    },
    Op {
        group: "Point-to-point synchronization (deprecated)",
        typed: "{T}_wait",
        fam: "old_wait",
        params: "TYPE *ivar, TYPE cmp_value",
        deprecated: true,
        body: "ops::wait_until({F}, ivar, ops::CMP_NE, cmp_value)",
        ..D
    },
    // Team collectives
    Op {
        group: "Team collectives: broadcast",
        typed: "{T}_broadcast",
        sized: Some(("broadcast{S}", "mem")),
        ret: "int",
        params: "shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems, int PE_root",
        generic: Some("shmem_broadcast"),
        garg: 1,
        body: "ops::broadcast({F}, team, dest.cast(), source.cast(), nelems, {ES}, PE_root)",
        ..D
    },
    Op {
        group: "Team collectives: collect",
        typed: "{T}_collect",
        sized: Some(("collect{S}", "mem")),
        ret: "int",
        params: "shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems",
        generic: Some("shmem_collect"),
        garg: 1,
        body: "ops::collect({F}, team, dest.cast(), source.cast(), nelems, {ES}, false)",
        ..D
    },
    Op {
        group: "Team collectives: fcollect",
        typed: "{T}_fcollect",
        sized: Some(("fcollect{S}", "mem")),
        ret: "int",
        params: "shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems",
        generic: Some("shmem_fcollect"),
        garg: 1,
        body: "ops::collect({F}, team, dest.cast(), source.cast(), nelems, {ES}, true)",
        ..D
    },
    Op {
        group: "Team collectives: alltoall",
        typed: "{T}_alltoall",
        sized: Some(("alltoall{S}", "mem")),
        ret: "int",
        params: "shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems",
        generic: Some("shmem_alltoall"),
        garg: 1,
        body: "ops::alltoalls({F}, team, dest.cast(), source.cast(), 1, 1, nelems, {ES})",
        ..D
    },
    Op {
        group: "Team collectives: alltoalls",
        typed: "{T}_alltoalls",
        sized: Some(("alltoalls{S}", "mem")),
        ret: "int",
        params: "shmem_team_t team, TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems",
        generic: Some("shmem_alltoalls"),
        garg: 1,
        body: "ops::alltoalls({F}, team, dest.cast(), source.cast(), dst, sst, nelems, {ES})",
        ..D
    },
    Op {
        group: "Team collectives: reductions",
        typed: "{T}_and_reduce",
        fam: "red_bit",
        ret: "int",
        params: REDUCE,
        generic: Some("shmem_and_reduce"),
        garg: 1,
        op: "And",
        body: REDUCE_BODY,
        ..D
    },
    Op {
        group: "Team collectives: reductions",
        typed: "{T}_or_reduce",
        fam: "red_bit",
        ret: "int",
        params: REDUCE,
        generic: Some("shmem_or_reduce"),
        garg: 1,
        op: "Or",
        body: REDUCE_BODY,
        ..D
    },
    Op {
        group: "Team collectives: reductions",
        typed: "{T}_xor_reduce",
        fam: "red_bit",
        ret: "int",
        params: REDUCE,
        generic: Some("shmem_xor_reduce"),
        garg: 1,
        op: "Xor",
        body: REDUCE_BODY,
        ..D
    },
    Op {
        group: "Team collectives: reductions",
        typed: "{T}_max_reduce",
        fam: "red_minmax",
        ret: "int",
        params: REDUCE,
        generic: Some("shmem_max_reduce"),
        garg: 1,
        op: "Max",
        body: REDUCE_BODY,
        ..D
    },
    Op {
        group: "Team collectives: reductions",
        typed: "{T}_min_reduce",
        fam: "red_minmax",
        ret: "int",
        params: REDUCE,
        generic: Some("shmem_min_reduce"),
        garg: 1,
        op: "Min",
        body: REDUCE_BODY,
        ..D
    },
    Op {
        group: "Team collectives: reductions",
        typed: "{T}_sum_reduce",
        fam: "red_arith",
        ret: "int",
        params: REDUCE,
        generic: Some("shmem_sum_reduce"),
        garg: 1,
        op: "Sum",
        body: REDUCE_BODY,
        ..D
    },
    Op {
        group: "Team collectives: reductions",
        typed: "{T}_prod_reduce",
        fam: "red_arith",
        ret: "int",
        params: REDUCE,
        generic: Some("shmem_prod_reduce"),
        garg: 1,
        op: "Prod",
        body: REDUCE_BODY,
        ..D
    },
    // Deprecated active-set reductions
    Op {
        group: "Reductions over active sets (deprecated)",
        typed: "{T}_and_to_all",
        fam: "old_bit",
        params: TO_ALL,
        deprecated: true,
        op: "And",
        body: TO_ALL_BODY,
        ..D
    },
    Op {
        group: "Reductions over active sets (deprecated)",
        typed: "{T}_or_to_all",
        fam: "old_bit",
        params: TO_ALL,
        deprecated: true,
        op: "Or",
        body: TO_ALL_BODY,
        ..D
    },
    Op {
        group: "Reductions over active sets (deprecated)",
        typed: "{T}_xor_to_all",
        fam: "old_bit",
        params: TO_ALL,
        deprecated: true,
        op: "Xor",
        body: TO_ALL_BODY,
        ..D
    },
    Op {
        group: "Reductions over active sets (deprecated)",
        typed: "{T}_max_to_all",
        fam: "old_minmax",
        params: TO_ALL,
        deprecated: true,
        op: "Max",
        body: TO_ALL_BODY,
        ..D
    },
    Op {
        group: "Reductions over active sets (deprecated)",
        typed: "{T}_min_to_all",
        fam: "old_minmax",
        params: TO_ALL,
        deprecated: true,
        op: "Min",
        body: TO_ALL_BODY,
        ..D
    },
    Op {
        group: "Reductions over active sets (deprecated)",
        typed: "{T}_sum_to_all",
        fam: "old_arith",
        params: TO_ALL,
        deprecated: true,
        op: "Sum",
        body: TO_ALL_BODY,
        ..D
    },
    Op {
        group: "Reductions over active sets (deprecated)",
        typed: "{T}_prod_to_all",
        fam: "old_arith",
        params: TO_ALL,
        deprecated: true,
        op: "Prod",
        body: TO_ALL_BODY,
        ..D
    },
    // Sandia OpenSHMEM's extensions (shmemx.h)
    Op {
        group: "Blocked strided put (shmemx)",
        typed: "{T}_ibput",
        sized: Some(("ibput{S}", "bits")),
        params: RMA_BLOCKED,
        ctx: true,
        generic: Some("shmemx_ibput"),
        body: IBPUT_BODY,
        ..SX
    },
    Op {
        group: "Blocked strided get (shmemx)",
        typed: "{T}_ibget",
        sized: Some(("ibget{S}", "bits")),
        params: RMA_BLOCKED,
        ctx: true,
        generic: Some("shmemx_ibget"),
        body: IBGET_BODY,
        ..SX
    },
    Op {
        group: "Prefix sums over a team (shmemx)",
        typed: "{T}_sum_inscan",
        fam: "red_arith",
        ret: "int",
        params: SCAN,
        body: INSCAN_BODY,
        ..SX
    },
    Op {
        group: "Prefix sums over a team (shmemx)",
        typed: "{T}_sum_exscan",
        fam: "red_arith",
        ret: "int",
        params: SCAN,
        body: EXSCAN_BODY,
        ..SX
    },
    // Their OpenSHMEM 1.6 names (shmemx.h)
    Op {
        group: "Blocked strided put (OpenSHMEM 1.6)",
        typed: "{T}_ibput",
        sized: Some(("ibput{S}", "bits")),
        params: RMA_BLOCKED,
        ctx: true,
        generic: Some("shmem_ibput"),
        body: IBPUT_BODY,
        ..S16
    },
    Op {
        group: "Blocked strided get (OpenSHMEM 1.6)",
        typed: "{T}_ibget",
        sized: Some(("ibget{S}", "bits")),
        params: RMA_BLOCKED,
        ctx: true,
        generic: Some("shmem_ibget"),
        body: IBGET_BODY,
        ..S16
    },
    Op {
        group: "Prefix sums over a team (OpenSHMEM 1.6)",
        typed: "{T}_sum_inscan",
        fam: "red_arith",
        ret: "int",
        params: SCAN,
        body: INSCAN_BODY,
        ..S16
    },
    Op {
        group: "Prefix sums over a team (OpenSHMEM 1.6)",
        typed: "{T}_sum_exscan",
        fam: "red_arith",
        ret: "int",
        params: SCAN,
        body: EXSCAN_BODY,
        ..S16
    },
];

/// Which header a prototype belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header {
    /// `shmem.h`: the specification.
    Shmem,
    /// `shmemx.h`: oxshmem's extensions.
    Shmemx,
    /// `nvshmem.h`: NVSHMEM's host API.
    Nvshmem,
}

/// How a prototype is declared beyond the plain form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    /// Nothing special.
    None,
    /// Never returns (`_Noreturn`, `[[noreturn]]`).
    NoReturn,
    /// Declared only where no C11 `_Generic` or C++ overload of the same name exists (the
    /// untyped `long` forms `shmem_swap` and `shmem_wait_until`), or when the user defines
    /// `SHMEM_DECLARE_SPECIAL_CASES` — as Sandia OpenSHMEM does.
    GenericName,
}

/// A routine that is not typed: hand-written in `src/`, prototype from here.
#[derive(Clone, Copy)]
pub(crate) struct Api {
    /// Header section.
    pub(crate) group: &'static str,
    /// C name.
    pub(crate) name: &'static str,
    /// C return type.
    pub(crate) ret: &'static str,
    /// C parameters (`void` for none).
    pub(crate) params: &'static str,
    /// Deprecated in OpenSHMEM 1.5.
    pub(crate) deprecated: bool,
    /// Special declaration.
    pub(crate) special: Special,
    /// Header it is declared in.
    pub(crate) header: Header,
    /// The C body, for the few routines Rust cannot define (variadic `shmem_pcontrol`).
    pub(crate) c_body: Option<&'static str>,
}

const A: Api = Api {
    group: "",
    name: "",
    ret: "void",
    params: "void",
    deprecated: false,
    special: Special::None,
    header: Header::Shmem,
    c_body: None,
};

const SETUP: &str = "Library setup, exit, and query";
const MEMORY: &str = "Memory management";
const TEAMS: &str = "Team management";
const CTXS: &str = "Communication management";
const ORDER: &str = "Memory ordering";
const COLL: &str = "Collectives";
const SYNC: &str = "Point-to-point synchronization";
const SIGNAL: &str = "Signals";
const LOCKS: &str = "Distributed locking";
const CACHE: &str = "Cache management (deprecated)";
const OLD: &str = "Deprecated API";
const OLD_COLL: &str = "Collectives over active sets (deprecated)";
const PSYNC: &str = "int PE_start, int logPE_stride, int PE_size, long *pSync";
/// A routine of `shmemx.h`.
const AX: Api = Api { header: Header::Shmemx, ..A };
const SIGNAL_X: &str = "Signals (shmemx)";
const SIGNAL_16: &str = "Signals (OpenSHMEM 1.6)";
const PCNTR: &str = "Performance counters (shmemx)";
const SIG: &str = "uint64_t *sig_addr, uint64_t signal, int pe";
const CTX_SIG: &str = "shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe";
const CNTR: &str = "shmem_ctx_t ctx, uint64_t *cntr_value";

/// Every routine that is not typed.
pub(crate) const API: &[Api] = &[
    Api { group: SETUP, name: "shmem_init", ..A },
    Api { group: SETUP, name: "shmem_init_thread", ret: "int", params: "int requested, int *provided", ..A },
    Api { group: SETUP, name: "shmem_query_thread", params: "int *provided", ..A },
    Api { group: SETUP, name: "shmem_finalize", ..A },
    Api { group: SETUP, name: "shmem_global_exit", params: "int status", special: Special::NoReturn, ..A },
    Api { group: SETUP, name: "shmem_my_pe", ret: "int", ..A },
    Api { group: SETUP, name: "shmem_n_pes", ret: "int", ..A },
    Api { group: SETUP, name: "shmem_pe_accessible", ret: "int", params: "int pe", ..A },
    Api { group: SETUP, name: "shmem_addr_accessible", ret: "int", params: "const void *addr, int pe", ..A },
    Api { group: SETUP, name: "shmem_ptr", ret: "void *", params: "const void *dest, int pe", ..A },
    Api {
        group: SETUP,
        name: "shmem_team_ptr",
        ret: "void *",
        params: "shmem_team_t team, const void *dest, int pe",
        ..A
    },
    Api { group: SETUP, name: "shmem_info_get_version", params: "int *major, int *minor", ..A },
    Api { group: SETUP, name: "shmem_info_get_name", params: "char *name", ..A },
    Api { group: SETUP, name: "shmem_pcontrol", params: "int level, ...", c_body: Some("(void)level;"), ..A },
    Api { group: MEMORY, name: "shmem_malloc", ret: "void *", params: "size_t size", ..A },
    Api { group: MEMORY, name: "shmem_calloc", ret: "void *", params: "size_t count, size_t size", ..A },
    Api { group: MEMORY, name: "shmem_align", ret: "void *", params: "size_t alignment, size_t size", ..A },
    Api { group: MEMORY, name: "shmem_realloc", ret: "void *", params: "void *ptr, size_t size", ..A },
    Api { group: MEMORY, name: "shmem_free", params: "void *ptr", ..A },
    Api { group: MEMORY, name: "shmem_malloc_with_hints", ret: "void *", params: "size_t size, long hints", ..A },
    Api { group: TEAMS, name: "shmem_team_my_pe", ret: "int", params: "shmem_team_t team", ..A },
    Api { group: TEAMS, name: "shmem_team_n_pes", ret: "int", params: "shmem_team_t team", ..A },
    Api {
        group: TEAMS,
        name: "shmem_team_get_config",
        ret: "int",
        params: "shmem_team_t team, long config_mask, shmem_team_config_t *config",
        ..A
    },
    Api {
        group: TEAMS,
        name: "shmem_team_translate_pe",
        ret: "int",
        params: "shmem_team_t src_team, int src_pe, shmem_team_t dest_team",
        ..A
    },
    Api {
        group: TEAMS,
        name: "shmem_team_split_strided",
        ret: "int",
        params: "shmem_team_t parent_team, int PE_start, int PE_stride, int PE_size, const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team",
        ..A
    },
    Api {
        group: TEAMS,
        name: "shmem_team_split_2d",
        ret: "int",
        params: "shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team",
        ..A
    },
    Api { group: TEAMS, name: "shmem_team_destroy", params: "shmem_team_t team", ..A },
    Api { group: TEAMS, name: "shmem_team_sync", ret: "int", params: "shmem_team_t team", ..A },
    Api { group: CTXS, name: "shmem_ctx_create", ret: "int", params: "long options, shmem_ctx_t *ctx", ..A },
    Api {
        group: CTXS,
        name: "shmem_team_create_ctx",
        ret: "int",
        params: "shmem_team_t team, long options, shmem_ctx_t *ctx",
        ..A
    },
    Api { group: CTXS, name: "shmem_ctx_destroy", params: "shmem_ctx_t ctx", ..A },
    Api { group: CTXS, name: "shmem_ctx_get_team", ret: "int", params: "shmem_ctx_t ctx, shmem_team_t *team", ..A },
    Api { group: ORDER, name: "shmem_fence", ..A },
    Api { group: ORDER, name: "shmem_quiet", ..A },
    Api { group: ORDER, name: "shmem_ctx_fence", params: "shmem_ctx_t ctx", ..A },
    Api { group: ORDER, name: "shmem_ctx_quiet", params: "shmem_ctx_t ctx", ..A },
    Api { group: COLL, name: "shmem_barrier_all", ..A },
    Api { group: COLL, name: "shmem_sync_all", ..A },
    Api { group: COLL, name: "shmem_sync", params: PSYNC, ..A },
    Api {
        group: SYNC,
        name: "shmem_wait_until",
        params: "long *ivar, int cmp, long cmp_value",
        special: Special::GenericName,
        ..A
    },
    Api { group: SYNC, name: "shmem_wait", params: "long *ivar, long cmp_value", deprecated: true, ..A },
    Api { group: SIGNAL, name: "shmem_signal_fetch", ret: "uint64_t", params: "const uint64_t *sig_addr", ..A },
    Api {
        group: SIGNAL,
        name: "shmem_signal_wait_until",
        ret: "uint64_t",
        params: "uint64_t *sig_addr, int cmp, uint64_t cmp_value",
        ..A
    },
    Api { group: LOCKS, name: "shmem_set_lock", params: "long *lock", ..A },
    Api { group: LOCKS, name: "shmem_clear_lock", params: "long *lock", ..A },
    Api { group: LOCKS, name: "shmem_test_lock", ret: "int", params: "long *lock", ..A },
    Api { group: CACHE, name: "shmem_set_cache_inv", deprecated: true, ..A },
    Api { group: CACHE, name: "shmem_set_cache_line_inv", params: "void *dest", deprecated: true, ..A },
    Api { group: CACHE, name: "shmem_clear_cache_inv", deprecated: true, ..A },
    Api { group: CACHE, name: "shmem_clear_cache_line_inv", params: "void *dest", deprecated: true, ..A },
    Api { group: CACHE, name: "shmem_udcflush", deprecated: true, ..A },
    Api { group: CACHE, name: "shmem_udcflush_line", params: "void *dest", deprecated: true, ..A },
    Api { group: OLD, name: "start_pes", params: "int npes", deprecated: true, ..A },
    Api { group: OLD, name: "_my_pe", ret: "int", deprecated: true, ..A },
    Api { group: OLD, name: "_num_pes", ret: "int", deprecated: true, ..A },
    Api { group: OLD, name: "shmalloc", ret: "void *", params: "size_t size", deprecated: true, ..A },
    Api {
        group: OLD,
        name: "shmemalign",
        ret: "void *",
        params: "size_t alignment, size_t size",
        deprecated: true,
        ..A
    },
    Api { group: OLD, name: "shrealloc", ret: "void *", params: "void *ptr, size_t size", deprecated: true, ..A },
    Api { group: OLD, name: "shfree", params: "void *ptr", deprecated: true, ..A },
    Api {
        group: OLD,
        name: "shmem_swap",
        ret: "long",
        params: "long *dest, long value, int pe",
        special: Special::GenericName,
        ..A
    },
    Api { group: OLD_COLL, name: "shmem_barrier", params: PSYNC, deprecated: true, ..A },
    Api {
        group: OLD_COLL,
        name: "shmem_broadcast32",
        params: "void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_broadcast64",
        params: "void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_collect32",
        params: "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_collect64",
        params: "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_fcollect32",
        params: "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_fcollect64",
        params: "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_alltoall32",
        params: "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_alltoall64",
        params: "void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_alltoalls32",
        params: "void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api {
        group: OLD_COLL,
        name: "shmem_alltoalls64",
        params: "void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync",
        deprecated: true,
        ..A
    },
    Api { group: "Symmetric heap", name: "shmemx_heap_free", ret: "size_t", header: Header::Shmemx, ..A },
    Api { group: "Symmetric heap", name: "shmemx_heap_size", ret: "size_t", header: Header::Shmemx, ..A },
    Api { group: SIGNAL_X, name: "shmemx_signal_add", params: SIG, ..AX },
    Api { group: SIGNAL_X, name: "shmemx_signal_set", params: SIG, ..AX },
    Api { group: SIGNAL_X, name: "shmemx_ctx_signal_add", params: CTX_SIG, ..AX },
    Api { group: SIGNAL_X, name: "shmemx_ctx_signal_set", params: CTX_SIG, ..AX },
    Api { group: PCNTR, name: "shmemx_pcntr_get_issued_write", params: CNTR, ..AX },
    Api { group: PCNTR, name: "shmemx_pcntr_get_issued_read", params: CNTR, ..AX },
    Api { group: PCNTR, name: "shmemx_pcntr_get_completed_write", params: CNTR, ..AX },
    Api { group: PCNTR, name: "shmemx_pcntr_get_completed_read", params: CNTR, ..AX },
    Api { group: PCNTR, name: "shmemx_pcntr_get_completed_target", params: "uint64_t *cntr_value", ..AX },
    Api { group: PCNTR, name: "shmemx_pcntr_get_all", params: "shmem_ctx_t ctx, shmemx_pcntr_t *pcntr", ..AX },
    Api {
        group: "Thread identification (shmemx)",
        name: "shmemx_register_gettid",
        params: "shmemx_gettid_fn_t gettid_fn",
        ..AX
    },
    Api { group: SIGNAL_16, name: "shmem_signal_add", params: SIG, ..AX },
    Api { group: SIGNAL_16, name: "shmem_signal_set", params: SIG, ..AX },
    Api { group: SIGNAL_16, name: "shmem_ctx_signal_add", params: CTX_SIG, ..AX },
    Api { group: SIGNAL_16, name: "shmem_ctx_signal_set", params: CTX_SIG, ..AX },
];

/// The constants of `shmem.h`: (name, value, comment). Each is also defined with the legacy
/// `_SHMEM_` prefix where OpenSHMEM had one. The values that the runtime also knows are checked
/// against it by this crate's unit tests.
pub(crate) const CONSTANTS: &[(&str, &str, &str)] = &[
    ("SHMEM_MAJOR_VERSION", "1", "OpenSHMEM specification version implemented"),
    ("SHMEM_MINOR_VERSION", "5", ""),
    ("SHMEM_MAX_NAME_LEN", "256", "bytes shmem_info_get_name may write, its NUL included"),
    ("SHMEM_VENDOR_STRING", "\"oxshmem {VERSION}\"", ""),
    ("SHMEM_THREAD_SINGLE", "0", "thread levels (shmem_init_thread)"),
    ("SHMEM_THREAD_FUNNELED", "1", ""),
    ("SHMEM_THREAD_SERIALIZED", "2", ""),
    ("SHMEM_THREAD_MULTIPLE", "3", ""),
    ("SHMEM_CMP_EQ", "0", "comparisons of the point-to-point synchronization routines"),
    ("SHMEM_CMP_NE", "1", ""),
    ("SHMEM_CMP_GT", "2", ""),
    ("SHMEM_CMP_GE", "3", ""),
    ("SHMEM_CMP_LT", "4", ""),
    ("SHMEM_CMP_LE", "5", ""),
    ("SHMEM_SIGNAL_SET", "0", "signal operations of the put-with-signal routines"),
    ("SHMEM_SIGNAL_ADD", "1", ""),
    ("SHMEM_CTX_SERIALIZED", "(1L << 0)", "context options (shmem_ctx_create)"),
    ("SHMEM_CTX_PRIVATE", "(1L << 1)", ""),
    ("SHMEM_CTX_NOSTORE", "(1L << 2)", ""),
    ("SHMEM_TEAM_NUM_CONTEXTS", "(1L << 0)", "team configuration mask (shmem_team_split_*)"),
    ("SHMEM_MALLOC_ATOMICS_REMOTE", "(1L << 0)", "allocation hints (shmem_malloc_with_hints)"),
    ("SHMEM_MALLOC_SIGNAL_REMOTE", "(1L << 1)", ""),
    (
        "SHMEM_SYNC_VALUE",
        "0L",
        "pSync arrays of the deprecated active-set collectives: oxshmem keeps its own\n * synchronization state and never writes them, so any size of at least one works",
    ),
    ("SHMEM_SYNC_SIZE", "16", ""),
    ("SHMEM_BCAST_SYNC_SIZE", "16", ""),
    ("SHMEM_BARRIER_SYNC_SIZE", "16", ""),
    ("SHMEM_REDUCE_SYNC_SIZE", "16", ""),
    ("SHMEM_COLLECT_SYNC_SIZE", "16", ""),
    ("SHMEM_ALLTOALL_SYNC_SIZE", "16", ""),
    ("SHMEM_ALLTOALLS_SYNC_SIZE", "16", ""),
    ("SHMEM_REDUCE_MIN_WRKDATA_SIZE", "16", ""),
];

/// Constants that also exist with a leading underscore (OpenSHMEM 1.2 and before).
pub(crate) const LEGACY: &[&str] = &[
    "SHMEM_MAJOR_VERSION",
    "SHMEM_MINOR_VERSION",
    "SHMEM_MAX_NAME_LEN",
    "SHMEM_VENDOR_STRING",
    "SHMEM_CMP_EQ",
    "SHMEM_CMP_NE",
    "SHMEM_CMP_GT",
    "SHMEM_CMP_GE",
    "SHMEM_CMP_LT",
    "SHMEM_CMP_LE",
    "SHMEM_SYNC_VALUE",
    "SHMEM_SYNC_SIZE",
    "SHMEM_BCAST_SYNC_SIZE",
    "SHMEM_BARRIER_SYNC_SIZE",
    "SHMEM_REDUCE_SYNC_SIZE",
    "SHMEM_COLLECT_SYNC_SIZE",
    "SHMEM_REDUCE_MIN_WRKDATA_SIZE",
];

/// What `shmemx.h` declares before its prototypes, inside its `extern "C"` block: the constants,
/// types and variables of Sandia OpenSHMEM's extensions (its names and values).
pub(crate) const SHMEMX_PREAMBLE: &str = r#"
/* A hint of shmem_malloc_with_hints (Sandia OpenSHMEM's value): the call need not end with a
 * barrier, and the program synchronizes (shmem_sync_all, a barrier) before any PE accesses the
 * new object remotely. oxshmem accepts it; its allocations still end with the barrier that
 * checks every PE made the same call, which such a program cannot tell from none. */
#define SHMEMX_MALLOC_NO_BARRIER (1L << 2)

/* The PEs of this node, set by shmem_init: here the PEs that share memory, the team of
 * SHMEM_TEAM_SHARED (the same handle) */
extern shmem_team_t SHMEMX_TEAM_NODE;

/* Performance counters (shmemx_pcntr_get_all), with Sandia OpenSHMEM's layout and names:
 * pending_put and pending_get hold the writes and reads *issued* on the context by every thread
 * of this PE (puts, non-fetching AMOs, signals; gets, fetching AMOs), completed_put and
 * completed_get those completed — the same counts here, where an operation is complete when
 * its call returns — and target the operations of other PEs completed on this one (always 0:
 * they do not involve this PE). */
typedef struct {
    uint64_t pending_put;
    uint64_t pending_get;
    uint64_t completed_put;
    uint64_t completed_get;
    uint64_t target;
} shmemx_pcntr_t;

/* What shmemx_register_gettid takes: a function naming the calling thread */
typedef uint64_t (*shmemx_gettid_fn_t)(void);
"#;

/// Between the extensions and their OpenSHMEM 1.6 names in `shmemx.h`.
pub(crate) const SHMEM_1_6_BANNER: &str = r#"
/* ------------------------------------------------------------------------------------------
 * OpenSHMEM 1.6 names of the extensions above (shmem_signal_add/_set, shmem_ibput/_ibget,
 * shmem_TYPE_sum_inscan/_exscan): the same routines, declared here because shmem.h declares
 * exactly the OpenSHMEM 1.5 API.
 * ------------------------------------------------------------------------------------------ */
"#;

/// The end of `shmemx.h`: its `extern "C"` block closes, then the signal routines' forms with a
/// context under the names without one, as OpenSHMEM 1.6's C11 interface spells them (C++
/// overloads; C11 `_Generic` over the first argument, as for `shmem_sync`).
pub(crate) const SHMEMX_POSTAMBLE: &str = r#"
#ifdef __cplusplus
} /* extern "C" */
{CXX_OVERLOADS}

static inline void shmemx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe) {
    shmemx_ctx_signal_add(ctx, sig_addr, signal, pe);
}
static inline void shmemx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe) {
    shmemx_ctx_signal_set(ctx, sig_addr, signal, pe);
}
static inline void shmem_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe) {
    shmem_ctx_signal_add(ctx, sig_addr, signal, pe);
}
static inline void shmem_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe) {
    shmem_ctx_signal_set(ctx, sig_addr, signal, pe);
}

#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
{C11_GENERICS}
#define shmemx_signal_add(...) \
    _Generic(SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(SHMEM_C11_ARG0(__VA_ARGS__)), \
        shmem_ctx_t: shmemx_ctx_signal_add, \
        uint64_t *: shmemx_signal_add \
    )(__VA_ARGS__)
#define shmemx_signal_set(...) \
    _Generic(SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(SHMEM_C11_ARG0(__VA_ARGS__)), \
        shmem_ctx_t: shmemx_ctx_signal_set, \
        uint64_t *: shmemx_signal_set \
    )(__VA_ARGS__)
#define shmem_signal_add(...) \
    _Generic(SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(SHMEM_C11_ARG0(__VA_ARGS__)), \
        shmem_ctx_t: shmem_ctx_signal_add, \
        uint64_t *: shmem_signal_add \
    )(__VA_ARGS__)
#define shmem_signal_set(...) \
    _Generic(SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(SHMEM_C11_ARG0(__VA_ARGS__)), \
        shmem_ctx_t: shmem_ctx_signal_set, \
        uint64_t *: shmem_signal_set \
    )(__VA_ARGS__)

#endif /* C11 */

#endif /* OXSHMEM_SHMEMX_H */
"#;
