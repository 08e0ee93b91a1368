#!/usr/bin/env python3
"""Checks that every repository path a Markdown document names in backticks exists.

A backticked token is taken for a path when it has no spaces, does not start with `-`, `/`, `~`
or `$`, is not a URL, and either contains a `/` or ends in one of EXTENSIONS. Before the check a
trailing `(...)`, `#anchor` and `:line` (or `:start-end`) are cut off. Skipped as templates: tokens
with `*`, `<`, `{`, `...` or an upper-case placeholder word (`RUN_DIR/store.db`, `attempt-N/`,
`CAMPAIGN/runs/ID`); a component that is a whole upper-case document name (`README.md`) is a name,
not a placeholder. Text inside fenced code blocks is not read.

A path exists when it does relative to the repository root, or under `src/` (the document writes
`judge/session.cc` for `src/judge/session.cc`), or under `python/` (`kernelpro_torch/judge.py`).

Usage: check_doc_paths.py DOCUMENT.md [REPO_ROOT]   (default root: the repository holding DOCUMENT.md)
       check_doc_paths.py --self-test
Exit status 1, with one line per missing path, when any is missing.
"""
import os
import re
import sys
import tempfile

EXTENSIONS = (".cc", ".h", ".cu", ".py", ".sh", ".md", ".toml", ".tsv", ".cmake", ".map", ".txt")
BASES = ("", "src", "python")
TOKEN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^\s*(```|~~~)")
PLACEHOLDER_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9_]*(?![a-z0-9])")
DOC_NAME = re.compile(r"^[A-Z][A-Z0-9_]*\.(md|txt)$")


def prose_lines(text):
    """The document's lines outside fenced code blocks, with their line numbers."""
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield n, line


def as_path(token):
    """The repository path a backticked token names, or None when it names none."""
    t = token.strip()
    if not t or " " in t or "\t" in t or t[0] in "-/~$." and not t.startswith("./"):
        return None
    if "://" in t or t.startswith("www."):
        return None
    t = re.sub(r"\([^)]*\)$", "", t)          # a call or a note: `evaluate(...)`
    t = t.split("#", 1)[0]                     # an anchor
    t = re.sub(r":\d+(-\d+)?$", "", t)         # a line or a range of lines
    if not t or not ("/" in t or t.endswith(EXTENSIONS)):
        return None
    if not re.fullmatch(r"[A-Za-z0-9_./+\-<>{}*]+", t.replace("...", "")):
        return None                            # `a|b`, `x=y`, `f(a, b)`: not a path
    if any(s in t for s in ("*", "<", "{", "...")):
        return None
    for part in t.split("/"):
        if part and not DOC_NAME.match(part) and PLACEHOLDER_WORD.search(part):
            return None
    return t


def repository_of(doc):
    """The nearest folder above `doc` that holds `.git` (a folder, or a worktree's file), else its own."""
    here = os.path.dirname(os.path.abspath(doc))
    d = here
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return here
        d = parent


def exists(root, path):
    return any(os.path.exists(os.path.join(root, base, path)) for base in BASES)


def check(doc, root):
    """[(line number, path)] for each path the document names that does not exist."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    missing = []
    for n, line in prose_lines(text):
        for token in TOKEN.findall(line):
            path = as_path(token)
            if path is not None and not exists(root, path):
                missing.append((n, path))
    return missing


def self_test():
    cases = {
        "`src/judge/session.cc`": None, "`judge/session.cc`": None, "`kernelpro_torch/judge.py`": None,
        "`judge/session.cc:42`": None, "`README.md#the-map`": None, "`scripts/`": None,
        "`src/nothing.cc`": "src/nothing.cc", "`gone/file.h`": "gone/file.h", "`missing.py`": "missing.py",
        "`RUN_DIR/store.db`": None, "`attempt-N/verdict.json`": None, "`tests/*.cu`": None,
        "`WORKSPACE/candidates/<sha>.cu`": None, "`--feedback none`": None, "`https://x.org/a.md`": None,
        "`eval::Outcome`": None, "`/dev/null`": None, "`$XDG_CACHE_HOME/kernelpro`": None,
        "`energy|edp`": None, "`Tree::measure`": None, "`LOST.md`": "LOST.md",
        "`evaluate(a/b)`": None, "`search/tree.cc` (`reward`)": None,
    }
    failures = 0
    with tempfile.TemporaryDirectory() as root:
        for rel in ("src/judge/session.cc", "python/kernelpro_torch/judge.py", "README.md", "scripts/x.sh",
                    "src/search/tree.cc"):
            os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
            open(os.path.join(root, rel), "w").close()
        for text, want in cases.items():
            doc = os.path.join(root, "DOC.md")
            with open(doc, "w") as f:
                f.write("```\n`fenced/missing.cc`\n```\n" + text + "\n")
            got = [p for _, p in check(doc, root)]
            ok = got == ([want] if want else [])
            print(f"{'ok  ' if ok else 'FAIL'} {text}: {got or 'nothing missing'}")
            failures += not ok
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 2:
        print(__doc__)
        return 2
    doc = argv[1]
    root = argv[2] if len(argv) > 2 else repository_of(doc)
    missing = check(doc, root)
    for n, path in missing:
        print(f"{os.path.basename(doc)}:{n}: `{path}` does not exist (nor under src/ or python/)")
    if missing:
        print(f"{len(missing)} path(s) in {os.path.basename(doc)} that do not exist")
        return 1
    print(f"every path {os.path.basename(doc)} names exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
