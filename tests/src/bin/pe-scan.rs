//! PE program for the prefix sums (`Team::sum_inscan`, `Team::sum_exscan`; OpenSHMEM 1.6
//! `shmem_sum_inscan`/`_exscan`): `pe-scan <case> TEAM`.
//!
//! TEAM is `world`, or `START:STRIDE:SIZE` for a team split from the world (PEs outside it only
//! take part in the split and the final barrier). Every value a member contributes is a
//! function of its world PE number and the element index, so each member computes its own
//! expected prefix from the world PE numbers of the members before it.
//!
//! Cases:
//! - `scan TEAM`: inclusive and exclusive scans of `u64` and `i32` (wrapping sums of large
//!   values), `f64` (exact quarters) and `Complex<f64>`, of 0, 1, 7, 1000 and 100 000 elements
//!   (the small path in the checked exchange, and the pipelined chain of many chunks), into
//!   another buffer and in place; nothing past `nelems` is written.
//! - `mismatch TEAM`: an exclusive scan on member 0 against inclusive ones, then counts that
//!   differ: every member gets `CollectiveMismatch`; a correct scan afterwards works.
//! - `raw TEAM`: the pointer form (`coll::scan::raw::sum_scan`, what the C ABI calls) on
//!   `raw::malloc` memory; then the last member passes a destination that is not symmetric:
//!   it gets `NotSymmetric`, the others `CollectiveMismatch`.

use std::fmt::Debug;

use oxshmem::{ArithReducible, Complex, Shmem, SymSlice, Team, TeamConfig};
use oxshmem_tests::pe::{OrDie, check, check_eq, dispatch, expect_err, fail, finish, init};

fn main() {
    dispatch("pe-scan", &[("scan", scan), ("mismatch", mismatch), ("raw", raw_form)]);
}

