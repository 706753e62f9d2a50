/* SPDX-License-Identifier: MIT */
/*
 * tl_internal.h - what the files of the timeline (tools/timeline/) share:
 * the events as read, before ordering, the private state of one load, and
 * the table of threads.  Its interface is ../timeline.h:
 *  - threads.c  threads by (source, tid), their names, processes
 *  - read.c     one trace file's events, as struct raw
 *  - replay.c   the events in time order, replayed into the timeline
 *  - load.c     load and free: reading, then replay
 *  - pool.c     the string pool and the JSON written into it
 */
#ifndef DIAL9_TL_INTERNAL_H
#define DIAL9_TL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../cli.h"
#include "../timeline.h"

/* One event as read, before ordering. */
enum {
	EV_OUT, EV_IN, EV_WAKING, EV_COMM, EV_EXIT, EV_MIGRATE, EV_SCHED_LOST,
	EV_CPU_SWITCH, EV_OCCUPANTS, EV_UNFOLLOWED, EV_BEGIN, EV_END, EV_INSTANT,
	EV_COUNTER, EV_GAUGE, EV_LOST,
};

/*
 * A switch keeps its other side in name (tid) and args (pid), and prios
 * in prio (raw_prio()); a sched.cpu_switch (tid 0: no thread's) its prev
 * there and its next in a (tid | pid << 32).
 */
struct raw {
	uint64_t ts, seq;
	uint64_t a;		/* delay, waker tid, count, or f64 bits */
	uint64_t total;		/* switches: the runqueue totals */
	uint32_t count, cpu;	/* count: the waker's pid of a waking */
	uint32_t tid, pid, src;
	uint32_t name, args;	/* pool offsets (args: unit for counters) */
	uint32_t prio;		/* switches: 1 + own | (1 + other's) << 16 */
	uint8_t type, flag, bits;
};

/* Prio @which (0: own or prev, 1: other or next) of a switch; -1. */
static inline int32_t raw_prio(const struct raw *e, int which)
{
	return (int32_t)((e->prio >> (which * 16)) & 0xffff) - 1;
}

static inline uint32_t raw_prios(int32_t own, int32_t other)
{
	return (uint32_t)((own + 1) & 0xffff) |
	       (uint32_t)((other + 1) & 0xffff) << 16;
}

#define RAW_TOTALS 1
#define RAW_DEAD 2

struct priv {
	struct raw *raw;
	size_t nraw, capraw;
	uint32_t *tidtab;	/* (src, tid) -> thread index + 1 */
	size_t tidtab_cap;
	uint32_t src;		/* of the file being read */
};

/* Append an element to a TL_VEC-style vector; NULL on ENOMEM. */
#define PUSH(tl, vec)                                                       \
	(cli_grow((void **)&(tl)->vec, &(tl)->cap_##vec, (tl)->n_##vec + 1,  \
		 sizeof(*(tl)->vec)) ? NULL : &(tl)->vec[(tl)->n_##vec++])

/* ---- threads (threads.c) ---- */

/*
 * Index of a thread of source @src (host, boot id), created on first
 * sight; -1 on ENOMEM, -2 if absent and not @create.  A tid reused by
 * another process is another thread.
 */
long tl_thread_get(struct timeline *tl, uint32_t src, uint32_t tid,
		   uint32_t pid, bool create);
/* Name thread @t (@prio 2: the application's, 1: comm) unless it has a
 * name of higher priority, or of the same from a later @ts. */
void tl_thread_name(struct tl_thread *t, const char *s, size_t len,
		    int prio, uint64_t ts);

/* A tid that names a thread: not the idle task's 0, not redacted. */
static inline bool tl_visible(uint64_t tid)
{
	return tid && tid < UINT32_MAX;
}

/* ---- reading (read.c) ---- */

/* The events of the trace file at @path appended to the private list;
 * 0, or -errno after a message naming the file. */
int tl_read_file(struct timeline *tl, const char *path);

/* ---- replay (replay.c) ---- */

/* The events read, in time order, replayed into @tl; 0 or -ENOMEM. */
int tl_replay(struct timeline *tl);

#endif
