//! Communication contexts (`shmem_ctx_t`): independent ordering and completion domains.
//!
//! A context belongs to a team, and the PE numbers given to its operations are numbers in
//! that team. Every RMA, AMO and signal operation has a context form here. On the shared-memory
//! path an operation is complete when it returns, so a context's `quiet` and `fence` are
//! processor fences that never wait on another context's traffic; a network transport keeps
//! per-context completion state behind the same API.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;

use bytemuck::Pod;

use crate::amo::{AmoInt, AmoType};
use crate::error::{Error, ErrorKind, Result};
use crate::signal::SignalOp;
use crate::sym::SymSlice;
use crate::team::Team;
use crate::world::rt;

/// Context option: the context is used by one thread at a time (`SHMEM_CTX_SERIALIZED`).
pub const SHMEM_CTX_SERIALIZED: i64 = 1 << 0;
/// Context option: only the creating thread uses the context (`SHMEM_CTX_PRIVATE`).
pub const SHMEM_CTX_PRIVATE: i64 = 1 << 1;
/// Context option: the context performs no store operations (`SHMEM_CTX_NOSTORE`).
pub const SHMEM_CTX_NOSTORE: i64 = 1 << 2;

#[derive(Debug)]
struct CtxInner {
    team: Team,
    options: i64,
    owner: Option<ThreadId>,
    destroyed: AtomicBool,
}

/// A communication context. Clones are handles to the same context.
///
/// ```
/// # let shmem = oxshmem::init()?;
/// use oxshmem::ctx::SHMEM_CTX_PRIVATE;
/// let ctx = shmem.ctx_create(SHMEM_CTX_PRIVATE)?;
/// let x = shmem.alloc_slice(2, 0u64)?;
/// ctx.put(&x, 0, &[5, 6], 0)?;          // PE numbers are in ctx's team
/// ctx.atomic_add(&x, 1, 1, 0)?;
/// ctx.quiet()?;                          // completes ctx's operations only
/// assert_eq!(ctx.g(&x, 1, 0)?, 7);
/// ctx.destroy()?;
/// # Ok::<(), oxshmem::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Ctx(Arc<CtxInner>);

impl crate::Shmem {
    /// `shmem_ctx_create`: a new context on the world team with `options`
    /// (`SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let ctx = shmem.ctx_create(0)?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn ctx_create(&self, options: i64) -> Result<Ctx> {
        self.team_world().create_ctx(options)
    }
}

impl Team {
    /// `shmem_team_create_ctx`: a new context whose PE numbers are this team's.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let ctx = shmem.team_shared().create_ctx(0)?;
    /// assert_eq!(ctx.team()?.n_pes()?, shmem.team_shared().n_pes()?);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn create_ctx(&self, options: i64) -> Result<Ctx> {
        const F: &str = "shmem_team_create_ctx";
        let (rt, _) = self.live(F)?;
        let known = SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE;
        if options & !known != 0 {
            return Err(Error::new(
                rt.me,
                F,
                ErrorKind::InvalidArgument(format!("unknown context options {:#x}", options & !known)),
            ));
        }
        let owner = (options & SHMEM_CTX_PRIVATE != 0).then(|| std::thread::current().id());
        Ok(Ctx(Arc::new(CtxInner { team: self.clone(), options, owner, destroyed: AtomicBool::new(false) })))
    }
}

impl Ctx {
    /// The world PE number of this context's team PE `pe`, after checking the context.
    #[inline]
    fn world_pe(&self, pe: usize, func: &'static str) -> Result<usize> {
        let c = &self.0;
        let rt = rt(func)?;
        if c.destroyed.load(Ordering::Acquire) {
            return Err(Error::new(rt.me, func, ErrorKind::InvalidArgument("context was destroyed".into())));
        }
        if let Some(owner) = c.owner
            && owner != std::thread::current().id()
        {
            return Err(Error::new(
                rt.me,
                func,
                ErrorKind::InvalidArgument(
                    "a SHMEM_CTX_PRIVATE context is used by a thread other than its creator".into(),
                ),
            ));
        }
        let (_, t) = c.team.live(func)?;
        t.members
            .get(pe)
            .copied()
            .ok_or_else(|| Error::new(rt.me, func, ErrorKind::PeOutOfRange { pe: pe as i128, n_pes: t.n() }))
    }

    fn check(&self, func: &'static str) -> Result<()> {
        let rt = rt(func)?;
        if self.0.destroyed.load(Ordering::Acquire) {
            return Err(Error::new(rt.me, func, ErrorKind::InvalidArgument("context was destroyed".into())));
        }
        Ok(())
    }

