/*
 * live-heap.so: preloaded into slurmctld by scripts/live-cost.sh in every
 * mode (native and gpupool alike), so that the script can ask slurmctld's
 * allocator, at the end of a run, what of the RSS is free memory it keeps.
 * gdb did this before, and on some virtual machines gdb cannot call into a
 * process ("Couldn't write extended state status").
 *
 * In slurmctld only (the processes it runs inherit the preload), a thread
 * polls for $LIVE_HEAP_DIR/request.PID (PID as the process sees it: a
 * forked child, slurmscriptd, has the thread too; twice a second, nothing
 * else).  When it appears, the thread writes the allocator's own account
 * to $LIVE_HEAP_DIR/before, gives free pages back (glibc: malloc_trim(0);
 * jemalloc: every arena purged through mallctl), writes the account again
 * to $LIVE_HEAP_DIR/after and creates $LIVE_HEAP_DIR/done.  Which
 * allocator: jemalloc when mallctl resolves (preloaded before this).
 *
 * Build: cc -O2 -shared -fPIC -o live-heap.so scripts/live-heap.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX - 64];	/* $LIVE_HEAP_DIR, read once in the constructor */

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef void (*malloc_stats_fn)(void (*)(void *, const char *), void *, const char *);

static void write_line(void *f, const char *s)
{
	fputs(s, (FILE *) f);
}

/* The allocator's account of its memory into `path`. */
static void account(const char *path, mallctl_fn mallctl)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	if (mallctl) {
		malloc_stats_fn stats = (malloc_stats_fn) dlsym(RTLD_DEFAULT, "malloc_stats_print");
		uint64_t epoch = 1;
		size_t sz = sizeof(epoch);

		mallctl("epoch", &epoch, &sz, &epoch, sz);
		if (stats)
			stats(write_line, f, "gmbla"); /* totals only */
	} else {
		malloc_info(0, f);
	}
	fclose(f);
}

static void give_back(mallctl_fn mallctl)
{
	if (mallctl) {
		/* MALLCTL_ARENAS_ALL is 4096 in jemalloc 5. */
		mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
	} else {
		malloc_trim(0);
	}
}

static void *watch(void *arg)
{
	char request[PATH_MAX], path[PATH_MAX];

	(void) arg;
	for (;;) {
		/* getpid() each time: the thread of a forked child asks its own. */
		snprintf(request, sizeof(request), "%s/request.%d", dir, (int) getpid());
		usleep(500000);
		if (access(request, F_OK))
			continue;
		unlink(request);
		mallctl_fn mallctl = (mallctl_fn) dlsym(RTLD_DEFAULT, "mallctl");
		snprintf(path, sizeof(path), "%s/before", dir);
		account(path, mallctl);
		give_back(mallctl);
		snprintf(path, sizeof(path), "%s/after", dir);
		account(path, mallctl);
		snprintf(path, sizeof(path), "%s/done", dir);
		FILE *f = fopen(path, "w");
		if (f)
			fclose(f);
	}
	return NULL;
}

static void spawn(void)
{
	pthread_t t;
	pthread_attr_t a;

	if (!dir[0])
		return;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &a, watch, NULL);
	pthread_attr_destroy(&a);
}

/*
 * slurmctld daemonizes with fork(): the thread is started again in the
 * child.  (pthread_create in an atfork child handler is not
 * async-signal-safe; glibc allows it, and slurmctld forks from one thread
 * when it daemonizes.)
 */
__attribute__((constructor)) static void start(void)
{
	const char *d = getenv("LIVE_HEAP_DIR");

	if (!d || !*d || strcmp(program_invocation_short_name, "slurmctld"))
		return;
	snprintf(dir, sizeof(dir), "%s", d);
	spawn();
	pthread_atfork(NULL, NULL, spawn);
}
