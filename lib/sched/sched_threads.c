// SPDX-License-Identifier: MIT
/*
 * sched_threads.c - the sources and threads of sched_stats.c: a source
 * per (host, boot id), a thread per (source, tid, process), found
 * through an open-addressing table of indexes.  A tid that another
 * process of the source reuses is a new thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "sched/sched_stats.h"

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

int d9_sched_stats_source(struct sched_stats *st, const char *host,
		       const char *boot_id)
{
	struct sched_source *s, *ns;

	for (size_t i = 0; i < st->nsrcs; i++)
		if (same_str(st->srcs[i].host, host) &&
		    same_str(st->srcs[i].boot_id, boot_id))
			return (int)i;
	ns = realloc(st->srcs, (st->nsrcs + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	st->srcs = ns;
	s = &ns[st->nsrcs];
	memset(s, 0, sizeof(*s));
	s->host = host ? strdup(host) : NULL;
	s->boot_id = boot_id ? strdup(boot_id) : NULL;
	if ((host && !s->host) || (boot_id && !s->boot_id)) {
		free(s->host);
		free(s->boot_id);
		return -ENOMEM;
	}
	return (int)st->nsrcs++;
}

struct sched_source *d9_sched_stats_src(struct sched_stats *st, uint32_t src)
{
	while (st->nsrcs <= src)
		if (d9_sched_stats_source(st, NULL, NULL) < 0)
			return NULL;
	return &st->srcs[src];
}

static size_t hash(uint32_t src, uint32_t tid, size_t cap)
{
	return (size_t)((tid * 2654435761u) ^ (src * 40503u)) & (cap - 1);
}

static int rehash(struct sched_stats *st)
{
	size_t nc = st->tab_cap ? st->tab_cap * 2 : 256;
	uint32_t *nt = calloc(nc, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (size_t j = 0; j < st->n; j++) {
		size_t i = hash(st->threads[j].src, st->threads[j].tid, nc);

		while (nt[i])
			i = (i + 1) & (nc - 1);
		nt[i] = (uint32_t)j + 1;
	}
	free(st->tab);
	st->tab = nt;
	st->tab_cap = nc;
	return 0;
}

long d9_sched_stats_find(const struct sched_stats *st, uint32_t src,
			 uint32_t tid, uint32_t tgid)
{
	if (!st->tab_cap)
		return -1;
	for (size_t i = hash(src, tid, st->tab_cap); st->tab[i];
	     i = (i + 1) & (st->tab_cap - 1)) {
		const struct sched_thread *t = &st->threads[st->tab[i] - 1];

		if (t->src == src && t->tid == tid &&
		    (!tgid || !t->tgid || t->tgid == tgid))
			return (long)st->tab[i] - 1;
	}
	return -1;
}

long d9_sched_stats_thread(struct sched_stats *st, uint32_t src, uint32_t tid,
			uint32_t tgid)
{
	struct sched_thread *t;
	long ti;
	size_t i;

	if ((st->n + 1) * 2 >= st->tab_cap && rehash(st))
		return -ENOMEM;
	/* A tid reused by another process of the source is a new thread. */
	ti = d9_sched_stats_find(st, src, tid, tgid);
	if (ti >= 0) {
		t = &st->threads[ti];
		if (!t->tgid)
			t->tgid = tgid;
		return ti;
	}
	for (i = hash(src, tid, st->tab_cap); st->tab[i];
	     i = (i + 1) & (st->tab_cap - 1))
		;
	if (d9_grow((void **)&st->threads, &st->cap, st->n + 1, sizeof(*t)))
		return -ENOMEM;
	t = &st->threads[st->n++];
	memset(t, 0, sizeof(*t));
	t->src = src;
	t->tid = tid;
	t->tgid = tgid;
	t->nloss = st->nloss;
	t->prio = -1;
	t->ss_mig0 = UINT64_MAX;
	st->tab[i] = (uint32_t)st->n;
	return (long)st->n - 1;
}
