//! Communication contexts (`shmem_ctx_t`): independent ordering and completion domains.
//!
//! A context belongs to a team, and the PE numbers given to its operations are numbers in
//! that team. Every RMA, AMO and signal operation has a context form here. On the shared-memory
//! path an operation is complete when it returns, so a context's `quiet` and `fence` are
//! processor fences that never wait on another context's traffic. The network transport gives
//! each context a handle of its own ([`CtxId`]): the context's operations run in its scope and
//! are counted against it, so a context's `quiet` waits for its own operations only, and its
//! `fence` orders only them. `shmem_quiet` (and barriers, and finalize) still complete every
//! context's operations.
//!
//! A whole program (PE 0 of 1 without a launcher; under `oshrun -n N` each PE writes to its
//! right neighbour):
//!
//! ```
//! use oxshmem::ctx::SHMEM_CTX_PRIVATE;
//!
//! let shmem = oxshmem::init()?;
//! let (me, n) = (shmem.my_pe(), shmem.n_pes());
//! let right = (me + 1) % n;
//! let data = shmem.alloc_slice(4, 0u64)?;
//! let hits = shmem.alloc_slice(1, 0u64)?;
//!
//! // A context on the world team, used by this thread only.
//! let ctx = shmem.ctx_create(SHMEM_CTX_PRIVATE)?;
//! ctx.put(&data, 0, &[1, 2, 3, 4], right)?; // RMA through the context
//! ctx.fence()?; // the put reaches `right` before the add below
//! ctx.atomic_add(&hits, 0, 1, right)?; // AMO through the context
//! ctx.quiet()?; // every operation of `ctx` is complete
//! shmem.barrier_all()?;
//!
//! let mut got = [0u64; 4];
//! ctx.get(&data, 0, &mut got, me)?;
//! assert_eq!(got, [1, 2, 3, 4]);
//! assert_eq!(ctx.atomic_fetch(&hits, 0, me)?, 1);
//! ctx.destroy()?;
//! data.free()?;
//! hits.free()?;
//! shmem.finalize()?;
//! # Ok::<(), oxshmem::Error>(())
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;

use bytemuck::Pod;

use crate::amo::{AmoInt, AmoType};
use crate::error::{Error, ErrorKind, Result};
use crate::signal::SignalOp;
use crate::sym::SymSlice;
use crate::team::Team;
use crate::transport::CtxId;
use crate::world::running;

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
    /// The network transport's handle of this context ([`CtxId::DEFAULT`] without one).
    net: CtxId,
}

impl Drop for CtxInner {
    /// A context dropped without [`Ctx::destroy`] gives its transport handle back too (its
    /// operations then count against the next context of that handle, whose quiet waits for
    /// them as well: more than it must, never less).
    fn drop(&mut self) {
        if self.net != CtxId::DEFAULT
            && !self.destroyed.load(Ordering::Acquire)
            && let Ok(rt) = running("shmem_ctx_destroy")
            && let Some(net) = &rt.net
        {
            net.ctx_destroy(self.net);
        }
    }
}

/// A communication context. Clones are handles to the same context.
///
/// Made by [`Shmem::ctx_create`](crate::Shmem::ctx_create) (world team) or
/// [`Team::create_ctx`]; every RMA, AMO and signal operation of [`SymSlice`] has a form here
/// taking the symmetric object first and the target PE (a number in the context's team) last.
/// [`quiet`](Ctx::quiet) and [`fence`](Ctx::fence) complete and order this context's
/// operations only; [`destroy`](Ctx::destroy) ends it.
///
/// ```
/// use oxshmem::ctx::SHMEM_CTX_PRIVATE;
///
/// let shmem = oxshmem::init()?;
/// let ctx = shmem.ctx_create(SHMEM_CTX_PRIVATE)?;
/// let x = shmem.alloc_slice(2, 0u64)?;
/// ctx.put(&x, 0, &[5, 6], 0)?; // PE numbers are in ctx's team
/// ctx.atomic_add(&x, 1, 1, 0)?;
/// ctx.quiet()?; // completes ctx's operations only
/// assert_eq!(ctx.g(&x, 1, 0)?, 7);
/// let mut both = [0u64; 2];
/// ctx.get(&x, 0, &mut both, 0)?;
/// assert_eq!(both, [5, 7]);
/// ctx.destroy()?;
/// x.free()?;
/// shmem.finalize()?;
/// # Ok::<(), oxshmem::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Ctx(Arc<CtxInner>);

