#!/usr/bin/env bash
# A whole Slurm 22.05 cluster on this one machine, as root, for integration
# tests: private munged + MariaDB + slurmdbd + slurmctld + 4 slurmd
# ("slurmd -N nodeN", Debian builds with --enable-multiple-slurmd), each
# node with fake GPUs. Everything lives under one directory and listens on
# 127.0.0.1 on unusual ports, so nothing clashes with a system install.
#
#   scripts/cluster.sh up|down|status|env|restart-ctld|kill-ctld [--when-saved]|start-ctld|ctld-pid
#   (ctld-pid prints the running slurmctld's pid; the pid file can be stale)
#
# Environment:
#   GPUPOOL_SLURM_PREFIX run Slurm from this prefix (scripts/build-slurm.sh,
#                        e.g. /opt/slurm/26.05) instead of Debian's 22.05:
#                        its bin/sbin first in PATH, its lib/slurm plugins,
#                        its own state dir (-X.Y) and accounting database
#                        (a slurmdbd refuses another release's schema).
#                        Build the plugins against its source tree.     []
#   GPUPOOL_CLUSTER_DIR  state dir      [/var/tmp/gpupool-cluster, -X.Y with a prefix]
#   GPUPOOL_PLUGINS      1: priority/gpupool + preempt/gpupool from the build
#                        installed: the same plugins, as installed in Slurm's
#                          plugin dir (the slurm-gpupool package, or make install)
#                        0: priority/basic + preempt/qos (no gpupool needed) [1]
#   GPUPOOL_BUILD        build tree holding src/plugins/*/gpupool/.libs [repo]
#   GPUPOOL_CONF_SRC     gpupool.conf to copy beside slurm.conf
#                                              [<repo>/etc/gpupool.conf.example]
#   GPUS_PER_NODE        fake GPUs per node                            [1]
#   GPUPOOL_NODE_COUNT   nodes (slurmd), node1..nodeN, 1-64 (ports 17001-17064) [6]
#   GPUPOOL_PARTITIONS   PartitionName= lines replacing the default ones
#                        (pool1, pool2, plain on node[1-4], pool3 on
#                        node[5-6]), e.g. for fewer nodes               []
#   CPUS_PER_NODE        CPUs each node claims (config_overrides)      [2]
#   GPUPOOL_MEMORY_MB    memory (MiB) each node claims: Slurm then allocates
#                        memory (CR_Core_Memory, DefMemPerCPU its share per
#                        CPU); unset: CPUs only (CR_Core)               []
#   GPUPOOL_SHARDS       gres/shard per node over its GPUs (Slurm's GPU
#                        sharing; a GPU with shards in use goes to no
#                        whole-GPU job); unset: none                    []
#   GPUPOOL_GPU_FLAGS    gres.conf Flags= of every node's GPUs (explicit:
#                        Slurm 23.11 and later; a whole-node job then gets
#                        only the GPUs it asks for); unset: none      []
#   GPUPOOL_ACCT_TRES    AccountingStorageTRES (GPU counts in jobs' TRES;
#                        typed ones too for QuotaTRES=gres/gpu:TYPE)  [gres/gpu]
#   GPUPOOL_SLURM_CONF_EXTRA  lines appended to slurm.conf (later keys win)
#   GPUPOOL_SCHED_PARAMS_EXTRA  ,-led options added to SchedulerParameters
#                        (e.g. ",defer")                              []
#   GPUPOOL_NODE_HOSTNAMES  shared: every node NodeHostname=localhost, for
#                        a Slurm built with --enable-multiple-slurmd
#                        (Debian's, scripts/build-slurm.sh's); distinct:
#                        NodeHostname=node1.., for one built without it
#                        (SchedMD's debian/ and slurm.spec): there
#                        slurmctld keeps one node per NodeHostname
#                        ("Duplicated NodeHostName localhost") and cannot
#                        address the others ("_fwd_tree_get_addr: can't
#                        find address for host node2"); TreeWidth then
#                        covers all nodes, so no slurmd forwards a message
#                        (one munged: a forwarded credential is a replay) [shared]
#   GPUPOOL_UP_TIMEOUT   seconds to wait for daemons / idle nodes      [60]
#   GPUPOOL_CTLD_PRELOAD LD_PRELOAD for slurmctld (up, restart-ctld,
#                        start-ctld), e.g. tests/integration/slowfsync.c []
#   GPUPOOL_CTLD_PID_NS  N: start slurmctld (up, restart-ctld, start-ctld)
#                        in a pid namespace of its own whose pids go on
#                        from N (unshare --pid), for tests of pid handling:
#                        pids there can be steered (ns_last_pid is per
#                        namespace) without touching the machine's      []
set -euo pipefail
# gpupool refuses a gpupool.conf or state directory that others may write.
umask 022
# The daemons started here must not inherit the caller's descriptors: one
# may be the live-test lock (flock /tmp/gpupool-live.lock ...), which a
# daemon left running after a killed test run would hold for ever.
for fd in $(ls /proc/$$/fd); do
  case $fd in 0|1|2|255) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
