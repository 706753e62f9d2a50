// SPDX-License-Identifier: GPL-2.0
/*
 * A benchmark, not a test (bench/kmod/probe_cost.sh, make bench-probe, runs it in the VM
 * under -icount): what the probes cost a ping-pong that no session
 * records, beside one session of another user and beside many.
 *
 *   probe_cost USERS SESSIONS ROUNDS REPS [occupants|busy]
 *
 * Boots one holder (uid 60000) with one enabled session recording its
 * own sleeping process, times REPS runs of ROUNDS round trips of a root
 * ping-pong (two threads of a fresh process, through two pipes, on CPU
 * 0); then adds USERS holders (uids 60001...) of SESSIONS sessions each
 * and times the same again; with "occupants", every session has
 * DIAL9_CFG_OCCUPANTS (libdial9's default); "busy" is that, and the first
 * holder also spins in a thread at nice 19 on CPU 0, so that one of its
 * recorded tasks waits there throughout: the ping-pong's switches are
 * then its session's (occupants), and the others' sessions are idle.
 * Prints a line per run, then the ratio of the medians:
 *
 *   PROBECOST sessions=N rep=R ns_per_rt=X walks_per_rt=W
 *   PROBECOST ratio sessions=N/1 ns_per_rt=A/B = Q
 *
 * walks_per_rt is the module's probe_walks per round trip, when it has
 * that parameter (-1 otherwise).
 */
#include "dial9_test.h"
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define WALKS	"/sys/module/dial9/parameters/probe_walks"
#define MAX_REPS 32

static uint32_t cfg_flags;
static bool busy;

static void *spin(void *arg)
{
	if (d9_pin(0) || setpriority(PRIO_PROCESS, d9_gettid(), 19))
		return arg;
	for (;;)
		asm volatile("" ::: "memory");
	return arg;
}

static long long read_walks(void)
{
	return d9_read_number(WALKS);
}

/* A process of @uid holding @n enabled sessions of itself, asleep. */
static pid_t holder(uid_t uid, int n)
{
	int ready[2];
	pid_t pid;
	char c = 0;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		struct d9 *d = calloc(n, sizeof(*d));

		close(ready[0]);
		if (!d || setgroups(0, NULL) || setgid(uid) || setuid(uid))
			_exit(10);
		for (int i = 0; i < n; i++)
			if (d9_open(&d[i]) || d9_configure(&d[i], cfg_flags, 4096, 0) ||
			    d9_map(&d[i]) || d9_enable(&d[i])) {
				fprintf(stderr, "uid %u: session %d: %s\n",
					uid, i, strerror(errno));
				_exit(11);
			}
		if (busy && uid == 60000) {
			pthread_t t;

			if (pthread_create(&t, NULL, spin, NULL))
				_exit(13);
		}
		if (write(ready[1], &c, 1) != 1)
			_exit(12);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1) {
		close(ready[0]);
		return -1;
	}
	close(ready[0]);
	return pid;
}

static long rounds;
static int pp[2][2];

static void *echo(void *arg)
{
	char c;

	for (long i = 0; i < rounds; i++)
		if (read(pp[0][0], &c, 1) != 1 || write(pp[1][1], &c, 1) != 1)
			break;
	return arg;
}

/* ns per round trip of a fresh unrecorded process, through a pipe back. */
static double pingpong(void)
{
	int res[2];
	double ns = -1;
	pid_t pid;

	if (pipe(res))
		return -1;
	pid = fork();
	if (!pid) {
		pthread_t t;
		uint64_t t0;
		char c = 'x';

		if (d9_pin(0) || pipe(pp[0]) || pipe(pp[1]) ||
		    pthread_create(&t, NULL, echo, NULL))
			_exit(1);
		t0 = d9_now();
		for (long i = 0; i < rounds; i++)
			if (write(pp[0][1], &c, 1) != 1 ||
			    read(pp[1][0], &c, 1) != 1)
				_exit(2);
		ns = (double)(d9_now() - t0) / rounds;
		pthread_join(t, NULL);
		if (write(res[1], &ns, sizeof(ns)) != sizeof(ns))
			_exit(3);
		_exit(0);
	}
	close(res[1]);
	if (read(res[0], &ns, sizeof(ns)) != sizeof(ns))
		ns = -1;
	close(res[0]);
	waitpid(pid, NULL, 0);
	return ns;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double runs(int sessions, int reps)
{
	double v[MAX_REPS];

	for (int r = 0; r < reps; r++) {
		long long w0 = read_walks(), w1;

		v[r] = pingpong();
		w1 = read_walks();
		printf("PROBECOST sessions=%d rep=%d ns_per_rt=%.0f walks_per_rt=%.2f\n",
		       sessions, r + 1, v[r],
		       w0 < 0 ? -1.0 : (double)(w1 - w0) / rounds);
		fflush(stdout);
	}
	qsort(v, reps, sizeof(v[0]), cmp);
	return v[reps / 2];
}

int main(int argc, char **argv)
{
	int users, per, reps, total = 1;
	pid_t pids[1024];
	double one, many;
	int n = 0;

	if (argc != 5 && (argc != 6 || (strcmp(argv[5], "occupants") &&
					strcmp(argv[5], "busy"))))
		return fprintf(stderr, "usage: %s USERS SESSIONS ROUNDS REPS [occupants|busy]\n",
			       argv[0]), 2;
	if (argc == 6) {
		cfg_flags = DIAL9_CFG_OCCUPANTS;
		busy = !strcmp(argv[5], "busy");
	}
	users = atoi(argv[1]);
	per = atoi(argv[2]);
	rounds = atol(argv[3]);
	reps = atoi(argv[4]);
	if (users < 1 || users > 1000 || per < 1 || rounds < 1 || reps < 1 ||
	    reps > MAX_REPS)
		return fprintf(stderr, "bad arguments\n"), 2;
	pids[n] = holder(60000, 1);
	if (pids[n++] < 0)
		return fprintf(stderr, "no holder\n"), 1;
	sleep(1);
	one = runs(total, reps);
	for (int u = 0; u < users; u++) {
		pids[n] = holder(60001 + u, per);
		if (pids[n++] < 0)
			return fprintf(stderr, "holder %d failed\n", u), 1;
		total += per;
	}
	sleep(1);
	many = runs(total, reps);
	printf("PROBECOST ratio%s sessions=%d/1 ns_per_rt=%.0f/%.0f = %.2f\n",
	       busy ? " busy" : cfg_flags ? " occupants" : "", total, many, one,
	       many / one);
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	return 0;
}
