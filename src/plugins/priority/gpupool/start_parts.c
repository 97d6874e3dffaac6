/*
 * start_parts.c - a multi-partition job starts only where gpupool admits it
 * (see start_parts.h).
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "slurm/slurm.h"

#include "src/common/log.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"

#include "gpupool.h"
#include "gpupool_compat.h"
#include "gpupool_ids.h"
#include "gpupool_rules.h"
#include "start_parts.h"

/*
 * Jobs whose partition list gpupool narrowed, with the list their user
 * gave, by job id (sorted).  Protected by the slurmctld job write lock.
 */
typedef struct {
	uint32_t job_id;
	char *listed;
} narrowed_t;

static narrowed_t *narrowed = NULL;
static size_t narrowed_cnt = 0, narrowed_cap = 0;

static size_t _find_pos(uint32_t id, bool *found)
{
	return gps_ids_find(narrowed, narrowed_cnt, sizeof(*narrowed), id,
			    found);
}

static narrowed_t *_find(uint32_t id)
{
	bool found;
	size_t pos = _find_pos(id, &found);

	return found ? &narrowed[pos] : NULL;
}

static void _remember(uint32_t id, const char *listed)
{
	bool found;
	size_t pos = _find_pos(id, &found);
	narrowed_t *n;

	if (found) {
		if (xstrcmp(narrowed[pos].listed, listed)) {
			xfree(narrowed[pos].listed);
			narrowed[pos].listed = xstrdup(listed);
		}
		return;
	}
	n = gps_ids_insert((void **) &narrowed, &narrowed_cnt, &narrowed_cap,
			   sizeof(*narrowed), pos, id);
	n->listed = xstrdup(listed);
}

static void _forget(uint32_t id)
{
	bool found;
	size_t pos = _find_pos(id, &found);

	if (!found)
		return;
	xfree(narrowed[pos].listed);
	gps_ids_remove(narrowed, &narrowed_cnt, sizeof(*narrowed), pos);
}

static int _listed_count(const char *names)
{
	int n = 0;
	const char *p = names;

	while (p && *p) {
		const char *end = strchr(p, ',');
		if ((end ? end - p : (long) strlen(p)) > 0)
			n++;
		p = end ? end + 1 : NULL;
	}
	return n;
}

static int _same_name(void *x, void *key)
{
	part_record_t *part_ptr = x;

	return !xstrcmp(part_ptr->name, (char *) key);
}

/*
 * Partitions of `names` that exist and are not in `l` (partition read lock
 * held): their count; `append`: appended to `l`.
 */
static int _missing_parts(list_t *l, const char *names, bool append)
{
	part_record_t *part_ptr;
	char *copy = xstrdup(names), *tok, *save = NULL;
	int n = 0;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (list_find_first(l, _same_name, tok) ||
		    !(part_ptr = find_part_record(tok)))
			continue;
		n++;
		if (append)
			list_append(l, part_ptr);
	}
	xfree(copy);
	return n;
}

/*
 * Make the job's part_ptr_list the partitions of `names` (in place: Slurm
 * may hold an iterator over it), adding partitions only with the partition
 * lock.  Leaves it alone and returns false if it would be left empty.
 */
static bool _set_parts(job_record_t *job_ptr, const char *names,
		       bool part_locked, bool *changed)
{
	list_t *l = job_ptr->part_ptr_list;
	list_itr_t *it;
	part_record_t *part_ptr;
	int keep = 0, have = 0, add = 0;

	it = list_iterator_create(l);
	while ((part_ptr = list_next(it))) {
		have++;
		if (gpr_name_listed(names, part_ptr->name))
			keep++;
	}
	list_iterator_destroy(it);
	if (part_locked)
		add = _missing_parts(l, names, false);
	if ((keep == have) && !add)
		return true;	/* already so */
	if (!keep && !add)
		return false;

	it = list_iterator_create(l);
	while ((part_ptr = list_next(it)))
		if (!gpr_name_listed(names, part_ptr->name))
			list_delete_item(it);
	list_iterator_destroy(it);
	if (add) {
		(void) _missing_parts(l, names, true);
		/* Slurm's own order of a job's partitions */
		list_sort(l, priority_sort_part_tier);
	}
	if (!job_ptr->part_ptr ||
	    !list_find_first(l, _same_name, job_ptr->part_ptr->name))
		job_ptr->part_ptr = list_peek(l);
	/* Indexed like the list; only priority/multifactor fills it. */
	gps_job_priority_array_free(job_ptr);
	*changed = true;
	return true;
}

