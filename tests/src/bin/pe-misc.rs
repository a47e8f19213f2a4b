//! PE program for setup and bad input: `pe-misc <case> [args]`.
//!
//! Setup cases:
//! - `hello N`: init, then check the job's shape: `N` PEs, one node, `local_pes == 0..N`, the
//!   host name; prints `hello from PE i of N`.
//! - `singleton`: started without a launcher, the program is PE 0 of 1 and works.
//! - `memfd`: the heap is a memfd named `oxshmem-heap` with mode 0600 and no link in any file
//!   system; each PE maps every PE's heap once; lists `/dev/shm` for the test to compare.
//! - `global-exit STATUS PE`: PE `PE` calls `shmem_global_exit(STATUS)` while the others wait
//!   in a barrier that can never complete.
//!
//! Bad-input cases (each checks the error kind and text, and prints `ERR <what>: <text>`):
//! `bad-pe`, `bad-pe-huge` (PEs past `i64::MAX` in the safe API), `not-symmetric`,
//! `past-heap-end` (addresses at and ranges across the end of the user's heap),
//! `out-of-bounds`, `size-overflow`, `misaligned`, `before-init`,
//! `init-twice`, `after-finalize`.

use oxshmem::raw::{self, AmoOp};
use oxshmem::{Cmp, CmpValues, ErrorKind, ThreadLevel};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, dispatch, expect_err, fail, finish, fstat, init, memfds};

fn main() {
    dispatch(
        "pe-misc",
        &[
            ("hello", hello),
            ("singleton", singleton),
            ("memfd", memfd),
            ("global-exit", global_exit),
            ("bad-pe", bad_pe),
            ("bad-pe-huge", bad_pe_huge),
            ("not-symmetric", not_symmetric),
            ("past-heap-end", past_heap_end),
            ("out-of-bounds", out_of_bounds),
            ("size-overflow", size_overflow),
            ("misaligned", misaligned),
            ("before-init", before_init),
            ("init-twice", init_twice),
            ("after-finalize", after_finalize),
        ],
    );
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its whole length.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    check_eq("gethostname", 0, rc);
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn hello(args: &[String]) {
    let expect_n: usize = arg(args, 0, 0);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check_eq("shmem_n_pes", expect_n, n);
    check(me < n, format!("shmem_my_pe {me} is not below shmem_n_pes {n}"));
    check_eq("raw shmem_my_pe", me, raw::my_pe().or_die("shmem_my_pe"));
    check_eq("raw shmem_n_pes", n, raw::n_pes().or_die("shmem_n_pes"));
    check_eq("PMI_RANK given by oshrun", Some(me.to_string()), std::env::var("PMI_RANK").ok());
    let layout = shmem.layout().or_die("layout");
    check_eq("number of nodes", 1, layout.n_nodes());
    check_eq("node of every PE", vec![0; n], layout.node_of.clone());
    check_eq("local PEs", (0..n).collect::<Vec<_>>(), layout.local_pes.clone());
    check_eq("host name of node 0", hostname(), layout.hosts[0].clone());
    check_eq("thread level of shmem_init", ThreadLevel::Single, shmem.query_thread().or_die("query_thread"));
    check_eq("info_get_version", (1, 5), oxshmem::info_get_version());
    check(oxshmem::info_get_name().starts_with("oxshmem"), "info_get_name starts with oxshmem");
    // Every PE is really there: each adds its bit on PE 0.
    let bits = shmem.alloc(0u64).or_die("alloc");
    bits.atomic_or(0, 1 << (me % 64), 0).or_die("atomic_or on PE 0");
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        let expect = if n >= 64 { u64::MAX } else { (1 << n) - 1 };
        check_eq("bits of every PE on PE 0", expect, bits.value());
    }
    println!("hello from PE {me} of {n}");
    drop(bits);
    finish(shmem);
}

