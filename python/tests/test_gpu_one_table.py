"""One table of checks, both workers (issue 41): each row of tests/data/judge_table.tsv names a
class and one candidate of it for each worker, a native kernel judged by kp-worker (through
`kernelpro eval`, as a user runs it) and a KernelBench candidate judged by the KernelBench worker.
Both go through the one judge core; the test fails when either misses its class or when the two
name different classes for the same trick. Needs a GPU and the built `kernelpro` (KP_KERNELPRO,
else build/kernelpro); without the binary the native half is skipped and says so."""

import json
import os
import subprocess
import unittest

import test_gpu_anticheat as kb

ROOT = kb.ROOT
DATA = os.path.join(ROOT, "tests", "data")
TABLE = os.path.join(DATA, "judge_table.tsv")
KERNELPRO = os.environ.get("KP_KERNELPRO", os.path.join(ROOT, "build", "kernelpro"))


def rows():
    with open(TABLE) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if line.strip():
                yield dict(zip(header, line.rstrip("\n").split("\t")))


def native(row):
    """kernelpro eval on the row's native task and candidate: (outcome, cheat, reason)."""
    cmd = [KERNELPRO, "eval", os.path.join(ROOT, "examples", row["native_task"])]
    if row["native_candidate"] != "seed":
        cmd.append(os.path.join(DATA, row["native_candidate"]))
    p = subprocess.run(cmd + ["--json", "--no-energy"], capture_output=True, text=True, timeout=300)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        return "no JSON", "", (p.stderr or p.stdout)[-400:]
    return j.get("outcome", ""), j.get("cheat", ""), str(j.get("reason", ""))


def kernelbench(row):
    lib = row["kb_library"] if row["kb_library"] != "-" else None
    r, _ = kb.run(row["kb_problem"], row["kb_candidate"], lib, json.loads(row["kb_options"]))
    return r["outcome"], r["cheat"], r["reason"]


class OneTableTest(unittest.TestCase):
    def test_both_workers_name_each_class_alike(self):
        have_native = os.access(KERNELPRO, os.X_OK)
        if not have_native:
            kb.log(f"ONE TABLE: {KERNELPRO} is missing: the native half is skipped (build kernelpro, or name it in "
                   "KP_KERNELPRO)")
        wrong = []
        for row in rows():
            if not (kb.selected(row["kb_candidate"]) or kb.selected(row["native_candidate"])):
                continue  # KP_ONLY names other candidates
            want = "" if row["class"] == "ok" else row["class"]
            got = {}
            if have_native:
                got["native"] = native(row) + (row["native_outcomes"],)
            got["kernelbench"] = kernelbench(row) + (row["kb_outcomes"],)
            for side, (outcome, cheat, reason, outcomes) in got.items():
                kb.log(f"ONE TABLE {row['class']} {side}: {outcome} [{cheat}] {reason[:200]}")
                if outcome not in outcomes.split(",") or cheat != want:
                    wrong.append(f"{row['class']}: {side} said {outcome} [{cheat}] {reason[:300]}")
            classes = {side: v[1] for side, v in got.items()}
            if len(set(classes.values())) > 1:
                wrong.append(f"{row['class']}: the workers disagree: {classes}")
        self.assertEqual(wrong, [])


if __name__ == "__main__":
    unittest.main()
