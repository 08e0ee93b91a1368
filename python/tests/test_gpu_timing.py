"""The KernelBench worker's timing on a real GPU: the output fingerprint on the device, the
sampling rule's report, a timed loop whose per-call check stays cheap on outputs of gigabytes,
time_reference false and reference-only requests."""

import os
import statistics
import sys
import tempfile
import time
import unittest
from unittest import mock

import torch

from kernelpro_torch import compare, evaluate, output_hash, timing_rule

import test_gpu_anticheat as ac

STOPS = ("precise", "budget", "max_trials")


def log(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class DeviceHashTest(unittest.TestCase):
    def test_cuda_fingerprints_equal_the_cpu_ones_under_the_same_key(self):
        h = output_hash.MultilinearHash("cuda", piece_words=1 << 16, seed=5)
        c = output_hash.MultilinearHash("cpu", piece_words=1 << 16, seed=5)
        c.key = h.key.cpu()  # the CUDA and CPU generators draw other keys from one seed
        base = torch.randn(1000, 333, device="cuda")
        for x in (base, base.half(), base.double(), base > 0, (base * 50).to(torch.uint8), base.t(), base[:, 1::3]):
            with self.subTest(dtype=x.dtype, contiguous=x.is_contiguous()):
                self.assertTrue(torch.equal(h.fingerprint(x).cpu(), c.fingerprint(x.cpu())))

    def test_a_gigabyte_costs_little_memory_and_time_and_a_flipped_bit_shows(self):
        x = torch.randn(1 << 28, device="cuda")  # 1 GiB of fp32
        h = output_hash.MultilinearHash("cuda")
        h.fingerprint(x)  # warm
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        f = h.fingerprint(x)
        torch.cuda.synchronize()
        t_hash = time.perf_counter() - t0
        extra = torch.cuda.max_memory_allocated() - before
        y = x.clone()
        y.view(torch.int32)[123456789] ^= 1 << 7
        self.assertFalse(h.same(f, h.fingerprint(y)))
        self.assertTrue(h.same(f, h.fingerprint(x.clone())))
        y.view(torch.int32)[123456789] ^= 1 << 7
        y[5] += 1.0  # not equal, so the comparison takes its float64 pass
        compare.check_output(y, x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        compare.check_output(y, x)
        t_compare = time.perf_counter() - t0
        log(f"HASH 1 GiB fp32: fingerprint {t_hash * 1e3:.2f} ms, {extra / 2**20:.1f} MiB extra; full comparison "
            f"{t_compare * 1e3:.1f} ms")
        self.assertLess(extra, 256 << 20)
        self.assertLess(t_hash * 3, t_compare)


def big_relu_problem(tmp, dim):
    path = os.path.join(tmp, "relu_big.py")
    with open(path, "w") as f:
        f.write("import torch\nimport torch.nn as nn\n\n"
                "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n\n"
                f"batch_size = 4096\ndim = {dim}\n\n"
                "def get_inputs():\n    return [torch.rand(batch_size, dim)]\n\n"
                "def get_init_inputs():\n    return []\n")
    return path


class TimedLoopTest(unittest.TestCase):
    def check_timing(self, t, options):
        options = timing_rule.options_with_defaults(options)
        self.assertIn(t["stop"], STOPS)
        self.assertGreaterEqual(len(t["samples_s"]), options["min_trials"])
        self.assertLessEqual(len(t["samples_s"]), options["max_trials"])
        self.assertGreater(t["loop_wall_s"], 0)
        if t["stop"] == "precise":
            self.assertLessEqual(t["median_ci_rel"], options["median_ci"])

    def test_time_reference_false_leaves_the_reference_to_the_judge(self):
        r, _ = ac.run("relu.py", "honest/relu_fast.py", "honest/relu_fast.cu", {"time_reference": False})
        self.assertEqual(r["outcome"], "ok", r["reason"])
        self.assertEqual(r["reference_seconds"], 0.0)
        self.assertNotIn("reference_timing", r)
        self.assertNotIn("reference_timing", r["phase_seconds"])
        self.check_timing(r["timing"], ac.OPTIONS)
        r, _ = ac.run("relu.py", "honest/relu_fast.py", "honest/relu_fast.cu", {})
        self.assertEqual(r["outcome"], "ok", r["reason"])
        self.check_timing(r["reference_timing"], ac.OPTIONS)
        self.assertEqual(r["reference_seconds"], statistics.median(r["reference_timing"]["samples_s"]))

    def test_fingerprinted_outputs_keep_every_verdict(self):
        # Every output through the fingerprint instead of a kept copy.
        cases = [("relu.py", "honest/relu_fast.py", "honest/relu_fast.cu", "ok", ""),
                 ("softmax_wide.py", "honest/softmax_fast.py", "honest/softmax_fast.cu", "ok", ""),
                 ("relu.py", "cheats/batched_calls.py", "honest/relu_fast.cu", "rejected", "batched_calls"),
                 ("softmax_wide.py", "cheats/fingerprint_cache.py", "honest/softmax_fast.cu", "rejected",
                  "result_cache")]
        with mock.patch.object(evaluate, "KEEP_VERIFIED_BYTES", 0):
            for problem, cand, lib, outcome, cheat in cases:
                with self.subTest(candidate=cand):
                    r, _ = ac.run(problem, cand, lib, {})
                    log(f"FINGERPRINT {cand}: {r['outcome']} [{r['cheat']}] {r['reason'][:200]}")
                    self.assertEqual((r["outcome"], r["cheat"]), (outcome, cheat), r["reason"])

    def test_checking_a_two_gigabyte_output_costs_a_fraction_of_its_full_comparison(self):
        # KernelBench level1/19_ReLU at a third of its size: 2 GiB in, 2 GiB out. Each timed call
        # used to be compared in full (about 100 ms here, 75 times the call); now the first
        # is, and the others are fingerprinted.
        with tempfile.TemporaryDirectory() as tmp:
            problem = big_relu_problem(tmp, 131072)
            options = dict(ac.OPTIONS, timing_budget_s=1.0, min_trials=20, max_trials=2000)
            r, _ = ac.run(problem, "honest/relu_fast.py", "honest/relu_fast.cu", options)
        t = r.get("timing", {})
        log(f"BIG relu 2 GiB: {r['outcome']} {r['reason'][:200]} phases "
            f"{ {k: round(v, 2) for k, v in r['phase_seconds'].items()} } wall {r['_wall_s']:.1f} s; timing "
            f"{len(t.get('samples_s', []))} samples, stop {t.get('stop')}, loop {t.get('loop_wall_s', 0):.2f} s")
        self.assertEqual(r["outcome"], "ok", r["reason"])
        self.check_timing(t, options)
        per_call = t["loop_wall_s"] / len(t["samples_s"])
        self.assertLess(per_call, 15 * statistics.median(t["samples_s"]))


class ReferenceOnlyTest(unittest.TestCase):
    def test_the_reference_is_timed_alone_and_no_candidate_is_loaded(self):
        with tempfile.TemporaryDirectory() as tmp:
            marker = os.path.join(tmp, "imported")
            cand = os.path.join(tmp, "cand.py")
            with open(cand, "w") as f:
                f.write(f"open({marker!r}, 'w').write('imported')\n")
            req = {"task": {"kind": "kernelbench"}, "reference": os.path.join(ac.KB, "problems", "relu.py"),
                   "candidate": cand, "options": dict(ac.OPTIONS, reference_only=True, seed=1234)}
            report, exiting = evaluate.Evaluation(ac.device(), req).run()
            self.assertFalse(os.path.exists(marker))
        self.assertEqual(report["outcome"], "ok", report["reason"])
        self.assertFalse(exiting)
        self.assertEqual(report["seed"], 1234)
        t = report["reference_timing"]
        self.assertIn(t["stop"], STOPS)
        self.assertGreaterEqual(len(t["samples_s"]), ac.OPTIONS["min_trials"])
        self.assertEqual(report["reference_seconds"], statistics.median(t["samples_s"]))
        self.assertGreater(report["reference_seconds"], 0)
        self.assertNotIn("timing", report)
        self.assertEqual(sorted(report["phase_seconds"]), ["reference_timing", "setup"])

    def test_a_broken_problem_blames_the_reference(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "broken.py")
            with open(path, "w") as f:
                f.write("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                        "        raise ValueError('no')\n"
                        "def get_inputs():\n    return [torch.rand(8)]\n"
                        "def get_init_inputs():\n    return []\n")
            req = {"reference": path, "candidate": "", "options": dict(ac.OPTIONS, reference_only=True)}
            report, _ = evaluate.Evaluation(ac.device(), req).run()
        self.assertEqual(report["outcome"], "runtime_error")
        self.assertTrue(report["reference_failed"])
        self.assertIn("ValueError", report["reason"])


if __name__ == "__main__":
    unittest.main()


class TraceTest(unittest.TestCase):
    def test_the_traced_call_finds_its_kernels_without_importing_dynamo(self):
        # In a fresh interpreter: torch.profiler's start imports inductor and dynamo (4.5 s of
        # every evaluation on the H100); the worker's trace must not.
        import subprocess

        code = ("import sys, torch\n"
                "from kernelpro_torch import evaluate\n"
                "x = torch.randn(1 << 20, device='cuda')\n"
                "t = evaluate.trace_call(lambda xs: torch.relu(xs[0]), [x], None)\n"
                "print(len(t['kernels']), len(t['escaped']), 'torch._dynamo' in sys.modules)\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        kernels, escaped, dynamo = out.stdout.split()
        self.assertGreaterEqual(int(kernels), 1, out.stdout)
        self.assertEqual(escaped, "0")
        self.assertEqual(dynamo, "False", "the traced call imported torch._dynamo")