    /// The options the context was created with.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// assert_eq!(shmem.ctx_create(1)?.options(), 1);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn options(&self) -> i64 {
        self.0.options
    }

    /// `shmem_ctx_get_team`: the team the context was created on.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let t = shmem.ctx_create(0)?.team()?;
    /// assert_eq!(t.n_pes()?, shmem.n_pes());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn team(&self) -> Result<Team> {
        self.check("shmem_ctx_get_team")?;
        Ok(self.0.team.clone())
    }

    /// `shmem_ctx_destroy`: the context (every handle of it) cannot be used afterwards.
    /// Outstanding operations are completed first.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let ctx = shmem.ctx_create(0)?;
    /// let again = ctx.clone();
    /// ctx.destroy()?;
    /// assert!(again.quiet().is_err());
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        self.quiet()?;
        self.0.destroyed.store(true, Ordering::Release);
        Ok(())
    }

    /// `shmem_ctx_quiet`: completes this context's operations.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.ctx_create(0)?.quiet()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn quiet(&self) -> Result<()> {
        self.check("shmem_ctx_quiet")?;
        crate::order::quiet()
    }

    /// `shmem_ctx_fence`: orders this context's operations to each PE.
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// shmem.ctx_create(0)?.fence()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn fence(&self) -> Result<()> {
        self.check("shmem_ctx_fence")?;
        crate::order::fence_all()
    }
}

macro_rules! ctx_ops {
    ($( [$($bound:tt)+] $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )*) => {
        impl Ctx { $(
            #[doc = concat!("Context form of [`SymSlice::", stringify!($name), "`] (`shmem_ctx_", stringify!($name), "`): `pe` is a PE number of the context's team.")]
            #[allow(clippy::too_many_arguments)]
            pub fn $name<T: $($bound)+>(&self, obj: &SymSlice<T>, $($arg: $ty,)* pe: usize) -> Result<$ret> {
                let w = self.world_pe(pe, concat!("shmem_ctx_", stringify!($name)))?;
                obj.$name($($arg,)* w)
            }
        )* }
    };
}

ctx_ops! {
    [Pod] put(at: usize, src: &[T]) -> ();
    [Pod] put_nbi(at: usize, src: &[T]) -> ();
    [Pod] get(at: usize, dst: &mut [T]) -> ();
    [Pod] get_nbi(at: usize, dst: &mut [T]) -> ();
    [Pod] p(at: usize, value: T) -> ();
    [Pod] g(at: usize) -> T;
    [Pod] iput(at: usize, dst: usize, src: &[T], sst: usize, n: usize) -> ();
    [Pod] iget(at: usize, sst: usize, dst: &mut [T], dst_stride: usize, n: usize) -> ();
    [Pod] put_signal(at: usize, src: &[T], sig: &SymSlice<u64>, sig_at: usize, signal: u64, op: SignalOp) -> ();
    [Pod] put_signal_nbi(at: usize, src: &[T], sig: &SymSlice<u64>, sig_at: usize, signal: u64, op: SignalOp) -> ();
    [AmoType] atomic_fetch(at: usize) -> T;
    [AmoType] atomic_set(at: usize, value: T) -> ();
    [AmoType] atomic_swap(at: usize, value: T) -> T;
    [AmoType] atomic_fetch_nbi(fetch: &mut T, at: usize) -> ();
    [AmoType] atomic_swap_nbi(fetch: &mut T, at: usize, value: T) -> ();
    [AmoInt] atomic_compare_swap(at: usize, cond: T, value: T) -> T;
    [AmoInt] atomic_compare_swap_nbi(fetch: &mut T, at: usize, cond: T, value: T) -> ();
    [AmoInt] atomic_fetch_inc(at: usize) -> T;
    [AmoInt] atomic_fetch_inc_nbi(fetch: &mut T, at: usize) -> ();
    [AmoInt] atomic_fetch_add(at: usize, value: T) -> T;
    [AmoInt] atomic_fetch_add_nbi(fetch: &mut T, at: usize, value: T) -> ();
    [AmoInt] atomic_fetch_and(at: usize, value: T) -> T;
    [AmoInt] atomic_fetch_and_nbi(fetch: &mut T, at: usize, value: T) -> ();
    [AmoInt] atomic_fetch_or(at: usize, value: T) -> T;
    [AmoInt] atomic_fetch_or_nbi(fetch: &mut T, at: usize, value: T) -> ();
    [AmoInt] atomic_fetch_xor(at: usize, value: T) -> T;
    [AmoInt] atomic_fetch_xor_nbi(fetch: &mut T, at: usize, value: T) -> ();
    [AmoInt] atomic_inc(at: usize) -> ();
    [AmoInt] atomic_add(at: usize, value: T) -> ();
    [AmoInt] atomic_and(at: usize, value: T) -> ();
    [AmoInt] atomic_or(at: usize, value: T) -> ();
    [AmoInt] atomic_xor(at: usize, value: T) -> ();
}
