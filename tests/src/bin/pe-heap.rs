//! PE program for the symmetric heap: `pe-heap <case> [args]`.
//!
//! Cases:
//! - `alloc`: malloc, align, calloc, malloc_with_hints, realloc, free (raw) and `alloc_slice`;
//!   every object is at the same offset from the heap base on every PE (offsets gathered on
//!   PE 0), tagged copies are read back from every PE through the same pointer, realloc keeps
//!   contents, calloc zeroes, align aligns, and the free-byte count follows.
//! - `oom`: (run with `SHMEM_SYMMETRIC_SIZE=2M`) requests beyond the heap fail with
//!   `OutOfMemory` naming the size asked and the bytes free, and the job goes on.
//! - `bad-sizes`: zero sizes, overflowing sizes, bad alignments, bad hints and bad frees are
//!   errors, the same on every PE, and the job goes on.
//! - `size BYTES`: the heap holds `BYTES` bytes (the test sets `SHMEM_SYMMETRIC_SIZE`).
//! - `init-fails`: init must fail; prints the error and exits with status 3.
//! - `align-large`: `shmem_align` and `alloc_aligned` with alignments above the page size
//!   (64 KiB, 2 MiB) return addresses with that alignment, at the same offset on every PE.
//! - `debug-mismatch`: (run with `SHMEM_DEBUG=1`) PEs that ask for different sizes (or free
//!   different objects) get `CollectiveMismatch`, and the job goes on.
//! - `mismatch`: the same without `SHMEM_DEBUG`: the check is on by default; the refused calls
//!   leave every heap as it was (the same free bytes, the next allocations at the same offsets).
//! - `malloc-bench ITERS ROUNDS`: times `ITERS` pairs of `shmem_malloc(64)` + `shmem_free`,
//!   `ROUNDS` times; PE 0 prints the best and the median round in ns per pair.

use oxshmem::raw;
use oxshmem::{ErrorKind, Shmem};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, dispatch, expect_err, fail, finish, init, own_heap_base};

fn main() {
    dispatch(
        "pe-heap",
        &[
            ("alloc", alloc),
            ("oom", oom),
            ("bad-sizes", bad_sizes),
            ("size", size),
            ("init-fails", init_fails),
            ("debug-mismatch", debug_mismatch),
            ("mismatch", debug_mismatch),
            ("malloc-bench", malloc_bench),
            ("align-large", align_large),
        ],
    );
}

fn tag(pe: usize, obj: usize) -> u64 {
    0xA110_C000_0000_0000 | ((pe as u64) << 16) | obj as u64
}

