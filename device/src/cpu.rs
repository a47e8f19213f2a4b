//! The CPU kernel back end: a kernel is a Rust closure run by a grid of blocks × threads, each
//! device thread an OS thread, with block and warp barriers — how device code runs without a
//! GPU, and how every device protocol is tested on any machine.
//!
//! Launches are asynchronous: a [`Stream`] runs its kernels in order on a worker thread and
//! [`Stream::synchronize`] waits for them. All threads of a block run at once (a block barrier
//! needs every thread of the block alive); up to `concurrent_blocks` blocks run at once. With
//! more device threads than cores every wait in the device layer yields, so nothing livelocks.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use crate::Device;
use crate::state::{DeviceState, ErrorCode, op};

/// Threads of a warp.
pub const WARP_SIZE: usize = 32;

/// A launch shape: `blocks` blocks of `threads` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Blocks in the grid.
    pub blocks: usize,
    /// Threads per block.
    pub threads: usize,
}

impl Grid {
    /// A grid of `blocks` × `threads`.
    pub fn new(blocks: usize, threads: usize) -> Grid {
        Grid { blocks: blocks.max(1), threads: threads.max(1) }
    }
}

/// A barrier that a dying thread can break, so that a panic in one device thread cannot leave
/// its siblings waiting forever: once broken, every wait returns at once.
#[derive(Debug)]
pub(crate) struct GroupBarrier {
    n: usize,
    state: Mutex<(usize, u64)>,
    cv: Condvar,
    broken: AtomicBool,
}

impl GroupBarrier {
    fn new(n: usize) -> Self {
        GroupBarrier { n, state: Mutex::new((0, 0)), cv: Condvar::new(), broken: AtomicBool::new(false) }
    }

    /// Waits for all `n` threads (or until the barrier is broken).
    pub(crate) fn wait(&self) {
        if self.broken.load(Ordering::Acquire) {
            return;
        }
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        if g.0 == self.n {
            g.0 = 0;
            g.1 += 1;
            self.cv.notify_all();
            return;
        }
        let generation = g.1;
        while g.1 == generation && !self.broken.load(Ordering::Acquire) {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn break_all(&self) {
        let _g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.broken.store(true, Ordering::Release);
        self.cv.notify_all();
    }
}

/// Synchronization shared by the threads of one block.
#[derive(Debug)]
pub(crate) struct BlockSync {
    pub(crate) block: GroupBarrier,
    pub(crate) warps: Vec<GroupBarrier>,
}

impl BlockSync {
    /// A thread of the block died: release everyone waiting on the block's barriers.
    fn break_all(&self) {
        self.block.break_all();
        for w in &self.warps {
            w.break_all();
        }
    }
}

/// One device thread's view: indices, barriers, and the device API (see `api.rs`).
#[derive(Debug)]
pub struct Thread<'a> {
    pub(crate) state: &'a DeviceState,
    pub(crate) dev: &'a Device,
    pub(crate) grid: Grid,
    pub(crate) block: usize,
    pub(crate) thread: usize,
    pub(crate) sync: &'a BlockSync,
    /// The last proxy ticket this thread issued (+1; 0 = none), for `quiet`.
    pub(crate) last_ticket: Cell<u64>,
    /// IBGDA: the next WQE carries a fence.
    pub(crate) fence_pending: Cell<bool>,
    /// IBGDA: the next quiet covers every queue (after a group operation another thread led).
    pub(crate) ib_quiet_all: Cell<bool>,
    /// IBGDA: the PEs this thread posted to since its last quiet (bit `min(pe, 63)`; bit 63
    /// stands for every PE from 63 up), so that quiet reads only those queues.
    pub(crate) ib_posted: Cell<u64>,
}

impl Thread<'_> {
    /// Index of this thread in its block (`threadIdx.x`).
    pub fn thread_idx(&self) -> usize {
        self.thread
    }
    /// Index of this block in the grid (`blockIdx.x`).
    pub fn block_idx(&self) -> usize {
        self.block
    }
    /// Threads per block (`blockDim.x`).
    pub fn block_dim(&self) -> usize {
        self.grid.threads
    }
    /// Blocks in the grid (`gridDim.x`).
    pub fn grid_dim(&self) -> usize {
        self.grid.blocks
    }
    /// This thread's index in the whole grid.
    pub fn global_idx(&self) -> usize {
        self.block * self.grid.threads + self.thread
    }
    /// This thread's warp within its block.
    pub fn warp_idx(&self) -> usize {
        self.thread / WARP_SIZE
    }
    /// This thread's lane within its warp.
    pub fn lane_idx(&self) -> usize {
        self.thread % WARP_SIZE
    }
    /// Threads in this thread's warp (the last warp of a block may be partial).
    pub fn warp_len(&self) -> usize {
        (self.grid.threads - self.warp_idx() * WARP_SIZE).min(WARP_SIZE)
    }
    /// `__syncthreads()`: waits for every thread of the block.
    pub fn sync_block(&self) {
        self.sync.block.wait();
    }
    /// `__syncwarp()`: waits for every thread of the warp.
    pub fn sync_warp(&self) {
        self.sync.warps[self.warp_idx()].wait();
    }
    /// This PE (`nvshmem_my_pe`).
    pub fn my_pe(&self) -> usize {
        self.state.my_pe as usize
    }
    /// PEs in the job (`nvshmem_n_pes`).
    pub fn n_pes(&self) -> usize {
        self.state.n_pes as usize
    }
}

