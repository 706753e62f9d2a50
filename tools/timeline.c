// SPDX-License-Identifier: MIT
/*
 * timeline.c - read traces, order their events by time, and replay them
 * into slices, spans, marks, counter samples, flows and delays (see
 * timeline.h for the rules).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "timeline.h"

/* One event as read, before ordering. */
enum {
	EV_OUT, EV_IN, EV_WAKING, EV_COMM, EV_EXIT, EV_MIGRATE, EV_SCHED_LOST,
	EV_BEGIN, EV_END, EV_INSTANT, EV_COUNTER, EV_GAUGE, EV_LOST,
};

struct raw {
	uint64_t ts, seq;
	uint64_t a;		/* delay, waker tid, count, or f64 bits */
	uint32_t tid, pid;
	uint32_t name, args;	/* pool offsets (args: unit for counters) */
	uint8_t type, flag;
};

struct priv {
	struct raw *raw;
	size_t nraw, capraw;
	uint32_t *strtab;	/* open-addressing set of pool offsets */
	size_t strtab_cap, nstr;
	uint32_t *tidtab;	/* tid -> thread index + 1 */
	size_t tidtab_cap;
};

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t nc;
	void *nv;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 64;
	while (nc < need)
		nc *= 2;
	nv = realloc(*v, nc * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}

