#!/usr/bin/env bash
# Copies what a campaign's report reads (campaign.json, baselines/, and per problem status.json,
# store.db, best.cu, best.json) from a campaign folder into DEST, each store checkpointed into one
# file, so a finished campaign can be committed as evidence or as a test fixture.
# Usage: scripts/record_campaign_fixture.sh CAMPAIGN DEST
set -euo pipefail
src=$1
dest=$2
[ -f "$src/campaign.json" ] || { echo "$src: no campaign.json" >&2; exit 2; }
mkdir -p "$dest/runs"
cp "$src/campaign.json" "$dest/"
[ -d "$src/baselines" ] && cp -r "$src/baselines" "$dest/"
for run in "$src"/runs/*/; do
  name=$(basename "$run")
  mkdir -p "$dest/runs/$name"
  for f in status.json best.cu best.py best.json; do [ -f "$run/$f" ] && cp "$run/$f" "$dest/runs/$name/"; done
  if [ -f "$run/store.db" ]; then
    python3 - "$run/store.db" "$dest/runs/$name/store.db" <<'PY'
import sqlite3, sys
src = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.execute("PRAGMA journal_mode=DELETE")
dst.close()
PY
  fi
done
echo "recorded $(ls "$dest/runs" | wc -l) run(s) into $dest"
