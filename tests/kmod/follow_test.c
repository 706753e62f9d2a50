// SPDX-License-Identifier: GPL-2.0
/*
 * The scheduler's own totals in switch records, waits the load balancer
 * moved, processes followed to their last switch, threads left out.
 */
#include "dial9_test.h"
#include <signal.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

/*
 * Slack between the kernel's runqueue clock and the tracepoint's: the rq
 * clock is not updated on every __schedule() (rq_clock_skip_update()),
 * and under emulation it lags by up to about a millisecond.
 */
#define CLOCK_SLACK_NS(ns)	(1000000ull + (ns) / 20)

struct pp {
	int to_w[2], to_m[2];
	int rounds;		/* main's */
	int wrounds;		/* the worker's, before its last read */
	pid_t tid;
};

static void *pp_worker(void *arg)
{
	struct pp *p = arg;
	char c;

	p->tid = d9_gettid();
	for (int i = 0; i < p->wrounds; i++)
		if (read(p->to_w[0], &c, 1) != 1 || write(p->to_m[1], &c, 1) != 1)
			return NULL;
	/* Block here, switched out, until main has read our schedstat. */
	if (read(p->to_w[0], &c, 1) != 1)
		return NULL;
	return NULL;
}

static int pp_rounds(struct pp *p)
{
	char c = 'x';

	for (int i = 0; i < p->rounds; i++)
		if (write(p->to_w[1], &c, 1) != 1 || read(p->to_m[0], &c, 1) != 1)
			return -EIO;
	return 0;
}

/*
 * A blocked thread's last switch-out carries exactly what schedstat says,
 * and between its records the totals move by one wait at a time.  The
 * kernel's figure for a wait can be smaller than next_wait_ns but never
 * larger: it ends the wait at its runqueue clock, which __schedule() does
 * not update when a wake-up just did (rq_clock_skip_update()), so under
 * emulation it can be a millisecond behind the tracepoint.
 */
TEST(switch_totals_match_schedstat)
{
	struct d9_recs recs = { 0 };
	uint64_t delay, pcount, r_in = 0, wait_in = 0, ours = 0, kernels = 0;
	uint32_t p_in = 0;
	const struct dial9_rec_switch *last_out = NULL;
	const struct dial9_rec_header **sorted;
	struct pp p = { .rounds = 200, .wrounds = 200 };
	int pairs = 0, steps = 0, in_valid = 0, have_in = 0;
	pthread_t t;
	struct d9 d;
	char c = 'q';

	ASSERT_EQ(0, pipe(p.to_w));
	ASSERT_EQ(0, pipe(p.to_m));
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, 0, 1 << 20, 0));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, pthread_create(&t, NULL, pp_worker, &p));
	ASSERT_EQ(0, pp_rounds(&p));
	usleep(20000);		/* the worker is blocked in read() again */
	ASSERT_EQ(0, d9_schedstat(p.tid, NULL, &delay, &pcount));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_EQ(1, write(p.to_w[1], &c, 1));
	pthread_join(t, NULL);
	ASSERT_LT(0, d9_drain(&d, &recs));
	sorted = d9_sorted(&recs);
	ASSERT_NE(NULL, sorted);

	for (size_t i = 0; i < recs.count; i++) {
		const struct dial9_rec_header *r = sorted[i];
		const struct dial9_rec_switch *sw = (const void *)r;

		ASSERT_NE(DIAL9_REC_LOST, r->type);
		if (r->type != DIAL9_REC_SWITCH)
			continue;
		ASSERT_EQ(sizeof(*sw), r->size);
		ASSERT_TRUE(r->flags & DIAL9_SWITCH_TOTALS);
		if ((pid_t)sw->next_tid == p.tid) {
			/* Nothing is counted while it runs or sleeps. */
			if (last_out) {
				EXPECT_EQ(last_out->prev_pcount, sw->next_pcount);
				EXPECT_LE(last_out->prev_run_delay_ns,
					  sw->next_run_delay_ns);
				pairs++;
			}
			r_in = sw->next_run_delay_ns;
			p_in = sw->next_pcount;
			wait_in = sw->next_wait_ns;
			in_valid = !!(r->flags & DIAL9_SWITCH_WAIT_VALID);
			have_in = 1;
		}
		if ((pid_t)sw->prev_tid == p.tid) {
			/* The switch-in counted one wait, of about next_wait. */
			if (have_in) {
				EXPECT_EQ(p_in + in_valid, sw->prev_pcount);
				EXPECT_LE(r_in, sw->prev_run_delay_ns);
				EXPECT_LE(sw->prev_run_delay_ns, r_in + wait_in);
				ours += wait_in;
				kernels += sw->prev_run_delay_ns - r_in;
				steps++;
			}
			last_out = sw;
			have_in = 0;
		}
	}
	ASSERT_NE(NULL, last_out);
	/* The kernel's figures exactly, not an estimate. */
	EXPECT_EQ(delay, last_out->prev_run_delay_ns);
	EXPECT_EQ((uint32_t)pcount, last_out->prev_pcount);
	EXPECT_LE(150, pairs);
	EXPECT_LE(150, steps);
	TH_LOG("run_delay %llu ns, pcount %llu, %d out-in pairs; waits: tracepoint %llu ns, kernel %llu ns",
	       (unsigned long long)delay, (unsigned long long)pcount, pairs,
	       (unsigned long long)ours, (unsigned long long)kernels);
	free(sorted);
	d9_recs_free(&recs);
	d9_close(&d);
}

