/* SPDX-License-Identifier: MIT */
/*
 * ksched.h - the recording side of the scheduler's records (ksched/): its
 * backends (dial9.ko's rings in ksched.c and ksched_ring.c,
 * perf_event_open in ksched_perf*.c, schedstat in ksched_sstat.c), the
 * queue of kernel records between the rings and the merge (kqueue.c),
 * and the records as sched.* events (ktrace.c), which the recorder
 * writes into segments.  The reading side, sched/ (sched_read.h,
 * sched_stats.h), shares only the format with it.  Not installed.
 */
#ifndef DIAL9_KSCHED_H
#define DIAL9_KSCHED_H

#include <stddef.h>
#include <stdint.h>

#include <pthread.h>
#include <stdbool.h>

#include <linux/dial9.h>
#include <linux/perf_event.h>

#include "dial9.h"
#include "common/common.h"

/* ---- ksched.c, ksched_ring.c: the scheduler source ---- */
#define KS_MAX_IGNORED 8u	/* dial9_ksched.ignored[] */
/*
 * How long after DIAL9_IOC_IGNORE_THREAD returns a record of that thread
 * can still be timed: a module with DIAL9_FEAT_IGNORE_SYNC waits out the
 * probes that matched it before it returns (a millisecond's margin for
 * the clocks); with an older one, a probe that matched it before may read
 * its clock after, with interrupts off in between (a switch) or for an
 * interrupt's time (a wake-up): microseconds, a second's margin.
 */
#define KS_IGNORE_SETTLE_SYNC_NS 1000000ull
#define KS_IGNORE_SETTLE_NS 1000000000ull

/* Most bytes an inbox holds: this many rings' worth, and at least 8 MiB. */
#define KQ_INBOX_RINGS	8
#define KQ_INBOX_MIN	(8u << 20)

/* When the reader runs SCHED_FIFO, and what it cost (kreader_rt.c). */
struct d9_reader_rt {
	uint32_t prio;			/* its SCHED_FIFO priority; 0: never */
	int policy;			/* its normal one */
	bool at_rt, refused, capped;
	int err;			/* why SCHED_FIFO was refused */
	uint64_t window_start, window_cpu, behind_at, rt_since;
	/* what it cost: the reader's own CPU time (at the end), its time at
	 * SCHED_FIFO, the times it took it, the times the budget cut it */
	uint64_t cpu_ns, rt_ns;
	uint32_t entries, caps;
};

void d9_reader_rt_init(struct d9_reader_rt *rt, uint32_t prio);
/* Whether this process may take SCHED_FIFO @prio (*@rl: its RLIMIT_RTPRIO). */
struct rlimit;
bool d9_may_rt(uint32_t prio, struct rlimit *rl);
/* After a read: @behind, a ring was over half full or kept records. */
void d9_reader_rt_after_read(struct d9_reader_rt *rt, bool behind);
/* At the reader's end: normal again, its CPU time taken. */
void d9_reader_rt_end(struct d9_reader_rt *rt);

