// `gpupool sim`: files in, report out.  Needs no cluster, no Slurm
// configuration and no daemon: a cluster spec, a gpupool.conf and a
// workload, replayed under each policy asked for (replay.hpp), reported
// as text or JSON, with CSV files on request (report.hpp).
#pragma once

#include <iosfwd>

namespace gpupool::sim {

// argv[0] is "sim".  Returns the exit status: 0, 1 (bad input or an
// output that cannot be written: the message names it), 2 (usage).
int run_sim_command(int argc, char **argv, std::ostream &out, std::ostream &err);

extern const char kSimUsage[];

}  // namespace gpupool::sim
