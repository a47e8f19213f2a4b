//! PE program for teams (OpenSHMEM 1.5 §9.4): `pe-team <case> [args]`.
//!
//! Every case computes the membership it expects from the split arguments alone and checks
//! the runtime's answer against it: membership, team-relative numbers, `translate_pe` in both
//! directions, and that the new team carries collectives (a sum of world PE numbers).
//!
//! Cases:
//! - `props`: `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED` (one host: both are every PE);
//!   translation between them; neither can be destroyed.
//! - `strided`: `split_strided` of the world with stride 1, 2 and 3, start > 0, odd sizes and
//!   single-PE teams, each checked and destroyed.
//! - `nested`: a split of a split of a split; numbering is relative to the parent.
//! - `split-2d XRANGE`: `split_2d` of the world and of a stride-2 team, with configs.
//! - `config`: `get_config().num_contexts` of split teams.
//! - `recycle ROUNDS`: creates and destroys teams one at a time and in batches of 24 live
//!   teams, using each one, many more times than there are team slots.
//! - `destroyed`: every operation on a handle of a destroyed team is an error.
//! - `mismatch`: split arguments that differ between PEs give every PE `CollectiveMismatch`.
//! - `too-big`: splits that do not fit the parent give every PE an error.
//! - `too-many`: live teams until the slots run out: a clear error on every PE.
//! - `negative`: `split_strided_signed` with negative strides (OpenSHMEM 1.6; Sandia OpenSHMEM
//!   accepts them): team PE `i` is parent PE `start + i*stride`, so the team runs in reverse
//!   parent order; membership, numbering, `translate_pe`, a broadcast, an fcollect (whose
//!   order shows the team order) and a reduction; splits of a reversed team, with positive and
//!   negative strides, keep numbering relative to it; negative strides that leave the parent
//!   are refused on every PE.
//! - `config-mask`: only the options whose bit is in `config_mask` apply: a config of 3
//!   contexts with mask 0 gives the default (0), with `SHMEM_TEAM_NUM_CONTEXTS` gives 3.

use std::fmt::Debug;

use oxshmem::{ErrorKind, Shmem, Team, TeamConfig};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, dispatch, expect_err, finish, init};

fn main() {
    dispatch(
        "pe-team",
        &[
            ("props", props),
            ("strided", strided),
            ("nested", nested),
            ("split-2d", split_2d),
            ("config", config),
            ("recycle", recycle),
            ("destroyed", destroyed),
            ("mismatch", mismatch),
            ("too-big", too_big),
            ("too-many", too_many),
            ("negative", negative),
            ("config-mask", config_mask),
        ],
    );
}

fn cfg(num_contexts: i32) -> TeamConfig {
    TeamConfig { num_contexts }
}

/// The parent indices `start + i*stride` mapped through `parent` (world PEs of the parent's
/// members): the world PEs of the child team, in team order.
fn strided_members(parent: &[usize], start: usize, stride: usize, size: usize) -> Vec<usize> {
    (0..size).map(|i| parent[start + i * stride]).collect()
}

