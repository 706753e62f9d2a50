/* SPDX-License-Identifier: MIT */
/*
 * sched_stats.h - per-thread scheduling statistics from switch and migrate
 * events, shared by `dial9 sched` (from traces), `dial9 sched --live`
 * (from /dev/dial9) and the timeline of `dial9 export` and `dial9 report`.
 *
 * This is the one place that decides what a thread was doing between two
 * of its events (running, runnable, blocked, or unknown across a loss),
 * how long each wait was (or that it is unknown), and a thread's total
 * runqueue wait and count (see sched_stats.c).
 */
#ifndef DIAL9_SCHED_STATS_H
#define DIAL9_SCHED_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched_culprits.h"
#include "sched_spans.h"
#include "sched_stacks.h"

#define SCHED_HIST_BUCKETS 40	/* log2 of microseconds */

/* What a thread is doing; SCHED_UNKNOWN spans a loss of records. */
enum sched_state {
	SCHED_NONE, SCHED_RUNNING, SCHED_RUNNABLE, SCHED_BLOCKED,
	SCHED_UNKNOWN,
};

/* One switch event of a thread, as read from a trace or the kernel. */
struct sched_ev {
	uint64_t ts;
	uint32_t src;			/* trace source (d9_sched_stats_source) */
	uint32_t tid, tgid, cpu;
	bool runnable;			/* out: preempted, still runnable */
	bool dead;			/* out: its last switch (state X) */
	bool wait_known;		/* in: wait_ns is valid */
	uint64_t wait_ns;		/* in: runqueue wait on this CPU */
	bool totals;			/* runq_total, runq_count are valid */
	uint64_t runq_total;		/* the scheduler's run_delay, ns */
	uint32_t runq_count;		/* its pcount, low 32 bits */
	uint32_t other;			/* out: next tid; in: prev tid (0: idle) */
	uint32_t other_tgid;		/* its pid (0: not known) */
	int32_t other_prio;		/* its prio (-1: not known) */
	int32_t prio;			/* in: the thread's prio (-1: not known) */
};

/* A piece of a thread's time, [start, end) in one state. */
struct sched_piece {
	int state;			/* enum sched_state */
	uint64_t start, end;
};

/* What one event says about the thread's time before it. */
struct sched_result {
	size_t thread;			/* index into sched_stats.threads */
	struct sched_piece p[3];	/* in time order */
	int n;
	int delay;			/* 1 known, -1 unknown, 0 no wait */
	uint64_t delay_ns;		/* the whole wait, when known */
};

struct sched_thread {
	uint32_t src, tid, tgid;
	char name[16];
	uint64_t name_ns;		/* time of the newest name */
	uint64_t voluntary, involuntary, migrations;
	uint64_t on_cpu_ns, runnable_ns, blocked_ns, unknown_ns;
	/* per-wait delays whose length is known */
	uint64_t delay_count, delay_sum, delay_max, delay_max_at;
	uint64_t unknown_delays;	/* waits of unknown length */
	uint64_t *delays;		/* every known delay, for percentiles */
	uint64_t *delay_at;		/* when each ended (until sorted) */
	size_t ndelays, cap, cap_at;
	size_t pending;			/* 1 + index of a delay to correct */
	size_t pending_wait;		/* 1 + index of its culprits' wait */
	/* the one total (d9_sched_stats_finish): exact with totals */
	uint64_t runq_total_ns, waits;
	/* cumulative totals: at first observation, and the newest known */
	bool totals;
	uint64_t base_total, cum_total;
	uint32_t base_count, cum_count;
	/* schedstat samples (first and last), when there are no switches */
	uint64_t ss_n, ss_run0, ss_delay0, ss_slices0, ss_run, ss_delay,
		ss_slices;
	/* se.nr_migrations at the first and the last that had it */
	uint64_t ss_mig0, ss_mig;
	bool sampled;			/* figures come from samples */
	/* the total and count come from schedstat at both ends (perf) */
	bool sstat_totals;
	/* state machine */
	int state;			/* enum sched_state */
	int last;			/* 0 none, 1 switch-out, 2 switch-in */
	uint64_t since;
	size_t nloss;			/* losses seen at its last event */
	/* its newest migration, from one CPU to another (UINT32_MAX: not
	 * known), to lay a migrated wait over both CPUs */
	uint64_t mig_ts;
	uint32_t mig_from, mig_to;
	/* its newest waking (d9_sched_stats_waking), for --explain */
	uint64_t wake_ts;
	uint32_t waker_tid, waker_tgid;
	bool waker_irq;
	int32_t prio;			/* at its newest switch-in (-1: not known) */
	/* its sched.exit, or 0: where a backend that does not follow it to
	 * its last switch-out (perf) has it end (d9_sched_stats_close) */
	uint64_t exit_ns;
	/* with st->culprits, after d9_sched_stats_finish: largest first */
	struct sched_culprit *culprits;
	size_t nculprits, culprits_cap;
};

