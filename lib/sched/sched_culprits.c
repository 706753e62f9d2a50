// SPDX-License-Identifier: MIT
/*
 * sched_culprits.c - who had the CPU while a thread waited for it
 * (sched_culprits.h says what the trace can and cannot tell).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "sched_culprits.h"

void d9_culprits_free(struct sched_culprits *c)
{
	free(c->occ);
	free(c->waits);
	free(c->outs);
	free(c->outs_at);
	free(c->occ_src);
	free(c->names);
	memset(c, 0, sizeof(*c));
}

static int add_occ(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		   uint32_t kind, const struct sched_task *t, uint64_t start,
		   uint64_t end)
{
	bool thread = kind == SCHED_OCC_THREAD;

	if (end <= start)
		return 0;
	if (d9_grow((void **)&c->occ, &c->occ_cap, c->nocc + 1,
		    sizeof(*c->occ)))
		return -ENOMEM;
	c->occ[c->nocc++] = (struct sched_occ){
		start, end, src, cpu, kind, thread ? t->tid : 0,
		thread ? t->tgid : 0, thread ? t->prio : -1 };
	return 0;
}

int d9_culprits_ran(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		    const struct sched_task *t, uint64_t start, uint64_t end)
{
	return add_occ(c, src, cpu, SCHED_OCC_THREAD, t, start, end);
}

int d9_culprits_occupants(struct sched_culprits *c, uint32_t src)
{
	if (src >= c->nocc_src) {
		size_t n = (size_t)src + 1;
		uint8_t *v = realloc(c->occ_src, n);

		if (!v)
			return -ENOMEM;
		memset(v + c->nocc_src, 0, n - c->nocc_src);
		c->occ_src = v;
		c->nocc_src = n;
	}
	c->occ_src[src] = 1;
	return 0;
}

bool d9_culprits_has_occupants(const struct sched_culprits *c, uint32_t src)
{
	return src < c->nocc_src && c->occ_src[src];
}

int d9_culprits_name(struct sched_culprits *c, uint32_t src, uint32_t tid,
		     const char *name, size_t len)
{
	struct sched_occ_name *n = NULL;

	/* newest first: a task is named again when its name changed */
	for (size_t i = c->nnames; i-- > 0 && !n;)
		if (c->names[i].src == src && c->names[i].tid == tid)
			n = &c->names[i];
	if (!n) {
		if (d9_grow((void **)&c->names, &c->names_cap, c->nnames + 1,
			    sizeof(*c->names)))
			return -ENOMEM;
		n = &c->names[c->nnames++];
		n->src = src;
		n->tid = tid;
	}
	memset(n->name, 0, sizeof(n->name));
	len = strnlen(name, len < sizeof(n->name) ? len : sizeof(n->name) - 1);
	memcpy(n->name, name, len);
	return 0;
}

const char *d9_culprits_name_of(const struct sched_culprits *c, uint32_t src,
				uint32_t tid)
{
	for (size_t i = c ? c->nnames : 0; i-- > 0;)
		if (c->names[i].src == src && c->names[i].tid == tid)
			return c->names[i].name;
	return NULL;
}

static size_t out_slot(const struct sched_culprits *c, uint32_t src,
		       uint32_t cpu)
{
	uint64_t h = ((uint64_t)src << 32 | cpu) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (c->outs_at_cap - 1);
}

/* Index outs[] anew in a table of @cap slots (a power of two). */
static int outs_rehash(struct sched_culprits *c, size_t cap)
{
	uint32_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	free(c->outs_at);
	c->outs_at = t;
	c->outs_at_cap = cap;
	for (size_t i = 0; i < c->nouts; i++) {
		size_t k = out_slot(c, c->outs[i].src, c->outs[i].cpu);

		while (t[k])
			k = (k + 1) & (cap - 1);
		t[k] = (uint32_t)(i + 1);
	}
	return 0;
}

