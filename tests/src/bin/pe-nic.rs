//! PE program for the IBGDA channel's software NIC: `pe-nic <case> [args]`.
//!
//! Every case runs the device layer with the IBGDA channel (`Device::init_with(.., "ibgda")`);
//! device threads post work requests the device API would never build, through the hidden
//! hooks `Thread::ibgda_post_unchecked` / `ibgda_post_slots`, so that what is under test is the
//! NIC's own checking and execution. Each PE targets its right neighbour.
//!
//! Cases:
//! - `errors`: a bad rkey, a remote address past the heap's end, a bad lkey, local ranges
//!   outside their regions (heap, scratch buffer), an unknown opcode, a DS that does not fit the
//!   opcode, a wrong WQE index and a wrong QP number — each on a fresh device. Each must come
//!   back as an error CQE that `synchronize` reports with the PE, the queue's target PE, the
//!   WQE index, the opcode's name and the syndrome's; the queue latches the error, so a later
//!   ordinary put and p on it fail at once with the same error; nothing reaches the target; a
//!   good device works afterwards. Prints `ERR <label>: <text>`.
//! - `atomics`: masked fetch-and-add with field boundaries (two 16-bit fields in a u32; 16-,
//!   16- and 32-bit fields in a u64), general masked compare-and-swap (4 bytes; 8 bytes, a
//!   two-slot WQE) hitting and missing, executed through `ibgda_post_unchecked` with the prior
//!   value read from the queue's scratch buffer; fenced WQEs (raw slots with the fence flag, and
//!   `fence()` before an unchecked post): every result is what `NicAtomic::apply` predicts.
//! - `small-queue`: the largest inline put and put_signal on the smallest queue the
//!   configuration accepts (`OXSHMEM_IBGDA_NWQES`): either init rejects the size, naming the
//!   variable, or the operations work.
//! - `bad-env VAR`: `Device::init_with(ibgda)` must fail with an error naming `VAR`; a P2P device
//!   works afterwards.
//! - `connect`: the set-up through the NIC provider seam: every queue pair is in RTS, queue
//!   `rc` to `pe` is connected to the QP number of queue `rc` to this PE on `pe` (every PE's
//!   QP numbers gathered and compared), with `pe`'s port address (LID, GID); keys are nonzero
//!   and distinct; `OXSHMEM_NIC=devx` fails at init in this build, naming the variable, and
//!   so does hns asked of it (`OXSHMEM_SOFTNIC_LAYOUT=hns`); the software NIC standing in for
//!   an hns NIC connects hns queues the same way.
//! - `unattended ROUNDS`: 4 blocks × 64 device threads each do one `p` to the right neighbour
//!   per round and then wait for a flag that the neighbour's host sets once every thread's
//!   value has arrived — no quiet, and nothing on this PE waits for a completion, so with the
//!   NIC thread asleep (it sleeps when idle, and the job sets `OXSHMEM_SOFTNIC_NAP_MS` to
//!   minutes) only the ringing threads themselves can execute the WQEs: 256 threads ringing at
//!   once, most of them finding the NIC taken by another. A doorbell left unserved never
//!   arrives, and the host names the round and the thread. Each round starts only once the
//!   host has seen the NIC thread asleep (blocked, in `/proc`) with every device thread
//!   waiting at the round's start — not after a pause that a loaded machine may outlast.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use oxshmem::Shmem;
use oxshmem_device::ibgda::layout::{
    MAX_INLINE, Mlx5, NicAtomic, NicLayout, Remote, Sge, WorkRequest, WqeFlags, Wqebb,
};
use oxshmem_device::ibgda::qp::QpError;
use oxshmem_device::{DevPtr, Device, DeviceError, Grid, Thread};
use oxshmem_tests::pe::{OrDie, check, check_eq, dispatch, fail, finish, init};

/// What a device thread reports back to the host: a value, a queue index and the queue's error.
type Shared<T> = Arc<Mutex<Option<(T, usize, Option<QpError>)>>>;

fn main() {
    dispatch(
        "pe-nic",
        &[
            ("errors", errors),
            ("atomics", atomics),
            ("small-queue", small_queue),
            ("bad-env", bad_env),
            ("unattended", unattended),
            ("connect", connect),
        ],
    );
}

/// An IBGDA device (collective).
fn device(shmem: &Shmem) -> Device {
    let dev = Device::init_with(shmem, Some("ibgda")).unwrap_or_else(|e| fail(format_args!("Device::init_with: {e}")));
    check(dev.ibgda().is_some(), "the IBGDA channel is up");
    dev
}

fn neighbours(shmem: &Shmem) -> (usize, usize) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    (me, (me + 1) % n)
}

/// Checks that `r` is an error whose text contains every one of `needles`; prints it.
#[track_caller]
fn expect_dev_err(label: &str, r: Result<(), DeviceError>, needles: &[&str]) -> String {
    match r {
        Ok(()) => fail(format_args!("{label}: expected a device error, got Ok")),
        Err(e) => {
            let text = e.to_string();
            for n in needles {
                check(text.contains(n), format!("{label}: error text {text:?} does not contain {n:?}"));
            }
            println!("ERR {label}: {text}");
            text
        }
    }
}

