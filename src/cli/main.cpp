// gpupool(1): what gpupool decided and why, from the live cluster.
//
// The command builds the snapshot the plugins build, loads gpupool.conf
// from the Slurm configuration directory and the usage history from
// StateSaveLocation, and runs the same core once at the current time:
// see doc/gpupool.1.
#include <getopt.h>
#include <slurm/slurm.h>

#include <jansson.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "commands.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "slurm_view.hpp"

#ifndef GPUPOOL_VERSION
#define GPUPOOL_VERSION "unknown"
#endif

using namespace gpupool;
using namespace gpupool::cli;

namespace {

const char kUsage[] =
    "Usage: gpupool [OPTIONS] COMMAND\n"
    "\n"
    "Commands:\n"
    "  status [-p POOL]             each pool: capacity, quota, used, borrowed and lent\n"
    "                               (and from/to which pools), free quota and GPUs,\n"
    "                               fairshare, decayed usage, pending jobs per tier\n"
    "  queue [-p POOL] [-u USER]    pending jobs in gpupool's order, with position,\n"
    "                               tier, GPUs, wait and why each waits\n"
    "  why JOBID                    why a pending job waits (quota arithmetic, jobs\n"
    "                               ahead) or where a running job borrows from\n"
    "\n"
    "Options:\n"
    "  --json             JSON instead of a table (fields: gpupool(1))\n"
    "  -p, --pool=POOL    only this pool\n"
    "  -u, --user=USER    only this user's jobs\n"
    "  --conf=FILE        gpupool.conf to read (default: beside slurm.conf)\n"
    "  --state=FILE|none  usage history (default: StateSaveLocation/gpupool_state.json)\n"
    "  -h, --help         this text\n"
    "  -V, --version      version\n";

std::string dir_of(const std::string &path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// gpupool.conf beside slurm.conf, as the plugins find it
// (get_extra_conf_path): the directory of $SLURM_CONF, else of the
// slurm.conf slurmctld reads.
std::string default_conf(const ControllerConf &cc) {
    const char *env = std::getenv("SLURM_CONF");
    if (env && *env) return dir_of(env) + "/gpupool.conf";
    if (!cc.slurm_conf.empty()) return dir_of(cc.slurm_conf) + "/gpupool.conf";
    return "/etc/slurm/gpupool.conf";
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

int main(int argc, char **argv) {
    enum { OPT_JSON = 1000, OPT_CONF, OPT_STATE };
    static const struct option longopts[] = {
        {"json", no_argument, nullptr, OPT_JSON},     {"pool", required_argument, nullptr, 'p'},
        {"user", required_argument, nullptr, 'u'},    {"conf", required_argument, nullptr, OPT_CONF},
        {"state", required_argument, nullptr, OPT_STATE}, {"help", no_argument, nullptr, 'h'},
        {"version", no_argument, nullptr, 'V'},       {nullptr, 0, nullptr, 0},
    };
    Options opt;
    std::string conf_path, state_path;
    int c;
    while ((c = getopt_long(argc, argv, "p:u:hV", longopts, nullptr)) != -1) {
        switch (c) {
        case OPT_JSON: opt.json = true; break;
        case 'p': opt.pool = optarg; break;
        case 'u': opt.user = optarg; break;
        case OPT_CONF: conf_path = optarg; break;
        case OPT_STATE: state_path = optarg; break;
        case 'h': std::cout << kUsage; return 0;
        case 'V': std::cout << "gpupool " GPUPOOL_VERSION "\n"; return 0;
        default: std::cerr << kUsage; return 2;
        }
    }
    if (optind >= argc) {
        std::cerr << kUsage;
        return 2;
    }
    const std::string cmd = argv[optind++];
    if (cmd != "status" && cmd != "queue" && cmd != "why") {
        std::cerr << "gpupool: unknown command '" << cmd << "'\n" << kUsage;
        return 2;
    }
    if (cmd == "why") {
        char *end = nullptr;
        unsigned long id = optind < argc ? std::strtoul(argv[optind], &end, 10) : 0;
        if (optind >= argc || !end || *end != '\0' || id == 0 || id > UINT32_MAX) {
            std::cerr << "gpupool: why needs a job id (gpupool why JOBID)\n";
            return 2;
        }
        opt.job_id = static_cast<uint32_t>(id);
        ++optind;
    }
    if (optind < argc) {
        std::cerr << "gpupool: unexpected argument '" << argv[optind] << "'\n";
        return 2;
    }

    slurm_init(nullptr);
    int rc = 1;
    try {
        ControllerConf cc = load_controller_conf();
        ClusterView view;
        view.now = static_cast<int64_t>(std::time(nullptr));
        view.cluster = cc.cluster;
        view.conf_path = conf_path.empty() ? default_conf(cc) : conf_path;

        Engine engine;
        engine.set_config(load_config_file(view.conf_path));
        const Config &cfg = engine.config();

        view.history.path = state_path.empty() ? cc.state_save + "/gpupool_state.json" : state_path;
        load_history(engine, view.history);
        if (!view.history.available)
            std::cerr << "gpupool: usage history unavailable (" << view.history.error << "): decayed usage"
                      << (cfg.usage_weight != 0 ? " and fairshare" : "") << " shown as unknown\n";

        load_cluster(view, cfg.quota_tres, cc);
        // Requeued jobs keep their first submit time (R1.3): from the
        // history if it knows them, else from accounting.
        std::string why_not;
        for (const auto &[id, t] : first_submit_times(view, cc, why_not)) engine.note_job(id, t, 1, view.now);
        if (!why_not.empty() && !view.history.available)
            view.notes.push_back("original submit times of requeued jobs unknown (" + why_not + ")");
        for (const std::string &n : view.notes) std::cerr << "gpupool: note: " << n << "\n";

        if (cmd == "status")
            rc = cmd_status(engine, view, opt, std::cout, std::cerr);
        else if (cmd == "queue")
            rc = cmd_queue(engine, view, opt, std::cout, std::cerr);
        else
            rc = cmd_why(engine, view, opt, std::cout, std::cerr);
        if (!opt.json)
            for (const std::string &w : engine.warnings()) std::cerr << "gpupool: warning: " << w << "\n";
    } catch (const std::exception &e) {
        std::cerr << "gpupool: " << e.what() << "\n";
        rc = 1;
    }
    slurm_fini();
    return rc;
}
