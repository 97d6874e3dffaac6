#!/usr/bin/env bash
# The README's test command (also what .ci/run calls), as root on Debian 12:
# installs what is missing, builds, runs the unit tests (GoogleTest, `make
# check`) and the integration tests on a live local cluster, and ends with
# one line "N passed, N failed".
#   scripts/run-tests.sh [--unit-only]
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[[ $(id -u) -eq 0 ]] || { echo "run-tests: run as root (installs packages, starts a local cluster)" >&2; exit 2; }

step() { printf '\n== %s\n' "$*"; }
passed=0 failed=0

step "install dependencies"
bash scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
step "fetch and configure the Slurm source"
bash scripts/fetch-slurm-source.sh || { echo "0 passed, 1 failed"; exit 1; }
step "build"
bash scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }

step "unit tests (make check)"
make -j"$(nproc)" check >/dev/null 2>&1
log=tests/unit/gpupool_tests.log
if [[ -f $log ]]; then
  unit_ok=$(grep -c '^\[       OK \]' "$log" || true)
  unit_bad=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$log" || true)
  grep -E '^\[  FAILED  \]' "$log" | sort -u || true
else
  unit_ok=0 unit_bad=1
  echo "no unit test log: the test binary did not build or run"
fi
# A crash leaves tests unreported: count the run as failed then.
if ! grep -q '^\[  PASSED  \]\|^\[  FAILED  \]' "$log" 2>/dev/null; then unit_bad=$(( unit_bad + 1 )); fi
echo "unit: $unit_ok passed, $unit_bad failed"
passed=$(( passed + unit_ok )); failed=$(( failed + unit_bad ))

if [[ ${1:-} != --unit-only ]]; then
  step "integration tests (live cluster)"
  out=$(mktemp)
  bash tests/integration/run.sh 2>&1 | tee "$out"
  line=$(grep -E '^integration: [0-9]+ passed, [0-9]+ failed' "$out" | tail -1)
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    passed=$(( passed + BASH_REMATCH[1] )); failed=$(( failed + BASH_REMATCH[2] ))
  else
    failed=$(( failed + 1 ))
  fi
  rm -f "$out"
fi

echo
echo "$passed passed, $failed failed"
(( failed == 0 ))