done

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SLURM_PREFIX=${GPUPOOL_SLURM_PREFIX:-}
SLURM_PREFIX=${SLURM_PREFIX%/}
SLURM_RELEASE=${SLURM_PREFIX##*/}   # /opt/slurm/26.05 -> 26.05
D=${GPUPOOL_CLUSTER_DIR:-/var/tmp/gpupool-cluster${SLURM_PREFIX:+-$SLURM_RELEASE}}
D=${D%/}
PLUGINS=${GPUPOOL_PLUGINS:-1}
BUILD=${GPUPOOL_BUILD:-$REPO}
CONF_SRC=${GPUPOOL_CONF_SRC:-$REPO/etc/gpupool.conf.example}
GPUS=${GPUS_PER_NODE:-1}
CPUS=${CPUS_PER_NODE:-2}
MEMORY=${GPUPOOL_MEMORY_MB:-}
SHARDS=${GPUPOOL_SHARDS:-}
GPU_FLAGS=${GPUPOOL_GPU_FLAGS:-}
[[ $GPU_FLAGS =~ ^[A-Za-z_,]*$ ]] || { echo "GPUPOOL_GPU_FLAGS=$GPU_FLAGS: gres.conf flags, comma-separated" >&2; exit 2; }
[[ -z $SHARDS || $SHARDS =~ ^[1-9][0-9]*$ ]] || { echo "GPUPOOL_SHARDS=$SHARDS: a number of shards" >&2; exit 2; }
[[ -z $MEMORY || $MEMORY =~ ^[1-9][0-9]*$ ]] || { echo "GPUPOOL_MEMORY_MB=$MEMORY: a number of MiB" >&2; exit 2; }
NODE_MEMORY=${MEMORY:+ RealMemory=$MEMORY}
TIMEOUT=${GPUPOOL_UP_TIMEOUT:-60}
NODE_COUNT=${GPUPOOL_NODE_COUNT:-6}
[[ $NODE_COUNT =~ ^[1-9][0-9]?$ ]] && (( NODE_COUNT <= 64 )) ||
  { echo "GPUPOOL_NODE_COUNT=$NODE_COUNT: 1 to 64" >&2; exit 2; }
NODES=()
for (( i = 1; i <= NODE_COUNT; i++ )); do NODES+=("node$i"); done
CLUSTER=gpupool

# Ports (127.0.0.1 only where the daemon lets us choose).
CTLD_PORT=16817
DBD_PORT=16819
SQL_PORT=16306
SLURMD_PORTS=17001-$(( 17000 + NODE_COUNT ))
case ${GPUPOOL_NODE_HOSTNAMES:-shared} in
  shared) NODE_HOSTS="NodeHostname=localhost" ;;
  distinct) NODE_HOSTS="NodeHostname=node[1-$NODE_COUNT]" ;;
  *) echo "GPUPOOL_NODE_HOSTNAMES=$GPUPOOL_NODE_HOSTNAMES: shared or distinct" >&2; exit 2 ;;
esac

ETC=$D/etc
CONF=$ETC/slurm.conf
LOG=$D/log
RUN=$D/run
MUNGE_DIR=$D/munge
MUNGE_SOCK=$MUNGE_DIR/munge.sock
SQL_DIR=$D/mysql
SQL_SOCK=$SQL_DIR/mysqld.sock
SQL_DB=gpupool_acct
SQL_USER=slurm
SQL_PASS=gpupool-local

MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
# Where the installed Slurm loads plugins from: Debian's slurm-wlm/, or
# SchedMD's packages' slurm/ (GPUPOOL_SLURM_PLUGIN_DIR, scripts/package-test.sh).
SLURM_PLUGIN_DIR=${GPUPOOL_SLURM_PLUGIN_DIR:-/usr/lib/$MA/slurm-wlm}

