// SPDX-License-Identifier: MIT
/*
 * record_bench.c - what one recorded event costs, side by side with a
 * raw append baseline (a timestamp and a 24-byte memcpy into a
 * thread-local buffer) and with LTTng-UST recording the same payload
 * in an active session, for 1 and 2 threads, with dial9's flush thread
 * (and LTTng's consumer daemon) writing to disk. Prints ns/event, the
 * ratios, bytes/event and events lost, then the same figures as
 * "BENCH part=3 ..." lines for bench/bench-table.sh. dial9 is used only
 * through <dial9.h>.
 *
 * Each figure is the recording thread's CPU time (bench_time.h), the
 * median of BENCH_ROUNDS rounds, averaged over the threads.
 *
 * LTTng-UST: the benchmark starts its own lttng-sessiond (root: the
 * system-wide one in /var/run/lttng, so not if one already runs),
 * creates a session with one user-space channel, runs lttng_bench (the
 * tracepoint provider, linked with liblttng-ust) inside it, reads the
 * discarded-event count and the trace size, and destroys the session
 * and stops the daemon. Where that cannot be done the table says why.
 *
 *   record_bench [--lttng PATH-TO-lttng_bench] [events-per-thread]
 *                                               (default 2,000,000)
 */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "bench_time.h"
#include "dial9.h"

DIAL9_EVENT_TYPE(t_bench, "bench.event", DIAL9_FIELD(U64, a),
		 DIAL9_FIELD(U64, b));

static uint64_t events = 2000000;

struct raw_event {
	uint64_t ts, a, b;
};

static __thread uint8_t *raw_buf;
static __thread size_t raw_len;
#define RAW_CAP (1u << 20)

enum mode { RAW_TSC, RAW_GETTIME, DIAL9 };

/* events/BENCH_ROUNDS events per round; the median round's ns/event */
static void *run(void *arg)
{
	enum mode m = (enum mode)(uintptr_t)arg;
	uint64_t sink = 0, per = events / BENCH_ROUNDS, i = 0;
	double r[BENCH_ROUNDS], *ns = malloc(sizeof(*ns));

	raw_buf = malloc(RAW_CAP);
	memset(raw_buf, 0, RAW_CAP); /* pre-fault, as dial9 does */
	raw_len = 0;
	for (int k = 0; k < BENCH_ROUNDS; k++) {
		uint64_t t0 = bench_thread_ns(), end = i + per;

		for (; i < end; i++) {
			if (m == DIAL9) {
				DIAL9_EMIT(t_bench, dial9_u64(i),
					   dial9_u64(i ^ 0x55));
				continue;
			}
			struct raw_event e = { m == RAW_TSC ? __rdtsc() :
							      bench_mono_ns(),
					       i, i ^ 0x55 };

			if (raw_len + sizeof(e) > RAW_CAP)
				raw_len = 0;
			memcpy(raw_buf + raw_len, &e, sizeof(e));
			raw_len += sizeof(e);
			__asm__ volatile("" : : "r"(raw_buf) : "memory");
		}
		r[k] = (double)(bench_thread_ns() - t0) / (double)per;
	}
	sink += raw_buf[raw_len / 2];
	free(raw_buf);
	*ns = bench_median(r, BENCH_ROUNDS) + (double)(sink & 0);
	return ns;
}

/* Mean ns/event over nthreads threads running mode m at once. */
static double measure(enum mode m, int nthreads)
{
	pthread_t th[8];
	double sum = 0;

	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, run, (void *)(uintptr_t)m);
	for (int i = 0; i < nthreads; i++) {
		double *ns;

		pthread_join(th[i], (void **)&ns);
		sum += *ns;
		free(ns);
	}
	return sum / nthreads;
}

/* ---- LTTng-UST ---------------------------------------------------------- */

struct lttng {
	const char *bench; /* lttng_bench, NULL if not built */
	char home[96];     /* LTTNG_HOME for our daemon and the commands */
	char pidfile[160];
	pid_t sessiond;    /* ours, 0 if none */
	char why[200];     /* why there is no LTTng figure */
};