static volatile int spin_stop;

static void *spin_on(void *arg)
{
	int cpu = (int)(intptr_t)arg;

	if (d9_pin(cpu))
		return NULL;
	while (!spin_stop)
		;
	return NULL;
}

struct mover {
	pid_t tid;
};

static void *spin_self(void *arg)
{
	struct mover *m = arg;

	m->tid = d9_gettid();
	while (!spin_stop)
		;
	return NULL;
}

static int set_cpu(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set) ? -errno : 0;
}

/*
 * A thread that waits behind a hog on CPU 0 is moved to CPU 1 while it
 * waits: its whole wait, switch-out to switch-in, comes back from the
 * totals, where next_wait_ns alone has only the part on CPU 1.
 */
TEST(migrated_wait_is_whole)
{
	struct d9_recs recs = { 0 };
	const struct dial9_rec_switch *out = NULL;
	const struct dial9_rec_header **sorted;
	struct mover m = { 0 };
	pthread_t hog, mv;
	int whole = 0, near = 0, moved_part = 0;
	struct d9 d;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs 2 online CPUs");
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, 0, 1 << 20, 0));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_pin(1));
	spin_stop = 0;
	ASSERT_EQ(0, pthread_create(&hog, NULL, spin_on, (void *)(intptr_t)0));
	ASSERT_EQ(0, pthread_create(&mv, NULL, spin_self, &m));
	while (!m.tid)
		usleep(1000);
	ASSERT_EQ(0, d9_enable(&d));
	for (int i = 0; i < 12; i++) {
		ASSERT_EQ(0, set_cpu(m.tid, 0));
		usleep(15000);	/* it shares CPU 0 with the hog */
		ASSERT_EQ(0, set_cpu(m.tid, 1));
		usleep(5000);
	}
	ASSERT_EQ(0, d9_disable(&d));
	spin_stop = 1;
	pthread_join(hog, NULL);
	pthread_join(mv, NULL);
	ASSERT_LT(0, d9_drain(&d, &recs));

	sorted = d9_sorted(&recs);
	ASSERT_NE(NULL, sorted);
	for (size_t i = 0; i < recs.count; i++) {
		const struct dial9_rec_switch *sw = (const void *)sorted[i];

		ASSERT_NE(DIAL9_REC_LOST, sw->hdr.type);
		if (sw->hdr.type != DIAL9_REC_SWITCH ||
		    ((pid_t)sw->prev_tid != m.tid && (pid_t)sw->next_tid != m.tid))
			continue;
		if ((pid_t)sw->next_tid == m.tid && out &&
		    (pid_t)out->prev_tid == m.tid &&
		    (out->hdr.flags & DIAL9_SWITCH_PREV_RUNNABLE) &&
		    out->prev_pcount == sw->next_pcount) {
			uint64_t gap = sw->hdr.time_ns - out->hdr.time_ns;
			uint64_t before = sw->next_run_delay_ns -
					  out->prev_run_delay_ns;
			uint64_t w = before + sw->next_wait_ns;

			/*
			 * Runnable from switch-out to switch-in: all wait.
			 * Now and then the kernel's figure is off under
			 * emulation, where its runqueue clock lags by
			 * milliseconds when an update was skipped (seen: 0.4
			 * ms counted of a 4.2 ms wait, and 17.5 of a 10.7,
			 * one wait in twenty each): most must be within slack.
			 */
			if (w <= gap + CLOCK_SLACK_NS(gap) &&
			    w + CLOCK_SLACK_NS(gap) >= gap)
				near++;
			else
				TH_LOG("wait of %llu ns counted %llu by the kernel",
				       (unsigned long long)gap,
				       (unsigned long long)w);
			whole++;
			/* Most of it was spent on the CPU it left. */
			if (sw->hdr.cpu != out->hdr.cpu && before > gap / 2)
				moved_part++;
		}
		out = sw;
	}
	free(sorted);
	TH_LOG("%d whole waits, %d mostly before a migration", whole,
	       moved_part);
	EXPECT_LE(10, whole);
	EXPECT_LE(whole * 4, near * 5);		/* four in five */
	EXPECT_LE(1, moved_part);
	d9_recs_free(&recs);
	d9_close(&d);
}

