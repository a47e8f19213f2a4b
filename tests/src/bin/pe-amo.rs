//! PE program for atomic memory operations: `pe-amo <case> [args]`.
//!
//! Cases:
//! - `ops`: every integer AMO, fetching and not, blocking and `_nbi`, safe and raw, on `i32`,
//!   `u32`, `i64`, `u64`, `isize` and `usize`, each PE on its own element of its right
//!   neighbour; every returned value and the final value are checked against a local model.
//! - `float`: fetch, set, swap (and their `_nbi` forms) on `f32` and `f64`.
//! - `add ITERS`: every PE hammers counters on PE 0 with add, inc and fetch_add; exact totals.
//! - `tickets ITERS`: fetch_add tickets from one counter are unique across all PEs (gathered
//!   on PE 0) and increase on each PE.
//! - `cas ITERS`: a compare-and-swap increment loop from every PE; exact total.
//! - `bits`: and/or/xor bit-setting from every PE; the expected masks.

use oxshmem::raw::{self, AmoOp};
use oxshmem::{AmoInt, Shmem, SymSlice};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, dispatch, finish, init};

fn main() {
    dispatch(
        "pe-amo",
        &[("ops", ops), ("float", float), ("add", add), ("tickets", tickets), ("cas", cas), ("bits", bits)],
    );
}

