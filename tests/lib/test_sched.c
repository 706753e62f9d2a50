// SPDX-License-Identifier: MIT
/*
 * test_sched.c - scheduler events from the perf_event_open backend, on the
 * host's own kernel (dial9.ko is tested in the VM: tests/sched/).
 */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <linux/capability.h>
#include <linux/dial9.h>

#include "cmd.h"
#include "helpers.h"
#include "ksched/ksched.h"

#define ROUNDS 200

struct pingpong {
	int ab[2], ba[2];
	pid_t a, b;
	uint64_t csw_b, vol_b;	/* the kernel's counts for b, at its end */
	const char *name;	/* pong_until_eof(): b names itself so */
};

static void *pong(void *arg)
{
	struct pingpong *p = arg;
	char c;

	p->b = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), "pong");
	for (int i = 0; i < ROUNDS; i++)
		if (read(p->ab[0], &c, 1) != 1 || write(p->ba[1], &c, 1) != 1)
			break;
	p->csw_b = test_ctx_switches(p->b, &p->vol_b);
	return NULL;
}

struct seen {
	pid_t a, b;
	int out_a, out_b, in_a, in_b, a_woke_b, b_woke_a, comm_b;
	char backend[16];
	char note[512];
};

static uint64_t u64f(const struct dial9_record *r, const char *name)
{
	const struct dial9_value *v = dial9_record_field(r, name);

	return v && v->type == DIAL9_U64 ? v->u64 : 0;
}

static void visit(const struct dial9_record *r, void *arg)
{
	struct seen *s = arg;
	const char *n = r->schema->name;
	uint64_t tid = u64f(r, "tid");

	if (!strcmp(n, "sched.switch_out")) {
		s->out_a += tid == (uint64_t)s->a;
		s->out_b += tid == (uint64_t)s->b;
	} else if (!strcmp(n, "sched.switch_in")) {
		s->in_a += tid == (uint64_t)s->a;
		s->in_b += tid == (uint64_t)s->b;
	} else if (!strcmp(n, "sched.waking")) {
		s->a_woke_b += tid == (uint64_t)s->b &&
			       u64f(r, "waker_tid") == (uint64_t)s->a;
		s->b_woke_a += tid == (uint64_t)s->a &&
			       u64f(r, "waker_tid") == (uint64_t)s->b;
	} else if (!strcmp(n, "sched.comm")) {
		s->comm_b += tid == (uint64_t)s->b &&
			     test_streq(dial9_record_field(r, "name"), "pong");
	}
}

static void meta_visit(const struct dial9_record *r, void *arg)
{
	struct seen *s = arg;

	test_meta(r, "sched_backend", s->backend, sizeof(s->backend));
	test_meta(r, "sched_note", s->note, sizeof(s->note));
}

/* The segment metadata names the backend. */
static void read_meta(const char *path, struct seen *s)
{
	assert_int_equal(access(path, R_OK), 0);
	test_each_record(path, meta_visit, s);
}


