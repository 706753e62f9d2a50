// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal dial9 consumer for the scheduler-tracing benchmark, the dial9
 * counterpart of `perf sched record CMD` and `trace-cmd record CMD`: run
 * CMD while a session records it (its process and every process it forks,
 * through DIAL9_IOC_ADD_TARGET) or, with -a, the whole machine.  This
 * process drains the rings as they fill (poll() at a quarter-ring
 * watermark) and, with -o, appends the raw records to FILE as perf and
 * trace-cmd append theirs to perf.data and trace.dat.
 *
 *   dial9-record [-a] [-o FILE] [-b RING_BYTES] -- CMD [ARGS]
 *
 * Prints on stderr:  dial9-record read=R lost=L bytes=B
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/dial9.h>

#define MAX_CPUS 64

static struct dial9_ring_ctrl *ctrl[MAX_CPUS];
static const unsigned char *data[MAX_CPUS];
static unsigned int ncpu;
static uint64_t nread, nbytes;
static int ofd = -1;

static void put(const unsigned char *p, uint64_t len)
{
	while (ofd >= 0 && len) {
		ssize_t n = write(ofd, p, len);

		if (n <= 0) {
			perror("dial9-record: write");
			exit(1);
		}
		p += n;
		len -= n;
	}
}

static void drain(void)
{
	for (unsigned int cpu = 0; cpu < ncpu; cpu++) {
		struct dial9_ring_ctrl *c = ctrl[cpu];
		uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
		uint64_t tail = c->tail, mask = c->data_size - 1;

		if (tail == head)
			continue;
		/* [tail, head) as at most two pieces of the data area */
		if ((tail & mask) + (head - tail) > c->data_size) {
			put(data[cpu] + (tail & mask), c->data_size - (tail & mask));
			put(data[cpu], (head & mask));
		} else {
			put(data[cpu] + (tail & mask), head - tail);
		}
		nbytes += head - tail;
		while (tail < head) {
			const struct dial9_rec_header *h = (const void *)
				(data[cpu] + (tail & mask));

			nread += h->type != DIAL9_REC_PAD &&
				 h->type != DIAL9_REC_LOST;
			tail += h->size;
		}
		__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	}
}

int main(int argc, char **argv)
{
	struct dial9_session_config cfg = { .size = sizeof(cfg),
				    .flags = DIAL9_CFG_NO_SELF };
	struct dial9_target tgt = { .size = sizeof(tgt),
				    .flags = DIAL9_TARGET_CHILDREN };
	struct dial9_version v;
	int opt, fd, go[2], status = 0;
	uint64_t lost = 0;
	pid_t child;
	char c = 0;

	while ((opt = getopt(argc, argv, "+ao:b:")) != -1) {
		switch (opt) {
		case 'a': cfg.flags = DIAL9_CFG_SYSTEM_WIDE; break;
		case 'o':
			ofd = open(optarg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (ofd < 0)
				return perror(optarg), 1;
			break;
		case 'b': cfg.ring_size = strtoul(optarg, NULL, 0); break;
		default:
			goto usage;
		}
	}
	if (optind >= argc) {
usage:
		fprintf(stderr, "usage: %s [-a] [-o FILE] [-b RING] -- CMD...\n",
			argv[0]);
		return 2;
	}
	fd = open(DIAL9_DEVICE, O_RDWR);
	if (fd < 0 || ioctl(fd, DIAL9_IOC_GET_VERSION, &v) ||
	    ioctl(fd, DIAL9_IOC_CONFIGURE, &cfg))
		return perror("dial9"), 1;
	ncpu = v.nr_cpu_ids < MAX_CPUS ? v.nr_cpu_ids : MAX_CPUS;
	for (unsigned int cpu = 0; cpu < ncpu; cpu++) {
		ctrl[cpu] = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, DIAL9_MMAP_CTRL(cpu));
		if (ctrl[cpu] == MAP_FAILED)
			return perror("mmap"), 1;
		data[cpu] = mmap(NULL, ctrl[cpu]->data_size, PROT_READ,
				 MAP_SHARED, fd, DIAL9_MMAP_DATA(cpu));
		if (data[cpu] == MAP_FAILED)
			return perror("mmap"), 1;
		ctrl[cpu]->watermark = ctrl[cpu]->data_size / 4;
	}

	/* The child waits until it is a target and the session is on. */
	if (pipe(go))
		return perror("pipe"), 1;
	child = fork();
	if (child < 0)
		return perror("fork"), 1;
	if (!child) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		close(go[0]);
		close(fd);
		if (ofd >= 0)
			close(ofd);
		execvp(argv[optind], argv + optind);
		perror(argv[optind]);
		_exit(127);
	}
	close(go[0]);
	tgt.pid = child;
	if ((!(cfg.flags & DIAL9_CFG_SYSTEM_WIDE) &&
	     ioctl(fd, DIAL9_IOC_ADD_TARGET, &tgt)) ||
	    ioctl(fd, DIAL9_IOC_ENABLE, 0)) {
		perror("dial9");
		kill(child, SIGKILL);
		return 1;
	}
	if (write(go[1], &c, 1) != 1)
		return perror("pipe"), 1;
	close(go[1]);

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		pid_t w;

		poll(&p, 1, 100);
		drain();
		w = waitpid(child, &status, WNOHANG);
		if (w == child)
			break;
		if (w < 0 && errno != EINTR)
			return perror("waitpid"), 1;
	}
	ioctl(fd, DIAL9_IOC_DISABLE, 0);
	drain();
	for (unsigned int cpu = 0; cpu < ncpu; cpu++)
		lost += ctrl[cpu]->lost;
	fprintf(stderr, "dial9-record read=%llu lost=%llu bytes=%llu\n",
		(unsigned long long)nread, (unsigned long long)lost,
		(unsigned long long)nbytes);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
