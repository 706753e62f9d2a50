/* SPDX-License-Identifier: MIT */
/*
 * sched_account.h - per CPU, the kernel records a trace holds against
 * dial9.ko's own counts of that CPU's ring (sched.ring, written at the end
 * of a recording): the records in the trace plus those the recorder left
 * out must be what the kernel wrote, and the trace's sched.lost counts
 * what it dropped.  Together: recorded + lost == what the probes tried to
 * write.  docs/format.md says which events are records.
 */
#ifndef DIAL9_SCHED_ACCOUNT_H
#define DIAL9_SCHED_ACCOUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/sched_read.h"

/* A cpu field past this (a record's is 16 bits) counts as unplaced. */
#define D9_ACCT_MAX_CPUS 65536u

struct d9_acct_cpu {
	uint32_t src, cpu;
	uint64_t records;	/* kernel records in the trace */
	uint64_t lost;		/* the trace's sched.lost counts */
	bool ring;		/* a sched.ring event was seen: */
	uint64_t written;	/* records the kernel wrote in the ring */
	uint64_t klost;		/* records it dropped */
	uint64_t filtered;	/* read and left out by the recorder */
};

/*
 * The (source, CPU) pairs a trace has events of: one entry each, found
 * through an open-addressing index, so memory follows the input.
 */
struct d9_acct {
	struct d9_acct_cpu *v;
	size_t n, cap;
	uint32_t *index;	/* entry + 1, 0: empty; a power of two long */
	size_t nindex;
	uint64_t unplaced;	/* records with no usable cpu field */
	/* The last event if a switch_out: its record's switch_in is next. */
	bool out;
	uint32_t out_src;
	uint64_t out_ts, out_cpu, out_tid, out_next;
};

void d9_acct_init(struct d9_acct *a);
void d9_acct_free(struct d9_acct *a);
/* A new stream: the two events of one record are never split by one. */
void d9_acct_stream(struct d9_acct *a);
/* Count one sched.* event of source @src; 0 or -ENOMEM. */
int d9_acct_feed(struct d9_acct *a, const struct sched_fields *f,
		 const struct dial9_record *r, uint32_t src);
/* CPU @cpu of source @src, or NULL if the trace has nothing of it. */
const struct d9_acct_cpu *d9_acct_get(const struct d9_acct *a, uint32_t src,
				      uint32_t cpu);
/* Sort the entries (a->v[0 .. a->n)) by source, then CPU. */
void d9_acct_sort(struct d9_acct *a);
/* Whether @c has ring counts and the trace agrees with them. */
bool d9_acct_agrees(const struct d9_acct_cpu *c);

#endif
