"""The KernelBench worker's sampling rule against the cases the C++ rule is held to."""

import json
import os
import unittest

from kernelpro_torch import timing_rule

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TimingRuleTest(unittest.TestCase):
    def test_shared_cases(self):
        with open(os.path.join(ROOT, "tests", "data", "timing_rule_cases.json")) as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 8)
        for c in cases:
            with self.subTest(c["name"]):
                options = timing_rule.options_with_defaults(c["options"])
                self.assertEqual(timing_rule.sampling_decision(c["samples"], c["loop_wall_s"], options), c["expect"])
                self.assertEqual(timing_rule.median_interval95(c["samples"]), (c["median"], c["lo"], c["hi"]))

    def test_defaults_fill_what_a_request_lacks(self):
        o = timing_rule.options_with_defaults({"min_trials": 3})
        self.assertEqual(o["min_trials"], 3)
        self.assertEqual(o["median_ci"], timing_rule.DEFAULTS["median_ci"])


if __name__ == "__main__":
    unittest.main()
