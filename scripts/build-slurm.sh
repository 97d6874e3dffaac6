#!/usr/bin/env bash
# Build one Slurm release from its source tarball into its own prefix, with
# munge auth and slurmdbd's MySQL/MariaDB accounting, so the local cluster
# (scripts/cluster.sh) can run that release and the plugins can be compiled
# against its configured source tree.
#
#   usage: scripts/build-slurm.sh VERSION [--prefix DIR] [--src-root DIR]
#                                 [--vendor DIR] [--jobs N]
#     VERSION   23.11, 24.11, 25.11, 26.05 or a full X.Y.Z listed in
#               scripts/slurm-releases.sha256
#     --prefix  install prefix (default ROOT/X.Y); sysconfdir PREFIX/etc
#     --src-root where the configured source is kept (default ROOT/src):
#               SRC_ROOT/slurm-X.Y.Z, never inside the git tree; it belongs
#               to one prefix (a second prefix of the same release needs
#               its own --src-root)
#     --vendor  directory with the tarballs (slurm-X.Y.Z.tar.xz)
#               (default: GPUPOOL_SLURM_VENDOR or <repo>/../shared/vendor/slurm)
#     --jobs    make -j N (default: nproc)
#   ROOT is GPUPOOL_SLURM_ROOT, default /opt/slurm (a scratch root lets a
#   test of the whole CI, scripts/run-tests.sh, build Slurm from nothing on
#   a machine that has a build in /opt/slurm).
#
# The tarball comes from the vendor directory when it holds it, else from
# a download (GPUPOOL_SLURM_URL/NAME, default SchedMD's download site
# https://download.schedmd.com/slurm; GPUPOOL_SLURM_DOWNLOAD=0: never),
# kept in SRC_ROOT/downloads. Either way it is verified against the
# checksum committed in scripts/slurm-releases.sha256 before anything
# trusts it; a tarball not listed there is refused. Exit status 3: no
# tarball could be had (no vendor directory holding it, no download): the
# caller may skip that release. A finished build records
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

ROOT=${GPUPOOL_SLURM_ROOT:-/opt/slurm}
version='' prefix='' src_root=$ROOT/src jobs=''
vendor=${GPUPOOL_SLURM_VENDOR:-$REPO/../shared/vendor/slurm}
SUMS=$REPO/scripts/slurm-releases.sha256
url=${GPUPOOL_SLURM_URL:-https://download.schedmd.com/slurm}
url=${url%/}
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
[[ -f $SUMS ]] || die "$SUMS not found"
# Tarball names with a committed checksum, in the file's order.
listed=$(awk '!/^[[:space:]]*(#|$)/ && NF == 2 { n = $2; sub(/^\*/, "", n); print n }' "$SUMS")

# Short release (26.05) -> the newest full version listed for it.
case $version in
  [0-9][0-9].[0-9][0-9])
    full=$(sed -n "s/^slurm-\($version\.[0-9]*\)\.tar\.[a-z0-9]*\$/\1/p" <<<"$listed" | sort -V | tail -n 1)
    [[ -n $full ]] || die "no Slurm $version tarball listed in $SUMS" ;;
  [0-9][0-9].[0-9][0-9].[0-9]*)
    full=$version ;;
  *) die "VERSION '$version' is not X.Y or X.Y.Z (e.g. 26.05 or 26.05.3)" ;;
esac
release=${full%.*}                         # 26.05.3 -> 26.05
case $release in
  23.11|24.11|25.11|26.05) ;;
  *) die "release $release is not one gpupool supports (23.11, 24.11, 25.11, 26.05)" ;;
