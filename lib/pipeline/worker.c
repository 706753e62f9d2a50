// SPDX-License-Identifier: MIT
/*
 * worker.c - the worker thread: takes sealed segments oldest first
 * through the configured steps (LZ4, then write-back to a directory or
 * an S3 PutObject; LZ4 alone compresses in place). With a destination,
 * each segment's summary (summary.c) follows it there as a job of its
 * own.
 *
 * One thread, one io_uring event loop: segment reads, write-back writes
 * and fsyncs, the wake-up eventfd and the sockets of libcurl's multi
 * interface (its socket callback arms one-shot io_uring polls, its timer
 * callback sets the loop's wait deadline) all complete on the same ring,
 * so several uploads proceed at once without a thread each.
 *
 * The flush thread only appends to a queue under a mutex and writes the
 * eventfd: nothing here can block recording. A failing step is counted,
 * logged at most every LOG_EVERY_NS, and retried with exponential
 * backoff and jitter (transient) or left on disk (terminal).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "common/text.h"
#include "pipeline/pipeline.h"

#if DIAL9_S3
#include <curl/curl.h>
#endif

#define RING_DEPTH 256
#define NO_DEADLINE UINT64_MAX
#define MAX_WAIT_NS 1000000000ull
#define LOG_EVERY_NS 10000000000ull
#define BREAKER_AFTER 3          /* transient failures in a row */
#define BREAKER_FIRST_MS 1000ull /* then doubling up to retry_max_ms */
#define NS_PER_MS 1000000ull

enum step { STEP_LZ4, STEP_WRITE, STEP_S3 };
enum op_kind { OP_WAKE = 1, OP_SOCK, OP_READ, OP_WRITE, OP_FSYNC, OP_IGNORE };

struct op {
	int kind;
	void *owner;
};

enum job_state {
	J_READING,   /* the sealed file into memory */
	J_RUN,       /* run the current step */
	J_WAIT,      /* the current step again at retry_at */
	J_WRITING,   /* write-back: writes, then fsync */
	J_UPLOADING, /* in the curl multi handle */
};

struct job {
	struct job *next;
	uint64_t index;
	char src[600];
	int state;
	unsigned int step;
	struct op op;
	int fd;
	uint8_t *raw; /* the segment as sealed */
	size_t raw_len, off;
	uint8_t *data; /* the payload: raw, or owned compressed bytes */
	size_t len;
	bool compressed;
	uint64_t start_real_ns;
	char tmp[1400], dst[1400];
	unsigned int attempts;
	uint64_t retry_at;
	bool probe; /* the one attempt of a half-open circuit breaker */
#if DIAL9_S3
	CURL *easy;
	struct curl_slist *hdrs;
#endif
	char *url;
	char resp[256]; /* the start of an error response, for the log */
	size_t resp_len;
	struct d9_dump *dump; /* trigger mode: the dump it belongs to */
	size_t dseg;          /* its place in dump->segs */
	bool manifest;        /* not a segment: the dump's manifest (S3) */
	bool summary;         /* not a segment: a segment's summary */
	bool mem;             /* a memfd given with it: nothing to unlink */
	char *key;            /* the S3 object key, once known */
};

/* ---- dumps (trigger mode) ---- */

struct dseg {
	uint64_t index, bytes_in, bytes_out, start_ns, end_ns;
	int status; /* 0 pending, 1 done, -1 failed, evicted or abandoned */
	char *key;
};

struct d9_dump {
	atomic_int refs;
	char id[32];
	char reason[256];
	uint64_t triggered_real_ns;
	uint64_t start_ns, end_ns;
	int64_t real_off; /* CLOCK_REALTIME - CLOCK_MONOTONIC at the dump */
	size_t n, remaining;
	struct dseg *segs;
	bool complete, want_manifest, manifest_ok, cancelled;
	char manifest_key[512];
};

/* Dumps are shared with the threads that wait for them (which may
 * outlive the worker): one lock and condition for all of them. */
static pthread_mutex_t dump_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dump_cv;
static pthread_once_t dump_once = PTHREAD_ONCE_INIT;

static void dump_cv_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dump_cv, &ca);
	pthread_condattr_destroy(&ca);
}

struct sock {
	struct op op;
	struct sock *next_dead;
#if DIAL9_S3
	curl_socket_t fd;
#endif
	unsigned int want, armed_mask;
	bool armed, dead, removing;
};

struct d9_worker {
	/* configuration, read-only once started */
	enum step steps[3];
	unsigned int nsteps;
	char *wb_dir; /* write-back base directory, or NULL: in place */
	char *bucket, *prefix, *region, *endpoint;
	char *ak, *sk, *token;
	char sigv4[160];
	unsigned int concurrency, upload_timeout_ms;
	uint64_t retry_base_ns, retry_max_ns;
	char boot_id[32], service[256], host[256];
	d9_shipped_fn *shipped; /* the segment writer's budget */
	void *shipped_ctx;

	pthread_t thread;
	bool started;
	int efd;

	pthread_mutex_t mu; /* the queue, stop and st */
	struct job *qhead, *qtail;
	bool stop;
	uint64_t stop_deadline;
	struct dial9_stats st; /* only the pipe_*, s3_*, summaries_* */

	/* the worker thread's own */
	struct io_uring ring;
	bool ring_ok;
	void (*on_thread)(void *ctx);	/* first thing the thread does */
	void *on_thread_ctx;
#if DIAL9_S3
	CURLM *multi;
#endif
	struct job *active, *active_tail;
	unsigned int nactive;
	struct sock *dead;
	uint64_t curl_deadline;
	unsigned int fails_in_row;
	bool breaker_open, probe_inflight;
	uint64_t breaker_until, breaker_delay;
	uint64_t log_next;
	unsigned int log_suppressed;
	struct op wake_op, ignore_op;
	uint64_t wake_buf;
	unsigned int seed;
	bool wb_made;
	bool closing; /* curl_multi_cleanup: free sockets at once */
	bool abandoning; /* stopping: no more manifests */
};

static uint64_t now_ns(void)
{
	return d9_clock_gettime_ns();
}

/* At most one line per LOG_EVERY_NS; the rest are counted. */
static void wlog(struct d9_worker *wk, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void wlog(struct d9_worker *wk, const char *fmt, ...)
{
	uint64_t now = now_ns();
	char msg[400];
	va_list ap;

	if (now < wk->log_next) {
		wk->log_suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (wk->log_suppressed)
		d9_log("%s (and %u similar messages)", msg, wk->log_suppressed);
	else
		d9_log("%s", msg);
	wk->log_next = now + LOG_EVERY_NS;
	wk->log_suppressed = 0;
}

static void count_error(struct d9_worker *wk, int err)
{
	pthread_mutex_lock(&wk->mu);
	wk->st.pipe_errors++;
	wk->st.pipe_last_error = err;
	pthread_mutex_unlock(&wk->mu);
}

static struct io_uring_sqe *get_sqe(struct d9_worker *wk)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&wk->ring);

	if (!sqe) {
		io_uring_submit(&wk->ring);
		sqe = io_uring_get_sqe(&wk->ring);
	}
	return sqe; /* the ring is never this full: RING_DEPTH > ops */
}

static void arm_wake(struct d9_worker *wk)
{
	struct io_uring_sqe *sqe = get_sqe(wk);

	io_uring_prep_read(sqe, wk->efd, &wk->wake_buf, sizeof(wk->wake_buf), 0);
	io_uring_sqe_set_data(sqe, &wk->wake_op);
}

static void wake(struct d9_worker *wk)
{
	uint64_t one = 1;

	if (write(wk->efd, &one, sizeof(one)) < 0)
		(void)0; /* the counter is already non-zero */
}

#if DIAL9_S3
/* ---- curl's sockets, polled through the ring ---- */

static void sock_arm(struct d9_worker *wk, struct sock *sk)
{
	struct io_uring_sqe *sqe = get_sqe(wk);

	io_uring_prep_poll_add(sqe, sk->fd, sk->want);
	io_uring_sqe_set_data(sqe, &sk->op);
	sk->armed = true;
	sk->armed_mask = sk->want;
}

