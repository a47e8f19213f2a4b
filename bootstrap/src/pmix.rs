//! PMIx client (feature `pmix`): the bootstrap under `srun --mpi=pmix` and OpenMPI's `mpirun`.
//!
//! PMIx is a library protocol — the wire format between client and server is private to
//! libpmix — so this module links Debian's libpmix 4.2 (`libpmix-dev`, found by `build.rs`)
//! and declares the few functions and types it needs itself (`pmix.h`, `pmix_common.h`;
//! the `pmix-sys` crate wants PMIx 5). The layouts below were checked against the 4.2
//! headers with a C compiler (`sizeof(pmix_value_t) == 32`, `sizeof(pmix_info_t) == 552`,
//! `sizeof(pmix_proc_t) == 260`) and are asserted at compile time.
//!
//! The collectives are the PMIx "modex": `PMIx_Put` a byte object under a fresh key,
//! `PMIx_Commit`, `PMIx_Fence` with `PMIX_COLLECT_DATA`, then `PMIx_Get` every other rank's
//! value (served from the local store after the fence). Byte objects carry any bytes of any
//! length, so no hex or chunking is needed here. All `unsafe` of the module is the FFI.

use std::ffi::{CStr, CString, c_char, c_int};

use parking_lot::{Mutex, MutexGuard};

use crate::{Bootstrap, BootstrapError, Result, mapping};

const PROTOCOL: &str = "pmix";

const PMIX_MAX_NSLEN: usize = 255;
const PMIX_MAX_KEYLEN: usize = 511;
const PMIX_RANK_WILDCARD: u32 = u32::MAX - 1;
const PMIX_SUCCESS: c_int = 0;
const PMIX_ERR_NOT_FOUND: c_int = -46;
const PMIX_ERR_UNREACH: c_int = -25;
/// `pmix_data_type_t` values (`pmix_common.h`).
const PMIX_BOOL: u16 = 1;
const PMIX_SIZE: u16 = 4;
const PMIX_INT: u16 = 6;
const PMIX_INT32: u16 = 9;
const PMIX_INT64: u16 = 10;
const PMIX_UINT: u16 = 11;
const PMIX_UINT16: u16 = 13;
const PMIX_UINT32: u16 = 14;
const PMIX_UINT64: u16 = 15;
const PMIX_BYTE_OBJECT: u16 = 27;
/// `PMIX_GLOBAL`: share with every process of the job.
const PMIX_GLOBAL: u8 = 3;

