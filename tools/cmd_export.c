// SPDX-License-Identifier: MIT
/*
 * cmd_export.c - dial9 export --perfetto TRACE... [-o FILE]: Chrome
 * trace-event JSON, which Perfetto UI and chrome://tracing open.
 *
 * One track per thread (pid/tid, named).  On it, complete ("X") slices:
 * the application's spans, and under them the thread's running /
 * runnable / blocked states.  A state slice is cut where a span begins or
 * ends, so that every slice nests inside the innermost span open at its
 * time (a viewer needs proper nesting on one track) and shows what the
 * thread was doing inside that span.  A wake-up is a zero-length
 * "wakeup" slice on the waker's track with a flow (bind_id, flow_out) to
 * the wakee's next running slice (flow_in).  Instants are "i" events,
 * counters and gauges "C" events (a counter's value is its running
 * total).  Timestamps are microseconds with three decimals: exact
 * nanoseconds of CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "timeline.h"

enum { IT_SPAN, IT_STATE, IT_WAKE };

struct item {
	uint64_t start, end;
	uint32_t idx, flow;	/* flow: 1-based id ending here, or 0 */
	uint8_t kind;
};

struct out {
	FILE *f;
	bool first;
	uint64_t nevents;
};

static void ev_begin(struct out *o, char ph, uint32_t pid, uint32_t tid,
		     uint64_t ts)
{
	fputs(o->first ? "\n" : ",\n", o->f);
	o->first = false;
	o->nevents++;
	fprintf(o->f, "{\"ph\":\"%c\",\"pid\":%u,\"tid\":%u,\"ts\":", ph, pid,
		tid);
	tl_json_us(o->f, ts);
}

static void name_field(struct out *o, const char *key, const char *s)
{
	fprintf(o->f, ",\"%s\":", key);
	tl_json_str(o->f, s, strlen(s));
}

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)	/* outer (longer) first */
		return x->end > y->end ? -1 : 1;
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t pid_of(const struct tl_thread *t)
{
	return t->pid ? t->pid : t->tid;
}

static int push_item(struct item **v, size_t *n, size_t *cap, struct item it)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct item *nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = it;
	return 0;
}

