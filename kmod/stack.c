// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 stacks: the user-space stack of the task being switched out, or
 * of a task waking a recorded one (in task context, so it is current),
 * or of the task a sampling timer interrupted (sample.c).
 *
 * In the sched_switch tracepoint prev is current (__schedule() takes it
 * from rq->curr and switches mm only after the tracepoint), so its user
 * memory is the mm loaded on this CPU and task_pt_regs(current) holds the
 * registers it entered the kernel with.  The walk follows the frame
 * pointer chain as perf_callchain_user() does, but with
 * copy_from_user_nmi(), which disables page faults and so is safe under
 * the runqueue lock: a page that is not present ends the walk.
 */
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/uaccess.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/string.h>
#include <asm/irq_regs.h>
#include "dial9_core.h"
#include "compat.h"

/* One frame of the x86-64 frame pointer chain, as pushed by a prologue. */
struct dial9_user_frame {
	u64 next_fp;
	u64 ret;
};

/*
 * Walk current's user stack from its user registers @regs into @st.
 * Returns the number of addresses, 0 when current has no user stack to
 * walk.  Interrupts must be off.
 */
static u32 dial9_stack_walk(struct dial9_stack *st, struct pt_regs *regs)
{
	struct task_struct *p = current;
	u64 fp, sp;
	u32 nr = 0;

	st->truncated = false;
	if (!p->mm || (p->flags & (PF_KTHREAD | PF_IO_WORKER)))
		return 0;
	if (!user_mode(regs) || !user_64bit_mode(regs))
		return 0;
	st->ips[nr++] = regs->ip;
	fp = regs->bp;
	sp = regs->sp;
	while (nr < DIAL9_STACK_MAX_DEPTH) {
		struct dial9_user_frame f;

		/* A frame lies above the stack pointer and above the last. */
		if (fp < sp || fp & 7)
			return nr;
		if (copy_from_user_nmi(&f, (const void __user *)fp, sizeof(f)))
			return nr;
		if (!f.ret)
			return nr;
		st->ips[nr++] = f.ret;
		sp = fp + sizeof(f);
		fp = f.next_fp;
	}
	st->truncated = fp >= sp && !(fp & 7);
	return nr;
}

static DEFINE_PER_CPU(struct dial9_stack, dial9_stacks);

/*
 * The stack of current (switching out), walked at most once per switch
 * whatever the number of sessions that want it: @st caches it.  Called
 * with interrupts off, so the per-CPU buffer is ours until they are on.
 */
struct dial9_stack *dial9_stack_get(struct dial9_stack **st)
{
	struct dial9_stack *s;

	if (*st)
		return *st;
	s = this_cpu_ptr(&dial9_stacks);
	s->nr = dial9_stack_walk(s, task_pt_regs(current));
	*st = s;
	return s;
}

/*
 * The stack of current as a timer interrupt found it (sample.c), in the
 * per-CPU buffer (interrupts are off): from the interrupted registers if
 * it ran user code, else from those it entered the kernel with
 * (*@in_kernel).
 */
struct dial9_stack *dial9_stack_sample(bool *in_kernel)
{
	struct dial9_stack *s = this_cpu_ptr(&dial9_stacks);
	struct pt_regs *regs = get_irq_regs();

	*in_kernel = !regs || !user_mode(regs);
	if (*in_kernel)
		regs = task_pt_regs(current);
	s->nr = dial9_stack_walk(s, regs);
	return s;
}

/*
 * Reserve and fill a record of @type (STACK or SAMPLE, whose missed is
 * @missed) of @p in @r; false if the ring is full (counted as lost).  The
 * caller commits.
 */
bool dial9_stack_put_type(struct dial9_ring *r, u16 type,
			  const struct dial9_stack *st, struct task_struct *p,
			  u64 now, u16 flags, u32 missed)
{
	struct dial9_rec_stack *rec;
	size_t bytes = st->nr * sizeof(rec->ips[0]);

	rec = dial9_ring_reserve(r, type, sizeof(*rec) + bytes, now);
	if (!rec)
		return false;
	rec->hdr.flags = flags | (st->truncated ? DIAL9_STACK_TRUNCATED : 0);
	rec->tid = p->pid;
	rec->tgid = p->tgid;
	rec->nr = st->nr;
	rec->reserved = missed;
	memcpy(rec->ips, st->ips, bytes);
	return true;
}

/*
 * A STACK record of @p in @r, right after its switch or its waking
 * (@flags: DIAL9_STACK_WAKER); false if the ring is full.
 */
bool dial9_stack_put(struct dial9_ring *r, const struct dial9_stack *st,
		     struct task_struct *p, u64 now, u16 flags)
{
	return dial9_stack_put_type(r, DIAL9_REC_STACK, st, p, now, flags, 0);
}