log() { printf '[cluster %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

if [[ -n $SLURM_PREFIX ]]; then
  [[ -x $SLURM_PREFIX/sbin/slurmctld && -d $SLURM_PREFIX/lib/slurm ]] \
    || die "GPUPOOL_SLURM_PREFIX=$SLURM_PREFIX has no sbin/slurmctld or lib/slurm (scripts/build-slurm.sh VERSION)"
  export PATH=$SLURM_PREFIX/sbin:$SLURM_PREFIX/bin:$PATH
  SLURM_PLUGIN_DIR=$SLURM_PREFIX/lib/slurm
  SQL_DB=gpupool_acct_${SLURM_RELEASE//[^0-9A-Za-z]/_}
fi

# Every client and daemon we run must use our config, never /etc/slurm.
export SLURM_CONF=$CONF

# ---------------------------------------------------------------- helpers

# poll CMD until it succeeds or DEADLINE_S passes (no fixed sleeps).
wait_for() {
  local what=$1 deadline=$(( SECONDS + $2 )); shift 2
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || { log "timed out waiting for $what"; return 1; }
    sleep 0.2
  done
}

# A zombie counts as dead: orphans are reparented to PID 1, and the init
# of some machines (CI VMs) reaps them only every few seconds.
pid_alive() {
  local st
  [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null || return 1
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $st && $st != Z ]]
}
# all_dead PID...: true when none of them is alive any more.
all_dead() { local p; for p in "$@"; do ! pid_alive "$p" || return 1; done; }
# The pid on a pid file's first line, as Slurm reads it (fscanf "%lu"):
# Slurm 26.05's slurmctld, re-executed by "scontrol reconfigure", rewrites
# the file in place without truncating it, so a shorter pid (pids wrap at
# pid_max, 32768 on many machines) leaves the old one's last digits on a
# second line.
pidfile_pid() { [[ -s $1 ]] && awk 'NR == 1 && $1 ~ /^[0-9]+$/ { print $1 } { exit }' "$1" 2>/dev/null || true; }

# The pid a process has in its own pid namespace (what it writes in its
# pid file; GPUPOOL_CTLD_PID_NS), from /proc's NSpid (the pid itself
# where the kernel has no NSpid).
ns_pid() {
  local k v ns=
  while read -r k v; do [[ $k == NSpid: ]] && { ns=${v##*[[:space:]]}; break; }; done 2>/dev/null <"/proc/$1/status"
  echo "${ns:-$1}"
}

# The process's cmdline/environ, NUL -> space (empty if it's gone).
proc_cmd() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true; }
proc_env() { tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" || true; }

# PIDs of everything that belongs to this cluster: our daemons (their
# cmdline or environment names $D), slurmstepd and job processes (they
# inherit SLURM_CONF=$CONF plus SLURM_JOB_ID), job scripts in our spool.
# Never this script or its ancestors (a test shell may have SLURM_CONF set).
cluster_pids() {
  local skip=" $$ " p=$$ pid cmd comm envs
  while [[ $p -gt 1 ]]; do
    p=$(awk '/^PPid:/{print $2}' "/proc/$p/status" 2>/dev/null || echo 1)
    skip+="$p "
  done
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [[ $skip == *" $pid "* ]] && continue
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
    cmd=$(proc_cmd "$pid")
    case $comm in
      slurmd|slurmctld|slurmdbd|slurmstepd|munged|mariadbd|mysqld)
        envs=$(proc_env "$pid")
        if [[ $cmd == *"$D/"* || $envs == *"SLURM_CONF=$CONF"* ]]; then
          echo "$pid"; continue
        fi ;;
    esac
    [[ $cmd == *"$D/spool/"* ]] && { echo "$pid"; continue; }
    # The pid namespace's first process (and unshare) of GPUPOOL_CTLD_PID_NS.
    [[ $cmd == *"gpupool-ctld-pidns $CONF "* ]] && { echo "$pid"; continue; }
    envs=$(proc_env "$pid")
    if [[ $envs == *"SLURM_CONF=$CONF"* && $envs == *SLURM_JOB_ID=* ]]; then
      echo "$pid"
    fi
  done
}

# is_ours PID: a process of this cluster: its command line names $D/ (our
# daemons' configs, munged's socket, MariaDB's data dir) or its environment
# has our SLURM_CONF (slurmdbd, which takes no arguments).
is_ours() {
  [[ $(proc_cmd "$1") == *"$D/"* ]] || proc_env "$1" | grep -qxF "SLURM_CONF=$CONF"
}

# stop_group WAIT_S NAME:PIDFILE|NAME=PID...: SIGTERM them all at once
# (each slurmd takes ~2 s to shut down; in sequence that adds up), wait,
# then SIGKILL.
stop_group() {
  local wait_s=$1 item name pf pid pids=() names=(); shift
  for item in "$@"; do
    if [[ $item == *=* ]]; then
      name=${item%%=*} pid=${item#*=} pf=
    else
      name=${item%%:*} pf=${item#*:}
      pid=$(pidfile_pid "$pf")
    fi
    names+=("$name")
    # Only signal it if the pid still is that daemon, and ours: pid files go
    # stale, and another cluster's daemon of that name may have the pid now.
    if pid_alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name"* ]] && is_ours "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      # One left frozen (kill-ctld --when-saved) handles the TERM now.
      kill -CONT "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
    [[ -z $pf ]] || rm -f "$pf"
  done
  (( ${#pids[@]} )) || return 0
  if ! wait_for "${names[*]} to exit" "$wait_s" all_dead "${pids[@]}"; then
    kill -KILL "${pids[@]}" 2>/dev/null || true
  fi
}

# Live slurmctld processes of this cluster (not slurmscriptd, whose comm
# is its own), from /proc: the pid file alone can be stale.
ctld_pids() {
  local f pid comm
  for f in /proc/[0-9]*/comm; do
    pid=${f#/proc/}; pid=${pid%/comm}
    read -r comm 2>/dev/null <"$f" || continue
    [[ $comm == slurmctld ]] && pid_alive "$pid" || continue
    [[ $(proc_cmd "$pid") == *"$CONF"* || $(proc_env "$pid") == *"SLURM_CONF=$CONF"* ]] && echo "$pid"
  done
}

# ctld_pid: print the pid of this cluster's slurmctld; false when none runs.
# The pid file holds its pid in its own pid namespace (GPUPOOL_CTLD_PID_NS),
# this prints the machine's.
# "scontrol reconfigure" on 23.11+ starts a new slurmctld process and
# answers before the old one has exited and the new one has written its
# pid (it waits for the old one's lock on the file): for up to 5 s, wait
# until one slurmctld is left and the file names it; then trust /proc.
ctld_pid() {
  local deadline=$(( SECONDS + 5 )) pids file
  while true; do
    mapfile -t pids < <(ctld_pids)
    (( ${#pids[@]} )) || return 1
    file=$(pidfile_pid "$RUN/slurmctld.pid")
    if (( ${#pids[@]} == 1 )) && [[ $file == "$(ns_pid "${pids[0]}")" ]]; then
      echo "${pids[0]}"; return 0
    fi
    (( SECONDS < deadline )) || break
    sleep 0.1
  done
  if (( ${#pids[@]} == 1 )); then
    log "warning: $RUN/slurmctld.pid names ${file:-no pid}, but slurmctld runs as pid ${pids[0]}"
    echo "${pids[0]}"; return 0
  fi
  log "warning: ${#pids[@]} slurmctld processes run for this cluster: ${pids[*]}"
  return 1
}
ctld_up() { ctld_pid >/dev/null; }

show_logs() {
  local f
  for f in "$@"; do
    [[ -f $f ]] || continue
    echo "----- tail $f" >&2
    tail -n 25 "$f" >&2
  done
}

# ---------------------------------------------------------------- config

# slurm.conf's NodeName lines: one for all nodes, or with GPU types
# (GPUPOOL_GPU_TYPES) one per node, each with its model (Gres=gpu:TYPE:N).
node_lines() {
  local -a types
  local k host
  read -r -a types <<<"${GPUPOOL_GPU_TYPES:-}"
  if (( ${#types[@]} == 0 )); then
    echo "NodeName=node[1-$NODE_COUNT] $NODE_HOSTS NodeAddr=127.0.0.1 Port=$SLURMD_PORTS CPUs=$CPUS$NODE_MEMORY Gres=gpu:$GPUS${SHARDS:+,shard:$SHARDS} State=UNKNOWN"
    return
  fi
  for (( k = 1; k <= NODE_COUNT; k++ )); do
    host=localhost
    [[ $NODE_HOSTS == *localhost ]] || host=node$k
    echo "NodeName=node$k NodeHostname=$host NodeAddr=127.0.0.1 Port=$(( 17000 + k )) CPUs=$CPUS$NODE_MEMORY Gres=gpu:${types[k-1]:+${types[k-1]}:}$GPUS${SHARDS:+,shard:$SHARDS} State=UNKNOWN"
  done
}

first_job_id() {
  # Grows 16/s with time so job ids of different runs never collide in the
  # reused accounting DB (slurmctld -c would restart at 1; sacct -j would
  # then mix runs). Wraps after ~48 days; MaxJobId is 67043328.
  echo $(( 1000 + ( $(date +%s) * 16 ) % 67000000 ))
}

write_configs() {
  local plugindir priority preempt job_submit= strict_order= n i gpu_files
  mkdir -p "$ETC" "$LOG" "$RUN" "$D/state" "$D/spool" "$D/dev"

  if [[ $PLUGINS == installed ]]; then
    local so
    for so in priority_gpupool preempt_gpupool job_submit_gpupool; do
      [[ -f $SLURM_PLUGIN_DIR/$so.so ]] \
        || die "GPUPOOL_PLUGINS=installed but $SLURM_PLUGIN_DIR/$so.so is not installed"
    done
    plugindir=$SLURM_PLUGIN_DIR
    priority=priority/gpupool
    preempt=preempt/gpupool
    job_submit="JobSubmitPlugins=gpupool"
    strict_order=",preempt_strict_order"
  elif [[ $PLUGINS == 1 ]]; then
    local pdir=$BUILD/src/plugins/priority/gpupool/.libs
    local qdir=$BUILD/src/plugins/preempt/gpupool/.libs
    local jdir=$BUILD/src/plugins/job_submit/gpupool/.libs
    [[ -f $pdir/priority_gpupool.so && -f $qdir/preempt_gpupool.so && -f $jdir/job_submit_gpupool.so ]] \
      || die "GPUPOOL_PLUGINS=1 but the plugins are not built in $BUILD/src/plugins (build first, or use GPUPOOL_PLUGINS=0)"
    # The build's first: an installed copy must not shadow the build under test.
    plugindir=$pdir:$qdir:$jdir:$SLURM_PLUGIN_DIR
    priority=priority/gpupool
    preempt=preempt/gpupool
    # Keeps a user's or admin's hold on a job gpupool holds for quota.
    job_submit="JobSubmitPlugins=gpupool"
    strict_order=",preempt_strict_order"
  else
    plugindir=$SLURM_PLUGIN_DIR
    priority=priority/basic
    preempt=preempt/qos
  fi

  # Fake GPUs: char devices 1,3 (twins of /dev/null). gres.conf lines
  # without File= make slurmd report 0 GPUs and the node goes INVALID.
  : >"$ETC/gres.conf"
  echo "AutoDetect=off" >>"$ETC/gres.conf"
  # GPUPOOL_GPU_TYPES="a b ...": the GPU model (gres.conf Type=) of node1,
  # node2, ...; untyped past the list.
  local -a gpu_types
  read -r -a gpu_types <<<"${GPUPOOL_GPU_TYPES:-}"
  local k type_opt
  for (( k = 0; k < NODE_COUNT; k++ )); do
    n=${NODES[k]}
    mkdir -p "$D/dev/$n"
    for (( i = 0; i < GPUS; i++ )); do
      [[ -c $D/dev/$n/nvidia$i ]] || mknod "$D/dev/$n/nvidia$i" c 1 3
    done
    if (( GPUS == 1 )); then gpu_files=$D/dev/$n/nvidia0
    else gpu_files="$D/dev/$n/nvidia[0-$(( GPUS - 1 ))]"; fi
    type_opt=${gpu_types[k]:+ Type=${gpu_types[k]}}
    echo "NodeName=$n Name=gpu$type_opt File=$gpu_files${GPU_FLAGS:+ Flags=$GPU_FLAGS}" >>"$ETC/gres.conf"
    # Shards spread over the node's GPU devices (File=: Slurm then knows
    # which GPU each shard is on, and gives a GPU to shards or to a job
    # asking for whole GPUs, not both).
    [[ -z $SHARDS ]] || echo "NodeName=$n Name=shard Count=$SHARDS File=$gpu_files" >>"$ETC/gres.conf"
  done

  : >"$ETC/plugstack.conf"   # keep /etc/slurm/plugstack.conf (SPANK) out

  cat >"$CONF" <<EOF
# Generated by scripts/cluster.sh; edits are lost on the next "up".
ClusterName=$CLUSTER
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
# socket=: our private munged. cred_expire=5 (the minimum): a requeued
# batch job gets begin_time = now + cred_expire + 1, i.e. it would wait
# 1201 s with the default 1200.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK,cred_expire=5
CredType=cred/munge
PluginDir=$plugindir
PlugStackConfig=$ETC/plugstack.conf
StateSaveLocation=$D/state/ctld
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmctldDebug=info
# %n = the -N node name: one spool/pid/log per slurmd on this host.
SlurmdSpoolDir=$D/spool/%n
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmdLogFile=$LOG/slurmd-%n.log
SlurmdDebug=info
# Nodes claim the configured CPUs whatever this machine has.
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=60
KillWait=5
MinJobAge=10
JobRequeue=1
FirstJobId=$(first_job_id)
SrunPortRange=17100-17199
SelectType=select/cons_tres
SelectTypeParameters=CR_Core${MEMORY:+_Memory
DefMemPerCPU=$(( MEMORY / CPUS ))}
GresTypes=gpu${SHARDS:+,shard}
SchedulerType=sched/backfill
# Short passes so tests don't wait for the default 60 s main loop.
# gpupool: preempt_strict_order keeps its victim plan's order (node group by
# node group) through cons_tres's retry passes.
SchedulerParameters=sched_interval=2,bf_interval=2,sched_min_interval=100000$strict_order${GPUPOOL_SCHED_PARAMS_EXTRA:-}
PriorityType=$priority
# sprio shows a factor's column only when its weight is non-zero; gpupool
# maps tier -> QOS, pool standing -> Fairshare, submit order -> Age.
PriorityWeightAge=1
PriorityWeightFairshare=1
PriorityWeightQOS=1
PreemptType=$preempt
$job_submit
PreemptMode=REQUEUE
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# Messages to slurmdbd take their munge socket from here, not AuthInfo.
AccountingStoragePass=socket=$MUNGE_SOCK
AccountingStorageEnforce=associations,limits,qos
AccountingStorageTRES=${GPUPOOL_ACCT_TRES:-gres/gpu}
JobCompType=jobcomp/none
$([[ $NODE_HOSTS == *localhost ]] || echo "TreeWidth=$(( NODE_COUNT + 1 ))")
$(node_lines)
${GPUPOOL_PARTITIONS:-PartitionName=pool1 Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP
PartitionName=pool2 Nodes=node[1-4] MaxTime=INFINITE State=UP
PartitionName=pool3 Nodes=node[5-6] MaxTime=INFINITE State=UP
PartitionName=plain Nodes=node[1-4] MaxTime=INFINITE State=UP}
EOF
  if [[ -n ${GPUPOOL_SLURM_CONF_EXTRA:-} ]]; then
    printf '# GPUPOOL_SLURM_CONF_EXTRA\n%s\n' "$GPUPOOL_SLURM_CONF_EXTRA" >>"$CONF"
  fi

  # slurmdbd reads slurmdbd.conf from SLURM_CONF's directory; it refuses a
  # file readable by others (it holds the DB password).
  cat >"$ETC/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PluginDir=$SLURM_PLUGIN_DIR
LogFile=$LOG/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$SQL_PORT
StorageUser=$SQL_USER
StoragePass=$SQL_PASS
StorageLoc=$SQL_DB
EOF
  chmod 600 "$ETC/slurmdbd.conf"

  rm -f "$ETC/gpupool.conf"
  if [[ -f $CONF_SRC ]]; then
    cp "$CONF_SRC" "$ETC/gpupool.conf"
  elif [[ $PLUGINS != 0 ]]; then
    log "note: $CONF_SRC not found; no gpupool.conf beside slurm.conf"
  fi
}

# ---------------------------------------------------------------- daemons

start_munge() {
  # Private munged on its own socket and key: no clash with a system one.
  mkdir -p "$MUNGE_DIR"
  chown munge:munge "$MUNGE_DIR"
  chmod 755 "$MUNGE_DIR"   # munged wants x for all on the socket dir
  if [[ ! -s $MUNGE_DIR/munge.key ]]; then
    runuser -u munge -- mungekey --create --keyfile="$MUNGE_DIR/munge.key" >/dev/null
  fi
  runuser -u munge -- munged --socket="$MUNGE_SOCK" --key-file="$MUNGE_DIR/munge.key" \
    --pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" \
    --seed-file="$MUNGE_DIR/munged.seed" \
    || { show_logs "$MUNGE_DIR/munged.log"; die "munged failed to start"; }
  wait_for munged "$TIMEOUT" bash -c "munge -n -S '$MUNGE_SOCK' | unmunge -S '$MUNGE_SOCK'" \
    || { show_logs "$MUNGE_DIR/munged.log"; die "munged does not answer"; }
}

sql() { mariadb --no-defaults -S "$SQL_SOCK" -u root "$@"; }

# A run that submitted faster than first_job_id's clock (16 ids/s: the
# live-cost script's 10,000 jobs) leaves ids ahead of it in the reused
# accounting DB: start above the highest one, or sacct -j mixes runs.
raise_first_job_id() {
  local max first
  max=$(sql -N -e "SELECT COALESCE(MAX(id_job), 0) FROM \`$SQL_DB\`.\`${CLUSTER}_job_table\`" 2>/dev/null) || return 0
  first=$(sed -n 's/^FirstJobId=//p' "$CONF")
  [[ $max =~ ^[0-9]+$ && $first =~ ^[0-9]+$ ]] || return 0
  if (( max >= first && max + 1000 < 67000000 )); then
    sed -i "s/^FirstJobId=.*/FirstJobId=$(( max + 1000 ))/" "$CONF"
  fi
}

start_mariadb() {
  # Private MariaDB on its own socket/port; the data dir is reused between
  # runs (initializing it is the slowest part of "up").
  mkdir -p "$SQL_DIR"
  chown mysql:mysql "$SQL_DIR"
  chmod 750 "$SQL_DIR"
  if [[ ! -f $SQL_DIR/.initialized ]]; then
    log "initializing MariaDB data dir (first run only)"
    rm -rf "$SQL_DIR/data"
    mariadb-install-db --no-defaults --user=mysql --datadir="$SQL_DIR/data" \
      --auth-root-authentication-method=socket --skip-test-db \
      >"$LOG/mariadb-install.log" 2>&1 \
      || { show_logs "$LOG/mariadb-install.log"; die "mariadb-install-db failed"; }
  fi
  # setsid + </dev/null: fully detached from the caller's terminal/pipes.
  setsid mariadbd --no-defaults --user=mysql --datadir="$SQL_DIR/data" \
    --socket="$SQL_SOCK" --port=$SQL_PORT --bind-address=127.0.0.1 \
    --pid-file="$SQL_DIR/mysqld.pid" --log-error="$SQL_DIR/mysqld.err" \
    --skip-log-bin --innodb-lock-wait-timeout=900 --innodb-log-file-size=64M \
    --innodb-buffer-pool-dump-at-shutdown=0 --innodb-buffer-pool-load-at-startup=0 \
    </dev/null >/dev/null 2>&1 &
  wait_for MariaDB "$TIMEOUT" mariadb-admin --no-defaults -S "$SQL_SOCK" -u root ping \
    || { show_logs "$SQL_DIR/mysqld.err"; die "MariaDB did not come up"; }
  if [[ ! -f $SQL_DIR/.initialized ]]; then
    sql <<EOF
CREATE DATABASE IF NOT EXISTS $SQL_DB;
CREATE USER IF NOT EXISTS '$SQL_USER'@'127.0.0.1' IDENTIFIED BY '$SQL_PASS';
CREATE USER IF NOT EXISTS '$SQL_USER'@'localhost' IDENTIFIED BY '$SQL_PASS';
GRANT ALL ON $SQL_DB.* TO '$SQL_USER'@'127.0.0.1';
GRANT ALL ON $SQL_DB.* TO '$SQL_USER'@'localhost';
FLUSH PRIVILEGES;
EOF
    touch "$SQL_DIR/.initialized"
  fi
  # The accounting DB survives between runs: undo QOS preemption settings
  # tests may have made. Done in SQL before slurmdbd loads its cache:
  # "sacctmgr modify qos X set preempt=" (empty) is buggy in 22.05, it sets
  # bit 0 in slurmdbd's cached preempt bitmap, and every later "set
  # preempt=low" fails with "QOS Preemption loop detected" until slurmdbd
  # restarts (slurmdbd.log: "QOS ID 0 not found"). Remove single
  # entries with "set preempt=-low" instead.
  if [[ -n $(sql -N -e "SHOW TABLES FROM $SQL_DB LIKE 'qos_table'") ]]; then
    sql -e "UPDATE $SQL_DB.qos_table SET preempt='', preempt_mode=0, preempt_exempt_time=NULL WHERE deleted=0;" \
      || log "warning: could not reset QOS preemption settings"
  fi
}

start_slurmdbd() {
  slurmdbd || { show_logs "$LOG/slurmdbd.log"; die "slurmdbd failed to start"; }
  wait_for slurmdbd "$TIMEOUT" sacctmgr -n show cluster \
    || { show_logs "$LOG/slurmdbd.log"; die "slurmdbd does not answer"; }
}

# sacctmgr -i add ... exits 1 with "Nothing new added" when it exists.
sam() { sacctmgr -i "$@" >/dev/null 2>&1 || true; }

setup_accounting() {
  local q
  sam add cluster "$CLUSTER"
  sam add qos low
  sam add qos high
  sam add account research cluster="$CLUSTER" description=research organization=gpupool
  sam add user root account=research cluster="$CLUSTER"
  sam modify user root set defaultaccount=research
  sam modify user root set qos=normal,low,high defaultqos=normal
  q=$(sacctmgr -n -P show assoc where user=root account=research cluster="$CLUSTER" format=qos 2>/dev/null)
  [[ $q == *high* && $q == *low* && $q == *normal* ]] \
    || die "accounting setup failed (root@research qos='$q')"
}

# slurmctld ARGS...: with GPUPOOL_CTLD_PRELOAD as LD_PRELOAD if set; in a
# pid namespace of its own with GPUPOOL_CTLD_PID_NS.
run_slurmctld() {
  local run=(slurmctld "$@")
  [[ -z ${GPUPOOL_CTLD_PRELOAD:-} ]] || run=(env "LD_PRELOAD=$GPUPOOL_CTLD_PRELOAD" "${run[@]}")
  if [[ -n ${GPUPOOL_CTLD_PID_NS:-} ]]; then
    run_in_pid_ns "$GPUPOOL_CTLD_PID_NS" "${run[@]}"
  else
    "${run[@]}"
  fi
}

# run_in_pid_ns N slurmctld ARGS...: slurmctld (which daemonizes) in a new
# pid namespace where the next pid is N+1; its exit status.  The
# namespace's first process (pid 1, a bash) stays: when it exits, the
# kernel kills all the namespace.  It reaps the namespace's orphans (a
# 23.11+ reconfigure's new slurmctld outlives its parent) and exits once no
# slurmctld is left in it.  Its command line names $CONF after the marker
# gpupool-ctld-pidns, so that cluster_pids finds it.
run_in_pid_ns() {
  local last=$1 rcfile=$RUN/ctld-pidns.rc; shift
  [[ $last =~ ^[0-9]+$ ]] || die "GPUPOOL_CTLD_PID_NS=$last: a pid number"
  local init='
    rcfile=$2; echo "$3" >/proc/sys/kernel/ns_last_pid || { echo 1 >"$rcfile"; exit 1; }
    shift 3; "$@"; echo $? >"$rcfile"
    while :; do
      alive=
      for f in /proc/[0-9]*/comm; do
        read -r c 2>/dev/null <"$f" && [[ $c == slurmctld ]] && alive=1
      done
      [[ -n $alive ]] || exit 0
      sleep 0.5
    done'
  rm -f "$rcfile"
  setsid unshare --pid --fork --mount-proc bash -c "$init" gpupool-ctld-pidns "$CONF" "$rcfile" "$last" "$@" \
    </dev/null >>"$LOG/ctld-pidns.log" 2>&1 &
  wait_for "slurmctld to start in its pid namespace" "$TIMEOUT" test -s "$rcfile" || return 1
  return "$(cat "$rcfile")"
}

start_slurmctld() {
  rm -rf "$D/state/ctld"
  mkdir -p "$D/state/ctld"
  run_slurmctld -f "$CONF" -c \
    || { show_logs "$LOG/slurmctld.log"; die "slurmctld failed to start"; }
  wait_for slurmctld "$TIMEOUT" scontrol ping \
    || { show_logs "$LOG/slurmctld.log"; die "slurmctld does not answer"; }
}

start_slurmds() {
  local n
  for n in "${NODES[@]}"; do
    rm -rf "${D:?}/spool/$n"
    mkdir -p "$D/spool/$n"
    slurmd -f "$CONF" -N "$n" \
      || { show_logs "$LOG/slurmd-$n.log"; die "slurmd $n failed to start"; }
  done
}

all_idle() {
  local idle
  idle=$(scontrol -o show node 2>/dev/null | grep -c ' State=IDLE ' || true)
  [[ $idle -eq ${#NODES[@]} ]]
}

# ---------------------------------------------------------------- commands

cmd_up() {
  local t0=$SECONDS n
  [[ $(id -u) -eq 0 ]] || die "must run as root"
  command -v slurmctld >/dev/null || die "Slurm not installed: run scripts/install-deps.sh"
  # Always start from a clean state: stop whatever a previous run left.
  if [[ -n $(cluster_pids) ]]; then
    log "previous cluster processes found: stopping them first"
    cmd_down
  fi
  log "writing configs under $D (GPUPOOL_PLUGINS=$PLUGINS)"
  write_configs
  log "starting munged";      start_munge
  log "starting MariaDB";     start_mariadb
  raise_first_job_id
  log "starting slurmdbd";    start_slurmdbd
  log "accounting: cluster, QOS, account, user"; setup_accounting
  log "starting slurmctld";   start_slurmctld
  log "starting slurmd x${#NODES[@]}"; start_slurmds
  if ! wait_for "nodes idle" "$TIMEOUT" all_idle; then
    scontrol show node >&2 || true
    show_logs "$LOG/slurmctld.log"
    for n in "${NODES[@]}"; do show_logs "$LOG/slurmd-$n.log"; done
    die "nodes did not become idle within ${TIMEOUT}s"
  fi
  log "cluster up in $(( SECONDS - t0 ))s; use: eval \"\$($0 env)\""
}

cmd_down() {
  local t0=$SECONDS n ids left
  # Jobs outlive slurmd (slurmstepd ignores SIGTERM): cancel them while
  # slurmctld is still there and wait for the queue to drain.
  if ctld_up && scontrol ping >/dev/null 2>&1; then
    # %F: the array job id (scancel takes it for all tasks; a throttled
    # array's %i, 123_[2-4%2], it refuses); the job id for other jobs.
    ids=$(squeue -h -o %F 2>/dev/null | sort -u || true)
    if [[ -n $ids ]]; then
      log "cancelling $(wc -w <<<"$ids") job(s)"
      local deadline=$(( SECONDS + 30 ))
      while [[ -n $ids ]] && (( SECONDS < deadline )); do
        scancel $ids 2>/dev/null || true
        sleep 0.3
        ids=$(squeue -h -o %F 2>/dev/null | sort -u || true)
      done
      [[ -z $ids ]] || log "warning: jobs still queued after 30s: $ids"
    fi
  fi
  # All Slurm daemons at once: each takes 1-3 s to exit. (slurmctld may
  # spool its last messages for slurmdbd into its state dir: that is wiped
  # on the next "up" anyway.)
  log "stopping slurmd x${#NODES[@]}, slurmctld, slurmdbd"
  local items=()
  for n in "${NODES[@]}"; do items+=("slurmd:$RUN/slurmd-$n.pid"); done
  stop_group 20 "${items[@]}" "slurmctld=$(ctld_pid || true)" "slurmdbd:$RUN/slurmdbd.pid"
  log "stopping MariaDB + munged"
  stop_group 60 "mariadbd:$SQL_DIR/mysqld.pid" "munged:$MUNGE_DIR/munged.pid"
  # Anything else of ours (slurmstepd, job scripts, daemons whose pid file
  # was lost when "up" failed half-way): SIGKILL.
  left=$(cluster_pids)
  if [[ -n $left ]]; then
    log "killing leftovers: $(for p in $left; do printf '%s(%s) ' "$p" "$(cat /proc/$p/comm 2>/dev/null)"; done)"
    kill -KILL $left 2>/dev/null || true
    wait_for "leftovers to die" 10 all_dead $left || true
  fi
  left=$(cluster_pids)
  [[ -z $left ]] || die "processes still alive: $left"
  rm -f "$MUNGE_SOCK" "$SQL_SOCK"
  log "cluster down in $(( SECONDS - t0 ))s"
}

cmd_status() {
  local n p
  printf '%-10s %s\n' munged "$(pid_alive "$(pidfile_pid "$MUNGE_DIR/munged.pid")" && echo up || echo down)"
  printf '%-10s %s\n' mariadb "$(pid_alive "$(pidfile_pid "$SQL_DIR/mysqld.pid")" && echo up || echo down)"
  printf '%-10s %s\n' slurmdbd "$(pid_alive "$(pidfile_pid "$RUN/slurmdbd.pid")" && echo up || echo down)"
  printf '%-10s %s\n' slurmctld "$(ctld_up && echo up || echo down)"
  for n in "${NODES[@]}"; do
    printf '%-10s %s\n' "slurmd $n" "$(pid_alive "$(pidfile_pid "$RUN/slurmd-$n.pid")" && echo up || echo down)"
  done
  if ctld_up; then
    echo; sinfo -o '%10P %.5a %.6D %10T %N %G' || true
    echo; squeue -o '%.12i %.9P %.10j %.6q %.2t %.10M %R' || true
  fi
}

# Restart slurmctld alone, keeping its state (no -c): what an upgrade or a
# crash does; jobs, slurmd and the database stay.
cmd_restart_ctld() {
  local pid
  pid=$(ctld_pid) || die "slurmctld is not running"
  log "restarting slurmctld"
  stop_group 20 "slurmctld=$pid"
  cmd_start_ctld
}

# Start slurmctld from its saved state (no -c), e.g. after kill-ctld.
cmd_start_ctld() {
  ctld_up && die "slurmctld is already running"
  run_slurmctld -f "$CONF" \
    || { show_logs "$LOG/slurmctld.log"; die "slurmctld failed to start"; }
  wait_for slurmctld "$TIMEOUT" scontrol ping \
    || { show_logs "$LOG/slurmctld.log"; die "slurmctld does not answer"; }
}

# Slurm writes its job state at most every 5 s (SAVE_MAX_WAIT) after an RPC
# or a main-scheduler start, and not at all after a backfill start (until
# the next such event, or the 300 s checkpoint). A crash loses what
# happened since: a job started in that time is started a second time
# after the restart (slurmd refuses, drains the node).
#
# ctld_state_current: true when slurmctld's job state file holds its last
# job event (the last log line naming a JobId, but for reading its state
# at start-up): written 0.3 s after it, or that event is an "scontrol
# update job" whose save it triggered (the save follows the update, so the
# file holds it and all before; the file's clock is coarse: 10 ms slack).
# Sets STATE_LEAD: seconds from that event to the file's last write.
ctld_state_current() {
  local line last saved
  line=$(tail -n 3000 "$LOG/slurmctld.log" | grep -a 'JobId=' | grep -av 'Recovered JobId=' | tail -n1) || true
  last=$(sed -n 's/^\[\([0-9T:.-]*\)\].*/\1/p' <<<"$line")
  saved=$(stat -c %.3Y "$D/state/ctld/job_state" 2>/dev/null) || { STATE_LEAD=-1; return 1; }
  [[ -n $last ]] || { STATE_LEAD=999; return 0; }
  STATE_LEAD=$(awk -v s="$saved" -v l="$(date -d "$last" +%s.%3N)" 'BEGIN { printf "%.3f\n", s - l }')
  awk -v l="$STATE_LEAD" 'BEGIN { exit !(l > 0.3) }' && return 0
  [[ $line == *"_slurm_rpc_update_job: complete JobId="* ]] && awk -v l="$STATE_LEAD" 'BEGIN { exit !(l >= -0.01) }'
}

# A crash: SIGKILL, so neither Slurm nor gpupool saves its state; what
# is on disk is what the last periodic saves wrote. With --when-saved it
# first waits (up to 30 s) for a moment when Slurm's own job state on disk
# is current (ctld_state_current), so that only what gpupool keeps is at
# stake; an "scontrol update job" just before makes Slurm save at once.
cmd_kill_ctld() {
  local pid when_saved=${1:-} deadline=$(( SECONDS + 60 )) poke=$(( SECONDS + 10 )) current= id
  pid=$(ctld_pid) || die "slurmctld is not running"
  if [[ $when_saved == --when-saved ]]; then
    # A frozen slurmctld is never left behind: whatever ends this script
    # (die, a signal) before the kill lets it run on.
    trap "kill -CONT $pid 2>/dev/null || true" EXIT
    trap 'exit 130' INT TERM HUP
    while true; do
      # Current: freeze it and look again, so that no job event can come
      # between the last look and the kill.  Seen on Slurm 26.05: a job
      # end that came in those few ms was lost with the kill, and the job
      # stayed RUNNING over a minute after the restart (no node
      # registration purged it in that time).  An RPC that arrives while
      # it is frozen gets no answer before the kill, so its sender
      # (slurmstepd's job-complete RPC) retries with the next slurmctld.
      if ctld_state_current; then
        kill -STOP "$pid"
        ctld_state_current && break
        kill -CONT "$pid"
      fi
      (( SECONDS < deadline )) || die "slurmctld's job state was not current on disk within 60 s (lead $STATE_LEAD s)"
      # Jobs that keep starting and ending may never leave a quiet moment
      # after a save (seen on a loaded machine): an update RPC makes Slurm
      # save at once, and it is the last job event if none follows.
      if (( SECONDS >= poke )); then
        id=$(squeue -h -o %i 2>/dev/null | head -n1) || true
        [[ -z $id ]] || scontrol update jobid="$id" comment="kill-ctld" >/dev/null 2>&1 || true
        poke=$(( SECONDS + 10 ))
      fi
      sleep 0.05
    done
  fi
  kill -KILL "$pid"
  trap - EXIT INT TERM HUP
  wait_for "slurmctld to die" 10 all_dead "$pid" || die "slurmctld $pid survived SIGKILL"
  # Checked again now that neither the log nor the state file changes.
  ctld_state_current && current=yes
  log "killed slurmctld (SIGKILL, pid $pid); its job state on disk is ${current:+current, }$STATE_LEAD s from its last job event"
  if [[ $when_saved == --when-saved && -z $current ]]; then
    log "warning: a job event came between the check and the kill: Slurm may have lost it"
  fi
}

cmd_env() {
  echo "export GPUPOOL_CLUSTER_DIR=$D"
  echo "export SLURM_CONF=$CONF"
  [[ -z $SLURM_PREFIX ]] || echo "export PATH=$SLURM_PREFIX/sbin:$SLURM_PREFIX/bin:\$PATH"
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  restart-ctld) cmd_restart_ctld ;;
  kill-ctld) cmd_kill_ctld "${2:-}" ;;
  start-ctld) cmd_start_ctld ;;
  ctld-pid) ctld_pid ;;
  *) echo "usage: $0 up|down|status|env|restart-ctld|kill-ctld [--when-saved]|start-ctld|ctld-pid" >&2; exit 2 ;;
esac
