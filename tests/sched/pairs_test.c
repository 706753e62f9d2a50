// SPDX-License-Identifier: GPL-2.0
/*
 * libdial9 as an application links it, with dial9.ko (run in the VM):
 * 32 thread pairs ping-ponging through pipes, default settings.  Every
 * record the probes wrote reaches the trace: nothing lost in the kernel,
 * every record read, and the trace's scheduler events match.  Per CPU,
 * the records in the trace, those the recorder left out and the trace's
 * sched.lost add up to what the kernel counted in that CPU's ring
 * (sched.ring), and `dial9 info` says they agree.  The run (about 22,000
 * records) fits in the two vCPUs' 4 MiB rings, so this checks the
 * accounting end to end, not that the reader keeps pace with a longer
 * run: that is measured, not asserted (make bench-sched's loss table,
 * docs/benchmarks.md).  A second run holds the reader off with 4 KiB
 * rings, so that nearly everything is lost, and checks the same sums.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dial9.h>
#include "proc.h"
#include "segfile.h"
#include "sched/sched_account.h"
#include "kselftest_harness.h"

#define PAIRS 32
#define ROUNDS 200

struct pair {
	int ab[2], ba[2];
};

static void *side_a(void *arg)
{
	struct pair *p = arg;
	char c = 'x';

	for (int i = 0; i < ROUNDS; i++)
		if (write(p->ab[1], &c, 1) != 1 || read(p->ba[0], &c, 1) != 1)
			break;
	return NULL;
}

static void *side_b(void *arg)
{
	struct pair *p = arg;
	char c;

	for (int i = 0; i < ROUNDS; i++)
		if (read(p->ab[0], &c, 1) != 1 || write(p->ba[1], &c, 1) != 1)
			break;
	return NULL;
}

struct account_visit {
	struct d9_acct *a;
	struct sched_fields cache[16];
	unsigned int ncache;
	int ret;
};

static void account_record(const struct dial9_record *r, void *arg)
{
	struct account_visit *v = arg;
	struct sched_fields *f = NULL;

	if (r->kind == DIAL9_RECORD_STREAM) {
		v->ncache = 0;
		d9_acct_stream(v->a);
	}
	if (v->ret || r->kind != DIAL9_RECORD_EVENT ||
	    strncmp(r->schema->name, "sched.", 6))
		return;
	for (unsigned int i = 0; i < v->ncache; i++)
		if (v->cache[i].schema == r->schema)
			f = &v->cache[i];
	if (!f) {
		f = &v->cache[v->ncache < 16 ? v->ncache++ : 15];
		d9_sched_fields_lookup(f, r->schema);
	}
	v->ret = d9_acct_feed(v->a, f, r, 0);
}

/* Count the sched.* events of one segment file per CPU into @a. */
static int account_file(struct d9_acct *a, const char *path)
{
	struct account_visit v = { .a = a };
	int ret = test_each_record(path, account_record, &v);

	return ret < 0 ? ret : v.ret < 0 ? v.ret : 0;
}

/* Every segment below @dir (one recording: one source). */
static int account_dir(struct d9_acct *a, const char *dir)
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
			ret = account_dir(a, path);
		else if (strstr(de->d_name, ".dial9"))
			ret = account_file(a, path);
	}
	closedir(d);
	return ret;
}

/* How many lines of `dial9 info DIR` contain @what. */
static int info_lines(const char *dir, const char *what)
{
	char cmd[128], line[512];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "dial9 info %s", dir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		n += strstr(line, what) != NULL;
	pclose(p);
	return n;
}

/*
 * Run the pairs, recorded by libdial9 into @dir; with @starve, every
 * thread of theirs at SCHED_FIFO 50 on CPU 0 and the ring reader moved
 * there too, where it never runs until they are done, even at the
 * SCHED_FIFO 1 it takes when behind (a ring of @ring_bytes then
 * overflows for sure).  0 or -errno.
 */
static int run_pairs(const char *dir, uint32_t ring_bytes, bool starve)
{
	static struct pair pairs[PAIRS];
	struct sched_param sp = { .sched_priority = 50 };
	pthread_t t[2 * PAIRS];
	struct dial9_config cfg;
	pthread_attr_t attr;
	cpu_set_t cpu0;
	int ret;

	dial9_config_init(&cfg);
	dial9_config_from_env(&cfg);	/* DIAL9_* as an application would */
	cfg.trace_dir = dir;
	if (ring_bytes)
		cfg.sched_ring_bytes = ring_bytes;
	ret = dial9_start(&cfg);
	if (ret)
		return ret;
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	pthread_attr_init(&attr);
	if (starve) {
		pid_t reader = test_thread_tid("dial9-kread");

		if (!reader || sched_setaffinity(reader, sizeof(cpu0), &cpu0))
			return -ESRCH;
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &sp);
		pthread_attr_setaffinity_np(&attr, sizeof(cpu0), &cpu0);
	}
	for (int i = 0; i < PAIRS; i++)
		if (pipe(pairs[i].ab) || pipe(pairs[i].ba))
			return -errno;
	for (int i = 0; i < PAIRS; i++) {
		ret = -pthread_create(&t[2 * i], &attr, side_a, &pairs[i]);
		if (!ret)
			ret = -pthread_create(&t[2 * i + 1], &attr, side_b,
					      &pairs[i]);
		if (ret)
			return ret;
	}
	pthread_attr_destroy(&attr);
	for (int i = 0; i < 2 * PAIRS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < PAIRS; i++) {
		close(pairs[i].ab[0]);
		close(pairs[i].ab[1]);
		close(pairs[i].ba[0]);
		close(pairs[i].ba[1]);
	}
	return dial9_stop();
}

