// SPDX-License-Identifier: MIT
/*
 * occupy - the tasks of the culprits test (culprits.sh), each pinned to a
 * CPU and named, so that a trace and perf's reference can tell them apart:
 *
 *   occupy [-c CPU] [-n NAME] [-u UID] spin              busy for ever
 *   occupy [-c CPU] [-n NAME] [-u UID] duty ON_MS OFF_MS  busy ON, asleep OFF
 *   occupy [-c CPU] [-n NAME] [-u UID] [-r DIR] victim FIFO MS
 *       block reading a byte from FIFO, then for MS ms (wall clock): busy
 *       2 ms, asleep 1 ms; exit.  It waits for the CPU both preempted and
 *       woken.  With -r it records itself through libdial9 into DIR
 *       (started once pinned, named and as its user, before it blocks;
 *       stopped, which seals the trace, before it exits), and writes
 *       DIR.ready when it blocks, DIR.go_ns and DIR.end_ns (its
 *       CLOCK_MONOTONIC ns when it read the byte, when its loop ended).
 *   occupy [-c CPU] [-u UID] exec CMD ARG...       run CMD so
 *
 * -u drops to that user and group id (with no supplementary groups)
 * before anything else, for a recording without privileges.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "dial9.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void busy(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull),
			       (long)(ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

/* Write @v (decimal) to DIR.@what, if recording into DIR. */
static void note(const char *dir, const char *what, uint64_t v)
{
	char path[4096];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s.%s", dir, what);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%llu\n", (unsigned long long)v);
		fclose(f);
	}
}

/* libdial9 recording this process into @dir, with the DIAL9_* settings. */
static int start_recording(const char *dir)
{
	struct dial9_config cfg;
	int ret;

	dial9_config_init(&cfg);
	dial9_config_from_env(&cfg);
	cfg.trace_dir = dir;
	cfg.service_name = "d9-victim";
	ret = dial9_start(&cfg);
	if (ret)
		fprintf(stderr, "occupy: recording into %s: %s\n", dir,
			dial9_strerror(ret));
	return ret;
}

static int usage(void)
{
	fprintf(stderr, "usage: occupy [-c CPU] [-n NAME] [-u UID] [-r DIR] "
		"spin | duty ON_MS OFF_MS | victim FIFO MS | exec CMD...\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *name = NULL, *rec = NULL;
	int cpu = -1, uid = -1, opt;

	while ((opt = getopt(argc, argv, "+c:n:u:r:")) != -1) {
		switch (opt) {
		case 'c': cpu = atoi(optarg); break;
		case 'n': name = optarg; break;
		case 'u': uid = atoi(optarg); break;
		case 'r': rec = optarg; break;
		default: return usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		return usage();
	if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) ||
			 setuid((uid_t)uid))) {
		perror("occupy: -u");
		return 1;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("occupy: -c");
			return 1;
		}
	}
	if (name)
		prctl(PR_SET_NAME, name);
	if (!strcmp(argv[0], "spin")) {
		for (;;)
			busy(1000000000ull);
	}
	if (!strcmp(argv[0], "duty") && argc == 3) {
		uint64_t on = strtoull(argv[1], NULL, 10) * 1000000ull;
		uint64_t off = strtoull(argv[2], NULL, 10) * 1000000ull;

		for (;;) {
			busy(on);
			nap(off);
		}
	}
	if (!strcmp(argv[0], "victim") && argc == 3) {
		uint64_t end, go;
		char c;
		int fd;

		if (rec && start_recording(rec))
			return 1;
		note(rec, "ready", 0);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0 || read(fd, &c, 1) != 1) {
			perror("occupy: victim");
			return 1;
		}
		close(fd);
		go = now_ns();
		end = go + strtoull(argv[2], NULL, 10) * 1000000ull;
		while (now_ns() < end) {
			busy(2000000);
			nap(1000000);
		}
		note(rec, "go_ns", go);
		note(rec, "end_ns", now_ns());
		if (rec)
			dial9_stop();
		return 0;
	}
	if (!strcmp(argv[0], "exec") && argc >= 2) {
		execvp(argv[1], argv + 1);
		perror("occupy: exec");
		return 127;
	}
	return usage();
}
