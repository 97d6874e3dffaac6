/*
 * gpupool_rules.c - Slurm's records -> the core's snapshot, each rule once
 * (see gpupool_rules.h).  Only Slurm's public header: the same code builds
 * into the plugins (against slurmctld's configured tree) and into the
 * gpupool command (against libslurm's installed headers).
 */
#include <string.h>

#include "slurm/slurm.h"

#include "gpupool.h"
#include "gpupool_rules.h"

extern bool gpr_node_unusable(uint32_t node_state)
{
	uint32_t base = node_state & NODE_STATE_BASE;
	bool busy = (base == NODE_STATE_ALLOCATED) || (base == NODE_STATE_MIXED);

	if ((base == NODE_STATE_DOWN) || (base == NODE_STATE_FUTURE))
		return true;
	/* Slurm's IS_NODE_DRAINED: drain set, not DRAINING (busy) */
	return (node_state & NODE_STATE_DRAIN) && !busy;
}

extern bool gpr_node_closed(uint32_t node_state)
{
	uint32_t base = node_state & NODE_STATE_BASE;

	/*
	 * What slurmctld leaves out of avail_node_bitmap (node_mgr.c
	 * _sync_bitmaps: drained or draining, failing, not responding), a
	 * node powering down, and an idle one asked to (POWER_DOWN:
	 * update_node() and make_node_avail() keep it out; POWER_DOWN_ASAP
	 * drains it too).  A busy node with POWER_DOWN may still take jobs
	 * (26.05 sets it on every node of a PowerDownOnIdle partition's
	 * jobs): open, so that it never blocks a plan.  Not NODE_STATE_RES:
	 * a reservation of some cores or GPUs leaves the rest to other jobs
	 * (the plugins look at whole-node reservations themselves).
	 */
	if ((node_state & NODE_STATE_POWER_DOWN) && (base == NODE_STATE_IDLE))
		return true;
	return node_state & (NODE_STATE_DRAIN | NODE_STATE_FAIL |
			     NODE_STATE_NO_RESPOND | NODE_STATE_POWERING_DOWN);
}

extern int gpr_job_state(uint32_t job_state)
{
	if (job_state & JOB_REVOKED)
		return -1;
	switch (job_state & JOB_STATE_BASE) {
	case JOB_PENDING:
		return GP_JOB_PENDING;
	case JOB_RUNNING:
		return GP_JOB_RUNNING;
	case JOB_SUSPENDED:
		return GP_JOB_SUSPENDED;
	default:
		/*
		 * Ended but still completing: priority_p_job_end has already
		 * given its GPUs back to the engine (so a quota-held job is
		 * admitted at once); counting it again until its epilog ends
		 * would undo that.  Slurm itself does not place jobs on its
		 * completing nodes.
		 */
		return -1;
	}
}

extern gpr_gpus_from_t gpr_gpus_from(bool allocated, bool tres_alloc,
				     bool tres_req, bool gres_alloc)
{
	if (allocated && tres_alloc)
		return GPR_GPUS_TRES_ALLOC;
	if (tres_req)
		return GPR_GPUS_TRES_REQ;
	if (allocated && gres_alloc)
		return GPR_GPUS_GRES_ALLOC;
	return GPR_GPUS_GRES_REQ;
}

extern uint64_t gpr_gpus_value(uint64_t cnt)
{
	return ((cnt == NO_VAL64) || (cnt == NO_CONSUME_VAL64)) ? 0 : cnt;
}

extern uint32_t gpr_gpus_clamp(uint64_t cnt)
{
	return (cnt > UINT32_MAX) ? UINT32_MAX : (uint32_t) cnt;
}

extern uint32_t gpr_array_pending_tasks(bool pending, uint32_t array_task_id,
					int64_t tasks)
{
	if (!pending || (array_task_id != NO_VAL) ||
	    (tasks <= 1))
		return 0;
	return (tasks > UINT32_MAX) ? UINT32_MAX : (uint32_t) tasks;
}

extern uint32_t gpr_array_startable_tasks(uint32_t pending, uint32_t user_max,
					  uint32_t running)
{
	uint32_t free_slots;

	if ((pending <= 1) || !user_max)
		return pending;
	free_slots = (user_max > running) ? user_max - running : 0;
	if (free_slots < 1)
		free_slots = 1;
	return (pending < free_slots) ? pending : free_slots;
}

extern int64_t gpr_submit_time(int64_t submit_time, int64_t now)
{
	return (submit_time > 0) ? submit_time : now;
}

extern int64_t gpr_run_limit(uint32_t time_limit, uint32_t part_max_time,
			     uint32_t time_slices)
{
	const int64_t year = 365 * 24 * 60 * 60;  /* Slurm's YEAR_SECONDS */
	uint32_t minutes = (time_limit != NO_VAL) ? time_limit : part_max_time;

	if ((minutes == INFINITE) || (minutes == NO_VAL))
		return year;
	return (int64_t) minutes * 60 * ((time_slices > 1) ? time_slices : 1);
}

extern bool gpr_hold_may_be_ours(bool pending, uint32_t priority,
				 bool direct_set_prio, uint32_t state_reason)
{
	if (!pending || (priority != 0) || direct_set_prio)
		return false;
	return (state_reason == WAIT_HELD) || (state_reason == WAIT_NO_REASON);
}

extern bool gpr_hold_text_is_ours(const char *state_desc)
{
	return state_desc &&
	       !strncmp(state_desc, GP_HOLD_PREFIX, strlen(GP_HOLD_PREFIX));
}

extern bool gpr_user_held(bool pending, uint32_t priority, bool ours)
{
	return pending && (priority == 0) && !ours;
}

extern bool gpr_not_eligible(uint32_t state_reason)
{
	switch (state_reason) {
	case WAIT_DEPENDENCY:
	case WAIT_DEP_INVALID:
	case WAIT_TIME:
	case WAIT_PART_DOWN:
	case WAIT_PART_INACTIVE:
		return true;
	default:
		return false;
	}
}

/* Is `name` (its first `len` bytes) one of comma-separated `list`'s? */
static bool _listed(const char *list, const char *name, size_t len)
{
	while (list && *list) {
		size_t n = strcspn(list, ",");

		if ((n == len) && !strncmp(list, name, len))
			return true;
		list += n;
		if (*list)
			list++;
	}
	return false;
}

extern int gpr_node_has_features(const char *constraint,
				 const char *node_features)
{
	const char *p = constraint;
	bool has = true;
	char op = '&';

	if (!p || !*p)
		return 1;
	if (strpbrk(p, "*[]()"))
		return -1;
	for (;;) {
		size_t len = strcspn(p, "&|,");
		bool one;

		if (!len)	/* leading or doubled: Slurm refuses it */
			return -1;
		one = _listed(node_features, p, len);
		has = (op == '|') ? (has || one) : (has && one);
		p += len;
		/* Slurm reads "a100&" as a100. */
		if (!*p || !p[1])
			return has ? 1 : 0;
		op = (*p == '|') ? '|' : '&';
		p++;
	}
}

extern bool gpr_name_listed(const char *names, const char *name)
{
	return name && *name && _listed(names, name, strlen(name));
}

extern bool gpr_lists_share(const char *some, const char *names)
{
	while (some && *some) {
		size_t n = strcspn(some, ",");

		if (n && _listed(names, some, n))
			return true;
		some += n;
		if (*some)
			some++;
	}
	return false;
}
