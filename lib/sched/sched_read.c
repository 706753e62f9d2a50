// SPDX-License-Identifier: MIT
/* sched_read.c - sched.* events of a trace fed to sched_stats. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/dial9.h>

#include "sched/sched_read.h"

uint64_t d9_sched_fu64(const struct dial9_record *r, int i)
{
	return i >= 0 && r->values[i].type == DIAL9_U64 ? r->values[i].u64 : 0;
}

bool d9_sched_fbool(const struct dial9_record *r, int i)
{
	return i >= 0 && r->values[i].type == DIAL9_BOOL && r->values[i].b;
}

void d9_sched_fields_lookup(struct sched_fields *f, const struct dial9_schema *s)
{
	static const struct {
		const char *name;
		int kind;
	} names[] = {
		{ "sched.switch_out", SK_OUT }, { "sched.switch_in", SK_IN },
		{ "sched.waking", SK_WAKING }, { "sched.migrate", SK_MIGRATE },
		{ "sched.exit", SK_EXIT }, { "sched.comm", SK_COMM },
		{ "sched.lost", SK_LOST }, { "sched.schedstat", SK_SSTAT },
		{ "sched.unfollowed", SK_UNFOLLOWED },
		{ "dial9.lost", SK_APP_LOST },
		{ "sched.stack", SK_STACK }, { "sched.mapping", SK_MAPPING },
		{ "sched.sample", SK_SAMPLE },
		{ "sched.symbol", SK_SYMBOL },
		{ "sched.symbol_note", SK_SYMBOL_NOTE },
		{ "sched.cpu_switch", SK_CPU_SWITCH },
		{ "sched.occupants", SK_OCCUPANTS },
		{ "sched.occupant_comm", SK_OCCUPANT_COMM },
		{ "sched.wakeup", SK_WAKEUP }, { "sched.ring", SK_RING },
		{ "sched.thread_name", SK_THREAD_NAME },
		{ "sched.unknown", SK_UNKNOWN },
	};

	memset(f, 0, sizeof(*f));
	f->schema = s;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s->name, names[i].name))
			f->kind = names[i].kind;
	f->tid = dial9_schema_field_index(s, "tid");
	f->pid = dial9_schema_field_index(s, "pid");
	f->cpu = dial9_schema_field_index(s, "cpu");
	f->preempted = dial9_schema_field_index(s, "preempted");
	f->state = dial9_schema_field_index(s, "state");
	f->wait = dial9_schema_field_index(s, "runq_delay_ns");
	f->known = dial9_schema_field_index(s, "delay_known");
	f->totals = dial9_schema_field_index(s, "totals_known");
	f->rtotal = dial9_schema_field_index(s, "runq_total_ns");
	f->rcount = dial9_schema_field_index(s, "runq_count");
	f->name = dial9_schema_field_index(s, "name");
	f->count = dial9_schema_field_index(s, "count");
	f->run = dial9_schema_field_index(s, "run_ns");
	f->slices = dial9_schema_field_index(s, "timeslices");
	f->parent = dial9_schema_field_index(s, "parent_pid");
	f->pexec = dial9_schema_field_index(s, "privileged_exec");
	f->waker = dial9_schema_field_index(s, "waker_tid");
	f->wakerpid = dial9_schema_field_index(s, "waker_pid");
	f->irq = dial9_schema_field_index(s, "from_irq");
	f->from = dial9_schema_field_index(s, "from_cpu");
	f->to = dial9_schema_field_index(s, "to_cpu");
	f->events = dial9_schema_field_index(s, "events");
	f->frames = dial9_schema_field_index(s, "frames");
	f->truncated = dial9_schema_field_index(s, "truncated");
	f->waker_stack = f->kind == SK_STACK ?
			 dial9_schema_field_index(s, "waker") : -1;
	f->start = dial9_schema_field_index(s, "start");
	f->end = dial9_schema_field_index(s, "end");
	f->offset = dial9_schema_field_index(s, "offset");
	f->path = dial9_schema_field_index(s, "path");
	f->build_id = dial9_schema_field_index(s, "build_id");
	f->period = dial9_schema_field_index(s, "period_ns");
	f->missed = dial9_schema_field_index(s, "missed");
	f->migrations = dial9_schema_field_index(s, "migrations");
	f->address = dial9_schema_field_index(s, "address");
	f->within = dial9_schema_field_index(s, "within");
	f->object = dial9_schema_field_index(s, "object");
	f->why = dial9_schema_field_index(s, "why");
	f->other = dial9_schema_field_index(s, f->kind == SK_OUT ? "next_tid" :
						"prev_tid");
	f->other_pid = dial9_schema_field_index(s, f->kind == SK_OUT ?
						"next_pid" : "prev_pid");
	f->other_prio = dial9_schema_field_index(s, f->kind == SK_OUT ?
						 "next_prio" : "prev_prio");
	f->prio = dial9_schema_field_index(s, "prio");
	f->prev_tid = dial9_schema_field_index(s, "prev_tid");
	f->prev_pid = dial9_schema_field_index(s, "prev_pid");
	f->prev_prio = dial9_schema_field_index(s, "prev_prio");
	f->next_tid = dial9_schema_field_index(s, "next_tid");
	f->next_pid = dial9_schema_field_index(s, "next_pid");
	f->next_prio = dial9_schema_field_index(s, "next_prio");
	f->occ_tid = dial9_schema_field_index(s, "occupant_tid");
	f->rwritten = f->rlost = f->rfiltered = -1;
	if (f->kind == SK_RING) {
		f->rwritten = dial9_schema_field_index(s, "written");
		f->rlost = dial9_schema_field_index(s, "lost");
		f->rfiltered = dial9_schema_field_index(s, "filtered");
	}
}

/* A prio field, or -1 where the schema has none (an older trace). */
static int32_t fprio(const struct dial9_record *r, int i)
{
	uint64_t v = d9_sched_fu64(r, i);

	return i >= 0 && r->values[i].type == DIAL9_U64 && v < 1024 ?
	       (int32_t)v : -1;
}

