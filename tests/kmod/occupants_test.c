// SPDX-License-Identifier: GPL-2.0
/*
 * DIAL9_CFG_OCCUPANTS: while a recorded thread waits on a CPU, the session
 * gets the switches between two tasks it does not record there, and only
 * then.  Two busy foreign processes share CPU 1 with the test's thread:
 * it spins (so it waits, preempted, while they take turns), then sleeps
 * (so they take turns with nothing recorded waiting).  Every switch with
 * no recorded side must lie in a wait of the thread (from a runnable
 * switch-out, or from its waking, to its next switch-in), some must, and
 * none in its sleep.  Unprivileged, their sides are redacted and no name
 * is given; privileged, they carry the tasks' ids, prios and a COMM
 * record (DIAL9_COMM_OCCUPANT) with the right name before their first
 * switch.  Without the flag no such switch is written.
 */
#include "dial9_test.h"
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

#define CPU		1
#define SPIN_NS		300000000ull	/* the thread's busy phase, wall */
#define SLEEP_NS	300000000ull	/* its sleep */

static pid_t antagonist(const char *name)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_NAME, name);
		if (d9_pin(CPU))
			_exit(1);
		for (;;)
			;
	}
	return pid;
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static void spin_wall(uint64_t ns)
{
	uint64_t end = d9_now() + ns;

	while (d9_now() < end)
		;
}

struct run {
	struct d9_recs recs;
	pid_t a, b, me;
	uint64_t sleep_from, sleep_to;	/* the thread's sleep, its clock */
};

/* Record the two phases with @flags; 0 or a negative errno. */
static int record(struct run *run, uint32_t flags, bool unprivileged)
{
	struct timespec ts = { 0, SLEEP_NS };
	struct d9 d;
	int ret;

	memset(run, 0, sizeof(*run));
	run->me = d9_gettid();
	if (d9_pin(CPU))
		return -errno;
	if (unprivileged &&
	    (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
		return -errno;
	run->a = antagonist("d9-occ-a");
	run->b = antagonist("d9-occ-b");
	if (run->a < 0 || run->b < 0)
		return -errno;
	ret = d9_open(&d);
	if (!ret)
		ret = d9_configure(&d, flags, 1 << 20, 0);
	if (!ret)
		ret = d9_map(&d);
	usleep(20000);		/* both antagonists on the CPU */
	if (!ret)
		ret = d9_enable(&d);
	if (!ret) {
		spin_wall(SPIN_NS);
		run->sleep_from = d9_now();
		nanosleep(&ts, NULL);
		run->sleep_to = d9_now();
		spin_wall(SPIN_NS / 3);
		ret = d9_disable(&d);
	}
	stop(run->a);
	stop(run->b);
	if (!ret && d9_drain(&d, &run->recs) <= 0)
		ret = -ENODATA;
	d9_close(&d);
	return ret;
}

static bool foreign_switch(const struct dial9_rec_header *r)
{
	return r->type == DIAL9_REC_SWITCH &&
	       !(r->flags & (DIAL9_SWITCH_PREV_TARGET |
			     DIAL9_SWITCH_NEXT_TARGET));
}

struct counts {
	int foreign;		/* switches with no recorded side, on CPU */
	int outside;		/* of them, not in a wait of the thread */
	int in_sleep;		/* of them, while it slept */
	int named_a, named_b;	/* COMM records of the antagonists */
	int unnamed;		/* a side of a task not named before it */
	int leaks;		/* an id or prio shown where none may be */
	int redacted;		/* a privileged side redacted */
	int seen_a, seen_b;	/* foreign switches with A, B as a side */
};

#define NAMED_MAX 256

static bool named(const uint32_t *v, int n, uint32_t tid)
{
	for (int i = 0; i < n; i++)
		if (v[i] == tid)
			return true;
	return false;
}

/*
 * Walk the records in time order: the thread waits from a switch-out
 * that leaves it runnable, or from its waking, to its next switch-in.
 */
static void count(const struct run *run, bool privileged, struct counts *c)
{
	const struct dial9_rec_header **v = d9_sorted(&run->recs);
	uint32_t names[NAMED_MAX];
	bool waiting = false;
	int nnames = 0;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; v && v[i]; i++) {
		const struct dial9_rec_header *r = v[i];
		const struct dial9_rec_switch *sw = (const void *)r;
		const struct dial9_rec_wake *wk = (const void *)r;
		const struct dial9_rec_comm *cm = (const void *)r;

		if (r->type == DIAL9_REC_WAKING && wk->tid == (uint32_t)run->me)
			waiting = true;
		if (r->type == DIAL9_REC_COMM &&
		    (r->flags & DIAL9_COMM_OCCUPANT) && r->cpu == CPU) {
			c->named_a += cm->tid == (uint32_t)run->a &&
				      !strcmp(cm->comm, "d9-occ-a");
			c->named_b += cm->tid == (uint32_t)run->b &&
				      !strcmp(cm->comm, "d9-occ-b");
			if (nnames < NAMED_MAX)
				names[nnames++] = cm->tid;
		}
		if (r->type != DIAL9_REC_SWITCH || r->cpu != CPU)
			continue;
		if (foreign_switch(r)) {
			c->foreign++;
			c->outside += !waiting;
			c->in_sleep += r->time_ns > run->sleep_from &&
				       r->time_ns < run->sleep_to &&
				       !waiting;
			if (!privileged) {
				c->leaks += (sw->prev_tid && sw->prev_tid !=
					     DIAL9_TID_REDACTED) ||
					    (sw->next_tid && sw->next_tid !=
					     DIAL9_TID_REDACTED) ||
					    sw->prev_prio || sw->next_prio;
			} else {
				uint32_t ids[2] = { sw->prev_tid, sw->next_tid };
				uint32_t pids[2] = { sw->prev_tgid,
						     sw->next_tgid };

				/* every task but the idle one, named first */
				for (int k = 0; k < 2; k++) {
					c->redacted += ids[k] ==
						       DIAL9_TID_REDACTED ||
						       (ids[k] && !pids[k]);
					c->unnamed += ids[k] &&
						      !named(names, nnames,
							     ids[k]);
					c->seen_a += ids[k] == (uint32_t)run->a;
					c->seen_b += ids[k] == (uint32_t)run->b;
				}
			}
		}
		if ((r->flags & DIAL9_SWITCH_PREV_TARGET) &&
		    sw->prev_tid == (uint32_t)run->me)
			waiting = r->flags & DIAL9_SWITCH_PREV_RUNNABLE;
		if ((r->flags & DIAL9_SWITCH_NEXT_TARGET) &&
		    sw->next_tid == (uint32_t)run->me)
			waiting = false;
	}
	free(v);
}

TEST(occupants_feature)
{
	struct dial9_version v;
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_GET_VERSION, &v));
	EXPECT_TRUE(v.features & DIAL9_FEAT_OCCUPANTS);
	EXPECT_EQ(0, d9_configure(&d, DIAL9_CFG_OCCUPANTS, 0, 0));
	d9_close(&d);
}

