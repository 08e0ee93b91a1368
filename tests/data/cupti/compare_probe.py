#!/usr/bin/env python3
"""CUPTI (kp_rangeprof_probe output) vs ncu (--csv --page raw --print-units base) per kernel.

usage: compare_probe.py PROBE_TXT NCU_RAW_CSV [NCU_WARM_RAW_CSV]

Kernels are matched by the name before '(' ; the first profiled launch of each name is used on
both sides (the probe's session "pair" for saxpy/strided_read, "cache" for fill_small/read_small,
"one_ms" for fma_chain). Prints one line per kernel and metric: CUPTI, ncu, relative difference,
and '!' where it exceeds 5 %. Standard library only.
"""
import csv
import json
import sys


def short(name):
    return name.split("(")[0].strip()


def probe_ranges(path):
    """{session: result} from the KP_RP_JSON lines."""
    out = {}
    for line in open(path, errors="replace"):
        if line.startswith("KP_RP_JSON "):
            _, session, text = line.rstrip("\n").split(" ", 2)
            out[session] = json.loads(text)
    return out


def ncu_rows(path):
    """[(kernel short name, {metric: float or None})] in launch order."""
    lines = [l for l in open(path, errors="replace") if l.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        return []
    header, body = rows[0], rows[2:]  # rows[1] is the units row
    k = header.index("Kernel Name")
    result = []
    for r in body:
        values = {}
        for h, v in zip(header, r):
            v = v.replace(",", "")
            try:
                values[h] = float(v)
            except ValueError:
                values[h] = None
        result.append((short(r[k]), values))
    return result


def first_by_name(rows):
    seen = {}
    for name, values in rows:
        seen.setdefault(name, values)
    return seen


def main():
    probe = probe_ranges(sys.argv[1])
    ncu = first_by_name(ncu_rows(sys.argv[2]))
    warm = first_by_name(ncu_rows(sys.argv[3])) if len(sys.argv) > 3 else {}
    cupti = {}
    for session in ("pair", "cache", "one_ms"):
        for r in probe.get(session, {}).get("ranges", []):
            cupti.setdefault(short(r["name"]), r["values"])
    if not cupti:
        print("no CUPTI ranges in", sys.argv[1])
        return 1
    for s, res in probe.items():
        print(f"session {s}: passes={res.get('passes')} ranges={len(res.get('ranges', []))} "
              f"launches={res.get('launches')} dropped={res.get('dropped')} timing_s={res.get('timing_s')}")
    worst = 0.0
    for kernel, values in cupti.items():
        print(f"\n{kernel}")
        theirs = ncu.get(kernel, {})
        for metric, mine in values.items():
            ref = theirs.get(metric)
            w = warm.get(kernel, {}).get(metric)
            if mine is None or ref is None:
                print(f"  {metric:72s} cupti={mine} ncu={ref}")
                continue
            rel = abs(mine - ref) / max(abs(ref), 1e-30) if (mine or ref) else 0.0
            flag = "!" if rel > 0.05 and max(abs(mine), abs(ref)) > 1e3 else " "
            worst = max(worst, rel if flag == "!" else 0.0)
            extra = f" ncu_warm={w:.6g}" if w is not None else ""
            print(f" {flag}{metric:72s} cupti={mine:<14.6g} ncu={ref:<14.6g} rel={rel:7.2%}{extra}")
    print(f"\nlargest flagged relative difference: {worst:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