type Kernel = Box<dyn Fn(&Thread<'_>) + Send + Sync>;

struct Job {
    grid: Grid,
    kernel: Kernel,
}

/// An in-order queue of kernel launches (a CUDA stream's role).
#[derive(Debug)]
pub struct Stream {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    done: Arc<(Mutex<u64>, std::sync::Condvar)>,
    launched: Mutex<u64>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    dev: Device,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Job({:?})", self.grid)
    }
}

fn run_kernel(dev: &Device, job: &Job) {
    let state = dev.state();
    let concurrent = dev.concurrent_blocks().max(1);
    let mut next = 0;
    while next < job.grid.blocks {
        let end = (next + concurrent).min(job.grid.blocks);
        std::thread::scope(|s| {
            for block in next..end {
                let t = job.grid.threads;
                let warps = t.div_ceil(WARP_SIZE);
                let sync = Arc::new(BlockSync {
                    block: GroupBarrier::new(t),
                    warps: (0..warps).map(|w| GroupBarrier::new((t - w * WARP_SIZE).min(WARP_SIZE))).collect(),
                });
                for thread in 0..t {
                    let sync = sync.clone();
                    let kernel = &job.kernel;
                    let grid = job.grid;
                    std::thread::Builder::new()
                        .stack_size(256 * 1024)
                        .spawn_scoped(s, move || {
                            let th = Thread {
                                state,
                                dev,
                                grid,
                                block,
                                thread,
                                sync: &sync,
                                last_ticket: Cell::new(0),
                                fence_pending: Cell::new(false),
                                ib_quiet_all: Cell::new(false),
                                ib_posted: Cell::new(0),
                            };
                            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernel(&th)));
                            if r.is_err() {
                                sync.break_all();
                                state.error.record(
                                    ErrorCode::KernelPanic,
                                    op::KERNEL,
                                    -1,
                                    0,
                                    0,
                                    block as u32,
                                    thread as u32,
                                );
                            }
                        })
                        .expect("spawn a device thread");
                }
            }
        });
        next = end;
    }
}

impl Stream {
    pub(crate) fn new(dev: Device) -> Stream {
        let (tx, rx) = mpsc::channel::<Job>();
        let done = Arc::new((Mutex::new(0u64), std::sync::Condvar::new()));
        let d2 = done.clone();
        let dev2 = dev.clone();
        let worker = std::thread::Builder::new()
            .name("oxshmem-stream".into())
            .spawn(move || {
                for job in rx {
                    run_kernel(&dev2, &job);
                    dev2.end_launch();
                    let (m, cv) = &*d2;
                    *m.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                    cv.notify_all();
                }
            })
            .expect("spawn the stream worker");
        Stream { tx: Mutex::new(Some(tx)), done, launched: Mutex::new(0), worker: Mutex::new(Some(worker)), dev }
    }

    /// Launches `kernel` over `grid` after every kernel launched before on this stream;
    /// returns at once.
    ///
    /// ```no_run
    /// # let shmem = oxshmem::init()?;
    /// # let dev = oxshmem_device::Device::init(&shmem)?;
    /// use oxshmem_device::Grid;
    /// let stream = dev.stream();
    /// stream.launch(Grid::new(2, 64), |t| {
    ///     let _ = t.global_idx();
    /// });
    /// stream.synchronize()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn launch<F>(&self, grid: Grid, kernel: F)
    where
        F: Fn(&Thread<'_>) + Send + Sync + 'static,
    {
        let mut n = self.launched.lock().unwrap_or_else(|e| e.into_inner());
        if !self.dev.begin_launch() {
            self.dev.state().error.record(ErrorCode::Finalized, op::KERNEL, -1, 0, 0, u32::MAX, u32::MAX);
            return;
        }
        let sent = self
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|tx| tx.send(Job { grid, kernel: Box::new(kernel) }).is_ok());
        if sent {
            *n += 1;
        } else {
            self.dev.end_launch();
        }
    }

    /// Waits for every kernel launched so far, completes the device operations they issued
    /// (a kernel may end with `_nbi` operations outstanding), and reports the first device
    /// error, naming the PE, the operation, and the device thread.
    pub fn synchronize(&self) -> Result<(), crate::DeviceError> {
        let target = *self.launched.lock().unwrap_or_else(|e| e.into_inner());
        let (m, cv) = &*self.done;
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        while *g < target {
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        drop(g);
        self.dev.quiet()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = w.join();
        }
    }
}
