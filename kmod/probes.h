/* SPDX-License-Identifier: GPL-2.0 */
/*
 * probes.h - between the probes (probes.c) and their attachment
 * (attach.c): the lists of enabled sessions and the probe functions.
 */
#ifndef DIAL9_PROBES_H
#define DIAL9_PROBES_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include "dial9_core.h"

/* The lists and registration (attach.c). */
extern struct mutex dial9_reg_lock;
/* Enabled sessions, RCU: the system-wide ones, and the others. */
extern struct list_head dial9_wide;
extern struct list_head dial9_sessions;

/* The probes (probes.c). */
void dial9_probe_switch(void *data, bool preempt, struct task_struct *prev,
			struct task_struct *next, unsigned int prev_state);
void dial9_probe_waking(void *data, struct task_struct *p);
void dial9_probe_wakeup(void *data, struct task_struct *p);
void dial9_probe_wakeup_new(void *data, struct task_struct *p);
void dial9_probe_migrate(void *data, struct task_struct *p, int dest_cpu);
void dial9_probe_exit(void *data, struct task_struct *p);
void dial9_probe_free(void *data, struct task_struct *p);
void dial9_probe_fork(void *data, struct task_struct *parent,
		      struct task_struct *child);
struct linux_binprm;
void dial9_probe_exec(void *data, struct task_struct *p, pid_t old_pid,
		      struct linux_binprm *bprm);
void dial9_probe_rename(void *data, struct task_struct *task,
			const char *comm);
/*
 * At enable, before the probes see @s: forget what it follows that it may
 * not follow any more (probes.c).
 */
void dial9_targets_unfollow(struct dial9_session *s);

#endif /* DIAL9_PROBES_H */
