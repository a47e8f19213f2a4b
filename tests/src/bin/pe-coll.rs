//! PE program for collectives (OpenSHMEM 1.5 §9.9): `pe-coll <case> [args]`.
//!
//! Most cases take a TEAM argument: `world`, or `START:STRIDE:SIZE` for a team split from the
//! world (PEs outside it only take part in the split and the final barrier). Every value a PE
//! contributes is a function of its world PE number and the element index, so each member
//! computes every expected result on its own, and checks that elements past the end of the
//! result were left alone.
//!
//! Cases:
//! - `sync TEAM ROUNDS`: puts to the right neighbour, quiet, `team.sync`: the value is there.
//! - `bcast TEAM`: broadcast from every root of 0, 1, 7, 1000 and 100 000 elements (mailbox
//!   and direct paths) of 1-, 6- and 8-byte elements; in place from the root's buffer.
//! - `fcollect TEAM`, `collect TEAM` (sizes differ between members, 0 included),
//!   `alltoall TEAM`, `alltoalls TEAM` (strides 1, 2, 3 on either side): small and large.
//! - `reduce TEAM GROUP`: every operation each type allows, for `GROUP` `int` (i8 … usize),
//!   `float` (f32, f64) or `complex`, with 1, 100 and 20 000 elements (chunked), into another
//!   buffer and in place; values are chosen so float results are exact.
//! - `raw TEAM`: the pointer forms of `coll::api::raw` on `raw::malloc` memory.
//! - `mismatch TEAM`: arguments that differ between members give every member
//!   `CollectiveMismatch`; a correct collective afterwards works.
//! - `short-dest TEAM`: the last member's destination is too short: it gets `SizeMismatch`,
//!   the others `CollectiveMismatch`.
//! - `collect-short-dest NELEMS`: the same for `collect`, whose destination size depends on
//!   every member's count.
//! - `active START LOGSTRIDE SIZE`: the deprecated active-set routines on that set, back to
//!   back on one `pSync`; PEs outside the set get an error.
//! - `zero-null TEAM`: every collective with zero elements and NULL (or stack) buffers, in the
//!   team forms of `coll::api::raw` and the deprecated active-set forms: each succeeds with
//!   nothing written and nothing printed, still matched on every member (a collect where only
//!   some members contribute nothing works, and a collect whose total is not zero still needs
//!   a destination); real collectives before and after prove the streams stay in step.

use std::fmt::Debug;

use bytemuck::Pod;
use oxshmem::coll::active_set;
use oxshmem::{Complex, Error, ErrorKind, ReduceOp, Reducible, Shmem, SymSlice, Team, TeamConfig};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, check_slice, dispatch, expect_err, fail, finish, init};

