//! A PE of the MPI-communicator tests (`tests/mpi.rs`): started by `mpiexec.hydra`, `mpirun.openmpi` or
//! the test itself with `OXS_MPI_TEST_PE=<scenario>`.
//!
//! A program of its own (an example target of this crate) rather than the test binary re-run as a
//! `#[test]` that returns at once outside a job: such a "test" passed without testing anything.

use std::ffi::{CString, c_char, c_int, c_void};
use std::fmt::Debug;
use std::time::Duration;

use oxshmem_bootstrap::Bootstrap;
use oxshmem_bootstrap::mpi::{Flavor, Mpi};

const PE_VAR: &str = "OXS_MPI_TEST_PE";
/// The MPI library a PE loads.
const LIB_VAR: &str = "OXS_MPI_TEST_LIB";
/// `mpich` or `openmpi`: the ABI of that library.
const FLAVOR_VAR: &str = "OXS_MPI_TEST_FLAVOR";
/// `local`: load it with `RTLD_LOCAL` instead of `RTLD_GLOBAL`.
const SCOPE_VAR: &str = "OXS_MPI_TEST_SCOPE";

/// The scenario named by the test that started this PE.
fn main() {
    let scenario =
        std::env::var(PE_VAR).unwrap_or_else(|_| panic!("{PE_VAR} is not set: this program is a PE of tests/mpi.rs"));
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