fn alloc(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let base = own_heap_base();
    let size = raw::heap_size().or_die("heap_size");
    let free0 = raw::heap_free().or_die("heap_free");
    check(free0 <= size, format!("heap_free {free0} must not exceed heap_size {size}"));

    let a = raw::malloc(100).or_die("shmem_malloc(100)");
    let b = raw::align(4096, 10).or_die("shmem_align(4096, 10)");
    check_eq("shmem_align(4096, ..) address mod 4096", 0, b as usize % 4096);
    let c = raw::calloc(10, 8).or_die("shmem_calloc(10, 8)");
    let s = shmem.alloc_slice(1000, 7u64).or_die("alloc_slice(1000)");
    let d = raw::malloc_with_hints(64, oxshmem::heap::SHMEM_MALLOC_ATOMICS_REMOTE).or_die("shmem_malloc_with_hints");
    let big = shmem.alloc_aligned(3, 4096, 0u32).or_die("alloc_aligned(3, 4096)");
    check_eq("alloc_aligned(.., 4096) address mod 4096", 0, big.as_ptr() as usize % 4096);
    // SAFETY: a is not used afterwards.
    unsafe { raw::free(a) }.or_die("shmem_free(a)");
    let e = raw::malloc(50).or_die("shmem_malloc(50)");
    // SAFETY: c is replaced by f and not used afterwards.
    let f = unsafe { raw::realloc(c, 100_000) }.or_die("shmem_realloc(c, 100000)");
    let objs = [
        ("shmem_align", b),
        ("alloc_slice", s.as_ptr().cast()),
        ("malloc_with_hints", d),
        ("alloc_aligned", big.as_ptr().cast()),
        ("malloc after free", e),
        ("realloc", f),
    ];

    // Offsets from the heap base, gathered on PE 0: one row per PE.
    let offs: Vec<u64> = objs.iter().map(|(_, p)| (*p as usize - base) as u64).collect();
    for ((what, _), &o) in objs.iter().zip(&offs) {
        check((o as usize) < size, format!("{what}: offset {o} is outside the heap of {size} bytes"));
    }
    let rows = shmem.alloc_slice(n * objs.len(), u64::MAX).or_die("alloc_slice");
    rows.put(me * objs.len(), &offs, 0).or_die("shmem_put of my offsets to PE 0");
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        let all = rows.to_vec();
        for pe in 1..n {
            for (k, (what, _)) in objs.iter().enumerate() {
                check_eq(format!("offset of `{what}` on PE {pe} vs PE 0"), all[k], all[pe * objs.len() + k]);
            }
        }
        println!("offsets from the heap base, the same on {n} PEs: {offs:?}");
    }

    // Each PE tags its copy of every object; every PE reads every copy through its own pointer.
    for (k, (_, p)) in objs.iter().enumerate() {
        // SAFETY: every object is a live heap block of at least 8 bytes, 64-byte aligned.
        unsafe { p.cast::<u64>().write_volatile(tag(me, k)) };
    }
    shmem.barrier_all().or_die("barrier");
    for pe in 0..n {
        for (k, (what, p)) in objs.iter().enumerate() {
            // SAFETY: a symmetric u64.
            let v = unsafe { raw::g(p.cast::<u64>(), pe as i32) }.or_die("shmem_g");
            check_eq(format!("`{what}` read from PE {pe} through my pointer"), tag(pe, k), v);
        }
    }
    shmem.barrier_all().or_die("barrier");

    // calloc zeroed, realloc kept the contents (calloc'd zeros, then grown).
    // SAFETY: f is a live block of 100000 bytes; nobody writes it now.
    let fbytes = unsafe { std::slice::from_raw_parts(f.cast::<u8>().add(8), 100_000 - 8) }.to_vec();
    check(fbytes[..72].iter().all(|&x| x == 0), "realloc of a calloc'd block must keep its zeros");

    // realloc keeps contents when it moves the block, and the new block is symmetric.
    let r = raw::malloc(1000).or_die("shmem_malloc(1000)");
    let pat: Vec<u8> = (0..1000).map(|i| (i * 7 + me * 31) as u8).collect();
    // SAFETY: r holds 1000 bytes.
    unsafe { std::ptr::copy_nonoverlapping(pat.as_ptr(), r, 1000) };
    let blocker = raw::malloc(64).or_die("shmem_malloc(64)");
    // SAFETY: r is replaced by r2.
    let r2 = unsafe { raw::realloc(r, 200_000) }.or_die("shmem_realloc(1000 -> 200000)");
    // SAFETY: r2 holds 200000 bytes.
    let kept = unsafe { std::slice::from_raw_parts(r2, 1000) }.to_vec();
    oxshmem_tests::pe::check_slice("first 1000 bytes after shmem_realloc to 200000", &pat, &kept);
    let right = (me + 1) % n;
    let word = tag(me, 99);
    // SAFETY: r2 + 199992 is the last u64 of the block; `word` is a live local.
    unsafe { raw::putmem(r2.add(199_992), (&raw const word).cast(), 8, right as i32) }
        .or_die("shmem_putmem into a realloc'd block");
    shmem.barrier_all().or_die("barrier");
    let left = (me + n - 1) % n;
    // SAFETY: as above.
    let got = unsafe { r2.add(199_992).cast::<u64>().read_volatile() };
    check_eq(format!("put from PE {left} into the end of a realloc'd block"), tag(left, 99), got);
    // SAFETY: r2 is replaced by r3.
    let r3 = unsafe { raw::realloc(r2, 10) }.or_die("shmem_realloc(200000 -> 10)");
    // SAFETY: r3 holds 10 bytes.
    let kept = unsafe { std::slice::from_raw_parts(r3, 10) }.to_vec();
    oxshmem_tests::pe::check_slice("first 10 bytes after shrinking with shmem_realloc", &pat[..10], &kept);

    // calloc zeroes memory that held something before.
    let g = raw::malloc(4096).or_die("shmem_malloc(4096)");
    // SAFETY: g holds 4096 bytes.
    unsafe { g.write_bytes(0xAB, 4096) };
    // SAFETY: g is not used afterwards.
    unsafe { raw::free(g) }.or_die("shmem_free");
    let z = raw::calloc(512, 8).or_die("shmem_calloc(512, 8)");
    // SAFETY: z holds 4096 bytes.
    let zs = unsafe { std::slice::from_raw_parts(z, 4096) }.to_vec();
    check(
        zs.iter().all(|&x| x == 0),
        format!("shmem_calloc(512, 8) returned non-zero bytes at {:?}", zs.iter().position(|&x| x != 0)),
    );

    // Free everything: the free-byte count comes back to where it started.
    // SAFETY: none of these is used afterwards.
    unsafe {
        for p in [b, d, e, f, blocker, r3, z] {
            raw::free(p).or_die("shmem_free");
        }
    }
    drop((s, big, rows));
    check_eq("heap_free after freeing everything", free0, raw::heap_free().or_die("heap_free"));
    let before = raw::heap_free().or_die("heap_free");
    let p = raw::malloc(1000).or_die("shmem_malloc(1000)");
    let after = raw::heap_free().or_die("heap_free");
    check(before - after >= 1000, format!("heap_free went from {before} to {after} for a 1000-byte block"));
    // SAFETY: p is not used afterwards.
    unsafe { raw::free(p) }.or_die("shmem_free");
    println!("PE {me}: heap ok");
    finish(shmem);
}