struct dial9_ksched {
	const char *backend;
	char reason[512];
	int fd;
	unsigned int ncpu;
	long page;
	struct dial9_ring_ctrl **ctrl;
	unsigned char **data;
	struct d9_kq *q;
	uint64_t *lost_seen;		/* per CPU: in the kernel's LOST records */
	/*
	 * Per CPU: records read and left out of the trace (of an ignored
	 * thread, written before the kernel was told; of a type this
	 * library does not know).  Written by whoever parses (the flush
	 * thread), read at the end.
	 */
	uint64_t *filtered;
	uint64_t nread;			/* records read out of the rings */
	/*
	 * d9_ksched_take(): records of each CPU's queue and inbox since the
	 * last take (counted as they are checked), and @seen, called by
	 * the flush thread with each COMM, STACK, SAMPLE, LOST and
	 * UNFOLLOWED record it takes (d9_ksched_set_seen()).
	 */
	uint64_t *ntaken;
	void (*seen)(void *ctx, const struct dial9_rec_header *rec);
	void *seen_ctx;
	bool stacks;			/* D9_KSCHED_STACKS asked for */
	bool occupants;			/* DIAL9_CFG_OCCUPANTS, unless skipped */
	uint32_t sample_hz;		/* samples asked for; 0 once refused */
	/*
	 * Threads left out (dial9_ksched_ignore_thread): perf's records of
	 * them are filtered as they are read, and so are dial9.ko's written
	 * before it was told.  Slots are claimed with an atomic add.
	 */
	int ignored[KS_MAX_IGNORED];
	unsigned int nignored;
	uint64_t ignored_bits;		/* bit tid % 64 of each: a quick no */
	/*
	 * dial9.ko: no record of an ignored thread is later than this
	 * (KS_IGNORE_SETTLE_NS past its last IGNORE_THREAD), so the ring
	 * parser looks for one only before it.
	 */
	uint64_t ignore_until_ns;
	uint64_t ignore_settle_ns;	/* KS_IGNORE_SETTLE_*: the module's */
	struct d9_perf *perf;	/* the perf backend, if used */
	struct d9_sstat *sstat;	/* the schedstat backend, if used */
	/*
	 * The reader thread, if any, is the only reader of the rings: it
	 * appends to inbox[] under mu; a drain swaps each inbox with spare[]
	 * (a pointer swap under the lock) and merges it from there outside
	 * it (ksched_drain.c).
	 */
	bool reader;
	uint32_t reader_prio;		/* the SCHED_FIFO priority it may take */
	struct d9_reader_rt rt;		/* the reader's (its cost: atomics) */
	clockid_t reader_clock;		/* its CPU clock, while it runs */
	bool reader_clock_ok;
	bool inbox_full;		/* under mu: it left records for room */
	bool stopping;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* a collect finished */
	struct d9_kq *inbox, *spare;
	size_t inbox_limit;
	int kick_fd;			/* eventfd: collect now, or stop */
	int reader_error;
	uint64_t inbox_lost;
	uint64_t inbox_bytes;		/* bytes the reader has taken in, total */
	uint64_t collected_ns;		/* when the last collect began */
};

/* What the reader cost so far: its CPU time, its time at SCHED_FIFO,
 * the times it took it and the times the budget cut it (any thread). */
void d9_ksched_reader_cost(const struct dial9_ksched *k, uint64_t *cpu_ns,
			   uint64_t *rt_ns, uint32_t *entries, uint32_t *caps);

/* Whether @tid is a thread left out (@ctx: the dial9_ksched); any thread. */
bool d9_ksched_ignored(const void *ctx, uint32_t tid);

/* The reader thread (ksched_ring.c; opts.reader_thread). */
int d9_ksched_reader_start(struct dial9_ksched *k, uint32_t prio);
/* Stop it; what it read is checked and moves to q[]. */
int d9_ksched_reader_halt(struct dial9_ksched *k);
/*
 * Bring what has been read to q[], or, with a reader thread and dial9.ko,
 * to the inboxes just taken (spare[]), checked and filtered in place;
 * lower *@horizon to what the reader is sure to have read (ksched_ring.c).
 */
int d9_ksched_collect(struct dial9_ksched *k, uint64_t *horizon);
/*
 * What inbox @in of CPU @cpu still holds, appended to q[cpu]; @in left
 * empty, and with @grow, grown if it was over half full.
 */
int d9_ksched_queue_rest(struct dial9_ksched *k, unsigned int cpu,
			 struct d9_kq *in, bool grow);

/*
 * The raw transport (ksched_drain.c): what has been read, handed to @fn
 * per CPU (the perf and schedstat backends: queue 0, in time order) as
 * bytes of whole records, as the kernel wrote them or as the backend
 * made them, with PAD where a record was left out (an ignored thread's),
 * and taken; nothing is merged or copied again.  *@horizon is lowered to
 * what is sure to be in; with @final the session is stopped first (as
 * dial9_ksched_drain() does at UINT64_MAX) and *@horizon is UINT64_MAX.
 * The bytes are valid until the next call.
 */
typedef int (*d9_ksched_chunk_fn)(void *ctx, unsigned int cpu, const void *p,
				  size_t n, uint64_t nrec);
int d9_ksched_take(struct dial9_ksched *k, uint64_t *horizon, bool final,
		   d9_ksched_chunk_fn fn, void *ctx);
/* perf: every thread's totals at the end, into q[0] (d9_perf_final). */
int d9_ksched_perf_final(struct dial9_ksched *k);
/*
 * The records the flush thread needs to see among those it takes (COMM,
 * STACK, SAMPLE, LOST, UNFOLLOWED), to @fn: with dial9.ko as the ring
 * reader's copies are checked, so that no other pass reads them.
 */