fn main() {
    dispatch(
        "pe-coll",
        &[
            ("sync", sync),
            ("bcast", bcast),
            ("fcollect", fcollect),
            ("collect", collect),
            ("alltoall", alltoall),
            ("alltoalls", alltoalls),
            ("reduce", reduce),
            ("raw", raw_forms),
            ("mismatch", mismatch),
            ("short-dest", short_dest),
            ("bcast-root", bcast_root),
            ("collect-short-dest", collect_short_dest),
            ("active", active),
            ("zero-null", zero_null),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Teams and values.

/// This PE's view of the team a case runs on.
struct On {
    team: Team,
    /// World PE of each member.
    members: Vec<usize>,
    /// This PE's number in the team.
    me: usize,
    /// Whether the team was split (and so must be destroyed).
    split: bool,
}

impl On {
    fn n(&self) -> usize {
        self.members.len()
    }
}

/// Makes the team named by `spec` (collective over the world); `None` on non-members.
fn join(shmem: &Shmem, spec: &str) -> Option<On> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    if spec == "world" {
        return Some(On { team: world, members: (0..n).collect(), me, split: false });
    }
    let f: Vec<usize> =
        spec.split(':').map(|x| x.parse().unwrap_or_else(|_| fail(format!("bad team spec {spec:?}")))).collect();
    check(f.len() == 3, format!("team spec {spec:?} is not START:STRIDE:SIZE"));
    let members: Vec<usize> = (0..f[2]).map(|i| f[0] + i * f[1]).collect();
    let t = world.split_strided(f[0], f[1], f[2], TeamConfig::default()).or_die(format!("split_strided {spec}"));
    check_eq(format!("membership of team {spec}"), members.contains(&me), t.is_some());
    t.map(|team| On { me: members.iter().position(|&w| w == me).expect("member"), team, members, split: true })
}

fn leave(on: Option<On>) {
    if let Some(on) = on
        && on.split
    {
        on.team.destroy().or_die("shmem_team_destroy");
    }
}

/// Element types that can be made from a number (for data-movement collectives).
trait Elem: Pod + PartialEq + Debug {
    fn from_u64(x: u64) -> Self;
}

impl Elem for u8 {
    fn from_u64(x: u64) -> Self {
        (x ^ (x >> 8) ^ (x >> 16)) as u8
    }
}
impl Elem for u32 {
    fn from_u64(x: u64) -> Self {
        (x ^ (x >> 32)) as u32
    }
}
impl Elem for u64 {
    fn from_u64(x: u64) -> Self {
        x
    }
}
impl Elem for [u16; 3] {
    fn from_u64(x: u64) -> Self {
        [x as u16, (x >> 16) as u16, (x >> 32) as u16 ^ (x >> 48) as u16]
    }
}
impl Elem for [u8; 3] {
    fn from_u64(x: u64) -> Self {
        [x as u8, (x >> 8) as u8, (x >> 16) as u8 ^ (x >> 24) as u8]
    }
}

/// The value world PE `w` contributes at position `(a, k)` in collective number `tag`.
fn val<T: Elem>(tag: u64, w: usize, a: usize, k: usize) -> T {
    let x = (tag << 52) ^ ((w as u64) << 44) ^ ((a as u64) << 32) ^ k as u64;
    T::from_u64(x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (x >> 7))
}

/// What a destination holds where nothing may be written (differs per PE and position).
fn pat<T: Elem>(me: usize, k: usize) -> T {
    T::from_u64(!((k as u64).wrapping_mul(0x2545_F491_4F6C_DD1D) ^ ((me as u64) << 56)))
}

/// Writes `v` into this PE's elements `at..` of `s` (a put to itself: range-checked).
fn set<T: Pod>(s: &SymSlice<T>, at: usize, v: &[T]) {
    if !v.is_empty() {
        s.put(at, v, oxshmem::raw::my_pe().or_die("my_pe")).or_die("local put");
    }
}

/// This PE's elements `at..at+len` of `s`.
fn get<T: Pod>(s: &SymSlice<T>, at: usize, len: usize) -> Vec<T> {
    let mut v = vec![T::zeroed(); len];
    if len > 0 {
        s.get(at, &mut v, oxshmem::raw::my_pe().or_die("my_pe")).or_die("local get");
    }
    v
}

fn type_name<T>() -> &'static str {
    std::any::type_name::<T>()
}

// ---------------------------------------------------------------------------------------------
// sync

fn sync(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let rounds: u64 = arg(args, 1, 200);
    let shmem = init();
    let n = shmem.n_pes();
    let on = join(&shmem, spec);
    let slot = shmem.alloc_slice(n, 0u64).or_die("alloc");
    if let Some(on) = &on {
        let tn = on.n();
        let (right, left) = ((on.me + 1) % tn, (on.me + tn - 1) % tn);
        for r in 1..=rounds {
            slot.p(on.me, r, on.members[right]).or_die("shmem_p");
            shmem.quiet().or_die("shmem_quiet");
            on.team.sync().or_die("shmem_team_sync");
            check_eq(format!("round {r}: value from team PE {left} after shmem_team_sync"), r, slot.read(left));
            // Nobody writes round r+1 before everyone has read round r.
            on.team.sync().or_die("shmem_team_sync");
        }
        println!("PE {}: {rounds} rounds of team sync ok", shmem.my_pe());
    }
    leave(on);
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// broadcast

const BCAST_SIZES: [usize; 5] = [0, 1, 7, 1000, 100_000];

fn bcast_type<T: Elem>(shmem: &Shmem, on: &Option<On>, tag: u64) {
    let me = shmem.my_pe();
    let max = BCAST_SIZES[BCAST_SIZES.len() - 1];
    let src = shmem.alloc_slice(max, T::zeroed()).or_die("alloc");
    let dst = shmem.alloc_slice(max + 1, T::zeroed()).or_die("alloc");
    let Some(on) = on else { return };
    let ty = type_name::<T>();
    for nel in BCAST_SIZES {
        for root in 0..on.n() {
            let what = format!("broadcast of {nel} {ty} from team PE {root}");
            // Every PE fills its source with its own values: only the root's may arrive.
            let mine: Vec<T> = (0..nel).map(|k| val(tag, me, root, k)).collect();
            set(&src, 0, &mine);
            let before: Vec<T> = (0..=nel).map(|k| pat(me, k)).collect();
            set(&dst, 0, &before);
            on.team.broadcast(&dst, &src, nel, root).or_die(&what);
            let mut expect: Vec<T> = (0..nel).map(|k| val(tag, on.members[root], root, k)).collect();
            expect.push(pat(me, nel));
            check_slice(&what, &expect, &get(&dst, 0, nel + 1));
            check_slice(format!("{what}: source afterwards"), &mine, &get(&src, 0, nel));
        }
    }
    // In place: the root's buffer is both source and destination.
    for nel in [1000, max] {
        for root in [0, on.n() - 1] {
            let what = format!("in-place broadcast of {nel} {ty} from team PE {root}");
            let mine: Vec<T> = (0..nel).map(|k| val(tag + 1, me, root, k)).collect();
            set(&src, 0, &mine);
            on.team.broadcast(&src, &src, nel, root).or_die(&what);
            let expect: Vec<T> = (0..nel).map(|k| val(tag + 1, on.members[root], root, k)).collect();
            check_slice(&what, &expect, &get(&src, 0, nel));
        }
    }
}

fn bcast(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let on = join(&shmem, spec);
    bcast_type::<u8>(&shmem, &on, 1);
    bcast_type::<u64>(&shmem, &on, 3);
    bcast_type::<[u16; 3]>(&shmem, &on, 5);
    if on.is_some() {
        println!("PE {}: broadcast ok", shmem.my_pe());
    }
    leave(on);
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// fcollect and collect

fn fcollect_type<T: Elem>(shmem: &Shmem, on: &Option<On>, tag: u64) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let sizes = [0, 1, 7, 1000, 20_000];
    let max = 20_000;
    let src = shmem.alloc_slice(max, T::zeroed()).or_die("alloc");
    let dst = shmem.alloc_slice(n * max + 1, T::zeroed()).or_die("alloc");
    let Some(on) = on else { return };
    let ty = type_name::<T>();
    for nel in sizes {
        let what = format!("fcollect of {nel} {ty} per PE");
        let tot = nel * on.n();
        set(&src, 0, &(0..nel).map(|k| val(tag, me, 0, k)).collect::<Vec<T>>());
        set(&dst, 0, &(0..=tot).map(|k| pat(me, k)).collect::<Vec<T>>());
        on.team.fcollect(&dst, &src, nel).or_die(&what);
        let mut expect: Vec<T> = Vec::with_capacity(tot + 1);
        for &w in &on.members {
            expect.extend((0..nel).map(|k| val::<T>(tag, w, 0, k)));
        }
        expect.push(pat(me, tot));
        check_slice(&what, &expect, &get(&dst, 0, tot + 1));
    }
}

fn fcollect(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let on = join(&shmem, spec);
    fcollect_type::<u32>(&shmem, &on, 1);
    fcollect_type::<[u8; 3]>(&shmem, &on, 2);
    fcollect_type::<u64>(&shmem, &on, 3);
    if on.is_some() {
        println!("PE {}: fcollect ok", shmem.my_pe());
    }
    leave(on);
    finish(shmem);
}

/// Elements team member `j` contributes in collect round `r`: none, a few, more than a
/// mailbox holds (about 36 KB), or some, by turns.
fn collect_count<T>(j: usize, r: usize) -> usize {
    match (j + r) % 4 {
        _ if r == 4 => 0,
        0 => 0,
        1 => 1 + j,
        2 => 36_000 / size_of::<T>() + j,
        _ => 40,
    }
}

fn collect_type<T: Elem>(shmem: &Shmem, on: &Option<On>, tag: u64) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let max = 36_000 / size_of::<T>() + n;
    let src = shmem.alloc_slice(max, T::zeroed()).or_die("alloc");
    let dst = shmem.alloc_slice(n * max + 1, T::zeroed()).or_die("alloc");
    let Some(on) = on else { return };
    let ty = type_name::<T>();
    for r in 0..5 {
        let counts: Vec<usize> = (0..on.n()).map(|j| collect_count::<T>(j, r)).collect();
        let nel = counts[on.me];
        let tot: usize = counts.iter().sum();
        let what = format!("collect round {r} of {ty}, counts {counts:?}");
        set(&src, 0, &(0..nel).map(|k| val(tag, me, r, k)).collect::<Vec<T>>());
        set(&dst, 0, &(0..=tot).map(|k| pat(me, k)).collect::<Vec<T>>());
        let got = on.team.collect(&dst, &src, nel).or_die(&what);
        check_eq(format!("{what}: elements collected"), tot, got);
        let mut expect: Vec<T> = Vec::with_capacity(tot + 1);
        for (j, &w) in on.members.iter().enumerate() {
            expect.extend((0..counts[j]).map(|k| val::<T>(tag, w, r, k)));
        }
        expect.push(pat(me, tot));
        check_slice(&what, &expect, &get(&dst, 0, tot + 1));
    }
}

fn collect(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let on = join(&shmem, spec);
    collect_type::<u32>(&shmem, &on, 1);
    collect_type::<u8>(&shmem, &on, 2);
    collect_type::<[u16; 3]>(&shmem, &on, 3);
    if on.is_some() {
        println!("PE {}: collect ok", shmem.my_pe());
    }
    leave(on);
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// alltoall and alltoalls

/// One strided all-to-all of `nel` elements per pair, checked in full (the gaps of the
/// destination included).
#[allow(clippy::too_many_arguments)]
fn one_alltoalls<T: Elem>(
    on: &On,
    me: usize,
    src: &SymSlice<T>,
    dst: &SymSlice<T>,
    dst_stride: usize,
    src_stride: usize,
    nel: usize,
    tag: u64,
) {
    let tn = on.n();
    let ty = type_name::<T>();
    let what = format!("alltoalls of {nel} {ty} per pair, dst stride {dst_stride}, src stride {src_stride}");
    let extent = |s: usize| if nel == 0 { 0 } else { (tn * nel - 1) * s + 1 };
    // Block j goes to team member j; the gaps between strided elements hold junk.
    let mut s: Vec<T> = (0..extent(src_stride)).map(|k| pat(me + 77, k)).collect();
    for j in 0..tn {
        for k in 0..nel {
            s[(j * nel + k) * src_stride] = val(tag, me, j, k);
        }
    }
    set(src, 0, &s);
    let dext = extent(dst_stride);
    set(dst, 0, &(0..=dext).map(|k| pat(me, k)).collect::<Vec<T>>());
    if dst_stride == 1 && src_stride == 1 {
        on.team.alltoall(dst, src, nel).or_die(&what);
    } else {
        on.team.alltoalls(dst, src, dst_stride, src_stride, nel).or_die(&what);
    }
    let mut expect: Vec<T> = (0..=dext).map(|k| pat(me, k)).collect();
    for (i, &w) in on.members.iter().enumerate() {
        for k in 0..nel {
            expect[(i * nel + k) * dst_stride] = val(tag, w, on.me, k);
        }
    }
    check_slice(&what, &expect, &get(dst, 0, dext + 1));
}

fn alltoall_type<T: Elem>(shmem: &Shmem, on: &Option<On>, strides: &[(usize, usize)], tag: u64) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let big = 36_000 / size_of::<T>();
    let smax = strides.iter().map(|s| s.0.max(s.1)).max().unwrap_or(1);
    let src = shmem.alloc_slice(n * big * smax + 1, T::zeroed()).or_die("alloc");
    let dst = shmem.alloc_slice(n * big * smax + 1, T::zeroed()).or_die("alloc");
    let Some(on) = on else { return };
    for &(ds, ss) in strides {
        for nel in [0, 1, 5, big] {
            one_alltoalls(on, me, &src, &dst, ds, ss, nel, tag + nel as u64);
        }
    }
}

fn alltoall(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let on = join(&shmem, spec);
    alltoall_type::<u32>(&shmem, &on, &[(1, 1)], 1);
    alltoall_type::<u64>(&shmem, &on, &[(1, 1)], 2);
    alltoall_type::<[u8; 3]>(&shmem, &on, &[(1, 1)], 3);
    if on.is_some() {
        println!("PE {}: alltoall ok", shmem.my_pe());
    }
    leave(on);
    finish(shmem);
}

fn alltoalls(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let on = join(&shmem, spec);
    let strides = [(1, 1), (2, 1), (1, 3), (3, 2)];
    alltoall_type::<u32>(&shmem, &on, &strides, 1);
    alltoall_type::<[u16; 3]>(&shmem, &on, &strides[1..], 2);
    if on.is_some() {
        println!("PE {}: alltoalls ok", shmem.my_pe());
    }
    leave(on);
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// reductions

/// A reducible type with an independent model of each operation and values that keep float
/// results exact whatever the order of combination.
trait Model: Reducible + PartialEq + Debug {
    /// The operations OpenSHMEM 1.5 defines for the type.
    const OPS: &'static [ReduceOp];
    /// What world PE `w` contributes at element `k` to reductions with `op`.
    fn make(op: ReduceOp, w: usize, k: usize) -> Self;
    /// `a op b`.
    fn model(op: ReduceOp, a: Self, b: Self) -> Self;
}

fn mix(op: ReduceOp, w: usize, k: usize) -> u64 {
    let x = ((op as u64) << 56) ^ ((w as u64) << 40) ^ k as u64;
    let x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 31)
}

const ALL_OPS: &[ReduceOp] =
    &[ReduceOp::And, ReduceOp::Or, ReduceOp::Xor, ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum, ReduceOp::Prod];
const FLOAT_OPS: &[ReduceOp] = &[ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum, ReduceOp::Prod];
const COMPLEX_OPS: &[ReduceOp] = &[ReduceOp::Sum, ReduceOp::Prod];

macro_rules! int_model {
    ($($t:ty),*) => {$(
        impl Model for $t {
            const OPS: &'static [ReduceOp] = ALL_OPS;
            fn make(op: ReduceOp, w: usize, k: usize) -> Self {
                let h = mix(op, w, k);
                match op {
                    // Odd factors, so that products do not collapse to zero.
                    ReduceOp::Prod => (h | 1) as $t,
                    // Mostly-set bits, so that `and` keeps some.
                    ReduceOp::And => (h | (h >> 3) | (h >> 7)) as $t,
                    _ => h as $t,
                }
            }
            fn model(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::And => a & b,
                    ReduceOp::Or => a | b,
                    ReduceOp::Xor => a ^ b,
                    ReduceOp::Max => if b > a { b } else { a },
                    ReduceOp::Min => if b < a { b } else { a },
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                }
            }
        }
    )*};
}
int_model!(i8, u8, i16, u16, i32, u32, i64, u64, isize, usize);

