//! The README's table of folders names every example program this crate builds.

use std::path::Path;

#[test]
fn the_readme_lists_every_example() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("reading examples/Cargo.toml");
    let readme = std::fs::read_to_string(dir.join("../README.md")).expect("reading README.md");
    let row =
        readme.lines().find(|l| l.starts_with("| `examples/` |")).expect("README.md's table has a row for examples/");
    // Every `[[bin]]`'s name: the line after it is `name = "..."`.
    let mut lines = manifest.lines();
    let mut bins = Vec::new();
    while let Some(l) = lines.next() {
        if l.trim() == "[[bin]]" {
            let name = lines.next().and_then(|n| n.trim().strip_prefix("name = ")).expect("name = after [[bin]]");
            bins.push(name.trim_matches('"').to_string());
        }
    }
    assert!(bins.len() >= 8, "examples/Cargo.toml's bins: {bins:?}");
    let missing: Vec<&String> = bins.iter().filter(|b| !row.contains(&format!("`{b}`"))).collect();
    assert!(missing.is_empty(), "README.md's examples/ row does not name {missing:?}:\n{row}");
}
