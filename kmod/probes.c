// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 probes: scheduler tracepoints turned into ring records.
 *
 * The probes run in scheduler context (sched_switch with the runqueue lock
 * held and interrupts off; wake-ups under p->pi_lock, or with only
 * preemption off when a task wakes itself).  So they never sleep, never
 * allocate and never wake anyone directly: a reader is woken through
 * irq_work.
 *
 * What a probe costs a task that no session records must not depend on
 * how many sessions there are, or whose: every user may open some, and
 * every switch of the machine runs these probes.  So a probe visits the
 * system-wide sessions (privileged; they record every task), and the
 * others only if a side of the event is in the index of followed
 * processes (dial9_indexed(), targets.c); at a switch of two tasks that
 * are not, only the DIAL9_CFG_OCCUPANTS sessions that have a recorded
 * task waiting on this CPU (dial9_switch_occupied()).  Otherwise it
 * returns after a bit test per side: no session visited, no table
 * walked, no clock read.  The module parameter probe_walks counts the
 * sessions visited, for diagnosis.
 */
#include <linux/module.h>
#include <linux/tracepoint.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/clock.h>
#include <linux/timekeeping.h>
#include <linux/rculist.h>
#include <linux/string.h>
#include <linux/pid.h>
#include <linux/preempt.h>
#include <linux/binfmts.h>
#include <linux/workqueue.h>
#include "dial9_core.h"
#include "compat.h"
#include "occupants.h"
#include "probes.h"



/* Sessions visited by the probes, per CPU: the sum is probe_walks. */
static DEFINE_PER_CPU(unsigned long, dial9_walks);

static int dial9_walks_get(char *buf, const struct kernel_param *kp)
{
	unsigned long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu(dial9_walks, cpu));
	return scnprintf(buf, PAGE_SIZE, "%lu\n", sum);
}

static const struct kernel_param_ops dial9_walks_ops = {
	.get = dial9_walks_get,
};

module_param_cb(probe_walks, &dial9_walks_ops, NULL, 0444);
MODULE_PARM_DESC(probe_walks,
		 "diagnostic: sessions visited by the probes since load (read-only)");

static __always_inline void dial9_walked(unsigned long n)
{
	if (n)
		this_cpu_add(dial9_walks, n);
}


/*
 * The ids of @p as this session may see them: its own tasks, the idle task
 * (pid 0), or anything for a privileged session; other tasks are redacted.
 */
static void dial9_ids(const struct dial9_session *s,
		      const struct task_struct *p, bool own,
		      u32 *tid, u32 *tgid)
{
	if (own || s->privileged || !p->pid) {
		*tid = p->pid;
		*tgid = p->tgid;
	} else {
		*tid = DIAL9_TID_REDACTED;
		*tgid = DIAL9_TID_REDACTED;
	}
}

/* The calling CPU's ring of @s.  Interrupts must be off. */
static __always_inline struct dial9_ring *dial9_this_ring(struct dial9_session *s)
{
	return s->rings[smp_processor_id()];
}

static void dial9_emit_comm(struct dial9_session *s, struct task_struct *p,
			    const char *comm)
{
	struct dial9_rec_comm *rec;
	struct dial9_ring *r;
	unsigned long flags;

	local_irq_save(flags);
	r = dial9_this_ring(s);
	rec = r ? dial9_ring_reserve(r, DIAL9_REC_COMM, sizeof(*rec),
				     ktime_get_mono_fast_ns()) : NULL;
	if (rec) {
		rec->tid = p->pid;
		rec->tgid = p->tgid;
		strscpy_pad(rec->comm, comm, sizeof(rec->comm));
		dial9_commit(s, r);
	}
	local_irq_restore(flags);
}


/*
 * DIAL9_CFG_OCCUPANTS: @s's count of the recorded tasks queued on this CPU
 * (<linux/dial9.h> says when it changes), kept across a switch; whether
 * one was queued before it, when the switch is to be recorded whatever
 * its sides.  Under the runqueue lock, which wake-ups onto this CPU take
 * too; migrations change it from the source CPU, hence the atomics.
 */
