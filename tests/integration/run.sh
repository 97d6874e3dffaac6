#!/usr/bin/env bash
# Runs the integration tests on a fresh local cluster with the plugins of the
# build tree loaded, then takes the cluster down.
#   tests/integration/run.sh [TEST_NAME...]     (default: all, in order)
# Prints "PASS name (Ns)" / "FAIL name (Ns)" per test and, last,
# "integration: N passed, N failed".  Exit status 0 only if all passed.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export GPUPOOL_REPO=$REPO
CLUSTER="$REPO/scripts/cluster.sh"

ALL_TESTS=(test_queue_order test_osmo_preemption test_restart_keeps_order test_borrow_reclaim test_quota_hold test_admin_hold_kept test_rejected_hold_update test_update_reevaluates
           test_protection test_no_requeue test_sprio test_reconfigure test_array_quota
           test_slow_state_save test_reconfigure_keeps_pass test_reconfigure_new_pid test_user_cannot_raise_tier test_untrusted_paths
           test_restart_completing_job test_restart_with_bad_config test_kill9_restart test_cli_status_borrowing test_cli_why_quota test_cli_queue_order test_cli_requeued_order test_cli_usage_history test_multi_pool test_preempt_needs_priority test_example_osmo test_example_runai test_example_backendai test_cli_whatif_reconfigure test_exporter_prometheus test_cli_why_preempted test_sim_replays_sacct
           test_commands_load_plugins test_admin_priority_one test_warns_without_job_submit)
tests=("$@")
(( ${#tests[@]} )) || tests=("${ALL_TESTS[@]}")

passed=0 failed=0
started=$SECONDS
finish() {
  bash "$CLUSTER" down >&2 || true
  # down must leave no daemon of the suite behind.
  local left
  # Zombies are dead already; this machine's init reaps them a little later.
  # By process name (not command line: a build of Slurm names slurmd in
  # its arguments), or anything running out of the cluster's directory.
  left=$(ps -eo stat=,pid=,comm=,args= |
         awk '$1 !~ /^Z/ && ($3 ~ /^(slurmctld|slurmd|slurmdbd|munged|mariadbd|mysqld|slurmstepd)$/ ||
                              index($0, "gpupool" "-cluster"))' || true)
  if [[ -n $left ]]; then
    echo "FAIL down-leaves-nothing: $left"
    failed=$(( failed + 1 ))
  else
    echo "PASS down-leaves-nothing"
    passed=$(( passed + 1 ))
  fi
  echo "integration suite took $(( SECONDS - started )) s"
  echo "integration: $passed passed, $failed failed"
}

if ! GPUPOOL_PLUGINS=1 bash "$CLUSTER" up >&2; then
  echo "FAIL cluster-up"
  failed=$(( ${#tests[@]} + 1 ))
  finish
  exit 1
fi
eval "$(bash "$CLUSTER" env)"
# shellcheck source=lib.sh
. "$REPO/tests/integration/lib.sh"
# shellcheck source=tests.sh
. "$REPO/tests/integration/tests.sh"

for t in "${tests[@]}"; do
  cancel_all 30 >/dev/null 2>&1
  restore_example_conf >/dev/null 2>&1
  t0=$SECONDS
  if ( set -e; "$t" ); then
    echo "PASS $t ($(( SECONDS - t0 )) s)"
    passed=$(( passed + 1 ))
  else
    echo "FAIL $t ($(( SECONDS - t0 )) s)"
    squeue -o '%.10i %.8P %.8j %.7q %.9T %.10Q %R' >&2
    grep gpupool "$CTLD_LOG" | tail -15 >&2
    # Keep the evidence: the cluster's logs and what the test wrote.
    keep=${GPUPOOL_FAIL_DIR:-/var/tmp/gpupool-failed}/$(date +%Y%m%d-%H%M%S)-$t
    mkdir -p "$keep" && cp -a "$GPUPOOL_CLUSTER_DIR/log" "$keep/" 2>/dev/null
    for d in kill9 soak; do [[ -d $GPUPOOL_CLUSTER_DIR/$d ]] && cp -a "$GPUPOOL_CLUSTER_DIR/$d" "$keep/"; done
    echo "logs of $t kept in $keep" >&2
    failed=$(( failed + 1 ))
  fi
done
cancel_all 30 >/dev/null 2>&1
restore_example_conf >/dev/null 2>&1
finish
(( failed == 0 ))