/* The last switch-out of @cpu of source @src (made if @create). */
static struct sched_cpu_out *cpu_out(struct sched_culprits *c, uint32_t src,
				     uint32_t cpu, bool create)
{
	size_t k;

	if (c->outs_at_cap) {
		for (k = out_slot(c, src, cpu); c->outs_at[k];
		     k = (k + 1) & (c->outs_at_cap - 1)) {
			struct sched_cpu_out *o = &c->outs[c->outs_at[k] - 1];

			if (o->src == src && o->cpu == cpu)
				return o;
		}
	}
	if (!create || c->nouts >= UINT32_MAX - 1 ||
	    d9_grow((void **)&c->outs, &c->outs_cap, c->nouts + 1,
		    sizeof(*c->outs)))
		return NULL;
	if (2 * (c->nouts + 1) >= c->outs_at_cap &&
	    outs_rehash(c, c->outs_at_cap ? 2 * c->outs_at_cap : 64))
		return NULL;
	c->outs[c->nouts] = (struct sched_cpu_out){ .src = src, .cpu = cpu };
	k = out_slot(c, src, cpu);
	while (c->outs_at[k])
		k = (k + 1) & (c->outs_at_cap - 1);
	c->outs_at[k] = (uint32_t)(++c->nouts);
	return &c->outs[c->nouts - 1];
}

int d9_culprits_out(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		    uint64_t ts, const struct sched_task *next)
{
	struct sched_cpu_out *o = cpu_out(c, src, cpu, true);

	if (!o)
		return -ENOMEM;
	o->ts = ts;
	o->next = *next;
	return 0;
}

/* The idle task is tid 0; any other tid a switch names here is foreign
 * (a recorded one has its own switch-in, which closes the gap at once). */
static uint32_t gap_kind(uint32_t next, uint32_t prev)
{
	if (!next && !prev)
		return SCHED_OCC_IDLE;
	if (next && prev)
		return SCHED_OCC_OTHERS;
	return SCHED_OCC_IDLE_OR_OTHERS;
}

/* What one task of a switch is as an occupant. */
static uint32_t task_kind(uint32_t tid)
{
	return !tid ? SCHED_OCC_IDLE : tid == UINT32_MAX ? SCHED_OCC_OTHERS :
	       SCHED_OCC_THREAD;
}

/*
 * The gap open on @o ends at @ts with @prev leaving the CPU: whose it was
 * (sched_culprits.h).  Both ends name the same task: that task's (the
 * idle task, tasks outside the recording redacted, or a task the
 * recording sees but does not record, such as the recorder's own threads
 * or, with occupants, any task of a privileged recording).
 */
static int close_gap(struct sched_culprits *c, struct sched_cpu_out *o,
		     uint64_t ts, const struct sched_task *prev)
{
	struct sched_task t = *prev;
	int ret = 0;

	if (!o->ts || o->ts > ts)
		return 0;
	if (o->next.tid == prev->tid) {
		if (!t.tgid)
			t.tgid = o->next.tgid;
		if (o->next.prio >= 0)
			t.prio = o->next.prio;
		ret = add_occ(c, o->src, o->cpu, task_kind(t.tid), &t, o->ts,
			      ts);
	} else if (d9_culprits_has_occupants(c, o->src)) {
		ret = add_occ(c, o->src, o->cpu, task_kind(t.tid), &t, o->ts,
			      ts);
	} else {
		ret = add_occ(c, o->src, o->cpu,
			      gap_kind(o->next.tid, prev->tid), &t, o->ts, ts);
	}
	o->ts = 0;
	return ret;
}

int d9_culprits_in(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		   uint64_t ts, const struct sched_task *prev)
{
	struct sched_cpu_out *o = cpu_out(c, src, cpu, false);

	/* the CPU's next gap starts at a switch-out */
	return o ? close_gap(c, o, ts, prev) : 0;
}

