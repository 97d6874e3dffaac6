// The gpupool.conf parser's state and helpers, shared by config.cpp (the
// file, tiers and pools) and config_accounts.cpp (the account queues' settings).
// Internal: include config.hpp elsewhere.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <locale>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config.hpp"

namespace gpupool {
namespace detail {

constexpr int64_t kMaxDurationSeconds = int64_t(36500) * 86400;

inline constexpr char kDurationForms[] =
    "expected MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, 0 or INFINITE";

using conf_text::all_digits;
using conf_text::lower;
using conf_text::parse_digits;

// `lkey` (lower case) is one of `keys` (as documented), in any case.
inline bool is_key(const std::vector<std::string> &keys, const std::string &lkey) {
    for (const std::string &k : keys)
        if (k.size() == lkey.size() &&
            std::equal(k.begin(), k.end(), lkey.begin(), [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) == b;
            }))
            return true;
    return false;
}

// Slurm lower-cases account and QOS names (sacctmgr, slurmctld): a name
// with a capital would never match a job's.
inline bool has_upper(const std::string &s) {
    return std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

struct Token {
    std::string key;    // as written
    std::string lkey;   // lower-cased
    std::string value;
};

class Parser {
public:
    explicit Parser(const std::string &source) { cfg_.source = source; }

    Config run(const std::string &text);

private:
    Config cfg_;
    int line_ = 0;
    std::map<std::string, int> global_seen_;      // lower key -> line
    std::unordered_map<std::string, int> qos_owner_;       // QOS -> tier index
    std::unordered_map<std::string, size_t> tier_index_;   // name -> index
    std::unordered_map<uint32_t, size_t> tier_priority_;   // Priority -> index
    std::unordered_map<std::string, size_t> pool_index_;   // name -> index
    int default_tier_line_ = 0;
    std::vector<bool> tier_has_preemptible_;
    // The account queues' settings (config_accounts.cpp).  TRES values wait for the end of the
    // file, where QuotaTRES (the GPU TRES, what is counted) is known.
    int quota_tres_line_ = 0;
    std::vector<std::string> pool_quota_text_;   // per pool: Quota= in TRES syntax, "" for a number
    struct AccountText {
        std::string quota, limit, lending_limit;  // "" where not given
    };
    std::vector<AccountText> account_text_;      // per account
    std::map<std::pair<std::string, std::string>, int> account_lines_;  // (account, pool) -> line

    [[noreturn]] void fail(const std::string &msg) const {
        throw ConfigError(cfg_.source + ":" + std::to_string(line_) + ": " + msg);
    }
    void warn_without_effect();
    [[noreturn]] void fail_at(int line, const std::string &msg) const {
        throw ConfigError(cfg_.source + ":" + std::to_string(line) + ": " + msg);
    }
    void warn_at(int line, const std::string &msg) {
        cfg_.warnings.push_back(cfg_.source + ":" + std::to_string(line) + ": " + msg);
    }
    [[noreturn]] void fail_file(const std::string &msg) const {
        throw ConfigError(cfg_.source + ": " + msg);
    }

    Token split(const std::string &word) const {
        size_t eq = word.find('=');
        if (eq == std::string::npos) fail("expected Key=Value, got " + quote(word));
        Token t;
        t.key = word.substr(0, eq);
        t.value = word.substr(eq + 1);
        if (t.key.empty()) fail("missing key in " + quote(word));
        t.lkey = lower(t.key);
        if (t.value.empty()) fail("missing value for " + quote(t.key));
        return t;
    }

    // `what`: Tier, DefaultTier, QOS, Pool or Account (config.hpp's limits).
    void check_name(const std::string &what, const std::string &name) const {
        if (name.empty()) fail("empty name for " + what);
        if (!valid_name(name)) fail("bad name " + quote(name) + " for " + what + ": " + kNameRule);
        const NameLimit limit = name_limit(what);
        if (name.size() > limit.bytes)
            fail(what + " name " + quote(name) + " is longer than " + std::to_string(limit.bytes) + " bytes (" +
                 limit.why + "): use a shorter name");
    }

    struct NameLimit {
        size_t bytes;
        const char *why;
    };
    static NameLimit name_limit(const std::string &what) {
        if (what == "QOS") return {kMaxQosNameBytes, "slurmdbd keeps QOS names of at most 255 bytes"};
        if (what == "Pool") return {kMaxPoolNameBytes, "slurmdbd keeps partition names of at most 255 bytes"};
        if (what == "Account") return {kMaxAccountNameBytes, "slurmdbd keeps account names of at most 255 bytes"};
        return {kMaxTierNameBytes, "a tier's name is its QOS name where QOS= is not given, and slurmdbd keeps "
                                   "QOS names of at most 255 bytes"};
    }

    uint32_t get_u32(const std::string &key, const std::string &v) const {
        uint64_t out = 0;
        if (!parse_digits(v, std::numeric_limits<uint32_t>::max(), out))
            fail("bad value " + quote(v) + " for " + key + ": expected an integer 0..4294967295");
        return static_cast<uint32_t>(out);
    }

    int64_t get_duration(const std::string &key, const std::string &v,
                         bool infinite_ok) const {
        int64_t d = parse_duration(v);
        if (d < 0) fail("bad duration " + quote(v) + " for " + key + ": " + kDurationForms);
        // Usage buckets are 1/64 of these; longer would run past the times
        // the state file keeps (usage.hpp kMaxTime), and means nothing.
        if (d > kMaxDurationSeconds)
            fail("duration " + quote(v) + " for " + key + " is longer than 36500 days (100 years)");
        if (!infinite_ok) {
            std::string l = lower(v);
            if (l == "infinite" || l == "unlimited")
                fail("bad duration " + quote(v) + " for " + key + ": INFINITE is not allowed here");
        }
        return d;
    }

    std::string get_enum(const std::string &key, const std::string &v,
                         const std::vector<std::string> &words,
                         const std::string &listed) const {
        std::string l = lower(v);
        for (const std::string &w : words)
            if (l == w) return l;
        fail("bad value " + quote(v) + " for " + key + ": expected " + listed);
    }

    double get_decimal(const std::string &key, const std::string &v) const {
        // digits [ '.' digits ] or '.' digits; no sign, no exponent.
        size_t i = 0, digits = 0;
        while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) { ++i; ++digits; }
        if (i < v.size() && v[i] == '.') {
            ++i;
            while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) { ++i; ++digits; }
        }
        double d = 0;
        bool ok = digits > 0 && i == v.size();
        if (ok) {
            std::istringstream in(v);
            in.imbue(std::locale::classic());
            ok = static_cast<bool>(in >> d) && std::isfinite(d);
        }
        if (!ok) fail("bad value " + quote(v) + " for " + key + ": expected a decimal number >= 0");
        return d;
    }

