// SPDX-License-Identifier: MIT
/*
 * flame_fold.c - a trace's stacks folded for `dial9 flame` (flame.h).
 *
 * Off-CPU: each stack a thread left the CPU with weighs the time from
 * that switch-out to its next switch-in; on-CPU: each sample weighs one.
 * A time window and an application span keep the part of an off-CPU
 * stack's time inside them (and inside the span on that thread), and the
 * samples taken inside them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "flame.h"
#include "sched/sched_stacks.h"

/* Append @s to @buf (at *@at, room @len) with ';' and controls as '_'. */
static void put_frame(char *buf, size_t len, size_t *at, const char *s)
{
	for (; *s && *at + 1 < len; s++)
		buf[(*at)++] = *s == ';' || (unsigned char)*s < 0x20 ? '_' : *s;
	buf[*at] = '\0';
}

static int add_stack(struct flame *f, const struct sched_stack *sk,
		     uint64_t v)
{
	char key[4096], frame[512], label[48];
	const struct sched_thread *t;
	long ti;
	size_t at = 0;

	ti = d9_sched_stats_find(f->st, sk->src, sk->tid, sk->pid);
	t = ti >= 0 ? &f->st->threads[ti] : NULL;
	snprintf(label, sizeof(label), "%s %u",
		 t && t->name[0] ? t->name : "?", sk->tid);
	put_frame(key, sizeof(key), &at, label);
	for (uint32_t i = sk->n; i-- > 0;) {
		d9_sched_stacks_frame(f->st->stacks, sk, i, frame, sizeof(frame));
		if (at + 2 < sizeof(key))
			key[at++] = ';';
		put_frame(key, sizeof(key), &at, frame);
	}
	if (d9_grow((void **)&f->v, &f->cap, f->n + 1, sizeof(*f->v)))
		return -ENOMEM;
	f->v[f->n].key = strdup(key);
	if (!f->v[f->n].key)
		return -ENOMEM;
	f->v[f->n++].v = v;
	return 0;
}

int flame_span_add(struct flame *f, uint32_t src, uint32_t tid,
		   uint64_t start, uint64_t end)
{
	if (end <= start)
		return 0;
	if (d9_grow((void **)&f->spans, &f->spans_cap, f->nspans + 1,
		    sizeof(*f->spans)))
		return -ENOMEM;
	f->spans[f->nspans++] = (struct flame_span){ src, tid, start, end };
	return 0;
}

static int span_cmp(const void *pa, const void *pb)
{
	const struct flame_span *a = pa, *b = pb;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* Sort the spans and merge the overlapping ones of each thread (nested). */
static void spans_merge(struct flame *f)
{
	size_t n = 0;

	d9_sort(f->spans, f->nspans, sizeof(*f->spans), span_cmp);
	for (size_t i = 0; i < f->nspans; i++) {
		struct flame_span *last = n ? &f->spans[n - 1] : NULL;
		const struct flame_span *s = &f->spans[i];

		if (last && last->src == s->src && last->tid == s->tid &&
		    s->start <= last->end) {
			if (s->end > last->end)
				last->end = s->end;
		} else {
			f->spans[n++] = *s;
		}
	}
	f->nspans = n;
}

static int span_before(const void *elem, const void *key)
{
	return span_cmp(elem, key) < 0;
}

/* The time of [a, b) inside the window and, with a span, inside it. */
static uint64_t kept(const struct flame *f, uint32_t src, uint32_t tid,
		     uint64_t a, uint64_t b)
{
	struct flame_span key = { src, tid, 0, 0 };
	uint64_t sum = 0;
	size_t lo;

	if (a < f->from)
		a = f->from;
	if (b > f->to)
		b = f->to;
	if (b <= a)
		return 0;
	if (!f->span)
		return b - a;
	/* the thread's first span */
	lo = d9_partition(f->spans, f->nspans, sizeof(*f->spans), span_before,
			  &key);
	for (size_t i = lo; i < f->nspans && f->spans[i].src == src &&
	     f->spans[i].tid == tid && f->spans[i].start < b; i++) {
		uint64_t s = f->spans[i].start > a ? f->spans[i].start : a;
		uint64_t e = f->spans[i].end < b ? f->spans[i].end : b;

		if (e > s)
			sum += e - s;
	}
	return sum;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct folded *)a)->key,
		      ((const struct folded *)b)->key);
}

static int by_value(const void *pa, const void *pb)
{
	const struct folded *a = pa, *b = pb;

	if (a->v != b->v)
		return a->v > b->v ? -1 : 1;
	return strcmp(a->key, b->key);
}

/* Each stack (or sample) that passes the filters, with its weight. */
static int collect(struct flame *f)
{
	const struct sched_stacks *s = f->st->stacks;
	const struct sched_stack *v = f->on_cpu ? s->samples : s->v;
	size_t n = f->on_cpu ? s->nsamples : s->n;
	int ret = 0;

	for (size_t i = 0; !ret && i < n; i++) {
		const struct sched_stack *sk = &v[i];
		uint64_t w;

		if (f->tid && sk->tid != f->tid)
			continue;
		if (!sk->end) {
			f->open++;
			continue;
		}
		w = kept(f, sk->src, sk->tid, sk->ts, f->on_cpu ? sk->ts + 1 :
							      sk->end);
		if (w)
			ret = add_stack(f, sk, f->on_cpu ? 1 : w);
	}
	return ret;
}

int flame_fold(struct flame *f)
{
	size_t n = 0;
	int ret;

	if (!f->to)
		f->to = UINT64_MAX;
	if (f->span)
		spans_merge(f);
	ret = collect(f);
	if (ret)
		return ret;
	d9_sort(f->v, f->n, sizeof(*f->v), by_key);
	for (size_t i = 0; i < f->n; i++) {
		if (n && !strcmp(f->v[n - 1].key, f->v[i].key)) {
			f->v[n - 1].v += f->v[i].v;
			free(f->v[i].key);
		} else {
			f->v[n++] = f->v[i];
		}
	}
	f->n = n;
	f->total = 0;
	for (size_t i = 0; i < n; i++)
		f->total += f->v[i].v;
	d9_sort(f->v, f->n, sizeof(*f->v), by_value);
	return 0;
}

void flame_free(struct flame *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].key);
	free(f->v);
	free(f->spans);
	f->v = NULL;
	f->spans = NULL;
	f->n = f->nspans = 0;
}

int flame_write_folded(FILE *out, void *arg)
{
	const struct flame *f = arg;

	for (size_t i = 0; i < f->n; i++)
		fprintf(out, "%s %" PRIu64 "\n", f->v[i].key,
			f->on_cpu ? f->v[i].v : (f->v[i].v + 500) / 1000);
	return 0;
}
