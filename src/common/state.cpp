// Persistent state: decayed usage history and original submit times,
// as JSON (jansson), written to a temporary file and renamed into place.
#include <jansson.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "engine.hpp"
#include "events.hpp"
#include "json_ptr.hpp"

namespace gpupool {

namespace {

constexpr int kStateVersion = 1;


// Encoding checks every jansson result: a value it refuses must fail the
// save loudly, never leave a pool's history out of the file.
[[noreturn]] void encode_failed(const std::string &what) { throw std::runtime_error("cannot encode state: " + what); }

JsonPtr made(json_t *j, const char *what) {
    if (!j) encode_failed(what);
    return JsonPtr(j);
}

void set(json_t *obj, const char *key, JsonPtr value) {
    if (json_object_set_new(obj, key, value.release()) != 0) encode_failed(std::string("'") + key + "'");
}

void append(json_t *arr, JsonPtr value, const char *what) {
    if (json_array_append_new(arr, value.release()) != 0) encode_failed(what);
}

JsonPtr series_json(const UsageSeries &s) {
    JsonPtr buckets = made(json_array(), "buckets");
    for (const auto &b : s.buckets())
        append(buckets.get(),
               made(json_pack("[I,I,f]", (json_int_t)b.start, (json_int_t)b.end, b.value), "bucket"), "bucket");
    JsonPtr out = made(json_pack("{s:f,s:I}", "tail", s.tail(), "tail_time", (json_int_t)s.tail_time()), "series");
    set(out.get(), "buckets", std::move(buckets));
    return out;
}

[[noreturn]] void bad(const std::string &what) { throw std::runtime_error(what); }

int64_t get_int(json_t *obj, const char *key, const std::string &where) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v)) bad(where + ": '" + key + "' must be an integer");
    return json_integer_value(v);
}

// Times must lie in [0, kMaxTime]: the engine adds and subtracts them.
std::string time_range_error(int64_t t) {
    return std::to_string(t) + " out of range 0.." + std::to_string(kMaxTime);
}

int64_t get_time(json_t *obj, const char *key, const std::string &where) {
    int64_t t = get_int(obj, key, where);
    if (t < 0 || t > kMaxTime) bad(where + ": '" + key + "' " + time_range_error(t));
    return t;
}

double get_num(json_t *obj, const char *key, const std::string &where) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) bad(where + ": '" + key + "' must be a number");
    double d = json_number_value(v);
    if (!std::isfinite(d) || d < 0) bad(where + ": '" + key + "' must be finite and >= 0");
    return d;
}

UsageSeries series_from(json_t *obj, const std::string &where) {
    if (!json_is_object(obj)) bad(where + " must be an object");
    double tail = get_num(obj, "tail", where);
    int64_t tail_time = get_time(obj, "tail_time", where);
    json_t *arr = json_object_get(obj, "buckets");
    if (!json_is_array(arr)) bad(where + ": 'buckets' must be an array");
    std::deque<UsageSeries::Bucket> buckets;
    size_t i;
    json_t *b;
    json_array_foreach(arr, i, b) {
        json_int_t start, end;
        double value;
        if (json_unpack(b, "[IIF]", &start, &end, &value) != 0 || end <= start || value < 0 || !std::isfinite(value))
            bad(where + ": bucket " + std::to_string(i) + " must be [start, end > start, value >= 0]");
        for (json_int_t t : {start, end})
            if (t < 0 || t > kMaxTime)
                bad(where + ": bucket " + std::to_string(i) + ": time " + time_range_error(t));
        if (!buckets.empty() && start < buckets.back().end) bad(where + ": buckets overlap or are out of order");
        buckets.push_back(UsageSeries::Bucket{start, end, value});
    }
    UsageSeries s;
    s.restore(std::move(buckets), tail, tail_time);
    return s;
}