void d9_ksched_set_seen(struct dial9_ksched *k,
			void (*fn)(void *ctx, const struct dial9_rec_header *rec),
			void *ctx);
/* Whether @type is one of those. */
static inline bool d9_ksched_seen_type(uint16_t type)
{
	return type == DIAL9_REC_COMM || type == DIAL9_REC_STACK ||
	       type == DIAL9_REC_SAMPLE || type == DIAL9_REC_LOST ||
	       type == DIAL9_REC_UNFOLLOWED;
}
/* The last read: the session stopped, the drops at the end announced. */
int d9_ksched_final(struct dial9_ksched *k);
/* Bytes the reader thread has copied out of the kernel so far (any thread). */
static inline uint64_t d9_ksched_inbox_bytes(const struct dial9_ksched *k)
{
	return __atomic_load_n(&k->inbox_bytes, __ATOMIC_RELAXED);
}
/* Whether the reader stopped for room (a take is due now). */
static inline bool d9_ksched_inbox_full(const struct dial9_ksched *k)
{
	return __atomic_load_n(&k->inbox_full, __ATOMIC_RELAXED);
}

/*
 * Backends d9_ksched_open() leaves out: for dial9_config.sched (PERF,
 * SCHEDSTAT) and for tests; and what it asks dial9.ko for beyond the
 * public options (DIAL9_SCHED_STACKS).  Not in struct dial9_ksched_opts,
 * which is the public ABI.
 */
#define D9_KSCHED_NO_MODULE	(1u << 0)	/* skip /dev/dial9 */
#define D9_KSCHED_NO_PERF	(1u << 1)	/* skip perf_event_open */
#define D9_KSCHED_STACKS	(1u << 2)	/* dial9.ko's user stacks */
#define D9_KSCHED_NO_OCCUPANTS	(1u << 3)	/* no DIAL9_CFG_OCCUPANTS */

/*
 * dial9.ko's counters of ring @cpu: records it wrote and dropped, and of
 * those written, the ones read and left out of the trace (struct
 * dial9_ksched.filtered).  -ENOENT for another backend or a CPU without
 * a ring.  Final once the last drain (horizon UINT64_MAX) has disabled
 * the session.
 */
int d9_ksched_ring_counts(const struct dial9_ksched *k, unsigned int cpu,
			  uint64_t *written, uint64_t *lost,
			  uint64_t *filtered);
/* How many rings d9_ksched_ring_counts() may be asked about. */
unsigned int d9_ksched_ncpu(const struct dial9_ksched *k);

/*
 * dial9_ksched_open() without the backends in @skip (D9_KSCHED_*), and
 * with on-CPU samples at @sample_hz (0: none) where the backend can.
 */
int d9_ksched_open(struct dial9_ksched **out,
		   const struct dial9_ksched_opts *o, unsigned int skip,
		   uint32_t sample_hz, char *why, size_t whylen);
/* Whether @k writes samples (SAMPLE records): false for NULL. */
bool d9_ksched_samples(const struct dial9_ksched *k);
void d9_ksched_reader_stop(struct dial9_ksched *k);

/* ---- ksched_perf.c: the perf_event_open backend ---- */
struct d9_perf;

/*
 * With on-CPU samples at @sample_hz, and with @occupants every switch
 * of a CPU while one of ours waits there, if perf allows them (the note
 * says what it refused).
 */
int d9_perf_open(struct d9_perf **out, const struct dial9_ksched_opts *o,
		 bool occupants, uint32_t sample_hz, char *why,
		 size_t whylen);
/* Whether it writes samples. */
bool d9_perf_samples(const struct d9_perf *p);
void d9_perf_close(struct d9_perf *p);
int d9_perf_fd(const struct d9_perf *p);
/* What this backend cannot record here and why, or "". */
const char *d9_perf_note(const struct d9_perf *p);
/*
 * Which threads are the recorder's own (dial9_ksched_ignore_thread()):
 * @fn must be safe to call from any thread.  Their records, and those of
 * the threads they create (io_uring's workers), are left out as they are
 * read, and d9_perf_pending() does not count them.
 */
