"""The KernelBench worker's Range Profiler capacity against the C++ twin (src/verdict/worker_plan.h)."""

import os
import re
import unittest

from kernelpro_torch import worker_plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class WorkerPlanTest(unittest.TestCase):
    def test_the_constants_are_the_cpp_ones(self):
        with open(os.path.join(ROOT, "src", "verdict", "worker_plan.h")) as f:
            header = f.read()
        for name, value in (("kFirstRangeCapacity", worker_plan.FIRST_RANGE_CAPACITY),
                            ("kMostRangeCapacity", worker_plan.MOST_RANGE_CAPACITY)):
            m = re.search(r"constexpr int " + name + r" = (\d+);", header)
            self.assertIsNotNone(m, f"{name} not found in worker_plan.h")
            self.assertEqual(int(m.group(1)), value, name)

    def test_the_session_grows_to_hold_the_forwards_launches(self):
        # The cases of WorkerPlan.TheRangeProfilerSessionGrowsToHoldTheCallsLaunches.
        g = worker_plan.grown_range_capacity
        self.assertEqual(g(16, 3, 0), 16)
        self.assertEqual(g(16, 16, 0), 16)
        self.assertEqual(g(16, 17, 1), 32)
        self.assertEqual(g(16, 100, 84), 128)
        self.assertEqual(g(16, -1, 24), 64)
        self.assertEqual(g(16, 5000, 4984), worker_plan.MOST_RANGE_CAPACITY)
        self.assertEqual(g(worker_plan.MOST_RANGE_CAPACITY, 5000, 4744), worker_plan.MOST_RANGE_CAPACITY)
        self.assertEqual(g(0, 2, 1), 2)

    def test_the_environment_sets_the_first_capacity(self):
        old = os.environ.pop("KP_RP_CAPACITY", None)
        try:
            self.assertEqual(worker_plan.first_range_capacity(), worker_plan.FIRST_RANGE_CAPACITY)
            os.environ["KP_RP_CAPACITY"] = "256"
            self.assertEqual(worker_plan.first_range_capacity(), 256)
            os.environ["KP_RP_CAPACITY"] = "100000"
            self.assertEqual(worker_plan.first_range_capacity(), worker_plan.MOST_RANGE_CAPACITY)
            os.environ["KP_RP_CAPACITY"] = "many"
            self.assertEqual(worker_plan.first_range_capacity(), worker_plan.FIRST_RANGE_CAPACITY)
        finally:
            os.environ.pop("KP_RP_CAPACITY", None)
            if old is not None:
                os.environ["KP_RP_CAPACITY"] = old


if __name__ == "__main__":
    unittest.main()
