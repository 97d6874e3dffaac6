// `gpupool whatif --set`: gpupool.conf text with keys changed, for the
// real parser to read, so that every value is checked as in the file.
// No Slurm header: unit-tested alone.
#pragma once

#include <string>

#include "config.hpp"

namespace gpupool::cli {

// `setting` is POOL.Key=VALUE for a pool key (Quota, Weight, MinRuntime),
// TIER.Key=VALUE for a tier key (QOS, Priority, Preemptible, PreemptMode,
// GraceTime), ACCOUNT@POOL.Key=VALUE for a key of that Account= entry
// (Quota, Weight, Limit, LendingLimit; POOL may be *, and @POOL may be
// left out when the account has one entry) or Key=VALUE for a global key,
// keys in any case.  Returns
// `text` (parsed as `cfg`) with the key set on the record's line (or the
// global key's line), added there if absent; comments and other lines are
// kept, so line numbers in the parser's messages stay those of the file.
// Throws ConfigError naming the setting when it is malformed or names no
// pool, tier or key of that kind.
std::string apply_setting(const std::string &text, const Config &cfg, const std::string &setting);

}  // namespace gpupool::cli
