/* SPDX-License-Identifier: MIT */
/*
 * record.h - the application threads' hot path (record/): the clock,
 * the collector of full batches and the record calls' thread state, and
 * what the flush thread (recorder/) asks of them.  Not installed.
 */
#ifndef DIAL9_RECORD_H
#define DIAL9_RECORD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dial9.h"
#include "common/common.h"
#include "common/handoff.h"

/* ---- clock.c: CLOCK_MONOTONIC ns from the TSC or clock_gettime ---- */
/* mode: enum dial9_clock. Returns the mode in use (TSC or GETTIME). */
int d9_clock_init(int mode);
/* Re-measure the TSC rate over the time since init (flush thread). */
void d9_clock_refine(void);
/* (d9_clock_gettime_ns() and d9_clock_realtime_ns(): common/time.c) */
bool d9_clock_uses_tsc(void);

struct d9_clock_state {
	atomic_uint seq;
	atomic_ullong tsc0, mono0, mult; /* ns = mono0 + (tsc - tsc0) * mult >> 32 */
	atomic_int use_tsc;
};
extern struct d9_clock_state d9_clk;

static inline uint64_t d9_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t d9_tsc_to_ns(uint64_t tsc, uint64_t tsc0,
				    uint64_t mono0, uint64_t mult)
{
	if (tsc >= tsc0)
		return mono0 +
		       (uint64_t)(((unsigned __int128)(tsc - tsc0) * mult) >> 32);
	return mono0 - (uint64_t)(((unsigned __int128)(tsc0 - tsc) * mult) >> 32);
}

static inline uint64_t d9_now(void)
{
	unsigned int s;
	uint64_t t0, m0, mu, tsc;

	if (!atomic_load_explicit(&d9_clk.use_tsc, memory_order_relaxed))
		return d9_clock_gettime_ns();
	do {
		s = atomic_load_explicit(&d9_clk.seq, memory_order_acquire);
		/* acquire loads keep the re-check of seq after them */
		t0 = atomic_load_explicit(&d9_clk.tsc0, memory_order_acquire);
		m0 = atomic_load_explicit(&d9_clk.mono0, memory_order_acquire);
		mu = atomic_load_explicit(&d9_clk.mult, memory_order_acquire);
		tsc = d9_rdtsc();
	} while ((s & 1) ||
		 s != atomic_load_explicit(&d9_clk.seq, memory_order_relaxed));
	return d9_tsc_to_ns(tsc, t0, m0, mu);
}

/* ---- collector.c: bounded lock-free MPMC queue of batches ---- */
/* (struct d9_batch: common/handoff.h, the segment writer reads it) */

struct d9_cell {
	atomic_size_t seq;
	struct d9_batch *b;
};

struct d9_queue {
	struct d9_cell *cells;
	size_t mask;
	_Alignas(D9_CACHELINE) atomic_size_t head; /* next push */
	_Alignas(D9_CACHELINE) atomic_size_t tail; /* next pop */
};

int d9_queue_init(struct d9_queue *q, size_t cap); /* cap rounded up to 2^n */
void d9_queue_destroy(struct d9_queue *q);
bool d9_queue_push(struct d9_queue *q, struct d9_batch *b);
struct d9_batch *d9_queue_pop(struct d9_queue *q);

struct d9_collector {
	struct d9_queue full;  /* batches waiting for the flush thread */
	struct d9_queue free;  /* empty, pre-faulted batches */
	size_t buffer_bytes;
	atomic_ullong lost_events, lost_batches, allocs;
	/* of lost_events: record calls whose values did not match their
	 * event type, or of a type that could not be registered */
	atomic_ullong invalid_events;
	/* The flush thread's doorbell while it naps (d9_collector_nap). */
	pthread_cond_t *bell;
	atomic_bool napping;
};

int d9_collector_init(struct d9_collector *c, size_t batches,
		      size_t buffer_bytes);
void d9_collector_destroy(struct d9_collector *c);
/* Never blocks; if full, drops the oldest batch and counts its events. */
void d9_collector_submit(struct d9_collector *c, struct d9_batch *b);
/*
 * The consumer is about to sleep long: the next submit signals c->bell
 * (a condition variable broadcast without its mutex: no waiting).  False
 * if a batch already waits (then do not sleep).  d9_collector_unnap()
 * when awake again.
 */
bool d9_collector_nap(struct d9_collector *c);
void d9_collector_unnap(struct d9_collector *c);
/* An empty batch: from the pool, else freshly mapped; NULL on ENOMEM. */
struct d9_batch *d9_batch_get(struct d9_collector *c);
void d9_batch_put(struct d9_collector *c, struct d9_batch *b);
struct d9_batch *d9_batch_alloc(size_t buffer_bytes);
void d9_batch_free(struct d9_batch *b);

/* ---- record.c: thread state, the record path, the drain epoch ---- */
struct d9_cursor {
	struct d9_batch *b;
	uint8_t *p, *end;
	uint64_t ts_base;
	uint64_t nevents;
};

#define D9_MAX_TYPES 4096
#define D9_INTERN_SLOTS 512

struct d9_intern {
	uint64_t hash;
	const uint8_t *s; /* the copy in the batch */
	uint32_t len, id, batch;
};

struct d9_thread {
	atomic_int busy;   /* inside a record call */
	atomic_int steal;  /* 0, 1 flush thread asks, 2 flush thread took */
	atomic_uint seen_epoch;
	struct d9_cursor *cur;
	struct d9_cursor cursors[2];
	uint32_t gen;
	pid_t tid;
	char name[32];
	uint32_t batch_seq;
	uint32_t next_str;
	uint64_t schema_sent[D9_MAX_TYPES / 64];
	struct d9_intern intern[D9_INTERN_SLOTS];
	struct d9_thread *next, *prev;
	bool linked;
};

struct d9_rec_shared {
	struct d9_collector *coll;
	atomic_uint epoch;
	atomic_uint gen;
	bool fence_mode; /* no membarrier: seq_cst fences on both sides */
	atomic_ullong oversize; /* events larger than a buffer */
	pthread_mutex_t threads_lock;
	struct d9_thread *threads;
	atomic_uint nthreads; /* read without the lock */
};
extern struct d9_rec_shared d9_rs;

/* Steal the buffers of every linked thread that has not seen the
 * current epoch (all threads if all is true), and submit them. Called
 * by the flush thread only. Returns how many were busy (retry later). */
unsigned int d9_drain_idle_threads(bool all);
/* Write the batch end frame into b. */
void d9_batch_finish(struct d9_batch *b);
void d9_record_fork_prepare(void);
void d9_record_fork_parent(void);
void d9_record_fork_child(void);
/* Forget every thread (recorder stopped): they re-attach later. */
void d9_record_detach_all(void);
/* Use membarrier() for the drain handshake; false: use fences. */
bool d9_membarrier_register(void);
uint32_t d9_register(struct dial9_event_type *t);

#endif /* DIAL9_RECORD_H */
