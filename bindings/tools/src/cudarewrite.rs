//! The source rewrite that lets a CUDA program compile for the CPU target (`oshnvcc --target
//! cpu`): the three things of CUDA C++ that are not C++ become C++ that the CPU target's runtime
//! (`bindings/cuda/src/arch/cuda-on-cpu/cuda_runtime.h`) gives meaning to.
//!
//! | CUDA | after the rewrite |
//! | --- | --- |
//! | `k<<<grid, block[, shmem[, stream]]>>>(args)` | `::oxshmemi::cpu_rt::Launch(grid, block…).run([=](auto &&...a) { k(a...); }, args)`: the arguments are evaluated and copied once, at the launch, as CUDA copies a kernel's parameters |
//! | `__shared__ T x[N];` in a function | `struct tag {}; T (&x)[N] = ::oxshmemi::cpu_rt::block_shared<T[N], tag>();`: one instance per block |
//! | `extern __shared__ T x[];` | `static ::oxshmemi::cpu_rt::DynamicShared<T> x;`: the block's dynamic shared memory |
//! | `__global__` | removed; each non-template kernel defined at namespace scope is registered at the end of the file, for launches by address (`cudaLaunchKernel`, `nvshmemx_collective_launch`) |
//!
//! It runs on preprocessed text (`c++ -E` with `OXSHMEMI_CPU_KEEP_QUALIFIERS`, so that
//! `__global__` and `__shared__` survive it), so launches inside macros and headers are seen too.
//! Each replacement keeps the number of lines of what it replaces, so the compiler's messages
//! name the original lines. Comments, string and character literals are never rewritten.

/// Blanks comments and the contents of string and character literals (same length, newlines
/// kept), so that scanning sees only code.
fn blank(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let start = i;
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                let end = (i + 2).min(b.len());
                for c in &mut out[start..end] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = end;
            }
            q @ (b'"' | b'\'') => {
                // A digit separator (1'000) is not a character literal.
                if q == b'\'' && i > 0 && b[i - 1].is_ascii_alphanumeric() {
                    i += 1;
                    continue;
                }
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        out[i] = b' ';
                        i += 1;
                    }
                    if i < b.len() {
                        out[i] = b' ';
                        i += 1;
                    }
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether the word `w` starts at `i` (not inside a longer identifier).
fn word_at(b: &[u8], i: usize, w: &str) -> bool {
    b[i..].starts_with(w.as_bytes())
        && (i == 0 || !is_ident(b[i - 1]))
        && b.get(i + w.len()).is_none_or(|&c| !is_ident(c))
}

