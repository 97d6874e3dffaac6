# shellcheck shell=bash
# Integration tests of account queues on the live cluster: queues from Slurm's
# accounts.  Each test makes, in sacctmgr, two departments over projects
#   dept1: p1a, p1b      dept2: p2a, p2b
# with root's associations under the projects, loads a gpupool.conf giving
# them quotas in pool1 (node[1-4]: 4 GPUs, 8 CPUs), and removes it all at
# the end.  Sourced by run.sh after tests.sh (its helpers: submit,
# reconfigure_with, reason_is, victim_of, gp, jget).

ACCT_PROJECTS=(p1a p1b p2a p2b)

# The tiers and pools these tests load (pool2 is left unmanaged: its nodes
# are pool1's).
ACCT_CONF_HEAD='PreemptionOrder=newest
RecalcInterval=2
Tier=high   QOS=high   Priority=300 Preemptible=no
Tier=normal QOS=normal Priority=200 Preemptible=no
Tier=low    QOS=low    Priority=100 Preemptible=yes
DefaultTier=normal
Pool=pool1 Quota=4
Pool=pool3 Quota=2'

# acct_tree_up: the departments and projects, root under each project
# with the test QOS, usable by sbatch once slurmctld has them.
acct_tree_up() {
  local p
  sacctmgr -i add account dept1,dept2 cluster="$GPUPOOL_CLUSTER_NAME" >/dev/null 2>&1 || true
  sacctmgr -i add account p1a,p1b parent=dept1 cluster="$GPUPOOL_CLUSTER_NAME" >/dev/null 2>&1 || true
  sacctmgr -i add account p2a,p2b parent=dept2 cluster="$GPUPOOL_CLUSTER_NAME" >/dev/null 2>&1 || true
  sacctmgr -i add user root account="$(IFS=,; echo "${ACCT_PROJECTS[*]}")" cluster="$GPUPOOL_CLUSTER_NAME" >/dev/null 2>&1 || true
  sacctmgr -i modify user root set qos=normal,low,high >/dev/null 2>&1 || true
  for p in "${ACCT_PROJECTS[@]}"; do
    assert wait_until 20 sbatch --test-only -A "$p" -p pool1 --qos=low --gres=gpu:1 -N1 -n1 -o /dev/null --wrap true ||
      { ilog "account $p not usable"; return 1; }
  done
}

# acct_tree_down: cancel the jobs, remove root's associations and the
# accounts (after a test, or one left by an aborted run).
acct_tree_down() {
  cancel_all 30
  sacctmgr -i delete user root account="$(IFS=,; echo "${ACCT_PROJECTS[*]}")" >/dev/null 2>&1 || true
  # (sacctmgr fails while a job record still runs, and when none is left)
  wait_until 20 eval 'sacctmgr -i delete account "$(IFS=,; echo "${ACCT_PROJECTS[*]}")"; ! acct_left p' || true
  wait_until 20 eval 'sacctmgr -i delete account dept1,dept2; ! acct_left dept' || true
  ! acct_left '' || { ilog "accounts not removed: $(acct_left '')"; return 1; }
}

# acct_left PREFIX: prints this file's accounts that sacctmgr still has
# (whose names start with PREFIX); false if none.
acct_left() {
  sacctmgr -n -P show account format=account 2>/dev/null | grep -xE 'dept[12]|p[12][ab]' | grep "^$1"
}

# acct_load TEXT: ACCT_CONF_HEAD plus TEXT as gpupool.conf, loaded.
acct_load() { conf_load "$ACCT_CONF_HEAD" "$1"; }

# with_accounts SCENARIO: the tree up, SCENARIO, the tree down (also when
# SCENARIO fails).
with_accounts() {
  local rc=0
  GPUPOOL_CLUSTER_NAME=$(scontrol show config | sed -n 's/^ClusterName *= *//p')
  acct_tree_down >/dev/null 2>&1
  acct_tree_up || rc=1
  (( rc )) || "$1" || rc=$?
  acct_tree_down || rc=1
  return $rc
}

# asub NAME ACCOUNT QOS [sbatch args...]: submit's 1-GPU job under ACCOUNT.
asub() { local n=$1 a=$2 q=$3; shift 3; submit "$n" pool1 "$q" -A "$a" "$@"; }

