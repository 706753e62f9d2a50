// SPDX-License-Identifier: GPL-2.0
/*
 * A session's kernel memory beyond its rings: every open() holds a
 * session and its target table (128 KiB of vmalloc) whether or not it
 * maps or enables anything.  It is charged to the opener's memory cgroup,
 * counted in its user's user_ring_kb, and one unprivileged user holds at
 * most user_sessions sessions (EMFILE past it).  A cgroup too small for
 * an allocation gets ENOMEM, not its OOM killer.
 */
#include "dial9_test.h"
#include <grp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

#define PARAMS		"/sys/module/dial9/parameters/"
#define SESSIONS	PARAMS "user_sessions"
#define RING_KB		PARAMS "user_ring_kb"
#define CGROOT		"/sys/fs/cgroup"
#define MAX_FDS		200

static long read_long(const char *path)
{
	return (long)d9_read_number(path);
}

static int write_long(const char *path, long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%ld", v);
	return d9_write_file(path, s);
}

/* The value of @key in a flat keyed file (memory.events). */
static long read_key(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char k[64];
	long v, ret = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", k, &v) == 2)
		if (!strcmp(k, key))
			ret = v;
	fclose(f);
	return ret;
}

/* A child's end: what it printed goes out first. */
static void quit(int code)
{
	fflush(stdout);
	_exit(code);
}

static int drop_privileges(void)
{
	return setgroups(0, NULL) || setgid(65534) || setuid(65534) ? -1 : 0;
}

/*
 * Open sessions into @fds until one fails or @max are open: the number
 * open, and the failure's errno in *@err (0 if none failed).
 */
static int open_many(int *fds, int max, int *err)
{
	int n = 0;

	*err = 0;
	while (n < max) {
		fds[n] = open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC);
		if (fds[n] < 0) {
			*err = errno;
			break;
		}
		n++;
	}
	return n;
}

static void close_many(int *fds, int n)
{
	while (n > 0)
		close(fds[--n]);
}

/* cgroup v2 with the memory controller for children of the root, or -1. */
static int cgroup_ready(void)
{
	mkdir(CGROOT, 0755);
	if (read_long(CGROOT "/cgroup.procs") < 0 &&
	    mount("cgroup2", CGROOT, "cgroup2", 0, NULL))
		return -1;
	return d9_write_file(CGROOT "/cgroup.subtree_control", "+memory") ?
	       -1 : 0;
}

static long cg_read(const char *cg, const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return read_long(path);
}

static int cg_write(const char *cg, const char *file, long v)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return write_long(path, v);
}

/*
 * One unprivileged user holds at most user_sessions sessions (default
 * 64): the next open() fails with EMFILE, a closed one makes room; root
 * is not limited, and 0 means no limit.
 */
TEST(unprivileged_sessions_are_capped_per_user)
{
	long old = read_long(SESSIONS);
	int st, i;
	pid_t kid;

	ASSERT_EQ(64, old) TH_LOG("no %s, or not its default", SESSIONS);
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		int fds[MAX_FDS], n, err;

		if (drop_privileges())
			quit(10);
		n = open_many(fds, MAX_FDS, &err);
		printf("# uid 65534: %d sessions open, then %s\n", n,
		       strerror(err));
		if (n != 64 || err != EMFILE)
			quit(11);
		close(fds[--n]);
		fds[n] = open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC);
		if (fds[n] < 0)
			quit(12);	/* the closed one gave its place back */
		n++;
		if (open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC) >= 0 ||
		    errno != EMFILE)
			quit(13);
		close_many(fds, n);
		quit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st))
		TH_LOG("step %d failed (11: not 64 then EMFILE, 12: no place after a close, 13: not EMFILE again)",
		       WEXITSTATUS(st));
	{
		int fds[MAX_FDS], n, err;

		/* root: past the limit, yet allowed */
		n = open_many(fds, 70, &err);
		close_many(fds, n);
		EXPECT_EQ(70, n) TH_LOG("root: %s", strerror(err));
	}
	/* a smaller limit, then none */
	for (i = 0; i < 2; i++) {
		long limit = i ? 0 : 3;

		ASSERT_EQ(0, write_long(SESSIONS, limit));
		kid = fork();
		ASSERT_LE(0, kid);
		if (!kid) {
			int fds[MAX_FDS], n, err;

			if (drop_privileges())
				quit(10);
			n = open_many(fds, 70, &err);
			close_many(fds, n);
			printf("# user_sessions=%ld: %d sessions open, then %s\n",
			       limit, n, err ? strerror(err) : "none failed");
			quit(limit ? n != 3 || err != EMFILE : n != 70);
		}
		ASSERT_EQ(kid, waitpid(kid, &st, 0));
		ASSERT_TRUE(WIFEXITED(st));
		EXPECT_EQ(0, WEXITSTATUS(st))
			TH_LOG("user_sessions=%ld not kept", limit);
	}
	EXPECT_EQ(0, write_long(SESSIONS, old));
}