/*
 * Per CPU: recorded + lost == what the probes tried to write; each CPU's
 * ring has its counts in the trace, and `dial9 info` says they agree.
 * The losses in all, in *@lost.
 */
static void check_per_cpu(struct __test_metadata *_metadata, const char *dir,
			  const struct dial9_stats *st, uint64_t *lost)
{
	uint64_t records = 0, written = 0;
	unsigned int cpus = 0;
	struct d9_acct a;

	*lost = 0;
	d9_acct_init(&a);
	ASSERT_EQ(0, account_dir(&a, dir));
	d9_acct_sort(&a);
	for (size_t i = 0; i < a.n; i++) {
		const struct d9_acct_cpu *c = &a.v[i];

		TH_LOG("cpu %u: %llu records in the trace + %llu left out + %llu lost; the kernel: %llu written, %llu dropped",
		       c->cpu, (unsigned long long)c->records,
		       (unsigned long long)c->filtered,
		       (unsigned long long)c->lost,
		       (unsigned long long)c->written,
		       (unsigned long long)c->klost);
		EXPECT_TRUE(c->ring);
		EXPECT_EQ(c->written, c->records + c->filtered);
		EXPECT_EQ(c->klost, c->lost);
		EXPECT_TRUE(d9_acct_agrees(c));
		cpus++;
		records += c->records + c->filtered;
		written += c->written;
		*lost += c->klost;
	}
	d9_acct_free(&a);
	EXPECT_EQ(sysconf(_SC_NPROCESSORS_ONLN), cpus);
	EXPECT_EQ(st->sched_written, written);
	EXPECT_EQ(st->sched_read, records);
	EXPECT_EQ(st->sched_lost, *lost);
	EXPECT_EQ(cpus, info_lines(dir, " dropped by the kernel: agree"));
	EXPECT_EQ(0, info_lines(dir, "DIFFER"));
}

TEST(pairs_32_lose_nothing_at_defaults)
{
	struct dial9_stats st = { .size = sizeof(st) };
	uint64_t lost;
	char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/d9-pairs-%d", getpid());
	ASSERT_EQ(0, run_pairs(dir, 0, false));
	ASSERT_EQ(0, dial9_get_stats(&st));
	check_per_cpu(_metadata, dir, &st, &lost);
	TH_LOG("%d pairs x %d rounds: %llu records written by dial9.ko, %llu read, %llu lost; %llu scheduler events; the reader at SCHED_FIFO %u",
	       PAIRS, ROUNDS, (unsigned long long)st.sched_written,
	       (unsigned long long)st.sched_read,
	       (unsigned long long)st.sched_lost,
	       (unsigned long long)st.sched_events, st.sched_reader_prio);
	EXPECT_STREQ("dial9.ko", st.sched_backend);
	/* As root here, the ring reader may take its default SCHED_FIFO 1. */
	if (!getenv("DIAL9_SCHED_READER_PRIO"))
		EXPECT_EQ(1, st.sched_reader_prio);
	if (getenv("DIAL9_SCHED_RING_KB"))
		return;		/* a measurement (make bench), not defaults */
	/* A blocking switch per round and side, at least. */
	EXPECT_LE(2ull * PAIRS * ROUNDS, st.sched_written + st.sched_lost);
	EXPECT_EQ(0, lost);
	EXPECT_EQ(0, st.sched_lost);
	EXPECT_EQ(st.sched_written, st.sched_read);
	EXPECT_EQ(0, st.events_lost);
	EXPECT_LE(st.sched_read, st.sched_events);
}

/*
 * The same with the reader held off and 4 KiB rings: most records are
 * lost, and still, per CPU, the trace's records and its sched.lost add
 * up to what the kernel wrote and dropped.
 */
TEST(pairs_32_starved_reader_counts_every_loss)
{
	struct dial9_stats st = { .size = sizeof(st) };
	uint64_t lost;
	char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/d9-starved-%d", getpid());
	ASSERT_EQ(0, run_pairs(dir, 4096, true));
	ASSERT_EQ(0, dial9_get_stats(&st));
	check_per_cpu(_metadata, dir, &st, &lost);
	TH_LOG("%llu records written by dial9.ko, %llu lost",
	       (unsigned long long)st.sched_written,
	       (unsigned long long)st.sched_lost);
	/* 4 KiB hold ~50 records; the pairs make over 12,800 */
	EXPECT_LT(2ull * PAIRS * ROUNDS / 2, lost);
}

TEST_HARNESS_MAIN
