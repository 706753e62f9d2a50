// SPDX-License-Identifier: MIT
/*
 * ksched_perf_read.c - the perf backend's buffers read: PERF_RECORD_SWITCH,
 * task, comm and sched_waking samples turned into dial9_rec_* records,
 * and the runqueue wait resolved over all CPUs in time order (resolve();
 * ksched_perf.c says how it is measured and what it cannot see).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <linux/dial9.h>

#include "common/grow.h"
#include "ksched/ksched.h"

/* The sample_id trailer: pid, tid, time, cpu (PERF_SAMPLE_TID|TIME|CPU). */
struct perf_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

/*
 * A sched_waking sample: pid/tid, time, cpu, then the raw tracepoint data.
 * resolve() fills in the woken task's process when it is one of ours.
 */
static int perf_waking(struct d9_perf *p, const unsigned char *r,
		       uint16_t size)
{
	struct dial9_rec_wake wk;
	struct perf_id id;
	uint32_t raw_size;
	int32_t pid, cpu;
	const unsigned char *raw;

	if (p->waking_id < 0 ||
	    size < sizeof(struct perf_event_header) + sizeof(id) + 4)
		return 0;
	memcpy(&id, r + sizeof(struct perf_event_header), sizeof(id));
	memcpy(&raw_size, r + sizeof(struct perf_event_header) + sizeof(id), 4);
	raw = r + sizeof(struct perf_event_header) + sizeof(id) + 4;
	if (raw + raw_size > r + size ||
	    (uint32_t)p->waking_pid_off + 4 > raw_size ||
	    (uint32_t)p->waking_cpu_off + 4 > raw_size)
		return 0;
	memcpy(&pid, raw + p->waking_pid_off, 4);
	memcpy(&cpu, raw + p->waking_cpu_off, 4);
	memset(&wk, 0, sizeof(wk));
	wk.hdr.type = DIAL9_REC_WAKING;
	wk.hdr.size = sizeof(wk);
	wk.hdr.cpu = (uint16_t)id.cpu;
	wk.hdr.time_ns = id.time;
	wk.tid = (uint32_t)pid;
	wk.waker_tid = id.tid;
	wk.waker_tgid = id.pid;
	/* a thread's own event: the waker is ours (CPU-wide: resolve()) */
	wk.hdr.flags = p->waking_wide ? 0 : DIAL9_WAKE_WAKER_TARGET;
	wk.target_cpu = (uint32_t)cpu;
	return d9_perf_push_rec(p, &wk, sizeof(wk));
}

/*
 * An on-CPU sample (ksched_perf.c's open_clock()): pid/tid, time, cpu,
 * then the callchain, whose context markers are left out, as a SAMPLE
 * record in p->samples.
 */
static int perf_sample(struct d9_perf *p, const unsigned char *r,
		       uint16_t size)
{
	_Alignas(8) unsigned char buf[sizeof(struct dial9_rec_stack) +
				      8 * DIAL9_STACK_MAX_DEPTH];
	struct dial9_rec_stack *st = (void *)buf;
	const unsigned char *at = r + sizeof(struct perf_event_header);
	struct perf_id id;
	uint64_t nr, ip;

	if (!p->samples || size < sizeof(struct perf_event_header) +
				   sizeof(id) + 8)
		return 0;
	memcpy(&id, at, sizeof(id));
	memcpy(&nr, at + sizeof(id), 8);
	at += sizeof(id) + 8;
	if (nr > (uint64_t)(r + size - at) / 8)
		return 0;
	memset(buf, 0, sizeof(buf));
	for (uint64_t i = 0; i < nr; i++) {
		memcpy(&ip, at + i * 8, 8);
		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			continue;
		if (st->nr == DIAL9_STACK_MAX_DEPTH) {
			st->hdr.flags |= DIAL9_STACK_TRUNCATED;
			break;
		}
		st->ips[st->nr++] = ip;
	}
	if (!st->nr)
		return 0;
	st->hdr.type = DIAL9_REC_SAMPLE;
	st->hdr.size = (uint16_t)(sizeof(*st) + 8 * st->nr);
	st->hdr.cpu = (uint16_t)id.cpu;
	st->hdr.time_ns = id.time;
	st->tid = id.tid;
	st->tgid = id.pid;
	return d9_kq_push(p->samples, buf, st->hdr.size);
}

