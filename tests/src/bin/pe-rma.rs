//! PE program for remote memory access: `pe-rma <case> [args]`.
//!
//! Cases:
//! - `types BYTES...`: blocking and `_nbi` put/get, `p`/`g`, to the right and left neighbours
//!   and to self, for every standard RMA type plus a `Pod` struct and two 128-bit elements, at
//!   each size (in bytes; at least one element).
//! - `strided`: `iput`/`iget` with strides above 1, for several element sizes.
//! - `raw`: the pointer API (`putmem`, `getmem`, their `_nbi` forms, `p`, `g`, `iput`, `iget`)
//!   on memory from `raw::malloc`.
//! - `ptr`: `shmem_ptr` (`raw::ptr`, `SymSlice::remote_ptr`): a store through the pointer is
//!   seen by the peer.
//! - `accessible`: `pe_accessible` and `addr_accessible`.
//!
//! Every PE owns a distinct pattern (`Pat::pat(pe, i)`), so data that came from the wrong PE,
//! the wrong offset or not at all is caught.

use std::fmt::Debug;

use bytemuck::{Pod, Zeroable};
use oxshmem::{Shmem, raw};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, check_slice, dispatch, finish, init};

fn main() {
    dispatch(
        "pe-rma",
        &[("types", types), ("strided", strided), ("raw", raw_api), ("ptr", ptr), ("accessible", accessible)],
    );
}

/// A user-defined element: mixed field sizes, explicit padding so that it is `Pod`.
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Particle {
    x: f64,
    y: f32,
    id: u32,
    tag: u16,
    kind: u8,
    flag: u8,
    pad: [u8; 4],
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Element `i` of PE `pe`'s pattern: the low byte is `31 pe + i`, so that element `i` differs
/// between any two PEs of a job, and the rest is hashed from both.
fn mix(pe: usize, i: usize) -> u64 {
    (splitmix(((pe as u64) << 40) ^ i as u64) << 8) | ((pe as u64 * 31 + i as u64) & 0xff)
}

/// An element type with a per-PE pattern.
trait Pat: Pod + PartialEq + Debug {
    const NAME: &'static str;
    fn pat(pe: usize, i: usize) -> Self;
}

macro_rules! int_pat {
    ($($t:ty),*) => {$(
        impl Pat for $t {
            const NAME: &'static str = stringify!($t);
            fn pat(pe: usize, i: usize) -> Self {
                mix(pe, i) as $t
            }
        }
    )*};
}
int_pat!(i8, u8, i16, u16, i32, u32, i64, u64, isize, usize);

impl Pat for f32 {
    const NAME: &'static str = "f32";
    fn pat(pe: usize, i: usize) -> Self {
        // Exact in f32: below 2^24, plus a binary fraction.
        (pe * 100_000 + i % 100_000) as f32 + (mix(pe, i) % 4) as f32 * 0.25
    }
}

impl Pat for f64 {
    const NAME: &'static str = "f64";
    fn pat(pe: usize, i: usize) -> Self {
        pe as f64 * 1e9 + i as f64 + (mix(pe, i) % 1024) as f64 / 1024.0
    }
}

impl Pat for Particle {
    const NAME: &'static str = "Particle";
    fn pat(pe: usize, i: usize) -> Self {
        let m = mix(pe, i);
        Particle {
            x: f64::pat(pe, i),
            y: f32::pat(pe, i + 1),
            id: (m >> 32) as u32,
            tag: m as u16,
            kind: (m >> 16) as u8,
            flag: (m >> 24) as u8,
            pad: [pe as u8, i as u8, 0xAB, 0xCD],
        }
    }
}

impl Pat for [u8; 16] {
    const NAME: &'static str = "[u8; 16]";
    fn pat(pe: usize, i: usize) -> Self {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&mix(pe, i).to_le_bytes());
        b[8..].copy_from_slice(&mix(pe, i + (1 << 32)).to_le_bytes());
        b
    }
}

impl Pat for u128 {
    const NAME: &'static str = "u128";
    fn pat(pe: usize, i: usize) -> Self {
        (u128::from(mix(pe, i + (1 << 33))) << 64) | u128::from(mix(pe, i))
    }
}

