"""Pieces of evaluate.py that run on the CPU: kernel attribution, compulsory traffic, input
rotation, the timed loop's sampling (on a fake clock) and the verified-output store."""

import contextlib
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

import torch

from kernelpro_torch import evaluate, timing_rule


class KernelNameTest(unittest.TestCase):
    def test_trace_and_nm_names_reduce_to_the_same_base(self):
        self.assertEqual(evaluate.kernel_base("void relu_vec4<float>(float4 const*, float4*, long)"), "relu_vec4")
        self.assertEqual(evaluate.kernel_base("relu_vec4(float4 const*, float4*, long)"), "relu_vec4")
        self.assertEqual(evaluate.kernel_base("void at::native::vectorized_elementwise_kernel<4, at::native::"
                                              "FillFunctor<float>, std::array<char*, 1ul> >(int, ...)"),
                         "at::native::vectorized_elementwise_kernel")
        self.assertEqual(evaluate.kernel_base("gelu"), "gelu")

    @unittest.skipUnless(shutil.which("nvcc") and shutil.which("nm"), "needs nvcc and nm")
    def test_symbols_of_a_built_library_include_its_kernels(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "k.cu")
            with open(src, "w") as f:
                f.write('template <typename T> __global__ void scale_k(T* x, long n) {}\n'
                        'template __global__ void scale_k<float>(float*, long);\n'
                        'extern "C" void launch(float* x, long n) { scale_k<float><<<1, 1>>>(x, n); }\n')
            so = os.path.join(tmp, "k.so")
            subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-o", so, src], check=True)
            names = evaluate.library_symbols([so])
            self.assertIn("scale_k", names)
            self.assertIn("launch", names)
            self.assertNotIn("at::native::vectorized_elementwise_kernel", names)


class CompulsoryBytesTest(unittest.TestCase):
    def test_inputs_outputs_and_each_parameter_and_buffer_once(self):
        lin = torch.nn.Linear(8, 4)  # a weight of 32 floats and a bias of 4
        lin.register_buffer("scale", torch.ones(2, dtype=torch.float16))
        model = torch.nn.Sequential(lin, lin)  # the same module twice: its parameters count once
        xs = [torch.zeros(16, 8), 3]  # a scalar argument moves nothing
        outs = [torch.zeros(16, 4, dtype=torch.float64)]
        self.assertEqual(evaluate.compulsory_bytes(xs, outs, model), 16 * 8 * 4 + 16 * 4 * 8 + (32 + 4) * 4 + 2 * 2)
        self.assertEqual(evaluate.module_bytes(lambda x: x), 0)


class RollTest(unittest.TestCase):
    def test_rolled_inputs_keep_pointers_and_values_but_move_every_position(self):
        x = torch.rand(64, 100)
        t = torch.randint(0, 10, (64,))
        ptr, before, tb = x.data_ptr(), x.clone(), t.clone()
        evaluate.roll_inputs([x, t, 3.5], 7919)
        self.assertEqual(x.data_ptr(), ptr)
        self.assertFalse(torch.equal(x, before))
        self.assertTrue(torch.equal(x.flatten().sort()[0], before.flatten().sort()[0]))
        self.assertEqual(sorted(t.tolist()), sorted(tb.tolist()))


class FakeClock:
    """Stands in for CUDA events, the device synchronization and perf_counter: every call,
    flush and check advances one clock by what the test says it costs."""

    def __init__(self):
        self.now = 0.0
        self.stream = "stream 0"  # the current stream; a call may change it
        self.recorded_on = []

    def patched(self):
        """The fakes in place for a `with` block."""
        clock = self

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

        def record(ev, stream=None):
            ev.t = clock.now
            clock.recorded_on.append(stream)

        def set_stream(stream):
            clock.stream = stream

        patches = [mock.patch.object(evaluate, "_Event", Event), mock.patch.object(evaluate, "_record", record),
                mock.patch.object(evaluate, "_current_stream", lambda: clock.stream),
                mock.patch.object(evaluate.torch.cuda, "set_stream", set_stream),
                mock.patch.object(evaluate, "_elapsed", lambda s, e: (e.t - s.t) * 1e3),
                mock.patch.object(evaluate, "_sync", lambda: None),
                mock.patch.object(evaluate, "_perf", lambda: clock.now)]
        stack = contextlib.ExitStack()
        for p in patches:
            stack.enter_context(p)
        return stack


