"""Which kernels are the candidate's own: the kernels (device entry points) of its libraries'
device code, by name.

A traced kernel counts as the candidate's when its base name (`kernel_base`: the qualified name
without the return type, template arguments and parameters) is the base name of a kernel in the
device code of one of the candidate's shared objects, listed by `cuobjdump -symbols` (STO_ENTRY
symbols) and demangled by c++filt. Host symbols do not count: a library of empty host functions
named like PyTorch's kernels (issue 41's red team, rt41_name_spoof) owned every PyTorch kernel
while the names came from `nm`. What is left to a spoof is a real kernel of the same base name in
its own device code; attribution by the module a kernel runs from (CUPTI) would close that too.

Torch-free, so that it is tested on the CPU with real builds (python/tests/test_plain_kernel_names.py).
"""

import os
import shutil
import subprocess


def kernel_base(name):
    """'void ns::k<float>(float const*, int)' -> 'ns::k': comparable between a trace's names and
    demangled symbols."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    depth, out = 0, []
    for ch in s:
        if ch == "(" and depth == 0:
            break
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip()


def find_cuobjdump():
    """cuobjdump: $KP_CUOBJDUMP, PATH, the CUDA toolkit, or the PyPI copy scripts/setup.sh puts in
    .kp-tools; None when none is there. Found when the worker starts, before any candidate could
    change PATH."""
    env = os.environ.get("KP_CUOBJDUMP")
    if env and os.access(env, os.X_OK):
        return env
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for c in (shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump",
              os.path.join(os.environ.get("CUDA_HOME", "/nonexistent"), "bin", "cuobjdump"),
              os.path.join(here, ".kp-tools", "python", "nvidia", "cu13", "bin", "cuobjdump")):
        if c and os.access(c, os.X_OK):
            return c
    return None


_CUOBJDUMP = find_cuobjdump()
_CXXFILT = shutil.which("c++filt")


def entry_symbols(cuobjdump_text):
    """The mangled names of the kernels (STO_ENTRY functions) in `cuobjdump -symbols` output."""
    names = []
    for line in cuobjdump_text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "STT_FUNC" and parts[2] == "STO_ENTRY":
            names.append(parts[3])
    return names


def device_kernels(paths):
    """Base names of every kernel in the device code of the shared objects `paths`; None when
    cuobjdump or c++filt is missing or fails, so that kernels cannot be attributed (never an
    empty set that would make everything foreign, or a guess)."""
    if _CUOBJDUMP is None or _CXXFILT is None:
        return None
    mangled = []
    for p in paths:
        try:
            r = subprocess.run([_CUOBJDUMP, "-symbols", p], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if r.returncode != 0:
            if "does not contain device code" in (r.stderr + r.stdout):
                continue  # a host-only library of the candidate's
            return None
        mangled += entry_symbols(r.stdout)
    if not mangled:
        return set()
    try:
        r = subprocess.run([_CXXFILT], input="\n".join(mangled), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return {kernel_base(n) for n in r.stdout.splitlines() if n.strip()}