fn singleton(_: &[String]) {
    check(std::env::var_os("PMI_FD").is_none(), "singleton must run without PMI_FD");
    let shmem = init();
    check_eq("shmem_my_pe of a singleton", 0, shmem.my_pe());
    check_eq("shmem_n_pes of a singleton", 1, shmem.n_pes());
    check_eq("local PEs of a singleton", vec![0], shmem.layout().or_die("layout").local_pes);
    let x = shmem.alloc_slice(16, 0u32).or_die("alloc_slice");
    x.put(0, &[5; 16], 0).or_die("shmem_put to self");
    shmem.barrier_all().or_die("barrier");
    check_eq("put to self", vec![5; 16], x.to_vec());
    check_eq("fetch_add on self", 5, x.atomic_fetch_add(3, 1, 0).or_die("fetch_add"));
    expect_err("shmem_put to PE 1 of a singleton", x.put(0, &[1], 1), &["PE 1 is out of range (0..1)"]);
    drop(x);
    println!("singleton: PE 0 of 1");
    finish(shmem);
}

fn memfd(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let fds = memfds("oxshmem-heap");
    check_eq("open oxshmem-heap memfds (only my own stays open)", 1, fds.len());
    let (fd, link) = &fds[0];
    check(link.starts_with("/memfd:oxshmem-heap"), format!("heap descriptor links to {link:?}"));
    let st = fstat(*fd);
    check_eq(format!("mode of the heap memfd {link}"), 0o600, st.st_mode & 0o7777);
    check_eq("links of the heap memfd (no name in any file system)", 0, st.st_nlink);
    let heap_size = raw::heap_size().or_die("heap_size");
    check(
        st.st_size >= heap_size as i64,
        format!("the heap memfd has {} bytes, less than the heap's {heap_size}", st.st_size),
    );
    // Peers' heaps are mapped on first use: after init at most this PE's own, the next PE's and
    // the barrier's partners (log2 n); once this PE has written to every PE, every PE's heap is
    // mapped here exactly once (one mapping per heap memfd inode), however often it is used.
    let mapped = || {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_else(|e| fail(format!("/proc/self/maps: {e}")));
        let inodes: std::collections::BTreeSet<String> = maps
            .lines()
            .filter(|l| l.contains("/memfd:oxshmem-heap"))
            .filter_map(|l| l.split_whitespace().nth(4).map(str::to_string))
            .collect();
        inodes.len()
    };
    let at_init = mapped();
    let bound = (2 + n.next_power_of_two().trailing_zeros() as usize).min(n);
    check(at_init <= bound, format!("{at_init} heaps mapped right after init, more than {bound} of {n}"));
    let x = shmem.alloc_slice(1, 0u64).or_die("alloc_slice");
    for _ in 0..3 {
        for pe in 0..n {
            x.p(0, me as u64, pe).or_die("shmem_p");
        }
    }
    check_eq("distinct heap memfds mapped in this PE after using every PE", n, mapped());
    shmem.barrier_all().or_die("barrier");
    drop(x);
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        for name in oxshmem_tests::dev_shm() {
            println!("devshm: {name}");
        }
    }
    println!("PE {me}: heap memfd mode {:o}", st.st_mode & 0o777);
    finish(shmem);
}

fn global_exit(args: &[String]) {
    let status: i32 = arg(args, 0, 7);
    let victim: usize = arg(args, 1, 0);
    let shmem = init();
    shmem.barrier_all().or_die("barrier");
    if shmem.my_pe() == victim {
        eprintln!("PE {victim} calls shmem_global_exit({status}) at unix_ms={}", oxshmem_tests::unix_ms());
        shmem.global_exit(status);
    }
    // Every other PE waits for a flag that is never raised.
    let never = shmem.alloc(0u64).or_die("alloc");
    never.wait(Cmp::Ne, 0).or_die("wait");
    fail("the wait for a flag nobody sets returned")
}

