//! Team and context management: splits, queries, translation, destruction, contexts.
//!
//! These routines return a status (or -1, or `SHMEM_TEAM_INVALID`) as the specification says;
//! an error is printed and turned into that value. `SHMEM_TEAM_INVALID` passed where the
//! specification defines the outcome (`shmem_team_my_pe` returns -1, `shmem_team_destroy` does
//! nothing) is not an error; a destroyed or unknown handle is.

use std::ffi::{c_int, c_long};
use std::ptr::null_mut;
use std::sync::atomic::Ordering;

use oxshmem_rt::ctx::SHMEM_CTX_PRIVATE;
use oxshmem_rt::team::SHMEM_TEAM_NUM_CONTEXTS;
use oxshmem_rt::{Result, raw};

use crate::error::{count, fatal, invalid, ok, report, status};
use crate::handles::{self, CtxRec, SHMEM_TEAM_WORLD, ShmemCtx, ShmemTeam, Slot, TeamConfig, TeamRec};

/// `shmem_team_my_pe`: -1 for `SHMEM_TEAM_INVALID`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_my_pe(team: ShmemTeam) -> c_int {
    const F: &str = "shmem_team_my_pe";
    if team.is_null() {
        return -1;
    }
    ok(F, handles::team(F, team).and_then(|t| t.get().team.my_pe())) as c_int
}

/// `shmem_team_n_pes`: -1 for `SHMEM_TEAM_INVALID`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_n_pes(team: ShmemTeam) -> c_int {
    const F: &str = "shmem_team_n_pes";
    if team.is_null() {
        return -1;
    }
    ok(F, handles::team(F, team).and_then(|t| t.get().team.n_pes())) as c_int
}

/// `shmem_team_get_config`: the options selected by `config_mask`.
///
/// # Safety
/// `config` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_get_config(team: ShmemTeam, config_mask: c_long, config: *mut TeamConfig) -> c_int {
    const F: &str = "shmem_team_get_config";
    if team.is_null() {
        return -1;
    }
    let r = handles::team(F, team).and_then(|t| {
        let c = t.get().team.get_config()?;
        if config_mask & SHMEM_TEAM_NUM_CONTEXTS != 0 {
            if config.is_null() {
                return Err(invalid(F, "config is NULL"));
            }
            // SAFETY: the caller's contract; checked non-null.
            unsafe { (&raw mut (*config).num_contexts).write(c.num_contexts) };
        }
        Ok(())
    });
    status(F, r)
}

