// `gpupool check`'s view of the live cluster, through libslurm.
#pragma once

#include "check.hpp"
#include "slurm_view.hpp"

namespace gpupool::cli {

// What `gpupool check` compares gpupool.conf with: slurmctld's settings
// and slurm.conf's text, the QOS, and where `cfg` parsed (not null) the
// nodes and partitions, GPUs counted by its QuotaTRES, and with Account=
// records the account tree.  Throws std::runtime_error when slurmctld
// cannot be read; a part slurmdbd cannot give says why in the result.
CheckCluster load_check_cluster(const ControllerConf &cc, const Config *cfg);

}  // namespace gpupool::cli
