//! The CUDA back end's stream executor: what makes `nvshmemx_*_on_stream` real stream
//! operations, asynchronous for the host and ordered with the stream's kernels and copies.
//!
//! A job (a put, a barrier, a reduction: host code that may itself call CUDA, e.g. to copy
//! into a peer's GPU heap) cannot run inside a CUDA host function, which must not call CUDA.
//! So each stream the program names gets a *lane*: a worker thread and a counter word in
//! pinned memory. Submitting job `t` on stream `s`:
//!
//! 1. queues the job on the lane's worker;
//! 2. enqueues on `s` a host function that only says "job `t` may start" (no CUDA call);
//! 3. enqueues on `s` a wait until the lane's word reaches `t` (`cuStreamWaitValue32`), so what
//!    the program enqueues on `s` afterwards waits for the job;
//!
//! and returns. The worker waits for its start signal, runs the job (its copies go on the
//! back end's own non-blocking stream, which never waits for `s`), and writes `t` into the
//! word. `nvshmemx_TYPE_g_on_stream` and friends, which return a value, synchronize the stream
//! first. Lanes live as long as the process (a stream handle the program reuses finds its lane
//! again); at most [`MAX_LANES`] streams.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use oxshmem_device::cuda::{Gpu, PinnedBuf, RawStream};
use parking_lot::{Condvar, Mutex};

use super::CudaStream;
use super::stream::StreamExecutor;

/// Streams the executor serves over a process's life.
pub(crate) const MAX_LANES: usize = 256;
/// Bytes between two lanes' words (one cache line each).
const WORD_STRIDE: usize = 64;

type Job = Box<dyn FnOnce() + Send>;

/// One stream's worker.
struct Lane {
    /// Held across a whole submission (number, queue, host function, wait), so that two host
    /// threads submitting to one stream enqueue in the order of their numbers.
    submit: Mutex<()>,
    /// Jobs submitted so far (the last job's number).
    issued: AtomicU32,
    /// Jobs queued, with their numbers, and the highest number the stream let start.
    queue: Mutex<(VecDeque<(u32, Job)>, u32)>,
    wake: Condvar,
    /// The lane's word in pinned memory (host address); the stream waits on its device address.
    done: *const AtomicU32,
    done_dev: u64,
}

// SAFETY: `done` points into the executor's pinned buffer, which lives as long as the process
// (the executor is never dropped); it is only reached through atomics.
unsafe impl Send for Lane {}
// SAFETY: as above.
unsafe impl Sync for Lane {}

impl Lane {
    fn run(&self) {
        loop {
            let (t, job) = {
                let mut q = self.queue.lock();
                loop {
                    let startable = matches!(q.0.front(), Some(&(t, _)) if wrapping_ge(q.1, t));
                    if startable {
                        break q.0.pop_front().expect("checked");
                    }
                    self.wake.wait(&mut q);
                }
            };
            job();
            // SAFETY: see the struct; the release orders the job's effects before the stream
            // (and whoever waits on it) goes on.
            unsafe { &*self.done }.store(t, Ordering::Release);
        }
    }

    /// The host function's part: job `t` may start (called on a driver thread; no CUDA).
    fn may_start(&self, t: u32) {
        let mut q = self.queue.lock();
        if wrapping_ge(t, q.1) {
            q.1 = t;
        }
        self.wake.notify_one();
    }
}

fn wrapping_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// The executor the CUDA back end installs.
pub(crate) struct CudaStreams {
    gpu: Gpu,
    words: PinnedBuf,
    lanes: Mutex<HashMap<usize, Arc<Lane>>>,
}

impl std::fmt::Debug for CudaStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaStreams({:?}, {} lanes)", self.gpu, self.lanes.lock().len())
    }
}

impl CudaStreams {
    pub(crate) fn new(gpu: &Gpu) -> Result<CudaStreams, String> {
        let words = PinnedBuf::new(gpu, MAX_LANES * WORD_STRIDE).map_err(|e| e.to_string())?;
        Ok(CudaStreams { gpu: gpu.clone(), words, lanes: Mutex::new(HashMap::new()) })
    }

    fn lane(&self, func: &'static str, stream: CudaStream) -> Result<Arc<Lane>, String> {
        let mut lanes = self.lanes.lock();
        if let Some(l) = lanes.get(&(stream as usize)) {
            return Ok(l.clone());
        }
        let i = lanes.len();
        if i == MAX_LANES {
            return Err(format!(
                "{func}: stream {stream:p} would be the {}th stream given to *_on_stream routines; at most {MAX_LANES}",
                i + 1
            ));
        }
        let lane = Arc::new(Lane {
            submit: Mutex::new(()),
            issued: AtomicU32::new(0),
            queue: Mutex::new((VecDeque::new(), 0)),
            wake: Condvar::new(),
            // SAFETY: lane i's word is inside the buffer, 64-byte aligned, zeroed.
            done: unsafe { self.words.host_ptr().add(i * WORD_STRIDE) }.cast(),
            done_dev: self.words.device_ptr() + (i * WORD_STRIDE) as u64,
        });
        let worker = lane.clone();
        std::thread::Builder::new()
            .name(format!("oxshmem-stream-{i}"))
            .spawn(move || worker.run())
            .map_err(|e| format!("{func}: cannot start the worker of stream {stream:p}: {e}"))?;
        lanes.insert(stream as usize, lane.clone());
        Ok(lane)
    }
}

impl StreamExecutor for CudaStreams {
    fn submit(&self, func: &'static str, stream: CudaStream, job: Box<dyn FnOnce() + Send>) -> Result<(), String> {
        let raw = stream as RawStream;
        // SAFETY: the program passed `stream` as a live stream of its context.
        if unsafe { self.gpu.stream_is_capturing(raw) }.map_err(|e| format!("{func}: {e}"))? {
            return Err(format!(
                "{func}: stream {stream:p} is being captured into a CUDA graph; oxshmem's *_on_stream operations \
                 run once on the host and cannot be replayed by a graph yet: call them outside the capture"
            ));
        }
        let lane = self.lane(func, stream)?;
        let _order = lane.submit.lock();
        let t = lane.issued.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        lane.queue.lock().0.push_back((t, job));
        let signal = lane.clone();
        // SAFETY: the program passed `stream` as a live stream of its context (NVSHMEM's
        // contract for every *_on_stream routine); the host function calls no CUDA.
        unsafe { self.gpu.launch_host_fn(raw, Box::new(move || signal.may_start(t))) }
            .map_err(|e| format!("{func}: {e}"))?;
        // SAFETY: as above; the word lives in `self.words`, which lives as long as the process.
        unsafe { self.gpu.stream_wait_value32(raw, lane.done_dev, t) }.map_err(|e| {
            format!("{func}: {e} (ordering the stream's later work after the operation needs stream memory operations)")
        })
    }

    fn synchronize(&self, func: &'static str, stream: CudaStream) -> Result<(), String> {
        // SAFETY: as in `submit`.
        unsafe { self.gpu.stream_synchronize(stream as RawStream) }.map_err(|e| format!("{func}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::wrapping_ge;

    #[test]
    fn counters_compare_across_the_wrap() {
        assert!(wrapping_ge(5, 5) && wrapping_ge(6, 5) && !wrapping_ge(4, 5));
        assert!(wrapping_ge(1, u32::MAX) && !wrapping_ge(u32::MAX, 1));
    }
}
