#!/usr/bin/env bash
# C++ lint, warnings as errors (run by scripts/test.sh):
#   clang-format (.clang-format) on every C++ file of the repository, and
#   clang-tidy (.clang-tidy: naming and a few bug checks) on every .cpp file of a CMake build's
#   compile_commands.json (default build dir: build/ci).
# Usage: scripts/lint-cpp.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}

# The project's C++ directories only: a virtual environment made inside the clone (python3 -m
# venv .v) holds C++ headers of its packages that are not the project's.
dirs=(bench include python src tests)
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
  "${dirs[@]/%//*.cpp}" "${dirs[@]/%//*.h}")
clang-format --dry-run -Werror "${files[@]}"

# -Wno-unknown-warning-option: the build's GCC-only flags (e.g. -Wno-restrict) mean nothing to
# clang. Output is kept only when something is wrong.
log=$(mktemp)
if ! run-clang-tidy -p "$build" -quiet -j "${JOBS:-2}" \
    -extra-arg=-Wno-unknown-warning-option "$PWD/(src|tests)/.*\.cpp$" >"$log" 2>&1; then
  # run-clang-tidy always colours its output: strip the escapes, and the progress lines.
  sed 's/\x1b\[[0-9;]*m//g' "$log" |
    grep -v '^clang-tidy\|^Running clang-tidy\|warnings\? generated\|^Suppressed\|-header-filter' ||
    true
  rm -f "$log"
  echo "clang-tidy: failed" >&2
  exit 1
fi
rm -f "$log"
echo "clang-format and clang-tidy: clean"
