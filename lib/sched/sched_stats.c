// SPDX-License-Identifier: MIT
/*
 * sched_stats.c - per-thread scheduling statistics.
 *
 * A thread is running from its switch-in to its switch-out; then runnable
 * (preempted) or blocked until its next switch-in.  A blocked thread that
 * is woken waits on the runqueue before it runs: that wait ends the gap,
 * so the blocked-to-running gap splits into blocked time and runnable time
 * by it.
 *
 * The length of a wait.  A switch-in says how long the thread waited on
 * the CPU it runs on; a wait the load balancer migrated started earlier,
 * elsewhere.  Records of dial9.ko that carry totals (totals_known) also
 * give the scheduler's own cumulative run_delay and pcount of the task,
 * so the whole wait is the difference of run_delay between the thread's
 * previous switch (out, or in plus its wait) and this switch-in, plus
 * this CPU's part, provided pcount did not move in between (no switch-in
 * of the thread was lost).  That difference is exact whatever else was
 * lost.  A thread first seen at a switch-in with pcount 0 has never run:
 * its wait is everything run_delay holds.  Otherwise, when the start of a
 * wait is not known, the wait is unknown: it is counted, never measured.
 * Without totals (older modules, perf) a wait is this CPU's part, and
 * unknown when any CPU of the source lost records since the thread's
 * previous switch.  A switch-in without a measured wait and without
 * totals, of a thread that was not running (blocked, preempted, or first
 * seen there), ends a wait of unknown length: the perf backend measures
 * the waits it can (from the switch-out, the waking or the fork) and
 * leaves the others unmeasured.
 *
 * States across a loss.  Records of one CPU were lost in the window from
 * that CPU's last event to its LOST record.  Time of a thread between
 * two of its events that may have changed state there (totals: pcount
 * moved; no totals: a loss since its previous event) is unknown from the
 * start of the first such window, up to the part of the final wait the
 * switch-in measured on its CPU.
 *
 * The one total.  With totals, a thread's runqueue wait is its newest
 * known cumulative run_delay minus the value at its first observation
 * (0 for a thread that had never run), and its count of waits likewise
 * from pcount: exact across losses and migrations.  Without totals, the
 * sum and count of the known waits.  Every column, the JSON, the sort,
 * the report and the export use these two figures.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/grow.h"
#include "sched/sched_stats.h"

void d9_sched_stats_init(struct sched_stats *st)
{
	memset(st, 0, sizeof(*st));
}

void d9_sched_stats_free(struct sched_stats *st)
{
	for (size_t i = 0; i < st->n; i++) {
		free(st->threads[i].delays);
		free(st->threads[i].delay_at);
		free(st->threads[i].culprits);
	}
	if (st->culprits)
		d9_culprits_free(st->culprits);
	free(st->culprits);
	d9_sched_stacks_free(st->stacks);
	free(st->stacks);
	d9_sched_spans_free(st->spans);
	free(st->spans);
	for (size_t i = 0; i < st->nsrcs; i++) {
		free(st->srcs[i].host);
		free(st->srcs[i].boot_id);
		free(st->srcs[i].service);
		free(st->srcs[i].backend);
		free(st->srcs[i].note);
		free(st->srcs[i].cpu_last);
	}
	free(st->threads);
	free(st->tab);
	free(st->srcs);
	free(st->losses);
	free(st->unfollowed);
	memset(st, 0, sizeof(*st));
}

int d9_sched_stats_want_culprits(struct sched_stats *st)
{
	if (!st->culprits)
		st->culprits = calloc(1, sizeof(*st->culprits));
	return st->culprits ? 0 : -ENOMEM;
}

int d9_sched_hist_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	int b = us ? 64 - __builtin_clzll(us) : 0;

	return b < SCHED_HIST_BUCKETS ? b : SCHED_HIST_BUCKETS - 1;
}

static int add_delay(struct sched_stats *st, struct sched_thread *t,
		     uint64_t ns, uint64_t at)
{
	if (d9_grow((void **)&t->delays, &t->cap, t->ndelays + 1,
		 sizeof(*t->delays)) ||
	    d9_grow((void **)&t->delay_at, &t->cap_at, t->ndelays + 1,
		 sizeof(*t->delay_at)))
		return -ENOMEM;
	t->delay_at[t->ndelays] = at;
	t->delays[t->ndelays++] = ns;
	t->delay_count++;
	t->delay_sum += ns;
	if (ns > t->delay_max || t->delay_count == 1) {
		t->delay_max = ns;
		t->delay_max_at = at;
	}
	st->hist[d9_sched_hist_bucket(ns)]++;
	return 0;
}

/*
 * The thread's switch-out after a switch-in carries the kernel's run_delay
 * with that wait counted: replace the tracepoint's measure of the wait's
 * final part (next_wait_ns, which ends later than the kernel's runqueue
 * clock) by the kernel's, so that the delays add up to the kernel's total.
 */
