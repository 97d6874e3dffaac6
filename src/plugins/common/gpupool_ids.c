/*
 * gpupool_ids.c - arrays of records sorted by job id (see gpupool_ids.h).
 */
#include "config.h"

#include <string.h>

#include "src/common/xmalloc.h"

#include "gpupool_ids.h"

static uint32_t _id_at(const void *base, size_t size, size_t i)
{
	uint32_t id;

	memcpy(&id, (const char *) base + (i * size), sizeof(id));
	return id;
}

extern size_t gps_ids_find(const void *base, size_t cnt, size_t size,
			   uint32_t id, bool *found)
{
	size_t lo = 0, hi = cnt;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (_id_at(base, size, mid) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = (lo < cnt) && (_id_at(base, size, lo) == id);
	return lo;
}

extern void *gps_ids_insert(void **base, size_t *cnt, size_t *cap,
			    size_t size, size_t pos, uint32_t id)
{
	char *rec;

	if (*cnt == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		xrecalloc(*base, *cap, size);
	}
	rec = (char *) *base + (pos * size);
	memmove(rec + size, rec, (*cnt - pos) * size);
	memset(rec, 0, size);
	memcpy(rec, &id, sizeof(id));
	(*cnt)++;
	return rec;
}

extern void gps_ids_remove(void *base, size_t *cnt, size_t size, size_t pos)
{
	char *rec = (char *) base + (pos * size);

	memmove(rec, rec + size, (*cnt - pos - 1) * size);
	(*cnt)--;
}
