// SPDX-License-Identifier: MIT
/*
 * timeline.c - read traces, order their events by time, and replay them
 * into slices, spans, marks, counter samples, flows and delays (see
 * timeline.h for the rules).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sched/sched_read.h"
#include "timeline.h"

/* One event as read, before ordering. */
enum {
	EV_OUT, EV_IN, EV_WAKING, EV_COMM, EV_EXIT, EV_MIGRATE, EV_SCHED_LOST,
	EV_UNFOLLOWED, EV_BEGIN, EV_END, EV_INSTANT, EV_COUNTER, EV_GAUGE, EV_LOST,
};

struct raw {
	uint64_t ts, seq;
	uint64_t a;		/* delay, waker tid, count, or f64 bits */
	uint64_t total;		/* switches: the runqueue totals */
	uint32_t count, cpu;
	uint32_t tid, pid, src;
	uint32_t name, args;	/* pool offsets (args: unit for counters) */
	uint8_t type, flag, bits;
};

#define RAW_TOTALS 1
#define RAW_DEAD 2

struct priv {
	struct raw *raw;
	size_t nraw, capraw;
	uint32_t *tidtab;	/* (src, tid) -> thread index + 1 */
	size_t tidtab_cap;
	uint32_t src;		/* of the file being read */
};

/* Append an element to a TL_VEC-style vector; NULL on ENOMEM. */
#define PUSH(tl, vec)                                                       \
	(cli_grow((void **)&(tl)->vec, &(tl)->cap_##vec, (tl)->n_##vec + 1,  \
		 sizeof(*(tl)->vec)) ? NULL : &(tl)->vec[(tl)->n_##vec++])

/* ---- threads ---- */

static size_t tid_hash(uint32_t src, uint32_t tid, size_t cap)
{
	return ((tid * 2654435761u) ^ (src * 40503u)) & (cap - 1);
}

/*
 * Index of a thread of source @src (host, boot id), created on first
 * sight; -1 on ENOMEM, -2 if absent and not @create.  A tid reused by
 * another process is another thread.
 */
static long thread_get(struct timeline *tl, uint32_t src, uint32_t tid,
		       uint32_t pid, bool create)
{
	struct priv *p = tl->priv;
	struct tl_thread *t;
	size_t i;

	if (!p->tidtab_cap || tl->n_threads * 2 >= p->tidtab_cap) {
		size_t nc = p->tidtab_cap ? p->tidtab_cap * 2 : 256;
		uint32_t *nt = calloc(nc, sizeof(*nt));

		if (!nt)
			return -1;
		for (size_t j = 0; j < tl->n_threads; j++) {
			i = tid_hash(tl->threads[j].src, tl->threads[j].tid, nc);
			while (nt[i])
				i = (i + 1) & (nc - 1);
			nt[i] = (uint32_t)j + 1;
		}
		free(p->tidtab);
		p->tidtab = nt;
		p->tidtab_cap = nc;
	}
	i = tid_hash(src, tid, p->tidtab_cap);
	for (; p->tidtab[i]; i = (i + 1) & (p->tidtab_cap - 1)) {
		t = &tl->threads[p->tidtab[i] - 1];
		if (t->tid == tid && t->src == src &&
		    (!pid || !t->pid || t->pid == pid)) {
			if (!t->pid)
				t->pid = pid;
			return (long)p->tidtab[i] - 1;
		}
	}
	if (!create)
		return -2;
	t = PUSH(tl, threads);
	if (!t)
		return -1;
	memset(t, 0, sizeof(*t));
	t->src = src;
	t->tid = tid;
	t->pid = pid;
	p->tidtab[i] = (uint32_t)tl->n_threads;
	return (long)tl->n_threads - 1;
}

static void thread_name(struct tl_thread *t, const char *s, size_t len,
			int prio, uint64_t ts)
{
	if (prio < t->name_prio || (prio == t->name_prio && ts < t->name_ts))
		return;
	len = strnlen(s, len);
	if (len >= sizeof(t->name))
		len = sizeof(t->name) - 1;
	memcpy(t->name, s, len);
	t->name[len] = 0;
	t->name_prio = prio;
	t->name_ts = ts;
}

static bool visible(uint64_t tid)
{
	return tid && tid < UINT32_MAX;
}

/* ---- reading ---- */

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

static void lookup(struct fields *f, const struct dial9_schema *s)
{
	static const struct {
		const char *name;
		int type;
	} sched[] = {
		{ "sched.switch_out", EV_OUT }, { "sched.switch_in", EV_IN },
		{ "sched.waking", EV_WAKING }, { "sched.comm", EV_COMM },
		{ "sched.exit", EV_EXIT }, { "sched.migrate", EV_MIGRATE },
		{ "sched.lost", EV_SCHED_LOST }, { "dial9.lost", EV_LOST },
		{ "sched.unfollowed", EV_UNFOLLOWED },
		{ "dial9.counter", EV_COUNTER }, { "dial9.gauge", EV_GAUGE },
		{ "dial9.instant", EV_INSTANT },
	};

	memset(f, 0, sizeof(*f));
	f->schema = s;
	f->type = -1;
	d9_sched_fields_lookup(&f->sf, s);
	for (size_t i = 0; i < sizeof(sched) / sizeof(sched[0]); i++)
		if (!strcmp(s->name, sched[i].name))
			f->type = sched[i].type;
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

	if (f->type == EV_LOST || f->type == EV_UNFOLLOWED) {
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
	e->tid = visible(tid) ? (uint32_t)tid : 0;
	e->pid = sched ? (uint32_t)d9_sched_fu64(r, f->pid) : file_pid;
	e->src = p->src;
	e->cpu = f->sf.cpu >= 0 ? (uint32_t)d9_sched_fu64(r, f->sf.cpu) : UINT32_MAX;
	switch (f->type) {
	case EV_WAKING:
		e->flag = f->flag >= 0 && r->values[f->flag].type == DIAL9_BOOL &&
			  r->values[f->flag].b;
		e->a = d9_sched_fu64(r, f->waker);
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
		break;
	}
	case EV_COMM:
		ret = str_field(tl, r, f->name, &e->name);
		break;
	case EV_SCHED_LOST:
		tl->lost_sched += d9_sched_fu64(r, f->count);
		e->a = d9_sched_fu64(r, f->count);
		break;
	case EV_BEGIN:
	case EV_END:
		ret = tl_intern(tl, r->schema->name, strlen(r->schema->name),
			     &e->name);
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
	if (!e->tid && f->type != EV_SCHED_LOST &&
	    !(f->type >= EV_INSTANT && f->type <= EV_GAUGE))
		return 0;	/* idle task, redacted, or no thread */
	/* a wake-up alone does not make a thread worth a track */
	if (e->tid && f->type != EV_WAKING &&
	    thread_get(tl, e->src, e->tid, e->pid, true) < 0)
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

static int read_file(struct timeline *tl, const char *path)
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

		if (r.kind == DIAL9_REC_STREAM)
			ncache = 0;	/* schemas are per stream */
		if (r.kind == DIAL9_REC_METADATA) {
			meta_pid(tl, &r, &pid);
			ret = d9_sched_meta_source(&tl->st, &r);
			if (ret < 0)
				break;
			((struct priv *)tl->priv)->src = (uint32_t)ret;
			ret = 0;
		}
		d9_sched_clock_sync(&tl->st, ((struct priv *)tl->priv)->src, &r);
		if (r.kind == DIAL9_REC_THREAD && visible(r.tid) &&
		    r.thread_name[0]) {
			long ti = thread_get(tl, ((struct priv *)tl->priv)->src,
					     r.tid, pid, true);

			if (ti < 0) {
				ret = -ENOMEM;
				break;
			}
			/* the name the application gave wins over comm */
			thread_name(&tl->threads[ti], r.thread_name,
				    strlen(r.thread_name), 2, 0);
		}
		if (r.kind != DIAL9_REC_EVENT)
			continue;
		for (unsigned int i = 0; i < ncache && !f; i++)
			if (cache[i].schema == r.schema)
				f = &cache[i];
		if (!f) {
			f = &cache[ncache < 32 ? ncache++ : 31];
			lookup(f, r.schema);
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

/* ---- replay ---- */

static int cmp_raw(const void *a, const void *b)
{
	const struct raw *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int add_slice(struct timeline *tl, uint32_t ti, int state,
		     uint64_t start, uint64_t end, uint32_t flow)
{
	struct tl_slice *s;

	if (end < start)
		return 0;
	s = PUSH(tl, slices);
	if (!s)
		return -ENOMEM;
	s->start = start;
	s->end = end;
	s->thread = ti;
	s->state = (uint8_t)state;
	s->flow = flow;
	return 0;
}

static int span_open(struct timeline *tl, uint32_t ti, const struct raw *e,
		     uint64_t start, uint8_t flags)
{
	struct tl_thread *t = &tl->threads[ti];
	struct tl_span *s;

	if (cli_grow((void **)&t->stack, &t->stack_cap, t->depth + 1,
		 sizeof(*t->stack)))
		return -ENOMEM;
	s = PUSH(tl, spans);
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->start = start;
	s->end = start;
	s->thread = ti;
	s->name = e->name;
	s->args_begin = flags & TL_SPAN_NO_BEGIN ? 0 : e->args;
	s->flags = flags | TL_SPAN_UNFINISHED;
	t->stack[t->depth++] = (uint32_t)(tl->n_spans - 1);
	return 0;
}

/* End the innermost open span at ts; ended by its own end event or cut. */
static void span_close_top(struct timeline *tl, struct tl_thread *t,
			   uint64_t ts, bool ended, uint32_t args)
{
	struct tl_span *s = &tl->spans[t->stack[--t->depth]];

	s->end = ts;
	if (ended) {
		s->args_end = args;
		s->flags &= (uint8_t)~TL_SPAN_UNFINISHED;
	}
}

static int span_end(struct timeline *tl, uint32_t ti, const struct raw *e)
{
	struct tl_thread *t = &tl->threads[ti];
	size_t k = t->depth;

	while (k > 0 && tl->spans[t->stack[k - 1]].name != e->name)
		k--;
	if (k == 0) {
		if (t->depth) {
			tl->unmatched_ends++;	/* would cross an open span */
			return 0;
		}
		/* begun before the trace: it covers everything so far */
		if (span_open(tl, ti, e, tl->first_ns, TL_SPAN_NO_BEGIN))
			return -ENOMEM;
		k = 1;
	}
	while (t->depth > k)	/* inner spans never ended: cut here */
		span_close_top(tl, t, e->ts, false, 0);
	span_close_top(tl, t, e->ts, true, e->args);
	return 0;
}

static int counter_sample(struct timeline *tl, const struct raw *e)
{
	struct tl_counter *c = NULL;
	struct tl_sample *s;
	double v;

	memcpy(&v, &e->a, sizeof(v));
	for (size_t i = tl->n_counters; i-- > 0 && !c;)
		if (tl->counters[i].pid == e->pid &&
		    tl->counters[i].name == e->name &&
		    tl->counters[i].unit == e->args &&
		    tl->counters[i].gauge == (e->type == EV_GAUGE))
			c = &tl->counters[i];
	if (!c) {
		c = PUSH(tl, counters);
		if (!c)
			return -ENOMEM;
		memset(c, 0, sizeof(*c));
		c->pid = e->pid;
		c->name = e->name;
		c->unit = e->args;
		c->gauge = e->type == EV_GAUGE;
	}
	c->total = c->gauge ? v : c->total + v;
	s = PUSH(tl, samples);
	if (!s)
		return -ENOMEM;
	s->ts = e->ts;
	s->counter = (uint32_t)(c - tl->counters);
	s->value = c->total;
	s->thread = TL_NONE;
	if (e->tid) {
		long ti = thread_get(tl, e->src, e->tid, e->pid, false);

		s->thread = ti >= 0 ? (uint32_t)ti : TL_NONE;
	}
	return 0;
}

static void raw_ev(const struct raw *e, struct sched_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->ts = e->ts;
	ev->src = e->src;
	ev->tid = e->tid;
	ev->tgid = e->pid;
	ev->cpu = e->cpu;
	ev->totals = e->bits & RAW_TOTALS;
	ev->runq_total = e->total;
	ev->runq_count = e->count;
	if (e->type == EV_OUT) {
		ev->runnable = e->flag;
		ev->dead = e->bits & RAW_DEAD;
	} else {
		ev->wait_known = e->flag;
		ev->wait_ns = e->a;
	}
}

/* The pieces of time sched_stats decided on, as slices of thread ti. */
static int add_pieces(struct timeline *tl, uint32_t ti,
		      const struct sched_result *r)
{
	struct tl_thread *t = &tl->threads[ti];
	int ret = 0;

	for (int i = 0; i < r->n && !ret; i++) {
		bool run = r->p[i].state == TL_RUNNING;

		ret = add_slice(tl, ti, r->p[i].state, r->p[i].start,
				r->p[i].end, run ? t->run_flow : 0);
		if (run)
			t->run_flow = 0;
	}
	t->state = tl->st.threads[r->thread].state;
	t->sched = (uint32_t)r->thread + 1;
	return ret;
}

static int switch_out(struct timeline *tl, uint32_t ti, const struct raw *e)
{
	struct sched_result r;
	struct sched_ev ev;
	int ret;

	raw_ev(e, &ev);
	ret = d9_sched_stats_out(&tl->st, &ev, &r);
	if (!ret)
		ret = add_pieces(tl, ti, &r);
	tl->threads[ti].run_flow = 0;
	return ret;
}

static int switch_in(struct timeline *tl, uint32_t ti, const struct raw *e)
{
	struct tl_thread *t = &tl->threads[ti];
	struct sched_result r;
	struct sched_ev ev;
	int ret;

	raw_ev(e, &ev);
	ret = d9_sched_stats_in(&tl->st, &ev, &r);
	if (!ret)
		ret = add_pieces(tl, ti, &r);	/* what it did before */
	if (ret)
		return ret;
	if (t->wake_pending) {
		struct tl_flow *f = PUSH(tl, flows);

		if (!f)
			return -ENOMEM;
		f->from = t->waker;
		f->from_ts = t->wake_ts;
		f->to = ti;
		f->to_ts = e->ts;
		t->run_flow = (uint32_t)tl->n_flows;
		t->wake_pending = false;
	}
	if (r.delay > 0) {
		struct tl_delay *d = PUSH(tl, delays);

		if (!d)
			return -ENOMEM;
		d->ts = e->ts;
		d->ns = r.delay_ns;
		d->thread = ti;
	}
	return 0;
}

/* Thread ti's open interval ends with the trace. */
static int thread_close(struct timeline *tl, uint32_t ti)
{
	struct tl_thread *t = &tl->threads[ti];
	struct sched_result r;

	if (!t->sched)
		return 0;
	d9_sched_stats_close(&tl->st, t->sched - 1, tl->last_ns, &r);
	return add_pieces(tl, ti, &r);
}

static int add_mark(struct timeline *tl, const struct raw *e, long ti)
{
	struct tl_mark *m = PUSH(tl, marks);

	if (!m)
		return -ENOMEM;
	m->ts = e->ts;
	m->thread = ti >= 0 ? (uint32_t)ti : TL_NONE;
	m->pid = e->pid;
	m->name = e->name;
	m->args = e->args;
	if (e->type == EV_SCHED_LOST) {
		m->thread = TL_NONE;
		if (tl_intern(tl, "sched.lost", 10, &m->name))
			return -ENOMEM;
		m->args = (uint32_t)tl->pool_len;
		if (tl_pool_printf(tl, "{\"records\":%llu}",
				(unsigned long long)e->a) || tl_pool_put(tl, "", 1))
			return -ENOMEM;
	}
	return 0;
}

static int replay_one(struct timeline *tl, const struct raw *e)
{
	long ti = e->tid ? thread_get(tl, e->src, e->tid, e->pid, false) : -2;
	struct tl_thread *t = ti >= 0 ? &tl->threads[ti] : NULL;

	switch (e->type) {
	case EV_OUT:
		return switch_out(tl, (uint32_t)ti, e);
	case EV_IN:
		return switch_in(tl, (uint32_t)ti, e);
	case EV_WAKING: {
		long wi = visible(e->a) ? thread_get(tl, e->src, (uint32_t)e->a,
						     0, false) : -2;

		if (e->cpu != UINT32_MAX &&
		    d9_sched_stats_cpu_seen(&tl->st, e->src, e->cpu, e->ts))
			return -ENOMEM;

		/* only a wake-up that makes a sleeping thread runnable */
		if (t && wi >= 0 && wi != ti && !e->flag &&
		    t->state != TL_RUNNING && !t->wake_pending) {
			t->wake_pending = true;
			t->wake_ts = e->ts;
			t->waker = (uint32_t)wi;
		}
		return 0;
	}
	case EV_COMM:
		thread_name(t, tl_str(tl, e->name), strlen(tl_str(tl, e->name)),
			    1, e->ts);
		return 0;
	case EV_EXIT:
		/* it runs on to its last switch-out (state X) */
		t->wake_pending = false;
		while (t->depth)
			span_close_top(tl, t, e->ts, false, 0);
		return 0;
	case EV_MIGRATE:
		d9_sched_stats_migrate(&tl->st, e->src, e->tid, e->pid);
		return 0;
	case EV_BEGIN:
		return t ? span_open(tl, (uint32_t)ti, e, e->ts, 0) : 0;
	case EV_END:
		return t ? span_end(tl, (uint32_t)ti, e) : 0;
	case EV_SCHED_LOST:
		if (d9_sched_stats_lost(&tl->st, e->src, e->ts, e->cpu, e->a))
			return -ENOMEM;
		return add_mark(tl, e, ti);
	case EV_INSTANT:
		return add_mark(tl, e, ti);
	case EV_COUNTER:
	case EV_GAUGE:
		return counter_sample(tl, e);
	}
	return 0;
}

static int cmp_slice(const void *a, const void *b)
{
	const struct tl_slice *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_span(const void *a, const void *b)
{
	const struct tl_span *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;	/* outer first */
}

static int cmp_delay(const void *a, const void *b)
{
	const struct tl_delay *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Depth of each span by containment, within its thread. */
static int span_depths(struct timeline *tl)
{
	uint64_t *ends = NULL;
	size_t cap = 0, n = 0;

	for (size_t i = 0; i < tl->n_spans; i++) {
		struct tl_span *s = &tl->spans[i];

		if (i == 0 || s->thread != tl->spans[i - 1].thread)
			n = 0;
		while (n && ends[n - 1] <= s->start)
			n--;
		if (cli_grow((void **)&ends, &cap, n + 1, sizeof(*ends))) {
			free(ends);
			return -ENOMEM;
		}
		s->depth = (uint32_t)n;
		ends[n++] = s->end;
	}
	free(ends);
	return 0;
}

static int replay(struct timeline *tl)
{
	struct priv *p = tl->priv;
	int ret = 0;

	if (p->nraw)
		d9_sort(p->raw, p->nraw, sizeof(*p->raw), cmp_raw);
	if (p->nraw) {
		tl->first_ns = p->raw[0].ts;
		tl->last_ns = p->raw[p->nraw - 1].ts;
	}
	for (size_t i = 0; i < p->nraw && !ret; i++)
		ret = replay_one(tl, &p->raw[i]);
	/* close what is still open at the end of the trace */
	for (size_t i = 0; i < tl->n_threads && !ret; i++) {
		struct tl_thread *t = &tl->threads[i];

		ret = thread_close(tl, (uint32_t)i);
		while (t->depth)
			span_close_top(tl, t, tl->last_ns, false, 0);
	}
	if (ret)
		return ret;
	d9_sched_stats_finish(&tl->st, tl->last_ns);
	if (tl->n_slices)
		d9_sort(tl->slices, tl->n_slices, sizeof(*tl->slices), cmp_slice);
	if (tl->n_spans)
		d9_sort(tl->spans, tl->n_spans, sizeof(*tl->spans), cmp_span);
	if (tl->n_delays)
		d9_sort(tl->delays, tl->n_delays, sizeof(*tl->delays), cmp_delay);
	return span_depths(tl);
}

int tl_load(struct timeline *tl, char **paths, int n, const char *what)
{
	struct priv *p = calloc(1, sizeof(*p));
	int ret = 0;

	memset(tl, 0, sizeof(*tl));
	d9_sched_stats_init(&tl->st);
	tl->priv = p;
	if (!p || tl_pool_put(tl, "", 1)) {
		fprintf(stderr, "dial9: out of memory\n");
		return -1;
	}
	for (int i = 0; i < n && !ret; i++) {
		cli_progress(what, i, n, paths[i]);
		ret = read_file(tl, paths[i]);
		tl->files++;
	}
	cli_progress_done();
	if (!ret) {
		ret = replay(tl);
		if (ret)
			fprintf(stderr, "dial9: out of memory\n");
	}
	free(p->raw);
	free(tl->strtab);
	p->raw = NULL;
	tl->strtab = NULL;
	return ret ? -1 : 0;
}

void tl_free(struct timeline *tl)
{
	struct priv *p = tl->priv;

	for (size_t i = 0; i < tl->n_threads; i++)
		free(tl->threads[i].stack);
	free(tl->threads);
	free(tl->slices);
	free(tl->spans);
	free(tl->marks);
	free(tl->counters);
	free(tl->samples);
	free(tl->flows);
	free(tl->delays);
	free(tl->procs);
	free(tl->pool);
	free(tl->strtab);
	if (p) {
		free(p->raw);
		free(p->tidtab);
		free(p);
	}
	d9_sched_stats_free(&tl->st);
	memset(tl, 0, sizeof(*tl));
}

const char *tl_state_name(int state)
{
	switch (state) {
	case TL_RUNNING: return "running";
	case TL_RUNNABLE: return "runnable";
	case TL_BLOCKED: return "blocked";
	}
	return "unknown";
}

const char *tl_service(const struct timeline *tl, uint32_t pid)
{
	for (size_t i = 0; i < tl->n_procs; i++)
		if (tl->procs[i].pid == pid)
			return tl_str(tl, tl->procs[i].service);
	return NULL;
}

int tl_load_args(struct timeline *tl, int argc, char **argv, const char *what)
{
	char **paths = NULL;
	int n = cli_collect(argc, argv, &paths);

	memset(tl, 0, sizeof(*tl));
	if (n < 0)
		return 1;
	if (n == 0) {
		fprintf(stderr, "dial9 %s: no trace files found\n", what);
		cli_free_paths(paths, n);
		return 1;
	}
	if (tl_load(tl, paths, n, what)) {
		tl_free(tl);
		cli_free_paths(paths, n);
		return 1;
	}
	cli_free_paths(paths, n);
	return 0;
}
