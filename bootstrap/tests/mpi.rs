//! The MPI-communicator bootstrap (`NVSHMEMX_INIT_WITH_MPI_COMM`, `oxshmem_bootstrap::mpi`)
//! in real MPI jobs: MPICH under its launcher `mpiexec.hydra`, and Open MPI under
//! `mpirun.openmpi` when it is installed.
//!
//! The PEs are this test binary, re-executed as `--exact pe_child` with
//! `OXS_MPI_TEST_PE=<scenario>`. Like a program that links neither, a PE `dlopen`s the MPI
//! library named by `OXS_MPI_TEST_LIB` (MPICH's `libmpich.so.12`/`libmpi.so.12`, found the way
//! `mpicc -show` links it; Open MPI's `libmpi.so.40`) with `RTLD_GLOBAL`, calls `MPI_Init`
//! through `dlsym`, and hands the bootstrap the address of its `MPI_Comm` variable. No part of
//! the test links MPI.
//!
//! Missing MPICH (Hydra or its library) makes a test print why and pass — unless
//! `OXSHMEM_TEST_REQUIRE_LAUNCHERS` is set (CI sets it after `tests/ci-deps.sh`), which turns
//! the skip into a failure. Open MPI is not in `ci-deps.sh` (installing it repoints the `mpirun`
//! alternative), so its test always skips quietly without it. Every job runs in its own process
//! group under a watchdog that kills the group.

use std::ffi::{CString, c_char, c_int, c_void};
use std::fmt::Debug;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use oxshmem_bootstrap::Bootstrap;
use oxshmem_bootstrap::mpi::{Flavor, Mpi};

const PE_VAR: &str = "OXS_MPI_TEST_PE";
/// The MPI library a PE loads.
const LIB_VAR: &str = "OXS_MPI_TEST_LIB";
/// `mpich` or `openmpi`: the ABI of that library.
const FLAVOR_VAR: &str = "OXS_MPI_TEST_FLAVOR";
/// `local`: load it with `RTLD_LOCAL` instead of `RTLD_GLOBAL`.
const SCOPE_VAR: &str = "OXS_MPI_TEST_SCOPE";
/// Upper bound for any one job here; they take about a second when all is well.
const WATCHDOG: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------- the PE side

/// Not a test of its own: the entry point of a PE when a launcher (or a test) runs this binary.
#[test]
fn pe_child() {
    let Ok(scenario) = std::env::var(PE_VAR) else {
        return;
    };
    std::process::exit(pe_main(&scenario));
}

/// The application's own MPI, reached through `dlsym` like the bootstrap's: `H` is the handle
/// type of the ABI (`c_int` for MPICH, a pointer for Open MPI).
struct App<H> {
    init: unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int,
    finalize: unsafe extern "C" fn() -> c_int,
    comm_rank: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    comm_size: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    comm_split: unsafe extern "C" fn(H, c_int, c_int, *mut H) -> c_int,
    comm_free: unsafe extern "C" fn(*mut H) -> c_int,
    barrier: unsafe extern "C" fn(H) -> c_int,
    world: H,
    null: H,
    flavor: Flavor,
    /// A handle that is no communicator (MPICH only): what a confused program might pass.
    bogus: Option<H>,
}

/// `dlsym` of the library just loaded, as the function pointer type `F`.
///
/// # Safety
///
/// `F` must be the `unsafe extern "C" fn` type of `name`'s C prototype.
unsafe fn func<F: Copy>(lib: *mut c_void, name: &str) -> F {
    assert_eq!(size_of::<F>(), size_of::<*mut c_void>());
    let c = CString::new(name).unwrap();
    // SAFETY: `lib` is a live dlopen handle; `c` is NUL-terminated.
    let p = unsafe { libc::dlsym(lib, c.as_ptr()) };
    assert!(!p.is_null(), "{name} not found in the MPI library");
    // SAFETY: the caller guarantees `F` is the type of `name`, a function pointer like `p`.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) }
}

impl<H: Copy> App<H> {
    /// # Safety
    ///
    /// `H` must be the handle type of the library behind `lib`, `world` and `null` its
    /// `MPI_COMM_WORLD` and `MPI_COMM_NULL`.
    unsafe fn load(lib: *mut c_void, world: H, null: H, flavor: Flavor, bogus: Option<H>) -> App<H> {
        // SAFETY: the prototypes of mpi.h with MPI_Comm = H (the caller's promise).
        unsafe {
            App {
                init: func(lib, "MPI_Init"),
                finalize: func(lib, "MPI_Finalize"),
                comm_rank: func(lib, "MPI_Comm_rank"),
                comm_size: func(lib, "MPI_Comm_size"),
                comm_split: func(lib, "MPI_Comm_split"),
                comm_free: func(lib, "MPI_Comm_free"),
                barrier: func(lib, "MPI_Barrier"),
                world,
                null,
                flavor,
                bogus,
            }
        }
    }