fn pattern<T: Pat>(pe: usize, len: usize) -> Vec<T> {
    (0..len).map(|i| T::pat(pe, i)).collect()
}

/// A pattern no PE owns, for "must not have been touched" checks.
const NOBODY: usize = 0xDEAD;

fn types(args: &[String]) {
    let shmem = init();
    let sizes: Vec<usize> =
        args.iter().map(|a| a.parse().unwrap_or_else(|_| oxshmem_tests::pe::fail(format!("bad size {a:?}")))).collect();
    check(!sizes.is_empty(), "types needs at least one size in bytes");
    for &bytes in &sizes {
        one_type::<i8>(&shmem, bytes);
        one_type::<u8>(&shmem, bytes);
        one_type::<i16>(&shmem, bytes);
        one_type::<u16>(&shmem, bytes);
        one_type::<i32>(&shmem, bytes);
        one_type::<u32>(&shmem, bytes);
        one_type::<i64>(&shmem, bytes);
        one_type::<u64>(&shmem, bytes);
        one_type::<isize>(&shmem, bytes);
        one_type::<usize>(&shmem, bytes);
        one_type::<f32>(&shmem, bytes);
        one_type::<f64>(&shmem, bytes);
        one_type::<Particle>(&shmem, bytes);
        one_type::<[u8; 16]>(&shmem, bytes);
        one_type::<u128>(&shmem, bytes);
    }
    println!("PE {} checked {} types at sizes {sizes:?}", shmem.my_pe(), 15);
    finish(shmem);
}

fn one_type<T: Pat>(shmem: &Shmem, bytes: usize) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let len = (bytes / size_of::<T>()).max(1);
    let what = |op: &str, pe: usize| format!("{op} of {len} x {} with PE {pe}", T::NAME);
    let mine = pattern::<T>(me, len);
    let from_left = pattern::<T>(left, len);
    let from_right = pattern::<T>(right, len);
    let untouched = pattern::<T>(NOBODY, len);

    let dst = shmem.alloc_slice(len, T::pat(NOBODY, 0)).or_die(what("alloc_slice", me));
    dst.copy_from_slice(&untouched);
    shmem.barrier_all().or_die("barrier");

    // Blocking put to the right: my copy now holds the left neighbour's pattern.
    dst.put(0, &mine, right).or_die(what("shmem_put", right));
    shmem.barrier_all().or_die("barrier");
    check_slice(what("shmem_put (received)", left), &from_left, &dst.to_vec());
    shmem.barrier_all().or_die("barrier");

    // Non-blocking put to the left, completed by quiet.
    dst.put_nbi(0, &mine, left).or_die(what("shmem_put_nbi", left));
    shmem.quiet().or_die("shmem_quiet");
    shmem.barrier_all().or_die("barrier");
    check_slice(what("shmem_put_nbi (received)", right), &from_right, &dst.to_vec());
    shmem.barrier_all().or_die("barrier");

    // A put to oneself.
    dst.copy_from_slice(&untouched);
    dst.put(0, &mine, me).or_die(what("shmem_put", me));
    shmem.quiet().or_die("shmem_quiet");
    check_slice(what("shmem_put to self", me), &mine, &dst.to_vec());
    shmem.barrier_all().or_die("barrier");

    // Every copy holds its owner's pattern: get from both neighbours and from self.
    let mut got = untouched.clone();
    dst.get(0, &mut got, right).or_die(what("shmem_get", right));
    check_slice(what("shmem_get", right), &from_right, &got);
    let mut got = untouched.clone();
    dst.get_nbi(0, &mut got, left).or_die(what("shmem_get_nbi", left));
    shmem.quiet().or_die("shmem_quiet");
    check_slice(what("shmem_get_nbi", left), &from_left, &got);
    let mut got = untouched.clone();
    dst.get(0, &mut got, me).or_die(what("shmem_get", me));
    check_slice(what("shmem_get from self", me), &mine, &got);

    // A sub-range at an offset: only that range changes.
    if len >= 3 {
        let (at, k) = (len / 3, len / 3);
        let mut part = untouched.clone();
        dst.get(at, &mut part[..k], left).or_die(what("shmem_get at an offset", left));
        check_slice(what("shmem_get at an offset", left), &from_left[at..at + k], &part[..k]);
        check_slice(what("shmem_get at an offset (rest of buffer)", left), &untouched[k..], &part[k..]);
        shmem.barrier_all().or_die("barrier");
        dst.put(at, &untouched[..k], right).or_die(what("shmem_put at an offset", right));
        shmem.barrier_all().or_die("barrier");
        let mut expect = mine.clone();
        expect[at..at + k].copy_from_slice(&untouched[..k]);
        check_slice(what("shmem_put at an offset (received)", left), &expect, &dst.to_vec());
        dst.copy_from_slice(&mine);
    }
    shmem.barrier_all().or_die("barrier");

    // p and g: single elements, first and last.
    let last = len - 1;
    check_eq(what("shmem_g element 0", right), T::pat(right, 0), dst.g(0, right).or_die(what("shmem_g", right)));
    check_eq(what("shmem_g last element", left), T::pat(left, last), dst.g(last, left).or_die(what("shmem_g", left)));
    check_eq(what("shmem_g from self", me), T::pat(me, last), dst.g(last, me).or_die(what("shmem_g", me)));
    shmem.barrier_all().or_die("barrier");
    dst.p(last, T::pat(me, 7777), right).or_die(what("shmem_p", right));
    dst.p(0, T::pat(me, 8888), left).or_die(what("shmem_p", left));
    shmem.barrier_all().or_die("barrier");
    if len > 1 {
        check_eq(what("shmem_p last element (received)", left), T::pat(left, 7777), dst.read(last));
        check_eq(what("shmem_p element 0 (received)", right), T::pat(right, 8888), dst.read(0));
        check_slice(what("elements around shmem_p targets", me), &mine[1..last], &dst.to_vec()[1..last]);
    } else {
        // One element, written by both neighbours: the two p's are not ordered, either wins.
        let v = dst.read(0);
        check(v == T::pat(left, 7777) || v == T::pat(right, 8888), what("shmem_p on a one-element object", me));
    }
    shmem.barrier_all().or_die("barrier");
    dst.free().or_die(what("shmem_free", me));
}

