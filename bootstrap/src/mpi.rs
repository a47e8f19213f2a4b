//! Bootstrap over an MPI communicator the program already has: NVSHMEM's
//! `nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &attr)`, where `attr.mpi_comm` is a
//! `void *` pointing at the program's `MPI_Comm` variable.
//!
//! # No link-time MPI
//!
//! The library that uses this is linked into programs with and without MPI, so nothing here
//! links an MPI library. The MPI functions are looked up at run time in the process's global
//! symbol scope (`dlsym(RTLD_DEFAULT, "MPI_Comm_rank")`, ...): a program that passes an
//! `MPI_Comm` has MPI loaded. When MPI was loaded privately (`dlopen` with `RTLD_LOCAL`, as a
//! Python extension module's dependency is), the well-known sonames are tried with
//! `RTLD_NOLOAD`, which finds a library only if it is already loaded and never loads one.
//!
//! # Two ABIs
//!
//! `MPI_Comm` and `MPI_Datatype` are opaque types whose representation the standard leaves to
//! the implementation, and the two families in use differ:
//!
//! | | MPICH and its derivatives (Intel MPI, MVAPICH, Cray MPICH) | Open MPI |
//! | --- | --- | --- |
//! | `MPI_Comm`, `MPI_Datatype`, `MPI_Errhandler` | `int` | pointers to library structs |
//! | `MPI_COMM_WORLD` | `0x44000000` | `&ompi_mpi_comm_world` |
//! | `MPI_COMM_NULL` | `0x04000000` | `&ompi_mpi_comm_null` |
//! | `MPI_BYTE` | `0x4c00010d` | `&ompi_mpi_byte` |
//! | `MPI_ERRORS_RETURN` | `0x54000001` | `&ompi_mpi_errors_return` |
//! | `MPI_SUCCESS` | `0` | `0` |
//!
//! (MPICH 4.0.2's `mpi.h`, Debian `libmpich-dev`; Open MPI 4.1.4's `mpi.h`, Debian
//! `libopenmpi-dev`.) The loaded library is Open MPI when the process has the symbol
//! `ompi_mpi_comm_world`, and MPICH's ABI otherwise; [`Mpi::library`] says which, with the
//! text of `MPI_Get_library_version`. The `MPI_Comm` behind `attr.mpi_comm` is read with the
//! width of that ABI (4 bytes or 8).
//!
//! # What it does with the communicator
//!
//! `MPI_Comm_dup` it, so that no message of the bootstrap can match one of the application,
//! and set `MPI_ERRORS_RETURN` on the duplicate, so that a failing call comes back as a
//! [`BootstrapError`] naming the call and its return code instead of ending the process.
//! Allgather is `MPI_Allgather` of the sizes, then `MPI_Allgather` when every piece has the
//! same size and `MPI_Allgatherv` otherwise; broadcast is `MPI_Bcast` of the size, then of the
//! data; barrier is `MPI_Barrier`. [`Bootstrap::finalize`] frees the duplicate with
//! `MPI_Comm_free` — unless MPI is finalized already (`MPI_Finalized`), when there is nothing
//! left to free. The bootstrap never initializes or finalizes MPI itself.
//!
//! The calls are serialized by a lock, so the bootstrap is safe to share between threads
//! whatever thread level the program initialized MPI with, as long as the program does not
//! itself call MPI concurrently with it under `MPI_THREAD_SINGLE`/`FUNNELED`/`SERIALIZED`.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, MutexGuard};

use crate::{Bootstrap, BootstrapError, Result};

const PROTOCOL: &str = "mpi";
/// The step named by every error of [`Mpi::from_comm`].
const INIT: &str = "NVSHMEMX_INIT_WITH_MPI_COMM";
/// `MPI_SUCCESS`, 0 in both ABIs.
const MPI_SUCCESS: c_int = 0;

/// MPICH's predefined handles (`mpi.h` of MPICH 4.0.2; the MPICH ABI initiative keeps them
/// fixed across MPICH, Intel MPI, MVAPICH and Cray MPICH).
mod mpich {
    use std::ffi::c_int;

    pub(super) const COMM_WORLD: c_int = 0x4400_0000;
    pub(super) const COMM_SELF: c_int = 0x4400_0001;
    pub(super) const COMM_NULL: c_int = 0x0400_0000;
    pub(super) const BYTE: c_int = 0x4c00_010d;
    pub(super) const ERRORS_RETURN: c_int = 0x5400_0001;

