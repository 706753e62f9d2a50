// SPDX-License-Identifier: MIT
/*
 * ksched_ring.c - the rings read out: records parsed and filtered, the
 * per-CPU inboxes and the reader thread (the merge: ksched_drain.c).
 *
 * With a reader thread (opts.reader_thread), copying out is that thread's
 * only job: it sleeps in poll() on the rings' watermark (and an eventfd
 * for kicks and stop), and appends what the rings hold to a per-CPU inbox
 * under a mutex, as raw bytes, one memcpy per stretch (dial9.ko; perf's
 * records it parses, as they come in perf's own format).  The caller of
 * dial9_ksched_drain() (the recorder's flush thread, which also encodes
 * and writes) swaps each inbox for an empty one under the lock, and
 * checks and merges its records where they are without it, so however
 * slow it is, the kernel rings are emptied at the pace they fill.  An
 * inbox holds at most inbox_limit bytes; past that, dial9.ko's records
 * stay in its ring (which counts what it then drops), and perf's
 * are dropped, counted with the kernel's losses, and announced by a LOST
 * record like the kernel's.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/dial9.h>

#include "dial9.h"
#include "ksched/ksched.h"

struct push_ctx {
	const struct dial9_ksched *k;
	struct d9_kq *q;
	size_t limit;		/* d9_kq_push_bounded()'s, or 0 */
	uint64_t *lost;
};

/* is_ignored() past its bit test. */
static __attribute__((noinline)) bool in_ignored(const struct dial9_ksched *k,
						 uint32_t tid)
{
	unsigned int n = __atomic_load_n(&k->nignored, __ATOMIC_ACQUIRE);

	for (unsigned int i = 0; i < n && i < KS_MAX_IGNORED; i++)
		if ((uint32_t)__atomic_load_n(&k->ignored[i],
					      __ATOMIC_ACQUIRE) == tid && tid)
			return true;
	return false;
}

static inline bool is_ignored(const struct dial9_ksched *k, uint32_t tid)
{
	if (!(__atomic_load_n(&k->ignored_bits, __ATOMIC_ACQUIRE) &
	      (1ull << (tid % 64))))
		return false;
	return in_ignored(k, tid);
}

bool d9_ksched_ignored(const void *ctx, uint32_t tid)
{
	return is_ignored(ctx, tid);
}

/*
 * A side that is an ignored thread is no longer a recorded side: clear
 * its *_TARGET bit in *@flags.  Whether a recorded side is left.
 */
static bool keep_sides(const struct dial9_ksched *k, uint16_t *flags,
		       uint32_t tid_a, uint16_t bit_a, uint32_t tid_b,
		       uint16_t bit_b)
{
	if (is_ignored(k, tid_a))
		*flags &= (uint16_t)~bit_a;
	if (is_ignored(k, tid_b))
		*flags &= (uint16_t)~bit_b;
	return *flags & (bit_a | bit_b);
}

static int push_one(const struct push_ctx *pc,
		    const struct dial9_rec_header *rec)
{
	return pc->limit ? d9_kq_push_bounded(pc->q, rec, pc->limit,
					      pc->lost) :
			   d9_kq_push(pc->q, rec, rec->size);
}

/*
 * Whether a side of @rec is an ignored thread (so keep_sides() changes
 * it).  Inline, with is_ignored()'s bit test: every record asks.
 */
static inline bool has_ignored_side(const struct dial9_ksched *k,
				    const struct dial9_rec_header *rec)
{
	const struct dial9_rec_switch *sw = (const void *)rec;
	const struct dial9_rec_wake *wk = (const void *)rec;

	if (!__atomic_load_n(&k->nignored, __ATOMIC_RELAXED))
		return false;
	if (rec->type == DIAL9_REC_SWITCH && rec->size >= sizeof(*sw))
		return is_ignored(k, sw->prev_tid) ||
		       is_ignored(k, sw->next_tid);
	if ((rec->type == DIAL9_REC_WAKING || rec->type == DIAL9_REC_WAKEUP) &&
	    rec->size >= sizeof(*wk))
		return is_ignored(k, wk->tid) || is_ignored(k, wk->waker_tid);
	if (rec->type == DIAL9_REC_SAMPLE &&
	    rec->size >= sizeof(struct dial9_rec_stack))
		return is_ignored(k, ((const struct dial9_rec_stack *)
				      (const void *)rec)->tid);
	return false;
}

