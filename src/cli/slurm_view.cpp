// libslurm -> ClusterView.  Each job, node and partition is mapped the way
// gps_snapshot_build() maps slurmctld's own records, from the structures
// slurmctld sends its clients (job_info_t, node_info_t, partition_info_t),
// by the same rules (src/slurm/gpupool_rules.h).
#include "slurm_view.hpp"

#include <pwd.h>
#include "slurm_compat.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <functional>
#include <stdexcept>
#include <vector>

#include "gpupool.h"
#include "gpupool_rules.h"
#include "slurm_text.hpp"

namespace gpupool::cli {

static_assert(int(JobState::Pending) == GP_JOB_PENDING && int(JobState::Running) == GP_JOB_RUNNING &&
                  int(JobState::Suspended) == GP_JOB_SUSPENDED,
              "gpr_job_state's GP_JOB_* are the snapshot's JobState");

namespace {

std::string str(const char *s) { return s ? s : ""; }

[[noreturn]] void fail(const std::string &what) {
    throw std::runtime_error(what + ": " + slurm_strerror(compat::slurm_errno()));
}

// A count of `gres` (of `type`) in a string of GRES in use: a node's
// gres_used or a job's gres_detail_str entry, "gpu:tesla:2(IDX:0-1)", or
// "gpu(CNT:2)" for GRES without device files.
uint64_t gres_in_use(const char *text, const std::string &gres, const std::string &type) {
    std::string in_use = text ? text : "";
    for (size_t at; (at = in_use.find("(CNT:")) != std::string::npos;) {
        in_use.replace(at, 5, ":");
        const size_t close = in_use.find(')', at);
        if (close != std::string::npos) in_use.erase(close, 1);
    }
    return gres_count(in_use, gres, type).value_or(0);
}

// The GPU type of a node's GRES ("gpu:a100:4(S:0-1)": "a100"); "" where it
// has none of `gres`; "?" where they are untyped or of several types (as
// gps_node_gpu_type's NULL: a typed job's plan cannot be worked out).
std::string node_gpu_type(const char *node_gres, const std::string &gres) {
    std::string type;
    bool any = false;
    for (const GresEntry &e : gres_entries(node_gres ? node_gres : "")) {
        std::vector<std::string> f;
        for (const std::string &field : e.fields)
            if (!field.empty()) f.push_back(field);
        if (f.empty() || f[0] != gres) continue;
        const bool typed = f.size() >= 3 || (f.size() == 2 && !slurm_count(f[1]));
        if (!typed || (any && type != f[1])) return "?";
        type = f[1];
        any = true;
    }
    return type;
}

// Not an accounted TRES: the job's own GRES request, of `type` (every type
// where empty) or, with `untyped`, of no type: per type as slurmctld's
// total_gres (gres_ask_total), summed over the types as the plugins sum
// the job's gres_list_req.  `nodes`: a pending job's min_nodes (num_nodes
// may be a past run's or a guess), 0 for num_nodes.
uint64_t gres_request(const slurm_job_info_t &j, const std::string &gres, const std::string &type,
                      uint32_t nodes, bool untyped = false) {
    auto given32 = [](uint32_t v) -> uint64_t { return v == NO_VAL ? 0 : v; };
    auto given16 = [](uint16_t v) -> uint64_t { return v == NO_VAL16 ? 0 : v; };
    const char *specs[4] = {j.tres_per_job, j.tres_per_node, j.tres_per_socket, j.tres_per_task};
    std::map<std::string, GresAsk> by_type;
    for (int k = 0; k < 4; ++k)
        for (const auto &[t, n] : gres_count_by_type(specs[k] ? specs[k] : "", gres)) {
            if (untyped ? !t.empty() : !type.empty() && t != type) continue;
            GresAsk &a = by_type[t];
            (k == 0 ? a.per_job : k == 1 ? a.per_node : k == 2 ? a.per_socket : a.per_task) = n;
        }
    uint64_t total = 0;
    for (auto &[t, a] : by_type) {
        a.nodes = nodes ? nodes : given32(j.num_nodes);
        a.tasks = given32(j.num_tasks);
        a.sockets_per_node = given16(j.sockets_per_node);
        a.tasks_per_socket = given16(j.ntasks_per_socket);
        total += gres_ask_total(a);
    }
    return total;
}

// The job's count of QuotaTRES by gpupool_rules' gpr_gpus_from.  The TRES
// strings slurmctld sends name the accounted TRES a job has, so a count
// found there is a TRES count; clients are not sent allocated GRES.
uint32_t job_gpus(const slurm_job_info_t &j, bool allocated, const std::string &quota_tres,
                  const std::string &gres, const std::string &type, uint32_t nodes) {
    std::optional<uint64_t> alloc, req;
    if (allocated && j.tres_alloc_str) alloc = tres_count(j.tres_alloc_str, quota_tres);
    if (!alloc && j.tres_req_str) req = tres_count(j.tres_req_str, quota_tres);
    uint64_t n = 0;
    switch (gpr_gpus_from(allocated, alloc.has_value(), req.has_value(), false)) {
    case GPR_GPUS_TRES_ALLOC: n = gpr_gpus_value(*alloc); break;
    case GPR_GPUS_TRES_REQ: n = gpr_gpus_value(*req); break;
    case GPR_GPUS_GRES_ALLOC:
    case GPR_GPUS_GRES_REQ: n = gres_request(j, gres, type, nodes); break;
    }
    return gpr_gpus_clamp(n);
}

// gpupool's quota hold (gps_hold_is_ours without the plugin's memory of
// its holds, which a client cannot read; clients are not sent
// direct_set_prio either: a hold by hand says WAIT_HELD_USER, or WAIT_HELD
// without gpupool's text).
bool our_hold(const slurm_job_info_t &j, bool pending) {
    return gpr_hold_may_be_ours(pending, j.priority, false, j.state_reason) && gpr_hold_text_is_ours(j.state_desc);
}

// The pending tasks a meta record stands for: the bits of array_bitmap,
// the task_id_bitmap whose bits slurmctld counts in task_cnt.
uint32_t array_tasks(const slurm_job_info_t &j, bool pending) {
    int64_t tasks = j.array_bitmap ? slurm_bit_set_count(static_cast<bitstr_t *>(j.array_bitmap)) : 0;
    return gpr_array_pending_tasks(pending, j.array_task_id, tasks);
}

// The job's CPUs and memory (MiB) as gps_job_fill reads them: allocated
// for a job that holds resources, else requested (CPUs and memory are
// always accounted TRES).
void job_cpus_mem(const slurm_job_info_t &j, bool allocated, const Config &cfg, SnapJob &sj) {
    const char *tres = allocated && j.tres_alloc_str && *j.tres_alloc_str ? j.tres_alloc_str : j.tres_req_str;
    if (!tres) return;
    if (cfg.counted[kCpu]) sj.cpus = gpr_gpus_clamp(tres_count(tres, "cpu").value_or(0));
    if (cfg.counted[kMem]) sj.mem_mb = tres_mem_mb(tres).value_or(0);
}

// The job's nodes and what it holds on each, for the victim plan, as
// gps_job_nodes reads them in slurmctld: nodes from node_inx, GPUs per node
// from gres_detail_str (SHOW_DETAIL; where it does not list every node,
// e.g. GRES without device files, its GPUs shared evenly), CPUs and memory
// from its allocated TRES shared evenly over its nodes (clients are not
// sent the per-node split; exact for one-node jobs).
void job_node_shares(const slurm_job_info_t &j, bool suspended, const NodeTable &table, bool memory,
                     const std::string &gres, const std::string &type, SnapJob &sj) {
    std::vector<int32_t> nodes;
    for (int k = 0; j.node_inx && j.node_inx[k] >= 0; k += 2)
        for (int32_t n = j.node_inx[k]; n <= j.node_inx[k + 1]; ++n)
            nodes.push_back(n >= 0 && size_t(n) < table.to_snap.size() ? table.to_snap[size_t(n)] : -1);
    if (nodes.empty()) return;
    const bool detail = j.gres_detail_cnt == nodes.size() && j.gres_detail_str;
    const char *tres = j.tres_alloc_str && *j.tres_alloc_str ? j.tres_alloc_str : "";
    const uint64_t cpus = suspended ? 0 : tres_count(tres, "cpu").value_or(0);
    const uint64_t mem = memory ? tres_mem_mb(tres).value_or(0) : 0;
    const uint64_t count = nodes.size();
    auto share = [&](uint64_t total, size_t i) { return total / count + (i < total % count ? 1 : 0); };
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i] < 0) continue;
        NodeShare s;
        s.node = nodes[i];
        s.gpus = gpr_gpus_clamp(detail ? gres_in_use(j.gres_detail_str[i], gres, type) : share(sj.gpus, i));
        s.cpus = gpr_gpus_clamp(share(cpus, i));
        s.mem_mb = share(mem, i);
        sj.nodes.push_back(s);
    }
}

