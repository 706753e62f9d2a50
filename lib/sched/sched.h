/* SPDX-License-Identifier: MIT */
/*
 * sched.h - the scheduler source (sched/): its backends (dial9.ko's rings
 * in ksched.c and ksched_ring.c, perf_event_open in ksched_perf*.c,
 * schedstat in ksched_sstat.c), the queue of kernel records between the
 * rings and the merge (kqueue.c), and the records as sched.* events
 * (ktrace.c), which the recorder writes into segments.  Reading sched.*
 * events back is sched_read.h and sched_stats.h.  Not installed.
 */
#ifndef DIAL9_SCHED_H
#define DIAL9_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include <linux/dial9.h>

#include "dial9.h"

/* ---- ksched_perf.c: the perf_event_open backend ---- */
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

/* ---- ksched_sstat.c: the schedstat backend ---- */
struct dial9_sstat;

int dial9_sstat_open(struct dial9_sstat **out,
		     const struct dial9_ksched_opts *o, char *why,
		     size_t whylen);
void dial9_sstat_close(struct dial9_sstat *s);
/* One record per thread of the targets, at most every 100 ms. */
int dial9_sstat_read(struct dial9_sstat *s,
		     int (*push)(void *ctx, const struct dial9_rec_header *rec),
		     void *ctx);

/*
 * ---- kqueue.c: a queue of kernel scheduler records (struct
 * dial9_rec_header and what follows it), as the scheduler source holds
 * them between the rings and the merge: appended at the end, taken from
 * the front. ----
 */
/* Records copied out of one CPU's ring and not yet released. */
struct d9_kq {
	unsigned char *buf;
	size_t len, cap, off;
	uint64_t dropped;	/* inbox full: not yet announced */
};

/* Append @len bytes (whole records); 0 or -ENOMEM. */
int d9_kq_push(struct d9_kq *q, const void *rec, size_t len);
/*
 * Append @rec unless the queue would pass @limit bytes: then it is dropped
 * and counted in *@lost, and the next record that fits is preceded by a
 * LOST record with the count.
 */
int d9_kq_push_bounded(struct d9_kq *q, const struct dial9_rec_header *rec,
		       size_t limit, uint64_t *lost);
/* The first record, or NULL. */
const struct dial9_rec_header *d9_kq_peek(const struct d9_kq *q);
/* Put the records not yet taken in time order (stable). */
int d9_kq_sort(struct d9_kq *q);
/* Move everything from @from to the end of @to; @from is left empty. */
int d9_kq_move(struct d9_kq *to, struct d9_kq *from);

/* ---- ktrace.c: scheduler records (<linux/dial9.h> layout) as sched.*
 * events ---- */
struct dial9_encoder;

struct d9_ktrace {
	struct dial9_encoder *enc;
	uint32_t defined;	/* schemas written in this stream */
	uint64_t nevents;	/* events in this stream */
	uint64_t lost;		/* records the kernel reported lost, total */
	uint64_t unfollowed;	/* UNFOLLOWED records, total */
};

/* Start a stream (one per flush). */
int d9_ktrace_begin(struct d9_ktrace *kt);
/* Add one record; records of unknown types are skipped. */
int d9_ktrace_add(struct d9_ktrace *kt, const struct dial9_rec_header *rec);
/* End the stream; the bytes stay valid until the next begin. */
int d9_ktrace_end(struct d9_ktrace *kt, const void **data, size_t *len);

#endif /* DIAL9_SCHED_H */
