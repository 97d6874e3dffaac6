// Unit tests of the account queues' gpupool.conf settings: QuotaTRES lists,
// ReclaimTo=, quotas in TRES syntax and Account= records, as slurmctld and
// the gpupool command load them.
#include "config.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

using namespace gpupool;

namespace {

// One tier, on line 1, so that the tests only add what they test (line 2 on).
const std::string kTier = "Tier=t Priority=1 Preemptible=no\n";

// The message of the ConfigError that parsing `text` throws, or
// "<no error>" when it parses.
std::string error_of(const std::string &text) {
    try {
        parse_config(text, "gp.conf");
    } catch (const ConfigError &e) {
        return e.what();
    }
    return "<no error>";
}

std::string levels_error_of(const std::string &text) { return error_of(text); }

Config levels(const std::string &text) { return parse_config(text, "gp.conf"); }

std::string srcdir() {
    const char *d = std::getenv("srcdir");
    return d ? d : ".";
}

const std::string kTwoPools = kTier + "QuotaTRES=gres/gpu,cpu,mem\nPool=a100 Quota=8\nPool=l40s Quota=4\n";

}  // namespace

// ------------------------------------------------------------ QuotaTRES

TEST(QuotaTresList, TheFirstItemIsTheGpuTresAndTheRestAreCounted) {
    Config c = levels("QuotaTRES=gres/gpu,cpu,mem\n" + kTier);
    EXPECT_EQ(c.quota_tres, "gres/gpu");
    EXPECT_EQ(c.counted, (std::array<bool, kResources>{{true, true, true}}));
    c = levels("QuotaTRES=gres/gpu:a100,mem\n" + kTier);
    EXPECT_EQ(c.quota_tres, "gres/gpu:a100");
    EXPECT_EQ(c.counted, (std::array<bool, kResources>{{true, false, true}}));
}

TEST(QuotaTresList, CpuAndMemMayComeInEitherOrder) {
    EXPECT_EQ(levels("QuotaTRES=gres/gpu,mem,cpu\n" + kTier).counted,
              (std::array<bool, kResources>{{true, true, true}}));
    EXPECT_EQ(levels("QuotaTRES=gres/gpu,cpu\n" + kTier).counted,
              (std::array<bool, kResources>{{true, true, false}}));
}

TEST(QuotaTresList, ASingleValueCountsGpusOnlyAsBefore) {
    {
        Config c = parse_config("QuotaTRES=gres/gpu:h100\n" + kTier, "gp.conf");
        EXPECT_EQ(c.quota_tres, "gres/gpu:h100");
        EXPECT_EQ(c.counted, (std::array<bool, kResources>{{true, false, false}}));
        EXPECT_EQ(parse_config(kTier, "gp.conf").counted, (std::array<bool, kResources>{{true, false, false}}));
    }
}

TEST(QuotaTresList, AResourceListedTwiceIsAnError) {
    EXPECT_EQ(levels_error_of("QuotaTRES=gres/gpu,cpu,cpu\n" + kTier),
              "gp.conf:1: bad value 'gres/gpu,cpu,cpu' for QuotaTRES: cpu listed twice");
    EXPECT_EQ(levels_error_of("QuotaTRES=gres/gpu,mem,cpu,mem\n" + kTier),
              "gp.conf:1: bad value 'gres/gpu,mem,cpu,mem' for QuotaTRES: mem listed twice");
}

TEST(QuotaTresList, AnythingButCpuOrMemAfterTheGpuTresIsAnError) {
    for (const char *v : {"gres/gpu,disk", "gres/gpu,", "gres/gpu,,cpu", "gres/gpu,gres/gpu", "gres/gpu,CPU",
                          "cpu,gres/gpu", "mem", ",gres/gpu"})
        EXPECT_EQ(levels_error_of(std::string("QuotaTRES=") + v + "\n" + kTier),
                  std::string("gp.conf:1: bad value '") + v + "' for QuotaTRES: expected gres/gpu or gres/gpu:TYPE");
}