impl crate::Shmem {
    /// `shmem_ctx_create`: a new context on the world team with `options`
    /// (`SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE`, or 0). Its PE numbers
    /// are world PE numbers. Other option bits are an error.
    ///
    /// ```
    /// use oxshmem::ctx::{SHMEM_CTX_NOSTORE, SHMEM_CTX_SERIALIZED};
    ///
    /// let shmem = oxshmem::init()?;
    /// let plain = shmem.ctx_create(0)?;
    /// let ctx = shmem.ctx_create(SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE)?;
    /// assert_eq!(ctx.options(), SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE);
    /// assert_eq!(ctx.team()?.n_pes()?, shmem.n_pes());
    /// assert!(shmem.ctx_create(1 << 40).is_err()); // not an option
    /// ctx.destroy()?;
    /// plain.destroy()?;
    /// shmem.finalize()?;
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
    /// let shmem = oxshmem::init()?;
    /// let node = shmem.team_shared();
    /// let ctx = node.create_ctx(0)?;
    /// assert_eq!(ctx.team()?.n_pes()?, node.n_pes()?);
    /// let x = shmem.alloc_slice(1, 0u32)?;
    /// let last = node.n_pes()? - 1; // a PE number in the shared team, not the world
    /// ctx.p(&x, 0, 42, last)?;
    /// ctx.quiet()?;
    /// assert_eq!(ctx.g(&x, 0, last)?, 42);
    /// assert!(ctx.g(&x, 0, node.n_pes()?).is_err()); // past the team's last PE
    /// ctx.destroy()?;
    /// x.free()?;
    /// shmem.finalize()?;
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
        let net = rt.net.as_ref().map_or(CtxId::DEFAULT, |n| n.ctx_create());
        Ok(Ctx(Arc::new(CtxInner { team: self.clone(), options, owner, destroyed: AtomicBool::new(false), net })))
    }
}

impl Ctx {
    /// The world PE number of this context's team PE `pe`, after checking the context.
    #[inline]
    fn world_pe(&self, pe: usize, func: &'static str) -> Result<usize> {
        let c = &self.0;
        let rt = running(func)?;
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
        let rt = running(func)?;
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
    /// let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(2, 0u64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// let again = ctx.clone();
    /// ctx.put_nbi(&x, 0, &[3, 4], shmem.my_pe())?;
    /// ctx.destroy()?; // completes the put first
    /// assert_eq!(x.to_vec(), [3, 4]);
    /// assert!(again.quiet().is_err()); // every handle is gone
    /// assert!(again.p(&x, 0, 1, shmem.my_pe()).is_err());
    /// x.free()?;
    /// shmem.finalize()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        self.quiet()?;
        if !self.0.destroyed.swap(true, Ordering::AcqRel)
            && self.0.net != CtxId::DEFAULT
            && let Some(net) = &running("shmem_ctx_destroy")?.net
        {
            net.ctx_destroy(self.0.net);
        }
        Ok(())
    }

