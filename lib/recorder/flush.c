// SPDX-License-Identifier: MIT
/*
 * flush.c - the flush thread, the only writer of segments.
 *
 * Each tick (flush_interval_ms) the flush thread drains the collector
 * into the active segment. The drain epoch has two steps: step one
 * bumps the epoch, so a thread that records hands over its own buffer;
 * step two, a tick later, takes the buffers of the threads that stayed
 * idle. A time rotation runs both steps first, so that events land in
 * the segment of their time.  Scheduler records and trigger-mode dumps
 * are taken here too.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "format/wire.h"

#include "recorder/recorder.h"

/* ---- the flush thread ---- */

/* Write the full batches waiting in the collector; how many. */
static unsigned int drain_collector(struct recorder *r)
{
	struct d9_batch *b[64];
	unsigned int n, total = 0;

	do {
		for (n = 0; n < 64; n++) {
			b[n] = d9_queue_pop(&r->coll.full);
			if (!b[n])
				break;
		}
		if (n) {
			d9_segw_write(r->segw, b, n);
			for (unsigned int i = 0; i < n; i++)
				d9_batch_put(&r->coll, b[i]);
		}
		total += n;
	} while (n == 64);
	return total;
}

/* Write a dial9.lost event when events were lost since the last one. */
static void report_losses(struct recorder *r)
{
	static const struct dial9_field f[] = { { "events", DIAL9_U64 },
						{ "batches", DIAL9_U64 },
						{ "invalid", DIAL9_U64 } };
	struct dial9_stats st = { 0 };
	uint64_t lost, batches, invalid;
	struct dial9_value v[3];
	const void *data;
	size_t len;

	d9_segw_stats(r->segw, &st);
	lost = atomic_load(&r->coll.lost_events) + st.events_lost;
	if (lost == r->lost_reported || st.health != DIAL9_HEALTH_OK)
		return;
	batches = atomic_load(&r->coll.lost_batches) + st.batches_lost;
	invalid = atomic_load(&r->coll.invalid_events);
	v[0] = dial9_u64(lost - r->lost_reported);
	v[1] = dial9_u64(batches);
	v[2] = dial9_u64(invalid - r->invalid_reported);
	dial9_encoder_clear(r->enc);
	if (dial9_encoder_begin_stream(r->enc) ||
	    dial9_encoder_schema(r->enc, 1, DIAL9_KIND_INTERNAL, "dial9.lost", 3,
				 f) ||
	    dial9_encoder_event(r->enc, 1, d9_now(), v) ||
	    dial9_encoder_end_stream(r->enc))
		return;
	data = dial9_encoder_data(r->enc, &len);
	d9_segw_write_raw(r->segw, data, len);
	r->lost_reported = lost;
	r->invalid_reported = invalid;
}

/* A name kept (names.c) into the stream, as sched.thread_name. */
static int names_add(void *ctx, uint64_t ts, const struct d9_name *t)
{
	struct recorder *r = ctx;

	return d9_ktrace_thread_name(&r->kt, ts, t->tid, t->tgid, t->comm,
				     sizeof(t->comm));
}

/*
 * The executable mappings of the recorded processes (this one and
 * sched_pids), which the stacks' addresses are read against
 * (sched.mapping events, docs/format.md).  A process that is gone is
 * left out.  Those of processes seen later, and again after an exec or
 * for a frame outside them, follow with a stack or sample
 * (kmaps_follow.c); each new segment gets all of them again
 * (d9_kstream_maps_again()).
 */
static void write_mappings(struct recorder *r)
{
	uint64_t ts = d9_clock_gettime_ns();

	r->maps_due = false;
	if (!(r->cfg.sched_flags & DIAL9_SCHED_NO_SELF))
		d9_kmaps_follow_read(&r->maps, getpid(), ts, d9_kstream_put_mapping, r);
	for (uint32_t i = 0; i < r->cfg.sched_npids; i++)
		d9_kmaps_follow_read(&r->maps, r->cfg.sched_pids[i], ts,
				     d9_kstream_put_mapping, r);
}

