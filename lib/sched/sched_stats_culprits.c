// SPDX-License-Identifier: MIT
/*
 * sched_stats_culprits.c - sched_stats' side of sched_culprits.h: the
 * switches between tasks outside the recording and their names, which
 * go to the culprits only (no thread of the recording is made of them),
 * and, at the end, each thread's culprits from its waits.
 */
#include <errno.h>
#include <stdint.h>

#include "common/grow.h"
#include "sched/sched_stats.h"

int d9_sched_stats_cpu_switch(struct sched_stats *st, uint32_t src,
			      uint64_t ts, uint32_t cpu,
			      const struct sched_task *prev,
			      const struct sched_task *next)
{
	if (d9_sched_stats_cpu_seen(st, src, cpu, ts))
		return -ENOMEM;
	return st->culprits ? d9_culprits_switch(st->culprits, src, cpu, ts,
						 prev, next) : 0;
}

int d9_sched_stats_occupants(struct sched_stats *st, uint32_t src)
{
	return st->culprits ? d9_culprits_occupants(st->culprits, src) : 0;
}

int d9_sched_stats_occupant_name(struct sched_stats *st, uint32_t src,
				 uint32_t tid, const char *name, size_t len)
{
	return st->culprits && tid && tid != UINT32_MAX ?
	       d9_culprits_name(st->culprits, src, tid, name, len) : 0;
}

/* One overlap of a wait with an occupant: into the thread's culprits. */
static int add_culprit(void *ctx, size_t thread, const struct sched_occ *o,
		       uint64_t ns, size_t wait)
{
	struct sched_stats *st = ctx;
	struct sched_thread *t = &st->threads[thread];
	struct sched_culprit *c = NULL;

	if (o->kind == SCHED_OCC_THREAD && o->tid == t->tid &&
	    o->tgid == t->tgid)
		return 0;	/* itself: clocks of two CPUs a little apart */
	for (size_t i = 0; i < t->nculprits && !c; i++)
		if (t->culprits[i].kind == o->kind &&
		    (o->kind != SCHED_OCC_THREAD ||
		     (t->culprits[i].tid == o->tid &&
		      t->culprits[i].tgid == o->tgid)))
			c = &t->culprits[i];
	if (!c) {
		if (d9_grow((void **)&t->culprits, &t->culprits_cap,
			    t->nculprits + 1, sizeof(*c)))
			return -ENOMEM;
		c = &t->culprits[t->nculprits++];
		*c = (struct sched_culprit){ .kind = o->kind, .tid = o->tid,
					     .tgid = o->tgid };
	}
	c->ns += ns;
	if (c->last_wait != wait + 1) {
		c->waits++;
		c->last_wait = wait + 1;
	}
	return 0;
}

static int cmp_culprit(const void *pa, const void *pb)
{
	const struct sched_culprit *a = pa, *b = pb;

	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

int d9_sched_stats_culprits(struct sched_stats *st)
{
	int ret;

	if (!st->culprits)
		return 0;
	ret = d9_culprits_resolve(st->culprits, add_culprit, st);
	for (size_t i = 0; !ret && i < st->n; i++)
		d9_sort(st->threads[i].culprits, st->threads[i].nculprits,
			sizeof(struct sched_culprit), cmp_culprit);
	return ret;
}