esac
names=$(grep -E "^slurm-${full//./\\.}\.tar\.[a-z0-9]+\$" <<<"$listed" || true)
[[ -n $names ]] || die "no tarball of Slurm $full listed in $SUMS (add its name and sha256 there)"
[[ $src_root == /* ]] || src_root=$(pwd)/$src_root

prefix=${prefix:-$ROOT/$release}
[[ $prefix == /* ]] || prefix=$(pwd)/$prefix
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

want_sha() { awk -v f="$1" '!/^[[:space:]]*#/ && ($2 == f || $2 == "*" f) { print $1 }' "$SUMS"; }
stamp_for() { echo "sha256=$1 flags=${flags[*]} src=$src"; }
print_result() { echo "SLURM_PREFIX=$prefix"; echo "SLURM_SOURCE=$src"; }
is_built() {   # is_built SHA256: built from the tarball with that checksum
  [[ -f $prefix/$STAMP_NAME && $(cat "$prefix/$STAMP_NAME") == "$(stamp_for "$1")" \
     && -x $prefix/sbin/slurmctld && -f $src/config.h && -f $src/slurm/slurm_version.h ]]
}
# A finished build from a tarball with a committed checksum needs no tarball.
for name in $names; do
  if is_built "$(want_sha "$name")"; then
    log "$full already built in $prefix (from $name)"
    print_result
    exit 0
  fi
done

# sha_ok FILE NAME: FILE's sha256 is the one committed for NAME.
sha_ok() {
  local want got
  want=$(want_sha "$2")
  got=$(sha256sum "$1" | cut -d' ' -f1)
  [[ -n $want && $got == "$want" ]] && return 0
  log "$1: sha256 $got is not the one committed for $2 (${want:-none}) in $SUMS"
  return 1
}
# fetch URL FILE: download, quietly; false (with curl's reason) if it fails.
fetch() {
  if command -v curl >/dev/null; then
    curl -fsSL --retry 2 --connect-timeout 20 -o "$2" "$1" 2>&1 | tail -n 1 >&2
    return "${PIPESTATUS[0]}"
  elif command -v wget >/dev/null; then
    wget -q --tries=2 --timeout=20 -O "$2" "$1"
  else
    log "neither curl nor wget installed"; return 1
  fi
}

# The tarball: from the vendor directory, else a verified earlier download,
# else a download now.
tarball='' tarball_path=''
for name in $names; do
  [[ -f $vendor/$name ]] || continue
  sha_ok "$vendor/$name" "$name" || die "$vendor/$name does not match its committed checksum: refusing it"
  tarball=$name tarball_path=$(cd "$vendor" && pwd)/$name
  log "tarball $tarball_path (sha256 ok)"
  break
done
downloads=$src_root/downloads
if [[ -z $tarball ]]; then
  for name in $names; do
    if [[ -f $downloads/$name ]] && sha_ok "$downloads/$name" "$name"; then
      tarball=$name tarball_path=$downloads/$name
      log "tarball $tarball_path (downloaded before, sha256 ok)"
      break
    fi
  done
fi
why=''
if [[ -z $tarball && ${GPUPOOL_SLURM_DOWNLOAD:-1} != 0 ]]; then
  mkdir -p "$downloads"
  for name in $names; do
    log "downloading $url/$name"
    rm -f "$downloads/$name.part"
    if ! fetch "$url/$name" "$downloads/$name.part"; then
      rm -f "$downloads/$name.part"
      why+="; the download of $url/$name failed"
      continue
    fi
    sha_ok "$downloads/$name.part" "$name" || { rm -f "$downloads/$name.part"; die "the download of $url/$name does not match its committed checksum: refusing it"; }
    mv "$downloads/$name.part" "$downloads/$name"
    tarball=$name tarball_path=$downloads/$name
    log "tarball $tarball_path (downloaded, sha256 ok)"
    break
  done
elif [[ -z $tarball ]]; then
  why="; downloads are off (GPUPOOL_SLURM_DOWNLOAD=0)"
fi
if [[ -z $tarball ]]; then
  log "SKIP Slurm $full: no source tarball: $(echo $names | sed 's/ /, /g') not in $(realpath -m "$vendor") (set GPUPOOL_SLURM_VENDOR to a directory holding it)$why"
  exit 3
fi
got=$(want_sha "$tarball")
stamp_text=$(stamp_for "$got")

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
if is_built "$got"; then
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
run tar -xf "$tarball_path" -C "$src.unpack"
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
