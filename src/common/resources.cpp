#include "resources.hpp"

#include "config.hpp"  // quote()

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace gpupool {

const char *resource_name(Resource r) {
    switch (r) {
    case kGpu: return "gres/gpu";
    case kCpu: return "cpu";
    case kMem: return "mem";
    }
    return "?";
}

const char *resource_word(Resource r) { return r == kGpu ? "gpu" : resource_name(r); }

namespace {

// The item as config messages show text from a file (quote: printable,
// at most 64 bytes), since gpupool.conf's errors carry this message.
[[noreturn]] void bad(const std::string &item, const std::string &why) {
    throw std::invalid_argument(quote(item) + ": " + why);
}

// A whole number with an optional memory suffix, in MiB when `mem`.
uint64_t parse_count(const std::string &item, const std::string &num, bool mem) {
    if (num.empty() || num[0] < '0' || num[0] > '9') bad(item, "not a whole number");
    errno = 0;
    char *end = nullptr;
    unsigned long long v = std::strtoull(num.c_str(), &end, 10);
    if (errno == ERANGE) bad(item, "number too large");
    std::string suffix(end);
    if (suffix.empty()) return v;
    if (!mem || suffix.size() != 1) bad(item, "not a whole number");
    int shift = 0;
    switch (suffix[0]) {
    case 'K': case 'k':
        if (v % 1024 != 0) bad(item, "K must make whole MiB (a multiple of 1024K)");
        return v / 1024;
    case 'M': case 'm': shift = 0; break;
    case 'G': case 'g': shift = 10; break;
    case 'T': case 't': shift = 20; break;
    case 'P': case 'p': shift = 30; break;
    default: bad(item, "unknown memory suffix (K, M, G, T or P)");
    }
    if (shift && v > (UINT64_MAX >> shift)) bad(item, "number too large");
    return v << shift;
}

}  // namespace

ResourceAmounts parse_resource_amounts(const std::string &text, const std::string &gpu_tres) {
    ResourceAmounts out;
    if (text.find('=') == std::string::npos) {  // `Quota=6`: GPUs
        out.set(kGpu, parse_count(text, text, false));
        return out;
    }
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        start = comma == std::string::npos ? text.size() + 1 : comma + 1;
        size_t eq = item.find('=');
        if (eq == std::string::npos) bad(item, "expected TRES=count");
        std::string name = item.substr(0, eq);
        Resource r;
        if (name == gpu_tres || name == "gres/gpu")
            r = kGpu;
        else if (name == "cpu")
            r = kCpu;
        else if (name == "mem")
            r = kMem;
        else
            bad(item, "not a TRES a quota counts (" + gpu_tres + ", cpu, mem)");
        if (out.has(r)) bad(item, "given twice");
        out.set(r, parse_count(item, item.substr(eq + 1), r == kMem));
    }
    return out;
}

std::string format_resource_amounts(const ResourceAmounts &a, const std::string &gpu_tres) {
    std::string out;
    for (size_t i = 0; i < kResources; ++i) {
        Resource r = static_cast<Resource>(i);
        if (!a.has(r)) continue;
        if (!out.empty()) out += ',';
        out += r == kGpu ? gpu_tres : resource_name(r);
        out += '=';
        uint64_t v = a.value[r];
        if (r != kMem || v == 0) {
            out += std::to_string(v);
            continue;
        }
        static const char suffix[] = {'M', 'G', 'T', 'P'};
        size_t s = 0;
        while (s + 1 < sizeof suffix && v % 1024 == 0) {
            v /= 1024;
            ++s;
        }
        out += std::to_string(v) + suffix[s];
    }
    return out;
}

}  // namespace gpupool
