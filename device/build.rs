//! Declares `cfg(loom)`: the loom models build the crate with `RUSTFLAGS="--cfg loom"`, which
//! swaps the queue code's atomics for loom's (`src/sync.rs`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
    println!("cargo::rerun-if-changed=build.rs");
}