/// Where a fetched value lands: a scratch slot of `t`'s queue to `pe`.
struct Scratch {
    slot: u64,
    sge: Sge,
}

fn scratch(t: &Thread<'_>, pe: usize, width: u32) -> Scratch {
    let (qp, _) = t.ibgda_queue(pe);
    let slot = qp.ibuf_acquire(1, &mut || true).unwrap_or_else(|| fail("no scratch slot"));
    Scratch { slot, sge: Sge { addr: qp.ibuf_addr(slot), len: width, lkey: t.ibgda_keys().ibuf } }
}

/// Reads and frees a scratch slot: 4-byte results land big-endian, 8-byte ones in host order.
fn take(t: &Thread<'_>, pe: usize, s: Scratch, width: u32) -> u64 {
    let (qp, _) = t.ibgda_queue(pe);
    let raw = qp.ibuf_read(s.slot);
    qp.ibuf_release(s.slot);
    if width == 4 { u64::from(u32::from_be_bytes((raw as u32).to_ne_bytes())) } else { raw }
}

// ---- errors ------------------------------------------------------------------------------

/// One error case: what the device thread posts, and what the report must name.
struct ErrCase {
    label: &'static str,
    opcode: &'static str,
    syndrome: &'static str,
}

const ERR_CASES: [ErrCase; 10] = [
    ErrCase { label: "bad rkey", opcode: "RDMA_WRITE", syndrome: "REMOTE_ACCESS_ERR (syndrome 0x13)" },
    ErrCase {
        label: "remote address past the heap's end",
        opcode: "RDMA_READ",
        syndrome: "REMOTE_ACCESS_ERR (syndrome 0x13)",
    },
    ErrCase { label: "bad lkey", opcode: "RDMA_WRITE", syndrome: "LOCAL_PROT_ERR (syndrome 0x04)" },
    ErrCase {
        label: "local range past the heap's end",
        opcode: "RDMA_WRITE",
        syndrome: "LOCAL_PROT_ERR (syndrome 0x04)",
    },
    ErrCase {
        label: "atomic result past the scratch buffer",
        opcode: "ATOMIC_FA",
        syndrome: "LOCAL_PROT_ERR (syndrome 0x04)",
    },
    ErrCase { label: "unknown opcode", opcode: "unknown opcode", syndrome: "LOCAL_QP_OP_ERR (syndrome 0x02)" },
    ErrCase {
        label: "DS that does not fit the opcode",
        opcode: "RDMA_WRITE",
        syndrome: "LOCAL_LENGTH_ERR (syndrome 0x01)",
    },
    ErrCase {
        label: "two-slot masked CS with one slot's DS",
        opcode: "ATOMIC_MASKED_CS",
        syndrome: "LOCAL_LENGTH_ERR (syndrome 0x01)",
    },
    ErrCase { label: "wrong WQE index", opcode: "RDMA_WRITE", syndrome: "LOCAL_QP_OP_ERR (syndrome 0x02)" },
    ErrCase { label: "wrong QP number", opcode: "RDMA_WRITE", syndrome: "LOCAL_QP_OP_ERR (syndrome 0x02)" },
];

/// Posts error case `k` from device thread `t` to `pe`; `dst` is a symmetric buffer (64 words)
/// whose copy on `pe` must stay untouched.
fn post_bad(t: &Thread<'_>, k: usize, pe: usize, dst: DevPtr<u64>, src: DevPtr<u64>, heap: (u64, u64)) {
    let (base, size) = heap;
    let good = t.ibgda_remote(pe, dst.addr());
    let local = Sge { addr: src.addr(), len: 8, lkey: t.ibgda_keys().heap };
    let (qp, _) = t.ibgda_queue(pe);
    let (idx, qpn, nwqes) = (qp.resv_head(), qp.qpn(), qp.nwqes());
    let signal = WqeFlags { signal: true, fence: false };
    let raw = |wr: WorkRequest<'_>, idx: u64, qpn: u32| -> Vec<Wqebb> {
        let mut s = vec![[0u8; 64]; Mlx5::wqebbs(&wr)];
        Mlx5::encode(&wr, idx, nwqes, qpn, signal, &mut s);
        s
    };
    let write = WorkRequest::Write { local, remote: good };
    match k {
        0 => t.ibgda_post_unchecked(
            pe,
            WorkRequest::Write { local, remote: Remote { rkey: good.rkey ^ 0x5a5a, ..good } },
        ),
        1 => {
            // 8 bytes from 4 below the end of the target's heap.
            let remote = t.ibgda_remote(pe, base + size - 4);
            t.ibgda_post_unchecked(pe, WorkRequest::Read { local, remote });
        }
        2 => t.ibgda_post_unchecked(pe, WorkRequest::Write { local: Sge { lkey: 0x777, ..local }, remote: good }),
        3 => t.ibgda_post_unchecked(
            pe,
            WorkRequest::Write { local: Sge { addr: base + size - 4, ..local }, remote: good },
        ),
        4 => {
            // The prior value would land 4 bytes past the registration that holds the queues'
            // scratch buffers: the atomic must not execute at all.
            let keys = t.ibgda_keys();
            let (at, len) = keys.ibuf_region;
            let result = Sge { addr: at + len - 4, len: 8, lkey: keys.ibuf };
            let op = NicAtomic::FetchAdd { add: 1, boundary: 0 };
            t.ibgda_post_unchecked(pe, WorkRequest::Atomic { op, width: 8, remote: good, result });
        }
        5 => {
            let mut s = raw(write, idx, qpn);
            s[0][3] = 0x3e;
            t.ibgda_post_slots(pe, &s);
        }
        6 => {
            let mut s = raw(write, idx, qpn);
            s[0][7] = 4;
            t.ibgda_post_slots(pe, &s);
        }
        7 => {
            // A masked 8-byte CS needs two slots (DS 5); claim DS 4.
            let op = NicAtomic::CompareSwap { swap: 1, compare: 0, swap_mask: 0xff, compare_mask: 0 };
            let wr = WorkRequest::Atomic { op, width: 8, remote: good, result: Sge { len: 8, ..local } };
            let mut s = raw(wr, idx, qpn);
            check_eq("slots of a masked 8-byte CS", 2, s.len());
            s[0][7] = 4;
            t.ibgda_post_slots(pe, &s[..1]);
        }
        8 => t.ibgda_post_slots(pe, &raw(write, idx + 1, qpn)),
        _ => t.ibgda_post_slots(pe, &raw(write, idx, qpn ^ 1)),
    }
}

