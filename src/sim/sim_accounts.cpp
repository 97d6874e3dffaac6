// The figures per account for `gpupool sim`: what each department
// and project got (waits, GPU hours) and whether its quota held (NP GPUs
// over it, NP jobs waiting that fitted in it), from the jobs' outcomes
// after the replay.  NP jobs are never preempted, so each ran once, from
// its first start to its end.
#include <algorithm>
#include <map>
#include <set>

#include "sim_metrics.hpp"

namespace gpupool::sim {

namespace {

// The GPU quota the figures hold an account to (AccountMetrics says which).
bool account_quota(const Config &config, const std::string &account, const std::set<std::string> &subtree,
                   uint64_t &quota) {
    quota = 0;
    bool given = false;
    for (const Pool &pool : config.pools) {
        const AccountQuota *entry = nullptr;
        for (const AccountQuota &a : config.accounts)
            if (a.account == account && entry_counts_in(a, pool.name, entry)) entry = &a;
        if (entry) {
            quota += entry->quota.get(kGpu);
            given = true;
        }
    }
    if (given) return true;
    for (const Pool &pool : config.pools)
        if (subtree.count(pool.name)) {
            quota += pool.quota;
            given = true;
        }
    return given;
}

// An NP job's change at a time: it starts (+) or ends (-) holding GPUs, or
// begins (+) or ends (-) its wait.
struct Change {
    int64_t time = 0;
    int running = 0, waiting = 0;  // +1, -1 or 0
    uint32_t job = 0;               // Workload index
};

// Over-quota and below-quota seconds and the NP peaks of every account, by
// one sweep of the NP jobs' changes.  A waiting job counts below quota for
// each account up from its own while it fits in the quota each leaves: a
// job its project's quota holds says nothing of its department's.
void sweep(std::vector<Change> &changes, const std::vector<std::vector<size_t>> &path,
           const std::vector<uint32_t> &gpus, int64_t end, std::vector<AccountMetrics> &out) {
    // A wait begins before one of the same instant ends (a job started the second it came).
    std::sort(changes.begin(), changes.end(), [](const Change &a, const Change &b) {
        return a.time != b.time ? a.time < b.time : a.waiting > b.waiting;
    });
    std::vector<int64_t> running(out.size(), 0);
    std::set<uint32_t> waiting;
    std::vector<uint8_t> below(out.size());
    for (size_t i = 0; i < changes.size();) {
        const int64_t t = changes[i].time;
        for (; i < changes.size() && changes[i].time == t; ++i) {
            const Change &c = changes[i];
            for (size_t a : path[c.job]) running[a] += c.running * int64_t(gpus[c.job]);
            if (c.waiting > 0) waiting.insert(c.job);
            if (c.waiting < 0) waiting.erase(c.job);
        }
        const int64_t next = i < changes.size() ? changes[i].time : end;
        std::fill(below.begin(), below.end(), 0);
        for (uint32_t j : waiting)
            for (size_t a : path[j]) {
                if (!out[a].has_quota || running[a] + gpus[j] > static_cast<int64_t>(out[a].quota)) break;
                below[a] = 1;
            }
        for (size_t a = 0; a < out.size(); ++a) {
            AccountMetrics &m = out[a];
            m.np_peak = std::max(m.np_peak, static_cast<uint64_t>(std::max<int64_t>(running[a], 0)));
            if (m.has_quota && running[a] > static_cast<int64_t>(m.quota)) m.np_over_quota_seconds += next - t;
            if (below[a]) m.below_quota_seconds += next - t;
        }
    }
}

// Accounts depth first from the top, children by name.
void order_accounts(const std::map<std::string, std::vector<std::string>> &children, const std::string &at,
                    uint32_t depth, const AccountTree &tree, std::vector<AccountMetrics> &out) {
    auto kids = children.find(at);
    if (kids == children.end()) return;
    for (const std::string &name : kids->second) {
        AccountMetrics m;
        m.name = name;
        auto up = tree.find(name);
        m.parent = up == tree.end() || up->second == "root" ? "" : up->second;
        m.depth = depth;
        out.push_back(m);
        order_accounts(children, name, depth + 1, tree, out);
    }
}

}  // namespace

std::vector<AccountMetrics> account_metrics(const Workload &workload, const AccountTree &tree, const Config &quotas,
                                            const Config &config, const std::vector<JobOutcome> &jobs, int64_t end) {
    std::vector<AccountMetrics> out;
    AccountTree parents = tree;
    bool any = false;
    for (const SimJob &s : workload.jobs)
        if (!s.account.empty()) {
            any = true;
            parents.emplace(s.account, "root");  // an account the tree lacks is a top-level one
        }
    if (!any) return out;
    for (const auto &[name, parent] : AccountTree(parents))
        if (parent != "" && parent != "root") parents.emplace(parent, "root");  // a parent the tree does not list
    std::map<std::string, std::vector<std::string>> children;
    for (const auto &[name, parent] : parents)
        if (name != "root") children[parent == "" ? "root" : parent].push_back(name);
    for (auto &c : children) std::sort(c.second.begin(), c.second.end());
    order_accounts(children, "root", 0, parents, out);

    std::map<std::string, size_t> index;
    for (size_t i = 0; i < out.size(); ++i) index[out[i].name] = i;
    std::vector<std::set<std::string>> subtree(out.size());
    for (size_t i = 0; i < out.size(); ++i)
        for (std::string at = out[i].name; index.count(at); at = out[index[at]].parent) subtree[index[at]].insert(out[i].name);
    for (size_t i = 0; i < out.size(); ++i) out[i].has_quota = account_quota(quotas, out[i].name, subtree[i], out[i].quota);
    for (AccountMetrics &m : out)
        for (const AccountQuota &a : quotas.accounts)
            if (a.account == m.name) m.rank = std::max(m.rank, a.rank);

    std::vector<std::vector<int64_t>> waits(out.size());
    std::vector<std::vector<size_t>> path(workload.jobs.size());  // a job's account and those above it
    std::vector<uint32_t> gpus(workload.jobs.size());
    std::vector<Change> changes;
    for (size_t j = 0; j < workload.jobs.size(); ++j) {
        const SimJob &s = workload.jobs[j];
        const JobOutcome &o = jobs[j];
        if (s.account.empty()) continue;
        for (std::string at = s.account; index.count(at); at = out[index[at]].parent) path[j].push_back(index[at]);
        gpus[j] = s.gpus;
        for (size_t a : path[j]) {
            AccountMetrics &m = out[a];
            m.jobs++;
            m.preemptions += o.preemptions;
            if (o.first_start >= 0) waits[a].push_back(o.wait);
            m.gpu_hours +=
                static_cast<double>((o.state == JobEnd::Completed ? int64_t(s.gpus) * s.duration : 0) + o.lost_gpu_seconds) /
                3600.0;
        }
        if (o.tier < 0 || config.tiers[static_cast<size_t>(o.tier)].preemptible) continue;
        const uint32_t job = static_cast<uint32_t>(j);
        changes.push_back({s.submit, 0, 1, job});
        changes.push_back({o.first_start >= 0 ? o.first_start : end, 0, -1, job});
        if (o.first_start >= 0) {
            changes.push_back({o.first_start, 1, 0, job});
            changes.push_back({o.end >= 0 ? o.end : end, -1, 0, job});
        }
    }
    for (size_t a = 0; a < out.size(); ++a) out[a].wait = percentiles(std::move(waits[a]));
    sweep(changes, path, gpus, end, out);
    return out;
}

}  // namespace gpupool::sim