static void correct_delay(struct sched_stats *st, struct sched_thread *t,
			  uint64_t kernel_total)
{
	size_t i = t->pending - 1;
	uint64_t old = t->delays[i], now;
	int64_t delta = (int64_t)(kernel_total - t->cum_total);

	t->pending = 0;
	if (!delta || (delta < 0 && (uint64_t)-delta > old))
		return;

	/* The kernel's, either way (its clock can lag at either end). */
	now = delta < 0 ? old - (uint64_t)-delta : old + (uint64_t)delta;
	/*
	 * What ran meanwhile is laid over the wait as the kernel counted it
	 * where that is shorter (never longer: before it, the thread ran).
	 */
	if (delta < 0 && st->culprits && t->pending_wait)
		d9_culprits_clamp(st->culprits, t->pending_wait - 1, now);
	t->pending_wait = 0;
	t->delays[i] = now;
	t->delay_sum = t->delay_sum - old + now;
	st->hist[d9_sched_hist_bucket(old)]--;
	st->hist[d9_sched_hist_bucket(now)]++;
	if (now > t->delay_max) {
		t->delay_max = now;
		t->delay_max_at = t->delay_at[i];
		return;
	}
	if (t->delay_max != old || t->delay_max_at != t->delay_at[i])
		return;
	t->delay_max = 0;
	for (size_t j = 0; j < t->ndelays; j++) {
		if (!j || t->delays[j] > t->delay_max) {
			t->delay_max = t->delays[j];
			t->delay_max_at = t->delay_at[j];
		}
	}
}

static bool visible(uint32_t tid)
{
	/* The idle task and redacted foreign tasks are not threads to report. */
	return tid != 0 && tid != UINT32_MAX;
}