fn errors(_: &[String]) {
    let shmem = init();
    let (me, right) = neighbours(&shmem);
    let buf = shmem.alloc_slice(64, 0u64).or_die("alloc_slice");
    let src = shmem.alloc_slice(64, 0u64).or_die("alloc_slice");
    src.copy_from_slice(&[0x5eed_0000 + me as u64; 64]);
    let (pd, ps) = (DevPtr::from_slice(&buf), DevPtr::from_slice(&src));
    let (base, size) = oxshmem::raw::heap_range().or_die("heap_range");
    let heap = (base as u64, size as u64);
    shmem.barrier_all().or_die("barrier");
    for (k, case) in ERR_CASES.iter().enumerate() {
        let dev = device(&shmem);
        let stream = dev.stream();
        // (WQE index posted at, queue index, the latched error) from the device thread.
        let seen: Shared<u64> = Arc::default();
        let seen2 = seen.clone();
        stream.launch(Grid::new(1, 1), move |t| {
            let (qp, index) = t.ibgda_queue(right);
            let idx = qp.resv_head();
            post_bad(t, k, right, pd, ps, heap);
            *seen2.lock().unwrap() = Some((idx, index, qp.error()));
        });
        let want_head = format!("PE {me}: device kernel (block 0, thread 0): the NIC failed WQE ");
        let want_tail =
            format!("({}) on the IBGDA queue to PE {right}: {}; the queue is in error", case.opcode, case.syndrome);
        let first = expect_dev_err(case.label, stream.synchronize(), &[&want_head, &want_tail]);
        let (idx, index, latched) = seen.lock().unwrap().take().unwrap_or_else(|| fail("the kernel did not run"));
        check(first.contains(&format!("failed WQE {idx} (")), format!("{}: WQE index {idx} in {first:?}", case.label));
        let Some(QpError::Nic { wqe_counter, syndrome, opcode }) = latched else {
            fail(format_args!("{}: the queue did not latch a NIC error: {latched:?}", case.label));
        };
        check_eq(format!("{}: latched WQE index", case.label), idx as u16, wqe_counter);
        check(
            case.syndrome.contains(&format!("(syndrome {syndrome:#04x})")),
            format!("{}: latched syndrome {syndrome:#04x}", case.label),
        );
        check(
            case.opcode == oxshmem_device::ibgda::mlx5::opcode::name(opcode),
            format!("{}: latched opcode {opcode:#x}", case.label),
        );

        // The queue stays in error: an ordinary put and p on it fail at once with the same
        // error (they would otherwise wait for a completion that never comes). "At once" is
        // checked without a clock: neither reserved a slot of the queue, so neither posted
        // anything whose completion it could have waited for.
        let posted: Shared<(u64, u64)> = Arc::default();
        let posted2 = posted.clone();
        stream.launch(Grid::new(1, 1), move |t| {
            let before = t.ibgda_queue(right).0.resv_head();
            t.put(pd, &[0xbad0_0000 + k as u64; 64], right);
            t.p(pd.offset(1), 0xbad1, right);
            let (qp, index) = t.ibgda_queue(right);
            *posted2.lock().unwrap() = Some(((before, qp.resv_head()), index, qp.error()));
        });
        let again = expect_dev_err(&format!("{} (put after)", case.label), stream.synchronize(), &[]);
        check_eq(format!("{}: the error after a later put", case.label), first.clone(), again);
        let ((before, after), index2, latched2) =
            posted.lock().unwrap().take().unwrap_or_else(|| fail("the kernel did not run"));
        check_eq(format!("{}: the later put's queue", case.label), index, index2);
        check_eq(format!("{}: the error latched after the later put", case.label), latched, latched2);
        check_eq(
            format!(
                "{}: slots the put and p on a queue in error reserved (none: they fail before posting)",
                case.label
            ),
            before,
            after,
        );
        drop(stream);
        let fin = expect_dev_err(&format!("{} (finalize)", case.label), dev.finalize(), &[]);
        check_eq(format!("{}: the error finalize reports", case.label), first, fin);
        shmem.barrier_all().or_die("barrier");
        check_eq(
            format!("{}: the target buffer after the failed operations", case.label),
            vec![0u64; 64],
            buf.to_vec(),
        );
        shmem.barrier_all().or_die("barrier");
    }

    // A good device afterwards: put, get and a fetching atomic through the NIC.
    let dev = device(&shmem);
    let stream = dev.stream();
    let got = Arc::new(Mutex::new((0u64, 0u64)));
    let got2 = got.clone();
    stream.launch(Grid::new(1, 1), move |t| {
        t.put(pd, &[me as u64 + 40; 64], right);
        t.quiet();
        let g = t.g(pd.offset(7), right);
        let f = t.atomic_fetch_add(pd.offset(8), 2u64, right);
        *got2.lock().unwrap() = (g, f);
    });
    stream.synchronize().unwrap_or_else(|e| fail(format_args!("a good device after the NIC errors: {e}")));
    check_eq("g after a put on a good device", (me as u64 + 40, me as u64 + 40), *got.lock().unwrap());
    drop(stream);
    dev.finalize().unwrap_or_else(|e| fail(format_args!("Device::finalize: {e}")));
    shmem.barrier_all().or_die("barrier");
    let left = (me + shmem.n_pes() - 1) % shmem.n_pes();
    check_eq("word 0 after the left neighbour's good put", left as u64 + 40, buf.read(0));
    check_eq("word 8 after the left neighbour's fetch_add", left as u64 + 42, buf.read(8));
    println!("PE {me}: {} NIC errors reported, latched and survived (ibgda)", ERR_CASES.len());
    finish(shmem);
}

