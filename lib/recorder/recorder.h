/* SPDX-License-Identifier: MIT */
/*
 * recorder.h - what the recorder's files share (recorder/): the state of
 * a running recorder, read by configuration (config.c), the flush thread
 * (flush.c) and the lifecycle (recorder.c).  The recorder is the one
 * part of the library that calls more than one stage.  Not installed.
 */
#ifndef DIAL9_RECORDER_H
#define DIAL9_RECORDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "dial9.h"
#include "record/record.h"
#include "ksched/ksched.h"
#include "segment/segment.h"
#include "pipeline/pipeline.h"
#include "format/wire.h"
#define MIB (1024ull * 1024)
#define DRAIN_INTERVAL_NS 1000000000ull
#define REFINE_INTERVAL_NS 1000000000ull

/* The last name of each thread a COMM record named (names.c). */
struct d9_name {
	uint32_t tid, tgid;	/* tid 0: a free slot */
	char comm[16];
};

struct d9_names {
	struct d9_name *v;	/* open addressing by tid, a power of two */
	size_t cap, n;
	uint64_t dropped;	/* names not kept (past 65536, or no memory) */
};

/*
 * One stream of kernel chunks being gathered (kstream.c): its header and
 * layout frame, then per CPU the head of a chunk frame and the records
 * where they lie (the reader's inbox), then its horizon and batch end.
 */
#define KS_IOV 256
struct d9_kstream {
	struct iovec iov[KS_IOV];
	uint8_t heads[KS_IOV][16];	/* chunk frames' tag, length, CPU */
	uint8_t head[D9_HEADER_LEN + D9_KLAYOUT_MAX];
	size_t head_len;
	uint8_t tail[32];		/* horizon and batch end frames */
	unsigned int niov;
	size_t bytes;			/* from the stream header on */
	uint64_t records;		/* in this stream */
};

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
	uint64_t kt_batch_bytes;   /* a stream of kt is written at this size */
	bool maps_due;             /* sched.mapping events, for stacks */
	bool maps_on;              /* stacks or samples: mappings wanted */
	struct d9_kmaps_follow maps; /* whose were written, since when */
	uint64_t maps_seg;	/* the segment the mappings held were last
				 * written to (all of them again in a new
				 * one: kstream.c) */
	uint64_t maps_floor;	/* the last take's horizon: every record
				 * older was seen (no exec missed) */
	uint64_t sched_events;
	struct d9_kstream ks_out;	/* the kernel's records, as written */
	uint64_t last_ktake;		/* when the flush thread took them */
	uint64_t ktaken_bytes;		/* the reader's count at that take */
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
	/* the flush thread's, and the io_uring workers', CPU time as the
	 * flush thread ends (cost.c); the worker's comes at its own end */
	_Atomic uint64_t cpu_at_exit;
	/* the threads' names, written again at each new segment */
	struct d9_names names;
	uint64_t names_seg;	/* the segment they were last written to */
};

/* A COMM record's name, kept (names.c). */
void d9_names_see(struct d9_names *n, const struct dial9_rec_comm *c);
/* Each name kept, to @fn (with @ts); its first error. */
int d9_names_each(const struct d9_names *n, uint64_t ts,
		  int (*fn)(void *ctx, uint64_t ts, const struct d9_name *t),
		  void *ctx);
void d9_names_free(struct d9_names *n);

/* CPU time (ns) of dial9-flush, the io_uring workers and, with @worker,
 * dial9-worker, as the scheduler counts it (cost.c). */
uint64_t d9_cost_threads(bool worker);

/* Set by dial9_dump_request() (signal handlers); the flush thread
 * takes it (recorder.c). */
extern atomic_int d9_dump_signal;

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

/*
 * The flush thread takes the kernel's records (the reader's inboxes) at
 * most every KSCHED_TAKE_NS, and while the reader holds less than
 * KSCHED_TAKE_MIN_BYTES, every KSCHED_TAKE_MAX_NS, unless a flush, a
 * rotation or a full inbox asks for it: each stream of chunks carries
 * its layout frame (about 1.2 KB), which a take of a few records would
 * pay many times over.
 */
#define KSCHED_TAKE_NS 100000000ull
#define KSCHED_TAKE_MAX_NS 1000000000ull
#define KSCHED_TAKE_MIN_BYTES (16u << 10)

/* ---- kstream.c: the kernel's records into segments, as written ---- */
/* The stream's head (header, layout of @backend), once. */
int d9_kstream_init(struct recorder *r, const char *backend,
		    uint64_t sample_period_ns);
/*
 * A d9_ksched_chunk_fn: @n bytes of CPU @cpu's records (@nrec of them),
 * by reference; not read, unless a stream must end inside them.
 */
int d9_kstream_chunk(void *ctx, unsigned int cpu, const void *p, size_t n,
		     uint64_t nrec);
/* d9_ksched_set_seen()'s: the names, mappings and counts of a record. */
void d9_kstream_seen(void *ctx, const struct dial9_rec_header *h);
/* A sched.mapping event into the encoded stream (r->kt). */
int d9_kstream_put_mapping(void *ctx, uint64_t ts, const struct d9_mapping *m);
/*
 * Into the encoded stream: in a segment the mappings held were not
 * written to yet (a rotation), all of them again, so that it is read
 * alone (maps on only; no /proc read).
 */
void d9_kstream_maps_again(struct recorder *r);
/* The encoded stream (mappings, names, ring counts) written, begun anew. */
void d9_kstream_encoded(struct recorder *r);
/* The stream gathered, with @horizon, written; records it held. */
uint64_t d9_kstream_end(struct recorder *r, uint64_t horizon);

/* ---- config.c ---- */
/* Copy a caller's config (maybe from an older, smaller struct) into @c
 * and check it: 0 or -EINVAL. */
int d9_config_check(const struct dial9_config *in, struct dial9_config *c);

/* ---- flush.c: the flush thread ---- */
void d9_flush_ksched_open(struct recorder *r);
void d9_flush_ignore_me(void *arg);
void d9_flush_top_up_pool(struct recorder *r);
uint64_t d9_flush_trigger_locked(struct recorder *r, const char *reason,
				 bool *coalesced);
void *d9_flush_main(void *arg);

#endif /* DIAL9_RECORDER_H */
