// `gpupool whatif`: the same pass with the current configuration and with
// a modified one, and what differs, as tables or JSON.
#include <algorithm>
#include <map>
#include <ostream>
#include <unordered_map>

#include "command_pass.hpp"
#include "queue_figures.hpp"
#include "slurm_text.hpp"

namespace gpupool::cli {

namespace {

// ------------------------------------------------------------------ model

// One pool on one side of the comparison: null where that configuration
// has no such pool.
struct PoolSide {
    const PoolState *pool = nullptr;
    const PoolExplain *x = nullptr;
    bool fairshare_known = false;
};

PoolSide pool_side(const Pass &p, const std::string &name) {
    int i = p.pool_index(name);
    if (i < 0) return PoolSide{};
    return PoolSide{&p.ev().pools[static_cast<size_t>(i)], &p.x.pools[static_cast<size_t>(i)], p.fairshare_known};
}

// Lent GPUs (some pool's quota) a running job holds that an entitled job
// of the lender may take back now (past MinRuntime): 0 if none.
uint32_t reclaimable_gpus(const RunningExplain &r) {
    if (!r.preemptible || r.protected_until) return 0;
    uint32_t n = 0;
    for (const PoolGpus &g : r.lenders)
        if (g.pool >= 0) n += g.gpus;
    return n;
}

bool starts(const PendingExplain &pe) { return pe.reason == WaitReason::Starting; }

// Running jobs the pending jobs of a pass would preempt now: victim ->
// (preemptor, rule).
std::map<uint32_t, std::pair<uint32_t, Rule>> preemptions(const Pass &p) {
    std::map<uint32_t, std::pair<uint32_t, Rule>> out;
    for (const PendingExplain &pe : p.x.pending)
        if (pe.reason == WaitReason::WaitingForReclaim)
            for (const VictimRef &v : pe.victims) out.emplace(v.job_id, std::make_pair(pe.job_id, v.rule));
    return out;
}

// A pending job whose reason changes: it would start, no longer start, or
// wait for another reason.
struct PendingChange {
    enum Kind { Start, Stop, Other };
    const PendingExplain *b, *a;
    Kind kind;
};
// A running job whose borrowing, protection or reclaimability changes.
struct RunningChange {
    enum Kind { Become, Cease, Other };  // reclaimable
    const RunningExplain *b, *a;
    Kind kind;
};
struct Preempted {
    uint32_t victim, preemptor;
    Rule rule;
};

// One account queue of one pool on both sides (null: that side
// has no such queue).
struct QueueChange {
    std::string pool, account;
    int level = 1;
    const QueueRow *b = nullptr, *a = nullptr;
};

struct WhatifModel {
    const Pass &before, &after;
    std::vector<std::string> pools;      // shown: the current ones in order, then new ones
    // Each shown pool's queue rows on each side, and the queues of both in
    // the current order (then the new ones).
    std::vector<std::vector<QueueRow>> rows_before, rows_after;
    std::vector<QueueChange> queues;
    std::vector<PendingChange> pending;  // in the modified order
    std::vector<RunningChange> running;  // in the modified reclaim order
    std::vector<Preempted> preempted;    // would be preempted now, in the modified reclaim order

