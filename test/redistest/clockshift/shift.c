/*
 * An LD_PRELOAD shim that moves a process's wall clock (CLOCK_REALTIME,
 * gettimeofday, time) by an offset another process can change while it runs:
 * the signed nanoseconds in the first 8 bytes of the file CLOCK_SHIFT_FILE
 * names, mapped shared. Monotonic clocks are left alone, so a program that
 * times itself by them (as redis-server does) keeps working: only what it
 * reports as the time of day moves. redistest.Shift builds and uses it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *shift_ns;
static int (*real_clock_gettime)(clockid_t, struct timespec *);

__attribute__((constructor)) static void init(void) {
	real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
	const char *path = getenv("CLOCK_SHIFT_FILE");
	if (path == NULL) {
		return;
	}
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		return;
	}
	void *m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m != MAP_FAILED) {
		shift_ns = m;
	}
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	if (real_clock_gettime == NULL) {
		real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
	}
	int r = real_clock_gettime(id, ts);
	if (r != 0 || shift_ns == NULL || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)) {
		return r;
	}
	int64_t ns = (int64_t)ts->tv_nsec + __atomic_load_n(shift_ns, __ATOMIC_RELAXED);
	ts->tv_sec += ns / 1000000000;
	ns %= 1000000000;
	if (ns < 0) {
		ns += 1000000000;
		ts->tv_sec--;
	}
	ts->tv_nsec = ns;
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	(void)tz;
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
		return -1;
	}
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t != NULL) {
		*t = ts.tv_sec;
	}
	return ts.tv_sec;
}
