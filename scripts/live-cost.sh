#!/usr/bin/env bash
# The plugin layer's live cost inside slurmctld: gpupool against Slurm's
# native scheduling (priority/multifactor + preempt/qos), side by side on
# the local cluster of scripts/cluster.sh.
#
#   scripts/live-cost.sh [--out DIR] [--idle S] [--modes "native gpupool"]
#                        [--malloc jemalloc|glibc] [--layout] [N...]
#
# Modes: native, gpupool, and native-held: native scheduling with the
# NORMAL jobs submitted held (`sbatch -H`), the same jobs that gpupool
# holds for quota.  Slurm takes a shorter path for a job held at submit
# (no scheduling attempt), which alone changes where slurmctld's heap puts
# job records and job_list's nodes, and so the cost of every backfill
# walk; native-held measures that, so that gpupool's own cost can be told
# from it.
#
# For each N (default: 2000 10000), native then gpupool, back to back, each
# on a fresh cluster of 4 nodes x 2 fake GPUs (8 GPUs) with 4 overlapping
# pools (pool1, pool2: node[1-4]; pool3: node[1-2]; pool4: node[3-4];
# gpupool quota 2 each, tiers of etc/gpupool.conf.example):
#   1. 8 NORMAL 1-GPU jobs fill the cluster (2 per pool, all running);
#   2. N 1-GPU jobs, NORMAL and LOW in turn, pools in turn, each submitted
#      by its own `sbatch`, one at a time: they all stay pending (gpupool
#      holds the NORMAL ones over quota; nothing may preempt NORMAL);
#   3. 60 s (--idle) with nothing happening.
# Printed per mode and as the ratios gpupool/native (and gpupool/native-held
# when that mode ran): slurmctld's CPU seconds
# (utime + stime of all its threads, /proc/PID/stat) while submitting and
# while idle, and sdiag's mean main and backfill cycle in each phase (sdiag
# is reset at the start of each phase).
#
# slurmctld's malloc (--malloc, the same in every mode): jemalloc (default,
# Debian's libjemalloc2 preloaded into slurmctld only) or glibc.  Every
# backfill cycle walks job_list about three times per job it tests, and at
# 10,000 jobs what such a walk costs is where the job records and the
# list's nodes lie.  glibc puts them where the request threads' last frees
# left room, so the layout follows the mix of submit paths, not the
# plugins: native Slurm holding the same jobs (native-held) pays 1.4x for
# it with no gpupool code loaded.  jemalloc keeps each size in its own
# slabs and hands out the lowest free region first, whatever the mix, so
# the figures measure the scheduling, not the heap (doc/performance.md
# has both).
#
# Native: PriorityType=priority/multifactor (PriorityWeightQOS=10000,
# Age and Fairshare 100), PreemptType=preempt/qos, QOS normal preempts low,
# PreemptMode=REQUEUE. gpupool: priority/gpupool, preempt/gpupool,
# job_submit/gpupool. Both: MaxJobCount=50000, and scripts/cluster.sh's
# scheduler settings (sched_interval=2, bf_interval=2).
#
# Takes /tmp/gpupool-live.lock itself (do not wrap it in flock): once for
# both modes of an N up to 3000, once per mode above (other live runs may
# go between). Always leaves its cluster down. GPUPOOL_BUILD: the build whose plugins gpupool runs (as cluster.sh).
# Output (raw figures, per-thread CPU, the configs): --out DIR
# (default /var/tmp/gpupool-live-cost/<date-time>), summary.txt there.
# Runtime on a 2-core machine: about 4 min per mode at N=2000, 7-8 min at
# N=10000.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER="$REPO/scripts/cluster.sh"
LOCK=/tmp/gpupool-live.lock

CLOG_FD=2
clog() { printf '[live-cost %(%H:%M:%S)T] %s\n' -1 "$*" >&"$CLOG_FD"; }