union rec_copy {
	struct dial9_rec_switch sw;
	struct dial9_rec_wake wk;
};

/*
 * @rec less its sides that are ignored threads: such a side is no longer
 * a recorded side, and a record with none left is dropped (NULL), as
 * dial9.ko does for DIAL9_IOC_IGNORE_THREAD.  Returns @rec, or the copy
 * in @u that was changed.
 */
static const struct dial9_rec_header *
filter_rec(const struct dial9_ksched *k, const struct dial9_rec_header *rec,
	   union rec_copy *u)
{
	/* copied only to change it: most records have no ignored side */
	if (rec->type == DIAL9_REC_SAMPLE)	/* its one side: dropped */
		return has_ignored_side(k, rec) ? NULL : rec;
	if (rec->size > sizeof(*u) || !has_ignored_side(k, rec))
		return rec;
	memcpy(u, rec, rec->size);
	if (rec->type == DIAL9_REC_SWITCH) {
		/*
		 * A switch with no recorded side is what held a CPU while
		 * a recorded thread waited (DIAL9_CFG_OCCUPANTS): kept,
		 * the recorder's own threads as occupants too.
		 */
		if (!(rec->flags & (DIAL9_SWITCH_PREV_TARGET |
				    DIAL9_SWITCH_NEXT_TARGET)) &&
		    (rec->flags & DIAL9_SWITCH_OCCUPANTS))
			return rec;
		return keep_sides(k, &u->sw.hdr.flags, u->sw.prev_tid,
				  DIAL9_SWITCH_PREV_TARGET, u->sw.next_tid,
				  DIAL9_SWITCH_NEXT_TARGET) ? &u->sw.hdr : NULL;
	}
	return keep_sides(k, &u->wk.hdr.flags, u->wk.tid,
			  DIAL9_WAKE_TASK_TARGET, u->wk.waker_tid,
			  DIAL9_WAKE_WAKER_TARGET) ? &u->wk.hdr : NULL;
}

/* Queue filter_rec()'s @rec, if it is kept (else *@dropped). */
static int filter_push(const struct push_ctx *pc,
		       const struct dial9_rec_header *rec, bool *dropped)
{
	union rec_copy u;
	const struct dial9_rec_header *keep = filter_rec(pc->k, rec, &u);

	*dropped = !keep;
	return keep ? push_one(pc, keep) : 0;
}

/* A record of the perf or schedstat backend, through filter_push(). */
static int perf_push(void *ctx, const struct dial9_rec_header *rec)
{
	bool dropped = false;

	return filter_push(ctx, rec, &dropped);
}

/* The record types parse_records() looks into (d9_ksched_seen_type()'s too). */
#define KS_PARSE_LOOK (1u << DIAL9_REC_PAD | 1u << DIAL9_REC_LOST | \
		       1u << DIAL9_REC_COMM | 1u << DIAL9_REC_STACK | \
		       1u << DIAL9_REC_SAMPLE | 1u << DIAL9_REC_UNFOLLOWED)
_Static_assert(DIAL9_REC_MAX <= 32, "KS_PARSE_LOOK is 32 bits");

/*
 * Check, count and queue the records in @n bytes of ring @cpu (whole
 * records, as a ring holds them): skip PAD, count LOST and read records,
 * filter ignored threads, append the rest to q[cpu].  Runs of records
 * kept as they are go in with one copy each.  A record left out of the
 * trace (an ignored thread's; a type ktrace.c does not know, which it
 * skips) is counted in k->filtered[cpu].
 *
 * With @in_place, @p is the flush thread's own copy (an inbox it took):
 * nothing is queued; a changed record is changed where it is, and one
 * left out becomes PAD, which the merge skips (ring_parse()).  *@valid:
 * the bytes before a bad record, if any.
 */
