"""The "profile" op of the KernelBench worker (src/verdict/protocol.h, ProfileRequest/ProfileReply).

The candidate's ModelNew is loaded as for an evaluation (own namespace, the problem's seed-42
construction), passes one correctness trial against the problem's Model, runs its warm-up calls,
and then one of:
  cupti  libkp_rangeprof.so (ctypes) collects counters of the forward: every kernel it launches,
         PyTorch's own included, becomes one range. By default the forward runs once per
         counter pass from restored inputs (user replay, kp_rp_collect); with "replay":"kernel",
         or when the passes differ, it runs once between kp_rp_begin/kp_rp_end;
  nvtx   the forward runs inside the NVTX range "kp_candidate" (the worker runs under ncu);
  trace  each forward runs between kp_trace_begin/kp_trace_end of the injected libkp_trace.so.
L2 is flushed before every observed call, as before a timed one. The trace and the Range
Profiler are never used in the same process (CUDA 13.0 allows one CUPTI subscriber).
"""

import ctypes
import os
import random
import time

import torch

from . import compare
from . import loader
from . import problem as pb
from . import eval_options
from . import worker_plan
from .harness import Stop, _describe_exception, context_lost, outputs_of, run_guarded, _sync


def _trace_marks():
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        raise Stop("runtime_error", "a trace request needs libkp_trace.so injected: run the worker with "
                                    "CUDA_INJECTION64_PATH set to it")
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_NOLOAD)
        begin, end = lib.kp_trace_begin, lib.kp_trace_end
    except (OSError, AttributeError) as e:
        raise Stop("runtime_error", f"{path} (CUDA_INJECTION64_PATH) is not libkp_trace.so loaded in this process: {e}")
    begin.argtypes = end.argtypes = [ctypes.c_int]
    return begin, end


# One Range Profiler session per metric list, kept across requests as kp-worker does: its set-up
# (config image, counter data, first begin) costs about 0.3 s on the H200, a later begin 0.01 s.
_session = {"key": None, "prof": None, "capacity": 0}

# The session's capacity grows from worker_plan.first_range_capacity() (src/verdict/worker_plan.h).
_wanted = {"capacity": 0}


def _range_profiler(lib, metrics):
    from . import rangeprof

    if not _wanted["capacity"]:
        _wanted["capacity"] = worker_plan.first_range_capacity()
    key = (lib, tuple(metrics))
    if _session["key"] != key or _session["capacity"] < _wanted["capacity"]:
        _drop_range_profiler()
        _session["prof"] = rangeprof.RangeProfiler(lib, metrics, max_kernels=_wanted["capacity"])
        _session["key"] = key
        _session["capacity"] = _wanted["capacity"]
    return _session["prof"]


def prewarm(spec):
    """A hello's "prewarm_profiler" ({"metrics": [...], "rangeprof_library": path}): creates the
    stage-1 session and runs one collection of a 4 KiB fill, so that the first profile request
    finds the session warm (kp-worker does the same). Returns the seconds it took."""
    import torch

    t0 = time.perf_counter()
    prof = _range_profiler(spec["rangeprof_library"], list(spec["metrics"]))
    buf = torch.empty(1024, dtype=torch.float32, device="cuda")

    def run(_pass):
        buf.fill_(0.0)
        torch.cuda.synchronize()

    prof.collect(None, run)
    return time.perf_counter() - t0


def _drop_range_profiler():
    prof, _session["prof"], _session["key"], _session["capacity"] = _session["prof"], None, None, 0
    if prof is not None:
        try:
            prof.close()
        except Exception:
            pass


