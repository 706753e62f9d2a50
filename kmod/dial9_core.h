/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dial9 internals: sessions, their per-CPU rings and the probes that fill
 * them.  The ABI is in <linux/dial9.h>.
 */
#ifndef DIAL9_CORE_H
#define DIAL9_CORE_H

#include <linux/types.h>
#include <linux/gfp.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/irq_work.h>
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/hash.h>
#include <linux/uidgid.h>
#include <linux/sched.h>
#include <linux/dial9.h>

struct cred;
struct task_struct;
struct vm_area_struct;

/*
 * Every allocation of a session is charged to the memory cgroup of the
 * process that makes it (quota.c).  The large ones (rings, the target
 * table) also fail rather than call that cgroup's OOM killer, and
 * quietly: a cgroup too small for them gets -ENOMEM, as a user's limit
 * gets -EDQUOT.
 */
#define DIAL9_GFP		GFP_KERNEL_ACCOUNT
#define DIAL9_GFP_LARGE		(GFP_KERNEL_ACCOUNT | __GFP_NORETRY | \
				 __GFP_NOWARN | __GFP_ZERO)

/* A task named in a ring for DIAL9_CFG_OCCUPANTS (probes.c). */
struct dial9_named {
	pid_t tid;
	char comm[TASK_COMM_LEN];
};

#define DIAL9_NAMED		16	/* names remembered per ring */

/*
 * One CPU's ring of one session.  Only that CPU writes it, with interrupts
 * off, so the private fields need no atomics; but queued, which wake-ups
 * and migrations on other CPUs change, on a cache line of its own.
 */
struct dial9_ring {
	struct dial9_ring_ctrl *ctrl;	/* shared with the reader */
	void *data;			/* data_size bytes, mapped read-only */
	u32 size;
	u32 mask;
	u16 cpu;
	u64 head;			/* private copy of ctrl->head */
	u64 written;
	u64 lost;
	u64 unreported_lost;		/* dropped since the last LOST record */
	u64 last_ns;			/* clamp: never go backwards */
	u64 tail_seen;			/* the reader's tail at the last reserve */
	u64 woken_tail;			/* its tail when we last woke it */
	u32 named_next;			/* the slot to reuse next */
	struct dial9_named named[DIAL9_NAMED];
	/* DIAL9_CFG_OCCUPANTS: recorded tasks queued on this CPU */
	atomic_t queued ____cacheline_aligned_in_smp;
};

/*
 * A target entry packs a tgid (low 32 bits) and DIAL9_TARGET_* flags (high
 * 32 bits), so a probe reads both in one load.
 */
#define DIAL9_TGT_TGID(e)	((pid_t)(u32)(e))
#define DIAL9_TGT_FLAGS(e)	((u32)((e) >> 32) & 0x7fffffff)

#define DIAL9_TGT_BITS		13	/* 2 x DIAL9_MAX_TARGETS slots */
#define DIAL9_TGT_SLOTS		(1U << DIAL9_TGT_BITS)
#define DIAL9_TGT_MASK		(DIAL9_TGT_SLOTS - 1)
#define DIAL9_TGT_PROBES	32
/* A removed entry: its tgid (low 32 bits) is 0, which never matches. */
#define DIAL9_TGT_TOMB		(1ULL << 63)

static_assert(DIAL9_TGT_SLOTS >= 2 * DIAL9_MAX_TARGETS);

/*
 * A session's table of followed processes (targets.c), 128 KiB of
 * vmalloc: its writers' lock and its count of entries in use are the
 * session's (targets_lock, targets_live), so that it takes whole pages
 * and no more.
 */
struct dial9_targets {
	u64 key[DIAL9_TGT_SLOTS];	/* tgid | flags << 32; 0 free; TOMB */
	u64 start[DIAL9_TGT_SLOTS];	/* its leader's start_time */
};

/*
 * A thread left out of the session: its tid and start_time (identity),
 * and its process and name, which an io_uring worker it creates carries
 * until the worker names itself (dial9_ignored()).
 */
struct dial9_ignored {
	pid_t tid;
	pid_t tgid;
	u64 start;
	char comm[TASK_COMM_LEN];
};

struct dial9_session {
	struct list_head node;		/* dial9_sessions, under RCU */
	struct mutex lock;		/* ioctl/mmap/enable state */
	bool privileged;		/* CAP_PERFMON at open */
	bool opener_secure;		/* its program had AT_SECURE */
	bool system_wide;
	bool enabled;
	bool rings_ready;
	bool stacks;			/* DIAL9_CFG_STACKS */
	bool occupants;			/* DIAL9_CFG_OCCUPANTS */
	int occ_slot;			/* its bit in occupied maps, or -1 */
	u32 events;			/* DIAL9_EV_* */
	u32 ring_size;
	pid_t owner_tgid;
	u64 owner_start;		/* its leader's start_time */
	kuid_t uid;			/* the opener's, for quota.c */
	const struct cred *cred;	/* the opener's, for dial9_creds_ok() */
	u64 charged;			/* bytes charged to its user */

