/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the dial9 module tests: open a session, map its rings,
 * collect records.  Only <linux/dial9.h> and libc, as a user's tool would.
 */
#ifndef DIAL9_TEST_H
#define DIAL9_TEST_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/dial9.h>

_Static_assert(sizeof(struct dial9_rec_header) == 16, "header");
_Static_assert(sizeof(struct dial9_rec_lost) == 24, "lost");
_Static_assert(sizeof(struct dial9_rec_switch) == 80, "switch");
_Static_assert(sizeof(struct dial9_rec_unfollowed) == 24, "unfollowed");
_Static_assert(sizeof(struct dial9_ignore) == DIAL9_IGNORE_SIZE_VER0, "ignore");
_Static_assert(sizeof(struct dial9_rec_wake) == 40, "wake");
_Static_assert(sizeof(struct dial9_rec_migrate) == 32, "migrate");
_Static_assert(sizeof(struct dial9_rec_exit) == 24, "exit");
_Static_assert(sizeof(struct dial9_rec_comm) == 40, "comm");
_Static_assert(sizeof(struct dial9_ring_ctrl) == 128, "ctrl");
_Static_assert(sizeof(struct dial9_session_config) == DIAL9_SESSION_CONFIG_SIZE_VER0, "cfg");
_Static_assert(sizeof(struct dial9_target) == DIAL9_TARGET_SIZE_VER0, "tgt");
_Static_assert(sizeof(struct dial9_ring_stats) == DIAL9_RING_STATS_SIZE_VER0, "stats");

#define D9_MAX_CPUS 64

struct d9 {
	int fd;
	int ncpu;
	long page;
	struct dial9_ring_ctrl *ctrl[D9_MAX_CPUS];
	unsigned char *data[D9_MAX_CPUS];
	uint32_t size[D9_MAX_CPUS];
};

/* All records read so far, copied out of the rings. */
struct d9_recs {
	unsigned char *buf;
	size_t len, cap;
	size_t count;
};

static inline uint64_t d9_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline pid_t d9_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static inline int d9_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static inline int d9_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static inline int d9_open(struct d9 *d)
{
	struct dial9_version v;

	memset(d, 0, sizeof(*d));
	d->page = sysconf(_SC_PAGESIZE);
	d->fd = open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC);
	if (d->fd < 0)
		return -errno;
	if (d9_ioctl(d->fd, DIAL9_IOC_GET_VERSION, &v))
		return -errno;
	d->ncpu = v.nr_cpu_ids < D9_MAX_CPUS ? v.nr_cpu_ids : D9_MAX_CPUS;
	return 0;
}

static inline int d9_configure(struct d9 *d, uint32_t flags,
			       uint32_t ring_size, uint32_t events)
{
	struct dial9_session_config c = {
		.size = sizeof(c), .flags = flags,
		.ring_size = ring_size, .events = events,
	};

	return d9_ioctl(d->fd, DIAL9_IOC_CONFIGURE, &c);
}

static inline int d9_map(struct d9 *d)
{
	for (int cpu = 0; cpu < d->ncpu; cpu++) {
		void *c = mmap(NULL, d->page, PROT_READ | PROT_WRITE,
			       MAP_SHARED, d->fd, DIAL9_MMAP_CTRL(cpu));

		if (c == MAP_FAILED)
			return -errno;
		d->ctrl[cpu] = c;
		d->size[cpu] = d->ctrl[cpu]->data_size;
		c = mmap(NULL, d->size[cpu], PROT_READ, MAP_SHARED, d->fd,
			 DIAL9_MMAP_DATA(cpu));
		if (c == MAP_FAILED)
			return -errno;
		d->data[cpu] = c;
	}
	return 0;
}

static inline void d9_unmap(struct d9 *d)
{
	for (int cpu = 0; cpu < d->ncpu; cpu++) {
		if (d->data[cpu])
			munmap(d->data[cpu], d->size[cpu]);
		if (d->ctrl[cpu])
			munmap(d->ctrl[cpu], d->page);
		d->data[cpu] = NULL;
		d->ctrl[cpu] = NULL;
	}
}