fn expect_oom(label: &str, r: oxshmem::Result<impl std::fmt::Debug>, asked: usize, free: usize, total: usize) {
    let e = expect_err(
        label,
        r,
        &[&format!("cannot allocate {asked} bytes"), &format!("{free} bytes free"), "SHMEM_SYMMETRIC_SIZE"],
    );
    match e.kind {
        ErrorKind::OutOfMemory { asked: a, free: f, total: t, largest } => {
            check_eq(format!("{label}: asked"), asked, a);
            check_eq(format!("{label}: free"), free, f);
            check_eq(format!("{label}: total"), total, t);
            check(largest <= f, format!("{label}: largest free block {largest} exceeds the free bytes {f}"));
        }
        other => fail(format_args!("{label}: expected OutOfMemory, got {other:?}")),
    }
}

fn oom(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let total = raw::heap_size().or_die("heap_size");
    check_eq("heap_size with SHMEM_SYMMETRIC_SIZE=2M", 2 << 20, total);
    let free = raw::heap_free().or_die("heap_free");
    expect_oom("shmem_malloc(3 MiB)", raw::malloc(3 << 20), 3 << 20, free, total);
    expect_oom("alloc_slice(300000 x u64)", shmem.alloc_slice(300_000, 0u64), 2_400_000, free, total);
    // Fill half, then ask for a little more than is left: the error reports what is left.
    let half = raw::malloc(1 << 20).or_die("shmem_malloc(1 MiB)");
    let left = raw::heap_free().or_die("heap_free");
    check_eq("heap_free after 1 MiB", free - (1 << 20), left);
    expect_oom("shmem_malloc(what is left + 4 KiB)", raw::malloc(left + 4096), left + 4096, left, total);
    // The job goes on: allocate what fits and use it.
    let ring = shmem.alloc_slice(1024, 0u64).or_die("alloc_slice after OutOfMemory");
    let right = (me + 1) % n;
    ring.put(0, &vec![me as u64 + 1; 1024], right).or_die("shmem_put after OutOfMemory");
    shmem.barrier_all().or_die("barrier after OutOfMemory");
    check_eq("data put after OutOfMemory", vec![((me + n - 1) % n) as u64 + 1; 1024], ring.to_vec());
    drop(ring);
    // SAFETY: half is not used afterwards.
    unsafe { raw::free(half) }.or_die("shmem_free");
    check_eq("heap_free at the end", free, raw::heap_free().or_die("heap_free"));
    println!("PE {me}: continued after OutOfMemory");
    finish(shmem);
}

