#!/usr/bin/env bash
# Flakiness check: runs the integration suite (tests/integration/run.sh) N
# times in a row, each run on a fresh cluster and under the live lock
# (/tmp/gpupool-live.lock, taken for each run on its own so that others can
# use the cluster in between), and stops at the first run that fails.
#
#   tests/integration/loop.sh N [TEST_NAME...]
#
# Each run's output goes to $GPUPOOL_LOOP_DIR/run-I.log (default
# /var/tmp/gpupool-loop/<date-time>); the failing run's log is kept and
# named. The last line is "loop: K of N runs passed"; exit status 0 only
# if all N passed. Set GPUPOOL_BUILD as for run.sh. Do not wrap it in flock.
# GPUPOOL_OTHER_CLUSTER=1: each run goes beside a second, unrelated Slurm
# cluster with a running job (tests/integration/other-cluster.sh, started
# and checked untouched by run.sh, under the same lock).
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

N=${1:-}
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 N [TEST_NAME...]" >&2; exit 2; }
shift
DIR=${GPUPOOL_LOOP_DIR:-/var/tmp/gpupool-loop/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$DIR"

passed=0
[[ ${GPUPOOL_OTHER_CLUSTER:-0} != 1 ]] || echo "loop: each run beside another Slurm cluster (GPUPOOL_OTHER_CLUSTER=1)"
for (( i = 1; i <= N; i++ )); do
  log=$DIR/run-$i.log
  t0=$SECONDS
  flock /tmp/gpupool-live.lock bash "$REPO/tests/integration/run.sh" "$@" >"$log" 2>&1
  rc=$?
  summary=$(grep -a '^integration: ' "$log" | tail -n1)
  if (( rc == 0 )); then
    passed=$(( passed + 1 ))
    echo "loop: run $i of $N passed in $(( SECONDS - t0 )) s (${summary#integration: })"
  else
    echo "loop: run $i of $N FAILED in $(( SECONDS - t0 )) s (${summary#integration: }); log kept: $log"
    grep -a '^FAIL ' "$log" | sed 's/^/loop:   /'
    break
  fi
done
echo "loop: $passed of $N runs passed"
(( passed == N ))