/* The slices of one thread: spans, state pieces, wake-up markers. */
static int write_thread(struct out *o, const struct timeline *tl, uint32_t ti,
			size_t *si, size_t *pi)
{
	const struct tl_thread *t = &tl->threads[ti];
	size_t s0 = *si, s1 = s0, p0 = *pi, p1 = p0, n = 0, cap = 0, nb = 0;
	uint64_t *bounds = NULL;
	struct item *v = NULL;
	int ret = 0;

	while (s1 < tl->n_slices && tl->slices[s1].thread == ti)
		s1++;
	while (p1 < tl->n_spans && tl->spans[p1].thread == ti)
		p1++;
	*si = s1;
	*pi = p1;
	if (p1 > p0) {
		bounds = malloc(2 * (p1 - p0) * sizeof(*bounds));
		if (!bounds)
			return -ENOMEM;
		for (size_t i = p0; i < p1; i++) {
			bounds[nb++] = tl->spans[i].start;
			bounds[nb++] = tl->spans[i].end;
		}
		d9_sort(bounds, nb, sizeof(*bounds), cmp_u64);
	}
	for (size_t i = p0; i < p1 && !ret; i++)
		ret = push_item(&v, &n, &cap, (struct item){
			tl->spans[i].start, tl->spans[i].end, (uint32_t)i, 0,
			IT_SPAN });
	/* state slices, cut at span boundaries */
	for (size_t i = s0, b = 0; i < s1 && !ret; i++) {
		const struct tl_slice *s = &tl->slices[i];
		uint64_t from = s->start;
		uint32_t flow = s->flow;

		while (b < nb && bounds[b] <= s->start)
			b++;
		for (; b < nb && bounds[b] < s->end && !ret; b++) {
			if (bounds[b] == from)
				continue;
			ret = push_item(&v, &n, &cap, (struct item){
				from, bounds[b], (uint32_t)i, flow, IT_STATE });
			from = bounds[b];
			flow = 0;
		}
		if (!ret)
			ret = push_item(&v, &n, &cap, (struct item){
				from, s->end, (uint32_t)i, flow, IT_STATE });
	}
	for (size_t i = 0; i < tl->n_flows && !ret; i++)
		if (tl->flows[i].from == ti)
			ret = push_item(&v, &n, &cap, (struct item){
				tl->flows[i].from_ts, tl->flows[i].from_ts,
				(uint32_t)i, (uint32_t)i + 1, IT_WAKE });
	free(bounds);
	if (ret) {
		free(v);
		return ret;
	}
	if (n)
		d9_sort(v, n, sizeof(*v), cmp_item);
	for (size_t i = 0; i < n; i++) {
		const struct item *it = &v[i];

		ev_begin(o, 'X', pid_of(t), t->tid, it->start);
		fputs(",\"dur\":", o->f);
		tl_json_us(o->f, it->end - it->start);
		if (it->kind == IT_SPAN) {
			const struct tl_span *s = &tl->spans[it->idx];

			name_field(o, "name", tl_str(tl, s->name));
			fputs(",\"cat\":\"span\",\"args\":{", o->f);
			fprintf(o->f, "\"begin\":%s,\"end\":%s",
				s->args_begin ? tl_str(tl, s->args_begin) : "{}",
				s->args_end ? tl_str(tl, s->args_end) : "{}");
			if (s->flags & TL_SPAN_UNFINISHED)
				fputs(",\"unfinished\":true", o->f);
			if (s->flags & TL_SPAN_NO_BEGIN)
				fputs(",\"begin_before_trace\":true", o->f);
			fputc('}', o->f);
		} else if (it->kind == IT_STATE) {
			int st = tl->slices[it->idx].state;
			static const char *const cname[] = {
				"", "thread_state_running",
				"thread_state_runnable",
				"thread_state_sleeping",
				"thread_state_unknown",
			};

			fprintf(o->f, ",\"name\":\"%s\",\"cat\":\"sched\",\"cname\":\"%s\"",
				tl_state_name(st), cname[st]);
			if (it->flow)
				fprintf(o->f, ",\"bind_id\":\"0x%x\",\"flow_in\":true",
					it->flow);
		} else {
			const struct tl_thread *w =
				&tl->threads[tl->flows[it->idx].to];

			fprintf(o->f, ",\"name\":\"wakeup\",\"cat\":\"sched\","
				"\"bind_id\":\"0x%x\",\"flow_out\":true,"
				"\"args\":{\"wakee_tid\":%u", it->flow, w->tid);
			name_field(o, "wakee", w->name);
			fputc('}', o->f);
		}
		fputc('}', o->f);
	}
	free(v);
	return 0;
}

static void write_meta(struct out *o, const struct timeline *tl)
{
	uint32_t *pids = calloc(tl->n_threads + 1, sizeof(*pids));
	size_t np = 0;

	for (size_t i = 0; pids && i < tl->n_threads; i++) {
		const struct tl_thread *t = &tl->threads[i];
		uint32_t pid = pid_of(t);
		size_t j = 0;

		while (j < np && pids[j] != pid)
			j++;
		if (j == np) {
			const char *svc = tl_service(tl, pid);
			char buf[32];

			pids[np++] = pid;
			snprintf(buf, sizeof(buf), "pid %u", pid);
			ev_begin(o, 'M', pid, pid, 0);
			fputs(",\"name\":\"process_name\",\"args\":{\"name\":",
			      o->f);
			tl_json_str(o->f, svc ? svc : buf,
				    strlen(svc ? svc : buf));
			fputs("}}", o->f);
		}
		if (t->name[0]) {
			ev_begin(o, 'M', pid, t->tid, 0);
			fputs(",\"name\":\"thread_name\",\"args\":{\"name\":", o->f);
			tl_json_str(o->f, t->name, strlen(t->name));
			fputs("}}", o->f);
		}
	}
	free(pids);
}

static void write_marks(struct out *o, const struct timeline *tl)
{
	for (size_t i = 0; i < tl->n_marks; i++) {
		const struct tl_mark *m = &tl->marks[i];
		const struct tl_thread *t = m->thread != TL_NONE ?
					    &tl->threads[m->thread] : NULL;

		ev_begin(o, 'i', t ? pid_of(t) : m->pid, t ? t->tid : m->pid,
			 m->ts);
		fprintf(o->f, ",\"s\":\"%s\",\"cat\":\"instant\"",
			t ? "t" : m->pid ? "p" : "g");
		name_field(o, "name", tl_str(tl, m->name));
		if (m->args)
			fprintf(o->f, ",\"args\":%s", tl_str(tl, m->args));
		fputc('}', o->f);
	}
}