# Departments of 2 GPUs each, projects of 2 GPUs each.
ACCT_GPU_QUOTAS='Account=dept1 Pool=pool1 Quota=2
Account=dept2 Pool=pool1 Quota=2
Account=p1a Pool=pool1 Quota=2
Account=p1b Pool=pool1 Quota=2
Account=p2a Pool=pool1 Quota=2
Account=p2b Pool=pool1 Quota=2'

# A project's NORMAL job is held by its department's quota
# although the project has room and GPUs are free; a project of the other
# department still starts; the gpupool command, reading the tree from
# slurmdbd, holds it too.
test_account_department_quota() { with_accounts department_quota_scenario; }
department_quota_scenario() {
  local a1 a2 b1 c1 js
  acct_load "$ACCT_GPU_QUOTAS" || return 1
  a1=$(asub a1 p1a normal) && a2=$(asub a2 p1a normal) || return 1
  assert wait_state "$a1" RUNNING 30 && assert wait_state "$a2" RUNNING 30 || return 1
  b1=$(asub b1 p1b normal) || return 1
  assert wait_until 15 reason_is "$b1" "GpuPoolQuota:pool1/dept1 gpu 2/2" ||
    { ilog "p1b's job: $(job_state "$b1"), reason $(job_reason "$b1")"; return 1; }
  c1=$(asub c1 p2a normal) && assert wait_state "$c1" RUNNING 30 || return 1
  assert test "$(job_state "$b1")" = PENDING || return 1
  js=$(gp queue --json 2>/dev/null) || return 1
  assert test "$(jget "[j['admission'] for j in d['jobs'] if j['job_id'] == $b1][0]" <<<"$js")" = held ||
    { ilog "$js"; return 1; }
  scancel "$a1"
  assert wait_state "$b1" RUNNING 30
}

# With QuotaTRES counting CPUs, a job is held by its
# project's CPU quota while GPUs (and its GPU quota) are free.
test_account_cpu_quota() { with_accounts cpu_quota_scenario; }
cpu_quota_scenario() {
  local a1 a2
  acct_load "QuotaTRES=gres/gpu,cpu
Account=dept1 Pool=pool1 Quota=gres/gpu=4
Account=p1a Pool=pool1 Quota=gres/gpu=2,cpu=2" || return 1
  a1=$(asub a1 p1a normal -c 2) && assert wait_state "$a1" RUNNING 30 || return 1
  a2=$(asub a2 p1a normal) || return 1
  assert wait_until 15 reason_is "$a2" "GpuPoolQuota:pool1/p1a cpu 2/2" ||
    { ilog "a2: $(job_state "$a2"), reason $(job_reason "$a2")"; return 1; }
  assert test "$(running_count pool1)" = 1 || return 1
  scancel "$a1"
  assert wait_state "$a2" RUNNING 30
}

# An account moved to another department with sacctmgr
# counts under its new one from the next pass, with no reconfigure.
test_account_moved_by_sacctmgr() { with_accounts account_moved_scenario; }
account_moved_scenario() {
  local a1 a2 b1 t0
  acct_load "$ACCT_GPU_QUOTAS" || return 1
  a1=$(asub a1 p1a normal) && a2=$(asub a2 p1a normal) || return 1
  assert wait_state "$a1" RUNNING 30 && assert wait_state "$a2" RUNNING 30 || return 1
  b1=$(asub b1 p1b normal) || return 1
  assert wait_until 15 reason_is "$b1" "GpuPoolQuota:pool1/dept1 gpu 2/2" ||
    { ilog "b1: reason $(job_reason "$b1")"; return 1; }
  mark_log
  t0=$SECONDS
  sacctmgr -i modify account p1b set parent=dept2 >/dev/null || { ilog "sacctmgr cannot move p1b"; return 1; }
  assert wait_state "$b1" RUNNING 30 || return 1
  ilog "p1b's job started $(( SECONDS - t0 )) s after p1b moved to dept2"
  ! log_has 'configuration reloaded' || { ilog "a reconfigure happened"; return 1; }
}

