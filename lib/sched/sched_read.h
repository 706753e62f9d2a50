/* SPDX-License-Identifier: MIT */
/*
 * sched_read.h - sched.* events of a trace as struct sched_ev: the field
 * names, looked up once per schema, shared by every tool that reads them.
 */
#ifndef DIAL9_SCHED_READ_H
#define DIAL9_SCHED_READ_H

#include "dial9.h"
#include "sched/sched_stats.h"

enum sched_kind {
	SK_OTHER, SK_OUT, SK_IN, SK_WAKING, SK_MIGRATE, SK_EXIT, SK_COMM,
	SK_LOST, SK_SSTAT, SK_UNFOLLOWED, SK_APP_LOST, SK_STACK, SK_MAPPING,
	SK_SYMBOL, SK_SYMBOL_NOTE, SK_CPU_SWITCH, SK_OCCUPANTS, SK_OCCUPANT_COMM,
	SK_WAKEUP, SK_RING,
	SK_SAMPLE, SK_THREAD_NAME, SK_UNKNOWN,
};

/* Field indexes of one schema (-1: absent). */
struct sched_fields {
	const struct dial9_schema *schema;
	int kind;			/* enum sched_kind */
	int tid, pid, cpu, preempted, state, wait, known, totals, rtotal,
	    rcount, name, count, run, slices, parent, waker, events, pexec,
	    other, wakerpid, irq, from, to, frames, truncated, start, end,
	    offset, path, waker_stack;
	int build_id, address, within, object, why, period, missed;
	int migrations;			/* sched.schedstat's */
	/* the other side's pid and prio (out: next, in: prev), own prio */
	int other_pid, other_prio, prio;
	/* sched.cpu_switch: both sides; sched.occupant_comm */
	int prev_tid, prev_pid, prev_prio, next_tid, next_pid, next_prio,
	    occ_tid;
	int rwritten, rlost, rfiltered;	/* sched.ring's */
};

void d9_sched_fields_lookup(struct sched_fields *f, const struct dial9_schema *s);
uint64_t d9_sched_fu64(const struct dial9_record *r, int i);
bool d9_sched_fbool(const struct dial9_record *r, int i);
/* A sched.switch_out or sched.switch_in of source @src as an event. */
void d9_sched_fields_ev(const struct sched_fields *f,
		     const struct dial9_record *r, uint32_t src,
		     struct sched_ev *e);
/* The source a metadata record names (host, boot_id); -ENOMEM. */
int d9_sched_meta_source(struct sched_stats *st, const struct dial9_record *r);
/* A source's first clock sync (a record of any other kind: nothing). */
void d9_sched_clock_sync(struct sched_stats *st, uint32_t src,
			 const struct dial9_record *rec);
/*
 * Feed one sched.* or dial9.lost event of source @src to @st: switches,
 * migrations, names, losses, unfollowed processes, samples; -ENOMEM.
 */
int d9_sched_feed(struct sched_stats *st, const struct sched_fields *f,
	       const struct dial9_record *r, uint32_t src);
/*
 * Feed every sched.* and dial9.lost event of the trace in buf[0..len)
 * (one segment, or several concatenated) to @st, each under the source
 * its metadata names; 0, -ENOMEM, or the decoder's error (*err_off: where).
 */
int d9_sched_trace(struct sched_stats *st, const void *buf, size_t len,
		   uint64_t *err_off);

#endif