/*
 * Many more children than the old 64-process table, each followed to its
 * last switch (state dead), then forgotten once reaped.
 */
TEST(children_followed_to_their_last_switch)
{
	enum { N = 300 };
	struct dial9_target tgt = { .size = sizeof(tgt),
				    .flags = DIAL9_TARGET_CHILDREN };
	struct d9_recs recs = { 0 };
	struct dial9_ring_stats st;
	static pid_t kids[N];
	static bool dead[N];
	int ndead = 0, followed = 0, seen = 0;
	static bool any[N];
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, 0, 4 << 20, 0));
	tgt.pid = getpid();
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &tgt));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	for (int i = 0; i < N; i++) {
		kids[i] = fork();
		ASSERT_LE(0, kids[i]);
		if (!kids[i]) {
			for (int j = 0; j < 3; j++)
				usleep(500);
			_exit(0);
		}
		if (i % 50 == 49)	/* keep the rings drained */
			ASSERT_LE(0, d9_drain(&d, &recs));
	}
	for (int i = 0; i < N; i++)
		ASSERT_EQ(kids[i], waitpid(kids[i], NULL, 0));
	ASSERT_EQ(0, d9_stats(&d, 0, &st));
	EXPECT_EQ(0, st.targets_dropped);
	/* Reaped leaders are freed after an RCU grace period. */
	for (int i = 0; i < 300 && st.targets > 1; i++) {
		usleep(10000);
		ASSERT_EQ(0, d9_stats(&d, 0, &st));
	}
	EXPECT_EQ(1, st.targets);
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LE(0, d9_drain(&d, &recs));
	d9_for_each(r, &recs) {
		const struct dial9_rec_switch *sw = (const void *)r;

		ASSERT_NE(DIAL9_REC_LOST, r->type);
		if (r->type != DIAL9_REC_SWITCH ||
		    !(r->flags & DIAL9_SWITCH_PREV_TARGET))
			continue;
		for (int i = 0; i < N; i++) {
			if ((pid_t)sw->prev_tid != kids[i])
				continue;
			if (!any[i])
				seen++;
			any[i] = true;
			/* Its final switch: a zombie until reaped. */
			if ((sw->prev_state == DIAL9_STATE_DEAD ||
			     sw->prev_state == DIAL9_STATE_ZOMBIE) && !dead[i]) {
				dead[i] = true;
				ndead++;
			}
		}
	}
	for (int i = 0; i < N; i++)
		followed += dead[i];
	EXPECT_EQ(N, followed);
	TH_LOG("%d of %d children recorded, %d to their last switch", seen, N,
	       ndead);
	d9_recs_free(&recs);
	d9_close(&d);
}

static int ignore(struct d9 *d, pid_t tid, uint32_t flags)
{
	struct dial9_ignore ig = { .size = sizeof(ig), .tid = (uint32_t)tid,
				   .flags = flags };

	return d9_ioctl(d->fd, DIAL9_IOC_IGNORE_THREAD, &ig);
}

/* A session mapped, and @p's worker started and its tid known. */
static int pp_start(struct pp *p, struct d9 *d, pthread_t *t)
{
	if (pipe(p->to_w) || pipe(p->to_m) || d9_open(d) || d9_map(d) ||
	    pthread_create(t, NULL, pp_worker, p))
		return -1;
	while (!p->tid)
		usleep(1000);
	return 0;
}

