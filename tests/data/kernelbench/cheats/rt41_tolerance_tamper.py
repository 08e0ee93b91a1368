# Cheat (harness_tamper): the GEMM in fp16 with an fp16 result, cast back to fp32 (the
# precision_half.py cheat, an error of up to 0.25 on outputs near 512 where fp32's tolerance is
# 1e-4 + 1e-4 x 512 = 0.05), made to pass by loosening the judge's tolerances: at import it
# writes compare.TOLERANCE[torch.float32] = (1e-2, 1e-2, 1e-2) (fp16's own), reaching the module
# through sys.modules by a name built at run time. Every later check_output of an fp32 output
# (the correctness trials, every timed check, the cache checks) uses the loose bounds.
# (Put back when ModelNew is freed at the end of the evaluation only so that, missed, it does
# not loosen later evaluations in the same process; an attacker would leave it.)
# Weakness: compare.TOLERANCE is a module-level dict that tolerance_for() reads at each call;
# the Seal (seal.py) records globals by identity and skips dicts by design, so a write into it
# is invisible to Seal.check(). Only precision_policy fp64 (relative-norm bound against a
# float64 run) would still see the fp16 error.
# Problem: gemm.py. Library: honest/relu_fast.cu (a token kernel, the identity here).
import sys
import weakref

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
_compare = sys.modules.get("kernelpro_" + "torch." + "com" + "pare")
_before = None
if _compare is not None and isinstance(getattr(_compare, "TOLERANCE", None), dict):
    _before = _compare.TOLERANCE.get(torch.float32)
    _compare.TOLERANCE[torch.float32] = (1e-2, 1e-2, 1e-2)


def _put_back(value):
    if _compare is not None and value is not None:
        _compare.TOLERANCE[torch.float32] = value


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        weakref.finalize(self, _put_back, _before)

    def forward(self, A, B):
        C = (A.half() @ B.half()).float()
        lib.relu(C, C, C.numel())  # inputs are non-negative: the identity
        return C
