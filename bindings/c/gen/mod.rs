//! The generator of oxshmem's C ABI, run by `build.rs`.
//!
//! Input: `types.tsv` (the types and the families each belongs to) and the tables of
//! [`ops`] (the typed routine templates, the untyped prototypes, the constants). Output, all
//! from that one source: the exported Rust functions of every typed family (`generated.rs`),
//! the headers (`shmem.h`, `shmemx.h`, `mpp/shmem.h`, `mpp/shmemx.h`), the C file with the few
//! routines Rust cannot define (`c_impl.c`), and two test inputs that call every `_Generic`
//! association and C++ overload (`generic_check.c`, `generic_check.cc`).
//!
//! It must never emit a prototype without an export, or the reverse: both come from the same
//! [`Func`] list, and the untyped exports written by hand are held to their prototype by a
//! compile-time signature check in `generated.rs`.
//!
//! The deprecated Fortran API (`shmem.fh` and its gfortran-named exports, `fortran.rs`) comes
//! from the table of [`fortran`] in the same way.

pub(crate) mod fortran;
pub(crate) mod nvshmem;
pub(crate) mod nvshmem_device;
pub(crate) mod ops;

use std::collections::HashSet;
use std::fmt::Write as _;

use ops::{API, Api, CONSTANTS, Header, LEGACY, OPS, Op, Special};

/// One row of `types.tsv`.
#[derive(Debug, Clone)]
pub(crate) struct Ty {
    /// TYPENAME (`int`, `longdouble`) or SIZE (`8`, `mem`).
    pub(crate) name: String,
    /// C type.
    pub(crate) c: String,
    /// Rust type.
    pub(crate) rust: String,
    /// Size in bytes.
    pub(crate) size: usize,
    /// The distinct C type on LP64 (`-` for the sized rows).
    pub(crate) canon: String,
    /// Families.
    pub(crate) fams: Vec<String>,
}

impl Ty {
    fn has(&self, fam: &str) -> bool {
        self.fams.iter().any(|f| f == fam)
    }

    /// A type of NVSHMEM's families only (`half`, `bfloat16`): shmem.h does not know it.
    fn nv_only(&self) -> bool {
        self.fams.iter().all(|f| f.starts_with("nv_"))
    }
}

/// Parses `types.tsv`.
pub(crate) fn parse_types(text: &str) -> Result<Vec<Ty>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 6 {
            return Err(format!("types.tsv line {}: {} columns, expected 6", i + 1, f.len()));
        }
        let size = f[3].parse().map_err(|e| format!("types.tsv line {}: size {:?}: {e}", i + 1, f[3]))?;
        out.push(Ty {
            name: f[0].into(),
            c: f[1].into(),
            rust: f[2].into(),
            size,
            canon: f[4].into(),
            fams: f[5].split_whitespace().map(String::from).collect(),
        });
    }
    Ok(out)
}

/// One C parameter, before `TYPE` is replaced.
#[derive(Debug, Clone)]
struct Param {
    konst: bool,
    base: String,
    ptr: bool,
    /// A pointer to a pointer (`void **args`).
    ptr2: bool,
    name: String,
}

impl Param {
    fn variadic(&self) -> bool {
        self.name == "..."
    }

    fn c(&self, t: Option<&Ty>) -> String {
        if self.variadic() {
            return "...".into();
        }
        let base = if self.base == "TYPE" { &t.expect("TYPE needs a type").c } else { &self.base };
        let konst = if self.konst { "const " } else { "" };
        let stars = if self.ptr2 { "**" } else { "*" };
        if self.ptr { format!("{konst}{base} {stars}{}", self.name) } else { format!("{konst}{base} {}", self.name) }
    }

    /// The C type alone (for casts in the generic checks).
    fn c_type(&self, t: Option<&Ty>) -> String {
        let base = if self.base == "TYPE" { &t.expect("TYPE needs a type").c } else { &self.base };
        let konst = if self.konst { "const " } else { "" };
        let stars = if self.ptr2 { "**" } else { "*" };
        if self.ptr { format!("{konst}{base} {stars}") } else { format!("{konst}{base}") }
    }

    fn rust_type(&self, t: Option<&Ty>) -> String {
        let base = match self.base.as_str() {
            "TYPE" => t.expect("TYPE needs a type").rust.as_str(),
            "int" => "c_int",
            "long" => "c_long",
            "size_t" => "usize",
            "ptrdiff_t" => "isize",
            "uint64_t" => "u64",
            "void" => "c_void",
            "char" => "c_char",
            "shmem_team_t" => "ShmemTeam",
            "shmem_ctx_t" => "ShmemCtx",
            "shmem_team_config_t" => "TeamConfig",
            "unsigned int" => "c_uint",
            "nvshmem_team_t" => "NvTeam",
            "nvshmemx_team_uniqueid_t" => "u64",
            "nvshmem_team_config_t" => "NvTeamConfig",
            "nvshmemx_init_attr_t" => "NvInitAttr",
            "nvshmemx_uniqueid_t" => "NvUniqueId",
            "nvshmemx_qp_handle_t" => "c_int",
            "cudaStream_t" => "CudaStream",
            "CUmodule" | "CUlibrary" => "*mut c_void",
            "dim3" => "Dim3",
            "shmemx_pcntr_t" => "crate::ext::Pcntr",
            "shmemx_gettid_fn_t" => "Option<crate::ext::GettidFn>",
            other => panic!("gen: no Rust type for C type {other:?}"),
        };
        let base = if self.ptr2 { format!("*mut {base}") } else { base.to_string() };
        match (self.ptr, self.konst) {
            (false, _) => base,
            (true, true) => format!("*const {base}"),
            (true, false) => format!("*mut {base}"),
        }
    }

    fn by_value_type(&self) -> bool {
        self.base == "TYPE" && !self.ptr
    }
}