int d9_culprits_switch(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		       uint64_t ts, const struct sched_task *prev,
		       const struct sched_task *next)
{
	struct sched_cpu_out *o = cpu_out(c, src, cpu, true);
	int ret;

	if (!o)
		return -ENOMEM;
	ret = close_gap(c, o, ts, prev);
	o->ts = ts;
	o->next = *next;
	return ret;
}

void d9_culprits_lost(struct sched_culprits *c, uint32_t src, uint32_t cpu)
{
	struct sched_cpu_out *o = cpu_out(c, src, cpu, false);

	if (o)
		o->ts = 0;
}

int d9_culprits_wait(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		     size_t thread, uint64_t start, uint64_t end,
		     const struct sched_wait_info *info, bool more)
{
	size_t id = c->more ? c->nids - 1 : c->nids++;

	c->more = more;
	if (end <= start)
		return 0;
	if (d9_grow((void **)&c->waits, &c->waits_cap, c->nwaits + 1,
		    sizeof(*c->waits)))
		return -ENOMEM;
	c->waits[c->nwaits++] = (struct sched_wait){ start, end, src, cpu,
						     thread, id, *info };
	return 0;
}

void d9_culprits_clamp(struct sched_culprits *c, size_t i, uint64_t wait_ns)
{
	size_t id = c->waits[i].id;
	uint64_t left = wait_ns;

	for (size_t j = i + 1; j-- > 0 && c->waits[j].id == id;) {
		struct sched_wait *w = &c->waits[j];

		if (w->end - w->start > left)
			w->start = w->end - left;
		left -= w->end - w->start;
		if (w->info.delay_ns > wait_ns)
			w->info.delay_ns = wait_ns;
	}
}

