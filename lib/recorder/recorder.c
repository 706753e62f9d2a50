// SPDX-License-Identifier: MIT
/*
 * recorder.c - the recorder's lifecycle (start, stop, exit, fork, the
 * requests of the public API): the one place that joins the stages.  It
 * opens the collector (record/), the scheduler source (sched/), the
 * segment writer (segment/) and the worker (pipeline/), wires the
 * segment writer to the worker (seg_sealed, d9_segw_shipped), and starts
 * the flush thread (flush.c).  Configuration is config.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder/recorder.h"

/* Set by dial9_dump_request() (signal handlers); the flush thread
 * takes it. */
atomic_int d9_dump_signal;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct recorder *g_rec;
static struct recorder *g_retired;
static struct dial9_stats g_last; /* counters of the last recorder */
static bool g_atexit;

/* ---- lifecycle ---- */

static void free_recorder(struct recorder *r)
{
	if (!r)
		return;
	d9_collector_destroy(&r->coll);
	d9_dump_put(r->last_dump);
	d9_worker_free(r->worker);
	dial9_ksched_close(r->ks);
	dial9_encoder_free(r->enc);
	dial9_encoder_free(r->kt.enc);
	d9_kmaps_follow_free(&r->maps);
	d9_names_free(&r->names);
	free(r->trace_dir);
	free(r->service);
	free(r->host);
	free(r);
}

static void dump_signal(int sig)
{
	int e = errno;

	(void)sig;
	dial9_dump_request();
	errno = e;
}

static void at_exit(void)
{
	dial9_stop();
}

/*
 * The one place where the segment writer meets the pipeline: a sealed
 * segment goes to the worker (d9_sealed_fn); the worker tells the budget
 * when it is done (d9_segw_shipped, a d9_shipped_fn).
 */
static void seg_sealed(void *ctx, uint64_t index, const char *path, int fd)
{
	struct recorder *r = ctx;

	if (fd >= 0)
		d9_worker_submit_fd(r->worker, index, path, fd);
	else
		d9_worker_submit(r->worker, index, path);
}

