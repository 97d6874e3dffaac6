#include "sim_command.hpp"

#include <getopt.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "config.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "workload.hpp"

namespace gpupool::sim {

const char kSimUsage[] =
    "Usage: gpupool sim CLUSTER WORKLOAD --conf=FILE [OPTIONS]\n"
    "\n"
    "Replays a workload on a cluster under gpupool's core and Slurm-like\n"
    "baselines, and compares them.  Needs no cluster and no Slurm daemon.\n"
    "\n"
    "Cluster (one of):\n"
    "  --cluster=SLURM_CONF     the GPU nodes and partitions of a slurm.conf\n"
    "  --nodes=COUNTxGPUS[+...] --pools=NAME[:HOSTLIST],...\n"
    "                           a made-up cluster (nodes node1..N; each pool over\n"
    "                           every node unless a hostlist is given)\n"
    "  --accounts=FILE          Slurm's account tree: sacctmgr -P show assoc\n"
    "                           format=account,parentname (default: the generator's)\n"
    "Workload (one of):\n"
    "  --sacct=FILE             sacct --parsable2 output, with its header\n"
    "  --alibaba=DIR            the Alibaba GPU cluster trace (v2023); its node list\n"
    "                           is the cluster unless one is given\n"
    "  --generate=SPEC          seeded generator: Key=Value tokens, or @FILE and\n"
    "                           more tokens after it (replacing its keys)\n"
    "  --alibaba-pools=N        pools the trace's tasks are split into (4)\n"
    "  --seed=N                 seed of that split (0)\n"
    "Policies:\n"
    "  --conf=FILE              gpupool.conf: tiers, pools, quotas (with --alibaba,\n"
    "                           default: the trace's own mapping)\n"
    "  --policy=LIST            gpupool,strict,borrow,fifo or all (default all)\n"
    "  --account-conf=FILE      the gpupool.conf whose Account= quotas the per-account\n"
    "                           figures hold accounts to (default: --conf)\n"
    "Mechanics:\n"
    "  --cred-expire=S          a requeued job may start S+1 s after (5)\n"
    "  --pass-interval=S        gpupool: full passes at least S s apart (1)\n"
    "  --sched-interval=S       scheduling walks at most every S s (0: every event)\n"
    "  --kill-delay=S           a victim's GPUs free S s after its preemption; the\n"
    "                           preemptor waits for them (0: at once); MIN-MAX:\n"
    "                           each victim's drawn evenly from MIN to MAX s\n"
    "  --kill-seed=N            seed of those draws (1)\n"
    "  --kill-delays=FILE       the n-th victim's kill takes the n-th line's\n"
    "                           seconds (a live run's, in order); then as above\n"
    "  --backfill-interval=S    only walks every S s preempt (backfill); the ones\n"
    "                           between stop a partition at its first misfit, and\n"
    "                           no later job gets its nodes then (0: off)\n"
    "  --backfill-times=FILE    the backfill cycles at these instants (one a line,\n"
    "                           the workload's clock), then every interval\n"
    "  --backfill-preemptions=N a backfill cycle preempts for at most N jobs (0: any)\n"
    "  --backfill-spacing=MS    a backfill cycle's k-th preemptor preempts k x MS\n"
    "                           thousandths of a second after its start (0)\n"
    "  --preempt-guard=S        with a kill delay, a job preempts again only S s\n"
    "                           after its last preemption (15)\n"
    "  --max-requeues=N         a job preempted N times is held, not requeued (1000)\n"
    "  --placement=P            the node a one-node job gets: conf (gpupool: each\n"
    "                           pool's Placement=; the others: Slurm's first fit, LLN\n"
    "                           where set), first, pack, spread or bestfit (Slurm\n"
    "                           22.05's: the shortest run of consecutive nodes\n"
    "                           with room) (conf)\n"
    "  --order-tolerance=S      starts S s apart or less have no order when the\n"
    "                           replay is checked against recorded starts (2)\n"
    "Output:\n"
    "  --json                   JSON instead of the text table (fields: gpupool(1))\n"
    "  --jobs-csv=FILE          one line per job and policy\n"
    "  --pools-csv=FILE         one line per pool, sample and policy\n"
    "  --sample-interval=S      seconds between pool samples (default: ~1000 samples)\n"
    "  --start-log=FILE         every start in order, with the jobs it preempted\n"
    "  --progress, --no-progress  a progress line on stderr (default: when a tty)\n"
    "  -h, --help               this text\n";

namespace {

int usage_error(std::ostream &err, const std::string &msg) {
    err << "gpupool sim: " << msg << "\n";
    return 2;
}

bool parse_number_opt(const char *name, const char *text, int64_t min, int64_t max, int64_t *out,
                       std::string *msg) {
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(text, &end, 10);
    if (errno || !end || *end || end == text || v < min || v > max) {
        *msg = std::string("--") + name + ": expected a whole number " + std::to_string(min) + ".." +
               std::to_string(max) + ", not '" + text + "'";
        return false;
    }
    *out = v;
    return true;
}

// A file of whole numbers, one a line (a live run's kills or cycles);
// empty lines and "#" comments skipped; a bad line named FILE:LINE.
bool read_numbers_opt(const char *name, const char *path, int64_t min, int64_t max, std::vector<int64_t> *out,
                      std::string *msg) {
    std::ifstream in(path);
    if (!in) {
        *msg = std::string("--") + name + ": " + path + ": cannot read: " + std::strerror(errno);
        return false;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.empty() || line[0] == '#') continue;
        int64_t v = 0;
        if (!parse_number_opt(name, line.c_str(), min, max, &v, msg)) {
            *msg = std::string(path) + ":" + std::to_string(n) + ": " + *msg;
            return false;
        }
        out->push_back(v);
    }
    return true;
}

std::string read_text_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot read: " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// --generate=SPEC: tokens, or @FILE and perhaps more tokens after it, a
// variant of a kept spec, its keys replacing the file's.
Workload generated_workload(const std::string &generate, const SimCluster &cluster) {
    const bool from_file = generate[0] == '@';
    const size_t space = from_file ? generate.find_first_of(" \t") : std::string::npos;
    const std::string source = from_file ? generate.substr(1, space - 1) : std::string("--generate");
    const std::string text = from_file ? read_text_file(source) : generate;
    const std::string overrides = space == std::string::npos ? "" : generate.substr(space);
    return generate_workload(parse_generator_spec(text, source, overrides), total_gpus(cluster));
}

// Writes `fill` into `path`, or says why it cannot.
template <typename F>
void write_file(const std::string &path, F fill) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError(path + ": cannot write: " + std::strerror(errno));
    fill(f);
    f.flush();
    if (!f) throw InputError(path + ": write failed");
}

