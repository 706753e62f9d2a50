/* SPDX-License-Identifier: MIT */
/*
 * sched_culprits.h - who had the CPU while a thread waited for it.
 *
 * Fed by sched_stats.c (when st->culprits is set) with what the trace
 * says about each CPU: the running intervals of the recorded threads,
 * the gaps between a recorded thread's switch-out and the next recorded
 * switch-in on that CPU (whose occupants the two switches name: the idle
 * task, or a task outside the session, redacted), and the waits of the
 * recorded threads (the runnable interval that ended at a switch-in, on
 * the CPU it ended on).  At the end each wait is laid over its CPU's
 * occupants: per thread, every occupant with the time it held the CPU
 * during the thread's waits and the number of waits it was in.
 *
 * A gap whose two ends name the same task (not the idle task, and not
 * redacted: one the session sees but does not record, such as the
 * recorder's own threads) was that task's.
 *
 * What the trace cannot say: which task outside the session ran (the
 * kernel names none of them to a session: they are one culprit, "other
 * processes"), or, in a gap whose ends name different occupants (the
 * idle task at one end, another process at the other), how the gap
 * divides: it is its own culprit, "idle or other processes".  A wait the
 * balancer migrated is laid over the CPU it came from up to its newest
 * migration and over the CPU where it ended after it (sched_stats.c
 * gives the pieces); an earlier migration of the same wait is not
 * followed.  Gaps across a loss of that CPU's records are left out.
 */
#ifndef DIAL9_SCHED_CULPRITS_H
#define DIAL9_SCHED_CULPRITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What held the CPU. */
enum sched_occupant {
	SCHED_OCC_THREAD,		/* a thread: tid, tgid (0: not known) */
	SCHED_OCC_IDLE,			/* the idle task */
	SCHED_OCC_OTHERS,		/* tasks outside the session */
	SCHED_OCC_IDLE_OR_OTHERS,	/* a gap between the two */
};

struct sched_culprit {
	uint32_t kind;			/* enum sched_occupant */
	uint32_t tid, tgid;		/* SCHED_OCC_THREAD */
	uint64_t ns;			/* time on the CPU during the waits */
	uint64_t waits;			/* waits it was in */
	size_t last_wait;		/* 1 + the last of them (counting) */
};

struct sched_occ {
	uint64_t start, end;
	uint32_t src, cpu, kind, tid, tgid;
};

/* How a wait began. */
enum sched_cause {
	SCHED_CAUSE_NEW,		/* a thread's first run */
	SCHED_CAUSE_PREEMPTED,		/* switched out still runnable */
	SCHED_CAUSE_WOKEN,		/* blocked, then woken */
	SCHED_CAUSE_UNKNOWN,		/* its state before is not known */
};

/* What a switch-in says of the wait it ended (for --explain). */
struct sched_wait_info {
	uint32_t cause;			/* enum sched_cause */
	uint64_t delay_ns;		/* the whole wait; 0: not known */
	bool waker_known;		/* the waking is in the trace */
	bool waker_irq;			/* woken from an interrupt */
	uint32_t waker_tid, waker_tgid;
	uint64_t wake_ts;		/* when, if waker_known */
};

/* A wait on one CPU: a migrated wait is one piece per CPU, same id. */
struct sched_wait {
	uint64_t start, end;
	uint32_t src, cpu;
	size_t thread, id;
	struct sched_wait_info info;
};

/* A CPU's last recorded switch-out, until the next switch-in there. */
struct sched_cpu_out {
	uint32_t src, cpu, next;
	uint64_t ts;
};

struct sched_culprits {
	struct sched_occ *occ;
	size_t nocc, occ_cap;
	struct sched_wait *waits;
	size_t nwaits, waits_cap;
	struct sched_cpu_out *outs;
	size_t nouts, outs_cap;
	/* outs by (src, cpu): open addressing, index + 1 (0: empty) */
	uint32_t *outs_at;
	size_t outs_at_cap;		/* a power of two, > 2 * nouts */
	size_t nids;			/* waits so far (their ids) */
	bool more;			/* the last piece's wait goes on */
};

void d9_culprits_free(struct sched_culprits *c);
/* Thread (@src, @tid, @tgid) ran on @cpu over [start, end); -ENOMEM. */
int d9_culprits_ran(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		    uint32_t tid, uint32_t tgid, uint64_t start, uint64_t end);
/* A recorded switch-out on @cpu at @ts to @next (0 idle, else foreign
 * unless it is recorded: then its own switch-in follows); -ENOMEM. */
int d9_culprits_out(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		    uint64_t ts, uint32_t next);
/* A recorded switch-in on @cpu at @ts from @prev; -ENOMEM. */
int d9_culprits_in(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		   uint64_t ts, uint32_t prev);
/* Records of @cpu were lost: the gap open there is not known. */
void d9_culprits_lost(struct sched_culprits *c, uint32_t src, uint32_t cpu);
/*
 * Thread index @thread waited on @cpu over [start, end) (@more: and its
 * wait goes on, on another CPU, in the next call: a migration); -ENOMEM.
 */
int d9_culprits_wait(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		     size_t thread, uint64_t start, uint64_t end,
		     const struct sched_wait_info *info, bool more);
/*
 * Lay every wait over its CPU's occupants: @add(ctx, thread, occupant,
 * ns, wait) for each overlap of wait @wait (its id) with an occupant's
 * interval, waits in turn; stops at an error @add returns.
 */
int d9_culprits_resolve(struct sched_culprits *c,
			int (*add)(void *ctx, size_t thread,
				   const struct sched_occ *o, uint64_t ns,
				   size_t wait),
			void *ctx);

/*
 * The waits whose whole length is known and at least @min_ns, in the
 * order they ended (@w: its last piece, on the CPU where it ended), each
 * with what ran on the CPUs it waited on meanwhile (@ran[0..n):
 * one per occupant, in the order they first ran, ns its time) and the
 * most any other CPU of its source was idle meanwhile (the trace does
 * not hold the thread's affinity: any CPU counts): @fn(ctx, wait, ran,
 * n, idle_elsewhere_ns); stops at an error @fn returns, or -ENOMEM.
 * Call after d9_culprits_resolve() (which sorts the occupants).
 */
/*
 * After d9_culprits_resolve(): what held (@src, @cpu) over [start, end),
 * in time order, each occupant's interval clipped to it: @fn(ctx, o,
 * from, to); stops at an error @fn returns.
 */
int d9_culprits_lane(const struct sched_culprits *c, uint32_t src,
		     uint32_t cpu, uint64_t start, uint64_t end,
		     int (*fn)(void *ctx, const struct sched_occ *o,
			       uint64_t from, uint64_t to),
		     void *ctx);
int d9_culprits_explain(struct sched_culprits *c, uint64_t min_ns,
			int (*fn)(void *ctx, const struct sched_wait *w,
				  const struct sched_culprit *ran, size_t n,
				  uint64_t idle_elsewhere_ns),
			void *ctx);

#endif