// The job's GPU type ("" none, "?" several), as gps_job_gpu_type: a typed
// QuotaTRES counts one type on every node, so the job's is not looked at.
std::string job_gpu_type(const slurm_job_info_t &j, const std::string &gres, const std::string &quota_type) {
    std::string type;
    if (!quota_type.empty()) return type;
    for (const char *req : {j.tres_per_job, j.tres_per_node, j.tres_per_socket, j.tres_per_task})
        for (const GresEntry &e : gres_entries(req ? req : "")) {
            std::vector<std::string> f;
            for (const std::string &field : e.fields)
                if (!field.empty()) f.push_back(field);
            if (f.size() < 2 || f[0] != gres || (f.size() == 2 && slurm_count(f[1]))) continue;
            if (!type.empty() && type != f[1]) return "?";
            type = f[1];
        }
    return type;
}

// node_inx pairs as a set of Snapshot::nodes indices.
std::set<int32_t> snap_nodes(const int32_t *inx, const NodeTable &table) {
    std::set<int32_t> out;
    for (int k = 0; inx && inx[k] >= 0; k += 2)
        for (int32_t n = inx[k]; n <= inx[k + 1]; ++n)
            if (n >= 0 && size_t(n) < table.to_snap.size() && table.to_snap[size_t(n)] >= 0)
                out.insert(table.to_snap[size_t(n)]);
    return out;
}