TEST(privileged_gets_named_occupants_only_while_it_waits)
{
	struct counts c;
	struct run run;

	ASSERT_EQ(0, record(&run, DIAL9_CFG_OCCUPANTS, false));
	count(&run, true, &c);
	TH_LOG("foreign %d outside %d in_sleep %d named %d/%d unnamed %d",
	       c.foreign, c.outside, c.in_sleep, c.named_a, c.named_b,
	       c.unnamed);
	EXPECT_LE(2, c.foreign);
	EXPECT_EQ(0, c.outside);
	EXPECT_EQ(0, c.in_sleep);
	EXPECT_LE(1, c.seen_a);
	EXPECT_LE(1, c.seen_b);
	EXPECT_LE(1, c.named_a);
	EXPECT_LE(1, c.named_b);
	EXPECT_EQ(0, c.unnamed);
	EXPECT_EQ(0, c.redacted);
	d9_recs_free(&run.recs);
}

/*
 * The same for a session that gets no slot of the module's per-CPU maps
 * of sessions with a task waiting (occupant_slots 0, as past 512 such
 * sessions): its switches come from the walk of every session while
 * one of its tasks waits.
 */
TEST(occupants_without_a_slot)
{
	static const char param[] =
		"/sys/module/dial9/parameters/occupant_slots";
	char old[32] = "";
	struct counts c;
	struct run run;
	FILE *f = fopen(param, "r");
	int ret;

	ASSERT_NE(NULL, f) TH_LOG("no %s", param);
	ASSERT_NE(NULL, fgets(old, sizeof(old), f));
	fclose(f);
	ASSERT_EQ(0, d9_write_file(param, "0"));
	ret = record(&run, DIAL9_CFG_OCCUPANTS, false);
	EXPECT_EQ(0, d9_write_file(param, old));
	ASSERT_EQ(0, ret);
	count(&run, true, &c);
	TH_LOG("foreign %d outside %d in_sleep %d named %d/%d unnamed %d",
	       c.foreign, c.outside, c.in_sleep, c.named_a, c.named_b,
	       c.unnamed);
	EXPECT_LE(2, c.foreign);
	EXPECT_EQ(0, c.outside);
	EXPECT_EQ(0, c.in_sleep);
	EXPECT_LE(1, c.seen_a);
	EXPECT_LE(1, c.seen_b);
	EXPECT_EQ(0, c.unnamed);
	EXPECT_EQ(0, c.redacted);
	d9_recs_free(&run.recs);
}

TEST(unprivileged_gets_redacted_occupants)
{
	struct counts c;
	struct run run;

	ASSERT_EQ(0, record(&run, DIAL9_CFG_OCCUPANTS, true));
	count(&run, false, &c);
	TH_LOG("foreign %d outside %d in_sleep %d", c.foreign, c.outside,
	       c.in_sleep);
	EXPECT_LE(2, c.foreign);
	EXPECT_EQ(0, c.outside);
	EXPECT_EQ(0, c.in_sleep);
	EXPECT_EQ(0, c.named_a + c.named_b);
	EXPECT_EQ(0, c.leaks);
	d9_recs_free(&run.recs);
}

