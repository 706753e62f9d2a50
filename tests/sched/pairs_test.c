// SPDX-License-Identifier: GPL-2.0
/*
 * libdial9 as an application links it, with dial9.ko (run in the VM):
 * 32 thread pairs ping-ponging through pipes, default settings.  Every
 * record the probes wrote reaches the trace: nothing lost in the kernel,
 * every record read, and the trace's scheduler events match.  The run
 * (about 22,000 records) fits in the two vCPUs' 4 MiB rings, so this
 * checks the accounting end to end, not that the reader keeps pace with
 * a longer run: that is measured, not asserted (make bench-sched's loss
 * table, docs/benchmarks.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dial9.h>
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

TEST(pairs_32_lose_nothing_at_defaults)
{
	static struct pair pairs[PAIRS];
	pthread_t t[2 * PAIRS];
	struct dial9_config cfg;
	struct dial9_stats st = { .size = sizeof(st) };
	char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/d9-pairs-%d", getpid());
	dial9_config_init(&cfg);
	dial9_config_from_env(&cfg);	/* DIAL9_* as an application would */
	cfg.trace_dir = dir;
	ASSERT_EQ(0, dial9_start(&cfg));
	for (int i = 0; i < PAIRS; i++) {
		ASSERT_EQ(0, pipe(pairs[i].ab));
		ASSERT_EQ(0, pipe(pairs[i].ba));
	}
	for (int i = 0; i < PAIRS; i++) {
		ASSERT_EQ(0, pthread_create(&t[2 * i], NULL, side_a, &pairs[i]));
		ASSERT_EQ(0, pthread_create(&t[2 * i + 1], NULL, side_b,
					    &pairs[i]));
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		pthread_join(t[i], NULL);
	ASSERT_EQ(0, dial9_stop());
	ASSERT_EQ(0, dial9_get_stats(&st));
	TH_LOG("%d pairs x %d rounds: %llu records written by dial9.ko, %llu read, %llu lost; %llu scheduler events; the reader at SCHED_FIFO %u",
	       PAIRS, ROUNDS, (unsigned long long)st.sched_written,
	       (unsigned long long)st.sched_read,
	       (unsigned long long)st.sched_lost,
	       (unsigned long long)st.sched_events, st.sched_reader_prio);
	EXPECT_STREQ("dial9.ko", st.sched_backend);
	/* As root here, the ring reader runs at its default SCHED_FIFO 1. */
	if (!getenv("DIAL9_SCHED_READER_PRIO"))
		EXPECT_EQ(1, st.sched_reader_prio);
	if (getenv("DIAL9_SCHED_RING_KB"))
		return;		/* a measurement (make bench), not defaults */
	/* A blocking switch per round and side, at least. */
	EXPECT_LE(2ull * PAIRS * ROUNDS, st.sched_written + st.sched_lost);
	EXPECT_EQ(0, st.sched_lost);
	EXPECT_EQ(st.sched_written, st.sched_read);
	EXPECT_EQ(0, st.events_lost);
	EXPECT_LE(st.sched_read, st.sched_events);
}

TEST_HARNESS_MAIN
