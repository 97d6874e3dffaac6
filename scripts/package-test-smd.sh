#!/usr/bin/env bash
# scripts/package-test.sh RELEASE for the releases after Debian's 22.05
# (23.11, 24.11, 25.11, 26.05), as root on Debian 12.  A site on those runs
# SchedMD's slurm-smd-* packages, built from the debian/ directory of the
# release tarball; so, in an isolated Debian 12 root (debootstrap from
# Debian's registry; the host's own Slurm is never touched):
#   1. the tarball (checked against scripts/slurm-releases.sha256) is built
#      into SchedMD's packages with dpkg-buildpackage, its build
#      dependencies from Debian (mk-build-deps);
#   2. slurm-smd, -client, -slurmctld, -slurmd, -slurmdbd and -dev are
#      installed with apt, as a site installs them (not a private prefix);
#   3. slurm-gpupool is built against that release (debian/rules: the
#      configured tree of that build, slurm-smd-dev's libslurm) and must be
#      named 0.1.0+slurmX.Y.Z and depend on slurm-smd-slurmctld (= X.Y.Z-N);
#   4. with --demo (the default for 26.05): a site's gpupool.conf is put in
#      /etc/slurm, the package installed with apt, the demo run on the
#      installed files against that slurmctld (scripts/demo.sh --installed,
#      chrooted), slurmctld's log must name the release, `gpupool version`
#      must match, the package removed (the site's gpupool.conf untouched,
#      nothing of the package left);
#   5. the root is removed, leaving nothing (GPUPOOL_PKG_KEEP=1 keeps it;
#      after a failure it is kept, and the next run reuses what it built).
#
#   scripts/package-test-smd.sh RELEASE [--demo|--no-demo|--package-only]
#
# --package-only: the cheap check, for releases whose demo is not run
# (about 15 min instead of 80 on 2 cores). Steps 1 and 2 become: SchedMD's
# configure step of debian/rules, then only libslurm and the headers are
# compiled, installed into debian/tmp and packaged by SchedMD's own rules
# (the .install lists debian/rules generates, dh_* -pslurm-smd
# -pslurm-smd-dev): a slurm-smd holding only libslurm, a whole
# slurm-smd-dev, both of the release's version, installed in the root.
# Step 3 is the same build of slurm-gpupool, then checked: its Depends names
# slurm-smd-slurmctld (= the version of the tarball's debian/changelog),
# the plugins are in /usr/lib/<triplet>/slurm, each plugin's
# plugin_version (what slurmctld compares at load) is that release's
# SLURM_VERSION_NUMBER, and the packaged `gpupool version` names it for
# the plugins and the command. No slurmctld is built: that the plugins
# load and run there is what the full run (--demo) shows.
# Environment: GPUPOOL_SLURM_VENDOR (tarballs, default ../shared/vendor/slurm),
#   GPUPOOL_PKG_ROOT (the root, default /var/tmp/gpupool-pkgroot-RELEASE,
#   or /var/tmp/gpupool-pkgonly-RELEASE with --package-only;
#   one that has the built packages already is reused), GPUPOOL_LIVE_LOCK
#   (held while the cluster runs, default /tmp/gpupool-live.lock; empty:
#   the caller holds it), GPUPOOL_PKG_KEEP.
# Prints "package-test RELEASE: PASS ..." lines per step, last
# "package-test RELEASE: PASS" or "package-test RELEASE: FAIL (why)".
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REL=${1:?usage: $0 RELEASE [--demo|--no-demo]}
DEMO=$([[ $REL == 26.05 ]] && echo 1 || echo 0)
PKGONLY=0
case ${2:-} in
  --demo) DEMO=1 ;; --no-demo) DEMO=0 ;; --package-only) DEMO=0 PKGONLY=1 ;; '') ;;
  *) echo "usage: $0 RELEASE [--demo|--no-demo|--package-only]" >&2; exit 2 ;;
