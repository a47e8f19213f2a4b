//! NVSHMEM's teams: `nvshmem_team_t` is an integer index into a per-process table of the team
//! records of [`crate::handles`], so an NVSHMEM team and an OpenSHMEM team are the same team.
//!
//! Indices 0, 1 and 2 are the world, the PEs that share memory with this one, and this PE's
//! node — the same team here, since a node is the set of PEs that map each other's memory.
//! Index 3, `NVSHMEMX_TEAM_SAME_MYPE_NODE` (the PEs with this PE's place on every node), is
//! created by the NVSHMEM inits when every node holds the same number of PEs in consecutive
//! blocks. Teams split by the program get indices from 7 on (`NVSHMEM_TEAMS_MIN`); a destroyed
//! index is never handed out again, so a stale handle gets a clear error.

use std::ffi::{c_int, c_long};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

use oxshmem_rt::{Result, Team};

use super::{NvTeam, NvTeamConfig, code};
use crate::error::{count, invalid, ok, report};
use crate::handles::{self, OpaqueTeam, SHMEM_TEAM_SHARED, SHMEM_TEAM_WORLD, ShmemTeam};

/// `NVSHMEM_TEAM_INVALID`.
pub(crate) const INVALID: NvTeam = -1;
/// `NVSHMEMX_TEAM_SAME_MYPE_NODE`.
const SAME_MYPE_NODE: NvTeam = 3;
/// `NVSHMEM_TEAMS_MIN`: the first index of a team the program makes.
const TEAMS_MIN: NvTeam = 7;
/// Teams a program may create over its life.
pub(crate) const MAX_TEAMS: usize = 4096;

/// Index -> team handle (null: never used, or destroyed).
static TABLE: [AtomicPtr<OpaqueTeam>; MAX_TEAMS] = [const { AtomicPtr::new(null_mut()) }; MAX_TEAMS];
/// The next index to hand out.
static NEXT: AtomicI32 = AtomicI32::new(TEAMS_MIN);

/// `SHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS`, the same bit as OpenSHMEM's.
const MASK_NUM_CONTEXTS: c_long = 1;
/// `NVSHMEM_TEAM_CONFIG_MASK_UNIQUEID`.
const MASK_UNIQUEID: c_long = 2;

/// The team handle of NVSHMEM team `team`, or the error naming what is wrong with it.
pub(crate) fn resolve(func: &'static str, team: NvTeam) -> Result<ShmemTeam> {
    let h = match team {
        0 => SHMEM_TEAM_WORLD.load(Ordering::Acquire),
        1 | 2 => SHMEM_TEAM_SHARED.load(Ordering::Acquire),
        INVALID => {
            oxshmem_rt::raw::my_pe()?;
            return Err(invalid(func, "the team is NVSHMEM_TEAM_INVALID"));
        }
        t if t >= 0 && (t as usize) < MAX_TEAMS => TABLE[t as usize].load(Ordering::Acquire),
        t => return Err(invalid(func, format!("{t} is not a team handle"))),
    };
    if h.is_null() {
        oxshmem_rt::raw::my_pe()?;
        return Err(match team {
            SAME_MYPE_NODE => invalid(
                func,
                "NVSHMEMX_TEAM_SAME_MYPE_NODE does not exist here: it is made by nvshmem_init (not shmem_init) \
                 when every node holds the same number of PEs in consecutive blocks",
            ),
            4..TEAMS_MIN => invalid(func, format!("team {team} is internal to NVSHMEM and does not exist here")),
            _ if team < NEXT.load(Ordering::Acquire) => invalid(func, format!("team {team} was destroyed")),
            _ => invalid(func, format!("{team} is not a team handle (never returned by this library)")),
        });
    }
    Ok(h)
}

