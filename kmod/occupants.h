/* SPDX-License-Identifier: GPL-2.0 */
/*
 * occupants.h - which DIAL9_CFG_OCCUPANTS sessions a switch of two tasks
 * that no session follows must visit: the slots, the per-CPU maps and the
 * counts of queued recorded tasks (occupants.c; the probes, probes.c, and
 * enable/disable, attach.c, use them).
 */
#ifndef DIAL9_OCCUPANTS_H
#define DIAL9_OCCUPANTS_H

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/percpu.h>
#include "dial9_core.h"

/*
 * DIAL9_CFG_OCCUPANTS sessions of dial9_sessions record the switches
 * between two tasks of no table on a CPU while one of their recorded
 * tasks waits there (its ring's count, dial9_ring.queued): a switch of
 * two such tasks visits those sessions, and only them.  Each gets a slot
 * at enable (s->occ_slot), and each CPU a map with a bit per slot, set
 * while that session's count on that CPU may be above zero: set after
 * the count is raised, cleared when it is seen at zero and set again if
 * it is not zero after all (dial9_queued_*(); full barriers between,
 * so that a raise and a clear that race leave the bit set).  A set bit
 * with nothing queued only costs a visit.  Past DIAL9_OCC_SLOTS such
 * sessions, the others (occ_slot -1) add their counts to their CPU's
 * overflow sum instead (raised before a ring's count, lowered after
 * it, so never below their sum): while it is not zero, such a switch
 * walks dial9_sessions.  Counts change at wake-ups onto the CPU (under
 * its runqueue lock, which the switch probe holds too), at switches on
 * it and at migrations (from the source CPU), as they always did.
 */
#define DIAL9_OCC_SLOTS		256

struct dial9_occ_map {
	atomic_t overflow;	/* the sum of the sessions with no slot */
	unsigned long bits[BITS_TO_LONGS(DIAL9_OCC_SLOTS)];
};

DECLARE_PER_CPU_SHARED_ALIGNED(struct dial9_occ_map, dial9_occ_map);
/* The sessions of the slots, RCU; the slots in use, under dial9_reg_lock. */
extern struct dial9_session __rcu *dial9_occ_sessions[DIAL9_OCC_SLOTS];
extern unsigned long dial9_occ_used[BITS_TO_LONGS(DIAL9_OCC_SLOTS)];

/*
 * A ring's count of queued recorded tasks, one more, one fewer, or none,
 * and with it its CPU's bit of the session, or overflow sum (a
 * system-wide session needs neither: it is visited at every switch).
 */
static __always_inline unsigned long *dial9_occ_bits(int cpu)
{
	return per_cpu_ptr(&dial9_occ_map, cpu)->bits;
}

static __always_inline atomic_t *dial9_occ_sum(int cpu)
{
	return &per_cpu_ptr(&dial9_occ_map, cpu)->overflow;
}

/* Whether a session of dial9_sessions may have a task waiting here. */
static __always_inline bool dial9_occupied_here(void)
{
	const struct dial9_occ_map *m = this_cpu_ptr(&dial9_occ_map);
	int i;

	if (atomic_read(&m->overflow))
		return true;
	for (i = 0; i < ARRAY_SIZE(m->bits); i++)
		if (READ_ONCE(m->bits[i]))
			return true;
	return false;
}

/* The count of @r may have reached zero: clear its bit, unless it did not. */
static __always_inline void dial9_queued_settle(struct dial9_session *s,
						struct dial9_ring *r)
{
	unsigned long *bits = dial9_occ_bits(r->cpu);

	if (atomic_read(&r->queued) > 0)
		return;
	clear_bit(s->occ_slot, bits);
	/* Pairs with the barrier of dial9_queued_inc(). */
	smp_mb__after_atomic();
	if (atomic_read(&r->queued) > 0)
		set_bit(s->occ_slot, bits);
}

static __always_inline void dial9_queued_inc(struct dial9_session *s,
					     struct dial9_ring *r)
{
	unsigned long *bits;

	if (s->system_wide) {
		atomic_inc(&r->queued);
	} else if (s->occ_slot < 0) {
		atomic_inc(dial9_occ_sum(r->cpu));
		atomic_inc(&r->queued);
	} else {
		atomic_inc(&r->queued);
		/* Pairs with the barrier of dial9_queued_settle(). */
		smp_mb__after_atomic();
		bits = dial9_occ_bits(r->cpu);
		if (!test_bit(s->occ_slot, bits))
			set_bit(s->occ_slot, bits);
	}
}

static __always_inline void dial9_queued_dec(struct dial9_session *s,
					     struct dial9_ring *r)
{
	int left = atomic_dec_if_positive(&r->queued);

	if (left < 0 || s->system_wide)
		return;
	if (s->occ_slot < 0)
		atomic_dec(dial9_occ_sum(r->cpu));
	else if (!left)
		dial9_queued_settle(s, r);
}

static __always_inline void dial9_queued_clear(struct dial9_session *s,
					       struct dial9_ring *r)
{
	int n = atomic_xchg(&r->queued, 0);

	if (s->system_wide)
		return;
	if (s->occ_slot < 0) {
		if (n > 0)
			atomic_sub(n, dial9_occ_sum(r->cpu));
	} else if (n > 0 || test_bit(s->occ_slot, dial9_occ_bits(r->cpu))) {
		dial9_queued_settle(s, r);
	}
}

/* At enable and disable (attach.c, under dial9_reg_lock). */
void dial9_occupants_reset(struct dial9_session *s);
void dial9_occupants_slot(struct dial9_session *s);
void dial9_occupants_drop(struct dial9_session *s);

#endif /* DIAL9_OCCUPANTS_H */
