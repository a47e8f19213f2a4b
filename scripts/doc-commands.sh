#!/usr/bin/env bash
# Runs every shell command the documentation shows, as a user would type it.
#
#   scripts/doc-commands.sh [--list] [FILE.md ...]
#
# Finds every fenced block whose language is sh, bash, shell or console in the repository's
# Markdown files (README.md, docs/*.md, bindings/*/README.md, then every other *.md outside
# target/ and .git/; or the files named) and runs each, in document order, from the
# repository root, in a fresh `bash -euo pipefail` under a timeout. Of a console block only
# the `$ ` lines (and their `\` continuations) are commands; the rest is output. Other blocks
# (text, rust, fortran, unlabelled) are not run.
#
# Where a block writes files, they go to a scratch directory made for this run: HOME and
# TMPDIR point into it (CARGO_HOME and RUSTUP_HOME stay where they were), so an install prefix
# of $HOME/opt/oxshmem and a `mktemp -d` land there, and it is removed at the end. Blocks run
# from the repository root, so they share what earlier blocks built or installed, as for a
# reader going down the page. A block that leaves new untracked files in the repository fails.
#
# A block that must not run is marked by a comment on the line before its fence (blank lines
# between are allowed):
#
#   <!-- doc-commands: skip (run by .ci/run itself) -->
#
# Prints each block's file:line with PASS, FAIL or SKIP (and the reason), the output of a
# failed block, and last a line `N passed, M failed`; exits 1 if a block failed, and also when
# nothing ran: no block found, a FILE named without one, README.md without one (when no FILE is
# named), or every block skipped.
#
# Environment: DOC_COMMANDS_TIMEOUT (seconds per block, default 600), DOC_COMMANDS_KEEP=1
# (keep the scratch directory), DOC_COMMANDS_VERBOSE=1 (print every block's output).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

timeout_s=${DOC_COMMANDS_TIMEOUT:-600}
list_only=0
files=()
for a in "$@"; do
    case $a in
        --list) list_only=1 ;;
        -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        -*) echo "doc-commands: unknown option $a" >&2; exit 2 ;;
        *) files+=("${a#./}") ;;
    esac
done

