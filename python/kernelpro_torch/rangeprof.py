"""ctypes wrapper of libkp_rangeprof.so (src/profile/cupti/kp_rangeprof_api.h): hardware counters
of every kernel launched between begin() and end(), collected in this process by the CUPTI Range
Profiler (auto range; kernel replay, or user replay with collect()). Used by the KernelBench
worker for `kernelpro profile`.

    prof = RangeProfiler("/path/libkp_rangeprof.so", ["gpu__time_duration.sum", "dram__bytes_read.sum"])
    prof.begin()
    model(*inputs)                 # every kernel launch is one range; launches are serialised
    result = prof.end()            # {"passes": N, "ranges": [{"name", "values": {...}}, ...], ...}
    prof.close()

A CUDA context must be current on the calling thread before RangeProfiler() (with torch: any CUDA
operation, e.g. torch.zeros(1, device="cuda")). Importing this module needs neither torch nor the
library: the library is loaded, and errors raised, only when a RangeProfiler is made.
Only one CUPTI client per process: not together with torch.profiler, ncu or libkp_trace.
"""

import ctypes
import json
import os

# The return codes of kp_rangeprof_api.h.
OK = 0
ERR_DROPPED = 6
ERR_REPLAY = 8

_PASS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int)

_ERR_LEN = 8192
_libraries = {}


class RangeProfilerError(RuntimeError):
    """A failure of libkp_rangeprof. `kind` is the message's tag: privileges, unsupported,
    unknown-metric, no-context, invalid-argument, dropped, cupti (or "load" when the library
    itself could not be loaded). `result` is the partial result dict for "dropped", else None."""

    def __init__(self, message, result=None):
        super().__init__(message)
        head = message.split(": ", 1)[0]
        known = ("privileges", "unsupported", "unknown-metric", "no-context", "invalid-argument", "dropped", "cupti",
                 "replay", "pass")
        self.kind = head if head in known else "load"
        self.result = result


def _load(lib_path):
    lib = _libraries.get(lib_path)
    if lib is not None:
        return lib
    try:
        lib = ctypes.CDLL(lib_path, mode=ctypes.RTLD_LOCAL)
    except OSError as e:
        if os.path.exists(lib_path):
            hint = "it needs the NVIDIA driver's libcuda.so.1 and CUDA 13's libcupti.so.13"
        else:
            hint = "build it: cmake --build BUILD --target kp_rangeprof"
        raise RangeProfilerError(f"cannot load {lib_path}: {e} ({hint})")
    lib.kp_rp_create.restype = ctypes.c_void_p
    lib.kp_rp_create.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                                 ctypes.c_size_t]
    lib.kp_rp_num_passes.restype = ctypes.c_int
    lib.kp_rp_num_passes.argtypes = [ctypes.c_void_p]
    for name in ("kp_rp_begin", "kp_rp_end"):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    if hasattr(lib, "kp_rp_collect"):
        lib.kp_rp_collect.restype = ctypes.c_int
        lib.kp_rp_collect.argtypes = [ctypes.c_void_p, _PASS_FN, _PASS_FN, ctypes.c_void_p, ctypes.c_char_p,
                                      ctypes.c_size_t]
    lib.kp_rp_result_json.restype = ctypes.c_char_p
    lib.kp_rp_result_json.argtypes = [ctypes.c_void_p]
    lib.kp_rp_destroy.restype = None
    lib.kp_rp_destroy.argtypes = [ctypes.c_void_p]
    _libraries[lib_path] = lib
    return lib


class RangeProfiler:
    """One libkp_rangeprof session. metrics: Perfworks metric names (as ncu --metrics takes them).
    max_kernels: the most kernel launches one begin()/end() may profile. Raises RangeProfilerError
    (kind "unknown-metric" names every rejected metric; "privileges" says how to allow counters)."""

    def __init__(self, lib_path, metrics, max_kernels=64):
        self._lib = _load(str(lib_path))
        self.metrics = list(metrics)
        names = (ctypes.c_char_p * len(self.metrics))(*[m.encode() for m in self.metrics])
        err = ctypes.create_string_buffer(_ERR_LEN)
        self._session = self._lib.kp_rp_create(names, len(self.metrics), int(max_kernels), err, _ERR_LEN)
        if not self._session:
            raise RangeProfilerError(err.value.decode(errors="replace"))

    @property
    def passes(self):
        """Replay passes per kernel for these metrics."""
        self._check_open()
        return self._lib.kp_rp_num_passes(self._session)

    def begin(self):
        """Starts collecting: each kernel launched from now on is one range."""
        self._check_open()
        err = ctypes.create_string_buffer(_ERR_LEN)
        if self._lib.kp_rp_begin(self._session, err, _ERR_LEN) != OK:
            raise RangeProfilerError(err.value.decode(errors="replace"))

    def end(self):
        """Stops collecting (synchronises the device) and returns the result as a dict, in the
        format of kp_rp_result_json. Raises RangeProfilerError; for more launches than max_kernels
        its kind is "dropped" and its `result` holds the ranges that fit."""
        self._check_open()
        err = ctypes.create_string_buffer(_ERR_LEN)
        rc = self._lib.kp_rp_end(self._session, err, _ERR_LEN)
        text = self._lib.kp_rp_result_json(self._session).decode(errors="replace")
        if rc == ERR_DROPPED:
            raise RangeProfilerError(err.value.decode(errors="replace"), result=json.loads(text))
        if rc != OK:
            raise RangeProfilerError(err.value.decode(errors="replace"))
        return json.loads(text)

    def collect(self, prepare, run):
        """User replay (kp_rp_collect): for each counter pass calls prepare(pass) (outside the
        collection: restore what run overwrites, flush caches, synchronise; may be None), then
        run(pass) (launch the work and synchronise). Every pass must launch the same kernels.
        Returns the result as end() does. An exception raised by prepare or run is re-raised
        as it was; a pass that launched other kernels raises RangeProfilerError of kind "replay"
        (use begin()/end() then)."""
        self._check_open()
        if not hasattr(self._lib, "kp_rp_collect"):
            raise RangeProfilerError("cupti: this libkp_rangeprof.so has no kp_rp_collect; rebuild it")
        raised = []

        def wrap(fn):
            def call(_user, index):
                if raised:
                    return 1
                try:
                    if fn is not None:
                        fn(index)
                    return 0
                except BaseException as e:  # noqa: BLE001 - re-raised below, outside the C frame
                    raised.append(e)
                    return 1
            return _PASS_FN(call)

        prep, work = wrap(prepare), wrap(run)
        err = ctypes.create_string_buffer(_ERR_LEN)
        rc = self._lib.kp_rp_collect(self._session, prep, work, None, err, _ERR_LEN)
        if raised:
            raise raised[0]
        text = self._lib.kp_rp_result_json(self._session).decode(errors="replace")
        if rc == ERR_DROPPED:
            raise RangeProfilerError(err.value.decode(errors="replace"), result=json.loads(text))
        if rc != OK:
            raise RangeProfilerError(err.value.decode(errors="replace"))
        return json.loads(text)

    def result_json(self):
        """The last end()'s result as the library's JSON text ("{}" before the first end())."""
        self._check_open()
        return self._lib.kp_rp_result_json(self._session).decode(errors="replace")

    def close(self):
        """Releases the session (stopping a collection still running). Idempotent."""
        if getattr(self, "_session", None):
            self._lib.kp_rp_destroy(self._session)
            self._session = None

    def _check_open(self):
        if not self._session:
            raise RangeProfilerError("invalid-argument: the RangeProfiler is closed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
