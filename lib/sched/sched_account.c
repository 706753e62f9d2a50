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

#include "common/grow.h"
#include "sched/sched_account.h"

void d9_acct_init(struct d9_acct *a)
{
	memset(a, 0, sizeof(*a));
}

void d9_acct_free(struct d9_acct *a)
{
	free(a->v);
	free(a->index);
	memset(a, 0, sizeof(*a));
}

void d9_acct_stream(struct d9_acct *a)
{
	a->out = false;
}

static size_t hash(uint32_t src, uint32_t cpu, size_t mask)
{
	uint64_t k = ((uint64_t)src << 32 | cpu) * 0x9e3779b97f4a7c15ull;

	return (size_t)(k >> 32) & mask;
}

/* The index slot of (@src, @cpu): its entry's, or the empty one to use. */
static size_t find(const struct d9_acct *a, uint32_t src, uint32_t cpu)
{
	size_t mask = a->nindex - 1, i = hash(src, cpu, mask);

	while (a->index[i]) {
		const struct d9_acct_cpu *c = &a->v[a->index[i] - 1];

		if (c->src == src && c->cpu == cpu)
			break;
		i = (i + 1) & mask;
	}
	return i;
}

/* An index twice as long (at least 64 slots); 0 or -ENOMEM. */
static int reindex(struct d9_acct *a)
{
	size_t n = a->nindex ? a->nindex * 2 : 64;
	uint32_t *old = a->index;

	a->index = calloc(n, sizeof(*a->index));
	if (!a->index) {
		a->index = old;
		return -ENOMEM;
	}
	free(old);
	a->nindex = n;
	for (size_t e = 0; e < a->n; e++)
		a->index[find(a, a->v[e].src, a->v[e].cpu)] = (uint32_t)e + 1;
	return 0;
}

/* The counts of (@src, @cpu), made if new; NULL without memory. */
static struct d9_acct_cpu *slot(struct d9_acct *a, uint32_t src,
				uint32_t cpu)
{
	size_t i;

	if ((a->n + 1) * 2 > a->nindex && reindex(a))
		return NULL;
	i = find(a, src, cpu);
	if (a->index[i])
		return &a->v[a->index[i] - 1];
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		struct d9_acct_cpu *v = cap < UINT32_MAX ?
					realloc(a->v, cap * sizeof(*v)) : NULL;

		if (!v)
			return NULL;
		a->v = v;
		a->cap = cap;
	}
	memset(&a->v[a->n], 0, sizeof(a->v[0]));
	a->v[a->n].src = src;
	a->v[a->n].cpu = cpu;
	a->index[i] = (uint32_t)++a->n;
	return &a->v[a->n - 1];
}

/* Whether @f is a kind of event that one kernel record gives. */
static bool is_record(int kind)
{
	switch (kind) {
	case SK_OUT: case SK_IN: case SK_WAKING: case SK_WAKEUP:
	case SK_MIGRATE: case SK_EXIT: case SK_COMM: case SK_UNFOLLOWED:
	case SK_STACK: case SK_CPU_SWITCH: case SK_OCCUPANT_COMM: case SK_SAMPLE:
	case SK_UNKNOWN:	/* a record of a type the reader does not know */
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
	size_t i;

	if (!a->nindex)
		return NULL;
	i = find(a, src, cpu);
	return a->index[i] ? &a->v[a->index[i] - 1] : NULL;
}

static int cmp_cpu(const void *x, const void *y)
{
	const struct d9_acct_cpu *p = x, *q = y;

	if (p->src != q->src)
		return p->src < q->src ? -1 : 1;
	return p->cpu < q->cpu ? -1 : p->cpu > q->cpu;
}

void d9_acct_sort(struct d9_acct *a)
{
	d9_sort(a->v, a->n, sizeof(a->v[0]), cmp_cpu);
	for (size_t i = 0; i < a->nindex; i++)
		a->index[i] = 0;
	for (size_t e = 0; e < a->n; e++)
		a->index[find(a, a->v[e].src, a->v[e].cpu)] = (uint32_t)e + 1;
}

bool d9_acct_agrees(const struct d9_acct_cpu *c)
{
	return c->ring && c->records + c->filtered == c->written &&
	       c->lost == c->klost;
}
