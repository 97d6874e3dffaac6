#!/usr/bin/env bash
# Live cost of reclaim on the local cluster: NODES x GPUS
# fake GPUs, every GPU of pool1 and pool2's nodes busy with 1-GPU LOW jobs of
# pool1 (half of them borrowed from pool2), then RECLAIM non-preemptible
# 1-GPU NORMAL jobs of pool2 that take their quota back.  Prints the time to
# start them all, slurmctld's CPU over that time, sdiag's main and backfill
# cycles (mean, max) and, with gpupool, how often preempt/gpupool rebuilt its
# running-job snapshot (per main scheduling cycle).  Then, read in
# slurmctld's log (Slurm's own "preempted JobId=V has been requeued to
# reclaim resources for JobId=P" lines, both modes): victims and rounds per
# preemptor (a round: its victims within 2 s of each other; another round
# means its first victims' GPUs went to some other job), how many
# preemptors had all their victims on one node, and how many started on
# the node of their (last round's) victims.  And the timing that
# scripts/preempt-bench-sim.sh replays it with: the median from a
# preemption to its victim's requeue (the kill), the preempting backfill
# cycles and the median time between their starts (a cycle: preemptions
# less than 1 s apart) and the preemptors of each; BENCH_RECORD=DIR also writes the NORMAL jobs'
# submit times (ms after the first) to DIR/MODE-submits.txt and each
# victim's kill, in the order of the preemptions, to DIR/MODE-kills.txt
# ("MS LATE", LATE 1 when the requeue came after the next backfill cycle
# began: scripts/preempt-bench-sim.sh's BENCH_KILLS) and the run's timing
# as preempt-bench-sim.sh's settings (DIR/MODE-timing.env, its BENCH_TIMING)
# and when each backfill cycle came (DIR/MODE-cycles.txt, its BENCH_CYCLES),
# and keeps slurmctld's log of the NORMAL jobs' phase (DIR/MODE-slurmctld.log).
# BENCH_BACKFILL_DEBUG=1 adds DebugFlags=Backfill for the NORMAL jobs' phase
# (what backfill planned for each job, in slurmctld.log).
#
#   scripts/preempt-bench.sh [gpupool|native]...      (default: both)
#
# native: priority/basic + preempt/qos (cluster.sh GPUPOOL_PLUGINS=0), LOW
# preemptible by NORMAL through the QOS's Preempt list, as a site would.
# Environment: GPUPOOL_SLURM_PREFIX and GPUPOOL_BUILD as for cluster.sh
# (another release, another build); BENCH_NODES (default 4: pool1 and pool2
# share them; more than 6 puts only pool1 and pool2 on node[1-N]),
# BENCH_GPUS (per node, default 8), BENCH_RECLAIM (default 16) and
# BENCH_RECLAIM_GPUS (GPUs per NORMAL job, default 1).  The issue's size:
# BENCH_NODES=32 BENCH_GPUS=13 BENCH_RECLAIM=50 (416 running); its 4-GPU
# variant adds BENCH_RECLAIM_GPUS=4.
# Takes the live lock; leaves the cluster down.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER="$REPO/scripts/cluster.sh"
GPUS=${BENCH_GPUS:-8}
RECLAIM=${BENCH_RECLAIM:-16}
RECLAIM_GPUS=${BENCH_RECLAIM_GPUS:-1}
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
    if (( SECONDS >= deadline )); then
      # Say where they stand, and keep the log (BENCH_RECORD) to see why.
      echo "$mode: the LOW jobs did not all start: $(squeue -h -q low -o '%T %r' | sort | uniq -c | paste -sd, -)" >&2
      [[ -z ${BENCH_RECORD:-} ]] || { mkdir -p "$BENCH_RECORD"; cp "$log" "$BENCH_RECORD/$mode-slurmctld-failed.log"; }
      bash "$CLUSTER" down >/dev/null 2>&1
      return 1
    fi
    sleep 1
  done
  sleep 5
  sdiag -r >/dev/null
  local refresh0 cpu0 t0
  # gpupool's refresh line is logged under DebugFlags=Priority at level
  # verbose: both modes measure with the same level and flags.
  scontrol setdebug verbose >/dev/null
  scontrol setdebugflags +Priority >/dev/null
  [[ -z ${BENCH_BACKFILL_DEBUG:-} ]] || scontrol setdebugflags +Backfill >/dev/null
  refresh0=$(grep -c 'gpupool: refreshed' "$log" || true)
  local line0; line0=$(wc -l <"$log")
  cpu0=$(ctld_cpu); t0=$(date +%s%N)
  for (( i = 0; i < RECLAIM; i++ )); do
    sbatch --parsable -J nrm -p pool2 --qos=normal --gres=gpu:"$RECLAIM_GPUS" -N1 -n1 -o /dev/null -e /dev/null --wrap 'sleep 900' >/dev/null
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
  printf '%-8s release %-6s started %d/%d NORMAL of '"$RECLAIM_GPUS"' GPU in %6d ms  slurmctld CPU %6d ms  main cycle mean %6s us max %7s us (%s cycles)  backfill mean %7s us max %7s us  snapshot refreshes %s (%s per main cycle)\n' \
    "$mode" "$(rel=${GPUPOOL_SLURM_PREFIX:-/22.05}; echo "${rel##*/}")" "$(squeue -h -t R -q normal | wc -l)" "$RECLAIM" "$secs" "$cpu" \
    "$(sdiag_field 'Main schedule statistics' 'Mean cycle')" "$(sdiag_field 'Main schedule statistics' 'Max cycle')" "$cycles" \
    "$(sdiag_field 'Backfilling stats' 'Mean cycle')" "$(sdiag_field 'Backfilling stats' 'Max cycle')" \
    "$([[ $mode == gpupool ]] && echo "$refreshes" || echo -)" \
    "$([[ $mode == gpupool ]] && awk -v r="$refreshes" -v c="${cycles:-0}" 'BEGIN { printf "%.1f", c ? r / c : r }' || echo -)"
  local where; where=$(mktemp)
  squeue -h -t R -q normal -o 'P %i %N' >"$where"
  tail -n +"$(( line0 + 1 ))" "$log" >"$where.log"
  local victims
  victims=$(sed -nE 's/.*preempted JobId=([0-9]+) has been .* to reclaim resources for .*/\1/p' "$where.log" | sort -u | paste -sd,)
  [[ -n $victims ]] &&
    sacct -X -D -n -P -o JobIDRaw,NodeList,State -j "$victims" | awk -F'|' '$3 == "PREEMPTED" { print "V", $1, $2 }' >>"$where"
  [[ -z ${BENCH_RECORD:-} ]] || { mkdir -p "$BENCH_RECORD"; cp "$where.log" "$BENCH_RECORD/$mode-slurmctld.log"; }
  preemption_rounds "$mode" "$where" <"$where.log"
  rm -f "$where" "$where.log"
  scancel -u root >/dev/null 2>&1 || true
  bash "$CLUSTER" down >/dev/null 2>&1
}