static void perf_backend_records_switches_and_wakeups(void **state)
{
	struct pingpong p;
	struct seen s = { 0 };
	struct test_counts cnt = { 0 };
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	bool wakes_possible = geteuid() == 0 && test_tracefs_ready();
	char *dir = test_tmpdir("sched"), *boot;
	char **files;
	uint64_t csw_a, vol_a, vol0;
	pthread_t t;
	char ch = 'x';
	(void)state;

	if (!test_start_perf(&c, dir, "schedtest", &st))
		skip();		/* only where perf events are not permitted */
	assert_string_equal(st.sched_backend, "perf");
	assert_int_equal(pipe(p.ab), 0);
	assert_int_equal(pipe(p.ba), 0);
	p.a = (pid_t)syscall(SYS_gettid);
	assert_int_equal(pthread_create(&t, NULL, pong, &p), 0);
	csw_a = test_ctx_switches(p.a, &vol0);
	for (int i = 0; i < ROUNDS; i++) {
		assert_int_equal(write(p.ab[1], &ch, 1), 1);
		assert_int_equal(read(p.ba[0], &ch, 1), 1);
	}
	csw_a = test_ctx_switches(p.a, &vol_a) - csw_a;
	vol_a -= vol0;
	pthread_join(t, NULL);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_true(st.sched_events > 0);
	assert_int_equal(st.sched_lost, 0);
	{
		/* the recorder's threads' cost: some, and within the
		 * process's own CPU time */
		struct rusage ru;
		uint64_t self;

		assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
		self = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
		       1000000000ull + (uint64_t)(ru.ru_utime.tv_usec +
						  ru.ru_stime.tv_usec) * 1000ull;
		assert_true(st.recorder_cpu_ns > 0);
		assert_true(st.recorder_cpu_ns <= self + 10000000ull);
	}

	boot = test_boot_dir(dir);
	assert_non_null(boot);
	files = test_list(boot, ".dial9", NULL);
	assert_non_null(files[0]);
	read_meta(files[0], &s);
	test_free_list(files);
	s.a = p.a;
	s.b = p.b;
	test_decode_dir(boot, &cnt, visit, &s);
	assert_int_equal(cnt.err, 0);
	assert_string_equal(s.backend, "perf");
	print_message("switches out a=%d b=%d in a=%d b=%d, wakes a->b %d b->a %d; kernel: a %" PRIu64 " (%" PRIu64 " voluntary) in the rounds, b %" PRIu64 " (%" PRIu64 ") (%s)\n",
		      s.out_a, s.out_b, s.in_a, s.in_b, s.a_woke_b, s.b_woke_a,
		      csw_a, vol_a, p.csw_b, p.vol_b, s.note);
	/*
	 * Every switch the kernel counted is in the trace (a round need not
	 * switch: the other thread may answer before one blocks).  The
	 * trace has more: a's before and after the rounds, b's last.
	 */
	assert_true(s.out_a >= (int)csw_a && s.out_b >= (int)p.csw_b);
	assert_true(s.in_a >= (int)csw_a && s.in_b >= (int)p.csw_b);
	assert_true(csw_a + p.csw_b > 0);
	/* The thread's name arrives with the rename. */
	assert_true(s.comm_b >= 1);
	if (wakes_possible) {
		/*
		 * Each time a thread blocked in the rounds, the other woke
		 * it, but for a few sleeps another thread may end, one the
		 * trace leaves out (a recorder thread releasing a lock, the
		 * sanitizer's allocator's say).  CI once saw 195 a->b
		 * wakings for 197 voluntary switches of b; a loss is more.
		 */
		assert_true(s.b_woke_a + ROUNDS / 20 >= (int)vol_a &&
			    s.a_woke_b + ROUNDS / 20 >= (int)p.vol_b);
	} else {
		print_message("wake-ups not checked: %s\n", s.note);
		assert_non_null(strstr(s.note, "wake-ups need"));
	}
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

struct contention {
	volatile int stop;
	pid_t worker;
	uint64_t delay_end;
};

static void *hog(void *arg)
{
	struct contention *c = arg;

	test_pin0();
	while (!c->stop)
		;
	return NULL;
}

static void *busy(void *arg)
{
	struct contention *c = arg;
	struct timespec t0, t1;

	test_pin0();
	c->worker = (pid_t)syscall(SYS_gettid);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t1);
	while ((t1.tv_sec - t0.tv_sec) * 1000000000ll +
	       (t1.tv_nsec - t0.tv_nsec) < 400000000ll);
	c->delay_end = test_run_delay(c->worker);
	return NULL;
}

struct sstat_seen {
	pid_t worker;
	uint64_t samples, first_delay, last_delay;
	int decreasing;
};

static void visit_sstat(const struct dial9_record *r, void *arg)
{
	struct sstat_seen *s = arg;
	uint64_t d;

	if (strcmp(r->schema->name, "sched.schedstat") ||
	    u64f(r, "tid") != (uint64_t)s->worker)
		return;
	d = u64f(r, "runq_delay_ns");
	if (!s->samples++)
		s->first_delay = d;
	s->decreasing += d < s->last_delay;
	s->last_delay = d;
}

