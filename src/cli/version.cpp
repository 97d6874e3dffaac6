#include "version.hpp"

#include <cstdio>

namespace gpupool::cli {

std::string slurm_version_text(uint32_t n) {
    char buf[32];
    snprintf(buf, sizeof buf, "%u.%02u.%u", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff);
    return buf;
}

int print_version(const VersionInfo &v, std::ostream &out) {
    int rc = 0;
    out << "gpupool " << v.gpupool << "\n";
    if (v.plugins_slurm.empty())
        out << "plugins:   not built (configured without --with-slurm-source)\n";
    else
        out << "plugins:   built for Slurm " << v.plugins_slurm << ", in " << v.plugindir
            << " (they load only into that release's slurmctld)\n";
    const std::string lib = slurm_version_text(v.libslurm);
    out << "command:   built against libslurm of Slurm " << lib;
    if (!v.plugins_slurm.empty() && lib != v.plugins_slurm) {
        out << ": not the plugins' release (" << v.plugins_slurm << "); build both from one configured Slurm source";
        rc = 1;
    }
    out << "\n";
    if (!v.ctld_asked)
        out << "slurmctld: not asked (no slurm.conf here)\n";
    else if (v.ctld_slurm.empty())
        out << "slurmctld: not reached (" << v.ctld_error << ")\n";
    else if (v.plugins_slurm.empty())
        out << "slurmctld: Slurm " << v.ctld_slurm << "\n";
    else if (v.ctld_slurm == v.plugins_slurm)
        out << "slurmctld: Slurm " << v.ctld_slurm << ", the plugins' release\n";
    else {
        out << "slurmctld: Slurm " << v.ctld_slurm << ": not the plugins' release (" << v.plugins_slurm
            << "): slurmctld will not load them; build gpupool against Slurm " << v.ctld_slurm
            << "'s source (admin guide, \"Upgrading Slurm\")\n";
        rc = 1;
    }
    return rc;
}

}  // namespace gpupool::cli
