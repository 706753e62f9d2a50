// SPDX-License-Identifier: MIT
/*
 * ksched_sstat.c - the last resort: sample /proc/<pid>/task/<tid>/schedstat.
 *
 * No switch or wake-up events: every DIAL9_SSTAT_PERIOD_NS each thread's
 * cumulative CPU time, runqueue wait (run_delay) and number of times it ran
 * become one record.  A reader takes differences: how long each thread
 * waited for a CPU between two samples, not when.  Needs nothing but
 * /proc, so it works under any perf_event_paranoid and without the module.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/dial9.h>

#include "ksched/ksched.h"

#define DIAL9_SSTAT_PERIOD_NS 100000000ull	/* 100 ms */

struct d9_sstat {
	int *pids;
	unsigned int npids;
	uint64_t next_ns;
};

int d9_sstat_open(struct d9_sstat **out,
		     const struct dial9_ksched_opts *o, char *why,
		     size_t whylen)
{
	struct d9_sstat *s;
	char path[64], buf[128];

	*out = NULL;
	if (o->system_wide) {
		snprintf(why, whylen, "system-wide recording needs dial9.ko");
		return -EOPNOTSUPP;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->pids = calloc(o->npids + 1, sizeof(int)))) {
		free(s);
		return -ENOMEM;
	}
	if (o->self || !o->npids)
		s->pids[s->npids++] = getpid();
	for (unsigned int i = 0; i < o->npids; i++)
		s->pids[s->npids++] = o->pids[i];
	for (unsigned int i = 0; i < s->npids; i++) {
		int ret;

		snprintf(path, sizeof(path), "/proc/%d/schedstat", s->pids[i]);
		ret = d9_read_small(path, buf, sizeof(buf));
		if (ret) {
			snprintf(why, whylen, "%s: %s%s", path, strerror(-ret),
				 ret == -ENOENT ? " (no CONFIG_SCHED_INFO?)" : "");
			d9_sstat_close(s);
			return ret;
		}
	}
	*out = s;
	return 0;
}

void d9_sstat_close(struct d9_sstat *s)
{
	if (!s)
		return;
	free(s->pids);
	free(s);
}

/* "name : value" of /proc/<pid>/task/<tid>/sched, from its text @s. */
static bool sched_value(const char *s, const char *name, long long *v)
{
	size_t n = strlen(name);

	for (const char *p = s; (p = strstr(p, name)); p += n) {
		const char *c = p + n;

		if (p != s && p[-1] != '\n')
			continue;
		while (*c == ' ')
			c++;
		if (*c == ':')
			return sscanf(c + 1, "%lld", v) == 1;
	}
	return false;
}

/* The migrations and prio of @tid, where the kernel shows them. */
static void sched_file(int pid, int tid, struct d9_rec_schedstat *r)
{
	char path[96], buf[4096];
	long long v;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/sched", pid, tid);
	if (d9_read_small(path, buf, sizeof(buf)))
		return;		/* no CONFIG_SCHED_DEBUG, or gone */
	if (sched_value(buf, "se.nr_migrations", &v) && v >= 0)
		r->migrations = (uint64_t)v;
	if (sched_value(buf, "prio", &v) && v >= 0 && v < 140)
		r->prio = (int32_t)v;
}

int d9_sstat_thread(int pid, int tid, uint64_t now, bool sched,
		    struct d9_rec_schedstat *r)
{
	unsigned long long run, delay, slices;
	char path[96], buf[128];
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	ret = d9_read_small(path, buf, sizeof(buf));
	if (ret)
		return ret;
	if (sscanf(buf, "%llu %llu %llu", &run, &delay, &slices) != 3)
		return -EPROTO;
	memset(r, 0, sizeof(*r));
	r->hdr.type = D9_REC_SCHEDSTAT;
	r->hdr.size = sizeof(*r);
	r->hdr.time_ns = now;
	r->tid = (uint32_t)tid;
	r->tgid = (uint32_t)pid;
	r->run_ns = run;
	r->delay_ns = delay;
	r->slices = slices;
	r->migrations = UINT64_MAX;
	r->prio = -1;
	if (sched)
		sched_file(pid, tid, r);
	return 0;
}

static int sample_thread(int pid, int tid, uint64_t now,
			 int (*push)(void *, const struct dial9_rec_header *),
			 void *ctx)
{
	struct d9_rec_schedstat r;

	if (d9_sstat_thread(pid, tid, now, false, &r))
		return 0;	/* exited meanwhile */
	return push(ctx, &r.hdr);
}

int d9_sstat_read(struct d9_sstat *s,
		     int (*push)(void *ctx, const struct dial9_rec_header *rec),
		     void *ctx)
{
	uint64_t now = d9_clock_gettime_ns();
	int ret = 0;

	if (now < s->next_ns)
		return 0;
	s->next_ns = now + DIAL9_SSTAT_PERIOD_NS;
	for (unsigned int i = 0; !ret && i < s->npids; i++) {
		char path[64];
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", s->pids[i]);
		d = opendir(path);
		if (!d)
			continue;	/* the process is gone */
		while (!ret && (de = readdir(d))) {
			int tid = atoi(de->d_name);

			if (tid > 0)
				ret = sample_thread(s->pids[i], tid, now, push,
						    ctx);
		}
		closedir(d);
	}
	return ret;
}