// gpupool sim's options (getopt_long).
enum {
    OPT_CLUSTER = 1000, OPT_NODES, OPT_POOLS, OPT_SACCT, OPT_ALIBABA, OPT_GENERATE, OPT_ALI_POOLS, OPT_SEED,
    OPT_CONF, OPT_POLICY, OPT_CRED, OPT_PASS, OPT_SCHED, OPT_KILL_DELAY, OPT_KILL_DELAYS, OPT_KILL_SEED, OPT_BF_TIMES, OPT_BACKFILL, OPT_BF_PREEMPTIONS, OPT_BF_SPACING, OPT_GUARD, OPT_JSON, OPT_JOBS_CSV, OPT_POOLS_CSV, OPT_SAMPLE,
    OPT_START_LOG, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_MAX_REQUEUES, OPT_ORDER_TOL, OPT_ACCOUNTS, OPT_ACCOUNT_CONF,
    OPT_PLACEMENT
};
const struct option kLongopts[] = {
    {"cluster", required_argument, nullptr, OPT_CLUSTER},
    {"nodes", required_argument, nullptr, OPT_NODES},
    {"pools", required_argument, nullptr, OPT_POOLS},
    {"accounts", required_argument, nullptr, OPT_ACCOUNTS},
    {"sacct", required_argument, nullptr, OPT_SACCT},
    {"alibaba", required_argument, nullptr, OPT_ALIBABA},
    {"generate", required_argument, nullptr, OPT_GENERATE},
    {"alibaba-pools", required_argument, nullptr, OPT_ALI_POOLS},
    {"seed", required_argument, nullptr, OPT_SEED},
    {"conf", required_argument, nullptr, OPT_CONF},
    {"account-conf", required_argument, nullptr, OPT_ACCOUNT_CONF},
    {"policy", required_argument, nullptr, OPT_POLICY},
    {"cred-expire", required_argument, nullptr, OPT_CRED},
    {"pass-interval", required_argument, nullptr, OPT_PASS},
    {"sched-interval", required_argument, nullptr, OPT_SCHED},
    {"kill-delay", required_argument, nullptr, OPT_KILL_DELAY},
    {"kill-seed", required_argument, nullptr, OPT_KILL_SEED},
    {"kill-delays", required_argument, nullptr, OPT_KILL_DELAYS},
    {"backfill-times", required_argument, nullptr, OPT_BF_TIMES},
    {"backfill-interval", required_argument, nullptr, OPT_BACKFILL},
    {"preempt-guard", required_argument, nullptr, OPT_GUARD},
    {"backfill-preemptions", required_argument, nullptr, OPT_BF_PREEMPTIONS},
    {"backfill-spacing", required_argument, nullptr, OPT_BF_SPACING},
    {"max-requeues", required_argument, nullptr, OPT_MAX_REQUEUES},
    {"placement", required_argument, nullptr, OPT_PLACEMENT},
    {"order-tolerance", required_argument, nullptr, OPT_ORDER_TOL},
    {"json", no_argument, nullptr, OPT_JSON},
    {"jobs-csv", required_argument, nullptr, OPT_JOBS_CSV},
    {"pools-csv", required_argument, nullptr, OPT_POOLS_CSV},
    {"sample-interval", required_argument, nullptr, OPT_SAMPLE},
    {"start-log", required_argument, nullptr, OPT_START_LOG},
    {"progress", no_argument, nullptr, OPT_PROGRESS},
    {"no-progress", no_argument, nullptr, OPT_NO_PROGRESS},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

// The command line, as read.
struct SimArgs {
    std::string cluster_path, nodes, pools, accounts, sacct, alibaba, generate, conf, account_conf, policy_list = "all";
    std::string jobs_csv, pools_csv, start_log;
    int64_t ali_pools = 4, seed = 0;
    bool json = false;
    int progress = isatty(STDERR_FILENO) ? 1 : 0;
    ReplayOptions ro;
};

// Every SimArgs member by its name: parsing and running read the command
// line under the same names.
#define SIM_ARGS_BINDING                                                                                        \
    cluster_path, nodes, pools, accounts, sacct, alibaba, generate, conf, account_conf, policy_list, jobs_csv, pools_csv, start_log,   \
        ali_pools, seed, json, progress, ro

// Replays the workload under each policy in turn, with `o`; `progress`:
// how far each has come, on `err`.
std::vector<ReplayResult> replay_each(const std::vector<PolicyKind> &kinds, const SimCluster &cluster,
                                      const Workload &workload, const Config &config, ReplayOptions o,
                                      bool progress, std::ostream &err) {
    std::vector<ReplayResult> results;
    for (PolicyKind k : kinds) {
        if (progress) {
            const char *name = policy_name(k);
            o.progress = [&err, name](double done, int64_t now) {
                (void)now;
                char buf[96];
                std::snprintf(buf, sizeof buf, "\rgpupool sim: %-8s %5.1f%% of jobs done", name, 100.0 * done);
                err << buf << std::flush;
            };
        }
        results.push_back(replay(cluster, workload, config, k, o));
        if (progress) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "\rgpupool sim: %-8s done in %.1f s          \n", policy_name(k),
                          results.back().stats.wall_seconds);
            err << buf << std::flush;
        }
    }
    return results;
}

