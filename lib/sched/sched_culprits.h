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
 * With dial9.ko's DIAL9_CFG_OCCUPANTS (a sched.occupants event in the
 * source) the trace also holds every switch of a CPU while a recorded
 * thread waits there (sched.cpu_switch, d9_culprits_switch()): each one
 * splits the gap, so each piece has one occupant, by name and prio for a
 * privileged recording (names from sched.occupant_comm), redacted (one
 * culprit, "other processes") for an unprivileged one, or the idle task.
 * There a gap whose two ends disagree began before the wait that made
 * the CPU's switches recorded: the task at its end held the CPU since
 * that wait began at least, and the gap is that task's (on the lanes of
 * --explain and the report, it reaches back to the gap's start).
 *
 * What a trace without them cannot say: which task outside the session
 * ran (the kernel names none of them to a session: they are one culprit,
 * "other processes"), or, in a gap whose ends name different occupants
 * (the idle task at one end, another process at the other), how the gap
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

/* A side of a switch: tid 0 the idle task, UINT32_MAX redacted. */
struct sched_task {
	uint32_t tid, tgid;		/* tgid 0: not known */
	int32_t prio;			/* the kernel's, 0..139; -1: not known */
};

struct sched_culprit {
	uint32_t kind;			/* enum sched_occupant */
	uint32_t tid, tgid;		/* SCHED_OCC_THREAD */
	int32_t prio;			/* its newest known (-1: not known) */
	uint64_t ns;			/* time on the CPU during the waits */
	uint64_t waits;			/* waits it was in */
	size_t last_wait;		/* 1 + the last of them (counting) */
};

struct sched_occ {
	uint64_t start, end;
	uint32_t src, cpu, kind, tid, tgid;
	int32_t prio;			/* -1: not known */
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
	uint32_t src, cpu;
	struct sched_task next;		/* who had the CPU from ts */
	uint64_t ts;
};

/* A name of a task outside the recording (sched.occupant_comm). */
struct sched_occ_name {
	uint32_t src, tid;
	char name[16];
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
	uint8_t *occ_src;		/* [src]: DIAL9_CFG_OCCUPANTS seen */
	size_t nocc_src;
	struct sched_occ_name *names;
	size_t nnames, names_cap;
};

void d9_culprits_free(struct sched_culprits *c);
/* Thread @t of @src ran on @cpu over [start, end); -ENOMEM. */
int d9_culprits_ran(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		    const struct sched_task *t, uint64_t start, uint64_t end);
/* A recorded switch-out on @cpu at @ts to @next (0 idle, else foreign
 * unless it is recorded: then its own switch-in follows); -ENOMEM. */
int d9_culprits_out(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		    uint64_t ts, const struct sched_task *next);
/* A recorded switch-in on @cpu at @ts from @prev; -ENOMEM. */
int d9_culprits_in(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		   uint64_t ts, const struct sched_task *prev);
/* A switch on @cpu at @ts with no recorded side (sched.cpu_switch). */
int d9_culprits_switch(struct sched_culprits *c, uint32_t src, uint32_t cpu,
		       uint64_t ts, const struct sched_task *prev,
		       const struct sched_task *next);
/* Source @src records every switch where one waits; -ENOMEM. */
int d9_culprits_occupants(struct sched_culprits *c, uint32_t src);
bool d9_culprits_has_occupants(const struct sched_culprits *c, uint32_t src);
/* Task @tid of @src outside the recording is named @name; -ENOMEM. */
int d9_culprits_name(struct sched_culprits *c, uint32_t src, uint32_t tid,
		     const char *name, size_t len);
/* Its newest name, or NULL. */
const char *d9_culprits_name_of(const struct sched_culprits *c, uint32_t src,
				uint32_t tid);
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
 * The kernel counted @wait_ns for the wait whose final piece (ending at
 * the switch-in) is @i, less than the tracepoints measured: its pieces
 * (one per CPU it waited on) last @wait_ns at most in all, cut from the
 * start, and so does the wait.
 */
void d9_culprits_clamp(struct sched_culprits *c, size_t i, uint64_t wait_ns);
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