/// Runs the whole sequence of integer AMOs for one type; `$start` is a value near the type's
/// interesting edge (negative for signed types, high bit set for unsigned ones).
macro_rules! int_ops {
    ($shmem:expr, $t:ty, $start:expr) => {{
        let shmem: &Shmem = $shmem;
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let (right, left) = ((me + 1) % n, (me + n - 1) % n);
        let ty = stringify!($t);
        let obj: SymSlice<$t> = shmem.alloc_slice(n, 0 as $t).or_die("alloc_slice");
        let at = me; // my element on every PE: only I touch it
        let op = |name: &str| format!("{name}::<{ty}> on element {at} of PE {right}");
        // The model: what element `at` on `right` holds.
        let start: $t = $start;
        let base: $t = start.wrapping_add((me as $t).wrapping_mul(1000));

        obj.atomic_set(at, base, right).or_die(op("shmem_atomic_set"));
        check_eq(op("shmem_atomic_fetch"), base, obj.atomic_fetch(at, right).or_die(op("shmem_atomic_fetch")));
        let v1 = base.wrapping_add(17);
        check_eq(op("shmem_atomic_swap (old)"), base, obj.atomic_swap(at, v1, right).or_die(op("shmem_atomic_swap")));
        // A compare-swap whose condition fails changes nothing and returns the current value.
        check_eq(
            op("shmem_atomic_compare_swap with a false condition (old)"),
            v1,
            obj.atomic_compare_swap(at, base, 0 as $t, right).or_die(op("shmem_atomic_compare_swap")),
        );
        check_eq(op("value after a failed compare_swap"), v1, obj.g(at, right).or_die(op("shmem_g")));
        let v2 = v1.wrapping_mul(3);
        check_eq(
            op("shmem_atomic_compare_swap with a true condition (old)"),
            v1,
            obj.atomic_compare_swap(at, v1, v2, right).or_die(op("shmem_atomic_compare_swap")),
        );
        check_eq(
            op("shmem_atomic_fetch_inc (old)"),
            v2,
            obj.atomic_fetch_inc(at, right).or_die(op("shmem_atomic_fetch_inc")),
        );
        obj.atomic_inc(at, right).or_die(op("shmem_atomic_inc"));
        let v3 = v2.wrapping_add(2);
        let d: $t = (0 as $t).wrapping_sub(5); // -5, or wrapping for unsigned types
        check_eq(
            op("shmem_atomic_fetch_add (old)"),
            v3,
            obj.atomic_fetch_add(at, d, right).or_die(op("shmem_atomic_fetch_add")),
        );
        obj.atomic_add(at, 12 as $t, right).or_die(op("shmem_atomic_add"));
        let v4 = v3.wrapping_add(d).wrapping_add(12);
        check_eq(
            op("value after fetch_add(-5) and add(12)"),
            v4,
            obj.atomic_fetch(at, right).or_die(op("shmem_atomic_fetch")),
        );
        let m1: $t = 0x5A5A_5A5A as $t;
        check_eq(
            op("shmem_atomic_fetch_and (old)"),
            v4,
            obj.atomic_fetch_and(at, m1, right).or_die(op("shmem_atomic_fetch_and")),
        );
        let v5 = v4 & m1;
        let m2: $t = 0x0F0F_00F0 as $t;
        check_eq(
            op("shmem_atomic_fetch_or (old)"),
            v5,
            obj.atomic_fetch_or(at, m2, right).or_die(op("shmem_atomic_fetch_or")),
        );
        let v6 = v5 | m2;
        let m3: $t = (0x3C3C_3C3C as $t) | ((me as $t) << 2);
        check_eq(
            op("shmem_atomic_fetch_xor (old)"),
            v6,
            obj.atomic_fetch_xor(at, m3, right).or_die(op("shmem_atomic_fetch_xor")),
        );
        let v7 = v6 ^ m3;
        obj.atomic_and(at, !(0x11 as $t), right).or_die(op("shmem_atomic_and"));
        obj.atomic_or(at, 0x300 as $t, right).or_die(op("shmem_atomic_or"));
        obj.atomic_xor(at, 0x4001 as $t, right).or_die(op("shmem_atomic_xor"));
        let v8 = ((v7 & !(0x11 as $t)) | (0x300 as $t)) ^ (0x4001 as $t);
        check_eq(op("value after and/or/xor"), v8, obj.atomic_fetch(at, right).or_die(op("shmem_atomic_fetch")));

        // The non-blocking fetching forms: the fetched value is there after quiet.
        let mut f: $t = 0 as $t;
        obj.atomic_fetch_nbi(&mut f, at, right).or_die(op("shmem_atomic_fetch_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_fetch_nbi"), v8, f);
        obj.atomic_swap_nbi(&mut f, at, v1, right).or_die(op("shmem_atomic_swap_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_swap_nbi (old)"), v8, f);
        obj.atomic_compare_swap_nbi(&mut f, at, v1, v2, right).or_die(op("shmem_atomic_compare_swap_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_compare_swap_nbi (old)"), v1, f);
        obj.atomic_fetch_inc_nbi(&mut f, at, right).or_die(op("shmem_atomic_fetch_inc_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_fetch_inc_nbi (old)"), v2, f);
        let v9 = v2.wrapping_add(1);
        obj.atomic_fetch_add_nbi(&mut f, at, 100 as $t, right).or_die(op("shmem_atomic_fetch_add_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_fetch_add_nbi (old)"), v9, f);
        let v10 = v9.wrapping_add(100);
        obj.atomic_fetch_and_nbi(&mut f, at, m1, right).or_die(op("shmem_atomic_fetch_and_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_fetch_and_nbi (old)"), v10, f);
        let v11 = v10 & m1;
        obj.atomic_fetch_or_nbi(&mut f, at, m2, right).or_die(op("shmem_atomic_fetch_or_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_fetch_or_nbi (old)"), v11, f);
        let v12 = v11 | m2;
        obj.atomic_fetch_xor_nbi(&mut f, at, m3, right).or_die(op("shmem_atomic_fetch_xor_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_fetch_xor_nbi (old)"), v12, f);
        let v13 = v12 ^ m3;

        // The raw pointer form, on the same element.
        let dest = elem_ptr(&obj, at);
        // SAFETY: dest is element `at` of a live symmetric object of this type.
        let old = unsafe { raw::atomic(dest, AmoOp::FetchAdd(1), right as i32, "shmem_atomic_fetch_inc") }
            .or_die(op("raw fetch_inc"));
        check_eq(op("raw::atomic FetchAdd(1) (old)"), v13, old);
        let v14 = v13.wrapping_add(1);
        let mut fetched: $t = 0 as $t;
        // SAFETY: as above; `fetched` outlives the quiet.
        unsafe {
            raw::atomic_nbi(
                &mut fetched,
                dest,
                AmoOp::Swap(<$t as oxshmem::AmoType>::to_bits(base)),
                right as i32,
                "shmem_atomic_swap_nbi",
            )
        }
        .or_die(op("raw swap_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("raw::atomic_nbi Swap (old)"), v14, fetched);

        // The owner sees the final value its left neighbour's model predicts.
        shmem.barrier_all().or_die("barrier");
        let lbase: $t = start.wrapping_add((left as $t).wrapping_mul(1000));
        check_eq(format!("final value of my element {left} (written by PE {left}) as {ty}"), lbase, obj.read(left));
        for i in (0..n).filter(|&i| i != left) {
            check_eq(format!("element {i} of {ty} (nobody's target on this PE)"), 0 as $t, obj.read(i));
        }
        shmem.barrier_all().or_die("barrier");
        obj.free().or_die("shmem_free");
    }};
}

/// Element `at` of `obj` as a raw pointer.
fn elem_ptr<T: bytemuck::Pod>(obj: &SymSlice<T>, at: usize) -> *mut T {
    assert!(at < obj.len());
    obj.as_ptr().wrapping_add(at)
}

fn ops(_: &[String]) {
    let shmem = init();
    int_ops!(&shmem, i32, -2_000_000_000);
    int_ops!(&shmem, u32, 0xFFFF_FF00);
    int_ops!(&shmem, i64, i64::MIN + 5);
    int_ops!(&shmem, u64, u64::MAX - 3);
    int_ops!(&shmem, isize, -77);
    int_ops!(&shmem, usize, 1 << 40);
    println!("PE {}: integer AMOs ok", shmem.my_pe());
    finish(shmem);
}

macro_rules! float_ops {
    ($shmem:expr, $t:ty) => {{
        let shmem: &Shmem = $shmem;
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let right = (me + 1) % n;
        let ty = stringify!($t);
        let op = |name: &str| format!("{name}::<{ty}> on element {me} of PE {right}");
        let obj: SymSlice<$t> = shmem.alloc_slice(n, 0.0).or_die("alloc_slice");
        let a: $t = -1.5 - me as $t;
        let b: $t = 1.0e-3 * (me as $t + 1.0);
        let c: $t = <$t>::MAX;
        obj.atomic_set(me, a, right).or_die(op("shmem_atomic_set"));
        check_eq(op("shmem_atomic_fetch"), a, obj.atomic_fetch(me, right).or_die(op("shmem_atomic_fetch")));
        check_eq(op("shmem_atomic_swap (old)"), a, obj.atomic_swap(me, b, right).or_die(op("shmem_atomic_swap")));
        let mut f: $t = 0.0;
        obj.atomic_fetch_nbi(&mut f, me, right).or_die(op("shmem_atomic_fetch_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_fetch_nbi"), b, f);
        obj.atomic_swap_nbi(&mut f, me, c, right).or_die(op("shmem_atomic_swap_nbi"));
        shmem.quiet().or_die("shmem_quiet");
        check_eq(op("shmem_atomic_swap_nbi (old)"), b, f);
        shmem.barrier_all().or_die("barrier");
        let left = (me + n - 1) % n;
        check_eq(format!("final {ty} in my element {left}"), c, obj.read(left));
        shmem.barrier_all().or_die("barrier");
        obj.free().or_die("shmem_free");
    }};
}

fn float(_: &[String]) {
    let shmem = init();
    float_ops!(&shmem, f32);
    float_ops!(&shmem, f64);
    println!("PE {}: float AMOs ok", shmem.my_pe());
    finish(shmem);
}

fn add(args: &[String]) {
    let iters: u64 = arg(args, 0, 2000);
    let shmem = init();
    let n = shmem.n_pes() as u64;
    let c64 = shmem.alloc(0u64).or_die("alloc");
    let c32 = shmem.alloc_slice(2, 0i32).or_die("alloc_slice");
    let cus = shmem.alloc(0usize).or_die("alloc");
    for k in 0..iters {
        c64.add(1, 0).or_die("shmem_atomic_add::<u64> on PE 0");
        c32.atomic_inc(1, 0).or_die("shmem_atomic_inc::<i32> on PE 0");
        c64.fetch_add(2, 0).or_die("shmem_atomic_fetch_add::<u64> on PE 0");
        c32.atomic_add(0, -3, 0).or_die("shmem_atomic_add::<i32> on PE 0");
        cus.atomic_fetch_inc(0, 0).or_die("shmem_atomic_fetch_inc::<usize> on PE 0");
        if k % 64 == 0 {
            // On an oversubscribed host, let the other PEs interleave with this one.
            std::thread::yield_now();
        }
    }
    shmem.barrier_all().or_die("barrier");
    if shmem.my_pe() == 0 {
        check_eq(format!("u64 counter after {n} PEs x {iters} x (add 1 + fetch_add 2)"), 3 * n * iters, c64.value());
        check_eq(format!("i32 counter after {n} PEs x {iters} x inc"), (n * iters) as i32, c32.read(1));
        check_eq(format!("i32 counter after {n} PEs x {iters} x add(-3)"), -3 * (n * iters) as i32, c32.read(0));
        check_eq(format!("usize counter after {n} PEs x {iters} x fetch_inc"), (n * iters) as usize, cus.value());
        println!("totals exact: {}", 3 * n * iters);
    }
    finish(shmem);
}

fn tickets(args: &[String]) {
    let iters: usize = arg(args, 0, 1000);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let counter = shmem.alloc(0i64).or_die("alloc");
    let all = shmem.alloc_slice(n * iters, -1i64).or_die("alloc_slice");
    let mut mine = Vec::with_capacity(iters);
    for _ in 0..iters {
        mine.push(counter.atomic_fetch_add(0, 1, 0).or_die("shmem_atomic_fetch_add on PE 0"));
    }
    check(mine.windows(2).all(|w| w[0] < w[1]), "tickets of one PE must increase");
    // Gather every PE's tickets on PE 0.
    all.put(me * iters, &mine, 0).or_die("shmem_put of my tickets to PE 0");
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        let mut got = all.to_vec();
        got.sort_unstable();
        let expect: Vec<i64> = (0..(n * iters) as i64).collect();
        if let Some(w) = got.windows(2).find(|w| w[0] == w[1]) {
            oxshmem_tests::pe::fail(format!("ticket {} was handed out twice", w[0]));
        }
        oxshmem_tests::pe::check_slice("all tickets, sorted", &expect, &got);
        check_eq("counter after all fetch_adds", (n * iters) as i64, counter.value());
        println!("{} unique tickets", n * iters);
    }
    finish(shmem);
}

fn cas(args: &[String]) {
    let iters: u64 = arg(args, 0, 500);
    let shmem = init();
    let n = shmem.n_pes() as u64;
    let c = shmem.alloc(0u64).or_die("alloc");
    let c32 = shmem.alloc(0u32).or_die("alloc");
    let mut retries = 0u64;
    for _ in 0..iters {
        let mut old = c.atomic_fetch(0, 0).or_die("shmem_atomic_fetch");
        loop {
            let seen = c.atomic_compare_swap(0, old, old + 1, 0).or_die("shmem_atomic_compare_swap");
            if seen == old {
                break;
            }
            check(seen > old, format!("the counter went backwards: expected more than {old}, saw {seen}"));
            retries += 1;
            old = seen;
        }
        let mut old = c32.g(0, 0).or_die("shmem_g");
        loop {
            let seen =
                c32.atomic_compare_swap(0, old, old.wrapping_add(1), 0).or_die("shmem_atomic_compare_swap::<u32>");
            if seen == old {
                break;
            }
            retries += 1;
            old = seen;
        }
    }
    shmem.barrier_all().or_die("barrier");
    if shmem.my_pe() == 0 {
        check_eq("u64 counter incremented by compare_swap loops", n * iters, c.value());
        check_eq("u32 counter incremented by compare_swap loops", (n * iters) as u32, c32.value());
    }
    println!("PE {}: {retries} compare_swap retries", shmem.my_pe());
    finish(shmem);
}

fn bits(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check(n <= 16, "bits needs at most 16 PEs");
    let m64 = shmem.alloc(0u64).or_die("alloc");
    let m32 = shmem.alloc(u32::MAX).or_die("alloc");
    let x64 = shmem.alloc(0i64).or_die("alloc");
    let all: u64 = (1u64 << n) - 1;

    // or: every PE sets its bit and its bit + 32; the fetched value never has my bits yet.
    let old = m64.atomic_fetch_or(0, 1 << me, 0).or_die("shmem_atomic_fetch_or");
    check(old & (1 << me) == 0, format!("fetch_or returned {old:#x}, which already has my bit {me}"));
    m64.atomic_or(0, 1 << (me + 32), 0).or_die("shmem_atomic_or");
    // and: every PE clears its bit of a 32-bit all-ones mask when it is odd.
    if me % 2 == 1 {
        m32.atomic_and(0, !(1u32 << me), 0).or_die("shmem_atomic_and");
    } else {
        let old = m32.atomic_fetch_and(0, !(1u32 << (me + 16)), 0).or_die("shmem_atomic_fetch_and");
        check(old & (1 << (me + 16)) != 0, format!("fetch_and returned {old:#x}, which lacks bit {}", me + 16));
    }
    // xor: every PE flips its bit twice and bit 63 once.
    x64.atomic_xor(0, 1 << me, 0).or_die("shmem_atomic_xor");
    x64.atomic_fetch_xor(0, (1 << me) | (1 << 40), 0).or_die("shmem_atomic_fetch_xor");
    x64.atomic_xor(0, i64::MIN, 0).or_die("shmem_atomic_xor");
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        check_eq("or mask from all PEs", all | (all << 32), m64.value());
        let mut and_expect = u32::MAX;
        for pe in 0..n {
            and_expect &= if pe % 2 == 1 { !(1u32 << pe) } else { !(1u32 << (pe + 16)) };
        }
        check_eq("and mask from all PEs", and_expect, m32.value());
        let xor_expect = (if n % 2 == 1 { 1i64 << 40 } else { 0 }) | if n % 2 == 1 { i64::MIN } else { 0 };
        check_eq("xor mask from all PEs", xor_expect, x64.value());
        println!("masks ok: or {:#x} and {:#x} xor {:#x}", m64.value(), m32.value(), x64.value());
    }
    finish(shmem);
}

// A compile-time check that the types used above are the runtime's AMO types.
const _: fn() = || {
    fn is_amo<T: AmoInt>() {}
    is_amo::<i32>();
    is_amo::<u32>();
    is_amo::<i64>();
    is_amo::<u64>();
    is_amo::<isize>();
    is_amo::<usize>();
};
