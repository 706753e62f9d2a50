// SPDX-License-Identifier: MIT
/*
 * sched_stats.c - per-thread scheduling statistics.
 *
 * A thread is running from its switch-in to its switch-out; then runnable
 * (preempted) or blocked until its next switch-in.  A blocked thread that
 * is woken waits on the runqueue before it runs: that wait is the switch-in
 * event's runqueue delay, so the blocked-to-running gap splits into
 * blocked time and runnable time by it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sched_stats.h"

enum { ST_UNKNOWN, ST_RUNNING, ST_RUNNABLE, ST_BLOCKED };

void sched_stats_init(struct sched_stats *st)
{
	memset(st, 0, sizeof(*st));
}

void sched_stats_free(struct sched_stats *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->threads[i].delays);
	free(st->threads);
	memset(st, 0, sizeof(*st));
}

struct sched_thread *sched_stats_thread(struct sched_stats *st, uint32_t tid,
					uint32_t tgid)
{
	struct sched_thread *t;

	/* Most recent threads are looked up most: search from the end. */
	for (size_t i = st->n; i-- > 0;) {
		if (st->threads[i].tid == tid) {
			if (!st->threads[i].tgid)
				st->threads[i].tgid = tgid;
			return &st->threads[i];
		}
	}
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		struct sched_thread *nt = realloc(st->threads, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		st->threads = nt;
		st->cap = cap;
	}
	t = &st->threads[st->n++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->tgid = tgid;
	return t;
}

int sched_hist_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	int b = us ? 64 - __builtin_clzll(us) : 0;

	return b < SCHED_HIST_BUCKETS ? b : SCHED_HIST_BUCKETS - 1;
}

static int add_delay(struct sched_stats *st, struct sched_thread *t,
		     uint64_t ns, uint64_t at)
{
	if (t->ndelays == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uint64_t *nd = realloc(t->delays, cap * sizeof(*nd));

		if (!nd)
			return -ENOMEM;
		t->delays = nd;
		t->cap = cap;
	}
	t->delays[t->ndelays++] = ns;
	t->delay_count++;
	t->delay_sum += ns;
	if (ns > t->delay_max || t->delay_count == 1) {
		t->delay_max = ns;
		t->delay_max_at = at;
	}
	st->hist[sched_hist_bucket(ns)]++;
	return 0;
}

static bool visible(uint32_t tid)
{
	/* The idle task and redacted foreign tasks are not threads to report. */
	return tid != 0 && tid != UINT32_MAX;
}

static void seen(struct sched_stats *st, uint64_t now)
{
	if (!st->first_ns || now < st->first_ns)
		st->first_ns = now;
	if (now > st->last_ns)
		st->last_ns = now;
}

int sched_stats_out(struct sched_stats *st, uint64_t now, uint32_t tid,
		    uint32_t tgid, bool runnable)
{
	struct sched_thread *t;

	seen(st, now);
	if (!visible(tid))
		return 0;
	t = sched_stats_thread(st, tid, tgid);
	if (!t)
		return -ENOMEM;
	if (t->state == ST_RUNNING && now >= t->since)
		t->on_cpu_ns += now - t->since;
	if (runnable)
		t->involuntary++;
	else
		t->voluntary++;
	t->state = runnable ? ST_RUNNABLE : ST_BLOCKED;
	t->since = now;
	return 0;
}

int sched_stats_in(struct sched_stats *st, uint64_t now, uint32_t tid,
		   uint32_t tgid, bool wait_known, uint64_t wait_ns)
{
	uint64_t wait = wait_known ? wait_ns : 0;
	struct sched_thread *t;

	seen(st, now);
	if (!visible(tid))
		return 0;
	t = sched_stats_thread(st, tid, tgid);
	if (!t)
		return -ENOMEM;
	if (t->state == ST_RUNNABLE || t->state == ST_BLOCKED) {
		uint64_t gap = now >= t->since ? now - t->since : 0;
		uint64_t w = wait < gap ? wait : gap;

		/* The wait ends the gap; before it the thread slept. */
		if (t->state == ST_BLOCKED) {
			t->blocked_ns += gap - w;
			t->runnable_ns += w;
		} else {
			t->runnable_ns += gap;
		}
	}
	if (wait_known && add_delay(st, t, wait, now))
		return -ENOMEM;
	t->state = ST_RUNNING;
	t->since = now;
	return 0;
}

