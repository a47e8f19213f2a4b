//! How the C ABI reports errors: print the runtime's message under the C routine's name, then
//! either return the specification's error value or end the job.
//!
//! Only the routine that detects an error builds it (the runtime, or a check of this crate);
//! the exported function only renames it (`shmem_putmem` becomes `shmem_int_put`) before it is
//! printed.

use std::ffi::c_int;

use oxshmem_rt::{Error, ErrorKind, Result};

/// Prints `e` as detected in `func` and ends the job with status 1.
#[cold]
#[inline(never)]
pub(crate) fn fatal(func: &'static str, e: Error) -> ! {
    let mut e = on_gpu_memory(e);
    e.func = func;
    // The launcher prints the message as the reason the job ended.
    oxshmem_rt::raw::abort(1, &e.to_string())
}

/// Prints `e` as detected in `func` (for routines that then return an error value).
#[cold]
#[inline(never)]
pub(crate) fn report(func: &'static str, e: Error) {
    use std::io::Write as _;
    let mut e = on_gpu_memory(e);
    e.func = func;
    // One write of the whole line: processes that share a stderr do not interleave mid-line.
    let line = format!("{e}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A "not symmetric" error about an address of a segment registered with the runtime (the GPU
/// heap) says what that segment says of a routine that does not reach it, rather than that the
/// memory is not symmetric. (The runtime's own translation already does; this covers the
/// errors other checks build.)
fn on_gpu_memory(e: Error) -> Error {
    match e.kind {
        ErrorKind::NotSymmetric { what, addr, len } => match oxshmem_rt::segment::explain(addr) {
            Some(why) => {
                Error::new(e.pe, e.func, ErrorKind::InvalidArgument(format!("{what} {addr:#x} (+{len} bytes) {why}")))
            }
            None => e,
        },
        _ => e,
    }
}

/// The value of `r`, or the end of the job.
#[inline(always)]
pub(crate) fn ok<T>(func: &'static str, r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => fatal(func, e),
    }
}

/// 0 for success; -1 (after printing the error) for failure.
#[inline(always)]
pub(crate) fn status(func: &'static str, r: Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            report(func, e);
            -1
        }
    }
}

/// This PE's number for an error message (before init: the launcher's rank, else `PE ?`).
pub(crate) fn me() -> usize {
    oxshmem_rt::world::pe_for_errors()
}

/// An invalid-argument error of `func`.
#[cold]
pub(crate) fn invalid(func: &'static str, what: impl Into<String>) -> Error {
    Error::new(me(), func, ErrorKind::InvalidArgument(what.into()))
}

/// `n` elements of `size` bytes, or the error for an overflowing count.
#[inline(always)]
pub(crate) fn bytes(func: &'static str, n: usize, size: usize) -> Result<usize> {
    n.checked_mul(size).ok_or_else(|| {
        Error::new(me(), func, ErrorKind::InvalidSize { what: format!("{n} elements of {size} bytes overflows") })
    })
}

/// A C `int` count or index that must not be negative.
pub(crate) fn count(func: &'static str, what: &str, v: c_int) -> Result<usize> {
    usize::try_from(v).map_err(|_| invalid(func, format!("{what} {v} is negative")))
}
