// SPDX-License-Identifier: MIT
/*
 * idle.c - what a recorder costs when there is nothing to record: CPU time
 * and wake-ups per second of a set of threads over a window, from /proc.
 *
 *   dial9-idle [-c CFG] [-W WHERE] [-w WARMUP_S] [-t SECS] [PID...]
 *
 * Without PIDs: every thread of this process but the one measuring.  The
 * program links libdial9, so with DIAL9_ENABLED=1 (and DIAL9_* as an
 * application would set them) the library's recorder runs here with
 * nothing to do but its own housekeeping: the threads measured are its
 * threads (and io_uring's workers, which are tasks of the process too).
 * With PIDs: every thread of those processes (perf record, LTTng's
 * consumer daemon, ...), measured from outside.
 *
 * Per thread, at the start and the end of the window (after WARMUP_S,
 * default 2, for start-up to settle; SECS default 10):
 *   CPU:       /proc/P/task/T/schedstat, first field (ns on CPU, exact),
 *              and /proc/P/task/T/stat utime+stime (clock ticks: 10 ms
 *              steps at USER_HZ 100, too coarse for an idle thread, shown
 *              beside it);
 *   wake-ups:  /proc/P/task/T/status voluntary_ctxt_switches +
 *              nonvoluntary_ctxt_switches (every time the thread went off
 *              the CPU, so every time it had been woken to run).
 * A thread that appears in the window counts from zero; one that is gone
 * by the end is missed (counted in "gone=").  Prints one line per thread
 *   BENCH-TASK cfg=CFG pid=P tid=T comm=NAME cpu_ms=X ticks_ms=Y wakeups=N
 * and one summary line
 *   BENCH part=idle where=WHERE cfg=CFG backend=B secs=S tasks=N gone=G
 *         cpu_ms_per_s=X ticks_ms_per_s=Y wakeups_per_s=Z
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dial9.h>

#define MAX_TASKS 1024

struct task {
	int pid, tid;
	char comm[32];
	uint64_t cpu_ns;	/* schedstat */
	uint64_t ticks;		/* utime + stime */
	uint64_t switches;	/* voluntary + nonvoluntary */
};

struct snap {
	int n;
	struct task t[MAX_TASKS];
};

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return 0;
}

static int read_task(int pid, int tid, struct task *t)
{
	char path[96], buf[4096], *p;
	unsigned long long ut, st;
	const char *keys[] = { "voluntary_ctxt_switches:",
			       "nonvoluntary_ctxt_switches:" };

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	t->cpu_ns = strtoull(buf, NULL, 10);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	/* comm is in parentheses and may hold spaces: fields after the
	 * last ')'; utime and stime are fields 14 and 15 of the line, the
	 * 12th and 13th after it. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	t->ticks = ut + st;
	*p = 0;
	snprintf(t->comm, sizeof(t->comm), "%s", strchr(buf, '(') + 1);
	for (char *q = t->comm; *q; q++)
		if (*q == ' ')
			*q = '_';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	for (size_t k = 0; k < 2; k++) {
		p = strstr(buf, keys[k]);
		if (p)
			t->switches += strtoull(p + strlen(keys[k]), NULL, 10);
	}
	return 0;
}

static void take(struct snap *s, const int *pids, int npids, int skip_tid)
{
	s->n = 0;
	for (int i = 0; i < npids; i++) {
		char path[64];
		struct dirent *d;
		DIR *dir;

		snprintf(path, sizeof(path), "/proc/%d/task", pids[i]);
		dir = opendir(path);
		if (!dir)
			continue;
		while ((d = readdir(dir)) && s->n < MAX_TASKS) {
			int tid = atoi(d->d_name);

			if (tid <= 0 || tid == skip_tid)
				continue;
			if (!read_task(pids[i], tid, &s->t[s->n]))
				s->n++;
		}
		closedir(dir);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

int main(int argc, char **argv)
{
	static struct snap a, b;
	const char *cfg = "dial9-lib", *where = "host";
	double warmup = 2, secs = 10, wall, cpu = 0, ticks = 0, sw = 0;
	int pids[64], npids = 0, skip = 0, opt, gone = 0;
	long hz = sysconf(_SC_CLK_TCK);
	struct dial9_stats st = { .size = sizeof(st) };
	uint64_t t0, t1;

	while ((opt = getopt(argc, argv, "c:W:w:t:")) != -1) {
		switch (opt) {
		case 'c': cfg = optarg; break;
		case 'W': where = optarg; break;
		case 'w': warmup = atof(optarg); break;
		case 't': secs = atof(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-c CFG] [-W WHERE] [-w WARMUP_S] [-t SECS] [PID...]\n",
				argv[0]);
			return 2;
		}
	}
	for (; optind < argc && npids < 64; optind++)
		pids[npids++] = atoi(argv[optind]);
	if (!npids) {
		pids[npids++] = getpid();
		skip = gettid();
	}
	if (secs <= 0 || hz <= 0)
		return 2;
	sleep_s(warmup);
	take(&a, pids, npids, skip);
	t0 = mono_ns();
	sleep_s(secs);
	take(&b, pids, npids, skip);
	t1 = mono_ns();
	wall = (double)(t1 - t0) / 1e9;
	for (int i = 0; i < b.n; i++) {
		const struct task *e = &b.t[i];
		struct task z = { 0 };
		const struct task *s = &z;

		for (int j = 0; j < a.n; j++)
			if (a.t[j].tid == e->tid && a.t[j].pid == e->pid)
				s = &a.t[j];
		printf("BENCH-TASK cfg=%s pid=%d tid=%d comm=%s cpu_ms=%.3f ticks_ms=%.0f wakeups=%llu\n",
		       cfg, e->pid, e->tid, e->comm,
		       (double)(e->cpu_ns - s->cpu_ns) / 1e6,
		       (double)(e->ticks - s->ticks) * 1000.0 / hz,
		       (unsigned long long)(e->switches - s->switches));
		cpu += (double)(e->cpu_ns - s->cpu_ns) / 1e6;
		ticks += (double)(e->ticks - s->ticks) * 1000.0 / hz;
		sw += (double)(e->switches - s->switches);
	}
	for (int j = 0; j < a.n; j++) {
		int found = 0;

		for (int i = 0; i < b.n && !found; i++)
			found = b.t[i].tid == a.t[j].tid;
		gone += !found;
	}
	dial9_get_stats(&st);
	printf("BENCH part=idle where=%s cfg=%s backend=%s secs=%.2f tasks=%d gone=%d cpu_ms_per_s=%.4f ticks_ms_per_s=%.2f wakeups_per_s=%.2f\n",
	       where, cfg, skip ? (st.sched_backend[0] ? st.sched_backend :
				   st.health ? "none" : "off") : "-",
	       wall, b.n, gone, cpu / wall, ticks / wall, sw / wall);
	return 0;
}
