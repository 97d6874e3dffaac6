# shellcheck shell=bash
# Integration tests that need nodes of several GPUs: run.sh runs them on a
# cluster of its own shape (WIDE_SHAPE below: two nodes of 4 GPUs, 8 shards,
# 8 CPUs and 8000 MiB, which Slurm allocates (CR_Core_Memory), as most sites
# do; partitions q0, q1 and pool1 over node1, the w* ones over both), after
# the other tests.  Sourced by
# run.sh after tests.sh (its helpers: conf_load, mark_log, log_has,
# log_since, gp) and tests_accounts.sh.

WIDE_TESTS=(test_reclaim_together_pools test_reclaim_together_accounts test_reclaim_fairshare_pools
  test_ranks_departments test_victim_plan_nodes test_reclaim_cpus_held test_reclaim_cpus_per_gpu test_reclaim_def_cpu_per_gpu test_reclaim_memory_held test_reclaim_spread_job test_reclaim_exclusive_partition test_whole_node_counts_its_gpus test_update_shared_releases test_listed_exclusive_partition_counts test_reclaim_shards_held test_swap_places test_swap_least_work
  test_pack_places test_pack_cpu_jobs_follow test_pack_keeps_a_node_whole test_pack_merges_config_records
  test_spread_places test_consolidation_moves
  test_consolidation_off test_why_victim_plan test_why_plan_cpus test_why_plan_memory test_why_plan_excluded test_why_plan_def_cpu_per_gpu)
