// SPDX-License-Identifier: GPL-2.0
/*
 * On-CPU samples (sample_hz): a thread spinning in a known hot function
 * has most of its samples in it, called from spin(); samples are only of
 * the session's own tasks (as uid 65534, with a foreign process spinning
 * on the same CPU), none without sample_hz, the timers survive a CPU
 * going offline and coming back, an idle CPU is not woken (also by a
 * session without switch events), and a thread running in short bursts
 * is sampled still.  Built with -fno-omit-frame-pointer
 * (the Makefile); the hot function is in hot_chain.h.
 */
#include "dial9_test.h"
#include "hot_chain.h"
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

#define HZ_TEST DIAL9_SAMPLE_MAX_HZ

static int configure_hz(struct d9 *d, uint32_t hz)
{
	struct dial9_session_config c = { .size = sizeof(c), .sample_hz = hz };

	return d9_ioctl(d->fd, DIAL9_IOC_CONFIGURE, &c);
}

/* The periods the sampling timers of @d skipped, from GET_STATS. */
static uint64_t stats_missed(struct d9 *d)
{
	uint64_t sum = 0;

	for (int cpu = 0; cpu < d->ncpu; cpu++) {
		struct dial9_ring_stats st = { .size = sizeof(st), .cpu = cpu };

		if (!d9_ioctl(d->fd, DIAL9_IOC_GET_STATS, &st))
			sum += st.samples_missed;
	}
	return sum;
}

static uint64_t missed_total;	/* of the last record_spin() */

/* Record this thread spinning in hot() for @ms of CPU time at @hz. */
static int record_spin(uint32_t hz, unsigned int ms, struct hot *h,
		       struct d9_recs *recs)
{
	struct d9 d;
	int ret;

	memset(h, 0, sizeof(*h));
	ret = d9_open(&d);
	if (!ret)
		ret = configure_hz(&d, hz);
	if (!ret)
		ret = d9_map(&d);
	if (!ret)
		ret = d9_enable(&d);
	if (!ret) {
		spin(h, ms);
		d9_disable(&d);
		if (d9_drain(&d, recs) < 0)
			ret = -EPROTO;
		missed_total = stats_missed(&d);
	}
	d9_close(&d);
	return ret;
}

/* A process the session does not follow, spinning on @cpu. */
static pid_t spinner(int cpu)
{
	pid_t child = fork();

	if (!child) {
		d9_pin(cpu);
		for (;;)
			asm volatile("" ::: "memory");
	}
	return child;
}

struct counts {
	int samples, ours, in_hot, kernel, foreign;
	uint64_t missed;		/* timer periods skipped, in the records */
};

static void count(const struct d9_recs *recs, const struct hot *h,
		  struct counts *c)
{
	memset(c, 0, sizeof(*c));
	d9_for_each(r, recs) {
		const struct dial9_rec_stack *s = (const void *)r;

		if (r->type != DIAL9_REC_SAMPLE)
			continue;
		c->samples++;
		if (s->tgid != (uint32_t)getpid() ||
		    s->tid != (uint32_t)d9_gettid()) {
			c->foreign++;
			continue;
		}
		c->ours++;
		c->kernel += !!(r->flags & DIAL9_SAMPLE_KERNEL);
		/* In hot(), whose caller is spin(). */
		if (s->nr >= 2 && s->ips[1] == h->in_spin &&
		    s->ips[0] >= (uintptr_t)hot && s->ips[0] < h->in_spin)
			c->in_hot++;
		c->missed += s->reserved;
		if (r->size != sizeof(*s) + 8 * s->nr || !s->nr ||
		    s->nr > DIAL9_STACK_MAX_DEPTH)
			c->foreign += 1000;	/* malformed: fails below */
	}
}

TEST(version_reports_samples)
{
	struct dial9_version v;
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_GET_VERSION, &v));
	EXPECT_TRUE(v.features & DIAL9_FEAT_SAMPLES);
	EXPECT_EQ(-EINVAL, configure_hz(&d, DIAL9_SAMPLE_MAX_HZ + 1));
	EXPECT_EQ(0, configure_hz(&d, 99));
	d9_close(&d);
}

TEST(hot_function_has_most_samples)
{
	struct d9_recs recs = { 0 };
	struct counts c;
	struct hot h;

	ASSERT_EQ(0, d9_pin(0));
	ASSERT_EQ(0, record_spin(HZ_TEST, 300, &h, &recs));
	count(&recs, &h, &c);
	TH_LOG("%d samples: %d ours, %d in hot(), %d in the kernel, %" PRIu64
	       " periods missed", c.samples, c.ours, c.in_hot, c.kernel,
	       c.missed);
	/* 300 ms at 1000 Hz: allow for a loaded host and timer slack. */
	EXPECT_GE(c.ours, 30);
	EXPECT_GT(c.in_hot * 2, c.ours);
	EXPECT_EQ(0, c.foreign);
	/* what the records say was missed is within the CPUs' totals */
	EXPECT_LE(c.missed, missed_total);
	d9_recs_free(&recs);
}