/* The switch-outs of @tid in @recs where it is a recorded side. */
static int switch_outs_of(const struct d9_recs *recs, pid_t tid)
{
	int n = 0;

	d9_for_each(r, recs) {
		const struct dial9_rec_switch *sw = (const void *)r;

		if (r->type == DIAL9_REC_SWITCH && (pid_t)sw->prev_tid == tid &&
		    (r->flags & DIAL9_SWITCH_PREV_TARGET))
			n++;
	}
	return n;
}

/* A thread left out is never a recorded side; put back, it is again. */
TEST(ignored_thread_is_not_recorded)
{
	struct d9_recs recs = { 0 };
	struct pp p = { .rounds = 100, .wrounds = 200 };	/* 100, twice */
	int as_target = 0, main_target = 0;
	pthread_t t;
	struct d9 d;
	char c = 'q';

	ASSERT_EQ(0, pp_start(&p, &d, &t));
	ASSERT_EQ(0, ignore(&d, p.tid, 0));
	ASSERT_EQ(0, ignore(&d, p.tid, 0));	/* already: no second slot */
	ASSERT_EQ(-EINVAL, ignore(&d, p.tid, 2));
	ASSERT_EQ(-ESRCH, ignore(&d, 4000000, 0));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, pp_rounds(&p));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LT(0, d9_drain(&d, &recs));
	d9_for_each(r, &recs) {
		const struct dial9_rec_switch *sw = (const void *)r;
		const struct dial9_rec_wake *wk = (const void *)r;

		if (r->type == DIAL9_REC_SWITCH) {
			if (((pid_t)sw->prev_tid == p.tid &&
			     (r->flags & DIAL9_SWITCH_PREV_TARGET)) ||
			    ((pid_t)sw->next_tid == p.tid &&
			     (r->flags & DIAL9_SWITCH_NEXT_TARGET)))
				as_target++;
			if ((pid_t)sw->prev_tid == d9_gettid())
				main_target++;
		}
		if (r->type == DIAL9_REC_WAKING && (pid_t)wk->tid == p.tid &&
		    (r->flags & DIAL9_WAKE_TASK_TARGET))
			as_target++;
	}
	EXPECT_EQ(0, as_target);
	EXPECT_LE(50, main_target);	/* the rest of the process is */
	d9_recs_free(&recs);

	/* Put back: recorded again. */
	ASSERT_EQ(0, ignore(&d, p.tid, DIAL9_IGNORE_REMOVE));
	ASSERT_EQ(-ENOENT, ignore(&d, p.tid, DIAL9_IGNORE_REMOVE));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, pp_rounds(&p));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LT(0, d9_drain(&d, &recs));
	as_target += switch_outs_of(&recs, p.tid);
	EXPECT_LE(50, as_target);
	ASSERT_EQ(1, write(p.to_w[1], &c, 1));
	pthread_join(t, NULL);
	d9_recs_free(&recs);
	d9_close(&d);
}

/* Ignores @p's worker in session @d while main ping-pongs with it. */
struct late_ignore {
	struct d9 *d;
	struct pp *p;
	uint64_t after_ns;	/* CLOCK_MONOTONIC once the ioctl returned */
	int ret;
	int done;
};