# LOW jobs of dept1 borrow dept2's idle quota; dept2's
# NORMAL job takes it back: the victim is dept1's newest borrower, not
# dept2's own LOW job nor dept1's LOW jobs within its quota.  Needs reclaim
# between queues inside one pool (the reclaim helper's rules).
test_account_borrow_reclaim() { with_accounts borrow_reclaim_scenario; }
borrow_reclaim_scenario() {
  local l1 l2 l3 l4 n1 prev= j
  acct_load "$ACCT_GPU_QUOTAS" || return 1
  for j in l1 l2 l3; do
    [[ -z $prev ]] || assert past_start_second "$prev" || return 1
    prev=$(asub "$j" p1a low) && assert wait_state "$prev" RUNNING 30 || return 1
    printf -v "$j" %s "$prev"
  done
  assert past_start_second "$l3" || return 1
  l4=$(asub l4 p2a low) && assert wait_state "$l4" RUNNING 30 || return 1
  ilog "dept1 runs $l1 $l2 (its quota) and $l3 (borrowed from dept2); dept2 runs LOW $l4"
  mark_log
  n1=$(asub n1 p2a normal) || return 1
  assert wait_state "$n1" RUNNING 40 || return 1
  assert test "$(victim_of "$n1")" = "$l3" || { ilog "victim: $(victim_of "$n1")"; log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  for j in "$l1" "$l2" "$l4"; do
    assert test "$(job_state "$j")" = RUNNING && assert test "$(job_restarts "$j")" = 0 || return 1
  done
}

# ReclaimTo=fairshare: p1b, with no quota, reclaims its
# fairshare (1 GPU: the 2 unused by quota split by equal weights) from
# p1a, over its fairshare with all 4 GPUs; then nothing more is evicted
# over several passes.  Needs ReclaimTo=fairshare (the reclaim helper's).
test_account_reclaim_to_fairshare() { with_accounts reclaim_fairshare_scenario; }
reclaim_fairshare_scenario() {
  local -a a=()
  local b1 b2 prev= j evictions
  acct_load "ReclaimTo=fairshare
ReclaimBy=all
Account=p1a Pool=pool1 Quota=2
Account=p1b Pool=pool1 Quota=0" || return 1
  for j in 1 2 3 4; do
    [[ -z $prev ]] || assert past_start_second "$prev" || return 1
    prev=$(asub "a$j" p1a low) && assert wait_state "$prev" RUNNING 30 || return 1
    a+=("$prev")
  done
  mark_log
  b1=$(asub b1 p1b low) && b2=$(asub b2 p1b low) || return 1
  assert wait_state "$b1" RUNNING 40 || return 1
  assert test "$(victim_of "$b1")" = "${a[3]}" || { ilog "victim: $(victim_of "$b1")"; return 1; }
  # Still: five passes (RecalcInterval=2) with no eviction and b2 waiting.
  mark_log
  sleep 12
  evictions=$(log_since | grep -ac 'gpupool: preempt victim' || true)
  assert test "$evictions" = 0 && assert test "$(job_state "$b2")" = PENDING &&
    assert test "$(running_count pool1)" = 4 || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
}

# Limit= and LendingLimit= on a live cluster.  p1a may hold
# at most 2 GPUs (Limit), LOW included: its third LOW job waits with free
# GPUs.  p2a keeps its 1-GPU quota for itself (LendingLimit=0): p1b's LOW
# jobs take the pool's other free GPU but not p2a's, and p2a's NORMAL job
# then starts at once, with no preemption.
test_account_limits() { with_accounts limits_scenario; }
limits_scenario() {
  local a1 a2 a3 b1 b2 c1
  acct_load "Account=p1a Pool=pool1 Quota=1 Limit=gres/gpu=2
Account=p2a Pool=pool1 Quota=1 LendingLimit=gres/gpu=0" || return 1
  a1=$(asub a1 p1a low) && a2=$(asub a2 p1a low) || return 1
  assert wait_state "$a1" RUNNING 30 && assert wait_state "$a2" RUNNING 30 || return 1
  a3=$(asub a3 p1a low) || return 1
  assert wait_until 15 reason_is "$a3" "GpuPoolLimit:pool1/p1a gpu 2/2" ||
    { ilog "a3: $(job_state "$a3"), reason $(job_reason "$a3")"; return 1; }
  b1=$(asub b1 p1b low) && assert wait_state "$b1" RUNNING 30 || return 1
  b2=$(asub b2 p1b low) || return 1
  assert wait_until 15 reason_is "$b2" "GpuPoolLendingLimit:pool1/p2a gpu 1" ||
    { ilog "b2: $(job_state "$b2"), reason $(job_reason "$b2")"; return 1; }
  assert test "$(running_count pool1)" = 3 || return 1
  mark_log
  c1=$(asub c1 p2a normal) && assert wait_state "$c1" RUNNING 30 || return 1
  ! log_has 'gpupool: preempt victim' || { ilog "a preemption happened"; return 1; }
  assert test "$(job_state "$a3")" = PENDING && assert test "$(job_state "$b2")" = PENDING
}
