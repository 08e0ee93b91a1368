#!/usr/bin/env python3
"""Scores the flaw suite from run.sh's results.jsonl.

For each tool named by some flaw's expected.toml:
  recall     whether it fired on its own flaw's flawed.cu (1/1 or 0/1)
  precision  of the runs it fired on, the share that were its own flaw's flawed.cu; it must stay
             quiet on the fixed twins and on every other flaw's variants.
The same for ncu: a flaw counts as named by ncu when any of its expected ncu_rules fired on the
flawed variant and none of them on the fixed twin. Flaws with an empty ncu_rules (ncu has no rule
for them) count as not named by ncu.
"Named correctly" (kernelpro): the expected tool fires on flawed.cu and not on fixed.cu.
A fixed twin that is, by construction, another flaw's flawed kernel says so in its
expected.toml: fixed_carries = ["hopper_path_unused"] (13's fixed WMMA GEMM is 14's flawed.cu,
the same source). That tool firing there is neither a false nor a true positive: it is listed
as "(carried)" and left out of its precision.

Usage: score.py RESULTS.jsonl [--flaws-dir bench/flaws]
"""
import argparse
import json
import os
import re
import sys


def read_expected(flaws_dir):
    out = {}
    for name in sorted(os.listdir(flaws_dir)):
        path = os.path.join(flaws_dir, name, "expected.toml")
        if not os.path.isfile(path):
            continue
        text = open(path).read()
        tool = re.search(r'^flaw\s*=\s*"([^"]+)"', text, re.M)
        rules = re.search(r"^ncu_rules\s*=\s*\[([^\]]*)\]", text, re.M)
        carries = re.search(r"^fixed_carries\s*=\s*\[([^\]]*)\]", text, re.M)
        out[name] = {
            "tool": tool.group(1) if tool else "",
            "ncu_rules": re.findall(r'"([^"]+)"', rules.group(1)) if rules else [],
            "fixed_carries": re.findall(r'"([^"]+)"', carries.group(1)) if carries else [],
        }
    return out


def read_results(path):
    runs = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        j = json.loads(line)
        runs[(j["flaw"], j["variant"])] = j  # a later line for the same pair wins
    return runs


def score(expected, runs, out=sys.stdout):
    flaws = [f for f in expected if (f, "flawed") in runs and (f, "fixed") in runs]
    missing = sorted(set(expected) - set(flaws))
    tools = sorted({expected[f]["tool"] for f in flaws})
    p = lambda *a: print(*a, file=out)
    p(f"{len(flaws)} flaws with both variants run" + (f"; missing: {', '.join(missing)}" if missing else ""))
    p("")
    p(f"{'tool':22} {'recall':>6} {'precision':>9}  fired on (other than its flaw)")
    kp_named = 0
    per_tool = {}
    for tool in tools:
        own = [f for f in flaws if expected[f]["tool"] == tool]
        hits = sum(tool in runs[(f, "flawed")].get("kp_tools", []) for f in own)
        fired = [(f, v) for (f, v), r in runs.items() if f in flaws and tool in r.get("kp_tools", [])]
        carried = [(f, v) for f, v in fired if v == "fixed" and tool in expected[f]["fixed_carries"]]
        fired = [x for x in fired if x not in carried]
        true_pos = [(f, v) for f, v in fired if v == "flawed" and expected[f]["tool"] == tool]
        false_pos = [f"{f}/{v}" for f, v in fired if (f, v) not in true_pos]
        false_pos += [f"({f}/{v} carried)" for f, v in carried]
        precision = f"{len(true_pos)}/{len(fired)}" if fired else "-"
        per_tool[tool] = (hits, len(own), len(true_pos), len(fired))
        p(f"{tool:22} {hits}/{len(own):<4} {precision:>9}  {', '.join(false_pos)}")
    for f in flaws:
        tool = expected[f]["tool"]
        if tool in runs[(f, "flawed")].get("kp_tools", []) and tool not in runs[(f, "fixed")].get("kp_tools", []):
            kp_named += 1

    p("")
    rules = sorted({r for f in flaws for r in expected[f]["ncu_rules"]})
    p(f"{'ncu rule':26} {'recall':>6} {'precision':>9}  fired on (not expecting it)")
    for rule in rules:
        own = [f for f in flaws if rule in expected[f]["ncu_rules"]]
        hits = sum(rule in runs[(f, "flawed")].get("ncu_rules", []) for f in own)
        fired = [(f, v) for (f, v), r in runs.items() if f in flaws and rule in r.get("ncu_rules", [])]
        true_pos = [(f, v) for f, v in fired if v == "flawed" and rule in expected[f]["ncu_rules"]]
        false_pos = [f"{f}/{v}" for f, v in fired if (f, v) not in true_pos]
        precision = f"{len(true_pos)}/{len(fired)}" if fired else "-"
        p(f"{rule:26} {hits}/{len(own):<4} {precision:>9}  {', '.join(false_pos)}")
    ncu_named = 0
    for f in flaws:
        want = set(expected[f]["ncu_rules"])
        on_flawed = want & set(runs[(f, "flawed")].get("ncu_rules", []))
        on_fixed = want & set(runs[(f, "fixed")].get("ncu_rules", []))
        if on_flawed and not on_fixed:
            ncu_named += 1
    p("")
    hits = sum(h for h, _, _, _ in per_tool.values())
    owns = sum(n for _, n, _, _ in per_tool.values())
    tps = sum(t for _, _, t, _ in per_tool.values())
    fires = sum(f for _, _, _, f in per_tool.values())
    pct = lambda a, b: f"{100 * a / b:.0f}%" if b else "-"
    p(f"kernelpro over all tools: recall {hits}/{owns} ({pct(hits, owns)}), precision {tps}/{fires} ({pct(tps, fires)})")
    p(f"flaws named correctly: kernelpro {kp_named}/{len(flaws)}, ncu {ncu_named}/{len(flaws)}")
    return {"kernelpro": kp_named, "ncu": ncu_named, "flaws": len(flaws), "tools": per_tool}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--flaws-dir", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args()
    score(read_expected(a.flaws_dir), read_results(a.results))


if __name__ == "__main__":
    main()
