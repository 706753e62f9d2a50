// SPDX-License-Identifier: MIT
/*
 * record.c - the record path. Each thread encodes into its own batch
 * buffer: no locks, no syscalls, no allocation while the buffer has
 * room. A full buffer goes to the collector and the thread takes a
 * recycled one.
 *
 * Handing an idle thread's buffer to the flush thread (the second step
 * of the drain epoch) is an asymmetric Dekker handshake: the thread
 * marks itself busy around each record call with plain stores, the
 * flush thread requests the buffer (steal = 1), runs membarrier() so
 * that every thread of the process passes a full barrier, and takes
 * the buffer (steal = 2) only if the thread was not busy. Whoever wins
 * the compare-and-swap on steal owns the buffer. Without membarrier
 * (or under TSan) both sides use sequentially consistent atomics.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "record/record.h"
#include "common/text.h"
#include "format/wire.h"

struct d9_rec_shared d9_rs = {
	.threads_lock = PTHREAD_MUTEX_INITIALIZER,
};

static __thread struct d9_thread *d9_self
	__attribute__((tls_model("initial-exec")));
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* ---- the type registry: ids are process-wide, stable ---- */
struct reg_entry {
	uint8_t *frame; /* the encoded schema frame */
	uint32_t len;
	uint32_t need;  /* worst-case event size without string bytes */
	bool var;       /* has STR, BYTES or ISTR fields */
	bool istr;      /* has ISTR fields */
	/* nfields if every field is U64, I64, BOOL or F64 and there are at
	 * most DIAL9__MAX_SCALARS of them (dial9__emit_scalars), else -1 */
	int16_t scalars;
	uint8_t fixed;  /* scalar types: bit i set if field i is F64 */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reg_entry reg[D9_MAX_TYPES];
static uint32_t reg_next = 1;

/* Register t on first use: its id, 0 if it is invalid or ids ran out. */
uint32_t d9_register(struct dial9_event_type *t)
{
	size_t cap, nlen;
	uint8_t *f, *q, *pl;
	uint32_t id = 0;

	pthread_mutex_lock(&reg_lock);
	if (t->id) {
		id = t->id;
		goto out;
	}
	if (!t->name || reg_next >= D9_MAX_TYPES || t->nfields > D9_MAX_FIELDS)
		goto out;
	nlen = strlen(t->name);
	if (nlen > D9_MAX_NAME)
		goto out;
	cap = 4 * D9_MAX_VARINT + nlen + 2;
	for (unsigned int i = 0; i < t->nfields; i++) {
		if (!t->fields[i].name || !d9_type_known(t->fields[i].type) ||
		    strlen(t->fields[i].name) > D9_MAX_NAME)
			goto out;
		cap += D9_MAX_VARINT + strlen(t->fields[i].name) + 1;
	}
	f = malloc(cap + 1 + D9_MAX_VARINT);
	pl = malloc(cap);
	if (!f || !pl) {
		free(f);
		free(pl);
		goto out;
	}
	q = d9_put_varint(pl, reg_next);
	*q++ = t->kind;
	q = d9_put_bytes(q, t->name, nlen);
	q = d9_put_varint(q, t->nfields);
	for (unsigned int i = 0; i < t->nfields; i++) {
		q = d9_put_bytes(q, t->fields[i].name, strlen(t->fields[i].name));
		*q++ = t->fields[i].type;
	}
	{
		size_t plen = (size_t)(q - pl);
		uint8_t *r;

		f[0] = D9_F_SCHEMA;
		r = d9_put_varint(f + 1, plen);
		memcpy(r, pl, plen);
		reg[reg_next].len = (uint32_t)(r + plen - f);
	}
	free(pl);
	reg[reg_next].need = 1 + 3 + D9_MAX_VARINT + 10;
	reg[reg_next].scalars = t->nfields <= DIAL9__MAX_SCALARS ?
					(int16_t)t->nfields : -1;
	for (unsigned int i = 0; i < t->nfields; i++) {
		uint8_t ft = t->fields[i].type;

		if (ft == DIAL9_F64 && i < DIAL9__MAX_SCALARS)
			reg[reg_next].fixed |= (uint8_t)(1u << i);
		if (ft != DIAL9_U64 && ft != DIAL9_I64 && ft != DIAL9_BOOL &&
		    ft != DIAL9_F64)
			reg[reg_next].scalars = -1;

		reg[reg_next].need += (uint32_t)d9_value_max(ft, 0);
		if (ft == DIAL9_ISTR) {
			reg[reg_next].need += 1 + 3 * D9_MAX_VARINT;
			reg[reg_next].istr = true;
		}
		if (ft == DIAL9_ISTR || D9_WIRE(ft) == D9_W_LEN)
			reg[reg_next].var = true;
	}
	reg[reg_next].frame = f;
	id = reg_next++;
	__atomic_store_n(&t->id, id, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&reg_lock);
	return id;
}

/* ---- thread state ---- */
static void thread_exit(void *arg);

static void make_key(void)
{
	pthread_key_create(&thread_key, thread_exit);
}

static void link_thread(struct d9_thread *th)
{
	pthread_mutex_lock(&d9_rs.threads_lock);
	th->prev = NULL;
	th->next = d9_rs.threads;
	if (th->next)
		th->next->prev = th;
	d9_rs.threads = th;
	d9_rs.nthreads++;
	th->linked = true;
	pthread_mutex_unlock(&d9_rs.threads_lock);
}

static void unlink_thread_locked(struct d9_thread *th)
{
	if (!th->linked)
		return;
	if (th->prev)
		th->prev->next = th->next;
	else
		d9_rs.threads = th->next;
	if (th->next)
		th->next->prev = th->prev;
	d9_rs.nthreads--;
	th->linked = false;
}

/* First record call of this thread under the current recorder. */
static struct d9_thread *attach(void)
{
	struct d9_thread *th = d9_self;

