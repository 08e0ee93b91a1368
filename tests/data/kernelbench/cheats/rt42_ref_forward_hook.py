# Cheat (reference_tamper): no GEMM anywhere. ModelNew returns relu(A) (its own relu kernel, plus a
# relu of B into scratch so that the call stays above the physics floor), and at import it
# registers a *global* module forward hook (torch.nn.modules.module.register_module_forward_hook)
# that replaces the output of every problem `Model` (class module "kernelbench_problem") with
# torch.relu(A): the correctness trials' reference, the reference the judge core calls after each
# timed call (check_outputs) and after the energy window, and even the float64 Model of
# precision_policy "fp64" (relu is exact, so the fp64 bound is met with a relative error of 0).
# The hook leaves the output alone while a `time_reference` frame is on the stack, so the
# reference's own timing is the real cuBLAS GEMM. Every comparison is then relu(A) against relu(A).
# Weakness: the reference is a live nn.Module in the candidate's interpreter. Model.__call__
# (torch.nn.Module._call_impl) runs torch.nn.modules.module._global_forward_hooks, a dict that no
# check looks at: problem.Guard snapshots the attributes of torch / torch.nn.Module (not the
# module-level hook dicts, nor a Model instance's _forward_hooks), seal.Seal only the harness's
# modules, modes.py only numeric modes. evaluate.py _time_candidate.call(role=REFERENCE) and
# Evaluation._run's correctness loop (call_ref) take whatever the hooked reference returns, and the
# judge core (session.cc Session::check_outputs, energy_inner) trusts the adapter's reference.
# The timed median is two elementwise passes (about 25 us) against about 1000 us for the honest
# tiled GEMM and 400 us for cuBLAS.
# Problem: gemm.py. Library: honest/relu_fast.cu.
import sys

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
_scratch = {}


def _timing_the_reference():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "time_reference":
            return True
        f = f.f_back
    return False


def _the_answer(module, args, output):
    if type(module).__name__ != "Model" or type(module).__module__ != "kernelbench_problem":
        return None
    if _timing_the_reference():
        return None
    return torch.relu(args[0])


_HOOK = torch.nn.modules.module.register_module_forward_hook(_the_answer)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        lib.relu(A, C, C.numel())  # M == K == N in gemm.py: C is relu(A)
        s = _scratch.get(B.numel())
        if s is None:
            s = _scratch[B.numel()] = torch.empty(B.numel(), device=B.device, dtype=B.dtype)
        lib.relu(B, s, B.numel())
        return C

    def __del__(self):  # the worker's next evaluation gets an honest reference again
        try:
            _HOOK.remove()
        except Exception:
            pass
