//! Who may look at which symmetric buffer, and when: the symmetric memory access rule
//! (`runtime/src/sym/mod.rs`) applied to MoE's buffers.
//!
//! Host code here works on whole rows (expert inputs, partial sums, metadata), so it wants
//! slices over symmetric memory — the rule's exception for a phase that owns the memory. Every
//! such slice comes from this module, and only against a guard whose constructor is the
//! synchronisation point and whose lifetime bounds the slice's:
//!
//! - [`Idle`]: no kernel of this buffer runs, and none can start while it (or a slice made with
//!   it) lives: it borrows the buffer's [`Kernels`], which start a kernel only through
//!   `&mut self` and return only once it has ended (its threads joined, its puts quieted).
//! - [`Arrived`]: an `Idle` made by the kernel that awaited every other PE's last signal of
//!   its kind ([`Kernels::run_then_await`]), or made again for the same window by
//!   [`Kernels::arrived`], which checks that no other kernel has run since.
//!
//! and the buffers come in two kinds, by who writes them:
//!
//! - an [`Outbox`] (tokens, counts to send, metadata to send, partial sums) is written by this
//!   PE's host code and read by this PE's kernels, as the source of their puts; no peer ever
//!   writes it. Host code views it against an `Idle`.
//! - an [`Inbox`] (count matrix, received rows and metadata, combine rows) is written by peers'
//!   puts during one kind of kernel, each peer's writes ordered before its last signal of that
//!   kernel. Host code reads it against an `Arrived` of that kernel: every peer's writes are
//!   then complete, and no peer writes it again before this PE's next kernel (see "Why one set
//!   of buffers is enough" in the module documentation). One block of it, this PE's own, no
//!   peer writes at all; host code fills it against an `Idle`.
//!
//! Inside kernels, symmetric memory is reached only through the device API (puts, signals,
//! volatile `read_local`), never through a slice.

use std::marker::PhantomData;
use std::ops::Range;

use bytemuck::Pod;
use oxshmem::{Cmp, SymSlice};

use super::engine::Engine;
use super::{Phase, Shape, Signals, my_sources};
use oxshmem_device::{DevPtr, DeviceError, Thread};

/// The two kernels of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
    /// Peers fill the count matrix and the receive buffers; it ends awaiting every data signal.
    Dispatch,
    /// Peers fill their blocks of the combine buffer; it ends awaiting every combine signal.
    Combine,
}

impl Kernel {
    /// The phase whose signal from every other PE the kernel awaits last.
    fn last_phase(self) -> Phase {
        match self {
            Kernel::Dispatch => Phase::Data,
            Kernel::Combine => Phase::Combine,
        }
    }
}

/// Runs the buffer's kernels, one at a time, and remembers which one completed last.
pub(super) struct Kernels {
    engine: Engine,
    /// The last kernel, when it completed (with its wait for every other PE).
    last: Option<Kernel>,
}

impl Kernels {
    pub(super) fn new(engine: Engine) -> Kernels {
        Kernels { engine, last: None }
    }

    /// Runs `job` as kernel `kind` on every device thread, then, in the same kernel, a quiet and
    /// a wait for every other PE's signal of `kind`'s last phase at `epoch`. Returns once the
    /// kernel has ended: the synchronisation point of the inboxes `kind` fills.
    pub(super) fn run_then_await(
        &mut self,
        kind: Kernel,
        s: &Shape,
        sig: Signals,
        epoch: u64,
        job: impl Fn(&Thread<'_>) + Send + Sync + 'static,
    ) -> Result<Arrived<'_>, DeviceError> {
        self.last = None;
        let (me, n, phase) = (s.me, s.n, kind.last_phase());
        self.engine.run(move |t| {
            job(t);
            t.quiet();
            for src in my_sources(t, me, n).filter(|&src| src != me) {
                t.signal_wait_until(sig.at(phase, src), Cmp::Ge, epoch);
            }
        })?;
        self.last = Some(kind);
        Ok(Arrived { idle: self.idle(), kind })
    }

    /// No kernel runs while the result lives.
    pub(super) fn idle(&self) -> Idle<'_> {
        Idle(PhantomData)
    }

    /// The guard [`run_then_await`](Self::run_then_await) returned for `kind`, again (for the
    /// host code that runs after it returned, such as the expert pass between dispatch and
    /// combine).
    ///
    /// # Panics
    /// If the last kernel was not a completed `kind`: what it filled may be changing.
    pub(super) fn arrived(&self, kind: Kernel) -> Arrived<'_> {
        assert_eq!(
            self.last,
            Some(kind),
            "moe: the inboxes of {kind:?} read when it was not the last kernel to complete"
        );
        Arrived { idle: self.idle(), kind }
    }
}

