// SPDX-License-Identifier: MIT
/*
 * ksched.c - the kernel's scheduler records, in time order.
 *
 * The module backend maps each CPU's ring of /dev/dial9, copies new records
 * out as soon as it sees them (so the kernel never waits for our merge), and
 * merges the per-CPU streams by timestamp.  Each CPU's stream is already in
 * time order; across CPUs a record can be published slightly after a later
 * one, so only records older than the caller's horizon are released.
 *
 * With a reader thread (opts.reader_thread), copying out is that thread's
 * only job: it sleeps in poll() on the rings' watermark (and an eventfd
 * for kicks and stop), and appends what the rings hold to a per-CPU inbox
 * under a mutex, as raw bytes, one memcpy per stretch (dial9.ko; perf's
 * records it parses, as they come in perf's own format).  The caller of dial9_ksched_drain() (the
 * recorder's flush thread, which also encodes, writes and is niced) moves
 * the inboxes over in one memcpy each and merges them without the lock,
 * so however slow it is, the kernel rings are emptied at the pace they
 * fill.  An inbox holds at most inbox_limit bytes; past that, records are
 * dropped, counted with the kernel's losses, and announced by a LOST
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
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/dial9.h>

#include "dial9.h"
#include "sched/sched.h"

#define KS_MAX_IGNORED 8u	/* dial9_ksched.ignored[] */

/* Most bytes an inbox holds: this many rings' worth, and at least 8 MiB. */
#define KQ_INBOX_RINGS	8
#define KQ_INBOX_MIN	(8u << 20)

