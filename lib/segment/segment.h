/* SPDX-License-Identifier: MIT */
/*
 * segment.h - the segment writer (segment/): segment files written by the
 * flush thread, the budget of sealed segments on disk or in memory, and
 * crash salvage.  It hands sealed segments out through d9_sealed_fn and
 * hears back through d9_segw_shipped() (common/handoff.h): it never calls
 * the pipeline.  Not installed.
 */
#ifndef DIAL9_SEGMENT_H
#define DIAL9_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9.h"
#include "common/handoff.h"

struct d9_segw;
struct d9_seg_opts {
	const char *trace_dir;
	const char *service;
	const char *host;          /* NULL: gethostname() */
	uint64_t rotation_ns;
	uint64_t max_disk;
	uint64_t max_file;
	int io_backend;
	const char *clock;         /* segment metadata: "tsc", "clock_gettime" */
	const char *sched_backend; /* segment metadata */
	const char *sched_note;    /* why not dial9.ko, or "" */
	/* gets every sealed segment (continuous mode); or NULL */
	d9_sealed_fn *sealed;
	void *sealed_ctx;
	bool trigger;              /* trigger mode: segments wait for a dump */
	bool memory;               /* segments in memfds, not in trace_dir */
	bool default_dir;          /* trace_dir is the per-user default */
	unsigned int file_mode;    /* of segments: 0600, or 0640 for a group */
	bool direct_io;            /* O_DIRECT where the filesystem takes it */
};

/* ---- writer.c: the active segment, sealing, rotation, faults ---- */
/*
 * Every write of the active segment done (O_DIRECT writes are otherwise
 * not waited for), a failed one taken back and counted lost: for
 * dial9_flush(), which promises what it handed over is in the file.
 */
void d9_segw_settle(struct d9_segw *w);
int d9_segw_open(struct d9_segw **out, const struct d9_seg_opts *o);
/* Append n batches (each a whole stream). Never blocks on a fault:
 * failed batches are counted lost. Returns events written. */
uint64_t d9_segw_write(struct d9_segw *w, struct d9_batch **b, unsigned int n);
/*
 * Append one stream of @n pieces (@nevents events in it) with one write:
 * a segment rotates before it or after it, never inside.  Returns
 * @nevents, or 0 when it was lost (counted as a lost batch).
 */
struct iovec;
uint64_t d9_segw_write_stream(struct d9_segw *w, const struct iovec *iov,
			      unsigned int n, uint64_t nevents);
/* Append bytes written by the flush thread itself (loss events). */
void d9_segw_write_raw(struct d9_segw *w, const void *p, size_t n);
/* Whether the active segment, with batches, is rotation_ns old at @now
 * (a segment opened after @now is not). */
bool d9_segw_rotation_due(struct d9_segw *w, uint64_t now);
void d9_segw_rotate(struct d9_segw *w);
/* Check for faults (directory deleted) and retry recovery. */
void d9_segw_tick(struct d9_segw *w);
/* Seal (or delete if empty), fill *st with the final counters, free. */
void d9_segw_close(struct d9_segw *w, struct dial9_stats *st);
/* Seal the active segment for good (before the worker stops); no
 * d9_sealed_fn call after it. */
void d9_segw_seal_final(struct d9_segw *w);
void d9_segw_stats(struct d9_segw *w, struct dial9_stats *st);
/* The index of the active segment (the flush thread's). */
uint64_t d9_segw_index(const struct d9_segw *w);
void d9_segw_fork_child(struct d9_segw *w);

/* ---- budget.c: sealed segments, eviction, dumps ---- */
/* Sealed segments not dumped yet, now protected from eviction until the
 * pipeline is done with them; *out is malloc'd. */
int d9_segw_checkpoint(struct d9_segw *w, struct d9_ckpt_seg **out, size_t *n);
/* A d9_shipped_fn (ctx: the struct d9_segw). */
void d9_segw_shipped(void *ctx, uint64_t index, uint64_t remaining);

/* ---- salvage.c ---- */
/* Seal the .active segments of dead processes of this user under the
 * trace directory open at @tfd (@trace_dir: its name, for the log). */
unsigned int d9_salvage(int tfd, const char *trace_dir, const char *own_boot_id);

#endif /* DIAL9_SEGMENT_H */