static __always_inline bool dial9_occupants_switch(struct dial9_session *s,
						   struct dial9_ring *r,
						   struct task_struct *prev,
						   struct task_struct *next,
						   bool own_prev, bool own_next)
{
	bool waiting = atomic_read(&r->queued) > 0;

	if (own_prev && dial9_task_queued(prev))
		dial9_queued_inc(s, r);
	if (is_idle_task(next))
		dial9_queued_clear(s, r);	/* nothing is queued: heal */
	else if (own_next)
		dial9_queued_dec(s, r);
	return waiting;
}

/* A recorded task @p made runnable on its CPU (it is not on one still). */
static void dial9_occupants_woken(struct dial9_session *s,
				  struct task_struct *p)
{
	struct dial9_ring *r;

	if (dial9_task_on_cpu(p))
		return;		/* woken before it switched out: not queued */
	r = s->rings[task_cpu(p)];
	if (r)
		dial9_queued_inc(s, r);
}

/*
 * A privileged DIAL9_CFG_OCCUPANTS session gets the name of a task it does
 * not record before that task's first switch in this ring, and again when
 * the name changed or was crowded out of the ring's cache: a COMM record
 * written here, with the task's name as it is now (copied with no lock,
 * as perf's sched_switch copies it), and not a lookup of /proc/TID/comm by
 * the reader later, which would miss every task gone by then and name
 * the others as they are then.  Costs a compare of a few cached entries
 * per foreign side of a recorded switch.
 */
static void dial9_name_occupant(struct dial9_session *s, struct dial9_ring *r,
				struct task_struct *p, u64 now)
{
	char comm[TASK_COMM_LEN];
	struct dial9_rec_comm *rec;
	struct dial9_named *n = NULL;
	int i;

