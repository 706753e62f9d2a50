/* SPDX-License-Identifier: MIT */
/*
 * dial9.h - the one public header of libdial9, the dial9 flight recorder.
 *
 * Errors are negative errno values; dial9_strerror() names them.
 * Order: types, recorder lifecycle, recording, the trace encoder, the
 * trace decoder, then the static inline fast paths and macros.
 * See docs/lib.md for the guide and docs/format.md for the trace format.
 */
#ifndef DIAL9_H
#define DIAL9_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is the library's ABI (see libdial9.map). */
#pragma GCC visibility push(default)

/*
 * The release, a string: the VERSION file at the top of the source tree.
 * The build defines it for the library and the command (lib/lib.mk);
 * make install writes it in here, as it does into dial9.pc.
 */
#ifndef DIAL9_VERSION_STRING
#define DIAL9_VERSION_STRING @DIAL9_VERSION_STRING@
#endif

/* ---- field types ------------------------------------------------------ */

/*
 * A field type's top three bits are its wire class (how a reader that
 * does not know the type skips it): 0 varint, 1 fixed 8 bytes,
 * 2 varint length + bytes.
 */
enum dial9_type {
	DIAL9_U64 = 0x01,   /* unsigned varint */
	DIAL9_I64 = 0x02,   /* zigzag varint */
	DIAL9_BOOL = 0x03,  /* varint 0 or 1 */
	DIAL9_ISTR = 0x04,  /* interned string: varint id of a string frame */
	DIAL9_F64 = 0x21,   /* IEEE 754 double, little-endian */
	DIAL9_STR = 0x41,   /* length + UTF-8 (not checked) */
	DIAL9_BYTES = 0x42, /* length + bytes */
};

/* What an event type means to a reader. */
enum dial9_kind {
	DIAL9_KIND_INSTANT = 0,
	DIAL9_KIND_SPAN_BEGIN = 1,
	DIAL9_KIND_SPAN_END = 2,
	DIAL9_KIND_COUNTER = 3,
	DIAL9_KIND_GAUGE = 4,
	DIAL9_KIND_INTERNAL = 5, /* written by the library itself */
};

/* One typed value. STR/ISTR/BYTES point at memory the caller owns. */
struct dial9_value {
	uint8_t type; /* enum dial9_type; 0 for a field of unknown type */
	union {
		uint64_t u64;
		int64_t i64;
		double f64;
		bool b;
		struct {
			const void *ptr;
			size_t len;
		} str;
	};
};

struct dial9_field {
	const char *name;
	uint8_t type; /* enum dial9_type */
};

/*
 * An application-defined event type. Declare it statically with
 * DIAL9_EVENT_TYPE() or DIAL9_SPAN_TYPE(); the library registers it on
 * first use and fills in id. Name and fields must stay valid forever.
 */
struct dial9_event_type {
	const char *name;
	uint8_t kind; /* enum dial9_kind */
	uint16_t nfields;
	const struct dial9_field *fields;
	uint32_t id; /* 0 until registered; owned by the library */
};

struct dial9_span_type {
	struct dial9_event_type begin;
	struct dial9_event_type end;
};

/* ---- recorder lifecycle ---------------------------------------------- */

enum dial9_io_backend {
	DIAL9_IO_AUTO = 0,     /* io_uring, pwrite if io_uring is unavailable */
	DIAL9_IO_URING = 1,
	DIAL9_IO_PWRITE = 2,
};

enum dial9_direct_io {
	DIAL9_DIRECT_IO_AUTO = 0, /* O_DIRECT where the filesystem takes it */
	DIAL9_DIRECT_IO_OFF = 1,  /* through the page cache */
};

enum dial9_clock {
	DIAL9_CLOCK_AUTO = 0,     /* TSC when invariant, else clock_gettime */
	DIAL9_CLOCK_TSC = 1,
	DIAL9_CLOCK_GETTIME = 2,
};

/*
 * The scheduler source's ring per CPU for the library's own session, by
 * default: DIAL9_SCHED_RING_BUDGET split over the possible CPUs, three
 * rings' worth each (the kernel's ring, and the reader's inbox and its
 * spare, a ring each, kept in memory), rounded down to a power of two,
 * within [DIAL9_SCHED_RING_MIN_DEFAULT, DIAL9_SCHED_RING_MAX_DEFAULT]
 * (4 MiB up to 5 CPUs, 2 MiB up to 10, 1 MiB from 11).  docs/lib.md has
 * the measurements behind it.
 */
#define DIAL9_SCHED_RING_BUDGET		(64u << 20)
#define DIAL9_SCHED_RING_MIN_DEFAULT	(1u << 20)
#define DIAL9_SCHED_RING_MAX_DEFAULT	(4u << 20)
#define DIAL9_SCHED_RING_DEFAULT	DIAL9_SCHED_RING_MIN_DEFAULT

/* Starts with its size so that it can grow; use dial9_config_init(). */

