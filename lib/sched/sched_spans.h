/* SPDX-License-Identifier: MIT */
/*
 * sched_spans.h - the application's spans of a trace, for `dial9 sched
 * --explain`: which span was open on a thread when a wait began.
 *
 * Span begin and end events (schemas of kind DIAL9_KIND_SPAN_BEGIN and
 * _END, named by the application) come in per thread, in any order
 * between threads and files; at the first lookup they are ordered and
 * paired per thread, last in first out by name, as the timeline pairs
 * them (tools/timeline.h): an end closes the innermost open span of its
 * name and cuts those inside it; an end with no begin is left out; a
 * begin never ended stays open to the end of the trace.
 */
#ifndef DIAL9_SCHED_SPANS_H
#define DIAL9_SCHED_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sched_span_ev {
	uint32_t src, tid, name;	/* name: index into names */
	bool begin;
	uint64_t ts;
	size_t seq;			/* order of arrival, for equal times */
};

struct sched_span {
	uint32_t src, tid, name;
	uint64_t start, end;		/* end UINT64_MAX: never ended */
	size_t parent;			/* index + 1 of the span it is in */
};

struct sched_spans {
	struct sched_span_ev *ev;
	size_t nev, ev_cap;
	char **names;
	size_t nnames, names_cap;
	/* after the first lookup: by (src, tid, start) */
	struct sched_span *v;
	size_t n, cap;
	bool built;
};

struct sched_stats;

/* Collect spans into st->spans from now on; -ENOMEM. */
int d9_sched_stats_want_spans(struct sched_stats *st);
void d9_sched_spans_free(struct sched_spans *s);
/* A begin (@begin) or end of span @name of thread (@src, @tid) at @ts;
 * -ENOMEM. */
int d9_sched_spans_add(struct sched_spans *s, uint32_t src, uint32_t tid,
		       uint64_t ts, const char *name, size_t len, bool begin);
/* The innermost span open on thread (@src, @tid) at @ts, or NULL;
 * -ENOMEM on the first call is a NULL with *@err set (may be NULL). */
const struct sched_span *d9_sched_spans_at(struct sched_spans *s,
					   uint32_t src, uint32_t tid,
					   uint64_t ts, int *err);
static inline const char *d9_sched_span_name(const struct sched_spans *s,
					     const struct sched_span *sp)
{
	return s->names[sp->name];
}

#endif
