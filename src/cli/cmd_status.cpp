// `gpupool status`: each pool's figures and the node sets, as tables or JSON.
#include <algorithm>
#include <ostream>

#include "command_pass.hpp"
#include "placement.hpp"
#include "queue_figures.hpp"
#include "slurm_text.hpp"

namespace gpupool::cli {

namespace {

// What status shows: the pools asked for (-p, or all) and the node sets
// holding one of them.
struct StatusModel {
    std::vector<size_t> pools;                      // indexes in the evaluation
    std::vector<const NodeSetExplain *> node_sets;  // in the explanation's order
};

StatusModel status_model(const Pass &p, int only) {
    StatusModel s;
    for (size_t i = 0; i < p.ev().pools.size(); ++i)
        if (only < 0 || size_t(only) == i) s.pools.push_back(i);
    for (const NodeSetExplain &ns : p.x.node_sets)
        if (only < 0 || std::find(ns.pools.begin(), ns.pools.end(), only) != ns.pools.end()) s.node_sets.push_back(&ns);
    return s;
}

// ------------------------------------------------------------------ JSON

// priority/gpupool's passes (gpupool_stats.json); figures null when the
// file could not be read.
json_t *passes_json(const ClusterView &v) {
    const PluginPasses &pp = v.passes;
    const PassStats &s = pp.stats;
    const bool ok = pp.available;
    auto secs = [&](uint64_t us) { return ok ? json_real(static_cast<double>(us) / 1e6) : json_null(); };
    json_t *o = json_object();
    put(o, "available", json_boolean(ok));
    put(o, "path", jstr(pp.path));
    put(o, "error", pp.error.empty() ? json_null() : jstr(pp.error));
    put(o, "written_at", ok ? jint(s.written) : json_null());
    put(o, "passes", ok ? jint(s.passes) : json_null());
    put(o, "since", ok && s.passes ? jint(s.since) : json_null());
    put(o, "last_end", ok && s.passes ? jint(s.last_end) : json_null());
    put(o, "last_seconds", secs(s.last.total));
    put(o, "max_seconds", secs(s.max.total));
    put(o, "mean_seconds", ok && s.passes ? json_real(static_cast<double>(s.sum.total) / 1e6 / s.passes) : json_null());
    return o;
}

json_t *tiers_json(const Config &cfg) {
    return jarray_of(cfg.tiers, [](json_t *o, const Tier &t) {
        put(o, "name", jstr(t.name));
        put(o, "priority", jint(t.priority));
        put(o, "preemptible", json_boolean(t.preemptible));
    });
}

// The queue of rows[i] and, in "queues", its children.
json_t *queue_json(const Config &cfg, const std::vector<QueueRow> &rows, size_t i) {
    const QueueRow &row = rows[i];
    json_t *o = json_object();
    put(o, "account", jstr(row.spec->name));
    put_ints(o, {{"level", row.level}, {"weight", row.spec->weight}, {"rank", row.spec->rank}});
    json_t *res = json_object();
    for (Resource r : shown_resources(cfg)) put(res, resource_word(r), queue_amounts_json(row.res[r]));
    put(o, "resources", res);
    json_t *children = json_array();
    for (size_t c : row.children) json_array_append_new(children, queue_json(cfg, rows, c));
    put(o, "queues", children);
    return o;
}

// A pool's top-level queues, each with its subtree.
json_t *queues_json(const Config &cfg, const std::vector<QueueRow> &rows) {
    json_t *a = json_array();
    for (size_t i = 0; i < rows.size(); ++i)
        if (rows[i].level == 1) json_array_append_new(a, queue_json(cfg, rows, i));
    return a;
}

// Placement= as the pool gets it, and where its free GPUs are (from each
// node's free GPUs as slurmctld reports them).
struct PoolPlacement {
    const char *strategy = "slurm";
    uint32_t free_gpus = 0, largest_free = 0, whole_nodes = 0;
};

PoolPlacement pool_placement_of(const Pass &p, const PoolState &ps) {
    PoolPlacement out;
    const Pool &cp = p.cfg().pools[size_t(ps.config_index)];
    for (const SnapPartition &part : p.view.snap.partitions) {
        if (part.name != ps.name) continue;
        const Placement pl = pool_placement(cp, part.lln);
        out.strategy = pl == Placement::Pack ? "pack" : pl == Placement::Spread ? "spread" : "slurm";
        for (int32_t n : part.nodes) {
            const SnapNode &node = p.view.snap.nodes[size_t(n)];
            out.free_gpus += node.free_gpus;
            out.largest_free = std::max(out.largest_free, node.free_gpus);
            out.whole_nodes += node.gpus > 0 && node.free_gpus == node.gpus ? 1 : 0;
        }
        break;
    }
    return out;
}

json_t *pool_json(const Pass &p, size_t i) {
    const PoolState &ps = p.ev().pools[i];
    const PoolExplain &px = p.x.pools[i];
    json_t *o = json_object();
    put(o, "name", jstr(ps.name));
    put(o, "node_set", px.node_set >= 0 ? jint(px.node_set) : json_null());
    put(o, "shared", json_boolean(px.shared));
    put_ints(o, {{"capacity", ps.capacity}, {"quota", ps.quota}, {"weight", ps.weight},
                 {"rank", p.cfg().pools[size_t(ps.config_index)].rank},
                 {"min_runtime", ps.min_runtime}, {"np_used", ps.np_used()}, {"p_used", ps.p_used()},
                 {"p_in_quota", px.p_in_quota}, {"used", ps.used()}, {"np_reserved", ps.np_reserved()},
                 {"borrowed", ps.borrowed()}});
    put(o, "borrowed_from", pool_gpus_json(p, px.borrowed_from));
    put(o, "lent", jint(ps.lent));
    put(o, "lent_to", pool_gpus_json(p, px.lent_to));
    put_ints(o, {{"reclaimable", px.reclaimable}, {"free_quota", px.free_quota}, {"free_gpus", px.free_gpus}});
    put(o, "fairshare", p.fairshare_known ? jint(ps.fairshare) : json_null());
    put(o, "decayed_usage", p.usage_known ? json_real(ps.decayed_usage) : json_null());
    put(o, "usage_share", p.usage_known ? json_real(ps.usage_share) : json_null());
    put_ints(o, {{"pending_jobs", ps.pending_jobs}, {"pending_gpus", ps.pending_gpus}, {"held_jobs", ps.held_jobs}});
    json_t *by_tier = json_array();
    for (size_t t = 0; t < p.cfg().tiers.size(); ++t) {
        json_t *bt = json_object();
        put(bt, "tier", jstr(p.cfg().tiers[t].name));
        put_ints(bt, {{"jobs", px.pending_jobs_by_tier[t]}, {"gpus", px.pending_gpus_by_tier[t]}});
        json_array_append_new(by_tier, bt);
    }
    put(o, "pending_by_tier", by_tier);
    const PoolPlacement pl = pool_placement_of(p, ps);
    json_t *place = json_object();
    put(place, "strategy", jstr(pl.strategy));
    put_ints(place, {{"free_gpus_on_nodes", pl.free_gpus}, {"largest_free_on_a_node", pl.largest_free},
                     {"whole_free_nodes", pl.whole_nodes}});
    put(o, "placement", place);
    // Only pools with Account= entries have queues; a flat pool shows none.
    if (ps.queues.tree) put(o, "queues", queues_json(p.cfg(), queue_rows(ps)));
    return o;
}

json_t *node_set_json(const Pass &p, const NodeSetExplain &ns) {
    json_t *o = json_object();
    put(o, "id", jint(ns.id));
    put(o, "pools", jstr_array(p.pool_names(ns.pools)));
    put_ints(o, {{"capacity", ns.capacity}, {"quota", ns.quota}, {"used", ns.used}, {"free_gpus", ns.free_gpus},
                 {"unassigned", ns.unassigned}});
    return o;
}

void status_json(const Pass &p, const StatusModel &s, std::ostream &out) {
    JsonPtr root = document(p, "status");
    put(root.get(), "tiers", tiers_json(p.cfg()));
    json_t *pools = json_array();
    for (size_t i : s.pools) json_array_append_new(pools, pool_json(p, i));
    put(root.get(), "pools", pools);
    json_t *sets = json_array();
    for (const NodeSetExplain *ns : s.node_sets) json_array_append_new(sets, node_set_json(p, *ns));
    put(root.get(), "node_sets", sets);
    put(root.get(), "plugin_passes", passes_json(p.view));
    add_warnings(p, root.get());
    print_json(out, root.get());
}

// ------------------------------------------------------------------ tables

// "priority/gpupool: last pass 2.1 ms, ended ...": nothing when unknown.
void print_passes(const ClusterView &v, std::ostream &out) {
    const PassStats &s = v.passes.stats;
    if (!v.passes.available || s.passes == 0) return;
    auto ms = [](double us) { return fixed(us / 1000.0, 1) + " ms"; };
    out << "\npriority/gpupool: last pass " << ms(double(s.last.total)) << ", ended " << slurm_time(s.last_end) << "; "
        << s.passes << " passes since " << slurm_time(s.since) << ", mean " << ms(double(s.sum.total) / s.passes)
        << ", longest " << ms(double(s.max.total)) << "\n";
}

// Pools on the same nodes, one line per node set of two pools or more.
void print_node_sets(const Pass &p, const StatusModel &s, std::ostream &out) {
    Table sets({"NODE_SET", "POOLS", "CAPACITY", "QUOTA", "USED", "FREE_GPUS", "UNASSIGNED"}, "rlrrrrr");
    for (const NodeSetExplain *ns : s.node_sets) {
        if (ns->pools.size() < 2) continue;
        sets.add({num(ns->id), joined(p.pool_names(ns->pools)), num(ns->capacity), num(ns->quota), num(ns->used),
                  num(ns->free_gpus), num(ns->unassigned)});
    }
    out << "* shared: pools on the same nodes share their capacity; one line per node set:\n";
    sets.print(out);
}

// "-" where the queue's quota does not give the resource.
std::string given_text(bool has, Resource r, uint64_t v) { return has ? amount_text(r, v) : "-"; }

// A pool's queues, indented by level, one row per queue and resource.
void print_queues(const Pass &p, const PoolState &ps, std::ostream &out) {
    const std::vector<QueueRow> rows = queue_rows(ps);
    if (rows.empty()) return;
    const bool rank = p.cfg().ranked();
    std::vector<std::string> head{"QUEUE", "TRES", "QUOTA", "LIMIT", "WEIGHT", "FAIRSHARE", "USED", "NP_USED",
                                  "BORROWED", "LENT", "PENDING", "STANDING"};
    std::string align = "llrrrrrrrrrl";
    if (rank) {
        head.insert(head.begin() + 5, "RANK");
        align.insert(5, "r");
    }
    Table t(head, align);
    for (const QueueRow &row : rows)
        for (Resource r : shown_resources(p.cfg())) {
            const QueueAmounts &a = row.res[r];
            std::vector<std::string> cells{std::string(2 * size_t(row.level - 1), ' ') + row.spec->name,
                                           tres_name(p.cfg(), r), given_text(a.has_quota, r, a.quota),
                                           given_text(a.has_limit, r, a.limit), num(row.spec->weight),
                                           amount_text(r, a.fairshare), amount_text(r, a.used),
                                           amount_text(r, a.np_used), given_text(a.has_quota, r, a.borrowed),
                                           given_text(a.has_quota, r, a.lent), amount_text(r, a.pending),
                                           a.has_quota ? standing_text(a.standing) : "-"};
            if (rank) cells.insert(cells.begin() + 5, num(row.spec->rank));
            t.add(cells);
        }
    out << "\nQueues of " << ps.name << " (accounts):\n";
    t.print(out);
}

void status_table(const Pass &p, const StatusModel &s, std::ostream &out) {
    const bool rank = p.cfg().ranked();
    std::vector<std::string> head{"POOL",      "CAPACITY",    "QUOTA",       "NP_USED", "P_USED", "P_IN_QUOTA",
                                  "FREE_QUOTA", "FREE_GPUS", "FAIRSHARE", "USAGE_GPU_H", "USAGE_SHARE", "WEIGHT"};
    if (rank) head.push_back("RANK");
    Table main(head, std::string("l") + std::string(head.size() - 1, 'r'));
    Table borrow({"POOL", "USED", "QUOTA", "BORROWED", "FROM", "LENT", "TO", "RECLAIMABLE"}, "lrrrlrlr");
    std::vector<std::string> tiers;
    for (const Tier &t : p.cfg().tiers) tiers.push_back(t.name);
    Table pend({"POOL", "PENDING_JOBS", "PENDING_GPUS", "HELD", "PENDING(" + joined(tiers, "/") + ")"}, "lrrrl");
    // Where free GPUs are, shown where a pool asks for a strategy.
    Table place({"POOL", "PLACEMENT", "FREE_GPUS", "LARGEST_FREE_ON_A_NODE", "WHOLE_FREE_NODES"}, "llrrr");
    bool any_placement = false;
    bool any_shared = false;
    for (size_t i : s.pools) {
        const PoolState &ps = p.ev().pools[i];
        const PoolExplain &px = p.x.pools[i];
        any_shared |= px.shared;
        std::vector<std::string> cells{ps.name, num(ps.capacity) + (px.shared ? "*" : ""), num(ps.quota),
                                       num(ps.np_used()), num(ps.p_used()), num(px.p_in_quota), num(px.free_quota),
                                       num(px.free_gpus), p.fairshare_known ? num(ps.fairshare) : "?",
                                       p.usage_known ? fixed(ps.decayed_usage / 3600.0, 1) : "?",
                                       p.usage_known ? fixed(ps.usage_share, 3) : "?", num(ps.weight)};
        if (rank) cells.push_back(num(p.cfg().pools[size_t(ps.config_index)].rank));
        main.add(cells);
        borrow.add({ps.name, num(ps.used()), num(ps.quota), num(ps.borrowed()), pool_gpus_text(p, px.borrowed_from),
                    num(ps.lent), pool_gpus_text(p, px.lent_to), num(px.reclaimable)});
        std::string per_tier;
        for (size_t t = 0; t < px.pending_jobs_by_tier.size(); ++t)
            per_tier += (t ? "/" : "") + num(px.pending_jobs_by_tier[t]);
        pend.add({ps.name, num(ps.pending_jobs), num(ps.pending_gpus), num(ps.held_jobs), per_tier});
        const PoolPlacement pl = pool_placement_of(p, ps);
        any_placement |= std::string(pl.strategy) != "slurm";
        place.add({ps.name, pl.strategy, num(pl.free_gpus), num(pl.largest_free), num(pl.whole_nodes)});
    }
    main.print(out);
    if (any_shared) print_node_sets(p, s, out);
    for (size_t i : s.pools) print_queues(p, p.ev().pools[i], out);
    out << "\n";
    borrow.print(out);
    out << "\n";
    pend.print(out);
    if (any_placement) {
        out << "\n";
        place.print(out);
    }
    print_passes(p.view, out);
}

}  // namespace

int cmd_status(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err) {
    Pass p = run_pass(engine, view, 0);
    int only;
    if (!pool_option(p, opt, err, only)) return 1;
    const StatusModel s = status_model(p, only);
    (opt.json ? status_json : status_table)(p, s, out);
    return 0;
}

}  // namespace gpupool::cli
