#!/usr/bin/env bash
# Issue 27, acceptance 3: does a pool within its quota get its GPUs?
# Replays generated workloads under gpupool and `borrow` (no quotas) and
# prints, per world, utilisation, the time a pool waited under its quota
# with non-preemptible demand (summed over the pools) split by cause, and
# the share of within-quota NP jobs that started within one kill window
# plus one cycle.  Needs only the built `gpupool` (no Slurm).
#
#   scripts/sim-quota-sweep.sh [--seeds "1 2 3"] [--sizes "64 512"]
#                              [--mixes "124 1248"] [--timing "instant slurm"]
#                              [--placement "conf"] [--set "Consolidation=no"]
#                              [--policy gpupool,borrow] [--jobs N]
#
# World: 4 pools over every node (8-GPU nodes: 8 of them for 64 GPUs, 64 for
# 512), quota a quarter each, tiers high/normal/low (low preemptible, 30 %
# of the jobs), lognormal durations (median 30 min), offered load 1.0
# (etc/sim/contended.gen), 5,000 jobs on 64 GPUs and 20,000 on 512.
# Mixes: 124 = 1/2/4 GPUs (50/30/20 %, contended.gen's), 1248 = 1/2/4/8
# GPUs (40/30/20/10 %).  Timing: instant (a preemption frees its GPUs at
# once) or slurm (kill 2 s, preemption only in backfill cycles every 2 s,
# as calibrated on preempt-bench, doc/evaluation.md).  Placement: gpupool
# sim --placement (conf: each pool's Placement= for gpupool, Slurm's own
# order for borrow; first, pack, spread, bestfit (Slurm 22.05's): both
# so).  W95_8: the p95
# wait (minutes) of 8-GPU NP jobs from the moment they fit their pool's
# quota to their start (within_quota_wait_by_gpus).  UTILW%: utilisation
# over the seconds some job was pending (utilisation_waiting); USEFUL:
# utilisation less the runs preemptions threw away (utilisation_useful);
# LOST_H: the GPU-hours those runs held (lost_gpu_hours); UTILA%:
# utilisation from the first submit to the last (utilisation_arriving),
# before the drain that only a finite workload has.  --policy:
# gpupool sim --policy (default gpupool,borrow).
# --set: lines added to gpupool.conf (both policies), one per ';'.
# --jobs: worlds replayed at once (default: the CPUs); rows come in the
# same order either way.  scripts/sim-sweep-compare.sh pairs two
# conditions' worlds (--per-world: acceptance 3's conditions, world by
# world).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GPUPOOL=${GPUPOOL:-$REPO/src/cli/gpupool}
SEEDS="1 2 3" SIZES="64 512" MIXES="124 1248" TIMING="instant slurm" PLACEMENT="conf" SET="" POLICY="gpupool,borrow"
JOBS=$(nproc 2>/dev/null || echo 1)
while [[ $# -gt 0 ]]; do
  case $1 in
    --seeds) SEEDS=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --mixes) MIXES=$2; shift 2 ;;
    --timing) TIMING=$2; shift 2 ;;
    --placement) PLACEMENT=$2; shift 2 ;;
    --set) SET=$2; shift 2 ;;
    --policy) POLICY=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) echo "sim-quota-sweep: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x $GPUPOOL ]] || { echo "sim-quota-sweep: no $GPUPOOL (run scripts/build.sh)" >&2; exit 1; }
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "sim-quota-sweep: --jobs wants a positive number, not $JOBS" >&2; exit 2; }
TMP=$(mktemp -d)
# A world that fails stops the sweep: the others still running go too.
trap 'kill $(jobs -p) 2>/dev/null || true; wait || true; rm -rf "$TMP"' EXIT

