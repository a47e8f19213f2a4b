//! Which thread owns a `SHMEM_CTX_PRIVATE` context when the program registered a gettid
//! function (`shmemx_register_gettid`, in `ext`): the creators of private contexts, by the
//! address of the context's record. A leaf: the context handles (`handles`) consult it and the
//! extension that registers the function (`ext`) fills it, so neither imports the other.

use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// The function of `shmemx_register_gettid` (`ext::GettidFn`).
type GettidFn = unsafe extern "C" fn() -> u64;

/// The registered function (null: none).
static GETTID: AtomicPtr<()> = AtomicPtr::new(null_mut());

/// Registers `f` (`shmemx_register_gettid`, in `ext`); `None` unregisters.
pub(crate) fn register(f: Option<unsafe extern "C" fn() -> u64>) {
    GETTID.store(f.map_or(null_mut(), |f| f as *mut ()), Ordering::Release);
}

/// The calling thread as the registered function names it, if one is registered.
fn gettid() -> Option<u64> {
    let f = GETTID.load(Ordering::Acquire);
    if f.is_null() {
        return None;
    }
    // SAFETY: GETTID only holds null or a `GettidFn` stored by shmemx_register_gettid.
    let f: GettidFn = unsafe { std::mem::transmute::<*mut (), GettidFn>(f) };
    // SAFETY: the program registered a function of this signature for the library to call.
    Some(unsafe { f() })
}

/// Creators of private contexts made while a gettid function was registered: an open-addressing
/// table keyed by the context record's address (records are never freed), at most half full
/// (a program makes at most 16,384 contexts over its life; see `handles`).
const CREATORS: usize = 1 << 15;
static CREATOR_KEY: [AtomicUsize; CREATORS] = [const { AtomicUsize::new(0) }; CREATORS];
static CREATOR_ID: [AtomicU64; CREATORS] = [const { AtomicU64::new(0) }; CREATORS];

fn creator_slot(key: usize) -> usize {
    ((key >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - 15)) % CREATORS
}

/// Records the creator of the new private context whose record lies at `key` (from
/// `handles::new_ctx`, on the creating thread).
pub(crate) fn created(key: usize) {
    let Some(id) = gettid() else { return };
    let mut i = creator_slot(key);
    for _ in 0..CREATORS {
        match CREATOR_KEY[i].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                // The handle reaches other threads only after this returns.
                CREATOR_ID[i].store(id, Ordering::Release);
                return;
            }
            Err(k) if k == key => return,
            Err(_) => i = (i + 1) % CREATORS,
        }
    }
}

/// Whether the calling thread owns the private context whose record lies at `key`, by the
/// registered gettid function; `None` when that does not decide it (no function registered
/// now, or none when the context was created), and the operating system's thread does.
#[inline]
pub(crate) fn owns(key: usize) -> Option<bool> {
    if GETTID.load(Ordering::Relaxed).is_null() {
        return None;
    }
    let mut i = creator_slot(key);
    for _ in 0..CREATORS {
        match CREATOR_KEY[i].load(Ordering::Acquire) {
            0 => return None,
            k if k == key => return Some(gettid() == Some(CREATOR_ID[i].load(Ordering::Acquire))),
            _ => i = (i + 1) % CREATORS,
        }
    }
    None
}
