"""Runs one group of kernelpro_torch's tests; CTest registers each group.

  run_tests.py plain   no torch needed (protocol, loader signatures, static checks)
  run_tests.py torch   needs torch (CPU is enough): namespaces, dtypes, guards, output checks
  run_tests.py gpu     needs torch with a CUDA device: the KernelBench anti-cheat suite

Exit code 77 (CTest's SKIP_RETURN_CODE) when the group's requirement is missing, with the reason.
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

GROUPS = {"plain": "test_plain*.py", "torch": "test_torch*.py", "gpu": "test_gpu*.py"}


def main():
    group = sys.argv[1] if len(sys.argv) > 1 else "plain"
    if group not in GROUPS:
        print(f"unknown group {group}; one of {', '.join(GROUPS)}")
        return 2
    if group in ("torch", "gpu"):
        try:
            import torch
        except ImportError:
            print(f"SKIPPED: torch is not importable by {sys.executable} (PyPI has no CPU-only torch, and CI does not "
                  "install the 3 GB CUDA build); these tests run where torch is, e.g. the GPU machine")
            return 77
        if group == "gpu" and not torch.cuda.is_available():
            print("SKIPPED: no CUDA device visible to PyTorch; run on the GPU machine")
            return 77
    suite = unittest.defaultTestLoader.discover(HERE, pattern=GROUPS[group], top_level_dir=HERE)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return verdict(result)


def verdict(result):
    """The exit code CTest reads: 1 on any failure; 77 (skipped) when every case skipped, so a
    group that tested nothing does not show as passed; 0 otherwise, with every skipped case and
    its reason listed last, where the log's reader looks."""
    if not result.wasSuccessful():
        return 1
    for case, reason in result.skipped:
        print(f"SKIPPED {case.id()}: {reason}")
    if result.skipped:
        print(f"{len(result.skipped)} of {result.testsRun} cases skipped")
    if result.testsRun == 0 or len(result.skipped) == result.testsRun:
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