/// `shmem_team_translate_pe`: -1 when `src_pe` is not in `src_team` or its PE is not in
/// `dest_team`, or either team is `SHMEM_TEAM_INVALID`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_translate_pe(src_team: ShmemTeam, src_pe: c_int, dest_team: ShmemTeam) -> c_int {
    const F: &str = "shmem_team_translate_pe";
    if src_team.is_null() || dest_team.is_null() {
        return -1;
    }
    let r = handles::team(F, src_team).and_then(|s| {
        let d = handles::team(F, dest_team)?;
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

/// The options `config_mask` selects from `config`; the others keep their defaults, and
/// `config` is not read at all when the mask selects nothing (it may then be anything).
fn config(func: &'static str, c: *const TeamConfig, mask: c_long) -> Result<(oxshmem_rt::TeamConfig, i64)> {
    let mut out = oxshmem_rt::TeamConfig::default();
    if mask & SHMEM_TEAM_NUM_CONTEXTS != 0 {
        if c.is_null() {
            return Err(invalid(func, format!("config is NULL but config_mask is {mask:#x}")));
        }
        // SAFETY: the caller's contract (a readable shmem_team_config_t); checked non-null.
        out.num_contexts = unsafe { (*c).num_contexts };
    }
    Ok((out, mask))
}

/// Stores the handle of `team` (or `SHMEM_TEAM_INVALID`) to `out`.
///
/// # Safety
/// `out` must be valid for a write.
unsafe fn store_team(func: &'static str, team: Option<oxshmem_rt::Team>, out: *mut ShmemTeam) -> Result<()> {
    let h = match team {
        Some(t) => handles::new_team(func, t)?,
        None => null_mut(),
    };
    // SAFETY: the caller's contract.
    unsafe { out.write(h) };
    Ok(())
}

/// `shmem_team_split_strided`: collective over `parent_team`. `*new_team` is the new team on
/// its members and `SHMEM_TEAM_INVALID` elsewhere. `PE_stride` may be negative (OpenSHMEM
/// 1.6; Sandia OpenSHMEM accepts it): the team then runs in reverse parent order.
///
/// # Safety
/// `config` must be NULL or readable; `new_team` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent_team: ShmemTeam,
    pe_start: c_int,
    pe_stride: c_int,
    pe_size: c_int,
    config: *const TeamConfig,
    config_mask: c_long,
    new_team: *mut ShmemTeam,
) -> c_int {
    const F: &str = "shmem_team_split_strided";
    if new_team.is_null() {
        report(F, invalid(F, "new_team is NULL"));
        return -1;
    }
    // SAFETY: checked non-null; the caller's contract.
    unsafe { new_team.write(null_mut()) };
    if parent_team.is_null() {
        return -1;
    }
    let r = handles::team(F, parent_team).and_then(|p| {
        let start = count(F, "PE_start", pe_start)?;
        // Any sign (OpenSHMEM 1.6): team PE i is parent PE PE_start + i * PE_stride.
        let stride = pe_stride as isize;
        let size = count(F, "PE_size", pe_size)?;
        let (cfg, mask) = self::config(F, config, config_mask)?;
        let t = p.get().team.split_strided_signed_masked(start, stride, size, cfg, mask)?;
        // SAFETY: checked non-null above.
        unsafe { store_team(F, t, new_team) }
    });
    status(F, r)
}

/// `shmem_team_split_2d`: collective over `parent_team`; `*xaxis_team` is this PE's row of
/// `xrange` PEs, `*yaxis_team` its column.
///
/// # Safety
/// The configs must be NULL or readable; the team outputs must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_split_2d(
    parent_team: ShmemTeam,
    xrange: c_int,
    xaxis_config: *const TeamConfig,
    xaxis_mask: c_long,
    xaxis_team: *mut ShmemTeam,
    yaxis_config: *const TeamConfig,
    yaxis_mask: c_long,
    yaxis_team: *mut ShmemTeam,
) -> c_int {
    const F: &str = "shmem_team_split_2d";
    if xaxis_team.is_null() || yaxis_team.is_null() {
        report(F, invalid(F, "xaxis_team or yaxis_team is NULL"));
        return -1;
    }
    // SAFETY: checked non-null; the caller's contract.
    unsafe {
        xaxis_team.write(null_mut());
        yaxis_team.write(null_mut());
    }
    if parent_team.is_null() {
        return -1;
    }
    let r = handles::team(F, parent_team).and_then(|p| {
        let xrange = count(F, "xrange", xrange)?;
        let (xc, xm) = config(F, xaxis_config, xaxis_mask)?;
        let (yc, ym) = config(F, yaxis_config, yaxis_mask)?;
        let (x, y) = p.get().team.split_2d_masked(xrange, xc, xm, yc, ym)?;
        // SAFETY: checked non-null above.
        unsafe {
            store_team(F, x, xaxis_team)?;
            store_team(F, y, yaxis_team)
        }
    });
    status(F, r)
}

/// `shmem_team_destroy`: collective; nothing for `SHMEM_TEAM_INVALID`. The handle is invalid
/// afterwards (its use is an error).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_destroy(team: ShmemTeam) {
    const F: &str = "shmem_team_destroy";
    if team.is_null() {
        return;
    }
    let slot = ok(F, handles::team(F, team));
    ok(F, slot.get().team.clone().destroy());
    slot.destroy();
}

/// `shmem_team_sync`: collective over `team`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_sync(team: ShmemTeam) -> c_int {
    const F: &str = "shmem_team_sync";
    status(F, handles::team(F, team).and_then(|t| t.get().team.sync()))
}

/// A context on `team` in `*ctx`.
///
/// # Safety
/// `out` must be NULL or valid for a write.
unsafe fn create_ctx(func: &'static str, team: &'static Slot<TeamRec>, options: c_long, out: *mut ShmemCtx) -> c_int {
    if out.is_null() {
        report(func, invalid(func, "ctx is NULL"));
        return -1;
    }
    // SAFETY: the caller's contract; checked non-null.
    unsafe { out.write(null_mut()) };
    let r = team.get().team.create_ctx(options).and_then(|ctx| {
        let owner = (options & SHMEM_CTX_PRIVATE != 0).then(|| std::thread::current().id());
        let h = handles::new_ctx(func, CtxRec::new(ctx, team, owner))?;
        // SAFETY: as above.
        unsafe { out.write(h) };
        Ok(())
    });
    status(func, r)
}