// Where a pending job may run, as the plugins' gps_job_nodes_allowed for
// its partitions together: sj.nodes_given with the nodes it may use in
// sj.allowed_nodes, or none where they cannot be worked out (-C with
// counts, brackets or parentheses, a reservation, --exclusive=user or mcs,
// enforce-binding, a partition of whole nodes or capped CPUs per node,
// GPU types that cannot be read, -w naming other than its node count):
// then it gets no victim plan.
void pending_nodes(const slurm_job_info_t &j, const NodeTable &table, const Snapshot &snap, const std::string &gres,
                   const std::string &quota_type, uint32_t min_nodes, SnapJob &sj) {
    auto given = [](const char *s) { return s && *s; };
    // Shared with the user's or the MCS label's jobs (or 24.11's topo):
    // not worked out.  (--exclusive alone: sj.whole_node, load_cluster.)
    const bool shared_some = j.shared != JOB_SHARED_NONE && j.shared != JOB_SHARED_OK && j.shared != NO_VAL16;
    bool part_bound = false;
    for (const std::string &p : sj.partitions) part_bound |= table.bound_partitions.count(p) > 0;
    const std::string type = job_gpu_type(j, gres, quota_type);
    sj.nodes_given = true;
    if (given(j.resv_name) || shared_some || (j.bitflags & GRES_ENFORCE_BIND) || part_bound || type == "?") return;
    const bool req_given = given(j.req_nodes), exc_given = given(j.exc_nodes);
    if (type.empty() && !req_given && !exc_given && !given(j.features)) {
        sj.nodes_given = false;
        return;
    }
    const std::set<int32_t> req = snap_nodes(j.req_node_inx, table), exc = snap_nodes(j.exc_node_inx, table);
    std::set<int32_t> in_parts;
    for (const SnapPartition &p : snap.partitions)
        for (const std::string &name : sj.partitions)
            if (p.name == name) in_parts.insert(p.nodes.begin(), p.nodes.end());
    bool bound = false;
    uint32_t listed = 0;
    std::string names;
    for (int32_t n : in_parts) {
        if ((req_given && !req.count(n)) || (exc_given && exc.count(n))) {
            bound = true;
            continue;
        }
        const int has_features =
            gpr_node_has_features(j.features, size_t(n) < table.features.size() ? table.features[size_t(n)].c_str() : "");
        if (has_features < 0) return;
        if (has_features == 0) {
            bound = true;
            continue;
        }
        if (!type.empty()) {
            const std::string &has = size_t(n) < table.gpu_type.size() ? table.gpu_type[size_t(n)] : "?";
            if (has == "?") return;
            if (!has.empty() && has != type) {
                bound = true;
                continue;
            }
        }
        names += (listed++ ? "," : "") + snap.nodes[size_t(n)].name;
    }
    if (req_given && listed != std::max<uint32_t>(min_nodes, 1)) return;
    if (!bound) sj.nodes_given = false;
    else if (listed) sj.allowed_nodes = names;
}

// As the plugins' _pending_ask: CPUs per GPU, CPUs per node and memory
// per CPU raise a pending job's ask (cons_tres adds them at selection;
// DefCpuPerGPU and DefMemPerGPU once it has tested the job).
void pending_ask(const slurm_job_info_t &j, const std::string &gres, uint32_t min_nodes, SnapJob &sj) {
    const char *tres = j.tres_req_str ? j.tres_req_str : "";
    uint64_t cpus = std::max<uint64_t>({sj.cpus, tres_count(tres, "cpu").value_or(0), j.num_cpus});
    cpus = std::max(cpus, uint64_t(sj.gpus) * per_gres_value(str(j.cpus_per_tres), gres));
    if (j.pn_min_cpus != NO_VAL16 && j.pn_min_cpus)
        cpus = std::max(cpus, uint64_t(j.pn_min_cpus) * std::max<uint32_t>(1, min_nodes));
    uint64_t mem = std::max(sj.mem_mb, tres_mem_mb(tres).value_or(0));
    // As the plugins' _pending_ask, whether or not Slurm allocates memory
    // (a memory quota counts what the job asks).
    if (j.pn_min_memory != NO_VAL64 && (j.pn_min_memory & MEM_PER_CPU))
        mem = std::max(mem, (j.pn_min_memory & ~MEM_PER_CPU) * cpus);
    // As the plugins: memory per GPU (--mem-per-gpu, DefMemPerGPU) only
    // for a job that set no memory of its own (--mem, --mem-per-cpu).
    if (!(j.bitflags & JOB_MEM_SET))
        mem = std::max(mem, uint64_t(sj.gpus) * per_gres_value(str(j.mem_per_tres), gres));
    sj.cpus = gpr_gpus_clamp(cpus);
    sj.mem_mb = mem;
}