/// Exact float values: sums of integers up to 1000, products of ±2^k, quarter steps.
fn float_gen(op: ReduceOp, w: usize, k: usize) -> f64 {
    let h = mix(op, w, k);
    match op {
        ReduceOp::Sum => (h % 2001) as f64 - 1000.0,
        ReduceOp::Prod => [1.0, 2.0, 0.5, -1.0, -2.0, 4.0, 0.25][(h % 7) as usize],
        _ => ((h % 100_001) as f64 - 50_000.0) * 0.25,
    }
}

macro_rules! float_model {
    ($($t:ty),*) => {$(
        impl Model for $t {
            const OPS: &'static [ReduceOp] = FLOAT_OPS;
            fn make(op: ReduceOp, w: usize, k: usize) -> Self {
                float_gen(op, w, k) as $t
            }
            fn model(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                    _ => unreachable!("not a float operation"),
                }
            }
        }
    )*};
}
float_model!(f32, f64);

macro_rules! complex_model {
    ($($t:ty),*) => {$(
        impl Model for Complex<$t> {
            const OPS: &'static [ReduceOp] = COMPLEX_OPS;
            fn make(op: ReduceOp, w: usize, k: usize) -> Self {
                let h = mix(op, w, k);
                match op {
                    // Gaussian integers of modulus at most 2: products stay exact integers.
                    ReduceOp::Prod => {
                        let (re, im) = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1)]
                            [(h % 6) as usize];
                        Complex { re: re as $t, im: im as $t }
                    }
                    _ => Complex {
                        re: (h % 2001) as $t - 1000.0,
                        im: ((h >> 20) % 2001) as $t - 1000.0,
                    },
                }
            }
            fn model(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => Complex { re: a.re + b.re, im: a.im + b.im },
                    ReduceOp::Prod => Complex {
                        re: a.re * b.re - a.im * b.im,
                        im: a.re * b.im + a.im * b.re,
                    },
                    _ => unreachable!("not a complex operation"),
                }
            }
        }
    )*};
}
complex_model!(f32, f64);

/// The reduction over `members` of element `k`, by the model.
fn expected<T: Model>(op: ReduceOp, members: &[usize], k: usize) -> T {
    members[1..].iter().fold(T::make(op, members[0], k), |acc, &w| T::model(op, acc, T::make(op, w, k)))
}

const REDUCE_COUNTS: [usize; 3] = [1, 100, 20_000];

fn reduce_type<T: Model>(shmem: &Shmem, on: &Option<On>) {
    let me = shmem.my_pe();
    let max = REDUCE_COUNTS[REDUCE_COUNTS.len() - 1];
    let src = shmem.alloc_slice(max, T::zeroed()).or_die("alloc");
    let dst = shmem.alloc_slice(max + 1, T::zeroed()).or_die("alloc");
    let Some(on) = on else { return };
    let ty = type_name::<T>();
    for &op in T::OPS {
        for count in REDUCE_COUNTS {
            let mine: Vec<T> = (0..count).map(|k| T::make(op, me, k)).collect();
            let expect: Vec<T> = (0..count).map(|k| expected(op, &on.members, k)).collect();
            // Into another buffer: the element past the end stays, the source stays.
            let what = format!("{op:?} reduction of {count} {ty}");
            set(&src, 0, &mine);
            let guard: T = bytemuck::cast_slice::<u64, T>(&[!(me as u64); 4])[0];
            set(&dst, count, &[guard]);
            on.team.reduce(op, &dst, &src, count).or_die(&what);
            check_slice(&what, &expect, &get(&dst, 0, count));
            check(
                bytemuck::bytes_of(&get(&dst, count, 1)[0]) == bytemuck::bytes_of(&guard),
                format!("{what}: the element past the end was written"),
            );
            check_slice(format!("{what}: source afterwards"), &mine, &get(&src, 0, count));
            // In place.
            let what = format!("in-place {op:?} reduction of {count} {ty}");
            set(&dst, 0, &mine);
            on.team.reduce(op, &dst, &dst, count).or_die(&what);
            check_slice(&what, &expect, &get(&dst, 0, count));
        }
    }
}