fn parse_param(p: &str) -> Param {
    let p = p.trim();
    if p == "..." {
        return Param { konst: false, base: String::new(), ptr: false, ptr2: false, name: "...".into() };
    }
    let split = p.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let (ty, name) = p.split_at(split);
    let ptr = ty.contains('*');
    let ptr2 = ty.matches('*').count() == 2;
    let ty = ty.replace('*', " ");
    let words: Vec<&str> = ty.split_whitespace().collect();
    let konst = words.first() == Some(&"const");
    let base = words.iter().filter(|w| **w != "const").copied().collect::<Vec<_>>().join(" ");
    assert!(!base.is_empty() && !name.is_empty(), "gen: cannot parse parameter {p:?}");
    Param { konst, base, ptr, ptr2, name: name.into() }
}

fn parse_params(s: &str) -> Vec<Param> {
    if s.trim() == "void" { Vec::new() } else { s.split(',').map(parse_param).collect() }
}

/// A return type is parsed as a parameter with a placeholder name; `None` for `void`.
fn parse_ret(s: &str) -> Option<Param> {
    (s.trim() != "void").then(|| parse_param(&format!("{s} r_")))
}

fn c_params(ps: &[Param], t: Option<&Ty>) -> String {
    if ps.is_empty() { "void".into() } else { ps.iter().map(|p| p.c(t)).collect::<Vec<_>>().join(", ") }
}

fn c_ret(r: &Option<Param>, t: Option<&Ty>) -> String {
    match r {
        None => "void".into(),
        Some(p) => p.c_type(t),
    }
}

/// `ret name(params)` with the pointer star next to the name, as C is written.
fn c_decl(ret: &str, name: &str, params: &str) -> String {
    if ret.ends_with('*') { format!("{ret}{name}({params})") } else { format!("{ret} {name}({params})") }
}

/// How an exported function is implemented.
#[derive(Debug, Clone)]
enum Imp {
    /// Generated Rust body.
    Rust(String),
    /// Hand-written in `src/`: only a signature check is generated.
    Hand,
    /// Compiled from C (the body given), exported through a Rust tail jump.
    C(String),
}

/// One exported function: its prototype and its implementation.
#[derive(Debug, Clone)]
struct Func {
    name: String,
    group: String,
    ret: Option<Param>,
    params: Vec<Param>,
    ty: Option<Ty>,
    deprecated: bool,
    special: Special,
    header: Header,
    imp: Imp,
}

impl Func {
    fn prototype(&self) -> String {
        let t = self.ty.as_ref();
        let prefix = match self.header {
            Header::Nvshmem if nvshmem_device::is_both(&self.name) => "NVSHMEMI_HOST_API NVSHMEMI_HOSTDEVICE_PREFIX",
            Header::Nvshmem => "NVSHMEMI_HOST_API",
            _ => "SHMEM_FUNCTION_ATTRIBUTES",
        };
        let mut s = format!("{prefix} {}", c_decl(&c_ret(&self.ret, t), &self.name, &c_params(&self.params, t)));
        if self.deprecated {
            s.push_str(" SHMEM_ATTRIBUTE_DEPRECATED");
        }
        s.push(';');
        s
    }

    fn rust_params(&self) -> String {
        let t = self.ty.as_ref();
        self.params.iter().map(|p| format!("{}: {}", p.name, p.rust_type(t))).collect::<Vec<_>>().join(", ")
    }

    fn rust_ret(&self) -> String {
        match (&self.ret, self.special) {
            (_, Special::NoReturn) => " -> !".into(),
            (None, _) => String::new(),
            (Some(r), _) => format!(" -> {}", r.rust_type(self.ty.as_ref())),
        }
    }

    fn rust_fn_type(&self) -> String {
        let t = self.ty.as_ref();
        let ps = self.params.iter().map(|p| p.rust_type(t)).collect::<Vec<_>>().join(", ");
        format!("unsafe extern \"C\" fn({ps}){}", self.rust_ret())
    }
}

fn typed_name(pattern: &str, key: &str, val: &str, ctx: bool) -> String {
    format!("shmem_{}{}", if ctx { "ctx_" } else { "" }, pattern.replace(key, val))
}

fn ctx_param() -> Param {
    Param { konst: false, base: "shmem_ctx_t".into(), ptr: false, ptr2: false, name: "ctx".into() }
}

/// Expands one template for one type (or size), with or without a context.
fn instance(op: &Op, t: &Ty, sized: Option<&str>, ctx: bool) -> Func {
    let name = match sized {
        Some(pat) => typed_name(pat, "{S}", &t.name, ctx),
        None => typed_name(op.typed, "{T}", &t.name, ctx),
    };
    let name = format!("{}{}", op.prefix, name.strip_prefix("shmem_").expect("typed names begin with shmem_"));
    let mut params = parse_params(op.params);
    if ctx {
        params.insert(0, ctx_param());
    }
    let ret = parse_ret(op.ret);
    let by_value = params.iter().any(Param::by_value_type) || ret.as_ref().is_some_and(Param::by_value_type);
    let imp = if by_value && t.has("c_by_value") {
        let body = op.c_body.unwrap_or_else(|| panic!("gen: {name} takes {} by value but has no C body", t.c));
        Imp::C(
            body.replace("{F}", &format!("\"{name}\""))
                .replace("{CTX}", if ctx { "ctx" } else { "SHMEM_CTX_DEFAULT" })
                .replace("TYPE", &t.c),
        )
    } else {
        assert!(!(by_value && sized.is_some()), "gen: sized form {name} cannot take TYPE by value");
        Imp::Rust(
            op.body
                .replace("{F}", &format!("\"{name}\""))
                .replace("{CTX}", if ctx { "ctx" } else { "handles::default_ctx()" })
                .replace("{ES}", &t.size.to_string())
                .replace("{OP}", op.op),
        )
    };
    Func {
        name,
        group: op.group.into(),
        ret,
        params,
        ty: Some(t.clone()),
        deprecated: op.deprecated,
        special: Special::None,
        header: op.header,
        imp,
    }
}

