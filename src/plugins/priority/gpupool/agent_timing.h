/*
 * agent_timing.h - when the gpupool agent runs its next pass (pure, no
 * Slurm headers: tests/unit/agent_timing_test.cpp).
 *
 * Times are seconds of CLOCK_MONOTONIC: a wall clock stepped back X seconds
 * used to stop passes (and state saves) for X seconds.  A `now` before
 * `last` (a clock that went back anyway) counts as due, never as a wait.
 */
#ifndef GPUPOOL_AGENT_TIMING_H
#define GPUPOOL_AGENT_TIMING_H

#include <stdbool.h>
#include <stdint.h>

/* At least `period` seconds since `last`, or time ran backwards. */
static inline bool gpp_elapsed(int64_t now, int64_t last, int64_t period)
{
	return (now < last) || (now - last >= period);
}

/*
 * Is a pass due?  reconfig: at once; woken (a priority hook) or slurmctld
 * state changed: after the least gap since the last pass; otherwise every
 * RecalcInterval.
 */
static inline bool gpp_pass_due(int64_t now, int64_t last_pass, int64_t gap,
				int64_t interval, bool reconfig, bool woken,
				bool state_changed)
{
	if (reconfig)
		return true;
	if ((woken || state_changed) && gpp_elapsed(now, last_pass, gap))
		return true;
	return gpp_elapsed(now, last_pass, interval);
}

/*
 * Jobs are being submitted in a burst: the last submit was less than
 * `quiet` seconds ago.  A pass then waits for the burst to pause, or for
 * RecalcInterval since the last pass (the caller's test): each submit has
 * been placed and admitted against the quota left already
 * (gp_engine_provisional), so a pass per second during a burst only
 * re-sorts a queue that keeps growing, under slurmctld's job write lock
 * that the submits wait for.
 */
static inline bool gpp_submit_burst(int64_t now, int64_t last_submit,
				    int64_t quiet)
{
	return (now >= last_submit) && (now - last_submit < quiet);
}

/*
 * A stamp of whole seconds (last_part_update) that was read in the second
 * it names may change again within that second and stay equal: once that
 * second is over, look again, once.  stamp: the stamp now; seen: what the
 * last pass read; read_at: the wall second it read it in; now: the wall
 * second now.
 */
static inline bool gpp_stamp_unsettled(int64_t stamp, int64_t seen,
				       int64_t read_at, int64_t now)
{
	return (stamp == seen) && (seen >= read_at) && (now > read_at);
}

#endif