// ---- atomics and fences --------------------------------------------------------------------

/// The initial value of word `i` (32-bit words: the low half) on PE `pe`.
fn init64(pe: usize, i: usize) -> u64 {
    let v = [
        0xdead_beef_cafe_f00d,
        0xbeef_beef_cafe_f00d,
        0x0000_0000_ffff_ffff,
        0x0123_4567_89ab_cdef,
        0,
        0x7000_0000_0000_0000,
        0,
        0,
    ];
    v[i] ^ (pe as u64) << 40
}

fn init32(pe: usize, i: usize) -> u32 {
    [0x7ffe_fffe, 0x1234_5678, 0x1334_5678, 0][i] ^ (pe as u32) << 28
}

/// The 4-byte atomics: (word, op). Two 16-bit fields; a general masked CS that hits, and the
/// same that misses.
fn ops32() -> [(usize, NicAtomic); 3] {
    let cs = NicAtomic::CompareSwap {
        swap: 0xaaaa_5555,
        compare: 0x0200_0000,
        swap_mask: 0x00ff_ff00,
        compare_mask: 0x0f00_0000,
    };
    [(0, NicAtomic::FetchAdd { add: 0x0003_0002, boundary: 0x0000_8000 }), (1, cs), (2, cs)]
}

/// The 8-byte atomics: fields of 16, 16 and 32 bits; a masked CS (two slots) that hits and
/// one that misses.
fn ops64() -> [(usize, NicAtomic); 3] {
    let cs = NicAtomic::CompareSwap {
        swap: 0x1111_2222_3333_4444,
        compare: 0x00ad_0000_0000_0000,
        swap_mask: 0x0000_ffff_0000_ffff,
        compare_mask: 0x00ff_0000_0000_0000,
    };
    [(2, NicAtomic::FetchAdd { add: 0x0000_0001_0001_0001, boundary: 0x8000_0000_8000_8000 }), (0, cs), (1, cs)]
}