    fn mpi_init(&self) {
        // SAFETY: MPI_Init(NULL, NULL) is allowed since MPI-2.
        assert_eq!(unsafe { (self.init)(std::ptr::null_mut(), std::ptr::null_mut()) }, 0, "MPI_Init");
    }

    fn mpi_finalize(&self) {
        // SAFETY: MPI is initialized and every communicator we made is freed or abandoned.
        assert_eq!(unsafe { (self.finalize)() }, 0, "MPI_Finalize");
    }

    fn rank_size(&self, comm: H) -> (usize, usize) {
        let (mut r, mut n) = (0, 0);
        // SAFETY: `comm` is a live communicator; each call writes one int.
        unsafe {
            assert_eq!((self.comm_rank)(comm, &mut r), 0, "MPI_Comm_rank");
            assert_eq!((self.comm_size)(comm, &mut n), 0, "MPI_Comm_size");
        }
        (r as usize, n as usize)
    }
}

/// The bootstrap over `*comm`, as `nvshmemx_init_attr` gets it: `attr.mpi_comm = &comm`.
fn boot_over<H>(comm: &H) -> oxshmem_bootstrap::Result<Mpi> {
    // SAFETY: `comm` points to a live MPI_Comm of the loaded library (or, in the error cases,
    // to a value of its handle type that the bootstrap must reject before MPI sees it).
    unsafe { Mpi::from_comm((comm as *const H).cast()) }
}

/// Rank `rank`'s contribution to allgather number `epoch`: distinct, of distinct lengths,
/// some empty.
fn blob(rank: usize, epoch: usize) -> Vec<u8> {
    let len = [0, 10 * 1024, 1, 3000, 7, 0, 999, 2048][(rank + epoch) % 8];
    (0..len).map(|i| (i * 31 + rank * 7 + epoch * 13) as u8).collect()
}

fn check_collectives(boot: &Mpi, tag: &str) {
    let (rank, size) = (boot.rank(), boot.size());
    for epoch in 0..3 {
        let all = boot.allgather(&blob(rank, epoch)).unwrap();
        assert_eq!(all.len(), size, "{tag}");
        for (r, got) in all.iter().enumerate() {
            assert!(got == &blob(r, epoch), "{tag} PE {rank}: blob of {r}, epoch {epoch}");
        }
    }
    // Pieces of one size (MPI_Allgather), and nothing at all.
    let all = boot.allgather(&(rank as u64).to_le_bytes()).unwrap();
    assert_eq!(all, (0..size as u64).map(|r| r.to_le_bytes().to_vec()).collect::<Vec<_>>(), "{tag}");
    assert_eq!(boot.allgather(&[]).unwrap(), vec![Vec::<u8>::new(); size], "{tag}");
    boot.barrier().unwrap();
    // From the last rank (not 0 once there are two), from rank 1 % size with nothing, and from
    // rank 0 passing None.
    let root = size - 1;
    let data: Vec<u8> = (0..3000u32).map(|i| (i % 253) as u8 ^ root as u8).collect();
    let got = boot.broadcast(root, (rank == root).then_some(&data[..])).unwrap();
    assert!(got == data, "{tag} PE {rank}: broadcast from {root}");
    let got = boot.broadcast(1 % size, (rank == 1 % size).then_some(&[][..])).unwrap();
    assert!(got.is_empty(), "{tag}");
    assert!(boot.broadcast(0, None).unwrap().is_empty(), "{tag}");
    boot.barrier().unwrap();
    let err = boot.broadcast(size, None).unwrap_err().to_string();
    assert!(err.contains("out of range"), "{err}");
}

fn expect_err(r: oxshmem_bootstrap::Result<Mpi>, want: &str) {
    match r {
        Ok(b) => panic!("expected an error with {want:?}, got {b:?}"),
        Err(e) => assert!(e.to_string().contains(want), "expected {want:?} in {e}"),
    }
}

