/* SPDX-License-Identifier: MIT */
/*
 * sched_stats.h - per-thread scheduling statistics from switch and migrate
 * events, shared by `dial9 sched` (from traces) and `dial9 sched --live`
 * (from /dev/dial9).
 */
#ifndef DIAL9_SCHED_STATS_H
#define DIAL9_SCHED_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SCHED_HIST_BUCKETS 40	/* log2 of microseconds */

struct sched_thread {
	uint32_t tid, tgid;
	char name[16];
	uint64_t name_ns;		/* time of the newest name */
	uint64_t voluntary, involuntary, migrations;
	uint64_t on_cpu_ns, runnable_ns, blocked_ns;
	uint64_t delay_count, delay_sum, delay_max, delay_max_at;
	uint64_t *delays;		/* every delay, for percentiles */
	size_t ndelays, cap;
	/* schedstat samples (first and last), when there are no switches */
	uint64_t ss_n, ss_run0, ss_delay0, ss_slices0, ss_run, ss_delay,
		ss_slices;
	bool sampled;			/* figures come from samples */
	/* state machine */
	int state;			/* 0 unknown, 1 running, 2 runnable, 3 blocked */
	uint64_t since;
};

struct sched_stats {
	struct sched_thread *threads;
	size_t n, cap;
	uint64_t hist[SCHED_HIST_BUCKETS];
	uint64_t lost;
	uint64_t first_ns, last_ns;
};

void sched_stats_init(struct sched_stats *st);
void sched_stats_free(struct sched_stats *st);
/* Returns the thread (created on first sight), or NULL on ENOMEM. */
struct sched_thread *sched_stats_thread(struct sched_stats *st, uint32_t tid,
					uint32_t tgid);
/* @tid left the CPU: preempted (still runnable) or blocked. */
int sched_stats_out(struct sched_stats *st, uint64_t time_ns, uint32_t tid,
		    uint32_t tgid, bool runnable);
/* @tid got the CPU after waiting @wait_ns on the runqueue (if known). */
int sched_stats_in(struct sched_stats *st, uint64_t time_ns, uint32_t tid,
		   uint32_t tgid, bool wait_known, uint64_t wait_ns);
void sched_stats_migrate(struct sched_stats *st, uint64_t time_ns,
			 uint32_t tid, uint32_t tgid);
void sched_stats_name(struct sched_stats *st, uint64_t time_ns, uint32_t tid,
		      uint32_t tgid, const char *name, size_t len);
/* A cumulative schedstat sample (the schedstat backend). */
void sched_stats_sample(struct sched_stats *st, uint64_t time_ns, uint32_t tid,
			uint32_t tgid, uint64_t run_ns, uint64_t delay_ns,
			uint64_t slices);
/* Close open intervals at @end_ns (the end of the observed window). */
void sched_stats_finish(struct sched_stats *st, uint64_t end_ns);
/* The log2-microsecond bucket of a delay. */
int sched_hist_bucket(uint64_t ns);
/* Percentile (0..100) of a thread's delays; 0 without delays. */
uint64_t sched_thread_percentile(struct sched_thread *t, double pct);

struct sched_report_opts {
	uint32_t tid;			/* only this thread, 0 = all */
	uint64_t min_delay_ns;		/* only threads whose max is >= this */
	int top;			/* at most this many threads, 0 = all */
	bool json;
};

/* Threads by total runqueue delay, then the histogram; text or JSON. */
void sched_stats_report(struct sched_stats *st,
			const struct sched_report_opts *o, FILE *out);
/* The histogram alone, like BCC's runqlat. */
void sched_hist_print(const uint64_t *hist, FILE *out);

#endif