void d9_perf_set_ignored(struct d9_perf *p,
			 bool (*fn)(const void *ctx, uint32_t tid),
			 const void *ctx);
/*
 * Whether a buffer holds records other than the recorder's own threads':
 * a look at what the reader has not taken, safe beside it (a record it
 * frees meanwhile makes the answer stale, not wrong for long).
 */
bool d9_perf_pending(const struct d9_perf *p);
uint64_t d9_perf_lost(const struct d9_perf *p);
/*
 * At the end: each thread still followed, its schedstat totals now (a
 * D9_REC_SCHEDSTAT record), beside those read when it was first seen
 * (0 for a thread born during the recording), so that its runqueue
 * total and count are the kernel's over the recording.
 */
int d9_perf_final(struct d9_perf *p,
		  int (*push)(void *ctx, const struct dial9_rec_header *rec),
		  void *ctx);
/* Turn what the kernel wrote into dial9_rec_* records, in time order. */
int d9_perf_read(struct d9_perf *p,
		    int (*push)(void *ctx, const struct dial9_rec_header *rec),
		    void *ctx);

/*
 * The schedstat backend's records: a library-private type outside the
 * kernel's numbering, in the same header layout.
 */
#define D9_REC_SCHEDSTAT 0x7f00
/* A fork the perf backend saw; it never leaves ksched_perf*.c. */
#define D9_REC_PERF_FORK 0x7f01

struct d9_rec_schedstat {
	struct dial9_rec_header hdr;
	uint32_t tid, tgid;
	uint64_t run_ns;	/* cumulative, as in schedstat */
	uint64_t delay_ns;
	uint64_t slices;
	/* from /proc/<pid>/task/<tid>/sched, where asked for (the perf
	 * backend): se.nr_migrations (UINT64_MAX: not known) and prio (-1) */
	uint64_t migrations;
	int32_t prio;
	uint32_t reserved;
};

/* Inside the perf backend: what ksched_perf.c (opening the events) and
 * ksched_perf_read.c (reading them) share. */
/*
 * What resolve() knows of one of the targets' threads: its state since
 * its last switch, and when it was last woken (or created) since its last
 * switch-in.
 */
enum { PT_UNSEEN, PT_RUNNING, PT_PREEMPTED, PT_BLOCKED };

struct ptask {
	uint32_t tid, tgid;
	int state;
	bool recorder;			/* one of the recorder's threads */
	uint64_t since;			/* its last switch */
	uint64_t last_in;		/* its last switch-in */
	uint64_t woken;			/* the start of its wait, or 0 */
	int32_t prio;			/* its prio as last read, -1: none */
	int wait_cpu;			/* where it waits runnable, or -1 */
	char comm[16];
};

struct pbuf {
	int fd;				/* the CPU's first event: owns the mmap */
	struct perf_event_mmap_page *mp;
	uint64_t head;			/* data_head when this read began */
};

/* A fork seen while draining, turned into a COMM record by resolve(). */
struct pfork {
	struct dial9_rec_header hdr;	/* type D9_REC_PERF_FORK */
	uint32_t pid, tid, ptid, pad;
};

