// `gpupool check`'s Account= checks: each record names an account of
// Slurm's tree, and no queue's quota is more than its parent's there (the
// nearest ancestor account with a record for the pool, else the pool's
// own quota): a department's quota caps what its projects hold together,
// so a project guaranteed more than its department could never get it.
#include <map>
#include <utility>

#include "check.hpp"

namespace gpupool::cli {

namespace {

using Entries = std::map<std::pair<std::string, std::string>, const AccountQuota *>;

bool at_top(const std::string &parent) { return parent.empty() || parent == "root"; }

// `account`'s record for `pool`: the one naming the pool, else its "*" one.
const AccountQuota *entry_for(const Entries &entries, const std::string &account, const std::string &pool) {
    const AccountQuota *held = nullptr;
    for (const std::string &named : {std::string("*"), pool}) {
        auto it = entries.find({account, named});
        if (it != entries.end() && entry_counts_in(*it->second, pool, held)) held = it->second;
    }
    return held;
}

// The record `a` answers to in `pool`: its nearest ancestor's (null: the
// pool's quota).  Without Slurm's tree every account is at the top, as
// gpupool itself then counts it.
const AccountQuota *parent_entry(const Entries &entries, const CheckCluster &cluster, const AccountQuota &a,
                                 const std::string &pool) {
    const auto &parents = cluster.snap.account_parent;
    if (!cluster.accounts_known) return nullptr;
    std::string at = a.account;
    for (size_t steps = 0; steps <= parents.size(); ++steps) {  // a loop in the tree ends here
        auto up = parents.find(at);
        if (up == parents.end() || at_top(up->second)) return nullptr;
        at = up->second;
        if (const AccountQuota *e = entry_for(entries, at, pool)) return e;
    }
    return nullptr;
}

// The resources where `child` is more than `parent`, as two TRES texts.
std::pair<std::string, std::string> excess(const ResourceAmounts &child, const ResourceAmounts &parent,
                                           const std::string &gpu_tres) {
    ResourceAmounts more, cap;
    for (Resource r : {kGpu, kCpu, kMem})
        if (child.has(r) && parent.has(r) && child.value[r] > parent.value[r]) {
            more.set(r, child.value[r]);
            cap.set(r, parent.value[r]);
        }
    if (more.empty()) return {};
    return {format_resource_amounts(more, gpu_tres), format_resource_amounts(cap, gpu_tres)};
}

void check_quota(const Config &cfg, const Entries &entries, const CheckCluster &cluster, const AccountQuota &a,
                 const Pool &pool, const std::string &path, std::vector<CheckProblem> &out) {
    const AccountQuota *parent = parent_entry(entries, cluster, a, pool.name);
    const ResourceAmounts &cap = parent ? parent->quota : pool.quota_by_resource;
    const auto [more, limit] = excess(a.quota, cap, cfg.quota_tres);
    if (more.empty()) return;
    const std::string record = "Account=" + a.account + " Pool=" + a.pool + " Quota=" + more +
                               (a.pool == "*" ? " (in pool " + pool.name + ")" : "");
    if (parent) {
        out.push_back(CheckProblem{path, a.line, true,
                                   record + " is more than the quota of its parent account " + parent->account +
                                       " there (" + limit + ", line " + std::to_string(parent->line) +
                                       "): a department's quota caps what its projects hold together",
                                   "lower " + a.account + "'s Quota in " + pool.name + " to at most " + limit +
                                       ", or raise " + parent->account + "'s"});
    } else {
        out.push_back(CheckProblem{path, a.line, true,
                                   record + " is more than Pool=" + pool.name + "'s Quota (" + limit + ", line " +
                                       std::to_string(pool.line) + ")",
                                   "lower " + a.account + "'s Quota in " + pool.name + " to at most " + limit +
                                       ", or raise the pool's"});
    }
}

}  // namespace

void check_accounts(const Config &cfg, const CheckCluster &cluster, const std::string &path,
                    std::vector<CheckProblem> &out) {
    if (cfg.accounts.empty()) return;
    if (!cluster.accounts_known) {
        out.push_back(CheckProblem{path, 0, false, "accounts not checked against Slurm's tree: " + cluster.accounts_error,
                                   "run gpupool check where slurmdbd answers (sacctmgr show assoc)"});
    } else {
        for (const AccountQuota &a : cfg.accounts)
            if (!cluster.snap.account_parent.count(a.account))
                out.push_back(CheckProblem{path, a.line, true,
                                           "Account=" + a.account + ": Slurm has no account " + a.account +
                                               " (the association tree of cluster " + cluster.cluster_name + ")",
                                           "create it (sacctmgr add account " + a.account +
                                               " parent=DEPARTMENT), or correct the name"});
    }
    Entries entries;
    for (const AccountQuota &a : cfg.accounts) entries.emplace(std::make_pair(a.account, a.pool), &a);
    for (const AccountQuota &a : cfg.accounts)
        for (const Pool &pool : cfg.pools) {
            if (a.pool != "*" && a.pool != pool.name) continue;
            // Where the account has a record naming the pool, that one counts.
            if (entry_for(entries, a.account, pool.name) != &a) continue;
            check_quota(cfg, entries, cluster, a, pool, path, out);
        }
}

}  // namespace gpupool::cli
