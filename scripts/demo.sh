#!/usr/bin/env bash
# The README's main command, as root on Debian 12: install everything,
# build, start the local cluster with priority/gpupool and preempt/gpupool
# loaded, and show borrowing and reclaim (OSMO's example) and a quota hold,
# then departments and projects on Slurm's accounts (demo-departments.sh).
# The cluster stays up; stop it with scripts/cluster.sh down.
#   scripts/demo.sh [--installed]
# --installed: no build; the plugins and example gpupool.conf of the
# installed slurm-gpupool package (scripts/package-test.sh).
# GPUPOOL_SLURM_PREFIX=/opt/slurm/26.05 (or 23.11, 24.11, 25.11): the same
# on that Slurm release, built first if needed (scripts/build-slurm.sh), with
# gpupool built against its source in /var/tmp/gpupool-build-RELEASE.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[[ $(id -u) -eq 0 ]] || { echo "demo: run as root (installs packages, starts a local cluster)" >&2; exit 2; }

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# GPUPOOL_SKIP_DEPS=1: Slurm is installed otherwise (SchedMD's packages,
# scripts/package-test.sh RELEASE), Debian's must not be.
[[ -n ${GPUPOOL_SKIP_DEPS:-} ]] || bash scripts/install-deps.sh
if [[ ${1:-} == --installed ]]; then
  GPUPOOL_PLUGINS=installed \
    GPUPOOL_CONF_SRC=${GPUPOOL_CONF_SRC:-/usr/share/doc/slurm-gpupool/examples/gpupool.conf.example} \
    bash scripts/cluster.sh up
elif [[ -n ${GPUPOOL_SLURM_PREFIX:-} ]]; then
  prefix=${GPUPOOL_SLURM_PREFIX%/}
  out=$(bash scripts/build-for-slurm.sh "${prefix##*/}" "/var/tmp/gpupool-build-${prefix##*/}" \
          --prefix "$prefix")
  eval "$(tail -n 2 <<<"$out")"
  export GPUPOOL_SLURM_PREFIX GPUPOOL_BUILD
  GPUPOOL_PLUGINS=1 bash scripts/cluster.sh up
else
  bash scripts/fetch-slurm-source.sh >/dev/null
  bash scripts/build.sh
  GPUPOOL_PLUGINS=1 bash scripts/cluster.sh up
fi
eval "$(bash scripts/cluster.sh env)"
# shellcheck source=../tests/integration/lib.sh
. tests/integration/lib.sh
cancel_all 30
LOG=$GPUPOOL_CLUSTER_DIR/log/slurmctld.log
mark=$(wc -l <"$LOG")
show() { squeue -o '%.10i %.7P %.5j %.7q %.9T %.9Q %R' --sort=P,-p; }

say "pool1 and pool2 share node[1-4] (4 GPUs), quota 2 each (gpupool.conf)"
grep -E '^(Tier|Pool|DefaultTier)' "$(dirname "$SLURM_CONF")/gpupool.conf"

say "pool1 runs WF1 NORMAL and WF2 LOW; pool2 runs WF4 NORMAL"
wf1=$(submit WF1 pool1 normal); wait_state "$wf1" RUNNING 30
wf2=$(submit WF2 pool1 low);    wait_state "$wf2" RUNNING 30
wf4=$(submit WF4 pool2 normal); wait_state "$wf4" RUNNING 30
show

say "Borrowing (R3): WF3 LOW to pool1 uses pool2's idle GPU: pool1 now uses 3 GPUs, quota 2"
wf3=$(submit WF3 pool1 low);    wait_state "$wf3" RUNNING 30
show

say "Reclaim (R5): WF5 NORMAL to pool2 takes the borrowed GPU back from WF3, the newest borrower; WF2 stays"
wf5=$(submit WF5 pool2 normal); wait_state "$wf5" RUNNING 30
wait_state "$wf3" PENDING 30
show

say "In-pool preemption (R4): WF6 NORMAL to pool1 is within pool1's quota (NORMAL uses 1 of 2), no GPU is free: it evicts pool1's own LOW job WF2"
wf6=$(submit WF6 pool1 normal); wait_state "$wf6" RUNNING 30
show

say "Quota (R2): WF7 NORMAL to pool1 waits: pool1's NORMAL/HIGH jobs hold its whole quota"
wf7=$(submit WF7 pool1 normal)
wait_until 10 eval '[[ $(job_reason '"$wf7"') == GpuPoolQuota* ]]' || true
show

say "WF1 ends: WF7 gets pool1's quota at once"
scancel "$wf1"; wait_state "$wf7" RUNNING 30
show

say "Every preemption is logged with its rule"
tail -n +"$(( mark + 1 ))" "$LOG" | grep 'gpupool: preempt' || true

say "The requeued LOW jobs wait cred_expire + 1 s, then queue by their original submit time: WF2 before WF3"
wait_until 20 eval '[[ $(job_reason '"$wf3"') != BeginTime ]]' || true
show
echo
sprio -o '%.10i %.9r %.9Y %.6A %.10F %.6Q' || true
echo "(sprio: QOS = jobs of lower tiers, FAIRSHARE = of less starved pools, AGE = submitted later)"

# shellcheck source=demo-departments.sh
. scripts/demo-departments.sh

cat <<EOT

The cluster is still up. Try it:
    eval "\$(scripts/cluster.sh env)"
    sbatch -p pool1 --qos=low --gres=gpu:1 --wrap 'sleep 600'
    squeue; sprio; grep gpupool $LOG
Stop it:
    scripts/cluster.sh down
EOT