/// Runs `f` on the handle of `team`: its status, or -1 after printing why `team` is no team.
/// The predefined teams take one load and a null check (the collectives' common case costs
/// what its OpenSHMEM twin costs); everything else goes through [`resolve`].
#[inline(always)]
pub(crate) fn team_status(func: &'static str, team: NvTeam, f: impl FnOnce(ShmemTeam) -> c_int) -> c_int {
    // The hang report names the routine as the program called it.
    let _nv = oxshmem_bootstrap::status::NvshmemCall::new(func);
    let h = match team {
        0 => SHMEM_TEAM_WORLD.load(Ordering::Acquire),
        1 | 2 => SHMEM_TEAM_SHARED.load(Ordering::Acquire),
        _ => null_mut(),
    };
    if !h.is_null() {
        return f(h);
    }
    match resolve_cold(func, team) {
        Some(h) => f(h),
        None => -1,
    }
}

/// [`resolve`] off the hot path: `None` after printing the error.
#[cold]
#[inline(never)]
fn resolve_cold(func: &'static str, team: NvTeam) -> Option<ShmemTeam> {
    match resolve(func, team) {
        Ok(h) => Some(h),
        Err(e) => {
            report(func, e);
            None
        }
    }
}

/// A new index for `team` (a live record).
fn register(func: &'static str, team: Team) -> Result<NvTeam> {
    #[cfg(feature = "cuda")]
    let described = team.clone();
    let h = handles::new_team(func, team)?;
    let i = NEXT.fetch_add(1, Ordering::AcqRel);
    if i as usize >= MAX_TEAMS {
        return Err(invalid(func, format!("too many teams: at most {} over a program's life", MAX_TEAMS - 7)));
    }
    TABLE[i as usize].store(h, Ordering::Release);
    #[cfg(feature = "cuda")]
    super::gpu::team_made(func, i, &described)?;
    Ok(i)
}

/// Makes `NVSHMEMX_TEAM_SAME_MYPE_NODE` where the layout allows (collective; every PE decides
/// from the same layout, so all take the same path).
pub(crate) fn init_nv_teams(func: &'static str) -> Result<()> {
    let shmem = oxshmem_rt::current()?;
    let layout = shmem.layout()?;
    let n = shmem.n_pes();
    let nodes = layout.n_nodes().max(1);
    let ppn = n / nodes;
    let regular = n % nodes == 0 && (0..n).all(|pe| layout.node_of[pe] == pe / ppn.max(1));
    if !regular {
        return Ok(());
    }
    let me = shmem.my_pe();
    let world = shmem.team_world();
    // One split per place on a node; every PE takes part in each, and keeps the one it is in.
    for local in 0..ppn {
        let t = world.split_strided(local, ppn, nodes, oxshmem_rt::TeamConfig::default())?;
        if me % ppn == local {
            let t = t.ok_or_else(|| invalid(func, "this PE is missing from its NVSHMEMX_TEAM_SAME_MYPE_NODE"))?;
            TABLE[SAME_MYPE_NODE as usize].store(handles::new_team(func, t)?, Ordering::Release);
        }
    }
    Ok(())
}

/// `nvshmem_team_my_pe`: -1 for `NVSHMEM_TEAM_INVALID`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_my_pe(team: NvTeam) -> c_int {
    const F: &str = "nvshmem_team_my_pe";
    if team == INVALID {
        return -1;
    }
    ok(F, resolve(F, team).and_then(|h| handles::team(F, h)).and_then(|t| t.get().team.my_pe())) as c_int
}

/// `nvshmem_team_n_pes`: -1 for `NVSHMEM_TEAM_INVALID`.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_n_pes(team: NvTeam) -> c_int {
    const F: &str = "nvshmem_team_n_pes";
    if team == INVALID {
        return -1;
    }
    ok(F, resolve(F, team).and_then(|h| handles::team(F, h)).and_then(|t| t.get().team.n_pes())) as c_int
}

/// `nvshmem_team_get_config`: the team's number of contexts (NVSHMEM's form has no mask).
///
/// # Safety
/// `config` must be valid for reads and writes of an `nvshmem_team_config_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_team_get_config(team: NvTeam, config: *mut NvTeamConfig) {
    const F: &str = "nvshmem_team_get_config";
    let r = resolve(F, team).and_then(|h| handles::team(F, h)).and_then(|t| {
        if config.is_null() {
            return Err(invalid(F, "config is NULL"));
        }
        let c = t.get().team.get_config()?;
        // SAFETY: the caller's contract; checked non-null.
        unsafe { (&raw mut (*config).num_contexts).write(c.num_contexts) };
        Ok(())
    });
    ok(F, r)
}