struct d9_perf {
	int epfd;
	int waking_id;			/* sched_waking tracepoint, or -1 */
	int waking_pid_off, waking_cpu_off;
	const char *waking_note;	/* why there are no wake-ups */
	const char *sample_note;	/* why there are no samples */
	char note[512];
	long page;
	unsigned int pages;		/* data pages per CPU buffer, 2^n */
	int ncpu;
	struct pbuf *buf;		/* [ncpu] */
	int *fds;			/* every event */
	size_t nfds, capfds;
	uint64_t lost;
	struct ptask *tasks;
	size_t ntasks, captasks;
	struct dial9_rec_switch *pending;	/* one read's records */
	size_t npend, cappend;
	bool (*ignored)(const void *ctx, uint32_t tid);
	const void *ignored_ctx;
	/*
	 * The recorder tasks resolve() found (io_uring's workers), for
	 * d9_perf_pending() in another thread: set and cleared by the reader
	 * (0: free), read with atomic loads.  Past PERF_RECORDER_TIDS they
	 * are still left out of the trace, only counted as pending.
	 */
#define PERF_RECORDER_TIDS 16
	uint32_t recorder_tids[PERF_RECORDER_TIDS];
	/* On-CPU samples (SW_CPU_CLOCK): sample_hz, 0 if none or refused. */
	uint32_t sample_hz;
	struct d9_kq *samples;		/* one read's SAMPLE records */
	/* a thread's totals that resolve() found, pushed after its record:
	 * 0 at its birth, its last at its exit (hdr.type 0: none) */
	struct d9_rec_schedstat sstat_next;
	/*
	 * Occupants (ksched_perf.c): a CPU-wide switch event per CPU, so
	 * every switch comes whole, with both sides; a switch of two other
	 * tasks is kept only while one of ours waits runnable on its CPU
	 * (waiting[cpu]), and each other task is named (a COMM record with
	 * DIAL9_COMM_OCCUPANT, occ_next) at its first kept switch, and again
	 * after PERF_OCC_RENAME_NS.
	 */
	bool cpu_wide;
	bool waking_wide;		/* every task's wake-ups (sched_waking) */
	const char *occ_note;		/* why not, when asked for */
	uint32_t *waiting;		/* [ncpu] */
	uint64_t *idle_out;		/* [ncpu]: its last switch from idle */
#define PERF_OCC_NAMES 256
#define PERF_OCC_RENAME_NS 1000000000ull
	struct { uint32_t tid; uint64_t at; } occ_named[PERF_OCC_NAMES];
	struct dial9_rec_comm occ_next[2];
	int nocc_next;
	/*
	 * The prio of threads whose exit record was read: their last
	 * switch-out comes after it, when they are forgotten (a ring).
	 */
#define PERF_EXITED 32
	struct { uint32_t tid; int32_t prio; } exited[PERF_EXITED];
	unsigned int nexited;
	/* the processes followed, for d9_perf_pending() (-1: too many) */
#define PERF_PENDING_PIDS 16
	int pend_pids[PERF_PENDING_PIDS];
	int npend_pids;
};

struct ptask *d9_perf_task_find(struct d9_perf *p, uint32_t tid);
/* The thread @tid of @tgid, known from now on; NULL without memory. */
struct ptask *d9_perf_task_of(struct d9_perf *p, uint32_t tid,
			      uint32_t tgid);
void d9_perf_task_forget(struct d9_perf *p, uint32_t tid);
/* @t waits runnable on @cpu from now (p->waiting), or no longer. */
void d9_perf_wait_at(struct d9_perf *p, struct ptask *t, int cpu);
void d9_perf_wait_end(struct d9_perf *p, struct ptask *t);
int d9_perf_push_rec(struct d9_perf *p, const void *rec, size_t size);
int d9_perf_push_comm(struct d9_perf *p, uint32_t tgid, uint32_t tid,
		      const char *name, uint64_t now);
int d9_perf_read_comm(int tgid, int tid, char *name, size_t len);

/* ---- ksched_sstat.c: the schedstat backend ---- */
struct d9_sstat;

int d9_sstat_open(struct d9_sstat **out,
		     const struct dial9_ksched_opts *o, char *why,
		     size_t whylen);
void d9_sstat_close(struct d9_sstat *s);
/*
 * Thread @tid of @pid's /proc schedstat now, as a record at @now, and
 * with @sched its migrations and prio (/proc/.../sched): 0, or -errno
 * (-ENOENT: it is gone).
 */
struct d9_rec_schedstat;
int d9_sstat_thread(int pid, int tid, uint64_t now, bool sched,
		    struct d9_rec_schedstat *r);
/* One record per thread of the targets, at most every 100 ms. */
int d9_sstat_read(struct d9_sstat *s,
		     int (*push)(void *ctx, const struct dial9_rec_header *rec),
		     void *ctx);

/*
 * ---- kqueue.c: a queue of kernel scheduler records (struct
 * dial9_rec_header and what follows it), as the scheduler source holds
 * them between the rings and the merge: appended at the end, taken from
 * the front. ----
 */
/* Records copied out of one CPU's ring and not yet released. */
struct d9_kq {
	unsigned char *buf;
	size_t len, cap, off;
	uint64_t dropped;	/* inbox full: not yet announced */
};

/*
 * Room for @cap bytes, its pages written once so that they are in memory
 * (appends up to there neither allocate nor fault); 0 or -ENOMEM.
 */