class FakeDevice:
    def __init__(self, clock, flush_s):
        self.clock, self.flush_s = clock, flush_s
        self.flush = torch.empty(1 << 10, dtype=torch.uint8)

    def prepare_timed_call(self):
        self.clock.now += self.flush_s

    def persisting_l2_stop(self):
        return None


class TimeCallsTest(unittest.TestCase):
    """time_calls takes samples until timing_rule says stop, its wall budget counting each timed
    call whole: the flush, the call and the output check."""

    def run_calls(self, durations, options, check_s=0.0, flush_s=0.0):
        clock = FakeClock()
        dev = FakeDevice(clock, flush_s)
        calls = []
        checked = []

        def call(xs):
            calls.append(xs)
            clock.now += durations[(len(calls) - 1) % len(durations)]
            return torch.zeros(1)

        def check(i, k, out):
            checked.append((i, k))
            clock.now += check_s

        with clock.patched():
            opts = timing_rule.options_with_defaults(options)
            return evaluate.time_calls(dev, call, ["set0", "set1", "set2"], opts, check=check), calls, checked

    def test_a_call_that_leaves_another_stream_current_is_rejected_and_the_stream_put_back(self):
        clock = FakeClock()
        dev = FakeDevice(clock, 0.0)
        n = [0]

        def call(xs):
            n[0] += 1
            clock.now += 1e-3
            if n[0] == 12:  # after the warm-ups and some timed calls, as a cheat would
                clock.stream = "an idle stream of the candidate's"
            return torch.zeros(1)

        with clock.patched(), self.assertRaises(evaluate.Stop) as caught:
            evaluate.time_calls(dev, call, ["set0"], timing_rule.options_with_defaults({}), check=lambda i, k, out: None)
        self.assertEqual(caught.exception.cheat, "side_stream")
        self.assertIn("timed call 7", caught.exception.reason)
        self.assertEqual(clock.stream, "stream 0")
        self.assertEqual(set(clock.recorded_on), {"stream 0"}, "every event goes on the stream current before the call")

    def test_the_budget_counts_the_check(self):
        # Calls of 1 and 2 ms alternate (never precise); each check costs 9 ms. The 0.2 s budget
        # is spent after about 0.2 / 0.0105 = 19 calls, not the 130 that the calls alone fit.
        t, calls, checked = self.run_calls([1e-3, 2e-3], {"warmup_calls": 2, "timing_budget_s": 0.2, "min_trials": 5,
                                                          "max_trials": 1000, "median_ci": 1e-9}, check_s=9e-3)
        self.assertEqual(t["stop"], "budget")
        self.assertIn(len(t["samples_s"]), (19, 20))
        self.assertGreaterEqual(t["loop_wall_s"], 0.2)
        self.assertLess(t["loop_wall_s"], 0.2 + 0.012)
        self.assertEqual(len(calls), 2 + len(t["samples_s"]))  # warm-up calls are not samples
        self.assertEqual(t["warmup_calls"], 2)
        self.assertAlmostEqual(t["samples_s"][0], 1e-3)  # the samples are the calls' times, in order
        self.assertAlmostEqual(t["samples_s"][1], 2e-3)
        self.assertEqual([k for _, k in checked[:4]], [0, 1, 2, 0])  # the sets rotate
        self.assertEqual(len(t["wall_s"]), len(t["samples_s"]))
        self.assertEqual(t["median_ci_rel"], timing_rule.relative_half_width(t["samples_s"]))
        self.assertGreater(t["median_ci_rel"], 0.1)

    def test_steady_calls_stop_when_the_median_is_precise(self):
        t, _, _ = self.run_calls([5e-4], {"warmup_calls": 1, "timing_budget_s": 10.0, "min_trials": 12,
                                          "max_trials": 2000, "median_ci": 0.005})
        self.assertEqual(t["stop"], "precise")
        self.assertEqual(len(t["samples_s"]), 12)
        self.assertLess(t["median_ci_rel"], 1e-9)

    def test_max_trials_caps_noisy_calls(self):
        t, _, _ = self.run_calls([1e-4, 3e-4, 2e-4], {"warmup_calls": 1, "timing_budget_s": 100.0, "min_trials": 3,
                                                      "max_trials": 40, "median_ci": 1e-9})
        self.assertEqual(t["stop"], "max_trials")
        self.assertEqual(len(t["samples_s"]), 40)

    def test_the_baselines_fixed_count(self):
        # baseline.py: no budget and min == max give exactly that many samples.
        t, calls, _ = self.run_calls([1e-3, 5e-3], {"warmup_calls": 1, "timing_budget_s": 0.0, "min_trials": 7,
                                                    "max_trials": 7})
        self.assertEqual(len(t["samples_s"]), 7)
        self.assertEqual(t["stop"], "max_trials")
        self.assertEqual(len(calls), 8)


