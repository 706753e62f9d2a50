// SPDX-License-Identifier: MIT
/*
 * e2e.c - what dial9 costs a small, realistic service (issue 6, parts 4
 * and 5), used only through <dial9.h>.
 *
 * The service: CLIENTS client threads each submit a request to a shared
 * queue and wait for its answer (closed loop); WORKERS pool threads take
 * requests from the queue and serve each one inside a span with a few
 * fields: parse (CPU work), a "db.query" span around a sleep (the I/O),
 * render (CPU work), a counter; then they wake the client.  Latency is
 * the client's: submit to woken with the answer.  Throughput is requests
 * served per second of wall time over the whole run.
 *
 * Part 4, `e2e` (interleaved: every repetition runs every configuration,
 * the order rotating from one repetition to the next):
 *   off    no recorder (every DIAL9_* call is one load and a branch)
 *   app    a recorder with the application's events only (SCHED_OFF)
 *   sched  a recorder with the process's scheduler events as well
 *          (--sched perf: the perf-event fallback; auto: /dev/dial9 if
 *          the module is loaded)
 * For the recorder configurations it also reads the flush thread's CPU
 * time (/proc/self/task/TID/schedstat) against the bytes written.
 *
 * Part 5, `bytes`: the same service with the LZ4 step of the worker
 * pipeline (segments compressed in place, stats pipe_bytes_in/out):
 * application events only, then scheduler events only (the service with
 * its DIAL9_* calls skipped).  `mem`: resident memory per recording
 * thread: THREADS threads that each record one event and wait, RSS
 * before and after, with no recorder, app and sched.
 *
 * Every result is one line "BENCH part=... key=value..." on stdout, for
 * bench/bench-table.sh.
 *
 *   dial9-e2e [options] e2e|bytes|mem...
 *     -w WORKERS (4)  -c CLIENTS (8)  -n REQUESTS per run (20000)
 *     -r REPS (5)  -k CPU work units per phase (40)  -s sleep µs (50)
 *     -S perf|auto (perf)  -W where (host)  -T THREADS for mem (16)
 *     -d DIR (a new directory under /tmp)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"
#include "dial9.h"
#include "proc.h"

DIAL9_SPAN_TYPE(t_req, "svc.request", DIAL9_FIELD(U64, id),
		DIAL9_FIELD(ISTR, route), DIAL9_FIELD(U64, status));
DIAL9_SPAN_TYPE(t_db, "svc.db_query", DIAL9_FIELD(ISTR, table),
		DIAL9_FIELD(U64, rows));
DIAL9_EVENT_TYPE(t_mem, "bench.mem", DIAL9_FIELD(U64, i));

static int workers = 4, clients = 8, reps = 5, work_units = 40,
	   sleep_us = 50, mem_threads = 16;
static uint64_t nreq = 20000;
static const char *where = "host", *sched_name = "perf";
static uint32_t sched_src = DIAL9_SCHED_PERF;
static char dir[64] = "/tmp/dial9-e2e-XXXXXX";

enum cfg { OFF, APP, SCHED, NCFG };
static const char *cfg_name[NCFG] = { "off", "app", "sched" };

/* ---- the service ---------------------------------------------------------- */

struct client {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	uint64_t id;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct client **q;
	unsigned head, tail, cap;
} queue = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static uint64_t *lat_ns;   /* per request id */
static uint64_t issued;    /* atomic */
static bool emit_app;      /* the service's DIAL9_* calls run */
static pthread_barrier_t go;
static volatile uint64_t sink;

static const char *const routes[] = { "/users/:id", "/orders", "/search",
				       "/cart/:id" };
static const char *const tables[] = { "users", "orders", "items" };

static void push(struct client *c)
{
	pthread_mutex_lock(&queue.mu);
	queue.q[queue.tail++ % queue.cap] = c;
	pthread_cond_signal(&queue.cv);
	pthread_mutex_unlock(&queue.mu);
}

