//! Build script of the runtime. Without the `ofi` feature it does nothing.
//!
//! With `ofi` it builds the libfabric layer: the C shim `src/transport/ofi/shim.c`, which turns
//! libfabric's static-inline calls into real functions, with `cc`, and links `libfabric`. The
//! Rust declarations are committed (`src/transport/ofi/sys.rs`, bindgen's output;
//! `tests/ofi_bindings.rs` regenerates and compares them), so no bindgen or libclang runs here.
//! Instead, `$OUT_DIR/ofi_layout_check.c` — every size, alignment and field offset bindgen
//! recorded in `sys.rs`, and the value of every `FI_*` constant the transport uses, as
//! `_Static_assert`s — is compiled against the headers this build uses: headers that disagree
//! with the committed bindings fail the build.
//! Headers and the library are found through `pkg-config libfabric` when it answers, else in the
//! compiler's default paths; `OXSHMEM_LIBFABRIC_DIR` (a prefix with `include/` and `lib/`)
//! overrides both, to build against another libfabric (e.g. a 2.x in /opt).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "ofi")]
    ofi::build();
}

#[cfg(feature = "ofi")]
mod ofi {
    use std::path::PathBuf;
    use std::process::Command;

    const SHIM_DIR: &str = "src/transport/ofi";

    /// Include and library directories of libfabric.
    fn locate() -> (Vec<PathBuf>, Vec<PathBuf>) {
        println!("cargo:rerun-if-env-changed=OXSHMEM_LIBFABRIC_DIR");
        if let Some(dir) = std::env::var_os("OXSHMEM_LIBFABRIC_DIR") {
            let dir = PathBuf::from(dir);
            let libs = ["lib", "lib64"].iter().map(|l| dir.join(l)).filter(|p| p.exists()).collect();
            return (vec![dir.join("include")], libs);
        }
        let pkg = |flag: &str| -> Option<Vec<PathBuf>> {
            let out = Command::new("pkg-config").args([flag, "libfabric"]).output().ok()?;
            if !out.status.success() {
                return None;
            }
            let text = String::from_utf8(out.stdout).ok()?;
            let prefix = if flag == "--cflags-only-I" { "-I" } else { "-L" };
            Some(text.split_whitespace().filter_map(|t| t.strip_prefix(prefix)).map(PathBuf::from).collect())
        };
        (pkg("--cflags-only-I").unwrap_or_default(), pkg("--libs-only-L").unwrap_or_default())
    }

    pub(super) fn build() {
        let (includes, libdirs) = locate();
        for f in ["shim.c", "shim.h"] {
            println!("cargo:rerun-if-changed={SHIM_DIR}/{f}");
        }

        println!("cargo:rerun-if-changed={SHIM_DIR}/sys.rs");
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let check = out.join("ofi_layout_check.c");
        std::fs::write(&check, layout_check()).expect("writing ofi_layout_check.c");

        let mut cc = cc::Build::new();
        cc.file(format!("{SHIM_DIR}/shim.c"))
            .file(&check)
            .include(SHIM_DIR)
            .warnings(true)
            .flag_if_supported("-Wno-unused-parameter");
        for i in &includes {
            cc.include(i);
        }
        cc.compile("oxshmem_ofi_shim");

        for l in &libdirs {
            println!("cargo:rustc-link-search=native={}", l.display());
        }
        println!("cargo:rustc-link-lib=fabric");
    }

