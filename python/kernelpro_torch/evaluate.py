"""One KernelBench evaluation: the adapter between a KernelBench problem and the judge core.

KernelBench semantics (reference/kernelbench.md): models built after set_seed(42) on the CPU
under no_grad, moved and cast, kept in training mode; fresh get_inputs() per trial; exact output
shape and dtype; allclose at 1e-4 (fp32) or 1e-2 (fp16/bf16); CUDA-event timing of single calls
on the current stream after a device sync and an L2 flush. Its holes are closed as listed in
ARCHITECTURE.md ("KernelBench path").

The judge core (judge.py, src/judge/session.h) makes every checked call: the correctness trials,
the timed calls and the energy window, with their seeds, fingerprints, comparisons and verdicts.
This module loads the problem and the candidate, hands the core callbacks that draw inputs, make
one call and check what it returned as Python objects (plain tensors on the GPU, the current
stream, threads, processes, numeric modes), traces one call for kernel attribution, and adds what
only Python can compute (a float64 run of the reference).
"""

import json
import os
import random
import statistics
import threading

import torch

from . import callbacks, compare, eval_options, judge, kernel_names, loader, modes, precision, problem as pb, processes, seal, trace
from .harness import (Stop, _describe_exception, _perf, context_lost, core_stop, mark_phase, problem_failure,
                      thread_count)


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
        """The trials' seeds, drawn from the evaluation's seed (a request with the same seed repeats
        its trials' inputs); every other call's seed is the core's, from the OS."""
        rng = random.Random(self.seed)
        return [rng.randrange(2 ** 32 - 1) for _ in range(max(1, int(self.options["correctness_trials"])))]

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
        timing = judge.time_reference(self.dev, self._problem_for_timing, self._m_ref, self.options,
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
        """The judge core's session, opened before the candidate loads (judge.open_for_problem)."""
        try:
            self._core, vary, io_bytes = judge.open_for_problem(self.dev, self.options, prob, device, self.dtype,
                                                                call_ref, self._m_ref)
        except Stop as st:
            st.reference_failed = True
            raise
        self.report["io_bytes"], self.report["inputs_vary"] = io_bytes, vary

    def _run(self, end):
        opts = self.options
        device = torch.device("cuda", 0)
        trial_seeds = self._seeds()

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

        symbols = self._load_candidate(prob, init, device, guard)
        self._check_no_new_processes("loading the candidate and building ModelNew")
        end("load")

        ref, new = self._m_ref, self._m_new

        def call_ref(xs):
            with torch.no_grad():
                return ref(*xs)

        def call_new(xs):
            with torch.no_grad():
                return new(*xs)

        # Correctness, by the judge core: each trial on inputs drawn with its seed, the candidate
        # first, then the reference on the same inputs (checked untouched), compared on the GPU.
        self._callbacks = callbacks.Callbacks(prob, device, self.dtype, call_new, call_ref, shapes, trial_seeds[0],
                                              self._py_threads, self._check_modes)
        try:
            stopped = core_stop(self._core.trials(trial_seeds, *self._callbacks.enter("correctness trial"),
                                                  look=self._look(init)))
        except judge.Unsupported as e:  # an output the core cannot read is the candidate's; an input, the problem's
            raise Stop("incorrect" if str(e).startswith("output") else "runtime_error",
                       f"the judge core cannot take this call's tensors: {e}")
        if stopped is not None:
            raise stopped
        _check_untouched(guard, prob)
        self._check_no_new_processes("the correctness trials")
        end("correctness")

        # Escaped work and kernel attribution, from one traced call on inputs drawn for it.
        traced = trace.judge_traced_call(call_new, prob, device, self.dtype, symbols, opts, self.report)
        self._check_modes("the traced call")

        # Timing, by the judge core: every warm-up and timed call on inputs drawn fresh for it,
        # checked against the reference run after it on the same inputs (judge/session.h).
        torch.cuda.empty_cache()
        median = self._time_candidate()
        self.report["traced_busy_s"] = traced["busy_s"]
        trace.check_traced_against_timed(traced["busy_s"], median)
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
                                              median, *self._callbacks.enter("call in the energy window")))
        self._callbacks = None
        if stopped is not None:
            raise stopped
        energy = self._core.result().get("energy", {})
        if energy.get("measured"):
            self.dev.idle_watts = energy["idle_watts"]
        self.report["energy"] = energy
        end("energy")

    def _load_candidate(self, prob, init, device, guard):
        """Loads the candidate in its own namespace and builds ModelNew (self._m_new), with the
        process's state taken first (threads, processes, the harness's seal); returns the kernel
        symbols of its own device code (kernel_names.py)."""
        loader._library_path = self.library
        loader._library_source = self.library_source
        if self.build_dir and not os.environ.get("TORCH_CUDA_ARCH_LIST"):
            p = self.dev.props
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{p.major}.{p.minor}"
        self._py_threads = threading.active_count()
        # The reference is timed in this process only while no thread runs that was not here
        # before the candidate loaded (issue 28, item 4).
        self._threads_before_load = thread_count()
        processes.become_subreaper()  # the worker is one already; an evaluation run in-process (tests) too
        self._procs_before_load = set(processes.live_descendants())
        # After the harness's own set-up of loader's globals; the data that decides verdicts is
        # held to its contents too.
        ref_model = self._m_ref
        self._seal = seal.Seal(values={"compare.TOLERANCE": compare.TOLERANCE, "judge.DTYPE_CODES": judge.DTYPE_CODES,
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
        return symbols

    def _look(self, init):
        """The adapter's look at a trial (judge.Core.trials): for a failed fp32 output, how far it
        and the reference are from a float64 run; for a passing trial, the float64 precision policy."""
        def look(kind, xs, outs, wants, j):
            if kind == judge.TRIAL_FAILED:
                if wants[j].dtype != torch.float32:
                    return ""
                return precision.fp64_diagnosis(self.problem_path, self._m_ref, init, j, outs[j], wants[j], xs)
            for i, (o, w) in enumerate(zip(outs, wants)):  # the core's codes share one for bool and bytes
                if o.dtype != w.dtype:
                    raise Stop("incorrect", f"output {i} has dtype {o.dtype} but the reference's is {w.dtype}")
            if self.options["precision_policy"] == "fp64" and any(w.dtype == torch.float32 for w in wants):
                precision.fp64_check(self.problem_path, init, outs, wants, xs, "in a trial")
            return ""

        return look

    def _time_candidate(self):
        """The candidate timed by the judge core with the callbacks of the trials; its median."""
        try:  # the traced call's profiler started threads of its own: counted again
            stopped = core_stop(self._core.time(judge.CANDIDATE, *self._callbacks.enter("timed call", recount=True)))
        except judge.Unsupported as e:
            raise Stop("runtime_error", f"the judge core cannot take this call's tensors: {e}")
        if stopped is not None:
            raise stopped
        timing = self._core.result()["candidate"]
        self.report["timing"] = timing
        return statistics.median(timing["samples_s"])

    def _check_modes(self, when, with_probe=True):
        """modes.check against the snapshot taken before the candidate loaded (none yet: nothing)."""
        if getattr(self, "_modes", None) is not None:
            notes = self.report.get("mode_notes", [])
            modes.check(self._modes, when, with_probe, notes)
            if notes:
                self.report["mode_notes"] = notes

    def _check_no_new_processes(self, during):
        processes.stop_new(getattr(self, "_procs_before_load", set()), during)


def _check_untouched(guard, prob):
    """Stops when the candidate patched PyTorch or the timer, or changed the problem's constants."""
    found = guard.check()
    if found:
        raise Stop("rejected", found[1], cheat=found[0])
    if prob.rebound_constants():
        raise Stop("rejected", f"the candidate changed the problem's constants {prob.rebound_constants()}",
                   cheat="constant_rebinding")


