"""The harness seal (harness_tamper): what a candidate in the worker's interpreter could rebind
to change the timing or the verdict is seen, named and put back."""

import json
import unittest

from kernelpro_torch import compare, evaluate, loader, seal  # noqa: F401 (sealed modules)


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
        original = evaluate._elapsed
        self.assert_caught(lambda: setattr(evaluate, "_elapsed", lambda s, e: 1e-3),
                           lambda: setattr(evaluate, "_elapsed", original), "kernelpro_torch.evaluate._elapsed")

    def test_a_rebound_comparison_is_caught(self):
        original = compare.check_output
        self.assert_caught(lambda: setattr(compare, "check_output", lambda *a, **k: {"passed": True}),
                           lambda: setattr(compare, "check_output", original), "kernelpro_torch.compare.check_output")

    def test_a_rewritten_function_body_is_caught(self):
        original = evaluate.core_stop.__code__
        self.assert_caught(lambda: setattr(evaluate.core_stop, "__code__", (lambda *a: None).__code__),
                           lambda: setattr(evaluate.core_stop, "__code__", original),
                           "kernelpro_torch.evaluate.core_stop")

    def test_a_replaced_method_of_a_harness_class_is_caught(self):
        original = evaluate.Device.prepare_timed_call
        self.assert_caught(lambda: setattr(evaluate.Device, "prepare_timed_call", lambda self: None),
                           lambda: setattr(evaluate.Device, "prepare_timed_call", original),
                           "kernelpro_torch.evaluate.Device.prepare_timed_call")

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