/*
 * A CPU-wide switch-out: the whole switch, prev the task sampled, next
 * the one the record names (its switch-in record says no more: skipped).
 * resolve_whole() says which sides are ours.
 */
static int perf_switch_whole(struct d9_perf *p, const unsigned char *r,
			     const struct perf_event_header *h,
			     const struct perf_id *id)
{
	struct dial9_rec_switch sw;
	uint32_t np[2];		/* next_prev_pid, next_prev_tid */

	if (!(h->misc & PERF_RECORD_MISC_SWITCH_OUT) ||
	    h->size < sizeof(*h) + sizeof(np) + sizeof(*id))
		return 0;
	memcpy(np, r + sizeof(*h), sizeof(np));
	memset(&sw, 0, sizeof(sw));
	sw.hdr.type = DIAL9_REC_SWITCH;
	sw.hdr.size = sizeof(sw);
	sw.hdr.cpu = (uint16_t)id->cpu;
	sw.hdr.time_ns = id->time;
	sw.hdr.flags = DIAL9_SWITCH_OCCUPANTS;
	sw.prev_tid = id->tid;
	sw.prev_tgid = id->pid;
	sw.next_tid = np[1];
	sw.next_tgid = np[0];
	if (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) {
		sw.prev_state = DIAL9_STATE_RUNNING;
		sw.hdr.flags |= DIAL9_SWITCH_PREV_RUNNABLE;
	} else {
		sw.prev_state = id->tid ? DIAL9_STATE_SLEEPING :
					  DIAL9_STATE_RUNNING;
	}
	return d9_perf_push_rec(p, &sw, sizeof(sw));
}

/* What the kernel wrote, as dial9 records (resolve() completes them). */
static int perf_record(struct d9_perf *p, const unsigned char *r,
		       uint16_t size)
{
	struct perf_event_header h;
	struct dial9_rec_switch sw;
	struct perf_id id;

	memcpy(&h, r, sizeof(h));
	if (h.type == PERF_RECORD_LOST) {
		struct dial9_rec_lost lo;
		uint64_t v[2];	/* id, lost */

		if (size < sizeof(h) + sizeof(v))
			return 0;
		memcpy(v, r + sizeof(h), sizeof(v));
		memset(&lo, 0, sizeof(lo));
		lo.hdr.type = DIAL9_REC_LOST;
		lo.hdr.size = sizeof(lo);
		/* drain_buf() dates it just before the buffer's next record */
		lo.hdr.time_ns = d9_clock_gettime_ns();
		lo.count = v[1];
		p->lost += v[1];
		return d9_perf_push_rec(p, &lo, sizeof(lo));
	}
	/* a tracepoint's sample is always the kernel's; ours the user's */
	if (h.type == PERF_RECORD_SAMPLE &&
	    (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER)
		return perf_sample(p, r, size);
	if (h.type == PERF_RECORD_SAMPLE)
		return perf_waking(p, r, size);
	if (size < sizeof(h) + sizeof(id))
		return 0;
	memcpy(&id, r + size - sizeof(id), sizeof(id));
	if (h.type == PERF_RECORD_COMM && size >= sizeof(h) + 8 + sizeof(id)) {
		char name[17] = "";
		size_t max = size - sizeof(h) - 8 - sizeof(id);
		uint32_t who[2];	/* pid, tid: the task renamed */

		/*
		 * The body names the task renamed; the trailer the one that
		 * ran (another thread of the process, with
		 * pthread_setname_np() or /proc/PID/task/TID/comm).
		 */
		memcpy(who, r + sizeof(h), sizeof(who));
		memcpy(name, r + sizeof(h) + 8, max < 16 ? max : 16);
		return d9_perf_push_comm(p, who[0], who[1], name, id.time);
	}
	if (h.type == PERF_RECORD_FORK &&
	    size >= sizeof(h) + 16 + 8 + sizeof(id)) {
		uint32_t v[4];	/* pid, ppid, tid, ptid */
		struct pfork f;

		memcpy(v, r + sizeof(h), sizeof(v));
		memset(&f, 0, sizeof(f));
		f.hdr.type = D9_REC_PERF_FORK;
		f.hdr.size = sizeof(f);
		f.hdr.cpu = (uint16_t)id.cpu;
		memcpy(&f.hdr.time_ns, r + sizeof(h) + sizeof(v), 8);
		f.pid = v[0];
		f.tid = v[2];
		f.ptid = v[3];
		return d9_perf_push_rec(p, &f, sizeof(f));
	}
	if (h.type == PERF_RECORD_EXIT) {
		struct dial9_rec_exit ex;

		memset(&ex, 0, sizeof(ex));
		ex.hdr.type = DIAL9_REC_EXIT;
		ex.hdr.size = sizeof(ex);
		ex.hdr.cpu = (uint16_t)id.cpu;
		ex.hdr.time_ns = id.time;
		ex.tid = id.tid;
		ex.tgid = id.pid;
		if (ex.tid == ex.tgid)
			ex.hdr.flags = DIAL9_EXIT_GROUP_DEAD;
		return d9_perf_push_rec(p, &ex, sizeof(ex));
	}
	if (h.type == PERF_RECORD_SWITCH_CPU_WIDE)
		return perf_switch_whole(p, r, &h, &id);
	if (h.type != PERF_RECORD_SWITCH)
		return 0;
	memset(&sw, 0, sizeof(sw));
	sw.hdr.type = DIAL9_REC_SWITCH;
	sw.hdr.size = sizeof(sw);
	sw.hdr.cpu = (uint16_t)id.cpu;
	sw.hdr.time_ns = id.time;
	if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
		bool preempted = h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;

		sw.prev_tid = id.tid;
		sw.prev_tgid = id.pid;
		sw.next_tid = sw.next_tgid = DIAL9_TID_REDACTED;
		sw.prev_state = preempted ? DIAL9_STATE_RUNNING :
					    DIAL9_STATE_SLEEPING;
		sw.hdr.flags |= DIAL9_SWITCH_PREV_TARGET;
		if (preempted)
			sw.hdr.flags |= DIAL9_SWITCH_PREV_RUNNABLE;
	} else {
		sw.prev_tid = sw.prev_tgid = DIAL9_TID_REDACTED;
		sw.next_tid = id.tid;
		sw.next_tgid = id.pid;
		sw.hdr.flags |= DIAL9_SWITCH_NEXT_TARGET;
	}
	return d9_perf_push_rec(p, &sw, sizeof(sw));
}

