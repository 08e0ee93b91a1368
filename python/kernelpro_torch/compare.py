"""Output checks on the device, with the same verdict fields as the C++ OutputCheck.

A floating output passes when it has the reference's exact shape and dtype, no NaN or Inf
where the reference is finite, every element within atol + rtol * |ref| (KernelBench's
allclose), a relative L2 error within rel_norm (which catches all-zeros outputs that the
elementwise rule lets through when the reference is tiny, e.g. a softmax over 393216 columns),
and it is not constant while the reference varies. Integer and bool outputs compare exactly.
Work is done in float64 chunks so multi-gigabyte outputs do not double device memory, with one
device synchronization for the whole output; an output equal to the reference value for value
(and finite) passes after one read of each, with every error zero.
"""

import math

import torch

# Elements per chunk: float64 temporaries of 256 MiB at most.
CHUNK = 1 << 25

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


def _equal_and_finite(fo, fr):
    """True when two flat floating tensors are equal value for value and all finite (NaN never
    equals itself; an infinity may, so the reference is also checked for one). One read of each:
    the common case of an exact candidate costs this instead of the float64 pass."""
    for s in range(0, fr.numel(), CHUNK):
        o, r = fo[s:s + CHUNK], fr[s:s + CHUNK]
        if not torch.equal(o, r) or bool(torch.isinf(r).any()):
            return False
    return True


def _chunk_terms(o, r, atol, rtol):
    """The elementwise terms of one chunk, in float64: finiteness masks, |o - r| where both are
    finite (0 elsewhere), |r|, and the elements that fail (outside atol + rtol * |r|, non-finite
    where the reference is finite, or non-finite and different from a non-finite reference)."""
    o, r = o.double(), r.double()
    rfin, ofin = torch.isfinite(r), torch.isfinite(o)
    both = rfin & ofin
    nonfinite = rfin & ~ofin
    diff = torch.where(both, (o - r).abs_(), 0.0)
    rabs = r.abs()
    bad = diff > torch.mul(rabs, rtol).add_(atol)
    bad |= nonfinite
    bad |= ~rfin & (o != r)
    return {"rfin": rfin, "nonfinite": nonfinite, "diff": diff, "rabs": rabs, "bad": bad}


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
    if _equal_and_finite(fo, fr):
        c["passed"] = True  # every error is zero, and the output varies exactly as the reference
        return c
    atol, rtol, rel_norm = tol or tolerance_for(ref.dtype)
    # Per chunk, device scalars only: one synchronization for the whole output.
    nonfinite, reference_nonfinite, bad_per_chunk, max_abs, max_rel, num, den = [], [], [], [], [], [], []
    for s in range(0, n, CHUNK):
        t = _chunk_terms(fo[s:s + CHUNK], fr[s:s + CHUNK], atol, rtol)
        nonfinite.append(t["nonfinite"].sum())
        reference_nonfinite.append(t["rfin"].numel() - t["rfin"].sum())
        bad_per_chunk.append(t["bad"].sum())
        max_abs.append(t["diff"].max())
        rabs = t["rabs"]
        max_rel.append(torch.where(rabs > 0, t["diff"] / rabs, 0.0).max())
        num.append(torch.dot(t["diff"], t["diff"]))
        fin_ref = torch.where(t["rfin"], rabs, 0.0)
        den.append(torch.dot(fin_ref, fin_ref))
        del t, rabs, fin_ref
    counts = torch.stack(nonfinite + reference_nonfinite + bad_per_chunk).tolist()
    k = len(nonfinite)
    c["nonfinite"], c["reference_nonfinite"] = sum(counts[:k]), sum(counts[k:2 * k])
    bad_counts = counts[2 * k:]
    c["mismatches"] = sum(bad_counts)
    c["max_abs_error"] = max(0.0, max(torch.stack(max_abs).tolist()))
    c["max_rel_error"] = max(0.0, max(torch.stack(max_rel).tolist()))
    num, den = sum(torch.stack(num).tolist()), sum(torch.stack(den).tolist())
    c["rel_norm_error"] = math.sqrt(num / den) if den > 0 else math.sqrt(num)
    first = -1
    if c["mismatches"]:
        j = next(i for i, b in enumerate(bad_counts) if b)
        s = j * CHUNK
        first = s + int(_chunk_terms(fo[s:s + CHUNK], fr[s:s + CHUNK], atol, rtol)["bad"].nonzero()[0, 0])
    c["first_bad_index"] = first
    if c["reference_nonfinite"] == 0:
        r_lo, r_hi = torch.aminmax(fr)
        ref_varies = bool(r_lo != r_hi)
    else:
        ref_varies = True
    if ref_varies and c["nonfinite"] == 0:
        o_lo, o_hi = torch.aminmax(fo)
        c["constant_output"] = bool(o_lo == o_hi)
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
