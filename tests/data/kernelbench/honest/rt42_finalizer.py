# Honest: the tiled GEMM into an output drawn from a small per-shape pool it keeps (two buffers
# used in turn: each call's C is the one the call before last returned, fully rewritten), and a
# finalizer (ModelNew.__del__, plus a weakref.finalize on the pool) that releases the pool
# and the allocator's cache when the worker drops the model, which is in Evaluation._cleanup(),
# after the last Seal check and before the judge core's verdict. A judge that closes
# rt42_late_core_timing and rt42_native_samples by sealing the core's verdict before any candidate
# code can run again (or by moving the core out of the process) accepts it; one that rejects any
# candidate code running during the cleanup would not.
# Problem: gemm.py. Library: honest/gemm_fast.cu.
import weakref

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


def _release(pool):
    pool.clear()
    try:
        torch.cuda.empty_cache()
    except Exception:
        pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._pool = {}
        self._turn = 0
        weakref.finalize(self, _release, self._pool)

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        key = (A.shape[0], B.shape[1], A.dtype)
        bufs = self._pool.get(key)
        if bufs is None:
            bufs = self._pool[key] = [torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
                                      for _ in range(2)]
        self._turn ^= 1
        C = bufs[self._turn]
        lib.gemm(A, B, C, A.shape[0], B.shape[1], A.shape[1])
        return C

    def __del__(self):
        _release(self._pool)
