# Cheat (batched_calls: work deferred past the end event): its own tiled GEMM does all the work,
# but not inside the timed call. The call launches a token GEMM (K = 64 of 2048: a sixty-fourth of
# the work, into C, about 30 us, above the physics floor) and files (A, B, C) as pending. At
# import it registered a global module forward *pre*-hook (torch.nn.modules.module.
# register_module_forward_pre_hook): whenever a problem `Model` is about to run and a job is
# pending, the hook first launches the full GEMM of that job into its C, on the current stream.
# The judge reads the candidate's output only after running the reference on the same inputs:
# Session::check_outputs fingerprints the inputs (untouched), calls the reference (the hook
# completes C in stream order before the reference's own matmul), synchronizes, then compares C,
# which is right. The correctness trials do the same (call_ref(pristine), then _compare). The
# reference's outputs stay honest, and so does its own timing (nothing is pending then). The
# traced call shows only its own gemm_tiled kernel (its job is never completed: no reference
# follows it), so --strict-kernels passes too; in the energy window (a frame `energy` of
# kernelpro_torch/judge.py on the stack, where the checks copy each output before any reference
# runs) it computes in full.
# Weakness: the outputs of a timed call are compared after candidate-reachable code has run again
# after the end event: session.cc Session::check_outputs calls cb.call(KPJ_REFERENCE) before
# device_tally, without a copy of the output taken at the end event, and the reference is a live
# nn.Module whose call runs global and per-instance hooks (evaluate.py _time_candidate.call,
# Evaluation._run's call_ref). evaluate.py's own outputs() callback runs torch functions on the
# output after the end event too, where a torch function mode could do the same.
# The timed median is about 30 us against about 1000 us for the same kernel doing its work inside
# the call.
# Problem: gemm.py. Library: honest/gemm_fast.cu.
import sys

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
_pending = []  # at most one (A, B, C) whose C is still a token


def _complete(module, args):
    if type(module).__name__ != "Model" or type(module).__module__ != "kernelbench_problem":
        return None
    while _pending:
        A, B, C = _pending.pop()
        lib.gemm(A, B, C, A.shape[0], B.shape[1], A.shape[1])
    return None


_HOOK = torch.nn.modules.module.register_module_forward_pre_hook(_complete)


def _in_energy_window():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "energy" and f.f_code.co_filename.endswith("judge.py"):
            return True
        f = f.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        _pending.clear()
        if _in_energy_window():
            lib.gemm(A, B, C, A.shape[0], B.shape[1], A.shape[1])
            return C
        lib.gemm(A, B, C, A.shape[0], B.shape[1], min(64, A.shape[1]))
        _pending.append((A, B, C))
        return C

    def __del__(self):
        try:
            _HOOK.remove()
        except Exception:
            pass