TEST(QuotaTresList, ThePublicParseCountsCpuAndMemNowThatThePluginsPassThem) {
    EXPECT_EQ(parse_config("QuotaTRES=gres/gpu,cpu,mem\n" + kTier, "gp.conf").counted,
              (std::array<bool, kResources>{{true, true, true}}));
    EXPECT_EQ(parse_config(kTier + "QuotaTRES=gres/gpu:a100,mem\n", "gp.conf").counted,
              (std::array<bool, kResources>{{true, false, true}}));
}

// ------------------------------------------------------------ ReclaimTo

TEST(ReclaimToKey, DefaultsToQuotaWhichThePublicParseAccepts) {
    EXPECT_EQ(parse_config(kTier, "gp.conf").reclaim_to, ReclaimTo::Quota);
    EXPECT_EQ(parse_config("ReclaimTo=quota\n" + kTier, "gp.conf").reclaim_to, ReclaimTo::Quota);
    EXPECT_EQ(parse_config("reclaimto=QUOTA\n" + kTier, "gp.conf").reclaim_to, ReclaimTo::Quota);
}

TEST(ReclaimToKey, FairshareParsesWithAndWithoutLevels) {
    EXPECT_EQ(levels("ReclaimTo=Fairshare\n" + kTier).reclaim_to, ReclaimTo::Fairshare);
    EXPECT_EQ(parse_config(kTier + "ReclaimTo=fairshare\n", "gp.conf").reclaim_to, ReclaimTo::Fairshare);
}

TEST(ReclaimToKey, AnotherWordIsAnError) {
    EXPECT_EQ(levels_error_of("ReclaimTo=fair\n" + kTier),
              "gp.conf:1: bad value 'fair' for ReclaimTo: expected quota or fairshare");
    EXPECT_EQ(levels_error_of("ReclaimTo=quota ReclaimTo=fairshare\n" + kTier),
              "gp.conf:1: duplicate key 'ReclaimTo' (first set on line 1)");
}

// ------------------------------------------------------------ Pool quotas

TEST(PoolQuotaTres, TresSyntaxGivesTheGpusAsANumberDoes) {
    {
        Config c = parse_config(kTier + "Pool=a Quota=gres/gpu=8\nPool=b Quota=3\n", "gp.conf");
        EXPECT_EQ(c.pools[0].quota, 8u);
        EXPECT_EQ(c.pools[0].quota_by_resource.get(kGpu), 8u);
        EXPECT_FALSE(c.pools[0].quota_by_resource.has(kCpu));
        EXPECT_EQ(c.pools[1].quota, 3u);
        EXPECT_TRUE(c.pools[1].quota_by_resource.has(kGpu));
        EXPECT_EQ(c.pools[1].quota_by_resource.get(kGpu), 3u);
        EXPECT_FALSE(c.pools[1].quota_by_resource.has(kMem));
    }
}

TEST(PoolQuotaTres, TheGpuTresMayBeTheTypedOneOrGresGpu) {
    Config c = parse_config(kTier + "Pool=a Quota=gres/gpu:a100=6\nPool=b Quota=gres/gpu=2\nQuotaTRES=gres/gpu:a100\n",
                            "gp.conf");
    EXPECT_EQ(c.pools[0].quota, 6u);
    EXPECT_EQ(c.pools[1].quota, 2u);
}

TEST(PoolQuotaTres, CpuAndMemParseWithLevelsWhenCounted) {
    Config c = levels(kTier + "Pool=a Quota=gres/gpu=8,cpu=256,mem=2T\nQuotaTRES=gres/gpu,cpu,mem\n");
    EXPECT_EQ(c.pools[0].quota, 8u);
    EXPECT_EQ(c.pools[0].quota_by_resource.get(kCpu), 256u);
    EXPECT_EQ(c.pools[0].quota_by_resource.get(kMem), 2u << 20);
}