	if (!th) {
		th = calloc(1, sizeof(*th));
		if (!th)
			return NULL;
		pthread_once(&key_once, make_key);
		pthread_setspecific(thread_key, th);
		d9_self = th;
		th->tid = (pid_t)syscall(SYS_gettid);
		pthread_getname_np(pthread_self(), th->name, sizeof(th->name));
		/* the kernel cuts names at 15 bytes, maybe inside a character */
		th->name[d9_utf8_cut(th->name, sizeof(th->name) - 1)] = 0;
	}
	/* A state left from an earlier recorder: its buffers are gone. */
	memset(th->cursors, 0, sizeof(th->cursors));
	th->cur = &th->cursors[0];
	atomic_store(&th->busy, 0);
	atomic_store(&th->steal, 0);
	atomic_store(&th->seen_epoch, atomic_load(&d9_rs.epoch));
	th->gen = atomic_load(&d9_rs.gen);
	if (!th->linked)
		link_thread(th);
	return th;
}

static inline struct d9_thread *self(void)
{
	struct d9_thread *th = d9_self;

	if (D9_UNLIKELY(!th || th->gen != atomic_load_explicit(
					       &d9_rs.gen, memory_order_relaxed)))
		th = attach();
	return th;
}

/* Write a stream header and the thread frame into a fresh batch. */
static bool new_batch(struct d9_thread *th, struct d9_cursor *c)
{
	size_t n = strnlen(th->name, sizeof(th->name) - 1);
	struct d9_batch *b = d9_batch_get(d9_rs.coll);
	uint8_t *p;

	if (!b)
		return false;
	p = d9_put_header(b->data);
	*p++ = D9_F_THREAD;
	*p++ = (uint8_t)(d9_varint_len((uint64_t)th->tid) + d9_varint_len(n) + n);
	p = d9_put_varint(p, (uint64_t)th->tid);
	p = d9_put_bytes(p, th->name, n);
	c->b = b;
	c->p = p;
	c->end = b->data + b->cap;
	c->ts_base = 0;
	c->nevents = 0;
	th->batch_seq++;
	th->next_str = 0;
	memset(th->schema_sent, 0, sizeof(th->schema_sent));
	return true;
}

void d9_batch_finish(struct d9_batch *b)
{
	uint8_t *p = b->data + b->len;

	b->len = (size_t)(d9_put_batch_end(p, b->len) - b->data);
}

/* Hand the cursor's batch to the collector (or recycle it if empty). */
static void submit(struct d9_cursor *c)
{
	struct d9_batch *b = c->b;

	if (!b)
		return;
	c->b = NULL;
	if (!c->nevents) {
		d9_batch_put(d9_rs.coll, b);
		return;
	}
	b->len = (size_t)(c->p - b->data);
	b->nevents = c->nevents;
	d9_batch_finish(b);
	d9_collector_submit(d9_rs.coll, b);
}

static void enter_slow(struct d9_thread *th)
{
	int s = atomic_load(&th->steal);
	unsigned int e;

	if (s == 1 && atomic_compare_exchange_strong(&th->steal, &s, 0))
		s = 0; /* our buffer stays ours */
	if (s == 2) {
		/* the flush thread took *cur: continue in the other cursor */
		th->cur = th->cur == &th->cursors[0] ? &th->cursors[1]
						     : &th->cursors[0];
		memset(th->cur, 0, sizeof(*th->cur));
		atomic_store(&th->steal, 0);
	}
	e = atomic_load_explicit(&d9_rs.epoch, memory_order_relaxed);
	if (atomic_load_explicit(&th->seen_epoch, memory_order_relaxed) != e) {
		/* first step of a drain: busy threads hand over themselves */
		atomic_store_explicit(&th->seen_epoch, e, memory_order_relaxed);
		submit(th->cur);
	}
}

static inline void enter(struct d9_thread *th)
{
#ifdef DIAL9_TSAN
	const bool fence = true;
#else
	const bool fence = d9_rs.fence_mode;
#endif
	if (fence) {
		atomic_store(&th->busy, 1);
	} else {
		atomic_store_explicit(&th->busy, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
	}
	if (D9_UNLIKELY(atomic_load_explicit(&th->steal, fence ?
				memory_order_seq_cst : memory_order_relaxed) ||
			atomic_load_explicit(&th->seen_epoch,
					     memory_order_relaxed) !=
				atomic_load_explicit(&d9_rs.epoch,
						     memory_order_relaxed)))
		enter_slow(th);
}

static inline void leave(struct d9_thread *th)
{
	atomic_store_explicit(&th->busy, 0, memory_order_release);
}

static void count_lost(uint64_t n)
{
	atomic_fetch_add(&d9_rs.coll->lost_events, n);
}

/* A call that does not match its event type: dropped, counted lost (and
 * apart, for dial9_stats.events_invalid and dial9.lost). */
static void count_invalid(void)
{
	struct d9_collector *c = d9_rs.coll;

	if (!c)
		return;	/* no recorder has run yet */
	atomic_fetch_add_explicit(&c->invalid_events, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->lost_events, 1, memory_order_relaxed);
}

static bool schema_sent(const struct d9_thread *th, uint32_t id)
{
	return th->schema_sent[id / 64] & (1ull << (id % 64));
}

/*
 * Make room for need bytes in the current batch, plus the type's schema
 * frame if this batch has not carried it yet (written here). NULL if the
 * event cannot be recorded: no buffer, or larger than a whole buffer.
 */
static __attribute__((noinline)) struct d9_cursor *
reserve_slow(struct d9_thread *th, uint32_t id, const struct reg_entry *re,
	     size_t need)
{
	struct d9_cursor *c = th->cur;

	for (int fresh = 0;; fresh++) {
		size_t total = need + (schema_sent(th, id) ? 0 : re->len);

		if (c->b && (size_t)(c->end - c->p) >= total)
			break;
		if (fresh) {
			atomic_fetch_add(&d9_rs.oversize, 1);
			return NULL;
		}
		submit(c);
		if (!new_batch(th, c))
			return NULL;
	}
	if (!schema_sent(th, id)) {
		memcpy(c->p, re->frame, re->len);
		c->p += re->len;
		th->schema_sent[id / 64] |= 1ull << (id % 64);
	}
	return c;
}

/* The common case, one test: the schema is in the batch and need fits. */
static inline struct d9_cursor *reserve(struct d9_thread *th, uint32_t id,
					const struct reg_entry *re, size_t need)
{
	struct d9_cursor *c = th->cur;

	if (D9_LIKELY(schema_sent(th, id) && c->b &&
		      (size_t)(c->end - c->p) >= need))
		return c;
	return reserve_slow(th, id, re, need);
}

/* Timestamp (a reset frame first if the delta does not fit), then the
 * event tag; returns where the field values go. */
static inline uint8_t *put_event_head(struct d9_cursor *c, uint32_t id,
				      uint64_t ts)
{
	uint8_t *p = c->p;
	uint64_t d = ts - c->ts_base; /* wraps if ts < base: a reset */

	if (D9_UNLIKELY(d > D9_MAX_DELTA)) {
		*p++ = D9_F_TS_RESET;
		*p++ = 8;
		p = d9_put_u64le(p, ts);
		d = 0;
	}
	c->ts_base = ts;
	if (D9_LIKELY(id < D9_EVENT_INLINE_IDS)) {
		*p++ = (uint8_t)(D9_F_EVENT_BASE + id);
	} else {
		*p++ = D9_F_EVENT_EXT;
		p = d9_put_varint(p, id);
	}
	return d9_put_varint(p, d);
}

/*
 * Record an event whose fields are all U64, I64, BOOL or F64, given as
 * words: the value, zigzag(i64), 0/1 or the IEEE bits. re->scalars must
 * equal n. Varints for all but the F64 fields (bits in re->fixed).
 */
static inline void emit_words(uint32_t id, const struct reg_entry *re,
			      const uint64_t *w, unsigned int n)
{
	struct d9_thread *th = self();
	struct d9_cursor *c;
	uint8_t *p;

	if (D9_UNLIKELY(!th)) {
		count_lost(1);	/* no memory for the thread's state */
		return;
	}
	enter(th);
	c = reserve(th, id, re, re->need);
	if (D9_UNLIKELY(!c)) {
		count_lost(1);
		leave(th);
		return;
	}
	p = put_event_head(c, id, d9_now());
	if (D9_LIKELY(!re->fixed)) {
		for (unsigned int i = 0; i < n; i++)
			p = d9_put_varint(p, w[i]);
	} else {
		for (unsigned int i = 0; i < n; i++)
			p = re->fixed & (1u << i) ? d9_put_u64le(p, w[i]) :
						    d9_put_varint(p, w[i]);
	}
	c->p = p;
	c->nevents++;
	leave(th);
}

void dial9__emit_scalars(struct dial9_event_type *t, const uint64_t *w,
			 unsigned int n)
{
	uint32_t id = __atomic_load_n(&t->id, __ATOMIC_ACQUIRE);

	if (D9_UNLIKELY(!id) && !(id = d9_register(t)))
		goto invalid;
	/* the caller's types were matched against t->fields when it was
	 * compiled; here only the count and the type's shape */
	if (D9_UNLIKELY(reg[id].scalars != (int)n || n != t->nfields))
		goto invalid;
	emit_words(id, &reg[id], w, n);
	return;
invalid:
	count_invalid();
}

/* The id of a string in the current batch, writing its frame once. */
static uint32_t intern(struct d9_thread *th, struct d9_cursor *c,
		       const void *s, size_t len)
{
	uint64_t h = d9_fnv1a(s, len);
	struct d9_intern *slot = NULL;
	uint32_t id;
	uint8_t *p;

	for (unsigned int i = 0; i < 4; i++) {
		struct d9_intern *e = &th->intern[(h + i) & (D9_INTERN_SLOTS - 1)];

		if (e->batch != th->batch_seq) {
			slot = e;
			break;
		}
		if (e->hash == h && e->len == len && !memcmp(e->s, s, len))
			return e->id;
	}
	if (!slot)
		slot = &th->intern[h & (D9_INTERN_SLOTS - 1)];
	id = th->next_str++;
	p = c->p;
	*p++ = D9_F_STRING;
	p = d9_put_varint(p, d9_varint_len(id) + d9_varint_len(len) + len);
	p = d9_put_varint(p, id);
	p = d9_put_varint(p, len);
	memcpy(p, s, len);
	slot->hash = h;
	slot->s = p;
	slot->len = (uint32_t)len;
	slot->id = id;
	slot->batch = th->batch_seq;
	c->p = p + len;
	return id;
}

void dial9__emit(struct dial9_event_type *t, const struct dial9_value *v,
		 unsigned int n)
{
	uint32_t id = __atomic_load_n(&t->id, __ATOMIC_ACQUIRE);
	uint32_t sids[D9_MAX_FIELDS];
	const struct reg_entry *re;
	struct d9_thread *th;
	struct d9_cursor *c;
	size_t need;
	uint8_t *p;

	if (D9_UNLIKELY(!id) && !(id = d9_register(t)))
		goto invalid;
	if (D9_UNLIKELY(n != t->nfields))
		goto invalid;
	re = &reg[id];
	need = re->need;
	for (unsigned int i = 0; i < n; i++) {
		uint8_t ft = t->fields[i].type;

		if (D9_UNLIKELY(v[i].type != ft) &&
		    !(ft == DIAL9_ISTR && v[i].type == DIAL9_STR))
			goto invalid;
	}
	if (re->scalars >= 0) {
		uint64_t w[DIAL9__MAX_SCALARS];

		for (unsigned int i = 0; i < n; i++)
			w[i] = dial9__word(t->fields[i].type, &v[i]);
		emit_words(id, re, w, n);
		return;
	}
	if (re->var)
		for (unsigned int i = 0; i < n; i++)
			if (t->fields[i].type == DIAL9_ISTR ||
			    D9_WIRE(t->fields[i].type) == D9_W_LEN)
				need += v[i].str.len * (t->fields[i].type ==
							DIAL9_ISTR ? 2 : 1);
	th = self();
	if (D9_UNLIKELY(!th)) {
		count_lost(1);	/* no memory for the thread's state */
		return;
	}
	enter(th);
	c = reserve(th, id, re, need);
	if (D9_UNLIKELY(!c)) {
		count_lost(1);
		leave(th);
		return;
	}
	if (re->istr)
		for (unsigned int i = 0; i < n; i++)
			if (t->fields[i].type == DIAL9_ISTR)
				sids[i] = intern(th, c, v[i].str.ptr,
						 v[i].str.len);
	p = put_event_head(c, id, d9_now());
	for (unsigned int i = 0; i < n; i++)
		p = d9_put_value(p, t->fields[i].type, &v[i], &sids[i]);
	c->p = p;
	c->nevents++;
	leave(th);
	return;
invalid:
	count_invalid();
}

/* ---- the library's own event types ---- */
#define D9_TYPE(var, name, kind, ...)                                      \
	static const struct dial9_field var##_f[] = { __VA_ARGS__ };       \
	static struct dial9_event_type var = {                             \
		name, kind, sizeof(var##_f) / sizeof(var##_f[0]), var##_f, 0 \
	}

D9_TYPE(t_counter, "dial9.counter", DIAL9_KIND_COUNTER, { "name", DIAL9_ISTR },
	{ "unit", DIAL9_ISTR }, { "value", DIAL9_U64 });
D9_TYPE(t_gauge, "dial9.gauge", DIAL9_KIND_GAUGE, { "name", DIAL9_ISTR },
	{ "unit", DIAL9_ISTR }, { "value", DIAL9_F64 });
D9_TYPE(t_instant, "dial9.instant", DIAL9_KIND_INSTANT, { "name", DIAL9_ISTR });
D9_TYPE(t_tname, "dial9.thread_name", DIAL9_KIND_INTERNAL,
	{ "name", DIAL9_STR });

void dial9__counter(const char *name, const char *unit, uint64_t delta)
{
	struct dial9_value v[3] = { dial9_istr(name), dial9_istr(unit),
				    dial9_u64(delta) };

	dial9__emit(&t_counter, v, 3);
}

void dial9__gauge(const char *name, const char *unit, double value)
{
	struct dial9_value v[3] = { dial9_istr(name), dial9_istr(unit),
				    dial9_f64(value) };

	dial9__emit(&t_gauge, v, 3);
}

void dial9__instant(const char *name)
{
	struct dial9_value v = dial9_istr(name);

	dial9__emit(&t_instant, &v, 1);
}

void dial9__thread_name(const char *name)
{
	struct d9_thread *th = self();
	struct dial9_value v;
	size_t n;

	if (!th)
		return;
	enter(th);
	/* at most 31 bytes, cut between characters */
	n = d9_utf8_cut(name, sizeof(th->name) - 1);
	memcpy(th->name, name, n);
	th->name[n] = 0;
	leave(th);
	v = dial9_str(th->name);
	dial9__emit(&t_tname, &v, 1);
}

/* ---- thread exit, the drain, fork ---- */
static void thread_exit(void *arg)
{
	struct d9_thread *th = arg;

	if (th->gen == atomic_load(&d9_rs.gen) && dial9__active && th->linked) {
		enter(th);
		submit(th->cur);
		leave(th);
	}
	pthread_mutex_lock(&d9_rs.threads_lock);
	unlink_thread_locked(th);
	pthread_mutex_unlock(&d9_rs.threads_lock);
	d9_self = NULL;
	free(th);
}

/* Without membarrier both sides use seq_cst operations on busy and
 * steal, which is enough for the handshake on their own. */
static void full_barrier(void)
{
#ifndef DIAL9_TSAN
	if (!d9_rs.fence_mode)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
#endif
}

unsigned int d9_drain_idle_threads(bool all)
{
	unsigned int e = atomic_load(&d9_rs.epoch), busy = 0, asked = 0;
	struct d9_thread *th;

	pthread_mutex_lock(&d9_rs.threads_lock);
	for (th = d9_rs.threads; th; th = th->next) {
		int z = 0;

		if (all || atomic_load_explicit(&th->seen_epoch,
						memory_order_relaxed) != e)
			asked += atomic_compare_exchange_strong(&th->steal, &z, 1);
	}
	if (asked)
		full_barrier();
	for (th = d9_rs.threads; asked && th; th = th->next) {
		struct d9_cursor *c;
		int one = 1;

		if (atomic_load(&th->steal) != 1)
			continue;
		if (atomic_load(&th->busy)) {
			/* it is recording: it will hand over by itself */
			atomic_compare_exchange_strong(&th->steal, &one, 0);
			busy++;
			continue;
		}
		/* read cur before winning: once steal is 2 the thread may
		 * switch cursors, but it never touches the one we took */
		c = th->cur;
		if (atomic_compare_exchange_strong(&th->steal, &one, 2))
			submit(c);
	}
	pthread_mutex_unlock(&d9_rs.threads_lock);
	return busy;
}

/* Forget every thread (recorder stopped): they re-attach later. */
void d9_record_detach_all(void)
{
	pthread_mutex_lock(&d9_rs.threads_lock);
	while (d9_rs.threads)
		unlink_thread_locked(d9_rs.threads);
	pthread_mutex_unlock(&d9_rs.threads_lock);
}

bool d9_membarrier_register(void)
{
#ifdef DIAL9_TSAN
	return false;
#else
	return !syscall(SYS_membarrier,
			MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
#endif
}

void d9_record_fork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
	pthread_mutex_lock(&d9_rs.threads_lock);
}

void d9_record_fork_parent(void)
{
	pthread_mutex_unlock(&d9_rs.threads_lock);
	pthread_mutex_unlock(&reg_lock);
}

void d9_record_fork_child(void)
{
	/* prepare locked both in this very thread: it may unlock them */
	pthread_mutex_unlock(&d9_rs.threads_lock);
	pthread_mutex_unlock(&reg_lock);
	/* the other threads do not exist here: forget them (leaked) */
	d9_rs.threads = NULL;
	d9_rs.nthreads = 0;
	if (d9_self)
		d9_self->linked = false;
	atomic_fetch_add(&d9_rs.gen, 1);
	dial9__active = 0;
}