/// `nvshmem_team_translate_pe`: -1 when the PE is in no such place, or a team is invalid.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_translate_pe(src_team: NvTeam, src_pe: c_int, dest_team: NvTeam) -> c_int {
    const F: &str = "nvshmem_team_translate_pe";
    if src_team == INVALID || dest_team == INVALID {
        return -1;
    }
    let r = resolve(F, src_team).and_then(|s| {
        let s = handles::team(F, s)?;
        let d = handles::team(F, resolve(F, dest_team)?)?;
        let Some(i) = usize::try_from(src_pe).ok().filter(|&i| i < s.get().members.len()) else {
            return Ok(None);
        };
        s.get().team.translate_pe(i, &d.get().team)
    });
    match r {
        Ok(Some(pe)) => pe as c_int,
        Ok(None) => -1,
        Err(e) => {
            report(F, e);
            -1
        }
    }
}

fn config(func: &'static str, c: *const NvTeamConfig, mask: c_long) -> Result<(oxshmem_rt::TeamConfig, i64)> {
    if mask & !(MASK_NUM_CONTEXTS | MASK_UNIQUEID) != 0 {
        return Err(invalid(func, format!("config_mask {mask:#x} has bits NVSHMEM does not define")));
    }
    if c.is_null() {
        if mask != 0 {
            return Err(invalid(func, format!("config is NULL but config_mask is {mask:#x}")));
        }
        return Ok((oxshmem_rt::TeamConfig::default(), 0));
    }
    // SAFETY: the caller's contract (a readable nvshmem_team_config_t); checked non-null.
    let num_contexts = unsafe { (*c).num_contexts };
    let mask = mask & MASK_NUM_CONTEXTS;
    let num_contexts = if mask != 0 { num_contexts.max(0) } else { 0 };
    Ok((oxshmem_rt::TeamConfig { num_contexts }, mask))
}

/// Writes the index of `team` (or `NVSHMEM_TEAM_INVALID`) to `out`.
///
/// # Safety
/// `out` must be valid for a write.
unsafe fn store(func: &'static str, team: Option<Team>, out: *mut NvTeam) -> Result<()> {
    let i = match team {
        Some(t) => register(func, t)?,
        None => INVALID,
    };
    // SAFETY: the caller's contract.
    unsafe { out.write(i) };
    Ok(())
}

/// `nvshmem_team_split_strided`: collective over `parent_team`.
///
/// # Safety
/// `config` must be NULL or readable; `new_team` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_team_split_strided(
    parent_team: NvTeam,
    pe_start: c_int,
    pe_stride: c_int,
    pe_size: c_int,
    config: *const NvTeamConfig,
    config_mask: c_long,
    new_team: *mut NvTeam,
) -> c_int {
    const F: &str = "nvshmem_team_split_strided";
    if new_team.is_null() {
        report(F, invalid(F, "new_team is NULL"));
        return -1;
    }
    // SAFETY: checked non-null; the caller's contract.
    unsafe { new_team.write(INVALID) };
    if parent_team == INVALID {
        return -1;
    }
    let r = resolve(F, parent_team).and_then(|p| {
        let p = handles::team(F, p)?;
        let start = count(F, "PE_start", pe_start)?;
        // Any sign, as OpenSHMEM 1.6 and NVSHMEM: team PE i is parent PE PE_start + i * PE_stride.
        let stride = pe_stride as isize;
        let size = count(F, "PE_size", pe_size)?;
        let (cfg, mask) = self::config(F, config, config_mask)?;
        let t = p.get().team.split_strided_signed_masked(start, stride, size, cfg, mask)?;
        // SAFETY: checked non-null above.
        unsafe { store(F, t, new_team) }
    });
    crate::error::status(F, r)
}

