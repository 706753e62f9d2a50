// SPDX-License-Identifier: MIT
/*
 * replay.c - the events read, ordered by time, replayed into slices,
 * spans, marks, counter samples, flows and delays (see ../timeline.h for
 * the rules).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tl_internal.h"

static int cmp_raw(const void *a, const void *b)
{
	const struct raw *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int add_slice(struct timeline *tl, uint32_t ti, int state,
		     uint64_t start, uint64_t end, uint32_t flow)
{
	struct tl_slice *s;

	if (end < start)
		return 0;
	s = PUSH(tl, slices);
	if (!s)
		return -ENOMEM;
	s->start = start;
	s->end = end;
	s->thread = ti;
	s->state = (uint8_t)state;
	s->flow = flow;
	return 0;
}

static int span_open(struct timeline *tl, uint32_t ti, const struct raw *e,
		     uint64_t start, uint8_t flags)
{
	struct tl_thread *t = &tl->threads[ti];
	struct tl_span *s;

	if (cli_grow((void **)&t->stack, &t->stack_cap, t->depth + 1,
		 sizeof(*t->stack)))
		return -ENOMEM;
	s = PUSH(tl, spans);
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->start = start;
	s->end = start;
	s->thread = ti;
	s->name = e->name;
	s->args_begin = flags & TL_SPAN_NO_BEGIN ? 0 : e->args;
	s->flags = flags | TL_SPAN_UNFINISHED;
	t->stack[t->depth++] = (uint32_t)(tl->n_spans - 1);
	return 0;
}

/* End the innermost open span at ts; ended by its own end event or cut. */
static void span_close_top(struct timeline *tl, struct tl_thread *t,
			   uint64_t ts, bool ended, uint32_t args)
{
	struct tl_span *s = &tl->spans[t->stack[--t->depth]];

	s->end = ts;
	if (ended) {
		s->args_end = args;
		s->flags &= (uint8_t)~TL_SPAN_UNFINISHED;
	}
}

static int span_end(struct timeline *tl, uint32_t ti, const struct raw *e)
{
	struct tl_thread *t = &tl->threads[ti];
	size_t k = t->depth;

	while (k > 0 && tl->spans[t->stack[k - 1]].name != e->name)
		k--;
	if (k == 0) {
		if (t->depth) {
			tl->unmatched_ends++;	/* would cross an open span */
			return 0;
		}
		/* begun before the trace: it covers everything so far */
		if (span_open(tl, ti, e, tl->first_ns, TL_SPAN_NO_BEGIN))
			return -ENOMEM;
		k = 1;
	}
	while (t->depth > k)	/* inner spans never ended: cut here */
		span_close_top(tl, t, e->ts, false, 0);
	span_close_top(tl, t, e->ts, true, e->args);
	return 0;
}

static int counter_sample(struct timeline *tl, const struct raw *e)
{
	struct tl_counter *c = NULL;
	struct tl_sample *s;
	double v;

	memcpy(&v, &e->a, sizeof(v));
	for (size_t i = tl->n_counters; i-- > 0 && !c;)
		if (tl->counters[i].pid == e->pid &&
		    tl->counters[i].name == e->name &&
		    tl->counters[i].unit == e->args &&
		    tl->counters[i].gauge == (e->type == EV_GAUGE))
			c = &tl->counters[i];
	if (!c) {
		c = PUSH(tl, counters);
		if (!c)
			return -ENOMEM;
		memset(c, 0, sizeof(*c));
		c->pid = e->pid;
		c->name = e->name;
		c->unit = e->args;
		c->gauge = e->type == EV_GAUGE;
	}
	c->total = c->gauge ? v : c->total + v;
	s = PUSH(tl, samples);
	if (!s)
		return -ENOMEM;
	s->ts = e->ts;
	s->counter = (uint32_t)(c - tl->counters);
	s->value = c->total;
	s->thread = TL_NONE;
	if (e->tid) {
		long ti = tl_thread_get(tl, e->src, e->tid, e->pid, false);

		s->thread = ti >= 0 ? (uint32_t)ti : TL_NONE;
	}
	return 0;
}

static void raw_ev(const struct raw *e, struct sched_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->ts = e->ts;
	ev->src = e->src;
	ev->tid = e->tid;
	ev->tgid = e->pid;
	ev->cpu = e->cpu;
	ev->totals = e->bits & RAW_TOTALS;
	ev->runq_total = e->total;
	ev->runq_count = e->count;
	ev->other = e->name;
	ev->other_tgid = e->args == UINT32_MAX ? 0 : e->args;
	ev->prio = raw_prio(e, 0);
	ev->other_prio = raw_prio(e, 1);
	if (e->type == EV_OUT) {
		ev->runnable = e->flag;
		ev->dead = e->bits & RAW_DEAD;
	} else {
		ev->wait_known = e->flag;
		ev->wait_ns = e->a;
	}
}

