//! The runtime's team collectives on `GpuBuf` memory of the Rust GPU device, under the emulated
//! CUDA driver (`tests/gpu_rust_coll.rs`): the pointer forms of `oxshmem::coll::api::raw`,
//! which route a buffer of the GPU heap to its segment (`oxshmem_device::cuda::coll`).
//!
//! - `coll`: on the world and on a team of every other PE: broadcast from every root (GPU to
//!   GPU, host to GPU, GPU to host), fcollect, collect with unequal sizes (a member
//!   contributing nothing), alltoall and alltoalls with strides, sum, max and xor reductions
//!   (over more than one host chunk, in place, one buffer in host memory) and reducescatter;
//!   every element checked. Then an fcollect whose members disagree on the count, which every
//!   PE must refuse with the same error, and collectives that work after it.
//!
//! Prints `PE n: collectives on <team> agree` after each team's, and `PE n: collectives on GPU
//! memory agree` at the end.

use oxshmem::coll::api::raw;
use oxshmem::{ReduceOp, SymSlice, Team, TeamConfig};
use oxshmem_device::DeviceError;
use oxshmem_device::cuda::{GpuBuf, GpuDevice};
use oxshmem_tests::pe::{OrDie, check_eq, check_slice, dispatch, expect_err, finish, init};

fn main() {
    dispatch("pe-gpu-coll", &[("coll", coll)]);
}

/// The value, or the end of this PE naming `what` and the error.
#[track_caller]
fn ok<T>(r: Result<T, DeviceError>, what: &str) -> T {
    r.map_err(oxshmem::Error::from).or_die(what)
}

/// Writes `v` into this PE's copy of `buf` from element 0.
fn fill<T: bytemuck::Pod>(buf: &GpuBuf<T>, me: usize, v: &[T]) {
    ok(buf.put(me, 0, v), "put into my own GPU buffer");
}

/// A team and what its members are (world PEs, in team order).
struct On<'a> {
    name: &'a str,
    team: &'a Team,
    members: Vec<usize>,
    /// This PE's number in the team.
    me: usize,
}

/// Broadcast's elements.
const B: usize = 37;
/// fcollect's elements per member.
const F: usize = 5;
/// alltoall's elements per block.
const A: usize = 3;
/// The max reduction's elements.
const D: usize = 9;
/// The xor reduction's elements.
const X: usize = 7;
/// reducescatter's elements per member.
const NR: usize = 6;

/// The buffers of [`collectives`], sized for the world (a team is no larger). Allocation is
/// collective over the world, so they are made once, before any team's collectives.
struct Bufs {
    src: GpuBuf<u64>,
    dst: GpuBuf<u64>,
    hsrc: SymSlice<u64>,
    hdst: SymSlice<u64>,
    fsrc: GpuBuf<i32>,
    fdst: GpuBuf<i32>,
    csrc: GpuBuf<i32>,
    cdst: GpuBuf<i32>,
    hcdst: SymSlice<i32>,
    asrc: GpuBuf<u32>,
    adst: GpuBuf<u32>,
    rsrc: GpuBuf<i64>,
    rdst: GpuBuf<i64>,
    dsrc: GpuBuf<f64>,
    hd: SymSlice<f64>,
    hx: SymSlice<u32>,
    xdst: GpuBuf<u32>,
    ssrc: GpuBuf<i32>,
    sdst: GpuBuf<i32>,
}

/// The sum reduction's elements on a team of `m`: more than one host chunk (256 KiB) per
/// member at two members.
fn sum_elements(m: usize) -> usize {
    if m == 2 { 70_000 } else { 1_000 }
}

