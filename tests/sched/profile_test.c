// SPDX-License-Identifier: GPL-2.0
/*
 * libdial9's CPU profile (DIAL9_CPU_SAMPLE_HZ) with the real module, and
 * with the perf backend as the VM's root may use it: a thread spinning
 * in a known hot function (tests/kmod/hot_chain.h; this file is built
 * with -fno-omit-frame-pointer) has it on top of `dial9 flame --on-cpu`
 * (the most samples, called from spin), named from this program's
 * symbols, from the time dial9_start() returned (--from: before it, the
 * recorder's own start in this thread, pre-faulting its buffers, is
 * sampled too, and on a loaded VM can take as long); every sample is of
 * the recorded thread (not of a process spinning beside it, nor of the
 * recorder's own threads); none at 0 Hz.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "dial9.h"
#include "../kmod/hot_chain.h"
#include "../kmod/stack_chain.h"
#include "cmd.h"
#include "kselftest_harness.h"

/* The output of @cmd (NUL-terminated, to free) and its exit status. */
static char *run(const char *cmd, int *status)
{
	size_t cap = 1 << 20;
	char *out = malloc(cap);

	if (!out) {
		*status = -1;
		return NULL;
	}
	*status = test_cmd_output(cmd, out, cap);
	if (*status == -1) {
		free(out);
		return NULL;
	}
	return out;
}

/*
 * Record this thread spinning in hot() for @ms of CPU time, at @hz, from
 * @sched, with a process the recorder does not follow spinning on the
 * same CPU (*@other: its pid, forked before the recording starts: perf's
 * events are inherited by what the recorded process forks after); the
 * stats at the end in @st.
 */
static uint64_t started_ns;	/* CLOCK_MONOTONIC when dial9_start() returned */

static int record(const char *dir, uint32_t hz, enum dial9_sched sched,
		  unsigned int ms, pid_t *other, struct dial9_stats *st)
{
	struct timespec ts;
	struct dial9_config cfg;
	struct hot h = { 0 };
	cpu_set_t s;
	int ret, status;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
	dial9_config_init(&cfg);
	cfg.trace_dir = dir;
	cfg.cpu_sample_hz = hz;
	cfg.sched = sched;
	*other = fork();
	if (!*other) {
		struct hot oh = { 0 };

		spin(&oh, 10000);
		_exit(0);
	}
	ret = dial9_start(&cfg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	started_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (!ret)
		spin(&h, ms);
	kill(*other, SIGKILL);
	waitpid(*other, &status, 0);
	if (ret)
		return ret;
	ret = dial9_stop();
	st->size = sizeof(*st);
	if (!ret)
		ret = dial9_get_stats(st);
	return ret;
}

/* Every line's thread is "NAME @tid" and the first ends in ;spin;hot N. */
static void check_flame(struct __test_metadata *_metadata, const char *dir,
			pid_t other)
{
	char cmd[256], label[32], bad[32];
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int status, lines = 0;
	const char *first_end;
	char *out, *line;

	snprintf(cmd, sizeof(cmd), "dial9 flame --on-cpu --from %" PRIu64
		 ".%09" PRIu64 " %s", started_ns / 1000000000u,
		 started_ns % 1000000000u, dir);
	out = run(cmd, &status);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, status) TH_LOG("%s: %s", cmd, out);
	snprintf(label, sizeof(label), " %d;", tid);
	snprintf(bad, sizeof(bad), " %d;", other);
	first_end = strchr(out, '\n');
	ASSERT_NE(NULL, first_end);
	TH_LOG("%.*s", (int)(first_end - out), out);
	/* the most samples: in hot(), called from spin() */
	EXPECT_NE(NULL, strstr(out, ";spin;hot "));
	EXPECT_TRUE(strstr(out, ";spin;hot ") < first_end)
		TH_LOG("hot() is not on top:\n%.2000s", out);
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		lines++;
		EXPECT_NE(NULL, strstr(line, label)) TH_LOG("%s", line);
		EXPECT_EQ(NULL, strstr(line, bad)) TH_LOG("%s", line);
	}
	EXPECT_GT(lines, 0);
	free(out);

	snprintf(cmd, sizeof(cmd), "dial9 flame --on-cpu --svg %s", dir);
	out = run(cmd, &status);
	ASSERT_NE(NULL, out);
	EXPECT_EQ(0, status);
	EXPECT_NE(NULL, strstr(out, "<title>hot ("));
	EXPECT_NE(NULL, strstr(out, "</svg>"));
	free(out);
}

