#!/usr/bin/env bash
# Soak test of gpupool on the live local cluster (scripts/cluster.sh): a
# seeded random workload while tests/soak/checker.py samples the queue every
# second; at the end the checker judges the run and the soak fails on any
# violation (the checks are defined in checker.py's header).
#
#   tests/soak/soak.sh [--jobs N] [--seed S] [--max-run SECONDS]
#                      [--pending N] [--out DIR] [--min-preemptions N]
#
#   --jobs N        jobs to submit (default 600; --jobs 60 is the short mode)
#   --seed S        RNG seed (default: from the clock; printed, so a failing
#                   run can be replayed with the same job plan)
#   --max-run S     longest job in seconds; jobs sleep 2..S (default 12)
#   --pending N     keep about N jobs pending (default 30)
#   --out DIR       samples, job list, configs, log copy
#                   (default /var/tmp/gpupool-soak/<date-time>)
#   --min-preemptions N   fail if fewer preemptions happened (default 50
#                   from 500 jobs on, else jobs/20: a short run stays steady)
#   --drain S       wait at most S seconds for the queue to drain (300)
#
# The workload, on 6 nodes x 2 GPUs (pool1 and pool2 share node[1-4] with
# the unmanaged partition plain, pool3 has node[5-6]):
#   - jobs of tiers high 10%, normal 22%, low 68% (NP jobs arriving while
#     LOW jobs fill the GPUs make the preemptions); in pool1 38%, pool2 34%,
#     pool3 22%, pool1,pool2 (either) 3%, plain 3%; 1 GPU (85%) or 2;
#     "sleep 2..max-run" with a 1-minute time limit (so that backfill can
#     use GPUs it holds for a 2-GPU job); 8% exit early with status 3; 10%
#     of low jobs are --no-requeue (cancelled when preempted);
#   - random cancels (pending or running) and `scontrol requeue` of running
#     jobs while it runs;
#   - quotas pool1/pool2/pool3 4/4/2 (all GPUs in some quota: LOW jobs
#     borrow, NP jobs take them back); at 1/3 of the jobs reconfigured to
#     2/5/1 (two decreases, one increase), at 2/3 to 4/3/2; at 1/2 one
#     slurmctld restart (cluster.sh restart-ctld);
#   - after the last submit it waits for the queue to drain (jobs still
#     queued after --drain seconds are cancelled and reported).
#
# Takes /tmp/gpupool-live.lock itself (do not wrap it in flock), brings its
# own cluster up and always takes it down. Runtime on a 2-core machine:
# about 9.5 min for 600 jobs (50-60 preemptions), 1.5-2 min for 60.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER="$REPO/scripts/cluster.sh"
CHECKER="$REPO/tests/soak/checker.py"
PY=/usr/bin/python3

if [[ -z ${GPUPOOL_SOAK_LOCKED:-} ]]; then
  exec flock /tmp/gpupool-live.lock env GPUPOOL_SOAK_LOCKED=1 bash "$0" "$@"
fi

JOBS=600 SEED=$(( $(date +%s) % 1000000 )) MAX_RUN=12 PENDING=30 OUT= MIN_PRE= DRAIN=300
while (( $# )); do
  case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --max-run) MAX_RUN=$2; shift 2 ;;
    --pending) PENDING=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --min-preemptions) MIN_PRE=$2; shift 2 ;;
    --drain) DRAIN=$2; shift 2 ;;
    *) sed -n '2,21p' "$0" >&2; exit 2 ;;
  esac
