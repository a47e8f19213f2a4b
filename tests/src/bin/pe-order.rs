//! PE program for ordering and completion: `pe-order <case> ITERS`.
//!
//! Cases:
//! - `fence ITERS`: each PE puts a block to its right neighbour, fences, then raises a flag
//!   there (with `p`, an atomic set or an atomic increment); the neighbour waits for the flag
//!   and must find the whole block, then acknowledges so the next block may be sent.
//! - `quiet ITERS`: the same with non-blocking puts completed by `quiet`.
//! - `fence-small ITERS`: `fence` with a block of three words (24 bytes).
//! - `barrier-puts ITERS`: every PE puts a stamp into every PE; after `barrier_all` every stamp
//!   of this iteration is there.
//! - `barrier-count ITERS`: every PE increments a counter on PE 0, then `barrier_all` or
//!   `sync_all`; after it the counter holds at least every PE's increment of this iteration and
//!   no more than the next one's, so no PE passed the barrier early.

use oxshmem::{Cmp, Shmem};
use oxshmem_tests::pe::{OrDie, arg, check, check_slice, dispatch, finish, init};

fn main() {
    dispatch(
        "pe-order",
        &[
            ("fence", |a| flag_after_data(a, Completion::Fence, WORDS)),
            ("quiet", |a| flag_after_data(a, Completion::Quiet, WORDS)),
            // Three words, as a collective's signal tag: a transport may carry small writes
            // by another protocol than large ones (libfabric's shm did, and lost the order).
            ("fence-small", |a| flag_after_data(a, Completion::Fence, 3)),
            ("barrier-puts", barrier_puts),
            ("barrier-count", barrier_count),
        ],
    );
}

#[derive(Clone, Copy, PartialEq)]
enum Completion {
    Fence,
    Quiet,
}

const WORDS: usize = 1024;

fn block(pe: usize, k: u64, words: usize) -> Vec<u64> {
    (0..words as u64).map(|i| ((pe as u64) << 48) | (k << 16) | i).collect()
}

fn flag_after_data(args: &[String], how: Completion, words: usize) {
    let iters: u64 = arg(args, 0, 300);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let data = shmem.alloc_slice(words, 0u64).or_die("alloc_slice");
    let flag = shmem.alloc(0u64).or_die("alloc");
    let ack = shmem.alloc(0u64).or_die("alloc");
    let name = if how == Completion::Fence { "shmem_fence" } else { "shmem_quiet" };
    for k in 1..=iters {
        let mine = block(me, k, words);
        match (k % 3, how) {
            (0, _) => data.put(0, &mine, right).or_die("shmem_put"),
            (1, _) | (_, Completion::Quiet) => data.put_nbi(0, &mine, right).or_die("shmem_put_nbi"),
            _ => {
                // Two halves, the second first: the flag must still wait for both.
                data.put_nbi(words / 2, &mine[words / 2..], right).or_die("shmem_put_nbi");
                data.put(0, &mine[..words / 2], right).or_die("shmem_put");
            }
        }
        match how {
            Completion::Fence => shmem.fence().or_die("shmem_fence"),
            Completion::Quiet => shmem.quiet().or_die("shmem_quiet"),
        }
        match k % 3 {
            0 => flag.p(0, k, right).or_die("shmem_p of the flag"),
            1 => flag.atomic_set(0, k, right).or_die("shmem_atomic_set of the flag"),
            _ => flag.atomic_inc(0, right).or_die("shmem_atomic_inc of the flag"),
        }
        flag.wait(Cmp::Ge, k).or_die("shmem_wait_until(flag >= k)");
        check(flag.value() == k, format!("iteration {k}: flag from PE {left} is {}, expected {k}", flag.value()));
        check_slice(
            format!("iteration {k}: block put by PE {left} before {name} and its flag"),
            &block(left, k, words),
            &data.to_vec(),
        );
        ack.p(0, k, left).or_die("shmem_p of the ack");
        ack.wait(Cmp::Eq, k).or_die("shmem_wait_until(ack == k)");
    }
    println!("PE {me}: {iters} {name} iterations ok");
    drop((data, flag, ack));
    finish(shmem);
}

fn barrier_puts(args: &[String]) {
    let iters: u64 = arg(args, 0, 300);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let stamp = |pe: usize, k: u64| (k << 20) | pe as u64 | (1 << 63);
    // Two halves, used in turn: iteration k + 2 can only start after every PE has checked k.
    let slots = shmem.alloc_slice(2 * n, 0u64).or_die("alloc_slice");
    for k in 0..iters {
        let half = (k % 2) as usize * n;
        for pe in 0..n {
            let to = (me + pe) % n;
            if k % 2 == 0 {
                slots.put_nbi(half + me, &[stamp(me, k)], to).or_die("shmem_put_nbi");
            } else {
                slots.p(half + me, stamp(me, k), to).or_die("shmem_p");
            }
        }
        shmem.barrier_all().or_die("shmem_barrier_all");
        let expect: Vec<u64> = (0..n).map(|pe| stamp(pe, k)).collect();
        check_slice(format!("iteration {k}: stamps after shmem_barrier_all"), &expect, &slots.to_vec()[half..half + n]);
    }
    println!("PE {me}: {iters} barrier_all iterations ok");
    drop(slots);
    finish(shmem);
}

fn barrier_count(args: &[String]) {
    let iters: u64 = arg(args, 0, 300);
    let shmem: Shmem = init();
    let n = shmem.n_pes() as u64;
    let counter = shmem.alloc(0u64).or_die("alloc");
    for k in 0..iters {
        counter.atomic_inc(0, 0).or_die("shmem_atomic_inc on PE 0");
        let which = if k % 2 == 0 {
            shmem.barrier_all().or_die("shmem_barrier_all");
            "shmem_barrier_all"
        } else {
            shmem.sync_all().or_die("shmem_sync_all");
            "shmem_sync_all"
        };
        let c = counter.atomic_fetch(0, 0).or_die("shmem_atomic_fetch on PE 0");
        check(
            c >= n * (k + 1) && c <= n * (k + 2),
            format!(
                "after {which} number {k}: counter is {c}, expected {} ..= {} (a PE passed early?)",
                n * (k + 1),
                n * (k + 2)
            ),
        );
    }
    shmem.barrier_all().or_die("shmem_barrier_all");
    check(counter.atomic_fetch(0, 0).or_die("fetch") == n * iters, "final count");
    println!("PE {}: {iters} barriers, none passed early", shmem.my_pe());
    drop(counter);
    finish(shmem);
}