static struct client *pop(void)
{
	struct client *c;

	pthread_mutex_lock(&queue.mu);
	while (queue.head == queue.tail)
		pthread_cond_wait(&queue.cv, &queue.mu);
	c = queue.q[queue.head++ % queue.cap];
	pthread_mutex_unlock(&queue.mu);
	return c;
}

/* Some CPU work: units x 256 rounds of a hash over a small buffer. */
static uint64_t cpu_work(uint64_t seed, int units)
{
	uint64_t h = seed ^ 0xcbf29ce484222325ull;

	for (int u = 0; u < units; u++)
		for (int i = 0; i < 256; i++) {
			h ^= (uint64_t)(i + u);
			h *= 0x100000001b3ull;
		}
	return h;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	for (;;) {
		struct client *c = pop();
		uint64_t id, h;
		const char *route, *table;
		struct timespec io = { 0, (long)sleep_us * 1000 };

		if (!c)
			return NULL;
		id = c->id;
		route = routes[id % 4];
		table = tables[id % 3];
		if (emit_app)
			DIAL9_SPAN_BEGIN(t_req, dial9_u64(id), dial9_istr(route),
					 dial9_u64(0));
		h = cpu_work(id, work_units); /* parse */
		if (emit_app)
			DIAL9_SPAN_BEGIN(t_db, dial9_istr(table), dial9_u64(0));
		nanosleep(&io, NULL);
		if (emit_app)
			DIAL9_SPAN_END(t_db, dial9_istr(table),
				       dial9_u64(h % 50));
		h = cpu_work(h, work_units); /* render */
		if (emit_app) {
			dial9_counter("svc.bytes_out", "bytes", 512 + h % 4096);
			DIAL9_SPAN_END(t_req, dial9_u64(id), dial9_istr(route),
				       dial9_u64(200));
		}
		sink += h;
		pthread_mutex_lock(&c->mu);
		c->done = true;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
	}
}

static void *client(void *arg)
{
	struct client *c = arg;

	pthread_barrier_wait(&go);
	for (;;) {
		uint64_t id = __atomic_fetch_add(&issued, 1, __ATOMIC_RELAXED);
		uint64_t t0;

		if (id >= nreq)
			return NULL;
		c->id = id;
		c->done = false;
		t0 = bench_mono_ns();
		push(c);
		pthread_mutex_lock(&c->mu);
		while (!c->done)
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
		lat_ns[id] = bench_mono_ns() - t0;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

struct result {
	double secs, p50_us, p99_us;
};

/* One run of the service; the wall time from all threads ready to all
 * requests answered. */
static struct result serve(void)
{
	pthread_t wt[64], ct[64];
	struct client cl[64];
	struct result r;
	uint64_t t0;

	issued = 0;
	queue.cap = (unsigned)clients + (unsigned)workers + 1;
	queue.q = calloc(queue.cap, sizeof(*queue.q));
	queue.head = queue.tail = 0;
	pthread_barrier_init(&go, NULL, (unsigned)(workers + clients + 1));
	for (int i = 0; i < workers; i++)
		pthread_create(&wt[i], NULL, worker, NULL);
	for (int i = 0; i < clients; i++) {
		pthread_mutex_init(&cl[i].mu, NULL);
		pthread_cond_init(&cl[i].cv, NULL);
		pthread_create(&ct[i], NULL, client, &cl[i]);
	}
	pthread_barrier_wait(&go);
	t0 = bench_mono_ns();
	for (int i = 0; i < clients; i++)
		pthread_join(ct[i], NULL);
	r.secs = (double)(bench_mono_ns() - t0) / 1e9;
	for (int i = 0; i < workers; i++)
		push(NULL);
	for (int i = 0; i < workers; i++)
		pthread_join(wt[i], NULL);
	pthread_barrier_destroy(&go);
	free(queue.q);
	qsort(lat_ns, nreq, sizeof(*lat_ns), cmp_u64);
	r.p50_us = (double)lat_ns[nreq / 2] / 1e3;
	r.p99_us = (double)lat_ns[nreq * 99 / 100] / 1e3;
	return r;
}

/* ---- the recorder and its flush thread ----------------------------------- */

static void rm_tree(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd))
		fprintf(stderr, "e2e: %s failed\n", cmd);
}