/// The named methods (`and_reduce` … `prod_reduce`) on one type of each family.
fn named_methods(shmem: &Shmem, on: &Option<On>) {
    let me = shmem.my_pe();
    let i = shmem.alloc_slice(3, 0i32).or_die("alloc");
    let f = shmem.alloc_slice(3, 0f64).or_die("alloc");
    let c = shmem.alloc_slice(3, Complex::<f32>::default()).or_die("alloc");
    let Some(on) = on else { return };
    let ws = &on.members;
    macro_rules! named {
        ($s:expr, $t:ty, $m:ident, $op:expr) => {{
            let what = format!("{}::<{}>", stringify!($m), stringify!($t));
            set(&$s, 0, &[<$t as Model>::make($op, me, 0), <$t as Model>::make($op, me, 1)]);
            on.team.$m(&$s, &$s, 2).or_die(&what);
            check_slice(&what, &[expected::<$t>($op, ws, 0), expected::<$t>($op, ws, 1)], &get(&$s, 0, 2));
        }};
    }
    named!(i, i32, and_reduce, ReduceOp::And);
    named!(i, i32, or_reduce, ReduceOp::Or);
    named!(i, i32, xor_reduce, ReduceOp::Xor);
    named!(i, i32, max_reduce, ReduceOp::Max);
    named!(i, i32, min_reduce, ReduceOp::Min);
    named!(i, i32, sum_reduce, ReduceOp::Sum);
    named!(i, i32, prod_reduce, ReduceOp::Prod);
    named!(f, f64, max_reduce, ReduceOp::Max);
    named!(f, f64, min_reduce, ReduceOp::Min);
    named!(f, f64, sum_reduce, ReduceOp::Sum);
    named!(f, f64, prod_reduce, ReduceOp::Prod);
    named!(c, Complex<f32>, sum_reduce, ReduceOp::Sum);
    named!(c, Complex<f32>, prod_reduce, ReduceOp::Prod);
}

/// Inexact float sums and products: every member must get the same bits (OpenSHMEM 1.5
/// §9.9.7: one result, "returned in dest on all PEs"), whatever order it combined them in.
fn float_results_agree(shmem: &Shmem, on: &Option<On>) {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    const COUNT: usize = 64;
    let src = shmem.alloc_slice(COUNT, 0f32).or_die("alloc");
    let dst = shmem.alloc_slice(COUNT, 0f32).or_die("alloc");
    let all = shmem.alloc_slice(n * COUNT, 0f32).or_die("alloc");
    let Some(on) = on else { return };
    for op in [ReduceOp::Sum, ReduceOp::Prod] {
        let what = format!("inexact f32 {op:?} reduction");
        let mine: Vec<f32> =
            (0..COUNT).map(|k| 0.1 + 1.0e-3 * k as f32 + 1.7e-7 * (me * me) as f32 + 1.1 * me as f32).collect();
        set(&src, 0, &mine);
        on.team.reduce(op, &dst, &src, COUNT).or_die(&what);
        on.team.fcollect(&all, &dst, COUNT).or_die("fcollect of the results");
        let got = get(&all, 0, on.n() * COUNT);
        for j in 1..on.n() {
            for k in 0..COUNT {
                let (a, b) = (got[k], got[j * COUNT + k]);
                check(
                    a.to_bits() == b.to_bits(),
                    format!("{what}: element {k} is {a:e} on team PE 0 but {b:e} on team PE {j}"),
                );
            }
        }
    }
}

fn reduce(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let group = args.get(1).map_or("int", String::as_str);
    let shmem = init();
    let on = join(&shmem, spec);
    match group {
        "int" => {
            reduce_type::<i8>(&shmem, &on);
            reduce_type::<u8>(&shmem, &on);
            reduce_type::<i16>(&shmem, &on);
            reduce_type::<u16>(&shmem, &on);
            reduce_type::<i32>(&shmem, &on);
            reduce_type::<u32>(&shmem, &on);
            reduce_type::<i64>(&shmem, &on);
            reduce_type::<u64>(&shmem, &on);
            reduce_type::<isize>(&shmem, &on);
            reduce_type::<usize>(&shmem, &on);
        }
        "float" => {
            reduce_type::<f32>(&shmem, &on);
            reduce_type::<f64>(&shmem, &on);
        }
        "complex" => {
            reduce_type::<Complex<f32>>(&shmem, &on);
            reduce_type::<Complex<f64>>(&shmem, &on);
        }
        "named" => named_methods(&shmem, &on),
        "agree" => float_results_agree(&shmem, &on),
        other => fail(format!("unknown reduction group {other:?}")),
    }
    if on.is_some() {
        println!("PE {}: {group} reductions ok", shmem.my_pe());
    }
    leave(on);
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// raw pointer forms

/// Bytes read back as 8-byte values.
fn words<T: Pod>(b: &[u8]) -> Vec<T> {
    b.chunks_exact(size_of::<T>()).map(bytemuck::pod_read_unaligned).collect()
}

fn raw_forms(args: &[String]) {
    use oxshmem::coll::api::raw as craw;
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let on = join(&shmem, spec);
    const BYTES: usize = 64 * 1024;
    let src = oxshmem::raw::malloc(BYTES).or_die("shmem_malloc");
    let dst = oxshmem::raw::malloc(n * BYTES + 8).or_die("shmem_malloc");
    // Local views; no other PE writes `src`, and `dst` only inside the collectives.
    let put = |p: *mut u8, v: &[u8]| {
        // SAFETY: p is a live symmetric buffer big enough for v (sizes below).
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p, v.len()) }
    };
    let read = |p: *const u8, len: usize| -> Vec<u8> {
        // SAFETY: p is a live symmetric buffer of at least len bytes.
        unsafe { std::slice::from_raw_parts(p, len) }.to_vec()
    };
    if let Some(on) = &on {
        let tn = on.n();
        let t = &on.team;
        let bytes_of =
            |w: usize, a: usize, len: usize| -> Vec<u8> { (0..len).map(|k| val::<u8>(9, w, a, k)).collect() };
        // broadcastmem, small and large, from every root.
        for len in [0, 24, 40_000] {
            for root in 0..tn {
                let what = format!("raw broadcast of {len} bytes from team PE {root}");
                put(src, &bytes_of(me, root, len));
                put(dst, &[0xEE; 8]);
                // SAFETY: both buffers are symmetric and hold len bytes.
                unsafe { craw::broadcast(t, dst, src, len, root as i32, 1) }.or_die(&what);
                let mut expect = bytes_of(on.members[root], root, len);
                expect.extend(if len < 8 { &[0xEE; 8][len..] } else { &[] });
                check_slice(&what, &expect, &read(dst, len.max(8)));
            }
        }
        // fcollectmem and collectmem (own size per member: 8 * (team PE + 1) bytes).
        for (fixed, len) in [(true, 16), (true, 20_000), (false, 8 * (on.me + 1))] {
            let what = format!("raw {} of {len} bytes", if fixed { "fcollect" } else { "collect" });
            put(src, &bytes_of(me, 1, len));
            // SAFETY: src holds len bytes, dst the team's total.
            let got = unsafe { craw::collect(t, dst, src, len, fixed, 8) }.or_die(&what);
            let mut expect = Vec::new();
            for (j, &w) in on.members.iter().enumerate() {
                let lj = if fixed { len } else { 8 * (j + 1) };
                expect.extend(bytes_of(w, 1, lj));
            }
            check_eq(format!("{what}: bytes collected"), expect.len(), got);
            check_slice(&what, &expect, &read(dst, expect.len()));
        }
        // alltoallsmem: 3 elements of 8 bytes per pair, dst stride 2, src stride 1.
        {
            let what = "raw alltoalls of 3 u64 per pair, strides 2/1";
            let s: Vec<u64> = (0..tn * 3).map(|k| (me * 1000 + k) as u64).collect();
            put(src, bytemuck::cast_slice(&s));
            put(dst, &vec![0u8; (tn * 3 * 2) * 8]);
            // SAFETY: src holds tn*3 elements, dst tn*3*2 (strided).
            unsafe { craw::alltoalls(t, dst, src, 2, 1, 3, 8) }.or_die(what);
            let got: Vec<u64> = words(&read(dst, tn * 6 * 8));
            for (i, &w) in on.members.iter().enumerate() {
                for k in 0..3 {
                    check_eq(
                        format!("{what}: element {k} from team PE {i}"),
                        (w * 1000 + on.me * 3 + k) as u64,
                        got[(i * 3 + k) * 2],
                    );
                }
            }
        }
        // TYPE_OP_reduce on i64.
        {
            let what = "raw sum reduction of 1000 i64";
            let s: Vec<i64> = (0..1000).map(|k| (me * k) as i64 - 7).collect();
            put(src, bytemuck::cast_slice(&s));
            // SAFETY: both buffers hold 1000 i64 and are 8-byte aligned.
            unsafe { craw::reduce::<i64>(t, ReduceOp::Sum, dst.cast(), src.cast(), 1000) }.or_die(what);
            let got: Vec<i64> = words(&read(dst, 8000));
            let expect: Vec<i64> = (0..1000).map(|k| on.members.iter().map(|&w| (w * k) as i64 - 7).sum()).collect();
            check_slice(what, &expect, &got);
        }
        // A negative root: every member refuses it.
        let e = expect_err(
            "raw broadcast from root -1",
            // SAFETY: as above.
            unsafe { craw::broadcast(t, dst, src, 8, -1, 1) },
            &["PE -1 is out of range"],
        );
        check(
            matches!(e.kind, ErrorKind::PeOutOfRange { .. }),
            format!("root -1: expected PeOutOfRange, got {:?}", e.kind),
        );
        // A stack buffer on team PE 0: NotSymmetric there, CollectiveMismatch elsewhere.
        let mut local = [0u8; 16];
        let d = if on.me == 0 { local.as_mut_ptr() } else { dst };
        // SAFETY: the runtime checks d before any access.
        let r = unsafe { craw::collect(t, d, src, 16, true, 8) };
        if on.me == 0 {
            let e = expect_err("raw fcollect into a stack buffer", r, &["is not symmetric"]);
            check(matches!(e.kind, ErrorKind::NotSymmetric { .. }), format!("expected NotSymmetric, got {:?}", e.kind));
        } else {
            collective_mismatch("raw fcollect into a stack buffer", r);
        }
        // And the team still works.
        put(src, &[me as u8; 8]);
        // SAFETY: as above.
        unsafe { craw::broadcast(t, dst, src, 8, 0, 1) }.or_die("raw broadcast after errors");
        check_eq("raw broadcast after errors", vec![on.members[0] as u8; 8], read(dst, 8));
        craw::team_sync(t).or_die("raw team_sync");
        println!("PE {me}: raw collectives ok");
    }
    leave(on);
    // SAFETY: both were returned by shmem_malloc and are not used afterwards.
    unsafe {
        oxshmem::raw::free(dst).or_die("shmem_free");
        oxshmem::raw::free(src).or_die("shmem_free");
    }
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// errors