	if (!p->pid)
		return;		/* the idle task needs no name */
	memcpy(comm, p->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	for (i = 0; i < DIAL9_NAMED && !n; i++)
		if (r->named[i].tid == p->pid)
			n = &r->named[i];
	if (n && !memcmp(n->comm, comm, sizeof(comm)))
		return;
	rec = dial9_ring_reserve(r, DIAL9_REC_COMM, sizeof(*rec), now);
	if (!rec)
		return;		/* counted as lost: named at its next switch */
	rec->hdr.flags = DIAL9_COMM_OCCUPANT;
	rec->tid = p->pid;
	rec->tgid = p->tgid;
	strscpy_pad(rec->comm, comm, sizeof(rec->comm));
	dial9_commit(s, r);
	if (!n) {
		n = &r->named[r->named_next];
		r->named_next = (r->named_next + 1) % DIAL9_NAMED;
	}
	n->tid = p->pid;
	memcpy(n->comm, comm, sizeof(comm));
}

/* What the records of one switch share, found once for all sessions. */
struct dial9_switch_ctx {
	struct task_struct *prev;
	struct task_struct *next;
	unsigned int prev_state;
	bool preempt;
	bool known;		/* the fields below are set */
	u16 flags;
	u32 state;		/* prev's DIAL9_STATE_*, 0 if preempted */
	u64 now;
	u64 wait_ns;
	u64 prev_delay;
	u64 next_delay;
	u32 prev_count;
	u32 next_count;
	struct dial9_stack *stack;	/* prev's, once walked */
};

/* What every session's record of the switch shares, found at the first. */
static __always_inline void dial9_switch_know(struct dial9_switch_ctx *w)
{
	u64 queued = dial9_queued_since(w->next);
	u16 flags = 0;

	w->known = true;
	if (w->preempt)
		flags |= DIAL9_SWITCH_PREEMPT;
	if (w->preempt || w->prev_state == TASK_RUNNING)
		flags |= DIAL9_SWITCH_PREV_RUNNABLE;
	w->wait_ns = 0;
	if (queued) {
		u64 t = local_clock();

		w->wait_ns = t > queued ? t - queued : 0;
		flags |= DIAL9_SWITCH_WAIT_VALID;
	}
	if (dial9_runq_totals(w->prev, &w->prev_delay, &w->prev_count) &&
	    dial9_runq_totals(w->next, &w->next_delay, &w->next_count))
		flags |= DIAL9_SWITCH_TOTALS;
	w->flags = flags;
	w->state = w->preempt ? 0 :
		__task_state_index(w->prev_state, w->prev->exit_state);
	w->now = ktime_get_mono_fast_ns();
}

/*
 * The fields of a switch record with a side @s may not see: a foreign
 * side shows nothing (no ids, state, prio or wait).  Out of line: only
 * unprivileged sessions with a foreign side get here.
 */
static noinline void dial9_switch_redact(struct dial9_session *s,
					 struct dial9_rec_switch *rec,
					 const struct dial9_switch_ctx *w,
					 bool own_prev, bool own_next)
{
	bool see_prev = own_prev || s->privileged;
	bool see_next = own_next || s->privileged;

	if (!see_prev)
		rec->hdr.flags &= ~(DIAL9_SWITCH_PREEMPT |
				    DIAL9_SWITCH_PREV_RUNNABLE);
	if (!see_next)
		rec->hdr.flags &= ~DIAL9_SWITCH_WAIT_VALID;
	dial9_ids(s, w->prev, own_prev, &rec->prev_tid, &rec->prev_tgid);
	dial9_ids(s, w->next, own_next, &rec->next_tid, &rec->next_tgid);
	rec->prev_prio = see_prev ? w->prev->prio : 0;
	rec->next_prio = see_next ? w->next->prio : 0;
	rec->prev_state = see_prev ? w->state : 0;
	rec->reserved = 0;
	rec->next_wait_ns = see_next ? w->wait_ns : 0;
	rec->prev_run_delay_ns = see_prev ? w->prev_delay : 0;
	rec->next_run_delay_ns = see_next ? w->next_delay : 0;
	rec->prev_pcount = see_prev ? w->prev_count : 0;
	rec->next_pcount = see_next ? w->next_count : 0;
}

/*
 * One session's part of a switch.  A session without switch events is
 * here only to resume its sampling timer (sample.c), which parks when it
 * finds no recorded task on its CPU.
 */
static __always_inline void dial9_switch_one(struct dial9_session *s,
					     struct dial9_switch_ctx *w)
{
	struct task_struct *prev = w->prev, *next = w->next;
	bool own_prev, own_next, waiting = false;
	struct dial9_rec_switch *rec;
	struct dial9_ring *r;