/// Expands one NVSHMEM template for one type (or size).
fn nv_instance(op: &nvshmem::NvOp, t: &Ty, sized: Option<&str>) -> Func {
    let name = match sized {
        Some(pat) => pat.replace("{S}", &t.name),
        None => op.name.replace("{T}", &t.name),
    };
    let mut params = parse_params(op.params);
    let quoted = format!("\"{name}\"");
    let mut body = op
        .body
        .replace("{F}", &quoted)
        .replace("{CTX}", "handles::default_ctx()")
        .replace("{ES}", &t.size.to_string())
        .replace("{OP}", op.op);
    let ret = parse_ret(op.ret);
    if op.stream {
        // The operation becomes a job of the stream executor: a closure that owns its arguments
        // (raw pointers travel in `SendPtr`, the stream's job may run on another thread).
        let mut pre = String::new();
        let mut post = String::new();
        for p in params.iter().filter(|p| p.ptr) {
            pre.push_str(&format!("let {n} = nvshmem::SendPtr({n}); ", n = p.name));
            post.push_str(&format!("let {n} = {n}.get(); ", n = p.name));
        }
        let runner = match ret.as_ref().map(|r| r.base.as_str()) {
            None => "on_stream",
            Some("int") => "on_stream_status",
            Some(_) => "on_stream_value",
        };
        body = format!("{{ {pre}nvshmem::{runner}({quoted}, cstrm, move || {{ {post}{body} }}) }}");
        params.push(Param { konst: false, base: "cudaStream_t".into(), ptr: false, ptr2: false, name: "cstrm".into() });
    }
    Func {
        name,
        group: op.group.into(),
        ret,
        params,
        ty: Some(t.clone()),
        deprecated: false,
        special: Special::None,
        header: Header::Nvshmem,
        imp: Imp::Rust(body),
    }
}

fn api_func(a: &Api) -> Func {
    Func {
        name: a.name.into(),
        group: a.group.into(),
        ret: parse_ret(a.ret),
        params: parse_params(a.params),
        ty: None,
        deprecated: a.deprecated,
        special: a.special,
        header: a.header,
        imp: match a.c_body {
            Some(b) => Imp::C(b.into()),
            None => Imp::Hand,
        },
    }
}

/// Every exported function, in header order.
fn functions(types: &[Ty]) -> Vec<Func> {
    let mut out: Vec<Func> = API.iter().map(api_func).collect();
    for op in OPS {
        let typed: Vec<&Ty> = types.iter().filter(|t| t.has(op.fam)).collect();
        assert!(!typed.is_empty(), "gen: no type has family {:?} ({})", op.fam, op.typed);
        for ctx in [false, true] {
            if ctx && !op.ctx {
                continue;
            }
            out.extend(typed.iter().map(|t| instance(op, t, None, ctx)));
        }
        if let Some((pat, fams)) = op.sized {
            let sized: Vec<&Ty> = types.iter().filter(|t| fams.split_whitespace().any(|f| t.has(f))).collect();
            for ctx in [false, true] {
                if ctx && !op.ctx {
                    continue;
                }
                out.extend(sized.iter().map(|t| instance(op, t, Some(pat), ctx)));
            }
        }
    }
    out.extend(nvshmem::NV_API.iter().map(api_func));
    for op in nvshmem::nv_ops() {
        let typed: Vec<&Ty> = types.iter().filter(|t| t.has(op.fam)).collect();
        assert!(!typed.is_empty(), "gen: no type has family {:?} ({})", op.fam, op.name);
        out.extend(typed.iter().map(|t| nv_instance(&op, t, None)));
        if let Some((pat, fams)) = op.sized {
            let sized = types.iter().filter(|t| fams.split_whitespace().any(|f| t.has(f)));
            out.extend(sized.map(|t| nv_instance(&op, t, Some(pat))));
        }
    }
    let mut seen = HashSet::new();
    for f in &out {
        assert!(seen.insert(f.name.clone()), "gen: {} is generated twice", f.name);
    }
    out
}

/// The types of a family that a `_Generic` interface or a C++ overload set takes: each
/// distinct C type once (int32_t is int on LP64 and must not appear twice).
fn generic_types<'a>(types: &'a [Ty], fam: &str) -> Vec<&'a Ty> {
    let mut seen = HashSet::new();
    types.iter().filter(|t| t.has(fam) && seen.insert(t.canon.clone())).collect()
}

/// Everything the generator writes.
pub(crate) struct Output {
    /// `generated.rs`, included by the crate.
    pub(crate) rust: String,
    /// `shmem.h`.
    pub(crate) shmem_h: String,
    /// `shmemx.h`.
    pub(crate) shmemx_h: String,
    /// `mpp/shmem.h`.
    pub(crate) mpp_shmem_h: String,
    /// `mpp/shmemx.h`.
    pub(crate) mpp_shmemx_h: String,
    /// `nvshmem.h`: NVSHMEM's host API.
    pub(crate) nvshmem_h: String,
    /// `nvshmemx.h` (includes `nvshmem.h`, as NVSHMEM's does).
    pub(crate) nvshmemx_h: String,
    /// `nvshmem_device.h`: the device API's declarations ([`nvshmem_device`]).
    pub(crate) nvshmem_device_h: String,
    /// `bindings/cuda/src/generated/*.cu`: the device API's wrappers (file name, text).
    pub(crate) cuda_files: Vec<(String, String)>,
    /// `c_impl.c`: the routines compiled from C.
    pub(crate) c_impl: String,
    /// A C11 file calling every `_Generic` association (compiled by the header tests).
    pub(crate) generic_check_c: String,
    /// A C++ file calling every overload (compiled by the header tests).
    pub(crate) generic_check_cc: String,
    /// Every exported name with `current` or `deprecated`, one per line.
    pub(crate) api_list: String,
    /// The exported functions of the deprecated Fortran API ([`fortran`]).
    pub(crate) fortran_rust: String,
    /// `shmem.fh`, the Fortran include file of that API.
    pub(crate) shmem_fh: String,
}

