// `gpupool version`: the Slurm release the plugins were built for, the
// command's libslurm and what slurmctld runs, and the exit status when
// they differ.
#include <gtest/gtest.h>

#include <sstream>

#include "version.hpp"

using namespace gpupool::cli;

namespace {
VersionInfo built_for_26_05() {
    VersionInfo v;
    v.gpupool = "0.1.0";
    v.plugins_slurm = "26.05.3";
    v.plugindir = "/usr/lib64/slurm";
    v.libslurm = (26u << 16) + (5u << 8) + 3u;
    return v;
}
std::string text(const VersionInfo &v, int &rc) {
    std::ostringstream out;
    rc = print_version(v, out);
    return out.str();
}
}  // namespace

TEST(Version, SlurmVersionNumbersAsSlurmWritesThem) {
    EXPECT_EQ(slurm_version_text(0x160508), "22.05.8");
    EXPECT_EQ(slurm_version_text(0x1a0503), "26.05.3");
    EXPECT_EQ(slurm_version_text(0x170b0b), "23.11.11");
}

TEST(Version, MatchingSlurmctld) {
    VersionInfo v = built_for_26_05();
    v.ctld_asked = true;
    v.ctld_slurm = "26.05.3";
    int rc = -1;
    EXPECT_EQ(text(v, rc),
              "gpupool 0.1.0\n"
              "plugins:   built for Slurm 26.05.3, in /usr/lib64/slurm (they load only into that release's slurmctld)\n"
              "command:   built against libslurm of Slurm 26.05.3\n"
              "slurmctld: Slurm 26.05.3, the plugins' release\n");
    EXPECT_EQ(rc, 0);
}

TEST(Version, AnotherSlurmctldFailsAndSaysWhatToDo) {
    VersionInfo v = built_for_26_05();
    v.ctld_asked = true;
    v.ctld_slurm = "25.11.7";
    int rc = -1;
    const std::string t = text(v, rc);
    EXPECT_NE(t.find("\nslurmctld: Slurm 25.11.7: not the plugins' release (26.05.3): slurmctld will not load them; "
                     "build gpupool against Slurm 25.11.7's source (admin guide, \"Upgrading Slurm\")\n"),
              std::string::npos)
        << t;
    EXPECT_EQ(rc, 1);
}

TEST(Version, NoSlurmConfOrNoControllerIsNotAnError) {
    VersionInfo v = built_for_26_05();
    int rc = -1;
    EXPECT_NE(text(v, rc).find("\nslurmctld: not asked (no slurm.conf here)\n"), std::string::npos);
    EXPECT_EQ(rc, 0);
    v.ctld_asked = true;
    v.ctld_error = "Unable to contact slurm controller (connect failure)";
    EXPECT_NE(text(v, rc).find("\nslurmctld: not reached (Unable to contact slurm controller (connect failure))\n"),
              std::string::npos);
    EXPECT_EQ(rc, 0);
}

TEST(Version, CommandAndPluginsOfDifferentReleasesFail) {
    VersionInfo v = built_for_26_05();
    v.libslurm = (22u << 16) + (5u << 8) + 8u;
    int rc = -1;
    EXPECT_NE(text(v, rc).find("command:   built against libslurm of Slurm 22.05.8: not the plugins' release (26.05.3)"),
              std::string::npos);
    EXPECT_EQ(rc, 1);
    v.plugins_slurm = "";
    EXPECT_NE(text(v, rc).find("plugins:   not built (configured without --with-slurm-source)\n"), std::string::npos);
    EXPECT_EQ(rc, 0);
}
