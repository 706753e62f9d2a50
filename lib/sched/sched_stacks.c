// SPDX-License-Identifier: MIT
/*
 * sched_stacks.c - stacks and mappings of a trace, looked up by thread and
 * time and by address (sched_stacks.h).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "sched/sched_stacks.h"
#include "sched/sched_stats.h"

int d9_sched_stats_want_stacks(struct sched_stats *st)
{
	if (!st->stacks)
		st->stacks = calloc(1, sizeof(*st->stacks));
	return st->stacks ? 0 : -ENOMEM;
}

void d9_sched_stacks_free(struct sched_stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmaps; i++)
		free(s->maps[i].path);
	free(s->maps);
	free(s->pidx);
	for (size_t i = 0; i < s->nsyms; i++) {
		free(s->syms[i].name);
		free(s->syms[i].obj);
	}
	free(s->syms);
	for (size_t i = 0; i < s->nnotes; i++) {
		free(s->notes[i].obj);
		free(s->notes[i].why);
	}
	free(s->notes);
	free(s->wakers);
	free(s->samples);
	free(s->v);
	free(s->ips);
	free(s->open);
	memset(s, 0, sizeof(*s));
}

/* @n little-endian addresses at @frames onto s->ips, for @st. */
static int put_ips(struct sched_stacks *s, struct sched_stack *st,
		   const void *frames, size_t n)
{
	const unsigned char *p = frames;

	if (d9_grow((void **)&s->ips, &s->ips_cap, s->nips + n, sizeof(*s->ips)))
		return -ENOMEM;
	st->first = s->nips;
	st->n = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		uint64_t ip;

		memcpy(&ip, p + i * sizeof(ip), sizeof(ip));
		s->ips[s->nips++] = le64toh(ip);
	}
	return 0;
}

int d9_sched_stacks_sample(struct sched_stacks *s, uint32_t src, uint64_t ts,
			   uint32_t tid, uint32_t pid, const void *frames,
			   size_t n, bool truncated, uint64_t period_ns,
			   uint64_t missed)
{
	struct sched_stack st = { .src = src, .tid = tid, .pid = pid,
				  .ts = ts, .end = ts + period_ns,
				  .truncated = truncated };

	if (d9_grow((void **)&s->samples, &s->samples_cap, s->nsamples + 1,
		    sizeof(*s->samples)) || put_ips(s, &st, frames, n))
		return -ENOMEM;
	s->samples[s->nsamples++] = st;
	s->samples_missed += missed;
	return 0;
}

int d9_sched_stacks_add(struct sched_stacks *s, uint32_t src, uint64_t ts,
			uint32_t tid, uint32_t pid, const void *frames,
			size_t n, bool truncated, bool waker)
{
	struct sched_stack **v = waker ? &s->wakers : &s->v;
	size_t *nv = waker ? &s->nwakers : &s->n;
	struct sched_stack *st;

	if (d9_grow((void **)v, waker ? &s->wakers_cap : &s->cap, *nv + 1,
		    sizeof(**v)))
		return -ENOMEM;
	st = &(*v)[*nv];
	*st = (struct sched_stack){ .src = src, .tid = tid, .pid = pid,
				    .ts = ts, .truncated = truncated };
	if (put_ips(s, st, frames, n))
		return -ENOMEM;
	(*nv)++;
	if (waker) {
		s->wakers_sorted = false;
		return 0;
	}
	s->sorted = false;
	/* its thread's earlier stack, if still open, ended unseen */
	for (size_t i = 0; i < s->nopen; i++)
		if (s->v[s->open[i]].src == src && s->v[s->open[i]].tid == tid) {
			s->open[i] = s->n - 1;
			return 0;
		}
	if (d9_grow((void **)&s->open, &s->open_cap, s->nopen + 1,
		    sizeof(*s->open)))
		return -ENOMEM;
	s->open[s->nopen++] = s->n - 1;
	return 0;
}

