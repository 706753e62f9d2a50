// SPDX-License-Identifier: MIT
/*
 * app_rate.c - the highest rate of application events per thread that
 * libdial9 records with nothing lost and no backlog (issue 9's goal: the
 * recorder is never the bottleneck, the producers' own maximum is).
 *
 * libdial9 as an application links it (<dial9.h>, defaults or the
 * DIAL9_* variables set, the scheduler off: application events only),
 * into a trace directory of its own.  For 1 and 2 producer threads:
 *   1. the producers' own maximum: each records as fast as it can for
 *      SECS seconds; the events per second of wall time per thread, and
 *      what the recorder lost (dial9_stats.events_lost) doing it;
 *   2. if that was not sustained: paced runs (bursts of 1,000 events on a
 *      CLOCK_MONOTONIC schedule) searched, halving the step, for the
 *      highest rate that is;
 *   3. for each run, the backlog: how long dial9_flush() takes once the
 *      producers stop (everything they recorded written).
 * A run that loses events, or leaves more than BACKLOG_MS to flush, is
 * not sustained.  Prints a table and "BENCH part=rate ..." lines for
 * bench/bench-table.sh.
 *
 *   dial9-apprate [SECS [DIR [WHERE]]]
 *       SECS a run (default 5: long enough at ~40 M events/s, ~400 MB/s,
 *       to pass the default 1 GiB disk budget, so that eviction is in
 *       the figure), in a new directory under DIR (default /tmp), WHERE
 *       the label of the BENCH lines (default host).
 */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"
#include "dial9.h"

DIAL9_EVENT_TYPE(t_rate, "bench.rate", DIAL9_FIELD(U64, a),
		 DIAL9_FIELD(U64, b));

/* A flush that takes longer than this after the producers stop: backlog. */
#define BACKLOG_MS 100
#define BURST 1000
#define MAX_THREADS 2

static double secs = 5;
static const char *base = "/tmp", *where = "host";

struct producer {
	pthread_t th;
	double rate;		/* events/s to pace at; 0: as fast as it can */
	uint64_t n;		/* events recorded */
	uint64_t ns;		/* wall time it took */
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	uint64_t t0 = bench_mono_ns(), end = t0 + (uint64_t)(secs * 1e9), now = t0;
	uint64_t i = 0;

	while (now < end) {
		for (int k = 0; k < BURST; k++, i++)
			DIAL9_EMIT(t_rate, dial9_u64(i), dial9_u64(i ^ 0x55));
		now = bench_mono_ns();
		if (p->rate > 0) {
			/* the next burst is due when the rate says so */
			uint64_t due = t0 + (uint64_t)((double)i / p->rate * 1e9);

			while (now < due && now < end)
				now = bench_mono_ns();
		}
	}
	p->n = i;
	p->ns = now - t0;
	return NULL;
}

struct result {
	double rate;		/* achieved, events/s per thread */
	uint64_t lost, written;
	double flush_ms;	/* the backlog left when the producers stopped */
	bool ok;		/* 0 lost, flushed within BACKLOG_MS */
};

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

/* One run of @nthreads producers at @rate each (0: as fast as they can). */
static int run(int nthreads, double rate, struct result *r)
{
	struct producer p[MAX_THREADS];
	struct dial9_stats st = { .size = sizeof(st) };
	struct dial9_config c;
	char dir[4096];
	double sum = 0;
	uint64_t t0, n = 0;
	int ret;

	snprintf(dir, sizeof(dir), "%s/dial9-apprate.XXXXXX", base);
	if (!mkdtemp(dir))
		return -errno;
	dial9_config_init(&c);
	dial9_config_from_env(&c);	/* DIAL9_* settings, to compare */
	c.trace_dir = dir;
	c.service_name = "apprate";
	c.sched = DIAL9_SCHED_OFF;
	ret = dial9_start(&c);
	if (ret) {
		fprintf(stderr, "dial9_start: %s\n", dial9_strerror(ret));
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		return ret;
	}
	for (int i = 0; i < nthreads; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].rate = rate;
		pthread_create(&p[i].th, NULL, produce, &p[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(p[i].th, NULL);
		sum += (double)p[i].n / ((double)p[i].ns / 1e9);
		n += p[i].n;
	}
	t0 = bench_mono_ns();
	ret = dial9_flush(60000);
	r->flush_ms = (double)(bench_mono_ns() - t0) / 1e6;
	dial9_get_stats(&st);
	dial9_stop();
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (ret) {
		fprintf(stderr, "dial9_flush: %s\n", dial9_strerror(ret));
		return ret;
	}
	r->rate = sum / nthreads;
	r->lost = st.events_lost;
	r->written = st.events_written;
	r->ok = !r->lost && r->flush_ms <= BACKLOG_MS;
	if (r->written + r->lost < n)	/* every call is one or the other */
		fprintf(stderr, "apprate: %llu recorded, %llu written + %llu lost\n",
			(unsigned long long)n, (unsigned long long)r->written,
			(unsigned long long)r->lost);
	return 0;
}

static void show(int nthreads, const char *what, const struct result *r)
{
	printf("%-7d %-22s %10.2f %14llu %12llu %9.1f  %s\n", nthreads, what,
	       r->rate / 1e6, (unsigned long long)r->written,
	       (unsigned long long)r->lost, r->flush_ms,
	       r->ok ? "yes" : "no");
}

int main(int argc, char **argv)
{
	if (argc > 1)
		secs = atof(argv[1]);
	if (argc > 2)
		base = argv[2];
	if (argc > 3)
		where = argv[3];
	if (secs <= 0) {
		fprintf(stderr, "usage: dial9-apprate [SECS > 0 [DIR [WHERE]]]\n");
		return 2;
	}
	printf("application events per thread, libdial9 defaults, %.1f s a run into %s (sustained: 0 lost, flushed within %d ms)\n",
	       secs, base, BACKLOG_MS);
	printf("%-7s %-22s %10s %14s %12s %9s  %s\n", "threads", "run",
	       "M ev/s/thr", "written", "lost", "flush ms", "sustained");
	for (int t = 1; t <= MAX_THREADS; t++) {
		struct result max, best = { 0 }, r;
		double lo = 0, hi;

		if (run(t, 0, &max))
			return 1;
		show(t, "as fast as it can", &max);
		if (max.ok) {
			best = max;
		} else {
			/* the highest paced rate that is sustained, to 1/16 */
			hi = max.rate;
			for (int step = 0; step < 5; step++) {
				double mid = step ? (lo + hi) / 2 : hi / 2;
				char what[32];

				if (run(t, mid, &r))
					return 1;
				snprintf(what, sizeof(what), "paced %.2f M/s", mid / 1e6);
				show(t, what, &r);
				if (r.ok) {
					lo = mid;
					best = r;
				} else {
					hi = mid;
				}
			}
		}
		printf("BENCH part=rate where=%s threads=%d max_rate=%.0f max_lost=%llu max_flush_ms=%.1f sustained_rate=%.0f\n",
		       where, t, max.rate, (unsigned long long)max.lost, max.flush_ms,
		       best.rate);
	}
	return 0;
}
