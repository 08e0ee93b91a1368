"""The table of bench/throughput.sh from its results.jsonl: per row the two builds' figures, the
ratio, and where the time went (the worker's phases for an evaluation, the loop's split for
optimize)."""
import json
import sys


def load(path):
    rows = {}
    for line in open(path):
        r = json.loads(line)
        rows.setdefault(r["row"], {})[r["build"]] = r
    return rows


def phases(r):
    j = r["result"]
    if "worker" in j:
        p = dict(j["worker"].get("phase_seconds", {}))
        s = j.get("seconds", {})
        for k in ("build", "worker_start"):
            if k in s:
                p[k] = s[k]
        timing = j["worker"].get("timing") or {}
        extra = f"; {len(timing.get('samples_s', []))} timed samples"
        if timing.get("stop"):
            extra += f", stop: {timing['stop']} (median +-{100 * timing.get('median_ci_rel', 0):.2f}%)"
        return " ".join(f"{k} {v:.2f}" for k, v in p.items()) + extra
    if "time_s" in j:
        t = dict(j["time_s"])
        parts = t.pop("analyze_parts", {})
        text = " ".join(f"{k} {v:.1f}" for k, v in t.items())
        if parts:
            text += " (analyze: " + " ".join(f"{k} {v:.2f}" for k, v in parts.items()) + ")"
        return text
    return j.get("error", "")


def figure(name, r):
    """(text, number to compare; higher is better for per-minute rows)"""
    j = r["result"]
    if name == "tuner":
        n = j.get("evaluated", 0)
        wall = j.get("time_s", {}).get("wall", r["wall_s"]) or r["wall_s"]
        rate = n / (wall / 60) if wall else 0
        return f"{n} candidates in {wall:.1f} s: {rate:.1f} per GPU-minute", rate
    if name.startswith("model"):
        t = j.get("time_s", {})
        worker, analyze = t.get("worker", 0), t.get("analyze", 0)
        ratio = (worker + analyze) / worker if worker else 0
        return f"evaluation {worker:.1f} s + analysis {analyze:.1f} s = {ratio:.2f}x the evaluation alone", ratio
    outcome = j.get("outcome", "?")
    med = j.get("time", {}).get("median_s", 0)
    return f"{r['wall_s']:.1f} s wall ({outcome}, median {med * 1e3:.4g} ms, {j.get('speedup_vs_reference', 0):.2f}x ref)", r["wall_s"]


def main():
    rows = load(sys.argv[1])
    print("| row | before | after | after / before |")
    print("|---|---|---|---|")
    for name, builds in rows.items():
        cells, nums = [], []
        for b in ("before", "after"):
            if b in builds:
                text, num = figure(name, builds[b])
                cells.append(text)
                nums.append(num)
            else:
                cells.append("-")
                nums.append(None)
        ratio = f"{nums[1] / nums[0]:.2f}x" if all(nums) else "-"
        print(f"| {name} | {cells[0]} | {cells[1]} | {ratio} |")
    print()
    print("Where the time went (seconds):")
    print()
    for name, builds in rows.items():
        for b in ("before", "after"):
            if b in builds:
                print(f"- {name}, {b}: {phases(builds[b])}")


if __name__ == "__main__":
    main()