fn run_pe<H: Copy + PartialEq + Debug>(app: &App<H>, scenario: &str) -> i32 {
    let world = app.world;
    match scenario {
        "not-initialized" => {
            expect_err(boot_over(&world), "NVSHMEMX_INIT_WITH_MPI_COMM: MPI is not initialized (call MPI_Init first)");
            println!("ok: not initialized");
            return 0;
        }
        "mpi-finalized-before-init" => {
            app.mpi_init();
            app.mpi_finalize();
            expect_err(boot_over(&world), "NVSHMEMX_INIT_WITH_MPI_COMM: MPI is finalized already");
            println!("ok: finalized before init");
            return 0;
        }
        _ => {}
    }
    app.mpi_init();
    let (wrank, wsize) = app.rank_size(world);
    match scenario {
        "world" => {
            // Refused before MPI sees them (so they are local, not collective).
            expect_err(boot_over(&app.null), "the communicator is MPI_COMM_NULL");
            if let Some(bogus) = app.bogus {
                expect_err(boot_over(&bogus), "is not an MPICH communicator handle");
            }
            let by_value: *const c_void = match app.flavor {
                Flavor::Mpich => 0x4400_0000 as *const c_void,
                // MPI_COMM_WORLD itself: the address of ompi_mpi_comm_world.
                // SAFETY: the test only compares this address; H is a pointer here.
                Flavor::OpenMpi => unsafe { std::mem::transmute_copy::<H, *const c_void>(&world) },
            };
            // SAFETY: the bootstrap must recognize this pointer and not read through it.
            let e = unsafe { Mpi::from_comm(by_value) }.unwrap_err().to_string();
            assert!(e.contains("pass") && e.contains("&comm"), "{e}");

            let boot = boot_over(&world).unwrap();
            assert_eq!((boot.rank(), boot.size()), (wrank, wsize), "bootstrap vs MPI_Comm_rank/size");
            assert_eq!(boot.name(), "mpi");
            assert_eq!(boot.library().flavor(), app.flavor);
            assert!(boot.node_mapping().is_none());
            // NULL means MPI_COMM_WORLD, as in NVSHMEM; two bootstraps coexist.
            // SAFETY: NULL is allowed.
            let second = unsafe { Mpi::from_comm(std::ptr::null()) }.unwrap();
            assert_eq!((second.rank(), second.size()), (wrank, wsize));
            check_collectives(&boot, "world");
            assert_eq!(second.allgather(b"x").unwrap().len(), wsize);
            second.finalize().unwrap();
            // The application's communicator still works, the bootstrap's too.
            // SAFETY: MPI_COMM_WORLD is live.
            assert_eq!(unsafe { (app.barrier)(world) }, 0);
            boot.barrier().unwrap();
            boot.finalize().unwrap();
            for e in [boot.barrier().unwrap_err(), boot.finalize().unwrap_err()] {
                assert!(e.to_string().contains("after finalize"), "{e}");
            }
            println!("PE {wrank} of {wsize}: ok mpi {} [{}]", boot.library().flavor().name(), boot.library());
        }
        "split" => {
            let color = (wrank % 2) as c_int;
            let mut sub = app.null;
            // SAFETY: world is live; MPI writes the new communicator into `sub`.
            assert_eq!(unsafe { (app.comm_split)(world, color, wrank as c_int, &mut sub) }, 0);
            let boot = boot_over(&sub).unwrap();
            let want_size = (wsize + 1 - color as usize) / 2;
            assert_eq!((boot.rank(), boot.size()), (wrank / 2, want_size), "PE {wrank}");
            assert_eq!((boot.rank(), boot.size()), app.rank_size(sub));
            // Each member gives its world rank, wrank + 1 times: the evens see the evens.
            let all = boot.allgather(&vec![wrank as u8; wrank + 1]).unwrap();
            let members: Vec<usize> = (color as usize..wsize).step_by(2).collect();
            assert_eq!(all, members.iter().map(|&w| vec![w as u8; w + 1]).collect::<Vec<_>>(), "PE {wrank}");
            check_collectives(&boot, "split");
            boot.finalize().unwrap();
            // SAFETY: `sub` is ours and no longer used.
            assert_eq!(unsafe { (app.comm_free)(&mut sub) }, 0);
            println!("PE {wrank} of {wsize}: ok split color {color}: {} of {}", wrank / 2, want_size);
        }
        "mpi-finalized-first" => {
            let boot = boot_over(&world).unwrap();
            assert_eq!(boot.allgather(b"before").unwrap().len(), wsize);
            app.mpi_finalize();
            // MPI is gone: finalize must not call MPI_Comm_free.
            boot.finalize().unwrap();
            println!("PE {wrank} of {wsize}: ok finalize after MPI_Finalize");
            return 0;
        }
        "abort" => {
            let boot = boot_over(&world).unwrap();
            if wrank == 1 {
                std::thread::sleep(Duration::from_millis(100));
                boot.abort(7, "PE 1 gives up: test abort");
            }
            if let Err(e) = boot.barrier() {
                eprintln!("PE {wrank}: barrier failed: {e}");
                return 5;
            }
            eprintln!("PE {wrank}: the barrier completed although PE 1 aborted");
            return 6;
        }
        other => panic!("unknown scenario {other}"),
    }
    app.mpi_finalize();
    0
}