struct dial9_config {
	uint32_t size;
	const char *trace_dir;      /* default /var/tmp/dial9-{euid} (docs/lib.md) */
	const char *service_name;   /* default: program name */
	uint32_t rotation_secs;     /* default 60 */
	uint64_t max_disk_bytes;    /* default 1 GiB */
	uint64_t max_file_bytes;    /* default min(100 MiB, max_disk / 4) */
	uint32_t buffer_bytes;      /* thread buffer, default 1 MiB */
	uint32_t flush_interval_ms; /* default 5 */
	uint32_t collector_batches; /* default 1024 */
	uint32_t io_backend;        /* enum dial9_io_backend */
	uint32_t clock;             /* enum dial9_clock */
	/* The kernel's scheduler events (see docs/lib.md). */
	uint32_t sched;             /* enum dial9_sched, default AUTO */
	uint32_t sched_flags;       /* DIAL9_SCHED_* */
	const int *sched_pids;      /* other processes (CAP_PERFMON) */
	uint32_t sched_npids;
	uint32_t sched_ring_bytes;  /* per CPU, dial9.ko or perf (a power of two);
				     * dial9_config_init(): see
				     * DIAL9_SCHED_RING_BUDGET; 0: the
				     * backend's own default */
	/* The worker pipeline for sealed segments (docs/upload.md). */
	uint32_t pipeline;          /* DIAL9_PIPE_*; 0: segments stay as sealed */
	uint32_t upload_concurrency;  /* segments in flight, default 4 */
	const char *write_back_dir;   /* DIAL9_PIPE_WRITE_BACK: {dir}/{boot_id}/ */
	const char *s3_bucket;        /* DIAL9_PIPE_S3 */
	const char *s3_prefix;        /* default "dial9-traces" */
	const char *s3_region;        /* default "us-east-1" */
	const char *s3_endpoint;      /* path-style, e.g. http://127.0.0.1:9000;
				       * NULL: https://{bucket}.s3.{region}.amazonaws.com */
	uint32_t shutdown_timeout_ms; /* for pending segments at stop, default 5000 */
	uint32_t upload_timeout_ms;   /* one attempt, default 30000 */
	uint32_t retry_base_ms;       /* first backoff, default 500 */
	uint32_t retry_max_ms;        /* backoff and circuit breaker cap, 300000 */
	/* Trigger mode (docs/upload.md): sealed segments wait within the
	 * budget and the pipeline runs only on dumps. */
	uint32_t mode;                /* enum dial9_mode */
	uint32_t dump_debounce_ms;    /* triggers this close make one dump, 1000 */
	int32_t trigger_signal;       /* e.g. SIGUSR2 requests a dump; 0: none */
	/* Where segments wait for the pipeline. DIAL9_STORAGE_MEMORY keeps
	 * them in RAM (max_disk_bytes is then the RAM budget): nothing is
	 * written to disk, and a crash loses them. Needs S3 or write-back. */
	uint32_t storage;             /* enum dial9_storage */
	/* The flush thread's nice (0-19), and its io_uring workers' (they
	 * inherit it); 0 by default, so under load it keeps up with the
	 * threads it drains; a higher value yields to them, at the cost of
	 * application events lost when the collector fills. */
	int32_t flush_nice;
	/* The host name in segments, object keys and summaries (a fleet's
	 * own name for the machine, or a container's); NULL: gethostname().
	 * DIAL9_HOST_NAME. */
	const char *host_name;
	/* The SCHED_FIFO priority (1-99) the thread that copies the
	 * kernel's scheduler records out of its rings takes while it falls
	 * behind (a ring past its watermark), so that it keeps up when the
	 * machine is overloaded, for at most 10% of a CPU; otherwise it
	 * runs at the process's own policy.  Default 1; 0: never.  Where
	 * the process may not (no CAP_SYS_NICE, RLIMIT_RTPRIO below it) the
	 * log, the trace's sched_note and dial9_stats.sched_reader_prio (0)
	 * say so.  DIAL9_SCHED_READER_PRIO. */
	uint32_t sched_reader_prio;
	/* A symbol table in each shipped segment that has stack frames
	 * (DIAL9_SCHED_STACKS, and CPU samples): the worker names the frames from the files
	 * on this host before it compresses and ships the segment, so that
	 * the trace has names wherever it is read (docs/upload.md).  enum
	 * dial9_symbols; DIAL9_SYMBOLS. */
	uint32_t symbols;
	/* Distinct frames named per segment at most (the rest are counted
	 * and noted); 0: 16384.  DIAL9_SYMBOLS_MAX_FRAMES. */
	uint32_t symbols_max_frames;
	/* On-CPU samples of the recorded threads, with their user stacks,
	 * this many times a second per CPU (a CPU profile: sched.sample
	 * events); default 99, 0: none, at most 1000.  From dial9.ko, or
	 * perf_event_open (user time only) where the module is absent;
	 * where neither can, the trace's sched_note says so.
	 * DIAL9_CPU_SAMPLE_HZ. */
	uint32_t cpu_sample_hz;
	/* The mode of segment files: 0600 (the default: the user alone
	 * reads them), or 0640 so that the trace directory's group reads
	 * them too; directories get the matching 0700 / 0750.  Nothing
	 * else is accepted: a trace is never writable by others.
	 * DIAL9_TRACE_MODE (octal). */
	uint32_t trace_mode;
	/* How segments are written (enum dial9_direct_io): by default with
	 * O_DIRECT where the trace directory's filesystem takes it (ext4,
	 * xfs, btrfs; not tmpfs before Linux 6.6), so that the recorder
	 * copies nothing into the page cache and leaves no writeback to the
	 * kernel's flusher threads; dial9_stats.direct_io and each
	 * segment's io_direct metadata say whether it did, and why not.
	 * DIAL9_DIRECT_IO=auto|off. */
	uint32_t direct_io;
};

/* The default trace directory of this process's effective user:
 * /var/tmp/dial9-{euid}.  Used where dial9_config.trace_dir is unset. */
const char *dial9_default_trace_dir(void);

enum dial9_symbols {
	DIAL9_SYMBOLS_AUTO = 0, /* on if there are frames (DIAL9_SCHED_STACKS or
				 * CPU samples) and a pipeline */
	DIAL9_SYMBOLS_OFF = 1,
	DIAL9_SYMBOLS_ON = 2,   /* the same as AUTO today: frames come only
				 * from DIAL9_SCHED_STACKS and CPU samples */
};

enum dial9_storage {
	DIAL9_STORAGE_DISK = 0,   /* {trace_dir}/{boot_id}/ */
	DIAL9_STORAGE_MEMORY = 1, /* memfds; trace_dir is never created */
};

enum dial9_mode {
	DIAL9_MODE_CONTINUOUS = 0, /* every sealed segment through the pipeline */
	DIAL9_MODE_TRIGGER = 1,    /* only on dial9_dump_trigger()/_request() */
};

/* Steps of the worker pipeline, in this order. */
#define DIAL9_PIPE_LZ4        (1u << 0) /* LZ4 frame -> .dial9.lz4 */
#define DIAL9_PIPE_WRITE_BACK (1u << 1) /* move to write_back_dir */
#define DIAL9_PIPE_S3         (1u << 2) /* PutObject, then delete locally */

