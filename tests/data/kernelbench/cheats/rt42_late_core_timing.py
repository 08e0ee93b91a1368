# Cheat (harness_tamper, forbidden_library): cuBLAS does all the work and is judged ok with a
# timing of cuBLAS. ModelNew.forward is torch.matmul, so the traced call finds no kernel of its
# own and the Python harness stops with no_custom_kernel before the judge core ever times the
# candidate. At import the candidate keeps the session's handle (Evaluation._core.handle, found
# through the frames) and a weak reference to the Evaluation. In Evaluation.run()'s finally:,
# _cleanup() drops Evaluation._m_new, and ModelNew.__del__ runs: after the Seal's and the Guard's
# last checks, before Core.finish. There it drives the core itself, through the harness's own
# judge.Core adapter on that handle: kpj_time(CANDIDATE) with callbacks of its own (inputs drawn
# with the core's seeds, torch.matmul as the "candidate" and as the "reference"), then
# kpj_time(REFERENCE) likewise. The session accepts both: no callback is running, it is not
# finished, neither role was timed. Then it rewrites the report dict that run() is about to hand
# to kpj_finish: outcome "ok", no reason, no cheat, the honest twin's kernel name. kpj_finish
# writes the core's (genuine, cuBLAS) samples over it; its only guard on an "ok" (the candidate
# was timed) holds, and no stop or taint is set, so the reply is ok at cuBLAS speed.
# A variant whose callbacks describe a one-element input and output times a copy of 8 bytes
# (about 3 us, under a physics floor computed from those described bytes) for any problem.
# Weakness: session.cc Session::time accepts a first timing of a role at any moment before
# finish() from any caller (in_callback_ only sees reentry from the core's own callbacks), the
# callbacks are whoever passes them (kp_judge.h kpj_time), and Session::finish trusts the
# adapter's outcome: a Python-side stop that came before the core's timing is just a field of a
# dict the candidate can still reach, rewritten after the last Seal.check() (evaluate.py
# Evaluation.run, finally:, _cleanup() before core.finish()).
# Problem: gemm.py. Library: honest/relu_fast.cu (loaded, never called).
import json
import sys
import weakref

import torch
import torch.nn as nn
import kernelpro_torch
from kernelpro_torch import judge

lib = kernelpro_torch.load()
_held = {}


def _remember():
    f = sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("self")
        if type(s).__name__ == "Evaluation" and getattr(s, "_core", None) is not None:
            _held["ev"] = weakref.ref(s)
            _held["handle"] = s._core.handle
            return
        f = f.f_back


_remember()


def _time_it_ourselves():
    ev = _held["ev"]() if "ev" in _held else None
    handle = _held.get("handle")
    shapes = _held.get("shapes")
    if ev is None or not handle or not shapes or not isinstance(getattr(ev, "report", None), dict):
        return
    report = ev.report
    if report.get("outcome") == "ok":
        return  # the harness timed it after all (library_only_ok): nothing to add
    core = judge.Core.__new__(judge.Core)
    core.handle = handle
    if "candidate" in core.result() or core.result().get("tainted"):
        return
    sets, last = {}, {}

    def refresh(k, seed):
        g = torch.Generator(device="cuda")
        g.manual_seed(seed % (2 ** 63))
        sets[k] = [torch.rand(s, device="cuda", generator=g) for s in shapes]
        return sets[k]

    def call(role, k):
        last[role] = torch.matmul(*sets[k])

    def outputs(role):
        return [last.pop(role)]

    for role in (judge.CANDIDATE, judge.REFERENCE):
        stopped = core.time(role, refresh, call, outputs)
        if stopped is not None:
            return
    r = core.result()
    report.update(outcome="ok", reason="", cheat="", reference_failed=False,
                  kernels=["gemm_tiled(float const*, float const*, float*, int, int, int)"])
    report["reference_seconds"] = sorted(r["reference"]["samples_s"])[len(r["reference"]["samples_s"]) // 2]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        _held.setdefault("shapes", (tuple(A.shape), tuple(B.shape)))
        return torch.matmul(A, B)

    def __del__(self):
        try:
            _time_it_ourselves()
        except Exception:
            pass
