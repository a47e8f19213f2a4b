//! Mailboxes: the small-message path of every collective.
//!
//! In each slot, every PE has in every other PE's copy of the slot two mailboxes it alone
//! writes, used alternately. A message is its data, preceded by two words written last: the
//! sequence word (the pair's stream count, stored with release ordering, which the receiver
//! polls) and an acknowledgement — how many of the receiver's own messages the sender is done
//! with. A message of up to 48 bytes therefore travels in the same cache line as its arrival
//! signal, and credit for reusing a mailbox rides on the traffic that flows back anyway: every
//! collective exchanges messages in both directions between each pair, so by the time a sender
//! wants a mailbox again, the receiver's last message has already said it is free. Only when
//! it has not (one-sided traffic) does the sender read the receiver's own "consumed" count.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::coll::wire::{HDR, Item, Mail};
use crate::error::Result;
use crate::team::{BOXES, Chan};
use crate::world::Runtime;

/// Bytes of the sequence and acknowledgement words at the start of a mailbox.
const SEQ: usize = 16;

impl Runtime {
    /// Largest payload a collective carries inside its checked exchange. Beyond a few KiB a
    /// payload that goes through a mailbox crosses between cores twice (into the mailbox, out
    /// of it), while the direct algorithms move it once: measured on this machine, the direct
    /// path wins from about 4 KiB on.
    pub(crate) fn inline_max(&self) -> usize {
        (self.mb_capacity() - HDR).min(2048)
    }

    /// Bytes one message can carry.
    pub(crate) fn mb_capacity(&self) -> usize {
        self.slots.box_len() - SEQ
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
        let m = st.mails_sent[to].load(Ordering::Relaxed);
        // Mailbox m % BOXES last held message m - BOXES: it is free once the receiver is done
        // with m - BOXES + 1 messages.
        let need = (m + 1).saturating_sub(BOXES as u64);
        if st.acked[to].load(Ordering::Relaxed) < need {
            let a = self.slots.flag(slot, Chan::Consumed, self.me);
            let mut b = self.backoff().waiting_for(to);
            loop {
                let c = self.load_flag(to, a, func)?;
                if c >= need {
                    st.acked[to].store(c, Ordering::Relaxed);
                    break;
                }
                b.snooze();
            }
        }
        let b = (m % BOXES as u64) as usize;
        let boxa = self.slots.mailbox(slot, self.me, b);
        let mut at = boxa;
        at.offset += SEQ;
        for &(p, len) in parts {
            if len > 0 {
                // SAFETY: forwarded from the caller; the mailbox is ours alone to write and the
                // acknowledgement proves the receiver is done with its previous content.
                unsafe { self.put_raw(to, at, p, len, func)? };
            }
            at.offset += len;
        }
        let c = st.sent[to].load(Ordering::Relaxed) + 1;
        let ack = st.mails_released[to].load(Ordering::Relaxed);
        match self.shm.ptr(to, boxa, SEQ) {
            // SAFETY: the two words are aligned u64s at the start of the mailbox; the ack is
            // read only after the sequence word, whose release store publishes all before it.
            Some(seq) => unsafe {
                AtomicU64::from_ptr(seq.cast::<u64>().add(1)).store(ack, Ordering::Relaxed);
                AtomicU64::from_ptr(seq.cast()).store(c, Ordering::Release);
            },
            None => {
                let mut acka = boxa;
                acka.offset += 8;
                // SAFETY: ack is a live local u64.
                unsafe { self.put_raw(to, acka, (&raw const ack).cast(), 8, func)? };
                self.store_flag(to, boxa, c, func)?;
            }
        }
        st.sent[to].store(c, Ordering::Relaxed);
        st.mails_sent[to].store(m + 1, Ordering::Relaxed);
        Ok(())
    }

    /// Waits for the next message from world PE `from` through `slot`.
    pub(crate) fn mb_recv(&self, slot: usize, from: usize) -> Mail {
        let st = &self.teams.streams[slot];
        let m = st.mails_recvd[from].load(Ordering::Relaxed);
        let c = st.recvd[from].load(Ordering::Relaxed) + 1;
        let boxa = self.slots.mailbox(slot, from, (m % BOXES as u64) as usize);
        self.flag_wait(boxa, c, from);
        self.take_mail(slot, from, c, boxa)
    }

