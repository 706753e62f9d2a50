// SPDX-License-Identifier: MIT
/*
 * names.c - the names of the recorded threads, carried into every
 * segment.  The kernel names a thread once (sched.comm: when it is
 * created, renamed, or first followed), so a later segment read alone
 * (a summary, a segment fetched from S3) had threads without names, and
 * a fleet grouping by name split one thread in two.  The flush thread
 * keeps the last name of each thread it has seen a COMM record of, and
 * writes them again at the start of each segment (flush.c), as
 * sched.thread_name: no kernel record, so that no per-CPU count of the
 * records changes.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder.h"

#define NAMES_MAX (1u << 16)	/* threads remembered; the rest are counted */

static size_t slot_of(const struct d9_names *n, uint32_t tid)
{
	size_t i = (size_t)(tid * 2654435761u) & (n->cap - 1);

	while (n->v[i].tid && n->v[i].tid != tid)
		i = (i + 1) & (n->cap - 1);
	return i;
}

void d9_names_see(struct d9_names *n, const struct dial9_rec_comm *c)
{
	size_t i;

	if (!c->tid || (c->hdr.flags & DIAL9_COMM_OCCUPANT))
		return;	/* the idle task; a task of no recorded process */
	if (2 * (n->n + 1) > n->cap) {
		struct d9_name *old = n->v;
		size_t ocap = n->cap, nc = ocap ? ocap * 2 : 256;

		if (n->n >= NAMES_MAX) {
			n->dropped++;
			return;
		}
		n->v = calloc(nc, sizeof(*n->v));
		if (!n->v) {
			n->v = old;
			n->dropped++;
			return;
		}
		n->cap = nc;
		for (size_t j = 0; j < ocap; j++)
			if (old[j].tid)
				n->v[slot_of(n, old[j].tid)] = old[j];
		free(old);
	}
	i = slot_of(n, c->tid);
	if (!n->v[i].tid)
		n->n++;
	n->v[i].tid = c->tid;
	n->v[i].tgid = c->tgid;
	memcpy(n->v[i].comm, c->comm, sizeof(n->v[i].comm));
}

int d9_names_each(const struct d9_names *n, uint64_t ts,
		  int (*fn)(void *ctx, uint64_t ts, const struct d9_name *t),
		  void *ctx)
{
	for (size_t i = 0; i < n->cap; i++) {
		int ret;

		if (!n->v[i].tid)
			continue;
		ret = fn(ctx, ts, &n->v[i]);
		if (ret)
			return ret;
	}
	return 0;
}

void d9_names_free(struct d9_names *n)
{
	free(n->v);
	memset(n, 0, sizeof(*n));
}