fn bad_pe(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let out = format!("PE {n} is out of range (0..{n})");
    let neg = format!("PE -1 is out of range (0..{n})");
    let buf = shmem.alloc_slice(4, 0u64).or_die("alloc_slice");
    let p = buf.as_ptr();
    let src = [1u64; 4];
    let mut dst = [0u64; 4];
    let prefix = |f: &str| format!("PE {me}: {f}: ");
    // SAFETY: for every call here, src/dst hold 4 u64; the PE is refused before any access.
    unsafe {
        expect_err(
            "raw putmem to PE -1",
            raw::putmem(p.cast(), src.as_ptr().cast(), 8, -1),
            &[&prefix("shmem_putmem"), &neg],
        );
        expect_err(
            "raw putmem to PE n",
            raw::putmem(p.cast(), src.as_ptr().cast(), 8, n as i32),
            &[&prefix("shmem_putmem"), &out],
        );
        expect_err("raw putmem_nbi to PE n", raw::putmem_nbi(p.cast(), src.as_ptr().cast(), 8, n as i32), &[&out]);
        expect_err(
            "raw getmem from PE -1",
            raw::getmem(dst.as_mut_ptr().cast(), p.cast(), 8, -1),
            &[&prefix("shmem_getmem"), &neg],
        );
        expect_err(
            "raw getmem_nbi from PE n",
            raw::getmem_nbi(dst.as_mut_ptr().cast(), p.cast(), 8, n as i32),
            &[&out],
        );
        expect_err("raw p to PE n", raw::p(p, 1, n as i32), &[&prefix("shmem_p"), &out]);
        expect_err("raw g from PE -1", raw::g(p, -1), &[&prefix("shmem_g"), &neg]);
        expect_err(
            "raw iput to PE -1",
            raw::iput(p.cast(), src.as_ptr().cast(), 1, 1, 8, 2, -1),
            &[&prefix("shmem_iput"), &neg],
        );
        expect_err(
            "raw iget from PE n",
            raw::iget(dst.as_mut_ptr().cast(), p.cast(), 1, 1, 8, 2, n as i32),
            &[&prefix("shmem_iget"), &out],
        );
        expect_err(
            "raw atomic on PE n",
            raw::atomic(p, AmoOp::FetchAdd(1), n as i32, "shmem_atomic_fetch_add"),
            &[&prefix("shmem_atomic_fetch_add"), &out],
        );
        expect_err("raw atomic on PE -1", raw::atomic(p, AmoOp::Fetch, -1, "shmem_atomic_fetch"), &[&neg]);
        let mut f = 0u64;
        expect_err(
            "raw atomic_nbi on PE -7",
            raw::atomic_nbi(&mut f, p, AmoOp::Swap(1), -7, "shmem_atomic_swap_nbi"),
            &[&format!("PE -7 is out of range (0..{n})")],
        );
    }
    expect_err("put to PE n", buf.put(0, &src, n), &[&prefix("shmem_put"), &out]);
    expect_err("put_nbi to PE n", buf.put_nbi(0, &src, n), &[&prefix("shmem_put_nbi"), &out]);
    expect_err("get from PE n", buf.get(0, &mut dst, n), &[&prefix("shmem_get"), &out]);
    expect_err(
        "get_nbi from PE n + 5",
        buf.get_nbi(0, &mut dst, n + 5),
        &[&format!("PE {} is out of range (0..{n})", n + 5)],
    );
    expect_err("p to PE n", buf.p(0, 1, n), &[&prefix("shmem_p"), &out]);
    expect_err("g from PE n", buf.g(0, n), &[&prefix("shmem_g"), &out]);
    expect_err("iput to PE n", buf.iput(0, 2, &src, 1, 2, n), &[&prefix("shmem_iput"), &out]);
    expect_err("iget from PE n", buf.iget(0, 2, &mut dst, 1, 2, n), &[&prefix("shmem_iget"), &out]);
    expect_err("atomic_fetch_add on PE n", buf.atomic_fetch_add(0, 1, n), &[&prefix("shmem_atomic_fetch_add"), &out]);
    expect_err("atomic_inc on PE n", buf.atomic_inc(0, n), &[&prefix("shmem_atomic_inc"), &out]);
    expect_err("atomic_compare_swap on PE n", buf.atomic_compare_swap(0, 0, 1, n), &[&out]);
    expect_err("atomic_set on PE n", buf.atomic_set(0, 1, n), &[&prefix("shmem_atomic_set"), &out]);
    // The largest usize: the message must not wrap it to a negative PE.
    expect_err("put to PE usize::MAX", buf.put(0, &src, usize::MAX), &["is out of range"]);
    check_eq("the target after refused operations", vec![0u64; 4], buf.to_vec());
    shmem.barrier_all().or_die("barrier");
    drop(buf);
    finish(shmem);
}