/* One side of a sched.cpu_switch. */
static struct sched_task side(const struct dial9_record *r, int tid, int pid,
			      int prio)
{
	/* not named: another task, as far as anyone can tell */
	uint32_t t = tid >= 0 ? (uint32_t)d9_sched_fu64(r, tid) : UINT32_MAX;
	uint32_t p = (uint32_t)d9_sched_fu64(r, pid);

	return (struct sched_task){ t, p == UINT32_MAX ? 0 : p,
				    t && t != UINT32_MAX ? fprio(r, prio) : -1 };
}

void d9_sched_fields_ev(const struct sched_fields *f,
		     const struct dial9_record *r, uint32_t src,
		     struct sched_ev *e)
{
	memset(e, 0, sizeof(*e));
	e->ts = r->ts_ns;
	e->src = src;
	e->tid = (uint32_t)d9_sched_fu64(r, f->tid);
	e->tgid = (uint32_t)d9_sched_fu64(r, f->pid);
	e->cpu = f->cpu >= 0 ? (uint32_t)d9_sched_fu64(r, f->cpu) : UINT32_MAX;
	/* not named: another task, as far as anyone can tell */
	e->other = f->other >= 0 ? (uint32_t)d9_sched_fu64(r, f->other) :
				   UINT32_MAX;
	if (f->kind == SK_OUT) {
		e->runnable = d9_sched_fbool(r, f->preempted);
		e->dead = f->state >= 0 &&
			  d9_sched_fu64(r, f->state) == DIAL9_STATE_DEAD;
	} else {
		e->wait_known = d9_sched_fbool(r, f->known);
		e->wait_ns = d9_sched_fu64(r, f->wait);
	}
	e->other_tgid = (uint32_t)d9_sched_fu64(r, f->other_pid);
	if (e->other_tgid == UINT32_MAX)
		e->other_tgid = 0;
	e->other_prio = e->other && e->other != UINT32_MAX ?
			fprio(r, f->other_prio) : -1;
	e->prio = fprio(r, f->prio);
	e->totals = d9_sched_fbool(r, f->totals);
	if (e->totals) {
		e->runq_total = d9_sched_fu64(r, f->rtotal);
		e->runq_count = (uint32_t)d9_sched_fu64(r, f->rcount);
	}
}

