//! The deprecated Fortran API of OpenSHMEM (1.4 and before, as Sandia OpenSHMEM and Open MPI's
//! OSHMEM ship it): `include 'shmem.fh'`, implicit interfaces, every argument by reference.
//!
//! One table ([`ROUTINES`], expanded over the Fortran types of each family) gives both the
//! exported functions (`$OUT_DIR/fortran.rs`, included by `src/fortran_legacy.rs`) and
//! `shmem.fh` (its constants, the few declarations Sandia OpenSHMEM's header makes, and a
//! catalogue of every routine that the tests hold against the library's exports).
//!
//! Symbols are gfortran's (and flang's, and ifx's on Linux with its defaults): the name in lower
//! case with one trailing underscore, `SHMEM_INT4_ADD` → `shmem_int4_add_`. Every argument is a
//! pointer; a `CHARACTER` argument's length comes last, by value. Default `INTEGER`, `REAL` and
//! `LOGICAL` are 4 bytes, `DOUBLE PRECISION` and `COMPLEX` 8 — gfortran's defaults (programs
//! compiled with `-fdefault-integer-8` or `-fdefault-real-8` do not match this ABI).
//!
//! Body placeholders: `{F}` the Fortran name as a string literal (errors name the Fortran
//! routine), `{ES}` the element size in bytes, `{R}` the element's Rust type.

use std::fmt::Write as _;

use super::ops::CONSTANTS;

/// A Fortran element type (or size) of a family.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FTy {
    /// What replaces `{T}` in the routine's name (`INTEGER`, `INT4`, `MEM`, `32`).
    pub(crate) name: &'static str,
    /// Size in bytes.
    pub(crate) size: usize,
    /// Rust type (for typed pointers and return values; `c_void` where only bytes move).
    pub(crate) rust: &'static str,
    /// Fortran type, for the declarations of functions returning it.
    pub(crate) fortran: &'static str,
}

const fn t(name: &'static str, size: usize, rust: &'static str, fortran: &'static str) -> FTy {
    FTy { name, size, rust, fortran }
}

/// The typed RMA routines (`SHMEM_INTEGER_PUT`): default kinds.
const RMA_TYPES: &[FTy] = &[
    t("CHARACTER", 1, "c_void", "CHARACTER"),
    t("COMPLEX", 8, "c_void", "COMPLEX"),
    t("DOUBLE", 8, "c_void", "DOUBLE PRECISION"),
    t("INTEGER", 4, "c_void", "INTEGER"),
    t("LOGICAL", 4, "c_void", "LOGICAL"),
    t("REAL", 4, "c_void", "REAL"),
];

/// The sized RMA routines (`SHMEM_PUT4`, `SHMEM_PUTMEM`): SIZE 4 and 8 are bytes, 32, 64 and
/// 128 bits.
const RMA_SIZES: &[FTy] = &[
    t("MEM", 1, "c_void", ""),
    t("4", 4, "c_void", ""),
    t("8", 8, "c_void", ""),
    t("32", 4, "c_void", ""),
    t("64", 8, "c_void", ""),
    t("128", 16, "c_void", ""),
];

/// The sized collectives (`SHMEM_BROADCAST4`).
const COLL_SIZES: &[FTy] =
    &[t("4", 4, "c_void", ""), t("8", 8, "c_void", ""), t("32", 4, "c_void", ""), t("64", 8, "c_void", "")];

/// The 32- and 64-bit alltoalls.
const ALLTOALL_SIZES: &[FTy] = &[t("32", 4, "c_void", ""), t("64", 8, "c_void", "")];

const INT4: FTy = t("INT4", 4, "i32", "INTEGER(KIND=4)");
const INT8: FTy = t("INT8", 8, "i64", "INTEGER(KIND=8)");
const REAL4: FTy = t("REAL4", 4, "f32", "REAL(KIND=4)");
const REAL8: FTy = t("REAL8", 8, "f64", "REAL(KIND=8)");
const COMP4: FTy = t("COMP4", 8, "Complex<f32>", "COMPLEX(KIND=4)");
const COMP8: FTy = t("COMP8", 16, "Complex<f64>", "COMPLEX(KIND=8)");

const INTS: &[FTy] = &[INT4, INT8];
const INTS_REALS: &[FTy] = &[INT4, INT8, REAL4, REAL8];
const ARITH: &[FTy] = &[INT4, INT8, REAL4, REAL8, COMP4, COMP8];