/* 300 ms of CPU at 1000 Hz from @sched, which must be @backend. */
static void hot_on_top(struct __test_metadata *_metadata,
		       enum dial9_sched sched, const char *backend)
{
	struct dial9_stats st;
	char dir[64];
	pid_t other;

	snprintf(dir, sizeof(dir), "/tmp/d9-profile-%s-%d", backend, getpid());
	ASSERT_EQ(0, record(dir, 1000, sched, 300, &other, &st));
	TH_LOG("%s: %" PRIu64 " samples at %u Hz, %" PRIu64 " records lost",
	       st.sched_backend, st.sched_samples, st.cpu_sample_hz,
	       st.sched_lost);
	ASSERT_STREQ(backend, st.sched_backend);
	EXPECT_EQ(1000, st.cpu_sample_hz);
	/* 300 ms of CPU at 1000 Hz, shared with the spinner: some dozens */
	EXPECT_GE(st.sched_samples, 20);
	check_flame(_metadata, dir, other);
}

TEST(module_samples_put_the_hot_function_on_top)
{
	hot_on_top(_metadata, DIAL9_SCHED_AUTO, "dial9.ko");
}

TEST(perf_samples_put_the_hot_function_on_top)
{
	hot_on_top(_metadata, DIAL9_SCHED_PERF, "perf");
}

TEST(no_samples_at_zero_hz)
{
	struct dial9_stats st;
	char dir[64], cmd[160];
	pid_t other;
	int status;
	char *out;

	snprintf(dir, sizeof(dir), "/tmp/d9-profile0-%d", getpid());
	ASSERT_EQ(0, record(dir, 0, DIAL9_SCHED_AUTO, 100, &other, &st));
	ASSERT_STREQ("dial9.ko", st.sched_backend);
	EXPECT_EQ(0, st.sched_samples);
	EXPECT_EQ(0, st.cpu_sample_hz);
	EXPECT_GT(st.sched_events, 0);
	snprintf(cmd, sizeof(cmd), "dial9 flame --on-cpu %s 2>&1", dir);
	out = run(cmd, &status);
	ASSERT_NE(NULL, out);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	EXPECT_NE(NULL, strstr(out, "no CPU samples in these traces"));
	free(out);
}

/*
 * The command of the test below (D9_PROFILE_SPIN_MS set): it forks a
 * child and both spin in hot() on CPU 0 for that many ms of CPU, then it
 * prints both pids.
 */
__attribute__((constructor)) static void profile_command(void)
{
	const char *ms = getenv("D9_PROFILE_SPIN_MS");
	struct hot h = { 0 };
	cpu_set_t s;
	pid_t kid;

	if (getenv("D9_PROFILE_BLOCK")) {
		struct chain ch = { 0 };
		int p[2];

		/* blocks in a() -> b() -> c() -> read(2) until its child writes */
		if (pipe(p))
			_exit(2);
		kid = fork();
		if (!kid) {
			usleep(50000);
			_exit(write(p[1], "x", 1) == 1 ? 0 : 1);
		}
		ch.fd = p[0];
		if (a(&ch) != 1)
			_exit(3);
		waitpid(kid, NULL, 0);
		printf("PID %d\n", (int)getpid());
		fflush(stdout);
		_exit(0);
	}
	if (!ms)
		return;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
	kid = fork();
	spin(&h, (unsigned int)atoi(ms));
	if (!kid)
		_exit(0);
	waitpid(kid, NULL, 0);
	printf("%d %d\n", (int)getpid(), (int)kid);
	fflush(stdout);
	_exit(0);
}