    // The head of a Tier=NAME or Pool=NAME record: a record with its name
    // (checked, not defined before) and line.
    template <typename Record>
    Record record_head(const char *kind, const std::string &word,
                       const std::unordered_map<std::string, size_t> &index,
                       const std::vector<Record> &defined) const {
        Record rec;
        rec.name = split(word).value;
        rec.line = line_;
        check_name(kind, rec.name);
        auto prev = index.find(rec.name);
        if (prev != index.end())
            fail(std::string("duplicate ") + kind + "=" + clip(rec.name) + " (first defined on line " +
                 std::to_string(defined[prev->second].line) + ")");
        return rec;
    }

    // A key of a record: one of `keys`, not given before in it (`seen`).
    Token record_key(const std::string &word, const std::vector<std::string> &keys, const std::string &where,
                     std::map<std::string, bool> &seen) const {
        Token t = split(word);
        if (seen[t.lkey]) fail("duplicate key " + quote(t.key) + where);
        seen[t.lkey] = true;
        if (!is_key(keys, t.lkey)) fail("unknown key " + quote(t.key) + where);
        return t;
    }

    void global_line(const std::vector<std::string> &words);
    void tier_line(const std::vector<std::string> &words);
    void check_tier_unique(const Tier &tier);
    void pool_line(const std::vector<std::string> &words);
    void finish();

    // The account queues' settings (config_accounts.cpp).
    void quota_tres(const std::string &value);
    void reclaim_to(const std::string &value);
    void account_line(const std::vector<std::string> &words);
    ResourceAmounts tres_amounts(int line, const std::string &key, const std::string &value,
                                 const std::string &where) const;
    void finish_pool_quotas();
    void finish_accounts();
};

}  // namespace detail
}  // namespace gpupool