	struct dial9_targets *targets;	/* processes followed (targets.c) */
	u32 targets_live;		/* entries in use */
	spinlock_t targets_lock;	/* its writers */
	atomic64_t targets_dropped;
	int nignored;			/* ignored[0, nignored) may be set */
	/*
	 * Bit (tid % 64) of each ignored tid: a task whose bit is clear and
	 * that is no io_uring worker is not ignored, found without a call
	 * (dial9_match(), on every probe); set before the entry is
	 * published, recomputed when one is retired.
	 */
	u64 ignored_bits;
	struct dial9_ignored ignored[DIAL9_MAX_IGNORED];

	struct dial9_ring **rings;	/* [nr_cpu_ids], NULL if not possible */

	wait_queue_head_t wq;
	struct irq_work wakeup;		/* defers wake_up from the probes */

	/* On-CPU samples (sample.c): sample_hz a second per CPU, or none. */
	u32 sample_hz;
	bool sampling;			/* the timers run */
	struct dial9_sampler __percpu *samplers;
	struct hlist_node cpuhp_node;
};

/* A user stack walked at a switch-out (stack.c), per CPU. */
struct dial9_stack {
	u32 nr;
	bool truncated;
	u64 ips[DIAL9_STACK_MAX_DEPTH];
};

/* ring.c */
struct dial9_ring *dial9_ring_alloc(u32 size, int cpu);
void dial9_ring_free(struct dial9_ring *r);
void dial9_ring_map(struct vm_area_struct *vma, struct dial9_ring *r,
		    bool data);
void *dial9_ring_reserve_slow(struct dial9_ring *r, u16 type, u32 size,
			      u64 time_ns);
bool dial9_ring_wake_due(struct dial9_ring *r);
bool dial9_ring_readable(struct dial9_ring *r);

/* A record's header at @h in @r: its type, size, cpu and time, no flags. */
static __always_inline void dial9_ring_header(struct dial9_ring *r,
					      struct dial9_rec_header *h,
					      u16 type, u32 size, u64 time_ns)
{
	h->type = type;
	h->size = size;
	h->cpu = r->cpu;
	h->flags = 0;
	h->time_ns = time_ns;
}

/*
 * Reserve @size bytes (a multiple of 8) for one record at @time_ns, after a
 * LOST record if records were dropped since the last one.  Returns where to
 * write the record, with its header's type, size, cpu and time filled in,
 * or NULL (the record is counted lost) if it does not fit.  Interrupts must
 * be off until dial9_ring_commit(): only this CPU writes this ring.
 *
 * Inline, the common case: it fits by the reader's tail last seen (the
 * tail only moves forward, so it fits by the tail now), needs no pad and
 * follows no drop.  The rest is dial9_ring_reserve_slow().
 */
static __always_inline void *dial9_ring_reserve(struct dial9_ring *r, u16 type,
						u32 size, u64 time_ns)
{
	u64 head = r->head;
	u32 off = head & r->mask;
	struct dial9_rec_header *h;

	if (unlikely(r->unreported_lost || off + size > r->size ||
		     head + size - r->tail_seen > r->size))
		return dial9_ring_reserve_slow(r, type, size, time_ns);
	/* One CPU's records never go backwards in time. */
	if (time_ns < r->last_ns)
		time_ns = r->last_ns;
	r->last_ns = time_ns;
	h = r->data + off;
	dial9_ring_header(r, h, type, size, time_ns);
	r->head = head + size;
	return h;
}

/*
 * Publish what dial9_ring_reserve() handed out.  Returns true if the reader
 * should be woken (dial9_ring_wake_due()), which only a ring filled to its
 * watermark by the tail last seen needs to ask.
 */
static __always_inline bool dial9_ring_commit(struct dial9_ring *r)
{
	u64 used = r->head - r->tail_seen;

	r->written++;
	WRITE_ONCE(r->ctrl->written, r->written);
	/* Release: the record is complete before the reader sees head. */
	smp_store_release(&r->ctrl->head, r->head);
	if (likely(used < READ_ONCE(r->ctrl->watermark) && used < r->size))
		return false;
	return dial9_ring_wake_due(r);
}

/* probes.c */
int dial9_probes_init(void);
void dial9_probes_exit(void);
int dial9_session_enable(struct dial9_session *s);
void dial9_session_disable(struct dial9_session *s);
void dial9_targets_sync(struct dial9_session *s, pid_t tgid);

/* stack.c */
struct dial9_stack *dial9_stack_get(struct dial9_stack **st);
struct dial9_stack *dial9_stack_sample(bool *in_kernel);
bool dial9_stack_put_type(struct dial9_ring *r, u16 type,
			  const struct dial9_stack *st, struct task_struct *p,
			  u64 now, u16 flags, u32 missed);
bool dial9_stack_put(struct dial9_ring *r, const struct dial9_stack *st,
		     struct task_struct *p, u64 now, u16 flags);

/* sample.c */
struct dial9_sampler;
void dial9_sample_exit(void);
void dial9_sample_free(struct dial9_session *s);
int dial9_sample_start(struct dial9_session *s);
void dial9_sample_stop(struct dial9_session *s);
u64 dial9_sample_missed(struct dial9_session *s, unsigned int cpu);
void dial9_sample_resume(struct dial9_session *s);
void dial9_sample_kick(struct dial9_session *s);

