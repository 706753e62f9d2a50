// SPDX-License-Identifier: MIT
/*
 * kreader_rt.c - when the reader thread (ksched_ring.c) runs SCHED_FIFO.
 *
 * A real-time reader preempts the workload it records every time a ring
 * passes its watermark, and beside a CPU hog that is most of what the
 * workload waits for.  So it runs at the process's own policy, and takes
 * SCHED_FIFO (the configured priority) only while it falls behind: when
 * a ring it reads is past its watermark (a quarter full: the records
 * come faster than the flush thread's kicks, at most ten a second, take
 * them), or it had to leave records in one for want of room.  Under overload a reader at the workload's
 * priority gets the CPU too rarely to empty the rings before they fill
 * (64 ping-pong pairs on 2 CPUs: 15% of the records lost at nice 0), so
 * this is when it is needed.  It drops back after RT_CALM_NS without
 * falling behind, and it is bounded: at most RT_BUDGET_NS of CPU per
 * RT_WINDOW_NS window at SCHED_FIFO, past which it runs at normal
 * priority until the window ends (records it cannot take then are lost,
 * and counted).  What it cost is in the stats (dial9_stats
 * sched_reader_*) and said at the end.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include "ksched/ksched.h"

#define RT_WINDOW_NS	(100 * D9_NS_PER_MS)
#define RT_BUDGET_NS	(10 * D9_NS_PER_MS)	/* 10% of a CPU */
#define RT_CALM_NS	(100 * D9_NS_PER_MS)

bool d9_may_rt(uint32_t prio, struct rlimit *rl)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (getrlimit(RLIMIT_RTPRIO, rl))
		rl->rlim_cur = 0;
	if (rl->rlim_cur == RLIM_INFINITY || rl->rlim_cur >= prio)
		return true;
	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32));
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * D9_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void to_normal(struct d9_reader_rt *rt, uint64_t now)
{
	struct sched_param sp = { .sched_priority = 0 };

	pthread_setschedparam(pthread_self(), rt->policy, &sp);
	rt->at_rt = false;
	__atomic_store_n(&rt->rt_ns, rt->rt_ns + (now - rt->rt_since),
			 __ATOMIC_RELAXED);
}

void d9_reader_rt_init(struct d9_reader_rt *rt, uint32_t prio)
{
	struct sched_param sp;
	int policy;

	memset(rt, 0, sizeof(*rt));
	rt->prio = prio;
	rt->policy = SCHED_OTHER;
	/* back to what the thread was made with (SCHED_BATCH, say) */
	if (!pthread_getschedparam(pthread_self(), &policy, &sp) &&
	    policy != SCHED_FIFO && policy != SCHED_RR)
		rt->policy = policy;
}

/*
 * At normal priority, nothing but a clock read (vDSO) unless behind;
 * at SCHED_FIFO, the thread's CPU time too, for the budget.
 */
void d9_reader_rt_after_read(struct d9_reader_rt *rt, bool behind)
{
	struct sched_param sp = { .sched_priority = (int)rt->prio };
	uint64_t now = d9_clock_gettime_ns(), cpu;

	if (!rt->at_rt) {
		if (!behind || !rt->prio || rt->refused ||
		    (rt->capped && now - rt->window_start < RT_WINDOW_NS))
			return;
		rt->err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
		if (rt->err) {
			rt->refused = true; /* no CAP_SYS_NICE or RLIMIT_RTPRIO now */
			return;
		}
		rt->at_rt = true;
		rt->capped = false;
		rt->rt_since = rt->behind_at = rt->window_start = now;
		rt->window_cpu = thread_cpu_ns();
		__atomic_store_n(&rt->entries, rt->entries + 1, __ATOMIC_RELAXED);
		return;
	}
	if (behind)
		rt->behind_at = now;
	cpu = thread_cpu_ns();
	if (cpu - rt->window_cpu > RT_BUDGET_NS) {
		/* its share of this window is used: normal until it ends */
		to_normal(rt, now);
		rt->capped = true;
		__atomic_store_n(&rt->caps, rt->caps + 1, __ATOMIC_RELAXED);
		return;
	}
	if (now - rt->window_start >= RT_WINDOW_NS) {
		rt->window_start = now;
		rt->window_cpu = cpu;
	}
	if (now - rt->behind_at >= RT_CALM_NS)
		to_normal(rt, now);
}

void d9_reader_rt_end(struct d9_reader_rt *rt)
{
	if (rt->at_rt)
		to_normal(rt, d9_clock_gettime_ns());
	__atomic_store_n(&rt->cpu_ns, thread_cpu_ns(), __ATOMIC_RELAXED);
}
