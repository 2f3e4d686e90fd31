#!/usr/bin/env python3
"""The shape of the library's crates (src/ and crates/*/src, issue 67 item 1): files over 500
lines, functions over 100 lines, and circles among each crate's modules (issue 28): among its
top-level modules (a module and everything below it as one), then among all its modules (the
crates themselves cannot make a circle: cargo refuses one). Beside them it also lists the
functions over 100 lines of tests/ and python/ (Rust) and of scripts/ and python/ (Python).
Prints the lists; exits 0, or with --check (scripts/ci/test.sh, issue 67) 1 when any of those
functions is over 100 lines, the top-level modules of a crate make a circle, or a Rust file of
src/, crates/, tests/ or python/ or a Python file of scripts/ or python/ is over 700 lines.
Usage: scripts/ci/code-shape.py [--check] [SRC]   (SRC: one crate's source folder alone; by
default src/ and crates/*/src of this repository)

A module is a file of its crate (SRC/a/b.rs or SRC/a/b/mod.rs is `a::b`); a path naming a module
of another crate (`crate::tables` in crates/method, re-exported from crates/base) is no edge. An
edge A -> B is any path in A's
non-test code (a `use` or an inline `crate::`/`super::`/`self::` path) that names B or something
inside B; `mod` declarations are not edges. A circle is a strongly connected set of two or more
modules. Comments and string literals are ignored; `#[cfg(test)]` blocks are cut off.
"""
import ast
import os
import re
import sys

FILE_LIMIT = 500
FN_LIMIT = 100
HARD_FILE_LIMIT = 700  # --check: no Rust file of the project over this


SKIP_DIRS = ("target", ".venv", "venv", "__pycache__")


def files_under(root, tops):
    """Every file under root's (top, ext) folders, skipping build and virtualenv folders."""
    for top, ext in tops:
        for dirpath, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(names):
                if name.endswith(ext):
                    yield os.path.join(dirpath, name)


def rust_functions(code, rel):
    """(lines, rel::name) of every function of `code` (comments and strings blanked) over
    FN_LIMIT lines, from its `fn` line to its closing brace."""
    out = []
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        j = m.end()
        # find the body's opening brace (skip `;` = declaration without body)
        depth_paren = 0
        while j < len(code):
            ch = code[j]
            if ch in "(<[":
                depth_paren += 1
            elif ch in ")>]":
                depth_paren -= 1
            elif ch == ";" and depth_paren <= 0:
                j = -1
                break
            elif ch == "{" and depth_paren <= 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        d, k = 0, j
        while k < len(code):
            if code[k] == "{":
                d += 1
            elif code[k] == "}":
                d -= 1
                if d == 0:
                    break
            k += 1
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, k) + 1
        if last - first + 1 > FN_LIMIT:
            out.append((last - first + 1, f"{rel}::{m.group(1)}"))
    return out


def long_functions_beside(root):
    """The functions over FN_LIMIT lines outside src/: Rust of tests/ and python/, Python of
    scripts/ and python/."""
    out = []
    for path in files_under(root, (("tests", ".rs"), ("python", ".rs"))):
        with open(path, encoding="utf-8") as f:
            out += rust_functions(strip(f.read()), os.path.relpath(path, root))
    for path in files_under(root, (("scripts", ".py"), ("python", ".py"))):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FN_LIMIT:
                    out.append((n, f"{os.path.relpath(path, root)}::{node.name}"))
    return out


def over_limit(root):
    """(lines, path) of every .rs file under root's src/, crates/, tests/ and python/, and every
    .py file under scripts/ and python/, over HARD_FILE_LIMIT lines."""
    out = []
    tops = (("src", ".rs"), ("crates", ".rs"), ("tests", ".rs"), ("python", ".rs"),
            ("scripts", ".py"), ("python", ".py"))
    for path in files_under(root, tops):
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > HARD_FILE_LIMIT:
            out.append((n, os.path.relpath(path, root)))
    return sorted(out, reverse=True)


def strip(src):
    """Blank out comments and string/char literals, keeping newlines (line numbers hold)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 40]) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
        elif c == "'":
            m = re.match(r"'(\\[^']{1,10}|[^\\'])'", src[i:])
            if m:
                out.append("' '")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def cut_tests(code):
    m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", code)
    return code[: m.start()] if m else code


def modules(src_dir):
    mods = {}
    for root, _, files in os.walk(src_dir):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src_dir)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            mods[path] = tuple(rel)
    return mods


def expand_use(tree, prefix=()):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] as tuples."""
    tree = tree.strip()
    depth = 0
    for k, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                head = [p for p in tree[:k].split("::") if p.strip()]
                inner = tree[k + 1: tree.rindex("}")]
                parts, d, start = [], 0, 0
                for q, ch2 in enumerate(inner):
                    if ch2 == "{":
                        d += 1
                    elif ch2 == "}":
                        d -= 1
                    elif ch2 == "," and d == 0:
                        parts.append(inner[start:q])
                        start = q + 1
                parts.append(inner[start:])
                res = []
                base = prefix + tuple(h.strip() for h in head)
                for p in parts:
                    if p.strip():
                        res += expand_use(p, base)
                return res
            depth += 1
    name = tree.split(" as ")[0].strip()
    return [prefix + tuple(p.strip() for p in name.split("::") if p.strip())]