class SeedsTest(unittest.TestCase):
    def test_a_reference_only_request_draws_the_sets_of_a_full_evaluation(self):
        full = evaluate.Evaluation(None, {"options": {"seed": 99}})
        only = evaluate.Evaluation(None, {"options": {"seed": 99, "reference_only": True, "time_reference": False}})
        trial_seeds, set_seeds = full._seeds()
        self.assertEqual(only._seeds(), (trial_seeds, set_seeds))
        self.assertEqual(len(trial_seeds), timing_rule.DEFAULTS["correctness_trials"])
        self.assertEqual(len(set_seeds), timing_rule.DEFAULTS["input_sets"])
        self.assertNotEqual(evaluate.Evaluation(None, {"options": {"seed": 100}})._seeds()[1], set_seeds)


class VerifiedOutputsTest(unittest.TestCase):
    def test_copies_while_small_fingerprints_beyond(self):
        ref_outs = [[torch.randn(64, 32)], [torch.randn(64, 32)]]
        for limit, copies in ((1 << 30, True), (0, False)):
            with self.subTest(copies=copies), mock.patch.object(evaluate, "KEEP_VERIFIED_BYTES", limit):
                v = evaluate.VerifiedOutputs(ref_outs, torch.device("cpu"))
                self.assertEqual(v.keep_copies, copies)
                o = ref_outs[1][0] + 1e-6
                self.assertFalse(v.matches((1, 0), o))  # nothing verified yet
                v.add((1, 0), o)
                self.assertTrue(v.matches((1, 0), o.clone()))
                self.assertTrue(v.matches((1, 0), o.t().contiguous().t()))
                self.assertFalse(v.matches((0, 0), o))  # another input set
                wrong = o.clone()
                wrong[3, 4] += 1.0
                self.assertFalse(v.matches((1, 0), wrong))
                self.assertFalse(v.matches((1, 0), o.double()))
                self.assertFalse(v.matches((1, 0), o[:32]))
                v.add((1, 0), wrong)  # the first verified output stays
                self.assertTrue(v.matches((1, 0), o))
                v.forget(1)  # set 1's inputs were rewritten: what matched before proves nothing now
                self.assertFalse(v.matches((1, 0), o))


class OutOfMemoryTest(unittest.TestCase):
    """An out-of-memory is the machine's (gpu_unavailable) only when memory is held outside this
    worker; the candidate's own appetite stays its runtime_error."""

    def stop(self, free, total, reserved, holders="123, python3, 70000 MiB"):
        with mock.patch.object(torch.cuda, "empty_cache", lambda: None), \
                mock.patch.object(torch.cuda, "mem_get_info", lambda *a: (free, total)), \
                mock.patch.object(torch.cuda, "memory_reserved", lambda *a: reserved), \
                mock.patch.object(evaluate, "gpu_holders", lambda: holders):
            return evaluate.out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"),
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
        st = evaluate.problem_failure(ValueError("bad shape"), "the problem's get_inputs()", reference_failed=True)
        self.assertEqual(st.outcome, "runtime_error")
        self.assertTrue(st.reference_failed)


class FakeNvml:
    """An energy counter that advances 1 mJ on every read: the window always closes."""

    available = True
    error = ""

    def __init__(self):
        self.mj = 0

    def total_energy_mj(self):
        self.mj += 1
        return self.mj

    def sm_clock_mhz(self):
        return 1980

    def temperature_c(self):
        return 40