class Profile:
    def __init__(self, dev, req):
        self.dev = dev
        self.req = req
        self.options = eval_options.options_with_defaults(req.get("options"))
        self.request = req.get("profile", {}) or {}
        task = req.get("task", {}) or {}
        self.problem_path = req.get("reference") or task.get("problem")
        self.candidate_path = req.get("candidate")
        self.dtype = pb.PRECISIONS.get(self.options["precision"], torch.float32)
        seed = self.options.get("seed")
        self.seed = int(seed) if seed is not None else random.SystemRandom().getrandbits(63)
        self.reply = {"outcome": "crash", "reason": "", "mode": self.request.get("mode", "cupti"), "calls": 0,
                      "seed": self.seed, "collect_seconds": 0.0, "phase_seconds": {}}
        self.exiting = False

    def run(self):
        t = [time.perf_counter()]

        def end(name):
            now = time.perf_counter()
            self.reply["phase_seconds"][name] = now - t[0]
            t[0] = now

        try:
            self._run(end)
            self.reply["outcome"] = "ok"
        except Stop as s:
            self.reply["outcome"] = s.outcome
            self.reply["reason"] = s.reason
            self.exiting = s.outcome == "crash" or bool(s.cheat)
        except Exception as e:
            self.reply["outcome"] = "crash"
            self.reply["reason"] = _describe_exception(e, "the kernelpro worker")
            self.exiting = context_lost()
        return self.reply, self.exiting

    def _run(self, end):
        device = torch.device("cuda", 0)
        try:
            prob = pb.Problem(self.problem_path)
            init = prob.init_inputs()
            ref = prob.build(prob.Model, init, device, self.dtype)
        except Exception as e:
            raise Stop("runtime_error", _describe_exception(e, "the problem's reference"), reference_failed=True)
        loader._library_path = self.req.get("library")
        loader._library_source = self.req.get("library_source")
        build_dir = self.req.get("build_dir")
        if build_dir and not os.environ.get("TORCH_CUDA_ARCH_LIST"):
            p = self.dev.props
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{p.major}.{p.minor}"
        try:
            cand = pb.Candidate(self.candidate_path, build_dir)
        except pb.CandidateLoadError as e:
            raise Stop(e.outcome, str(e), cheat=e.cheat)
        try:
            new = prob.build(cand.ModelNew, init, device, self.dtype)
        except Exception as e:
            raise Stop("crash" if context_lost() else "runtime_error", _describe_exception(e, "ModelNew(*get_init_inputs())"))
        end("load")

        xs = prob.inputs(random.Random(self.seed).randrange(2 ** 32 - 1), device, self.dtype)
        self._inputs = xs
        pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]

        def call():
            with torch.no_grad():
                return new(*xs)

        if self.request.get("check", True):
            out = outputs_of(run_guarded(call, "the candidate's forward"), "the candidate")
            run_guarded(_sync, "the candidate's forward")
            with torch.no_grad():
                want = outputs_of(ref(*pristine), "the reference")
            _sync()
            if len(out) != len(want):
                raise Stop("incorrect", f"{len(out)} outputs but the reference returns {len(want)}")
            for i, (o, w) in enumerate(zip(out, want)):
                c = compare.check_output(o, w)
                if not c["passed"]:
                    raise Stop("incorrect", f"output {i} in the profiled run: {c['reason']}")
            del out, want
            end("correctness")
        for _ in range(int(self.request.get("warmup_calls", 3))):
            run_guarded(call, "the candidate's forward")
        run_guarded(_sync, "the candidate's forward")
        end("warmup")

        mode = self.request.get("mode", "cupti")
        calls = max(1, int(self.request.get("calls", 1)))
        t0 = time.perf_counter()
        if mode == "cupti":
            self._collect_counters(call)
        elif mode == "nvtx":
            for i in range(calls):
                self.dev.prepare_timed_call()
                torch.cuda.nvtx.range_push("kp_candidate")
                try:
                    run_guarded(call, "the candidate's forward")
                    run_guarded(_sync, "the candidate's forward")
                finally:
                    torch.cuda.nvtx.range_pop()
                self.reply["calls"] = i + 1
        elif mode == "trace":
            begin, finish = _trace_marks()
            for i in range(calls):
                self.dev.prepare_timed_call()
                begin(i)
                try:
                    run_guarded(call, "the candidate's forward")
                    run_guarded(_sync, "the candidate's forward")
                finally:
                    finish(i)
                self.reply["calls"] = i + 1
        else:
            raise Stop("runtime_error", f"unknown profile mode \"{mode}\" (cupti, nvtx, trace)")
        self.reply["collect_seconds"] = time.perf_counter() - t0
        end("collect")

    def _collect_counters(self, call):
        """One forward's counters. User replay (default "auto"): the forward runs once per counter
        pass, each from a copy of the inputs as they are now and a flushed L2; kernel replay
        (CUPTI saves and restores all device memory around every pass of every kernel) when
        asked, or when the passes launched different kernels. A forward that launches more
        kernels than the session holds is collected again on a session grown to hold them
        (worker_plan.grown_range_capacity); beyond the most, the counters are a sample of its
        first launches."""
        lib = self.request.get("rangeprof_library") or ""
        metrics = list(self.request.get("metrics") or [])
        replay = self.request.get("replay", "auto")
        if replay not in ("auto", "user", "kernel"):
            raise Stop("runtime_error", f"unknown replay \"{replay}\" in the profile request (auto, user or kernel)")
        xs = self._inputs
        snap = [x.clone() if isinstance(x, torch.Tensor) else None for x in xs] if replay != "kernel" else []

        def prepare(_pass):
            with torch.no_grad():
                for x, s in zip(xs, snap):
                    if s is not None:
                        x.copy_(s)
            self.dev.prepare_timed_call()
            _sync()

        result = self._collect_once(lib, metrics, replay, call, prepare, restore_first=False)
        before = _session["capacity"]
        grown = worker_plan.grown_range_capacity(before, int(result.get("launches", -1)),
                                                 int(result.get("dropped", 0) or 0))
        if grown > before:
            _wanted["capacity"] = grown
            result = self._collect_once(lib, metrics, replay, call, prepare, restore_first=True)
            result["capacity_grown_from"] = before
        self.reply["range_profile"] = result
        self.reply["calls"] = 1

    def _collect_once(self, lib, metrics, replay, call, prepare, restore_first):
        """One collection on the kept session; the result dict (with "dropped" when the forward
        launched more kernels than the session holds). `restore_first`: a collection ran before,
        so the inputs are restored before a kernel-replay collection too."""
        from . import rangeprof

        try:
            prof = _range_profiler(lib, metrics)
        except Exception as e:
            _drop_range_profiler()
            raise Stop("runtime_error", f"the CUPTI range profiler: {e}")

        def run(_pass):
            run_guarded(call, "the candidate's forward")
            run_guarded(_sync, "the candidate's forward")

        fallback = None
        if replay != "kernel":
            try:
                return prof.collect(prepare, run)
            except Stop:
                _drop_range_profiler()
                raise
            except rangeprof.RangeProfilerError as e:
                if e.kind == "dropped" and e.result:
                    # More launches than the session holds: the first ones are a sample, and
                    # the result's "dropped" says how many are missing.
                    return e.result
                if e.kind != "replay" or replay != "auto":
                    _drop_range_profiler()
                    raise Stop("runtime_error", f"the CUPTI range profiler: {e}")
                fallback = str(e)
                prepare(0)
        elif restore_first:
            prepare(0)
        else:
            self.dev.prepare_timed_call()
        try:
            prof.begin()
        except Exception as e:
            _drop_range_profiler()
            raise Stop("runtime_error", f"the CUPTI range profiler: {e}")
        try:
            run(0)
        finally:
            try:
                result = prof.end()
            except rangeprof.RangeProfilerError as e:
                if e.kind != "dropped" or not e.result:
                    _drop_range_profiler()
                    raise Stop("runtime_error", f"the CUPTI range profiler: {e}")
                result = e.result  # the first launches, a sample; "dropped" counts the rest
            except Exception as e:
                _drop_range_profiler()
                raise Stop("runtime_error", f"the CUPTI range profiler: {e}")
        if fallback:
            result["replay_fallback"] = fallback
        return result