/// This PE's view of the team a case runs on.
struct On {
    team: Team,
    /// World PE of each member.
    members: Vec<usize>,
    /// This PE's number in the team.
    me: usize,
    split: bool,
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

/// A type the scans are checked with: a value per (world PE, index), and its sum.
trait Val: ArithReducible + PartialEq + Debug {
    fn val(w: usize, k: usize) -> Self;
    fn add(self, o: Self) -> Self;
    fn zero() -> Self;
    /// What a destination holds where nothing may be written.
    fn pat(k: usize) -> Self;
}

fn mix(w: usize, k: usize) -> u64 {
    let x = ((w as u64) << 40) ^ k as u64 ^ 0x5EED;
    x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (x >> 13)
}

impl Val for u64 {
    fn val(w: usize, k: usize) -> Self {
        mix(w, k)
    }
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn zero() -> Self {
        0
    }
    fn pat(k: usize) -> Self {
        !(k as u64)
    }
}

impl Val for i32 {
    fn val(w: usize, k: usize) -> Self {
        mix(w, k) as i32
    }
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn zero() -> Self {
        0
    }
    fn pat(k: usize) -> Self {
        -(k as i32) - 7
    }
}

impl Val for f64 {
    fn val(w: usize, k: usize) -> Self {
        (mix(w, k) % 4000) as f64 / 4.0
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn zero() -> Self {
        0.0
    }
    fn pat(k: usize) -> Self {
        -(k as f64) - 0.5
    }
}

impl Val for Complex<f64> {
    fn val(w: usize, k: usize) -> Self {
        Complex { re: (mix(w, k) % 100) as f64, im: (mix(k, w) % 100) as f64 - 50.0 }
    }
    fn add(self, o: Self) -> Self {
        Complex { re: self.re + o.re, im: self.im + o.im }
    }
    fn zero() -> Self {
        Complex { re: 0.0, im: 0.0 }
    }
    fn pat(k: usize) -> Self {
        Complex { re: -1.0, im: k as f64 }
    }
}

const SIZES: [usize; 5] = [0, 1, 7, 1000, 100_000];

/// Every size, inclusive and exclusive, separate and in place, for `T`.
/// Collective over the world (the allocations); only members of `on` scan.
fn scan_type<T: Val>(shmem: &Shmem, on: Option<&On>, name: &str) {
    let max = SIZES[SIZES.len() - 1] + 3;
    let src = shmem.alloc_slice(max, T::zero()).or_die("alloc src");
    let dst = shmem.alloc_slice(max, T::zero()).or_die("alloc dst");
    for &n in SIZES.iter().filter(|_| on.is_some()) {
        let on = on.expect("a member");
        for exclusive in [false, true] {
            for in_place in [false, true] {
                let what = format!(
                    "{name} {} of {n}{}",
                    if exclusive { "exscan" } else { "inscan" },
                    if in_place { " in place" } else { "" }
                );
                let mine: Vec<T> =
                    (0..max).map(|k| if k < n { T::val(on.members[on.me], k) } else { T::pat(k) }).collect();
                src.copy_from_slice(&mine);
                let out = if in_place { &src } else { &dst };
                if !in_place {
                    dst.copy_from_slice(&(0..max).map(T::pat).collect::<Vec<T>>());
                }
                let r = if exclusive { on.team.sum_exscan(out, &src, n) } else { on.team.sum_inscan(out, &src, n) };
                r.or_die(&what);
                let upto = if exclusive { on.me } else { on.me + 1 };
                let got = out.to_vec();
                let mut bad = 0;
                for (k, g) in got.iter().enumerate() {
                    let want = if k < n {
                        on.members[..upto].iter().fold(T::zero(), |acc, &w| acc.add(T::val(w, k)))
                    } else if in_place {
                        mine[k]
                    } else {
                        T::pat(k)
                    };
                    if *g != want {
                        if bad < 3 {
                            eprintln!("PE {}: {what}: [{k}] expected {want:?} got {g:?}", shmem.my_pe());
                        }
                        bad += 1;
                    }
                }
                check_eq(format!("{what}: elements wrong"), 0, bad);
                // The next scan overwrites our source and destination: nobody may still read
                // them (in this algorithm nobody does; the program's contract says so anyway).
                on.team.sync().or_die("team sync");
            }
        }
    }
    src.free().or_die("free");
    dst.free().or_die("free");
}

fn scan(args: &[String]) {
    let shmem = init();
    let spec = args.first().map_or("world", String::as_str);
    let on = join(&shmem, spec);
    scan_type::<u64>(&shmem, on.as_ref(), "u64");
    scan_type::<i32>(&shmem, on.as_ref(), "i32");
    scan_type::<f64>(&shmem, on.as_ref(), "f64");
    scan_type::<Complex<f64>>(&shmem, on.as_ref(), "Complex<f64>");
    if on.is_some() {
        println!("PE {}: scan ok", shmem.my_pe());
    }
    leave(on);
    finish(shmem);
}

fn mismatch(args: &[String]) {
    let shmem = init();
    let spec = args.first().map_or("world", String::as_str);
    let on = join(&shmem, spec);
    let src: SymSlice<u64> = shmem.alloc_slice(64, 0).or_die("alloc");
    let dst: SymSlice<u64> = shmem.alloc_slice(64, 0).or_die("alloc");
    if let Some(on) = &on {
        src.fill(on.me as u64);
        if on.members.len() > 1 {
            let r = if on.me == 0 { on.team.sum_exscan(&dst, &src, 8) } else { on.team.sum_inscan(&dst, &src, 8) };
            expect_err("kind", r, &["differ between PEs", "scan of 64 bytes"]);
            let r = on.team.sum_inscan(&dst, &src, 8 + on.me % 2);
            expect_err("count", r, &["differ between PEs", "inclusive scan of"]);
        }
        on.team.sum_inscan(&dst, &src, 64).or_die("a scan after the failed ones");
        let want: u64 = (0..=on.me as u64).sum();
        check(dst.to_vec().iter().all(|&x| x == want), "a scan after the failed ones");
        println!("PE {}: mismatch ok", shmem.my_pe());
    }
    src.free().or_die("free");
    dst.free().or_die("free");
    leave(on);
    finish(shmem);
}

fn raw_form(args: &[String]) {
    use oxshmem::coll::scan::raw::sum_scan;
    let shmem = init();
    let spec = args.first().map_or("world", String::as_str);
    let on = join(&shmem, spec);
    let src = oxshmem::raw::malloc(16 * 8).or_die("raw malloc").cast::<i64>();
    let dst = oxshmem::raw::malloc(16 * 8).or_die("raw malloc").cast::<i64>();
    if let Some(on) = &on {
        let last = on.me + 1 == on.members.len();
        for k in 0..16 {
            // SAFETY: src holds 16 i64.
            unsafe { src.add(k).write(on.members[on.me] as i64 * 100 + k as i64) };
        }
        // SAFETY: both hold 16 elements.
        unsafe { sum_scan(&on.team, dst, src, 16, false) }.or_die("raw inclusive scan");
        for k in 0..16 {
            let want: i64 = on.members[..=on.me].iter().map(|&w| w as i64 * 100 + k as i64).sum();
            // SAFETY: dst holds 16 i64.
            check_eq(format!("raw inclusive scan [{k}]"), want, unsafe { dst.add(k).read() });
        }
        let mut local = [0i64; 16];
        let d = if last { local.as_mut_ptr() } else { dst };
        // SAFETY: both hold 16 elements (the last member's is not symmetric, which is checked).
        let r = unsafe { sum_scan(&on.team, d, src, 16, true) };
        if last {
            expect_err("raw", r, &["not symmetric"]);
        } else {
            expect_err("raw", r, &["rejected its arguments", "exclusive scan"]);
        }
        println!("PE {}: raw ok", shmem.my_pe());
    }
    leave(on);
    // SAFETY: both came from raw::malloc and are not used again.
    unsafe {
        oxshmem::raw::free(dst.cast()).or_die("raw free");
        oxshmem::raw::free(src.cast()).or_die("raw free");
    }
    finish(shmem);
}
