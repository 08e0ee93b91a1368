"""Problem and candidate loading with real torch on the CPU: namespaces, dtypes, guards, checks."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

import torch

from kernelpro_torch import compare, judge, problem as pb

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "data",
                    "kernelbench", "problems")


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


class NamespaceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.prob = pb.Problem(os.path.join(DATA, "softmax_wide.py"))

    def tearDown(self):
        self.tmp.cleanup()

    def test_candidate_cannot_see_model_or_the_sizes(self):
        path = write(self.tmp.name, "peek.py", """
            import torch.nn as nn
            class ModelNew(Model):
                pass
        """)
        with self.assertRaises(pb.CandidateLoadError) as e:
            pb.Candidate(path)
        self.assertEqual(e.exception.outcome, "load_error")
        self.assertIn("NameError", str(e.exception))

    def test_rebinding_a_size_in_the_candidate_does_not_change_the_inputs(self):
        before = [tuple(x.shape) for x in self.prob.inputs(1, "cpu", torch.float32)]
        path = write(self.tmp.name, "rebind.py", """
            import torch, torch.nn as nn
            batch_size = 1
            dim = 2
            class ModelNew(nn.Module):
                def forward(self, x):
                    return torch.softmax(x, dim=1)
        """)
        pb.Candidate(path)
        self.assertEqual(self.prob.rebound_constants(), [])
        after = [tuple(x.shape) for x in self.prob.inputs(1, "cpu", torch.float32)]
        self.assertEqual(before, after)
        self.assertEqual(after, [(256, 32768)])

    def test_rebinding_through_the_problem_namespace_is_detected(self):
        self.prob.ns["batch_size"] = 1  # what a candidate reaching it through gc would do
        self.assertEqual(self.prob.rebound_constants(), ["batch_size"])

    def test_load_outcomes(self):
        cases = {
            "syntax.py": ("def broken(:\n", "compile_error"),
            "nomodel.py": ("import torch\nx = 1\n", "load_error"),
            "raises.py": ("raise RuntimeError('boom at import')\n", "load_error"),
            "patch.py": ("import torch\ntorch.cuda.Event.elapsed_time = lambda a, b: 0.0\n", "rejected"),
        }
        for name, (src, outcome) in cases.items():
            with self.assertRaises(pb.CandidateLoadError, msg=name) as e:
                pb.Candidate(write(self.tmp.name, name, src))
            self.assertEqual(e.exception.outcome, outcome, name)
        self.assertEqual(e.exception.cheat, "timer_patch")


class DtypeTest(unittest.TestCase):
    def test_integer_and_bool_inputs_keep_their_dtype(self):
        ce = pb.Problem(os.path.join(DATA, "cross_entropy.py"))
        x, t = ce.inputs(3, "cpu", torch.float16)
        self.assertEqual(x.dtype, torch.float16)
        self.assertEqual(t.dtype, torch.int64)
        ms = pb.Problem(os.path.join(DATA, "masked_sum.py"))
        x, m = ms.inputs(3, "cpu", torch.float32)
        self.assertEqual(m.dtype, torch.bool)

    def test_inputs_follow_the_seed(self):
        p = pb.Problem(os.path.join(DATA, "cross_entropy.py"))
        a, b, c = p.inputs(5, "cpu", torch.float32), p.inputs(5, "cpu", torch.float32), p.inputs(6, "cpu", torch.float32)
        self.assertTrue(torch.equal(a[0], b[0]))
        self.assertFalse(torch.equal(a[0], c[0]))

    def test_models_get_identical_weights_and_stay_in_training_mode(self):
        p = pb.Problem(os.path.join(DATA, "linear_relu.py"))
        init = p.init_inputs()
        m1 = p.build(p.Model, init, "cpu", torch.float32)
        m2 = p.build(p.Model, init, "cpu", torch.float32)
        self.assertTrue(torch.equal(m1.linear.weight, m2.linear.weight))
        self.assertTrue(m1.training)

    def test_a_broken_problem_blames_the_problem(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(pb.ProblemError, "get_init_inputs"):
                pb.Problem(write(tmp, "p.py", "class Model: pass\ndef get_inputs(): return []\n"))


class GuardTest(unittest.TestCase):
    def test_patched_timer_and_torch_functions_are_named(self):
        g = pb.Guard()
        self.assertIsNone(g.check())
        original = torch.cuda.Event.elapsed_time
        try:
            setattr(torch.cuda.Event, "elapsed_time", lambda a, b: 0.001)
            self.assertEqual(g.check()[0], "timer_patch")
        finally:
            torch.cuda.Event.elapsed_time = original
        self.assertIsNone(g.check())
        import torch.nn.functional as F
        original = F.softmax
        try:
            F.softmax = lambda *a, **k: None
            found = g.check()
            self.assertEqual(found[0], "torch_patch")
            self.assertIn("torch.nn.functional.softmax", found[1])
        finally:
            F.softmax = original
        self.assertIsNone(g.check())


    def test_importing_dynamo_after_the_snapshot_is_not_a_patch(self):
        # In a fresh interpreter, where torch._dynamo is not imported yet: its first import
        # rewraps torch.manual_seed, which a candidate's import may trigger; that is PyTorch's
        # own doing, not the candidate's. A candidate's own wrapper of the same function is.
        code = textwrap.dedent("""
            import sys, torch
            from kernelpro_torch import problem as pb
            assert "torch._dynamo" not in sys.modules, "imported before the snapshot: the test proves nothing"
            g = pb.Guard()
            seed = torch.manual_seed
            import torch._dynamo
            print("rewrapped" if torch.manual_seed is not seed else "same")
            print(g.check())
            torch.manual_seed = lambda s: None
            print(g.check()[0])
        """)
        here = os.path.dirname(os.path.dirname(os.path.abspath(pb.__file__)))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=here, timeout=300,
                             env={**os.environ, "PYTHONPATH": here})
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.split()
        self.assertEqual(lines[1], "None", f"dynamo's own rewrap was taken for a patch: {out.stdout}")
        self.assertEqual(lines[2], "torch_patch")


@unittest.skipUnless(torch.cuda.is_available() and judge.library_path(),
                     "compare.check_output is the judge core's (libkp_judge.so), on a CUDA device")
class CompareTest(unittest.TestCase):
    """compare.check_output is the judge core's rule (kpj_compare, src/verdict/compare.cc), asked
    for the profiler's check: the same verdicts the trials and timed calls get."""

    def test_zeros_pass_allclose_on_a_wide_softmax_but_fail_here(self):
        ref = torch.softmax(torch.rand(64, 32768, device="cuda"), dim=1)
        zeros = torch.zeros_like(ref)
        self.assertTrue(torch.allclose(zeros, ref, atol=1e-4, rtol=1e-4))  # KernelBench's rule lets it through
        c = compare.check_output(zeros, ref)
        self.assertFalse(c["passed"])
        self.assertTrue(c["constant_output"])
        noisy = ref * (1 + 1e-6 * torch.randn_like(ref))
        self.assertTrue(compare.check_output(noisy, ref)["passed"])

    def test_half_precision_error_fails_with_an_error_of_that_size(self):
        a, b = torch.rand(256, 512, device="cuda"), torch.rand(512, 256, device="cuda")
        ref = (a.double() @ b.double()).float()
        low = (a.bfloat16() @ b.bfloat16()).float()
        c = compare.check_output(low, ref)
        self.assertFalse(c["passed"])
        self.assertTrue(1e-5 <= c["rel_norm_error"] <= 5e-2, c)  # what failure_kind names precision_downgrade

    def test_shape_dtype_nan_and_integers(self):
        ref = torch.rand(4, 5, device="cuda")
        self.assertIn("shape", compare.check_output(ref.reshape(20), ref)["reason"])
        self.assertIn("dtype", compare.check_output(ref.double(), ref)["reason"])
        bad = ref.clone()
        bad[1, 2] = float("nan")
        c = compare.check_output(bad, ref)
        self.assertEqual(c["nonfinite"], 1)
        self.assertIn("[1, 2]", c["reason"])
        i = torch.arange(10, device="cuda")
        j = i.clone()
        j[3] = 4
        c = compare.check_output(j, i)
        self.assertEqual(c["mismatches"], 1)
        self.assertTrue(compare.check_output(i.clone(), i)["passed"])
        nan = torch.rand(300, device="cuda")
        nan[3] = float("nan")
        c = compare.check_output(nan.clone(), nan)  # NaN never equals NaN: the reference is at fault
        self.assertFalse(c["passed"])
        self.assertEqual(c["reference_nonfinite"], 1)