constexpr uint64_t kMaxClusterGpus = uint64_t(1) << 31;    // 2,147,483,648
constexpr uint64_t kMaxClusterCells = uint64_t(1) << 28;   // 268M: a table of that many entries is GiBs

// The replay counts a partition's GPUs in 32 bits and keeps a partition x
// node table: a cluster past either bound is refused by name, not wrapped
// or left to run out of memory.
void check_cluster_size(const SimCluster &cluster, const std::string &source) {
    const uint64_t gpus = total_gpus(cluster);
    if (gpus > kMaxClusterGpus)
        throw InputError(source + ": its nodes hold " + std::to_string(gpus) + " GPUs; the replay takes at most " +
                         std::to_string(kMaxClusterGpus));
    const uint64_t cells = uint64_t(cluster.nodes.size()) * std::max<size_t>(1, cluster.partitions.size());
    if (cells > kMaxClusterCells)
        throw InputError(source + ": " + std::to_string(cluster.nodes.size()) + " nodes x " +
                         std::to_string(cluster.partitions.size()) + " partitions; the replay takes at most " +
                         std::to_string(kMaxClusterCells) + " (nodes times partitions)");
}

// Reads the inputs, replays them under each policy, writes the reports.
int run_with(const SimArgs &args, std::ostream &out, std::ostream &err) {
    const auto &[SIM_ARGS_BINDING] = args;
    try {
        const std::vector<PolicyKind> kinds = parse_policies(policy_list);
        SimCluster cluster;
        Workload workload;
        RunInfo info;
        std::vector<std::string> cluster_notes;
        if (!cluster_path.empty()) {
            cluster = read_slurm_conf(cluster_path, &cluster_notes);
            info.cluster_source = "slurm.conf " + cluster_path;
        } else if (!nodes.empty()) {
            cluster = make_cluster(nodes, pools);
            info.cluster_source = "--nodes=" + nodes + " --pools=" + pools;
        }
        check_cluster_size(cluster, info.cluster_source);
        AlibabaOptions ao;
        ao.pools = static_cast<uint32_t>(ali_pools);
        ao.seed = static_cast<uint64_t>(seed);
        std::string conf_text;
        if (!alibaba.empty()) {
            Scenario sc = read_alibaba(alibaba, ao);
            workload = std::move(sc.workload);
            if (cluster.nodes.empty()) {
                cluster = std::move(sc.cluster);
                info.cluster_source = "the trace's node list, " + std::to_string(ao.pools) + " pools";
                check_cluster_size(cluster, info.cluster_source);
            }
            if (conf.empty()) conf_text = alibaba_gpupool_conf(cluster, ao);
            info.workload_source = "alibaba " + alibaba + " (seed " + std::to_string(ao.seed) + ")";
        } else if (!sacct.empty()) {
            workload = read_sacct(sacct);
            info.workload_source = "sacct " + sacct;
        } else {
            workload = generated_workload(generate, cluster);
            info.workload_source = "generated (" + (generate[0] == '@' ? generate.substr(1) : generate) + ")";
        }
        for (const std::string &n : cluster_notes) workload.notes.push_back("cluster: " + n);
        if (!accounts.empty()) {
            cluster.account_parent = read_account_tree(accounts);
            info.cluster_source += ", accounts " + accounts;
        } else {
            cluster.account_parent = workload.account_parent;
        }
        Config config;
        if (!conf.empty()) {
            // Account= records replay here, so a site can try them before a live
            // cluster takes them.
            config = load_config_file(conf, nullptr);
            info.config_source = conf;
        } else {
            config = parse_config(conf_text, "alibaba.conf");
            info.config_source = "the trace's mapping (" + std::to_string(ao.pools) + " pools)";
        }
        Config quotas;
        if (!account_conf.empty()) quotas = load_config_file(account_conf, nullptr);
        info.options = ro;

        ReplayOptions o = ro;
        o.start_log = !start_log.empty();
        if (!account_conf.empty()) o.account_quotas = &quotas;
        const std::vector<ReplayResult> results = replay_each(kinds, cluster, workload, config, o, progress, err);
        if (!jobs_csv.empty())
            write_file(jobs_csv, [&](std::ostream &f) { write_jobs_csv(f, cluster, workload, config, results); });
        if (!pools_csv.empty()) write_file(pools_csv, [&](std::ostream &f) { write_pools_csv(f, config, results); });
        if (!start_log.empty())
            write_file(start_log, [&](std::ostream &f) { write_start_log(f, cluster, workload, results); });
        if (json)
            write_json(out, cluster, workload, config, info, results);
        else
            write_text(out, cluster, workload, config, info, results);
    } catch (const std::exception &e) {  // InputError, ConfigError and the rest alike
        err << "gpupool sim: " << e.what() << "\n";
        return 1;
    }
    return 0;
}

}  // namespace

