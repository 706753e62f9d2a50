// SPDX-License-Identifier: MIT
/*
 * ktrace.c - the kernel's scheduler records as trace events.
 *
 * Each flush writes one stream with the sched.* schemas it uses; a reader
 * finds them by name (docs/format.md lists their fields).  Task ids of
 * other processes that the kernel redacted stay 4294967295.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <linux/dial9.h>

#include "dial9.h"
#include "ksched/ksched.h"
#include "common/text.h"
#include "format/kschema.h"
#include "format/wire.h"

int d9_ktrace_begin(struct d9_ktrace *kt)
{
	kt->defined = 0;
	kt->nevents = 0;
	dial9_encoder_clear(kt->enc);
	return dial9_encoder_begin_stream(kt->enc);
}

/* define()'s first event of @type in the stream: its schema. */
static __attribute__((noinline)) int define_schema(struct d9_ktrace *kt,
						   unsigned int type)
{
	int ret = dial9_encoder_schema(kt->enc, type, DIAL9_KIND_INSTANT,
				       d9_kschemas[type].name, d9_kschemas[type].n,
				       d9_kschemas[type].f);

	if (!ret)
		kt->defined |= 1u << type;
	return ret;
}

/*
 * The schema of @type, written before its first event of the stream.
 * Inline: every event asks.
 */
static inline int define(struct d9_ktrace *kt, unsigned int type)
{
	if (kt->defined & (1u << type))
		return 0;
	return define_schema(kt, type);
}

/*
 * An event of the U64 and BOOL fields in @v (a BOOL's as 0 or 1): the
 * encoder's fast path, which the cost per context switch depends on
 * (docs/benchmarks.md).
 */
static inline __attribute__((always_inline)) int
emit(struct d9_ktrace *kt, unsigned int type, uint64_t ts, const uint64_t *v)
{
	int ret = define(kt, type);

	if (!ret)
		ret = d9_encoder_event_u64(kt->enc, type, ts, v);
	if (!ret)
		kt->nevents++;
	return ret;
}

/* An event of @type with the values in @v, of any field types. */
static int emit_values(struct d9_ktrace *kt, unsigned int type, uint64_t ts,
		       const struct dial9_value *v)
{
	int ret = define(kt, type);

	if (!ret)
		ret = dial9_encoder_event(kt->enc, type, ts, v);
	if (!ret)
		kt->nevents++;
	return ret;
}

/* A kernel prio as a field: never negative (0..139). */
static inline uint64_t prio(int32_t p)
{
	return p > 0 ? (uint64_t)p : 0;
}

/* A switch with no recorded side (DIAL9_CFG_OCCUPANTS). */
static int cpu_switch(struct d9_ktrace *kt, const struct dial9_rec_header *h)
{
	const struct dial9_rec_switch *sw = (const void *)h;
	uint64_t v[7];

	v[0] = h->cpu;
	v[1] = sw->prev_tid;
	v[2] = sw->prev_tgid;
	v[3] = prio(sw->prev_prio);
	v[4] = sw->next_tid;
	v[5] = sw->next_tgid;
	v[6] = prio(sw->next_prio);
	return emit(kt, D9_KS_CPU_SWITCH, h->time_ns, v);
}

/* A STACK or SAMPLE record (the same layout) as sched.stack or .sample. */
static int add_stack(struct d9_ktrace *kt, const struct dial9_rec_header *h)
{
	const struct dial9_rec_stack *st = (const void *)h;
	uint64_t frames[DIAL9_STACK_MAX_DEPTH];
	bool sample = h->type == DIAL9_REC_SAMPLE;
	struct dial9_value v[8];
	uint32_t nr;

	if (h->size < sizeof(*st))
		return -EPROTO;
	nr = st->nr;
	if (nr > DIAL9_STACK_MAX_DEPTH ||
	    h->size < sizeof(*st) + nr * sizeof(st->ips[0]))
		return -EPROTO;
	for (uint32_t i = 0; i < nr; i++)
		frames[i] = htole64(st->ips[i]);
	v[0] = dial9_u64(st->tid);
	v[1] = dial9_u64(st->tgid);
	v[2] = dial9_u64(h->cpu);
	v[3].type = DIAL9_BOOL;
	v[3].b = h->flags & DIAL9_STACK_TRUNCATED;
	v[4].type = DIAL9_BYTES;
	v[4].str.ptr = frames;
	v[4].str.len = nr * sizeof(frames[0]);
	v[5].type = DIAL9_BOOL;
	v[5].b = h->flags & (sample ? DIAL9_SAMPLE_KERNEL : DIAL9_STACK_WAKER);
	v[6] = dial9_u64(kt->sample_period_ns);
	v[7] = dial9_u64(st->reserved);
	return emit_values(kt, sample ? D9_KS_SAMPLE : D9_KS_STACK, h->time_ns, v);
}

