#!/usr/bin/env bash
# Build (not run) the unit tests under ASan + UBSan in DEST (default
# build-asan/ in the repository), for scripts/run-tests.sh's sanitizer leg.
#   usage: scripts/build-asan.sh [DEST]
# build.sh configures the repository in place, and automake refuses a VPATH
# build of a configured source tree: this builds a copy of the sources (no
# build outputs, no Slurm source: scripts/copy-source.sh) in DEST/src,
# configured once, and there only what the tests link (the core, the code
# the command shares with the tests, the test program), not `make`'s `all`
# (the gpupool command, which no test runs, compiled again under the
# sanitizers).  Run the tests with `make check-TESTS` in DEST/src.
# Idempotent: a second run copies the same files (their times kept) and
# make finds nothing to do.  Output goes to DEST/build.log; the exit status
# is make's.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
asan=${1:-$REPO/build-asan}
san="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
mkdir -p "$asan/src" || exit 1
bash "$REPO/scripts/copy-source.sh" "$asan/src" >"$asan/build.log" 2>&1 &&
( cd "$asan/src" &&
  { [[ -x configure ]] || autoreconf -fi; } &&
  { [[ -f Makefile ]] || ./configure -q CXXFLAGS="$san" CFLAGS="$san" LDFLAGS="-fsanitize=address,undefined"; } &&
  make -j"$(nproc)" tests/unit/gpupool_tests
) >>"$asan/build.log" 2>&1
