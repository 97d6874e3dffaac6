// gpupool.conf: the parsed configuration (R9) and its parser.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "resources.hpp"
#include "usage.hpp"

namespace gpupool {

enum class PreemptionOrder { Newest, Oldest };
enum class ReclaimBy { NonPreemptible, All };
enum class PreemptMode { Default, Requeue, Cancel, Suspend };

// How far a queue reclaims from others.  Quota: back to its
// quota (today's R5, OSMO); Fairshare: up to its fairshare (Run:ai, KAI).
enum class ReclaimTo { Quota, Fairshare };
// Swap= (policy.md R5 "A swap"): when an admitted NP job may take another
// pool's in-quota preemptible jobs: only where nothing else frees a node
// (Needed), or wherever that set loses the least work (LeastWork).
enum class SwapWhen { Needed, LeastWork };

// Placement= (Run:ai's placement strategy for GPU jobs, placement.hpp):
// Pack fills the nodes with the fewest free GPUs first, Spread the ones
// with the most; Default (Placement=slurm) leaves Slurm's own order (first
// fit, or least loaded where the partition has LLN=YES).
enum class Placement { Default, Pack, Spread };

struct Tier {
    std::string name;
    std::vector<std::string> qos;  // QOS names mapped to this tier (default: {name})
    uint32_t priority = 0;
    bool preemptible = false;
    PreemptMode preempt_mode = PreemptMode::Default;
    int32_t grace_time = -1;       // seconds; -1 = the QOS's
    int line = 0;                  // where it was defined, for messages
};

struct Pool {
    std::string name;              // the Slurm partition
    uint32_t quota = 0;            // GPUs guaranteed to NP jobs
    // Quota= per counted resource: the GPUs always (== quota),
    // cpu and mem where Quota= names them in TRES syntax.
    ResourceAmounts quota_by_resource;
    uint32_t weight = 1;           // over-quota weight (R8)
    uint32_t rank = 0;             // higher: quota and over-quota first, served first (R8, R1.2)
    int64_t min_runtime = -1;      // seconds; -1 = global MinRuntime
    // Time-based fairshare of this pool (its usage history, its queues'
    // division, its term among the pools sharing its nodes); -1: the
    // global DecayHalfLife, UsageWindow, UsageWeight.
    int64_t decay_half_life = -1, usage_window = -1;
    double usage_weight = -1;
    Placement placement = Placement::Default;
    int line = 0;
};

// Account=NAME Pool=POOL|* ...: a queue for a Slurm account in a
// node pool.  The tree of accounts is Slurm's (sacctmgr), not this file's.
struct AccountQuota {
    std::string account;            // the Slurm account
    std::string pool;               // a Pool= name, or "*": every pool (an entry naming
                                    // the pool wins over the "*" one there)
    ResourceAmounts quota;          // guaranteed, per counted resource
    uint32_t weight = 1;            // over-quota weight (accounts without children)
    bool weight_given = false;
    uint32_t rank = 0;              // among its siblings, as a pool's Rank
    ResourceAmounts limit;          // the most it may hold, borrowed included
    ResourceAmounts lending_limit;  // the most of its quota it lends
    int line = 0;
};

struct Config {
    std::string source;                     // file name for messages
    std::string quota_tres = "gres/gpu";
    PreemptionOrder preemption_order = PreemptionOrder::Newest;
    ReclaimBy reclaim_by = ReclaimBy::NonPreemptible;
    int64_t decay_half_life = 7 * 86400;    // seconds; 0 = no decay
    int64_t usage_window = 7 * 86400;       // seconds; 0 = unlimited
    double usage_weight = 1.0;              // K; 0 = point-in-time only
    int64_t min_runtime = 0;                // seconds, global default
    int64_t recalc_interval = 10;           // seconds between periodic passes
    int64_t state_save_interval = 60;       // seconds between state file saves
    bool has_preemptible_priority = false;
    uint32_t preemptible_priority = 0;      // tiers with priority <= this are P
    std::string default_tier;               // name of a tier
    std::vector<Tier> tiers;                // in file order
    std::vector<Pool> pools;                // in file order (fairshare ties)
    // The resources quotas count (QuotaTRES's list: the GPU TRES
    // first, then cpu and mem where listed), account queues, reclaim reach.
    std::array<bool, kResources> counted{{true, false, false}};
    std::vector<AccountQuota> accounts;     // in file order
    ReclaimTo reclaim_to = ReclaimTo::Quota;
    // Run:ai's consolidation: a non-preemptible job within its quota that
    // fits on no node although enough GPUs are free across nodes, and for
    // which R4 and R5 free no node, moves preemptible jobs that can start
    // again elsewhere (victim_plan.cpp); at most `consolidation_tries`
    // nodes are weighed per victim plan.
    bool consolidation = true;
    uint32_t consolidation_tries = 64;
    SwapWhen swap = SwapWhen::Needed;
    // Settings the file gives that change nothing with the rest of it, each
    // "FILE:LINE: why" (the file loads; slurmctld's log and `gpupool check`
    // show them).
    std::vector<std::string> warnings;