/// Checks everything a member can ask of `team`, whose world members should be `members`,
/// against `parent` (with world members `parent_members`); then sums the world PE numbers over
/// the team as a smoke test of its collectives.
fn check_team(
    shmem: &Shmem,
    what: &str,
    team: &Team,
    members: &[usize],
    parent: &Team,
    parent_members: &[usize],
    sum: &oxshmem::SymSlice<u64>,
) {
    let me = shmem.my_pe();
    let world = shmem.team_world();
    let idx = members
        .iter()
        .position(|&w| w == me)
        .unwrap_or_else(|| oxshmem_tests::pe::fail(format!("{what}: PE {me} got a team handle but is not a member")));
    check_eq(format!("{what}: shmem_team_n_pes"), members.len(), team.n_pes().or_die("shmem_team_n_pes"));
    check_eq(format!("{what}: shmem_team_my_pe"), idx, team.my_pe().or_die("shmem_team_my_pe"));
    check_eq(format!("{what}: members"), members.to_vec(), team.members().or_die("members"));
    for (i, &w) in members.iter().enumerate() {
        check_eq(
            format!("{what}: translate_pe({i}) to the world"),
            Some(w),
            team.translate_pe(i, &world).or_die("shmem_team_translate_pe"),
        );
        let in_parent = parent_members.iter().position(|&p| p == w);
        check_eq(
            format!("{what}: translate_pe({i}) to the parent"),
            in_parent,
            team.translate_pe(i, parent).or_die("shmem_team_translate_pe"),
        );
    }
    for w in 0..shmem.n_pes() {
        check_eq(
            format!("{what}: translate_pe of world PE {w} into the team"),
            members.iter().position(|&m| m == w),
            world.translate_pe(w, team).or_die("shmem_team_translate_pe"),
        );
    }
    for (j, &w) in parent_members.iter().enumerate() {
        check_eq(
            format!("{what}: translate_pe of parent PE {j} (world {w}) into the team"),
            members.iter().position(|&m| m == w),
            parent.translate_pe(j, team).or_die("shmem_team_translate_pe"),
        );
    }
    let e = expect_err(
        &format!("{what}: translate_pe past the team"),
        team.translate_pe(members.len(), &world),
        &[&format!("PE {} is out of range (0..{})", members.len(), members.len())],
    );
    check(
        matches!(e.kind, ErrorKind::PeOutOfRange { .. }),
        format!("{what}: translate_pe past the team: expected PeOutOfRange, got {:?}", e.kind),
    );
    team.sync().or_die(format!("{what}: shmem_team_sync"));
    sum.write(0, me as u64);
    team.sum_reduce(sum, sum, 1).or_die(format!("{what}: sum_reduce"));
    check_eq(
        format!("{what}: sum of world PE numbers over the team"),
        members.iter().map(|&w| w as u64).sum::<u64>(),
        sum.read(0),
    );
}

fn props(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let shared = shmem.team_shared();
    let all: Vec<usize> = (0..n).collect();
    check_eq("SHMEM_TEAM_WORLD n_pes", n, world.n_pes().or_die("shmem_team_n_pes"));
    check_eq("SHMEM_TEAM_WORLD my_pe", me, world.my_pe().or_die("shmem_team_my_pe"));
    check_eq("SHMEM_TEAM_WORLD members", all.clone(), world.members().or_die("members"));
    check_eq("SHMEM_TEAM_WORLD num_contexts", 0, world.get_config().or_die("get_config").num_contexts);
    let local = shmem.layout().or_die("layout").local_pes;
    check_eq("local PEs (one host)", all.clone(), local.clone());
    check_eq("SHMEM_TEAM_SHARED members", local.clone(), shared.members().or_die("members"));
    check_eq("SHMEM_TEAM_SHARED n_pes", local.len(), shared.n_pes().or_die("shmem_team_n_pes"));
    check_eq(
        "SHMEM_TEAM_SHARED my_pe",
        local.iter().position(|&p| p == me).expect("me is local"),
        shared.my_pe().or_die("shmem_team_my_pe"),
    );
    for p in 0..n {
        check_eq(
            format!("translate world PE {p} to SHMEM_TEAM_SHARED"),
            Some(p),
            world.translate_pe(p, &shared).or_die("translate_pe"),
        );
        check_eq(
            format!("translate shared PE {p} to SHMEM_TEAM_WORLD"),
            Some(p),
            shared.translate_pe(p, &world).or_die("translate_pe"),
        );
    }
    expect_err("translate world PE n", world.translate_pe(n, &shared), &[&format!("PE {n} is out of range (0..{n})")]);
    expect_err("destroy SHMEM_TEAM_WORLD", world.clone().destroy(), &["SHMEM_TEAM_WORLD cannot be destroyed"]);
    expect_err("destroy SHMEM_TEAM_SHARED", shared.clone().destroy(), &["SHMEM_TEAM_SHARED cannot be destroyed"]);
    // Both still work.
    world.sync().or_die("sync on the world after a refused destroy");
    shared.sync().or_die("sync on the shared team after a refused destroy");
    let s = shmem.alloc_slice(1, 1u32).or_die("alloc");
    shared.sum_reduce(&s, &s, 1).or_die("sum_reduce on SHMEM_TEAM_SHARED");
    check_eq("sum of ones over SHMEM_TEAM_SHARED", n as u32, s.read(0));
    println!("PE {me}: world and shared ok");
    finish(shmem);
}