/*
 * @len bytes at @at of a perf buffer's data of @size bytes (a power of
 * two) into @dst, across its end if they wrap.
 */
static void ring_read(const unsigned char *data, uint64_t size, uint64_t at,
		      void *dst, size_t len)
{
	size_t off = (size_t)(at & (size - 1));
	size_t first = size - off < len ? (size_t)(size - off) : len;

	memcpy(dst, data + off, first);
	if (first < len)
		memcpy((unsigned char *)dst + first, data, len - first);
}

/*
 * The records of @cpu's buffer up to the head it had when this read began.
 * The kernel writes a LOST record where it dropped records: it is dated
 * just before the buffer's next record (or now), so that its window is
 * from the CPU's last record before it to the first after it.
 */
static int drain_buf(struct d9_perf *p, int cpu)
{
	struct pbuf *b = &p->buf[cpu];
	unsigned char *data = (unsigned char *)b->mp + p->page;
	uint64_t size = (uint64_t)p->pages * (uint64_t)p->page;
	uint64_t head = b->head;
	uint64_t tail = b->mp->data_tail;
	_Alignas(8) unsigned char rec[512];
	size_t lost = SIZE_MAX, n;
	int ret = 0;

	while (tail < head && !ret) {
		struct perf_event_header h;
		size_t off = (size_t)(tail & (size - 1));

		ring_read(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > sizeof(rec))
			break;	/* malformed: drop the rest of this buffer */
		n = p->npend;
		/* read where it is, unless it wraps at the buffer's end */
		if (off + h.size <= size) {
			ret = perf_record(p, data + off, h.size);
		} else {
			ring_read(data, size, tail, rec, h.size);
			ret = perf_record(p, rec, h.size);
		}
		tail += h.size;
		if (ret || p->npend == n)
			continue;
		if (p->pending[n].hdr.type == DIAL9_REC_LOST) {
			p->pending[n].hdr.cpu = (uint16_t)cpu;
			if (lost == SIZE_MAX)
				lost = n;
		} else if (lost != SIZE_MAX) {
			uint64_t t = p->pending[n].hdr.time_ns;

			for (size_t i = lost; i < n; i++)
				if (p->pending[i].hdr.type == DIAL9_REC_LOST)
					p->pending[i].hdr.time_ns = t ? t - 1 : 0;
			lost = SIZE_MAX;
		}
	}
	__atomic_store_n(&b->mp->data_tail, head, __ATOMIC_RELEASE);
	return ret;
}

