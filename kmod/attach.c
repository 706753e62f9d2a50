// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 attach: the scheduler tracepoints, attached while an enabled
 * session wants them, and the lists of enabled sessions the probes
 * (probes.c) walk.
 */
#include <linux/module.h>
#include <linux/tracepoint.h>
#include <linux/rculist.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include "dial9_core.h"
#include "occupants.h"
#include "probes.h"

DEFINE_MUTEX(dial9_reg_lock);	/* the lists and registration */
/* Enabled sessions, RCU: the system-wide ones, and the others. */
LIST_HEAD(dial9_wide);
LIST_HEAD(dial9_sessions);
static unsigned int dial9_nr_enabled;

/*
 * The tracepoints stay attached for this long after the last session
 * stops: attaching and detaching patch the kernel's text (static keys),
 * so sessions that come and go, however fast, make at most one attach
 * and one detach a second.  Meanwhile the probes find no session.
 */
#define DIAL9_DETACH_DELAY	HZ
static unsigned int attaches;	/* tracepoints attached, since load */
module_param(attaches, uint, 0444);
MODULE_PARM_DESC(attaches, "times the tracepoints were attached (read-only)");
static void dial9_detach_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(dial9_detach_work, dial9_detach_fn);

/*
 * A tracepoint is attached only while an enabled session wants one of its
 * events (every call costs ~100 instructions even when nothing matches);
 * fork and free always, as they keep the target tables right, and exit.
 */
struct dial9_tp {
	const char *name;
	void *probe;
	u32 events;		/* DIAL9_EV_* that need it; 0: always */
	struct tracepoint *tp;
	bool registered;
};

static struct dial9_tp dial9_tps[] = {
	{ "sched_switch", dial9_probe_switch, DIAL9_EV_SWITCH },
	{ "sched_waking", dial9_probe_waking, DIAL9_EV_WAKING },
	{ "sched_wakeup", dial9_probe_wakeup, DIAL9_EV_WAKEUP },
	{ "sched_wakeup_new", dial9_probe_wakeup_new,
	  DIAL9_EV_WAKEUP_NEW | DIAL9_EV_COMM },
	{ "sched_migrate_task", dial9_probe_migrate, DIAL9_EV_MIGRATE },
	{ "sched_process_exit", dial9_probe_exit, 0 },
	{ "sched_process_fork", dial9_probe_fork, 0 },
	{ "sched_process_free", dial9_probe_free, 0 },
	{ "sched_process_exec", dial9_probe_exec, 0 },
	{ "task_rename", dial9_probe_rename, DIAL9_EV_COMM },
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

static void dial9_probes_unregister(void)
{
	bool any = false;
	int i;

	for (i = ARRAY_SIZE(dial9_tps) - 1; i >= 0; i--) {
		if (!dial9_tps[i].registered)
			continue;
		tracepoint_probe_unregister(dial9_tps[i].tp,
					    dial9_tps[i].probe, NULL);
		dial9_tps[i].registered = false;
		any = true;
	}
	/* No probe runs, or can still see a session, after this. */
	if (any)
		tracepoint_synchronize_unregister();
}

/* Attach the tracepoints @events need that are not attached yet. */
static int dial9_probes_register(u32 events)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(dial9_tps); i++) {
		struct dial9_tp *t = &dial9_tps[i];

		if (t->registered || (t->events && !(t->events & events)))
			continue;
		ret = tracepoint_probe_register(t->tp, t->probe, NULL);
		if (ret) {
			pr_err("dial9: cannot attach to %s: %d\n", t->name,
			       ret);
			return ret;
		}
		t->registered = true;
		attaches++;
	}
	return 0;
}

/*
 * The tracepoints @s needs: its events'; with DIAL9_CFG_OCCUPANTS, the
 * wake-ups and migrations that keep its counts of queued tasks; with
 * sample_hz, the switches that resume its parked timers.
 */
static u32 dial9_session_tps(const struct dial9_session *s)
{
	return s->events | (s->occupants ? DIAL9_EV_WAKEUP |
			    DIAL9_EV_WAKEUP_NEW | DIAL9_EV_MIGRATE : 0) |
	       (s->sample_hz ? DIAL9_EV_SWITCH : 0);
}


/* Start recording: the rings exist.  Caller holds s->lock. */
int dial9_session_enable(struct dial9_session *s)
{
	int ret = 0;

	if (s->enabled)
		return 0;
	dial9_occupants_reset(s);
	dial9_targets_unfollow(s);
	mutex_lock(&dial9_reg_lock);
	ret = dial9_probes_register(dial9_session_tps(s));
	if (ret) {
		if (!dial9_nr_enabled)
			dial9_probes_unregister();
		goto out_unlock;
	}
	dial9_nr_enabled++;
	dial9_occupants_slot(s);
	list_add_rcu(&s->node, s->system_wide ? &dial9_wide : &dial9_sessions);
	s->enabled = true;
out_unlock:
	mutex_unlock(&dial9_reg_lock);
	if (!ret)
		dial9_targets_sync(s, 0);
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
	if (s->occ_slot >= 0)
		RCU_INIT_POINTER(dial9_occ_sessions[s->occ_slot], NULL);
	s->enabled = false;
	if (!--dial9_nr_enabled)
		mod_delayed_work(system_wq, &dial9_detach_work,
				 DIAL9_DETACH_DELAY);
	/* A probe that found the session is done with it after this. */
	synchronize_rcu();
	dial9_occupants_drop(s);
	mutex_unlock(&dial9_reg_lock);
	irq_work_sync(&s->wakeup);
}

static void dial9_detach_fn(struct work_struct *work)
{
	mutex_lock(&dial9_reg_lock);
	if (!dial9_nr_enabled)
		dial9_probes_unregister();
	mutex_unlock(&dial9_reg_lock);
}

/* Module exit: no session is left (each holds the module). */
void dial9_probes_exit(void)
{
	cancel_delayed_work_sync(&dial9_detach_work);
	dial9_probes_unregister();
}