/* quota.c */
int dial9_quota_open(struct dial9_session *s, u64 bytes);
int dial9_quota_charge(struct dial9_session *s, u64 bytes);
void dial9_quota_uncharge(struct dial9_session *s, u64 bytes);
void dial9_quota_close(struct dial9_session *s);

/* targets.c */
size_t dial9_targets_bytes(void);
int dial9_targets_init(struct dial9_session *s);
void dial9_targets_free(struct dial9_session *s);
void dial9_index_init(void);
int dial9_target_add(struct dial9_session *s, const struct task_struct *p,
		     u32 flags);
void dial9_target_forget(struct dial9_session *s, pid_t tgid, u64 start,
			 bool any);
u32 dial9_targets_count(const struct dial9_session *s);
bool dial9_is_owner(const struct dial9_session *s, const struct task_struct *p);
bool dial9_creds_ok(const struct dial9_session *s, const struct task_struct *p);
bool dial9_secure_image(struct task_struct *p);
bool dial9_may_follow(const struct dial9_session *s, struct task_struct *p);
bool dial9_ignored(const struct dial9_session *s, const struct task_struct *p);
int dial9_ignore_set(struct dial9_session *s, const struct task_struct *p,
		     bool remove);

/*
 * The module's index of the processes in any session's target table
 * (targets.c): a bit per bucket of a keyed hash of the tgid.
 */
#define DIAL9_INDEX_BITS	16
#define DIAL9_INDEX_SIZE	(1U << DIAL9_INDEX_BITS)

extern unsigned long dial9_index_bits[];
extern u32 dial9_index_seed;

static __always_inline u32 dial9_index_slot(pid_t tgid)
{
	return hash_32((u32)tgid ^ dial9_index_seed, DIAL9_INDEX_BITS);
}

/*
 * Whether @p may be in a session's target table; false means it is in
 * none, so that only a system-wide session can record it.  Lock-free.
 */
static __always_inline bool dial9_indexed(const struct task_struct *p)
{
	return test_bit(dial9_index_slot(p->tgid), dial9_index_bits);
}

/*
 * The identity of @p's process: a reused tgid has a later start.  An exec
 * by another thread keeps it (de_thread() copies the leader's start).
 */
static __always_inline u64 dial9_process_start(const struct task_struct *p)
{
	return READ_ONCE(p->group_leader)->start_time;
}

/*
 * The slot of (@tgid, @start) in @t, or -1.  Lock-free; inline, as the
 * probes look up both sides of most events.
 */
static __always_inline int dial9_tgt_slot(const struct dial9_targets *t,
					  pid_t tgid, u64 start)
{
	u32 h = hash_32((u32)tgid, DIAL9_TGT_BITS), i;

	for (i = 0; i < DIAL9_TGT_PROBES; i++) {
		u32 slot = (h + i) & DIAL9_TGT_MASK;
		/* Acquire: the start written before the key is seen. */
		u64 e = smp_load_acquire(&t->key[slot]);

		if (!e)
			return -1;
		if (DIAL9_TGT_TGID(e) == tgid)
			return READ_ONCE(t->start[slot]) == start ? slot : -1;
	}
	return -1;
}

/* The DIAL9_TARGET_* flags of @p's process if it is followed, else -1. */
static __always_inline int dial9_target_flags(const struct dial9_session *s,
					      const struct task_struct *p)
{
	const struct dial9_targets *t = s->targets;
	int slot;

	if (!p->tgid || !READ_ONCE(s->targets_live))
		return -1;
	slot = dial9_tgt_slot(t, p->tgid, dial9_process_start(p));
	return slot < 0 ? -1 : (int)DIAL9_TGT_FLAGS(READ_ONCE(t->key[slot]));
}

/*
 * Whether @p is recorded by @s.  An unprivileged session also checks that
 * @p still runs with its opener's credentials: the exec probe stops
 * following at a privileged exec only while the session is enabled, and
 * this holds whatever happened before (dial9_creds_ok()).
 */
static __always_inline bool dial9_match(const struct dial9_session *s,
					const struct task_struct *p)
{
	if (!s->system_wide && dial9_target_flags(s, p) < 0)
		return false;
	if (!s->privileged && !dial9_creds_ok(s, p))
		return false;
	/*
	 * Inline, so a session with nothing left out, or a task that is
	 * none of what it leaves out, makes no call.
	 */
	if (!READ_ONCE(s->nignored))
		return true;
	if (!(READ_ONCE(s->ignored_bits) & BIT_ULL(p->pid & 63)) &&
	    !(p->flags & PF_IO_WORKER))
		return true;
	return !dial9_ignored(s, p);
}

/*
 * Publish a record reserved in @r of @s; wake the reader (later, from
 * irq_work) if due.  For the probes and the sampler.
 */
static __always_inline void dial9_commit(struct dial9_session *s,
					 struct dial9_ring *r)
{
	if (dial9_ring_commit(r))
		irq_work_queue(&s->wakeup);
}

#endif /* DIAL9_CORE_H */