/* Whether @tid (@t, if known) is one of the recorder's threads. */
static bool is_recorder(const struct d9_perf *p, const struct ptask *t,
			uint32_t tid)
{
	return (t && t->recorder) ||
	       (p->ignored && p->ignored(p->ignored_ctx, tid));
}

/* @t becomes a recorder task, or stops being one (@on false: it exited). */
static void set_recorder(struct d9_perf *p, struct ptask *t, bool on)
{
	uint32_t want = on ? 0 : t->tid;

	t->recorder = on;
	for (int i = 0; i < PERF_RECORDER_TIDS; i++) {
		if (__atomic_load_n(&p->recorder_tids[i], __ATOMIC_RELAXED) ==
		    want) {
			__atomic_store_n(&p->recorder_tids[i], on ? t->tid : 0,
					 __ATOMIC_RELEASE);
			return;
		}
	}
}

/* Whether @tid is a recorder task d9_perf_pending() knows. */
static bool recorder_tid(const struct d9_perf *p, uint32_t tid)
{
	for (int i = 0; i < PERF_RECORDER_TIDS; i++)
		if (__atomic_load_n(&p->recorder_tids[i], __ATOMIC_ACQUIRE) ==
		    tid)
			return true;
	return false;
}

/*
 * A new thread: named as the thread that created it, until it renames;
 * one the recorder's threads create (io_uring's workers) is the
 * recorder's too.
 */
static void resolve_fork(struct d9_perf *p, struct dial9_rec_switch *slot)
{
	struct pfork f;
	struct dial9_rec_comm *c = (void *)slot;
	struct ptask *t, *parent;
	char name[16] = "";
	int32_t prio;

	memcpy(&f, slot, sizeof(f));
	parent = d9_perf_task_find(p, f.ptid);
	prio = parent ? parent->prio : -1;
	if (parent)
		memcpy(name, parent->comm, sizeof(name));
	else if (d9_perf_read_comm((int)f.pid, (int)f.tid, name, sizeof(name)))
		name[0] = 0;
	t = d9_perf_task_of(p, f.tid, f.pid);
	if (t) {
		/* the parent again: d9_perf_task_of() may have moved it */
		if (is_recorder(p, d9_perf_task_find(p, f.ptid), f.ptid))
			set_recorder(p, t, true);
		memcpy(t->comm, name, sizeof(t->comm));
		t->state = PT_UNSEEN;
		t->woken = f.hdr.time_ns;	/* its first wait begins */
		t->prio = prio;			/* a child has its parent's */
		/* born now: its totals start at 0 (d9_perf_final) */
		if (!t->recorder && name[0]) {
			struct d9_rec_schedstat *z = &p->sstat_next;

			memset(z, 0, sizeof(*z));
			z->hdr.type = D9_REC_SCHEDSTAT;
			z->hdr.size = sizeof(*z);
			z->hdr.cpu = f.hdr.cpu;
			z->hdr.time_ns = f.hdr.time_ns;
			z->tid = f.tid;
			z->tgid = f.pid;
			z->migrations = 0;
			z->prio = prio;
		}
	}
	memset(slot, 0, sizeof(*slot));
	/* the recorder's own: nothing in the trace, not even a name */
	if (!name[0] || (t && t->recorder)) {
		slot->hdr.type = DIAL9_REC_PAD;
		return;
	}
	c->hdr.type = DIAL9_REC_COMM;
	c->hdr.size = sizeof(*c);
	c->hdr.cpu = f.hdr.cpu;
	c->hdr.time_ns = f.hdr.time_ns;
	c->tid = f.tid;
	c->tgid = f.pid;
	memcpy(c->comm, name, sizeof(c->comm) - 1);
}

