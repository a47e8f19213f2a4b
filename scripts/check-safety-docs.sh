#!/usr/bin/env bash
# Lists every `unsafe fn` whose doc comment has no `# Safety` section.
#
#   scripts/check-safety-docs.sh [PATH ...]    # default: the whole repository
#
# Looks at every *.rs file under the PATHs (relative to the repository root), skipping any
# target/ and .git/ directory. An `unsafe fn` is a line that begins (after indentation) with an
# item such as `unsafe fn f`, `pub(crate) unsafe fn f`, `const unsafe fn f` or
# `pub unsafe extern "C" fn f` (also `fn $name` inside a macro); a pointer type such as
# `unsafe extern "C" fn(c_int)` is not one. Its doc comment is the block of lines right above
# it made of `///` lines, attributes (`#[...]`, possibly over several lines, and a macro's
# `$(#[$m])*`) and plain `//` comments; a blank line or any other line ends it. The block
# passes when a `///` line is a `# Safety` heading or a `#[doc = ...]` attribute contains
# `# Safety` (so a macro can write the section into each function it generates).
#
# Prints FILE:LINE: SIGNATURE for each one that fails, then a summary line
# `N unsafe fns, M without a # Safety section`; exits 1 if M > 0.
#
# Clippy's `missing_safety_doc` does the same for exported functions only; this also covers
# private, `pub(crate)` and macro-generated ones.
set -euo pipefail

cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- .

# One awk over all files, so that the summary counts them all.
mapfile -t files < <(find "$@" \( -name target -o -name .git \) -prune -o -type f -name '*.rs' -print | LC_ALL=C sort)
[ ${#files[@]} -gt 0 ] || { echo "no *.rs files under $*" >&2; exit 2; }
awk '
    function reset() { doc = 0; safety = 0 }
    function count(s, c,    n, i) {
        n = 0
        for (i = 1; i <= length(s); i++) if (substr(s, i, 1) == c) n++
        return n
    }
    FNR == 1 { reset(); depth = 0; docattr = 0 }
    {
        line = $0
        sub(/^[ \t]+/, "", line)
    }
    # The rest of an attribute that began on an earlier line.
    depth > 0 {
        if (docattr && line ~ /# Safety/) safety = 1
        depth += count(line, "[") - count(line, "]")
        next
    }
    line ~ /^\/\/\// {
        doc = 1
        if (line ~ /^\/\/\/[ \t]*#[ \t]+Safety[ \t]*$/) safety = 1
        next
    }
    line ~ /^(\$\()?#\[/ {
        docattr = (line ~ /^(\$\()?#\[[ \t]*doc[ \t]*=/)
        if (docattr) { doc = 1; if (line ~ /# Safety/) safety = 1 }
        depth = count(line, "[") - count(line, "]")
        next
    }
    line ~ /^\/\// { next }
    line ~ /^(pub(\([^)]*\))?[ \t]+)?((const|async|default)[ \t]+)*unsafe[ \t]+(extern[ \t]+"[^"]*"[ \t]+)?fn[ \t]+[A-Za-z_$]/ {
        total++
        if (!safety) {
            missing++
            sig = line
            sub(/[ \t]*\{[^{]*$/, "", sig)
            sub(/^\.\//, "", FILENAME)
            printf "%s:%d: %s%s\n", FILENAME, FNR, sig, (doc ? "" : "  (no doc comment)")
        }
        reset()
        next
    }
    { reset() }
    END {
        printf "%d unsafe fns, %d without a # Safety section\n", total, missing
        exit missing > 0
    }
' "${files[@]}"
