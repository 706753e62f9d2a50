// SPDX-License-Identifier: GPL-2.0
/*
 * User stacks at switch-out (DIAL9_CFG_STACKS): a thread that blocks in a
 * known chain a() -> b() -> c() -> read() shows that chain, innermost
 * first, and so does the thread that wakes it through the same chain
 * with write(); no STACK records without the flag; an unprivileged session never
 * gets the stack of a foreign task.  Built with -fno-omit-frame-pointer
 * (the Makefile), which the frame-pointer walk needs; the chain is in
 * stack_chain.h.
 */
#include "dial9_test.h"
#include "stack_chain.h"
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

/* A thread blocked in the chain, and the one that wakes it through it. */
struct chains {
	struct chain blocked, waker;
};

static void *blocker(void *arg)
{
	struct chain *ch = arg;

	ch->tid = d9_gettid();
	return (void *)a(ch);
}

/*
 * Record a thread blocking in a() -> b() -> c() for about 20 ms with a
 * session configured with @flags; the records go to @recs.
 */
static int record_chain(uint32_t flags, struct chains *ch, struct d9_recs *recs)
{
	struct d9 d;
	pthread_t t;
	int p[2], ret;
	void *res;

	memset(ch, 0, sizeof(*ch));
	if (pipe(p))
		return -errno;
	ch->blocked.fd = p[0];
	ret = d9_open(&d);
	if (!ret)
		ret = d9_configure(&d, flags, 0, 0);
	if (!ret)
		ret = d9_map(&d);
	if (!ret)
		ret = d9_enable(&d);
	if (ret)
		goto out;
	if (pthread_create(&t, NULL, blocker, &ch->blocked)) {
		ret = -EAGAIN;
		goto out;
	}
	usleep(20000);
	/* The wake-up comes from a chain of ours too. */
	ch->waker.nr = SYS_write;
	ch->waker.fd = p[1];
	ch->waker.tid = d9_gettid();
	if (a(&ch->waker) != 1)
		ret = -EIO;
	pthread_join(t, &res);
	if ((long)res != 1)
		ret = -EIO;
	d9_disable(&d);
	if (!ret && d9_drain(&d, recs) < 0)
		ret = -EPROTO;
out:
	d9_close(&d);
	close(p[0]);
	close(p[1]);
	return ret;
}

TEST(version_reports_stacks)
{
	struct dial9_version v;
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_GET_VERSION, &v));
	EXPECT_TRUE(v.features & DIAL9_FEAT_STACKS);
	EXPECT_EQ(0, d9_configure(&d, DIAL9_CFG_STACKS, 0, 0));
	d9_close(&d);
	ASSERT_EQ(0, d9_open(&d));
	EXPECT_EQ(-EINVAL, d9_configure(&d, DIAL9_CFG_ALL + 1, 0, 0));
	d9_close(&d);
}

/* @st shows chain @ch: its syscall site in c(), then b(), then a(). */
static bool shows_chain(const struct dial9_rec_stack *st,
			const struct chain *ch)
{
	return st->tid == (uint32_t)ch->tid && st->nr >= 3 &&
	       st->ips[0] == ch->site && st->ips[1] == ch->in_b &&
	       st->ips[2] == ch->in_a;
}

