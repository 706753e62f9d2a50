/* SPDX-License-Identifier: MIT */
/*
 * common.h - what every stage of the library may use, and nothing of any
 * stage's own: one log line, mkdir -p, the clocks in nanoseconds and the
 * deadlines of timed waits, the recorder threads' policy, branch hints,
 * the FNV-1a hash.  Not
 * installed; the dial9 command links these from libdial9.a too.
 */
#ifndef DIAL9_COMMON_H
#define DIAL9_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define D9_LIKELY(x) __builtin_expect(!!(x), 1)
#define D9_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define D9_CACHELINE 64

#define D9_NS_PER_MS 1000000ull
#define D9_NS_PER_SEC 1000000000ull

/* One line on stderr, prefixed "dial9: " (log.c). */
void d9_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* mkdir -p: every missing directory of @path, created with @mode (fs.c). */
int d9_mkdirs(const char *path, mode_t mode);
/* 0 if the directory open at @fd is one this process may write its files
 * into: a directory owned by the effective uid that no other user or
 * group can write; else -ENOTDIR/-EPERM/-EACCES, said in the log (fs.c). */
int d9_dir_check(int fd, const char *path);
/* @path created as mkdir -p (@mode) if missing, opened O_DIRECTORY and
 * checked with d9_dir_check: its descriptor, or -errno (fs.c). */
int d9_dir_open_own(const char *path, mode_t mode);
/* A small file (/proc, /sys) into buf, NUL-terminated, at most len - 1
 * bytes in one read: 0, -errno, or -EIO if it read nothing (fs.c). */
int d9_read_small(const char *path, char *buf, size_t len);

/*
 * The calling thread, one of the recorder's, made SCHED_BATCH: its
 * wake-ups wait for the running task's block or tick instead of
 * preempting it, so the recorder is no cause of the delays it records;
 * 0 or -errno (thread.c).
 */
int d9_thread_background(void);

/* ---- the clocks, and deadlines for pthread_cond_timedwait (time.c) ---- */
static inline uint64_t d9_clock_gettime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * D9_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline uint64_t d9_clock_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * D9_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline struct timespec d9_ns_timespec(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / D9_NS_PER_SEC),
			       (long)(ns % D9_NS_PER_SEC) };

	return ts;
}

/*
 * CLOCK_MONOTONIC @ms from now, as the absolute time of a timed wait on
 * a condition variable of that clock.
 */
struct timespec d9_deadline_ms(uint64_t ms);

/* 64-bit FNV-1a of p[0..n): string interning (encoder, record path). */
static inline uint64_t d9_fnv1a(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

#endif /* DIAL9_COMMON_H */