/// Checks that `r` is a `CollectiveMismatch` error (and prints it).
#[track_caller]
fn collective_mismatch<T: Debug>(label: &str, r: oxshmem::Result<T>) -> Error {
    let e = expect_err(label, r, &["collective arguments differ between PEs"]);
    check(
        matches!(e.kind, ErrorKind::CollectiveMismatch(_)),
        format!("{label}: expected CollectiveMismatch, got {:?}", e.kind),
    );
    e
}

/// The outcome of a broadcast from team member 0 in which the last member disagrees: that
/// member fails (`CollectiveMismatch`, or the error `needle` names when it rejected its own
/// arguments); the root fails too when the broadcast is `large` (it waits for the members
/// then, and so hears from them), and learns of it only at its next collective otherwise
/// (the root of a small broadcast waits for nobody); every other member succeeds.
#[track_caller]
fn bcast_outcome(on: &On, label: &str, r: oxshmem::Result<()>, large: bool, needle: Option<&str>) {
    if on.me == on.n() - 1 {
        match needle {
            Some(n) => drop(expect_err(label, r, &[n])),
            None => drop(collective_mismatch(label, r)),
        }
    } else if on.me == 0 && large {
        let e = collective_mismatch(label, r);
        if needle.is_some() {
            check(e.to_string().contains("rejected its arguments"), format!("{label}: root's error: {e}"));
        }
    } else {
        r.or_die(label);
    }
}

/// A correct broadcast and sum after a failed collective: the team still works.
fn still_works(on: &On, me: usize, a: &SymSlice<u64>, b: &SymSlice<u64>, after: &str) {
    a.write(0, me as u64 + 1);
    on.team.broadcast(b, a, 1, on.n() - 1).or_die(format!("broadcast after {after}"));
    check_eq(format!("broadcast after {after}"), on.members[on.n() - 1] as u64 + 1, b.read(0));
    on.team.sum_reduce(b, a, 1).or_die(format!("sum after {after}"));
    check_eq(format!("sum after {after}"), on.members.iter().map(|&w| w as u64 + 1).sum::<u64>(), b.read(0));
}

fn mismatch(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let on = join(&shmem, spec);
    let a = shmem.alloc_slice(4 * n + 4, 1u64).or_die("alloc");
    let b = shmem.alloc_slice(4 * n + 4, 0u64).or_die("alloc");
    let ai = shmem.alloc_slice(8, 1i32).or_die("alloc");
    let au = shmem.alloc_slice(8, 1u32).or_die("alloc");
    let big = shmem.alloc_slice(100_000, 1u64).or_die("alloc");
    let bigd = shmem.alloc_slice(100_000, 0u64).or_die("alloc");
    if let Some(on) = &on {
        check(on.n() >= 2, "mismatch needs a team of at least 2 PEs");
        let odd = on.me == on.n() - 1; // the member that disagrees
        let t = &on.team;
        let r = t.broadcast(&b, &a, if odd { 3 } else { 4 }, 0);
        bcast_outcome(on, "broadcast with another nelems", r, false, None);
        still_works(on, me, &a, &b, "broadcast with another nelems");
        let r = t.broadcast(&bigd, &big, if odd { 90_000 } else { 100_000 }, 0);
        bcast_outcome(on, "large broadcast with another nelems", r, true, None);
        still_works(on, me, &a, &b, "large broadcast with another nelems");
        let r = t.reduce(if odd { ReduceOp::Max } else { ReduceOp::Sum }, &b, &a, 4);
        collective_mismatch("reduction with another op", r);
        still_works(on, me, &a, &b, "reduction with another op");
        let r = if odd { t.sum_reduce(&au, &au, 8) } else { t.sum_reduce(&ai, &ai, 8) };
        collective_mismatch("reduction with another element type", r);
        still_works(on, me, &a, &b, "reduction with another element type");
        let r = t.sum_reduce(&bigd, &big, if odd { 20_000 } else { 20_001 });
        collective_mismatch("reduction with another count", r);
        still_works(on, me, &a, &b, "reduction with another count");
        let r = if odd { t.collect(&b, &a, 2).map(drop) } else { t.fcollect(&b, &a, 2) };
        collective_mismatch("collect against fcollect", r);
        still_works(on, me, &a, &b, "collect against fcollect");
        let r = t.fcollect(&b, &a, if odd { 1 } else { 2 });
        collective_mismatch("fcollect with another nelems", r);
        still_works(on, me, &a, &b, "fcollect with another nelems");
        let r = t.alltoall(&b, &a, if odd { 1 } else { 2 });
        collective_mismatch("alltoall with another nelems", r);
        still_works(on, me, &a, &b, "alltoall with another nelems");
        let r = t.alltoalls(&b, &a, if odd { 2 } else { 1 }, 2, 1);
        collective_mismatch("alltoalls with another dst stride", r);
        still_works(on, me, &a, &b, "alltoalls with another dst stride");
        println!("PE {me}: mismatched collectives refused");
    }
    leave(on);
    finish(shmem);
}