/* Append an element to a TL_VEC-style vector; NULL on ENOMEM. */
#define PUSH(tl, vec)                                                       \
	(grow((void **)&(tl)->vec, &(tl)->cap_##vec, (tl)->n_##vec + 1,     \
	      sizeof(*(tl)->vec)) ? NULL : &(tl)->vec[(tl)->n_##vec++])

/* ---- string pool ---- */

static int pool_put(struct timeline *tl, const void *s, size_t len)
{
	if (tl->pool_len + len > UINT32_MAX - 1)
		return -ENOMEM;
	if (grow((void **)&tl->pool, &tl->pool_cap, tl->pool_len + len + 1, 1))
		return -ENOMEM;
	memcpy(tl->pool + tl->pool_len, s, len);
	tl->pool_len += len;
	return 0;
}

static int pool_printf(struct timeline *tl, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return pool_put(tl, buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static uint64_t hash_bytes(const void *s, size_t len)
{
	const uint8_t *p = s;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* The pool offset of a NUL-terminated copy of s, shared by equal strings. */
static int intern(struct timeline *tl, const void *s, size_t len, uint32_t *off)
{
	struct priv *p = tl->priv;
	size_t i;

	if (!len) {
		*off = 0;
		return 0;
	}
	if (p->nstr * 2 >= p->strtab_cap) {
		size_t nc = p->strtab_cap ? p->strtab_cap * 2 : 1024;
		uint32_t *nt = calloc(nc, sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		for (size_t j = 0; j < p->strtab_cap; j++) {
			uint32_t o = p->strtab[j];

			if (!o)
				continue;
			i = hash_bytes(tl->pool + o, strlen(tl->pool + o)) & (nc - 1);
			while (nt[i])
				i = (i + 1) & (nc - 1);
			nt[i] = o;
		}
		free(p->strtab);
		p->strtab = nt;
		p->strtab_cap = nc;
	}
	i = hash_bytes(s, len) & (p->strtab_cap - 1);
	for (; p->strtab[i]; i = (i + 1) & (p->strtab_cap - 1)) {
		const char *c = tl->pool + p->strtab[i];

		if (!strncmp(c, s, len) && c[len] == 0 && !memchr(s, 0, len)) {
			*off = p->strtab[i];
			return 0;
		}
	}
	*off = (uint32_t)tl->pool_len;
	if (pool_put(tl, s, strnlen(s, len)) || pool_put(tl, "", 1))
		return -ENOMEM;
	p->strtab[i] = *off;
	p->nstr++;
	return 0;
}

/* ---- JSON ---- */

static const char hexd[] = "0123456789abcdef";

/* Escape into a buffer; returns the length (at most 6 * len + 2). */
static size_t json_escape(char *o, const uint8_t *s, size_t len)
{
	size_t n = 0;

	o[n++] = '"';
	for (size_t i = 0; i < len; i++) {
		uint8_t c = s[i];

		if (c == '"' || c == '\\') {
			o[n++] = '\\';
			o[n++] = (char)c;
		} else if (c == '\n') {
			o[n++] = '\\';
			o[n++] = 'n';
		} else if (c < 0x20 || c == 0x7f || c == '<' || c == '>' ||
			   c == '&') {
			/* <, >, & escaped: the text may sit in an HTML page */
			memcpy(o + n, "\\u00", 4);
			o[n + 4] = hexd[c >> 4];
			o[n + 5] = hexd[c & 15];
			n += 6;
		} else {
			o[n++] = (char)c;
		}
	}
	o[n++] = '"';
	return n;
}

void tl_json_str(FILE *out, const char *s, size_t len)
{
	char buf[6 * 256 + 2];
	char *o = len > 256 ? malloc(6 * len + 2) : buf;

	if (!o) {
		fputs("\"\"", out);
		return;
	}
	fwrite(o, 1, json_escape(o, (const uint8_t *)s, len), out);
	if (o != buf)
		free(o);
}

void tl_json_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%llu.%03u", (unsigned long long)(ns / 1000),
		(unsigned int)(ns % 1000));
}

static int pool_json_str(struct timeline *tl, const void *s, size_t len)
{
	char buf[6 * 64 + 2];
	char *o = len > 64 ? malloc(6 * len + 2) : buf;
	int ret;

	if (!o)
		return -ENOMEM;
	ret = pool_put(tl, o, json_escape(o, s, len));
	if (o != buf)
		free(o);
	return ret;
}

static int pool_json_value(struct timeline *tl, const struct dial9_value *v)
{
	switch (v->type) {
	case DIAL9_U64:
		return pool_printf(tl, "%llu", (unsigned long long)v->u64);
	case DIAL9_I64:
		return pool_printf(tl, "%lld", (long long)v->i64);
	case DIAL9_BOOL:
		return pool_printf(tl, "%s", v->b ? "true" : "false");
	case DIAL9_F64:
		if (isfinite(v->f64))
			return pool_printf(tl, "%.17g", v->f64);
		return pool_printf(tl, "null");
	case DIAL9_STR:
	case DIAL9_ISTR:
		return pool_json_str(tl, v->str.ptr, v->str.len);
	case DIAL9_BYTES: {
		const uint8_t *b = v->str.ptr;
		int ret = pool_put(tl, "\"", 1);

		for (size_t i = 0; !ret && i < v->str.len; i++) {
			char h[2] = { hexd[b[i] >> 4], hexd[b[i] & 15] };

			ret = pool_put(tl, h, 2);
		}
		return ret ? ret : pool_put(tl, "\"", 1);
	}
	default:
		return pool_printf(tl, "null");
	}
}

/* An event's fields as a JSON object in the pool, minus @skip fields. */
static int pool_args(struct timeline *tl, const struct dial9_record *r,
		     const char *skip1, const char *skip2, uint32_t *off)
{
	const struct dial9_schema *s = r->schema;
	bool first = true;
	int ret;

	*off = (uint32_t)tl->pool_len;
	ret = pool_put(tl, "{", 1);
	for (uint32_t i = 0; !ret && i < s->nfields; i++) {
		const char *fn = s->fields[i].name;

		if ((skip1 && !strcmp(fn, skip1)) || (skip2 && !strcmp(fn, skip2)))
			continue;
		if (!first)
			ret = pool_put(tl, ",", 1);
		first = false;
		if (!ret)
			ret = pool_json_str(tl, fn, strlen(fn));
		if (!ret)
			ret = pool_put(tl, ":", 1);
		if (!ret)
			ret = pool_json_value(tl, &r->values[i]);
	}
	if (!ret)
		ret = pool_put(tl, "}", 2);	/* with the NUL */
	if (!ret && first)
		*off = 0;	/* no fields: no args */
	return ret;
}

/* ---- threads ---- */

/* Index of a thread, created on first sight; -1 on ENOMEM. */
static long thread_get(struct timeline *tl, uint32_t tid, uint32_t pid,
		       bool create)
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
			i = (tl->threads[j].tid * 2654435761u) & (nc - 1);
			while (nt[i])
				i = (i + 1) & (nc - 1);
			nt[i] = (uint32_t)j + 1;
		}
		free(p->tidtab);
		p->tidtab = nt;
		p->tidtab_cap = nc;
	}
	i = (tid * 2654435761u) & (p->tidtab_cap - 1);
	for (; p->tidtab[i]; i = (i + 1) & (p->tidtab_cap - 1)) {
		t = &tl->threads[p->tidtab[i] - 1];
		if (t->tid == tid) {
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
};

static uint64_t fu64(const struct dial9_record *r, int i)
{
	return i >= 0 && r->values[i].type == DIAL9_U64 ? r->values[i].u64 : 0;
}

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
		{ "dial9.counter", EV_COUNTER }, { "dial9.gauge", EV_GAUGE },
		{ "dial9.instant", EV_INSTANT },
	};

	memset(f, 0, sizeof(*f));
	f->schema = s;
	f->type = -1;
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
	return intern(tl, v->str.ptr, v->str.len, off);
}

static int read_event(struct timeline *tl, const struct fields *f,
		      const struct dial9_record *r, uint32_t file_pid)
{
	struct priv *p = tl->priv;
	struct raw *e;
	bool sched = f->type <= EV_SCHED_LOST;
	uint64_t tid = sched ? fu64(r, f->tid) : r->tid;
	int ret = 0;

	if (f->type == EV_LOST) {
		tl->lost_events += fu64(r, f->count);
		return 0;
	}
	if (grow((void **)&p->raw, &p->capraw, p->nraw + 1, sizeof(*p->raw)))
		return -ENOMEM;
	e = &p->raw[p->nraw];
	memset(e, 0, sizeof(*e));
	e->ts = r->ts_ns;
	e->seq = p->nraw;
	e->type = (uint8_t)f->type;
	e->tid = visible(tid) ? (uint32_t)tid : 0;
	e->pid = sched ? (uint32_t)fu64(r, f->pid) : file_pid;
	switch (f->type) {
	case EV_OUT:
	case EV_WAKING:
		e->flag = f->flag >= 0 && r->values[f->flag].type == DIAL9_BOOL &&
			  r->values[f->flag].b;
		e->a = fu64(r, f->waker);
		break;
	case EV_IN:
		e->flag = f->flag >= 0 && r->values[f->flag].type == DIAL9_BOOL &&
			  r->values[f->flag].b;
		e->a = fu64(r, f->delay);
		break;
	case EV_COMM:
		ret = str_field(tl, r, f->name, &e->name);
		break;
	case EV_SCHED_LOST:
		tl->lost_sched += fu64(r, f->count);
		e->a = fu64(r, f->count);
		break;
	case EV_BEGIN:
	case EV_END:
		ret = intern(tl, r->schema->name, strlen(r->schema->name),
			     &e->name);
		if (!ret)
			ret = pool_args(tl, r, NULL, NULL, &e->args);
		break;
	case EV_INSTANT:
		if (!strcmp(r->schema->name, "dial9.instant")) {
			ret = str_field(tl, r, f->name, &e->name);
		} else {
			ret = intern(tl, r->schema->name,
				     strlen(r->schema->name), &e->name);
			if (!ret)
				ret = pool_args(tl, r, NULL, NULL, &e->args);
		}
		break;
	case EV_COUNTER:
	case EV_GAUGE: {
		double v = fnum(r, f->value);

		if (!strncmp(r->schema->name, "dial9.", 6))
			ret = str_field(tl, r, f->name, &e->name);
		else
			ret = intern(tl, r->schema->name,
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
	    thread_get(tl, e->tid, e->pid, true) < 0)
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
		    intern(tl, kv->value, kv->value_len, &service))
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
		if (r.kind == DIAL9_REC_METADATA)
			meta_pid(tl, &r, &pid);
		if (r.kind == DIAL9_REC_THREAD && visible(r.tid) &&
		    r.thread_name[0]) {
			long ti = thread_get(tl, r.tid, pid, true);

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

	if (grow((void **)&t->stack, &t->stack_cap, t->depth + 1,
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
		long ti = thread_get(tl, e->tid, e->pid, false);

		s->thread = ti >= 0 ? (uint32_t)ti : TL_NONE;
	}
	return 0;
}

/* The thread stops running at ts (switch-out, exit, end of trace). */
static int run_end(struct timeline *tl, uint32_t ti, uint64_t ts)
{
	struct tl_thread *t = &tl->threads[ti];
	int ret = 0;

	if (t->state == TL_RUNNING)
		ret = add_slice(tl, ti, TL_RUNNING, t->since, ts, t->run_flow);
	t->run_flow = 0;
	return ret;
}

static int switch_in(struct timeline *tl, uint32_t ti, const struct raw *e)
{
	struct tl_thread *t = &tl->threads[ti];
	uint64_t w = e->flag ? e->a : 0;
	int ret = 0;

	if (t->state == TL_RUNNING)	/* its switch-out was lost */
		ret = run_end(tl, ti, e->ts);
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
	if (t->state == TL_RUNNABLE) {
		ret = add_slice(tl, ti, TL_RUNNABLE, t->since, e->ts, 0);
	} else if (t->state == TL_BLOCKED) {
		/* the wait ends the gap; before it the thread slept */
		if (w > e->ts - t->since)
			w = e->ts - t->since;
		ret = add_slice(tl, ti, TL_BLOCKED, t->since, e->ts - w, 0);
		if (!ret && w)
			ret = add_slice(tl, ti, TL_RUNNABLE, e->ts - w, e->ts, 0);
	} else if (t->state != TL_RUNNING && w) {
		/* first sight: it waited w before this */
		ret = add_slice(tl, ti, TL_RUNNABLE,
				e->ts - w > tl->first_ns ? e->ts - w : tl->first_ns,
				e->ts, 0);
	}
	if (!ret && e->flag) {
		struct tl_delay *d = PUSH(tl, delays);

		if (!d)
			return -ENOMEM;
		d->ts = e->ts;
		d->ns = e->a;
		d->thread = ti;
	}
	t->state = TL_RUNNING;
	t->since = e->ts;
	return ret ? ret : sched_stats_in(&tl->st, e->ts, e->tid, e->pid,
					  e->flag, e->a);
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
		if (intern(tl, "sched.lost", 10, &m->name))
			return -ENOMEM;
		m->args = (uint32_t)tl->pool_len;
		if (pool_printf(tl, "{\"records\":%llu}",
				(unsigned long long)e->a) || pool_put(tl, "", 1))
			return -ENOMEM;
	}
	return 0;
}

static int replay_one(struct timeline *tl, const struct raw *e)
{
	long ti = e->tid ? thread_get(tl, e->tid, e->pid, false) : -2;
	struct tl_thread *t = ti >= 0 ? &tl->threads[ti] : NULL;
	int ret;

	switch (e->type) {
	case EV_OUT:
		ret = run_end(tl, (uint32_t)ti, e->ts);
		t->state = e->flag ? TL_RUNNABLE : TL_BLOCKED;
		t->since = e->ts;
		return ret ? ret : sched_stats_out(&tl->st, e->ts, e->tid,
						   e->pid, e->flag);
	case EV_IN:
		return switch_in(tl, (uint32_t)ti, e);
	case EV_WAKING: {
		long wi = visible(e->a) ? thread_get(tl, (uint32_t)e->a, 0,
						     false) : -2;

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
		ret = run_end(tl, (uint32_t)ti, e->ts);
		t->state = 0;
		t->wake_pending = false;
		while (t->depth)
			span_close_top(tl, t, e->ts, false, 0);
		return ret;
	case EV_MIGRATE:
		sched_stats_migrate(&tl->st, e->ts, e->tid, e->pid);
		return 0;
	case EV_BEGIN:
		return t ? span_open(tl, (uint32_t)ti, e, e->ts, 0) : 0;
	case EV_END:
		return t ? span_end(tl, (uint32_t)ti, e) : 0;
	case EV_SCHED_LOST:
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
		if (grow((void **)&ends, &cap, n + 1, sizeof(*ends))) {
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
		qsort(p->raw, p->nraw, sizeof(*p->raw), cmp_raw);
	if (p->nraw) {
		tl->first_ns = p->raw[0].ts;
		tl->last_ns = p->raw[p->nraw - 1].ts;
	}
	for (size_t i = 0; i < p->nraw && !ret; i++)
		ret = replay_one(tl, &p->raw[i]);
	/* close what is still open at the end of the trace */
	for (size_t i = 0; i < tl->n_threads && !ret; i++) {
		struct tl_thread *t = &tl->threads[i];

		if (t->state == TL_RUNNING)
			ret = run_end(tl, (uint32_t)i, tl->last_ns);
		else if (t->state)
			ret = add_slice(tl, (uint32_t)i, t->state, t->since,
					tl->last_ns, 0);
		while (t->depth)
			span_close_top(tl, t, tl->last_ns, false, 0);
	}
	if (ret)
		return ret;
	sched_stats_finish(&tl->st, tl->last_ns);
	if (tl->n_slices)
		qsort(tl->slices, tl->n_slices, sizeof(*tl->slices), cmp_slice);
	if (tl->n_spans)
		qsort(tl->spans, tl->n_spans, sizeof(*tl->spans), cmp_span);
	if (tl->n_delays)
		qsort(tl->delays, tl->n_delays, sizeof(*tl->delays), cmp_delay);
	return span_depths(tl);
}

int tl_load(struct timeline *tl, char **paths, int n, const char *what)
{
	struct priv *p = calloc(1, sizeof(*p));
	int ret = 0;

	memset(tl, 0, sizeof(*tl));
	sched_stats_init(&tl->st);
	tl->priv = p;
	if (!p || pool_put(tl, "", 1)) {
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
	free(p->strtab);
	p->raw = NULL;
	p->strtab = NULL;
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
	if (p) {
		free(p->raw);
		free(p->strtab);
		free(p->tidtab);
		free(p);
	}
	sched_stats_free(&tl->st);
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
