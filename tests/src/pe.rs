//! The PE side: what every program in `src/bin/` uses to pick its case and check its results.
//!
//! A failed check prints `FAIL PE <n>: <operation>: expected <x>, got <y>` to standard error and
//! ends the PE with status 1; `oshrun` then ends the job and returns non-zero, and the test
//! shows the job's output. Checks compute the expected value independently of the runtime.

use std::fmt::{Debug, Display};

/// This PE's number as the runtime reports it, or `?` before init / after finalize.
fn who() -> String {
    match oxshmem::raw::my_pe() {
        Ok(pe) => pe.to_string(),
        Err(_) => std::env::var("PMI_RANK").map(|r| format!("{r} (PMI_RANK)")).unwrap_or_else(|_| "?".into()),
    }
}

/// Ends this PE with status 1 after printing `FAIL PE <n>: <msg>`.
///
/// The PE ends with `_exit`, not `exit`: the runtime's `atexit` handler would run a collective
/// finalize, which waits for every other PE, so a failing PE could hang (or release peers
/// from a barrier it never entered) instead of ending the job.
#[track_caller]
pub fn fail(msg: impl Display) -> ! {
    let at = std::panic::Location::caller();
    let line = format!("FAIL PE {}: {msg} (at {}:{})", who(), at.file(), at.line());
    eprintln!("{line}");
    // Hydra ends the whole job as soon as one PE exits, often before it has forwarded the
    // standard error of the others (or even of the one that exited): a test that must read the
    // failure asks for a copy in a file of its own.
    if let Some(dir) = std::env::var_os(FAIL_DIR_VAR) {
        let _ = std::fs::write(std::path::Path::new(&dir).join(format!("fail.{}", std::process::id())), &line);
    }
    exit_now(1)
}

/// A directory where [`fail`] also writes its line, one file per process (`fail.<pid>`), for
/// tests of launchers that may lose a dying PE's output.
pub const FAIL_DIR_VAR: &str = "OXSHMEM_TEST_FAIL_DIR";

/// Flushes standard output and ends the process at once with `code`, without running `atexit`
/// handlers (see [`fail`]).
pub fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: _exit has no preconditions; it ends the process.
    unsafe { libc::_exit(code) }
}

/// Fails unless `actual == expected`; `what` names the operation (and its arguments).
#[track_caller]
pub fn check_eq<T: PartialEq + Debug>(what: impl Display, expected: T, actual: T) {
    if expected != actual {
        fail(format_args!("{what}: expected {expected:?}, got {actual:?}"));
    }
}

/// Fails unless `cond` holds; `what` says what was expected.
#[track_caller]
pub fn check(cond: bool, what: impl Display) {
    if !cond {
        fail(what);
    }
}

/// Fails unless two slices are equal, naming the first differing index.
#[track_caller]
pub fn check_slice<T: PartialEq + Debug>(what: impl Display, expected: &[T], actual: &[T]) {
    if expected.len() != actual.len() {
        fail(format_args!("{what}: expected {} elements, got {}", expected.len(), actual.len()));
    }
    if let Some(i) = (0..expected.len()).find(|&i| expected[i] != actual[i]) {
        fail(format_args!(
            "{what}: first difference at element {i} of {}: expected {:?}, got {:?}",
            expected.len(),
            expected[i],
            actual[i]
        ));
    }
}

/// Unwraps a runtime result, failing the PE with the operation's name and the error.
pub trait OrDie<T> {
    /// The value, or the end of this PE with `FAIL PE n: <what>: unexpected error: <e>`.
    fn or_die(self, what: impl Display) -> T;
}

impl<T> OrDie<T> for oxshmem::Result<T> {
    #[track_caller]
    fn or_die(self, what: impl Display) -> T {
        match self {
            Ok(v) => v,
            Err(e) => fail(format_args!("{what}: unexpected error: {e}")),
        }
    }
}

/// Checks that `r` is an error whose text contains every one of `needles`, and prints
/// `ERR <label>: <error text>` on standard output so that the test can check it again.
/// Returns the error.
#[track_caller]
pub fn expect_err<T: Debug>(label: &str, r: oxshmem::Result<T>, needles: &[&str]) -> oxshmem::Error {
    match r {
        Ok(v) => fail(format_args!("{label}: expected an error, got Ok({v:?})")),
        Err(e) => {
            let text = e.to_string();
            for n in needles {
                if !text.contains(n) {
                    fail(format_args!("{label}: error text {text:?} does not contain {n:?}"));
                }
            }
            println!("ERR {label}: {text}");
            e
        }
    }
}

