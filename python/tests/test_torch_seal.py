"""The harness seal (harness_tamper): what a candidate in the worker's interpreter could rebind
to change the timing or the verdict is seen, named and put back."""

import json
import unittest

from kernelpro_torch import callbacks, compare, evaluate, harness, loader, seal  # noqa: F401 (sealed modules)


class SealTest(unittest.TestCase):
    def assert_caught(self, rebind, undo, name):
        s = seal.Seal()
        self.assertIsNone(s.check())
        try:
            rebind()
            found = s.check()
            self.assertIsNotNone(found, f"{name} was rebound unseen")
            self.assertEqual(found[0], "harness_tamper")
            self.assertIn(name, found[1])
            s.restore()
            self.assertIsNone(s.check(), f"{name} was not put back")
        finally:
            undo()
        self.assertIsNone(s.check())

    def test_a_rebound_timer_global_is_caught_and_put_back(self):
        original = harness._elapsed
        self.assert_caught(lambda: setattr(harness, "_elapsed", lambda s, e: 1e-3),
                           lambda: setattr(harness, "_elapsed", original), "kernelpro_torch.harness._elapsed")

    def test_a_rebound_comparison_is_caught(self):
        original = compare.tolerance_for
        self.assert_caught(lambda: setattr(compare, "tolerance_for", lambda *a, **k: (1.0, 1.0, 1.0)),
                           lambda: setattr(compare, "tolerance_for", original), "kernelpro_torch.compare.tolerance_for")

    def test_a_rewritten_function_body_is_caught(self):
        original = harness.core_stop.__code__
        self.assert_caught(lambda: setattr(harness.core_stop, "__code__", (lambda *a: None).__code__),
                           lambda: setattr(harness.core_stop, "__code__", original),
                           "kernelpro_torch.harness.core_stop")

    def test_a_replaced_method_of_a_harness_class_is_caught(self):
        original = callbacks.Callbacks.outputs
        self.assert_caught(lambda: setattr(callbacks.Callbacks, "outputs", lambda self, role: []),
                           lambda: setattr(callbacks.Callbacks, "outputs", original),
                           "kernelpro_torch.callbacks.Callbacks.outputs")

    def test_the_replys_json_encoder_is_caught(self):
        original = json.dumps
        self.assert_caught(lambda: setattr(json, "dumps", lambda *a, **k: "{}"), lambda: setattr(json, "dumps", original),
                           "json.dumps")

    def test_the_harnesss_own_set_up_before_the_seal_is_not_tamper(self):
        loader._library_path = "/tmp/x.so"  # as the evaluation does before the candidate loads
        try:
            s = seal.Seal()
            self.assertIsNone(s.check())
        finally:
            loader._library_path = None


if __name__ == "__main__":
    unittest.main()
