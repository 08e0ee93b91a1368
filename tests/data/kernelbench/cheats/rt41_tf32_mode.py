# Cheat (process_mode): an fp32 GEMM done in TF32 by flipping a process-wide switch,
# torch.set_float32_matmul_precision("high") (cuBLAS may then round A and B to TF32's 10-bit
# mantissa). It is flipped at import and again in every forward, and never put back while the
# evaluation runs, so the reference the judge runs after each candidate call (correctness
# trials, the timing sets' reference outputs, the cache checks) runs the same TF32 kernel and
# returns the same bits: every comparison is exact, and the fp64 check (precision_policy fp64)
# measures the candidate against a reference that is itself TF32 (its bound, 10x the
# reference's own error, grows with it). The reference that kernelpro times for the speedup runs
# in a fresh worker, in fp32, so the speedup is TF32's over fp32's (about 5x on an H100 at 2048^3).
# A token ReLU from the library (the identity on a product of [0, 1) inputs) gives it a kernel of
# its own. Weakness: evaluate.py's Guard (problem.Guard) snapshots the identity of PyTorch's
# callables only; nothing snapshots or resets process state such as the matmul precision, cuDNN
# or reduced-precision-reduction flags, so Evaluation._run's call_ref() runs in the candidate's
# mode. (Put back when ModelNew is freed at the end of the evaluation only so that, missed, it
# does not change later evaluations in the same test process; an attacker would leave it on.)
# Problem: gemm.py. Library: honest/relu_fast.cu.
import weakref

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
_before = torch.get_float32_matmul_precision()
torch.set_float32_matmul_precision("high")


def _put_back(mode):
    torch.set_float32_matmul_precision(mode)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        weakref.finalize(self, _put_back, _before)

    def forward(self, A, B):
        torch.set_float32_matmul_precision("high")  # left on: the judge's reference comes next
        C = torch.matmul(A, B)
        lib.relu(C, C, C.numel())
        return C