struct dial9_ksched {
	const char *backend;
	char reason[256];
	int fd;
	unsigned int ncpu;
	long page;
	struct dial9_ring_ctrl **ctrl;
	unsigned char **data;
	struct d9_kq *q;
	uint64_t *lost_seen;		/* per CPU: in the kernel's LOST records */
	uint64_t nread;			/* records read out of the rings */
	/*
	 * Threads left out (dial9_ksched_ignore_thread): perf's records of
	 * them are filtered as they are read, and so are dial9.ko's written
	 * before it was told.  Slots are claimed with an atomic add.
	 */
	int ignored[KS_MAX_IGNORED];
	unsigned int nignored;
	struct dial9_perf *perf;	/* the perf backend, if used */
	struct dial9_sstat *sstat;	/* the schedstat backend, if used */
	/*
	 * The reader thread, if any, is the only reader of the rings: it
	 * appends to inbox[] under mu; a drain swaps each inbox with spare[]
	 * (a pointer swap under the lock) and copies it to q[] outside it.
	 */
	bool reader;
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

static int ksched_reader_start(struct dial9_ksched *k);
static void ksched_reader_stop(struct dial9_ksched *k);

/* Append @s to the string in @d (replace it if @reset), truncating. */
static void str_append(char *d, size_t n, const char *s, bool reset)
{
	size_t len = reset ? 0 : strnlen(d, n - 1);
	size_t add = strnlen(s, n - 1 - len);

	memcpy(d + len, s, add);
	d[len + add] = 0;
}



static int ksched_module_open(struct dial9_ksched *k,
			      const struct dial9_ksched_opts *o)
{
	struct dial9_session_config cfg = { .size = sizeof(cfg) };
	struct dial9_version v;
	unsigned int cpu;

	k->fd = open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		int e = errno;

		snprintf(k->reason, sizeof(k->reason), "%s: %s%s",
			 DIAL9_DEVICE, strerror(e),
			 e == ENOENT ? " (dial9.ko not loaded)" :
			 e == EACCES ? " (not in the device's group)" : "");
		return -e;
	}
	if (ioctl(k->fd, DIAL9_IOC_GET_VERSION, &v)) {
		snprintf(k->reason, sizeof(k->reason), "%s: version: %s",
			 DIAL9_DEVICE, strerror(errno));
		return -errno;
	}
	if (v.abi_version != DIAL9_ABI_VERSION) {
		snprintf(k->reason, sizeof(k->reason),
			 "%s: ABI %u, this library speaks %u", DIAL9_DEVICE,
			 v.abi_version, DIAL9_ABI_VERSION);
		return -EPROTO;
	}
	cfg.ring_size = o->ring_size;
	if (o->system_wide)
		cfg.flags |= DIAL9_CFG_SYSTEM_WIDE;
	if (!o->self && (o->npids || o->system_wide))
		cfg.flags |= DIAL9_CFG_NO_SELF;
	if (ioctl(k->fd, DIAL9_IOC_CONFIGURE, &cfg)) {
		snprintf(k->reason, sizeof(k->reason), "%s: configure: %s%s",
			 DIAL9_DEVICE, strerror(errno),
			 errno == EPERM ? " (system-wide needs CAP_PERFMON)" : "");
		return -errno;
	}
	for (unsigned int i = 0; i < o->npids; i++) {
		struct dial9_target t = {
			.size = sizeof(t), .pid = (uint32_t)o->pids[i],
			.flags = o->children ? DIAL9_TARGET_CHILDREN : 0,
		};

		if (ioctl(k->fd, DIAL9_IOC_ADD_TARGET, &t)) {
			snprintf(k->reason, sizeof(k->reason),
				 "%s: process %d: %s%s", DIAL9_DEVICE,
				 o->pids[i], strerror(errno),
				 errno == EPERM ? " (other processes need CAP_PERFMON)" : "");
			return -errno;
		}
	}
	k->ncpu = v.nr_cpu_ids;
	k->ctrl = calloc(k->ncpu, sizeof(*k->ctrl));
	k->data = calloc(k->ncpu, sizeof(*k->data));
	k->q = calloc(k->ncpu, sizeof(*k->q));
	k->lost_seen = calloc(k->ncpu, sizeof(*k->lost_seen));
	if (!k->ctrl || !k->data || !k->q || !k->lost_seen)
		return -ENOMEM;
	for (cpu = 0; cpu < k->ncpu; cpu++) {
		void *c = mmap(NULL, (size_t)k->page, PROT_READ | PROT_WRITE,
			       MAP_SHARED, k->fd, (off_t)DIAL9_MMAP_CTRL(cpu));

		if (c == MAP_FAILED) {
			if (errno == ENODEV)	/* not a possible CPU */
				continue;
			snprintf(k->reason, sizeof(k->reason), "%s: mmap: %s",
				 DIAL9_DEVICE, strerror(errno));
			return -errno;
		}
		k->ctrl[cpu] = c;
		c = mmap(NULL, k->ctrl[cpu]->data_size, PROT_READ, MAP_SHARED,
			 k->fd, (off_t)DIAL9_MMAP_DATA(cpu));
		if (c == MAP_FAILED) {
			snprintf(k->reason, sizeof(k->reason), "%s: mmap: %s",
				 DIAL9_DEVICE, strerror(errno));
			return -errno;
		}
		k->data[cpu] = c;
		/* Wake a poller when a quarter of a ring is used. */
		k->ctrl[cpu]->watermark = k->ctrl[cpu]->data_size / 4;
	}
	if (ioctl(k->fd, DIAL9_IOC_ENABLE, 0)) {
		snprintf(k->reason, sizeof(k->reason), "%s: enable: %s",
			 DIAL9_DEVICE, strerror(errno));
		return -errno;
	}
	k->backend = "dial9.ko";
	k->reason[0] = 0;
	return 0;
}

/*
 * Undo ksched_module_open(), failed or not, and free the queues: @k is as
 * it was before (the perf and schedstat backends may open next).
 */
static void ksched_module_reset(struct dial9_ksched *k)
{
	for (unsigned int cpu = 0; k->ctrl && cpu < k->ncpu; cpu++) {
		if (k->data && k->data[cpu])
			munmap(k->data[cpu], k->ctrl[cpu]->data_size);
		if (k->ctrl[cpu])
			munmap(k->ctrl[cpu], (size_t)k->page);
	}
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	for (unsigned int i = 0; k->q && i < k->ncpu; i++)
		free(k->q[i].buf);
	free(k->ctrl);
	free(k->data);
	free(k->q);
	free(k->lost_seen);
	k->ctrl = NULL;
	k->data = NULL;
	k->q = NULL;
	k->lost_seen = NULL;
	k->ncpu = 0;
}

