// `gpupool version`: which gpupool, the Slurm release its plugins were
// built for (they load only into that release's slurmctld), the libslurm
// the command was built against, and the release the running slurmctld
// reports, with whether they match.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace gpupool::cli {

struct VersionInfo {
    std::string gpupool;         // the package's version
    std::string plugins_slurm;   // SLURM_VERSION_STRING of the source the plugins were built against; "" if none
    std::string plugindir;       // where `make install` put them
    uint32_t libslurm = 0;       // SLURM_VERSION_NUMBER of the command's slurm/slurm.h
    bool ctld_asked = false;     // a slurm.conf was found and slurmctld asked
    std::string ctld_slurm;      // the release slurmctld reports; "" if it could not be read
    std::string ctld_error;      // why not
};

// "26.05.3" of SLURM_VERSION_NUM(26, 5, 3).
std::string slurm_version_text(uint32_t number);

// Prints the report; returns the exit status: 1 when slurmctld (or the
// command's libslurm) is of another release than the plugins, else 0.
int print_version(const VersionInfo &v, std::ostream &out);

}  // namespace gpupool::cli
