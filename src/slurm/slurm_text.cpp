#include "slurm_text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <map>
#include <stdexcept>

#include "config.hpp"

namespace gpupool::cli {

// --- Pieces ------------------------------------------------------------------

bool parse_uint(std::string_view text, uint64_t max, uint64_t *out) {
    if (text.empty() || text.size() > 20) return false;
    uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        uint64_t d = static_cast<uint64_t>(c - '0');
        if (v > (max - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

std::optional<uint64_t> slurm_count(std::string_view text, uint64_t max) {
    uint64_t mult = 1;
    if (!text.empty()) {
        switch (text.back()) {
        case 'k': case 'K': mult = 1ull << 10; break;
        case 'm': case 'M': mult = 1ull << 20; break;
        case 'g': case 'G': mult = 1ull << 30; break;
        case 't': case 'T': mult = 1ull << 40; break;
        default: break;
        }
        if (mult != 1) text.remove_suffix(1);
    }
    uint64_t v = 0;
    if (!parse_uint(text, UINT64_MAX, &v) || v > max / mult) return std::nullopt;
    return v * mult;
}

std::string_view trim(std::string_view text) {
    size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    return text.substr(b, e - b);
}

std::vector<std::string> split_top_level(const std::string &text, char sep) {
    std::vector<std::string> out;
    std::string cur;
    int depth = 0;
    for (char c : text) {
        if (c == '[' || c == '(') ++depth;
        if ((c == ']' || c == ')') && depth > 0) --depth;
        if (c == sep && depth == 0) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

// --- TRES and GRES -----------------------------------------------------------

std::vector<std::pair<std::string_view, std::string_view>> tres_entries(std::string_view tres_str) {
    std::vector<std::pair<std::string_view, std::string_view>> out;
    size_t begin = 0;
    while (begin <= tres_str.size()) {
        size_t end = tres_str.find(',', begin);
        if (end == std::string_view::npos) end = tres_str.size();
        std::string_view item = tres_str.substr(begin, end - begin);
        size_t eq = item.find('=');
        if (eq != std::string_view::npos) out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
        begin = end + 1;
    }
    return out;
}

std::optional<uint64_t> tres_count(const std::string &tres_str, const std::string &tres) {
    for (const auto &[name, value] : tres_entries(tres_str))
        if (name == tres) return slurm_count(value);
    return std::nullopt;
}

std::optional<uint64_t> tres_mem_mb(const std::string &tres_str) {
    for (const auto &[name, value] : tres_entries(tres_str)) {
        if (name != "mem") continue;
        if (!value.empty() && std::isdigit(static_cast<unsigned char>(value.back()))) {
            uint64_t mb = 0;
            return parse_uint(value, UINT64_MAX, &mb) ? std::optional<uint64_t>(mb) : std::nullopt;
        }
        // slurm_count's suffixes count bytes: "4G" is 4 << 30, 4096 MiB.
        if (auto bytes = slurm_count(value)) return *bytes >> 20;
        return std::nullopt;
    }
    return std::nullopt;
}

std::vector<GresEntry> gres_entries(const std::string &spec) {
    std::vector<GresEntry> out;
    // Entries are separated by ',' (node GRES, TRES per node) or ';'.
    std::string norm = spec;
    for (char &ch : norm)
        if (ch == ';') ch = ',';
    for (std::string &text : split_top_level(norm, ',')) {
        // 22.05-25.11 print an untyped GRES in use with the type "(null)"
        // ("gpu:(null):2(IDX:0-1)"): no type.
        for (size_t at; (at = text.find(":(null)")) != std::string::npos;) text.erase(at, 7);
        size_t paren = text.find('(');
        if (paren != std::string::npos) text.erase(paren);
        std::string_view rest = text;
        if (rest.compare(0, 5, "gres:") == 0 || rest.compare(0, 5, "gres/") == 0) rest.remove_prefix(5);
        GresEntry e;
        for (size_t begin = 0;;) {
            size_t colon = rest.find(':', begin);
            e.fields.emplace_back(rest.substr(begin, colon == std::string_view::npos ? colon : colon - begin));
            if (colon == std::string_view::npos) break;
            begin = colon + 1;
        }
        e.text = std::move(text);
        out.push_back(std::move(e));
    }
    return out;
}

namespace {
// gres_count, or with `untyped_only` the entries that name no type.
// Each entry of `name` in `spec` as (type, count); "" for no type.
template <typename F>
void each_gres(const std::string &spec, const std::string &name, F &&visit) {
    for (GresEntry &e : gres_entries(spec)) {
        std::vector<std::string> f;
        for (std::string &field : e.fields)
            if (!field.empty()) f.push_back(std::move(field));
        if (f.empty() || f[0] != name) continue;
        std::string t;
        uint64_t n = 1;
        if (f.size() >= 2) {
            // name:count, name:type, name:type:count (and flags such as
            // no_consume between them, ignored).
            std::optional<uint64_t> last = slurm_count(f.back());
            if (last) n = *last;
            if (f.size() >= 3 || !last) t = f[1];
        }
        visit(t, n);
    }
}

std::optional<uint64_t> count_gres(const std::string &spec, const std::string &name, const std::string &type,
                                   bool untyped_only) {
    std::optional<uint64_t> total;
    each_gres(spec, name, [&](const std::string &t, uint64_t n) {
        if ((untyped_only && !t.empty()) || (!type.empty() && t != type)) return;
        total = total.value_or(0) + n;
    });
    return total;
}
}  // namespace

std::map<std::string, uint64_t> gres_count_by_type(const std::string &spec, const std::string &name) {
    std::map<std::string, uint64_t> out;
    each_gres(spec, name, [&](const std::string &t, uint64_t n) { out[t] += n; });
    return out;
}

std::optional<uint64_t> gres_count(const std::string &spec, const std::string &name, const std::string &type) {
    return count_gres(spec, name, type, false);
}

std::optional<uint64_t> gres_count_untyped(const std::string &spec, const std::string &name) {
    return count_gres(spec, name, "", true);
}

uint64_t gres_ask_total(const GresAsk &a) {
    uint64_t total = 0;
    auto keep = [&](const std::optional<uint64_t> &c, uint64_t times) {
        if (c) total = std::max(total, *c * (times ? times : 1));
    };
    keep(a.per_job, 1);
    keep(a.per_node, a.nodes);
    uint64_t sockets = 0;
    if (a.nodes && a.sockets_per_node)
        sockets = a.nodes * a.sockets_per_node;
    else if (a.tasks && a.tasks_per_socket)
        sockets = (a.tasks + a.tasks_per_socket - 1) / a.tasks_per_socket;
    keep(a.per_socket, sockets);
    keep(a.per_task, a.tasks);
    return total;
}

uint64_t per_gres_value(const std::string &list, const std::string &name) {
    uint64_t value = 0;
    for (const GresEntry &e : gres_entries(list)) {
        if (e.fields.size() < 2 || e.fields[0] != name) continue;
        // name:value or name:type:value; one entry per GRES, the largest kept.
        uint64_t v = 0;
        if (parse_uint(e.fields.back(), UINT64_MAX, &v)) value = std::max(value, v);
    }
    return value;
}

void add_reservation_cores(const std::string &core_ids, std::vector<bool> &cores) {
    constexpr unsigned long kMaxCore = 65535;  // past any node's cores
    size_t from = 0;
    while (from <= core_ids.size()) {
        size_t to = core_ids.find(',', from);
        if (to == std::string::npos) to = core_ids.size();
        const std::string part = core_ids.substr(from, to - from);
        unsigned long a = 0, b = 0;
        int used = 0;
        bool range = std::sscanf(part.c_str(), "%lu-%lu%n", &a, &b, &used) == 2 && size_t(used) == part.size();
        if (!range && std::sscanf(part.c_str(), "%lu%n", &a, &used) == 1 && size_t(used) == part.size()) {
            b = a;
            range = true;
        }
        if (range && a <= b && a <= kMaxCore) {
            b = std::min(b, kMaxCore);
            if (cores.size() <= b) cores.resize(b + 1, false);
            for (unsigned long c = a; c <= b; ++c) cores[c] = true;
        }
        from = to + 1;
    }
}

uint32_t reservation_cores(const std::string &core_ids) {
    std::vector<bool> cores;
    add_reservation_cores(core_ids, cores);
    return uint32_t(std::count(cores.begin(), cores.end(), true));
}

uint64_t shared_gres_gpus(const std::string &gres_used) {
    // Slurm lists each GPU type's devices in a group of their own: shards
    // and MPS of one type share positions, other types are other GPUs.
    std::map<std::string, std::vector<bool>> by_type;
    for (const std::string &entry : split_top_level(gres_used, ',')) {
        if (entry.compare(0, 6, "shard:") != 0 && entry.compare(0, 4, "mps:") != 0) continue;
        // The last group: a type printed "(null)" comes before it.
        const size_t open = entry.rfind('('), close = entry.rfind(')');
        if (open == std::string::npos || close == std::string::npos || close < open) continue;
        const std::vector<GresEntry> head = gres_entries(entry.substr(0, open));
        const std::vector<std::string> &f = head.empty() ? std::vector<std::string>{} : head.front().fields;
        std::vector<bool> &in_use = by_type[f.size() >= 3 ? f[1] : std::string()];
        const std::vector<std::string> gpus = split_top_level(entry.substr(open + 1, close - open - 1), ',');
        if (in_use.size() < gpus.size()) in_use.resize(gpus.size());
        for (size_t i = 0; i < gpus.size(); ++i) {
            const std::optional<uint64_t> used = slurm_count(gpus[i].substr(0, gpus[i].find('/')));
            if (used && *used > 0) in_use[i] = true;
        }
    }
    uint64_t count = 0;
    for (const auto &[type, in_use] : by_type) count += uint64_t(std::count(in_use.begin(), in_use.end(), true));
    return count;
}

void split_quota_tres(const std::string &quota_tres, std::string &name, std::string &type) {
    std::string rest = quota_tres;
    size_t slash = rest.find('/');
    if (slash != std::string::npos) rest.erase(0, slash + 1);
    size_t colon = rest.find(':');
    name = rest.substr(0, colon);
    type = colon == std::string::npos ? "" : rest.substr(colon + 1);
    if (name.empty()) name = "gpu";
}

// --- Times and durations -----------------------------------------------------

std::string slurm_duration(int64_t s) {
    if (s < 0) s = 0;
    int64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    char buf[64];
    if (d > 0)
        std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", (long long)d, (long long)h, (long long)m,
                      (long long)sec);
    else if (h > 0)
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)h, (long long)m, (long long)sec);
    else
        std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)m, (long long)sec);
    return buf;
}

int64_t elapsed_seconds(const std::string &text) {
    // The core's reader of Slurm's duration forms; it takes the unlimited
    // words as 0 (no limit), which an elapsed time never is.
    if (text == "INFINITE" || text == "UNLIMITED") return -1;
    return gpupool::parse_duration(text);
}

std::string slurm_time(int64_t epoch) {
    time_t t = static_cast<time_t>(epoch);
    struct tm tm {};
    char buf[64];
    if (!localtime_r(&t, &tm) || !std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm)) return std::to_string(epoch);
    return buf;
}

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil): only a cache key here.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

