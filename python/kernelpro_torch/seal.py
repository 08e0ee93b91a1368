"""The harness's own code, sealed against the candidate it judges (`harness_tamper`).

The KernelBench candidate is imported into the interpreter that times and judges it. The timer
references, the comparison functions, the sampling rule and the reply's JSON encoder are module
globals and class attributes that candidate code could rebind (`evaluate._elapsed = ...`,
`compare.check_output = ...`, `json.dumps = ...`) to change the measured time or the verdict.

A Seal records, before the candidate loads, the identity of every global of kernelpro_torch's
modules, of every attribute of their classes, of each function's code object and defaults, of
the standard-library functions the harness calls, and of the modules in sys.modules under
those names. `check()` names what changed; the evaluation runs it after the candidate loads,
after each phase and before the reply. It also holds the contents of the data it is given (the
options, the tolerance table) and the interpreter's hooks that run code inside the harness (gc
callbacks, trace and profile functions). What it does not see: changes inside other objects (a
list or dict the harness holds, reached through gc), and native code that writes the
interpreter's memory; a candidate doing either still faces the judge core (judge.py), whose samples, seeds and
decisions are not Python objects at all.
"""

import bisect
import gc
import json
import math
import statistics
import sys
import threading
import time
import types

HARNESS_MODULES = ("kernelpro_torch.evaluate", "kernelpro_torch.harness", "kernelpro_torch.device",
                   "kernelpro_torch.trace", "kernelpro_torch.callbacks", "kernelpro_torch.precision",
                   "kernelpro_torch.compare", "kernelpro_torch.processes", "kernelpro_torch.eval_options", "kernelpro_torch.native", "kernelpro_torch.problem",
                   "kernelpro_torch.loader", "kernelpro_torch.seal", "kernelpro_torch.worker",
                   "kernelpro_torch.judge", "kernelpro_torch.modes", "kernelpro_torch.kernel_names")

# (owner, attribute names) of the standard library the harness relies on.
STDLIB = ((bisect, ("insort", "bisect_left", "bisect_right")), (statistics, ("median", "mean", "stdev")),
          (math, ("sqrt", "isfinite", "ceil", "floor")), (json, ("dumps", "loads", "dump", "load")),
          (json.JSONEncoder, ("encode", "iterencode", "default")), (time, ("perf_counter", "time", "monotonic")))


def _fingerprint(obj):
    """What makes a function behave as it does: the object, its code, its defaults and closure."""
    f = getattr(obj, "__func__", obj)  # bound, class and static methods: the function inside
    if isinstance(f, types.FunctionType):
        return (id(obj), id(f.__code__), id(f.__defaults__), id(f.__kwdefaults__),
                tuple(id(c.cell_contents) if _cell_full(c) else None for c in (f.__closure__ or ())))
    return (id(obj),)


