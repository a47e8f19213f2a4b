//! A loom model of the proxy ring (`src/channel/ring.rs`, with loom's atomics): several
//! producers, one consumer, a ring small enough to wrap around, and `quiet`.
//! Loom explores every interleaving (within its bounds) and checks that no request is lost,
//! duplicated or read before it is written, that the consumer executes tickets in order, and
//! that once a producer's `quiet` returns, every request it issued has been executed.
//!
//! The crate's queue code takes its atomics from `oxshmem_device::sync`, loom's when the crate
//! is built with `--cfg loom`; so this file is empty in an ordinary build. Run it with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p oxshmem-device --test loom_ring`
//! (a target folder of its own: every crate is built again with the flag).
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering};
use oxshmem_device::channel::ring::RingBox;

/// A request: (producer, sequence number within that producer); (0, 0) is "empty".
type Req = (u64, u64);

fn model(producers: u64, per_producer: u64, capacity: usize, preemptions: usize, quiet: bool) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.max_branches = 100_000;
    builder.check(move || {
        let ring = Arc::new(RingBox::<Req>::new(capacity));
        // Every word of the ring is a loom atomic from here on (see `oxshmem_device::sync`).
        oxshmem_device::sync::materialize();
        // The "memory" requests act on: executed[p] = how many of p's requests ran.
        let executed: Arc<Vec<AtomicU64>> = Arc::new((0..producers).map(|_| AtomicU64::new(0)).collect());
        let total = producers * per_producer;

        let consumer = {
            let ring = ring.clone();
            let executed = executed.clone();
            loom::thread::spawn(move || {
                let mut c = ring.consumer().expect("the model's one consumer");
                while c.ticket() < total {
                    match c.peek() {
                        Some((p, k)) => {
                            // Per producer, requests execute in issue order, each once.
                            let prev = executed[(p - 1) as usize].load(Ordering::Relaxed);
                            assert_eq!(prev + 1, k, "producer {p}: request {k} after {prev}");
                            executed[(p - 1) as usize].store(k, Ordering::Relaxed);
                            assert!(c.complete());
                        }
                        None => loom::thread::yield_now(),
                    }
                }
            })
        };

        let handles: Vec<_> = (1..=producers)
            .map(|p| {
                let ring = ring.clone();
                let executed = executed.clone();
                loom::thread::spawn(move || {
                    let mut last = None;
                    for k in 1..=per_producer {
                        let t = ring
                            .submit((p, k), || {
                                loom::thread::yield_now();
                                true
                            })
                            .expect("never gives up in the model");
                        last = Some(t);
                    }
                    // quiet: wait until the ring has completed our last ticket...
                    if let (true, Some(t)) = (quiet, last) {
                        while ring.completed() <= t {
                            loom::thread::yield_now();
                        }
                    }
                    // ...after which every request we issued has been executed.
                    if quiet {
                        assert_eq!(executed[(p - 1) as usize].load(Ordering::Relaxed), per_producer);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        consumer.join().unwrap();
        assert_eq!(ring.completed(), total);
        assert_eq!(ring.issued(), total);
    });
}

/// One producer, two requests, a one-slot ring: the second request wraps around and must
/// wait for the consumer to finish the first (back-pressure), then quiet.
#[test]
fn wrap_around_with_back_pressure() {
    model(1, 2, 1, 2, true);
}

/// Two producers racing for tickets on a two-slot ring: tickets are unique, requests publish
/// and execute once each, in ticket order. (Quiet is checked by the one-producer model; with
/// three spinning threads the state space is too large for a test run.)
#[test]
fn two_producers_race() {
    model(2, 1, 2, 1, false);
}

/// Two producers on a one-slot ring: the loser of the race meets back-pressure. Larger still;
/// run with
/// `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release -p oxshmem-device --test loom_ring -- --ignored`.
#[test]
#[ignore = "minutes of model checking; run in release with --ignored"]
fn two_producers_back_pressure() {
    model(2, 1, 1, 1, true);
}
