#!/usr/bin/env bash
# The Debian package, end to end, as root on Debian 12: builds
# slurm-gpupool with `dpkg-buildpackage -us -uc -b` in a copy of the tree,
# installs the .deb with apt, runs the demo (scripts/demo.sh --installed)
# on the installed plugins, example gpupool.conf and gpupool command, checks
# the installed man pages, then removes the package and stops the cluster.
#   scripts/package-test.sh [22.05]
# For the newer releases, scripts/package-test.sh RELEASE runs
# scripts/package-test-smd.sh RELEASE (SchedMD's packages, isolated root).
# Environment:
#   GPUPOOL_PKG_DIR    where the copy is built and the .deb lands [/var/tmp/gpupool-pkg]
#   DEB_BUILD_OPTIONS  passed to dpkg-buildpackage [nocheck parallel=<cores>]:
#                      scripts/run-tests.sh runs the unit tests; set it to
#                      "parallel=2" to run them in the package build too
#   GPUPOOL_LIVE_LOCK  lock held from install to removal, while the system's
#                      Slurm plugin dir holds the package [/tmp/gpupool-live.lock];
#                      empty when the caller holds it
# Prints timings and, last, "package-test: PASS" or "package-test: FAIL (why)".
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# scripts/package-test.sh RELEASE: 22.05 (the default) is Debian's Slurm,
# on this machine; the newer releases are SchedMD's packages, in an
# isolated root (scripts/package-test-smd.sh).
case ${1:-22.05} in
  22.05) ;;
  23.11|24.11|25.11|26.05) exec bash "$REPO/scripts/package-test-smd.sh" "$@" ;;
  *) echo "usage: $0 [22.05|23.11|24.11|25.11|26.05] [--demo|--no-demo|--package-only]" >&2; exit 2 ;;
esac
[[ $(id -u) -eq 0 ]] || { echo "package-test: run as root (installs packages, starts a local cluster)" >&2; exit 2; }

PKG=slurm-gpupool
DIR=${GPUPOOL_PKG_DIR:-/var/tmp/gpupool-pkg}
LOCK=${GPUPOOL_LIVE_LOCK-/tmp/gpupool-live.lock}
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS-nocheck parallel=$(nproc)}
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

log() { printf '[package-test %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fail() { echo "package-test: FAIL ($*)"; exit 1; }

bash "$REPO/scripts/install-deps.sh" >&2
SLURM_SRC=$(bash "$REPO/scripts/fetch-slurm-source.sh" | tail -n1)
export SLURM_SRC

version=$(cd "$REPO" && dpkg-parsechangelog -S Version)
if dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null | grep -qx installed; then
  fail "$PKG is installed already: remove it first (apt-get remove $PKG)"
fi

# ---- build, in a copy (the repository itself is never configured in place)
t0=$SECONDS
rm -rf "$DIR"
mkdir -p "$DIR"
src=$DIR/$PKG-$version
bash "$REPO/scripts/copy-source.sh" "$src"
log "dpkg-buildpackage -us -uc -b in $src (DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS, SLURM_SRC=$SLURM_SRC)"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$DIR/build.log" 2>&1 \
  || { tail -n 30 "$DIR/build.log" >&2; fail "dpkg-buildpackage failed, log: $DIR/build.log"; }
slurm_upstream=$(dpkg-query -W -f='${Version}' libslurm-dev | sed 's/^[0-9]*://; s/-[^-]*$//')
deb=$DIR/${PKG}_${version}+slurm${slurm_upstream}_$(dpkg-architecture -qDEB_HOST_ARCH).deb
[[ -f $deb ]] || fail "no $deb"
build_s=$(( SECONDS - t0 ))
log "built $deb in ${build_s} s"
dep=$(dpkg-deb -f "$deb" Depends)
echo "$dep" >&2
[[ $dep == *"slurmctld (= $(dpkg-query -W -f='${Version}' slurmctld))"* ]] || fail "Depends: $dep"
echo "package-test 22.05: PASS $(basename "$deb") built in ${build_s} s; Depends: $dep"

# ---- install, demo, remove: under the live lock (a cluster started from a
# build would otherwise run next to the installed plugins)
if [[ -n $LOCK ]]; then
  exec 9>"$LOCK"
  log "waiting for $LOCK"
  flock 9
fi
cleanup() {
  local rc=$?
  bash "$REPO/scripts/cluster.sh" down >/dev/null 2>&1 || true
  if dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null | grep -qx installed; then
    apt-get remove -y -qq "$PKG" >/dev/null 2>&1 || log "warning: apt-get remove $PKG failed"
  fi
  exit "$rc"
}
trap cleanup EXIT

t0=$SECONDS
log "apt-get install $deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >"$DIR/install.log" 2>&1 \
  || { cat "$DIR/install.log" >&2; fail "apt-get install failed"; }
install_s=$(( SECONDS - t0 ))
for f in /usr/lib/$MA/slurm-wlm/priority_gpupool.so /usr/lib/$MA/slurm-wlm/preempt_gpupool.so \
         /usr/lib/$MA/slurm-wlm/job_submit_gpupool.so /usr/bin/gpupool \
         /usr/share/doc/$PKG/examples/gpupool.conf.example \
         /usr/share/doc/$PKG/examples/grafana/gpupool.json; do
  [[ -e $f ]] || fail "$f not installed"
done
ls /usr/lib/"$MA"/libgpupool.so.* >/dev/null || fail "libgpupool not installed"
for m in "1 gpupool" "5 gpupool.conf" "8 gpupool"; do
  # shellcheck disable=SC2086
  [[ $(man $m 2>/dev/null | wc -l) -gt 20 ]] || fail "man $m does not render"
done
log "installed in ${install_s} s"

t0=$SECONDS
log "scripts/demo.sh --installed"
bash "$REPO/scripts/demo.sh" --installed >"$DIR/demo.log" 2>&1 \
  || { tail -n 40 "$DIR/demo.log" >&2; fail "the demo failed on the installed package, log: $DIR/demo.log"; }
eval "$(bash "$REPO/scripts/cluster.sh" env)"
grep -qx "PluginDir=/usr/lib/$MA/slurm-wlm" "$SLURM_CONF" || fail "the cluster did not run on the installed plugin dir"
# The installed command reads the demo's cluster.
gpupool status >"$DIR/status.txt" 2>&1 || { cat "$DIR/status.txt" >&2; fail "gpupool status failed"; }
grep -q '^pool1 ' "$DIR/status.txt" || { cat "$DIR/status.txt" >&2; fail "gpupool status shows no pool1"; }
demo_s=$(( SECONDS - t0 ))
log "demo ran in ${demo_s} s: $(grep -c gpupool: "$DIR/demo.log" || true) gpupool log lines shown"
bash "$REPO/scripts/cluster.sh" down >/dev/null 2>&1

t0=$SECONDS
apt-get remove -y -qq "$PKG" >/dev/null 2>&1 || fail "apt-get remove $PKG failed"
for f in /usr/lib/$MA/slurm-wlm/priority_gpupool.so /usr/bin/gpupool; do
  [[ ! -e $f ]] || fail "$f left after removal"
done
log "removed in $(( SECONDS - t0 )) s"
echo "package-test: build ${build_s} s, install ${install_s} s, demo ${demo_s} s"
echo "package-test: PASS"
