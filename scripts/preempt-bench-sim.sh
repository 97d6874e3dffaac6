#!/usr/bin/env bash
# scripts/preempt-bench.sh's scenario in `gpupool sim`, timed as Slurm times
# a preemption: NODES x GPUS, every GPU busy with 1-GPU LOW jobs of pool1
# (half of them borrowed from pool2), then RECLAIM NORMAL jobs of pool2
# (RECLAIM_GPUS each), SUBMIT_RATE of them per second.  Prints, for gpupool
# and for `borrow` (what the live bench's native mode runs: preempt/qos,
# no quotas), the time from the first NORMAL submit to the last NORMAL
# start, victims per preemptor and preemptors whose victims were on one
# node.  doc/evaluation.md ("Preemption as Slurm times it") compares it
# with the live bench.
#
#   scripts/preempt-bench-sim.sh [extra gpupool sim options]
#
# Environment: BENCH_NODES, BENCH_GPUS, BENCH_RECLAIM, BENCH_RECLAIM_GPUS
# as for preempt-bench.sh (defaults 32, 13, 50, 1: the issue's size);
# BENCH_SUBMIT_RATE (NORMAL submits a second, default 32: the live bench
# submits 50 in 1.2-1.5 s), or BENCH_SUBMITS=FILE: a live run's submit
# times, ms after the first, one a line (preempt-bench.sh's
# BENCH_RECORD); SIM_KILL_DELAY (s, default 2: a live run's median from
# a preemption to its victim's requeue, rounded; preempt-bench.sh prints
# it); SIM_BACKFILL_PERIOD (s, default 2: bf_interval plus a live run's
# mean backfill cycle, rounded, as Slurm sleeps bf_interval between the end
# of a cycle and the next; the first cycle comes with the first NORMAL
# submit); SIM_CYCLE_PREEMPTORS (default 0: no cap; the most preemptors
# of one backfill cycle on a live run: Slurm's backfill yields its locks
# after bf_yield_interval); SIM_TIMING (default "--preempt-guard=15":
# KillWait + MessageTimeout); GPUPOOL_CLI (default src/cli/gpupool).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLI=${GPUPOOL_CLI:-$REPO/src/cli/gpupool}
NODES=${BENCH_NODES:-32}
GPUS=${BENCH_GPUS:-13}
RECLAIM=${BENCH_RECLAIM:-50}
RECLAIM_GPUS=${BENCH_RECLAIM_GPUS:-1}
RATE=${BENCH_SUBMIT_RATE:-32}
KILL=${SIM_KILL_DELAY:-2}
PERIOD=${SIM_BACKFILL_PERIOD:-2}
CAP=${SIM_CYCLE_PREEMPTORS:-0}
TIMING=${SIM_TIMING:---preempt-guard=15}
SUBMITS=${BENCH_SUBMITS:-}
TOTAL=$(( NODES * GPUS ))
HALF=$(( TOTAL / 2 ))
[[ -x $CLI ]] || { echo "preempt-bench-sim: $CLI not built (make)" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed -E "s/^Pool=pool1 .*/Pool=pool1 Quota=$HALF Weight=1/; s/^Pool=pool2 .*/Pool=pool2 Quota=$HALF Weight=1/; /^Pool=pool3 /d" \
  "$REPO/etc/gpupool.conf.example" >"$dir/gpupool.conf"
# The workload as a sacct dump (epoch seconds): LOW jobs fill the cluster
# at 0; the NORMAL jobs come at 100 (an even second: backfill's cycles in
# the model are at multiples of --backfill-interval), RATE a second or at
# the recorded offsets (whole seconds: the replay's time).
base=$(( 1000000000 + (PERIOD - 1000000100 % PERIOD) % PERIOD ))
{
  echo "JobIDRaw|Submit|Start|End|Partition|QOS|User|State|ReqTRES"
  for (( i = 1; i <= TOTAL; i++ )); do
    echo "$i|$base|$base|$(( base + 100000 ))|pool1|low|u|COMPLETED|cpu=1,gres/gpu=1"
  done
  if [[ -n $SUBMITS ]]; then mapfile -t offsets <"$SUBMITS"; RECLAIM=${#offsets[@]}; fi
  for (( k = 0; k < RECLAIM; k++ )); do
    if [[ -n $SUBMITS ]]; then s=$(( base + 100 + offsets[k] / 1000 )); else s=$(( base + 100 + k / RATE )); fi
    echo "$(( TOTAL + 1 + k ))|$s|$s|$(( s + 100000 ))|pool2|normal|u|COMPLETED|cpu=1,gres/gpu=$RECLAIM_GPUS"
  done
} >"$dir/sacct.txt"

# shellcheck disable=SC2086  # TIMING is a list of options
"$CLI" sim --nodes="${NODES}x${GPUS}" --pools=pool1,pool2 --conf="$dir/gpupool.conf" --sacct="$dir/sacct.txt" \
  --policy=gpupool,borrow --kill-delay="$KILL" --backfill-interval="$PERIOD" --backfill-preemptions="$CAP" $TIMING --jobs-csv="$dir/jobs.csv" --start-log="$dir/starts.txt" "$@" >"$dir/report.txt"

[[ -n $SUBMITS ]] && RECLAIM=$(wc -l <"$SUBMITS")
awk -F, -v t0=$(( base + 100 )) -v n="$RECLAIM" -v g="$RECLAIM_GPUS" '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["tier"] == "normal" {
    p = $col["policy"]; seen[p] = 1
    if ($col["first_start"] != "") { started[p]++; if ($col["first_start"] - t0 > last[p]) last[p] = $col["first_start"] - t0 }
  }
  END { for (p in seen) printf "sim %-8s started %d/%d NORMAL of %d GPU in %5d ms\n", (p == "borrow" ? "native" : p), started[p], n, g, last[p] * 1000 }
' "$dir/jobs.csv" | sort