/// Members that disagree on a broadcast's root (the last member names member 1, the others
/// member 0; with `kind`, the last member calls alltoall instead), on a team of every PE: each member prints `bcast OK` or `bcast ERR <text>`, then
/// the same for a sync on the team. Nothing may hang. The team is not destroyed: it may be
/// unusable now.
fn bcast_root(args: &[String]) {
    let kind = args.first().is_some_and(|a| a == "kind");
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let t = shmem.team_world().split_strided(0, 1, n, TeamConfig::default()).or_die("split").expect("member");
    let a = shmem.alloc_slice(4, me as u64 + 1).or_die("alloc");
    let b = shmem.alloc_slice(4, 0u64).or_die("alloc");
    let odd = me == n - 1;
    let show = |what: &str, r: oxshmem::Result<()>| match r {
        Ok(()) => println!("PE {me}: {what} OK"),
        Err(e) => println!("PE {me}: {what} ERR {e}"),
    };
    if kind {
        show("bcast", if odd { t.alltoall(&b, &a, 1) } else { t.broadcast(&b, &a, 4, 0) });
    } else {
        show("bcast", t.broadcast(&b, &a, 4, usize::from(odd)));
    }
    show("sync", t.sync());
    std::mem::forget(t);
    finish(shmem);
}

/// The last member's `dest` is too short: `SizeMismatch` there, `CollectiveMismatch` elsewhere.
#[track_caller]
fn short_result<T: Debug>(on: &On, label: &str, r: oxshmem::Result<T>, needle: &str) {
    if on.me == on.n() - 1 {
        let e = expect_err(label, r, &[needle]);
        check(
            matches!(e.kind, ErrorKind::SizeMismatch { .. }),
            format!("{label}: expected SizeMismatch, got {:?}", e.kind),
        );
    } else {
        collective_mismatch(label, r);
    }
}

const DEST_NEEDS: &str = "size mismatch: dest needs";

fn short_dest(args: &[String]) {
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let on = join(&shmem, spec);
    let a = shmem.alloc_slice(2 * n * 5000, 1u64).or_die("alloc");
    let b = shmem.alloc_slice(2 * n * 5000, 0u64).or_die("alloc");
    let short = shmem.alloc_slice(3, 0u64).or_die("alloc");
    if let Some(on) = &on {
        let tn = on.n();
        let t = &on.team;
        let odd = on.me == tn - 1;
        let d = |ok: bool| if ok { &b } else { &short };
        for nel in [4, 5000] {
            let r = t.broadcast(d(!odd), &a, nel, 0);
            bcast_outcome(on, &format!("broadcast of {nel}"), r, nel > 100, Some(DEST_NEEDS));
            still_works(on, me, &a, &b, "short broadcast dest");
            short_result(on, &format!("fcollect of {nel}"), t.fcollect(d(!odd), &a, nel), DEST_NEEDS);
            still_works(on, me, &a, &b, "short fcollect dest");
            short_result(on, &format!("alltoall of {nel}"), t.alltoall(d(!odd), &a, nel), DEST_NEEDS);
            still_works(on, me, &a, &b, "short alltoall dest");
            short_result(on, &format!("sum reduction of {nel}"), t.sum_reduce(d(!odd), &a, nel), DEST_NEEDS);
            still_works(on, me, &a, &b, "short reduction dest");
        }
        println!("PE {me}: short destinations refused");
    }
    leave(on);
    finish(shmem);
}

fn collect_short_dest(args: &[String]) {
    let nel: usize = arg(args, 0, 4);
    let short_first = args.get(1).is_some_and(|a| a == "first");
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check(n >= 2, "collect-short-dest needs at least 2 PEs");
    let on = join(&shmem, "world").expect("world");
    // `last`: every PE gives `nel` and the last PE's destination lacks room for its own.
    // `first`: PE 0 gives 1 element, the others `nel`, and PE 0's destination lacks room for
    // the last PE's.
    let short_pe = if short_first { 0 } else { n - 1 };
    let counts: Vec<usize> = (0..n).map(|j| if short_first && j == 0 { 1 } else { nel }).collect();
    let total: usize = counts.iter().sum();
    let a = shmem.alloc_slice(nel.max(1), me as u64).or_die("alloc");
    let b = shmem.alloc_slice(total + 1, 0u64).or_die("alloc");
    let short = shmem.alloc_slice(total - nel, 0u64).or_die("alloc");
    // Right after `short` in the heap: nothing may write it.
    let guard = shmem.alloc_slice(nel.max(1), 0xA5A5u64).or_die("alloc");
    let r = on.team.collect(if me == short_pe { &short } else { &b }, &a, counts[me]);
    let label = format!("collect with counts {counts:?} into a short destination on PE {short_pe}");
    if me == short_pe {
        let e = expect_err(&label, r, &["size mismatch"]);
        check(
            matches!(e.kind, ErrorKind::SizeMismatch { .. }),
            format!("{label}: expected SizeMismatch, got {:?}", e.kind),
        );
    } else {
        collective_mismatch(&label, r);
    }
    shmem.barrier_all().or_die("barrier");
    check_slice(
        format!("{label}: the object after the short destination"),
        &vec![0xA5A5u64; guard.len()],
        &guard.to_vec(),
    );
    still_works(&on, me, &a, &b, "short collect dest");
    println!("PE {me}: short collect destination refused");
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// deprecated active-set routines

/// Copies `v` into the start of `s` as raw bytes (the active-set forms take untyped buffers).
fn fill_raw<T: Pod>(s: &SymSlice<u64>, v: &[T]) {
    let bytes = bytemuck::cast_slice::<T, u8>(v);
    check(bytes.len() <= s.len() * 8, "buffer too small");
    // SAFETY: bounded above; no other PE writes `s` outside a collective.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), s.as_ptr().cast(), bytes.len()) };
}

/// The first `len` elements of `s` read as `T`.
fn read_raw<T: Pod>(s: &SymSlice<u64>, len: usize) -> Vec<T> {
    check(len * size_of::<T>() <= s.len() * 8, "buffer too small");
    let mut v = vec![T::zeroed(); len];
    // SAFETY: bounded above; T is Pod.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<u8>(), v.as_mut_ptr().cast::<u8>(), len * size_of::<T>())
    };
    v
}

/// One active set: `(PE_start, logPE_stride, PE_size)` and its members.
struct Set {
    start: i32,
    log: i32,
    size: i32,
    members: Vec<usize>,
    me: usize,
}

#[allow(clippy::too_many_arguments)]
fn as_bcast<T: Elem>(
    s: &Set,
    me: usize,
    src: &SymSlice<u64>,
    dst: &SymSlice<u64>,
    psync: *mut i64,
    nel: usize,
    root: usize,
    tag: u64,
) {
    let what = format!("shmem_broadcast{} of {nel} from set member {root}", 8 * size_of::<T>());
    fill_raw::<T>(src, &(0..nel).map(|k| val(tag, me, root, k)).collect::<Vec<_>>());
    let before: Vec<T> = (0..=nel).map(|k| pat(me, k)).collect();
    fill_raw(dst, &before);
    // SAFETY: both buffers are symmetric and hold nel + 1 elements of T.
    unsafe {
        active_set::broadcast(
            dst.as_ptr().cast(),
            src.as_ptr().cast(),
            nel,
            size_of::<T>(),
            root as i32,
            s.start,
            s.log,
            s.size,
            psync,
        )
    }
    .or_die(&what);
    let got = read_raw::<T>(dst, nel + 1);
    if s.me == root {
        check_slice(format!("{what}: the root's dest is not written"), &before, &got);
    } else {
        let mut expect: Vec<T> = (0..nel).map(|k| val(tag, s.members[root], root, k)).collect();
        expect.push(pat(me, nel));
        check_slice(&what, &expect, &got);
    }
}

