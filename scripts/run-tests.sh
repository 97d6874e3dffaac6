#!/usr/bin/env bash
# The README's test command (also what .ci/run calls), as root on Debian 12:
# installs what is missing, builds, runs the unit tests (GoogleTest, `make
# check`) and the integration tests on a live local cluster, on Debian's
# Slurm 22.05 and then on Slurm 26.05 (built from the vendored tarball by
# scripts/build-slurm.sh), and ends with one line "N passed, N failed".
# The 26.05 leg needs Slurm 26.05's source tarball: from GPUPOOL_SLURM_VENDOR
# (default ../shared/vendor/slurm) or a download, checked against
# scripts/slurm-releases.sha256; without either it prints a SKIP line
# (repeated before the last line) and counts neither passed nor failed,
# unless CI=true (.ci/run), where it fails.
#   scripts/run-tests.sh [--unit-only]
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[[ $(id -u) -eq 0 ]] || { echo "run-tests: run as root (installs packages, starts a local cluster)" >&2; exit 2; }

# Each step header tells how long the step before it took and the time so
# far, so a CI log shows where the time goes (CI must stay under 3000 s).
run_start=$(date +%s) step_start=
step_times() {
  local now; now=$(date +%s)
  [[ -n $step_start ]] && printf '(previous step %d s, total %d s)\n' $((now - step_start)) $((now - run_start))
  step_start=$now
}
step() { step_times; printf '\n== %s\n' "$*"; }
passed=0 failed=0
skipped=()   # "SKIP ..." lines of legs that could not run here, shown again last

step "install dependencies"
bash scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

# Builds that only tests later on need run in the background, at idle
# priority (SCHED_IDLE, nice 19, idle I/O class): they get only the CPU
# time the steps in the foreground leave unused and give it back at once
# when a step wants it, so no test runs slower or later for them.  Most
# steps leave a core idle (serial configures, single-threaded test runs)
# and the live 22.05 suite leaves most of both (it mostly polls), so these
# builds cost little wall time:
#   slurm: Slurm 26.05 (scripts/build-slurm.sh, about 900 CPU s) from now,
#          then gpupool against it, into the very directory
#          scripts/test-matrix.sh uses, once the repository is built;
#   asan:  the ASan + UBSan unit tests (scripts/build-asan.sh) and
#   fuzz:  the fuzz targets (scripts/fuzz.sh build), from after the unit
#          tests.
# Each step that needs one joins it first, then does what it did before:
# the same scripts again, which find the work done (stamps, make) or, if a
# background build failed, build in the foreground and report as before.
MATRIX_DIR=${GPUPOOL_MATRIX_DIR:-/var/tmp/gpupool-matrix}
export GPUPOOL_MATRIX_DIR=$MATRIX_DIR
BG=$MATRIX_DIR/background
mkdir -p "$BG"
rm -f "$BG"/*.log "$BG"/*.done
idle=(nice -n 19)
chrt --idle 0 true 2>/dev/null && idle=(chrt --idle 0 "${idle[@]}")
ionice -c 3 true 2>/dev/null && idle+=(ionice -c 3)
declare -A bg_pid=()
# bg_start NAME SCRIPT: run the bash SCRIPT in the background, at idle
# priority, in its own session (an early exit stops all of it), its output
# in $BG/NAME.log.
bg_start() {
  setsid -w "${idle[@]}" bash -c "$2" "bg-$1" >"$BG/$1.log" 2>&1 </dev/null &
  bg_pid[$1]=$!
  echo "background build '$1' started at idle priority (${idle[*]}; log $BG/$1.log)"
}
# bg_boost SID: the processes of that session back to normal priority
# (children inherit it from then on): once a step waits for a build, no test
# runs that it could slow, and on a shared machine an idle-priority build
# would get next to no CPU.
bg_boost() {
  local f sid rest
  for f in /proc/[0-9]*/stat; do
    read -r rest 2>/dev/null <"$f" || continue
    rest=${rest##*) }            # state ppid pgrp session ...
    read -r _ _ _ sid _ <<<"$rest"
    [[ $sid == "$1" ]] || continue
    f=${f%/stat}; f=${f#/proc/}
    chrt --other -p 0 "$f" >/dev/null 2>&1; renice -n 0 -p "$f" >/dev/null 2>&1
    ionice -c 2 -n 4 -p "$f" >/dev/null 2>&1
  done
  return 0
}
# bg_join NAME: wait for it (at normal priority from now on: bg_boost),
# then print its log and how long the wait was.
bg_join() {
  local t0=$SECONDS pid=${bg_pid[$1]:-}
  [[ -n $pid ]] || return 0
  bg_boost "$pid"
  wait "$pid"
  unset "bg_pid[$1]"
  sed "s/^/  /" "$BG/$1.log"
  echo "joined background build '$1' after $(( SECONDS - t0 )) s of waiting"
}
trap 'for p in "${bg_pid[@]}"; do kill -TERM -- -"$p" 2>/dev/null; done' EXIT
if [[ ${1:-} != --unit-only ]]; then
  # shellcheck disable=SC2016
  bg_start slurm '
    ts() { echo "$(( $(date +%s) - '"$run_start"' ))"; }
    bash scripts/build-slurm.sh 26.05 >/dev/null; rc=$?
    echo "build-slurm.sh 26.05: exit $rc at $(ts) s"
    # gpupool is copied from the repository once it is built and tested in
    # place (scripts/copy-source.sh must not copy files being written).
    while [[ ! -e '"$BG"'/repo.done ]]; do sleep 1; done
    bash scripts/build-for-slurm.sh 26.05 '"$MATRIX_DIR"'/build-26.05 >/dev/null 2>'"$BG"'/build-for-slurm.log
    rc=$?
    (( rc == 0 )) || tail -n 20 '"$BG"'/build-for-slurm.log
    echo "build-for-slurm.sh 26.05: exit $rc at $(ts) s (log '"$BG"'/build-for-slurm.log)"
    exit $rc'
fi

step "fetch and configure the Slurm source"
bash scripts/fetch-slurm-source.sh || { echo "0 passed, 1 failed"; exit 1; }
step "build"
bash scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }

