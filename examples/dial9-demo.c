// SPDX-License-Identifier: GPL-2.0
/*
 * dial9-demo: a program under CPU contention that records its own
 * scheduling through /dev/dial9 and prints who waited how long.
 *
 * worker-a shares CPU 0 with a CPU hog; worker-b has CPU 1 to itself.  Both
 * do the same work: sleep 1 ms, compute 2 ms, fifty times.  The report
 * shows worker-a's runqueue delays and none worth the name for worker-b.
 *
 *   dial9-demo [-c CYCLES]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/dial9.h>

#define MAX_CPUS 256
#define MAX_THREADS 64
#define MAX_DELAYS 100000

struct thread_stats {
	uint32_t tid;
	char comm[16];
	uint64_t comm_ns;	/* time of the newest name seen */
	uint64_t ins, voluntary, involuntary, wait_sum, wait_max;
	uint64_t *waits;
	size_t nwaits;
};

static struct thread_stats threads[MAX_THREADS];
static int nthreads;
static uint64_t hist[64];
static volatile int stop_hog;
static int cycles = 50;

static struct thread_stats *thread_of(uint32_t tid)
{
	for (int i = 0; i < nthreads; i++)
		if (threads[i].tid == tid)
			return &threads[i];
	if (nthreads == MAX_THREADS)
		return NULL;
	threads[nthreads].tid = tid;
	threads[nthreads].waits = calloc(MAX_DELAYS, sizeof(uint64_t));
	return &threads[nthreads++];
}

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
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *hog(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "hog");
	pin(0);
	while (!stop_hog)
		;
	return NULL;
}

static void *worker(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	struct timespec ms = { 0, 1000000 };

	pthread_setname_np(pthread_self(), cpu ? "worker-b" : "worker-a");
	pin(cpu);
	for (int i = 0; i < cycles; i++) {
		uint64_t t0 = cpu_ns();

		nanosleep(&ms, NULL);
		while (cpu_ns() - t0 < 2000000)
			;
	}
	return NULL;
}