/* Run a shell command, its output (stdout and stderr) into out. */
static int sh(const char *cmd, char *out, size_t outlen)
{
	char full[1024];
	size_t n = 0;
	FILE *f;
	int st;

	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	f = popen(full, "r");
	if (!f)
		return -1;
	if (out && outlen) {
		n = fread(out, 1, outlen - 1, f);
		out[n] = 0;
	}
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void first_line(char *s)
{
	s[strcspn(s, "\n")] = 0;
}

static pid_t read_pid(const char *path)
{
	FILE *f = fopen(path, "r");
	long pid = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

/* Start a session daemon of our own; false and lx->why if we cannot. */
static bool lttng_up(struct lttng *lx, const char *dir)
{
	char out[512];
	pid_t old;
	int rc;

	if (!lx->bench) {
		snprintf(lx->why, sizeof(lx->why),
			 "not built: liblttng-ust-dev missing (scripts/deps.sh)");
		return false;
	}
	if (sh("command -v lttng-sessiond && command -v lttng", NULL, 0)) {
		snprintf(lx->why, sizeof(lx->why),
			 "lttng-tools not installed (scripts/deps.sh)");
		return false;
	}
	snprintf(lx->home, sizeof(lx->home), "%s/lttng-home", dir);
	if (mkdir(lx->home, 0700)) {
		snprintf(lx->why, sizeof(lx->why), "mkdir %s: %s", lx->home,
			 strerror(errno));
		return false;
	}
	setenv("LTTNG_HOME", lx->home, 1);
	/* root's daemon is the system-wide one; others' live in LTTNG_HOME */
	if (geteuid() == 0)
		snprintf(lx->pidfile, sizeof(lx->pidfile),
			 "/var/run/lttng/lttng-sessiond.pid");
	else
		snprintf(lx->pidfile, sizeof(lx->pidfile),
			 "%s/.lttng/lttng-sessiond.pid", lx->home);
	old = read_pid(lx->pidfile);
	if (old > 0 && !kill(old, 0)) {
		snprintf(lx->why, sizeof(lx->why),
			 "a session daemon not ours runs (pid %d)", (int)old);
		return false;
	}
	rc = sh("lttng-sessiond --daemonize --no-kernel", out, sizeof(out));
	lx->sessiond = read_pid(lx->pidfile);
	if (rc || lx->sessiond <= 0 || kill(lx->sessiond, 0)) {
		first_line(out);
		snprintf(lx->why, sizeof(lx->why),
			 "lttng-sessiond failed (exit %d): %.120s", rc, out);
		lx->sessiond = 0;
		return false;
	}
	return true;
}

static void lttng_down(struct lttng *lx)
{
	if (lx->sessiond <= 0)
		return;
	kill(lx->sessiond, SIGTERM);
	for (int i = 0; i < 500 && !kill(lx->sessiond, 0); i++) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
	}
	if (!kill(lx->sessiond, 0))
		kill(lx->sessiond, SIGKILL);
	lx->sessiond = 0;
}

static uint64_t tree_bytes;

static int add_size(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F)
		tree_bytes += (uint64_t)st->st_size;
	return 0;
}

/* Discarded events of every channel in `lttng list` output. */
static uint64_t discarded(const char *list)
{
	const char *key = "Discarded events:", *p = list;
	uint64_t sum = 0;

	while ((p = strstr(p, key))) {
		p += strlen(key);
		sum += strtoull(p, NULL, 10);
	}
	return sum;
}

