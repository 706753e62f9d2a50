/* SPDX-License-Identifier: MIT */
/* ksched_internal.h - the perf_event_open backend of the scheduler source. */
#ifndef DIAL9_KSCHED_INTERNAL_H
#define DIAL9_KSCHED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <linux/dial9.h>

#include "dial9.h"

struct dial9_perf;

int dial9_perf_open(struct dial9_perf **out, const struct dial9_ksched_opts *o,
		    char *why, size_t whylen);
void dial9_perf_close(struct dial9_perf *p);
int dial9_perf_fd(const struct dial9_perf *p);
/* What this backend cannot record here and why, or "". */
const char *dial9_perf_note(const struct dial9_perf *p);
uint64_t dial9_perf_lost(const struct dial9_perf *p);
/* Turn what the kernel wrote into dial9_rec_* records, in time order. */
int dial9_perf_read(struct dial9_perf *p,
		    int (*push)(void *ctx, const struct dial9_rec_header *rec),
		    void *ctx);

/*
 * The schedstat backend's records: a library-private type outside the
 * kernel's numbering, in the same header layout.
 */
#define D9_REC_SCHEDSTAT 0x7f00
/* A fork the perf backend saw; it never leaves ksched_perf.c. */
#define D9_REC_PERF_FORK 0x7f01

struct d9_rec_schedstat {
	struct dial9_rec_header hdr;
	uint32_t tid, tgid;
	uint64_t run_ns;	/* cumulative, as in schedstat */
	uint64_t delay_ns;
	uint64_t slices;
};

struct dial9_sstat;

int dial9_sstat_open(struct dial9_sstat **out,
		     const struct dial9_ksched_opts *o, char *why,
		     size_t whylen);
void dial9_sstat_close(struct dial9_sstat *s);
/* One record per thread of the targets, at most every 100 ms. */
int dial9_sstat_read(struct dial9_sstat *s,
		     int (*push)(void *ctx, const struct dial9_rec_header *rec),
		     void *ctx);

#endif