fn pe_main(scenario: &str) -> i32 {
    if scenario == "no-mpi" {
        let world: c_int = 0x4400_0000;
        expect_err(
            boot_over(&world),
            "NVSHMEMX_INIT_WITH_MPI_COMM: no MPI library is loaded in this process (MPI_Comm_rank not found)",
        );
        println!("ok: no MPI");
        return 0;
    }
    let path = std::env::var(LIB_VAR).expect("OXS_MPI_TEST_LIB");
    let scope = if std::env::var(SCOPE_VAR).as_deref() == Ok("local") { libc::RTLD_LOCAL } else { libc::RTLD_GLOBAL };
    let c = CString::new(path.clone()).unwrap();
    // SAFETY: loading the MPI library; its initializers are MPI's own.
    let lib = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | scope) };
    assert!(!lib.is_null(), "dlopen {path} failed");
    match std::env::var(FLAVOR_VAR).as_deref() {
        // SAFETY: MPICH's ABI: int handles; MPI_COMM_WORLD 0x44000000, MPI_COMM_NULL
        // 0x04000000 (its mpi.h); MPI_BYTE is no communicator.
        Ok("mpich") => run_pe(
            &unsafe { App::<c_int>::load(lib, 0x4400_0000, 0x0400_0000, Flavor::Mpich, Some(0x4c00_010d)) },
            scenario,
        ),
        Ok("openmpi") => {
            // SAFETY: `lib` is live; these are data symbols of Open MPI.
            let (world, null) = unsafe {
                (libc::dlsym(lib, c"ompi_mpi_comm_world".as_ptr()), libc::dlsym(lib, c"ompi_mpi_comm_null".as_ptr()))
            };
            assert!(!world.is_null() && !null.is_null(), "{path} is not Open MPI");
            // SAFETY: Open MPI's ABI: pointer handles, MPI_COMM_WORLD = &ompi_mpi_comm_world.
            run_pe(&unsafe { App::<*mut c_void>::load(lib, world, null, Flavor::OpenMpi, None) }, scenario)
        }
        other => panic!("{FLAVOR_VAR}={other:?}"),
    }
}

// ---------------------------------------------------------------- running jobs

struct Out {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status {:?} after {:?}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

fn reader(r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::BufReader::new(r).read_to_string(&mut s);
        s
    })
}

/// Run `cmd` in its own process group, at most [`WATCHDOG`]; past that, SIGKILL the group and
/// fail the test with what it printed.
fn run(cmd: &mut Command) -> Out {
    let t = Instant::now();
    let mut child: Child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
    let out = reader(child.stdout.take().unwrap());
    let err = reader(child.stderr.take().unwrap());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > WATCHDOG {
            // SAFETY: signalling the process group of a child we started; no memory.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "job still running after {WATCHDOG:?}; killed. Output:\n{}{}",
                out.join().unwrap(),
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Out { status, stdout: out.join().unwrap(), stderr: err.join().unwrap(), elapsed: t.elapsed() }
}

/// Clear the launcher and bootstrap variables this test process may have inherited.
fn clean_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("OXSHMEM_") || k.starts_with("OXS_MPI_TEST") || k.starts_with("OMPI_")
        {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// Arguments that make this binary run one PE.
fn pe_args() -> [&'static str; 4] {
    ["--exact", "pe_child", "--nocapture", "--test-threads=1"]
}

// ---------------------------------------------------------------- finding MPI

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(tool)).find(|p| p.is_file())
}

/// Say why a test does not run; a failure instead when `OXSHMEM_TEST_REQUIRE_LAUNCHERS` is set.
fn skip(why: &str) {
    if std::env::var_os("OXSHMEM_TEST_REQUIRE_LAUNCHERS").is_some() {
        panic!("{why}, and OXSHMEM_TEST_REQUIRE_LAUNCHERS is set (run tests/ci-deps.sh)");
    }
    eprintln!("skipping: {why}");
}

