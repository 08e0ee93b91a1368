#!/usr/bin/env python3
"""Checks that the layer map of ARCHITECTURE.md, the CMake link lines and the includes agree.

The map is the first table of ARCHITECTURE.md whose header is `| folder | owns | may use |`.
A row's folder is a backticked `src/NAME/`; its "may use" cell names, in backticks, the folders
NAME uses directly (anything not in backticks, such as "CUDA runtime", is prose and ignored).
A folder may include the headers of what it may use and, transitively, of what those may use.

Three checks, each an error line on stdout and exit status 1:
  1. the map: every folder under src/ has one row, every row a folder, every backticked name in
     "may use" is a folder, and the uses have no cycle;
  2. CMakeLists.txt: `kp_layer(NAME kp_A kp_B ...)`, or for an executable built from src/NAME
     (kernelpro from src/cli, kp-worker from src/worker) its target_link_libraries, links
     exactly the kp_ libraries of the folders in NAME's "may use";
  3. the includes: every `#include "OTHER/..."` in src/NAME (.h, .cc, .cu, subfolders too) names
     a folder NAME may use. Test files (*_test.cc) are left out: all tests link into test
     binaries that hold every layer, so a layer's test may use fixtures from above it.

Usage: check_layers.py [SOURCE_DIR]   (default: this script's repository)
       check_layers.py --self-test    (the checks on small made-up trees; exit 0 when each
                                       problem is found and a consistent tree passes)
"""
import os
import re
import sys
import tempfile