    /// Why `h` cannot be an MPICH communicator, if it cannot. An MPICH handle keeps its kind in
    /// bits 30-31 (0 invalid, 1 built-in, 2 direct, 3 indirect) and its object type in bits
    /// 26-29 (`MPIR_COMM` is 1): `src/include/mpir_objects.h`, `HANDLE_GET_KIND` and
    /// `HANDLE_GET_MPI_KIND`.
    pub(super) fn comm_problem(h: c_int) -> Option<String> {
        if h == COMM_NULL {
            return Some("the communicator is MPI_COMM_NULL".into());
        }
        let u = h as u32;
        let (kind, object) = (u >> 30, (u >> 26) & 0xf);
        (kind == 0 || object != 1).then(|| {
            format!(
                "{u:#010x} is not an MPICH communicator handle (MPI_COMM_WORLD is 0x44000000): \
                 attr.mpi_comm must point to an MPI_Comm variable"
            )
        })
    }
}

/// Sonames tried with `RTLD_NOLOAD` when the global scope has no MPI: Open MPI 3-5, MPICH
/// (upstream and Debian's name), Cray MPICH.
const SONAMES: &[&CStr] = &[c"libmpi.so.40", c"libmpi.so.12", c"libmpich.so.12", c"libmpi_cray.so.12", c"libmpi.so"];

// ---------------------------------------------------------------- symbols

/// Where the MPI symbols are looked up: the global scope, or an already loaded library.
struct Symbols {
    handle: *mut c_void,
}

impl Symbols {
    fn raw(handle: *mut c_void, name: &CStr) -> *mut c_void {
        // SAFETY: `handle` is RTLD_DEFAULT or a handle dlopen returned and we never closed;
        // `name` is NUL-terminated. dlsym only reads.
        unsafe { libc::dlsym(handle, name.as_ptr()) }
    }

    /// The scope that has `MPI_Comm_rank`, if any.
    fn find() -> Option<Symbols> {
        if !Self::raw(libc::RTLD_DEFAULT, c"MPI_Comm_rank").is_null() {
            return Some(Symbols { handle: libc::RTLD_DEFAULT });
        }
        SONAMES.iter().find_map(|soname| {
            // SAFETY: RTLD_NOLOAD returns a handle only for a library that is already loaded,
            // so this runs no initializer; the name is NUL-terminated.
            let h = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            if h.is_null() {
                return None;
            }
            if Self::raw(h, c"MPI_Comm_rank").is_null() {
                // SAFETY: `h` came from the dlopen above and is not used afterwards.
                unsafe { libc::dlclose(h) };
                return None;
            }
            // The reference is kept for the life of the process: the library stays loaded.
            Some(Symbols { handle: h })
        })
    }

    fn get(&self, name: &CStr) -> *mut c_void {
        Self::raw(self.handle, name)
    }

    /// The function `name` as the function pointer type `F`.
    ///
    /// # Safety
    ///
    /// `F` must be the `unsafe extern "C" fn` type of the C prototype of `name` in the MPI
    /// library that is loaded.
    unsafe fn func<F: Copy>(&self, name: &CStr) -> Result<F> {
        const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
        let p = self.get(name);
        if p.is_null() {
            return Err(init_err(format!("the MPI library loaded in this process has no {}", name.to_string_lossy())));
        }
        // SAFETY: `p` is the address of the function `name`; the caller guarantees that `F` is
        // its type, a function pointer of the size of `p` (asserted above).
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
    }
}

// ---------------------------------------------------------------- errors

fn init_err(reason: impl Into<String>) -> BootstrapError {
    BootstrapError::Protocol { protocol: PROTOCOL, step: INIT.into(), reason: reason.into() }
}

/// The error of MPI call `call` that returned `rc` during `step`; `text` is what
/// `MPI_Error_string` says about `rc` (empty when unknown).
fn call_err(step: &str, call: &str, rc: c_int, text: &str) -> BootstrapError {
    let reason = if text.is_empty() {
        format!("returned error code {rc}")
    } else {
        format!("returned error code {rc} ({text})")
    };
    BootstrapError::Protocol { protocol: PROTOCOL, step: format!("{step}: {call}"), reason }
}

// ---------------------------------------------------------------- the functions of both ABIs

type FlagFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int, *mut c_char, *mut c_int) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;

/// The functions whose prototypes hold no handle, the same in both ABIs.
#[derive(Clone, Copy)]
struct Common {
    initialized: FlagFn,
    finalized: FlagFn,
    error_string: Option<ErrorStringFn>,
    library_version: Option<VersionFn>,
}

