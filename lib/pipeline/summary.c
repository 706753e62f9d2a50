// SPDX-License-Identifier: MIT
/*
 * summary.c - the summary of a sealed segment: one JSON line per thread
 * of it, with the figures of `dial9 sched` on that segment alone
 * (sched_stats.c computes both), compressed with gzip so that DuckDB,
 * Athena, Trino and Spark read it where it lies. docs/format.md has the
 * schema; the worker ships it beside the segment.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/text.h"
#include "sched/sched_read.h"
#include "pipeline/pipeline.h"

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/* "name":"2026-...Z" (or null without a clock sync) and "name_ns":N. */
static void wall_pair(FILE *f, const char *name, uint64_t wall_ns)
{
	char utc[40];

	d9_sched_utc(wall_ns, utc, sizeof(utc));
	fprintf(f, ",\"%s\":", name);
	if (*utc)
		d9_json_str(f, utc);
	else
		fputs("null", f);
	fprintf(f, ",\"%s_ns\":%" PRIu64, name, wall_ns);
}

/* Losses of the segment: every row carries them (they are per source). */
struct seg_losses {
	uint64_t sched, app, windows, unfollowed;
};

static void row(FILE *f, const struct sched_stats *st, struct sched_thread *t,
		const struct d9_summary_src *m, const struct seg_losses *l,
		uint64_t mono0, uint64_t mono1)
{
	const struct sched_source *s = &st->srcs[t->src];
	char name[sizeof(t->name) + 1];
	uint64_t hist[SCHED_HIST_BUCKETS] = { 0 };
	int top = -1;

	memcpy(name, t->name, sizeof(t->name));
	name[sizeof(t->name)] = 0;
	for (size_t i = 0; i < t->ndelays; i++)
		hist[d9_sched_hist_bucket(t->delays[i])]++;
	for (int i = 0; i < SCHED_HIST_BUCKETS; i++)
		if (hist[i])
			top = i;
	fputs("{\"host\":", f);
	d9_json_str(f, s->host ? s->host : m->host);
	fputs(",\"service_name\":", f);
	d9_json_str(f, s->service ? s->service : m->service);
	fputs(",\"boot_id\":", f);
	d9_json_str(f, s->boot_id ? s->boot_id : m->boot_id);
	fprintf(f, ",\"pid\":%u,\"tid\":%u,\"thread\":", t->tgid, t->tid);
	d9_json_str(f, name);
	fprintf(f, ",\"segment_index\":%" PRIu64 ",\"segment\":", m->index);
	d9_json_str(f, or_empty(m->segment));
	wall_pair(f, "window_start", d9_sched_wall_ns(st, t->src, mono0));
	wall_pair(f, "window_end", d9_sched_wall_ns(st, t->src, mono1));
	fprintf(f, ",\"window_start_mono_ns\":%" PRIu64
		",\"window_end_mono_ns\":%" PRIu64,
		mono0, mono1);
	fprintf(f, ",\"switches\":%" PRIu64 ",\"voluntary\":%" PRIu64
		",\"involuntary\":%" PRIu64 ",\"migrations\":%" PRIu64
		",\"on_cpu_ns\":%" PRIu64 ",\"runnable_ns\":%" PRIu64
		",\"blocked_ns\":%" PRIu64 ",\"unknown_ns\":%" PRIu64
		",\"runq_total_ns\":%" PRIu64 ",\"waits\":%" PRIu64
		",\"delay_count\":%" PRIu64 ",\"delay_sum_ns\":%" PRIu64
		",\"delay_max_ns\":%" PRIu64,
		t->voluntary + t->involuntary, t->voluntary, t->involuntary,
		t->migrations, t->on_cpu_ns, t->runnable_ns, t->blocked_ns,
		t->unknown_ns, t->runq_total_ns, t->waits, t->delay_count,
		t->delay_sum, t->delay_max);
	wall_pair(f, "delay_max_at", t->delay_count ?
		  d9_sched_wall_ns(st, t->src, t->delay_max_at) : 0);
	fprintf(f, ",\"delay_max_at_mono_ns\":%" PRIu64
		",\"delay_p50_ns\":%" PRIu64 ",\"delay_p99_ns\":%" PRIu64
		",\"unknown_delays\":%" PRIu64 ",\"hist_us_log2\":[",
		t->delay_count ? t->delay_max_at : 0,
		d9_sched_thread_percentile(t, 50),
		d9_sched_thread_percentile(t, 99), t->unknown_delays);
	for (int i = 0; i <= top; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", hist[i]);
	fprintf(f, "],\"lost_sched\":%" PRIu64 ",\"lost_app\":%" PRIu64
		",\"loss_windows\":%" PRIu64 ",\"unfollowed\":%" PRIu64
		",\"totals\":%s,\"sampled\":%s,\"sched_backend\":",
		l->sched, l->app, l->windows, l->unfollowed,
		t->totals || t->sstat_totals ? "true" : "false", t->sampled ? "true" : "false");
	d9_json_str(f, or_empty(s->backend));
	fputs("}\n", f);
}

static int gzip(const void *in, size_t n, void **out, size_t *outlen)
{
	z_stream z;
	uLong cap;
	void *buf;
	int ret;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip wrapper rather than zlib's */
	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)n) + 32;
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	ret = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}

int d9_summary_build(const void *seg, size_t len,
		     const struct d9_summary_src *m, void **out,
		     size_t *outlen, size_t *nrows)
{
	struct seg_losses l = { 0 };
	struct sched_stats st;
	uint64_t off, mono0;
	char *text = NULL;
	size_t tlen = 0;
	FILE *f;
	int ret;

	*out = NULL;
	*outlen = 0;
	*nrows = 0;
	if (len > UINT32_MAX)
		return -EFBIG;
	d9_sched_stats_init(&st);
	ret = d9_sched_trace(&st, seg, len, &off);
	if (ret) {
		d9_sched_stats_free(&st);
		return ret;
	}
	/* what dial9 sched does on the segment alone */
	d9_sched_stats_finish(&st, st.last_ns);
	l.sched = st.lost;
	l.app = st.lost_app;
	l.windows = st.nloss;
	l.unfollowed = st.nunfollowed;
	/* the window: from the segment's opening (its clock sync) */
	mono0 = st.nsrcs && st.srcs[0].synced ? st.srcs[0].sync_mono :
						st.first_ns;
	f = open_memstream(&text, &tlen);
	if (!f) {
		d9_sched_stats_free(&st);
		return -ENOMEM;
	}
	for (size_t i = 0; i < st.n; i++) {
		if (!d9_sched_thread_active(&st.threads[i]))
			continue;
		row(f, &st, &st.threads[i], m, &l, mono0, st.last_ns);
		(*nrows)++;
	}
	ret = ferror(f) ? -ENOMEM : 0;
	if (fclose(f))
		ret = -ENOMEM;
	if (!ret && *nrows)
		ret = gzip(text, tlen, out, outlen);
	free(text);
	d9_sched_stats_free(&st);
	return ret;
}
