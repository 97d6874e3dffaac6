// The C ABI: building a snapshot of the cluster for a pass.
#include "capi.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

using namespace gpupool;
using namespace gpupool::capi;

namespace {

// `dst` = `src`, in a spare room where `src` is too long for the string's own.
void set_name(std::string &dst, const char *src, std::vector<std::string> &spares) {
    if (!src) {
        dst.clear();
        return;
    }
    const size_t len = std::strlen(src);
    if (len > dst.capacity() && !spares.empty()) {
        dst = std::move(spares.back());
        spares.pop_back();
    }
    dst.assign(src, len);
}

// Into `s`, a new job.
void fill_snap_job(const gp_job_t *j, SnapJob &s, SnapshotSpares &spares) {
    s.id = j->job_id;
    s.state = j->state == GP_JOB_RUNNING ? JobState::Running
              : j->state == GP_JOB_SUSPENDED ? JobState::Suspended
                                             : JobState::Pending;
    for (const char *p = j->partitions; p && *p;) {
        const char *end = std::strchr(p, ',');
        size_t len = end ? static_cast<size_t>(end - p) : std::strlen(p);
        if (len) s.partitions.emplace_back(p, len);  // as split_list()
        p += len + (end ? 1 : 0);
    }
    set_name(s.qos, j->qos, spares.names);
    s.gpus = j->gpus;
    s.submit_time = j->submit_time;
    s.start_time = j->start_time;
    s.user_held = j->user_held != 0;
    s.restart_cnt = j->restart_cnt;
    s.array_tasks = j->array_tasks;
    s.array_job_id = j->array_job_id;
    set_name(s.account, j->account, spares.names);
    s.cpus = j->cpus;
    s.mem_mb = j->mem_mb;
    s.node_count = j->nodes;
    s.stays = (j->flags & GP_JOB_STAYS) != 0;
    s.nodes_given = (j->flags & GP_JOB_NODES_GIVEN) != 0;
    s.whole_node = (j->flags & GP_JOB_WHOLE_NODE) != 0;
    s.gpus_untyped = (j->flags & GP_JOB_GPUS_UNTYPED) != 0;
    s.dependent = (j->flags & GP_JOB_DEPENDENT) != 0;
    s.over_limit = (j->flags & GP_JOB_OVER_LIMIT) != 0;
    set_name(s.allowed_nodes, s.nodes_given ? j->allowed_nodes : nullptr, spares.names);
    s.run_limit = j->run_limit > 0 ? j->run_limit : 0;
    s.het_job_id = j->het_job_id;
}

// The spares of the last snapshot freed, for the next one created.
std::mutex spares_mu;
SnapshotSpares kept_spares;

}  // namespace

GP_EXPORT gp_snapshot_t *gp_snapshot_create(void) {
    gp_snapshot *s = new (std::nothrow) gp_snapshot;
    if (s) {
        std::lock_guard<std::mutex> lock(spares_mu);
        std::swap(s->spares, kept_spares);
    }
    return s;
}

GP_EXPORT void gp_snapshot_destroy(gp_snapshot_t *s) {
    if (!s) return;
    SnapshotSpares &spares = s->spares;
    try {
        for (SnapJob &j : s->snap.jobs) {
            // A string's own room holds 15 bytes: more is heap.
            if (j.qos.capacity() > std::string().capacity()) spares.names.push_back(std::move(j.qos));
            if (j.account.capacity() > std::string().capacity()) spares.names.push_back(std::move(j.account));
            if (j.nodes.capacity()) spares.node_lists.push_back(std::move(j.nodes));
        }
    } catch (...) {  // no room to keep them: they are freed with the jobs
    }
    {
        // Keep the larger (a pass's, not a refresh's).
        std::lock_guard<std::mutex> lock(spares_mu);
        if (kept_spares.names.size() + kept_spares.node_lists.size() <= spares.names.size() + spares.node_lists.size())
            std::swap(kept_spares, spares);
    }
    delete s;
}

GP_EXPORT void gp_snapshot_reserve(gp_snapshot_t *s, size_t nodes, size_t jobs) {
    if (!s) return;
    try {
        s->snap.nodes.reserve(nodes);
        s->snap.jobs.reserve(jobs);
    } catch (...) {
    }
}

GP_EXPORT int32_t gp_snapshot_add_node(gp_snapshot_t *s, const char *name, uint32_t gpus) {
    if (!s || !name) return -1;
    try {
        return s->snap.add_node(name, gpus);
    } catch (...) {
        return -1;
    }
}

GP_EXPORT int gp_snapshot_add_partition(gp_snapshot_t *s, const char *name, const int32_t *node_index,
                                        size_t node_count) {
    if (!s || !name || (!node_index && node_count)) return GP_ERR_ARG;
    return guarded(GP_ERR_ARG, nullptr, 0, [&] {
        s->snap.add_partition(name, std::vector<int32_t>(node_index, node_index + node_count));
    });
}

GP_EXPORT int gp_snapshot_add_job(gp_snapshot_t *s, const gp_job_t *job) {
    if (!s || !job) return GP_ERR_ARG;
    return guarded(GP_ERR_ARG, nullptr, 0, [&] {
        SnapJob j;
        fill_snap_job(job, j, s->spares);
        s->snap.jobs.push_back(std::move(j));
    });
}

GP_EXPORT int gp_snapshot_set_node_resources(gp_snapshot_t *s, int32_t node_index, uint32_t cpus,
                                             uint64_t mem_mb) {
    if (!s || node_index < 0 || size_t(node_index) >= s->snap.nodes.size()) return GP_ERR_ARG;
    SnapNode &n = s->snap.nodes[size_t(node_index)];
    n.cpus = cpus;
    n.mem_mb = mem_mb;
    return GP_OK;
}