	if (!(s->events & DIAL9_EV_SWITCH)) {
		if (READ_ONCE(s->sampling) && dial9_match(s, next))
			dial9_sample_resume(s);
		return;
	}
	own_prev = dial9_match(s, prev);
	own_next = dial9_match(s, next);
	if (own_next && READ_ONCE(s->sampling))
		dial9_sample_resume(s);
	r = dial9_this_ring(s);
	if (s->occupants && r)
		waiting = dial9_occupants_switch(s, r, prev, next, own_prev,
						 own_next);
	if (!own_prev && !own_next && !waiting)
		return;
	if (!w->known)
		dial9_switch_know(w);
	if (!r)
		return;
	if (s->occupants && s->privileged) {
		if (!own_prev)
			dial9_name_occupant(s, r, prev, w->now);
		if (!own_next)
			dial9_name_occupant(s, r, next, w->now);
	}
	rec = dial9_ring_reserve(r, DIAL9_REC_SWITCH, sizeof(*rec), w->now);
	if (!rec)
		return;
	rec->hdr.flags = w->flags |
		(own_prev ? DIAL9_SWITCH_PREV_TARGET : 0) |
		(own_next ? DIAL9_SWITCH_NEXT_TARGET : 0) |
		(s->occupants ? DIAL9_SWITCH_OCCUPANTS : 0);
	if (likely(s->privileged || (own_prev && own_next))) {
		rec->prev_tid = prev->pid;
		rec->prev_tgid = prev->tgid;
		rec->next_tid = next->pid;
		rec->next_tgid = next->tgid;
		rec->prev_prio = prev->prio;
		rec->next_prio = next->prio;
		rec->prev_state = w->state;
		rec->reserved = 0;
		rec->next_wait_ns = w->wait_ns;
		rec->prev_run_delay_ns = w->prev_delay;
		rec->next_run_delay_ns = w->next_delay;
		rec->prev_pcount = w->prev_count;
		rec->next_pcount = w->next_count;
	} else {
		dial9_switch_redact(s, rec, w, own_prev, own_next);
	}
	dial9_commit(s, r);
	/* Only a recorded task's own stack: never a foreign one. */
	if (own_prev && s->stacks &&
	    dial9_stack_get(&w->stack)->nr &&
	    dial9_stack_put(r, w->stack, prev, w->now, 0))
		dial9_commit(s, r);
}

/*
 * A switch of two tasks in no table: of dial9_sessions, only the
 * DIAL9_CFG_OCCUPANTS sessions that may have a recorded task waiting on
 * this CPU concern it (they record it, and heal their counts when the
 * CPU goes idle).  How many were visited.
 */
static unsigned long dial9_switch_occupied(struct dial9_switch_ctx *w)
{
	struct dial9_session *s;
	unsigned long n = 0;
	unsigned int slot;

	if (atomic_read(&this_cpu_ptr(&dial9_occ_map)->overflow) > 0) {
		/* One past the slots may wait here: the whole walk. */
		list_for_each_entry_rcu(s, &dial9_sessions, node) {
			dial9_switch_one(s, w);
			n++;
		}
		return n;
	}
	for_each_set_bit(slot, this_cpu_ptr(&dial9_occ_map)->bits,
			 DIAL9_OCC_SLOTS) {
		s = rcu_dereference_check(dial9_occ_sessions[slot],
					  rcu_read_lock_any_held());
		if (s) {
			dial9_switch_one(s, w);
			n++;
		}
	}
	return n;
}

/*
 * The sessions a switch may concern: the system-wide ones, and those of
 * dial9_sessions if a side is in a table (@indexed), else only those
 * that may have a task waiting on this CPU (dial9_switch_occupied()).
 */
static noinline void dial9_switch_walk(bool preempt, struct task_struct *prev,
				       struct task_struct *next,
				       unsigned int prev_state, bool indexed)
{
	struct dial9_switch_ctx w;
	struct dial9_session *s;
	unsigned long n = 0;

	/* Only what is read before dial9_switch_know(): no memset. */
	w.prev = prev;
	w.next = next;
	w.prev_state = prev_state;
	w.preempt = preempt;
	w.known = false;
	w.stack = NULL;
	list_for_each_entry_rcu(s, &dial9_wide, node) {
		dial9_switch_one(s, &w);
		n++;
	}
	if (indexed) {
		list_for_each_entry_rcu(s, &dial9_sessions, node) {
			dial9_switch_one(s, &w);
			n++;
		}
	} else {
		n += dial9_switch_occupied(&w);
	}
	dial9_walked(n);
}

/*
 * Called with the runqueue lock held and interrupts off.  A switch that
 * concerns no session (the common case) returns here, after a bit test
 * per side and a look at this CPU's map.
 */
void dial9_probe_switch(void *data, bool preempt,
			       struct task_struct *prev,
			       struct task_struct *next,
			       unsigned int prev_state)
{
	bool indexed = dial9_indexed(prev) || dial9_indexed(next);

	if (!indexed && list_empty(&dial9_wide) && !dial9_occupied_here())
		return;
	dial9_switch_walk(preempt, prev, next, prev_state, indexed);
}

/*
 * The stack of @waker (current, in task context) as it wakes a recorded
 * task, right after the WAKING record.  Interrupts are off: the per-CPU
 * buffer is walked afresh, as an interrupt since the last walk may have
 * used it.
 */
static void dial9_waker_stack(struct dial9_session *s, struct dial9_ring *r,
			      struct task_struct *waker, u64 now)
{
	struct dial9_stack *stack = NULL;