HEADER = re.compile(r"^\|\s*folder\s*\|\s*owns\s*\|\s*may use\s*\|\s*$", re.IGNORECASE)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/', re.MULTILINE)
SOURCE_EXTENSIONS = (".h", ".cc", ".cu")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def parse_map(text):
    """Returns ({folder: [used folder names]}, [errors]) from the map table of ARCHITECTURE.md."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if HEADER.match(line.strip())), None)
    if start is None:
        return {}, ["ARCHITECTURE.md: no table with the header | folder | owns | may use |"]
    uses, errors = {}, []
    for line in lines[start + 2:]:
        if not line.strip().startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            errors.append(f"ARCHITECTURE.md map: a row without three cells: {line.strip()}")
            continue
        m = re.fullmatch(r"`src/([A-Za-z0-9_]+)/`", cells[0])
        if not m:
            continue  # include/, python/, rules/ ...: not a layer of src/
        name = m.group(1)
        if name in uses:
            errors.append(f"ARCHITECTURE.md map: src/{name}/ has two rows")
        uses[name] = re.findall(r"`([^`]+)`", cells[2])
    return uses, errors


def closure(uses, name):
    """Every folder `name` may use, directly or through what it uses; None on a cycle."""
    seen, stack = set(), list(uses.get(name, []))
    while stack:
        n = stack.pop()
        if n == name:
            return None
        if n not in seen:
            seen.add(n)
            stack.extend(uses.get(n, []))
    return seen


def parse_cmake(text):
    """Returns {folder: set of kp_ libraries it links, without the kp_ prefix}."""
    links = {}
    for name, args in re.findall(r"^kp_layer\(\s*(\w+)([^)]*)\)", text, re.MULTILINE):
        links[name] = {a[3:] for a in args.split() if a.startswith("kp_")}
    # Executables built from one folder: file(GLOB VAR ... src/NAME/*.cc ...), add_executable(T ${VAR}).
    folder_of_var = {var: folder for var, folder in re.findall(r"file\(GLOB\s+(\w+)[^)]*?/src/(\w+)/\*\.cc", text)}
    for target, var in re.findall(r"add_executable\(([\w-]+)\s+\$\{(\w+)\}\)", text):
        if var not in folder_of_var:
            continue
        libs = set()
        for args in re.findall(r"target_link_libraries\(" + re.escape(target) + r"\s+(?:PRIVATE|PUBLIC)\s+([^)]*)\)", text):
            libs |= {a[3:] for a in args.split() if a.startswith("kp_")}
        links[folder_of_var[var]] = libs
    return links


def source_folders(src):
    return sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))


def includes_of(src, name):
    """[(file relative to src, included folder)] for the non-test sources of src/name."""
    out = []
    for root, _, files in os.walk(os.path.join(src, name)):
        for f in sorted(files):
            if not f.endswith(SOURCE_EXTENSIONS) or f.endswith("_test.cc"):
                continue
            path = os.path.join(root, f)
            for folder in INCLUDE.findall(read(path)):
                out.append((os.path.relpath(path, src), folder))
    return out


def check(root):
    """Returns (errors, number of includes checked) for the tree at root."""
    uses, errors = parse_map(read(os.path.join(root, "ARCHITECTURE.md")))
    src = os.path.join(root, "src")
    folders = source_folders(src)
    for name in folders:
        if name not in uses:
            errors.append(f"ARCHITECTURE.md map: src/{name}/ has no row")
    for name, used in sorted(uses.items()):
        if name not in folders:
            errors.append(f"ARCHITECTURE.md map: src/{name}/ does not exist")
        for u in used:
            if u not in folders:
                errors.append(f"ARCHITECTURE.md map: src/{name}/ may use `{u}`, which is not a folder of src/")
        if closure(uses, name) is None:
            errors.append(f"ARCHITECTURE.md map: src/{name}/ uses itself through its uses (a cycle)")
    links = parse_cmake(read(os.path.join(root, "CMakeLists.txt")))
    for name in folders:
        if name not in uses:
            continue
        if name not in links:
            errors.append(f"CMakeLists.txt: no kp_layer({name} ...) or executable built from src/{name}/")
        elif links[name] != set(uses[name]):
            errors.append(f"CMakeLists.txt: src/{name}/ links {sorted(links[name])}, "
                          f"the map says it may use {sorted(uses[name])}")
    checked = 0
    for name in folders:
        allowed = closure(uses, name) if name in uses else set()
        for path, folder in includes_of(src, name):
            if folder == name or folder not in folders:
                continue  # its own headers, include/kernelpro, tests/support
            checked += 1
            if allowed is not None and folder not in allowed:
                errors.append(f"src/{path}: includes {folder}/, which src/{name}/ may not use "
                              f"(ARCHITECTURE.md map: {', '.join(sorted(uses.get(name, []))) or 'nothing'})")
    return errors, checked


def self_test():
    """The checks on made-up trees: a consistent one passes, each broken one names its fault."""
    arch = ("# x\n\n| folder | owns | may use |\n|---|---|---|\n"
            "| `src/low/` | the base | the C++ standard library |\n"
            "| `src/mid/` | the middle | `low` |\n"
            "| `src/top/` | the top | `mid`; libdl |\n"
            "| `include/kernelpro/` | the ABI | nothing |\n")
    cmake = ("kp_layer(low)\nkp_layer(mid kp_low)\n"
             "file(GLOB top_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/top/*.cc)\n"
             "add_executable(top-bin ${top_srcs})\n"
             "target_link_libraries(top-bin PRIVATE kp_mid ${CMAKE_DL_LIBS})\n")
    files = {"low/a.h": "#include <string>\n", "mid/b.h": '#include "low/a.h"\n',
             "top/c.cc": '#include "low/a.h"\n#include "mid/b.h"\n#include "kernelpro/kp_abi.h"\n',
             "low/a_test.cc": '#include "top/c.h"\n'}
    cases = [
        ("consistent", {}, None),
        ("wrong-way include", {"files": {"low/sub/d.cc": '#include "mid/b.h"\n'}},
         "src/low/sub/d.cc: includes mid/"),
        ("link line differs", {"cmake": cmake.replace("kp_layer(mid kp_low)", "kp_layer(mid)")},
         "src/mid/ links [], the map says it may use ['low']"),
        ("executable link line differs", {"cmake": cmake.replace("PRIVATE kp_mid", "PRIVATE kp_mid kp_low")},
         "src/top/ links ['low', 'mid']"),
        ("folder without a row", {"files": {"extra/e.h": ""}}, "src/extra/ has no row"),
        ("unknown folder in may use", {"arch": arch.replace("| `low` |", "| `low`, `lo` |")},
         "may use `lo`, which is not a folder"),
        ("cycle", {"arch": arch.replace("| the base | the C++ standard library |", "| the base | `top` |"),
                   "cmake": cmake.replace("kp_layer(low)", "kp_layer(low kp_top)")}, "(a cycle)"),
        ("no map", {"arch": "# x\n"}, "no table with the header"),
    ]
    failures = 0
    for label, change, expect in cases:
        with tempfile.TemporaryDirectory() as root:
            tree = dict(files, **change.get("files", {}))
            for rel, text in tree.items():
                path = os.path.join(root, "src", rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
            with open(os.path.join(root, "ARCHITECTURE.md"), "w") as f:
                f.write(change.get("arch", arch))
            with open(os.path.join(root, "CMakeLists.txt"), "w") as f:
                f.write(change.get("cmake", cmake))
            errors, _ = check(root)
        ok = (not errors) if expect is None else any(expect in e for e in errors)
        print(f"{'ok  ' if ok else 'FAIL'} {label}: {errors or 'no errors'}")
        failures += not ok
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    errors, checked = check(root)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} disagreement(s) between ARCHITECTURE.md's map, CMakeLists.txt and the includes")
        return 1
    print(f"layers agree: {len(source_folders(os.path.join(root, 'src')))} folders, {checked} includes across folders")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
