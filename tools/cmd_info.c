// SPDX-License-Identifier: MIT
/*
 * cmd_info.c - dial9 info TRACE...: first what was lost (scheduler
 * records per CPU with the time window of each loss, application events,
 * processes the kernel could not follow), and per CPU whether the trace's
 * records and losses add up to dial9.ko's own counts (sched.ring); then
 * per segment its metadata, events by type, time range, batches and
 * losses; then totals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "sched/sched_account.h"
#include "sched/sched_read.h"
#include "sched_report.h"

static FILE *o;			/* the body, printed after the losses */
static struct sched_stats losses;	/* of all files */
static struct d9_acct acct;		/* records per CPU, of all files */

struct type_count {
	char *name;
	uint64_t n;
};

struct summary {
	struct type_count *types;
	size_t ntypes;
	uint64_t events, lost, batches, streams, bytes;
	uint64_t invalid;	/* of lost: calls that did not match their type */
	uint64_t sched_lost, sched_windows;
	uint64_t first, last;
	uint64_t mono, real; /* a clock sync pair, 0 if none */
};

static void count_type(struct summary *s, const char *name)
{
	for (size_t i = 0; i < s->ntypes; i++) {
		if (!strcmp(s->types[i].name, name)) {
			s->types[i].n++;
			return;
		}
	}
	s->types = realloc(s->types, (s->ntypes + 1) * sizeof(*s->types));
	if (!s->types)
		abort();
	s->types[s->ntypes].name = strdup(name);
	s->types[s->ntypes].n = 1;
	s->ntypes++;
}

static void merge(struct summary *into, const struct summary *s)
{
	for (size_t i = 0; i < s->ntypes; i++)
		for (uint64_t k = 0; k < s->types[i].n; k++)
			count_type(into, s->types[i].name);
	if (s->events && (!into->events || s->first < into->first))
		into->first = s->first;
	if (s->last > into->last)
		into->last = s->last;
	into->events += s->events;
	into->lost += s->lost;
	into->invalid += s->invalid;
	into->sched_lost += s->sched_lost;
	into->sched_windows += s->sched_windows;
	into->batches += s->batches;
	into->streams += s->streams;
	into->bytes += s->bytes;
	if (!into->real && s->real) {
		into->mono = s->mono;
		into->real = s->real;
	}
}

static void free_summary(struct summary *s)
{
	for (size_t i = 0; i < s->ntypes; i++)
		free(s->types[i].name);
	free(s->types);
}