impl Bufs {
    fn new(shmem: &oxshmem::Shmem, dev: &GpuDevice) -> Bufs {
        let n = shmem.n_pes();
        let g = |len: usize| ok(dev.alloc::<u64>(shmem, len), "alloc");
        let i = |len: usize| ok(dev.alloc::<i32>(shmem, len), "alloc");
        let u = |len: usize| ok(dev.alloc::<u32>(shmem, len), "alloc");
        let r = (1..=n).map(sum_elements).max().unwrap_or(1);
        Bufs {
            src: g(B),
            dst: g(B),
            hsrc: shmem.alloc_slice(B, 0u64).or_die("alloc_slice"),
            hdst: shmem.alloc_slice(B, 0u64).or_die("alloc_slice"),
            fsrc: i(F),
            fdst: i(F * n),
            csrc: i(n),
            cdst: i(n * n),
            hcdst: shmem.alloc_slice(n * n, -1i32).or_die("alloc_slice"),
            asrc: u(2 * A * n),
            adst: u(2 * A * n),
            rsrc: ok(dev.alloc::<i64>(shmem, r), "alloc"),
            rdst: ok(dev.alloc::<i64>(shmem, r), "alloc"),
            dsrc: ok(dev.alloc::<f64>(shmem, D), "alloc"),
            hd: shmem.alloc_slice(D, 0f64).or_die("alloc_slice"),
            hx: shmem.alloc_slice(X, 0u32).or_die("alloc_slice"),
            xdst: u(X),
            ssrc: i(NR * n),
            sdst: i(NR),
        }
    }
}

fn coll(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let dev = ok(GpuDevice::init(&shmem), "GpuDevice::init");
    let b = Bufs::new(&shmem, &dev);
    let world = shmem.team_world();
    collectives(&b, &On { name: "the world", team: &world, members: (0..n).collect(), me });
    // A team of every other PE (the odd ones), when there are at least two of them; the even
    // PEs go on without it.
    if n >= 4 {
        let odd = world.split_strided(1, 2, n / 2, TeamConfig::default()).or_die("split_strided");
        if let Some(t) = odd.as_ref() {
            collectives(
                &b,
                &On { name: "the odd PEs", team: t, members: (0..n / 2).map(|i| 1 + 2 * i).collect(), me: me / 2 },
            );
        }
        shmem.barrier_all().or_die("barrier");
        if let Some(t) = odd {
            t.destroy().or_die("destroy");
        }
    }
    mismatch(&shmem, &b);
    shmem.barrier_all().or_die("barrier");
    ok(dev.finalize(&shmem), "GpuDevice::finalize");
    println!("PE {me}: collectives on GPU memory agree");
    finish(shmem);
}