/* Where scheduler events come from. */
enum dial9_sched {
	DIAL9_SCHED_AUTO = 0, /* /dev/dial9, else perf_event_open, else none */
	DIAL9_SCHED_OFF = 1,
	DIAL9_SCHED_PERF = 2, /* perf_event_open, else schedstat */
	DIAL9_SCHED_SCHEDSTAT = 3, /* /proc schedstat samples only */
};

#define DIAL9_SCHED_NO_SELF     (1u << 0) /* not this process */
#define DIAL9_SCHED_CHILDREN    (1u << 1) /* and processes they fork */
#define DIAL9_SCHED_SYSTEM_WIDE (1u << 2) /* every task: CAP_PERFMON */
#define DIAL9_SCHED_STACKS      (1u << 3) /* user stacks at switch-out
					   * (dial9.ko only) */
#define DIAL9_SCHED_NO_OCCUPANTS (1u << 4) /* not what ran on a CPU while
					   * a thread waited (dial9.ko) */

/* Fill *cfg with the documented defaults (not the environment). */
void dial9_config_init(struct dial9_config *cfg);

/*
 * Overwrite the fields of *cfg named by DIAL9_* environment variables.
 * Invalid values log one warning naming the variable and leave the
 * default. Returns 1 if DIAL9_ENABLED is true, 0 otherwise.
 */
int dial9_config_from_env(struct dial9_config *cfg);

/*
 * Start the process' recorder (strict): any invalid or unusable setting
 * is returned as an error and nothing is started. -EBUSY if a recorder
 * is already running.
 */
int dial9_start(const struct dial9_config *cfg);

/*
 * Start a recorder configured from the environment (lenient): if
 * DIAL9_ENABLED is not true, does nothing and returns 0; if the
 * configuration does not work, logs one error and returns it, the
 * process runs on with recording disabled. Called automatically when
 * the library is loaded.
 */
int dial9_start_from_env(void);

/*
 * Stop recording, flush every thread's buffer, seal the last segment.
 * Runs automatically at exit. Returns 0, or -ENOENT if none running.
 */
int dial9_stop(void);

enum dial9_health {
	DIAL9_HEALTH_OFF = 0,      /* no recorder */
	DIAL9_HEALTH_OK = 1,
	DIAL9_HEALTH_DEGRADED = 2, /* cannot write; retrying */
};

struct dial9_stats {
	uint32_t size;
	uint32_t health;        /* enum dial9_health */
	int32_t last_error;     /* negative errno of the last write fault */
	uint32_t io_backend;    /* DIAL9_IO_URING or DIAL9_IO_PWRITE */
	uint64_t events_written;
	uint64_t events_lost;   /* dropped batches, write faults, oversize,
				 * invalid calls (events_invalid), deleted
				 * active segment */
	uint64_t batches_written;
	uint64_t batches_lost;
	uint64_t bytes_written;
	uint64_t segments_sealed;
	uint64_t segments_evicted;
	uint64_t write_errors;
	uint64_t faults_recovered;
	char boot_id[32];
	char dir[512]; /* the directory segments go to */
	char sched_backend[16]; /* "dial9.ko", "perf", "schedstat", "" */
	int32_t sched_error;    /* why there is no scheduler source */
	uint32_t sched_reader_prio; /* the SCHED_FIFO priority the ring reader may take, 0: none */
	uint64_t sched_events;  /* scheduler events written */
	uint64_t sched_lost;    /* records the kernel dropped (full rings) */
	uint64_t sched_unfollowed; /* children not followed (table full) */
	uint64_t sched_read;    /* dial9.ko: records read from its rings */
	uint64_t sched_written; /* dial9.ko: records it wrote (its count) */
	/* The worker pipeline (all 0 without one). */
	uint64_t pipe_done;        /* segments through every step */
	uint64_t pipe_pending;     /* sealed, waiting or in progress */
	uint64_t pipe_bytes_in;    /* of the segments done, as sealed */
	uint64_t pipe_bytes_out;   /* of the segments done, as shipped */
	uint64_t pipe_failed;      /* terminal failures: kept locally */
	uint64_t pipe_errors;      /* failed attempts (retried or not) */
	uint64_t pipe_evicted;     /* evicted by the disk budget before done */
	uint64_t pipe_abandoned;   /* still pending when the worker stopped */
	uint64_t s3_puts;          /* PutObject requests sent */
	uint64_t s3_retries;       /* attempts scheduled after a failure */
	uint64_t s3_breaker_opens; /* times the circuit breaker opened */
	int32_t pipe_last_error;   /* negative errno, or the HTTP status */
	uint32_t s3_breaker_open;  /* 1 while no upload is attempted */
	/* Trigger mode. */
	uint64_t dumps;            /* dumps started */
	uint64_t dumps_coalesced;  /* triggers folded into a dump (debounce) */
	uint64_t dumps_done;       /* dumps whose pipeline run ended */
	char last_dump_id[32];     /* "" before the first dump */
	/* Of events_lost: record calls dropped because their values did not
	 * match their event type (count or types), or because the type
	 * could not be registered (see docs/lib.md). */
	uint64_t events_invalid;
	/* Segment summaries (docs/format.md), shipped beside the segments. */
	uint64_t summaries_done;   /* shipped (S3) or written (write-back) */
	uint64_t summaries_failed; /* not built, refused, or abandoned: lost */
	/* Symbol tables of shipped segments (dial9_config.symbols). */
	uint64_t symbols_segments; /* segments given a table */
	uint64_t symbols_named;    /* distinct frames named, over all of them */
	uint64_t symbols_unnamed;  /* looked up, not named (noted in the trace) */
	uint64_t symbols_capped;   /* frame occurrences past the cap (noted) */
	uint64_t symbols_failed;   /* tables not made: shipped without one */
	/* The CPU profile: on-CPU samples written (sched.sample events);
	 * those the kernel dropped are in sched_lost. */
	uint64_t sched_samples;
	uint32_t cpu_sample_hz;    /* the rate taken; 0: none (sched_note) */
	uint32_t reserved_samples; /* 0 */
	/* Sampling periods dial9.ko's timer fired too late for (interrupts
	 * off longer than a period): CPU time the samples do not show. */
	uint64_t sched_samples_missed;
	/* DIAL9_SCHED_STACKS: user stacks written (sched.stack events, at
	 * switch-outs and of wakers); 0 where the backend takes none
	 * (sched_note says why). */
	uint64_t sched_stacks;
	/* What the recorder's own threads cost: CPU time (ns) of the flush
	 * thread, the ring reader, the worker and the io_uring workers of
	 * their writes, as the scheduler counts it. */
	uint64_t recorder_cpu_ns;
	/* The ring reader runs at the process's policy and takes SCHED_FIFO
	 * (sched_reader_prio) only while it falls behind, for at most 10% of
	 * a CPU (docs/lib.md): its time at it, the times it took it, the
	 * times the budget cut it short. */
	uint64_t sched_reader_rt_ns;
	uint32_t sched_reader_rt_entries;
	uint32_t sched_reader_rt_capped;
	/* Scheduler records the recorder decoded and encoded as events
	 * itself: 0, as every backend's records go into the segments as
	 * they were written (docs/format.md, kernel chunks). */
	uint64_t sched_encoded;
	/* The last segment opened was written with O_DIRECT throughout (1),
	 * or through the page cache (0: DIAL9_DIRECT_IO=off, the file
	 * system refused it, a write failed, or segments in memory; the
	 * segment's io_direct metadata says which). */
	uint32_t direct_io;
};