void d9_sched_stacks_in(struct sched_stacks *s, uint32_t src, uint32_t tid,
			uint64_t ts)
{
	for (size_t i = 0; i < s->nopen; i++) {
		struct sched_stack *st = &s->v[s->open[i]];

		if (st->src != src || st->tid != tid)
			continue;
		if (ts >= st->ts)
			st->end = ts;
		s->open[i] = s->open[--s->nopen];
		return;
	}
}

static size_t slot_of(const struct sched_stacks *s, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (s->pidx_cap - 1);

	while (s->pidx[i].last && s->pidx[i].key != key)
		i = (i + 1) & (s->pidx_cap - 1);
	return i;
}

const struct sched_mapping *d9_sched_stacks_last_map(const struct sched_stacks *s,
						     uint32_t src, uint32_t pid)
{
	size_t i;

	if (!s->pidx_cap)
		return NULL;
	i = slot_of(s, (uint64_t)src << 32 | pid);
	return s->pidx[i].last ? &s->maps[s->pidx[i].last - 1] : NULL;
}

/* Index mapping @n (the last added) under its process. */
static int index_map(struct sched_stacks *s, size_t n)
{
	uint64_t key = (uint64_t)s->maps[n].src << 32 | s->maps[n].pid;
	size_t i;

	if (2 * (s->pidx_n + 1) > s->pidx_cap) {
		struct sched_map_slot *old = s->pidx;
		size_t ocap = s->pidx_cap, nc = ocap ? ocap * 2 : 256;

		s->pidx = calloc(nc, sizeof(*s->pidx));
		if (!s->pidx) {
			s->pidx = old;
			return -ENOMEM;
		}
		s->pidx_cap = nc;
		for (size_t j = 0; j < ocap; j++)
			if (old[j].last)
				s->pidx[slot_of(s, old[j].key)] = old[j];
		free(old);
	}
	i = slot_of(s, key);
	if (!s->pidx[i].last) {
		s->pidx[i].key = key;
		s->pidx_n++;
	}
	s->maps[n].prev = s->pidx[i].last;
	s->pidx[i].last = n + 1;
	return 0;
}

/*
 * Whether a mapping at @ts would name no frame otherwise than the
 * process's mappings already do: of those overlapping it with a time at
 * or before @ts, the newest (of equal times, the one read last) is the
 * same mapping (range, offset, path, build-id).  The recorder writes a
 * process's mappings again in each segment (docs/format.md): read
 * together, the segments keep one copy, so that naming a frame, which
 * walks its process's mappings, costs no more with every segment.
 */
static bool known_map(const struct sched_stacks *s, uint32_t src, uint32_t pid,
		      uint64_t ts, uint64_t start, uint64_t end,
		      uint64_t offset, const char *path, size_t pathlen,
		      const void *id, size_t idlen)
{
	const struct sched_mapping *w = NULL;

	/* the last read first: of equal times, the first met wins */
	for (const struct sched_mapping *m = d9_sched_stacks_last_map(s, src, pid);
	     m; m = m->prev ? &s->maps[m->prev - 1] : NULL)
		if (m->start < end && start < m->end && m->ts <= ts &&
		    (!w || m->ts > w->ts))
			w = m;
	if (idlen > SCHED_BUILD_ID_MAX)
		idlen = SCHED_BUILD_ID_MAX;	/* as kept */
	return w && w->start == start && w->end == end &&
	       w->offset == offset && w->build_id_len == idlen &&
	       (!idlen || !memcmp(w->build_id, id, idlen)) &&
	       strlen(w->path) == pathlen && !memcmp(w->path, path, pathlen);
}