/* Whether a line of @out is of thread @tid and ends in ;spin;hot N. */
static bool hot_line_of(const char *out, pid_t tid)
{
	char label[32];

	snprintf(label, sizeof(label), " %d;", tid);
	for (const char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		const char *end = strchr(l, '\n'), *at = strstr(l, label),
			   *hot = strstr(l, ";spin;hot ");

		if (!end)
			end = l + strlen(l);
		if (at && at < end && hot && hot < end)
			return true;
	}
	return false;
}

/*
 * `ENV dial9 record OPTS -o DIR -- this program` (DIR: /tmp/d9-profile-
 * @tag-PID, into @dir), its output (stdout, and stderr with @err), and
 * its exit status in *@status; NULL if it could not run.
 */
static char *record_self(const char *env, const char *opts, const char *tag,
			 bool err, char *dir, size_t dlen, int *status)
{
	char self[512], cmd[1024];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = 0;
	snprintf(dir, dlen, "/tmp/d9-profile-%s-%d", tag, getpid());
	snprintf(cmd, sizeof(cmd), "%s dial9 record %s -o %s -- %s%s", env,
		 opts, dir, self, err ? " 2>&1" : "");
	return run(cmd, status);
}

/*
 * dial9 record -- CMD --children: the command runs from a fork of dial9
 * itself until its exec, and its child starts after the recording did;
 * both have their frames named (their mappings written at their first
 * sample, and again after the exec, read from the exec on).
 */
TEST(record_names_the_command_and_its_child)
{
	char dir[64], cmd[256], *out;
	int status, cmd_pid = 0, kid = 0;

	out = record_self("D9_PROFILE_SPIN_MS=300", "--cpu-hz 1000 --children",
			  "rec", false, dir, sizeof(dir), &status);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, status) TH_LOG("%s", out);
	ASSERT_EQ(2, sscanf(out, "%d %d", &cmd_pid, &kid)) TH_LOG("%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "dial9 flame --on-cpu %s", dir);
	out = run(cmd, &status);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, status) TH_LOG("%s: %s", cmd, out);
	TH_LOG("command %d, its child %d:\n%.1500s", cmd_pid, kid, out);
	EXPECT_TRUE(hot_line_of(out, cmd_pid));
	EXPECT_TRUE(hot_line_of(out, kid));
	free(out);
}

/*
 * dial9 record --stacks -- CMD: the command blocks in a known chain; the
 * off-CPU flame graph has it, named, and the summary counts the stacks.
 */
TEST(record_stacks_show_where_the_command_blocked)
{
	char dir[64], cmd[256], label[32], *out, *at;
	int status, pid = 0;

	out = record_self("D9_PROFILE_BLOCK=1", "--stacks --cpu-hz 0", "stk",
			  true, dir, sizeof(dir), &status);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, status) TH_LOG("%s", out);
	at = strstr(out, "PID ");
	ASSERT_NE(NULL, at) TH_LOG("%s", out);
	pid = atoi(at + 4);
	EXPECT_NE(NULL, strstr(out, " user stacks")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, ": 0 user stacks")) TH_LOG("%s", out);
	TH_LOG("%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "dial9 flame %s", dir);
	out = run(cmd, &status);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, status) TH_LOG("%s: %s", cmd, out);
	snprintf(label, sizeof(label), " %d;", pid);
	TH_LOG("%.1500s", out);
	{
		bool found = false;

		for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
			found |= strstr(l, label) && strstr(l, ";a;b;c ");
		EXPECT_TRUE(found) TH_LOG("no line of %d ends in ;a;b;c", pid);
	}
	free(out);
}

TEST_HARNESS_MAIN
