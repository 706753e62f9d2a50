// SPDX-License-Identifier: MIT
/*
 * ksched_drain.c - the CPUs' records merged in time order, for
 * dial9_ksched_drain(): from q[] (what earlier drains left) and then,
 * with a reader thread and dial9.ko, from the inboxes just taken, where
 * ksched_ring.c checked and filtered them in place.  What a drain does
 * not take (records past its horizon) is copied to q[] for the next one.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/dial9.h>

#include "dial9.h"
#include "ksched/ksched.h"

/*
 * The records of the CPUs not yet merged: q[cpu]'s, then those left in
 * place in the inbox taken (spare[cpu], dial9.ko's), PAD skipped.
 */
static inline struct d9_kq *src_of(struct dial9_ksched *k, unsigned int cpu)
{
	return k->q[cpu].off < k->q[cpu].len || !k->spare ? &k->q[cpu] :
							    &k->spare[cpu];
}

static inline const struct dial9_rec_header *
src_peek(struct dial9_ksched *k, unsigned int cpu)
{
	for (;;) {
		struct d9_kq *q = src_of(k, cpu);
		const struct dial9_rec_header *h;

		if (q->off >= q->len)
			return NULL;
		h = (const void *)(q->buf + q->off);
		if (h->type != DIAL9_REC_PAD)
			return h;
		q->off += h->size;
	}
}

/*
 * After a merge: what it left in the inboxes taken goes to q[] (it is
 * older than what the reader takes in meanwhile), and each inbox, empty
 * again, is grown if it was over half full.
 */
static int spill(struct dial9_ksched *k)
{
	int ret = 0;

	for (unsigned int cpu = 0; k->spare && cpu < k->ncpu; cpu++) {
		int r = d9_ksched_queue_rest(k, cpu, &k->spare[cpu], true);

		if (!ret)
			ret = r;
	}
	return ret;
}

/*
 * The last read: stop the session, so that what the kernel dropped at the
 * end, which no later record's LOST announces, is still in the stream.
 */
int d9_ksched_final(struct dial9_ksched *k)
{
	uint64_t horizon = UINT64_MAX;
	int ret = d9_ksched_reader_halt(k);

	if (ret)
		return ret;
	if (k->fd < 0 || k->perf) {
		ret = d9_ksched_collect(k, &horizon);
		return ret ? ret : d9_ksched_perf_final(k);
	}
	ioctl(k->fd, DIAL9_IOC_DISABLE, 0);
	/* the reader halted: its inboxes and the rest go to q[] */
	ret = d9_ksched_collect(k, &horizon);
	for (unsigned int cpu = 0; !ret && cpu < k->ncpu; cpu++) {
		struct dial9_rec_lost lr = { .hdr.type = DIAL9_REC_LOST };
		uint64_t lost;

		if (!k->ctrl[cpu])
			continue;
		lost = __atomic_load_n(&k->ctrl[cpu]->lost, __ATOMIC_RELAXED);
		if (lost <= k->lost_seen[cpu])
			continue;
		lr.hdr.size = sizeof(lr);
		lr.hdr.cpu = (uint16_t)cpu;
		lr.hdr.time_ns = d9_clock_gettime_ns();
		lr.count = lost - k->lost_seen[cpu];
		k->lost_seen[cpu] = lost;
		ret = d9_kq_push(&k->q[cpu], &lr, sizeof(lr));
		/* made here, not checked by the ring parser */
		if (k->ntaken)
			k->ntaken[cpu]++;
		if (k->seen)
			k->seen(k->seen_ctx, &lr.hdr);
	}
	return ret;
}