def resolve(path, here, known):
    """A path as written in module `here` -> the deepest known module it names, or None."""
    if not path:
        return None
    if path[0] == "crate":
        base, rest = (), path[1:]
    elif path[0] in ("super", "self"):
        base = here
        rest = list(path)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
        rest = tuple(rest)
    else:
        # a path relative to the current module: a child module `x::...`
        base, rest = here, path
        if base + rest[:1] not in known:
            return None
    best = None
    for k in range(len(rest) + 1):
        if base + tuple(rest[:k]) in known:
            best = base + tuple(rest[:k])
    return best


def shape_of(src, root):
    """(files over FILE_LIMIT, functions over FN_LIMIT, import edges between modules) of one
    crate's source folder SRC, files named from ROOT."""
    mods = modules(src)
    known = set(mods.values())
    big_files, long_fns, edges = [], [], {m: set() for m in known}
    for path, mod in sorted(mods.items()):
        text = open(path, encoding="utf-8").read()
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        rel = os.path.relpath(path, root)
        if lines > FILE_LIMIT:
            big_files.append((lines, rel))
        code = strip(text)
        long_fns += rust_functions(code, rel)
        code = cut_tests(code)
        # A visibility `pub(in crate::a)` names no import.
        code = re.sub(r"\bpub\s*\(\s*in\s+[\w:]+\s*\)", "pub", code)
        paths = []
        for u in re.finditer(r"\buse\s+([^;]+);", code):
            paths += expand_use(u.group(1))
        for p in re.finditer(r"(?<![\w:])(\w+(?:::\w+)+)", code):
            paths.append(tuple(p.group(1).split("::")))
        for p in paths:
            target = resolve(p, mod, known)
            if target is not None and target != mod and target != ():
                edges[mod].add(target)
    return sorted(big_files, reverse=True), long_fns, edges


def listed(title, rows):
    """Prints `title: N` and the (lines, name) rows under it."""
    print(f"{title}: {len(rows)}")
    for n, f in rows:
        print(f"  {n:5} {f}")


def top_level_circles(edges, crate):
    """Prints and returns the circles among the top-level modules of CRATE (its source folder),
    each with the edges behind it."""
    top = {}
    for a, bs in edges.items():
        for b in bs:
            if a[:1] != b[:1] and a and b:
                top.setdefault(a[:1], set()).add(b[:1])
    top_circles = [sorted(s) for s in tarjan(top) if len(s) > 1]
    print(f"circles among top-level modules of {crate}: {len(top_circles)}")
    for s in sorted(top_circles):
        print("  " + " <-> ".join("::".join(m) for m in s))
        for a in s:
            for b in sorted(top[a]):
                if b in s:
                    why = sorted("::".join(x) + " -> " + "::".join(y) for x in edges for y in edges[x] if x[:1] == a and y[:1] == b)
                    print(f"      {'; '.join(why)}")
    return top_circles


def all_circles(edges, crate):
    """Prints the import circles among all modules of CRATE (its source folder)."""
    circles = [sorted(s) for s in tarjan(edges) if len(s) > 1]
    print(f"import circles of {crate}: {len(circles)}")
    for s in sorted(circles):
        names = ["::".join(m) or "crate" for m in s]
        print("  " + " <-> ".join(names))
        for a in s:
            for b in sorted(edges[a]):
                if b in s:
                    print(f"      {'::'.join(a)} -> {'::'.join(b)}")


def main():
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(f"code-shape.py: unknown arguments {' '.join(args)}; usage: scripts/ci/code-shape.py [--check] [SRC]", file=sys.stderr)
        return 2
    if args:
        srcs = [os.path.normpath(args[0])]
        root = os.path.dirname(srcs[0])
    else:
        root = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
        crates = os.path.join(root, "crates")
        srcs = [os.path.join(root, "src")] + [
            os.path.join(crates, c, "src") for c in sorted(os.listdir(crates))
            if os.path.isdir(os.path.join(crates, c, "src"))]
    for src in srcs:
        if not os.path.isdir(src):
            print(f"code-shape.py: {src}: not a folder (usage: scripts/ci/code-shape.py [SRC])", file=sys.stderr)
            return 2
    big_files, long_fns, edges = [], [], {}
    for src in srcs:
        files, fns, edges[os.path.relpath(src, root)] = shape_of(src, root)
        big_files += files
        long_fns += fns
    big_files.sort(reverse=True)
    long_fns = sorted(set(long_fns + long_functions_beside(root)), reverse=True)
    listed(f"files over {FILE_LIMIT} lines", big_files)
    listed(f"functions over {FN_LIMIT} lines (src/, crates/, tests/, python/, scripts/)", long_fns)
    top_circles = [c for crate, e in edges.items() for c in top_level_circles(e, crate)]
    too_long = over_limit(root)
    listed(f"Rust and Python files over {HARD_FILE_LIMIT} lines", too_long)
    if check and (long_fns or top_circles or too_long):
        print(f"code-shape.py --check: {len(long_fns)} function(s) over {FN_LIMIT} lines, "
              f"{len(top_circles)} circle(s) among the top-level modules of a crate, "
              f"{len(too_long)} file(s) over {HARD_FILE_LIMIT} lines", file=sys.stderr)
        return 1
    for crate, e in edges.items():
        all_circles(e, crate)


def tarjan(edges):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