/// `nvshmem_team_split_2d`: collective over `parent_team`.
///
/// # Safety
/// The configs must be NULL or readable; the team pointers valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_team_split_2d(
    parent_team: NvTeam,
    xrange: c_int,
    xaxis_config: *const NvTeamConfig,
    xaxis_mask: c_long,
    xaxis_team: *mut NvTeam,
    yaxis_config: *const NvTeamConfig,
    yaxis_mask: c_long,
    yaxis_team: *mut NvTeam,
) -> c_int {
    const F: &str = "nvshmem_team_split_2d";
    if xaxis_team.is_null() || yaxis_team.is_null() {
        report(F, invalid(F, "xaxis_team or yaxis_team is NULL"));
        return -1;
    }
    // SAFETY: checked non-null; the caller's contract.
    unsafe {
        xaxis_team.write(INVALID);
        yaxis_team.write(INVALID);
    }
    if parent_team == INVALID {
        return -1;
    }
    let r = resolve(F, parent_team).and_then(|p| {
        let p = handles::team(F, p)?;
        let xrange = count(F, "xrange", xrange)?;
        let (xc, xm) = config(F, xaxis_config, xaxis_mask)?;
        let (yc, ym) = config(F, yaxis_config, yaxis_mask)?;
        let (x, y) = p.get().team.split_2d_masked(xrange, xc, xm, yc, ym)?;
        // SAFETY: checked non-null above.
        unsafe {
            store(F, x, xaxis_team)?;
            store(F, y, yaxis_team)
        }
    });
    crate::error::status(F, r)
}

/// `nvshmem_team_destroy`: `NVSHMEM_TEAM_INVALID` is ignored; the predefined teams cannot be
/// destroyed.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_destroy(team: NvTeam) {
    const F: &str = "nvshmem_team_destroy";
    if team == INVALID {
        return;
    }
    if (0..TEAMS_MIN).contains(&team) {
        crate::error::fatal(F, invalid(F, format!("team {team} is predefined and cannot be destroyed")));
    }
    let slot = ok(F, resolve(F, team).and_then(|h| handles::team(F, h)));
    ok(F, slot.get().team.clone().destroy());
    slot.destroy();
    TABLE[team as usize].store(null_mut(), Ordering::Release);
    #[cfg(feature = "cuda")]
    super::gpu::team_gone(team);
}

/// `nvshmemx_team_get_uniqueid`: a new team id for `nvshmemx_team_init`.
///
/// Teams built from an id among PEs that never split a common parent are not available here:
/// every team of oxshmem is split from a parent team, collectively. Returns
/// `NVSHMEMX_ERROR_NOT_SUPPORTED` after saying so.
///
/// # Safety
/// `uniqueid` must be NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_team_get_uniqueid(uniqueid: *mut u64) -> c_int {
    const F: &str = "nvshmemx_team_get_uniqueid";
    if !uniqueid.is_null() {
        // SAFETY: the caller's contract; checked non-null.
        unsafe { uniqueid.write(u64::MAX) };
    }
    not_supported_teams(F)
}

/// `nvshmemx_team_init`: see [`nvshmemx_team_get_uniqueid`].
///
/// # Safety
/// `team` must be NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_team_init(
    team: *mut NvTeam,
    _config: *mut NvTeamConfig,
    _config_mask: c_long,
    _npes: c_int,
    _pe_idx_in_team: c_int,
) -> c_int {
    const F: &str = "nvshmemx_team_init";
    if !team.is_null() {
        // SAFETY: the caller's contract; checked non-null.
        unsafe { team.write(INVALID) };
    }
    not_supported_teams(F)
}

fn not_supported_teams(func: &'static str) -> c_int {
    report(
        func,
        invalid(
            func,
            "teams from a team unique id are not supported by oxshmem: make the team with \
             nvshmem_team_split_strided or nvshmem_team_split_2d from a common parent team",
        ),
    );
    code::NOT_SUPPORTED
}
