// Preemption records: SystemComment text, event log lines (jansson) and the
// rotated event log file.
#include "events.hpp"
#include "json_ptr.hpp"

#include <jansson.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <regex>
#include <stdexcept>

namespace gpupool {

namespace {


// Length of the valid UTF-8 sequence at s[i], or 0 (RFC 3629: no overlong
// forms, no surrogates, nothing past U+10FFFF).
size_t utf8_seq(const std::string &s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = b(i);
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
    else return 0;
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

// Any bytes as a JSON string: bytes that are not UTF-8 become U+FFFD
// (jansson refuses them), everything else is kept and escaped on output.
json_t *jstr_any(const std::string &s) {
    std::string clean;
    clean.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        size_t n = utf8_seq(s, i);
        if (n == 0) {
            clean += "\xEF\xBF\xBD";
            ++i;
        } else {
            clean.append(s, i, n);
            i += n;
        }
    }
    return json_stringn(clean.data(), clean.size());
}

void set(json_t *o, const char *key, json_t *v) {
    if (!v || json_object_set_new(o, key, v) != 0) throw std::runtime_error(std::string("cannot encode event: ") + key);
}

std::string dump_line(json_t *root) {
    // Compact and ASCII-only: a newline or any other control character in
    // a string is escaped, so a record is always exactly one line.
    char *text = json_dumps(root, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (!text) throw std::runtime_error("cannot encode event");
    std::string out(text);
    std::free(text);
    return out + "\n";
}

[[noreturn]] void bad(const std::string &what) { throw std::runtime_error(what); }

int64_t get_int(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) bad(std::string("'") + key + "' must be an integer");
    return json_integer_value(v);
}

uint32_t get_u32(json_t *o, const char *key) {
    int64_t v = get_int(o, key);
    if (v < 0 || v > UINT32_MAX) bad(std::string("'") + key + "' out of range");
    return static_cast<uint32_t>(v);
}

std::string get_str(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) bad(std::string("'") + key + "' must be a string");
    return std::string(json_string_value(v), json_string_length(v));
}

// [A-Za-z0-9._-]; anything else '_'.  slurmdbd puts SystemComment into
// its SQL as it is, and sacct prints it.
std::string plain(const std::string &s) {
    std::string out = s.empty() ? "-" : s;
    for (char &c : out)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            c = '_';
    return out;
}

const char kCommentTime[] = "%Y-%m-%dT%H:%M:%S";

std::string local_time(int64_t t) {
    time_t tt = static_cast<time_t>(t);
    struct tm tm;
    char buf[64];
    if (!localtime_r(&tt, &tm) || std::strftime(buf, sizeof buf, kCommentTime, &tm) == 0) return "?";
    return buf;
}

int64_t parse_local_time(const std::string &s) {
    struct tm tm;
    std::memset(&tm, 0, sizeof tm);
    if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                    &tm.tm_sec) != 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    return t == static_cast<time_t>(-1) ? 0 : static_cast<int64_t>(t);
}

std::string io_error(const std::string &file, const char *op, int err) {
    return file + ": " + op + ": " + std::strerror(err);
}

// O_APPEND (read too: the last byte is checked), created 0600, never
// through a symbolic link, a regular file.
int open_log(const std::string &path, uint64_t &size) {
    int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == ELOOP) bad(path + ": is a symbolic link; not writing through it");
        bad(io_error(path, "open", errno));
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        bad(io_error(path, "fstat", err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        bad(path + ": not a regular file");
    }
    size = static_cast<uint64_t>(st.st_size);
    return fd;
}

void write_all(int fd, const std::string &path, const char *data, size_t len) {
    size_t off = 0;
    while (off < len) {
        ssize_t w = ::write(fd, data + off, len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            bad(io_error(path, "write", errno));
        }
        off += static_cast<size_t>(w);
    }
}

void rotate(const std::string &path, unsigned keep) {
    if (keep == 0) {
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) bad(io_error(path, "unlink", errno));
        return;
    }
    for (unsigned i = keep; i >= 2; --i) {
        std::string from = path + "." + std::to_string(i - 1), to = path + "." + std::to_string(i);
        if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT) bad(io_error(from, "rename", errno));
    }
    std::string to = path + ".1";
    if (::rename(path.c_str(), to.c_str()) != 0 && errno != ENOENT) bad(io_error(path, "rename", errno));
}

}  // namespace