const GENERATED_BY: &str =
    "Generated by bindings/c/build.rs from bindings/c/types.tsv, bindings/c/gen/ops.rs and gen/nvshmem.rs.";

/// Runs the generator. `version` is the crate version (for `SHMEM_VENDOR_STRING`).
pub(crate) fn generate(types: &[Ty], version: &str) -> Output {
    let funcs = functions(types);
    let ffuncs = fortran::functions();
    const FORTRAN_BY: &str = "Generated by bindings/c/build.rs from bindings/c/gen/fortran.rs.";
    Output {
        rust: rust(types, &funcs),
        shmem_h: shmem_h(types, &funcs, version),
        shmemx_h: shmemx_h(types, &funcs),
        mpp_shmem_h: mpp("shmem.h"),
        mpp_shmemx_h: mpp("shmemx.h"),
        nvshmem_h: nvshmem_h(&funcs, version),
        nvshmemx_h: nvshmemx_h(),
        nvshmem_device_h: nvshmem_device::header(
            &funcs.iter().filter(|f| f.header == Header::Nvshmem).map(|f| f.name.as_str()).collect(),
        ),
        cuda_files: nvshmem_device::cuda_files(),
        c_impl: c_impl(types, &funcs),
        generic_check_c: generic_check(types, false),
        generic_check_cc: generic_check(types, true),
        api_list: funcs
            .iter()
            .map(|f| format!("{}\t{}\n", f.name, if f.deprecated { "deprecated" } else { "current" }))
            .chain(ffuncs.iter().map(|f| format!("{}\tdeprecated\n", f.symbol)))
            .collect(),
        fortran_rust: fortran::rust(&ffuncs, FORTRAN_BY),
        shmem_fh: fortran::shmem_fh(&ffuncs, version, FORTRAN_BY),
    }
}

fn rust(types: &[Ty], funcs: &[Func]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// {GENERATED_BY} Do not edit.\n");
    s.push_str("use std::ffi::{c_char, c_int, c_long, c_longlong, c_schar, c_short, c_uchar, c_uint, c_ulong, c_ulonglong, c_ushort, c_void};\n");
    s.push_str("use oxshmem_rt::{Complex, ReduceOp, bf16, f16};\n");
    s.push_str("use crate::nvshmem::{self, CudaStream, Dim3, NvInitAttr, NvTeam, NvTeamConfig, NvUniqueId};\n");
    s.push_str("use crate::handles::{self, ShmemCtx, ShmemTeam, TeamConfig};\n");
    s.push_str("use crate::longdouble::LongDouble;\n");
    s.push_str("use crate::ops::{self, Amo, Vals};\n\n");
    s.push_str("// The sizes of types.tsv, checked against Rust's types (c_impl.c checks them against C's).\n");
    for t in types.iter().filter(|t| t.rust != "c_void") {
        let _ = writeln!(
            s,
            "const _: () = assert!(size_of::<{}>() == {}, \"types.tsv: size of {}\");",
            t.rust, t.size, t.name
        );
    }
    s.push('\n');
    let mut cimpl = Vec::new();
    for f in funcs {
        let status = if f.deprecated && !f.group.contains("deprecated") { "; deprecated" } else { "" };
        match &f.imp {
            Imp::Hand => {
                let _ = writeln!(s, "// `{}` is written by hand; this holds it to its prototype.", f.name);
                let _ = writeln!(s, "const _: {} = crate::{};\n", f.rust_fn_type(), f.name);
            }
            Imp::Rust(body) => {
                let end = if f.ret.is_none() { ";" } else { "" };
                let _ = writeln!(s, "/// `{}` ({}{status}).", f.name, f.group);
                let _ = writeln!(s, "///\n/// # Safety");
                for line in safety(f, body).lines() {
                    let _ = writeln!(s, "/// {line}");
                }
                s.push_str("#[unsafe(no_mangle)]\n");
                let _ = writeln!(
                    s,
                    "pub unsafe extern \"C\" fn {}({}){} {{\n    // SAFETY: the caller meets the routine's contract; `ops` checks what can be checked.\n    unsafe {{ {body}{end} }}\n}}\n",
                    f.name,
                    f.rust_params(),
                    f.rust_ret()
                );
            }
            Imp::C(_) => {
                let _ = writeln!(s, "/// `{}` ({}{status}).", f.name, f.group);
                s.push_str("///\n/// Compiled from C (`c_impl.c`): Rust cannot express this routine's signature\n/// (an x87 `long double` by value, or a variadic parameter list). This symbol\n/// jumps to that code with the caller's registers and stack untouched.\n");
                s.push_str("#[unsafe(naked)]\n#[unsafe(no_mangle)]\n");
                let _ = writeln!(
                    s,
                    "pub extern \"C\" fn {}() {{\n    core::arch::naked_asm!(tail_jump!(), f = sym cimpl::oxshmem_impl_{})\n}}\n",
                    f.name, f.name
                );
                cimpl.push(f.name.clone());
            }
        }
    }
    s.push_str("/// The C implementations that the tail jumps above reach (hidden in the shared library).\nmod cimpl {\n    unsafe extern \"C\" {\n");
    for n in &cimpl {
        let _ = writeln!(s, "        pub(super) fn oxshmem_impl_{n}();");
    }
    s.push_str("    }\n}\n");
    s
}

