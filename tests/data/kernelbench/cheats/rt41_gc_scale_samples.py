# Cheat (harness_tamper): an honest ReLU kernel whose reported time is cut after the judge is done
# with it. At import it walks the interpreter's frames (gc.get_objects() as a fallback) up to the
# running kernelpro_torch.evaluate.Evaluation and hooks gc.callbacks. _cleanup() runs
# gc.collect() after the last check (after the Seal's final check and the Guard's, both of
# which look only at the identity of functions and globals, never at the contents of the dicts
# the harness holds). In that collection the hook rescales report["timing"]["samples_s"] and
# ["wall_s"] in place, so the reply (and kernelpro's median, which it recomputes from
# samples_s) carries a fraction of the measured time. The cut stops just above the report's own
# physics_floor_s, so a re-check of the floor on the reply does not see it either.
# Weakness: Evaluation.run()'s finally: block (Seal.check, then _cleanup's gc.collect) leaves the
# report a live, mutable dict after every check; Seal skips dicts and lists by design.
# Problem: relu.py. Library: honest/relu_fast.cu.
import gc
import statistics
import sys
import weakref

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()

SCALE = 0.25  # the most it cuts; it cuts less where the physics floor would show it


def _evaluation():
    f = sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("self")
        if type(s).__name__ == "Evaluation" and isinstance(getattr(s, "report", None), dict):
            return s
        f = f.f_back
    for o in gc.get_objects():
        if type(o).__name__ == "Evaluation" and getattr(o, "_seal", None) is not None:
            return o
    return None


def _install():
    ev = _evaluation()
    if ev is None:
        return
    target = weakref.ref(ev)

    def hook(phase, info):
        e = target()
        if e is None:
            _remove(hook)
            return
        # _cleanup() sets _seal to None just before its gc.collect(): every check has run.
        if phase != "start" or getattr(e, "_seal", 0) is not None:
            return
        _remove(hook)
        try:
            rep = e.report
            t = rep.get("timing")
            if rep.get("outcome") != "ok" or not isinstance(t, dict) or not t.get("samples_s"):
                return
            med = statistics.median(t["samples_s"])
            floor = float(rep.get("physics_floor_s") or 0.0)
            f = SCALE if floor <= 0 else min(1.0, max(SCALE, 1.02 * floor / med))
            t["samples_s"][:] = [s * f for s in t["samples_s"]]
            t["wall_s"][:] = [w * f for w in t.get("wall_s", [])]
        except Exception:
            pass

    gc.callbacks.append(hook)


def _remove(hook):
    try:
        gc.callbacks.remove(hook)
    except ValueError:
        pass


_install()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