/*
 * Snapshot of the recorder's health and counters. Set st->size first
 * (struct dial9_stats st = { .size = sizeof(st) }): only that many bytes
 * are written, min(st->size, the library's sizeof), so a program built
 * against an older, smaller struct keeps the memory after it; st->size
 * then says how many bytes were filled. -EINVAL if st is NULL or
 * st->size cannot hold the size field itself (0 to 3).
 */
int dial9_get_stats(struct dial9_stats *st);

/* Hand every thread's buffered events to the writer and wait until they
 * are written (at most timeout_ms). For tests and checkpoints. */
int dial9_flush(unsigned int timeout_ms);

/* Force the active segment to be sealed and a new one started. */
int dial9_rotate(void);

/* ---- trigger mode: dumps ---------------------------------------------- */

/* What a dump covered and how its pipeline run went. */
struct dial9_dump_receipt {
	uint32_t size;
	int32_t status;           /* 0 every segment shipped (and the manifest);
				   * -EINPROGRESS still running; -EIO some
				   * failed; -ECANCELED cut short by a stop */
	char dump_id[32];         /* 26 characters, sortable by time (ULID) */
	uint64_t segments;        /* sealed segments in the dump */
	uint64_t segments_done;   /* through every step */
	uint64_t segments_failed; /* failed, evicted or abandoned */
	uint64_t first_index, last_index; /* segment indexes (0 if none) */
	uint64_t start_ns, end_ns;          /* covered, CLOCK_MONOTONIC */
	uint64_t start_real_ns, end_real_ns; /* the same, CLOCK_REALTIME */
	uint64_t triggered_real_ns;
	char manifest_key[512];   /* S3: {prefix}/dumps/{dump_id}.json, else "" */
};

/*
 * Dump (trigger mode): drain every thread's buffer, seal the active
 * segment, protect the sealed segments not dumped yet from eviction and
 * run the pipeline on them; reason (may be NULL) goes into the manifest.
 * Waits up to timeout_ms for the pipeline run (0: does not wait) and
 * fills *receipt (may be NULL). Returns 0 when the run ended within the
 * timeout (receipt->status says how), -ETIMEDOUT if it goes on,
 * -EALREADY if the trigger came within dump_debounce_ms of the last
 * dump and was folded into it (the receipt is that dump's), -EINVAL
 * outside trigger mode, -ENOENT without a recorder. Any thread.
 */
int dial9_dump_trigger(const char *reason, unsigned int timeout_ms,
		       struct dial9_dump_receipt *receipt);

/*
 * Request a dump, async-signal-safe (one atomic store): for signal
 * handlers. The flush thread starts it within flush_interval_ms, with
 * the reason "signal" and the same debounce. 0, or -ENOENT.
 */
int dial9_dump_request(void);

/* ---- recording -------------------------------------------------------- */

/* Out-of-line record functions; use the macros and inlines below. */
void dial9__emit(struct dial9_event_type *t, const struct dial9_value *v,
		 unsigned int n);
void dial9__counter(const char *name, const char *unit, uint64_t delta);
void dial9__gauge(const char *name, const char *unit, double value);
void dial9__instant(const char *name);
void dial9__thread_name(const char *name);

/* Non-zero while a recorder runs. Read it through dial9_enabled(). */
extern volatile int dial9__active;

/* CLOCK_MONOTONIC nanoseconds, as the recorder timestamps events. */
uint64_t dial9_now_ns(void);

/* ---- trace encoder (for tools and tests) ------------------------------ */

struct dial9_encoder;

int dial9_encoder_new(struct dial9_encoder **out);
void dial9_encoder_free(struct dial9_encoder *enc);
/* The bytes written so far; valid until the next call on enc. */
const void *dial9_encoder_data(const struct dial9_encoder *enc, size_t *len);
void dial9_encoder_clear(struct dial9_encoder *enc);
/* A stream header; forgets schemas, strings and the timestamp base. */
int dial9_encoder_begin_stream(struct dial9_encoder *enc);
/* A batch end frame closing the current stream. */
int dial9_encoder_end_stream(struct dial9_encoder *enc);
int dial9_encoder_schema(struct dial9_encoder *enc, uint32_t type_id,
			 uint8_t kind, const char *name, uint32_t nfields,
			 const struct dial9_field *fields);
/* values[i].type must match the schema's field i (ISTR may be given
 * as STR or ISTR; it is interned). -EINVAL on mismatch. */