    /// Waits for the next item from world PE `from` through `slot`, message or signal,
    /// whichever `from` sent; `signal` says which one this PE expects (it looks for the other
    /// only while it waits, so an expected item costs what it did before).
    #[inline(always)]
    pub(crate) fn recv_item(&self, slot: usize, from: usize, signal: bool) -> Item {
        let st = &self.teams.streams[slot];
        let c = st.recvd[from].load(Ordering::Relaxed) + 1;
        let want = if signal { self.slots.flag(slot, Chan::Arrive, from) } else { self.mailbox_next(slot, from) };
        // SAFETY: a live, aligned u64 in our own copy of the slot, which peers write atomically.
        let w = unsafe { AtomicU64::from_ptr(self.local_addr(want) as *mut u64) };
        let expected = w.load(Ordering::Acquire) >= c || self.wait_either(slot, from, signal, w, c);
        if expected == signal {
            st.recvd[from].store(c, Ordering::Relaxed);
            Item::Signal(self.signal_word_of(slot, from, c, 0))
        } else {
            // The mailbox is `want` when a message was expected.
            let boxa = if signal { self.mailbox_next(slot, from) } else { want };
            Item::Mail(self.take_mail(slot, from, c, boxa))
        }
    }

    /// Whether `from`'s next item to this PE through `slot` (a message or a signal) has
    /// arrived.
    pub(crate) fn next_item_arrived(&self, slot: usize, from: usize) -> bool {
        let c = self.teams.streams[slot].recvd[from].load(Ordering::Relaxed) + 1;
        [self.mailbox_next(slot, from), self.slots.flag(slot, Chan::Arrive, from)].into_iter().any(|a| {
            // SAFETY: a live, aligned u64 in our own copy of the slot (a mailbox's sequence
            // word or the arrival flag), which its sender writes atomically.
            unsafe { AtomicU64::from_ptr(self.local_addr(a) as *mut u64) }.load(Ordering::Acquire) >= c
        })
    }

    /// The mailbox in which `from`'s next message to this PE arrives.
    pub(crate) fn mailbox_next(&self, slot: usize, from: usize) -> crate::transport::SymAddr {
        let m = self.teams.streams[slot].mails_recvd[from].load(Ordering::Relaxed);
        self.slots.mailbox(slot, from, (m % BOXES as u64) as usize)
    }

    /// Waits until `want` or the other place item `c` of `from` may arrive at (the mailbox
    /// when `signal`, else the arrival flag) is at least `c`; returns whether it was `want`.
    /// A peer writes item `c` into one of them only; `want` is read again after the other,
    /// since a later item there (seen with acquire) may follow item `c` in `want`.
    #[inline(never)]
    fn wait_either(&self, slot: usize, from: usize, signal: bool, want: &AtomicU64, c: u64) -> bool {
        let other = if signal { self.mailbox_next(slot, from) } else { self.slots.flag(slot, Chan::Arrive, from) };
        // SAFETY: as `want`.
        let other = unsafe { AtomicU64::from_ptr(self.local_addr(other) as *mut u64) };
        let mut b = self.backoff().waiting_for(from);
        loop {
            if want.load(Ordering::Acquire) >= c {
                return true;
            }
            if other.load(Ordering::Acquire) >= c {
                return want.load(Ordering::Acquire) >= c;
            }
            b.snooze();
        }
    }

    /// Takes message `c` of `from`'s stream, which has arrived in its mailbox `boxa`.
    #[inline(always)]
    fn take_mail(&self, slot: usize, from: usize, c: u64, boxa: crate::transport::SymAddr) -> Mail {
        let st = &self.teams.streams[slot];
        let m = st.mails_recvd[from].load(Ordering::Relaxed);
        let base = self.local_addr(boxa) as *const u64;
        // SAFETY: the acknowledgement word follows the sequence word in our own mailbox.
        let ack = unsafe { AtomicU64::from_ptr(base.add(1).cast_mut()) }.load(Ordering::Relaxed);
        // A plain maximum, not `fetch_max`: only the one thread in a collective on this slot
        // touches its counters, and a locked instruction here would wait for this PE's own
        // messages, just written into the sender's mailboxes, to reach the sender.
        if ack > st.acked[from].load(Ordering::Relaxed) {
            st.acked[from].store(ack, Ordering::Relaxed);
        }
        st.recvd[from].store(c, Ordering::Relaxed);
        st.mails_recvd[from].store(m + 1, Ordering::Relaxed);
        // SAFETY: the data follows the two words inside our own mailbox.
        Mail { ptr: unsafe { base.cast::<u8>().add(SEQ) } }
    }

    /// Marks the oldest unreleased message from `from` as done with: its mailbox may be
    /// written again. Messages are released in the order they were received.
    pub(crate) fn mb_release(&self, slot: usize, from: usize, _mail: Mail, _func: &'static str) -> Result<()> {
        let st = &self.teams.streams[slot];
        let r = st.mails_released[from].load(Ordering::Relaxed) + 1;
        st.mails_released[from].store(r, Ordering::Relaxed);
        let a = self.slots.flag(slot, Chan::Consumed, from);
        // SAFETY: our own flag for `from`: live, aligned, atomically accessed.
        unsafe { AtomicU64::from_ptr(self.local_addr(a) as *mut u64) }.store(r, Ordering::Release);
        Ok(())
    }
}
