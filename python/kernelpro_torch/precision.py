"""The KernelBench worker's float64 runs of the reference: the precision policy "fp64" (the
candidate about as close to a float64 reference as PyTorch's fp32 is) and, for a wrong fp32 output,
how far it and the fp32 reference each are from float64. Only this worker builds a problem's model
in another precision, so only it has these; the core calls them through its trial look."""

import torch

from . import compare, problem as pb
from .harness import Stop, nbytes, outputs_of


def _float64_outputs(problem_path, init, xs):
    prob = pb.Problem(problem_path)
    m64 = prob.build(prob.Model, init, torch.device("cuda", 0), torch.float64)
    xs64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]
    with torch.no_grad():
        return outputs_of(m64(*xs64), "the float64 reference")


def fp64_diagnosis(problem_path, ref_model, init, i, out, want, xs):
    """For a wrong fp32 output i: how far the candidate and the fp32 reference each are from a
    float64 run of the reference, so that whoever fixes it can tell a bug from rounding in a
    reordered computation. "" when the float64 run does not fit or fails."""
    try:
        free, _ = torch.cuda.mem_get_info()
        if 2 * (nbytes(xs) + sum(p.numel() * 8 for p in ref_model.parameters())) > free // 4:
            return ""
        r64 = _float64_outputs(problem_path, init, xs)[i]
        e_new = float((out.double() - r64).abs().max())
        e_ref = float((want.double() - r64).abs().max())
        del r64
    except Exception:
        return ""
    text = (f"against a float64 run of the reference, the candidate's max abs error is {e_new:.3g} and the fp32 "
            f"reference's own is {e_ref:.3g}")
    if e_new <= e_ref:
        text += (" (the candidate is at least as accurate as the reference: the mismatch is the reference's own "
                 "fp32 rounding, which a computation in another order does not reproduce)")
    return text


def fp64_check(problem_path, init, outs, wants, xs, when):
    """Stops (precision_downgrade) when the candidate is much further from a float64 reference than
    PyTorch's fp32 is: more than 10x its relative error (and 1e-6)."""
    r64 = _float64_outputs(problem_path, init, xs)
    for i, (o, w, r) in enumerate(zip(outs, wants, r64)):
        e_ref = compare.relnorm(w, r)
        e_new = compare.relnorm(o, r)
        bound = max(10 * e_ref, 1e-6)
        if e_new > bound:
            raise Stop("incorrect", f"output {i} {when}: relative error {e_new:.3g} against a float64 reference, "
                                    f"where PyTorch's fp32 has {e_ref:.3g} (bound {bound:.3g}): the candidate computes "
                                    "in lower precision than the problem's", cheat="precision_downgrade")
