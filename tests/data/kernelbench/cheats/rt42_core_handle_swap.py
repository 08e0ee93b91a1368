# Cheat (harness_tamper): the judge core judges it, but in a session whose configuration the
# candidate wrote. At import it finds the running Evaluation through the frames and opens a second
# session with the harness's own adapter class, judge.Core(dev, options, sets, vary, tolerance),
# giving it a tolerance of 1e30 for every dtype, a device whose measured bandwidth is 0 (so the
# core applies no physics floor) and otherwise the evaluation's options; then it writes that
# session's handle into the harness's Core object (Evaluation._core.handle). Every later kpj_time,
# kpj_energy, kpj_result_json and kpj_finish of the harness goes to the candidate's session, which
# runs them faithfully: fresh inputs, the reference after each call, the tail, the samples.
# The correctness trials (Python, compare.TOLERANCE) and the traced call get the honest tiled
# GEMM. Inside the core's callbacks (a frame `on_call` of kernelpro_torch/judge.py on the stack:
# the timed calls and the energy window) ModelNew runs the same kernel with K = 1, a rank-one
# product of A's first M elements and B's first row: finite, never constant, about 10 us against
# about 1000 us for the real GEMM, and within a tolerance of 1e30.
# Weakness: the session handle is a plain, writable attribute of a Core instance reachable from
# the candidate (judge.py Core.handle; seal.Seal holds module globals and class attributes, not
# instance attributes, and Evaluation._core is an instance attribute too); libkp_judge.cc
# kpj_open opens any number of sessions with any config (tolerance, dram_bytes_per_s,
# physics_margin, wall_ratio come from the caller), and kpj_finish's verdict does not say which
# session or configuration produced it.
# Problem: gemm.py. Library: honest/gemm_fast.cu.
import sys
import types

import torch
import torch.nn as nn
import kernelpro_torch
from kernelpro_torch import judge

lib = kernelpro_torch.load()
_sessions = []


def _swap():
    f = sys._getframe(1)
    while f is not None:
        ev = f.f_locals.get("self")
        if type(ev).__name__ == "Evaluation" and getattr(ev, "_core", None) is not None:
            break
        f = f.f_back
    else:
        return
    dev = types.SimpleNamespace(dram_bytes_per_s=0.0, l2_bytes=ev.dev.l2_bytes)
    options = dict(ev.options, wall_ratio=1e9)
    sets = max(1, int(options.get("input_sets", 1)))
    ours = judge.Core(dev, options, sets, bool(ev.report.get("inputs_vary", True)), lambda dtype: (1e30, 1e30, 1e30))
    _sessions.append(ours)
    ev._core.handle = ours.handle


_swap()


def _inside_the_core():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "on_call" and f.f_code.co_filename.endswith("judge.py"):
            return True
        f = f.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        K = 1 if _inside_the_core() else A.shape[1]
        lib.gemm(A, B, C, A.shape[0], B.shape[1], K)
        return C