int d9_kq_reserve(struct d9_kq *q, size_t cap);
/* Append @len bytes (whole records); 0 or -ENOMEM. */
int d9_kq_push(struct d9_kq *q, const void *rec, size_t len);
/*
 * Append @rec unless the queue would pass @limit bytes: then it is dropped
 * and counted in *@lost, and the next record that fits is preceded by a
 * LOST record with the count.
 */
int d9_kq_push_bounded(struct d9_kq *q, const struct dial9_rec_header *rec,
		       size_t limit, uint64_t *lost);
/* The first record, or NULL.  Inline: the merge asks once a record. */
static inline const struct dial9_rec_header *d9_kq_peek(const struct d9_kq *q)
{
	return q->off < q->len ? (const void *)(q->buf + q->off) : NULL;
}
/*
 * The bytes of the whole records at the start of @p (@n bytes, as a ring
 * holds them) that fit in @room.  A record whose size is not one the
 * kernel writes ends the walk: from there the bytes go whole or not at
 * all, for the parser to report.
 */
size_t d9_kq_fit(const unsigned char *p, size_t n, size_t room);
/* Put the records not yet taken in time order (stable). */
int d9_kq_sort(struct d9_kq *q);
/* Move everything from @from to the end of @to; @from is left empty. */
int d9_kq_move(struct d9_kq *to, struct d9_kq *from);

/* ---- ktrace.c: scheduler records (<linux/dial9.h> layout) as sched.*
 * events ---- */
struct dial9_encoder;

struct d9_ktrace {
	struct dial9_encoder *enc;
	uint32_t defined;	/* schemas written in this stream */
	uint64_t nevents;	/* events in this stream */
	uint64_t lost;		/* records the kernel reported lost, total */
	uint64_t unfollowed;	/* UNFOLLOWED records, total */
	uint64_t samples;	/* SAMPLE records, total */
	uint64_t stacks;	/* STACK records, total */
	uint64_t samples_missed;	/* timer periods they say were skipped */
	uint64_t sample_period_ns;	/* what one SAMPLE stands for */
	uint64_t encoded;	/* records d9_ktrace_add() encoded, total */
};

/* Start a stream (one per flush, or per batch's worth: flush.c). */
int d9_ktrace_begin(struct d9_ktrace *kt);
/* A thread's name written again, as the recorder knows it (no kernel
 * record: sched.thread_name, which no per-CPU count includes). */
int d9_ktrace_thread_name(struct d9_ktrace *kt, uint64_t ts, uint32_t tid,
			  uint32_t tgid, const char *comm, size_t len);
/*
 * The stats' counts of one record (lost, unfollowed, stacks, samples and
 * their missed periods), as d9_ktrace_add() keeps them; for a record
 * that is written as it is (the raw transport: recorder/kstream.c).
 */
void d9_ktrace_count(struct d9_ktrace *kt, const struct dial9_rec_header *h);
/* Add one record; records of unknown types are skipped. */
int d9_ktrace_add(struct d9_ktrace *kt, const struct dial9_rec_header *rec);
/*
 * A sched.ring event: dial9.ko's counters of ring @cpu at the end of a
 * recording (d9_ksched_ring_counts()).
 */
int d9_ktrace_ring(struct d9_ktrace *kt, uint64_t ts, unsigned int cpu,
		   uint64_t written, uint64_t lost, uint64_t filtered);
/* End the stream; the bytes stay valid until the next begin. */
int d9_ktrace_end(struct d9_ktrace *kt, const void **data, size_t *len);

/* ---- klayout.c: the kernel layout frame (docs/format.md) ---- */
#define D9_KLAYOUT_MAX 4096
/*
 * The whole frame (tag, length, payload) at @buf: the record layout of
 * <linux/dial9.h> and of D9_REC_SCHEDSTAT, @source the backend, and what
 * one SAMPLE stands for.  Its length, 0 if @cap is too small.
 */
size_t d9_klayout_frame(uint8_t *buf, size_t cap, const char *source,
			uint64_t sample_period_ns);

/* ---- kmaps.c: a process's executable mappings, for its stacks ---- */
#define D9_BUILD_ID_MAX 20

