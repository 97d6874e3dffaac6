// What the commands print with: Slurm-like tables and the JSON documents'
// small helpers.  Formatting only, no figure of the core.
#pragma once

#include "json_ptr.hpp"

#include <jansson.h>

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace gpupool::cli {

// Columns two spaces apart; numbers right-aligned, text left-aligned, the
// way sinfo and squeue print.
class Table {
public:
    // `align`: one 'l' or 'r' per column.
    Table(std::vector<std::string> head, std::string align) : head_(std::move(head)), align_(std::move(align)) {}
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    bool empty() const { return rows_.empty(); }
    void print(std::ostream &out) const;

private:
    std::vector<std::string> head_;
    std::string align_;
    std::vector<std::vector<std::string>> rows_;
};

inline std::string num(uint64_t v) { return std::to_string(v); }
std::string fixed(double v, int decimals);
// "a,b,c" (`sep` between), the empty string for none.
std::string joined(const std::vector<std::string> &items, const char *sep = ",");

inline json_t *jstr(const std::string &s) { return json_stringn(s.data(), s.size()); }
inline json_t *jint(int64_t v) { return json_integer(static_cast<json_int_t>(v)); }
// Sets o[key] to v, JSON null when v is null.
inline void put(json_t *o, const char *key, json_t *v) { json_object_set_new(o, key, v ? v : json_null()); }
// Sets each o[key] to its integer, in the order given.
void put_ints(json_t *o, std::initializer_list<std::pair<const char *, int64_t>> fields);
// A JSON array of strings or of integers.
json_t *jstr_array(const std::vector<std::string> &v);
json_t *jint_array(const std::vector<uint32_t> &v);
using gpupool::jarray_of;  // json_ptr.hpp
// Indented, keys in insertion order, ASCII, a newline after.
void print_json(std::ostream &out, json_t *root);

}  // namespace gpupool::cli