/// The `# Safety` section of a generated function: what its caller must guarantee that the
/// routine its body calls cannot check (the local buffers, and how much of each symmetric object
/// the call reaches), then what is checked. Handles, PE numbers and counts are always checked.
/// One text per routine of `crate::ops` (and `ext`, `nvshmem`); a body that calls none of them
/// stops the build, so that no export goes out without its precondition.
fn safety(f: &Func, body: &str) -> String {
    let t = f.ty.as_ref().unwrap_or_else(|| panic!("gen: {} has a generated body but no type", f.name));
    // The unit of the counts.
    let elems = match (t.c.as_str(), t.name.as_str()) {
        ("void", "mem") => "bytes".to_string(),
        ("void", _) => format!("{}-bit elements", t.size * 8),
        (c, _) => format!("`{c}` elements"),
    };
    let ty = &t.c;
    let has = |n: &str| f.params.iter().any(|p| p.name == n);
    // The templates of the two APIs name some parameters differently.
    let src = if has("source") { "source" } else { "src" };
    let n = ["nelems", "nelem", "nreduce"].into_iter().find(|n| has(n)).unwrap_or("nelems");
    let target = if has("dest") { "dest" } else { "source" };
    let calls = |r: &str| body.contains(&format!("{r}("));
    let text = if calls("ops::p") {
        "None: `dest` is checked to be symmetric and `pe` to be a valid PE.".to_string()
    } else if calls("ops::g") {
        format!("None: `{src}` is checked to be symmetric and `pe` to be a valid PE.")
    } else if calls("ops::amo") {
        format!("None: `{target}` is checked to be symmetric and aligned, and `pe` to be a valid PE.")
    } else if calls("ops::amo_nbi") {
        format!(
            "`fetch` must be valid for a write of one `{ty}` until the next quiet.\n`{target}` is checked to be \
             symmetric and aligned."
        )
    } else if calls("ops::put") || calls("ops::put_nbi") {
        format!("`{src}` must be valid for reads of `{n}` {elems}.\n`dest` is checked to be symmetric.")
    } else if calls("ops::put_signal") {
        format!(
            "`{src}` must be valid for reads of `{n}` {elems}.\n`dest` is checked to be symmetric, `sig_addr` to \
             be symmetric and aligned."
        )
    } else if calls("ops::get") {
        format!("`dest` must be valid for writes of `{n}` {elems}.\n`{src}` is checked to be symmetric.")
    } else if calls("ops::get_nbi") {
        format!(
            "`dest` must be valid for writes of `{n}` {elems} until the next quiet.\n`{src}` is checked to be \
             symmetric."
        )
    } else if calls("ops::iput") {
        format!(
            "`{src}` must be valid for reads of `{n}` {elems}, `sst` elements apart.\n`dest` is checked to be \
             symmetric."
        )
    } else if calls("ops::iget") {
        format!(
            "`dest` must be valid for writes of `{n}` {elems}, `dst` elements apart.\n`{src}` is checked to be \
             symmetric."
        )
    } else if calls("ext::ibput") {
        format!(
            "`source` must be valid for reads of `nblocks` blocks of `bsize` {elems}, block `k` at element \
             `k * sst`.\n`dest` is checked to be symmetric."
        )
    } else if calls("ext::ibget") {
        format!(
            "`dest` must be valid for writes of `nblocks` blocks of `bsize` {elems}, block `k` at element \
             `k * dst`.\n`source` is checked to be symmetric."
        )
    } else if calls("ops::wait_until") || calls("ops::test") {
        format!("`ivar` must point to a `{ty}` (checked to be symmetric and aligned).")
    } else if ["wait_until_all", "wait_until_any", "wait_until_some", "test_all", "test_any", "test_some"]
        .iter()
        .any(|r| calls(&format!("ops::{r}")))
    {
        let mut text = format!(
            "`ivars` must point to `nelems` {elems} (checked to be symmetric and aligned); `status` must be \
             NULL or valid for reads of `nelems` `int`s"
        );
        if has("cmp_values") {
            text.push_str(&format!(", `cmp_values` for reads of `nelems` {elems}"));
        }
        if has("indices") {
            text.push_str(", `indices` for writes of `nelems` `size_t`s");
        }
        text.push('.');
        text
    } else if calls("ops::broadcast") || calls("ops::reduce") {
        format!("`dest` and `{src}` must each hold `{n}` {elems} (checked to be symmetric).")
    } else if calls("ops::collect") {
        let total = if body.contains(", true)") {
            format!("`{n}` times the team's size")
        } else {
            format!("the sum of every member's `{n}`")
        };
        format!("`{src}` must hold `{n}` {elems} and `dest` {total} (checked to be symmetric).")
    } else if calls("ops::alltoalls") {
        let apart = if has("dst") { ", `dst` (in `dest`) and `sst` (in `source`) elements apart" } else { "" };
        format!(
            "`dest` and `{src}` must each hold `{n}` {elems} for every member of the team{apart} (checked to be \
             symmetric)."
        )
    } else if calls("ops::to_all") {
        format!(
            "`dest` and `source` must each hold `nreduce` {elems}.\n`dest`, `source`, `pWrk` and `pSync` are \
             checked to be symmetric."
        )
    } else if calls("ext::scan") {
        format!("`dest` and `source` must each hold `nelems` {elems} (checked to be symmetric).")
    } else if calls("nvshmem::reducescatter") {
        format!(
            "`src` must hold `nreduce` {elems} for every member of the team (checked to be symmetric);\n`dest` \
             must be valid and aligned for writes of `nreduce` {elems} (written locally)."
        )
    } else {
        panic!("gen: {}: no # Safety text for its body `{body}` (add one to `safety`)", f.name)
    };
    if has("cstrm") && !text.starts_with("None") {
        format!("{text}\nThis must hold until the stream runs the operation, which may be after the call returns.")
    } else {
        text
    }
}

