"""The KernelBench worker's tolerances, and its one way to compare an output: the judge core's.

A floating output passes when it has the reference's exact shape and dtype, no NaN or Inf where the
reference is finite, every element within atol + rtol * |ref| (KernelBench's allclose), a relative
L2 error within rel_norm (which catches all-zeros outputs that the elementwise rule lets through
when the reference is tiny, e.g. a softmax over 393216 columns), and it is not constant while the
reference varies; integer and bool outputs compare exactly. The rule is written once, in C++
(src/verdict/compare.cc, on the GPU by src/judge/device_compare.cu): the core applies it to every
trial and timed call, and check_output() here asks the core (kpj_compare) for the profiler's check.
"""

import math

import torch

# KernelBench's tolerances (get_tolerance_for_precision) plus a relative-norm bound far above
# what honest arithmetic in the same precision produces.
TOLERANCE = {
    torch.float32: (1e-4, 1e-4, 1e-3),
    torch.float64: (1e-8, 1e-8, 1e-7),
    torch.float16: (1e-2, 1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2, 2e-2),
}

# Elements per chunk of relnorm: float64 temporaries of 256 MiB at most.
CHUNK = 1 << 25


def tolerance_for(dtype):
    return TOLERANCE.get(dtype, (0.0, 0.0, 0.0))


def check_output(out, ref, tol=None):
    """`out` against `ref` (device tensors) by the judge core's rule: a dict of verdict/compare.h's
    OutputCheck fields ("passed", "reason", "mismatches", "constant_output", ...)."""
    from . import judge  # judge imports this module's tolerances

    return judge.compare(out, ref, tol or tolerance_for(ref.dtype))


def relnorm(a, b):
    """||a - b|| / ||b|| in float64, chunked; absolute when ||b|| is 0 (the float64 precision
    policy's measure, which only the KernelBench worker has)."""
    num = den = 0.0
    fa, fb = a.reshape(-1), b.reshape(-1)
    for s in range(0, fa.numel(), CHUNK):
        x, y = fa[s:s + CHUNK].double(), fb[s:s + CHUNK].double()
        num += float(((x - y) ** 2).sum())
        den += float((y ** 2).sum())
    return math.sqrt(num / den) if den > 0 else math.sqrt(num)