int dial9_encoder_event(struct dial9_encoder *enc, uint32_t type_id,
			uint64_t ts_ns, const struct dial9_value *values);
int dial9_encoder_metadata(struct dial9_encoder *enc, unsigned int n,
			   const char *const *keys, const char *const *values);
int dial9_encoder_clock_sync(struct dial9_encoder *enc, uint64_t mono_ns,
			     uint64_t real_ns);
int dial9_encoder_thread(struct dial9_encoder *enc, uint32_t tid,
			 const char *name);

/* ---- trace decoder ---------------------------------------------------- */

struct dial9_decoder;

struct dial9_field_info {
	const char *name; /* NUL-terminated, owned by the decoder */
	uint8_t type;     /* may be a type this reader does not know */
};

struct dial9_schema {
	uint32_t id;
	uint8_t kind;
	const char *name; /* NUL-terminated, owned by the decoder */
	uint32_t nfields;
	const struct dial9_field_info *fields;
};

/*
 * What a decoded record is: DIAL9_RECORD_*, named for the enum; the
 * kernel's scheduler record types of <linux/dial9.h> are DIAL9_REC_*.
 */
enum dial9_record_kind {
	DIAL9_RECORD_STREAM = 1,     /* a stream header */
	DIAL9_RECORD_EVENT = 2,
	DIAL9_RECORD_METADATA = 3,   /* key/value pairs */
	DIAL9_RECORD_CLOCK_SYNC = 4,
	DIAL9_RECORD_THREAD = 5,     /* tid and name of the stream's thread */
	DIAL9_RECORD_BATCH_END = 6,  /* the stream ended completely */
};

struct dial9_kv {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
};

/*
 * One decoded record. Pointers are valid until the next call of
 * dial9_decoder_next(); strings are NOT NUL-terminated (use str.len).
 */
struct dial9_record {
	uint32_t kind;     /* enum dial9_record_kind */
	uint64_t offset;   /* of the frame in the input */
	uint64_t stream;   /* index of the stream (0, 1, ...) */
	uint32_t tid;      /* of the stream's thread, 0 if none */
	const char *thread_name; /* NUL-terminated, "" if none */
	/* EVENT */
	uint64_t ts_ns;
	const struct dial9_schema *schema;
	const struct dial9_value *values; /* schema->nfields of them */
	/* METADATA */
	unsigned int nkv;
	const struct dial9_kv *kv;
	/* CLOCK_SYNC */
	uint64_t mono_ns, real_ns;
	/* THREAD: tid and thread_name above */
};

/* Decode len bytes at buf (not copied: keep them alive). */
int dial9_decoder_new(struct dial9_decoder **out, const void *buf, size_t len);
void dial9_decoder_free(struct dial9_decoder *dec);
/*
 * Next record: 1 and *rec filled, 0 at the end of the input, or a
 * negative error (-EBADMSG corrupt, -ENODATA truncated,
 * -EPROTONOSUPPORT unknown version); dial9_decoder_offset() then says
 * where. After an error every further call returns the same error.
 */
int dial9_decoder_next(struct dial9_decoder *dec, struct dial9_record *rec);
/* Byte offset reached (of the error, after an error). */
uint64_t dial9_decoder_offset(const struct dial9_decoder *dec);
/* A schema of the current stream by name, or NULL. */
const struct dial9_schema *dial9_decoder_schema(const struct dial9_decoder *dec,
						const char *name);
/* Index of a field by name, or -ENOENT. */
int dial9_schema_field_index(const struct dial9_schema *s, const char *name);
/* The value of an event's field by name, or NULL. */
const struct dial9_value *dial9_record_field(const struct dial9_record *rec,
					     const char *name);

/* ---- the kernel's view: scheduler records -------------------------------- */

/*
 * A source of scheduler records in the layout of <linux/dial9.h>
 * (struct dial9_rec_header and the dial9_rec_* that follow it), in time
 * order across CPUs.  The recorder uses one (dial9_config.sched); tools
 * may open their own.  Backends, tried in this order:
 *   "dial9.ko"  /dev/dial9: every switch, wake-up and migration of the
 *               targets, with the runqueue wait computed in the kernel and
 *               the scheduler's cumulative totals;
 *   "perf"      perf_event_open context-switch records of the targets'
 *               threads (one's own at the default perf_event_paranoid 2):
 *               no other side of a switch, no migrations; the runqueue
 *               wait after a preemption, a thread's creation, and a
 *               wake-up it saw (the sched_waking tracepoint, where it is
 *               readable: tracefs mounted, CAP_PERFMON or
 *               perf_event_paranoid -1), else unknown;
 *   "schedstat" every 100 ms, each thread's cumulative CPU time, runqueue
 *               wait and run count from /proc/<pid>/task/<tid>/schedstat
 *               (private record type, sched.schedstat events): how long
 *               threads waited, not when.
 */
struct dial9_rec_header;
struct dial9_ksched;

struct dial9_ksched_opts {
	uint32_t ring_size;	/* bytes per CPU; 0: the backend's default */
	bool system_wide;	/* every task (CAP_PERFMON) */
	bool self;		/* this process (default when no pids) */
	bool children;		/* follow processes the targets fork */
	const int *pids;	/* other processes (CAP_PERFMON) */
	unsigned int npids;
	/*
	 * Must be 0 (-EINVAL otherwise).  The bytes of two switches that
	 * were for the library's own use (tests, and dial9_config.sched),
	 * which now has an internal entry point; kept so that the fields
	 * after them stay where they were.
	 */
	uint8_t reserved[2];
	/*
	 * A thread of the source's own copies records out of the kernel as
	 * they come (woken by the rings' watermark), so dial9_ksched_drain()
	 * may be called late and from a slow thread.
	 */
	bool reader_thread;
	/*
	 * That thread's SCHED_FIFO priority (1-99; 0: the caller's
	 * policy).  Refused (no CAP_SYS_NICE, RLIMIT_RTPRIO too low), it
	 * runs at the caller's, and dial9_ksched_fallback_reason() says so.
	 */
	uint32_t reader_prio;
};

