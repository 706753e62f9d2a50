/* SPDX-License-Identifier: MIT */
/* ksched_internal.h - the perf_event_open backend of the scheduler source. */
#ifndef DIAL9_KSCHED_INTERNAL_H
#define DIAL9_KSCHED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

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

#endif
