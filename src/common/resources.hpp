// The resources a quota counts: GPUs, CPUs and memory, named as
// Slurm names them in TRES strings (`gres/gpu=6,cpu=96,mem=768G`), so an
// admin writes a quota the way `sacctmgr ... GrpTRES=` takes a limit.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpupool {

// GPUs count the QuotaTRES GRES (gres/gpu or a typed one); memory is in MiB,
// as Slurm's mem TRES.
enum Resource : size_t { kGpu = 0, kCpu = 1, kMem = 2 };
constexpr size_t kResources = 3;

using Amounts = std::array<uint64_t, kResources>;
inline void add_to(Amounts &to, const Amounts &a) {
    for (size_t k = 0; k < kResources; ++k) to[k] += a[k];
}

// Amounts given for some resources only: a quota of `gres/gpu=16` says
// nothing of CPUs (neither guaranteed nor capped).
struct ResourceAmounts {
    Amounts value{};
    std::array<bool, kResources> given{};

    bool has(Resource r) const { return given[r]; }
    uint64_t get(Resource r) const { return given[r] ? value[r] : 0; }
    void set(Resource r, uint64_t v) {
        value[r] = v;
        given[r] = true;
    }
    bool empty() const { return !given[kGpu] && !given[kCpu] && !given[kMem]; }
};

// "gres/gpu", "cpu", "mem" (the GPU name is the QuotaTRES one where that is set).
const char *resource_name(Resource r);
// "gpu", "cpu", "mem": the resource in a held job's reason.
const char *resource_word(Resource r);

// Parses a TRES amount list: `gres/gpu=6,cpu=96,mem=768G`.  `gpu_tres` is
// the name that counts GPUs (QuotaTRES, e.g. gres/gpu or gres/gpu:a100).
// Memory takes Slurm's suffixes K, M (the default), G, T, P and is kept in
// MiB.  A bare number (`6`) is GPUs, as `Quota=6` always was.  Throws
// std::invalid_argument naming the item that is wrong (unknown TRES, a
// repeated one, a bad number).
ResourceAmounts parse_resource_amounts(const std::string &text, const std::string &gpu_tres);

// The same list back, in the order gres/gpu, cpu, mem; memory with the
// largest suffix that divides it exactly.
std::string format_resource_amounts(const ResourceAmounts &a, const std::string &gpu_tres);

}  // namespace gpupool