typedef void (*dial9_ksched_fn)(void *ctx, const struct dial9_rec_header *rec);

/*
 * Open a source.  On failure, @why (if not NULL) holds one line saying what
 * each backend needed.  -EINVAL if @o->reserved is not all 0.
 */
int dial9_ksched_open(struct dial9_ksched **out,
		      const struct dial9_ksched_opts *o, char *why,
		      size_t whylen);
void dial9_ksched_close(struct dial9_ksched *k);
/* "dial9.ko", "perf" or "schedstat". */
const char *dial9_ksched_backend(const struct dial9_ksched *k);
/*
 * Why the module was not used ("" if it was), or, with dial9.ko, what it
 * gave less of than asked (rings halved by its per-user limit).
 */
const char *dial9_ksched_fallback_reason(const struct dial9_ksched *k);
/* The reader thread's SCHED_FIFO priority; 0: none (or no reader). */
uint32_t dial9_ksched_reader_prio(const struct dial9_ksched *k);
/* A descriptor that polls readable when records wait. */
int dial9_ksched_fd(const struct dial9_ksched *k);
/*
 * Read what the kernel has written and call @fn for every record older than
 * @horizon_ns (CLOCK_MONOTONIC), in time order; newer ones wait for a
 * later call (a CPU can publish a record a little after a later one from
 * another CPU); with a reader thread, also those newer than what it has
 * read (dial9_ksched_sync()).  UINT64_MAX flushes everything and ends the
 * recording:
 * dial9.ko stops writing, and records it dropped at the end, which no
 * later record announces, get a LOST record of their own.  Returns the
 * number of records passed to @fn, or -errno.
 */
int dial9_ksched_drain(struct dial9_ksched *k, uint64_t horizon_ns,
		       dial9_ksched_fn fn, void *ctx);
/*
 * With a reader thread: have it read the rings now, and wait (at most
 * @timeout_ms) until it has, so that a drain up to now finds everything
 * written before the call.  0 without a reader thread.
 */
int dial9_ksched_sync(struct dial9_ksched *k, unsigned int timeout_ms);
/* Whether the rings hold records not read yet (no syscall): dial9.ko's,
 * or perf's other than the recorder's own threads'. */
bool dial9_ksched_pending(const struct dial9_ksched *k);
/* Records dropped so far (full rings, or a full reader inbox), all CPUs. */
uint64_t dial9_ksched_lost(const struct dial9_ksched *k);
/*
 * dial9.ko: records read out of its rings so far, and the number it says
 * it wrote (LOST and PAD records are in neither); 0 on other backends.
 */
void dial9_ksched_counts(const struct dial9_ksched *k, uint64_t *read,
			 uint64_t *written);
/*
 * Leave thread @tid (0: the caller) out of the records, as dial9.ko's
 * DIAL9_IOC_IGNORE_THREAD does (perf: filtered as records are read; at
 * most 8); -EOPNOTSUPP on the schedstat backend.
 */
int dial9_ksched_ignore_thread(struct dial9_ksched *k, int tid);

const char *dial9_strerror(int err);
const char *dial9_type_name(uint8_t type);
const char *dial9_kind_name(uint8_t kind);

#pragma GCC visibility pop

/* ---- fast paths ------------------------------------------------------- */

/* One predictable branch when recording is off. */
static inline bool dial9_enabled(void)
{
	return __builtin_expect(dial9__active != 0, 0);
}

/*
 * The value constructors set only the members they use, member by member:
 * an initializer would zero the whole struct first, and GCC then builds
 * it in memory with overlapping stores instead of in registers, which
 * costs more than the rest of a record call.
 */
static inline struct dial9_value dial9_u64(uint64_t v)
{
	struct dial9_value x;

	x.type = DIAL9_U64;
	x.u64 = v;
	return x;
}
static inline struct dial9_value dial9_i64(int64_t v)
{
	struct dial9_value x;

	x.type = DIAL9_I64;
	x.i64 = v;
	return x;
}
static inline struct dial9_value dial9_f64(double v)
{
	struct dial9_value x;

	x.type = DIAL9_F64;
	x.f64 = v;
	return x;
}
static inline struct dial9_value dial9_bool(bool v)
{
	struct dial9_value x;

	x.type = DIAL9_BOOL;
	x.b = v;
	return x;
}
/* s must be NUL-terminated; copied into the trace at record time. */
static inline struct dial9_value dial9_str(const char *s)
{
	size_t n = 0;
	struct dial9_value x;

	while (s && s[n])
		n++;
	x.type = DIAL9_STR;
	x.str.ptr = s;
	x.str.len = n;
	return x;
}
/* An interned string: for values that repeat (names, routes). */
static inline struct dial9_value dial9_istr(const char *s)
{
	struct dial9_value x = dial9_str(s);

	x.type = DIAL9_ISTR;
	return x;
}
static inline struct dial9_value dial9_bytes(const void *p, size_t len)
{
	struct dial9_value x;

	x.type = DIAL9_BYTES;
	x.str.ptr = p;
	x.str.len = len;
	return x;
}

/* DIAL9_FIELD(U64, status) -> field "status" of type DIAL9_U64. */
#define DIAL9_FIELD(type, name) { #name, DIAL9_##type }

#define DIAL9__NARGS(arr) ((uint16_t)(sizeof(arr) / sizeof((arr)[0]) - 1))

/*
 * Declare an event type once, at file scope:
 *   DIAL9_EVENT_TYPE(req_done, "http.request_done",
 *                    DIAL9_FIELD(U64, status), DIAL9_FIELD(STR, path));
 */