uint64_t PreemptionEvent::gpu_seconds_lost() const {
    if (victim_start_time <= 0 || time <= victim_start_time) return 0;
    return static_cast<uint64_t>(victim_gpus) * static_cast<uint64_t>(time - victim_start_time);
}

std::string event_json_line(const PreemptionEvent &e) {
    JsonPtr root(json_object());
    if (!root) throw std::runtime_error("cannot encode event");
    json_t *o = root.get();
    set(o, "version", json_integer(kEventLogVersion));
    set(o, "event", json_string("preemption"));
    set(o, "time", json_integer(e.time));
    set(o, "victim_job_id", json_integer(e.victim_job_id));
    set(o, "victim_name", jstr_any(e.victim_name));
    set(o, "victim_user_id", json_integer(e.victim_user_id));
    set(o, "victim_pool", jstr_any(e.victim_pool));
    set(o, "victim_tier", jstr_any(e.victim_tier));
    set(o, "victim_gpus", json_integer(e.victim_gpus));
    set(o, "victim_start_time", json_integer(e.victim_start_time));
    set(o, "victim_pool_used", json_integer(e.victim_pool_used));
    set(o, "victim_pool_quota", json_integer(e.victim_pool_quota));
    set(o, "preemptor_job_id", json_integer(e.preemptor_job_id));
    set(o, "preemptor_pool", jstr_any(e.preemptor_pool));
    set(o, "preemptor_tier", jstr_any(e.preemptor_tier));
    set(o, "rule", jstr_any(e.rule));
    set(o, "mode", jstr_any(e.mode));
    set(o, "grace_time", json_integer(e.grace_time));
    set(o, "gpu_seconds_lost", json_integer(static_cast<json_int_t>(e.gpu_seconds_lost())));
    set(o, "why", jstr_any(e.why));
    return dump_line(o);
}

std::string dropped_json_line(uint64_t count, int64_t now) {
    JsonPtr root(json_object());
    if (!root) throw std::runtime_error("cannot encode event");
    set(root.get(), "version", json_integer(kEventLogVersion));
    set(root.get(), "event", json_string("dropped"));
    set(root.get(), "time", json_integer(now));
    set(root.get(), "count", json_integer(static_cast<json_int_t>(count)));
    return dump_line(root.get());
}

bool read_all(std::FILE *f, std::string &text) {
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    return !std::ferror(f);
}

bool event_from_json(const std::string &line, PreemptionEvent &out) {
    json_error_t jerr;
    JsonPtr root(json_loadb(line.data(), line.size(), 0, &jerr));
    if (!root) bad(std::string("not JSON: ") + jerr.text);
    json_t *o = root.get();
    if (!json_is_object(o)) bad("not a JSON object");
    if (get_int(o, "version") != kEventLogVersion) bad("unsupported version " + std::to_string(get_int(o, "version")));
    if (get_str(o, "event") != "preemption") return false;
    PreemptionEvent e;
    e.time = get_int(o, "time");
    e.victim_job_id = get_u32(o, "victim_job_id");
    e.victim_name = get_str(o, "victim_name");
    e.victim_user_id = get_u32(o, "victim_user_id");
    e.victim_pool = get_str(o, "victim_pool");
    e.victim_tier = get_str(o, "victim_tier");
    e.victim_gpus = get_u32(o, "victim_gpus");
    e.victim_start_time = get_int(o, "victim_start_time");
    e.victim_pool_used = get_u32(o, "victim_pool_used");
    e.victim_pool_quota = get_u32(o, "victim_pool_quota");
    e.preemptor_job_id = get_u32(o, "preemptor_job_id");
    e.preemptor_pool = get_str(o, "preemptor_pool");
    e.preemptor_tier = get_str(o, "preemptor_tier");
    e.rule = get_str(o, "rule");
    e.mode = get_str(o, "mode");
    e.grace_time = get_u32(o, "grace_time");
    e.why = get_str(o, "why");
    out = std::move(e);
    return true;
}