fn bad_pe_huge(_: &[String]) {
    let shmem = init();
    let n = shmem.n_pes();
    let buf = shmem.alloc_slice(4, 0u64).or_die("alloc_slice");
    for pe in [usize::MAX, 1 << 63] {
        let text = format!("PE {pe} is out of range (0..{n})");
        expect_err(&format!("put to PE {pe}"), buf.put(0, &[1], pe), &["shmem_put", &text]);
        expect_err(&format!("atomic_fetch on PE {pe}"), buf.atomic_fetch(0, pe), &["shmem_atomic_fetch", &text]);
    }
    drop(buf);
    finish(shmem);
}

fn not_symmetric(_: &[String]) {
    let shmem = init();
    let n = shmem.n_pes();
    let right = ((shmem.my_pe() + 1) % n) as i32;
    let mut stack = [0u64; 2];
    let sp = stack.as_mut_ptr();
    let boxed = Box::new(0u64);
    let bp = Box::into_raw(boxed);
    let heap = raw::malloc(64).or_die("shmem_malloc");
    let src = [9u64; 2];
    let ns = |what: &str, addr: usize, len: usize| format!("{what} {addr:#x} (+{len} bytes) is not symmetric");
    // SAFETY: for every call here, the runtime must refuse the address before any access; the
    // local buffers are valid for the lengths given.
    unsafe {
        expect_err(
            "raw putmem to a stack variable",
            raw::putmem(sp.cast(), src.as_ptr().cast(), 8, right),
            &["shmem_putmem", &ns("destination", sp as usize, 8)],
        );
        expect_err(
            "raw putmem_nbi to a Box",
            raw::putmem_nbi(bp.cast(), src.as_ptr().cast(), 8, right),
            &[&ns("destination", bp as usize, 8)],
        );
        expect_err(
            "raw getmem from a stack variable",
            raw::getmem(sp.cast(), sp.cast_const().cast(), 16, right),
            &["shmem_getmem", &ns("source", sp as usize, 16)],
        );
        expect_err("raw p to a Box", raw::p(bp, 1, right), &["shmem_p", &ns("destination", bp as usize, 8)]);
        expect_err(
            "raw g from a stack variable",
            raw::g(sp.cast_const(), right),
            &["shmem_g", &ns("source", sp as usize, 8)],
        );
        expect_err(
            "raw iput to a stack variable",
            raw::iput(sp.cast(), src.as_ptr().cast(), 1, 1, 8, 2, right),
            &["shmem_iput", "is not symmetric"],
        );
        expect_err(
            "raw iget from a Box",
            raw::iget(sp.cast(), bp.cast_const().cast(), 1, 1, 8, 1, right),
            &["shmem_iget", "is not symmetric"],
        );
        expect_err(
            "raw atomic on a stack variable",
            raw::atomic(sp, AmoOp::FetchAdd(1), right, "shmem_atomic_add"),
            &["shmem_atomic_add", &ns("destination", sp as usize, 8)],
        );
        expect_err(
            "raw wait_until on a stack variable",
            raw::wait_until(sp.cast_const(), Cmp::Eq, 0),
            &["shmem_wait_until", &ns("ivars", sp as usize, 8)],
        );
        expect_err("raw test on a Box", raw::test(bp.cast_const(), Cmp::Eq, 0), &["shmem_test", "is not symmetric"]);
        expect_err(
            "raw test_all on a stack array",
            raw::test_all(sp.cast_const(), 2, None, Cmp::Eq, CmpValues::One(0)),
            &["shmem_test_all", &ns("ivars", sp as usize, 16)],
        );
    }
    check_eq("the stack variable after refused operations", [0u64; 2], stack);
    // SAFETY: bp came from Box::into_raw and is freed once.
    drop(unsafe { Box::from_raw(bp) });
    // SAFETY: heap is not used afterwards.
    unsafe { raw::free(heap) }.or_die("shmem_free");
    finish(shmem);
}

