#!/usr/bin/env python3
"""Regenerate nvshmem_host_prototypes.tsv from NVIDIA's NVSHMEM headers.

Usage:
    python3 extract_nvshmem_prototypes.py NVSHMEM_INCLUDE CUDA_INCLUDE [-o OUT] [--api LIST]

Getting the headers (only PyPI is needed; unzip the wheels):
    pip download --no-deps nvidia-nvshmem-cu13==3.8.0 nvidia-cuda-runtime nvidia-cuda-crt \
        nvidia-cuda-cccl -d whl && for w in whl/*.whl; do unzip -qo "$w" -d x; done
    python3 extract_nvshmem_prototypes.py x/nvidia/nvshmem/include x/nvidia/cu13/include

NVSHMEM_INCLUDE holds nvshmem.h/nvshmemx.h; CUDA_INCLUDE holds cuda_runtime.h, cuda.h,
cuda_fp16.h, cuda_bf16.h, crt/, and the CCCL headers (nv/target, cuda/atomic) in it or in its
cccl/ subfolder (CUDA 13 layout). The script checks that g++ -std=c++17 (host mode, no
__CUDACC__) accepts `#include <nvshmem.h>` + `#include <nvshmemx.h>`, preprocesses that with
-E -dD (once plain, once with CUDA's __annotate__ kept as __attribute__((host|device|global)) so
__device__-only declarations can be told apart; both views must agree), parses every function
declaration/definition that comes from the NVSHMEM headers, keeps the host-callable ones (no
location attribute, or __host__) at global scope, and writes one row per host name of LIST
(default: nvshmem_api.tsv beside this script, tag host|both, no `::`), in LIST order. Names
3.8.0 does not declare for the host get `?` (the reason goes to stderr). --report prints
oddities (header-inline definitions, default arguments, C++ linkage). Needs Python 3 and g++.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

STORAGE = {"static", "inline", "extern", "__inline__", "__inline", "__forceinline__",
           "__noinline__", "__inline_hint__", "constexpr", "virtual", "explicit", "friend"}

TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>(?:u8|u|U|L)?"(?:\\.|[^"\\])*")
  | (?P<chr>(?:u8|u|U|L)?'(?:\\.|[^'\\])*')
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<punct>::|->\*?|\.\.\.|<<=|>>=|<=>|[-+*/%&|^!=<>]=|&&|\|\||\+\+|--|<<|>>|\#\#|[{}()\[\];,.:?~!%^&*+\-=<>/|\#@\\])
""", re.X)


def tokenize(text):
    out = []
    pos = 0
    n = len(text)
    while pos < n:
        m = TOKEN_RE.match(text, pos)
        if not m:
            out.append(text[pos])
            pos += 1
            continue
        pos = m.end()
        if m.lastgroup != "ws":
            out.append(m.group())
    return out


def read_api_list(path):
    names = []
    with open(path) as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 2 and cols[1] in ("host", "both") and "::" not in cols[0]:
                names.append(cols[0])
    return names


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, **kw)


def split_preprocessed(text, nv_inc):
    """Split `g++ -E -dD` output into (tokens-with-origin, macros).

    Returns a list of (token, file, include_stack) for text that comes from files under
    nv_inc, and a dict of macro name -> (params or None, body, file) for #defines in them.
    """
    nv_inc = os.path.realpath(nv_inc)
    stack = []
    cur = None
    chunks = []  # (file, stack tuple, text)
    macros = {}
    buf = []

    def flush():
        if buf and cur and cur.startswith(nv_inc + os.sep):
            chunks.append((cur, tuple(stack), "\n".join(buf)))
        buf.clear()

    for line in text.split("\n"):
        m = re.match(r'^# (\d+) "(.*)"((?: \d)*)$', line)
        if m:
            flush()
            fname = m.group(2)
            flags = m.group(3).split()
            path = os.path.realpath(fname) if not fname.startswith("<") else fname
            if "1" in flags:
                stack.append(path)
            elif "2" in flags:
                while stack and stack[-1] != path:
                    stack.pop()
                if not stack:
                    stack.append(path)
            else:
                if stack:
                    stack[-1] = path
                else:
                    stack.append(path)
            cur = path
            continue
        if line.startswith("#define ") or line.startswith("#undef "):
            if cur and cur.startswith(nv_inc + os.sep):
                md = re.match(r"#define ([A-Za-z_]\w*)(\(([^)]*)\))?\s?(.*)$", line)
                if md:
                    params = md.group(3) if md.group(2) else None
                    macros[md.group(1)] = (params, md.group(4).strip(), cur)
                mu = re.match(r"#undef ([A-Za-z_]\w*)", line)
                if mu:
                    macros.pop(mu.group(1), None)
            continue
        if line.startswith("#"):
            continue  # pragmas etc.
        buf.append(line)
    flush()
    toks = []
    for fname, stk, txt in chunks:
        for t in tokenize(txt):
            toks.append((t, fname, stk))
    return toks, macros


