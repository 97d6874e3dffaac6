#include "queue_figures.hpp"

#include "command_format.hpp"

namespace gpupool::cli {

namespace {

// The row of queue q and, after it, its subtree's.
void add_subtree(const PoolState &ps, const std::vector<Amounts> &lent, const std::vector<Amounts> &pending,
                 const std::vector<std::vector<int32_t>> &children, int32_t q, int level, std::vector<QueueRow> &rows) {
    const PoolQueues &pq = ps.queues;
    const QueueSpec &spec = pq.tree->queues[size_t(q)];
    QueueRow row;
    row.queue = q;
    row.level = level;
    row.spec = &spec;
    for (size_t k = 0; k < kResources; ++k) {
        const Resource r = Resource(k);
        QueueAmounts &a = row.res[k];
        a.has_quota = spec.quota.has(r);
        a.quota = spec.quota.get(r);
        a.has_limit = spec.limit.has(r);
        a.limit = spec.limit.get(r);
        a.fairshare = pq.fairshare[size_t(q)][k];
        a.used = pq.allocated[size_t(q)][k];
        a.np_used = pq.np_running[size_t(q)][k];
        a.borrowed = a.has_quota && a.used > a.quota ? a.used - a.quota : 0;
        a.lent = lent[size_t(q)][k];
        a.pending = pending[size_t(q)][k];
        a.standing = standing(a.used, a.quota, a.fairshare);
    }
    const size_t at = rows.size();
    rows.push_back(std::move(row));
    for (int32_t c : children[size_t(q)]) {
        rows[at].children.push_back(rows.size());
        add_subtree(ps, lent, pending, children, c, level + 1, rows);
    }
}

}  // namespace

std::vector<QueueRow> queue_rows(const PoolState &ps) {
    std::vector<QueueRow> rows;
    const PoolQueues &pq = ps.queues;
    if (!pq.tree) return rows;
    const std::vector<QueueSpec> &queues = pq.tree->queues;
    std::vector<std::vector<int32_t>> children(queues.size());
    // Pending is each queue's own: summed up the tree as the other figures are.
    std::vector<Amounts> pending = pq.pending;
    for (size_t q = queues.size(); q-- > 1;) {
        children[size_t(queues[q].parent)].insert(children[size_t(queues[q].parent)].begin(), int32_t(q));
        for (size_t k = 0; k < kResources; ++k) pending[size_t(queues[q].parent)][k] += pending[q][k];
    }
    const std::vector<Amounts> lent = lent_by_queues(queues, pq.allocated, pq.capacity);
    for (int32_t c : children[0]) add_subtree(ps, lent, pending, children, c, 1, rows);
    return rows;
}

std::vector<Resource> shown_resources(const Config &cfg) {
    std::vector<Resource> shown{kGpu};
    for (Resource r : {kCpu, kMem})
        if (cfg.counted[r]) shown.push_back(r);
    return shown;
}

std::string tres_name(const Config &cfg, Resource r) { return r == kGpu ? cfg.quota_tres : resource_name(r); }

std::string amount_text(Resource r, uint64_t v) {
    if (r != kMem) return std::to_string(v);
    ResourceAmounts one;
    one.set(kMem, v);
    const std::string text = format_resource_amounts(one, "");  // "mem=768G"
    return text.substr(text.find('=') + 1);
}

const char *standing_text(QueueStanding s) {
    switch (s) {
    case QueueStanding::InQuota: return "in-quota";
    case QueueStanding::OverQuota: return "over-quota";
    case QueueStanding::OverFairshare: return "over-fairshare";
    }
    return "?";
}

const char *standing_code(QueueStanding s) {
    switch (s) {
    case QueueStanding::InQuota: return "in_quota";
    case QueueStanding::OverQuota: return "over_quota";
    case QueueStanding::OverFairshare: return "over_fairshare";
    }
    return "?";
}

json_t *queue_amounts_json(const QueueAmounts &a) {
    json_t *o = json_object();
    auto given = [](bool has, uint64_t v) { return has ? jint(static_cast<int64_t>(v)) : json_null(); };
    put(o, "quota", given(a.has_quota, a.quota));
    put(o, "limit", given(a.has_limit, a.limit));
    put_ints(o, {{"fairshare", static_cast<int64_t>(a.fairshare)},
                 {"used", static_cast<int64_t>(a.used)},
                 {"np_used", static_cast<int64_t>(a.np_used)}});
    put(o, "borrowed", given(a.has_quota, a.borrowed));
    put(o, "lent", given(a.has_quota, a.lent));
    put(o, "pending", jint(static_cast<int64_t>(a.pending)));
    put(o, "standing", a.has_quota ? json_string(standing_code(a.standing)) : json_null());
    return o;
}

int queue_level(const QueueTree &tree, int32_t q) { return depth_of(tree.queues, q); }

}  // namespace gpupool::cli
