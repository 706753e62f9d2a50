// SPDX-License-Identifier: MIT
/*
 * test_culprits_perf.c - what ran while a thread waited, from the perf
 * backend on the host's own kernel: with CPU-wide switch events (root,
 * as in CI) the other processes on the thread's CPU are named, as
 * dial9.ko's occupants name them (tests/stock/culprits.sh checks those
 * against perf sched in the VM).
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "cmd.h"
#include "helpers.h"

#define LOOPS 150

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Another process on CPU 0, always busy, until killed. */
static pid_t start_hog(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_NAME, "d9-hog");
		test_pin0();
		for (;;)
			;
	}
	return pid;
}

/*
 * A thread on CPU @cpu: busy @busy_ms, then asleep 1 ms, LOOPS times;
 * the kernel's run_delay of it at the end.
 */
struct sleeper {
	int cpu, busy_ms;
	const char *name;
	pid_t tid;
	uint64_t run_delay;
};

static void *sleeper(void *arg)
{
	struct sleeper *v = arg;
	struct timespec nap = { 0, 1000000 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(v->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	pthread_setname_np(pthread_self(), v->name);
	v->tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < LOOPS; i++) {
		uint64_t t0 = now_ns();

		while (now_ns() - t0 < (uint64_t)v->busy_ms * 1000000)
			;
		nanosleep(&nap, NULL);
	}
	v->run_delay = test_run_delay(v->tid);
	return NULL;
}

/* `dial9 sched --culprits --json --tid TID DIR` */
static char *culprits_json(const char *dir, pid_t tid)
{
	static char out[1 << 16];
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "%s sched --culprits --json --tid %d %s",
		 test_tool(), (int)tid, dir);
	assert_int_equal(test_cmd_output(cmd, out, sizeof(out)), 0);
	return out;
}

/* The "ns" of the culprit named @name in @list, -1 if none. */
static long long culprit_ns(const char *list, const char *name, long long *pid)
{
	char key[64];
	const char *at, *p;

	snprintf(key, sizeof(key), "{\"name\":\"%s\"", name);
	at = strstr(list, key);
	if (!at)
		return -1;
	p = strstr(at, "\"pid\":");
	if (pid)
		*pid = p ? strtoll(p + 6, NULL, 10) : -1;
	p = strstr(at, "\"ns\":");
	return p ? strtoll(p + 5, NULL, 10) : -1;
}

static void perf_backend_names_other_processes(void **state)
{
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	/* busy 2 ms, asleep 1 ms beside the hog: it waits preempted and woken */
	struct sleeper v = { .cpu = 0, .busy_ms = 2, .name = "d9-victim" };
	/* asleep on CPU 1, alone there: woken onto an idle CPU */
	struct sleeper nap = { .cpu = 1, .name = "d9-napper" };
	char *dir = test_tmpdir("occperf"), *boot, *j, *list, *end;
	long long hog_ns, others_ns, hog_pid = 0, all = 0, unknown;
	bool wakes;
	pthread_t t;
	pid_t hog;
	(void)state;

	if (geteuid() != 0) {
		free(dir);
		skip();		/* CPU-wide events: CAP_PERFMON */
	}
	wakes = test_tracefs_ready();
	hog = start_hog();
	assert_true(hog > 0);
	if (!test_start_perf(&c, dir, "occperf", &st)) {
		/* only where perf events are not permitted at all */
		kill(hog, SIGKILL);
		waitpid(hog, NULL, 0);
		skip();
	}
	assert_int_equal(pthread_create(&t, NULL, sleeper, &v), 0);
	pthread_join(t, NULL);
	/* then, where there is another CPU, a thread woken onto it idle */
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
		assert_int_equal(pthread_create(&t, NULL, sleeper, &nap), 0);
		pthread_join(t, NULL);
	}
	assert_int_equal(dial9_stop(), 0);
	kill(hog, SIGKILL);
	waitpid(hog, NULL, 0);

	boot = test_boot_dir(dir);
	assert_non_null(boot);
	j = culprits_json(boot, v.tid);
	if (strstr(j, "are not named (CPU-wide switch events need")) {
		/* root without CAP_PERFMON (a container): the trace says so */
		print_message("CPU-wide events refused here: %.300s\n",
			      strstr(j, "\"fallbacks\""));
		free(boot);
		test_rm_rf(dir);
		free(dir);
		skip();
	}
	/* every wake-up read (CPU-wide): the waits are known */
	unknown = strstr(j, "\"unknown_delays\":") ?
		  strtoll(strstr(j, "\"unknown_delays\":") + 17, NULL, 10) : -1;
	list = strstr(j, "\"culprits\":[");
	assert_non_null(list);
	end = strchr(list, ']');
	assert_non_null(end);
	*end = 0;
	for (const char *p = list; (p = strstr(p, "\"ns\":")); p += 5)
		all += strtoll(p + 5, NULL, 10);
	hog_ns = culprit_ns(list, "d9-hog", &hog_pid);
	others_ns = culprit_ns(list, "(other processes)", NULL);
	print_message("victim %d: %lld waits unknown; culprits %.1f ms in all (the kernel's run_delay %.1f ms), d9-hog %.1f ms, (other processes) %.1f ms: %.300s\n",
		      (int)v.tid, unknown, all / 1e6, v.run_delay / 1e6,
		      hog_ns / 1e6, others_ns / 1e6, list);
	/* the other process by name and pid, most of what ran */
	assert_true(hog_ns > 0);
	assert_int_equal(hog_pid, hog);
	assert_true(hog_ns * 2 > all);
	assert_true(others_ns < hog_ns);
	/* and no more than the kernel's own total */
	assert_true((uint64_t)all <= v.run_delay + v.run_delay / 20 + 5000000);
	if (wakes) {
		/* each wait known, from its waking: most of the total */
		assert_true(unknown >= 0 && unknown <= LOOPS / 20);
		assert_true((uint64_t)all >= v.run_delay * 8 / 10);
	} else {
		print_message("wake-ups not readable here: woken waits unknown\n");
	}

	/*
	 * An idle CPU holds no queued task: a task woken onto one is queued
	 * as it leaves idle, so its waits never hold the idle task.
	 */
	if (nap.tid) {
		j = culprits_json(boot, nap.tid);
		list = strstr(j, "\"culprits\":[");
		assert_non_null(list);
		print_message("napper %d, woken onto idle CPU 1: %.300s\n",
			      (int)nap.tid, list);
		assert_int_equal(culprit_ns(list, "(idle)", NULL), -1);
	}
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(perf_backend_names_other_processes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