TEST(no_samples_without_sample_hz)
{
	struct d9_recs recs = { 0 };
	int comms = 0;
	struct counts c;
	struct hot h;

	ASSERT_EQ(0, record_spin(0, 100, &h, &recs));
	count(&recs, &h, &c);
	d9_for_each(r, &recs)
		comms += r->type == DIAL9_REC_COMM;
	EXPECT_EQ(0, c.samples);
	/* The session recorded: the names of our threads at ENABLE. */
	EXPECT_GT(comms, 0);
	d9_recs_free(&recs);
}

/*
 * As uid 65534, sharing CPU 0 with a process the session does not
 * follow: the timer interrupts both, and only ours are sampled.
 */
TEST(samples_only_of_recorded_tasks)
{
	struct d9_recs recs = { 0 };
	int foreign_switches = 0, st;
	struct counts c;
	struct hot h;
	pid_t child;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		SKIP(return, "cannot drop privileges");
	child = spinner(0);
	ASSERT_GE(child, 0);
	ASSERT_EQ(0, d9_pin(0));
	ASSERT_EQ(0, record_spin(HZ_TEST, 200, &h, &recs));
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	count(&recs, &h, &c);
	d9_for_each(r, &recs) {
		const struct dial9_rec_switch *sw = (const void *)r;

		if (r->type == DIAL9_REC_SWITCH &&
		    sw->next_tgid == DIAL9_TID_REDACTED)
			foreign_switches++;
	}
	TH_LOG("%d samples, %d ours; %d switches to the foreign process",
	       c.samples, c.ours, foreign_switches);
	EXPECT_GT(c.ours, 0);
	/* It did run on the CPU meanwhile, and was never sampled. */
	EXPECT_GT(foreign_switches, 0);
	EXPECT_EQ(0, c.foreign);
	d9_recs_free(&recs);
}

static int cpu_online(int cpu, bool on)
{
	char path[64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online",
		 cpu);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, on ? "1" : "0", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

/* CPU 1 goes offline while sampling, and comes back: sampled again. */
TEST(samples_follow_cpu_hotplug)
{
	struct d9_recs recs = { 0 };
	int before = 0, after = 0;
	uint64_t back = 0;
	struct hot h = { 0 };
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	if (d.ncpu < 2 || access("/sys/devices/system/cpu/cpu1/online", W_OK))
		SKIP(d9_close(&d); return, "no second CPU to unplug");
	ASSERT_EQ(0, configure_hz(&d, HZ_TEST));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, d9_pin(1));
	spin(&h, 100);
	ASSERT_EQ(0, d9_pin(0));
	ASSERT_EQ(0, cpu_online(1, false));
	spin(&h, 50);
	ASSERT_EQ(0, cpu_online(1, true));
	back = d9_now();
	ASSERT_EQ(0, d9_pin(1));
	spin(&h, 100);
	d9_disable(&d);
	ASSERT_LE(0, d9_drain(&d, &recs));
	d9_close(&d);
	d9_for_each(r, &recs) {
		if (r->type != DIAL9_REC_SAMPLE || r->cpu != 1)
			continue;
		if (r->time_ns < back)
			before++;
		else
			after++;
	}
	TH_LOG("CPU 1: %d samples before it went offline, %d after", before,
	       after);
	EXPECT_GT(before, 0);
	EXPECT_GT(after, 0);
	d9_recs_free(&recs);
}

/* The local timer interrupts @cpu took so far (/proc/interrupts, LOC). */
static long loc_irqs(int cpu)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[8192];
	long v = -1;

	while (f && fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " ");

		if (strncmp(p, "LOC:", 4))
			continue;
		p += 4;
		for (int i = 0; i <= cpu; i++)
			v = strtol(p, &p, 10);
		break;
	}
	if (f)
		fclose(f);
	return v;
}

/* LOC interrupts of CPU 1 over 1 s, all of us asleep, sampling at @hz. */
static long idle_cpu1_irqs(uint32_t hz)
{
	struct d9 d;
	long a = -1, b = -1;

	if (d9_open(&d))
		return -1;
	if (!configure_hz(&d, hz) && !d9_map(&d) && !d9_enable(&d)) {
		a = loc_irqs(1);
		usleep(1000000);
		b = loc_irqs(1);
		d9_disable(&d);
	}
	d9_close(&d);
	return a < 0 || b < 0 ? -1 : b - a;
}