fn strided(_: &[String]) {
    let shmem = init();
    strided_type::<u8>(&shmem);
    strided_type::<i16>(&shmem);
    strided_type::<i32>(&shmem);
    strided_type::<f32>(&shmem);
    strided_type::<u64>(&shmem);
    strided_type::<f64>(&shmem);
    strided_type::<Particle>(&shmem);
    strided_type::<[u8; 16]>(&shmem);
    strided_type::<u128>(&shmem);
    finish(shmem);
}

fn strided_type<T: Pat>(shmem: &Shmem) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    const LEN: usize = 64;
    let what = |op: &str, pe: usize| format!("{op} of {} with PE {pe}", T::NAME);
    let obj = shmem.alloc_slice(LEN, T::pat(NOBODY, 0)).or_die("alloc_slice");
    obj.copy_from_slice(&pattern::<T>(NOBODY, LEN));
    shmem.barrier_all().or_die("barrier");

    // iput: 16 elements, every 2nd of the source, to every 3rd element from 1 on the right.
    let src = pattern::<T>(me, 48);
    obj.iput(1, 3, &src, 2, 16, right).or_die(what("shmem_iput", right));
    shmem.barrier_all().or_die("barrier");
    let got = obj.to_vec();
    for (k, g) in got.iter().enumerate() {
        let expect = if k >= 1 && (k - 1) % 3 == 0 && (k - 1) / 3 < 16 {
            T::pat(left, 2 * ((k - 1) / 3))
        } else {
            T::pat(NOBODY, k)
        };
        check_eq(
            format!("{} element {k} after shmem_iput(dst stride 3, src stride 2) from PE {left}", T::NAME),
            expect,
            *g,
        );
    }
    shmem.barrier_all().or_die("barrier");

    // iget: 10 elements, every 4th from 2 on the left, into every 2nd local slot.
    obj.copy_from_slice(&pattern::<T>(me, LEN));
    shmem.barrier_all().or_die("barrier");
    let mut out = pattern::<T>(NOBODY, 20);
    obj.iget(2, 4, &mut out, 2, 10, left).or_die(what("shmem_iget", left));
    for (j, o) in out.iter().enumerate() {
        let expect = if j % 2 == 0 { T::pat(left, 2 + 4 * (j / 2)) } else { T::pat(NOBODY, j) };
        check_eq(
            format!("{} element {j} after shmem_iget(src stride 4, dst stride 2) from PE {left}", T::NAME),
            expect,
            *o,
        );
    }
    // Stride 1 both ways is a plain copy.
    let mut plain = pattern::<T>(NOBODY, 5);
    obj.iget(7, 1, &mut plain, 1, 5, right).or_die(what("shmem_iget stride 1", right));
    check_slice(what("shmem_iget stride 1", right), &pattern::<T>(right, 12)[7..12], &plain);
    shmem.barrier_all().or_die("barrier");
    obj.free().or_die("shmem_free");
}

