// gpupool(1): what gpupool decided and why, from the live cluster.
//
// The command builds the snapshot the plugins build, loads gpupool.conf
// from the Slurm configuration directory and the usage history from
// StateSaveLocation, and runs the same core once at the current time:
// see doc/gpupool.1.
#include <getopt.h>
#include <slurm/slurm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "check.hpp"
#include "check_live.hpp"
#include "commands.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "live.hpp"
#include "slurm_compat.hpp"
#include "slurm_preemptions.hpp"
#include "settings.hpp"
#include "sim_command.hpp"
#include "trust.hpp"
#include "version.hpp"
#ifdef GPUPOOL_HAVE_MHD
#include "exporter.hpp"
#endif

#ifndef GPUPOOL_VERSION
#define GPUPOOL_VERSION "unknown"
#endif
#ifndef GPUPOOL_SLURM_SOURCE_VERSION
#define GPUPOOL_SLURM_SOURCE_VERSION ""
#endif
#ifndef GPUPOOL_PLUGINDIR
#define GPUPOOL_PLUGINDIR ""
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
    "                               ahead), where a running job borrows from, who\n"
    "                               preempted a job (also one that has ended)\n"
    "  whatif [--config FILE] [--set NAME.Key=VALUE]...\n"
    "                               each pool's quota, fairshare and borrowable GPUs\n"
    "                               now and with the change, jobs that would start,\n"
    "                               become reclaimable or be preempted\n"
    "  check [--conf=FILE]          gpupool.conf as the plugins read it, checked against\n"
    "                               the running cluster and slurm.conf: each problem\n"
    "                               with its file, line and fix; exit status 1 on an error\n"
    "  exporter --listen ADDR:PORT  Prometheus metrics over HTTP (/metrics)\n"
    "  version                      gpupool's version, the Slurm release its plugins were\n"
    "                               built for, and the release slurmctld runs\n"
    "  sim CLUSTER WORKLOAD --conf=FILE [OPTIONS]\n"
    "                               replay a workload through the core and Slurm-like\n"
    "                               baselines, no cluster needed (gpupool sim --help)\n"
    "\n"
    "Options:\n"
    "  --json             JSON instead of a table (fields: gpupool(1))\n"
    "  -p, --pool=POOL    only this pool\n"
    "  -u, --user=USER    only this user's jobs\n"
    "  --conf=FILE        gpupool.conf to read (default: beside slurm.conf)\n"
    "  --state=FILE|none  usage history (default: StateSaveLocation/gpupool_state.json)\n"
    "  --events=FILE|none why: preemption event log (default: StateSaveLocation/\n"
    "                     gpupool_events.jsonl; none or unreadable: from accounting)\n"
    "  --config=FILE      whatif: the gpupool.conf to compare with the current one\n"
    "  --set=NAME.Key=VALUE  whatif: a key changed (Pool, Tier or global keys;\n"
    "                     ACCOUNT@POOL.Key for an Account= entry's Quota, Weight, ...)\n"
    "  --listen=ADDR:PORT exporter: where to listen (127.0.0.1:9814, [::1]:9814, :9814)\n"
    "  --min-interval=S   exporter: recompute every S seconds (default 5)\n"
    "  -h, --help         this text\n"
    "  -V, --version      version\n";

int usage_error(const std::string &msg) {
    std::cerr << "gpupool: " << msg << "\n";
    return 2;
}

// The configuration `whatif` compares with the current one: --config's
// file (or the current text), with each --set applied in turn.
Config modified_config(const Live &live, const Options &opt) {
    std::string text = live.conf_text, source = live.view.conf_path;
    if (!opt.whatif_config.empty()) {
        source = opt.whatif_config;
        load_config_file(source, &text);
    }
    for (const std::string &s : opt.whatif_set) {
        Config cfg = parse_config(text, source);
        text = apply_setting(text, cfg, s);
    }
    return parse_config(text, source);
}

// The command line: the command, its options and where to read from.
struct Args {
    std::string cmd;
    Options opt;
    LiveOptions lo;
    std::string listen, events_path;
    long min_interval = 5;
};

