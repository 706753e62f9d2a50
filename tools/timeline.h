/* SPDX-License-Identifier: MIT */
/*
 * timeline.h - traces turned into what a picture needs: per-thread
 * running / runnable / blocked slices, paired spans, instants, counter
 * samples, wake-up flows and runqueue delays.  Shared by `dial9 export`
 * and `dial9 report`.
 *
 * All events of all files are read, ordered by timestamp (batches and
 * segments interleave), then replayed.  Threads are keyed by the source
 * of their file (host, boot_id), pid and tid.
 *  - sched.switch_out and sched.switch_in go through sched_stats, which
 *    says what the thread did since its previous event: running, then
 *    runnable (preempted) or blocked until its next switch-in, whose wait
 *    (whole, from the totals, where known) ends a blocked gap as runnable
 *    time; unknown where the gap spans a loss of records (sched.lost).
 *  - sched.waking of a blocked thread by another traced thread is a flow
 *    from the waker (at the waking) to the wakee's next switch-in; a
 *    waking from interrupt context names whoever was interrupted, so it
 *    makes no flow.
 *  - span begin/end events pair per thread, last in first out, by name.
 *
 * The code is in tools/timeline/ (its private header, tl_internal.h,
 * says which file does what).
 */
#ifndef DIAL9_TIMELINE_H
#define DIAL9_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dial9.h"
#include "sched/sched_stats.h"

/* Slice states: those of sched_stats, which decides them. */
enum tl_state {
	TL_RUNNING = SCHED_RUNNING, TL_RUNNABLE = SCHED_RUNNABLE,
	TL_BLOCKED = SCHED_BLOCKED, TL_UNKNOWN = SCHED_UNKNOWN,
};

#define TL_NONE UINT32_MAX	/* "no thread": a process-wide mark */

struct tl_slice {
	uint64_t start, end;
	uint32_t thread;	/* index into threads */
	uint32_t flow;		/* 1-based flow that ends here (a wake-up), 0 none */
	uint8_t state;		/* enum tl_state */
};

#define TL_SPAN_UNFINISHED 1	/* no matching end: cut at exit or trace end */
#define TL_SPAN_NO_BEGIN 2	/* its begin is before the trace */

struct tl_span {
	uint64_t start, end;
	uint32_t thread, depth;	/* depth: 0 outermost, by containment */
	uint32_t name;		/* pool offset */
	uint32_t args_begin, args_end;	/* pool offsets of JSON objects, 0 none */
	uint8_t flags;
};

struct tl_mark {		/* an instant */
	uint64_t ts;
	uint32_t thread;	/* or TL_NONE */
	uint32_t pid;
	uint32_t name, args;	/* pool offsets */
};

struct tl_counter {		/* one counter track: per process, name, unit */
	uint32_t pid, name, unit;
	bool gauge;
	double total;
};

struct tl_sample {
	uint64_t ts;
	uint32_t counter;
	uint32_t thread;	/* that recorded it, or TL_NONE */
	double value;		/* running total for counters */
};

struct tl_flow {		/* a wake-up */
	uint64_t from_ts, to_ts;
	uint32_t from, to;	/* thread indexes */
};

struct tl_delay {
	uint64_t ts, ns;	/* switch-in time, runqueue delay */
	uint32_t thread;
};

struct tl_thread {
	uint32_t src, tid, pid;	/* src: sched_stats source */
	char name[64];
	int name_prio;		/* 2: the application's, 1: comm */
	uint64_t name_ts;
	uint32_t sched;		/* index + 1 in st.threads, 0 none */
	/* replay state */
	int state;		/* as sched_stats has it */
	uint32_t *stack;	/* open spans */
	size_t depth, stack_cap;
	bool wake_pending;	/* woken by a traced thread, not yet run */
	uint64_t wake_ts;
	uint32_t waker;
	uint32_t run_flow;	/* flow that ended at this run's start */
};

struct tl_proc {
	uint32_t pid, service;	/* pool offset of the service name */
};

#define TL_VEC(type, name) type *name; size_t n_##name, cap_##name

struct timeline {
	TL_VEC(struct tl_thread, threads);
	TL_VEC(struct tl_slice, slices);	/* sorted by thread, start */
	TL_VEC(struct tl_span, spans);		/* sorted by thread, start */
	TL_VEC(struct tl_mark, marks);
	TL_VEC(struct tl_counter, counters);
	TL_VEC(struct tl_sample, samples);
	TL_VEC(struct tl_flow, flows);
	TL_VEC(struct tl_delay, delays);	/* worst first */
	TL_VEC(struct tl_proc, procs);
	char *pool;			/* NUL-terminated strings; offset 0 is "" */
	size_t pool_len, pool_cap;
	struct sched_stats st;
	uint64_t first_ns, last_ns;	/* of all events */
	uint64_t lost_events;		/* dial9.lost: application events */
	uint64_t lost_sched;		/* sched.lost: kernel records */
	uint64_t unmatched_ends;	/* span ends nothing could pair */
	unsigned int files;
	/* private */
	uint32_t *strtab;		/* open-addressing set of pool offsets */
	size_t strtab_cap, nstr;
	void *priv;
};

int tl_pool_put(struct timeline *tl, const void *s, size_t len);
int tl_pool_printf(struct timeline *tl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The pool offset of a NUL-terminated copy of s, shared by equal strings. */
int tl_intern(struct timeline *tl, const void *s, size_t len, uint32_t *off);
/* An event's fields as a JSON object in the pool, minus @skip fields. */
int tl_pool_args(struct timeline *tl, const struct dial9_record *r,
		 const char *skip1, const char *skip2, uint32_t *off);

/* tl_load() flags: also each thread's culprits (tl->st's, sched_stats.h) */
#define TL_CULPRITS 1u

/*
 * Read and replay the traces at @paths (with progress labelled @what).
 * 0, or -1 after a message on stderr naming the file and the offset of
 * corrupt data.
 */
int tl_load(struct timeline *tl, char **paths, int n, const char *what,
	    unsigned int flags);
/*
 * The TRACE arguments (files or directories) of command @what, loaded;
 * 0, or 1 after a message (no traces, unreadable or corrupt input).
 */
int tl_load_args(struct timeline *tl, int argc, char **argv, const char *what,
		 unsigned int flags);
void tl_free(struct timeline *tl);

static inline const char *tl_str(const struct timeline *tl, uint32_t off)
{
	return tl->pool + off;
}

const char *tl_state_name(int state);
/* Service name of a process, or NULL. */
const char *tl_service(const struct timeline *tl, uint32_t pid);

/* A JSON string that is also safe inside an HTML <script> element. */
void tl_json_str(FILE *out, const char *s, size_t len);
/*
 * "sched_sources":[...]: each recording's host, boot_id, scheduler
 * backend (dial9.ko, perf, schedstat, none) and what it cannot see.
 */
void tl_json_sources(FILE *out, const struct timeline *tl);
/* Nanoseconds as microseconds with three decimals, exactly. */
void tl_json_us(FILE *out, uint64_t ns);

#endif
