// `gpupool why JOBID`: why a pending job waits, where a running job
// borrows from, who preempted a job (also one slurmctld no longer has), as
// sentences and tables or JSON.
#include <algorithm>
#include <ostream>
#include <set>
#include <sstream>

#include "command_pass.hpp"
#include "levels.hpp"
#include "queue_figures.hpp"
#include "slurm_text.hpp"

namespace gpupool::cli {

namespace {

// What why shows: the job as slurmctld and the pass know it, and its
// preemptions on record.
struct WhyModel {
    uint32_t id = 0;
    const JobMeta *meta = nullptr;
    const PendingExplain *pending = nullptr;
    const RunningExplain *running = nullptr;
    const PreemptionHistory *preemptions = nullptr;
    std::string state;  // Slurm's, or PENDING/RUNNING as the pass has it
    // Pending and held by an account queue's quota: that quota
    // line; null else.
    const QuotaLine *held_by_queue = nullptr;
    // The jobs using the quota that holds it: its pool's, or with
    // held_by_queue those of that queue and the queues below it.
    std::vector<QuotaUser> quota_users;

    bool in_queue() const { return meta || pending || running; }
};

// Whether job `id` (running, or pending and admitted) draws on the queue
// of line q (q.queue) in its pool: its own queue is that one or below it.
bool draws_on(const Pass &p, const QuotaLine &q, uint32_t id) {
    const PoolState &ps = p.ev().pools[size_t(q.pool)];
    auto run = p.ev().running.find(id);
    const PendingResult *r = p.engine.pending_result(id);
    const int32_t account = run != p.ev().running.end() ? run->second.account : r ? r->account : -1;
    if (!ps.queues.tree) return false;  // a flat pool: no queue below it
    for (int32_t x : path_up(ps.queues.tree->queues, queue_in(ps, account), 0))
        if (x == q.queue) return true;
    return false;
}

WhyModel why_model(const Pass &p, uint32_t id) {
    WhyModel w;
    w.id = id;
    w.meta = p.view.job(id);
    w.pending = p.x.find_pending(id);
    w.running = p.x.find_running(id);
    w.preemptions = &p.view.preemptions;
    w.state = w.meta ? w.meta->state : (w.pending ? "PENDING" : "RUNNING");
    if (!w.pending) return w;
    for (const QuotaLine &q : w.pending->quota)
        if (q.pool == w.pending->reason_pool && q.queue_blocked) w.held_by_queue = &q;
    for (const QuotaUser &u : w.pending->quota_users)
        if (!w.held_by_queue || draws_on(p, *w.held_by_queue, u.job_id)) w.quota_users.push_back(u);
    return w;
}

// The queue tree of pool `pool` (null: none, a flat pool, which has no
// queue lines to show).
const QueueTree *tree_of(const Pass &p, int pool) {
    return pool >= 0 ? p.ev().pools[size_t(pool)].queues.tree.get() : nullptr;
}

// The level that decided a reclaim, from the engine's verdict: "a: gpu 8/4
// fairshare", "pool1/chemistry (level 1): gpu 6/4 quota"; R4: "tier".
std::string decided_text(const Pass &p, const VictimRef &v) {
    const Decider &d = v.decided;
    if (d.pool < 0) return v.rule == Rule::InPool ? "tier" : "-";
    std::string who = p.pool_name(d.pool);
    const QueueTree *tree = tree_of(p, d.pool);
    if (d.queue > 0 && tree)
        who += "/" + tree->queues[size_t(d.queue)].name + " (level " + num(queue_level(*tree, d.queue)) + ")";
    return who + ": " + resource_word(d.resource) + " " + amount_text(d.resource, d.amount) + "/" +
           amount_text(d.resource, d.bound) + (d.fairshare ? " fairshare" : " quota");
}

json_t *decided_json(const Pass &p, const VictimRef &v) {
    const Decider &d = v.decided;
    if (d.pool < 0) return json_null();
    const QueueTree *tree = tree_of(p, d.pool);
    json_t *o = json_object();
    put(o, "pool", jstr(p.pool_name(d.pool)));
    put(o, "queue", d.queue > 0 && tree ? jstr(tree->queues[size_t(d.queue)].name) : json_null());
    put(o, "level", jint(d.queue > 0 && tree ? queue_level(*tree, d.queue) : 0));
    put(o, "resource", jstr(resource_word(d.resource)));
    put(o, "amount", jint(static_cast<int64_t>(d.amount)));
    put(o, "bound", jint(static_cast<int64_t>(d.bound)));
    put(o, "bound_is", jstr(d.fairshare ? "fairshare" : "quota"));
    return o;
}

// The rows of a running job's queue and its ancestors, its own first
// (empty: its pool has no queues or it draws on the pool itself).
std::vector<QueueRow> running_queue_path(const Pass &p, const RunningExplain &re) {
    std::vector<QueueRow> path;
    auto it = p.ev().running.find(re.job_id);
    if (re.pool < 0 || it == p.ev().running.end()) return path;
    const PoolState &ps = p.ev().pools[size_t(re.pool)];
    if (!ps.queues.tree) return path;
    const std::vector<QueueRow> rows = queue_rows(ps);
    for (int32_t q : path_up(ps.queues.tree->queues, queue_in(ps, it->second.account), 0))
        for (const QueueRow &row : rows)
            if (row.queue == q) path.push_back(row);
    return path;
}

// A pending job's ranks from each of its pools down to its queue: (name,
// rank) per level, its pools in order.
std::vector<std::pair<std::string, uint32_t>> rank_path(const Pass &p, const PendingExplain &pe) {
    std::vector<std::pair<std::string, uint32_t>> out;
    const uint32_t at = p.ev().pending_index.find(pe.job_id);
    const int32_t account = at == IdIndex::kNone ? -1 : p.ev().pending[at].account;
    for (int pool : pe.pools) {
        const PoolState &ps = p.ev().pools[size_t(pool)];
        out.emplace_back(ps.name, p.cfg().pools[size_t(ps.config_index)].rank);
        if (!ps.queues.tree) continue;
        const std::vector<QueueSpec> &queues = ps.queues.tree->queues;
        std::vector<std::pair<std::string, uint32_t>> below;
        for (int32_t q : path_up(queues, queue_in(ps, account), 0))
            below.emplace_back(queues[size_t(q)].name, queues[size_t(q)].rank);
        out.insert(out.end(), below.rbegin(), below.rend());
    }
    return out;
}

std::string plural(uint64_t n, const char *what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// ------------------------------------------------------------------ JSON

// A job's preemptions (PreemptionHistory), oldest first.
json_t *preemptions_json(const PreemptionHistory &h) {
    return jarray_of(h.records, [](json_t *o, const PreemptionRecord &r) {
        put(o, "time", jint(r.time));
        put(o, "preemptor_job_id", jint(r.preemptor_job_id));
        put(o, "preemptor_pool", jstr(r.preemptor_pool));
        put(o, "preemptor_tier", r.preemptor_tier.empty() ? json_null() : jstr(r.preemptor_tier));
        put(o, "victim_pool", r.victim_pool.empty() ? json_null() : jstr(r.victim_pool));
        put(o, "rule", jstr(r.rule));
        put(o, "mode", r.mode.empty() ? json_null() : jstr(r.mode));
        put(o, "gpus", r.gpus ? jint(*r.gpus) : json_null());
        put(o, "gpu_seconds_lost", jint(static_cast<int64_t>(r.gpu_seconds_lost)));
        put(o, "rule_detail", r.why.empty() ? json_null() : jstr(r.why));
    });
}

// A job slurmctld no longer has, with its preemptions on record.
void gone_json(const Pass &p, const WhyModel &w, std::ostream &out) {
    const PreemptionHistory &h = *w.preemptions;
    JsonPtr root = document(p, "why");
    json_t *job = json_object();
    put(job, "job_id", jint(w.id));
    put(job, "state", h.in_accounting ? jstr(h.state) : json_null());
    put(job, "job", jstr(std::to_string(w.id)));
    put(job, "name", h.in_accounting ? jstr(h.name) : json_null());
    put(job, "user", h.in_accounting ? jstr(h.user) : json_null());
    put(job, "in_queue", json_false());
    put(job, "preemptions", preemptions_json(h));
    put(job, "preemptions_source", jstr(h.source));
    put(root.get(), "job", job);
    add_warnings(p, root.get());
    print_json(out, root.get());
}

// The queue that held it in this pool ("held_by", null when
// none did) and each queue's check ("queues", its own first).
void queue_checks_json(const QueueTree &tree, const QuotaLine &q, json_t *o) {
    json_t *held = json_null();
    if (q.queue_blocked) {
        held = json_object();
        put(held, "account", jstr(tree.queues[size_t(q.queue)].name));
        put(held, "level", jint(queue_level(tree, q.queue)));
        put(held, "resource", json_string(resource_word(q.resource)));
        put_ints(held, {{"used", static_cast<int64_t>(q.queue_used)}, {"quota", static_cast<int64_t>(q.queue_quota)}});
    }
    put(o, "held_by", held);
    put(o, "queues", jarray_of(q.checks, [&](json_t *c, const QueueCheck &k) {
            put(c, "account", jstr(tree.queues[size_t(k.queue)].name));
            put(c, "level", jint(queue_level(tree, k.queue)));
            put(c, "resource", json_string(resource_word(k.resource)));
            put_ints(c, {{"used", static_cast<int64_t>(k.taken)}, {"quota", static_cast<int64_t>(k.quota)},
                         {"job", static_cast<int64_t>(k.job)}});
            put(c, "fits", json_boolean(k.fits()));
        }));
}

// The pending job's victim plan as preempt/gpupool would make it now
// (victim_plan.hpp), from the nodes slurmctld reports; null where node
// usage is unknown or the job is not one preemption could start now (held
// by a quota or a limit, not eligible, in no pool, no GPUs).
const VictimPlan *plan_of(const Pass &p, const PendingExplain &pe) {
    if (!p.view.snap.node_usage || pe.gpus == 0 || pe.pools.empty()) return nullptr;
    switch (pe.reason) {
    case WaitReason::Starting:
    case WaitReason::WaitingForGpus:
    case WaitReason::NoOneNode:
    case WaitReason::WaitingForReclaim:
    case WaitReason::MinRuntime: break;
    default: return nullptr;
    }
    for (const SnapJob &j : p.view.snap.jobs) {
        if (j.id != pe.job_id || j.state != JobState::Pending) continue;
        std::string parts;
        return &p.engine.victim_plan(job_ref(j, parts), p.view.now);
    }
    return nullptr;
}

// The plan moves jobs (consolidation) rather than reclaiming them.
bool moves(const VictimPlan &plan) {
    return plan.consolidation && plan.outcome == VictimPlan::Outcome::Victims && !plan.nodes.empty() &&
           plan.moved_to.size() == plan.victims.size();
}

const char *outcome_code(VictimPlan::Outcome o) {
    switch (o) {
    case VictimPlan::Outcome::Unplanned: return "unplanned";
    case VictimPlan::Outcome::FitsFree: return "fits_free";
    case VictimPlan::Outcome::Victims: return "victims";
    case VictimPlan::Outcome::NoNode: return "no_node";
    case VictimPlan::Outcome::Waiting: return "waiting";
    }
    return "?";
}

std::string node_name(const Pass &p, int32_t n) {
    return n >= 0 && size_t(n) < p.view.snap.nodes.size() ? p.view.snap.nodes[size_t(n)].name : std::string("?");
}

// One node of the job's partitions as a preemption sees it: its GPUs,
// those free, those of preemptible jobs, the rest (non-preemptible), and
// its free CPUs and memory where Slurm allocates them.
struct NodeRoom {
    int32_t node = -1;
    NodeUse use;
    uint32_t preemptible = 0;
    uint32_t non_preemptible() const { return use.gpus - std::min(use.gpus, use.free_gpus + preemptible); }
};

// The nodes of the job's partitions, most free and preemptible GPUs first,
// then in node order.
std::vector<NodeRoom> node_rooms(const Pass &p, const PendingExplain &pe) {
    const NodeLayout &layout = p.engine.nodes();
    std::set<int32_t> nodes;
    int64_t until = p.view.now;  // reservations ahead: as far as its time limit reaches
    for (const SnapJob &j : p.view.snap.jobs)
        if (j.id == pe.job_id && j.state == JobState::Pending) {
            if (j.run_limit > 0) until += j.run_limit;
            for (const std::string &part : j.partitions)
                if (const std::vector<int32_t> *in = layout.partition_nodes(part)) nodes.insert(in->begin(), in->end());
        }
    std::vector<NodeRoom> rows;
    for (int32_t n : nodes) {
        NodeRoom r{n, layout.nodes()[size_t(n)], 0};
        layout.node_until(until, n, r.use);
        for (const JobOnNode &j : layout.jobs_on(n)) {
            const RunningExplain *re = p.x.find_running(j.job_id);
            if (re && re->preemptible) r.preemptible += j.gpus;
        }
        rows.push_back(r);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const NodeRoom &a, const NodeRoom &b) {
        return a.use.free_gpus + a.preemptible > b.use.free_gpus + b.preemptible;
    });
    return rows;
}

constexpr size_t kNodeRows = 8;  // nodes shown when no node can be freed

void victim_plan_text(const Pass &p, const PendingExplain &pe, std::ostream &s) {
    const VictimPlan *plan = plan_of(p, pe);
    if (!plan) return;
    auto node_list = [&](size_t from, size_t to) {
        std::string out;
        for (size_t i = from; i < to && i < plan->nodes.size(); ++i)
            out += (i > from ? ", " : "") + node_name(p, plan->nodes[i]);
        return out;
    };
    switch (plan->outcome) {
    case VictimPlan::Outcome::Unplanned:
        s << "Victim plan: none: where it may run depends on what gpupool does not work out (-C with counts, "
             "brackets or parentheses, a reservation, --exclusive=user or mcs, --exclusive where nodes' CPUs are not "
             "counted, --gres-flags=enforce-binding, its partition's OverSubscribe=EXCLUSIVE or MaxCPUsPerNode, -w "
             "naming other than its node count, GPU types it cannot read) or it needs more GPUs on a node than any "
             "has; the rules alone say what it may preempt.\n";
        return;
    case VictimPlan::Outcome::FitsFree:
        s << "Victim plan: none needed: free GPUs (and CPUs and memory, where Slurm allocates them) fit it on node"
          << (plan->nodes.size() == 1 ? " " : "s ") << node_list(0, plan->nodes.size())
          << "; nothing is preempted for it, and Slurm starts it there in its turn.\n";
        return;
    case VictimPlan::Outcome::Waiting:
        s << "Victim plan: carried out; it waits for the GPUs it freed on node" << (plan->nodes.size() == 1 ? " " : "s ")
          << node_list(0, plan->nodes.size()) << ".\n";
        return;
    case VictimPlan::Outcome::Victims: {
        if (moves(*plan)) {
            s << "Consolidation: it fits on node " << node_name(p, plan->nodes.front()) << " once";
            for (size_t i = 0; i < plan->victims.size(); ++i)
                s << (i ? ", " : " ") << "job " << p.job_label(plan->victims[i]) << " moves to node "
                  << node_name(p, plan->moved_to[i]);
            s << " (requeued, each starts again at once on free GPUs there).\n";
            return;
        }
        s << "Victim plan (the jobs preempt/gpupool would let Slurm preempt, node by node):";
        size_t from = 0;
        for (size_t g = 0; g < plan->group_end.size() && g < plan->nodes.size(); ++g) {
            s << (g ? ";" : "") << (g == plan->planned_nodes ? " if Slurm cannot use those," : "") << " on node "
              << node_name(p, plan->nodes[g]);
            if (plan->group_end[g] == from)
                s << " its free GPUs";
            else
                s << " job" << (plan->group_end[g] - from == 1 ? " " : "s ");
            for (size_t i = from; i < plan->group_end[g]; ++i) s << (i > from ? ", " : "") << p.job_label(plan->victims[i]);
            from = plan->group_end[g];
        }
        s << ".\n";
        return;
    }
    case VictimPlan::Outcome::NoNode: break;
    }
    const std::vector<NodeRoom> rows = node_rooms(p, pe);
    uint64_t free_all = 0;
    uint32_t free_most = 0;
    for (const NodeRoom &r : rows)
        if (r.use.starts_jobs()) {
            free_all += r.use.free_gpus;
            free_most = std::max(free_most, r.use.free_gpus);
        }
    s << "Victim plan: no node can be freed for it now: no node of its partitions that takes jobs has " << pe.gpus
      << (pe.gpus == 1 ? " GPU" : " GPUs")
      << " free or held by jobs it may take, with the CPUs and memory it asks for";
    if (plan->held_elsewhere) s << " (or other preemptors' plans hold those that do)";
    s << ". Free GPUs: " << free_all << " over its nodes, " << free_most << " at most on one.\n";
    Table t({"NODE", "GPUS", "FREE", "PREEMPTIBLE", "NON_PREEMPTIBLE", "FREE_CPUS", "FREE_MEM", "STATE"}, "lrrrrrrl");
    for (size_t i = 0; i < rows.size() && i < kNodeRows; ++i) {
        const NodeRoom &r = rows[i];
        t.add({node_name(p, r.node), num(r.use.gpus), num(r.use.free_gpus), num(r.preemptible), num(r.non_preemptible()),
               r.use.room_cpus ? num(r.use.free_cpus) : "-",
               r.use.room_mem_mb ? num(r.use.free_mem_mb) + "M" : "-",
               r.use.completing ? "completing" : r.use.closed ? "takes no jobs" : "up"});
    }
    t.print(s);
    if (rows.size() > kNodeRows) s << "(" << rows.size() - kNodeRows << " more nodes, with fewer)\n";
    s << "Of the preemptible jobs it may take only those the rules allow.\n";
}

json_t *victim_plan_json(const Pass &p, const PendingExplain &pe) {
    const VictimPlan *plan = plan_of(p, pe);
    if (!plan) return json_null();
    json_t *o = json_object();
    put(o, "outcome", json_string(moves(*plan) ? "consolidation" : outcome_code(plan->outcome)));
    json_t *nodes = json_array();
    for (int32_t n : plan->nodes) json_array_append_new(nodes, jstr(node_name(p, n)));
    put(o, "nodes", nodes);
    json_t *victims = json_array();
    size_t g = 0;
    for (size_t i = 0; i < plan->victims.size(); ++i) {
        while (g < plan->group_end.size() && i >= plan->group_end[g]) ++g;
        json_t *v = json_object();
        put(v, "job_id", jint(plan->victims[i]));
        put(v, "node", jstr(g < plan->nodes.size() ? node_name(p, plan->nodes[g]) : "?"));
        put(v, "fallback", json_boolean(g >= plan->planned_nodes));
        json_array_append_new(victims, v);
    }
    put(o, "victims", victims);
    put(o, "held_elsewhere", json_boolean(plan->held_elsewhere));
    return o;
}

// A pending job's quota lines, the jobs using the quota, the jobs ahead
// and those it may preempt.
void pending_detail_json(const Pass &p, const WhyModel &w, const PendingExplain &pe, json_t *job) {
    put(job, "ranks", jarray_of(rank_path(p, pe), [&](json_t *o, const std::pair<std::string, uint32_t> &x) {
            put(o, "queue", jstr(x.first));
            put(o, "rank", jint(x.second));
        }));
    put(job, "quota", jarray_of(pe.quota, [&](json_t *o, const QuotaLine &q) {
            put(o, "pool", jstr(p.pool_name(q.pool)));
            put_ints(o, {{"quota", q.quota}, {"np_used", q.np_used}, {"reserved", q.reserved}, {"gpus", q.gpus},
                         {"needed", q.needed}});
            if (const QueueTree *tree = tree_of(p, q.pool)) queue_checks_json(*tree, q, o);
        }));
    const VictimPlan *plan = plan_of(p, pe);
    if (plan && moves(*plan)) {
        json_t *c = json_object();
        put(c, "node", jstr(node_name(p, plan->nodes.front())));
        json_t *moved = json_array();
        for (size_t i = 0; i < plan->victims.size(); ++i) {
            json_t *m = json_object();
            put(m, "job_id", jint(plan->victims[i]));
            put(m, "to", jstr(node_name(p, plan->moved_to[i])));
            json_array_append_new(moved, m);
        }
        put(c, "moves", moved);
        put(job, "consolidation", c);
    }
    put(job, "victim_plan", victim_plan_json(p, pe));
    put(job, "quota_users", jarray_of(w.quota_users, [&](json_t *o, const QuotaUser &u) {
            put(o, "job_id", jint(u.job_id));
            put(o, "user", jstr(p.user_of(u.job_id)));
            put(o, "gpus", jint(u.gpus));
            put(o, "state", json_string(u.running ? "running" : "admitted"));
        }));
    put(job, "ahead", jarray_of(pe.ahead, [&](json_t *o, uint32_t a) {
            const PendingExplain *ae = p.x.find_pending(a);
            put(o, "job_id", jint(a));
            put(o, "user", jstr(p.user_of(a)));
            put(o, "tier", jstr(ae ? p.tier_name(ae->tier) : ""));
            put(o, "gpus", jint(ae ? ae->gpus : 0));
            put(o, "position", ae && ae->position >= 0 ? jint(ae->position + 1) : json_null());
            put(o, "reason", json_string(ae ? wait_reason_code(ae->reason) : ""));
        }));
    put(job, "victims", jarray_of(pe.victims, [&](json_t *o, const VictimRef &v) {
            const RunningExplain *vr = p.x.find_running(v.job_id);
            put(o, "job_id", jint(v.job_id));
            put(o, "user", jstr(p.user_of(v.job_id)));
            put(o, "pool", jstr(vr ? p.pool_name(vr->pool) : ""));
            put(o, "gpus", jint(vr ? vr->gpus : 0));
            put(o, "rule", json_string(rule_name(v.rule)));
            put(o, "why", jstr(v.why));
            put(o, "decided_by", decided_json(p, v));
            put(o, "protected_until", v.protected_until ? jint(v.protected_until) : json_null());
        }));
    put(job, "may_take", jarray_of(pe.may_take, [&](json_t *o, const VictimRef &v) {
            put(o, "job_id", jint(v.job_id));
            put(o, "rule", json_string(rule_name(v.rule)));
            put(o, "why", jstr(v.why));
            put(o, "decided_by", decided_json(p, v));
        }));
    put(job, "can_free", jint(pe.can_free));
    put(job, "not_takeable", jarray_of(pe.not_takeable, [&](json_t *o, const std::pair<uint32_t, std::string> &n) {
            put(o, "job_id", jint(n.first));
            put(o, "why", jstr(n.second));
        }));
}

void running_detail_json(const Pass &p, const RunningExplain &re, json_t *job) {
    put(job, "pool", re.pool >= 0 ? jstr(p.pool_name(re.pool)) : json_null());
    put(job, "tier", jstr(p.tier_name(re.tier)));
    put_ints(job, {{"gpus", re.gpus}, {"start_time", re.start}});
    put(job, "preemptible", json_boolean(re.preemptible));
    put(job, "victim_class", json_string(victim_class_name(re.cls)));
    put(job, "reclaim_rank", re.preemptible ? jint(re.rank) : json_null());
    put(job, "borrowed", jint(re.borrowed));
    put(job, "lenders", pool_gpus_json(p, re.lenders));
    put(job, "protected_until", re.protected_until ? jint(re.protected_until) : json_null());
    if (!tree_of(p, re.pool)) return;
    // Its queue's standing and its ancestors', own first: a parent's quota
    // can hold it as much as its own.
    const std::vector<QueueRow> path = running_queue_path(p, re);
    put(job, "queues", jarray_of(path, [&](json_t *o, const QueueRow &row) {
            put(o, "account", jstr(row.spec->name));
            put(o, "level", jint(row.level));
            json_t *res = json_object();
            for (Resource r : shown_resources(p.cfg())) put(res, resource_word(r), queue_amounts_json(row.res[r]));
            put(o, "resources", res);
        }));
}

void why_json(const Pass &p, const WhyModel &w, std::ostream &out) {
    const PreemptionHistory &ph = *w.preemptions;
    JsonPtr root = document(p, "why");
    json_t *job = w.pending ? pending_json(p, *w.pending) : json_object();
    put(job, "job_id", jint(w.id));
    put(job, "state", jstr(w.state));
    if (w.pending) {
        pending_detail_json(p, w, *w.pending, job);
    } else {
        put(job, "job", jstr(p.job_label(w.id)));
        put(job, "name", jstr(w.meta ? w.meta->name : ""));
        put(job, "user", jstr(p.user_of(w.id)));
        if (w.running) running_detail_json(p, *w.running, job);
    }
    put(job, "in_queue", json_true());
    put(job, "preemptions", preemptions_json(ph));
    put(job, "preemptions_source", ph.records.empty() ? json_null() : jstr(ph.source));
    put(root.get(), "job", job);
    add_warnings(p, root.get());
    print_json(out, root.get());
}

// ------------------------------------------------------------------ text

// "Preempted 2 times (gpupool's event log):" and a line for each.
void preemptions_text(const PreemptionHistory &h, std::ostream &s) {
    if (h.records.empty()) return;
    s << "Preempted " << plural(h.records.size(), "time") << " ("
      << (h.source == "event_log" ? "gpupool's event log " + h.event_log : std::string("accounting: sacct SystemComment"))
      << "):\n";
    for (const PreemptionRecord &r : h.records) {
        s << "  " << slurm_time(r.time) << " by job " << r.preemptor_job_id << " (pool " << r.preemptor_pool;
        if (!r.preemptor_tier.empty()) s << ", tier " << r.preemptor_tier;
        s << ") under rule " << r.rule;
        if (!r.why.empty()) s << " (" << r.why << ")";
        if (!r.victim_pool.empty()) s << " in " << r.victim_pool;
        s << ": ";
        if (r.mode == "requeue") s << "requeued, ";
        else if (r.mode == "cancel") s << "cancelled, ";
        else if (r.mode == "suspend") s << "suspended, ";
        if (r.gpus) s << plural(*r.gpus, "GPU") << ", ";
        s << r.gpu_seconds_lost << " GPU-seconds lost.\n";
    }
}

void gone_text(const Pass &, const WhyModel &w, std::ostream &out) {
    const PreemptionHistory &h = *w.preemptions;
    std::ostringstream s;
    s << "Job " << w.id;
    if (h.in_accounting) {
        if (!h.name.empty()) s << " (" << h.name << ")";
        s << " of " << h.user << " is " << h.state;
        if (!h.partition.empty()) s << " in " << h.partition;
        s << "; slurmctld no longer has it.\n";
    } else {
        s << " is no longer in slurmctld's queue.\n";
    }
    preemptions_text(h, s);
    out << s.str();
}

// Preemption cannot free enough: what it may take, and why not the rest.
void short_of_gpus_text(const Pass &p, const PendingExplain &pe, std::ostream &s) {
    s << "Preemption cannot free enough on the nodes of " << p.pool_name(pe.reason_pool) << ": the free GPUs and "
      << "those of the jobs it may take come to " << pe.can_free << " of the " << pe.gpus << " it needs.\n";
    if (!pe.may_take.empty()) {
        s << "Jobs it may take:\n";
        Table t({"JOBID", "USER", "POOL", "GPUS", "RULE", "DECIDED_BY"}, "lllrll");
        for (const VictimRef &v : pe.may_take) {
            const RunningExplain *vr = p.x.find_running(v.job_id);
            t.add({p.job_label(v.job_id), p.user_of(v.job_id), vr ? p.pool_name(vr->pool) : "",
                   num(vr ? vr->gpus : 0), rule_name(v.rule), decided_text(p, v)});
        }
        t.print(s);
    }
    if (!pe.not_takeable.empty()) {
        s << "Preemptible jobs there it may not take (one per reason):\n";
        Table t({"JOBID", "POOL", "GPUS", "WHY"}, "llrl");
        for (const auto &[id, why] : pe.not_takeable) {
            const RunningExplain *vr = p.x.find_running(id);
            t.add({p.job_label(id), vr ? p.pool_name(vr->pool) : "", num(vr ? vr->gpus : 0), why});
        }
        t.print(s);
    }
}

// The jobs using the quota, those it may preempt and those ahead of it.
void pending_tables(const Pass &p, const WhyModel &w, const PendingExplain &pe, std::ostream &s) {
    if (!w.quota_users.empty()) {
        std::string quota = p.pool_name(pe.reason_pool);
        if (w.held_by_queue && w.held_by_queue->queue > 0)
            quota += "/" + p.ev().pools[size_t(pe.reason_pool)].queues.tree->queues[size_t(w.held_by_queue->queue)].name;
        s << "Jobs using the quota of " << quota << ":\n";
        Table t({"JOBID", "USER", "GPUS", "STATE"}, "llrl");
        for (const QuotaUser &u : w.quota_users)
            t.add({p.job_label(u.job_id), p.user_of(u.job_id), num(u.gpus), u.running ? "running" : "admitted"});
        t.print(s);
    }
    if (!pe.victims.empty()) {
        const VictimPlan *plan = plan_of(p, pe);
        s << (plan && plan->outcome != VictimPlan::Outcome::Unplanned
                  ? "Jobs the rules alone would preempt (counting GPUs, in victim order; the victim plan above decides "
                    "which go):\n"
                  : "Jobs it may preempt:\n");
        Table t({"JOBID", "USER", "POOL", "GPUS", "RULE", "DECIDED_BY", "PROTECTED_UNTIL"}, "lllrlll");
        for (const VictimRef &v : pe.victims) {
            const RunningExplain *vr = p.x.find_running(v.job_id);
            t.add({p.job_label(v.job_id), p.user_of(v.job_id), vr ? p.pool_name(vr->pool) : "",
                   num(vr ? vr->gpus : 0), rule_name(v.rule), decided_text(p, v),
                   v.protected_until ? slurm_time(v.protected_until) : "-"});
        }
        t.print(s);
    }
    if (pe.reason == WaitReason::WaitingForGpus && pe.reason_pool >= 0 &&
        (!pe.may_take.empty() || !pe.not_takeable.empty()))
        short_of_gpus_text(p, pe, s);
    if (!pe.ahead.empty()) {
        s << "Jobs ahead of it in its pools:\n";
        Table t({"POS", "JOBID", "USER", "TIER", "GPUS", "REASON"}, "rlllrl");
        for (uint32_t a : pe.ahead) {
            const PendingExplain *ae = p.x.find_pending(a);
            t.add({ae && ae->position >= 0 ? num(ae->position + 1) : "-", p.job_label(a), p.user_of(a),
                   ae ? p.tier_name(ae->tier) : "", num(ae ? ae->gpus : 0), ae ? reason_text(p, *ae) : ""});
        }
        t.print(s);
    } else if (pe.position >= 0) {
        s << "No job is ahead of it in its pools.\n";
    }
}

// Each queue's check in one pool (its own first), and the
// level and queue that held it.
void queue_checks_text(const Pass &p, const QueueTree &tree, const QuotaLine &q, std::ostream &s) {
    const std::string pool = p.pool_name(q.pool);
    if (!q.checks.empty()) {
        s << "Quotas of its queues in " << pool << " (non-preemptible use, held and admitted ahead):\n";
        Table t({"QUEUE", "LEVEL", "TRES", "USED", "QUOTA", "JOB", "CHECK"}, "lrlrrrl");
        for (const QueueCheck &k : q.checks) {
            const Resource r = k.resource;
            std::string check = "fits";
            if (!k.fits())
                check = k.never_fits() ? "never fits" : "full: " + amount_text(r, k.taken + k.job - k.quota) + " missing";
            t.add({tree.queues[size_t(k.queue)].name, num(queue_level(tree, k.queue)), tres_name(p.cfg(), r),
                   amount_text(r, k.taken), amount_text(r, k.quota), amount_text(r, k.job), check});
        }
        t.print(s);
    }
    if (!q.queue_blocked) return;
    const QueueCheck *own = q.checks.empty() ? nullptr : &q.checks.front();
    s << "Held by the quota of " << tree.queues[size_t(q.queue)].name << ", level " << queue_level(tree, q.queue);
    if (own && own->queue != q.queue) s << " above its queue " << tree.queues[size_t(own->queue)].name;
    s << ": " << queue_quota_text(p, q) << ".\n";
}

void pending_text(const Pass &p, const WhyModel &w, const PendingExplain &pe, std::ostream &s) {
    const JobMeta *m = w.meta;
    std::string pools = joined(p.pool_names(pe.pools));
    s << " in " << (pools.empty() ? (m ? m->partition : std::string("?")) : pools) << ", tier "
      << p.tier_name(pe.tier) << ", " << plural(pe.gpus, "GPU");
    if (m) s << ", waiting " << slurm_duration(p.view.now - m->submit_time);
    s << ".\n";
    if (pe.position >= 0) {
        size_t ordered = 0;
        for (const PendingExplain &q : p.x.pending) ordered += q.position >= 0;
        s << "Position " << pe.position + 1 << " of " << ordered << " pending";
        for (const auto &[q, n] : pe.pool_position) s << ", " << n + 1 << " in " << p.pool_name(q);
        s << ".\n";
    }
    if (p.cfg().ranked()) {
        s << "Ranks (within its tier, a higher rank at the first level that differs is served first):";
        for (const auto &[name, rank] : rank_path(p, pe)) s << " " << name << " " << rank;
        s << ".\n";
    }
    s << "Reason: " << reason_text(p, pe) << ".\n";
    if (m && !m->slurm_reason.empty() && m->slurm_reason != "None") s << "Slurm's reason: " << m->slurm_reason << ".\n";
    for (const QuotaLine &q : pe.quota) {
        s << "Quota of " << p.pool_name(q.pool) << ": " << q.quota << " GPUs; non-preemptible jobs use " << q.np_used
          << ", " << q.reserved << " reserved for admitted jobs ahead, this job needs " << q.gpus;
        if (q.needed)
            s << ": " << plural(q.needed, "GPU") << " of quota missing.\n";
        else
            s << ": it fits.\n";
        if (const QueueTree *tree = tree_of(p, q.pool)) queue_checks_text(p, *tree, q, s);
    }
    victim_plan_text(p, pe, s);
    pending_tables(p, w, pe, s);
}

void running_text(const Pass &p, const WhyModel &w, const RunningExplain &re, std::ostream &s) {
    s << " in " << (re.pool >= 0 ? p.pool_name(re.pool) : (w.meta ? w.meta->partition : std::string("?")))
      << ", tier " << p.tier_name(re.tier) << ", " << plural(re.gpus, "GPU") << ", started " << slurm_time(re.start)
      << ".\n";
    if (re.pool < 0) {
        s << "Its partition is not a gpupool pool: gpupool never preempts it.\n";
        return;
    }
    if (!re.preemptible) {
        s << "Tier " << p.tier_name(re.tier) << " is not preemptible: it counts against the quota of "
          << p.pool_name(re.pool) << " and is never preempted.\n";
        return;
    }
    if (re.borrowed)
        s << "It borrows " << plural(re.borrowed, "GPU") << " from " << pool_gpus_text(p, re.lenders) << " ("
          << victim_class_name(re.cls) << " of " << p.pool_name(re.pool)
          << "): an entitled job of the lender may reclaim it.\n";
    else
        s << "It runs inside the quota of " << p.pool_name(re.pool) << ": no other pool may reclaim it; "
          << (tree_of(p, re.pool) ? "a higher tier on its own queue's line may preempt it, and a queue on another "
                                    "side may reclaim it only while its queues are over their bounds (below)"
                                  : "a higher tier of its own pool may preempt it")
          << ".\n";
    if (re.protected_until) s << "MinRuntime protects it until " << slurm_time(re.protected_until) << ".\n";
    s << "Reclaim rank " << re.rank << " (R6 victim order: 1 goes first).\n";
}

// Its queue's standing and its ancestors', own first (a parent's quota
// binds its children too).
void running_queues_text(const Pass &p, const RunningExplain &re, std::ostream &s) {
    const std::vector<QueueRow> path = running_queue_path(p, re);
    if (path.empty()) return;
    s << "Its queue " << path.front().spec->name << " in " << p.pool_name(re.pool) << ", and above it:\n";
    Table t({"QUEUE", "LEVEL", "TRES", "USED", "QUOTA", "FAIRSHARE", "STANDING"}, "lrlrrrl");
    for (const QueueRow &row : path)
        for (Resource r : shown_resources(p.cfg())) {
            const QueueAmounts &a = row.res[r];
            if (!a.has_quota) continue;
            t.add({row.spec->name, num(row.level), tres_name(p.cfg(), r), amount_text(r, a.used),
                   amount_text(r, a.quota), amount_text(r, a.fairshare), standing_text(a.standing)});
        }
    t.print(s);
}

void why_text(const Pass &p, const WhyModel &w, std::ostream &out) {
    std::ostringstream s;
    s << "Job " << p.job_label(w.id);
    if (w.meta && !w.meta->name.empty()) s << " (" << w.meta->name << ")";
    s << " of " << p.user_of(w.id) << " is " << w.state;
    if (w.pending)
        pending_text(p, w, *w.pending, s);
    else if (w.running) {
        running_text(p, w, *w.running, s);
        running_queues_text(p, *w.running, s);
    }
    else if (w.preemptions->records.empty())
        s << ": gpupool has nothing to explain for it now.\n";
    else
        s << ".\n";
    preemptions_text(*w.preemptions, s);
    out << s.str();
}

}  // namespace

int cmd_why(Engine &engine, const ClusterView &view, const Options &opt, std::ostream &out, std::ostream &err) {
    Pass p = run_pass(engine, view, opt.job_id);
    const WhyModel w = why_model(p, opt.job_id);
    if (!w.in_queue()) {
        if (w.preemptions->records.empty()) {
            err << "gpupool: job " << w.id << " is not in slurmctld's queue (ended, or never existed)\n";
            return 1;
        }
        (opt.json ? gone_json : gone_text)(p, w, out);
        return 0;
    }
    (opt.json ? why_json : why_text)(p, w, out);
    return 0;
}

}  // namespace gpupool::cli
