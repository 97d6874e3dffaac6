// The engine's own containers, made for slurmctld's hot paths: a short
// list kept inline, job id maps in one open-addressing array (no heap
// allocation per entry), and a min-tree over slots.  Plain data structures,
// no policy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpupool {

// Pages straight from the kernel (mmap), and back (munmap); bytes > 0.
void *map_pages(size_t bytes);
void unmap_pages(void *p, size_t bytes) noexcept;
// Bytes map_pages holds mapped now, over all arrays (for benchmarks).
size_t mapped_bytes();

// An allocator whose big arrays are mapped from the kernel and unmapped when
// freed, so that a pass's snapshot of every job (2 MiB at 10,000 jobs)
// leaves slurmctld's RSS when the pass ends.  From malloc, a block that size
// stays in the allocator's free lists (glibc raises its mmap threshold to
// the size of the first such block freed).  Small arrays come from new.
template <typename T>
struct PageAllocator {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "new and mmap align it");
    using value_type = T;
    static constexpr size_t kMappedFrom = size_t(256) << 10;
    PageAllocator() = default;
    template <typename U>
    PageAllocator(const PageAllocator<U> &) noexcept {}
    T *allocate(size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        const size_t bytes = n * sizeof(T);
        return static_cast<T *>(bytes < kMappedFrom ? ::operator new(bytes) : map_pages(bytes));
    }
    void deallocate(T *p, size_t n) noexcept {
        const size_t bytes = n * sizeof(T);
        if (bytes < kMappedFrom)
            ::operator delete(p);
        else
            unmap_pages(p, bytes);
    }
    template <typename U>
    bool operator==(const PageAllocator<U> &) const noexcept {
        return true;
    }
    template <typename U>
    bool operator!=(const PageAllocator<U> &) const noexcept {
        return false;
    }
};

// A short list kept inline (almost always one or two entries), to spare an
// allocation per pending job and pass.  Past kInline entries they move to
// the heap, whose pointer takes the inline room's place: every pending
// result carries two of these lists, so their size is memory per job.
template <typename T, uint32_t kInline>
class InlineList {
    static_assert(std::is_trivially_copyable<T>::value, "entries are copied as bytes");
    static_assert(sizeof(T) * kInline >= sizeof(T *), "the heap pointer shares the inline room");

public:
    InlineList() = default;
    InlineList(const InlineList &o) { copy_from(o); }
    InlineList(InlineList &&o) noexcept : n_(o.n_) {
        std::memcpy(&u_, &o.u_, sizeof u_);
        o.n_ = 0;
    }
    InlineList &operator=(const InlineList &o) {
        if (this != &o) {
            release();
            copy_from(o);
        }
        return *this;
    }
    InlineList &operator=(InlineList &&o) noexcept {
        if (this != &o) {
            release();
            n_ = o.n_;
            std::memcpy(&u_, &o.u_, sizeof u_);
            o.n_ = 0;
        }
        return *this;
    }
    ~InlineList() { release(); }

    void push_back(const T &entry) {
        const T p = entry;  // it may be one of ours: growing moves or frees it
        if (n_ < kInline) {
            u_.inline_[n_++] = p;
            return;
        }
        const uint32_t cap = capacity(n_);
        if (n_ == cap) {  // full: twice the room (the inline entries move out at the first)
            T *bigger = new T[size_t(cap) * 2];
            std::memcpy(bigger, begin(), sizeof(T) * n_);
            if (n_ > kInline) delete[] u_.heap_;
            u_.heap_ = bigger;
        }
        u_.heap_[n_++] = p;
    }
    const T *begin() const { return n_ <= kInline ? u_.inline_ : u_.heap_; }
    const T *end() const { return begin() + n_; }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const T &front() const { return *begin(); }
    void clear() { release(); }
    bool contains(const T &p) const {
        for (const T &x : *this)
            if (x == p) return true;
        return false;
    }
    bool operator==(const InlineList &o) const {
        return n_ == o.n_ && std::equal(begin(), end(), o.begin());
    }

private:
    // The heap room for n > kInline entries: kInline doubled until it holds them.
    static uint32_t capacity(uint32_t n) {
        uint32_t c = kInline;
        while (c < n) c *= 2;
        return c;
    }
    void release() {
        if (n_ > kInline) delete[] u_.heap_;
        n_ = 0;
    }
    void copy_from(const InlineList &o) {
        if (o.n_ > kInline) {
            T *mine = new T[capacity(o.n_)];
            std::memcpy(mine, o.u_.heap_, sizeof(T) * o.n_);
            u_.heap_ = mine;
        } else {
            std::memcpy(&u_, &o.u_, sizeof u_);
        }
        n_ = o.n_;
    }
    union Room {
        T inline_[kInline];
        T *heap_;
        Room() : inline_{} {}
    } u_;
    uint32_t n_ = 0;
};

