//! The [`Shmem`] handle: initialization, the handle of the running job, and its methods (PE
//! numbers, layout, barriers, ordering, finalize). Allocation is in `slice.rs`.

use crate::error::Result;
use crate::world::{NodeLayout, Runtime, ThreadLevel, running};

/// A handle to the initialized runtime; cheap to copy, usable from any thread.
///
/// ```
/// let shmem = oxshmem::init()?;
/// assert!(shmem.my_pe() < shmem.n_pes());
/// shmem.barrier_all()?;
/// # Ok::<(), oxshmem::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Shmem {
    me: usize,
    n: usize,
}

/// Initializes the runtime (`shmem_init`): collective over all PEs. A program started without
/// a launcher is PE 0 of 1. Calling it twice is an error.
///
/// ```
/// let shmem = oxshmem::init()?;
/// println!("PE {} of {}", shmem.my_pe(), shmem.n_pes());
/// # Ok::<(), oxshmem::Error>(())
/// ```
pub fn init() -> Result<Shmem> {
    init_thread(ThreadLevel::Single).map(|(s, _)| s)
}

/// Initializes the runtime asking for a thread level (`shmem_init_thread`); returns the handle
/// and the level provided (this runtime always provides [`ThreadLevel::Multiple`] when asked).
///
/// ```
/// use oxshmem::ThreadLevel;
/// let (shmem, level) = oxshmem::init_thread(ThreadLevel::Multiple)?;
/// assert_eq!(level, ThreadLevel::Multiple);
/// # Ok::<(), oxshmem::Error>(())
/// ```
pub fn init_thread(level: ThreadLevel) -> Result<(Shmem, ThreadLevel)> {
    let provided = crate::world::init_runtime_checked(level, false, None)?;
    let rt = running("shmem_init")?;
    Ok((Shmem { me: rt.me, n: rt.n }, provided))
}

/// The handle of the runtime already initialized (by [`init`] or a raw/C `shmem_init`).
///
/// ```
/// let shmem = oxshmem::init()?;
/// assert_eq!(oxshmem::current()?.my_pe(), shmem.my_pe());
/// # Ok::<(), oxshmem::Error>(())
/// ```
pub fn current() -> Result<Shmem> {
    let rt = running("shmem_current")?;
    Ok(Shmem { me: rt.me, n: rt.n })
}

pub(super) fn runtime(func: &'static str) -> Result<&'static Runtime> {
    running(func)
}

impl Shmem {
    /// This PE's number (`shmem_my_pe`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let me = shmem.my_pe();
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn my_pe(&self) -> usize {
        self.me
    }

    /// Number of PEs in the job (`shmem_n_pes`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let right = (shmem.my_pe() + 1) % shmem.n_pes();
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn n_pes(&self) -> usize {
        self.n
    }

    /// Where the PEs live: node of each PE, host names, the PEs sharing this host.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let layout = shmem.layout()?;
    /// assert!(layout.local_pes.contains(&shmem.my_pe()));
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn layout(&self) -> Result<NodeLayout> {
        Ok(runtime("shmem_layout")?.layout.clone())
    }

    /// The thread level provided at init (`shmem_query_thread`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let level = shmem.query_thread()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn query_thread(&self) -> Result<ThreadLevel> {
        Ok(runtime("shmem_query_thread")?.thread_level)
    }

    /// `shmem_barrier_all`: completes this PE's operations, then waits for every PE.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.barrier_all()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn barrier_all(&self) -> Result<()> {
        runtime("shmem_barrier_all")?.barrier_all_internal("shmem_barrier_all")
    }

    /// `shmem_sync_all`: waits for every PE, without completing outstanding operations.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.sync_all()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn sync_all(&self) -> Result<()> {
        runtime("shmem_sync_all")?.sync_all_internal("shmem_sync_all")
    }

    /// `shmem_fence`: this PE's puts and AMOs to each PE are delivered in order around it.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.fence()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn fence(&self) -> Result<()> {
        crate::order::fence_all()
    }

    /// `shmem_quiet`: every put and AMO this PE issued is complete and visible.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.quiet()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn quiet(&self) -> Result<()> {
        crate::order::quiet()
    }

    /// `shmem_pe_accessible`: whether `pe` is reachable from here.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert!(shmem.pe_accessible(shmem.my_pe()));
    /// assert!(!shmem.pe_accessible(shmem.n_pes()));
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn pe_accessible(&self, pe: usize) -> bool {
        i32::try_from(pe).is_ok_and(crate::rma::pe_accessible)
    }

    /// `shmem_finalize`: collective; releases the runtime. Symmetric objects must not be used
    /// afterwards (their drop then does nothing).
    ///
    /// ```no_run
    /// let shmem = oxshmem::init()?;
    /// shmem.finalize()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn finalize(self) -> Result<()> {
        crate::world::finalize_runtime()
    }

    /// `shmem_global_exit`: ends the whole job with `status`, from any one PE.
    ///
    /// ```no_run
    /// # let shmem = oxshmem::init()?;
    /// shmem.global_exit(3);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn global_exit(&self, status: i32) -> ! {
        crate::world::global_exit(status)
    }
}
