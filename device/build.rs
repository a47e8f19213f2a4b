//! Declares `cfg(loom)`: the loom models build the crate with `RUSTFLAGS="--cfg loom"`, which
//! swaps the queue code's atomics for loom's (`src/sync.rs`). With the feature `verbs`, writes
//! the bindings of the few `mlx5dv_*` calls the DEVX path makes (rdma-core's
//! `infiniband/mlx5dv.h`; rdma-sys has no mlx5dv), whose verbs types are rdma-sys's.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
    println!("cargo::rerun-if-changed=build.rs");
    #[cfg(feature = "verbs")]
    mlx5dv();
}

#[cfg(feature = "verbs")]
fn mlx5dv() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let bindings = bindgen::Builder::default()
        .header_contents("mlx5dv_wrapper.h", "#include <infiniband/mlx5dv.h>\n")
        .allowlist_function("mlx5dv_is_supported")
        .allowlist_function("mlx5dv_open_device")
        .allowlist_function("mlx5dv_query_device")
        .allowlist_function("mlx5dv_init_obj")
        .allowlist_function("mlx5dv_devx_.*")
        .allowlist_type("mlx5dv_context_attr")
        .allowlist_type("mlx5dv_context")
        .allowlist_type("mlx5dv_obj")
        .allowlist_type("mlx5dv_pd")
        .allowlist_var("MLX5DV_CONTEXT_FLAGS_DEVX")
        .allowlist_var("MLX5DV_UAR_ALLOC_TYPE_.*")
        // The verbs types are rdma-sys's (one definition of ibv_context, ibv_pd, …).
        .blocklist_type("ibv_.*")
        .blocklist_type("pthread_.*")
        .opaque_type("mlx5_wqe_.*")
        .raw_line("#[allow(unused_imports)] use rdma_sys::*;")
        .layout_tests(false)
        .wrap_unsafe_ops(true)
        .derive_default(true)
        .generate()
        .expect("bindgen of infiniband/mlx5dv.h (is libibverbs-dev installed, and libclang-dev?)");
    bindings.write_to_file(out.join("mlx5dv.rs")).expect("writing mlx5dv.rs");
    println!("cargo::rustc-link-lib=mlx5");
}
