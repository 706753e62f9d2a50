// SPDX-License-Identifier: MIT
/*
 * cmd_report.c - dial9 report --html [-o FILE] [--top N] TRACE...: one
 * self-contained HTML page with a zoomable per-thread timeline of
 * running / runnable / blocked states and spans, the runqueue delay
 * histogram (log2 microseconds, as `dial9 sched`), the worst delays (a
 * click on one zooms the timeline to it) and per-thread totals.
 *
 * The page (HTML, CSS, JavaScript) is tools/report.html, built into the
 * binary; this file writes its data as JSON where the page's
 * DIAL9_DATA marker is (see the comment at the top of report.html).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"
#include "sched_report.h"
#include "symbols/symbols.h"
#include "timeline.h"

/* tools/report.html, from build/tools/report_html.c (lib/lib.mk). */
extern const char dial9_report_html[];
extern const unsigned long dial9_report_html_len;

#define MARKER "/*DIAL9_DATA*/"
/* Culprits per thread in the page's table (`dial9 sched --culprits`). */
#define REPORT_CULPRITS 5

static void comma(FILE *f, bool *first)
{
	if (!*first)
		fputc(',', f);
	*first = false;
}

static void write_stats(FILE *f, const struct timeline *tl,
			const char *const *by_sched, const struct tl_thread *t)
{
	struct sched_thread *s = t->sched ? &tl->st.threads[t->sched - 1] : NULL;

	if (!s) {
		fputs("{\"vol\":0,\"invol\":0,\"on\":0,\"runq\":0,\"blk\":0,"
		      "\"unk\":0,\"waits\":0,\"n\":0,\"unkn\":0,\"avg\":0,"
		      "\"p99\":0,\"max\":0,\"cul\":[]}", f);
		return;
	}
	/* runq: the one total of sched_stats, as `dial9 sched` has it */
	fprintf(f, "{\"vol\":%llu,\"invol\":%llu,\"on\":%llu,\"runq\":%llu,"
		   "\"blk\":%llu,\"unk\":%llu,\"waits\":%llu,\"n\":%llu,"
		   "\"unkn\":%llu,\"avg\":%llu,\"p99\":%llu,\"max\":%llu",
		(unsigned long long)s->voluntary,
		(unsigned long long)s->involuntary,
		(unsigned long long)s->on_cpu_ns,
		(unsigned long long)s->runq_total_ns,
		(unsigned long long)s->blocked_ns,
		(unsigned long long)s->unknown_ns,
		(unsigned long long)s->waits,
		(unsigned long long)s->delay_count,
		(unsigned long long)s->unknown_delays,
		(unsigned long long)(s->delay_count ?
				     s->delay_sum / s->delay_count : 0),
		(unsigned long long)d9_sched_thread_percentile(s, 99),
		(unsigned long long)s->delay_max);
	/* the first culprits, as `dial9 sched --culprits`: [name, ns, waits] */
	fputs(",\"cul\":[", f);
	for (size_t i = 0; i < s->nculprits && i < REPORT_CULPRITS; i++) {
		const struct sched_culprit *c = &s->culprits[i];
		const char *name = report_culprit_label(tl, by_sched, s->src, c->kind,
							 c->tid, c->tgid);

		fputs(i ? ",[" : "[", f);
		tl_json_str(f, name, strlen(name));
		fprintf(f, ",%llu,%llu]", (unsigned long long)c->ns,
			(unsigned long long)c->waits);
	}
	fputs("]}", f);
}

/*
 * Span and instant names, and span arguments, are written once each in
 * two tables and referred to by index.
 */
struct table {
	uint32_t *id;		/* by pool offset: index + 1, 0 unlisted */
	uint32_t *list;		/* pool offsets in index order */
	uint32_t n;
};

static int table_init(struct table *t, const struct timeline *tl, size_t max)
{
	t->id = calloc(tl->pool_len + 1, sizeof(*t->id));
	t->list = calloc(max + 1, sizeof(*t->list));
	t->n = 0;
	return t->id && t->list ? 0 : -ENOMEM;
}

static void table_free(struct table *t)
{
	free(t->id);
	free(t->list);
}

