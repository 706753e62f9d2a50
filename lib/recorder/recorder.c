// SPDX-License-Identifier: MIT
/*
 * recorder.c - the recorder's lifecycle (configuration, start, stop,
 * exit, fork) and the flush thread, the only writer of segments.
 *
 * Each tick (flush_interval_ms) the flush thread drains the collector
 * into the active segment. The drain epoch has two steps: step one
 * bumps the epoch, so a thread that records hands over its own buffer;
 * step two, a tick later, takes the buffers of the threads that stayed
 * idle. A time rotation runs both steps first, so that events land in
 * the segment of their time.
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

#include "record/record.h"
#include "format/wire.h"
#include "sched/sched.h"
#include "pipeline/pipeline.h"
#include "segment/segment.h"

#define MIB (1024ull * 1024)
#define DRAIN_INTERVAL_NS 1000000000ull
#define REFINE_INTERVAL_NS 1000000000ull

struct recorder {
	struct dial9_config cfg;
	char *trace_dir, *service, *host;
	struct d9_collector coll;
	struct d9_segw *segw;
	struct d9_worker *worker; /* sealed segments: LZ4, S3, write-back */
	pthread_t flush;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	uint64_t flush_req, flush_done;
	bool rotate_req;
	uint64_t lost_reported, invalid_reported;
	struct dial9_encoder *enc; /* the flush thread's own events */
	struct dial9_ksched *ks;   /* the kernel's scheduler records */
	struct d9_ktrace kt;
	uint64_t sched_events;
	int sched_error;
	char sched_backend[16];
	char sched_note[512];
	/* trigger mode (under mu) */
	uint64_t dump_req, dump_done; /* dumps asked for, checkpointed */
	char dump_reason[256];        /* of the last one asked for */
	bool any_trigger;
	uint64_t last_trigger_ns;     /* the debounce window starts here */
	struct d9_dump *last_dump;    /* a reference */
	uint64_t dumps, dumps_coalesced;
	char last_dump_id[32];
};

/* Set by dial9_dump_request() (signal handlers); the flush thread
 * takes it. */
static atomic_int g_dump_signal;

/*
 * Kernel records are released to the trace once they are this old: a CPU
 * can publish a record a little after a later one from another CPU.
 */
#define KSCHED_HORIZON_NS 2000000ull
/* At most this often, ask the ring reader for what the watermark holds. */
#define KSCHED_KICK_NS 100000000ull
/*
 * The flush thread's period once idle; meanwhile a recording thread that
 * hands over a batch wakes it at once (d9_collector_nap).
 */
#define IDLE_TICK_MS 2000u

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct recorder *g_rec;
static struct recorder *g_retired;
static struct dial9_stats g_last; /* counters of the last recorder */
static bool g_atexit;

/* ---- configuration ---- */

/* DIAL9_SCHED_RING_BUDGET over the possible CPUs, as a power of two. */
static uint32_t default_sched_ring(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t per = DIAL9_SCHED_RING_BUDGET / (uint64_t)(n > 0 ? n : 1);
	uint32_t ring = DIAL9_SCHED_RING_MAX_DEFAULT;

	while (ring > DIAL9_SCHED_RING_MIN_DEFAULT && ring > per)
		ring /= 2;
	return ring;
}

void dial9_config_init(struct dial9_config *c)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->trace_dir = "/tmp/dial9-traces";
	c->service_name = NULL; /* the program name */
	c->rotation_secs = 60;
	c->max_disk_bytes = 1024 * MIB;
	c->max_file_bytes = 0; /* min(100 MiB, max_disk / 4) */
	c->buffer_bytes = 1024 * 1024;
	c->flush_interval_ms = 5;
	c->collector_batches = 1024;
	c->io_backend = DIAL9_IO_AUTO;
	c->clock = DIAL9_CLOCK_AUTO;
	c->sched = DIAL9_SCHED_AUTO;
	c->sched_ring_bytes = default_sched_ring();
	c->upload_concurrency = 4;
	c->s3_prefix = "dial9-traces";
	c->shutdown_timeout_ms = 5000;
	c->upload_timeout_ms = 30000;
	c->retry_base_ms = 500;
	c->retry_max_ms = 300000;
	c->mode = DIAL9_MODE_CONTINUOUS;
	c->dump_debounce_ms = 1000;
	c->trigger_signal = 0;
}

