#!/usr/bin/env python3
"""Fails when a function defined in src/ is longer than LIMIT lines (issue 43, item 5: no function
over 120 lines). A function is a definition that opens at column 0 (the code's style: namespaces
do not indent) and ends at the next closing brace at column 0; lambdas and member functions
defined inside a class count toward the function or class they sit in. Usage:
  check_function_length.py [ROOT] [--limit N] [--list]   (--list: every function over the limit,
  longest first, without failing)"""
import os
import re
import sys

SIG = re.compile(r"^[A-Za-z_].*\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>, ]+)?\s*\{\s*$")
SKIP = re.compile(r"^(namespace|struct|class|union|enum|extern|typedef|template\s*<[^>]*>\s*(struct|class))\b")


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        # A signature may span lines: join up to 6 lines that end in the opening brace.
        if line and not line[0].isspace() and not SKIP.match(line) and not line.startswith(("#", "//", "}")):
            j, text = i, line
            while not text.rstrip().endswith("{") and j + 1 < len(lines) and j - i < 6 and ";" not in text:
                j += 1
                text += " " + lines[j].strip()
            if SIG.match(text) and "=" not in text.split("(")[0]:
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                name = text.split("(")[0].split()[-1] if "(" in text else text
                yield name, i + 1, k - i + 1
                i = k
        i += 1


def self_test():
    """The heuristic on made-up sources: a long function found, a short one, a class and a
    namespace not."""
    import tempfile
    body = lambda n: "".join(f"  x += {i};\n" for i in range(n))
    src = ("namespace kp {\n\nint short_one(int x) {\n" + body(100) + "  return x;\n}\n\n"
           "int Thing::long_one(int x,\n                     int y) const {\n" + body(130) + "  return x;\n}\n\n"
           "struct Big {\n" + body(200) + "};\n\n}  // namespace kp\n")
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "src"))
        with open(os.path.join(root, "src", "a.cc"), "w") as f:
            f.write(src)
        found = [(name, n) for name, _, n in functions(os.path.join(root, "src", "a.cc"))]
    names = {name: n for name, n in found}
    ok = names.get("Thing::long_one", 0) > 120 and names.get("short_one", 999) <= 120 and "Big" not in names
    print("self test:", "ok" if ok else f"FAILED {found}")
    return 0 if ok else 1


def main(argv):
    if "--self-test" in argv:
        return self_test()
    root = next((a for a in argv[1:] if not a.startswith("--") and not a.isdigit()), os.getcwd())
    limit = int(argv[argv.index("--limit") + 1]) if "--limit" in argv else 120
    long = []
    for d, _, files in os.walk(os.path.join(root, "src")):
        for f in files:
            if f.endswith((".cc", ".cu", ".h")):
                p = os.path.join(d, f)
                for name, line, n in functions(p):
                    if n > limit:
                        long.append((n, os.path.relpath(p, root), line, name))
    long.sort(reverse=True)
    for n, p, line, name in long:
        print(f"{p}:{line}: {name} is {n} lines, over {limit}")
    if "--list" in argv or not long:
        if not long:
            print(f"every function in src/ is at most {limit} lines")
        return 0
    print(f"{len(long)} function(s) over {limit} lines: split them into named steps")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