fn bad_sizes(_: &[String]) {
    let shmem = init();
    let me = shmem.my_pe();
    let free0 = raw::heap_free().or_die("heap_free");
    expect_err("shmem_malloc(0)", raw::malloc(0), &["shmem_malloc", "invalid size", "zero bytes"]);
    expect_err("alloc_slice(0)", shmem.alloc_slice(0, 0u8), &["invalid size", "zero bytes"]);
    expect_err("shmem_align(64, 0)", raw::align(64, 0), &["shmem_align", "zero bytes"]);
    expect_err(
        "shmem_malloc(usize::MAX)",
        raw::malloc(usize::MAX),
        &["invalid size", &format!("{} bytes overflows", usize::MAX)],
    );
    expect_err(
        "alloc_slice(usize::MAX / 4 x u64)",
        shmem.alloc_slice(usize::MAX / 4, 0u64),
        &["invalid size", "elements of 8 bytes overflows"],
    );
    expect_err(
        "shmem_calloc(usize::MAX, 2)",
        raw::calloc(usize::MAX, 2),
        &["shmem_calloc", "invalid size", "overflows"],
    );
    expect_err("shmem_align(3, 64)", raw::align(3, 64), &["shmem_align", "alignment 3 is not a power of two"]);
    expect_err("alloc_aligned(.., 48)", shmem.alloc_aligned(4, 48, 0u64), &["alignment 48 is not a power of two"]);
    // Hints only advise: a bit this library does not know still allocates.
    let p = raw::malloc_with_hints(64, 1 << 10).or_die("shmem_malloc_with_hints(64, 1 << 10)");
    check(!p.is_null(), "shmem_malloc_with_hints(64, 1 << 10) allocates");
    // SAFETY: p was just allocated and is not used afterwards.
    unsafe { raw::free(p) }.or_die("shmem_free");
    let stack = 0u64;
    // SAFETY: the runtime must refuse the pointer (it is not a heap block), so nothing is freed.
    expect_err(
        "shmem_free(stack variable)",
        unsafe { raw::free((&raw const stack).cast_mut().cast()) },
        &["shmem_free", "is not the start of a live symmetric allocation"],
    );
    let p = raw::malloc(256).or_die("shmem_malloc(256)");
    // SAFETY: as above: an interior pointer is refused.
    expect_err(
        "shmem_free(interior pointer)",
        unsafe { raw::free(p.add(64)) },
        &["shmem_free", &format!("{:#x} is not the start", p as usize + 64)],
    );
    // SAFETY: a refused realloc leaves p live and unchanged.
    expect_err("shmem_realloc(p, 0)", unsafe { raw::realloc(p, 0) }, &["shmem_realloc", "zero bytes"]);
    // SAFETY: as above.
    expect_err("shmem_realloc(p, usize::MAX)", unsafe { raw::realloc(p, usize::MAX) }, &["shmem_realloc", "overflows"]);
    // p is still a live block of 256 bytes after the refused calls.
    // SAFETY: p holds 256 bytes.
    unsafe { p.write_bytes(1, 256) };
    // SAFETY: p is not used afterwards.
    unsafe { raw::free(p) }.or_die("shmem_free after refused reallocs");
    // SAFETY: p was freed: a second free is refused.
    expect_err("double shmem_free", unsafe { raw::free(p) }, &["is not the start of a live symmetric allocation"]);
    check_eq("heap_free after the refused requests", free0, raw::heap_free().or_die("heap_free"));
    // The job goes on.
    let x = shmem.alloc(0u64).or_die("alloc after errors");
    x.atomic_inc(0, 0).or_die("atomic_inc after errors");
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        check_eq("counter after errors", shmem.n_pes() as u64, x.value());
    }
    drop(x);
    println!("PE {me}: continued after bad sizes");
    finish(shmem);
}

fn size(args: &[String]) {
    let expect: usize = arg(args, 0, 0);
    let shmem = init();
    let got = raw::heap_size().or_die("heap_size");
    check_eq(
        format!("heap_size with SHMEM_SYMMETRIC_SIZE={:?}", std::env::var("SHMEM_SYMMETRIC_SIZE").ok()),
        expect,
        got,
    );
    // The whole free part can be allocated (address space only: nothing is touched).
    let free = raw::heap_free().or_die("heap_free");
    let p = raw::malloc(free).or_die(format!("shmem_malloc of all {free} free bytes"));
    expect_err("one more byte", raw::malloc(1), &["cannot allocate", "symmetric heap has 0 bytes free"]);
    // SAFETY: p is not used afterwards.
    unsafe { raw::free(p) }.or_die("shmem_free");
    println!("PE {}: heap_size {got}", shmem.my_pe());
    finish(shmem);
}

fn init_fails(_: &[String]) {
    match oxshmem::init() {
        Ok(s) => {
            let _: Shmem = s;
            fail("shmem_init succeeded, but this case expects it to fail")
        }
        Err(e) => {
            eprintln!("{e}");
            println!("ERR init: {e}");
            std::process::exit(3);
        }
    }
}