/// `shmem_ctx_create`: a context on the world team.
///
/// # Safety
/// `ctx` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_create(options: c_long, ctx: *mut ShmemCtx) -> c_int {
    const F: &str = "shmem_ctx_create";
    match handles::team(F, SHMEM_TEAM_WORLD.load(Ordering::Acquire)) {
        // SAFETY: forwarded from the caller.
        Ok(world) => unsafe { create_ctx(F, world, options, ctx) },
        Err(e) => {
            let e = raw::my_pe().err().unwrap_or(e);
            report(F, e);
            -1
        }
    }
}

/// `shmem_team_create_ctx`: a context whose PE numbers are `team`'s.
///
/// # Safety
/// `ctx` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_create_ctx(team: ShmemTeam, options: c_long, ctx: *mut ShmemCtx) -> c_int {
    const F: &str = "shmem_team_create_ctx";
    if team.is_null() {
        if !ctx.is_null() {
            // SAFETY: the caller's contract; checked non-null.
            unsafe { ctx.write(null_mut()) };
        }
        return -1;
    }
    match handles::team(F, team) {
        // SAFETY: forwarded from the caller.
        Ok(t) => unsafe { create_ctx(F, t, options, ctx) },
        Err(e) => {
            report(F, e);
            -1
        }
    }
}

/// `shmem_ctx_destroy`: completes the context's operations; nothing for `SHMEM_CTX_INVALID`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_destroy(ctx: ShmemCtx) {
    const F: &str = "shmem_ctx_destroy";
    if ctx.is_null() {
        return;
    }
    if ctx == handles::default_ctx() {
        fatal(F, invalid(F, "SHMEM_CTX_DEFAULT cannot be destroyed"));
    }
    let slot = ok(F, handles::ctx_slot(F, ctx));
    // The context's operations are the default context's to the transport (see shmem_ctx_quiet).
    ok(F, raw::quiet());
    ok(F, slot.get().ctx.clone().destroy());
    slot.destroy();
}

/// `shmem_ctx_get_team`: the team `ctx` was created on (`SHMEM_TEAM_WORLD` for the default
/// context); -1 and `SHMEM_TEAM_INVALID` for `SHMEM_CTX_INVALID`.
///
/// # Safety
/// `team` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_get_team(ctx: ShmemCtx, team: *mut ShmemTeam) -> c_int {
    const F: &str = "shmem_ctx_get_team";
    if team.is_null() {
        report(F, invalid(F, "team is NULL"));
        return -1;
    }
    let r = if ctx.is_null() { Ok(None) } else { handles::ctx(F, ctx).map(Some) };
    let h = match r {
        Ok(Some(None)) => SHMEM_TEAM_WORLD.load(Ordering::Acquire),
        Ok(Some(Some(rec))) => rec.team_handle(),
        Ok(None) => null_mut(),
        Err(e) => {
            report(F, e);
            null_mut()
        }
    };
    // SAFETY: the caller's contract; checked non-null.
    unsafe { team.write(h) };
    if h.is_null() { -1 } else { 0 }
}

/// `shmem_ctx_fence`; nothing for `SHMEM_CTX_INVALID`, which has no operations to order (in
/// the specification's own example, PEs outside a team fence and quiet the invalid context
/// they got for it).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_fence(ctx: ShmemCtx) {
    const F: &str = "shmem_ctx_fence";
    if ctx.is_null() {
        return;
    }
    // Not the runtime's Ctx::fence: see shmem_ctx_quiet.
    ok(F, handles::ctx(F, ctx));
    ok(F, raw::fence());
}

/// `shmem_ctx_quiet`; nothing for `SHMEM_CTX_INVALID`, which has no operations to complete
/// (see [`shmem_ctx_fence`]).
///
/// It is the PE's quiet, not the runtime's `Ctx::quiet`, which waits only for what the
/// network transport counted against the context: this library's operations reach the
/// runtime without their context (`ops.rs` resolves it to a world PE number and calls the
/// runtime's pointer routines), so the transport counts them in the default context. Entering
/// the context's transport scope (`oxshmem::transport::CtxId::enter`) around them in `ops.rs`
/// would make it per context, as it is in Rust.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_quiet(ctx: ShmemCtx) {
    const F: &str = "shmem_ctx_quiet";
    if ctx.is_null() {
        return;
    }
    ok(F, handles::ctx(F, ctx));
    ok(F, raw::quiet());
}
