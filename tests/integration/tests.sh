# shellcheck shell=bash
# Integration tests on the live local cluster (scripts/cluster.sh) with
# priority/gpupool and preempt/gpupool loaded.  One function per acceptance
# item of the plugin issue; each starts from an empty queue and the example
# gpupool.conf (pool1, pool2: quota 2 over node[1-4]; pool3: quota 2 over
# node[5-6]; plain: not managed, over node[1-4]; 1 GPU per node).  Sourced by run.sh after lib.sh.
# Every wait polls with a deadline.

CTLD_LOG=${GPUPOOL_CLUSTER_DIR}/log/slurmctld.log
GPUPOOL_CONF=$(dirname "$SLURM_CONF")/gpupool.conf

# Lines of the slurmctld log written since mark_log.
mark_log() { LOG_MARK=$(wc -l <"$CTLD_LOG"); }
log_since() { tail -n +"$(( LOG_MARK + 1 ))" "$CTLD_LOG"; }
log_has() { log_since | grep -qE "$1"; }

# Start time of a job in seconds (from scontrol; "Unknown" -> empty).
start_epoch() {
  local t
  t=$(job_field "$1" StartTime)
  [[ $t =~ ^[0-9]{4}- ]] && date -d "$t" +%s
}

# A job started when it is (or was) RUNNING.
has_run() { [[ $(job_state "$1") =~ ^(RUNNING|COMPLETING|COMPLETED|CANCELLED|PREEMPTED)$ ]] && [[ -n $(start_epoch "$1") ]]; }

# The sacct states of a job, one per record (requeues make several).
sacct_states() { sacct -n -X -D -P -j "$1" -o State -S now-1hour 2>/dev/null | awk '{print $1}' | tr '\n' ' '; }

# Write gpupool.conf and make slurmctld read it.
reconfigure_with() {
  printf '%s\n' "$1" >"$GPUPOOL_CONF"
  mark_log
  scontrol reconfigure
}

restore_example_conf() {
  if ! cmp -s "$GPUPOOL_REPO/etc/gpupool.conf.example" "$GPUPOOL_CONF"; then
    reconfigure_with "$(cat "$GPUPOOL_REPO/etc/gpupool.conf.example")"
    wait_until 20 log_has 'gpupool: .*loaded'
  fi
}

# 1. Queue order: NORMAL jobs hold both GPUs of pool3; LOW, HIGH, NORMAL,
#    HIGH are submitted; as GPUs free, they start HIGH, HIGH, NORMAL, LOW.
test_queue_order() {
  local n1 n2 low h1 nrm h2
  mark_log
  n1=$(submit n1 pool3 normal) && n2=$(submit n2 pool3 normal) || return 1
  assert wait_state "$n1" RUNNING 30 && assert wait_state "$n2" RUNNING 30 || return 1
  low=$(submit low pool3 low) && h1=$(submit high1 pool3 high) &&
    nrm=$(submit normal pool3 normal) && h2=$(submit high2 pool3 high) || return 1
  # Each freed GPU goes to the next job in order, and to no other.
  local prev=$n1 next
  for next in "$h1" "$h2" "$nrm" "$low"; do
    scancel "$prev"
    assert wait_state "$next" RUNNING 30 || return 1
    assert wait_running_count 2 10 pool3 || return 1
    case $next in
      "$h1") prev=$n2 ;;
      "$h2") prev=$h1 ;;
      "$nrm") prev=$h2 ;;
    esac
  done
  local s_h1 s_h2 s_n s_l
  s_h1=$(start_epoch "$h1"); s_h2=$(start_epoch "$h2"); s_n=$(start_epoch "$nrm"); s_l=$(start_epoch "$low")
  ilog "start times: HIGH $s_h1, HIGH $s_h2, NORMAL $s_n, LOW $s_l"
  assert test "$s_h1" -le "$s_h2" && assert test "$s_h2" -le "$s_n" && assert test "$s_n" -le "$s_l" || return 1
  # Nobody started out of turn and had to be preempted back out.
  ! log_has 'preempt victim' || { ilog "unexpected preemption: $(log_since | grep 'preempt victim')"; return 1; }
}