// As gpupool_resv.c, from what slurmctld sends its clients: a reservation
// without cores listed or GPUs holds its nodes whole (closed); one of some
// cores keeps them (as CPUs) from other jobs' free CPUs, less what its own
// jobs use (load_cluster); overlapping reservations' cores count once.
// One not started yet (within a year) counts for a job that would run past
// its start (Snapshot::reserved_ahead).  Not as the plugins: reserved cores
// other running jobs hold (FLEX, IGNORE_JOBS, a job that ends before a
// reservation starts) count twice, and floating (TIME_FLOAT) reservations
// not at all.  Clients get a reservation's GPUs as one total, not per node:
// those are not counted.  Unreadable (PrivateData=reservations): none.
void load_reservations(Snapshot &snap, const node_info_msg_t *nodes, const std::vector<int32_t> &node_map,
                       NodeTable &usage) {
    reserve_info_msg_t *resvs = nullptr;
    if (slurm_load_reservations(0, &resvs) != SLURM_SUCCESS || !resvs) return;
    std::unordered_map<std::string, uint32_t> by_name;
    for (uint32_t i = 0; i < nodes->record_count; ++i)
        if (nodes->node_array[i].name) by_name[nodes->node_array[i].name] = i;
    const int64_t now = usage.now ? usage.now : int64_t(time(nullptr));
    // Slurm's CPUs per core where a node's CPUs are its threads (tpc), 1
    // where they are its cores.
    auto cpus_per_core = [](const node_info_t &n) -> uint32_t {
        return n.cpus <= uint32_t(n.sockets) * n.cores ? 1 : std::max<uint16_t>(1, n.threads);
    };
    // What each reservation holds on a node, and from when (now: in force).
    struct Held {
        int64_t from;
        int32_t node;           // snapshot index
        uint32_t table;         // slurmctld's node table index
        bool whole;
        std::string cores;      // its core list there
    };
    std::vector<Held> held;
    for (uint32_t r = 0; r < resvs->record_count; ++r) {
        const reserve_info_t &v = resvs->reservation_array[r];
        if ((v.flags & RESERVE_FLAG_TIME_FLOAT) || now >= int64_t(v.end_time)) continue;
        const bool later = now < int64_t(v.start_time);
        if (later && int64_t(v.start_time) - now >= 365 * 24 * 3600) continue;
        const int64_t from = later ? int64_t(v.start_time) : now;
        std::vector<std::pair<int32_t, uint32_t>> in;
        uint64_t node_cores = 0;
        for (int k = 0; v.node_inx && v.node_inx[k] >= 0; k += 2)
            for (int32_t n = v.node_inx[k]; n <= v.node_inx[k + 1]; ++n)
                if (n >= 0 && size_t(n) < node_map.size() && node_map[size_t(n)] >= 0) {
                    in.emplace_back(node_map[size_t(n)], uint32_t(n));
                    node_cores += uint64_t(nodes->node_array[n].sockets) * nodes->node_array[n].cores;
                }
        if ((!v.core_spec_cnt || !v.core_spec) && !(v.flags & compat::kReserveGres)) {
            // Some cores whose places 22.05 sends only once slurmctld saved
            // the reservation (within 5 s): not whole, none counted yet.
            if (v.core_cnt && v.core_cnt != NO_VAL && v.core_cnt < node_cores) continue;
            for (const auto &n : in) held.push_back(Held{from, n.first, n.second, true, {}});
            continue;
        }
        if (!later) usage.partial_reservations.insert(str(v.name));
        for (uint32_t c = 0; c < v.core_spec_cnt; ++c) {
            auto it = by_name.find(str(v.core_spec[c].node_name));
            if (it == by_name.end() || node_map[it->second] < 0) continue;
            held.push_back(Held{from, node_map[it->second], it->second, false, str(v.core_spec[c].core_id)});
        }
    }
    slurm_free_reservation_info_msg(resvs);
    // Per node, by start: cores ORed; those in force now on the node, and
    // what each later start adds, cumulatively, as the core reads them.
    std::stable_sort(held.begin(), held.end(), [](const Held &a, const Held &b) {
        return a.node != b.node ? a.node < b.node : a.from < b.from;
    });
    std::vector<ReservedAhead> &ahead = snap.reserved_ahead;
    ahead.clear();
    for (size_t i = 0; i < held.size();) {
        const int32_t n = held[i].node;
        const uint32_t per_core = cpus_per_core(nodes->node_array[held[i].table]);
        std::vector<bool> cores;
        bool whole = false;
        uint32_t now_cpus = 0;
        bool now_whole = false;
        for (; i < held.size() && held[i].node == n;) {
            const int64_t from = held[i].from;
            for (; i < held.size() && held[i].node == n && held[i].from == from; ++i) {
                whole |= held[i].whole;
                add_reservation_cores(held[i].cores, cores);
            }
            const uint32_t cpus =
                gpr_gpus_clamp(uint64_t(std::count(cores.begin(), cores.end(), true)) * per_core);
            if (from <= now) {
                now_whole = whole;
                now_cpus = cpus;
                snap.nodes[size_t(n)].closed |= whole;
                snap.nodes[size_t(n)].reserved_cpus = cpus;
            } else if (!now_whole && (whole || cpus > now_cpus)) {
                ahead.push_back(ReservedAhead{n, from, whole, cpus - now_cpus, 0});
            }
        }
    }
}

}  // namespace