# Counts the GoogleTest results in LOG: prints "LABEL: N passed, N failed".
count_gtest() {
  local log=$1 label=$2 ok bad
  if [[ -f $log ]]; then
    ok=$(grep -c '^\[       OK \]' "$log" || true)
    bad=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$log" || true)
    grep -E '^\[  FAILED  \]' "$log" | sort -u || true
  else
    ok=0 bad=1
    echo "no unit test log: the test binary did not build or run"
  fi
  # A crash (or a sanitizer report) leaves tests unreported: count the run as failed then.
  if ! grep -q '^\[  PASSED  \]\|^\[  FAILED  \]' "$log" 2>/dev/null; then
    bad=$(( bad + 1 ))
    grep -m5 -E 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error' "$log" 2>/dev/null || true
  fi
  echo "$label: $ok passed, $bad failed"
  passed=$(( passed + ok )); failed=$(( failed + bad ))
}

step "unit tests (make check)"
make -j"$(nproc)" check >/dev/null 2>&1
count_gtest tests/unit/gpupool_tests.log unit
# make check's other tests (plugin_load.sh: each plugin loads outside
# slurmctld, as sshare and sprio load it), by their .trs results.
for trs in tests/unit/*.trs; do
  [[ -f $trs && $trs != tests/unit/gpupool_tests.trs ]] || continue
  result=$(sed -n 's/^:test-result: //p' "$trs" | head -n1)
  case $result in
    PASS) echo "${trs%.trs}: passed"; passed=$(( passed + 1 )) ;;
    SKIP) echo "${trs%.trs}: skipped: $(tail -n1 "${trs%.trs}.log")" ;;
    *) echo "${trs%.trs}: FAILED"; tail -n 5 "${trs%.trs}.log"; failed=$(( failed + 1 )) ;;
  esac
done
# The repository is built and tested in place: from here on it is only read.
touch "$BG/repo.done"
bg_start asan 'bash scripts/build-asan.sh; echo "build-asan.sh: exit $?"'
bg_start fuzz 'bash scripts/fuzz.sh build'

step "man pages render (man -l; a groff warning fails)"
for page in doc/*.[1-8]; do
  warn=$(MANWIDTH=80 man --warnings=all -l "$page" 2>&1 >/dev/null)
  lines=$(MANWIDTH=80 man -l "$page" 2>/dev/null | wc -l)
  if [[ -z $warn && $lines -gt 20 ]]; then
    echo "man -l $page: $lines lines"; passed=$(( passed + 1 ))
  else
    echo "man -l $page: FAILED ($lines lines) $warn"; failed=$(( failed + 1 ))
  fi
done

# Runs a live suite (the command's output shown as it goes) and adds the
# counts of its last line matching "PREFIX N passed, N failed"; no such
# line (the suite did not finish) counts as one failure.
run_suite() {
  local prefix=$1 out line
  shift
  out=$(mktemp)
  "$@" 2>&1 | tee "$out"
  mapfile -t -O "${#skipped[@]}" skipped < <(grep -aE "^$prefix SKIP " "$out")
  line=$(grep -E "^$prefix [0-9]+ passed, [0-9]+ failed" "$out" | tail -1)
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    passed=$(( passed + BASH_REMATCH[1] )); failed=$(( failed + BASH_REMATCH[2] ))
  else
    failed=$(( failed + 1 ))
  fi
  rm -f "$out"
}

if [[ ${1:-} != --unit-only ]]; then
  # Beside an unrelated Slurm cluster (tests/integration/other-cluster.sh),
  # as on a site's test controller: the suite must touch only its own.
  # Under the live lock (/tmp/gpupool-live.lock, which scripts/test-matrix.sh
  # takes too): on a shared machine no other suite's cluster runs meanwhile.
  # It runs before the sanitizer, fuzzing and benchmark legs, so that their
  # builds (background, idle priority) use the CPU time it leaves.
  step "integration tests (live cluster, beside an unrelated one)"
  run_suite 'integration:' flock /tmp/gpupool-live.lock env GPUPOOL_OTHER_CLUSTER=1 bash tests/integration/run.sh
fi

step "unit tests under ASan + UBSan (build-asan/, scripts/build-asan.sh)"
bg_join asan
asan=$REPO/build-asan
rm -f "$asan/src/tests/unit/gpupool_tests.log"
bash scripts/build-asan.sh
( cd "$asan/src" &&
  GPUPOOL_DECISION_WORLDS=5000 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    make -j"$(nproc)" check-TESTS
) >"$asan/check.log" 2>&1
[[ -f $asan/src/tests/unit/gpupool_tests.log ]] || tail -20 "$asan/build.log" "$asan/check.log"
count_gtest "$asan/src/tests/unit/gpupool_tests.log" unit-asan

# A fixed number of inputs from a fixed seed, from the stored corpus: the
# same commit gives the same lines on any machine, however loaded (a time
# budget would reach more or fewer inputs).  Open-ended fuzzing is its own
# command: scripts/fuzz.sh SECONDS (tests/fuzz/README.md).
step "fuzzing (scripts/fuzz.sh ci: libFuzzer + ASan + UBSan, regressions, corpus, fixed inputs from seed 1)"
bg_join fuzz
out=$(mktemp)
bash scripts/fuzz.sh ci 2>&1 | tee "$out"
fuzz_ok=$(grep -cE '^fuzz [a-z]+: .*, OK$' "$out" || true)
fuzz_bad=$(grep -cE '^fuzz [a-z]+: FAILED' "$out" || true)
# No per-target line at all (the build failed): one failure.
(( fuzz_ok + fuzz_bad > 0 )) || fuzz_bad=1
passed=$(( passed + fuzz_ok )); failed=$(( failed + fuzz_bad ))
rm -f "$out"

step "soak checker tests (tests/soak/checker_test.py, no cluster)"
out=$(/usr/bin/python3 tests/soak/checker_test.py 2>&1)
tail -n 3 <<<"$out"
ran=$(sed -n 's/^Ran \([0-9]*\) tests* in .*/\1/p' <<<"$out")
bad=$(grep -oE '(failures|errors)=[0-9]+' <<<"$out" | awk -F= '{ n += $2 } END { print n + 0 }')
if [[ -z $ran ]] || { ! grep -q '^OK' <<<"$out" && (( bad == 0 )); }; then bad=1 ran=0; fi
echo "checker: $(( ran - bad )) passed, $bad failed"
passed=$(( passed + ran - bad )); failed=$(( failed + bad ))

