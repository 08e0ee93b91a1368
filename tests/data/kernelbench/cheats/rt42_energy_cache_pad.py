# Cheat (phase_dependent, result_cache): honest tiled GEMM on every call whose input objects it has
# not seen, and a cache of the output under the identity of (A, B). Every correctness trial, the
# traced call and every warm-up and timed call of the judge core get input tensors drawn for them,
# so the cache never hits there and every one of them is the real GEMM, checked against the
# reference. The energy window refreshes each set once and then calls back to back on the same
# set objects: from the second call on a set, the cache hits, and the call returns the kept output
# (right: those very inputs produced it) after a one-thread spin kernel (torch.cuda._sleep) of
# 0.55 x the measured honest GEMM time, calibrated against events in the first correctness trial.
# The window's call rate is then about 0.55 x the timed median (the rate test flags under 1/3),
# NVML sees a kernel running almost all the time (the utilization test wants a quarter of the
# expected busy share), and the kEnergyChecks copies taken right after their calls match the
# reference run on the same sets after the window. joules_per_call is about 0.55 x the idle power
# x t_call instead of the GEMM's power x t_call; the timing is untouched.
# Weakness: session.cc Session::energy_inner draws each set once (refresh_set for k < sets) and
# cycles calls % sets over unchanged inputs, neither flipping nor poisoning the outputs between
# calls (unlike the timed loop's check_outputs), so a cache keyed on the input objects (or
# pointers, or a sampled fingerprint) serves every window call after the first per set with right
# values. energy_rate_says_skipped and energy_gpu_idle (verdict/worker_plan.cc) test time and
# "a kernel is running", which a spin kernel gives at almost no power.
# Problem: gemm.py. Library: honest/gemm_fast.cu. Run with energy_window_s > 0.
import weakref

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
_kept = {}          # (id(A), id(B)) -> (weakref A, weakref B, C)
_ns_per_cycle = []  # of torch.cuda._sleep, measured once
_honest_s = []      # device time of recent honest calls
_pending = []       # (start, end) events of honest calls not read yet


def _calibrate():
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    torch.cuda._sleep(2_000_000)
    e.record()
    e.synchronize()
    _ns_per_cycle.append(s.elapsed_time(e) * 1e6 / 2_000_000)


def _read_events():
    while _pending and _pending[0][1].query():
        s, e = _pending.pop(0)
        _honest_s.append(s.elapsed_time(e) * 1e-3)
        del _honest_s[:-16]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        if not _ns_per_cycle:
            _calibrate()
        _read_events()
        key = (id(A), id(B))
        hit = _kept.get(key)
        if hit is not None and hit[0]() is A and hit[1]() is B and _honest_s:
            t = sorted(_honest_s)[len(_honest_s) // 2]
            torch.cuda._sleep(max(1, int(0.55 * t * 1e9 / _ns_per_cycle[0])))
            return hit[2]
        a, b = A.contiguous(), B.contiguous()
        C = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        lib.gemm(a, b, C, a.shape[0], b.shape[1], a.shape[1])
        e.record()
        _pending.append((s, e))
        del _pending[:-64]
        drop = lambda _ref, k=key: _kept.pop(k, None)  # noqa: E731
        _kept[key] = (weakref.ref(A, drop), weakref.ref(B, drop), C)
        return C
