// SPDX-License-Identifier: GPL-2.0
/*
 * libdial9 with the real dial9.ko (run in the VM): the scheduler's view of
 * the process lands in the trace, on the application's clock, and the
 * `dial9` command reads it back.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dial9.h>
#include "proc.h"
#include "segfile.h"
#include "kselftest_harness.h"

#define CYCLES 30

DIAL9_SPAN_TYPE(work_span, "test.work", DIAL9_FIELD(U64, cycle));

struct run {
	volatile int stop;
	pid_t worker;
	uint64_t delay0, delay1, t0a, t0b, t1a, t1b;
	uint64_t span_begin[CYCLES], span_end[CYCLES];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spin(uint64_t ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((uint64_t)((b.tv_sec - a.tv_sec) * 1000000000ll +
			  (b.tv_nsec - a.tv_nsec)) < ns);
}

static void *hog(void *arg)
{
	struct run *r = arg;

	test_pin0();
	pthread_setname_np(pthread_self(), "hog");
	while (!r->stop)
		;
	return NULL;
}

/* Sleeps (blocks), then computes behind the hog, inside spans. */
static void *worker(void *arg)
{
	struct run *r = arg;
	struct timespec ms = { 0, 1000000 };

	test_pin0();
	/* A low weight makes the worker, not the hog, wait the longest. */
	setpriority(PRIO_PROCESS, 0, 5);
	pthread_setname_np(pthread_self(), "worker");
	r->worker = (pid_t)syscall(SYS_gettid);
	r->t0a = now_ns();
	r->delay0 = test_run_delay(r->worker);
	r->t0b = now_ns();
	for (int i = 0; i < CYCLES; i++) {
		r->span_begin[i] = now_ns();
		DIAL9_SPAN_BEGIN(work_span, dial9_u64(i));
		nanosleep(&ms, NULL);
		spin(2000000);
		DIAL9_SPAN_END(work_span, dial9_u64(i));
		r->span_end[i] = now_ns();
	}
	r->t1a = now_ns();
	r->delay1 = test_run_delay(r->worker);
	r->t1b = now_ns();
	return NULL;
}

/* One scheduler event of the worker, from the trace. */
struct kev {
	uint64_t ts;
	int kind;	/* 1 out, 2 in, 3 waking/wakeup */
	bool preempted;
	uint64_t delay;
	/* the kernel's cumulative runqueue wait and count (totals_known) */
	bool totals;
	uint64_t runq_total, runq_count;
};

struct collected {
	struct kev *ev;
	size_t n, cap;
	char backend[32];
	int spans;
	/* the recorder's threads (dial9-*, iou-wrk-*) and their events */
	pid_t rec_tid[32];
	int nrec, rec_events, rec_iou;
};

/* The recorder's own threads, as they are now: its reader, its flush
 * thread and io_uring's workers for them. */
static void recorder_threads(struct collected *c)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");

	while (d && (de = readdir(d)) && c->nrec < 32) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (!strncmp(comm, "dial9-", 6) || !strncmp(comm, "iou-wrk-", 8)) {
			c->rec_iou += !strncmp(comm, "iou-wrk-", 8);
			c->rec_tid[c->nrec++] = atoi(de->d_name);
		}
	}
	if (d)
		closedir(d);
}

static bool is_recorder(const struct collected *c, uint64_t tid)
{
	for (int i = 0; i < c->nrec; i++)
		if ((uint64_t)c->rec_tid[i] == tid)
			return true;
	return false;
}

static uint64_t field_u64(const struct dial9_record *rec, const char *name)
{
	const struct dial9_value *v = dial9_record_field(rec, name);

	return v && v->type == DIAL9_U64 ? v->u64 : 0;
}

static bool field_bool(const struct dial9_record *rec, const char *name)
{
	const struct dial9_value *v = dial9_record_field(rec, name);

	return v && v->type == DIAL9_BOOL && v->b;
}

struct collect_visit {
	pid_t worker;
	struct collected *c;
};

static void collect_record(const struct dial9_record *rec, void *arg)
{
	const struct collect_visit *v = arg;
	struct collected *c = v->c;
	pid_t worker = v->worker;
	struct kev k = { .ts = rec->ts_ns };
	const char *name;

	if (rec->kind == DIAL9_RECORD_METADATA) {
		for (unsigned int i = 0; i < rec->nkv; i++)
			if (rec->kv[i].key_len == 13 &&
			    !memcmp(rec->kv[i].key, "sched_backend", 13))
				snprintf(c->backend, sizeof(c->backend),
					 "%.*s", (int)rec->kv[i].value_len,
					 rec->kv[i].value);
		return;
	}
	if (rec->kind != DIAL9_RECORD_EVENT)
		return;
	name = rec->schema->name;
	if (!strcmp(name, "test.work") && rec->tid == (uint32_t)worker)
		c->spans++;
	/* their names (sched.comm) stay, as do wake-ups by others */
	if (!strncmp(name, "sched.switch_", 13) &&
	    is_recorder(c, field_u64(rec, "tid")))
		c->rec_events++;
	if (!strcmp(name, "sched.waking") &&
	    is_recorder(c, field_u64(rec, "tid")) &&
	    is_recorder(c, field_u64(rec, "waker_tid")))
		c->rec_events++;
	if (strncmp(name, "sched.", 6) ||
	    field_u64(rec, "tid") != (uint64_t)worker)
		return;
	k.totals = field_bool(rec, "totals_known");
	k.runq_total = field_u64(rec, "runq_total_ns");
	k.runq_count = field_u64(rec, "runq_count");
	if (!strcmp(name, "sched.switch_out")) {
		k.kind = 1;
		k.preempted = field_bool(rec, "preempted");
	} else if (!strcmp(name, "sched.switch_in")) {
		k.kind = 2;
		k.delay = field_u64(rec, "runq_delay_ns");
	} else if (!strcmp(name, "sched.waking") ||
		   !strcmp(name, "sched.wakeup")) {
		k.kind = 3;
	} else {
		return;
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->ev = realloc(c->ev, c->cap * sizeof(*c->ev));
	}
	c->ev[c->n++] = k;
}