/* A LOST record: @count records of @cpu dropped within [from, to]. */
struct sched_loss {
	uint32_t src, cpu;
	uint64_t from, to, count;
};

/* Where events came from: threads of two sources never merge. */
struct sched_source {
	char *host, *boot_id;
	char *service, *backend;	/* from its metadata, or NULL */
	char *note;		/* sched_note: what the backend cannot see */
	uint64_t first_ns;
	/* its first clock sync: CLOCK_REALTIME = real + (ts - mono) */
	bool synced;
	uint64_t sync_mono, sync_real;
	uint64_t *cpu_last;		/* newest event time per CPU */
	uint32_t ncpu;
};

struct sched_unfollowed {
	uint32_t src, pid, parent;
	bool exec;	/* followed until an exec that gained privileges */
};

struct sched_stats {
	struct sched_thread *threads;
	size_t n, cap;
	uint32_t *tab;			/* hash of (src, tid): index + 1 */
	size_t tab_cap;
	struct sched_source *srcs;
	size_t nsrcs;
	struct sched_loss *losses;
	size_t nloss, loss_cap;
	struct sched_unfollowed *unfollowed;
	size_t nunfollowed;
	uint64_t hist[SCHED_HIST_BUCKETS];
	uint64_t lost;			/* scheduler records (sched.lost) */
	uint64_t lost_app;		/* application events (dial9.lost) */
	uint64_t first_ns, last_ns;
	struct sched_culprits *culprits;	/* NULL: not collected */
	struct sched_stacks *stacks;	/* NULL: not collected */
	struct sched_spans *spans;	/* NULL: not collected */
};

void d9_sched_stats_init(struct sched_stats *st);
void d9_sched_stats_free(struct sched_stats *st);
/*
 * The source of events from @host and @boot_id (either may be NULL: not
 * known); equal pairs are one source.  Returns its index or -ENOMEM.
 * Live tools and traces without metadata use source 0.
 */
int d9_sched_stats_source(struct sched_stats *st, const char *host,
		       const char *boot_id);
/* Source @src, made (with no host or boot id) if needed; NULL: -ENOMEM. */
struct sched_source *d9_sched_stats_src(struct sched_stats *st, uint32_t src);
/* An event of @cpu at @ts (for the windows of losses); -ENOMEM. */
int d9_sched_stats_cpu_seen(struct sched_stats *st, uint32_t src, uint32_t cpu,
			 uint64_t ts);
/* Collect culprits (sched_culprits.h) from now on; -ENOMEM. */
int d9_sched_stats_want_culprits(struct sched_stats *st);
/* The index of thread (@src, @tid, @tgid), or -1 if there is none. */
long d9_sched_stats_find(const struct sched_stats *st, uint32_t src,
			 uint32_t tid, uint32_t tgid);
/* Returns the thread's index (created on first sight), or -ENOMEM. */
long d9_sched_stats_thread(struct sched_stats *st, uint32_t src, uint32_t tid,
			uint32_t tgid);
/* A switch-out and a switch-in; @res (may be NULL) says what it meant. */
int d9_sched_stats_out(struct sched_stats *st, const struct sched_ev *e,
		    struct sched_result *res);
int d9_sched_stats_in(struct sched_stats *st, const struct sched_ev *e,
		   struct sched_result *res);
/*
 * A switch of @cpu at @ts between two tasks the recording does not record
 * (sched.cpu_switch); -ENOMEM.
 */