/// No kernel of the buffer runs, and none can start while this lives.
#[derive(Clone, Copy)]
pub(super) struct Idle<'k>(PhantomData<&'k Kernels>);

/// Kernel `kind` has completed, having awaited every other PE's last signal of it, and no
/// kernel has run since (nor can while this lives).
#[derive(Clone, Copy)]
pub(super) struct Arrived<'k> {
    idle: Idle<'k>,
    kind: Kernel,
}

impl<'k> Arrived<'k> {
    /// What it implies: no kernel runs.
    pub(super) fn idle(self) -> Idle<'k> {
        self.idle
    }
}

/// Symmetric memory no peer writes: this PE's host code fills it between kernels, and its
/// kernels read it as the source of their puts.
pub(super) struct Outbox<T: Pod>(SymSlice<T>);

impl<T: Pod> Outbox<T> {
    /// # Safety
    /// No PE ever makes `mem` the destination of a put, signal or atomic: only this PE's
    /// kernels access it, reading it as the source of their puts.
    pub(super) unsafe fn new(mem: SymSlice<T>) -> Outbox<T> {
        Outbox(mem)
    }

    /// Its address, for the kernels.
    pub(super) fn dev(&self) -> DevPtr<T> {
        DevPtr::from_slice(&self.0)
    }

    /// Its elements, read-only.
    pub(super) fn host<'a>(&'a self, _: Idle<'a>) -> &'a [T] {
        // SAFETY: no peer writes an outbox (`new`'s contract), and this PE's kernels, its only
        // other readers, cannot run while the Idle borrow lives, which outlives the slice.
        unsafe { self.0.as_slice() }
    }

    /// Its elements, to fill.
    pub(super) fn host_mut<'a>(&'a mut self, _: Idle<'a>) -> &'a mut [T] {
        // SAFETY: as in `host`; `&mut self` rules out every other slice of it.
        unsafe { self.0.as_mut_slice() }
    }

    /// Frees it (collective).
    pub(super) fn free(self) -> Result<(), oxshmem::Error> {
        self.0.free()
    }
}

/// Symmetric memory that peers fill during one kind of kernel, except this PE's own block.
pub(super) struct Inbox<T: Pod> {
    mem: SymSlice<T>,
    filled_in: Kernel,
    own: Range<usize>,
}

impl<T: Pod> Inbox<T> {
    /// # Safety
    /// Peers write `mem` only in their kernels of kind `filled_in`, each peer's writes ordered
    /// before its signal of that kernel's last phase to this PE, and none writes it again
    /// before this PE has started its next kernel. No peer ever writes the elements `own`, and
    /// this PE's kernels never read them.
    pub(super) unsafe fn new(mem: SymSlice<T>, filled_in: Kernel, own: Range<usize>) -> Inbox<T> {
        assert!(own.start <= own.end && own.end <= mem.len(), "moe: own block {own:?} of {} elements", mem.len());
        Inbox { mem, filled_in, own }
    }

    /// Its address, for the kernels.
    pub(super) fn dev(&self) -> DevPtr<T> {
        DevPtr::from_slice(&self.mem)
    }

    /// Its elements, once the kernel that fills it has completed.
    ///
    /// # Panics
    /// If `arrived` is another kernel's.
    pub(super) fn read<'a>(&'a self, arrived: Arrived<'a>) -> &'a [T] {
        assert_eq!(arrived.kind, self.filled_in, "moe: an inbox of {:?} read after {:?}", self.filled_in, arrived.kind);
        // SAFETY: every peer's writes were ordered before its signal, which the kernel awaited
        // (`new`'s contract); no peer writes again before this PE's next kernel, which cannot
        // start while the borrow in `arrived` lives, and that outlives the slice. The own block
        // is written only through `own_mut`, whose `&mut self` excludes this `&self`.
        unsafe { self.mem.as_slice() }
    }

    /// This PE's own block, to fill.
    pub(super) fn own_mut<'a>(&'a mut self, _: Idle<'a>) -> &'a mut [T] {
        // SAFETY: `own` lies inside the allocation (checked in `new`), whose elements are
        // initialized Pod; no peer writes it and no kernel reads it (`new`'s contract), and
        // `&mut self` rules out every other slice of it. The slice covers `own` only: peers
        // may be writing the rest at this very time.
        unsafe { std::slice::from_raw_parts_mut(self.mem.as_ptr().add(self.own.start), self.own.len()) }
    }

    /// Frees it (collective).
    pub(super) fn free(self) -> Result<(), oxshmem::Error> {
        self.mem.free()
    }
}