# 2. OSMO preemption: WF1 LOW and WF2 NORMAL run on pool3's 2 GPUs (quota
#    2), WF3 and WF4 LOW wait; WF5 NORMAL preempts and requeues WF1; when
#    WF2 ends, WF1 starts before WF3 and WF4.
test_osmo_preemption() {
  local wf1 wf2 wf3 wf4 wf5
  wf1=$(submit wf1 pool3 low) && assert wait_state "$wf1" RUNNING 30 || return 1
  wf2=$(submit wf2 pool3 normal) && assert wait_state "$wf2" RUNNING 30 || return 1
  wf3=$(submit wf3 pool3 low) && wf4=$(submit wf4 pool3 low) || return 1
  assert wait_state "$wf4" PENDING 10 || return 1
  mark_log
  wf5=$(submit wf5 pool3 normal) || return 1
  assert wait_state "$wf5" RUNNING 30 || return 1
  assert wait_state "$wf1" PENDING 30 || return 1
  assert wait_until 20 eval '[[ "$(sacct_states '"$wf1"')" == *PREEMPTED* ]]' || { ilog "sacct: $(sacct_states "$wf1")"; return 1; }
  assert log_has "preempt.*JobId=$wf1.*JobId=$wf5.*InPool" || { log_since | grep gpupool >&2; return 1; }
  assert test "$(job_state "$wf3")" = PENDING && assert test "$(job_state "$wf4")" = PENDING || return 1
  # A requeued job waits cred_expire + 1 s; end WF2 only once WF1 may run.
  assert wait_until 30 eval '[[ "$(job_reason '"$wf1"')" != BeginTime ]]' || return 1
  scancel "$wf2"
  assert wait_state "$wf1" RUNNING 30 || return 1
  assert test "$(job_state "$wf3")" = PENDING && assert test "$(job_state "$wf4")" = PENDING
}

# 2b. R1.3 across a restart: a preempted, requeued LOW job keeps its first
#     submit time through a slurmctld restart and runs before a LOW job
#     submitted after it.
test_restart_keeps_order() {
  local l1 n1 l2 n2
  l1=$(submit l1 pool3 low) && assert wait_state "$l1" RUNNING 30 || return 1
  n1=$(submit n1 pool3 normal) && assert wait_state "$n1" RUNNING 30 || return 1
  l2=$(submit l2 pool3 low) || return 1
  n2=$(submit n2 pool3 normal) && assert wait_state "$n2" RUNNING 30 || return 1
  assert wait_state "$l1" PENDING 30 || return 1
  mark_log
  bash "$GPUPOOL_REPO/scripts/cluster.sh" restart-ctld >&2 || return 1
  assert wait_until 20 log_has 'gpupool: recovered state' || { log_since | grep gpupool >&2; return 1; }
  assert wait_until 30 eval '[[ "$(job_reason '"$l1"')" != BeginTime ]]' || return 1
  assert wait_until 20 eval '(( $(job_priority '"$l1"') > $(job_priority '"$l2"') ))' ||
    { ilog "priorities after restart: l1 $(job_priority "$l1"), l2 $(job_priority "$l2")"; return 1; }
  scancel "$n1"
  assert wait_state "$l1" RUNNING 30 && assert test "$(job_state "$l2")" = PENDING
}

# 3. OSMO borrowing and reclaim: pool1 and pool2 over the same 4 GPUs, quota
#    2 each; WF3 LOW in pool1 borrows; WF5 NORMAL in pool2 preempts WF3 and
#    starts; WF2 is untouched.
test_borrow_reclaim() {
  local wf1 wf2 wf3 wf4 wf5
  wf1=$(submit wf1 pool1 normal) && assert wait_state "$wf1" RUNNING 30 || return 1
  wf2=$(submit wf2 pool1 low) && assert wait_state "$wf2" RUNNING 30 || return 1
  wf4=$(submit wf4 pool2 normal) && assert wait_state "$wf4" RUNNING 30 || return 1
  wf3=$(submit wf3 pool1 low) && assert wait_state "$wf3" RUNNING 30 || return 1
  ilog "pool1 borrows: WF1 NORMAL, WF2 LOW, WF3 LOW running; pool2: WF4"
  mark_log
  wf5=$(submit wf5 pool2 normal) || return 1
  assert wait_state "$wf5" RUNNING 30 || return 1
  assert wait_state "$wf3" 'PENDING|REQUEUED' 10 || return 1
  assert log_has "preempt.*JobId=$wf3.*JobId=$wf5.*Reclaim" || { log_since | grep gpupool >&2; return 1; }
  assert test "$(job_state "$wf2")" = RUNNING && assert test "$(job_restarts "$wf2")" = 0 &&
    assert test "$(job_state "$wf1")" = RUNNING
}

