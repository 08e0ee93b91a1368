#!/usr/bin/env python3
"""The campaign report's page in a real browser (e2e tier, CTest html_report_in_chromium).

Usage: html_report_chromium_test.py KERNELPRO CAMPAIGN OUT_DIR

Copies the recorded CAMPAIGN (a committed campaign folder) to a temporary folder, writes its page
with `kernelpro bench report --html`, loads it in headless Chromium and checks what Chromium
built: the summary and problem tables (one row per problem of campaign.json), every plot (a
speedup histogram per group, the per-problem bars, the roofline, one search tree per problem that
has nodes), no console message, no network request. Keeps OUT_DIR/report.html and a screenshot,
OUT_DIR/report.png. Exit 0 on pass, 1 on a failure, 77 (skipped) without Chromium.
"""
import html.parser
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Dom(html.parser.HTMLParser):
    """Counts what the checks need from the DOM Chromium dumped."""

    def __init__(self):
        super().__init__()
        self.tables = {}  # id -> rows
        self.svg_classes = []
        self.scripts = 0
        self.external = []  # src/href values that would leave the file
        self._table = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = 0
        elif tag == "tr" and self._table is not None:
            self.tables[self._table] += 1
        elif tag == "svg":
            self.svg_classes.append(a.get("class", ""))
        elif tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            v = a.get(key, "")
            if v and not v.startswith("#"):
                self.external.append(v)

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    kernelpro, campaign, out = sys.argv[1:]
    chromium = find_chromium()
    if not chromium:
        print("SKIPPED: no Chromium (Debian's chromium; scripts/test.sh installs it)")
        return 77
    os.makedirs(out, exist_ok=True)
    failures = []

    def check(ok, what):
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="kp-html-") as tmp:
        copy = os.path.join(tmp, os.path.basename(os.path.normpath(campaign)))
        shutil.copytree(campaign, copy)
        spec = json.load(open(os.path.join(copy, "campaign.json")))
        problems = spec["problems"]
        with_nodes = 0
        for p in problems:
            db = os.path.join(copy, "runs", p["id"].replace("/", "-"), "store.db")
            if os.path.exists(db):
                with sqlite3.connect(db) as c:
                    with_nodes += c.execute("SELECT COUNT(*) FROM nodes").fetchone()[0] > 0
        page = os.path.join(out, "report.html")
        r = subprocess.run([kernelpro, "bench", "report", copy, "--html", page, "--json"], capture_output=True, text=True)
        check(r.returncode == 0, "kernelpro bench report exits 0 (%s)" % r.stderr.strip()[-300:])
        if r.returncode != 0:
            return 1
        groups = json.loads(r.stdout)["groups"]
        profile = os.path.join(tmp, "profile")
        base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"]
        url = "file://" + os.path.abspath(page)
        dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
        check(dom.returncode == 0 and "<html" in dom.stdout, "Chromium loads the page")
        console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
        check(not console, "no console message: %s" % console[:3])
        d = Dom()
        d.feed(dom.stdout)
        check(d.tables.get("summary", 0) == 1 + len(groups), "the summary table has a row per group (%s)" % d.tables)
        check(d.tables.get("problems", 0) == 1 + len(problems),
              "the problems table has a row per problem: %d of %d" % (d.tables.get("problems", 0) - 1, len(problems)))
        kinds = [c.split()[-1] for c in d.svg_classes]
        level_groups = [g for g in groups if g["group"] != "all"]
        check(kinds.count("hist") == len(level_groups), "a speedup histogram per group: %s" % kinds)
        check(kinds.count("bars") == 1, "the per-problem bars")
        check(kinds.count("roofline") == 1, "the roofline")
        check(kinds.count("tree") == with_nodes, "a search tree per problem with nodes: %d of %d" % (kinds.count("tree"), with_nodes))
        check(d.scripts == 0, "no script")
        check(not d.external, "nothing loaded from outside the file: %s" % d.external[:3])
        shot = os.path.join(out, "report.png")
        s = subprocess.run(base + ["--window-size=1280,4000", "--screenshot=" + shot, url], capture_output=True,
                           text=True, timeout=120)
        check(s.returncode == 0 and os.path.exists(shot) and os.path.getsize(shot) > 10000,
              "a screenshot, kept in %s" % shot)
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