TEST(without_the_flag_no_foreign_switch)
{
	struct counts c;
	struct run run;

	ASSERT_EQ(0, record(&run, 0, false));
	count(&run, true, &c);
	EXPECT_EQ(0, c.foreign);
	EXPECT_EQ(0, c.named_a + c.named_b);
	d9_recs_free(&run.recs);
}

/*
 * A ring remembers the names it gave (16, DIAL9_NAMED, replaced in turn):
 * nine busy foreign processes taking turns on the CPU while the thread
 * waits are named once each, not again at every turn (each costs a
 * record in the ring).  Other foreign tasks (kworkers, ksoftirqd, ...)
 * take entries too, and enough of them crowd a cycler's name out (one CI
 * run: d9-cyc-0, the oldest entry, named twice), so the ring's names are
 * replayed through a model of that cache: a task named again must have
 * been crowded out of it, or have changed its name.
 */
#define CYCLERS 9
#define NAMED 16	/* kmod/dial9_core.h's DIAL9_NAMED */

struct name_model {
	uint32_t tid[NAMED];
	char comm[NAMED][16];
	unsigned int next;
};

/* One COMM record of an occupant: false if the cache still held it so. */
static bool model_name(struct name_model *m, const struct dial9_rec_comm *cm)
{
	for (unsigned int i = 0; i < NAMED; i++) {
		if (m->tid[i] != cm->tid)
			continue;
		if (!memcmp(m->comm[i], cm->comm, sizeof(m->comm[i])))
			return false;
		memcpy(m->comm[i], cm->comm, sizeof(m->comm[i]));
		return true;	/* renamed: named again, in place */
	}
	m->tid[m->next] = cm->tid;
	memcpy(m->comm[m->next], cm->comm, sizeof(m->comm[0]));
	m->next = (m->next + 1) % NAMED;
	return true;
}

TEST(occupant_names_are_cached)
{
	pid_t pid[CYCLERS];
	int named[CYCLERS] = { 0 }, seen[CYCLERS] = { 0 };
	int nseen = 0, total = 0, names = 0, cached_again = 0, cyc_names = 0;
	struct name_model model = { 0 };
	struct d9_recs recs = { 0 };
	const struct dial9_rec_header **v;
	struct d9 d;

	ASSERT_EQ(0, d9_pin(CPU));
	for (int i = 0; i < CYCLERS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "d9-cyc-%d", i);
		pid[i] = antagonist(name);
		ASSERT_LT(0, pid[i]);
	}
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, DIAL9_CFG_OCCUPANTS, 1 << 20, 0));
	ASSERT_EQ(0, d9_map(&d));
	usleep(20000);		/* all of them on the CPU */
	ASSERT_EQ(0, d9_enable(&d));
	spin_wall(SPIN_NS);
	ASSERT_EQ(0, d9_disable(&d));
	for (int i = 0; i < CYCLERS; i++)
		stop(pid[i]);
	ASSERT_LT(0, d9_drain(&d, &recs));
	v = d9_sorted(&recs);
	ASSERT_NE(NULL, v);
	for (size_t k = 0; v[k]; k++) {
		const struct dial9_rec_header *r = v[k];
		const struct dial9_rec_switch *sw = (const void *)r;
		const struct dial9_rec_comm *cm = (const void *)r;
		bool occupant_name = r->type == DIAL9_REC_COMM &&
				     (r->flags & DIAL9_COMM_OCCUPANT);

		if (r->cpu != CPU)
			continue;
		if (occupant_name) {
			names++;
			if (!model_name(&model, cm)) {
				cached_again++;
				TH_LOG("%u (%.16s) named again while cached",
				       cm->tid, cm->comm);
			}
		}
		for (int i = 0; i < CYCLERS; i++) {
			if (occupant_name && cm->tid == (uint32_t)pid[i] &&
			    ++named[i] > 1)
				TH_LOG("d9-cyc-%d named again, as %.16s", i,
				       cm->comm);
			if (foreign_switch(r) &&
			    (sw->prev_tid == (uint32_t)pid[i] ||
			     sw->next_tid == (uint32_t)pid[i]))
				seen[i]++;
		}
	}
	free(v);
	for (int i = 0; i < CYCLERS; i++) {
		TH_LOG("d9-cyc-%d: %d switches, named %d times", i, seen[i],
		       named[i]);
		nseen += seen[i] > 0;
		total += seen[i];
		cyc_names += named[i];
		if (seen[i])
			EXPECT_LE(1, named[i]);
	}
	/* no name given again that the ring's cache held */
	TH_LOG("%d names in the ring, %d of them given while cached", names,
	       cached_again);
	EXPECT_EQ(0, cached_again);
	/* and the cyclers' names far fewer than their turns */
	EXPECT_GT(total, 2 * cyc_names);
	/* they took turns: most of them, several times each */
	EXPECT_LE(CYCLERS - 2, nseen);
	EXPECT_LE(3 * CYCLERS, total);
	d9_recs_free(&recs);
	d9_close(&d);
}

TEST_HARNESS_MAIN