static int parse_records(struct dial9_ksched *k, unsigned int cpu,
			 const unsigned char *p, size_t n, bool in_place,
			 size_t *valid)
{
	struct push_ctx pc = { k, &k->q[cpu], 0, NULL };
	size_t at = 0, run = 0;		/* the run: p + run up to p + at */
	uint64_t nread = 0;
	int ret = 0;

	/* only so long after IGNORE_THREAD can an ignored thread be here */
	uint64_t until = __atomic_load_n(&k->ignore_until_ns, __ATOMIC_ACQUIRE);

	while (at < n) {
		const struct dial9_rec_header *h = (const void *)(p + at);
		bool as_is, late;

		if (n - at < 8 || h->size < 8 || h->size % 8 ||
		    h->size > n - at || (h->type != DIAL9_REC_PAD &&
					 h->size < sizeof(*h))) {
			ret = -EPROTO;
			break;
		}
		/* most records: counted, kept as they are, nothing else */
		if (h->type < DIAL9_REC_MAX &&
		    !((1u << h->type) & KS_PARSE_LOOK) && h->time_ns > until) {
			nread++;
			at += h->size;
			continue;
		}
		if (h->type == DIAL9_REC_LOST &&
		    h->size >= sizeof(struct dial9_rec_lost))
			k->lost_seen[cpu] +=
				((const struct dial9_rec_lost *)h)->count;
		else if (h->type != DIAL9_REC_PAD)
			nread++;
		if (h->type >= DIAL9_REC_MAX)
			k->filtered[cpu]++;
		/* (the flush thread's: the only parser of dial9.ko's) */
		late = h->time_ns <= until && has_ignored_side(k, h);
		if (k->seen && d9_ksched_seen_type(h->type) &&
		    !(h->type == DIAL9_REC_SAMPLE && late))
			k->seen(k->seen_ctx, h);
		as_is = h->type != DIAL9_REC_PAD && !late;
		if (!as_is && in_place) {
			/* the flush thread's own buffer (not a ring) */
			struct dial9_rec_header *w = (void *)(p + at);
			union rec_copy u;
			const struct dial9_rec_header *keep;

			if (h->type != DIAL9_REC_PAD) {
				keep = filter_rec(k, h, &u);
				if (!keep) {
					w->type = DIAL9_REC_PAD;
					k->filtered[cpu]++;
				} else if (keep != h) {
					memcpy(w, keep, h->size);
				}
			}
		} else if (!as_is) {
			bool dropped = false;

			if (at > run && d9_kq_push(pc.q, p + run, at - run)) {
				ret = -ENOMEM;
				break;
			}
			if (h->type != DIAL9_REC_PAD &&
			    filter_push(&pc, h, &dropped)) {
				ret = -ENOMEM;
				break;
			}
			k->filtered[cpu] += dropped;
			run = at + h->size;
		}
		at += h->size;
	}
	/* what came before a bad record still goes in */
	if (!in_place && ret != -ENOMEM && at > run &&
	    d9_kq_push(pc.q, p + run, at - run))
		ret = -ENOMEM;
	if (valid)
		*valid = at;
	if (k->ntaken)
		k->ntaken[cpu] += nread;
	__atomic_store_n(&k->nread, k->nread + nread, __ATOMIC_RELAXED);
	return ret;
}

int d9_ksched_perf_final(struct dial9_ksched *k)
{
	struct push_ctx pc = { k, &k->q[0], 0, NULL };

	return k->perf ? d9_perf_final(k->perf, perf_push, &pc) : 0;
}

/*
 * The bytes from @tail that are whole records in one piece: up to head,
 * or to the end of the data area (records never wrap: the kernel pads to
 * the end), at offset *@off.
 */
static size_t ring_stretch(const struct dial9_ring_ctrl *c, uint64_t tail,
			   uint64_t head, uint32_t *off)
{
	size_t n = head - tail;

	*off = (uint32_t)(tail & (c->data_size - 1));
	return n < c->data_size - *off ? n : c->data_size - *off;
}

/*
 * Read what the kernel holds and free its space: the perf and schedstat
 * backends into @qs[0] (at most @limit bytes, 0: no limit), dial9.ko's
 * rings straight into q[].
 */