static void account(const struct dial9_rec_header *h)
{
	const struct dial9_rec_switch *sw = (const void *)h;
	const struct dial9_rec_comm *cm = (const void *)h;
	struct thread_stats *t;

	if (h->type == DIAL9_REC_COMM && cm->tgid == (uint32_t)getpid()) {
		t = thread_of(cm->tid);
		/* Rings are read CPU by CPU: keep the newest name. */
		if (t && h->time_ns >= t->comm_ns) {
			memcpy(t->comm, cm->comm, sizeof(t->comm));
			t->comm_ns = h->time_ns;
		}
	}
	if (h->type != DIAL9_REC_SWITCH)
		return;
	if (sw->prev_tgid == (uint32_t)getpid() && (t = thread_of(sw->prev_tid))) {
		if (h->flags & DIAL9_SWITCH_PREV_RUNNABLE)
			t->involuntary++;
		else
			t->voluntary++;
	}
	if (sw->next_tgid == (uint32_t)getpid() && (t = thread_of(sw->next_tid))) {
		uint64_t w = sw->next_wait_ns;

		t->ins++;
		t->wait_sum += w;
		if (w > t->wait_max)
			t->wait_max = w;
		if (t->nwaits < MAX_DELAYS)
			t->waits[t->nwaits++] = w;
		hist[w / 1000 ? 64 - __builtin_clzll(w / 1000) : 0]++;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(uint64_t lost)
{
	uint64_t maxh = 1;
	int top = 0;

	printf("\n%-16s %7s %9s %11s %10s %10s %10s\n", "thread", "tid",
	       "switches", "preempted", "avg_us", "p99_us", "max_us");
	for (int i = 0; i < nthreads; i++) {
		struct thread_stats *t = &threads[i];
		uint64_t p99 = 0;

		if (!t->ins)
			continue;
		qsort(t->waits, t->nwaits, sizeof(uint64_t), cmp_u64);
		if (t->nwaits)
			p99 = t->waits[(t->nwaits - 1) * 99 / 100];
		printf("%-16s %7u %9llu %11llu %10.1f %10.1f %10.1f\n",
		       t->comm[0] ? t->comm : "?", t->tid,
		       (unsigned long long)t->ins,
		       (unsigned long long)t->involuntary,
		       t->wait_sum / 1e3 / t->ins, p99 / 1e3,
		       t->wait_max / 1e3);
	}
	printf("\nrunqueue delay, all threads (log2 histogram):\n");
	for (int i = 0; i < 64; i++) {
		if (hist[i])
			top = i;
		if (hist[i] > maxh)
			maxh = hist[i];
	}
	for (int i = 0; i <= top; i++) {
		uint64_t lo = i ? 1ull << (i - 1) : 0, hi = (1ull << i) - 1;
		int bar = (int)(hist[i] * 40 / maxh);

		printf("%8llu -> %-8llu us : %-6llu |%.*s\n",
		       (unsigned long long)lo, (unsigned long long)hi,
		       (unsigned long long)hist[i], bar,
		       "****************************************");
	}
	printf("\nrecords lost: %llu\n", (unsigned long long)lost);
}

int main(int argc, char **argv)
{
	static struct dial9_ring_ctrl *ctrl[MAX_CPUS];
	static unsigned char *data[MAX_CPUS];
	struct dial9_session_config cfg = { .size = sizeof(cfg),
				    .ring_size = 1 << 20 };
	struct dial9_version v;
	pthread_t th, wa, wb;
	unsigned int ncpu, cpu;
	uint64_t lost = 0;
	int fd, opt;

	while ((opt = getopt(argc, argv, "c:")) != -1)
		cycles = atoi(optarg);
	fd = open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, DIAL9_IOC_GET_VERSION, &v) ||
	    ioctl(fd, DIAL9_IOC_CONFIGURE, &cfg)) {
		perror(DIAL9_DEVICE);
		return 1;
	}
	ncpu = v.nr_cpu_ids < MAX_CPUS ? v.nr_cpu_ids : MAX_CPUS;
	for (cpu = 0; cpu < ncpu; cpu++) {
		ctrl[cpu] = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, DIAL9_MMAP_CTRL(cpu));
		if (ctrl[cpu] == MAP_FAILED) {
			ctrl[cpu] = NULL;
			continue;
		}
		data[cpu] = mmap(NULL, ctrl[cpu]->data_size, PROT_READ,
				 MAP_SHARED, fd, DIAL9_MMAP_DATA(cpu));
	}
	if (ioctl(fd, DIAL9_IOC_ENABLE, 0)) {
		perror("enable");
		return 1;
	}
	printf("dial9-demo: worker-a shares CPU 0 with a hog, worker-b has CPU 1; %d cycles of 1 ms sleep + 2 ms work\n",
	       cycles);
	pthread_create(&th, NULL, hog, NULL);
	pthread_create(&wa, NULL, worker, (void *)0);
	pthread_create(&wb, NULL, worker, (void *)(intptr_t)(ncpu > 1));
	pthread_join(wa, NULL);
	pthread_join(wb, NULL);
	stop_hog = 1;
	pthread_join(th, NULL);
	ioctl(fd, DIAL9_IOC_DISABLE, 0);

	/* 1 MiB per CPU holds this short run: read everything at the end. */
	{
		for (cpu = 0; cpu < ncpu; cpu++) {
			struct dial9_ring_ctrl *c = ctrl[cpu];
			uint64_t head, tail;

			if (!c)
				continue;
			head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
			for (tail = c->tail; tail < head; ) {
				const struct dial9_rec_header *h = (const void *)
					(data[cpu] + (tail & (c->data_size - 1)));

				account(h);
				tail += h->size;
			}
			__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
		}
	}
	for (cpu = 0; cpu < ncpu; cpu++)
		if (ctrl[cpu])
			lost += ctrl[cpu]->lost;
	report(lost);
	return 0;
}