static uint32_t table_id(struct table *t, uint32_t off)
{
	if (!t->id[off]) {
		t->list[t->n] = off;
		t->id[off] = ++t->n;
	}
	return t->id[off] - 1;
}

static void write_thread(FILE *f, const struct timeline *tl, uint32_t ti,
			 size_t *si, size_t *pi, struct table *names,
			 struct table *args, const char *const *by_sched)
{
	const struct tl_thread *t = &tl->threads[ti];
	const char *svc = tl_service(tl, t->pid);
	bool first;

	fprintf(f, "%s\n{\"tid\":%u,\"pid\":%u,\"name\":", ti ? "," : "",
		t->tid, t->pid);
	tl_json_str(f, t->name, strlen(t->name));
	fputs(",\"svc\":", f);
	tl_json_str(f, svc ? svc : "", svc ? strlen(svc) : 0);
	fputs(",\"st\":[", f);
	for (first = true; *si < tl->n_slices && tl->slices[*si].thread == ti;
	     (*si)++) {
		const struct tl_slice *s = &tl->slices[*si];

		comma(f, &first);
		fprintf(f, "%llu,%llu,%u",
			(unsigned long long)(s->start - tl->first_ns),
			(unsigned long long)(s->end - s->start), s->state);
	}
	fputs("],\"sp\":[", f);
	for (first = true; *pi < tl->n_spans && tl->spans[*pi].thread == ti;
	     (*pi)++) {
		const struct tl_span *s = &tl->spans[*pi];
		/* the arguments at the end, else at the begin */
		uint32_t a = s->args_end ? s->args_end : s->args_begin;

		comma(f, &first);
		fprintf(f, "%llu,%llu,%u,%u,%ld",
			(unsigned long long)(s->start - tl->first_ns),
			(unsigned long long)(s->end - s->start), s->depth,
			table_id(names, s->name),
			a ? (long)table_id(args, a) : -1L);
	}
	fputs("],\"mk\":[", f);
	first = true;
	for (size_t i = 0; i < tl->n_marks; i++) {
		const struct tl_mark *m = &tl->marks[i];

		if (m->thread != ti)
			continue;
		comma(f, &first);
		fprintf(f, "%llu,%u", (unsigned long long)(m->ts - tl->first_ns),
			table_id(names, m->name));
	}
	fputs("],\"s\":", f);
	write_stats(f, tl, by_sched, t);
	fputc('}', f);
}

static int write_data(FILE *f, const struct timeline *tl, size_t top)
{
	struct table names = { 0 }, args = { 0 };
	const char *svc = NULL, **by_sched;
	char title[160], utc[40];
	size_t si = 0, pi = 0;
	int ret;

	by_sched = calloc(tl->st.n + 1, sizeof(*by_sched));
	if (!by_sched || table_init(&names, tl, tl->n_spans + tl->n_marks) ||
	    table_init(&args, tl, tl->n_spans)) {
		free(by_sched);
		table_free(&names);
		table_free(&args);
		return -ENOMEM;
	}
	for (uint32_t ti = 0; ti < tl->n_threads; ti++)
		if (tl->threads[ti].sched && tl->threads[ti].name[0])
			by_sched[tl->threads[ti].sched - 1] = tl->threads[ti].name;
	for (size_t i = 0; i < tl->n_procs && !svc; i++)
		svc = tl_str(tl, tl->procs[i].service);
	snprintf(title, sizeof(title), "dial9 report%s%s", svc ? ": " : "",
		 svc ? svc : "");
	d9_sched_utc(d9_sched_wall_ns(&tl->st, 0, tl->first_ns), utc,
		     sizeof(utc));
	fputs("{\"title\":", f);
	tl_json_str(f, title, strlen(title));
	fprintf(f, ",\"start_utc\":\"%s\"", utc);
	fprintf(f, ",\"generator\":\"dial9 %s\",\"start_ns\":\"%llu\","
		   "\"dur\":%llu,\"files\":%u,\"lost_events\":%llu,"
		   "\"lost_sched\":%llu,",
		DIAL9_VERSION_STRING, (unsigned long long)tl->first_ns,
		(unsigned long long)(tl->last_ns - tl->first_ns), tl->files,
		(unsigned long long)tl->lost_events,
		(unsigned long long)tl->lost_sched);
	tl_json_sources(f, tl);
	fputs(",\"threads\":[", f);
	for (uint32_t ti = 0; ti < tl->n_threads; ti++)
		write_thread(f, tl, ti, &si, &pi, &names, &args, by_sched);
	fputs("],\n\"names\":[", f);
	for (uint32_t i = 0; i < names.n; i++) {
		const char *s = tl_str(tl, names.list[i]);

		if (i)
			fputc(',', f);
		tl_json_str(f, s, strlen(s));
	}
	fputs("],\n\"args\":[", f);
	for (uint32_t i = 0; i < args.n; i++)
		fprintf(f, "%s%s", i ? "," : "", tl_str(tl, args.list[i]));
	fputs("],\n\"hist\":[", f);
	for (int i = 0; i < SCHED_HIST_BUCKETS; i++)
		fprintf(f, "%s%llu", i ? "," : "",
			(unsigned long long)tl->st.hist[i]);
	fputs("],\n\"worst\":[", f);
	for (size_t i = 0; i < tl->n_delays && i < top; i++) {
		const struct tl_delay *d = &tl->delays[i];

		/* and the switch-in's wall clock, from its source's sync */
		d9_sched_utc(d9_sched_wall_ns(&tl->st, tl->threads[d->thread].src,
					      d->ts), utc, sizeof(utc));
		fprintf(f, "%s[%u,%llu,%llu,%s%s%s]", i ? "," : "", d->thread,
			(unsigned long long)(d->ts - tl->first_ns),
			(unsigned long long)d->ns, *utc ? "\"" : "",
			*utc ? utc : "null", *utc ? "\"" : "");
	}
	fputc(']', f);
	ret = report_why_json(f, tl, by_sched, top);
	fputc('}', f);
	free(by_sched);
	table_free(&names);
	table_free(&args);
	return ret;
}