int d9_sched_stacks_map(struct sched_stacks *s, uint32_t src, uint32_t pid,
			uint64_t ts, uint64_t start, uint64_t end,
			uint64_t offset,
			const char *path, size_t pathlen, const void *id,
			size_t idlen)
{
	struct sched_mapping *m;
	char *copy;

	if (known_map(s, src, pid, ts, start, end, offset, path, pathlen, id,
		      idlen))
		return 0;
	if (d9_grow((void **)&s->maps, &s->maps_cap, s->nmaps + 1,
		 sizeof(*s->maps)))
		return -ENOMEM;
	copy = strndup(path, pathlen);
	if (!copy)
		return -ENOMEM;
	m = &s->maps[s->nmaps++];
	*m = (struct sched_mapping){ .src = src, .pid = pid, .ts = ts,
				     .start = start,
				     .end = end, .offset = offset,
				     .path = copy };
	if (idlen > sizeof(m->build_id))
		idlen = sizeof(m->build_id);
	if (idlen)
		memcpy(m->build_id, id, idlen);
	m->build_id_len = (uint32_t)idlen;
	if (index_map(s, s->nmaps - 1)) {
		free(copy);
		s->nmaps--;
		return -ENOMEM;
	}
	return 0;
}

static int cmp_stack(const void *pa, const void *pb)
{
	const struct sched_stack *a = pa, *b = pb;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

static int stack_not_after(const void *elem, const void *key)
{
	return cmp_stack(elem, key) <= 0;
}

/* In @v (sorted by cmp_stack), the last stack of (@src, @tid) at or
 * before @ts, or NULL. */
static const struct sched_stack *last_before(const struct sched_stack *v,
					     size_t n, uint32_t src,
					     uint32_t tid, uint64_t ts)
{
	struct sched_stack key = { .src = src, .tid = tid, .ts = ts };
	size_t lo;

	/* The first stack after (src, tid, ts); the one before it. */
	key.first = SIZE_MAX;
	lo = d9_partition(v, n, sizeof(*v), stack_not_after, &key);
	if (!lo || v[lo - 1].src != src || v[lo - 1].tid != tid)
		return NULL;
	return &v[lo - 1];
}

const struct sched_stack *d9_sched_stacks_before(struct sched_stacks *s,
						 uint32_t src, uint32_t tid,
						 uint64_t ts)
{
	if (!s || !s->n)
		return NULL;
	if (!s->sorted) {
		d9_sort(s->v, s->n, sizeof(*s->v), cmp_stack);
		s->sorted = true;
		s->nopen = 0;	/* indexes into the order before */
	}
	/* strictly before: a stack at ts is the next switch-out's */
	return ts ? last_before(s->v, s->n, src, tid, ts - 1) : NULL;
}

const struct sched_stack *d9_sched_stacks_waker(struct sched_stacks *s,
						uint32_t src, uint32_t tid,
						uint64_t ts)
{
	const struct sched_stack *st;

	if (!s || !s->nwakers)
		return NULL;
	if (!s->wakers_sorted) {
		d9_sort(s->wakers, s->nwakers, sizeof(*s->wakers), cmp_stack);
		s->wakers_sorted = true;
	}
	/* written with its waking's time (uapi/linux/dial9.h) */
	st = last_before(s->wakers, s->nwakers, src, tid, ts);
	return st && st->ts == ts ? st : NULL;
}

static int cmp_symbol(const void *pa, const void *pb)
{
	const struct sched_symbol *a = pa, *b = pb;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

int d9_sched_stacks_symbol(struct sched_stacks *s, uint32_t src, uint32_t pid,
			   uint64_t ip, const char *name, size_t namelen,
			   uint64_t within, const char *obj, size_t objlen)
{
	struct sched_symbol *y;
	char *n, *o;

	if (d9_grow((void **)&s->syms, &s->syms_cap, s->nsyms + 1,
		    sizeof(*s->syms)))
		return -ENOMEM;
	n = strndup(name, namelen);
	o = strndup(obj, objlen);
	if (!n || !o) {
		free(n);
		free(o);
		return -ENOMEM;
	}
	/* names reach terminals and folded stacks: no control characters */
	for (char *p = n; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '_';
	y = &s->syms[s->nsyms++];
	*y = (struct sched_symbol){ .src = src, .pid = pid, .ip = ip,
				    .within = within, .name = n, .obj = o };
	s->syms_sorted = false;
	return 0;
}

int d9_sched_stacks_symbol_note(struct sched_stacks *s, uint32_t src,
				uint32_t pid, uint64_t frames, const char *obj,
				size_t objlen, const char *why, size_t whylen)
{
	struct sched_symbol_note *e;
	char *o, *w;

	if (d9_grow((void **)&s->notes, &s->notes_cap, s->nnotes + 1,
		    sizeof(*s->notes)))
		return -ENOMEM;
	o = strndup(obj, objlen);
	w = strndup(why, whylen);
	if (!o || !w) {
		free(o);
		free(w);
		return -ENOMEM;
	}
	e = &s->notes[s->nnotes++];
	*e = (struct sched_symbol_note){ .src = src, .pid = pid,
					 .frames = frames, .obj = o, .why = w };
	return 0;
}

const struct sched_symbol *d9_sched_stacks_find_symbol(struct sched_stacks *s,
						       uint32_t src,
						       uint32_t pid,
						       uint64_t ip)
{
	struct sched_symbol key = { .src = src, .pid = pid, .ip = ip };

	if (!s || !s->nsyms)
		return NULL;
	if (!s->syms_sorted) {
		d9_sort(s->syms, s->nsyms, sizeof(*s->syms), cmp_symbol);
		s->syms_sorted = true;
	}
	return bsearch(&key, s->syms, s->nsyms, sizeof(*s->syms), cmp_symbol);
}

void d9_sched_stacks_resolve(const struct sched_stacks *s, uint32_t src,
			     uint32_t pid, uint64_t ip, uint64_t ts,
			     struct sched_frame *f)
{
	const struct sched_mapping *before = NULL, *after = NULL;

	*f = (struct sched_frame){ .src = src, .pid = pid, .ip = ip };
	/* the process's own mappings, the last read first */
	for (const struct sched_mapping *m = d9_sched_stacks_last_map(s, src, pid);
	     m; m = m->prev ? &s->maps[m->prev - 1] : NULL) {
		if (ip < m->start || ip >= m->end)
			continue;
		/* of equal times, the one read last */
		if (m->ts <= ts && (!before || m->ts > before->ts))
			before = m;
		else if (m->ts > ts && (!after || m->ts <= after->ts))
			after = m;
	}
	f->m = before ? before : after;
	if (f->m)
		f->off = ip - f->m->start + f->m->offset;
}

void d9_sched_stacks_frame(const struct sched_stacks *s,
			   const struct sched_stack *st, uint32_t i,
			   char *buf, size_t len)
{
	const char *base = NULL, *name, *obj;
	struct sched_frame f;
	uint64_t within;

	d9_sched_stacks_resolve(s, st->src, st->pid, s->ips[st->first + i],
				st->ts, &f);
	if (f.m) {
		base = strrchr(f.m->path, '/');
		base = base && base[1] ? base + 1 : f.m->path;
	}
	obj = base;
	if (s->symbolize &&
	    !s->symbolize(s->sym_ctx, &f, &name, &within, &obj)) {
		if (s->names_only)
			snprintf(buf, len, "%s", name);
		else
			snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", name,
				 within, obj ? obj : "?");
	} else if (s->names_only) {
		/* a flame graph folds what has no name by its object, as
		 * perf script and flamegraph.pl do: one box, not a sliver
		 * per instruction */
		snprintf(buf, len, "[%s]", f.m ? base : "unknown");
	} else if (f.m) {
		snprintf(buf, len, "%s+0x%" PRIx64, base, f.off);
	} else {
		snprintf(buf, len, "0x%" PRIx64, f.ip);
	}
}