impl Common {
    fn load(s: &Symbols) -> Result<Common> {
        // SAFETY: the types are the prototypes of mpi.h: `int MPI_Initialized(int *flag)`,
        // `int MPI_Finalized(int *flag)`, `int MPI_Error_string(int errorcode, char *string,
        // int *resultlen)`, `int MPI_Get_library_version(char *version, int *resultlen)`.
        unsafe {
            Ok(Common {
                initialized: s.func(c"MPI_Initialized")?,
                finalized: s.func(c"MPI_Finalized")?,
                error_string: s.func(c"MPI_Error_string").ok(),
                library_version: s.func(c"MPI_Get_library_version").ok(),
            })
        }
    }

    fn flag(&self, f: FlagFn, call: &str, step: &str) -> Result<bool> {
        let mut flag: c_int = 0;
        // SAFETY: MPI_Initialized/MPI_Finalized write one int; both may be called at any
        // time, before MPI_Init and after MPI_Finalize included.
        let rc = unsafe { f(&mut flag) };
        if rc != MPI_SUCCESS {
            return Err(call_err(step, call, rc, &self.error_text(rc)));
        }
        Ok(flag != 0)
    }

    fn is_initialized(&self, step: &str) -> Result<bool> {
        self.flag(self.initialized, "MPI_Initialized", step)
    }

    fn is_finalized(&self, step: &str) -> Result<bool> {
        self.flag(self.finalized, "MPI_Finalized", step)
    }

    /// `MPI_Error_string(rc)`, or "" when the library has none for it.
    fn error_text(&self, rc: c_int) -> String {
        let Some(f) = self.error_string else { return String::new() };
        // MPI_MAX_ERROR_STRING is 512 in MPICH, 256 in Open MPI.
        let mut buf = [0 as c_char; 1024];
        let mut len: c_int = 0;
        // SAFETY: the buffer holds more than MPI_MAX_ERROR_STRING characters of either ABI.
        if unsafe { f(rc, buf.as_mut_ptr(), &mut len) } != MPI_SUCCESS {
            return String::new();
        }
        text_of(&buf, len)
    }