/// The (start, stride, size) triples `strided` runs on `n` PEs: each fits the world.
fn strided_specs(n: usize) -> Vec<(usize, usize, usize)> {
    let mut v = vec![(0, 1, n), (n - 1, 1, 1), (0, 1, 1)];
    if n >= 2 {
        v.extend([(1, 1, n - 1), (0, 2, n.div_ceil(2)), (1, 2, n / 2), (0, n - 1, 2)]);
    }
    if n >= 3 {
        v.extend([(0, 3, n.div_ceil(3)), (2, 3, (n - 2).div_ceil(3)), (n - 3, 1, 3)]);
    }
    if n >= 5 {
        v.extend([(1, 3, (n - 1).div_ceil(3)), (1, 2, 3)]);
    }
    v.dedup();
    v
}

fn strided(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let all: Vec<usize> = (0..n).collect();
    let sum = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let specs = strided_specs(n);
    for &(start, stride, size) in &specs {
        let what = format!("split_strided(start {start}, stride {stride}, size {size})");
        let members = strided_members(&all, start, stride, size);
        let t = world.split_strided(start, stride, size, TeamConfig::default()).or_die(&what);
        check_eq(format!("{what}: whether this PE got a team"), members.contains(&me), t.is_some());
        if let Some(t) = t {
            check_team(&shmem, &what, &t, &members, &world, &all, &sum);
            t.destroy().or_die(format!("{what}: destroy"));
        }
    }
    println!("PE {me}: {} strided splits ok", specs.len());
    finish(shmem);
}

fn nested(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let sum = shmem.alloc_slice(1, 0u64).or_die("alloc");
    // Each level splits the previous one with arguments relative to it.
    let chain: Vec<(usize, usize, usize)> = if n >= 3 {
        let a = n - 1; // world PEs 1..n
        let b = (a - 1).div_ceil(2); // parent indices 1, 3, 5, ...
        vec![(1, 1, a), (1, 2, b), (0, 2, b.div_ceil(2)), (0, 1, 1)]
    } else {
        vec![(n - 1, 1, 1), (0, 1, 1), (0, 1, 1)]
    };
    // The teams this PE is in, outermost first (the world is level 0).
    let mut levels: Vec<(Team, Vec<usize>)> = vec![(world.clone(), (0..n).collect())];
    for (depth, &(start, stride, size)) in chain.iter().enumerate() {
        let what = format!("level {}: split_strided(start {start}, stride {stride}, size {size})", depth + 1);
        let (parent, parent_members) = levels.last().expect("the world at least").clone();
        let members = strided_members(&parent_members, start, stride, size);
        let t = parent.split_strided(start, stride, size, TeamConfig::default()).or_die(&what);
        check_eq(format!("{what}: whether this PE got a team"), members.contains(&me), t.is_some());
        let Some(t) = t else { break };
        check_team(&shmem, &what, &t, &members, &parent, &parent_members, &sum);
        // Translation to every enclosing level goes through no intermediate numbering.
        for (up, (outer, outer_members)) in levels.iter().enumerate() {
            for (i, w) in members.iter().enumerate() {
                check_eq(
                    format!("{what}: translate_pe({i}) to level {up}"),
                    outer_members.iter().position(|o| o == w),
                    t.translate_pe(i, outer).or_die("translate_pe"),
                );
            }
        }
        println!("PE {me}: {what}: members {members:?}");
        levels.push((t, members));
    }
    // Innermost first: every member of a team is a member of its parent.
    while levels.len() > 1 {
        let (t, _) = levels.pop().expect("non-empty");
        t.destroy().or_die("destroy");
    }
    println!("PE {me}: nested splits ok");
    finish(shmem);
}

