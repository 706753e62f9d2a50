// SPDX-License-Identifier: MIT
/*
 * budget.c - the budget of sealed segments: what stays on disk (or in
 * memory) within max_disk, oldest evicted first; what the pipeline is
 * done with (d9_segw_shipped, the recorder's d9_shipped_fn); what a
 * dump protects (d9_segw_checkpoint, trigger mode).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment/segw.h"

/* Oldest first, past the segments a dump protects. */
void d9_segw_evict(struct d9_segw *w)
{
	size_t drop = 0, unshipped = 0, keep = 0;

	pthread_mutex_lock(&w->budget_lock);
	for (size_t i = 0; i < w->nsealed; i++) {
		char name[80];
		size_t n;

		if (w->sealed[i].protect ||
		    w->sealed_bytes + w->size <= w->o.max_disk) {
			w->sealed[keep++] = w->sealed[i];
			continue;
		}
		if (w->sealed[i].fd >= 0) {
			close(w->sealed[i].fd); /* memory: the worker may hold a dup */
		} else {
			/* the whole family: as sealed and compressed in place */
			d9_seg_name(w->sealed[i].index, false, name, sizeof(name));
			unlinkat(w->dfd, name, 0); /* gone already is fine */
			n = strlen(name);
			snprintf(name + n, sizeof(name) - n, ".lz4");
			unlinkat(w->dfd, name, 0);
		}
		w->sealed_bytes -= w->sealed[i].size;
		if (w->pipeline && !w->sealed[i].shipped)
			unshipped++;
		drop++;
	}
	w->nsealed = keep;
	pthread_mutex_unlock(&w->budget_lock);
	if (!drop)
		return;
	pthread_mutex_lock(&w->lock);
	w->segments_evicted += drop;
	w->pipe_evicted += unshipped;
	pthread_mutex_unlock(&w->lock);
	if (unshipped)
		d9_log("disk budget: evicted %zu segments the worker had not "
		       "shipped yet (%llu so far)", unshipped,
		       (unsigned long long)w->pipe_evicted);
}

void d9_segw_shipped(void *ctx, uint64_t index, uint64_t remaining)
{
	struct d9_segw *w = ctx;

	pthread_mutex_lock(&w->budget_lock);
	for (size_t i = 0; i < w->nsealed; i++) {
		struct sealed *e = &w->sealed[i];

		if (e->index != index)
			continue;
		w->sealed_bytes -= e->size;
		e->protect = false;
		if (e->fd >= 0 && !remaining) {
			close(e->fd);
			e->fd = -1;
		}
		if (remaining) {
			e->size = remaining;
			e->shipped = true;
			w->sealed_bytes += remaining;
		} else {
			memmove(e, e + 1, (w->nsealed - i - 1) * sizeof(*e));
			w->nsealed--;
		}
		break;
	}
	pthread_mutex_unlock(&w->budget_lock);
}

/* memory: a descriptor of sealed segment index for the worker. */
int d9_segw_dup(struct d9_segw *w, uint64_t index)
{
	int fd = -1;

	pthread_mutex_lock(&w->budget_lock);
	for (size_t i = 0; i < w->nsealed; i++)
		if (w->sealed[i].index == index && w->sealed[i].fd >= 0)
			fd = fcntl(w->sealed[i].fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_unlock(&w->budget_lock);
	return fd;
}

int d9_segw_checkpoint(struct d9_segw *w, struct d9_ckpt_seg **out, size_t *n)
{
	struct d9_ckpt_seg *v;
	size_t k = 0;

	pthread_mutex_lock(&w->budget_lock);
	v = calloc(w->nsealed ? w->nsealed : 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&w->budget_lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < w->nsealed; i++) {
		struct sealed *e = &w->sealed[i];

		if (e->dumped || e->shipped)
			continue;
		e->dumped = true;
		e->protect = true;
		v[k].index = e->index;
		v[k].bytes = e->size;
		v[k].start_ns = e->start_ns;
		v[k].end_ns = e->end_ns;
		d9_seg_path(w, e->index, false, v[k].path, sizeof(v[k].path));
		v[k].fd = e->fd >= 0 ? fcntl(e->fd, F_DUPFD_CLOEXEC, 0) : -1;
		k++;
	}
	pthread_mutex_unlock(&w->budget_lock);
	*out = v;
	*n = k;
	return 0;
}