static int ksched_collect_into(struct dial9_ksched *k, struct d9_kq *qs,
			       size_t limit, uint64_t *lost)
{
	int ret;

	if (k->perf || k->sstat) {
		struct push_ctx pc = { k, &qs[0], limit, lost };

		ret = k->perf ? d9_perf_read(k->perf, perf_push, &pc) :
				d9_sstat_read(k->sstat, perf_push, &pc);
		return ret ? ret : d9_kq_sort(&qs[0]);
	}
	for (unsigned int cpu = 0; cpu < k->ncpu; cpu++) {
		struct dial9_ring_ctrl *c = k->ctrl[cpu];
		uint64_t head, tail;

		if (!c)
			continue;
		head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
		for (tail = c->tail; tail < head;) {
			uint32_t off;
			size_t n = ring_stretch(c, tail, head, &off);

			ret = parse_records(k, cpu, k->data[cpu] + off, n,
					    false, NULL);
			if (ret)
				return ret;
			tail += n;
		}
		__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	}
	return 0;
}

/*
 * Room for @want bytes in inbox @q, at least twice what it had, at most
 * k->inbox_limit, faulted in by the caller; on failure it keeps its room.
 */
static int inbox_widen(struct dial9_ksched *k, struct d9_kq *q, size_t want)
{
	size_t cap = q->cap * 2 > want ? q->cap * 2 : want;

	return d9_kq_reserve(q, cap < k->inbox_limit ? cap : k->inbox_limit);
}

/*
 * dial9.ko, the reader thread: copy the bytes each ring holds, as they
 * are, to the end of inbox[cpu] and free their space: one memcpy per
 * stretch, no per-record work here; ring_parse() does that later, in the
 * flush thread.  What does not fit in the inbox stays in the ring, where
 * the kernel counts what it then has to drop.
 */
/*
 * Returns whether the ring was past its watermark (a quarter): the
 * records come faster than the flush thread's kicks take them, and the
 * reader is behind unless it keeps up.
 */
static bool ring_copy_raw(struct dial9_ksched *k, unsigned int cpu,
			  struct d9_kq *in)
{
	struct dial9_ring_ctrl *c = k->ctrl[cpu];
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint64_t tail = c->tail;
	bool behind = head - tail >= c->watermark;

	/*
	 * Into the room the inbox has, grown (up to k->inbox_limit) only
	 * when the flush thread has not grown it ahead (inbox_grow()): a
	 * new page can wait for the mmap lock (see ksched_module_open()).
	 * What does not fit stays in the ring.
	 */
	while (tail < head) {
		uint32_t off;
		size_t n = ring_stretch(c, tail, head, &off);

		if (in->len + n > in->cap && in->cap < k->inbox_limit)
			inbox_widen(k, in, in->len + n);
		if (in->len + n > in->cap)
			n = d9_kq_fit(k->data[cpu] + off, n,
					  in->cap - in->len);
		if (!n) {
			__atomic_store_n(&k->inbox_full, true, __ATOMIC_RELAXED);
			break;
		}
		memcpy(in->buf + in->len, k->data[cpu] + off, n);
		in->len += n;
		__atomic_store_n(&k->inbox_bytes, k->inbox_bytes + n,
				 __ATOMIC_RELAXED);
		tail += n;
	}
	__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	return behind;
}

/*
 * The flush thread: the raw bytes of ring @cpu, in @raw (spare[cpu]),
 * checked and filtered where they are.  They stay there, after q[cpu]'s,
 * for the merge (src_peek()), which then moves what it leaves to q[cpu]
 * (spill()): only what waits for a later drain is copied again.
 */
static int ring_parse(struct dial9_ksched *k, unsigned int cpu,
		      struct d9_kq *raw)
{
	size_t valid = 0;
	int ret = parse_records(k, cpu, raw->buf + raw->off,
				raw->len - raw->off, true, &valid);

	raw->len = raw->off + valid;
	return ret;
}

/* Whether the reader thread's inboxes hold raw ring bytes (dial9.ko). */
static bool inbox_raw(const struct dial9_ksched *k)
{
	return k->fd >= 0 && !k->perf;
}

/* Move what an inbox holds to q[cpu]. */
static int inbox_take(struct dial9_ksched *k, unsigned int cpu,
		      struct d9_kq *from)
{
	return inbox_raw(k) ? ring_parse(k, cpu, from) :
			      d9_kq_move(&k->q[cpu], from);
}

/*
 * The flush thread, on the spare inbox it just emptied, which had
 * @held bytes: when that was over half its room, twice the room (up to
 * k->inbox_limit), faulted in here rather than by the reader.
 */
