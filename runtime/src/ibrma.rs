//! Blocked strided RMA: `shmem_ibput` and `shmem_ibget` (OpenSHMEM 1.6; Sandia OpenSHMEM's
//! `shmemx_ibput`/`shmemx_ibget`).
//!
//! `nblocks` blocks of `bsize` elements move between two arrays whose blocks start every `sst`
//! (source) and `dst` (destination) elements: block `k` is elements `k * sst .. k * sst + bsize`
//! of the source and `k * dst .. k * dst + bsize` of the destination. `shmem_iput`/`shmem_iget`
//! are the case `bsize == 1`. Strides are at least 1 (OpenSHMEM 1.6); blocks of a stride
//! smaller than `bsize` overlap and are written in block order. The remote array is checked to
//! be symmetric over its whole extent once, before anything moves.

use crate::error::{Error, ErrorKind, Result};
use crate::world::{Runtime, running};

fn pe_of(rt: &Runtime, pe: i32, func: &'static str) -> Result<usize> {
    if pe >= 0 && (pe as usize) < rt.n { Ok(pe as usize) } else { Err(rt.pe_error(i128::from(pe), func)) }
}

/// Bytes spanned by `nblocks` blocks of `bsize` elements of `elem` bytes starting every
/// `stride` elements (`nblocks` and `bsize` not zero).
fn extent(rt: &Runtime, func: &'static str, stride: isize, bsize: usize, nblocks: usize, elem: usize) -> Result<usize> {
    if stride < 1 {
        return Err(Error::new(rt.me, func, ErrorKind::InvalidArgument(format!("stride {stride} must be at least 1"))));
    }
    (nblocks - 1)
        .checked_mul(stride as usize)
        .and_then(|x| x.checked_add(bsize))
        .and_then(|x| x.checked_mul(elem))
        .ok_or_else(|| {
            Error::new(
                rt.me,
                func,
                ErrorKind::InvalidSize {
                    what: format!("{nblocks} blocks of {bsize} elements of {elem} bytes at stride {stride} overflow"),
                },
            )
        })
}

/// Raw `shmem_TYPE_ibput` / `shmem_ibputSIZE`: puts `nblocks` blocks of `bsize` elements of
/// `elem` bytes, block `k` from element `k * sst` of local `src` to element `k * dst` of
/// symmetric `dest` on `pe`. Returns when `src` may be reused.
///
/// # Safety
/// `src` must be valid for the blocked strided reads. `dest` is checked to be symmetric.
pub unsafe fn ibput(
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    elem: usize,
    pe: i32,
) -> Result<()> {
    const F: &str = "shmem_ibput";
    let rt = running(F)?;
    let pe = pe_of(rt, pe, F)?;
    if nblocks == 0 || bsize == 0 {
        return Ok(());
    }
    let dext = extent(rt, F, dst, bsize, nblocks, elem)?;
    extent(rt, F, sst, bsize, nblocks, elem)?;
    let d = rt.translate(dest as usize, dext, "destination", F)?;
    let block = bsize * elem;
    if dst as usize == bsize && sst as usize == bsize {
        // Contiguous on both sides: one transfer.
        // SAFETY: the source holds nblocks blocks back to back per the caller; the destination
        // range was checked as a whole above.
        return unsafe { rt.put_raw(pe, d, src, dext, F) };
    }
    for k in 0..nblocks {
        let mut a = d;
        a.offset += k * dst as usize * elem;
        // SAFETY: the caller guarantees the blocked strided source is readable; the destination
        // range was checked as a whole above. Single elements go as single stores, as iput's.
        unsafe {
            let s = src.add(k * sst as usize * elem);
            if bsize == 1 { rt.p_raw(pe, a, s, elem, F)? } else { rt.put_raw(pe, a, s, block, F)? }
        }
    }
    Ok(())
}

/// Raw `shmem_TYPE_ibget` / `shmem_ibgetSIZE`: gets `nblocks` blocks of `bsize` elements of
/// `elem` bytes, block `k` from element `k * sst` of symmetric `src` on `pe` to element
/// `k * dst` of local `dest`. Returns when `dest` holds the data.
///
/// # Safety
/// `dest` must be valid for the blocked strided writes. `src` is checked to be symmetric.
pub unsafe fn ibget(
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    elem: usize,
    pe: i32,
) -> Result<()> {
    const F: &str = "shmem_ibget";
    let rt = running(F)?;
    let pe = pe_of(rt, pe, F)?;
    if nblocks == 0 || bsize == 0 {
        return Ok(());
    }
    let dext = extent(rt, F, dst, bsize, nblocks, elem)?;
    let sext = extent(rt, F, sst, bsize, nblocks, elem)?;
    let s = rt.translate(src as usize, sext, "source", F)?;
    let block = bsize * elem;
    if dst as usize == bsize && sst as usize == bsize {
        // SAFETY: mirrored from ibput.
        return unsafe { rt.get_raw(pe, s, dest, dext, F) };
    }
    for k in 0..nblocks {
        let mut a = s;
        a.offset += k * sst as usize * elem;
        // SAFETY: as in ibput, mirrored.
        unsafe { rt.get_raw(pe, a, dest.add(k * dst as usize * elem), block, F)? };
    }
    Ok(())
}
