// SPDX-License-Identifier: GPL-2.0
/*
 * How many records per second /dev/dial9 sustains without loss: PAIRS
 * thread pairs of this process ping-pong through pipes for SECONDS while a
 * reader thread drains the rings (poll() at a quarter-ring watermark).
 * Prints records read, lost, and the rate in guest time.
 *
 *   dial9-rate [PAIRS] [SECONDS] [RING_BYTES]
 */
#define _GNU_SOURCE
#include <fcntl.h>
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

static struct dial9_ring_ctrl *ctrl[MAX_CPUS];
static unsigned char *data[MAX_CPUS];
static unsigned int ncpu;
static volatile int stop;
static uint64_t nread;
static int fd;

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

			nread += h->type != DIAL9_REC_PAD;
			tail += h->size;
		}
		__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	}
}

static void *reader(void *arg)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	(void)arg;
	while (!stop) {
		poll(&p, 1, 10);
		drain();
	}
	return NULL;
}

static void *bounce(void *arg)
{
	int *fds = arg;
	char c = 0;

	while (!stop)
		if (write(fds[1], &c, 1) != 1 || read(fds[0], &c, 1) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	int pairs = argc > 1 ? atoi(argv[1]) : 1;
	int secs = argc > 2 ? atoi(argv[2]) : 2;
	struct dial9_session_config cfg = { .size = sizeof(cfg) };
	struct dial9_version v;
	pthread_t rd, th[2 * 64];
	uint64_t lost = 0, t0, t1;
	static int fds[64][2][2];

	cfg.ring_size = argc > 3 ? atoi(argv[3]) : 0;
	if (pairs < 1 || pairs > 64)
		return fprintf(stderr, "1..64 pairs\n"), 2;
	fd = open(DIAL9_DEVICE, O_RDWR);
	if (fd < 0 || ioctl(fd, DIAL9_IOC_GET_VERSION, &v) ||
	    ioctl(fd, DIAL9_IOC_CONFIGURE, &cfg))
		return perror("dial9"), 1;
	ncpu = v.nr_cpu_ids < MAX_CPUS ? v.nr_cpu_ids : MAX_CPUS;
	for (unsigned int cpu = 0; cpu < ncpu; cpu++) {
		ctrl[cpu] = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, DIAL9_MMAP_CTRL(cpu));
		data[cpu] = mmap(NULL, ctrl[cpu]->data_size, PROT_READ,
				 MAP_SHARED, fd, DIAL9_MMAP_DATA(cpu));
		if (ctrl[cpu] == MAP_FAILED || data[cpu] == MAP_FAILED)
			return perror("mmap"), 1;
		ctrl[cpu]->watermark = ctrl[cpu]->data_size / 4;
	}
	for (int i = 0; i < pairs; i++) {
		int a[2], b[2];

		if (pipe(a) || pipe(b))
			return perror("pipe"), 1;
		/* thread 0 writes a, reads b; thread 1 writes b, reads a */
		fds[i][0][0] = b[0];
		fds[i][0][1] = a[1];
		fds[i][1][0] = a[0];
		fds[i][1][1] = b[1];
	}
	ioctl(fd, DIAL9_IOC_ENABLE, 0);
	pthread_create(&rd, NULL, reader, NULL);
	t0 = now_ns();
	for (int i = 0; i < pairs; i++) {
		pthread_create(&th[2 * i], NULL, bounce, fds[i][0]);
		pthread_create(&th[2 * i + 1], NULL, bounce, fds[i][1]);
	}
	sleep(secs);
	stop = 1;
	for (int i = 0; i < pairs; i++)
		close(fds[i][0][1]), close(fds[i][1][1]);
	for (int i = 0; i < 2 * pairs; i++)
		pthread_join(th[i], NULL);
	t1 = now_ns();
	pthread_join(rd, NULL);
	ioctl(fd, DIAL9_IOC_DISABLE, 0);
	drain();
	for (unsigned int cpu = 0; cpu < ncpu; cpu++)
		lost += ctrl[cpu]->lost;
	printf("pairs=%d ring=%u read=%llu lost=%llu rate=%.0f records/s (guest time %.2f s)\n",
	       pairs, ctrl[0]->data_size, (unsigned long long)nread,
	       (unsigned long long)lost, nread / ((t1 - t0) / 1e9),
	       (t1 - t0) / 1e9);
	return 0;
}