fn atomics(_: &[String]) {
    let shmem = init();
    let (me, right) = neighbours(&shmem);
    let left = (me + shmem.n_pes() - 1) % shmem.n_pes();
    let w32 = shmem.alloc_slice(4, 0u32).or_die("alloc_slice");
    let w64 = shmem.alloc_slice(8, 0u64).or_die("alloc_slice");
    for i in 0..4 {
        w32.write(i, init32(me, i));
    }
    for i in 0..8 {
        w64.write(i, init64(me, i));
    }
    const FENCED: u64 = 0xfe9c_ed00_0000_0001;
    w64.write(4, FENCED + me as u64);
    shmem.barrier_all().or_die("barrier");
    let (p32, p64) = (DevPtr::from_slice(&w32), DevPtr::from_slice(&w64));
    // Sanity of the chosen operands: the field boundaries and masks matter.
    let (_, fa32) = ops32()[0];
    check(fa32.apply(0x7ffe_fffe, 4) != 0x7ffe_fffe + 0x0003_0002, "the 16-bit fields stop a carry");
    let dev = device(&shmem);
    let stream = dev.stream();
    stream.launch(Grid::new(1, 1), move |t| {
        let amo = |addr: u64, width: u32, op: NicAtomic| -> u64 {
            let s = scratch(t, right, width);
            let result = s.sge;
            t.ibgda_post_unchecked(
                right,
                WorkRequest::Atomic { op, width, remote: t.ibgda_remote(right, addr), result },
            );
            take(t, right, s, width)
        };
        for (i, op) in ops32() {
            let (old, want_old) = (amo(p32.offset(i).addr(), 4, op), u64::from(init32(right, i)));
            check_eq(format!("4-byte {op:?} on word {i}: prior value"), want_old, old);
            let now = u64::from(t.g(p32.offset(i), right));
            check_eq(format!("4-byte {op:?} on word {i}: new value"), op.apply(old, 4), now);
        }
        for (i, op) in ops64() {
            let (qp, _) = t.ibgda_queue(right);
            let before = qp.resv_head();
            let old = amo(p64.offset(i).addr(), 8, op);
            let slots = qp.resv_head() - before;
            let wr_slots =
                Mlx5::wqebbs(&WorkRequest::Atomic { op, width: 8, remote: Remote::default(), result: Sge::default() });
            // A two-slot WQE is followed by a signalled NOP (the completion names its slot).
            check_eq(format!("slots of 8-byte {op:?}"), wr_slots as u64 + u64::from(wr_slots > 1), slots);
            check_eq(format!("8-byte {op:?} on word {i}: prior value"), init64(right, i), old);
            let now = t.g(p64.offset(i), right);
            check_eq(format!("8-byte {op:?} on word {i}: new value"), op.apply(old, 8), now);
        }
        let (cs_hit, cs_miss) = (ops64()[1], ops64()[2]);
        check(
            Mlx5::wqebbs(&WorkRequest::Atomic {
                op: cs_hit.1,
                width: 8,
                remote: Remote::default(),
                result: Sge::default(),
            }) == 2,
            "a masked 8-byte CS spans two slots",
        );
        check(cs_hit.1.apply(init64(right, cs_hit.0), 8) != init64(right, cs_hit.0), "the CS hits");
        check(cs_miss.1.apply(init64(right, cs_miss.0), 8) == init64(right, cs_miss.0), "the CS misses");

        // Fenced WQEs, raw: an unsignalled write of word 4 (ours) to the target's word 3, then a
        // read of it with the fence flag, signalled: the read sees the write.
        let (qp, _) = t.ibgda_queue(right);
        let idx = qp.resv_head();
        let s = scratch(t, right, 8);
        let write = WorkRequest::Write {
            local: Sge { addr: p64.offset(4).addr(), len: 8, lkey: t.ibgda_keys().heap },
            remote: t.ibgda_remote(right, p64.offset(3).addr()),
        };
        let read = WorkRequest::Read { local: s.sge, remote: t.ibgda_remote(right, p64.offset(3).addr()) };
        let mut slots = [[0u8; 64]; 2];
        Mlx5::encode(&write, idx, qp.nwqes(), qp.qpn(), WqeFlags { signal: false, fence: false }, &mut slots[..1]);
        Mlx5::encode(&read, idx + 1, qp.nwqes(), qp.qpn(), WqeFlags { signal: true, fence: true }, &mut slots[1..]);
        t.ibgda_post_slots(right, &slots);
        check_eq("a fenced read after a write on one queue", FENCED + me as u64, take(t, right, s, 8));

        // fence() marks the next WQE fenced: an atomic add, fence, then an unchecked read.
        t.atomic_add(p64.offset(5), 5u64, right);
        t.fence();
        let s = scratch(t, right, 8);
        let read = WorkRequest::Read { local: s.sge, remote: t.ibgda_remote(right, p64.offset(5).addr()) };
        t.ibgda_post_unchecked(right, read);
        check_eq("a read after atomic_add + fence", init64(right, 5) + 5, take(t, right, s, 8));
        t.quiet();
    });
    stream.synchronize().unwrap_or_else(|e| fail(format_args!("synchronize: {e}")));
    drop(stream);
    dev.finalize().unwrap_or_else(|e| fail(format_args!("Device::finalize: {e}")));
    shmem.barrier_all().or_die("barrier");
    // What the left neighbour did to this PE's words, computed by hand (not with `apply`).
    let v = init32(me, 0);
    let fields = (((v >> 16) + 3) & 0xffff) << 16 | ((v & 0xffff) + 2) & 0xffff;
    check_eq("word32 0 after two 16-bit field adds", fields, w32.read(0));
    check_eq("word32 1 after a masked CS that hits", init32(me, 1) & 0xff00_00ff | 0x00aa_5500, w32.read(1));
    check_eq("word32 2 after a masked CS that misses", init32(me, 2), w32.read(2));
    let v = init64(me, 2);
    let fields = ((v >> 32) + 1) << 32 | ((((v >> 16) & 0xffff) + 1) & 0xffff) << 16 | ((v & 0xffff) + 1) & 0xffff;
    check_eq("word64 2 after 16/16/32-bit field adds", fields, w64.read(2));
    let m = 0x0000_ffff_0000_ffffu64;
    check_eq("word64 0 after a masked CS that hits", init64(me, 0) & !m | 0x1111_2222_3333_4444 & m, w64.read(0));
    check_eq("word64 1 after a masked CS that misses", init64(me, 1), w64.read(1));
    for (i, op) in ops32() {
        let want = op.apply(u64::from(init32(me, i)), 4) as u32;
        check_eq(format!("word32 {i} after the left neighbour's {op:?}"), want, w32.read(i));
    }
    for (i, op) in ops64() {
        check_eq(format!("word64 {i} after the left neighbour's {op:?}"), op.apply(init64(me, i), 8), w64.read(i));
    }
    check_eq("word64 3 after the left neighbour's write", FENCED + left as u64, w64.read(3));
    check_eq("word64 5 after the left neighbour's add", init64(me, 5) + 5, w64.read(5));
    let mode = dev_mode();
    println!("PE {me}: masked atomics and fenced WQEs ok ({mode} CQ)");
    finish(shmem);
}