std::string comment_entry(const PreemptionEvent &e) {
    return "gpupool: preempted by JobId=" + std::to_string(e.preemptor_job_id) + " (pool " + plain(e.preemptor_pool) +
           ") rule " + plain(e.rule) + " at " + local_time(e.time) + ", lost " + std::to_string(e.gpu_seconds_lost()) +
           " GPU-s";
}

std::string comment_append(const std::string &old, const std::string &entry, size_t cap) {
    // Text others put there (an operator's scontrol update, a burst
    // buffer plugin) goes to slurmdbd's SQL with ours: a quote or a
    // backslash there would fail the update, and slurmctld's slurmdbd
    // agent would resend it for ever, holding up all accounting.
    std::string kept = old;
    for (char &c : kept) {
        if (c == '\'') c = '`';
        else if (c == '\\') c = '/';
        else if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') c = ' ';
    }
    std::string all = kept.empty() ? entry : kept + "; " + entry;
    if (all.size() <= cap) return all;
    static const std::string kMark = "...; ";
    if (entry.size() + kMark.size() > cap) return entry.substr(0, cap);
    // The newest text that fits after the mark, from an entry boundary.
    size_t start = all.size() - (cap - kMark.size());
    size_t b = all.find("; ", start >= 2 ? start - 2 : 0);
    if (b == std::string::npos) return entry;
    return kMark + all.substr(b + 2);
}

std::vector<CommentPreemption> parse_comment(const std::string &text) {
    static const std::regex re(
        R"(gpupool: preempted by JobId=([0-9]+) \(pool ([A-Za-z0-9._-]+)\) rule ([A-Za-z0-9._-]+) at )"
        R"(([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}), lost ([0-9]+) GPU-s)");
    std::vector<CommentPreemption> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
        const std::smatch &m = *it;
        CommentPreemption p;
        unsigned long long id = std::strtoull(m[1].str().c_str(), nullptr, 10);
        if (id == 0 || id > UINT32_MAX) continue;
        p.preemptor_job_id = static_cast<uint32_t>(id);
        p.preemptor_pool = m[2].str();
        p.rule = m[3].str();
        p.time = parse_local_time(m[4].str());
        p.gpu_seconds_lost = std::strtoull(m[5].str().c_str(), nullptr, 10);
        out.push_back(std::move(p));
    }
    return out;
}

void EventQueue::push(std::string line) {
    while (lines_.size() >= max_) {
        lines_.pop_front();
        ++dropped_;
    }
    lines_.push_back(std::move(line));
}

EventQueue::Batch EventQueue::take() {
    Batch b;
    b.lines.swap(lines_);
    b.dropped = dropped_;
    dropped_ = 0;
    return b;
}

void EventQueue::put_back(Batch batch) {
    for (auto &l : lines_) batch.lines.push_back(std::move(l));
    lines_.swap(batch.lines);
    dropped_ += batch.dropped;
    while (lines_.size() > max_) {
        lines_.pop_front();
        ++dropped_;
    }
}

void append_rotated(const std::string &path, std::deque<std::string> &lines, uint64_t max_bytes, unsigned keep) {
    if (lines.empty()) return;
    uint64_t size = 0;
    int fd = open_log(path, size);
    try {
        // A line cut short by an earlier failed write: end it, so the
        // lines after it stay lines (readers skip the broken one).
        if (size > 0) {
            char last = '\n';
            if (::pread(fd, &last, 1, static_cast<off_t>(size - 1)) == 1 && last != '\n') {
                write_all(fd, path, "\n", 1);
                ++size;
            }
        }
        while (!lines.empty()) {
            const std::string &l = lines.front();
            if (size > 0 && size + l.size() > max_bytes) {
                ::close(fd);
                fd = -1;
                rotate(path, keep);
                fd = open_log(path, size);
            }
            write_all(fd, path, l.data(), l.size());
            size += l.size();
            lines.pop_front();
        }
        if (::fsync(fd) != 0) bad(io_error(path, "fsync", errno));
    } catch (...) {
        if (fd >= 0) ::close(fd);
        throw;
    }
    if (::close(fd) != 0) bad(io_error(path, "close", errno));
}

}  // namespace gpupool
