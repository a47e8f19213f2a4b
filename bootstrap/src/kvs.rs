//! The collectives PMI-1 and PMI-2 build alike from their key-value space and barrier:
//! allgather (through rank 0's shared segment on one host, `shmgather`, with the key-value
//! space as the fallback) and broadcast, over values of any size (blobs cut into hex chunks
//! `oxs<epoch>.<rank>.<i>`, chunk 0 prefixed with the count). Each protocol supplies the
//! three calls, held under its connection's lock for the whole collective ([`Kvs`]).

use crate::wire::{hex_decode, hex_encode};
use crate::{BootstrapError, Result};

/// A PMI connection's key-value space and barrier, locked for one collective.
pub(crate) trait Kvs {
    /// Puts `value` under `key`.
    fn put(&mut self, key: &str, value: &str) -> Result<()>;
    /// Gets the value of `key` (an error when there is none).
    fn get(&mut self, key: &str) -> Result<String>;
    /// The launcher's barrier (which also commits the puts before it).
    fn barrier(&mut self) -> Result<()>;
    /// Hex characters per value.
    fn chunk_chars(&self) -> usize;
    /// A protocol error of `step`.
    fn error(&self, step: &str, reason: String) -> BootstrapError;
}

/// Puts `data` as rank `rank`'s blob of collective `epoch`.
pub(crate) fn put_blob(kvs: &mut impl Kvs, epoch: u64, rank: usize, data: &[u8]) -> Result<()> {
    let hex = hex_encode(data);
    let parts: Vec<&str> = if hex.is_empty() {
        vec![""]
    } else {
        // Hex is ASCII, so any byte offset is a char boundary.
        hex.as_bytes().chunks(kvs.chunk_chars()).map(|c| std::str::from_utf8(c).unwrap_or_default()).collect()
    };
    let count = parts.len();
    for (i, part) in parts.iter().enumerate() {
        let key = format!("oxs{epoch}.{rank}.{i}");
        if i == 0 {
            kvs.put(&key, &format!("{count}:{part}"))?;
        } else {
            kvs.put(&key, part)?;
        }
    }
    Ok(())
}

/// Gets rank `rank`'s blob of collective `epoch`.
pub(crate) fn get_blob(kvs: &mut impl Kvs, epoch: u64, rank: usize) -> Result<Vec<u8>> {
    let first = kvs.get(&format!("oxs{epoch}.{rank}.0"))?;
    let step = format!("allgather: blob of rank {rank}");
    let Some((count, part0)) = first.split_once(':') else {
        return Err(kvs.error(&step, "chunk 0 has no count prefix".into()));
    };
    let count: usize = match count.parse() {
        // A blob is at most a few MiB; a wild count means a corrupt value.
        Ok(c) if c > 0 && c <= 1 << 20 => c,
        _ => return Err(kvs.error(&step, format!("bad chunk count {count:?}"))),
    };
    let mut hex = String::with_capacity(count * kvs.chunk_chars());
    hex.push_str(part0);
    for i in 1..count {
        hex.push_str(&kvs.get(&format!("oxs{epoch}.{rank}.{i}"))?);
    }
    hex_decode(&hex).map_err(|e| kvs.error(&step, format!("corrupt value: {e}")))
}

/// Every rank's `data` (rank order), as collective `epoch` of rank `rank` of `size`; with
/// `one_node` (every rank on this host, by the launcher's mapping as this rank sees it)
/// through a shared segment.
pub(crate) fn allgather(
    kvs: &mut impl Kvs,
    epoch: u64,
    rank: usize,
    size: usize,
    one_node: bool,
    data: &[u8],
) -> Result<Vec<Vec<u8>>> {
    // The key-value space gets every blob as before (one put per rank): a slot that is
    // missing from the segment (a rank that could not open it) or too small for the blob
    // falls back to a get.
    put_blob(kvs, epoch, rank, data)?;
    let seg_key = format!("oxs{epoch}.seg");
    // Rank 0 decides for everyone (its token, or "-" for none), so that every rank runs the
    // same two barriers whatever its own view of the mapping.
    let mut seg = None;
    if rank == 0 {
        let s = if one_node { crate::shmgather::ShmGather::create(size).ok() } else { None };
        kvs.put(&seg_key, s.as_ref().map_or("-", |s| s.token()))?;
        seg = s;
    }
    kvs.barrier()?;
    if rank != 0 {
        let token = kvs.get(&seg_key)?;
        if token != "-" {
            seg = crate::shmgather::ShmGather::open(&token, size).ok();
        }
    }
    if let Some(s) = &seg {
        s.write(rank, crate::shmgather::ShmGather::fits(data.len()).then_some(data));
    }
    kvs.barrier()?;
    let mut from_kvs = 0;
    let all = (0..size)
        .map(|r| {
            if r == rank {
                return Ok(data.to_vec());
            }
            match seg.as_ref().and_then(|s| s.read(r).ok().flatten()) {
                Some(b) => Ok(b),
                None => {
                    from_kvs += 1;
                    get_blob(kvs, epoch, r)
                }
            }
        })
        .collect();
    tracing::debug!(
        target: "boot",
        epoch,
        bytes = data.len(),
        shared_segment = seg.is_some(),
        from_kvs,
        "allgather"
    );
    all
}

/// `root`'s `data` on every rank, as collective `epoch` of rank `rank`.
pub(crate) fn broadcast(kvs: &mut impl Kvs, epoch: u64, rank: usize, root: usize, data: &[u8]) -> Result<Vec<u8>> {
    if rank == root {
        put_blob(kvs, epoch, rank, data)?;
    }
    kvs.barrier()?;
    if rank == root { Ok(data.to_vec()) } else { get_blob(kvs, epoch, root) }
}