# 4. Quota hold: a third 1-GPU NORMAL job in quota-2 pool1 pends with the
#    quota reason while GPUs are free, LOW jobs still start on them, and the
#    held job starts within one scheduling pass of a NORMAL job ending.
test_quota_hold() {
  local n1 n2 n3 l1 t0 t1
  n1=$(submit n1 pool1 normal) && n2=$(submit n2 pool1 normal) || return 1
  assert wait_state "$n1" RUNNING 30 && assert wait_state "$n2" RUNNING 30 || return 1
  n3=$(submit n3 pool1 normal) || return 1
  assert wait_until 10 eval '[[ "$(job_reason '"$n3"')" == "GpuPoolQuota:pool1_2/2" || "$(job_reason '"$n3"')" == "GpuPoolQuota:pool1 2/2" ]]' ||
    { ilog "reason: $(job_reason "$n3")"; return 1; }
  l1=$(submit l1 pool1 low) && assert wait_state "$l1" RUNNING 30 || return 1
  assert test "$(job_state "$n3")" = PENDING || return 1
  t0=$(date +%s%3N)
  scancel "$n1"
  assert wait_state "$n3" RUNNING 10 || return 1
  t1=$(date +%s%3N)
  ilog "held job started $(( t1 - t0 )) ms after the NORMAL job was cancelled (sched_interval=2 s)"
}

# 4b. A user's or admin's hold is never undone: an admin holds a job that
#     gpupool holds for quota; when quota frees, the next job gets it and
#     the admin's hold stays; released, the job is gpupool's again.
test_admin_hold_kept() {
  local n1 n2 n3 n4
  n1=$(submit n1 pool1 normal) && n2=$(submit n2 pool1 normal) || return 1
  assert wait_state "$n1" RUNNING 30 && assert wait_state "$n2" RUNNING 30 || return 1
  n3=$(submit n3 pool1 normal) && n4=$(submit n4 pool1 normal) || return 1
  assert wait_until 10 eval '[[ "$(job_reason '"$n3"')" == GpuPoolQuota* ]]' || return 1
  scontrol hold "$n3" || return 1
  assert wait_until 10 eval '[[ "$(job_reason '"$n3"')" == JobHeldAdmin ]]' || { ilog "reason: $(job_reason "$n3")"; return 1; }
  scancel "$n1"
  assert wait_state "$n4" RUNNING 30 || return 1
  local deadline=$(( SECONDS + 5 ))
  while (( SECONDS < deadline )); do
    [[ $(job_state "$n3") == PENDING && $(job_reason "$n3") == JobHeldAdmin ]] ||
      { ilog "n3 is $(job_state "$n3") ($(job_reason "$n3"))"; return 1; }
    sleep 0.5
  done
  scontrol release "$n3" || return 1
  assert wait_until 10 eval '[[ "$(job_reason '"$n3"')" == GpuPoolQuota* ]]' || { ilog "reason: $(job_reason "$n3")"; return 1; }
  scancel "$n2"
  assert wait_state "$n3" RUNNING 30
}

# 4c. Changes slurmctld calls no priority hook for are seen within seconds:
#     a quota-held job moved to QOS low runs (LOW is never held); another
#     moved to a pool with room runs.
test_update_reevaluates() {
  local n1 n2 n3 n4 t0
  n1=$(submit n1 pool1 normal) && n2=$(submit n2 pool1 normal) || return 1
  assert wait_state "$n1" RUNNING 30 && assert wait_state "$n2" RUNNING 30 || return 1
  n3=$(submit n3 pool1 normal) && n4=$(submit n4 pool1 normal) || return 1
  assert wait_until 10 eval '[[ "$(job_reason '"$n4"')" == GpuPoolQuota* ]]' || return 1
  t0=$SECONDS
  scontrol update job "$n3" qos=low && scontrol update job "$n4" partition=pool2 || return 1
  assert wait_state "$n3" RUNNING 5 && assert wait_state "$n4" RUNNING 5 || return 1
  ilog "updated jobs running within $(( SECONDS - t0 )) s"
}