static char *kv_dup(const struct dial9_record *r, const char *key)
{
	size_t kl = strlen(key);

	for (unsigned int i = 0; i < r->nkv; i++)
		if (r->kv[i].key_len == kl && !memcmp(r->kv[i].key, key, kl))
			return strndup(r->kv[i].value, r->kv[i].value_len);
	return NULL;
}

int d9_sched_meta_source(struct sched_stats *st, const struct dial9_record *r)
{
	char *host = kv_dup(r, "host"), *boot = kv_dup(r, "boot_id");
	int ret = d9_sched_stats_source(st, host, boot);
	struct sched_source *s;

	free(host);
	free(boot);
	if (ret < 0)
		return ret;
	s = &st->srcs[ret];
	if (!s->service)
		s->service = kv_dup(r, "service");
	if (!s->backend)
		s->backend = kv_dup(r, "sched_backend");
	if (!s->note)
		s->note = kv_dup(r, "sched_note");
	return ret;
}

void d9_sched_clock_sync(struct sched_stats *st, uint32_t src,
			 const struct dial9_record *rec)
{
	if (rec->kind != DIAL9_RECORD_CLOCK_SYNC || src >= st->nsrcs ||
	    st->srcs[src].synced)
		return;
	st->srcs[src].synced = true;
	st->srcs[src].sync_mono = rec->mono_ns;
	st->srcs[src].sync_real = rec->real_ns;
}

/* Field @i is a string (plain or interned). */
static bool is_str(const struct dial9_record *r, int i)
{
	return i >= 0 && (r->values[i].type == DIAL9_STR ||
			  r->values[i].type == DIAL9_ISTR);
}