#[allow(clippy::too_many_arguments)]
fn as_collect<T: Elem>(
    s: &Set,
    me: usize,
    src: &SymSlice<u64>,
    dst: &SymSlice<u64>,
    psync: *mut i64,
    counts: &[usize],
    fixed: bool,
    tag: u64,
) {
    let nel = counts[s.me];
    let what = format!("shmem_{}collect{} with counts {counts:?}", if fixed { "f" } else { "" }, 8 * size_of::<T>());
    let tot: usize = counts.iter().sum();
    fill_raw::<T>(src, &(0..nel).map(|k| val(tag, me, 0, k)).collect::<Vec<_>>());
    fill_raw::<T>(dst, &(0..=tot).map(|k| pat(me, k)).collect::<Vec<_>>());
    // SAFETY: src holds nel elements, dst the set's total plus one.
    unsafe {
        active_set::collect(
            dst.as_ptr().cast(),
            src.as_ptr().cast(),
            nel,
            size_of::<T>(),
            fixed,
            s.start,
            s.log,
            s.size,
            psync,
        )
    }
    .or_die(&what);
    let mut expect: Vec<T> = Vec::new();
    for (j, &w) in s.members.iter().enumerate() {
        expect.extend((0..counts[j]).map(|k| val::<T>(tag, w, 0, k)));
    }
    expect.push(pat(me, tot));
    check_slice(&what, &expect, &read_raw::<T>(dst, tot + 1));
}

#[allow(clippy::too_many_arguments)]
fn as_alltoalls<T: Elem>(
    s: &Set,
    me: usize,
    src: &SymSlice<u64>,
    dst: &SymSlice<u64>,
    psync: *mut i64,
    nel: usize,
    ds: usize,
    ss: usize,
    tag: u64,
) {
    let tn = s.members.len();
    let what = format!("shmem_alltoalls{} of {nel} per pair, strides {ds}/{ss}", 8 * size_of::<T>());
    let extent = |st: usize| (tn * nel - 1) * st + 1;
    let mut v: Vec<T> = (0..extent(ss)).map(|k| pat(me + 5, k)).collect();
    for j in 0..tn {
        for k in 0..nel {
            v[(j * nel + k) * ss] = val(tag, me, j, k);
        }
    }
    fill_raw(src, &v);
    let dext = extent(ds);
    fill_raw::<T>(dst, &(0..=dext).map(|k| pat(me, k)).collect::<Vec<_>>());
    // SAFETY: both buffers hold the strided blocks of every member.
    unsafe {
        active_set::alltoalls(
            dst.as_ptr().cast(),
            src.as_ptr().cast(),
            ds as isize,
            ss as isize,
            nel,
            size_of::<T>(),
            s.start,
            s.log,
            s.size,
            psync,
        )
    }
    .or_die(&what);
    let mut expect: Vec<T> = (0..=dext).map(|k| pat(me, k)).collect();
    for (i, &w) in s.members.iter().enumerate() {
        for k in 0..nel {
            expect[(i * nel + k) * ds] = val(tag, w, s.me, k);
        }
    }
    check_slice(&what, &expect, &read_raw::<T>(dst, dext + 1));
}

fn as_to_all<T: Model>(
    s: &Set,
    me: usize,
    src: &SymSlice<u64>,
    dst: &SymSlice<u64>,
    pwrk: &SymSlice<u64>,
    psync: *mut i64,
    count: usize,
) {
    for &op in T::OPS {
        let what = format!("shmem_{}_{op:?}_to_all of {count}", type_name::<T>());
        let mine: Vec<T> = (0..count).map(|k| T::make(op, me, k)).collect();
        fill_raw(src, &mine);
        let inplace = count % 2 == 1;
        let d = if inplace { src } else { dst };
        // SAFETY: the buffers hold count elements of T and are 8-byte aligned.
        unsafe {
            active_set::to_all::<T>(
                op,
                d.as_ptr().cast(),
                src.as_ptr().cast(),
                count,
                s.start,
                s.log,
                s.size,
                pwrk.as_ptr().cast(),
                psync,
            )
        }
        .or_die(&what);
        let expect: Vec<T> = (0..count).map(|k| expected(op, &s.members, k)).collect();
        check_slice(&what, &expect, &read_raw::<T>(d, count));
    }
}

fn active(args: &[String]) {
    let start: i32 = arg(args, 0, 0);
    let log: i32 = arg(args, 1, 0);
    let size: i32 = arg(args, 2, 1);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let stride = 1usize << log;
    let members: Vec<usize> = (0..size as usize).map(|i| start as usize + i * stride).collect();
    check(members.last().is_some_and(|&l| l < n), format!("the active set {start}/{log}/{size} does not fit {n} PEs"));
    let set = Set { start, log, size, me: members.iter().position(|&w| w == me).unwrap_or(usize::MAX), members };
    let world = Set { start: 0, log: 0, size: n as i32, members: (0..n).collect(), me };
    // SHMEM_REDUCE_SYNC_SIZE-ish, initialized to SHMEM_SYNC_VALUE (0); never re-initialized.
    let psync = shmem.alloc_slice(64, 0i64).or_die("alloc pSync");
    let ps = psync.as_ptr();
    const WORDS: usize = 80_000;
    let src = shmem.alloc_slice(WORDS, 0u64).or_die("alloc");
    let dst = shmem.alloc_slice(n * WORDS / 2 + 8, 0u64).or_die("alloc");
    let pwrk = shmem.alloc_slice(WORDS, 0u64).or_die("alloc pWrk");
    if set.me != usize::MAX {
        let s = &set;
        let sn = s.members.len();
        // Everything back to back on one pSync, with no barrier between calls.
        // SAFETY: pSync is a symmetric array of 64 longs.
        unsafe { active_set::barrier(start, log, size, ps) }.or_die("shmem_barrier");
        // SAFETY: as above.
        unsafe { active_set::sync(start, log, size, ps) }.or_die("shmem_sync");
        for nel in [1, 7, 1000, 20_000] {
            for root in 0..sn {
                as_bcast::<u64>(s, me, &src, &dst, ps, nel, root, 1);
                as_bcast::<u32>(s, me, &src, &dst, ps, nel, root, 2);
            }
        }
        // An overlapping set (the world) in between, on the same pSync.
        // SAFETY: as above.
        unsafe { active_set::barrier(0, 0, n as i32, ps) }.or_die("shmem_barrier on the world");
        as_to_all::<i64>(&world, me, &src, &dst, &pwrk, ps, 3);
        for r in 0..3 {
            let counts: Vec<usize> = (0..sn).map(|j| [0, 3, 9000 + j, 17][(j + r) % 4]).collect();
            as_collect::<u64>(s, me, &src, &dst, ps, &counts, false, 3 + r as u64);
            as_collect::<u32>(s, me, &src, &dst, ps, &counts, false, 6 + r as u64);
        }
        for nel in [1, 9000] {
            as_collect::<u64>(s, me, &src, &dst, ps, &vec![nel; sn], true, 9);
            as_collect::<u32>(s, me, &src, &dst, ps, &vec![nel; sn], true, 10);
        }
        for nel in [1, 5, 4500 / sn] {
            for (ds, ss) in [(1, 1), (2, 3)] {
                as_alltoalls::<u64>(s, me, &src, &dst, ps, nel, ds, ss, 11);
                as_alltoalls::<u32>(s, me, &src, &dst, ps, nel, ds, ss, 12);
            }
        }
        for count in [1, 6000] {
            as_to_all::<i32>(s, me, &src, &dst, &pwrk, ps, count);
            as_to_all::<i64>(s, me, &src, &dst, &pwrk, ps, count + 1);
            as_to_all::<i16>(s, me, &src, &dst, &pwrk, ps, count);
            as_to_all::<f32>(s, me, &src, &dst, &pwrk, ps, count);
            as_to_all::<f64>(s, me, &src, &dst, &pwrk, ps, count + 1);
            as_to_all::<Complex<f64>>(s, me, &src, &dst, &pwrk, ps, count);
            as_to_all::<Complex<f32>>(s, me, &src, &dst, &pwrk, ps, count + 1);
        }
        // SAFETY: as above.
        unsafe { active_set::barrier(start, log, size, ps) }.or_die("final shmem_barrier");
        check(psync.to_vec().iter().all(|&v| v == 0), "pSync is back at SHMEM_SYNC_VALUE");
        println!("PE {me}: active set ok");
    } else {
        let e = expect_err(
            "shmem_barrier outside the set",
            // SAFETY: as above.
            unsafe { active_set::barrier(start, log, size, ps) },
            &["this PE is not in the active set"],
        );
        check(matches!(e.kind, ErrorKind::InvalidArgument(_)), format!("expected InvalidArgument, got {:?}", e.kind));
        expect_err(
            "shmem_long_sum_to_all outside the set",
            // SAFETY: as above.
            unsafe {
                active_set::to_all::<i64>(
                    ReduceOp::Sum,
                    dst.as_ptr().cast(),
                    src.as_ptr().cast(),
                    1,
                    start,
                    log,
                    size,
                    pwrk.as_ptr().cast(),
                    ps,
                )
            },
            &["this PE is not in the active set"],
        );
        // The world set still includes this PE, in the same sequence as the members.
        // SAFETY: as above.
        unsafe { active_set::barrier(0, 0, n as i32, ps) }.or_die("shmem_barrier on the world");
        as_to_all::<i64>(&world, me, &src, &dst, &pwrk, ps, 3);
        println!("PE {me}: not in the active set: refused");
    }
    finish(shmem);
}