static void *ignore_later(void *arg)
{
	struct late_ignore *li = arg;

	usleep(20000);
	li->ret = ignore(li->d, li->p->tid, 0);
	li->after_ns = d9_now();
	__atomic_store_n(&li->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * DIAL9_FEAT_IGNORE_SYNC: a thread ignored while it runs has no record
 * as a recorded side timed after IGNORE_THREAD returned (a reader looks
 * for it only before), and had some before.
 */
TEST(thread_ignored_while_enabled_has_no_later_records)
{
	struct d9_recs recs = { 0 };
	struct pp p = { .wrounds = 1 << 30 };	/* until its pipe closes */
	struct late_ignore li = { .p = &p };
	struct dial9_version v;
	int before = 0, after = 0, main_after = 0, extra = 200;
	pthread_t t, it;
	struct d9 d;
	char c = 'x';

	/* rings that hold the whole run: it is read after */
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, 0, 16U << 20, 0));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, pipe(p.to_w));
	ASSERT_EQ(0, pipe(p.to_m));
	ASSERT_EQ(0, pthread_create(&t, NULL, pp_worker, &p));
	while (!__atomic_load_n(&p.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_GET_VERSION, &v));
	ASSERT_TRUE(v.features & DIAL9_FEAT_IGNORE_SYNC);
	li.d = &d;
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, pthread_create(&it, NULL, ignore_later, &li));
	/* the ping-pong runs across the ioctl, and on after it */
	while (extra > 0) {
		ASSERT_EQ(1, write(p.to_w[1], &c, 1));
		ASSERT_EQ(1, read(p.to_m[0], &c, 1));
		if (__atomic_load_n(&li.done, __ATOMIC_ACQUIRE))
			extra--;
	}
	pthread_join(it, NULL);
	ASSERT_EQ(0, li.ret);
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LT(0, d9_drain(&d, &recs));
	d9_for_each(r, &recs) {
		const struct dial9_rec_switch *sw = (const void *)r;
		const struct dial9_rec_wake *wk = (const void *)r;
		bool side = false;

		if (r->type == DIAL9_REC_SWITCH)
			side = ((pid_t)sw->prev_tid == p.tid &&
				(r->flags & DIAL9_SWITCH_PREV_TARGET)) ||
			       ((pid_t)sw->next_tid == p.tid &&
				(r->flags & DIAL9_SWITCH_NEXT_TARGET));
		if (r->type == DIAL9_REC_WAKING || r->type == DIAL9_REC_WAKEUP)
			side = ((pid_t)wk->tid == p.tid &&
				(r->flags & DIAL9_WAKE_TASK_TARGET)) ||
			       ((pid_t)wk->waker_tid == p.tid &&
				(r->flags & DIAL9_WAKE_WAKER_TARGET));
		if (side && r->time_ns <= li.after_ns)
			before++;
		else if (side)
			after++;
		if (r->type == DIAL9_REC_SWITCH && r->time_ns > li.after_ns &&
		    (pid_t)sw->prev_tid == d9_gettid())
			main_after++;
	}
	EXPECT_EQ(0, after);
	EXPECT_LT(0, before);
	EXPECT_LE(100, main_after);	/* the rest of the process is recorded */
	for (int cpu = 0; cpu < d.ncpu; cpu++)
		EXPECT_EQ(0, d.ctrl[cpu] ? d.ctrl[cpu]->lost : 0);
	close(p.to_w[1]);	/* the worker's read ends */
	pthread_join(t, NULL);
	d9_recs_free(&recs);
	d9_close(&d);
}

/* A thread blocked on a pipe until released: for its tid. */
struct parked {
	int fd[2];
	pid_t tid;
};

static void *park(void *arg)
{
	struct parked *pk = arg;
	char c;

	__atomic_store_n(&pk->tid, d9_gettid(), __ATOMIC_RELEASE);
	if (read(pk->fd[0], &c, 1) != 1)
		return NULL;
	return NULL;
}

/*
 * The module's quick check (a bit per tid % 64 of the ignored threads)
 * only narrows the search: a thread whose tid shares an ignored one's
 * bit is still recorded.
 */
TEST(ignored_tid_bit_does_not_hide_others)
{
	struct d9_recs recs = { 0 };
	struct pp p = { .rounds = 100, .wrounds = 100 };
	struct parked pk = { 0 };
	pthread_t t, kt;
	int tries, as_target = 0;
	struct d9 d;
	char c = 'q';

	ASSERT_EQ(0, pp_start(&p, &d, &t));
	/* tids go up one by one: a match within 64 threads, unless others
	 * take pids meanwhile */
	for (tries = 0; tries < 1000; tries++) {
		ASSERT_EQ(0, pipe(pk.fd));
		pk.tid = 0;
		ASSERT_EQ(0, pthread_create(&kt, NULL, park, &pk));
		while (!__atomic_load_n(&pk.tid, __ATOMIC_ACQUIRE))
			usleep(100);
		if (pk.tid % 64 == p.tid % 64)
			break;
		ASSERT_EQ(1, write(pk.fd[1], &c, 1));
		pthread_join(kt, NULL);
		close(pk.fd[0]);
		close(pk.fd[1]);
	}
	ASSERT_GT(1000, tries);
	ASSERT_NE(p.tid, pk.tid);
	ASSERT_EQ(0, ignore(&d, pk.tid, 0));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, pp_rounds(&p));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LT(0, d9_drain(&d, &recs));
	as_target += switch_outs_of(&recs, p.tid);
	TH_LOG("tid %d recorded beside ignored tid %d: %d switch-outs",
	       p.tid, pk.tid, as_target);
	EXPECT_LE(50, as_target);
	ASSERT_EQ(1, write(p.to_w[1], &c, 1));
	ASSERT_EQ(1, write(pk.fd[1], &c, 1));
	pthread_join(t, NULL);
	pthread_join(kt, NULL);
	d9_recs_free(&recs);
	d9_close(&d);
}