extern bool parts_apply(job_record_t *job_ptr, const gp_pending_result_t *r,
			bool part_locked, bool *changed)
{
	char *allowed;
	size_t len;
	int rc;
	bool ok;

	if (!job_ptr->part_ptr_list || !job_ptr->partition) {
		_forget(job_ptr->job_id);	/* one partition: no choice */
		return true;
	}
	if (!r->refused_pools) {
		parts_unrestrict(job_ptr, part_locked, changed);
		return true;
	}
	/* A pending job's string is the list its user gave. */
	len = strlen(job_ptr->partition) + 1;
	allowed = xmalloc(len);
	rc = gp_engine_start_partitions(gp_shared_engine(), job_ptr->job_id,
					job_ptr->partition, allowed, len);
	if (rc != GP_OK) {
		error("gpupool: JobId=%u: where may it start? %s",
		      job_ptr->job_id, gp_status_str(rc));
		xfree(allowed);
		return false;
	}
	ok = allowed[0] && _set_parts(job_ptr, allowed, part_locked, changed);
	if (ok && (_listed_count(allowed) < _listed_count(job_ptr->partition))) {
		if (!_find(job_ptr->job_id))
			debug("gpupool: JobId=%u may start in %s only (of %s): the others' quota is taken",
			      job_ptr->job_id, allowed, job_ptr->partition);
		_remember(job_ptr->job_id, job_ptr->partition);
	} else if (ok && part_locked) {
		_forget(job_ptr->job_id);	/* it has all it lists again */
	}
	xfree(allowed);
	return ok;
}

extern void parts_unrestrict(job_record_t *job_ptr, bool part_locked,
			     bool *changed)
{
	/* A narrower list until then is safe: it only starts it in fewer. */
	if (!part_locked)
		return;
	/* Also a job array task split off a narrowed record (no entry). */
	if (job_ptr->part_ptr_list && job_ptr->partition)
		(void) _set_parts(job_ptr, job_ptr->partition, true, changed);
	_forget(job_ptr->job_id);
}

extern void parts_left_queue(job_record_t *job_ptr, bool part_locked)
{
	narrowed_t *n = _find(job_ptr->job_id);
	char *listed, *str = NULL, *tok, *save = NULL;
	const char *first;
	bool changed = false;

	if (!n)
		return;
	listed = xstrdup(n->listed);
	if (part_locked && job_ptr->part_ptr_list)
		(void) _set_parts(job_ptr, listed, true, &changed);
	/* As rebuild_job_part_list() writes it: its partition first. */
	first = (job_ptr->part_ptr && job_ptr->part_ptr->name) ?
		job_ptr->part_ptr->name : NULL;
	if (first)
		str = xstrdup(first);
	for (tok = strtok_r(listed, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!first || xstrcmp(tok, first))
			xstrfmtcat(str, "%s%s", str ? "," : "", tok);
	if (str && xstrcmp(str, job_ptr->partition)) {
		xfree(job_ptr->partition);
		job_ptr->partition = str;
		str = NULL;
		changed = true;
	}
	xfree(str);
	xfree(listed);
	if (part_locked)
		_forget(job_ptr->job_id);
	if (changed)
		last_job_update = time(NULL);
}

extern void parts_sync(void)
{
	size_t i = narrowed_cnt;

	while (i-- > 0) {
		job_record_t *job_ptr = find_job_record(narrowed[i].job_id);
		if (!job_ptr || IS_JOB_FINISHED(job_ptr))
			_forget(narrowed[i].job_id);
		else if (!IS_JOB_PENDING(job_ptr))
			parts_left_queue(job_ptr, true);	/* forgets it */
	}
}

extern void parts_reapply(void)
{
	slurmctld_lock_t locks = { .job = WRITE_LOCK, .part = READ_LOCK };
	gp_engine_t *e = gp_shared_engine();
	uint32_t *ids;
	size_t i, cnt;
	bool changed = false;

	lock_slurmctld(locks);
	cnt = narrowed_cnt;
	ids = xcalloc(cnt ? cnt : 1, sizeof(uint32_t));
	for (i = 0; i < cnt; i++)
		ids[i] = narrowed[i].job_id;
	for (i = 0; i < cnt; i++) {
		job_record_t *job_ptr = find_job_record(ids[i]);
		gp_pending_result_t r;

		if (!job_ptr || !IS_JOB_PENDING(job_ptr))
			continue;
		if ((gp_engine_pending_result(e, ids[i], &r) != GP_OK) ||
		    (r.admission == GP_HELD_QUOTA))
			continue;
		(void) parts_apply(job_ptr, &r, true, &changed);
	}
	if (changed)
		last_job_update = time(NULL);
	unlock_slurmctld(locks);
	xfree(ids);
	if (cnt)
		debug("gpupool: partitions of %zu job(s) narrowed again after reconfigure",
		      cnt);
}

extern void parts_fini(void)
{
	size_t i;

	for (i = 0; i < narrowed_cnt; i++)
		xfree(narrowed[i].listed);
	xfree(narrowed);
	narrowed_cnt = narrowed_cap = 0;
}
