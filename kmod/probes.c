// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 probes: scheduler tracepoints turned into ring records.
 *
 * The probes run in scheduler context (sched_switch with the runqueue lock
 * held and interrupts off; wake-ups under p->pi_lock, or with only
 * preemption off when a task wakes itself).  So they never sleep, never
 * allocate and never wake anyone directly: a reader is woken through
 * irq_work.  A task outside every session's filter costs a walk of the
 * (usually one-entry) target table and no clock read.
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
#include "dial9_core.h"
#include "compat.h"

static DEFINE_MUTEX(dial9_reg_lock);	/* sessions list and registration */
static LIST_HEAD(dial9_sessions);	/* enabled sessions, RCU */
static unsigned int dial9_nr_enabled;

static __always_inline bool dial9_match(const struct dial9_session *s,
					const struct task_struct *p)
{
	pid_t tgid = p->tgid;
	int i, n;

	if (s->system_wide)
		return true;
	if (!tgid)		/* the idle task */
		return false;
	n = READ_ONCE(s->targets_used);
	for (i = 0; i < n; i++)
		if (DIAL9_TGT_TGID(READ_ONCE(s->targets[i])) == tgid)
			return true;
	return false;
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

static void dial9_emit(struct dial9_session *s, struct dial9_rec_header *rec)
{
	struct dial9_ring *r;
	unsigned long flags;

	local_irq_save(flags);
	r = s->rings[smp_processor_id()];
	if (r && dial9_ring_write(r, rec)) {
		/* Order the head store before reading waiting; pairs with poll. */
		smp_mb();
		if (atomic_read(&s->waiting) && dial9_ring_readable(r) &&
		    atomic_xchg(&s->waiting, 0))
			irq_work_queue(&s->wakeup);
	}
	local_irq_restore(flags);
}

static void dial9_emit_comm(struct dial9_session *s, struct task_struct *p,
			    const char *comm)
{
	struct dial9_rec_comm rec = {
		.hdr.type = DIAL9_REC_COMM,
		.hdr.size = sizeof(rec),
		.hdr.time_ns = ktime_get_mono_fast_ns(),
		.tid = p->pid,
		.tgid = p->tgid,
	};

	strscpy_pad(rec.comm, comm, sizeof(rec.comm));
	dial9_emit(s, &rec.hdr);
}

static void dial9_probe_switch(void *data, bool preempt,
			       struct task_struct *prev,
			       struct task_struct *next,
			       unsigned int prev_state)
{
	struct dial9_rec_switch rec;
	struct dial9_session *s;
	u64 wait_ns = 0;
	u16 flags = 0;
	bool filled = false;

	list_for_each_entry_rcu(s, &dial9_sessions, node) {
		bool own_prev, own_next, see_prev, see_next;

		if (!(s->events & DIAL9_EV_SWITCH))
			continue;
		own_prev = dial9_match(s, prev);
		own_next = dial9_match(s, next);
		if (!own_prev && !own_next)
			continue;
		if (!filled) {
			u64 queued = dial9_queued_since(next);

			if (preempt)
				flags |= DIAL9_SWITCH_PREEMPT;
			if (preempt || prev_state == TASK_RUNNING)
				flags |= DIAL9_SWITCH_PREV_RUNNABLE;
			if (queued) {
				u64 now = local_clock();

				wait_ns = now > queued ? now - queued : 0;
				flags |= DIAL9_SWITCH_WAIT_VALID;
			}
			memset(&rec, 0, sizeof(rec));
			rec.hdr.type = DIAL9_REC_SWITCH;
			rec.hdr.size = sizeof(rec);
			rec.hdr.time_ns = ktime_get_mono_fast_ns();
			filled = true;
		}
		/* A foreign side shows nothing: no ids, state, prio or wait. */
		see_prev = own_prev || s->privileged;
		see_next = own_next || s->privileged;
		rec.hdr.flags = flags;
		if (own_prev)
			rec.hdr.flags |= DIAL9_SWITCH_PREV_TARGET;
		if (own_next)
			rec.hdr.flags |= DIAL9_SWITCH_NEXT_TARGET;
		if (!see_prev)
			rec.hdr.flags &= ~(DIAL9_SWITCH_PREEMPT |
					   DIAL9_SWITCH_PREV_RUNNABLE);
		if (!see_next)
			rec.hdr.flags &= ~DIAL9_SWITCH_WAIT_VALID;
		dial9_ids(s, prev, own_prev, &rec.prev_tid, &rec.prev_tgid);
		dial9_ids(s, next, own_next, &rec.next_tid, &rec.next_tgid);
		rec.prev_prio = see_prev ? prev->prio : 0;
		rec.prev_state = see_prev && !preempt ?
			__task_state_index(prev_state, prev->exit_state) : 0;
		rec.next_prio = see_next ? next->prio : 0;
		rec.next_wait_ns = see_next ? wait_ns : 0;
		dial9_emit(s, &rec.hdr);
	}
}

static void dial9_wake(struct task_struct *p, u16 type, u32 event)
{
	struct task_struct *waker = current;
	struct dial9_rec_wake rec;
	struct dial9_session *s;
	bool filled = false;

	list_for_each_entry_rcu(s, &dial9_sessions, node) {
		bool own_p, own_waker;

		if (!(s->events & event))
			continue;
		own_p = dial9_match(s, p);
		own_waker = dial9_match(s, waker);
		if (!own_p && !own_waker)
			continue;
		if (!filled) {
			memset(&rec, 0, sizeof(rec));
			rec.hdr.type = type;
			rec.hdr.size = sizeof(rec);
			rec.hdr.time_ns = ktime_get_mono_fast_ns();
			rec.target_cpu = task_cpu(p);
			filled = true;
		}
		/* In an interrupt, current is only who was interrupted. */
		rec.hdr.flags = in_hardirq() || in_serving_softirq() ?
				DIAL9_WAKE_FROM_IRQ : 0;
		if (own_p)
			rec.hdr.flags |= DIAL9_WAKE_TASK_TARGET;
		if (own_waker)
			rec.hdr.flags |= DIAL9_WAKE_WAKER_TARGET;
		dial9_ids(s, p, own_p, &rec.tid, &rec.tgid);
		dial9_ids(s, waker, own_waker, &rec.waker_tid, &rec.waker_tgid);
		rec.prio = (own_p || s->privileged) ? p->prio : 0;
		dial9_emit(s, &rec.hdr);
		if (type == DIAL9_REC_WAKEUP_NEW && own_p &&
		    (s->events & DIAL9_EV_COMM))
			dial9_emit_comm(s, p, p->comm);
	}
}

static void dial9_probe_waking(void *data, struct task_struct *p)
{
	dial9_wake(p, DIAL9_REC_WAKING, DIAL9_EV_WAKING);
}

static void dial9_probe_wakeup(void *data, struct task_struct *p)
{
	dial9_wake(p, DIAL9_REC_WAKEUP, DIAL9_EV_WAKEUP);
}

static void dial9_probe_wakeup_new(void *data, struct task_struct *p)
{
	dial9_wake(p, DIAL9_REC_WAKEUP_NEW, DIAL9_EV_WAKEUP_NEW);
}

static void dial9_probe_migrate(void *data, struct task_struct *p,
				int dest_cpu)
{
	struct dial9_rec_migrate rec;
	struct dial9_session *s;

	list_for_each_entry_rcu(s, &dial9_sessions, node) {
		if (!(s->events & DIAL9_EV_MIGRATE) || !dial9_match(s, p))
			continue;
		rec.hdr.type = DIAL9_REC_MIGRATE;
		rec.hdr.size = sizeof(rec);
		rec.hdr.flags = 0;
		rec.hdr.time_ns = ktime_get_mono_fast_ns();
		rec.tid = p->pid;
		rec.tgid = p->tgid;
		rec.orig_cpu = task_cpu(p);
		rec.dest_cpu = dest_cpu;
		dial9_emit(s, &rec.hdr);
	}
}

/* Forget a whole process once its last thread exits (its tgid is reused). */
static void dial9_target_forget(struct dial9_session *s, pid_t tgid)
{
	int i, n = READ_ONCE(s->targets_used);

	for (i = 0; i < n; i++) {
		u64 e = READ_ONCE(s->targets[i]);

		if (e && DIAL9_TGT_TGID(e) == tgid)
			cmpxchg64(&s->targets[i], e, 0);
	}
}

static void dial9_probe_exit(void *data, struct task_struct *p)
{
	bool group_dead = !atomic_read(&p->signal->live);
	struct dial9_rec_exit rec;
	struct dial9_session *s;

	list_for_each_entry_rcu(s, &dial9_sessions, node) {
		if (!dial9_match(s, p))
			continue;
		if (s->events & DIAL9_EV_EXIT) {
			rec.hdr.type = DIAL9_REC_EXIT;
			rec.hdr.size = sizeof(rec);
			rec.hdr.flags = group_dead ? DIAL9_EXIT_GROUP_DEAD : 0;
			rec.hdr.time_ns = ktime_get_mono_fast_ns();
			rec.tid = p->pid;
			rec.tgid = p->tgid;
			dial9_emit(s, &rec.hdr);
		}
		if (group_dead && !s->system_wide)
			dial9_target_forget(s, p->tgid);
	}
}

static void dial9_probe_fork(void *data, struct task_struct *parent,
			     struct task_struct *child)
{
	struct dial9_session *s;
	int i, n;

	if (child->pid != child->tgid)	/* a new thread, not a process */
		return;
	list_for_each_entry_rcu(s, &dial9_sessions, node) {
		if (s->system_wide)
			continue;
		n = READ_ONCE(s->targets_used);
		for (i = 0; i < n; i++) {
			u64 e = READ_ONCE(s->targets[i]);

			if (DIAL9_TGT_TGID(e) == parent->tgid &&
			    (DIAL9_TGT_FLAGS(e) & DIAL9_TARGET_CHILDREN)) {
				dial9_target_add(s, child->tgid,
						 DIAL9_TARGET_CHILDREN);
				break;
			}
		}
	}
}

static void dial9_probe_rename(void *data, struct task_struct *task,
			       const char *comm)
{
	struct dial9_session *s;

	list_for_each_entry_rcu(s, &dial9_sessions, node)
		if ((s->events & DIAL9_EV_COMM) && dial9_match(s, task))
			dial9_emit_comm(s, task, comm);
}

bool dial9_target_add(struct dial9_session *s, pid_t tgid, u32 flags)
{
	u64 e = ((u64)flags << 32) | (u32)tgid;
	int i, used;

	for (i = 0; i < DIAL9_MAX_TARGETS; i++) {
		if (cmpxchg64(&s->targets[i], 0, e) != 0)
			continue;
		used = READ_ONCE(s->targets_used);
		while (used < i + 1) {
			int old = cmpxchg(&s->targets_used, used, i + 1);

			if (old == used)
				break;
			used = old;
		}
		return true;
	}
	atomic64_inc(&s->targets_dropped);
	return false;
}

/* COMM records for the threads of @tgid, or of every task if @tgid is 0. */
static void dial9_emit_comms_of(struct dial9_session *s, pid_t tgid)
{
	struct task_struct *p, *t;
	char comm[TASK_COMM_LEN];

	rcu_read_lock();
	if (!tgid) {
		for_each_process_thread(p, t) {
			get_task_comm(comm, t);
			dial9_emit_comm(s, t, comm);
		}
	} else {
		p = pid_task(find_pid_ns(tgid, &init_pid_ns), PIDTYPE_TGID);
		if (p) {
			for_each_thread(p, t) {
				get_task_comm(comm, t);
				dial9_emit_comm(s, t, comm);
			}
		}
	}
	rcu_read_unlock();
}

/* Names of the tasks a session records, at enable time. */
void dial9_emit_comms(struct dial9_session *s)
{
	int i, n = READ_ONCE(s->targets_used);

	if (!(s->events & DIAL9_EV_COMM))
		return;
	if (s->system_wide) {
		dial9_emit_comms_of(s, 0);
		return;
	}
	for (i = 0; i < n; i++) {
		pid_t tgid = DIAL9_TGT_TGID(READ_ONCE(s->targets[i]));

		if (tgid)
			dial9_emit_comms_of(s, tgid);
	}
}

struct dial9_tp {
	const char *name;
	void *probe;
	struct tracepoint *tp;
};

static struct dial9_tp dial9_tps[] = {
	{ "sched_switch", dial9_probe_switch },
	{ "sched_waking", dial9_probe_waking },
	{ "sched_wakeup", dial9_probe_wakeup },
	{ "sched_wakeup_new", dial9_probe_wakeup_new },
	{ "sched_migrate_task", dial9_probe_migrate },
	{ "sched_process_exit", dial9_probe_exit },
	{ "sched_process_fork", dial9_probe_fork },
	{ "task_rename", dial9_probe_rename },
};

static void dial9_tp_lookup(struct tracepoint *tp, void *priv)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(dial9_tps); i++)
		if (!strcmp(tp->name, dial9_tps[i].name))
			dial9_tps[i].tp = tp;
}