// Reads the options into `a`; returns -1 to go on, else the exit status.
int parse_options(int argc, char **argv, Args &a) {
    enum { OPT_JSON = 1000, OPT_CONF, OPT_STATE, OPT_CONFIG, OPT_SET, OPT_LISTEN, OPT_MIN_INTERVAL, OPT_EVENTS };
    static const struct option longopts[] = {
        {"json", no_argument, nullptr, OPT_JSON},
        {"pool", required_argument, nullptr, 'p'},
        {"user", required_argument, nullptr, 'u'},
        {"conf", required_argument, nullptr, OPT_CONF},
        {"state", required_argument, nullptr, OPT_STATE},
        {"config", required_argument, nullptr, OPT_CONFIG},
        {"set", required_argument, nullptr, OPT_SET},
        {"listen", required_argument, nullptr, OPT_LISTEN},
        {"min-interval", required_argument, nullptr, OPT_MIN_INTERVAL},
        {"events", required_argument, nullptr, OPT_EVENTS},
        {"help", no_argument, nullptr, 'h'},
        {"version", no_argument, nullptr, 'V'},
        {nullptr, 0, nullptr, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "p:u:hV", longopts, nullptr)) != -1) {
        switch (c) {
        case OPT_JSON: a.opt.json = true; break;
        case 'p': a.opt.pool = optarg; break;
        case 'u': a.opt.user = optarg; break;
        case OPT_CONF: a.lo.conf_path = optarg; break;
        case OPT_STATE: a.lo.state_path = optarg; break;
        case OPT_EVENTS: a.events_path = optarg; break;
        case OPT_CONFIG: a.opt.whatif_config = optarg; break;
        case OPT_SET: a.opt.whatif_set.push_back(optarg); break;
        case OPT_LISTEN: a.listen = optarg; break;
        case OPT_MIN_INTERVAL: {
            char *end = nullptr;
            errno = 0;
            a.min_interval = std::strtol(optarg, &end, 10);
            if (errno || !end || *end || end == optarg || a.min_interval < 1 || a.min_interval > 3600)
                return usage_error(std::string("--min-interval: expected seconds 1..3600, not '") + optarg + "'");
            break;
        }
        case 'h': std::cout << kUsage; return 0;
        case 'V': std::cout << "gpupool " GPUPOOL_VERSION "\n"; return 0;
        default: std::cerr << kUsage; return 2;
        }
    }
    return -1;
}

// The command and its arguments after the options, and the options that
// belong to another command; returns -1 to go on, else the exit status.
int parse_command(int argc, char **argv, Args &a) {
    if (optind >= argc) {
        std::cerr << kUsage;
        return 2;
    }
    const std::string &cmd = a.cmd = argv[optind++];
    if (cmd != "status" && cmd != "queue" && cmd != "why" && cmd != "whatif" && cmd != "exporter" &&
        cmd != "check" && cmd != "version") {
        std::cerr << "gpupool: unknown command '" << cmd << "'\n" << kUsage;
        return 2;
    }
    if (cmd == "why") {
        char *end = nullptr;
        unsigned long id = optind < argc ? std::strtoul(argv[optind], &end, 10) : 0;
        if (optind >= argc || !end || *end != '\0' || id == 0 || id > UINT32_MAX)
            return usage_error("why needs a job id (gpupool why JOBID)");
        a.opt.job_id = static_cast<uint32_t>(id);
        a.lo.node_usage = true;  // its victim plan
        ++optind;
    }
    // A one-node job starts only where one node fits it (no_one_node).
    if (cmd == "queue" || cmd == "whatif") a.lo.node_usage = true;
    if (optind < argc) return usage_error(std::string("unexpected argument '") + argv[optind] + "'");
    const Options &opt = a.opt;
    if (cmd == "whatif" && opt.whatif_config.empty() && opt.whatif_set.empty())
        return usage_error("whatif needs --config FILE or --set NAME.Key=VALUE");
    if (cmd != "whatif" && (!opt.whatif_config.empty() || !opt.whatif_set.empty()))
        return usage_error("--config and --set are options of whatif");
    if (cmd == "check" && (opt.json || !opt.pool.empty() || !opt.user.empty()))
        return usage_error("check takes only --conf=FILE");
    if (cmd == "version" && (opt.json || !opt.pool.empty() || !opt.user.empty() || !a.lo.conf_path.empty()))
        return usage_error("version takes no option");
    if (cmd == "exporter" && a.listen.empty()) return usage_error("exporter needs --listen ADDR:PORT");
    if (cmd != "exporter" && !a.listen.empty()) return usage_error("--listen is an option of exporter");
    return -1;
}

