// SPDX-License-Identifier: MIT
/* kqueue.c - queues of kernel scheduler records (kqueue.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "ksched/ksched.h"

int d9_kq_reserve(struct d9_kq *q, size_t cap)
{
	unsigned char *nb;

	if (cap <= q->cap)
		return 0;
	nb = realloc(q->buf, cap);
	if (!nb)
		return -ENOMEM;
	memset(nb + q->cap, 0, cap - q->cap);
	q->buf = nb;
	q->cap = cap;
	return 0;
}

int d9_kq_push(struct d9_kq *q, const void *rec, size_t len)
{
	if (q->off && q->off == q->len)
		q->off = q->len = 0;
	if (q->len + len > q->cap) {
		size_t cap = q->cap ? q->cap : 65536;
		unsigned char *nb;

		if (q->off) {	/* compact first */
			memmove(q->buf, q->buf + q->off, q->len - q->off);
			q->len -= q->off;
			q->off = 0;
		}
		while (cap < q->len + len)
			cap *= 2;
		if (cap != q->cap) {
			nb = realloc(q->buf, cap);
			if (!nb)
				return -ENOMEM;
			q->buf = nb;
			q->cap = cap;
		}
	}
	memcpy(q->buf + q->len, rec, len);
	q->len += len;
	return 0;
}

struct kidx {
	uint64_t time_ns;
	size_t off;
};

static int kidx_cmp(const void *a, const void *b)
{
	const struct kidx *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;	/* stable */
}

/*
 * The single-queue backends append each read's batch, in time order.  A
 * record of a new batch can still be older than one waiting from the last
 * (published on its CPU just after that CPU was read): keep the records
 * not yet released in time order.
 */
int d9_kq_sort(struct d9_kq *q)
{
	const struct dial9_rec_header *h;
	struct kidx *idx;
	unsigned char *tmp;
	uint64_t last = 0;
	size_t n = 0, i, at;
	bool sorted = true;

	for (at = q->off; at < q->len; at += h->size, n++) {
		h = (const void *)(q->buf + at);
		sorted &= h->time_ns >= last;
		last = h->time_ns;
	}
	if (sorted)
		return 0;
	idx = malloc(n * sizeof(*idx));
	tmp = malloc(q->len - q->off);
	if (!idx || !tmp) {
		free(idx);
		free(tmp);
		return -ENOMEM;
	}
	for (at = q->off, i = 0; at < q->len; at += h->size, i++) {
		h = (const void *)(q->buf + at);
		idx[i].time_ns = h->time_ns;
		idx[i].off = at;
	}
	d9_sort(idx, n, sizeof(*idx), kidx_cmp);
	for (i = 0, at = 0; i < n; i++) {
		h = (const void *)(q->buf + idx[i].off);
		memcpy(tmp + at, h, h->size);
		at += h->size;
	}
	memcpy(q->buf + q->off, tmp, at);
	free(idx);
	free(tmp);
	return 0;
}

/*
 * Append @rec to @q, unless that would take it past @limit bytes (0: no
 * limit): then it is dropped and counted, and the next record that fits
 * is preceded by a LOST record with the count.
 */
int d9_kq_push_bounded(struct d9_kq *q, const struct dial9_rec_header *rec,
			   size_t limit, uint64_t *lost)
{
	struct dial9_rec_lost lr;
	size_t need = rec->size + (q->dropped ? sizeof(lr) : 0);

	if (limit && q->len - q->off + need > limit) {
		q->dropped++;
		(*lost)++;
		return 0;
	}
	if (q->dropped) {
		memset(&lr, 0, sizeof(lr));
		lr.hdr.type = DIAL9_REC_LOST;
		lr.hdr.size = sizeof(lr);
		lr.hdr.cpu = rec->cpu;
		lr.hdr.time_ns = rec->time_ns;
		lr.count = q->dropped;
		if (d9_kq_push(q, &lr, sizeof(lr)))
			return -ENOMEM;
		q->dropped = 0;
	}
	return d9_kq_push(q, rec, rec->size);
}


int d9_kq_move(struct d9_kq *to, struct d9_kq *from)
{
	size_t n = from->len - from->off;
	int ret = n ? d9_kq_push(to, from->buf + from->off, n) : 0;

	if (ret)
		return ret;
	from->off = from->len = 0;
	return 0;
}

/* (ksched.h) */
size_t d9_kq_fit(const unsigned char *p, size_t n, size_t room)
{
	size_t used = 0;

	while (used + 8 <= n) {
		uint16_t size;

		memcpy(&size, p + used + offsetof(struct dial9_rec_header, size),
		       sizeof(size));
		if (size < 8 || size % 8 || used + size > n)
			return n <= room ? n : used;
		if (used + size > room)
			break;
		used += size;
	}
	return used;
}
