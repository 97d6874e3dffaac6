// trust.cpp - see trust.hpp.
#include "trust.hpp"

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

}  // namespace

std::string check_trusted_path(const std::string &path, const std::string &what,
                               uid_t slurm_uid, bool is_dir, bool *io_error) {
    if (io_error) *io_error = false;
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

    struct stat st;
    if (stat(real.c_str(), &st) != 0) return fail_io(shown);
    if (is_dir && !S_ISDIR(st.st_mode)) return shown + ": not a directory";
    if (!is_dir && !S_ISREG(st.st_mode)) return shown + ": not a regular file";
    if (!trusted_owner(st.st_uid, slurm_uid))
        return shown + ": owned by " + user_name(st.st_uid, true) + "; " + what +
               " must be owned by root or SlurmUser " + user_name(slurm_uid, false);
    std::string w = writers(st.st_mode);
    if (!w.empty())
        return shown + ": writable by " + w + " (mode " + mode_str(st.st_mode) + ")" + must;

    // Every directory above: whoever may rename entries in it could put
    // another file (or directory) in place of this one.
    std::string dir = real;
    while (dir.size() > 1) {
        size_t slash = dir.find_last_of('/');
        dir = slash == 0 ? "/" : dir.substr(0, slash);
        struct stat ds;
        if (stat(dir.c_str(), &ds) != 0) return fail_io(shown + ": directory " + dir);
        const std::string where = shown + ": directory " + dir + " is ";
        if (!trusted_owner(ds.st_uid, slurm_uid))
            return where + "owned by " + user_name(ds.st_uid, true) + ", so " + what +
                   " could be replaced" + must;
        w = writers(ds.st_mode);
        if (!w.empty() && !(ds.st_mode & S_ISVTX))
            return where + "writable by " + w + " (mode " + mode_str(ds.st_mode) +
                   "), so " + what + " could be replaced" + must;
    }
    return "";
}

}  // namespace gpupool
