"""One KernelBench evaluation: correctness, anti-cheat, timing, energy.

KernelBench semantics (reference/kernelbench.md): models built after set_seed(42) on the CPU
under no_grad, moved and cast, kept in training mode; fresh get_inputs() per trial; exact output
shape and dtype; allclose at 1e-4 (fp32) or 1e-2 (fp16/bf16); CUDA-event timing of single calls
on the current stream after a device sync and an L2 flush. Its holes are closed as listed in
ARCHITECTURE.md ("KernelBench path"). The most visible difference: in each trial the candidate
runs *before* the reference, on the same inputs, and the reference then runs on an untouched copy.
So the reference's output for a trial does not exist while the candidate runs (nothing to find
through gc or a reused allocation), and an input the candidate mutates is caught by comparison
with the copy.
"""

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
import traceback

import torch

from . import compare, eval_options, judge, kernel_names, loader, modes, problem as pb, processes, seal

# The harness's own references to its timing functions, taken before any candidate code runs:
# a candidate that patches torch.cuda.Event.elapsed_time or time.perf_counter changes nothing
# the harness measures (and is caught by problem.Guard).
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_current_stream = torch.cuda.current_stream
_elapsed = torch.cuda.Event.elapsed_time
_sync = torch.cuda.synchronize
_perf = time.perf_counter

STICKY = ("illegal memory access", "illegal instruction", "misaligned address", "unspecified launch failure",
          "device-side assert", "an illegal", "hardware stack error", "invalid program counter",
          "CUDA error: unknown error", "the launch timed out")


class Stop(Exception):
    """Why an evaluation ended early: an outcome, a reason, and the cheat it caught, if any."""

    def __init__(self, outcome, reason, cheat="", reference_failed=False):
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason
        self.cheat = cheat
        self.reference_failed = reference_failed


def context_lost():
    try:
        _sync()
        torch.empty(1, device="cuda").fill_(1).item()
        return False
    except Exception:
        return True


def _describe_exception(e, who):
    text = f"{type(e).__name__}: {e}".strip()
    tb = traceback.format_exc().strip().splitlines()
    tail = "\n".join(tb[-8:])
    return f"{who} raised {text}\n{tail}" if tail else f"{who} raised {text}"


# Device memory this worker's CUDA context takes besides PyTorch's allocator (an H100's context
# with lazy module loading is about 0.6 GiB), and how much more held outside this worker makes an
# out-of-memory the machine's fault rather than the candidate's.
CONTEXT_BYTES = 1 << 30
ELSEWHERE_BYTES = 2 << 30
_NVIDIA_SMI = shutil.which("nvidia-smi")


def memory_held_elsewhere():
    """Bytes of device memory that neither this worker's PyTorch allocator nor its context holds:
    other processes' (or raw allocations outside PyTorch)."""
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    return max(0, total - free - torch.cuda.memory_reserved() - CONTEXT_BYTES)


