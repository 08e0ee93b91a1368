"""Output checks on the device, with the same verdict fields as the C++ OutputCheck.

A floating output passes when it has the reference's exact shape and dtype, no NaN or Inf
where the reference is finite, every element within atol + rtol * |ref| (KernelBench's
allclose), a relative L2 error within rel_norm (which catches all-zeros outputs that the
elementwise rule lets through when the reference is tiny, e.g. a softmax over 393216 columns),
and it is not constant while the reference varies. Integer and bool outputs compare exactly.
Work is done in float64 chunks so multi-gigabyte outputs do not double device memory.
"""

import math

import torch

CHUNK = 1 << 27

# KernelBench's tolerances (get_tolerance_for_precision) plus a relative-norm bound far above
# what honest arithmetic in the same precision produces.
TOLERANCE = {
    torch.float32: (1e-4, 1e-4, 1e-3),
    torch.float64: (1e-8, 1e-8, 1e-7),
    torch.float16: (1e-2, 1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2, 2e-2),
}


def tolerance_for(dtype):
    return TOLERANCE.get(dtype, (0.0, 0.0, 0.0))


def _index(flat, shape):
    idx = []
    for d in reversed(shape):
        idx.append(flat % d if d else 0)
        flat //= d if d else 1
    return "[" + ", ".join(str(i) for i in reversed(idx)) + "]"


def relnorm(a, b):
    """||a - b|| / ||b|| in float64, chunked; absolute when ||b|| is 0."""
    num = den = 0.0
    fa, fb = a.reshape(-1), b.reshape(-1)
    for s in range(0, fa.numel(), CHUNK):
        x, y = fa[s:s + CHUNK].double(), fb[s:s + CHUNK].double()
        num += float(((x - y) ** 2).sum())
        den += float((y ** 2).sum())
    return math.sqrt(num / den) if den > 0 else math.sqrt(num)


def check_output(out, ref, name="output", tol=None):
    c = {"passed": False, "reason": "", "elements": int(ref.numel()), "mismatches": 0, "unwritten": 0,
         "nonfinite": 0, "reference_nonfinite": 0, "first_bad_index": -1, "max_abs_error": 0.0,
         "max_rel_error": 0.0, "rel_norm_error": 0.0, "constant_output": False}
    if tuple(out.shape) != tuple(ref.shape):
        c["reason"] = f"shape {tuple(out.shape)} but the reference's is {tuple(ref.shape)} (shapes must match exactly)"
        return c
    if out.dtype != ref.dtype:
        c["reason"] = f"dtype {out.dtype} but the reference's is {ref.dtype}"
        return c
    if out.device != ref.device:
        out = out.to(ref.device)
    n = ref.numel()
    if n == 0:
        c["passed"] = True
        return c
    fo, fr = out.reshape(-1), ref.reshape(-1)
    if not ref.is_floating_point():
        bad = (fo != fr)
        c["mismatches"] = int(bad.sum())
        if c["mismatches"]:
            i = int(bad.nonzero()[0, 0])
            c["first_bad_index"] = i
            c["reason"] = (f"{c['mismatches']} of {n} elements differ (integer outputs compare exactly); first at "
                           f"{_index(i, list(ref.shape))}: {fo[i].item()} vs {fr[i].item()}")
            return c
        c["passed"] = True
        return c
    atol, rtol, rel_norm = tol or tolerance_for(ref.dtype)
    num = den = 0.0
    first = -1
    for s in range(0, n, CHUNK):
        o, r = fo[s:s + CHUNK].double(), fr[s:s + CHUNK].double()
        rfin = torch.isfinite(r)
        c["reference_nonfinite"] += int((~rfin).sum())
        ofin = torch.isfinite(o)
        nonfinite = rfin & ~ofin
        c["nonfinite"] += int(nonfinite.sum())
        both = rfin & ofin
        diff = torch.where(both, (o - r).abs(), torch.zeros_like(o))
        bad = (diff > atol + rtol * r.abs()) | nonfinite | (~rfin & (o != r))
        nb = int(bad.sum())
        c["mismatches"] += nb
        if nb and first < 0:
            first = s + int(bad.nonzero()[0, 0])
        c["max_abs_error"] = max(c["max_abs_error"], float(diff.max()))
        nz = both & (r != 0)
        if bool(nz.any()):
            c["max_rel_error"] = max(c["max_rel_error"], float((diff[nz] / r[nz].abs()).max()))
        num += float((diff ** 2).sum())
        den += float((torch.where(rfin, r, torch.zeros_like(r)) ** 2).sum())
    c["rel_norm_error"] = math.sqrt(num / den) if den > 0 else math.sqrt(num)
    c["first_bad_index"] = first
    ref_varies = bool(fr.max() != fr.min()) if c["reference_nonfinite"] == 0 else True
    c["constant_output"] = bool(ref_varies and c["nonfinite"] == 0 and fo.max() == fo.min())
    if c["reference_nonfinite"]:
        c["reason"] = (f"the reference produced {c['reference_nonfinite']} NaN/Inf values; the problem cannot judge "
                       "a candidate on these inputs")
        return c
    where = ""
    if first >= 0:
        where = f"; first at {_index(first, list(ref.shape))}: {fo[first].item():.6g} vs {fr[first].item():.6g}"
    if c["nonfinite"]:
        c["reason"] = f"{c['nonfinite']} NaN/Inf values where the reference is finite{where}"
    elif c["constant_output"]:
        c["reason"] = f"every element is {fo[0].item():.6g} while the reference varies (a constant output)"
    elif c["mismatches"]:
        c["reason"] = (f"{c['mismatches']} of {n} elements outside atol {atol:g} + rtol {rtol:g} x |ref| "
                       f"(max abs error {c['max_abs_error']:.3g}){where}")
    elif c["rel_norm_error"] > rel_norm:
        c["reason"] = (f"relative L2 error {c['rel_norm_error']:.3g} exceeds {rel_norm:g}: the output is far from "
                       "the reference even where each element is within the absolute tolerance")
    else:
        c["passed"] = True
    return c


def downgrade_hint(check, dtype):
    """True when an fp32/fp64 output failed only on accuracy, by an amount typical of fp16/bf16/TF32."""
    if dtype not in (torch.float32, torch.float64) or check["passed"]:
        return False
    if check["nonfinite"] or check["constant_output"] or check["reference_nonfinite"] or check["unwritten"]:
        return False
    return 1e-5 < check["rel_norm_error"] < 5e-2