/*
 * A CPU with nothing recorded to run is not woken by the sampling timer:
 * it parks until a recorded task is switched in.  Against the kernel's
 * own count of local timer interrupts, with a session that does not
 * sample beside it (a timer that kept running would add HZ_TEST).
 */
TEST(idle_cpu_is_not_woken)
{
	long base, sampling;
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	if (d.ncpu < 2 || loc_irqs(1) < 0)
		SKIP(d9_close(&d); return, "no second CPU online");
	d9_close(&d);
	ASSERT_EQ(0, d9_pin(0));
	base = idle_cpu1_irqs(0);
	sampling = idle_cpu1_irqs(HZ_TEST);
	TH_LOG("CPU 1 asleep for 1 s: %ld local timer interrupts without samples, %ld sampling at %d Hz",
	       base, sampling, HZ_TEST);
	ASSERT_LE(0, base);
	ASSERT_LE(0, sampling);
	EXPECT_LT(sampling, base + HZ_TEST / 10);
}

/*
 * The same for a session that samples without switch events (here only
 * COMM): its timers park too, resumed by the switch probe all the same,
 * which the module attaches for them.  Once they kept firing on every
 * CPU for as long as the session was enabled (1,000 such sessions took
 * CPUs from 88 to 10,021 timer interrupts a second).  Then the thread
 * spins on CPU 1 and is sampled there: the timer resumed at its
 * switch-in.
 */
TEST(idle_cpu_is_not_woken_without_switch_events)
{
	struct dial9_session_config cfg = {
		.size = sizeof(cfg), .sample_hz = HZ_TEST,
		.events = DIAL9_EV_COMM,
	};
	struct d9_recs recs = { 0 };
	long base, a, b, sampling;
	struct counts c;
	struct hot h;
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	if (d.ncpu < 2 || loc_irqs(1) < 0)
		SKIP(d9_close(&d); return, "no second CPU online");
	d9_close(&d);
	ASSERT_EQ(0, d9_pin(0));
	base = idle_cpu1_irqs(0);
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_CONFIGURE, &cfg));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	a = loc_irqs(1);
	usleep(1000000);
	b = loc_irqs(1);
	sampling = b - a;
	ASSERT_EQ(0, d9_pin(1));
	memset(&h, 0, sizeof(h));
	spin(&h, 200);
	d9_disable(&d);
	ASSERT_LE(0, d9_drain(&d, &recs));
	d9_close(&d);
	count(&recs, &h, &c);
	TH_LOG("CPU 1 asleep for 1 s: %ld local timer interrupts without samples, %ld sampling at %d Hz without switch events; then %d samples of 200 ms there",
	       base, sampling, HZ_TEST, c.ours);
	ASSERT_LE(0, base);
	ASSERT_LE(0, a);
	EXPECT_LT(sampling, base + HZ_TEST / 10);
	EXPECT_LT(0, c.ours);
	EXPECT_EQ(0, c.foreign);
	d9_recs_free(&recs);
}

/*
 * A thread that runs in bursts shorter than the period, with CPU 1 idle
 * in between, is still sampled in proportion to its CPU time: the timer
 * resumes on the grid it started on, not a period after each switch-in
 * (which would fire in every gap, and never sample it).
 */
TEST(short_bursts_are_sampled)
{
	struct d9_recs recs = { 0 };
	uint64_t cpu0, cpu_ns;
	struct counts c;
	struct hot h = { 0 };
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	if (d.ncpu < 2)
		SKIP(d9_close(&d); return, "no second CPU");
	ASSERT_EQ(0, configure_hz(&d, 99));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_pin(1));
	ASSERT_EQ(0, d9_enable(&d));
	cpu0 = hot_cpu_ns();
	for (int i = 0; i < 150; i++) {
		spin(&h, 2);
		usleep(11000);
	}
	cpu_ns = hot_cpu_ns() - cpu0;
	d9_disable(&d);
	ASSERT_LE(0, d9_drain(&d, &recs));
	d9_close(&d);
	count(&recs, &h, &c);
	TH_LOG("150 bursts of 2 ms, %.0f ms of CPU: %d samples at 99 Hz (%.0f expected)",
	       cpu_ns / 1e6, c.ours, cpu_ns / 1e9 * 99);
	/*
	 * A sixth of the expected, for timer slack under emulation: in
	 * eight boots of 2026-12-02 (TCG, a loaded host) 31% to 96% of it.
	 * A timer restarted a period after each switch-in would fire in
	 * every gap and take none.
	 */
	EXPECT_GE(c.ours, (int)(cpu_ns / 1e9 * 99 / 6));
	EXPECT_LT(0, c.ours);
	EXPECT_EQ(0, c.foreign);
	d9_recs_free(&recs);
}

TEST_HARNESS_MAIN