static int write_page(FILE *f, const struct timeline *tl, size_t top);

struct page {
	const struct timeline *tl;
	size_t top;
};

static int write_report(FILE *f, void *arg)
{
	const struct page *p = arg;

	return write_page(f, p->tl, p->top);
}

static int write_page(FILE *f, const struct timeline *tl, size_t top)
{
	const char *page = dial9_report_html;
	const char *m = memmem(page, dial9_report_html_len, MARKER,
			       strlen(MARKER));
	size_t pre = (size_t)(m - page);
	int ret;

	fwrite(page, 1, pre, f);
	ret = write_data(f, tl, top);
	pre += strlen(MARKER);
	fwrite(page + pre, 1, dial9_report_html_len - pre, f);
	return ret;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: dial9 report --html [-o FILE] [--top N] TRACE...\n"
		     "\nOne self-contained HTML page (no network): a zoomable per-thread\n"
		     "timeline of running/runnable/blocked states and spans, the runqueue\n"
		     "delay histogram, the N worst delays (default 100; a click zooms the\n"
		     "timeline to one) and per-thread totals. -o - or no -o: stdout.\n");
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "html", no_argument, NULL, 'H' },
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *outpath = NULL;
	unsigned long long top = 100;
	struct timeline tl;
	struct d9_syms syms;
	bool html = false;
	struct page page;
	char *end;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'H': html = true; break;
		case 'o': outpath = optarg; break;
		case 'n':
			errno = 0;
			top = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end) {
				fprintf(stderr, "dial9 report: invalid number '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!html || optind >= argc) {
		if (!html)
			fprintf(stderr, "dial9 report: say which format (--html)\n");
		usage(stderr);
		return 2;
	}
	if (tl_load_args(&tl, argc - optind, argv + optind, "report",
			 TL_CULPRITS))
		return 1;
	/* the explanations' stacks: the trace's names, else the files here */
	d9_syms_init(&syms);
	syms.trace = tl.st.stacks;
	tl.st.stacks->symbolize = d9_syms_lookup;
	tl.st.stacks->sym_ctx = &syms;
	page.tl = &tl;
	page.top = (size_t)top;
	rc = cli_write_output("report", outpath, write_report, &page);
	if (!rc)
		d9_syms_notes(&syms, "report");
	tl_free(&tl);
	d9_syms_free(&syms);
	return rc;
}
