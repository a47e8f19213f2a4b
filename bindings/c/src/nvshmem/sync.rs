//! NVSHMEM's ordering, barrier and signal routines (host and stream forms), and the routines
//! that launch kernels, which need the CUDA back end.

use std::ffi::{c_int, c_void};

use oxshmem_rt::raw;

use super::{CudaStream, Dim3, NvTeam, SendPtr, code, on_stream, on_stream_status, team_status};
use crate::error::{invalid, ok, report};
use crate::handles;
use crate::ops::{self, Amo};

/// `nvshmem_fence`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_fence() {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_fence");
    ok("nvshmem_fence", raw::fence());
}

/// `nvshmem_quiet`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_quiet() {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_quiet");
    ok("nvshmem_quiet", raw::quiet());
}

/// `nvshmem_barrier_all`: completes this PE's operations, then waits for every PE.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_barrier_all() {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_barrier_all");
    ok("nvshmem_barrier_all", raw::barrier_all());
}

/// `nvshmem_sync_all`: waits for every PE (no completion).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_sync_all() {
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new("nvshmem_sync_all");
    ok("nvshmem_sync_all", raw::sync_all());
}

fn barrier(func: &'static str, team: NvTeam) -> c_int {
    team_status(func, team, |h| {
        let r = raw::quiet().and_then(|()| handles::team(func, h)).and_then(|t| t.get().team.sync());
        crate::error::status(func, r)
    })
}

fn team_sync(func: &'static str, team: NvTeam) -> c_int {
    team_status(func, team, |h| crate::error::status(func, handles::team(func, h).and_then(|t| t.get().team.sync())))
}

/// `nvshmem_barrier`: completes this PE's operations, then waits for every member of `team`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_barrier(team: NvTeam) -> c_int {
    barrier("nvshmem_barrier", team)
}

/// `nvshmem_team_sync`: waits for every member of `team`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_sync(team: NvTeam) -> c_int {
    team_sync("nvshmem_team_sync", team)
}

/// `nvshmemx_barrier_on_stream`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_barrier_on_stream(team: NvTeam, stream: CudaStream) -> c_int {
    const F: &str = "nvshmemx_barrier_on_stream";
    on_stream_status(F, stream, move || barrier(F, team))
}

/// `nvshmemx_barrier_all_on_stream`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_barrier_all_on_stream(stream: CudaStream) {
    const F: &str = "nvshmemx_barrier_all_on_stream";
    on_stream(F, stream, || ok(F, raw::barrier_all()));
}

/// `nvshmemx_team_sync_on_stream`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_team_sync_on_stream(team: NvTeam, stream: CudaStream) -> c_int {
    const F: &str = "nvshmemx_team_sync_on_stream";
    on_stream_status(F, stream, move || team_sync(F, team))
}

/// `nvshmemx_sync_all_on_stream`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_sync_all_on_stream(stream: CudaStream) {
    const F: &str = "nvshmemx_sync_all_on_stream";
    on_stream(F, stream, || ok(F, raw::sync_all()));
}

/// `nvshmemx_quiet_on_stream`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_quiet_on_stream(cstrm: CudaStream) {
    const F: &str = "nvshmemx_quiet_on_stream";
    on_stream(F, cstrm, || ok(F, raw::quiet()));
}

/// `nvshmem_signal_fetch`.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_signal_fetch(sig_addr: *mut u64) -> u64 {
    // SAFETY: checked there.
    ok("nvshmem_signal_fetch", unsafe { crate::ops::signal_fetch("nvshmem_signal_fetch", sig_addr) })
}

/// The signal update of `nvshmemx_signal_op`: an atomic set or add on `pe`'s signal word.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned.
unsafe fn signal_op(func: &'static str, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
    let op = match super::sig_op(func, sig_op) {
        0 => Amo::Set(signal),
        _ => Amo::Add(signal),
    };
    // SAFETY: the runtime checks sig_addr.
    unsafe { ops::amo(func, handles::default_ctx(), sig_addr, op, pe) };
}

/// `nvshmemx_signal_op`: `NVSHMEM_SIGNAL_SET` or `NVSHMEM_SIGNAL_ADD` of `signal` to the signal
/// word at `sig_addr` on `pe`.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_signal_op(sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
    // SAFETY: forwarded.
    unsafe { signal_op("nvshmemx_signal_op", sig_addr, signal, sig_op, pe) }
}

/// `nvshmemx_signal_op_on_stream`.
///
/// # Safety
/// As [`nvshmemx_signal_op`]; the signal word must stay valid until the stream runs it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_signal_op_on_stream(
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
    cstrm: CudaStream,
) {
    const F: &str = "nvshmemx_signal_op_on_stream";
    let sig = SendPtr(sig_addr);
    // SAFETY: forwarded.
    on_stream(F, cstrm, move || unsafe { signal_op(F, sig.get(), signal, sig_op, pe) });
}

/// `nvshmemx_signal_wait_until_on_stream`: the stream waits until the local signal word
/// satisfies `cmp cmp_value`.
///
/// # Safety
/// `sig_addr` is checked to be symmetric and aligned; it must stay valid until the stream runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_signal_wait_until_on_stream(
    sig_addr: *mut u64,
    cmp: c_int,
    cmp_value: u64,
    cstream: CudaStream,
) {
    const F: &str = "nvshmemx_signal_wait_until_on_stream";
    let sig = SendPtr(sig_addr);
    on_stream(F, cstream, move || {
        let c = oxshmem_rt::Cmp::from_c(super::cmp(F, cmp)).expect("translated to a SHMEM_CMP_ value");
        // SAFETY: checked there.
        ok(F, unsafe { crate::ops::signal_wait_until(F, sig.get(), c, cmp_value) });
    });
}

fn no_gpu(func: &'static str, code: c_int) -> c_int {
    report(
        func,
        invalid(
            func,
            "there is no GPU kernel to launch from the host library: the collective launch is defined by \
             libnvshmem_device.a (linked into the program with the CUDA runtime), which this program does not link",
        ),
    );
    code
}

/// `nvshmemx_collective_launch`: a cooperative launch of a CUDA kernel — needs the CUDA back
/// end; without it `NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED`, after saying why.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_collective_launch(
    _func: *const c_void,
    _grid_dims: Dim3,
    _block_dims: Dim3,
    _args: *mut *mut c_void,
    _shared_mem: usize,
    _stream: CudaStream,
) -> c_int {
    no_gpu("nvshmemx_collective_launch", 6)
}

/// `nvshmemx_collective_launch_query_gridsize`: see [`nvshmemx_collective_launch`].
///
/// # Safety
/// `gridsize` must be NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_collective_launch_query_gridsize(
    _func: *const c_void,
    _block_dims: Dim3,
    _args: *mut *mut c_void,
    _shared_mem: usize,
    gridsize: *mut c_int,
) -> c_int {
    if !gridsize.is_null() {
        // SAFETY: the caller's contract; checked non-null.
        unsafe { gridsize.write(0) };
    }
    no_gpu("nvshmemx_collective_launch_query_gridsize", code::NOT_SUPPORTED)
}
