// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 occupants' slots (occupants.h): each DIAL9_CFG_OCCUPANTS session
 * gets one at enable, so that a switch of two tasks no session follows
 * visits only the sessions with a task queued on that CPU.
 */
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include "occupants.h"

static unsigned int occupant_slots = DIAL9_OCC_SLOTS;
module_param(occupant_slots, uint, 0644);
MODULE_PARM_DESC(occupant_slots,
		 "DIAL9_CFG_OCCUPANTS sessions that get a slot of the per-CPU maps at ENABLE, at most 256 (the default); the others make switches walk every session while one of their tasks waits (read at ENABLE; for tests)");

DEFINE_PER_CPU_SHARED_ALIGNED(struct dial9_occ_map, dial9_occ_map);
/* The sessions of the slots, RCU; the slots in use, under dial9_reg_lock. */
struct dial9_session __rcu *dial9_occ_sessions[DIAL9_OCC_SLOTS];
DECLARE_BITMAP(dial9_occ_used, DIAL9_OCC_SLOTS);

/*
 * Names start afresh at each enable: no probe sees @s yet.  The counts of
 * queued tasks are zero: from the allocation, or dial9_occupants_drop().
 */
void dial9_occupants_reset(struct dial9_session *s)
{
	struct dial9_ring *r;
	int cpu;

	for_each_possible_cpu(cpu) {
		r = s->rings[cpu];
		if (!r)
			continue;
		memset(r->named, 0, sizeof(r->named));
		r->named_next = 0;
	}
}

/*
 * At enable, before the probes find @s: a slot of the CPUs' maps for a
 * DIAL9_CFG_OCCUPANTS session of dial9_sessions, if one is free (or -1:
 * the overflow sum).  Caller holds dial9_reg_lock.
 */
void dial9_occupants_slot(struct dial9_session *s)
{
	unsigned int slot;

	s->occ_slot = -1;
	if (!s->occupants || s->system_wide)
		return;
	slot = find_first_zero_bit(dial9_occ_used, DIAL9_OCC_SLOTS);
	if (slot >= min_t(unsigned int, READ_ONCE(occupant_slots),
			  DIAL9_OCC_SLOTS))
		return;
	__set_bit(slot, dial9_occ_used);
	s->occ_slot = slot;
	rcu_assign_pointer(dial9_occ_sessions[slot], s);
}

/*
 * At disable, once no probe sees @s: its counts leave the CPUs' sums and
 * maps, and its slot is free again (with no bit of it set anywhere).
 * Caller holds dial9_reg_lock.
 */
void dial9_occupants_drop(struct dial9_session *s)
{
	struct dial9_ring *r;
	int cpu;

	for_each_possible_cpu(cpu) {
		r = s->rings[cpu];
		if (r && s->occupants)
			dial9_queued_clear(s, r);
		if (s->occ_slot >= 0)
			clear_bit(s->occ_slot, dial9_occ_bits(cpu));
	}
	if (s->occ_slot >= 0)
		__clear_bit(s->occ_slot, dial9_occ_used);
	s->occ_slot = -1;
}
