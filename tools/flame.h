/* SPDX-License-Identifier: MIT */
/*
 * flame.h - what `dial9 flame` shows: the stacks of a trace (off-CPU
 * stacks, or on-CPU samples) folded by thread and stack, filtered by
 * thread, time window and application span (flame_fold.c), written as
 * folded stacks or an SVG flame graph (flame_svg.c).
 */
#ifndef DIAL9_FLAME_H
#define DIAL9_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sched/sched_stats.h"

/* A time the thread (src, tid) had an application span open. */
struct flame_span {
	uint32_t src, tid;
	uint64_t start, end;
};

/* One distinct thread and stack: "NAME TID;OUTERMOST;...;INNERMOST". */
struct folded {
	char *key;
	uint64_t v;		/* samples, or nanoseconds off the CPU */
};

struct flame {
	struct sched_stats *st;
	/* what to fold */
	bool on_cpu;			/* samples, not off-CPU stacks */
	uint32_t tid;			/* 0: every thread */
	uint64_t from, to;		/* [from, to): trace time */
	const char *span;		/* NULL: any time */
	struct flame_span *spans;	/* the span's, merged per thread */
	size_t nspans, spans_cap;
	/* what came out, largest first */
	struct folded *v;
	size_t n, cap;
	uint64_t total;			/* sum of v[].v */
	size_t open;			/* stacks with no switch-in after */
};

/* A time of the span @f->span on thread (@src, @tid); -ENOMEM. */
int flame_span_add(struct flame *f, uint32_t src, uint32_t tid,
		   uint64_t start, uint64_t end);
/* The stacks of f->st into f->v, filtered, equal ones summed; -ENOMEM. */
int flame_fold(struct flame *f);
void flame_free(struct flame *f);

/* cli_write_output() writers: folded stacks, and the SVG flame graph. */
int flame_write_folded(FILE *out, void *arg);
int flame_write_svg(FILE *out, void *arg);

#endif