TEST(PoolQuotaTres, ThePublicParseTakesCpuAndMemInAPoolQuotaThatQuotaTresCounts) {
    Config c = parse_config("QuotaTRES=gres/gpu,cpu,mem\n" + kTier + "Pool=a100 Quota=gres/gpu=8,cpu=256,mem=1G\n",
                            "gp.conf");
    EXPECT_EQ(c.pools[0].quota_by_resource.get(kCpu), 256u);
    EXPECT_EQ(c.pools[0].quota_by_resource.get(kMem), 1024u);
    EXPECT_EQ(error_of(kTier + "Pool=a100 Quota=gres/gpu=8,cpu=256\n"),
              "gp.conf:2: Quota=gres/gpu=8,cpu=256 in Pool=a100 names cpu, which QuotaTRES does not count "
              "(gres/gpu only): add cpu to QuotaTRES or remove it from Quota=");
}

TEST(PoolQuotaTres, AResourceQuotaTresDoesNotCountIsAnError) {
    EXPECT_EQ(levels_error_of("QuotaTRES=gres/gpu,mem\n" + kTier + "Pool=a Quota=gres/gpu=8,cpu=4\n"),
              "gp.conf:3: Quota=gres/gpu=8,cpu=4 in Pool=a names cpu, which QuotaTRES does not count "
              "(gres/gpu only, line 1): add cpu to QuotaTRES or remove it from Quota=");
    EXPECT_EQ(levels_error_of(kTier + "Pool=a Quota=gres/gpu=8,mem=4G\n"),
              "gp.conf:2: Quota=gres/gpu=8,mem=4G in Pool=a names mem, which QuotaTRES does not count "
              "(gres/gpu only): add mem to QuotaTRES or remove it from Quota=");
}

TEST(PoolQuotaTres, ATresQuotaMustNameTheGpus) {
    EXPECT_EQ(levels_error_of("QuotaTRES=gres/gpu,cpu\n" + kTier + "Pool=a Quota=cpu=8\n"),
              "gp.conf:3: Quota=cpu=8 in Pool=a gives no GPUs: write gres/gpu=N first (0 for none)");
}

TEST(PoolQuotaTres, BadTresOrTooManyGpusAreErrors) {
    EXPECT_EQ(error_of(kTier + "Pool=a Quota=gres/gpu=x\n"),
              "gp.conf:2: bad value 'gres/gpu=x' for Quota in Pool=a: 'gres/gpu=x': not a whole number");
    EXPECT_EQ(error_of(kTier + "Pool=a Quota=gres/mps=2\n"),
              "gp.conf:2: bad value 'gres/mps=2' for Quota in Pool=a: 'gres/mps=2': not a TRES a quota counts "
              "(gres/gpu, cpu, mem)");
    EXPECT_EQ(error_of(kTier + "Pool=a Quota=gres/gpu=4294967296\n"),
              "gp.conf:2: bad value 'gres/gpu=4294967296' for Quota in Pool=a: more than 4294967295 GPUs");
    EXPECT_EQ(parse_config(kTier + "Pool=a Quota=gres/gpu=4294967295\n", "gp.conf").pools[0].quota, 4294967295u);
}

// ------------------------------------------------------------ Account records

TEST(AccountRecords, EveryKeyParsesIntoTheAccountQuota) {
    Config c = levels(kTwoPools +
                      "Account=astro Pool=a100 Quota=gres/gpu=10,cpu=96,mem=768G Weight=2 "
                      "Limit=gres/gpu=24,cpu=128 LendingLimit=gres/gpu=4\n");
    ASSERT_EQ(c.accounts.size(), 1u);
    const AccountQuota &a = c.accounts[0];
    EXPECT_EQ(a.account, "astro");
    EXPECT_EQ(a.pool, "a100");
    EXPECT_EQ(a.line, 5);
    EXPECT_EQ(format_resource_amounts(a.quota, c.quota_tres), "gres/gpu=10,cpu=96,mem=768G");
    EXPECT_EQ(a.weight, 2u);
    EXPECT_TRUE(a.weight_given);
    EXPECT_EQ(format_resource_amounts(a.limit, c.quota_tres), "gres/gpu=24,cpu=128");
    EXPECT_EQ(format_resource_amounts(a.lending_limit, c.quota_tres), "gres/gpu=4");
}

