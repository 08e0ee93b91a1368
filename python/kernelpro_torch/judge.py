"""The judge core (libkp_judge.so, include/kernelpro/kp_judge.h) seen from the KernelBench worker.

The core makes the timed calls and their checks; this module only adapts PyTorch to its C API:
`Core` opens a session before the candidate loads, and `Core.time(role, refresh, call, outputs)`
hands the core three callbacks: `refresh(set, seed)` draws fresh inputs for a set (returns its
arguments), `call(role, set)` makes one call (timed: nothing else) and `outputs(role)` checks what
the last call returned and gives its output tensors (after the call's end event). Everything that
decides the verdict of the timed calls (seeds, samples, input fingerprints, output comparisons,
the sampling rule, the escaped-work, persisting-L2 and physics-floor checks) is in the core's
memory; what comes back is its verdict block, written over the report by `Core.finish`.

The library is found at KP_JUDGE_LIBRARY (kernelpro sets it for its workers), else beside
kp-worker in the build tree (build/libkp_judge.so) or in the installed layout.
"""

import ctypes
import json
import os
import random

import torch

from .compare import tolerance_for
from .harness import (Stop, _bitwise_equal, _contiguous, _sync, compulsory_bytes, core_stop, nbytes, outputs_of,
                      problem_failure, run_guarded, tensors)

MAX_TENSORS = 16
MAX_RANK = 8
CANDIDATE, REFERENCE = 0, 1
CALL_OK, CALLBACK_FAILED = 0, 1
CORE_STOPPED = 2
LIBRARY_ENV = "KP_JUDGE_LIBRARY"
# Seeds the core hands to refresh are below this: KernelBench's set_seed seeds NumPy too, which
# takes 32 bits. The core never hands out one seed twice.
SEED_SPACE = 2 ** 32 - 1

# kp_abi.h dtype codes. One-byte integer outputs compare exactly, as bool does.
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.int32: 3, torch.int64: 4,
               torch.bool: 5, torch.uint8: 5, torch.int8: 5, torch.float64: 6}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK)]


class Tensors(ctypes.Structure):
    _fields_ = [("count", ctypes.c_int32), ("t", Tensor * MAX_TENSORS)]


class Config(ctypes.Structure):
    _fields_ = [("stream", ctypes.c_uint64), ("sets", ctypes.c_int32), ("inputs_vary", ctypes.c_int32),
                ("warmup_calls", ctypes.c_int32), ("min_trials", ctypes.c_int32), ("max_trials", ctypes.c_int32),
                ("median_ci", ctypes.c_double), ("timing_budget_s", ctypes.c_double),
                ("timing_cap_s", ctypes.c_double), ("wall_ratio", ctypes.c_double),
                ("wall_slack_us", ctypes.c_double), ("physics_margin", ctypes.c_double),
                ("dram_bytes_per_s", ctypes.c_double), ("l2_bytes", ctypes.c_uint64),
                ("tolerance", (ctypes.c_double * 3) * 7), ("reference_only", ctypes.c_int32),
                ("seed_space", ctypes.c_uint64)]


REFRESH_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint64, ctypes.POINTER(Tensors))
CALL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)
OUTPUTS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(Tensors))
TRIAL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                            ctypes.c_void_p, ctypes.c_size_t)
TRIAL_PASSED, TRIAL_FAILED = 0, 1


class TrialsConfig(ctypes.Structure):
    _fields_ = [("count", ctypes.c_int32), ("seeds", ctypes.POINTER(ctypes.c_uint64))]


class EnergyConfig(ctypes.Structure):
    _fields_ = [("window_s", ctypes.c_double), ("idle_window_s", ctypes.c_double), ("idle_watts", ctypes.c_double),
                ("call_s", ctypes.c_double)]


