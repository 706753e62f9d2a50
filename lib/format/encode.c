// SPDX-License-Identifier: MIT
/*
 * encode.c - the general trace encoder: a growable buffer, schemas
 * checked against values, strings interned per stream. The record path
 * (record.c) has its own allocation-free writer over the same wire.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dial9.h"
#include "common/common.h"
#include "format/wire.h"

struct enc_schema {
	uint32_t nfields;
	/* every field U64 or BOOL: d9_encoder_event_u64() */
	bool varints;
	uint8_t *types;
};

struct enc_str {
	char *s;
	size_t len;
	uint32_t id;
};

struct dial9_encoder {
	uint8_t *buf;
	size_t len, cap;
	size_t stream_start;
	uint64_t ts_base;
	struct enc_schema *schemas; /* indexed by type id */
	uint32_t nschemas;
	struct enc_str *strs; /* open addressing */
	uint32_t strs_cap, strs_used, next_str_id;
};

int dial9_encoder_new(struct dial9_encoder **out)
{
	struct dial9_encoder *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	*out = e;
	return 0;
}

static void forget_stream(struct dial9_encoder *e)
{
	for (uint32_t i = 0; i < e->nschemas; i++)
		free(e->schemas[i].types);
	free(e->schemas);
	e->schemas = NULL;
	e->nschemas = 0;
	for (uint32_t i = 0; i < e->strs_cap; i++)
		free(e->strs[i].s);
	free(e->strs);
	e->strs = NULL;
	e->strs_cap = e->strs_used = e->next_str_id = 0;
	e->ts_base = 0;
}

void dial9_encoder_free(struct dial9_encoder *e)
{
	if (!e)
		return;
	forget_stream(e);
	free(e->buf);
	free(e);
}

const void *dial9_encoder_data(const struct dial9_encoder *e, size_t *len)
{
	*len = e->len;
	return e->buf;
}

void dial9_encoder_clear(struct dial9_encoder *e)
{
	e->len = 0;
	e->stream_start = 0;
}

/* reserve() when the buffer must grow. */
static __attribute__((noinline)) uint8_t *reserve_grow(struct dial9_encoder *e,
							size_t n)
{
	size_t cap = e->cap ? e->cap : 4096;
	uint8_t *nb;

	while (cap - e->len < n) {
		if (cap > SIZE_MAX / 2)
			return NULL;
		cap *= 2;
	}
	nb = realloc(e->buf, cap);
	if (!nb)
		return NULL;
	e->buf = nb;
	e->cap = cap;
	return e->buf + e->len;
}

/*
 * Make room for n more bytes; returns the write position or NULL.  Inline:
 * every event asks (d9_encoder_event_u64()'s cost is per event).
 */
static inline uint8_t *reserve(struct dial9_encoder *e, size_t n)
{
	if (e->cap - e->len < n)
		return reserve_grow(e, n);
	return e->buf + e->len;
}

int dial9_encoder_begin_stream(struct dial9_encoder *e)
{
	uint8_t *p = reserve(e, D9_HEADER_LEN);

	if (!p)
		return -ENOMEM;
	forget_stream(e);
	e->stream_start = e->len;
	e->len = (size_t)(d9_put_header(p) - e->buf);
	return 0;
}

/* Write a control frame whose payload is [pl, pl + n). */
static int put_control(struct dial9_encoder *e, uint8_t tag, const uint8_t *pl,
		       size_t n)
{
	uint8_t *p = reserve(e, 1 + D9_MAX_VARINT + n);

	if (!p)
		return -ENOMEM;
	*p++ = tag;
	p = d9_put_varint(p, n);
	memcpy(p, pl, n);
	e->len = (size_t)(p + n - e->buf);
	return 0;
}

int dial9_encoder_end_stream(struct dial9_encoder *e)
{
	uint8_t pl[D9_MAX_VARINT];
	uint8_t *q = d9_put_varint(pl, e->len - e->stream_start);

	return put_control(e, D9_F_BATCH_END, pl, (size_t)(q - pl));
}