    /// `shmem_ctx_quiet`: completes this context's operations: non-blocking puts, gets and
    /// atomics issued through it are delivered when it returns.
    ///
    /// ```
    /// let shmem = oxshmem::init()?;
    /// let me = shmem.my_pe();
    /// let x = shmem.alloc_slice(3, 0u64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.put_nbi(&x, 0, &[1, 2], me)?;
    /// let mut old = 0;
    /// ctx.atomic_fetch_add_nbi(&x, &mut old, 2, 10, me)?;
    /// ctx.quiet()?;
    /// assert_eq!(x.to_vec(), [1, 2, 10]);
    /// assert_eq!(old, 0);
    /// ctx.destroy()?;
    /// x.free()?;
    /// shmem.finalize()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn quiet(&self) -> Result<()> {
        const F: &str = "shmem_ctx_quiet";
        self.check(F)?;
        running(F)?.ctx_quiet_internal(self.0.net)
    }

    /// How many of this context's operations the network transport has in flight: issued,
    /// not yet known to be complete (0 on the shared-memory path, where an operation is
    /// complete when it returns, and after [`quiet`](Ctx::quiet)). For diagnostics and tests:
    /// another thread's context can have operations in flight while this one has none.
    ///
    /// ```
    /// let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0u64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.put_nbi(&x, 0, &[1], shmem.my_pe())?;
    /// ctx.quiet()?;
    /// assert_eq!(ctx.in_flight(), 0);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn in_flight(&self) -> u64 {
        match running("shmem_ctx_quiet") {
            Ok(rt) => rt.net.as_ref().map_or(0, |n| n.ctx_in_flight(self.0.net)),
            Err(_) => 0,
        }
    }

    /// `shmem_ctx_fence`: orders this context's operations to each PE: puts and atomics to a
    /// PE issued before it are delivered there before those issued after it. It does not
    /// complete them (that is [`quiet`](Ctx::quiet)).
    ///
    /// ```
    /// let shmem = oxshmem::init()?;
    /// let (me, n) = (shmem.my_pe(), shmem.n_pes());
    /// let right = (me + 1) % n;
    /// let data = shmem.alloc_slice(2, 0u32)?;
    /// let flag = shmem.alloc_slice(1, 0u64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.put(&data, 0, &[7, 8], right)?;
    /// ctx.fence()?; // the data reaches `right` before the flag
    /// ctx.atomic_set(&flag, 0, 1, right)?;
    /// flag.wait_until(0, oxshmem::Cmp::Eq, 1)?; // our left neighbour's flag
    /// assert_eq!(data.to_vec(), [7, 8]);
    /// ctx.destroy()?;
    /// shmem.barrier_all()?;
    /// data.free()?;
    /// flag.free()?;
    /// shmem.finalize()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn fence(&self) -> Result<()> {
        const F: &str = "shmem_ctx_fence";
        self.check(F)?;
        running(F)?.ctx_fence_internal(self.0.net)
    }
}