int dial9_ksched_drain(struct dial9_ksched *k, uint64_t horizon_ns,
		       dial9_ksched_fn fn, void *ctx)
{
	int n = 0, ret = horizon_ns == UINT64_MAX ? d9_ksched_final(k) :
			 d9_ksched_collect(k, &horizon_ns);

	if (ret) {
		spill(k);
		return ret;
	}
	/*
	 * Merge the CPUs' queues by time, equal times in CPU order.  After
	 * each scan, the oldest queue runs until it passes the next queue's
	 * head: one scan per run of a CPU, not per record.
	 */
	for (;;) {
		const struct dial9_rec_header *best = NULL, *h;
		uint64_t next = horizon_ns;
		unsigned int bcpu = 0, ncpu = 0;	/* next: horizon, none */

		for (unsigned int cpu = 0; cpu < k->ncpu; cpu++) {
			h = src_peek(k, cpu);
			if (!h || h->time_ns >= horizon_ns)
				continue;
			if (!best || h->time_ns < best->time_ns) {
				if (best && best->time_ns <= next) {
					next = best->time_ns;
					ncpu = bcpu;
				}
				best = h;
				bcpu = cpu;
			} else if (h->time_ns < next) {
				next = h->time_ns;
				ncpu = cpu;
			}
		}
		if (!best)
			break;
		do {
			fn(ctx, best);
			src_of(k, bcpu)->off += best->size;
			n++;
			best = src_peek(k, bcpu);
		} while (best && (best->time_ns < next ||
				  (best->time_ns == next && bcpu < ncpu)));
	}
	ret = spill(k);
	return ret ? ret : n;
}

void d9_ksched_set_seen(struct dial9_ksched *k,
			void (*fn)(void *ctx, const struct dial9_rec_header *rec),
			void *ctx)
{
	k->seen = fn;
	k->seen_ctx = ctx;
}

/*
 * One queue's records, handed over as they are and taken.  Those that
 * the ring reader's check did not count (q[]: the perf and schedstat
 * backends', and what a halted reader left) are walked here.
 */
static int take_queue(struct dial9_ksched *k, struct d9_kq *q,
		      unsigned int cpu, bool counted, d9_ksched_chunk_fn fn,
		      void *ctx)
{
	/* dial9.ko's count is of both queues: given with the first piece */
	uint64_t n = counted && k->ntaken ? k->ntaken[cpu] : 0;
	int ret = 0;

	for (size_t at = q->off; !counted && at + 8 <= q->len;) {
		const struct dial9_rec_header *h = (const void *)(q->buf + at);

		if (h->size < 8 || at + h->size > q->len)
			break;
		if (h->type != DIAL9_REC_PAD)
			n++;
		if (k->seen && d9_ksched_seen_type(h->type))
			k->seen(k->seen_ctx, h);
		at += h->size;
	}
	if (q->off < q->len) {
		ret = fn(ctx, cpu, q->buf + q->off, q->len - q->off, n);
		if (counted && k->ntaken)
			k->ntaken[cpu] = 0;
	}
	q->off = q->len = 0;
	return ret;
}

int d9_ksched_take(struct dial9_ksched *k, uint64_t *horizon, bool final,
		   d9_ksched_chunk_fn fn, void *ctx)
{
	int ret = final ? d9_ksched_final(k) : d9_ksched_collect(k, horizon);
	/* dial9.ko's records were counted and seen as they were checked */
	bool module = k->fd >= 0 && !k->perf;

	if (final)
		*horizon = UINT64_MAX;
	for (unsigned int cpu = 0; !ret && cpu < k->ncpu; cpu++) {
		/* what an earlier drain left comes first: it is older */
		ret = take_queue(k, &k->q[cpu], cpu, module, fn, ctx);
		if (!ret && k->spare)
			ret = take_queue(k, &k->spare[cpu], cpu, module, fn,
					 ctx);
	}
	/* the inboxes taken, empty again, grown if they were full */
	for (unsigned int cpu = 0; k->spare && cpu < k->ncpu; cpu++) {
		int r = d9_ksched_queue_rest(k, cpu, &k->spare[cpu], true);

		if (!ret)
			ret = r;
	}
	return ret;
}
