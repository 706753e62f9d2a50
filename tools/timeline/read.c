// SPDX-License-Identifier: MIT
/*
 * read.c - one trace file's events as the timeline's struct raw: sched.*
 * events through the library's reader (sched_read.h), which names their
 * kinds, the application's by their schema's kind.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_read.h"
#include "tl_internal.h"

struct fields {			/* of one schema, looked up once */
	const struct dial9_schema *schema;
	int type;		/* EV_*, or -1: not wanted */
	int tid, pid, flag, delay, waker, name, count, unit, value;
	struct sched_fields sf;	/* sched.* */
};

static double fnum(const struct dial9_record *r, int i)
{
	const struct dial9_value *v = i >= 0 ? &r->values[i] : NULL;

	if (!v)
		return 0;
	switch (v->type) {
	case DIAL9_U64: return (double)v->u64;
	case DIAL9_I64: return (double)v->i64;
	case DIAL9_F64: return v->f64;
	case DIAL9_BOOL: return v->b;
	}
	return 0;
}

/*
 * The library's own types of application events (lib/record.c), known by
 * name: an application's own types of the same kinds are named for what
 * they count.
 */
static const struct {
	const char *name;
	int type;
} lib_types[] = {
	{ "dial9.counter", EV_COUNTER }, { "dial9.gauge", EV_GAUGE },
	{ "dial9.instant", EV_INSTANT },
};

/* The sched.* and dial9.lost events the library's reader names
 * (sched_read.h); -1 for those the timeline does not replay. */
static int sched_type(int kind)
{
	switch (kind) {
	case SK_OUT: return EV_OUT;
	case SK_IN: return EV_IN;
	case SK_WAKING: return EV_WAKING;
	case SK_COMM: return EV_COMM;
	case SK_EXIT: return EV_EXIT;
	case SK_MIGRATE: return EV_MIGRATE;
	case SK_LOST: return EV_SCHED_LOST;
	case SK_UNFOLLOWED: return EV_UNFOLLOWED;
	case SK_CPU_SWITCH: return EV_CPU_SWITCH;
	case SK_OCCUPANTS:
	case SK_OCCUPANT_COMM: return EV_OCCUPANTS;
	case SK_APP_LOST: return EV_LOST;
	}
	return -1;
}

static void lookup(struct fields *f, const struct dial9_schema *s)
{
	memset(f, 0, sizeof(*f));
	f->schema = s;
	d9_sched_fields_lookup(&f->sf, s);
	f->type = sched_type(f->sf.kind);
	for (size_t i = 0; i < sizeof(lib_types) / sizeof(lib_types[0]); i++)
		if (!strcmp(s->name, lib_types[i].name))
			f->type = lib_types[i].type;
	if (f->type < 0 && strncmp(s->name, "sched.", 6) &&
	    strncmp(s->name, "dial9.", 6)) {
		switch (s->kind) {
		case DIAL9_KIND_SPAN_BEGIN: f->type = EV_BEGIN; break;
		case DIAL9_KIND_SPAN_END: f->type = EV_END; break;
		case DIAL9_KIND_COUNTER: f->type = EV_COUNTER; break;
		case DIAL9_KIND_GAUGE: f->type = EV_GAUGE; break;
		case DIAL9_KIND_INTERNAL: break;
		default: f->type = EV_INSTANT;	/* instants and unknown kinds */
		}
	}
	f->tid = dial9_schema_field_index(s, "tid");
	f->pid = dial9_schema_field_index(s, "pid");
	f->flag = dial9_schema_field_index(s, f->type == EV_OUT ? "preempted" :
					   f->type == EV_IN ? "delay_known" :
					   "from_irq");
	f->delay = dial9_schema_field_index(s, "runq_delay_ns");
	f->waker = dial9_schema_field_index(s, "waker_tid");
	f->name = dial9_schema_field_index(s, "name");
	f->count = dial9_schema_field_index(s, f->type == EV_LOST ? "events" :
					    "count");
	f->unit = dial9_schema_field_index(s, "unit");
	f->value = dial9_schema_field_index(s, "value");
	if (f->value < 0 && (f->type == EV_COUNTER || f->type == EV_GAUGE)) {
		/* an application's own counter type: its first number */
		for (uint32_t i = 0; i < s->nfields && f->value < 0; i++)
			if (s->fields[i].type == DIAL9_U64 ||
			    s->fields[i].type == DIAL9_I64 ||
			    s->fields[i].type == DIAL9_F64)
				f->value = (int)i;
	}
}

static int str_field(struct timeline *tl, const struct dial9_record *r, int i,
		     uint32_t *off)
{
	const struct dial9_value *v = i >= 0 ? &r->values[i] : NULL;

	if (!v || (v->type != DIAL9_STR && v->type != DIAL9_ISTR)) {
		*off = 0;
		return 0;
	}
	return tl_intern(tl, v->str.ptr, v->str.len, off);
}

