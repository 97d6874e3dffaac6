// Unit tests of the trusted-path check for gpupool.conf and the state
// directory: owners, modes, directories above, symbolic links.
#include "gpupool.h"
#include "trust.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

using namespace gpupool;

namespace {

// A uid and gid that no passwd entry has on a test machine.
constexpr uid_t kStranger = 54321;
const std::string kRootMust = "; gpupool.conf must be writable only by root or SlurmUser root";

class TrustTest : public ::testing::Test {
protected:
    void SetUp() override {
        // Under /tmp (root's, mode 1777): sticky, so it may be writable by all.
        char tmpl[] = "/tmp/gp_trust_XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
        file_ = dir_ + "/gpupool.conf";
        std::ofstream(file_) << "Tier=a Priority=1\n";
        ASSERT_EQ(chmod(file_.c_str(), 0644), 0);
    }
    void TearDown() override {
        std::string cmd = "rm -rf '" + dir_ + "'";
        ASSERT_EQ(std::system(cmd.c_str()), 0);
    }
    bool root() const { return geteuid() == 0; }
    std::string check(const std::string &p, bool is_dir = false, uid_t slurm = 0,
                      const char *what = "gpupool.conf") {
        return check_trusted_path(p, what, slurm, is_dir);
    }
    std::string dir_, file_;
};

}  // namespace

TEST_F(TrustTest, OwnedByRootNotWritableByOthersIsTrusted) {
    if (!root()) GTEST_SKIP() << "needs root (files must be owned by root)";
    EXPECT_EQ(check(file_), "");
    ASSERT_EQ(chmod(file_.c_str(), 0600), 0);
    EXPECT_EQ(check(file_), "");
    EXPECT_EQ(check(dir_, true, 0, "StateSaveLocation"), "");
}

TEST_F(TrustTest, WritableFileIsRefused) {
    if (!root()) GTEST_SKIP() << "needs root";
    ASSERT_EQ(chmod(file_.c_str(), 0664), 0);
    EXPECT_EQ(check(file_), file_ + ": writable by group (mode 0664)" + kRootMust);
    ASSERT_EQ(chmod(file_.c_str(), 0646), 0);
    EXPECT_EQ(check(file_), file_ + ": writable by others (mode 0646)" + kRootMust);
    ASSERT_EQ(chmod(file_.c_str(), 0666), 0);
    EXPECT_EQ(check(file_), file_ + ": writable by group and others (mode 0666)" + kRootMust);
}

TEST_F(TrustTest, OwnerMustBeRootOrSlurmUser) {
    if (!root()) GTEST_SKIP() << "needs root to chown";
    ASSERT_EQ(chown(file_.c_str(), kStranger, kStranger), 0);
    EXPECT_EQ(check(file_),
              file_ + ": owned by uid 54321; gpupool.conf must be owned by root or SlurmUser root");
    // The same owner is fine when it is SlurmUser; the message names it.
    EXPECT_EQ(check(file_, false, kStranger), "");
    ASSERT_EQ(chmod(file_.c_str(), 0664), 0);
    EXPECT_EQ(check(file_, false, kStranger),
              file_ + ": writable by group (mode 0664); gpupool.conf must be writable only by "
                      "root or SlurmUser uid 54321");
}

TEST_F(TrustTest, DirectoryAboveMustNotBeWritable) {
    if (!root()) GTEST_SKIP() << "needs root";
    ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
    EXPECT_EQ(check(file_), file_ + ": directory " + dir_ +
                                " is writable by group and others (mode 0777), so gpupool.conf "
                                "could be replaced" + kRootMust);
    ASSERT_EQ(chmod(dir_.c_str(), 0775), 0);
    EXPECT_EQ(check(file_), file_ + ": directory " + dir_ +
                                " is writable by group (mode 0775), so gpupool.conf could be "
                                "replaced" + kRootMust);
    // Sticky (as /tmp): only an entry's owner may rename it.
    ASSERT_EQ(chmod(dir_.c_str(), 01777), 0);
    EXPECT_EQ(check(file_), "");
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    ASSERT_EQ(chown(dir_.c_str(), kStranger, 0), 0);
    EXPECT_EQ(check(file_), file_ + ": directory " + dir_ +
                                " is owned by uid 54321, so gpupool.conf could be replaced" +
                                kRootMust);
}

TEST_F(TrustTest, StateDirectory) {
    if (!root()) GTEST_SKIP() << "needs root";
    std::string state = dir_ + "/state";
    ASSERT_EQ(mkdir(state.c_str(), 0700), 0);
    EXPECT_EQ(check(state, true, 0, "StateSaveLocation"), "");
    ASSERT_EQ(chmod(state.c_str(), 0777), 0);
    EXPECT_EQ(check(state, true, 0, "StateSaveLocation"),
              state + ": writable by group and others (mode 0777); StateSaveLocation must be "
                      "writable only by root or SlurmUser root");
    // Sticky does not make the state directory itself acceptable.
    ASSERT_EQ(chmod(state.c_str(), 01777), 0);
    EXPECT_EQ(check(state, true, 0, "StateSaveLocation"),
              state + ": writable by group and others (mode 1777); StateSaveLocation must be "
                      "writable only by root or SlurmUser root");
    EXPECT_EQ(check(file_, true, 0, "StateSaveLocation"), file_ + ": not a directory");
    EXPECT_EQ(check(state, false), state + ": not a regular file");
}