// A pool's "accounts" (its queues' usage): absent in files of flat configurations.
std::map<std::string, Engine::AccountHistory> accounts_from(json_t *obj, const std::string &pool_where) {
    std::map<std::string, Engine::AccountHistory> out;
    if (!obj) return out;
    if (!json_is_object(obj)) bad(pool_where + ": 'accounts' must be an object");
    const char *name;
    json_t *a;
    json_object_foreach(obj, name, a) {
        if (!valid_name(name)) bad(pool_where + ": account " + quote(name) + ": bad name: " + kNameRule);
        const std::string where = pool_where + " account " + name;
        if (!json_is_object(a)) bad(where + " must be an object");
        Engine::AccountHistory h;
        h.usage = series_from(json_object_get(a, "usage"), where + " usage");
        const int64_t lu = get_int(a, "last_used", where);
        if (lu < 0 || lu > UINT32_MAX) bad(where + ": last_used out of range");
        h.last_used = static_cast<uint32_t>(lu);
        out.emplace(name, std::move(h));
    }
    return out;
}

}  // namespace

Engine::PersistentState Engine::persistent_state() const {
    PersistentState st;
    st.history = history_;
    st.jobs.reserve(jobs_.size());
    jobs_.for_each([&](uint32_t id, const JobMemory &m) { st.jobs.emplace_back(id, m); });
    st.array_caps.assign(array_caps_.begin(), array_caps_.end());
    st.last_account = last_account_;
    return st;
}

bool Engine::note_array_cap(uint32_t job_id, ArrayCap cap) {
    if (!cap.our_max) return array_caps_.erase(job_id) > 0;
    auto [at, fresh] = array_caps_.try_emplace(job_id, cap);
    const bool user_moved = !fresh && at->second.user_max != cap.user_max;
    at->second = cap;
    return fresh || user_moved;
}

std::optional<Engine::ArrayCap> Engine::array_cap(uint32_t job_id) const {
    auto at = array_caps_.find(job_id);
    if (at == array_caps_.end()) return std::nullopt;
    return at->second;
}

