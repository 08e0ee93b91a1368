"""The KernelBench worker's timing on a real GPU, by the judge core: the sampling rule's report,
a timed loop whose per-call check (fresh inputs, the reference, a comparison on the device) stays
cheap on outputs of gigabytes, time_reference false and reference-only requests."""

import os
import statistics
import sys
import tempfile
import unittest


from kernelpro_torch import evaluate, eval_options

import test_gpu_anticheat as ac

STOPS = ("precise", "budget", "max_trials")


def log(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


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
        options = eval_options.options_with_defaults(options)
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

    def test_checking_a_two_gigabyte_output_costs_a_fraction_of_its_full_comparison(self):
        # KernelBench level1/19_ReLU at a third of its size: 2 GiB in, 2 GiB out. Every timed
        # call draws fresh inputs, runs the reference after it and compares on the device, all
        # outside its events: a few reads of the tensors, never a float64 pass on the host.
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
                "from kernelpro_torch import trace\n"
                "x = torch.randn(1 << 20, device='cuda')\n"
                "t = trace.trace_call(lambda xs: torch.relu(xs[0]), [x], None)\n"
                "print(len(t['kernels']), len(t['escaped']), 'torch._dynamo' in sys.modules)\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        kernels, escaped, dynamo = out.stdout.split()
        self.assertGreaterEqual(int(kernels), 1, out.stdout)
        self.assertEqual(escaped, "0")
        self.assertEqual(dynamo, "False", "the traced call imported torch._dynamo")