/// How `shmem.fh` declares a routine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decl {
    /// A subroutine (`CALL`): nothing to declare.
    Sub,
    /// A function that `shmem.fh` declares `EXTERNAL` with this type, as Sandia OpenSHMEM's
    /// does (`{FT}` is the family type's Fortran type).
    Declared(&'static str),
    /// A function of this type that `shmem.fh` leaves undeclared, as Sandia OpenSHMEM's does
    /// by default: programs declare it themselves (`INTEGER SHMEM_MY_PE`), and a second
    /// declaration would not compile.
    Undeclared(&'static str),
}

/// One routine (or a family of routines over `types`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FRoutine {
    /// Section of the catalogue in `shmem.fh`.
    pub(crate) group: &'static str,
    /// Fortran name; `{T}` is the type's name.
    pub(crate) name: &'static str,
    /// The types of the family (empty: one routine, not typed).
    pub(crate) types: &'static [FTy],
    /// Fortran arguments, as the specification names them (for the catalogue).
    pub(crate) args: &'static str,
    /// Rust parameters of the exported function (`{R}`: the type's Rust type).
    pub(crate) params: &'static str,
    /// Rust return type (`{R}`), or "" for a subroutine, "!" for one that never returns.
    pub(crate) ret: &'static str,
    /// What `shmem.fh` says about it.
    pub(crate) decl: Decl,
    /// Rust body: an expression calling `src/fortran_legacy.rs`.
    pub(crate) body: &'static str,
}

const R: FRoutine =
    FRoutine { group: "", name: "", types: &[], args: "", params: "", ret: "", decl: Decl::Sub, body: "" };

const RMA: &str = "dest: *mut c_void, source: *const c_void, nelems: *const FInt, pe: *const FInt";
const RMA_STRIDED: &str = "dest: *mut c_void, source: *const c_void, dst: *const FInt, sst: *const FInt, nelems: *const FInt, pe: *const FInt";
const COLL: &str = "dest: *mut c_void, source: *const c_void, nelems: *const FInt, PE_start: *const FInt, logPE_stride: *const FInt, PE_size: *const FInt, pSync: *mut FInt";
const TO_ALL: &str = "dest: *mut {R}, source: *const {R}, nreduce: *const FInt, PE_start: *const FInt, logPE_stride: *const FInt, PE_size: *const FInt, pWrk: *mut {R}, pSync: *mut FInt";
const TO_ALL_ARGS: &str = "dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync";
const TO_ALL_BODY: &str =
    "fl::to_all({F}, ReduceOp::{OP}, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync)";

/// A `_TO_ALL` reduction over `types`.
const fn to_all(name: &'static str, types: &'static [FTy], body: &'static str) -> FRoutine {
    FRoutine {
        group: "Reductions (pWrk: MAX(nreduce/2+1, SHMEM_REDUCE_MIN_WRKDATA_SIZE))",
        name,
        types,
        args: TO_ALL_ARGS,
        params: TO_ALL,
        body,
        ..R
    }
}