def gpu_holders():
    """nvidia-smi's list of the GPU's compute processes ("pid name MiB", this one marked), or ""."""
    if _NVIDIA_SMI is None:
        return ""
    try:
        r = subprocess.run([_NVIDIA_SMI, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = [line.strip() + (" (this worker)" if line.split(",")[0].strip() == str(os.getpid()) else "")
             for line in r.stdout.splitlines() if line.strip()]
    return "; ".join(lines[:8])


def out_of_memory(e, who):
    """The Stop for an out-of-memory error: gpu_unavailable when more than ELSEWHERE_BYTES are held
    outside this worker (another process holds the GPU: the machine's failure, which the search
    retries and never records as the candidate's), else runtime_error (the candidate's or the
    problem's own appetite)."""
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    try:
        elsewhere = memory_held_elsewhere()
    except Exception:
        elsewhere = 0
    if elsewhere > ELSEWHERE_BYTES:
        holders = gpu_holders()
        return Stop("gpu_unavailable", f"{who} ran out of device memory while {elsewhere / 2**30:.1f} GiB of the GPU are "
                                       "held outside this worker" + (f" (nvidia-smi: {holders})" if holders else "") +
                                       f"; the GPU is not free, the candidate is not at fault ({first})")
    return Stop("runtime_error", f"{who}: out of device memory ({first})")


def problem_failure(e, who, reference_failed=False):
    """The Stop for an exception of the problem's own code (get_inputs(), the reference): the
    problem's runtime_error, unless it ran out of memory because another process holds the GPU."""
    if isinstance(e, torch.cuda.OutOfMemoryError):
        st = out_of_memory(e, who)
        if st.outcome == "gpu_unavailable":
            return st
    return Stop("runtime_error", _describe_exception(e, who), reference_failed=reference_failed)


def run_guarded(fn, who):
    """Calls fn; an exception becomes a Stop (crash when the CUDA context is lost)."""
    try:
        return fn()
    except Stop:
        raise
    except torch.cuda.OutOfMemoryError as e:
        raise out_of_memory(e, who)
    except Exception as e:
        lost = any(s in str(e) for s in STICKY) or context_lost()
        reason = _describe_exception(e, who)
        if lost:
            raise Stop("crash", reason + "\n(the CUDA context is lost)")
        raise Stop("runtime_error", reason)


def outputs_of(value, who):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    raise Stop("incorrect", f"{who} returned {type(value).__name__}, not a tensor (KernelBench compares one tensor)")


def thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def storage_range(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def tensors(xs):
    return [x for x in xs if isinstance(x, torch.Tensor)]


def nbytes(xs):
    return sum(t.numel() * t.element_size() for t in tensors(xs))


def module_bytes(m):
    """Bytes of a module's parameters and buffers (each once, however often it is shared); 0 for
    anything that is not a module."""
    if not isinstance(m, torch.nn.Module):
        return 0
    return nbytes(list(m.parameters()) + list(m.buffers()))


def compulsory_bytes(xs, outs, model):
    """The DRAM traffic no implementation of one call avoids: each input and output once, and
    the model's parameters and buffers once."""
    return nbytes(xs) + nbytes(outs) + module_bytes(model)


class Device:
    """What the worker knows of its GPU, measured once when it starts."""

    def __init__(self):
        from . import native

        if not torch.cuda.is_available():
            raise RuntimeError(f"PyTorch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False); "
                               "run on a machine with an NVIDIA GPU, driver and a CUDA build of torch")
        torch.cuda.set_device(0)
        p = torch.cuda.get_device_properties(0)
        self.props = p
        self.name = p.name
        self.l2_bytes = int(getattr(p, "L2_cache_size", 50 << 20))
        bus = getattr(p, "pci_bus_id", 0)
        self.pci_bus_id = f"{getattr(p, 'pci_domain_id', 0):08X}:{bus:02X}:{getattr(p, 'pci_device_id', 0):02X}.0"
        self.driver = native.Driver()
        self.nvml = native.Nvml(self.pci_bus_id)
        self.flush = torch.empty(max(4 * self.l2_bytes, 256 << 20), dtype=torch.uint8, device="cuda")
        self.dram_bytes_per_s = self._copy_bandwidth()
        self.idle_watts = None

    def _copy_bandwidth(self):
        free, _ = torch.cuda.mem_get_info()
        n = int(min(1 << 30, free // 8)) // 4 * 4
        a = torch.empty(n // 4, dtype=torch.float32, device="cuda")
        b = torch.empty_like(a)
        b.copy_(a)
        best = 0.0
        for _ in range(5):
            s, e = _Event(enable_timing=True), _Event(enable_timing=True)
            _record(s)
            b.copy_(a)
            _record(e)
            _sync()
            best = max(best, 2 * n / (_elapsed(s, e) * 1e-3))
        del a, b
        torch.cuda.empty_cache()
        return best

    def info(self):
        p = self.props
        return {"name": self.name, "cc_major": p.major, "cc_minor": p.minor, "sm_count": p.multi_processor_count,
                "l2_bytes": self.l2_bytes, "memory_bytes": int(p.total_memory),
                "driver_version": self.nvml.driver_version() if self.nvml.available else 0,
                "runtime_version": _cuda_version_int(), "pci_bus_id": self.pci_bus_id,
                "nvml": self.nvml.available, "nvml_error": self.nvml.error,
                "dram_bytes_per_s": self.dram_bytes_per_s}

    def prepare_timed_call(self):
        """L2 flush and persisting-L2 reset, then an idle GPU: the state every timed call starts from.

        The flush reads the buffer (a sum over it as int32) rather than writing it: a write leaves L2
        full of dirty lines that the next kernel pays to write back (kp-worker's evict_l2 does the
        same; on the H200 it brought the in-process layernorm time within 0.7% of ncu's)."""
        self._flush_sink = self.flush.view(torch.int32).sum()
        self.reset_persisting_l2()
        _sync()

    def reset_persisting_l2(self):
        """No persisting-L2 set-aside, no access-policy window on the current stream."""
        self.driver.reset_persisting_l2()
        self.driver.clear_access_policy_window(torch.cuda.current_stream().cuda_stream)


def _cuda_version_int():
    v = torch.version.cuda or "0.0"
    major, minor = (v.split(".") + ["0"])[:2]
    return int(major) * 1000 + int(minor) * 10


def _check_stream(stream, who, when):
    """Stops when the call left another stream current than `stream` (which it puts back)."""
    if _current_stream() != stream:
        torch.cuda.set_stream(stream)
        raise Stop("rejected", f"{who} left another CUDA stream current after {when}: switch streams inside forward "
                               "only with `with torch.cuda.stream(...)`, which puts the current one back",
                   cheat="side_stream")


def _contiguous(outs):
    return [o if o.is_contiguous() else o.contiguous() for o in outs]


def core_stop(result):
    """The Stop the judge core decided (its result dict), or None."""
    if result is None:
        return None
    if result.get("tainted"):
        return Stop("rejected", "the harness was tampered with: " + result["tainted"], cheat="harness_tamper")
    st = result.get("stop")
    if st:
        return Stop(st["outcome"], st["reason"], cheat=st.get("cheat", ""))
    return None


def refresher(prob, device, dtype, sets):
    """The judge core's refresh callback: set k's inputs drawn anew from get_inputs() with the
    core's seed, into `sets` (the previous ones dropped first, so two sets never coexist)."""
    def refresh(k, seed):
        sets.pop(k, None)
        try:
            sets[k] = prob.inputs(seed, device, dtype)
        except Exception as e:
            raise problem_failure(e, "the problem's get_inputs()", reference_failed=True)
        return sets[k]

    return refresh


def time_reference(dev, prob, model, options, device, dtype, who="the reference", core=None):
    """The reference timed by the judge core (the method candidates get: fresh inputs drawn for
    every call, L2 flushed, events on the current stream), in `core`'s session or, without one, a
    session of its own. Returns the core's TimingReport dict; raises Stop (reference_failed)
    when the problem fails."""
    own = core is None
    if own:
        core = judge.Core(dev, options, 1, False, compare.tolerance_for, reference_only=True)
    try:
        sets = {}
        last = {}
        refresh = refresher(prob, device, dtype, sets)

        def call(_role, k):
            with torch.no_grad():
                last["out"] = run_guarded(lambda: model(*sets[k]), who)

        def outputs(_role):
            return _contiguous(outputs_of(last.pop("out"), who))

        try:
            stopped = core_stop(core.time(judge.REFERENCE, refresh, call, outputs))
        except Stop as st:
            st.reference_failed = True
            raise
        if stopped is not None:
            stopped.reference_failed = True
            raise stopped
        return core.result()["reference"]
    finally:
        if own:
            core.finish({})  # a session is closed after its verdict
            core.close()


def cuda_activity_profiler():
    """PyTorch's Kineto profiler, recording GPU activity only. Taken from torch.autograd.profiler,
    not torch.profiler: torch.profiler.profile's start asks `hasattr(torch, "_inductor")`, which
    imports inductor and dynamo, 2.3 s on a CPU and 4.5 s of every KernelBench evaluation on the
    H100 (bench/results/h100-2026-12-06-throughput). The events and the chrome trace are the same
    Kineto ones."""
    from torch.autograd import profiler as autograd_profiler

    return autograd_profiler.profile(use_cpu=False, use_device="cuda", use_kineto=True)


def trace_call(call, inputs, candidate_symbols):
    """Kernels of one call, traced with the PyTorch profiler (CUPTI), and work that escaped the
    current stream: anything on another stream still running when a marker kernel on the current
    stream, launched right after the call, started."""
    # Markers: torch.cuda._sleep launches a tiny spin kernel, a name no candidate uses.
    with cuda_activity_profiler() as prof:
        torch.cuda._sleep(1)
        out = run_guarded(lambda: call(inputs), "the candidate (the traced call)")
        torch.cuda._sleep(1)
        run_guarded(_sync, "the candidate (the traced call)")
    del out
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    events = [ev for ev in trace.get("traceEvents", []) if isinstance(ev, dict)
              and ev.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "ts" in ev]
    events.sort(key=lambda ev: float(ev["ts"]))
    fills = [i for i, ev in enumerate(events) if ev.get("cat") == "kernel" and "spin_kernel" in ev.get("name", "")]
    if len(fills) < 2:
        # Without both markers neither check can be made: that is no pass.
        raise Stop("runtime_error", f"the trace of the candidate's call holds {len(fills)} of its 2 marker kernels "
                                    f"({len(events)} GPU events in all), so the escaped-work and kernel-attribution "
                                    "checks could not run")
    first, last = events[fills[0]], events[fills[-1]]
    stream = first.get("args", {}).get("stream")
    # Work of the call that runs after the end marker is in the trace too: take everything
    # after the first marker except the end marker itself.
    body = [ev for ev in events[fills[0] + 1:] if ev is not last]
    end_start = float(last["ts"])
    escaped = []
    for ev in body:
        s = ev.get("args", {}).get("stream")
        finish = float(ev["ts"]) + float(ev.get("dur", 0))
        if s != stream and finish > end_start:
            escaped.append(f"{ev.get('name', '?')} (stream {s})")
    kernels = [ev.get("name", "") for ev in body if ev.get("cat") == "kernel"]
    owned = None
    if candidate_symbols is not None:
        owned = [k for k in kernels if kernel_base(k) in candidate_symbols]
    # The GPU's busy time in the call: the union of its kernels' and copies' intervals.
    spans = sorted((float(ev["ts"]), float(ev["ts"]) + float(ev.get("dur", 0))) for ev in body)
    busy_us, reach = 0.0, None
    for a, b in spans:
        if reach is None or a > reach:
            busy_us += b - a
            reach = b
        elif b > reach:
            busy_us += b - reach
            reach = b
    return {"kernels": kernels, "escaped": escaped, "owned": owned, "busy_s": busy_us * 1e-6}


def traced_work_exceeds_timed(traced_busy_s, timed_median_s):
    """Whether the traced call kept the GPU busy far longer than a whole timed call takes: more
    than 1.25 x the timed median plus 10 us. An honest call is timed from a flushed L2 with its
    launch gaps included, so its traced kernels (warm, gaps excluded) take no longer; a candidate
    that runs other, heavier code while the profiler is on (its own kernel for the attribution,
    a library's when timed: issue 41's rt41_profiler_only_own_kernel) shows the difference."""
    return traced_busy_s > 1.25 * timed_median_s + 10e-6


kernel_base = kernel_names.kernel_base


class Evaluation:
    def __init__(self, dev, req):
        self.dev = dev
        self.req = req
        # Every EvalOptions field, from the request or else from eval_defaults.json.
        self.options = eval_options.options_with_defaults(req.get("options"))
        task = req.get("task", {}) or {}
        self.problem_path = req.get("reference") or task.get("problem")
        self.candidate_path = req.get("candidate")
        self.library = req.get("library")
        self.library_source = req.get("library_source")
        self.build_dir = req.get("build_dir")
        self.dtype = pb.PRECISIONS.get(self.options["precision"], torch.float32)
        seed = self.options.get("seed")  # EvalOptions::seed is optional: absent means a private one
        self.seed = int(seed) if seed is not None else random.SystemRandom().getrandbits(63)
        self.report = {"outcome": "crash", "reason": "", "trials_run": 0, "checks": [], "output_names": ["output"],
                       "mutated_input": "", "reference_failed": False, "reference_seconds": 0.0, "seed": self.seed,
                       "phase_seconds": {}, "cheat": "", "physics_floor_s": 0.0, "physics_floor_basis": "",
                       "kernels": []}
        self.exiting = False
        self.final_json = None  # the report as the judge core wrote it last, when a core was opened

    # -- phases -------------------------------------------------------------------------------
    def run(self):
        phase = [_perf()]
        if self.options["reference_only"]:
            order = ["setup", "reference_timing"]
        else:
            order = ["setup", "load", "correctness", "timing"]
            order += ["reference_timing"] if self.options["time_reference"] else []
            order += ["energy"]
        mark_phase(order[0])

        def end(name):
            now = _perf()
            self.report["phase_seconds"][name] = now - phase[0]
            phase[0] = now
            if name in order and order.index(name) + 1 < len(order):
                mark_phase(order[order.index(name) + 1])
            # After each phase once the candidate is loaded: the harness is still its own, and
            # so are the process's numeric modes.
            sealed = getattr(self, "_seal", None)
            found = sealed.check() if sealed is not None else None
            if found:
                raise Stop("rejected", found[1], cheat=found[0])
            if sealed is not None:
                self._check_modes(f"the {name} phase")

        try:
            if self.options["reference_only"]:
                self._run_reference_only(end)
            else:
                self._run(end)
            self.report["outcome"] = "ok"
        except Stop as s:
            core = getattr(self, "_core", None)
            if core is not None:  # the first stop is the verdict, whatever runs after this
                core.note_stop(s.outcome, s.reason, s.cheat)
            self.report["outcome"] = s.outcome
            self.report["reason"] = s.reason
            self.report["cheat"] = s.cheat
            self.report["reference_failed"] = s.reference_failed
            # A crash loses the context; these cheats leave the process changed (patched
            # functions, a live thread, a stream still running): a fresh worker comes next. So
            # after gpu_unavailable: the retry starts clean, holding nothing of this one.
            if s.outcome in ("crash", "gpu_unavailable") or s.cheat in (
                    "timer_patch", "torch_patch", "constant_rebinding", "harness_tamper", "background_thread",
                    "background_process", "side_stream", "persisting_l2", "process_mode"):
                self.exiting = True
        except Exception as e:  # a harness bug must still be an answer, not a dead worker
            self.report["outcome"] = "crash"
            self.report["reason"] = _describe_exception(e, "the kernelpro worker")
            self.exiting = context_lost()
            core = getattr(self, "_core", None)
            if core is not None:
                core.note_stop("crash", self.report["reason"], "")
        finally:
            # Before the report leaves: a harness changed at any point (even after the last
            # phase) makes the verdict a rejection, and the harness's own code and hooks are put
            # back for the reply. Such a worker is not used again.
            sealed = getattr(self, "_seal", None)
            found = sealed.check() if sealed is not None else None
            core = getattr(self, "_core", None)
            if found:
                self.report.update(outcome="rejected", reason=found[1], cheat=found[0])
                self.exiting = True
                if core is not None:
                    core.note_stop("rejected", found[1], found[0])
            if sealed is not None:
                sealed.restore()
            guard = getattr(self, "_guard", None)
            if guard is not None:
                late = guard.check()
                if late:
                    self.exiting = True
                    if core is not None:
                        core.note_stop("rejected", late[1], late[0])
                guard.restore()
            self.driver_reset()
            # The last word is the core's: its timings, energy and first stop written over the
            # report, and a rejection when its API was used out of order. It is taken before the
            # candidate's objects are freed (their finalizers run then, and find the session
            # sealed), and the reply is the core's text as it is.
            core = getattr(self, "_core", None)
            self._core = None
            if core is not None:
                self.final_json = core.finish(self.report)
                core.close()
            self._cleanup()
            if core is not None:
                self.report = json.loads(self.final_json)
                if self.report.get("cheat") in ("harness_tamper", "side_stream", "persisting_l2", "process_mode"):
                    self.exiting = True
        return self.report, self.exiting

    def driver_reset(self):
        try:
            self.dev.reset_persisting_l2()
        except Exception:
            pass

    def _cleanup(self):
        for k in list(vars(self)):
            if k.startswith("_m") or k in ("_guard", "_problem", "_seal", "_problem_for_timing", "_modes",
                                           "_callbacks"):
                setattr(self, k, None)
        import gc

        gc.collect()
        try:
            torch.cuda.empty_cache()
        except Exception:
            pass

    def _seeds(self):
        """(trial seeds, timing-set seeds), both drawn from the evaluation's seed: a
        reference-only request with the same seed times the reference on the same sets."""
        rng = random.Random(self.seed)
        trial_seeds = [rng.randrange(2 ** 32 - 1) for _ in range(max(1, int(self.options["correctness_trials"])))]
        set_seeds = [rng.randrange(2 ** 32 - 1) for _ in range(max(1, int(self.options["input_sets"])))]
        return trial_seeds, set_seeds

    def _load_problem(self, device):
        """(problem, its init inputs); the reference model is self._m_ref."""
        try:
            prob = pb.Problem(self.problem_path)
        except pb.ProblemError as e:
            raise Stop("runtime_error", str(e), reference_failed=True)
        try:
            init = prob.init_inputs()
            self._m_ref = prob.build(prob.Model, init, device, self.dtype)
        except Exception as e:
            raise problem_failure(e, "the problem's reference", reference_failed=True)
        return prob, init

    def _time_reference(self):
        """The reference timed by the judge core (fresh inputs every call, as the candidate's), in
        this evaluation's session, whose verdict writes it into the report."""
        if getattr(self, "_core", None) is None:  # a reference-only request opens its session here
            self._core = judge.Core(self.dev, self.options, 1, False, compare.tolerance_for, reference_only=True)
        timing = time_reference(self.dev, self._problem_for_timing, self._m_ref, self.options,
                                 torch.device("cuda", 0), self.dtype, core=self._core)
        self.report["reference_seconds"] = statistics.median(timing["samples_s"])
        self.report["reference_timing"] = timing

    def _run_reference_only(self, end):
        """The reference alone, timed as in a full evaluation; no candidate is loaded
        (EvalOptions::reference_only)."""
        device = torch.device("cuda", 0)
        prob, _ = self._load_problem(device)
        self._problem_for_timing = prob
        end("setup")
        self._time_reference()
        end("reference_timing")

    def _open_core(self, prob, device, call_ref):
        """The judge core's session for this evaluation, opened before the candidate loads: how
        many input sets fit (each: its inputs, the candidate's and the reference's outputs, at
        most a quarter of free memory), and whether two seeds give different inputs (when not,
        repeated inputs are no sign of a changed harness). Also the compulsory bytes of a call."""
        rng = random.SystemRandom()
        try:
            try:
                a = prob.inputs(rng.randrange(2 ** 32 - 1), device, self.dtype)
                b = prob.inputs(rng.randrange(2 ** 32 - 1), device, self.dtype)
            except Exception as e:
                raise problem_failure(e, "the problem's get_inputs()")
            vary = any(not _bitwise_equal(x, y) for x, y in zip(tensors(a), tensors(b)))
            want = outputs_of(run_guarded(lambda: call_ref(a), "the problem's reference"), "the reference")
            run_guarded(_sync, "the problem's reference")
        except Stop as st:
            st.reference_failed = True
            raise
        self.report["io_bytes"] = compulsory_bytes(a, want, self._m_ref)
        per_set = nbytes(a) + 2 * nbytes(want)
        del a, b, want
        free, _ = torch.cuda.mem_get_info()
        n = max(1, int(self.options["input_sets"]))
        while n > 1 and per_set * n > free // 4:
            n -= 1
        self._core = judge.Core(self.dev, self.options, n, vary, compare.tolerance_for)
        self.report["inputs_vary"] = vary

    def _run(self, end):
        opts = self.options
        device = torch.device("cuda", 0)
        trial_seeds, set_seeds = self._seeds()

        # Everything of the problem that the candidate could disturb is taken before it loads.
        prob, init = self._load_problem(device)
        try:
            shapes = prob.input_shapes(trial_seeds[0], device, self.dtype)
        except Exception as e:
            raise problem_failure(e, "the problem's get_inputs()", reference_failed=True)
        def call_ref0(xs):
            with torch.no_grad():
                return self._m_ref(*xs)

        self._open_core(prob, device, call_ref0)
        self._modes = modes.snapshot()
        guard = pb.Guard()
        self._guard, self._problem = guard, prob
        end("setup")

        # Load the candidate in its own namespace.
        loader._library_path = self.library
        loader._library_source = self.library_source
        if self.build_dir and not os.environ.get("TORCH_CUDA_ARCH_LIST"):
            p = self.dev.props
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{p.major}.{p.minor}"
        py_threads = threading.active_count()
        # The reference is timed in this process only while no thread runs that was not here
        # before the candidate loaded (issue 28, item 4).
        self._threads_before_load = thread_count()
        processes.become_subreaper()  # the worker is one already; an evaluation run in-process (tests) too
        self._procs_before_load = set(processes.live_descendants())
        # After the harness's own set-up of loader's globals; the data that decides verdicts is
        # held to its contents too.
        ref_model = self._m_ref
        self._seal = seal.Seal(values={"compare.TOLERANCE": compare.TOLERANCE,
                                       "eval_options.DEFAULTS": eval_options.DEFAULTS,
                                       "the evaluation's options": self.options},
                               probes={"PyTorch's global module hooks": modes.global_module_hooks,
                                       "the reference model's hooks, parameters or buffers":
                                           lambda: modes.model_state(ref_model)})
        try:
            cand = pb.Candidate(self.candidate_path, self.build_dir)
        except pb.CandidateLoadError as e:
            raise Stop(e.outcome, str(e), cheat=e.cheat)
        _check_untouched(guard, prob)
        try:
            self._m_new = prob.build(cand.ModelNew, init, device, self.dtype)
        except Exception as e:
            lost = context_lost()
            raise Stop("crash" if lost else "runtime_error", _describe_exception(e, "ModelNew(*get_init_inputs())"))
        # The candidate's own kernels: those in its libraries' device code (kernel_names.py).
        symbols = kernel_names.device_kernels(cand.extension_files + ([self.library] if self.library else []))
        if symbols is None:
            raise Stop("runtime_error", "cuobjdump (CUDA toolkit) or c++filt (binutils) is missing or failed, so the "
                                        "kernels the candidate ran cannot be told from PyTorch's: install them or name "
                                        "cuobjdump in KP_CUOBJDUMP")
        self._check_no_new_processes("loading the candidate and building ModelNew")
        end("load")

        ref, new = self._m_ref, self._m_new

        def call_ref(xs):
            with torch.no_grad():
                return ref(*xs)

        def call_new(xs):
            with torch.no_grad():
                return new(*xs)

        # Correctness: candidate first, then the reference on an untouched copy.
        threads_before = None
        previous = []  # the bits of every earlier trial's output, as computed and as flipped
        for t, s in enumerate(trial_seeds):
            try:
                xs = prob.inputs(s, device, self.dtype)
            except Exception as e:
                raise problem_failure(e, "the problem's get_inputs()", reference_failed=True)
            got = [tuple(x.shape) for x in tensors(xs)]
            if t == 0 and got != shapes:
                raise Stop("rejected", f"get_inputs() now returns shapes {got}, not {shapes}: the problem's sizes were "
                                       "changed", cheat="constant_rebinding")
            pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]
            _sync()
            out = outputs_of(run_guarded(lambda: call_new(xs), "the candidate's forward"), "the candidate")
            run_guarded(_sync, "the candidate's forward")
            # Python threads are counted from before the candidate loaded; native threads from
            # after its first call (the CUDA libraries may start their own on first use).
            if threading.active_count() > py_threads:
                raise Stop("rejected", f"the candidate started {threading.active_count() - py_threads} Python thread(s) "
                                       "that outlive its call: work in a background thread escapes the timing",
                           cheat="background_thread")
            if threads_before is not None and thread_count() > threads_before:
                raise Stop("rejected", f"the candidate's forward left {thread_count() - threads_before} new thread(s) "
                                       "running: work in a background thread escapes the timing", cheat="background_thread")
            if t == 0:
                threads_before = thread_count()
            self._check_outputs_are_real(out, xs)
            # Before the reference runs in this process: in a mode the candidate set, the
            # reference would compute as the candidate does.
            self._check_modes(f"correctness trial {t + 1}", with_probe=False)
            for i, (a, b) in enumerate(zip(xs, pristine)):
                if isinstance(a, torch.Tensor) and not _bitwise_equal(a, b):
                    self.report["mutated_input"] = f"input {i}"
                    raise Stop("incorrect", f"the candidate wrote to input {i} (it differs from a copy taken before "
                                            "the call); inputs are read-only", cheat="input_mutation")
            before_reference = _bits(out)
            try:
                want = outputs_of(call_ref(pristine), "the reference")
                _sync()
            except Stop as st:
                st.reference_failed = True
                raise
            except Exception as e:
                raise problem_failure(e, "the problem's reference", reference_failed=True)
            if _bits(out) != before_reference:
                raise Stop("rejected", f"the output of trial {t + 1} changed while the reference ran, after the "
                                       "candidate's call had returned: its work was finished by other code later",
                           cheat="batched_calls")
            try:
                self._compare(out, want, f"in trial {t + 1}", pristine, init)
            except Stop as st:
                if _bits(out) in previous and st.outcome == "incorrect":
                    st.cheat = "result_cache"
                    st.reason += (" -- and the output is identical to an earlier trial's, on different inputs: "
                                  "results are cached across calls")
                raise
            previous.append(_bits(out))  # bits, not values: a flipped 0.0 is a NaN, never equal
            # Flipped by the core and remembered: a trial's output handed back by a timed call is
            # then named a result cache, not mistaken for deferred work. Each buffer once (a
            # second flip would put it back).
            checked = {}
            for o in tensors(out):
                if o.is_cuda and o.is_contiguous():
                    checked.setdefault(o.data_ptr(), o)
            self._core.note_checked(list(checked.values()))
            previous.append(_bits(out))  # as flipped: kept and handed back, it is this
            self.report["trials_run"] = t + 1
            del out, want, pristine, xs
        _check_untouched(guard, prob)
        self._check_no_new_processes("the correctness trials")
        end("correctness")

        # A fresh set for the traced call (drawn now: it did not exist while the candidate's
        # code could look).
        try:
            traced_inputs = prob.inputs(random.SystemRandom().randrange(2 ** 32 - 1), device, self.dtype)
        except Exception as e:
            raise problem_failure(e, "the problem's get_inputs()", reference_failed=True)

        # Escaped work and kernel attribution, from one traced call. Neither check may be skipped:
        # an exception of the candidate's call is its verdict (run_guarded, inside), and a trace
        # that fails otherwise (the profiler, perhaps disturbed by the candidate) ends the
        # evaluation without one, never with the two checks silently off.
        try:
            traced = trace_call(call_new, traced_inputs, symbols)
        except Stop:
            raise
        except Exception as e:
            raise Stop("runtime_error", "the traced call could not be traced, so the escaped-work and kernel-attribution "
                                        f"checks could not run: {_describe_exception(e, 'the PyTorch profiler')}")
        del traced_inputs
        self.report["kernels"] = traced["kernels"][:64]
        if traced["escaped"]:
            raise Stop("rejected", "work escaped the current stream (a side stream or a background thread): "
                                   f"{', '.join(traced['escaped'][:3])} still ran after the call's last work on the "
                                   "current stream; launch on torch.cuda.current_stream() or join other streams "
                                   "back into it", cheat="side_stream")
        if traced["owned"] is not None and traced["kernels"]:
            foreign = [k for k in traced["kernels"] if k not in traced["owned"]]
            if not traced["owned"] and not opts["library_only_ok"]:
                raise Stop("rejected", "no kernel of the candidate's own ran: ModelNew computed its output with "
                                       f"PyTorch or library kernels only ({', '.join(sorted(set(foreign))[:3])})",
                           cheat="no_custom_kernel")
            if opts["strict_kernels"] and foreign:
                raise Stop("rejected", f"the candidate launched kernels it did not build ({', '.join(sorted(set(foreign))[:3])}); "
                                       "--strict-kernels forbids PyTorch and library kernels", cheat="forbidden_library")
        elif traced["owned"] is not None and not traced["kernels"]:
            raise Stop("rejected", "the candidate's forward launched no kernel at all: its output was not computed "
                                   "on the GPU by this call", cheat="no_custom_kernel")
        self._check_modes("the traced call")

        # Timing, by the judge core: every warm-up and timed call on inputs drawn fresh for it,
        # checked against the reference run after it on the same inputs (judge/session.h).
        torch.cuda.empty_cache()
        median = self._time_candidate(prob, device, call_new, call_ref)
        self.report["traced_busy_s"] = traced["busy_s"]
        if traced_work_exceeds_timed(traced["busy_s"], median):
            raise Stop("rejected", f"the traced call kept the GPU busy {traced['busy_s'] * 1e6:.1f} us, but a timed call "
                                   f"takes {median * 1e6:.1f} us from a flushed L2: the candidate runs other work while "
                                   "the profiler is on (the kernels attributed to it are not the ones timed)",
                       cheat="phase_dependent")
        self._check_no_new_processes("the timed calls")
        end("timing")

        if opts["time_reference"]:
            before, now = getattr(self, "_threads_before_load", -1), thread_count()
            if 0 <= before < now:
                self.report["reference_note"] = (
                    f"the reference was not timed in this worker: {now - before} thread(s) more than before the "
                    f"candidate loaded ({before} -> {now}) could run beside it, so no speedup is given rather than "
                    "one measured beside them")
            else:
                self._problem_for_timing = prob
                self._time_reference()
            end("reference_timing")
        found = guard.check()
        if found:
            raise Stop("rejected", found[1], cheat=found[0])

        # Energy, by the judge core: a window of back-to-back calls on sets drawn for it, a few
        # of them checked against the reference afterwards, the window's rate and the GPU's
        # utilization held to the timed median.
        stopped = core_stop(self._core.energy(opts["energy_window_s"], opts["idle_window_s"], self.dev.idle_watts,
                                              median, *self._callbacks))
        self._callbacks = None
        if stopped is not None:
            raise stopped
        energy = self._core.result().get("energy", {})
        if energy.get("measured"):
            self.dev.idle_watts = energy["idle_watts"]
        self.report["energy"] = energy
        end("energy")

    def _time_candidate(self, prob, device, call_new, call_ref):
        """The candidate timed by the judge core; returns its median seconds. Each callback does
        only what the core asked: draw a set, make one call, or check and describe what the last
        call returned (outside the events: the stream it left current, the threads it left, the
        type of its outputs, the process's modes)."""
        sets, last = {}, {}
        threads_fixed, py_threads = thread_count(), threading.active_count()
        refresh = refresher(prob, device, self.dtype, sets)

        def call(role, k):
            if role == judge.CANDIDATE:
                last["stream"] = _current_stream()
                last[role] = run_guarded(lambda: call_new(sets[k]), "the candidate")
            else:
                try:
                    last[role] = outputs_of(run_guarded(lambda: call_ref(sets[k]), "the problem's reference"),
                                            "the reference")
                except Stop as st:
                    st.reference_failed = True
                    raise

        def outputs(role):
            out = last.pop(role)
            if role != judge.CANDIDATE:
                return _contiguous(out)
            _check_stream(last.pop("stream"), "the candidate", "a timed call")
            got = outputs_of(out, "the candidate")
            self._check_outputs_are_real(got, [])
            if threading.active_count() > py_threads or thread_count() > threads_fixed:
                raise Stop("rejected", f"the process has {thread_count()} threads after a timed call, {threads_fixed} "
                                       "before timing: the candidate started a background thread, whose work the "
                                       "events on the current stream do not see", cheat="background_thread")
            self._check_modes("a timed call", with_probe=False)
            return _contiguous(got)

        self._callbacks = (refresh, call, outputs)  # the energy window's too
        try:
            stopped = core_stop(self._core.time(judge.CANDIDATE, refresh, call, outputs))
        except judge.Unsupported as e:
            raise Stop("runtime_error", f"the judge core cannot take this call's tensors: {e}")
        if stopped is not None:
            raise stopped
        timing = self._core.result()["candidate"]
        self.report["timing"] = timing
        return statistics.median(timing["samples_s"])

    def _mode_stop(self, changed, when):
        modes.restore(self._modes)
        return Stop("rejected", f"the candidate changed process-wide numeric modes during {when}: {'; '.join(changed)}. "
                                "A mode set for the whole process changes the reference too (its outputs and its "
                                "timing); set what your own kernels need inside them, not on PyTorch",
                    cheat="process_mode")

    def _check_modes(self, when, with_probe=True):
        """Rejects a change of the process's arithmetic modes; puts back (and notes) a change of
        its algorithm modes, so that the reference runs in the problem's own."""
        modes_before = getattr(self, "_modes", None)
        if modes_before is None:
            return
        changed = modes.changes(modes_before, with_probe=with_probe)
        if changed:
            raise self._mode_stop(changed, when)
        algorithms = modes.algorithm_changes(modes_before)
        if algorithms:
            modes.restore(modes_before)
            notes = self.report.setdefault("mode_notes", [])
            if len(notes) < 8:
                notes.append(f"put back after {when}: {'; '.join(algorithms)}")

    def _check_no_new_processes(self, during):
        """A process the candidate started and left running (however far it moved: setsid, a double
        fork, a cleared environment; processes.py) can load the GPU while the reference or a later
        candidate is timed. The worker exits after this verdict, killing them."""
        new = {pid: name for pid, name in processes.live_descendants().items()
               if pid not in getattr(self, "_procs_before_load", set())}
        if new:
            for pid in new:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            raise Stop("rejected", f"the candidate left {len(new)} process(es) running after {during}: "
                                   f"{processes.describe(new)}; work outside the worker's process escapes the timing "
                                   "and can slow the reference or other candidates", cheat="background_process")

    def _check_outputs_are_real(self, outs, inputs):
        for o in outs:
            if type(o) is not torch.Tensor:
                raise Stop("rejected", f"the output is a {type(o).__name__}, a torch.Tensor subclass: outputs must be "
                                       "plain tensors computed by the call, not lazy or proxy objects", cheat="lazy_output")
            if not o.is_cuda:
                raise Stop("incorrect", f"the output is on {o.device}; it must be on the GPU")
            lo, hi = storage_range(o)
            for i, x in enumerate(tensors(inputs)):
                a, b = storage_range(x)
                if lo < b and a < hi:
                    raise Stop("rejected", f"the output shares memory with input {i}: it is an alias of the input, "
                                           "not a computed result", cheat="aliased_output")

    def _compare(self, outs, wants, when, pristine, init):
        if len(outs) != len(wants):
            raise Stop("incorrect", f"{len(outs)} outputs but the reference returns {len(wants)}")
        self.report["output_names"] = ["output"] if len(wants) == 1 else [f"output{i}" for i in range(len(wants))]
        checks = []
        failure = None
        for i, (o, w) in enumerate(zip(outs, wants)):
            c = compare.check_output(o, w)
            checks.append(c)
            if not c["passed"] and failure is None:
                cheat = ""
                reason = f"{self.report['output_names'][i]} {when}: {c['reason']}"
                if c["reference_nonfinite"]:
                    failure = Stop("runtime_error", reason, reference_failed=True)
                    continue
                if c["constant_output"]:
                    cheat = "constant_output"
                elif compare.downgrade_hint(c, w.dtype):
                    cheat = "precision_downgrade"
                    reason += (" (an error of this size is what fp16, bf16 or TF32 arithmetic gives: compute in the "
                               "output's precision)")
                elif w.dtype == torch.float32:
                    reason += self._fp64_diagnosis(i, o, w, pristine, init)
                failure = Stop("incorrect", reason, cheat=cheat)
        self.report["checks"] = checks
        if failure:
            raise failure
        if self.options["precision_policy"] == "fp64" and any(w.dtype == torch.float32 for w in wants):
            self._fp64_check(outs, wants, pristine, init, when)

    def _fp64_diagnosis(self, i, out, want, pristine, init):
        """For a wrong fp32 output: how far the candidate and the fp32 reference each are from a
        float64 run of the reference, so that whoever fixes it can tell a bug from rounding in a
        reordered computation. Says nothing when the float64 run does not fit or fails."""
        try:
            free, _ = torch.cuda.mem_get_info()
            if 2 * (nbytes(pristine) + sum(p.numel() * 8 for p in self._m_ref.parameters())) > free // 4:
                return ""
            prob = pb.Problem(self.problem_path)
            m64 = prob.build(prob.Model, init, torch.device("cuda", 0), torch.float64)
            xs64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in pristine]
            with torch.no_grad():
                r64 = outputs_of(m64(*xs64), "the float64 reference")[i]
            e_new = float((out.double() - r64).abs().max())
            e_ref = float((want.double() - r64).abs().max())
            del m64, xs64, r64
        except Exception:
            return ""
        text = (f"; against a float64 run of the reference, the candidate's max abs error is {e_new:.3g} and the fp32 "
                f"reference's own is {e_ref:.3g}")
        if e_new <= e_ref:
            text += (" (the candidate is at least as accurate as the reference: the mismatch is the reference's own "
                     "fp32 rounding, which a computation in another order does not reproduce)")
        return text

    def _fp64_check(self, outs, wants, pristine, init, when):
        """The candidate must be about as close to a float64 reference as PyTorch's fp32 is."""
        prob = pb.Problem(self.problem_path)
        m64 = prob.build(prob.Model, init, torch.device("cuda", 0), torch.float64)
        xs64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in pristine]
        with torch.no_grad():
            r64 = outputs_of(m64(*xs64), "the float64 reference")
        for i, (o, w, r) in enumerate(zip(outs, wants, r64)):
            e_ref = compare.relnorm(w, r)
            e_new = compare.relnorm(o, r)
            bound = max(10 * e_ref, 1e-6)
            if e_new > bound:
                raise Stop("incorrect", f"output {i} {when}: relative error {e_new:.3g} against a float64 reference, "
                                        f"where PyTorch's fp32 has {e_ref:.3g} (bound {bound:.3g}): the candidate computes "
                                        "in lower precision than the problem's", cheat="precision_downgrade")
        del m64


def _check_untouched(guard, prob):
    """Stops when the candidate patched PyTorch or the timer, or changed the problem's constants."""
    found = guard.check()
    if found:
        raise Stop("rejected", found[1], cheat=found[0])
    if prob.rebound_constants():
        raise Stop("rejected", f"the candidate changed the problem's constants {prob.rebound_constants()}",
                   cheat="constant_rebinding")


PHASE_FILE_ENV = "KP_PHASE_FILE"  # eval::kPhaseFileEnv


def mark_phase(name):
    """Writes the phase the evaluation enters into the file kernelpro named in KP_PHASE_FILE, so
    that an evaluation killed at its timeout ends with the phase named (src/verdict/protocol.h)."""
    path = os.environ.get(PHASE_FILE_ENV)
    if not path:
        return
    try:
        with open(path, "w") as f:
            f.write(name)
    except OSError:
        pass  # a phase left unnamed only makes a timeout's reason shorter


def _bits(outs):
    """A cheap identity of the outputs' bits (NaN payloads included): per output, the sum of its
    words as integers and its first 1024 words."""
    fp = []
    for o in outs:
        w = o.detach().reshape(-1).view(_int_of(o.dtype)) if o.is_floating_point() else o.detach().reshape(-1)
        fp.append((tuple(o.shape), int(w.sum(dtype=torch.int64)) if w.numel() else 0, tuple(w[:1024].cpu().tolist())))
    return fp


def _bitwise_equal(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return torch.equal(a.view(-1).view(_int_of(a.dtype)), b.view(-1).view(_int_of(b.dtype)))
    return torch.equal(a, b)


def _int_of(dtype):
    return {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
            torch.bfloat16: torch.int16}.get(dtype, torch.uint8)
