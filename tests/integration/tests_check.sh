# shellcheck shell=bash
# Live test of `gpupool check`: every example of etc/ passes on
# this cluster, once the QOS and accounts the examples name exist (added
# here, and only those added removed after); each of the eight broken
# files of tests/unit/data/check/ gets its file, line and fix, exit status
# 1.  Sourced by run.sh after lib.sh and tests.sh (gp, ilog).

# QOS and accounts the examples name beyond the cluster's own.
CHECK_QOS=(scavenger inference build interactive train)
CHECK_DEPTS=(physics biology)
CHECK_PROJECTS=(qcd:physics astro:physics genomics:biology imaging:biology protein:biology)
CHECK_ADDED_QOS=()
CHECK_ADDED_ACCOUNTS=()

# check_qos_exists NAME: slurmdbd has the QOS.
check_qos_exists() { sacctmgr -n -P show qos where name="$1" format=name 2>/dev/null | grep -qx "$1"; }
# check_account_exists NAME: the account is in this cluster's tree.
check_account_exists() {
  sacctmgr -n -P show assoc where cluster="$CHECK_CLUSTER" account="$1" format=account,user 2>/dev/null | grep -qx "$1|"
}

check_setup() {
  local q a p
  CHECK_CLUSTER=$(scontrol show config | sed -n 's/^ClusterName *= *//p')
  for q in "${CHECK_QOS[@]}"; do
    check_qos_exists "$q" && continue
    sacctmgr -i add qos "$q" >/dev/null || { ilog "cannot add QOS $q"; return 1; }
    CHECK_ADDED_QOS+=("$q")
  done
  for a in "${CHECK_DEPTS[@]}" "${CHECK_PROJECTS[@]}"; do
    p=${a#*:}; a=${a%%:*}
    check_account_exists "$a" && continue
    if [[ $p == "$a" ]]; then
      sacctmgr -i add account "$a" cluster="$CHECK_CLUSTER" >/dev/null
    else
      sacctmgr -i add account "$a" parent="$p" cluster="$CHECK_CLUSTER" >/dev/null
    fi || { ilog "cannot add account $a"; return 1; }
    CHECK_ADDED_ACCOUNTS=("$a" "${CHECK_ADDED_ACCOUNTS[@]}")   # children first when removed
  done
}

check_teardown() {
  local a q rc=0
  for a in "${CHECK_ADDED_ACCOUNTS[@]}"; do
    # The account itself, not only its association in this cluster.
    wait_until 20 sacctmgr -i delete account name="$a" || { ilog "account $a not removed"; rc=1; }
  done
  for q in "${CHECK_ADDED_QOS[@]}"; do
    wait_until 20 sacctmgr -i delete qos "$q" || { ilog "QOS $q not removed"; rc=1; }
  done
  return $rc
}

# check_one FILE STATUS LINE...: `gpupool check --conf=FILE` exits with
# STATUS and prints each LINE (a grep -E pattern) among its lines.
check_one() {
  local file=$1 want=$2 out st pat; shift 2
  out=$(gp check --conf="$file" 2>&1); st=$?
  for pat in "$@"; do
    grep -qE -- "$pat" <<<"$out" || { ilog "FAIL $file: no line '$pat' in:"; ilog "$out"; return 1; }
  done
  [[ $st == "$want" ]] || { ilog "FAIL $file: exit status $st, not $want:"; ilog "$out"; return 1; }
  ilog "ok $(basename "$file"): exit $st, $(tail -n1 <<<"$out")"
}

check_scenario() {
  local f d=$GPUPOOL_REPO/tests/unit/data/check rc=0 fix='; fix: [a-z]'
  for f in "$GPUPOOL_REPO"/etc/gpupool.conf.example "$GPUPOOL_REPO"/etc/gpupool-*.conf; do
    check_one "$f" 0 "^gpupool check: 0 errors, 0 warnings \($f\)\$" || rc=1
  done
  check_one "$d/unknown-partition.conf" 1 "^$d/unknown-partition.conf:8: error: Pool=pool4: slurmctld has no partition pool4.*$fix" || rc=1
  check_one "$d/unknown-qos.conf" 1 "^$d/unknown-qos.conf:5: error: Tier=low: QOS lowest does not exist in slurmdbd$fix" || rc=1
  check_one "$d/unknown-account.conf" 1 "^$d/unknown-account.conf:9: error: Account=chemistry: Slurm has no account chemistry.*$fix" || rc=1
  check_one "$d/duplicate-pool.conf" 1 "^$d/duplicate-pool.conf:9: error: duplicate Pool=pool1 \(first defined on line 7\)$fix" || rc=1
  check_one "$d/child-quota-over-parent.conf" 1 "^$d/child-quota-over-parent.conf:11: error: Account=qcd Pool=pool1 Quota=gres/gpu=2 is more than the quota of its parent account physics.*$fix" || rc=1
  check_one "$d/preemptmode-suspend.conf" 1 "^$d/preemptmode-suspend.conf:5: error: PreemptMode=suspend in Tier=low: .*$fix" || rc=1
  check_one "$d/name-too-long.conf" 1 "^$d/name-too-long.conf:8: error: Pool name 'pool_x+'... \(300 bytes\) is longer than 255 bytes.*$fix" || rc=1
  check_one "$d/missing-slurm-setting.conf" 1 "^$d/missing-slurm-setting.conf:5: error: QuotaTRES=gres/gpu:a100 counts a TRES that slurm.conf does not account \($SLURM_CONF:[0-9]+: AccountingStorageTRES=.*$fix" || rc=1
  return $rc
}

# Every example of etc/ and the broken ones of tests/unit/data/check/
# against the live cluster.
test_check_config() {
  local rc=0
  check_setup || rc=1
  (( rc == 0 )) && { check_scenario || rc=1; }
  check_teardown || rc=1
  return $rc
}