fn split_2d(args: &[String]) {
    let xrange: usize = arg(args, 0, 2);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let all: Vec<usize> = (0..n).collect();
    let sum = shmem.alloc_slice(1, 0u64).or_die("alloc");

    // On the world, then on the stride-2 team of the even PEs (team-relative numbering).
    let evens = world.split_strided(0, 2, n.div_ceil(2), TeamConfig::default()).or_die("split_strided evens");
    let evens_members: Vec<usize> = (0..n).step_by(2).collect();
    let mut parents: Vec<(&str, Team, Vec<usize>)> = vec![("world", world.clone(), all.clone())];
    if let Some(e) = &evens {
        parents.push(("evens", e.clone(), evens_members.clone()));
    }
    for (name, parent, pm) in &parents {
        let pn = pm.len();
        let pme = pm.iter().position(|&w| w == me).expect("member");
        let what = format!("split_2d(xrange {xrange}) of the {name} team");
        let (x, y) = parent.split_2d(xrange, cfg(2), cfg(3)).or_die(&what);
        let xr = xrange.min(pn);
        let (row, col) = (pme / xr, pme % xr);
        let xm: Vec<usize> = (row * xr..((row + 1) * xr).min(pn)).map(|i| pm[i]).collect();
        let ym: Vec<usize> = (col..pn).step_by(xr).map(|i| pm[i]).collect();
        let x = x.unwrap_or_else(|| oxshmem_tests::pe::fail(format!("{what}: no x team")));
        let y = y.unwrap_or_else(|| oxshmem_tests::pe::fail(format!("{what}: no y team")));
        check_team(&shmem, &format!("{what}: x team"), &x, &xm, parent, pm, &sum);
        check_team(&shmem, &format!("{what}: y team"), &y, &ym, parent, pm, &sum);
        check_eq(format!("{what}: x team num_contexts"), 2, x.get_config().or_die("get_config").num_contexts);
        check_eq(format!("{what}: y team num_contexts"), 3, y.get_config().or_die("get_config").num_contexts);
        check_eq(format!("{what}: x team my_pe"), col, x.my_pe().or_die("my_pe"));
        check_eq(format!("{what}: y team my_pe"), row, y.my_pe().or_die("my_pe"));
        x.destroy().or_die("destroy x");
        y.destroy().or_die("destroy y");
        println!("PE {me}: {what}: x {xm:?} y {ym:?}");
    }
    drop(parents);
    if let Some(e) = evens {
        e.destroy().or_die("destroy evens");
    }
    println!("PE {me}: split_2d ok");
    finish(shmem);
}

fn config(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    for k in [0, 1, 5, 64] {
        let t = world.split_strided(0, 1, n, cfg(k)).or_die("split_strided").expect("every PE is in the full split");
        check_eq(
            format!("get_config().num_contexts of a team made with {k}"),
            k,
            t.get_config().or_die("shmem_team_get_config").num_contexts,
        );
        // A context on it works whatever the advisory count.
        let ctx = t.create_ctx(0).or_die("create_ctx");
        ctx.destroy().or_die("ctx destroy");
        t.destroy().or_die("destroy");
    }
    println!("PE {me}: team configs ok");
    finish(shmem);
}

/// One of a handful of shapes, by number, that fits `n` PEs.
fn shape(n: usize, k: usize) -> (usize, usize, usize) {
    match k % 4 {
        0 => (0, 1, n),
        1 => (0, 2, n.div_ceil(2)),
        2 if n >= 2 => (1, 1, n - 1),
        3 if n >= 3 => (n % 3, 3, (n - n % 3).div_ceil(3)),
        _ => (0, 1, 1),
    }
}

/// Uses a freshly made team: a broadcast from its last member and an fcollect of world PE
/// numbers, both checked — stale flags or counters from a recycled slot would show here.
fn use_team(
    what: &str,
    t: &Team,
    members: &[usize],
    me: usize,
    round: u64,
    src: &oxshmem::SymSlice<u64>,
    dst: &oxshmem::SymSlice<u64>,
) {
    let tn = members.len();
    src.write(0, round * 1000 + me as u64);
    t.broadcast(dst, src, 1, tn - 1).or_die(format!("{what}: broadcast"));
    check_eq(format!("{what}: broadcast from the last member"), round * 1000 + members[tn - 1] as u64, dst.read(0));
    t.fcollect(dst, src, 1).or_die(format!("{what}: fcollect"));
    let expect: Vec<u64> = members.iter().map(|&w| round * 1000 + w as u64).collect();
    check_eq(format!("{what}: fcollect"), expect, dst.to_vec()[..tn].to_vec());
}

/// A team made in a batch: its description, handle (on members) and world members.
type Live = (String, Option<Team>, Vec<usize>);

