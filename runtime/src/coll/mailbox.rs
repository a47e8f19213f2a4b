//! Mailboxes: the small-message path of every collective.
//!
//! In each slot, every PE has in every other PE's copy of the slot a mailbox it alone writes.
//! A message is one put into the receiver's mailbox followed by a signal of the pair's stream,
//! so a small collective costs one cache-line trip instead of a ready/put/ack handshake. Flow
//! control is by credit: after consuming a message the receiver stores the message's count
//! into the sender's credit flag, and the sender waits for that credit before writing the
//! mailbox again — usually long since granted, so the wait costs nothing.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::team::Chan;
use crate::world::Runtime;

/// A received message: where it lies in our copy of the slot, and its count (for the credit).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mail {
    pub(crate) ptr: *const u8,
    pub(crate) count: u64,
}

impl Runtime {
    /// Bytes one message can carry.
    pub(crate) fn mb_capacity(&self) -> usize {
        self.slots.box_len()
    }

    /// Sends `len` bytes at `data` to world PE `to` through `slot`'s mailbox.
    ///
    /// # Safety
    /// `data` must be valid for reads of `len` bytes, and `len <= mb_capacity()`.
    pub(crate) unsafe fn mb_send(
        &self,
        slot: usize,
        to: usize,
        data: *const u8,
        len: usize,
        func: &'static str,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.mb_send_parts(slot, to, &[(data, len)], func) }
    }

    /// Sends the concatenation of `parts` as one message.
    ///
    /// # Safety
    /// Each part must be valid for reads of its length; the total at most `mb_capacity()`.
    pub(crate) unsafe fn mb_send_parts(
        &self,
        slot: usize,
        to: usize,
        parts: &[(*const u8, usize)],
        func: &'static str,
    ) -> Result<()> {
        debug_assert!(parts.iter().map(|p| p.1).sum::<usize>() <= self.mb_capacity());
        let st = &self.teams.streams[slot];
        let last = st.last_mail[to].load(Ordering::Relaxed);
        if last != 0 {
            self.flag_wait(self.slots.flag(slot, Chan::Credit, to), last);
        }
        let mut at = self.slots.mailbox(slot, self.me);
        for &(p, len) in parts {
            if len > 0 {
                // SAFETY: forwarded from the caller; the mailbox is ours alone to write and the
                // credit proves the receiver is done with its previous content.
                unsafe { self.put_raw(to, at, p, len, func)? };
            }
            at.offset += len;
        }
        let c = self.sig_send(slot, to, func)?;
        st.last_mail[to].store(c, Ordering::Relaxed);
        Ok(())
    }

    /// Waits for the next message from world PE `from` through `slot`.
    pub(crate) fn mb_recv(&self, slot: usize, from: usize) -> Mail {
        let count = self.sig_wait(slot, from);
        Mail {
            ptr: self.local_addr(self.slots.mailbox(slot, from)) as *const u8,
            count,
        }
    }

    /// Grants `from` the credit for `mail`: its mailbox here may be written again.
    pub(crate) fn mb_release(
        &self,
        slot: usize,
        from: usize,
        mail: Mail,
        func: &'static str,
    ) -> Result<()> {
        let a = self.slots.flag(slot, Chan::Credit, self.me);
        let p = self
            .shm
            .ptr(from, a, 8)
            .ok_or_else(|| self.unreachable(from, func))?;
        // SAFETY: as for every flag: live, aligned, atomically accessed.
        unsafe { AtomicU64::from_ptr(p.cast()) }.store(mail.count, Ordering::Release);
        Ok(())
    }
}