int run_sim_command(int argc, char **argv, std::ostream &out, std::ostream &err) {
    SimArgs args;
    auto &[SIM_ARGS_BINDING] = args;
    std::string msg;
    optind = 0;  // a fresh getopt scan (main may have run one)
    int c;
    while ((c = getopt_long(argc, argv, "h", kLongopts, nullptr)) != -1) {
        switch (c) {
        case OPT_CLUSTER: cluster_path = optarg; break;
        case OPT_NODES: nodes = optarg; break;
        case OPT_POOLS: pools = optarg; break;
        case OPT_ACCOUNTS: accounts = optarg; break;
        case OPT_SACCT: sacct = optarg; break;
        case OPT_ALIBABA: alibaba = optarg; break;
        case OPT_GENERATE: generate = optarg; break;
        case OPT_ALI_POOLS:
            if (!parse_number_opt("alibaba-pools", optarg, 1, 1000, &ali_pools, &msg)) return usage_error(err, msg);
            break;
        case OPT_SEED:
            if (!parse_number_opt("seed", optarg, 0, INT64_MAX, &seed, &msg)) return usage_error(err, msg);
            break;
        case OPT_CONF: conf = optarg; break;
        case OPT_ACCOUNT_CONF: account_conf = optarg; break;
        case OPT_POLICY: policy_list = optarg; break;
        case OPT_CRED:
            if (!parse_number_opt("cred-expire", optarg, 0, 86400, &ro.cred_expire, &msg)) return usage_error(err, msg);
            break;
        case OPT_PASS:
            if (!parse_number_opt("pass-interval", optarg, 1, 86400, &ro.pass_interval, &msg))
                return usage_error(err, msg);
            break;
        case OPT_SCHED:
            if (!parse_number_opt("sched-interval", optarg, 0, 86400, &ro.sched_interval, &msg))
                return usage_error(err, msg);
            break;
        case OPT_KILL_DELAY: {
            // S, or MIN-MAX: each victim's kill drawn evenly from the range.
            const std::string v = optarg;
            const size_t dash = v.find('-');
            if (dash == std::string::npos || dash == 0) {
                if (!parse_number_opt("kill-delay", optarg, 0, 3600, &ro.kill_delay, &msg)) return usage_error(err, msg);
                ro.kill_delay_max = ro.kill_delay;
                break;
            }
            const std::string lo = v.substr(0, dash), hi = v.substr(dash + 1);
            if (!parse_number_opt("kill-delay", lo.c_str(), 1, 3600, &ro.kill_delay, &msg) ||
                !parse_number_opt("kill-delay", hi.c_str(), 1, 3600, &ro.kill_delay_max, &msg))
                return usage_error(err, msg + " (a range is MIN-MAX, MIN at least 1)");
            if (ro.kill_delay_max < ro.kill_delay)
                return usage_error(err, "--kill-delay=" + v + ": the range's MAX is below its MIN");
            break;
        }
        case OPT_KILL_DELAYS:
            if (!read_numbers_opt("kill-delays", optarg, 1, 3600, &ro.kill_delays, &msg)) return usage_error(err, msg);
            break;
        case OPT_BF_TIMES:
            if (!read_numbers_opt("backfill-times", optarg, 0, INT64_MAX, &ro.backfill_times, &msg))
                return usage_error(err, msg);
            break;
        case OPT_KILL_SEED: {
            int64_t v = 0;
            if (!parse_number_opt("kill-seed", optarg, 0, INT64_MAX, &v, &msg)) return usage_error(err, msg);
            ro.kill_seed = static_cast<uint64_t>(v);
            break;
        }
        case OPT_PLACEMENT: {
            const std::string v = optarg;
            using P = ReplayOptions::Placement;
            if (v == "conf") ro.placement = P::Conf;
            else if (v == "first") ro.placement = P::First;
            else if (v == "pack") ro.placement = P::Pack;
            else if (v == "spread") ro.placement = P::Spread;
            else if (v == "bestfit") ro.placement = P::BestFit;
            else return usage_error(err, "--placement: expected conf, first, pack, spread or bestfit, not '" + v + "'");
            break;
        }
        case OPT_BACKFILL:
            if (!parse_number_opt("backfill-interval", optarg, 0, 3600, &ro.backfill_interval, &msg))
                return usage_error(err, msg);
            break;
        case OPT_BF_PREEMPTIONS: {
            int64_t v = 0;
            if (!parse_number_opt("backfill-preemptions", optarg, 0, 1000000, &v, &msg)) return usage_error(err, msg);
            ro.backfill_preemptions = static_cast<uint32_t>(v);
            break;
        }
        case OPT_BF_SPACING:
            if (!parse_number_opt("backfill-spacing", optarg, 0, 3600000, &ro.backfill_spacing_milli, &msg))
                return usage_error(err, msg);
            break;
        case OPT_GUARD:
            if (!parse_number_opt("preempt-guard", optarg, 0, 86400, &ro.preempt_guard, &msg))
                return usage_error(err, msg);
            break;
        case OPT_MAX_REQUEUES: {
            int64_t v = 0;
            if (!parse_number_opt("max-requeues", optarg, 1, 1000000, &v, &msg)) return usage_error(err, msg);
            ro.max_requeues = static_cast<uint32_t>(v);
            break;
        }
        case OPT_ORDER_TOL:
            if (!parse_number_opt("order-tolerance", optarg, 0, 86400, &ro.order_tolerance, &msg))
                return usage_error(err, msg);
            break;
        case OPT_JSON: json = true; break;
        case OPT_JOBS_CSV: jobs_csv = optarg; break;
        case OPT_POOLS_CSV: pools_csv = optarg; break;
        case OPT_SAMPLE:
            if (!parse_number_opt("sample-interval", optarg, 1, 365 * 86400LL, &ro.sample_interval, &msg))
                return usage_error(err, msg);
            break;
        case OPT_START_LOG: start_log = optarg; break;
        case OPT_PROGRESS: progress = 1; break;
        case OPT_NO_PROGRESS: progress = 0; break;
        case 'h': out << kSimUsage; return 0;
        default: err << kSimUsage; return 2;
        }
    }
    if (optind < argc) return usage_error(err, std::string("unexpected argument '") + argv[optind] + "'");
    const int workloads = !sacct.empty() + !alibaba.empty() + !generate.empty();
    if (workloads != 1) return usage_error(err, "give one workload: --sacct=FILE, --alibaba=DIR or --generate=SPEC");
    // Slurm's timing needs a walk at every event (its main scheduler's).
    if (ro.sched_interval > 0 && (ro.kill_delay > 0 || ro.backfill_interval > 0))
        return usage_error(err, "--sched-interval batches walks; --kill-delay and --backfill-interval model Slurm's "
                                "scheduler, which runs at every event: use one or the other");
    if (!ro.backfill_times.empty() && ro.backfill_interval == 0)
        return usage_error(err, "--backfill-times times backfill's cycles: give --backfill-interval too (the cycles "
                                "after the list's end)");
    if (ro.backfill_spacing_milli > 0 && (ro.kill_delay == 0 || ro.backfill_interval == 0))
        return usage_error(err, "--backfill-spacing spreads a backfill cycle's preemptions: give --backfill-interval "
                                "and --kill-delay too");
    if (!ro.kill_delays.empty() && ro.kill_delay == 0)
        return usage_error(err, "--kill-delays times kills: give --kill-delay too (the kills past the list's end)");
    if (!cluster_path.empty() && (!nodes.empty() || !pools.empty()))
        return usage_error(err, "--cluster and --nodes/--pools are two ways to give the cluster: use one");
    if (nodes.empty() != pools.empty()) return usage_error(err, "--nodes and --pools go together");
    if (cluster_path.empty() && nodes.empty() && alibaba.empty())
        return usage_error(err, "give the cluster: --cluster=SLURM_CONF or --nodes=... --pools=...");
    if (conf.empty() && alibaba.empty()) return usage_error(err, "give the policy's gpupool.conf: --conf=FILE");

    return run_with(args, out, err);
}

}  // namespace gpupool::sim
