// trust.cpp - see trust.hpp.
#include "trust.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gpupool {

namespace {

// "slurm (uid 64030)", or "uid 64030" for a uid without a passwd entry.
std::string user_name(uid_t uid, bool with_uid) {
    struct passwd pw, *res = nullptr;
    std::vector<char> buf(16384);
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res &&
        res->pw_name && *res->pw_name) {
        std::string name = res->pw_name;
        if (with_uid) name += " (uid " + std::to_string(uid) + ")";
        return name;
    }
    return "uid " + std::to_string(uid);
}

std::string mode_str(mode_t mode) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
    return buf;
}

// "group", "others", "group and others" or "" for the write bits of mode.
std::string writers(mode_t mode) {
    bool g = mode & S_IWGRP, o = mode & S_IWOTH;
    if (g && o) return "group and others";
    if (g) return "group";
    if (o) return "others";
    return "";
}

bool trusted_owner(uid_t uid, uid_t slurm_uid) { return uid == 0 || uid == slurm_uid; }

// A directory above the path, as opened on the way down.
struct Dir {
    std::string name;
    struct stat st;
};

// Every directory above, nearest first: whoever may rename entries in it
// could put another file (or directory) in place of this one.  "" when
// each is trusted, else why not.
std::string untrusted_dir(const std::vector<Dir> &dirs, const std::string &shown, const std::string &what,
                          uid_t slurm_uid, const std::string &must) {
    for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) {
        const struct stat &ds = d->st;
        const std::string where = shown + ": directory " + d->name + " is ";
        if (!trusted_owner(ds.st_uid, slurm_uid))
            return where + "owned by " + user_name(ds.st_uid, true) + ", so " + what +
                   " could be replaced" + must;
        const std::string w = writers(ds.st_mode);
        if (!w.empty() && !(ds.st_mode & S_ISVTX))
            return where + "writable by " + w + " (mode " + mode_str(ds.st_mode) +
                   "), so " + what + " could be replaced" + must;
    }
    return "";
}

}  // namespace

std::string open_trusted_path(const std::string &path, const std::string &what,
                              uid_t slurm_uid, bool is_dir, int *fd_out, bool *io_error) {
    if (io_error) *io_error = false;
    *fd_out = -1;
    const std::string must = "; " + what + " must be writable only by root or SlurmUser " +
                             user_name(slurm_uid, false);
    auto fail_io = [&](const std::string &where) {
        if (io_error) *io_error = true;
        return where + ": cannot check: " + std::strerror(errno);
    };

    char *real_c = realpath(path.c_str(), nullptr);
    if (!real_c) return fail_io(path);
    std::string real = real_c;
    std::free(real_c);
    const std::string shown = real == path ? path : path + " (resolves to " + real + ")";

    // Open "/", then each component below it relative to its parent's
    // descriptor, never following a symlink: what is judged (fstat) is
    // what was opened, and a component swapped since realpath fails here.
    std::vector<Dir> dirs;  // "/" first
    int parent = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0) return fail_io(shown + ": directory /");
    std::string at = "/";
    size_t pos = 1;
    int fd = parent;
    while (true) {
        struct stat ds;
        if (::fstat(parent, &ds) != 0) {
            std::string why = fail_io(shown + ": directory " + at);
            ::close(parent);
            return why;
        }
        if (pos >= real.size()) break;  // the path is "/" itself
        size_t slash = real.find('/', pos);
        std::string name = real.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
        bool last = slash == std::string::npos;
        dirs.push_back({at, ds});
        int flags = O_NOFOLLOW | O_CLOEXEC;
        // O_NONBLOCK: a FIFO must not block the open (refused below).
        flags |= (last && !is_dir) ? O_RDONLY | O_NONBLOCK | O_NOCTTY : O_PATH;
        if (!last) flags |= O_DIRECTORY;
        fd = ::openat(parent, name.c_str(), flags);
        std::string child = at == "/" ? "/" + name : at + "/" + name;
        ::close(parent);
        if (fd < 0) return fail_io(last ? shown : shown + ": directory " + child);
        if (last) break;
        parent = fd;
        at = child;
        pos = slash + 1;
    }
    struct Closer {
        int *fd;
        ~Closer() {
            if (*fd >= 0) ::close(*fd);
        }
    } closer{&fd};

    struct stat st;
    if (::fstat(fd, &st) != 0) return fail_io(shown);
    if (is_dir && !S_ISDIR(st.st_mode)) return shown + ": not a directory";
    if (!is_dir && !S_ISREG(st.st_mode)) return shown + ": not a regular file";
    if (!trusted_owner(st.st_uid, slurm_uid))
        return shown + ": owned by " + user_name(st.st_uid, true) + "; " + what +
               " must be owned by root or SlurmUser " + user_name(slurm_uid, false);
    std::string w = writers(st.st_mode);
    if (!w.empty())
        return shown + ": writable by " + w + " (mode " + mode_str(st.st_mode) + ")" + must;

    w = untrusted_dir(dirs, shown, what, slurm_uid, must);
    if (!w.empty()) return w;
    *fd_out = fd;
    fd = -1;  // the caller's now
    return "";
}

std::string check_trusted_path(const std::string &path, const std::string &what,
                               uid_t slurm_uid, bool is_dir, bool *io_error) {
    int fd = -1;
    std::string why = open_trusted_path(path, what, slurm_uid, is_dir, &fd, io_error);
    if (fd >= 0) ::close(fd);
    return why;
}

}  // namespace gpupool
