// The pass every command prints from: the engine's evaluation of the
// view's snapshot and its explanation (explain.hpp), with what the
// commands share to say it: names, job labels, a pending job's reason,
// the JSON document's head and a pending job's JSON.  Internal to the
// gpupool command (cmd_*.cpp).
#pragma once

#include <jansson.h>

#include <string>
#include <vector>

#include "command_format.hpp"
#include "commands.hpp"
#include "explain.hpp"
#include "json_ptr.hpp"

namespace gpupool::cli {

// Everything a command prints comes from here.
struct Pass {
    Engine &engine;
    const ClusterView &view;
    Explanation x;
    bool usage_known = false;      // decayed usage figures
    bool fairshare_known = false;  // fairshare (depends on usage when UsageWeight > 0)

    const Config &cfg() const { return engine.config(); }
    const Evaluation &ev() const { return engine.last(); }
    std::string pool_name(int p) const { return p >= 0 ? ev().pools[static_cast<size_t>(p)].name : ""; }
    std::string tier_name(int t) const { return t >= 0 ? cfg().tiers[static_cast<size_t>(t)].name : ""; }
    int pool_index(const std::string &name) const {
        auto it = ev().pool_index.find(name);
        return it == ev().pool_index.end() ? -1 : it->second;
    }
    std::vector<std::string> pool_names(const std::vector<int> &pools) const;
    std::string user_of(uint32_t id) const {
        const JobMeta *m = view.job(id);
        return m && !m->user.empty() ? m->user : "?";
    }
    // "123", "123_4", "123_[1-5%2]" as squeue's %i.
    std::string job_label(uint32_t id) const;
};

// One full pass of `engine` over `view` at view.now, explained; the
// explanation details `detail_job` (0: none) the way `why` needs.
Pass run_pass(Engine &engine, const ClusterView &view, uint32_t detail_job);

// The pool -p names, in `only` (-1: no -p, every pool); false, said on
// `err`, when the configuration has no such pool.
bool pool_option(const Pass &p, const Options &opt, std::ostream &err, int &only);

// The head every JSON document starts with: command, version, now,
// cluster, config, usage_history.
JsonPtr document(const Pass &p, const char *command);
// "warnings": the engine's warnings and the view's notes.
void add_warnings(const Pass &p, json_t *root);

// [{"pool": NAME or null, "gpus": N}...], and "pool2:1,(unassigned):1" or "-".
json_t *pool_gpus_json(const Pass &p, const std::vector<PoolGpus> &v);
std::string pool_gpus_text(const Pass &p, const std::vector<PoolGpus> &v);

// The account queue whose quota holds a job in a quota line
// (q.queue > 0): "pool1/physics cpu 20/32", "pool1/physics cpu quota 32 < 40".
std::string queue_quota_text(const Pass &p, const QuotaLine &q);
// Why a pending job waits, in words: "quota full: pool1 2/2", ...
std::string reason_text(const Pass &p, const PendingExplain &pe);
// "admitted", "held", "user_held" or "free".
const char *admission_code(const Pass &p, const PendingExplain &pe);
// A pending job's fields (queue's jobs, why's job).
json_t *pending_json(const Pass &p, const PendingExplain &pe);

}  // namespace gpupool::cli