step "benchmarks build and run (make bench, make bench-sim: each case once, briefly)"
# Printed figures, not targets: this only keeps both from rotting (a build
# or run failure counts as one failure each).
if make -j"$(nproc)" bench BENCH_ARGS='--benchmark_min_time=0.001 --benchmark_repetitions=1' \
    >bench.log 2>&1; then
  echo "make bench: $(grep -c '^BM_' bench.log) cases ran"; passed=$(( passed + 1 ))
  grep -A2 '^pass_memory:' bench.log || true
else
  tail -5 bench.log; echo "make bench: FAILED (bench.log)"; failed=$(( failed + 1 ))
fi
if make -j"$(nproc)" bench-sim \
    BENCH_SIM_ARGS='--jobs=2000 --nodes=16x8 --pools=2 --sched-interval=60 --pass-interval=300' \
    >bench-sim.log 2>&1; then
  echo "make bench-sim: $(grep -m1 '^gpupool ' bench-sim.log)"; passed=$(( passed + 1 ))
else
  tail -5 bench-sim.log; echo "make bench-sim: FAILED (bench-sim.log)"; failed=$(( failed + 1 ))
fi

if [[ ${1:-} != --unit-only ]]; then
  step "integration tests on Slurm 26.05 (scripts/test-matrix.sh 26.05; Slurm 26.05 built in the background)"
  bg_join slurm
  run_suite 'matrix 26\.05:' bash scripts/test-matrix.sh 26.05
fi

step_times
echo
(( ${#skipped[@]} == 0 )) || printf '%s\n' "${skipped[@]}"
echo "$passed passed, $failed failed"
(( failed == 0 ))