def strip_attributes(tokens):
    """Remove __attribute__((...)), __declspec(...), alignas(...), [[...]]; return (tokens, attrs)."""
    out = []
    attrs = []
    i = 0
    n = len(tokens)
    while i < n:
        t = tokens[i]
        if t in ("__attribute__", "__declspec", "alignas", "__asm__", "asm", "__asm",
                 "noexcept", "throw") and i + 1 < n and tokens[i + 1] == "(":
            depth = 0
            j = i + 1
            while j < n:
                if tokens[j] == "(":
                    depth += 1
                elif tokens[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            inner = tokens[i + 2:j]
            if t == "__attribute__":
                attrs.extend(x for x in inner if re.match(r"^[A-Za-z_]\w*$", x))
            i = j + 1
            continue
        if t == "noexcept":
            i += 1
            continue
        if t == "[" and i + 1 < n and tokens[i + 1] == "[":
            depth = 0
            j = i
            while j < n:
                if tokens[j] == "[":
                    depth += 1
                elif tokens[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            attrs.extend(x for x in tokens[i + 2:j - 1] if re.match(r"^[A-Za-z_]\w*$", x))
            i = j + 1
            continue
        out.append(t)
        i += 1
    return out, attrs


def join_tokens(tokens):
    """Join type tokens: single spaces, `T *name`, `T **`, `, ` between items."""
    s = ""
    prev = None
    for t in tokens:
        if prev is None:
            s = t
        elif t in (",",):
            s += ","
        elif t in (")", "]") or prev in ("(", "[", "::") or t in ("::",) or t == "[":
            s += t
        elif t == "(":
            s += t if re.match(r"^\w+$", prev) and prev not in ("const", "volatile") else " " + t
        elif prev in ("*", "&", "&&") and t not in ("const", "volatile", "restrict",
                                                    "__restrict__", "__restrict"):
            s += t
        elif prev == "<" or t == ">" or (t == "<" and re.match(r"^\w+$", prev)):
            s += t
        else:
            s += " " + t
        prev = t
    return s


def split_params(tokens):
    parts = []
    depth = 0
    cur = []
    for t in tokens:
        if t in ("(", "[", "{", "<"):
            depth += 1
        elif t in (")", "]", "}", ">"):
            depth -= 1
        if t == "," and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur or parts:
        parts.append(cur)
    return parts


class Decl:
    __slots__ = ("name", "ret", "params", "file", "stack", "attrs", "storage", "scope",
                 "is_def", "template", "c_linkage", "defaults")


def parse_declarations(toks):
    """Walk the token stream; return a list of Decl for functions at namespace scope."""
    decls = []
    scopes = []  # list of ("externC"|"namespace"|"block", name)
    i = 0
    n = len(toks)
    stmt = []  # token triples of the current statement

    def skip_balanced(k, open_t, close_t):
        depth = 0
        while k < n:
            if toks[k][0] == open_t:
                depth += 1
            elif toks[k][0] == close_t:
                depth -= 1
                if depth == 0:
                    return k
            k += 1
        return k

    def finish(stmt_toks, is_def):
        if not stmt_toks:
            return
        words = [t for t, _, _ in stmt_toks]
        fname, stk = stmt_toks[0][1], stmt_toks[0][2]
        template = False
        if words[0] == "template":
            template = True
            # drop template<...> header
            depth = 0
            k = 1
            while k < len(words):
                if words[k] == "<":
                    depth += 1
                elif words[k] == ">":
                    depth -= 1
                    if depth == 0:
                        break
                elif words[k] == ">>":
                    depth -= 2
                    if depth <= 0:
                        break
                k += 1
            words = words[k + 1:]
        if not words or words[0] in ("typedef", "using", "struct", "class", "union", "enum",
                                     "static_assert", "namespace"):
            if not (words and words[0] in ("struct", "enum", "union") and "(" in words
                    and "{" not in words):
                return
        words, attrs = strip_attributes(words)
        # find first top-level '(' whose predecessor is an identifier (the declarator name)
        depth = 0
        k = None
        for idx, w in enumerate(words):
            if w == "=" and depth == 0:
                return  # variable with initializer
            if w == "(":
                if depth == 0:
                    k = idx
                    break
                depth += 1
        if k is None or k == 0:
            return
        name = words[k - 1]
        if not re.match(r"^[A-Za-z_]\w*$", name) or name in ("operator", "decltype", "sizeof"):
            return
        if k >= 2 and words[k - 2] in ("::", "~", "operator"):
            return
        close = k
        depth = 0
        while close < len(words):
            if words[close] == "(":
                depth += 1
            elif words[close] == ")":
                depth -= 1
                if depth == 0:
                    break
            close += 1
        pre = words[:k - 1]
        storage = [w for w in pre if w in STORAGE]
        ret = [w for w in pre if w not in STORAGE]
        if not ret:
            return  # constructor-like / macro call
        ptoks = words[k + 1:close]
        params = split_params(ptoks)
        defaults = []
        plist = []
        for p in params:
            p, pattrs = strip_attributes(p)
            if "=" in p:
                defaults.append(join_tokens(p))
            plist.append(join_tokens(p))
        if plist == [] or plist == ["void"]:
            plist = ["void"]
        d = Decl()
        d.name = name
        d.ret = join_tokens(ret)
        d.params = ", ".join(plist)
        d.file = fname
        d.stack = stk
        d.attrs = attrs
        d.storage = storage
        d.scope = "::".join(s[1] for s in scopes if s[0] == "namespace")
        d.c_linkage = any(s[0] == "externC" for s in scopes)
        d.is_def = is_def
        d.template = template
        d.defaults = defaults
        decls.append(d)

    while i < n:
        t = toks[i][0]
        if t == ";" and not stmt:
            i += 1
            continue
        if t == "}" and not stmt:
            if scopes:
                scopes.pop()
            i += 1
            continue
        if t == "extern" and not stmt and i + 2 < n and toks[i + 1][0].startswith('"') \
                and toks[i + 2][0] == "{":
            scopes.append(("externC", toks[i + 1][0]))
            i += 3
            continue
        if t == "namespace" and not stmt:
            j = i + 1
            names = []
            while j < n and toks[j][0] != "{" and toks[j][0] != ";" and toks[j][0] != "=":
                names.append(toks[j][0])
                j += 1
            if j < n and toks[j][0] == "{":
                scopes.append(("namespace", "".join(names) or "(anonymous)"))
                i = j + 1
                continue
        if t in ("(", "["):
            close = ")" if t == "(" else "]"
            j = skip_balanced(i, t, close)
            stmt.extend(toks[i:j + 1])
            i = j + 1
            continue
        if t == "{":
            words = [w for w, _, _ in stmt]
            sw, _ = strip_attributes(words)
            is_func = False
            if sw and ")" in sw and sw[0] not in ("typedef", "struct", "class", "union", "enum",
                                                  "using") and "=" not in sw:
                is_func = True
            if sw and sw[0] == "template" and ")" in sw and not any(
                    w in ("struct", "class", "union") for w in sw[:sw.index(")")]):
                is_func = True
            j = skip_balanced(i, "{", "}")
            if is_func:
                finish(stmt, True)
                stmt = []
                i = j + 1
                continue
            # aggregate body: skip, keep statement going until ';'
            stmt.append(("{...}", toks[i][1], toks[i][2]))
            i = j + 1
            continue
        if t == ";":
            finish(stmt, False)
            stmt = []
            i += 1
            continue
        stmt.append(toks[i])
        i += 1
    return decls


def header_of(decl):
    """nvshmem.h or nvshmemx.h: the public header family of the declaring file."""
    for path in [decl.file] + list(reversed(decl.stack)):
        base = os.path.basename(path)
        if base.startswith("nvshmemx"):
            return "nvshmemx.h"
        if base in ("nvshmem_api.h", "nvshmem_coll_api.h", "nvshmem_defines.h",
                    "nvshmem_coll_defines.cuh", "nvshmem.h", "nvshmem_host.h"):
            return "nvshmem.h"
    return "nvshmem.h"


def is_host(decl):
    a = set(decl.attrs)
    if "global" in a or "__global__" in a:
        return False
    if "device" in a or "__device__" in a:
        return "host" in a or "__host__" in a
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nvshmem_include")
    ap.add_argument("cuda_include")
    ap.add_argument("-o", "--out", default=os.path.join(HERE, "nvshmem_host_prototypes.tsv"))
    ap.add_argument("--api", default=os.path.join(HERE, "nvshmem_api.tsv"))
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--wheel", default="nvidia-nvshmem-cu13",
                    help="name of the pip wheel the headers came from (for the comment)")
    ap.add_argument("--report", action="store_true", help="print oddities to stderr")
    args = ap.parse_args()

    nv = os.path.realpath(args.nvshmem_include)
    cu = os.path.realpath(args.cuda_include)
    incs = ["-I" + nv, "-I" + cu]
    if os.path.isdir(os.path.join(cu, "cccl")):
        incs.append("-I" + os.path.join(cu, "cccl"))  # CUDA 13 layout of CCCL
    with tempfile.TemporaryDirectory() as td:
        # plain: what a host C++ translation unit sees (no __CUDACC__: CUDA's host_defines.h
        # turns __host__/__device__/__global__ into nothing).
        plain = os.path.join(td, "nvshmem_host_api.cpp")
        with open(plain, "w") as fh:
            fh.write("#include <nvshmem.h>\n#include <nvshmemx.h>\n")
        # annotated: the same, but CUDA's __annotate__ (behind __host__, __device__, __global__)
        # is redefined after cuda_runtime.h so the location survives as __attribute__((device))
        # and device-only declarations can be told from host ones.
        annot = os.path.join(td, "nvshmem_host_api_annotated.cpp")
        with open(annot, "w") as fh:
            fh.write("#include <cuda_runtime.h>\n#undef __annotate__\n"
                     "#define __annotate__(a) __attribute__((a))\n"
                     "#include <nvshmem.h>\n#include <nvshmemx.h>\n")
        for src in (plain, annot):
            chk = run([args.cxx, "-std=c++17", "-fsyntax-only", "-w"] + incs + [src])
            if chk.returncode != 0:
                sys.exit("host C++ compile check of %s failed:\n%s" % (
                    os.path.basename(src), chk.stderr[-4000:]))
        pp_plain = run([args.cxx, "-std=c++17", "-E", "-dD"] + incs + [plain])
        pp = run([args.cxx, "-std=c++17", "-E", "-dD"] + incs + [annot])
        if pp.returncode != 0 or pp_plain.returncode != 0:
            sys.exit("preprocessing failed:\n" + (pp.stderr + pp_plain.stderr)[-4000:])
    toks, macros = split_preprocessed(pp.stdout, nv)
    decls = parse_declarations(toks)
    # cross-check: apart from the location attributes both views declare the same functions
    plain_decls = parse_declarations(split_preprocessed(pp_plain.stdout, nv)[0])
    sig = lambda ds: sorted((d.scope, d.name, d.ret, d.params) for d in ds)
    if sig(plain_decls) != sig(decls):
        sys.exit("plain and annotated preprocessing disagree on the declarations")

    by_name = {}
    for d in decls:
        if d.scope:
            continue  # C++ namespaced declarations (nvshmemx::...) are out of scope
        by_name.setdefault(d.name, []).append(d)

    names = read_api_list(args.api)
    ver = ".".join(macros.get(k, (None, "?"))[1] for k in (
        "NVSHMEM_VENDOR_MAJOR_VERSION", "NVSHMEM_VENDOR_MINOR_VERSION",
        "NVSHMEM_VENDOR_PATCH_VERSION"))
    cudart = re.search(r"^#define CUDART_VERSION (\d+)", pp.stdout, re.M)
    cudaver = "?"
    if cudart:
        v = int(cudart.group(1))
        cudaver = "%d.%d" % (v // 1000, (v % 1000) // 10)

    rows = []
    missing = []
    notes = []
    for name in names:
        cands = [d for d in by_name.get(name, []) if is_host(d)]
        if not cands:
            dev = by_name.get(name, [])
            m = macros.get(name)
            missing.append((name, "device-only" if dev else
                            ("macro %s%s -> %s" % (name, "(" + m[0] + ")" if m[0] is not None
                                                   else "", m[1]) if m else "not declared")))
            rows.append((name, "?", "?", "?"))
            continue
        protos = {(d.ret, d.params) for d in cands}
        if len(protos) > 1:
            notes.append("%s: %d host declarations: %s" % (
                name, len(protos), " | ".join("%s %s(%s)" % (r, name, p) for r, p in protos)))
        d = cands[0]
        extra = []
        if d.is_def:
            extra.append("defined inline in the header (%s)" % " ".join(d.storage))
        if d.defaults:
            extra.append("default arguments: " + "; ".join(d.defaults))
        if d.template:
            extra.append("template")
        if "host" in d.attrs:
            extra.append("__host__ __device__")
        if not d.c_linkage:
            extra.append("C++ linkage (declared outside extern \"C\")")
        if extra:
            notes.append("%s: %s" % (name, ", ".join(extra)))
        rows.append((name, d.ret, d.params, header_of(d)))

    # self-check: the compiler must agree that each row is the exact function type declared
    with tempfile.TemporaryDirectory() as td:
        src = os.path.join(td, "verify_rows.cpp")
        with open(src, "w") as fh:
            fh.write("#include <nvshmem.h>\n#include <nvshmemx.h>\n#include <type_traits>\n")
            for name, ret, params, _ in rows:
                if ret != "?":
                    fh.write("static_assert(std::is_same<decltype(&%s), %s (*)(%s)>::value, "
                             "\"%s\");\n" % (name, ret, params, name))
        chk = run([args.cxx, "-std=c++17", "-fsyntax-only", "-w"] + incs + [src])
        if chk.returncode != 0:
            sys.exit("row self-check failed:\n" + chk.stderr[-4000:])

    with open(args.out, "w") as fh:
        fh.write("# name\treturn\tparams\theader\n")
        fh.write("# source: NVIDIA nvshmem %s public headers (nvshmem.h, nvshmemx.h and what they "
                 "include) from the pip wheel %s, host declarations as compiled by a host C++ "
                 "compiler (g++ -std=c++17, no __CUDACC__) with the CUDA %s headers (pip wheels "
                 "nvidia-cuda-runtime, -crt, -cccl); every row checked against the headers by "
                 "the compiler (static_assert on decltype); regenerate with "
                 "extract_nvshmem_prototypes.py\n" % (ver, args.wheel, cudaver))
        fh.write("# rows: every host-callable name of nvshmem_api.tsv (tag host|both, no ::), in "
                 "its order; return/params as declared (single spaces, `T *name`, `void` for an "
                 "empty list); header: the public header whose API files declare it (nvshmem.h "
                 "alone already declares every row: it includes host/nvshmemx_api.h through "
                 "nvshmem_host.h); `?`: not declared for the host by %s\n" % ver)
        for r in rows:
            fh.write("\t".join(r) + "\n")

    print("%d names, %d with prototypes, %d with '?'" % (len(rows), len(rows) - len(missing),
                                                       len(missing)), file=sys.stderr)
    for name, why in missing:
        print("  ? %s: %s" % (name, why), file=sys.stderr)
    if args.report:
        for line in notes:
            print("  note " + line, file=sys.stderr)


if __name__ == "__main__":
    main()
