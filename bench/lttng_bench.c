// SPDX-License-Identifier: MIT
/*
 * lttng_bench.c - the LTTng-UST side of the record benchmark: records
 * the two-u64 event through an LTTng-UST tracepoint on 1 or more threads
 * and prints the mean over threads of the median ns/event (see
 * bench_time.h). record_bench runs it inside an active session with a
 * session daemon it started; on its own it measures a disabled
 * tracepoint.
 *
 *   lttng_bench EVENTS-PER-THREAD THREADS      prints "ns/event <x>"
 *   lttng_bench idle SECS                       records nothing for SECS
 *
 * The idle form is the LTTng-UST side of the idle-recorder benchmark
 * (bench/idle-host.sh): an instrumented application registered with a
 * session daemon, its event enabled, with nothing to record.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"

static uint64_t events = 2000000;

static void *run(void *arg)
{
	double *out = arg, r[BENCH_ROUNDS];
	uint64_t per = events / BENCH_ROUNDS, i = 0;

	for (int k = 0; k < BENCH_ROUNDS; k++) {
		uint64_t t0 = bench_thread_ns(), end = i + per;

		for (; i < end; i++)
			lttng_ust_tracepoint(dial9_bench, event, i, i ^ 0x55);
		r[k] = (double)(bench_thread_ns() - t0) / (double)per;
	}
	*out = bench_median(r, BENCH_ROUNDS);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = 1;
	pthread_t th[8];
	double ns[8], sum = 0;

	if (argc > 2 && !strcmp(argv[1], "idle")) {
		struct timespec ts = { atoi(argv[2]), 0 };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		return 0;
	}
	if (argc > 1)
		events = strtoull(argv[1], NULL, 10);
	if (argc > 2)
		n = atoi(argv[2]);
	if (n < 1 || n > 8 || events < BENCH_ROUNDS) {
		fprintf(stderr, "usage: lttng_bench EVENTS THREADS(1-8)\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, run, &ns[i]);
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		sum += ns[i];
	}
	printf("ns/event %.2f\n", sum / n);
	return 0;
}