fn dev_mode() -> String {
    std::env::var("OXSHMEM_IBGDA_CQ_MODE").unwrap_or_else(|_| "collapsed".into())
}

// ---- the smallest queue ------------------------------------------------------------------

fn small_queue(_: &[String]) {
    let shmem = init();
    let (me, right) = neighbours(&shmem);
    let var = std::env::var("OXSHMEM_IBGDA_NWQES").unwrap_or_default();
    let buf = shmem.alloc_slice(MAX_INLINE, 0u8).or_die("alloc_slice");
    let sig = shmem.alloc_slice(1, 0u64).or_die("alloc_slice");
    let (pb, psig) = (DevPtr::from_slice(&buf), DevPtr::from_slice(&sig));
    shmem.barrier_all().or_die("barrier");
    let dev = match Device::init_with(&shmem, Some("ibgda")) {
        Err(e) => {
            let text = e.to_string();
            check(text.contains("OXSHMEM_IBGDA_NWQES"), format!("init error {text:?} names OXSHMEM_IBGDA_NWQES"));
            println!("PE {me}: OXSHMEM_IBGDA_NWQES={var} rejected at init: {text}");
            finish(shmem);
            return;
        }
        Ok(d) => d,
    };
    let stream = dev.stream();
    stream.launch(Grid::new(1, 1), move |t| {
        let data: Vec<u8> = (0..MAX_INLINE).map(|i| (i + me) as u8).collect();
        t.put(pb, &data, right);
        t.put_signal(pb, &data, psig, 1, oxshmem::SignalOp::Add, right);
        t.quiet();
    });
    stream.synchronize().unwrap_or_else(|e| fail(format_args!("OXSHMEM_IBGDA_NWQES={var}: {e}")));
    drop(stream);
    dev.finalize().unwrap_or_else(|e| fail(format_args!("Device::finalize: {e}")));
    shmem.barrier_all().or_die("barrier");
    let left = (me + shmem.n_pes() - 1) % shmem.n_pes();
    let want: Vec<u8> = (0..MAX_INLINE).map(|i| (i + left) as u8).collect();
    check_eq("the largest inline put", want, buf.to_vec());
    check_eq("its signal", 1, sig.read(0));
    println!("PE {me}: OXSHMEM_IBGDA_NWQES={var}: the largest inline put and put_signal work");
    finish(shmem);
}

// ---- configuration errors ------------------------------------------------------------------

fn bad_env(args: &[String]) {
    let var = args.first().cloned().unwrap_or_else(|| fail("bad-env needs the variable's name"));
    let value = std::env::var(&var).unwrap_or_else(|_| fail(format_args!("{var} is not set")));
    let shmem = init();
    let me = shmem.my_pe();
    match Device::init_with(&shmem, Some("ibgda")) {
        Ok(_) => fail(format_args!("Device::init_with(ibgda) with {var}={value:?}: expected an error")),
        Err(e) => {
            let text = e.to_string();
            let want = format!("PE {me}: device init: {var}=");
            check(text.contains(&want), format!("init error {text:?} does not contain {want:?}"));
            check(text.contains(value.trim()), format!("init error {text:?} does not quote {value:?}"));
            println!("ERR {var}: {text}");
        }
    }
    // The failed init left nothing behind that breaks a good one.
    let dev = Device::init_with(&shmem, Some("p2p")).unwrap_or_else(|e| fail(format_args!("p2p after: {e}")));
    dev.finalize().unwrap_or_else(|e| fail(format_args!("Device::finalize: {e}")));
    println!("PE {me}: {var} rejected");
    finish(shmem);
}

// ---- doorbells nobody waits for ----------------------------------------------------------

