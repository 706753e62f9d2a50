// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 samples: a CPU profile of the recorded tasks.  While a session
 * with a sample_hz is enabled, a pinned hrtimer per online CPU fires that
 * many times a second; in its callback (hard interrupt, interrupts off,
 * so the ring is ours as in the probes) the interrupted task, if the
 * session records it, gets a SAMPLE record with its user stack
 * (stack.c).  A foreign task's stack is never taken.
 *
 * The timers follow CPU hotplug through a multi-instance hotplug state,
 * one instance per sampling session: a CPU's startup callback (run on
 * that CPU) starts its timer, its teardown (on that CPU, before it goes
 * down) cancels it.  Adding the instance starts the timers of the CPUs
 * online, removing it cancels them and waits for running callbacks, so
 * nothing fires once dial9_sample_stop() returns.
 *
 * A timer that fires more than a period late (interrupts off that long)
 * skips the periods it missed: each sample stands for one period, so
 * these are counted, per CPU in total (dial9_ring_stats.samples_missed),
 * and in the next SAMPLE record of the CPU (its missed field).
 *
 * An idle CPU, or one running only tasks the session does not record, is
 * not woken: a timer that finds such a task current parks (it does not
 * re-arm), and the switch probe resumes it when a recorded task is
 * switched in (dial9_sample_resume(), with the runqueue lock held and
 * interrupts off, as the scheduler's own hrtick timer is started).  The
 * timer keeps its grid: it resumes at the next multiple of the period
 * from its first start, not a full period after the switch, so a task
 * that runs in bursts shorter than the period is sampled as often as with
 * a timer that never stopped, and the only cost of parking is one firing
 * per stretch of time without a recorded task.  A session that samples
 * without switch events has the switch tracepoint attached all the same,
 * for this alone (probes.c: dial9_switch_one()), so its timers park too:
 * sessions that sample an idle task cost the machine nothing between
 * its runs, whatever their events.  A task that becomes recorded while
 * it runs (ADD_TARGET, or a thread no longer ignored) has no switch-in
 * to resume the timer: the ioctl resumes every parked one
 * (dial9_sample_kick()).
 */
#include <linux/hrtimer.h>
#include <linux/cpuhotplug.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/smp.h>
#include "dial9_core.h"

/* A sampler's state; changed only on its own CPU, interrupts off. */
enum {
	DIAL9_SAMPLER_OFF,	/* CPU offline, or the session not sampling */
	DIAL9_SAMPLER_RUNNING,	/* the timer is armed */
	DIAL9_SAMPLER_PARKED,	/* no recorded task ran at its last firing */
};

struct dial9_sampler {
	struct hrtimer timer;
	struct dial9_session *s;
	ktime_t period;
	unsigned int cpu;
	int state;		/* DIAL9_SAMPLER_* */
	u64 missed;		/* periods skipped, total */
	u64 unreported;		/* of them, since the last SAMPLE record */
};

static enum cpuhp_state dial9_cpuhp;	/* 0: not set up yet */

static enum hrtimer_restart dial9_sample_fn(struct hrtimer *t)
{
	struct dial9_sampler *sp = container_of(t, struct dial9_sampler, timer);
	struct dial9_session *s = sp->s;
	struct task_struct *p = current;
	struct dial9_stack *st;
	struct dial9_ring *r;
	bool in_kernel;
	u64 n;

	/* Only on its own CPU, whose teardown cancels it before it goes. */
	if (WARN_ON_ONCE(sp->cpu != smp_processor_id()) ||
	    sp->state != DIAL9_SAMPLER_RUNNING)
		return HRTIMER_NORESTART;
	n = hrtimer_forward_now(t, sp->period);
	if (n > 1) {
		WRITE_ONCE(sp->missed, sp->missed + n - 1);
		sp->unreported += n - 1;
	}
	if (!p->pid || !dial9_match(s, p)) {
		sp->state = DIAL9_SAMPLER_PARKED;	/* keeps its expiry */
		return HRTIMER_NORESTART;
	}
	r = s->rings[sp->cpu];
	st = dial9_stack_sample(&in_kernel);
	if (r && st->nr &&
	    dial9_stack_put_type(r, DIAL9_REC_SAMPLE, st, p,
				 ktime_get_mono_fast_ns(),
				 in_kernel ? DIAL9_SAMPLE_KERNEL : 0,
				 min_t(u64, sp->unreported, U32_MAX))) {
		sp->unreported = 0;
		dial9_commit(s, r);
	}
	return HRTIMER_RESTART;
}

static int dial9_sample_online(unsigned int cpu, struct hlist_node *node)
{
	struct dial9_session *s = hlist_entry(node, struct dial9_session,
					      cpuhp_node);
	struct dial9_sampler *sp = per_cpu_ptr(s->samplers, cpu);

	local_irq_disable();
	sp->state = DIAL9_SAMPLER_RUNNING;
	hrtimer_start(&sp->timer, sp->period, HRTIMER_MODE_REL_PINNED_HARD);
	local_irq_enable();
	return 0;
}

static int dial9_sample_offline(unsigned int cpu, struct hlist_node *node)
{
	struct dial9_session *s = hlist_entry(node, struct dial9_session,
					      cpuhp_node);
	struct dial9_sampler *sp = per_cpu_ptr(s->samplers, cpu);

	/* On this CPU: no probe resumes it after this. */
	local_irq_disable();
	sp->state = DIAL9_SAMPLER_OFF;
	local_irq_enable();
	hrtimer_cancel(&sp->timer);
	return 0;
}

/*
 * A recorded task is switched in (the switch probe, interrupts off): the
 * timer of this CPU resumes if it was parked, at the next period of its
 * grid.  Not enqueued and not running, as only this CPU arms it and its
 * callback runs here in hard interrupt context.
 */
void dial9_sample_resume(struct dial9_session *s)
{
	struct dial9_sampler __percpu *sps = READ_ONCE(s->samplers);
	struct dial9_sampler *sp;

	if (!sps)
		return;
	sp = this_cpu_ptr(sps);
	if (sp->state != DIAL9_SAMPLER_PARKED)
		return;
	sp->state = DIAL9_SAMPLER_RUNNING;
	hrtimer_forward_now(&sp->timer, sp->period);
	hrtimer_start_expires(&sp->timer, HRTIMER_MODE_ABS_PINNED_HARD);
}

static void dial9_sample_kick_fn(void *arg)
{
	dial9_sample_resume(arg);
}

/*
 * A process became recorded (ADD_TARGET): it may be running now, with no
 * switch-in to come for a while, on a CPU whose timer parked.  Resume
 * every parked timer; each parks again at its next firing if it has
 * nothing to sample.  Process context; caller holds s->lock.
 */
void dial9_sample_kick(struct dial9_session *s)
{
	if (s->sampling)
		on_each_cpu(dial9_sample_kick_fn, s, 1);
}

/*
 * The hotplug state, set up at the first sampling session's start (a
 * module whose sessions never sample registers nothing with the CPU
 * hotplug machinery) and removed at module exit.
 */
static DEFINE_MUTEX(dial9_cpuhp_lock);

static int dial9_cpuhp_get(void)
{
	int ret = 0;

	mutex_lock(&dial9_cpuhp_lock);
	if (!dial9_cpuhp) {
		ret = cpuhp_setup_state_multi(CPUHP_AP_ONLINE_DYN,
					      "dial9:sample",
					      dial9_sample_online,
					      dial9_sample_offline);
		if (ret > 0) {
			dial9_cpuhp = ret;
			ret = 0;
		}
	}
	mutex_unlock(&dial9_cpuhp_lock);
	return ret;
}

/* Module exit: no session is left. */
void dial9_sample_exit(void)
{
	if (dial9_cpuhp)
		cpuhp_remove_multi_state(dial9_cpuhp);
}

/*
 * Start the timers of @s, if it samples: its timers are set up at the
 * first start, at its sample_hz.  Caller holds s->lock, the session is
 * enabled.
 */
int dial9_sample_start(struct dial9_session *s)
{
	unsigned int cpu;
	int ret;

	if (!s->sample_hz || s->sampling)
		return 0;
	ret = dial9_cpuhp_get();
	if (ret)
		return ret;
	if (!s->samplers) {
		u64 bytes = (u64)num_possible_cpus() *
			    sizeof(struct dial9_sampler);

		/* Charged to the user and the cgroup, as the rings are. */
		ret = dial9_quota_charge(s, bytes);
		if (ret)
			return ret;
		s->samplers = alloc_percpu_gfp(struct dial9_sampler, DIAL9_GFP);
		if (!s->samplers) {
			dial9_quota_uncharge(s, bytes);
			return -ENOMEM;
		}
		for_each_possible_cpu(cpu) {
			struct dial9_sampler *sp = per_cpu_ptr(s->samplers, cpu);

			hrtimer_init(&sp->timer, CLOCK_MONOTONIC,
				     HRTIMER_MODE_REL_PINNED_HARD);
			sp->timer.function = dial9_sample_fn;
			sp->s = s;
			sp->cpu = cpu;
			sp->period = ns_to_ktime(NSEC_PER_SEC / s->sample_hz);
		}
	}
	/*
	 * Sampling before the timers start: adding the instance runs each
	 * CPU's startup callback from its hotplug thread, so the caller is
	 * switched out meanwhile, and a timer that fires then finds another
	 * task current and parks.  The caller's switch-in must find
	 * s->sampling set to resume it, or a task that then only spins is
	 * never sampled.
	 */
	WRITE_ONCE(s->sampling, true);
	ret = cpuhp_state_add_instance(dial9_cpuhp, &s->cpuhp_node);
	if (ret)
		WRITE_ONCE(s->sampling, false);
	return ret;
}

/* Stop them; no callback runs on return.  Caller holds s->lock. */
void dial9_sample_stop(struct dial9_session *s)
{
	if (!s->sampling)
		return;
	cpuhp_state_remove_instance(dial9_cpuhp, &s->cpuhp_node);
	WRITE_ONCE(s->sampling, false);
}

/* The periods the timer of @cpu skipped (GET_STATS). */
u64 dial9_sample_missed(struct dial9_session *s, unsigned int cpu)
{
	return s->samplers ? READ_ONCE(per_cpu_ptr(s->samplers, cpu)->missed) :
	       0;
}

void dial9_sample_free(struct dial9_session *s)
{
	free_percpu(s->samplers);
	s->samplers = NULL;
}
