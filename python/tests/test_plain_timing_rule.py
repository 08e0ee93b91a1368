"""The KernelBench worker's sampling rule against the cases the C++ rule is held to."""

import json
import os
import re
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
        self.assertEqual(timing_rule.options_with_defaults(None), timing_rule.DEFAULTS)
        o = timing_rule.options_with_defaults({"seed": 7, "time_reference": False})
        self.assertEqual((o["seed"], o["time_reference"], o["reference_only"]), (7, False, False))
        self.assertIsNot(timing_rule.options_with_defaults({}), timing_rule.DEFAULTS)  # a copy, never the defaults


class OptionsSourceTest(unittest.TestCase):
    """The KernelBench worker takes EvalOptions' defaults from eval_defaults.json only: its modules
    read options merged by options_with_defaults, never with a default of their own."""

    MODULES = ("evaluate.py", "profile.py", "baseline.py")
    PKG = os.path.join(ROOT, "python", "kernelpro_torch")

    def sources(self):
        for name in self.MODULES:
            with open(os.path.join(self.PKG, name)) as f:
                yield name, f.read()

    def test_no_scattered_defaults(self):
        for name, src in self.sources():
            for key in re.findall(r"""(?:opts|options)\.get\(\s*["'](\w+)["']""", src):
                self.assertNotIn(key, timing_rule.DEFAULTS, f"{name} reads {key} with a default of its own")

    def test_every_option_read_has_a_default(self):
        read = set()
        for name, src in self.sources():
            read |= set(re.findall(r"""(?:opts|options)\[\s*["'](\w+)["']\s*\]""", src))
        self.assertTrue({"warmup_calls", "time_reference", "reference_only", "physics_margin"} <= read, read)
        self.assertEqual(sorted(read - set(timing_rule.DEFAULTS)), [])


if __name__ == "__main__":
    unittest.main()