static int read_event(struct timeline *tl, const struct fields *f,
		      const struct dial9_record *r, uint32_t file_pid)
{
	struct priv *p = tl->priv;
	struct raw *e;
	bool sched = f->type <= EV_UNFOLLOWED;
	uint64_t tid = sched ? d9_sched_fu64(r, f->tid) : r->tid;
	int ret = 0;

	if (f->type == EV_LOST || f->type == EV_UNFOLLOWED ||
	    f->type == EV_OCCUPANTS) {
		if (f->type == EV_LOST)
			tl->lost_events += d9_sched_fu64(r, f->count);
		/* no order needed: fed now */
		return d9_sched_feed(&tl->st, &f->sf, r, p->src);
	}
	if (cli_grow((void **)&p->raw, &p->capraw, p->nraw + 1, sizeof(*p->raw)))
		return -ENOMEM;
	e = &p->raw[p->nraw];
	memset(e, 0, sizeof(*e));
	e->ts = r->ts_ns;
	e->seq = p->nraw;
	e->type = (uint8_t)f->type;
	e->tid = tl_visible(tid) ? (uint32_t)tid : 0;
	e->pid = sched ? (uint32_t)d9_sched_fu64(r, f->pid) : file_pid;
	e->src = p->src;
	e->cpu = f->sf.cpu >= 0 ? (uint32_t)d9_sched_fu64(r, f->sf.cpu) : UINT32_MAX;
	switch (f->type) {
	case EV_WAKING:
		e->flag = f->flag >= 0 && r->values[f->flag].type == DIAL9_BOOL &&
			  r->values[f->flag].b;
		e->a = d9_sched_fu64(r, f->waker);
		e->count = (uint32_t)d9_sched_fu64(r, f->sf.wakerpid);
		break;
	case EV_OUT:
	case EV_IN: {
		struct sched_ev ev;

		d9_sched_fields_ev(&f->sf, r, p->src, &ev);
		e->flag = f->type == EV_OUT ? ev.runnable : ev.wait_known;
		e->a = ev.wait_ns;
		e->bits = (ev.totals ? RAW_TOTALS : 0) | (ev.dead ? RAW_DEAD : 0);
		e->total = ev.runq_total;
		e->count = ev.runq_count;
		e->name = ev.other;
		e->args = ev.other_tgid;
		e->prio = raw_prios(ev.prio, ev.other_prio);
		break;
	}
	case EV_CPU_SWITCH: {
		const struct sched_fields *sf = &f->sf;

		e->tid = 0;	/* no thread's */
		e->name = (uint32_t)d9_sched_fu64(r, sf->prev_tid);
		e->args = (uint32_t)d9_sched_fu64(r, sf->prev_pid);
		e->a = (uint32_t)d9_sched_fu64(r, sf->next_tid) |
		       d9_sched_fu64(r, sf->next_pid) << 32;
		e->prio = raw_prios((int32_t)d9_sched_fu64(r, sf->prev_prio),
				    (int32_t)d9_sched_fu64(r, sf->next_prio));
		break;
	}
	case EV_COMM:
		ret = str_field(tl, r, f->name, &e->name);
		break;
	case EV_SCHED_LOST:
		tl->lost_sched += d9_sched_fu64(r, f->count);
		e->a = d9_sched_fu64(r, f->count);
		/* the mark's name */
		ret = tl_intern(tl, r->schema->name, strlen(r->schema->name),
				&e->name);
		break;
	case EV_BEGIN:
	case EV_END:
		/* the span open on a thread as a wait began (explanations) */
		if (tl->st.spans && r->tid)
			ret = d9_sched_spans_add(tl->st.spans, p->src, r->tid,
				r->ts_ns, r->schema->name,
				strlen(r->schema->name),
				f->type == EV_BEGIN);
		if (!ret)
			ret = tl_intern(tl, r->schema->name,
					strlen(r->schema->name), &e->name);
		if (!ret)
			ret = tl_pool_args(tl, r, NULL, NULL, &e->args);
		break;
	case EV_INSTANT:
		if (!strcmp(r->schema->name, "dial9.instant")) {
			ret = str_field(tl, r, f->name, &e->name);
		} else {
			ret = tl_intern(tl, r->schema->name,
				     strlen(r->schema->name), &e->name);
			if (!ret)
				ret = tl_pool_args(tl, r, NULL, NULL, &e->args);
		}
		break;
	case EV_COUNTER:
	case EV_GAUGE: {
		double v = fnum(r, f->value);

		if (!strncmp(r->schema->name, "dial9.", 6))
			ret = str_field(tl, r, f->name, &e->name);
		else
			ret = tl_intern(tl, r->schema->name,
				     strlen(r->schema->name), &e->name);
		if (!ret)
			ret = str_field(tl, r, f->unit, &e->args);
		memcpy(&e->a, &v, sizeof(v));
		break;
	}
	}
	if (ret)
		return ret;
	if (!e->tid && f->type != EV_SCHED_LOST && f->type != EV_CPU_SWITCH &&
	    !(f->type >= EV_INSTANT && f->type <= EV_GAUGE))
		return 0;	/* idle task, redacted, or no thread */
	/* a wake-up alone does not make a thread worth a track */
	if (e->tid && f->type != EV_WAKING &&
	    tl_thread_get(tl, e->src, e->tid, e->pid, true) < 0)
		return -ENOMEM;
	p->nraw++;
	return 0;
}

