//! Broadcast: root's source to every member's destination.
//!
//! Small (fits a mailbox after the header): the root's checked-exchange message carries the
//! data — one cache-line trip. Large: after the exchange every member copies straight from the
//! root's source into its own destination (all members in parallel, one copy each) and
//! signals the root, which returns once every member is done reading its source.

use crate::coll::header::{Group, Header, kind, payload_of};
use crate::error::{Error, ErrorKind, Result};
use crate::transport::SymAddr;
use crate::world::Runtime;

impl Runtime {
    /// Broadcasts `nbytes` from `src` on member `root` to `dest` on every member (on the root
    /// too when `include_root`, as OpenSHMEM 1.5's team broadcast does; the deprecated
    /// active-set form leaves the root's `dest` alone).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn broadcast(
        &self,
        g: Group<'_>,
        dest: SymAddr,
        src: SymAddr,
        nbytes: usize,
        root: usize,
        include_root: bool,
        type_id: u32,
        func: &'static str,
    ) -> Result<()> {
        let n = g.n();
        let small = nbytes <= self.inline_max();
        let mut hdr = Header::new(kind::BCAST);
        hdr.root = root as u32;
        hdr.count = nbytes as u64;
        hdr.type_id = type_id;
        let src_ptr = self.local_addr(src) as *const u8;
        let dst_ptr = self.local_addr(dest) as *mut u8;
        let is_root = g.me == root;
        // SAFETY: the root's payload is its own symmetric source of nbytes bytes.
        let recv = unsafe {
            self.exchange(g, hdr, func, |_| if is_root && small { (src_ptr, nbytes) } else { (std::ptr::null(), 0) })?
        };
        if root >= n {
            self.release_all(g, &recv, func)?;
            return Err(Error::new(self.me, func, ErrorKind::PeOutOfRange { pe: root as i128, n_pes: n }));
        }
        if is_root {
            if include_root && nbytes > 0 {
                // SAFETY: both are symmetric ranges of nbytes in our own segment (may alias).
                unsafe { std::ptr::copy(src_ptr, dst_ptr, nbytes) };
            }
            self.release_all(g, &recv, func)?;
            if !small {
                for j in (0..n).filter(|&j| j != root) {
                    self.sig_wait(g.slot, g.members[j]);
                }
            }
            return Ok(());
        }
        if small {
            let (_, mail) = recv[root].as_ref().expect("a message from every other member");
            // SAFETY: the root's message carries nbytes of payload after its header.
            unsafe { std::ptr::copy_nonoverlapping(payload_of(mail), dst_ptr, nbytes) };
            self.release_all(g, &recv, func)?;
        } else {
            self.release_all(g, &recv, func)?;
            // SAFETY: dst_ptr is our own symmetric destination of nbytes bytes.
            unsafe { self.get_raw(g.members[root], src, dst_ptr, nbytes, func)? };
            self.sig_send(g.slot, g.members[root], func)?;
        }
        Ok(())
    }
}
