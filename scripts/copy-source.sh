#!/usr/bin/env bash
# Copy the project's source (not its build outputs, Slurm's source or .git)
# into DEST, so that it can be configured and built there on its own: an
# in-tree build in the repository forbids VPATH builds from it.  Used for
# the sanitizer build (scripts/run-tests.sh) and one build per Slurm release
# (scripts/test-matrix.sh).      usage: scripts/copy-source.sh DEST
# The programs an in-tree build links are left out too: a copy newer than
# DEST's objects would pass for up to date there, and make would keep it
# (seen: a gpupool command linked to 22.05's libslurm in the 26.05 build),
# and scripts/run-tests.sh may copy while the benchmarks are being linked.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=${1:?usage: $0 DEST}
mkdir -p "$DEST"
# Through a staging copy, and into DEST only the files whose content
# differs, stamped now: a file copied with its own older time would pass
# for up to date beside objects DEST built from another tree since (seen:
# 26.05 plugins built from an older commit kept after a newer copy).
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-copy.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
tar -C "$REPO" -cf - --exclude=./build-asan --exclude=./build-fuzz --exclude=./slurm-src --exclude=./.git \
    --exclude='*.o' --exclude='*.lo' --exclude='*.la' --exclude='*.so' --exclude=.libs --exclude=.deps \
    --exclude=.dirstamp --exclude=./Makefile --exclude=./config.status --exclude=./config.log \
    --exclude=./libtool --exclude=./stamp-h1 --exclude=./gpupool_config.h --exclude=autom4te.cache \
    --exclude='*.log' --exclude='*.trs' --exclude=./src/cli/gpupool --exclude=./tests/unit/gpupool_tests \
    --exclude=./tests/unit/plugin_load --exclude=./tests/bench/gpupool_bench --exclude=./tests/bench/sim_bench \
    . | tar -C "$STAGE" -xf -
# A new DEST takes the files as they are (their own times: configure must
# stay newer than configure.ac, as in the repository).
if [[ -z $(ls -A "$DEST") ]]; then
  tar -C "$STAGE" -cf - . | tar -C "$DEST" -xf -
  exit 0
fi
(cd "$STAGE" && find . -type d) | while IFS= read -r d; do mkdir -p "$DEST/$d"; done
(cd "$STAGE" && find . \( -type f -o -type l \) -print0) |
  while IFS= read -r -d '' f; do
    if [[ -L $STAGE/$f ]]; then
      [[ -L $DEST/$f && $(readlink "$STAGE/$f") == "$(readlink "$DEST/$f")" ]] || cp -P "$STAGE/$f" "$DEST/$f"
    elif ! cmp -s "$STAGE/$f" "$DEST/$f"; then
      rm -f "$DEST/$f"
      cp "$STAGE/$f" "$DEST/$f"
    fi
  done