/* The last resort samples /proc: cumulative waits, growing under contention. */
static void schedstat_backend_samples_waits(void **state)
{
	struct contention c = { 0 };
	struct sstat_seen s = { 0 };
	struct test_counts cnt = { 0 };
	struct dial9_config cfg;
	struct dial9_stats st = { .size = sizeof(st) };
	char *dir = test_tmpdir("sstat"), *boot;
	pthread_t h, w;
	(void)state;

	dial9_config_init(&cfg);
	cfg.trace_dir = dir;
	cfg.service_name = "sstat";
	cfg.sched = DIAL9_SCHED_SCHEDSTAT;
	assert_int_equal(dial9_start(&cfg), 0);
	dial9_get_stats(&st);
	assert_string_equal(st.sched_backend, "schedstat");
	assert_int_equal(pthread_create(&h, NULL, hog, &c), 0);
	assert_int_equal(pthread_create(&w, NULL, busy, &c), 0);
	pthread_join(w, NULL);
	c.stop = 1;
	pthread_join(h, NULL);
	assert_int_equal(dial9_stop(), 0);
	boot = test_boot_dir(dir);
	assert_non_null(boot);
	s.worker = c.worker;
	test_decode_dir(boot, &cnt, visit_sstat, &s);
	assert_int_equal(cnt.err, 0);
	print_message("%llu samples of the worker, run_delay %llu -> %llu ns (schedstat at its end: %llu)\n",
		      (unsigned long long)s.samples,
		      (unsigned long long)s.first_delay,
		      (unsigned long long)s.last_delay,
		      (unsigned long long)c.delay_end);
	/* 400 ms at one sample per 100 ms, whatever the machine's load. */
	assert_true(s.samples >= 2);
	assert_int_equal(s.decreasing, 0);
	assert_true(s.last_delay <= c.delay_end);
	/* Sharing a CPU with the hog, the worker waited. */
	assert_true(c.delay_end > 0);
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

/*
 * Wake-up latency from the perf backend: a thread sleeping 1 ms at a time
 * on the CPU of a hog (both ours: the timer's wake-up happens while the
 * hog runs, so the sched_waking sample is the hog's), and a process and a
 * thread created after the recording began, never renamed.
 */
#define NAPS 100

struct napper {
	pid_t sleeper, child, spawned;
	uint64_t run_delay;
};

static void *sleeper(void *arg)
{
	struct napper *n = arg;
	struct timespec ts = { 0, 1000000 };

	test_pin0();
	pthread_setname_np(pthread_self(), "sleeper");
	n->sleeper = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < NAPS; i++)
		nanosleep(&ts, NULL);
	n->run_delay = test_run_delay(n->sleeper);
	return NULL;
}

static void *spawned(void *arg)
{
	struct napper *n = arg;

	n->spawned = (pid_t)syscall(SYS_gettid);
	usleep(10000);
	return NULL;
}

/* Renamed, then creates a process and a thread that keep its name. */
static void *forker(void *arg)
{
	struct napper *n = arg;
	pthread_t t;
	pid_t c;

	pthread_setname_np(pthread_self(), "forker");
	c = fork();
	if (c == 0) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
		_exit(0);
	}
	n->child = c;
	if (c > 0)
		waitpid(c, NULL, 0);
	if (!pthread_create(&t, NULL, spawned, n))
		pthread_join(t, NULL);
	return NULL;
}

/* `dial9 sched --json --tid TID DIR`: the one thread's figures. */
static char *sched_json(const char *dir, pid_t tid)
{
	static char out[8192];
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "%s sched --json --tid %d %s",
		 test_tool(), (int)tid, dir);
	assert_int_equal(test_cmd_output(cmd, out, sizeof(out)), 0);
	return out;
}

