# shellcheck shell=bash
# Helpers for integration tests against the local cluster of
# scripts/cluster.sh. Source it:  . tests/integration/lib.sh
# Every helper polls with a deadline; none sleeps a fixed time.

GPUPOOL_REPO=${GPUPOOL_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# Clients must talk to our cluster, never to /etc/slurm.
if [[ -z ${SLURM_CONF:-} || ! -f ${SLURM_CONF:-} ]]; then
  eval "$(bash "$GPUPOOL_REPO/scripts/cluster.sh" env)"
fi

ilog() { printf '[test %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# wait_until DEADLINE_S CMD...: poll CMD (0.2 s) until it succeeds.
wait_until() {
  local deadline=$(( SECONDS + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || return 1
    sleep 0.2
  done
}

# submit NAME PART QOS [sbatch args...] -> prints the job id.
# A 1-GPU, 1-task "sleep 600" batch job.
submit() {
  local name=$1 part=$2 qos=$3 out; shift 3
  out=$(sbatch --parsable -J "$name" -p "$part" --qos="$qos" \
          --gres=gpu:1 -N1 -n1 -o /dev/null -e /dev/null "$@" \
          --wrap 'sleep 600') || return 1
  echo "${out%%;*}"
}

# job_field JOBID FIELD -> value of FIELD= in "scontrol show job" (one line).
job_field() {
  scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1
}

# job_state JOBID -> PENDING/RUNNING/...; falls back to sacct once the job
# has left slurmctld's memory (MinJobAge).
job_state() {
  local s
  s=$(squeue -h -j "$1" -o %T 2>/dev/null | head -n1)
  [[ -n $s ]] || s=$(job_field "$1" JobState)
  [[ -n $s ]] || s=$(sacct -n -X -P -j "$1" -o State 2>/dev/null | head -n1 | awk '{print $1}')
  echo "$s"
}

job_reason()   { squeue -h -j "$1" -o %r 2>/dev/null | head -n1; }
start_time()   { squeue -h -j "$1" -o %S 2>/dev/null | head -n1; }
job_node()     { squeue -h -j "$1" -o %N 2>/dev/null | head -n1; }
job_priority() { squeue -h -j "$1" -o %Q 2>/dev/null | head -n1; }
job_restarts() { job_field "$1" Restarts; }

# wait_state JOBID STATE DEADLINE_S: 0 once the job is in STATE (a regex,
# e.g. 'RUNNING' or 'PENDING|REQUEUED'); on timeout prints what it saw.
wait_state() {
  local id=$1 want=$2 deadline=$(( SECONDS + $3 )) s
  while :; do
    s=$(job_state "$id")
    [[ $s =~ ^($want)$ ]] && return 0
    if (( SECONDS >= deadline )); then
      ilog "job $id: wanted '$want' within $3 s, is '$s' (reason: $(job_reason "$id"))"
      return 1
    fi
    sleep 0.2
  done
}

# running_count [PART] -> number of RUNNING jobs (in PART if given).
running_count() {
  squeue -h -t RUNNING ${1:+-p "$1"} -o %i 2>/dev/null | wc -l
}

# wait_running_count N DEADLINE_S [PART]: until exactly N jobs run.
wait_running_count() {
  local n=$1 deadline=$(( SECONDS + $2 )) part=${3:-} c
  while :; do
    c=$(running_count "$part")
    [[ $c -eq $n ]] && return 0
    if (( SECONDS >= deadline )); then
      ilog "wanted $n running${part:+ in $part} within $2 s, have $c"
      squeue -o '%.12i %.9P %.10j %.6q %.2t %.10M %R' >&2
      return 1
    fi
    sleep 0.2
  done
}

# cancel_all [DEADLINE_S]: cancel every job and wait for an empty queue.
cancel_all() {
  local deadline=$(( SECONDS + ${1:-30} )) ids
  # %F: array job id (a throttled array's %i, 123_[2-4%2], scancel refuses).
  while ids=$(squeue -h -o %F 2>/dev/null | sort -u) && [[ -n $ids ]]; do
    (( SECONDS < deadline )) || { ilog "queue not empty: $ids"; return 1; }
    # shellcheck disable=SC2086
    scancel $ids 2>/dev/null || true
    sleep 0.2
  done
}

# assert CMD...: run CMD, fail the test with a message if it fails.
assert() { "$@" || { ilog "ASSERT FAILED: $*"; return 1; }; }

# Processes of this cluster are told by what is theirs, never by name
# alone: another Slurm cluster may run on the same machine
# (tests/integration/other-cluster.sh).
#
# ns_pid PID: the pid it has in its own pid namespace (what it writes in
# its pid file), from /proc's NSpid.
ns_pid() {
  local k v ns=
  while read -r k v; do [[ $k == NSpid: ]] && { ns=${v##*[[:space:]]}; break; }; done 2>/dev/null <"/proc/$1/status"
  echo "${ns:-$1}"
}

# cluster_ctld_pids: live slurmctld processes of this cluster (the
# slurm.conf in their command line or SLURM_CONF), one per line.
cluster_ctld_pids() {
  local f pid comm st rest args=() envs=()
  for f in /proc/[0-9]*; do
    pid=${f#/proc/}
    read -r comm 2>/dev/null <"$f/comm" && [[ $comm == slurmctld ]] || continue
    read -r rest 2>/dev/null <"$f/stat" || continue
    st=${rest##*) }; st=${st%% *}
    [[ $st != Z ]] || continue
    mapfile -d '' -t args 2>/dev/null <"$f/cmdline"
    mapfile -d '' -t envs 2>/dev/null <"$f/environ"
    if printf '%s\n' "${args[@]}" | grep -qxF "$SLURM_CONF" ||
       printf '%s\n' "${envs[@]}" | grep -qxF "SLURM_CONF=$SLURM_CONF"; then
      echo "$pid"
    fi
  done
}