std::string Engine::encode_state(const PersistentState &state, int64_t now) {
    JsonPtr root = made(json_object(), "root");
    set(root.get(), "format", made(json_string("gpupool-state"), "format"));
    set(root.get(), "version", made(json_integer(kStateVersion), "version"));
    set(root.get(), "saved_at", made(json_integer(now), "saved_at"));
    set(root.get(), "last_account", made(json_integer(state.last_account), "last_account"));
    JsonPtr pools = made(json_object(), "pools");
    for (const auto &[name, h] : state.history) {
        // A name with a NUL would be cut, one jansson cannot encode lost.
        if (!valid_name(name)) encode_failed("pool name " + quote(name) + ": " + kNameRule);
        JsonPtr pool = made(json_pack("{s:I,s:I}", "last_used", (json_int_t)h.last_used, "last_capacity",
                                      (json_int_t)h.last_capacity),
                            "pool");
        set(pool.get(), "usage", series_json(h.usage));
        set(pool.get(), "capacity", series_json(h.capacity));
        // Only with Account= entries: flat configurations' files stay as they were.
        if (!h.accounts.empty()) {
            JsonPtr accounts = made(json_object(), "accounts");
            for (const auto &[account, a] : h.accounts) {
                if (!valid_name(account)) encode_failed("account name " + quote(account) + ": " + kNameRule);
                JsonPtr entry = made(json_pack("{s:I}", "last_used", (json_int_t)a.last_used), "account");
                set(entry.get(), "usage", series_json(a.usage));
                if (json_object_set_new(accounts.get(), account.c_str(), entry.release()) != 0)
                    encode_failed("account " + quote(account));
            }
            set(pool.get(), "accounts", std::move(accounts));
        }
        if (json_object_set_new(pools.get(), name.c_str(), pool.release()) != 0)
            encode_failed("pool " + quote(name));
    }
    set(root.get(), "pools", std::move(pools));
    // By job id, so that the same state always reads the same.
    std::vector<std::pair<uint32_t, JobMemory>> sorted = state.jobs;
    std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    JsonPtr jobs = made(json_array(), "jobs");
    for (const auto &[id, m] : sorted)
        append(jobs.get(),
               made(json_pack("[I,I,I]", (json_int_t)id, (json_int_t)m.orig_submit, (json_int_t)m.last_seen), "job"),
               "job");
    set(root.get(), "jobs", std::move(jobs));
    // Only while some array record is capped: files stay as they were.
    if (!state.array_caps.empty()) {
        std::vector<std::pair<uint32_t, ArrayCap>> caps = state.array_caps;
        std::sort(caps.begin(), caps.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
        JsonPtr arr = made(json_array(), "array_caps");
        for (const auto &[id, c] : caps)
            append(arr.get(),
                   made(json_pack("[I,I,I]", (json_int_t)id, (json_int_t)c.user_max, (json_int_t)c.our_max),
                        "array cap"),
                   "array cap");
        set(root.get(), "array_caps", std::move(arr));
    }
    char *text = json_dumps(root.get(), JSON_COMPACT | JSON_SORT_KEYS);
    if (!text) encode_failed("json_dumps");
    std::string out(text);
    free(text);
    return out;
}

void Engine::load_state_json(const std::string &text) {
    json_error_t jerr;
    JsonPtr root(json_loadb(text.data(), text.size(), 0, &jerr));
    if (!root) bad("line " + std::to_string(jerr.line) + ": " + jerr.text);
    if (!json_is_object(root.get())) bad("top level must be an object");
    json_t *fmt = json_object_get(root.get(), "format");
    if (!json_is_string(fmt) || std::strcmp(json_string_value(fmt), "gpupool-state") != 0)
        bad("not a gpupool state file (format)");
    int64_t version = get_int(root.get(), "version", "state");
    if (version != kStateVersion) bad("unsupported state version " + std::to_string(version));
    int64_t last_account = get_time(root.get(), "last_account", "state");

    // Build everything aside; apply only when all of it is valid.
    std::map<std::string, PoolHistory> history;
    json_t *pools = json_object_get(root.get(), "pools");
    if (!json_is_object(pools)) bad("'pools' must be an object");
    const char *name;
    json_t *p;
    json_object_foreach(pools, name, p) {
        if (!valid_name(name)) bad("pool " + quote(name) + ": bad name: " + kNameRule);
        std::string where = std::string("pool ") + name;
        if (!json_is_object(p)) bad(where + " must be an object");
        PoolHistory h;
        h.usage = series_from(json_object_get(p, "usage"), where + " usage");
        h.capacity = series_from(json_object_get(p, "capacity"), where + " capacity");
        int64_t lu = get_int(p, "last_used", where), lc = get_int(p, "last_capacity", where);
        if (lu < 0 || lc < 0 || lu > UINT32_MAX || lc > UINT32_MAX) bad(where + ": last_used/last_capacity out of range");
        h.last_used = static_cast<uint32_t>(lu);
        h.last_capacity = static_cast<uint32_t>(lc);
        h.accounts = accounts_from(json_object_get(p, "accounts"), where);
        history.emplace(name, std::move(h));
    }
    std::unordered_map<uint32_t, JobMemory> jobs;
    json_t *arr = json_object_get(root.get(), "jobs");
    if (!json_is_array(arr)) bad("'jobs' must be an array");
    size_t i;
    json_t *j;
    json_array_foreach(arr, i, j) {
        json_int_t id, orig, seen;
        if (json_unpack(j, "[III]", &id, &orig, &seen) != 0 || id <= 0 || id > UINT32_MAX)
            bad("job entry " + std::to_string(i) + " must be [job_id, orig_submit, last_seen]");
        if (orig < 0 || orig > kMaxTime) bad("job entry " + std::to_string(i) + ": orig_submit " + time_range_error(orig));
        if (seen < 0 || seen > kMaxTime) bad("job entry " + std::to_string(i) + ": last_seen " + time_range_error(seen));
        jobs[static_cast<uint32_t>(id)] = JobMemory{orig, seen};
    }
    std::unordered_map<uint32_t, ArrayCap> caps;
    if (json_t *carr = json_object_get(root.get(), "array_caps")) {
        if (!json_is_array(carr)) bad("'array_caps' must be an array");
        json_array_foreach(carr, i, j) {
            json_int_t id, user, ours;
            const std::string where = "array cap entry " + std::to_string(i);
            if (json_unpack(j, "[III]", &id, &user, &ours) != 0 || id <= 0 || id > UINT32_MAX)
                bad(where + " must be [job_id, user_max, our_max]");
            if (user < 0 || user > UINT32_MAX || ours < 1 || ours > UINT32_MAX)
                bad(where + ": user_max 0.." + std::to_string(UINT32_MAX) + ", our_max 1.." +
                    std::to_string(UINT32_MAX));
            caps[static_cast<uint32_t>(id)] = ArrayCap{static_cast<uint32_t>(user), static_cast<uint32_t>(ours)};
        }
    }
    history_ = std::move(history);
    last_account_ = last_account;
    // Caps noted in this run (none before the first pass) stay.
    for (auto &[id, c] : caps) array_caps_.try_emplace(id, c);
    // Jobs already seen in this run keep the earlier submit time.
    for (auto &[id, m] : jobs) {
        auto [kept, fresh] = jobs_.try_emplace(id, m);
        if (!fresh) {
            kept->orig_submit = std::min(kept->orig_submit, m.orig_submit);
            kept->last_seen = std::max(kept->last_seen, m.last_seen);
        }
    }
}

namespace {
std::mutex writer_mutex;
Engine::StateWriter test_writer;

std::string io_error(const std::string &file, const char *op, int err) {
    return file + ": " + op + ": " + std::strerror(err);
}
}  // namespace

void Engine::set_state_writer(StateWriter writer) {
    std::lock_guard<std::mutex> lock(writer_mutex);
    test_writer = std::move(writer);
}

void Engine::store_state(const std::string &path, const PersistentState &state, int64_t now) {
    std::string text = encode_state(state, now);
    StateWriter writer;
    {
        std::lock_guard<std::mutex> lock(writer_mutex);
        writer = test_writer;
    }
    if (writer)
        writer(path, text);
    else
        write_state_file(path, text);
}

void Engine::write_state_file(const std::string &path, const std::string &text) {
    const std::string tmp = path + ".new";
    // A new file of our own (O_EXCL), never reached through a symbolic link
    // (O_NOFOLLOW): whatever else sits at `tmp` is never written through.
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::open(tmp.c_str(), flags, 0600);
    if (fd < 0 && errno == EEXIST) {
        // Left by a save that was cut short: a regular file is ours to
        // remove (just this name, even if hard-linked elsewhere).  A link
        // or anything else stays for the admin to look at.
        struct stat st;
        if (::lstat(tmp.c_str(), &st) != 0) throw std::runtime_error(io_error(tmp, "lstat", errno));
        if (!S_ISREG(st.st_mode))
            throw std::runtime_error(tmp + ": exists and is not a regular file (a symbolic link?); not writing through it");
        if (::unlink(tmp.c_str()) != 0) throw std::runtime_error(io_error(tmp, "unlink", errno));
        fd = ::open(tmp.c_str(), flags, 0600);
    }
    if (fd < 0) throw std::runtime_error(io_error(tmp, "open", errno));
    auto give_up = [&](const std::string &file, const char *op, int err, bool close_fd) {
        if (close_fd) ::close(fd);
        ::unlink(tmp.c_str());
        throw std::runtime_error(io_error(file, op, err));
    };
    size_t off = 0;
    while (off < text.size()) {
        ssize_t w = ::write(fd, text.data() + off, text.size() - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            give_up(tmp, "write", errno, true);
        }
        off += static_cast<size_t>(w);
    }
    if (::fsync(fd) != 0) give_up(tmp, "fsync", errno, true);
    if (::close(fd) != 0) give_up(tmp, "close", errno, false);
    if (::rename(tmp.c_str(), path.c_str()) != 0) give_up(path, "rename", errno, false);
    // The rename itself is on disk only once its directory is.
    size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) throw std::runtime_error(io_error(dir, "open", errno));
    if (::fsync(dfd) != 0) {
        int err = errno;
        ::close(dfd);
        throw std::runtime_error(io_error(dir, "fsync", err));
    }
    ::close(dfd);
}

void Engine::load_state(const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error(path + ": " + std::strerror(errno));
    std::string text;
    const bool read = read_all(f, text);
    std::fclose(f);
    if (!read) throw std::runtime_error(path + ": read error");
    try {
        load_state_json(text);
    } catch (const std::runtime_error &e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

}  // namespace gpupool
