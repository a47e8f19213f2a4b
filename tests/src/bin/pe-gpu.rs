//! PE program for the Rust GPU device (`oxshmem_device::cuda::GpuDevice`, feature `cuda`):
//! `pe-gpu <case> MODULE`, where MODULE is the image `GpuDevice::load_module` loads: on a GPU,
//! `tests/cuda/modules/gpu_ring.cu` built as `gpu_ring.fatbin`; under the emulated driver
//! (`tests/emucuda`), a file holding `OXEMUCUDA-HOST-SO\n` and the path of
//! `tests/emucuda/ring_kernel.c` built as a shared object. Both give kernels `ring_put` and
//! `bad_pe`.
//!
//! Cases:
//! - `ring MODULE [THREADS]`: a zeroed GPU buffer of `n * THREADS` u64 on every PE; kernel
//!   `ring_put` (THREADS threads) stores into the next PE's buffer; after `synchronize` and a
//!   barrier every PE finds its predecessor's values, host `put`/`get` into and from every PE's
//!   copy agree, out-of-range host access fails clearly, and `free` gives the space back.
//! - `errors MODULE`: a kernel that puts to a PE out of range makes `synchronize` fail naming
//!   the operation, the thread and the PE; a launch with the wrong arguments and an unknown
//!   kernel fail before reaching the GPU.
//! - `no-gpu`: `GpuDevice::init` where no driver is found fails with the driver's message.

use oxshmem_device::DeviceError;
use oxshmem_device::cuda::{GpuDevice, KernelArg, LaunchConfig};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, check_slice, dispatch, fail, finish, init};

fn main() {
    dispatch("pe-gpu", &[("ring", ring), ("errors", errors), ("no-gpu", no_gpu)]);
}

/// The value, or the end of this PE naming `what` and the error.
#[track_caller]
fn ok<T>(r: Result<T, DeviceError>, what: &str) -> T {
    r.map_err(oxshmem::Error::from).or_die(what)
}

/// The error, or the end of this PE; checks that its text holds every needle and prints it.
#[track_caller]
fn err<T>(label: &str, r: Result<T, DeviceError>, needles: &[&str]) {
    match r {
        Ok(_) => fail(format_args!("{label}: expected an error")),
        Err(e) => {
            let text = e.to_string();
            for n in needles {
                check(text.contains(n), format_args!("{label}: error {text:?} contains {n:?}"));
            }
            println!("ERR {label}: {text}");
        }
    }
}

fn module_image(args: &[String]) -> Vec<u8> {
    let path: String = arg(args, 0, String::new());
    std::fs::read(&path).unwrap_or_else(|e| fail(format_args!("reading the module {path:?}: {e}")))
}