bool SlurmTimeReader::parse(std::string_view s, int64_t *out) {
    if (s.empty() || s == "Unknown" || s == "None") {
        *out = -1;
        return true;
    }
    uint64_t epoch = 0;
    if (parse_uint(s, static_cast<uint64_t>(INT64_MAX) / 2, &epoch)) {
        *out = static_cast<int64_t>(epoch);
        return true;
    }
    if (s.size() != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
        return false;
    uint64_t y, mo, d, h, mi, se;
    if (!parse_uint(s.substr(0, 4), 9999, &y) || !parse_uint(s.substr(5, 2), 12, &mo) ||
        !parse_uint(s.substr(8, 2), 31, &d) || !parse_uint(s.substr(11, 2), 23, &h) ||
        !parse_uint(s.substr(14, 2), 59, &mi) || !parse_uint(s.substr(17, 2), 60, &se))
        return false;
    static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || mo < 1 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(static_cast<int64_t>(y)) ? 1u : 0u))
        return false;
    int64_t key = days_from_civil(static_cast<int64_t>(y), static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 24 +
                  static_cast<int64_t>(h);
    if (key != last_key_) {
        auto it = hours_.find(key);
        if (it == hours_.end()) {
            struct tm tm = {};
            tm.tm_year = static_cast<int>(y) - 1900;
            tm.tm_mon = static_cast<int>(mo) - 1;
            tm.tm_mday = static_cast<int>(d);
            tm.tm_hour = static_cast<int>(h);
            tm.tm_isdst = -1;  // the zone's rule for that date decides
            time_t t = mktime(&tm);
            if (t == static_cast<time_t>(-1)) return false;
            it = hours_.emplace(key, static_cast<int64_t>(t)).first;
        }
        last_key_ = key;
        last_hour_ = it->second;
    }
    *out = last_hour_ + static_cast<int64_t>(mi * 60 + se);
    return true;
}

