//! The CPU ringer: a thread of the PE that writes a NIC's doorbell registers for producers
//! that cannot (GPU threads on a GPU that cannot map the NIC's register page, or every
//! producer with `OXSHMEM_IBGDA_NIC_HANDLER=cpu`) — NVSHMEM's `NVSHMEM_IBGDA_NIC_HANDLER=cpu`.
//!
//! The producers of such a queue write the doorbell record and the queue's doorbell word
//! (`Doorbell::db`, the value a register write carries) as always, and no register. The ringer
//! watches those words; when one moves it writes the new value to the queue's register, after
//! a full fence, so the NIC finds the record and the WQEs behind it. Writes that come fast are
//! merged: the register gets the newest value, which announces everything below it.
//!
//! It runs on the job's CPUs rather than the PE's own bound core (as the software NIC's thread
//! does), spins while doorbells move, yields once they stop, and after a millisecond without
//! one sleeps between looks, 50 µs at first and doubling up to a millisecond, so an idle job
//! does not hold a core for it. Where the software NIC stands in for the NIC, each write wakes
//! its thread if it sleeps (a hardware NIC needs no waking).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the ringer yields between looks before it starts to sleep.
const YIELD_FOR: Duration = Duration::from_millis(1);
/// Its first sleep between looks once idle; each further one doubles, up to [`NAP_MAX`].
const NAP: Duration = Duration::from_micros(50);
/// Its longest sleep between looks.
const NAP_MAX: Duration = Duration::from_millis(1);

/// One queue the ringer serves: its doorbell word and its register, addresses in this process.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rung {
    /// The queue's `Doorbell::db` (what the producers' last ring would write to the register).
    pub(crate) word: u64,
    /// The register.
    pub(crate) register: u64,
}

/// The ringer's thread; stopped and joined on drop.
#[derive(Debug)]
pub(crate) struct CpuRinger {
    stop: Arc<AtomicBool>,
    /// Registers written so far (for tests and the debug line at the end).
    rung: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl CpuRinger {
    /// Starts the thread over `queues`.
    ///
    /// # Safety
    /// Every word and register of `queues` stays valid (the words readable as `AtomicU64`,
    /// the registers writable with one aligned 8-byte store) until the ringer is dropped.
    pub(crate) unsafe fn start(queues: Vec<Rung>, wake: Option<Box<dyn Fn() + Send>>) -> std::io::Result<CpuRinger> {
        let stop = Arc::new(AtomicBool::new(false));
        let rung = Arc::new(AtomicU64::new(0));
        let (s, r) = (stop.clone(), rung.clone());
        let handle = std::thread::Builder::new().name("oxshmem-ringer".into()).spawn(move || {
            crate::unbind_helper_thread();
            run(&queues, &s, &r, wake.as_deref())
        })?;
        Ok(CpuRinger { stop, rung, handle: Some(handle) })
    }

    /// Register writes so far.
    pub(crate) fn rung(&self) -> u64 {
        self.rung.load(Ordering::Relaxed)
    }
}

impl Drop for CpuRinger {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
        tracing::debug!(target: "nic", writes = self.rung(), "the CPU ringer stopped");
    }
}

fn run(queues: &[Rung], stop: &AtomicBool, rung: &AtomicU64, wake: Option<&(dyn Fn() + Send)>) {
    let mut last = vec![0u64; queues.len()];
    let mut idle_since = Instant::now();
    let mut spins = 0u32;
    let mut nap = NAP;
    // One more look after the stop, for rings made just before it.
    let mut stopping = false;
    loop {
        let mut moved = false;
        for (q, seen) in queues.iter().zip(last.iter_mut()) {
            // SAFETY: the caller of `start` keeps the word valid while the ringer runs.
            let v = unsafe { (*(q.word as *const AtomicU64)).load(Ordering::Acquire) };
            if v != *seen {
                *seen = v;
                // The record (written before the word, which we read with acquire) before the
                // register: the NIC reads the record when the register is written.
                std::sync::atomic::fence(Ordering::SeqCst);
                // SAFETY: the register is writable (the caller of `start`) with one aligned
                // 8-byte store (an atomic one: the software NIC's register is read atomically).
                unsafe { AtomicU64::from_ptr(q.register as *mut u64).store(v, Ordering::Relaxed) };
                rung.fetch_add(1, Ordering::Relaxed);
                moved = true;
            }
        }
        if moved && let Some(w) = wake {
            w();
        }
        if stopping {
            return;
        }
        if stop.load(Ordering::Acquire) {
            stopping = true;
            continue;
        }
        if moved {
            spins = 0;
            nap = NAP;
            idle_since = Instant::now();
        } else if spins < 64 {
            spins += 1;
            std::hint::spin_loop();
        } else if idle_since.elapsed() < YIELD_FOR {
            std::thread::yield_now();
        } else {
            std::thread::park_timeout(nap);
            nap = (nap * 2).min(NAP_MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every move of a watched word reaches its register, newest value last; a word that does
    /// not move is not written; the thread stops on drop.
    #[test]
    #[cfg_attr(miri, ignore = "a real thread polled against a wall-clock deadline")]
    fn moves_reach_their_registers() {
        let words: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
        let regs: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
        let queues: Vec<Rung> = words
            .iter()
            .zip(&regs)
            .map(|(w, r)| Rung { word: w.as_ptr() as u64, register: r.as_ptr() as u64 })
            .collect();
        let woken = Arc::new(AtomicU64::new(0));
        let w = woken.clone();
        let wake: Box<dyn Fn() + Send> = Box::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        });
        // SAFETY: the words and registers outlive the ringer (dropped before them below).
        let ringer = unsafe { CpuRinger::start(queues, Some(wake)) }.expect("a thread");
        let wait = |r: &AtomicU64, v: u64| {
            let end = Instant::now() + Duration::from_secs(20);
            while r.load(Ordering::Acquire) != v {
                assert!(Instant::now() < end, "register never became {v:#x}");
                std::thread::yield_now();
            }
        };
        for v in 1..=50u64 {
            words[0].store(v, Ordering::Release);
            words[2].store(v << 8, Ordering::Release);
        }
        wait(&regs[0], 50);
        wait(&regs[2], 50 << 8);
        words[0].store(7, Ordering::Release);
        wait(&regs[0], 7);
        drop(ringer);
        assert_eq!(regs[1].load(Ordering::Acquire), 0, "a word that never moved is never written");
        assert!(woken.load(Ordering::Relaxed) >= 2, "every pass that wrote woke the NIC");
    }
}
