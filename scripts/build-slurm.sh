#!/usr/bin/env bash
# Build one vendored Slurm release (../shared/vendor/slurm) into its own
# prefix, with munge auth and slurmdbd's MySQL/MariaDB accounting, so the
# local cluster (scripts/cluster.sh) can run that release and the plugins can
# be compiled against its configured source tree.
#
#   usage: scripts/build-slurm.sh VERSION [--prefix DIR] [--src-root DIR]
#                                 [--vendor DIR] [--jobs N]
#     VERSION   23.11, 24.11, 25.11, 26.05 or a full X.Y.Z with a tarball
#     --prefix  install prefix (default /opt/slurm/X.Y); sysconfdir PREFIX/etc
#     --src-root where the configured source is kept (default /opt/slurm/src):
#               SRC_ROOT/slurm-X.Y.Z, never inside the git tree; it belongs
#               to one prefix (a second prefix of the same release needs
#               its own --src-root)
#     --vendor  directory with slurm-X.Y.Z.tar.xz and SHA256SUMS
#               (default: GPUPOOL_SLURM_VENDOR or <repo>/../shared/vendor/slurm)
#     --jobs    make -j N (default: nproc)
#
# The tarball is verified against SHA256SUMS first. A finished build records
# the tarball's sha256 and the configure flags in PREFIX/.gpupool-build; a
# later run with the same checksum and flags returns at once. Heavy: about
# N min on 2 cores, so run it under `nice -n 19` on a shared machine.
# The last two lines of stdout are SLURM_PREFIX=... and SLURM_SOURCE=...
# (eval-able); everything else goes to stderr.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAMP_NAME=.gpupool-build

log() { echo "build-slurm: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit "${1:-2}"; }

version='' prefix='' src_root=/opt/slurm/src jobs=''
vendor=${GPUPOOL_SLURM_VENDOR:-$REPO/../shared/vendor/slurm}
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix)   [[ $# -ge 2 ]] || die "--prefix needs a directory"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --src-root) [[ $# -ge 2 ]] || die "--src-root needs a directory"; src_root=$2; shift 2 ;;
    --src-root=*) src_root=${1#*=}; shift ;;
    --vendor)   [[ $# -ge 2 ]] || die "--vendor needs a directory"; vendor=$2; shift 2 ;;
    --vendor=*) vendor=${1#*=}; shift ;;
    --jobs|-j)  [[ $# -ge 2 ]] || die "--jobs needs a number"; jobs=$2; shift 2 ;;
    --jobs=*)   jobs=${1#*=}; shift ;;
    -h|--help)  usage 0 ;;
    -*)         die "unknown option '$1' (see --help)" ;;
    *)          [[ -z $version ]] || die "one VERSION only (got '$version' and '$1')"
                version=$1; shift ;;
  esac
done
[[ -n $version ]] || { log "VERSION missing"; usage 2; }
[[ -z $jobs || $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs: '$jobs' is not a positive number"
jobs=${jobs:-$(nproc)}
[[ -d $vendor ]] || die "vendor directory $vendor not found (set --vendor or GPUPOOL_SLURM_VENDOR)"
vendor=$(cd "$vendor" && pwd)
[[ -f $vendor/SHA256SUMS ]] || die "$vendor/SHA256SUMS not found"

# Short release (26.05) -> the full version of the vendored tarball.
case $version in
  [0-9][0-9].[0-9][0-9])
    full=$(cd "$vendor" && ls slurm-"$version".*.tar.xz 2>/dev/null \
             | sed -n 's/^slurm-\([0-9.]*\)\.tar\.xz$/\1/p' | sort -V | tail -n 1 || true)
    [[ -n $full ]] || die "no tarball slurm-$version.*.tar.xz in $vendor" ;;
  [0-9][0-9].[0-9][0-9].[0-9]*)
    full=$version ;;
  *) die "VERSION '$version' is not X.Y or X.Y.Z (e.g. 26.05 or 26.05.3)" ;;
esac
release=${full%.*}                         # 26.05.3 -> 26.05
case $release in
  23.11|24.11|25.11|26.05) ;;
  *) die "release $release is not one gpupool supports (23.11, 24.11, 25.11, 26.05)" ;;
