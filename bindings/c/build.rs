//! Generates the C ABI from `types.tsv` and `gen/` (see `gen/mod.rs`): the exported typed
//! functions (`$OUT_DIR/generated.rs`, included by the crate), the headers (`$OUT_DIR/include/`,
//! which the tests compare with the checked-in `include/`), and the C routines (`c_impl.c`,
//! compiled here with `csrc/longdouble.c`). Also sets the shared library's SONAME.

#[path = "gen/mod.rs"]
mod generator;

use std::path::{Path, PathBuf};

fn write(path: &Path, text: &str) {
    // Unchanged files keep their time stamps, so that nothing downstream rebuilds.
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    for f in
        ["types.tsv", "gen/mod.rs", "gen/ops.rs", "gen/nvshmem.rs", "gen/fortran.rs", "csrc/longdouble.c", "build.rs"]
    {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-changed=gen/nvshmem_device.rs\ncargo:rerun-if-changed=../cuda/device_api.tsv");
    let text = std::fs::read_to_string(dir.join("types.tsv")).expect("reading types.tsv");
    let types = generator::parse_types(&text).unwrap_or_else(|e| panic!("{e}"));
    let version = std::env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION");
    let g = generator::generate(&types, &version);

    let inc = out.join("include");
    std::fs::create_dir_all(inc.join("mpp")).expect("creating $OUT_DIR/include/mpp");
    write(&out.join("generated.rs"), &g.rust);
    write(&inc.join("shmem.h"), &g.shmem_h);
    write(&inc.join("shmemx.h"), &g.shmemx_h);
    write(&inc.join("mpp/shmem.h"), &g.mpp_shmem_h);
    write(&inc.join("mpp/shmemx.h"), &g.mpp_shmemx_h);
    write(&inc.join("nvshmem.h"), &g.nvshmem_h);
    write(&inc.join("nvshmemx.h"), &g.nvshmemx_h);
    write(&inc.join("nvshmem_device.h"), &g.nvshmem_device_h);
    std::fs::create_dir_all(out.join("cuda")).expect("creating $OUT_DIR/cuda");
    for (name, text) in &g.cuda_files {
        write(&out.join("cuda").join(name), text);
    }
    write(&out.join("c_impl.c"), &g.c_impl);
    write(&out.join("generic_check.c"), &g.generic_check_c);
    write(&out.join("generic_check.cc"), &g.generic_check_cc);
    write(&out.join("api.tsv"), &g.api_list);
    std::fs::create_dir_all(out.join("fortran")).expect("creating $OUT_DIR/fortran");
    write(&out.join("fortran.rs"), &g.fortran_rust);
    write(&out.join("fortran/shmem.fh"), &g.shmem_fh);

    cc::Build::new()
        .file(out.join("c_impl.c"))
        .file(dir.join("csrc/longdouble.c"))
        .include(&inc)
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("oxshmem_c_shim");

    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liboxshmem.so.1");
}