fn unattended(args: &[String]) {
    let rounds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(30);
    let shmem = init();
    let (me, right) = neighbours(&shmem);
    let left = (me + shmem.n_pes() - 1) % shmem.n_pes();
    let grid = Grid::new(4, 64);
    let nt = grid.blocks * grid.threads;
    let slots = shmem.alloc_slice(nt * 8, 0u64).or_die("alloc_slice");
    let flag = shmem.alloc_slice(1, 0u64).or_die("alloc_slice");
    let (ps, pf) = (DevPtr::from_slice(&slots), DevPtr::from_slice(&flag));
    let dev = device(&shmem);
    check(dev.ibgda().is_some_and(|ib| ib.config().nic_nap_ms >= 60_000), "OXSHMEM_SOFTNIC_NAP_MS is minutes");
    let nic = nic_thread();
    shmem.barrier_all().or_die("barrier");
    let stream = dev.stream();
    // (device threads at the start of the round, the round released): each round starts when
    // the host releases it, not after a pause.
    let start: Arc<(Mutex<(usize, u64)>, Condvar)> = Arc::default();
    let start2 = start.clone();
    stream.launch(grid, move |t| {
        let mine = ps.offset(t.global_idx() * 8); // a cache line per thread
        let (m, cv) = &*start2;
        for round in 1..=rounds {
            let mut g = m.lock().unwrap();
            g.0 += 1;
            cv.notify_all();
            while g.1 < round {
                g = cv.wait(g).unwrap();
            }
            drop(g);
            t.p(mine, round, right);
            t.signal_wait_until(pf, oxshmem::Cmp::Ge, round);
        }
    });
    let (m, cv) = &*start;
    for round in 1..=rounds {
        // Every device thread of ours waits to start the round: none rings, none drives the
        // NIC. Then the NIC thread must be asleep before the round starts (nothing but a
        // doorbell of ours can wake it now: its nap is minutes): the point of the case. These
        // waits are hang guards; past them the case fails, it does not run without its
        // precondition.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut g = m.lock().unwrap();
        while g.0 < nt * round as usize {
            if Instant::now() > deadline {
                fail(format_args!(
                    "round {round}: only {} of {nt} device threads reached its start",
                    g.0 - nt * (round as usize - 1)
                ));
            }
            g = cv.wait_timeout(g, Duration::from_millis(100)).unwrap().0;
        }
        drop(g);
        while !nic.asleep() {
            if Instant::now() > deadline {
                fail(format_args!(
                    "round {round}: the NIC thread (tid {}) was never seen asleep with no work announced; \
                     the case would not test doorbells rung while it sleeps",
                    nic.tid
                ));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        m.lock().unwrap().1 = round;
        cv.notify_all();
        let deadline = Instant::now() + Duration::from_secs(60);
        for k in 0..nt {
            while slots.read(k * 8) < round {
                if Instant::now() > deadline {
                    fail(format_args!(
                        "round {round}: the p of PE {left}'s device thread {k} never arrived (slot holds {}): \
                         a doorbell rung while the NIC thread slept was left unserved",
                        slots.read(k * 8)
                    ));
                }
                std::thread::yield_now();
            }
        }
        flag.p(0, round, left).or_die("p flag");
    }
    stream.synchronize().unwrap_or_else(|e| fail(format_args!("synchronize: {e}")));
    drop(stream);
    dev.finalize().unwrap_or_else(|e| fail(format_args!("Device::finalize: {e}")));
    shmem.barrier_all().or_die("barrier");
    println!("PE {me}: {rounds} rounds of {nt} unattended p delivered with the NIC thread asleep");
    finish(shmem);
}

/// The software NIC's thread of this process, seen through `/proc` (the device crate has no
/// accessor for whether it sleeps).
struct NicThread {
    tid: i32,
    /// Whether `/proc/self/task/<tid>/syscall` can be read here (it needs no privilege for a
    /// thread of this process, but a kernel may lack it).
    syscall_readable: bool,
}

/// The one thread named `oxshmem-softnic` in this process (it names itself once it runs:
/// looked for until then, within a hang guard).
fn nic_thread() -> NicThread {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let tids: Vec<i32> = std::fs::read_dir("/proc/self/task")
            .unwrap_or_else(|e| fail(format_args!("reading /proc/self/task: {e}")))
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|tid| {
                std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                    .is_ok_and(|c| c.trim() == "oxshmem-softnic")
            })
            .collect();
        match tids[..] {
            [tid] => {
                let syscall_readable = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).is_ok();
                return NicThread { tid, syscall_readable };
            }
            [] if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            _ => fail(format_args!("expected one oxshmem-softnic thread in this process, found {tids:?}")),
        }
    }
}

impl NicThread {
    /// Whether the thread is asleep: blocked ('S'), in `futex` where the kernel says — the
    /// NIC thread blocks nowhere else than in its nap (`park_timeout`) when it has no work.
    fn asleep(&self) -> bool {
        let tid = self.tid;
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
            .unwrap_or_else(|e| fail(format_args!("the NIC thread {tid} is gone: {e}")));
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        if state != Some('S') {
            return false;
        }
        if !self.syscall_readable {
            return true;
        }
        let call = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).unwrap_or_default();
        call.split_whitespace().next().and_then(|n| n.parse::<libc::c_long>().ok()) == Some(libc::SYS_futex)
    }
}

