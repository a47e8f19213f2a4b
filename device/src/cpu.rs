//! The CPU kernel back end: a kernel is a Rust closure run by a grid of blocks × threads, each
//! device thread an OS thread, with block and warp barriers — how device code runs without a
//! GPU, and how every device protocol is tested on any machine.
//!
//! Launches are asynchronous: a [`Stream`] runs its kernels in order on a worker thread and
//! [`Stream::synchronize`] waits for them. All threads of a block run at once (a block barrier
//! needs every thread of the block alive); up to `concurrent_blocks` blocks run at once
//! (`OXSHMEM_DEVICE_BLOCKS`). With more device threads than cores every wait in the device
//! layer yields, so nothing livelocks; and every wait ends after the device timeout
//! (`OXSHMEM_TIMEOUT`) with an error, so nothing deadlocks for good either.

use std::cell::Cell;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::Device;
use crate::channel::sync::Pacing;
use crate::state::{DeviceState, ErrorCode, ErrorSlot, op};

/// Threads of a warp.
pub const WARP_SIZE: usize = 32;

/// A launch shape: `blocks` blocks of `threads` threads.
///
/// Every thread of a block runs at once (each is an OS thread), but not every block of the
/// grid: blocks run in waves of `OXSHMEM_DEVICE_BLOCKS` (default 4), the next wave starting
/// when the whole previous one has ended — like a CUDA grid larger than the GPU can hold at
/// once. So blocks must not wait for each other unless the grid fits in one wave; see
/// [`Stream::launch`].
///
/// ```
/// use oxshmem_device::Grid;
/// let g = Grid::new(8, 40);                 // 8 blocks of 40 threads: warps of 32 and 8
/// assert_eq!((g.blocks, g.threads), (8, 40));
/// assert_eq!(Grid::new(0, 0), Grid::new(1, 1)); // never empty
/// ```
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

    /// Waits for all `n` threads (or until the barrier is broken). Past `timeout` it breaks
    /// the barrier and returns how many threads had arrived; once `slot` holds a timed-out
    /// wait (the device is stuck in error) it breaks the barrier and returns at once.
    pub(crate) fn wait(&self, timeout: Duration, slot: &ErrorSlot) -> Result<(), usize> {
        if self.broken.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut g = self.state.lock();
        g.0 += 1;
        if g.0 == self.n {
            g.0 = 0;
            g.1 += 1;
            self.cv.notify_all();
            return Ok(());
        }
        let generation = g.1;
        let deadline = Instant::now() + timeout;
        while g.1 == generation && !self.broken.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= deadline || slot.is_timeout() {
                let arrived = g.0;
                drop(g);
                self.break_all();
                return if now >= deadline { Err(arrived) } else { Ok(()) };
            }
            // Wake now and then to see whether another wait of the device timed out.
            let nap = (deadline - now).min(Duration::from_millis(50));
            self.cv.wait_for(&mut g, nap);
        }
        Ok(())
    }

    fn break_all(&self) {
        let _g = self.state.lock();
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

/// One device thread's view: its indices (`threadIdx`, `blockIdx`, …), the block and warp
/// barriers, and the whole device API — RMA (`put`, `get`, `p`, `g` and their `_nbi` forms),
/// signals, atomics, waits, `fence`/`quiet`, device barriers, and the `_warp`/`_block` forms.
/// A kernel is a closure that takes `&Thread`; [`Stream::launch`] runs it once per thread.
///
/// ```
/// use oxshmem::{Cmp, SignalOp};
/// use oxshmem_device::{DevPtr, Device, Grid};
/// let shmem = oxshmem::init()?;
/// let dev = Device::init(&shmem)?;
/// let data = shmem.alloc_slice(64, 0u32)?;
/// let flag = shmem.alloc_slice(1, 0u64)?;
/// let (d, f) = (DevPtr::from_slice(&data), DevPtr::from_slice(&flag));
/// let me = shmem.my_pe();
/// let stream = dev.stream();
/// // Two blocks of 32: block 1 fills the buffer and raises the flag, block 0 waits for it.
/// // Both blocks run at once (OXSHMEM_DEVICE_BLOCKS is 4 by default): see `Stream::launch`.
/// stream.launch(Grid::new(2, 32), move |t| {
///     if t.block_idx() == 1 {
///         t.p(d.offset(t.thread_idx()), t.global_idx() as u32, me);
///         t.quiet();
///         t.sync_block();                      // every p of the block is complete
///         if t.thread_idx() == 0 {
///             t.signal_op(f, 1, SignalOp::Set, me);
///         }
///     } else if t.thread_idx() == 0 {
///         t.signal_wait_until(f, Cmp::Eq, 1);
///         assert_eq!(d.read_local(31), 63);
///     }
/// });
/// stream.synchronize()?;
/// assert_eq!(data.to_vec()[..32], (32..64).collect::<Vec<u32>>()[..]);
/// drop(stream);
/// dev.finalize()?;
/// shmem.finalize()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Thread<'a> {
    pub(crate) state: &'a DeviceState,
    pub(crate) dev: &'a Device,
    /// The kernel launch this thread belongs to (numbered from 1 per device).
    pub(crate) launch: u64,
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
    /// `__syncthreads()`: waits for every thread of the block. Every thread of the block must
    /// call it; one that never comes (it returned, or took another branch) makes the others
    /// fail after twice `OXSHMEM_TIMEOUT` — twice, so that when a sibling is itself in a timed
    /// wait, its error is the one reported — with an error naming the barrier, the thread
    /// and how many threads arrived; the block's barriers then let everyone through.
    pub fn sync_block(&self) {
        let r = self.sync.block.wait(self.group_timeout(), &self.state.error);
        self.group_timed_out(r, op::SYNC_BLOCK, self.grid.threads);
    }
    /// `__syncwarp()`: waits for every thread of the warp (the same rules as
    /// [`sync_block`](Self::sync_block)).
    pub fn sync_warp(&self) {
        let r = self.sync.warps[self.warp_idx()].wait(self.group_timeout(), &self.state.error);
        self.group_timed_out(r, op::SYNC_WARP, self.warp_len());
    }
    fn group_timeout(&self) -> Duration {
        Duration::from_nanos(self.state.timeout_ns.saturating_mul(2))
    }
    fn group_timed_out(&self, r: Result<(), usize>, opc: u32, n: usize) {
        if let Err(arrived) = r {
            let (b, t) = (self.block as u32, self.thread as u32);
            self.state.error.record_in(self.launch, ErrorCode::BarrierTimeout, opc, -1, arrived as u64, n as u64, b, t);
        }
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

/// How a device thread waits for memory that another thread or PE writes: it spins briefly
/// and yields as the channels' loops do ([`Pacing`]), but yields its core only for the first
/// millisecond, then naps (device threads usually outnumber cores, and a job may run more PEs
/// than the host has cores). Past the device timeout (`OXSHMEM_TIMEOUT`) it gives up — and at
/// once when another wait of the device has already timed out: the device is then in error,
/// as a CUDA context is after a trap, and a kernel stuck in many waits ends after one timeout,
/// not one per wait.
pub(crate) struct Waiter<'a> {
    slot: &'a ErrorSlot,
    timeout: Duration,
    /// Spins, then yields.
    pacing: Pacing,
    /// When the spin phase ended (the clock is read only after it).
    since: Option<Instant>,
}

/// How long a [`Waiter`] yields on every poll, once its spin phase is over, before it naps.
const YIELD_FOR: Duration = Duration::from_millis(1);

impl<'a> Waiter<'a> {
    pub(crate) fn new(state: &'a DeviceState) -> Waiter<'a> {
        Waiter {
            slot: &state.error,
            timeout: Duration::from_nanos(state.timeout_ns),
            pacing: Pacing::new(),
            since: None,
        }
    }

    /// Between two polls: false when the wait must give up.
    pub(crate) fn pause(&mut self) -> bool {
        if self.pacing.spin() {
            return true;
        }
        let now = Instant::now();
        let waited = now - *self.since.get_or_insert(now);
        if waited >= self.timeout || self.slot.is_timeout() {
            return false;
        }
        if waited < YIELD_FOR {
            // Past the spin phase: a yield.
            self.pacing.pause();
        } else {
            // Naps grow with the wait (1/16 of it, 50 µs to 1 ms): a long wait costs almost no
            // CPU, and wakes up late by a small fraction of what it has waited already.
            std::thread::sleep((waited / 16).clamp(Duration::from_micros(50), Duration::from_millis(1)));
        }
        true
    }
}

type Kernel = Box<dyn Fn(&Thread<'_>) + Send + Sync>;

/// What identifies a kernel launch in an error: its number on the device, where it was
/// launched, and its grid.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchInfo {
    pub(crate) id: u64,
    pub(crate) site: &'static Location<'static>,
    pub(crate) grid: Grid,
}

struct Job {
    info: LaunchInfo,
    kernel: Kernel,
}

/// An in-order queue of kernel launches (a CUDA stream's role).
#[derive(Debug)]
pub struct Stream {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    done: Arc<(Mutex<u64>, Condvar)>,
    launched: Mutex<u64>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    dev: Device,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Job({:?})", self.info)
    }
}

fn run_kernel(dev: &Device, job: &Job) {
    let state = dev.state();
    let concurrent = dev.concurrent_blocks().max(1);
    let launch = job.info.id;
    let mut next = 0;
    while next < job.info.grid.blocks {
        let end = (next + concurrent).min(job.info.grid.blocks);
        std::thread::scope(|s| {
            for block in next..end {
                let t = job.info.grid.threads;
                let warps = t.div_ceil(WARP_SIZE);
                let sync = Arc::new(BlockSync {
                    block: GroupBarrier::new(t),
                    warps: (0..warps).map(|w| GroupBarrier::new((t - w * WARP_SIZE).min(WARP_SIZE))).collect(),
                });
                for thread in 0..t {
                    let sync = sync.clone();
                    let kernel = &job.kernel;
                    let grid = job.info.grid;
                    std::thread::Builder::new()
                        .stack_size(256 * 1024)
                        .spawn_scoped(s, move || {
                            let th = Thread {
                                state,
                                dev,
                                launch,
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
                                state.error.record_in(
                                    launch,
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
        let done = Arc::new((Mutex::new(0u64), Condvar::new()));
        let d2 = done.clone();
        let dev2 = dev.clone();
        let worker = std::thread::Builder::new()
            .name("oxshmem-stream".into())
            .spawn(move || {
                // Its kernel threads inherit this.
                crate::unbind_helper_thread();
                for job in rx {
                    run_kernel(&dev2, &job);
                    dev2.end_launch(job.info);
                    let (m, cv) = &*d2;
                    *m.lock() += 1;
                    cv.notify_all();
                }
            })
            .expect("spawn the stream worker");
        Stream { tx: Mutex::new(Some(tx)), done, launched: Mutex::new(0), worker: Mutex::new(Some(worker)), dev }
    }

    /// Launches `kernel` over `grid` after every kernel launched before on this stream;
    /// returns at once. The kernel runs once per device thread, each an OS thread.
    ///
    /// # How many blocks run at once
    ///
    /// Every thread of a block runs at once, so block barriers ([`Thread::sync_block`]) and
    /// the `_block` forms always work. Blocks do not all run at once: at most
    /// `OXSHMEM_DEVICE_BLOCKS` of them (default 4; read at [`Device::init`]) run together,
    /// in waves — blocks `0..4`, then `4..8` once all of `0..4` have ended, and so on. This is
    /// CUDA's rule for a grid without a cooperative launch: nothing promises that two blocks
    /// are resident together. So a block must never wait for a block of the same launch
    /// (a signal or flag another block sets, a hand-made grid barrier) unless the grid has at
    /// most `OXSHMEM_DEVICE_BLOCKS` blocks: otherwise a block of the first wave waits for one
    /// that only starts when the first wave is over. Such a wait does not hang forever: it
    /// fails after `OXSHMEM_TIMEOUT` seconds (default 60), the kernel runs on, and
    /// [`synchronize`](Self::synchronize) reports an error naming this launch (where it was
    /// called, and its number on the device), the block and thread, what it waited for, and
    /// how many of the grid's blocks run at once; a device error stays recorded, so later
    /// waits of the device give up at once. Waits for *other PEs* are fine as long as what
    /// they wait for does not itself come from a later wave there.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// # let dev = oxshmem_device::Device::init(&shmem)?;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use oxshmem_device::Grid;
    /// let count = Arc::new(AtomicUsize::new(0));
    /// let c = count.clone();
    /// let stream = dev.stream();
    /// stream.launch(Grid::new(2, 64), move |t| {
    ///     c.fetch_add(1, Ordering::Relaxed);
    ///     t.sync_block();                     // the 64 threads of one block meet here
    /// });
    /// stream.synchronize()?;
    /// assert_eq!(count.load(Ordering::Relaxed), 128);
    /// drop(stream);
    /// dev.finalize()?;
    /// shmem.finalize()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn launch<F>(&self, grid: Grid, kernel: F)
    where
        F: Fn(&Thread<'_>) + Send + Sync + 'static,
    {
        let site = Location::caller();
        let mut n = self.launched.lock();
        let Some(info) = self.dev.begin_launch(grid, site) else {
            self.dev.state().error.record(ErrorCode::Finalized, op::KERNEL, -1, 0, 0, u32::MAX, u32::MAX);
            return;
        };
        let sent = self.tx.lock().as_ref().is_some_and(|tx| tx.send(Job { info, kernel: Box::new(kernel) }).is_ok());
        if sent {
            *n += 1;
        } else {
            self.dev.end_launch(info);
        }
    }

    /// Waits for every kernel launched so far, completes the device operations they issued
    /// (a kernel may end with `_nbi` operations outstanding), and reports the first device
    /// error, naming the PE, the operation, and the device thread.
    pub fn synchronize(&self) -> Result<(), crate::DeviceError> {
        let target = *self.launched.lock();
        let (m, cv) = &*self.done;
        let mut g = m.lock();
        while *g < target {
            cv.wait(&mut g);
        }
        drop(g);
        self.dev.quiet()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.tx.lock().take();
        if let Some(w) = self.worker.lock().take() {
            let _ = w.join();
        }
    }
}