	if (dial9_stack_get(&stack)->nr &&
	    dial9_stack_put(r, stack, waker, now, DIAL9_STACK_WAKER))
		dial9_commit(s, r);
}

/* What the records of one wake-up share. */
struct dial9_wake_ctx {
	struct task_struct *p;
	struct task_struct *waker;
	u16 type;		/* DIAL9_REC_WAKING, _WAKEUP, _WAKEUP_NEW */
	u32 event;		/* its DIAL9_EV_* */
	bool known;		/* flags and now are set */
	u16 flags;
	u64 now;
};

/*
 * The fields of a wake record with a side @s may not see (see
 * dial9_switch_redact()).
 */
static noinline void dial9_wake_redact(struct dial9_session *s,
				       struct dial9_rec_wake *rec,
				       struct task_struct *p,
				       struct task_struct *waker,
				       bool own_p, bool own_waker)
{
	dial9_ids(s, p, own_p, &rec->tid, &rec->tgid);
	dial9_ids(s, waker, own_waker, &rec->waker_tid, &rec->waker_tgid);
	rec->prio = (own_p || s->privileged) ? p->prio : 0;
	/* Where a foreign task runs is not for an unprivileged one. */
	rec->target_cpu = (own_p || s->privileged) ? task_cpu(p) :
			  DIAL9_CPU_REDACTED;
}

/* One session's part of a wake-up of w->p by w->waker. */
static __always_inline void dial9_wake_one(struct dial9_session *s,
					   struct dial9_wake_ctx *w)
{
	struct task_struct *p = w->p, *waker = w->waker;
	bool own_p, own_waker, name, count;
	struct dial9_rec_wake *rec;
	struct dial9_ring *r;
	unsigned long irqflags;

