//! The card every PE hands every other at init — its host, process and segments — and the
//! exchange that deals them (one bootstrap allgather).

use oxshmem_bootstrap::Bootstrap;

use crate::error::{Error, ErrorKind, Result};

const F: &str = "shmem_init";

/// What every PE tells every other at init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PeCard {
    pub(super) host: String,
    pub(super) host_key: String,
    pub(super) pid: u32,
    pub(super) heap_fd: i32,
    pub(super) heap_len: usize,
    /// The static-data segment's descriptor and length (-1 and 0 when there is none).
    pub(super) static_fd: i32,
    pub(super) static_len: usize,
    /// The CPUs the job may use on this PE's host, as it sees them (`config::host_cpus`).
    pub(super) cpus: usize,
    /// This PE's `OXSHMEM_BARRIER` (`None`: auto); PE 0's is the job's, so all take the same.
    pub(super) barrier: Option<bool>,
}

impl PeCard {
    fn encode(&self) -> Vec<u8> {
        format!(
            "{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}",
            self.host,
            self.host_key,
            self.pid,
            self.heap_fd,
            self.heap_len,
            self.static_fd,
            self.static_len,
            self.cpus,
            match self.barrier {
                None => "auto",
                Some(true) => "central",
                Some(false) => "dissemination",
            }
        )
        .into_bytes()
    }

    fn decode(b: &[u8]) -> Option<PeCard> {
        let s = std::str::from_utf8(b).ok()?;
        let mut it = s.split('\n');
        Some(PeCard {
            host: it.next()?.to_string(),
            host_key: it.next()?.to_string(),
            pid: it.next()?.parse().ok()?,
            heap_fd: it.next()?.parse().ok()?,
            heap_len: it.next()?.parse().ok()?,
            static_fd: it.next()?.parse().ok()?,
            static_len: it.next()?.parse().ok()?,
            cpus: it.next()?.parse().ok()?,
            barrier: match it.next()? {
                "auto" => None,
                "central" => Some(true),
                "dissemination" => Some(false),
                _ => return None,
            },
        })
    }
}

/// Hands `mine` to every PE and returns every PE's card, by PE; collective.
pub(super) fn exchange(boot: &dyn Bootstrap, me: usize, mine: &PeCard) -> Result<Vec<PeCard>> {
    let all = boot.allgather(&mine.encode()).map_err(|e| Error::new(me, F, ErrorKind::Bootstrap(e.to_string())))?;
    all.iter()
        .enumerate()
        .map(|(pe, b)| {
            PeCard::decode(b)
                .ok_or_else(|| Error::new(me, F, ErrorKind::Bootstrap(format!("PE {pe} sent a malformed init record"))))
        })
        .collect()
}

/// Checks that every PE's heap file is as long as this PE's: the same `SHMEM_SYMMETRIC_SIZE`
/// (`internal` bytes of the runtime's own objects follow the user's part in each).
pub(super) fn check_heap_sizes(me: usize, cards: &[PeCard], internal: usize) -> Result<()> {
    let mine = &cards[me];
    match cards.iter().enumerate().find(|(_, c)| c.heap_len != mine.heap_len) {
        Some((pe, c)) => Err(Error::new(
            me,
            F,
            ErrorKind::CollectiveMismatch(format!(
                "SHMEM_SYMMETRIC_SIZE differs: this PE has {} bytes, PE {pe} has {} bytes",
                mine.heap_len - internal,
                c.heap_len.saturating_sub(internal)
            )),
        )),
        None => Ok(()),
    }
}

/// Checks that every PE's static-data segment is `len` bytes long, as this PE's is.
pub(super) fn check_static_sizes(me: usize, cards: &[PeCard], len: usize) -> Result<()> {
    match cards.iter().enumerate().find(|(_, c)| c.static_len != len) {
        Some((pe, c)) => Err(Error::new(
            me,
            F,
            ErrorKind::CollectiveMismatch(format!(
                "static data segment differs: this PE's executable has {len} bytes of writable data, PE {pe}'s has {} (every PE must run the same executable)",
                c.static_len
            )),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_survives_the_exchange_and_a_short_one_is_refused() {
        let card = PeCard {
            host: "node7".into(),
            host_key: "node7/5b1c".into(),
            pid: 4242,
            heap_fd: 9,
            heap_len: 1 << 30,
            static_fd: -1,
            static_len: 0,
            cpus: 2,
            barrier: Some(false),
        };
        let bytes = card.encode();
        assert_eq!(PeCard::decode(&bytes), Some(card));
        assert_eq!(PeCard::decode(&bytes[..bytes.len() - 2]), None);
    }
}