fn banner(file: &str) -> String {
    format!(
        "/*\n * {file} -- OpenSHMEM 1.5 for oxshmem.\n *\n * {GENERATED_BY}\n * Do not edit: `cargo test -p oxshmem-c --test header` fails when this copy is stale, and\n * `OXSHMEM_BLESS=1 cargo test -p oxshmem-c --test header` refreshes it.\n */\n"
    )
}

fn prototypes(s: &mut String, funcs: &[Func], header: Header) {
    let mut group = "";
    for f in funcs.iter().filter(|f| f.header == header) {
        if f.group != group {
            group = &f.group;
            let _ = writeln!(s, "\n/* {group} */");
        }
        let proto = f.prototype();
        match f.special {
            Special::None => {
                let _ = writeln!(s, "{proto}");
            }
            Special::NoReturn => {
                let bare = proto.trim_start_matches("SHMEM_FUNCTION_ATTRIBUTES ");
                let _ = writeln!(
                    s,
                    "#if defined(__cplusplus) && __cplusplus >= 201103L\n[[noreturn]] SHMEM_FUNCTION_ATTRIBUTES {bare}\n#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\nSHMEM_FUNCTION_ATTRIBUTES _Noreturn {bare}\n#else\n{} SHMEM_ATTRIBUTE_NORETURN;\n#endif",
                    proto.trim_end_matches(';')
                );
            }
            Special::GenericName => {
                let _ = writeln!(
                    s,
                    "#if (!defined(__cplusplus) && !(defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)) || \\\n    defined(SHMEM_DECLARE_SPECIAL_CASES)\n{proto}\n#endif"
                );
            }
        }
    }
}

fn shmem_h(types: &[Ty], funcs: &[Func], version: &str) -> String {
    let mut s = banner("shmem.h");
    s.push_str("#ifndef OXSHMEM_SHMEM_H\n#define OXSHMEM_SHMEM_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n");
    s.push_str("#if defined(__SIZEOF_LONG__) && __SIZEOF_LONG__ != 8\n#error \"oxshmem's shmem.h is generated for LP64 targets (64-bit long and pointers)\"\n#endif\n");
    for (name, value, comment) in CONSTANTS {
        if !comment.is_empty() {
            let _ = writeln!(s, "\n/* {comment} */");
        }
        let _ = writeln!(s, "#define {name} {}", value.replace("{VERSION}", version));
    }
    s.push_str("\n/* The same constants under their names of OpenSHMEM 1.2 and before */\n");
    for name in LEGACY {
        let _ = writeln!(s, "#define _{name} {name}");
    }
    s.push_str(
        r#"
#ifndef SHMEM_FUNCTION_ATTRIBUTES
#define SHMEM_FUNCTION_ATTRIBUTES
#endif
#ifndef SHMEM_ATTRIBUTE_DEPRECATED
#if defined(__GNUC__) || defined(__clang__)
#define SHMEM_ATTRIBUTE_DEPRECATED __attribute__((deprecated))
#else
#define SHMEM_ATTRIBUTE_DEPRECATED
#endif
#endif
#ifndef SHMEM_ATTRIBUTE_NORETURN
#if defined(__GNUC__) || defined(__clang__)
#define SHMEM_ATTRIBUTE_NORETURN __attribute__((noreturn))
#else
#define SHMEM_ATTRIBUTE_NORETURN
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Contexts and teams are opaque handles: pointers to records that the library never frees, so
 * that a handle used after its context or team was destroyed gets a clear error. */
typedef struct oxshmem_ctx { int opaque_; } *shmem_ctx_t;
typedef struct oxshmem_team { int opaque_; } *shmem_team_t;

typedef struct {
    int num_contexts;
} shmem_team_config_t;

#define SHMEM_CTX_INVALID ((shmem_ctx_t) 0)
#define SHMEM_TEAM_INVALID ((shmem_team_t) 0)

/* Set by shmem_init; SHMEM_TEAM_INVALID before it */
extern shmem_team_t SHMEM_TEAM_WORLD;
extern shmem_team_t SHMEM_TEAM_SHARED;
/* The default context: the operations without a ctx argument use it */
extern shmem_ctx_t SHMEM_CTX_DEFAULT;
"#,
    );
    prototypes(&mut s, funcs, Header::Shmem);
    s.push_str(
        r#"
#ifdef __cplusplus
} /* extern "C" */

/* C++ overloads */
#if __cplusplus >= 201402L
#define SHMEM_CXX_ATTRIBUTE_DEPRECATED [[deprecated]]
#else
#define SHMEM_CXX_ATTRIBUTE_DEPRECATED
#endif
"#,
    );
    cxx_overloads(&mut s, types, Header::Shmem);
    s.push_str(
        r#"
static inline int shmem_sync(shmem_team_t team) {
    return shmem_team_sync(team);
}

#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

/* C11 type-generic interfaces. SHMEM_C11_TYPE_EVAL_PTR reduces an array argument to its
 * pointer; SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR also takes a scalar (the second argument of a call
 * without a context may be one). A selection that fails picks a function that takes no
 * arguments, so that the call does not compile. */
#define SHMEM_C11_TYPE_EVAL_PTR(arg) &*(arg)
#define SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(arg) (arg)+0
#define SHMEM_C11_ARG0(...) SHMEM_C11_ARG0_HELPER(__VA_ARGS__, sentinel)
#define SHMEM_C11_ARG0_HELPER(first, ...) first
#define SHMEM_C11_ARG1(first, ...) SHMEM_C11_ARG1_HELPER(__VA_ARGS__, sentinel)
#define SHMEM_C11_ARG1_HELPER(second, ...) second

static inline void shmem_c11_generic_selection_failed(void) {}
"#,
    );
    c11_generics(&mut s, types, Header::Shmem);
    s.push_str(
        r#"
#define shmem_sync(...) \
    _Generic(SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(SHMEM_C11_ARG0(__VA_ARGS__)), \
        shmem_team_t: shmem_team_sync, \
        int: shmem_sync \
    )(__VA_ARGS__)

#endif /* C11 */

#endif /* OXSHMEM_SHMEM_H */
"#,
    );
    s
}