static int start(enum cfg c, uint32_t pipeline)
{
	struct dial9_config cfg;
	int ret;

	dial9_config_init(&cfg);
	cfg.trace_dir = dir;
	cfg.service_name = "e2e";
	cfg.sched = c == SCHED ? sched_src : DIAL9_SCHED_OFF;
	cfg.pipeline = pipeline;
	cfg.shutdown_timeout_ms = 30000;
	ret = dial9_start(&cfg);
	if (ret)
		fprintf(stderr, "e2e: dial9_start: %s\n", dial9_strerror(ret));
	return ret;
}

/* The flush thread names itself once running: wait for it (1 s at most). */
static int flush_tid(void)
{
	int tid = 0;

	for (int i = 0; i < 1000 && !tid; i++) {
		struct timespec ms = { 0, 1000000 };

		tid = test_thread_tid("dial9-flush");
		if (!tid)
			nanosleep(&ms, NULL);
	}
	return tid;
}

/* A thread's CPU time in ns: schedstat's first field, else utime+stime
 * of stat (in clock ticks). */
static uint64_t task_cpu_ns(int tid)
{
	char path[64], buf[1024];
	unsigned long long ns;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	f = fopen(path, "r");
	if (f) {
		int ok = fscanf(f, "%llu", &ns) == 1;

		fclose(f);
		if (ok)
			return ns;
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f)) {
		char *p = strrchr(buf, ')');
		unsigned long long ut = 0, st = 0;

		/* after ")": state and 10 fields, then utime stime */
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				&ut, &st) == 2) {
			fclose(f);
			return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
		}
	}
	if (f)
		fclose(f);
	return 0;
}

/* ---- part 4 ---------------------------------------------------------------- */

static int run_e2e(void)
{
	/* warm-up: one short run of each configuration */
	uint64_t full = nreq;

	nreq = full / 10 ? full / 10 : 1;
	emit_app = true;
	serve();
	nreq = full;
	for (int rep = 0; rep < reps; rep++) {
		for (int k = 0; k < NCFG; k++) {
			enum cfg c = (enum cfg)((k + rep) % NCFG);
			struct dial9_stats s0 = { .size = sizeof(s0) },
					   s1 = { .size = sizeof(s1) };
			uint64_t cpu0 = 0, cpu1 = 0;
			struct result r;
			int tid = 0;

			if (c != OFF) {
				if (start(c, 0))
					return 1;
				tid = flush_tid();
				dial9_get_stats(&s0);
				cpu0 = tid ? task_cpu_ns(tid) : 0;
			}
			r = serve();
			if (c != OFF) {
				dial9_flush(5000);
				cpu1 = tid ? task_cpu_ns(tid) : 0;
				dial9_get_stats(&s1);
				dial9_stop();
			}
			printf("BENCH part=4 where=%s cfg=%s sched=%s rep=%d reqs=%llu "
			       "workers=%d clients=%d secs=%.4f tput=%.1f p50_us=%.1f "
			       "p99_us=%.1f events=%llu sched_events=%llu lost=%llu "
			       "sched_lost=%llu bytes=%llu flush_cpu_ns=%llu flush_tid=%d "
			       "backend=%s\n",
			       where, cfg_name[c], sched_name, rep + 1,
			       (unsigned long long)nreq, workers, clients, r.secs,
			       (double)nreq / r.secs, r.p50_us, r.p99_us,
			       (unsigned long long)(s1.events_written - s0.events_written),
			       (unsigned long long)s1.sched_events,
			       (unsigned long long)s1.events_lost,
			       (unsigned long long)s1.sched_lost,
			       (unsigned long long)(s1.bytes_written - s0.bytes_written),
			       (unsigned long long)(cpu1 - cpu0), tid,
			       c == SCHED && s1.sched_backend[0] ? s1.sched_backend : "-");
			fflush(stdout);
			rm_tree(dir);
			mkdir(dir, 0700);
		}
	}
	return 0;
}

