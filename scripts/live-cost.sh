#!/usr/bin/env bash
# The plugin layer's live cost inside slurmctld: gpupool against Slurm's
# native scheduling (priority/multifactor + preempt/qos), side by side on
# the local cluster of scripts/cluster.sh.
#
#   scripts/live-cost.sh [--out DIR] [--idle S] [--modes "native gpupool"]
#                        [--malloc "jemalloc glibc"] [--repeat R]
#                        [--accounts DxP] [--parts 1|4] [--conf-accounts 0|1]
#                        [--submit api|sbatch] [--probe K] [--perf]
#                        [--deadline S] [--placement slurm|pack|spread]
#                        [--layout] [--heaptrack] [--defer] [N...]
#
# Modes: native, gpupool, native-held: native scheduling with the
# NORMAL jobs submitted held (`sbatch -H`), the same jobs that gpupool
# holds for quota; and gpupool-old: gpupool from the build
# GPUPOOL_OLD_BUILD names (a before/after comparison in one run, e.g.
# --modes "native gpupool-old gpupool").
#
# Shape (a fresh cluster of 4 nodes x 2 fake GPUs for every run):
#   --parts 4 (default without --accounts): 4 overlapping pools (pool1,
#     pool2: node[1-4]; pool3: node[1-2]; pool4: node[3-4]), quota 2 each;
#   --parts 1 (default with --accounts): one partition `gpu` over the 4
#     nodes, quota 8;
#   --accounts DxP: a department tree in sacctmgr, D departments d0..
#     (children of root) with P projects each (dIpJ), root associated with
#     every project; jobs go to the projects in turn (`sbatch -A dIpJ`).
#     gpupool.conf gets an Account= record for each (--conf-accounts 1,
#     the default; 0: the pool only): every department and project
#     Quota=gres/gpu=1 in every pool (more than the pool's quota in all:
#     each caps, none is a guarantee), the projects Weight=1..3.  The cluster then lives in its own directory
#     (/var/tmp/gpupool-cluster-livecost, its own accounting database), so
#     that the accounts stay out of the other live tests' database.
# --placement P: every pool's Placement= (default slurm: gpupool sets no
#   node Weight; pack: it sets them after each pass, placement.hpp).
# Each run:
#   1. 8 NORMAL 1-GPU jobs fill the cluster (all running; with accounts,
#      in the first project of departments d0..d(Q-1) in turn, Q a pool's
#      quota);
#   2. N 1-GPU jobs, NORMAL and LOW in turn (4 each), partitions and
#      projects in turn, one at a time: they all stay pending (gpupool
#      holds the NORMAL ones over quota; nothing may preempt NORMAL).
#      --submit api (default): through libslurm, one
#      slurm_submit_batch_job() per job (scripts/live-submit.c, built here
#      with cc -lslurm; what sbatch sends, without a process per job, so
#      that 100,000 fit in one lock hold); the last --probe K (default 200)
#      of them by real `sbatch` processes.  --submit sbatch: every job by
#      `sbatch`.  Each submission is timed: "submit latency" is the RPC
#      round trip of the api submissions, "sbatch latency" the wall time of
#      the sbatch processes (at the full queue with --submit api);
#   3. --idle S (default 60) seconds with nothing happening.
# Printed per mode: slurmctld's CPU seconds (utime + stime of all its
# threads, /proc/PID/stat) while submitting and per idle minute, sdiag's
# mean main and backfill cycle in each phase (sdiag is reset at each
# phase's start), latencies p50/p99, slurmctld's RSS at the end (heap and
# mapped files apart, and again once the allocator has given its free
# pages back: malloc_trim(0) or jemalloc's purge, asked of
# scripts/live-heap.c, preloaded into slurmctld in every mode); with
# --repeat R the median and the spread (min-max) of the R runs, and the
# ratio of the medians gpupool/native.
#
# Interleaving: for each N, R repetitions; each repetition runs every
# malloc and, for each malloc, every mode back to back (native, then
# gpupool), so that load from others falls on both alike.  The lock
# (/tmp/gpupool-live.lock) is taken for one malloc's modes at a time
# (one mode at a time above 20,000 jobs), so that other live tests can go
# between.
#
# slurmctld's malloc (--malloc, a list: every run of each): jemalloc
# (Debian's libjemalloc2 preloaded into slurmctld only; default) or glibc.
# Under glibc the job records' and job_list's nodes' placement follows the
# mix of submit paths (doc/performance.md, "Live cost inside slurmctld").
#
# Native: PriorityType=priority/multifactor (PriorityWeightQOS=10000,
# Age and Fairshare 100), PreemptType=preempt/qos, QOS normal preempts low,
# PreemptMode=REQUEUE. gpupool: priority/gpupool, preempt/gpupool,
# job_submit/gpupool. Both: MaxJobCount=max(50000, 2N), and
# scripts/cluster.sh's scheduler settings (sched_interval=2, bf_interval=2).
#
# --deadline S: stop the api submissions after S seconds (checked every
# 5,000 jobs; "deadline_stopped_at" in the figures): at 100,000 jobs the
# submissions slow down as the queue grows, and a lock hold should stay
# under about 15 minutes.
#
# --perf: `perf record -a -g` (200 Hz) while submitting and idle, reported for
# slurmctld's pid (all its threads, the request threads included): perf.submit.data
# and perf.idle.data in each run's directory (with perf report
# --no-children text beside it).  Its overhead is in that run's figures.
#
# --defer: SchedulerParameters=defer in both modes: a submit does not try
# the new job at once (what sites with 100,000-job queues set; without it
# one submission at a time cannot reach 100,000 within a lock hold here,
# doc/performance.md).
#
# --heaptrack: heaptrack attached to slurmctld from the first filler job
# to its shutdown (its allocations by call site: heaptrack.txt in each
# run's directory, `heaptrack_print --print-peaks`; the raw file beside).
# Slows slurmctld down: its CPU figures are not comparable.
#
# Takes /tmp/gpupool-live.lock itself (do not wrap it in flock).  Always
# leaves its cluster down. GPUPOOL_BUILD: the build whose plugins gpupool
# runs (as cluster.sh).  Output (raw figures, per-thread CPU, latencies,
# the configs): --out DIR (default /var/tmp/gpupool-live-cost/<date-time>),
# summary.txt there.
# Runtime on a 2-core machine with --submit api: about 3.5 min per mode at
# N=10,000, 12-15 min at N=100,000; --submit sbatch about 20 ms per job
# more.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER="$REPO/scripts/cluster.sh"
LOCK=/tmp/gpupool-live.lock

