# Cheat (forbidden_library / no_custom_kernel): runs its own tiled GEMM only while the PyTorch
# profiler is on, that is, in the one call the judge traces, and cuBLAS (torch.matmul, fp32)
# in every other call: the correctness trials, every timed call, the cache checks and the energy
# window. Under --strict-kernels the traced call shows only the candidate's kernel, so it
# passes; the time reported is cuBLAS's. (The traced call's output is never checked either, so
# the "own kernel" need not even be right.) The profiler is told by torch.autograd's own flag
# (torch.autograd._profiler_enabled(), torch.autograd.profiler._is_profiler_enabled), with the
# caller's frame name (trace_call) as a fallback.
# Weakness: kernel attribution (trace_call + library_symbols, and the no_custom_kernel /
# strict_kernels tests in Evaluation._run) looks at one traced call; nothing ties the kernels of
# the timed calls to it.
# Problem: gemm.py (options: strict_kernels). Library: honest/gemm_fast.cu.
import sys

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


def _profiled():
    try:
        if torch.autograd._profiler_enabled():
            return True
    except Exception:
        pass
    try:
        if torch.autograd.profiler._is_profiler_enabled:
            return True
    except Exception:
        pass
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "trace_call":
            return True
        f = f.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        if not _profiled():
            return torch.matmul(A, B)
        A, B = A.contiguous(), B.contiguous()
        C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        lib.gemm(A, B, C, A.shape[0], B.shape[1], A.shape[1])
        return C