int dial9_start(const struct dial9_config *in)
{
	struct d9_seg_opts so = { 0 };
	struct recorder *r;
	pthread_condattr_t ca;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ret = d9_config_check(in, &r->cfg);
	if (ret) {
		free(r);
		return ret;
	}
	/* a symbol table needs frames to name and a worker to make it */
	if (r->cfg.symbols == DIAL9_SYMBOLS_ON &&
	    ((!(r->cfg.sched_flags & DIAL9_SCHED_STACKS) &&
	      !r->cfg.cpu_sample_hz) || !r->cfg.pipeline))
		d9_log("DIAL9_SYMBOLS is on, but %s: segments get no symbol "
		       "table", r->cfg.pipeline ?
		       "DIAL9_SCHED_STACKS and DIAL9_CPU_SAMPLE_HZ are off (no frames to name)" :
		       "there is no pipeline (no worker to make one)");
	pthread_mutex_lock(&g_lock);
	if (g_rec) {
		ret = -EBUSY;
		goto out_unlock;
	}
	/* a thread may still have been inside a record call at the last
	 * stop: that recorder's memory is freed one start later */
	free_recorder(g_retired);
	g_retired = NULL;
	r->trace_dir = strdup(r->cfg.trace_dir);
	r->service = strdup(r->cfg.service_name);
	ret = -ENOMEM;
	if (!r->trace_dir || !r->service || dial9_encoder_new(&r->enc) ||
	    dial9_encoder_new(&r->kt.enc))
		goto out_unlock;
	r->cfg.trace_dir = r->trace_dir;
	r->cfg.service_name = r->service;
	if (r->cfg.host_name && *r->cfg.host_name) {
		r->host = strdup(r->cfg.host_name);
		if (!r->host)
			goto out_unlock;
	}
	r->cfg.host_name = r->host;
	ret = d9_collector_init(&r->coll, r->cfg.collector_batches,
				r->cfg.buffer_bytes);
	if (ret)
		goto out_unlock;
	if (d9_clock_init((int)r->cfg.clock) != DIAL9_CLOCK_TSC &&
	    r->cfg.clock == DIAL9_CLOCK_TSC) {
		ret = -EOPNOTSUPP; /* asked for the TSC, but it is not usable */
		goto out_unlock;
	}
	so.trace_dir = r->trace_dir;
	so.service = r->service;
	so.host = r->host;
	so.rotation_ns = (uint64_t)r->cfg.rotation_secs * 1000000000ull;
	so.max_disk = r->cfg.max_disk_bytes;
	so.max_file = r->cfg.max_file_bytes;
	so.io_backend = (int)r->cfg.io_backend;
	so.trigger = r->cfg.mode == DIAL9_MODE_TRIGGER;
	so.memory = r->cfg.storage == DIAL9_STORAGE_MEMORY;
	so.default_dir = !strcmp(r->trace_dir, dial9_default_trace_dir());
	so.file_mode = r->cfg.trace_mode;
	so.direct_io = r->cfg.direct_io == DIAL9_DIRECT_IO_AUTO;
	ret = d9_worker_new(&r->worker, &r->cfg);
	if (ret)
		goto out_unlock;
	d9_flush_ksched_open(r);
	so.sched_backend = r->ks ? r->sched_backend : "none";
	so.sched_note = r->sched_note;
	so.clock = d9_clock_uses_tsc() ? "tsc" : "clock_gettime";
	if (r->worker) {
		so.sealed = seg_sealed;
		so.sealed_ctx = r;
	}
	ret = d9_segw_open(&r->segw, &so);
	if (ret)
		goto out_unlock;
	if (r->worker) {
		struct dial9_stats st = { 0 };

		d9_segw_stats(r->segw, &st);
		ret = d9_worker_start(r->worker, st.boot_id, r->service,
				      d9_segw_shipped, r->segw, d9_flush_ignore_me, r);
		if (ret) {
			d9_segw_close(r->segw, NULL);
			goto out_unlock;
		}
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	r->coll.bell = &r->cv;

	d9_rs.coll = &r->coll;
	d9_rs.fence_mode = !d9_membarrier_register();
	atomic_fetch_add(&d9_rs.gen, 1);
	d9_flush_top_up_pool(r);
	ret = -pthread_create(&r->flush, NULL, d9_flush_main, r);
	if (ret) {
		d9_segw_seal_final(r->segw);
		d9_worker_stop(r->worker, 0);
		d9_segw_close(r->segw, NULL);
		goto out_unlock;
	}
	if (r->cfg.trigger_signal) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = dump_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		/* stays installed: without a recorder it does nothing */
		sigaction(r->cfg.trigger_signal, &sa, NULL);
	}
	g_rec = r;
	dial9__active = 1;
	if (!g_atexit) {
		g_atexit = true;
		atexit(at_exit);
	}
	pthread_mutex_unlock(&g_lock);
	return 0;
out_unlock:
	pthread_mutex_unlock(&g_lock);
	free_recorder(r);
	return ret;
}

int dial9_start_from_env(void)
{
	struct dial9_config c;
	int ret;

	dial9_config_init(&c);
	if (!dial9_config_from_env(&c))
		return 0;
	ret = dial9_start(&c);
	if (ret && ret != -EBUSY)
		d9_log("recording disabled: cannot start the recorder with "
		       "trace directory %s: %s", c.trace_dir,
		       dial9_strerror(ret));
	return ret;
}

static void dump_stats(struct recorder *r, struct dial9_stats *st)
{
	pthread_mutex_lock(&r->mu);
	st->dumps = r->dumps;
	st->dumps_coalesced = r->dumps_coalesced;
	memcpy(st->last_dump_id, r->last_dump_id, sizeof(st->last_dump_id));
	pthread_mutex_unlock(&r->mu);
}

