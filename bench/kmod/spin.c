// SPDX-License-Identifier: GPL-2.0
/*
 * The cost of the CPU profile (make bench-profile): a process linking
 * libdial9 (started from the environment, as libpairs.c) spins in
 * tests/kmod/hot_chain.h's hot() for ITERS calls, timed with
 * CLOCK_MONOTONIC; then dial9_stop() and the recorder's counters.  On
 * one vCPU under -icount the time includes everything the sampling
 * costs: the timer interrupts, the walks, the records, and the
 * recorder's threads turning them into events.  One line on stdout:
 *   spin iters=N ns=T ns_per_iter=X [backend=B hz=H samples=S lost=L
 *       sched_events=E]
 *
 *   dial9-spin [-n ITERS]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dial9.h>

#include "../../tests/kmod/hot_chain.h"

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct dial9_stats st = { .size = sizeof(st) };
	struct hot h = { 0 };
	unsigned long long t0, ns;
	long n = 2000;
	int c;

	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c != 'n') {
			fprintf(stderr, "usage: %s [-n ITERS]\n", argv[0]);
			return 2;
		}
		n = atol(optarg);
	}
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		hot(&h);
	ns = now_ns() - t0;
	printf("spin iters=%ld ns=%llu ns_per_iter=%.1f", n, ns,
	       (double)ns / (double)n);
	if (!dial9_stop()) {
		dial9_get_stats(&st);
		printf(" backend=%s hz=%u samples=%llu lost=%llu sched_events=%llu",
		       st.sched_backend[0] ? st.sched_backend : "none",
		       st.cpu_sample_hz, (unsigned long long)st.sched_samples,
		       (unsigned long long)st.sched_lost,
		       (unsigned long long)st.sched_events);
	}
	printf("\n");
	return (int)(h.sink & 0);
}