struct d9_mapping {
	int pid;
	uint64_t start, end;	/* addresses */
	uint64_t offset;	/* file offset of start */
	const char *path;	/* or "[vdso]" and the like */
	uint8_t build_id[D9_BUILD_ID_MAX];
	uint32_t build_id_len;	/* 0: none found */
};

/*
 * Call @fn for each executable mapping of process @pid (/proc/PID/maps),
 * with the GNU build-id of its file when it has one.  Stops at the first
 * nonzero return of @fn and returns it; -errno if the maps cannot be read.
 */
int d9_maps_read(int pid, int (*fn)(void *ctx, const struct d9_mapping *m),
		 void *ctx);
/* The GNU build-id note of the ELF file at @path: its length, or -errno. */
int d9_build_id(const char *path, uint8_t *id, size_t cap);
/* The build-id of this process's vDSO (the kernel's); length or -errno. */
int d9_vdso_build_id(uint8_t *id, size_t cap);
/* A sched.mapping event of @m in the stream. */
int d9_ktrace_mapping(struct d9_ktrace *kt, uint64_t ts,
		      const struct d9_mapping *m);

/* ---- kmaps_follow.c: whose mappings the trace still needs ---- */
/* A mapped file (or "[vdso]" and the like) as written, kept once. */
struct d9_kmaps_obj {
	uint64_t hash;		/* of its path */
	char *path;
	uint8_t build_id[D9_BUILD_ID_MAX];
	uint32_t build_id_len;
};

struct d9_kmaps_range {
	uint64_t start, end, offset;
	uint64_t ts;		/* the time it was written to stand from */
	uint32_t obj;		/* its file: d9_kmaps_follow.objs[obj] */
};

struct d9_kmaps_proc {
	int pid;
	bool known, gone;	/* identity read; could not be: not again */
	bool dead;		/* found exited by d9_kmaps_follow_again() */
	uint64_t dev, ino;	/* its executable, when its maps were read */
	uint64_t startcode;	/* where its text started then */
	uint64_t exec_ts;	/* nonzero: exec'd at about this time since */
	uint64_t next_read;	/* not before, for a frame outside them */
	uint64_t backoff;
	struct d9_kmaps_range *maps;	/* written since its last exec */
	size_t nmaps, maps_cap;
};

struct d9_kmaps_follow {
	struct d9_kmaps_proc *procs;	/* sorted by pid */
	size_t n, cap;
	struct d9_kmaps_obj *objs;	/* the files of the ranges */
	size_t nobjs, objs_cap;
	uint32_t last_obj;		/* the last one found (a hint) */
};

/*
 * Read the mappings of @pid now, and pass each not written for it yet to
 * @emit(ctx, @ts, m), @ts the time they stand from.  0 (also when @pid
 * is gone), -ENOMEM, or what @emit returned.
 */
int d9_kmaps_follow_read(struct d9_kmaps_follow *f, int pid, uint64_t ts,
			 int (*emit)(void *ctx, uint64_t ts,
				     const struct d9_mapping *m),
			 void *ctx);
/*
 * A kernel record, before it is encoded: a STACK or SAMPLE of a process
 * whose mappings were not written, that exec'd since, or whose
 * instruction lies outside them, has them read first (d9_kmaps_follow_read(), @ts the
 * exec's time or else the record's); a COMM record of a process whose
 * executable changed marks it exec'd.  0 or an error of the read.
 */
int d9_kmaps_follow_rec(struct d9_kmaps_follow *f,
			const struct dial9_rec_header *rec,
			int (*emit)(void *ctx, uint64_t ts,
				    const struct d9_mapping *m),
			void *ctx);
/*
 * The mappings held (those written for each process since its last
 * exec) passed to @emit again, from memory, with no /proc read: for a new
 * segment, so that it is read alone (flush.c).  Each with the time it
 * was written to stand from, raised to @floor (the recorder's: every
 * record older than @floor was seen, so no exec before it was missed).
 * A process found exited (kill(pid, 0)) has its mappings written this
 * once more (its last records may follow) and then no more.  0, or the
 * first error of @emit.
 */
int d9_kmaps_follow_again(struct d9_kmaps_follow *f, uint64_t floor,
			  int (*emit)(void *ctx, uint64_t ts,
				      const struct d9_mapping *m),
			  void *ctx);
void d9_kmaps_follow_free(struct d9_kmaps_follow *f);

#endif /* DIAL9_KSCHED_H */
