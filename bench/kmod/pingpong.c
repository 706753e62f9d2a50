// SPDX-License-Identifier: GPL-2.0
/*
 * A switch-heavy workload for the scheduler-tracing benchmark: PAIRS thread
 * pairs bounce one byte through two pipes ROUNDS times each.  Only the
 * bouncing is timed (CLOCK_MONOTONIC, from the moment every thread is ready
 * to the last thread's end), so a tracer's start-up and shutdown do not
 * count.  On one CPU a round trip is two context switches and two wake-ups.
 *
 *   dial9-pingpong [-p PAIRS] [-n ROUNDS] [-s] [-e EVENTS]
 *
 * -s: the process records itself through /dev/dial9 (default session: its
 * own threads, default ring size) with a reader thread draining the rings
 * as a real consumer would (poll() at a quarter-ring watermark).
 * -e: the session's DIAL9_EV_* mask (default 0: all), to see what each
 * record type costs.
 *
 * Prints one line:
 *   pingpong pairs=P rounds=N ns=T ns_per_rt=X [read=R lost=L]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/dial9.h>

#define MAX_CPUS 64
#define MAX_PAIRS 256

static struct dial9_ring_ctrl *ctrl[MAX_CPUS];
static const unsigned char *data[MAX_CPUS];
static unsigned int ncpu;
static volatile int stop;
static uint64_t nread;
static int dfd = -1;

static long rounds = 20000;
static pthread_barrier_t ready;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void drain(void)
{
	for (unsigned int cpu = 0; cpu < ncpu; cpu++) {
		struct dial9_ring_ctrl *c = ctrl[cpu];
		uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
		uint64_t tail = c->tail;

		while (tail < head) {
			const struct dial9_rec_header *h = (const void *)
				(data[cpu] + (tail & (c->data_size - 1)));

			nread += h->type != DIAL9_REC_PAD &&
				 h->type != DIAL9_REC_LOST;
			tail += h->size;
		}
		__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	}
}

static void *reader(void *arg)
{
	struct pollfd p = { .fd = dfd, .events = POLLIN };

	(void)arg;
	while (!stop) {
		poll(&p, 1, 100);
		drain();
	}
	return NULL;
}

static int open_session(unsigned int events)
{
	struct dial9_session_config cfg = { .size = sizeof(cfg), .events = events };
	struct dial9_version v;

	dfd = open(DIAL9_DEVICE, O_RDWR);
	if (dfd < 0 || ioctl(dfd, DIAL9_IOC_GET_VERSION, &v) ||
	    ioctl(dfd, DIAL9_IOC_CONFIGURE, &cfg))
		return -1;
	ncpu = v.nr_cpu_ids < MAX_CPUS ? v.nr_cpu_ids : MAX_CPUS;
	for (unsigned int cpu = 0; cpu < ncpu; cpu++) {
		ctrl[cpu] = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED, dfd, DIAL9_MMAP_CTRL(cpu));
		if (ctrl[cpu] == MAP_FAILED)
			return -1;
		data[cpu] = mmap(NULL, ctrl[cpu]->data_size, PROT_READ,
				 MAP_SHARED, dfd, DIAL9_MMAP_DATA(cpu));
		if (data[cpu] == MAP_FAILED)
			return -1;
		ctrl[cpu]->watermark = ctrl[cpu]->data_size / 4;
	}
	return ioctl(dfd, DIAL9_IOC_ENABLE, 0);
}

struct end {
	int rd, wr;
	int first;		/* writes before it reads */
	uint64_t t0, t1;
};

static void *bounce(void *arg)
{
	struct end *e = arg;
	char c = 0;

	pthread_barrier_wait(&ready);
	e->t0 = now_ns();
	for (long i = 0; i < rounds; i++) {
		if (e->first && write(e->wr, &c, 1) != 1)
			break;
		if (read(e->rd, &c, 1) != 1)
			break;
		if (!e->first && write(e->wr, &c, 1) != 1)
			break;
	}
	e->t1 = now_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	static struct end ends[2 * MAX_PAIRS];
	static pthread_t th[2 * MAX_PAIRS];
	int pairs = 1, self = 0, opt;
	unsigned int events = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0, lost = 0;
	pthread_t rd;

	while ((opt = getopt(argc, argv, "p:n:se:")) != -1) {
		switch (opt) {
		case 'p': pairs = atoi(optarg); break;
		case 'n': rounds = atol(optarg); break;
		case 's': self = 1; break;
		case 'e': events = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [-p PAIRS] [-n ROUNDS] [-s] [-e EVENTS]\n",
				argv[0]);
			return 2;
		}
	}
	if (pairs < 1 || pairs > MAX_PAIRS || rounds < 1)
		return fprintf(stderr, "1..%d pairs\n", MAX_PAIRS), 2;
	if (self) {
		if (open_session(events))
			return perror("dial9"), 1;
		pthread_create(&rd, NULL, reader, NULL);
	}
	for (int i = 0; i < pairs; i++) {
		int a[2], b[2];

		if (pipe(a) || pipe(b))
			return perror("pipe"), 1;
		ends[2 * i] = (struct end){ .rd = b[0], .wr = a[1], .first = 1 };
		ends[2 * i + 1] = (struct end){ .rd = a[0], .wr = b[1] };
	}
	pthread_barrier_init(&ready, NULL, 2 * pairs);
	for (int i = 0; i < 2 * pairs; i++)
		pthread_create(&th[i], NULL, bounce, &ends[i]);
	for (int i = 0; i < 2 * pairs; i++) {
		pthread_join(th[i], NULL);
		if (ends[i].t0 < t0)
			t0 = ends[i].t0;
		if (ends[i].t1 > t1)
			t1 = ends[i].t1;
	}
	printf("pingpong pairs=%d rounds=%ld ns=%llu ns_per_rt=%.1f", pairs,
	       rounds, (unsigned long long)(t1 - t0),
	       (double)(t1 - t0) / rounds);
	if (self) {
		stop = 1;
		pthread_join(rd, NULL);
		ioctl(dfd, DIAL9_IOC_DISABLE, 0);
		drain();
		for (unsigned int cpu = 0; cpu < ncpu; cpu++)
			lost += ctrl[cpu]->lost;
		printf(" read=%llu lost=%llu", (unsigned long long)nread,
		       (unsigned long long)lost);
	}
	printf("\n");
	return 0;
}