def _cell_full(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _namespace(owner):
    return owner if isinstance(owner, dict) else vars(owner)


def _hooks():
    """The interpreter's hooks that run code inside the harness's own frames: gc's callbacks and
    the trace and profile functions (this thread's and the ones new threads get)."""
    return {"gc.callbacks": [id(c) for c in gc.callbacks], "gc.isenabled()": gc.isenabled(),
            "sys.gettrace()": id(sys.gettrace()),
            "sys.getprofile()": id(sys.getprofile()),
            "threading trace": id(getattr(threading, "_trace_hook", None)),
            "threading profile": id(getattr(threading, "_profile_hook", None))}


def _probe(fn):
    try:
        return fn()
    except Exception as e:  # a probe that fails now did not before: something changed
        return ("failed", type(e).__name__)


class Seal:
    def __init__(self, values=None, probes=None):
        """`values`: {name: a harness data object (a dict of options, a tolerance table)} whose
        contents must not change while the candidate runs; kept as a copy of its repr.
        `probes`: {name: a function of no argument} whose result must not change (the reference
        model's hooks and parameters, PyTorch's global hooks)."""
        self.values = {name: (obj, repr(obj)) for name, obj in (values or {}).items()}
        self.probes = {name: (fn, fn()) for name, fn in (probes or {}).items()}
        self.hooks = _hooks()
        self.gc_callbacks = list(gc.callbacks)
        # (name, owner, attribute, the object kept alive, its fingerprint); owner is a module, a
        # class or sys.modules itself.
        self.entries = []
        self.bodies = []  # (function, its code, defaults, kwdefaults)
        # The worker runs as `python -m kernelpro_torch.worker`: its module is __main__.
        main = sys.modules.get("__main__")
        as_main = str(getattr(main, "__file__", "") or "").replace("\\", "/").endswith("kernelpro_torch/worker.py")
        for name in HARNESS_MODULES + (("__main__",) if as_main else ()):
            mod = sys.modules.get(name)
            if mod is None:
                continue
            self._add(f"sys.modules[{name!r}]", sys.modules, name)
            for k, v in list(vars(mod).items()):
                if k.startswith("__") or isinstance(v, (dict, list, set)):
                    continue  # mutable data (caches) is the harness's to change
                self._add(f"{name}.{k}", mod, k)
                if isinstance(v, type) and getattr(v, "__module__", "") == name:
                    for ak in list(vars(v)):
                        if not (ak.startswith("__") and ak not in ("__init__", "__call__")):
                            self._add(f"{name}.{k}.{ak}", v, ak)
        for owner, names in STDLIB:
            for n in names:
                if n in vars(owner):
                    self._add(f"{owner.__name__}.{n}", owner, n)

    def _add(self, name, owner, attr):
        obj = _namespace(owner)[attr]
        self.entries.append((name, owner, attr, obj, _fingerprint(obj)))
        f = getattr(obj, "__func__", obj)
        if isinstance(f, types.FunctionType):
            self.bodies.append((f, f.__code__, f.__defaults__, f.__kwdefaults__))

    def check(self):
        """(cheat, reason) when the candidate rebound or rewrote part of the harness, else None."""
        changed = [name for name, owner, attr, _, fp in self.entries
                   if _fingerprint(_namespace(owner).get(attr)) != fp]
        changed += [f"the contents of {name}" for name, (obj, text) in self.values.items() if repr(obj) != text]
        changed += [name for name, (fn, seen) in self.probes.items() if _probe(fn) != seen]
        now = _hooks()
        changed += [f"{name} (a hook that runs code inside the harness)" for name in self.hooks
                    if now[name] != self.hooks[name]]
        if not changed:
            return None
        return "harness_tamper", (f"the candidate changed kernelpro's own harness ({', '.join(changed[:4])}"
                                  f"{' and more' if len(changed) > 4 else ''}): the timing and the verdict are "
                                  "the harness's, not the candidate's to rewrite")

    def restore(self):
        """Puts back every rewritten function body and every rebound global and class attribute
        (the worker exits after such a candidate anyway; the reply and the cleanup must run on the
        harness's own code), and the interpreter's hooks as they were: no gc callback, trace or
        profile function of the candidate's runs after this."""
        gc.callbacks[:] = self.gc_callbacks
        (gc.enable if self.hooks["gc.isenabled()"] else gc.disable)()
        if self.hooks["sys.gettrace()"] == id(None):
            sys.settrace(None)
        if self.hooks["sys.getprofile()"] == id(None):
            sys.setprofile(None)
        if self.hooks["threading trace"] == id(None):
            threading.settrace(None)
        if self.hooks["threading profile"] == id(None):
            threading.setprofile(None)
        for f, code, defaults, kwdefaults in self.bodies:
            try:
                f.__code__, f.__defaults__, f.__kwdefaults__ = code, defaults, kwdefaults
            except (AttributeError, TypeError, ValueError):
                pass
        for _, owner, attr, obj, fp in self.entries:
            if _fingerprint(_namespace(owner).get(attr)) == fp:
                continue
            try:
                if isinstance(owner, dict):
                    owner[attr] = obj
                else:
                    setattr(owner, attr, obj)
            except (AttributeError, TypeError):
                pass
