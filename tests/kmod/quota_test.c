// SPDX-License-Identifier: GPL-2.0
/*
 * Ring memory: charged to the opener's memory cgroup, and capped per
 * unprivileged user (the module's user_ring_kb).
 */
#include "dial9_test.h"
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

#define PARAM "/sys/module/dial9/parameters/user_ring_kb"

static long read_long(const char *path)
{
	return (long)d9_read_number(path);
}

/* A session with @ring bytes per CPU, mapped (the rings exist then). */
static int session(struct d9 *d, uint32_t ring)
{
	int ret = d9_open(d);

	if (!ret)
		ret = d9_configure(d, 0, ring, 0);
	if (!ret)
		ret = d9_map(d);
	return ret;
}

/*
 * The sessions of one unprivileged user hold at most user_ring_kb of
 * rings: past it, -EDQUOT; a closed session gives its share back; root's
 * sessions are not limited.
 */
TEST(unprivileged_rings_are_capped_per_user)
{
	long old = read_long(PARAM);
	int st;
	pid_t kid;

	ASSERT_LE(0, old) TH_LOG("no %s", PARAM);
	/* 256 KiB rings (and a control page) on 2 CPUs fit once, not twice. */
	ASSERT_EQ(0, d9_write_file(PARAM, "700"));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		struct d9 a, b, c;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(10);
		if (session(&a, 256 << 10))
			_exit(11);
		if (session(&b, 256 << 10) != -EDQUOT)
			_exit(12);
		d9_close(&b);
		d9_close(&a);
		if (session(&c, 256 << 10))	/* given back */
			_exit(13);
		d9_close(&c);
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	{
		struct d9 a, b;

		/* root: over the limit, yet allowed */
		EXPECT_EQ(0, session(&a, 512 << 10));
		EXPECT_EQ(0, session(&b, 512 << 10));
		d9_close(&a);
		d9_close(&b);
	}
	{
		char v[32];

		snprintf(v, sizeof(v), "%ld", old);
		EXPECT_EQ(0, d9_write_file(PARAM, v));
	}
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st))
		TH_LOG("step %d failed (11: first session, 12: second not -EDQUOT, 13: not given back)",
		       WEXITSTATUS(st));
}

/* The rings are charged to the memory cgroup of the process that maps them. */
TEST(rings_are_charged_to_the_memory_cgroup)
{
	const char *cg = "/sys/fs/cgroup/d9-quota";
	const uint32_t ring = 8 << 20;
	long before, after, need;
	char path[128];
	struct d9 d;
	int ncpu;

	mkdir("/sys/fs/cgroup", 0755);
	if (read_long("/sys/fs/cgroup/cgroup.procs") < 0 &&
	    mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL))
		SKIP(return, "no cgroup2: %s", strerror(errno));
	if (d9_write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory"))
		SKIP(return, "no memory controller");
	ASSERT_EQ(0, mkdir(cg, 0755) && errno != EEXIST ? -1 : 0);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	ASSERT_EQ(0, d9_write_file(path, "0"));	/* this process */
	snprintf(path, sizeof(path), "%s/memory.current", cg);
	before = read_long(path);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, session(&d, ring));
	ncpu = d.ncpu;
	after = read_long(path);
	d9_close(&d);
	need = (long)ncpu * ring;
	TH_LOG("memory.current %ld -> %ld with %d rings of %u bytes",
	       before, after, ncpu, ring);
	EXPECT_LE(need, after - before);
	d9_write_file("/sys/fs/cgroup/cgroup.procs", "0");
	rmdir(cg);
}

/*
 * Sessions that come and go as fast as they can attach the tracepoints at
 * most once a second (each attach patches the kernel's text).
 */
TEST(enable_disable_storm_attaches_rarely)
{
	long before = read_long("/sys/module/dial9/parameters/attaches");
	uint64_t t0 = d9_now(), secs;
	long after, cycles = 0;

	ASSERT_LE(0, before);
	usleep(1200000);	/* past any earlier session's detach delay */
	before = read_long("/sys/module/dial9/parameters/attaches");
	t0 = d9_now();
	while (d9_now() - t0 < 2000000000ull) {
		struct d9 d;

		ASSERT_EQ(0, session(&d, 4096));
		ASSERT_EQ(0, d9_enable(&d));
		ASSERT_EQ(0, d9_disable(&d));
		ASSERT_EQ(0, d9_enable(&d));
		d9_close(&d);
		cycles++;
	}
	secs = (d9_now() - t0) / 1000000000ull + 1;
	after = read_long("/sys/module/dial9/parameters/attaches");
	/* 10 tracepoints at most per attach */
	TH_LOG("%ld sessions enabled twice each in %llu s: %ld tracepoint attaches",
	       cycles, (unsigned long long)secs, after - before);
	EXPECT_LT(20, cycles);
	EXPECT_GE((long)(secs + 1) * 10, after - before);
}

TEST_HARNESS_MAIN