/* The pieces of time sched_stats decided on, as slices of thread ti. */
static int add_pieces(struct timeline *tl, uint32_t ti,
		      const struct sched_result *r)
{
	struct tl_thread *t = &tl->threads[ti];
	int ret = 0;

	for (int i = 0; i < r->n && !ret; i++) {
		bool run = r->p[i].state == TL_RUNNING;

		ret = add_slice(tl, ti, r->p[i].state, r->p[i].start,
				r->p[i].end, run ? t->run_flow : 0);
		if (run)
			t->run_flow = 0;
	}
	t->state = tl->st.threads[r->thread].state;
	t->sched = (uint32_t)r->thread + 1;
	return ret;
}

static int switch_out(struct timeline *tl, uint32_t ti, const struct raw *e)
{
	struct sched_result r;
	struct sched_ev ev;
	int ret;

	raw_ev(e, &ev);
	ret = d9_sched_stats_out(&tl->st, &ev, &r);
	if (!ret)
		ret = add_pieces(tl, ti, &r);
	tl->threads[ti].run_flow = 0;
	return ret;
}

static int switch_in(struct timeline *tl, uint32_t ti, const struct raw *e)
{
	struct tl_thread *t = &tl->threads[ti];
	struct sched_result r;
	struct sched_ev ev;
	int ret;

	raw_ev(e, &ev);
	ret = d9_sched_stats_in(&tl->st, &ev, &r);
	if (!ret)
		ret = add_pieces(tl, ti, &r);	/* what it did before */
	if (ret)
		return ret;
	if (t->wake_pending) {
		struct tl_flow *f = PUSH(tl, flows);

		if (!f)
			return -ENOMEM;
		f->from = t->waker;
		f->from_ts = t->wake_ts;
		f->to = ti;
		f->to_ts = e->ts;
		t->run_flow = (uint32_t)tl->n_flows;
		t->wake_pending = false;
	}
	if (r.delay > 0) {
		struct tl_delay *d = PUSH(tl, delays);

		if (!d)
			return -ENOMEM;
		d->ts = e->ts;
		d->ns = r.delay_ns;
		d->thread = ti;
	}
	return 0;
}

/* Thread ti's open interval ends with the trace. */
static int thread_close(struct timeline *tl, uint32_t ti)
{
	struct tl_thread *t = &tl->threads[ti];
	struct sched_result r;

	if (!t->sched)
		return 0;
	d9_sched_stats_close(&tl->st, t->sched - 1, tl->last_ns, &r);
	return add_pieces(tl, ti, &r);
}

static int add_mark(struct timeline *tl, const struct raw *e, long ti)
{
	struct tl_mark *m = PUSH(tl, marks);

	if (!m)
		return -ENOMEM;
	m->ts = e->ts;
	m->thread = ti >= 0 ? (uint32_t)ti : TL_NONE;
	m->pid = e->pid;
	m->name = e->name;
	m->args = e->args;
	if (e->type == EV_SCHED_LOST) {
		m->thread = TL_NONE;	/* named sched.lost (read.c) */
		m->args = (uint32_t)tl->pool_len;
		if (tl_pool_printf(tl, "{\"records\":%llu}",
				(unsigned long long)e->a) || tl_pool_put(tl, "", 1))
			return -ENOMEM;
	}
	return 0;
}

