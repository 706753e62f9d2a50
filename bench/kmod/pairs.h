/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The switch-heavy workload of the scheduler-tracing benchmark, shared by
 * dial9-pingpong (no library, or a raw /dev/dial9 reader) and
 * dial9-libpairs (the same workload in a process linking libdial9): PAIRS
 * thread pairs bounce one byte through two pipes ROUNDS times each.  Only
 * the bouncing is timed (CLOCK_MONOTONIC, from the first thread past the
 * barrier to the last thread's end), so a tracer's start-up and shutdown
 * do not count.  On one CPU a round trip is two context switches and two
 * wake-ups.
 */
#ifndef DIAL9_BENCH_PAIRS_H
#define DIAL9_BENCH_PAIRS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define PAIRS_MAX 256

/*
 * Called (if set) by the last thread to finish its rounds, right after it
 * took its end time: what ran up to the end of the bouncing, before the
 * joins, whatever else waits for the CPU then.
 */
static void (*pairs_done_hook)(void);
static int pairs_left;

struct pairs_end {
	int rd, wr;
	int first;		/* writes before it reads */
	long rounds;
	pthread_barrier_t *ready;
	uint64_t t0, t1;
};

static inline uint64_t pairs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline void *pairs_bounce(void *arg)
{
	struct pairs_end *e = arg;
	char c = 0;

	pthread_barrier_wait(e->ready);
	e->t0 = pairs_now_ns();
	for (long i = 0; i < e->rounds; i++) {
		if (e->first && write(e->wr, &c, 1) != 1)
			break;
		if (read(e->rd, &c, 1) != 1)
			break;
		if (!e->first && write(e->wr, &c, 1) != 1)
			break;
	}
	e->t1 = pairs_now_ns();
	if (__atomic_sub_fetch(&pairs_left, 1, __ATOMIC_ACQ_REL) == 0 &&
	    pairs_done_hook)
		pairs_done_hook();
	return NULL;
}

/*
 * Run the workload; returns the bouncing's wall time in ns, 0 on error
 * (reported on stderr).
 */
static inline uint64_t pairs_run(int pairs, long rounds)
{
	static struct pairs_end ends[2 * PAIRS_MAX];
	static pthread_t th[2 * PAIRS_MAX];
	pthread_barrier_t ready;
	uint64_t t0 = UINT64_MAX, t1 = 0;

	if (pairs < 1 || pairs > PAIRS_MAX || rounds < 1) {
		fprintf(stderr, "1..%d pairs, at least 1 round\n", PAIRS_MAX);
		return 0;
	}
	for (int i = 0; i < pairs; i++) {
		int a[2], b[2];

		if (pipe(a) || pipe(b)) {
			perror("pipe");
			return 0;
		}
		ends[2 * i] = (struct pairs_end){
			.rd = b[0], .wr = a[1], .first = 1,
			.rounds = rounds, .ready = &ready,
		};
		ends[2 * i + 1] = (struct pairs_end){
			.rd = a[0], .wr = b[1],
			.rounds = rounds, .ready = &ready,
		};
	}
	pthread_barrier_init(&ready, NULL, 2 * pairs);
	__atomic_store_n(&pairs_left, 2 * pairs, __ATOMIC_RELEASE);
	for (int i = 0; i < 2 * pairs; i++) {
		if (pthread_create(&th[i], NULL, pairs_bounce, &ends[i])) {
			fprintf(stderr, "pthread_create failed\n");
			_exit(1);	/* the others wait at the barrier */
		}
	}
	for (int i = 0; i < 2 * pairs; i++) {
		pthread_join(th[i], NULL);
		if (ends[i].t0 < t0)
			t0 = ends[i].t0;
		if (ends[i].t1 > t1)
			t1 = ends[i].t1;
	}
	pthread_barrier_destroy(&ready);
	for (int i = 0; i < 2 * pairs; i++) {
		close(ends[i].rd);
		close(ends[i].wr);
	}
	return t1 - t0;
}

#endif
