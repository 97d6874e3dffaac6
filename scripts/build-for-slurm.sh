#!/usr/bin/env bash
# Build gpupool (core and plugins) for one Slurm release, in a copy of this
# tree (scripts/copy-source.sh; the repository's own build is left alone):
# 22.05 against Debian's configured source (scripts/fetch-slurm-source.sh),
# 23.11, 24.11, 25.11 and 26.05 against the configured source of the
# release that scripts/build-slurm.sh builds (or has built: it is reused),
# and the gpupool command against that release's libslurm.
#
#   usage: scripts/build-for-slurm.sh RELEASE DEST [build-slurm.sh options]
#     RELEASE  22.05, 23.11, 24.11, 25.11 or 26.05
#     DEST     build directory (reconfigured only when its Slurm source changes)
#
# The last two lines of stdout can be eval'ed:
#   GPUPOOL_SLURM_PREFIX=/opt/slurm/26.05   (empty for 22.05: Debian's packages)
#   GPUPOOL_BUILD=DEST
# which is what scripts/cluster.sh, scripts/demo.sh and tests/integration/
# run.sh take.  Everything else goes to stderr.  Exit status 3: that Slurm
# release's source tarball could not be had (scripts/build-slurm.sh: not in
# GPUPOOL_SLURM_VENDOR, no download); 4: gpupool did not build against it;
# 5: that Slurm release did not build (or 22.05's source was not fetched).
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rel=${1:?usage: $0 RELEASE DEST [build-slurm.sh options]}
dest=${2:?usage: $0 RELEASE DEST [build-slurm.sh options]}
shift 2
mkdir -p "$dest" && dest=$(cd "$dest" && pwd) || exit 4
log() { echo "build-for-slurm: $*" >&2; }

prefix='' src=''
if [[ $rel == 22.05 ]]; then
  src=$(bash "$REPO/scripts/fetch-slurm-source.sh" | tail -n 1) || src=''
else
  out=$(bash "$REPO/scripts/build-slurm.sh" "$rel" "$@")
  rc=$?
  (( rc != 3 )) || { log "no source tarball of Slurm $rel"; exit 3; }
  (( rc != 0 )) || { eval "$(tail -n 2 <<<"$out")" && prefix=$SLURM_PREFIX src=$SLURM_SOURCE; }
fi
[[ -n $src && -f $src/config.h ]] || { log "no configured source of Slurm $rel"; exit 5; }

# The gpupool command talks to the cluster through libslurm: that
# release's (Debian's for 22.05), found through CPPFLAGS and LDFLAGS.
cppflags='' ldflags=''
if [[ -n $prefix ]]; then
  cppflags="-I$prefix/include" ldflags="-L$prefix/lib -Wl,-rpath,$prefix/lib"
fi
# A tree configured against another source is configured again from clean.
if ! { bash "$REPO/scripts/copy-source.sh" "$dest" &&
       cd "$dest" &&
       { [[ -x configure && configure -nt configure.ac ]] || autoreconf -fi; } &&
       if [[ -f Makefile ]] && grep -q "^SLURM_SOURCE = $src\$" Makefile &&
          grep -qxF "CPPFLAGS = $cppflags" Makefile; then :; else
         { [[ ! -f Makefile ]] || make clean; } &&
           ./configure -q --with-slurm-source="$src" CPPFLAGS="$cppflags" LDFLAGS="$ldflags"
       fi &&
       make -j"$(nproc)"; } >&2; then
  log "gpupool did not build against Slurm $rel ($src) in $dest"
  exit 4
fi
log "gpupool built against Slurm $rel ($src) in $dest"
echo "GPUPOOL_SLURM_PREFIX=$prefix"
echo "GPUPOOL_BUILD=$dest"