static int replay_one(struct timeline *tl, const struct raw *e)
{
	long ti = e->tid ? tl_thread_get(tl, e->src, e->tid, e->pid, false) : -2;
	struct tl_thread *t = ti >= 0 ? &tl->threads[ti] : NULL;

	switch (e->type) {
	case EV_OUT:
		return switch_out(tl, (uint32_t)ti, e);
	case EV_IN:
		return switch_in(tl, (uint32_t)ti, e);
	case EV_WAKING: {
		long wi = tl_visible(e->a) ? tl_thread_get(tl, e->src, (uint32_t)e->a,
						     0, false) : -2;

		if (e->cpu != UINT32_MAX &&
		    d9_sched_stats_cpu_seen(&tl->st, e->src, e->cpu, e->ts))
			return -ENOMEM;
		/* the waker of the next wait, as `dial9 sched` has it */
		d9_sched_stats_waking(&tl->st, e->src, e->ts, e->tid, e->pid,
				      (uint32_t)e->a, e->count, e->flag);

		/* only a wake-up that makes a sleeping thread runnable */
		if (t && wi >= 0 && wi != ti && !e->flag &&
		    t->state != TL_RUNNING && !t->wake_pending) {
			t->wake_pending = true;
			t->wake_ts = e->ts;
			t->waker = (uint32_t)wi;
		}
		return 0;
	}
	case EV_COMM:
		tl_thread_name(t, tl_str(tl, e->name), strlen(tl_str(tl, e->name)),
			    1, e->ts);
		return 0;
	case EV_EXIT:
		/* it runs on to its last switch-out (state X), if the
		 * backend follows it there (perf does not: it ends here) */
		d9_sched_stats_exit(&tl->st, e->src, e->ts, e->tid, e->pid);
		if (!t)
			return 0;
		t->wake_pending = false;
		while (t->depth)
			span_close_top(tl, t, e->ts, false, 0);
		return 0;
	case EV_CPU_SWITCH: {
		uint32_t pt = e->name, nt = (uint32_t)e->a;
		uint32_t pp = (uint32_t)(e->a >> 32);
		struct sched_task prev = {
			pt, e->args == UINT32_MAX ? 0 : e->args,
			pt && pt != UINT32_MAX ? raw_prio(e, 0) : -1 };
		struct sched_task next = {
			nt, pp == UINT32_MAX ? 0 : pp,
			nt && nt != UINT32_MAX ? raw_prio(e, 1) : -1 };

		return d9_sched_stats_cpu_switch(&tl->st, e->src, e->ts, e->cpu,
						 &prev, &next);
	}
	case EV_MIGRATE:
		/* the timeline keeps no CPUs: culprits see no migration */
		d9_sched_stats_migrate(&tl->st, e->src, e->ts, e->tid, e->pid,
				       UINT32_MAX, UINT32_MAX);
		return 0;
	case EV_BEGIN:
		return t ? span_open(tl, (uint32_t)ti, e, e->ts, 0) : 0;
	case EV_END:
		return t ? span_end(tl, (uint32_t)ti, e) : 0;
	case EV_SCHED_LOST:
		if (d9_sched_stats_lost(&tl->st, e->src, e->ts, e->cpu, e->a))
			return -ENOMEM;
		return add_mark(tl, e, ti);
	case EV_INSTANT:
		return add_mark(tl, e, ti);
	case EV_COUNTER:
	case EV_GAUGE:
		return counter_sample(tl, e);
	}
	return 0;
}

static int cmp_slice(const void *a, const void *b)
{
	const struct tl_slice *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_span(const void *a, const void *b)
{
	const struct tl_span *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;	/* outer first */
}

static int cmp_delay(const void *a, const void *b)
{
	const struct tl_delay *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Depth of each span by containment, within its thread. */
static int span_depths(struct timeline *tl)
{
	uint64_t *ends = NULL;
	size_t cap = 0, n = 0;

	for (size_t i = 0; i < tl->n_spans; i++) {
		struct tl_span *s = &tl->spans[i];

		if (i == 0 || s->thread != tl->spans[i - 1].thread)
			n = 0;
		while (n && ends[n - 1] <= s->start)
			n--;
		if (cli_grow((void **)&ends, &cap, n + 1, sizeof(*ends))) {
			free(ends);
			return -ENOMEM;
		}
		s->depth = (uint32_t)n;
		ends[n++] = s->end;
	}
	free(ends);
	return 0;
}

int tl_replay(struct timeline *tl)
{
	struct priv *p = tl->priv;
	int ret = 0;

	if (p->nraw)
		d9_sort(p->raw, p->nraw, sizeof(*p->raw), cmp_raw);
	if (p->nraw) {
		tl->first_ns = p->raw[0].ts;
		tl->last_ns = p->raw[p->nraw - 1].ts;
	}
	for (size_t i = 0; i < p->nraw && !ret; i++)
		ret = replay_one(tl, &p->raw[i]);
	/* close what is still open at the end of the trace */
	for (size_t i = 0; i < tl->n_threads && !ret; i++) {
		struct tl_thread *t = &tl->threads[i];

		ret = thread_close(tl, (uint32_t)i);
		while (t->depth)
			span_close_top(tl, t, tl->last_ns, false, 0);
	}
	if (ret)
		return ret;
	d9_sched_stats_finish(&tl->st, tl->last_ns);
	ret = d9_sched_stats_culprits(&tl->st);	/* when collected */
	if (ret)
		return ret;
	if (tl->n_slices)
		d9_sort(tl->slices, tl->n_slices, sizeof(*tl->slices), cmp_slice);
	if (tl->n_spans)
		d9_sort(tl->spans, tl->n_spans, sizeof(*tl->spans), cmp_span);
	if (tl->n_delays)
		d9_sort(tl->delays, tl->n_delays, sizeof(*tl->delays), cmp_delay);
	return span_depths(tl);
}