/* The perf and schedstat backends hand over one merged stream: q[0]. */
static int use_one_queue(struct dial9_ksched *k, const char *backend)
{
	k->backend = backend;
	k->ncpu = 1;
	k->q = calloc(1, sizeof(*k->q));
	return k->q ? 0 : -ENOMEM;
}

/*
 * dial9.ko's session.  Past the module's ring memory limit of an
 * unprivileged user (-EDQUOT), smaller rings: halved down to 64 KiB, and
 * said in k->reason.  On failure, why in @why.
 */
static int ksched_module_open_fitting(struct dial9_ksched *k,
				      const struct dial9_ksched_opts *o,
				      char *why, size_t whylen)
{
	struct dial9_ksched_opts mo = *o;
	int ret;

	while ((ret = ksched_module_open(k, &mo))) {
		str_append(why, whylen, k->reason, true);
		ksched_module_reset(k);
		if (ret != -EDQUOT)
			return ret;
		if (!mo.ring_size)
			mo.ring_size = DIAL9_RING_DEFAULT_SIZE;
		if (mo.ring_size <= 64 << 10)
			return ret;
		mo.ring_size /= 2;
	}
	if (mo.ring_size != o->ring_size)
		snprintf(k->reason, sizeof(k->reason),
			 "rings of %u KiB per CPU, not %u: the most dial9.ko's per-user limit (its user_ring_kb) left",
			 mo.ring_size >> 10,
			 (o->ring_size ? o->ring_size : DIAL9_RING_DEFAULT_SIZE) >> 10);
	return 0;
}

static int ksched_open_backend(struct dial9_ksched **out,
			       const struct dial9_ksched_opts *o, char *why,
			       size_t whylen)
{
	struct dial9_ksched *k = calloc(1, sizeof(*k));
	char modwhy[256] = "";
	int ret = -ENODEV;

	*out = NULL;
	if (!k)
		return -ENOMEM;
	k->fd = -1;
	k->kick_fd = -1;
	k->page = sysconf(_SC_PAGESIZE);
	if (!o->no_module) {
		ret = ksched_module_open_fitting(k, o, modwhy, sizeof(modwhy));
		if (!ret) {
			*out = k;
			return 0;
		}
	} else {
		snprintf(modwhy, sizeof(modwhy), "module not requested");
	}
	ret = o->schedstat_only ? -ENODEV :
	      dial9_perf_open(&k->perf, o, k->reason, sizeof(k->reason));
	if (o->schedstat_only)
		str_append(k->reason, sizeof(k->reason), "not requested", true);
	if (!ret) {
		if (use_one_queue(k, "perf")) {
			dial9_ksched_close(k);
			return -ENOMEM;
		}
		str_append(k->reason, sizeof(k->reason), modwhy, true);
		if (*dial9_perf_note(k->perf)) {
			str_append(k->reason, sizeof(k->reason), "; ", false);
			str_append(k->reason, sizeof(k->reason),
				   dial9_perf_note(k->perf), false);
		}
		*out = k;
		return 0;
	}
	/* The last resort: cumulative counters from /proc. */
	{
		char perfwhy[256], sswhy[256] = "";

		str_append(perfwhy, sizeof(perfwhy), k->reason, true);
		if (!dial9_sstat_open(&k->sstat, o, sswhy, sizeof(sswhy))) {
			if (use_one_queue(k, "schedstat")) {
				dial9_ksched_close(k);
				return -ENOMEM;
			}
			str_append(k->reason, sizeof(k->reason), modwhy, true);
			str_append(k->reason, sizeof(k->reason), "; perf: ", false);
			str_append(k->reason, sizeof(k->reason), perfwhy, false);
			*out = k;
			return 0;
		}
		if (why && whylen) {
			str_append(why, whylen, modwhy, true);
			str_append(why, whylen, "; perf: ", false);
			str_append(why, whylen, perfwhy, false);
			str_append(why, whylen, "; schedstat: ", false);
			str_append(why, whylen, sswhy, false);
		}
	}
	dial9_ksched_close(k);
	return ret;
}