fn past_heap_end(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = ((me + 1) % n) as i32;
    let base = oxshmem_tests::pe::own_heap_base();
    let size = raw::heap_size().or_die("heap_size");
    let end = (base + size) as *mut u8;
    // The queries first: they change nothing, whatever the answer.
    check(
        !raw::addr_accessible(end, right),
        format!("shmem_addr_accessible(heap base + heap_size = {end:p}) must be false"),
    );
    check(raw::ptr(end, right).is_null(), format!("shmem_ptr(heap base + heap_size = {end:p}) must be null"));
    let heap = raw::malloc(64).or_die("shmem_malloc");
    let zeros = vec![0u8; size];
    let ns = |addr: usize, len: usize| format!("destination {addr:#x} (+{len} bytes) is not symmetric");
    // SAFETY: for every call here, the runtime must refuse the range before any access; the
    // source holds `size` bytes.
    unsafe {
        expect_err(
            "raw putmem just past the heap's end",
            raw::putmem(end, zeros.as_ptr(), 64, right),
            &["shmem_putmem", &ns(end as usize, 64)],
        );
        expect_err(
            "raw p just past the heap's end",
            raw::p(end.cast::<u64>(), 0, right),
            &["shmem_p", &ns(end as usize, 8)],
        );
        expect_err(
            "raw atomic just past the heap's end",
            raw::atomic(end.cast::<u64>(), AmoOp::Fetch, right, "shmem_atomic_fetch"),
            &["shmem_atomic_fetch", &ns(end as usize, 8)],
        );
        expect_err(
            "raw putmem running past the heap's end",
            raw::putmem(heap.add(64), zeros.as_ptr(), size, right),
            &["shmem_putmem", &ns(heap as usize + 64, size)],
        );
    }
    // SAFETY: heap is not used afterwards.
    unsafe { raw::free(heap) }.or_die("shmem_free");
    finish(shmem);
}

fn out_of_bounds(_: &[String]) {
    let shmem = init();
    let me = shmem.my_pe();
    let right = (me + 1) % shmem.n_pes();
    let s = shmem.alloc_slice(4, 0i32).or_die("alloc_slice");
    let oob = |a: usize, b: usize| format!("index range {a}..{b} is outside the symmetric object of 4 elements");
    expect_err("put of 2 at 3", s.put(3, &[1, 2], right), &[&format!("PE {me}: shmem_put: "), &oob(3, 5)]);
    expect_err("put_nbi of 5 at 0", s.put_nbi(0, &[1; 5], right), &[&oob(0, 5)]);
    expect_err("get of 3 at 2", s.get(2, &mut [0; 3], right), &["shmem_get", &oob(2, 5)]);
    expect_err("get_nbi of 1 at 4", s.get_nbi(4, &mut [0; 1], right), &[&oob(4, 5)]);
    expect_err("p at 4", s.p(4, 1, right), &["shmem_p", &oob(4, 5)]);
    expect_err("g at 10", s.g(10, right), &["shmem_g", &oob(10, 11)]);
    expect_err("put at usize::MAX", s.put(usize::MAX, &[1], right), &["is outside the symmetric object of 4 elements"]);
    expect_err("atomic_fetch_add at 4", s.atomic_fetch_add(4, 1, right), &["shmem_atomic_fetch_add", &oob(4, 5)]);
    expect_err("atomic_swap at 7", s.atomic_swap(7, 1, right), &["shmem_atomic_swap", &oob(7, 8)]);
    expect_err("iput of 3 at stride 2", s.iput(0, 2, &[1, 2, 3], 1, 3, right), &["shmem_iput", &oob(0, 5)]);
    expect_err("iget of 2 at stride 3 from 1", s.iget(1, 3, &mut [0; 2], 1, 2, right), &["shmem_iget", &oob(1, 5)]);
    expect_err("iput from a source too short", s.iput(0, 1, &[1, 2], 2, 2, right), &["shmem_iput", "index range 0..3"]);
    expect_err("wait_until at 4", s.wait_until(4, Cmp::Eq, 0), &["shmem_wait_until", &oob(4, 5)]);
    expect_err("test at 9", s.test(9, Cmp::Eq, 0), &["shmem_test", &oob(9, 10)]);
    shmem.barrier_all().or_die("barrier");
    check_eq("the object after refused operations", vec![0; 4], s.to_vec());
    // Local accessors panic like slice indexing.
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.read(4)));
    std::panic::set_hook(prev);
    match r {
        Ok(v) => fail(format!("read(4) of a 4-element object returned {v}")),
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().unwrap_or_default();
            check(
                msg.contains("index 4 out of range for a symmetric object of 4 elements"),
                format!("read(4) panicked with {msg:?}"),
            );
            println!("ERR read(4): {msg}");
        }
    }
    drop(s);
    finish(shmem);
}

