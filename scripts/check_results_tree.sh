#!/usr/bin/env bash
# bench/results holds evidence, not run folders: each result folder keeps its README.md (the
# command, the card, the table), the JSON results, the report, the logs its README cites and the
# few kernels a reader needs. A run's store database and its candidates/ stay out of the tree
# (git history keeps what was committed before). Exits 1 naming each offending path.
# Usage: scripts/check_results_tree.sh [REPO_ROOT]   (default: this script's repository)
set -uo pipefail
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
R=$ROOT/bench/results
if [ ! -d "$R" ]; then
  echo "check_results_tree: $R does not exist; nothing to check"
  exit 0
fi
bad=0
complain() {
  echo "check_results_tree: ${1#"$ROOT"/}: $2"
  bad=$((bad + 1))
}
while IFS= read -r -d '' f; do
  complain "$f" "a database file (a run's store); remove it (git rm), the README's tables are the evidence"
done < <(find "$R" \( -type f -o -type l \) \( -name 'store.db*' -o -name '*.db' -o -name '*.db-*' \
                                              -o -name '*.sqlite' -o -name '*.sqlite3' \) -print0 | sort -z)
while IFS= read -r -d '' d; do
  complain "$d" "a candidates/ folder; remove it (git rm -r), keep only the kernels the README names (best.cu, best.py, the seed)"
done < <(find "$R" -type d -name candidates -prune -print0 | sort -z)
while IFS= read -r -d '' d; do
  [ -f "$d/README.md" ] || complain "$d" "a result folder without README.md; add one with the command, the card and the table"
done < <(find "$R" -mindepth 1 -maxdepth 1 -type d -print0 | sort -z)
if [ "$bad" -gt 0 ]; then
  echo "check_results_tree: $bad problem(s) in bench/results. A result folder keeps its README.md, the JSON"
  echo "  results, the report, the logs its README cites and the few kernels a reader needs (best.cu,"
  echo "  best.py, the seed); the history keeps the rest (store.db, candidates/, scratch folders)."
  exit 1
fi
echo "check_results_tree: ok ($(find "$R" -mindepth 1 -maxdepth 1 -type d | wc -l) result folders)"
