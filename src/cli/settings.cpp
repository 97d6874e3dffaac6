#include "settings.hpp"

#include <cctype>
#include <vector>

namespace gpupool::cli {

namespace {

bool same_key(const std::string &a, const std::string &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

// The documented spelling of `key` in `keys`, or "".
std::string known(const std::vector<std::string> &keys, const std::string &key) {
    for (const std::string &k : keys)
        if (same_key(k, key)) return k;
    return "";
}

std::string list(const std::vector<std::string> &keys) {
    std::string s;
    for (const std::string &k : keys) s += (s.empty() ? "" : ", ") + k;
    return s;
}

std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> lines;
    size_t pos = 0;
    while (true) {
        size_t nl = text.find('\n', pos);
        lines.push_back(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
        if (nl == std::string::npos) break;
        pos = nl + 1;
    }
    return lines;
}

std::string join_lines(const std::vector<std::string> &lines) {
    std::string s;
    for (size_t i = 0; i < lines.size(); ++i) s += (i ? "\n" : "") + lines[i];
    return s;
}

struct Line {
    std::vector<std::string> words;
    std::string comment;  // from '#', or ""
};

// As the parser reads a line: '#' starts a comment, whitespace separates.
Line read_line(const std::string &raw) {
    Line l;
    std::string body = raw;
    size_t hash = raw.find('#');
    if (hash != std::string::npos) {
        body = raw.substr(0, hash);
        l.comment = raw.substr(hash);
    }
    std::string cur;
    for (char c : body) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!cur.empty()) l.words.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) l.words.push_back(cur);
    return l;
}

std::string key_of(const std::string &word) { return word.substr(0, word.find('=')); }

// Set key=value among the words from `first` on; true if it was there.
bool set_word(Line &l, size_t first, const std::string &key, const std::string &value) {
    for (size_t i = first; i < l.words.size(); ++i)
        if (same_key(key_of(l.words[i]), key)) {
            l.words[i] = key + "=" + value;
            return true;
        }
    return false;
}

std::string write_line(const Line &l) {
    std::string s;
    for (const std::string &w : l.words) s += (s.empty() ? "" : " ") + w;
    if (!l.comment.empty()) s += (s.empty() ? "" : " ") + l.comment;
    return s;
}

// The Account= entry `name` names: ACCOUNT@POOL (POOL may be *), or
// ACCOUNT alone when it has one entry; null when it has none.  `bad`
// makes the error for an account with several entries and no @POOL.
template <typename Bad>
const AccountQuota *account_entry(const Config &cfg, const std::string &name, Bad bad) {
    const size_t at = name.find('@');
    const std::string account = name.substr(0, at);
    std::vector<const AccountQuota *> found;
    for (const AccountQuota &e : cfg.accounts)
        if (e.account == account && (at == std::string::npos || e.pool == name.substr(at + 1))) found.push_back(&e);
    if (found.size() > 1) {
        std::vector<std::string> pools;
        for (const AccountQuota *e : found) pools.push_back(clip(account) + "@" + clip(e->pool));
        throw bad("Account=" + clip(account) + " has an entry for several pools: name one (" + list(pools) + ")");
    }
    return found.empty() ? nullptr : found.front();
}

}  // namespace

std::string apply_setting(const std::string &text, const Config &cfg, const std::string &setting) {
    auto bad = [&](const std::string &why) -> ConfigError {
        return ConfigError("--set " + quote(setting) + ": " + why);
    };
    size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0)
        throw bad("expected POOL.Key=VALUE, TIER.Key=VALUE or Key=VALUE");
    const std::string lhs = setting.substr(0, eq), value = setting.substr(eq + 1);
    if (value.empty()) throw bad("no value");
    for (char c : value)
        if (std::isspace(static_cast<unsigned char>(c)) || c == '#')
            throw bad("the value must be one word (no space or '#')");

    std::vector<std::string> lines = split_lines(text);
    const ConfigKeys &keys = config_keys();
    size_t dot = lhs.rfind('.');
    if (dot == std::string::npos) {
        std::string key = known(keys.global, lhs);
        if (key.empty()) throw bad("unknown global key " + quote(lhs) + " (global keys: " + list(keys.global) + ")");
        for (std::string &raw : lines) {
            Line l = read_line(raw);
            if (l.words.empty()) continue;
            std::string first = key_of(l.words[0]);
            if (same_key(first, "Tier") || same_key(first, "Pool") || same_key(first, "Account")) continue;
            if (set_word(l, 0, key, value)) {
                raw = write_line(l);
                return join_lines(lines);
            }
        }
        if (!lines.empty() && lines.back().empty()) lines.pop_back();
        lines.push_back(key + "=" + value);
        return join_lines(lines) + "\n";
    }

    const std::string name = lhs.substr(0, dot), given = lhs.substr(dot + 1);
    const Pool *pool = cfg.find_pool(name);
    const Tier *tier = cfg.find_tier(name);
    int line = 0;
    std::string key;
    if (name.find('@') != std::string::npos || (!pool && !tier && account_entry(cfg, name, bad))) {
        const AccountQuota *entry = account_entry(cfg, name, bad);
        if (!entry) throw bad("no Account=" + clip(name.substr(0, name.find('@'))) + " Pool=" +
                              clip(name.substr(name.find('@') + 1)) + " in " + cfg.source);
        key = known(keys.account, given);
        if (key.empty())
            throw bad("unknown key " + quote(given) + " for Account=" + clip(entry->account) + " (account keys: " +
                      list(keys.account) + ")");
        line = entry->line;
    } else if (pool && !(key = known(keys.pool, given)).empty()) {
        line = pool->line;
    } else if (tier && !(key = known(keys.tier, given)).empty()) {
        line = tier->line;
    } else if (pool || tier) {
        std::string what;
        if (pool) what = "pool keys: " + list(keys.pool);
        if (tier) what += std::string(what.empty() ? "" : "; ") + "tier keys: " + list(keys.tier);
        throw bad("unknown key " + quote(given) + " for " + (pool ? "Pool=" : "Tier=") + clip(name) + " (" + what + ")");
    } else {
        throw bad("no Pool=" + clip(name) + " or Tier=" + clip(name) + " in " + cfg.source);
    }
    if (line < 1 || size_t(line) > lines.size()) throw bad("line " + std::to_string(line) + " not in the text");
    Line l = read_line(lines[size_t(line - 1)]);
    if (!set_word(l, 1, key, value)) l.words.push_back(key + "=" + value);
    lines[size_t(line - 1)] = write_line(l);
    return join_lines(lines);
}

}  // namespace gpupool::cli
