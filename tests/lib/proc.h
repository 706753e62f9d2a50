/* SPDX-License-Identifier: MIT */
/*
 * proc.h - this process's threads as /proc shows them, for the tests
 * (tests/lib through helpers.h, tests/sched) and the benchmarks
 * (bench/e2e.c).  Only libc: the VM's static test programs include it.
 */
#ifndef DIAL9_TEST_PROC_H
#define DIAL9_TEST_PROC_H

#include <dirent.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* The tid of this process's first thread whose name starts with @name
 * (/proc/self/task/TID/comm), 0 if there is none. */
static inline pid_t test_thread_tid(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	while (d && !tid && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, name, strlen(name)))
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}

/* The kernel's total runqueue wait of this process's thread @tid, in
 * ns (schedstat's second field; 0 if it cannot be read). */
static inline uint64_t test_run_delay(pid_t tid)
{
	unsigned long long a = 0, b = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &a, &b) != 2)
			b = 0;
		fclose(f);
	}
	return b;
}

/* The kernel's count of the context switches of this process's thread
 * @tid so far (/proc/self/task/TID/status): voluntary (it blocked) in
 * *@vol, all (also preempted) returned; 0 if it cannot be read. */
static inline uint64_t test_ctx_switches(pid_t tid, uint64_t *vol)
{
	unsigned long long v = 0, nv = 0;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "voluntary_ctxt_switches:", 24))
			v = strtoull(line + 24, NULL, 10);
		else if (!strncmp(line, "nonvoluntary_ctxt_switches:", 27))
			nv = strtoull(line + 27, NULL, 10);
	}
	if (f)
		fclose(f);
	if (vol)
		*vol = v;
	return v + nv;
}

/* Pin the calling thread to CPU 0. */
static inline void test_pin0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

#endif
