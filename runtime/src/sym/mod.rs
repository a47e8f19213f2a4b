//! The safe Rust API: the [`Shmem`] handle and typed symmetric objects.
//!
//! A [`SymSlice<T>`] (and its one-element form [`SymBox<T>`]) can only be made by a
//! collective allocation, so safe code cannot name a non-symmetric address. Element indices
//! are checked against the object's length and PE numbers against the job, and both give an
//! [`Error`](crate::Error), never a wild access. Elements are [`bytemuck::Pod`]: any bytes
//! another PE writes are a valid value.
//!
//! Remote PEs may write into a symmetric object at any time; that is the point of it. The safe
//! local accessors ([`SymSlice::read`], [`SymSlice::write`], [`SymSlice::to_vec`], ...) copy
//! elements in and out instead of handing out references, so no Rust reference ever aliases
//! memory another process is writing, and copy them with relaxed atomics, so that another
//! thread of this process writing the same elements is no data race (see the memory model of
//! [`crate::transport::relaxed`]). [`SymSlice::as_slice`] gives a reference, and is
//! `unsafe` for exactly that reason.
//!
//! # The symmetric memory access rule
//!
//! Symmetric memory is accessed by agents the compiler does not see: other PEs' puts and
//! atomics, device threads, the proxy thread and the software NIC. A Rust `&` promises that
//! nothing changes the memory while it lives, a `&mut` that nothing else even reads it; so
//! **memory another agent may access at the same time is never behind a `&` or `&mut`**, not
//! even for the length of one copy. Instead, by kind of access:
//!
//! 1. **Elements** are read and written by value with relaxed atomic loads and stores
//!    ([`SymSlice::read`], [`SymSlice::write`], [`SymSlice::fill`], [`SymSlice::to_vec`],
//!    [`SymSlice::copy_from_slice`], the fill at allocation, and [`SymSlice::put`],
//!    [`SymSlice::get`], `p`, `g`, `iput` and `iget` when the target is this PE;
//!    `crate::transport::relaxed`): one access per atomic word, of the widest width dividing
//!    the element's size and address (one per element for the 1, 2, 4 and 8-byte types, the
//!    width `p` and the AMOs use), which the compiler may neither cache nor drop, and which
//!    are no data race when another thread writes the same elements.
//! 2. **Flags and signals** — words whose value tells another agent that other data is ready —
//!    are atomics: acquire loads to wait on them ([`SymSlice::wait_until`], [`SymSlice::test`],
//!    `crate::wait`, the signal words), and single atomic stores to set them ([`SymSlice::p`]
//!    of a 1, 2, 4 or 8-byte element, the AMOs) after the fence or quiet that orders the data
//!    before them. Volatile alone orders nothing.
//! 3. **Bulk copies** inside the runtime go between raw pointers: `ptr::copy` (or
//!    `copy_nonoverlapping` where the two sides cannot overlap) from or to the symmetric
//!    address (puts and gets on a mapped peer, the collectives' chunks, the `unsafe`
//!    [`SymSlice::to_vec_unsync`]) — never through a `&[T]` or `&mut [T]` formed over the
//!    symmetric side. This is sound because the elements are `Pod` (any bytes are a valid
//!    value) and because the program's own synchronisation (the writer's quiet, then a
//!    barrier, or a signal the reader waits for) orders the copy after the writes it must see
//!    and before the next ones. A copy that races a peer's write is a
//!    synchronisation bug of the program; as no reference asserts the memory unchanged, what it
//!    gets is stale or torn values, as in C OpenSHMEM. A plain copy racing another *thread* of
//!    this process is a data race, undefined behaviour: hence the safe accessors are atomic (1),
//!    and a plain copy is internal or `unsafe`.
//! 4. **Slices** over symmetric memory exist only while their holder owns it exclusively:
//!    after a synchronisation point that guarantees no other agent writes it (for `&mut`: nor
//!    reads it) until the slice is gone. [`SymSlice::as_slice`] and
//!    [`SymSlice::as_mut_slice`] are `unsafe` for that reason. Code that needs them wraps them
//!    in a guard type whose constructor *is* the synchronisation point and whose lifetime
//!    bounds the slice's, so the slice cannot outlive the phase (the MoE buffers of
//!    `oxshmem-moe`, `moe/src/access.rs`, are built so).
//!
//! The caller's own buffers — the `&[T]` source of a put, the `&mut [T]` destination of a get —
//! are ordinary Rust memory and stay slices.

mod atomics;
mod handle;
mod rma;
mod slice;
mod wait;

pub use handle::{Shmem, current, init, init_thread};
pub use slice::{SymBox, SymSlice};