/* The number after @key in @json, or -1. */
static long long json_num(const char *json, const char *key)
{
	const char *at = strstr(json, key);

	return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

static void perf_backend_measures_wakeup_latency(void **state)
{
	struct napper n = { 0 };
	struct contention busy_cpu0 = { 0 };
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	bool wakes_possible = geteuid() == 0 && test_tracefs_ready();
	char *dir = test_tmpdir("wakeups"), *boot, *j;
	long long known, unknown, sum;
	pthread_t h, s, f;
	(void)state;

	if (!test_start_perf(&c, dir, "wakeups", &st))
		skip();
	assert_int_equal(pthread_create(&h, NULL, hog, &busy_cpu0), 0);
	assert_int_equal(pthread_create(&s, NULL, sleeper, &n), 0);
	assert_int_equal(pthread_create(&f, NULL, forker, &n), 0);
	pthread_join(s, NULL);
	pthread_join(f, NULL);
	busy_cpu0.stop = 1;
	pthread_join(h, NULL);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_true(n.child > 0);
	boot = test_boot_dir(dir);
	assert_non_null(boot);

	j = sched_json(boot, n.sleeper);
	assert_non_null(strstr(j, "\"name\":\"sleeper\""));
	/* The report says what the perf backend cannot see, exits too. */
	assert_non_null(strstr(j, "\"fallbacks\":[{"));
	assert_non_null(strstr(j, "\"backend\":\"perf\""));
	assert_non_null(strstr(j, "not followed past its exit record"));
	known = json_num(j, "\"delay\":{\"count\":");
	sum = json_num(j, "\"sum_ns\":");
	unknown = json_num(j, "\"unknown_delays\":");
	print_message("sleeper: %lld wake-up delays known (%.1f us in all, avg %.1f us), %lld unknown; the kernel's run_delay %.1f us; %llu scheduler records lost\n",
		      known, sum / 1e3, known > 0 ? sum / 1e3 / known : 0.0,
		      unknown, n.run_delay / 1e3,
		      (unsigned long long)st.sched_lost);
	/* Every nap ends in a wait: measured from its waking, or unknown. */
	assert_true(known + unknown >= NAPS * 9 / 10);
	if (wakes_possible) {
		/* Most wakings are the hog's (other processes share CPU 0). */
		assert_true(known >= NAPS / 4);
		/* From sched_waking: a little before the kernel's enqueue. */
		assert_true((uint64_t)sum <= n.run_delay +
					     (uint64_t)known * 50000);
	} else {
		print_message("wake-ups not readable here: waits unknown\n");
		assert_true(unknown >= NAPS * 9 / 10);
	}

	/* Created after the start, never renamed: their creator's name. */
	j = sched_json(boot, n.child);
	print_message("forked child %d: %.200s\n", (int)n.child, j);
	assert_non_null(strstr(j, "\"name\":\"forker\""));
	j = sched_json(boot, n.spawned);
	assert_non_null(strstr(j, "\"name\":\"forker\""));
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

/* A source that cannot be had says why; recording still runs. */
/* ---- the recorder's own threads are not in the trace (perf) ---- */
DIAL9_EVENT_TYPE(t_work, "work", DIAL9_FIELD(U64, n));

struct own {
	pid_t tid[64];
	bool iou[64];
	int n, niou;
	int events, iou_events;	/* of those threads, in the trace */
};

/* The recorder's threads as they are now: dial9-*, io_uring's iou-wrk-*. */
static void own_threads(struct own *o)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	while (d && (de = readdir(d)) && o->n < 64) {
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
		if (strncmp(comm, "dial9-", 6) && strncmp(comm, "iou-wrk-", 8))
			continue;
		o->iou[o->n] = !strncmp(comm, "iou-wrk-", 8);
		o->niou += o->iou[o->n];
		o->tid[o->n++] = atoi(de->d_name);
	}
	if (d)
		closedir(d);
}

static void visit_own(const struct dial9_record *r, void *arg)
{
	struct own *o = arg;
	uint64_t tid = u64f(r, "tid");

	if (strncmp(r->schema->name, "sched.", 6))
		return;
	for (int i = 0; i < o->n; i++) {
		if (tid != (uint64_t)o->tid[i])
			continue;
		/*
		 * no switch of its own; its name may stay, and so may an
		 * application thread's waking of it (not io_uring's)
		 */
		if (!strncmp(r->schema->name, "sched.switch_", 13) || o->iou[i])
			o->events++;
		o->iou_events += o->iou[i];
	}
}

/*
 * With the perf backend the kernel records the recorder's threads too
 * (the events are inherited): the reader leaves out the threads it was
 * told of and the threads they create, io_uring's workers among them
 * (which ran every write before, and whose records in the trace made
 * the next write: the idle recorder's wake-ups, docs/benchmarks.md).
 */
static void perf_backend_leaves_the_recorder_out(void **state)
{
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	char *dir = test_tmpdir("own"), *boot;
	struct own o = { 0 };
	(void)state;

	if (!test_start_perf(&c, dir, "owntest", &st))
		skip();
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 100; i++)
			DIAL9_EMIT(t_work, dial9_u64((uint64_t)i));
		assert_int_equal(dial9_flush(2000), 0);
	}
	own_threads(&o);
	assert_int_equal(dial9_stop(), 0);
	boot = test_boot_dir(dir);
	assert_non_null(boot);
	test_decode_dir(boot, &cnt, visit_own, &o);
	assert_int_equal(cnt.err, 0);
	print_message("%d recorder threads (%d io_uring workers): %d events of them, %d of the workers\n",
		      o.n, o.niou, o.events, o.iou_events);
	assert_true(o.n >= 2);	/* dial9-kread, dial9-flush */
	assert_int_equal(o.events, 0);
	assert_int_equal(o.iou_events, 0);
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

