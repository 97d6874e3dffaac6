#!/usr/bin/env bash
# Run the whole integration suite on several Slurm releases, one after the
# other: 22.05 from Debian's packages, the others built from the vendored
# tarballs (scripts/build-slurm.sh, which reuses a finished build).  For
# each release the plugins are built against that release's configured
# source, in a copy of this tree, and tests/integration/run.sh runs with
# GPUPOOL_SLURM_PREFIX pointing at the release.
#
#   scripts/test-matrix.sh [RELEASE...]   (default: 22.05 23.11 24.11 25.11 26.05)
#
# Prints one line per release, "matrix RELEASE: N passed, N failed in S s",
# and last "N passed, N failed" over all of them.  Logs and builds go to
# GPUPOOL_MATRIX_DIR (default /var/tmp/gpupool-matrix).  Run as root, after
# scripts/install-deps.sh; takes the live lock (/tmp/gpupool-live.lock)
# for each suite run.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${GPUPOOL_MATRIX_DIR:-/var/tmp/gpupool-matrix}
releases=("$@")
(( ${#releases[@]} )) || releases=(22.05 23.11 24.11 25.11 26.05)
mkdir -p "$DIR"

passed=0 failed=0
for rel in "${releases[@]}"; do
  t0=$SECONDS
  log=$DIR/$rel.log
  : >"$log"
  prefix='' src=''
  if [[ $rel == 22.05 ]]; then
    bash "$REPO/scripts/fetch-slurm-source.sh" >>"$log" 2>&1 && src=$REPO/slurm-src
  else
    out=$(bash "$REPO/scripts/build-slurm.sh" "$rel" 2>>"$log") &&
      eval "$(tail -n 2 <<<"$out")" && prefix=$SLURM_PREFIX src=$SLURM_SOURCE
  fi
  if [[ -z $src ]]; then
    echo "matrix $rel: 0 passed, 1 failed in $(( SECONDS - t0 )) s (Slurm not available; log $log)"
    failed=$(( failed + 1 ))
    continue
  fi
  build=$DIR/build-$rel
  if ! { bash "$REPO/scripts/copy-source.sh" "$build" &&
         ( cd "$build" &&
           { [[ -x configure && configure -nt configure.ac ]] || autoreconf -fi; } &&
           { [[ -f Makefile ]] && grep -q "^SLURM_SOURCE = $src\$" Makefile ||
             ./configure -q --with-slurm-source="$src"; } &&
           make -j"$(nproc)" ); } >>"$log" 2>&1; then
    echo "matrix $rel: 0 passed, 1 failed in $(( SECONDS - t0 )) s (plugins did not build; log $log)"
    failed=$(( failed + 1 ))
    continue
  fi
  flock /tmp/gpupool-live.lock env GPUPOOL_SLURM_PREFIX="$prefix" GPUPOOL_BUILD="$build" \
    bash "$REPO/tests/integration/run.sh" >>"$log" 2>&1
  line=$(grep -aE '^integration: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
  else
    p=0 f=1
  fi
  passed=$(( passed + p )); failed=$(( failed + f ))
  echo "matrix $rel: $p passed, $f failed in $(( SECONDS - t0 )) s (log $log)"
  grep -a '^FAIL ' "$log" | sed "s/^/matrix $rel:   /"
done
echo "$passed passed, $failed failed"
(( failed == 0 ))