#define DIAL9_EVENT_TYPE(var, name, ...)                                  \
	static const struct dial9_field var##__dial9_f[] = { { 0, 0 },     \
							     __VA_ARGS__ }; \
	static struct dial9_event_type var = {                             \
		name, DIAL9_KIND_INSTANT, DIAL9__NARGS(var##__dial9_f),    \
		var##__dial9_f + 1, 0                                      \
	}

/* A span type: begin and end events with the same fields. */
#define DIAL9_SPAN_TYPE(var, name, ...)                                   \
	static const struct dial9_field var##__dial9_f[] = { { 0, 0 },     \
							     __VA_ARGS__ }; \
	static struct dial9_span_type var = {                              \
		{ name, DIAL9_KIND_SPAN_BEGIN, DIAL9__NARGS(var##__dial9_f), \
		  var##__dial9_f + 1, 0 },                                 \
		{ name, DIAL9_KIND_SPAN_END, DIAL9__NARGS(var##__dial9_f),   \
		  var##__dial9_f + 1, 0 }                                  \
	}

/*
 * Typed fast path. An event type whose fields are all U64, I64, BOOL or
 * F64 (at most DIAL9__MAX_SCALARS) is recorded through
 * dial9__emit_scalars(), which takes each value as one 64-bit word
 * (the value, zigzag(i64), 0/1, or the IEEE bits of an f64) and skips the
 * library's per-value type dispatch. Whether a declaration qualifies is
 * decided from its static const field array, which the compiler folds at
 * compile time; each value's type is still compared with its field's
 * (folded away where the compiler can see the value's constructor), and
 * a call that does not match goes to dial9__emit(), which drops and
 * counts it. Everything else goes through dial9__emit().
 */
#define DIAL9__MAX_SCALARS 8

__attribute__((visibility("default"))) void
dial9__emit_scalars(struct dial9_event_type *t, const uint64_t *w,
		    unsigned int n);

static inline __attribute__((always_inline)) int
dial9__scalar_type(uint8_t type)
{
	return type == DIAL9_U64 || type == DIAL9_I64 || type == DIAL9_BOOL ||
	       type == DIAL9_F64;
}

/* Field i is absent or a scalar. Unrolled below, not a loop: GCC folds
 * the unrolled form to a constant. */
static inline __attribute__((always_inline)) int
dial9__scalar_field(const struct dial9_field *f, unsigned int n,
		    unsigned int i)
{
	return n <= i || dial9__scalar_type(f[i].type);
}

/* 1 if the declaration has nfields == n fields, all of them scalars. */
static inline __attribute__((always_inline)) int
dial9__scalar_decl(const struct dial9_field *f, unsigned int nfields,
		   unsigned int n)
{
	return nfields == n && n <= DIAL9__MAX_SCALARS &&
	       dial9__scalar_field(f, n, 0) && dial9__scalar_field(f, n, 1) &&
	       dial9__scalar_field(f, n, 2) && dial9__scalar_field(f, n, 3) &&
	       dial9__scalar_field(f, n, 4) && dial9__scalar_field(f, n, 5) &&
	       dial9__scalar_field(f, n, 6) && dial9__scalar_field(f, n, 7);
}

/* A value as the word dial9__emit_scalars() takes, by its field's type. */
static inline __attribute__((always_inline)) uint64_t
dial9__word(uint8_t type, const struct dial9_value *v)
{
	union {
		double d;
		uint64_t u;
	} bits;

	switch (type) {
	case DIAL9_I64:
		return ((uint64_t)v->i64 << 1) ^ (uint64_t)(v->i64 >> 63);
	case DIAL9_BOOL:
		return v->b ? 1 : 0;
	case DIAL9_F64:
		bits.d = v->f64;
		return bits.u;
	default:
		return v->u64;
	}
}

static inline __attribute__((always_inline)) void
dial9__emit_values(struct dial9_event_type *t, const struct dial9_field *f,
		   unsigned int nfields, const struct dial9_value *v,
		   unsigned int n)
{
	if (dial9__scalar_decl(f, nfields, n)) {
		uint64_t w[DIAL9__MAX_SCALARS];
		int ok = 1;

		w[0] = 0; /* n == 0: still initialized */

		/* unrolled so that f[i].type is a constant in each step */
#define DIAL9__WORD(i)                                                    \
	if (n > i) {                                                      \
		ok &= v[i].type == f[i].type;                             \
		w[i] = dial9__word(f[i].type, &v[i]);                     \
	}
		DIAL9__WORD(0) DIAL9__WORD(1) DIAL9__WORD(2) DIAL9__WORD(3)
		DIAL9__WORD(4) DIAL9__WORD(5) DIAL9__WORD(6) DIAL9__WORD(7)
#undef DIAL9__WORD
		if (__builtin_expect(ok, 1)) {
			dial9__emit_scalars(t, w, n);
			return;
		}
	}
	dial9__emit(t, v, n);
}

/*
 * Each value of DIAL9_EMIT and the span macros must be a struct
 * dial9_value, from dial9_u64() and the other constructors: anything
 * else, e.g. DIAL9_EMIT(ev, 1), is a compile error (a _Generic with no
 * other association), not brace-elided into a value's first member.
 * At most DIAL9__MAX_VALUES values in one call (dial9__emit() takes
 * more). C++ has no _Generic: there the values are not checked.
 */
#define DIAL9__MAX_VALUES 32
#ifdef __cplusplus
#define DIAL9__VAL(x) , (x)
#else
#define DIAL9__VAL(x) , _Generic((x), struct dial9_value: (x))
#endif
#define DIAL9__NTH(_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, \
	_12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, \
	_26, _27, _28, _29, _30, _31, _32, N, ...) N
/*
 * DIAL9__COUNT(x, ##__VA_ARGS__): the number of values after x, 0 to 32.
 * Written out in each macro that takes the values, where x is a named
 * parameter: only there does ", ##" drop the comma when no value is
 * given, in the ISO C modes too.
 */
#define DIAL9__COUNT(...) \
	DIAL9__NTH(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, \
	21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, \
	2, 1, 0)
#define DIAL9__CAT_(a, b) a##b
#define DIAL9__CAT(a, b) DIAL9__CAT_(a, b)
/* ", checked(v)" for each of the n values */
#define DIAL9__VALUES(n, ...) DIAL9__CAT(DIAL9__V, n)(__VA_ARGS__)
#define DIAL9__V0(...)
#define DIAL9__V1(a) DIAL9__VAL(a)
#define DIAL9__V2(a, ...) DIAL9__VAL(a) DIAL9__V1(__VA_ARGS__)
#define DIAL9__V3(a, ...) DIAL9__VAL(a) DIAL9__V2(__VA_ARGS__)
#define DIAL9__V4(a, ...) DIAL9__VAL(a) DIAL9__V3(__VA_ARGS__)
#define DIAL9__V5(a, ...) DIAL9__VAL(a) DIAL9__V4(__VA_ARGS__)
#define DIAL9__V6(a, ...) DIAL9__VAL(a) DIAL9__V5(__VA_ARGS__)
#define DIAL9__V7(a, ...) DIAL9__VAL(a) DIAL9__V6(__VA_ARGS__)
#define DIAL9__V8(a, ...) DIAL9__VAL(a) DIAL9__V7(__VA_ARGS__)
#define DIAL9__V9(a, ...) DIAL9__VAL(a) DIAL9__V8(__VA_ARGS__)
#define DIAL9__V10(a, ...) DIAL9__VAL(a) DIAL9__V9(__VA_ARGS__)
#define DIAL9__V11(a, ...) DIAL9__VAL(a) DIAL9__V10(__VA_ARGS__)
#define DIAL9__V12(a, ...) DIAL9__VAL(a) DIAL9__V11(__VA_ARGS__)
#define DIAL9__V13(a, ...) DIAL9__VAL(a) DIAL9__V12(__VA_ARGS__)
#define DIAL9__V14(a, ...) DIAL9__VAL(a) DIAL9__V13(__VA_ARGS__)
#define DIAL9__V15(a, ...) DIAL9__VAL(a) DIAL9__V14(__VA_ARGS__)
#define DIAL9__V16(a, ...) DIAL9__VAL(a) DIAL9__V15(__VA_ARGS__)
#define DIAL9__V17(a, ...) DIAL9__VAL(a) DIAL9__V16(__VA_ARGS__)
#define DIAL9__V18(a, ...) DIAL9__VAL(a) DIAL9__V17(__VA_ARGS__)
#define DIAL9__V19(a, ...) DIAL9__VAL(a) DIAL9__V18(__VA_ARGS__)
#define DIAL9__V20(a, ...) DIAL9__VAL(a) DIAL9__V19(__VA_ARGS__)
#define DIAL9__V21(a, ...) DIAL9__VAL(a) DIAL9__V20(__VA_ARGS__)
#define DIAL9__V22(a, ...) DIAL9__VAL(a) DIAL9__V21(__VA_ARGS__)
#define DIAL9__V23(a, ...) DIAL9__VAL(a) DIAL9__V22(__VA_ARGS__)
#define DIAL9__V24(a, ...) DIAL9__VAL(a) DIAL9__V23(__VA_ARGS__)
#define DIAL9__V25(a, ...) DIAL9__VAL(a) DIAL9__V24(__VA_ARGS__)
#define DIAL9__V26(a, ...) DIAL9__VAL(a) DIAL9__V25(__VA_ARGS__)
#define DIAL9__V27(a, ...) DIAL9__VAL(a) DIAL9__V26(__VA_ARGS__)
#define DIAL9__V28(a, ...) DIAL9__VAL(a) DIAL9__V27(__VA_ARGS__)
#define DIAL9__V29(a, ...) DIAL9__VAL(a) DIAL9__V28(__VA_ARGS__)
#define DIAL9__V30(a, ...) DIAL9__VAL(a) DIAL9__V29(__VA_ARGS__)
#define DIAL9__V31(a, ...) DIAL9__VAL(a) DIAL9__V30(__VA_ARGS__)
#define DIAL9__V32(a, ...) DIAL9__VAL(a) DIAL9__V31(__VA_ARGS__)

#define DIAL9__EMIT(typep, fields, n, ...)                                \
	do {                                                              \
		if (dial9_enabled()) {                                    \
			const struct dial9_value dial9__v[] = {           \
				{ 0 } DIAL9__VALUES(n, __VA_ARGS__)       \
			};                                                \
			dial9__emit_values((typep), (fields) + 1,         \
					   DIAL9__NARGS(fields),          \
					   dial9__v + 1,                  \
					   DIAL9__NARGS(dial9__v));       \
		}                                                         \
	} while (0)

/* DIAL9_EMIT(req_done, dial9_u64(200), dial9_str(path)); */
#define DIAL9_EMIT(var, ...)                                              \
	DIAL9__EMIT(&(var), var##__dial9_f,                               \
		    DIAL9__COUNT(var, ##__VA_ARGS__), __VA_ARGS__)
/* Fields given at begin; the end event carries the values at the end. */
#define DIAL9_SPAN_BEGIN(var, ...)                                        \
	DIAL9__EMIT(&(var).begin, var##__dial9_f,                         \
		    DIAL9__COUNT(var, ##__VA_ARGS__), __VA_ARGS__)
#define DIAL9_SPAN_END(var, ...)                                          \
	DIAL9__EMIT(&(var).end, var##__dial9_f,                           \
		    DIAL9__COUNT(var, ##__VA_ARGS__), __VA_ARGS__)

/* Counters (increments) and gauges (levels) with a unit, e.g. "bytes".
 * name and unit are interned: pass strings that repeat. */
static inline void dial9_counter(const char *name, const char *unit,
				 uint64_t delta)
{
	if (dial9_enabled())
		dial9__counter(name, unit, delta);
}
static inline void dial9_gauge(const char *name, const char *unit, double v)
{
	if (dial9_enabled())
		dial9__gauge(name, unit, v);
}
static inline void dial9_instant(const char *name)
{
	if (dial9_enabled())
		dial9__instant(name);
}
/* Name the calling thread in the trace (copied, at most 31 bytes). */
static inline void dial9_thread_name(const char *name)
{
	if (dial9_enabled())
		dial9__thread_name(name);
}

#ifdef __cplusplus
}
#endif
#endif /* DIAL9_H */