/// The `-L` folders and `-l` names a compiler wrapper's `flag` (`-show`, `-showme:link`)
/// prints.
fn wrapper_link(wrapper: &str, flag: &str) -> (Vec<PathBuf>, Vec<String>) {
    let Some(out) = Command::new(wrapper).arg(flag).stderr(Stdio::null()).output().ok().filter(|o| o.status.success())
    else {
        return (Vec::new(), Vec::new());
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let dirs = text.split_whitespace().filter_map(|w| w.strip_prefix("-L")).map(PathBuf::from).collect();
    let libs = text.split_whitespace().filter_map(|w| w.strip_prefix("-l")).map(str::to_string).collect();
    (dirs, libs)
}

const MULTIARCH: &[&str] = &["/usr/lib/x86_64-linux-gnu", "/usr/lib64/mpich/lib", "/usr/lib64", "/usr/lib"];

/// MPICH's shared library, soname version 12, as its `mpicc -show` links it (Debian:
/// `-L/usr/lib/x86_64-linux-gnu -lmpich`; upstream and Fedora: `-lmpi`).
fn mpich_lib() -> Option<PathBuf> {
    let mut dirs = Vec::new();
    let mut names = Vec::new();
    // mpicc may be Open MPI's where both are installed: MPICH's own wrapper first.
    for w in ["mpicc.mpich", "mpicc"] {
        let (d, l) = wrapper_link(w, "-show");
        dirs.extend(d);
        names.extend(l.into_iter().filter(|l| l == "mpich" || l == "mpi"));
    }
    names.extend(["mpich".to_string(), "mpi".to_string()]);
    dirs.extend(MULTIARCH.iter().map(PathBuf::from));
    dirs.iter().flat_map(|d| names.iter().map(move |n| d.join(format!("lib{n}.so.12")))).find(|p| p.exists())
}

fn hydra_and_mpich() -> Option<(PathBuf, PathBuf)> {
    let Some(h) = which("mpiexec.hydra") else {
        skip("mpiexec.hydra not found (apt-get install mpich)");
        return None;
    };
    let Some(lib) = mpich_lib() else {
        skip("MPICH's libmpich.so.12 / libmpi.so.12 not found (apt-get install libmpich-dev)");
        return None;
    };
    Some((h, lib))
}

/// `mpiexec.hydra -n N <PE>` running `scenario` over MPICH's `lib`.
fn hydra_job(h: &Path, lib: &Path, n: usize, scenario: &str) -> Command {
    let mut c = Command::new(h);
    clean_env(&mut c)
        .args(["-n", &n.to_string()])
        .arg(std::env::current_exe().unwrap())
        .args(pe_args())
        .env(PE_VAR, scenario)
        .env(LIB_VAR, lib)
        .env(FLAVOR_VAR, "mpich");
    c
}

/// This binary as one PE without a launcher.
fn plain_pe(scenario: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    clean_env(&mut c).args(pe_args()).env(PE_VAR, scenario);
    c
}

fn assert_lines(out: &Out, lines: impl IntoIterator<Item = String>) {
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for line in lines {
        assert!(out.stdout.contains(&line), "missing {line:?}: {out:?}");
    }
}

// ---------------------------------------------------------------- MPICH

#[test]
fn mpich_world_2_and_4() {
    let Some((h, lib)) = hydra_and_mpich() else { return };
    for n in [2, 4] {
        let out = run(&mut hydra_job(&h, &lib, n, "world"));
        assert_lines(&out, (0..n).map(|r| format!("PE {r} of {n}: ok mpi mpich [MPICH Version: ")));
        eprintln!("mpiexec.hydra -n {n}: {:?}", out.elapsed);
    }
}

#[test]
fn mpich_split_evens_and_odds() {
    let Some((h, lib)) = hydra_and_mpich() else { return };
    for n in [4, 3] {
        let out = run(&mut hydra_job(&h, &lib, n, "split"));
        assert_lines(
            &out,
            (0..n).map(|r| format!("PE {r} of {n}: ok split color {}: {} of {}", r % 2, r / 2, (n + 1 - r % 2) / 2)),
        );
    }
}

#[test]
fn mpich_loaded_privately() {
    // RTLD_LOCAL, as a Python extension module's libraries are: the bootstrap finds the
    // library that is already loaded by its soname (RTLD_NOLOAD).
    let Some((h, lib)) = hydra_and_mpich() else { return };
    let out = run(hydra_job(&h, &lib, 2, "world").env(SCOPE_VAR, "local"));
    assert_lines(&out, (0..2).map(|r| format!("PE {r} of 2: ok mpi mpich")));
}

#[test]
fn mpich_finalize_after_mpi_finalize() {
    let Some((h, lib)) = hydra_and_mpich() else { return };
    let out = run(&mut hydra_job(&h, &lib, 2, "mpi-finalized-first"));
    assert_lines(&out, (0..2).map(|r| format!("PE {r} of 2: ok finalize after MPI_Finalize")));
}

#[test]
fn mpich_abort_ends_the_job() {
    let Some((h, lib)) = hydra_and_mpich() else { return };
    let out = run(&mut hydra_job(&h, &lib, 3, "abort"));
    // Hydra passes on MPI_Abort's error code (7) or, when it reaps one of the PEs it killed
    // first, that PE's signal (9: seen in CI); either way the job ended, nonzero, promptly.
    assert!(matches!(out.status.code(), Some(7) | Some(9)), "{out:?}");
    assert!(out.stderr.contains("PE 1 gives up: test abort"), "{out:?}");
    assert!(!out.stderr.contains("completed although"), "{out:?}");
    assert!(out.elapsed < Duration::from_secs(20), "{out:?}");
}

#[test]
fn errors_without_mpi_and_before_mpi_init() {
    // No MPI library in the process at all.
    let out = run(&mut plain_pe("no-mpi"));
    assert_lines(&out, ["ok: no MPI".to_string()]);
    let Some((h, lib)) = hydra_and_mpich() else { return };
    // MPICH loaded, MPI_Init not called (MPI_Initialized is allowed before it).
    let out = run(plain_pe("not-initialized").env(LIB_VAR, &lib).env(FLAVOR_VAR, "mpich"));
    assert_lines(&out, ["ok: not initialized".to_string()]);
    // MPI_Init and MPI_Finalize both called already.
    let out = run(&mut hydra_job(&h, &lib, 1, "mpi-finalized-before-init"));
    assert_lines(&out, ["ok: finalized before init".to_string()]);
}

// ---------------------------------------------------------------- Open MPI

#[test]
fn openmpi_world_and_split() {
    // Debian's openmpi-bin installs mpirun.openmpi whatever `mpirun` points to. Not in
    // ci-deps.sh (it would repoint the `mpirun` alternative): skip quietly without it.
    let Some(mpirun) = which("mpirun.openmpi") else {
        eprintln!("skipping: mpirun.openmpi not found (apt-get install openmpi-bin libopenmpi-dev)");
        return;
    };
    let (mut dirs, _) = wrapper_link("mpicc.openmpi", "-showme:link");
    dirs.extend(MULTIARCH.iter().map(PathBuf::from));
    let Some(lib) = dirs.iter().map(|d| d.join("libmpi.so.40")).find(|p| p.exists()) else {
        eprintln!("skipping: Open MPI's libmpi.so.40 not found (apt-get install libopenmpi-dev)");
        return;
    };
    let job = |n: usize, scenario: &str| {
        let mut c = Command::new(&mpirun);
        clean_env(&mut c)
            .args(["--allow-run-as-root", "--oversubscribe", "-n", &n.to_string()])
            .arg(std::env::current_exe().unwrap())
            .args(pe_args())
            .env(PE_VAR, scenario)
            .env(LIB_VAR, &lib)
            .env(FLAVOR_VAR, "openmpi")
            // Containers often forbid the cross-memory attach of the shared-memory transport.
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
        c
    };
    for n in [2, 4] {
        let out = run(&mut job(n, "world"));
        assert_lines(&out, (0..n).map(|r| format!("PE {r} of {n}: ok mpi openmpi [Open MPI v")));
    }
    let out = run(&mut job(4, "split"));
    assert_lines(&out, (0..4).map(|r| format!("PE {r} of 4: ok split color {}: {} of 2", r % 2, r / 2)));
    let out = run(&mut job(2, "mpi-finalized-first"));
    assert_lines(&out, (0..2).map(|r| format!("PE {r} of 2: ok finalize after MPI_Finalize")));
    let out = run(plain_pe("not-initialized").env(LIB_VAR, &lib).env(FLAVOR_VAR, "openmpi"));
    assert_lines(&out, ["ok: not initialized".to_string()]);
}