// ---------------------------------------------------------------------------------------------
// Zero-length collectives with NULL buffers.

fn zero_null(args: &[String]) {
    use oxshmem::coll::api::raw as craw;
    let spec = args.first().map_or("world", String::as_str);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let on = join(&shmem, spec);
    let null = std::ptr::null_mut::<u8>();
    let on_stack = [0u8; 8];
    let stack = on_stack.as_ptr().cast_mut();
    let src = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let dst = shmem.alloc_slice(n, 0u64).or_die("alloc");
    let psync = shmem.alloc_slice(64, 0i64).or_die("alloc pSync");
    let pwrk = shmem.alloc_slice(64, 0i64).or_die("alloc pWrk");
    let ps = psync.as_ptr();
    // A real collective on the team, checked: the streams are in step before and after.
    let real = |on: &On, round: u64| {
        src.write(0, round * 1000 + me as u64);
        dst.fill(u64::MAX);
        on.team.fcollect(&dst, &src, 1).or_die(format!("fcollect round {round}"));
        let expect: Vec<u64> = on.members.iter().map(|&w| round * 1000 + w as u64).collect();
        check_slice(format!("fcollect round {round}"), &expect, &dst.to_vec()[..on.n()]);
    };
    if let Some(on) = &on {
        let t = &on.team;
        real(on, 1);
        for (label, p) in [("NULL", null), ("a stack address", stack)] {
            for root in 0..on.n() as i32 {
                // SAFETY: zero bytes: neither address is read or written.
                unsafe { craw::broadcast(t, p, p, 0, root, 1) }.or_die(format!("broadcastmem of 0 bytes, {label}"));
            }
            // SAFETY: as above.
            let got = unsafe { craw::collect(t, p, p, 0, true, 4) }.or_die(format!("fcollect of 0, {label}"));
            check_eq(format!("fcollect of 0, {label}: bytes"), 0, got);
            // SAFETY: as above.
            let got = unsafe { craw::collect(t, p, p, 0, false, 8) }.or_die(format!("collect of 0, {label}"));
            check_eq(format!("collect of 0, {label}: bytes"), 0, got);
            for (ds, ss) in [(1, 1), (3, 2)] {
                // SAFETY: as above.
                unsafe { craw::alltoalls(t, p, p, ds, ss, 0, 8) }
                    .or_die(format!("alltoalls({ds}, {ss}) of 0, {label}"));
            }
            // SAFETY: as above.
            unsafe { craw::reduce::<i64>(t, ReduceOp::Sum, p.cast(), p.cast(), 0) }
                .or_die(format!("sum_reduce of 0, {label}"));
            // SAFETY: as above.
            unsafe { craw::reduce::<f64>(t, ReduceOp::Max, p.cast(), p.cast(), 0) }
                .or_die(format!("max_reduce of 0, {label}"));
        }
        real(on, 2);
        // collect where only the last member contributes: the others pass a NULL source.
        let last = on.n() - 1;
        src.write(0, 77);
        dst.fill(u64::MAX);
        let (s, len) = if on.me == last { (src.as_ptr().cast::<u8>(), 8) } else { (null, 0) };
        // SAFETY: src holds 8 bytes on the last member; nothing is read elsewhere.
        let got =
            unsafe { craw::collect(t, dst.as_ptr().cast(), s, len, false, 8) }.or_die("collect with NULL sources");
        check_eq("collect with NULL sources: bytes", 8, got);
        check_eq("collect with NULL sources: the one element", 77, dst.read(0));
        if n > 1 {
            check_eq("collect with NULL sources: the next element untouched", u64::MAX, dst.read(1));
        }
        // ... and a member that contributes nothing still needs a destination for the others'.
        if on.n() > 1 {
            let d = if on.me == 0 { null } else { dst.as_ptr().cast() };
            // SAFETY: as above; PE 0's NULL destination is refused, never written.
            let r = unsafe { craw::collect(t, d, s, len, false, 8) };
            if on.me == 0 {
                expect_err("collect of 0 into NULL while the team contributes 8 bytes", r, &["dest", "not symmetric"]);
            } else {
                check_eq("collect while member 0 has no destination: bytes", 8, r.or_die("collect"));
            }
        }
        real(on, 3);
    }
    // The deprecated active-set forms, on the world.
    let (start, log, size) = (0, 0, n as i32);
    for (label, p) in [("NULL", null), ("a stack address", stack)] {
        for root in 0..n as i32 {
            for es in [4, 8] {
                // SAFETY: zero elements: neither address is read or written; pSync is symmetric.
                unsafe { active_set::broadcast(p, p, 0, es, root, start, log, size, ps) }
                    .or_die(format!("shmem_broadcast{} of 0, {label}", es * 8));
            }
        }
        for es in [4, 8] {
            for fixed in [true, false] {
                // SAFETY: as above.
                unsafe { active_set::collect(p, p, 0, es, fixed, start, log, size, ps) }.or_die(format!(
                    "shmem_{}collect{} of 0, {label}",
                    if fixed { "f" } else { "" },
                    es * 8
                ));
            }
            for (ds, ss) in [(1, 1), (2, 3)] {
                // SAFETY: as above.
                unsafe { active_set::alltoalls(p, p, ds, ss, 0, es, start, log, size, ps) }
                    .or_die(format!("shmem_alltoalls{} of 0, {label}", es * 8));
            }
        }
        // SAFETY: as above; pWrk is symmetric.
        unsafe { active_set::to_all::<i64>(ReduceOp::Sum, p.cast(), p.cast(), 0, start, log, size, pwrk.as_ptr(), ps) }
            .or_die(format!("shmem_long_sum_to_all of 0, {label}"));
        // SAFETY: as above.
        unsafe {
            active_set::to_all::<f64>(ReduceOp::Min, p.cast(), p.cast(), 0, start, log, size, pwrk.as_ptr().cast(), ps)
        }
        .or_die(format!("shmem_double_min_to_all of 0, {label}"));
    }
    let world = On { team: shmem.team_world(), members: (0..n).collect(), me, split: false };
    real(&world, 4);
    leave(on);
    println!("PE {me}: zero-length collectives with NULL buffers ok");
    finish(shmem);
}