    // Linear: for lookups once per load; the parser and the engine keep
    // their own indexes for lookups per record or per job.
    const Tier *find_tier(const std::string &name) const;
    const Pool *find_pool(const std::string &name) const;
    // A pool's MinRuntime: its own, else the global one.
    int64_t min_runtime_of(const Pool &pool) const { return pool.min_runtime >= 0 ? pool.min_runtime : min_runtime; }
    // A pool's time-based fairshare settings: its own where set, else the global ones.
    DecayParams decay_of(const Pool &pool) const {
        return DecayParams{pool.decay_half_life >= 0 ? pool.decay_half_life : decay_half_life,
                           pool.usage_window >= 0 ? pool.usage_window : usage_window};
    }
    // Some pool or account has a Rank (status and why show ranks then).
    bool ranked() const {
        for (const Pool &p : pools)
            if (p.rank) return true;
        for (const AccountQuota &a : accounts)
            if (a.rank) return true;
        return false;
    }
    double usage_weight_of(const Pool &pool) const { return pool.usage_weight >= 0 ? pool.usage_weight : usage_weight; }
};

// Whether entry `e` is the one that counts in `pool` for its account, given
// `held`, the entry that counted so far (entries walked in file order): one
// naming the pool wins over the account's Pool=* one, which counts only
// where there is none.
inline bool entry_counts_in(const AccountQuota &e, const std::string &pool, const AccountQuota *held) {
    return e.pool == pool || (e.pool == "*" && !held);
}

// Thrown by the parser: what() is "FILE:LINE: problem" (LINE omitted when
// the problem is about the file as a whole, e.g. a missing DefaultTier).
class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// gpupool.conf may be at most this large, and each of its lines.
constexpr size_t kMaxConfigBytes = 8 << 20;  // 100k pools or tiers take about 4 MiB
constexpr size_t kMaxConfigLineBytes = 4096;

// Tier, QOS and pool names: what Slurm takes for partition and QOS names,
// letters, digits, '_', '-' and '.'.  kNameRule says so in messages.
bool valid_name(const std::string &name);
extern const char kNameRule[];

// The longest name of each kind, in bytes.  slurmdbd keeps QOS, account
// and partition names (a job's partition, an association's) in MySQL
// TINYTEXT columns of 255 bytes: `sacctmgr add qos` with a 256-byte name
// stores its first 255 (Slurm 22.05, MariaDB), so a longer name here could
// never match a job.  A tier's name is its QOS name where QOS= is
// not given.  A GRES type is kept as "gpu:TYPE" in the same 255 bytes.
constexpr size_t kMaxQosNameBytes = 255;
constexpr size_t kMaxAccountNameBytes = 255;
constexpr size_t kMaxPoolNameBytes = 255;      // a partition's name
constexpr size_t kMaxTierNameBytes = kMaxQosNameBytes;
constexpr size_t kMaxGresTypeBytes = 255 - 4;  // QuotaTRES=gres/gpu:TYPE
// QOS= of one tier, the whole list (about 280 names of 10 bytes): with the
// name limits it bounds every line write_config() writes (config_writer.cpp
// checks that they all fit in kMaxConfigLineBytes).
constexpr size_t kMaxQosListBytes = 3072;

// Text from a file for a message: at most 64 bytes of it, bytes other than
// printable ASCII (and \ and ') as \xNN, "... (N bytes)" when cut.
// quote() puts what is shown between single quotes.
std::string clip(const std::string &text);
std::string quote(const std::string &token);

// Every key the parser accepts, spelled as gpupool.conf(5) documents it
// (the parser compares keys in any case): what no list names is an
// "unknown key".  A unit test checks that doc/gpupool.conf.5 documents
// exactly these, section by section.
struct ConfigKeys {
    std::vector<std::string> global;  // on lines that are not records
    std::vector<std::string> tier;    // in a Tier=NAME record
    std::vector<std::string> pool;    // in a Pool=NAME record
    std::vector<std::string> account; // in an Account=NAME record
};
const ConfigKeys &config_keys();

// Parse gpupool.conf text.  `source` names the file in messages.
Config parse_config(const std::string &text, const std::string &source);
// Read and parse a file; a file that cannot be read is a ConfigError too.
// `text`, if given, receives what was parsed.
Config load_config_file(const std::string &path, std::string *text = nullptr);
// The same from an open file (read from its current offset; not closed):
// the trusted-path check reads exactly the file it checked.
Config load_config_fd(int fd, const std::string &path, std::string *text = nullptr);

// gpupool.conf text that parses back to `cfg`: every setting the parser
// reads, in its shortest unambiguous form, one record per line; comments
// and the original spellings are not kept.  Never a line the parser
// refuses: no longer than kMaxConfigLineBytes for any Config the parser
// returns.
std::string write_config(const Config &cfg);

// Slurm time forms: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM",
// "D-HH:MM:SS"; also "0", "INFINITE"/"UNLIMITED" (returns 0).  Returns
// seconds, or -1 when the text is not a duration.
int64_t parse_duration(const std::string &text);

// "1-02:03:04" style, for reports.
std::string format_duration(int64_t seconds);

// The parser's text helpers (config_values.cpp).
namespace conf_text {
std::string lower(const std::string &s);  // ASCII letters
bool all_digits(const std::string &s);     // non-empty, 0-9 only
// Non-negative decimal integer, digits only; false on junk or over `max`.
bool parse_digits(const std::string &s, uint64_t max, uint64_t &out);
}  // namespace conf_text

}  // namespace gpupool