/// One sub-command of a PE program: it gets the arguments after the case name.
pub type Case = fn(&[String]);

/// Runs the case named by the first argument; the rest of the arguments go to the case.
/// An unknown or missing case ends the process with status 2 and the list of cases. First it
/// registers the device layer's variables into the runtime's table.
pub fn dispatch(program: &str, cases: &[(&str, Case)]) {
    // These programs link the device layer: its variables join the runtime's table before
    // init, which so checks them and lists them in SHMEM_INFO (as the C library's init does).
    oxshmem::config::register(&oxshmem_device::config::LAYER);
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let Some(name) = argv.first() else {
        eprintln!("usage: {program} <case> [args...]; cases: {}", names.join(", "));
        std::process::exit(2);
    };
    match cases.iter().find(|c| c.0 == name) {
        Some((_, f)) => f(&argv[1..]),
        None => {
            eprintln!("{program}: unknown case {name:?}; cases: {}", names.join(", "));
            std::process::exit(2);
        }
    }
}

/// Parses argument `i` of a case, with a default when it is absent.
#[track_caller]
pub fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    match args.get(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| fail(format_args!("argument {i} ({s:?}) does not parse"))),
    }
}

/// Initializes the runtime, failing the PE on error.
pub fn init() -> oxshmem::Shmem {
    oxshmem::init().or_die("shmem_init")
}

/// Initializes the runtime with [`oxshmem::ThreadLevel::Multiple`] (for cases that use a helper
/// thread to play a second PE in a one-PE job).
pub fn init_multiple() -> oxshmem::Shmem {
    let (s, level) = oxshmem::init_thread(oxshmem::ThreadLevel::Multiple).or_die("shmem_init_thread");
    check_eq("shmem_init_thread(MULTIPLE): level provided", oxshmem::ThreadLevel::Multiple, level);
    s
}

/// Barrier then finalize, failing the PE on error; every case ends with it.
pub fn finish(shmem: oxshmem::Shmem) {
    shmem.barrier_all().or_die("final shmem_barrier_all");
    shmem.finalize().or_die("shmem_finalize");
}

/// The descriptors of this process whose link in `/proc/self/fd` names a memfd called `name`
/// (e.g. `oxshmem-heap`), with the link text.
pub fn memfds(name: &str) -> Vec<(i32, String)> {
    let want = format!("/memfd:{name}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/fd").into_iter().flatten().flatten() {
        let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(link) = std::fs::read_link(e.path()) else {
            continue;
        };
        let link = link.to_string_lossy().into_owned();
        if link == want || link.starts_with(&format!("{want} ")) {
            out.push((fd, link));
        }
    }
    out
}

/// `fstat` of an open descriptor.
pub fn fstat(fd: i32) -> libc::stat {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: st points to writable storage of the right size; a bad fd gives an error.
    let rc = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if rc != 0 {
        fail(format_args!("fstat({fd}): {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fstat succeeded, so st is initialized.
    unsafe { st.assume_init() }
}

/// The address where this PE's own symmetric heap is mapped: the mapping in
/// `/proc/self/maps` of the inode of our own `oxshmem-heap` memfd (peers' heaps are mapped
/// too, but each from its own memfd, and only our own descriptor stays open).
pub fn own_heap_base() -> usize {
    let fds = memfds("oxshmem-heap");
    if fds.len() != 1 {
        fail(format_args!("expected exactly one open oxshmem-heap memfd, found {fds:?}"));
    }
    let ino = fstat(fds[0].0).st_ino;
    let maps = std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_else(|e| fail(format_args!("reading /proc/self/maps: {e}")));
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6 && f[5].starts_with("/memfd:oxshmem-heap") && f[4].parse::<u64>().ok() == Some(ino) {
            let start = f[0].split('-').next().unwrap_or("");
            return usize::from_str_radix(start, 16).unwrap_or_else(|_| fail(format_args!("bad maps line {line:?}")));
        }
    }
    fail(format_args!("no mapping of the heap memfd (inode {ino}) in /proc/self/maps"))
}
