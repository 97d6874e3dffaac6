// Small pieces the workload readers share: splitting lines into fields,
// numbers, "FILE:LINE: problem" errors, and notes that count what a reader
// skipped or changed.  Internal to src/sim.  Slurm's own text forms (counts,
// GRES, TRES, times, hostlists) are read by src/slurm/slurm_text.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "slurm_text.hpp"
#include "workload.hpp"

namespace gpupool::sim {

// Throws InputError "SOURCE:LINE: message" (LINE left out when 0).
[[noreturn]] void input_error(const std::string &source, uint64_t line, const std::string &message);

// `text` cut at every `sep` (empty fields kept).
void split(std::string_view text, char sep, std::vector<std::string_view> &out);
// Cut at `sep` outside [...] and (...) (hostlists, Gres socket lists).
using cli::split_top_level;

std::string lower(std::string_view text);
bool iequals(std::string_view a, std::string_view b);
using cli::trim;

// Decimal digits only, no sign, at most `max`; false otherwise.
using cli::parse_uint;
// A decimal number (digits, optional fraction); false otherwise.
bool parse_decimal(std::string_view text, double *out);

// Counts, per kind, what a reader skipped or changed, with the first few
// examples: "3 jobs never started: skipped (e.g. 12, 13, 17)".
class NoteTally {
public:
    // `what` follows the count, "[s]" marking plurals: "job[s] never
    // started: skipped" gives "1 job never started: skipped".
    void add(const std::string &what, const std::string &example);
    // Appends one line per kind, in the order kinds were first added.
    void emit(std::vector<std::string> &notes) const;

private:
    struct Kind {
        uint64_t count = 0;
        std::vector<std::string> examples;
    };
    std::vector<std::string> order_;
    std::map<std::string, Kind> kinds_;
};

// seconds from a duration "3600", "90s", "30m", "2h", "1.5d"; -1 if not one.
double parse_seconds(std::string_view text);

}  // namespace gpupool::sim