done
MIN_PRE=${MIN_PRE:-$(( JOBS >= 500 ? 50 : JOBS / 20 ))}
OUT=${OUT:-/var/tmp/gpupool-soak/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
export GPUPOOL_BUILD=${GPUPOOL_BUILD:-$REPO} GPUPOOL_PLUGINS=1 GPUS_PER_NODE=2 CPUS_PER_NODE=4
export GPUPOOL_CONF_SRC=$OUT/gpupool.conf.0

slog() { printf '[soak %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
echo "soak: seed $SEED, $JOBS jobs, jobs run 2..$MAX_RUN s, output in $OUT"

# gpupool.conf: the example's tiers and settings with these pool quotas.
make_conf() {
  sed -e "s/^Pool=pool1 .*/Pool=pool1 Quota=$1 Weight=1/" \
      -e "s/^Pool=pool2 .*/Pool=pool2 Quota=$2 Weight=1/" \
      -e "s/^Pool=pool3 .*/Pool=pool3 Quota=$3 Weight=1/" "$REPO/etc/gpupool.conf.example"
}
conf_event() {  # conf_event FILE: one line of confs.jsonl, stamped now
  $PY -c 'import json,sys,time; print(json.dumps({"t": time.time(), "conf": open(sys.argv[1]).read()}))' "$1" \
    >>"$OUT/confs.jsonl"
}
make_conf 4 4 2 >"$OUT/gpupool.conf.0"
make_conf 2 5 1 >"$OUT/gpupool.conf.1"
make_conf 4 3 2 >"$OUT/gpupool.conf.2"

SAMPLER=
finish() {
  [[ -n $SAMPLER ]] && { touch "$OUT/stop"; wait "$SAMPLER" 2>/dev/null; SAMPLER=; }
  bash "$CLUSTER" down >&2 || slog "cluster down failed"
}
trap finish EXIT

t_start=$SECONDS
if ! bash "$CLUSTER" up >&2; then
  echo "soak: FAIL: cluster did not come up"
  exit 1
fi
eval "$(bash "$CLUSTER" env)"
CTLD_LOG=$GPUPOOL_CLUSTER_DIR/log/slurmctld.log
LIVE_CONF=$(dirname "$SLURM_CONF")/gpupool.conf
log_offset=$(stat -c %s "$CTLD_LOG")
since=$(date +%s)
: >"$OUT/confs.jsonl"
conf_event "$OUT/gpupool.conf.0"
: >"$OUT/jobs.tsv"

# The job plan, drawn up front so that a seed always gives the same jobs.
RANDOM=$SEED
declare -a P_PART P_QOS P_GPUS P_CMD P_FLAGS
for (( k = 0; k < JOBS; k++ )); do
  r=$(( RANDOM % 100 ))
  if (( r < 38 )); then part=pool1; elif (( r < 72 )); then part=pool2
  elif (( r < 94 )); then part=pool3; elif (( r < 97 )); then part=pool1,pool2
  else part=plain; fi
  r=$(( RANDOM % 100 ))
  if (( r < 10 )); then qos=high; elif (( r < 32 )); then qos=normal; else qos=low; fi
  gpus=$(( RANDOM % 100 < 15 ? 2 : 1 ))
  run=$(( 2 + RANDOM % (MAX_RUN - 1) ))
  flags=
  if (( RANDOM % 100 < 8 )); then cmd="sleep $(( run / 3 + 1 )); exit 3"; else cmd="sleep $run"; fi
  [[ $qos == low ]] && (( RANDOM % 100 < 10 )) && flags=--no-requeue
  P_PART[k]=$part P_QOS[k]=$qos P_GPUS[k]=$gpus P_CMD[k]=$cmd P_FLAGS[k]=$flags
done
RANDOM=$(( SEED + 1 ))   # actions (cancel, requeue) from their own sequence

$PY "$CHECKER" sample --out "$OUT/samples.jsonl" --stop-file "$OUT/stop" --parent $$ &
SAMPLER=$!

submitted=0 cancels=0 requeues=0 submit_fail=0
reconf1=$(( JOBS / 3 )) restart_at=$(( JOBS / 2 )) reconf2=$(( 2 * JOBS / 3 ))
did_reconf1=0 did_restart=0 did_reconf2=0
declare -a IDS=()

submit_next() {
  local k=$submitted out id
  # shellcheck disable=SC2086
  out=$(sbatch --parsable -J "soak$k" -p "${P_PART[k]}" --qos="${P_QOS[k]}" \
          --gres=gpu:"${P_GPUS[k]}" -N1 -n1 -t 1 -o /dev/null -e /dev/null ${P_FLAGS[k]} \
          --wrap "${P_CMD[k]}" 2>>"$OUT/sbatch.err") || { submit_fail=$(( submit_fail + 1 )); return 1; }
  id=${out%%;*}
  IDS+=("$id")
  printf '%s\t%s\t%s\t%s\t%s\n' "$id" "${P_PART[k]}" "${P_QOS[k]}" "${P_GPUS[k]}" "${P_CMD[k]}" >>"$OUT/jobs.tsv"
  submitted=$(( submitted + 1 ))
}

reconfigure() {  # reconfigure N: put gpupool.conf.N in force
  slog "reconfigure: $(grep -h '^Pool=' "$OUT/gpupool.conf.$1" | awk '{print $1, $2}' | tr '\n' ' ')"
  cp "$OUT/gpupool.conf.$1" "$LIVE_CONF"
  conf_event "$OUT/gpupool.conf.$1"
  scontrol reconfigure || slog "scontrol reconfigure failed"
}

pick_one() {  # pick_one "LINES": one of them, drawn from RANDOM
  local -a a
  mapfile -t a <<<"$1"
  [[ -n ${a[0]:-} ]] && echo "${a[RANDOM % ${#a[@]}]}"
}

fails=0
while (( submitted < JOBS )); do
  q=$(squeue -h -o '%i %t' 2>/dev/null) || { sleep 0.5; continue; }
  pending=$(grep -c ' PD$' <<<"$q")
  batch=0
  while (( submitted < JOBS && pending + batch < PENDING && batch < 4 )); do
    if submit_next; then batch=$(( batch + 1 ))
    else fails=$(( fails + 1 )); (( fails < 20 )) || { echo "soak: FAIL: sbatch keeps failing"; exit 1; }; break; fi
  done
  # Random cancels and requeues of jobs in the queue.
  if (( submitted > 10 )); then
    if (( RANDOM % 100 < 6 )); then
      id=$(pick_one "$(awk '{print $1}' <<<"$q")")
      [[ -n $id ]] && scancel "$id" 2>/dev/null && cancels=$(( cancels + 1 ))
    fi
    if (( RANDOM % 100 < 5 )); then
      id=$(pick_one "$(awk '$2 == "R" {print $1}' <<<"$q")")
      [[ -n $id ]] && scontrol requeue "$id" 2>/dev/null && requeues=$(( requeues + 1 ))
    fi
  fi
  if (( !did_reconf1 && submitted >= reconf1 )); then did_reconf1=1; reconfigure 1; fi
  if (( !did_reconf2 && submitted >= reconf2 )); then did_reconf2=1; reconfigure 2; fi
  if (( !did_restart && submitted >= restart_at )); then
    did_restart=1
    slog "restarting slurmctld"
    bash "$CLUSTER" restart-ctld >&2 || { echo "soak: FAIL: slurmctld restart failed"; exit 1; }
  fi
  (( submitted % 50 == 0 && batch > 0 )) && slog "$submitted/$JOBS submitted, $(wc -l <<<"$q") queued"
  sleep 0.5
done

slog "all $JOBS jobs submitted in $(( SECONDS - t_start )) s; draining (at most $DRAIN s)"
deadline=$(( SECONDS + DRAIN ))
while [[ -n $(squeue -h -o %i 2>/dev/null) ]] && (( SECONDS < deadline )); do sleep 1; done
left=$(squeue -h -o %i 2>/dev/null | wc -l)
if (( left > 0 )); then
  slog "$left jobs still queued after $DRAIN s: cancelling them"
  squeue -o '%.10i %.8P %.7q %.9T %.10M %R' >"$OUT/left-at-end.txt" 2>&1
  scancel $(squeue -h -o %i) 2>/dev/null
  deadline=$(( SECONDS + 60 ))
  while [[ -n $(squeue -h -o %i 2>/dev/null) ]] && (( SECONDS < deadline )); do sleep 0.5; done
fi
touch "$OUT/stop"; wait "$SAMPLER" 2>/dev/null; SAMPLER=
tail -c +"$(( log_offset + 1 ))" "$CTLD_LOG" >"$OUT/slurmctld.log"

echo "soak: driver: $submitted submitted ($submit_fail sbatch failures), $cancels cancelled and $requeues requeued at random, $left cancelled at the end; workload took $(( SECONDS - t_start )) s"
$PY "$CHECKER" check --name soak --samples "$OUT/samples.jsonl" --jobs "$OUT/jobs.tsv" \
  --confs "$OUT/confs.jsonl" --log "$OUT/slurmctld.log" --since "$since" --gpus-per-node 2 \
  --accounting --min-preemptions "$MIN_PRE" | tee "$OUT/verdict.txt"
rc=${PIPESTATUS[0]}
echo "soak: $([[ $rc == 0 ]] && echo PASS || echo FAIL) (seed $SEED, $(( SECONDS - t_start )) s, output in $OUT)"
exit "$rc"
