/* SPDX-License-Identifier: MIT */
/*
 * sched_read.h - sched.* events of a trace as struct sched_ev: the field
 * names, looked up once per schema, shared by every tool that reads them.
 */
#ifndef DIAL9_SCHED_READ_H
#define DIAL9_SCHED_READ_H

#include "dial9.h"
#include "sched_stats.h"

enum sched_kind {
	SK_OTHER, SK_OUT, SK_IN, SK_WAKING, SK_MIGRATE, SK_EXIT, SK_COMM,
	SK_LOST, SK_SSTAT, SK_UNFOLLOWED, SK_APP_LOST,
};

/* Field indexes of one schema (-1: absent). */
struct sched_fields {
	const struct dial9_schema *schema;
	int kind;			/* enum sched_kind */
	int tid, pid, cpu, preempted, state, wait, known, totals, rtotal,
	    rcount, name, count, run, slices, parent, waker, events, pexec;
};

void sched_fields_lookup(struct sched_fields *f, const struct dial9_schema *s);
uint64_t sched_fu64(const struct dial9_record *r, int i);
bool sched_fbool(const struct dial9_record *r, int i);
/* A sched.switch_out or sched.switch_in of source @src as an event. */
void sched_fields_ev(const struct sched_fields *f,
		     const struct dial9_record *r, uint32_t src,
		     struct sched_ev *e);
/* The source a metadata record names (host, boot_id); -ENOMEM. */
int sched_meta_source(struct sched_stats *st, const struct dial9_record *r);
/*
 * Feed one sched.* or dial9.lost event of source @src to @st: switches,
 * migrations, names, losses, unfollowed processes, samples; -ENOMEM.
 */
int sched_feed(struct sched_stats *st, const struct sched_fields *f,
	       const struct dial9_record *r, uint32_t src);

#endif