FILL_PARTS=(pool3 pool3 pool4 pool4 pool1 pool1 pool2 pool2)
POOLS=(pool1 pool2 pool3 pool4)

# ---------------------------------------------------------------- one run
# --one MODE N DIR IDLE_S: runs under the lock (taken by the caller).
one_run() {
  local mode=$1 n=$2 dir=$3 idle=$4
  local extra pid k t0 t1 c0 c1 c2 fails=0 part qos
  mkdir -p "$dir"
  export GPUPOOL_NODE_COUNT=4 GPUS_PER_NODE=2 CPUS_PER_NODE=4
  export GPUPOOL_PARTITIONS="PartitionName=pool1 Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP
PartitionName=pool2 Nodes=node[1-4] MaxTime=INFINITE State=UP
PartitionName=pool3 Nodes=node[1-2] MaxTime=INFINITE State=UP
PartitionName=pool4 Nodes=node[3-4] MaxTime=INFINITE State=UP"
  sed -e '/^Pool=/d' "$REPO/etc/gpupool.conf.example" >"$dir/gpupool.conf"
  for part in "${POOLS[@]}"; do
    echo "Pool=$part Quota=2 Weight=1" >>"$dir/gpupool.conf"
  done
  export GPUPOOL_CONF_SRC=$dir/gpupool.conf
  extra="MaxJobCount=50000"
  if [[ $mode == native* ]]; then
    export GPUPOOL_PLUGINS=0
    extra+="
PriorityType=priority/multifactor
PriorityWeightQOS=10000
PriorityWeightAge=100
PriorityWeightFairshare=100
PreemptType=preempt/qos"
  else
    export GPUPOOL_PLUGINS=1
  fi
  export GPUPOOL_SLURM_CONF_EXTRA=$extra
  if [[ $LIVE_COST_MALLOC == glibc ]]; then
    unset GPUPOOL_CTLD_PRELOAD
  else
    export GPUPOOL_CTLD_PRELOAD=$LIVE_COST_MALLOC_LIB
  fi

  trap 'scancel -u root >/dev/null 2>&1; bash "$CLUSTER" down >&"$CLOG_FD" 2>&1 || clog "cluster down failed"' EXIT
  bash "$CLUSTER" up >&2 || { clog "$mode: cluster did not come up"; return 1; }
  eval "$(bash "$CLUSTER" env)"
  # Clients warn about the keys given twice (native): kept out of the way.
  exec 4>&2 2>>"$dir/clients.err"
  CLOG_FD=4
  cp "$SLURM_CONF" "$dir/slurm.conf"
  if [[ $mode == native* ]]; then
    sacctmgr -i modify qos normal set preempt=low >/dev/null \
      || { clog "sacctmgr: QOS normal preempt=low failed"; return 1; }
  fi
  pid=$(bash "$CLUSTER" ctld-pid) || { clog "$mode: slurmctld is not running"; return 1; }
  if [[ $LIVE_COST_MALLOC != glibc ]] && ! grep -qF "$LIVE_COST_MALLOC_LIB" "/proc/$pid/maps"; then
    clog "$mode: slurmctld did not load $LIVE_COST_MALLOC_LIB"
    return 1
  fi

  # 1. A full cluster: pool3, then pool4 (half the nodes each), then
  # pool1 and pool2, each pair running before the next is submitted.
  local running=0 deadline
  for part in "${FILL_PARTS[@]}"; do
    client sbatch --parsable -J fill -p "$part" --qos=normal --gres=gpu:1 -N1 -n1 \
      -t 120 -o /dev/null -e /dev/null --wrap 'sleep 7200' >/dev/null \
      || { clog "filler job refused"; return 1; }
    running=$(( running + 1 ))
    (( running % 2 )) && continue
    deadline=$(( SECONDS + 90 ))
    until [[ $(squeue -h -t RUNNING -o %i | wc -l) -eq $running ]]; do
      (( SECONDS < deadline )) || { clog "$mode: filler jobs did not start"; squeue >&2; return 1; }
      sleep 0.5
    done
  done
  sleep 5   # let the starts settle (job ends of nothing, first passes)

  # 2. N jobs, one sbatch at a time.
  {
    echo "load_before $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "malloc $LIVE_COST_MALLOC"
  } >"$dir/figures"
  sdiag -r >/dev/null
  c0=$(ctld_cpu "$pid"); threads "$pid" >"$dir/threads.0"
  t0=$(date +%s.%N)
  for (( k = 0; k < n; k++ )); do
    part=${POOLS[k % 4]}
    hold=()
    if (( (k / 4) % 2 )); then qos=low; else qos=normal; fi
    [[ $mode == native-held && $qos == normal ]] && hold=(-H)
    client sbatch "${hold[@]}" --parsable -J "c$k" -p "$part" --qos="$qos" --gres=gpu:1 -N1 -n1 \
      -t 10 -o /dev/null -e /dev/null --wrap 'sleep 600' >/dev/null 2>>"$dir/sbatch.err" \
      || fails=$(( fails + 1 ))
    (( (k + 1) % 1000 )) || clog "$mode: $(( k + 1 )) of $n submitted"
  done
  t1=$(date +%s.%N)
  c1=$(ctld_cpu "$pid"); threads "$pid" >"$dir/threads.1"
  sdiag >"$dir/sdiag.submit"
  cp "$GPUPOOL_CLUSTER_DIR/state/ctld/gpupool_stats.json" "$dir/stats.submit" 2>/dev/null || true
  sdiag -r >/dev/null
  echo "load_submit_end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$dir/figures"

  # 3. Idle.
  sleep "$idle"
  c2=$(ctld_cpu "$pid"); threads "$pid" >"$dir/threads.2"
  sdiag >"$dir/sdiag.idle"
  cp "$GPUPOOL_CLUSTER_DIR/state/ctld/gpupool_stats.json" "$dir/stats.idle" 2>/dev/null || true
  # --layout: where job_list's nodes and job records lie (every scheduling
  # cycle walks them; a regular stride is what the prefetcher follows).
  # Heap chunks and arenas are glibc's: left out under jemalloc.
  if [[ ${LIVE_COST_LAYOUT:-0} == 1 ]]; then
    local keep='jobs|list nodes|job records|node\+job|pages'
    [[ $LIVE_COST_MALLOC == glibc ]] && keep+='|chunks|arenas'
    gdb -p "$pid" -batch -x "$REPO/scripts/job-list-layout.py" 2>&1 \
      | grep -E "^($keep)" >"$dir/layout"
  fi
  {
    echo "load_after $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "sbatch_failed $fails"
    echo "pending $(squeue -h -t PENDING -o %i | wc -l)"
    echo "running $(squeue -h -t RUNNING -o %i | wc -l)"
    echo "held_quota $(squeue -h -t PENDING -o %r | grep -c '^GpuPool' || true)"
    echo "held $(squeue -h -t PENDING -o %Q | grep -cx 0 || true)"
    echo "ctld_anon_huge_kb $(awk '/^AnonHugePages:/ { print $2 }' "/proc/$pid/smaps_rollup")"
    echo "ctld_rss_kb $(awk '/^Rss:/ { print $2 }' "/proc/$pid/smaps_rollup")"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "submit_wall %.1f\n", b - a }'
    awk -v a="$c0" -v b="$c1" 'BEGIN { printf "cpu_submit %.2f\n", b - a }'
    awk -v a="$c1" -v b="$c2" -v s="$idle" 'BEGIN { printf "cpu_idle %.2f\n", (b - a) * 60 / s }'
    sdiag_means "$dir/sdiag.submit" submit
    sdiag_means "$dir/sdiag.idle" idle
    # gpupool's passes so far (its stats file, written at most every 10 s)
    for f in submit idle; do
      [[ -s $dir/stats.$f ]] && printf 'gpupool_passes_%s %s\n' "$f" "$(grep -o '"passes":[0-9]*' "$dir/stats.$f" | cut -d: -f2)"
    done
  } >>"$dir/figures"
  cp "$GPUPOOL_CLUSTER_DIR/log/slurmctld.log" "$dir/" 2>/dev/null || true
  return 0
}