# 5. Protection: LOW jobs of a pool at or under its quota are never
#    preempted for another pool's job, even when that job cannot start.
test_protection() {
  local l1 l2 n1 p1 n2
  l1=$(submit l1 pool1 low) && l2=$(submit l2 pool1 low) || return 1
  n1=$(submit n1 pool2 normal) && p1=$(submit p1 plain normal) || return 1
  for j in "$l1" "$l2" "$n1" "$p1"; do assert wait_state "$j" RUNNING 30 || return 1; done
  # pool2 is entitled (1 + 1 <= 2), but pool1 is at its quota.
  n2=$(submit n2 pool2 normal) || return 1
  local deadline=$(( SECONDS + 8 ))
  while (( SECONDS < deadline )); do
    [[ $(job_state "$l1") == RUNNING && $(job_state "$l2") == RUNNING ]] || { ilog "a protected LOW job was preempted"; return 1; }
    [[ $(job_state "$n2") == PENDING ]] || { ilog "n2 is $(job_state "$n2")"; return 1; }
    sleep 0.5
  done
  assert test "$(job_restarts "$l1")" = 0 && assert test "$(job_restarts "$l2")" = 0
}

# 6. A LOW job submitted with --no-requeue is cancelled, not requeued.
test_no_requeue() {
  local l n n2
  l=$(submit l pool3 low --no-requeue) && n=$(submit n pool3 normal) || return 1
  assert wait_state "$l" RUNNING 30 && assert wait_state "$n" RUNNING 30 || return 1
  n2=$(submit n2 pool3 normal) || return 1
  assert wait_state "$n2" RUNNING 30 || return 1
  assert wait_state "$l" 'PREEMPTED|CANCELLED|COMPLETED|' 20 || return 1
  assert test "$(job_restarts "$l" || echo 0)" = 0 || true
  local states
  states=$(sacct_states "$l")
  ilog "no-requeue job sacct states: $states"
  [[ $states != *PENDING* && $states != *REQUEUED* && ( $states == *PREEMPTED* || $states == *CANCELLED* ) ]] ||
    { ilog "expected one PREEMPTED/CANCELLED record, got: $states"; return 1; }
  # It never comes back.
  ! squeue -h -j "$l" -o %T 2>/dev/null | grep -q .
}

# 7. sprio lists gpupool's factors for pending jobs; they add up.
test_sprio() {
  local n1 n2 p
  n1=$(submit n1 pool3 normal) && n2=$(submit n2 pool3 normal) || return 1
  assert wait_state "$n2" RUNNING 30 || return 1
  p=$(submit waiting pool3 low) || return 1
  assert wait_state "$p" PENDING 10 || return 1
  local line
  # %A %F %Q: the weighted age, fairshare and QOS factors (integers).  A
  # pass may change the priority between reading sprio and squeue: poll
  # until both agree and the factors add up.
  sprio_consistent() {
    local id prio age fs qos
    line=$(sprio -h -j "$p" -o "%i %Y %A %F %Q" 2>/dev/null) && [[ -n $line ]] || return 1
    read -r id prio age fs qos <<<"$line"
    [[ $id == "$p" && $prio == "$(job_priority "$p")" && $(( age + fs + qos )) == "$prio" && $qos -gt 0 ]]
  }
  assert wait_until 10 sprio_consistent || { ilog "sprio: $line (squeue priority $(job_priority "$p"))"; return 1; }
  ilog "sprio: $line (squeue priority $(job_priority "$p"))"
}

