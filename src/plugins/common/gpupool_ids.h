/*
 * gpupool_ids.h - arrays of records kept sorted by job id, the first
 * member (uint32_t) of each record: the jobs gpupool holds, the jobs whose
 * partition list it narrowed.  Found by binary search, since a pass looks
 * up every pending job.  Callers lock them (the slurmctld job lock).
 */
#ifndef GPUPOOL_IDS_H
#define GPUPOOL_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Index of the record of `id` among the `cnt` records of `size` bytes at
 * `base`; *found false: where it would go.
 */
extern size_t gps_ids_find(const void *base, size_t cnt, size_t size,
			   uint32_t id, bool *found);

/*
 * Make room for a record at `pos` (xmalloc'd array, grown as needed) and
 * return it, zeroed but for its id.
 */
extern void *gps_ids_insert(void **base, size_t *cnt, size_t *cap,
			    size_t size, size_t pos, uint32_t id);

/* Remove the record at `pos`. */
extern void gps_ids_remove(void *base, size_t *cnt, size_t size, size_t pos);

#endif /* GPUPOOL_IDS_H */