void sched_stats_migrate(struct sched_stats *st, uint64_t time_ns,
			 uint32_t tid, uint32_t tgid)
{
	struct sched_thread *t = sched_stats_thread(st, tid, tgid);

	(void)time_ns;
	if (t)
		t->migrations++;
}

void sched_stats_name(struct sched_stats *st, uint64_t time_ns, uint32_t tid,
		      uint32_t tgid, const char *name, size_t len)
{
	struct sched_thread *t = sched_stats_thread(st, tid, tgid);

	if (!t || time_ns < t->name_ns)
		return;
	if (len >= sizeof(t->name))
		len = sizeof(t->name) - 1;
	memset(t->name, 0, sizeof(t->name));
	memcpy(t->name, name, strnlen(name, len));
	t->name_ns = time_ns;
}

void sched_stats_sample(struct sched_stats *st, uint64_t time_ns, uint32_t tid,
			uint32_t tgid, uint64_t run_ns, uint64_t delay_ns,
			uint64_t slices)
{
	struct sched_thread *t = sched_stats_thread(st, tid, tgid);

	seen(st, time_ns);
	if (!t)
		return;
	if (!t->ss_n++) {
		t->ss_run0 = run_ns;
		t->ss_delay0 = delay_ns;
		t->ss_slices0 = slices;
	}
	t->ss_run = run_ns;
	t->ss_delay = delay_ns;
	t->ss_slices = slices;
}