esac
tarball=slurm-$full.tar.xz
[[ -f $vendor/$tarball ]] || die "$vendor/$tarball not found"
prefix=${prefix:-/opt/slurm/$release}
[[ $prefix == /* ]] || prefix=$(pwd)/$prefix
[[ $src_root == /* ]] || src_root=$(pwd)/$src_root
src=$src_root/slurm-$full
case $src/ in "$REPO"/*) die "--src-root must be outside the git tree ($REPO)" ;; esac

# --enable-multiple-slurmd: the local cluster runs several slurmd on one host
# (Debian builds 22.05 with it too). --with-mysql_config: fail at configure
# instead of silently skipping accounting_storage/mysql.
mysql_config=$(command -v mysql_config || command -v mariadb_config || true)
mysql_bin=$(dirname "${mysql_config:-/usr/bin/mysql_config}")
flags=(--prefix="$prefix" --sysconfdir="$prefix/etc" --with-munge
       --enable-multiple-slurmd --disable-debug --with-mysql_config="$mysql_bin")
# Only to build faster, so not in the stamp (a build without them serves as
# well): no static archives (slurmctld loads only the .so files, and Slurm's
# own slurm.spec deletes the .a files: each source was compiled twice), no
# dependency tracking (a one-off build), no slurmrestd or sview (the local
# cluster runs neither; each is built only where its libraries are installed).
fast_flags=(--disable-static --disable-dependency-tracking --disable-slurmrestd
            --disable-sview)

# Verify the tarball before trusting a stamp or unpacking anything.
want=$(awk -v f="$tarball" '$2 == f || $2 == "*" f {print $1}' "$vendor/SHA256SUMS")
[[ -n $want ]] || die "$tarball is not listed in $vendor/SHA256SUMS"
got=$(sha256sum "$vendor/$tarball" | cut -d' ' -f1)
[[ $got == "$want" ]] || die "$tarball: sha256 $got does not match SHA256SUMS ($want)"

stamp_text="sha256=$got flags=${flags[*]} src=$src"
print_result() { echo "SLURM_PREFIX=$prefix"; echo "SLURM_SOURCE=$src"; }
is_built() {
  [[ -f $prefix/$STAMP_NAME && $(cat "$prefix/$STAMP_NAME") == "$stamp_text" \
     && -x $prefix/sbin/slurmctld && -f $src/config.h && -f $src/slurm/slurm_version.h ]]
}
if is_built; then
  log "$full already built in $prefix"
  print_result
  exit 0
fi

for tool in make gcc xz; do
  command -v $tool >/dev/null || die "$tool missing: run scripts/install-deps.sh"
done
[[ -n $mysql_config ]] \
  || die "mysql_config/mariadb_config missing (libmariadb-dev): run scripts/install-deps.sh"
[[ -f /usr/include/munge.h ]] || die "munge.h missing (libmunge-dev): run scripts/install-deps.sh"

# One build per prefix at a time; a second caller waits and then finds the stamp.
mkdir -p "$prefix" "$src_root"
exec 9>"$prefix.build.lock"
flock 9
if is_built; then
  log "$full already built in $prefix (by a concurrent run)"
  print_result
  exit 0
fi

# The configured tree belongs to one prefix (plugins of that install are
# built against it): never wipe another prefix's tree.
if [[ -f $src/.gpupool-prefix && $(cat "$src/.gpupool-prefix") != "$prefix" ]]; then
  die "$src is the configured tree of the build in $(cat "$src/.gpupool-prefix"); use --src-root DIR for a second build of $full"
fi

buildlog=$src_root/slurm-$full.build.log
log "building Slurm $full (sha256 ok) into $prefix, source $src, make -j$jobs; log: $buildlog"
: > "$buildlog"
run() {   # run a step quietly, show the log's tail if it fails
  if ! "$@" >> "$buildlog" 2>&1; then
    tail -n 40 "$buildlog" >&2
    die "'$*' failed in $(pwd) (full log: $buildlog)"
  fi
}
t_all=$SECONDS

# Unpack fresh (a tree from another tarball or a half-finished build is not
# trusted), into a temporary name first so $src is always whole.
rm -f "$prefix/$STAMP_NAME"
rm -rf "$src" "$src.unpack"
mkdir -p "$src.unpack"
run tar -xJf "$vendor/$tarball" -C "$src.unpack"
[[ -d $src.unpack/slurm-$full ]] || die "$tarball did not contain slurm-$full/"
mv "$src.unpack/slurm-$full" "$src"
rmdir "$src.unpack"
echo "$prefix" > "$src/.gpupool-prefix"

cd "$src"
t=$SECONDS
run ./configure "${flags[@]}" "${fast_flags[@]}"
log "configure: $((SECONDS - t)) s"
# Configure only warns when a dependency is missing; check the plugins the
# local cluster needs are really going to be built.
grep -q "^WITH_MYSQL_TRUE=''" config.log \
  || die "configure did not enable MySQL accounting (accounting_storage/mysql); see $src/config.log"
grep -q "^WITH_MUNGE_TRUE=''" config.log \
  || die "configure did not enable munge (auth/munge); see $src/config.log"

t=$SECONDS
run make -j"$jobs"
log "make: $((SECONDS - t)) s"
t=$SECONDS
run make -j"$jobs" install
log "make install: $((SECONDS - t)) s"

for p in accounting_storage_mysql auth_munge accounting_storage_slurmdbd; do
  [[ -f $prefix/lib/slurm/$p.so ]] || die "$prefix/lib/slurm/$p.so was not installed"
done
echo "$stamp_text" > "$prefix/$STAMP_NAME"
log "Slurm $full built in $((SECONDS - t_all)) s ($(( (SECONDS - t_all) / 60 )) min $(( (SECONDS - t_all) % 60 )) s)"
print_result