static int cmp_type(const void *a, const void *b)
{
	const struct type_count *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void print_time(const char *label, uint64_t ts, const struct summary *s)
{
	char utc[40] = "";

	/* as dump and sched show it; none from a hostile clock sync */
	if (s->real)
		d9_sched_utc(d9_wall_ns(s->mono, s->real, ts), utc, sizeof(utc));
	fprintf(o, "  %-8s %llu ns", label, (unsigned long long)ts);
	if (*utc)
		fprintf(o, "  (%s)", utc);
	fprintf(o, "\n");
}

static void print_summary(const struct summary *s)
{
	fprintf(o, "  events   %llu in %llu batches (%llu streams), %llu bytes",
	       (unsigned long long)s->events, (unsigned long long)s->batches,
	       (unsigned long long)s->streams, (unsigned long long)s->bytes);
	if (s->events)
		fprintf(o, ", %.1f bytes/event", (double)s->bytes / (double)s->events);
	fprintf(o, "\n  lost     %llu events (application", (unsigned long long)s->lost);
	if (s->invalid)
		fprintf(o, ", %llu of them invalid calls",
			(unsigned long long)s->invalid);
	fprintf(o, "), %llu scheduler records in %llu windows\n",
		(unsigned long long)s->sched_lost,
		(unsigned long long)s->sched_windows);
	if (s->events) {
		print_time("first", s->first, s);
		print_time("last", s->last, s);
		fprintf(o, "  span     %.6f s\n", (double)(s->last - s->first) / 1e9);
	}
	d9_sort(s->types, s->ntypes, sizeof(*s->types), cmp_type);
	for (size_t i = 0; i < s->ntypes; i++)
		fprintf(o, "  %12llu  %s\n", (unsigned long long)s->types[i].n,
		       s->types[i].name);
}

/* Losses, and the times of each CPU's events (where windows start). */
static int sched_event(struct summary *s, struct sched_fields *cache,
		       unsigned int *ncache, const struct dial9_record *r,
		       uint32_t src)
{
	struct sched_fields *f = NULL;
	uint64_t lost = losses.lost;
	int ret = 0;

	for (unsigned int i = 0; i < *ncache && !f; i++)
		if (cache[i].schema == r->schema)
			f = &cache[i];
	if (!f) {
		f = &cache[*ncache < 8 ? (*ncache)++ : 7];
		d9_sched_fields_lookup(f, r->schema);
	}
	if (d9_acct_feed(&acct, f, r, src))
		return -ENOMEM;
	switch (f->kind) {
	case SK_LOST:
		s->sched_windows++;
		/* fall through */
	case SK_UNFOLLOWED:
		ret = d9_sched_feed(&losses, f, r, src);
		break;
	case SK_APP_LOST: {
		/* "invalid": absent in traces of older writers */
		const struct dial9_value *inv = dial9_record_field(r, "invalid");

		if (inv && inv->type == DIAL9_U64)
			s->invalid += inv->u64;
		s->lost += d9_sched_fu64(r, f->events);
		losses.lost_app += d9_sched_fu64(r, f->events);
		break;
	}
	default:
		if (f->cpu >= 0)
			ret = d9_sched_stats_cpu_seen(&losses, src,
				(uint32_t)d9_sched_fu64(r, f->cpu), r->ts_ns);
	}
	s->sched_lost += losses.lost - lost;
	return ret;
}

static int info_file(const char *path, struct summary *s)
{
	struct sched_fields cache[8];
	unsigned int ncache = 0;
	struct cli_file f;
	struct dial9_decoder *d;
	struct dial9_record r;
	uint32_t src = 0;
	int ret = cli_map(path, &f);

	if (ret)
		return ret;
	fprintf(o, "%s\n", path);
	s->bytes = f.len;
	ret = dial9_decoder_new(&d, f.data, f.len);
	if (ret) {
		cli_unmap(&f);
		return ret;
	}
	while ((ret = dial9_decoder_next(d, &r)) == 1) {
		switch (r.kind) {
		case DIAL9_RECORD_STREAM:
			s->streams++;
			ncache = 0;	/* schemas are per stream */
			d9_acct_stream(&acct);
			break;
		case DIAL9_RECORD_BATCH_END:
			s->batches++;
			break;
		case DIAL9_RECORD_CLOCK_SYNC:
			if (!s->real) {
				s->mono = r.mono_ns;
				s->real = r.real_ns;
			}
			break;
		case DIAL9_RECORD_METADATA:
			ret = d9_sched_meta_source(&losses, &r);
			if (ret < 0)
				goto out;
			src = (uint32_t)ret;
			for (unsigned int i = 0; i < r.nkv; i++)
				fprintf(o, "  %.*s = %.*s\n", (int)r.kv[i].key_len,
				       r.kv[i].key, (int)r.kv[i].value_len,
				       r.kv[i].value);
			break;
		case DIAL9_RECORD_EVENT:
			if (!s->events || r.ts_ns < s->first)
				s->first = r.ts_ns;
			if (r.ts_ns > s->last)
				s->last = r.ts_ns;
			s->events++;
			count_type(s, r.schema->name);
			if (!strncmp(r.schema->name, "sched.", 6) ||
			    !strcmp(r.schema->name, "dial9.lost")) {
				ret = sched_event(s, cache, &ncache, &r, src);
				if (ret)
					goto out;
			}
			break;
		}
	}
out:
	if (ret == -ENOMEM)
		fprintf(stderr, "dial9: %s: out of memory\n", path);
	else if (ret < 0)
		cli_decode_error(path, ret, dial9_decoder_offset(d));
	dial9_decoder_free(d);
	cli_unmap(&f);
	return ret;
}

/*
 * Per CPU with dial9.ko's counts of its ring: whether the records in the
 * trace, those the recorder left out and the trace's losses add up to
 * what the kernel wrote and dropped.
 */
static void accounting_print(FILE *out)
{
	bool any = false;

	d9_acct_sort(&acct);
	for (size_t i = 0; i < acct.n; i++) {
		const struct d9_acct_cpu *c = &acct.v[i];
		const char *host = c->src < losses.nsrcs &&
				   losses.srcs[c->src].host ?
				   losses.srcs[c->src].host : "";

		if (!c->ring)
			continue;
		if (!any)
			fprintf(out, "records per CPU: the trace's against dial9.ko's counts at the end of the recording (sched.ring)\n");
		any = true;
		fprintf(out, "  %s%scpu %u: %" PRIu64 " in the trace + %" PRIu64
			" left out by the recorder + %" PRIu64 " lost = %" PRIu64
			" written + %" PRIu64 " dropped by the kernel: %s\n",
			host, *host ? " " : "", c->cpu, c->records, c->filtered,
			c->lost, c->written, c->klost,
			d9_acct_agrees(c) ? "agree" :
			"DIFFER (records missing from these files, or a segment cut short)");
	}
	if (acct.unplaced && any)
		fprintf(out, "  %" PRIu64 " records without a CPU (an older writer)\n",
			acct.unplaced);
}

int cmd_info(int argc, char **argv)
{
	struct summary total = { 0 };
	size_t body_len = 0;
	char *body = NULL;
	char **paths;
	int n, rc = 0;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: dial9 info TRACE...\n");
		return 2;
	}
	n = cli_collect(argc - 1, argv + 1, &paths);
	if (n < 0)
		return 1;
	o = open_memstream(&body, &body_len);
	if (!o) {
		fprintf(stderr, "dial9 info: out of memory\n");
		cli_free_paths(paths, n);
		return 1;
	}
	d9_sched_stats_init(&losses);
	d9_acct_init(&acct);
	for (int i = 0; i < n; i++) {
		struct summary s = { 0 };

		if (info_file(paths[i], &s))
			rc = 1;
		print_summary(&s);
		merge(&total, &s);
		free_summary(&s);
	}
	if (n > 1) {
		fprintf(o, "total: %d files\n", n);
		print_summary(&total);
	}
	free_summary(&total);
	cli_free_paths(paths, n);
	fclose(o);
	sched_losses_print(&losses, stdout);
	accounting_print(stdout);
	fputc('\n', stdout);
	fwrite(body, 1, body_len, stdout);
	free(body);
	d9_sched_stats_free(&losses);
	d9_acct_free(&acct);
	return rc;
}
