// The agent's pass timing (agent_timing.h).
#include <gtest/gtest.h>

#include "agent_timing.h"

TEST(AgentTiming, IntervalAndGap) {
  // Last pass at 1000, gap 1, RecalcInterval 30.
  EXPECT_FALSE(gpp_pass_due(1010, 1000, 1, 30, false, false, false));
  EXPECT_TRUE(gpp_pass_due(1030, 1000, 1, 30, false, false, false));
  EXPECT_TRUE(gpp_pass_due(1001, 1000, 1, 30, false, true, false));
  EXPECT_TRUE(gpp_pass_due(1001, 1000, 1, 30, false, false, true));
  EXPECT_FALSE(gpp_pass_due(1000, 1000, 2, 30, false, true, true));
  EXPECT_TRUE(gpp_pass_due(1000, 1000, 2, 30, true, false, false));
}

TEST(AgentTiming, ClockStepBackIsNoStall) {
  // A clock stepped back 600 s after the pass at 1000: a pass is due at
  // once, not 600 + 30 s later.
  EXPECT_TRUE(gpp_pass_due(400, 1000, 1, 30, false, false, false));
  EXPECT_TRUE(gpp_pass_due(999, 1000, 1, 30, false, true, false));
  EXPECT_TRUE(gpp_elapsed(400, 1000, 3600));  // state save too
}

TEST(AgentTiming, SubmitBurst) {
  // Submits at 1000: a burst until 1002 (SUBMIT_QUIET 2), over after.
  EXPECT_TRUE(gpp_submit_burst(1000, 1000, 2));
  EXPECT_TRUE(gpp_submit_burst(1001, 1000, 2));
  EXPECT_FALSE(gpp_submit_burst(1002, 1000, 2));
  // None yet, or a clock that went back: no burst (a pass is not held).
  EXPECT_FALSE(gpp_submit_burst(1000, INT64_MIN / 2, 2));
  EXPECT_FALSE(gpp_submit_burst(999, 1000, 2));
}

TEST(AgentTiming, StampReadInItsOwnSecondIsLookedAtAgain) {
  // A partition updated at 1000, read by a pass at 1000: another update
  // at 1000 leaves the stamp at 1000, so look again once 1000 is over.
  EXPECT_FALSE(gpp_stamp_unsettled(1000, 1000, 1000, 1000));
  EXPECT_TRUE(gpp_stamp_unsettled(1000, 1000, 1000, 1001));
  // Read at 1001, after its second: settled.
  EXPECT_FALSE(gpp_stamp_unsettled(1000, 1000, 1001, 1005));
  // The stamp moved: a change seen the usual way, not this one.
  EXPECT_FALSE(gpp_stamp_unsettled(1003, 1000, 1000, 1005));
}
