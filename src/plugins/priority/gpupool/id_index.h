/*
 * id_index.h - job id -> position in a dense array, by open addressing
 * (linear probing, backward-shift deletion), in plain C with no Slurm
 * header so that the unit tests and benchmarks reach it too.
 *
 * array_throttle.c finds a job array record's cap for every pending job a
 * pass writes, under the job write lock: a linear search made that pending
 * jobs x capped arrays, too slow on large queues.  Slurm's xhash would serve, but
 * this stays the same over every Slurm release the plugins build for.
 */
#ifndef GPUPOOL_ID_INDEX_H
#define GPUPOOL_ID_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
	uint32_t id;
	uint32_t pos1; /* position + 1; 0: an empty slot */
} gpp_id_slot_t;

typedef struct {
	gpp_id_slot_t *slots;
	size_t cap;   /* a power of two, or 0 */
	size_t count;
} gpp_id_index_t;

static inline size_t gpp_id_hash(uint32_t id, size_t cap)
{
	return (size_t) ((id * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

/* The slot holding `id`, or the empty one where it would go. */
static inline size_t gpp_id_slot(const gpp_id_index_t *ix, uint32_t id)
{
	size_t i = gpp_id_hash(id, ix->cap);

	while (ix->slots[i].pos1 && ix->slots[i].id != id)
		i = (i + 1) & (ix->cap - 1);
	return i;
}

/* Position of `id`, or -1. */
static inline long gpp_id_find(const gpp_id_index_t *ix, uint32_t id)
{
	size_t i;

	if (!ix->cap)
		return -1;
	i = gpp_id_slot(ix, id);
	return ix->slots[i].pos1 ? (long) ix->slots[i].pos1 - 1 : -1;
}

/* Add or move `id` to `pos`; false if out of memory. */
static inline bool gpp_id_put(gpp_id_index_t *ix, uint32_t id, size_t pos)
{
	size_t i;

	if (2 * (ix->count + 1) > ix->cap) {
		gpp_id_index_t bigger = { NULL, ix->cap ? 2 * ix->cap : 16, 0 };
		size_t k;

		bigger.slots = (gpp_id_slot_t *) calloc(bigger.cap,
						       sizeof(*bigger.slots));
		if (!bigger.slots)
			return false;
		for (k = 0; k < ix->cap; k++) {
			if (!ix->slots[k].pos1)
				continue;
			bigger.slots[gpp_id_slot(&bigger, ix->slots[k].id)] =
				ix->slots[k];
			bigger.count++;
		}
		free(ix->slots);
		*ix = bigger;
	}
	i = gpp_id_slot(ix, id);
	if (!ix->slots[i].pos1)
		ix->count++;
	ix->slots[i].id = id;
	ix->slots[i].pos1 = (uint32_t) pos + 1;
	return true;
}

/* Remove `id` (if there): entries that probed past it move up. */
static inline void gpp_id_del(gpp_id_index_t *ix, uint32_t id)
{
	size_t i, j, home, mask = ix->cap - 1;

	if (!ix->cap)
		return;
	i = gpp_id_slot(ix, id);
	if (!ix->slots[i].pos1)
		return;
	for (j = (i + 1) & mask; ix->slots[j].pos1; j = (j + 1) & mask) {
		home = gpp_id_hash(ix->slots[j].id, ix->cap);
		if ((i <= j) ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		ix->slots[i] = ix->slots[j];
		i = j;
	}
	ix->slots[i].pos1 = 0;
	ix->count--;
}

static inline void gpp_id_free(gpp_id_index_t *ix)
{
	free(ix->slots);
	ix->slots = NULL;
	ix->cap = ix->count = 0;
}

#endif /* GPUPOOL_ID_INDEX_H */