fn shmemx_h(types: &[Ty], funcs: &[Func]) -> String {
    let mut s = banner("shmemx.h");
    s.push_str("#ifndef OXSHMEM_SHMEMX_H\n#define OXSHMEM_SHMEMX_H\n\n#include \"shmem.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    s.push_str(ops::SHMEMX_PREAMBLE);
    // The extensions, then their OpenSHMEM 1.6 names in a section of their own.
    let (ext, std16): (Vec<Func>, Vec<Func>) =
        funcs.iter().filter(|f| f.header == Header::Shmemx).cloned().partition(|f| f.name.starts_with("shmemx_"));
    prototypes(&mut s, &ext, Header::Shmemx);
    s.push_str(ops::SHMEM_1_6_BANNER);
    prototypes(&mut s, &std16, Header::Shmemx);
    let mut cxx = String::new();
    cxx_overloads(&mut cxx, types, Header::Shmemx);
    let mut c11 = String::new();
    c11_generics(&mut c11, types, Header::Shmemx);
    s.push_str(&ops::SHMEMX_POSTAMBLE.replace("{CXX_OVERLOADS}\n", &cxx).replace("{C11_GENERICS}\n", &c11));
    s
}

fn nv_banner(file: &str) -> String {
    format!(
        "/*\n * {file} -- NVSHMEM's host API for oxshmem (NVSHMEM 3.4 names and prototypes).\n *\n * {GENERATED_BY}\n * Do not edit: `cargo test -p oxshmem-c --test header` fails when this copy is stale, and\n * `OXSHMEM_BLESS=1 cargo test -p oxshmem-c --test header` refreshes it.\n */\n"
    )
}

fn nvshmem_h(funcs: &[Func], version: &str) -> String {
    let mut s = nv_banner("nvshmem.h");
    s.push_str("#ifndef OXSHMEM_NVSHMEM_H\n#define OXSHMEM_NVSHMEM_H\n");
    s.push_str(&nvshmem::PREAMBLE.replace("{VERSION}", version));
    prototypes(&mut s, funcs, Header::Nvshmem);
    s.push_str(
        r#"
/* NVSHMEM's spelling of nvshmem_team_sync for the world team's PEs */
#define nvshmem_sync nvshmem_team_sync

#ifdef __cplusplus
} /* extern "C" */
#endif

/* NVSHMEM's nvshmem.h brings its error-reporting macros too (NVSHMEMI_ERROR_PRINT, ...), which
 * its perftests use without including them; the header also stands alone. */
#include "non_abi/nvshmemx_error.h"

#if defined(__CUDACC__) || defined(__HIP__) || defined(OXSHMEMI_TARGET_CPU)
#include "nvshmem_device.h"
#endif

#endif /* OXSHMEM_NVSHMEM_H */
"#,
    );
    s
}

fn nvshmemx_h() -> String {
    let mut s = nv_banner("nvshmemx.h");
    s.push_str("/* NVSHMEM's extensions are declared in nvshmem.h, which NVSHMEM's nvshmemx.h includes too. */\n#include \"nvshmem.h\"\n");
    s
}

fn mpp(file: &str) -> String {
    let mut s = banner(&format!("mpp/{file}"));
    let _ = writeln!(s, "/* For programs that include <mpp/{file}> (OSU micro-benchmarks, older codes). */");
    let _ = writeln!(s, "#include \"../{file}\"");
    s
}

/// The typed routines that have a generic interface, with the parameters of their form without
/// a context: those declared in `header` (`None`: every header).
fn generic_ops(header: Option<Header>) -> impl Iterator<Item = (&'static Op, &'static str, Vec<Param>)> {
    OPS.iter()
        .filter(move |op| header.is_none_or(|h| op.header == h))
        .filter_map(|op| op.generic.map(|g| (op, g, parse_params(op.params))))
}

/// The name of `op`'s typed routine for type `t` (pattern `pattern`), with its prefix
/// (`shmemx_float_ibput`, `shmem_ctx_long_put`).
fn prefixed_name(op: &Op, pattern: &str, t: &Ty, ctx: bool) -> String {
    let name = typed_name(pattern, "{T}", &t.name, ctx);
    format!("{}{}", op.prefix, name.strip_prefix("shmem_").expect("typed names begin with shmem_"))
}

fn cxx_overloads(s: &mut String, types: &[Ty], header: Header) {
    for (op, g, params) in generic_ops(Some(header)) {
        let _ = writeln!(s, "\n/* {g} */");
        let ret = parse_ret(op.ret);
        let args = params.iter().map(|p| p.name.clone()).collect::<Vec<_>>().join(", ");
        let dep = if op.deprecated { "SHMEM_CXX_ATTRIBUTE_DEPRECATED " } else { "" };
        // A deprecated routine's overloads call the current routine, so that merely including
        // the header never warns.
        let target = op.alias.unwrap_or(op.typed);
        for t in generic_types(types, op.fam) {
            let ret_c = c_ret(&ret, Some(t));
            let ret_kw = if ret.is_some() { "return " } else { "" };
            let call = prefixed_name(op, target, t, false);
            let _ = writeln!(
                s,
                "{dep}static inline {} {{ {ret_kw}{call}({args}); }}",
                c_decl(&ret_c, g, &c_params(&params, Some(t)))
            );
            if op.ctx {
                let call = prefixed_name(op, target, t, true);
                let _ = writeln!(
                    s,
                    "{dep}static inline {} {{ {ret_kw}{call}(ctx, {args}); }}",
                    c_decl(&ret_c, g, &format!("shmem_ctx_t ctx, {}", c_params(&params, Some(t))))
                );
            }
        }
    }
}