/* ---- part 5 ---------------------------------------------------------------- */

static int run_bytes(void)
{
	/* The flush thread's cost with nothing to write: one second idle. */
	for (int k = APP; k <= SCHED; k++) {
		struct timespec sec = { 1, 0 };
		uint64_t c0, c1, t0, t1;
		int tid;

		if (start((enum cfg)k, 0))
			return 1;
		tid = flush_tid();
		c0 = tid ? task_cpu_ns(tid) : 0;
		t0 = bench_mono_ns();
		nanosleep(&sec, NULL);
		c1 = tid ? task_cpu_ns(tid) : 0;
		t1 = bench_mono_ns();
		dial9_stop();
		printf("BENCH part=idle where=%s cfg=%s sched=%s wall_ns=%llu "
		       "flush_cpu_ns=%llu\n", where, cfg_name[k], sched_name,
		       (unsigned long long)(t1 - t0),
		       (unsigned long long)(c1 - c0));
		rm_tree(dir);
		mkdir(dir, 0700);
	}
	for (int k = APP; k <= SCHED; k++) {
		struct dial9_stats st = { .size = sizeof(st) };
		uint64_t cpu = 0, ev;
		double wall;
		int tid;

		if (start((enum cfg)k, DIAL9_PIPE_LZ4))
			return 1;
		emit_app = k == APP;
		tid = flush_tid();
		wall = serve().secs;
		dial9_flush(5000);
		cpu = tid ? task_cpu_ns(tid) : 0;
		dial9_stop();
		dial9_get_stats(&st);
		ev = k == APP ? st.events_written : st.sched_events;
		printf("BENCH part=5 where=%s kind=%s sched=%s reqs=%llu events=%llu "
		       "lost=%llu bytes=%llu segments=%llu pipe_done=%llu "
		       "lz4_in=%llu lz4_out=%llu flush_cpu_ns=%llu secs=%.4f backend=%s\n",
		       where, k == APP ? "app" : "sched", sched_name,
		       (unsigned long long)nreq, (unsigned long long)ev,
		       (unsigned long long)(k == APP ? st.events_lost : st.sched_lost),
		       (unsigned long long)st.bytes_written,
		       (unsigned long long)st.segments_sealed,
		       (unsigned long long)st.pipe_done,
		       (unsigned long long)st.pipe_bytes_in,
		       (unsigned long long)st.pipe_bytes_out,
		       (unsigned long long)cpu, wall,
		       k == SCHED && st.sched_backend[0] ? st.sched_backend : "-");
		fflush(stdout);
		rm_tree(dir);
		mkdir(dir, 0700);
	}
	emit_app = true;
	return 0;
}