static void sock_cancel(struct d9_worker *wk, struct sock *sk)
{
	struct io_uring_sqe *sqe;

	if (sk->removing)
		return;
	sqe = get_sqe(wk);
	io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)&sk->op);
	io_uring_sqe_set_data(sqe, &wk->ignore_op);
	sk->removing = true;
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp,
		   void *socketp)
{
	struct d9_worker *wk = userp;
	struct sock *sk = socketp;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (!sk)
			return 0;
		curl_multi_assign(wk->multi, s, NULL);
		sk->dead = true;
		sk->want = 0;
		if (wk->closing) {
			free(sk); /* the ring goes next, and its polls */
		} else if (sk->armed) {
			sock_cancel(wk, sk); /* freed when its poll completes */
		} else {
			sk->next_dead = wk->dead;
			wk->dead = sk;
		}
		return 0;
	}
	if (!sk) {
		sk = calloc(1, sizeof(*sk));
		if (!sk)
			return -1;
		sk->op.kind = OP_SOCK;
		sk->op.owner = sk;
		sk->fd = s;
		curl_multi_assign(wk->multi, s, sk);
	}
	sk->want = (what & CURL_POLL_IN ? POLLIN : 0) |
		   (what & CURL_POLL_OUT ? POLLOUT : 0);
	if (!sk->armed)
		sock_arm(wk, sk);
	else if (sk->armed_mask != sk->want)
		sock_cancel(wk, sk); /* re-armed with the new mask */
	return 0;
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	struct d9_worker *wk = userp;

	(void)m;
	wk->curl_deadline = timeout_ms < 0 ? NO_DEADLINE :
			    now_ns() + (uint64_t)timeout_ms * NS_PER_MS;
	return 0;
}

static void sock_event(struct d9_worker *wk, struct sock *sk, int res)
{
	int running;

	sk->armed = false;
	sk->removing = false;
	if (sk->dead) {
		sk->next_dead = wk->dead;
		wk->dead = sk;
		return;
	}
	if (res > 0) {
		int ev = (res & POLLIN ? CURL_CSELECT_IN : 0) |
			 (res & POLLOUT ? CURL_CSELECT_OUT : 0) |
			 (res & (POLLERR | POLLHUP) ? CURL_CSELECT_ERR : 0);

		curl_multi_socket_action(wk->multi, sk->fd, ev, &running);
	}
	/* sock_cb may have removed it meanwhile (then it is on wk->dead) */
	if (!sk->dead && sk->want && !sk->armed)
		sock_arm(wk, sk);
}
#endif /* DIAL9_S3 */

/* ---- jobs ---- */

static void job_free(struct job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
#if DIAL9_S3
	if (j->easy)
		curl_easy_cleanup(j->easy);
	curl_slist_free_all(j->hdrs);
#endif
	free(j->url);
	free(j->key);
	if (j->data != j->raw)
		free(j->data);
	free(j->raw);
	free(j);
}

static void unlink_active(struct d9_worker *wk, struct job *j)
{
	struct job **pp = &wk->active;

	wk->active_tail = NULL;
	while (*pp) {
		if (*pp == j) {
			*pp = j->next;
			wk->nactive--;
			break;
		}
		pp = &(*pp)->next;
	}
	for (struct job *k = wk->active; k; k = k->next)
		wk->active_tail = k;
}

enum end { END_DONE, END_FAILED, END_GONE };

static void dump_complete(struct d9_worker *wk, struct d9_dump *d, bool mok);
static void dump_segments_ended(struct d9_worker *wk, struct d9_dump *d);

/* A segment of a dump left the pipeline (1 done, -1 not). */
static void dump_seg_end(struct d9_worker *wk, struct job *j, int status)
{
	struct d9_dump *d = j->dump;
	struct dseg *e = &d->segs[j->dseg];
	bool last;

	pthread_mutex_lock(&dump_mu);
	e->status = status;
	e->bytes_out = status > 0 ? j->len : 0;
	if (!e->key) {
		e->key = j->key;
		j->key = NULL;
	}
	last = --d->remaining == 0;
	pthread_mutex_unlock(&dump_mu);
	j->dump = NULL;
	if (last)
		dump_segments_ended(wk, d);
}

/* The segment left the pipeline; remaining bytes of it stay local. */
static void job_end(struct d9_worker *wk, struct job *j, enum end how,
		    uint64_t remaining)
{
	if (j->manifest) {
		dump_complete(wk, j->dump, how == END_DONE);
		unlink_active(wk, j);
		job_free(j);
		return;
	}
	if (j->summary) {
		pthread_mutex_lock(&wk->mu);
		if (how == END_DONE)
			wk->st.summaries_done++;
		else
			wk->st.summaries_failed++;
		pthread_mutex_unlock(&wk->mu);
		unlink_active(wk, j);
		job_free(j);
		return;
	}
	if (how != END_GONE)
		wk->shipped(wk->shipped_ctx, j->index, remaining);
	pthread_mutex_lock(&wk->mu);
	wk->st.pipe_pending--;
	if (how == END_DONE) {
		wk->st.pipe_done++;
		wk->st.pipe_bytes_in += j->raw_len;
		wk->st.pipe_bytes_out += j->len;
	} else if (how == END_FAILED) {
		wk->st.pipe_failed++;
	}
	pthread_mutex_unlock(&wk->mu);
	/* after the counters: a dump's waiter sees them final */
	if (j->dump)
		dump_seg_end(wk, j, how == END_DONE ? 1 : -1);
	unlink_active(wk, j);
	job_free(j);
}

/* Terminal failure: the sealed file stays where it is. */
static void job_fail(struct d9_worker *wk, struct job *j, int err,
		     const char *what)
{
	count_error(wk, err);
	if (j->summary)
		wlog(wk, "summary %s: %s; it is lost", j->src, what);
	else
		wlog(wk, "segment %s: %s; it stays on disk", j->src, what);
	job_end(wk, j, END_FAILED, j->raw_len);
}

static uint64_t backoff_ns(struct d9_worker *wk, unsigned int attempts)
{
	uint64_t d = wk->retry_base_ns;

	while (--attempts && d < wk->retry_max_ns)
		d *= 2;
	if (d > wk->retry_max_ns)
		d = wk->retry_max_ns;
	/* jitter: between half and all of it */
	return d / 2 + (uint64_t)rand_r(&wk->seed) % (d / 2 + 1);
}

/* Transient failure: the current step again later. */
static void job_retry(struct d9_worker *wk, struct job *j, int err,
		      const char *what)
{
	count_error(wk, err);
	j->attempts++;
	j->retry_at = now_ns() + backoff_ns(wk, j->attempts);
	j->state = J_WAIT;
	wlog(wk, "%s %s: %s; retrying (attempt %u)",
	     j->summary ? "summary" : "segment", j->src, what, j->attempts + 1);
}

static void read_more(struct d9_worker *wk, struct job *j)
{
	struct io_uring_sqe *sqe = get_sqe(wk);

	j->op.kind = OP_READ;
	io_uring_prep_read(sqe, j->fd, j->raw + j->off,
			   (unsigned int)(j->raw_len - j->off > (1u << 30) ?
						  (1u << 30) :
						  j->raw_len - j->off),
			   j->off);
	io_uring_sqe_set_data(sqe, &j->op);
}

/* CLOCK_REALTIME of the segment's start, from its clock sync. */
static uint64_t start_real(const struct job *j)
{
	struct dial9_decoder *d;
	struct dial9_record rec;
	uint64_t real = 0;

	if (dial9_decoder_new(&d, j->raw, j->raw_len))
		return 0;
	for (int i = 0; i < 16 && dial9_decoder_next(d, &rec) == 1; i++) {
		if (rec.kind == DIAL9_REC_CLOCK_SYNC) {
			real = rec.real_ns;
			break;
		}
	}
	dial9_decoder_free(d);
	return real;
}