/* The prio of @tid if its exit record was read lately, else 0. */
static int32_t exited_prio(const struct d9_perf *p, uint32_t tid)
{
	for (unsigned int i = 0; i < PERF_EXITED; i++)
		if (p->exited[i].tid == tid && tid)
			return p->exited[i].prio;
	return 0;
}

/*
 * The switch-in of @t at @now: the wait it ends, if its start was seen,
 * and not before @floor; its prio as read when it was first seen (or
 * its parent's).
 */
static void resolve_in(struct d9_perf *p, struct ptask *t,
		       struct dial9_rec_switch *sw, uint64_t now,
		       uint64_t floor)
{
	uint64_t from = 0;

	d9_perf_wait_end(p, t);
	if (t->state == PT_PREEMPTED)
		from = t->since;
	else if (t->state == PT_BLOCKED && t->woken)
		/* woken before its switch-out ended: from the switch-out */
		from = t->woken > t->since ? t->woken : t->since;
	else if (t->state == PT_UNSEEN && t->woken)
		from = t->woken;
	if (from && from < floor)
		from = floor;
	if (from && now >= from) {
		sw->next_wait_ns = now - from;
		sw->hdr.flags |= DIAL9_SWITCH_WAIT_VALID;
	}
	sw->next_prio = t->prio >= 0 ? t->prio : exited_prio(p, t->tid);
	t->state = PT_RUNNING;
	t->since = t->last_in = now;
	t->woken = 0;
}

/* The switch-out of @t (ours): it waits runnable, or is blocked. */
static void resolve_out(struct d9_perf *p, struct ptask *t,
			struct dial9_rec_switch *sw)
{
	bool runnable = sw->hdr.flags & DIAL9_SWITCH_PREV_RUNNABLE;

	t->state = runnable ? PT_PREEMPTED : PT_BLOCKED;
	/* (a thread's last switch-out, after its exit record: as it was) */
	sw->prev_prio = t->prio >= 0 ? t->prio : exited_prio(p, t->tid);
	t->since = sw->hdr.time_ns;
	if (runnable)
		d9_perf_wait_at(p, t, sw->hdr.cpu);
	else
		d9_perf_wait_end(p, t);
}

/*
 * A task not ours on a switch kept whole: named (occ_next, pushed after
 * the switch) at its first, and again after PERF_OCC_RENAME_NS.
 */
static void name_other(struct d9_perf *p, uint32_t tid, uint32_t tgid,
		       const struct dial9_rec_header *h)
{
	size_t slot = (tid * 2654435761u) % PERF_OCC_NAMES;
	struct dial9_rec_comm *c;
	char name[16];

	if (!tid || p->nocc_next >= 2 ||
	    (p->occ_named[slot].tid == tid &&
	     h->time_ns - p->occ_named[slot].at < PERF_OCC_RENAME_NS))
		return;
	p->occ_named[slot].tid = tid;
	p->occ_named[slot].at = h->time_ns;
	if (d9_perf_read_comm((int)tgid, (int)tid, name, sizeof(name)))
		return;		/* gone: a tid without a name */
	c = &p->occ_next[p->nocc_next++];
	memset(c, 0, sizeof(*c));
	c->hdr.type = DIAL9_REC_COMM;
	c->hdr.size = sizeof(*c);
	c->hdr.flags = DIAL9_COMM_OCCUPANT;
	c->hdr.cpu = h->cpu;
	c->hdr.time_ns = h->time_ns;
	c->tid = tid;
	c->tgid = tgid;
	memcpy(c->comm, name, strnlen(name, sizeof(c->comm) - 1));
}

/*
 * A whole switch (a CPU-wide event): the sides that are ours are its
 * targets, the recorder's threads not among them; one of two other
 * tasks is kept only while one of ours waits on its CPU, as dial9.ko's
 * DIAL9_CFG_OCCUPANTS does.
 */
