// `gpupool check`: gpupool.conf read as the plugins read it, then checked
// against the running cluster (partitions, GPUs, QOS, accounts) and the
// slurm.conf settings gpupool needs (doc/admin-guide.md, "slurm.conf").
// What the cluster says comes in a CheckCluster, filled from libslurm
// (check_live.cpp) or by tests; no Slurm header here.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "snapshot.hpp"

namespace gpupool::cli {

// One line of the report: "FILE:LINE: error: WHAT; fix: FIX" (no LINE
// where the problem has none: a setting slurm.conf leaves out).
struct CheckProblem {
    std::string file;
    int line = 0;
    bool error = true;  // false: a warning (the exit status stays 0)
    std::string what, fix;
};

// What the cluster says, as far as it could be read; each part that could
// not be read says why (and is then not checked: a warning says so).
struct CheckCluster {
    std::string controller_error;  // slurmctld unreachable: only the file is checked
    // Why slurmctld would not trust the file (owner, mode: trust.hpp); "" if it would.
    std::string trust_error;
    // SlurmUser could not be known here (slurmctld did not answer and no
    // slurm.conf here names one that resolves), and trust_error is only
    // about an owner that may be it: a warning, not an error.
    bool slurm_user_unknown = false;
    // slurm.conf: its path, text (empty if unreadable: no line numbers;
    // read also when slurmctld does not answer, for SlurmUser) and the
    // settings slurmctld runs with (`scontrol show config`).
    std::string slurm_conf;
    std::string slurm_conf_text;
    std::map<std::string, std::string> settings;
    // Nodes with the GPUs QuotaTRES counts, partitions (issue's pools) and,
    // with Account= records, Slurm's account tree: as gpupool reads them.
    bool nodes_known = false;
    Snapshot snap;
    std::unordered_map<std::string, uint32_t> priority_tier;  // per partition
    bool qos_known = false;
    std::set<std::string> qos;
    std::string qos_error;
    bool accounts_known = false;  // snap.account_parent is Slurm's tree
    std::string accounts_error;
    std::string cluster_name;
};

// `scontrol show config` text ("Key = Value" lines) as Key -> Value; the
// first occurrence of a key wins (plugins' sections follow).
std::map<std::string, std::string> parse_show_config(const std::string &text);

// Every problem of gpupool.conf `text` (read from `path`): a parse error
// (the parser stops at the first, with its line), then the cluster checks
// and the slurm.conf settings.  In file order, gpupool.conf first.
std::vector<CheckProblem> check_config(const std::string &path, const std::string &text,
                                       const CheckCluster &cluster);

// The slurm.conf settings gpupool needs (the table in check_settings.cpp);
// `cfg` null when gpupool.conf did not parse.
void check_settings(const CheckCluster &cluster, const Config *cfg, const std::string &path,
                    const std::string &text, std::vector<CheckProblem> &out);

// The Account= records (check_accounts.cpp): each names an account of
// Slurm's tree, and no queue is guaranteed more than its parent's quota.
void check_accounts(const Config &cfg, const CheckCluster &cluster, const std::string &path,
                    std::vector<CheckProblem> &out);

// SlurmUser's uid from `scontrol show config` ("slurm(64030)"); 0 (root)
// if it says none.
uint32_t slurm_user_id(const std::map<std::string, std::string> &settings);

// SlurmUser's uid from slurm.conf `text` (the last SlurmUser=, a name or
// a uid), for when slurmctld does not answer; 0 (root, Slurm's default)
// if it sets none or names no user.
uint32_t slurm_user_of_conf(const std::string &text);

// SlurmUser for the trust check: slurmctld's when it answered, else
// slurm.conf's (`cluster.slurm_conf_text`), else root's.
uint32_t trust_slurm_uid(const CheckCluster &cluster);
// Whether trust_slurm_uid() had to guess root: slurmctld did not answer,
// and no slurm.conf was read here or its SlurmUser= names no user here.
bool trust_slurm_uid_guessed(const CheckCluster &cluster);

// Why slurmctld would not trust gpupool.conf at `path` (trust.hpp), ""
// if it would; judged without slurmctld, as trust_slurm_uid says.
std::string check_file_trust(const std::string &path, const CheckCluster &cluster);

// The line where `key` (any case) is set in Key=Value `text`: the last
// such line outside comments, 0 if none.
int line_of_key(const std::string &text, const std::string &key);

// Prints each problem and the summary "gpupool check: N errors, N
// warnings (PATH)"; returns the exit status, 1 on any error.
int print_check(const std::vector<CheckProblem> &problems, const std::string &path, std::ostream &out);

}  // namespace gpupool::cli