/*
 * At the end, after the last drain: each ring's counters as a sched.ring
 * event, so that a reader checks, per CPU, that the records in the trace
 * and its sched.lost counts add up to what the probes tried to write.
 */
static void write_ring_counts(struct recorder *r)
{
	uint64_t now = d9_clock_gettime_ns();

	for (unsigned int cpu = 0; cpu < d9_ksched_ncpu(r->ks); cpu++) {
		uint64_t written, lost, filtered;

		if (!d9_ksched_ring_counts(r->ks, cpu, &written, &lost,
					   &filtered) &&
		    d9_ktrace_ring(&r->kt, now, cpu, written, lost, filtered))
			r->sched_error = -ENOMEM;
	}
}

/*
 * The scheduler records read so far into the trace, as they were written
 * (kstream.c), with @horizon (lowered to what the reader is sure to have
 * read; UINT64_MAX: the last take); returns how many events that made.
 */
static uint64_t ksched_flush(struct recorder *r, uint64_t horizon)
{
	uint64_t before = r->sched_events;
	bool final = horizon == UINT64_MAX;
	int ret;

	if (!r->ks)
		return 0;
	r->last_ktake = d9_clock_gettime_ns();
	r->ktaken_bytes = d9_ksched_inbox_bytes(r->ks);
	/* a stream's size at most: buffer_bytes, or a segment's */
	r->kt_batch_bytes = r->cfg.buffer_bytes < r->cfg.max_file_bytes ?
			    r->cfg.buffer_bytes : r->cfg.max_file_bytes;
	if (r->maps_due)
		write_mappings(r);
	/* a new segment: the mappings held again, before the records of
	 * this take are seen (an exec among them forgets those before it) */
	d9_kstream_maps_again(r);
	ret = d9_ksched_take(r->ks, &horizon, final, d9_kstream_chunk, r);
	/* what was taken before an error is whole and goes in */
	d9_kstream_end(r, ret ? 0 : horizon);
	if (!ret && !final && horizon > r->maps_floor)
		r->maps_floor = horizon;
	if (ret >= 0 && r->names_seg != d9_segw_index(r->segw)) {
		/* a new segment: every thread's name again, so that it is
		 * read alone with names (names.c) */
		r->names_seg = d9_segw_index(r->segw);
		d9_names_each(&r->names, d9_clock_gettime_ns(), names_add, r);
	}
	if (ret < 0) {
		d9_log("scheduler events stopped: %s", dial9_strerror(ret));
		r->sched_error = ret;
		dial9_ksched_close(r->ks);
		r->ks = NULL;
	} else if (final) {
		write_ring_counts(r);
	}
	d9_kstream_encoded(r);
	return r->sched_events - before;
}

/*
 * Whether the kernel's records are due for a take at @now: every
 * KSCHED_TAKE_NS once the reader holds KSCHED_TAKE_MIN_BYTES (else every
 * KSCHED_TAKE_MAX_NS; without a reader, schedstat's samples, every
 * KSCHED_TAKE_NS), or at once when an inbox is full.
 */
static bool ktake_due(const struct recorder *r, uint64_t now)
{
	/* (a flush request may have taken them after @now was read) */
	uint64_t since = now > r->last_ktake ? now - r->last_ktake : 0;

	if (d9_ksched_inbox_full(r->ks))
		return true;
	if (since < KSCHED_TAKE_NS)
		return false;
	return !r->ks->reader || since >= KSCHED_TAKE_MAX_NS ||
	       d9_ksched_inbox_bytes(r->ks) - r->ktaken_bytes >=
	       KSCHED_TAKE_MIN_BYTES;
}