static int inbox_grow(struct dial9_ksched *k, struct d9_kq *spare,
		      size_t held)
{
	if (held <= spare->cap / 2 || spare->cap >= k->inbox_limit)
		return 0;
	return inbox_widen(k, spare, 0);
}

/* Wake the reader thread: collect now (or stop); 0 or -errno. */
static int kick(struct dial9_ksched *k)
{
	uint64_t one = 1;

	return write(k->kick_fd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

/* Under k->mu. */
static void inbox_lost_add(struct dial9_ksched *k, uint64_t n)
{
	__atomic_store_n(&k->inbox_lost, k->inbox_lost + n, __ATOMIC_RELAXED);
}

/*
 * While records keep coming, the reader also looks every 50 ms, besides
 * the watermark's wake-ups and the flush thread's kicks (at most ten a
 * second): each look is a wake-up of a recorder thread, which may
 * preempt the workload.  While it falls behind (its last read found a
 * ring past its watermark, or no room), every 5 ms: under overload the
 * watermark's wake-ups come late.
 */
#define KSCHED_CALM_POLL_MS 50
#define KSCHED_BUSY_POLL_MS 5

/* How long a record may take from its timestamp to its ring's head. */
#define KSCHED_PUBLISH_NS 2000000ull

/*
 * Bring what has been read into q[].  With a reader thread, lower
 * @horizon to what its last collect is sure to hold: a record older than
 * that collect's start (less the time a probe may take to publish) was
 * in the ring when it read it.
 */
int d9_ksched_collect(struct dial9_ksched *k, uint64_t *horizon)
{
	uint64_t lost = 0, safe;
	bool full;
	int ret = 0;

	if (!k->reader)
		return ksched_collect_into(k, k->q, 0, &lost);
	pthread_mutex_lock(&k->mu);
	ret = k->reader_error;
	for (unsigned int cpu = 0; cpu < k->ncpu; cpu++) {
		struct d9_kq t = k->inbox[cpu];

		k->inbox[cpu] = k->spare[cpu];
		k->spare[cpu] = t;
	}
	safe = k->collected_ns;
	full = k->inbox_full;
	__atomic_store_n(&k->inbox_full, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&k->mu);
	/*
	 * The reader stopped for room and left records in a ring: room now.
	 * (A failed kick only delays it to its next look, within 5 ms.)
	 */
	if (full)
		kick(k);
	for (unsigned int cpu = 0; !ret && cpu < k->ncpu; cpu++)
		ret = inbox_take(k, cpu, &k->spare[cpu]);
	safe = safe > KSCHED_PUBLISH_NS ? safe - KSCHED_PUBLISH_NS : 0;
	if (*horizon > safe)
		*horizon = safe;
	return ret;
}

static void *reader_main(void *arg)
{
	struct dial9_ksched *k = arg;
	struct pollfd p[2] = {
		{ .fd = k->perf ? d9_perf_fd(k->perf) : k->fd,
		  .events = POLLIN },
		{ .fd = k->kick_fd, .events = POLLIN },
	};

	bool busy = false, full = false, hot = false;
	uint64_t before;

	pthread_setname_np(pthread_self(), "dial9-kread");
	d9_thread_background();	/* SCHED_FIFO, when behind, returns to it */
	d9_reader_rt_init(&k->rt, k->reader_prio);
	/* Not in the trace: its own switches would fill an idle one. */
	dial9_ksched_ignore_thread(k, 0);
	for (;;) {
		uint64_t lost = 0, n, t0;
		bool behind = false;
		int ret;

		/*
		 * The watermark or a kick (the flush thread's, when records
		 * other than the recorder's own wait below the watermark:
		 * dial9_ksched_pending()) wakes us; else every 10 s.
		 */
		if (poll(p, 2, full || (busy && hot) ? KSCHED_BUSY_POLL_MS :
			    busy ? KSCHED_CALM_POLL_MS : 10000) < 0 &&
		    errno != EINTR)
			break;
		if ((p[1].revents & POLLIN) &&
		    read(k->kick_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
			break;
		if (__atomic_load_n(&k->stopping, __ATOMIC_ACQUIRE))
			break;
		t0 = d9_clock_gettime_ns();
		pthread_mutex_lock(&k->mu);
		before = k->inbox_bytes;
		ret = 0;
		if (inbox_raw(k)) {
			for (unsigned int cpu = 0; cpu < k->ncpu; cpu++)
				if (k->ctrl[cpu])
					behind |= ring_copy_raw(k, cpu,
								&k->inbox[cpu]);
		} else {
			size_t had = k->inbox[0].len;

			ret = ksched_collect_into(k, k->inbox, k->inbox_limit,
						  &lost);
			__atomic_store_n(&k->inbox_bytes, k->inbox_bytes +
					 k->inbox[0].len - had, __ATOMIC_RELAXED);
		}
		busy = k->inbox_bytes != before;
		inbox_lost_add(k, lost);
		/*
		 * Records left in a ring for room are older than t0: until
		 * they are in, the horizon stays where it was.  The rings'
		 * watermark is not polled meanwhile (it would not stop
		 * waking us), the flush thread's kick after its swap is.
		 */
		full = k->inbox_full;
		p[0].events = full ? 0 : POLLIN;
		if (!full)
			k->collected_ns = t0;
		if (ret)
			k->reader_error = ret;
		pthread_cond_broadcast(&k->cv);
		pthread_mutex_unlock(&k->mu);
		if (ret)
			break;
		hot = behind || full || lost;
		d9_reader_rt_after_read(&k->rt, hot);
	}
	d9_reader_rt_end(&k->rt);
	return NULL;
}

int dial9_ksched_sync(struct dial9_ksched *k, unsigned int timeout_ms)
{
	uint64_t want = d9_clock_gettime_ns();
	struct timespec ts = d9_ns_timespec(want + timeout_ms * D9_NS_PER_MS);
	int ret = 0;

	if (!k->reader)
		return 0;
	ret = kick(k);
	if (ret)
		return ret;
	pthread_mutex_lock(&k->mu);
	/* A reader out of room waits for the caller's collect, not we for it. */
	while (!ret && !k->reader_error && !k->inbox_full &&
	       k->collected_ns < want)
		ret = pthread_cond_timedwait(&k->cv, &k->mu, &ts);
	pthread_mutex_unlock(&k->mu);
	return ret == ETIMEDOUT ? -ETIMEDOUT : -ret;
}

/*
 * The reader thread, at the caller's policy: it takes SCHED_FIFO @prio
 * only while it falls behind, within a CPU budget (kreader_rt.c).  Where
 * the process may not (no CAP_SYS_NICE, RLIMIT_RTPRIO below @prio), it
 * never does, and k->reason says so.  It only copies memory and sleeps
 * in poll(); it must not wait on the mmap lock either
 * (d9_ksched_reader_start(); docs/benchmarks.md).
 */
static int reader_create(struct dial9_ksched *k, uint32_t prio)
{
	struct rlimit rl;
	int ret;

	k->reader_prio = prio;
	/* asked now, so that it is said at the start, not found later */
	if (prio && !d9_may_rt(prio, &rl)) {
		snprintf(k->reason + strlen(k->reason),
			 sizeof(k->reason) - strlen(k->reason),
			 "%sthe reader of the kernel's records may not take SCHED_FIFO %u when it falls behind (no CAP_SYS_NICE, RLIMIT_RTPRIO %llu): under overload it falls behind and records are lost (counted)",
			 k->reason[0] ? "; " : "", prio,
			 (unsigned long long)rl.rlim_cur);
		k->reader_prio = 0;
	}
	ret = -pthread_create(&k->thread, NULL, reader_main, k);
	k->reader_clock_ok = !ret &&
			     !pthread_getcpuclockid(k->thread, &k->reader_clock);
	return ret;
}

void d9_ksched_reader_cost(const struct dial9_ksched *k, uint64_t *cpu_ns,
			   uint64_t *rt_ns, uint32_t *entries, uint32_t *caps)
{
	struct timespec ts;

	*cpu_ns = __atomic_load_n(&k->rt.cpu_ns, __ATOMIC_ACQUIRE);
	/* 0 until it ends (its clock is valid until then) */
	if (!*cpu_ns && k->reader_clock_ok &&
	    !clock_gettime(k->reader_clock, &ts))
		*cpu_ns = (uint64_t)ts.tv_sec * D9_NS_PER_SEC +
			  (uint64_t)ts.tv_nsec;
	*rt_ns = __atomic_load_n(&k->rt.rt_ns, __ATOMIC_RELAXED);
	*entries = __atomic_load_n(&k->rt.entries, __ATOMIC_RELAXED);
	*caps = __atomic_load_n(&k->rt.caps, __ATOMIC_RELAXED);
}

/* Start the reader thread (backends with a pollable descriptor only). */
int d9_ksched_reader_start(struct dial9_ksched *k, uint32_t prio)
{
	uint32_t ring = k->ctrl && k->ctrl[0] ? k->ctrl[0]->data_size :
						DIAL9_RING_DEFAULT_SIZE;
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	int ret;

	if (k->sstat || dial9_ksched_fd(k) < 0)
		return 0;
	k->inbox = calloc(k->ncpu, sizeof(*k->inbox));
	k->spare = calloc(k->ncpu, sizeof(*k->spare));
	if (!k->inbox || !k->spare)
		return -ENOMEM;
	k->inbox_limit = (size_t)ring * KQ_INBOX_RINGS;
	if (k->inbox_limit < KQ_INBOX_MIN)
		k->inbox_limit = KQ_INBOX_MIN;
	/*
	 * A ring each for the inbox and its spare, faulted in now, so that
	 * the reader copies into memory that is there (for the same reason
	 * as the rings are populated); past that an inbox grows, and may
	 * then fault.  At 64 ping-pong pairs on 2 CPUs (-icount, 4 MiB
	 * rings) half a ring each still lost records in 4 runs of 5 (the
	 * reader waiting up to 470 ms in mremap() for the mmap lock), a
	 * ring each in none of 5.
	 */
	for (unsigned int cpu = 0; inbox_raw(k) && cpu < k->ncpu; cpu++) {
		if (!k->ctrl[cpu])
			continue;
		if (d9_kq_reserve(&k->inbox[cpu], ring) ||
		    d9_kq_reserve(&k->spare[cpu], ring))
			return -ENOMEM;
	}
	k->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (k->kick_fd < 0)
		return -errno;
	/*
	 * Priority inheritance: a flush thread preempted while it swaps
	 * the inboxes out (at the application's priority, among its
	 * threads) would otherwise hold a SCHED_FIFO reader off for as
	 * long as the application keeps it from the CPU.
	 */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&k->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cv, &ca);
	pthread_condattr_destroy(&ca);
	k->collected_ns = d9_clock_gettime_ns();
	ret = reader_create(k, prio);
	if (ret) {
		pthread_cond_destroy(&k->cv);
		pthread_mutex_destroy(&k->mu);
		return ret;
	}
	k->reader = true;
	return 0;
}

int d9_ksched_queue_rest(struct dial9_ksched *k, unsigned int cpu,
			 struct d9_kq *in, bool grow)
{
	size_t held = in->len;
	int ret = 0;

	if (in->off < in->len)
		ret = d9_kq_push(&k->q[cpu], in->buf + in->off,
				 in->len - in->off);
	in->off = in->len = 0;
	if (!ret && grow && inbox_raw(k))
		ret = inbox_grow(k, in, held);
	return ret;
}

int d9_ksched_reader_halt(struct dial9_ksched *k)
{
	int ret = 0;

	if (!k->reader)
		return 0;
	__atomic_store_n(&k->stopping, true, __ATOMIC_RELEASE);
	if (kick(k))
		pthread_cancel(k->thread);
	pthread_join(k->thread, NULL);
	pthread_cond_destroy(&k->cv);
	pthread_mutex_destroy(&k->mu);
	k->reader = false;
	ret = k->reader_error;
	for (unsigned int cpu = 0; !ret && cpu < k->ncpu; cpu++) {
		ret = inbox_take(k, cpu, &k->inbox[cpu]);
		if (!ret)
			ret = d9_ksched_queue_rest(k, cpu, &k->inbox[cpu],
						   false);
	}
	return ret;
}

void d9_ksched_reader_stop(struct dial9_ksched *k)
{
	d9_ksched_reader_halt(k);
	if (k->kick_fd >= 0)
		close(k->kick_fd);
	k->kick_fd = -1;
	for (unsigned int i = 0; k->inbox && i < k->ncpu; i++) {
		free(k->inbox[i].buf);
		free(k->spare[i].buf);
	}
	free(k->inbox);
	free(k->spare);
	k->inbox = k->spare = NULL;
}