GP_EXPORT int gp_snapshot_set_node_gpus_explicit(gp_snapshot_t *s, int32_t node_index) {
    if (!s || node_index < 0 || size_t(node_index) >= s->snap.nodes.size()) return GP_ERR_ARG;
    s->snap.nodes[size_t(node_index)].gpus_explicit = true;
    return GP_OK;
}

GP_EXPORT int gp_snapshot_set_node_usage(gp_snapshot_t *s, int32_t node_index, uint32_t free_gpus,
                                         uint32_t flags) {
    if (!s || node_index < 0 || size_t(node_index) >= s->snap.nodes.size()) return GP_ERR_ARG;
    SnapNode &n = s->snap.nodes[size_t(node_index)];
    n.free_gpus = std::min(free_gpus, n.gpus);
    n.completing = (flags & GP_NODE_COMPLETING) != 0;
    n.closed = (flags & GP_NODE_CLOSED) != 0;
    s->snap.node_usage = true;
    return GP_OK;
}

GP_EXPORT int gp_snapshot_set_node_room(gp_snapshot_t *s, int32_t node_index, uint32_t cpus, uint64_t mem_mb) {
    if (!s || node_index < 0 || size_t(node_index) >= s->snap.nodes.size()) return GP_ERR_ARG;
    SnapNode &n = s->snap.nodes[size_t(node_index)];
    n.room_cpus = cpus;
    n.room_mem_mb = mem_mb;
    return GP_OK;
}

GP_EXPORT int gp_snapshot_set_node_reserved(gp_snapshot_t *s, int32_t node_index, uint32_t cpus) {
    if (!s || node_index < 0 || size_t(node_index) >= s->snap.nodes.size()) return GP_ERR_ARG;
    s->snap.nodes[size_t(node_index)].reserved_cpus = cpus;
    return GP_OK;
}

GP_EXPORT int gp_snapshot_add_node_reserved_ahead(gp_snapshot_t *s, int32_t node_index, int64_t from, int whole,
                                                  uint32_t cpus, uint32_t gpus) {
    if (!s || node_index < 0 || size_t(node_index) >= s->snap.nodes.size()) return GP_ERR_ARG;
    s->snap.reserved_ahead.push_back(ReservedAhead{node_index, from, whole != 0, cpus, gpus});
    return GP_OK;
}

GP_EXPORT int gp_snapshot_add_job_reserved(gp_snapshot_t *s, int32_t node_index, int64_t from, uint32_t cpus,
                                          uint32_t gpus) {
    if (!s || s->snap.jobs.empty() || node_index < 0 || size_t(node_index) >= s->snap.nodes.size())
        return GP_ERR_ARG;
    const SnapJob &j = s->snap.jobs.back();
    if (!holds_gpus(j.state)) return GP_ERR_ARG;
    return guarded(GP_ERR_ARG, nullptr, 0, [&] {
        s->snap.held_reserved.push_back(HeldReserved{j.id, node_index, from, cpus, gpus});
        return GP_OK;
    });
}

GP_EXPORT int gp_snapshot_set_job_node_resources(gp_snapshot_t *s, const uint32_t *cpus, const uint64_t *mem_mb,
                                                 size_t count) {
    if (!s || s->snap.jobs.empty()) return GP_ERR_ARG;
    std::vector<NodeShare> &nodes = s->snap.jobs.back().nodes;
    if (count != nodes.size()) return GP_ERR_ARG;
    for (size_t i = 0; i < count; ++i) {
        nodes[i].cpus = cpus ? cpus[i] : 0;
        nodes[i].mem_mb = mem_mb ? mem_mb[i] : 0;
    }
    return GP_OK;
}

GP_EXPORT int gp_snapshot_set_partition_lln(gp_snapshot_t *s) {
    if (!s || s->snap.partitions.empty()) return GP_ERR_ARG;
    s->snap.partitions.back().lln = true;
    return GP_OK;
}

GP_EXPORT int gp_snapshot_set_one_node_by_weight(gp_snapshot_t *s) {
    if (!s) return GP_ERR_ARG;
    s->snap.one_node_by_weight = true;
    return GP_OK;
}

GP_EXPORT int gp_snapshot_set_job_nodes(gp_snapshot_t *s, const int32_t *node_index, const uint32_t *gpus,
                                        size_t count) {
    if (!s || s->snap.jobs.empty() || (count && (!node_index || !gpus))) return GP_ERR_ARG;
    for (size_t i = 0; i < count; ++i)
        if (node_index[i] < 0 || size_t(node_index[i]) >= s->snap.nodes.size()) return GP_ERR_ARG;
    return guarded(GP_ERR_ARG, nullptr, 0, [&] {
        std::vector<NodeShare> &nodes = s->snap.jobs.back().nodes;
        nodes.clear();
        std::vector<std::vector<NodeShare>> &spare = s->spares.node_lists;
        if (count > nodes.capacity() && !spare.empty()) {
            nodes.swap(spare.back());
            spare.pop_back();
            nodes.clear();
        }
        nodes.reserve(count);
        for (size_t i = 0; i < count; ++i) nodes.push_back(NodeShare{node_index[i], gpus[i]});
    });
}

GP_EXPORT int gp_snapshot_add_account(gp_snapshot_t *s, const char *account, const char *parent) {
    if (!s || !account || !*account) return GP_ERR_ARG;
    return guarded(GP_ERR_ARG, nullptr, 0,
                   [&] { s->snap.account_parent[account] = parent ? parent : ""; });
}