static int parse_bool(const char *s)
{
	static const char *const yes[] = { "t", "true", "1", "y", "yes", "on" };
	static const char *const no[] = { "f", "false", "0", "n", "no", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i]))
			return 1;
		if (!strcasecmp(s, no[i]))
			return 0;
	}
	return -1;
}

/* An unsigned number in [lo, hi]; false (with a warning) otherwise. */
static bool env_u64(const char *name, uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s)
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v < lo || v > hi) {
		d9_log("%s=\"%s\" is not a number in %llu..%llu; using the "
		       "default", name, s, (unsigned long long)lo,
		       (unsigned long long)hi);
		return false;
	}
	*out = v;
	return true;
}

static bool env_choice(const char *name, const char *const *names,
		       unsigned int n, uint32_t *out)
{
	const char *s = getenv(name);

	if (!s)
		return false;
	for (unsigned int i = 0; i < n; i++) {
		if (!strcasecmp(s, names[i])) {
			*out = i;
			return true;
		}
	}
	d9_log("%s=\"%s\" is not one of the accepted values; using the default",
	       name, s);
	return false;
}

/* "USR2", "SIGUSR2", "RTMIN+3", "12": a signal number, or -1. */
static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
		      { "QUIT", SIGQUIT }, { "PWR", SIGPWR }, { "URG", SIGURG } };
	char *end;
	long v;

	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i].name))
			return names[i].sig;
	if (!strncasecmp(s, "RTMIN", 5)) {
		v = s[5] ? strtol(s + 6, &end, 10) : 0;
		if ((s[5] && (s[5] != '+' || *end)) || v < 0 ||
		    SIGRTMIN + v > SIGRTMAX)
			return -1;
		return SIGRTMIN + (int)v;
	}
	v = strtol(s, &end, 10);
	if (!*s || *end || v < 1 || v > SIGRTMAX || v == SIGKILL || v == SIGSTOP)
		return -1;
	return (int)v;
}

/* The worker pipeline: S3 or write-back, LZ4 unless DIAL9_COMPRESS=none. */
static void pipeline_from_env(struct dial9_config *c)
{
	static const char *const comp[] = { "lz4", "none" };
	const char *s;
	uint32_t v;
	uint64_t n;

	if ((s = getenv("DIAL9_S3_BUCKET")) && *s) {
		c->s3_bucket = s;
		c->pipeline |= DIAL9_PIPE_S3 | DIAL9_PIPE_LZ4;
	}
	if ((s = getenv("DIAL9_S3_PREFIX")))
		c->s3_prefix = s;
	if ((s = getenv("DIAL9_S3_REGION")) && *s)
		c->s3_region = s;
	if ((s = getenv("DIAL9_S3_ENDPOINT")) && *s)
		c->s3_endpoint = s;
	if ((s = getenv("DIAL9_WRITE_BACK_DIR")) && *s) {
		if (c->pipeline & DIAL9_PIPE_S3) {
			d9_log("DIAL9_WRITE_BACK_DIR is ignored: DIAL9_S3_BUCKET "
			       "is set");
		} else {
			c->write_back_dir = s;
			c->pipeline |= DIAL9_PIPE_WRITE_BACK | DIAL9_PIPE_LZ4;
		}
	}
	if (env_choice("DIAL9_COMPRESS", comp, 2, &v)) {
		if (v == 0)
			c->pipeline |= DIAL9_PIPE_LZ4;
		else
			c->pipeline &= ~DIAL9_PIPE_LZ4;
	}
	{
		static const char *const modes[] = { "continuous", "trigger" };

		env_choice("DIAL9_MODE", modes, 2, &c->mode);
	}
	{
		static const char *const st[] = { "disk", "memory" };

		env_choice("DIAL9_STORAGE", st, 2, &c->storage);
	}
	if (c->storage == DIAL9_STORAGE_MEMORY) {
		c->max_disk_bytes = 64 * MIB;
		if (env_u64("DIAL9_MEMORY_BUDGET_MB", 1, 1ull << 30, &n))
			c->max_disk_bytes = n * MIB;
	}
	if (env_u64("DIAL9_DUMP_DEBOUNCE_MS", 0, 3600000, &n))
		c->dump_debounce_ms = (uint32_t)n;
	if ((s = getenv("DIAL9_TRIGGER_SIGNAL")) && *s) {
		int sig = parse_signal(s);

		if (sig > 0)
			c->trigger_signal = sig;
		else
			d9_log("DIAL9_TRIGGER_SIGNAL=\"%s\" is not a signal "
			       "(USR1, USR2, RTMIN+N or a number); no signal "
			       "triggers a dump", s);
	}
	if (env_u64("DIAL9_UPLOAD_CONCURRENCY", 1, 64, &n))
		c->upload_concurrency = (uint32_t)n;
	if (env_u64("DIAL9_SHUTDOWN_TIMEOUT_MS", 0, 3600000, &n))
		c->shutdown_timeout_ms = (uint32_t)n;
}

