"""KernelBench problems and candidates, each loaded into its own namespace.

KernelBench execs the candidate into the problem's globals, so a candidate can see `Model` and
rebind the size constants that `get_inputs()` reads at call time (a `batch_size = 16` shrinks
both the check and the timing). Here the problem and the candidate get separate dicts, the
problem's constants are snapshotted before any candidate code runs and re-checked afterwards,
and integer and bool inputs keep their dtype (KernelBench PR #152 behaviour).
"""

import os
import random
import re
import sys
import types

import torch

from .static_check import static_check

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


class ProblemError(Exception):
    """The problem file itself is at fault (the task, not the candidate)."""


class CandidateLoadError(Exception):
    def __init__(self, outcome, message, cheat=""):
        super().__init__(message)
        self.outcome = outcome
        self.cheat = cheat


def set_seed(seed):
    """KernelBench's set_seed: CPU and CUDA generators (and Python's, for good measure)."""
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)
    random.seed(seed)


def _constants(ns):
    out = {}
    for k, v in ns.items():
        if k.startswith("__"):
            continue
        if isinstance(v, (bool, int, float, str)) or (
            isinstance(v, tuple) and all(isinstance(x, (bool, int, float, str)) for x in v)
        ):
            out[k] = v
    return out


class Problem:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.name = os.path.basename(path)
        with open(self.path, encoding="utf-8") as f:
            self.source = f.read()
        self.ns = {"__name__": "kernelbench_problem", "__file__": self.path, "__builtins__": __builtins__}
        try:
            exec(compile(self.source, self.path, "exec"), self.ns)
        except Exception as e:
            raise ProblemError(f"{self.name} does not run: {type(e).__name__}: {e}") from e
        missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in self.ns]
        if missing:
            raise ProblemError(f"{self.name} does not define {', '.join(missing)}; a KernelBench problem needs "
                               "class Model, get_inputs() and get_init_inputs()")
        self.Model = self.ns["Model"]
        self.constants = _constants(self.ns)

    def rebound_constants(self):
        """Names of the problem's constants whose value changed since loading."""
        now = _constants(self.ns)
        return sorted(k for k, v in self.constants.items() if now.get(k, object()) != v)

    def init_inputs(self):
        set_seed(42)
        return list(self.ns["get_init_inputs"]())

    def inputs(self, seed, device, dtype):
        """get_inputs() under `seed`, floats cast to dtype, everything tensor moved to device.

        For a CUDA device the tensors are drawn there directly (get_inputs() runs with it as the
        default device): KernelBench draws level-1 inputs of up to 17 GB with the CPU generator,
        seconds per call, for values that mean nothing in particular, since the seeds here are
        private anyway. A get_inputs() that cannot run that way runs on the CPU."""
        set_seed(seed)
        if torch.device(device).type == "cuda":
            try:
                with torch.device(device):
                    raw = list(self.ns["get_inputs"]())
                return [to_device(x, device, dtype) for x in raw]
            except Exception:
                set_seed(seed)
        raw = list(self.ns["get_inputs"]())
        return [to_device(x, device, dtype) for x in raw]

    def input_shapes(self, seed, device, dtype):
        """The shapes of the tensors inputs(seed, device, dtype) returns, drawn on PyTorch's meta
        device (shapes only: no memory, no values) when get_inputs() runs there; a get_inputs()
        that cannot (its sizes depend on drawn values) draws for real."""
        set_seed(seed)
        try:
            with torch.device("meta"):
                raw = list(self.ns["get_inputs"]())
            return [tuple(x.shape) for x in raw if isinstance(x, torch.Tensor)]
        except Exception:
            pass
        return [tuple(x.shape) for x in self.inputs(seed, device, dtype) if isinstance(x, torch.Tensor)]

    def build(self, cls, init, device, dtype):
        """KernelBench's construction: seed 42, CPU, no_grad, then moved and cast; training mode kept."""
        set_seed(42)
        with torch.no_grad():
            m = cls(*init)
        return m.to(device=device, dtype=dtype)


def to_device(x, device, dtype):
    if isinstance(x, torch.Tensor):
        if x.dtype in FLOAT_DTYPES:
            return x.to(device=device, dtype=dtype)
        return x.to(device=device)  # integer and bool inputs keep their dtype
    return x


class Candidate:
    """A candidate's ModelNew, exec'd in its own namespace (it cannot see Model or the sizes)."""

    def __init__(self, path, build_dir=None):
        self.path = os.path.abspath(path)
        with open(self.path, encoding="utf-8", errors="replace") as f:
            self.source = f.read()
        found = static_check(self.source)
        if found:
            raise CandidateLoadError("rejected", found[1], cheat=found[0])
        if build_dir:
            os.makedirs(build_dir, exist_ok=True)
            os.environ["TORCH_EXTENSIONS_DIR"] = build_dir
        self.ns = {"__name__": "kernelpro_candidate", "__file__": self.path, "__builtins__": __builtins__}
        before = set(sys.modules)
        try:
            code = compile(self.source, self.path, "exec")
        except SyntaxError as e:
            raise CandidateLoadError("compile_error", f"{os.path.basename(self.path)}:{e.lineno}: syntax error: {e.msg}")
        try:
            exec(code, self.ns)
        except Exception as e:  # load_inline builds here: its failures are compile errors
            text = f"{type(e).__name__}: {e}"
            if "Error building extension" in text or "ninja" in text.lower() or "nvcc" in text.lower():
                raise CandidateLoadError("compile_error", "load_inline failed to build the extension:\n" + _tail(text, 40))
            raise CandidateLoadError("load_error", "loading the candidate raised " + _tail(text, 20))
        if "ModelNew" not in self.ns or not isinstance(self.ns["ModelNew"], type):
            raise CandidateLoadError("load_error", "the candidate defines no class ModelNew (an nn.Module with Model's "
                                                   "constructor and forward signature)")
        self.ModelNew = self.ns["ModelNew"]
        # Shared objects this candidate brought in (load_inline extensions): their kernels are
        # the candidate's own, everything else a trace shows is PyTorch's or a library's.
        self.extension_files = []
        for name in set(sys.modules) - before:
            f = getattr(sys.modules[name], "__file__", None) or ""
            if f.endswith(".so"):
                self.extension_files.append(f)
        for v in self.ns.values():
            f = getattr(v, "__file__", None) if isinstance(v, types.ModuleType) else None
            if f and f.endswith(".so") and f not in self.extension_files:
                self.extension_files.append(f)


