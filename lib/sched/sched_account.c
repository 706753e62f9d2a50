// SPDX-License-Identifier: MIT
/*
 * sched_account.c - the kernel records of a trace, counted per CPU and
 * checked against the counts of that CPU's ring (sched_account.h).
 *
 * One kernel record gives one event, except a switch between two
 * recorded tasks, which gives a sched.switch_out and then, next in the
 * same stream, the sched.switch_in of the same time and CPU whose tid is
 * the switch_out's next_tid and whose prev_tid is its tid: that pair is
 * one record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_account.h"

void d9_acct_init(struct d9_acct *a)
{
	memset(a, 0, sizeof(*a));
}

void d9_acct_free(struct d9_acct *a)
{
	for (uint32_t i = 0; i < a->nsrc; i++)
		free(a->src[i].cpu);
	free(a->src);
	memset(a, 0, sizeof(*a));
}

void d9_acct_stream(struct d9_acct *a)
{
	a->out = false;
}

/* The counts of (@src, @cpu), made if new; NULL without memory. */
static struct d9_acct_cpu *slot(struct d9_acct *a, uint32_t src,
				uint32_t cpu)
{
	struct d9_acct_src *s;

	if (src >= a->nsrc) {
		struct d9_acct_src *v = realloc(a->src, (src + 1) * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + a->nsrc, 0, (src + 1 - a->nsrc) * sizeof(*v));
		a->src = v;
		a->nsrc = src + 1;
	}
	s = &a->src[src];
	if (cpu >= s->ncpu) {
		uint32_t n = cpu + 1 > s->ncpu * 2 ? cpu + 1 : s->ncpu * 2;
		struct d9_acct_cpu *v;

		if (n > D9_ACCT_MAX_CPUS)
			n = D9_ACCT_MAX_CPUS;
		v = realloc(s->cpu, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + s->ncpu, 0, (n - s->ncpu) * sizeof(*v));
		s->cpu = v;
		s->ncpu = n;
	}
	return &s->cpu[cpu];
}

/* Whether @f is a kind of event that one kernel record gives. */
static bool is_record(int kind)
{
	switch (kind) {
	case SK_OUT: case SK_IN: case SK_WAKING: case SK_WAKEUP:
	case SK_MIGRATE: case SK_EXIT: case SK_COMM: case SK_UNFOLLOWED:
	case SK_STACK:
		return true;
	}
	return false;
}

/* Whether switch_in @r is the second event of the last switch_out's. */
static bool same_switch(const struct d9_acct *a, const struct sched_fields *f,
			const struct dial9_record *r, uint32_t src,
			uint64_t cpu)
{
	return a->out && a->out_src == src && a->out_ts == r->ts_ns &&
	       a->out_cpu == cpu && f->other >= 0 &&
	       a->out_next == d9_sched_fu64(r, f->tid) &&
	       a->out_tid == d9_sched_fu64(r, f->other);
}

int d9_acct_feed(struct d9_acct *a, const struct sched_fields *f,
		 const struct dial9_record *r, uint32_t src)
{
	uint64_t cpu = f->cpu >= 0 && r->values[f->cpu].type == DIAL9_U64 ?
		       r->values[f->cpu].u64 : UINT64_MAX;
	bool paired = f->kind == SK_IN && same_switch(a, f, r, src, cpu);
	struct d9_acct_cpu *c = NULL;

	a->out = f->kind == SK_OUT && f->other >= 0;
	if (a->out) {
		a->out_src = src;
		a->out_ts = r->ts_ns;
		a->out_cpu = cpu;
		a->out_tid = d9_sched_fu64(r, f->tid);
		a->out_next = d9_sched_fu64(r, f->other);
	}
	if (paired || (!is_record(f->kind) && f->kind != SK_LOST &&
		       f->kind != SK_RING))
		return 0;
	if (cpu >= D9_ACCT_MAX_CPUS) {
		a->unplaced += is_record(f->kind);
		return 0;
	}
	c = slot(a, src, (uint32_t)cpu);
	if (!c)
		return -ENOMEM;
	if (is_record(f->kind)) {
		c->records++;
	} else if (f->kind == SK_LOST) {
		c->lost += d9_sched_fu64(r, f->count);
	} else {
		/* the last one stands: counters only grow */
		c->ring = true;
		c->written = d9_sched_fu64(r, f->rwritten);
		c->klost = d9_sched_fu64(r, f->rlost);
		c->filtered = d9_sched_fu64(r, f->rfiltered);
	}
	return 0;
}

const struct d9_acct_cpu *d9_acct_get(const struct d9_acct *a, uint32_t src,
				      uint32_t cpu)
{
	const struct d9_acct_cpu *c;

	if (src >= a->nsrc || cpu >= a->src[src].ncpu)
		return NULL;
	c = &a->src[src].cpu[cpu];
	return c->records || c->lost || c->ring ? c : NULL;
}

bool d9_acct_agrees(const struct d9_acct_cpu *c)
{
	return c->ring && c->records + c->filtered == c->written &&
	       c->lost == c->klost;
}
