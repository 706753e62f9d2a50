/* SPDX-License-Identifier: MIT */
/*
 * handoff.h - what the stages hand each other, through the recorder
 * (recorder/), which alone calls more than one of them: types and
 * callbacks, no functions, so that no stage calls another.
 *
 *   record/ --struct d9_batch--> segment/ --d9_sealed_fn--> pipeline/
 *   pipeline/ --d9_shipped_fn--> segment/ (the budget of sealed segments)
 *   segment/ --struct d9_ckpt_seg--> pipeline/ (trigger mode: a dump)
 */
#ifndef DIAL9_HANDOFF_H
#define DIAL9_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

/*
 * A buffer of frames: filled by one application thread (record/), queued
 * by the collector, written whole by the segment writer (segment/).
 */
struct d9_batch {
	struct d9_batch *next_free;
	uint8_t *data;
	size_t cap;   /* bytes usable for frames, batch end reserved */
	size_t len;
	uint64_t nevents;
	uint32_t map_len;
};

/*
 * The segment writer sealed segment @index (continuous mode): @path is
 * where it lies, or with memory storage its label ("DIR/NNNNNNNN.dial9")
 * and @fd a memfd that becomes the callee's to close (else -1).  Called
 * by the flush thread; must not block.
 */
typedef void d9_sealed_fn(void *ctx, uint64_t index, const char *path,
			  int fd);

/*
 * The pipeline is done with segment @index; @remaining bytes of it stay
 * in the segment directory (0: none, it left the budget).  Called by the
 * worker thread.
 */
typedef void d9_shipped_fn(void *ctx, uint64_t index, uint64_t remaining);

/* A sealed segment taken into a dump (trigger mode; segment/ fills it). */
struct d9_ckpt_seg {
	uint64_t index, bytes;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC: opened, sealed */
	char path[600];
	int fd; /* memory: a dup of the segment's memfd, else -1 */
};

#endif /* DIAL9_HANDOFF_H */