int dial9_config_from_env(struct dial9_config *c)
{
	static const char *const io[] = { "auto", "io_uring", "pwrite" };
	static const char *const clk[] = { "auto", "tsc", "clock_gettime" };
	const char *s;
	uint64_t v;
	int enabled = 0;

	if ((s = getenv("DIAL9_ENABLED"))) {
		enabled = parse_bool(s);
		if (enabled < 0) {
			d9_log("DIAL9_ENABLED=\"%s\" is not a boolean "
			       "(true/false, 1/0, yes/no, on/off); using the "
			       "default (off)", s);
			enabled = 0;
		}
	}
	if ((s = getenv("DIAL9_TRACE_DIR"))) {
		if (*s)
			c->trace_dir = s;
		else
			d9_log("DIAL9_TRACE_DIR is empty; using the default");
	}
	if ((s = getenv("DIAL9_SERVICE_NAME")) && *s)
		c->service_name = s;
	if ((s = getenv("DIAL9_HOST_NAME")) && *s)
		c->host_name = s;
	if (env_u64("DIAL9_ROTATION_SECS", 1, 86400 * 365, &v))
		c->rotation_secs = (uint32_t)v;
	if (env_u64("DIAL9_MAX_DISK_USAGE_MB", 1, 1ull << 40, &v))
		c->max_disk_bytes = v * MIB;
	if (env_u64("DIAL9_MAX_FILE_SIZE_MB", 1, 1ull << 40, &v))
		c->max_file_bytes = v * MIB;
	if (env_u64("DIAL9_BUFFER_KB", 4, 1024 * 1024, &v))
		c->buffer_bytes = (uint32_t)(v * 1024);
	if (env_u64("DIAL9_FLUSH_INTERVAL_MS", 1, 60000, &v))
		c->flush_interval_ms = (uint32_t)v;
	if (env_u64("DIAL9_COLLECTOR_BATCHES", 1, 1u << 20, &v))
		c->collector_batches = (uint32_t)v;
	if ((s = getenv("DIAL9_SCHED_ENABLED"))) {
		int on = parse_bool(s);

		if (on < 0)
			d9_log("DIAL9_SCHED_ENABLED=\"%s\" is not a boolean; "
			       "using the default (on)", s);
		else
			c->sched = on ? DIAL9_SCHED_AUTO : DIAL9_SCHED_OFF;
	}
	if (env_u64("DIAL9_FLUSH_NICE", 0, 19, &v))
		c->flush_nice = (int32_t)v;
	if (env_u64("DIAL9_SCHED_RING_KB", 4, 64 * 1024, &v)) {
		if (v & (v - 1))
			d9_log("DIAL9_SCHED_RING_KB=%llu is not a power of two; "
			       "using the default", (unsigned long long)v);
		else
			c->sched_ring_bytes = (uint32_t)(v * 1024);
	}
	pipeline_from_env(c);
	env_choice("DIAL9_IO_BACKEND", io, 3, &c->io_backend);
	env_choice("DIAL9_CLOCK", clk, 3, &c->clock);
	if (c->max_file_bytes && c->max_file_bytes > c->max_disk_bytes) {
		d9_log("DIAL9_MAX_FILE_SIZE_MB is above DIAL9_MAX_DISK_USAGE_MB; "
		       "using the default");
		c->max_file_bytes = 0;
	}
	return enabled;
}

