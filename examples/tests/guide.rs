//! The worked programs of docs/rust.md are the `heat` and `histogram` examples: the guide's
//! code blocks are the example files (less their `//!` header), and both run as real jobs at
//! several PE counts. (The guide's blocks also run as doc tests of `oxshmem`, as PE 0 of 1.)

use std::path::Path;
use std::time::Duration;

use oxshmem_tests::{Job, assert_job_ok, assert_stdout_has};

const HEAT: &str = env!("CARGO_BIN_EXE_heat");
const HISTOGRAM: &str = env!("CARGO_BIN_EXE_histogram");

/// The Rust block that follows the line naming `example` in docs/rust.md.
fn guide_block(example: &str) -> String {
    let guide = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/rust.md"))
        .expect("reading docs/rust.md");
    let marker = format!("the same program as {example}");
    let at = guide.find(&marker).unwrap_or_else(|| panic!("docs/rust.md has no line naming {example}"));
    let rest = &guide[at..];
    let start = rest.find("```rust\n").expect("a rust block after the marker") + "```rust\n".len();
    let len = rest[start..].find("\n```\n").expect("the block's closing fence") + 1;
    rest[start..start + len].to_string()
}

/// The example's source without its leading `//!` lines and the blank line after them.
fn example_code(example: &str) -> String {
    let src =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(example.trim_start_matches("examples/")))
            .unwrap_or_else(|e| panic!("reading {example}: {e}"));
    let body: Vec<&str> = src.lines().skip_while(|l| l.starts_with("//!")).skip_while(|l| l.is_empty()).collect();
    body.join("\n") + "\n"
}

#[test]
fn the_guides_worked_programs_are_the_examples() {
    for example in ["examples/heat.rs", "examples/histogram.rs"] {
        let (doc, code) = (guide_block(example), example_code(example));
        if doc != code {
            let line = doc.lines().zip(code.lines()).position(|(a, b)| a != b);
            panic!(
                "docs/rust.md's block and {example} differ (first at line {} of the block); \
                 copy one onto the other.\n--- docs/rust.md\n{doc}\n--- {example}\n{code}",
                line.map_or("past the end".to_string(), |l| (l + 1).to_string())
            );
        }
    }
}

#[test]
fn heat_agrees_with_the_serial_run_at_several_pe_counts() {
    for n in [1, 2, 3, 4] {
        let r = Job::new(n, HEAT).timeout(Duration::from_secs(60)).run();
        assert_job_ok(&r);
        assert_stdout_has(&r, &format!("heat: {} cells on {n} PEs, 500 steps: total heat ", 64 * n));
    }
}

#[test]
fn histogram_agrees_with_the_serial_count_at_several_pe_counts() {
    for n in [1, 2, 3, 4] {
        let r = Job::new(n, HISTOGRAM).timeout(Duration::from_secs(60)).run();
        assert_job_ok(&r);
        assert_stdout_has(&r, &format!("histogram: {} samples from {n} PEs in 40 bins", 20_000 * n));
    }
}