class InputShapesTest(unittest.TestCase):
    def test_shapes_without_drawing_and_with_a_draw_when_sizes_depend_on_values(self):
        with tempfile.TemporaryDirectory() as tmp:
            fixed = pb.Problem(write(tmp, "fixed.py", """
                import torch
                class Model(torch.nn.Module):
                    pass
                def get_inputs():
                    return [torch.rand(3, 5), torch.randint(0, 4, (7,)), 2.5]
                def get_init_inputs():
                    return []
                """))
            with mock.patch.object(pb.Problem, "inputs", side_effect=AssertionError("drew the inputs")):
                self.assertEqual(fixed.input_shapes(5, "cpu", torch.float16), [(3, 5), (7,)])
            drawn = pb.Problem(write(tmp, "drawn.py", """
                import torch
                class Model(torch.nn.Module):
                    pass
                def get_inputs():
                    n = int(torch.randint(2, 50, (1,)))
                    return [torch.rand(n, 4)]
                def get_init_inputs():
                    return []
                """))
            for seed in (1, 2, 3):
                real = [tuple(x.shape) for x in drawn.inputs(seed, "cpu", torch.float32)]
                self.assertEqual(drawn.input_shapes(seed, "cpu", torch.float32), real)


if __name__ == "__main__":
    unittest.main()
