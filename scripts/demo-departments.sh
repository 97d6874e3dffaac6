# shellcheck shell=bash
# The second part of scripts/demo.sh (sourced by it, on its running
# cluster): departments and projects on Slurm's accounts.
# sacctmgr holds the tree, etc/gpupool-departments.conf the quotas.  Shows
# gpupool status as a tree, a job held by its department's quota, and a
# project with no quota reclaiming its fairshare.  Leaves the accounts in
# place (scripts/cluster.sh down removes the whole cluster).

CLI=${GPUPOOL_BUILD:-$REPO}/src/cli/gpupool
[[ -x $CLI ]] || CLI=$(command -v gpupool || echo gpupool)
cluster_name=$(scontrol show config | sed -n 's/^ClusterName *= *//p')
conf=$(dirname "$SLURM_CONF")/gpupool.conf

say "Departments and projects: Slurm's account tree (sacctmgr), quotas in gpupool.conf"
cancel_all 30
sacctmgr -i add account physics,biology cluster="$cluster_name" >/dev/null 2>&1 || true
sacctmgr -i add account qcd,astro parent=physics cluster="$cluster_name" >/dev/null 2>&1 || true
sacctmgr -i add account genomics,imaging,protein parent=biology cluster="$cluster_name" >/dev/null 2>&1 || true
sacctmgr -i add user root account=qcd,astro,genomics,imaging,protein cluster="$cluster_name" >/dev/null 2>&1 || true
sacctmgr -i modify user root set qos=normal,low,high >/dev/null 2>&1 || true
sacctmgr -n -P show assoc tree format=account,parentname where user= cluster="$cluster_name" 2>/dev/null |
  awk -F'|' '$1 !~ /^ *root$/ {print "    " $1 "   (parent " $2 ")"}'
for a in qcd astro genomics imaging; do
  wait_until 20 sbatch --test-only -A "$a" -p pool1 --qos=low --gres=gpu:1 -o /dev/null --wrap true || true
done

cp etc/gpupool-departments.conf "$conf"
mark=$(wc -l <"$LOG")
scontrol reconfigure
wait_until 20 eval 'tail -n +'"$(( mark + 1 ))"' "$LOG" | grep -q "gpupool: configuration reloaded"' ||
  { echo "demo: gpupool.conf with departments not loaded:" >&2; tail -n +"$(( mark + 1 ))" "$LOG" | grep gpupool >&2; }
grep -E '^(QuotaTRES|ReclaimTo|Pool|Account)' "$conf"

show_acct() { squeue -o '%.8i %.7P %.9a %.5j %.7q %.9T %R' --sort=P,-p; }

say "Department quota (R2 with levels): qcd and astro each run a NORMAL job: physics holds its 2 GPUs"
q1=$(submit Q1 pool1 normal -A qcd);   wait_state "$q1" RUNNING 30
a1=$(submit A1 pool1 normal -A astro); wait_state "$a1" RUNNING 30
q2=$(submit Q2 pool1 normal -A qcd)
wait_until 15 eval '[[ $(job_reason '"$q2"') == GpuPoolQuota* ]]' || true
show_acct
echo "Q2 waits for physics's quota, though qcd (quota 2) uses 1 and pool1 has 2 GPUs free:"
"$CLI" why "$q2" || true

say "Reclaim to fairshare (R5, ReclaimTo=fairshare): genomics runs 2 LOW jobs on biology's 2 GPUs"
g1=$(submit G1 pool1 low -A genomics); wait_state "$g1" RUNNING 30
sleep 1
g2=$(submit G2 pool1 low -A genomics); wait_state "$g2" RUNNING 30
show_acct
say "imaging has no quota, but a fairshare of biology's GPUs (weight 2 to genomics's 1): its LOW job takes one back from genomics"
i1=$(submit I1 pool1 low -A imaging); wait_state "$i1" RUNNING 40
show_acct
"$CLI" why "$g2" || true

say "gpupool status: each node pool, then its departments and projects"
"$CLI" status || true

say "Nothing moves any more: every queue is at its fairshare (10 s, 5 passes)"
mark=$(wc -l <"$LOG")
sleep 10
tail -n +"$(( mark + 1 ))" "$LOG" | grep -c 'gpupool: preempt victim' | sed 's/^/preemptions since: /' || true
show_acct
