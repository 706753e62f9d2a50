/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h - the worker pipeline (pipeline/): what the recorder asks of
 * it and what its steps (worker.c, lz4.c, writeback.c, s3.c, dump.c,
 * summary.c) share.  Sealed segments come in through d9_worker_submit()
 * (the recorder's d9_sealed_fn) and go back to the budget through a
 * d9_shipped_fn (common/handoff.h): it never calls the segment writer.
 * Not installed.
 */
#ifndef DIAL9_PIPELINE_H
#define DIAL9_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9.h"
#include "common/handoff.h"

/* S3 upload (libcurl, libcrypto) is in the library unless it is built
 * with make DIAL9_S3=0 (lib/lib.mk passes -DDIAL9_S3=0). */
#ifndef DIAL9_S3
#define DIAL9_S3 1
#endif

struct d9_worker;

/*
 * Create the worker for cfg's pipeline (NULL in *out when the pipeline
 * is empty). Checks the configuration and the S3 credentials in the
 * environment; starts nothing.
 */
int d9_worker_new(struct d9_worker **out, const struct dial9_config *cfg);
/*
 * Start the thread; segments of boot_id follow, and each one the
 * pipeline is done with goes to @shipped(@shipped_ctx) (the budget of the
 * segment writer).  The thread first calls @on_thread(@ctx) if set (the
 * recorder leaves it out of its scheduler records there).
 */
int d9_worker_start(struct d9_worker *wk, const char *boot_id,
		    const char *service, d9_shipped_fn *shipped,
		    void *shipped_ctx, void (*on_thread)(void *ctx), void *ctx);
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
/* The worker thread's CPU time, once it has ended (0 before, or none). */
uint64_t d9_worker_cpu_ns(struct d9_worker *wk);

/* ---- trigger mode ---- */

/* (struct d9_ckpt_seg, a sealed segment taken into a dump: handoff.h) */
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

/* ---- lz4.c ---- */
/* LZ4 frame (content checksum and size on) of in[0..n) into a new
 * malloc'd buffer. */
int d9_lz4_compress(const void *in, size_t n, void **out, size_t *outlen);
/* Decompress a whole LZ4 frame (or several, concatenated) into a new
 * malloc'd buffer. */
int d9_lz4_decompress(const void *in, size_t n, void **out, size_t *outlen);
/*
 * Where d9_lz4_inflate() writes: buf[0..len) of cap bytes, never more
 * than max; resize() makes buf hold @cap bytes (buf is NULL the first
 * time): 0 or -ENOMEM.  d9_lz4_decompress() resizes with realloc, the
 * dial9 command with mmap/mremap (tools/cli_lz4.c).
 */
struct d9_lz4_out {
	uint8_t *buf;
	size_t cap, len, max;
	int (*resize)(struct d9_lz4_out *o, size_t cap);
};
/*
 * Decompress LZ4 frames in[0..n) into @o.  The first frame's content
 * size, when it has one, sizes the buffer once, and one past o->max is
 * refused before anything is allocated; otherwise the buffer doubles
 * with the output, up to the same bound.  0, -EFBIG past the bound,
 * -EBADMSG corrupt (liblz4 checks the content size at the frame's end),
 * -ENODATA cut short, -ENOMEM.  On failure o->buf may hold memory.
 */
int d9_lz4_inflate(const void *in, size_t n, struct d9_lz4_out *o);
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
/*
 * The key layout below the prefix, which d9_s3_key() writes and `dial9
 * ls`/`dial9 fetch` read: these Hive partitions, in this order, then
 * {epoch_secs}-{index}{ext}.
 */
#define D9_S3_P_VERSION "version=1"
#define D9_S3_P_DATE "date="         /* YYYY-MM-DD (UTC) */
#define D9_S3_P_SERVICE "service="
#define D9_S3_P_TIME "time="         /* HHMM (UTC) */
#define D9_S3_P_INSTANCE "instance=" /* the host */
#define D9_S3_P_BOOT "boot="
#define D9_S3_NPARTS 6
extern const char *const d9_s3_parts[D9_S3_NPARTS];
/* The object key (Hive-partitioned), NUL-terminated, into buf. */
int d9_s3_key(const struct d9_s3_target *t, char *buf, size_t len);
/* Hive's path escaping of a partition value into buf (3 * strlen(s) + 1
 * bytes always do): these and control characters become %XX, so a value
 * never adds a path level or an '='. */
int d9_s3_hive_escape(const char *s, char *buf, size_t len);
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

/* ---- summary.c: the summary of a sealed segment: gzip'd JSON
 * lines, one per thread, shipped beside the segment under
 *
 *   {prefix}/summary/version=1/date=.../service=.../time=.../
 *            instance=.../boot=.../{epoch_secs}-{index}.json.gz
 *
 * (S3; write-back: {write_back_dir}/summary/version=1/...). ---- */
/* The level of the key layout below the prefix that holds summaries. */
#define D9_SUMMARY_DIR "summary"
#define D9_SUMMARY_EXT ".json.gz"

/* What the worker knows of the segment (the segment's own metadata wins). */
struct d9_summary_src {
	const char *host, *service, *boot_id;
	uint64_t index;
	const char *segment; /* where the segment went: its key or path */
};

/*
 * The summary of the segment seg[0..len) (not compressed) into *out
 * (malloc'd, *outlen bytes) and the number of rows (threads) in *nrows;
 * no rows: *out is NULL. 0, -ENOMEM, or the decoder's error.
 */
int d9_summary_build(const void *seg, size_t len,
		     const struct d9_summary_src *m, void **out,
		     size_t *outlen, size_t *nrows);

#endif /* DIAL9_PIPELINE_H */