/* Take queued segments, oldest first, while there is room. */
/* The oldest queued job, or NULL. */
static struct job *dequeue(struct d9_worker *wk)
{
	struct job *j;

	pthread_mutex_lock(&wk->mu);
	j = wk->qhead;
	if (j) {
		wk->qhead = j->next;
		if (!wk->qhead)
			wk->qtail = NULL;
	}
	pthread_mutex_unlock(&wk->mu);
	return j;
}

static void admit(struct d9_worker *wk)
{
	while (wk->nactive < wk->concurrency) {
		struct job *j;
		struct stat st;

		j = dequeue(wk);
		if (!j)
			return;
		j->next = NULL;
		if (wk->active_tail)
			wk->active_tail->next = j;
		else
			wk->active = j;
		wk->active_tail = j;
		wk->nactive++;
		if (j->manifest || j->summary) {
			/* in memory already: straight to the destination */
			j->step = wk->nsteps - 1;
			j->state = J_RUN;
			continue;
		}
		if (j->fd < 0)
			j->fd = open(j->src, O_RDONLY | O_CLOEXEC);
		if (j->fd < 0 || fstat(j->fd, &st)) {
			if (errno == ENOENT) {
				/* evicted by the budget (counted there) */
				job_end(wk, j, END_GONE, 0);
			} else {
				job_fail(wk, j, -errno, "cannot open it");
			}
			continue;
		}
		j->start_real_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
				   (uint64_t)st.st_mtim.tv_nsec;
		j->raw_len = (size_t)st.st_size;
		j->raw = malloc(j->raw_len ? j->raw_len : 1);
		if (!j->raw) {
			job_fail(wk, j, -ENOMEM, "no memory to read it");
			continue;
		}
		j->state = J_READING;
		if (j->raw_len)
			read_more(wk, j);
		else
			j->state = J_RUN;
	}
}

static void enqueue(struct d9_worker *wk, struct job *j, bool segment);