const KEY_JOB_SIZE: &CStr = c"pmix.job.size";
const KEY_NODEID: &CStr = c"pmix.nodeid";
const KEY_COLLECT_DATA: &str = "pmix.collect";

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct PmixProc {
    nspace: [c_char; PMIX_MAX_NSLEN + 1],
    rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct PmixByteObject {
    bytes: *mut c_char,
    size: usize,
}

/// The members of `pmix_value_t`'s union that we read or write; `_pad` gives it the size and
/// alignment of the whole C union (its largest member, `pmix_envar_t`, is 24 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
union PmixValueData {
    flag: bool,
    size: usize,
    integer: c_int,
    int32: i32,
    int64: i64,
    uint: u32,
    uint16: u16,
    uint32: u32,
    uint64: u64,
    bo: PmixByteObject,
    _pad: [u64; 3],
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct PmixValue {
    type_: u16,
    data: PmixValueData,
}

/// `pmix_info_t`.
#[repr(C)]
struct PmixInfo {
    key: [c_char; PMIX_MAX_KEYLEN + 1],
    flags: u32,
    value: PmixValue,
}

const _: () = {
    assert!(size_of::<PmixProc>() == 260);
    assert!(std::mem::offset_of!(PmixProc, rank) == 256);
    assert!(size_of::<PmixValue>() == 32 && align_of::<PmixValue>() == 8);
    assert!(std::mem::offset_of!(PmixValue, data) == 8);
    assert!(size_of::<PmixInfo>() == 552);
    assert!(std::mem::offset_of!(PmixInfo, flags) == 512);
    assert!(std::mem::offset_of!(PmixInfo, value) == 520);
};

unsafe extern "C" {
    fn PMIx_Init(proc_: *mut PmixProc, info: *mut PmixInfo, ninfo: usize) -> c_int;
    fn PMIx_Finalize(info: *const PmixInfo, ninfo: usize) -> c_int;
    fn PMIx_Abort(status: c_int, msg: *const c_char, procs: *mut PmixProc, nprocs: usize) -> c_int;
    fn PMIx_Put(scope: u8, key: *const c_char, val: *mut PmixValue) -> c_int;
    fn PMIx_Commit() -> c_int;
    fn PMIx_Fence(procs: *const PmixProc, nprocs: usize, info: *const PmixInfo, ninfo: usize) -> c_int;
    fn PMIx_Get(
        proc_: *const PmixProc,
        key: *const c_char,
        info: *const PmixInfo,
        ninfo: usize,
        val: *mut *mut PmixValue,
    ) -> c_int;
    fn PMIx_Value_destruct(val: *mut PmixValue);
    fn PMIx_Error_string(status: c_int) -> *const c_char;
}

fn status_text(rc: c_int) -> String {
    // SAFETY: PMIx_Error_string returns a pointer to a static NUL-terminated string (or NULL
    // for codes it does not know, which we check).
    let p = unsafe { PMIx_Error_string(rc) };
    let name = if p.is_null() {
        "unknown status".to_string()
    } else {
        // SAFETY: non-NULL, NUL-terminated, static (see above).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    format!("{name} ({rc})")
}

fn check(step: &str, rc: c_int) -> Result<()> {
    if rc == PMIX_SUCCESS { Ok(()) } else { Err(proto_err(step, status_text(rc))) }
}

fn proto_err(step: &str, reason: impl Into<String>) -> BootstrapError {
    BootstrapError::Protocol { protocol: PROTOCOL, step: step.to_string(), reason: reason.into() }
}

/// A value PMIx returned from `PMIx_Get`, released with `PMIX_VALUE_RELEASE` semantics
/// (destruct, then free) when dropped.
struct Owned(*mut PmixValue);

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a successful PMIx_Get, which allocates the value with
        // malloc; PMIX_VALUE_RELEASE is exactly destruct + free, and we do it once.
        unsafe {
            PMIx_Value_destruct(self.0);
            libc::free(self.0.cast());
        }
    }
}

impl Owned {
    fn value(&self) -> &PmixValue {
        // SAFETY: non-NULL (checked by `get`) and valid until we free it in `drop`.
        unsafe { &*self.0 }
    }

    /// Any integer type PMIx may use for a count or an id.
    fn as_u64(&self) -> Option<u64> {
        let v = self.value();
        // SAFETY: each arm reads the union member that `type_` says is live.
        unsafe {
            match v.type_ {
                PMIX_UINT32 => Some(v.data.uint32 as u64),
                PMIX_UINT => Some(v.data.uint as u64),
                PMIX_UINT16 => Some(v.data.uint16 as u64),
                PMIX_UINT64 => Some(v.data.uint64),
                PMIX_SIZE => Some(v.data.size as u64),
                PMIX_INT => u64::try_from(v.data.integer).ok(),
                PMIX_INT32 => u64::try_from(v.data.int32).ok(),
                PMIX_INT64 => u64::try_from(v.data.int64).ok(),
                _ => None,
            }
        }
    }

    fn as_bytes(&self) -> Option<Vec<u8>> {
        let v = self.value();
        if v.type_ != PMIX_BYTE_OBJECT {
            return None;
        }
        // SAFETY: `type_` says `bo` is the live member.
        let bo = unsafe { v.data.bo };
        if bo.size == 0 {
            return Some(Vec::new());
        }
        if bo.bytes.is_null() {
            return None;
        }
        // SAFETY: PMIx owns `size` bytes at `bytes` until the value is released, which
        // happens after this copy.
        Some(unsafe { std::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size) }.to_vec())
    }
}

/// A PMIx client: rank, size, and the job's data store.
///
/// ```no_run
/// use oxshmem_bootstrap::{Bootstrap, pmix::Pmix};
/// let pmix = Pmix::init()?; // inside `srun --mpi=pmix -n 4 prog` or `mpirun -n 4 prog`
/// let all = pmix.allgather(b"hello")?;
/// pmix.finalize()?;
/// # Ok::<(), oxshmem_bootstrap::BootstrapError>(())
/// ```
pub struct Pmix {
    me: PmixProc,
    size: usize,
    nspace: String,
    /// Collective counter: each allgather or broadcast uses a fresh key `oxs.<epoch>`.
    state: Mutex<State>,
    nodes: std::sync::OnceLock<Option<Vec<usize>>>,
}