    /// The first line of `MPI_Get_library_version`, whitespace collapsed.
    fn version(&self) -> String {
        let Some(f) = self.library_version else { return "unknown MPI library".into() };
        // MPI_MAX_LIBRARY_VERSION_STRING is 8192 in MPICH, 256 in Open MPI.
        let mut buf = vec![0 as c_char; 8192 + 1];
        let mut len: c_int = 0;
        // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING characters of either ABI.
        if unsafe { f(buf.as_mut_ptr(), &mut len) } != MPI_SUCCESS {
            return "unknown MPI library".into();
        }
        let text = text_of(&buf, len);
        text.lines().next().unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// The text an MPI call wrote into `buf`: `len` characters, or up to the first NUL.
fn text_of(buf: &[c_char], len: c_int) -> String {
    let n = usize::try_from(len).unwrap_or(0).min(buf.len());
    let bytes: Vec<u8> = buf[..n].iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

// ---------------------------------------------------------------- the functions of one ABI

/// A handle (`MPI_Comm`, `MPI_Datatype`, `MPI_Errhandler`) of one ABI, passed by value to MPI.
trait Handle: Copy + PartialEq + Send + Sync + fmt::Debug + 'static {}

/// MPICH's handles: `int`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct IntHandle(c_int);
impl Handle for IntHandle {}

/// Open MPI's handles: pointers to the library's objects.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct PtrHandle(*mut c_void);
// SAFETY: the pointer is an opaque name for an MPI object, only ever passed back to MPI; MPI
// objects are not tied to the thread that created them.
unsafe impl Send for PtrHandle {}
// SAFETY: as for Send; `&PtrHandle` only allows copying the name.
unsafe impl Sync for PtrHandle {}
impl Handle for PtrHandle {}

/// The functions and predefined handles of one ABI, `H` being its handle type.
struct Api<H> {
    comm_rank: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    comm_size: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    comm_test_inter: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    comm_dup: unsafe extern "C" fn(H, *mut H) -> c_int,
    comm_free: unsafe extern "C" fn(*mut H) -> c_int,
    comm_set_errhandler: unsafe extern "C" fn(H, H) -> c_int,
    barrier: unsafe extern "C" fn(H) -> c_int,
    bcast: unsafe extern "C" fn(*mut c_void, c_int, H, c_int, H) -> c_int,
    allgather: unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, H) -> c_int,
    allgatherv: unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, *const c_int, *const c_int, H, H) -> c_int,
    abort: unsafe extern "C" fn(H, c_int) -> c_int,
    /// `MPI_BYTE`.
    byte: H,
    /// `MPI_ERRORS_RETURN`.
    errors_return: H,
    /// `MPI_COMM_NULL`.
    comm_null: H,
}

impl<H: Handle> Api<H> {
    /// # Safety
    ///
    /// `H` must be the handle type of the loaded library (`IntHandle` for MPICH's ABI,
    /// `PtrHandle` for Open MPI's), and the three handles its `MPI_BYTE`,
    /// `MPI_ERRORS_RETURN` and `MPI_COMM_NULL`.
    unsafe fn load(s: &Symbols, byte: H, errors_return: H, comm_null: H) -> Result<Api<H>> {
        // SAFETY: with `MPI_Comm`, `MPI_Datatype` and `MPI_Errhandler` all `H` (the caller's
        // promise) these are the prototypes of mpi.h: MPI_Comm_rank(MPI_Comm, int *),
        // MPI_Comm_size(MPI_Comm, int *), MPI_Comm_test_inter(MPI_Comm, int *),
        // MPI_Comm_dup(MPI_Comm, MPI_Comm *), MPI_Comm_free(MPI_Comm *),
        // MPI_Comm_set_errhandler(MPI_Comm, MPI_Errhandler), MPI_Barrier(MPI_Comm),
        // MPI_Bcast(void *, int, MPI_Datatype, int root, MPI_Comm),
        // MPI_Allgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm),
        // MPI_Allgatherv(const void *, int, MPI_Datatype, void *, const int[], const int[],
        // MPI_Datatype, MPI_Comm), MPI_Abort(MPI_Comm, int).
        unsafe {
            Ok(Api {
                comm_rank: s.func(c"MPI_Comm_rank")?,
                comm_size: s.func(c"MPI_Comm_size")?,
                comm_test_inter: s.func(c"MPI_Comm_test_inter")?,
                comm_dup: s.func(c"MPI_Comm_dup")?,
                comm_free: s.func(c"MPI_Comm_free")?,
                comm_set_errhandler: s.func(c"MPI_Comm_set_errhandler")?,
                barrier: s.func(c"MPI_Barrier")?,
                bcast: s.func(c"MPI_Bcast")?,
                allgather: s.func(c"MPI_Allgather")?,
                allgatherv: s.func(c"MPI_Allgatherv")?,
                abort: s.func(c"MPI_Abort")?,
                byte,
                errors_return,
                comm_null,
            })
        }
    }
}

// ---------------------------------------------------------------- one communicator

/// The bootstrap's duplicate of the program's communicator, with the functions of its ABI.
struct Session<H> {
    api: Api<H>,
    common: Common,
    /// The duplicate. Valid until `freed`.
    comm: H,
    rank: usize,
    size: usize,
    /// Serializes the MPI calls; `true` once finalized.
    done: Mutex<bool>,
    /// Mirrors `done` for `abort`, which must not wait for the lock.
    freed: AtomicBool,
}

/// What [`Mpi`] needs of a session, whatever its ABI.
trait Ops: Send + Sync {
    fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>>;
    fn barrier(&self) -> Result<()>;
    fn broadcast(&self, root: usize, data: Option<&[u8]>) -> Result<Vec<u8>>;
    fn abort(&self, code: c_int) -> !;
    fn finalize(&self) -> Result<()>;
}

impl<H: Handle> Session<H> {
    /// Duplicate `parent` and set `MPI_ERRORS_RETURN` on the duplicate.
    fn open(api: Api<H>, common: Common, parent: H) -> Result<Session<H>> {
        let step = INIT;
        let check = |call: &str, rc: c_int| -> Result<()> {
            if rc == MPI_SUCCESS { Ok(()) } else { Err(call_err(step, call, rc, &common.error_text(rc))) }
        };
        let mut inter: c_int = 0;
        // SAFETY: `parent` is a handle of this ABI (read from the caller's MPI_Comm); MPI
        // writes one int.
        check("MPI_Comm_test_inter", unsafe { (api.comm_test_inter)(parent, &mut inter) })?;
        if inter != 0 {
            return Err(init_err("the communicator is an inter-communicator; pass an intra-communicator"));
        }
        let mut comm = api.comm_null;
        // SAFETY: as above; MPI writes the new handle into `comm`.
        check("MPI_Comm_dup", unsafe { (api.comm_dup)(parent, &mut comm) })?;
        let free_on_error = |e: BootstrapError| {
            let mut c = comm;
            // SAFETY: `c` is the duplicate made above, freed once, here, on this error path.
            unsafe { (api.comm_free)(&mut c) };
            e
        };
        // SAFETY: `comm` is our duplicate, `errors_return` the ABI's MPI_ERRORS_RETURN.
        check("MPI_Comm_set_errhandler", unsafe { (api.comm_set_errhandler)(comm, api.errors_return) })
            .map_err(free_on_error)?;
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        // SAFETY: `comm` is our duplicate; MPI writes one int each.
        check("MPI_Comm_rank", unsafe { (api.comm_rank)(comm, &mut rank) }).map_err(free_on_error)?;
        // SAFETY: as above.
        check("MPI_Comm_size", unsafe { (api.comm_size)(comm, &mut size) }).map_err(free_on_error)?;
        let (Ok(rank), Ok(size)) = (usize::try_from(rank), usize::try_from(size)) else {
            return Err(free_on_error(init_err(format!("MPI reported rank {rank} of size {size}"))));
        };
        if rank >= size {
            return Err(free_on_error(init_err(format!("MPI reported rank {rank} of size {size}"))));
        }
        Ok(Session { api, common, comm, rank, size, done: Mutex::new(false), freed: AtomicBool::new(false) })
    }