TEST(AccountRecords, KeysAreCaseInsensitive) {
    Config c = levels(kTwoPools + "account=qcd POOL=a100 quota=6 WEIGHT=3 limit=8 lendinglimit=2\n");
    ASSERT_EQ(c.accounts.size(), 1u);
    EXPECT_EQ(c.accounts[0].account, "qcd");
    EXPECT_EQ(c.accounts[0].quota.get(kGpu), 6u);
    EXPECT_EQ(c.accounts[0].weight, 3u);
    EXPECT_EQ(c.accounts[0].limit.get(kGpu), 8u);
    EXPECT_EQ(c.accounts[0].lending_limit.get(kGpu), 2u);
}

TEST(AccountRecords, WithoutQuotaAnAccountHasZeroOfEveryCountedResource) {
    Config c = levels(kTwoPools + "Account=imaging Pool=a100\n");
    const AccountQuota &a = c.accounts[0];
    for (Resource r : {kGpu, kCpu, kMem}) {
        EXPECT_TRUE(a.quota.has(r)) << resource_name(r);
        EXPECT_EQ(a.quota.get(r), 0u) << resource_name(r);
    }
    EXPECT_EQ(a.weight, 1u);
    EXPECT_FALSE(a.weight_given);
    EXPECT_TRUE(a.limit.empty());
    EXPECT_TRUE(a.lending_limit.empty());
    // Only what QuotaTRES counts.
    Config g = levels(kTier + "Pool=p Quota=1\nAccount=imaging Pool=p\n");
    EXPECT_TRUE(g.accounts[0].quota.has(kGpu));
    EXPECT_FALSE(g.accounts[0].quota.has(kCpu));
    EXPECT_FALSE(g.accounts[0].quota.has(kMem));
}

TEST(AccountRecords, AQuotaGivesOnlyWhatItNames) {
    Config c = levels(kTwoPools + "Account=qcd Pool=a100 Quota=gres/gpu=6\nAccount=bio Pool=a100 Quota=4\n");
    EXPECT_EQ(format_resource_amounts(c.accounts[0].quota, c.quota_tres), "gres/gpu=6");
    EXPECT_EQ(format_resource_amounts(c.accounts[1].quota, c.quota_tres), "gres/gpu=4");
}

TEST(AccountRecords, TheTypedGpuTresOfQuotaTresNamesTheGpus) {
    Config c = levels(kTier + "Pool=p Quota=8\nAccount=qcd Pool=p Quota=gres/gpu:a100=6\nQuotaTRES=gres/gpu:a100\n");
    EXPECT_EQ(c.accounts[0].quota.get(kGpu), 6u);
}

TEST(AccountRecords, PoolMayBeDefinedLaterOrBeEveryPool) {
    Config c = levels(kTier + "Account=protein Pool=* Quota=4\nAccount=qcd Pool=a100 Quota=2\nPool=a100 Quota=8\n");
    ASSERT_EQ(c.accounts.size(), 2u);
    EXPECT_EQ(c.accounts[0].pool, "*");
    EXPECT_EQ(c.accounts[1].pool, "a100");
}

TEST(AccountRecords, AnExplicitPoolEntryBesideAStarEntryIsKept) {
    Config c = levels(kTwoPools + "Account=protein Pool=* Quota=4\nAccount=protein Pool=a100 Quota=2\n");
    ASSERT_EQ(c.accounts.size(), 2u);
    EXPECT_EQ(c.accounts[0].pool, "*");
    EXPECT_EQ(c.accounts[1].pool, "a100");
    EXPECT_EQ(c.accounts[1].quota.get(kGpu), 2u);
}

TEST(AccountRecords, ThePublicParseTakesAccountRecordsNowThatThePluginsPassAccounts) {
    Config c = parse_config(kTier + "Pool=a100 Quota=8\nAccount=qcd Pool=a100 Quota=6\nAccount=protein Pool=*\n",
                            "gp.conf");
    ASSERT_EQ(c.accounts.size(), 2u);
    EXPECT_EQ(c.accounts[0].account, "qcd");
    EXPECT_EQ(c.accounts[0].quota.get(kGpu), 6u);
    EXPECT_EQ(c.accounts[1].pool, "*");
    EXPECT_EQ(error_of(kTier + "ACCOUNT=qcd\n"), "gp.conf:2: missing required key 'Pool' in Account=qcd");
}

