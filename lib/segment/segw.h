/* SPDX-License-Identifier: MIT */
/*
 * segw.h - inside the segment writer: its state and what its files share
 * (writer.c: the active segment, sealing, rotation, faults; budget.c:
 * sealed segments and their eviction; salvage.c).  Only the files of
 * segment/ include it; the rest of the library has segment.h.
 */
#ifndef DIAL9_SEGW_H
#define DIAL9_SEGW_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/common.h"
#include "segment/segment.h"

#define SEG_EXT ".dial9"
#define ACTIVE_EXT ".active"
#define RING_DEPTH 64
#define RETRY_NS 100000000ull /* retry a broken directory every 100 ms */

/* ---- direct.c: a segment's appends with O_DIRECT ---- */
#define D9_DIO_BLOCK 4096u	/* alignment of offsets, lengths, memory */
#define D9_DIO_STAGE (1u << 20)	/* a staging buffer, whole blocks */
#define D9_DIO_BUFS 2
/* d9_dio_append(), d9_dio_end(): the last append's writes failed */
#define D9_DIO_LATE 1

struct d9_dio {
	uint8_t *buf[D9_DIO_BUFS];	/* D9_DIO_STAGE bytes, aligned */
	unsigned int cur;	/* the buffer being filled */
	size_t tail;		/* bytes held in it from base */
	uint64_t base;		/* file offset of buf[cur][0], a block multiple */
	bool carry;		/* its partial last block is to move to the front */
	bool inflight[D9_DIO_BUFS];	/* its write is not done */
	size_t want[D9_DIO_BUFS];	/* that write's length */
	unsigned int ninflight;
	int late;		/* a write done with an error (-errno) */
	bool on;		/* the active segment is written so */
	bool used;		/* the last segment opened was, throughout
				 * (atomic: dial9_get_stats() reads it) */
	int err;		/* why it is not, or stopped (-errno) */
};

/*
 * O_DIRECT on @fd, a new empty segment: whether it took it.  Writes still
 * in flight to the file before (@ring) are waited for first.
 */
bool d9_dio_begin(struct d9_dio *d, int fd, struct io_uring *ring);
/*
 * Append @iov[0..n) at the file's end: 0, -errno, or D9_DIO_LATE.  With
 * @ring the writes are submitted and not waited for.  After an error
 * O_DIRECT is off on @fd and the file holds at least the bytes before
 * this append (to be cut there); after D9_DIO_LATE nothing of this
 * append was written and the file holds the bytes before the last one.
 * Either way later appends go through the page cache.
 */
int d9_dio_append(struct d9_dio *d, int fd, struct io_uring *ring,
		  const struct iovec *iov, unsigned int n);
/* Every write done: 0, or D9_DIO_LATE as d9_dio_append() says it. */
int d9_dio_settle(struct d9_dio *d, int fd, struct io_uring *ring);
/*
 * Before sealing: every write done, the file cut to @size (its padding
 * gone): 0, -errno, or D9_DIO_LATE (the last append's writes failed).
 */
int d9_dio_end(struct d9_dio *d, int fd, struct io_uring *ring, uint64_t size);
void d9_dio_free(struct d9_dio *d);

struct sealed {
	uint64_t index, size;
	uint64_t start_ns, end_ns; /* opened, sealed (CLOCK_MONOTONIC) */
	bool shipped; /* the worker is done with it */
	bool dumped;  /* trigger mode: taken into a dump */
	bool protect; /* in a dump the worker is not done with: not evicted */
	int fd;       /* memory: the segment's memfd, else -1 */
};

struct d9_segw {
	struct d9_seg_opts o;
	char *trace_dir, *service;
	char boot_id[32];
	char dir[512];
	int tfd, dfd;  /* the trace directory, and {boot_id} in it */
	int lockfd, fd;
	uint64_t index, size, nbatches, opened_ns;
	struct io_uring ring;
	bool uring;
	struct d9_dio dio;
	/* before the last O_DIRECT append: what a late failure takes back */
	struct d9_dio_mark {
		uint64_t size, nbatches, events, batches, bytes;
		uint64_t seg_events, seg_batches;
	} dio_mark;
	/* the budget: sealed segments still in the directory (the worker
	 * updates them through d9_segw_shipped(), under budget_lock) */
	pthread_mutex_t budget_lock;
	struct sealed *sealed;
	size_t nsealed, sealed_cap;
	uint64_t sealed_bytes;
	bool pipeline;
	bool broken; /* directory or file gone: reopen */
	uint64_t next_retry_ns;

	pthread_mutex_t lock; /* the fields below, read by dial9_get_stats */
	int health, last_error;
	uint64_t events_written, events_lost, batches_written, batches_lost;
	uint64_t seg_events, seg_batches; /* of those written, in the active one */
	uint64_t bytes_written, segments_sealed, segments_evicted;
	uint64_t write_errors, faults_recovered;
	uint64_t pipe_evicted; /* evicted before the worker was done */
};

/* The name of segment @index (.active while written), and its path in
 * w's directory (for messages and the pipeline). */
void d9_seg_name(uint64_t index, bool active, char *buf, size_t len);
void d9_seg_path(const struct d9_segw *w, uint64_t index, bool active,
		 char *buf, size_t len);
/* ---- dirs.c ---- */
/* A random boot_id: 4 letters and the pid. */
void d9_seg_boot_id(char *buf, size_t len);
/* The trace directory (checked), {boot_id} in it, the lock: w->tfd,
 * w->dfd, w->lockfd.  @fresh: a new boot_id if the name is taken (and
 * a private directory beside a default one that is not the user's);
 * else, recovering, {boot_id} must be made anew. */
int d9_seg_open_dirs(struct d9_segw *w, bool fresh);
void d9_seg_close_dirs(struct d9_segw *w);
/* A new file @name in w->dfd (O_EXCL|O_NOFOLLOW, o.file_mode), opened
 * with @flags: its descriptor or -errno. */
int d9_seg_create(struct d9_segw *w, const char *name, int flags);
/* ---- budget.c ---- */
/* Oldest first, past the segments a dump protects. */
void d9_segw_evict(struct d9_segw *w);
/* memory: a descriptor of sealed segment index for the worker. */
int d9_segw_dup(struct d9_segw *w, uint64_t index);

#endif /* DIAL9_SEGW_H */