/* Copy a caller's config (maybe from an older, smaller struct). */
static int check_config(const struct dial9_config *in, struct dial9_config *c)
{
	dial9_config_init(c);
	if (!in || in->size < sizeof(uint32_t))
		return -EINVAL;
	memcpy(c, in, in->size < sizeof(*c) ? in->size : sizeof(*c));
	c->size = sizeof(*c);
	if (!c->trace_dir || !*c->trace_dir || c->rotation_secs < 1 ||
	    c->max_disk_bytes < 1 || c->buffer_bytes < 4096 ||
	    c->buffer_bytes > (1u << 30) || c->flush_interval_ms < 1 ||
	    c->flush_interval_ms > 60000 || c->flush_nice < 0 ||
	    c->flush_nice > 19 || c->collector_batches < 1 ||
	    c->collector_batches > (1u << 20) || c->io_backend > DIAL9_IO_PWRITE ||
	    c->clock > DIAL9_CLOCK_GETTIME || c->sched > DIAL9_SCHED_SCHEDSTAT ||
	    c->sched_flags & ~(DIAL9_SCHED_NO_SELF | DIAL9_SCHED_CHILDREN |
			       DIAL9_SCHED_SYSTEM_WIDE) ||
	    (c->sched_npids && !c->sched_pids) || c->sched_npids > 1024 ||
	    c->upload_concurrency > 64 || c->shutdown_timeout_ms > 3600000 ||
	    c->mode > DIAL9_MODE_TRIGGER || c->dump_debounce_ms > 3600000 ||
	    c->trigger_signal < 0 || c->trigger_signal > SIGRTMAX ||
	    c->trigger_signal == SIGKILL || c->trigger_signal == SIGSTOP)
		return -EINVAL;
	/* a dump needs somewhere to go; segments in memory too */
	if (c->mode == DIAL9_MODE_TRIGGER && !c->pipeline)
		return -EINVAL;
	if (c->storage > DIAL9_STORAGE_MEMORY ||
	    (c->storage == DIAL9_STORAGE_MEMORY &&
	     !(c->pipeline & (DIAL9_PIPE_S3 | DIAL9_PIPE_WRITE_BACK))))
		return -EINVAL;
	if (!c->max_file_bytes) {
		c->max_file_bytes = c->max_disk_bytes / 4;
		if (c->max_file_bytes > 100 * MIB)
			c->max_file_bytes = 100 * MIB;
		if (c->max_file_bytes < 4096)
			c->max_file_bytes = 4096;
	}
	if (c->max_file_bytes > c->max_disk_bytes)
		return -EINVAL;
	if (!c->service_name || !*c->service_name)
		c->service_name = program_invocation_short_name;
	return 0;
}

/* ---- the flush thread ---- */

/* Write the full batches waiting in the collector; how many. */
static unsigned int drain_collector(struct recorder *r)
{
	struct d9_batch *b[64];
	unsigned int n, total = 0;

	do {
		for (n = 0; n < 64; n++) {
			b[n] = d9_queue_pop(&r->coll.full);
			if (!b[n])
				break;
		}
		if (n) {
			d9_segw_write(r->segw, b, n);
			for (unsigned int i = 0; i < n; i++)
				d9_batch_put(&r->coll, b[i]);
		}
		total += n;
	} while (n == 64);
	return total;
}

/* Write a dial9.lost event when events were lost since the last one. */
static void report_losses(struct recorder *r)
{
	static const struct dial9_field f[] = { { "events", DIAL9_U64 },
						{ "batches", DIAL9_U64 },
						{ "invalid", DIAL9_U64 } };
	struct dial9_stats st = { 0 };
	uint64_t lost, batches, invalid;
	struct dial9_value v[3];
	const void *data;
	size_t len;

	d9_segw_stats(r->segw, &st);
	lost = atomic_load(&r->coll.lost_events) + st.events_lost;
	if (lost == r->lost_reported || st.health != DIAL9_HEALTH_OK)
		return;
	batches = atomic_load(&r->coll.lost_batches) + st.batches_lost;
	invalid = atomic_load(&r->coll.invalid_events);
	v[0] = dial9_u64(lost - r->lost_reported);
	v[1] = dial9_u64(batches);
	v[2] = dial9_u64(invalid - r->invalid_reported);
	dial9_encoder_clear(r->enc);
	if (dial9_encoder_begin_stream(r->enc) ||
	    dial9_encoder_schema(r->enc, 1, DIAL9_KIND_INTERNAL, "dial9.lost", 3,
				 f) ||
	    dial9_encoder_event(r->enc, 1, d9_now(), v) ||
	    dial9_encoder_end_stream(r->enc))
		return;
	data = dial9_encoder_data(r->enc, &len);
	d9_segw_write_raw(r->segw, data, len);
	r->lost_reported = lost;
	r->invalid_reported = invalid;
}