int d9_sched_stats_cpu_switch(struct sched_stats *st, uint32_t src,
			      uint64_t ts, uint32_t cpu,
			      const struct sched_task *prev,
			      const struct sched_task *next);
/* Source @src records such switches (sched.occupants); -ENOMEM. */
int d9_sched_stats_occupants(struct sched_stats *st, uint32_t src);
/* The name of such a task (sched.occupant_comm); -ENOMEM. */
int d9_sched_stats_occupant_name(struct sched_stats *st, uint32_t src,
				 uint32_t tid, const char *name, size_t len);
/* A migration at @ts from CPU @from to @to (UINT32_MAX: not known). */
void d9_sched_stats_migrate(struct sched_stats *st, uint32_t src, uint64_t ts,
			    uint32_t tid, uint32_t tgid, uint32_t from,
			    uint32_t to);
void d9_sched_stats_name(struct sched_stats *st, uint32_t src, uint64_t time_ns,
		      uint32_t tid, uint32_t tgid, const char *name,
		      size_t len);
/* Thread (@src, @tid) was woken at @ts by (@waker_tid, @waker_tgid), or
 * from an interrupt (@irq). */
void d9_sched_stats_waking(struct sched_stats *st, uint32_t src, uint64_t ts,
			   uint32_t tid, uint32_t tgid, uint32_t waker_tid,
			   uint32_t waker_tgid, bool irq);
/* @count records of @cpu were lost just before @ts. */
int d9_sched_stats_lost(struct sched_stats *st, uint32_t src, uint64_t ts,
		     uint32_t cpu, uint64_t count);
/*
 * A child process the kernel could not follow, or (@exec) a process it
 * stopped following at an exec that gained privileges.
 */
int d9_sched_stats_unfollowed(struct sched_stats *st, uint32_t src,
			   uint32_t pid, uint32_t parent, bool exec);
/* A cumulative schedstat sample (the schedstat backend). */
/*
 * A sched.schedstat event: the thread's cumulative figures at @time_ns;
 * @migrations UINT64_MAX and @prio -1 where not known.
 */
void d9_sched_stats_sample(struct sched_stats *st, uint32_t src,
			uint64_t time_ns, uint32_t tid, uint32_t tgid,
			uint64_t run_ns, uint64_t delay_ns, uint64_t slices,
			uint64_t migrations, int32_t prio);
/* End thread @i's open interval at @end_ns (into @res, may be NULL). */
/* Thread @tid exited at @ts (sched.exit); a thread not seen is not made. */
void d9_sched_stats_exit(struct sched_stats *st, uint32_t src, uint64_t ts,
			 uint32_t tid, uint32_t tgid);
/*
 * Close thread @i's open interval at @end_ns, or at its exit if nothing
 * of it came after that (perf sees no switch-out past a task's exit).
 */
void d9_sched_stats_close(struct sched_stats *st, size_t i, uint64_t end_ns,
		       struct sched_result *res);
/* Close open intervals at @end_ns (the end of the observed window). */
void d9_sched_stats_finish(struct sched_stats *st, uint64_t end_ns);
/* After finish: each thread's culprits (when collected); -ENOMEM. */
int d9_sched_stats_culprits(struct sched_stats *st);
/* The log2-microsecond bucket of a delay. */
int d9_sched_hist_bucket(uint64_t ns);
/* Wall clock (ns since the epoch, UTC) of trace time @ts of source
 * @src, from its clock sync; 0 when it has none. */
/* The wall clock at trace time @ts from a clock sync pair; 0 if none. */
uint64_t d9_wall_ns(uint64_t sync_mono, uint64_t sync_real, uint64_t ts);
uint64_t d9_sched_wall_ns(const struct sched_stats *st, uint32_t src,
			  uint64_t ts);
/* "YYYY-MM-DDTHH:MM:SS.mmmmmmZ" of @wall_ns into buf ("" for 0). */
void d9_sched_utc(uint64_t wall_ns, char *buf, size_t len);
/* A thread with anything to report (the others are left out). */
bool d9_sched_thread_active(const struct sched_thread *t);
/* Percentile (0..100) of a thread's delays; 0 without delays. */
uint64_t d9_sched_thread_percentile(struct sched_thread *t, double pct);

#endif