fn raw_api(args: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let bytes: usize = arg(args, 0, 4096 + 13);
    let mine = pattern::<u8>(me, bytes);
    let p = raw::malloc(bytes).or_die("shmem_malloc");
    check(!p.is_null(), "shmem_malloc returned null");
    let local = || {
        // SAFETY: `p` is a live allocation of `bytes` bytes; barriers separate our reads from
        // other PEs' writes.
        unsafe { std::slice::from_raw_parts(p, bytes) }.to_vec()
    };

    // SAFETY: mine holds `bytes` readable bytes.
    unsafe { raw::putmem(p, mine.as_ptr(), bytes, right as i32) }.or_die("shmem_putmem");
    raw::barrier_all().or_die("shmem_barrier_all");
    check_slice(format!("shmem_putmem of {bytes} bytes from PE {left}"), &pattern::<u8>(left, bytes), &local());
    raw::barrier_all().or_die("shmem_barrier_all");

    // SAFETY: as above.
    unsafe { raw::putmem_nbi(p, mine.as_ptr(), bytes, left as i32) }.or_die("shmem_putmem_nbi");
    raw::quiet().or_die("shmem_quiet");
    raw::barrier_all().or_die("shmem_barrier_all");
    check_slice(format!("shmem_putmem_nbi of {bytes} bytes from PE {right}"), &pattern::<u8>(right, bytes), &local());
    raw::barrier_all().or_die("shmem_barrier_all");

    // SAFETY: p is valid for `bytes` bytes.
    unsafe { std::ptr::copy_nonoverlapping(mine.as_ptr(), p, bytes) };
    raw::barrier_all().or_die("shmem_barrier_all");
    let mut got = vec![0u8; bytes];
    // SAFETY: got holds `bytes` writable bytes.
    unsafe { raw::getmem(got.as_mut_ptr(), p, bytes, right as i32) }.or_die("shmem_getmem");
    check_slice(format!("shmem_getmem of {bytes} bytes from PE {right}"), &pattern::<u8>(right, bytes), &got);
    let mut got = vec![0u8; bytes];
    // SAFETY: as above; got outlives the quiet.
    unsafe { raw::getmem_nbi(got.as_mut_ptr(), p, bytes, left as i32) }.or_die("shmem_getmem_nbi");
    raw::quiet().or_die("shmem_quiet");
    check_slice(format!("shmem_getmem_nbi of {bytes} bytes from PE {left}"), &pattern::<u8>(left, bytes), &got);
    raw::barrier_all().or_die("shmem_barrier_all");

    // p/g through typed raw pointers into a second allocation of u64 words.
    const WORDS: usize = 64;
    let w = raw::malloc(WORDS * 8).or_die("shmem_malloc").cast::<u64>();
    // SAFETY: w is a live, 64-byte aligned allocation of WORDS u64.
    unsafe { std::slice::from_raw_parts_mut(w, WORDS) }.fill(0);
    raw::barrier_all().or_die("shmem_barrier_all");
    // SAFETY: w.add(me % WORDS) lies inside the allocation.
    unsafe { raw::p(w.add(me % WORDS), u64::pat(me, 1), right as i32) }.or_die("shmem_p");
    raw::barrier_all().or_die("shmem_barrier_all");
    // SAFETY: as above.
    let v = unsafe { raw::g(w.add(left % WORDS), me as i32) }.or_die("shmem_g");
    check_eq(format!("raw shmem_p from PE {left}, read back with shmem_g from self"), u64::pat(left, 1), v);
    // SAFETY: as above.
    let v = unsafe { raw::g(w.add(me % WORDS), right as i32) }.or_die("shmem_g");
    check_eq(format!("raw shmem_g from PE {right}"), u64::pat(me, 1), v);
    raw::barrier_all().or_die("shmem_barrier_all");

    // iput of 8-byte elements: destination stride 3, source stride 2, 10 elements.
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts_mut(w, WORDS) }.fill(u64::MAX);
    raw::barrier_all().or_die("shmem_barrier_all");
    let src = pattern::<u64>(me, 20);
    // SAFETY: src holds 20 readable u64 (stride 2 x 10); the destination extent 28 < WORDS.
    unsafe { raw::iput(w.cast(), src.as_ptr().cast(), 3, 2, 8, 10, right as i32) }.or_die("shmem_iput64");
    raw::barrier_all().or_die("shmem_barrier_all");
    // SAFETY: as above.
    let words = unsafe { std::slice::from_raw_parts(w, WORDS) }.to_vec();
    for (k, &x) in words.iter().enumerate() {
        let expect = if k % 3 == 0 && k / 3 < 10 { u64::pat(left, 2 * (k / 3)) } else { u64::MAX };
        check_eq(format!("word {k} after raw shmem_iput64(dst 3, src 2) from PE {left}"), expect, x);
    }
    raw::barrier_all().or_die("shmem_barrier_all");

    // iget of 4-byte elements: source stride 5, destination stride 2, 8 elements.
    let w32 = w.cast::<u32>();
    let mine32 = pattern::<u32>(me, WORDS * 2);
    // SAFETY: the allocation holds WORDS * 2 u32.
    unsafe { std::ptr::copy_nonoverlapping(mine32.as_ptr(), w32, WORDS * 2) };
    raw::barrier_all().or_die("shmem_barrier_all");
    let mut out = vec![0u32; 16];
    // SAFETY: out holds 16 writable u32 (stride 2 x 8); the source extent 36 < 128.
    unsafe { raw::iget(out.as_mut_ptr().cast(), w32.cast(), 2, 5, 4, 8, left as i32) }.or_die("shmem_iget32");
    for (j, &x) in out.iter().enumerate() {
        let expect = if j % 2 == 0 { u32::pat(left, 5 * (j / 2)) } else { 0 };
        check_eq(format!("element {j} after raw shmem_iget32(src 5, dst 2) from PE {left}"), expect, x);
    }
    // 16-byte elements.
    let mut out = vec![[0u8; 16]; 3];
    let src16 = pattern::<[u8; 16]>(me, 6);
    raw::barrier_all().or_die("shmem_barrier_all");
    // SAFETY: src16 holds 6 elements (stride 2 x 3); the destination extent is 3 x 16 bytes.
    unsafe { raw::iput(p, src16.as_ptr().cast(), 1, 2, 16, 3, right as i32) }.or_die("shmem_iput128");
    raw::barrier_all().or_die("shmem_barrier_all");
    // SAFETY: out holds 3 elements; the source is 3 x 16 bytes of p.
    unsafe { raw::iget(out.as_mut_ptr().cast(), p, 1, 1, 16, 3, me as i32) }.or_die("shmem_iget128");
    let left16 = pattern::<[u8; 16]>(left, 6);
    check_slice(format!("raw shmem_iput128 (src stride 2) from PE {left}"), &[left16[0], left16[2], left16[4]], &out);
    raw::barrier_all().or_die("shmem_barrier_all");

    // SAFETY: neither pointer is used afterwards.
    unsafe {
        raw::free(w.cast()).or_die("shmem_free");
        raw::free(p).or_die("shmem_free");
    }
    println!("PE {me}: raw RMA ok");
    finish(shmem);
}