int dial9_ksched_open(struct dial9_ksched **out,
		      const struct dial9_ksched_opts *o, char *why,
		      size_t whylen)
{
	int ret = ksched_open_backend(out, o, why, whylen);

	if (ret || !o->reader_thread)
		return ret;
	ret = ksched_reader_start(*out);
	if (ret) {
		if (why && whylen)
			snprintf(why, whylen, "reader thread: %s",
				 strerror(-ret));
		dial9_ksched_close(*out);
		*out = NULL;
	}
	return ret;
}

void dial9_ksched_close(struct dial9_ksched *k)
{
	if (!k)
		return;
	ksched_reader_stop(k);
	ksched_module_reset(k);
	dial9_perf_close(k->perf);
	dial9_sstat_close(k->sstat);
	free(k);
}

const char *dial9_ksched_backend(const struct dial9_ksched *k)
{
	return k->backend;
}

const char *dial9_ksched_fallback_reason(const struct dial9_ksched *k)
{
	return k->reason;
}

int dial9_ksched_fd(const struct dial9_ksched *k)
{
	return k->perf ? dial9_perf_fd(k->perf) : k->fd;	/* -1: sampled */
}

uint64_t dial9_ksched_lost(const struct dial9_ksched *k)
{
	uint64_t lost = 0;

	if (k->reader)	/* written under k->mu, read here without it */
		lost = __atomic_load_n(&k->inbox_lost, __ATOMIC_RELAXED);
	if (k->perf)
		return lost + dial9_perf_lost(k->perf);
	if (k->sstat)
		return 0;
	for (unsigned int cpu = 0; k->ctrl && cpu < k->ncpu; cpu++)
		if (k->ctrl[cpu])
			lost += __atomic_load_n(&k->ctrl[cpu]->lost,
						__ATOMIC_RELAXED);
	return lost;
}

bool dial9_ksched_pending(const struct dial9_ksched *k)
{
	if (k->fd < 0 || k->perf)
		return false;
	for (unsigned int cpu = 0; cpu < k->ncpu; cpu++)
		if (k->ctrl[cpu] &&
		    __atomic_load_n(&k->ctrl[cpu]->head, __ATOMIC_ACQUIRE) !=
		    __atomic_load_n(&k->ctrl[cpu]->tail, __ATOMIC_RELAXED))
			return true;
	return false;
}

void dial9_ksched_counts(const struct dial9_ksched *k, uint64_t *read,
			 uint64_t *written)
{
	*read = *written = 0;
	if (k->fd < 0 || k->perf)
		return;
	*read = __atomic_load_n(&k->nread, __ATOMIC_RELAXED);
	for (unsigned int cpu = 0; k->ctrl && cpu < k->ncpu; cpu++)
		if (k->ctrl[cpu])
			*written += __atomic_load_n(&k->ctrl[cpu]->written,
						    __ATOMIC_RELAXED);
}

int dial9_ksched_ignore_thread(struct dial9_ksched *k, int tid)
{
	struct dial9_ignore ig = { .size = sizeof(ig) };
	unsigned int i;

	if (k->sstat)
		return -EOPNOTSUPP;
	if (!tid)
		tid = (int)syscall(SYS_gettid);
	/* Filtered as records are read (perf_push), for both backends. */
	i = __atomic_fetch_add(&k->nignored, 1, __ATOMIC_ACQ_REL);
	if (i >= KS_MAX_IGNORED)
		return -ENOSPC;
	__atomic_store_n(&k->ignored[i], tid, __ATOMIC_RELEASE);
	if (k->perf || k->fd < 0)
		return 0;
	ig.tid = (uint32_t)tid;
	return ioctl(k->fd, DIAL9_IOC_IGNORE_THREAD, &ig) ? -errno : 0;
}

struct push_ctx {
	const struct dial9_ksched *k;
	struct d9_kq *q;
	size_t limit;		/* d9_kq_push_bounded()'s, or 0 */
	uint64_t *lost;
};