TEST(AccountErrors, APoolThatNoRecordDefinesIsAnError) {
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=h100 Quota=6\n"),
              "gp.conf:5: Pool=h100 in Account=qcd names no Pool= record (define it, or write Pool=* for every pool)");
}

TEST(AccountErrors, PoolIsRequired) {
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Quota=6\n"),
              "gp.conf:5: missing required key 'Pool' in Account=qcd");
}

TEST(AccountErrors, TheSameAccountAndPoolTwiceIsAnError) {
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=a100\nAccount=astro Pool=a100\nAccount=qcd Pool=a100\n"),
              "gp.conf:7: duplicate Account=qcd Pool=a100 (first defined on line 5)");
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=*\nAccount=qcd Pool=*\n"),
              "gp.conf:6: duplicate Account=qcd Pool=* (first defined on line 5)");
}

TEST(AccountErrors, AResourceQuotaTresDoesNotCountIsAnErrorNamingIt) {
    const std::string gpu_only = kTier + "Pool=p Quota=8\n";
    EXPECT_EQ(levels_error_of(gpu_only + "Account=qcd Pool=p Quota=gres/gpu=2,cpu=8\n"),
              "gp.conf:3: Quota=gres/gpu=2,cpu=8 in Account=qcd Pool=p names cpu, which QuotaTRES does not count "
              "(gres/gpu only): add cpu to QuotaTRES or remove it from Quota=");
    EXPECT_EQ(levels_error_of(gpu_only + "Account=qcd Pool=p Limit=mem=8G\n"),
              "gp.conf:3: Limit=mem=8G in Account=qcd Pool=p names mem, which QuotaTRES does not count "
              "(gres/gpu only): add mem to QuotaTRES or remove it from Limit=");
    EXPECT_EQ(levels_error_of("QuotaTRES=gres/gpu,mem\n" + gpu_only + "Account=qcd Pool=p LendingLimit=cpu=0\n"),
              "gp.conf:4: LendingLimit=cpu=0 in Account=qcd Pool=p names cpu, which QuotaTRES does not count "
              "(gres/gpu only, line 1): add cpu to QuotaTRES or remove it from LendingLimit=");
}

TEST(AccountErrors, ABadTresValueIsAnErrorNamingKeyAndValue) {
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=a100 Quota=gres/gpu=6,cpu=1.5\n"),
              "gp.conf:5: bad value 'gres/gpu=6,cpu=1.5' for Quota in Account=qcd Pool=a100: 'cpu=1.5': not a whole "
              "number");
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=a100 Limit=gres/gpu=6,gres/gpu=7\n"),
              "gp.conf:5: bad value 'gres/gpu=6,gres/gpu=7' for Limit in Account=qcd Pool=a100: 'gres/gpu=7': "
              "given twice");
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=a100 LendingLimit=mem=4X\n"),
              "gp.conf:5: bad value 'mem=4X' for LendingLimit in Account=qcd Pool=a100: 'mem=4X': unknown memory "
              "suffix (K, M, G, T or P)");
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=a100 Weight=-1\n"),
              "gp.conf:5: bad value '-1' for Weight: expected an integer 0..4294967295");
}

TEST(AccountErrors, ALimitBelowTheQuotaIsAnError) {
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=astro Pool=a100 Quota=gres/gpu=10,mem=1T Limit=mem=512G\n"),
              "gp.conf:5: Limit=mem=512G in Account=astro Pool=a100 is below the quota: mem=512G < mem=1T");
    // A limit equal to the quota, or on a resource the quota does not give, is fine.
    Config c = levels(kTwoPools + "Account=astro Pool=a100 Quota=gres/gpu=10 Limit=gres/gpu=10,cpu=4\n");
    EXPECT_EQ(c.accounts[0].limit.get(kCpu), 4u);
}