fn ring(args: &[String]) {
    let image = module_image(args);
    let threads: u32 = arg(args, 1, 32);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let dev = ok(GpuDevice::init(&shmem), "GpuDevice::init");
    for pe in 0..n {
        check(dev.pe().peer_base(pe) != 0, format_args!("PE {pe}'s GPU heap is mapped here"));
    }
    let t = threads as usize;
    let buf = ok(dev.alloc::<u64>(&shmem, n * t), "alloc");
    let other = ok(dev.alloc::<u32>(&shmem, 4 * n), "alloc (second buffer)");
    check(other.addr() > buf.addr(), "the second buffer lies after the first");
    check_slice("a fresh buffer is zeroed", &vec![0u64; n * t], &ok(buf.to_vec(), "to_vec"));
    shmem.barrier_all().or_die("barrier");

    let module = ok(dev.load_module(&image), "load_module");
    check(module.uses_nvshmem(), "the module holds the device library");
    let k = ok(module.kernel("ring_put"), "kernel ring_put");
    if let Some(sizes) = k.param_sizes() {
        check_slice("ring_put's parameter sizes", &[8, 4, 4], sizes);
    }
    let args = [buf.arg(), KernelArg::I32(me as i32), KernelArg::I32(n as i32)];
    ok(k.launch(LaunchConfig::threads(threads), &args), "launch ring_put");
    ok(dev.synchronize(), "synchronize");
    shmem.barrier_all().or_die("barrier");
    let prev = (me + n - 1) % n;
    let got = ok(buf.to_vec(), "to_vec");
    for (i, &v) in got.iter().enumerate() {
        let want = if i / t == prev { (prev as u64 + 1) * 1000 + (i % t) as u64 } else { 0 };
        check_eq(format_args!("slot {i} after ring_put"), want, v);
    }
    println!("PE {me}: ring_put from PE {prev} arrived ({t} threads)");

    // Host RMA on every PE's copy of the second buffer: slot me of each.
    shmem.barrier_all().or_die("barrier");
    for pe in 0..n {
        let v = [me as u32 * 100 + pe as u32; 4];
        ok(other.put(pe, 4 * me, &v), "put");
    }
    shmem.barrier_all().or_die("barrier");
    for pe in 0..n {
        let mut v = [0u32; 4];
        ok(other.get(pe, 4 * me, &mut v), "get");
        check_eq(format_args!("get of my slot on PE {pe}"), [me as u32 * 100 + pe as u32; 4], v);
    }
    let mine = ok(other.to_vec(), "to_vec");
    for from in 0..n {
        check_slice(
            format_args!("slot of PE {from}"),
            &[from as u32 * 100 + me as u32; 4],
            &mine[4 * from..4 * from + 4],
        );
    }
    err("put past the end", other.put(0, 4 * n - 1, &[1, 2]), &["nvshmem_putmem", "outside the buffer of"]);
    err("get from a PE out of range", other.get(n + 3, 0, &mut [0u32; 1]), &["out of range"]);
    println!("PE {me}: host put and get on every PE's GPU buffer agree");

    drop(k);
    drop(module);
    ok(other.free(&shmem), "free");
    ok(buf.free(&shmem), "free");
    let again = ok(dev.alloc::<u64>(&shmem, n * t), "alloc after free");
    check_eq("an allocation after freeing reuses the space", buf_addr_for(&dev), again.addr());
    ok(again.free(&shmem), "free");
    ok(dev.finalize(&shmem), "GpuDevice::finalize");
    finish(shmem);
}

/// Where the first allocation of the heap lands (the start of its allocator's range).
fn buf_addr_for(dev: &GpuDevice) -> u64 {
    dev.pe().heap().base() + oxshmem_device::cuda::node::RESERVED as u64
}

fn errors(args: &[String]) {
    let image = module_image(args);
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let dev = ok(GpuDevice::init(&shmem), "GpuDevice::init");
    let buf = ok(dev.alloc::<u64>(&shmem, 8), "alloc");
    let module = ok(dev.load_module(&image), "load_module");
    err("unknown kernel", module.kernel("no_such_kernel"), &["cuModuleGetFunction(no_such_kernel)", "NOT_FOUND"]);
    let ring = ok(module.kernel("ring_put"), "kernel ring_put");
    if ring.param_sizes().is_some() {
        err("too few arguments", ring.launch(LaunchConfig::threads(1), &[buf.arg()]), &["ring_put takes 3 parameters"]);
        let wrong = [buf.arg(), KernelArg::I64(0), KernelArg::I32(1)];
        err(
            "a wrong argument size",
            ring.launch(LaunchConfig::threads(1), &wrong),
            &["3 arguments were given (8, 8, 4 bytes)"],
        );
    }
    err("an empty grid", ring.launch(LaunchConfig::blocks(0, 1), &[]), &["empty dimension"]);
    err("a bad module", dev.load_module(b"not a module"), &["loading a CUDA module", "cuModuleLoadData"]);
    let bad = ok(module.kernel("bad_pe"), "kernel bad_pe");
    let pe = n as i32 + 5;
    ok(bad.launch(LaunchConfig::threads(1), &[buf.arg(), KernelArg::I32(pe)]), "launch bad_pe");
    let want_pe = format!("PE {pe} is out of range (0..{n})");
    err("a put to a PE out of range", dev.synchronize(), &["nvshmem_p", "block 0, thread 0", &want_pe]);
    check(dev.error().is_some(), "the error stays recorded");
    println!("PE {me}: errors reported");
    drop(bad);
    drop(ring);
    drop(module);
    err("finalize after a device error", dev.finalize(&shmem), &[&want_pe]);
    finish(shmem);
}

fn no_gpu(_: &[String]) {
    let shmem = init();
    err("init without a driver", GpuDevice::init(&shmem), &["device init", "no CUDA driver"]);
    finish(shmem);
}