static void ksched_record(void *ctx, const struct dial9_rec_header *rec)
{
	struct recorder *r = ctx;

	if (d9_ktrace_add(&r->kt, rec))
		r->sched_error = -EPROTO;
}

/*
 * Scheduler records older than @horizon into the trace, in time order;
 * returns how many events that made.
 */
static uint64_t ksched_flush(struct recorder *r, uint64_t horizon)
{
	const void *data;
	size_t len;
	int ret;

	if (!r->ks || d9_ktrace_begin(&r->kt))
		return 0;
	ret = dial9_ksched_drain(r->ks, horizon, ksched_record, r);
	if (ret < 0) {
		d9_log("scheduler events stopped: %s", dial9_strerror(ret));
		r->sched_error = ret;
		dial9_ksched_close(r->ks);
		r->ks = NULL;
	}
	if (r->kt.nevents && !d9_ktrace_end(&r->kt, &data, &len)) {
		d9_segw_write_raw(r->segw, data, len);
		r->sched_events += r->kt.nevents;
		return r->kt.nevents;
	}
	return 0;
}

/* Open the scheduler source the configuration asks for. */
static void ksched_open(struct recorder *r)
{
	struct dial9_ksched_opts o = {
		.ring_size = r->cfg.sched_ring_bytes,
		.system_wide = r->cfg.sched_flags & DIAL9_SCHED_SYSTEM_WIDE,
		.self = !(r->cfg.sched_flags & DIAL9_SCHED_NO_SELF),
		.children = r->cfg.sched_flags & DIAL9_SCHED_CHILDREN,
		.pids = r->cfg.sched_pids,
		.npids = r->cfg.sched_npids,
		.no_module = r->cfg.sched == DIAL9_SCHED_PERF ||
			     r->cfg.sched == DIAL9_SCHED_SCHEDSTAT,
		.schedstat_only = r->cfg.sched == DIAL9_SCHED_SCHEDSTAT,
		.reader_thread = true,
	};
	char why[512] = "";

	if (r->cfg.sched == DIAL9_SCHED_OFF) {
		snprintf(r->sched_note, sizeof(r->sched_note), "turned off");
		return;
	}
	r->sched_error = dial9_ksched_open(&r->ks, &o, why, sizeof(why));
	if (r->sched_error) {
		d9_log("no scheduler events: %s", why);
		memcpy(r->sched_note, why, sizeof(r->sched_note) - 1);
		return;
	}
	snprintf(r->sched_backend, sizeof(r->sched_backend), "%s",
		 dial9_ksched_backend(r->ks));
	strncat(r->sched_note, dial9_ksched_fallback_reason(r->ks),
		sizeof(r->sched_note) - 1);
	if (r->sched_note[0])
		d9_log("scheduler events from %s%s: %s", r->sched_backend,
		       strcmp(r->sched_backend, "dial9.ko") ? ", not dial9.ko" :
		       "", r->sched_note);
}

/* Keep a few pre-faulted buffers ready so threads need not map any. */
static void top_up_pool(struct recorder *r)
{
	size_t want = atomic_load(&d9_rs.nthreads) + 2, have;

	if (want > 32)
		want = 32;
	have = atomic_load(&r->coll.free.head) - atomic_load(&r->coll.free.tail);
	while (have++ < want) {
		struct d9_batch *b = d9_batch_alloc(r->coll.buffer_bytes);

		if (!b || !d9_queue_push(&r->coll.free, b)) {
			d9_batch_free(b);
			break;
		}
	}
}

/*
 * A trigger (under r->mu): a new dump unless one was asked for less than
 * dump_debounce_ms ago; returns the dump request it is part of, and
 * whether it was folded into an earlier one.
 */
static uint64_t trigger_locked(struct recorder *r, const char *reason,
			       bool *coalesced)
{
	uint64_t now = d9_clock_gettime_ns();

	if (r->any_trigger &&
	    now - r->last_trigger_ns < (uint64_t)r->cfg.dump_debounce_ms * 1000000ull) {
		r->dumps_coalesced++;
		if (coalesced)
			*coalesced = true;
		return r->dump_req;
	}
	r->any_trigger = true;
	r->last_trigger_ns = now;
	snprintf(r->dump_reason, sizeof(r->dump_reason), "%s", reason ? reason : "");
	if (coalesced)
		*coalesced = false;
	return ++r->dump_req;
}

