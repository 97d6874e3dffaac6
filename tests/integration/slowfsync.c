/*
 * slowfsync.c - LD_PRELOAD shim for the integration tests: an artificially
 * slow state directory.  fsync() and fdatasync() of a file whose path
 * (readlink /proc/self/fd/N) contains SLOWFSYNC_MATCH ["gpupool_state"]
 * first sleep SLOWFSYNC_SECONDS [5]; each stall is appended to
 * SLOWFSYNC_LOG (if set) as "start|end EPOCH.MS PATH".
 *   cc -shared -fPIC -o slowfsync.so slowfsync.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void _note(const char *what, const char *path)
{
	const char *log = getenv("SLOWFSYNC_LOG");
	struct timeval tv;
	char line[4200];
	int fd, n;

	if (!log)
		return;
	gettimeofday(&tv, NULL);
	n = snprintf(line, sizeof(line), "%s %ld.%03ld %s\n", what,
		     (long) tv.tv_sec, (long) (tv.tv_usec / 1000), path);
	if ((fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return;
	if (write(fd, line, n) < 0)
		;	/* a test helper: nothing to do about it */
	close(fd);
}

static void _maybe_stall(int fd)
{
	const char *match = getenv("SLOWFSYNC_MATCH");
	const char *secs = getenv("SLOWFSYNC_SECONDS");
	char link[64], path[4096];
	struct timespec ts;
	double s;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) < 0)
		return;
	path[n] = '\0';
	if (!strstr(path, match ? match : "gpupool_state"))
		return;
	s = secs ? atof(secs) : 5.0;
	ts.tv_sec = (time_t) s;
	ts.tv_nsec = (long) ((s - (double) ts.tv_sec) * 1e9);
	_note("start", path);
	while (nanosleep(&ts, &ts) != 0)
		;
	_note("end", path);
}

int fsync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int)) dlsym(RTLD_NEXT, "fsync");
	_maybe_stall(fd);
	return real(fd);
}

int fdatasync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int)) dlsym(RTLD_NEXT, "fdatasync");
	_maybe_stall(fd);
	return real(fd);
}