static void meta_pid(struct timeline *tl, const struct dial9_record *r,
		     uint32_t *pid)
{
	uint32_t service = 0;
	struct tl_proc *pr;

	for (unsigned int i = 0; i < r->nkv; i++) {
		const struct dial9_kv *kv = &r->kv[i];

		if (kv->key_len == 3 && !memcmp(kv->key, "pid", 3)) {
			char buf[16];

			snprintf(buf, sizeof(buf), "%.*s",
				 (int)(kv->value_len < 15 ? kv->value_len : 15),
				 kv->value);
			*pid = (uint32_t)strtoul(buf, NULL, 10);
		}
		if (kv->key_len == 7 && !memcmp(kv->key, "service", 7) &&
		    tl_intern(tl, kv->value, kv->value_len, &service))
			return;
	}
	if (!*pid || !service || tl_service(tl, *pid))
		return;
	pr = PUSH(tl, procs);
	if (pr) {
		pr->pid = *pid;
		pr->service = service;
	}
}

int tl_read_file(struct timeline *tl, const char *path)
{
	struct fields cache[32];
	struct dial9_decoder *dec;
	struct dial9_record r;
	struct cli_file file;
	unsigned int ncache = 0;
	uint32_t pid = 0;
	int ret;

	((struct priv *)tl->priv)->src = 0;
	ret = cli_map(path, &file);
	if (ret)
		return ret;
	ret = dial9_decoder_new(&dec, file.data, file.len);
	if (ret) {
		cli_unmap(&file);
		fprintf(stderr, "dial9: %s: %s\n", path, dial9_strerror(ret));
		return ret;
	}
	while ((ret = dial9_decoder_next(dec, &r)) > 0) {
		struct fields *f = NULL;

		if (r.kind == DIAL9_RECORD_STREAM)
			ncache = 0;	/* schemas are per stream */
		if (r.kind == DIAL9_RECORD_METADATA) {
			meta_pid(tl, &r, &pid);
			ret = d9_sched_meta_source(&tl->st, &r);
			if (ret < 0)
				break;
			((struct priv *)tl->priv)->src = (uint32_t)ret;
			ret = 0;
		}
		d9_sched_clock_sync(&tl->st, ((struct priv *)tl->priv)->src, &r);
		if (r.kind == DIAL9_RECORD_THREAD && tl_visible(r.tid) &&
		    r.thread_name[0]) {
			long ti = tl_thread_get(tl, ((struct priv *)tl->priv)->src,
					     r.tid, pid, true);

			if (ti < 0) {
				ret = -ENOMEM;
				break;
			}
			/* the name the application gave wins over comm */
			tl_thread_name(&tl->threads[ti], r.thread_name,
				    strlen(r.thread_name), 2, 0);
		}
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		for (unsigned int i = 0; i < ncache && !f; i++)
			if (cache[i].schema == r.schema)
				f = &cache[i];
		if (!f) {
			f = &cache[ncache < 32 ? ncache++ : 31];
			lookup(f, r.schema);
		}
		/* stacks, their mappings and names: for the explanations */
		if (tl->st.stacks && (f->sf.kind == SK_STACK ||
				      f->sf.kind == SK_MAPPING ||
				      f->sf.kind == SK_SYMBOL ||
				      f->sf.kind == SK_SYMBOL_NOTE)) {
			ret = d9_sched_feed(&tl->st, &f->sf, &r,
					    ((struct priv *)tl->priv)->src);
			if (ret)
				break;
			continue;
		}
		if (f->type < 0)
			continue;
		ret = read_event(tl, f, &r, pid);
		if (ret)
			break;
	}
	if (ret == -ENOMEM)
		fprintf(stderr, "dial9: %s: out of memory\n", path);
	else if (ret < 0)
		cli_decode_error(path, ret, dial9_decoder_offset(dec));
	dial9_decoder_free(dec);
	cli_unmap(&file);
	return ret < 0 ? ret : 0;
}