int dial9_encoder_schema(struct dial9_encoder *e, uint32_t id, uint8_t kind,
			 const char *name, uint32_t nfields,
			 const struct dial9_field *fields)
{
	size_t nlen = strlen(name), cap = 2 * D9_MAX_VARINT + 1 + nlen + 8;
	uint8_t *pl, *q, *types;
	int ret;

	if (id > D9_MAX_TYPE_ID || nfields > D9_MAX_FIELDS || nlen > D9_MAX_NAME)
		return -EINVAL;
	for (uint32_t i = 0; i < nfields; i++) {
		size_t fl = strlen(fields[i].name);

		if (!d9_type_known(fields[i].type) || fl > D9_MAX_NAME)
			return -EINVAL;
		cap += D9_MAX_VARINT + fl + 1;
	}
	if (id >= e->nschemas) {
		struct enc_schema *ns = realloc(e->schemas, (id + 1) * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		memset(ns + e->nschemas, 0, (id + 1 - e->nschemas) * sizeof(*ns));
		e->schemas = ns;
		e->nschemas = id + 1;
	}
	pl = malloc(cap);
	types = malloc(nfields ? nfields : 1);
	if (!pl || !types) {
		free(pl);
		free(types);
		return -ENOMEM;
	}
	q = d9_put_varint(pl, id);
	*q++ = kind;
	q = d9_put_bytes(q, name, nlen);
	q = d9_put_varint(q, nfields);
	for (uint32_t i = 0; i < nfields; i++) {
		q = d9_put_bytes(q, fields[i].name, strlen(fields[i].name));
		*q++ = fields[i].type;
		types[i] = fields[i].type;
	}
	ret = put_control(e, D9_F_SCHEMA, pl, (size_t)(q - pl));
	free(pl);
	if (ret) {
		free(types);
		return ret;
	}
	free(e->schemas[id].types);
	e->schemas[id].types = types;
	e->schemas[id].nfields = nfields;
	e->schemas[id].varints = true;
	for (uint32_t i = 0; i < nfields; i++)
		if (types[i] != DIAL9_U64 && types[i] != DIAL9_BOOL)
			e->schemas[id].varints = false;
	return 0;
}

/* The id of string s in this stream, writing its frame on first use. */
static int intern(struct dial9_encoder *e, const void *s, size_t n,
		  uint32_t *id)
{
	uint64_t h = d9_fnv1a(s, n);
	uint32_t i;

	if (e->strs_used * 2 >= e->strs_cap) {
		uint32_t ncap = e->strs_cap ? e->strs_cap * 2 : 64;
		struct enc_str *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (i = 0; i < e->strs_cap; i++) {
			struct enc_str *o = &e->strs[i];
			uint32_t j;

			if (!o->s)
				continue;
			j = (uint32_t)d9_fnv1a(o->s, o->len) & (ncap - 1);
			while (ns[j].s)
				j = (j + 1) & (ncap - 1);
			ns[j] = *o;
		}
		free(e->strs);
		e->strs = ns;
		e->strs_cap = ncap;
	}
	for (i = (uint32_t)h & (e->strs_cap - 1); e->strs[i].s;
	     i = (i + 1) & (e->strs_cap - 1)) {
		if (e->strs[i].len == n && !memcmp(e->strs[i].s, s, n)) {
			*id = e->strs[i].id;
			return 0;
		}
	}
	if (e->next_str_id > D9_MAX_STRING_ID)
		return -E2BIG;
	{
		uint8_t *pl = malloc(2 * D9_MAX_VARINT + n), *q;
		char *copy = malloc(n + 1);
		int ret;

		if (!pl || !copy) {
			free(pl);
			free(copy);
			return -ENOMEM;
		}
		q = d9_put_varint(pl, e->next_str_id);
		q = d9_put_bytes(q, s, n);
		ret = put_control(e, D9_F_STRING, pl, (size_t)(q - pl));
		free(pl);
		if (ret) {
			free(copy);
			return ret;
		}
		if (n)
			memcpy(copy, s, n);
		copy[n] = 0;
		e->strs[i].s = copy;
		e->strs[i].len = n;
		e->strs[i].id = e->next_str_id++;
		e->strs_used++;
		*id = e->strs[i].id;
	}
	return 0;
}

/* event_head()'s timestamp reset: @ts is the new base. */
static __attribute__((noinline)) uint8_t *ts_reset(struct dial9_encoder *e,
						    uint8_t *p, uint64_t ts)
{
	*p++ = D9_F_TS_RESET;
	*p++ = 8;
	p = d9_put_u64le(p, ts);
	e->ts_base = ts;
	return p;
}

/*
 * An event's frame byte, its time delta (after a reset if needed).
 * Inline, as reserve().
 */
static inline uint8_t *event_head(struct dial9_encoder *e, uint8_t *p,
				  uint32_t id, uint64_t ts)
{
	if (ts < e->ts_base || ts - e->ts_base > D9_MAX_DELTA)
		p = ts_reset(e, p, ts);
	if (id < D9_EVENT_INLINE_IDS) {
		*p++ = (uint8_t)(D9_F_EVENT_BASE + id);
	} else {
		*p++ = D9_F_EVENT_EXT;
		p = d9_put_varint(p, id);
	}
	p = d9_put_varint(p, ts - e->ts_base);
	e->ts_base = ts;
	return p;
}

/* Most bytes event_head() writes. */
#define EVENT_HEAD_MAX (1 + D9_MAX_VARINT * 2 + 1 + D9_MAX_VARINT + 8)

int d9_encoder_event_u64(struct dial9_encoder *e, uint32_t id, uint64_t ts,
			 const uint64_t *v)
{
	const struct enc_schema *s;
	uint8_t *p;

	if (id >= e->nschemas || !e->schemas[id].types ||
	    !e->schemas[id].varints)
		return -ENOENT;
	s = &e->schemas[id];
	p = reserve(e, EVENT_HEAD_MAX + (size_t)s->nfields * D9_MAX_VARINT);
	if (!p)
		return -ENOMEM;
	p = event_head(e, p, id, ts);
	/*
	 * A BOOL is the one byte of its value, 0 or 1 (the caller's part:
	 * a reader refuses anything else).  Most fields (CPUs, states,
	 * prios, flags) are one byte too, tids and small counts two.
	 */
	for (const uint64_t *end = v + s->nfields; v < end; v++) {
		uint64_t x = *v;

		if (x < 0x80) {
			*p++ = (uint8_t)x;
		} else if (x < 0x4000) {
			p[0] = (uint8_t)(x | 0x80);
			p[1] = (uint8_t)(x >> 7);
			p += 2;
		} else {
			p = d9_put_varint(p, x);
		}
	}
	e->len = (size_t)(p - e->buf);
	return 0;
}

int dial9_encoder_event(struct dial9_encoder *e, uint32_t id, uint64_t ts,
			const struct dial9_value *v)
{
	struct enc_schema *s;
	size_t need = EVENT_HEAD_MAX;
	uint32_t sids[D9_MAX_FIELDS];
	uint8_t *p;

	if (id >= e->nschemas || !e->schemas[id].types)
		return -ENOENT;
	s = &e->schemas[id];
	for (uint32_t i = 0; i < s->nfields; i++) {
		uint8_t t = s->types[i];

		if (v[i].type != t &&
		    !(t == DIAL9_ISTR && v[i].type == DIAL9_STR))
			return -EINVAL;
		if (t == DIAL9_ISTR) {
			int ret = intern(e, v[i].str.ptr, v[i].str.len, &sids[i]);

			if (ret)
				return ret;
		}
		need += d9_value_max(t, v[i].str.len);
	}
	p = reserve(e, need);
	if (!p)
		return -ENOMEM;
	p = event_head(e, p, id, ts);
	for (uint32_t i = 0; i < s->nfields; i++)
		p = d9_put_value(p, s->types[i], &v[i], &sids[i]);
	e->len = (size_t)(p - e->buf);
	return 0;
}

int dial9_encoder_metadata(struct dial9_encoder *e, unsigned int n,
			   const char *const *keys, const char *const *values)
{
	size_t cap = D9_MAX_VARINT;
	uint8_t *pl, *q;
	int ret;

	for (unsigned int i = 0; i < n; i++)
		cap += 2 * D9_MAX_VARINT + strlen(keys[i]) + strlen(values[i]);
	pl = malloc(cap);
	if (!pl)
		return -ENOMEM;
	q = d9_put_varint(pl, n);
	for (unsigned int i = 0; i < n; i++) {
		q = d9_put_bytes(q, keys[i], strlen(keys[i]));
		q = d9_put_bytes(q, values[i], strlen(values[i]));
	}
	ret = put_control(e, D9_F_METADATA, pl, (size_t)(q - pl));
	free(pl);
	return ret;
}

int dial9_encoder_clock_sync(struct dial9_encoder *e, uint64_t mono,
			     uint64_t real)
{
	uint8_t pl[16];

	d9_put_u64le(d9_put_u64le(pl, mono), real);
	return put_control(e, D9_F_CLOCK_SYNC, pl, sizeof(pl));
}

int dial9_encoder_thread(struct dial9_encoder *e, uint32_t tid,
			 const char *name)
{
	size_t n = strlen(name);
	uint8_t *pl, *q;
	int ret;

	if (n > D9_MAX_NAME)
		return -EINVAL;
	pl = malloc(2 * D9_MAX_VARINT + n);
	if (!pl)
		return -ENOMEM;
	q = d9_put_varint(pl, tid);
	q = d9_put_bytes(q, name, n);
	ret = put_control(e, D9_F_THREAD, pl, (size_t)(q - pl));
	free(pl);
	return ret;
}
