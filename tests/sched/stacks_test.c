// SPDX-License-Identifier: GPL-2.0
/*
 * libdial9 with DIAL9_SCHED_STACKS and the real module: a thread that
 * blocks in a() -> b() -> c() -> read(2) (tests/kmod/stack_chain.h; this
 * file is built with -fno-omit-frame-pointer) and then waits behind
 * another thread shows, in `dial9 sched --explain --json`, the stack it
 * blocked with, as this program's file offsets of the chain, read from the
 * trace's own mappings; and beside it the stack of the thread that woke
 * it, which wakes it from the same chain with write(2).  And through the
 * worker (write-back): the shipped segments carry the chain's names
 * (their symbol table), which dial9 flame prints with this program's
 * file renamed away.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "dial9.h"
#include "../kmod/stack_chain.h"
#include "cmd.h"
#include "kselftest_harness.h"

static void pin0(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* On CPU 0 at SCHED_IDLE: once woken it waits for the spinning main. */
static void *blocker(void *arg)
{
	struct sched_param sp = { 0 };
	struct chain *ch = arg;

	pin0();
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	__atomic_store_n(&ch->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	return (void *)a(ch);
}

/*
 * Wait (10 s at most) until the blocker sleeps in its read(): a fixed
 * sleep is not enough at SCHED_IDLE on a loaded vCPU, where the recorder's
 * threads can keep it from reaching the read for longer.
 */
static void wait_blocked(const struct chain *ch)
{
	for (int i = 0; i < 10000; i++) {
		pid_t tid = __atomic_load_n(&ch->tid, __ATOMIC_ACQUIRE);
		char path[64], buf[64] = "";
		FILE *f;

		if (tid) {
			snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
				 tid);
			f = fopen(path, "r");
			if (f) {
				if (!fgets(buf, sizeof(buf), f))
					buf[0] = 0;
				fclose(f);
			}
			/* its syscall's number first: 0, read(), and asleep */
			if (!strncmp(buf, "0 ", 2))
				return;
		}
		usleep(1000);
	}
}

static void spin_ms(int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000
	       < ms);
}

/* "name+0xoffset" of @addr in this program, from /proc/self/maps. */
static int exe_frame(uintptr_t addr, char *buf, size_t len)
{
	char exe[PATH_MAX], line[PATH_MAX + 128];
	const char *base;
	FILE *f;
	int ret = -ENOENT;

	if (!realpath("/proc/self/exe", exe))
		return -errno;
	base = strrchr(exe, '/') + 1;
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char path[PATH_MAX] = "";

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &start,
			   &end, &off, path) == 4 && !strcmp(path, exe) &&
		    addr >= start && addr < end) {
			snprintf(buf, len, "%s+0x%llx", base,
				 (unsigned long long)(addr - start + off));
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

TEST(explain_shows_the_blocked_chain)
{
	char dir[64], cmd[160], want[512], f0[160], f1[160], f2[160];
	char wwant[512], w0[160], w1[160], w2[160];
	struct dial9_config cfg;
	struct chain ch = { 0 }, wk = { .nr = SYS_write };
	size_t cap = 1 << 20;
	char *out = malloc(cap);
	pthread_t t;
	int p[2];

	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, pipe(p));
	ch.fd = p[0];
	snprintf(dir, sizeof(dir), "/tmp/d9-stacks-%d", getpid());
	dial9_config_init(&cfg);
	cfg.trace_dir = dir;
	cfg.sched_flags |= DIAL9_SCHED_STACKS;
	ASSERT_EQ(0, dial9_start(&cfg));
	pin0();
	ASSERT_EQ(0, pthread_create(&t, NULL, blocker, &ch));
	wait_blocked(&ch);
	/*
	 * A fresh slice for the waking: at the end of one (need_resched
	 * already set) the kernel skips the clock update of the switch to
	 * the woken blocker (rq_clock_skip_update) and counts its wait as
	 * 0, which leaves no delay to carry the waker's stack.
	 */
	usleep(500);
	wk.fd = p[1];
	ASSERT_EQ(1, a(&wk));	/* the waking, from the chain */
	spin_ms(5);	/* the woken blocker waits behind this (mostly) */
	pthread_join(t, NULL);
	ASSERT_EQ(0, dial9_stop());
	ASSERT_NE(0, ch.site);
	ASSERT_EQ(0, exe_frame(ch.site, f0, sizeof(f0)));
	ASSERT_EQ(0, exe_frame(ch.in_b, f1, sizeof(f1)));
	ASSERT_EQ(0, exe_frame(ch.in_a, f2, sizeof(f2)));
	snprintf(want, sizeof(want), "\"stack\":[\"%s\",\"%s\",\"%s\"", f0,
		 f1, f2);
	TH_LOG("want %s", want);
	ASSERT_EQ(0, exe_frame(wk.site, w0, sizeof(w0)));
	ASSERT_EQ(0, exe_frame(wk.in_b, w1, sizeof(w1)));
	ASSERT_EQ(0, exe_frame(wk.in_a, w2, sizeof(w2)));
	snprintf(wwant, sizeof(wwant), "\"waker_stack\":[\"%s\",\"%s\",\"%s\"",
		 w0, w1, w2);

	/*
	 * Every wait, not only those of 1 ms or more: on 6.12 (EEVDF) the
	 * woken blocker may run before main's spin and wait less than that,
	 * and the waker's stack is on that wait.
	 */
	snprintf(cmd, sizeof(cmd),
		 "dial9 sched --explain --no-symbols --min-delay 1 --json %s",
		 dir);
	ASSERT_EQ(0, test_cmd_output(cmd, out, cap));
	EXPECT_NE(NULL, strstr(out, want)) {
		const char *d = strstr(out, "\"delays\"");

		TH_LOG("%.2000s", d ? d : out);
	}
	EXPECT_NE(NULL, strstr(out, wwant)) {
		const char *d = strstr(out, "\"delays\"");

		TH_LOG("want %s in %.2000s", wwant, d ? d : out);
	}

	/*
	 * dial9 flame: the chain outermost first, with its time off-CPU; as
	 * offsets, then named from this program's symbols (libelf).
	 */
	for (int named = 0; named < 2; named++) {
		const char *hit;

		if (named)
			snprintf(want, sizeof(want), ";a;b;c ");
		else
			snprintf(want, sizeof(want), ";%s;%s;%s ", f2, f1, f0);
		snprintf(cmd, sizeof(cmd), "dial9 flame %s--tid %d %s",
			 named ? "" : "--no-symbols ", ch.tid, dir);
		ASSERT_EQ(0, test_cmd_output(cmd, out, cap));
		hit = strstr(out, want);
		EXPECT_NE(NULL, hit)
			TH_LOG("%s: want %s in:\n%.2000s", cmd, want, out);
		if (hit)
			EXPECT_LT(0, atol(hit + strlen(want)));
	}
	free(out);
}

