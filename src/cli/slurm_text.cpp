#include "slurm_text.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace gpupool::cli {

namespace {

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t end = s.find(sep, start);
        if (end == std::string::npos) end = s.size();
        if (end > start) out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// "12", "2K" (Slurm's binary suffixes); nullopt if not a count.
std::optional<uint64_t> count_of(const std::string &text) {
    if (text.empty() || text[0] < '0' || text[0] > '9') return std::nullopt;
    char *end = nullptr;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    uint64_t mult = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mult = 1ull << 10; ++end; break;
    case 'm': case 'M': mult = 1ull << 20; ++end; break;
    case 'g': case 'G': mult = 1ull << 30; ++end; break;
    case 't': case 'T': mult = 1ull << 40; ++end; break;
    default: return std::nullopt;
    }
    if (*end != '\0') return std::nullopt;
    return static_cast<uint64_t>(v) * mult;
}

}  // namespace

std::optional<uint64_t> tres_count(const std::string &tres_str, const std::string &tres) {
    for (const std::string &item : split(tres_str, ',')) {
        size_t eq = item.find('=');
        if (eq == std::string::npos || item.compare(0, eq, tres) != 0 || eq != tres.size()) continue;
        return count_of(item.substr(eq + 1));
    }
    return std::nullopt;
}

std::optional<uint64_t> gres_count(const std::string &spec, const std::string &name, const std::string &type) {
    std::optional<uint64_t> total;
    // Entries are separated by ',' (node GRES, TRES per node) or ';'.
    std::string norm = spec;
    for (char &ch : norm)
        if (ch == ';') ch = ',';
    for (std::string item : split(norm, ',')) {
        size_t paren = item.find('(');
        if (paren != std::string::npos) item.erase(paren);
        if (item.compare(0, 5, "gres:") == 0 || item.compare(0, 5, "gres/") == 0) item.erase(0, 5);
        std::vector<std::string> f = split(item, ':');
        if (f.empty() || f[0] != name) continue;
        std::string t;
        uint64_t n = 1;
        if (f.size() >= 2) {
            // name:count, name:type, name:type:count (and flags such as
            // no_consume between them, ignored).
            std::optional<uint64_t> last = count_of(f.back());
            if (last) n = *last;
            if (f.size() >= 3 || !last) t = f[1];
        }
        if (!type.empty() && t != type) continue;
        total = total.value_or(0) + n;
    }
    return total;
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

std::string slurm_time(int64_t epoch) {
    time_t t = static_cast<time_t>(epoch);
    struct tm tm {};
    char buf[64];
    if (!localtime_r(&t, &tm) || !std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm)) return std::to_string(epoch);
    return buf;
}

}  // namespace gpupool::cli