// --- Hostlists ---------------------------------------------------------------

namespace {

constexpr size_t kMaxHostlistNames = 1u << 24;  // 16M names: far beyond any cluster

// One bracket group "[1-3,07]": each range's bounds and zero-padded width.
struct Range {
    uint64_t lo, hi;
    size_t width;
};

std::vector<Range> parse_brackets(const std::string &inner, const std::string &expr) {
    std::vector<Range> ranges;
    if (inner.empty()) throw std::invalid_argument("empty brackets in " + quote(expr));
    for (const std::string &part : split_top_level(inner, ',')) {
        size_t dash = part.find('-');
        std::string lo_s = part.substr(0, dash);
        std::string hi_s = dash == std::string::npos ? lo_s : part.substr(dash + 1);
        uint64_t lo = 0, hi = 0;
        if (!parse_uint(lo_s, 999999999, &lo) || !parse_uint(hi_s, 999999999, &hi))
            throw std::invalid_argument("bad range " + quote(part) + " in " + quote(expr) +
                                        ": expected N or N-M (digits)");
        if (hi < lo) throw std::invalid_argument("range " + quote(part) + " in " + quote(expr) + " runs backwards");
        ranges.push_back({lo, hi, lo_s.size()});
    }
    return ranges;
}

std::string padded(uint64_t v, size_t width) {
    std::string s = std::to_string(v);
    if (s.size() < width) s.insert(0, width - s.size(), '0');
    return s;
}

// One item without top-level commas: literal text and bracket groups, the
// last group varying fastest.
void expand_item(const std::string &item, const std::string &expr, std::vector<std::string> &out) {
    std::vector<std::string> names{""};
    size_t i = 0;
    while (i < item.size()) {
        if (item[i] == ']') throw std::invalid_argument("']' without '[' in " + quote(expr));
        if (item[i] != '[') {
            size_t j = item.find_first_of("[]", i);
            if (j == std::string::npos) j = item.size();
            for (std::string &n : names) n += item.substr(i, j - i);
            i = j;
            continue;
        }
        size_t close = item.find(']', i);
        if (close == std::string::npos) throw std::invalid_argument("'[' without ']' in " + quote(expr));
        std::string inner = item.substr(i + 1, close - i - 1);
        if (inner.find('[') != std::string::npos) throw std::invalid_argument("nested '[' in " + quote(expr));
        std::vector<Range> ranges = parse_brackets(inner, expr);
        // Counted by division: a product of brackets (2^24 names times 2^40)
        // wraps uint64 and passed the cap, then expanded without end.
        uint64_t count = 0;
        for (const Range &r : ranges) count = std::min<uint64_t>(count + (r.hi - r.lo + 1), kMaxHostlistNames + 1);
        if (out.size() > kMaxHostlistNames || count > (kMaxHostlistNames - out.size()) / names.size())
            throw std::invalid_argument(quote(expr) + " names more than 16M nodes");
        std::vector<std::string> next;
        next.reserve(names.size() * count);
        for (const std::string &n : names)
            for (const Range &r : ranges)
                for (uint64_t v = r.lo; v <= r.hi; ++v) next.push_back(n + padded(v, r.width));
        names.swap(next);
        i = close + 1;
    }
    for (std::string &n : names) out.push_back(std::move(n));
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string &expr) {
    std::vector<std::string> out;
    for (const std::string &raw : split_top_level(expr, ',')) {
        std::string item(trim(raw));
        if (item.empty()) throw std::invalid_argument("empty name in " + quote(expr));
        expand_item(item, expr, out);
    }
    return out;
}

bool limit_reason(std::string_view reason) {
    auto starts = [&](std::string_view p) { return reason.substr(0, p.size()) == p; };
    auto ends = [&](std::string_view p) {
        return reason.size() >= p.size() && reason.substr(reason.size() - p.size()) == p;
    };
    // QOS's per-account limits read "MaxCpuPerAccount", "MaxJobsPerAccount"...
    // A partition's limits or state, as job_limits_check() says them.
    if (reason == "PartitionTimeLimit" || reason == "PartitionNodeLimit" || reason == "PartitionConfig" ||
        reason == "PartitionDown" || reason == "PartitionInactive" || reason == "MaxMemPerLimit")
        return true;
    return (starts("QOS") && reason != "QOSNotAllowed") || starts("Assoc") || (starts("Max") && ends("PerAccount"));
}

bool dependency_waits(const std::string &dependency,
                      const std::function<DependedState(uint32_t id, int64_t task)> &state_of) {
    const bool any_of = dependency.find('?') != std::string::npos;
    bool held_back = false, one_free = false;
    size_t at = 0;
    while (at < dependency.size()) {
        const size_t end = std::min(dependency.find_first_of(",?", at), dependency.size());
        const std::string entry = dependency.substr(at, end - at);
        at = end + 1;
        if (entry.empty()) continue;
        const size_t paren = entry.rfind('(');
        const std::string state = paren == std::string::npos ? "" : entry.substr(paren);
        bool free = state == "(fulfilled)";
        if (state == "(unfulfilled)") {
            // singleton, and anything not read here: waits until Slurm says.
            const size_t colon = entry.find(':');
            free = false;
            if (colon != std::string::npos && colon < paren) {
                const std::string type = entry.substr(0, colon);
                std::string id = entry.substr(colon + 1, paren - colon - 1);
                const bool minutes = id.find('+') != std::string::npos;  // after:12+5: minutes after its start
                id = id.substr(0, id.find('+'));
                int64_t task = -1;
                const size_t under = id.find('_');
                uint64_t job = 0, t = 0;
                bool ok = true;
                if (under != std::string::npos) {
                    const std::string tail = id.substr(under + 1);
                    if (tail == "*")
                        task = -2;
                    else if ((ok = parse_uint(tail, UINT32_MAX, &t)))
                        task = static_cast<int64_t>(t);
                    id.resize(under);
                }
                if (ok && parse_uint(id, UINT32_MAX, &job)) {
                    const DependedState st = state_of(static_cast<uint32_t>(job), task);
                    // after+MIN on a started job: until Slurm says (no start time read here).
                    free = st == DependedState::Ended ||
                           (st == DependedState::Started && type == "after" && !minutes);
                }
            }
        }
        // "(failed)": never met.
        held_back |= !free;
        one_free |= free;
    }
    return any_of ? !one_free : held_back;
}

}  // namespace gpupool::cli
