// SPDX-License-Identifier: GPL-2.0
/*
 * A switch-heavy workload for the scheduler-tracing benchmark (pairs.h):
 * PAIRS thread pairs bounce one byte through two pipes ROUNDS times each;
 * only the bouncing is timed.
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

#include "pairs.h"

#define MAX_CPUS 64

static struct dial9_ring_ctrl *ctrl[MAX_CPUS];
static const unsigned char *data[MAX_CPUS];
static unsigned int ncpu;
static volatile int stop;
static uint64_t nread;
static int dfd = -1;

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

int main(int argc, char **argv)
{
	int pairs = 1, self = 0, opt;
	long rounds = 20000;
	unsigned int events = 0;
	uint64_t ns, lost = 0;
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
	if (pairs < 1 || pairs > PAIRS_MAX || rounds < 1)
		return fprintf(stderr, "1..%d pairs\n", PAIRS_MAX), 2;
	if (self) {
		if (open_session(events))
			return perror("dial9"), 1;
		pthread_create(&rd, NULL, reader, NULL);
	}
	ns = pairs_run(pairs, rounds);
	if (!ns)
		return 1;
	printf("pingpong pairs=%d rounds=%ld ns=%llu ns_per_rt=%.1f", pairs,
	       rounds, (unsigned long long)ns, (double)ns / rounds);
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