/* Where the segment goes: its S3 key, or its path below write_back_dir. */
static int segment_dest(struct d9_worker *wk, const struct job *j,
			char *buf, size_t len)
{
	bool lz4 = j->compressed;
	const char *base = strrchr(j->src, '/');
	int n;

	for (unsigned int i = 0; i < wk->nsteps; i++)
		lz4 |= wk->steps[i] == STEP_LZ4;
	if (!wk->wb_dir) {
		struct d9_s3_target t = {
			.prefix = wk->prefix, .service = wk->service,
			.host = wk->host, .boot_id = wk->boot_id,
			.index = j->index, .start_real_ns = j->start_real_ns,
			.ext = lz4 ? ".bin.lz4" : ".bin",
		};

		return d9_s3_key(&t, buf, len);
	}
	base = base ? base + 1 : j->src;
	n = snprintf(buf, len, "%s/%s%s", wk->boot_id, base,
		     lz4 && !j->compressed ? ".lz4" : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * The segment's summary, a job of its own for the destination. A
 * summary that cannot be made is counted and logged; the segment goes
 * on all the same.
 */
static void summarize(struct d9_worker *wk, struct job *j)
{
	struct d9_summary_src m = {
		.host = wk->host, .service = wk->service,
		.boot_id = wk->boot_id, .index = j->index,
	};
	void *plain = NULL, *gz = NULL;
	const void *seg = j->raw;
	size_t seglen = j->raw_len, gzlen = 0, rows = 0;
	char dest[1024];
	struct job *s;
	int ret;

	ret = segment_dest(wk, j, dest, sizeof(dest));
	m.segment = dest;
	if (!ret && j->compressed) {
		ret = d9_lz4_decompress(j->raw, j->raw_len, &plain, &seglen);
		seg = plain;
	}
	if (!ret)
		ret = d9_summary_build(seg, seglen, &m, &gz, &gzlen, &rows);
	free(plain);
	if (!ret && !rows)
		return; /* no thread did anything: nothing to say */
	s = ret ? NULL : calloc(1, sizeof(*s));
	if (!s) {
		free(gz);
		count_error(wk, ret ? ret : -ENOMEM);
		pthread_mutex_lock(&wk->mu);
		wk->st.summaries_failed++;
		pthread_mutex_unlock(&wk->mu);
		wlog(wk, "segment %s: cannot summarize it: %s; it has no summary",
		     j->src, dial9_strerror(ret ? ret : -ENOMEM));
		return;
	}
	s->summary = true;
	s->mem = true;
	s->fd = -1;
	s->op.owner = s;
	s->index = j->index;
	s->start_real_ns = j->start_real_ns;
	s->raw = s->data = gz;
	s->raw_len = s->len = gzlen;
	s->compressed = true;
	snprintf(s->src, sizeof(s->src), "of %.580s", j->src);
	enqueue(wk, s, false);
}

static void read_done(struct d9_worker *wk, struct job *j, int res)
{
	if (res < 0) {
		job_fail(wk, j, res, "cannot read it");
		return;
	}
	j->off += (size_t)res;
	if (res > 0 && j->off < j->raw_len) {
		read_more(wk, j);
		return;
	}
	j->raw_len = j->off; /* shorter than at fstat: cut by eviction */
	close(j->fd);
	j->fd = -1;
	j->data = j->raw;
	j->len = j->raw_len;
	j->compressed = d9_lz4_is_frame(j->raw, j->raw_len);
	{
		uint64_t real = start_real(j);

		if (real)
			j->start_real_ns = real;
	}
	j->state = J_RUN;
	if (wk->wb_dir || wk->steps[wk->nsteps - 1] == STEP_S3)
		summarize(wk, j);
}

/* ---- write-back (and LZ4 in place): temp file, fsync, rename ---- */


static void write_more(struct d9_worker *wk, struct job *j)
{
	struct io_uring_sqe *sqe = get_sqe(wk);
	size_t n = j->len - j->off;

	j->op.kind = OP_WRITE;
	io_uring_prep_write(sqe, j->fd, j->data + j->off,
			    (unsigned int)(n > (1u << 30) ? (1u << 30) : n), j->off);
	io_uring_sqe_set_data(sqe, &j->op);
}

/* Open the temp file of j->dst in dir, then write. */
static void write_open(struct d9_worker *wk, struct job *j)
{
	j->fd = open(j->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (j->fd < 0) {
		if (errno == ENOENT)
			wk->wb_made = false; /* the directory went away */
		job_retry(wk, j, -errno, "cannot create the output file");
		return;
	}
	j->off = 0;
	j->state = J_WRITING;
	write_more(wk, j); /* zero bytes: completes at once, then fsync */
}

/* A summary to {write_back_dir}/summary/version=1/...: as in the bucket. */
static void summary_start(struct d9_worker *wk, struct job *j)
{
	struct d9_s3_target t = {
		.prefix = "", .service = wk->service, .host = wk->host,
		.boot_id = wk->boot_id, .index = j->index,
		.start_real_ns = j->start_real_ns,
	};
	char key[1024], *slash;
	int ret;

	ret = d9_s3_summary_key(&t, key, sizeof(key));
	if (!ret && (snprintf(j->dst, sizeof(j->dst), "%s/%s", wk->wb_dir,
			      key) >= (int)sizeof(j->dst)))
		ret = -ENAMETOOLONG;
	if (ret) {
		job_fail(wk, j, ret, "cannot name it");
		return;
	}
	slash = strrchr(j->dst, '/');
	*slash = 0;
	ret = d9_mkdirs(j->dst);
	if (!ret && snprintf(j->tmp, sizeof(j->tmp), "%s/.%s.tmp", j->dst,
			     slash + 1) >= (int)sizeof(j->tmp))
		ret = -ENAMETOOLONG;
	*slash = '/';
	if (ret) {
		job_retry(wk, j, ret, "cannot create its directory");
		return;
	}
	write_open(wk, j);
}

static void write_start(struct d9_worker *wk, struct job *j)
{
	const char *base = strrchr(j->src, '/');
	char dir[700];
	int ret;

	base = base ? base + 1 : j->src;
	if (j->summary) {
		summary_start(wk, j);
		return;
	}
	if (wk->wb_dir) {
		snprintf(dir, sizeof(dir), "%s/%s", wk->wb_dir, wk->boot_id);
		if (!wk->wb_made) {
			ret = d9_mkdirs(dir);
			if (ret) {
				job_retry(wk, j, ret, "cannot create the write-back directory");
				return;
			}
			wk->wb_made = true;
		}
	} else {
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - j->src - 1), j->src);
	}
	snprintf(j->dst, sizeof(j->dst), "%s/%s%s", dir, base,
		 j->compressed ? ".lz4" : "");
	snprintf(j->tmp, sizeof(j->tmp), "%s/.%s%s.tmp", dir, base,
		 j->compressed ? ".lz4" : "");
	write_open(wk, j);
}

static void write_failed(struct d9_worker *wk, struct job *j, int err)
{
	close(j->fd);
	j->fd = -1;
	unlink(j->tmp);
	job_retry(wk, j, err, "cannot write the output file");
}

static void write_done(struct d9_worker *wk, struct job *j, int res)
{
	struct io_uring_sqe *sqe;

	if (res < 0) {
		write_failed(wk, j, res);
		return;
	}
	j->off += (size_t)res;
	if (j->off < j->len || (!res && j->len)) {
		if (!res) {
			write_failed(wk, j, -EIO);
			return;
		}
		write_more(wk, j);
		return;
	}
	sqe = get_sqe(wk);
	j->op.kind = OP_FSYNC;
	io_uring_prep_fsync(sqe, j->fd, 0);
	io_uring_sqe_set_data(sqe, &j->op);
}

static void fsync_done(struct d9_worker *wk, struct job *j, int res)
{
	if (res < 0) {
		write_failed(wk, j, res);
		return;
	}
	close(j->fd);
	j->fd = -1;
	if (rename(j->tmp, j->dst)) {
		int err = -errno;

		unlink(j->tmp);
		job_retry(wk, j, err, "cannot rename the output file");
		return;
	}
	j->step++;
	j->state = J_RUN;
}

/* ---- S3 ---- */
#if DIAL9_S3

static size_t sink(char *p, size_t size, size_t n, void *arg)
{
	struct job *j = arg;
	size_t len = size * n, room = sizeof(j->resp) - 1 - j->resp_len;

	for (size_t i = 0; i < len && room; i++, room--) /* one log line */
		j->resp[j->resp_len++] = p[i] == '\n' || p[i] == '\r' ? ' ' : p[i];
	j->resp[j->resp_len] = 0;
	return len;
}

/* A header value in printable ASCII (others become '_'). */
static int add_header(struct curl_slist **l, const char *name,
		      const char *value)
{
	char buf[600];
	int n = snprintf(buf, sizeof(buf), "%s: ", name);
	struct curl_slist *nl;

	for (const char *p = value; *p && n < (int)sizeof(buf) - 1; p++)
		buf[n++] = *p >= 0x20 && *p < 0x7f ? *p : '_';
	buf[n] = 0;
	nl = curl_slist_append(*l, buf);
	if (!nl)
		return -ENOMEM;
	*l = nl;
	return 0;
}

static int s3_prepare(struct d9_worker *wk, struct job *j)
{
	struct d9_s3_target t = {
		.prefix = wk->prefix, .service = wk->service, .host = wk->host,
		.boot_id = wk->boot_id, .index = j->index,
		.start_real_ns = j->start_real_ns,
		.ext = j->compressed ? ".bin.lz4" : ".bin",
	};
	char key[1024], ekey[3072], ebucket[200], sha[65], idx[24], when[96];
	time_t secs = (time_t)(j->start_real_ns / 1000000000ull);
	struct tm tm;
	int ret;

	if (j->manifest)
		ret = snprintf(key, sizeof(key), "%s", j->key) >= (int)sizeof(key) ?
			      -ENAMETOOLONG : 0;
	else if (j->summary)
		ret = d9_s3_summary_key(&t, key, sizeof(key));
	else
		ret = d9_s3_key(&t, key, sizeof(key));
	if (!ret && !j->key && !(j->key = strdup(key)))
		ret = -ENOMEM;
	if (!ret)
		ret = d9_s3_uri_encode(key, true, ekey, sizeof(ekey));
	if (!ret)
		ret = d9_s3_uri_encode(wk->bucket, false, ebucket, sizeof(ebucket));
	if (!ret)
		ret = d9_sha256_hex(j->data, j->len, sha);
	if (ret)
		return ret;
	if (wk->endpoint)
		ret = asprintf(&j->url, "%s/%s/%s", wk->endpoint, ebucket, ekey);
	else
		ret = asprintf(&j->url, "https://%s.s3.%s.amazonaws.com/%s",
			       wk->bucket, wk->region, ekey);
	if (ret < 0) {
		j->url = NULL;
		return -ENOMEM;
	}
	snprintf(idx, sizeof(idx), "%llu", (unsigned long long)j->index);
	gmtime_r(&secs, &tm);
	snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec,
		 (unsigned int)(j->start_real_ns / 1000000 % 1000));
	if (add_header(&j->hdrs, "Content-Type", j->manifest ? "application/json" :
				      j->summary ? "application/gzip" :
				      "application/octet-stream") ||
	    (j->dump && add_header(&j->hdrs, "x-amz-meta-dump-id", j->dump->id)) ||
	    add_header(&j->hdrs, "x-amz-content-sha256", sha) ||
	    add_header(&j->hdrs, "x-amz-meta-service", wk->service) ||
	    add_header(&j->hdrs, "x-amz-meta-boot-id", wk->boot_id) ||
	    (!j->manifest &&
	     (add_header(&j->hdrs, "x-amz-meta-segment-index", idx) ||
	      add_header(&j->hdrs, "x-amz-meta-start-time", when))) ||
	    add_header(&j->hdrs, "x-amz-meta-host", wk->host) ||
	    (wk->token && add_header(&j->hdrs, "x-amz-security-token", wk->token)))
		return -ENOMEM;
	/* no "Expect:" to turn 100-continue off: curl would sign it */
	j->easy = curl_easy_init();
	if (!j->easy)
		return -ENOMEM;
	curl_easy_setopt(j->easy, CURLOPT_URL, j->url);
	curl_easy_setopt(j->easy, CURLOPT_CUSTOMREQUEST, "PUT");
	curl_easy_setopt(j->easy, CURLOPT_POSTFIELDS, j->data);
	curl_easy_setopt(j->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->len);
	curl_easy_setopt(j->easy, CURLOPT_HTTPHEADER, j->hdrs);
	curl_easy_setopt(j->easy, CURLOPT_AWS_SIGV4, wk->sigv4);
	curl_easy_setopt(j->easy, CURLOPT_USERNAME, wk->ak);
	curl_easy_setopt(j->easy, CURLOPT_PASSWORD, wk->sk);
	curl_easy_setopt(j->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(j->easy, CURLOPT_TIMEOUT_MS, (long)wk->upload_timeout_ms);
	curl_easy_setopt(j->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(wk->upload_timeout_ms < 10000 ?
					wk->upload_timeout_ms : 10000));
	curl_easy_setopt(j->easy, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(j->easy, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(j->easy, CURLOPT_PRIVATE, j);
	return 0;
}

static void s3_start(struct d9_worker *wk, struct job *j)
{
	int ret;

	if (!j->easy) {
		ret = s3_prepare(wk, j);
		if (ret) {
			if (j->probe)
				wk->probe_inflight = false;
			job_fail(wk, j, ret, "cannot prepare the upload");
			return;
		}
	}
	j->resp_len = 0;
	j->resp[0] = 0;
	if (curl_multi_add_handle(wk->multi, j->easy) != CURLM_OK) {
		if (j->probe)
			wk->probe_inflight = false;
		j->probe = false;
		job_retry(wk, j, -ENOMEM, "cannot start the upload");
		return;
	}
	j->state = J_UPLOADING;
	pthread_mutex_lock(&wk->mu);
	wk->st.s3_puts++;
	pthread_mutex_unlock(&wk->mu);
}

static void breaker_set(struct d9_worker *wk, bool open)
{
	pthread_mutex_lock(&wk->mu);
	if (open && !wk->breaker_open)
		wk->st.s3_breaker_opens++;
	wk->st.s3_breaker_open = open;
	pthread_mutex_unlock(&wk->mu);
	wk->breaker_open = open;
}

static int curl_errno(int res)
{
	switch (res) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		return -ECONNRESET;
	}
	return -EIO;
}

static void s3_done(struct d9_worker *wk, struct job *j, int res)
{
	long status = 0;
	char what[400];
	bool probe = j->probe;

	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(wk->multi, j->easy);
	if (probe)
		wk->probe_inflight = false;
	j->probe = false;
	switch (d9_s3_classify(res, status)) {
	case D9_S3_OK:
		wk->fails_in_row = 0;
		wk->breaker_delay = 0;
		if (wk->breaker_open) {
			breaker_set(wk, false);
			wlog(wk, "S3 uploads work again");
		}
		j->step++;
		j->state = J_RUN;
		return;
	case D9_S3_RETRY:
		if (status)
			snprintf(what, sizeof(what), "PutObject answered HTTP %ld %.200s",
				 status, j->resp);
		else
			snprintf(what, sizeof(what), "PutObject failed: %s",
				 curl_easy_strerror((CURLcode)res));
		job_retry(wk, j, status ? (int)status : curl_errno(res), what);
		pthread_mutex_lock(&wk->mu);
		wk->st.s3_retries++;
		pthread_mutex_unlock(&wk->mu);
		wk->fails_in_row++;
		if (probe || (!wk->breaker_open && wk->fails_in_row >= BREAKER_AFTER)) {
			uint64_t cap = wk->retry_max_ns;

			wk->breaker_delay = wk->breaker_delay ?
						    wk->breaker_delay * 2 :
						    BREAKER_FIRST_MS * NS_PER_MS;
			if (wk->breaker_delay > cap)
				wk->breaker_delay = cap;
			wk->breaker_until = now_ns() + wk->breaker_delay;
			if (!wk->breaker_open)
				wlog(wk, "S3 endpoint failing: no upload for %llu ms",
				     (unsigned long long)(wk->breaker_delay /
							  NS_PER_MS));
			breaker_set(wk, true);
		}
		return;
	case D9_S3_TERMINAL:
		/* the endpoint answered: it is up */
		wk->fails_in_row = 0;
		if (wk->breaker_open)
			breaker_set(wk, false);
		if (status)
			snprintf(what, sizeof(what),
				 "PutObject refused with HTTP %ld %.200s", status,
				 j->resp);
		else
			snprintf(what, sizeof(what), "PutObject failed: %s",
				 curl_easy_strerror((CURLcode)res));
		job_fail(wk, j, status ? (int)status : curl_errno(res), what);
		return;
	}
}

static void reap_curl(struct d9_worker *wk)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(wk->multi, &left))) {
		struct job *j = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
		if (j)
			s3_done(wk, j, m->data.result);
	}
}
#else
/* Never reached: d9_worker_new() refuses DIAL9_PIPE_S3 in this build. */
static void s3_start(struct d9_worker *wk, struct job *j)
{
	job_fail(wk, j, -EOPNOTSUPP, "S3 upload is not in this build");
}
#endif /* DIAL9_S3 */