static bool is_ignored(const struct dial9_ksched *k, uint32_t tid)
{
	unsigned int n = __atomic_load_n(&k->nignored, __ATOMIC_ACQUIRE);

	for (unsigned int i = 0; i < n && i < KS_MAX_IGNORED; i++)
		if ((uint32_t)__atomic_load_n(&k->ignored[i],
					      __ATOMIC_ACQUIRE) == tid && tid)
			return true;
	return false;
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
 * A record of the perf or schedstat backend; on perf, a side that is an
 * ignored thread is no longer a recorded side, and a record with none
 * left is dropped, as dial9.ko does for DIAL9_IOC_IGNORE_THREAD.
 */
static int perf_push(void *ctx, const struct dial9_rec_header *rec)
{
	const struct push_ctx *pc = ctx;
	union {
		struct dial9_rec_switch sw;
		struct dial9_rec_wake wk;
	} u;

	if (!__atomic_load_n(&pc->k->nignored, __ATOMIC_RELAXED) ||
	    rec->size > sizeof(u))
		return push_one(pc, rec);
	memcpy(&u, rec, rec->size);
	if (rec->type == DIAL9_REC_SWITCH && rec->size >= sizeof(u.sw)) {
		if (!keep_sides(pc->k, &u.sw.hdr.flags,
				u.sw.prev_tid, DIAL9_SWITCH_PREV_TARGET,
				u.sw.next_tid, DIAL9_SWITCH_NEXT_TARGET))
			return 0;
	} else if ((rec->type == DIAL9_REC_WAKING ||
		    rec->type == DIAL9_REC_WAKEUP) && rec->size >= sizeof(u.wk)) {
		if (!keep_sides(pc->k, &u.wk.hdr.flags,
				u.wk.tid, DIAL9_WAKE_TASK_TARGET,
				u.wk.waker_tid, DIAL9_WAKE_WAKER_TARGET))
			return 0;
	}
	return push_one(pc, &u.sw.hdr);
}

/*
 * Check, count and queue the records in @n bytes of ring @cpu (whole
 * records, as a ring holds them): skip PAD, count LOST and read records,
 * filter ignored threads, append the rest to q[cpu].
 */
static int parse_records(struct dial9_ksched *k, unsigned int cpu,
			 const unsigned char *p, size_t n)
{
	struct push_ctx pc = { k, &k->q[cpu], 0, NULL };
	size_t at = 0;

	while (at < n) {
		const struct dial9_rec_header *h = (const void *)(p + at);

		if (n - at < 8 || h->size < 8 || h->size % 8 ||
		    h->size > n - at)
			return -EPROTO;
		if (h->type != DIAL9_REC_PAD) {
			if (h->size < sizeof(*h))
				return -EPROTO;
			if (h->type == DIAL9_REC_LOST &&
			    h->size >= sizeof(struct dial9_rec_lost))
				k->lost_seen[cpu] +=
					((const struct dial9_rec_lost *)h)->count;
			else
				__atomic_store_n(&k->nread, k->nread + 1,
						 __ATOMIC_RELAXED);
			if (perf_push(&pc, h))
				return -ENOMEM;
		}
		at += h->size;
	}
	return 0;
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

		ret = k->perf ? dial9_perf_read(k->perf, perf_push, &pc) :
				dial9_sstat_read(k->sstat, perf_push, &pc);
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

			ret = parse_records(k, cpu, k->data[cpu] + off, n);
			if (ret)
				return ret;
			tail += n;
		}
		__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	}
	return 0;
}

/*
 * dial9.ko, the reader thread: copy the bytes each ring holds, as they
 * are, to the end of inbox[cpu] and free their space: one memcpy per
 * stretch, no per-record work here; ring_parse() does that later, in the
 * flush thread.  A stretch that does not fit in the inbox stays in the
 * ring, where the kernel counts what it then has to drop.
 */
static int ring_copy_raw(struct dial9_ksched *k, unsigned int cpu,
			 struct d9_kq *in, size_t limit)
{
	struct dial9_ring_ctrl *c = k->ctrl[cpu];
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint64_t tail = c->tail;

	while (tail < head) {
		uint32_t off;
		size_t n = ring_stretch(c, tail, head, &off);

		if (in->len - in->off + n > limit)
			break;
		if (d9_kq_push(in, k->data[cpu] + off, n))
			return -ENOMEM;
		k->inbox_bytes += n;
		tail += n;
	}
	__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	return 0;
}

/* The flush thread: the raw bytes of ring @cpu into q[cpu]; @raw emptied. */
static int ring_parse(struct dial9_ksched *k, unsigned int cpu,
		      struct d9_kq *raw)
{
	int ret = parse_records(k, cpu, raw->buf + raw->off,
				raw->len - raw->off);

