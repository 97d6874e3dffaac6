#!/usr/bin/env bash
# Install everything gpupool needs on a bare Debian 12 machine (as root):
# the build toolchain, test libraries, and Debian's Slurm 22.05 + munge +
# MariaDB for the local cluster (scripts/cluster.sh). Idempotent: packages
# already installed are skipped, so a re-run costs well under a second.
set -euo pipefail

PKGS=(
  # toolchain for the C++ core and the autotools build
  build-essential g++ autoconf automake libtool pkg-config make
  # libraries and unit-test / benchmark frameworks
  libjansson-dev libgtest-dev libgmock-dev googletest libbenchmark-dev
  # fuzzing (scripts/fuzz.sh): clang with libFuzzer's runtime, and
  # llvm-symbolizer for readable sanitizer stacks
  clang-14 libclang-rt-14-dev llvm-14
  # Slurm 22.05 daemons, clients and headers (the plugins load into these)
  slurm-wlm slurmctld slurmd slurmdbd slurm-client libslurm-dev
  munge libmunge-dev
  # accounting storage for slurmdbd (QOS need accounting)
  mariadb-server mariadb-client
  # building newer Slurm releases from ../shared/vendor/slurm (scripts/build-slurm.sh):
  # without mariadb_config, configure silently skips accounting_storage/mysql
  libmariadb-dev xz-utils
  # `apt-get source` + configuring the Slurm source tree like Debian does
  dpkg-dev libpam0g-dev
  # the Debian package (dpkg-buildpackage, scripts/package-test.sh; pulls
  # dh-autoreconf) and rendering the man pages (man -l)
  debhelper man-db
  # `gpupool exporter` serves metrics over HTTP with libmicrohttpd; its
  # integration test scrapes it with Debian's real Prometheus server
  libmicrohttpd-dev prometheus
  # `gpupool sim`'s pictures (utilisation over time, Gantt charts):
  # scripts/sim-plots.sh draws them with gnuplot (no X needed)
  gnuplot-nox
  # scripts/live-cost.sh runs slurmctld with jemalloc (doc/performance.md)
  libjemalloc2
  # tools the cluster/test scripts use (pgrep/pkill, ps, ip; python3 for
  # tests/soak/checker.py, standard library only)
  procps iproute2 ca-certificates python3
)

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps.sh: must run as root" >&2
  exit 1
fi

# dpkg-query is much faster than apt-get for "is everything already there?".
missing=()
for p in "${PKGS[@]}"; do
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ $st == installed ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps.sh: all ${#PKGS[@]} packages already installed"
  exit 0
fi

echo "install-deps.sh: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Don't let package postinst scripts start daemons (munge, mariadb, slurm*):
# cluster.sh starts private instances on its own ports/sockets instead, and a
# system mariadb/slurmd would otherwise linger and clash. policy-rc.d exit 101
# is Debian's documented "do not start services" hook; we remove it again
# only if we created it.
created_policy=0
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  created_policy=1
fi
trap 'if [[ $created_policy -eq 1 ]]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT

apt-get update -qq
apt-get install -y --no-install-recommends "${missing[@]}"
echo "install-deps.sh: done"
