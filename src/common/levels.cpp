#include "levels.hpp"

#include <algorithm>
#include <unordered_map>

namespace gpupool {

namespace {

bool top_level(const std::string &parent) { return parent.empty() || parent == "root"; }

// Slurm's tree over account ids: each one's parent (-1: top level).  An
// account whose chain of parents loops (a broken or half-updated tree) is
// taken as top level, as are the accounts on the loop: such a tree must
// neither hang the pass nor put a queue above itself.
std::vector<int32_t> account_parents(const Snapshot &snap, const Evaluation &ev) {
    const size_t n = ev.account_ids.size();
    std::vector<int32_t> parent(n, -1);
    for (const auto &[account, up] : snap.account_parent)
        if (!top_level(up)) parent[size_t(ev.account_ids.at(account))] = ev.account_ids.at(up);
    enum : uint8_t { kUnknown, kOnPath, kSettled, kLoops };
    std::vector<uint8_t> state(n, kUnknown);
    std::vector<int32_t> path;
    for (size_t a = 0; a < n; ++a) {
        path.clear();
        int32_t x = int32_t(a);
        while (x >= 0 && state[size_t(x)] == kUnknown) {
            state[size_t(x)] = kOnPath;
            path.push_back(x);
            x = parent[size_t(x)];
        }
        // Ended at the top, at a settled account, or back on the path (a loop)
        // or at one behind a loop.
        const bool loops = x >= 0 && (state[size_t(x)] == kOnPath || state[size_t(x)] == kLoops);
        for (int32_t p : path) state[size_t(p)] = loops ? kLoops : kSettled;
    }
    for (size_t a = 0; a < n; ++a)
        if (state[a] == kLoops) parent[a] = -1;
    return parent;
}

// The entry of each account for pool `pool` (null: none): one for the pool
// itself wins over one for every pool (Pool=*).
std::vector<const AccountQuota *> entries_for(const Config &cfg, const std::string &pool, const Evaluation &ev) {
    std::vector<const AccountQuota *> entry(ev.account_ids.size(), nullptr);
    for (const AccountQuota &e : cfg.accounts) {
        const AccountQuota *&held = entry[size_t(ev.account_ids.at(e.account))];
        if (entry_counts_in(e, pool, held)) held = &e;
    }
    return entry;
}

// Only the resources the configuration counts.
ResourceAmounts counted_only(const Config &cfg, ResourceAmounts a) {
    for (size_t r = 0; r < kResources; ++r)
        if (!cfg.counted[r]) a.given[r] = false;
    return a;
}

// A pool quota for CPUs or memory that the configuration counts: the pool
// gets a tree (its root) even without Account= entries.
bool counts_beyond_gpus(const Config &cfg, const Pool &pool) {
    const ResourceAmounts q = counted_only(cfg, pool.quota_by_resource);
    return q.has(kCpu) || q.has(kMem);
}

// The nearest of `a` and its ancestors with an entry; -1: none.
int32_t nearest_with_entry(int32_t a, const std::vector<int32_t> &parent, const std::vector<const AccountQuota *> &entry) {
    while (a >= 0 && !entry[size_t(a)]) a = parent[size_t(a)];
    return a;
}

// One pool's tree: the pool, then its accounts with an entry in tree order
// (breadth first, accounts in id order: configuration order first).
std::shared_ptr<QueueTree> tree_for(const Config &cfg, const Pool &pool, const std::vector<int32_t> &parent,
                                    const std::vector<const AccountQuota *> &entry) {
    const size_t n = entry.size();
    auto tree = std::make_shared<QueueTree>();
    QueueSpec root;
    root.name = pool.name;
    root.quota = counted_only(cfg, pool.quota_by_resource);
    root.quota.set(kGpu, pool.quota);
    root.weight = pool.weight;
    root.rank = pool.rank;
    tree->queues.push_back(root);
    // Children per account (index n: the pool).
    std::vector<std::vector<int32_t>> children(n + 1);
    for (size_t a = 0; a < n; ++a) {
        if (!entry[a]) continue;
        const int32_t up = nearest_with_entry(parent[a], parent, entry);
        children[up < 0 ? n : size_t(up)].push_back(int32_t(a));
    }
    std::vector<int32_t> queue_of_entry(n, 0);
    std::vector<std::pair<int32_t, int32_t>> level{{int32_t(n), 0}};  // (account or n, its queue)
    while (!level.empty()) {
        std::vector<std::pair<int32_t, int32_t>> next;
        for (auto [a, q] : level)
            for (int32_t c : children[size_t(a)]) {
                const AccountQuota &e = *entry[size_t(c)];
                QueueSpec s;
                s.name = e.account;
                s.parent = q;
                s.quota = counted_only(cfg, e.quota);
                s.weight = e.weight;
                s.rank = e.rank;
                s.limit = counted_only(cfg, e.limit);
                s.lending_limit = counted_only(cfg, e.lending_limit);
                tree->limited |= !s.limit.empty();
                if (!s.lending_limit.empty()) tree->keepers.push_back(int32_t(tree->queues.size()));
                queue_of_entry[size_t(c)] = int32_t(tree->queues.size());
                next.emplace_back(c, int32_t(tree->queues.size()));
                tree->queues.push_back(std::move(s));
            }
        level.swap(next);
    }
    tree->queue_of.assign(n, 0);
    for (size_t a = 0; a < n; ++a) {
        const int32_t owner = nearest_with_entry(int32_t(a), parent, entry);
        if (owner >= 0) tree->queue_of[a] = queue_of_entry[size_t(owner)];
    }
    return tree;
}

Amounts capacity_of(const Snapshot &snap, const std::string &partition) {
    Amounts cap{};
    for (const SnapPartition &p : snap.partitions)
        if (p.name == partition)
            for (int32_t node : p.nodes) {
                const SnapNode &sn = snap.nodes[size_t(node)];
                cap[kGpu] += sn.gpus;
                cap[kCpu] += sn.cpus;
                cap[kMem] += sn.mem_mb;
            }
    return cap;
}

}  // namespace

void build_queue_trees(const Config &cfg, const Snapshot &snap, Evaluation &ev) {
    ev.account_ids.clear();
    ev.levels = false;
    const bool pool_quotas = std::any_of(cfg.pools.begin(), cfg.pools.end(),
                                         [&](const Pool &p) { return counts_beyond_gpus(cfg, p); });
    if (cfg.accounts.empty() && !pool_quotas) return;
    auto number = [&](const std::string &a) { ev.account_ids.emplace(a, int32_t(ev.account_ids.size())); };
    for (const AccountQuota &e : cfg.accounts) number(e.account);
    for (const auto &[account, up] : snap.account_parent) {
        number(account);
        if (!top_level(up)) number(up);
    }
    const std::vector<int32_t> parent = account_parents(snap, ev);
    for (size_t i = 0; i < ev.pools.size(); ++i) {
        const Pool &pool = cfg.pools[size_t(ev.pools[i].config_index)];
        const std::vector<const AccountQuota *> entry = entries_for(cfg, pool.name, ev);
        if (std::none_of(entry.begin(), entry.end(), [](const AccountQuota *e) { return e != nullptr; }) &&
            !counts_beyond_gpus(cfg, pool))
            continue;
        PoolQueues &pq = ev.pools[i].queues;
        pq.tree = tree_for(cfg, pool, parent, entry);
        const size_t n = pq.tree->queues.size();
        for (std::vector<Amounts> *v : {&pq.np_running, &pq.np_taken, &pq.allocated, &pq.ahead, &pq.pending, &pq.demand,
                                        &pq.fairshare})
            v->assign(n, Amounts{});
        pq.capacity = capacity_of(snap, pool.name);
        ev.levels = true;
    }
}

int32_t account_id(const Evaluation &ev, const std::string &account) {
    auto it = ev.account_ids.find(account);
    return it == ev.account_ids.end() ? -1 : it->second;
}

Amounts task_amounts(const Config &cfg, uint32_t gpus, uint32_t cpus, uint64_t mem_mb) {
    return Amounts{gpus, cfg.counted[kCpu] ? cpus : 0u, cfg.counted[kMem] ? mem_mb : 0u};
}

void add_np_path(PoolQueues &pq, int32_t queue, const Amounts &amount, uint64_t count, int sign, bool running) {
    for (int32_t q : path_up(pq.tree->queues, queue))
        for (size_t r = 0; r < kResources; ++r) move_np(pq, size_t(q), r, amount[r] * count, sign, running);
}

namespace {

// `amount` times `count` added to (sign > 0) or taken from `rows` of every
// queue from `queue` to the root (no tree: row 0).
void add_up_path(const QueueTree *tree, std::vector<Amounts> &rows, int32_t queue, const Amounts &amount,
                 uint64_t count, int sign) {
    for (int32_t q : PathUp(tree ? &tree->queues : nullptr, queue))
        for (size_t r = 0; r < kResources; ++r) {
            uint64_t &x = rows[size_t(q)][r];
            const uint64_t n = amount[r] * count;
            x = sign > 0 ? x + n : x - std::min(x, n);
        }
}

}  // namespace

void add_allocated(PoolQueues &pq, int32_t queue, const Amounts &amount, int sign) {
    add_up_path(pq.tree.get(), pq.allocated, queue, amount, 1, sign);
}

void add_ahead(PoolQueues &pq, int32_t queue, const Amounts &amount, uint64_t count, int sign) {
    if (pq.tree && (pq.tree->limited || !pq.tree->keepers.empty()))
        add_up_path(pq.tree.get(), pq.ahead, queue, amount, count, sign);
}

void clear_running(PoolQueues &pq) {
    for (std::vector<Amounts> *v : {&pq.np_running, &pq.np_taken, &pq.allocated}) std::fill(v->begin(), v->end(), Amounts{});
}

void clear_reserved(PoolQueues &pq) {
    pq.np_taken = pq.np_running;
    std::fill(pq.ahead.begin(), pq.ahead.end(), Amounts{});
}

namespace {

// The most of `fit` tasks (fit >= 1) that `blocks` lets through, by
// halving (`blocks` grows with the tasks); 0 when not one, with `block`
// the refusal of one task.
template <typename Blocks>
uint64_t most_tasks(const Amounts &one, uint64_t fit, QuotaBlock &block, Blocks blocks) {
    block = blocks(one);
    if (block.queue >= 0) return 0;
    uint64_t lo = 1, hi = fit;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        Amounts many = one;
        for (uint64_t &x : many) x *= mid;
        if (blocks(many).queue < 0)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

}  // namespace

uint64_t tasks_fitting_queues(const PendingResult &r, const PoolState &ps, uint64_t fit, QuotaBlock &block) {
    if (!ps.queues.tree) return fit;
    const int32_t queue = queue_in(ps, r.account);
    const std::vector<QueueSpec> &queues = ps.queues.tree->queues;
    // An array record: the most tasks that all fit.
    return most_tasks(task_amounts(r), fit, block,
                      [&](const Amounts &job) { return quota_block(queues, ps.queues.np_taken, queue, job); });
}

uint64_t tasks_within_limits(const PendingResult &r, const PoolState &ps, uint64_t fit, QuotaBlock &block,
                             Hold &by) {
    const PoolQueues &pq = ps.queues;
    if (!pq.tree || (!pq.tree->limited && pq.tree->keepers.empty())) return fit;
    const std::vector<QueueSpec> &queues = pq.tree->queues;
    const int32_t queue = queue_in(ps, r.account);
    const Amounts one = task_amounts(r);
    if (pq.tree->limited) {
        fit = most_tasks(one, fit, block,
                         [&](const Amounts &job) { return limit_block(queues, pq.allocated, pq.ahead, queue, job); });
        by = Hold::Limit;
        if (fit == 0) return 0;
    }
    if (!pq.tree->keepers.empty()) {
        fit = most_tasks(one, fit, block, [&](const Amounts &job) {
            return lending_block(queues, pq.tree->keepers, pq.allocated, pq.ahead, pq.capacity, queue, job);
        });
        by = Hold::LendingLimit;
    }
    return fit;
}

std::vector<QueueCheck> queue_checks(const PendingResult &r, const PoolState &ps) {
    std::vector<QueueCheck> checks;
    if (!ps.queues.tree) return checks;
    const std::vector<QueueSpec> &queues = ps.queues.tree->queues;
    const Amounts one = task_amounts(r);
    // As quota_block walks, but for the root's GPUs: the QuotaLine that
    // holds these checks is that check.
    for (int32_t q : path_up(queues, queue_in(ps, r.account)))
        for (size_t k = 0; k < kResources; ++k)
            if (one[k] && queues[size_t(q)].quota.has(Resource(k)) && (q > 0 || k != kGpu))
                checks.push_back(QueueCheck{q, Resource(k), ps.queues.np_taken[size_t(q)][k],
                                            queues[size_t(q)].quota.value[k], one[k]});
    return checks;
}

void divide_queues(const Config &cfg, Evaluation &ev) {
    for (PoolState &ps : ev.pools)
        if (ps.queues.tree) std::fill(ps.queues.pending.begin(), ps.queues.pending.end(), Amounts{});
    for (const PendingResult &r : ev.pending)
        for (int p : r.pools) {
            PoolState &ps = ev.pools[size_t(p)];
            if (!ps.queues.tree) continue;
            Amounts &own = ps.queues.pending[size_t(queue_in(ps, r.account))];
            const Amounts one = task_amounts(r);
            for (size_t k = 0; k < kResources; ++k) own[k] += one[k] * r.task_count();
        }
    for (PoolState &ps : ev.pools) {
        PoolQueues &pq = ps.queues;
        if (!pq.tree) continue;
        const std::vector<QueueSpec> &queues = pq.tree->queues;
        // A queue's own demand: its own jobs' running use and its pending.
        const std::vector<Amounts> own_running = own_part(*pq.tree, pq.allocated);
        std::vector<QueueLoad> load(queues.size());
        for (size_t q = 0; q < queues.size(); ++q)
            for (size_t k = 0; k < kResources; ++k) load[q].demand[k] = own_running[q][k] + pq.pending[q][k];
        // R8's time term, GPUs only (as among pools): a queue's decayed
        // usage as a part of what the pool divides, its fairshare.
        const double scale = ps.fairshare > 0 ? double(ps.domain_capacity) / ps.fairshare : 0;
        for (size_t q = 0; q < queues.size() && q < pq.usage_share.size(); ++q)
            load[q].usage[kGpu] = pq.usage_share[q] * scale;
        const Amounts root_share{ps.fairshare, pq.capacity[kCpu], pq.capacity[kMem]};
        QueueShares shares =
            divide_among_queues(queues, load, root_share, cfg.usage_weight_of(cfg.pools[size_t(ps.config_index)]));
        pq.demand = std::move(shares.demand);
        pq.fairshare = std::move(shares.fairshare);
    }
}

}  // namespace gpupool

namespace gpupool {

std::vector<Amounts> own_part(const QueueTree &tree, const std::vector<Amounts> &subtree) {
    std::vector<Amounts> own = subtree;
    for (size_t q = 1; q < tree.queues.size() && q < subtree.size(); ++q)
        for (size_t k = 0; k < kResources; ++k) {
            uint64_t &up = own[size_t(tree.queues[q].parent)][k];
            up -= std::min(up, subtree[q][k]);
        }
    return own;
}

void rank_queues(Evaluation &ev) {
    struct Entry {
        uint32_t pool_standing;
        // From the top level down to the queue, per level: minus its rank,
        // then its use ratio (higher rank first, then the more starved).
        std::vector<double> path;
        size_t pool;
        int32_t queue;             // -1: a pool without a tree
    };
    std::vector<Entry> entries;
    for (size_t i = 0; i < ev.pools.size(); ++i) {
        PoolState &ps = ev.pools[i];
        const PoolQueues &pq = ps.queues;
        if (!pq.tree) {
            entries.push_back(Entry{ps.standing, {}, i, -1});
            continue;
        }
        const std::vector<QueueSpec> &queues = pq.tree->queues;
        // A queue with children divides its share with its own jobs as one
        // more child (divide_among_queues): those jobs stand by what they
        // hold of what the children leave, not before every child.
        const std::vector<Amounts> own_held = own_part(*pq.tree, pq.allocated);
        const std::vector<Amounts> own_share = own_part(*pq.tree, pq.fairshare);
        std::vector<bool> parent(queues.size(), false);
        for (size_t q = 1; q < queues.size(); ++q) parent[size_t(queues[q].parent)] = true;
        for (size_t q = 0; q < queues.size(); ++q) {
            Entry e{ps.standing, {}, i, int32_t(q)};
            // Built bottom-up, reversed below.  A queue's own jobs have rank 0
            // among its children.
            if (parent[q]) {
                e.path.push_back(use_ratio(own_held[q], own_share[q]));
                e.path.push_back(0);
            }
            for (int32_t x : path_up(queues, int32_t(q), 0)) {
                e.path.push_back(use_ratio(pq.allocated[size_t(x)], pq.fairshare[size_t(x)]));
                e.path.push_back(-double(queues[size_t(x)].rank));
            }
            std::reverse(e.path.begin(), e.path.end());
            entries.push_back(std::move(e));
        }
    }
    auto key_less = [](const Entry &a, const Entry &b) {
        if (a.pool_standing != b.pool_standing) return a.pool_standing < b.pool_standing;
        return a.path < b.path;
    };
    std::stable_sort(entries.begin(), entries.end(), key_less);
    uint32_t rank = 0;
    for (size_t k = 0; k < entries.size(); ++k) {
        if (k > 0 && key_less(entries[k - 1], entries[k])) ++rank;
        PoolQueues &pq = ev.pools[entries[k].pool].queues;
        pq.standing.resize(pq.tree ? pq.tree->queues.size() : 1);
        pq.standing[size_t(std::max(0, entries[k].queue))] = rank;
    }
    ev.standings = entries.empty() ? 0 : rank + 1;
}

uint32_t job_standing(const Evaluation &ev, const PendingResult &r) {
    uint32_t best = ev.standings;
    for (int p : r.pools) {
        const PoolState &ps = ev.pools[size_t(p)];
        const std::vector<uint32_t> &ranked = ps.queues.standing;
        if (ranked.empty())
            best = std::min(best, ps.standing);
        else
            best = std::min(best, ranked[std::min(ranked.size() - 1, size_t(queue_in(ps, r.account)))]);
    }
    return best;
}

}  // namespace gpupool