int exporter_command(const Args &a) {
#ifdef GPUPOOL_HAVE_MHD
    slurm_init(nullptr);
    ExporterOptions eo;
    eo.listen = a.listen;
    eo.min_interval = a.min_interval;
    eo.live = a.lo;
    int rc = run_exporter(eo, std::cerr);
    slurm_fini();
    return rc;
#else
    (void)a;
    std::cerr << "gpupool: this gpupool was built without libmicrohttpd: no exporter\n";
    return 1;
#endif
}

// The text of gpupool.conf at `path`, read as the plugins read it; false,
// with `why`, when it cannot be read at all (a parse error is check's).
bool read_conf(const std::string &path, std::string &text, std::string &why) {
    try {
        load_config_file(path, &text);
        return true;
    } catch (const ConfigError &e) {
        why = e.what();
    }
    struct stat st;
    std::ifstream in(path, std::ios::binary);
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) > kMaxConfigBytes || !in)
        return false;
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
    return true;
}

// The slurm.conf libslurm would read: $SLURM_CONF's, Debian's, or the copy
// a configless node caches; "" for none.  (A configless node that only has
// DNS SRV records is not seen: check then checks the file alone.)
std::string local_slurm_conf() {
    const char *env = std::getenv("SLURM_CONF");
    if (env && *env) return ::access(env, R_OK) == 0 ? env : "";
    for (const char *p : {"/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf"})
        if (::access(p, R_OK) == 0) return p;
    return "";
}

bool slurm_conf_here() { return !local_slurm_conf().empty(); }

// `check`: one line per problem and a summary on stdout.  `slurm`: libslurm
// is initialised (a slurm.conf was found).
int check_command(const Args &a, bool slurm) {
    CheckCluster cluster;
    ControllerConf cc;
    try {
        if (!slurm) throw std::runtime_error("no slurm.conf here ($SLURM_CONF, /etc/slurm/slurm.conf)");
        cc = load_controller_conf();
    } catch (const std::exception &e) {
        cluster.controller_error = e.what();
    }
    const std::string path = a.lo.conf_path.empty() ? default_conf_path(cc) : a.lo.conf_path;
    std::string text, why;
    if (!read_conf(path, text, why)) {
        const std::string what = why.compare(0, path.size() + 2, path + ": ") == 0 ? why.substr(path.size() + 2) : why;
        return print_check({CheckProblem{path, 0, true, what, "give gpupool.conf's path with --conf=FILE"}}, path,
                           std::cout);
    }
    if (cluster.controller_error.empty()) {
        std::optional<Config> cfg;
        try {
            cfg = parse_config(text, path);
        } catch (const ConfigError &) {
            // check_config reports it, with its line.
        }
        try {
            cluster = load_check_cluster(cc, cfg ? &*cfg : nullptr);
        } catch (const std::exception &e) {
            cluster.controller_error = e.what();
        }
    }
    // The file's owner and mode need no slurmctld: without it, SlurmUser
    // is slurm.conf's here (root where that sets none).
    if (!cluster.controller_error.empty() && slurm) {
        cluster.slurm_conf = local_slurm_conf();
        std::ifstream in(cluster.slurm_conf);
        std::ostringstream conf;
        conf << in.rdbuf();
        cluster.slurm_conf_text = conf.str();
    }
    cluster.trust_error = check_file_trust(path, cluster);
    // Where nothing here says who SlurmUser is, a refusal only of the
    // file's owner (judged again as if that owner were SlurmUser) may be
    // wrong; one of a mode or a directory is not.
    if (!cluster.trust_error.empty() && trust_slurm_uid_guessed(cluster)) {
        struct stat st;
        cluster.slurm_user_unknown = ::stat(path.c_str(), &st) == 0 &&
                                     check_trusted_path(path, "gpupool.conf", st.st_uid, false).empty();
    }
    return print_check(check_config(path, text, cluster), path, std::cout);
}

