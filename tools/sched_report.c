// SPDX-License-Identifier: MIT
/*
 * sched_report.c - the `dial9 sched` report: losses and unfollowed
 * processes first, then per thread (by total runqueue wait) and the
 * histogram, as text or JSON.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sched_report.h"

#define SHOW_WINDOWS 20		/* loss windows listed in text */

static int cmp_thread(const void *a, const void *b)
{
	const struct sched_thread *x = *(struct sched_thread *const *)a;
	const struct sched_thread *y = *(struct sched_thread *const *)b;

	/* Who waited for a CPU the most in all, then the longest once. */
	if (x->runq_total_ns != y->runq_total_ns)
		return x->runq_total_ns < y->runq_total_ns ? 1 : -1;
	if (x->delay_max != y->delay_max)
		return x->delay_max < y->delay_max ? 1 : -1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
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

static void json_str(FILE *out, const char *s, size_t max)
{
	cli_json_str(out, s, strnlen(s, max));
}

/* A string that may be missing (NULL), written as "". */
static void json_opt(FILE *out, const char *s)
{
	cli_json_str(out, s ? s : "", s ? strlen(s) : 0);
}

/* Per CPU of each source: LOST records and records lost. */
struct cpu_loss {
	uint32_t src, cpu;
	uint64_t windows, count;
};

static int cmp_cpu_loss(const void *a, const void *b)
{
	const struct cpu_loss *x = a, *y = b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

static struct cpu_loss *by_cpu(const struct sched_stats *st, size_t *n)
{
	struct cpu_loss *v = calloc(st->nloss ? st->nloss : 1, sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < st->nloss; i++) {
		const struct sched_loss *l = &st->losses[i];
		size_t k = 0;

		while (k < *n && (v[k].src != l->src || v[k].cpu != l->cpu))
			k++;
		if (k == *n) {
			v[k].src = l->src;
			v[k].cpu = l->cpu;
			(*n)++;
		}
		v[k].windows++;
		v[k].count += l->count;
	}
	d9_sort(v, *n, sizeof(*v), cmp_cpu_loss);
	return v;
}

static const char *src_host(const struct sched_stats *st, uint32_t src)
{
	return src < st->nsrcs && st->srcs[src].host ? st->srcs[src].host : "";
}

static void loss_lines(const struct sched_stats *st, FILE *out);

/* A source whose scheduler records are not dial9.ko's: it sees less. */
static bool fallback(const struct sched_source *s)
{
	return s->backend && *s->backend && strcmp(s->backend, "dial9.ko");
}

void sched_losses_print(const struct sched_stats *st, FILE *out)
{
	fprintf(out, "lost: %" PRIu64 " scheduler records (sched.lost), %"
		PRIu64 " application events (dial9.lost)\n", st->lost,
		st->lost_app);
	for (size_t i = 0; i < st->nsrcs; i++) {
		const struct sched_source *s = &st->srcs[i];
		/* which host's, when the traces are of several */
		const char *host = st->nsrcs > 1 ? s->host : NULL;

		if (fallback(s))
			fprintf(out, "BACKEND: scheduler records from %s, not dial9.ko%s%s: %s\n",
				s->backend, host ? ", host " : "",
				host ? host : "", s->note ? s->note : "(no note)");
	}
	if (st->nloss)
		loss_lines(st, out);
	if (st->nunfollowed) {
		fprintf(out, "UNFOLLOWED: %zu processes the kernel could not follow (none of their records are in the trace):",
			st->nunfollowed);
		for (size_t i = 0; i < st->nunfollowed; i++)
			fprintf(out, " %u%s", st->unfollowed[i].pid,
				st->unfollowed[i].exec ?
				" (from its exec of a privileged program on)" : "");
		fputc('\n', out);
	}
}

static void loss_lines(const struct sched_stats *st, FILE *out)
{
	size_t n = 0;
	struct cpu_loss *v;

	v = by_cpu(st, &n);
	for (size_t i = 0; v && i < n; i++)
		fprintf(out, "  %s%scpu %u: %" PRIu64 " records lost in %" PRIu64
			" windows\n", src_host(st, v[i].src),
			*src_host(st, v[i].src) ? " " : "", v[i].cpu,
			v[i].count, v[i].windows);
	free(v);
	for (size_t i = 0; i < st->nloss && i < SHOW_WINDOWS; i++) {
		const struct sched_loss *l = &st->losses[i];
		char utc[40];

		d9_sched_utc(d9_sched_wall_ns(st, l->src, l->from), utc,
			     sizeof(utc));
		fprintf(out, "  window %.6f .. %.6f s%s%s%s (%.3f ms) cpu %u: %"
			PRIu64 " records\n", l->from / 1e9, l->to / 1e9,
			*utc ? " (from " : "", utc, *utc ? ")" : "",
			(l->to - l->from) / 1e6, l->cpu, l->count);
	}
	if (st->nloss > SHOW_WINDOWS)
		fprintf(out, "  ... and %zu more windows (--json lists all)\n",
			st->nloss - SHOW_WINDOWS);
	fprintf(out, "  (a wait or a state across a window is unknown, not measured)\n");
}

static void losses_json(const struct sched_stats *st, FILE *out)
{
	size_t n = 0;
	struct cpu_loss *v = by_cpu(st, &n);

	fprintf(out, "\"lost\":%" PRIu64 ",\"lost_app\":%" PRIu64
		",\"lost_by_cpu\":[", st->lost, st->lost_app);
	for (size_t i = 0; v && i < n; i++)
		fprintf(out, "%s{\"cpu\":%u,\"records\":%" PRIu64
			",\"windows\":%" PRIu64 "}", i ? "," : "", v[i].cpu,
			v[i].count, v[i].windows);
	free(v);
	fprintf(out, "],\"loss_windows\":[");
	for (size_t i = 0; i < st->nloss; i++) {
		const struct sched_loss *l = &st->losses[i];
		char utc[40];

		d9_sched_utc(d9_sched_wall_ns(st, l->src, l->from), utc,
			     sizeof(utc));
		fprintf(out, "%s{\"cpu\":%u,\"from_ns\":%" PRIu64 ",\"to_ns\":%"
			PRIu64 ",\"from_utc\":%s%s%s,\"records\":%" PRIu64 "}",
			i ? "," : "", l->cpu, l->from, l->to, *utc ? "\"" : "",
			*utc ? utc : "null", *utc ? "\"" : "", l->count);
	}
	fprintf(out, "],\"fallbacks\":[");
	for (size_t i = 0, k = 0; i < st->nsrcs; i++) {
		const struct sched_source *s = &st->srcs[i];

		if (!fallback(s))
			continue;
		fprintf(out, "%s{\"host\":", k++ ? "," : "");
		json_opt(out, s->host);
		fprintf(out, ",\"boot_id\":");
		json_opt(out, s->boot_id);
		fprintf(out, ",\"backend\":");
		json_opt(out, s->backend);
		fprintf(out, ",\"note\":");
		json_opt(out, s->note);
		fputc('}', out);
	}
	fprintf(out, "],\"unfollowed\":[");
	for (size_t i = 0; i < st->nunfollowed; i++)
		fprintf(out, "%s{\"pid\":%u,\"parent_pid\":%u,\"privileged_exec\":%s}",
			i ? "," : "", st->unfollowed[i].pid,
			st->unfollowed[i].parent,
			st->unfollowed[i].exec ? "true" : "false");
	fputc(']', out);
}

/* Whether a source of @st recorded what ran while a thread waited. */
static bool occupants(const struct sched_stats *st)
{
	for (size_t i = 0; st->culprits && i < st->nsrcs; i++)
		if (d9_culprits_has_occupants(st->culprits, (uint32_t)i))
			return true;
	return false;
}

static void thread_json(struct sched_stats *st, struct sched_thread *t,
			bool culprits, FILE *out)
{
	const struct sched_source *s = &st->srcs[t->src];
	char utc[40];

	d9_sched_utc(t->delay_count ? d9_sched_wall_ns(st, t->src,
						       t->delay_max_at) : 0,
		     utc, sizeof(utc));
	fprintf(out, "{\"tid\":%u,\"pid\":%u,\"name\":", t->tid, t->tgid);
	json_str(out, t->name, sizeof(t->name));
	if (s->host) {
		fputs(",\"host\":", out);
		json_str(out, s->host, strlen(s->host));
	}
	if (s->boot_id) {
		fputs(",\"boot_id\":", out);
		json_str(out, s->boot_id, strlen(s->boot_id));
	}
	fprintf(out, ",\"switches\":%" PRIu64 ",\"voluntary\":%" PRIu64
		",\"involuntary\":%" PRIu64 ",\"on_cpu_ns\":%" PRIu64
		",\"runnable_ns\":%" PRIu64 ",\"blocked_ns\":%" PRIu64
		",\"unknown_ns\":%" PRIu64 ",\"runq_total_ns\":%" PRIu64
		",\"waits\":%" PRIu64 ",\"unknown_delays\":%" PRIu64
		",\"totals\":%s,\"delay\":{\"count\":%" PRIu64
		",\"sum_ns\":%" PRIu64 ",\"avg_ns\":%" PRIu64
		",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
		",\"max_ns\":%" PRIu64 ",\"max_at_ns\":%" PRIu64
		",\"max_at_utc\":%s%s%s},\"migrations\":%" PRIu64
		",\"sampled\":%s",
		t->voluntary + t->involuntary, t->voluntary, t->involuntary,
		t->on_cpu_ns, t->runnable_ns, t->blocked_ns, t->unknown_ns,
		t->runq_total_ns, t->waits, t->unknown_delays,
		t->totals || t->sstat_totals ? "true" : "false", t->delay_count, t->delay_sum,
		t->delay_count ? t->delay_sum / t->delay_count : 0,
		d9_sched_thread_percentile(t, 50), d9_sched_thread_percentile(t, 99),
		t->delay_max, t->delay_max_at, *utc ? "\"" : "",
		*utc ? utc : "null", *utc ? "\"" : "", t->migrations,
		t->sampled ? "true" : "false");
	if (culprits)
		sched_culprits_json(st, t, out);
	fputc('}', out);
}

static void thread_text(const struct sched_stats *st, struct sched_thread *t,
			bool hosts, FILE *out)
{
	if (hosts)
		fprintf(out, "%-12.12s ", src_host(st, t->src));
	fprintf(out, "%-16.16s %8u %8" PRIu64 " %8" PRIu64
		" %10.2f %10.2f %10.2f %9.2f %7" PRIu64 " %7" PRIu64 " %5" PRIu64
		" %9.1f %9.1f %9.1f %9.1f %5" PRIu64 "\n",
		t->name[0] ? t->name : "?", t->tid, t->voluntary,
		t->involuntary, t->on_cpu_ns / 1e6, t->runq_total_ns / 1e6,
		t->blocked_ns / 1e6, t->unknown_ns / 1e6, t->waits,
		t->delay_count, t->unknown_delays,
		t->delay_count ? t->delay_sum / 1e3 / t->delay_count : 0,
		d9_sched_thread_percentile(t, 50) / 1e3,
		d9_sched_thread_percentile(t, 99) / 1e3, t->delay_max / 1e3,
		t->migrations);
}

void sched_stats_report(struct sched_stats *st,
			const struct sched_report_opts *o, FILE *out)
{
	struct sched_thread **v = calloc(st->n ? st->n : 1, sizeof(*v));
	uint64_t unknown = 0;
	bool hosts = false;
	size_t n = 0;

	if (!v) {
		fprintf(stderr, "dial9: out of memory\n");
		return;
	}
	for (size_t i = 1; i < st->nsrcs && !hosts; i++)
		hosts = st->srcs[i].host && st->srcs[0].host &&
			strcmp(st->srcs[i].host, st->srcs[0].host);
	for (size_t i = 0; i < st->n; i++) {
		struct sched_thread *t = &st->threads[i];

		if (o->tid && t->tid != o->tid)
			continue;
		if (t->delay_max < o->min_delay_ns)
			continue;
		if (!d9_sched_thread_active(t))
			continue;
		v[n++] = t;
	}
	d9_sort(v, n, sizeof(*v), cmp_thread);
	if (o->top > 0 && (size_t)o->top < n)
		n = (size_t)o->top;

	if (o->json) {
		fputc('{', out);
		losses_json(st, out);
		fprintf(out, ",\"threads\":[");
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputc(',', out);
			thread_json(st, v[i], o->culprits, out);
		}
		fprintf(out, "],\"histogram_us_log2\":[");
		for (int i = 0; i < SCHED_HIST_BUCKETS; i++)
			fprintf(out, "%s%" PRIu64, i ? "," : "", st->hist[i]);
		fputc(']', out);
		/* whether what ran while a thread waited is whole (occupants) */
		if (o->culprits || o->explain)
			fprintf(out, ",\"occupants\":%s",
				occupants(st) ? "true" : "false");
		if (o->explain && sched_explain_json(st, o->explain_ns, o->tid, out))
			fprintf(stderr, "dial9: out of memory\n");
		fprintf(out, "}\n");
		free(v);
		return;
	}

	sched_losses_print(st, out);
	fputc('\n', out);
	if (hosts)
		fprintf(out, "%-12s ", "host");
	fprintf(out, "%-16s %8s %8s %8s %10s %10s %10s %9s %7s %7s %5s %9s %9s %9s %9s %5s\n",
		"thread", "tid", "vol", "invol", "on_cpu_ms", "runq_ms",
		"blocked_ms", "unknown_ms", "waits", "delays", "unk",
		"avg_us", "p50_us", "p99_us", "max_us", "migr");
	for (size_t i = 0; i < n; i++) {
		thread_text(st, v[i], hosts, out);
		unknown += v[i]->unknown_delays;
	}
	for (size_t i = 0; i < n; i++) {
		char utc[40];

		if (!v[i]->delay_count)
			continue;
		d9_sched_utc(d9_sched_wall_ns(st, v[i]->src,
					      v[i]->delay_max_at),
			     utc, sizeof(utc));
		fprintf(out, "max delay of %u (%s): %.1f us at %.6f s%s%s%s\n",
			v[i]->tid, v[i]->name[0] ? v[i]->name : "?",
			v[i]->delay_max / 1e3, v[i]->delay_max_at / 1e9,
			*utc ? " (" : "", utc, *utc ? ")" : "");
	}
	fprintf(out, "(runq_ms: total runqueue wait and waits its count%s; delays, avg, p50, p99, max: the waits whose length is known; unk: waits of unknown length%s)\n",
		" (exact from the scheduler's totals where the trace has them)",
		unknown ? ", not in the per-wait figures" : "");
	for (size_t i = 0; i < n; i++) {
		if (v[i]->sampled) {
			fprintf(out, "(schedstat samples: runqueue totals and run counts only; no switches, maxima or histogram)\n");
			break;
		}
	}
	for (size_t i = 0; o->culprits && i < n; i++)
		if (v[i]->nculprits) {
			fputc('\n', out);
			sched_culprits_text(st, v[i], 8, out);
		}
	if (o->explain) {
		fputc('\n', out);
		if (sched_explain_text(st, o->explain_ns, o->tid, 20, out))
			fprintf(stderr, "dial9: out of memory\n");
		fprintf(out, "(each delay: when it began, on which CPU it ended, whether the thread was preempted or woken and by whom, what ran on that CPU meanwhile, and the most any other CPU was idle meanwhile, where the balancer could have moved it)\n");
	}
	if (o->culprits && occupants(st))
		fprintf(out, "(culprits: what had the CPU a thread waited on, during its waits, on the CPU each wait ended on; every switch there meanwhile is in the trace (dial9.ko, or perf with CPU-wide events): tasks outside the recording by name when it was made with CAP_PERFMON, else as one culprit, \"other processes\")\n");
	else if (o->culprits)
		fprintf(out, "(culprits: what had the CPU a thread waited on, during its waits, on the CPU each wait ended on; this trace has only the recorded threads' switches (no sched.occupants: an older dial9.ko, the perf backend, or DIAL9_SCHED_OCCUPANTS=0): tasks outside the recording are one culprit, \"other processes\", and a gap between one and the idle task is \"idle or other processes\")\n");
	fputc('\n', out);
	sched_hist_print(st->hist, out);
	if (st->lost || st->nunfollowed)
		fprintf(out, "\nwarning: %" PRIu64 " scheduler records were lost and %zu processes not followed: figures are incomplete\n",
			st->lost, st->nunfollowed);
	free(v);
}