// Job id -> position, rebuilt every pass: open addressing in one array, so
// a pass over 100k jobs makes one allocation instead of 100k.
class IdIndex {
public:
    static constexpr uint32_t kNone = UINT32_MAX;
    void build(size_t n) {
        size_t cap = 16;
        while (cap < 2 * n) cap <<= 1;
        slots_.assign(cap, Slot{0, kNone});
        mask_ = cap - 1;
    }
    void insert(uint32_t id, uint32_t pos) {
        size_t i = hash(id) & mask_;
        while (slots_[i].pos != kNone && slots_[i].id != id) i = (i + 1) & mask_;
        slots_[i] = Slot{id, pos};
    }
    uint32_t find(uint32_t id) const {
        if (slots_.empty()) return kNone;
        size_t i = hash(id) & mask_;
        while (slots_[i].pos != kNone) {
            if (slots_[i].id == id) return slots_[i].pos;
            i = (i + 1) & mask_;
        }
        return kNone;
    }
    void clear() { slots_.clear(); }

private:
    struct Slot {
        uint32_t id, pos;
    };
    static size_t hash(uint32_t id) { return static_cast<size_t>(id) * 0x9E3779B97F4A7C15ull >> 17; }
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

// Job id -> V in one open-addressing array (linear probing).  Adding an
// entry allocates only when the array grows, and reserve() grows it ahead
// of time, in the thread that calls it.  For what slurmctld's submit path
// adds per job (priority_p_set): a heap allocation there per job lands
// between slurmctld's own job records, and freed later by the agent thread
// it leaves holes that later records fill; either way the job list that
// every scheduling cycle walks is scattered over memory (measured: the
// scheduler's walk of 10k jobs 3x slower).
template <typename V>
class FlatIdMap {
public:
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // Room for n entries without growing.
    void reserve(size_t n) {
        if (2 * n > slots_.size()) rehash(n);
    }
    V *find(uint32_t id) {
        size_t i = slot_of(id);
        return i != kNoSlot && slots_[i].used ? &slots_[i].value : nullptr;
    }
    const V *find(uint32_t id) const { return const_cast<FlatIdMap *>(this)->find(id); }
    bool contains(uint32_t id) const { return find(id) != nullptr; }
    // The entry of `id`, added as `v` if there was none; true if added.
    std::pair<V *, bool> try_emplace(uint32_t id, const V &v) {
        if (2 * (size_ + 1) > slots_.size()) rehash(size_ + 1);  // rehash doubles: at most half full
        size_t i = slot_of(id);
        if (slots_[i].used) return {&slots_[i].value, false};
        slots_[i].id = id;
        slots_[i].used = true;
        slots_[i].value = v;
        ++size_;
        return {&slots_[i].value, true};
    }
    bool erase(uint32_t id) {
        size_t i = slot_of(id);
        if (i == kNoSlot || !slots_[i].used) return false;
        // Backward shift: entries after it that probed past it move up.
        const size_t mask = slots_.size() - 1;
        for (size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
            size_t home = hash(slots_[j].id) & mask;
            bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (stays) continue;
            slots_[i] = std::move(slots_[j]);
            i = j;
        }
        slots_[i].used = false;
        slots_[i].value = V{};
        --size_;
        return true;
    }
    // Empty, keeping the array.
    void clear() {
        for (Slot &s : slots_)
            if (s.used) s = Slot{};
        size_ = 0;
    }
    template <typename F>
    void for_each(F f) {
        for (Slot &s : slots_)
            if (s.used) f(s.id, s.value);
    }
    template <typename F>
    void for_each(F f) const {
        for (const Slot &s : slots_)
            if (s.used) f(s.id, s.value);
    }

private:
    static constexpr size_t kNoSlot = SIZE_MAX;
    struct Slot {
        uint32_t id = 0;
        bool used = false;
        V value{};
    };
    static size_t hash(uint32_t id) { return static_cast<size_t>(id) * 0x9E3779B97F4A7C15ull >> 17; }
    // The slot holding `id`, or the free one where it would go.
    size_t slot_of(uint32_t id) const {
        if (slots_.empty()) return kNoSlot;
        const size_t mask = slots_.size() - 1;
        size_t i = hash(id) & mask;
        while (slots_[i].used && slots_[i].id != id) i = (i + 1) & mask;
        return i;
    }
    // At least 2n slots (a power of two), entries moved over.
    void rehash(size_t n) {
        size_t cap = 16;
        while (cap < 2 * n) cap <<= 1;
        std::vector<Slot> old(cap);
        old.swap(slots_);
        size_ = 0;
        for (Slot &s : old)
            if (s.used) {
                size_t i = slot_of(s.id);
                slots_[i] = std::move(s);
                ++size_;
            }
    }
    std::vector<Slot> slots_;
    size_t size_ = 0;
};

// Smallest value over a range of slots, and the first slot from a given one
// whose value is at most a limit, both in O(log n).
class MinTree {
public:
    static constexpr size_t kNone = SIZE_MAX;
    static constexpr uint32_t kEmpty = UINT32_MAX;
    void build(const std::vector<uint32_t> &values) {
        n_ = values.size();
        size_ = 1;
        while (size_ < n_) size_ <<= 1;
        t_.assign(2 * size_, kEmpty);
        std::copy(values.begin(), values.end(), t_.begin() + static_cast<std::ptrdiff_t>(size_));
        for (size_t i = size_ - 1; i > 0; --i) t_[i] = std::min(t_[2 * i], t_[2 * i + 1]);
    }
    void set(size_t i, uint32_t v) {
        i += size_;
        t_[i] = v;
        for (i >>= 1; i > 0; i >>= 1) t_[i] = std::min(t_[2 * i], t_[2 * i + 1]);
    }
    size_t first_at_most(size_t from, uint32_t limit) const {
        if (from >= n_) return kNone;
        return first(1, 0, size_, from, limit);
    }

private:
    size_t first(size_t node, size_t lo, size_t hi, size_t from, uint32_t limit) const {
        if (hi <= from || t_[node] > limit) return kNone;
        if (hi - lo == 1) return lo;
        const size_t mid = (lo + hi) / 2;
        size_t r = first(2 * node, lo, mid, from, limit);
        return r != kNone ? r : first(2 * node + 1, mid, hi, from, limit);
    }
    size_t n_ = 0, size_ = 1;
    std::vector<uint32_t> t_;
};

}  // namespace gpupool
