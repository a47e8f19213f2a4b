//! PE program for the Rust GPU device (`oxshmem_device::cuda::GpuDevice`, feature `cuda`):
//! `pe-gpu <case> MODULE`, where MODULE is the image `GpuDevice::load_module` loads: on a GPU,
//! `tests/cuda/modules/gpu_ring.cu` built as `gpu_ring.fatbin`; under the emulated driver
//! (`tests/emucuda`), a file holding `OXEMUCUDA-HOST-SO\n` and the path of the same source
//! built for the CPU target as a shared object (`oshnvcc --target cpu -shared`). Both give
//! kernels `ring_put` and `bad_pe`, which run the device library's own code.
//!
//! Cases (over the channel `OXSHMEM_DEVICE_CHANNEL` names):
//! - `ring MODULE [THREADS]`: a zeroed GPU buffer of `n * THREADS` u64 on every PE; kernel
//!   `ring_put` (THREADS threads) stores into the next PE's buffer; after `synchronize` and a
//!   barrier every PE finds its predecessor's values; kernel `ring_add` adds and fetch-adds on
//!   the next PE's counters (each fetched value once) and a host fetch-add on GPU memory runs
//!   the module's atomic kernel; host `put`/`get` into and from every PE's copy agree,
//!   out-of-range host access fails clearly, and `free` gives the space back.
//! - `errors MODULE`: a kernel that puts to a PE out of range makes `synchronize` fail naming
//!   the operation, the thread and the PE; a launch with the wrong arguments and an unknown
//!   kernel fail before reaching the GPU.
//! - `no-gpu`: `GpuDevice::init` where no driver is found fails with the driver's message.
//! - `host-ops`: the runtime's ordinary pointer-based routines (`oxshmem::raw`, the signal
//!   routines) on `GpuBuf` memory, which the runtime routes to the GPU heap's segment: put, get,
//!   p, g, strided put and get into and out of the neighbours' copies, atomics from every PE on
//!   one word, put with signal and the signal wait, wait_until, test and the `_all/_any/_some`
//!   tests, `shmem_ptr`, and a routine that does not reach GPU memory saying so. Under the
//!   emulated driver only: the host atomic kernel it registers is CPU atomics on the emulated
//!   GPU memory, which is host memory (as `tests/nvshmem/emu_device_lib.h` for the C tests).

use oxshmem_device::DeviceError;
use oxshmem_device::cuda::{GpuDevice, KernelArg, LaunchConfig};
use oxshmem_tests::pe::{OrDie, arg, check, check_eq, check_slice, dispatch, fail, finish, init};