fn size_overflow(_: &[String]) {
    let shmem = init();
    let me = shmem.my_pe();
    let p = raw::malloc(64).or_die("shmem_malloc");
    let src = [0u64; 4];
    let mut dst = [0u64; 4];
    // SAFETY: for every call here, the sizes are refused before any access.
    unsafe {
        expect_err(
            "raw iput with destination stride isize::MAX",
            raw::iput(p, src.as_ptr().cast(), isize::MAX, 1, 8, 2, me as i32),
            &["shmem_iput", "invalid size", &format!("2 elements of 8 bytes at stride {} overflows", isize::MAX)],
        );
        expect_err(
            "raw iget with source stride isize::MAX / 2",
            raw::iget(dst.as_mut_ptr().cast(), p, 1, isize::MAX / 2, 8, 3, me as i32),
            &["shmem_iget", "overflows"],
        );
        expect_err(
            "raw iput with stride 0",
            raw::iput(p, src.as_ptr().cast(), 0, 1, 8, 2, me as i32),
            &["shmem_iput", "stride 0 must be at least 1"],
        );
        expect_err(
            "raw iget with stride -1",
            raw::iget(dst.as_mut_ptr().cast(), p, 1, -1, 8, 2, me as i32),
            &["shmem_iget", "stride -1 must be at least 1"],
        );
        expect_err(
            "raw putmem of usize::MAX bytes",
            raw::putmem(p, src.as_ptr().cast(), usize::MAX, me as i32),
            &["shmem_putmem", "is not symmetric"],
        );
        expect_err(
            "raw test_all of usize::MAX elements",
            raw::test_all(p.cast::<u64>(), usize::MAX, None, Cmp::Eq, CmpValues::One(0)),
            &["shmem_test_all", "invalid size"],
        );
    }
    let s = shmem.alloc_slice(4, 0u64).or_die("alloc_slice");
    expect_err(
        "iput with destination stride usize::MAX",
        s.iput(0, usize::MAX, &src, 1, 2, me),
        &["shmem_iput", "invalid size", "overflows"],
    );
    expect_err("iput with stride 0", s.iput(0, 0, &src, 1, 2, me), &["shmem_iput", "strides must be at least 1"]);
    expect_err(
        "alloc_slice(usize::MAX / 2 x u64)",
        shmem.alloc_slice(usize::MAX / 2, 0u64),
        &["shmem_malloc", "overflows"],
    );
    expect_err(
        "calloc(usize::MAX / 2, 4)",
        raw::calloc(usize::MAX / 2, 4),
        &["shmem_calloc", &format!("{} x 4 bytes overflows", usize::MAX / 2)],
    );
    expect_err(
        "test_all with a short status",
        s.test_all(Some(&[0, 0]), Cmp::Eq, CmpValues::One(0)),
        &["size mismatch", "status has 2 entries for 4 ivars"],
    );
    expect_err(
        "wait_until_all with short cmp_values",
        s.wait_until_all(None, Cmp::Eq, CmpValues::Each(&[0])),
        &["size mismatch", "cmp_values has 1 entries for 4 ivars"],
    );
    shmem.barrier_all().or_die("barrier");
    drop(s);
    // SAFETY: p is not used afterwards.
    unsafe { raw::free(p) }.or_die("shmem_free");
    finish(shmem);
}

