// gpupool.conf parser (R9 of doc/policy.md); its values' text forms
// (names, durations, digits) are config_values.cpp's.
//
// Format: Slurm's Key=Value style.  Whitespace separates tokens, '#' starts
// a comment to the end of the line, blank lines are ignored, keys are
// case-insensitive, values are case-sensitive except enum words.  A line
// whose first token is Tier=NAME, Pool=NAME or Account=NAME is a record;
// every other line holds global keys.  The account queues' settings
// (Account=, ReclaimTo=, QuotaTRES lists, TRES quotas) are
// config_accounts.cpp's, so this file stays with the flat ones.  Every problem is a ConfigError "SOURCE:LINE: problem"
// (or "SOURCE: problem" for problems about the whole file).
#include "config.hpp"
#include "config_parser.hpp"

#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>

namespace gpupool {

const ConfigKeys &config_keys() {
    static const ConfigKeys keys{
        {"QuotaTRES", "PreemptionOrder", "ReclaimBy", "ReclaimTo", "DecayHalfLife", "UsageWindow",
         "UsageWeight", "MinRuntime", "RecalcInterval", "StateSaveInterval", "PreemptiblePriority", "DefaultTier",
         "Consolidation", "ConsolidationTries", "Swap"},
        {"QOS", "Priority", "Preemptible", "PreemptMode", "GraceTime"},
        {"Quota", "Weight", "Rank", "MinRuntime", "DecayHalfLife", "UsageWindow", "UsageWeight", "Placement"},
        {"Pool", "Quota", "Weight", "Rank", "Limit", "LendingLimit"},
    };
    return keys;
}

const Tier *Config::find_tier(const std::string &name) const {
    for (const Tier &t : tiers)
        if (t.name == name) return &t;
    return nullptr;
}

const Pool *Config::find_pool(const std::string &name) const {
    for (const Pool &p : pools)
        if (p.name == name) return &p;
    return nullptr;
}

namespace detail {

void Parser::global_line(const std::vector<std::string> &words) {
    for (const std::string &w : words) {
        Token t = split(w);
        const std::string &v = t.value;
        if (!is_key(config_keys().global, t.lkey)) {
            if (t.lkey == "tier" || t.lkey == "pool" || t.lkey == "account")
                fail(t.key + "= must be the first token on its line");
            fail("unknown key " + quote(t.key));
        }
        auto seen = global_seen_.find(t.lkey);
        if (seen != global_seen_.end())
            fail("duplicate key " + quote(t.key) + " (first set on line " +
                 std::to_string(seen->second) + ")");
        global_seen_[t.lkey] = line_;

        if (t.lkey == "quotatres") {
            quota_tres(v);
        } else if (t.lkey == "reclaimto") {
            reclaim_to(v);
        } else if (t.lkey == "preemptionorder") {
            std::string e = get_enum("PreemptionOrder", v, {"newest", "oldest"},
                                     "newest or oldest");
            cfg_.preemption_order =
                e == "newest" ? PreemptionOrder::Newest : PreemptionOrder::Oldest;
        } else if (t.lkey == "reclaimby") {
            std::string e = get_enum("ReclaimBy", v, {"nonpreemptible", "all"},
                                     "nonpreemptible or all");
            cfg_.reclaim_by = e == "all" ? ReclaimBy::All : ReclaimBy::NonPreemptible;
        } else if (t.lkey == "decayhalflife") {
            cfg_.decay_half_life = get_duration("DecayHalfLife", v, true);
        } else if (t.lkey == "usagewindow") {
            cfg_.usage_window = get_duration("UsageWindow", v, true);
        } else if (t.lkey == "usageweight") {
            cfg_.usage_weight = get_decimal("UsageWeight", v);
        } else if (t.lkey == "minruntime") {
            cfg_.min_runtime = get_duration("MinRuntime", v, false);
        } else if (t.lkey == "recalcinterval") {
            uint64_t out = 0;
            if (!parse_digits(v, 3600, out) || out < 1)
                fail("bad value " + quote(v) + " for RecalcInterval: expected an integer 1..3600");
            cfg_.recalc_interval = static_cast<int64_t>(out);
        } else if (t.lkey == "statesaveinterval") {
            uint64_t out = 0;
            if (!parse_digits(v, 86400, out) || out < 1)
                fail("bad value " + quote(v) + " for StateSaveInterval: expected an integer 1..86400");
            cfg_.state_save_interval = static_cast<int64_t>(out);
        } else if (t.lkey == "preemptiblepriority") {
            cfg_.preemptible_priority = get_u32("PreemptiblePriority", v);
            cfg_.has_preemptible_priority = true;
        } else if (t.lkey == "consolidation") {
            std::string e = get_enum("Consolidation", v, {"yes", "no", "true", "false", "1", "0"},
                                     "yes, no, true, false, 1 or 0");
            cfg_.consolidation = e == "yes" || e == "true" || e == "1";
        } else if (t.lkey == "consolidationtries") {
            uint64_t out = 0;
            if (!parse_digits(v, 100000, out) || out < 1)
                fail("bad value " + quote(v) + " for ConsolidationTries: expected an integer 1..100000");
            cfg_.consolidation_tries = static_cast<uint32_t>(out);
        } else if (t.lkey == "swap") {
            std::string e = get_enum("Swap", v, {"needed", "least-work"}, "needed or least-work");
            cfg_.swap = e == "least-work" ? SwapWhen::LeastWork : SwapWhen::Needed;
        } else if (t.lkey == "defaulttier") {
            check_name("DefaultTier", v);
            cfg_.default_tier = v;
            default_tier_line_ = line_;
        }
    }
}

// No QOS in two tiers, no two tiers with one priority: R1 orders by the
// tier a job's QOS maps to, so either would make that order ambiguous.
void Parser::check_tier_unique(const Tier &tier) {
    for (const std::string &q : tier.qos) {
        auto it = qos_owner_.find(q);
        if (it != qos_owner_.end()) {
            const Tier &other = cfg_.tiers[static_cast<size_t>(it->second)];
            fail("QOS " + quote(q) + " is mapped by both Tier=" + clip(other.name) + " (line " +
                 std::to_string(other.line) + ") and Tier=" + clip(tier.name));
        }
    }
    auto same = tier_priority_.find(tier.priority);
    if (same != tier_priority_.end()) {
        const Tier &other = cfg_.tiers[same->second];
        fail("Tier=" + clip(tier.name) + " and Tier=" + clip(other.name) + " (line " +
             std::to_string(other.line) + ") have the same Priority=" +
             std::to_string(tier.priority));
    }
}

// GraceTime's value in seconds (digits or a duration); -1 for
// "infinite"/"unlimited", anything unreadable and anything past int32.
static int64_t grace_seconds(const std::string &v) {
    int64_t secs = -1;
    if (all_digits(v)) {
        uint64_t out = 0;
        if (parse_digits(v, std::numeric_limits<int32_t>::max(), out)) secs = static_cast<int64_t>(out);
    } else {
        std::string l = lower(v);
        if (l != "infinite" && l != "unlimited") secs = parse_duration(v);
    }
    return secs > std::numeric_limits<int32_t>::max() ? -1 : secs;
}

void Parser::tier_line(const std::vector<std::string> &words) {
    Tier tier = record_head("Tier", words[0], tier_index_, cfg_.tiers);
    const std::string where = " in Tier=" + clip(tier.name);
    std::unordered_set<std::string> tier_qos;

    std::map<std::string, bool> seen;
    bool has_qos = false, has_priority = false, has_preemptible = false;
    for (size_t i = 1; i < words.size(); ++i) {
        Token t = record_key(words[i], config_keys().tier, where, seen);
        const std::string &v = t.value;
        if (t.lkey == "qos") {
            has_qos = true;
            if (v.size() > kMaxQosListBytes)
                fail("QOS= list of " + std::to_string(v.size()) + " bytes" + where + " is longer than " +
                     std::to_string(kMaxQosListBytes) + " bytes: map fewer QOS to one tier");
            size_t start = 0;
            while (true) {
                size_t comma = v.find(',', start);
                std::string q = v.substr(start, comma == std::string::npos
                                                    ? std::string::npos
                                                    : comma - start);
                if (q.empty()) fail("empty QOS name in " + quote(v) + where);
                check_name("QOS", q);
                // tier_of_qos matches exactly, and Slurm keeps QOS names in
                // lower case: a capital would leave the tier's jobs in DefaultTier.
                if (has_upper(q))
                    fail("bad name " + quote(q) + " for QOS" + where +
                         ": Slurm QOS names are lower case, so no job's QOS would match it; write " +
                         quote(lower(q)));
                if (!tier_qos.insert(q).second) fail("QOS " + quote(q) + " listed twice" + where);
                tier.qos.push_back(q);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else if (t.lkey == "priority") {
            tier.priority = get_u32("Priority", v);
            has_priority = true;
        } else if (t.lkey == "preemptible") {
            std::string e = get_enum("Preemptible", v,
                                     {"yes", "no", "true", "false", "1", "0"},
                                     "yes, no, true, false, 1 or 0");
            tier.preemptible = e == "yes" || e == "true" || e == "1";
            has_preemptible = true;
        } else if (t.lkey == "preemptmode") {
            // Slurm keeps a suspended job's GRES allocated, so suspending a
            // victim frees none of the GPUs a quota counts: refuse it rather
            // than let reclaim silently never happen.
            if (lower(v) == "suspend")
                fail("PreemptMode=suspend" + where +
                     ": Slurm keeps a suspended job's GPUs allocated, so suspending it frees "
                     "nothing for the job that preempts; use requeue or cancel (jobs that "
                     "checkpoint: GraceTime= with SlurmctldParameters=preempt_send_user_signal, then "
                     "requeue)");
            std::string e = get_enum("PreemptMode", v, {"requeue", "cancel"}, "requeue or cancel");
            tier.preempt_mode = e == "requeue" ? PreemptMode::Requeue : PreemptMode::Cancel;
        } else if (t.lkey == "gracetime") {
            const int64_t secs = grace_seconds(v);
            if (secs < 0)
                fail("bad value " + quote(v) + " for GraceTime: expected seconds or a duration "
                     "(MM:SS, HH:MM:SS, D-HH[:MM[:SS]])");
            tier.grace_time = static_cast<int32_t>(secs);
        } else {
            fail("unknown key " + quote(t.key) + where);
        }
    }
    if (!has_priority) fail("missing required key 'Priority'" + where);
    if (!has_qos) {
        // The tier's name is its QOS: a capital would match no job's QOS.
        // Tier names themselves may have capitals when QOS= is given.
        if (has_upper(tier.name))
            fail("Tier=" + clip(tier.name) + " has no QOS=, so its QOS is its name, but Slurm QOS names are lower "
                 "case, so no job's QOS would match it; give QOS=" + clip(lower(tier.name)) +
                 " or rename the tier " + quote(lower(tier.name)));
        tier.qos.push_back(tier.name);
    }
    check_tier_unique(tier);
    for (const std::string &q : tier.qos)
        qos_owner_[q] = static_cast<int>(cfg_.tiers.size());
    tier_index_.emplace(tier.name, cfg_.tiers.size());
    tier_priority_.emplace(tier.priority, cfg_.tiers.size());
    cfg_.tiers.push_back(tier);
    tier_has_preemptible_.push_back(has_preemptible);
}

void Parser::pool_line(const std::vector<std::string> &words) {
    Pool pool = record_head("Pool", words[0], pool_index_, cfg_.pools);
    const std::string where = " in Pool=" + clip(pool.name);

    std::map<std::string, bool> seen;
    bool has_quota = false;
    std::string quota_text;
    for (size_t i = 1; i < words.size(); ++i) {
        // Run:ai's strategy for CPU-only jobs: refused, with what to do instead.
        if (split(words[i]).lkey == "cpuplacement")
            fail("CpuPlacement= is not supported" + where +
                 ": Slurm orders a partition's nodes by one Weight (then LLN=YES) for all its jobs, so CPU-only "
                 "jobs follow Placement=; to place them otherwise give them a partition of their own over these "
                 "nodes (LLN=YES spreads them, MaxCPUsPerNode keeps CPUs for GPU jobs)");
        Token t = record_key(words[i], config_keys().pool, where, seen);
        const std::string &v = t.value;
        if (t.lkey == "quota") {
            // A number is GPUs, as always; TRES syntax waits for QuotaTRES.
            if (v.find('=') == std::string::npos) {
                pool.quota = get_u32("Quota", v);
                pool.quota_by_resource.set(kGpu, pool.quota);
            } else {
                quota_text = v;
            }
            has_quota = true;
        } else if (t.lkey == "weight") {
            pool.weight = get_u32("Weight", v);
        } else if (t.lkey == "rank") {
            pool.rank = get_u32("Rank", v);
        } else if (t.lkey == "minruntime") {
            pool.min_runtime = get_duration("MinRuntime", v, false);
        } else if (t.lkey == "decayhalflife") {
            pool.decay_half_life = get_duration("DecayHalfLife", v, true);
        } else if (t.lkey == "usagewindow") {
            pool.usage_window = get_duration("UsageWindow", v, true);
        } else if (t.lkey == "usageweight") {
            pool.usage_weight = get_decimal("UsageWeight", v);
        } else if (t.lkey == "placement") {
            const std::string e = get_enum("Placement", v, {"slurm", "pack", "spread"}, "slurm, pack or spread");
            pool.placement = e == "pack" ? Placement::Pack : e == "spread" ? Placement::Spread : Placement::Default;
        } else {
            fail("unknown key " + quote(t.key) + where);
        }
    }
    if (!has_quota) fail("missing required key 'Quota'" + where);
    pool_index_.emplace(pool.name, cfg_.pools.size());
    cfg_.pools.push_back(pool);
    pool_quota_text_.push_back(quota_text);
}

void Parser::finish() {
    if (cfg_.tiers.empty()) fail_file("no Tier defined");
    for (size_t i = 0; i < cfg_.tiers.size(); ++i) {
        Tier &t = cfg_.tiers[i];
        if (cfg_.has_preemptible_priority) {
            if (tier_has_preemptible_[i])
                fail_at(t.line, "Tier=" + clip(t.name) +
                                    " sets Preemptible= but PreemptiblePriority= is also set "
                                    "(line " + std::to_string(global_seen_["preemptiblepriority"]) +
                                    "): use one or the other");
            t.preemptible = t.priority <= cfg_.preemptible_priority;
        } else if (!tier_has_preemptible_[i]) {
            fail_at(t.line, "missing Preemptible= in Tier=" + clip(t.name) +
                                " (required unless PreemptiblePriority= is set)");
        }
    }
    if (!cfg_.default_tier.empty()) {
        if (!tier_index_.count(cfg_.default_tier))
            fail_at(default_tier_line_,
                    "DefaultTier=" + clip(cfg_.default_tier) + " names no defined Tier");
    } else if (cfg_.tiers.size() == 1) {
        cfg_.default_tier = cfg_.tiers[0].name;
    } else {
        fail_file("DefaultTier= is required when more than one Tier is defined");
    }
    // least-work weighs the work a set throws away, which `oldest` does not count.
    if (cfg_.swap == SwapWhen::LeastWork && cfg_.preemption_order == PreemptionOrder::Oldest)
        fail_at(global_seen_["swap"], "Swap=least-work needs PreemptionOrder=newest (line " +
                                          std::to_string(global_seen_["preemptionorder"]) +
                                          " sets oldest, which counts no work lost)");
    finish_pool_quotas();
    finish_accounts();
    warn_without_effect();
}

// Settings that change nothing with the rest of the file: warned, not
// refused (a site may keep them for a later change).
void Parser::warn_without_effect() {
    auto seen = [&](const char *key) {
        auto it = global_seen_.find(key);
        return it != global_seen_.end() ? it->second : 0;
    };
    if (seen("reclaimby") && cfg_.reclaim_to == ReclaimTo::Fairshare)
        warn_at(seen("reclaimby"), "ReclaimBy= has no effect with ReclaimTo=fairshare (line " +
                                       std::to_string(seen("reclaimto")) +
                                       "): there any job of a queue below its fairshare reclaims");
    if (seen("swap") && cfg_.swap == SwapWhen::LeastWork) {
        if (cfg_.reclaim_to == ReclaimTo::Fairshare)
            warn_at(seen("swap"), "Swap=least-work has no effect with ReclaimTo=fairshare (line " +
                                      std::to_string(seen("reclaimto")) +
                                      "): a swap weighs pools that reclaim to their quota");
        else if (!cfg_.pools.empty() &&
                 std::all_of(cfg_.pools.begin(), cfg_.pools.end(), [&](const Pool &p) {
                     return std::any_of(cfg_.accounts.begin(), cfg_.accounts.end(),
                                        [&](const AccountQuota &a) { return a.pool == p.name || a.pool == "*"; });
                 }))
            warn_at(seen("swap"), "Swap=least-work has no effect: every pool has Account= records, "
                                  "and a swap weighs pools without them");
    }
    for (const Tier &t : cfg_.tiers)
        if (!t.preemptible && (t.preempt_mode != PreemptMode::Default || t.grace_time >= 0))
            warn_at(t.line, "PreemptMode= and GraceTime= in Tier=" + clip(t.name) +
                                " have no effect: its jobs are not preemptible");
}

Config Parser::run(const std::string &text) {
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        std::string raw = text.substr(pos, nl == std::string::npos ? std::string::npos
                                                                   : nl - pos);
        ++line_;
        if (raw.size() > kMaxConfigLineBytes)
            fail("line longer than " + std::to_string(kMaxConfigLineBytes) + " bytes");
        size_t hash = raw.find('#');
        if (hash != std::string::npos) raw.erase(hash);
        std::vector<std::string> words;
        std::string cur;
        for (char c : raw) {
            if (std::isspace(static_cast<unsigned char>(c))) {
                if (!cur.empty()) words.push_back(cur);
                cur.clear();
            } else {
                cur += c;
            }
        }
        if (!cur.empty()) words.push_back(cur);
        if (!words.empty()) {
            size_t eq = words[0].find('=');
            std::string first = lower(words[0].substr(0, eq == std::string::npos ? 0 : eq));
            if (first == "tier")
                tier_line(words);
            else if (first == "pool")
                pool_line(words);
            else if (first == "account")
                account_line(words);
            else
                global_line(words);
        }
        if (nl == std::string::npos) break;
        pos = nl + 1;
    }
    finish();
    return cfg_;
}

}  // namespace detail

Config parse_config(const std::string &text, const std::string &source) {
    if (text.size() > kMaxConfigBytes)
        throw ConfigError(source + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes");
    detail::Parser p(source);
    return p.run(text);
}

Config load_config_file(const std::string &path, std::string *text_out) {
    // O_NONBLOCK: a FIFO must not block the open; it is refused below.
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) throw ConfigError(path + ": cannot read: " + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    return load_config_fd(fd, path, text_out);
}

Config load_config_fd(int fd, const std::string &path, std::string *text_out) {
    auto cannot_read = [&](int err) { return ConfigError(path + ": cannot read: " + std::strerror(err)); };
    struct stat st;
    if (::fstat(fd, &st) != 0) throw cannot_read(errno);
    if (S_ISDIR(st.st_mode)) throw cannot_read(EISDIR);
    // A device or FIFO (/dev/zero) would never end or block.
    if (!S_ISREG(st.st_mode)) throw ConfigError(path + ": not a regular file");
    const std::string too_large = path + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes";
    if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) throw ConfigError(too_large);
    // Read one byte past the limit: the file may grow while we read.
    std::string text;
    char buf[8192];
    while (true) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw cannot_read(errno);
        }
        if (n == 0) break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > kMaxConfigBytes) throw ConfigError(too_large);
    }
    Config cfg = parse_config(text, path);
    if (text_out) *text_out = std::move(text);
    return cfg;
}

}  // namespace gpupool