/*
 * The session and its target table count in user_ring_kb: with 1 MiB,
 * an unprivileged user opens 7 sessions (each more than 128 KiB and
 * less than 146), the 8th open() fails with EDQUOT, and a closed one
 * gives its share back.
 */
TEST(open_counts_in_user_ring_kb)
{
	long old = read_long(RING_KB);
	int st;
	pid_t kid;

	ASSERT_LE(0, old) TH_LOG("no %s", RING_KB);
	ASSERT_EQ(0, write_long(RING_KB, 1024));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		int fds[MAX_FDS], n, err, fd;

		if (drop_privileges())
			quit(10);
		n = open_many(fds, 60, &err);
		printf("# user_ring_kb=1024: %d sessions open, then %s\n", n,
		       err ? strerror(err) : "none failed");
		if (n != 7 || err != EDQUOT)
			quit(11);
		close(fds[--n]);
		fd = open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			quit(12);
		close(fd);
		close_many(fds, n);
		quit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_EQ(0, write_long(RING_KB, old));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st))
		TH_LOG("step %d failed (11: not 7 sessions then EDQUOT, 12: not given back)",
		       WEXITSTATUS(st));
}

/*
 * Each open() is charged to the opener's memory cgroup, about the size
 * of the target table (128 KiB), and given back at close.  (Before, an
 * open() charged nothing: 0 bytes each.)
 */
TEST(open_is_charged_to_the_memory_cgroup)
{
	const char *cg = CGROOT "/d9-kmem";
	const int n = 32;
	int st;
	pid_t kid;

	if (cgroup_ready())
		SKIP(return, "no cgroup2 memory controller: %s",
		     strerror(errno));
	ASSERT_EQ(0, mkdir(cg, 0755) && errno != EEXIST ? -1 : 0);
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		long before, opened, closed, per, vm0, vm1;
		int fds[MAX_FDS], got, err;
		char stat[128];

		/*
		 * memory.current moves by the 256 KiB that a CPU charges
		 * ahead (one CPU: one such cache), 8 KiB an open over 32.
		 */
		snprintf(stat, sizeof(stat), "%s/memory.stat", cg);
		if (d9_pin(0) || cg_write(cg, "cgroup.procs", 0) ||
		    drop_privileges())
			quit(10);
		before = cg_read(cg, "memory.current");
		vm0 = read_key(stat, "vmalloc");
		got = open_many(fds, n, &err);
		opened = cg_read(cg, "memory.current");
		vm1 = read_key(stat, "vmalloc");
		close_many(fds, got);
		closed = cg_read(cg, "memory.current");
		per = (opened - before) / n;
		printf("# memory.current %ld -> %ld with %d sessions (%ld bytes each; vmalloc in memory.stat %ld -> %ld), %ld after closing them\n",
		       before, opened, got, per, vm0, vm1, closed);
		if (got != n)
			quit(11);
		if (per < 120 << 10 || per > 160 << 10)
			quit(12);
		if (closed - before > 512 << 10)
			quit(13);
		quit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	rmdir(cg);
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st))
		TH_LOG("step %d failed (11: opens failed, 12: not 120-160 KiB charged per open, 13: not given back at close)",
		       WEXITSTATUS(st));
}

