// SPDX-License-Identifier: GPL-2.0
/*
 * dial9-read: a minimal /dev/dial9 reader, using nothing but the UAPI
 * header.  It records the calling process (or, with -a, every task; that
 * needs CAP_PERFMON), maps each CPU's ring, and prints records as text.
 *
 *   dial9-read [-a] [-n COUNT]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/dial9.h>

#define MAX_CPUS 1024

static void print_record(const struct dial9_rec_header *h)
{
	const struct dial9_rec_switch *sw = (const void *)h;
	const struct dial9_rec_wake *wk = (const void *)h;
	const struct dial9_rec_migrate *mg = (const void *)h;
	const struct dial9_rec_exit *ex = (const void *)h;
	const struct dial9_rec_comm *cm = (const void *)h;
	const struct dial9_rec_lost *lo = (const void *)h;

	printf("%llu cpu=%u ", (unsigned long long)h->time_ns, h->cpu);
	switch (h->type) {
	case DIAL9_REC_SWITCH:
		printf("switch prev=%d/%d state=%u%s next=%d/%d wait_ns=%llu\n",
		       (int)sw->prev_tgid, (int)sw->prev_tid, sw->prev_state,
		       h->flags & DIAL9_SWITCH_PREEMPT ? " preempt" : "",
		       (int)sw->next_tgid, (int)sw->next_tid,
		       (unsigned long long)sw->next_wait_ns);
		break;
	case DIAL9_REC_WAKING:
	case DIAL9_REC_WAKEUP:
	case DIAL9_REC_WAKEUP_NEW:
		printf("%s tid=%d/%d by=%d/%d target_cpu=%u\n",
		       h->type == DIAL9_REC_WAKING ? "waking" :
		       h->type == DIAL9_REC_WAKEUP ? "wakeup" : "wakeup_new",
		       (int)wk->tgid, (int)wk->tid, (int)wk->waker_tgid,
		       (int)wk->waker_tid, wk->target_cpu);
		break;
	case DIAL9_REC_MIGRATE:
		printf("migrate tid=%d/%d cpu %u -> %u\n", (int)mg->tgid,
		       (int)mg->tid, mg->orig_cpu, mg->dest_cpu);
		break;
	case DIAL9_REC_EXIT:
		printf("exit tid=%d/%d\n", (int)ex->tgid, (int)ex->tid);
		break;
	case DIAL9_REC_COMM:
		printf("comm tid=%d/%d %.16s\n", (int)cm->tgid, (int)cm->tid,
		       cm->comm);
		break;
	case DIAL9_REC_LOST:
		printf("lost %llu\n", (unsigned long long)lo->count);
		break;
	default:
		printf("type=%u size=%u\n", h->type, h->size);
	}
}

int main(int argc, char **argv)
{
	static struct dial9_ring_ctrl *ctrl[MAX_CPUS];
	static unsigned char *data[MAX_CPUS];
	struct dial9_session_config cfg = { .size = sizeof(cfg) };
	struct dial9_version v;
	long count = -1, seen = 0;
	struct pollfd pfd;
	unsigned int cpu, ncpu;
	int fd, opt;

	while ((opt = getopt(argc, argv, "an:")) != -1) {
		if (opt == 'a')
			cfg.flags |= DIAL9_CFG_SYSTEM_WIDE;
		else if (opt == 'n')
			count = atol(optarg);
		else
			return fprintf(stderr, "usage: %s [-a] [-n COUNT]\n",
				       argv[0]), 2;
	}
	fd = open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, DIAL9_IOC_GET_VERSION, &v) ||
	    ioctl(fd, DIAL9_IOC_CONFIGURE, &cfg))
		return perror(DIAL9_DEVICE), 1;
	if (v.abi_version != DIAL9_ABI_VERSION)
		return fprintf(stderr, "ABI %u, want %u\n", v.abi_version,
			       DIAL9_ABI_VERSION), 1;
	ncpu = v.nr_cpu_ids < MAX_CPUS ? v.nr_cpu_ids : MAX_CPUS;
	for (cpu = 0; cpu < ncpu; cpu++) {
		ctrl[cpu] = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, DIAL9_MMAP_CTRL(cpu));
		if (ctrl[cpu] == MAP_FAILED) {	/* not a possible CPU */
			ctrl[cpu] = NULL;
			continue;
		}
		data[cpu] = mmap(NULL, ctrl[cpu]->data_size, PROT_READ,
				 MAP_SHARED, fd, DIAL9_MMAP_DATA(cpu));
		if (data[cpu] == MAP_FAILED)
			return perror("mmap"), 1;
	}
	if (ioctl(fd, DIAL9_IOC_ENABLE, 0))
		return perror("enable"), 1;

	pfd.fd = fd;
	pfd.events = POLLIN;
	while (count < 0 || seen < count) {
		for (cpu = 0; cpu < ncpu; cpu++) {
			struct dial9_ring_ctrl *c = ctrl[cpu];
			__u64 head, tail;

			if (!c)
				continue;
			head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
			for (tail = c->tail; tail < head; ) {
				const struct dial9_rec_header *h = (const void *)
					(data[cpu] + (tail & (c->data_size - 1)));

				if (h->type != DIAL9_REC_PAD &&
				    (count < 0 || seen < count)) {
					print_record(h);
					seen++;
				}
				tail += h->size;
			}
			__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
		}
		fflush(stdout);
		if (count < 0 || seen < count)
			poll(&pfd, 1, 1000);
	}
	return 0;
}
