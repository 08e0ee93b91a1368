# Cheat (result_cache, phase-dependent): a result cache that turns honest for good the first
# time an input tensor it has served changes in place. Per input tensor object it keeps a private
# copy of the output and a fingerprint (512 sampled elements of A and B, read back to the host);
# on a hit it returns a fresh clone of the private copy (so the harness's bit flip of a checked
# output never reaches the cache, and clone + fingerprint + the host round trip stay above the
# physics floor, 13 us here against about 1 ms for the tiled kernel). A new tensor at a reused
# address is only a miss. The first in-place change of a tensor it served is the cache check's
# roll_inputs(): from then on every call computes, so the interleaved "seen" calls (all but the
# first) are as slow as the "fresh" ones and the seen-vs-fresh rule never fires.
# Weakness: Evaluation._cache_checks() compares fresh calls with interleaved calls in the same
# phase, not with the timed median, and runs only after the timed loop
# (evaluate.py _run: time_calls ... _output_probe_check ... _cache_checks); the timed loop itself
# only checks values (check() in _run) and flips the returned tensor, which the cache never hands
# out twice. The first call on each timing set (the traced call, then warm-up) computes, so the
# trace shows the candidate's own kernel.
# Problem: gemm.py. Library: honest/gemm_fast.cu.
import weakref

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
SAMPLES = 256
state = {"honest": False, "entries": {}, "idx": {}}


def _compute(A, B):
    C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
    lib.gemm(A, B, C, A.shape[0], B.shape[1], A.shape[1])
    return C


def _fingerprint(A, B):
    idx = state["idx"].get(A.numel())
    if idx is None:
        idx = torch.linspace(0, A.numel() - 1, SAMPLES, device=A.device).long()
        state["idx"][A.numel()] = idx
        state["idx"][B.numel()] = torch.linspace(0, B.numel() - 1, SAMPLES, device=B.device).long() \
            if B.numel() != A.numel() else idx
    return torch.cat([A.reshape(-1)[idx], B.reshape(-1)[state["idx"][B.numel()]]]).cpu()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        if state["honest"]:
            return _compute(A, B)
        key = (A.data_ptr(), B.data_ptr(), tuple(A.shape), tuple(B.shape))
        fp = _fingerprint(A, B)
        e = state["entries"].get(key)
        if e is not None:
            ra, rb, kept_fp, kept = e
            same_objects = ra() is A and rb() is B
            if torch.equal(fp, kept_fp):
                if same_objects:
                    return kept.clone()
            elif same_objects:
                # A tensor it served was changed in place: the judge probes for caches now.
                state["honest"] = True
                state["entries"].clear()
                return _compute(A, B)
        C = _compute(A, B)
        state["entries"][key] = (weakref.ref(A), weakref.ref(B), fp, C.clone())
        return C