fn ptr(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let buf = shmem.alloc_slice(64, 0u64).or_die("alloc_slice");
    for pe in 0..n {
        let rp = buf.remote_ptr(pe);
        check(rp.is_some(), format!("SymSlice::remote_ptr({pe}) is None for a PE on this host"));
        let rawp = raw::ptr(buf.as_ptr().cast(), pe as i32);
        check_eq(format!("raw::ptr and remote_ptr for PE {pe}"), rp.map(|p| p as usize), Some(rawp as usize));
    }
    check_eq("shmem_ptr to my own object", Some(buf.as_ptr() as usize), buf.remote_ptr(me).map(|p| p as usize));
    check(buf.remote_ptr(n).is_none(), "remote_ptr(n_pes) must be None");
    check(raw::ptr(buf.as_ptr().cast(), -1).is_null(), "shmem_ptr(.., -1) must be null");
    check(raw::ptr(buf.as_ptr().cast(), n as i32).is_null(), "shmem_ptr(.., n_pes) must be null");
    let stack = 5u64;
    check(raw::ptr((&raw const stack).cast(), me as i32).is_null(), "shmem_ptr of a stack variable must be null");

    // A plain store through the pointer to the right neighbour's object is a put.
    let rp = buf.remote_ptr(right).expect("checked above");
    // SAFETY: rp points to 64 u64 in the right neighbour's mapped heap; element `me % 64` is
    // written by this PE only.
    unsafe { rp.add(me % 64).write_volatile(u64::pat(me, 99)) };
    shmem.barrier_all().or_die("barrier");
    check_eq(
        format!("element {} stored through shmem_ptr by PE {left}", left % 64),
        u64::pat(left, 99),
        buf.read(left % 64),
    );
    // And a load through the pointer reads the peer's memory.
    buf.write(63, u64::pat(me, 63));
    shmem.barrier_all().or_die("barrier");
    let lp = buf.remote_ptr(left).expect("checked above");
    // SAFETY: as above; element 63 is not written after the barrier.
    let v = unsafe { lp.add(63).read_volatile() };
    check_eq(format!("element 63 loaded through shmem_ptr from PE {left}"), u64::pat(left, 63), v);
    shmem.barrier_all().or_die("barrier");
    println!("PE {me}: shmem_ptr ok");
    drop(buf);
    finish(shmem);
}