    fn lock(&self) -> Result<MutexGuard<'_, bool>> {
        let done = self.done.lock();
        if *done {
            return Err(BootstrapError::Invalid("mpi: used after finalize".into()));
        }
        Ok(done)
    }

    fn check(&self, step: &str, call: &str, rc: c_int) -> Result<()> {
        if rc == MPI_SUCCESS { Ok(()) } else { Err(call_err(step, call, rc, &self.common.error_text(rc))) }
    }

    fn bcast(&self, step: &str, buf: &mut [u8], root: usize) -> Result<()> {
        let n = c_int::try_from(buf.len()).map_err(|_| BootstrapError::Invalid(format!("{step}: too long")))?;
        // SAFETY: `buf` holds `n` bytes, which MPI reads (root) or writes (others) during the
        // call; `root` < size (checked by the callers); `comm` is live (we hold the lock and
        // it is not finalized).
        let rc = unsafe { (self.api.bcast)(buf.as_mut_ptr().cast(), n, self.api.byte, root as c_int, self.comm) };
        self.check(step, "MPI_Bcast", rc)
    }
}

/// Sizes above this do not fit MPI's `int` counts and displacements.
const MAX_COUNT: usize = c_int::MAX as usize;

impl<H: Handle> Ops for Session<H> {
    fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        let _g = self.lock()?;
        let api = &self.api;
        let len = (data.len() as u64).to_le_bytes();
        let mut lens = vec![0u8; 8 * self.size];
        // SAFETY: MPI reads 8 bytes of `len` and writes 8 bytes per rank into `lens`, which
        // holds 8 * size; `comm` is live.
        let rc = unsafe {
            (api.allgather)(len.as_ptr().cast(), 8, api.byte, lens.as_mut_ptr().cast(), 8, api.byte, self.comm)
        };
        self.check("allgather (sizes)", "MPI_Allgather", rc)?;
        let lens: Vec<u64> =
            lens.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk"))).collect();
        // Every rank sees the same sizes, so every rank takes the same branch below.
        let total: u64 = lens.iter().sum();
        if total > MAX_COUNT as u64 {
            return Err(BootstrapError::Invalid(format!(
                "mpi allgather: {total} bytes in all exceed MPI's int counts ({MAX_COUNT})"
            )));
        }
        let lens: Vec<usize> = lens.into_iter().map(|l| l as usize).collect();
        let total = total as usize;
        if total == 0 {
            return Ok(vec![Vec::new(); self.size]);
        }
        let mut buf = vec![0u8; total];
        let mine = data.len() as c_int;
        if lens.iter().all(|&l| l == lens[0]) {
            // SAFETY: each rank sends `mine` (== lens[0]) bytes of `data` and receives
            // lens[0] bytes from each of `size` ranks into `buf`, which holds their sum.
            let rc = unsafe {
                (api.allgather)(
                    data.as_ptr().cast(),
                    mine,
                    api.byte,
                    buf.as_mut_ptr().cast(),
                    mine,
                    api.byte,
                    self.comm,
                )
            };
            self.check("allgather", "MPI_Allgather", rc)?;
        } else {
            let counts: Vec<c_int> = lens.iter().map(|&l| l as c_int).collect();
            let displs: Vec<c_int> = lens
                .iter()
                .scan(0usize, |at, &l| {
                    let d = *at;
                    *at += l;
                    Some(d as c_int)
                })
                .collect();
            // SAFETY: `counts[r]` bytes of rank r land at `displs[r]` in `buf`; the pieces
            // tile `buf` exactly (prefix sums of the sizes, whose sum is its length, checked to
            // fit an int); `data` holds `mine` == counts[rank] bytes.
            let rc = unsafe {
                (api.allgatherv)(
                    data.as_ptr().cast(),
                    mine,
                    api.byte,
                    buf.as_mut_ptr().cast(),
                    counts.as_ptr(),
                    displs.as_ptr(),
                    api.byte,
                    self.comm,
                )
            };
            self.check("allgather", "MPI_Allgatherv", rc)?;
        }
        let mut at = 0;
        Ok(lens
            .iter()
            .map(|&l| {
                at += l;
                buf[at - l..at].to_vec()
            })
            .collect())
    }

    fn barrier(&self) -> Result<()> {
        let _g = self.lock()?;
        // SAFETY: `comm` is live.
        let rc = unsafe { (self.api.barrier)(self.comm) };
        self.check("barrier", "MPI_Barrier", rc)
    }

    fn broadcast(&self, root: usize, data: Option<&[u8]>) -> Result<Vec<u8>> {
        if root >= self.size {
            return Err(BootstrapError::Invalid(format!("broadcast root {root} out of range (size {})", self.size)));
        }
        let _g = self.lock()?;
        let me_root = self.rank == root;
        let mine = if me_root { data.unwrap_or(&[]) } else { &[] };
        let mut len = (mine.len() as u64).to_le_bytes();
        self.bcast("broadcast (size)", &mut len, root)?;
        // The same on every rank, so every rank returns the same way.
        let n = u64::from_le_bytes(len);
        if n > MAX_COUNT as u64 {
            return Err(BootstrapError::Invalid(format!(
                "mpi broadcast: {n} bytes exceed MPI's int counts ({MAX_COUNT})"
            )));
        }
        let mut buf = if me_root { mine.to_vec() } else { vec![0u8; n as usize] };
        if n > 0 {
            self.bcast("broadcast", &mut buf, root)?;
        }
        Ok(buf)
    }

    fn abort(&self, code: c_int) -> ! {
        // Not the lock: another thread may hold it inside a collective that will never end.
        if !self.freed.load(Ordering::Acquire) && !self.common.is_finalized("abort").unwrap_or(true) {
            // SAFETY: `comm` is live (not freed, MPI not finalized). MPI_Abort ends the job;
            // should it return, we exit below.
            unsafe { (self.api.abort)(self.comm, code) };
        }
        std::process::exit(code)
    }

    fn finalize(&self) -> Result<()> {
        let mut done = self.lock()?;
        // After MPI_Finalize the duplicate is gone with everything else, and MPI_Comm_free may
        // not be called.
        if !self.common.is_finalized("finalize")? {
            let mut c = self.comm;
            // SAFETY: `c` is our live duplicate, freed once: `done` is set below and every
            // later call fails in `lock`.
            let rc = unsafe { (self.api.comm_free)(&mut c) };
            self.check("finalize", "MPI_Comm_free", rc)?;
        }
        *done = true;
        self.freed.store(true, Ordering::Release);
        Ok(())
    }
}