/* Open the scheduler source the configuration asks for. */
void d9_flush_ksched_open(struct recorder *r)
{
	struct dial9_ksched_opts o = {
		.ring_size = r->cfg.sched_ring_bytes,
		.system_wide = r->cfg.sched_flags & DIAL9_SCHED_SYSTEM_WIDE,
		.self = !(r->cfg.sched_flags & DIAL9_SCHED_NO_SELF),
		.children = r->cfg.sched_flags & DIAL9_SCHED_CHILDREN,
		.pids = r->cfg.sched_pids,
		.npids = r->cfg.sched_npids,
		.reader_thread = true,
		.reader_prio = r->cfg.sched_reader_prio,
	};
	unsigned int skip = 0;
	char why[512] = "";

	if (r->cfg.sched_flags & DIAL9_SCHED_STACKS)
		skip |= D9_KSCHED_STACKS;
	if (r->cfg.sched_flags & DIAL9_SCHED_NO_OCCUPANTS)
		skip |= D9_KSCHED_NO_OCCUPANTS;

	if (r->cfg.sched == DIAL9_SCHED_OFF) {
		snprintf(r->sched_note, sizeof(r->sched_note), "turned off");
		return;
	}
	if (r->cfg.sched == DIAL9_SCHED_PERF)
		skip |= D9_KSCHED_NO_MODULE;
	else if (r->cfg.sched == DIAL9_SCHED_SCHEDSTAT)
		skip |= D9_KSCHED_NO_MODULE | D9_KSCHED_NO_PERF;
	r->sched_error = d9_ksched_open(&r->ks, &o, skip, r->cfg.cpu_sample_hz,
				       why, sizeof(why));
	if (r->sched_error) {
		d9_log("no scheduler events: %s", why);
		memcpy(r->sched_note, why, sizeof(r->sched_note) - 1);
		return;
	}
	snprintf(r->sched_backend, sizeof(r->sched_backend), "%s",
		 dial9_ksched_backend(r->ks));
	if (d9_ksched_samples(r->ks))
		r->kt.sample_period_ns = 1000000000ull / r->cfg.cpu_sample_hz;
	r->sched_error = d9_kstream_init(r, r->sched_backend,
					 r->kt.sample_period_ns);
	d9_ksched_set_seen(r->ks, d9_kstream_seen, r);
	if (!r->sched_error && d9_ktrace_begin(&r->kt))
		r->sched_error = -ENOMEM;
	if (r->sched_error) {
		d9_log("no scheduler events: %s",
		       dial9_strerror(r->sched_error));
		dial9_ksched_close(r->ks);
		r->ks = NULL;
		return;
	}
	/* what the addresses of stacks and samples are read against */
	r->maps_due = ((skip & D9_KSCHED_STACKS) &&
		       !strcmp(r->sched_backend, "dial9.ko")) ||
		      d9_ksched_samples(r->ks);
	r->maps_on = r->maps_due;
	strncat(r->sched_note, dial9_ksched_fallback_reason(r->ks),
		sizeof(r->sched_note) - 1);
	if (r->sched_note[0])
		d9_log("scheduler events from %s%s: %s", r->sched_backend,
		       strcmp(r->sched_backend, "dial9.ko") ? ", not dial9.ko" :
		       "", r->sched_note);
}

/* Keep a few pre-faulted buffers ready so threads need not map any. */
void d9_flush_top_up_pool(struct recorder *r)
{
	size_t want = atomic_load(&d9_rs.nthreads) + 2, have;

	if (want > 32)
		want = 32;
	have = atomic_load(&r->coll.free.head) - atomic_load(&r->coll.free.tail);
	while (have++ < want) {
		struct d9_batch *b = d9_batch_alloc(r->coll.buffer_bytes);

		if (!b || !d9_queue_push(&r->coll.free, b)) {
			d9_batch_free(b);
			break;
		}
	}
}

/*
 * A trigger (under r->mu): a new dump unless one was asked for less than
 * dump_debounce_ms ago; returns the dump request it is part of, and
 * whether it was folded into an earlier one.
 */