/* ---- the steps ---- */

static void finish(struct d9_worker *wk, struct job *j)
{
	bool in_place = wk->steps[wk->nsteps - 1] == STEP_WRITE && !wk->wb_dir;

	if (j->manifest || j->summary) {
		job_end(wk, j, END_DONE, 0);
		return;
	}
	if (!j->mem && unlink(j->src) && errno != ENOENT)
		wlog(wk, "cannot delete %s after shipping it: %s", j->src,
		     strerror(errno));
	job_end(wk, j, END_DONE, in_place ? j->len : 0);
}

/* Run a job's steps until one has to wait. */
static void run(struct d9_worker *wk, struct job *j)
{
	while (j->state == J_RUN) {
		if (j->step == wk->nsteps) {
			finish(wk, j);
			return;
		}
		switch (wk->steps[j->step]) {
		case STEP_LZ4:
			if (!j->compressed) {
				void *out;
				size_t n;
				int ret = d9_lz4_compress(j->raw, j->raw_len, &out, &n);

				if (ret) {
					job_fail(wk, j, ret, "cannot compress it");
					return;
				}
				j->data = out;
				j->len = n;
				j->compressed = true;
			}
			j->step++;
			break;
		case STEP_WRITE:
			write_start(wk, j);
			return;
		case STEP_S3:
			j->state = J_WAIT;
			j->retry_at = 0;
			return;
		}
	}
}

/* Start what is due: steps to run, retries whose time has come, and
 * uploads if the circuit breaker lets them. */
static void progress(struct d9_worker *wk, uint64_t now)
{
	struct job *j = wk->active, *next;

	for (; j; j = next) {
		next = j->next; /* run() may free j, never another job */
		if (j->state == J_RUN)
			run(wk, j);
	}
	for (j = wk->active; j; j = next) {
		next = j->next;
		if (j->state != J_WAIT || j->retry_at > now)
			continue;
		if (wk->steps[j->step] != STEP_S3) {
			j->state = J_RUN;
			continue;
		}
		if (wk->breaker_open) {
			if (now < wk->breaker_until || wk->probe_inflight)
				continue;
			wk->probe_inflight = true; /* half open: one attempt */
			j->probe = true;
		}
		s3_start(wk, j);
	}
}

static uint64_t next_deadline(struct d9_worker *wk, uint64_t stop_deadline)
{
	uint64_t d = wk->curl_deadline;

	if (stop_deadline && stop_deadline < d)
		d = stop_deadline;
	for (struct job *j = wk->active; j; j = j->next) {
		uint64_t t;

		if (j->state == J_RUN)
			return 0;
		if (j->state != J_WAIT)
			continue;
		t = j->retry_at;
		if (wk->steps[j->step] == STEP_S3 && wk->breaker_open &&
		    !wk->probe_inflight && wk->breaker_until > t)
			t = wk->breaker_until;
		if (t < d)
			d = t;
	}
	return d;
}

static void handle_cqe(struct d9_worker *wk, struct io_uring_cqe *cqe)
{
	struct op *op = io_uring_cqe_get_data(cqe);
	int res = cqe->res;

	if (!op)
		return;
	switch (op->kind) {
	case OP_WAKE:
		arm_wake(wk);
		break;
#if DIAL9_S3
	case OP_SOCK:
		sock_event(wk, op->owner, res);
		break;
#endif
	case OP_READ:
		read_done(wk, op->owner, res);
		break;
	case OP_WRITE:
		write_done(wk, op->owner, res);
		break;
	case OP_FSYNC:
		fsync_done(wk, op->owner, res);
		break;
	default:
		break;
	}
}

static void wait_events(struct d9_worker *wk, uint64_t deadline)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts;
	uint64_t now = now_ns(), wait;
	unsigned int head, n = 0;

	wait = deadline <= now ? 0 : deadline - now;
	if (wait > MAX_WAIT_NS)
		wait = MAX_WAIT_NS;
	ts.tv_sec = (long long)(wait / 1000000000ull);
	ts.tv_nsec = (long long)(wait % 1000000000ull);
	if (wait)
		io_uring_submit_and_wait_timeout(&wk->ring, &cqe, 1, &ts, NULL);
	else
		io_uring_submit(&wk->ring);
	io_uring_for_each_cqe(&wk->ring, head, cqe) {
		handle_cqe(wk, cqe);
		n++;
	}
	io_uring_cq_advance(&wk->ring, n);
}

static void free_dead(struct d9_worker *wk)
{
	while (wk->dead) {
		struct sock *sk = wk->dead;

		wk->dead = sk->next_dead;
		free(sk);
	}
}

