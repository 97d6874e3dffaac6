#!/usr/bin/env bash
# Runs the integration tests on a fresh local cluster with the plugins of the
# build tree loaded, then takes the cluster down.
#   tests/integration/run.sh [TEST_NAME...]     (default: all, in order)
# Prints "PASS name (Ns)" / "FAIL name (Ns)" per test and, last,
# "integration: N passed, N failed".  Exit status 0 only if all passed.
# GPUPOOL_OTHER_CLUSTER=1: first start a second, unrelated Slurm cluster
# with a running job (other-cluster.sh), check at the end that the suite
# left it untouched ("other-cluster-untouched"), then stop it.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export GPUPOOL_REPO=$REPO
CLUSTER="$REPO/scripts/cluster.sh"

ALL_TESTS=(test_queue_order test_osmo_preemption test_restart_keeps_order test_borrow_reclaim test_reclaim_past_reserved_node test_reclaim_past_reserved_cores test_reclaim_past_held_reserved_core test_reclaim_gpu_model test_typed_quota_counts_untyped test_reclaim_given_node test_reclaim_feature test_reclaim_whole_node test_quota_hold test_suspended_job_counts test_long_qos_name test_admin_hold_kept test_rejected_hold_update test_update_reevaluates
           test_protection test_no_requeue test_sprio test_reconfigure test_array_quota test_array_own_throttle test_dependent_waits_behind test_over_limit_waits_behind test_het_over_limit_waits_behind test_begin_later_waits_behind test_part_limit_waits_behind test_het_job_admitted_whole test_het_job_start_keeps_quota test_resize_keeps_quota test_test_only_reserves_nothing test_array_throttle_update test_array_cap_survives_restart
           test_slow_state_save test_reconfigure_keeps_pass test_reconfigure_new_pid test_user_cannot_raise_tier test_untrusted_paths
           test_restart_completing_job test_restart_with_bad_config test_bad_state_file_kept test_kill9_restart test_cli_status_borrowing test_cli_why_quota test_cli_queue_order test_cli_requeued_order test_cli_usage_history test_multi_pool test_preempt_needs_priority test_example_osmo test_example_runai test_reclaim_keeps_its_gpus test_example_backendai test_cli_whatif_reconfigure test_exporter_prometheus test_cli_why_preempted test_sim_replays_sacct test_sim_places_as_slurm test_tier_suspend_refused
           test_commands_load_plugins test_admin_priority_one test_warns_without_job_submit
           test_account_department_quota test_account_cpu_quota test_account_moved_by_sacctmgr test_account_borrow_reclaim test_account_reclaim_to_fairshare test_account_limits
           test_check_config)
