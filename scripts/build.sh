#!/usr/bin/env bash
# Configure (once) and build the core, the plugins and the tests in the
# repository.  Needs scripts/install-deps.sh and scripts/fetch-slurm-source.sh
# to have run.   Usage: scripts/build.sh [SLURM_SOURCE_DIR]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
SRC=${1:-${GPUPOOL_SLURM_SRC:-$REPO/slurm-src}}
[[ -f $SRC/config.h ]] || { echo "build: no configured Slurm source in $SRC (run scripts/fetch-slurm-source.sh)" >&2; exit 1; }
# Reconfigure when configure.ac/Makefile.am changed or the tree is new.
if [[ ! -x configure || configure.ac -nt configure || Makefile.am -nt Makefile.in || src/plugins/plugins.am -nt Makefile.in ]]; then
  autoreconf -fi >/dev/null
fi
if [[ ! -f Makefile || configure -nt Makefile ]] || ! grep -q "^SLURM_SOURCE = $SRC\$" Makefile; then
  ./configure -q --with-slurm-source="$SRC"
fi
make -j"${GPUPOOL_JOBS:-$(nproc)}" >/dev/null
echo "build: ok (plugins in src/plugins/*/gpupool/.libs)"