fn recycle(args: &[String]) {
    let rounds: usize = arg(args, 0, 100);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let all: Vec<usize> = (0..n).collect();
    let src = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let dst = shmem.alloc_slice(n, 0u64).or_die("alloc");
    let mut created = 0usize;
    // One at a time.
    for r in 0..rounds {
        let (start, stride, size) = shape(n, r);
        let what = format!("round {r}: split_strided({start}, {stride}, {size})");
        let members = strided_members(&all, start, stride, size);
        let t = world.split_strided(start, stride, size, TeamConfig::default()).or_die(&what);
        created += 1;
        if let Some(t) = t {
            use_team(&what, &t, &members, me, r as u64, &src, &dst);
            t.destroy().or_die(format!("{what}: destroy"));
        }
    }
    // Batches of many live teams, destroyed in an order unrelated to creation.
    const LIVE: usize = 24;
    for b in 0..4 {
        let mut live = Vec::new();
        for k in 0..LIVE {
            let (start, stride, size) = shape(n, k + b);
            let what = format!("batch {b} team {k}: split_strided({start}, {stride}, {size})");
            let members = strided_members(&all, start, stride, size);
            let t = world.split_strided(start, stride, size, TeamConfig::default()).or_die(&what);
            created += 1;
            live.push((what, t, members));
        }
        for (k, (what, t, members)) in live.iter().enumerate() {
            if let Some(t) = t {
                use_team(what, t, members, me, (b * LIVE + k) as u64, &src, &dst);
            }
        }
        // Destroy: odd positions first, then even ones backwards. Destroy is collective over
        // each team, and every member visits the teams in the same order.
        let mut order: Vec<usize> = (1..LIVE).step_by(2).collect();
        order.extend((0..LIVE).step_by(2).rev());
        let mut slots: Vec<Option<Live>> = live.into_iter().map(Some).collect();
        for i in order {
            let (what, t, _) = slots[i].take().expect("destroyed once");
            if let Some(t) = t {
                t.destroy().or_die(format!("{what}: destroy"));
            }
        }
    }
    check(created > 2 * oxshmem::team::MAX_TEAMS, format!("created only {created} teams"));
    println!("PE {me}: created and destroyed {created} teams");
    finish(shmem);
}

/// Checks that `r` is the error for a destroyed team.
#[track_caller]
fn gone<T: Debug>(label: &str, r: oxshmem::Result<T>) {
    let e = expect_err(label, r, &["was destroyed"]);
    check(
        matches!(e.kind, ErrorKind::InvalidArgument(_)),
        format!("{label}: expected InvalidArgument, got {:?}", e.kind),
    );
}

fn destroyed(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let buf = shmem.alloc_slice(n, 1u64).or_die("alloc");
    let t = world.split_strided(0, 1, n, TeamConfig::default()).or_die("split_strided").expect("member");
    let handle = t.clone();
    t.destroy().or_die("destroy");
    gone("my_pe", handle.my_pe());
    gone("n_pes", handle.n_pes());
    gone("members", handle.members());
    gone("get_config", handle.get_config());
    gone("translate_pe from it", handle.translate_pe(0, &world));
    gone("translate_pe into it", world.translate_pe(0, &handle));
    gone("sync", handle.sync());
    gone("broadcast", handle.broadcast(&buf, &buf, 1, 0));
    gone("fcollect", handle.fcollect(&buf, &buf, 1));
    gone("collect", handle.collect(&buf, &buf, 1));
    gone("alltoall", handle.alltoall(&buf, &buf, 1));
    gone("sum_reduce", handle.sum_reduce(&buf, &buf, 1));
    gone("split_strided", handle.split_strided(0, 1, 1, TeamConfig::default()));
    gone("split_2d", handle.split_2d(1, TeamConfig::default(), TeamConfig::default()));
    gone("create_ctx", handle.create_ctx(0).map(drop));
    gone("destroy again", handle.clone().destroy());
    // Nothing else was disturbed: the world and a new team work.
    let t2 = world.split_strided(0, 1, n, TeamConfig::default()).or_die("split after a destroy").expect("member");
    buf.write(0, me as u64);
    t2.sum_reduce(&buf, &buf, 1).or_die("sum_reduce");
    check_eq("sum over the new team", (n * (n - 1) / 2) as u64, buf.read(0));
    t2.destroy().or_die("destroy");
    println!("PE {me}: destroyed team refused");
    finish(shmem);
}

/// Checks that `r` is a `CollectiveMismatch` error.
#[track_caller]
fn mismatch_err<T: Debug>(label: &str, r: oxshmem::Result<T>) {
    let e = expect_err(label, r, &["collective arguments differ between PEs"]);
    check(
        matches!(e.kind, ErrorKind::CollectiveMismatch(_)),
        format!("{label}: expected CollectiveMismatch, got {:?}", e.kind),
    );
}