// `version`: what was built, and the release slurmctld reports (libslurm
// is initialised when `slurm`: a slurm.conf was found).
int version_command(bool slurm) {
    VersionInfo v;
    v.gpupool = GPUPOOL_VERSION;
    v.plugins_slurm = GPUPOOL_SLURM_SOURCE_VERSION;
    v.plugindir = GPUPOOL_PLUGINDIR;
    v.libslurm = SLURM_VERSION_NUMBER;
    v.ctld_asked = slurm;
    if (slurm) {
        slurm_conf_t *c = nullptr;
        if (slurm_load_ctl_conf(0, &c) == SLURM_SUCCESS && c) {
            v.ctld_slurm = c->version ? c->version : "";
            if (v.ctld_slurm.empty()) v.ctld_error = "it reports no version";
            compat::free_ctl_conf(c);
        } else {
            v.ctld_error = slurm_strerror(compat::slurm_errno());
        }
    }
    return print_version(v, std::cout);
}

// status, queue, why or whatif over the live cluster.
int view_command(const Args &a) {
    const std::string &cmd = a.cmd;
    const Options &opt = a.opt;
    int rc = 1;
    try {
        Live live;
        load_live(a.lo, live);
        if (cmd == "why") load_preemptions(live.view, live.controller, opt.job_id, a.events_path);
        const ClusterView &view = live.view;
        if (!view.history.available)
            std::cerr << "gpupool: usage history unavailable (" << view.history.error << "): decayed usage"
                      << (live.engine.config().usage_weight != 0 ? " and fairshare" : "") << " shown as unknown\n";
        for (const std::string &n : view.notes) std::cerr << "gpupool: note: " << n << "\n";

        if (cmd == "status")
            rc = cmd_status(live.engine, view, opt, std::cout, std::cerr);
        else if (cmd == "queue")
            rc = cmd_queue(live.engine, view, opt, std::cout, std::cerr);
        else if (cmd == "why")
            rc = cmd_why(live.engine, view, opt, std::cout, std::cerr);
        else {
            Config modified;
            try {
                modified = modified_config(live, opt);
            } catch (const ConfigError &e) {
                throw ConfigError(std::string("whatif: ") + e.what());
            }
            rc = cmd_whatif(live.engine, std::move(modified), view, opt, std::cout, std::cerr);
        }
        // whatif prints the warnings of both configurations itself.
        if (!opt.json && cmd != "whatif")
            for (const std::string &w : live.engine.warnings()) std::cerr << "gpupool: warning: " << w << "\n";
    } catch (const std::exception &e) {
        std::cerr << "gpupool: " << e.what() << "\n";
        rc = 1;
    }
    return rc;
}

}  // namespace

int main(int argc, char **argv) {
    // `sim` reads files only: no Slurm, options of its own.
    if (argc > 1 && std::strcmp(argv[1], "sim") == 0)
        return gpupool::sim::run_sim_command(argc - 1, argv + 1, std::cout, std::cerr);
    Args a;
    int rc = parse_options(argc, argv, a);
    if (rc < 0) rc = parse_command(argc, argv, a);
    if (rc >= 0) return rc;
    if (a.cmd == "exporter") return exporter_command(a);
    // libslurm exits when it finds no slurm.conf: check then reads the
    // file alone, and says so.
    if (a.cmd == "check" && !slurm_conf_here()) return check_command(a, false);
    if (a.cmd == "version" && !slurm_conf_here()) return version_command(false);
    slurm_init(nullptr);
    rc = a.cmd == "check" ? check_command(a, true) : a.cmd == "version" ? version_command(true) : view_command(a);
    slurm_fini();
    return rc;
}