// ---------------------------------------------------------------- the bootstrap

/// Which MPI ABI the loaded library has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// MPICH and its derivatives (Intel MPI, MVAPICH, Cray MPICH): `int` handles.
    Mpich,
    /// Open MPI: pointer handles.
    OpenMpi,
}

impl Flavor {
    /// `mpich` or `openmpi`.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Mpich => "mpich",
            Flavor::OpenMpi => "openmpi",
        }
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flavor::Mpich => "MPICH ABI",
            Flavor::OpenMpi => "Open MPI ABI",
        })
    }
}

/// The MPI library found in the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    flavor: Flavor,
    version: String,
}

impl Library {
    /// Its ABI.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The first line of its `MPI_Get_library_version` (e.g. `MPICH Version: 4.0.2`,
    /// `Open MPI v4.1.4, package: Debian OpenMPI, ...`).
    pub fn version(&self) -> &str {
        &self.version
    }
}

impl fmt::Display for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.version, self.flavor)
    }
}

/// The bootstrap over a duplicate of the program's MPI communicator.
///
/// ```no_run
/// use std::ffi::c_void;
/// use oxshmem_bootstrap::{Bootstrap, mpi::Mpi};
/// # let comm_world: i32 = 0x4400_0000;
/// // `attr.mpi_comm` as a C program fills it: the address of its MPI_Comm variable.
/// let mpi_comm: *const c_void = (&comm_world as *const i32).cast();
/// // SAFETY: `mpi_comm` points at a live MPI_Comm of the loaded MPI; MPI is initialized.
/// let boot = unsafe { Mpi::from_comm(mpi_comm) }?;
/// println!("PE {} of {} over {}", boot.rank(), boot.size(), boot.library());
/// let all = boot.allgather(b"hello")?;
/// boot.finalize()?;
/// # Ok::<(), oxshmem_bootstrap::BootstrapError>(())
/// ```
pub struct Mpi {
    library: Library,
    rank: usize,
    size: usize,
    ops: Box<dyn Ops>,
}

