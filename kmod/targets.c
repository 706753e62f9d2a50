// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 targets: the processes a session follows, and the threads it
 * leaves out.
 *
 * The probes look a task's process up on every switch, wake-up and
 * migration of every CPU, so the lookup is lock-free and short: an open
 * addressing hash of tgids, probed linearly for at most DIAL9_TGT_PROBES
 * slots.  Writers (ADD_TARGET, fork, the free of a process's last task)
 * are rare and take a spinlock.  Each entry also holds the identity of the
 * process (its leader's start_time), so a process that reuses a followed
 * tgid does not match.
 *
 * A process is forgotten when its leader's task_struct is freed
 * (sched_process_free, from RCU after the leader was reaped): by then every
 * thread of it has made its last switch, which sched_process_exit is too
 * early for (an exiting task is still scheduled for a while after it).
 *
 * Besides each session's table, the module keeps one index of the tgids
 * in all of them (dial9_index_*), which the probes test before they walk
 * the sessions at all: see below.
 */
#include <linux/auxvec.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hash.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include "dial9_core.h"

static_assert(sizeof(struct dial9_targets) % PAGE_SIZE == 0);

/*
 * The index of followed processes, for the whole module: a count per
 * bucket of a hash of the tgid of the entries of every session's table
 * (enabled or not), and a bit per bucket, set while its count is not
 * zero, that the probes test (dial9_indexed()).  A task whose bit is
 * clear is in no session's table, so no session but a system-wide one
 * can record it, and a probe for it returns without visiting any other
 * session: what a switch of a task that nobody records costs does not
 * grow with the number of sessions, whoever opened them.
 *
 * A set bit only means the walk happens (a tgid sharing a bucket with a
 * followed one, a stale entry of a dead process whose tgid was reused,
 * a disabled session's entries); a clear bit must never hide an entry.
 * So a bucket is counted before its entry is published (both under the
 * session's targets_lock, the entry with a store-release that orders it
 * after the bit) and uncounted after the entry is gone; a session's last
 * entries are uncounted when it is released (dial9_targets_free()).  The
 * counts and bits change under dial9_index_lock, taken inside a
 * session's targets_lock, so that a bucket's bit and count agree.  The
 * hash is keyed with a random seed at load, so that which tgids share a
 * bucket with another user's process is not known to a user who would
 * make its walks happen on purpose.
 */
unsigned long dial9_index_bits[BITS_TO_LONGS(DIAL9_INDEX_SIZE)];
u32 dial9_index_seed __ro_after_init;
static u32 dial9_index_count[DIAL9_INDEX_SIZE];
static DEFINE_SPINLOCK(dial9_index_lock);

/* Module load, before any session exists. */
void dial9_index_init(void)
{
	dial9_index_seed = get_random_u32();
}

/* One more entry of @tgid in a table.  Caller holds its targets_lock. */
static void dial9_index_add(pid_t tgid)
{
	u32 b = dial9_index_slot(tgid);

	spin_lock(&dial9_index_lock);
	if (!dial9_index_count[b]++)
		set_bit(b, dial9_index_bits);
	spin_unlock(&dial9_index_lock);
}

/* One entry of @tgid fewer (it is gone).  Caller holds its targets_lock. */
static void dial9_index_del(pid_t tgid)
{
	u32 b = dial9_index_slot(tgid);

	spin_lock(&dial9_index_lock);
	if (!WARN_ON_ONCE(!dial9_index_count[b]) && !--dial9_index_count[b])
		clear_bit(b, dial9_index_bits);
	spin_unlock(&dial9_index_lock);
}

/* What a session's table takes. */
size_t dial9_targets_bytes(void)
{
	return sizeof(struct dial9_targets);
}

/*
 * A session's table, at open: charged to the opener's memory cgroup, and
 * -ENOMEM rather than its OOM killer when it does not fit (DIAL9_GFP_LARGE);
 * the caller charged its user first (dial9_quota_open()).
 */
int dial9_targets_init(struct dial9_session *s)
{
	spin_lock_init(&s->targets_lock);
	s->targets = __vmalloc(sizeof(*s->targets), DIAL9_GFP_LARGE);
	return s->targets ? 0 : -ENOMEM;
}

/*
 * Free the table of @s, once no probe can reach it (the session is
 * disabled, or was never enabled): its entries leave the index.
 */
void dial9_targets_free(struct dial9_session *s)
{
	struct dial9_targets *t = s->targets;
	unsigned long irqflags;
	u32 slot, left;

	if (!t)
		return;
	spin_lock_irqsave(&s->targets_lock, irqflags);
	left = s->targets_live;
	for (slot = 0; slot < DIAL9_TGT_SLOTS && left; slot++) {
		u64 e = t->key[slot];

		if (!e || e == DIAL9_TGT_TOMB)
			continue;
		dial9_index_del(DIAL9_TGT_TGID(e));
		left--;
	}
	WRITE_ONCE(s->targets_live, 0);
	spin_unlock_irqrestore(&s->targets_lock, irqflags);
	s->targets = NULL;
	vfree(t);
}

/* Is @p of the process that opened the session (not one reusing its tgid)? */
bool dial9_is_owner(const struct dial9_session *s, const struct task_struct *p)
{
	return p->tgid == s->owner_tgid &&
	       dial9_process_start(p) == s->owner_start;
}

/*
 * Whether @p's credentials give it nothing the session's opener did not
 * have at open: the same real, effective and saved user and group ids,
 * and no capability the opener lacked (compared within one user
 * namespace: capabilities in a namespace of the opener's own are no
 * privilege over it).  An unprivileged session records a task only while
 * this holds, whatever happened while it was not looking (disabled, or
 * before ADD_TARGET): an exec that gained privileges changes one of them.
 * Lock-free (the probes hold off RCU, ioctls call it under rcu_read_lock);
 * a few loads when the task shares the opener's credentials or a fork's
 * copy of them.
 */
bool dial9_creds_ok(const struct dial9_session *s, const struct task_struct *p)
{
	const struct cred *o = s->cred;
	const struct cred *c = rcu_dereference_check(p->real_cred,
						     rcu_read_lock_any_held());

	if (c == o)
		return true;
	return uid_eq(c->uid, o->uid) && uid_eq(c->euid, o->euid) &&
	       uid_eq(c->suid, o->suid) && gid_eq(c->gid, o->gid) &&
	       gid_eq(c->egid, o->egid) && gid_eq(c->sgid, o->sgid) &&
	       (c->user_ns != o->user_ns ||
		cap_issubset(c->cap_permitted, o->cap_permitted));
}

/*
 * Whether @p's program was started by an exec that gained privileges:
 * the AT_SECURE its auxiliary vector was given (setuid, setgid, file
 * capabilities, an LSM's transition).  This outlives the privileges: a
 * setuid program that drops back to the caller's ids is still one, until
 * it execs another program.  Process context; takes @p's task lock, which
 * keeps its mm.
 */
bool dial9_secure_image(struct task_struct *p)
{
	const unsigned long *v;
	bool secure = false;
	int i;

	task_lock(p);
	if (p->mm) {
		v = p->mm->saved_auxv;
		for (i = 0; i + 1 < AT_VECTOR_SIZE && v[i] != AT_NULL; i += 2) {
			if (v[i] == AT_SECURE) {
				secure = v[i + 1];
				break;
			}
		}
	}
	task_unlock(p);
	return secure;
}

/*
 * Whether an unprivileged session may follow @p: its credentials are the
 * opener's (dial9_creds_ok()) and its program was not started by an exec
 * that gained privileges, which the exec probe sees only while the
 * session is enabled.  When the opener's own program was (a program with
 * file capabilities recording itself), its children's copies of it are
 * too: then the credentials alone decide.  ADD_TARGET and ENABLE
 * (dial9_targets_sync()) ask.
 */
bool dial9_may_follow(const struct dial9_session *s, struct task_struct *p)
{
	return dial9_creds_ok(s, p) &&
	       (s->opener_secure || !dial9_secure_image(p));
}

/*
 * Follow @p's process with @flags (or update its flags).  -ENOSPC when
 * DIAL9_MAX_TARGETS are followed or its probe window is full.  Any context.
 */
int dial9_target_add(struct dial9_session *s, const struct task_struct *p,
		     u32 flags)
{
	struct dial9_targets *t = s->targets;
	pid_t tgid = p->tgid;
	u64 start = dial9_process_start(p);
	u64 e = ((u64)flags << 32) | (u32)tgid;
	u32 h = hash_32((u32)tgid, DIAL9_TGT_BITS), i;
	unsigned long irqflags;
	int free_slot = -1, ret = -ENOSPC;

	spin_lock_irqsave(&s->targets_lock, irqflags);
	for (i = 0; i < DIAL9_TGT_PROBES; i++) {
		u32 slot = (h + i) & DIAL9_TGT_MASK;
		u64 cur = t->key[slot];

		if (cur == DIAL9_TGT_TOMB || !cur) {
			if (free_slot < 0)
				free_slot = slot;
			if (!cur)
				break;
			continue;
		}
		if (DIAL9_TGT_TGID(cur) != tgid)
			continue;
		/* This process, or a dead one's entry not yet freed. */
		WRITE_ONCE(t->start[slot], start);
		/* Release: pairs with the acquire in dial9_tgt_slot(). */
		smp_store_release(&t->key[slot], e);
		ret = 0;
		goto out_unlock;
	}
	if (free_slot >= 0 && s->targets_live < DIAL9_MAX_TARGETS) {
		/* In the index before a probe can find the entry. */
		dial9_index_add(tgid);
		WRITE_ONCE(t->start[free_slot], start);
		/* Release: pairs with the acquire in dial9_tgt_slot(). */
		smp_store_release(&t->key[free_slot], e);
		WRITE_ONCE(s->targets_live, s->targets_live + 1);
		ret = 0;
	}
out_unlock:
	spin_unlock_irqrestore(&s->targets_lock, irqflags);
	return ret;
}

/*
 * Stop following @tgid: the process of identity @start, or whichever
 * process holds the tgid if @any.  Any context.
 */
void dial9_target_forget(struct dial9_session *s, pid_t tgid, u64 start,
			 bool any)
{
	struct dial9_targets *t = s->targets;
	u32 h = hash_32((u32)tgid, DIAL9_TGT_BITS), i;
	unsigned long irqflags;

	spin_lock_irqsave(&s->targets_lock, irqflags);
	for (i = 0; i < DIAL9_TGT_PROBES; i++) {
		u32 slot = (h + i) & DIAL9_TGT_MASK, j;
		u64 cur = t->key[slot];

		if (!cur)
			break;
		if (DIAL9_TGT_TGID(cur) != tgid)
			continue;
		if (!any && t->start[slot] != start)
			break;
		WRITE_ONCE(t->key[slot], DIAL9_TGT_TOMB);
		WRITE_ONCE(s->targets_live, s->targets_live - 1);
		/* Out of the index once no probe can find the entry. */
		dial9_index_del(tgid);
		/* Tombstones that end a chain become free again. */
		for (j = slot; !t->key[(j + 1) & DIAL9_TGT_MASK] &&
		     t->key[j] == DIAL9_TGT_TOMB; j = (j - 1) & DIAL9_TGT_MASK)
			WRITE_ONCE(t->key[j], 0);
		break;
	}
	spin_unlock_irqrestore(&s->targets_lock, irqflags);
}

u32 dial9_targets_count(const struct dial9_session *s)
{
	return READ_ONCE(s->targets_live);
}

/*
 * The thread an io_uring worker works for: io-wq names its workers
 * "iou-wrk-<tid of the submitting thread>"; 0 if @p is not one.
 */
static pid_t dial9_io_worker_of(const struct task_struct *p)
{
	const char *c = p->comm;
	pid_t tid = 0;

	if (!(p->flags & PF_IO_WORKER) || strncmp(c, "iou-wrk-", 8))
		return 0;
	for (c += 8; *c >= '0' && *c <= '9' && c < p->comm + TASK_COMM_LEN;
	     c++)
		tid = tid * 10 + (*c - '0');
	return tid;
}

/*
 * Whether @p is a thread the session leaves out, or an io_uring worker of
 * one (a recorder's writes go through io_uring, whose workers would
 * otherwise be recorded writing the records of their own switches).
 *
 * A new worker runs before it names itself "iou-wrk-<tid>": until then it
 * has the name of the thread that created it, its boss (io-wq creates
 * workers in the submitting task, or in task work run by it), so an
 * unnamed worker with an ignored thread's process and name is that
 * thread's.  Lock-free.
 */
bool dial9_ignored(const struct dial9_session *s, const struct task_struct *p)
{
	/* Acquire: pairs with the releases in dial9_ignore_set(). */
	int i, n = smp_load_acquire(&s->nignored);
	bool unnamed;
	pid_t boss;

	if (!n)
		return false;
	boss = dial9_io_worker_of(p);
	unnamed = !boss && (p->flags & PF_IO_WORKER);

	for (i = 0; i < n; i++) {
		/* Acquire: the rest written before the tid is seen. */
		pid_t tid = smp_load_acquire(&s->ignored[i].tid);

		if (!tid)
			continue;
		if (tid == p->pid &&
		    READ_ONCE(s->ignored[i].start) == p->start_time)
			return true;
		if (boss && tid == boss)
			return true;
		if (unnamed && s->ignored[i].tgid == p->tgid &&
		    !strncmp(s->ignored[i].comm, p->comm, TASK_COMM_LEN))
			return true;
	}
	return false;
}

/* The bits of the tids ignored now (a retired one's may stay set). */
static void dial9_ignored_bits_update(struct dial9_session *s)
{
	u64 bits = 0;
	int i;

	for (i = 0; i < s->nignored; i++)
		if (s->ignored[i].tid)
			bits |= BIT_ULL(s->ignored[i].tid & 63);
	WRITE_ONCE(s->ignored_bits, bits);
}

/*
 * Leave @p out (or record it again if @remove).  Caller holds s->lock, so
 * writers are serialized; probes may read the array meanwhile, and an
 * entry is published (tid last) or retired (tid first) in one store.
 */
int dial9_ignore_set(struct dial9_session *s, const struct task_struct *p,
		     bool remove)
{
	int i, n = s->nignored, free_slot = -1;

	for (i = 0; i < n; i++) {
		if (s->ignored[i].tid == p->pid &&
		    s->ignored[i].start == p->start_time) {
			if (remove) {
				WRITE_ONCE(s->ignored[i].tid, 0);
				dial9_ignored_bits_update(s);
			}
			return 0;
		}
		if (!s->ignored[i].tid && free_slot < 0)
			free_slot = i;
	}
	if (remove)
		return -ENOENT;
	if (free_slot < 0) {
		if (n == DIAL9_MAX_IGNORED)
			return -ENOSPC;
		free_slot = n;
	}
	WRITE_ONCE(s->ignored[free_slot].start, p->start_time);
	WRITE_ONCE(s->ignored[free_slot].tgid, p->tgid);
	/* racing a rename at worst gives a name no worker has */
	memcpy(s->ignored[free_slot].comm, p->comm, TASK_COMM_LEN);
	s->ignored[free_slot].comm[TASK_COMM_LEN - 1] = '\0';
	/* Its bit before its tid: a probe seeing the tid sees the bit. */
	WRITE_ONCE(s->ignored_bits, s->ignored_bits | BIT_ULL(p->pid & 63));
	/* Release: pairs with the acquires in dial9_ignored(). */
	smp_store_release(&s->ignored[free_slot].tid, p->pid);
	if (free_slot == n)
		/* Release: the entry is whole before it is in range. */
		smp_store_release(&s->nignored, n + 1);
	return 0;
}
