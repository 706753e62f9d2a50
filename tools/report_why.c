// SPDX-License-Identifier: MIT
/*
 * report_why.c - the report page's explanation of each of its worst
 * delays: how the wait began, who woke the thread, what held the CPU
 * meanwhile (as `dial9 sched --explain` says it) and the CPU's lane over
 * the wait, occupant by occupant, which the page draws on its timeline.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"
#include "sched_report.h"
#include "sched/sched_spans.h"
#include "sched/sched_stacks.h"

const char *report_culprit_label(const struct timeline *tl,
				 const char *const *by_sched, uint32_t src,
				 uint32_t kind, uint32_t tid, uint32_t tgid)
{
	long i = kind == SCHED_OCC_THREAD ?
		 d9_sched_stats_find(&tl->st, src, tid, tgid) : -1;

	if (i >= 0 && by_sched && by_sched[i])
		return by_sched[i];
	return sched_culprit_name(&tl->st, src, kind, tid, tgid);
}

struct lane {
	FILE *f;
	const struct timeline *tl;
	const char *const *by_sched;
	uint32_t src;
	bool first;
};

static int lane_piece(void *ctx, const struct sched_occ *o, uint64_t from,
		      uint64_t to)
{
	struct lane *l = ctx;
	const char *name = report_culprit_label(l->tl, l->by_sched, l->src,
						o->kind, o->tid, o->tgid);

	fprintf(l->f, "%s%" PRIu64 ",%" PRIu64 ",", l->first ? "" : ",",
		from - l->tl->first_ns, to - from);
	tl_json_str(l->f, name, strlen(name));
	l->first = false;
	return 0;
}

/* ,"@key":[frames] (as dial9 sched --explain shows them) or null */
static void stack_json(FILE *f, const struct timeline *tl,
		       const struct sched_stack *sk, const char *key)
{
	char frame[300];

	fprintf(f, ",\"%s\":", key);
	if (!sk) {
		fputs("null", f);
		return;
	}
	fputc('[', f);
	for (uint32_t i = 0; i < sk->n; i++) {
		d9_sched_stacks_frame(tl->st.stacks, sk, i, frame, sizeof(frame));
		if (i)
			fputc(',', f);
		tl_json_str(f, frame, strlen(frame));
	}
	fputc(']', f);
}

/* ,"span":{name, start} (the page's time) or null */
static void span_json(FILE *f, const struct timeline *tl,
		      const struct sched_wait *w)
{
	struct sched_stats *st = (struct sched_stats *)&tl->st;
	const struct sched_span *sp = st->spans ? sched_wait_span(st, w) : NULL;
	const char *name;

	fputs(",\"span\":", f);
	if (!sp) {
		fputs("null", f);
		return;
	}
	name = d9_sched_span_name(st->spans, sp);
	fputs("{\"name\":", f);
	tl_json_str(f, name, strlen(name));
	fprintf(f, ",\"start\":%" PRId64 "}",
		(int64_t)(sp->start - tl->first_ns));
}

/* The explanation of @y: {cpu, cause, waker, idle, ran, span, stack,
 * waker_stack, lane}. */
static int why_json(FILE *f, const struct timeline *tl,
		    const char *const *by_sched, const struct sched_explained *y)
{
	const struct sched_wait *w = y->w;
	struct lane l = { f, tl, by_sched, w->src, true };
	int ret;

	fprintf(f, "{\"cpu\":%u,\"cause\":\"%s\",\"idle\":%" PRIu64
		",\"waker\":", w->cpu, sched_cause_name(w->info.cause), y->idle);
	if (!w->info.waker_known) {
		fputs("null", f);
	} else if (w->info.waker_irq) {
		fputs("\"(interrupt)\"", f);
	} else {
		const char *name = report_culprit_label(tl, by_sched, w->src,
			w->info.waker_tid ? SCHED_OCC_THREAD : SCHED_OCC_IDLE,
			w->info.waker_tid, w->info.waker_tgid);

		tl_json_str(f, name, strlen(name));
	}
	fputs(",\"ran\":[", f);
	for (size_t i = 0; i < y->nran; i++) {
		const struct sched_culprit *c = &y->ran[i];
		const char *name = report_culprit_label(tl, by_sched, w->src,
							c->kind, c->tid,
							c->tgid);

		fputs(i ? ",[" : "[", f);
		tl_json_str(f, name, strlen(name));
		fprintf(f, ",%" PRIu64 "]", c->ns);
	}
	fputc(']', f);
	span_json(f, tl, w);
	if (tl->st.stacks) {
		/* only read: the stacks were sorted when first looked up */
		struct sched_stats *st = (struct sched_stats *)&tl->st;

		stack_json(f, tl, sched_wait_stack(st, w), "stack");
		stack_json(f, tl, sched_waker_stack(st, w), "waker_stack");
	} else {
		fputs(",\"stack\":null,\"waker_stack\":null", f);
	}
	/* the lane: the piece of the wait on the CPU where it ended */
	fprintf(f, ",\"from\":%" PRIu64 ",\"lane\":[", w->start - tl->first_ns);
	ret = d9_culprits_lane(tl->st.culprits, w->src, w->cpu, w->start,
			       w->end, lane_piece, &l);
	fputs("]}", f);
	return ret;
}

int report_why_json(FILE *f, const struct timeline *tl,
		    const char *const *by_sched, size_t top)
{
	struct sched_explained *v = NULL;
	uint64_t min_ns = UINT64_MAX;
	size_t n = 0;
	int ret = 0;

	fputs(",\n\"why\":[", f);
	for (size_t i = 0; i < tl->n_delays && i < top; i++)
		if (tl->delays[i].ns < min_ns)
			min_ns = tl->delays[i].ns;
	if (tl->n_delays && top)
		/* only read: the culprits were resolved when tl was loaded */
		ret = sched_explain_collect((struct sched_stats *)&tl->st,
					    min_ns, 0, &v, &n);
	for (size_t i = 0; !ret && i < tl->n_delays && i < top; i++) {
		const struct tl_delay *d = &tl->delays[i];
		uint32_t si = tl->threads[d->thread].sched;
		const struct sched_explained *y = NULL;

		/* the wait whose switch-in is this delay's */
		for (size_t k = 0; si && k < n && !y; k++)
			if (v[k].w->thread == si - 1 && v[k].w->end == d->ts)
				y = &v[k];
		if (i)
			fputc(',', f);
		if (y)
			ret = why_json(f, tl, by_sched, y);
		else
			fputs("null", f);
	}
	fputc(']', f);
	sched_explained_free(v, n);
	return ret;
}