static void no_source_is_reported(void **state)
{
	struct dial9_ksched_opts o = { .system_wide = true };
	struct dial9_ksched *k = NULL;
	char why[512] = "";
	(void)state;

	assert_int_equal(d9_ksched_open(&k, &o, D9_KSCHED_NO_MODULE, 0, why,
				       sizeof(why)),
			 -EOPNOTSUPP);
	assert_null(k);
	assert_non_null(strstr(why, "system-wide recording needs dial9.ko"));
}

/* The bytes of the switches that left the public opts must be 0. */
static void reserved_opts_refused(void **state)
{
	struct dial9_ksched_opts o = { .self = true };
	struct dial9_ksched *k = (struct dial9_ksched *)&o;
	char why[512] = "";
	(void)state;

	for (size_t i = 0; i < sizeof(o.reserved); i++) {
		memset(o.reserved, 0, sizeof(o.reserved));
		o.reserved[i] = 1;
		assert_int_equal(dial9_ksched_open(&k, &o, why, sizeof(why)),
				 -EINVAL);
		assert_null(k);
		assert_non_null(strstr(why, "reserved"));
	}
}

/* Whether this process may make a thread SCHED_FIFO 1. */
static void *nothing(void *arg)
{
	return arg;
}

static bool may_fifo(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	pthread_attr_t a;
	pthread_t t;
	int ret;

	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	ret = pthread_create(&t, &a, nothing, NULL);
	pthread_attr_destroy(&a);
	if (!ret)
		pthread_join(t, NULL);
	return !ret;
}

/*
 * Open the perf source of this process with its reader at SCHED_FIFO 1:
 * 1 if the reader may take it and runs at SCHED_BATCH meanwhile, 0 if it
 * runs at SCHED_BATCH only and the source says why, -1 if there is no
 * perf source here.
 */
static int open_reader(void)
{
	struct dial9_ksched_opts o = { .self = true, .reader_thread = true,
				       .reader_prio = 1 };
	struct dial9_ksched *k = NULL;
	int policy, ret = -1;

	if (d9_ksched_open(&k, &o, D9_KSCHED_NO_MODULE, 0, NULL, 0))
		return -1;
	if (strcmp(dial9_ksched_backend(k), "perf"))
		goto out;
	/* the thread names itself first thing */
	assert_int_equal(access("/proc/self/task", R_OK), 0);
	for (int i = 0; i < 200; i++) {
		pid_t tid = test_thread_tid("dial9-kread");

		policy = tid ? sched_getscheduler(tid) : -1;
		if (policy >= 0)
			break;
		usleep(5000);
	}
	/*
	 * at SCHED_BATCH (a recorder thread, d9_thread_background()),
	 * whether or not it may take SCHED_FIFO
	 */
	if (dial9_ksched_reader_prio(k) == 1 && policy == SCHED_BATCH)
		ret = 1;
	else if (!dial9_ksched_reader_prio(k) && policy == SCHED_BATCH &&
		 strstr(dial9_ksched_fallback_reason(k),
			"reader of the kernel's records may not take SCHED_FIFO 1 when it falls behind"))
		ret = 0;
	else
		print_message("reader prio %u, policy %d, reason: %s\n",
			      dial9_ksched_reader_prio(k), policy,
			      dial9_ksched_fallback_reason(k));
out:
	dial9_ksched_close(k);
	return ret < 0 ? -2 : ret;
}