int d9_sched_feed(struct sched_stats *st, const struct sched_fields *f,
	       const struct dial9_record *r, uint32_t src)
{
	uint32_t tid = (uint32_t)d9_sched_fu64(r, f->tid);
	uint32_t pid = (uint32_t)d9_sched_fu64(r, f->pid);
	struct sched_ev e;

	switch (f->kind) {
	case SK_OUT:
	case SK_IN:
		d9_sched_fields_ev(f, r, src, &e);
		if (f->kind == SK_IN && st->stacks)
			d9_sched_stacks_in(st->stacks, src, e.tid, e.ts);
		return f->kind == SK_OUT ? d9_sched_stats_out(st, &e, NULL) :
					   d9_sched_stats_in(st, &e, NULL);
	case SK_WAKING:
		if (f->waker >= 0)
			d9_sched_stats_waking(st, src, r->ts_ns, tid, pid,
				(uint32_t)d9_sched_fu64(r, f->waker),
				(uint32_t)d9_sched_fu64(r, f->wakerpid),
				f->irq >= 0 && d9_sched_fbool(r, f->irq));
		return f->cpu >= 0 ? d9_sched_stats_cpu_seen(st, src,
			(uint32_t)d9_sched_fu64(r, f->cpu), r->ts_ns) : 0;
	case SK_EXIT:
		d9_sched_stats_exit(st, src, r->ts_ns, tid, pid);
		return 0;
	case SK_MIGRATE:
		d9_sched_stats_migrate(st, src, r->ts_ns, tid, pid,
			f->from >= 0 ? (uint32_t)d9_sched_fu64(r, f->from) : UINT32_MAX,
			f->to >= 0 ? (uint32_t)d9_sched_fu64(r, f->to) : UINT32_MAX);
		return 0;
	case SK_COMM:
	case SK_THREAD_NAME:	/* the same name, written again by the recorder */
		if (f->name >= 0 && (r->values[f->name].type == DIAL9_ISTR ||
				     r->values[f->name].type == DIAL9_STR))
			d9_sched_stats_name(st, src, r->ts_ns, tid, pid,
					 r->values[f->name].str.ptr,
					 r->values[f->name].str.len);
		return 0;
	case SK_LOST:
		return d9_sched_stats_lost(st, src, r->ts_ns,
					(uint32_t)d9_sched_fu64(r, f->cpu),
					d9_sched_fu64(r, f->count));
	case SK_UNFOLLOWED:
		return d9_sched_stats_unfollowed(st, src, pid,
				(uint32_t)d9_sched_fu64(r, f->parent),
				f->pexec >= 0 && d9_sched_fbool(r, f->pexec));
	case SK_STACK:
		if (!st->stacks || f->frames < 0 ||
		    r->values[f->frames].type != DIAL9_BYTES)
			return 0;
		return d9_sched_stacks_add(st->stacks, src, r->ts_ns, tid, pid,
				r->values[f->frames].str.ptr,
				r->values[f->frames].str.len / sizeof(uint64_t),
				d9_sched_fbool(r, f->truncated),
				d9_sched_fbool(r, f->waker_stack));
	case SK_SAMPLE:
		if (!st->stacks || f->frames < 0 ||
		    r->values[f->frames].type != DIAL9_BYTES)
			return 0;
		return d9_sched_stacks_sample(st->stacks, src, r->ts_ns, tid,
				pid, r->values[f->frames].str.ptr,
				r->values[f->frames].str.len / sizeof(uint64_t),
				d9_sched_fbool(r, f->truncated),
				d9_sched_fu64(r, f->period),
				d9_sched_fu64(r, f->missed));
	case SK_MAPPING: {
		bool id = f->build_id >= 0 &&
			  r->values[f->build_id].type == DIAL9_BYTES;

		if (!st->stacks || f->path < 0 ||
		    r->values[f->path].type != DIAL9_STR)
			return 0;
		return d9_sched_stacks_map(st->stacks, src, pid, r->ts_ns,
				d9_sched_fu64(r, f->start),
				d9_sched_fu64(r, f->end),
				d9_sched_fu64(r, f->offset),
				r->values[f->path].str.ptr,
				r->values[f->path].str.len,
				id ? r->values[f->build_id].str.ptr : NULL,
				id ? r->values[f->build_id].str.len : 0);
	}
	case SK_SYMBOL:
		if (!st->stacks || !is_str(r, f->name) || !is_str(r, f->object) ||
		    f->address < 0)
			return 0;
		return d9_sched_stacks_symbol(st->stacks, src, pid,
				d9_sched_fu64(r, f->address),
				r->values[f->name].str.ptr,
				r->values[f->name].str.len,
				d9_sched_fu64(r, f->within),
				r->values[f->object].str.ptr,
				r->values[f->object].str.len);
	case SK_SYMBOL_NOTE:
		if (!st->stacks || !is_str(r, f->object) || !is_str(r, f->why))
			return 0;
		return d9_sched_stacks_symbol_note(st->stacks, src, pid,
				d9_sched_fu64(r, f->frames),
				r->values[f->object].str.ptr,
				r->values[f->object].str.len,
				r->values[f->why].str.ptr,
				r->values[f->why].str.len);
	case SK_CPU_SWITCH: {
		struct sched_task prev = side(r, f->prev_tid, f->prev_pid,
					      f->prev_prio);
		struct sched_task next = side(r, f->next_tid, f->next_pid,
					      f->next_prio);

		return d9_sched_stats_cpu_switch(st, src, r->ts_ns,
			f->cpu >= 0 ? (uint32_t)d9_sched_fu64(r, f->cpu) :
				      UINT32_MAX, &prev, &next);
	}
	case SK_OCCUPANTS:
		return d9_sched_stats_occupants(st, src);
	case SK_OCCUPANT_COMM:
		if (f->name < 0 || f->occ_tid < 0 ||
		    (r->values[f->name].type != DIAL9_ISTR &&
		     r->values[f->name].type != DIAL9_STR))
			return 0;
		return d9_sched_stats_occupant_name(st, src,
				(uint32_t)d9_sched_fu64(r, f->occ_tid),
				r->values[f->name].str.ptr,
				r->values[f->name].str.len);
	case SK_APP_LOST:
		st->lost_app += d9_sched_fu64(r, f->events);
		return 0;
	case SK_SSTAT:
		d9_sched_stats_sample(st, src, r->ts_ns, tid, pid,
				   d9_sched_fu64(r, f->run), d9_sched_fu64(r, f->wait),
				   d9_sched_fu64(r, f->slices),
				   f->migrations >= 0 ? d9_sched_fu64(r, f->migrations) :
							UINT64_MAX,
				   fprio(r, f->prio));
		return 0;
	}
	return 0;
}

