#!/usr/bin/env bash
# Fetch Debian's Slurm source (same version as the installed slurmctld) and
# configure it exactly like Debian's build, so plugins compiled against its
# headers + config.h match the struct layouts of /usr/sbin/slurmctld.
#   usage: scripts/fetch-slurm-source.sh [DIR]   (default: <repo>/slurm-src)
# Needs only Debian's apt registry. Prints DIR on the last line of stdout.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-$REPO/slurm-src}
STAMP=.gpupool-slurm-version   # written after a successful configure

log() { echo "fetch-slurm-source: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (apt-get source / update)"
command -v dpkg-source >/dev/null || die "dpkg-dev missing: run scripts/install-deps.sh"

# Keep the source tree out of git. Only append missing lines: other people
# edit .gitignore too.
ensure_gitignore() {
  local gi=$REPO/.gitignore line
  touch "$gi"
  for line in '/slurm-src/' 'Makefile.in' 'Makefile' 'aclocal.m4' 'autom4te.cache/' \
              'compile' 'config.guess' 'config.sub' 'config.h' 'config.h.in' \
              'config.log' 'config.status' 'configure' 'configure~' 'depcomp' \
              'install-sh' 'libtool' 'ltmain.sh' 'missing' 'test-driver' 'stamp-h1' \
              '/m4/libtool.m4' '/m4/lt*.m4' '.deps/' '.libs/' '.dirstamp' \
              '*.o' '*.lo' '*.la' '*.so' '*.log' '*.trs'; do
    grep -qxF -- "$line" "$gi" || echo "$line" >> "$gi"
  done
}
[[ $DIR == "$REPO/slurm-src" ]] && ensure_gitignore

want=$(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null) \
  || die "slurmctld is not installed: run scripts/install-deps.sh first"

# Fast path: already fetched and configured for this exact version.
if [[ -f $DIR/config.h && -f $DIR/$STAMP && $(cat "$DIR/$STAMP") == "$want" ]]; then
  log "$DIR already configured for slurm-wlm $want"
  echo "$DIR"
  exit 0
fi

# Enable deb-src for Debian's own repositories only (deb822 and legacy).
changed=0
for f in /etc/apt/sources.list.d/debian.sources; do
  [[ -f $f ]] || continue
  if [[ -n $(grep -E '^Types:' "$f" | grep -vE '\bdeb-src\b' || true) ]]; then
    sed -i -E '/^Types:/{/\bdeb-src\b/!s/$/ deb-src/}' "$f"
    changed=1
  fi
done
if [[ -f /etc/apt/sources.list ]]; then
  # Add a deb-src twin for each active "deb" line pointing at a Debian mirror.
  while IFS= read -r l; do
    src="deb-src${l#deb}"
    grep -qxF -- "$src" /etc/apt/sources.list || { echo "$src" >> /etc/apt/sources.list; changed=1; }
  done < <(grep -E '^deb\s+(\[[^]]*\]\s+)?\S*debian' /etc/apt/sources.list || true)
fi
# (no `cmd | grep -q` here: with pipefail, grep's early exit SIGPIPEs cmd)
srcvers() { apt-cache showsrc slurm-wlm 2>/dev/null | sed -n 's/^Version: //p' | sort -u; }
if [[ $changed -eq 1 || -z $(srcvers) ]]; then
  log "apt-get update (deb-src enabled)"
  apt-get update -qq
fi

# Ask for exactly the installed version so headers match the binaries.
have=$(srcvers)
grep -qxF -- "$want" <<<"$have" \
  || die "source slurm-wlm=$want not available from apt (have: ${have//$'\n'/ })"

tmp=$(mktemp -d /var/tmp/slurm-src.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# _apt must be able to write the download dir, else apt warns about sandboxing.
chown _apt "$tmp" 2>/dev/null || true
log "apt-get source slurm-wlm=$want"
(cd "$tmp" && apt-get source -qq "slurm-wlm=$want" >/dev/null 2>"$tmp/apt.err") \
  || { cat "$tmp/apt.err" >&2; die "apt-get source failed"; }
tree=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'slurm-wlm-*' | head -n1)
[[ -n $tree && -f $tree/debian/changelog ]] || die "no unpacked tree in $tmp"
got=$(cd "$tree" && dpkg-parsechangelog -S Version)
[[ $got == "$want" ]] || die "source version $got != installed slurmctld $want"

# Replace DIR, but only if it is (an earlier copy of) a Slurm tree.
if [[ -e $DIR ]]; then
  [[ -f $DIR/META && -d $DIR/src/slurmctld ]] \
    || die "$DIR exists and is not a Slurm source tree; refusing to delete it"
  rm -rf "$DIR"
fi
mkdir -p "$(dirname "$DIR")"
mv "$tree" "$DIR"
chown -R root:root "$DIR"

# Same flags as Debian: dh_auto_configure's defaults + debian/rules'
# override_dh_auto_configure (first, non-emulator build), and the
# dpkg-buildflags hardening env (DEB_BUILD_MAINT_OPTIONS from debian/rules).
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
gnu=$(dpkg-architecture -qDEB_BUILD_GNU_TYPE)
flags=(
  --build="$gnu" --prefix=/usr --includedir=/usr/include --mandir=/usr/share/man
  --infodir=/usr/share/info --sysconfdir=/etc --localstatedir=/var
  --disable-option-checking --disable-silent-rules --libdir="/usr/lib/$ma"
  --runstatedir=/run --disable-maintainer-mode --disable-dependency-tracking
  --sysconfdir=/etc/slurm --with-munge --enable-pam --without-rpath
  --disable-debug --enable-multiple-slurmd
  SUCMD=/bin/su SLEEP_CMD=/bin/sleep
)
# PMIx only changes the mpi/pmix plugin; pass it when the lib is present.
[[ -d /usr/lib/$ma/pmix2 ]] && flags+=(--with-pmix="/usr/lib/$ma/pmix2")
# Debian's rules adds --enable-deprecated only on 32-bit.
[[ $(dpkg-architecture -qDEB_HOST_ARCH_BITS) == 64 ]] || flags+=(--enable-deprecated)

log "configuring $DIR (about 30 s; log: $DIR/config.log)"
(
  cd "$DIR"
  export DEB_BUILD_MAINT_OPTIONS=hardening=+all,-bindnow
  eval "$(dpkg-buildflags --export=sh)"
  ./configure "${flags[@]}" >"$DIR/configure.out" 2>&1
) || { tail -n 30 "$DIR/configure.out" >&2; die "configure failed"; }
[[ -f $DIR/config.h ]] || die "configure produced no config.h"
echo "$want" > "$DIR/$STAMP"
log "done: slurm-wlm $want configured"
echo "$DIR"
