// SPDX-License-Identifier: GPL-2.0
/*
 * The ping-pong workload of dial9-pingpong (pairs.h) in a process that
 * links libdial9 and records itself as an application would: nothing but
 * the environment.  With DIAL9_ENABLED=1 the library starts its recorder
 * when it loads, with its defaults (dial9.ko if /dev/dial9 opens, its
 * reader thread, its default ring per CPU, DIAL9_* overrides honoured);
 * without, the library is linked and idle (the baseline).
 *
 *   dial9-libpairs [-p PAIRS] [-n ROUNDS]
 *
 * Only the bouncing is timed.  After it, dial9_stop() drains and seals,
 * and the recorder's counters are printed.  One line on stdout:
 *   pingpong pairs=P rounds=N ns=T ns_per_rt=X
 *       [rec_ns=C rec_sw=S backend=B written=W read=R sched_events=E
 *        app_dropped=D lost=L]
 * written: records dial9.ko wrote for the session; read: records the
 * library read from its rings; lost: records the kernel dropped (full
 * rings) or, with the perf backend, samples perf lost.  rec_ns and
 * rec_sw: CPU time and context switches of the recorder's threads while
 * the workload ran: the threads of the process but main and the
 * workload's (the library's and io_uring's workers), from
 * /proc/self/task/T/schedstat and status, read by main before the
 * workload starts and by the workload's last thread as it ends (not after
 * the joins: by then the recorder may have caught up on a backlog).  Under -icount on one vCPU rec_ns is the instructions the
 * recorder spent in user space and in its own system calls.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dial9.h>

#include "pairs.h"

static pid_t main_tid;

/* A thread of the workload: named "dial9-libpairs" (inherited from main),
 * unlike the recorder's threads, which name themselves. */
static int is_workload(int tid)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return !strncmp(comm, "dial9-libpairs", 14);
}
static unsigned long long ns1, sw1;

/* Per thread, with DIAL9_BENCH_THREADS=1: where the recorder's time goes. */
#define MAXT 64
static struct tcount {
	int tid;
	char comm[32];
	unsigned long long ns[2], sw[2];
} tcs[MAXT];
static int ntcs, phase;

static struct tcount *tc_of(int tid, const char *comm)
{
	for (int i = 0; i < ntcs; i++)
		if (tcs[i].tid == tid)
			return &tcs[i];
	if (ntcs == MAXT)
		return NULL;
	tcs[ntcs].tid = tid;
	snprintf(tcs[ntcs].comm, sizeof(tcs[ntcs].comm), "%s", comm);
	return &tcs[ntcs++];
}

/* CPU ns and context switches of every thread of this process but main
 * and the calling one. */
static void others(unsigned long long *ns, unsigned long long *sw)
{
	static const char *const keys[] = { "voluntary_ctxt_switches:",
					    "nonvoluntary_ctxt_switches:" };
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");

	*ns = *sw = 0;
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		char path[64], buf[2048], *p;
		int tid = atoi(d->d_name);
		size_t n;
		FILE *f;

		unsigned long long tns = 0, tsw = 0;
		struct tcount *tc;

		if (tid <= 0 || tid == gettid() || tid == main_tid ||
		    is_workload(tid))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			tns = strtoull(buf, NULL, 10);
		*ns += tns;
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		fclose(f);
		for (size_t k = 0; k < 2; k++)
			if ((p = strstr(buf, keys[k])))
				tsw += strtoull(p + strlen(keys[k]), NULL, 10);
		*sw += tsw;
		p = strstr(buf, "Name:\t");
		if (p) {
			p += 6;
			p[strcspn(p, "\n")] = 0;
		}
		tc = tc_of(tid, p ? p : "?");
		if (tc) {
			tc->ns[phase] = tns;
			tc->sw[phase] = tsw;
		}
	}
	closedir(dir);
}

static void at_end(void)
{
	phase = 1;
	others(&ns1, &sw1);
}

int main(int argc, char **argv)
{
	struct dial9_stats st = { .size = sizeof(st) };
	int pairs = 1, opt, running;
	long rounds = 20000;
	unsigned long long ns0, sw0;
	uint64_t ns;

	while ((opt = getopt(argc, argv, "p:n:")) != -1) {
		switch (opt) {
		case 'p': pairs = atoi(optarg); break;
		case 'n': rounds = atol(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-p PAIRS] [-n ROUNDS]\n",
				argv[0]);
			return 2;
		}
	}
	dial9_get_stats(&st);
	running = st.health != DIAL9_HEALTH_OFF;
	main_tid = gettid();
	others(&ns0, &sw0);
	pairs_done_hook = at_end;
	ns = pairs_run(pairs, rounds);
	if (!ns)
		return 1;
	printf("pingpong pairs=%d rounds=%ld ns=%llu ns_per_rt=%.1f", pairs,
	       rounds, (unsigned long long)ns, (double)ns / rounds);
	if (running) {
		dial9_stop();
		dial9_get_stats(&st);
		printf(" rec_ns=%llu rec_sw=%llu backend=%s written=%llu read=%llu sched_events=%llu app_dropped=%llu lost=%llu",
		       ns1 - ns0, sw1 - sw0,
		       st.sched_backend[0] ? st.sched_backend : "none",
		       (unsigned long long)st.sched_written,
		       (unsigned long long)st.sched_read,
		       (unsigned long long)st.sched_events,
		       (unsigned long long)st.events_lost,
		       (unsigned long long)st.sched_lost);
		/* the ring reader's time at SCHED_FIFO, its stretches, cuts */
		printf(" rt_ns=%llu rt_entries=%u rt_capped=%u reader_prio=%u",
		       (unsigned long long)st.sched_reader_rt_ns,
		       st.sched_reader_rt_entries, st.sched_reader_rt_capped,
		       st.sched_reader_prio);
	}
	printf("\n");
	if (getenv("DIAL9_BENCH_THREADS"))
		for (int i = 0; i < ntcs; i++)
			printf("BENCH-THREAD tid=%d comm=%s ns=%llu sw=%llu ns_per_rt=%.1f\n",
			       tcs[i].tid, tcs[i].comm,
			       tcs[i].ns[1] - tcs[i].ns[0],
			       tcs[i].sw[1] - tcs[i].sw[0],
			       (double)(tcs[i].ns[1] - tcs[i].ns[0]) / rounds);
	return 0;
}