/* The active segment is sealed: the sealed segments not dumped yet go
 * through the pipeline, protected from eviction until they are through. */
static void checkpoint(struct recorder *r, const char *reason)
{
	struct dial9_dump_receipt rc;
	struct d9_ckpt_seg *segs;
	struct d9_dump *d;
	size_t n;

	if (d9_segw_checkpoint(r->segw, &segs, &n)) {
		d9_log("dump: no memory for the checkpoint");
		return;
	}
	d = d9_worker_dump(r->worker, segs, n, reason, d9_clock_gettime_ns());
	if (!d) {
		for (size_t i = 0; i < n; i++)
			if (segs[i].fd >= 0)
				close(segs[i].fd);
		free(segs);
		d9_log("dump: no memory to start it");
		return;
	}
	free(segs);
	pthread_mutex_lock(&r->mu);
	d9_dump_put(r->last_dump);
	r->last_dump = d;
	r->dumps++;
	d9_dump_receipt(d, &rc);
	memcpy(r->last_dump_id, rc.dump_id, sizeof(r->last_dump_id));
	pthread_mutex_unlock(&r->mu);
}

/* Take every thread's buffer (retrying busy ones briefly), write all. */
static void drain_all(struct recorder *r)
{
	for (int tries = 0; tries < 200; tries++) {
		unsigned int busy;

		atomic_fetch_add(&d9_rs.epoch, 1);
		busy = d9_drain_idle_threads(true);
		drain_collector(r);
		if (!busy)
			break;
		{
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
}

/* A recorder thread leaves itself out of the scheduler records. */
static void ignore_me(void *arg)
{
	struct recorder *r = arg;

	if (r->ks)
		dial9_ksched_ignore_thread(r->ks, 0);
}

static void *flush_main(void *arg)
{
	struct recorder *r = arg;
	uint64_t now = d9_clock_gettime_ns();
	uint64_t next_drain = now + DRAIN_INTERVAL_NS;
	uint64_t next_refine = now + REFINE_INTERVAL_NS;
	uint64_t rotation_ns = (uint64_t)r->cfg.rotation_secs * 1000000000ull;
	uint64_t wait_ms = r->cfg.flush_interval_ms, next_kick = 0;
	bool step_two = false, rotate_after = false;

	if (r->cfg.flush_nice > 0)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
			    r->cfg.flush_nice);
	pthread_setname_np(pthread_self(), "dial9-flush");
	ignore_me(r);	/* the recorder does not record itself */
	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		uint64_t req = r->flush_req, dreq = r->dump_req;
		bool rot = r->rotate_req, dump, busy;
		char reason[256];
		struct timespec ts;

		if (req == r->flush_done && dreq == r->dump_done) {
			/* A long sleep: a handed-over batch ends it. */
			bool nap = wait_ms > r->cfg.flush_interval_ms;

			if (nap && !d9_collector_nap(&r->coll)) {
				nap = false;
				wait_ms = r->cfg.flush_interval_ms;
			}
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (time_t)(wait_ms / 1000);
			ts.tv_nsec += (long)(wait_ms % 1000) * 1000000;
			while (ts.tv_nsec >= 1000000000) {
				ts.tv_nsec -= 1000000000;
				ts.tv_sec++;
			}
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
			if (nap)
				d9_collector_unnap(&r->coll);
			if (r->stop)
				break;
			req = r->flush_req;
			rot = r->rotate_req;
			dreq = r->dump_req;
		}
		r->rotate_req = false;
		if (atomic_exchange(&g_dump_signal, 0) &&
		    r->cfg.mode == DIAL9_MODE_TRIGGER)
			dreq = trigger_locked(r, "signal", NULL);
		dump = dreq != r->dump_done;
		memcpy(reason, r->dump_reason, sizeof(reason));
		pthread_mutex_unlock(&r->mu);

		d9_segw_tick(r->segw);
		now = d9_clock_gettime_ns();
		busy = req != r->flush_done || dump || rot;
		/* Records below the rings' watermark: read them now and then. */
		if (r->ks && now >= next_kick && dial9_ksched_pending(r->ks)) {
			dial9_ksched_sync(r->ks, 100);
			next_kick = now + KSCHED_KICK_NS;
		}
		if (req != r->flush_done || dump) {
			/* dial9_flush()/dial9_rotate()/a dump: both steps */
			drain_all(r);
			if (r->ks)
				dial9_ksched_sync(r->ks, 1000);
			ksched_flush(r, d9_clock_gettime_ns());
			report_losses(r);
			if (rot || dump)
				d9_segw_rotate(r->segw);
			if (dump)
				checkpoint(r, reason);
			step_two = false;
			rotate_after = false;
		} else if (step_two) {
			d9_drain_idle_threads(false);
			step_two = false;
		}
		busy |= drain_collector(r) > 0;
		if (rotate_after && !step_two && r->ks)
			dial9_ksched_sync(r->ks, 1000);	/* into this segment */
		busy |= ksched_flush(r, rotate_after && !step_two ? now :
				     now - KSCHED_HORIZON_NS) > 0;
		report_losses(r);
		if (rotate_after && !step_two) {
			/*
			 * Still due: a segment that filled up since step one
			 * was rotated for its size, and its successor, just
			 * opened, is not cut again (a tiny second segment).
			 */
			if (d9_segw_rotation_due(r->segw, now))
				d9_segw_rotate(r->segw);
			rotate_after = false;
		}
		if (!step_two && (now >= next_drain ||
				  d9_segw_rotation_due(r->segw, now))) {
			/* step one of a drain epoch */
			rotate_after = d9_segw_rotation_due(r->segw, now);
			atomic_fetch_add(&d9_rs.epoch, 1);
			step_two = true;
			next_drain = now + (rotation_ns < DRAIN_INTERVAL_NS ?
						    rotation_ns :
						    DRAIN_INTERVAL_NS);
		}
		if (now >= next_refine) {
			d9_clock_refine();
			next_refine = now + REFINE_INTERVAL_NS;
		}
		top_up_pool(r);
		/*
		 * Idle (nothing drained, no scheduler records, no request):
		 * tick less and less often, down to every 2 s (the drain
		 * epoch, rotations and the clock need no more); any work
		 * brings the period back.
		 */
		if (busy || rotate_after)
			wait_ms = r->cfg.flush_interval_ms;
		else if (wait_ms < IDLE_TICK_MS)
			wait_ms = wait_ms * 2 < IDLE_TICK_MS ? wait_ms * 2 :
							      IDLE_TICK_MS;

		pthread_mutex_lock(&r->mu);
		if (req != r->flush_done || dump) {
			r->flush_done = req;
			r->dump_done = dreq;
			pthread_cond_broadcast(&r->cv);
		}
	}
	pthread_mutex_unlock(&r->mu);
	drain_all(r);
	ksched_flush(r, UINT64_MAX);
	report_losses(r);
	return NULL;
}

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
	ret = check_config(in, &r->cfg);
	if (ret) {
		free(r);
		return ret;
	}
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
	ret = d9_worker_new(&r->worker, &r->cfg);
	if (ret)
		goto out_unlock;
	ksched_open(r);
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
				      d9_segw_shipped, r->segw, ignore_me, r);
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
	top_up_pool(r);
	ret = -pthread_create(&r->flush, NULL, flush_main, r);
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
	if (r->ks)
		dial9_ksched_counts(r->ks, &st->sched_read, &st->sched_written);
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

int dial9_get_stats(struct dial9_stats *st)
{
	struct recorder *r;

	pthread_mutex_lock(&g_lock);
	r = g_rec;
	if (!r) {
		*st = g_last;
	} else {
		memset(st, 0, sizeof(*st));
		d9_segw_stats(r->segw, st);
		d9_worker_stats(r->worker, st);
		sched_stats(r, st);
		dump_stats(r, st);
		st->events_lost += atomic_load(&r->coll.lost_events);
		st->batches_lost += atomic_load(&r->coll.lost_batches);
		st->events_invalid = atomic_load(&r->coll.invalid_events);
	}
	st->size = sizeof(*st);
	pthread_mutex_unlock(&g_lock);
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
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_nsec -= 1000000000;
		ts.tv_sec++;
	}
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
	atomic_store(&g_dump_signal, 1);
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
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += 10; /* the checkpoint: a flush and a seal */
	pthread_mutex_lock(&r->mu);
	req = trigger_locked(r, reason, &coalesced);
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

__attribute__((constructor)) static void dial9_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	dial9_start_from_env();
}
