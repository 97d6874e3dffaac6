#!/usr/bin/env bash
# The RPM (slurm-gpupool.spec) on Debian 12, with Debian's rpm package
# (apt-get install rpm): what can be checked without a RHEL system.
#   1. rpmbuild -ba against a Slurm release's tarball (checked against
#      scripts/slurm-releases.sha256), the gpupool command against that
#      release's libslurm in GPUPOOL_SLURM_PREFIX (scripts/build-slurm.sh's
#      /opt/slurm/X.Y: this machine has no slurm-devel RPM, hence --nodeps);
#   2. rpm -qlp: the plugins in /usr/lib64/slurm, the command, the library,
#      the man pages, the examples and the dashboard, and nothing in /etc;
#      rpm -qp --requires: slurm-slurmctld = X.Y.Z exactly;
#   3. rpm --root into a scratch root (a directory with only what the
#      scriptlets run: /sbin/ldconfig, and a site's /etc/slurm/gpupool.conf),
#      --nodeps (no Slurm RPM in it): installed files where the file list
#      says, the %post ldconfig made the library's cache, then rpm -e:
#      nothing of the package left, the site's gpupool.conf untouched.
#   scripts/rpm-test.sh [RELEASE]            (default 26.05; as root)
#   scripts/rpm-test.sh --check RPM RELEASE  (steps 2 and 3 on a built RPM)
# Environment: GPUPOOL_SLURM_VENDOR (default ../shared/vendor/slurm),
#   GPUPOOL_SLURM_PREFIX (default /opt/slurm/RELEASE), GPUPOOL_RPM_DIR
#   (rpmbuild's _topdir, default /var/tmp/gpupool-rpm).
# Prints "rpm-test: PASS ..." per step, last "rpm-test: PASS" or FAIL (why).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fail() { echo "rpm-test: FAIL ($*)"; exit 1; }
pass() { echo "rpm-test: PASS $*"; }
command -v rpmbuild >/dev/null || fail "no rpmbuild: apt-get install rpm"
rpmfile=''
if [[ ${1:-} == --check ]]; then
  rpmfile=${2:?usage: $0 --check RPM RELEASE}; REL=${3:?usage: $0 --check RPM RELEASE}
else
  REL=${1:-26.05}
fi
line=$(grep -E "  slurm-$REL\.[0-9]+\.tar\.(xz|bz2)\$" "$REPO/scripts/slurm-releases.sha256" | tail -n1) ||
  fail "no Slurm $REL in scripts/slurm-releases.sha256"