/* One measurement in a fresh session: 0, or -1 and lx->why. */
static int lttng_run(struct lttng *lx, const char *dir, int nthreads,
		     double *ns, double *bpe, uint64_t *lost)
{
	char name[64], out_dir[160], cmd[512], out[4096];
	const char *steps[] = {
		"lttng create %1$s --output=%2$s",
		"lttng enable-channel -u -s %1$s ch --subbuf-size=1M --num-subbuf=8",
		"lttng enable-event -u -s %1$s -c ch dial9_bench:event",
		"lttng start %1$s",
	};
	int rc = 0;

	snprintf(name, sizeof(name), "dial9-bench-%d-%d", (int)getpid(),
		 nthreads);
	snprintf(out_dir, sizeof(out_dir), "%s/lttng-trace-%d", dir, nthreads);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && !rc; i++) {
		snprintf(cmd, sizeof(cmd), steps[i], name, out_dir);
		rc = sh(cmd, out, sizeof(out));
	}
	if (!rc) {
		snprintf(cmd, sizeof(cmd), "%s %llu %d", lx->bench,
			 (unsigned long long)events, nthreads);
		rc = sh(cmd, out, sizeof(out));
		if (!rc && sscanf(out, "ns/event %lf", ns) != 1)
			rc = -1;
	}
	if (!rc) {
		snprintf(cmd, sizeof(cmd), "lttng stop %s", name);
		rc = sh(cmd, out, sizeof(out));
	}
	if (!rc) {
		snprintf(cmd, sizeof(cmd), "lttng list %s", name);
		rc = sh(cmd, out, sizeof(out));
		*lost = discarded(out);
	}
	if (rc) {
		first_line(out);
		snprintf(lx->why, sizeof(lx->why), "`%.40s...` failed: %.100s",
			 cmd, out);
	}
	snprintf(cmd, sizeof(cmd), "lttng destroy %s", name);
	sh(cmd, NULL, 0);
	if (rc)
		return -1;
	tree_bytes = 0;
	nftw(out_dir, add_size, 16, FTW_PHYS);
	*bpe = (double)tree_bytes /
	       (double)(events / BENCH_ROUNDS * BENCH_ROUNDS * nthreads - *lost);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/dial9-bench-XXXXXX";
	struct lttng lx = { 0 };
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	bool have_lttng;
	char cmd[128];
	int a = 1;

	if (argc > 2 && !strcmp(argv[1], "--lttng")) {
		lx.bench = access(argv[2], X_OK) ? NULL : argv[2];
		a = 3;
	}
	if (argc > a)
		events = strtoull(argv[a], NULL, 10);
	if (events < BENCH_ROUNDS)
		events = BENCH_ROUNDS;
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	printf("dial9 record cost, %llu events per thread (median of %d rounds "
	       "of the recording thread's CPU time), written under %s\n\n",
	       (unsigned long long)events, BENCH_ROUNDS, dir);
	have_lttng = lttng_up(&lx, dir);
	printf("%-7s %9s %9s %9s %8s %8s %8s %9s %9s %8s %8s %8s %9s\n",
	       "threads", "raw tsc", "raw gett", "dial9", "/tsc", "/gettime",
	       "B/event", "lost", "lttng-ust", "/tsc", "/dial9", "B/event",
	       "lost");
	for (int n = 1; n <= 2; n++) {
		double raw_tsc, raw_gt, d9, lt_ns = 0, lt_bpe = 0;
		uint64_t lt_lost = 0;
		bool lt_ok = false;
		int ret;

		measure(RAW_TSC, n); /* warm up */
		raw_tsc = measure(RAW_TSC, n);
		raw_gt = measure(RAW_GETTIME, n);
		dial9_config_init(&c);
		c.trace_dir = dir;
		c.service_name = "bench";
		/* the application's events only: no scheduler source */
		c.sched = DIAL9_SCHED_OFF;
		ret = dial9_start(&c);
		if (ret) {
			fprintf(stderr, "dial9_start: %s\n", dial9_strerror(ret));
			lttng_down(&lx);
			return 1;
		}
		d9 = measure(DIAL9, n);
		dial9_stop();
		dial9_get_stats(&st);
		if (have_lttng)
			lt_ok = !lttng_run(&lx, dir, n, &lt_ns, &lt_bpe,
					   &lt_lost);
		printf("%-7d %6.1f ns %6.1f ns %6.1f ns %7.2fx %7.2fx %8.2f %9llu",
		       n, raw_tsc, raw_gt, d9, d9 / raw_tsc, d9 / raw_gt,
		       st.events_written ?
			       (double)st.bytes_written / (double)st.events_written :
			       0.0,
		       (unsigned long long)st.events_lost);
		if (lt_ok)
			printf(" %6.1f ns %7.2fx %7.2fx %8.2f %9llu\n", lt_ns,
			       lt_ns / raw_tsc, lt_ns / d9, lt_bpe,
			       (unsigned long long)lt_lost);
		else
			printf("  lttng-ust: n/a, %s\n", lx.why);
		/* the same, for bench/bench-table.sh */
		printf("BENCH part=3 threads=%d events=%llu raw_tsc=%.2f raw_gettime=%.2f "
		       "dial9=%.2f dial9_bpe=%.2f dial9_lost=%llu lttng=%.2f "
		       "lttng_bpe=%.2f lttng_lost=%llu lttng_ok=%d\n",
		       n, (unsigned long long)events, raw_tsc, raw_gt, d9,
		       st.events_written ? (double)st.bytes_written /
						   (double)st.events_written : 0.0,
		       (unsigned long long)st.events_lost, lt_ns, lt_bpe,
		       (unsigned long long)lt_lost, (int)lt_ok);
	}
	lttng_down(&lx);
	printf("\nraw: a timestamp and a 24-byte memcpy into a pre-faulted "
	       "thread-local buffer (no hand-off, no I/O).\n"
	       "dial9: DIAL9_EMIT of a two-u64 event with a running recorder "
	       "(1 MiB buffers, flush thread writing to disk).\n"
	       "lttng-ust: a tracepoint with two u64 fields, active session, "
	       "one per-user channel (8 x 1 MiB sub-buffers, discard mode),\n"
	       "  consumer daemon writing to disk; B/event = trace files / "
	       "events recorded; lost = discarded events.\n");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		return 1;
	return 0;
}
