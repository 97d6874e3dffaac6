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
# BENCH_RECORD).  The timing, as a live run measured it (preempt-bench.sh
# prints it; BENCH_TIMING=FILE reads the DIR/MODE-timing.env its
# BENCH_RECORD writes):
#   SIM_KILL_MS (or SIM_KILL_DELAY in s; default 2 s): the median from a
#     preemption to its victim's requeue;
#   SIM_BACKFILL_MS (or SIM_BACKFILL_PERIOD in s; default 2 s): the median
#     time between the starts of preempting backfill cycles (bf_interval
#     plus a cycle: Slurm sleeps bf_interval after a cycle ends);
#   SIM_FIRST_CYCLE_MS (default 0): the first preemption after the first
#     NORMAL submit (where backfill's cycle fell);
#   SIM_BACKFILL_SPACING_MS (default 0): the mean time between two
#     preemptors of one cycle (a cycle tests its jobs in turn): the k-th
#     preemptor of a replayed cycle preempts k times this after its start;
#   SIM_CYCLE_PREEMPTORS (default 0: no cap): the most preemptors of one
#     cycle (backfill yields its locks after bf_yield_interval);
#   BENCH_CYCLES=FILE: each backfill cycle, ms after the first submit
#     (BENCH_RECORD's DIR/MODE-cycles.txt): the replay's cycles then, and
#     every SIM_BACKFILL_MS after the last (gpupool sim --backfill-times);
#   BENCH_KILLS=FILE: each victim's kill, in the order of the preemptions,
#     "MS LATE" (BENCH_RECORD's DIR/MODE-kills.txt; LATE, 1 where the
#     requeue came after the next backfill cycle began, is for reading),
#     replayed in order (gpupool sim --kill-delays; SIM_KILL_MS past it).
# SIM_TICK_MS (default 1000): the replay's clock, whose time is whole
# ticks: 100 replays a run of a few seconds in tenths (each time above is
# rounded to ticks, at least 1; so are the guard, cred_expire, the core's
# least pass gap and RecalcInterval).  SIM_TIMING (default
# "--preempt-guard=15 s --cred-expire=5 s --pass-interval=1 s" in ticks:
# KillWait + MessageTimeout, the test cluster's cred_expire);
# GPUPOOL_CLI (default src/cli/gpupool).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLI=${GPUPOOL_CLI:-$REPO/src/cli/gpupool}
NODES=${BENCH_NODES:-32}
GPUS=${BENCH_GPUS:-13}
RECLAIM=${BENCH_RECLAIM:-50}
RECLAIM_GPUS=${BENCH_RECLAIM_GPUS:-1}
RATE=${BENCH_SUBMIT_RATE:-32}
# shellcheck disable=SC1090  # a recorded run's timing
[[ -z ${BENCH_TIMING:-} ]] || . "$BENCH_TIMING"
TICK=${SIM_TICK_MS:-1000}
# In ticks of the replay's clock, rounded, at least 1.
ticks() { echo $(( ($1 + TICK / 2) / TICK > 0 ? ($1 + TICK / 2) / TICK : 1 )); }
KILL=$(ticks "${SIM_KILL_MS:-$(( ${SIM_KILL_DELAY:-2} * 1000 ))}")
PERIOD=$(ticks "${SIM_BACKFILL_MS:-$(( ${SIM_BACKFILL_PERIOD:-2} * 1000 ))}")
CAP=${SIM_CYCLE_PREEMPTORS:-0}
# In thousandths of a tick (gpupool sim --backfill-spacing).
SPACING=$(( ${SIM_BACKFILL_SPACING_MS:-0} * 1000 / TICK ))
TIMING=${SIM_TIMING:---preempt-guard=$(ticks 15000) --cred-expire=$(ticks 5000) --pass-interval=$(ticks 1000)}
SUBMITS=${BENCH_SUBMITS:-}
KILLS=${BENCH_KILLS:-}
TOTAL=$(( NODES * GPUS ))
HALF=$(( TOTAL / 2 ))
[[ -x $CLI ]] || { echo "preempt-bench-sim: $CLI not built (make)" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed -E "s/^Pool=pool1 .*/Pool=pool1 Quota=$HALF Weight=1/; s/^Pool=pool2 .*/Pool=pool2 Quota=$HALF Weight=1/; /^Pool=pool3 /d; s/^RecalcInterval=.*/RecalcInterval=$(ticks 10000)/" \
  "$REPO/etc/gpupool.conf.example" >"$dir/gpupool.conf"
# The workload as a sacct dump (in ticks): LOW jobs fill the cluster at
# 0; the NORMAL jobs come from 100 (backfill's cycles in the model are at
# multiples of --backfill-interval, the first SIM_FIRST_CYCLE_MS after
# the first NORMAL submit), RATE a second or at the recorded offsets.
FIRST=$(( (${SIM_FIRST_CYCLE_MS:-0} + TICK / 2) / TICK % PERIOD ))
base=$(( 1000000000 + (PERIOD - (1000000100 + FIRST) % PERIOD) % PERIOD ))
{
  echo "JobIDRaw|Submit|Start|End|Partition|QOS|User|State|ReqTRES"
  for (( i = 1; i <= TOTAL; i++ )); do
    echo "$i|$base|$base|$(( base + 100000 ))|pool1|low|u|COMPLETED|cpu=1,gres/gpu=1"
  done
  if [[ -n $SUBMITS ]]; then mapfile -t offsets <"$SUBMITS"; RECLAIM=${#offsets[@]}; fi
  for (( k = 0; k < RECLAIM; k++ )); do
    if [[ -n $SUBMITS ]]; then s=$(( base + 100 + offsets[k] / TICK )); else s=$(( base + 100 + k * 1000 / TICK / RATE )); fi
    echo "$(( TOTAL + 1 + k ))|$s|$s|$(( s + 100000 ))|pool2|normal|u|COMPLETED|cpu=1,gres/gpu=$RECLAIM_GPUS"
  done
} >"$dir/sacct.txt"

cycle_list=()
if [[ -n ${BENCH_CYCLES:-} ]]; then
  awk -v tick="$TICK" -v t0=$(( base + 100 )) '{ print t0 + int($1 / tick + 0.5) }' "$BENCH_CYCLES" >"$dir/cycles.txt"
  cycle_list=(--backfill-times="$dir/cycles.txt")
fi
kill_list=()
if [[ -n $KILLS ]]; then
  awk -v tick="$TICK" '{ s = int($1 / tick + 0.5); print s < 1 ? 1 : s }' \
    "$KILLS" >"$dir/kills.txt"
  kill_list=(--kill-delays="$dir/kills.txt")
fi

# shellcheck disable=SC2086  # TIMING is a list of options
"$CLI" sim --nodes="${NODES}x${GPUS}" --pools=pool1,pool2 --conf="$dir/gpupool.conf" --sacct="$dir/sacct.txt" \
  --policy=gpupool,borrow --kill-delay="$KILL" --backfill-interval="$PERIOD" --backfill-preemptions="$CAP" --backfill-spacing="$SPACING" $TIMING "${kill_list[@]}" "${cycle_list[@]}" --jobs-csv="$dir/jobs.csv" --start-log="$dir/starts.txt" "$@" >"$dir/report.txt"

[[ -n $SUBMITS ]] && RECLAIM=$(wc -l <"$SUBMITS")
awk -F, -v t0=$(( base + 100 )) -v n="$RECLAIM" -v g="$RECLAIM_GPUS" -v tick="$TICK" '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["tier"] == "normal" {
    p = $col["policy"]; seen[p] = 1
    if ($col["first_start"] != "") { started[p]++; if ($col["first_start"] - t0 > last[p]) last[p] = $col["first_start"] - t0 }
  }
  END { for (p in seen) printf "sim %-8s started %d/%d NORMAL of %d GPU in %5d ms\n", (p == "borrow" ? "native" : p), started[p], n, g, last[p] * tick }
' "$dir/jobs.csv" | sort
