"""The KernelBench path's anti-cheat suite, on a real GPU: every cheat is caught with its name,
every honest candidate passes. Libraries of the fast form are built here with nvcc (the
orchestrator uses kernelpro's build cache; this test only needs the .so)."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import torch

from kernelpro_torch import device as kp_device, evaluate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KB = os.path.join(ROOT, "tests", "data", "kernelbench")
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kernelpro", "test-libs")

OPTIONS = {"correctness_trials": 3, "warmup_calls": 3, "timing_budget_s": 0.15, "min_trials": 10, "max_trials": 200,
           "input_sets": 2, "energy_window_s": 0, "physics_margin": 1.3}

# (problem, candidate, library source or None, extra options)
HONEST = [
    ("relu.py", "honest/relu_fast.py", "honest/relu_fast.cu", {}),
    ("softmax_wide.py", "honest/softmax_fast.py", "honest/softmax_fast.cu", {}),
    ("gemm.py", "honest/gemm_fast.py", "honest/gemm_fast.cu", {}),
    ("linear_relu.py", "honest/linear_relu_fast.py", "honest/linear_relu_fast.cu", {}),
    ("cross_entropy.py", "honest/cross_entropy_fast.py", "honest/cross_entropy_fast.cu", {}),
    ("masked_sum.py", "honest/masked_sum_fast.py", "honest/masked_sum_fast.cu", {}),
    ("relu.py", "honest/relu_fast.py", "honest/relu_fast.cu", {"precision_policy": "fp64"}),
    ("gemm.py", "honest/gemm_fast.py", "honest/gemm_fast.cu", {"precision_policy": "fp64"}),
    ("softmax_wide.py", "honest/softmax_fast.py", "honest/softmax_fast.cu", {"energy_window_s": 0.5}),
    # A problem's reference profiled as the seed of `kernelpro generate`: PyTorch kernels only,
    # accepted only with library_only_ok (without it, cheats/torch_only.py below is rejected).
    ("relu.py", "cheats/torch_only.py", "honest/relu_fast.cu", {"library_only_ok": True}),
]

# (problem, candidate, library, options, allowed outcomes, cheat, a word the reason must contain).
# "ok" among the outcomes: accepted is allowed when the cheat gains nothing (its median at least
# 0.9 x the honest twin's of TWINS).
TWINS = {"relu.py": ("honest/relu_fast.py", "honest/relu_fast.cu"),
         "softmax_wide.py": ("honest/softmax_fast.py", "honest/softmax_fast.cu"),
         "gemm.py": ("honest/gemm_fast.py", "honest/gemm_fast.cu")}
CHEATS = [
    ("relu.py", "cheats/side_stream_py.py", "honest/relu_fast.cu", {}, ("rejected",), "side_stream", "stream"),
    ("relu.py", "cheats/stream_switch.py", "honest/relu_fast.cu", {}, ("rejected",), "side_stream", "left another CUDA stream"),
    ("relu.py", "cheats/side_stream_cu.py", "cheats/side_stream_cu.cu", {}, ("rejected",), "side_stream", "stream"),
    ("relu.py", "cheats/background_thread.py", "honest/relu_fast.cu", {}, ("rejected",), "background_thread", "thread"),
    ("relu.py", "cheats/background_process.py", "honest/relu_fast.cu", {}, ("rejected",), "background_process",
     "process(es) running"),
    # A cache by input pointer from its first call hands a trial an earlier trial's output (the core
    # refreshes set 0 in place, so the pointer comes again): an earlier trial's result.
    ("relu.py", "cheats/pointer_cache.py", "honest/relu_fast.cu", {}, ("incorrect",), "result_cache",
     "earlier trial's output"),
    # Honest through the trials, then a copy of a kept output on the core's fresh inputs: grossly
    # wrong, and the core cannot tell a result kept from an earlier call from work deferred to a later one.
    ("relu.py", "cheats/pointer_cache_late.py", "honest/relu_fast.cu", {}, ("rejected", "incorrect"), "batched_calls",
     "cached from other calls"),
    # Every timed call gets inputs drawn fresh for it (the judge core): a cache keyed on sampled
    # values, or an output probe, never hits, and the work it then does is timed. Accepted, it
    # gains nothing: its median is held to the honest twin's (TWINS).
    ("softmax_wide.py", "cheats/fingerprint_cache.py", "honest/softmax_fast.cu", {}, ("rejected", "ok"), "result_cache",
     "cache"),
    ("relu.py", "cheats/batched_calls.py", "honest/relu_fast.cu", {}, ("rejected",), "batched_calls", "timed call"),
    ("relu.py", "cheats/output_probe.py", "honest/relu_fast.cu", {}, ("rejected", "ok"), "result_cache", "output probe"),
    ("relu.py", "cheats/input_mutation.py", "honest/relu_fast.cu", {}, ("incorrect",), "input_mutation", "input"),
    ("softmax_wide.py", "cheats/zeros.py", "cheats/zeros_lib.cu", {}, ("incorrect",), "constant_output", "constant"),
    ("softmax_wide.py", "cheats/constant.py", "cheats/zeros_lib.cu", {}, ("incorrect",), "constant_output", "constant"),
    ("gemm.py", "cheats/precision_half.py", "honest/relu_fast.cu", {}, ("incorrect",), "precision_downgrade", "precision"),
    ("gemm.py", "cheats/precision_inputs.py", "honest/relu_fast.cu", {"precision_policy": "fp64"}, ("incorrect",),
     "precision_downgrade", "float64"),
    ("relu.py", "cheats/torch_only.py", "honest/relu_fast.cu", {}, ("rejected",), "no_custom_kernel", "PyTorch"),
    ("linear_relu.py", "honest/linear_relu_fast.py", "honest/linear_relu_fast.cu", {"strict_kernels": True},
     ("rejected",), "forbidden_library", "strict"),
    ("relu.py", "cheats/persisting_l2.py", "cheats/persisting_l2.cu", {}, ("rejected",), "persisting_l2", "L2"),
    ("relu.py", "cheats/timer_patch.py", "honest/relu_fast.cu", {}, ("rejected",), "timer_patch", "elapsed_time"),
    ("relu.py", "cheats/harness_tamper.py", "honest/relu_fast.cu", {}, ("rejected",), "harness_tamper", "_elapsed"),
    ("relu.py", "cheats/lazy_output.py", "honest/relu_fast.cu", {}, ("rejected",), "lazy_output", "subclass"),
    ("relu.py", "cheats/aliased_output.py", "honest/relu_fast.cu", {}, ("rejected",), "aliased_output", "alias"),
    ("relu.py", "cheats/rebind_gc.py", "honest/relu_fast.cu", {}, ("rejected",), "constant_rebinding", "batch_size"),
    ("relu.py", "cheats/torch_patch.py", "cheats/zeros_lib.cu", {}, ("rejected",), "torch_patch", "torch.relu"),
    # The candidate runs before the reference, so there is no reference output to steal: the cheat
    # falls back to its zeros and is caught as a constant output.
    ("softmax_wide.py", "cheats/gc_reference.py", "cheats/zeros_lib.cu", {}, ("incorrect",), "constant_output",
     "constant"),
    # The floor itself: an honest kernel judged against a bandwidth 1000x too low must be rejected.
    ("relu.py", "honest/relu_fast.py", "honest/relu_fast.cu", {"physics_margin": 1e-3}, ("rejected",),
     "physics_floor", "physics floor"),
]


def build(source):
    src = os.path.join(KB, source)
    with open(src, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    os.makedirs(CACHE, exist_ok=True)
    out = os.path.join(CACHE, f"{os.path.basename(source)}.{digest}.so")
    if not os.path.exists(out):
        cc = "".join(map(str, torch.cuda.get_device_capability()))
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        subprocess.run([nvcc, "-O3", f"-arch=sm_{cc}", "-shared", "-Xcompiler", "-fPIC", "-o", out + ".tmp", src],
                       check=True)
        os.replace(out + ".tmp", out)
    return out, src


DEV = None


def device():
    global DEV
    if DEV is None:
        DEV = kp_device.Device()
    return DEV


ONLY = [w for w in os.environ.get("KP_ONLY", "").split(",") if w]


def selected(candidate):
    return not ONLY or any(w in candidate for w in ONLY)


def run(problem, candidate, library, extra):
    req = {"task": {"kind": "kernelbench"}, "reference": os.path.join(KB, "problems", problem),
           "candidate": os.path.join(KB, candidate), "options": dict(OPTIONS, **extra),
           "build_dir": os.path.join(CACHE, "torch_extensions")}
    if library:
        req["library"], req["library_source"] = build(library)
    t0 = time.time()
    report, exiting = evaluate.Evaluation(device(), req).run()
    report["_wall_s"] = time.time() - t0
    return report, exiting


def log(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class HonestTest(unittest.TestCase):
    def test_every_honest_candidate_passes(self):
        failures = []
        for problem, cand, lib, extra in HONEST:
            if not selected(cand):
                continue
            r, exiting = run(problem, cand, lib, extra)
            t = r.get("timing", {}).get("samples_s", [])
            med = sorted(t)[len(t) // 2] * 1e6 if t else 0
            log(f"HONEST {cand} on {problem} {extra}: {r['outcome']} {r['cheat']} median {med:.1f} us, reference "
                f"{r['reference_seconds'] * 1e6:.1f} us, floor {r['physics_floor_s'] * 1e6:.1f} us, kernels "
                f"{r['kernels'][:3]}, wall {r['_wall_s']:.1f} s {r['reason'][:300]}")
            if r["outcome"] != "ok" or r["cheat"]:
                failures.append(f"{cand}: {r['outcome']} {r['cheat']}: {r['reason'][:500]}")
            self.assertFalse(exiting)
        self.assertEqual(failures, [])

    @unittest.skipIf(ONLY, "KP_ONLY selects other candidates")
    def test_load_inline_form_passes(self):
        r, _ = run("relu.py", "honest/relu_inline.py", None, {})
        log(f"HONEST load_inline relu: {r['outcome']} load {r['phase_seconds'].get('load', 0):.1f} s, wall "
            f"{r['_wall_s']:.1f} s, kernels {r['kernels'][:3]} {r['reason'][:500]}")
        self.assertEqual(r["outcome"], "ok", r["reason"])
        self.assertIn("relu_kernel(float const*, float*, long)", r["kernels"])


class DiagnosisTest(unittest.TestCase):
    @unittest.skipIf(ONLY, "KP_ONLY selects other candidates")
    def test_a_reordered_sum_is_told_its_error_against_float64(self):
        # KernelBench level 2, problem 14, as recorded in tests/data/llm/h200.
        problem = os.path.join("..", "..", "llm", "h200", "problems", "14_Gemm_Divide_Sum_Scaling.py")
        r, _ = run(problem, "honest/gemm_rowsum_reordered.py", None, {"library_only_ok": True})
        log(f"DIAGNOSIS reordered gemm_rowsum: {r['outcome']} {r['reason'][:600]}")
        self.assertEqual(r["outcome"], "incorrect", r["reason"])
        self.assertEqual(r["cheat"], "")
        self.assertIn("against a float64 run of the reference, the candidate's max abs error is", r["reason"])


class CheatTest(unittest.TestCase):
    def test_every_cheat_is_caught_and_named(self):
        missed = []
        for problem, cand, lib, extra, outcomes, cheat, word in CHEATS:
            if not selected(cand):
                continue
            r, exiting = run(problem, cand, lib, extra)
            t = r.get("timing", {}).get("samples_s", [])
            med = sorted(t)[len(t) // 2] * 1e6 if t else 0
            log(f"CHEAT {cand} on {problem} {extra}: {r['outcome']} [{r['cheat']}] median {med:.1f} us "
                f"{r['reason'][:300]}")
            ok = r["outcome"] in outcomes and r["cheat"] == cheat and word.lower() in r["reason"].lower()
            if r["outcome"] == "ok" and "ok" in outcomes:
                twin, _ = run(problem, *TWINS[problem], extra)
                tt = twin.get("timing", {}).get("samples_s", [])
                twin_med = sorted(tt)[len(tt) // 2] * 1e6 if tt else 0
                log(f"  accepted: {med:.1f} us against the honest twin's {twin_med:.1f} us")
                ok = twin_med > 0 and med >= 0.9 * twin_med
            if not ok:
                missed.append(f"{cand}: got {r['outcome']} [{r['cheat']}] {r['reason'][:400]}; wanted {outcomes} [{cheat}]")
            if exiting and r["outcome"] == "crash":
                missed.append(f"{cand}: the worker's context was lost")
                break
        self.assertEqual(missed, [])


if __name__ == "__main__":
    unittest.main()