	raw->off = raw->len = 0;
	return ret;
}

/* Whether the reader thread's inboxes hold raw ring bytes (dial9.ko). */
static bool inbox_raw(const struct dial9_ksched *k)
{
	return k->fd >= 0 && !k->perf;
}

/* Move what an inbox holds to q[cpu]. */
static int inbox_take(struct dial9_ksched *k, unsigned int cpu,
		      struct d9_kq *from);


static int inbox_take(struct dial9_ksched *k, unsigned int cpu,
		      struct d9_kq *from)
{
	return inbox_raw(k) ? ring_parse(k, cpu, from) :
			      d9_kq_move(&k->q[cpu], from);
}

/* Under k->mu. */
static void inbox_lost_add(struct dial9_ksched *k, uint64_t n)
{
	__atomic_store_n(&k->inbox_lost, k->inbox_lost + n, __ATOMIC_RELAXED);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * While records keep coming, the reader also looks every few ms, besides
 * the watermark's wake-ups (which it can get late under overload).
 */
#define KSCHED_BUSY_POLL_MS 5

/* How long a record may take from its timestamp to its ring's head. */
#define KSCHED_PUBLISH_NS 2000000ull

/*
 * Bring what has been read into q[].  With a reader thread, lower
 * @horizon to what its last collect is sure to hold: a record older than
 * that collect's start (less the time a probe may take to publish) was
 * in the ring when it read it.
 */
static int ksched_collect(struct dial9_ksched *k, uint64_t *horizon)
{
	uint64_t lost = 0, safe;
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
	pthread_mutex_unlock(&k->mu);
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
		{ .fd = k->perf ? dial9_perf_fd(k->perf) : k->fd,
		  .events = POLLIN },
		{ .fd = k->kick_fd, .events = POLLIN },
	};

	bool busy = false;
	uint64_t before;

	pthread_setname_np(pthread_self(), "dial9-kread");
	/* Not in the trace: its own switches would fill an idle one. */
	dial9_ksched_ignore_thread(k, 0);
	for (;;) {
		uint64_t lost = 0, n, t0;
		int ret;

		/*
		 * The watermark or a kick (the flush thread's, when records
		 * wait below dial9.ko's watermark) wakes us; else every 10 s
		 * (every second for perf, whose rings the flush thread cannot
		 * look into, and where our own switches are recorded too).
		 */
		if (poll(p, 2, busy ? KSCHED_BUSY_POLL_MS :
				k->perf ? 1000 : 10000) < 0 && errno != EINTR)
			break;
		if ((p[1].revents & POLLIN) &&
		    read(k->kick_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
			break;
		if (__atomic_load_n(&k->stopping, __ATOMIC_ACQUIRE))
			break;
		t0 = mono_ns();
		pthread_mutex_lock(&k->mu);
		before = k->inbox_bytes;
		if (inbox_raw(k)) {
			ret = 0;
			for (unsigned int cpu = 0; !ret && cpu < k->ncpu; cpu++)
				if (k->ctrl[cpu])
					ret = ring_copy_raw(k, cpu,
							    &k->inbox[cpu],
							    k->inbox_limit);
		} else {
			size_t had = k->inbox[0].len;

			ret = ksched_collect_into(k, k->inbox, k->inbox_limit,
						  &lost);
			k->inbox_bytes += k->inbox[0].len - had;
		}
		busy = k->inbox_bytes != before;
		inbox_lost_add(k, lost);
		k->collected_ns = t0;
		if (ret)
			k->reader_error = ret;
		pthread_cond_broadcast(&k->cv);
		pthread_mutex_unlock(&k->mu);
		if (ret)
			break;
	}
	return NULL;
}

int dial9_ksched_sync(struct dial9_ksched *k, unsigned int timeout_ms)
{
	uint64_t one = 1, want = mono_ns(), until = want +
					     timeout_ms * 1000000ull;
	struct timespec ts = { (time_t)(until / 1000000000ull),
			       (long)(until % 1000000000ull) };
	int ret = 0;

	if (!k->reader)
		return 0;
	if (write(k->kick_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	pthread_mutex_lock(&k->mu);
	while (!ret && !k->reader_error && k->collected_ns < want)
		ret = pthread_cond_timedwait(&k->cv, &k->mu, &ts);
	pthread_mutex_unlock(&k->mu);
	return ret == ETIMEDOUT ? -ETIMEDOUT : -ret;
}

/* Start the reader thread (backends with a pollable descriptor only). */
static int ksched_reader_start(struct dial9_ksched *k)
{
	uint32_t ring = k->ctrl && k->ctrl[0] ? k->ctrl[0]->data_size :
						DIAL9_RING_DEFAULT_SIZE;
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
	k->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (k->kick_fd < 0)
		return -errno;
	pthread_mutex_init(&k->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cv, &ca);
	pthread_condattr_destroy(&ca);
	k->collected_ns = mono_ns();
	ret = -pthread_create(&k->thread, NULL, reader_main, k);
	if (ret) {
		pthread_cond_destroy(&k->cv);
		pthread_mutex_destroy(&k->mu);
		return ret;
	}
	k->reader = true;
	return 0;
}

/* Stop the reader thread; what it read moves to q[]. */
static int ksched_reader_halt(struct dial9_ksched *k)
{
	uint64_t one = 1;
	int ret = 0;

	if (!k->reader)
		return 0;
	__atomic_store_n(&k->stopping, true, __ATOMIC_RELEASE);
	if (write(k->kick_fd, &one, sizeof(one)) != sizeof(one))
		pthread_cancel(k->thread);
	pthread_join(k->thread, NULL);
	pthread_cond_destroy(&k->cv);
	pthread_mutex_destroy(&k->mu);
	k->reader = false;
	ret = k->reader_error;
	for (unsigned int cpu = 0; !ret && cpu < k->ncpu; cpu++)
		ret = inbox_take(k, cpu, &k->inbox[cpu]);
	return ret;
}

static void ksched_reader_stop(struct dial9_ksched *k)
{
	ksched_reader_halt(k);
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

/*
 * The last read: stop the session, so that what the kernel dropped at the
 * end, which no later record's LOST announces, is still in the stream.
 */
static int ksched_final(struct dial9_ksched *k)
{
	uint64_t horizon = UINT64_MAX;
	int ret = ksched_reader_halt(k);

	if (ret)
		return ret;
	if (k->fd < 0 || k->perf)
		return ksched_collect(k, &horizon);
	ioctl(k->fd, DIAL9_IOC_DISABLE, 0);
	ret = ksched_collect(k, &horizon);
	for (unsigned int cpu = 0; !ret && cpu < k->ncpu; cpu++) {
		struct dial9_rec_lost lr = { .hdr.type = DIAL9_REC_LOST };
		uint64_t lost;

		if (!k->ctrl[cpu])
			continue;
		lost = __atomic_load_n(&k->ctrl[cpu]->lost, __ATOMIC_RELAXED);
		if (lost <= k->lost_seen[cpu])
			continue;
		lr.hdr.size = sizeof(lr);
		lr.hdr.cpu = (uint16_t)cpu;
		lr.hdr.time_ns = mono_ns();
		lr.count = lost - k->lost_seen[cpu];
		k->lost_seen[cpu] = lost;
		ret = d9_kq_push(&k->q[cpu], &lr, sizeof(lr));
	}
	return ret;
}

int dial9_ksched_drain(struct dial9_ksched *k, uint64_t horizon_ns,
		       dial9_ksched_fn fn, void *ctx)
{
	int n = 0, ret = horizon_ns == UINT64_MAX ? ksched_final(k) :
			 ksched_collect(k, &horizon_ns);

	if (ret)
		return ret;
	for (;;) {
		const struct dial9_rec_header *best = NULL, *h;
		unsigned int bcpu = 0;

		for (unsigned int cpu = 0; cpu < k->ncpu; cpu++) {
			h = d9_kq_peek(&k->q[cpu]);
			if (h && h->time_ns < horizon_ns &&
			    (!best || h->time_ns < best->time_ns)) {
				best = h;
				bcpu = cpu;
			}
		}
		if (!best)
			break;
		fn(ctx, best);
		k->q[bcpu].off += best->size;
		n++;
	}
	return n;
}