int d9_sched_trace(struct sched_stats *st, const void *buf, size_t len,
		   uint64_t *err_off)
{
	struct sched_fields cache[16];
	struct dial9_decoder *dec;
	struct dial9_record rec;
	unsigned int ncache = 0;
	uint32_t src = 0;
	int ret;

	*err_off = 0;
	ret = dial9_decoder_new(&dec, buf, len);
	if (ret)
		return ret;
	while ((ret = dial9_decoder_next(dec, &rec)) > 0) {
		struct sched_fields *f = NULL;

		if (rec.kind == DIAL9_RECORD_STREAM)
			ncache = 0;	/* schemas are per stream */
		if (rec.kind == DIAL9_RECORD_METADATA) {
			ret = d9_sched_meta_source(st, &rec);
			if (ret < 0)
				break;
			src = (uint32_t)ret;
		}
		d9_sched_clock_sync(st, src, &rec);
		/* A name the application gave its thread wins over comm. */
		if (rec.kind == DIAL9_RECORD_THREAD && rec.tid &&
		    rec.thread_name[0])
			d9_sched_stats_name(st, src, UINT64_MAX, rec.tid, 0,
					    rec.thread_name,
					    strlen(rec.thread_name));
		/* the application's spans, by the thread of their stream */
		if (st->spans && rec.kind == DIAL9_RECORD_EVENT && rec.tid &&
		    (rec.schema->kind == DIAL9_KIND_SPAN_BEGIN ||
		     rec.schema->kind == DIAL9_KIND_SPAN_END) &&
		    strncmp(rec.schema->name, "sched.", 6) &&
		    strncmp(rec.schema->name, "dial9.", 6)) {
			ret = d9_sched_spans_add(st->spans, src, rec.tid,
				rec.ts_ns, rec.schema->name,
				strlen(rec.schema->name),
				rec.schema->kind == DIAL9_KIND_SPAN_BEGIN);
			if (ret)
				break;
			continue;
		}
		if (rec.kind != DIAL9_RECORD_EVENT ||
		    (strncmp(rec.schema->name, "sched.", 6) &&
		     strcmp(rec.schema->name, "dial9.lost")))
			continue;
		for (unsigned int i = 0; i < ncache; i++)
			if (cache[i].schema == rec.schema)
				f = &cache[i];
		if (!f) {
			f = &cache[ncache < 16 ? ncache++ : 15];
			d9_sched_fields_lookup(f, rec.schema);
		}
		ret = d9_sched_feed(st, f, &rec, src);
		if (ret)
			break;
	}
	if (ret < 0 && ret != -ENOMEM)
		*err_off = dial9_decoder_offset(dec);
	dial9_decoder_free(dec);
	return ret < 0 ? ret : 0;
}
