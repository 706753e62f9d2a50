/* SPDX-License-Identifier: MIT */
/*
 * kqueue.h - a queue of kernel scheduler records (struct dial9_rec_header
 * and what follows it), as the scheduler source holds them between the
 * rings and the merge: appended at the end, taken from the front.
 */
#ifndef DIAL9_KQUEUE_H
#define DIAL9_KQUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/dial9.h>

/* Records copied out of one CPU's ring and not yet released. */
struct d9_kq {
	unsigned char *buf;
	size_t len, cap, off;
	uint64_t dropped;	/* inbox full: not yet announced */
};

/*
 * Room for @cap bytes, its pages written once so that they are in memory
 * (appends up to there neither allocate nor fault); 0 or -ENOMEM.
 */
int d9_kq_reserve(struct d9_kq *q, size_t cap);
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

#endif