static void sched_stats(struct recorder *r, struct dial9_stats *st)
{
	memcpy(st->sched_backend, r->sched_backend, sizeof(st->sched_backend));
	st->sched_error = r->sched_error;
	st->sched_events = r->sched_events;
	st->sched_lost = r->ks ? dial9_ksched_lost(r->ks) : r->kt.lost;
	st->sched_unfollowed = r->kt.unfollowed;
	st->sched_samples = r->kt.samples;
	st->sched_samples_missed = r->kt.samples_missed;
	st->sched_stacks = r->kt.stacks;
	st->sched_encoded = r->kt.encoded;
	st->cpu_sample_hz = r->kt.sample_period_ns ? r->cfg.cpu_sample_hz : 0;
	st->sched_reader_prio = r->ks ? dial9_ksched_reader_prio(r->ks) : 0;
	if (r->ks) {
		uint64_t cpu;

		dial9_ksched_counts(r->ks, &st->sched_read, &st->sched_written);
		d9_ksched_reader_cost(r->ks, &cpu, &st->sched_reader_rt_ns,
				      &st->sched_reader_rt_entries,
				      &st->sched_reader_rt_capped);
		st->recorder_cpu_ns += cpu;
	}
}

/* The recorder's threads' CPU: live, or as each ended (cost.c). */
static void cost_stats(struct recorder *r, struct dial9_stats *st, bool done)
{
	st->recorder_cpu_ns += done ? atomic_load(&r->cpu_at_exit) +
				      d9_worker_cpu_ns(r->worker) :
				      d9_cost_threads(true);
}

int dial9_stop(void)
{
	struct recorder *r;

	pthread_mutex_lock(&g_lock);
	r = g_rec;
	if (!r) {
		pthread_mutex_unlock(&g_lock);
		return -ENOENT;
	}
	dial9__active = 0;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->flush, NULL);
	/* the last segment goes through the pipeline too, for a while */
	d9_segw_seal_final(r->segw);
	d9_worker_stop(r->worker, r->cfg.shutdown_timeout_ms);
	memset(&g_last, 0, sizeof(g_last));
	d9_segw_close(r->segw, &g_last);
	d9_worker_stats(r->worker, &g_last);
	sched_stats(r, &g_last);
	cost_stats(r, &g_last, true);
	dump_stats(r, &g_last);
	dial9_ksched_close(r->ks);	/* the kernel stops recording us */
	r->ks = NULL;
	g_last.events_lost += atomic_load(&r->coll.lost_events);
	g_last.batches_lost += atomic_load(&r->coll.lost_batches);
	g_last.events_invalid = atomic_load(&r->coll.invalid_events);
	g_last.health = DIAL9_HEALTH_OFF;
	d9_record_detach_all();
	g_rec = NULL;
	g_retired = r;
	pthread_mutex_unlock(&g_lock);
	return 0;
}

/*
 * The snapshot is built in a struct of our own size and only the caller's
 * st->size bytes of it are copied out, as the kernel's sched_getattr()
 * does: a caller built against an older, smaller struct dial9_stats gets
 * the fields it knows and nothing written past them.
 */
int dial9_get_stats(struct dial9_stats *st)
{
	struct dial9_stats s;
	struct recorder *r;
	uint32_t n;

	if (!st || st->size < sizeof(st->size))
		return -EINVAL;
	n = st->size < sizeof(s) ? st->size : (uint32_t)sizeof(s);
	pthread_mutex_lock(&g_lock);
	r = g_rec;
	if (!r) {
		s = g_last;
	} else {
		memset(&s, 0, sizeof(s));
		d9_segw_stats(r->segw, &s);
		d9_worker_stats(r->worker, &s);
		sched_stats(r, &s);
		cost_stats(r, &s, false);
		dump_stats(r, &s);
		s.events_lost += atomic_load(&r->coll.lost_events);
		s.batches_lost += atomic_load(&r->coll.lost_batches);
		s.events_invalid = atomic_load(&r->coll.invalid_events);
	}
	pthread_mutex_unlock(&g_lock);
	s.size = n;
	memcpy(st, &s, n);
	return 0;
}

