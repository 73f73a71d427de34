#!/usr/bin/env bash
# Builds the Python extension into BUILD_DIR and makes an importable `solar` package from the
# source tree plus that extension, without pip, so several checkouts or build directories can be
# tested side by side:
#   export PYTHONPATH=$(scripts/dev-python.sh build-dev)
#   python3 -m pytest tests/python
# Prints the directory to put on PYTHONPATH (BUILD_DIR/pkg).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(realpath -m "${1:?usage: scripts/dev-python.sh BUILD_DIR}")"
cmake -S "$root" -B "$build" -G Ninja -DSOLAR_BUILD_PYTHON=ON -DSOLAR_BUILD_TESTS=OFF \
  -DSOLAR_WERROR=ON -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" >/dev/null
cmake --build "$build" -j2 --target _core solar >&2
pkg="$build/pkg/solar"
mkdir -p "$pkg"
for f in "$root"/python/solar/*; do ln -sfn "$f" "$pkg/$(basename "$f")"; done
ln -sfn "$(ls "$build"/_core*.so)" "$pkg/$(basename "$(ls "$build"/_core*.so)")"
mkdir -p "$pkg/bin"
ln -sfn "$build/solar" "$pkg/bin/solar"
ln -sfn "$root/data" "$pkg/data"
echo "$build/pkg"