static int collect_file(const char *path, pid_t worker, struct collected *c)
{
	struct collect_visit v = { .worker = worker, .c = c };
	int ret = test_each_record(path, collect_record, &v);

	return ret < 0 ? ret : 0;
}

static int collect_dir(const char *dir, pid_t worker, struct collected *c)
{
	struct dirent *de;
	char path[512];
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR)
			ret = collect_dir(path, worker, c);
		else if (strstr(de->d_name, ".dial9"))
			ret = collect_file(path, worker, c);
	}
	closedir(d);
	return ret;
}

static int cmp_kev(const void *a, const void *b)
{
	const struct kev *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

FIXTURE(traced) {
	struct run run;
	struct collected c;
	char dir[64];
};

FIXTURE_SETUP(traced)
{
	struct dial9_config cfg;
	pthread_t h, w;

	snprintf(self->dir, sizeof(self->dir), "/tmp/d9-trace-%d", getpid());
	dial9_config_init(&cfg);
	cfg.trace_dir = self->dir;
	ASSERT_EQ(0, dial9_start(&cfg));
	memset(&self->run, 0, sizeof(self->run));
	ASSERT_EQ(0, pthread_create(&h, NULL, hog, &self->run));
	ASSERT_EQ(0, pthread_create(&w, NULL, worker, &self->run));
	pthread_join(w, NULL);
	self->run.stop = 1;
	pthread_join(h, NULL);
	memset(&self->c, 0, sizeof(self->c));
	recorder_threads(&self->c);
	ASSERT_EQ(0, dial9_stop());
	ASSERT_EQ(0, collect_dir(self->dir, self->run.worker, &self->c));
	qsort(self->c.ev, self->c.n, sizeof(*self->c.ev), cmp_kev);
}

FIXTURE_TEARDOWN(traced)
{
	free(self->c.ev);
}

TEST_F(traced, kernel_events_of_the_worker_are_in_the_trace)
{
	struct dial9_stats st = { .size = sizeof(st) };
	int outs = 0, ins = 0, wakes = 0;

	dial9_get_stats(&st);
	EXPECT_STREQ("dial9.ko", self->c.backend);
	EXPECT_STREQ("dial9.ko", st.sched_backend);
	EXPECT_EQ(0, st.sched_lost);
	EXPECT_LT(0, st.sched_events);
	EXPECT_EQ(CYCLES * 2, self->c.spans);
	for (size_t i = 0; i < self->c.n; i++) {
		outs += self->c.ev[i].kind == 1;
		ins += self->c.ev[i].kind == 2;
		wakes += self->c.ev[i].kind == 3;
	}
	TH_LOG("worker: %d switch-outs, %d switch-ins, %d wake events", outs,
	       ins, wakes);
	EXPECT_LE(CYCLES, outs);
	EXPECT_LE(CYCLES, ins);
	EXPECT_LE(CYCLES, wakes);	/* one per sleep, at least */
}

/*
 * The sum of the worker's runqueue delays in the trace agrees with the
 * kernel's schedstat run_delay between two reads: both come from the same
 * sched_info stamps; each trace delay may be longer by the time
 * __schedule() took between the rq clock update and the tracepoint
 * (~30 us per switch under TCG), hence 100 us per switch-in plus 2%.
 */
/*
 * The recorder leaves its own threads out (DIAL9_IOC_IGNORE_THREAD), and
 * io_uring's workers of them with them: none has a switch of its own, nor
 * a wake-up among themselves.  (Their names stay, to name them where
 * they ran, and so does an application thread waking one.)
 */
TEST_F(traced, recorder_threads_are_not_in_the_trace)
{
	TH_LOG("%d recorder threads (%d io_uring workers), %d switches of them",
	       self->c.nrec, self->c.rec_iou, self->c.rec_events);
	EXPECT_LE(2, self->c.nrec);	/* dial9-kread, dial9-flush */
	EXPECT_EQ(0, self->c.rec_events);
}

TEST_F(traced, runqueue_delays_match_schedstat)
{
	uint64_t sum = 0, edge = 0, kernel, tol;
	int n = 0;

	for (size_t i = 0; i < self->c.n; i++) {
		const struct kev *k = &self->c.ev[i];

		if (k->kind != 2 || k->ts <= self->run.t0a ||
		    k->ts >= self->run.t1b)
			continue;
		if (k->ts > self->run.t0b && k->ts < self->run.t1a) {
			sum += k->delay;
			n++;
		} else {
			edge += k->delay;
		}
	}
	kernel = self->run.delay1 - self->run.delay0;
	tol = (uint64_t)n * 100000 + kernel / 50;
	TH_LOG("trace %llu ns over %d switch-ins (+%llu at the edges), schedstat %llu ns",
	       (unsigned long long)sum, n, (unsigned long long)edge,
	       (unsigned long long)kernel);
	EXPECT_LT(1000000, kernel);
	EXPECT_LE(sum, kernel + tol);
	EXPECT_GE(sum + edge + tol, kernel);
}

/*
 * Each span wraps a sleep: the worker leaves the CPU, is woken, and comes
 * back, in that order: a switch-out, then a switch-in, with a wake-up
 * before the switch-in.  (Under emulation the timer can fire before the
 * worker has left the CPU: then the wake-up comes first and the worker is
 * switched out still runnable; the order above holds either way.  A
 * preemption inside the span, out and in again with no wake-up, is not
 * the sleep's.)
 */
/*
 * Each span's sleep: a switch-out, the wake-up, then the switch-in, in
 * that order.  Under emulation a vCPU can stall past the 1 ms timer
 * between nanosleep() arming it and schedule(): the timer then wakes the
 * worker before it leaves the CPU, and the kernel does not switch it out
 * at all (a waking and no switch of that sleep).  Such a span counts as
 * early, not as a failure; most spans must sleep in order.
 */
TEST_F(traced, spans_contain_their_scheduling_in_order)
{
	int ordered = 0, early = 0;

	for (int s = 0; s < CYCLES; s++) {
		uint64_t out = 0, in = 0, wake = 0, early_wake = 0;

		for (size_t i = 0; i < self->c.n && !in; i++) {
			const struct kev *k = &self->c.ev[i];

			if (k->ts < self->run.span_begin[s] ||
			    k->ts > self->run.span_end[s])
				continue;
			if (k->kind == 1 && !out)
				out = k->ts;
			else if (k->kind == 3 && !out && !early_wake)
				early_wake = k->ts;	/* still on its CPU */
			else if (k->kind == 3 && !wake)
				wake = k->ts;
			else if (k->kind == 2 && out && wake)
				in = k->ts;
			else if (k->kind == 2)
				out = 0;	/* preempted and back: not the sleep */
		}
		if (out && in && wake && wake < in) {
			ordered++;
		} else if (early_wake && !wake) {
			early++;
			TH_LOG("span %d: woken at %llu before it left the CPU",
			       s, (unsigned long long)early_wake);
		} else {
			TH_LOG("span %d: switch-out %llu, wake-up %llu, switch-in %llu",
			       s, (unsigned long long)out,
			       (unsigned long long)wake, (unsigned long long)in);
		}
	}
	EXPECT_EQ(CYCLES, ordered + early);
	EXPECT_LE(CYCLES / 2, ordered);
}

/*
 * The worker's longest wait as the kernel counted it: the growth of its
 * run_delay between two switch-outs one wait apart (from 0 for its first
 * wait, if the trace has its first switch-in).
 */
static uint64_t kernel_max_wait(const struct collected *c)
{
	uint64_t max = 0, total = 0, count = 0;
	bool have = false;

	for (size_t i = 0; i < c->n; i++) {
		const struct kev *k = &c->ev[i];

		if (!k->totals || (k->kind != 1 && k->kind != 2))
			continue;
		if (k->kind == 2 && !have && k->runq_count == 0)
			have = true;	/* its first run: from zero */
		if (k->kind != 1)
			continue;
		if (have && k->runq_count == count + 1 &&
		    k->runq_total - total > max)
			max = k->runq_total - total;
		total = k->runq_total;
		count = k->runq_count;
		have = true;
	}
	return max;
}

/*
 * `dial9 sched` names the worker first (it waited the most in all: other
 * threads, such as io_uring's workers, may once wait longer), with its
 * longest wait as the kernel counted it.
 */
TEST_F(traced, dial9_sched_names_the_worker)
{
	char cmd[256], out[8192] = "", want[64];
	size_t len;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "dial9 sched --json --top 1 %s", self->dir);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	len = fread(out, 1, sizeof(out) - 1, p);
	out[len] = 0;
	ASSERT_EQ(0, pclose(p));
	TH_LOG("%.300s", out);
	snprintf(want, sizeof(want), "\"tid\":%d,", self->run.worker);
	EXPECT_NE(NULL, strstr(out, want));
	EXPECT_NE(NULL, strstr(out, "\"name\":\"worker\""));
	snprintf(want, sizeof(want), "\"max_ns\":%llu,",
		 (unsigned long long)kernel_max_wait(&self->c));
	EXPECT_NE(NULL, strstr(out, want));
}

TEST_HARNESS_MAIN
