//! Module-import cycles inside the runtime and the C library (issue 33: no cycle spanning more
//! than one concern). Each top-level module of a crate (`src/x.rs` or `src/x/`) is a node; an
//! edge `a -> b` is a `crate::b` path in a file of `a` outside comments (`use crate::b::…`,
//! `use crate::{b, …}`, `crate::b::f()`). The strongly connected components with more than
//! one module are the cycles. The C library has none. The runtime has one, its hub: `world`
//! holds the `Runtime` that the other modules extend with their own `impl Runtime` blocks, and
//! builds and ends the parts in it (docs/architecture.md, "Layers"); without `world` there is
//! none. A new edge that closes a cycle fails here with the modules and edges of the cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The top-level modules of the crate whose sources are in `src`.
fn modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let p = e.path();
            if p.is_dir() {
                Some(name)
            } else {
                let stem = name.strip_suffix(".rs")?;
                (stem != "lib" && stem != "main").then(|| stem.to_string())
            }
        })
        .collect()
}

/// The Rust files under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// An identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of every `crate::` path in `code` (a group `crate::{a, b::c}` gives
/// `a` and `b`).
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        // `oxshmem_crate::x` or `$crate::x` are not this crate's paths.
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // The items at depth 1 of the group, up to its closing brace.
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if depth == 1 && item_start && (c.is_ascii_alphabetic() || c == '_') => {
                        out.push(ident(&group[i..]).to_string());
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.push(ident(rest).to_string());
        }
    }
    out
}

/// The import graph of the crate whose sources are in `src`, between its top-level modules.
fn graph(src: &Path) -> Graph {
    let mods = modules(src);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g: Graph = mods.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let first = rel.components().next().and_then(|c| c.as_os_str().to_str()).expect("a path");
        let from = first.strip_suffix(".rs").unwrap_or(first);
        if !mods.contains(from) {
            continue; // lib.rs: the crate root declares every module
        }
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let code: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        for to in crate_paths(&code) {
            if to != from && mods.contains(&to) {
                g.get_mut(from).expect("a module").insert(to);
            }
        }
    }
    g
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(g: &Graph) -> Vec<BTreeSet<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in &t.g[v] {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = BTreeSet::new();
            loop {
                let w = t.stack.pop().expect("on the stack");
                t.on.remove(w);
                comp.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t =
        T { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The cycles of `g`, each with its edges, for a message.
fn show(g: &Graph, found: &[BTreeSet<String>]) -> String {
    found
        .iter()
        .map(|c| {
            c.iter()
                .map(|a| format!("  {a} -> {:?}", g[a].iter().filter(|b| c.contains(*b)).collect::<Vec<_>>()))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn src(dir: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir).join("src")
}

#[test]
fn the_path_parser_sees_plain_grouped_and_nested_paths() {
    let code = "use crate::a::b;\nuse crate::{c, d::{e, f}, g::h};\nlet x = crate::i::j();\n$crate::k::l; foo_crate::m";
    assert_eq!(crate_paths(code), ["a", "c", "d", "g", "i"]);
    let g: Graph = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
        .collect();
    let found = cycles(&g);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0], ["a", "b", "c"].into_iter().map(String::from).collect());
}

#[test]
fn the_c_library_has_no_module_cycle() {
    let g = graph(&src("bindings/c"));
    assert!(g.len() > 10, "found only {} modules: {g:?}", g.len());
    let found = cycles(&g);
    assert!(found.is_empty(), "module cycles in bindings/c:\n{}", show(&g, &found));
}

#[test]
fn the_runtime_has_no_module_cycle_but_its_world_hub() {
    let g = graph(&src("runtime"));
    assert!(g.len() > 15, "found only {} modules: {g:?}", g.len());
    let found = cycles(&g);
    let hub: BTreeSet<String> =
        ["heap", "segment", "team", "transport", "world"].into_iter().map(String::from).collect();
    assert!(
        found.len() == 1 && found[0] == hub,
        "the runtime's only cycle should be the world hub {hub:?}:\n{}",
        show(&g, &found)
    );
    // Without the hub, none.
    let mut rest = g.clone();
    rest.remove("world");
    for to in rest.values_mut() {
        to.remove("world");
    }
    let found = cycles(&rest);
    assert!(found.is_empty(), "module cycles in the runtime besides world:\n{}", show(&rest, &found));
}