fn misaligned(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = ((me + 1) % n) as i32;
    let p = raw::malloc(64).or_die("shmem_malloc");
    let addr = p as usize;
    let mis = |off: usize, w: usize| format!("atomic target {:#x} is not aligned to {w} bytes", addr + off);
    // SAFETY: for every call here, misaligned targets are refused before any access.
    unsafe {
        expect_err(
            "u64 fetch_add at heap + 1",
            raw::atomic::<u64>(p.add(1).cast(), AmoOp::FetchAdd(1), right, "shmem_atomic_fetch_add"),
            &[&format!("PE {me}: shmem_atomic_fetch_add: "), &mis(1, 8)],
        );
        expect_err(
            "u64 swap at heap + 4",
            raw::atomic::<u64>(p.add(4).cast(), AmoOp::Swap(1), me as i32, "shmem_atomic_swap"),
            &[&mis(4, 8)],
        );
        expect_err(
            "u32 compare_swap at heap + 2",
            raw::atomic::<u32>(
                p.add(2).cast(),
                AmoOp::CompareSwap { cond: 0, value: 1 },
                right,
                "shmem_atomic_compare_swap",
            ),
            &["shmem_atomic_compare_swap", &mis(2, 4)],
        );
        expect_err(
            "f64 fetch at heap + 3",
            raw::atomic::<f64>(p.add(3).cast(), AmoOp::Fetch, right, "shmem_atomic_fetch"),
            &[&mis(3, 8)],
        );
        let mut f = 0i32;
        expect_err(
            "i32 fetch_inc_nbi at heap + 1",
            raw::atomic_nbi::<i32>(&mut f, p.add(1).cast(), AmoOp::FetchAdd(1), right, "shmem_atomic_fetch_inc_nbi"),
            &[&mis(1, 4)],
        );
        expect_err(
            "u64 wait_until at heap + 4",
            raw::wait_until::<u64>(p.add(4).cast(), Cmp::Eq, 0),
            &["shmem_wait_until", "is not aligned to 8 bytes"],
        );
        // Aligned is fine.
        raw::atomic::<u64>(p.add(8).cast(), AmoOp::FetchAdd(1), right, "shmem_atomic_fetch_add")
            .or_die("aligned fetch_add");
    }
    shmem.barrier_all().or_die("barrier");
    // SAFETY: the first 16 bytes are ours; nobody writes after the barrier.
    let words = unsafe { std::slice::from_raw_parts(p.cast::<u64>(), 2) }.to_vec();
    check_eq("the words around refused atomics (only the aligned add landed)", vec![0, 1], words);
    // SAFETY: p is not used afterwards.
    unsafe { raw::free(p) }.or_die("shmem_free");
    finish(shmem);
}

