#!/bin/sh
# make check: load each built plugin outside slurmctld (tests/unit/plugin_load.c)
# after the libslurmfull the plugins were built for, with RTLD_NOW: a symbol
# only slurmctld defines, without a weak fallback (gpupool_ctld_syms.c),
# fails here as it fails sshare and sprio on 23.11+.
# GPUPOOL_LIBSLURMFULL names the library; else it is looked for beside the
# -L directories of LDFLAGS (a --prefix install: PREFIX/lib/slurm) and in
# slurm_plugindir (Debian's packages).  Exit 77 (skipped) when the plugins
# or the library are not there.
top=${top_builddir:-.}
plugins="$top/src/plugins/priority/gpupool/.libs/priority_gpupool.so
$top/src/plugins/preempt/gpupool/.libs/preempt_gpupool.so
$top/src/plugins/job_submit/gpupool/.libs/job_submit_gpupool.so"
for p in $plugins; do
  [ -f "$p" ] || { echo "SKIP: $p not built (no --with-slurm-source)"; exit 77; }
done
lib=${GPUPOOL_LIBSLURMFULL:-}
if [ -z "$lib" ]; then
  for f in $LDFLAGS; do
    case $f in -L*) d=${f#-L}; [ -f "$d/slurm/libslurmfull.so" ] && { lib=$d/slurm/libslurmfull.so; break; } ;; esac
  done
fi
[ -n "$lib" ] || [ ! -f "${slurm_plugindir:-/nonexistent}/libslurmfull.so" ] || lib=$slurm_plugindir/libslurmfull.so
[ -n "$lib" ] || { echo "SKIP: no libslurmfull.so (set GPUPOOL_LIBSLURMFULL)"; exit 77; }
echo "libslurmfull: $lib"
LD_LIBRARY_PATH="$top/src/common/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  exec "$top/tests/unit/plugin_load" "$lib" $plugins
