// SPDX-License-Identifier: GPL-2.0
/* Ring behaviour: loss accounting, LOST records, poll(), teardown. */
#include "dial9_test.h"
#include <poll.h>
#include <sys/epoll.h>
#include "kselftest_harness.h"

struct sleeper {
	int rounds;
	pid_t tid;
	uint64_t pcount0, pcount1;
};

/* Block and wake @rounds times on CPU 0; count our switch-ins. */
static void *sleeper(void *arg)
{
	struct sleeper *s = arg;
	struct timespec ts = { 0, 20000 };

	d9_pin(0);
	s->tid = d9_gettid();
	d9_schedstat(s->tid, NULL, NULL, &s->pcount0);
	for (int i = 0; i < s->rounds; i++)
		nanosleep(&ts, NULL);
	d9_schedstat(s->tid, NULL, NULL, &s->pcount1);
	return NULL;
}

static int count_switch_records(struct d9_recs *recs, pid_t tid, int *lost)
{
	int n = 0;

	*lost = 0;
	d9_for_each(r, recs) {
		const struct dial9_rec_switch *sw = (const void *)r;

		if (r->type == DIAL9_REC_LOST)
			*lost += ((const struct dial9_rec_lost *)r)->count;
		if (r->type == DIAL9_REC_SWITCH &&
		    ((pid_t)sw->prev_tid == tid || (pid_t)sw->next_tid == tid))
			n++;
	}
	return n;
}

/*
 * A 4 KiB ring that is never read overflows.  written counts exactly the
 * records in the ring, and written + lost is every switch the probe saw:
 * the sleeper's switch-ins (its schedstat pcount) and as many switch-outs.
 */
TEST(tiny_unread_ring_counts_lost)
{
	struct sleeper s = { .rounds = 1000 };
	struct d9_recs recs = { 0 };
	struct dial9_ring_stats st;
	uint64_t written = 0, lost = 0, expect;
	int lost_recs, in_ring;
	pthread_t t;
	struct d9 d;

	ASSERT_EQ(0, d9_pin(0));
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, 0, 4096, DIAL9_EV_SWITCH));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, pthread_create(&t, NULL, sleeper, &s));
	pthread_join(t, NULL);
	ASSERT_EQ(0, d9_disable(&d));
	for (int cpu = 0; cpu < d.ncpu; cpu++) {
		ASSERT_EQ(0, d9_stats(&d, cpu, &st));
		EXPECT_EQ(4096, st.ring_size);
		EXPECT_EQ(d.ctrl[cpu]->written, st.written);
		EXPECT_EQ(d.ctrl[cpu]->lost, st.lost);
		written += st.written;
		lost += st.lost;
	}
	ASSERT_EQ(written, (uint64_t)d9_drain(&d, &recs));
	in_ring = count_switch_records(&recs, s.tid, &lost_recs);
	/* Nothing was ever read, so no LOST record could be written. */
	EXPECT_EQ(0, lost_recs);
	expect = 2 * (s.pcount1 - s.pcount0);
	TH_LOG("written %llu lost %llu, sleeper switch-ins %llu, its records in ring %d",
	       (unsigned long long)written, (unsigned long long)lost,
	       (unsigned long long)(s.pcount1 - s.pcount0), in_ring);
	EXPECT_LT(0, lost);
	EXPECT_GE(4096 / sizeof(struct dial9_rec_switch), written);
	/* Edges: the main thread's own few switches, thread start and exit. */
	EXPECT_LE(expect - 2, written + lost);
	EXPECT_GE(expect + 12, written + lost);
	d9_recs_free(&recs);
	d9_close(&d);
}

/* Once the reader frees space, a LOST record reports what was dropped. */
TEST(lost_record_precedes_next_record)
{
	struct sleeper s = { .rounds = 300 };
	struct d9_recs recs = { 0 };
	const struct dial9_rec_header *first;
	struct dial9_ring_stats st;
	uint64_t lost_before;
	pthread_t t;
	struct d9 d;

	ASSERT_EQ(0, d9_pin(0));
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, 0, 4096, DIAL9_EV_SWITCH));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, pthread_create(&t, NULL, sleeper, &s));
	pthread_join(t, NULL);
	/*
	 * Skip everything unread, then count what was dropped: until the
	 * tail moves the full ring drops (and counts) this thread's own
	 * switches too, so a count taken before could be short.
	 */
	d.ctrl[0]->tail = d.ctrl[0]->head;
	ASSERT_EQ(0, d9_stats(&d, 0, &st));
	lost_before = st.lost;
	ASSERT_LT(0, lost_before);
	/* Then a few more switches. */
	s.rounds = 3;
	ASSERT_EQ(0, pthread_create(&t, NULL, sleeper, &s));
	pthread_join(t, NULL);
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_EQ(0, d9_stats(&d, 0, &st));
	EXPECT_EQ(lost_before, st.lost);	/* nothing dropped since */
	ASSERT_LT(1, d9_drain_cpu(&d, 0, &recs));
	first = (const void *)recs.buf;
	ASSERT_EQ(DIAL9_REC_LOST, first->type);
	EXPECT_EQ(lost_before, ((const struct dial9_rec_lost *)first)->count);
	d9_recs_free(&recs);
	d9_close(&d);
}