void sched_stats_finish(struct sched_stats *st, uint64_t end_ns)
{
	for (size_t i = 0; i < st->n; i++) {
		struct sched_thread *t = &st->threads[i];
		uint64_t gap = end_ns > t->since ? end_ns - t->since : 0;

		/* Only samples: totals between the first and the last. */
		if (t->ss_n > 1 && !t->delay_count && !t->voluntary &&
		    !t->involuntary) {
			t->sampled = true;
			t->on_cpu_ns = t->ss_run - t->ss_run0;
			t->runnable_ns = t->ss_delay - t->ss_delay0;
			t->delay_sum = t->runnable_ns;
			t->delay_count = t->ss_slices - t->ss_slices0;
		}

		if (t->state == ST_RUNNING)
			t->on_cpu_ns += gap;
		else if (t->state == ST_RUNNABLE)
			t->runnable_ns += gap;
		else if (t->state == ST_BLOCKED)
			t->blocked_ns += gap;
		t->state = ST_UNKNOWN;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t sched_thread_percentile(struct sched_thread *t, double pct)
{
	size_t i;

	if (!t->ndelays)
		return 0;
	qsort(t->delays, t->ndelays, sizeof(uint64_t), cmp_u64);
	/* Nearest rank. */
	i = (size_t)(pct / 100.0 * (double)t->ndelays + 0.999999);
	if (i == 0)
		i = 1;
	if (i > t->ndelays)
		i = t->ndelays;
	return t->delays[i - 1];
}

static int cmp_thread(const void *a, const void *b)
{
	const struct sched_thread *x = *(struct sched_thread *const *)a;
	const struct sched_thread *y = *(struct sched_thread *const *)b;

	/* Who waited for a CPU the most in all, then the longest once. */
	if (x->delay_sum != y->delay_sum)
		return x->delay_sum < y->delay_sum ? 1 : -1;
	if (x->delay_max != y->delay_max)
		return x->delay_max < y->delay_max ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void sched_hist_print(const uint64_t *hist, FILE *out)
{
	uint64_t max = 0;
	int top = -1;

	for (int i = 0; i < SCHED_HIST_BUCKETS; i++) {
		if (hist[i])
			top = i;
		if (hist[i] > max)
			max = hist[i];
	}
	fprintf(out, "%20s : %-8s %s\n", "runqueue delay (us)", "count",
		"distribution");
	for (int i = 0; i <= top; i++) {
		uint64_t lo = i ? 1ull << (i - 1) : 0, hi = (1ull << i) - 1;
		int bar = (int)(hist[i] * 40 / (max ? max : 1));

		fprintf(out, "%9" PRIu64 " -> %-8" PRIu64 " : %-8" PRIu64 " |%-40.*s|\n",
			lo, hi, hist[i], bar,
			"****************************************");
	}
}

static void json_name(FILE *out, const char *s)
{
	fputc('"', out);
	for (size_t i = 0; i < 16 && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

void sched_stats_report(struct sched_stats *st,
			const struct sched_report_opts *o, FILE *out)
{
	struct sched_thread **v = calloc(st->n ? st->n : 1, sizeof(*v));
	size_t n = 0;

	if (!v) {
		fprintf(stderr, "dial9: out of memory\n");
		return;
	}
	for (size_t i = 0; i < st->n; i++) {
		struct sched_thread *t = &st->threads[i];

		if (o->tid && t->tid != o->tid)
			continue;
		if (t->delay_max < o->min_delay_ns)
			continue;
		if (!t->delay_count && !t->voluntary && !t->involuntary &&
		    !t->sampled)
			continue;
		v[n++] = t;
	}
	qsort(v, n, sizeof(*v), cmp_thread);
	if (o->top > 0 && (size_t)o->top < n)
		n = (size_t)o->top;

	if (o->json) {
		fprintf(out, "{\"threads\":[");
		for (size_t i = 0; i < n; i++) {
			struct sched_thread *t = v[i];

			fprintf(out, "%s{\"tid\":%u,\"pid\":%u,\"name\":",
				i ? "," : "", t->tid, t->tgid);
			json_name(out, t->name);
			fprintf(out, ",\"switches\":%" PRIu64
				",\"voluntary\":%" PRIu64
				",\"involuntary\":%" PRIu64
				",\"on_cpu_ns\":%" PRIu64
				",\"runnable_ns\":%" PRIu64
				",\"blocked_ns\":%" PRIu64
				",\"delay\":{\"count\":%" PRIu64
				",\"sum_ns\":%" PRIu64 ",\"avg_ns\":%" PRIu64
				",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
				",\"max_ns\":%" PRIu64 ",\"max_at_ns\":%" PRIu64
				"},\"migrations\":%" PRIu64
				",\"sampled\":%s}",
				t->voluntary + t->involuntary, t->voluntary,
				t->involuntary, t->on_cpu_ns, t->runnable_ns,
				t->blocked_ns, t->delay_count, t->delay_sum,
				t->delay_count ? t->delay_sum / t->delay_count : 0,
				sched_thread_percentile(t, 50),
				sched_thread_percentile(t, 99), t->delay_max,
				t->delay_max_at, t->migrations,
				t->sampled ? "true" : "false");
		}
		fprintf(out, "],\"histogram_us_log2\":[");
		for (int i = 0; i < SCHED_HIST_BUCKETS; i++)
			fprintf(out, "%s%" PRIu64, i ? "," : "", st->hist[i]);
		fprintf(out, "],\"lost\":%" PRIu64 "}\n", st->lost);
		free(v);
		return;
	}

	fprintf(out, "%-16s %8s %8s %8s %10s %10s %10s %7s %9s %9s %9s %9s %5s\n",
		"thread", "tid", "vol", "invol", "on_cpu_ms", "runq_ms",
		"blocked_ms", "delays", "avg_us", "p50_us", "p99_us", "max_us",
		"migr");
	for (size_t i = 0; i < n; i++) {
		struct sched_thread *t = v[i];

		fprintf(out, "%-16.16s %8u %8" PRIu64 " %8" PRIu64
			" %10.2f %10.2f %10.2f %7" PRIu64
			" %9.1f %9.1f %9.1f %9.1f %5" PRIu64 "\n",
			t->name[0] ? t->name : "?", t->tid, t->voluntary,
			t->involuntary, t->on_cpu_ns / 1e6,
			t->runnable_ns / 1e6, t->blocked_ns / 1e6,
			t->delay_count,
			t->delay_count ? t->delay_sum / 1e3 / t->delay_count : 0,
			sched_thread_percentile(t, 50) / 1e3,
			sched_thread_percentile(t, 99) / 1e3,
			t->delay_max / 1e3, t->migrations);
	}
	for (size_t i = 0; i < n; i++)
		if (v[i]->delay_count)
			fprintf(out, "max delay of %u (%s): %.1f us at %.6f s\n",
				v[i]->tid, v[i]->name[0] ? v[i]->name : "?",
				v[i]->delay_max / 1e3,
				v[i]->delay_max_at / 1e9);
	for (size_t i = 0; i < n; i++) {
		if (v[i]->sampled) {
			fprintf(out, "(schedstat samples: runqueue totals and run counts only; no switches, maxima or histogram)\n");
			break;
		}
	}
	fputc('\n', out);
	sched_hist_print(st->hist, out);
	if (st->lost)
		fprintf(out, "\nwarning: %" PRIu64 " scheduler records were lost: figures are incomplete\n",
			st->lost);
	free(v);
}