int d9_ktrace_thread_name(struct d9_ktrace *kt, uint64_t ts, uint32_t tid,
			  uint32_t tgid, const char *comm, size_t len)
{
	struct dial9_value v[3];

	v[0] = dial9_u64(tid);
	v[1] = dial9_u64(tgid);
	v[2].type = DIAL9_ISTR;
	v[2].str.ptr = comm;
	v[2].str.len = d9_utf8_cut(comm, strnlen(comm, len));
	return emit_values(kt, D9_KS_THREAD_NAME, ts, v);
}

int d9_ktrace_mapping(struct d9_ktrace *kt, uint64_t ts,
		      const struct d9_mapping *m)
{
	struct dial9_value v[6];

	v[0] = dial9_u64(m->pid);
	v[1] = dial9_u64(m->start);
	v[2] = dial9_u64(m->end);
	v[3] = dial9_u64(m->offset);
	v[4].type = DIAL9_STR;
	v[4].str.ptr = m->path;
	v[4].str.len = strlen(m->path);
	v[5].type = DIAL9_BYTES;
	v[5].str.ptr = m->build_id;
	v[5].str.len = m->build_id_len;
	return emit_values(kt, D9_KS_MAPPING, ts, v);
}

int d9_ktrace_ring(struct d9_ktrace *kt, uint64_t ts, unsigned int cpu,
		   uint64_t written, uint64_t lost, uint64_t filtered)
{
	const uint64_t v[4] = { cpu, written, lost, filtered };

	return emit(kt, D9_KS_RING, ts, v);
}

void d9_ktrace_count(struct d9_ktrace *kt, const struct dial9_rec_header *h)
{
	const struct dial9_rec_stack *st = (const void *)h;

	switch (h->type) {
	case DIAL9_REC_LOST:
		if (h->size >= sizeof(struct dial9_rec_lost))
			kt->lost += ((const struct dial9_rec_lost *)
				     (const void *)h)->count;
		break;
	case DIAL9_REC_UNFOLLOWED:
		if (h->size >= sizeof(struct dial9_rec_unfollowed))
			kt->unfollowed++;
		break;
	case DIAL9_REC_STACK:
	case DIAL9_REC_SAMPLE:
		/* as add_stack() takes it: a whole stack of 32 at most */
		if (h->size < sizeof(*st) || st->nr > DIAL9_STACK_MAX_DEPTH ||
		    h->size < sizeof(*st) + st->nr * sizeof(st->ips[0]))
			break;
		if (h->type == DIAL9_REC_STACK) {
			kt->stacks++;
		} else {
			kt->samples++;
			kt->samples_missed += st->reserved;
		}
		break;
	}
}

