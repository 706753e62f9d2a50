// SPDX-License-Identifier: MIT
/*
 * collector.c - batches and the bounded lock-free queue between the
 * recording threads and the flush thread.
 *
 * The queue is a bounded multi-producer multi-consumer array queue with
 * one sequence number per cell. A sender that finds it full pops the
 * oldest batch itself (a queue of this kind allows any thread to pop),
 * counts its events as lost and retries: nobody ever waits.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "record/record.h"
#include "format/wire.h"

int d9_queue_init(struct d9_queue *q, size_t cap)
{
	size_t n = 2;

	while (n < cap)
		n *= 2;
	q->cells = calloc(n, sizeof(*q->cells));
	if (!q->cells)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		atomic_init(&q->cells[i].seq, i);
	q->mask = n - 1;
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	return 0;
}

void d9_queue_destroy(struct d9_queue *q)
{
	free(q->cells);
	q->cells = NULL;
}

bool d9_queue_push(struct d9_queue *q, struct d9_batch *b)
{
	size_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);

	for (;;) {
		struct d9_cell *c = &q->cells[pos & q->mask];
		size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		intptr_t dif = (intptr_t)seq - (intptr_t)pos;

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &q->head, &pos, pos + 1,
				    memory_order_relaxed, memory_order_relaxed)) {
				c->b = b;
				atomic_store_explicit(&c->seq, pos + 1,
						      memory_order_release);
				return true;
			}
		} else if (dif < 0) {
			return false; /* full */
		} else {
			pos = atomic_load_explicit(&q->head,
						   memory_order_relaxed);
		}
	}
}

struct d9_batch *d9_queue_pop(struct d9_queue *q)
{
	size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);

	for (;;) {
		struct d9_cell *c = &q->cells[pos & q->mask];
		size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		intptr_t dif = (intptr_t)seq - (intptr_t)(pos + 1);

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &q->tail, &pos, pos + 1,
				    memory_order_relaxed, memory_order_relaxed)) {
				struct d9_batch *b = c->b;

				atomic_store_explicit(&c->seq, pos + q->mask + 1,
						      memory_order_release);
				return b;
			}
		} else if (dif < 0) {
			return NULL; /* empty */
		} else {
			pos = atomic_load_explicit(&q->tail,
						   memory_order_relaxed);
		}
	}
}

/* One mapping: the batch header, then the buffer; pre-faulted. */
struct d9_batch *d9_batch_alloc(size_t buffer_bytes)
{
	size_t len = sizeof(struct d9_batch) + buffer_bytes;
	struct d9_batch *b = mmap(NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				  -1, 0);

	if (b == MAP_FAILED)
		return NULL;
	b->data = (uint8_t *)(b + 1);
	/* room for the batch end frame: tag, length, varint */
	b->cap = buffer_bytes - (2 + D9_MAX_VARINT);
	b->len = 0;
	b->nevents = 0;
	b->map_len = (uint32_t)len;
	return b;
}

void d9_batch_free(struct d9_batch *b)
{
	if (b)
		munmap(b, b->map_len);
}

int d9_collector_init(struct d9_collector *c, size_t batches,
		      size_t buffer_bytes)
{
	int ret = d9_queue_init(&c->full, batches);

	if (ret)
		return ret;
	ret = d9_queue_init(&c->free, 64);
	if (ret) {
		d9_queue_destroy(&c->full);
		return ret;
	}
	c->buffer_bytes = buffer_bytes;
	atomic_init(&c->lost_events, 0);
	atomic_init(&c->lost_batches, 0);
	atomic_init(&c->invalid_events, 0);
	atomic_init(&c->allocs, 0);
	c->bell = NULL;
	atomic_init(&c->napping, false);
	return 0;
}

void d9_collector_destroy(struct d9_collector *c)
{
	struct d9_batch *b;

	if (!c->full.cells)
		return;
	while ((b = d9_queue_pop(&c->full)))
		d9_batch_free(b);
	while ((b = d9_queue_pop(&c->free)))
		d9_batch_free(b);
	d9_queue_destroy(&c->full);
	d9_queue_destroy(&c->free);
}

void d9_collector_submit(struct d9_collector *c, struct d9_batch *b)
{
	while (!d9_queue_push(&c->full, b)) {
		struct d9_batch *old = d9_queue_pop(&c->full);

		if (old) {
			atomic_fetch_add(&c->lost_events, old->nevents);
			atomic_fetch_add(&c->lost_batches, 1);
			d9_batch_put(c, old);
		}
	}
	/* Pairs with the fence in d9_collector_nap(): one of the two sees
	 * the other (the batch, or the nap). */
	atomic_thread_fence(memory_order_seq_cst);
	if (c->bell && atomic_load_explicit(&c->napping, memory_order_relaxed) &&
	    atomic_exchange(&c->napping, false))
		pthread_cond_broadcast(c->bell);	/* also requesters wait there */
}

bool d9_collector_nap(struct d9_collector *c)
{
	atomic_store_explicit(&c->napping, true, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&c->full.head) != atomic_load(&c->full.tail)) {
		atomic_store(&c->napping, false);
		return false;
	}
	return true;
}

void d9_collector_unnap(struct d9_collector *c)
{
	atomic_store_explicit(&c->napping, false, memory_order_relaxed);
}

struct d9_batch *d9_batch_get(struct d9_collector *c)
{
	struct d9_batch *b = d9_queue_pop(&c->free);

	if (b)
		return b;
	atomic_fetch_add_explicit(&c->allocs, 1, memory_order_relaxed);
	return d9_batch_alloc(c->buffer_bytes);
}

void d9_batch_put(struct d9_collector *c, struct d9_batch *b)
{
	b->len = 0;
	b->nevents = 0;
	if (!d9_queue_push(&c->free, b))
		d9_batch_free(b);
}
