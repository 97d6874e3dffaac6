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
tar -C "$REPO" -cf - --exclude=./build-asan --exclude=./build-fuzz --exclude=./slurm-src --exclude=./.git \
    --exclude='*.o' --exclude='*.lo' --exclude='*.la' --exclude='*.so' --exclude=.libs --exclude=.deps \
    --exclude=.dirstamp --exclude=./Makefile --exclude=./config.status --exclude=./config.log \
    --exclude=./libtool --exclude=./stamp-h1 --exclude=./gpupool_config.h --exclude=autom4te.cache \
    --exclude='*.log' --exclude='*.trs' --exclude=./src/cli/gpupool --exclude=./tests/unit/gpupool_tests \
    --exclude=./tests/unit/plugin_load --exclude=./tests/bench/gpupool_bench --exclude=./tests/bench/sim_bench \
    . | tar -C "$DEST" -xf -
