// SPDX-License-Identifier: MIT
/*
 * contention: a small service under CPU contention, recorded by libdial9.
 *
 * worker-a shares CPU 0 with three CPU hogs; worker-b has CPU 1 to
 * itself.  Both serve the same "requests" (sleep 1 ms for I/O, then
 * compute 2 ms), each inside a span.  The trace holds the spans and, from
 * dial9.ko, every switch and wake-up of the process with its runqueue
 * delay, so `dial9 sched TRACE_DIR` tells why worker-a's requests were
 * late.  (One hog is not contention: a woken worker preempts it and its
 * 2 ms fit in a slice.  The recorder's own threads start on CPU 0 too, as
 * they inherit the affinity of the thread that starts the recorder, so
 * nothing but worker-b runs on CPU 1.)
 *
 *   contention TRACE_DIR [REQUESTS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <dial9.h>

DIAL9_SPAN_TYPE(request, "demo.request", DIAL9_FIELD(U64, id));

#define HOGS 3

static volatile int stop_hog;
static int requests = 50;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start @fn on @cpu from its first instruction (no wait elsewhere first). */
static int start_on(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	cpu_set_t set;
	int ret;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	ret = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return ret;
}

static void *hog(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "hog");
	while (!stop_hog)
		;
	return NULL;
}

static void *worker(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	struct timespec io = { 0, 1000000 };

	pthread_setname_np(pthread_self(), cpu ? "worker-b" : "worker-a");
	for (int i = 0; i < requests; i++) {
		uint64_t t0;

		DIAL9_SPAN_BEGIN(request, dial9_u64((uint64_t)i));
		nanosleep(&io, NULL);
		t0 = cpu_ns();
		while (cpu_ns() - t0 < 2000000)
			;
		DIAL9_SPAN_END(request, dial9_u64((uint64_t)i));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct dial9_config cfg;
	struct dial9_stats st = { .size = sizeof(st) };
	pthread_t h[HOGS], a, b;
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: %s TRACE_DIR [REQUESTS]\n", argv[0]);
		return 2;
	}
	if (argc > 2)
		requests = atoi(argv[2]);
	pin(0);		/* the recorder's threads inherit it */
	dial9_config_init(&cfg);
	cfg.trace_dir = argv[1];
	cfg.service_name = "contention";
	ret = dial9_start(&cfg);
	if (ret) {
		fprintf(stderr, "dial9_start: %s\n", dial9_strerror(ret));
		return 1;
	}
	printf("contention: worker-a shares CPU 0 with %d hogs, worker-b has CPU 1; %d requests of 1 ms I/O + 2 ms CPU each\n",
	       HOGS, requests);
	for (int i = 0; i < HOGS; i++)
		start_on(&h[i], 0, hog, NULL);
	start_on(&a, 0, worker, (void *)0);
	start_on(&b, 1, worker, (void *)1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	stop_hog = 1;
	for (int i = 0; i < HOGS; i++)
		pthread_join(h[i], NULL);
	dial9_stop();
	dial9_get_stats(&st);
	printf("contention: %llu events, %llu scheduler events from %s, %llu lost, in %s\n",
	       (unsigned long long)st.events_written,
	       (unsigned long long)st.sched_events,
	       st.sched_backend[0] ? st.sched_backend : "nothing",
	       (unsigned long long)(st.events_lost + st.sched_lost), st.dir);
	return 0;
}
