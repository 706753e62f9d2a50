/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel-version difference dial9 cares about, in one place.
 */
#ifndef DIAL9_COMPAT_H
#define DIAL9_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>
#include <linux/sched.h>

#if KERNEL_VERSION(6, 3, 0) > LINUX_VERSION_CODE
static inline void dial9_vm_flags_clear(struct vm_area_struct *vma,
					vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}

static inline void dial9_vm_flags_set(struct vm_area_struct *vma,
				      vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#else
static inline void dial9_vm_flags_clear(struct vm_area_struct *vma,
					vm_flags_t flags)
{
	vm_flags_clear(vma, flags);
}

static inline void dial9_vm_flags_set(struct vm_area_struct *vma,
				      vm_flags_t flags)
{
	vm_flags_set(vma, flags);
}
#endif

/*
 * When @p was last queued to wait for a CPU, in local_clock() time, or 0.
 *
 * Why the kernel's own bookkeeping and not ours: under CONFIG_SCHED_INFO the
 * scheduler stamps sched_info.last_queued (rq clock, which reads the same
 * sched_clock as local_clock()) when a task is enqueued, and again when it
 * is switched out while still runnable; sched_info_arrive() turns the stamp
 * into run_delay right after the sched_switch tracepoint.  Reading that
 * stamp gives, with no per-task state of our own (which would need a table
 * sized for every task, filled from scheduler context), a wait that adds up
 * to the run_delay of /proc/<pid>/task/<tid>/schedstat.  Two known gaps:
 * each delay can be longer by the time __schedule() took between updating
 * the rq clock and this tracepoint, and a task that the load balancer moves
 * while queued restarts its stamp on the new CPU (the kernel adds the part
 * before the move to run_delay at the dequeue), so this is only the wait
 * on the final CPU; the cumulative totals below give the rest.
 */
#ifdef CONFIG_SCHED_INFO
static inline u64 dial9_queued_since(const struct task_struct *p)
{
	return READ_ONCE(p->sched_info.last_queued);
}

/*
 * The scheduler's cumulative runqueue wait and run count of @p (the second
 * and third fields of /proc/<pid>/task/<tid>/schedstat), or false.
 *
 * These are what make a reader's totals exact: sched_info_arrive() adds
 * each wait to run_delay and counts it in pcount right after the
 * sched_switch tracepoint, and sched_info_dequeue() adds the part of a
 * wait before a migration, so differences of two records' values of one
 * task cover every wait between them, whatever records were lost.
 */
static inline bool dial9_runq_totals(const struct task_struct *p,
				     u64 *delay, u32 *count)
{
	*delay = READ_ONCE(p->sched_info.run_delay);
	*count = (u32)READ_ONCE(p->sched_info.pcount);
	return true;
}
#else
static inline u64 dial9_queued_since(const struct task_struct *p)
{
	return 0;
}

static inline bool dial9_runq_totals(const struct task_struct *p,
				     u64 *delay, u32 *count)
{
	*delay = 0;
	*count = 0;
	return false;
}
#endif

/*
 * Whether @p waits queued for a CPU (or runs): on the runqueue and, from
 * 6.12, not merely kept there by EEVDF's delayed dequeue after it went to
 * sleep (task_is_runnable()).  Read under its runqueue's lock.
 */
#if KERNEL_VERSION(6, 12, 0) > LINUX_VERSION_CODE
static inline bool dial9_task_queued(struct task_struct *p)
{
	return READ_ONCE(p->on_rq);
}
#else
static inline bool dial9_task_queued(struct task_struct *p)
{
	return task_is_runnable(p);
}
#endif

/* Whether @p is still on a CPU (running, or not yet done switching out). */
static inline bool dial9_task_on_cpu(const struct task_struct *p)
{
#ifdef CONFIG_SMP
	return READ_ONCE(p->on_cpu);
#else
	return p == current;
#endif
}

#endif /* DIAL9_COMPAT_H */