/// Every collective on the team `on` (called by its members only), every element checked.
fn collectives(b: &Bufs, on: &On<'_>) {
    let (t, m, me, name) = (on.team, on.members.len(), on.me, on.name);
    let wme = on.members[me];

    // broadcast, from every root: GPU to GPU, host to GPU, GPU to host.
    let val = |pe: usize, k: usize| (pe * 1000 + k) as u64;
    let mine: Vec<u64> = (0..B).map(|k| val(wme, k)).collect();
    fill(&b.src, wme, &mine);
    b.hsrc.copy_from_slice(&mine);
    t.sync().or_die("sync");
    let (d, s) = (b.dst.as_mut_ptr().cast::<u8>(), b.src.as_mut_ptr().cast_const().cast::<u8>());
    for root in 0..m {
        let want: Vec<u64> = (0..B).map(|k| val(on.members[root], k)).collect();
        let r = root as i32;
        // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
        unsafe { raw::broadcast(t, d, s, B * 8, r, 8) }.or_die("broadcast GPU to GPU");
        check_slice(format_args!("broadcast on {name} from {root}, GPU to GPU"), &want, &ok(b.dst.to_vec(), "to_vec"));
        let hs = b.hsrc.as_ptr().cast_const().cast::<u8>();
        // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
        unsafe { raw::broadcast(t, d, hs, B * 8, r, 8) }.or_die("broadcast host to GPU");
        check_slice(format_args!("broadcast on {name} from {root}, host to GPU"), &want, &ok(b.dst.to_vec(), "to_vec"));
        // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
        unsafe { raw::broadcast(t, b.hdst.as_ptr().cast(), s, B * 8, r, 8) }.or_die("broadcast GPU to host");
        check_slice(format_args!("broadcast on {name} from {root}, GPU to host"), &want, &b.hdst.to_vec());
    }
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    let bad = unsafe { raw::broadcast(t, d, s, 8, m as i32, 8) };
    expect_err("broadcast from a root outside the team", bad, &["is not a PE of the team"]);

    // fcollect: F elements of every member, in team order.
    let fval = |i: usize, k: usize| (i * 100 + k) as i32;
    fill(&b.fsrc, wme, &(0..F).map(|k| fval(me, k)).collect::<Vec<_>>());
    t.sync().or_die("sync");
    let (fd, fs) = (b.fdst.as_mut_ptr().cast::<u8>(), b.fsrc.as_mut_ptr().cast_const().cast::<u8>());
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    let got = unsafe { raw::collect(t, fd, fs, F * 4, true, 4) }.or_die("fcollect");
    check_eq(format_args!("fcollect on {name}: bytes collected"), F * 4 * m, got);
    let want: Vec<i32> = (0..m).flat_map(|i| (0..F).map(move |k| fval(i, k))).collect();
    check_slice(format_args!("fcollect on {name}"), &want, &ok(b.fdst.to_vec(), "to_vec")[..F * m]);

    // collect with unequal sizes: member i contributes i elements (member 0 none), into a GPU
    // destination, then into a host one.
    let total: usize = (0..m).sum();
    let want: Vec<i32> = (0..m).flat_map(|i| (0..i).map(move |k| fval(i, k))).collect();
    if me > 0 {
        fill(&b.csrc, wme, &(0..me).map(|k| fval(me, k)).collect::<Vec<_>>());
    }
    t.sync().or_die("sync");
    let cs = b.csrc.as_mut_ptr().cast_const().cast::<u8>();
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    let got = unsafe { raw::collect(t, b.cdst.as_mut_ptr().cast(), cs, me * 4, false, 4) }.or_die("collect");
    check_eq(format_args!("collect on {name}: bytes collected"), total * 4, got);
    check_slice(format_args!("collect on {name}, GPU to GPU"), &want, &ok(b.cdst.to_vec(), "to_vec")[..total]);
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    let got = unsafe { raw::collect(t, b.hcdst.as_ptr().cast(), cs, me * 4, false, 4) }.or_die("collect to host");
    check_eq(format_args!("collect on {name} to host: bytes collected"), total * 4, got);
    check_slice(format_args!("collect on {name}, GPU to host"), &want, &b.hcdst.to_vec()[..total]);

    // alltoall: block j of member i's source (A elements) lands at block i of member j's.
    let aval = |from: usize, to: usize, k: usize| (from * 10000 + to * 100 + k) as u32;
    let dense: Vec<u32> = (0..m).flat_map(|j| (0..A).map(move |k| aval(me, j, k))).collect();
    fill(&b.asrc, wme, &dense);
    t.sync().or_die("sync");
    let (ad, asrc) = (b.adst.as_mut_ptr().cast::<u8>(), b.asrc.as_mut_ptr().cast_const().cast::<u8>());
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    unsafe { raw::alltoalls(t, ad, asrc, 1, 1, A, 4) }.or_die("alltoall");
    let want: Vec<u32> = (0..m).flat_map(|i| (0..A).map(move |k| aval(i, me, k))).collect();
    check_slice(format_args!("alltoall on {name}"), &want, &ok(b.adst.to_vec(), "to_vec")[..A * m]);
    // alltoalls: the source dense, the destination at a stride of 2 elements.
    fill(&b.adst, wme, &vec![0u32; 2 * A * m]);
    t.sync().or_die("sync");
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    unsafe { raw::alltoalls(t, ad, asrc, 2, 1, A, 4) }.or_die("alltoalls");
    let got = ok(b.adst.to_vec(), "to_vec");
    for (x, w) in want.iter().enumerate() {
        check_eq(format_args!("alltoalls on {name}: element {x}"), *w, got[2 * x]);
        check_eq(format_args!("alltoalls on {name}: gap after element {x}"), 0, got[2 * x + 1]);
    }

    // A sum of i64 (over more than one host chunk per member at two members), GPU to GPU,
    // then in place.
    let r = sum_elements(m);
    let rval = |i: usize, k: usize| (i as i64 + 1) * (k as i64 + 1) - 3;
    fill(&b.rsrc, wme, &(0..r).map(|k| rval(me, k)).collect::<Vec<_>>());
    t.sync().or_die("sync");
    let want: Vec<i64> = (0..r).map(|k| (0..m).map(|i| rval(i, k)).sum()).collect();
    let (rd, rs) = (b.rdst.as_mut_ptr(), b.rsrc.as_mut_ptr());
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    unsafe { raw::reduce(t, ReduceOp::Sum, rd, rs, r) }.or_die("sum_reduce");
    check_slice(format_args!("sum_reduce on {name} ({r} elements)"), &want, &ok(b.rdst.to_vec(), "to_vec")[..r]);
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    unsafe { raw::reduce(t, ReduceOp::Sum, rs, rs, r) }.or_die("sum_reduce in place");
    check_slice(format_args!("sum_reduce in place on {name}"), &want, &ok(b.rsrc.to_vec(), "to_vec")[..r]);

    // A max of f64 into host memory.
    let dval = |i: usize, k: usize| if k.is_multiple_of(2) { i as f64 * 1.5 - k as f64 } else { 0.25 - i as f64 };
    fill(&b.dsrc, wme, &(0..D).map(|k| dval(me, k)).collect::<Vec<_>>());
    t.sync().or_die("sync");
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    unsafe { raw::reduce(t, ReduceOp::Max, b.hd.as_ptr(), b.dsrc.as_mut_ptr(), D) }.or_die("max_reduce");
    let want: Vec<f64> = (0..D).map(|k| (0..m).map(|i| dval(i, k)).fold(f64::MIN, f64::max)).collect();
    check_slice(format_args!("max_reduce on {name}, GPU to host"), &want, &b.hd.to_vec());

    // An xor of u32 from a host source.
    b.hx.copy_from_slice(&(0..X).map(|k| (1u32 << me) << k).collect::<Vec<_>>());
    t.sync().or_die("sync");
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    unsafe { raw::reduce(t, ReduceOp::Xor, b.xdst.as_mut_ptr(), b.hx.as_ptr(), X) }.or_die("xor_reduce");
    let want: Vec<u32> = (0..X).map(|k| ((1u32 << m) - 1) << k).collect();
    check_slice(format_args!("xor_reduce on {name}, host to GPU"), &want, &ok(b.xdst.to_vec(), "to_vec"));

    // reducescatter: member i gets block i of the sum of the members' sources.
    let sval = |i: usize, x: usize| (i * 7 + x) as i32;
    fill(&b.ssrc, wme, &(0..NR * m).map(|x| sval(me, x)).collect::<Vec<_>>());
    t.sync().or_die("sync");
    // SAFETY: symmetric buffers that hold what the collective names ([`Bufs`]).
    unsafe { raw::reducescatter(t, ReduceOp::Sum, b.sdst.as_mut_ptr(), b.ssrc.as_mut_ptr(), NR) }
        .or_die("reducescatter");
    let want: Vec<i32> = (0..NR).map(|k| (0..m).map(|i| sval(i, me * NR + k)).sum()).collect();
    check_slice(format_args!("reducescatter on {name}"), &want, &ok(b.sdst.to_vec(), "to_vec"));
    t.sync().or_die("sync");
    println!("PE {wme}: collectives on {name} agree");
}

/// An fcollect whose members pass different counts: every PE gets the same error, and the team
/// works after it.
fn mismatch(shmem: &oxshmem::Shmem, b: &Bufs) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    fill(&b.fsrc, me, &[me as i32; F]);
    shmem.barrier_all().or_die("barrier");
    let count = if me == 0 { F - 1 } else { F };
    let (d, s) = (b.fdst.as_mut_ptr().cast::<u8>(), b.fsrc.as_mut_ptr().cast_const().cast::<u8>());
    // SAFETY: the buffers hold F elements per PE of the world.
    let e = unsafe { raw::collect(&world, d, s, count * 4, true, 4) };
    expect_err("fcollect with different counts", e, &["the team's members called it with different arguments"]);
    // SAFETY: as above.
    let got = unsafe { raw::collect(&world, d, s, F * 4, true, 4) }.or_die("fcollect after the mismatch");
    check_eq("fcollect after the mismatch: bytes", F * 4 * n, got);
    let want: Vec<i32> = (0..n).flat_map(|i| [i as i32; F]).collect();
    check_slice("fcollect after the mismatch", &want, &ok(b.fdst.to_vec(), "to_vec"));
}
