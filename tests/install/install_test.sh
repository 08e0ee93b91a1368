#!/usr/bin/env bash
# The installed kernelpro (e2e tier, CTest install_and_package): `cmake --install` into a temporary
# prefix, then from there `kernelpro doctor` (it must read its files from PREFIX/share/kernelpro,
# not the source tree) and `kernelpro build` of the installed gelu example; `cpack` makes the .deb,
# whose contents are checked; `pip install ./python` installs kernelpro_torch, which imports.
# Usage: tests/install/install_test.sh BUILD_DIR   (from the repository root)
# Exit 0: passed; 1: failed; 77: skipped (no nvcc).
set -uo pipefail
BUILD=$(cd "${1:-build}" && pwd)
failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
command -v nvcc >/dev/null || { echo "SKIPPED: nvcc not found"; exit 77; }
tmp=$(mktemp -d /tmp/kp-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

prefix=$tmp/prefix
if cmake --install "$BUILD" --prefix "$prefix" --strip > "$tmp/install.log" 2>&1; then
  pass "cmake --install into $prefix"
else
  fail "cmake --install: $(tail -5 "$tmp/install.log")"; exit 1
fi
for f in bin/kernelpro lib/kernelpro/kp-worker lib/kernelpro/libkp_trace.so lib/kernelpro/libkp_rangeprof.so \
         share/kernelpro/prompts/planner.md share/kernelpro/rules share/kernelpro/include/kernelpro/kp_abi.h \
         share/kernelpro/examples/gelu/task.toml share/kernelpro/python/kernelpro_torch/worker.py; do
  [ -e "$prefix/$f" ] || fail "the install lacks $f"
done
doctor=$(cd "$tmp" && "$prefix/bin/kernelpro" doctor 2>&1)
if grep -q "files .*$prefix/share/kernelpro" <<<"$doctor"; then
  pass "the installed kernelpro reads its files from $prefix/share/kernelpro"
else
  fail "doctor does not name the installed files: $(grep files <<<"$doctor")"
fi
if (cd "$tmp" && XDG_CACHE_HOME=$tmp/cache "$prefix/bin/kernelpro" build "$prefix/share/kernelpro/examples/gelu" --json > "$tmp/build.json" 2>&1) &&
   python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["build"]["kernels"], j' "$tmp/build.json"; then
  pass "the installed kernelpro builds the installed gelu example"
else
  fail "build from the install: $(tail -5 "$tmp/build.json")"
fi

if (cd "$BUILD" && cpack -G DEB -B "$tmp/deb" > "$tmp/cpack.log" 2>&1); then
  deb=$(ls "$tmp"/deb/*.deb 2>/dev/null | head -1)
  contents=$(dpkg-deb -c "$deb" 2>&1)
  if grep -q "./usr/lib/kernelpro/kp-worker" <<<"$contents" && grep -q "./usr/bin/kernelpro" <<<"$contents" &&
     grep -q "./usr/share/kernelpro/prompts/planner.md" <<<"$contents"; then
    pass "cpack made $(basename "$deb") ($(du -h "$deb" | cut -f1)) with the binaries, the link and the files"
  else
    fail "the .deb lacks files: $(head -20 <<<"$contents")"
  fi
  dpkg-deb -f "$deb" Depends | grep -q libsqlite3 && pass "the .deb depends on $(dpkg-deb -f "$deb" Depends)" ||
    fail "the .deb's Depends: $(dpkg-deb -f "$deb" Depends)"
else
  fail "cpack: $(tail -5 "$tmp/cpack.log")"
fi

src=$(cd "$(dirname "$0")/../.." && pwd)
cp -r "$src/python" "$tmp/python-src"  # pip writes build/ and .egg-info beside the sources
if PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
     --target "$tmp/site" "$tmp/python-src" > "$tmp/pip.log" 2>&1 &&
   (cd "$tmp" && PYTHONPATH=$tmp/site python3 -c 'import kernelpro_torch, kernelpro_torch.worker; print(kernelpro_torch.__file__)' | grep -q "$tmp/site"); then
  pass "pip installs kernelpro_torch from the checkout and it imports"
else
  fail "pip install ./python: $(tail -5 "$tmp/pip.log")"
fi
echo "install_test: $failures failure(s)"
[ "$failures" -eq 0 ]