fn c11_generics(s: &mut String, types: &[Ty], header: Header) {
    for (op, g, params) in generic_ops(Some(header)) {
        let ts = generic_types(types, op.fam);
        let typed_ctx = |ctx: bool, t: &Ty| prefixed_name(op, op.typed, t, ctx);
        let dispatch = &params[op.garg];
        let assoc = |ctx: bool, indent: &str| {
            let mut a = Vec::new();
            for t in &ts {
                a.push(format!("{indent}{} *: {}", t.c, typed_ctx(ctx, t)));
                if dispatch.konst {
                    a.push(format!("{indent}const {} *: {}", t.c, typed_ctx(ctx, t)));
                }
            }
            a
        };
        let _ = writeln!(s, "\n#define {g}(...) \\");
        let _ = writeln!(s, "    _Generic(SHMEM_C11_TYPE_EVAL_PTR(SHMEM_C11_ARG{}(__VA_ARGS__)), \\", op.garg);
        let mut lines = Vec::new();
        if op.ctx {
            assert_eq!(op.garg, 0, "gen: {g}: a context form dispatches on its first argument");
            // Without a context, the second argument may be a scalar: this branch is type-checked
            // even when not taken.
            let ctrl = if params.get(1).is_some_and(|p| p.ptr && p.base != "void") {
                "SHMEM_C11_TYPE_EVAL_PTR"
            } else {
                "SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR"
            };
            let mut inner = assoc(true, "            ");
            inner.push("            default: shmem_c11_generic_selection_failed".into());
            lines.push(format!(
                "        shmem_ctx_t: _Generic({ctrl}(SHMEM_C11_ARG1(__VA_ARGS__)), \\\n{} \\\n        )",
                inner.join(", \\\n")
            ));
        }
        lines.extend(assoc(false, "        "));
        let _ = writeln!(s, "{} \\", lines.join(", \\\n"));
        let _ = writeln!(s, "    )(__VA_ARGS__)");
    }
}

/// A C (or C++) function that calls every generic interface once per type, with and without a
/// context, with arguments of exactly the parameter types. Compiled with `-Werror`, it proves
/// every association selects a routine whose prototype accepts those arguments.
fn generic_check(types: &[Ty], cxx: bool) -> String {
    let mut s = format!(
        "/* {GENERATED_BY} */\n#include <shmem.h>\n#include <shmemx.h>\n\nvoid oxshmem_generic_check(void);\nvoid oxshmem_generic_check(void) {{\n"
    );
    let arg = |p: &Param, t: &Ty| match p.base.as_str() {
        "shmem_team_t" => "SHMEM_TEAM_WORLD".to_string(),
        "shmem_ctx_t" => "SHMEM_CTX_DEFAULT".to_string(),
        _ => format!("({})0", p.c_type(Some(t))),
    };
    for (op, g, params) in generic_ops(None) {
        for t in generic_types(types, op.fam) {
            let mut variants = vec![params.clone()];
            if params[op.garg].konst {
                let mut v = params.clone();
                v[op.garg].konst = false;
                variants.push(v);
            }
            for ps in variants {
                let args = ps.iter().map(|p| arg(p, t)).collect::<Vec<_>>().join(", ");
                let _ = writeln!(s, "    {g}({args});");
                if op.ctx {
                    let _ = writeln!(s, "    {g}(SHMEM_CTX_DEFAULT, {args});");
                }
            }
        }
    }
    let _ = writeln!(
        s,
        "    {}",
        if cxx {
            "shmem_sync(SHMEM_TEAM_WORLD);"
        } else {
            "shmem_sync(SHMEM_TEAM_WORLD);\n    shmem_sync(0, 0, 1, (long *)0);"
        }
    );
    s.push_str("}\n");
    s
}

fn c_impl(types: &[Ty], funcs: &[Func]) -> String {
    let mut s = format!(
        "/* {GENERATED_BY} Do not edit.\n *\n * The routines Rust cannot define, under internal names; the exported symbols are Rust\n * tail jumps to these. The renames below make shmem.h declare exactly these names, so the\n * compiler holds each definition to its prototype. */\n\n"
    );
    let cfuncs: Vec<&Func> = funcs.iter().filter(|f| matches!(f.imp, Imp::C(_))).collect();
    for f in &cfuncs {
        let _ = writeln!(s, "#define {} oxshmem_impl_{}", f.name, f.name);
    }
    s.push_str("#include \"shmem.h\"\n\n");
    s.push_str("/* csrc/longdouble.c: the operation, through the hooks the Rust side installed */\nvoid oxshmem_ld_rma(int get, shmem_ctx_t ctx, void *dest, const void *src, size_t len, int pe, const char *func);\n\n");
    for t in types.iter().filter(|t| t.c != "void" && !t.nv_only()) {
        let _ = writeln!(s, "_Static_assert(sizeof({}) == {}, \"types.tsv: size of {}\");", t.c, t.size, t.name);
        // The generic interfaces take each distinct type once, by this column.
        let _ = writeln!(
            s,
            "_Static_assert(_Generic(({} *)0, {} *: 1, default: 0), \"types.tsv: {} is {}\");",
            t.c, t.canon, t.c, t.canon
        );
    }
    for f in &cfuncs {
        let Imp::C(body) = &f.imp else { unreachable!() };
        let t = f.ty.as_ref();
        let _ = writeln!(s, "\n{} {{\n    {body}\n}}", c_decl(&c_ret(&f.ret, t), &f.name, &c_params(&f.params, t)));
    }
    s
}