CLOG_FD=2
clog() { printf '[live-cost %(%H:%M:%S)T] %s\n' -1 "$*" >&"$CLOG_FD"; }

# The shape's partitions (LIVE_COST_PARTS: 1 or 4), the filler jobs'
# partitions, and a pool's quota.
shape() {
  if [[ ${LIVE_COST_PARTS:-4} == 1 ]]; then
    PART_LINES="PartitionName=gpu Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP"
    POOLS=(gpu)
    FILL_PARTS=(gpu gpu gpu gpu gpu gpu gpu gpu)
    QUOTA=8
  else
    PART_LINES="PartitionName=pool1 Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP
PartitionName=pool2 Nodes=node[1-4] MaxTime=INFINITE State=UP
PartitionName=pool3 Nodes=node[1-2] MaxTime=INFINITE State=UP
PartitionName=pool4 Nodes=node[3-4] MaxTime=INFINITE State=UP"
    POOLS=(pool1 pool2 pool3 pool4)
    FILL_PARTS=(pool3 pool3 pool4 pool4 pool1 pool1 pool2 pool2)
    QUOTA=2
  fi
}

# The projects, in the order jobs go to them (LIVE_COST_ACCOUNTS=DxP).
projects() {
  local d p nd=${LIVE_COST_ACCOUNTS%x*} np=${LIVE_COST_ACCOUNTS#*x}
  for (( p = 0; p < np; p++ )); do
    for (( d = 0; d < nd; d++ )); do echo "d${d}p$p"; done
  done
}

# sacctmgr: the department tree, root associated with every project.
# Waits until slurmctld's assoc_mgr knows the last project.
setup_accounts() {
  local d p nd=${LIVE_COST_ACCOUNTS%x*} np=${LIVE_COST_ACCOUNTS#*x} list all=
  for (( d = 0; d < nd; d++ )); do
    sacctmgr -i add account "d$d" cluster=gpupool >/dev/null 2>&1 || true
    list=
    for (( p = 0; p < np; p++ )); do list+=${list:+,}d${d}p$p; done
    sacctmgr -i add account "$list" parent="d$d" cluster=gpupool >/dev/null 2>&1 || true
    all+=${all:+,}$list
  done
  sacctmgr -i add user root account="$all" cluster=gpupool >/dev/null 2>&1 || true
  sacctmgr -i modify user root set qos=normal,low,high >/dev/null 2>&1 || true
  local last="d$(( nd - 1 ))p$(( np - 1 ))" deadline=$(( SECONDS + 60 ))
  until scontrol show assoc_mgr flags=assoc accounts="$last" users=root 2>/dev/null | grep -q "UserName=root"; do
    (( SECONDS < deadline )) || { clog "slurmctld never saw account $last"; return 1; }
    sleep 1
  done
}

# percentiles FILE: "p50 p99" of the numbers in FILE (one a line).
percentiles() {
  sort -n "$1" | awk '{ v[NR] = $1 } END {
    if (!NR) { print "- -"; exit }
    i50 = int(NR * 0.50 + 0.5); if (i50 < 1) i50 = 1
    i99 = int(NR * 0.99 + 0.5); if (i99 < 1) i99 = 1; if (i99 > NR) i99 = NR
    print v[i50], v[i99] }'
}

# ---------------------------------------------------------------- one run
# --one MODE N DIR IDLE_S: runs under the lock (taken by the caller).
one_run() {
  local mode=$1 n=$2 dir=$3 idle=$4
  local extra pid k t0 t1 c0 c1 c2 fails=0 part qos acct i q0 q1
  local -a accts=() acct_opt
  mkdir -p "$dir"
  shape
  export GPUPOOL_NODE_COUNT=4 GPUS_PER_NODE=2 CPUS_PER_NODE=4
  export GPUPOOL_PARTITIONS=$PART_LINES
  sed -e '/^Pool=/d' "$REPO/etc/gpupool.conf.example" >"$dir/gpupool.conf"
  for part in "${POOLS[@]}"; do
    echo "Pool=$part Quota=$QUOTA Weight=1 Placement=${LIVE_COST_PLACEMENT:-slurm}" >>"$dir/gpupool.conf"
  done
  if [[ -n ${LIVE_COST_ACCOUNTS:-} ]]; then
    export GPUPOOL_CLUSTER_DIR=/var/tmp/gpupool-cluster-livecost
    mapfile -t accts < <(projects)
    if [[ ${LIVE_COST_CONF_ACCOUNTS:-1} == 1 ]]; then
      local nd=${LIVE_COST_ACCOUNTS%x*} np=${LIVE_COST_ACCOUNTS#*x} d p
      for (( d = 0; d < nd; d++ )); do
        echo "Account=d$d Pool=* Quota=gres/gpu=1"
        for (( p = 0; p < np; p++ )); do
          echo "Account=d${d}p$p Pool=* Quota=gres/gpu=1 Weight=$(( 1 + p % 3 ))"
        done
      done >>"$dir/gpupool.conf"
    fi
  fi
  export GPUPOOL_CONF_SRC=$dir/gpupool.conf
  extra="MaxJobCount=$(( n * 2 > 50000 ? n * 2 : 50000 ))"
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
    # gpupool-old: another build of gpupool, side by side (before/after).
    if [[ $mode == gpupool-old ]]; then
      [[ -n ${GPUPOOL_OLD_BUILD:-} ]] || { clog "mode gpupool-old needs GPUPOOL_OLD_BUILD"; return 1; }
      export GPUPOOL_BUILD=$GPUPOOL_OLD_BUILD
    fi
  fi
  export GPUPOOL_SLURM_CONF_EXTRA=$extra
  # live-heap.so (scripts/live-heap.c) in every mode: at the end it asks
  # the allocator to give its free pages back.
  export LIVE_HEAP_DIR=$dir/heap
  mkdir -p "$LIVE_HEAP_DIR"
  rm -f "$LIVE_HEAP_DIR"/*
  if [[ $LIVE_COST_MALLOC == glibc ]]; then
    export GPUPOOL_CTLD_PRELOAD=$LIVE_COST_HEAP_LIB
  else
    export GPUPOOL_CTLD_PRELOAD="$LIVE_COST_MALLOC_LIB $LIVE_COST_HEAP_LIB"
  fi

  # Down: the running jobs cancelled (their slurmstepd outlive slurmd),
  # then slurmctld stopped before `cluster.sh down`, which would otherwise
  # cancel the pending jobs one RPC each (13 minutes for 10,000 on 2 busy
  # cores); a clean start (slurmctld -c) forgets them anyway.
  trap 'timeout 60 scancel -t RUNNING -u root >/dev/null 2>&1; timeout 60 scontrol shutdown slurmctld >/dev/null 2>&1; sleep 2; bash "$CLUSTER" down >&"$CLOG_FD" 2>&1 || clog "cluster down failed"' EXIT
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
  if (( ${#accts[@]} )); then
    setup_accounts || return 1
  fi
  pid=$(bash "$CLUSTER" ctld-pid) || { clog "$mode: slurmctld is not running"; return 1; }
  if [[ $LIVE_COST_MALLOC != glibc ]] && ! grep -qF "$LIVE_COST_MALLOC_LIB" "/proc/$pid/maps"; then
    clog "$mode: slurmctld did not load $LIVE_COST_MALLOC_LIB"
    return 1
  fi

  if [[ ${LIVE_COST_HEAPTRACK:-0} == 1 ]]; then
    # Until slurmctld exits (the trap above shuts it down).
    heaptrack -o "$dir/heaptrack" -p "$pid" >"$dir/heaptrack.log" 2>&1 &
    sleep 5
  fi

  # 1. A full cluster, each pair running before the next is submitted.
  local running=0 deadline
  for (( i = 0; i < ${#FILL_PARTS[@]}; i++ )); do
    part=${FILL_PARTS[i]}
    acct_opt=()
    (( ${#accts[@]} )) && acct_opt=(-A "d$(( i % QUOTA ))p0")
    client sbatch --parsable -J fill -p "$part" "${acct_opt[@]}" --qos=normal --gres=gpu:1 -N1 -n1 \
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

  # 2. N jobs, one at a time.
  {
    echo "load_before $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "malloc $LIVE_COST_MALLOC"
  } >"$dir/figures"
  local probe=${LIVE_COST_PROBE:-200} bulk held=0 perf_pid= f t2
  [[ $mode == native-held ]] && held=1
  if [[ ${LIVE_COST_SUBMIT:-api} == sbatch ]]; then bulk=0; else bulk=$(( n > probe ? n - probe : 0 )); fi
  : >"$dir/lat.api"; : >"$dir/lat.sbatch"
  sdiag -r >/dev/null
  if [[ ${LIVE_COST_PERF:-0} == 1 ]]; then
    # System-wide, reported for slurmctld's pid: `perf record -p` misses
    # the request threads slurmctld starts per RPC after it attached.
    perf record -a -g -F 200 -o "$dir/perf.submit.data" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 1
  fi
  c0=$(ctld_cpu "$pid"); threads "$pid" >"$dir/threads.0"
  t0=$(date +%s.%N)
  if (( bulk )); then
    local plist acc_list=-
    plist=$(IFS=,; echo "${POOLS[*]}")
    (( ${#accts[@]} )) && acc_list=$(IFS=,; echo "${accts[*]}")
    # In slices, so that progress shows; --deadline stops between slices.
    local stop_at=$(( SECONDS + ${LIVE_COST_DEADLINE:-0} ))
    for (( k = 0; k < bulk; k += 5000 )); do
      if (( ${LIVE_COST_DEADLINE:-0} > 0 && SECONDS >= stop_at )); then
        clog "$mode: --deadline: stopped at $k of $n"
        echo "deadline_stopped_at $k" >>"$dir/figures"
        break
      fi
      local cnt=$(( bulk - k < 5000 ? bulk - k : 5000 ))
      q0=$(client "$LIVE_COST_SUBMITTER" "$k" "$cnt" "$dir/lat.api" "$plist" "$acc_list" "$held" 2>>"$dir/sbatch.err")
      fails=$(( fails + ${q0:-$cnt} ))
      clog "$mode: $(( k + cnt )) of $n submitted"
    done
  fi
  for (( k = bulk; k < n; k++ )); do
    part=${POOLS[k % ${#POOLS[@]}]}
    hold=()
    if (( (k / 4) % 2 )); then qos=low; else qos=normal; fi
    [[ $held == 1 && $qos == normal ]] && hold=(-H)
    acct_opt=()
    (( ${#accts[@]} )) && acct_opt=(-A "${accts[k % ${#accts[@]}]}")
    q0=$EPOCHREALTIME
    client sbatch "${hold[@]}" --parsable -J "c$k" -p "$part" "${acct_opt[@]}" --qos="$qos" --gres=gpu:1 -N1 -n1 \
      -t 10 -o /dev/null -e /dev/null --wrap 'sleep 600' >/dev/null 2>>"$dir/sbatch.err" \
      || fails=$(( fails + 1 ))
    q1=$EPOCHREALTIME
    echo $(( (${q1/./} - ${q0/./}) )) >>"$dir/lat.sbatch"
    (( (k + 1) % 1000 )) || clog "$mode: $(( k + 1 )) of $n submitted"
  done
  t1=$(date +%s.%N)
  c1=$(ctld_cpu "$pid"); threads "$pid" >"$dir/threads.1"
  if [[ -n $perf_pid ]]; then
    kill -INT "$perf_pid" 2>/dev/null; wait "$perf_pid" 2>/dev/null
  fi
  sdiag >"$dir/sdiag.submit"
  cp "$GPUPOOL_CLUSTER_DIR/state/ctld/gpupool_stats.json" "$dir/stats.submit" 2>/dev/null || true
  sdiag -r >/dev/null
  echo "load_submit_end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$dir/figures"

  # 3. Idle.
  if [[ ${LIVE_COST_PERF:-0} == 1 ]]; then
    perf record -a -g -F 200 -o "$dir/perf.idle.data" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  sleep "$idle"
  # Read before perf stops: the idle CPU is per minute of the wall time
  # from c1 to here (stopping the submit perf and sdiag fall in it too).
  c2=$(ctld_cpu "$pid"); t2=$(date +%s.%N); threads "$pid" >"$dir/threads.2"
  if [[ -n $perf_pid ]]; then
    kill -INT "$perf_pid" 2>/dev/null; wait "$perf_pid" 2>/dev/null
  fi
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
    # RSS of the heap and of mapped files (code: libstdc++ and the core
    # are gpupool's own, loaded once).
    awk '/^Rss:/ { r = $2 } /^Anonymous:/ { a = $2 } END { print "ctld_anon_kb " a; print "ctld_file_kb " r - a }' \
      "/proc/$pid/smaps_rollup"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "submit_wall %.1f\n", b - a }'
    awk -v a="$c0" -v b="$c1" 'BEGIN { printf "cpu_submit %.2f\n", b - a }'
    awk -v a="$c1" -v b="$c2" -v s="$t1" -v e="$t2" 'BEGIN { printf "cpu_idle %.2f\n", (b - a) * 60 / (e - s) }'
    read -r q0 q1 < <(percentiles "$dir/lat.api")
    echo "api_p50_us $q0"; echo "api_p99_us $q1"
    read -r q0 q1 < <(percentiles "$dir/lat.sbatch")
    echo "sbatch_p50_us $q0"; echo "sbatch_p99_us $q1"
    sdiag_means "$dir/sdiag.submit" submit
    sdiag_means "$dir/sdiag.idle" idle
    # gpupool's passes so far (its stats file, written at most every 10 s)
    for f in submit idle; do
      [[ -s $dir/stats.$f ]] && printf 'gpupool_passes_%s %s\n' "$f" "$(grep -o '"passes":[0-9]*' "$dir/stats.$f" | cut -d: -f2)"
    done
  } >>"$dir/figures"
  # What of the RSS is free memory the allocator keeps: the RSS again once
  # it has given free pages back (glibc: malloc_trim(0); jemalloc: purge
  # every arena), asked of live-heap.so after every figure above; its
  # accounts before and after are in $dir/heap.  The request names the pid
  # slurmctld itself sees (with GPUPOOL_CTLD_PID_NS, its namespace's).
  : >"$LIVE_HEAP_DIR/request.$(awk '/^NSpid:/ { print $NF }' "/proc/$pid/status")"
  for (( i = 0; i < 60; i++ )); do
    [[ -e $LIVE_HEAP_DIR/done ]] && break
    sleep 0.5
  done
  if [[ -e $LIVE_HEAP_DIR/done ]]; then
    echo "ctld_rss_trimmed_kb $(awk '/^Rss:/ { print $2 }' "/proc/$pid/smaps_rollup")" >>"$dir/figures"
  else
    clog "$mode: live-heap.so did not answer (RSS with free pages given back not measured)"
  fi
  cp "$GPUPOOL_CLUSTER_DIR/log/slurmctld.log" "$dir/" 2>/dev/null || true
  for f in submit idle; do
    [[ -s $dir/perf.$f.data ]] || continue
    perf report -i "$dir/perf.$f.data" --pid "$pid" --no-children --sort comm,dso,symbol -g none --stdio 2>/dev/null \
      | grep -v '^#' | grep -v '^$' | head -150 >"$dir/perf.$f.txt" || true
  done
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

# heaptrack_report DIR: with --heaptrack, once slurmctld has exited, its
# allocations by call site (peaks, and what it still held at exit).
heaptrack_report() {
  [[ ${LIVE_COST_HEAPTRACK:-0} == 1 ]] || return 0
  local f deadline=$(( SECONDS + 120 ))
  until f=$(ls "$1"/heaptrack*.zst "$1"/heaptrack*.gz 2>/dev/null | head -1) && [[ -n $f ]] \
      && ! pgrep -f "heaptrack.*-o $1/heaptrack" >/dev/null; do
    (( SECONDS < deadline )) || { clog "heaptrack: no output in $1"; return 0; }
    sleep 2
  done
  heaptrack_print --print-peaks 1 --print-allocators 0 --print-temporary 0 --print-leaks 1 \
    --peak-limit 40 --sub-peak-limit 6 "$f" >"$1/heaptrack.txt" 2>&1 || true
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
    heaptrack_report "$4/$mode"
  done
  exit $rc
fi

# ---------------------------------------------------------------- driver
OUT= IDLE=60 MODES="native gpupool" NS=() MALLOCS=jemalloc REPEAT=1
PARTS= ACCOUNTS= CONF_ACCOUNTS=1 SUBMIT=api PROBE=200 PERF=0
usage() { sed -n '2,90p' "$0"; }
while (( $# )); do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --idle) IDLE=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --malloc) MALLOCS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --accounts) ACCOUNTS=$2; shift 2 ;;
    --conf-accounts) CONF_ACCOUNTS=$2; shift 2 ;;
    --parts) PARTS=$2; shift 2 ;;
    --submit) SUBMIT=$2; shift 2 ;;
    --probe) PROBE=$2; shift 2 ;;
    --perf) PERF=1; shift ;;
    --deadline) export LIVE_COST_DEADLINE=$2; shift 2 ;;
    --layout) export LIVE_COST_LAYOUT=1; shift ;;
    --heaptrack) export LIVE_COST_HEAPTRACK=1; shift ;;
    --defer) export GPUPOOL_SCHED_PARAMS_EXTRA=,defer; shift ;;
    --placement) export LIVE_COST_PLACEMENT=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    [0-9]*) NS+=("$1"); shift ;;
    *) usage >&2; exit 2 ;;
  esac
done
[[ -z $ACCOUNTS || $ACCOUNTS =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] \
  || { echo "live-cost.sh: --accounts DxP (e.g. 10x20), not '$ACCOUNTS'" >&2; exit 2; }
[[ -n $PARTS ]] || { [[ -n $ACCOUNTS ]] && PARTS=1 || PARTS=4; }
[[ $PARTS == 1 || $PARTS == 4 ]] || { echo "live-cost.sh: --parts 1 or 4" >&2; exit 2; }
[[ ${LIVE_COST_PLACEMENT:-slurm} =~ ^(slurm|pack|spread)$ ]] \
  || { echo "live-cost.sh: --placement slurm, pack or spread" >&2; exit 2; }
[[ $SUBMIT == api || $SUBMIT == sbatch ]] || { echo "live-cost.sh: --submit api or sbatch" >&2; exit 2; }
JEMALLOC_LIB=$(ldconfig -p | awk '$1 == "libjemalloc.so.2" { print $NF; exit }')
for m in $MALLOCS; do
  case $m in
    glibc) ;;
    jemalloc)
      [[ -n $JEMALLOC_LIB ]] \
        || { echo "live-cost.sh: no libjemalloc.so.2: apt-get install libjemalloc2 (or --malloc glibc)" >&2; exit 2; } ;;
    *) echo "live-cost.sh: --malloc jemalloc and/or glibc, not '$m'" >&2; exit 2 ;;
  esac
done
(( ${#NS[@]} )) || NS=(2000 10000)
OUT=${OUT:-/var/tmp/gpupool-live-cost/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
# Absolute, and no blank: slurmctld preloads $OUT/live-heap.so (LD_PRELOAD
# splits at blanks) after it changed its directory.
OUT=$(cd "$OUT" && pwd)
[[ $OUT != *[[:space:]]* ]] || { echo "live-cost.sh: --out must not contain blanks: $OUT" >&2; exit 2; }
export GPUPOOL_BUILD=${GPUPOOL_BUILD:-$REPO}
export LIVE_COST_PARTS=$PARTS LIVE_COST_ACCOUNTS=$ACCOUNTS LIVE_COST_CONF_ACCOUNTS=$CONF_ACCOUNTS
export LIVE_COST_SUBMIT=$SUBMIT LIVE_COST_PROBE=$PROBE LIVE_COST_PERF=$PERF
export LIVE_COST_HEAP_LIB=$OUT/live-heap.so
cc -O2 -shared -fPIC -o "$LIVE_COST_HEAP_LIB" "$REPO/scripts/live-heap.c" -ldl -lpthread \
  || { echo "live-cost.sh: cannot build scripts/live-heap.c" >&2; exit 2; }
if [[ $SUBMIT == api ]]; then
  export LIVE_COST_SUBMITTER=$OUT/live-submit
  cc -O2 -o "$LIVE_COST_SUBMITTER" "$REPO/scripts/live-submit.c" -lslurm \
    || { echo "live-cost.sh: cannot build scripts/live-submit.c (libslurm-dev; or --submit sbatch)" >&2; exit 2; }
fi
clog "build $GPUPOOL_BUILD, output in $OUT"

fig() { awk -v k="$2" '$1 == k { print $2 }' "$1/figures" 2>/dev/null; }

# stats3 DIRS... KEY: "median min max" of KEY over the runs in DIRS.
stats3() {
  local key=${!#} d
  for d in "${@:1:$#-1}"; do fig "$d" "$key"; done | grep -E '^[0-9.]+$' | sort -g | awk '
    { v[NR] = $1 } END {
      if (!NR) { print "- - -"; exit }
      med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      print med, v[1], v[NR] }'
}

summary() {
  local n=$1 malloc=$2 key label m base med lo hi r
  local -a cols=() dirs
  for m in native native-held gpupool-old gpupool; do
    compgen -G "$OUT/n$n/r*/$malloc/$m/figures" >/dev/null && cols+=("$m")
  done
  local accts_label=
  [[ -n $ACCOUNTS ]] && accts_label=", accounts $ACCOUNTS"
  [[ -n $ACCOUNTS && $CONF_ACCOUNTS == 0 ]] && accts_label+=" (the pool only in gpupool.conf)"
  [[ ${LIVE_COST_PLACEMENT:-slurm} == slurm ]] || accts_label+=", Placement=$LIVE_COST_PLACEMENT"
  [[ -z ${GPUPOOL_SCHED_PARAMS_EXTRA:-} ]] || accts_label+=", SchedulerParameters+=${GPUPOOL_SCHED_PARAMS_EXTRA#,}"
  printf '\nN=%s pending (4 nodes x 2 GPUs, %s partition(s)%s; %s; then %s s idle; slurmctld with %s malloc; %s run(s) each: median [min-max])\n' \
    "$n" "$PARTS" "$accts_label" \
    "$( [[ $SUBMIT == api ]] && echo "libslurm submits, the last $PROBE by sbatch" || echo "sbatch one at a time")" \
    "$IDLE" "$malloc" "$REPEAT"
  printf '%-34s' figure
  for m in "${cols[@]}"; do printf ' %24s' "$m"; done
  for base in native native-held; do
    [[ " ${cols[*]} " == *" $base "* && " ${cols[*]} " == *" gpupool "* ]] && printf ' %17s' "gpupool/$base"
    [[ " ${cols[*]} " == *" $base "* && " ${cols[*]} " == *" gpupool-old "* ]] && printf ' %17s' "old/$base"
  done
  printf '\n'
  for key in cpu_submit cpu_idle main_mean_submit bf_mean_submit main_mean_idle bf_mean_idle \
             api_p50_us api_p99_us sbatch_p50_us sbatch_p99_us ctld_rss_kb ctld_anon_kb ctld_file_kb ctld_rss_trimmed_kb \
             submit_wall main_cycles_submit bf_cycles_submit main_cycles_idle bf_cycles_idle \
             gpupool_passes_submit pending held held_quota sbatch_failed deadline_stopped_at; do
    case $key in
      cpu_submit) label="slurmctld CPU submitting (s)" ;;
      cpu_idle) label="slurmctld CPU idle (s per min)" ;;
      main_mean_submit) label="main cycle mean, submitting (us)" ;;
      bf_mean_submit) label="backfill cycle mean, submit (us)" ;;
      main_mean_idle) label="main cycle mean, idle (us)" ;;
      bf_mean_idle) label="backfill cycle mean, idle (us)" ;;
      api_p50_us) label="submit RPC latency p50 (us)" ;;
      api_p99_us) label="submit RPC latency p99 (us)" ;;
      sbatch_p50_us) label="sbatch latency p50 (us)" ;;
      sbatch_p99_us) label="sbatch latency p99 (us)" ;;
      ctld_rss_kb) label="slurmctld RSS at the end (KiB)" ;;
      ctld_anon_kb) label="  of it anonymous (heap) (KiB)" ;;
      ctld_file_kb) label="  of it mapped files (KiB)" ;;
      ctld_rss_trimmed_kb) label="RSS, free pages given back (KiB)" ;;
      submit_wall) label="submit wall time (s)" ;;
      main_cycles_submit) label="main cycles, submitting" ;;
      bf_cycles_submit) label="backfill cycles, submitting" ;;
      main_cycles_idle) label="main cycles, idle" ;;
      bf_cycles_idle) label="backfill cycles, idle" ;;
      gpupool_passes_submit) label="gpupool passes at submit end" ;;
      pending) label="jobs pending at the end" ;;
      held) label="of them held (priority 0)" ;;
      held_quota) label="of them held by gpupool quota" ;;
      sbatch_failed) label="submissions failed" ;;
      deadline_stopped_at) label="api submits stopped (--deadline)" ;;
    esac
    printf '%-34s' "$label"
    declare -A meds=()
    for m in "${cols[@]}"; do
      mapfile -t dirs < <(compgen -G "$OUT/n$n/r*/$malloc/$m" | sort)
      read -r med lo hi < <(stats3 "${dirs[@]}" "$key")
      meds[$m]=$med
      if [[ $med == - ]]; then printf ' %24s' -
      elif (( REPEAT > 1 )); then printf ' %24s' "$med [$lo-$hi]"
      else printf ' %24s' "$med"; fi
    done
    for base in native native-held; do
      for m in gpupool gpupool-old; do
        [[ -n ${meds[$base]:-} && -n ${meds[$m]:-} ]] || continue
        r=$(awk -v a="${meds[$base]}" -v b="${meds[$m]}" \
          'BEGIN { if (a + 0 > 0 && b != "-") printf "%.2fx", b / a; else print "-" }')
        printf ' %17s' "$r"
      done
    done
    unset meds
    printf '\n'
  done
  for m in "${cols[@]}"; do
    printf '%-34s %s\n' "load average before, $m" \
      "$(cat "$OUT"/n"$n"/r*/"$malloc"/"$m"/figures 2>/dev/null | awk '$1 == "load_before" { printf "%s ", $2 }')"
  done
  for m in "${cols[@]}"; do
    for d in "$OUT"/n"$n"/r*/"$malloc"/"$m"; do
      [[ -s $d/layout ]] && sed "s/^/layout, $m ${d#"$OUT"\/}: /" "$d/layout"
    done
  done
  return 0
}

rc=0
for n in "${NS[@]}"; do
  for (( r = 1; r <= REPEAT; r++ )); do
    for malloc in $MALLOCS; do
      export LIVE_COST_MALLOC=$malloc
      if [[ $malloc == glibc ]]; then export LIVE_COST_MALLOC_LIB=; else export LIVE_COST_MALLOC_LIB=$JEMALLOC_LIB; fi
      if (( n <= 20000 )); then
        clog "N=$n run $r $malloc: $MODES: waiting for $LOCK"
        flock "$LOCK" bash "$0" --each "$MODES" "$n" "$OUT/n$n/r$r/$malloc" "$IDLE" || rc=1
      else
        for mode in $MODES; do
          clog "N=$n run $r $malloc $mode: waiting for $LOCK"
          flock "$LOCK" bash "$0" --each "$mode" "$n" "$OUT/n$n/r$r/$malloc" "$IDLE" || rc=1
        done
      fi
    done
  done
  for malloc in $MALLOCS; do
    summary "$n" "$malloc" | tee -a "$OUT/summary.txt"
  done
done
exit $rc
