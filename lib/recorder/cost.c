// SPDX-License-Identifier: MIT
/*
 * cost.c - what the recorder's own threads cost: the CPU time of
 * dial9-flush, dial9-worker, and the io_uring workers (iou-wrk-*) that
 * do their writes, from the scheduler's own account of each
 * (/proc/self/task/TID/schedstat: its time on a CPU, in ns).  The ring
 * reader's is its own (kreader_rt.c).  dial9_stats.recorder_cpu_ns.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/recorder.h"

/* A file of /proc/self/task/@tid into buf: its length, or -1. */
static ssize_t task_file(const char *tid, const char *what, char *buf,
			 size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%s/%s", tid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

uint64_t d9_cost_threads(bool worker)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	uint64_t sum = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char comm[32], st[128];

		if (de->d_name[0] == '.' ||
		    task_file(de->d_name, "comm", comm, sizeof(comm)) <= 0)
			continue;
		comm[strcspn(comm, "\n")] = 0;
		if (strcmp(comm, "dial9-flush") &&
		    (!worker || strcmp(comm, "dial9-worker")) &&
		    strncmp(comm, "iou-wrk-", 8))
			continue;
		if (task_file(de->d_name, "schedstat", st, sizeof(st)) > 0)
			sum += strtoull(st, NULL, 10);
	}
	closedir(d);
	return sum;
}
