#include "input_text.hpp"

#include <cctype>
#include <cmath>
#include <locale>
#include <sstream>

namespace gpupool::sim {

void input_error(const std::string &source, uint64_t line, const std::string &message) {
    std::string where = source;
    if (line > 0) where += ":" + std::to_string(line);
    throw InputError(where + ": " + message);
}

void split(std::string_view text, char sep, std::vector<std::string_view> &out) {
    out.clear();
    size_t begin = 0;
    for (;;) {
        size_t end = text.find(sep, begin);
        if (end == std::string_view::npos) {
            out.push_back(text.substr(begin));
            return;
        }
        out.push_back(text.substr(begin, end - begin));
        begin = end + 1;
    }
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char &c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

bool parse_decimal(std::string_view text, double *out) {
    size_t i = 0, digits = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) { ++i; ++digits; }
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) { ++i; ++digits; }
    }
    if (digits == 0 || i != text.size()) return false;
    // The classic locale: a site's LC_NUMERIC must not turn "1.5" into 1.
    std::istringstream in{std::string(text)};
    in.imbue(std::locale::classic());
    double d = 0;
    if (!(in >> d) || !std::isfinite(d)) return false;
    *out = d;
    return true;
}

double parse_seconds(std::string_view text) {
    double unit = 1;
    if (!text.empty()) {
        switch (text.back()) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        case 'd': unit = 86400; break;
        default: unit = 0; break;
        }
        if (unit != 0) text.remove_suffix(1);
        else unit = 1;
    }
    double v = 0;
    if (!parse_decimal(text, &v)) return -1;
    return v * unit;
}

void NoteTally::add(const std::string &what, const std::string &example) {
    auto it = kinds_.find(what);
    if (it == kinds_.end()) {
        order_.push_back(what);
        it = kinds_.emplace(what, Kind{}).first;
    }
    ++it->second.count;
    if (it->second.examples.size() < 3 && !example.empty()) it->second.examples.push_back(example);
}

void NoteTally::emit(std::vector<std::string> &notes) const {
    for (const std::string &what : order_) {
        const Kind &k = kinds_.at(what);
        // "job[s]": "1 job", "2 jobs".
        std::string line = std::to_string(k.count) + " " + what;
        for (size_t at; (at = line.find("[s]")) != std::string::npos;) line.replace(at, 3, k.count == 1 ? "" : "s");
        if (!k.examples.empty()) {
            line += " (e.g. ";
            for (size_t i = 0; i < k.examples.size(); ++i) line += (i ? ", " : "") + k.examples[i];
            line += ")";
        }
        notes.push_back(line);
    }
}

}  // namespace gpupool::sim