impl fmt::Debug for Mpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mpi")
            .field("library", &self.library)
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl Mpi {
    /// Bootstrap over the communicator `*comm` (`attr.mpi_comm` of
    /// `NVSHMEMX_INIT_WITH_MPI_COMM`), or over `MPI_COMM_WORLD` when `comm` is NULL (as
    /// NVSHMEM does). Collective over that communicator: it duplicates it.
    ///
    /// Errors, all naming `NVSHMEMX_INIT_WITH_MPI_COMM`: no MPI library in the process; MPI
    /// not initialized, or finalized already; a communicator that is `MPI_COMM_NULL`, an
    /// inter-communicator, or (MPICH's ABI) not a communicator handle at all; `comm` pointing
    /// at Open MPI's `MPI_COMM_WORLD` object instead of at a variable holding it; a failing MPI
    /// call (named, with its return code).
    ///
    /// # Safety
    ///
    /// `comm` must be NULL or point to a readable, initialized `MPI_Comm` of the MPI library
    /// loaded in this process (an `int` for MPICH's ABI, a pointer for Open MPI's), and that
    /// communicator must be valid — not freed — until this returns. The same thread-level
    /// rules as for any MPI call apply: no other thread may be calling MPI concurrently unless
    /// MPI was initialized with `MPI_THREAD_MULTIPLE`.
    pub unsafe fn from_comm(comm: *const c_void) -> Result<Mpi> {
        let syms = Symbols::find()
            .ok_or_else(|| init_err("no MPI library is loaded in this process (MPI_Comm_rank not found)"))?;
        let common = Common::load(&syms)?;
        if !common.is_initialized(INIT)? {
            return Err(init_err("MPI is not initialized (call MPI_Init first)"));
        }
        if common.is_finalized(INIT)? {
            return Err(init_err("MPI is finalized already (MPI_Finalize was called)"));
        }
        let version = common.version();
        let ompi_world = syms.get(c"ompi_mpi_comm_world");
        let (flavor, rank, size, ops): (Flavor, usize, usize, Box<dyn Ops>) = if !ompi_world.is_null() {
            let sym = |name: &CStr| {
                let p = syms.get(name);
                if p.is_null() {
                    Err(init_err(format!("Open MPI without its symbol {}", name.to_string_lossy())))
                } else {
                    Ok(PtrHandle(p))
                }
            };
            let (byte, errors_return) = (sym(c"ompi_mpi_byte")?, sym(c"ompi_mpi_errors_return")?);
            let (null, self_) = (sym(c"ompi_mpi_comm_null")?, sym(c"ompi_mpi_comm_self")?);
            let world = PtrHandle(ompi_world);
            let parent = if comm.is_null() {
                world
            } else {
                if [world, self_, null].iter().any(|h| h.0.cast_const() == comm) {
                    return Err(init_err(
                        "attr.mpi_comm points at an Open MPI communicator object, not at an MPI_Comm \
                         variable: pass the address of the variable (&comm)",
                    ));
                }
                // SAFETY: the caller guarantees `comm` points to an MPI_Comm of the loaded MPI,
                // which is Open MPI: a pointer. Unaligned read: no assumption on the caller's
                // storage.
                PtrHandle(unsafe { comm.cast::<*mut c_void>().read_unaligned() })
            };
            if parent.0.is_null() {
                return Err(init_err("the MPI_Comm is a NULL pointer, not an Open MPI communicator"));
            }
            if parent == null {
                return Err(init_err("the communicator is MPI_COMM_NULL"));
            }
            // SAFETY: Open MPI's handles are pointers, and these are its MPI_BYTE,
            // MPI_ERRORS_RETURN and MPI_COMM_NULL (`&ompi_mpi_byte`, ... in its mpi.h).
            let api = unsafe { Api::load(&syms, byte, errors_return, null) }?;
            let s = Session::open(api, common, parent)?;
            (Flavor::OpenMpi, s.rank, s.size, Box::new(s))
        } else {
            let parent = if comm.is_null() {
                mpich::COMM_WORLD
            } else {
                let addr = comm as usize;
                if addr == mpich::COMM_WORLD as usize || addr == mpich::COMM_SELF as usize {
                    return Err(init_err(format!(
                        "attr.mpi_comm is {addr:#x}, MPICH's {} itself, not the address of an \
                         MPI_Comm variable: pass &comm",
                        if addr == mpich::COMM_WORLD as usize { "MPI_COMM_WORLD" } else { "MPI_COMM_SELF" }
                    )));
                }
                // SAFETY: the caller guarantees `comm` points to an MPI_Comm of the loaded MPI,
                // which has MPICH's ABI: an int.
                unsafe { comm.cast::<c_int>().read_unaligned() }
            };
            if let Some(why) = mpich::comm_problem(parent) {
                return Err(init_err(why));
            }
            let h = IntHandle;
            // SAFETY: MPICH's handles are ints, and these are its MPI_BYTE, MPI_ERRORS_RETURN
            // and MPI_COMM_NULL (mpi.h of MPICH 4.0.2).
            let api = unsafe { Api::load(&syms, h(mpich::BYTE), h(mpich::ERRORS_RETURN), h(mpich::COMM_NULL)) }?;
            let s = Session::open(api, common, h(parent))?;
            (Flavor::Mpich, s.rank, s.size, Box::new(s))
        };
        Ok(Mpi { library: Library { flavor, version }, rank, size, ops })
    }

    /// The MPI library found in the process, and its ABI.
    pub fn library(&self) -> &Library {
        &self.library
    }
}

