//! The `*_on_stream` routines: each operation becomes a job that runs in the order of the CUDA
//! stream it was given.
//!
//! Who runs the jobs is a [`StreamExecutor`], installed once by a back end that has streams
//! (the CUDA back end enqueues them as host functions or stream memory operations). Without one,
//! the host is the only executor: stream 0 — CUDA's default stream, and the only stream a
//! program without CUDA can name — means program order, so the job runs at once; any other
//! stream is an error naming the routine, never silently reordered work.

use std::ffi::c_int;
use std::sync::OnceLock;

use super::CudaStream;
use crate::error::{fatal, invalid};

/// Runs stream jobs in stream order: what a back end with streams installs.
pub trait StreamExecutor: Send + Sync {
    /// Enqueues `job` on `stream`, to run after everything enqueued there before it. `func`
    /// names the routine for errors.
    ///
    /// # Errors
    /// When `stream` is not a stream this executor can use.
    fn submit(&self, func: &'static str, stream: CudaStream, job: Box<dyn FnOnce() + Send>) -> Result<(), String>;

    /// Waits until everything enqueued on `stream` so far has run.
    ///
    /// # Errors
    /// When `stream` is not a stream this executor can use.
    fn synchronize(&self, func: &'static str, stream: CudaStream) -> Result<(), String>;
}

static EXECUTOR: OnceLock<Box<dyn StreamExecutor>> = OnceLock::new();

/// Installs the stream executor (once; a back end does it at init). Returns `false` when one
/// was installed already.
pub fn set_stream_executor(e: Box<dyn StreamExecutor>) -> bool {
    EXECUTOR.set(e).is_ok()
}

#[cold]
fn no_executor(func: &'static str, stream: CudaStream) -> ! {
    fatal(
        func,
        invalid(
            func,
            if cfg!(feature = "cuda") {
                format!(
                    "stream {stream:p} is not the default stream (0), and the CUDA back end, which orders work on \
                     CUDA streams, is not active: it starts at nvshmem_init when the program links \
                     libnvshmem_device.a or sets OXSHMEM_CUDA_HEAP=on"
                )
            } else {
                format!(
                    "stream {stream:p} is not the default stream (0), and this build has no CUDA back end to \
                     order work on CUDA streams (the *_on_stream forms run on the host, in program order, for \
                     stream 0 only)"
                )
            },
        ),
    )
}

/// Runs `job` in the order of `stream`.
#[inline(always)]
pub(crate) fn on_stream(func: &'static str, stream: CudaStream, job: impl FnOnce() + Send + 'static) {
    match EXECUTOR.get() {
        None if stream.is_null() => {
            let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
            job()
        }
        None => no_executor(func, stream),
        Some(e) => {
            let job = move || {
                let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
                job()
            };
            if let Err(msg) = e.submit(func, stream, Box::new(job)) {
                fatal(func, invalid(func, msg));
            }
        }
    }
}

/// Runs `job`, which returns a status, in the order of `stream`. With the host as executor the
/// status is the job's; a back end that runs it later returns 0 now, and a failing job ends
/// the job with its message (as NVSHMEM reports asynchronous errors).
#[inline(always)]
pub(crate) fn on_stream_status(
    func: &'static str,
    stream: CudaStream,
    job: impl FnOnce() -> c_int + Send + 'static,
) -> c_int {
    match EXECUTOR.get() {
        None if stream.is_null() => {
            let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
            job()
        }
        None => no_executor(func, stream),
        Some(e) => {
            let run = move || {
                let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
                if job() != 0 {
                    fatal(func, invalid(func, "the operation failed on its stream (see the message above)"));
                }
            };
            if let Err(msg) = e.submit(func, stream, Box::new(run)) {
                fatal(func, invalid(func, msg));
            }
            0
        }
    }
}

/// Runs `job`, which returns a value the caller needs now (`nvshmemx_TYPE_g_on_stream`): after
/// everything enqueued on `stream` before it.
#[inline(always)]
pub(crate) fn on_stream_value<R>(func: &'static str, stream: CudaStream, job: impl FnOnce() -> R) -> R {
    match EXECUTOR.get() {
        None if stream.is_null() => job(),
        None => no_executor(func, stream),
        Some(e) => {
            if let Err(msg) = e.synchronize(func, stream) {
                fatal(func, invalid(func, msg));
            }
            job()
        }
    }
}