static inline void d9_close(struct d9 *d)
{
	d9_unmap(d);
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

static inline int d9_enable(struct d9 *d)
{
	return d9_ioctl(d->fd, DIAL9_IOC_ENABLE, NULL);
}

static inline int d9_disable(struct d9 *d)
{
	return d9_ioctl(d->fd, DIAL9_IOC_DISABLE, NULL);
}

static inline int d9_stats(struct d9 *d, int cpu, struct dial9_ring_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->cpu = cpu;
	return d9_ioctl(d->fd, DIAL9_IOC_GET_STATS, st);
}

/*
 * Copy every unread record of one ring into @out and consume it.  Returns
 * the number of records, or -EPROTO if the ring holds a malformed record.
 */
static inline int d9_drain_cpu(struct d9 *d, int cpu, struct d9_recs *out)
{
	struct dial9_ring_ctrl *c = d->ctrl[cpu];
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint64_t tail = c->tail;
	uint32_t mask = d->size[cpu] - 1;
	int n = 0;

	while (tail < head) {
		const struct dial9_rec_header *h =
			(const void *)(d->data[cpu] + (tail & mask));
		uint32_t off = tail & mask;

		if (h->size < 8 || h->size % 8 || off + h->size > d->size[cpu])
			return -EPROTO;
		if (h->type != DIAL9_REC_PAD) {
			if (h->size < sizeof(*h))
				return -EPROTO;
			if (out->len + h->size > out->cap) {
				size_t cap = out->cap ? out->cap * 2 : 65536;

				while (cap < out->len + h->size)
					cap *= 2;
				out->buf = realloc(out->buf, cap);
				if (!out->buf)
					return -ENOMEM;
				out->cap = cap;
			}
			memcpy(out->buf + out->len, h, h->size);
			out->len += h->size;
			out->count++;
			n++;
		}
		tail += h->size;
	}
	__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	return n;
}

static inline int d9_drain(struct d9 *d, struct d9_recs *out)
{
	int total = 0;

	for (int cpu = 0; cpu < d->ncpu; cpu++) {
		int n = d9_drain_cpu(d, cpu, out);

		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

#define d9_for_each(r, recs)						\
	for (const struct dial9_rec_header *r = (const void *)(recs)->buf; \
	     (const unsigned char *)r < (recs)->buf + (recs)->len;	\
	     r = (const void *)((const unsigned char *)r + r->size))

static inline int d9_cmp_time(const void *a, const void *b)
{
	const struct dial9_rec_header *x = *(const void *const *)a;
	const struct dial9_rec_header *y = *(const void *const *)b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x < y ? -1 : x > y;	/* one CPU's order */
}

/*
 * The records of every CPU merged in time order: an array of @recs->count
 * pointers into @recs, to free().  NULL on ENOMEM.
 */
static inline const struct dial9_rec_header **d9_sorted(const struct d9_recs *recs)
{
	const struct dial9_rec_header **v = calloc(recs->count + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	d9_for_each(r, recs)
		v[n++] = r;
	qsort(v, n, sizeof(*v), d9_cmp_time);
	return v;
}

static inline void d9_recs_free(struct d9_recs *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Fields 1-3 of /proc/self/task/<tid>/schedstat: run, run_delay, pcount. */
static inline int d9_schedstat(pid_t tid, uint64_t *run, uint64_t *delay,
			       uint64_t *pcount)
{
	char path[64];
	unsigned long long a, b, c;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu %llu %llu", &a, &b, &c);
	fclose(f);
	if (n != 3)
		return -EIO;
	if (run)
		*run = a;
	if (delay)
		*delay = b;
	if (pcount)
		*pcount = c;
	return 0;
}

/* The number in the file at @path (a module parameter, a cgroup's
 * counter), or -1. */
static inline long long d9_read_number(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Write @s to the file at @path (a sysctl, a module parameter). */
static inline int d9_write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(s, f) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* Burn CPU for about @ns of this thread's CPU time. */
static inline void d9_spin_cpu(uint64_t ns)
{
	struct timespec ts;
	uint64_t start, now;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	start = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	do {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	} while (now - start < ns);
}

#endif /* DIAL9_TEST_H */