impl Bootstrap for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn name(&self) -> &'static str {
        PROTOCOL
    }

    fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.ops.allgather(data)
    }

    fn barrier(&self) -> Result<()> {
        self.ops.barrier()
    }

    fn broadcast(&self, root: usize, data: Option<&[u8]>) -> Result<Vec<u8>> {
        self.ops.broadcast(root, data)
    }

    /// `MPI_Abort` on the bootstrap's communicator, which ends the whole MPI job (every
    /// process of `MPI_COMM_WORLD` with the common implementations), after printing `msg`.
    fn abort(&self, code: i32, msg: &str) -> ! {
        eprintln!("{msg}");
        self.ops.abort(code)
    }

    /// Frees the duplicate communicator (`MPI_Comm_free`, collective), unless MPI is
    /// finalized already. MPI itself stays initialized: it is the program's.
    fn finalize(&self) -> Result<()> {
        self.ops.finalize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_handle_checks() {
        assert_eq!(mpich::comm_problem(mpich::COMM_WORLD), None);
        assert_eq!(mpich::comm_problem(mpich::COMM_SELF), None);
        // A duplicate and a split communicator as MPICH 4.0.2 numbers them (direct and
        // indirect kinds).
        assert_eq!(mpich::comm_problem(0x8400_0002_u32 as c_int), None);
        assert_eq!(mpich::comm_problem(0xc400_1003_u32 as c_int), None);
        assert!(mpich::comm_problem(mpich::COMM_NULL).unwrap().contains("MPI_COMM_NULL"));
        // MPI_BYTE is a datatype, 0 and small integers are nothing.
        for bad in [mpich::BYTE, mpich::ERRORS_RETURN, 0, 1, 12345] {
            let why = mpich::comm_problem(bad).unwrap();
            assert!(why.contains("is not an MPICH communicator handle"), "{why}");
        }
    }

    #[test]
    fn call_errors_name_the_call_and_the_code() {
        let e = call_err("allgather", "MPI_Allgatherv", 5, "MPI_ERR_COMM: invalid communicator").to_string();
        assert_eq!(
            e,
            "bootstrap (mpi): allgather: MPI_Allgatherv: returned error code 5 (MPI_ERR_COMM: invalid communicator)"
        );
        assert_eq!(
            call_err("barrier", "MPI_Barrier", 16, "").to_string(),
            "bootstrap (mpi): barrier: MPI_Barrier: returned error code 16"
        );
        assert_eq!(
            init_err("MPI is not initialized (call MPI_Init first)").to_string(),
            "bootstrap (mpi): NVSHMEMX_INIT_WITH_MPI_COMM: MPI is not initialized (call MPI_Init first)"
        );
    }

    #[test]
    fn library_text() {
        let buf: Vec<c_char> =
            b"MPICH Version:\t4.0.2\nMPICH Release date: x\0junk".iter().map(|&b| b as c_char).collect();
        assert_eq!(text_of(&buf, buf.len() as c_int), "MPICH Version:\t4.0.2\nMPICH Release date: x");
        assert_eq!(text_of(&buf, 5), "MPICH");
        assert_eq!(text_of(&buf, -1), "");
        let lib = Library { flavor: Flavor::OpenMpi, version: "Open MPI v4.1.4".into() };
        assert_eq!(lib.to_string(), "Open MPI v4.1.4 (Open MPI ABI)");
        assert_eq!(Flavor::Mpich.name(), "mpich");
    }
}