TEST(blocked_and_waker_stacks_show_the_chain)
{
	const struct dial9_rec_header *last = NULL;
	struct d9_recs recs = { 0 };
	struct chains ch;
	int blocked = 0, waker = 0, stacks = 0;

	ASSERT_EQ(0, record_chain(DIAL9_CFG_STACKS, &ch, &recs));
	ASSERT_NE(0, ch.blocked.site);
	ASSERT_NE(0, ch.waker.site);
	/* The chain's addresses lie in the functions, callers after callees. */
	ASSERT_GT(ch.blocked.site, (uintptr_t)c);
	ASSERT_GT(ch.blocked.in_b, (uintptr_t)b);
	ASSERT_GT(ch.blocked.in_a, (uintptr_t)a);
	d9_for_each(r, &recs) {
		const struct dial9_rec_stack *st = (const void *)r;
		const struct dial9_rec_switch *sw = (const void *)last;
		const struct dial9_rec_wake *wk = (const void *)last;

		if (r->type == DIAL9_REC_STACK) {
			stacks++;
			ASSERT_GE(r->size, sizeof(*st) + 8);
			ASSERT_EQ(r->size, sizeof(*st) + 8 * st->nr);
			ASSERT_LE(st->nr, DIAL9_STACK_MAX_DEPTH);
			ASSERT_EQ(0, st->reserved);
			ASSERT_EQ(getpid(), st->tgid);
			/* Right after its switch-out or waking: CPU, time. */
			ASSERT_NE(NULL, last);
			ASSERT_EQ(r->time_ns, last->time_ns);
			ASSERT_EQ(r->cpu, last->cpu);
		}
		if (r->type == DIAL9_REC_STACK &&
		    !(r->flags & DIAL9_STACK_WAKER)) {
			ASSERT_EQ(DIAL9_REC_SWITCH, last->type);
			ASSERT_EQ(st->tid, sw->prev_tid);
			/*
			 * Only the waker, preempted inside its write() (by the
			 * thread it woke, say), leaves the CPU in its chain.
			 */
			if (shows_chain(st, &ch.waker)) {
				EXPECT_EQ(ch.waker.tid, sw->prev_tid);
				EXPECT_TRUE(last->flags & DIAL9_SWITCH_PREEMPT);
			}
			/*
			 * The blocked thread leaves the CPU asleep in its
			 * chain, unless it was preempted on its way there
			 * (then the switch says so, runnable).
			 */
			if (shows_chain(st, &ch.blocked) &&
			    (last->flags & DIAL9_SWITCH_PREEMPT)) {
				EXPECT_EQ(0, sw->prev_state);
			} else if (shows_chain(st, &ch.blocked)) {
				EXPECT_EQ(DIAL9_STATE_SLEEPING, sw->prev_state);
				blocked++;
			}
		} else if (r->type == DIAL9_REC_STACK) {
			ASSERT_EQ(DIAL9_REC_WAKING, last->type);
			ASSERT_EQ(st->tid, wk->waker_tid);
			ASSERT_TRUE(last->flags & DIAL9_WAKE_TASK_TARGET);
			ASSERT_FALSE(last->flags & DIAL9_WAKE_FROM_IRQ);
			if (shows_chain(st, &ch.waker)) {
				EXPECT_EQ(ch.blocked.tid, wk->tid);
				waker++;
			}
		}
		last = r;
	}
	TH_LOG("%d stack records, %d of the blocked chain, %d of the waker's",
	       stacks, blocked, waker);
	EXPECT_GE(blocked, 1);
	EXPECT_EQ(1, waker);
	d9_recs_free(&recs);
}

TEST(no_stacks_unless_asked)
{
	struct d9_recs recs = { 0 };
	struct chains ch;
	int switches = 0;

	ASSERT_EQ(0, record_chain(0, &ch, &recs));
	d9_for_each(r, &recs) {
		EXPECT_NE(DIAL9_REC_STACK, r->type);
		switches += r->type == DIAL9_REC_SWITCH;
	}
	EXPECT_GT(switches, 0);
	d9_recs_free(&recs);
}

/*
 * As uid 65534, with another process spinning on the same CPU: stacks of
 * our own threads only, though the foreign side shows up in switches.
 */
TEST(unprivileged_never_gets_foreign_stacks)
{
	struct d9_recs recs = { 0 };
	int own = 0, foreign = 0, st;
	struct chains ch;
	pid_t child;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		SKIP(return, "cannot drop privileges");
	/* Another process, not followed: a foreign task to the session. */
	child = fork();
	ASSERT_GE(child, 0);
	if (!child) {
		d9_pin(0);
		for (;;)
			asm volatile("" ::: "memory");
	}
	ASSERT_EQ(0, d9_pin(0));
	ASSERT_EQ(0, record_chain(DIAL9_CFG_STACKS, &ch, &recs));
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	d9_for_each(r, &recs) {
		const struct dial9_rec_stack *s = (const void *)r;
		const struct dial9_rec_switch *sw = (const void *)r;

		if (r->type == DIAL9_REC_STACK) {
			EXPECT_EQ(getpid(), s->tgid);
			own += s->tgid == (uint32_t)getpid();
		}
		if (r->type == DIAL9_REC_SWITCH &&
		    (sw->prev_tgid == DIAL9_TID_REDACTED ||
		     sw->next_tgid == DIAL9_TID_REDACTED))
			foreign++;
	}
	TH_LOG("%d own stacks, %d switches with a foreign side", own, foreign);
	EXPECT_GT(own, 0);
	EXPECT_GT(foreign, 0);
	d9_recs_free(&recs);
}

TEST_HARNESS_MAIN
