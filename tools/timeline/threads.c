// SPDX-License-Identifier: MIT
/*
 * threads.c - the timeline's threads, keyed by source (host, boot id)
 * and tid, with the names they are given, and its processes' services.
 */
#include <stdlib.h>
#include <string.h>

#include "tl_internal.h"

static size_t tid_hash(uint32_t src, uint32_t tid, size_t cap)
{
	return ((tid * 2654435761u) ^ (src * 40503u)) & (cap - 1);
}

long tl_thread_get(struct timeline *tl, uint32_t src, uint32_t tid,
		   uint32_t pid, bool create)
{
	struct priv *p = tl->priv;
	struct tl_thread *t;
	size_t i;

	if (!p->tidtab_cap || tl->n_threads * 2 >= p->tidtab_cap) {
		size_t nc = p->tidtab_cap ? p->tidtab_cap * 2 : 256;
		uint32_t *nt = calloc(nc, sizeof(*nt));

		if (!nt)
			return -1;
		for (size_t j = 0; j < tl->n_threads; j++) {
			i = tid_hash(tl->threads[j].src, tl->threads[j].tid, nc);
			while (nt[i])
				i = (i + 1) & (nc - 1);
			nt[i] = (uint32_t)j + 1;
		}
		free(p->tidtab);
		p->tidtab = nt;
		p->tidtab_cap = nc;
	}
	i = tid_hash(src, tid, p->tidtab_cap);
	for (; p->tidtab[i]; i = (i + 1) & (p->tidtab_cap - 1)) {
		t = &tl->threads[p->tidtab[i] - 1];
		if (t->tid == tid && t->src == src &&
		    (!pid || !t->pid || t->pid == pid)) {
			if (!t->pid)
				t->pid = pid;
			return (long)p->tidtab[i] - 1;
		}
	}
	if (!create)
		return -2;
	t = PUSH(tl, threads);
	if (!t)
		return -1;
	memset(t, 0, sizeof(*t));
	t->src = src;
	t->tid = tid;
	t->pid = pid;
	p->tidtab[i] = (uint32_t)tl->n_threads;
	return (long)tl->n_threads - 1;
}

void tl_thread_name(struct tl_thread *t, const char *s, size_t len,
		    int prio, uint64_t ts)
{
	if (prio < t->name_prio || (prio == t->name_prio && ts < t->name_ts))
		return;
	len = strnlen(s, len);
	if (len >= sizeof(t->name))
		len = sizeof(t->name) - 1;
	memcpy(t->name, s, len);
	t->name[len] = 0;
	t->name_prio = prio;
	t->name_ts = ts;
}

const char *tl_state_name(int state)
{
	switch (state) {
	case TL_RUNNING: return "running";
	case TL_RUNNABLE: return "runnable";
	case TL_BLOCKED: return "blocked";
	}
	return "unknown";
}

const char *tl_service(const struct timeline *tl, uint32_t pid)
{
	for (size_t i = 0; i < tl->n_procs; i++)
		if (tl->procs[i].pid == pid)
			return tl_str(tl, tl->procs[i].service);
	return NULL;
}
