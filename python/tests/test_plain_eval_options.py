"""The KernelBench worker's EvalOptions: the defaults, and no default of its own anywhere."""

import os
import re
import unittest

from kernelpro_torch import eval_options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class DefaultsTest(unittest.TestCase):
    def test_defaults_fill_what_a_request_lacks(self):
        o = eval_options.options_with_defaults({"min_trials": 3})
        self.assertEqual(o["min_trials"], 3)
        self.assertEqual(o["median_ci"], eval_options.DEFAULTS["median_ci"])
        self.assertEqual(eval_options.options_with_defaults(None), eval_options.DEFAULTS)
        o = eval_options.options_with_defaults({"seed": 7, "time_reference": False})
        self.assertEqual((o["seed"], o["time_reference"], o["reference_only"]), (7, False, False))
        self.assertIsNot(eval_options.options_with_defaults({}), eval_options.DEFAULTS)  # a copy, never the defaults


class OptionsSourceTest(unittest.TestCase):
    """The KernelBench worker takes EvalOptions' defaults from eval_defaults.json only: its modules
    read options merged by options_with_defaults, never with a default of their own."""

    MODULES = ("evaluate.py", "profile.py", "baseline.py", "judge.py", "callbacks.py", "trace.py", "precision.py")
    PKG = os.path.join(ROOT, "python", "kernelpro_torch")

    def sources(self):
        for name in self.MODULES:
            with open(os.path.join(self.PKG, name)) as f:
                yield name, f.read()

    def test_no_scattered_defaults(self):
        for name, src in self.sources():
            for key in re.findall(r"""(?:opts|options)\.get\(\s*["'](\w+)["']""", src):
                self.assertNotIn(key, eval_options.DEFAULTS, f"{name} reads {key} with a default of its own")

    def test_every_option_read_has_a_default(self):
        read = set()
        for name, src in self.sources():
            read |= set(re.findall(r"""(?:opts|options)\[\s*["'](\w+)["']\s*\]""", src))
        self.assertTrue({"warmup_calls", "time_reference", "reference_only", "physics_margin"} <= read, read)
        self.assertEqual(sorted(read - set(eval_options.DEFAULTS)), [])


if __name__ == "__main__":
    unittest.main()
