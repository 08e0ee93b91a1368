"""run_tests.py's exit code: a group whose every case skipped is a skip for CTest, not a pass."""

import contextlib
import io
import unittest

import run_tests


def run(names):
    class Case(unittest.TestCase):  # made here, so that discovery does not run it as a test
        def test_passes(self):
            pass

        def test_skips(self):
            self.skipTest("no GPU here")

        def test_fails(self):
            self.fail("wrong")

    suite = unittest.TestSuite([Case(n) for n in names])
    result = unittest.TextTestRunner(stream=io.StringIO()).run(suite)
    with contextlib.redirect_stdout(io.StringIO()):
        return run_tests.verdict(result)


class VerdictTest(unittest.TestCase):
    def test_all_skipped_is_a_skip_some_skipped_a_pass_any_failure_a_failure(self):
        self.assertEqual(run(["test_skips", "test_skips"]), 77)
        self.assertEqual(run([]), 77)
        self.assertEqual(run(["test_passes", "test_skips"]), 0)
        self.assertEqual(run(["test_passes", "test_fails"]), 1)
        self.assertEqual(run(["test_passes"]), 0)


if __name__ == "__main__":
    unittest.main()