static int cmp_occ(const void *pa, const void *pb)
{
	const struct sched_occ *a = pa, *b = pb;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

static int occ_before(const void *elem, const void *key)
{
	return cmp_occ(elem, key) < 0;
}

/* The first interval of (@src, @cpu) that ends after @t, or c->nocc. */
static size_t first_after(const struct sched_culprits *c, uint32_t src,
			  uint32_t cpu, uint64_t t)
{
	struct sched_occ key = { .src = src, .cpu = cpu, .start = t };
	/* the first interval at or past (src, cpu, t) ... */
	size_t lo = d9_partition(c->occ, c->nocc, sizeof(*c->occ), occ_before,
				 &key);

	/* ... or the one before, if it still runs at t */
	if (lo > 0 && c->occ[lo - 1].src == src && c->occ[lo - 1].cpu == cpu &&
	    c->occ[lo - 1].end > t)
		lo--;
	return lo;
}

/*
 * From occupant *@i on, the next one of (@src, @cpu) that overlaps
 * [start, end), with the overlap's length in *@ns; NULL past the last.
 */
static const struct sched_occ *next_overlap(const struct sched_culprits *c,
					    size_t *i, uint32_t src,
					    uint32_t cpu, uint64_t start,
					    uint64_t end, uint64_t *ns)
{
	for (; *i < c->nocc; (*i)++) {
		const struct sched_occ *o = &c->occ[*i];
		uint64_t s = o->start > start ? o->start : start;
		uint64_t e = o->end < end ? o->end : end;

		if (o->src != src || o->cpu != cpu || o->start >= end)
			break;
		if (e > s) {
			*ns = e - s;
			(*i)++;
			return o;
		}
	}
	return NULL;
}

int d9_culprits_lane(const struct sched_culprits *c, uint32_t src,
		     uint32_t cpu, uint64_t start, uint64_t end,
		     int (*fn)(void *ctx, const struct sched_occ *o,
			       uint64_t from, uint64_t to),
		     void *ctx)
{
	size_t i = first_after(c, src, cpu, start);
	const struct sched_occ *o;
	uint64_t ns;
	int ret = 0;

	while (!ret && (o = next_overlap(c, &i, src, cpu, start, end, &ns)))
		ret = fn(ctx, o, o->start > start ? o->start : start,
			 (o->start > start ? o->start : start) + ns);
	return ret;
}

int d9_culprits_resolve(struct sched_culprits *c,
			int (*add)(void *ctx, size_t thread,
				   const struct sched_occ *o, uint64_t ns,
				   size_t wait),
			void *ctx)
{
	d9_sort(c->occ, c->nocc, sizeof(*c->occ), cmp_occ);
	for (size_t w = 0; w < c->nwaits; w++) {
		const struct sched_wait *wt = &c->waits[w];
		size_t i = first_after(c, wt->src, wt->cpu, wt->start);
		const struct sched_occ *o;
		uint64_t ns;

		while ((o = next_overlap(c, &i, wt->src, wt->cpu, wt->start,
					 wt->end, &ns))) {
			int ret = add(ctx, wt->thread, o, ns, wt->id);

			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Time of @cpu of @src in the idle task over [start, end). */
static uint64_t idle_on(const struct sched_culprits *c, uint32_t src,
			uint32_t cpu, uint64_t start, uint64_t end)
{
	size_t i = first_after(c, src, cpu, start);
	const struct sched_occ *o;
	uint64_t idle = 0, ns;

	while ((o = next_overlap(c, &i, src, cpu, start, end, &ns)))
		if (o->kind == SCHED_OCC_IDLE)
			idle += ns;
	return idle;
}

static bool same_occupant(const struct sched_culprit *a,
			  const struct sched_occ *b)
{
	return a->kind == b->kind &&
	       (a->kind != SCHED_OCC_THREAD ||
		(a->tid == b->tid && a->tgid == b->tgid));
}

int d9_culprits_explain(struct sched_culprits *c, uint64_t min_ns,
			int (*fn)(void *ctx, const struct sched_wait *w,
				  const struct sched_culprit *ran, size_t n,
				  uint64_t idle_elsewhere_ns),
			void *ctx)
{
	struct sched_culprit *ran = NULL;
	uint64_t idle = 0;
	size_t cap = 0, n = 0;
	int ret = 0;

	for (size_t w = 0; !ret && w < c->nwaits; w++) {
		const struct sched_wait *wt = &c->waits[w];
		bool last = w + 1 == c->nwaits || c->waits[w + 1].id != wt->id;
		const struct sched_occ *o;
		uint64_t ns;
		size_t i;

		if (!wt->info.delay_ns || wt->info.delay_ns < min_ns)
			continue;
		i = first_after(c, wt->src, wt->cpu, wt->start);
		while (!ret && (o = next_overlap(c, &i, wt->src, wt->cpu,
						 wt->start, wt->end, &ns))) {
			size_t j;

			for (j = 0; j < n && !same_occupant(&ran[j], o); j++)
				;
			if (j == n && d9_grow((void **)&ran, &cap, n + 1,
					      sizeof(*ran))) {
				ret = -ENOMEM;
				break;
			}
			if (j == n)
				ran[n++] = (struct sched_culprit){
					.kind = o->kind, .tid = o->tid,
					.tgid = o->tgid, .prio = -1,
					.waits = 1 };
			ran[j].ns += ns;
			if (o->prio >= 0)
				ran[j].prio = o->prio;
		}
		/* The most any other CPU of the source was idle meanwhile. */
		for (size_t k = 0; !ret && k < c->nouts; k++) {
			if (c->outs[k].src != wt->src || c->outs[k].cpu == wt->cpu)
				continue;
			ns = idle_on(c, wt->src, c->outs[k].cpu, wt->start,
				     wt->end);
			if (ns > idle)
				idle = ns;
		}
		/* the pieces of a migrated wait, then the wait */
		if (!ret && last) {
			ret = fn(ctx, wt, ran, n, idle);
			n = 0;
			idle = 0;
		}
	}
	free(ran);
	return ret;
}