TEST_F(TrustTest, SymlinkIsJudgedByItsTarget) {
    if (!root()) GTEST_SKIP() << "needs root";
    std::string sub = dir_ + "/open";
    ASSERT_EQ(mkdir(sub.c_str(), 0777), 0);
    ASSERT_EQ(chmod(sub.c_str(), 0777), 0);
    std::string target = sub + "/real.conf", link = dir_ + "/link.conf";
    std::ofstream(target) << "x\n";
    ASSERT_EQ(chmod(target.c_str(), 0644), 0);
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    EXPECT_EQ(check(link), link + " (resolves to " + target + "): directory " + sub +
                               " is writable by group and others (mode 0777), so gpupool.conf "
                               "could be replaced" + kRootMust);
}

// A link is judged where it lies as well as by its target: whoever may
// rename entries in a directory above the link, or owns the link, could
// point it at a file of their own however well the target is kept.
TEST_F(TrustTest, SymlinkIsJudgedWhereItLiesToo) {
    if (!root()) GTEST_SKIP() << "needs root";
    const std::string open = dir_ + "/open", group = dir_ + "/group", sticky = dir_ + "/sticky",
                      etc = dir_ + "/etc";
    for (const auto &[d, mode] : {std::pair{open, 0777}, {group, 0775}, {sticky, 01777}, {etc, 0755}}) {
        ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
        ASSERT_EQ(chmod(d.c_str(), static_cast<mode_t>(mode)), 0);
    }
    const std::string etc_file = etc + "/gpupool.conf";
    std::ofstream(etc_file) << "x\n";
    ASSERT_EQ(chmod(etc_file.c_str(), 0644), 0);
    auto link = [](const std::string &target, const std::string &at, uid_t owner = 0) {
        EXPECT_EQ(symlink(target.c_str(), at.c_str()), 0) << at;
        EXPECT_EQ(lchown(at.c_str(), owner, owner), 0) << at;
        return at;
    };
    auto resolves = [this](const std::string &p) { return p + " (resolves to " + file_ + ")"; };
    const std::string replaced = ", so gpupool.conf could be replaced" + kRootMust;

    struct Case {
        const char *sentence;
        std::string path;
        std::string why;
    };
    const std::vector<Case> cases = {
        {"a link in a directory writable by all is refused, naming that directory",
         link(file_, open + "/a.conf"),
         resolves(open + "/a.conf") + ": directory " + open + " is writable by group and others (mode 0777)" +
             replaced},
        {"so is one in a group-writable directory", link(file_, group + "/b.conf"),
         resolves(group + "/b.conf") + ": directory " + group + " is writable by group (mode 0775)" + replaced},
        {"a link in a trusted directory to a trusted target is accepted", link(file_, dir_ + "/c.conf"), ""},
        {"so is one with a relative target", link("gpupool.conf", dir_ + "/d.conf"), ""},
        {"a link owned by another user is refused, even in a trusted directory",
         link(file_, dir_ + "/e.conf", kStranger),
         resolves(dir_ + "/e.conf") + ": symbolic link " + dir_ + "/e.conf is owned by uid 54321" + replaced},
        {"a root-owned link in a sticky directory (as /tmp) is accepted: only its owner may replace it",
         link(file_, sticky + "/f.conf"), ""},
        // (Another user's link there is refused too, but where
        // fs.protected_symlinks is set root cannot even follow it.)
        {"each link of a chain is judged: a trusted link to an untrusted one is refused",
         link(link(file_, open + "/h.conf"), dir_ + "/h.conf"),
         resolves(dir_ + "/h.conf") + ": directory " + open + " is writable by group and others (mode 0777)" +
             replaced},
        {"a link to a directory on the way is judged too", link(etc, open + "/etc") + "/gpupool.conf",
         open + "/etc/gpupool.conf (resolves to " + etc_file + "): directory " + open +
             " is writable by group and others (mode 0777)" + replaced},
        {"and is accepted where it lies in a trusted directory", link(etc, dir_ + "/etc2") + "/gpupool.conf", ""},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.sentence);
        bool io = true;
        EXPECT_EQ(check_trusted_path(c.path, "gpupool.conf", 0, false, &io), c.why);
        EXPECT_FALSE(io);
    }
    // The file read is still the target, opened as before.
    int fd = -1;
    ASSERT_EQ(open_trusted_path(dir_ + "/c.conf", "gpupool.conf", 0, false, &fd), "");
    ASSERT_GE(fd, 0);
    close(fd);
    // The link's own directory is also judged by SlurmUser, not root only.
    ASSERT_EQ(chown(open.c_str(), kStranger, kStranger), 0);
    ASSERT_EQ(chmod(open.c_str(), 0755), 0);
    EXPECT_EQ(check(open + "/a.conf"), resolves(open + "/a.conf") + ": directory " + open +
                                           " is owned by uid 54321" + replaced);
    ASSERT_EQ(lchown((open + "/a.conf").c_str(), kStranger, kStranger), 0);
    EXPECT_EQ(check(open + "/a.conf", false, kStranger), "");
}