/*
 * In a memory cgroup without room, open() (the target table) and mmap()
 * (the rings) fail with ENOMEM; the cgroup's OOM killer is not called,
 * and the session works with rings that fit.
 */
TEST(tight_cgroup_gets_enomem_not_oom_kill)
{
	const char *cg = CGROOT "/d9-tight";
	char events[128];
	int st;
	pid_t kid;

	if (cgroup_ready())
		SKIP(return, "no cgroup2 memory controller: %s",
		     strerror(errno));
	ASSERT_EQ(0, mkdir(cg, 0755) && errno != EEXIST ? -1 : 0);
	snprintf(events, sizeof(events), "%s/memory.events", cg);
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		long cur, oom, kills;
		struct d9 d;
		int ret, failed;

		/*
		 * Fault in what the steps below touch, outside the cgroup:
		 * its limits are for the module's memory.
		 */
		if (d9_open(&d) || d9_configure(&d, 0, 4096, 0) || d9_map(&d))
			quit(10);
		d9_close(&d);
		read_long(events);
		/*
		 * Less than the 256 KiB the kernel charges ahead when it
		 * can: memory.current is then exact.
		 */
		if (cg_write(cg, "memory.max", 192 << 10) ||
		    cg_write(cg, "cgroup.procs", 0))
			quit(11);
		cur = cg_read(cg, "memory.current");
		/* room for a session, not for its 128 KiB table */
		if (cur < 0 || cg_write(cg, "memory.max", cur + (96 << 10)))
			quit(12);
		ret = d9_open(&d);
		d9_close(&d);
		printf("# memory.max %ld (memory.current + 96 KiB): open %s\n",
		       cur + (96 << 10), strerror(-ret));
		failed = ret != -ENOMEM ? 13 : 0;	/* and on to the rings */
		/* room for a session, not for 4 MiB rings on every CPU */
		cur = cg_read(cg, "memory.current");
		if (cg_write(cg, "memory.max", cur + (2 << 20)))
			quit(14);
		if (d9_open(&d) || d9_configure(&d, 0, 4 << 20, 0))
			quit(15);
		ret = d9_map(&d);
		printf("# memory.max %ld (memory.current + 2 MiB): %d rings of 4 MiB: mmap %s\n",
		       cur + (2 << 20), d.ncpu, strerror(-ret));
		if (ret != -ENOMEM)
			quit(16);
		d9_unmap(&d);
		/* the session goes on with rings that fit */
		if (d9_configure(&d, 0, 64 << 10, 0) || d9_map(&d) ||
		    d9_enable(&d) || d9_disable(&d))
			quit(17);
		d9_close(&d);
		oom = read_key(events, "oom");
		kills = read_key(events, "oom_kill");
		printf("# memory.events: max %ld, oom %ld, oom_kill %ld\n",
		       read_key(events, "max"), oom, kills);
		if (oom || kills)
			quit(18);
		d9_write_file(CGROOT "/cgroup.procs", "0");
		quit(failed);
	}
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	rmdir(cg);
	ASSERT_FALSE(WIFSIGNALED(st))
		TH_LOG("killed by signal %d (the cgroup's OOM killer?)",
		       WTERMSIG(st));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st))
		TH_LOG("step %d failed (13: open not ENOMEM, 16: mmap not ENOMEM, 17: smaller rings failed, 18: the OOM killer ran)",
		       WEXITSTATUS(st));
}

TEST_HARNESS_MAIN