fn main() {
    dispatch("pe-gpu", &[("ring", ring), ("errors", errors), ("no-gpu", no_gpu), ("host-ops", host_ops)]);
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
    // Where the driver says each table lives (the test holds the IBGDA channel's to issue 31,
    // item 4: the descriptors its producers read-modify-write in GPU memory, the queues the NIC
    // reads in host memory).
    for (what, on_gpu) in dev.pe().placement().unwrap_or_else(|e| fail(format_args!("placement: {e}"))) {
        println!("PE {me}: placement: {what} in {} memory", if on_gpu { "GPU" } else { "host" });
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

    // Atomics from kernels (over the proxy and IBGDA the host side runs them), then from the host.
    let counter = ok(dev.alloc::<u64>(&shmem, 2), "alloc (counters)");
    let olds = ok(dev.alloc::<u64>(&shmem, t), "alloc (fetched values)");
    let k = ok(module.kernel("ring_add"), "kernel ring_add");
    let args = [counter.arg(), olds.arg(), KernelArg::I32(me as i32), KernelArg::I32(n as i32)];
    ok(k.launch(LaunchConfig::threads(threads), &args), "launch ring_add");
    ok(dev.synchronize(), "synchronize");
    shmem.barrier_all().or_die("barrier");
    check_slice("counters after ring_add", &[t as u64, t as u64], &ok(counter.to_vec(), "to_vec"));
    let mut fetched = ok(olds.to_vec(), "to_vec");
    fetched.sort_unstable();
    check_slice("the values ring_add's fetch-adds returned", &(0..t as u64).collect::<Vec<_>>(), &fetched);
    shmem.barrier_all().or_die("barrier");
    // SAFETY: the counter is a symmetric GPU-heap word; the runtime routes it to the segment.
    let old = unsafe {
        oxshmem::raw::atomic(counter.as_mut_ptr(), oxshmem::raw::AmoOp::FetchAdd(1), ((me + 1) % n) as i32, "fetch_add")
    }
    .or_die("host fetch-add on GPU memory");
    check_eq("the host fetch-add's prior value (the neighbour's count)", t as u64, old);
    shmem.barrier_all().or_die("barrier");
    check_eq("counter after every PE's host fetch-add", t as u64 + 1, ok(counter.to_vec(), "to_vec")[0]);
    println!("PE {me}: atomics from kernels and the host on GPU memory agree");
    ok(olds.free(&shmem), "free");
    ok(counter.free(&shmem), "free");

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

/// The device library's host-callable AMO kernel, as the emulated driver can run it: CPU
/// atomics on the word, which is host memory there (`tests/nvshmem/emu_device_lib.h`).
///
/// # Safety
/// `addr` is a naturally aligned word of the flags' width in a GPU heap mapped here (host
/// memory under the emulated driver); `old` is writable.
unsafe extern "C" fn emu_amo(addr: u64, flags: u32, value: u64, cond: u64, old: *mut u64) -> i32 {
    use oxshmem::raw::{AmoOp, Width};
    use oxshmem_device::channel::proxy::amo;
    let op = match flags as u16 & amo::OP_MASK {
        amo::FETCH => AmoOp::Fetch,
        amo::SET => AmoOp::Set(value),
        amo::SWAP => AmoOp::Swap(value),
        amo::COMPARE_SWAP => AmoOp::CompareSwap { cond, value },
        amo::FETCH_ADD => AmoOp::FetchAdd(value),
        amo::FETCH_AND => AmoOp::FetchAnd(value),
        amo::FETCH_OR => AmoOp::FetchOr(value),
        _ => AmoOp::FetchXor(value),
    };
    let width = if flags as u16 & amo::W64 != 0 { Width::W64 } else { Width::W32 };
    // SAFETY: the segment passes a naturally aligned word of a GPU heap mapped here, which the
    // emulated driver backs with host memory; `old` is the caller's live local.
    unsafe { old.write(oxshmem::transport::shm::atomic_at(addr as *mut u8, width, op)) };
    0
}

fn host_ops(_: &[String]) {
    use oxshmem::raw::{self, AmoOp};
    use oxshmem::{Cmp, CmpValues};
    let shmem = init();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    // SAFETY: emu_amo lives for the whole process and does the operation atomically.
    unsafe { oxshmem_device::cuda::segment::set_amo_kernel(emu_amo) };
    let dev = ok(GpuDevice::init(&shmem), "GpuDevice::init");
    // The tables device code reads on every operation, and the team table, are GPU memory
    // (issue 31, item 4); the device state itself is pinned host memory (the host reads it).
    let placement = dev.pe().placement().unwrap_or_else(|e| fail(format_args!("placement: {e}")));
    for (what, on_gpu) in placement {
        check_eq(format_args!("{what} in GPU memory"), !matches!(what, "device state" | "IBGDA queues"), on_gpu);
    }
    let data = ok(dev.alloc::<u64>(&shmem, 16), "alloc data");
    let words = ok(dev.alloc::<u32>(&shmem, 4), "alloc words");
    let sig = ok(dev.alloc::<u64>(&shmem, 1), "alloc sig");
    let d = data.as_mut_ptr();
    let tag = |pe: usize, i: usize| (pe as u64 + 1) * 1000 + i as u64;

    // put and p into the next PE's copy; get and g back, from this PE's and the previous one's.
    let mine: Vec<u64> = (0..4).map(|i| tag(me, i)).collect();
    // SAFETY: `mine` holds 32 bytes; the destination is GPU memory the runtime routes.
    unsafe { raw::putmem(d.cast(), mine.as_ptr().cast(), 32, next as i32) }.or_die("putmem to GPU memory");
    // SAFETY: as above.
    unsafe { raw::p(d.wrapping_add(4), tag(me, 4), next as i32) }.or_die("p to GPU memory");
    shmem.barrier_all().or_die("barrier");
    let mut got = vec![0u64; 5];
    // SAFETY: `got` holds 40 bytes.
    unsafe { raw::getmem(got.as_mut_ptr().cast(), d.cast_const().cast(), 40, me as i32) }.or_die("getmem");
    check_slice("put and p from the previous PE", &(0..5).map(|i| tag(prev, i)).collect::<Vec<_>>(), &got);
    check_slice("the same through GpuBuf::to_vec", &got, &ok(data.to_vec(), "to_vec")[..5]);
    // SAFETY: d + 2 is an element of the buffer.
    let g = unsafe { raw::g(d.wrapping_add(2).cast_const(), next as i32) }.or_die("g from GPU memory");
    check_eq("g of the next PE's element 2", tag(me, 2), g);

    // Strided: every other element of a local array into elements 8, 11, 14 of the next PE's
    // copy; back with a stride of 3 into every second element here.
    let src: Vec<u64> = (0..6).map(|i| tag(me, 100 + i)).collect();
    // SAFETY: src holds the 3 elements at stride 2; the destination's extent is checked.
    unsafe { raw::iput(d.wrapping_add(8).cast(), src.as_ptr().cast(), 3, 2, 8, 3, next as i32) }
        .or_die("iput to GPU memory");
    shmem.barrier_all().or_die("barrier");
    let mut back = vec![0u64; 6];
    // SAFETY: back holds 3 elements at stride 2.
    unsafe { raw::iget(back.as_mut_ptr().cast(), d.wrapping_add(8).cast_const().cast(), 2, 3, 8, 3, me as i32) }
        .or_die("iget from GPU memory");
    let want = [tag(prev, 100), 0, tag(prev, 102), 0, tag(prev, 104), 0];
    check_slice("iput then iget", &want, &back);

    // Atomics: every PE adds its number + 1 to PE 0's element 15, and swaps into its own word.
    let ctr = d.wrapping_add(15);
    // SAFETY: ctr is an aligned element of the buffer; the runtime checks the rest.
    unsafe { raw::atomic(ctr, AmoOp::FetchAdd(me as u64 + 1), 0, "shmem_atomic_fetch_add") }.or_die("fetch-add");
    shmem.barrier_all().or_die("barrier");
    // SAFETY: as above.
    let sum = unsafe { raw::atomic(ctr, AmoOp::Fetch, 0, "shmem_atomic_fetch") }.or_die("fetch");
    check_eq("the sum of every PE's fetch-add", (n * (n + 1) / 2) as u64, sum);
    let w = words.as_mut_ptr();
    // SAFETY: w is an aligned u32 of the buffer.
    let old = unsafe { raw::atomic(w, AmoOp::CompareSwap { cond: 0, value: 5 }, me as i32, "cswap") }.or_die("cswap");
    check_eq("compare-swap's old value", 0u32, old);
    // SAFETY: as above.
    let misaligned = unsafe { raw::atomic(w.cast::<u8>().wrapping_add(2).cast::<u32>(), AmoOp::Fetch, me as i32, "f") };
    check(misaligned.is_err_and(|e| e.to_string().contains("aligned")), "a misaligned atomic on GPU memory fails");
    shmem.barrier_all().or_die("barrier");

    // Put with signal to the next PE; the signal wait here sees the data from the previous one.
    let payload = [tag(me, 200)];
    // SAFETY: payload holds 8 bytes; the destination and the signal are GPU memory.
    unsafe {
        oxshmem::signal::raw::put_signal(
            d.wrapping_add(6).cast(),
            payload.as_ptr().cast(),
            8,
            sig.as_mut_ptr(),
            me as u64 + 1,
            0,
            next as i32,
            "shmem_put_signal",
        )
    }
    .or_die("put_signal to GPU memory");
    // SAFETY: sig is an aligned u64 of the GPU heap.
    let v = unsafe { oxshmem::signal::raw::signal_wait_until(sig.as_mut_ptr(), Cmp::Eq, prev as u64 + 1) }
        .or_die("signal_wait_until on GPU memory");
    check_eq("the signal's value", prev as u64 + 1, v);
    // SAFETY: as above.
    let f = unsafe { oxshmem::signal::raw::signal_fetch(sig.as_mut_ptr()) }.or_die("signal_fetch");
    check_eq("signal_fetch", prev as u64 + 1, f);
    // SAFETY: d + 6 is an element of the buffer.
    let landed = unsafe { raw::g(d.wrapping_add(6).cast_const(), me as i32) }.or_die("g");
    check_eq("the data before its signal", tag(prev, 200), landed);

    // Waits and tests on u32 words: the previous PE sets word 1 and word 3 of this PE.
    shmem.barrier_all().or_die("barrier");
    // SAFETY: w + 1 is an element of the buffer.
    check(!unsafe { raw::test(w.wrapping_add(1).cast_const(), Cmp::Eq, 7) }.or_die("test"), "not yet");
    shmem.barrier_all().or_die("barrier");
    // SAFETY: as above.
    unsafe { raw::p(w.wrapping_add(1), 7u32, next as i32) }.or_die("p word 1");
    // SAFETY: as above.
    unsafe { raw::wait_until(w.wrapping_add(1).cast_const(), Cmp::Eq, 7) }.or_die("wait_until on GPU memory");
    // SAFETY: as above.
    unsafe { raw::p(w.wrapping_add(3), 9u32, next as i32) }.or_die("p word 3");
    // SAFETY: w holds 4 words.
    let any = unsafe { raw::wait_until_any(w.cast_const(), 4, Some(&[1, 1, 1, 0]), Cmp::Eq, CmpValues::One(9)) }
        .or_die("wait_until_any");
    check_eq("wait_until_any's index", Some(3), any);
    // SAFETY: as above.
    let all =
        unsafe { raw::test_all(w.cast_const(), 4, None, Cmp::Ne, CmpValues::Each(&[1, 0, 1, 0])) }.or_die("test_all");
    check(all, "words are 5, 7, 0, 9");
    let mut idx = [0usize; 4];
    // SAFETY: as above.
    let k =
        unsafe { raw::test_some(w.cast_const(), 4, &mut idx, None, Cmp::Gt, CmpValues::One(6)) }.or_die("test_some");
    check_slice("test_some's indices", &[1, 3], &idx[..k]);
    // SAFETY: as above.
    unsafe { raw::wait_until_all(w.cast_const(), 4, Some(&[0, 0, 1, 0]), Cmp::Ge, CmpValues::One(5)) }
        .or_die("wait_until_all");

    // shmem_ptr gives the peer's heap as mapped here; a lock on GPU memory says it is not reached.
    check(!raw::ptr(d.cast_const().cast(), next as i32).is_null(), "shmem_ptr into the next PE's GPU heap");
    // SAFETY: the lock word is checked before use.
    let lock = unsafe { oxshmem::lock::test_lock(d.wrapping_add(12).cast()) };
    check(lock.is_err_and(|e| e.to_string().contains("GPU symmetric heap")), "a lock on GPU memory names the GPU heap");
    shmem.barrier_all().or_die("barrier");
    ok(sig.free(&shmem), "free sig");
    ok(words.free(&shmem), "free words");
    ok(data.free(&shmem), "free data");
    ok(dev.finalize(&shmem), "finalize");
    // SAFETY: not GPU memory any more to the runtime: the segment is gone with the device.
    let gone = unsafe { raw::g(d.cast_const(), me as i32) };
    check(gone.is_err_and(|e| e.to_string().contains("not symmetric")), "after finalize the GPU heap is not routed");
    println!("PE {me}: host routines on GPU memory agree");
    finish(shmem);
}