TEST_F(TrustTest, MissingPathAndCApi) {
    std::string missing = dir_ + "/nope.conf";
    bool io = false;
    EXPECT_EQ(check_trusted_path(missing, "gpupool.conf", 0, false, &io),
              missing + ": cannot check: No such file or directory");
    EXPECT_TRUE(io);

    char err[512] = "";
    EXPECT_EQ(gp_check_trusted_path(missing.c_str(), "gpupool.conf", 0, 0, err, sizeof(err)),
              GP_ERR_IO);
    EXPECT_EQ(std::string(err), missing + ": cannot check: No such file or directory");
    EXPECT_EQ(gp_check_trusted_path(nullptr, "x", 0, 0, err, sizeof(err)), GP_ERR_ARG);
    if (!root()) return;
    EXPECT_EQ(gp_check_trusted_path(file_.c_str(), "gpupool.conf", 0, 0, err, sizeof(err)),
              GP_OK);
    ASSERT_EQ(chmod(file_.c_str(), 0666), 0);
    EXPECT_EQ(gp_check_trusted_path(file_.c_str(), "gpupool.conf", 0, 0, err, sizeof(err)),
              GP_ERR_CONFIG);
    EXPECT_EQ(std::string(err),
              file_ + ": writable by group and others (mode 0666)" + kRootMust);
}

// The check and the read are one open.  A file renamed
// into gpupool.conf's place after the check is not what gets read: the
// descriptor that passed the check is.
TEST_F(TrustTest, TheFileReadIsTheFileChecked) {
    if (!root()) GTEST_SKIP() << "needs root";
    int fd = -1;
    ASSERT_EQ(open_trusted_path(file_, "gpupool.conf", 0, false, &fd), "");
    ASSERT_GE(fd, 0);
    const std::string other = dir_ + "/planted.conf";
    std::ofstream(other) << "Tier=planted Priority=9\n";
    ASSERT_EQ(rename(other.c_str(), file_.c_str()), 0);
    char buf[64] = "";
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "Tier=a Priority=1\n");
}

TEST_F(TrustTest, RefusedPathsLeaveNoDescriptor) {
    if (!root()) GTEST_SKIP() << "needs root";
    int fd = 7;
    ASSERT_EQ(chmod(file_.c_str(), 0664), 0);
    EXPECT_EQ(open_trusted_path(file_, "gpupool.conf", 0, false, &fd),
              file_ + ": writable by group (mode 0664)" + kRootMust);
    EXPECT_EQ(fd, -1);
    // A FIFO is refused at once, not waited on.
    const std::string fifo = dir_ + "/fifo.conf";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    EXPECT_EQ(open_trusted_path(fifo, "gpupool.conf", 0, false, &fd), fifo + ": not a regular file");
    EXPECT_EQ(fd, -1);
    EXPECT_EQ(check(dir_, true, 0, "StateSaveLocation"), "");
    EXPECT_EQ(check("/", true, 0, "StateSaveLocation"), "");
}

// The plugins' one call: checks, then parses what it checked.
TEST_F(TrustTest, LoadTrustedConfigFileCApi) {
    if (!root()) GTEST_SKIP() << "needs root";
    std::ofstream(file_) << "Tier=a Priority=1 Preemptible=no\nPool=p Quota=1\n";
    gp_engine_t *e = gp_engine_create();
    ASSERT_NE(e, nullptr);
    char err[512] = "";
    EXPECT_EQ(gp_engine_load_trusted_config_file(e, file_.c_str(), 0, err, sizeof err), GP_OK) << err;
    ASSERT_EQ(chmod(file_.c_str(), 0666), 0);
    EXPECT_EQ(gp_engine_load_trusted_config_file(e, file_.c_str(), 0, err, sizeof err), GP_ERR_CONFIG);
    EXPECT_EQ(std::string(err), file_ + ": writable by group and others (mode 0666)" + kRootMust);
    const std::string missing = dir_ + "/nope.conf";
    EXPECT_EQ(gp_engine_load_trusted_config_file(e, missing.c_str(), 0, err, sizeof err), GP_ERR_IO);
    ASSERT_EQ(chmod(file_.c_str(), 0644), 0);
    std::ofstream(file_) << "Pool=p Quota=lots\n";
    EXPECT_EQ(gp_engine_load_trusted_config_file(e, file_.c_str(), 0, err, sizeof err), GP_ERR_CONFIG);
    EXPECT_NE(std::string(err).find(file_ + ":1:"), std::string::npos) << err;
    gp_engine_destroy(e);
}