fn debug_mismatch(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check(n >= 2, "debug-mismatch needs at least 2 PEs");
    let free0 = raw::heap_free().or_die("heap_free");
    let mine = if me == 0 { 1024 } else { 2048 };
    let other = if me == 0 { 2048 } else { 1024 };
    let e = expect_err(
        "shmem_malloc with different sizes",
        raw::malloc(mine),
        &[
            "collective arguments differ between PEs",
            &format!("this PE called shmem_malloc with size {mine}"),
            &format!("PE {} called shmem_malloc with ", if me == 0 { 1 } else { 0 }),
            &other.to_string(),
        ],
    );
    check_eq("heap_free after the refused shmem_malloc", free0, raw::heap_free().or_die("heap_free"));
    // Sizes that differ only on some PEs, and a different routine with the same size.
    expect_err(
        "shmem_align with different sizes",
        raw::align(64, if me == n - 1 { 64 } else { 128 }),
        &["collective arguments differ between PEs", "called shmem_align with"],
    );
    check(matches!(e.kind, ErrorKind::CollectiveMismatch(_)), format!("expected CollectiveMismatch, got {:?}", e.kind));
    expect_err(
        "alloc_slice with different lengths",
        shmem.alloc_slice(if me == 0 { 10 } else { 20 }, 0u64),
        &["collective arguments differ between PEs"],
    );
    // Matching calls work; freeing different objects on different PEs is refused.
    let a = raw::malloc(128).or_die("shmem_malloc(128) on every PE");
    let b = raw::malloc(128).or_die("shmem_malloc(128) on every PE");
    let x = if me == 0 { a } else { b };
    // SAFETY: refused: nothing is freed.
    expect_err(
        "shmem_free of different objects",
        unsafe { raw::free(x) },
        &["collective arguments differ between PEs", "shmem_free with offset"],
    );
    // SAFETY: a and b are not used afterwards.
    unsafe {
        raw::free(a).or_die("shmem_free(a) on every PE");
        raw::free(b).or_die("shmem_free(b) on every PE");
    }
    check_eq("heap_free after every refused call", free0, raw::heap_free().or_die("heap_free"));
    let ok = shmem.alloc_slice(4, me as u32).or_die("alloc_slice after the mismatches");
    check_eq("g from PE 0", 0u32, ok.g(3, 0).or_die("shmem_g"));
    // The same offset on every PE: PE 0's address of `ok` reaches the right neighbour's.
    let off = ok.as_ptr() as usize - own_heap_base();
    let offs = shmem.alloc_slice(n, 0u64).or_die("alloc_slice");
    offs.put(me, &[off as u64], 0).or_die("put");
    shmem.barrier_all().or_die("barrier");
    if me == 0 {
        check_eq("offsets after the mismatches", vec![off as u64; n], offs.to_vec());
    }
    drop(offs);
    drop(ok);
    println!("PE {me}: CollectiveMismatch caught");
    finish(shmem);
}

fn align_large(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let base = own_heap_base();
    let small = raw::malloc(100).or_die("shmem_malloc(100)");
    for align in [1usize << 13, 1 << 16, 1 << 21] {
        let p = raw::align(align, 64).or_die(format!("shmem_align({align}, 64)"));
        check_eq(
            format!(
                "shmem_align({align}, 64) address mod {align} (heap base {base:#x}, offset {:#x})",
                p as usize - base
            ),
            0,
            p as usize % align,
        );
        let s = shmem.alloc_aligned(8, align, me as u64).or_die(format!("alloc_aligned(8, {align})"));
        check_eq(format!("alloc_aligned(8, {align}) address mod {align}"), 0, s.as_ptr() as usize % align);
        check_eq(
            format!("alloc_aligned(8, {align}): element 0 on the right neighbour"),
            ((me + 1) % n) as u64,
            s.g(0, (me + 1) % n).or_die("shmem_g"),
        );
        drop(s);
        // SAFETY: p is not used afterwards.
        unsafe { raw::free(p) }.or_die("shmem_free");
    }
    // SAFETY: small is not used afterwards.
    unsafe { raw::free(small) }.or_die("shmem_free");
    println!("PE {me}: large alignments ok");
    finish(shmem);
}

fn malloc_bench(args: &[String]) {
    let iters: usize = arg(args, 0, 20_000);
    let rounds: usize = arg(args, 1, 7);
    let shmem = init();
    for _ in 0..iters / 10 {
        let p = raw::malloc(64).or_die("shmem_malloc");
        // SAFETY: p is not used afterwards.
        unsafe { raw::free(p) }.or_die("shmem_free");
    }
    let mut per_pair = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        shmem.barrier_all().or_die("barrier");
        let t = std::time::Instant::now();
        for _ in 0..iters {
            let p = raw::malloc(64).or_die("shmem_malloc");
            // SAFETY: p is not used afterwards.
            unsafe { raw::free(p) }.or_die("shmem_free");
        }
        per_pair.push(t.elapsed().as_nanos() as f64 / iters as f64);
    }
    per_pair.sort_by(f64::total_cmp);
    if shmem.my_pe() == 0 {
        println!(
            "malloc+free 64 B on {} PEs: best {:.0} ns, median {:.0} ns per pair",
            shmem.n_pes(),
            per_pair[0],
            per_pair[rounds / 2]
        );
    }
    finish(shmem);
}