static int resolve_whole(struct d9_perf *p, struct dial9_rec_switch *sw)
{
	struct ptask *prev = sw->prev_tid ?
			     d9_perf_task_find(p, sw->prev_tid) : NULL;
	struct ptask *next = sw->next_tid ?
			     d9_perf_task_find(p, sw->next_tid) : NULL;
	bool cpu_known = sw->hdr.cpu < p->ncpu;

	if (is_recorder(p, prev, sw->prev_tid))
		prev = NULL;
	if (is_recorder(p, next, sw->next_tid))
		next = NULL;
	/* ours until its exit record (it runs on past it), or not ours: 0 */
	if (!prev)
		sw->prev_prio = exited_prio(p, sw->prev_tid);
	if (!next)
		sw->next_prio = exited_prio(p, sw->next_tid);
	if (prev) {
		sw->hdr.flags |= DIAL9_SWITCH_PREV_TARGET;
		resolve_out(p, prev, sw);
	}
	/*
	 * A CPU is idle only with nothing queued: a task woken onto an idle
	 * CPU is queued there (the wake-up's interrupt) as it leaves idle,
	 * so its wait begins no earlier than that (the kernel's run_delay
	 * does not hold the time the CPU took to wake up either).
	 */
	if (!sw->prev_tid && cpu_known)
		p->idle_out[sw->hdr.cpu] = sw->hdr.time_ns;
	if (next) {
		sw->hdr.flags |= DIAL9_SWITCH_NEXT_TARGET;
		resolve_in(p, next, sw, sw->hdr.time_ns,
			   cpu_known ? p->idle_out[sw->hdr.cpu] : 0);
	}
	if (!prev && !next && (!cpu_known || !p->waiting[sw->hdr.cpu])) {
		sw->hdr.type = DIAL9_REC_PAD;
		return 0;
	}
	if (!prev)
		name_other(p, sw->prev_tid, sw->prev_tgid, &sw->hdr);
	if (!next)
		name_other(p, sw->next_tid, sw->next_tgid, &sw->hdr);
	return 0;
}

/*
 * A thread renamed or exec'd: its prio again (`nice -n 5 CMD` is seen
 * first as nice, before its setpriority(); a child copies its parent's,
 * as read before), as /proc says it is now; kept if it is gone.
 */
static void reread_prio(struct ptask *t)
{
	struct d9_rec_schedstat ss;

	if (!t->recorder && !d9_sstat_thread((int)t->tgid, (int)t->tid, 0,
					     true, &ss) && ss.prio >= 0)
		t->prio = ss.prio;
}

/*
 * The threads' states over one read's records, in time order: the waits
 * of switch-ins, the woken task's process, new threads' names.
 */
