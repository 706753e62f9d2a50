// SPDX-License-Identifier: MIT
/*
 * sched_spans.c - application spans paired per thread and looked up by
 * time (sched_spans.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "sched/sched_spans.h"
#include "sched/sched_stats.h"

int d9_sched_stats_want_spans(struct sched_stats *st)
{
	if (!st->spans)
		st->spans = calloc(1, sizeof(*st->spans));
	return st->spans ? 0 : -ENOMEM;
}

void d9_sched_spans_free(struct sched_spans *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nnames; i++)
		free(s->names[i]);
	free(s->names);
	free(s->ev);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* The index of @name among s->names, added if new; -ENOMEM. */
static long name_index(struct sched_spans *s, const char *name, size_t len)
{
	/* span types are few: the newest first */
	for (size_t i = s->nnames; i-- > 0;)
		if (!strncmp(s->names[i], name, len) && !s->names[i][len])
			return (long)i;
	if (d9_grow((void **)&s->names, &s->names_cap, s->nnames + 1,
		    sizeof(*s->names)))
		return -ENOMEM;
	s->names[s->nnames] = strndup(name, len);
	if (!s->names[s->nnames])
		return -ENOMEM;
	return (long)s->nnames++;
}

int d9_sched_spans_add(struct sched_spans *s, uint32_t src, uint32_t tid,
		       uint64_t ts, const char *name, size_t len, bool begin)
{
	long ni = name_index(s, name, len);

	if (ni < 0)
		return (int)ni;
	if (d9_grow((void **)&s->ev, &s->ev_cap, s->nev + 1, sizeof(*s->ev)))
		return -ENOMEM;
	s->ev[s->nev] = (struct sched_span_ev){ src, tid, (uint32_t)ni, begin,
						ts, s->nev };
	s->nev++;
	s->built = false;
	return 0;
}

static int cmp_ev(const void *pa, const void *pb)
{
	const struct sched_span_ev *a = pa, *b = pb;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/*
 * Pair the events, thread by thread: spans in start order per thread
 * (so by (src, tid, start)), each with the span it is in.
 */
static int build(struct sched_spans *s)
{
	size_t open = 0;	/* index + 1 of the innermost open span */

	d9_sort(s->ev, s->nev, sizeof(*s->ev), cmp_ev);
	s->n = 0;
	for (size_t i = 0; i < s->nev; i++) {
		const struct sched_span_ev *e = &s->ev[i];
		size_t k;

		if (i && (e->src != e[-1].src || e->tid != e[-1].tid))
			open = 0;	/* another thread */
		if (e->begin) {
			if (d9_grow((void **)&s->v, &s->cap, s->n + 1,
				    sizeof(*s->v)))
				return -ENOMEM;
			s->v[s->n] = (struct sched_span){ e->src, e->tid,
				e->name, e->ts, UINT64_MAX, open };
			open = ++s->n;
			continue;
		}
		/* the innermost open span of its name, cutting those inside */
		for (k = open; k && s->v[k - 1].name != e->name;)
			k = s->v[k - 1].parent;
		if (!k)
			continue;	/* its begin is not in the trace */
		for (; open != s->v[k - 1].parent; open = s->v[open - 1].parent)
			s->v[open - 1].end = e->ts;
	}
	s->built = true;
	return 0;
}

/* Whether span @elem sorts before the thread's spans begun after @key's
 * start (the order of build()). */
static int span_not_after(const void *elem, const void *key)
{
	const struct sched_span *m = elem, *k = key;

	return m->src < k->src || (m->src == k->src && (m->tid < k->tid ||
	       (m->tid == k->tid && m->start <= k->start)));
}

const struct sched_span *d9_sched_spans_at(struct sched_spans *s,
					   uint32_t src, uint32_t tid,
					   uint64_t ts, int *err)
{
	struct sched_span key = { .src = src, .tid = tid, .start = ts };
	size_t lo;
	int ret;

	if (!s || !s->nev)
		return NULL;
	if (!s->built && (ret = build(s))) {
		if (err)
			*err = ret;
		return NULL;
	}
	/* just after the last span of the thread begun at or before ts */
	lo = d9_partition(s->v, s->n, sizeof(*s->v), span_not_after, &key);
	if (!lo || s->v[lo - 1].src != src || s->v[lo - 1].tid != tid)
		return NULL;
	/* the spans open at ts are it and those it is in: the innermost */
	for (size_t k = lo; k; k = s->v[k - 1].parent)
		if (s->v[k - 1].end > ts)
			return &s->v[k - 1];
	return NULL;
}