	/* A new task's name, asked for with or without its wake-up. */
	name = w->type == DIAL9_REC_WAKEUP_NEW && (s->events & DIAL9_EV_COMM);
	/* Queued on its CPU, for DIAL9_CFG_OCCUPANTS. */
	count = w->type != DIAL9_REC_WAKING && s->occupants;
	if (!(s->events & w->event) && !name && !count)
		return;
	own_p = dial9_match(s, p);
	if (count && own_p)
		dial9_occupants_woken(s, p);
	if (name && own_p)
		dial9_emit_comm(s, p, p->comm);
	if (!(s->events & w->event))
		return;
	own_waker = dial9_match(s, waker);
	if (!own_p && !own_waker)
		return;
	if (!w->known) {
		w->known = true;
		/* In an interrupt, current is only who was interrupted. */
		if (in_hardirq() || in_serving_softirq())
			w->flags = DIAL9_WAKE_FROM_IRQ;
		w->now = ktime_get_mono_fast_ns();
	}
	local_irq_save(irqflags);
	r = dial9_this_ring(s);
	rec = r ? dial9_ring_reserve(r, w->type, sizeof(*rec), w->now) : NULL;
	if (rec) {
		rec->hdr.flags = w->flags |
			(own_p ? DIAL9_WAKE_TASK_TARGET : 0) |
			(own_waker ? DIAL9_WAKE_WAKER_TARGET : 0);
		if (likely(s->privileged || (own_p && own_waker))) {
			rec->tid = p->pid;
			rec->tgid = p->tgid;
			rec->waker_tid = waker->pid;
			rec->waker_tgid = waker->tgid;
			rec->prio = p->prio;
			rec->target_cpu = task_cpu(p);
		} else {
			dial9_wake_redact(s, rec, p, waker, own_p, own_waker);
		}
		dial9_commit(s, r);
		if (w->type == DIAL9_REC_WAKING && s->stacks && own_p &&
		    own_waker && !w->flags)
			dial9_waker_stack(s, r, waker, w->now);
	}
	local_irq_restore(irqflags);
}

static noinline void dial9_wake_walk(struct task_struct *p, u16 type,
				     u32 event, bool indexed)
{
	struct dial9_wake_ctx w;
	struct dial9_session *s;
	unsigned long n = 0;

	/* Only what is read before it is set: no memset. */
	w.p = p;
	w.waker = current;
	w.type = type;
	w.event = event;
	w.known = false;
	w.flags = 0;

	list_for_each_entry_rcu(s, &dial9_wide, node) {
		dial9_wake_one(s, &w);
		n++;
	}
	if (indexed) {
		list_for_each_entry_rcu(s, &dial9_sessions, node) {
			dial9_wake_one(s, &w);
			n++;
		}
	}
	dial9_walked(n);
}

/* Every part needs the woken task or the waker recorded. */
static void dial9_wake(struct task_struct *p, u16 type, u32 event)
{
	bool indexed = dial9_indexed(p) || dial9_indexed(current);

	if (indexed || !list_empty(&dial9_wide))
		dial9_wake_walk(p, type, event, indexed);
}

void dial9_probe_waking(void *data, struct task_struct *p)
{
	dial9_wake(p, DIAL9_REC_WAKING, DIAL9_EV_WAKING);
}

void dial9_probe_wakeup(void *data, struct task_struct *p)
{
	dial9_wake(p, DIAL9_REC_WAKEUP, DIAL9_EV_WAKEUP);
}

void dial9_probe_wakeup_new(void *data, struct task_struct *p)
{
	dial9_wake(p, DIAL9_REC_WAKEUP_NEW, DIAL9_EV_WAKEUP_NEW);
}

static void dial9_migrate_one(struct dial9_session *s, struct task_struct *p,
			      int dest_cpu)
{
	struct dial9_rec_migrate *rec;
	struct dial9_ring *r;
	unsigned long flags;

	if (!(s->events & DIAL9_EV_MIGRATE) && !s->occupants)
		return;
	if (!dial9_match(s, p))
		return;
	/*
	 * DIAL9_CFG_OCCUPANTS: the balancer moves a queued task (a wake-up's
	 * move has it off the runqueue: counted where it lands, by
	 * dial9_occupants_woken()).
	 */
	if (s->occupants && dial9_task_queued(p) && task_cpu(p) != dest_cpu) {
		r = s->rings[task_cpu(p)];
		if (r)
			dial9_queued_dec(s, r);
		r = s->rings[dest_cpu];
		if (r)
			dial9_queued_inc(s, r);
	}
	if (!(s->events & DIAL9_EV_MIGRATE))
		return;
	local_irq_save(flags);
	r = dial9_this_ring(s);
	rec = r ? dial9_ring_reserve(r, DIAL9_REC_MIGRATE, sizeof(*rec),
				     ktime_get_mono_fast_ns()) : NULL;
	if (rec) {
		rec->tid = p->pid;
		rec->tgid = p->tgid;
		rec->orig_cpu = task_cpu(p);
		rec->dest_cpu = dest_cpu;
		dial9_commit(s, r);
	}
	local_irq_restore(flags);
}

void dial9_probe_migrate(void *data, struct task_struct *p,
				int dest_cpu)
{
	struct dial9_session *s;
	unsigned long n = 0;

	list_for_each_entry_rcu(s, &dial9_wide, node) {
		dial9_migrate_one(s, p, dest_cpu);
		n++;
	}
	if (dial9_indexed(p)) {
		list_for_each_entry_rcu(s, &dial9_sessions, node) {
			dial9_migrate_one(s, p, dest_cpu);
			n++;
		}
	}
	dial9_walked(n);
}

static void dial9_exit_one(struct dial9_session *s, struct task_struct *p,
			   bool group_dead)
{
	struct dial9_rec_exit *rec;
	struct dial9_ring *r;
	unsigned long flags;

	if (!(s->events & DIAL9_EV_EXIT) || !dial9_match(s, p))
		return;
	local_irq_save(flags);
	r = dial9_this_ring(s);
	rec = r ? dial9_ring_reserve(r, DIAL9_REC_EXIT, sizeof(*rec),
				     ktime_get_mono_fast_ns()) : NULL;
	if (rec) {
		rec->hdr.flags = group_dead ? DIAL9_EXIT_GROUP_DEAD : 0;
		rec->tid = p->pid;
		rec->tgid = p->tgid;
		dial9_commit(s, r);
	}
	local_irq_restore(flags);
}

void dial9_probe_exit(void *data, struct task_struct *p)
{
	bool group_dead = !atomic_read(&p->signal->live);
	struct dial9_session *s;
	unsigned long n = 0;

	list_for_each_entry_rcu(s, &dial9_wide, node) {
		dial9_exit_one(s, p, group_dead);
		n++;
	}
	if (dial9_indexed(p)) {
		list_for_each_entry_rcu(s, &dial9_sessions, node) {
			dial9_exit_one(s, p, group_dead);
			n++;
		}
	}
	dial9_walked(n);
}

/*
 * The leader's task_struct is freed only after it was reaped, which waits
 * for every other thread of the group; each task's own last switch comes
 * before its free.  So no record of the process can follow this.
 */
void dial9_probe_free(void *data, struct task_struct *p)
{
	struct dial9_session *s;
	unsigned long n = 0;

	if (p->pid != p->tgid || !dial9_indexed(p))
		return;
	list_for_each_entry_rcu(s, &dial9_sessions, node) {
		dial9_target_forget(s, p->tgid, p->start_time, false);
		n++;
	}
	dial9_walked(n);
}

/*
 * A process the session does not follow (any more): say so in this CPU's
 * ring.  @why: DIAL9_UNFOLLOWED_* (0: the target table was full).
 */
static void dial9_emit_unfollowed(struct dial9_session *s,
				  struct task_struct *parent,
				  struct task_struct *child, u16 why)
{
	struct dial9_rec_unfollowed *rec;
	struct dial9_ring *r;
	unsigned long flags;