TEST(AccountErrors, ALendingLimitAboveTheQuotaIsAnError) {
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=genomics Pool=a100 Quota=gres/gpu=8 LendingLimit=gres/gpu=9\n"),
              "gp.conf:5: LendingLimit=gres/gpu=9 in Account=genomics Pool=a100 is above the quota (a queue lends "
              "only what it is guaranteed): gres/gpu=9 > gres/gpu=8");
    // The quota does not give cpu: there is nothing of it to lend.
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=genomics Pool=a100 Quota=gres/gpu=8 LendingLimit=cpu=1\n"),
              "gp.conf:5: LendingLimit=cpu=1 in Account=genomics Pool=a100 is above the quota (a queue lends "
              "only what it is guaranteed): cpu=1 > cpu=0");
    EXPECT_EQ(levels(kTwoPools + "Account=genomics Pool=a100 Quota=8 LendingLimit=8\n").accounts[0]
                  .lending_limit.get(kGpu),
              8u);
}

TEST(AccountErrors, AccountNamesAreSlurmsLowerCaseNames) {
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=Physics Pool=a100\n"),
              "gp.conf:5: bad name 'Physics' for Account: Slurm account names are lower case; write 'physics'");
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=a/b Pool=a100\n"),
              "gp.conf:5: bad name 'a/b' for Account: names may contain only letters, digits, '_', '-' and '.'");
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=a:b\n"),
              "gp.conf:5: bad name 'a:b' for Pool: names may contain only letters, digits, '_', '-' and '.'");
    EXPECT_EQ(levels(kTwoPools + "Account=dept-1.x_y Pool=a100\n").accounts[0].account, "dept-1.x_y");
}

TEST(AccountErrors, UnknownOrRepeatedKeysAreErrors) {
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=a100 MinRuntime=10\n"),
              "gp.conf:5: unknown key 'MinRuntime' in Account=qcd");
    EXPECT_EQ(levels_error_of(kTwoPools + "Account=qcd Pool=a100 quota=1 Quota=2\n"),
              "gp.conf:5: duplicate key 'Quota' in Account=qcd");
    EXPECT_EQ(levels_error_of(kTwoPools + "MinRuntime=10 Account=qcd Pool=a100\n"),
              "gp.conf:5: Account= must be the first token on its line");
}

// ------------------------------------------------------------ the shipped example

TEST(DepartmentsExample, LoadsWithLevelsAllowed) {
    const std::string path = srcdir() + "/etc/gpupool-departments.conf";
    Config c = load_config_file(path, nullptr);
    EXPECT_EQ(c.quota_tres, "gres/gpu");
    EXPECT_EQ(c.counted, (std::array<bool, kResources>{{true, true, false}}));
    EXPECT_EQ(c.reclaim_to, ReclaimTo::Fairshare);
    ASSERT_EQ(c.pools.size(), 2u);
    EXPECT_EQ(c.find_pool("pool1")->quota, 4u);
    EXPECT_EQ(c.find_pool("pool1")->quota_by_resource.get(kCpu), 8u);
    EXPECT_EQ(c.find_pool("pool3")->quota, 2u);
    ASSERT_EQ(c.accounts.size(), 9u);
    EXPECT_EQ(c.accounts[0].account, "physics");
    EXPECT_EQ(format_resource_amounts(c.accounts[0].quota, c.quota_tres), "gres/gpu=2,cpu=4");
    const AccountQuota &astro = c.accounts[5];
    EXPECT_EQ(astro.account, "astro");
    EXPECT_EQ(astro.weight, 2u);
    EXPECT_EQ(astro.limit.get(kGpu), 3u);
    const AccountQuota &genomics = c.accounts[6];
    EXPECT_EQ(genomics.account, "genomics");
    EXPECT_TRUE(genomics.lending_limit.has(kGpu));
    EXPECT_EQ(genomics.lending_limit.get(kGpu), 0u);
    const AccountQuota &protein = c.accounts[8];
    EXPECT_EQ(protein.account, "protein");
    EXPECT_EQ(protein.pool, "*");
    // Projects give GPUs only: their department caps their CPUs.
    EXPECT_FALSE(protein.quota.has(kCpu));
}

TEST(DepartmentsExample, LoadsFromAFileAndFromADescriptorAlike) {
    const std::string path = srcdir() + "/etc/gpupool-departments.conf";
    EXPECT_EQ(load_config_file(path).reclaim_to, ReclaimTo::Fairshare);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(load_config_fd(fd, path, nullptr).accounts.size(), 9u);
    ::close(fd);
}
