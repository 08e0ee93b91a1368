"""Pieces of the KernelBench worker that run on the CPU: compulsory traffic, seeds, out-of-memory blame, the
traced call against the timed median. The timed calls, the energy window and their checks are the judge core's
(src/judge/), tested on the GPU."""

import unittest
from unittest import mock

import torch

from kernelpro_torch import evaluate, eval_options, harness, trace


class TracedWorkTest(unittest.TestCase):
    def test_a_traced_call_heavier_than_a_timed_one_ran_other_work(self):
        # issue 41: its own 1.0 ms GEMM under the profiler, cuBLAS's 0.5 ms when timed
        self.assertTrue(trace.traced_work_exceeds_timed(1.0e-3, 0.51e-3))
        # honest: warm traced kernels take no longer than a flushed, timed call
        self.assertFalse(trace.traced_work_exceeds_timed(0.2e-3, 0.276e-3))
        self.assertFalse(trace.traced_work_exceeds_timed(12e-6, 5e-6), "10 us of slack for short calls")


class CompulsoryBytesTest(unittest.TestCase):
    def test_inputs_outputs_and_each_parameter_and_buffer_once(self):
        lin = torch.nn.Linear(8, 4)  # a weight of 32 floats and a bias of 4
        lin.register_buffer("scale", torch.ones(2, dtype=torch.float16))
        model = torch.nn.Sequential(lin, lin)  # the same module twice: its parameters count once
        xs = [torch.zeros(16, 8), 3]  # a scalar argument moves nothing
        outs = [torch.zeros(16, 4, dtype=torch.float64)]
        self.assertEqual(harness.compulsory_bytes(xs, outs, model), 16 * 8 * 4 + 16 * 4 * 8 + (32 + 4) * 4 + 2 * 2)
        self.assertEqual(harness.module_bytes(lambda x: x), 0)


class SeedsTest(unittest.TestCase):
    def test_the_trials_seeds_follow_the_evaluations_seed_and_are_distinct(self):
        trial_seeds = evaluate.Evaluation(None, {"options": {"seed": 99}})._seeds()
        self.assertEqual(evaluate.Evaluation(None, {"options": {"seed": 99}})._seeds(), trial_seeds)
        self.assertEqual(len(trial_seeds), eval_options.DEFAULTS["correctness_trials"])
        self.assertEqual(len(set(trial_seeds)), len(trial_seeds), "the core refuses a repeated trial seed")
        self.assertNotEqual(evaluate.Evaluation(None, {"options": {"seed": 100}})._seeds(), trial_seeds)


class OutOfMemoryTest(unittest.TestCase):
    """An out-of-memory is the machine's (gpu_unavailable) only when memory is held outside this
    worker; the candidate's own appetite stays its runtime_error."""

    def stop(self, free, total, reserved, holders="123, python3, 70000 MiB"):
        with mock.patch.object(torch.cuda, "empty_cache", lambda: None), \
                mock.patch.object(torch.cuda, "mem_get_info", lambda *a: (free, total)), \
                mock.patch.object(torch.cuda, "memory_reserved", lambda *a: reserved), \
                mock.patch.object(harness, "gpu_holders", lambda: holders):
            return harness.out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"),
                                          "the candidate")

    def test_memory_held_by_another_process_is_gpu_unavailable_and_names_it(self):
        gib = 1 << 30
        st = self.stop(free=1 * gib, total=80 * gib, reserved=8 * gib)  # 70 GiB held elsewhere
        self.assertEqual(st.outcome, "gpu_unavailable")
        self.assertIn("70.0 GiB", st.reason)
        self.assertIn("123, python3, 70000 MiB", st.reason)

    def test_the_candidates_own_allocations_are_its_runtime_error(self):
        gib = 1 << 30
        st = self.stop(free=1 * gib, total=80 * gib, reserved=78 * gib)
        self.assertEqual(st.outcome, "runtime_error")
        self.assertIn("out of device memory", st.reason)

    def test_the_problems_own_failure_stays_the_problems(self):
        st = harness.problem_failure(ValueError("bad shape"), "the problem's get_inputs()", reference_failed=True)
        self.assertEqual(st.outcome, "runtime_error")
        self.assertTrue(st.reference_failed)


if __name__ == "__main__":
    unittest.main()