# node2 is only in the w* partitions: the tests of q0, q1 and pool1 see one node.
WIDE_SHAPE=(GPUPOOL_NODE_COUNT=2 GPUS_PER_NODE=4 CPUS_PER_NODE=8 GPUPOOL_MEMORY_MB=8000 GPUPOOL_SHARDS=8
  "GPUPOOL_PARTITIONS=PartitionName=q0 Nodes=node1 Default=YES MaxTime=INFINITE State=UP
PartitionName=q1 Nodes=node1 MaxTime=INFINITE State=UP
PartitionName=pool1 Nodes=node1 MaxTime=INFINITE State=UP
PartitionName=wa Nodes=node[1-2] MaxTime=INFINITE State=UP
PartitionName=wb Nodes=node[1-2] MaxTime=INFINITE State=UP
PartitionName=ws Nodes=node[1-2] LLN=YES MaxTime=INFINITE State=UP
PartitionName=wx Nodes=node[1-2] OverSubscribe=EXCLUSIVE MaxTime=INFINITE State=UP
PartitionName=wd Nodes=node[1-2] DefCpuPerGPU=4 MaxTime=INFINITE State=UP")

WIDE_CONF_HEAD='PreemptionOrder=newest
RecalcInterval=2
Tier=high   QOS=high   Priority=300 Preemptible=no
Tier=normal QOS=normal Priority=200 Preemptible=no
Tier=low    QOS=low    Priority=100 Preemptible=yes
DefaultTier=normal'

# wide_load TEXT: WIDE_CONF_HEAD plus TEXT as gpupool.conf, loaded.
wide_load() { conf_load "$WIDE_CONF_HEAD" "$1"; }

# submit_gpus NAME PART QOS GPUS [sbatch args...] -> the job id: a 1-task
# "sleep 600" job holding GPUS GPUs of one node.
submit_gpus() {
  local name=$1 part=$2 qos=$3 gpus=$4 out; shift 4
  out=$(sbatch --parsable -J "$name" -p "$part" --qos="$qos" --gres="gpu:$gpus" -N1 -n1 \
          -o /dev/null -e /dev/null "$@" --wrap 'sleep 600') || return 1
  echo "${out%%;*}"
}

# victims_since JOBID: the jobs preempted for JOBID since mark_log, sorted.
victims_since() {
  log_since | sed -n "s/.*gpupool: preempt victim JobId=\([0-9]*\) .*for JobId=$1 .*/\1/p" | sort -n | tr '\n' ' '
}

# The promise: LOW jobs L1 and L2 hold the node's 4 GPUs
# and a NORMAL job N of 4 GPUs within its quota is submitted.  It must
# start within 30 s with both evicted, and then 15 s pass with no
# preemption.  Before, only one of the two was its candidate and it waited
# for good ("Resources").
expect_both_evicted() {
  local n=$1 l1=$2 l2=$3 t0=$4 want
  assert wait_state "$n" RUNNING 30 ||
    { ilog "N: $(job_state "$n"), reason $(job_reason "$n")"; gp why "$n" >&2; log_since | grep -a 'gpupool' >&2; return 1; }
  ilog "the NORMAL job started $(( SECONDS - t0 )) s after its submission"
  want=$(printf '%s\n' "$l1" "$l2" | sort -n | tr '\n' ' ')
  assert test "$(victims_since "$n")" = "$want" || { ilog "victims: $(victims_since "$n")"; return 1; }
  mark_log
  sleep 15
  ! log_has 'gpupool: preempt victim' || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  assert test "$(job_state "$n")" = RUNNING
}

# Partitions q0 (quota 4) and q1 (quota 0) over the node: q0's own LOW job
# and q1's borrower go together for q0's NORMAL job.
test_reclaim_together_pools() {
  local l0 l1 n0 t0
  wide_load 'Pool=q0 Quota=4
Pool=q1 Quota=0' || return 1
  l0=$(submit_gpus l0 q0 low 2) && assert wait_state "$l0" RUNNING 30 || return 1
  l1=$(submit_gpus l1 q1 low 2) && assert wait_state "$l1" RUNNING 30 || return 1
  mark_log
  t0=$SECONDS
  n0=$(submit_gpus n0 q0 normal 4) || return 1
  expect_both_evicted "$n0" "$l0" "$l1" "$t0"
}

# ReclaimTo=fairshare between pools, KAI-Scheduler's
# "reclaim according to the fairness ratio" case at half its size: q0 and
# q1 (quota 1, weight 1 each) share the node's 4 GPUs, fairshare 2 each.
# q0 runs LOW jobs of 1, 1 and 2 GPUs; q1's first LOW job of 2 takes q0's
# newest (the 2-GPU one), its second waits: 2 and 2, and nothing more is
# preempted.  With ReclaimTo ignored between pools (before) a LOW job
# reclaimed nothing and q1 waited for good.
test_reclaim_fairshare_pools() {
  local a1 a2 a3 b1 b2 t0
  wide_load 'ReclaimTo=fairshare
UsageWeight=0
Pool=q0 Quota=1
Pool=q1 Quota=1' || return 1
  a1=$(submit_gpus a1 q0 low 1) && assert wait_state "$a1" RUNNING 30 || return 1
  a2=$(submit_gpus a2 q0 low 1) && assert wait_state "$a2" RUNNING 30 || return 1
  a3=$(submit_gpus a3 q0 low 2) && assert wait_state "$a3" RUNNING 30 || return 1
  mark_log
  t0=$SECONDS
  b1=$(submit_gpus b1 q1 low 2) || return 1
  b2=$(submit_gpus b2 q1 low 2) || return 1
  assert wait_state "$b1" RUNNING 30 ||
    { ilog "b1: $(job_state "$b1"), reason $(job_reason "$b1")"; gp why "$b1" >&2; log_since | grep -a gpupool >&2; return 1; }
  ilog "q1's first job started $(( SECONDS - t0 )) s after its submission"
  assert test "$(victims_since "$b1")" = "$a3 " || { ilog "victims: $(victims_since "$b1")"; return 1; }
  mark_log
  sleep 15
  ! log_has 'gpupool: preempt victim' || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  assert test "$(job_state "$b1") $(job_state "$a1") $(job_state "$a2")" = "RUNNING RUNNING RUNNING" || return 1
  assert test "$(job_state "$b2")" = PENDING
}

# KAI-Scheduler's department reclaim case on pool1 (quota 4): dep1 (quota
# 0) over queue0 (quota 1), dep2 (quota 4) over queue1 (quota 0) and queue2
# (quota 4).  queue0 and queue1 each run a LOW job of 2 GPUs; queue2's
# NORMAL job of 4 takes both: its department counted its sibling's
# borrowing against it.
WIDE_ACCOUNTS=(dep1:root dep2:root queue0:dep1 queue1:dep2 queue2:dep2)
test_reclaim_together_accounts() {
  local rc=0
  wide_tree_down >/dev/null 2>&1
  wide_tree_up || rc=1
  (( rc )) || department_reclaim_scenario || rc=1
  wide_tree_down || rc=1
  return $rc
}
department_reclaim_scenario() {
  local q0 q1 n2 t0
  wide_load 'Pool=pool1 Quota=4
Account=dep1 Pool=pool1 Quota=0
Account=queue0 Pool=pool1 Quota=1
Account=dep2 Pool=pool1 Quota=4
Account=queue1 Pool=pool1 Quota=0
Account=queue2 Pool=pool1 Quota=4' || return 1
  q0=$(submit_gpus l-q0 pool1 low 2 -A queue0) && assert wait_state "$q0" RUNNING 30 || return 1
  q1=$(submit_gpus l-q1 pool1 low 2 -A queue1) && assert wait_state "$q1" RUNNING 30 || return 1
  mark_log
  t0=$SECONDS
  n2=$(submit_gpus n-q2 pool1 normal 4 -A queue2) || return 1
  expect_both_evicted "$n2" "$q0" "$q1" "$t0"
}

# Run:ai's ranks: pool1 (quota 2) over dep1 (quota 1, Rank=1) > queue0
# (quota 1) and dep2 (quota 1) > queue1 (quota 1).  With pool1 down,
# queue1 submits three LOW jobs of 1 GPU, then queue0 three.  Once pool1 is
# up, the higher-ranked department's project gets the 2 GPUs no quota
# uses first: queue0 runs 3, queue1 1 (without ranks the older jobs, of
# queue1, would have gone first).  Before, Rank= was refused at load.
test_ranks_departments() {
  local rc=0
  wide_tree_down >/dev/null 2>&1
  wide_tree_up || rc=1
  (( rc )) || ranks_scenario || rc=1
  scontrol update PartitionName=pool1 State=UP >/dev/null 2>&1
  wide_tree_down || rc=1
  return $rc
}
ranks_scenario() {
  local hi=() lo=() k js running
  wide_load 'Pool=pool1 Quota=2
Account=dep1 Pool=pool1 Quota=1 Rank=1
Account=queue0 Pool=pool1 Quota=1
Account=dep2 Pool=pool1 Quota=1
Account=queue1 Pool=pool1 Quota=1' || return 1
  scontrol update PartitionName=pool1 State=DOWN || return 1
  for k in 1 2 3; do lo+=("$(submit_gpus lo$k pool1 low 1 -A queue1)") || return 1; done
  for k in 1 2 3; do hi+=("$(submit_gpus hi$k pool1 low 1 -A queue0)") || return 1; done
  # A pass orders them: queue0's three above queue1's (squeue's priority).
  assert wait_until 20 eval "(( \$(squeue -h -j ${hi[2]} -o %Q) > \$(squeue -h -j ${lo[0]} -o %Q) ))" ||
    { squeue -o '%i %j %Q %r' >&2; return 1; }
  scontrol update PartitionName=pool1 State=UP || return 1
  running() { squeue -h -t R -A "$1" -o %i | wc -l; }
  assert wait_until 30 eval '(( $(running queue0) + $(running queue1) == 4 ))' ||
    { squeue -o '%i %j %a %T %Q %r' >&2; return 1; }
  assert test "$(running queue0) $(running queue1)" = "3 1" || { squeue -o '%i %j %a %T %Q' >&2; return 1; }
  js=$(gp status --json) || return 1
  assert test "$(python3 -c '
import json, sys
d = json.load(sys.stdin)
pool = [p for p in d["pools"] if p["name"] == "pool1"][0]
print(" ".join("%s:%d:%d" % (q["account"], q["rank"], q["resources"]["gpu"]["fairshare"]) for q in pool["queues"]))
' <<<"$js")" = "dep1:1:3 dep2:0:1" || { ilog "$js"; return 1; }
}

# The accounts of WIDE_ACCOUNTS (NAME:PARENT), root's associations under
# the leaves, usable by sbatch once slurmctld has them.
wide_tree_up() {
  local cluster a leaves=()
  cluster=$(scontrol show config | sed -n 's/^ClusterName *= *//p')
  for a in "${WIDE_ACCOUNTS[@]}"; do
    if [[ ${a#*:} == root ]]; then
      sacctmgr -i add account "${a%%:*}" cluster="$cluster" >/dev/null 2>&1 || true
    else
      sacctmgr -i add account "${a%%:*}" parent="${a#*:}" cluster="$cluster" >/dev/null 2>&1 || true
      leaves+=("${a%%:*}")
    fi
  done
  sacctmgr -i add user root account="$(IFS=,; echo "${leaves[*]}")" cluster="$cluster" >/dev/null 2>&1 || true
  sacctmgr -i modify user root set qos=normal,low,high >/dev/null 2>&1 || true
  for a in "${leaves[@]}"; do
    assert wait_until 20 sbatch --test-only -A "$a" -p pool1 --qos=low --gres=gpu:1 -N1 -n1 -o /dev/null --wrap true ||
      { ilog "account $a not usable"; return 1; }
  done
}

wide_tree_down() {
  cancel_all 30
  sacctmgr -i delete user root account=queue0,queue1,queue2 >/dev/null 2>&1 || true
  wait_until 20 eval 'sacctmgr -i delete account queue0,queue1,queue2; ! wide_left queue' || true
  wait_until 20 eval 'sacctmgr -i delete account dep1,dep2; ! wide_left dep' || true
  ! wide_left '' || { ilog "accounts not removed: $(wide_left '')"; return 1; }
}

# wide_left PREFIX: this file's accounts sacctmgr still has; false if none.
wide_left() {
  sacctmgr -n -P show account format=account 2>/dev/null | grep -xE 'dep[12]|queue[012]' | grep "^$1"
}

# wa's NORMAL 4-GPU job NAME runs within 30 s, and its victims are exactly
# the jobs given; its id goes into the caller's variable NAME.
start_taking() {
  local name=$1 id t0=$SECONDS; shift
  id=$(submit_gpus "$name" wa normal 4) || return 1
  assert wait_state "$id" RUNNING 30 ||
    { ilog "$name: $(job_state "$id"), reason $(job_reason "$id")"; log_since | grep -a gpupool >&2; return 1; }
  ilog "$name started $(( SECONDS - t0 )) s after its submission"
  printf -v "$name" '%s' "$id"
  assert test "$(victims_since "$id")" = "$(printf '%s\n' "$@" | sort -n | tr '\n' ' ')" ||
    { ilog "victims of $name: $(victims_since "$id")"; return 1; }
}

# The victim plan on full nodes: wb (quota 0) borrows both 4-GPU nodes with
# four LOW jobs of 2 GPUs, placed node1, node2, node1, node2 in submission
# order.  wa's NORMAL job of 4 takes the cheapest set on one node, the two
# newest (on node2), and nothing on node1; a second NORMAL job of 4 then
# plans node1 (never node2, which the first holds) and takes node1's pair.
# Each starts within 30 s, then 15 s pass with no preemption.
test_victim_plan_nodes() {
  local l=() l1 l2 l3 l4 n1 n2 node id
  wide_load 'Pool=wa Quota=8
Pool=wb Quota=0' || return 1
  for node in node1 node2 node1 node2; do
    id=$(submit_gpus "l-$node" wb low 2 -w "$node") && assert wait_state "$id" RUNNING 30 || return 1
    l+=("$id")
  done
  l1=${l[0]} l2=${l[1]} l3=${l[2]} l4=${l[3]}
  mark_log
  start_taking n1 "$l2" "$l4" || return 1
  assert test "$(job_state "$l1") $(job_state "$l3")" = "RUNNING RUNNING" || return 1
  start_taking n2 "$l1" "$l3" || return 1
  mark_log
  sleep 15
  ! log_has 'gpupool: preempt victim' || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  assert test "$(job_state "$n1") $(job_state "$n2")" = "RUNNING RUNNING"
}

# Slurm starts a job only where its CPUs and memory fit too.  wb (quota 0)
# borrows one GPU of each 4-GPU node (8 CPUs, 8000 MiB) with a LOW job that
# holds most of its CPUs or memory (sbatch options HELD; node1's first).
# wa's (or ROOM_PARTITION's) NORMAL job of 1 GPU (sbatch ARGS) fits no node
# though each has 3 GPUs free: it takes the newer LOW job, on node2, starts
# within 30 s, then 15 s pass with no preemption.  Before, free GPUs counted
# as fitting: no victim, and the job waited ("Resources") until a LOW job
# ended.
reclaim_room_held() {
  local -a held
  local l1 l2 n t0 part=${ROOM_PARTITION:-wa}
  read -r -a held <<<"$1"; shift
  wide_load "Pool=$part Quota=8
Pool=wb Quota=0" || return 1
  l1=$(submit_gpus l1 wb low 1 -w node1 "${held[@]}") && assert wait_state "$l1" RUNNING 30 || return 1
  sleep 2
  l2=$(submit_gpus l2 wb low 1 -w node2 "${held[@]}") && assert wait_state "$l2" RUNNING 30 || return 1
  mark_log
  t0=$SECONDS
  n=$(submit_gpus n "$part" normal 1 "$@") || return 1
  assert wait_state "$n" RUNNING 30 ||
    { ilog "n: $(job_state "$n"), reason $(job_reason "$n")"; log_since | grep -a gpupool >&2; return 1; }
  ilog "n ($*) started $(( SECONDS - t0 )) s after its submission, on $(job_field "$n" NodeList)"
  assert test "$(victims_since "$n")" = "$l2 " || { ilog "victims of n: $(victims_since "$n")"; return 1; }
  mark_log
  sleep 15
  ! log_has 'gpupool: preempt victim' || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  assert test "$(job_state "$n")" = RUNNING
}

# The LOW jobs hold all 8 CPUs; n asks for 1.
test_reclaim_cpus_held() { reclaim_room_held "-c 8" -c 1; }

# The LOW jobs hold 6 CPUs; n asks for 4 per GPU (--cpus-per-gpu): Slurm
# records a minimum of 1 CPU and adds the rest at selection.
test_reclaim_cpus_per_gpu() { reclaim_room_held "-c 6" --cpus-per-gpu=4; }

# The LOW jobs hold 6 CPUs; n asks for none, and wd's DefCpuPerGPU=4
# gives it 4 once cons_tres has tested it.
test_reclaim_def_cpu_per_gpu() { ROOM_PARTITION=wd reclaim_room_held "-c 6"; }

# The LOW jobs hold 7500 of 8000 MiB; n asks for 1 CPU, and with it
# DefMemPerCPU's 1000 MiB.
test_reclaim_memory_held() { reclaim_room_held "--mem=7500" -c 1; }

# A job of more GPUs than a node has, without -N (--gpus=8 -n2 on 4-GPU
# nodes): Slurm spreads it over two nodes.  wb (quota 0) borrows both nodes
# with a LOW job of 4 each; wa's NORMAL job of 8 takes both, starts within
# 30 s, then 15 s pass with no preemption.  Before, the plan looked for one
# node of 8 GPUs, found none and offered no victim: it waited for good.
test_reclaim_spread_job() {
  local l1 l2 n t0 out
  wide_load 'Pool=wa Quota=8
Pool=wb Quota=0' || return 1
  l1=$(submit_gpus l1 wb low 4 -w node1) && assert wait_state "$l1" RUNNING 30 || return 1
  l2=$(submit_gpus l2 wb low 4 -w node2) && assert wait_state "$l2" RUNNING 30 || return 1
  mark_log
  t0=$SECONDS
  out=$(sbatch --parsable -J n -p wa --qos=normal --gpus=8 -n2 -o /dev/null -e /dev/null --wrap 'sleep 600') || return 1
  n=${out%%;*}
  ilog "n asks for NumNodes=$(job_field "$n" NumNodes)"
  expect_both_evicted "$n" "$l1" "$l2" "$t0"
}

# slurm_before MAJOR MINOR MICRO: slurmctld's release is older.
slurm_before() {
  local v
  v=$(sinfo -V | awk '{print $2}')
  [[ $(printf '%s\n%s.%s.%s\n' "$v" "$1" "$2" "$3" | sort -V | head -1) == "$v" && $v != "$1.$2.$3" ]]
}

# Since Slurm 23.11.5 a GPU with shards in use goes to no whole-GPU job
# (gres/shard, 8 per node over its 4 GPUs): the shard job s on node1 holds
# one.  wb (quota 0) borrows 2 GPUs of node2 (l2), then 1 of node1 (l1);
# wa's NORMAL job of 3 GPUs fits neither node: the plan takes l1 (less
# work lost, and the newer), which leaves node1 3 GPUs.  Before, node1's 3 GPUs no job held as a GPU
# counted as free: no victim, and the job waited.  22.05 gives l1 the
# shard's GPU too, and n starts on node1's other 3 at once: nothing is
# preempted.
test_reclaim_shards_held() {
  local s l1 l2 n t0 out want free
  wide_load 'Pool=wa Quota=8
Pool=wb Quota=0' || return 1
  out=$(sbatch --parsable -J s -p wb --qos=normal --gres=shard:1 -N1 -n1 -w node1 -o /dev/null -e /dev/null \
          --wrap 'sleep 600') || return 1
  s=${out%%;*}
  assert wait_state "$s" RUNNING 30 || return 1
  l2=$(submit_gpus l2 wb low 2 -w node2) && assert wait_state "$l2" RUNNING 30 || return 1
  sleep 3
  l1=$(submit_gpus l1 wb low 1 -w node1) && assert wait_state "$l1" RUNNING 30 || return 1
  want="$l1 " free=2
  slurm_before 23 11 5 && want= free=3
  # gpupool status counts the shard's GPU as held where Slurm does.
  assert test "$(gp status --json 2>/dev/null | jget "[p['placement']['largest_free_on_a_node'] for p in d['pools'] if p['name'] == 'wa'][0]")" = "$free" || return 1
  mark_log
  t0=$SECONDS
  n=$(submit_gpus n wa normal 3) || return 1
  assert wait_state "$n" RUNNING 30 ||
    { ilog "n: $(job_state "$n"), reason $(job_reason "$n")"; log_since | grep -a gpupool >&2; return 1; }
  ilog "n started $(( SECONDS - t0 )) s after its submission, on $(job_field "$n" NodeList); node1: $(scontrol show node node1 -d | grep -o 'GresUsed=.*')"
  assert test "$(victims_since "$n")" = "$want" || { ilog "victims of n: $(victims_since "$n") (want: $want)"; return 1; }
  mark_log
  sleep 15
  ! log_has 'gpupool: preempt victim' || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  assert test "$(job_state "$n") $(job_state "$s") $(job_state "$l2")" = "RUNNING RUNNING RUNNING"
}

# A partition that gives whole nodes (OverSubscribe=EXCLUSIVE): wx's NORMAL
# job of 1 GPU needs a node of its own.  wb borrows one GPU of each node
# (node1's first); wx's job takes the newer, on node2, and starts within
# 30 s.  Before, on Slurm 26.05 (which marks the job whole-node only after
# asking for victims), the 3 free GPUs of each node counted as fitting: no
# victim, and the job waited for good.
test_reclaim_exclusive_partition() {
  local l1 l2 n
  wide_load 'Pool=wx Quota=8
Pool=wb Quota=0' || return 1
  l1=$(submit_gpus l1 wb low 1 -w node1) && assert wait_state "$l1" RUNNING 30 || return 1
  sleep 2
  l2=$(submit_gpus l2 wb low 1 -w node2) && assert wait_state "$l2" RUNNING 30 || return 1
  mark_log
  n=$(submit_gpus n wx normal 1) || return 1
  assert wait_state "$n" RUNNING 30 ||
    { ilog "n: $(job_state "$n"), reason $(job_reason "$n")"; log_since | grep -a gpupool >&2; return 1; }
  ilog "wx's job runs on $(job_field "$n" NodeList); victims: $(victims_since "$n")"
  assert test "$(victims_since "$n" | wc -w)" = 1
}

# Slurm gives a job of whole nodes every GPU there, whatever it asked
# (_handle_exclusive_gres): a LOW --exclusive job of 1 GPU (not held by
# quota) is given a node's 4, and then wa (quota 2) holds its NORMAL
# --exclusive job of 1 GPU for quota (it needs 4) while a node is free, where a
# NORMAL job of 1 GPU without it starts.  Before, the --exclusive job
# started and held 4 GPUs, 2 past wa's quota.
test_whole_node_counts_its_gpus() {
  local l x n gres rc=0
  wide_load 'Pool=wa Quota=2' || return 1
  l=$(submit_gpus l wa low 1 --exclusive) && assert wait_state "$l" RUNNING 30 || return 1
  gres=$(scontrol -d show job "$l" | grep -oE 'GRES=[^ ]*' | head -n1)
  ilog "a LOW --exclusive job of 1 GPU holds $gres on $(job_node "$l")"
  [[ $gres == *gpu*:4* || $gres == *gpu*=4* ]] || rc=1
  scancel "$l"
  assert wait_until 30 eval '[[ -z $(squeue -h -j '"$l"' -o %i 2>/dev/null) ]]' || rc=1
  if (( rc == 0 )); then
    x=$(submit_gpus x wa normal 1 --exclusive) || rc=1
    assert wait_until 15 eval '[[ "$(job_reason '"$x"')" == "GpuPoolQuotaTooSmall:wa needs 4 quota 2" ]]' ||
      { ilog "wa's --exclusive job: $(job_state "$x") $(job_reason "$x") $(scontrol -d show job "$x" | grep -oE 'GRES=[^ ]*')"; rc=1; }
    n=$(submit_gpus n wa normal 1) && assert wait_state "$n" RUNNING 30 || rc=1
    assert test "$(job_state "$x")" = PENDING || rc=1
  fi
  cancel_all 30
  return $rc
}

# An update that changes what a held job needs is seen at once, not at the
# next periodic pass: wa (quota 2) holds its NORMAL --exclusive job of 1 GPU
# for quota (a node's 4 GPUs); `scontrol update OverSubscribe=yes` makes it
# a plain 1-GPU job, which starts within 10 s, holding 1 GPU.  Slurm calls
# no priority hook for a held job's update, and before, the pass skipped it
# (the jobs' digest left out the whole-node flag): the job waited for the
# periodic pass, here RecalcInterval=120.
test_update_shared_releases() {
  local x gres
  conf_load "${WIDE_CONF_HEAD/RecalcInterval=2/RecalcInterval=120}" 'Pool=wa Quota=2' || return 1
  x=$(submit_gpus x wa normal 1 --exclusive) || return 1
  assert wait_until 15 eval '[[ "$(job_reason '"$x"')" == "GpuPoolQuotaTooSmall:wa needs 4 quota 2" ]]' ||
    { ilog "x: $(job_state "$x") $(job_reason "$x")"; return 1; }
  sleep 5   # past the pass that follows a submit (a burst ends after 2 s)
  scontrol update jobid="$x" OverSubscribe=yes || return 1
  assert wait_state "$x" RUNNING 10 ||
    { ilog "x after OverSubscribe=yes: $(job_state "$x") $(job_reason "$x")"; return 1; }
  gres=$(scontrol -d show job "$x" | grep -oE 'GRES=[^ ]*' | head -n1)
  ilog "x runs on $(job_node "$x") with $gres"
  [[ $gres =~ gpu(:[A-Za-z0-9_.-]+)?[:=]1($|[^0-9]) ]] || { ilog "x holds $gres, want 1 GPU"; return 1; }
  cancel_all 30
}

# A job listing an OverSubscribe=EXCLUSIVE partition beside a shared one
# counts whole nodes there every pass, not only while gpupool lets it try
# there: -p wx,q0, 1 GPU; wx (quota 2) would give it node2's 4 GPUs, so wx
# refuses it and it may start in q0 only, where node1 is full of q0's own
# jobs (quota 8).  For 10 s it stays pending, in no partition of wx's; when
# one of q0's jobs ends it starts in q0 with 1 GPU.  gpupool counts the job
# by the partitions its user listed, not by the list it narrowed to q0
# (which alone would count 1 GPU and let it try wx again).  This did not go
# wrong before on 22.05 or 26.05.3 either: Slurm had marked the job
# whole-node when it first tried it in wx, and the mark stays.
test_listed_exclusive_partition_counts() {
  local f=() i j gres part
  wide_load 'Pool=wx Quota=2
Pool=q0 Quota=8' || return 1
  for i in 1 2 3 4; do
    f+=("$(submit_gpus "f$i" q0 normal 1)") || return 1
  done
  for i in "${f[@]}"; do assert wait_state "$i" RUNNING 30 || return 1; done
  j=$(submit_gpus j wx,q0 normal 1) || return 1
  sleep 10
  assert test "$(job_state "$j")" = PENDING ||
    { ilog "j: $(job_state "$j") in $(job_field "$j" Partition) on $(job_node "$j") with $(scontrol -d show job "$j" | grep -oE 'GRES=[^ ]*' | head -n1)"; cancel_all 30; return 1; }
  ilog "j waits: $(job_reason "$j")"
  scancel "${f[0]}"
  assert wait_state "$j" RUNNING 30 || { ilog "j: $(job_state "$j") $(job_reason "$j")"; cancel_all 30; return 1; }
  part=$(job_field "$j" Partition)
  gres=$(scontrol -d show job "$j" | grep -oE 'GRES=[^ ]*' | head -n1)
  ilog "j runs in $part on $(job_node "$j") with $gres"
  cancel_all 30
  [[ $part == q0 && $gres =~ gpu(:[A-Za-z0-9_.-]+)?[:=]1($|[^0-9]) ]]
}

# swap_starts VICTIM: after mark_log, wa's NORMAL job of 2 ("swap") starts
# within 30 s taking VICTIM alone, by a swap of wb's in-quota job; then 15 s
# pass with no preemption.  Prints the job's id.
swap_starts() {
  local want=$1 id n
  id=$(submit_gpus swap wa normal 2) || return 1
  assert wait_state "$id" RUNNING 30 ||
    { ilog "swap: $(job_state "$id"), reason $(job_reason "$id")"; gp why "$id" >&2; log_since | grep -a gpupool >&2; return 1; }
  n=$(victims_since "$id")
  assert test "$n" = "$want " || { ilog "victims: $n (want $want)"; return 1; }
  log_has "swap: wb within its quota" || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  mark_log
  sleep 15
  ! log_has 'gpupool: preempt victim' || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  echo "$id"
}

# A swap (policy.md R5): wa and wb (quota 4 each) each hold 4 GPUs.  wa's
# own LOW GPUs are one on each node, so R4 frees neither node for its
# NORMAL job of 2; wb's LOW job of 2 on node2 is within wb's quota.  The
# NORMAL job starts within 30 s taking that job alone (wa's two LOW GPUs
# then count as its borrowed excess), and 15 s pass with no preemption.
# Before, it waited until a job ended by itself.
test_swap_places() {
  local spec name part qos gpus node id n ids=()
  wide_load 'Pool=wa Quota=4
Pool=wb Quota=4' || return 1
  for spec in "n1 wa normal 2 node1" "a1 wa low 1 node1" "b1 wb normal 1 node1" \
              "a2 wa low 1 node2" "l wb low 2 node2" "b2 wb normal 1 node2"; do
    read -r name part qos gpus node <<<"$spec"
    id=$(submit_gpus "$name" "$part" "$qos" "$gpus" -w "$node") && assert wait_state "$id" RUNNING 30 || return 1
    ids+=("$id")
  done
  mark_log
  id=$(swap_starts "${ids[4]}") || return 1
  assert test "$(job_state "$id") $(job_state "${ids[1]}") $(job_state "${ids[3]}")" = "RUNNING RUNNING RUNNING"
}

# Swap=least-work (policy.md R5): wa and wb (quota 4 each) each hold 4 GPUs.
# wa's NORMAL job of 2 may take wa's own LOW job of 2 on node1 (R4) or, by
# a swap, wb's LOW job of 2 on node2, which started at least 5 s later and
# so loses less work.  With Swap=least-work it takes wb's (Swap=needed
# takes its own: test_victim_plan_nodes' rule); then 15 s with no preemption.
test_swap_least_work() {
  local spec name part qos gpus node id ids=()
  wide_load 'Swap=least-work
Pool=wa Quota=4
Pool=wb Quota=4' || return 1
  for spec in "n1 wa normal 2 node1" "a1 wa low 2 node1" "b1 wb normal 2 node2"; do
    read -r name part qos gpus node <<<"$spec"
    id=$(submit_gpus "$name" "$part" "$qos" "$gpus" -w "$node") && assert wait_state "$id" RUNNING 30 || return 1
    ids+=("$id")
  done
  sleep 5
  id=$(submit_gpus l wb low 2 -w node2) && assert wait_state "$id" RUNNING 30 || return 1
  ids+=("$id")
  sleep 3  # a pass (RecalcInterval=2) sees l running: else node2 has no candidate yet
  mark_log
  id=$(swap_starts "${ids[3]}") || return 1  # wb's newer LOW job
  assert test "$(job_state "$id") $(job_state "${ids[1]}")" = "RUNNING RUNNING"
}

# --- Placement= (placement.hpp) --------------------------------------------

job_node() { squeue -h -j "$1" -o %N 2>/dev/null | head -n1; }
node_weight() { scontrol show node "$1" 2>/dev/null | sed -n 's/.*Weight=\([0-9]*\).*/\1/p'; }
weights_are() { [[ "$(node_weight node1) $(node_weight node2)" == "$1" ]]; }

# placed_on NAME PART QOS GPUS NODE: the job starts within 20 s on NODE.
placed_on() {
  local id node=$5
  id=$(submit_gpus "$1" "$2" "$3" "$4") || return 1
  assert wait_state "$id" RUNNING 20 || { ilog "$1: $(job_state "$id"), reason $(job_reason "$id")"; return 1; }
  [[ $(job_node "$id") == "$node" ]] || { ilog "$1 ($4 GPUs) started on $(job_node "$id"), not $node"; return 1; }
}

# Placement=pack: node1 has 3 GPUs free, node2 2, all held by NORMAL
# jobs.  gpupool gives node1 Weight 4096 + 3*5+3 and node2 4096 + 2*5+2
# (placement.hpp), so two 1-GPU jobs go to node2, the fullest node that
# fits, and a 3-GPU job then starts at once on node1.
# Before (and without Placement=, Slurm's own order), the 1-GPU jobs went
# first fit to node1 and the 3-GPU job waited.
test_pack_places() {
  local id spec name gpus node
  wide_load 'Pool=wa Quota=8 Placement=pack' || return 1
  for spec in "a 1 node1" "b 2 node2"; do
    read -r name gpus node <<<"$spec"
    id=$(submit_gpus "$name" wa normal "$gpus" -w "$node") && assert wait_state "$id" RUNNING 30 || return 1
  done
  # gpupool status: 5 GPUs free, at most 3 on one node, no node whole.
  assert wait_until 10 eval 'gp status 2>/dev/null | grep -qE "^wa +pack +5 +3 +0$"' || { gp status >&2; return 1; }
  # Not fatal alone: what Slurm then does is the test.
  wait_until 20 weights_are "4114 4108" || ilog "Weights: $(node_weight node1) $(node_weight node2), not 4114 4108"
  placed_on c wa normal 1 node2 || return 1
  placed_on d wa normal 1 node2 || return 1
  placed_on e wa normal 3 node1
}

# CPU-only jobs follow the pool's Placement= (one Weight per node for all
# the partition's jobs; CpuPlacement= is refused): a NORMAL job holds a GPU
# of node2, so node2 gets the lower Weight and a job asking no GPU goes
# there too.  Slurm's own order (and gpupool before Placement=) put it on
# node1.
test_pack_cpu_jobs_follow() {
  local id
  wide_load 'Pool=wa Quota=8 Placement=pack' || return 1
  id=$(submit_gpus g wa normal 1 -w node2) && assert wait_state "$id" RUNNING 30 || return 1
  assert wait_until 20 eval '(( $(node_weight node2) < $(node_weight node1) ))' ||
    { ilog "Weights: $(node_weight node1) $(node_weight node2)"; return 1; }
  id=$(sbatch --parsable -J cpu -p wa --qos=normal -N1 -n1 -o /dev/null -e /dev/null --wrap 'sleep 600') || return 1
  id=${id%%;*}
  assert wait_state "$id" RUNNING 20 || return 1
  [[ $(job_node "$id") == node2 ]] || { ilog "the CPU-only job started on $(job_node "$id"), not node2"; return 1; }
}

# Pack on empty nodes: four 1-GPU jobs submitted together land on one
# node, and a 4-GPU job then starts at once on the other.
test_pack_keeps_a_node_whole() {
  local ids=() id i nodes
  wide_load 'Pool=wa Quota=8 Placement=pack' || return 1
  for i in 1 2 3 4; do ids+=("$(submit_gpus "s$i" wa normal 1)") || return 1; done
  for id in "${ids[@]}"; do assert wait_state "$id" RUNNING 30 || return 1; done
  nodes=$(for id in "${ids[@]}"; do job_node "$id"; done | sort -u | tr '\n' ' ')
  assert test "$(wc -w <<<"$nodes")" = 1 || { ilog "1-GPU jobs on: $nodes"; return 1; }
  if [[ $nodes == "node1 " ]]; then placed_on whole wa normal 4 node2; else placed_on whole wa normal 4 node1; fi
}

# Placement=pack sets Weights with update_node(), which splits a node's
# config record when some but not all of its nodes change Weight, and
# slurmctld walks every record for every job it tests.  Slurm 23.11 and
# later merge alike records back at most once a minute
# (consolidate_config_list), and only if a split came since the last
# look; 22.05 never does.  gpupool merges them after it sets Weights
# (22.05: itself; later: asking consolidate_config_list at once).  A NORMAL
# job on node2 gives the two nodes different Weights (two records), its end
# the same Weight again: the two records become one.  Before, on 22.05,
# they stayed two for good (and after a day of passes, one per node); on
# 26.05 within a minute, or never when Slurm's look fell between the two.
test_pack_merges_config_records() {
  local id rc=0
  local want='gpupool: Placement: .* [1-9][0-9]* alike config record\(s\) merged'
  wide_load 'Pool=wa Quota=8 Placement=pack' || return 1
  id=$(submit_gpus m wa normal 1 -w node2) && assert wait_state "$id" RUNNING 30 || return 1
  assert wait_until 20 eval '(( $(node_weight node2) < $(node_weight node1) ))' ||
    { ilog "Weights: $(node_weight node1) $(node_weight node2)"; return 1; }
  scontrol setdebug debug2 || return 1
  mark_log
  scancel "$id"
  if ! assert wait_until 20 eval '(( $(node_weight node2) == $(node_weight node1) ))'; then
    ilog "Weights: $(node_weight node1) $(node_weight node2)"; rc=1
  elif ! assert wait_until 30 log_has "$want"; then
    log_since | grep -a -iE 'config record|Placement' >&2; rc=1
  fi
  scontrol setdebug info
  return "$rc"
}

# Spread: a pool with Placement=spread over a partition with LLN=YES; four
# 1-GPU -N1 jobs land two on each node.  On 22.05 Slurm's LLN does it
# (the nodes' Weights level: gpupool gives back those an earlier test's
# pack set), even for jobs submitted together.  Slurm 26.05 places a job
# capped at one node by Weight alone (cons_tres _get_one_res, never LLN;
# all four went to node1, natively too): there gpupool gives the pool's
# nodes Weights, the node with the most free GPUs first, refreshed every
# pass, so the jobs go one at a time, each after the Weights followed the
# last.  Before, on 26.05, all four went to node1.
test_spread_places() {
  local ids=() id i
  wide_load 'Pool=ws Quota=8 Placement=spread' || return 1
  local by_weight=false level="1 1"
  if [[ $(scontrol --version) == *" 26."* ]]; then
    by_weight=true level="4096 4096"  # (rank 0 + 1) * 4096 + (4 - 4 free)
  fi
  assert wait_until 20 weights_are "$level" || { ilog "Weights: $(node_weight node1) $(node_weight node2)"; return 1; }
  for i in 1 2 3 4; do
    ids+=("$(submit_gpus "t$i" ws normal 1)") || return 1
    if $by_weight; then
      assert wait_state "${ids[-1]}" RUNNING 30 || return 1
      # The pass after the start raises that node's Weight by one.
      assert wait_until 20 eval '(( $(node_weight node1) + $(node_weight node2) == 8192 + '"$i"' ))' ||
        { ilog "Weights after t$i: $(node_weight node1) $(node_weight node2)"; return 1; }
    fi
  done
  for id in "${ids[@]}"; do assert wait_state "$id" RUNNING 30 || return 1; done
  if $by_weight; then
    assert grep -q "has LLN: Slurm 26.05 places a job capped at one node" "$CTLD_LOG" || return 1
  fi
  assert test "$(for id in "${ids[@]}"; do job_node "$id"; done | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" = "2 2 " ||
    { ilog "-N1 jobs on: $(for id in "${ids[@]}"; do job_node "$id"; done | tr '\n' ' ') (want two on each)"; return 1; }
}

# --- Consolidation (victim_plan.cpp) -----------------------------------------

# Two LOW 2-GPU jobs of wb (quota 4, within it), one per node: node1 and
# node2 each have 2 GPUs free.  Echoes "A B" (node1's, node2's).
two_low_apart() {
  local a b f
  a=$(submit_gpus ca wb low 2) && assert wait_state "$a" RUNNING 30 || return 1
  f=$(submit_gpus cf wb low 2) && assert wait_state "$f" RUNNING 30 || return 1
  b=$(submit_gpus cb wb low 2) && assert wait_state "$b" RUNNING 30 || return 1
  scancel "$f"
  assert wait_until 30 eval '[[ -z $(squeue -h -j '"$f"' -o %T 2>/dev/null) ]]' || return 1
  [[ "$(job_node "$a") $(job_node "$b")" == "node1 node2" ]] ||
    { ilog "LOW jobs on $(job_node "$a") $(job_node "$b"), not node1 node2"; return 1; }
  echo "$a $b"
}

# wa's NORMAL job of 4 GPUs (quota 4) fits on no node though 4 are free.
# One LOW job is requeued and starts again on the other node, the NORMAL
# job starts within 30 s, nothing is cancelled, and 15 s pass with no
# preemption.  Before, it waited for a LOW job to end by itself (wb is
# within its quota: nothing to reclaim).
test_consolidation_moves() {
  local a b n moved stay
  wide_load 'Pool=wa Quota=4
Pool=wb Quota=4' || return 1
  read -r a b < <(two_low_apart) && [[ -n $b ]] || return 1
  mark_log
  n=$(submit_gpus cn wa normal 4) || return 1
  assert wait_state "$n" RUNNING 30 ||
    { ilog "cn: $(job_state "$n"), reason $(job_reason "$n")"; gp why "$n" >&2; log_since | grep -a gpupool >&2; return 1; }
  moved=$(victims_since "$n")
  moved=${moved% }
  [[ $moved == "$a" || $moved == "$b" ]] || { ilog "victims: '$moved' (want one of $a $b)"; return 1; }
  stay=$a; [[ $moved == "$a" ]] && stay=$b
  log_has "JobId=$moved .*rule Consolidation: consolidation: it can start again at once on node" ||
    { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  # Requeued (cred_expire=5: it may start 6 s later), then running on the
  # node the NORMAL job left free.
  assert wait_state "$moved" RUNNING 30 || { ilog "moved: $(job_state "$moved"), reason $(job_reason "$moved")"; return 1; }
  assert test "$(job_restarts "$moved")" = 1 || return 1
  # Its record says why it was requeued.
  gp why "$moved" | grep -q "by job $n (pool wa, tier normal) under rule Consolidation (consolidation: it can" ||
    { gp why "$moved" >&2; return 1; }
  assert test "$(job_node "$moved")" = "$(job_node "$stay")" ||
    { ilog "moved to $(job_node "$moved"), NORMAL on $(job_node "$n"), the other on $(job_node "$stay")"; return 1; }
  mark_log
  sleep 15
  ! log_has 'gpupool: preempt victim' || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  assert test "$(job_state "$n") $(job_state "$a") $(job_state "$b")" = "RUNNING RUNNING RUNNING"
}

# Consolidation=no: the same NORMAL job waits (Resources) and nothing is
# preempted for 15 s.
test_consolidation_off() {
  local a b n
  wide_load 'Consolidation=no
Pool=wa Quota=4
Pool=wb Quota=4' || return 1
  read -r a b < <(two_low_apart) && [[ -n $b ]] || return 1
  mark_log
  n=$(submit_gpus cn wa normal 4) || return 1
  sleep 15
  ! log_has 'gpupool: preempt victim' || { log_since | grep -a 'gpupool: preempt' >&2; return 1; }
  assert test "$(job_state "$n") $(job_state "$a") $(job_state "$b")" = "PENDING RUNNING RUNNING"
}

# "gpupool why" shows the victim plan from the live nodes.  wb's two
# non-preemptible jobs hold a GPU on each node; wa's NORMAL job of 4 is
# within its quota and 6 GPUs are free, 3 a node, with nothing it may
# preempt: why says no node can be freed for it, node by node, and queue
# that it waits for one node.  Once wb's job on node2 ends the job
# starts there.
test_why_victim_plan() {
  local a b n text js
  wide_load 'Pool=wa Quota=4
Pool=wb Quota=4' || return 1
  a=$(submit_gpus a wb normal 1 -w node1) && assert wait_state "$a" RUNNING 30 || return 1
  b=$(submit_gpus b wb normal 1 -w node2) && assert wait_state "$b" RUNNING 30 || return 1
  n=$(submit_gpus n wa normal 4) || return 1
  assert wait_until 30 eval '[[ $(job_reason "$n") == Resources ]]' || return 1
  text=$(gp why "$n") || return 1
  ilog "$(grep -A4 '^Victim plan' <<<"$text")"
  assert grep -qF "Victim plan: no node can be freed for it now: no node of its partitions that takes jobs has 4 GPUs free or held by jobs it may take, with the CPUs and memory it asks for. Free GPUs: 6 over its nodes, 3 at most on one." <<<"$text" ||
    { printf '%s\n' "$text" >&2; return 1; }
  # 1 CPU and DefMemPerCPU's 1000 MiB of wb's job on each node.
  assert grep -qE '^node1 +4 +3 +0 +1 +7 +7000M +up$' <<<"$text" &&
    assert grep -qE '^node2 +4 +3 +0 +1 +7 +7000M +up$' <<<"$text" || { printf '%s\n' "$text" >&2; return 1; }
  js=$(gp why --json "$n") || return 1
  assert test "$(jget "d['job']['victim_plan']['outcome']" <<<"$js")" = no_node || return 1
  # queue says so too: 6 free GPUs in number, on no one node.
  js=$(gp queue --json) || return 1
  assert test "$(jget "[j['reason_text'] for j in d['jobs'] if j['job_id'] == $n][0]" <<<"$js")" = "waiting for one node: 6 GPUs free over wa's nodes, 3 at most on one" ||
    { gp queue >&2; return 1; }
  scancel "$b"
  assert wait_state "$n" RUNNING 30 && assert test "$(job_field "$n" NodeList)" = node2
}

# why_plan_room "LOW_ARGS" l1|l2 [N_ARGS...]: "gpupool why" reads each
# node's CPUs and memory, what each job holds there and where the job may
# run.  wb (quota 0) borrows a GPU of each node with LOW_ARGS (node1's
# older).  slurmctld's gpupool.conf gives wa no quota, so its NORMAL job n
# of 1 GPU (N_ARGS) is held and nothing is preempted; why, given wa a quota
# of 8 by --conf, shows the plan the plugin would make: the named LOW
# job's node, since the free GPUs fit neither node without it.
why_plan_room() {
  local -a low
  local l1 l2 n conf text want
  read -r -a low <<<"$1"
  wide_load 'Pool=wa Quota=0
Pool=wb Quota=0' || return 1
  l1=$(submit_gpus l1 wb low 1 -w node1 "${low[@]}") && assert wait_state "$l1" RUNNING 30 || return 1
  sleep 2
  l2=$(submit_gpus l2 wb low 1 -w node2 "${low[@]}") && assert wait_state "$l2" RUNNING 30 || return 1
  if [[ $2 == l1 ]]; then want="node1 job $l1"; else want="node2 job $l2"; fi
  shift 2
  n=$(submit_gpus n wa normal 1 -c 1 "$@") || return 1
  conf=$GPUPOOL_CLUSTER_DIR/log/why-plan.conf
  printf '%s\nPool=wa Quota=8\nPool=wb Quota=0\n' "$WIDE_CONF_HEAD" >"$conf"
  assert wait_until 20 eval '[[ $(job_state "$n") == PENDING ]]' || return 1
  text=$(gp why --conf="$conf" "$n") || return 1
  ilog "$(grep '^Victim plan' <<<"$text")"
  assert grep -qxF "Victim plan (the jobs preempt/gpupool would let Slurm preempt, node by node): on node $want." <<<"$text" ||
    { printf '%s\n' "$text" >&2; return 1; }
  assert test "$(job_state "$l1") $(job_state "$l2") $(job_state "$n")" = "RUNNING RUNNING PENDING"
}

# The LOW jobs hold all 8 CPUs of their node.
test_why_plan_cpus() { why_plan_room "-c 8" l2; }

# The LOW jobs hold 7500 of 8000 MiB; n asks for DefMemPerCPU's 1000.
test_why_plan_memory() { why_plan_room "--mem=7500" l2; }

# n may not use node2 (-x): the plan takes node1's job.
test_why_plan_excluded() { why_plan_room "-c 8" l1 -x node2; }

# A partition's DefCpuPerGPU (wd: 4) raises a pending job's CPUs once
# cons_tres has tested it (it writes CpusPerTres=gpu:4 into the job).
# wb's jobs h1 and h2 (QOS high: not preemptible here) hold 5 of each
# node's 8 CPUs, so wd's NORMAL job n of 1 GPU fits neither node's 3 free
# CPUs and waits.  why, given a gpupool.conf where high is preemptible and
# wb has no quota, plans the newer one's node.  Before, it read n's ask as
# 1 CPU and said the free GPUs fit it on node1.
test_why_plan_def_cpu_per_gpu() {
  local h1 h2 n conf text head
  wide_load 'Pool=wb Quota=8
Pool=wd Quota=8' || return 1
  h1=$(submit_gpus h1 wb high 1 -w node1 -c 5) && assert wait_state "$h1" RUNNING 30 || return 1
  sleep 2
  h2=$(submit_gpus h2 wb high 1 -w node2 -c 5) && assert wait_state "$h2" RUNNING 30 || return 1
  n=$(submit_gpus n wd normal 1) || return 1
  assert wait_until 30 eval '[[ $(scontrol -o show job "$n") == *CpusPerTres=gpu:4* ]]' ||
    { scontrol -o show job "$n" >&2; return 1; }
  head=${WIDE_CONF_HEAD/Tier=high   QOS=high   Priority=300 Preemptible=no/Tier=high   QOS=high   Priority=50 Preemptible=yes}
  [[ $head != "$WIDE_CONF_HEAD" ]] || { ilog "WIDE_CONF_HEAD has no high tier line to change"; return 1; }
  conf=$GPUPOOL_CLUSTER_DIR/log/why-plan-def.conf
  printf '%s\nPool=wb Quota=0\nPool=wd Quota=8\n' "$head" >"$conf"
  text=$(gp why --conf="$conf" "$n") || return 1
  ilog "$(grep '^Victim plan' <<<"$text")"
  assert grep -qxF "Victim plan (the jobs preempt/gpupool would let Slurm preempt, node by node): on node node2 job $h2." <<<"$text" ||
    { printf '%s\n' "$text" >&2; return 1; }
  assert test "$(job_state "$h1") $(job_state "$h2") $(job_state "$n")" = "RUNNING RUNNING PENDING" || return 1
  # cons_tres keeps the last partition's DefCpuPerGPU while the partition
  # record is the same: test a job of wb so that no later test gets wd's.
  scancel "$n"
  sbatch --test-only -p wb --gres=gpu:1 -N1 -n1 -o /dev/null --wrap true >/dev/null 2>&1 || true
}

# Nodes whose GPUs are of gres.conf Flags=explicit (Slurm 23.11 and later):
# run.sh runs these tests on a cluster of EXPLICIT_SHAPE, after the others.
EXPLICIT_TESTS=(test_explicit_gpus_count_as_asked)
EXPLICIT_SHAPE=(GPUPOOL_NODE_COUNT=2 GPUS_PER_NODE=4 CPUS_PER_NODE=8 GPUPOOL_MEMORY_MB=8000 GPUPOOL_GPU_FLAGS=explicit
  "GPUPOOL_PARTITIONS=PartitionName=wa Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
PartitionName=wx Nodes=node[1-2] OverSubscribe=EXCLUSIVE MaxTime=INFINITE State=UP")

# gpu_held JOBID: the GPUs the running job holds, as scontrol -d shows them.
gpu_held() {
  local g
  g=$(scontrol -d show job "$1" | grep -oE 'GRES=[^ ]*' | head -n1)
  [[ $g =~ gpu(:[A-Za-z0-9_.-]+)?[:=]([0-9]+) ]] && echo "${BASH_REMATCH[2]}" || echo 0
}

# Where the GPUs are of Flags=explicit a job of whole nodes gets only the
# GPUs it asks for (Slurm's _handle_exclusive_gres skips them), so gpupool
# counts those: in wa (quota 2) a NORMAL --exclusive job of 1 GPU and one of
# none both start, holding 1 and 0 GPUs, and a 2-GPU job is then held at
# wa's quota (1 used of 2); in wx (OverSubscribe=EXCLUSIVE, quota 2) a
# 1-GPU job starts holding 1.  Before, each whole-node job counted a node's
# 4 GPUs and was held for good within its quota ("GpuPoolQuotaTooSmall:wa
# needs 4 quota 2").
test_explicit_gpus_count_as_asked() {
  local x c y z j rc=0
  wide_load 'Pool=wa Quota=2
Pool=wx Quota=2' || return 1
  x=$(submit_gpus x wa normal 1 --exclusive) || return 1
  c=$(sbatch --parsable -J c -p wa --qos=normal -N1 -n1 --exclusive -o /dev/null -e /dev/null --wrap 'sleep 600') || return 1
  for j in "$x" "$c"; do
    assert wait_state "$j" RUNNING 30 ||
      { ilog "job $j: $(job_state "$j") $(job_reason "$j")"; rc=1; }
  done
  ilog "x (1 GPU, --exclusive) holds $(gpu_held "$x") GPU(s) on $(job_node "$x"); c (no GPU, --exclusive) $(gpu_held "$c") on $(job_node "$c")"
  assert test "$(gpu_held "$x")" = 1 || rc=1
  assert test "$(gpu_held "$c")" = 0 || rc=1
  y=$(submit_gpus y wa normal 2) || rc=1
  assert wait_until 15 eval '[[ "$(job_reason '"$y"')" == "GpuPoolQuota:wa 1/2" ]]' ||
    { ilog "y (2 GPUs): $(job_state "$y") $(job_reason "$y")"; rc=1; }
  cancel_all 30
  z=$(submit_gpus z wx normal 1) || return 1
  assert wait_state "$z" RUNNING 30 || { ilog "z (wx, 1 GPU): $(job_state "$z") $(job_reason "$z")"; rc=1; }
  assert test "$(gpu_held "$z")" = 1 || { ilog "z holds $(gpu_held "$z") GPUs"; rc=1; }
  cancel_all 30
  return $rc
}