# shellcheck source=tests_wide.sh
. "$REPO/tests/integration/tests_wide.sh"   # WIDE_TESTS, WIDE_SHAPE
tests=("$@")
(( ${#tests[@]} )) || tests=("${ALL_TESTS[@]}" "${WIDE_TESTS[@]}" "${EXPLICIT_TESTS[@]}")
# Tests of WIDE_TESTS run after the others, on a cluster of WIDE_SHAPE;
# those of EXPLICIT_TESTS last, on one of EXPLICIT_SHAPE.
narrow=() wide=() explicit=()
for t in "${tests[@]}"; do
  if [[ " ${WIDE_TESTS[*]} " == *" $t "* ]]; then wide+=("$t")
  elif [[ " ${EXPLICIT_TESTS[*]} " == *" $t "* ]]; then explicit+=("$t")
  else narrow+=("$t"); fi
done

passed=0 failed=0
started=$SECONDS
# gres.conf's Flags=explicit came with Slurm 23.11: before it, those tests
# are skipped (and their cluster not started).  The release comes from the
# headers the plugins build against: `sinfo -V` of 26.05 needs a
# slurm.conf, and none exists before this host's first cluster.
release_of_headers() {
  local n
  n=$(awk '/define SLURM_VERSION_NUMBER/ {print $3}' "${GPUPOOL_SLURM_PREFIX:-/usr}/include/slurm/slurm_version.h" 2>/dev/null)
  [[ $n == 0x* ]] && printf '%d.%02d.%d\n' $(( n >> 16 )) $(( (n >> 8) & 255 )) $(( n & 255 ))
}
release=$(release_of_headers || { eval "$(bash "$CLUSTER" env)"; sinfo -V 2>/dev/null | awk '{print $2}'; })
if (( ${#explicit[@]} )) && [[ $(printf '%s\n23.11.0\n' "$release" | sort -V | head -n1) != 23.11.0 ]]; then
  for t in "${explicit[@]}"; do
    echo "SKIP $t (Slurm ${release:-of unknown release} has no gres.conf Flags=explicit: 23.11 and later)"
  done
  explicit=()
fi
# Processes of this cluster still alive, one "pid comm args" a line. Told by
# what is theirs, never by name alone (another Slurm cluster may run on
# this machine): anything whose command line names the cluster's directory
# (its daemons' configs, munged's socket, MariaDB's data dir, job scripts
# in its spool), and slurmstepd or job processes with its slurm.conf as
# SLURM_CONF.  Not zombies (dead already; this machine's init reaps them a
# little later), not this shell or its ancestors.  Builtins only: a forked
# helper would carry SLURM_CONF too.
ours_left() {
  local d=${GPUPOOL_CLUSTER_DIR%/}/ conf=$SLURM_CONF skip=" " p=$$ k v f pid comm rest st e conf_env job args=() envs=()
  while (( p > 1 )); do
    skip+="$p "
    v=1
    while read -r k rest; do [[ $k == PPid: ]] && { v=$rest; break; }; done 2>/dev/null <"/proc/$p/status"
    p=$v
  done
  skip+="$BASHPID "
  for f in /proc/[0-9]*; do
    pid=${f#/proc/}
    [[ $skip == *" $pid "* ]] && continue
    read -r comm 2>/dev/null <"$f/comm" || continue
    read -r rest 2>/dev/null <"$f/stat" || continue
    st=${rest##*) }; st=${st%% *}
    [[ $st != Z ]] || continue
    mapfile -d '' -t args 2>/dev/null <"$f/cmdline" || continue
    if [[ " ${args[*]} " != *"$d"* ]]; then
      mapfile -d '' -t envs 2>/dev/null <"$f/environ" || continue
      conf_env='' job=''
      for e in "${envs[@]}"; do
        [[ $e == "SLURM_CONF=$conf" ]] && conf_env=1
        [[ $e == SLURM_JOB_ID=* ]] && job=1
      done
      [[ -n $conf_env && ( -n $job || $comm == slurmstepd ) ]] || continue
    fi
    echo "$pid $comm ${args[*]}"
  done
}

# GPUPOOL_OTHER_CLUSTER=1: the suite runs beside a second, unrelated Slurm
# cluster with a running job (tests/integration/other-cluster.sh), which
# must be left untouched.
OTHER=${GPUPOOL_OTHER_CLUSTER:-0}
OTHER_CLUSTER="$REPO/tests/integration/other-cluster.sh"

finish() {
  bash "$CLUSTER" down >&2 || true
  # down must leave no process of this cluster behind.
  local left
  left=$(eval "$(bash "$CLUSTER" env)"; ours_left)
  if [[ -n $left ]]; then
    echo "FAIL down-leaves-nothing: $left"
    failed=$(( failed + 1 ))
  else
    echo "PASS down-leaves-nothing"
    passed=$(( passed + 1 ))
  fi
  if [[ $OTHER == 1 ]]; then
    if bash "$OTHER_CLUSTER" check; then
      echo "PASS other-cluster-untouched"
      passed=$(( passed + 1 ))
    else
      echo "FAIL other-cluster-untouched"
      failed=$(( failed + 1 ))
    fi
    bash "$OTHER_CLUSTER" down >&2 || true
  fi
  echo "integration suite took $(( SECONDS - started )) s"
  echo "integration: $passed passed, $failed failed"
}

if [[ $OTHER == 1 ]]; then
  if ! bash "$OTHER_CLUSTER" up >&2; then
    echo "FAIL other-cluster-up"
    bash "$OTHER_CLUSTER" down >&2 || true
    echo "integration: $passed passed, 1 failed"
    exit 1
  fi
  # Stale pid files of this cluster that name the other cluster's slurmd
  # and munged (pids get reused): "down" must leave those alone too.
  d=$(bash "$CLUSTER" env | sed -n 's/^export GPUPOOL_CLUSTER_DIR=//p')
  mkdir -p "$d/run" "$d/munge"
  bash "$OTHER_CLUSTER" pid slurmd >"$d/run/slurmd-node1.pid"
  bash "$OTHER_CLUSTER" pid munged >"$d/munge/munged.pid"
  bash "$CLUSTER" down >&2
fi
# The narrow cluster's GPUs have models, as most sites' do: node1's "a",
# the others' "b" (test_reclaim_gpu_model), accounted by model too
# (test_typed_quota_counts_untyped).
shape=("GPUPOOL_GPU_TYPES=a b b b b b" "GPUPOOL_ACCT_TRES=gres/gpu,gres/gpu:a,gres/gpu:b")
(( ${#narrow[@]} )) || shape=("${WIDE_SHAPE[@]}")
(( ${#narrow[@]} + ${#wide[@]} )) || shape=("${EXPLICIT_SHAPE[@]}")
if ! env "${shape[@]}" GPUPOOL_PLUGINS=1 bash "$CLUSTER" up >&2; then
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
# shellcheck source=tests_accounts.sh
. "$REPO/tests/integration/tests_accounts.sh"
# shellcheck source=tests_check.sh
. "$REPO/tests/integration/tests_check.sh"

# run_test NAME: one test from an empty queue and the example gpupool.conf.
run_test() {
  local t=$1 t0 keep d
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
}

# run_shape FIRST NAME... -- SHAPE...: the tests NAME on a cluster of SHAPE,
# brought up here unless FIRST (the cluster up already has that shape).
run_shape() {
  local first=$1 t names=(); shift
  while [[ $1 != -- ]]; do names+=("$1"); shift; done
  shift
  if (( ! first )); then
    cancel_all 30 >/dev/null 2>&1
    bash "$CLUSTER" down >&2 || true
    if ! env "$@" GPUPOOL_PLUGINS=1 bash "$CLUSTER" up >&2; then
      echo "FAIL cluster-up (${*:1:3})"
      failed=$(( failed + ${#names[@]} ))
      return
    fi
  fi
  for t in "${names[@]}"; do run_test "$t"; done
}

for t in "${narrow[@]}"; do run_test "$t"; done
if (( ${#wide[@]} )); then
  run_shape $(( ${#narrow[@]} == 0 )) "${wide[@]}" -- "${WIDE_SHAPE[@]}"
fi
if (( ${#explicit[@]} )); then
  run_shape $(( ${#narrow[@]} + ${#wide[@]} == 0 )) "${explicit[@]}" -- "${EXPLICIT_SHAPE[@]}"
fi
cancel_all 30 >/dev/null 2>&1
restore_example_conf >/dev/null 2>&1
finish
(( failed == 0 ))
