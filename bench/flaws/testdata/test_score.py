#!/usr/bin/env python3
"""Checks score.py on the hand-written sample: python3 bench/flaws/testdata/test_score.py"""
import io
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
import score  # noqa: E402

expected = score.read_expected(os.path.join(here, "flaws"))
assert expected["02_b"] == {"tool": "register_spills", "ncu_rules": []}, expected
buf = io.StringIO()
s = score.score(expected, score.read_results(os.path.join(here, "results.jsonl")), out=buf)
text = buf.getvalue()
# 01_a named by both; 02_b named by kernelpro only (ncu has no rule); 03_c by neither (kernelpro
# fires on the fixed twin only, ncu on both variants).
assert s["kernelpro"] == 2 and s["ncu"] == 1 and s["flaws"] == 3, s
# bank_conflicts: recall 1/1, precision 1/2 (it also fired on 02_b/flawed)
assert s["tools"]["bank_conflicts"] == (1, 1, 1, 2), s["tools"]
assert s["tools"]["small_grid"] == (0, 1, 0, 1), s["tools"]
assert "02_b/flawed" in text and "03_c/fixed" in text, text
assert "flaws named correctly: kernelpro 2/3, ncu 1/3" in text, text
print("ok")