class EnergyChecksTest(unittest.TestCase):
    """The calls whose energy is measured are checked too: a few, drawn at random, so a
    candidate that skips its work while the energy is measured is caught."""

    def measure(self, call, check):
        clock = FakeClock()
        dev = FakeDevice(clock, 0.0)
        dev.nvml, dev.idle_watts = FakeNvml(), 0.0

        def timed(xs):
            clock.now += 1e-3
            return call(xs)

        with clock.patched():
            opts = timing_rule.options_with_defaults({"energy_window_s": 0.1})
            return evaluate.measure_energy(dev, timed, ["set0", "set1"], 1e-3, opts, check=check,
                                           rng=__import__("random").Random(5))

    def test_three_calls_are_checked_at_indices_no_one_can_predict(self):
        checked = []
        e = self.measure(lambda xs: torch.zeros(1), lambda i, k, out: checked.append((i, k)))
        self.assertTrue(e["measured"])
        self.assertEqual(len(checked), evaluate.ENERGY_CHECKS)
        self.assertTrue(all(k == i % 2 for i, k in checked), checked)
        self.assertEqual(len({i for i, _ in checked}), evaluate.ENERGY_CHECKS)

    def test_a_call_that_skips_its_work_is_stopped(self):
        def check(i, k, out):
            if out is None:
                raise evaluate.Stop("rejected", f"energy call {i + 1} did nothing", cheat="batched_calls")

        calls = []

        def lazy(xs):  # does the work on the first 20 calls only, as if it knew when energy starts
            calls.append(1)
            return torch.zeros(1) if len(calls) <= 20 else None

        with self.assertRaises(evaluate.Stop) as caught:
            self.measure(lazy, check)
        self.assertEqual(caught.exception.cheat, "batched_calls")


class OutputProbeTest(unittest.TestCase):
    def test_every_element_of_a_flipped_output_differs_whatever_its_dtype(self):
        values = torch.tensor([0.0, -0.0, 1.5, -2.25, float("inf"), float("nan"), 3e38])
        cases = [values, values.double(), values.half(), values.bfloat16(), torch.complex(values, values),
                 torch.tensor([0, 1, -1, 127, -128], dtype=torch.int8), torch.arange(-3, 4),
                 torch.tensor([True, False, True]), values.reshape(7, 1).expand(7, 3).clone().t()[:, ::2]]
        for t in cases:
            with self.subTest(dtype=t.dtype, contiguous=t.is_contiguous()):
                before = t.clone()
                evaluate.flip_bits(t)
                if t.is_complex():
                    t, before = torch.view_as_real(t), torch.view_as_real(before)
                if t.is_floating_point():
                    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
                    t, before = t.contiguous().view(as_int), before.contiguous().view(as_int)
                self.assertTrue(bool((t != before).all()), f"{before} -> {t}")

    def test_the_threshold_is_the_native_workers(self):
        # The cases of WorkerPlan.ACandidateFasterWhenItsOutputIsAlreadyRightSkipsWork.
        self.assertTrue(evaluate.faster_on_right_outputs(4e-6, 9.6e-6))
        self.assertFalse(evaluate.faster_on_right_outputs(4e-6, 4.2e-6))
        self.assertFalse(evaluate.faster_on_right_outputs(1e-6, 1.6e-6))
        self.assertFalse(evaluate.faster_on_right_outputs(9.6e-6, 4e-6))


class TimeOneTest(unittest.TestCase):
    def test_a_single_timed_call_is_held_to_the_stream_too(self):
        clock = FakeClock()
        dev = FakeDevice(clock, 0.0)

        def switching(_=None):
            clock.now += 1e-3
            clock.stream = "another"
            return torch.zeros(1)

        with clock.patched():
            out, t, wall = evaluate.time_one(dev, lambda: torch.zeros(1), "the candidate", "a call")
            self.assertEqual((t, wall), (0.0, 0.0))
            with self.assertRaises(evaluate.Stop) as caught:
                evaluate.time_one(dev, switching, "the candidate", "call 3 on fresh inputs")
        self.assertEqual(caught.exception.cheat, "side_stream")
        self.assertIn("call 3 on fresh inputs", caught.exception.reason)
        self.assertEqual(clock.stream, "stream 0")