struct State {
    epoch: u64,
    finalized: bool,
}

impl std::fmt::Debug for Pmix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmix")
            .field("nspace", &self.nspace)
            .field("rank", &self.me.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl Pmix {
    /// `PMIx_Init`: connect to the PMIx server named by the environment (`PMIX_*` variables
    /// the launcher set), and read this process's rank and the job size.
    pub fn init() -> Result<Self> {
        let mut me = PmixProc { nspace: [0; PMIX_MAX_NSLEN + 1], rank: 0 };
        // SAFETY: `me` is a valid pmix_proc_t for PMIx to fill; no info array (NULL, 0).
        let rc = unsafe { PMIx_Init(&mut me, std::ptr::null_mut(), 0) };
        if rc == PMIX_ERR_UNREACH {
            return Err(proto_err(
                "PMIx_Init",
                format!(
                    "{}: no PMIx server to talk to (start the job with `srun --mpi=pmix` or \
                     OpenMPI's `mpirun`)",
                    status_text(rc)
                ),
            ));
        }
        check("PMIx_Init", rc)?;
        // SAFETY: PMIx_Init wrote a NUL-terminated namespace of at most PMIX_MAX_NSLEN
        // characters into the array, which ends with a NUL we never overwrite.
        let nspace = unsafe { CStr::from_ptr(me.nspace.as_ptr()) }.to_string_lossy().into_owned();
        let job = PmixProc { rank: PMIX_RANK_WILDCARD, ..me };
        let size = get(&job, KEY_JOB_SIZE, "get job size (pmix.job.size)")?
            .as_u64()
            .ok_or_else(|| proto_err("get job size", "pmix.job.size is not an integer"))? as usize;
        if size == 0 || me.rank as usize >= size {
            return Err(proto_err("PMIx_Init", format!("rank {} is out of range for size {size}", me.rank)));
        }
        Ok(Pmix {
            me,
            size,
            nspace,
            state: Mutex::new(State { epoch: 0, finalized: false }),
            nodes: std::sync::OnceLock::new(),
        })
    }

    /// The job's namespace (e.g. `slurm.pmix.12.0`).
    pub fn nspace(&self) -> &str {
        &self.nspace
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        let st = self.state.lock();
        if st.finalized {
            return Err(BootstrapError::Invalid("pmix: used after finalize".into()));
        }
        Ok(st)
    }

    fn proc_of(&self, rank: usize) -> PmixProc {
        PmixProc { rank: rank as u32, ..self.me }
    }

    fn put_blob(&self, key: &CStr, data: &[u8]) -> Result<()> {
        let step = format!("PMIx_Put {}", key.to_string_lossy());
        let mut val = PmixValue {
            type_: PMIX_BYTE_OBJECT,
            data: PmixValueData {
                bo: PmixByteObject {
                    // PMIx copies the bytes and never writes through this pointer.
                    bytes: data.as_ptr().cast_mut().cast(),
                    size: data.len(),
                },
            },
        };
        // SAFETY: `key` is NUL-terminated and shorter than PMIX_MAX_KEYLEN; `val` describes
        // `data`, which outlives the call; PMIx_Put copies the value.
        check(&step, unsafe { PMIx_Put(PMIX_GLOBAL, key.as_ptr(), &mut val) })?;
        // SAFETY: no arguments.
        check("PMIx_Commit", unsafe { PMIx_Commit() })
    }

    /// `PMIx_Fence` over the whole job, collecting the data put so far when `collect`.
    fn fence(&self, step: &str, collect: bool) -> Result<()> {
        let job = PmixProc { rank: PMIX_RANK_WILDCARD, ..self.me };
        let mut info = PmixInfo {
            key: [0; PMIX_MAX_KEYLEN + 1],
            flags: 0,
            value: PmixValue { type_: PMIX_BOOL, data: PmixValueData { _pad: [0; 3] } },
        };
        for (d, s) in info.key.iter_mut().zip(KEY_COLLECT_DATA.bytes()) {
            *d = s as c_char;
        }
        info.value.data.flag = true;
        let (ip, n) = if collect { (&info as *const PmixInfo, 1) } else { (std::ptr::null(), 0) };
        // SAFETY: `job` is one valid pmix_proc_t; `ip` is NULL or points to one valid
        // pmix_info_t; both outlive the (blocking) call.
        check(step, unsafe { PMIx_Fence(&job, 1, ip, n) })
    }

    fn get_blob(&self, rank: usize, key: &CStr, step: &str) -> Result<Vec<u8>> {
        get(&self.proc_of(rank), key, step)?
            .as_bytes()
            .ok_or_else(|| proto_err(step, format!("rank {rank}'s value is not a byte object")))
    }

    fn fetch_mapping(&self) -> Option<Vec<usize>> {
        let ids: Option<Vec<usize>> = (0..self.size)
            .map(|r| get(&self.proc_of(r), KEY_NODEID, "get pmix.nodeid").ok()?.as_u64().map(|id| id as usize))
            .collect();
        ids.map(|ids| mapping::renumber(&ids))
    }
}

/// `PMIx_Get(proc, key)`.
fn get(proc_: &PmixProc, key: &CStr, step: &str) -> Result<Owned> {
    let mut out: *mut PmixValue = std::ptr::null_mut();
    // SAFETY: `proc_` is a valid pmix_proc_t, `key` NUL-terminated, no info; PMIx stores a
    // malloc'd value in `out` on success, which `Owned` releases.
    let rc = unsafe { PMIx_Get(proc_, key.as_ptr(), std::ptr::null(), 0, &mut out) };
    if rc == PMIX_ERR_NOT_FOUND {
        return Err(proto_err(step, format!("rank {}: no value {}", proc_.rank, key.to_string_lossy())));
    }
    check(step, rc)?;
    if out.is_null() {
        return Err(proto_err(step, "PMIx_Get succeeded without a value"));
    }
    Ok(Owned(out))
}

fn epoch_key(epoch: u64) -> CString {
    CString::new(format!("oxs.{epoch}")).unwrap_or_default()
}

impl Bootstrap for Pmix {
    fn rank(&self) -> usize {
        self.me.rank as usize
    }

    fn size(&self) -> usize {
        self.size
    }

    fn name(&self) -> &'static str {
        PROTOCOL
    }

    fn node_mapping(&self) -> Option<Vec<usize>> {
        self.nodes.get_or_init(|| self.fetch_mapping()).clone()
    }

    fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut st = self.lock()?;
        st.epoch += 1;
        let key = epoch_key(st.epoch);
        self.put_blob(&key, data)?;
        self.fence("allgather: PMIx_Fence", true)?;
        let me = self.rank();
        (0..self.size)
            .map(|r| {
                if r == me {
                    Ok(data.to_vec())
                } else {
                    self.get_blob(r, &key, &format!("allgather: blob of rank {r}"))
                }
            })
            .collect()
    }

    fn barrier(&self) -> Result<()> {
        let _st = self.lock()?;
        self.fence("barrier: PMIx_Fence", false)
    }

    fn broadcast(&self, root: usize, data: Option<&[u8]>) -> Result<Vec<u8>> {
        if root >= self.size {
            return Err(BootstrapError::Invalid(format!("broadcast root {root} out of range (size {})", self.size)));
        }
        let mut st = self.lock()?;
        st.epoch += 1;
        let key = epoch_key(st.epoch);
        let mine = data.unwrap_or(&[]);
        if self.rank() == root {
            self.put_blob(&key, mine)?;
        }
        self.fence("broadcast: PMIx_Fence", true)?;
        if self.rank() == root {
            Ok(mine.to_vec())
        } else {
            self.get_blob(root, &key, &format!("broadcast: data of rank {root}"))
        }
    }

    fn abort(&self, code: i32, msg: &str) -> ! {
        eprintln!("{msg}");
        let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // SAFETY: `c` is NUL-terminated; NULL procs with 0 count means "my whole namespace".
        unsafe { PMIx_Abort(code, c.as_ptr(), std::ptr::null_mut(), 0) };
        std::process::exit(code)
    }

    fn finalize(&self) -> Result<()> {
        let mut st = self.lock()?;
        // SAFETY: no info array.
        check("PMIx_Finalize", unsafe { PMIx_Finalize(std::ptr::null(), 0) })?;
        st.finalized = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_strings_come_from_the_library() {
        assert!(status_text(PMIX_ERR_NOT_FOUND).contains("(-46)"));
        assert!(status_text(PMIX_SUCCESS).to_ascii_uppercase().contains("SUCCESS"));
    }
}