static void abandon_job(struct d9_worker *wk, struct job *j)
{
	if (j->summary) {
		pthread_mutex_lock(&wk->mu);
		wk->st.summaries_failed++;
		pthread_mutex_unlock(&wk->mu);
	} else if (j->manifest) {
		pthread_mutex_lock(&dump_mu);
		j->dump->cancelled = true;
		pthread_mutex_unlock(&dump_mu);
		dump_complete(wk, j->dump, false);
	} else if (j->dump) {
		pthread_mutex_lock(&dump_mu);
		j->dump->cancelled = true;
		pthread_mutex_unlock(&dump_mu);
		dump_seg_end(wk, j, -1);
	}
	job_free(j);
}

/* The stop deadline passed: what is left stays on disk. */
static void abandon(struct d9_worker *wk)
{
	uint64_t n = 0, lost;
	struct job *j;

	for (j = wk->active; j; j = j->next) {
#if DIAL9_S3
		if (j->state == J_UPLOADING) {
			curl_multi_remove_handle(wk->multi, j->easy);
			j->state = J_WAIT;
		}
#endif
	}
	/* reads and writes in flight complete before their buffers go */
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		bool busy = false;

		for (j = wk->active; j; j = j->next)
			busy |= j->state == J_READING || j->state == J_WRITING;
		if (!busy || io_uring_submit_and_wait(&wk->ring, 1) < 0)
			break;
		io_uring_for_each_cqe(&wk->ring, head, cqe) {
			struct op *op = io_uring_cqe_get_data(cqe);

			if (op && (op->kind == OP_READ || op->kind == OP_WRITE ||
				   op->kind == OP_FSYNC))
				((struct job *)op->owner)->state = J_WAIT;
			seen++;
		}
		io_uring_cq_advance(&wk->ring, seen);
	}
	wk->abandoning = true; /* dumps end here, without a manifest */
	pthread_mutex_lock(&wk->mu);
	lost = wk->st.summaries_failed;
	pthread_mutex_unlock(&wk->mu);
	while ((j = wk->active)) {
		wk->active = j->next;
		if (j->fd >= 0 && j->tmp[0])
			unlink(j->tmp); /* a write-back cut short */
		n += !j->manifest && !j->summary;
		abandon_job(wk, j);
	}
	wk->active_tail = NULL;
	wk->nactive = 0;
	for (;;) {
		j = dequeue(wk);
		if (!j)
			break;
		n += !j->manifest && !j->summary;
		abandon_job(wk, j);
	}
	pthread_mutex_lock(&wk->mu);
	wk->st.pipe_abandoned += n;
	wk->st.pipe_pending = 0;
	lost = wk->st.summaries_failed - lost;
	pthread_mutex_unlock(&wk->mu);
	if (lost)
		d9_log("%llu segment summaries were not shipped before the "
		       "shutdown deadline; they are lost",
		       (unsigned long long)lost);
	if (n)
		d9_log("%llu segments were not shipped before the shutdown "
		       "deadline; they stay on disk", (unsigned long long)n);
}

static void *worker_main(void *arg)
{
	struct d9_worker *wk = arg;

	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_setname_np(pthread_self(), "dial9-worker");
	if (wk->on_thread)
		wk->on_thread(wk->on_thread_ctx);
	arm_wake(wk);
	for (;;) {
		uint64_t now = now_ns(), deadline;
		bool stopping, empty;

		pthread_mutex_lock(&wk->mu);
		stopping = wk->stop;
		deadline = wk->stop_deadline;
		empty = !wk->qhead;
		pthread_mutex_unlock(&wk->mu);
		if (stopping && (now >= deadline || (empty && !wk->nactive)))
			break;
		admit(wk);
		progress(wk, now);
		wait_events(wk, next_deadline(wk, stopping ? deadline : 0));
#if DIAL9_S3
		if (wk->curl_deadline != NO_DEADLINE &&
		    now_ns() >= wk->curl_deadline) {
			int running;

			wk->curl_deadline = NO_DEADLINE;
			curl_multi_socket_action(wk->multi, CURL_SOCKET_TIMEOUT, 0,
						 &running);
		}
		reap_curl(wk);
#endif
		free_dead(wk);
	}
	abandon(wk);
	return NULL;
}

/* ---- lifecycle ---- */

#if DIAL9_S3
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}
#endif

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

void d9_worker_free(struct d9_worker *wk)
{
	if (!wk)
		return;
	wk->closing = true;
	while (wk->qhead) { /* never started: nothing was taken */
		struct job *j = wk->qhead;

		wk->qhead = j->next;
		job_free(j);
	}
#if DIAL9_S3
	if (wk->multi)
		curl_multi_cleanup(wk->multi);
#endif
	if (wk->ring_ok)
		io_uring_queue_exit(&wk->ring);
	if (wk->efd >= 0)
		close(wk->efd);
	free_dead(wk);
	free(wk->wb_dir);
	free(wk->bucket);
	free(wk->prefix);
	free(wk->region);
	free(wk->endpoint);
	free(wk->ak);
	free(wk->sk);
	free(wk->token);
	pthread_mutex_destroy(&wk->mu);
	free(wk);
}

int d9_worker_new(struct d9_worker **out, const struct dial9_config *cfg)
{
	uint32_t p = cfg->pipeline;
	struct d9_worker *wk;

	*out = NULL;
	if (p & ~(DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK | DIAL9_PIPE_S3))
		return -EINVAL;
	if (!p)
		return 0;
	if ((p & DIAL9_PIPE_WRITE_BACK) && (p & DIAL9_PIPE_S3))
		return -EINVAL;
	if ((p & DIAL9_PIPE_WRITE_BACK) &&
	    (!cfg->write_back_dir || !*cfg->write_back_dir))
		return -EINVAL;
	if ((p & DIAL9_PIPE_S3) && (!cfg->s3_bucket || !*cfg->s3_bucket))
		return -EINVAL;
	if ((p & DIAL9_PIPE_S3) && !DIAL9_S3) {
		d9_log("S3 upload (bucket \"%s\") is not in this libdial9: it "
		       "was built without it (make DIAL9_S3=0); nothing is "
		       "recorded", cfg->s3_bucket);
		return -EOPNOTSUPP;
	}
	wk = calloc(1, sizeof(*wk));
	if (!wk)
		return -ENOMEM;
	wk->efd = -1;
	pthread_mutex_init(&wk->mu, NULL);
	if (p & DIAL9_PIPE_LZ4)
		wk->steps[wk->nsteps++] = STEP_LZ4;
	if (p & DIAL9_PIPE_S3)
		wk->steps[wk->nsteps++] = STEP_S3;
	else
		wk->steps[wk->nsteps++] = STEP_WRITE; /* write-back or in place */
	wk->concurrency = cfg->upload_concurrency ? cfg->upload_concurrency : 4;
	if (cfg->host_name && *cfg->host_name)
		snprintf(wk->host, sizeof(wk->host), "%s", cfg->host_name);
	wk->upload_timeout_ms = cfg->upload_timeout_ms ? cfg->upload_timeout_ms :
							  30000;
	wk->retry_base_ns = (uint64_t)(cfg->retry_base_ms ? cfg->retry_base_ms :
							    500) * NS_PER_MS;
	wk->retry_max_ns = (uint64_t)(cfg->retry_max_ms ? cfg->retry_max_ms :
							  300000) * NS_PER_MS;
	if (wk->retry_max_ns < wk->retry_base_ns)
		wk->retry_max_ns = wk->retry_base_ns;
	if (p & DIAL9_PIPE_WRITE_BACK) {
		wk->wb_dir = strdup(cfg->write_back_dir);
		if (!wk->wb_dir)
			goto out_nomem;
	}
	if (p & DIAL9_PIPE_S3) {
		const char *endpoint = cfg->s3_endpoint;

		wk->bucket = strdup(cfg->s3_bucket);
		wk->prefix = strdup(cfg->s3_prefix ? cfg->s3_prefix : "dial9-traces");
		wk->region = strdup(cfg->s3_region && *cfg->s3_region ?
					    cfg->s3_region : "us-east-1");
		wk->endpoint = dup_or_null(endpoint);
		wk->ak = dup_or_null(getenv("AWS_ACCESS_KEY_ID"));
		wk->sk = dup_or_null(getenv("AWS_SECRET_ACCESS_KEY"));
		wk->token = dup_or_null(getenv("AWS_SESSION_TOKEN"));
		if (!wk->bucket || !wk->prefix || !wk->region)
			goto out_nomem;
		if (!wk->ak || !wk->sk) {
			d9_log("S3 upload needs AWS_ACCESS_KEY_ID and "
			       "AWS_SECRET_ACCESS_KEY in the environment");
			d9_worker_free(wk);
			return -ENOKEY;
		}
		/* no trailing '/' on the endpoint; no '/' around the prefix */
		if (wk->endpoint) {
			size_t n = strlen(wk->endpoint);

			while (n && wk->endpoint[n - 1] == '/')
				wk->endpoint[--n] = 0;
		}
		{
			size_t n = strlen(wk->prefix);
			char *s = wk->prefix;

			while (n && s[n - 1] == '/')
				s[--n] = 0;
			while (*s == '/')
				memmove(s, s + 1, strlen(s));
		}
		snprintf(wk->sigv4, sizeof(wk->sigv4), "aws:amz:%s:s3", wk->region);
#if DIAL9_S3
		pthread_once(&curl_once, curl_init_once);
#endif
	}
	*out = wk;
	return 0;
out_nomem:
	d9_worker_free(wk);
	return -ENOMEM;
}

