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

// The symbolic links met on the way from `path` (as given) to its target,
// each judged where it lies: whoever may rename entries in a directory
// above a link, or owns the link, could point it at a file of their own,
// however well the target is kept.  "" when each is trusted (or there is
// none), else why not.  Judged by path, before open_trusted_path's opens:
// those fail on anything swapped since, and only root or SlurmUser can
// change a link that passed.
std::string untrusted_link(const std::string &path, const std::string &shown, const std::string &what,
                           uid_t slurm_uid, const std::string &must, bool *io_error) {
    auto fail_io = [&](const std::string &where) {
        if (io_error) *io_error = true;
        return where + ": cannot check: " + std::strerror(errno);
    };
    std::string start = path;
    if (start.empty() || start[0] != '/') {
        char *cwd = getcwd(nullptr, 0);
        if (!cwd) return fail_io(shown + ": directory .");
        start = std::string(cwd) + "/" + start;
        std::free(cwd);
    }
    std::vector<std::string> todo;  // components still to walk, next last
    auto push_front = [&todo](const std::string &p) {
        std::vector<std::string> parts;
        for (size_t pos = 0; pos <= p.size();) {
            size_t slash = p.find('/', pos);
            if (slash == std::string::npos) slash = p.size();
            parts.push_back(p.substr(pos, slash - pos));
            pos = slash + 1;
        }
        todo.insert(todo.end(), parts.rbegin(), parts.rend());
    };
    auto root = [](std::vector<Dir> &dirs) {
        dirs.assign(1, Dir{"/", {}});
        return ::stat("/", &dirs[0].st) == 0;
    };
    std::vector<Dir> dirs;  // "/" down to the directory reached
    if (!root(dirs)) return fail_io(shown + ": directory /");
    push_front(start);
    int links = 0;
    while (!todo.empty()) {
        const std::string name = todo.back();
        todo.pop_back();
        if (name.empty() || name == ".") continue;
        if (name == "..") {
            if (dirs.size() > 1) dirs.pop_back();
            continue;
        }
        const std::string &at = dirs.back().name;
        const std::string child = at == "/" ? "/" + name : at + "/" + name;
        struct stat st;
        if (::lstat(child.c_str(), &st) != 0) return fail_io(shown + ": " + child);
        if (S_ISLNK(st.st_mode)) {
            if (!trusted_owner(st.st_uid, slurm_uid))
                return shown + ": symbolic link " + child + " is owned by " + user_name(st.st_uid, true) +
                       ", so " + what + " could be replaced" + must;
            std::string w = untrusted_dir(dirs, shown, what, slurm_uid, must);
            if (!w.empty()) return w;
            if (++links > 40) {  // as the kernel's ELOOP
                errno = ELOOP;
                return fail_io(shown);
            }
            std::vector<char> buf(PATH_MAX + 1);
            ssize_t n = ::readlink(child.c_str(), buf.data(), buf.size() - 1);
            if (n < 0) return fail_io(shown + ": " + child);
            const std::string target(buf.data(), static_cast<size_t>(n));
            if (!target.empty() && target[0] == '/' && !root(dirs)) return fail_io(shown + ": directory /");
            push_front(target);
        } else if (!todo.empty()) {
            if (!S_ISDIR(st.st_mode)) break;  // the opens below say so
            dirs.push_back({child, st});
        }
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
    // The path as given first: a link to a well-kept file is no better
    // than the directory it lies in.
    std::string link_why = untrusted_link(path, shown, what, slurm_uid, must, io_error);
    if (!link_why.empty()) return link_why;

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