/// Every routine of the deprecated Fortran API.
pub(crate) const ROUTINES: &[FRoutine] = &[
    // Setup and queries
    FRoutine {
        group: "Library setup, exit and queries",
        name: "START_PES",
        args: "npes",
        params: "npes: *const FInt",
        body: "fl::start_pes({F}, npes)",
        ..R
    },
    FRoutine { group: "Library setup, exit and queries", name: "SHMEM_INIT", body: "fl::init({F})", ..R },
    FRoutine { group: "Library setup, exit and queries", name: "SHMEM_FINALIZE", body: "fl::finalize({F})", ..R },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "SHMEM_GLOBAL_EXIT",
        args: "status",
        params: "status: *const FInt",
        ret: "!",
        body: "fl::global_exit({F}, status)",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "MY_PE",
        ret: "FInt",
        decl: Decl::Undeclared("INTEGER"),
        body: "fl::my_pe({F})",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "SHMEM_MY_PE",
        ret: "FInt",
        decl: Decl::Undeclared("INTEGER"),
        body: "fl::my_pe({F})",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "NUM_PES",
        ret: "FInt",
        decl: Decl::Undeclared("INTEGER"),
        body: "fl::n_pes({F})",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "SHMEM_N_PES",
        ret: "FInt",
        decl: Decl::Undeclared("INTEGER"),
        body: "fl::n_pes({F})",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "SHMEM_PE_ACCESSIBLE",
        args: "pe",
        params: "pe: *const FInt",
        ret: "FInt",
        decl: Decl::Declared("LOGICAL"),
        body: "fl::pe_accessible({F}, pe)",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "SHMEM_ADDR_ACCESSIBLE",
        args: "addr, pe",
        params: "addr: *const c_void, pe: *const FInt",
        ret: "FInt",
        decl: Decl::Declared("LOGICAL"),
        body: "fl::addr_accessible({F}, addr, pe)",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "SHMEM_PTR",
        args: "dest, pe",
        params: "dest: *const c_void, pe: *const FInt",
        ret: "i64",
        decl: Decl::Declared("INTEGER(KIND=8)"),
        body: "fl::ptr({F}, dest, pe)",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "SHMEM_INFO_GET_VERSION",
        args: "major, minor",
        params: "major: *mut FInt, minor: *mut FInt",
        body: "fl::info_get_version({F}, major, minor)",
        ..R
    },
    FRoutine {
        group: "Library setup, exit and queries",
        name: "SHMEM_INFO_GET_NAME",
        args: "name",
        params: "name: *mut c_char, name_len: usize",
        body: "fl::info_get_name({F}, name, name_len)",
        ..R
    },
    // Memory
    FRoutine {
        group: "Symmetric heap (Cray pointers; lengths in 32-bit words)",
        name: "SHPALLOC",
        args: "addr, length, errcode, abort",
        params: "addr: *mut *mut c_void, length: *const FInt, errcode: *mut FInt, abort: *const FInt",
        body: "fl::shpalloc({F}, addr, length, errcode, abort)",
        ..R
    },
    FRoutine {
        group: "Symmetric heap (Cray pointers; lengths in 32-bit words)",
        name: "SHPDEALLC",
        args: "addr, errcode, abort",
        params: "addr: *mut *mut c_void, errcode: *mut FInt, abort: *const FInt",
        body: "fl::shpdeallc({F}, addr, errcode, abort)",
        ..R
    },
    FRoutine {
        group: "Symmetric heap (Cray pointers; lengths in 32-bit words)",
        name: "SHPCLMOVE",
        args: "addr, length, status, abort",
        params: "addr: *mut *mut c_void, length: *const FInt, status: *mut FInt, abort: *const FInt",
        body: "fl::shpclmove({F}, addr, length, status, abort)",
        ..R
    },
    // RMA
    FRoutine {
        group: "RMA: put (nelems: elements; SHMEM_PUT: 8-byte words)",
        name: "SHMEM_PUT",
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::put({F}, dest, source, nelems, pe, 8)",
        ..R
    },
    FRoutine {
        group: "RMA: put (nelems: elements; SHMEM_PUT: 8-byte words)",
        name: "SHMEM_{T}_PUT",
        types: RMA_TYPES,
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::put({F}, dest, source, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: put (nelems: elements; SHMEM_PUT: 8-byte words)",
        name: "SHMEM_PUT{T}",
        types: RMA_SIZES,
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::put({F}, dest, source, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: get",
        name: "SHMEM_GET",
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::get({F}, dest, source, nelems, pe, 8)",
        ..R
    },
    FRoutine {
        group: "RMA: get",
        name: "SHMEM_{T}_GET",
        types: RMA_TYPES,
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::get({F}, dest, source, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: get",
        name: "SHMEM_GET{T}",
        types: RMA_SIZES,
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::get({F}, dest, source, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: nonblocking put and get (complete at SHMEM_QUIET)",
        name: "SHMEM_{T}_PUT_NBI",
        types: RMA_TYPES,
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::put_nbi({F}, dest, source, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: nonblocking put and get (complete at SHMEM_QUIET)",
        name: "SHMEM_PUT{T}_NBI",
        types: RMA_SIZES,
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::put_nbi({F}, dest, source, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: nonblocking put and get (complete at SHMEM_QUIET)",
        name: "SHMEM_{T}_GET_NBI",
        types: RMA_TYPES,
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::get_nbi({F}, dest, source, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: nonblocking put and get (complete at SHMEM_QUIET)",
        name: "SHMEM_GET{T}_NBI",
        types: RMA_SIZES,
        args: "dest, source, nelems, pe",
        params: RMA,
        body: "fl::get_nbi({F}, dest, source, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: strided put and get (strides in elements)",
        name: "SHMEM_{T}_IPUT",
        types: RMA_TYPES,
        args: "dest, source, dst, sst, nelems, pe",
        params: RMA_STRIDED,
        body: "fl::iput({F}, dest, source, dst, sst, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: strided put and get (strides in elements)",
        name: "SHMEM_IPUT{T}",
        types: RMA_SIZES,
        args: "dest, source, dst, sst, nelems, pe",
        params: RMA_STRIDED,
        body: "fl::iput({F}, dest, source, dst, sst, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: strided put and get (strides in elements)",
        name: "SHMEM_{T}_IGET",
        types: RMA_TYPES,
        args: "dest, source, dst, sst, nelems, pe",
        params: RMA_STRIDED,
        body: "fl::iget({F}, dest, source, dst, sst, nelems, pe, {ES})",
        ..R
    },
    FRoutine {
        group: "RMA: strided put and get (strides in elements)",
        name: "SHMEM_IGET{T}",
        types: RMA_SIZES,
        args: "dest, source, dst, sst, nelems, pe",
        params: RMA_STRIDED,
        body: "fl::iget({F}, dest, source, dst, sst, nelems, pe, {ES})",
        ..R
    },
    // Atomics
    FRoutine {
        group: "Atomics",
        name: "SHMEM_SWAP",
        args: "dest, value, pe",
        params: "dest: *mut FInt, value: *const FInt, pe: *const FInt",
        ret: "FInt",
        decl: Decl::Undeclared("INTEGER"),
        body: "fl::swap({F}, dest, value, pe)",
        ..R
    },
    FRoutine {
        group: "Atomics",
        name: "SHMEM_{T}_SWAP",
        types: INTS_REALS,
        args: "dest, value, pe",
        params: "dest: *mut {R}, value: *const {R}, pe: *const FInt",
        ret: "{R}",
        decl: Decl::Undeclared("{FT}"),
        body: "fl::swap({F}, dest, value, pe)",
    },
    FRoutine {
        group: "Atomics",
        name: "SHMEM_{T}_CSWAP",
        types: INTS,
        args: "dest, cond, value, pe",
        params: "dest: *mut {R}, cond: *const {R}, value: *const {R}, pe: *const FInt",
        ret: "{R}",
        decl: Decl::Undeclared("{FT}"),
        body: "fl::cswap({F}, dest, cond, value, pe)",
    },
    FRoutine {
        group: "Atomics",
        name: "SHMEM_{T}_FADD",
        types: INTS,
        args: "dest, value, pe",
        params: "dest: *mut {R}, value: *const {R}, pe: *const FInt",
        ret: "{R}",
        decl: Decl::Undeclared("{FT}"),
        body: "fl::fadd({F}, dest, value, pe)",
    },
    FRoutine {
        group: "Atomics",
        name: "SHMEM_{T}_FINC",
        types: INTS,
        args: "dest, pe",
        params: "dest: *mut {R}, pe: *const FInt",
        ret: "{R}",
        decl: Decl::Undeclared("{FT}"),
        body: "fl::finc({F}, dest, pe)",
    },
    FRoutine {
        group: "Atomics",
        name: "SHMEM_{T}_ADD",
        types: INTS,
        args: "dest, value, pe",
        params: "dest: *mut {R}, value: *const {R}, pe: *const FInt",
        body: "fl::add({F}, dest, value, pe)",
        ..R
    },
    FRoutine {
        group: "Atomics",
        name: "SHMEM_{T}_INC",
        types: INTS,
        args: "dest, pe",
        params: "dest: *mut {R}, pe: *const FInt",
        body: "fl::inc({F}, dest, pe)",
        ..R
    },
    FRoutine {
        group: "Atomics",
        name: "SHMEM_{T}_FETCH",
        types: INTS_REALS,
        args: "source, pe",
        params: "source: *const {R}, pe: *const FInt",
        ret: "{R}",
        decl: Decl::Undeclared("{FT}"),
        body: "fl::fetch({F}, source, pe)",
    },
    FRoutine {
        group: "Atomics",
        name: "SHMEM_{T}_SET",
        types: INTS_REALS,
        args: "dest, value, pe",
        params: "dest: *mut {R}, value: *const {R}, pe: *const FInt",
        body: "fl::set({F}, dest, value, pe)",
        ..R
    },
    // Point-to-point synchronization
    FRoutine {
        group: "Point-to-point synchronization (cmp: a SHMEM_CMP_ parameter)",
        name: "SHMEM_WAIT",
        args: "ivar, cmp_value",
        params: "ivar: *mut FInt, cmp_value: *const FInt",
        body: "fl::wait({F}, ivar, cmp_value)",
        ..R
    },
    FRoutine {
        group: "Point-to-point synchronization (cmp: a SHMEM_CMP_ parameter)",
        name: "SHMEM_{T}_WAIT",
        types: INTS,
        args: "ivar, cmp_value",
        params: "ivar: *mut {R}, cmp_value: *const {R}",
        body: "fl::wait({F}, ivar, cmp_value)",
        ..R
    },
    FRoutine {
        group: "Point-to-point synchronization (cmp: a SHMEM_CMP_ parameter)",
        name: "SHMEM_WAIT_UNTIL",
        args: "ivar, cmp, cmp_value",
        params: "ivar: *mut FInt, cmp: *const FInt, cmp_value: *const FInt",
        body: "fl::wait_until({F}, ivar, cmp, cmp_value)",
        ..R
    },
    FRoutine {
        group: "Point-to-point synchronization (cmp: a SHMEM_CMP_ parameter)",
        name: "SHMEM_{T}_WAIT_UNTIL",
        types: INTS,
        args: "ivar, cmp, cmp_value",
        params: "ivar: *mut {R}, cmp: *const FInt, cmp_value: *const {R}",
        body: "fl::wait_until({F}, ivar, cmp, cmp_value)",
        ..R
    },
    // Ordering and barriers
    FRoutine { group: "Ordering and barriers", name: "SHMEM_FENCE", body: "fl::fence({F})", ..R },
    FRoutine { group: "Ordering and barriers", name: "SHMEM_QUIET", body: "fl::quiet({F})", ..R },
    FRoutine { group: "Ordering and barriers", name: "SHMEM_BARRIER_ALL", body: "fl::barrier_all({F})", ..R },
    FRoutine {
        group: "Ordering and barriers",
        name: "SHMEM_BARRIER",
        args: "PE_start, logPE_stride, PE_size, pSync",
        params: "PE_start: *const FInt, logPE_stride: *const FInt, PE_size: *const FInt, pSync: *mut FInt",
        body: "fl::barrier({F}, PE_start, logPE_stride, PE_size, pSync)",
        ..R
    },
    // Collectives
    FRoutine {
        group: "Collectives over active sets (pSync: SHMEM_*_SYNC_SIZE INTEGERs)",
        name: "SHMEM_BROADCAST{T}",
        types: COLL_SIZES,
        args: "dest, source, nelems, PE_root, PE_start, logPE_stride, PE_size, pSync",
        params: "dest: *mut c_void, source: *const c_void, nelems: *const FInt, PE_root: *const FInt, PE_start: *const FInt, logPE_stride: *const FInt, PE_size: *const FInt, pSync: *mut FInt",
        body: "fl::broadcast({F}, dest, source, nelems, PE_root, [PE_start, logPE_stride, PE_size], pSync, {ES})",
        ..R
    },
    FRoutine {
        group: "Collectives over active sets (pSync: SHMEM_*_SYNC_SIZE INTEGERs)",
        name: "SHMEM_COLLECT{T}",
        types: COLL_SIZES,
        args: "dest, source, nelems, PE_start, logPE_stride, PE_size, pSync",
        params: COLL,
        body: "fl::collect({F}, dest, source, nelems, [PE_start, logPE_stride, PE_size], pSync, {ES}, false)",
        ..R
    },
    FRoutine {
        group: "Collectives over active sets (pSync: SHMEM_*_SYNC_SIZE INTEGERs)",
        name: "SHMEM_FCOLLECT{T}",
        types: COLL_SIZES,
        args: "dest, source, nelems, PE_start, logPE_stride, PE_size, pSync",
        params: COLL,
        body: "fl::collect({F}, dest, source, nelems, [PE_start, logPE_stride, PE_size], pSync, {ES}, true)",
        ..R
    },
    FRoutine {
        group: "Collectives over active sets (pSync: SHMEM_*_SYNC_SIZE INTEGERs)",
        name: "SHMEM_ALLTOALL{T}",
        types: ALLTOALL_SIZES,
        args: "dest, source, nelems, PE_start, logPE_stride, PE_size, pSync",
        params: COLL,
        body: "fl::alltoall({F}, dest, source, nelems, [PE_start, logPE_stride, PE_size], pSync, {ES})",
        ..R
    },
    FRoutine {
        group: "Collectives over active sets (pSync: SHMEM_*_SYNC_SIZE INTEGERs)",
        name: "SHMEM_ALLTOALLS{T}",
        types: ALLTOALL_SIZES,
        args: "dest, source, dst, sst, nelems, PE_start, logPE_stride, PE_size, pSync",
        params: "dest: *mut c_void, source: *const c_void, dst: *const FInt, sst: *const FInt, nelems: *const FInt, PE_start: *const FInt, logPE_stride: *const FInt, PE_size: *const FInt, pSync: *mut FInt",
        body: "fl::alltoalls({F}, dest, source, dst, sst, nelems, [PE_start, logPE_stride, PE_size], pSync, {ES})",
        ..R
    },
    to_all("SHMEM_{T}_AND_TO_ALL", INTS, TO_ALL_BODY),
    to_all("SHMEM_{T}_OR_TO_ALL", INTS, TO_ALL_BODY),
    to_all("SHMEM_{T}_XOR_TO_ALL", INTS, TO_ALL_BODY),
    to_all("SHMEM_{T}_MAX_TO_ALL", INTS_REALS, TO_ALL_BODY),
    to_all("SHMEM_{T}_MIN_TO_ALL", INTS_REALS, TO_ALL_BODY),
    to_all("SHMEM_{T}_SUM_TO_ALL", ARITH, TO_ALL_BODY),
    to_all("SHMEM_{T}_PROD_TO_ALL", ARITH, TO_ALL_BODY),
    // Locks
    FRoutine {
        group: "Locks (lock: a symmetric INTEGER(KIND=8), 0 before first use)",
        name: "SHMEM_SET_LOCK",
        args: "lock",
        params: "lock: *mut i64",
        body: "fl::set_lock({F}, lock)",
        ..R
    },
    FRoutine {
        group: "Locks (lock: a symmetric INTEGER(KIND=8), 0 before first use)",
        name: "SHMEM_CLEAR_LOCK",
        args: "lock",
        params: "lock: *mut i64",
        body: "fl::clear_lock({F}, lock)",
        ..R
    },
    FRoutine {
        group: "Locks (lock: a symmetric INTEGER(KIND=8), 0 before first use)",
        name: "SHMEM_TEST_LOCK",
        args: "lock",
        params: "lock: *mut i64",
        ret: "FInt",
        decl: Decl::Undeclared("INTEGER"),
        body: "fl::test_lock({F}, lock)",
        ..R
    },
    // Cache management: no-ops
    FRoutine { group: "Cache management (no operation)", name: "SHMEM_SET_CACHE_INV", body: "fl::no_op()", ..R },
    FRoutine { group: "Cache management (no operation)", name: "SHMEM_CLEAR_CACHE_INV", body: "fl::no_op()", ..R },
    FRoutine { group: "Cache management (no operation)", name: "SHMEM_UDCFLUSH", body: "fl::no_op()", ..R },
    FRoutine {
        group: "Cache management (no operation)",
        name: "SHMEM_SET_CACHE_LINE_INV",
        args: "dest",
        params: "_dest: *const c_void",
        body: "fl::no_op()",
        ..R
    },
    FRoutine {
        group: "Cache management (no operation)",
        name: "SHMEM_CLEAR_CACHE_LINE_INV",
        args: "dest",
        params: "_dest: *const c_void",
        body: "fl::no_op()",
        ..R
    },
    FRoutine {
        group: "Cache management (no operation)",
        name: "SHMEM_UDCFLUSH_LINE",
        args: "dest",
        params: "_dest: *const c_void",
        body: "fl::no_op()",
        ..R
    },
];

/// One expanded routine.
#[derive(Debug, Clone)]
pub(crate) struct FFunc {
    /// Catalogue section.
    pub(crate) group: &'static str,
    /// Fortran name (`SHMEM_INT4_ADD`).
    pub(crate) name: String,
    /// gfortran's symbol (`shmem_int4_add_`).
    pub(crate) symbol: String,
    /// Fortran arguments.
    pub(crate) args: &'static str,
    /// Rust parameters.
    pub(crate) params: String,
    /// Rust return type ("" for a subroutine).
    pub(crate) ret: String,
    /// Declaration in `shmem.fh`, with the Fortran type resolved.
    pub(crate) decl: Decl,
    /// Fortran type of a function's result.
    pub(crate) ftype: Option<String>,
    /// Rust body.
    pub(crate) body: String,
}

/// The op of a `_TO_ALL` name (`SHMEM_{T}_SUM_TO_ALL` → `Sum`).
fn reduce_op(name: &str) -> &'static str {
    for (w, op) in [("_AND_", "And"), ("_OR_", "Or"), ("_XOR_", "Xor"), ("_MAX_", "Max"), ("_MIN_", "Min")] {
        if name.contains(w) {
            return op;
        }
    }
    if name.contains("_SUM_") {
        "Sum"
    } else if name.contains("_PROD_") {
        "Prod"
    } else {
        ""
    }
}

fn expand(r: &FRoutine, t: Option<&FTy>) -> FFunc {
    let sub = |s: &str| match t {
        Some(t) => s.replace("{T}", t.name).replace("{R}", t.rust).replace("{ES}", &t.size.to_string()),
        None => s.to_string(),
    };
    let name = sub(r.name);
    assert!(!name.contains('{'), "gen: Fortran routine {} has no type for its name", r.name);
    let symbol = format!("{}_", name.to_ascii_lowercase());
    let ftype = match r.decl {
        Decl::Sub => None,
        Decl::Declared(ft) | Decl::Undeclared(ft) => Some(ft.replace("{FT}", t.map_or("", |t| t.fortran))),
    };
    assert_eq!(ftype.is_some(), !r.ret.is_empty() && r.ret != "!", "gen: {name}: a function must declare its type");
    let body = sub(r.body).replace("{F}", &format!("\"{name}\"")).replace("{OP}", reduce_op(&name));
    FFunc {
        group: r.group,
        name,
        symbol,
        args: r.args,
        params: sub(r.params),
        ret: sub(r.ret),
        decl: r.decl,
        ftype,
        body,
    }
}

/// Every exported function of the Fortran API, in catalogue order.
pub(crate) fn functions() -> Vec<FFunc> {
    let mut out = Vec::new();
    for r in ROUTINES {
        if r.types.is_empty() {
            out.push(expand(r, None));
        } else {
            out.extend(r.types.iter().map(|t| expand(r, Some(t))));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for f in &out {
        assert!(seen.insert(f.symbol.clone()), "gen: Fortran routine {} twice", f.name);
    }
    out
}

/// The Rust source of the exported functions (`$OUT_DIR/fortran.rs`).
pub(crate) fn rust(funcs: &[FFunc], generated_by: &str) -> String {
    let mut s = format!("// {generated_by} Do not edit.\n\n");
    s.push_str("use std::ffi::{c_char, c_void};\n\nuse oxshmem_rt::{Complex, ReduceOp};\n\n");
    s.push_str("use super::FInt;\nuse crate::fortran_legacy as fl;\n\n");
    for f in funcs {
        let ret = match f.ret.as_str() {
            "" => String::new(),
            r => format!(" -> {r}"),
        };
        let _ = writeln!(
            s,
            "/// `{}` (Fortran; {}).\n///\n/// # Safety\n/// Called from Fortran: every argument is the address of a variable of the routine's\n/// documented type; symmetric addresses, PE numbers and sizes are checked, and an error ends the job.\n#[unsafe(no_mangle)]\npub unsafe extern \"C\" fn {}({}){ret} {{\n    // SAFETY: the caller passes what the routine's Fortran interface says.\n    unsafe {{ {} }}\n}}\n",
            f.name, f.group, f.symbol, f.params, f.body
        );
    }
    s
}

/// The value of C constant `name`, parsed as an integer.
fn c_int_constant(name: &str) -> i64 {
    let (_, v, _) = CONSTANTS.iter().find(|(n, _, _)| *n == name).unwrap_or_else(|| panic!("gen: no constant {name}"));
    v.trim_end_matches('L').parse().unwrap_or_else(|e| panic!("gen: constant {name} = {v}: {e}"))
}

/// The integer parameters of `shmem.fh`: the names Sandia OpenSHMEM's has, with oxshmem's
/// values. `pSync` is an `INTEGER` array in Fortran that the library reads as C `long`s: its
/// sizes are the C ones times `sizeof(long) / sizeof(INTEGER)`, as Sandia OpenSHMEM computes
/// them (which also covers programs that declare `pSync` `INTEGER(KIND=8)`).
fn fortran_constants() -> Vec<(&'static str, i64, &'static str)> {
    let doubled = |n: &str| 2 * c_int_constant(n);
    vec![
        ("SHMEM_CMP_EQ", c_int_constant("SHMEM_CMP_EQ"), "comparisons of SHMEM_WAIT_UNTIL (the values of shmem.h)"),
        ("SHMEM_CMP_NE", c_int_constant("SHMEM_CMP_NE"), ""),
        ("SHMEM_CMP_GT", c_int_constant("SHMEM_CMP_GT"), ""),
        ("SHMEM_CMP_GE", c_int_constant("SHMEM_CMP_GE"), ""),
        ("SHMEM_CMP_LT", c_int_constant("SHMEM_CMP_LT"), ""),
        ("SHMEM_CMP_LE", c_int_constant("SHMEM_CMP_LE"), ""),
        ("SHMEM_BCAST_SYNC_SIZE", doubled("SHMEM_BCAST_SYNC_SIZE"), "pSync sizes in default INTEGERs"),
        ("SHMEM_REDUCE_SYNC_SIZE", doubled("SHMEM_REDUCE_SYNC_SIZE"), ""),
        ("SHMEM_BARRIER_SYNC_SIZE", doubled("SHMEM_BARRIER_SYNC_SIZE"), ""),
        ("SHMEM_COLLECT_SYNC_SIZE", doubled("SHMEM_COLLECT_SYNC_SIZE"), ""),
        ("SHMEM_ALLTOALL_SYNC_SIZE", doubled("SHMEM_ALLTOALL_SYNC_SIZE"), ""),
        ("SHMEM_ALLTOALLS_SYNC_SIZE", doubled("SHMEM_ALLTOALLS_SYNC_SIZE"), ""),
        ("SHMEM_SYNC_SIZE", doubled("SHMEM_SYNC_SIZE"), ""),
        ("SHMEM_REDUCE_MIN_WRKDATA_SIZE", doubled("SHMEM_REDUCE_MIN_WRKDATA_SIZE"), ""),
        ("SHMEM_SYNC_VALUE", c_int_constant("SHMEM_SYNC_VALUE"), "every pSync element before first use"),
        ("SHMEM_MAJOR_VERSION", c_int_constant("SHMEM_MAJOR_VERSION"), "the specification implemented"),
        ("SHMEM_MINOR_VERSION", c_int_constant("SHMEM_MINOR_VERSION"), ""),
        (
            "SHMEM_MAX_NAME_LEN",
            c_int_constant("SHMEM_MAX_NAME_LEN") - 1,
            "the length of SHMEM_INFO_GET_NAME's name (C's less its NUL)",
        ),
    ]
}

/// A routine's catalogue entry: `!     NAME(args) -> TYPE`, the arguments wrapped onto
/// continuation lines (`!` and ten blanks) to stay within 72 columns.
fn catalogue_line(f: &FFunc) -> String {
    let tail = f.ftype.as_ref().map(|t| format!(" -> {t}")).unwrap_or_default();
    let mut lines = vec![format!("!     {}(", f.name)];
    let args: Vec<&str> = if f.args.is_empty() { Vec::new() } else { f.args.split(", ").collect() };
    for (i, a) in args.iter().enumerate() {
        let piece = if i + 1 < args.len() { format!("{a}, ") } else { (*a).to_string() };
        let last = lines.last_mut().expect("a first line");
        if last.len() + piece.trim_end().len() > 70 {
            lines.push(format!("!          {piece}"));
        } else {
            last.push_str(&piece);
        }
    }
    let last = lines.last_mut().expect("a first line");
    last.push(')');
    if last.len() + tail.len() > 72 {
        lines.push(format!("!         {tail}"));
    } else {
        last.push_str(&tail);
    }
    lines.iter().map(|l| l.trim_end()).collect::<Vec<_>>().join("\n")
}

/// The marker line that starts the catalogue in `shmem.fh` (the tests find it).
pub(crate) const CATALOGUE_MARKER: &str = "! Every routine, as it is called (-> a function's type):";

/// `shmem.fh`. Usable in fixed and free form: comment lines start with `!`, statements in
/// column 7 and end before column 73.
pub(crate) fn shmem_fh(funcs: &[FFunc], version: &str, generated_by: &str) -> String {
    let mut s = String::new();
    s.push_str("! shmem.fh -- the deprecated Fortran API of OpenSHMEM for oxshmem.\n!\n");
    let _ = writeln!(s, "! {generated_by}");
    for line in [
        "! Do not edit: `cargo test -p oxshmem-c --test fortran_fh` fails when",
        "! this copy is stale; OXSHMEM_BLESS=1 refreshes it.",
        "!",
        "! INCLUDE 'shmem.fh' in fixed- or free-form programs compiled with",
        "! oshfort (gfortran's default kinds: INTEGER, REAL and LOGICAL of 4",
        "! bytes). Symmetric data: COMMON blocks, SAVE variables, SHPALLOC",
        "! memory.",
        "!",
        "! As Sandia OpenSHMEM's shmem.fh does by default, this file declares",
        "! only SHMEM_PE_ACCESSIBLE, SHMEM_ADDR_ACCESSIBLE and SHMEM_PTR: declare",
        "! the type of the other functions you call (INTEGER SHMEM_MY_PE,",
        "! INTEGER*8 SHMEM_INT8_FADD, ...; MY_PE and NUM_PES are INTEGER by",
        "! implicit typing). The catalogue at the end lists every routine.",
        "",
    ] {
        let _ = writeln!(s, "{line}");
    }
    let mut last = "";
    for (name, value, comment) in fortran_constants() {
        if !comment.is_empty() && comment != last {
            let _ = writeln!(s, "! {comment}");
            last = comment;
        }
        let _ = writeln!(s, "      INTEGER {name}");
        let _ = writeln!(s, "      PARAMETER ({name}={value})");
    }
    let vendor = format!("oxshmem {version}");
    s.push_str("! the implementation\n");
    s.push_str("      CHARACTER(LEN=SHMEM_MAX_NAME_LEN) SHMEM_VENDOR_STRING\n");
    let _ = writeln!(s, "      PARAMETER (SHMEM_VENDOR_STRING='{vendor}')");
    s.push_str("\n! Functions whose type implicit typing gets wrong\n");
    for f in funcs {
        if let (Decl::Declared(_), Some(t)) = (f.decl, &f.ftype) {
            let _ = writeln!(s, "      EXTERNAL {}", f.name);
            let _ = writeln!(s, "      {t} {}", f.name);
        }
    }
    let _ = writeln!(s, "\n{CATALOGUE_MARKER}");
    let mut group = "";
    for f in funcs {
        if f.group != group {
            group = f.group;
            let _ = writeln!(s, "!\n! {group}");
        }
        let _ = writeln!(s, "{}", catalogue_line(f));
    }
    for line in s.lines() {
        assert!(
            line.len() <= 72 && (line.starts_with('!') || line.is_empty() || line.starts_with("      ")),
            "gen: shmem.fh line is not fixed-form: {line:?}"
        );
    }
    s
}