fn mismatch(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check(n >= 2, "mismatch needs at least 2 PEs");
    let world = shmem.team_world();
    let all: Vec<usize> = (0..n).collect();
    let sum = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let last = me == n - 1;
    let d = TeamConfig::default();
    // The last PE disagrees in one argument each time.
    mismatch_err("split_strided with another size", world.split_strided(0, 1, if last { 1 } else { 2 }, d));
    mismatch_err("split_strided with another start", world.split_strided(usize::from(last), 1, 1, d));
    mismatch_err("split_strided with another stride", world.split_strided(0, if last { 2 } else { 1 }, 1, d));
    mismatch_err("split_strided with another num_contexts", world.split_strided(0, 1, n, cfg(i32::from(last))));
    mismatch_err("split_2d with another xrange", world.split_2d(if last { 2 } else { 1 }, d, d));
    // The same on a split team (its PE 0 disagrees), then the job goes on.
    let sub = world.split_strided(0, 1, n, d).or_die("split").expect("member");
    mismatch_err("split of a split with another size", sub.split_strided(0, 1, if me == 0 { 1 } else { 2 }, d));
    let t = world.split_strided(0, 1, n, d).or_die("split after mismatches");
    let t = t.expect("member");
    check_team(&shmem, "split after mismatches", &t, &all, &world, &all, &sum);
    t.destroy().or_die("destroy");
    sub.destroy().or_die("destroy");
    println!("PE {me}: mismatched splits refused");
    finish(shmem);
}

fn too_big(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let all: Vec<usize> = (0..n).collect();
    let sum = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let d = TeamConfig::default();
    let fit = format!("do not fit in the parent team of {n} PEs");
    for (label, (start, stride, size)) in [
        ("one past the end", (n - 1, 1, 2)),
        ("size n+1", (0, 1, n + 1)),
        ("start n", (n, 1, 1)),
        ("size 0", (0, 1, 0)),
        ("stride 0 with 2 PEs", (0, 0, 2)),
        ("stride past the end", (0, n, 2)),
    ] {
        let e = expect_err(&format!("split_strided {label}"), world.split_strided(start, stride, size, d), &[&fit]);
        check(
            matches!(e.kind, ErrorKind::InvalidArgument(_)),
            format!("{label}: expected InvalidArgument, got {:?}", e.kind),
        );
    }
    expect_err("split_2d xrange 0", world.split_2d(0, d, d), &["xrange must be at least 1"]);
    // Relative to a smaller parent: the evens.
    let evens = world.split_strided(0, 2, n.div_ceil(2), d).or_die("split evens");
    if let Some(e) = &evens {
        let en = n.div_ceil(2);
        expect_err(
            "split of the evens one past their end",
            e.split_strided(0, 1, en + 1, d),
            &[&format!("do not fit in the parent team of {en} PEs")],
        );
    }
    // Nothing was taken: a valid split works.
    let t = world.split_strided(0, 1, n, d).or_die("split").expect("member");
    check_team(&shmem, "split after refusals", &t, &all, &world, &all, &sum);
    t.destroy().or_die("destroy");
    if let Some(e) = evens {
        e.destroy().or_die("destroy evens");
    }
    println!("PE {me}: oversized splits refused");
    finish(shmem);
}

fn too_many(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let all: Vec<usize> = (0..n).collect();
    let sum = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let d = TeamConfig::default();
    let mut live = Vec::new();
    let err = loop {
        match world.split_strided(0, 1, n, d) {
            Ok(t) => live.push(t.expect("member of the full split")),
            Err(e) => break e,
        }
        check(live.len() <= oxshmem::team::MAX_TEAMS, "more teams than slots");
    };
    let text = err.to_string();
    println!("ERR too many teams: {text}");
    check(
        text.contains("no free team slot") && text.contains("destroy unused teams"),
        format!("unclear error after {} teams: {text}", live.len()),
    );
    // World, shared and the active-set slot are reserved.
    check_eq("teams created before the slots ran out", oxshmem::team::MAX_TEAMS - 3, live.len());
    // Every live team still works; free one slot and split again.
    let last = live.pop().expect("some");
    last.sync().or_die("sync on the last team");
    last.destroy().or_die("destroy");
    let t = world.split_strided(0, 1, n, d).or_die("split after freeing one slot").expect("member");
    check_team(&shmem, "team in the freed slot", &t, &all, &world, &all, &sum);
    t.destroy().or_die("destroy");
    let count = live.len() + 1;
    for t in live {
        t.destroy().or_die("destroy");
    }
    println!("PE {me}: {count} live teams, then a clear error");
    finish(shmem);
}

