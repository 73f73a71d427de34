#!/usr/bin/env bash
# THE test command (README "Quick start", and .ci/run): installs what the tests need, builds, and
# runs every test and linter. Exits non-zero at the first failure. About 10 minutes on 2 cores.
#
#   1. Debian packages (scripts/install-deps.sh)
#   2. the Python package with its test extras, into the current Python: pip install ".[test]"
#   3. C++ core and tests with warnings as errors (build/ci), then ctest
#   4. pytest (tests/python)
#   5. ruff check + ruff format --check (python/, tests/); clang-format and clang-tidy on the C++
#      (scripts/lint-cpp.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-2}
step() { printf '\n==> %s\n' "$*"; }

step "Debian packages"
bash scripts/install-deps.sh

step "Python package: pip install .[test]"
# SOLAR_WERROR: the bindings compile with warnings as errors here too.
"$PYTHON" -m pip install --quiet --disable-pip-version-check \
  --config-settings=cmake.define.SOLAR_WERROR=ON ".[test]"

step "C++ build (build/ci, -Werror)"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build/ci "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSOLAR_BUILD_TESTS=ON \
  -DSOLAR_WERROR=ON -DPython_EXECUTABLE="$(command -v "$PYTHON")"
cmake --build build/ci -j "$JOBS"

step "C++ tests (ctest)"
ctest --test-dir build/ci --output-on-failure -j "$JOBS"

step "Python tests (pytest)"
"$PYTHON" -m pytest -q

step "Lint: ruff"
"$PYTHON" -m ruff check python tests
"$PYTHON" -m ruff format --check python tests

step "Lint: clang-format, clang-tidy"
bash scripts/lint-cpp.sh build/ci

step "All tests passed"