int d9_ktrace_add(struct d9_ktrace *kt, const struct dial9_rec_header *h)
{
	const struct dial9_rec_switch *sw = (const void *)h;
	const struct dial9_rec_wake *wk = (const void *)h;
	const struct dial9_rec_migrate *mg = (const void *)h;
	const struct dial9_rec_exit *ex = (const void *)h;
	const struct dial9_rec_lost *lo = (const void *)h;
	const struct dial9_rec_comm *cm = (const void *)h;
	const struct dial9_rec_unfollowed *uf = (const void *)h;
	uint64_t v[12];
	bool totals;
	int ret = 0;

	kt->encoded++;
	d9_ktrace_count(kt, h);
	switch (h->type) {
	case DIAL9_REC_SWITCH:
		/* An older module's record ends before the totals. */
		if (h->size < DIAL9_REC_SWITCH_SIZE_VER0)
			return -EPROTO;
		totals = h->size >= sizeof(*sw) &&
			 (h->flags & DIAL9_SWITCH_TOTALS);
		if ((h->flags & DIAL9_SWITCH_OCCUPANTS) &&
		    !(kt->defined & (1u << D9_KS_OCCUPANTS))) {
			v[0] = h->cpu;
			ret = emit(kt, D9_KS_OCCUPANTS, h->time_ns, v);
		}
		if (!ret && !(h->flags & (DIAL9_SWITCH_PREV_TARGET |
					  DIAL9_SWITCH_NEXT_TARGET)))
			return cpu_switch(kt, h);
		/* Only the recorded tasks get switch events of their own. */
		if (!ret && (h->flags & DIAL9_SWITCH_PREV_TARGET) &&
		    sw->prev_tid && sw->prev_tid != DIAL9_TID_REDACTED) {
			v[0] = sw->prev_tid;
			v[1] = sw->prev_tgid;
			v[2] = h->cpu;
			v[3] = sw->prev_state;
			v[4] = !!(h->flags & DIAL9_SWITCH_PREV_RUNNABLE);
			v[5] = sw->next_tid;
			v[6] = totals ? sw->prev_run_delay_ns : 0;
			v[7] = totals ? sw->prev_pcount : 0;
			v[8] = totals;
			v[9] = sw->next_tgid;
			v[10] = prio(sw->next_prio);
			ret = emit(kt, D9_KS_SWITCH_OUT, h->time_ns, v);
		}
		if (!ret && (h->flags & DIAL9_SWITCH_NEXT_TARGET) &&
		    sw->next_tid && sw->next_tid != DIAL9_TID_REDACTED) {
			v[0] = sw->next_tid;
			v[1] = sw->next_tgid;
			v[2] = h->cpu;
			v[3] = sw->next_wait_ns;
			v[4] = !!(h->flags & DIAL9_SWITCH_WAIT_VALID);
			v[5] = sw->prev_tid;
			v[6] = totals ? sw->next_run_delay_ns : 0;
			v[7] = totals ? sw->next_pcount : 0;
			v[8] = totals;
			v[9] = sw->prev_tgid;
			v[10] = prio(sw->prev_prio);
			v[11] = prio(sw->next_prio);
			ret = emit(kt, D9_KS_SWITCH_IN, h->time_ns, v);
		}
		return ret;
	case DIAL9_REC_WAKING:
		if (h->size < sizeof(*wk))
			return -EPROTO;
		v[0] = wk->tid;
		v[1] = wk->tgid;
		v[2] = h->cpu;
		v[3] = wk->waker_tid;
		v[4] = wk->waker_tgid;
		v[5] = !!(h->flags & DIAL9_WAKE_FROM_IRQ);
		return emit(kt, D9_KS_WAKING, h->time_ns, v);
	case DIAL9_REC_WAKEUP:
	case DIAL9_REC_WAKEUP_NEW:
		if (h->size < sizeof(*wk))
			return -EPROTO;
		v[0] = wk->tid;
		v[1] = wk->tgid;
		v[2] = h->cpu;
		v[3] = wk->target_cpu;
		v[4] = h->type == DIAL9_REC_WAKEUP_NEW;
		return emit(kt, D9_KS_WAKEUP, h->time_ns, v);
	case DIAL9_REC_MIGRATE:
		if (h->size < sizeof(*mg))
			return -EPROTO;
		v[0] = mg->tid;
		v[1] = mg->tgid;
		v[2] = mg->orig_cpu;
		v[3] = mg->dest_cpu;
		v[4] = h->cpu;
		return emit(kt, D9_KS_MIGRATE, h->time_ns, v);
	case DIAL9_REC_EXIT:
		if (h->size < sizeof(*ex))
			return -EPROTO;
		v[0] = ex->tid;
		v[1] = ex->tgid;
		v[2] = !!(h->flags & DIAL9_EXIT_GROUP_DEAD);
		v[3] = h->cpu;
		return emit(kt, D9_KS_EXIT, h->time_ns, v);
	case DIAL9_REC_LOST:
		if (h->size < sizeof(*lo))
			return -EPROTO;
		v[0] = h->cpu;
		v[1] = lo->count;
		return emit(kt, D9_KS_LOST, h->time_ns, v);
	case DIAL9_REC_COMM: {
		struct dial9_value cv[4];

		if (h->size < sizeof(*cm))
			return -EPROTO;
		cv[0] = dial9_u64(cm->tid);
		cv[1] = dial9_u64(cm->tgid);
		cv[2].type = DIAL9_ISTR;
		cv[2].str.ptr = cm->comm;
		/* the kernel cut it at 15 bytes, maybe inside a character */
		cv[2].str.len = d9_utf8_cut(cm->comm, sizeof(cm->comm));
		cv[3] = dial9_u64(h->cpu);
		/* a task the recording does not record: not a thread's name */
		return emit_values(kt, h->flags & DIAL9_COMM_OCCUPANT ?
				   D9_KS_OCCUPANT_COMM : D9_KS_COMM, h->time_ns, cv);
	}
	case DIAL9_REC_STACK:
	case DIAL9_REC_SAMPLE:
		return add_stack(kt, h);
	case DIAL9_REC_UNFOLLOWED:
		if (h->size < sizeof(*uf))
			return -EPROTO;
		v[0] = uf->tgid;
		v[1] = uf->parent_tgid;
		v[2] = !!(h->flags & DIAL9_UNFOLLOWED_EXEC);
		v[3] = h->cpu;
		return emit(kt, D9_KS_UNFOLLOWED, h->time_ns, v);
	case D9_REC_SCHEDSTAT: {
		const struct d9_rec_schedstat *ss = (const void *)h;

		if (h->size < sizeof(*ss))
			return -EPROTO;
		v[0] = ss->tid;
		v[1] = ss->tgid;
		v[2] = ss->run_ns;
		v[3] = ss->delay_ns;
		v[4] = ss->slices;
		v[5] = ss->migrations;
		v[6] = ss->prio >= 0 ? (uint64_t)ss->prio : UINT64_MAX;
		return emit(kt, D9_KS_SCHEDSTAT, h->time_ns, v);
	}
	default:
		return 0;	/* a newer module's record: skip */
	}
}

int d9_ktrace_end(struct d9_ktrace *kt, const void **data, size_t *len)
{
	int ret = dial9_encoder_end_stream(kt->enc);

	if (ret)
		return ret;
	*data = dial9_encoder_data(kt->enc, len);
	return 0;
}