    /// The C type a bindgen constant's Rust type stands for (`None`: an alias, compared as a
    /// wide signed value).
    fn c_type(rust: &str) -> &'static str {
        match rust.rsplit("::").next().unwrap_or(rust) {
            "u8" | "c_uchar" => "unsigned char",
            "i8" | "c_schar" | "c_char" => "signed char",
            "u16" | "c_ushort" => "unsigned short",
            "i16" | "c_short" => "short",
            "u32" | "c_uint" => "unsigned int",
            "i32" | "c_int" => "int",
            "u64" | "c_ulong" | "c_ulonglong" | "usize" => "unsigned long long",
            _ => "long long",
        }
    }

    /// `FI_*` names the transport's Rust code uses.
    fn used_constants() -> std::collections::BTreeSet<String> {
        let mut used = std::collections::BTreeSet::new();
        for e in std::fs::read_dir(SHIM_DIR).expect("reading src/transport/ofi") {
            let p = e.expect("a directory entry").path();
            if p.extension().is_some_and(|x| x == "rs") && p.file_name().is_some_and(|n| n != "sys.rs") {
                println!("cargo:rerun-if-changed={}", p.display());
                let text = std::fs::read_to_string(&p).expect("reading a source file");
                let mut rest = text.as_str();
                while let Some(i) = rest.find("FI_") {
                    let before_ok =
                        i == 0 || !rest.as_bytes()[i - 1].is_ascii_alphanumeric() && rest.as_bytes()[i - 1] != b'_';
                    let tail = &rest[i..];
                    let n = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
                    if before_ok {
                        used.insert(tail[..n].to_string());
                    }
                    rest = &tail[n..];
                }
            }
        }
        used
    }

    /// C assertions that libfabric's headers, as this build sees them, have every layout
    /// bindgen recorded in sys.rs and every used constant's value.
    fn layout_check() -> String {
        let sys = std::fs::read_to_string(format!("{SHIM_DIR}/sys.rs")).expect("reading src/transport/ofi/sys.rs");
        let used = used_constants();
        let mut c = String::from(
            "/* Generated by runtime/build.rs from src/transport/ofi/sys.rs: the committed bindings\n \
             * must match the libfabric headers this build compiles against. A failure here: the\n \
             * headers differ from the release sys.rs was generated from; regenerate it against\n \
             * them (OXSHMEM_BLESS=1 cargo test -p oxshmem --test ofi_bindings). */\n\
             #include \"shim.h\"\n#include <stddef.h>\n\n",
        );
        let num = |t: &str| t.trim().trim_end_matches("usize").parse::<u64>().ok();
        for line in sys.lines().map(str::trim) {
            // ["Size of fi_info"][::std::mem::size_of::<fi_info>() - 88usize];
            if let Some(r) = line.strip_prefix("[\"Size of ") {
                let ty = &r[..r.find('"').unwrap_or(0)];
                let n = r.rsplit(" - ").next().and_then(|t| num(t.trim_end_matches("];")));
                if let (false, Some(n)) = (ty.contains("__bindgen") || ty.is_empty(), n) {
                    c += &format!("_Static_assert(sizeof(struct {ty}) == {n}, \"size of struct {ty}\");\n");
                }
            } else if let Some(r) = line.strip_prefix("[\"Alignment of ") {
                let ty = &r[..r.find('"').unwrap_or(0)];
                let n = r.rsplit(" - ").next().and_then(|t| num(t.trim_end_matches("];")));
                if let (false, Some(n)) = (ty.contains("__bindgen") || ty.is_empty(), n) {
                    c += &format!("_Static_assert(_Alignof(struct {ty}) == {n}, \"alignment of struct {ty}\");\n");
                }
            } else if let Some(r) = line.strip_prefix("[\"Offset of field: ") {
                let name = &r[..r.find('"').unwrap_or(0)];
                let n = r.rsplit(" - ").next().and_then(|t| num(t.trim_end_matches("];")));
                if let (Some((ty, field)), Some(n)) = (name.split_once("::"), n) {
                    // bindgen appends `_` to C names that are Rust keywords (`type` -> `type_`).
                    const KEYWORDS: [&str; 10] =
                        ["type", "ref", "in", "fn", "mod", "move", "match", "loop", "use", "impl"];
                    let field = field.strip_suffix('_').filter(|f| KEYWORDS.contains(f)).unwrap_or(field);
                    if !ty.contains("__bindgen") && !field.contains("__bindgen") {
                        c += &format!(
                            "_Static_assert(offsetof(struct {ty}, {field}) == {n}, \"offset of {ty}.{field}\");\n"
                        );
                    }
                }
            } else if let Some(r) = line.strip_prefix("pub const FI_") {
                // pub const FI_EAGAIN: u32 = 11;
                let Some((name, rest)) = r.split_once(':') else { continue };
                let name = format!("FI_{name}");
                let Some((ty, value)) = rest.split_once('=') else { continue };
                let value = value.trim().trim_end_matches(';').trim();
                if !used.contains(&name) || value.parse::<i128>().is_err() {
                    continue;
                }
                let t = c_type(ty.trim());
                let suffix = if t.starts_with("unsigned") { "ull" } else { "ll" };
                c += &format!("_Static_assert(({t})({name}) == ({t}){value}{suffix}, \"value of {name}\");\n");
            }
        }
        c
    }
}