static void *pingpong_thread(void *arg)
{
	int *fds = arg;
	char c;

	for (int i = 0; i < 50; i++)
		if (write(fds[1], "x", 1) != 1 || read(fds[2], &c, 1) != 1)
			break;
	return NULL;
}

static void *echo_thread(void *arg)
{
	int *fds = arg;
	char c;

	for (int i = 0; i < 50; i++)
		if (read(fds[0], &c, 1) != 1 || write(fds[3], &c, 1) != 1)
			break;
	return NULL;
}

/* Generate about 100 switches of this process, then return. */
static void make_activity(void)
{
	int a[2], b[2], fds[4];
	pthread_t t1, t2;

	if (pipe(a) || pipe(b))
		return;
	fds[0] = a[0];
	fds[1] = a[1];
	fds[2] = b[0];
	fds[3] = b[1];
	pthread_create(&t1, NULL, pingpong_thread, fds);
	pthread_create(&t2, NULL, echo_thread, fds);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

static void *delayed_activity(void *arg)
{
	usleep(50000);
	make_activity();
	return NULL;
}

static uint64_t unread_max(struct d9 *d)
{
	uint64_t m = 0;

	for (int cpu = 0; cpu < d->ncpu; cpu++) {
		uint64_t u = d->ctrl[cpu]->head - d->ctrl[cpu]->tail;

		m = u > m ? u : m;
	}
	return m;
}

TEST(poll_wakes_at_watermark)
{
	struct d9_recs recs = { 0 };
	struct pollfd pfd;
	pthread_t t;
	struct d9 d;

	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_map(&d));
	for (int cpu = 0; cpu < d.ncpu; cpu++)
		d.ctrl[cpu]->watermark = 2048;
	ASSERT_EQ(0, d9_enable(&d));
	pfd.fd = d.fd;
	pfd.events = POLLIN;
	/* A few records of our own sleeping stay below the watermark. */
	d9_drain(&d, &recs);
	EXPECT_EQ(0, poll(&pfd, 1, 100));
	EXPECT_GT(2048, unread_max(&d));
	/* Another thread's activity crosses it and wakes us. */
	ASSERT_EQ(0, pthread_create(&t, NULL, delayed_activity, NULL));
	EXPECT_EQ(1, poll(&pfd, 1, 30000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_LE(2048, unread_max(&d));
	pthread_join(t, NULL);
	ASSERT_EQ(0, d9_disable(&d));
	d9_recs_free(&recs);
	d9_close(&d);
}

TEST(epoll_wakes)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct d9_recs recs = { 0 };
	pthread_t t;
	struct d9 d;
	int ep;

	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_map(&d));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, d.fd, &ev));
	for (int cpu = 0; cpu < d.ncpu; cpu++)
		d.ctrl[cpu]->watermark = 4096;
	ASSERT_EQ(0, d9_enable(&d));
	d9_drain(&d, &recs);
	ASSERT_EQ(0, pthread_create(&t, NULL, delayed_activity, NULL));
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, 30000));
	EXPECT_LE(4096, unread_max(&d));
	pthread_join(t, NULL);
	ASSERT_EQ(0, d9_disable(&d));
	close(ep);
	d9_recs_free(&recs);
	d9_close(&d);
}

/* The rings outlive close() while mapped; the session ends at munmap. */
TEST(close_while_mapped_is_safe)
{
	struct d9_recs recs = { 0 };
	uint64_t head0;
	struct d9 d, again;

	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	close(d.fd);
	d.fd = -1;
	head0 = d.ctrl[0]->head + d.ctrl[d.ncpu - 1]->head;
	make_activity();
	/* Still recording into the mapping. */
	EXPECT_LT(head0, d.ctrl[0]->head + d.ctrl[d.ncpu - 1]->head);
	EXPECT_LT(0, d9_drain(&d, &recs));
	d9_unmap(&d);
	/* A new session works after the old one is gone. */
	ASSERT_EQ(0, d9_open(&again));
	ASSERT_EQ(0, d9_map(&again));
	ASSERT_EQ(0, d9_enable(&again));
	make_activity();
	ASSERT_EQ(0, d9_disable(&again));
	EXPECT_LT(0, d9_drain(&again, &recs));
	d9_close(&again);
	d9_recs_free(&recs);
}

TEST_HARNESS_MAIN