/// The index just past the bracket that closes the one at `open` (`(`, `[`, `{`).
fn close_of(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The start of the bracket group that ends at `end - 1` (`)`, `]` or `>`).
fn open_of(b: &[u8], end: usize) -> Option<usize> {
    let (open, close) = match b[end - 1] {
        b')' => (b'(', b')'),
        b']' => (b'[', b']'),
        _ => (b'<', b'>'),
    };
    let mut depth = 0i32;
    let mut k = end;
    while k > 0 {
        k -= 1;
        if b[k] == close {
            depth += 1;
        } else if b[k] == open {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// What encloses a position: the names of the namespaces open there (an anonymous one adds
/// none) and whether it is inside a function or class body.
#[derive(Debug, Clone, Default)]
struct Scope {
    namespaces: Vec<String>,
    in_body: bool,
}

/// One scope per byte position is too much; the scopes at the positions asked for.
fn scopes_at(b: &[u8], positions: &[usize]) -> Vec<Scope> {
    let mut out = Vec::with_capacity(positions.len());
    // Each open brace: Some(name) for a namespace (or extern "C", name empty), None otherwise.
    let mut stack: Vec<Option<String>> = Vec::new();
    let mut next = 0;
    let mut stmt_start = 0;
    for (i, &c) in b.iter().enumerate() {
        while next < positions.len() && positions[next] == i {
            let namespaces = stack.iter().flatten().filter(|n| !n.is_empty()).cloned().collect();
            out.push(Scope { namespaces, in_body: stack.iter().any(Option::is_none) });
            next += 1;
        }
        match c {
            b'{' => {
                let head = String::from_utf8_lossy(&b[stmt_start..i]);
                let words: Vec<&str> = head.split(|ch: char| ch.is_whitespace()).filter(|w| !w.is_empty()).collect();
                let kind = match words.as_slice() {
                    [.., "namespace"] => Some(String::new()),
                    [.., "namespace", name] => Some((*name).to_string()),
                    [.., "extern", q] if q.starts_with('"') => Some(String::new()),
                    [.., "extern", "\"", "\""] => Some(String::new()),
                    _ => None,
                };
                stack.push(kind);
                stmt_start = i + 1;
            }
            b'}' => {
                stack.pop();
                stmt_start = i + 1;
            }
            b';' => stmt_start = i + 1,
            b'\n' if b.get(i + 1) == Some(&b'#') => stmt_start = i + 1,
            _ => {}
        }
    }
    while out.len() < positions.len() {
        out.push(Scope::default());
    }
    out
}

/// An edit: replace `[start, end)` with `text` (then as many newlines as the span held).
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

/// The start of the statement around `i`: just after the previous `;`, `{`, `}` or line-marker
/// line.
fn stmt_start(b: &[u8], i: usize) -> usize {
    let mut k = i;
    while k > 0 {
        let c = b[k - 1];
        if c == b';' || c == b'{' || c == b'}' {
            return k;
        }
        if c == b'\n' && b.get(k) == Some(&b'#') {
            // k is the start of a directive line: the statement starts after it
            let mut e = k;
            while e < b.len() && b[e] != b'\n' {
                e += 1;
            }
            return e.min(i);
        }
        k -= 1;
    }
    0
}

/// Removes `alignas(...)`, `__align__(...)`, `__attribute__((...))` and the words `static`,
/// `extern`, `__shared__` from a declaration.
fn strip_decl(decl: &str) -> String {
    let b = decl.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let mut skipped = false;
        for w in ["alignas", "__align__", "__attribute__"] {
            if word_at(b, i, w) {
                let mut k = i + w.len();
                while k < b.len() && b[k].is_ascii_whitespace() {
                    k += 1;
                }
                if b.get(k) == Some(&b'(')
                    && let Some(e) = close_of(b, k)
                {
                    i = e;
                    skipped = true;
                    break;
                }
            }
        }
        for w in ["static", "extern", "__shared__"] {
            if !skipped && word_at(b, i, w) {
                i += w.len();
                skipped = true;
            }
        }
        if !skipped {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Splits `TYPE NAME[DIMS]` into (TYPE, NAME, DIMS), or None.
fn split_declarator(d: &str) -> Option<(String, String, String)> {
    let d = d.trim();
    let dims_start = d.find('[').unwrap_or(d.len());
    let (head, dims) = d.split_at(dims_start);
    let head = head.trim_end();
    let name_start = head.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |p| p + 1);
    let (ty, name) = head.split_at(name_start);
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    Some((ty.trim().to_string(), name.to_string(), dims.trim().to_string()))
}

/// Rewrites one CUDA translation unit (see the module comment); the kernels it registers are
/// listed in the returned vector.
pub fn rewrite(src: &str) -> (String, Vec<String>) {
    let b = blank(src);
    let mut launches = Vec::new();
    let mut shared = Vec::new();
    let mut globals = Vec::new();
    let mut i = 0;
    while i + 3 <= b.len() {
        if b[i..].starts_with(b"<<<") {
            let before = String::from_utf8_lossy(&b[i.saturating_sub(8)..i]).to_string();
            if !before.trim_end().ends_with("operator") {
                launches.push(i);
            }
            i += 3;
            continue;
        }
        if word_at(&b, i, "__shared__") {
            shared.push(i);
        } else if word_at(&b, i, "__global__") {
            globals.push(i);
        }
        i += 1;
    }
    let mut all: Vec<usize> = shared.iter().chain(&globals).copied().collect();
    all.sort_unstable();
    let scopes = scopes_at(&b, &all);
    let scope_of = |p: usize| scopes[all.binary_search(&p).expect("a recorded position")].clone();
    let mut edits: Vec<Edit> = Vec::new();
    let text = |s: usize, e: usize| src[s..e].to_string();

    for &at in &launches {
        // the callee: identifiers, ::, ., ->, and bracket groups, back from <<<
        let mut s = at;
        while s > 0 && b[s - 1].is_ascii_whitespace() {
            s -= 1;
        }
        let callee_end = s;
        loop {
            if s == 0 {
                break;
            }
            let c = b[s - 1];
            if is_ident(c) || c == b':' || c == b'.' {
                s -= 1;
            } else if c == b'>' && s >= 2 && b[s - 2] == b'-' {
                s -= 2;
            } else if matches!(c, b'>' | b')' | b']') {
                match open_of(&b, s) {
                    Some(o) => s = o,
                    None => break,
                }
            } else {
                break;
            }
        }
        // the configuration, up to the matching >>>
        let mut k = at + 3;
        let mut depth = 0i32;
        let mut cfg_end = None;
        while k < b.len() {
            match b[k] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b'>' if depth == 0 && b[k..].starts_with(b">>>") => {
                    cfg_end = Some(k);
                    break;
                }
                _ => {}
            }
            k += 1;
        }
        let Some(cfg_end) = cfg_end else { continue };
        let mut p = cfg_end + 3;
        while p < b.len() && b[p].is_ascii_whitespace() {
            p += 1;
        }
        if b.get(p) != Some(&b'(') || s == callee_end {
            continue;
        }
        let Some(args_end) = close_of(&b, p) else { continue };
        let callee = text(s, callee_end);
        let cfg = text(at + 3, cfg_end);
        let args = text(p + 1, args_end - 1);
        let comma = if args.trim().is_empty() { "" } else { ", " };
        edits.push(Edit {
            start: s,
            end: args_end,
            text: format!(
                "::oxshmemi::cpu_rt::Launch({}).run([=](auto &&...oxshmemi_a) {{ {}(oxshmemi_a...); }}{comma}{})",
                cfg.replace('\n', " "),
                callee.replace('\n', " "),
                args.replace('\n', " ")
            ),
        });
    }

    let mut tag = 0usize;
    for &at in &shared {
        let mut start = stmt_start(&b, at);
        while start < at && b[start].is_ascii_whitespace() {
            start += 1;
        }
        let Some(semi) = (at..b.len()).find(|&k| b[k] == b';') else { continue };
        let decl = strip_decl(&src[start..semi]);
        let is_extern = src[start..at].split_whitespace().any(|w| w == "extern");
        if decl.contains('=') {
            continue; // an initializer: CUDA refuses it too; the compiler will say so
        }
        let parts: Vec<&str> = decl.split(',').collect();
        let Some((ty, first, first_dims)) = split_declarator(parts[0]) else { continue };
        let mut decls = vec![(first, first_dims)];
        for p in &parts[1..] {
            match split_declarator(&format!("int {p}")) {
                Some((_, n, d)) => decls.push((n, d)),
                None => decls.clear(),
            }
        }
        if decls.is_empty() {
            continue;
        }
        let in_body = scope_of(at).in_body;
        let mut out = String::new();
        for (name, dims) in decls {
            if is_extern {
                out.push_str(&format!("static ::oxshmemi::cpu_rt::DynamicShared<{ty}> {name};"));
            } else if in_body {
                tag += 1;
                let t = format!("oxshmemi_shared_tag_{tag}");
                if dims.is_empty() {
                    out.push_str(&format!(
                        "struct {t} {{}}; {ty} &{name} = ::oxshmemi::cpu_rt::block_shared<{ty}, {t}>();"
                    ));
                } else {
                    out.push_str(&format!(
                        "struct {t} {{}}; {ty} (&{name}){dims} = ::oxshmemi::cpu_rt::block_shared<{ty}{dims}, {t}>();"
                    ));
                }
            } else {
                // a static __shared__ variable at namespace scope: left for the compiler to refuse
                out.clear();
                break;
            }
        }
        if out.is_empty() {
            continue;
        }
        out.pop(); // the last ';' stays in the source
        edits.push(Edit { start, end: semi, text: out });
    }

    let mut registered: Vec<(String, usize)> = Vec::new();
    for &at in &globals {
        edits.push(Edit { start: at, end: at + "__global__".len(), text: " ".repeat("__global__".len()) });
        let scope = scope_of(at);
        if scope.in_body {
            continue;
        }
        let head_start = stmt_start(&b, at);
        if String::from_utf8_lossy(&b[head_start..at])
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|w| w == "template")
        {
            continue;
        }
        // the name: the identifier before the first ( at depth 0
        let Some(paren) = (at..b.len()).find(|&k| b[k] == b'(' || b[k] == b';' || b[k] == b'{') else { continue };
        if b[paren] != b'(' {
            continue;
        }
        let mut e = paren;
        while e > at && b[e - 1].is_ascii_whitespace() {
            e -= 1;
        }
        let mut s = e;
        while s > at && is_ident(b[s - 1]) {
            s -= 1;
        }
        if s == e {
            continue;
        }
        let Some(params_end) = close_of(&b, paren) else { continue };
        let mut k = params_end;
        while k < b.len() && b[k].is_ascii_whitespace() {
            k += 1;
        }
        if b.get(k) != Some(&b'{') {
            continue; // a declaration
        }
        let mut name = scope.namespaces.join("::");
        if !name.is_empty() {
            name.push_str("::");
        }
        name.push_str(&src[s..e]);
        match registered.iter_mut().find(|r| r.0 == name) {
            Some(r) => r.1 += 1,
            None => registered.push((name, 1)),
        }
    }

    edits.sort_by_key(|e| std::cmp::Reverse(e.start));
    let mut out = src.to_string();
    let mut last_start = usize::MAX;
    for e in edits {
        if e.end > last_start {
            continue; // overlaps an edit already made (a launch inside a launch's arguments)
        }
        let newlines = src[e.start..e.end].matches('\n').count();
        out.replace_range(e.start..e.end, &(e.text + &"\n".repeat(newlines)));
        last_start = e.start;
    }
    let kernels: Vec<String> = registered.into_iter().filter(|r| r.1 == 1).map(|r| r.0).collect();
    if !kernels.is_empty() {
        out.push_str("\n// oshnvcc --target cpu: the kernels of this file, for launches by address\n");
        for (n, k) in kernels.iter().enumerate() {
            out.push_str(&format!("static ::oxshmemi::cpu_rt::KernelReg oxshmemi_kernel_reg_{n}(::{k}, \"{k}\");\n"));
        }
    }
    (out, kernels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_becomes_a_call_with_copied_arguments() {
        let (out, _) = rewrite("void f() {\n  k<<<g, b, 0, s>>>(x,\n y);\n  z();\n}\n");
        assert!(
            out.contains(
                "::oxshmemi::cpu_rt::Launch(g, b, 0, s).run([=](auto &&...oxshmemi_a) { k(oxshmemi_a...); }, x,  y)\n;"
            ),
            "{out}"
        );
        assert_eq!(out.matches('\n').count(), 5, "the line count is kept: {out}");
        let (out, _) = rewrite("void f() { ns::k<int, 4><<<dim3(2, 1), 32>>>(); }");
        assert!(
            out.contains("Launch(dim3(2, 1), 32).run([=](auto &&...oxshmemi_a) { ns::k<int, 4>(oxshmemi_a...); })"),
            "{out}"
        );
    }

    #[test]
    fn comments_and_strings_are_left_alone() {
        let src = "// k<<<1,1>>>()\nconst char *s = \"__shared__ int x; k<<<1,1>>>()\";\n";
        let (out, kernels) = rewrite(src);
        assert_eq!(out, src);
        assert!(kernels.is_empty());
    }

    #[test]
    fn shared_variables_become_per_block_references() {
        let (out, _) = rewrite(
            "__global__ void k() {\n  __shared__ __align__(16) int a[32][4], n;\n  extern __shared__ char smem[];\n}\n",
        );
        assert!(
            out.contains("int (&a)[32][4] = ::oxshmemi::cpu_rt::block_shared<int[32][4], oxshmemi_shared_tag_1>()"),
            "{out}"
        );
        assert!(out.contains("int &n = ::oxshmemi::cpu_rt::block_shared<int, oxshmemi_shared_tag_2>()"), "{out}");
        assert!(out.contains("static ::oxshmemi::cpu_rt::DynamicShared<char> smem;"), "{out}");
        assert!(!out.contains("__shared__"), "{out}");
    }

    #[test]
    fn kernels_at_namespace_scope_are_registered() {
        let src = "namespace a { namespace { __global__ void k(int *p) { } } }\n\
                   __global__ void decl(int);\n\
                   template <class T> __global__ void t(T x) {}\n\
                   extern \"C\" { __global__ void c() {} }\n\
                   __global__ void over(int) {}\n__global__ void over(long) {}\n";
        let (out, kernels) = rewrite(src);
        assert_eq!(kernels, vec!["a::k".to_string(), "c".to_string()]);
        assert!(out.contains("KernelReg oxshmemi_kernel_reg_0(::a::k, \"a::k\")"), "{out}");
        assert!(!out.contains("__global__"), "{out}");
    }
}
