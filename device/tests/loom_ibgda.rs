//! A loom model of one IBGDA queue pair (`src/ibgda/qp.rs`, with `layout.rs` and a NIC layout:
//! `mlx5.rs`, or `hns.rs`): several producers reserve slots, write WQEs, publish them in order
//! and ring the doorbell; the model's main thread acts as the NIC through the queue's NIC-side
//! API (`nic_announced`, `nic_slot`, `nic_complete`) and the layout's `decode`, exactly as the
//! software NIC does. The queues are tiny (2, 4 or 8 slots), so they wrap and flow control is
//! exercised; both CQ modes are modelled. The models are generic over the layout and run for
//! both: mlx5 WQEs name their index, hns WQEs only their lap (an owner bit), and hns CQEs carry
//! owner and status in their first word instead of their last.
//!
//! Checked in every interleaving loom explores (within its bounds):
//! - every slot the NIC reads decodes, at the index it expects, to a WQE whose every word
//!   belongs to one request (a half-written or overwritten slot fails the decode or the
//!   identity check) — so publication is ordered and flow control never lets a producer
//!   overwrite a slot the NIC has not consumed;
//! - each producer's requests execute once each, in posting order; none is lost;
//! - once a producer's `quiet` returns, the NIC has executed everything it posted;
//! - at the end every counter (reserved, ready, announced, completed) equals the slots posted.
//!
//! Beside the models: publication alone with four producers; and the software NIC's per-queue
//! lock as ringers use it while the NIC thread sleeps (a ringer that finds it taken leaves its
//! doorbell to the holder, whose second look after letting go must find it — nothing is left
//! unexecuted).
//!
//! The queue code takes its atomics from `oxshmem_device::sync`: loom's when the crate is built
//! with `--cfg loom`, std's otherwise. So the models (module `models`) exist only in a loom
//! build, run as
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p oxshmem-device --test loom_ibgda`
//! (a target folder of its own: every crate is built again with the flag); an ordinary build
//! has instead the crate's own queue (std atomics) under eight real threads, for the
//! interleavings beyond loom's bounds.

use oxshmem_device::ibgda::layout::{Remote, Sge, WorkRequest};

const QPN: u32 = 0x42;

/// Request `k` of producer `p` as a one-slot write: every word of the WQE names (p, k), so a
/// slot mixing two requests is caught.
fn write_req(p: u64, k: u64) -> WorkRequest<'static> {
    WorkRequest::Write {
        local: Sge { addr: p << 32 | k, len: (p * 1000 + k) as u32, lkey: (p << 16 | k) as u32 },
        remote: Remote { addr: k << 32 | p, rkey: (k << 16 | p) as u32 },
    }
}

#[cfg(loom)]
mod models {
    use loom::sync::atomic::{AtomicU64, Ordering};
    use loom::sync::{Arc, Notify};
    use oxshmem_device::ibgda::layout::{self, Completion, Decoded, Hns, Mlx5, NicLayout, Remote, Sge, WorkRequest};
    use oxshmem_device::ibgda::qp::{CqMode, Qp, QpBox};
    use oxshmem_device::sync;

    use super::{QPN, write_req};

    /// The shape of one model.
    #[derive(Debug, Clone, Copy)]
    struct Cfg {
        producers: u64,
        /// Posts per producer.
        posts: u64,
        /// Requests per post (one batch; only the last is signalled).
        per_post: u64,
        /// Each request is a two-slot inline write (else a one-slot write).
        two_slot: bool,
        nwqes: usize,
        mode: CqMode,
        ncqes: usize,
        /// How many producers (the first ones) call `quiet` after their posts and check that all
        /// of it executed.
        quiet: u64,
        preemptions: usize,
    }

    /// The payload of request `k` of producer `p` as a two-slot inline write (36 bytes, DS 5).
    fn inline_payload(p: u64, k: u64) -> [u8; 36] {
        let mut d = [0u8; 36];
        for (i, b) in d.iter_mut().enumerate() {
            *b = (p as u8).wrapping_mul(31) ^ (k as u8).wrapping_mul(7) ^ i as u8;
        }
        d
    }

    /// Which (producer, request) a decoded WQE is; panics if its words disagree.
    fn identify(op: &Decoded<'_>) -> Option<(u64, u64)> {
        match op {
            Decoded::Write { local, remote } => {
                let (p, k) = (local.addr >> 32, local.addr & 0xffff_ffff);
                assert_eq!(*local, Sge { addr: p << 32 | k, len: (p * 1000 + k) as u32, lkey: (p << 16 | k) as u32 });
                assert_eq!(*remote, Remote { addr: k << 32 | p, rkey: (k << 16 | p) as u32 }, "a torn WQE");
                Some((p, k))
            }
            Decoded::WriteInline { data, remote } => {
                let (p, k) = (remote.addr >> 32, remote.addr & 0xffff_ffff);
                assert_eq!(remote.rkey, (p << 16 | k) as u32, "a torn WQE");
                assert_eq!(*data, &inline_payload(p, k)[..], "a torn inline payload (p {p}, k {k})");
                Some((p, k))
            }
            Decoded::Nop => None,
            other => panic!("the model posts no {other:?}"),
        }
    }

    /// Marks the queue's scratch words (which the model never uses) to stay uncreated.
    fn skip_scratch<L: NicLayout>(q: &Qp<L>) {
        assert_eq!(size_of::<sync::atomic::AtomicU64>(), 8, "scratch words are 8 bytes apart");
        let (base, len) = q.ibuf_range();
        assert!(len >= 8 * 64, "the scratch buffer is {len} bytes");
        // SAFETY: `ibuf_range` is the queue's scratch buffer: `len / 8` initialised words, alive
        // as long as `q`; only shared references are made.
        let words = unsafe { std::slice::from_raw_parts(base as *const sync::atomic::AtomicU64, len as usize / 8) };
        for w in words {
            w.skip();
        }
    }

    /// Yields in a wait; past a budget no correct interleaving needs (every yield lets the others
    /// run until they wait too), reports a livelock with the queue's counters.
    static TRACE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    fn trace(s: String) {
        TRACE.lock().unwrap().push(s);
    }

    fn waiter<'a, L: NicLayout>(q: &'a Qp<L>, who: String, kick: Option<&'a Notify>) -> impl FnMut() -> bool + 'a {
        let mut spins = 0u32;
        move || {
            spins += 1;
            // Like a device thread's wait: a doorbell it rang while helping must wake the NIC.
            if let Some(k) = kick {
                k.notify();
            }
            assert!(
                spins < 1_000,
                "{who} waits for ever: reserved {}, ready {}, announced {}, complete {} [{}]",
                q.resv_head(),
                q.ready_head(),
                q.prod_idx(),
                q.cons_idx(),
                TRACE.lock().unwrap().join(", ")
            );
            loom::thread::yield_now();
            true
        }
    }

    /// Explores `body` under loom (at most `preemptions` preemptions per execution) and reports
    /// how many executions that took, as `what`.
    fn explore(what: String, preemptions: usize, body: impl Fn() + Send + Sync + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(preemptions);
        builder.max_branches = 100_000;
        let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let started = std::time::Instant::now();
        let counter = runs.clone();
        builder.check(move || {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n % 1000 == 999 {
                eprintln!("{} executions after {:.1?}", n + 1, started.elapsed());
            }
            body();
        });
        eprintln!(
            "{what}: {} executions in {:.1?}",
            runs.load(std::sync::atomic::Ordering::Relaxed),
            started.elapsed()
        );
    }

    fn model<L: NicLayout>(cfg: Cfg) {
        explore(format!("{} {cfg:?}", L::NAME), cfg.preemptions, move || {
            TRACE.lock().unwrap().clear();
            let q = Arc::new(QpBox::<L>::new(cfg.nwqes, cfg.mode, cfg.ncqes, 32, QPN, 0));
            skip_scratch(&q);
            sync::materialize();
            // executed[p - 1]: how many of producer p's requests the NIC ran.
            let executed: Arc<Vec<AtomicU64>> = Arc::new((0..cfg.producers).map(|_| AtomicU64::new(0)).collect());
            let per_producer = cfg.posts * cfg.per_post;
            let wqe_slots: u64 = if cfg.two_slot { 2 } else { 1 };
            let probe = if cfg.two_slot {
                WorkRequest::WriteInline { data: &[0; 36], remote: Remote::default() }
            } else {
                write_req(1, 0)
            };
            assert!(L::supports(&probe), "{} expresses the model's requests", L::NAME);
            assert_eq!(L::wqebbs(&probe) as u64, wqe_slots, "{}: slots of the model's requests", L::NAME);
            // Slots per post: the requests, plus the trailing NOP a signalled multi-slot last WQE needs.
            let post_slots = cfg.per_post * wqe_slots + u64::from(wqe_slots > 1);
            let total = cfg.producers * cfg.posts * post_slots;
            assert!(post_slots as usize <= cfg.nwqes / 2, "the model's batch fits the queue");

            let kick = Arc::new(Notify::new());
            let producers: Vec<_> = (1..=cfg.producers)
                .map(|p| {
                    let (q, executed, kick) = (q.clone(), executed.clone(), kick.clone());
                    loom::thread::spawn(move || {
                        let mut wait = waiter(&q, format!("producer {p}"), Some(&kick));
                        for post in 0..cfg.posts {
                            let ks: Vec<u64> = (post * cfg.per_post..(post + 1) * cfg.per_post).collect();
                            let payloads: Vec<[u8; 36]> = ks.iter().map(|&k| inline_payload(p, k)).collect();
                            let wrs: Vec<WorkRequest<'_>> = ks
                                .iter()
                                .zip(&payloads)
                                .map(|(&k, d)| {
                                    if cfg.two_slot {
                                        WorkRequest::WriteInline {
                                            data: d,
                                            remote: Remote { addr: p << 32 | k, rkey: (p << 16 | k) as u32 },
                                        }
                                    } else {
                                        write_req(p, k)
                                    }
                                })
                                .collect();
                            assert_eq!(Qp::<L>::slots_for(&wrs, true), post_slots);
                            let e = q.post(&wrs, true, false, &mut wait).expect("a post in the model never fails");
                            trace(format!("p{p} posted to {e}"));
                            kick.notify();
                        }
                        if p <= cfg.quiet {
                            q.quiet(&mut wait).expect("quiet in the model never fails");
                            trace(format!("p{p} quiet"));
                            let done = executed[(p - 1) as usize].load(Ordering::Relaxed);
                            assert_eq!(done, per_producer, "producer {p}: quiet returned with {done} executed");
                        }
                    })
                })
                .collect();
            // The model's main thread is the NIC: it consumes announced WQEs until all are done.
            let (mut consumed, mut pcqe) = (0u64, 0u64);
            while consumed < total {
                let ann = q.nic_announced(consumed);
                assert!(ann - consumed <= cfg.nwqes as u64, "announced {ann} with {consumed} consumed");
                if ann == consumed {
                    // Sleep until a doorbell (the software NIC parks; a producer's post unparks it).
                    kick.wait();
                    continue;
                }
                while consumed < ann {
                    let idx = consumed;
                    let first = q.nic_slot(idx);
                    let g = &mut [0u8; layout::MAX_WQE_BYTES];
                    let w = L::decode(&first, idx, q.nwqes(), QPN, &|k| q.nic_slot(idx + k as u64), g)
                        .unwrap_or_else(|e| panic!("slot {idx} (of {ann} announced) does not decode: {e:?}"));
                    assert!(idx + w.wqebbs as u64 <= ann, "WQE at {idx} runs past the announced {ann}");
                    if let Some((p, k)) = identify(&w.op) {
                        let done = &executed[(p - 1) as usize];
                        let prev = done.load(Ordering::Relaxed);
                        assert_eq!(prev, k, "producer {p}: request {k} executed after {prev} others");
                        done.store(k + 1, Ordering::Relaxed);
                    }
                    if w.flags.signal {
                        let c = Completion::Ok { wqe_counter: idx as u16, owner: 0 };
                        assert!(q.nic_complete(c, pcqe, &mut waiter(&q, "the NIC (for CQ space)".into(), None)));
                        pcqe += 1;
                    }
                    consumed += w.wqebbs as u64;
                }
            }
            assert_eq!(pcqe, cfg.producers * cfg.posts, "one completion per post");
            for h in producers {
                h.join().unwrap();
            }
            trace("joined".into());
            // Everything is complete once the last completion entry is read.
            let mut wait = waiter(&q, "the final wait".into(), None);
            q.wait_complete(total, &mut wait).expect("the queue completes everything");
            for (i, e) in executed.iter().enumerate() {
                assert_eq!(e.load(Ordering::Relaxed), per_producer, "producer {}: requests executed", i + 1);
            }
            assert_eq!((q.resv_head(), q.ready_head(), q.prod_idx(), q.cons_idx()), (total, total, total, total));
            assert!(q.error().is_none());
        });
    }

    const BASE: Cfg = Cfg {
        producers: 1,
        posts: 1,
        per_post: 1,
        two_slot: false,
        nwqes: 2,
        mode: CqMode::Collapsed,
        ncqes: 1,
        quiet: 0,
        preemptions: 1,
    };

    /// One producer, three posts on a two-slot queue: the third reuses slot 0 and must wait for
    /// its completion (flow control); quiet then sees everything executed. Collapsed CQ.
    #[test]
    fn one_producer_wraps_a_two_slot_queue_collapsed() {
        model::<Mlx5>(Cfg { posts: 3, quiet: 1, ..BASE });
    }

    /// The same with a normal CQ of one entry: the NIC also waits for the poller to free it.
    #[test]
    fn one_producer_wraps_a_two_slot_queue_normal_cq() {
        model::<Mlx5>(Cfg { posts: 3, quiet: 1, mode: CqMode::Normal, ncqes: 1, ..BASE });
    }

    /// Two producers race for the slots: unique reservations, publication in reservation order
    /// (whichever finishes writing first), and the doorbell covers both.
    #[test]
    fn two_producers_race_for_slots() {
        model::<Mlx5>(Cfg { producers: 2, ..BASE });
    }

    /// Two producers, one of which quiets while the other may still be posting: its quiet
    /// returns only once its own request has executed.
    #[test]
    fn quiet_beside_another_producer() {
        model::<Mlx5>(Cfg { producers: 2, quiet: 1, ..BASE });
    }

    /// Two producers posting batches of two requests (only the last signalled) on four slots.
    #[test]
    fn two_producers_post_batches() {
        model::<Mlx5>(Cfg { producers: 2, per_post: 2, nwqes: 4, ..BASE });
    }

    /// Two producers wrapping a two-slot queue, without preemption (every interleaving of their
    /// waits, and every value each load may read).
    #[test]
    fn two_producers_wrap_a_two_slot_queue() {
        model::<Mlx5>(Cfg { producers: 2, posts: 2, preemptions: 0, ..BASE });
    }

    /// Two producers both quiet on a one-entry normal CQ (one poller at a time consumes it),
    /// without preemption.
    #[test]
    fn two_producers_quiet_on_a_one_entry_normal_cq() {
        model::<Mlx5>(Cfg { producers: 2, quiet: 2, mode: CqMode::Normal, ncqes: 1, preemptions: 0, ..BASE });
    }

    /// Two-slot WQEs (36-byte inline writes) with their trailing NOP on an eight-slot queue: the
    /// third post's WQE starts in the last slot and continues in slot 0 (the NIC follows the
    /// wrap), and flow control holds it back until slots 0-1 have completed.
    #[test]
    fn multi_slot_wqes_wrap_the_ring() {
        model::<Mlx5>(Cfg { posts: 3, quiet: 1, nwqes: 8, two_slot: true, ..BASE });
    }

    /// Larger models: two producers wrapping a two-slot queue with preemption, both quieting, in
    /// both CQ modes; three producers on two slots. Minutes; run with
    /// `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release -p oxshmem-device --test loom_ibgda -- --ignored`.
    #[test]
    #[ignore = "minutes of model checking; run in release with --ignored"]
    fn larger_models() {
        let wrap = Cfg { producers: 2, posts: 2, quiet: 2, ..BASE };
        model::<Mlx5>(wrap);
        model::<Mlx5>(Cfg { mode: CqMode::Normal, ncqes: 1, ..wrap });
        model::<Mlx5>(Cfg { producers: 3, quiet: 1, ..BASE });
        model::<Hns>(wrap);
        model::<Hns>(Cfg { mode: CqMode::Normal, ncqes: 1, ..wrap });
    }

    /// Publication alone, no NIC: producers post (`posts[p]` one-slot requests each) into a queue
    /// large enough never to wrap; after they are joined, everything must be ready and announced,
    /// and every slot must hold its request.
    fn publish_model<L: NicLayout>(posts: &'static [u64], nwqes: usize, preemptions: usize) {
        explore(format!("{} publish {posts:?}", L::NAME), preemptions, move || {
            let q = Arc::new(QpBox::<L>::new(nwqes, CqMode::Collapsed, 1, 32, QPN, 0));
            skip_scratch(&q);
            sync::materialize();
            let total: u64 = posts.iter().sum();
            assert!(total as usize <= nwqes);
            let hs: Vec<_> = posts
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let q = q.clone();
                    loom::thread::spawn(move || {
                        for k in 0..n {
                            q.post(&[write_req(i as u64 + 1, k)], true, false, &mut || true).expect("post");
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!((q.resv_head(), q.ready_head(), q.prod_idx()), (total, total, total));
            let mut next = vec![0u64; posts.len()];
            for idx in 0..total {
                let (first, g) = (q.nic_slot(idx), &mut [0u8; layout::MAX_WQE_BYTES]);
                let w = L::decode(&first, idx, q.nwqes(), QPN, &|_| unreachable!(), g).expect("decodes");
                let (p, k) = identify(&w.op).expect("a write");
                assert_eq!(next[(p - 1) as usize], k, "producer {p}'s order");
                next[(p - 1) as usize] += 1;
            }
        });
    }

    /// Four producers, one post each, publishing concurrently (the combining publish: a producer
    /// may advance the ready head over later batches, or leave its own to an earlier producer).
    /// (The overflow at qp.rs `ready - base` needs two preemptions and four producers — tens of
    /// minutes here; the real-thread stress above and `tests/tests/nic.rs` hit it by chance.)
    #[test]
    fn four_producers_publish_in_order() {
        publish_model::<Mlx5>(&[1, 1, 1, 1], 4, 1);
    }

    /// The software NIC's queue lock as ringers use it with the NIC thread asleep
    /// (`softnic::drive`): after its post, each producer takes the queue's lock and consumes what is
    /// announced, or leaves if the lock is taken; a driver looks at the doorbell record again after
    /// letting go and goes on while work is announced. With nobody else consuming the queue, every
    /// request must execute, once and in each producer's order — a doorbell left behind by a ringer
    /// that found the lock taken would show as a request never executed.
    fn drive_model<L: NicLayout>(producers: u64, posts: u64, preemptions: usize) {
        explore(format!("{} drive {producers}x{posts}", L::NAME), preemptions, move || {
            let total = producers * posts;
            let q = Arc::new(QpBox::<L>::new(4, CqMode::Collapsed, 1, 32, QPN, 0));
            skip_scratch(&q);
            sync::materialize();
            let executed: Arc<Vec<AtomicU64>> = Arc::new((0..producers).map(|_| AtomicU64::new(0)).collect());
            let hs: Vec<_> = (1..=producers)
                .map(|p| {
                    let (q, executed) = (q.clone(), executed.clone());
                    loom::thread::spawn(move || {
                        let mut wait = waiter(&q, format!("producer {p}"), None);
                        for k in 0..posts {
                            q.post(&[write_req(p, k)], true, false, &mut wait).expect("post");
                            // softnic::progress_queue: a full fence between the doorbell and the try-lock.
                            loom::sync::atomic::fence(Ordering::SeqCst);
                            for _ in 0..8 {
                                if !q.nic_try_drive() {
                                    break;
                                }
                                drain(&q, &executed);
                                q.nic_end_drive();
                                loom::sync::atomic::fence(Ordering::SeqCst);
                                if !q.nic_pending() {
                                    break;
                                }
                            }
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(q.nic_seen().0, total, "every announced WQE consumed, nothing left behind");
            for (i, e) in executed.iter().enumerate() {
                assert_eq!(e.load(Ordering::Relaxed), posts, "producer {}: requests executed", i + 1);
            }
        });
    }

    /// One driver's pass over the queue, as `softnic::Engine::drain` makes it: from the consumed
    /// index it last recorded to the announced one, checking each request's order.
    fn drain<L: NicLayout>(q: &Qp<L>, executed: &[AtomicU64]) {
        let (mut consumed, mut pcqe) = q.nic_seen();
        let ann = q.nic_announced(consumed);
        while consumed < ann {
            let idx = consumed;
            let (first, g) = (q.nic_slot(idx), &mut [0u8; layout::MAX_WQE_BYTES]);
            let w = L::decode(&first, idx, q.nwqes(), QPN, &|k| q.nic_slot(idx + k as u64), g)
                .unwrap_or_else(|e| panic!("slot {idx} (of {ann} announced) does not decode: {e:?}"));
            let (p, k) = identify(&w.op).expect("a write");
            let done = &executed[(p - 1) as usize];
            assert_eq!(done.load(Ordering::Relaxed), k, "producer {p}: request {k} out of order or twice");
            done.store(k + 1, Ordering::Relaxed);
            if w.flags.signal {
                let c = Completion::Ok { wqe_counter: idx as u16, owner: 0 };
                assert!(q.nic_complete(c, pcqe, &mut || true));
                pcqe += 1;
            }
            consumed += w.wqebbs as u64;
        }
        q.nic_set_seen(consumed, pcqe);
    }

    /// Two ringers, one post each, no NIC thread: whichever finds the queue's lock taken leaves its
    /// doorbell to the holder, and the holder's second look finds it.
    #[test]
    fn ringers_serve_each_others_doorbells() {
        drive_model::<Mlx5>(2, 1, 2);
    }

    /// Two ringers, two posts each.
    #[test]
    fn ringers_serve_each_others_doorbells_twice() {
        drive_model::<Mlx5>(2, 2, 1);
    }

    // ---- the same models on hns queues (one-slot WQEs only: no two-slot model) ----------

    /// [`one_producer_wraps_a_two_slot_queue_collapsed`] on hns: the third post's owner bit is
    /// the second lap's, and the stale first-lap slot is what flow control keeps it from.
    #[test]
    fn hns_one_producer_wraps_a_two_slot_queue_collapsed() {
        model::<Hns>(Cfg { posts: 3, quiet: 1, ..BASE });
    }

    /// [`one_producer_wraps_a_two_slot_queue_normal_cq`] on hns (its CQE owner bit inverted,
    /// in the entry's first word).
    #[test]
    fn hns_one_producer_wraps_a_two_slot_queue_normal_cq() {
        model::<Hns>(Cfg { posts: 3, quiet: 1, mode: CqMode::Normal, ncqes: 1, ..BASE });
    }

    /// [`two_producers_race_for_slots`] on hns.
    #[test]
    fn hns_two_producers_race_for_slots() {
        model::<Hns>(Cfg { producers: 2, ..BASE });
    }

    /// [`quiet_beside_another_producer`] on hns.
    #[test]
    fn hns_quiet_beside_another_producer() {
        model::<Hns>(Cfg { producers: 2, quiet: 1, ..BASE });
    }

    /// [`two_producers_wrap_a_two_slot_queue`] on hns.
    #[test]
    fn hns_two_producers_wrap_a_two_slot_queue() {
        model::<Hns>(Cfg { producers: 2, posts: 2, preemptions: 0, ..BASE });
    }

    /// [`two_producers_quiet_on_a_one_entry_normal_cq`] on hns.
    #[test]
    fn hns_two_producers_quiet_on_a_one_entry_normal_cq() {
        model::<Hns>(Cfg { producers: 2, quiet: 2, mode: CqMode::Normal, ncqes: 1, preemptions: 0, ..BASE });
    }

    /// [`four_producers_publish_in_order`] on hns.
    #[test]
    fn hns_four_producers_publish_in_order() {
        publish_model::<Hns>(&[1, 1, 1, 1], 4, 1);
    }

    /// [`ringers_serve_each_others_doorbells`] on hns.
    #[test]
    fn hns_ringers_serve_each_others_doorbells() {
        drive_model::<Hns>(2, 1, 2);
    }
}

/// The same queue code with std atomics (the crate's own build), under real threads: eight
/// producers on a 16-slot queue, many posts each, a NIC thread consuming, both CQ modes.
/// Interleavings loom's bounds leave out (more producers, more preemptions) happen here by
/// the scheduler's chance; the same checks apply (every WQE decodes at its index and is whole,
/// per-producer order, nothing lost, quiet means executed).
#[cfg(not(loom))]
fn many_producers_on_a_tiny_queue<M: oxshmem_device::ibgda::layout::NicLayout>() {
    use oxshmem_device::ibgda::layout::{Completion as C, Decoded as D, MAX_WQE_BYTES};
    use oxshmem_device::ibgda::qp::{CqMode as Mode, QpBox as RealQpBox};
    use std::sync::atomic::{AtomicBool, AtomicU64 as A64, Ordering as O};

    const PRODUCERS: u64 = 8;
    const POSTS: u64 = 10_000;
    for mode in [Mode::Collapsed, Mode::Normal] {
        let q = std::sync::Arc::new(RealQpBox::<M>::new(16, mode, 2, 2, QPN, 0));
        let executed: std::sync::Arc<Vec<A64>> = std::sync::Arc::new((0..PRODUCERS).map(|_| A64::new(0)).collect());
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let total = PRODUCERS * POSTS;
        let nic = {
            let (q, executed, done) = (q.clone(), executed.clone(), done.clone());
            std::thread::spawn(move || {
                let (mut consumed, mut pcqe) = (0u64, 0u64);
                while consumed < total {
                    let ann = q.nic_announced(consumed);
                    assert!(ann - consumed <= 16, "announced {ann} with {consumed} consumed");
                    if ann == consumed {
                        std::thread::yield_now();
                        continue;
                    }
                    while consumed < ann {
                        let idx = consumed;
                        let (first, g) = (q.nic_slot(idx), &mut [0u8; MAX_WQE_BYTES]);
                        let w = M::decode(&first, idx, q.nwqes(), QPN, &|k| q.nic_slot(idx + k as u64), g)
                            .unwrap_or_else(|e| panic!("slot {idx} does not decode: {e:?}"));
                        let D::Write { local, remote } = w.op else { panic!("slot {idx}: {:?}", w.op) };
                        let (p, k) = (local.addr >> 32, local.addr & 0xffff_ffff);
                        let WorkRequest::Write { local: l2, remote: r2 } = write_req(p, k) else { unreachable!() };
                        assert_eq!((local, remote), (l2, r2), "slot {idx}: a torn WQE");
                        let prev = executed[(p - 1) as usize].load(O::Relaxed);
                        assert_eq!(prev, k, "producer {p}: request {k} after {prev}");
                        executed[(p - 1) as usize].store(k + 1, O::Relaxed);
                        if w.flags.signal {
                            let c = C::Ok { wqe_counter: idx as u16, owner: 0 };
                            assert!(q.nic_complete(c, pcqe, &mut || {
                                std::thread::yield_now();
                                !done.load(O::Relaxed)
                            }));
                            pcqe += 1;
                        }
                        consumed += w.wqebbs as u64;
                    }
                }
            })
        };
        let producers: Vec<_> = (1..=PRODUCERS)
            .map(|p| {
                let (q, executed) = (q.clone(), executed.clone());
                std::thread::spawn(move || {
                    let mut wait = || {
                        std::thread::yield_now();
                        true
                    };
                    for k in 0..POSTS {
                        q.post(&[write_req(p, k)], true, false, &mut wait).expect("post");
                        if k % 512 == 511 {
                            q.quiet(&mut wait).expect("quiet");
                            assert!(executed[(p - 1) as usize].load(O::Relaxed) > k, "producer {p}: quiet after {k}");
                        }
                    }
                })
            })
            .collect();
        for h in producers {
            h.join().unwrap();
        }
        q.wait_complete(total, &mut || {
            std::thread::yield_now();
            true
        })
        .expect("everything completes");
        done.store(true, O::Relaxed);
        nic.join().unwrap();
        assert!(executed.iter().all(|e| e.load(O::Relaxed) == POSTS), "{}, {mode:?}: every request executed", M::NAME);
        assert_eq!((q.resv_head(), q.ready_head(), q.prod_idx(), q.cons_idx()), (total, total, total, total));
    }
}

#[cfg(not(loom))]
#[test]
fn many_producers_on_a_tiny_queue_with_real_threads() {
    many_producers_on_a_tiny_queue::<oxshmem_device::ibgda::layout::Mlx5>();
}

/// The same on hns queues: a slot of the wrong lap fails its owner-bit check.
#[cfg(not(loom))]
#[test]
fn hns_many_producers_on_a_tiny_queue_with_real_threads() {
    many_producers_on_a_tiny_queue::<oxshmem_device::ibgda::layout::Hns>();
}