static int request(bool rotate, unsigned int timeout_ms)
{
	struct recorder *r;
	struct timespec ts;
	uint64_t req;
	int ret = 0;

	pthread_mutex_lock(&g_lock);
	r = g_rec;
	if (!r) {
		pthread_mutex_unlock(&g_lock);
		return -ENOENT;
	}
	ts = d9_deadline_ms(timeout_ms);
	pthread_mutex_lock(&r->mu);
	req = ++r->flush_req;
	r->rotate_req |= rotate;
	pthread_cond_broadcast(&r->cv);
	while (r->flush_done < req && !ret)
		ret = -pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	if (r->flush_done >= req)
		ret = 0;
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_unlock(&g_lock);
	return ret;
}

int dial9_dump_request(void)
{
	if (!dial9__active)
		return -ENOENT;
	atomic_store(&d9_dump_signal, 1);
	return 0;
}

int dial9_dump_trigger(const char *reason, unsigned int timeout_ms,
		       struct dial9_dump_receipt *receipt)
{
	struct recorder *r;
	struct d9_dump *d = NULL;
	struct timespec ts;
	uint64_t req;
	bool coalesced = false;
	int ret = 0;

	pthread_mutex_lock(&g_lock);
	r = g_rec;
	if (!r || r->cfg.mode != DIAL9_MODE_TRIGGER) {
		pthread_mutex_unlock(&g_lock);
		return r ? -EINVAL : -ENOENT;
	}
	ts = d9_deadline_ms(10000); /* the checkpoint: a flush and a seal */
	pthread_mutex_lock(&r->mu);
	req = d9_flush_trigger_locked(r, reason, &coalesced);
	pthread_cond_broadcast(&r->cv);
	while (r->dump_done < req && !ret)
		ret = -pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	if (r->dump_done >= req) {
		ret = 0;
		d = d9_dump_get(r->last_dump);
	}
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_unlock(&g_lock);
	if (!d)
		return ret ? ret : -ENOMEM;
	if (timeout_ms && d9_dump_wait(d, timeout_ms))
		ret = -ETIMEDOUT;
	else if (!timeout_ms)
		ret = -ETIMEDOUT;
	if (receipt)
		d9_dump_receipt(d, receipt);
	if (!ret && coalesced)
		ret = -EALREADY;
	else if (ret == -ETIMEDOUT && receipt && receipt->status != -EINPROGRESS)
		ret = coalesced ? -EALREADY : 0; /* it ended after all */
	d9_dump_put(d);
	return ret;
}

int dial9_flush(unsigned int timeout_ms)
{
	return request(false, timeout_ms);
}

int dial9_rotate(void)
{
	return request(true, 10000);
}

/* ---- fork: the child must never wait for a lock held by a thread
 * that does not exist in it, and records nothing until it starts its
 * own recorder ---- */

static void fork_prepare(void)
{
	pthread_mutex_lock(&g_lock);
	d9_record_fork_prepare();
}

static void fork_parent(void)
{
	d9_record_fork_parent();
	pthread_mutex_unlock(&g_lock);
}

static void fork_child(void)
{
	d9_record_fork_child();
	pthread_mutex_unlock(&g_lock);
	if (g_rec) {
		d9_segw_fork_child(g_rec->segw);
		g_rec = NULL; /* the parent's: leaked, never touched */
	}
	g_retired = NULL;
	g_atexit = true; /* inherited handler; dial9_stop() is safe */
}

/*
 * Defined here, beside the constructor that reads DIAL9_ENABLED, and
 * read by every recording macro (<dial9.h>'s dial9__on()): a program
 * that uses only the macros and links libdial9.a statically still pulls
 * this object, and so the constructor, into its link.
 */
volatile int dial9__active;

__attribute__((constructor)) static void d9_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	dial9_start_from_env();
}