int dial9_probes_init(void)
{
	int i;

	for_each_kernel_tracepoint(dial9_tp_lookup, NULL);
	for (i = 0; i < ARRAY_SIZE(dial9_tps); i++) {
		if (!dial9_tps[i].tp) {
			pr_err("dial9: tracepoint %s not found\n",
			       dial9_tps[i].name);
			return -ENOENT;
		}
	}
	return 0;
}

static void dial9_probes_unregister(int n)
{
	while (n-- > 0)
		tracepoint_probe_unregister(dial9_tps[n].tp,
					    dial9_tps[n].probe, NULL);
	/* No probe runs, or can still see a session, after this. */
	tracepoint_synchronize_unregister();
}

static int dial9_probes_register(void)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(dial9_tps); i++) {
		ret = tracepoint_probe_register(dial9_tps[i].tp,
						dial9_tps[i].probe, NULL);
		if (ret) {
			pr_err("dial9: cannot attach to %s: %d\n",
			       dial9_tps[i].name, ret);
			dial9_probes_unregister(i);
			return ret;
		}
	}
	return 0;
}

/* Start recording: the rings exist.  Caller holds s->lock. */
int dial9_session_enable(struct dial9_session *s)
{
	int ret = 0;

	if (s->enabled)
		return 0;
	mutex_lock(&dial9_reg_lock);
	if (!dial9_nr_enabled) {
		ret = dial9_probes_register();
		if (ret)
			goto out_unlock;
	}
	dial9_nr_enabled++;
	list_add_rcu(&s->node, &dial9_sessions);
	s->enabled = true;
out_unlock:
	mutex_unlock(&dial9_reg_lock);
	if (!ret)
		dial9_emit_comms(s);
	return ret;
}

/*
 * Stop recording.  On return no probe touches the session any more and no
 * wake-up is pending, so its memory may be freed.  Caller holds s->lock.
 */
void dial9_session_disable(struct dial9_session *s)
{
	if (!s->enabled)
		return;
	mutex_lock(&dial9_reg_lock);
	list_del_rcu(&s->node);
	s->enabled = false;
	if (!--dial9_nr_enabled)
		dial9_probes_unregister(ARRAY_SIZE(dial9_tps));
	else
		synchronize_rcu();
	mutex_unlock(&dial9_reg_lock);
	irq_work_sync(&s->wakeup);
}