fn accessible(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let buf = shmem.alloc_slice(4, 0u32).or_die("alloc_slice");
    for pe in 0..n {
        check(shmem.pe_accessible(pe), format!("shmem_pe_accessible({pe})"));
        check(raw::pe_accessible(pe as i32), format!("raw shmem_pe_accessible({pe})"));
        check(
            raw::addr_accessible(buf.as_ptr().cast(), pe as i32),
            format!("shmem_addr_accessible(heap object, {pe})"),
        );
        // SAFETY: the pointer is only compared, never dereferenced.
        let last = unsafe { buf.as_ptr().add(3) };
        check(raw::addr_accessible(last.cast(), pe as i32), format!("shmem_addr_accessible(last element, {pe})"));
    }
    check(!shmem.pe_accessible(n), "shmem_pe_accessible(n_pes) must be false");
    check(!raw::pe_accessible(n as i32), "raw shmem_pe_accessible(n_pes) must be false");
    check(!raw::pe_accessible(-1), "shmem_pe_accessible(-1) must be false");
    check(!raw::addr_accessible(buf.as_ptr().cast(), n as i32), "shmem_addr_accessible(heap, n_pes) must be false");
    check(!raw::addr_accessible(buf.as_ptr().cast(), -1), "shmem_addr_accessible(heap, -1) must be false");
    let stack = 1u32;
    check(
        !raw::addr_accessible((&raw const stack).cast(), me as i32),
        "shmem_addr_accessible(stack variable) must be false",
    );
    let boxed = Box::new(7u64);
    check(
        !raw::addr_accessible((&raw const *boxed).cast(), me as i32),
        "shmem_addr_accessible(malloc'd, not symmetric) must be false",
    );
    println!("PE {me}: accessible ok");
    drop(buf);
    finish(shmem);
}