# A client command with the same environment in both modes.  sbatch sends
# its whole environment with every job, and slurmctld's request threads
# allocate and free buffers of those sizes: a different environment (this
# script's per-mode exports) alone moved where the job records and
# job_list's nodes fall in slurmctld's heap, which every backfill walk of
# job_list pays for.
client() {
  env -i PATH="$PATH" HOME=/root LANG=C SLURM_CONF="$SLURM_CONF" "$@"
}

# slurmctld's CPU seconds so far (all threads, the dead ones included).
ctld_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$1/stat"
}

# CPU seconds per thread: "name seconds".
threads() {
  local t hz
  hz=$(getconf CLK_TCK)
  for t in /proc/"$1"/task/*; do
    awk -v hz="$hz" -v name="$(cat "$t/comm")" \
      '{ sub(/^.*\) /, ""); printf "%s %.2f\n", name, ($12 + $13) / hz }' "$t/stat"
  done
}

# sdiag_means FILE PHASE: main_PHASE and bf_PHASE mean cycles (us), cycles.
sdiag_means() {
  awk -v ph="$2" '
    /^Main schedule statistics/ { sec = "main" }
    /^Backfilling stats/ { sec = "bf" }
    /Total cycles:/ && sec != "" { n[sec] = $NF }
    /Mean cycle:/ && sec != "" { m[sec] = $NF }
    END {
      printf "main_mean_%s %s\nmain_cycles_%s %s\n", ph, m["main"] + 0, ph, n["main"] + 0
      printf "bf_mean_%s %s\nbf_cycles_%s %s\n", ph, m["bf"] + 0, ph, n["bf"] + 0
    }' "$1"
}

if [[ ${1:-} == --one ]]; then
  shift
  one_run "$@"
  exit $?
fi
# --each "MODE..." N DIR IDLE_S: one_run for each mode in turn (under the lock).
if [[ ${1:-} == --each ]]; then
  rc=0
  for mode in $2; do
    bash "$0" --one "$mode" "$3" "$4/$mode" "$5" || { clog "N=$3 $mode: FAILED (see $4/$mode)"; rc=1; }
  done
  exit $rc
fi

# ---------------------------------------------------------------- driver
OUT= IDLE=60 MODES="native gpupool" NS=() MALLOC=jemalloc
while (( $# )); do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --idle) IDLE=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --malloc) MALLOC=$2; shift 2 ;;
    --layout) export LIVE_COST_LAYOUT=1; shift ;;
    -h|--help) sed -n '2,56p' "$0"; exit 0 ;;
    [0-9]*) NS+=("$1"); shift ;;
    *) sed -n '2,56p' "$0" >&2; exit 2 ;;
  esac
done
case $MALLOC in
  glibc) LIVE_COST_MALLOC_LIB= ;;
  jemalloc)
    LIVE_COST_MALLOC_LIB=$(ldconfig -p | awk '$1 == "libjemalloc.so.2" { print $NF; exit }')
    [[ -n $LIVE_COST_MALLOC_LIB ]] \
      || { echo "live-cost.sh: no libjemalloc.so.2: apt-get install libjemalloc2 (or --malloc glibc)" >&2; exit 2; } ;;
  *) echo "live-cost.sh: --malloc jemalloc or glibc, not '$MALLOC'" >&2; exit 2 ;;
esac
export LIVE_COST_MALLOC=$MALLOC LIVE_COST_MALLOC_LIB
(( ${#NS[@]} )) || NS=(2000 10000)
OUT=${OUT:-/var/tmp/gpupool-live-cost/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
export GPUPOOL_BUILD=${GPUPOOL_BUILD:-$REPO}
clog "build $GPUPOOL_BUILD, output in $OUT"

fig() { awk -v k="$2" '$1 == k { print $2 }' "$1/figures" 2>/dev/null; }

summary() {
  local n=$1 d="$OUT/n$1" key label m v base
  local -a cols=()
  for m in native native-held gpupool; do
    [[ -s $d/$m/figures ]] && cols+=("$m")
  done
  printf '\nN=%s pending (4 nodes x 2 GPUs, 4 pools; sbatch one at a time, then %s s idle; slurmctld with %s malloc)\n' \
    "$n" "$IDLE" "$MALLOC"
  printf '%-34s' figure
  for m in "${cols[@]}"; do printf ' %12s' "$m"; done
  for base in native native-held; do
    [[ -s $d/$base/figures && -s $d/gpupool/figures ]] && printf ' %19s' "gpupool/$base"
  done
  printf '\n'
  for key in cpu_submit cpu_idle main_mean_submit bf_mean_submit main_mean_idle bf_mean_idle \
             submit_wall main_cycles_submit bf_cycles_submit main_cycles_idle bf_cycles_idle \
             pending held held_quota sbatch_failed ctld_rss_kb ctld_anon_huge_kb; do
    case $key in
      cpu_submit) label="slurmctld CPU submitting (s)" ;;
      cpu_idle) label="slurmctld CPU idle (s per min)" ;;
      main_mean_submit) label="main cycle mean, submitting (us)" ;;
      bf_mean_submit) label="backfill cycle mean, submit (us)" ;;
      main_mean_idle) label="main cycle mean, idle (us)" ;;
      bf_mean_idle) label="backfill cycle mean, idle (us)" ;;
      submit_wall) label="submit wall time (s)" ;;
      main_cycles_submit) label="main cycles, submitting" ;;
      bf_cycles_submit) label="backfill cycles, submitting" ;;
      main_cycles_idle) label="main cycles, idle" ;;
      bf_cycles_idle) label="backfill cycles, idle" ;;
      pending) label="jobs pending at the end" ;;
      held) label="of them held (priority 0)" ;;
      held_quota) label="of them held by gpupool quota" ;;
      sbatch_failed) label="sbatch failures" ;;
      ctld_rss_kb) label="slurmctld RSS at the end (KiB)" ;;
      ctld_anon_huge_kb) label="of it in huge pages (KiB)" ;;
    esac
    printf '%-34s' "$label"
    for m in "${cols[@]}"; do v=$(fig "$d/$m" "$key"); printf ' %12s' "${v:--}"; done
    for base in native native-held; do
      [[ -s $d/$base/figures && -s $d/gpupool/figures ]] || continue
      printf ' %19s' "$(awk -v a="$(fig "$d/$base" "$key")" -v b="$(fig "$d/gpupool" "$key")" \
        'BEGIN { if (a + 0 > 0 && b != "") printf "%.2fx", b / a; else print "-" }')"
    done
    printf '\n'
  done
  for m in "${cols[@]}"; do
    printf '%-34s %s\n' "load average before, $m" "$(grep load_before "$d/$m/figures" | cut -d' ' -f2-)"
  done
  for m in "${cols[@]}"; do
    [[ -s $d/$m/layout ]] && sed "s/^/layout, $m: /" "$d/$m/layout"
  done
  return 0
}

rc=0
for n in "${NS[@]}"; do
  if (( n <= 3000 )); then
    clog "N=$n $MODES: waiting for $LOCK"
    flock "$LOCK" bash "$0" --each "$MODES" "$n" "$OUT/n$n" "$IDLE" || rc=1
  else
    for mode in $MODES; do
      clog "N=$n $mode: waiting for $LOCK"
      flock "$LOCK" bash "$0" --each "$mode" "$n" "$OUT/n$n" "$IDLE" || rc=1
    done
  fi
  summary "$n" | tee -a "$OUT/summary.txt"
done
exit $rc