static void write_counters(struct out *o, const struct timeline *tl)
{
	for (size_t i = 0; i < tl->n_samples; i++) {
		const struct tl_sample *s = &tl->samples[i];
		const struct tl_counter *c = &tl->counters[s->counter];
		const char *unit = tl_str(tl, c->unit);

		if (!isfinite(s->value))
			continue;
		ev_begin(o, 'C', c->pid, c->pid, s->ts);
		name_field(o, "name", tl_str(tl, c->name));
		fprintf(o->f, ",\"cat\":\"%s\",\"args\":{",
			c->gauge ? "gauge" : "counter");
		tl_json_str(o->f, unit[0] ? unit : "value",
			    strlen(unit[0] ? unit : "value"));
		fprintf(o->f, ":%.17g}}", s->value);
	}
}

static int export_perfetto(const struct timeline *tl, FILE *f);

static int write_export(FILE *f, void *tl)
{
	return export_perfetto(tl, f);
}

static void json_str_or_null(FILE *f, const char *s)
{
	if (s)
		tl_json_str(f, s, strlen(s));
	else
		fputs("null", f);
}

/* Each source's clock sync: UTC = utc + (ts - mono_ns) on its tracks. */
static void write_clock_syncs(FILE *f, const struct timeline *tl)
{
	bool first = true;

	fputs(",\"clock_syncs\":[", f);
	for (size_t i = 0; i < tl->st.nsrcs; i++) {
		const struct sched_source *s = &tl->st.srcs[i];
		char utc[40];

		d9_sched_utc(d9_wall_ns(s->sync_mono, s->sync_real,
					s->sync_mono), utc, sizeof(utc));
		if (!s->synced || !*utc)
			continue;
		fputs(first ? "{\"host\":" : ",{\"host\":", f);
		first = false;
		json_str_or_null(f, s->host);
		fputs(",\"boot_id\":", f);
		json_str_or_null(f, s->boot_id);
		fprintf(f, ",\"mono_ns\":%llu,\"utc\":\"%s\"}",
			(unsigned long long)s->sync_mono, utc);
	}
	fputc(']', f);
}

static int export_perfetto(const struct timeline *tl, FILE *f)
{
	struct out o = { .f = f, .first = true };
	size_t si = 0, pi = 0;
	int ret = 0;

	char utc[40];

	/* The wall clock (UTC) of the first event, beside its trace time. */
	d9_sched_utc(d9_sched_wall_ns(&tl->st, 0, tl->first_ns), utc,
		     sizeof(utc));
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{"
		   "\"generator\":\"dial9 export %s\",\"files\":%u,"
		   "\"lost_events\":%llu,\"lost_sched_records\":%llu,"
		   "\"unmatched_span_ends\":%llu,\"first_event_ts_ns\":%llu,"
		   "\"first_event_utc\":%s%s%s",
		DIAL9_VERSION_STRING, tl->files,
		(unsigned long long)tl->lost_events,
		(unsigned long long)tl->lost_sched,
		(unsigned long long)tl->unmatched_ends,
		(unsigned long long)tl->first_ns, *utc ? "\"" : "",
		*utc ? utc : "null", *utc ? "\"" : "");
	write_clock_syncs(f, tl);
	fputc(',', f);
	tl_json_sources(f, tl);
	fputs("},\"traceEvents\":[", f);
	write_meta(&o, tl);
	for (uint32_t ti = 0; ti < tl->n_threads && !ret; ti++)
		ret = write_thread(&o, tl, ti, &si, &pi);
	write_marks(&o, tl);
	write_counters(&o, tl);
	fputs("\n]}\n", f);
	return ret;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: dial9 export --perfetto [-o FILE] TRACE...\n"
		     "\nChrome trace-event JSON for Perfetto UI (ui.perfetto.dev) and\n"
		     "chrome://tracing: per-thread running/runnable/blocked slices,\n"
		     "spans, instants, counters and wake-up flows. -o - or no -o: stdout.\n");
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "perfetto", no_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *outpath = NULL;
	struct timeline tl;
	bool perfetto = false;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'P': perfetto = true; break;
		case 'o': outpath = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!perfetto || optind >= argc) {
		if (!perfetto)
			fprintf(stderr, "dial9 export: say which format (--perfetto)\n");
		usage(stderr);
		return 2;
	}
	if (tl_load_args(&tl, argc - optind, argv + optind, "export", 0))
		return 1;
	rc = cli_write_output("export", outpath, write_export, &tl);
	tl_free(&tl);
	return rc;
}