fn connect(_: &[String]) {
    use oxshmem_device::nic::provider::QpState;
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let dev = device(&shmem);
    let ib = dev.ibgda().unwrap_or_else(|| fail("no IBGDA channel"));
    let nic = ib.provider();
    let queues = ib.queues::<oxshmem_device::ibgda::layout::Mlx5>();
    let num_rc = queues.len() / n;
    check_eq("queues: num_rc per peer", num_rc * n, queues.len());
    // Every PE's QP numbers, queue (rc, pe) at [rc * n + pe], gathered in one table.
    let mine = shmem.alloc_slice(queues.len(), 0u32).or_die("alloc_slice");
    let all = shmem.alloc_slice(queues.len() * n, 0u32).or_die("alloc_slice");
    for (i, q) in queues.iter().enumerate() {
        check_eq(format_args!("queue {i}'s target"), (i % n) as u32, q.peer());
        mine.write(i, q.qpn());
    }
    shmem.team_world().fcollect(&all, &mine, queues.len()).or_die("fcollect");
    let table = all.to_vec();
    let mut seen = std::collections::HashSet::new();
    for (i, q) in queues.iter().enumerate() {
        let (rc, pe) = (i / n, i % n);
        check(seen.insert(q.qpn()), format_args!("QP number {:#x} is unique here", q.qpn()));
        check(q.qpn() <= 0x00ff_ffff, "a QP number has 24 bits");
        check_eq(format_args!("queue ({rc}, {pe})'s state"), Some(QpState::Rts), nic.qp_state(q.qpn()));
        let peer = nic.qp_peer(q.qpn()).unwrap_or_else(|| fail(format_args!("queue ({rc}, {pe}) has no peer")));
        let theirs = table[pe * queues.len() + rc * n + me];
        check_eq(format_args!("queue ({rc}, {pe})'s peer QP: PE {pe}'s queue ({rc}, {me})"), theirs, peer.qpn);
        check_eq(format_args!("queue ({rc}, {pe})'s peer LID"), pe as u16 + 1, peer.lid);
        check_eq(
            format_args!("queue ({rc}, {pe})'s peer GID names PE {pe}"),
            &(pe as u64).to_be_bytes()[..],
            &peer.gid[8..],
        );
    }
    let got = Arc::new(Mutex::new(None));
    let into = got.clone();
    let stream = dev.stream();
    stream.launch(Grid::new(1, 1), move |t| *into.lock().expect("lock") = Some(t.ibgda_keys()));
    stream.synchronize().unwrap_or_else(|e| fail(format_args!("synchronize: {e}")));
    drop(stream);
    let keys = got.lock().expect("lock").unwrap_or_else(|| fail("the kernel did not run"));
    check(keys.heap != 0 && keys.implicit != 0 && keys.ibuf != 0, "keys are nonzero");
    check(keys.heap != keys.implicit && keys.implicit != keys.ibuf && keys.heap != keys.ibuf, "keys are distinct");
    println!("PE {me}: {} queue pairs connected through the {} provider", queues.len(), nic.describe().provider);
    mine.free().or_die("free");
    all.free().or_die("free");
    dev.finalize().unwrap_or_else(|e| fail(format_args!("finalize: {e}")));

    // A hardware NIC demanded where this build has none: init fails, naming the variable.
    // SAFETY: no other thread reads the environment now.
    unsafe { std::env::set_var("OXSHMEM_NIC", "devx") };
    match Device::init_with(&shmem, Some("ibgda")) {
        Ok(_) => fail("OXSHMEM_NIC=devx: expected init to fail"),
        Err(e) => {
            let text = e.to_string();
            check(text.contains("OXSHMEM_NIC=devx") && text.contains("no RDMA device"), format_args!("error {text:?}"));
            println!("ERR devx: {text}");
        }
    }
    // hns queues asked of an mlx5 hardware NIC: refused before any device is looked for.
    // SAFETY: as above.
    unsafe { std::env::set_var("OXSHMEM_SOFTNIC_LAYOUT", "hns") };
    match Device::init_with(&shmem, Some("ibgda")) {
        Ok(_) => fail("OXSHMEM_NIC=devx with OXSHMEM_SOFTNIC_LAYOUT=hns: expected init to fail"),
        Err(e) => {
            let text = e.to_string();
            check(text.contains("OXSHMEM_SOFTNIC_LAYOUT") && text.contains("mlx5"), format_args!("error {text:?}"));
            println!("ERR devx hns: {text}");
        }
    }
    // The software NIC standing in for an hns NIC: the same set-up, queues in hns format.
    // SAFETY: as above.
    unsafe { std::env::set_var("OXSHMEM_NIC", "soft") };
    let dev = device(&shmem);
    let ib = dev.ibgda().unwrap_or_else(|| fail("no IBGDA channel"));
    use oxshmem_device::ibgda::layout::{Hns, Layout};
    check_eq("the queues' layout with OXSHMEM_SOFTNIC_LAYOUT=hns", Layout::Hns, ib.layout());
    for (i, q) in ib.queues::<Hns>().iter().enumerate() {
        check_eq(format_args!("hns queue {i}'s state"), Some(QpState::Rts), ib.provider().qp_state(q.qpn()));
    }
    println!("PE {me}: {} hns queue pairs connected", ib.queues::<Hns>().len());
    dev.finalize().unwrap_or_else(|e| fail(format_args!("finalize: {e}")));
    finish(shmem);
}