bool load_account_tree(const ControllerConf &conf, Snapshot &snap, std::string &why_not) {
    uint16_t flags = 0;
    void *db = slurmdb_connection_get(&flags);
    if (!db) {
        why_not = "slurmdbd not reachable";
        return false;
    }
    compat::list_ptr cluster_list = slurm_list_create(nullptr);
    std::string cluster = conf.cluster;
    if (!cluster.empty()) slurm_list_append(cluster_list, cluster.data());
    slurmdb_assoc_cond_t cond;
    std::memset(&cond, 0, sizeof cond);  // with parent names, without deleted ones
    cond.cluster_list = cluster.empty() ? nullptr : cluster_list;
    compat::list_ptr recs = slurmdb_associations_get(db, &cond);
    if (!recs) {
        why_not = "slurmdbd gave no associations";
    } else {
        compat::list_itr_ptr it = slurm_list_iterator_create(recs);
        while (auto *a = static_cast<slurmdb_assoc_rec_t *>(slurm_list_next(it)))
            if (!a->user && a->acct) snap.account_parent[a->acct] = str(a->parent_acct);
        slurm_list_iterator_destroy(it);
        slurm_list_destroy(recs);
    }
    slurm_list_destroy(cluster_list);
    slurmdb_connection_close(&db);
    return recs != nullptr;
}

std::string user_name(const char *name, uint32_t uid) {
    if (name && *name) return name;
    struct passwd pw, *res = nullptr;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return pw.pw_name;
    return std::to_string(uid);
}

ControllerConf load_controller_conf() {
    slurm_conf_t *c = nullptr;
    if (slurm_load_ctl_conf(0, &c) != SLURM_SUCCESS) fail("cannot read slurmctld's configuration");
    ControllerConf out;
    out.cluster = str(c->cluster_name);
    out.slurm_conf = str(c->slurm_conf);
    out.state_save = str(c->state_save_location);
    out.private_jobs = c->private_data & PRIVATE_DATA_JOBS;
    out.memory_allocated = (c->select_type_param & compat::kSelectMemory) != 0;
    compat::free_ctl_conf(c);
    return out;
}

void load_nodes_partitions(Snapshot &snap, const Config &cfg,
                           std::unordered_map<std::string, uint32_t> *priority_tier, NodeTable *usage) {
    const bool cpus_mem = cfg.counted[kCpu] || cfg.counted[kMem];
    std::string gres, type;
    split_quota_tres(cfg.quota_tres, gres, type);

    node_info_msg_t *nodes = nullptr;
    // SHOW_DETAIL: slurmctld sends each node's GRES in use (gres_used) only then.
    if (slurm_load_node(0, &nodes, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) fail("cannot read nodes");
    // Node table index -> snapshot index (-1: an empty slot of the table).
    std::vector<int32_t> node_map(nodes->record_count, -1);
    for (uint32_t i = 0; i < nodes->record_count; ++i) {
        const node_info_t &n = nodes->node_array[i];
        if (!n.name) continue;
        uint64_t gpus = 0;
        if (!gpr_node_unusable(n.node_state) && n.gres) gpus = gres_count(n.gres, gres, type).value_or(0);
        node_map[i] = snap.add_node(n.name, gpr_gpus_clamp(gpus));
        // Free GPUs (`status`'s placement table, and `why`'s victim plan
        // with `usage`).  A closed node's free GPUs hold no job now.
        if (gpus > 0 && !gpr_node_closed(n.node_state)) {
            // Shards and MPS share GPUs: where QuotaTRES counts another
            // GRES, or GPUs of another type than the node's, none here.
            const bool shared = compat::kSharedGresHoldsGpus && gres == "gpu" &&
                                (type.empty() || node_gpu_type(n.gres, gres) == type);
            const uint64_t used = gres_in_use(n.gres_used, gres, type) + (shared ? shared_gres_gpus(str(n.gres_used)) : 0);
            snap.nodes.back().free_gpus = gpr_gpus_clamp(gpus - std::min(gpus, used));
        }
        if (usage) {
            // As gps_node_usage: the CPUs and memory Slurm gives jobs there.
            SnapNode &sn = snap.nodes.back();
            sn.completing = (n.node_state & NODE_STATE_COMPLETING) != 0;
            sn.closed = gpr_node_closed(n.node_state) || gpr_node_unusable(n.node_state);
            usage->gpu_type.push_back(node_gpu_type(n.gres, gres));
            usage->features.push_back(str(n.features_act ? n.features_act : n.features));
            if (!gpr_node_unusable(n.node_state)) {
                sn.room_cpus = n.cpus_efctv;
                if (usage->memory_allocated)
                    sn.room_mem_mb = n.real_memory > n.mem_spec_limit ? n.real_memory - n.mem_spec_limit : 0;
            }
        }
        if (cpus_mem && !gpr_node_unusable(n.node_state)) {
            snap.nodes.back().cpus = n.cpus;
            snap.nodes.back().mem_mb = n.real_memory;
        }
    }
    if (usage) load_reservations(snap, nodes, node_map, *usage);
    slurm_free_node_info_msg(nodes);

    partition_info_msg_t *parts = nullptr;
    if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS) fail("cannot read partitions");
    for (uint32_t i = 0; i < parts->record_count; ++i) {
        const partition_info_t &p = parts->partition_array[i];
        if (!p.name) continue;
        std::vector<int32_t> idx;
        // node_inx: pairs of first/last node table index, then -1.
        for (int k = 0; p.node_inx && p.node_inx[k] >= 0; k += 2)
            for (int32_t n = p.node_inx[k]; n <= p.node_inx[k + 1]; ++n)
                if (n >= 0 && size_t(n) < node_map.size() && node_map[size_t(n)] >= 0) idx.push_back(node_map[size_t(n)]);
        snap.add_partition(p.name, std::move(idx));
        snap.partitions.back().lln = (p.flags & PART_FLAG_LLN) != 0;
        snap.partitions.back().whole_nodes = p.max_share == 0;
        if (priority_tier) (*priority_tier)[p.name] = p.priority_tier;
        if (!usage) continue;
        usage->max_time[p.name] = p.max_time;
        // As gps_node_usage: jobs may hold the same CPUs under
        // OverSubscribe=YES:N or FORCE:N, N > 1: CPUs not counted there.
        if ((p.max_share & ~SHARED_FORCE) > 1)
            for (int32_t n : snap.partitions.back().nodes) snap.nodes[size_t(n)].room_cpus = 0;
        // As _part_bound_unknown: whole nodes, or CPUs capped per node.
        if (p.max_share == 0 || (p.max_cpus_per_node != INFINITE && p.max_cpus_per_node != NO_VAL &&
                                 p.max_cpus_per_node != 0))
            usage->bound_partitions.insert(p.name);
    }
    snap.one_node_by_weight = compat::kOneNodeByWeight;
    slurm_free_partition_info_msg(parts);
    if (usage) usage->to_snap = std::move(node_map);
}