/*
 * The reader of the kernel's records runs at SCHED_BATCH, and may take
 * SCHED_FIFO where the process may; where it may not (no
 * CAP_SYS_NICE, RLIMIT_RTPRIO 0: a child that gave both up) the source
 * says so.
 */
static void reader_runs_fifo_or_says_why(void **state)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct cd[2];
	struct rlimit rl = { 0, 0 };
	int ret, status;
	pid_t child;
	(void)state;

	ret = open_reader();
	if (ret == -1)
		skip();		/* only where perf events are not permitted */
	assert_int_equal(ret, may_fifo() ? 1 : 0);

	child = fork();
	assert_true(child >= 0);
	if (!child) {
		if (setrlimit(RLIMIT_RTPRIO, &rl) ||
		    syscall(SYS_capget, &h, cd))
			_exit(3);
		cd[0].effective &= ~(1u << CAP_SYS_NICE);
		if (syscall(SYS_capset, &h, cd) || may_fifo())
			_exit(3);
		_exit(open_reader() == 0 ? 0 : 4);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int my_policy(void)
{
	return sched_getscheduler(0);
}

static void spin_cpu_ns(uint64_t ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull +
	       (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec < ns);
}

/*
 * The reader's policy (kreader_rt.c), on this thread: normal until it
 * falls behind, SCHED_FIFO while it is, normal again after 100 ms
 * without; at most 10 ms of CPU a 100 ms window at SCHED_FIFO, then
 * normal until the window ends; what it cost counted.  Without the
 * right to take SCHED_FIFO it never does.
 */
static void reader_takes_fifo_only_behind_and_bounded(void **state)
{
	struct timespec calm = { 0, 120 * 1000000L };
	struct d9_reader_rt rt;
	(void)state;

	d9_reader_rt_init(&rt, 1);
	assert_int_equal(my_policy(), SCHED_OTHER);
	d9_reader_rt_after_read(&rt, false);
	assert_int_equal(my_policy(), SCHED_OTHER);	/* not behind */
	d9_reader_rt_after_read(&rt, true);
	if (!may_fifo()) {
		assert_true(rt.refused);
		assert_int_equal(my_policy(), SCHED_OTHER);
		assert_int_equal(rt.entries, 0);
		d9_reader_rt_end(&rt);
		return;
	}
	assert_int_equal(my_policy(), SCHED_FIFO);
	assert_int_equal(rt.entries, 1);
	d9_reader_rt_after_read(&rt, false);
	assert_int_equal(my_policy(), SCHED_FIFO);	/* not calm for long */
	nanosleep(&calm, NULL);
	d9_reader_rt_after_read(&rt, false);
	assert_int_equal(my_policy(), SCHED_OTHER);	/* calm: normal */
	assert_true(rt.rt_ns >= 100 * 1000000ull);

	d9_reader_rt_after_read(&rt, true);
	assert_int_equal(my_policy(), SCHED_FIFO);
	assert_int_equal(rt.entries, 2);
	spin_cpu_ns(12 * 1000000ull);			/* past its budget */
	d9_reader_rt_after_read(&rt, true);
	assert_int_equal(my_policy(), SCHED_OTHER);
	assert_int_equal(rt.caps, 1);
	d9_reader_rt_after_read(&rt, true);		/* the window goes on */
	assert_int_equal(my_policy(), SCHED_OTHER);
	nanosleep(&calm, NULL);
	d9_reader_rt_after_read(&rt, true);		/* a new window */
	assert_int_equal(my_policy(), SCHED_FIFO);
	assert_int_equal(rt.entries, 3);
	d9_reader_rt_end(&rt);
	assert_int_equal(my_policy(), SCHED_OTHER);
	assert_true(rt.cpu_ns >= 12 * 1000000ull);
}

struct names_seen {
	uint32_t tid;
	unsigned int named;	/* sched.comm of tid, with its name */
	const char *name;	/* NULL: "pong2" */
	uint32_t other;		/* a tid that must not get it */
	unsigned int misnamed;	/* sched.comm of other, with that name */
};

static void count_names(const struct dial9_record *r, void *arg)
{
	struct names_seen *n = arg;
	int tid, name;

	if (r->kind != DIAL9_RECORD_EVENT ||
	    (strcmp(r->schema->name, "sched.comm") &&
	     strcmp(r->schema->name, "sched.thread_name")))
		return;
	const char *want = n->name ? n->name : "pong2";
	tid = dial9_schema_field_index(r->schema, "tid");
	name = dial9_schema_field_index(r->schema, "name");
	if (tid < 0 || name < 0 || r->values[name].str.len != strlen(want) ||
	    memcmp(r->values[name].str.ptr, want, strlen(want)))
		return;
	if (r->values[tid].u64 == n->tid)
		n->named++;
	else if (n->other && r->values[tid].u64 == n->other)
		n->misnamed++;
}

/* b, until a closes its pipe: named @p->name, if any, by itself. */
static void *pong_until_eof(void *arg)
{
	struct pingpong *p = arg;
	char c;

	p->b = (pid_t)syscall(SYS_gettid);
	if (p->name)
		pthread_setname_np(pthread_self(), p->name);
	while (read(p->ab[0], &c, 1) == 1 && write(p->ba[1], &c, 1) == 1)
		;
	return NULL;
}

/* @n round trips with pong_until_eof()'s thread. */
static void pingpong_rounds(struct pingpong *p, int n)
{
	char ch = 'x';

	for (int i = 0; i < n; i++) {
		assert_int_equal(write(p->ab[1], &ch, 1), 1);
		assert_int_equal(read(p->ba[0], &ch, 1), 1);
	}
}

/* Its thread ends (EOF), joined; the pipes closed. */
static void pingpong_end(struct pingpong *p, pthread_t t)
{
	close(p->ab[1]);
	pthread_join(t, NULL);
	close(p->ab[0]);
	close(p->ba[0]);
	close(p->ba[1]);
}

/*
 * A thread named in the first segment has its name in the second too,
 * though the kernel named it once: a segment read alone (a summary, one
 * fetched from S3) names its threads.  The name written again is a
 * sched.thread_name, no kernel record: each CPU's records still add up.
 */
static void names_in_every_segment(void **state)
{
	struct pingpong p = { .name = "pong2" };
	struct names_seen n = { 0 };
	struct test_counts cnt = { 0 };
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	char *dir = test_tmpdir("names"), *boot, path[700];
	pthread_t t;
	(void)state;

	if (!test_start_perf(&c, dir, "namestest", &st))
		skip();		/* only where perf events are not permitted */
	assert_int_equal(pipe(p.ab), 0);
	assert_int_equal(pipe(p.ba), 0);
	assert_int_equal(pthread_create(&t, NULL, pong_until_eof, &p), 0);
	for (int seg = 0; seg < 2; seg++) {
		pingpong_rounds(&p, 50);
		assert_int_equal(dial9_flush(5000), 0);
		if (!seg)
			assert_int_equal(dial9_rotate(), 0);
	}
	pingpong_end(&p, t);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_true(st.segments_sealed >= 2);
	boot = test_boot_dir(dir);
	assert_non_null(boot);
	n.tid = (uint32_t)p.b;
	for (int i = 1; i <= 2; i++) {
		unsigned int before = n.named;

		snprintf(path, sizeof(path), "%s/%08d.dial9", boot, i);
		assert_int_equal(test_decode_file(path, &cnt, count_names, &n), 0);
		if (i == 2)
			assert_true(n.named > before); /* named again */
	}
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

/*
 * A thread renamed by another (pthread_setname_np() on it): the name is
 * the renamed thread's, not the renamer's (perf's comm record names the
 * task renamed in its body, and the one that ran in its trailer).
 */
static void renamed_by_another_thread(void **state)
{
	struct pingpong p = { 0 };
	struct names_seen n = { .name = "ren-by-main" };
	struct test_counts cnt = { 0 };
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	char *dir = test_tmpdir("rename"), *boot;
	pthread_t t;
	(void)state;

	if (!test_start_perf(&c, dir, "renametest", &st))
		skip();
	assert_int_equal(pipe(p.ab), 0);
	assert_int_equal(pipe(p.ba), 0);
	assert_int_equal(pthread_create(&t, NULL, pong_until_eof, &p), 0);
	/* one round trip: the thread runs, its tid is known */
	pingpong_rounds(&p, 1);
	assert_int_equal(pthread_setname_np(t, "ren-by-main"), 0);
	pingpong_rounds(&p, 50);
	pingpong_end(&p, t);
	assert_int_equal(dial9_stop(), 0);
	boot = test_boot_dir(dir);
	assert_non_null(boot);
	n.tid = (uint32_t)p.b;
	n.other = (uint32_t)syscall(SYS_gettid);
	test_decode_dir(boot, &cnt, count_names, &n);
	assert_int_equal(cnt.err, 0);
	print_message("renamed thread named %u times, the renamer %u\n",
		      n.named, n.misnamed);
	assert_true(n.named > 0);
	assert_int_equal(n.misnamed, 0);
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

/* ---- the merge of the CPUs' queues (dial9_ksched_drain) ---- */
struct merged {
	uint64_t t[512];
	unsigned int cpu[512], seq[512], n;
};

static void merged_add(void *ctx, const struct dial9_rec_header *h)
{
	struct merged *m = ctx;
	const struct dial9_rec_lost *lr = (const void *)h;

	assert_true(m->n < 512);
	m->t[m->n] = h->time_ns;
	m->cpu[m->n] = h->cpu;
	m->seq[m->n++] = (unsigned int)lr->count;
}

/*
 * Records of 4 CPUs, each queue in time order, many equal times: drain
 * releases exactly those older than the horizon, ordered by time, then
 * CPU, then queue order, as a full sort would; the rest stay queued.
 */
static void merge_orders_by_time_then_cpu(void **state)
{
	enum { NCPU = 4 };
	(void)state;

	srand(7);
	for (int trial = 0; trial < 200; trial++) {
		struct d9_kq q[NCPU] = { 0 };
		struct dial9_ring_ctrl *ctrl[NCPU] = { 0 };
		struct dial9_ksched k = { .ncpu = NCPU, .q = q, .ctrl = ctrl,
					  .fd = -1 };
		unsigned int count[NCPU], seq = 0, left = 0;
		uint64_t horizon = 1 + (uint64_t)(rand() % 40);
		struct merged m = { .n = 0 };
		int n;

		for (unsigned int c = 0; c < NCPU; c++) {
			uint64_t t = (uint64_t)(rand() % 4);

			count[c] = (unsigned int)(rand() % 30);
			for (unsigned int i = 0; i < count[c]; i++) {
				struct dial9_rec_lost lr = {
					.hdr = { .type = DIAL9_REC_LOST,
						 .size = sizeof(lr),
						 .cpu = (uint16_t)c,
						 .time_ns = t },
					.count = seq++,
				};

				assert_int_equal(d9_kq_push(&q[c], &lr,
							    sizeof(lr)), 0);
				left += t >= horizon;
				t += (uint64_t)(rand() % 3);	/* ties */
			}
		}
		n = dial9_ksched_drain(&k, horizon, merged_add, &m);
		assert_int_equal(n, (int)(seq - left));
		assert_int_equal(m.n, seq - left);
		for (unsigned int i = 0; i < m.n; i++) {
			assert_true(m.t[i] < horizon);
			if (!i)
				continue;
			/* time, then CPU; within a CPU, queue order */
			assert_true(m.t[i - 1] < m.t[i] ||
				    (m.t[i - 1] == m.t[i] &&
				     (m.cpu[i - 1] < m.cpu[i] ||
				      (m.cpu[i - 1] == m.cpu[i] &&
				       m.seq[i - 1] < m.seq[i]))));
		}
		for (unsigned int c = 0; c < NCPU; c++) {
			const struct dial9_rec_header *h = d9_kq_peek(&q[c]);

			assert_true(!h || h->time_ns >= horizon);
			free(q[c].buf);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(perf_backend_records_switches_and_wakeups),
		cmocka_unit_test(perf_backend_measures_wakeup_latency),
		cmocka_unit_test(perf_backend_leaves_the_recorder_out),
		cmocka_unit_test(schedstat_backend_samples_waits),
		cmocka_unit_test(no_source_is_reported),
		cmocka_unit_test(reserved_opts_refused),
		cmocka_unit_test(reader_runs_fifo_or_says_why),
		cmocka_unit_test(reader_takes_fifo_only_behind_and_bounded),
		cmocka_unit_test(names_in_every_segment),
		cmocka_unit_test(renamed_by_another_thread),
		cmocka_unit_test(merge_orders_by_time_then_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
