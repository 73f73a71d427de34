#!/usr/bin/env bash
# THE test command (README "Quick start", and .ci/run): installs what the tests need, builds, and
# runs every test and linter. Exits non-zero at the first failure. On 2 idle cores: about 20
# minutes from a fresh clone in a new venv (the first C++ build is about 5 of them), less with
# build/ci built.
#
#   --slow: also the tests marked slow (full-size models whose outputs the docs show; pytest's
#           marker `slow`, deselected by default in pyproject.toml)
#
#   1. Debian packages (scripts/install-deps.sh)
#   2. the Python package with its test extras, into the current Python: pip install ".[test]"
#   3. C++ core and tests with warnings as errors (build/ci), then ctest
#   4. pytest (tests/python)
#   5. rule coverage: every lowering rule was executed by a test of steps 3 and 4, or is waived by
#      name in tests/frontend/rule_waivers.txt. The lowering appends each rule it fires to the
#      file SOLAR_RULE_LOG names (build/ci/rule_log.txt, emptied here first); the gtest
#      RuleCoverage.EveryRuleIsExecutedOrWaived reads it (docs/testing.md)
#   6. ruff check + ruff format --check (python/, tests/); clang-format and clang-tidy on the C++
#      (scripts/lint-cpp.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
markers=()
for arg in "$@"; do
  case $arg in
    --slow) markers=(-m "slow or not slow") ;;
    *) echo "scripts/test.sh: unknown argument '$arg' (usage: scripts/test.sh [--slow])" >&2; exit 2 ;;
  esac
done
JOBS=${JOBS:-2}
step() { printf '\n==> %s\n' "$*"; }

step "Debian packages"
bash scripts/install-deps.sh

step "Python package: pip install .[test]"
# One build for both: the package's build directory is build/ci, with the C++ tests and the solar
# executable in it (SOLAR_BUILD_TESTS), so step 3 finds it built. Without build isolation, so that
# the build directory's paths (nanobind, the compiler) outlive pip; the build requirements of
# pyproject.toml are installed first. SOLAR_WERROR: warnings are errors here too.
"$PYTHON" -m pip install --quiet --disable-pip-version-check "scikit-build-core>=0.10" \
  "nanobind>=2.4" cmake ninja
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
  --config-settings=build-dir=build/ci --config-settings=cmake.define.SOLAR_WERROR=ON \
  --config-settings=cmake.define.SOLAR_BUILD_TESTS=ON ".[test]"

step "C++ build (build/ci, -Werror)"
if [ ! -f build/ci/CMakeCache.txt ]; then  # not configured by step 2 (a build without pip)
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B build/ci "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSOLAR_BUILD_TESTS=ON \
    -DSOLAR_WERROR=ON -DPython_EXECUTABLE="$(command -v "$PYTHON")"
fi
cmake --build build/ci -j "$JOBS"

# Every lowering of steps 3 and 4 (C++, the bindings, the solar executable) appends the rules it
# fired here; step 5 checks the log.
export SOLAR_RULE_LOG="$PWD/build/ci/rule_log.txt"
: >"$SOLAR_RULE_LOG"

step "C++ tests (ctest)"
ctest --test-dir build/ci --output-on-failure -j "$JOBS"

step "Python tests (pytest)"
"$PYTHON" -m pytest -q "${markers[@]}"

step "Rule coverage (tests/frontend/rule_waivers.txt)"
SOLAR_RULE_COVERAGE_LOG="$SOLAR_RULE_LOG" SOLAR_RULE_LOG= \
  build/ci/solar_tests_frontend --gtest_filter='RuleCoverage.*'
unset SOLAR_RULE_LOG

step "Lint: ruff"
"$PYTHON" -m ruff check python tests
"$PYTHON" -m ruff format --check python tests

step "Lint: clang-format, clang-tidy"
bash scripts/lint-cpp.sh build/ci

step "All tests passed"