/* At most DIAL9_MAX_IGNORED threads. */
TEST(ignore_table_is_bounded)
{
	struct d9 d;
	int i;

	ASSERT_EQ(0, d9_open(&d));
	/* The same thread again takes no slot, so fill with distinct ones. */
	for (i = 0; i < DIAL9_MAX_IGNORED; i++) {
		pid_t kid = fork();

		ASSERT_LE(0, kid);
		if (!kid) {
			pause();
			_exit(0);
		}
		/* Another process: allowed as root, else -EPERM. */
		int ret = ignore(&d, kid, 0);

		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
		if (ret == -EPERM)
			SKIP(return, "not privileged");
		ASSERT_EQ(0, ret);
	}
	ASSERT_EQ(-ENOSPC, ignore(&d, 0, 0));
	d9_close(&d);
}

/* Fork a child that sleeps until killed; with @pid > 1, as that pid. */
static pid_t sleeper_as(pid_t pid)
{
	FILE *f;
	pid_t kid;

	if (pid > 1) {
		f = fopen("/proc/sys/kernel/ns_last_pid", "w");
		if (!f)
			return -1;
		fprintf(f, "%d", pid - 1);
		fclose(f);
	}
	kid = fork();
	if (!kid) {
		for (;;)
			usleep(2000);
	}
	return kid;
}

/*
 * A process is followed by identity: a stale entry (its process died
 * while the session was off, so nothing forgot it) does not match the
 * process that reuses its pid.
 */
TEST(reused_pid_is_not_followed)
{
	struct dial9_target tgt = { .size = sizeof(tgt) };
	struct d9_recs recs = { 0 };
	pid_t first, second;
	int of_second = 0, of_third = 0;
	pid_t third;
	struct d9 d;

	if (access("/proc/sys/kernel/ns_last_pid", W_OK))
		SKIP(return, "cannot choose pids (ns_last_pid)");
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, DIAL9_CFG_NO_SELF, 0, 0));
	first = sleeper_as(0);
	ASSERT_LT(0, first);
	tgt.pid = first;
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &tgt));
	kill(first, SIGKILL);
	ASSERT_EQ(first, waitpid(first, NULL, 0));
	usleep(100000);		/* its task_struct is freed after RCU */
	second = sleeper_as(first);
	ASSERT_EQ(first, second);	/* the same pid, another process */
	third = sleeper_as(0);		/* a process the session is told of */
	ASSERT_LT(0, third);
	tgt.pid = third;
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &tgt));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	usleep(100000);		/* both sleep and wake 2 ms at a time */
	ASSERT_EQ(0, d9_disable(&d));
	kill(second, SIGKILL);
	kill(third, SIGKILL);
	waitpid(second, NULL, 0);
	waitpid(third, NULL, 0);
	ASSERT_LE(0, d9_drain(&d, &recs));
	d9_for_each(r, &recs) {
		const struct dial9_rec_switch *sw = (const void *)r;

		if (r->type != DIAL9_REC_SWITCH)
			continue;
		if ((pid_t)sw->prev_tgid == second &&
		    (r->flags & DIAL9_SWITCH_PREV_TARGET))
			of_second++;
		if ((pid_t)sw->prev_tgid == third &&
		    (r->flags & DIAL9_SWITCH_PREV_TARGET))
			of_third++;
	}
	TH_LOG("pid %d reused: %d of its switches recorded; the added process: %d",
	       second, of_second, of_third);
	EXPECT_EQ(0, of_second);
	EXPECT_LE(5, of_third);
	d9_recs_free(&recs);
	d9_close(&d);
}

TEST_HARNESS_MAIN