def _tail(text, lines):
    parts = text.splitlines()
    return "\n".join(parts[-lines:])


class Guard:
    """Identity snapshot of the timing functions and of PyTorch's public callables.

    A candidate that patches torch.cuda.Event.elapsed_time, time.perf_counter, F.softmax or
    torch.Tensor.__add__ at import time could change what the harness measures or what the
    reference computes. The worker keeps its own references to the timing functions, and this
    snapshot is compared after the candidate loads and after it runs.
    """

    TIMERS = [
        ("torch.cuda.Event", lambda: torch.cuda.Event),
        ("torch.cuda.Event.record", lambda: torch.cuda.Event.record),
        ("torch.cuda.Event.elapsed_time", lambda: torch.cuda.Event.elapsed_time),
        ("torch.cuda.Event.synchronize", lambda: torch.cuda.Event.synchronize),
        ("torch.cuda.synchronize", lambda: torch.cuda.synchronize),
        ("torch.cuda.current_stream", lambda: torch.cuda.current_stream),
        ("time.perf_counter", lambda: __import__("time").perf_counter),
        ("time.time", lambda: __import__("time").time),
        ("time.monotonic", lambda: __import__("time").monotonic),
    ]

    def __init__(self):
        # torch._dynamo rewraps torch.manual_seed when it is first imported, which a candidate
        # may trigger after the snapshot. Its wrapper keeps the original as __wrapped__, which
        # _same_descriptor accepts, so dynamo is not imported here: that import alone took about
        # 1.8 s of every KernelBench evaluation's set-up (torch 2.11, CPU, measured here).
        self.timers = {name: get() for name, get in self.TIMERS}
        import torch.nn.functional as F

        self.spaces = {"torch": torch, "torch.nn.functional": F, "torch.Tensor": torch.Tensor,
                       "torch.nn.Module": torch.nn.Module, "torch.linalg": torch.linalg, "torch.fft": torch.fft,
                       "torch.special": torch.special}
        self.snapshot = {}
        for space, obj in self.spaces.items():
            for k in dir(obj):
                if k.startswith("__") and k not in ("__call__", "__add__", "__mul__", "__matmul__", "__getitem__"):
                    continue
                try:
                    self.snapshot[(space, k)] = getattr(obj, k)
                except Exception:
                    continue

    def restore(self):
        """Puts back every snapshotted function a candidate replaced (the worker also exits after
        such a candidate, but in-process callers and the next evaluation must not inherit it)."""
        for name, _ in self.TIMERS:
            owner, attr = name.rsplit(".", 1)
            target = {"torch.cuda.Event": torch.cuda.Event, "torch.cuda": torch.cuda,
                      "time": __import__("time")}.get(owner)
            if target is not None and getattr(target, attr, None) is not self.timers[name]:
                setattr(target, attr, self.timers[name])
        for (space, k), v in self.snapshot.items():
            try:
                now = getattr(self.spaces[space], k)
                if now is not v and not _same_descriptor(now, v):
                    setattr(self.spaces[space], k, v)
            except Exception:
                continue

    def check(self):
        """(cheat, reason) when something was patched, else None."""
        for name, get in self.TIMERS:
            try:
                now = get()
            except Exception:
                now = None
            if now is not self.timers[name]:
                return "timer_patch", f"the candidate replaced {name}; the harness's timer is not the candidate's to change"
        changed = []
        for (space, k), v in self.snapshot.items():
            try:
                now = getattr(self.spaces[space], k)
            except Exception:
                now = None
            if now is not v and not _same_descriptor(now, v):
                changed.append(f"{space}.{k}")
        if changed:
            return "torch_patch", (f"the candidate replaced {', '.join(changed[:5])}"
                                   f"{' and more' if len(changed) > 5 else ''}; patching PyTorch changes what the "
                                   "reference computes")
        return None


def _same_descriptor(a, b):
    # Bound methods and some builtins are recreated on every attribute access; PyTorch's own
    # wrappers (functools.wraps) keep the original as __wrapped__.
    try:
        if a == b:
            return True
    except Exception:
        pass
    if not str(getattr(a, "__module__", "") or "").startswith("torch"):
        return False
    w = a
    for _ in range(4):
        w = getattr(w, "__wrapped__", None)
        if w is None:
            return False
        if w is b:
            return True
    return False
