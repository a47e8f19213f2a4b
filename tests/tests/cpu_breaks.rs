//! The device library broken on purpose (issue 30): each break is a one-line change a GPU would
//! expose and x86 hides, applied to a copy of `bindings/cuda`, and each must be caught here,
//! without a GPU, by a program, ThreadSanitizer or the CPU target's rules:
//!
//! | break | caught by |
//! | --- | --- |
//! | a P2P signal written with a plain store, no release after the data | ThreadSanitizer, in `cpu_simt.cpp`'s signal-after-data check (a waiter on another agent reads the payload) |
//! | quiet that drains only the calling warp's queue set | `cpu_simt.cpp`'s IBGDA quiet check (a fake NIC completes queue set 1 late) |
//! | a WQE field (the data segment's byte count) in host byte order | the byte comparison with the Rust producer (`wqe_dump.cu`) |
//! | the proxy's `nvshmem_g` result through the device thread's stack | the CPU target's rule: the host proxy refuses a device thread's local memory (a 2-PE `rma.cu` job over the proxy) |
//!
//! And a program that breaks a GPU's rule itself: a kernel that gets 4 KiB into its own local
//! array over IBGDA (the NIC would write it directly, past the queue's 256-byte scratch slots)
//! ends with the device library's recorded error: the array is neither symmetric nor a buffer
//! registered with `nvshmemx_buffer_register`, so no NIC key covers it (issue 31, item 8; until
//! then an implicit key let the work request through, and the software NIC refused it, naming
//! the thread's stack).
//!
//! The unbroken library passes the same checks (`cpu_target.rs`, `cpu_programs.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace root")
}

fn cxx() -> String {
    std::env::var("CXX").ok().filter(|c| !c.is_empty()).unwrap_or_else(|| "c++".into())
}

fn have_cxx() -> bool {
    let ok = Command::new(cxx()).arg("--version").output().is_ok_and(|o| o.status.success());
    oxshmem_test_require::need("c++", ok, "`c++ --version` does not run (apt-get install g++)")
}

