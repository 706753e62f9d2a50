/* SPDX-License-Identifier: MIT */
/*
 * worker.h - the worker pipeline: what the recorder, the segment writer
 * and the steps (lz4.c, s3.c) share. Not installed.
 */
#ifndef DIAL9_WORKER_H
#define DIAL9_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "dial9.h"

/* S3 upload (libcurl, libcrypto) is in the library unless it is built
 * with make DIAL9_S3=0 (lib/lib.mk passes -DDIAL9_S3=0). */
#ifndef DIAL9_S3
#define DIAL9_S3 1
#endif

struct d9_worker;
struct d9_segw;

/*
 * Create the worker for cfg's pipeline (NULL in *out when the pipeline
 * is empty). Checks the configuration and the S3 credentials in the
 * environment; starts nothing.
 */
int d9_worker_new(struct d9_worker **out, const struct dial9_config *cfg);
/*
 * Start the thread; segments sealed by w (boot_id, dir) follow.  The
 * thread first calls @on_thread(@ctx) if set (the recorder leaves it out
 * of its scheduler records there).
 */
int d9_worker_start(struct d9_worker *wk, struct d9_segw *w,
		    const char *boot_id, const char *service,
		    void (*on_thread)(void *ctx), void *ctx);
/*
 * A sealed segment for the pipeline (the flush thread, from seal()).
 * Never blocks beyond a short mutex; never fails (ENOMEM: the segment
 * stays on disk and is counted).
 */
void d9_worker_submit(struct d9_worker *wk, uint64_t index, const char *path);
/* The same for a segment in memory: fd (a memfd) is the worker's to
 * close; label names it in logs and write-back ("DIR/NNNNNNNN.dial9"). */
void d9_worker_submit_fd(struct d9_worker *wk, uint64_t index,
			 const char *label, int fd);
/*
 * Let pending segments through for at most timeout_ms, then stop the
 * thread and free everything. Segments not through stay on disk.
 */
void d9_worker_stop(struct d9_worker *wk, unsigned int timeout_ms);
void d9_worker_free(struct d9_worker *wk);
/* Add the pipeline's counters to *st. */
void d9_worker_stats(struct d9_worker *wk, struct dial9_stats *st);

/* ---- trigger mode ---- */

/* A sealed segment taken into a dump (segment.c fills these). */
struct d9_ckpt_seg {
	uint64_t index, bytes;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC: opened, sealed */
	char path[600];
	int fd; /* memory: a dup of the segment's memfd, else -1 */
};

struct d9_dump;

/*
 * Start a dump of segs[0..n) (the worker copies them): each goes through
 * the pipeline with the dump's id; with S3 a manifest follows. Returns a
 * reference for the caller (d9_dump_put()), NULL on ENOMEM.
 */
struct d9_dump *d9_worker_dump(struct d9_worker *wk,
			       const struct d9_ckpt_seg *segs, size_t n,
			       const char *reason, uint64_t now_ns);
/* Wait until the dump's run ended (at most timeout_ms): 0 or -ETIMEDOUT. */
int d9_dump_wait(struct d9_dump *d, unsigned int timeout_ms);
void d9_dump_receipt(struct d9_dump *d, struct dial9_dump_receipt *r);
struct d9_dump *d9_dump_get(struct d9_dump *d);
void d9_dump_put(struct d9_dump *d);

/* segment.c: sealed segments not dumped yet, now protected from
 * eviction until the worker is done with them; *out is malloc'd. */
int d9_segw_checkpoint(struct d9_segw *w, struct d9_ckpt_seg **out, size_t *n);

/*
 * segment.c: the worker is done with segment index; remaining bytes of
 * it stay in the segment directory (0: none, it left the budget).
 */
void d9_segw_shipped(struct d9_segw *w, uint64_t index, uint64_t remaining);

/* ---- lz4.c ---- */
/* LZ4 frame (content checksum and size on) of in[0..n) into a new
 * malloc'd buffer. */
int d9_lz4_compress(const void *in, size_t n, void **out, size_t *outlen);
/* Decompress a whole LZ4 frame (or several, concatenated). */
int d9_lz4_decompress(const void *in, size_t n, void **out, size_t *outlen);
/* 1 if the bytes start with the LZ4 frame magic. */
int d9_lz4_is_frame(const void *p, size_t n);

/* ---- s3.c ---- */
struct d9_s3_target {
	const char *prefix;
	const char *service;
	const char *host;
	const char *boot_id;
	uint64_t index;
	uint64_t start_real_ns; /* CLOCK_REALTIME of the segment's start */
	const char *ext;        /* ".bin.lz4" or ".bin" */
};
/* The object key (Hive-partitioned), NUL-terminated, into buf. */
int d9_s3_key(const struct d9_s3_target *t, char *buf, size_t len);
/* The key of the segment's summary: the same partitions below
 * {prefix}/summary/, ending in .json.gz (t->ext is not used). */
int d9_s3_summary_key(const struct d9_s3_target *t, char *buf, size_t len);
/* Percent-encode everything but RFC 3986 unreserved characters and
 * (if keep_slash) '/'. */
int d9_s3_uri_encode(const char *s, bool keep_slash, char *buf, size_t len);
/* What to do after an attempt. */
enum d9_s3_outcome { D9_S3_OK, D9_S3_RETRY, D9_S3_TERMINAL };
#if DIAL9_S3
/* curl result and HTTP status (0 if none) -> outcome. */
enum d9_s3_outcome d9_s3_classify(int curl_result, long http_status);
/* Lowercase hex SHA-256 of in[0..n) into hex[65]. */
int d9_sha256_hex(const void *in, size_t n, char hex[65]);
#endif

#endif /* DIAL9_WORKER_H */
