// `gpupool check`: the file as the plugins parse it, then what it names
// against the cluster: partitions and their GPUs, QOS, accounts and their
// quotas in Slurm's tree.  The slurm.conf settings are check_settings.cpp's.
#include "check.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>
#include <ostream>

#include "trust.hpp"

namespace gpupool::cli {

namespace {

CheckProblem problem(const std::string &file, int line, bool error, std::string what, std::string fix) {
    return CheckProblem{file, line, error, std::move(what), std::move(fix)};
}

// Fixes for parse errors whose message does not say what to do.
struct KnownFix {
    const char *needle;
    const char *fix;
};
const KnownFix kParseFixes[] = {
    {"duplicate Pool=", "keep one Pool= record per partition: remove the second or merge its keys into the first"},
    {"duplicate Tier=", "keep one Tier= record per tier: remove the second or rename it"},
    {"duplicate Account=", "keep one record per account and pool: remove the second or merge it into the first"},
    {"duplicate key", "give each key once: remove the second"},
    {"unknown key", "correct the key: gpupool.conf(5) lists the keys of each record"},
    {"PreemptMode=suspend", "write PreemptMode=requeue or PreemptMode=cancel (jobs that checkpoint: GraceTime= with "
                            "SlurmctldParameters=preempt_send_user_signal, then requeue)"},
};

// A ConfigError ("FILE:LINE: problem" or "FILE: problem") as a problem;
// its fix is the message's own "...: use X" (or "; write X", "; give X")
// where it has one.
CheckProblem parse_problem(const std::string &path, const std::string &msg) {
    CheckProblem p = problem(path, 0, true, msg, "correct it as gpupool.conf(5) says");
    std::string rest = msg;
    if (rest.compare(0, path.size() + 1, path + ":") == 0) {
        rest.erase(0, path.size() + 1);
        size_t colon = rest.find(':');
        if (colon > 0 && colon != std::string::npos &&
            std::all_of(rest.begin(), rest.begin() + long(colon), [](char c) { return c >= '0' && c <= '9'; })) {
            p.line = std::stoi(rest.substr(0, colon));
            rest.erase(0, colon + 1);
        }
        rest.erase(0, rest.find_first_not_of(' '));
    }
    p.what = rest;
    for (const char *sep : {"; use ", ": use ", "; write ", "; give "}) {
        size_t at = rest.rfind(sep);
        if (at == std::string::npos) continue;
        p.what = rest.substr(0, at);
        p.fix = rest.substr(at + 2);
        break;
    }
    for (const KnownFix &k : kParseFixes)
        if (rest.find(k.needle) != std::string::npos) p.fix = k.fix;
    return p;
}

// "a, b, c" (at most 8, then "...").
std::string listed(const std::vector<std::string> &names) {
    std::string out;
    for (size_t i = 0; i < names.size() && i < 8; ++i) out += (i ? ", " : "") + names[i];
    return names.size() > 8 ? out + ", ..." : out;
}

// Pools whose partitions share nodes share their GPUs (the engine's
// domains): their quotas together within those GPUs, and a pool that
// shares nothing within its own.
void check_shared_gpus(const Config &cfg, const Snapshot &snap, const std::vector<int> &part_of,
                       const std::string &path, std::vector<CheckProblem> &out) {
    const size_t n = cfg.pools.size();
    std::vector<size_t> root(n);
    std::iota(root.begin(), root.end(), 0);
    auto find = [&](size_t i) {
        while (root[i] != i) i = root[i] = root[root[i]];
        return i;
    };
    std::vector<int> node_pool(snap.nodes.size(), -1);
    for (size_t i = 0; i < n; ++i) {
        if (part_of[i] < 0) continue;
        for (int32_t node : snap.partitions[size_t(part_of[i])].nodes) {
            int &first = node_pool[size_t(node)];
            if (first < 0) first = int(i);
            else root[find(i)] = find(size_t(first));
        }
    }
    std::vector<uint64_t> gpus(n, 0), quota(n, 0);
    std::vector<std::vector<size_t>> members(n);
    for (size_t node = 0; node < snap.nodes.size(); ++node)
        if (node_pool[node] >= 0) gpus[find(size_t(node_pool[node]))] += snap.nodes[node].gpus;
    for (size_t i = 0; i < n; ++i)
        if (part_of[i] >= 0) {
            quota[find(i)] += cfg.pools[i].quota;
            members[find(i)].push_back(i);
        }
    for (size_t r = 0; r < n; ++r) {
        // No GPUs at all: check_pools said so of each pool.
        if (members[r].empty() || quota[r] <= gpus[r] || gpus[r] == 0) continue;
        const Pool &first = cfg.pools[members[r][0]];
        const std::string cap = std::to_string(gpus[r]);
        if (members[r].size() == 1) {
            out.push_back(problem(path, first.line, false,
                                  "Pool=" + first.name + " Quota=" + std::to_string(first.quota) +
                                      " is more than the " + cap + " GPUs of partition " + first.name +
                                      ": the quota cannot be honoured",
                                  "lower Quota to at most " + cap + ", or add GPUs to the partition"));
            continue;
        }
        std::vector<std::string> names;
        for (size_t i : members[r]) names.push_back(cfg.pools[i].name);
        out.push_back(problem(path, first.line, false,
                              "pools " + listed(names) + " share the " + cap +
                                  " GPUs of their partitions' nodes, but their quotas add up to " +
                                  std::to_string(quota[r]) + ": quotas cannot all be honoured",
                              "lower the quotas of " + listed(names) + " to add up to at most " + cap));
    }
}

// Each pool is a partition of slurmctld's with GPUs; pool partitions have
// one PriorityTier (Slurm orders by it before priority).
void check_pools(const Config &cfg, const CheckCluster &cluster, const std::string &path,
                 std::vector<CheckProblem> &out) {
    const Snapshot &snap = cluster.snap;
    std::vector<std::string> names;
    for (const SnapPartition &p : snap.partitions) names.push_back(p.name);
    std::vector<int> part_of(cfg.pools.size(), -1);
    const Pool *tier_first = nullptr;
    for (size_t i = 0; i < cfg.pools.size(); ++i) {
        const Pool &pool = cfg.pools[i];
        auto it = std::find(names.begin(), names.end(), pool.name);
        if (it == names.end()) {
            out.push_back(problem(path, pool.line, true,
                                  "Pool=" + pool.name + ": slurmctld has no partition " + pool.name +
                                      " (it has " + (names.empty() ? "none" : listed(names)) + ")",
                                  "add PartitionName=" + pool.name + " to slurm.conf, or name an existing partition"));
            continue;
        }
        part_of[i] = int(it - names.begin());
        uint64_t gpus = 0;
        for (int32_t node : snap.partitions[size_t(part_of[i])].nodes) gpus += snap.nodes[size_t(node)].gpus;
        if (gpus == 0 && pool.quota > 0)
            out.push_back(problem(path, pool.line, false,
                                  "Pool=" + pool.name + " Quota=" + std::to_string(pool.quota) + ": the nodes of partition " +
                                      pool.name + " have no GPUs that QuotaTRES=" + cfg.quota_tres + " counts",
                                  "give its nodes GPUs (Gres= in slurm.conf), or set QuotaTRES to the GPUs they have"));
        auto tier = cluster.priority_tier.find(pool.name);
        if (tier == cluster.priority_tier.end()) continue;
        if (!tier_first) {
            tier_first = &pool;
        } else if (tier->second != cluster.priority_tier.at(tier_first->name)) {
            out.push_back(problem(path, pool.line, false,
                                  "partition " + pool.name + " has PriorityTier=" + std::to_string(tier->second) +
                                      " and partition " + tier_first->name + " (line " +
                                      std::to_string(tier_first->line) + ") PriorityTier=" +
                                      std::to_string(cluster.priority_tier.at(tier_first->name)) +
                                      ": Slurm orders pending jobs by PriorityTier before priority, overruling gpupool",
                                  "give the pool partitions the same PriorityTier in slurm.conf"));
        }
    }
    check_shared_gpus(cfg, snap, part_of, path, out);
}

// Each QOS a tier maps exists in slurmdbd.
void check_qos(const Config &cfg, const CheckCluster &cluster, const std::string &path,
               std::vector<CheckProblem> &out) {
    if (!cluster.qos_known) {
        out.push_back(problem(path, 0, false, "QOS not checked: " + cluster.qos_error,
                              "run gpupool check where slurmdbd answers (sacctmgr show qos)"));
        return;
    }
    const std::vector<std::string> known(cluster.qos.begin(), cluster.qos.end());
    for (const Tier &t : cfg.tiers)
        for (const std::string &q : t.qos) {
            // A QOS with a capital is refused by the parser already.
            if (cluster.qos.count(q)) continue;
            out.push_back(problem(path, t.line, true, "Tier=" + t.name + ": QOS " + q + " does not exist in slurmdbd",
                                  "create it (sacctmgr add qos " + q + ") and grant it (sacctmgr modify user NAME "
                                  "set qos+=" + q + "), or map an existing QOS (" + listed(known) + ")"));
        }
}

}  // namespace

std::string check_file_trust(const std::string &path, const CheckCluster &cluster) {
    return check_trusted_path(path, "gpupool.conf", trust_slurm_uid(cluster), false);
}

std::vector<CheckProblem> check_config(const std::string &path, const std::string &text,
                                       const CheckCluster &cluster) {
    std::vector<CheckProblem> out;
    std::optional<Config> cfg;
    try {
        cfg = parse_config(text, path);
    } catch (const ConfigError &e) {
        out.push_back(parse_problem(path, e.what()));
    }
    // Settings that change nothing (Config::warnings, "FILE:LINE: why").
    if (cfg)
        for (const std::string &w : cfg->warnings) {
            CheckProblem p = parse_problem(path, w);
            p.error = false;
            p.fix = "remove it, or change the setting it depends on (gpupool.conf(5), VALIDATION)";
            out.push_back(p);
        }
    // Where SlurmUser is not known here (no slurm.conf: a configless
    // host), judged against root: only a warning, as the owner may be it.
    if (!cluster.trust_error.empty())
        out.push_back(problem(path, 0, !cluster.slurm_user_unknown,
                              (cluster.slurm_user_unknown
                                   ? "slurmctld would not read it if its SlurmUser is root (SlurmUser is not known "
                                     "here): "
                                   : "slurmctld would not read it: ") +
                                  cluster.trust_error,
                              "make the file and every directory above it owned by root or SlurmUser and writable "
                              "by no group or other user (chown root FILE; chmod go-w FILE)"));
    if (!cluster.controller_error.empty()) {
        out.push_back(problem(path, 0, false, "the cluster was not checked: " + cluster.controller_error,
                              "run gpupool check where scontrol reaches slurmctld"));
    } else {
        if (cfg && cluster.nodes_known) check_pools(*cfg, cluster, path, out);
        if (cfg) check_qos(*cfg, cluster, path, out);
        if (cfg) check_accounts(*cfg, cluster, path, out);
        check_settings(cluster, cfg ? &*cfg : nullptr, path, text, out);
    }
    // gpupool.conf by line (whole-file problems first), then slurm.conf.
    std::stable_sort(out.begin(), out.end(), [&](const CheckProblem &a, const CheckProblem &b) {
        return std::make_pair(a.file != path, a.line) < std::make_pair(b.file != path, b.line);
    });
    return out;
}

int print_check(const std::vector<CheckProblem> &problems, const std::string &path, std::ostream &out) {
    size_t errors = 0, warnings = 0;
    for (const CheckProblem &p : problems) {
        out << p.file << (p.line > 0 ? ":" + std::to_string(p.line) : std::string()) << ": "
            << (p.error ? "error" : "warning") << ": " << p.what << "; fix: " << p.fix << "\n";
        (p.error ? errors : warnings) += 1;
    }
    out << "gpupool check: " << errors << (errors == 1 ? " error, " : " errors, ") << warnings
        << (warnings == 1 ? " warning" : " warnings") << " (" << path << ")\n";
    return errors ? 1 : 0;
}

}  // namespace gpupool::cli