static int resolve(struct d9_perf *p, struct dial9_rec_switch *slot)
{
	struct dial9_rec_header *h = &slot->hdr;
	struct dial9_rec_wake *wk = (void *)slot;
	struct dial9_rec_comm *c = (void *)slot;
	struct ptask *t;

	switch (h->type) {
	case D9_REC_PERF_FORK:
		resolve_fork(p, slot);
		return 0;
	case DIAL9_REC_COMM:
		t = d9_perf_task_of(p, c->tid, c->tgid);
		if (!t)
			return -ENOMEM;
		memcpy(t->comm, c->comm, sizeof(t->comm));
		reread_prio(t);
		/* io_uring's worker for a recorder thread: "iou-wrk-<tid>" */
		if (!t->recorder && !strncmp(t->comm, "iou-wrk-", 8)) {
			uint32_t of = (uint32_t)strtoul(t->comm + 8, NULL, 10);

			if (is_recorder(p, d9_perf_task_find(p, of), of))
				set_recorder(p, t, true);
		}
		if (t->recorder)
			h->type = DIAL9_REC_PAD;
		return 0;
	case DIAL9_REC_EXIT:
		t = d9_perf_task_find(p, ((struct dial9_rec_exit *)(void *)slot)->tid);
		if (t && t->recorder) {
			h->type = DIAL9_REC_PAD;
			set_recorder(p, t, false);
		} else if (t && !d9_sstat_thread((int)t->tgid, (int)t->tid,
						 h->time_ns, true,
						 &p->sstat_next)) {
			/* its last totals, if it is not reaped yet */
			p->sstat_next.hdr.cpu = h->cpu;
		}
		if (t) {
			p->exited[p->nexited % PERF_EXITED].tid = t->tid;
			p->exited[p->nexited++ % PERF_EXITED].prio =
				t->prio >= 0 ? t->prio : 0;
			d9_perf_task_forget(p, t->tid);
		}
		return 0;
	case DIAL9_REC_WAKING:
		/* the waker is ours (the sample is its), unless the recorder */
		t = d9_perf_task_find(p, wk->waker_tid);
		if (p->waking_wide && t)
			wk->hdr.flags |= DIAL9_WAKE_WAKER_TARGET;
		if (is_recorder(p, t, wk->waker_tid))
			wk->hdr.flags &= (uint16_t)~DIAL9_WAKE_WAKER_TARGET;
		t = d9_perf_task_find(p, wk->tid);
		if (t) {	/* the woken task is one of ours */
			wk->tgid = t->tgid;
			if (!t->recorder)
				wk->hdr.flags |= DIAL9_WAKE_TASK_TARGET;
			/* An older waking was published late: its wait is over. */
			if (h->time_ns >= t->last_in) {
				t->woken = h->time_ns;
				d9_perf_wait_at(p, t, (int)wk->target_cpu);
			}
		}
		if (!(wk->hdr.flags & (DIAL9_WAKE_TASK_TARGET |
				       DIAL9_WAKE_WAKER_TARGET)))
			h->type = DIAL9_REC_PAD;	/* the recorder's own */
		return 0;
	case DIAL9_REC_SWITCH:
		if (h->flags & DIAL9_SWITCH_OCCUPANTS)
			return resolve_whole(p, slot);
		if (h->flags & DIAL9_SWITCH_NEXT_TARGET) {
			t = d9_perf_task_of(p, slot->next_tid, slot->next_tgid);
			if (!t)
				return -ENOMEM;
			resolve_in(p, t, slot, h->time_ns, 0);
		} else {
			t = d9_perf_task_of(p, slot->prev_tid,
					    slot->prev_tgid);
			if (!t)
				return -ENOMEM;
			resolve_out(p, t, slot);
		}
		/* the recorder's io_uring workers (its threads: perf_push()) */
		if (t->recorder)
			h->type = DIAL9_REC_PAD;
		return 0;
	}
	return 0;
}

