//! How the MoE kernels run: on a *resident kernel* of the buffer's own stream.
//!
//! The CPU back end starts a kernel by spawning its device threads (an OS thread each, tens of
//! microseconds, more on a loaded machine), which would cost more than a small dispatch
//! moves. So a buffer launches one kernel that stays: its device threads sleep on a condition
//! variable, run each job the host hands them (every thread runs the job, then the block
//! synchronizes and thread 0 reports completion), and go back to sleep — a persistent kernel,
//! as GPU libraries use to avoid launch latency. After [`IDLE`] without work the kernel retires
//! (so an idle buffer holds no threads, and `Device::finalize` is never kept waiting longer than
//! that); the next job launches it again. `resident: false` launches one kernel per job instead
//! (for comparison).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use oxshmem_device::{Device, DeviceError, Grid, Stream, Thread};

/// How long a resident kernel waits for work before it retires.
pub(super) const IDLE: Duration = Duration::from_millis(20);

type Job = Arc<dyn Fn(&Thread<'_>) + Send + Sync>;

#[derive(Default)]
struct State {
    /// Jobs handed out, and the last one.
    submitted: u64,
    job: Option<Job>,
    /// Jobs completed.
    finished: u64,
    /// The live resident kernel (its instance number), if any.
    live: Option<u64>,
    next_instance: u64,
    /// A device thread panicked in a job.
    panicked: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Host → device: a job, or retire.
    work: Condvar,
    /// Device → host: a job finished.
    done: Condvar,
}

/// Runs MoE jobs on a grid of device threads.
pub(super) struct Engine {
    dev: Device,
    stream: Stream,
    grid: Grid,
    resident: bool,
    shared: Arc<Shared>,
}

impl Engine {
    pub(super) fn new(dev: &Device, grid: Grid, resident: bool) -> Engine {
        Engine { dev: dev.clone(), stream: dev.stream(), grid, resident, shared: Arc::default() }
    }

    /// Runs `job` on every device thread of the grid and waits for all of them; then reports
    /// the first device error.
    pub(super) fn run(&self, job: impl Fn(&Thread<'_>) + Send + Sync + 'static) -> Result<(), DeviceError> {
        if !self.resident {
            self.stream.launch(self.grid, job);
            return self.stream.synchronize();
        }
        let sh = &self.shared;
        let mut g = sh.state.lock();
        g.job = Some(Arc::new(job));
        g.submitted += 1;
        let target = g.submitted;
        // Launch a resident kernel if none is live. It is told the job is there (`seen` is one
        // less), so it cannot retire before running it; launching only queues the kernel.
        if g.live.is_none() {
            let id = g.next_instance;
            g.next_instance += 1;
            g.live = Some(id);
            let s2 = sh.clone();
            self.stream.launch(self.grid, move |t| resident(t, &s2, id, target - 1));
        }
        sh.work.notify_all();
        while g.finished < target {
            sh.done.wait_for(&mut g, Duration::from_millis(50));
            // A kernel that could not start (the device is finalized) never reports.
            if g.finished < target
                && let Some(e) = self.dev.error()
            {
                g.live = None;
                sh.work.notify_all();
                return Err(e);
            }
        }
        let panicked = std::mem::take(&mut g.panicked);
        drop(g);
        self.dev.quiet()?;
        if panicked {
            return Err(DeviceError::Op {
                pe: self.dev.state().my_pe as usize,
                op: "kernel",
                where_: "moe resident kernel".into(),
                reason: "a device thread panicked in a MoE job".into(),
            });
        }
        Ok(())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Retire the resident kernel; dropping the stream then waits for it to end.
        self.shared.state.lock().live = None;
        self.shared.work.notify_all();
    }
}

/// The resident kernel of instance `id`: jobs after number `seen`, until it is retired.
fn resident(t: &Thread<'_>, sh: &Shared, id: u64, mut seen: u64) {
    loop {
        let job = {
            let mut g = sh.state.lock();
            let since = Instant::now();
            loop {
                if g.live != Some(id) {
                    return;
                }
                if g.submitted > seen {
                    break g.job.clone().expect("a submitted job");
                }
                sh.work.wait_for(&mut g, IDLE);
                // Thread 0 retires the kernel for the whole block; the others see it above.
                if t.thread_idx() == 0 && g.submitted == seen && g.live == Some(id) && since.elapsed() >= IDLE {
                    g.live = None;
                    sh.work.notify_all();
                    return;
                }
            }
        };
        if std::panic::catch_unwind(AssertUnwindSafe(|| job(t))).is_err() {
            sh.state.lock().panicked = true;
        }
        drop(job);
        t.sync_block();
        seen += 1;
        if t.thread_idx() == 0 {
            let mut g = sh.state.lock();
            g.finished = seen;
            g.job = None;
            sh.done.notify_all();
        }
    }
}
