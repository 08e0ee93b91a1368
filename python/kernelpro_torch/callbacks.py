"""The judge core's callbacks for one KernelBench evaluation: draw a set, make one call, and check
what a call of the candidate returned as Python objects. The core makes every call through them,
in the trials, the timing and the energy window; each does only what the core asked (a timed call
does nothing else), and the checks of what came back run outside any events."""

import threading

import torch

from . import judge
from .harness import (Stop, _check_stream, _contiguous, _current_stream, outputs_of, run_guarded, storage_range, tensors,
                      thread_count)


class Callbacks:
    """`call_new(xs)` and `call_ref(xs)` make one call; `shapes` are get_inputs()'s shapes for the
    first trial's seed (`first_seed`), taken before the candidate loaded; `py_threads` the Python
    threads then; `check_modes(when, with_probe)` stops on a changed process-wide mode."""

    def __init__(self, prob, device, dtype, call_new, call_ref, shapes, first_seed, py_threads, check_modes):
        self.sets, self.last = {}, {}
        self.draw = judge.refresher(prob, device, dtype, self.sets)
        self.call_new, self.call_ref = call_new, call_ref
        self.shapes, self.first_seed = shapes, first_seed
        self.py_threads, self.check_modes = py_threads, check_modes
        self.phase = "call"
        self.threads_fixed = None  # native threads: from after the candidate's first call

    def enter(self, phase, recount=False):
        """The (refresh, call, outputs) callbacks for a phase of the core's ("correctness trial",
        "timed call", ...); recount: the process's threads counted afresh (the profiler of the
        traced call starts its own)."""
        self.phase = phase
        if recount:
            self.threads_fixed = thread_count()
        return self.refresh, self.call, self.outputs

    def refresh(self, k, seed):
        xs = self.draw(k, seed)
        got = [tuple(x.shape) for x in tensors(xs)]
        if seed == self.first_seed and got != self.shapes:
            raise Stop("rejected", f"get_inputs() now returns shapes {got}, not {self.shapes}: the problem's sizes were "
                                   "changed", cheat="constant_rebinding")
        return xs

    def call(self, role, k):
        if role == judge.CANDIDATE:
            self.last["set"] = k
            self.last["stream"] = _current_stream()
            self.last[role] = run_guarded(lambda: self.call_new(self.sets[k]), "the candidate")
            return
        try:
            self.last[role] = outputs_of(run_guarded(lambda: self.call_ref(self.sets[k]), "the problem's reference"),
                                         "the reference")
        except Stop as st:
            st.reference_failed = True
            raise

    def outputs(self, role):
        out = self.last.pop(role)
        if role != judge.CANDIDATE:
            return _contiguous(out)
        _check_stream(self.last.pop("stream"), "the candidate", f"a {self.phase}")
        got = outputs_of(out, "the candidate")
        ins = tensors(self.sets.get(self.last.pop("set", None), []))
        for o in got:
            if type(o) is not torch.Tensor:
                raise Stop("rejected", f"the output is a {type(o).__name__}, a torch.Tensor subclass: outputs must be "
                                       "plain tensors computed by the call, not lazy or proxy objects", cheat="lazy_output")
            if not o.is_cuda:
                raise Stop("incorrect", f"the output is on {o.device}; it must be on the GPU")
            # Before the contiguous copy the core sees: a strided view of an input is an alias too.
            lo, hi = storage_range(o)
            for i, x in enumerate(ins):
                a, b = storage_range(x)
                if lo < b and a < hi:
                    raise Stop("rejected", f"the output shares memory with input {i}: it is an alias of the input, "
                                           "not a computed result", cheat="aliased_output")
        # Python threads are counted from before the candidate loaded; native threads from after
        # its first call (the CUDA libraries may start their own on first use).
        if threading.active_count() > self.py_threads:
            raise Stop("rejected", f"the candidate started {threading.active_count() - self.py_threads} Python "
                                   "thread(s) that outlive its call: work in a background thread escapes the timing",
                       cheat="background_thread")
        if self.threads_fixed is None:
            self.threads_fixed = thread_count()
        elif thread_count() > self.threads_fixed:
            raise Stop("rejected", f"the process has {thread_count()} threads after a {self.phase}, {self.threads_fixed} "
                                   "before: the candidate started a background thread, whose work the events on the "
                                   "current stream do not see", cheat="background_thread")
        # Before the reference runs in this process: in a mode the candidate set, the reference
        # would compute as the candidate does.
        self.check_modes(f"a {self.phase}", with_probe=False)
        return _contiguous(got)