int d9_worker_start(struct d9_worker *wk, const char *boot_id,
		    const char *service, d9_shipped_fn *shipped,
		    void *shipped_ctx, void (*on_thread)(void *ctx), void *ctx)
{
	int ret;

	wk->shipped = shipped;
	wk->shipped_ctx = shipped_ctx;
	wk->on_thread = on_thread;
	wk->on_thread_ctx = ctx;
	snprintf(wk->boot_id, sizeof(wk->boot_id), "%s", boot_id);
	snprintf(wk->service, sizeof(wk->service), "%s", service);
	if (!wk->host[0] && gethostname(wk->host, sizeof(wk->host) - 1))
		strcpy(wk->host, "unknown");
	if (getrandom(&wk->seed, sizeof(wk->seed), GRND_NONBLOCK) < 0)
		wk->seed = (unsigned int)now_ns();
	wk->wake_op.kind = OP_WAKE;
	wk->ignore_op.kind = OP_IGNORE;
	wk->curl_deadline = NO_DEADLINE;
	wk->efd = eventfd(0, EFD_CLOEXEC);
	if (wk->efd < 0)
		return -errno;
	ret = io_uring_queue_init(RING_DEPTH, &wk->ring, 0);
	if (ret) {
		d9_log("the worker pipeline needs io_uring: %s", strerror(-ret));
		return ret;
	}
	wk->ring_ok = true;
#if DIAL9_S3
	if (wk->bucket) {
		wk->multi = curl_multi_init();
		if (!wk->multi)
			return -ENOMEM;
		curl_multi_setopt(wk->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
		curl_multi_setopt(wk->multi, CURLMOPT_SOCKETDATA, wk);
		curl_multi_setopt(wk->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
		curl_multi_setopt(wk->multi, CURLMOPT_TIMERDATA, wk);
	}
#endif
	ret = -pthread_create(&wk->thread, NULL, worker_main, wk);
	if (ret)
		return ret;
	wk->started = true;
	return 0;
}

/*
 * Hand a job to the worker thread (the flush thread never waits on it);
 * a segment's job counts as pending until it is through.
 */
static void enqueue(struct d9_worker *wk, struct job *j, bool segment)
{
	pthread_mutex_lock(&wk->mu);
	if (wk->qtail)
		wk->qtail->next = j;
	else
		wk->qhead = j;
	wk->qtail = j;
	if (segment)
		wk->st.pipe_pending++;
	pthread_mutex_unlock(&wk->mu);
	wake(wk);
}

void d9_worker_submit(struct d9_worker *wk, uint64_t index, const char *path)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		count_error(wk, -ENOMEM); /* the segment stays on disk */
		return;
	}
	j->index = index;
	j->fd = -1;
	j->op.owner = j;
	snprintf(j->src, sizeof(j->src), "%s", path);
	enqueue(wk, j, true);
}

void d9_worker_submit_fd(struct d9_worker *wk, uint64_t index,
			 const char *label, int fd)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		close(fd);
		count_error(wk, -ENOMEM);
		return;
	}
	j->index = index;
	j->fd = fd;
	j->mem = true;
	j->op.owner = j;
	snprintf(j->src, sizeof(j->src), "%s", label);
	enqueue(wk, j, true);
}

void d9_worker_stop(struct d9_worker *wk, unsigned int timeout_ms)
{
	if (!wk || !wk->started)
		return;
	pthread_mutex_lock(&wk->mu);
	wk->stop = true;
	wk->stop_deadline = now_ns() + (uint64_t)timeout_ms * NS_PER_MS;
	pthread_mutex_unlock(&wk->mu);
	wake(wk);
	pthread_join(wk->thread, NULL);
	wk->started = false;
}

void d9_worker_stats(struct d9_worker *wk, struct dial9_stats *st)
{
	if (!wk)
		return;
	pthread_mutex_lock(&wk->mu);
	st->pipe_done = wk->st.pipe_done;
	st->pipe_pending = wk->st.pipe_pending;
	st->pipe_bytes_in = wk->st.pipe_bytes_in;
	st->pipe_bytes_out = wk->st.pipe_bytes_out;
	st->pipe_failed = wk->st.pipe_failed;
	st->pipe_errors = wk->st.pipe_errors;
	st->pipe_abandoned = wk->st.pipe_abandoned;
	st->s3_puts = wk->st.s3_puts;
	st->s3_retries = wk->st.s3_retries;
	st->s3_breaker_opens = wk->st.s3_breaker_opens;
	st->pipe_last_error = wk->st.pipe_last_error;
	st->s3_breaker_open = wk->st.s3_breaker_open;
	st->dumps_done = wk->st.dumps_done;
	st->summaries_done = wk->st.summaries_done;
	st->summaries_failed = wk->st.summaries_failed;
	pthread_mutex_unlock(&wk->mu);
}

/* ---- dumps ---- */

/* A ULID: 48 bits of milliseconds since the epoch, 80 random bits, in
 * Crockford's base32 (26 characters, sortable by time). */
static void make_ulid(char out[32])
{
	static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	uint64_t ms = d9_clock_realtime_ns() / 1000000ull;
	uint8_t rnd[10];
	unsigned __int128 v;

	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd)) {
		uint64_t t = d9_clock_gettime_ns() ^ ((uint64_t)getpid() << 32);

		memcpy(rnd, &t, 8);
		memcpy(rnd + 8, &t, 2);
	}
	v = (unsigned __int128)(ms & 0xffffffffffffull) << 80;
	for (int i = 0; i < 10; i++)
		v |= (unsigned __int128)rnd[i] << (8 * (9 - i));
	for (int i = 25; i >= 0; i--) {
		out[i] = b32[(unsigned int)(v & 31)];
		v >>= 5;
	}
	out[26] = 0;
}

static void iso_time(uint64_t real_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(real_ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (unsigned int)(real_ns / 1000000 % 1000));
}

