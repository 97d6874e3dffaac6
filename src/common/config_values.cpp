// gpupool.conf's values as text: names, durations, digits, and how a
// message shows what a file holds (clip, quote).  The parser that reads
// them is config.cpp.
#include "config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <vector>

namespace gpupool {

const char kNameRule[] = "names may contain only letters, digits, '_', '-' and '.'";

bool valid_name(const std::string &name) {
    if (name.empty()) return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || c == '.';
        if (!ok) return false;
    }
    return true;
}

namespace {
constexpr size_t kShownBytes = 64;

// The first kShownBytes of `text`, printable ASCII kept, every other byte
// (and the backslash and quote) as \xNN.
std::string escaped_start(const std::string &text) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    const size_t n = std::min(text.size(), kShownBytes);
    for (size_t i = 0; i < n; ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c >= 0x7f || c == '\\' || c == '\'') {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::string size_note(const std::string &text) {
    return text.size() > kShownBytes ? "... (" + std::to_string(text.size()) + " bytes)" : "";
}
}  // namespace

std::string clip(const std::string &text) { return escaped_start(text) + size_note(text); }

std::string quote(const std::string &token) { return "'" + escaped_start(token) + "'" + size_note(token); }


namespace conf_text {

std::string lower(const std::string &s) {
    std::string r(s);
    for (char &c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
}

bool all_digits(const std::string &s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// Non-negative decimal integer, digits only; false on junk or overflow.
bool parse_digits(const std::string &s, uint64_t max, uint64_t &out) {
    if (!all_digits(s)) return false;
    uint64_t v = 0;
    for (char c : s) {
        uint64_t d = static_cast<uint64_t>(c - '0');
        if (v > (max - d) / 10) return false;
        v = v * 10 + d;
    }
    out = v;
    return true;
}

}  // namespace conf_text

using conf_text::lower;
using conf_text::parse_digits;

int64_t parse_duration(const std::string &text) {
    if (text.empty()) return -1;
    std::string l = lower(text);
    if (l == "infinite" || l == "unlimited") return 0;

    const uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    uint64_t days = 0;
    std::string rest = text;
    bool has_days = false;
    size_t dash = text.find('-');
    if (dash != std::string::npos) {
        if (!parse_digits(text.substr(0, dash), kMax, days)) return -1;
        rest = text.substr(dash + 1);
        has_days = true;
    }
    std::vector<std::string> fields;
    size_t start = 0;
    while (true) {
        size_t colon = rest.find(':', start);
        fields.push_back(rest.substr(start, colon == std::string::npos ? std::string::npos
                                                                       : colon - start));
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    if (fields.size() > 3) return -1;
    std::vector<uint64_t> v(fields.size());
    for (size_t i = 0; i < fields.size(); ++i)
        if (!parse_digits(fields[i], kMax, v[i])) return -1;

    // Overflow-checked a * b + c into int64.
    bool ok = true;
    auto mul_add = [&](uint64_t a, uint64_t b, uint64_t c) -> uint64_t {
        if (b != 0 && a > (kMax - c) / b) { ok = false; return 0; }
        return a * b + c;
    };
    uint64_t secs = 0;
    if (has_days) {
        // D-HH, D-HH:MM, D-HH:MM:SS: every field after D is bounded.
        if (v[0] > 23) return -1;
        uint64_t mm = fields.size() > 1 ? v[1] : 0;
        uint64_t ss = fields.size() > 2 ? v[2] : 0;
        if (mm > 59 || ss > 59) return -1;
        secs = mul_add(days, 86400, v[0] * 3600 + mm * 60 + ss);
    } else if (fields.size() == 1) {          // MM
        secs = mul_add(v[0], 60, 0);
    } else if (fields.size() == 2) {          // MM:SS
        if (v[1] > 59) return -1;
        secs = mul_add(v[0], 60, v[1]);
    } else {                                  // HH:MM:SS
        if (v[1] > 59 || v[2] > 59) return -1;
        secs = mul_add(v[0], 3600, v[1] * 60 + v[2]);
    }
    if (!ok) return -1;
    return static_cast<int64_t>(secs);
}

std::string format_duration(int64_t seconds) {
    std::string sign;
    uint64_t s;
    if (seconds < 0) {
        sign = "-";
        s = static_cast<uint64_t>(-(seconds + 1)) + 1;
    } else {
        s = static_cast<uint64_t>(seconds);
    }
    uint64_t days = s / 86400, hh = (s / 3600) % 24, mm = (s / 60) % 60, ss = s % 60;
    char buf[64];
    if (days > 0)
        std::snprintf(buf, sizeof buf, "%llu-%02llu:%02llu:%02llu",
                      static_cast<unsigned long long>(days), static_cast<unsigned long long>(hh),
                      static_cast<unsigned long long>(mm), static_cast<unsigned long long>(ss));
    else
        std::snprintf(buf, sizeof buf, "%02llu:%02llu:%02llu",
                      static_cast<unsigned long long>(hh), static_cast<unsigned long long>(mm),
                      static_cast<unsigned long long>(ss));
    return sign + buf;
}

}  // namespace gpupool
