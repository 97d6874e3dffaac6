// The last pass as JSON: what the admin command and the simulator print.
#include <jansson.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "engine.hpp"

namespace gpupool {

namespace {
const char *admission_name(Admission a) {
    switch (a) {
    case Admission::Quota: return "admitted";
    case Admission::Held: return "held";
    default: return "free";
    }
}

// One pool of the pass as JSON; `cfg` (null: none loaded) names the tiers.
json_t *pool_json(const PoolState &p, const Config *cfg) {
    json_t *by_tier = json_object();
    for (size_t t = 0; t < p.pending_by_tier.size() && cfg; ++t)
        json_object_set_new(by_tier, cfg->tiers[t].name.c_str(), json_integer(p.pending_by_tier[t]));
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(p.name.c_str()));
    json_object_set_new(o, "capacity", json_integer(p.capacity));
    json_object_set_new(o, "quota", json_integer(p.quota));
    json_object_set_new(o, "weight", json_integer(p.weight));
    json_object_set_new(o, "np_used", json_integer(p.np_used()));
    json_object_set_new(o, "p_used", json_integer(p.p_used()));
    json_object_set_new(o, "used", json_integer(p.used()));
    json_object_set_new(o, "borrowed", json_integer(p.borrowed()));
    json_object_set_new(o, "lent", json_integer(p.lent));
    json_object_set_new(o, "fairshare", json_integer(p.fairshare));
    json_object_set_new(o, "decayed_usage", json_real(p.decayed_usage));
    json_object_set_new(o, "usage_share", json_real(p.usage_share));
    json_object_set_new(o, "np_reserved", json_integer(p.np_reserved()));
    json_object_set_new(o, "pending_jobs", json_integer(p.pending_jobs));
    json_object_set_new(o, "pending_gpus", json_integer(p.pending_gpus));
    json_object_set_new(o, "held_jobs", json_integer(p.held_jobs));
    json_object_set_new(o, "pending_by_tier", by_tier);
    return o;
}
}  // namespace

std::string Engine::report_json() const {
    json_t *root = json_object();
    json_object_set_new(root, "now", json_integer(eval_.now));
    json_object_set_new(root, "valid", json_boolean(eval_.valid));
    if (config_) {
        json_t *tiers = json_array();
        for (const Tier &t : config_->tiers) {
            json_t *qos = json_array();
            for (const std::string &q : t.qos) json_array_append_new(qos, json_string(q.c_str()));
            json_array_append_new(tiers, json_pack("{s:s,s:I,s:b,s:o}", "name", t.name.c_str(), "priority",
                                                   (json_int_t)t.priority, "preemptible", t.preemptible, "qos", qos));
        }
        json_object_set_new(root, "tiers", tiers);
    }
    json_t *pools = json_array();
    for (const PoolState &p : eval_.pools) json_array_append_new(pools, pool_json(p, config_.get()));
    json_object_set_new(root, "pools", pools);

    auto tier_name = [&](int t) { return config_ && t >= 0 ? config_->tiers[static_cast<size_t>(t)].name.c_str() : ""; };
    auto pool_name = [&](int p) { return p >= 0 ? eval_.pools[static_cast<size_t>(p)].name.c_str() : ""; };
    json_t *pending = json_array();
    for (const PendingResult &r : eval_.pending) {
        json_t *rp = json_array();
        for (int p : r.pools) json_array_append_new(rp, json_string(pool_name(p)));
        json_t *o = json_object();
        json_object_set_new(o, "job_id", json_integer(r.job_id));
        json_object_set_new(o, "position", json_integer(r.position));
        json_object_set_new(o, "priority", json_integer(r.priority));
        json_object_set_new(o, "tier", json_string(tier_name(r.tier)));
        json_object_set_new(o, "pools", rp);
        json_object_set_new(o, "gpus", json_integer(r.gpus));
        if (r.array_tasks > 1) {
            json_object_set_new(o, "array_tasks", json_integer(r.array_tasks));
            json_object_set_new(o, "admitted_tasks", json_integer(r.admitted_tasks));
            json_object_set_new(o, "array_running", json_integer(array_running(r.job_id)));
        }
        json_object_set_new(o, "orig_submit", json_integer(r.orig_submit));
        json_object_set_new(o, "admission", json_string(admission_name(r.admission)));
        json_object_set_new(o, "reason", json_string(reason_of(r).c_str()));
        if (r.admission != Admission::Held && !r.refused.empty()) {
            // Admitted in some of its pools: Slurm may not start it in these.
            json_t *rf = json_array();
            for (const Refusal &x : r.refused) json_array_append_new(rf, json_string(pool_name(x.pool)));
            json_object_set_new(o, "refused_pools", rf);
        }
        json_object_set_new(o, "factor_tier", json_integer(r.factor_tier));
        json_object_set_new(o, "factor_fairshare", json_integer(r.factor_fairshare));
        json_object_set_new(o, "factor_age", json_integer(r.factor_age));
        json_array_append_new(pending, o);
    }
    json_object_set_new(root, "pending", pending);

    std::vector<const RunningInfo *> running;
    for (const auto &[id, r] : eval_.running) running.push_back(&r);
    std::sort(running.begin(), running.end(), [](auto *a, auto *b) { return a->rank < b->rank; });
    json_t *run = json_array();
    for (const RunningInfo *r : running)
        json_array_append_new(run, json_pack("{s:I,s:s,s:s,s:I,s:I,s:s,s:I}", "job_id", (json_int_t)r->job_id,
                                             "pool", pool_name(r->pool), "tier", tier_name(r->tier), "gpus",
                                             (json_int_t)r->gpus, "start", (json_int_t)r->start, "victim_class",
                                             victim_class_name(r->cls), "victim_rank", (json_int_t)r->rank));
    json_object_set_new(root, "running", run);
    json_t *warn = json_array();
    for (const std::string &w : warnings()) json_array_append_new(warn, json_string(w.c_str()));
    json_object_set_new(root, "warnings", warn);

    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) throw std::runtime_error("cannot encode report");
    std::string out(text);
    std::free(text);
    return out;
}

}  // namespace gpupool