# One world: its row in $TMP/row.N (empty if the replay failed; what it
# said in $TMP/err.N), then $TMP/done.N.
world() {
  local i=$1 size=$2 mix=$3 seed=$4 timing=$5 place=$6 nodes=$7 jobs=$8 gpus=$9
  local opts=(--placement="$place")
  [[ $timing == slurm ]] && opts+=(--kill-delay=2 --backfill-interval=2)
  "$GPUPOOL" sim --nodes="${nodes}x8" --pools=pool1,pool2,pool3,pool4 \
    --generate="@$REPO/etc/sim/contended.gen Seed=$seed Jobs=$jobs Gpus=$gpus" \
    --conf="$TMP/q$size.conf" --policy="$POLICY" --no-progress --json "${opts[@]}" >"$TMP/out.$i" 2>"$TMP/err.$i" ||
    { echo "sim-quota-sweep: $size GPUs, mix $mix, seed $seed, $timing timing, $place placement: gpupool sim failed" \
        >>"$TMP/err.$i"; touch "$TMP/done.$i"; return 0; }
  python3 - "$TMP/out.$i" "$size" "$mix" "$seed" "$timing" "$place" >"$TMP/row.$i" 2>>"$TMP/err.$i" <<'EOF' ||
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["policies"]:
    b = p["below_quota_by_cause"]
    h = lambda s: "%.1f" % (s / 3600.0)
    w = p["within_quota_wait"]["jobs"]
    prompt = "%.1f" % (100.0 * p["within_quota_prompt"] / w) if w else "-"
    w8 = p["within_quota_wait_by_gpus"].get("8")
    print("%-5s %-4s %-5s %-7s %-6s | %-8s %5.1f %6.1f %6.1f %9s %8s %8s %8s %8s %8s %7s %6s %7.0f %6.1f" % (
        sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], p["policy"], 100 * p["utilisation"],
        100 * p["utilisation_waiting"], 100 * p["utilisation_useful"],
        h(sum(b.values())), h(b["kill"]), h(b["cannot_free"]), h(b["no_single_node"]),
        h(b["protected"]), h(b["other"]), prompt, "%.1f" % (w8["p95"] / 60.0) if w8 else "-", p["lost_gpu_hours"],
        100 * p["utilisation_arriving"]))
EOF
    { : >"$TMP/row.$i"; echo "sim-quota-sweep: $size GPUs, mix $mix, seed $seed, $timing timing, $place placement:" \
        "gpupool sim's figures could not be read" >>"$TMP/err.$i"; }
  rm -f "$TMP/out.$i"
  touch "$TMP/done.$i"
}

# The rows of the worlds done so far, in order, up to the first still
# running.
printed=0
flush() {
  while [[ -e $TMP/done.$((printed + 1)) ]]; do
    printed=$((printed + 1))
    [[ -s $TMP/row.$printed ]] || { cat "$TMP/err.$printed" >&2; exit 1; }
    cat "$TMP/row.$printed"
  done
}

n=0
printf '%-5s %-4s %-5s %-7s %-6s | %-8s %5s %6s %6s %9s %8s %8s %8s %8s %8s %7s %6s %7s %6s\n' \
  GPUS MIX SEED TIMING PLACE POLICY UTIL% UTILW% USEFUL BELOW_H KILL CANNOT NO_NODE PROTECT OTHER PROMPT% W95_8 LOST_H UTILA%
for size in $SIZES; do
  nodes=$((size / 8)) quota=$((size / 4)) jobs=$((size == 64 ? 5000 : 20000))
  sed "s/Quota=16/Quota=$quota/" "$REPO/etc/sim/contended.conf" >"$TMP/q$size.conf"
  [[ -z $SET ]] || tr ';' '\n' <<<"$SET" >>"$TMP/q$size.conf"
  for mix in $MIXES; do
    case $mix in
      124) gpus=1:0.5,2:0.3,4:0.2 ;;
      1248) gpus=1:0.4,2:0.3,4:0.2,8:0.1 ;;
      *) echo "sim-quota-sweep: unknown mix $mix" >&2; exit 2 ;;
    esac
    for seed in $SEEDS; do
      for timing in $TIMING; do
       for place in $PLACEMENT; do
        while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; flush; done
        n=$((n + 1))
        world "$n" "$size" "$mix" "$seed" "$timing" "$place" "$nodes" "$jobs" "$gpus" &
       done
      done
    done
  done
done
wait
flush
echo "(BELOW_H and the causes: hours a pool waited under its quota with NP demand, summed over the pools)"