/// The parent indices `start + i*stride` (any sign of stride) mapped through `parent`.
fn signed_members(parent: &[usize], start: usize, stride: isize, size: usize) -> Vec<usize> {
    (0..size).map(|i| parent[start.checked_add_signed(stride * i as isize).expect("inside the parent")]).collect()
}

/// The (start, stride, size) triples with negative strides that fit a parent of `n` PEs.
fn negative_specs(n: usize) -> Vec<(usize, isize, usize)> {
    let mut v = vec![(n - 1, -1, n), (n - 1, -1, 1), (0, -1, 1), (n - 1, -5, 1)];
    if n >= 2 {
        v.extend([(n - 1, -2, n.div_ceil(2)), (n - 2, -1, n - 1), (n - 1, -(n as isize - 1), 2)]);
    }
    if n >= 3 {
        v.extend([(n - 1, -3, n.div_ceil(3)), (n - 2, -2, (n - 1).div_ceil(2)), (2, -1, 3)]);
    }
    if n >= 5 {
        v.extend([(n - 2, -3, (n - 1).div_ceil(3)), (4, -2, 3)]);
    }
    v.dedup();
    v
}

/// Checks a team in reverse (or any) order beyond `check_team`: a broadcast from team PE 0,
/// an fcollect of world PE numbers, which must come back in team order.
fn check_order(
    what: &str,
    t: &Team,
    members: &[usize],
    me: usize,
    src: &oxshmem::SymSlice<u64>,
    dst: &oxshmem::SymSlice<u64>,
) {
    let tn = members.len();
    src.write(0, 1000 + me as u64);
    t.broadcast(dst, src, 1, 0).or_die(format!("{what}: broadcast"));
    check_eq(
        format!("{what}: broadcast from team PE 0 (world PE {})", members[0]),
        1000 + members[0] as u64,
        dst.read(0),
    );
    t.fcollect(dst, src, 1).or_die(format!("{what}: fcollect"));
    let expect: Vec<u64> = members.iter().map(|&w| 1000 + w as u64).collect();
    check_eq(format!("{what}: fcollect in team order"), expect, dst.to_vec()[..tn].to_vec());
}