fn before_init(_: &[String]) {
    let not = "oxshmem is not initialized (call shmem_init first)";
    let mut local = [0u8; 8];
    let src = [1u8; 8];
    // Before init a PE knows its number only from the launcher (PMI_RANK): errors carry that.
    let rank = std::env::var("PMI_RANK").map_or_else(|_| "?".to_string(), |r| r.trim().to_string());
    let label = format!("PE {rank}: shmem_putmem: ");
    // SAFETY: refused before any access.
    expect_err(
        "raw putmem before init",
        unsafe { raw::putmem(local.as_mut_ptr(), src.as_ptr(), 8, 0) },
        &[label.as_str(), not],
    );
    let e = expect_err("raw my_pe before init", raw::my_pe(), &["shmem_my_pe", not]);
    check_eq("error kind before init", ErrorKind::NotInitialized, e.kind);
    expect_err("raw barrier_all before init", raw::barrier_all(), &["shmem_barrier_all", not]);
    expect_err("raw malloc before init", raw::malloc(8), &["shmem_malloc", not]);
    expect_err("raw quiet before init", raw::quiet(), &["shmem_quiet", not]);
    expect_err("raw fence before init", raw::fence(), &["shmem_fence", not]);
    expect_err("raw finalize before init", raw::finalize(), &["shmem_finalize", not]);
    let flag = 0i32;
    // SAFETY: refused before any access.
    expect_err(
        "raw wait_until before init",
        unsafe { raw::wait_until(&raw const flag, Cmp::Eq, 0) },
        &["shmem_wait_until", not],
    );
    check(raw::ptr(local.as_ptr(), 0).is_null(), "shmem_ptr before init must be null");
    check(!raw::pe_accessible(0), "shmem_pe_accessible before init must be false");
    check(!oxshmem::world::initialized(), "initialized() before init");
    // Init still works afterwards.
    let shmem = init();
    check(oxshmem::world::initialized(), "initialized() after init");
    let x = shmem.alloc(1u8).or_die("alloc after init");
    shmem.barrier_all().or_die("barrier");
    drop(x);
    finish(shmem);
}

fn init_twice(_: &[String]) {
    raw::init().or_die("first shmem_init");
    let already = "oxshmem is already initialized";
    let e = expect_err("second raw init", raw::init(), &["shmem_init", already]);
    check_eq("error kind of a second init", ErrorKind::AlreadyInitialized, e.kind);
    expect_err("oxshmem::init after raw init", oxshmem::init(), &[already]);
    expect_err("init_thread after init", oxshmem::init_thread(ThreadLevel::Multiple), &[already]);
    // The runtime is still fine.
    raw::barrier_all().or_die("barrier after a refused init");
    let me = raw::my_pe().or_die("my_pe");
    println!("PE {me}: still running after a second init");
    raw::finalize().or_die("finalize");
}

fn after_finalize(_: &[String]) {
    let shmem = init();
    let me = shmem.my_pe();
    let buf = shmem.alloc_slice(4, 0u64).or_die("alloc_slice");
    let p = raw::malloc(64).or_die("shmem_malloc");
    shmem.barrier_all().or_die("barrier");
    shmem.finalize().or_die("shmem_finalize");
    let fin = "oxshmem has been finalized";
    let src = [1u8; 8];
    // SAFETY: refused before any access.
    let e = expect_err(
        "raw putmem after finalize",
        unsafe { raw::putmem(p, src.as_ptr(), 8, 0) },
        &[&format!("PE {me}: shmem_putmem: "), fin],
    );
    check_eq("error kind after finalize", ErrorKind::Finalized, e.kind);
    expect_err("put after finalize", buf.put(0, &[1], 0), &["shmem_put", fin]);
    expect_err("atomic_inc after finalize", buf.atomic_inc(0, 0), &["shmem_atomic_inc", fin]);
    expect_err("barrier_all after finalize", raw::barrier_all(), &["shmem_barrier_all", fin]);
    expect_err("malloc after finalize", raw::malloc(8), &["shmem_malloc", fin]);
    expect_err("finalize twice", raw::finalize(), &["shmem_finalize", fin]);
    expect_err("init after finalize", raw::init(), &["shmem_init", "cannot initialize again after shmem_finalize"]);
    expect_err("oxshmem::init after finalize", oxshmem::init(), &["cannot initialize again after shmem_finalize"]);
    check(!oxshmem::world::initialized(), "initialized() after finalize");
    // Dropping a symmetric object after finalize does nothing (and prints nothing).
    drop(buf);
    println!("PE {me}: errors after finalize ok");
}