# Slurm's preemption lines on stdin -> "MODE preemptors N  victims per
# preemptor K:COUNT ...  rounds per preemptor R:COUNT ..."
preemption_rounds() {
  python3 -c '
import re, sys, datetime
victims, last, rounds, vnodes, last_nodes = {}, {}, {}, {}, {}
node_of = {"P": {}, "V": {}}
for line in open(sys.argv[2]):
    kind, job, node = line.split()
    node_of[kind][job] = node
pat = re.compile(r"^\[([0-9T:.-]+)\] preempted JobId=(\d+) has been (?:requeued|killed) to reclaim resources for JobId=(\d+)")
for line in sys.stdin:
    m = pat.match(line)
    if not m:
        continue
    t = datetime.datetime.fromisoformat(m.group(1)).timestamp()
    p = m.group(3)
    victims[p] = victims.get(p, 0) + 1
    if p not in last or t - last[p] > 2:
        rounds[p] = rounds.get(p, 0) + 1
        last_nodes[p] = set()
    last[p] = t
    node = node_of["V"].get(m.group(2), "?")
    vnodes.setdefault(p, set()).add(node)
    last_nodes[p].add(node)
def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None
# Timing: submits of the NORMAL jobs, kills, preempting cycles.
sys.stdin.seek(0)
stamp = re.compile(r"^\[([0-9T:.-]+)\] ")
sub, pre_at, requeued, cycles, bf_begins = {}, {}, {}, [], []
for line in sys.stdin:
    m = stamp.match(line)
    if not m:
        continue
    t = datetime.datetime.fromisoformat(m.group(1)).timestamp()
    if (x := re.search(r"_slurm_rpc_submit_batch_job: JobId=(\d+)", line)) and x.group(1) in node_of["P"]:
        sub[x.group(1)] = t
    elif x := pat.match(line):
        pre_at.setdefault(x.group(2), t)
        if not cycles or t - cycles[-1][1] > 1:
            cycles.append([t, t, {}])
        cycles[-1][1] = t
        cycles[-1][2].setdefault(x.group(3), t)  # preemptor: its first preemption
    elif (x := re.search(r"Requeuing JobId=(\d+)", line)) and x.group(1) in pre_at:
        requeued.setdefault(x.group(1), t)
    elif "_attempt_backfill: beginning" in line:
        bf_begins.append(t)
kill = median([requeued[v] - pre_at[v] for v in requeued])
# Preemptors of one cycle come one after another (backfill tests its jobs
# in turn; the main scheduler preempts for one job a cycle): the mean time
# between them, over the cycles with two or more.
gaps = [(max(c[2].values()) - min(c[2].values()), len(c[2]) - 1) for c in cycles if len(c[2]) > 1]
spacing = sum(g for g, _ in gaps) / sum(n for _, n in gaps) if gaps else None
period = median([b[0] - a[0] for a, b in zip(cycles, cycles[1:])])
ms = lambda x: "-" if x is None else str(round(x * 1000))
t0 = min(sub.values()) if sub else 0
sizes = "+".join(str(len(c[2])) for c in cycles) or "-"
first = cycles[0][0] - t0 if cycles and sub else None
print(f"{sys.argv[1]:<8} kill (preemption to requeue) median {ms(kill)} ms  preempting cycles {len(cycles)} (preemptors {sizes}), every {ms(period)} ms (median)"
      f"  submits over {ms(max(sub.values()) - t0 if sub else None)} ms  first preemption {ms(first)} ms after the first submit"
      f"  preemptors of a cycle {ms(spacing)} ms apart (mean)")
# Each backfill cycle from the first submit on, ms after it: where it
# preempted, its first preemption, else its "beginning" line (only the
# preempting cycles without BENCH_BACKFILL_DEBUG=1).
if sys.argv[6] and sub:
    starts = sorted(b for b in bf_begins if b >= t0)
    at = [c[0] for c in cycles]
    for i, b in enumerate(starts):
        nxt = starts[i + 1] if i + 1 < len(starts) else float("inf")
        if not any(b <= c[0] < nxt for c in cycles):
            at.append(b)
    with open(sys.argv[6], "w") as f:
        f.writelines(f"{ms(x - t0)}\n" for x in sorted(at))
# The same timing for scripts/preempt-bench-sim.sh (BENCH_TIMING=FILE).
if sys.argv[5] and cycles:
    with open(sys.argv[5], "w") as f:
        f.write(f"SIM_KILL_MS={ms(kill)}\nSIM_BACKFILL_MS={ms(period) if period is not None else 2000}\n"
                f"SIM_CYCLE_PREEMPTORS={max(len(c[2]) for c in cycles)}\nSIM_FIRST_CYCLE_MS={ms(first) if first is not None else 0}\n"
                f"SIM_BACKFILL_SPACING_MS={ms(spacing) if spacing is not None else 0}\n")
if sys.argv[3]:
    with open(sys.argv[3], "w") as f:
        f.writelines(f"{round((t - t0) * 1000)}\n" for t in sorted(sub.values()))
# Each victim kill in the order of the preemptions, "MS LATE": LATE 1
# when its requeue came after the next backfill cycle began (its
# "beginning" line with BENCH_BACKFILL_DEBUG=1, else the first preemption
# of the next preempting cycle).
if sys.argv[4]:
    begins = bf_begins or [c[0] for c in cycles]
    with open(sys.argv[4], "w") as f:
        for v in sorted(pre_at, key=lambda v: (pre_at[v], int(v))):
            nxt = next((b for b in begins if b > pre_at[v]), None)
            end = requeued.get(v, pre_at[v] + (kill or 0))
            f.write(f"{ms(end - pre_at[v])} {int(nxt is not None and end > nxt)}\n")
def hist(d):
    h = {}
    for v in d.values():
        h[v] = h.get(v, 0) + 1
    return " ".join(f"{k}:{h[k]}" for k in sorted(h)) or "-"
one_node = sum(1 for p in vnodes if len(vnodes[p]) == 1)
on_freed = sum(1 for p in last_nodes if node_of["P"].get(p) in last_nodes[p])
print(f"{sys.argv[1]:<8} preemptors {len(victims)}  victims per preemptor {hist(victims)}  rounds per preemptor {hist(rounds)}"
      f"  victims on one node {one_node}/{len(vnodes)}  started on its victims node {on_freed}/{len(last_nodes)}")
' "$1" "$2" "${BENCH_RECORD:+$BENCH_RECORD/$1-submits.txt}" "${BENCH_RECORD:+$BENCH_RECORD/$1-kills.txt}" "${BENCH_RECORD:+$BENCH_RECORD/$1-timing.env}" "${BENCH_RECORD:+$BENCH_RECORD/$1-cycles.txt}"
}

for m in "${modes[@]}"; do run_mode "$m"; done