# The files, in reading order: README.md, docs/, bindings/*/README.md, then the rest.
named=${#files[@]}
if ((${#files[@]} == 0)); then
    mapfile -t all < <(find . \( -name target -o -name .git \) -prune -o -type f -name '*.md' -print |
        sed 's|^\./||' | LC_ALL=C sort)
    declare -A seen=()
    for f in README.md docs/*.md bindings/*/README.md "${all[@]}"; do
        [[ -f $f && -z ${seen[$f]:-} ]] || continue
        seen[$f]=1
        files+=("$f")
    done
fi

# ---- Finding the blocks ----------------------------------------------------------------------
b_file=() b_line=() b_lang=() b_skip=() b_text=() b_error=()

# The commands of a console block: `$ ` lines and their continuations.
console_commands() {
    local line cont=0
    while IFS= read -r line; do
        if ((cont)); then
            printf '%s\n' "$line"
        elif [[ $line =~ ^[[:space:]]*\$\ (.*)$ ]]; then
            line=${BASH_REMATCH[1]}
            printf '%s\n' "$line"
        else
            continue
        fi
        [[ $line == *\\ ]] && cont=1 || cont=0
    done
}

scan() {
    local f=$1 n=0 line in=0 fchar='' flen=0 indent=0 lang='' start=0 text='' marker='' prev=''
    local re_open='^( {0,3})(`{3,}|~{3,})[[:space:]]*([^[:space:]`{]*)' re_close re_dir
    re_dir='^[[:space:]]*<!--[[:space:]]*doc-commands:[[:space:]]*(.*[^[:space:]])[[:space:]]*-->[[:space:]]*$'
    while IFS= read -r line || [[ -n $line ]]; do
        n=$((n + 1))
        line=${line%$'\r'}
        if ((!in)); then
            if [[ $line =~ $re_open ]]; then
                indent=${#BASH_REMATCH[1]}
                fchar=${BASH_REMATCH[2]:0:1}
                flen=${#BASH_REMATCH[2]}
                lang=${BASH_REMATCH[3],,}
                in=1 start=$n text=''
                marker=''
                [[ $prev =~ $re_dir ]] && marker=${BASH_REMATCH[1]}
            elif [[ $line =~ [^[:space:]] ]]; then
                prev=$line
            fi
            continue
        fi
        re_close="^ {0,3}[$fchar]{$flen,}[[:space:]]*$"
        if [[ $line =~ $re_close ]]; then
            in=0 prev=''
            case $lang in
                sh | bash | shell | console | shell-session) ;;
                *)
                    [[ -n $marker ]] &&
                        echo "doc-commands: note: $f:$start: a doc-commands comment before a '$lang' block, which is not run" >&2
                    continue
                    ;;
            esac
            [[ $lang == console || $lang == shell-session ]] && text=$(console_commands <<<"$text")$'\n'
            local skip='' error=''
            if [[ -n $marker ]]; then
                if [[ $marker =~ ^skip[[:space:]]*\((.*)\)$ || $marker =~ ^skip[[:space:]]*:?[[:space:]]*(.*)$ ]]; then
                    skip=${BASH_REMATCH[1]}
                    [[ -n $skip ]] || error="'doc-commands: skip' needs a reason: <!-- doc-commands: skip (why) -->"
                else
                    error="unknown directive 'doc-commands: $marker' (known: skip (reason))"
                fi
            fi
            b_file+=("$f") b_line+=("$start") b_lang+=("$lang") b_skip+=("$skip") b_text+=("$text")
            b_error+=("$error")
            continue
        fi
        # Content: remove up to the fence's own indentation.
        local k=0
        while ((k < indent)) && [[ ${line:0:1} == ' ' ]]; do line=${line:1}; k=$((k + 1)); done
        text+=$line$'\n'
    done <"$f"
    if ((in)); then
        b_file+=("$f") b_line+=("$start") b_lang+=("$lang") b_skip+=('') b_text+=('')
        b_error+=("the fence opened here is never closed")
    fi
}

for f in "${files[@]}"; do
    if [[ ! -f $f ]]; then
        echo "doc-commands: no such file: $f" >&2
        exit 2
    fi
    scan "$f"
done
nblocks=${#b_file[@]}

if ((list_only)); then
    for ((i = 0; i < nblocks; i++)); do
        what=${b_lang[i]}
        [[ -n ${b_skip[i]} ]] && what="skip (${b_skip[i]})"
        [[ -n ${b_error[i]} ]] && what="error: ${b_error[i]}"
        printf '%s:%s  %s\n' "${b_file[i]}" "${b_line[i]}" "$what"
    done
    exit 0
fi

# A run that finds nothing to run has tested nothing, and fails: no block at all, a file named
# on the command line without a shell block (a typo, a block that lost its language), or, of
# the whole documentation, a README.md without one.
if ((nblocks == 0)); then
    echo "doc-commands: no sh, bash, shell or console block in ${#files[@]} files: nothing to run" >&2
    exit 1
fi
blocks_in() {
    local g n=0
    for g in "${b_file[@]}"; do [[ $g == "$1" ]] && n=$((n + 1)); done
    echo "$n"
}
if ((named)); then
    for f in "${files[@]}"; do
        if (($(blocks_in "$f") == 0)); then
            echo "doc-commands: $f has no sh, bash, shell or console block: nothing of it would run" >&2
            exit 1
        fi
    done
elif (($(blocks_in README.md) == 0)); then
    echo "doc-commands: README.md has no shell block (or is missing): the documentation's commands were not found" >&2
    exit 1
fi

# ---- Running them ----------------------------------------------------------------------------
scratch=$(mktemp -d "${TMPDIR:-/tmp}/doc-commands.XXXXXX") || exit 2
running=''
cleanup() {
    [[ -n $running ]] && kill -TERM "$running" 2>/dev/null && wait "$running" 2>/dev/null
    if [[ ${DOC_COMMANDS_KEEP:-0} == 1 ]]; then
        echo "doc-commands: scratch directory kept: $scratch"
    else
        rm -rf "$scratch"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$scratch/home" "$scratch/tmp" "$scratch/blocks"

# The blocks' environment: the user's, with HOME and TMPDIR in the scratch directory.
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
block_env=(HOME="$scratch/home" TMPDIR="$scratch/tmp")

untracked() {
    git -C "$root" ls-files --others --exclude-standard 2>/dev/null | LC_ALL=C sort
}
# A file that appeared in the repository while a block ran is the block's if it is binary (a
# program, an object file, a .mod) or the block names it; other new files (the sources of someone
# working in this tree at the same time) are only mentioned.
is_litter() {
    local path=$1 text=$2
    [[ $text == *"${path##*/}"* ]] && return 0
    [[ -s $root/$path ]] && ! grep -Iq . "$root/$path" 2>/dev/null
}
have_git=0
git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1 && have_git=1

echo "doc-commands: $nblocks shell blocks in ${#files[@]} files; scratch HOME and TMPDIR under $scratch"
passed=0 failed=0 skipped=0 t_all=$(date +%s)
skipped_list=()
for ((i = 0; i < nblocks; i++)); do
    where="${b_file[i]}:${b_line[i]}"
    if [[ -n ${b_error[i]} ]]; then
        echo "FAIL  $where  (${b_error[i]})"
        failed=$((failed + 1))
        continue
    fi
    if [[ -n ${b_skip[i]} ]]; then
        echo "SKIP  $where  (${b_skip[i]})"
        skipped_list+=("$where (${b_skip[i]})")
        skipped=$((skipped + 1))
        continue
    fi
    script="$scratch/blocks/$i.sh"
    log="$scratch/blocks/$i.log"
    printf '%s' "${b_text[i]}" >"$script"
    ((have_git)) && before=$(untracked)
    t0=$(date +%s.%N)
    if [[ ${DOC_COMMANDS_VERBOSE:-0} == 1 ]]; then
        echo "----  $where"
        env "${block_env[@]}" timeout -k 10 "$timeout_s" bash -euo pipefail "$script" </dev/null \
            > >(tee "$log" | sed 's/^/    | /') 2>&1 &
    else
        env "${block_env[@]}" timeout -k 10 "$timeout_s" bash -euo pipefail "$script" </dev/null >"$log" 2>&1 &
    fi
    running=$!
    wait "$running"
    rc=$?
    running=''
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    why=''
    if ((rc == 124 || rc == 137)); then
        why="timed out after ${timeout_s} s"
    elif ((rc != 0)); then
        why="exit status $rc"
    fi
    if ((have_git)) && [[ -z $why ]]; then
        litter='' others=''
        while IFS= read -r new; do
            [[ -n $new ]] || continue
            if is_litter "$new" "${b_text[i]}"; then litter+="$new "; else others+="$new "; fi
        done < <(LC_ALL=C comm -13 <(printf '%s\n' "$before") <(untracked))
        [[ -n $others ]] && echo "note: new files appeared in the repository while $where ran, not counted" \
            "against it (neither binary nor named by it: someone else's work?): ${others% }"
        [[ -n $litter ]] &&
            why="left new files in the repository (write them under target/ or a mktemp -d): ${litter% }"
    fi
    if [[ -z $why ]]; then
        echo "PASS  $where  (${secs} s)"
        passed=$((passed + 1))
    else
        echo "FAIL  $where  ($why, ${secs} s)"
        if [[ ${DOC_COMMANDS_VERBOSE:-0} != 1 ]]; then
            echo "    the block:"
            sed 's/^/    $ /' "$script"
            echo "    its output (last 40 lines):"
            tail -n 40 "$log" | sed 's/^/    | /'
        fi
        failed=$((failed + 1))
    fi
done

echo "doc-commands: $((passed + failed + skipped)) blocks, $skipped skipped, $(($(date +%s) - t_all)) s"
for s in "${skipped_list[@]}"; do
    echo "  skipped: $s"
done
echo "$passed passed, $failed failed"
if ((passed + failed == 0)); then
    echo "doc-commands: every one of the $nblocks blocks was skipped: nothing ran" >&2
    exit 1
fi
((failed == 0))
