/* SPDX-License-Identifier: MIT */
/*
 * worker.h - inside the worker pipeline: the worker's state, its jobs
 * and what its files share (worker.c: the event loop; job.c: jobs and
 * their steps; writeback.c; upload.c: S3 PutObject through curl's multi
 * interface; lifecycle.c; dump.c: trigger mode).  Only the files of
 * pipeline/ include it; the rest of the library has pipeline.h.
 */
#ifndef DIAL9_WORKER_H
#define DIAL9_WORKER_H

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
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
#include "symbols/symtab.h"
#if DIAL9_S3
#include <curl/curl.h>
#endif

#define RING_DEPTH 256
#define NO_DEADLINE UINT64_MAX
#define MAX_WAIT_NS 1000000000ull
#define LOG_EVERY_NS 10000000000ull
#define BREAKER_AFTER 3          /* transient failures in a row */
#define BREAKER_FIRST_MS 1000ull /* then doubling up to retry_max_ms */

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

/* How a job left the pipeline (d9_job_end). */
enum end { END_DONE, END_FAILED, END_GONE };

/* ---- dumps (trigger mode; dump.c) ---- */

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
 * outlive the worker): one lock for all of them (dump.c). */
extern pthread_mutex_t d9_dump_mu;

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
	struct d9_symtab *symtab; /* symbol tables, or NULL: none */
	d9_shipped_fn *shipped; /* the segment writer's budget */
	void *shipped_ctx;

	pthread_t thread;
	bool started;
	int efd;

	pthread_mutex_t mu; /* the queue, stop and st */
	struct job *qhead, *qtail;
	bool stop;
	uint64_t stop_deadline;
	struct dial9_stats st; /* only the pipe_*, s3_*, summaries_*, symbols_* */

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
	unsigned int file_mode, dir_mode; /* of what it writes: 0600/0700, 0640/0750 */
	_Atomic uint64_t cpu_ns;	/* the thread's CPU time, set as it ends */
	bool closing; /* curl_multi_cleanup: free sockets at once */
	bool abandoning; /* stopping: no more manifests */
};

/* ---- worker.c: the event loop and what every step uses ---- */
/* At most one line per LOG_EVERY_NS; the rest are counted. */
void d9_wk_log(struct d9_worker *wk, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void d9_wk_count_error(struct d9_worker *wk, int err);
struct io_uring_sqe *d9_wk_sqe(struct d9_worker *wk);
void d9_wk_wake(struct d9_worker *wk);
void d9_wk_free_dead(struct d9_worker *wk);
void *d9_wk_main(void *arg);

/* ---- job.c ---- */
void d9_job_free(struct job *j);
void d9_job_end(struct d9_worker *wk, struct job *j, enum end how,
		uint64_t remaining);
void d9_job_fail(struct d9_worker *wk, struct job *j, int err,
		 const char *what);
void d9_job_retry(struct d9_worker *wk, struct job *j, int err,
		  const char *what);
struct job *d9_job_dequeue(struct d9_worker *wk);
void d9_job_admit(struct d9_worker *wk);
void d9_job_read_done(struct d9_worker *wk, struct job *j, int res);
void d9_dump_seg_end(struct d9_worker *wk, struct job *j, int status);

/* ---- writeback.c ---- */
void d9_wb_start(struct d9_worker *wk, struct job *j);
void d9_wb_write_done(struct d9_worker *wk, struct job *j, int res);
void d9_wb_fsync_done(struct d9_worker *wk, struct job *j, int res);

/* ---- upload.c ---- */
void d9_s3_start(struct d9_worker *wk, struct job *j);
#if DIAL9_S3
int d9_sock_cb(CURL *e, curl_socket_t s, int what, void *userp,
	       void *socketp);
int d9_timer_cb(CURLM *m, long timeout_ms, void *userp);
void d9_sock_event(struct d9_worker *wk, struct sock *sk, int res);
void d9_s3_reap(struct d9_worker *wk);
#endif

/* ---- lifecycle.c ---- */
void d9_wk_enqueue(struct d9_worker *wk, struct job *j, bool segment);

/* ---- dump.c ---- */
void d9_dump_complete(struct d9_worker *wk, struct d9_dump *d, bool mok);
void d9_dump_segments_ended(struct d9_worker *wk, struct d9_dump *d);

#endif /* DIAL9_WORKER_H */
