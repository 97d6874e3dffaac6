// The pages behind PageAllocator (containers.hpp).
#include <sys/mman.h>

#include <atomic>
#include <new>

#include "containers.hpp"

namespace gpupool {

namespace {
std::atomic<size_t> mapped{0};
}  // namespace

void *map_pages(size_t bytes) {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    mapped.fetch_add(bytes, std::memory_order_relaxed);
    return p;
}

void unmap_pages(void *p, size_t bytes) noexcept {
    if (munmap(p, bytes) == 0) mapped.fetch_sub(bytes, std::memory_order_relaxed);
}

size_t mapped_bytes() { return mapped.load(std::memory_order_relaxed); }

}  // namespace gpupool
