#include "live.hpp"

#include <jansson.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "config.hpp"

namespace gpupool::cli {

namespace {

std::string dir_of(const std::string &path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}


// The usage history the plugins save, if this user may read it.
void load_history(Engine &engine, UsageHistory &h) {
    if (h.path == "none") {
        h.error = "not read (--state=none)";
        return;
    }
    std::ifstream in(h.path, std::ios::binary);
    if (!in) {
        h.error = h.path + ": " + std::strerror(errno);
        return;
    }
    std::ostringstream text;
    text << in.rdbuf();
    try {
        engine.load_state_json(text.str());
    } catch (const std::exception &e) {
        h.error = h.path + ": " + e.what();
        return;
    }
    json_error_t jerr;
    if (json_t *root = json_loads(text.str().c_str(), 0, &jerr)) {
        json_t *saved = json_object_get(root, "saved_at");
        if (json_is_integer(saved)) h.saved_at = json_integer_value(saved);
        json_decref(root);
    }
    h.available = true;
}

}  // namespace

std::string default_conf_path(const ControllerConf &cc) {
    const char *env = std::getenv("SLURM_CONF");
    if (env && *env) return dir_of(env) + "/gpupool.conf";
    if (!cc.slurm_conf.empty()) return dir_of(cc.slurm_conf) + "/gpupool.conf";
    return "/etc/slurm/gpupool.conf";
}

void load_live(const LiveOptions &opt, Live &live, FirstSubmits *known) {
    live.controller = load_controller_conf();
    const ControllerConf &cc = live.controller;
    ClusterView &view = live.view;
    view.now = static_cast<int64_t>(std::time(nullptr));
    view.cluster = cc.cluster;
    view.conf_path = opt.conf_path.empty() ? default_conf_path(cc) : opt.conf_path;

    live.engine.set_config(load_config_file(view.conf_path, &live.conf_text));
    view.history.path = opt.state_path.empty() ? cc.state_save + "/gpupool_state.json" : opt.state_path;
    load_history(live.engine, view.history);
    view.passes.path = cc.state_save + "/gpupool_stats.json";
    try {
        view.passes.stats = load_stats_file(view.passes.path);
        view.passes.available = true;
    } catch (const std::exception &e) {
        view.passes.error = e.what();
    }

    load_cluster(view, live.engine.config(), cc, opt.node_usage);
    // Requeued jobs keep their first submit time (R1.3): from the history
    // if it knows them, else from accounting.
    FirstSubmits once;
    FirstSubmits &fs = known ? *known : once;
    const FirstSubmits::Query q = fs.plan(view);
    std::string why_not;
    fs.merge(q, first_submit_times(q.jobs, q.since, q.until, cc, why_not));
    for (const auto &[id, t] : fs.requeued()) live.engine.note_job(id, t, 1, view.now);
    if (!why_not.empty() && !view.history.available)
        view.notes.push_back("original submit times of requeued jobs unknown (" + why_not + ")");
}

}  // namespace gpupool::cli