uint64_t d9_flush_trigger_locked(struct recorder *r, const char *reason,
				 bool *coalesced)
{
	uint64_t now = d9_clock_gettime_ns();

	if (r->any_trigger &&
	    now - r->last_trigger_ns < (uint64_t)r->cfg.dump_debounce_ms * 1000000ull) {
		r->dumps_coalesced++;
		if (coalesced)
			*coalesced = true;
		return r->dump_req;
	}
	r->any_trigger = true;
	r->last_trigger_ns = now;
	snprintf(r->dump_reason, sizeof(r->dump_reason), "%s", reason ? reason : "");
	if (coalesced)
		*coalesced = false;
	return ++r->dump_req;
}

/* The active segment is sealed: the sealed segments not dumped yet go
 * through the pipeline, protected from eviction until they are through. */
static void checkpoint(struct recorder *r, const char *reason)
{
	struct dial9_dump_receipt rc;
	struct d9_ckpt_seg *segs;
	struct d9_dump *d;
	size_t n;

	if (d9_segw_checkpoint(r->segw, &segs, &n)) {
		d9_log("dump: no memory for the checkpoint");
		return;
	}
	d = d9_worker_dump(r->worker, segs, n, reason, d9_clock_gettime_ns());
	if (!d) {
		for (size_t i = 0; i < n; i++)
			if (segs[i].fd >= 0)
				close(segs[i].fd);
		free(segs);
		d9_log("dump: no memory to start it");
		return;
	}
	free(segs);
	pthread_mutex_lock(&r->mu);
	d9_dump_put(r->last_dump);
	r->last_dump = d;
	r->dumps++;
	d9_dump_receipt(d, &rc);
	memcpy(r->last_dump_id, rc.dump_id, sizeof(r->last_dump_id));
	pthread_mutex_unlock(&r->mu);
}