/* {prefix}/dumps/{id}.json: what the dump holds and where it went. */
static char *manifest_json(struct d9_worker *wk, struct d9_dump *d, size_t *len)
{
	char *buf = NULL, t[64];
	size_t done = 0;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	pthread_mutex_lock(&dump_mu);
	for (size_t i = 0; i < d->n; i++)
		done += d->segs[i].status > 0;
	fprintf(f, "{\n  \"dump_id\": \"%s\",\n  \"triggered_at\": ", d->id);
	iso_time(d->triggered_real_ns, t, sizeof(t));
	d9_json_str(f, t);
	fprintf(f, ",\n  \"reason\": ");
	d9_json_str(f, d->reason);
	fprintf(f, ",\n  \"service\": ");
	d9_json_str(f, wk->service);
	fprintf(f, ",\n  \"host\": ");
	d9_json_str(f, wk->host);
	fprintf(f, ",\n  \"boot_id\": ");
	d9_json_str(f, wk->boot_id);
	iso_time((uint64_t)((int64_t)d->start_ns + d->real_off), t, sizeof(t));
	fprintf(f, ",\n  \"time_range\": {\"start\": \"%s\", ", t);
	iso_time((uint64_t)((int64_t)d->end_ns + d->real_off), t, sizeof(t));
	fprintf(f, "\"end\": \"%s\", \"start_mono_ns\": %llu, "
		   "\"end_mono_ns\": %llu},\n", t,
		(unsigned long long)d->start_ns, (unsigned long long)d->end_ns);
	fprintf(f, "  \"segments_processed\": %zu,\n  \"metadata\": {\"reason\": ",
		done);
	d9_json_str(f, d->reason);
	fprintf(f, "},\n  \"segments\": [");
	for (size_t i = 0; i < d->n; i++) {
		struct dseg *e = &d->segs[i];

		fprintf(f, "%s\n    {\"index\": %llu, \"status\": \"%s\", \"key\": ",
			i ? "," : "", (unsigned long long)e->index,
			e->status > 0 ? "uploaded" : "failed");
		d9_json_str(f, e->status > 0 ? e->key : NULL);
		fprintf(f, ", \"bytes\": %llu, \"sealed_bytes\": %llu}",
			(unsigned long long)e->bytes_out,
			(unsigned long long)e->bytes_in);
	}
	fprintf(f, "%s]\n}\n", d->n ? "\n  " : "");
	pthread_mutex_unlock(&dump_mu);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Every segment of d is through (or not): the manifest, or the end. */
static void dump_segments_ended(struct d9_worker *wk, struct d9_dump *d)
{
	struct job *j;

	if (!wk->bucket || wk->abandoning) {
		dump_complete(wk, d, !wk->bucket);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (j)
		j->raw = (uint8_t *)manifest_json(wk, d, &j->raw_len);
	if (!j || !j->raw || !(j->key = strdup(d->manifest_key))) {
		job_free(j);
		count_error(wk, -ENOMEM);
		dump_complete(wk, d, false);
		return;
	}
	j->fd = -1;
	j->op.owner = j;
	j->manifest = true;
	j->dump = d;
	j->data = j->raw;
	j->len = j->raw_len;
	snprintf(j->src, sizeof(j->src), "manifest of dump %s", d->id);
	enqueue(wk, j, false);
}

static void dump_complete(struct d9_worker *wk, struct d9_dump *d, bool mok)
{
	/* counted before a waiter can see it complete */
	pthread_mutex_lock(&wk->mu);
	wk->st.dumps_done++;
	pthread_mutex_unlock(&wk->mu);
	pthread_mutex_lock(&dump_mu);
	d->manifest_ok = mok;
	d->complete = true;
	pthread_cond_broadcast(&dump_cv);
	pthread_mutex_unlock(&dump_mu);
	d9_dump_put(d); /* the worker's reference */
}

struct d9_dump *d9_dump_get(struct d9_dump *d)
{
	if (d)
		atomic_fetch_add(&d->refs, 1);
	return d;
}

void d9_dump_put(struct d9_dump *d)
{
	if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->segs[i].key);
	free(d->segs);
	free(d);
}

struct d9_dump *d9_worker_dump(struct d9_worker *wk,
			       const struct d9_ckpt_seg *segs, size_t n,
			       const char *reason, uint64_t now)
{
	struct d9_dump *d = calloc(1, sizeof(*d));
	struct job **jobs = calloc(n ? n : 1, sizeof(*jobs));
	uint64_t real = d9_clock_realtime_ns();

	pthread_once(&dump_once, dump_cv_init);
	if (!d || !jobs || !(d->segs = calloc(n ? n : 1, sizeof(*d->segs))))
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		jobs[i] = calloc(1, sizeof(**jobs));
		if (!jobs[i])
			goto nomem;
	}
	atomic_init(&d->refs, 2); /* the worker's and the caller's */
	make_ulid(d->id);
	snprintf(d->reason, sizeof(d->reason), "%s", reason ? reason : "");
	d->triggered_real_ns = real;
	d->real_off = (int64_t)real - (int64_t)d9_clock_gettime_ns();
	d->n = d->remaining = n;
	d->start_ns = n ? segs[0].start_ns : now;
	d->end_ns = n ? segs[n - 1].end_ns : now;
	d->want_manifest = wk->bucket != NULL;
	if (wk->bucket)
		snprintf(d->manifest_key, sizeof(d->manifest_key), "%s%sdumps/%s.json",
			 wk->prefix, *wk->prefix ? "/" : "", d->id);
	for (size_t i = 0; i < n; i++) {
		struct job *j = jobs[i];

		d->segs[i].index = segs[i].index;
		d->segs[i].bytes_in = segs[i].bytes;
		d->segs[i].start_ns = segs[i].start_ns;
		d->segs[i].end_ns = segs[i].end_ns;
		if (segs[i].start_ns < d->start_ns)
			d->start_ns = segs[i].start_ns;
		if (segs[i].end_ns > d->end_ns)
			d->end_ns = segs[i].end_ns;
		j->index = segs[i].index;
		j->fd = segs[i].fd;
		j->mem = segs[i].fd >= 0;
		j->op.owner = j;
		j->dump = d;
		j->dseg = i;
		snprintf(j->src, sizeof(j->src), "%s", segs[i].path);
	}
	pthread_mutex_lock(&wk->mu);
	for (size_t i = 0; i < n; i++) {
		if (wk->qtail)
			wk->qtail->next = jobs[i];
		else
			wk->qhead = jobs[i];
		wk->qtail = jobs[i];
	}
	wk->st.pipe_pending += n;
	pthread_mutex_unlock(&wk->mu);
	free(jobs);
	if (!n)
		dump_segments_ended(wk, d);
	wake(wk);
	return d;
nomem:
	for (size_t i = 0; jobs && i < n; i++)
		free(jobs[i]);
	free(jobs);
	if (d)
		free(d->segs);
	free(d);
	return NULL;
}

int d9_dump_wait(struct d9_dump *d, unsigned int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	pthread_once(&dump_once, dump_cv_init);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_nsec -= 1000000000;
		ts.tv_sec++;
	}
	pthread_mutex_lock(&dump_mu);
	while (!d->complete && !ret)
		ret = pthread_cond_timedwait(&dump_cv, &dump_mu, &ts);
	ret = d->complete ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&dump_mu);
	return ret;
}

void d9_dump_receipt(struct d9_dump *d, struct dial9_dump_receipt *r)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	pthread_mutex_lock(&dump_mu);
	snprintf(r->dump_id, sizeof(r->dump_id), "%s", d->id);
	r->segments = d->n;
	for (size_t i = 0; i < d->n; i++) {
		r->segments_done += d->segs[i].status > 0;
		r->segments_failed += d->segs[i].status < 0;
	}
	if (d->n) {
		r->first_index = d->segs[0].index;
		r->last_index = d->segs[d->n - 1].index;
	}
	r->start_ns = d->start_ns;
	r->end_ns = d->end_ns;
	r->start_real_ns = (uint64_t)((int64_t)d->start_ns + d->real_off);
	r->end_real_ns = (uint64_t)((int64_t)d->end_ns + d->real_off);
	r->triggered_real_ns = d->triggered_real_ns;
	if (d->want_manifest)
		snprintf(r->manifest_key, sizeof(r->manifest_key), "%s",
			 d->manifest_key);
	if (!d->complete)
		r->status = -EINPROGRESS;
	else if (d->cancelled)
		r->status = -ECANCELED;
	else if (r->segments_failed || !d->manifest_ok)
		r->status = -EIO;
	pthread_mutex_unlock(&dump_mu);
}