void load_cluster(ClusterView &view, const Config &cfg, const ControllerConf &conf, bool node_usage) {
    const std::string &quota_tres = cfg.quota_tres;
    const bool accounts = !cfg.accounts.empty(), cpus_mem = cfg.counted[kCpu] || cfg.counted[kMem];
    std::string gres, type;
    split_quota_tres(quota_tres, gres, type);
    // Node usage (`why`'s victim plan, `queue`'s one-node check) where QuotaTRES is a GRES, and
    // where the caller sees every job (PrivateData=jobs hides others').
    NodeTable table;
    table.memory_allocated = conf.memory_allocated;
    table.now = view.now;
    const bool usage = node_usage && !gres.empty() && !(conf.private_jobs && getuid() != 0);
    load_nodes_partitions(view.snap, cfg, nullptr, usage ? &table : nullptr);

    job_info_msg_t *jobs = nullptr;
    // SHOW_DETAIL: each running job's GRES per node (gres_detail_str).
    if (slurm_load_jobs(0, &jobs, SHOW_ALL | (usage ? SHOW_DETAIL : 0)) != SLURM_SUCCESS) fail("cannot read jobs");
    // Each array's running tasks, for the tasks its record stands for; and
    // each job's state, for the jobs that depend on it.
    std::unordered_map<uint32_t, uint32_t> array_running;
    std::unordered_map<uint32_t, const slurm_job_info_t *> by_id;
    std::map<std::pair<uint32_t, uint32_t>, const slurm_job_info_t *> by_task;
    std::unordered_map<uint32_t, DependedState> array_state;  // its least advanced task
    auto state_of_record = [](const slurm_job_info_t &j) {
        const uint32_t base = j.job_state & JOB_STATE_BASE;
        return base == JOB_PENDING ? DependedState::Pending
               : base <= JOB_SUSPENDED ? DependedState::Started
                                       : DependedState::Ended;
    };
    for (uint32_t i = 0; i < jobs->record_count; ++i) {
        const slurm_job_info_t &j = jobs->job_array[i];
        if (j.array_job_id && gpr_job_state(j.job_state) == static_cast<int>(JobState::Running))
            ++array_running[j.array_job_id];
        by_id[j.job_id] = &j;
        if (j.array_job_id) {
            if (j.array_task_id != NO_VAL) by_task[{j.array_job_id, j.array_task_id}] = &j;
            auto [it, fresh] = array_state.try_emplace(j.array_job_id, state_of_record(j));
            if (!fresh) it->second = std::min(it->second, state_of_record(j));
        }
    }
    // As find_job_array_rec() finds what a dependency names.
    auto depended = [&](uint32_t id, int64_t task) {
        if (task == -2) {
            auto a = array_state.find(id);
            if (a != array_state.end()) return a->second;
        } else if (task >= 0) {
            auto t = by_task.find({id, static_cast<uint32_t>(task)});
            if (t != by_task.end()) return state_of_record(*t->second);
            auto meta = by_id.find(id);  // a task still in its pending record
            if (meta != by_id.end() && meta->second->array_bitmap &&
                task < slurm_bit_size(static_cast<bitstr_t *>(meta->second->array_bitmap)) &&
                slurm_bit_test(static_cast<bitstr_t *>(meta->second->array_bitmap), task))
                return DependedState::Pending;
            return DependedState::Ended;
        }
        auto j = by_id.find(id);
        return j != by_id.end() ? state_of_record(*j->second) : DependedState::Ended;
    };
    for (uint32_t i = 0; i < jobs->record_count; ++i) {
        const slurm_job_info_t &j = jobs->job_array[i];
        int state = gpr_job_state(j.job_state);
        if (state < 0) continue;
        SnapJob sj;
        sj.id = j.job_id;
        sj.state = static_cast<JobState>(state);
        // Running: the one partition it runs in (Slurm rebuilds the field
        // then); pending: every partition it may run in.
        sj.partitions = split_list(str(j.partition));
        sj.qos = str(j.qos);
        bool pending = sj.state == JobState::Pending;
        // details->min_nodes: slurmctld sends it in the requested TRES
        // (num_nodes may be a past run's or a guess of its last try).
        const uint32_t min_nodes =
            pending ? gpr_gpus_clamp(tres_count(j.tres_req_str ? j.tres_req_str : "", "node")
                                         .value_or(std::max<uint32_t>(1, j.num_nodes)))
                    : 0;
        sj.gpus = job_gpus(j, !pending, quota_tres, gres, type, min_nodes);
        // As gps_job_size: GPUs of no type where QuotaTRES counts one type
        // (its requested TRES count none of them there).
        if (pending && !type.empty())
            if (const uint64_t untyped = gres_request(j, gres, type, min_nodes, true)) {
                sj.gpus = gpr_gpus_clamp(gres_request(j, gres, type, min_nodes) + untyped);
                sj.gpus_untyped = true;
            }
        sj.submit_time = gpr_submit_time(j.submit_time, view.now);
        sj.start_time = j.start_time;
        sj.restart_cnt = j.restart_cnt;
        // As the plugin's GP_JOB_STAYS (gpupool_slurm.c), but for the
        // tier's and slurm.conf's PreemptMode: consolidation would not move
        // it.
        // (enforce-binding too, as its _bound_unknown; --exclusive=user
        // cannot be told from an ExclusiveUser partition here).
        sj.stays = sj.state == JobState::Running &&
                   (!j.requeue || !j.batch_flag || j.shared == JOB_SHARED_NONE ||
                    (j.bitflags & GRES_ENFORCE_BIND) || (j.req_nodes && *j.req_nodes) ||
                    (j.exc_nodes && *j.exc_nodes) ||
                    (j.features && *j.features) || (j.resv_name && *j.resv_name) ||
                    (j.het_job_id && j.het_job_id != NO_VAL));
        // As the plugins' GP_JOB_WHOLE_NODE (_gets_whole_nodes): --exclusive
        // (sent as "not shared"), or a partition of whole nodes.
        sj.whole_node = pending && j.shared == JOB_SHARED_NONE;
        for (const SnapPartition &p : view.snap.partitions)
            if (pending && p.whole_nodes && std::find(sj.partitions.begin(), sj.partitions.end(), p.name) != sj.partitions.end())
                sj.whole_node = true;
        sj.array_tasks = array_tasks(j, pending);
        // As gps_job_fill; the throttle slurmctld sends may be gpupool's cap
        // (at most the user's): the tasks the last pass let start.
        if (sj.array_tasks > 1)
            sj.array_tasks = gpr_array_startable_tasks(sj.array_tasks, j.array_max_tasks, array_running[j.array_job_id]);
        sj.array_job_id = j.array_job_id;
        sj.user_held = gpr_user_held(pending, j.priority, our_hold(j, pending));
        // As the plugins' GP_JOB_DEPENDENT.
        sj.dependent = pending && (j.state_reason == WAIT_DEP_INVALID ||
                                   (j.dependency && dependency_waits(j.dependency, depended)) ||
                                   // gps_job_begins_later: a pending job's eligible_time is its begin time
                                   (int64_t(j.eligible_time) > int64_t(time(nullptr)) &&
                                    j.eligible_time > j.submit_time &&
                                    (!j.restart_cnt || j.eligible_time > j.submit_time + 1201)));
        // As the plugins' GP_JOB_OVER_LIMIT, where Slurm shows it.
        sj.over_limit =
            pending && limit_reason(compat::job_reason_string(static_cast<job_state_reason>(j.state_reason)));
        // As gps_job_fill.
        if (pending && j.het_job_id && j.het_job_id != NO_VAL) sj.het_job_id = j.het_job_id;
        if (accounts) sj.account = str(j.account);
        if (cpus_mem) job_cpus_mem(j, !pending, cfg, sj);
        if (pending) sj.node_count = min_nodes;  // as the plugins' gp_job_t.nodes
        if (usage && pending) {
            pending_nodes(j, table, view.snap, gres, type, min_nodes, sj);
            pending_ask(j, gres, min_nodes, sj);
            // As gps_job_fill (gang scheduling's slices not read here).
            auto mt = table.max_time.find(sj.partitions.empty() ? std::string() : sj.partitions.front());
            sj.run_limit = gpr_run_limit(j.time_limit, mt != table.max_time.end() ? mt->second : NO_VAL, 1);
        } else if (usage) {
            job_node_shares(j, sj.state == JobState::Suspended, table, conf.memory_allocated, gres, type, sj);
            // A job of a reservation of some cores runs on them: not reserved and free too.
            if (j.resv_name && table.partial_reservations.count(j.resv_name))
                for (const NodeShare &s : sj.nodes) {
                    uint32_t &r = view.snap.nodes[size_t(s.node)].reserved_cpus;
                    r -= std::min(r, s.cpus);
                }
        }

        JobMeta m;
        m.name = str(j.name);
        m.user = user_name(j.user_name, j.user_id);
        m.partition = str(j.partition);
        m.state = str(slurm_job_state_string(j.job_state));
        // As squeue's %r: the reason's text when Slurm (or gpupool) set one.
        m.slurm_reason = j.state_desc && *j.state_desc
                             ? str(j.state_desc)
                             : str(compat::job_reason_string(static_cast<job_state_reason>(j.state_reason)));
        m.state_desc = str(j.state_desc);
        m.slurm_priority = j.priority;
        m.array_job_id = j.array_job_id;
        if (j.array_job_id) {
            if (j.array_task_id != NO_VAL)
                m.array_task = std::to_string(j.array_task_id);
            else
                m.array_task = str(j.array_task_str);
        }
        m.submit_time = j.submit_time;
        m.start_time = j.start_time;
        if (pending && (gpr_not_eligible(j.state_reason) || sj.over_limit)) view.not_eligible.insert(j.job_id);
        view.meta.emplace(j.job_id, std::move(m));
        view.snap.add_job(std::move(sj));
    }
    slurm_free_job_info_msg(jobs);
    view.snap.node_usage = usage;

    std::string why_not;
    if (accounts && !load_account_tree(conf, view.snap, why_not))
        view.notes.push_back("Slurm's account tree unknown (" + why_not +
                             "): every account counts at the top of its pool");
    if (conf.private_jobs && getuid() != 0)
        view.notes.push_back("PrivateData=jobs: only the jobs you may see are counted; figures of other users' jobs "
                             "are missing");
}