TEST(shipped_segments_carry_the_names)
{
	char dir[64], wb[64], cmd[320], exe[PATH_MAX], away[PATH_MAX + 8];
	struct dial9_config cfg;
	struct dial9_stats st = { .size = sizeof(st) };
	struct chain ch = { 0 }, wk = { .nr = SYS_write };
	size_t cap = 1 << 20;
	char *out = malloc(cap);
	pthread_t t;
	int p[2];

	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, pipe(p));
	ch.fd = p[0];
	snprintf(dir, sizeof(dir), "/tmp/d9-stacks-wb-%d", getpid());
	snprintf(wb, sizeof(wb), "/tmp/d9-stacks-shipped-%d", getpid());
	dial9_config_init(&cfg);
	cfg.trace_dir = dir;
	cfg.sched_flags |= DIAL9_SCHED_STACKS;	/* symbols: on by default */
	cfg.pipeline = DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK;
	cfg.write_back_dir = wb;
	ASSERT_EQ(0, dial9_start(&cfg));
	pin0();
	ASSERT_EQ(0, pthread_create(&t, NULL, blocker, &ch));
	wait_blocked(&ch);
	wk.fd = p[1];
	ASSERT_EQ(1, a(&wk));
	spin_ms(5);
	pthread_join(t, NULL);
	ASSERT_EQ(0, dial9_stop());
	ASSERT_EQ(0, dial9_get_stats(&st));
	TH_LOG("symbol tables: %llu segments, %llu named, %llu not, %llu capped, %llu failed",
	       (unsigned long long)st.symbols_segments,
	       (unsigned long long)st.symbols_named,
	       (unsigned long long)st.symbols_unnamed,
	       (unsigned long long)st.symbols_capped,
	       (unsigned long long)st.symbols_failed);
	EXPECT_LE(1, st.symbols_segments);
	EXPECT_LE(3, st.symbols_named);	/* a, b, c at least */
	EXPECT_EQ(0, st.symbols_failed);

	/* this program gone from where the trace says it was */
	ASSERT_NE(NULL, realpath("/proc/self/exe", exe));
	snprintf(away, sizeof(away), "%s.away", exe);
	ASSERT_EQ(0, rename(exe, away));
	snprintf(cmd, sizeof(cmd), "dial9 flame --tid %d %s 2>&1", ch.tid, wb);
	EXPECT_EQ(0, test_cmd_output(cmd, out, cap));
	EXPECT_NE(NULL, strstr(out, ";a;b;c "))
		TH_LOG("%s: want ;a;b;c in:\n%.2000s", cmd, out);
	EXPECT_NE(NULL, strstr(out, "named from the trace's symbol table"))
		TH_LOG("%s: no note of the table in:\n%.2000s", cmd, out);
	/* --no-symbols: offsets, table or not */
	snprintf(cmd, sizeof(cmd), "dial9 flame --no-symbols --tid %d %s "
		 "2>/dev/null", ch.tid, wb);
	EXPECT_EQ(0, test_cmd_output(cmd, out, cap));
	EXPECT_EQ(NULL, strstr(out, ";a;b;c "))
		TH_LOG("%s: names with --no-symbols:\n%.2000s", cmd, out);
	EXPECT_NE(NULL, strstr(out, ".away") ? NULL : strstr(out, "+0x"))
		TH_LOG("%s: no offsets in:\n%.2000s", cmd, out);
	ASSERT_EQ(0, rename(away, exe));
	free(out);
}

TEST_HARNESS_MAIN