/// A copy of the source tree's `bindings/cuda` with `edits` applied (file under
/// `bindings/cuda/src`, text, replacement: the text must occur exactly once), beside links to
/// the rest of the tree the build needs. Its root.
fn broken_tree(name: &str, edits: &[(&str, &str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oxshmem-cpu-breaks-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bindings")).expect("a scratch directory");
    let st = Command::new("cp")
        .arg("-r")
        .arg(root().join("bindings/cuda"))
        .arg(dir.join("bindings/cuda"))
        .status()
        .expect("cp");
    assert!(st.success(), "copying bindings/cuda failed");
    for link in ["bindings/c", "device", "tests"] {
        std::os::unix::fs::symlink(root().join(link), dir.join(link)).expect("a link into the source tree");
    }
    for (file, from, to) in edits {
        let path = dir.join("bindings/cuda/src").join(file);
        let text = std::fs::read_to_string(&path).expect("a source file");
        assert_eq!(text.matches(from).count(), 1, "{file}: the text to break must occur once: {from}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("writing the broken file");
    }
    dir
}

/// Runs `cmd`; (success, everything it printed).
fn output(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// Compiles `bindings/cuda/tests/SRC` of `tree` for the CPU target into `exe`.
fn compile(tree: &Path, src: &str, exe: &Path, extra: &[&str]) {
    let mut c = Command::new(cxx());
    c.args(["-x", "c++", "-std=c++17", "-O1", "-g", "-DOXSHMEMI_TARGET_CPU", "-I"])
        .arg(root().join("bindings/c/include"))
        .arg("-I")
        .arg(root().join("device/include"))
        .args(extra)
        .arg(tree.join("bindings/cuda/tests").join(src))
        .arg("-o")
        .arg(exe)
        .arg("-lpthread");
    let (ok, log) = output(&mut c);
    assert!(ok, "compiling {src} of the broken tree failed:\n{log}");
}

#[test]
fn a_signal_stored_plainly_is_a_race_threadsanitizer_reports() {
    if !have_cxx() {
        return;
    }
    let tree = broken_tree(
        "signal",
        &[("rma.cuh", "        s.store(value, mo_release);", "        *remote = value;  // broken: plain, no release")],
    );
    let exe = tree.join("cpu_simt_tsan");
    compile(&tree, "cpu_simt.cpp", &exe, &["-fsanitize=thread", "-Wno-tsan"]);
    let (ok, out) = output(Command::new(&exe).env("TSAN_OPTIONS", "halt_on_error=1 exitcode=66"));
    assert!(!ok && out.contains("ThreadSanitizer: data race"), "ThreadSanitizer did not report the break:\n{out}");
    let _ = std::fs::remove_dir_all(&tree);
}

#[test]
fn a_quiet_of_one_warps_queues_leaves_the_others_incomplete() {
    if !have_cxx() {
        return;
    }
    let tree = broken_tree(
        "quiet",
        &[(
            "ibgda.cuh",
            "    uint32_t n = g->num_rc * g->n_pes;",
            "    uint32_t n = g->n_pes;  // broken: queue set 0 only",
        )],
    );
    let exe = tree.join("cpu_simt");
    compile(&tree, "cpu_simt.cpp", &exe, &[]);
    let (ok, out) = output(&mut Command::new(&exe));
    assert!(!ok && out.contains("cpu_simt: FAILED IBGDA"), "the quiet check did not catch the break:\n{out}");
    let _ = std::fs::remove_dir_all(&tree);
}

#[test]
fn a_wqe_field_in_host_byte_order_differs_from_the_rust_producer() {
    if !have_cxx() {
        return;
    }
    let tree = broken_tree(
        "wqe",
        &[(
            "mlx5.cuh",
            "    be32(b + OXSHMEM_MLX5_DATA_SEG_OFF_BYTE_COUNT, s.len);",
            "    memcpy(b + OXSHMEM_MLX5_DATA_SEG_OFF_BYTE_COUNT, &s.len, 4);  // broken: host order",
        )],
    );
    let exe = tree.join("wqe_dump");
    compile(&tree, "wqe_dump.cu", &exe, &[]);
    let (ok, cpu) = output(&mut Command::new(&exe));
    assert!(ok, "wqe_dump of the broken tree failed:\n{cpu}");
    let rust = oxshmem_tests::wqe::rust_wqe_dump();
    let differ = cpu.lines().zip(rust.lines()).filter(|(c, r)| c != r).count();
    assert!(differ > 0, "the broken producer writes the Rust producer's bytes:\n{cpu}");
    eprintln!("{differ} lines of the WQE dump differ from the Rust producer's");
    let _ = std::fs::remove_dir_all(&tree);
}

#[test]
fn a_proxy_result_through_the_stack_is_refused() {
    if !have_cxx() {
        return;
    }
    let tree = broken_tree(
        "stack",
        &[(
            "rma.cuh",
            "        out = proxy_fetch(req(PROXY_GET, 0, pe, es, src, nullptr), OXSHMEM_OP_G);",
            "        proxy_do(req(PROXY_GET, 0, pe, es, src, &out), OXSHMEM_OP_G);  // broken: a stack slot\n        \
             fence_system();\n        out = volatile_load(&out);",
        )],
    );
    let lib = tree.join("lib");
    let (ok, log) = output(Command::new("bash").arg(tree.join("bindings/cuda/build-cpu.sh")).arg(&lib));
    assert!(ok, "build-cpu.sh of the broken tree failed:\n{log}");
    let exe = tree.join("rma");
    let (ok, log) = output(
        Command::new(oxshmem_tests::oshnvcc())
            .args(["--target", "cpu"])
            .arg(root().join("tests/cuda/rma.cu"))
            .arg("-o")
            .arg(&exe)
            .env("OXSHMEM_CPU_TARGET", lib.join("libnvshmem_device.a")),
    );
    assert!(ok, "oshnvcc against the broken archive failed:\n{log}");
    let (ok, out) = output(
        Command::new(oxshmem_tests::oshrun())
            .args(["-n", "2"])
            .arg(&exe)
            .env("OXSHMEM_DEVICE_CHANNEL", "proxy")
            .env("CUTEST_TIMEOUT", "60")
            .env("OXSHMEM_CPU_DRIVER", lib.join("emucuda/libcuda.so")),
    );
    assert!(
        !ok && out.contains("get (nvshmem_g) result at") && out.contains("is the local memory (stack) of block"),
        "the CPU target did not refuse the stack slot:\n{out}"
    );
    let _ = std::fs::remove_dir_all(&tree);
}

#[test]
fn a_nic_write_into_a_threads_local_array_is_refused() {
    if !have_cxx() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("oxshmem-cpu-breaks-{}-nic", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let src = dir.join("local_get.cu");
    std::fs::write(
        &src,
        r#"#include <nvshmem.h>
#include <cstdio>
__global__ void k(char *sym, int *out) {
    char local[4096];  // a thread's local memory: no NIC reaches it on a GPU
    nvshmem_getmem(local, sym, sizeof local, (nvshmem_my_pe() + 1) % nvshmem_n_pes());
    *out = local[17];
}
int main() {
    nvshmem_init();
    char *sym = (char *)nvshmem_calloc(4096, 1);
    int *out;
    cudaMalloc(&out, sizeof(int));
    nvshmem_barrier_all();
    k<<<1, 1>>>(sym, out);
    cudaDeviceSynchronize();
    printf("PE %d: the get into a local array returned\n", nvshmem_my_pe());
    nvshmem_finalize();
    return 0;
}
"#,
    )
    .expect("writing the program");
    let exe = dir.join("local_get");
    let (ok, log) =
        output(Command::new(oxshmem_tests::oshnvcc()).args(["--target", "cpu"]).arg(&src).arg("-o").arg(&exe));
    assert!(ok, "oshnvcc failed:\n{log}");
    let (ok, out) = output(
        Command::new(oxshmem_tests::oshrun())
            .args(["-n", "2", "--timeout", "60"])
            .arg(&exe)
            .env("OXSHMEM_DEVICE_CHANNEL", "ibgda"),
    );
    assert!(
        !ok && out.contains("nvshmem_finalize: device nvshmem_get (block 0, thread 0): the local buffer at ")
            && out.contains("(+4096 bytes) is neither in the symmetric heap nor registered"),
        "the device library did not refuse the thread's local array:\n{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
