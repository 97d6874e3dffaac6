#!/usr/bin/env bash
# Live cost of reclaim on the local cluster: NODES x GPUS
# fake GPUs, every GPU of pool1 and pool2's nodes busy with 1-GPU LOW jobs of
# pool1 (half of them borrowed from pool2), then RECLAIM non-preemptible
# 1-GPU NORMAL jobs of pool2 that take their quota back.  Prints the time to
# start them all, slurmctld's CPU over that time, sdiag's main and backfill
# cycles (mean, max) and, with gpupool, how often preempt/gpupool rebuilt its
# running-job snapshot (per main scheduling cycle).
#
#   scripts/preempt-bench.sh [gpupool|native]...      (default: both)
#
# native: priority/basic + preempt/qos (cluster.sh GPUPOOL_PLUGINS=0), LOW
# preemptible by NORMAL through the QOS's Preempt list, as a site would.
# Environment: GPUPOOL_SLURM_PREFIX and GPUPOOL_BUILD as for cluster.sh
# (another release, another build); BENCH_NODES (default 4: pool1 and pool2
# share them; more than 6 puts only pool1 and pool2 on node[1-N]),
# BENCH_GPUS (per node, default 8) and BENCH_RECLAIM (default 16).  The
# issue's size: BENCH_NODES=32 BENCH_GPUS=13 BENCH_RECLAIM=50 (416 running).
# Takes the live lock; leaves the cluster down.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER="$REPO/scripts/cluster.sh"
GPUS=${BENCH_GPUS:-8}
RECLAIM=${BENCH_RECLAIM:-16}
NODES=${BENCH_NODES:-4}       # pool1 and pool2 share node[1-NODES]
TOTAL=$(( NODES * GPUS ))
HALF=$(( TOTAL / 2 ))
modes=("$@")
(( ${#modes[@]} )) || modes=(native gpupool)

exec 9>/tmp/gpupool-live.lock
flock 9

conf=$(mktemp)
trap 'rm -f "$conf"' EXIT
sed -E "s/^Pool=pool1 .*/Pool=pool1 Quota=$HALF Weight=1/; s/^Pool=pool2 .*/Pool=pool2 Quota=$HALF Weight=1/" \
  "$REPO/etc/gpupool.conf.example" >"$conf"
# cluster.sh's partitions put pool1 and pool2 on node[1-4]; other sizes get
# their own (pool3 and its nodes left out).
node_env=()
if (( NODES != 4 )); then
  sed -i '/^Pool=pool3 /d' "$conf"
  node_env=(GPUPOOL_NODE_COUNT="$NODES" GPUPOOL_PARTITIONS="PartitionName=pool1 Nodes=node[1-$NODES] Default=YES MaxTime=INFINITE State=UP
PartitionName=pool2 Nodes=node[1-$NODES] MaxTime=INFINITE State=UP")
fi

sdiag_field() {  # sdiag_field "Main schedule statistics" "Mean cycle"
  sdiag | awk -v sec="$1" -v key="$2" 'index($0, sec) { on = 1 } on && index($0, key ":") { gsub(/[^0-9]/, "", $NF); print $NF; exit }'
}
ctld_cpu() {     # slurmctld's user+system CPU in ms
  local pid; pid=$(bash "$CLUSTER" ctld-pid)
  awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$pid/stat"
}

run_mode() {
  local mode=$1 plugins=1
  [[ $mode == native ]] && plugins=0
  env "${node_env[@]}" GPUPOOL_PLUGINS=$plugins GPUS_PER_NODE=$GPUS CPUS_PER_NODE=$(( GPUS * 2 )) \
    GPUPOOL_CONF_SRC=$conf bash "$CLUSTER" up >/dev/null 2>&1
  eval "$(bash "$CLUSTER" env)"
  local log=$GPUPOOL_CLUSTER_DIR/log/slurmctld.log
  [[ $mode == native ]] && sacctmgr -i modify qos normal set preempt=low >/dev/null
  local i ids=()
  for (( i = 0; i < TOTAL; i++ )); do
    sbatch --parsable -J low -p pool1 --qos=low --gres=gpu:1 -N1 -n1 -o /dev/null -e /dev/null --wrap 'sleep 900' >/dev/null
  done
  local deadline=$(( SECONDS + 180 ))
  until (( $(squeue -h -t R -q low | wc -l) == TOTAL )); do
    (( SECONDS < deadline )) || { echo "$mode: the LOW jobs did not all start" >&2; bash "$CLUSTER" down >/dev/null 2>&1; return 1; }
    sleep 1
  done
  sleep 5
  sdiag -r >/dev/null
  local refresh0 cpu0 t0
  # gpupool's refresh line is logged under DebugFlags=Priority at level
  # verbose: both modes measure with the same level and flags.
  scontrol setdebug verbose >/dev/null
  scontrol setdebugflags +Priority >/dev/null
  refresh0=$(grep -c 'gpupool: refreshed' "$log" || true)
  cpu0=$(ctld_cpu); t0=$(date +%s%N)
  for (( i = 0; i < RECLAIM; i++ )); do
    sbatch --parsable -J nrm -p pool2 --qos=normal --gres=gpu:1 -N1 -n1 -o /dev/null -e /dev/null --wrap 'sleep 900' >/dev/null
  done
  deadline=$(( SECONDS + 300 ))
  until (( $(squeue -h -t R -q normal | wc -l) == RECLAIM )); do
    (( SECONDS < deadline )) || { echo "$mode: the NORMAL jobs did not all start" >&2; break; }
    sleep 0.2
  done
  local secs cpu refreshes cycles
  secs=$(( ($(date +%s%N) - t0) / 1000000 ))
  cpu=$(( $(ctld_cpu) - cpu0 ))
  refreshes=$(( $(grep -c 'gpupool: refreshed' "$log" || true) - refresh0 ))
  cycles=$(sdiag_field "Main schedule statistics" "Total cycles")
  printf '%-8s release %-6s started %d/%d NORMAL in %6d ms  slurmctld CPU %6d ms  main cycle mean %6s us max %7s us (%s cycles)  backfill mean %7s us max %7s us  snapshot refreshes %s (%s per main cycle)\n' \
    "$mode" "$(rel=${GPUPOOL_SLURM_PREFIX:-/22.05}; echo "${rel##*/}")" "$(squeue -h -t R -q normal | wc -l)" "$RECLAIM" "$secs" "$cpu" \
    "$(sdiag_field 'Main schedule statistics' 'Mean cycle')" "$(sdiag_field 'Main schedule statistics' 'Max cycle')" "$cycles" \
    "$(sdiag_field 'Backfilling stats' 'Mean cycle')" "$(sdiag_field 'Backfilling stats' 'Max cycle')" \
    "$([[ $mode == gpupool ]] && echo "$refreshes" || echo -)" \
    "$([[ $mode == gpupool ]] && awk -v r="$refreshes" -v c="${cycles:-0}" 'BEGIN { printf "%.1f", c ? r / c : r }' || echo -)"
  scancel -u root >/dev/null 2>&1 || true
  bash "$CLUSTER" down >/dev/null 2>&1
}

for m in "${modes[@]}"; do run_mode "$m"; done
