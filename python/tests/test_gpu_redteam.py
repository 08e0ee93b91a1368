"""The red-team rounds on the KernelBench path, on a real GPU: every row of
tests/data/kernelbench/redteam*.tsv (each written by a reader with no stake in the judge: round 41
against the judge before the judge core, round 42 against the core) through the current worker.

A cheat passes this test when it is caught (any outcome but ok), or when it is accepted but gains
nothing: its median is no faster than 0.9 x the honest twin's on the same problem, and where the
energy window ran, its joules per call no lower than 0.9 x the twin's (the trick
found nothing to exploit, and what was timed is real work). An honest row must be ok. An `open`
row is a cheat the judge does not catch yet (issue 41's closing note says which class and why):
it must still be accepted with a gain, so that the day it is caught this test fails and the row
moves to `cheat`. Prints
one line per row, `RT kind candidate: outcome [cheat] median (twin) energy (twin) reason`, the table
the closing note quotes. Run directly (python3 python/tests/test_gpu_redteam.py) or through
run_tests.py gpu."""

import glob
import json
import os
import statistics
import sys
import unittest

import test_gpu_anticheat as ac

# Every red-team round's table (redteam41.tsv, redteam42.tsv, ...).
MANIFESTS = sorted(glob.glob(os.path.join(ac.KB, "redteam*.tsv")))
# The honest twin each problem's medians are held to.
TWINS = {"relu.py": ("honest/relu_fast.py", "honest/relu_fast.cu"),
         "gemm.py": ("honest/gemm_fast.py", "honest/gemm_fast.cu"),
         "softmax_wide.py": ("honest/softmax_fast.py", "honest/softmax_fast.cu")}


def rows():
    out = []
    for manifest in MANIFESTS:
        with open(manifest) as f:
            header = f.readline().rstrip("\n").split("\t")
            out += [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f if line.strip()]
    return out


def median_us(report):
    samples = report.get("timing", {}).get("samples_s", [])
    return statistics.median(samples) * 1e6 if samples else 0.0


def joules(report):
    """Joules per call when the energy window measured them, else 0."""
    e = report.get("energy") or {}
    return float(e.get("joules_per_call", 0.0)) if e.get("measured") else 0.0


class RedTeam(unittest.TestCase):
    def test_every_cheat_is_caught_or_gains_nothing_and_every_honest_row_passes(self):
        twins, failures = {}, []
        for row in rows():
            cand = row["candidate"]
            if not ac.selected(cand):
                continue
            lib = None if row["library"] in ("", "-") else row["library"]
            extra = json.loads(row["options"] or "{}")
            r, _ = ac.run(row["problem"], cand, lib, extra)
            med, j = median_us(r), joules(r)
            twin_us, twin_j = 0.0, 0.0
            if row["problem"] in TWINS:
                key = (row["problem"], json.dumps(extra, sort_keys=True))
                if key not in twins:
                    t, _ = ac.run(row["problem"], *TWINS[row["problem"]], extra)
                    twins[key] = (median_us(t), joules(t)) if t["outcome"] == "ok" else (0.0, 0.0)
                twin_us, twin_j = twins[key]
            ac.log(f"RT {row['kind']} {cand}: {r['outcome']} [{r['cheat']}] median {med:.1f} us (twin {twin_us:.1f} us)"
                   f" energy {j:.4g} J (twin {twin_j:.4g} J) {r['reason'][:300]!r}")
            # A gain in time, or in energy where the window measured both.
            gained = r["outcome"] == "ok" and (twin_us <= 0 or med < 0.9 * twin_us or
                                                (j > 0 and twin_j > 0 and j < 0.9 * twin_j))
            if row["kind"] == "honest":
                if r["outcome"] != "ok":
                    failures.append(f"honest {cand} rejected: {r['outcome']} [{r['cheat']}] {r['reason'][:300]}")
            elif row["kind"] == "open":
                if not gained:
                    failures.append(f"open {cand} is no longer accepted with a gain ({r['outcome']} [{r['cheat']}], "
                                    f"{med:.1f} us against {twin_us:.1f} us): make its row a cheat")
            elif gained:
                failures.append(f"cheat {cand} accepted at {med:.1f} us against the twin's {twin_us:.1f} us "
                                f"(expected {row['expected_cheat']})")
        self.assertEqual(failures, [], "\n".join(failures))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    unittest.main()