	atomic64_inc(&s->targets_dropped);
	local_irq_save(flags);
	r = dial9_this_ring(s);
	rec = r ? dial9_ring_reserve(r, DIAL9_REC_UNFOLLOWED, sizeof(*rec),
				     ktime_get_mono_fast_ns()) : NULL;
	if (rec) {
		rec->hdr.flags = why;
		rec->tgid = child->tgid;
		rec->parent_tgid = parent->tgid;
		dial9_commit(s, r);
	}
	local_irq_restore(flags);
}

void dial9_probe_fork(void *data, struct task_struct *parent,
			     struct task_struct *child)
{
	struct dial9_session *s;
	unsigned long n = 0;
	int flags;

	/* A new process (not a thread) of a parent that a table may hold. */
	if (child->pid != child->tgid || !dial9_indexed(parent))
		return;
	list_for_each_entry_rcu(s, &dial9_sessions, node) {
		n++;
		flags = dial9_target_flags(s, parent);
		if (flags < 0 || !(flags & DIAL9_TARGET_CHILDREN))
			continue;
		if (dial9_target_add(s, child, DIAL9_TARGET_CHILDREN))
			dial9_emit_unfollowed(s, parent, child, 0);
	}
	dial9_walked(n);
}

/* @s stops following @p's process after an exec, and says so. */
static void dial9_unfollow(struct dial9_session *s, struct task_struct *p)
{
	dial9_target_forget(s, p->tgid, dial9_process_start(p), false);
	dial9_emit_unfollowed(s, rcu_dereference(p->real_parent), p,
			      DIAL9_UNFOLLOWED_EXEC);
}

/*
 * An exec that gains privileges (AT_SECURE: setuid, setgid, file
 * capabilities) ends what an unprivileged session may see of the process,
 * as perf stops following there.  The tracepoint fires after the new
 * credentials are committed and before the new program runs.
 */
void dial9_probe_exec(void *data, struct task_struct *p,
			     pid_t old_pid, struct linux_binprm *bprm)
{
	struct dial9_session *s;
	unsigned long n = 0;

	if (!bprm->secureexec || !dial9_indexed(p))
		return;
	list_for_each_entry_rcu(s, &dial9_sessions, node) {
		n++;
		if (s->privileged || dial9_target_flags(s, p) < 0)
			continue;
		dial9_unfollow(s, p);
	}
	dial9_walked(n);
}

void dial9_probe_rename(void *data, struct task_struct *task,
			       const char *comm)
{
	struct dial9_session *s;
	unsigned long n = 0;

	list_for_each_entry_rcu(s, &dial9_wide, node) {
		if ((s->events & DIAL9_EV_COMM) && dial9_match(s, task))
			dial9_emit_comm(s, task, comm);
		n++;
	}
	if (dial9_indexed(task)) {
		list_for_each_entry_rcu(s, &dial9_sessions, node) {
			if ((s->events & DIAL9_EV_COMM) &&
			    dial9_match(s, task))
				dial9_emit_comm(s, task, comm);
			n++;
		}
	}
	dial9_walked(n);
}

/*
 * Before ENABLE puts an unprivileged session where the probes find it:
 * stop following each process it may not follow any more (an exec that
 * gained privileges while it was disabled, dial9_may_follow()), so that
 * none of its records is written first.  A setuid program that dropped
 * back to the caller's ids passes dial9_match(), so without this it was
 * recorded until dial9_targets_sync() ran (seen: a switch of such a
 * shell, 1 CI run in ~8).  An exec that ends between this and the list
 * insertion is caught by the second check, dial9_targets_sync(); records
 * of it between the two are the only ones such a program can leave.
 */
void dial9_targets_unfollow(struct dial9_session *s)
{
	struct task_struct *p;

	if (s->privileged || s->system_wide)
		return;
	rcu_read_lock();
	for_each_process(p)
		if (dial9_target_flags(s, p) >= 0 && !dial9_may_follow(s, p))
			dial9_unfollow(s, p);
	rcu_read_unlock();
}

/*
 * At ENABLE and at ADD_TARGET while enabled, for process @tgid or, if
 * @tgid is 0, every process the session follows: an unprivileged session
 * stops following (and says so, as the exec probe does) each one it may
 * not follow any more (dial9_may_follow()), as dial9_targets_unfollow()
 * did before ENABLE; then COMM records of the threads of the rest.
 * Called once the session is enabled, so an exec after the check is the
 * exec probe's; meanwhile, dial9_match() leaves out a task with more
 * privileges than the opener.
 */
void dial9_targets_sync(struct dial9_session *s, pid_t tgid)
{
	struct task_struct *p, *t;
	char comm[TASK_COMM_LEN];

	if (s->privileged && !(s->events & DIAL9_EV_COMM))
		return;
	rcu_read_lock();
	for_each_process(p) {
		if ((tgid && p->tgid != tgid) ||
		    (!s->system_wide && dial9_target_flags(s, p) < 0))
			continue;
		if (!s->privileged && !dial9_may_follow(s, p)) {
			dial9_unfollow(s, p);
			continue;
		}
		if (!(s->events & DIAL9_EV_COMM))
			continue;
		for_each_thread(p, t) {
			if (dial9_ignored(s, t) ||
			    (!s->privileged && !dial9_creds_ok(s, t)))
				continue;
			get_task_comm(comm, t);
			dial9_emit_comm(s, t, comm);
		}
	}
	rcu_read_unlock();
}