esac
[[ $(id -u) -eq 0 ]] || { echo "package-test: run as root" >&2; exit 2; }
VENDOR=${GPUPOOL_SLURM_VENDOR:-$REPO/../shared/vendor/slurm}
# Its own root: its partial slurm-smd must never stand in for a full one.
R=${GPUPOOL_PKG_ROOT:-/var/tmp/gpupool-$( ((PKGONLY)) && echo pkgonly || echo pkgroot)-$REL}
LOCK=${GPUPOOL_LIVE_LOCK-/tmp/gpupool-live.lock}
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
LOGS=$R.logs
mkdir -p "$LOGS"
log() { printf '[package-test %s %(%H:%M:%S)T] %s\n' "$REL" -1 "$*" >&2; }
pass() { echo "package-test $REL: PASS $*"; }
fail() { echo "package-test $REL: FAIL ($*)"; exit 1; }
in_root() { chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
              DEBIAN_FRONTEND=noninteractive "$@"; }

line=$(grep -E "  slurm-$REL\.[0-9]+\.tar\.(xz|bz2)\$" "$REPO/scripts/slurm-releases.sha256" | tail -n1) ||
  fail "no Slurm $REL in scripts/slurm-releases.sha256"
tarball=${line##* }
version=${tarball#slurm-}; version=${version%.tar.*}
[[ -f $VENDOR/$tarball ]] || fail "$VENDOR/$tarball not found (GPUPOOL_SLURM_VENDOR)"
(cd "$VENDOR" && sha256sum -c --quiet <<<"$line") || fail "$tarball: checksum differs from scripts/slurm-releases.sha256"

# SLURM_VERSION_NUMBER of the release, as 8 hex digits (23.11.11: 00170b0b).
IFS=. read -r v1 v2 v3 <<<"$version"
want=$(printf '%08x' $(( (10#$v1 << 16) | (10#$v2 << 8) | 10#$v3 )))

mounted=0
cleanup() {
  local rc=$?
  if [[ -x $R/usr/bin/env && $DEMO == 1 ]]; then
    in_root bash /build/gpupool/scripts/cluster.sh down >/dev/null 2>&1 || true
  fi
  if (( mounted )); then
    umount -R "$R/sys" 2>/dev/null || true
    umount "$R/dev/pts" "$R/dev" "$R/proc" 2>/dev/null || true
  fi
  # Kept after a failure (what was built is reused by the next run).
  if (( rc != 0 )) && [[ -d $R ]]; then
    log "kept $R and $LOGS to look at; remove them with: rm -rf $R $LOGS"
  elif [[ -z ${GPUPOOL_PKG_KEEP:-} && -d $R ]]; then
    if mount | grep -q " $R/"; then log "warning: still mounted under $R: left in place"
    else rm -rf "$R"; log "removed $R"; fi
    (( rc != 0 )) || rm -rf "$LOGS"
  fi
  exit "$rc"
}
trap cleanup EXIT

# ---- 0. the isolated root
t0=$SECONDS
if [[ ! -x $R/usr/bin/apt-get ]]; then
  log "debootstrap bookworm $R"
  debootstrap --variant=buildd --include=ca-certificates,usrmerge bookworm "$R" http://deb.debian.org/debian \
    >"$LOGS/debootstrap.log" 2>&1 || fail "debootstrap failed, log $LOGS/debootstrap.log"
fi
# /sys with its cgroup mount: slurmd 26.05 will not start without it.
mount -t proc proc "$R/proc" && mount --bind /dev "$R/dev" && mount --bind /dev/pts "$R/dev/pts" &&
  mount --rbind /sys "$R/sys" && mount --make-rslave "$R/sys" && mounted=1
cp /etc/resolv.conf "$R/etc/resolv.conf"
# The host's names (localhost; the nodes are addressed by NodeAddr).
cp /etc/hosts "$R/etc/hosts"
cat >"$R/etc/apt/sources.list" <<EOF
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
# No daemon starts at package installation in the root.
printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d" && chmod +x "$R/usr/sbin/policy-rc.d"
# Debian 12 systems are merged-/usr (Slurm's configure looks for
# /usr/lib/<triplet>/security); the buildd variant is not.
if [[ ! -L $R/lib ]]; then
  rm -f "$R/etc/unsupported-skip-usrmerge-conversion"
  in_root /usr/lib/usrmerge/convert-usrmerge >"$LOGS/usrmerge.log" 2>&1 || fail "usrmerge failed, log $LOGS/usrmerge.log"
fi
in_root sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends devscripts equivs libpam-modules' \
  >"$LOGS/root-deps.log" 2>&1 || fail "apt-get in the root failed, log $LOGS/root-deps.log"
pass "isolated Debian 12 root $R ready in $(( SECONDS - t0 )) s"

S=/build/slurm-$version
B=$S/obj-x86_64-linux-gnu    # debian/rules' build directory (dh --builddirectory)
if (( PKGONLY )); then
# ---- 1. --package-only: libslurm and the headers, packaged by SchedMD's rules
t0=$SECONDS
smd=(slurm-smd slurm-smd-dev)
debs=()
for p in "${smd[@]}"; do debs+=("/build/partial/${p}_$version-1_amd64.deb"); done
if [[ ! -f $R${debs[-1]} ]]; then
  mkdir -p "$R/build" && rm -rf "$R$S" "$R/build/partial" && tar xf "$VENDOR/$tarball" -C "$R/build"
  [[ -f $R$S/debian/control ]] || fail "$tarball has no debian/ directory"
  # debian/rules writes the .install lists of slurm-smd and slurm-smd-dev
  # with find over debian/tmp: its own lines, run on what is installed here.
  lists=$(sed -n 's/^\t\(find debian\/tmp\/.*\)$/\1/p' "$R$S/debian/rules")
  [[ $(grep -c 'debian/slurm-smd\(-dev\)\?\.install$' <<<"$lists") == 3 ]] ||
    fail "debian/rules of $version: not the three find lines that write slurm-smd.install and slurm-smd-dev.install"
  cat >"$R/build/partial-build.sh" <<EOF
set -eux
cd $S
P='-pslurm-smd -pslurm-smd-dev'
# SchedMD's configure step: debian/rules' override, with dh's --builddirectory.
DH_OPTIONS=--builddirectory debian/rules override_dh_auto_configure
test -f $B/config.h
dh_prep \$P
# libslurm (with the libcommon it links) and the headers; nothing else.
make -j2 -C $B/src/api
make -C $B install-pkgincludeHEADERS DESTDIR=$S/debian/tmp
make -C $B/src/api install DESTDIR=$S/debian/tmp
rm -f debian/slurm-smd.install debian/slurm-smd-dev.install
$lists
for c in dh_installdirs dh_install dh_installdocs dh_installchangelogs dh_link dh_compress \\
         dh_fixperms dh_strip dh_makeshlibs dh_shlibdeps dh_installdeb dh_gencontrol dh_md5sums; do
  \$c \$P
done
mkdir -p /build/partial && dh_builddeb \$P --destdir=/build/partial
EOF
  log "mk-build-deps, then libslurm and the headers of $tarball (log $LOGS/slurm-smd-build.log)"
  in_root sh -c "cd $S && mk-build-deps -i -r -t 'apt-get -y -qq --no-install-recommends' debian/control" \
    >"$LOGS/slurm-smd-deps.log" 2>&1 || fail "Slurm's build dependencies, log $LOGS/slurm-smd-deps.log"
  in_root sh -c "DEB_BUILD_OPTIONS='nocheck parallel=2 noautodbgsym' nice -n 10 bash /build/partial-build.sh" \
    >"$LOGS/slurm-smd-build.log" 2>&1 || fail "libslurm of Slurm $version, log $LOGS/slurm-smd-build.log"
fi
for d in "${debs[@]}"; do [[ -f $R$d ]] || fail "$d not built"; done
pass "SchedMD's configure step of Slurm $version; libslurm and the headers packaged by its debian/ ($(( SECONDS - t0 )) s): slurm-smd (libslurm only), slurm-smd-dev"

# ---- 2. installed in the root
t0=$SECONDS
in_root apt-get install -y -qq --no-install-recommends "${debs[@]}" munge \
  pkg-config libjansson-dev libmicrohttpd-dev autoconf automake libtool debhelper \
  >"$LOGS/slurm-smd-install.log" 2>&1 || fail "apt-get install of slurm-smd and slurm-smd-dev, log $LOGS/slurm-smd-install.log"
# The version slurm-smd-slurmctld of this tarball has: its debian/changelog's.
smd_version=$(dpkg-parsechangelog -l "$R$S/debian/changelog" -S Version)
dev_version=$(in_root dpkg-query -W -f='${Version}' slurm-smd-dev)
[[ $dev_version == "$smd_version" ]] || fail "slurm-smd-dev $dev_version, debian/changelog $smd_version"
grep -qx "#define SLURM_VERSION_NUMBER $(printf 0x%x $((16#$want)))" "$R/usr/include/slurm/slurm_version.h" ||
  fail "/usr/include/slurm/slurm_version.h is not Slurm $version"
pass "slurm-smd-dev $dev_version installed with apt ($(( SECONDS - t0 )) s); /usr/include/slurm is Slurm $version"
else
# ---- 1. SchedMD's packages from the tarball's debian/ directory
t0=$SECONDS
smd=(slurm-smd slurm-smd-client slurm-smd-slurmctld slurm-smd-slurmd slurm-smd-slurmdbd slurm-smd-dev)
debs=()
for p in "${smd[@]}"; do debs+=("/build/${p}_$version-1_amd64.deb"); done
if [[ ! -f $R${debs[-1]} ]]; then
  mkdir -p "$R/build" && rm -rf "$R$S" && tar xf "$VENDOR/$tarball" -C "$R/build"
  [[ -f $R$S/debian/control ]] || fail "$tarball has no debian/ directory"
  log "mk-build-deps and dpkg-buildpackage of $tarball (log $LOGS/slurm-smd-build.log)"
  in_root sh -c "cd $S && mk-build-deps -i -r -t 'apt-get -y -qq --no-install-recommends' debian/control" \
    >"$LOGS/slurm-smd-deps.log" 2>&1 || fail "Slurm's build dependencies, log $LOGS/slurm-smd-deps.log"
  in_root sh -c "cd $S && DEB_BUILD_OPTIONS='nocheck parallel=2' nice -n 10 dpkg-buildpackage -us -uc -b" \
    >"$LOGS/slurm-smd-build.log" 2>&1 || fail "dpkg-buildpackage of Slurm $version, log $LOGS/slurm-smd-build.log"
fi
for d in "${debs[@]}"; do [[ -f $R$d ]] || fail "$d not built"; done
pass "SchedMD's packages of Slurm $version built from its debian/ directory ($(( SECONDS - t0 )) s): ${smd[*]}"

# ---- 2. installed as a site installs them
t0=$SECONDS
in_root apt-get install -y -qq --no-install-recommends "${debs[@]}" munge mariadb-server python3 curl man-db \
  pkg-config libjansson-dev libmicrohttpd-dev autoconf automake libtool debhelper \
  >"$LOGS/slurm-smd-install.log" 2>&1 || fail "apt-get install of SchedMD's packages, log $LOGS/slurm-smd-install.log"
smd_version=$(in_root dpkg-query -W -f='${Version}' slurm-smd-slurmctld)
[[ $(in_root /usr/sbin/slurmctld -V) == "slurm $version" ]] || fail "slurmctld -V: $(in_root /usr/sbin/slurmctld -V)"
[[ -f $R/usr/lib/$MA/slurm/priority_multifactor.so ]] || fail "no /usr/lib/$MA/slurm in SchedMD's packages"
pass "slurm-smd-slurmctld $smd_version installed with apt ($(( SECONDS - t0 )) s); slurmctld -V: slurm $version"
fi

# ---- 3. slurm-gpupool against that release
t0=$SECONDS
# The configured tree: the release's source with the headers configure
# generated in the packages' build (the same options, so the same layouts).
C=/build/src/slurm-$version
rm -rf "$R$C" && mkdir -p "$R/build/src" && tar xf "$VENDOR/$tarball" -C "$R/build/src"
for h in config.h slurm/slurm_version.h; do cp -p "$R$B/$h" "$R$C/$h"; done
rm -rf "$R/build/gpupool" && bash "$REPO/scripts/copy-source.sh" "$R/build/gpupool" >/dev/null
gv=$(cd "$REPO" && dpkg-parsechangelog -S Version)+slurm$version
deb=/build/slurm-gpupool_${gv}_amd64.deb
# GPUPOOL_PKG_REUSE=1: the package a previous run built is used as it is.
[[ -n ${GPUPOOL_PKG_REUSE:-} && -f $R$deb ]] || { rm -f "$R"/build/slurm-gpupool_*
in_root sh -c "cd /build/gpupool && SLURM_SRC=$C DEB_BUILD_OPTIONS='nocheck parallel=2' DEB_BUILD_PROFILES=nocheck nice -n 10 dpkg-buildpackage -us -uc -b" \
  >"$LOGS/gpupool-build.log" 2>&1 || fail "dpkg-buildpackage of slurm-gpupool, log $LOGS/gpupool-build.log"; }
[[ -f $R$deb ]] || fail "no $deb"
dep=$(dpkg-deb -f "$R$deb" Depends)
[[ $dep == *"slurm-smd-slurmctld (= $smd_version)"* ]] || fail "Depends: $dep"
contents=$(dpkg-deb -c "$R$deb")
grep -q "\./usr/lib/$MA/slurm/priority_gpupool.so\$" <<<"$contents" || fail "no plugin in /usr/lib/$MA/slurm"
! grep -qE '\./etc/' <<<"$contents" || fail "the package ships a file in /etc"
pass "slurm-gpupool $gv built ($(( SECONDS - t0 )) s); Depends: $dep"

# What the package says it was built for: each plugin's plugin_version
# (slurmctld refuses a plugin whose number is not its own) and `gpupool
# version` of the packaged command, run in the root on its libslurm.
x=/build/gpupool-deb
rm -rf "$R$x" && dpkg-deb -x "$R$deb" "$R$x"
for p in priority preempt job_submit; do
  so=$R$x/usr/lib/$MA/slurm/${p}_gpupool.so
  [[ -f $so ]] || fail "no ${p}_gpupool.so in /usr/lib/$MA/slurm"
  a=$(nm -D --defined-only "$so" | awk '$3 == "plugin_version" { print $1 }')
  [[ -n $a ]] || fail "${p}_gpupool.so has no plugin_version"
  le=$(objdump -s --start-address="0x$a" --stop-address="$(printf '0x%x' $(( 0x$a + 4 )))" "$so" |
       awk '$1 ~ /^[0-9a-f]+$/ && length($2) == 8 { print $2; exit }')
  got=${le:6:2}${le:4:2}${le:2:2}${le:0:2}
  [[ $got == "$want" ]] || fail "${p}_gpupool.so: plugin_version 0x$got, Slurm $version is 0x$want"
done
ver=$(in_root env LD_LIBRARY_PATH=$x/usr/lib/$MA $x/usr/bin/gpupool version 2>&1) || fail "gpupool version: $ver"
grep -qxF "plugins:   built for Slurm $version, in /usr/lib/$MA/slurm (they load only into that release's slurmctld)" <<<"$ver" &&
  grep -qxF "command:   built against libslurm of Slurm $version" <<<"$ver" || fail "gpupool version: $ver"
pass "the plugins' plugin_version is 0x$want (Slurm $version); the packaged gpupool version, on this root's libslurm ($(readelf -d "$R$x/usr/bin/gpupool" | sed -n 's/.*Shared library: \[\(libslurm[^]]*\)\].*/\1/p')):"
printf '%s\n' "$ver" | sed 's/^/    /'
(( DEMO )) || { echo "package-test $REL: PASS"; exit 0; }

# ---- 4. installed, the demo on the installed files, removed
if [[ -n $LOCK ]]; then exec 9>"$LOCK"; log "waiting for $LOCK"; flock 9; fi
t0=$SECONDS
site_conf="# a site's own gpupool.conf: never replaced"
mkdir -p "$R/etc/slurm" && printf '%s\n' "$site_conf" >"$R/etc/slurm/gpupool.conf"
in_root apt-get install -y -qq --no-install-recommends "$deb" >"$LOGS/gpupool-install.log" 2>&1 ||
  fail "apt-get install $deb, log $LOGS/gpupool-install.log"
for f in /usr/lib/$MA/slurm/priority_gpupool.so /usr/lib/$MA/slurm/preempt_gpupool.so \
         /usr/lib/$MA/slurm/job_submit_gpupool.so /usr/bin/gpupool \
         /usr/share/doc/slurm-gpupool/examples/gpupool.conf.example \
         /usr/share/doc/slurm-gpupool/examples/grafana/gpupool.json; do
  [[ -e $R$f ]] || fail "$f not installed"
done
for m in "1 gpupool" "5 gpupool.conf" "8 gpupool"; do
  # shellcheck disable=SC2086
  [[ $(in_root man $m 2>/dev/null | wc -l) -gt 20 ]] || fail "man $m does not render"
done
pass "installed with apt ($(( SECONDS - t0 )) s): plugins in /usr/lib/$MA/slurm, gpupool, man pages, examples"

t0=$SECONDS
# SchedMD's debian/rules configures without --enable-multiple-slurmd, as a
# site runs one slurmd per host: the demo's six slurmd on this one host
# then need a NodeHostname each (scripts/cluster.sh GPUPOOL_NODE_HOSTNAMES).
hosts=shared
grep -q '^#define MULTIPLE_SLURMD' "$R$S/obj-x86_64-linux-gnu/config.h" || hosts=distinct
log "demo.sh --installed in the root (GPUPOOL_NODE_HOSTNAMES=$hosts, log $LOGS/demo.log)"
in_root env GPUPOOL_SKIP_DEPS=1 GPUPOOL_SLURM_PLUGIN_DIR=/usr/lib/$MA/slurm GPUPOOL_NODE_HOSTNAMES=$hosts \
  bash -c 'cd /build/gpupool && bash scripts/demo.sh --installed' >"$LOGS/demo.log" 2>&1 ||
  { tail -n 30 "$LOGS/demo.log" >&2; fail "the demo failed on the installed package, log $LOGS/demo.log"; }
ctld_log=$R/var/tmp/gpupool-cluster/log/slurmctld.log
grep -q "priority/gpupool: gpupool [0-9.]*, built for Slurm $version\$" "$ctld_log" ||
  fail "slurmctld's log does not name Slurm $version at load"
grep -q "PluginDir=/usr/lib/$MA/slurm\$" "$R/var/tmp/gpupool-cluster/etc/slurm.conf" || fail "not the installed plugin dir"
ver=$(in_root env SLURM_CONF=/var/tmp/gpupool-cluster/etc/slurm.conf gpupool version) ||
  fail "gpupool version: $ver"
grep -qx "slurmctld: Slurm $version, the plugins' release" <<<"$ver" || fail "gpupool version: $ver"
st=$(in_root env SLURM_CONF=/var/tmp/gpupool-cluster/etc/slurm.conf gpupool status 2>&1) && grep -q '^pool1 ' <<<"$st" ||
  fail "gpupool status: $st"
pass "the demo ran on the installed files against slurm-smd-slurmctld $smd_version ($(( SECONDS - t0 )) s, $(grep -c 'gpupool: preempt' "$LOGS/demo.log" || true) preemptions logged); slurmctld: '$(grep -o "priority/gpupool: gpupool .*" "$ctld_log" | head -n1)'"
printf '%s\n' "$ver" | sed 's/^/    /'
in_root bash /build/gpupool/scripts/cluster.sh down >/dev/null 2>&1

t0=$SECONDS
in_root apt-get remove -y -qq slurm-gpupool >"$LOGS/gpupool-remove.log" 2>&1 || fail "apt-get remove slurm-gpupool"
left=$(in_root dpkg -L slurm-gpupool 2>/dev/null | grep -v '^/\.$' || true)
[[ -z $left ]] || fail "dpkg still lists files of slurm-gpupool: $left"
for f in /usr/lib/$MA/slurm/priority_gpupool.so /usr/bin/gpupool /usr/share/doc/slurm-gpupool; do
  [[ ! -e $R$f ]] || fail "$f left after removal"
done
[[ $(cat "$R/etc/slurm/gpupool.conf") == "$site_conf" ]] || fail "the site's gpupool.conf changed"
pass "removed ($(( SECONDS - t0 )) s): nothing of the package left, the site's /etc/slurm/gpupool.conf untouched"
exec 9>&- 2>/dev/null || true
echo "package-test $REL: PASS"