int d9_sched_stats_cpu_seen(struct sched_stats *st, uint32_t src, uint32_t cpu,
			 uint64_t now)
{
	struct sched_source *s = d9_sched_stats_src(st, src);

	if (!st->first_ns || now < st->first_ns)
		st->first_ns = now;
	if (now > st->last_ns)
		st->last_ns = now;
	if (!s)
		return -ENOMEM;
	if (!s->first_ns || now < s->first_ns)
		s->first_ns = now;
	if (cpu == UINT32_MAX || cpu > 65535)
		return 0;
	if (cpu >= s->ncpu) {
		uint32_t n = cpu + 1 > 2 * s->ncpu ? cpu + 1 : 2 * s->ncpu;
		uint64_t *nl = realloc(s->cpu_last, n * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		memset(nl + s->ncpu, 0, (n - s->ncpu) * sizeof(*nl));
		s->cpu_last = nl;
		s->ncpu = n;
	}
	if (now > s->cpu_last[cpu])
		s->cpu_last[cpu] = now;
	return 0;
}

/*
 * Where the thread's time since its previous event stops being known: the
 * start of the first loss window of its source since then, or UINT64_MAX.
 */
static uint64_t loss_from(const struct sched_stats *st,
			  const struct sched_thread *t)
{
	uint64_t from = UINT64_MAX;

	for (size_t i = t->nloss; i < st->nloss; i++)
		if (st->losses[i].src == t->src && st->losses[i].from < from)
			from = st->losses[i].from;
	return from;
}

static void piece(struct sched_result *r, int state, uint64_t start,
		  uint64_t end)
{
	/* an empty run is kept: a wake-up's flow may end at it */
	if ((end > start || (state == SCHED_RUNNING && end == start)) &&
	    r->n < 3)
		r->p[r->n++] = (struct sched_piece){ state, start, end };
}

/*
 * The gap [since, now) of a thread that was in @t->state: known up to the
 * first loss (or all of it when @lossy is false), unknown from there to
 * @tail, and runnable from @tail (the measured end of a wait).
 */
static void gap(const struct sched_stats *st, const struct sched_thread *t,
		bool lossy, uint64_t tail, uint64_t now,
		struct sched_result *r)
{
	uint64_t u = tail;

	if (lossy) {
		u = loss_from(st, t);
		u = u < t->since ? t->since : u > tail ? tail : u;
	}
	piece(r, t->state, t->since, u);
	piece(r, SCHED_UNKNOWN, u, tail);
	piece(r, SCHED_RUNNABLE, tail, now);
}

static void account(struct sched_thread *t, const struct sched_result *r)
{
	for (int i = 0; i < r->n; i++) {
		uint64_t d = r->p[i].end - r->p[i].start;

		switch (r->p[i].state) {
		case SCHED_RUNNING: t->on_cpu_ns += d; break;
		case SCHED_RUNNABLE: t->runnable_ns += d; break;
		case SCHED_BLOCKED: t->blocked_ns += d; break;
		case SCHED_UNKNOWN: t->unknown_ns += d; break;
		}
	}
}

/* The first cumulative totals of a thread: its baseline. */
static void totals_base(struct sched_thread *t, const struct sched_ev *e,
			bool in)
{
	if (t->totals || !e->totals)
		return;
	t->totals = true;
	/* A thread first seen at its first switch-in has never run. */
	if (in && !t->last && e->runq_count == 0) {
		t->base_total = 0;
		t->base_count = 0;
	} else {
		t->base_total = e->runq_total;
		t->base_count = e->runq_count;
	}
}

/*
 * The thread of a switch event, in *@tp and @r->thread: 1, or 0 for a
 * task that is not a thread to report, or -ENOMEM.
 */
static int event_thread(struct sched_stats *st, const struct sched_ev *e,
			struct sched_thread **tp, struct sched_result *r)
{
	long ti;

	if (d9_sched_stats_cpu_seen(st, e->src, e->cpu, e->ts))
		return -ENOMEM;
	if (!visible(e->tid))
		return 0;
	ti = d9_sched_stats_thread(st, e->src, e->tid, e->tgid);
	if (ti < 0)
		return -ENOMEM;
	*tp = &st->threads[ti];
	r->thread = (size_t)ti;
	return 1;
}

int d9_sched_stats_out(struct sched_stats *st, const struct sched_ev *e,
		    struct sched_result *res)
{
	struct sched_result r = { 0 };
	struct sched_thread *t;
	int ret = event_thread(st, e, &t, &r);

	if (ret <= 0)
		return ret;
	if (t->state != SCHED_NONE && e->ts >= t->since) {
		bool lossy;

		/* Running: did it switch out and in again unseen? */
		if (e->totals && t->totals)
			lossy = t->state != SCHED_RUNNING ||
				e->runq_count != t->cum_count;
		else
			lossy = t->state != SCHED_RUNNING ||
				t->nloss != st->nloss;
		gap(st, t, lossy, e->ts, e->ts, &r);
	}
	account(t, &r);
	if (e->runnable)
		t->involuntary++;
	else
		t->voluntary++;
	totals_base(t, e, false);
	if (t->pending && t->last == 2 && e->totals && t->totals &&
	    e->runq_count == t->cum_count)
		correct_delay(st, t, e->runq_total);
	t->pending = 0;
	if (e->totals) {
		t->cum_total = e->runq_total;
		t->cum_count = e->runq_count;
	}
	t->state = e->dead ? SCHED_NONE :
		   e->runnable ? SCHED_RUNNABLE : SCHED_BLOCKED;
	t->since = e->ts;
	t->last = 1;
	t->nloss = st->nloss;
	if (st->culprits) {
		struct sched_task me = { e->tid, t->tgid, t->prio };
		struct sched_task next = { e->other, e->other_tgid,
					   e->other_prio };

		for (int i = 0; i < r.n; i++)
			if (r.p[i].state == SCHED_RUNNING &&
			    d9_culprits_ran(st->culprits, e->src, e->cpu, &me,
					    r.p[i].start, r.p[i].end))
				return -ENOMEM;
		if (d9_culprits_out(st->culprits, e->src, e->cpu, e->ts,
				    &next))
			return -ENOMEM;
	}
	if (res)
		*res = r;
	return 0;
}

int d9_sched_stats_in(struct sched_stats *st, const struct sched_ev *e,
		   struct sched_result *res)
{
	uint64_t w = e->wait_known ? e->wait_ns : 0;
	struct sched_result r = { 0 };
	struct sched_thread *t;
	bool with_totals, known;
	uint64_t since;
	int before, ret = event_thread(st, e, &t, &r);

	if (ret <= 0)
		return ret;
	before = t->state;
	since = t->since;
	with_totals = e->totals && (t->totals || !t->last);

	/* How long the wait that ends here was, if that is known. */
	if (with_totals && !t->last)
		known = e->runq_count == 0;	/* it never ran before */
	else if (with_totals)
		known = e->runq_count == t->cum_count;
	else
		known = !t->last || t->nloss == st->nloss;
	if (e->wait_known) {
		r.delay = known ? 1 : -1;
		if (known && with_totals)
			r.delay_ns = e->runq_total -
				     (t->last ? t->cum_total : 0) + w;
		else if (known)
			r.delay_ns = w;
	} else if (!e->totals && t->state != SCHED_RUNNING) {
		/* A wait that nothing measured (perf: no waking seen). */
		r.delay = -1;
	}

	if (t->state != SCHED_NONE && e->ts >= t->since) {
		uint64_t span = e->ts - t->since;
		uint64_t d = r.delay > 0 ? r.delay_ns : w;

		if (d > span)
			d = span;
		if (t->state == SCHED_RUNNABLE && known)
			d = span;	/* preempted: it waited throughout */
		gap(st, t, !known || t->state == SCHED_RUNNING, e->ts - d,
		    e->ts, &r);
	} else if (t->state == SCHED_NONE) {
		/* first sight (or after a loss): it waited before this */
		uint64_t d = r.delay > 0 ? r.delay_ns : w;
		uint64_t from = st->srcs[e->src].first_ns;

		piece(&r, SCHED_RUNNABLE, e->ts - d > from ? e->ts - d : from,
		      e->ts);
	}
	account(t, &r);
	t->pending = 0;
	if (r.delay > 0 && add_delay(st, t, r.delay_ns, e->ts))
		return -ENOMEM;
	if (r.delay > 0 && with_totals)
		t->pending = t->ndelays;
	if (r.delay < 0)
		t->unknown_delays++;
	totals_base(t, e, true);
	if (e->totals) {
		t->cum_total = e->runq_total + w;
		t->cum_count = e->runq_count + (e->wait_known ? 1 : 0);
	}
	t->state = SCHED_RUNNING;
	t->since = e->ts;
	t->last = 2;
	t->nloss = st->nloss;
	t->prio = e->prio;
	if (st->culprits) {
		struct sched_task prev = { e->other, e->other_tgid,
					   e->other_prio };

		size_t n;

		t->pending_wait = 0;
		if (d9_culprits_in(st->culprits, e->src, e->cpu, e->ts, &prev))
			return -ENOMEM;
		struct sched_wait_info wi = {
			.cause = before == SCHED_RUNNABLE ? SCHED_CAUSE_PREEMPTED :
				 before == SCHED_BLOCKED ? SCHED_CAUSE_WOKEN :
				 before == SCHED_NONE && e->totals &&
				 !e->runq_count ? SCHED_CAUSE_NEW :
				 SCHED_CAUSE_UNKNOWN,
			.delay_ns = r.delay > 0 ? r.delay_ns : 0,
		};

		if (wi.cause == SCHED_CAUSE_WOKEN && t->wake_ts &&
		    t->wake_ts >= since && t->wake_ts <= e->ts) {
			wi.waker_known = true;
			wi.wake_ts = t->wake_ts;
			wi.waker_irq = t->waker_irq;
			wi.waker_tid = t->waker_tid;
			wi.waker_tgid = t->waker_tgid;
		}
		for (int i = 0; i < r.n; i++) {
			uint64_t from = r.p[i].start;

			if (r.p[i].state != SCHED_RUNNABLE)
				continue;
			/*
			 * Within the kernel's own measure of the wait, where
			 * known: the runnable time by the tracepoints' clock
			 * can be longer (a preemption the scheduler did not
			 * count as queued throughout).
			 */
			if (wi.delay_ns && r.p[i].end - from > wi.delay_ns)
				from = r.p[i].end - wi.delay_ns;
			/*
			 * Never before its waking, where the trace has it: the
			 * kernel's measure follows the runqueue clock, which
			 * can lag the tracepoints' by up to a tick where
			 * sched_clock is unstable (seen under qemu TCG), and
			 * the thread was asleep until then.
			 */
			if (wi.waker_known && t->wake_ts > from &&
			    t->wake_ts < r.p[i].end)
				from = t->wake_ts;
			/*
			 * Migrated meanwhile (its newest migration, to this
			 * CPU): before it, it waited on the CPU it came from.
			 */
			if (t->mig_ts > from && t->mig_ts < r.p[i].end &&
			    t->mig_to == e->cpu && t->mig_from != e->cpu &&
			    t->mig_from != UINT32_MAX) {
				if (d9_culprits_wait(st->culprits, e->src,
						     t->mig_from, r.thread, from,
						     t->mig_ts, &wi, true))
					return -ENOMEM;
				from = t->mig_ts;
			}
			n = st->culprits->nwaits;
			if (d9_culprits_wait(st->culprits, e->src, e->cpu,
					     r.thread, from, r.p[i].end, &wi,
					     false))
				return -ENOMEM;
			/* the piece correct_delay() may shorten */
			if (st->culprits->nwaits > n && r.p[i].end == e->ts)
				t->pending_wait = st->culprits->nwaits;
		}
	}
	if (res)
		*res = r;
	return 0;
}

void d9_sched_stats_migrate(struct sched_stats *st, uint32_t src, uint64_t ts,
			    uint32_t tid, uint32_t tgid, uint32_t from,
			    uint32_t to)
{
	long ti = visible(tid) ? d9_sched_stats_thread(st, src, tid, tgid) : -1;

	if (ti < 0)
		return;
	st->threads[ti].migrations++;
	st->threads[ti].mig_ts = ts;
	st->threads[ti].mig_from = from;
	st->threads[ti].mig_to = to;
}

void d9_sched_stats_name(struct sched_stats *st, uint32_t src, uint64_t time_ns,
		      uint32_t tid, uint32_t tgid, const char *name,
		      size_t len)
{
	long ti = visible(tid) ? d9_sched_stats_thread(st, src, tid, tgid) : -1;
	struct sched_thread *t;

	if (ti < 0)
		return;
	t = &st->threads[ti];
	if (time_ns < t->name_ns)
		return;
	if (len >= sizeof(t->name))
		len = sizeof(t->name) - 1;
	memset(t->name, 0, sizeof(t->name));
	memcpy(t->name, name, strnlen(name, len));
	t->name_ns = time_ns;
}

void d9_sched_stats_waking(struct sched_stats *st, uint32_t src, uint64_t ts,
			   uint32_t tid, uint32_t tgid, uint32_t waker_tid,
			   uint32_t waker_tgid, bool irq)
{
	long ti = visible(tid) ? d9_sched_stats_find(st, src, tid, tgid) : -1;
	struct sched_thread *t;

	if (ti < 0)
		return;		/* never switched: not a thread to report */
	t = &st->threads[ti];
	t->wake_ts = ts;
	t->waker_tid = waker_tid;
	t->waker_tgid = waker_tgid;
	t->waker_irq = irq;
}

int d9_sched_stats_lost(struct sched_stats *st, uint32_t src, uint64_t ts,
		     uint32_t cpu, uint64_t count)
{
	struct sched_source *s = d9_sched_stats_src(st, src);
	struct sched_loss *l;

	if (!s || d9_grow((void **)&st->losses, &st->loss_cap, st->nloss + 1,
		       sizeof(*l)))
		return -ENOMEM;
	l = &st->losses[st->nloss++];
	l->src = src;
	l->cpu = cpu;
	l->count = count;
	l->to = ts;
	/* From the CPU's last event before it (or the start of the source). */
	l->from = cpu < s->ncpu && s->cpu_last[cpu] ? s->cpu_last[cpu] :
		  s->first_ns ? s->first_ns : ts;
	if (l->from > ts)
		l->from = ts;
	st->lost += count;
	if (st->culprits)
		d9_culprits_lost(st->culprits, src, cpu);
	return d9_sched_stats_cpu_seen(st, src, cpu, ts);
}

int d9_sched_stats_unfollowed(struct sched_stats *st, uint32_t src,
			   uint32_t pid, uint32_t parent, bool exec)
{
	struct sched_unfollowed *u;

	for (size_t i = 0; i < st->nunfollowed; i++)
		if (st->unfollowed[i].src == src && st->unfollowed[i].pid == pid)
			return 0;
	u = realloc(st->unfollowed, (st->nunfollowed + 1) * sizeof(*u));
	if (!u)
		return -ENOMEM;
	st->unfollowed = u;
	u[st->nunfollowed++] = (struct sched_unfollowed){ src, pid, parent,
							   exec };
	return 0;
}

void d9_sched_stats_sample(struct sched_stats *st, uint32_t src,
			uint64_t time_ns, uint32_t tid, uint32_t tgid,
			uint64_t run_ns, uint64_t delay_ns, uint64_t slices,
			uint64_t migrations, int32_t prio)
{
	long ti = d9_sched_stats_thread(st, src, tid, tgid);
	struct sched_thread *t;

	d9_sched_stats_cpu_seen(st, src, UINT32_MAX, time_ns);
	if (ti < 0)
		return;
	t = &st->threads[ti];
	if (!t->ss_n++) {
		t->ss_run0 = run_ns;
		t->ss_delay0 = delay_ns;
		t->ss_slices0 = slices;
	}
	t->ss_run = run_ns;
	t->ss_delay = delay_ns;
	t->ss_slices = slices;
	if (migrations != UINT64_MAX) {
		if (t->ss_mig0 == UINT64_MAX)
			t->ss_mig0 = migrations;
		t->ss_mig = migrations;
	}
	/* the prio the kernel shows, where the switches carry none */
	if (prio >= 0 && t->prio <= 0)
		t->prio = prio;
}

void d9_sched_stats_exit(struct sched_stats *st, uint32_t src, uint64_t ts,
			 uint32_t tid, uint32_t tgid)
{
	long ti = d9_sched_stats_find(st, src, tid, tgid);

	if (ti >= 0)
		st->threads[ti].exit_ns = ts;
}

void d9_sched_stats_close(struct sched_stats *st, size_t i, uint64_t end_ns,
		       struct sched_result *res)
{
	struct sched_thread *t = &st->threads[i];
	struct sched_result r = { .thread = i };

	/* gone at its exit: it did not run on to the end of the trace */
	if (t->exit_ns && t->exit_ns >= t->since && t->exit_ns < end_ns)
		end_ns = t->exit_ns;
	if (t->state != SCHED_NONE && end_ns >= t->since)
		gap(st, t, true, end_ns, end_ns, &r);
	account(t, &r);
	t->state = SCHED_NONE;
	t->since = end_ns;
	if (res)
		*res = r;
}

void d9_sched_stats_finish(struct sched_stats *st, uint64_t end_ns)
{
	for (size_t i = 0; i < st->n; i++) {
		struct sched_thread *t = &st->threads[i];

		d9_sched_stats_close(st, i, end_ns, NULL);
		if (t->totals) {
			t->runq_total_ns = t->cum_total >= t->base_total ?
					   t->cum_total - t->base_total : 0;
			t->waits = (uint32_t)(t->cum_count - t->base_count);
		} else if (t->ss_n > 1 && !t->delay_count && !t->voluntary &&
			   !t->involuntary) {
			/* Only samples: totals between the first and the last. */
			t->sampled = true;
			t->on_cpu_ns = t->ss_run - t->ss_run0;
			t->runnable_ns = t->ss_delay - t->ss_delay0;
			t->runq_total_ns = t->runnable_ns;
			t->waits = t->ss_slices - t->ss_slices0;
		} else if (t->ss_n > 1 && t->ss_delay >= t->ss_delay0 &&
			   t->ss_slices >= t->ss_slices0) {
			/*
			 * Switches without totals (perf) and the kernel's
			 * totals at both ends (d9_perf_final): the total is
			 * the kernel's; the waits of unknown length are in
			 * it, not in the per-wait figures.
			 */
			t->sstat_totals = true;
			t->runq_total_ns = t->ss_delay - t->ss_delay0;
			t->waits = t->ss_slices - t->ss_slices0;
			/* no migration records (perf): the kernel's count */
			if (!t->migrations && t->ss_mig0 != UINT64_MAX &&
			    t->ss_mig >= t->ss_mig0)
				t->migrations = t->ss_mig - t->ss_mig0;
		} else {
			t->runq_total_ns = t->delay_sum;
			t->waits = t->delay_count;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t d9_sched_thread_percentile(struct sched_thread *t, double pct)
{
	size_t i;

	if (!t->ndelays)
		return 0;
	d9_sort(t->delays, t->ndelays, sizeof(uint64_t), cmp_u64);
	/* Nearest rank. */
	i = (size_t)(pct / 100.0 * (double)t->ndelays + 0.999999);
	if (i == 0)
		i = 1;
	if (i > t->ndelays)
		i = t->ndelays;
	return t->delays[i - 1];
}

uint64_t d9_wall_ns(uint64_t sync_mono, uint64_t sync_real, uint64_t ts)
{
	int64_t d, wall;

	/* Hostile clock syncs: no wall clock rather than an overflow. */
	if (__builtin_sub_overflow((int64_t)ts, (int64_t)sync_mono, &d) ||
	    __builtin_add_overflow((int64_t)sync_real, d, &wall))
		return 0;
	return wall > 0 ? (uint64_t)wall : 0;
}

uint64_t d9_sched_wall_ns(const struct sched_stats *st, uint32_t src,
			  uint64_t ts)
{
	const struct sched_source *s;

	if (src >= st->nsrcs || !st->srcs[src].synced)
		return 0;
	s = &st->srcs[src];
	return d9_wall_ns(s->sync_mono, s->sync_real, ts);
}

void d9_sched_utc(uint64_t wall_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(wall_ns / 1000000000ull);
	struct tm tm;
	char d[32];

	if (!wall_ns || !gmtime_r(&secs, &tm) ||
	    !strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm)) {
		if (len)
			*buf = 0;
		return;
	}
	snprintf(buf, len, "%s.%06uZ", d,
		 (unsigned int)(wall_ns / 1000 % 1000000));
}

bool d9_sched_thread_active(const struct sched_thread *t)
{
	return t->delay_count || t->voluntary || t->involuntary ||
	       t->sampled || t->unknown_delays || t->waits;
}