static uint64_t rss_bytes(void)
{
	unsigned long long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%llu %llu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static pthread_barrier_t mem_ready, mem_done;

static void *mem_thread(void *arg)
{
	(void)arg;
	DIAL9_EMIT(t_mem, dial9_u64(1));
	pthread_barrier_wait(&mem_ready);
	pthread_barrier_wait(&mem_done);
	return NULL;
}

/* RSS growth from mem_threads threads that each record one event. */
static int run_mem(void)
{
	for (int rep = 0; rep < 3; rep++)
		for (int k = 0; k < NCFG; k++) {
			pthread_t th[256];
			uint64_t r0, r1;
			struct timespec settle = { 0, 50000000 };

			if (k != OFF && start((enum cfg)k, 0))
				return 1;
			nanosleep(&settle, NULL); /* the free pool topped up */
			r0 = rss_bytes();
			pthread_barrier_init(&mem_ready, NULL,
					     (unsigned)mem_threads + 1);
			pthread_barrier_init(&mem_done, NULL,
					     (unsigned)mem_threads + 1);
			for (int i = 0; i < mem_threads; i++)
				pthread_create(&th[i], NULL, mem_thread, NULL);
			pthread_barrier_wait(&mem_ready);
			nanosleep(&settle, NULL); /* and topped up again */
			r1 = rss_bytes();
			pthread_barrier_wait(&mem_done);
			for (int i = 0; i < mem_threads; i++)
				pthread_join(th[i], NULL);
			pthread_barrier_destroy(&mem_ready);
			pthread_barrier_destroy(&mem_done);
			if (k != OFF)
				dial9_stop();
			printf("BENCH part=mem where=%s cfg=%s sched=%s rep=%d threads=%d "
			       "rss0=%llu rss1=%llu buffer=%u\n",
			       where, cfg_name[k], sched_name, rep + 1, mem_threads,
			       (unsigned long long)r0, (unsigned long long)r1,
			       1u << 20);
			fflush(stdout);
			rm_tree(dir);
			mkdir(dir, 0700);
		}
	return 0;
}

int main(int argc, char **argv)
{
	int opt, rc = 0;

	while ((opt = getopt(argc, argv, "w:c:n:r:k:s:S:W:T:d:")) != -1) {
		switch (opt) {
		case 'w': workers = atoi(optarg); break;
		case 'c': clients = atoi(optarg); break;
		case 'n': nreq = strtoull(optarg, NULL, 10); break;
		case 'r': reps = atoi(optarg); break;
		case 'k': work_units = atoi(optarg); break;
		case 's': sleep_us = atoi(optarg); break;
		case 'S': sched_name = optarg; break;
		case 'W': where = optarg; break;
		case 'T': mem_threads = atoi(optarg); break;
		case 'd': snprintf(dir, sizeof(dir), "%s", optarg); break;
		default:
			fprintf(stderr, "usage: %s [-w W] [-c C] [-n REQ] [-r REPS] "
				"[-k UNITS] [-s US] [-S perf|auto] [-W WHERE] "
				"[-T THREADS] [-d DIR] e2e|bytes|mem...\n", argv[0]);
			return 2;
		}
	}
	if (!strcmp(sched_name, "auto"))
		sched_src = DIAL9_SCHED_AUTO;
	else if (!strcmp(sched_name, "perf"))
		sched_src = DIAL9_SCHED_PERF;
	else {
		fprintf(stderr, "e2e: -S perf or auto\n");
		return 2;
	}
	if (workers < 1 || workers > 64 || clients < 1 || clients > 64 ||
	    mem_threads < 1 || mem_threads > 256 || nreq < 100 || reps < 1) {
		fprintf(stderr, "e2e: bad sizes\n");
		return 2;
	}
	if (strstr(dir, "XXXXXX") ? !mkdtemp(dir) : mkdir(dir, 0700) && errno != EEXIST) {
		perror(dir);
		return 1;
	}
	lat_ns = calloc(nreq, sizeof(*lat_ns));
	printf("BENCH-INFO where=%s workers=%d clients=%d reqs=%llu units=%d "
	       "sleep_us=%d cpus=%ld\n", where, workers, clients,
	       (unsigned long long)nreq, work_units, sleep_us,
	       sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = optind; i < argc && !rc; i++) {
		if (!strcmp(argv[i], "e2e"))
			rc = run_e2e();
		else if (!strcmp(argv[i], "bytes"))
			rc = run_bytes();
		else if (!strcmp(argv[i], "mem"))
			rc = run_mem();
		else {
			fprintf(stderr, "e2e: unknown part %s\n", argv[i]);
			rc = 2;
		}
	}
	rm_tree(dir);
	free(lat_ns);
	return rc;
}