tarball=${line##* }
version=${tarball#slurm-}; version=${version%.tar.*}

if [[ -z $rpmfile ]]; then
  VENDOR=${GPUPOOL_SLURM_VENDOR:-$REPO/../shared/vendor/slurm}
  PREFIX=${GPUPOOL_SLURM_PREFIX:-/opt/slurm/$REL}
  T=${GPUPOOL_RPM_DIR:-/var/tmp/gpupool-rpm}
  [[ -f $PREFIX/include/slurm/slurm.h ]] || fail "no Slurm $REL in $PREFIX (scripts/build-slurm.sh $REL)"
  (cd "$VENDOR" && sha256sum -c --quiet <<<"$line") || fail "$VENDOR/$tarball: checksum"
  rm -rf "$T" && mkdir -p "$T/SOURCES"
  cp "$VENDOR/$tarball" "$T/SOURCES/"
  gv=$(sed -n 's/^Version: *//p' "$REPO/slurm-gpupool.spec")
  (cd "$REPO" && git archive --prefix="slurm-gpupool-$gv/" HEAD) | gzip >"$T/SOURCES/slurm-gpupool-$gv.tar.gz"
  t0=$SECONDS
  nice -n 10 rpmbuild -ba --nodeps --define "_topdir $T" --define "slurm_version $version" \
    --define "slurm_tarball $tarball" --define "slurm_prefix $PREFIX" --define "_smp_mflags -j2" \
    "$REPO/slurm-gpupool.spec" >"$T/rpmbuild.log" 2>&1 || { tail -20 "$T/rpmbuild.log" >&2; fail "rpmbuild -ba, log $T/rpmbuild.log"; }
  rpmfile=$(ls "$T"/RPMS/x86_64/slurm-gpupool-"$gv"-1.slurm"$version"*.x86_64.rpm | head -n1)
  pass "rpmbuild -ba in $(( SECONDS - t0 )) s: $(basename "$rpmfile") and $(basename "$(ls "$T"/SRPMS/*.src.rpm)")"
fi

# ---- 2. the file list and the dependencies
files=$(rpm -qlp "$rpmfile")
for f in /usr/lib64/slurm/priority_gpupool.so /usr/lib64/slurm/preempt_gpupool.so \
         /usr/lib64/slurm/job_submit_gpupool.so /usr/bin/gpupool \
         /usr/share/doc/slurm-gpupool/examples/gpupool.conf.example \
         /usr/share/doc/slurm-gpupool/examples/grafana/gpupool.json; do
  grep -qxF "$f" <<<"$files" || fail "rpm -qlp lists no $f"
done
grep -qE '^/usr/lib64/libgpupool\.so\.[0-9]+$' <<<"$files" || fail "no libgpupool.so.N"
# Compressed on RHEL (brp-compress), not by Debian's rpm.
for m in man1/gpupool.1 man5/gpupool.conf.5 man8/gpupool.8; do
  grep -qE "^/usr/share/man/$m(\.gz)?\$" <<<"$files" || fail "rpm -qlp lists no /usr/share/man/$m"
done
! grep -q '^/etc/' <<<"$files" || fail "the package has files in /etc: $(grep '^/etc/' <<<"$files")"
! grep -qE '\.la$|/include/' <<<"$files" || fail "development files in the package"
reqs=$(rpm -qp --requires "$rpmfile")
grep -qx "slurm-slurmctld(x86-64) = $version" <<<"$reqs" || fail "Requires: $(tr '\n' ' ' <<<"$reqs")"
pass "rpm -qlp: $(grep -c . <<<"$files") paths, the plugins in /usr/lib64/slurm: $(grep '^/usr/lib64/slurm/' <<<"$files" | xargs -n1 basename | tr '\n' ' ')"
pass "rpm -qp --requires: slurm-slurmctld(x86-64) = $version, slurm(x86-64) = $version"
# What dnf would have to resolve on RHEL, checked against the release's
# own slurm.spec (the packages a site builds with rpmbuild -ta): the
# packages the spec names exist there, under those names, and install the
# plugins into the same %{_libdir}/slurm.
VENDOR=${GPUPOOL_SLURM_VENDOR:-$REPO/../shared/vendor/slurm}
if [[ -f $VENDOR/$tarball ]]; then
  sspec=$(tar xOf "$VENDOR/$tarball" "slurm-$version/slurm.spec") || fail "no slurm.spec in $tarball"
  [[ $(sed -n 's/^Version:[[:space:]]*//p' <<<"$sspec") == "$version" ]] || fail "slurm.spec of $tarball is not Version $version"
  for p in slurmctld devel; do grep -qx "%package $p" <<<"$sspec" || fail "slurm.spec of $tarball has no slurm-$p"; done
  grep -qxF '%{_libdir}/slurm/*.so' <<<"$sspec" || fail "slurm.spec of $tarball: plugins not in %{_libdir}/slurm"
  srpm=$(ls "${rpmfile%/RPMS/*}"/SRPMS/slurm-gpupool-*.slurm"$version"*.src.rpm 2>/dev/null | head -n1 || true)
  if [[ -n $srpm ]]; then
    rpm -qp --requires "$srpm" 2>/dev/null | grep -qx "slurm-devel = $version" ||
      fail "BuildRequires of $(basename "$srpm"): no slurm-devel = $version"
  fi
  pass "$tarball's slurm.spec: Version $version, packages slurm, slurm-slurmctld and slurm-devel${srpm:+ (BuildRequires of the SRPM: slurm-devel = $version)}, plugins in %{_libdir}/slurm"
fi
sonames=$(grep -oE '^libslurm\.so\.[0-9]+' <<<"$reqs" || true)
[[ $(wc -l <<<"$sonames") == 1 && -n $sonames ]] || fail "Requires: no single libslurm.so.N: $sonames"
PREFIX=${PREFIX:-${GPUPOOL_SLURM_PREFIX:-/opt/slurm/$REL}}
if [[ -d $PREFIX/lib ]]; then
  [[ -e $PREFIX/lib/$sonames ]] || fail "$sonames: not the soname of Slurm $version's libslurm ($(ls "$PREFIX"/lib/libslurm.so.* | xargs -n1 basename | tr '\n' ' '))"
fi
# No RPATH or RUNPATH in any ELF file (RHEL's check-rpaths would refuse
# /usr/lib64; a build prefix must not reach the target).
X=$(mktemp -d /var/tmp/gpupool-rpmx.XXXXXX)
rpm2archive - <"$rpmfile" | tar -C "$X" -xzf - || { rm -rf "$X"; fail "rpm2archive $rpmfile"; }
rp=$(find "$X" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec sh -c 'readelf -d "$1" 2>/dev/null | grep -E "\((RPATH|RUNPATH)\)" | sed "s|^|$1: |"' _ {} \; | sed "s|$X||")
rm -rf "$X"
[[ -z $rp ]] || fail "RPATH/RUNPATH in the package: $rp"
pass "auto Requires: $sonames (Slurm $version's libslurm), libjansson, libmicrohttpd, libc; no RPATH or RUNPATH in its ELF files"

# ---- 3. rpm --root install and removal in a scratch root
S=$(mktemp -d /var/tmp/gpupool-rpmroot.XXXXXX)
trap 'rm -rf "$S"' EXIT
mkdir -p "$S/sbin" "$S/etc/slurm" "$S/usr/lib64"
cp /sbin/ldconfig "$S/sbin/ldconfig"   # static: the %post and %postun scriptlets
# RHEL's ldconfig searches /usr/lib64 by itself; Debian's (multiarch) is told.
echo /usr/lib64 >"$S/etc/ld.so.conf"
site="# a site's own gpupool.conf: never replaced"
printf '%s\n' "$site" >"$S/etc/slurm/gpupool.conf"
out=$(rpm --root "$S" --nodeps -ivh "$rpmfile" 2>&1) || fail "rpm --root -i: $out"
[[ $(rpm --root "$S" -q slurm-gpupool) == "$(rpm -qp "$rpmfile" 2>/dev/null)" ]] || fail "rpm -q in the root"
while read -r f; do [[ -e $S$f ]] || fail "$f not installed"; done <<<"$files"
lib=$(grep -E '^/usr/lib64/libgpupool\.so\.[0-9]+$' <<<"$files")
[[ -f $S/etc/ld.so.cache ]] && strings "$S/etc/ld.so.cache" | grep -qF "$lib" ||
  fail "the %post ldconfig did not put $lib in the root's ld.so.cache"
rpm --root "$S" -V --nodeps slurm-gpupool || fail "rpm -V in the root"
pass "rpm --root install: $(grep -c . <<<"$files") paths in place, rpm -V --nodeps clean, %post ldconfig cached $(basename "$lib")"
out=$(rpm --root "$S" -e slurm-gpupool 2>&1) || fail "rpm --root -e: $out"
left=$(find "$S" -path "$S/var/lib/rpm" -prune -o -path "$S/usr/lib/sysimage" -prune -o -path "$S/root/.rpmdb" -prune -o \
         \( -type f -o -type l \) -print | sed "s|^$S||" | grep -vxE '/sbin/ldconfig|/etc/slurm/gpupool.conf|/etc/ld.so.cache|/etc/ld.so.conf' || true)
[[ -z $left ]] || fail "left after rpm -e: $left"
[[ $(cat "$S/etc/slurm/gpupool.conf") == "$site" ]] || fail "the site's gpupool.conf changed"
! strings "$S/etc/ld.so.cache" | grep -qF "$lib" || fail "the %postun ldconfig left $lib in the cache"
pass "rpm --root -e: nothing of the package left, the site's /etc/slurm/gpupool.conf untouched, %postun ldconfig dropped it"
echo "rpm-test: PASS"
