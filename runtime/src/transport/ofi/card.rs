//! What each PE publishes through the bootstrap allgather at init: its provider, its
//! endpoint's address (`fi_getname`) and, per symmetric segment, the address peers target
//! and the memory key. Little-endian, length-prefixed; decoding never trusts a length.

/// One remotely accessible segment as its owner describes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct SegCard {
    /// Where the segment starts in its owner's address space.
    pub(super) base: u64,
    /// Its length (0: the PE has no such segment).
    pub(super) len: u64,
    /// The key a peer passes with every access.
    pub(super) key: u64,
}

/// One PE's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Card {
    /// Provider name (`tcp;ofi_rxm`); every PE must use the same.
    pub(super) provider: String,
    /// Endpoint address.
    pub(super) addr: Vec<u8>,
    /// Segments in order (0 = heap).
    pub(super) segs: Vec<SegCard>,
}

const MAGIC: &[u8; 6] = b"OXOFI1";

impl Card {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64 + self.addr.len() + self.segs.len() * 24);
        v.extend_from_slice(MAGIC);
        for part in [self.provider.as_bytes(), &self.addr] {
            v.extend_from_slice(&(part.len() as u32).to_le_bytes());
            v.extend_from_slice(part);
        }
        v.extend_from_slice(&(self.segs.len() as u32).to_le_bytes());
        for s in &self.segs {
            for x in [s.base, s.len, s.key] {
                v.extend_from_slice(&x.to_le_bytes());
            }
        }
        v
    }

    pub(super) fn decode(b: &[u8]) -> Option<Card> {
        let mut r = Reader(b.strip_prefix(MAGIC)?);
        let provider = String::from_utf8(r.bytes()?.to_vec()).ok()?;
        let addr = r.bytes()?.to_vec();
        let n = r.u32()? as usize;
        if n > super::super::MAX_SEGMENTS {
            return None;
        }
        let mut segs = Vec::with_capacity(n);
        for _ in 0..n {
            segs.push(SegCard { base: r.u64()?, len: r.u64()?, key: r.u64()? });
        }
        r.0.is_empty().then_some(Card { provider, addr, segs })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let c = Card {
            provider: "tcp;ofi_rxm".into(),
            addr: vec![2, 0, 0x1f, 0x90, 127, 0, 0, 1],
            segs: vec![SegCard { base: 0x7f00_0000_0000, len: 1 << 30, key: 1 }, SegCard::default()],
        };
        let b = c.encode();
        assert_eq!(Card::decode(&b), Some(c));
        for cut in 0..b.len() {
            assert_eq!(Card::decode(&b[..cut]), None, "a record cut at {cut} bytes must not decode");
        }
        let mut long = b.clone();
        long.push(0);
        assert_eq!(Card::decode(&long), None);
        assert_eq!(Card::decode(b"garbage"), None);
    }
}