macro_rules! ctx_ops {
    ($( $(#[$doc:meta])* [$($bound:tt)+] $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )*) => {
        impl Ctx { $(
            #[doc = concat!("Context form of [`SymSlice::", stringify!($name), "`] (`shmem_ctx_", stringify!($name), "`): `pe` is a PE number of the context's team.")]
            $(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            pub fn $name<T: $($bound)+>(&self, obj: &SymSlice<T>, $($arg: $ty,)* pe: usize) -> Result<$ret> {
                let w = self.world_pe(pe, concat!("shmem_ctx_", stringify!($name)))?;
                // The transport counts what the operation leaves in flight against this context.
                let _scope = self.0.net.enter();
                obj.$name($($arg,)* w)
            }
        )* }
    };
}

ctx_ops! {
    ///
    /// ```
    /// let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(4, 0i32)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.put(&x, 1, &[5, 6, 7], shmem.my_pe())?; // elements 1..4 of the PE's copy
    /// assert_eq!(x.to_vec(), [0, 5, 6, 7]);
    /// ctx.destroy()?;
    /// x.free()?;
    /// shmem.finalize()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [Pod] put(at: usize, src: &[T]) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(2, 0u8)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.put_nbi(&x, 0, &[1, 2], 0)?;
    /// ctx.quiet()?; // delivered by the context's quiet
    /// assert_eq!(x.to_vec(), [1, 2]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [Pod] put_nbi(at: usize, src: &[T]) -> ();
    ///
    /// ```
    /// let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(3, 0u16)?;
    /// x.copy_from_slice(&[4, 5, 6]);
    /// shmem.barrier_all()?;
    /// let ctx = shmem.ctx_create(0)?;
    /// let mut out = [0u16; 2];
    /// ctx.get(&x, 1, &mut out, shmem.my_pe())?; // elements 1..3 of the PE's copy
    /// assert_eq!(out, [5, 6]);
    /// ctx.destroy()?;
    /// x.free()?;
    /// shmem.finalize()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [Pod] get(at: usize, dst: &mut [T]) -> ();
    [Pod] get_nbi(at: usize, dst: &mut [T]) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0.0f64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.p(&x, 0, 2.5, 0)?;
    /// assert_eq!(x.read(0), 2.5);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [Pod] p(at: usize, value: T) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(2, 9u32)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// assert_eq!(ctx.g(&x, 1, 0)?, 9);
    /// assert!(ctx.g(&x, 0, shmem.n_pes()).is_err()); // no such PE in the team
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [Pod] g(at: usize) -> T;
    [Pod] iput(at: usize, dst: usize, src: &[T], sst: usize, n: usize) -> ();
    [Pod] iget(at: usize, sst: usize, dst: &mut [T], dst_stride: usize, n: usize) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, SignalOp};
    /// let data = shmem.alloc_slice(2, 0u32)?;
    /// let sig = shmem.alloc_slice(1, 0u64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.put_signal(&data, 0, &[1, 2], &sig, 0, 1, SignalOp::Add, shmem.my_pe())?;
    /// assert_eq!(sig.signal_wait_until(0, Cmp::Ge, 1)?, 1);
    /// assert_eq!(data.to_vec(), [1, 2]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [Pod] put_signal(at: usize, src: &[T], sig: &SymSlice<u64>, sig_at: usize, signal: u64, op: SignalOp) -> ();
    [Pod] put_signal_nbi(at: usize, src: &[T], sig: &SymSlice<u64>, sig_at: usize, signal: u64, op: SignalOp) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 6i64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// assert_eq!(ctx.atomic_fetch(&x, 0, 0)?, 6);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [AmoType] atomic_fetch(at: usize) -> T;
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0u32)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.atomic_set(&x, 0, 11, 0)?;
    /// assert_eq!(ctx.atomic_fetch(&x, 0, 0)?, 11);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [AmoType] atomic_set(at: usize, value: T) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 1u64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// assert_eq!(ctx.atomic_swap(&x, 0, 2, 0)?, 1); // returns the old value
    /// assert_eq!(x.read(0), 2);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [AmoType] atomic_swap(at: usize, value: T) -> T;
    [AmoType] atomic_fetch_nbi(fetch: &mut T, at: usize) -> ();
    [AmoType] atomic_swap_nbi(fetch: &mut T, at: usize, value: T) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 5i32)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// assert_eq!(ctx.atomic_compare_swap(&x, 0, 4, 9, 0)?, 5); // 5 != 4: unchanged
    /// assert_eq!(ctx.atomic_compare_swap(&x, 0, 5, 9, 0)?, 5); // 5 == 5: swapped
    /// assert_eq!(x.read(0), 9);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [AmoInt] atomic_compare_swap(at: usize, cond: T, value: T) -> T;
    [AmoInt] atomic_compare_swap_nbi(fetch: &mut T, at: usize, cond: T, value: T) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 0u64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// assert_eq!(ctx.atomic_fetch_inc(&x, 0, 0)?, 0);
    /// assert_eq!(ctx.atomic_fetch_inc(&x, 0, 0)?, 1);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [AmoInt] atomic_fetch_inc(at: usize) -> T;
    [AmoInt] atomic_fetch_inc_nbi(fetch: &mut T, at: usize) -> ();
    ///
    /// ```
    /// let shmem = oxshmem::init()?;
    /// let counter = shmem.alloc_slice(1, 0u64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// // Every PE takes a ticket from PE 0's counter.
    /// let ticket = ctx.atomic_fetch_add(&counter, 0, 1, 0)?;
    /// assert!(ticket < shmem.n_pes() as u64);
    /// shmem.barrier_all()?;
    /// assert_eq!(ctx.atomic_fetch(&counter, 0, 0)?, shmem.n_pes() as u64);
    /// ctx.destroy()?;
    /// counter.free()?;
    /// shmem.finalize()?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [AmoInt] atomic_fetch_add(at: usize, value: T) -> T;
    [AmoInt] atomic_fetch_add_nbi(fetch: &mut T, at: usize, value: T) -> ();
    [AmoInt] atomic_fetch_and(at: usize, value: T) -> T;
    [AmoInt] atomic_fetch_and_nbi(fetch: &mut T, at: usize, value: T) -> ();
    [AmoInt] atomic_fetch_or(at: usize, value: T) -> T;
    [AmoInt] atomic_fetch_or_nbi(fetch: &mut T, at: usize, value: T) -> ();
    [AmoInt] atomic_fetch_xor(at: usize, value: T) -> T;
    [AmoInt] atomic_fetch_xor_nbi(fetch: &mut T, at: usize, value: T) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 41u32)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.atomic_inc(&x, 0, 0)?;
    /// assert_eq!(x.read(0), 42);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [AmoInt] atomic_inc(at: usize) -> ();
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc_slice(1, 1i64)?;
    /// let ctx = shmem.ctx_create(0)?;
    /// ctx.atomic_add(&x, 0, -3, 0)?;
    /// ctx.quiet()?;
    /// assert_eq!(x.read(0), -2);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    [AmoInt] atomic_add(at: usize, value: T) -> ();
    [AmoInt] atomic_and(at: usize, value: T) -> ();
    [AmoInt] atomic_or(at: usize, value: T) -> ();
    [AmoInt] atomic_xor(at: usize, value: T) -> ();
}
