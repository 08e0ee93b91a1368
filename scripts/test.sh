#!/usr/bin/env bash
# Installs, builds and runs every test tier. Tiers that cannot run here (gpu without a GPU)
# report "skipped" with the reason, never "passed". Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
KP_TEST_TOOLS=1 bash scripts/setup.sh
export PATH="$PATH:/usr/local/cuda/bin"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900 "$@"