/* Take every thread's buffer (retrying busy ones briefly), write all. */
static void drain_all(struct recorder *r)
{
	for (int tries = 0; tries < 200; tries++) {
		unsigned int busy;

		atomic_fetch_add(&d9_rs.epoch, 1);
		busy = d9_drain_idle_threads(true);
		drain_collector(r);
		if (!busy)
			break;
		{
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
}

/* A recorder thread leaves itself out of the scheduler records. */
void d9_flush_ignore_me(void *arg)
{
	struct recorder *r = arg;

	if (r->ks)
		dial9_ksched_ignore_thread(r->ks, 0);
}

void *d9_flush_main(void *arg)
{
	struct recorder *r = arg;
	uint64_t now = d9_clock_gettime_ns();
	uint64_t next_drain = now + DRAIN_INTERVAL_NS;
	uint64_t next_refine = now + REFINE_INTERVAL_NS;
	uint64_t rotation_ns = (uint64_t)r->cfg.rotation_secs * 1000000000ull;
	uint64_t wait_ms = r->cfg.flush_interval_ms, next_kick = 0;
	bool step_two = false, rotate_after = false, kbusy = false;

	d9_thread_background();	/* its io_uring workers inherit it */
	if (r->cfg.flush_nice > 0)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
			    r->cfg.flush_nice);
	pthread_setname_np(pthread_self(), "dial9-flush");
	d9_flush_ignore_me(r);	/* the recorder does not record itself */
	r->names_seg = d9_segw_index(r->segw);	/* the first has the COMMs */
	r->maps_seg = r->names_seg;	/* and the mappings read at start */
	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		uint64_t req = r->flush_req, dreq = r->dump_req;
		bool rot = r->rotate_req, dump, busy;
		char reason[256];
		struct timespec ts;

		if (req == r->flush_done && dreq == r->dump_done) {
			/* A long sleep: a handed-over batch ends it. */
			bool nap = wait_ms > r->cfg.flush_interval_ms;

			if (nap && !d9_collector_nap(&r->coll)) {
				nap = false;
				wait_ms = r->cfg.flush_interval_ms;
			}
			ts = d9_deadline_ms(wait_ms);
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
			if (nap)
				d9_collector_unnap(&r->coll);
			if (r->stop)
				break;
			req = r->flush_req;
			rot = r->rotate_req;
			dreq = r->dump_req;
		}
		r->rotate_req = false;
		if (atomic_exchange(&d9_dump_signal, 0) &&
		    r->cfg.mode == DIAL9_MODE_TRIGGER)
			dreq = d9_flush_trigger_locked(r, "signal", NULL);
		dump = dreq != r->dump_done;
		memcpy(reason, r->dump_reason, sizeof(reason));
		pthread_mutex_unlock(&r->mu);

		d9_segw_tick(r->segw);
		now = d9_clock_gettime_ns();
		busy = req != r->flush_done || dump || rot;
		/* Records below the rings' watermark: read them now and then. */
		if (r->ks && now >= next_kick && dial9_ksched_pending(r->ks)) {
			dial9_ksched_sync(r->ks, 100);
			next_kick = now + KSCHED_KICK_NS;
		}
		if (req != r->flush_done || dump) {
			/* dial9_flush()/dial9_rotate()/a dump: both steps */
			drain_all(r);
			if (r->ks)
				dial9_ksched_sync(r->ks, 1000);
			ksched_flush(r, d9_clock_gettime_ns());
			report_losses(r);
			d9_segw_settle(r->segw);
			if (rot || dump)
				d9_segw_rotate(r->segw);
			if (dump)
				checkpoint(r, reason);
			step_two = false;
			rotate_after = false;
		} else if (step_two) {
			d9_drain_idle_threads(false);
			step_two = false;
		}
		busy |= drain_collector(r) > 0;
		if (rotate_after && !step_two && r->ks)
			dial9_ksched_sync(r->ks, 1000);	/* into this segment */
		if (r->ks && ((rotate_after && !step_two) || ktake_due(r, now)))
			kbusy = ksched_flush(r, rotate_after && !step_two ? now :
					     now - KSCHED_HORIZON_NS) > 0;
		report_losses(r);
		if (rotate_after && !step_two) {
			/*
			 * Still due: a segment that filled up since step one
			 * was rotated for its size, and its successor, just
			 * opened, is not cut again (a tiny second segment).
			 */
			if (d9_segw_rotation_due(r->segw, now))
				d9_segw_rotate(r->segw);
			rotate_after = false;
		}
		if (!step_two && (now >= next_drain ||
				  d9_segw_rotation_due(r->segw, now))) {
			/* step one of a drain epoch */
			rotate_after = d9_segw_rotation_due(r->segw, now);
			atomic_fetch_add(&d9_rs.epoch, 1);
			step_two = true;
			next_drain = now + (rotation_ns < DRAIN_INTERVAL_NS ?
						    rotation_ns :
						    DRAIN_INTERVAL_NS);
		}
		if (now >= next_refine) {
			d9_clock_refine();
			next_refine = now + REFINE_INTERVAL_NS;
		}
		d9_flush_top_up_pool(r);
		/*
		 * Idle (nothing drained, no request): tick less and less
		 * often, down to every 2 s (the drain epoch, rotations and
		 * the clock need no more); any work brings the period back.
		 * The kernel's records alone need no more than a tick per
		 * take (KSCHED_TAKE_NS): the reader thread keeps the rings
		 * empty meanwhile, and each tick is a wake-up of a recorder
		 * thread that may preempt the workload.
		 */
		if (busy || rotate_after)
			wait_ms = r->cfg.flush_interval_ms;
		else if (wait_ms < IDLE_TICK_MS)
			wait_ms = wait_ms * 2 < IDLE_TICK_MS ? wait_ms * 2 :
							      IDLE_TICK_MS;
		if (kbusy && !busy && !rotate_after &&
		    wait_ms > KSCHED_TAKE_NS / D9_NS_PER_MS)
			wait_ms = KSCHED_TAKE_NS / D9_NS_PER_MS;

		pthread_mutex_lock(&r->mu);
		if (req != r->flush_done || dump) {
			r->flush_done = req;
			r->dump_done = dreq;
			pthread_cond_broadcast(&r->cv);
		}
	}
	pthread_mutex_unlock(&r->mu);
	drain_all(r);
	ksched_flush(r, UINT64_MAX);
	report_losses(r);
	atomic_store(&r->cpu_at_exit, d9_cost_threads(false));
	return NULL;
}
