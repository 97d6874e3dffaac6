#include "command_format.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ostream>

namespace gpupool::cli {

void Table::print(std::ostream &out) const {
    std::vector<size_t> w(head_.size());
    for (size_t c = 0; c < head_.size(); ++c) w[c] = head_[c].size();
    for (const auto &r : rows_)
        for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
    auto line = [&](const std::vector<std::string> &r) {
        std::string s;
        for (size_t c = 0; c < head_.size(); ++c) {
            const std::string cell = c < r.size() ? r[c] : "";
            std::string pad(w[c] - std::min(w[c], cell.size()), ' ');
            if (c) s += "  ";
            s += align_[c] == 'r' ? pad + cell : cell + pad;
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        out << s << "\n";
    };
    line(head_);
    for (const auto &r : rows_) line(r);
}

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string joined(const std::vector<std::string> &items, const char *sep) {
    std::string s;
    for (const std::string &i : items) s += (s.empty() ? "" : sep) + i;
    return s;
}

void put_ints(json_t *o, std::initializer_list<std::pair<const char *, int64_t>> fields) {
    for (const auto &[key, v] : fields) put(o, key, jint(v));
}

json_t *jstr_array(const std::vector<std::string> &v) {
    json_t *a = json_array();
    for (const std::string &s : v) json_array_append_new(a, jstr(s));
    return a;
}

json_t *jint_array(const std::vector<uint32_t> &v) {
    json_t *a = json_array();
    for (uint32_t i : v) json_array_append_new(a, jint(i));
    return a;
}

void print_json(std::ostream &out, json_t *root) {
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    if (text) {
        out << text << "\n";
        std::free(text);
    }
}

}  // namespace gpupool::cli
