#!/usr/bin/env python3
"""Scores the flaw suite again, without a GPU, from the evidence run.sh saved on the GPU.

For every OUT/evidence/FLAW-VARIANT.json, `kernelpro analyze --evidence FILE --json` (the
current tools and rule files, on the recorded counters, SASS and trace); the ncu rules are the
ones run.sh recorded for the same pair in OUT/results.jsonl. Writes OUT/replay.jsonl in
results.jsonl's format, then prints score.py's table for it.

Usage: replay.py OUT [--kernelpro build/kernelpro] [--out FILE]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="run.sh's output folder (results.jsonl and evidence/)")
    ap.add_argument("--kernelpro", default="build/kernelpro")
    ap.add_argument("--flaws-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--result", help="where to write the replayed results (default OUT/replay.jsonl)")
    args = ap.parse_args()
    evidence_dir = os.path.join(args.out, "evidence")
    if not os.path.isdir(evidence_dir):
        sys.exit(f"replay.py: {evidence_dir} does not exist: run bench/flaws/run.sh on a GPU first")
    recorded = score.read_results(os.path.join(args.out, "results.jsonl"))
    rows = []
    for name in sorted(os.listdir(evidence_dir)):
        if not name.endswith(".json"):
            continue
        flaw, variant = name[:-5].rsplit("-", 1)
        p = subprocess.run([args.kernelpro, "analyze", "--evidence", os.path.join(evidence_dir, name), "--json"],
                           capture_output=True, text=True)
        row = {"flaw": flaw, "variant": variant, "kp_rc": p.returncode}
        if p.returncode == 0:
            j = json.loads(p.stdout)
            row["kp_tools"] = sorted({f.get("tool") for f in j.get("findings", []) if f.get("tool")})
        else:
            row["kp_error"] = p.stderr.strip()[-400:]
        rec = recorded.get((flaw, variant), {})
        for key in ("ncu_rules", "ncu_rc", "expected"):
            if key in rec:
                row[key] = rec[key]
        rows.append(row)
    result = args.result or os.path.join(args.out, "replay.jsonl")
    with open(result, "w") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    expected = score.read_expected(args.flaws_dir)
    score.score(expected, score.read_results(result))
    return 0


if __name__ == "__main__":
    sys.exit(main() or 0)