    std::vector<uint32_t> pending_ids(PendingChange::Kind k) const {
        std::vector<uint32_t> ids;
        for (const PendingChange &c : pending)
            if (c.kind == k) ids.push_back(c.a->job_id);
        return ids;
    }
    std::vector<uint32_t> running_ids(RunningChange::Kind k) const {
        std::vector<uint32_t> ids;
        for (const RunningChange &c : running)
            if (c.kind == k) ids.push_back(c.a->job_id);
        return ids;
    }
};

bool pool_shown(const Options &opt, const std::string &name) { return opt.pool.empty() || name == opt.pool; }

bool job_in_shown_pool(const Options &opt, const Pass &p, const std::vector<int> &pools) {
    if (opt.pool.empty()) return true;
    for (int q : pools)
        if (p.pool_name(q) == opt.pool) return true;
    return false;
}

// f(before's, after's) for each job of `after` that `before` has too, in
// after's order.
template <typename T, typename F>
void each_pair(const std::vector<T> &before, const std::vector<T> &after, F f) {
    std::unordered_map<uint32_t, const T *> was;
    for (const T &b : before) was.emplace(b.job_id, &b);
    for (const T &a : after) {
        auto it = was.find(a.job_id);
        if (it != was.end()) f(*it->second, a);
    }
}

void pending_changes(WhatifModel &w, const Options &opt) {
    each_pair(w.before.x.pending, w.after.x.pending, [&](const PendingExplain &b, const PendingExplain &a) {
        if (!job_in_shown_pool(opt, w.after, a.pools) && !job_in_shown_pool(opt, w.before, b.pools)) return;
        if (b.reason == a.reason && w.before.pool_name(b.reason_pool) == w.after.pool_name(a.reason_pool)) return;
        // A job in no pool is gpupool's to order only: whether it starts
        // is Slurm's, on both sides.
        const bool managed = a.reason != WaitReason::NotManaged && b.reason != WaitReason::NotManaged;
        PendingChange::Kind kind = PendingChange::Other;
        if (managed && starts(a) && !starts(b)) kind = PendingChange::Start;
        if (managed && starts(b) && !starts(a)) kind = PendingChange::Stop;
        w.pending.push_back(PendingChange{&b, &a, kind});
    });
}

void running_changes(WhatifModel &w, const Options &opt) {
    each_pair(w.before.x.running, w.after.x.running, [&](const RunningExplain &b, const RunningExplain &a) {
        if (!pool_shown(opt, w.after.pool_name(a.pool)) && !pool_shown(opt, w.before.pool_name(b.pool))) return;
        uint32_t rb = reclaimable_gpus(b), ra = reclaimable_gpus(a);
        if (rb == ra && b.borrowed == a.borrowed && b.protected_until == a.protected_until && b.cls == a.cls) return;
        RunningChange::Kind kind = RunningChange::Other;
        if (ra && !rb) kind = RunningChange::Become;
        if (rb && !ra) kind = RunningChange::Cease;
        w.running.push_back(RunningChange{&b, &a, kind});
    });
}

// Running jobs the modified configuration would have preempted now.
void preempted(WhatifModel &w, const Options &opt) {
    auto pre_b = preemptions(w.before), pre_a = preemptions(w.after);
    for (const RunningExplain &re : w.after.x.running) {  // reclaim order
        auto it = pre_a.find(re.job_id);
        if (it == pre_a.end() || pre_b.count(re.job_id)) continue;
        if (!pool_shown(opt, w.after.pool_name(re.pool))) continue;
        w.preempted.push_back(Preempted{re.job_id, it->second.first, it->second.second});
    }
}

std::vector<QueueRow> rows_of(const Pass &p, const std::string &pool) {
    const int i = p.pool_index(pool);
    return i < 0 ? std::vector<QueueRow>{} : queue_rows(p.ev().pools[size_t(i)]);
}

void queue_changes(WhatifModel &w) {
    for (const std::string &pool : w.pools) {
        w.rows_before.push_back(rows_of(w.before, pool));
        w.rows_after.push_back(rows_of(w.after, pool));
    }
    for (size_t i = 0; i < w.pools.size(); ++i) {
        std::vector<QueueChange> pool_queues;
        auto side = [&](const std::vector<QueueRow> &rows, bool after) {
            for (const QueueRow &row : rows) {
                auto it = std::find_if(pool_queues.begin(), pool_queues.end(),
                                       [&](const QueueChange &c) { return c.account == row.spec->name; });
                if (it == pool_queues.end())
                    it = pool_queues.insert(pool_queues.end(), QueueChange{w.pools[i], row.spec->name, row.level});
                (after ? it->a : it->b) = &row;
                it->level = row.level;
            }
        };
        side(w.rows_before[i], false);
        side(w.rows_after[i], true);
        w.queues.insert(w.queues.end(), pool_queues.begin(), pool_queues.end());
    }
}

WhatifModel whatif_model(const Pass &before, const Pass &after, const Options &opt) {
    WhatifModel w{before, after, {}, {}, {}, {}, {}, {}, {}};
    std::vector<std::string> names;
    for (const PoolState &ps : before.ev().pools) names.push_back(ps.name);
    for (const PoolState &ps : after.ev().pools)
        if (before.pool_index(ps.name) < 0) names.push_back(ps.name);
    for (const std::string &n : names)
        if (pool_shown(opt, n)) w.pools.push_back(n);
    queue_changes(w);
    pending_changes(w, opt);
    running_changes(w, opt);
    preempted(w, opt);
    return w;
}

// ------------------------------------------------------------------ JSON

json_t *pool_side_json(const PoolSide &s) {
    if (!s.pool) return json_null();
    const PoolState &ps = *s.pool;
    json_t *o = json_object();
    put_ints(o, {{"capacity", ps.capacity}, {"quota", ps.quota}, {"weight", ps.weight}, {"min_runtime", ps.min_runtime}});
    put(o, "fairshare", s.fairshare_known ? jint(ps.fairshare) : json_null());
    put_ints(o, {{"borrowable", s.x->borrowable}, {"used", ps.used()}, {"borrowed", ps.borrowed()}, {"lent", ps.lent},
                 {"reclaimable", s.x->reclaimable}, {"free_quota", s.x->free_quota}, {"held_jobs", ps.held_jobs}});
    return o;
}

json_t *pending_side_json(const Pass &p, const PendingExplain &pe) {
    const PendingResult *r = p.engine.pending_result(pe.job_id);
    json_t *o = json_object();
    put(o, "position", pe.position >= 0 ? jint(pe.position + 1) : json_null());
    put(o, "priority", jint(r ? r->priority : 0));
    put(o, "admission", json_string(admission_code(p, pe)));
    put(o, "reason", json_string(wait_reason_code(pe.reason)));
    put(o, "reason_text", jstr(reason_text(p, pe)));
    put(o, "reason_pool", pe.reason_pool >= 0 ? jstr(p.pool_name(pe.reason_pool)) : json_null());
    return o;
}

json_t *running_side_json(const Pass &p, const RunningExplain &re) {
    json_t *o = json_object();
    put(o, "victim_class", json_string(victim_class_name(re.cls)));
    put(o, "reclaim_rank", re.preemptible ? jint(re.rank) : json_null());
    put(o, "borrowed", jint(re.borrowed));
    put(o, "lenders", pool_gpus_json(p, re.lenders));
    put(o, "reclaimable", jint(reclaimable_gpus(re)));
    put(o, "protected_until", re.protected_until ? jint(re.protected_until) : json_null());
    return o;
}

// One object per changed job: its id and label, `fields` of it, its tier
// and GPUs, and `side` of it before and after.
template <typename Change, typename Fields, typename Side>
json_t *changes_json(const WhatifModel &w, const std::vector<Change> &changes, Fields fields, Side side) {
    return jarray_of(changes, [&](json_t *o, const Change &c) {
        put(o, "job_id", jint(c.a->job_id));
        put(o, "job", jstr(w.after.job_label(c.a->job_id)));
        fields(o, *c.a);
        put(o, "tier", jstr(w.after.tier_name(c.a->tier)));
        put(o, "gpus", jint(c.a->gpus));
        put(o, "before", side(w.before, *c.b));
        put(o, "after", side(w.after, *c.a));
    });
}

json_t *pending_changes_json(const WhatifModel &w) {
    return changes_json(
        w, w.pending,
        [&](json_t *o, const PendingExplain &a) {
            const JobMeta *m = w.after.view.job(a.job_id);
            put(o, "name", jstr(m ? m->name : ""));
            put(o, "user", jstr(w.after.user_of(a.job_id)));
            put(o, "partition", jstr(m ? m->partition : ""));
            put(o, "pools", jstr_array(w.after.pool_names(a.pools)));
        },
        pending_side_json);
}

json_t *running_changes_json(const WhatifModel &w) {
    return changes_json(
        w, w.running,
        [&](json_t *o, const RunningExplain &a) {
            put(o, "user", jstr(w.after.user_of(a.job_id)));
            put(o, "pool", a.pool >= 0 ? jstr(w.after.pool_name(a.pool)) : json_null());
        },
        running_side_json);
}

json_t *preempted_json(const WhatifModel &w) {
    return jarray_of(w.preempted, [&](json_t *o, const Preempted &v) {
        const RunningExplain *re = w.after.x.find_running(v.victim);
        put(o, "job_id", jint(v.victim));
        put(o, "user", jstr(w.after.user_of(v.victim)));
        put(o, "pool", re && re->pool >= 0 ? jstr(w.after.pool_name(re->pool)) : json_null());
        put(o, "gpus", jint(re ? re->gpus : 0));
        put(o, "rule", json_string(rule_name(v.rule)));
        put(o, "preemptor", jint(v.preemptor));
    });
}

// A queue on one side: its weight and resources (null: no such queue).
json_t *queue_side_json(const Config &cfg, const QueueRow *row) {
    if (!row) return json_null();
    json_t *o = json_object();
    put(o, "weight", jint(row->spec->weight));
    json_t *res = json_object();
    for (Resource r : shown_resources(cfg)) put(res, resource_word(r), queue_amounts_json(row->res[r]));
    put(o, "resources", res);
    return o;
}

json_t *queue_changes_json(const WhatifModel &w) {
    return jarray_of(w.queues, [&](json_t *o, const QueueChange &c) {
        put(o, "pool", jstr(c.pool));
        put(o, "account", jstr(c.account));
        put(o, "level", jint(c.level));
        put(o, "before", queue_side_json(w.before.cfg(), c.b));
        put(o, "after", queue_side_json(w.after.cfg(), c.a));
    });
}

void whatif_json(const WhatifModel &w, const Options &opt, std::ostream &out) {
    JsonPtr root = document(w.before, "whatif");
    put(root.get(), "modified_config", opt.whatif_config.empty() ? json_null() : jstr(opt.whatif_config));
    put(root.get(), "set", jstr_array(opt.whatif_set));
    put(root.get(), "pools", jarray_of(w.pools, [&](json_t *o, const std::string &n) {
            put(o, "name", jstr(n));
            put(o, "before", pool_side_json(pool_side(w.before, n)));
            put(o, "after", pool_side_json(pool_side(w.after, n)));
        }));
    if (!w.queues.empty()) put(root.get(), "queues", queue_changes_json(w));
    put(root.get(), "would_start", jint_array(w.pending_ids(PendingChange::Start)));
    put(root.get(), "would_not_start", jint_array(w.pending_ids(PendingChange::Stop)));
    put(root.get(), "would_be_reclaimable", jint_array(w.running_ids(RunningChange::Become)));
    put(root.get(), "would_not_be_reclaimable", jint_array(w.running_ids(RunningChange::Cease)));
    put(root.get(), "pending", pending_changes_json(w));
    put(root.get(), "running", running_changes_json(w));
    put(root.get(), "would_be_preempted", preempted_json(w));
    add_warnings(w.after, root.get());
    put(root.get(), "warnings_before", jstr_array(w.before.engine.warnings()));
    print_json(out, root.get());
}

// ------------------------------------------------------------------ tables

// "2", or "2->3" when the sides differ ("none" for a side without the pool).
template <typename F>
std::string side_cell(const PoolSide &b, const PoolSide &a, F text) {
    std::string tb = b.pool ? text(b) : "none", ta = a.pool ? text(a) : "none";
    return tb == ta ? tb : tb + "->" + ta;
}

std::string side_num(uint32_t b, uint32_t a) { return b == a ? num(a) : num(b) + "->" + num(a); }

void pools_table(const WhatifModel &w, std::ostream &out) {
    using S = const PoolSide &;
    Table t({"POOL", "CAPACITY", "QUOTA", "WEIGHT", "MIN_RUNTIME", "FAIRSHARE", "BORROWABLE", "BORROWED", "LENT",
             "RECLAIMABLE", "HELD"},
            "lrrrrrrrrrr");
    for (const std::string &n : w.pools) {
        PoolSide b = pool_side(w.before, n), a = pool_side(w.after, n);
        t.add({n, side_cell(b, a, [](S s) { return num(s.pool->capacity); }),
               side_cell(b, a, [](S s) { return num(s.pool->quota); }),
               side_cell(b, a, [](S s) { return num(s.pool->weight); }),
               side_cell(b, a, [](S s) { return slurm_duration(s.pool->min_runtime); }),
               side_cell(b, a, [](S s) { return s.fairshare_known ? num(s.pool->fairshare) : "?"; }),
               side_cell(b, a, [](S s) { return num(s.x->borrowable); }),
               side_cell(b, a, [](S s) { return num(s.pool->borrowed()); }),
               side_cell(b, a, [](S s) { return num(s.pool->lent); }),
               side_cell(b, a, [](S s) { return num(s.x->reclaimable); }),
               side_cell(b, a, [](S s) { return num(s.pool->held_jobs); })});
    }
    t.print(out);
}

// Each queue per shown resource (the modified configuration's), figures
// now->with the change; "-" where a side's quota does not give it, "none"
// where a side has no such queue.
void queues_table(const WhatifModel &w, std::ostream &out) {
    Table t({"POOL", "QUEUE", "TRES", "QUOTA", "LIMIT", "WEIGHT", "FAIRSHARE", "USED", "BORROWED", "LENT", "STANDING"},
            "lllrrrrrrrl");
    const Config &cfg = w.after.cfg();
    for (const QueueChange &c : w.queues)
        for (Resource r : shown_resources(cfg)) {
            auto cell = [&](auto text) {
                std::string tb = c.b ? text(*c.b, c.b->res[r]) : "none", ta = c.a ? text(*c.a, c.a->res[r]) : "none";
                return tb == ta ? tb : tb + "->" + ta;
            };
            using Row = const QueueRow &;
            using A = const QueueAmounts &;
            auto quoted = [&](bool has, uint64_t v) { return has ? amount_text(r, v) : std::string("-"); };
            t.add({c.pool, std::string(2 * size_t(c.level - 1), ' ') + c.account, tres_name(cfg, r),
                   cell([&](Row, A a) { return quoted(a.has_quota, a.quota); }),
                   cell([&](Row, A a) { return quoted(a.has_limit, a.limit); }),
                   cell([&](Row row, A) { return num(row.spec->weight); }),
                   cell([&](Row, A a) { return amount_text(r, a.fairshare); }),
                   cell([&](Row, A a) { return amount_text(r, a.used); }),
                   cell([&](Row, A a) { return quoted(a.has_quota, a.borrowed); }),
                   cell([&](Row, A a) { return quoted(a.has_quota, a.lent); }),
                   cell([&](Row, A a) { return a.has_quota ? std::string(standing_text(a.standing)) : "-"; })});
        }
    out << "\nQueues (accounts):\n";
    t.print(out);
}

// A blank line, then "TITLE:" when there are rows to list (true), else
// "TITLE: none." (false).
bool titled(std::ostream &out, const char *title, bool any) {
    out << "\n" << title << (any ? ":\n" : ": none.\n");
    return any;
}

// The pending jobs of one kind of change.  A job that would (no longer)
// start shows its name and its reason on the side where it waits; one
// that waits for another reason, both reasons.
void pending_table(const WhatifModel &w, PendingChange::Kind kind, std::ostream &out) {
    const bool other = kind == PendingChange::Other;
    std::vector<std::string> head = {"JOBID", "PARTITION", "NAME", "USER", "TIER", "GPUS"};
    if (other) head.erase(head.begin() + 2);
    if (kind != PendingChange::Stop) head.push_back("NOW");
    if (kind != PendingChange::Start) head.push_back("WITH_THE_CHANGE");
    Table jt(head, other ? "llllrll" : "lllllrl");
    for (const PendingChange &c : w.pending) {
        if (c.kind != kind) continue;
        const JobMeta *m = w.after.view.job(c.a->job_id);
        std::vector<std::string> row = {w.after.job_label(c.a->job_id), m ? m->partition : ""};
        if (!other) row.push_back(m ? m->name.substr(0, 12) : "");
        for (std::string cell : {w.after.user_of(c.a->job_id), w.after.tier_name(c.a->tier), num(c.a->gpus)})
            row.push_back(std::move(cell));
        if (kind != PendingChange::Stop) row.push_back(reason_text(w.before, *c.b));
        if (kind != PendingChange::Start) row.push_back(reason_text(w.after, *c.a));
        jt.add(std::move(row));
    }
    jt.print(out);
}

void running_table(const WhatifModel &w, RunningChange::Kind kind, std::ostream &out) {
    Table jt({"JOBID", "POOL", "USER", "TIER", "GPUS", "BORROWED", "FROM", "PROTECTED_UNTIL"}, "llllrrll");
    for (const RunningChange &c : w.running) {
        if (c.kind != kind) continue;
        jt.add({w.after.job_label(c.a->job_id), w.after.pool_name(c.a->pool), w.after.user_of(c.a->job_id),
                w.after.tier_name(c.a->tier), num(c.a->gpus), side_num(c.b->borrowed, c.a->borrowed),
                pool_gpus_text(w.after, c.a->lenders), c.a->protected_until ? slurm_time(c.a->protected_until) : "-"});
    }
    jt.print(out);
}

void preempted_table(const WhatifModel &w, std::ostream &out) {
    Table jt({"JOBID", "POOL", "USER", "GPUS", "RULE", "FOR_JOB"}, "lllrll");
    for (const Preempted &v : w.preempted) {
        const RunningExplain *re = w.after.x.find_running(v.victim);
        jt.add({w.after.job_label(v.victim), re ? w.after.pool_name(re->pool) : "", w.after.user_of(v.victim),
                num(re ? re->gpus : 0), rule_name(v.rule), w.after.job_label(v.preemptor)});
    }
    jt.print(out);
}

// "gpupool.conf were FILE with A.B=C, D.E=F".
std::string change_text(const Options &opt) {
    std::string change;
    if (!opt.whatif_config.empty()) change = "gpupool.conf were " + opt.whatif_config;
    if (!opt.whatif_set.empty()) change += (change.empty() ? "" : " with ") + joined(opt.whatif_set, ", ");
    return change;
}

void whatif_table(const WhatifModel &w, const Options &opt, std::ostream &out) {
    out << "What if " << change_text(opt) << " (figures now->with the change):\n";
    pools_table(w, out);
    if (!w.queues.empty()) queues_table(w, out);
    auto has = [&](PendingChange::Kind k) { return !w.pending_ids(k).empty(); };
    auto has_running = [&](RunningChange::Kind k) { return !w.running_ids(k).empty(); };
    if (titled(out, "Pending jobs that would start", has(PendingChange::Start)))
        pending_table(w, PendingChange::Start, out);
    if (titled(out, "Pending jobs that would no longer start", has(PendingChange::Stop)))
        pending_table(w, PendingChange::Stop, out);
    if (has(PendingChange::Other)) {
        out << "\nPending jobs that would wait for another reason:\n";
        pending_table(w, PendingChange::Other, out);
    }
    if (titled(out, "Running jobs that would become reclaimable", has_running(RunningChange::Become)))
        running_table(w, RunningChange::Become, out);
    if (titled(out, "Running jobs that would no longer be reclaimable", has_running(RunningChange::Cease)))
        running_table(w, RunningChange::Cease, out);
    if (titled(out, "Running jobs that would be preempted now", !w.preempted.empty())) preempted_table(w, out);
    std::vector<std::string> warnings = w.after.engine.warnings();
    if (!warnings.empty()) {
        out << "\n";
        for (const std::string &warning : warnings) out << "Warning with the change: " << warning << "\n";
    }
}

}  // namespace

int cmd_whatif(Engine &engine, Config modified, const ClusterView &view, const Options &opt, std::ostream &out,
               std::ostream &err) {
    // The modified engine starts where this one starts: the same usage
    // history and remembered submit times, so the two passes differ only
    // by the configuration.
    Engine twin;
    twin.set_config(std::move(modified));
    twin.load_state_json(engine.state_json(view.now));
    Pass before = run_pass(engine, view, 0);
    Pass after = run_pass(twin, view, 0);
    if (!opt.pool.empty() && before.pool_index(opt.pool) < 0 && after.pool_index(opt.pool) < 0) {
        err << "gpupool: no pool " << opt.pool << " in " << view.conf_path << " or the modified configuration\n";
        return 1;
    }
    const WhatifModel w = whatif_model(before, after, opt);
    (opt.json ? whatif_json : whatif_table)(w, opt, out);
    return 0;
}

}  // namespace gpupool::cli