# 8. scontrol reconfigure with a broken gpupool.conf keeps the previous
#    config, logs the error naming the line, slurmctld keeps running; a fixed
#    file is picked up.
test_reconfigure() {
  local good bad
  good=$(cat "$GPUPOOL_REPO/etc/gpupool.conf.example")
  bad=$(printf '%s\nPool=broken Quota=lots\n' "$good")
  local badline
  badline=$(printf '%s\n' "$bad" | wc -l)
  reconfigure_with "$bad"
  assert wait_until 20 log_has "gpupool.conf:$badline:.*Quota" || { log_since | tail -20 >&2; return 1; }
  assert log_has 'keeping the previous configuration' || return 1
  assert scontrol ping >/dev/null || return 1
  # The previous config still holds: quota 2 in pool1.
  local n1 n2 n3
  n1=$(submit n1 pool1 normal) && n2=$(submit n2 pool1 normal) && n3=$(submit n3 pool1 normal) || return 1
  assert wait_state "$n2" RUNNING 30 || return 1
  assert wait_until 10 eval '[[ "$(job_reason '"$n3"')" == GpuPoolQuota:pool1* ]]' || return 1
  # A fixed file with pool1's quota raised to 3 lets n3 start.
  reconfigure_with "${good/Pool=pool1 Quota=2/Pool=pool1 Quota=3}"
  assert wait_until 20 log_has 'gpupool: .*loaded' || { log_since | tail -20 >&2; return 1; }
  assert wait_state "$n3" RUNNING 30
}

# 10. Job arrays count every task against quota (R2): a NORMAL array of
#     4 x 1 GPU in pool1 (quota 2, 4 GPUs free) runs exactly 2 tasks, the
#     others pend (gpupool's reason or the array throttle gpupool sets);
#     LOW jobs still get the idle GPUs; with GPUs free again, cancelling a
#     task starts exactly one more.
array_running() { squeue -h -j "$1" -t RUNNING -o %i 2>/dev/null | wc -l; }
array_pending() { squeue -h -r -j "$1" -t PENDING -o %i 2>/dev/null | wc -l; }

# exactly_running ARRAY N SECONDS: N tasks run throughout SECONDS.
exactly_running() {
  local deadline=$(( SECONDS + $3 )) c
  while (( SECONDS < deadline )); do
    c=$(array_running "$1")
    [[ $c -eq $2 ]] || { ilog "array $1: $c tasks running, want $2"; squeue -o '%.12i %.8P %.7q %.9T %R' >&2; return 1; }
    sleep 0.3
  done
}

test_array_quota() {
  local out arr reason l1 l2 task
  out=$(sbatch --parsable -J arr -p pool1 --qos=normal --gres=gpu:1 -N1 -n1 \
          -o /dev/null -e /dev/null --array=1-4 --wrap 'sleep 600') || return 1
  arr=${out%%;*}
  assert wait_until 20 eval '[[ $(array_running '"$arr"') -ge 2 ]]' || return 1
  exactly_running "$arr" 2 6 || return 1
  assert test "$(array_pending "$arr")" -eq 2 || return 1
  reason=$(squeue -h -j "$arr" -t PENDING -o %r | head -n1)
  ilog "pending tasks of array $arr: $reason"
  [[ $reason == GpuPool* || $reason == JobArrayTaskLimit ]] || { ilog "unexpected reason: $reason"; return 1; }
  # P jobs borrow the two idle GPUs.
  l1=$(submit l1 pool1 low) && l2=$(submit l2 pool1 low) || return 1
  assert wait_state "$l1" RUNNING 30 && assert wait_state "$l2" RUNNING 30 || return 1
  assert test "$(array_running "$arr")" -eq 2 || return 1
  # GPUs idle again: still only the quota's 2 tasks.
  scancel "$l1" "$l2"
  assert wait_running_count 2 20 pool1 || return 1
  exactly_running "$arr" 2 4 || return 1
  # One task ends: exactly one more starts.
  task=$(squeue -h -j "$arr" -t RUNNING -o %i | head -n1)
  ilog "cancelling task $task"
  scancel "$task"
  assert wait_until 20 eval '[[ $(array_pending '"$arr"') -eq 1 && $(array_running '"$arr"') -eq 2 ]]' ||
    { ilog "array $arr: $(array_running "$arr") running, $(array_pending "$arr") pending"; return 1; }
  exactly_running "$arr" 2 4 || return 1
  assert test "$(array_pending "$arr")" -eq 1
}