def library_path():
    """Where libkp_judge.so is, or None."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    for candidate in (os.path.join(root, "build", "libkp_judge.so"),  # the source tree's build
                      os.path.join(root, "build-gpu", "libkp_judge.so"),
                      os.path.join(os.path.dirname(os.path.dirname(root)), "lib", "kernelpro", "libkp_judge.so")):
        if os.path.exists(candidate):
            return candidate
    return None


_LIB = None
# The library's functions, module globals once loaded: the Seal (seal.py) holds every global of
# this module to its identity, so a candidate that rebinds one (or the CDLL's attribute they came
# from) changes nothing the harness calls, and is caught.
_kpj_open = _kpj_time = _kpj_trials = _kpj_energy = _kpj_note_stop = _kpj_compare = _kpj_result_json = None
_kpj_finish = _kpj_close = None


def _load():
    """The library with its signatures set, loaded once (before any candidate code runs: the
    worker opens its first session then)."""
    global _LIB, _kpj_open, _kpj_time, _kpj_trials, _kpj_energy, _kpj_note_stop, _kpj_compare, _kpj_result_json
    global _kpj_finish, _kpj_close
    if _LIB is None:
        path = library_path()
        if path is None:
            raise RuntimeError("libkp_judge.so was not found: build the kp_judge_shared target (it lands beside "
                               f"kp-worker) or name it in {LIBRARY_ENV}")
        lib = ctypes.CDLL(path)
        lib.kpj_open.restype = ctypes.c_void_p
        lib.kpj_open.argtypes = [ctypes.POINTER(Config), ctypes.c_char_p, ctypes.c_size_t]
        lib.kpj_time.restype = ctypes.c_int
        lib.kpj_time.argtypes = [ctypes.c_void_p, ctypes.c_int32, REFRESH_FN, CALL_FN, OUTPUTS_FN, ctypes.c_void_p]
        lib.kpj_energy.restype = ctypes.c_int
        lib.kpj_energy.argtypes = [ctypes.c_void_p, ctypes.POINTER(EnergyConfig), REFRESH_FN, CALL_FN, OUTPUTS_FN,
                                   ctypes.c_void_p]
        lib.kpj_note_stop.restype = None
        lib.kpj_note_stop.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.kpj_trials.restype = ctypes.c_int
        lib.kpj_trials.argtypes = [ctypes.c_void_p, ctypes.POINTER(TrialsConfig), REFRESH_FN, CALL_FN, OUTPUTS_FN,
                                   TRIAL_FN, ctypes.c_void_p]
        lib.kpj_compare.restype = ctypes.c_int
        lib.kpj_compare.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), ctypes.POINTER(ctypes.c_double),
                                    ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
        lib.kpj_result_json.restype = ctypes.c_char_p
        lib.kpj_result_json.argtypes = [ctypes.c_void_p]
        lib.kpj_finish.restype = ctypes.c_char_p
        lib.kpj_finish.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.kpj_close.restype = None
        lib.kpj_close.argtypes = [ctypes.c_void_p]
        _kpj_open, _kpj_time, _kpj_energy = lib.kpj_open, lib.kpj_time, lib.kpj_energy
        _kpj_result_json, _kpj_note_stop = lib.kpj_result_json, lib.kpj_note_stop
        _kpj_trials, _kpj_compare = lib.kpj_trials, lib.kpj_compare
        _kpj_finish, _kpj_close = lib.kpj_finish, lib.kpj_close
        _LIB = lib
    return _LIB


class Unsupported(Exception):
    """A tensor the core cannot take (its dtype, rank or count)."""


def describe(tensors, out, what):
    """Fills the Tensors struct `out` with `tensors` (each contiguous); Unsupported otherwise."""
    if len(tensors) > MAX_TENSORS:
        raise Unsupported(f"{what}: {len(tensors)} tensors, more than the judge core's {MAX_TENSORS}")
    out.count = len(tensors)
    for i, t in enumerate(tensors):
        if not t.is_cuda:
            raise Unsupported(f"{what} {i} is on {t.device}; the judge core reads device memory only")
        code = DTYPE_CODES.get(t.dtype)
        if code is None:
            raise Unsupported(f"{what} {i} has dtype {t.dtype}, which the judge core does not compare")
        if t.dim() > MAX_RANK:
            raise Unsupported(f"{what} {i} has rank {t.dim()}, more than the judge core's {MAX_RANK}")
        d = out.t[i]
        d.data = t.data_ptr()
        d.dtype = code
        d.rank = t.dim()
        for j, n in enumerate(t.shape):
            d.shape[j] = n


def storage_view(t):
    """The bytes of t's whole storage as a flat uint8 tensor: what a fingerprint of an input must
    cover, whatever t's strides (a view's unseen elements are inputs too)."""
    s = t.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(s, 0, (s.nbytes(),), (1,))


def _finite(x):
    """x with every NaN or infinity made None (strict JSON for the core's parser)."""
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


class Core:
    """One session of the judge core. `options` holds EvalOptions fields (eval_options's
    options_with_defaults), `dev` is device.Device, `tolerance` maps a torch dtype to
    (atol, rtol, rel_norm)."""

    def __init__(self, dev, options, sets, inputs_vary, tolerance, reference_only=False):
        _load()
        c = Config()
        c.stream = torch.cuda.current_stream().cuda_stream
        c.sets = int(sets)
        c.inputs_vary = 1 if inputs_vary else 0
        c.warmup_calls = int(options["warmup_calls"])
        c.min_trials = int(options["min_trials"])
        c.max_trials = int(options["max_trials"])
        c.median_ci = float(options["median_ci"])
        c.timing_budget_s = float(options["timing_budget_s"])
        c.timing_cap_s = float(options["timing_cap_s"])
        c.wall_ratio = float(options["wall_ratio"])
        # The Python call itself costs host time that events on an idle stream do not see.
        c.wall_slack_us = float(options["wall_slack_us"]) + 50.0
        c.physics_margin = float(options["physics_margin"])
        c.dram_bytes_per_s = float(dev.dram_bytes_per_s)
        c.l2_bytes = int(dev.l2_bytes)
        for dtype, code in DTYPE_CODES.items():
            if dtype.is_floating_point:
                for j, v in enumerate(tolerance(dtype)):
                    c.tolerance[code][j] = float(v)
        c.reference_only = 1 if reference_only else 0
        c.seed_space = SEED_SPACE
        err = ctypes.create_string_buffer(1024)
        self.handle = _kpj_open(ctypes.byref(c), err, len(err))
        if not self.handle:
            raise RuntimeError(err.value.decode(errors="replace"))

    def time(self, role, refresh, call, outputs):
        """Times `role` through the core. refresh(set, seed) -> the call's arguments; call(role,
        set) makes the call; outputs(role) -> the last call's output tensors (contiguous). Each
        may raise: the exception is kept and re-raised here once the core has returned (nothing
        crosses the C boundary). Returns the core's result dict when it stopped the evaluation
        itself ("stop" set), else None."""
        return self._drive(lambda r, c, o, _t: _kpj_time(self.handle, role, r, c, o, None), refresh, call, outputs)

    def trials(self, seeds, refresh, call, outputs, look=None):
        """The correctness trials through the core (kpj_trials): one per seed, set 0 drawn with it.
        look(kind, inputs, candidate_outputs, reference_outputs, output) is the adapter's own look:
        at a passing trial (kind TRIAL_PASSED; raise to stop) or at output `output` of a failed one
        (TRIAL_FAILED; return a clause that explains it, or ""). Returns as time()."""
        arr = (ctypes.c_uint64 * len(seeds))(*[int(x) for x in seeds])
        config = TrialsConfig(len(seeds), arr)
        return self._drive(lambda r, c, o, t: _kpj_trials(self.handle, ctypes.byref(config), r, c, o, t, None),
                           refresh, call, outputs, look)

    def energy(self, window_s, idle_window_s, idle_watts, call_s, refresh, call, outputs):
        """The candidate's energy window through the core (kpj_energy), with the callbacks of
        time(). idle_watts None: the core measures it. Returns as time()."""
        config = EnergyConfig(float(window_s), float(idle_window_s), -1.0 if idle_watts is None else float(idle_watts),
                              float(call_s))
        return self._drive(lambda r, c, o, _t: _kpj_energy(self.handle, ctypes.byref(config), r, c, o, None),
                           refresh, call, outputs)

    def _drive(self, enter, refresh, call, outputs, look=None):
        failure = []
        keep = {}

        def on_refresh(_ctx, k, seed, out):
            try:
                keep.pop(("in", int(k)), None)  # the set's previous inputs go before the new ones come
                xs = refresh(int(k), int(seed))
                views = [storage_view(x) for x in xs if isinstance(x, torch.Tensor)]
                keep[("in", int(k))] = (xs, views)
                describe(views, out.contents, "input")
                return CALL_OK
            except BaseException as e:  # noqa: B902 - nothing may cross into C
                failure.append(e)
                return CALLBACK_FAILED

        def on_call(_ctx, r, k):
            try:
                call(int(r), int(k))
                return CALL_OK
            except BaseException as e:  # noqa: B902
                failure.append(e)
                return CALLBACK_FAILED

        def on_outputs(_ctx, r, out):
            try:
                got = outputs(int(r))
                keep[("out", int(r))] = got
                describe(got, out.contents, "output")
                return CALL_OK
            except BaseException as e:  # noqa: B902
                failure.append(e)
                return CALLBACK_FAILED

        def on_look(_ctx, kind, k, j, note, note_len):
            try:
                said = look(int(kind), keep[("in", int(k))][0], keep.get(("out", CANDIDATE)),
                            keep.get(("out", REFERENCE)), int(j))
                if kind == TRIAL_FAILED and said and note:
                    data = str(said).encode(errors="replace")[:int(note_len) - 1] + b"\0"
                    ctypes.memmove(note, data, len(data))
                return CALL_OK
            except BaseException as e:  # noqa: B902
                if kind == TRIAL_FAILED:
                    return CALL_OK  # a note that could not be made is only a shorter reason
                failure.append(e)
                return CALLBACK_FAILED

        refresh_fn, call_fn, outputs_fn = REFRESH_FN(on_refresh), CALL_FN(on_call), OUTPUTS_FN(on_outputs)
        look_fn = TRIAL_FN(on_look) if look is not None else TRIAL_FN()
        rc = enter(refresh_fn, call_fn, outputs_fn, look_fn)
        keep.clear()
        if rc == CALLBACK_FAILED and failure:
            raise failure[0]
        if rc == CALL_OK:
            return None
        return self.result()

    def note_stop(self, outcome, reason, cheat):
        """The adapter's own stop, recorded by the core at once (kpj_note_stop): the first stop is
        the verdict, and no timing is accepted after it."""
        _kpj_note_stop(self.handle, str(outcome).encode(), str(reason).encode(errors="replace"),
                       str(cheat or "").encode())

    def result(self):
        return json.loads(_kpj_result_json(self.handle).decode())

    def finish(self, report):
        """The report with the core's verdict written over it (kpj_finish), as JSON text (an
        immutable str: the reply is written from it as it is); the session is sealed."""
        raw = _kpj_finish(self.handle, json.dumps(_finite(report), default=str, allow_nan=False).encode())
        if raw is None:
            return json.dumps(dict(report, outcome="rejected", cheat="harness_tamper",
                                   reason="the harness was tampered with: the judge core's verdict was asked for "
                                          "before the harness asked for it"))
        return raw.decode()

    def close(self):
        if self.handle:
            _kpj_close(self.handle)
            self.handle = None


def compare(out, want, tolerance):
    """One output against the reference's on the GPU, by the core's rule (kpj_compare): the check as
    a dict (verdict/compare.h's OutputCheck fields). tolerance: (atol, rtol, rel_norm)."""
    _load()
    a, b = Tensors(), Tensors()
    o, w = out.contiguous(), want.contiguous()  # alive until the core has read them
    describe([o], a, "output")
    describe([w], b, "reference output")
    tol = (ctypes.c_double * 3)(*[float(v) for v in tolerance])
    buf = ctypes.create_string_buffer(8192)
    rc = _kpj_compare(ctypes.byref(a.t[0]), ctypes.byref(b.t[0]), tol, torch.cuda.current_stream().cuda_stream, buf,
                      len(buf))
    del o, w
    if rc < 0:
        raise RuntimeError(buf.value.decode(errors="replace"))
    return json.loads(buf.value.decode(errors="replace"))


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
        core = Core(dev, options, 1, False, tolerance_for, reference_only=True)
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
            stopped = core_stop(core.time(REFERENCE, refresh, call, outputs))
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


def open_for_problem(dev, options, prob, device, dtype, call_ref, model):
    """A session for one evaluation of `prob`, opened before the candidate loads: (core, whether two
    seeds give different inputs, the compulsory bytes of a call). Input sets: as many as fit, each
    its inputs and the candidate's and the reference's outputs, in a quarter of free memory. When
    two seeds give the same inputs, repeated inputs are no sign of a changed harness."""
    rng = random.SystemRandom()
    try:
        a = prob.inputs(rng.randrange(2 ** 32 - 1), device, dtype)
        b = prob.inputs(rng.randrange(2 ** 32 - 1), device, dtype)
    except Exception as e:
        raise problem_failure(e, "the problem's get_inputs()")
    vary = any(not _bitwise_equal(x, y) for x, y in zip(tensors(a), tensors(b)))
    want = outputs_of(run_guarded(lambda: call_ref(a), "the problem's reference"), "the reference")
    run_guarded(_sync, "the problem's reference")
    io_bytes = compulsory_bytes(a, want, model)
    per_set = nbytes(a) + 2 * nbytes(want)
    del a, b, want
    free, _ = torch.cuda.mem_get_info()
    n = max(1, int(options["input_sets"]))
    while n > 1 and per_set * n > free // 4:
        n -= 1
    return Core(dev, options, n, vary, tolerance_for), vary, io_bytes