bool for_each_job_record(const std::vector<uint32_t> &jobs, const ControllerConf &conf, int64_t since, int64_t end,
                         const std::function<void(const slurmdb_job_rec_t &)> &each, std::string &why_not) {
    std::vector<slurm_selected_step_t> steps;
    for (uint32_t id : jobs) {
        slurm_selected_step_t s;
        std::memset(&s, 0, sizeof s);
        s.array_task_id = NO_VAL;
        s.het_job_offset = NO_VAL;
        s.step_id.job_id = id;
        s.step_id.step_id = NO_VAL;
        s.step_id.step_het_comp = NO_VAL;
        steps.push_back(s);
    }
    uint16_t flags = 0;
    void *db = slurmdb_connection_get(&flags);
    if (!db) {
        why_not = "slurmdbd not reachable";
        return false;
    }
    // Our lists own nothing: the items live in `steps` and `conf`.
    compat::list_ptr step_list = slurm_list_create(nullptr);
    for (slurm_selected_step_t &s : steps) slurm_list_append(step_list, &s);
    compat::list_ptr cluster_list = slurm_list_create(nullptr);
    std::string cluster = conf.cluster;
    if (!cluster.empty()) slurm_list_append(cluster_list, cluster.data());
    slurmdb_job_cond_t cond;
    std::memset(&cond, 0, sizeof cond);
    // With a job list, slurmdbd applies the window only without
    // NO_DEFAULT_USAGE: records submitted before `end` that ended at or
    // after `since` (or run still).  since 0: every record.
    cond.flags = JOBCOND_FLAG_DUP | JOBCOND_FLAG_NO_STEP | (since > 0 ? 0 : JOBCOND_FLAG_NO_DEFAULT_USAGE);
    cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;  // 0 would select jobs with no flag bit set: none
    cond.step_list = step_list;
    cond.cluster_list = cluster.empty() ? nullptr : cluster_list;
    cond.usage_start = static_cast<time_t>(since);
    cond.usage_end = static_cast<time_t>(end);
    compat::list_ptr recs = slurmdb_jobs_get(db, &cond);
    if (!recs) {
        why_not = "slurmdbd gave no job records";
    } else {
        compat::list_itr_ptr it = slurm_list_iterator_create(recs);
        while (auto *r = static_cast<slurmdb_job_rec_t *>(slurm_list_next(it))) each(*r);
        slurm_list_iterator_destroy(it);
        slurm_list_destroy(recs);
    }
    slurm_list_destroy(step_list);
    slurm_list_destroy(cluster_list);
    slurmdb_connection_close(&db);
    return recs != nullptr;
}

std::unordered_map<uint32_t, int64_t> first_submit_times(const std::vector<uint32_t> &jobs, int64_t since,
                                                         int64_t until, const ControllerConf &conf,
                                                         std::string &why_not) {
    std::unordered_map<uint32_t, int64_t> out;
    if (jobs.empty()) return out;
    // [since, until]
    for_each_job_record(
        jobs, conf, since, until + 1,
        [&out](const slurmdb_job_rec_t &r) {
            if (r.submit <= 0) return;
            auto [pos, fresh] = out.emplace(r.jobid, int64_t(r.submit));
            if (!fresh) pos->second = std::min<int64_t>(pos->second, r.submit);
        },
        why_not);
    return out;
}

}  // namespace gpupool::cli