static int cmp_time(const void *a, const void *b)
{
	const struct dial9_rec_header *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

void d9_perf_set_ignored(struct d9_perf *p,
			 bool (*fn)(const void *ctx, uint32_t tid),
			 const void *ctx)
{
	p->ignored_ctx = ctx;
	p->ignored = fn;
}

/* Whether @tid is one of the recorder's threads, left out of the trace. */
static bool left_out(const struct d9_perf *p, uint32_t tid)
{
	return (p->ignored && p->ignored(p->ignored_ctx, tid)) ||
	       recorder_tid(p, tid);
}

/* Whether @pid is a process followed (any, past PERF_PENDING_PIDS). */
static bool pending_pid(const struct d9_perf *p, uint32_t pid)
{
	if (p->npend_pids < 0)
		return pid != 0;
	for (int i = 0; i < p->npend_pids; i++)
		if ((uint32_t)p->pend_pids[i] == pid)
			return true;
	return false;
}

/* Records d9_perf_pending() looks at per buffer before it says yes. */
#define PENDING_SCAN 64
/*
 * ... and CPU-wide records of other processes it skips: an idle host's
 * own switches would otherwise make every look a drain (the reader's
 * watermark takes them).
 */
#define PENDING_SCAN_OTHERS 16384

/*
 * Whether @cpu's buffer holds a record that is not of an ignored thread
 * (a switch or a waking done by one): the flush thread's look, beside the
 * reader, which may free what it reads meanwhile.
 */
static bool buf_pending(const struct d9_perf *p, const struct pbuf *b)
{
	const unsigned char *data = (const unsigned char *)b->mp + p->page;
	uint64_t size = (uint64_t)p->pages * (uint64_t)p->page;
	uint64_t head = __atomic_load_n(&b->mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&b->mp->data_tail, __ATOMIC_ACQUIRE);

	for (int n = 0, others = 0; tail < head; n++) {
		struct perf_event_header h;
		struct perf_id id;

		if (n - others == PENDING_SCAN || others == PENDING_SCAN_OTHERS ||
		    head - tail > size)
			return true;
		ring_read(data, size, tail, &h, sizeof(h));
		bool whole = h.type == PERF_RECORD_SWITCH_CPU_WIDE;

		if (h.size < sizeof(h) + sizeof(id) + (whole ? 8 : 0))
			return true;	/* not ours to judge: the reader's */
		if (h.type != PERF_RECORD_SWITCH && !whole &&
		    h.type != PERF_RECORD_SAMPLE)
			return true;
		/* a switch's id is at its end, a sample's right after h */
		ring_read(data, size, tail + (h.type == PERF_RECORD_SAMPLE ?
					      sizeof(h) : h.size - sizeof(id)),
			  &id, sizeof(id));
		if (whole || p->waking_wide) {
			uint32_t other[2] = { 0, 0 };	/* next_prev_pid, _tid */

			if (whole)
				ring_read(data, size, tail + sizeof(h), other,
					  sizeof(other));
			/*
			 * a switch or wake-up (CPU-wide) of other processes, or
			 * of the recorder's threads: not worth a drain; ours
			 * comes with its switch-in
			 */
			if ((pending_pid(p, id.pid) && !left_out(p, id.tid)) ||
			    (whole && pending_pid(p, other[0]) &&
			     !left_out(p, other[1])))
				return true;
			tail += h.size;
			others++;
			continue;
		}
		if (!left_out(p, id.tid))
			return true;
		tail += h.size;
	}
	return false;
}

bool d9_perf_pending(const struct d9_perf *p)
{
	for (int cpu = 0; cpu < p->ncpu; cpu++)
		if (p->buf[cpu].mp && buf_pending(p, &p->buf[cpu]))
			return true;
	return false;
}

int d9_perf_read(struct d9_perf *p,
		    int (*push)(void *ctx, const struct dial9_rec_header *rec),
		    void *ctx)
{
	int ret = 0;

	/*
	 * Every buffer's head first, then the records up to them: a record
	 * older than one read from another CPU is then rarely left for the
	 * next read (where a waking would come after the switch-in it
	 * explains, which then has no wait).
	 */
	for (int cpu = 0; cpu < p->ncpu; cpu++)
		if (p->buf[cpu].mp)
			p->buf[cpu].head = __atomic_load_n(&p->buf[cpu].mp->data_head,
							   __ATOMIC_ACQUIRE);
	for (int cpu = 0; !ret && cpu < p->ncpu; cpu++)
		if (p->buf[cpu].mp)
			ret = drain_buf(p, cpu);
	/* One merged, time-ordered batch per read, samples in their place. */
	d9_sort(p->pending, p->npend, sizeof(p->pending[0]), cmp_time);
	if (!ret && p->samples && d9_kq_sort(p->samples))
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i <= p->npend; i++) {
		const struct dial9_rec_header *s;

		while (!ret && p->samples && (s = d9_kq_peek(p->samples)) &&
		       (i == p->npend ||
			s->time_ns <= p->pending[i].hdr.time_ns)) {
			ret = push(ctx, s);
			p->samples->off += s->size;
		}
		if (i == p->npend)
			break;
		if (!ret)
			ret = resolve(p, &p->pending[i]);
		if (!ret && p->pending[i].hdr.type != DIAL9_REC_PAD)
			ret = push(ctx, &p->pending[i].hdr);
		if (!ret && p->sstat_next.hdr.type) {
			ret = push(ctx, &p->sstat_next.hdr);
			p->sstat_next.hdr.type = 0;
		}
		for (int j = 0; !ret && j < p->nocc_next; j++)
			ret = push(ctx, &p->occ_next[j].hdr);
		p->nocc_next = 0;
	}
	p->npend = 0;
	if (p->samples)
		p->samples->off = p->samples->len = 0;
	return ret;
}

int d9_perf_final(struct d9_perf *p,
		  int (*push)(void *ctx, const struct dial9_rec_header *rec),
		  void *ctx)
{
	uint64_t now = d9_clock_gettime_ns();
	int ret = 0;

	for (size_t i = 0; !ret && i < p->ntasks; i++) {
		const struct ptask *t = &p->tasks[i];
		struct d9_rec_schedstat ss;

		if (t->tid && !t->recorder &&
		    !d9_sstat_thread((int)t->tgid, (int)t->tid, now, true, &ss))
			ret = push(ctx, &ss.hdr);
	}
	return ret;
}