fn negative(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let all: Vec<usize> = (0..n).collect();
    let d = TeamConfig::default();
    let sum = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let src = shmem.alloc_slice(1, 0u64).or_die("alloc");
    let dst = shmem.alloc_slice(n, 0u64).or_die("alloc");
    let specs = negative_specs(n);
    for &(start, stride, size) in &specs {
        let what = format!("split_strided(start {start}, stride {stride}, size {size})");
        let members = signed_members(&all, start, stride, size);
        let t = world.split_strided_signed(start, stride, size, d).or_die(&what);
        check_eq(format!("{what}: whether this PE got a team"), members.contains(&me), t.is_some());
        if let Some(t) = t {
            check_team(&shmem, &what, &t, &members, &world, &all, &sum);
            check_order(&what, &t, &members, me, &src, &dst);
            t.destroy().or_die(format!("{what}: destroy"));
        }
    }
    // Splits of the reversed world, relative to its numbering.
    let rev = world.split_strided_signed(n - 1, -1, n, d).or_die("reverse the world").expect("every PE");
    let rev_members: Vec<usize> = all.iter().rev().copied().collect();
    let mut subs: Vec<(usize, isize, usize)> = vec![(n - 1, -1, n), (0, 1, n)];
    if n >= 2 {
        subs.extend([(0, 2, n.div_ceil(2)), (n - 1, -2, n.div_ceil(2)), (1, 1, n - 1)]);
    }
    for &(start, stride, size) in &subs {
        let what = format!("split_strided(start {start}, stride {stride}, size {size}) of the reversed world");
        let members = signed_members(&rev_members, start, stride, size);
        let t = rev.split_strided_signed(start, stride, size, d).or_die(&what);
        check_eq(format!("{what}: whether this PE got a team"), members.contains(&me), t.is_some());
        if let Some(t) = t {
            check_team(&shmem, &what, &t, &members, &rev, &rev_members, &sum);
            check_order(&what, &t, &members, me, &src, &dst);
            t.destroy().or_die(format!("{what}: destroy"));
        }
    }
    // split_2d of the reversed world: rows and columns in its order.
    let (x, y) = rev.split_2d(2, d, d).or_die("split_2d of the reversed world");
    let rme = rev_members.iter().position(|&w| w == me).expect("member");
    let xr = 2.min(n);
    let xm: Vec<usize> = (rme / xr * xr..((rme / xr + 1) * xr).min(n)).map(|i| rev_members[i]).collect();
    let ym: Vec<usize> = (rme % xr..n).step_by(xr).map(|i| rev_members[i]).collect();
    let (x, y) = (x.expect("x team"), y.expect("y team"));
    check_team(&shmem, "split_2d of the reversed world: x", &x, &xm, &rev, &rev_members, &sum);
    check_team(&shmem, "split_2d of the reversed world: y", &y, &ym, &rev, &rev_members, &sum);
    x.destroy().or_die("destroy x");
    y.destroy().or_die("destroy y");
    // Leaving the parent is refused on every PE, whichever end it leaves by.
    let fit = format!("do not fit in the parent team of {n} PEs");
    for (label, (start, stride, size)) in [
        ("negative one past the start", (n - 1, -1, n + 1)),
        ("negative from 0 with 2 PEs", (0, -1, 2)),
        ("negative stride past the start", (n - 1, -(n as isize), 2)),
        ("negative start n", (n, -1, 1)),
        ("negative size 0", (n - 1, -1, 0)),
        ("negative huge stride", (n - 1, isize::MIN, 2)),
    ] {
        let e =
            expect_err(&format!("split_strided {label}"), world.split_strided_signed(start, stride, size, d), &[&fit]);
        check(
            matches!(e.kind, ErrorKind::InvalidArgument(_)),
            format!("{label}: expected InvalidArgument, got {:?}", e.kind),
        );
    }
    check_team(&shmem, "the reversed world after refusals", &rev, &rev_members, &world, &all, &sum);
    check_order("the reversed world after refusals", &rev, &rev_members, me, &src, &dst);
    rev.destroy().or_die("destroy the reversed world");
    println!("PE {me}: {} negative-stride splits ok", specs.len() + subs.len() + 2);
    finish(shmem);
}

fn config_mask(_: &[String]) {
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    for (mask, want) in [(0i64, 0), (oxshmem::team::SHMEM_TEAM_NUM_CONTEXTS, 3)] {
        let what = format!("split_strided with num_contexts 3 and config_mask {mask}");
        let t = world.split_strided_masked(0, 1, n, cfg(3), mask).or_die(&what).expect("every PE");
        check_eq(format!("{what}: get_config().num_contexts"), want, t.get_config().or_die("get_config").num_contexts);
        check_eq(format!("{what}: config_mask"), mask, t.config_mask().or_die("config_mask"));
        t.destroy().or_die("destroy");
        let what = format!("split_2d with num_contexts 3 and 4 and config_mask {mask}");
        let (x, y) = world.split_2d_masked(1, cfg(3), mask, cfg(4), mask).or_die(&what);
        let (x, y) = (x.expect("x team"), y.expect("y team"));
        check_eq(format!("{what}: x num_contexts"), want, x.get_config().or_die("get_config").num_contexts);
        check_eq(
            format!("{what}: y num_contexts"),
            if mask == 0 { 0 } else { 4 },
            y.get_config().or_die("get_config").num_contexts,
        );
        x.destroy().or_die("destroy");
        y.destroy().or_die("destroy");
    }
    // PEs may pass different ignored values: only what the mask selects must agree.
    let t = world.split_strided_masked(0, 1, n, cfg(me as i32 + 7), 0).or_die("split with differing ignored configs");
    let t = t.expect("every PE");
    check_eq("num_contexts with differing ignored configs", 0, t.get_config().or_die("get_config").num_contexts);
    t.destroy().or_die("destroy");
    println!("PE {me}: config masks ok");
    finish(shmem);
}
