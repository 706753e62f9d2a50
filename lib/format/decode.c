// SPDX-License-Identifier: MIT
/*
 * decode.c - the trace decoder. Every read is bounds-checked; every
 * frame consumes at least one byte, so any input ends in a bounded
 * number of steps with records or an error and its offset.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dial9.h"
#include "format/kchunk.h"
#include "format/wire.h"

struct dschema {
	struct dial9_schema pub;
	struct dial9_field_info fields[];
};

struct dstr {
	const uint8_t *p;
	size_t len;
};

struct dial9_decoder {
	const uint8_t *buf;
	size_t len, pos;
	int err;
	size_t err_off;
	uint64_t nstreams; /* headers seen */
	uint64_t ts_base;
	uint32_t tid;
	char tname[64];
	struct dschema **schemas; /* by id */
	uint32_t nschemas;
	struct dstr *strs;
	uint32_t nstrs, strs_cap;
	struct dial9_kv *kv;
	unsigned int kv_cap;
	struct d9_kdec *kdec;	/* kernel chunks (version 2), if any */
	struct dial9_value vals[D9_MAX_FIELDS];
};

int dial9_decoder_new(struct dial9_decoder **out, const void *buf, size_t len)
{
	struct dial9_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->buf = buf;
	d->len = len;
	*out = d;
	return 0;
}

static void reset_stream(struct dial9_decoder *d)
{
	for (uint32_t i = 0; i < d->nschemas; i++)
		free(d->schemas[i]);
	free(d->schemas);
	d->schemas = NULL;
	d->nschemas = 0;
	d->nstrs = 0;
	d->ts_base = 0;
	d->tid = 0;
	d->tname[0] = 0;
}

void dial9_decoder_free(struct dial9_decoder *d)
{
	if (!d)
		return;
	reset_stream(d);
	d9_kdec_free(d->kdec);
	free(d->strs);
	free(d->kv);
	free(d);
}

uint64_t dial9_decoder_offset(const struct dial9_decoder *d)
{
	return d->err ? d->err_off : d->pos;
}

static int fail(struct dial9_decoder *d, int err, size_t off)
{
	d->err = err;
	d->err_off = off;
	return err;
}

/* A bounded reader over [p, end); "trunc" is the error for running off
 * the end: -ENODATA at the end of the input, -EBADMSG inside a frame
 * whose length said otherwise. */
struct rd {
	const uint8_t *p, *end;
	int trunc;
};

static int rd_varint(struct rd *r, uint64_t *v)
{
	int ret = d9_get_varint(&r->p, r->end, v);

	return ret > 0 ? r->trunc : ret < 0 ? -EBADMSG : 0;
}

static int rd_bytes(struct rd *r, const uint8_t **s, size_t *n)
{
	uint64_t l;
	int ret = rd_varint(r, &l);

	if (ret)
		return ret;
	if (l > (uint64_t)(r->end - r->p))
		return r->trunc;
	*s = r->p;
	*n = (size_t)l;
	r->p += l;
	return 0;
}

static int rd_u8(struct rd *r, uint8_t *v)
{
	if (r->p >= r->end)
		return r->trunc;
	*v = *r->p++;
	return 0;
}

static int rd_u64le(struct rd *r, uint64_t *v)
{
	if (r->end - r->p < 8)
		return r->trunc;
	*v = d9_get_u64le(r->p);
	r->p += 8;
	return 0;
}

static int parse_schema(struct dial9_decoder *d, struct rd *r)
{
	uint64_t id = 0, nf = 0;
	uint8_t kind = 0;
	const uint8_t *name = NULL, *fname[D9_MAX_FIELDS];
	size_t nlen = 0, flen[D9_MAX_FIELDS], total;
	uint8_t ftype[D9_MAX_FIELDS];
	struct dschema *s;
	char *strings;
	int ret;

	if ((ret = rd_varint(r, &id)) || (ret = rd_u8(r, &kind)) ||
	    (ret = rd_bytes(r, &name, &nlen)) || (ret = rd_varint(r, &nf)))
		return ret;
	if (id > D9_MAX_TYPE_ID || nf > D9_MAX_FIELDS || nlen > D9_MAX_NAME)
		return -EBADMSG;
	total = nlen + 1;
	for (uint64_t i = 0; i < nf; i++) {
		if ((ret = rd_bytes(r, &fname[i], &flen[i])) ||
		    (ret = rd_u8(r, &ftype[i])))
			return ret;
		if (flen[i] > D9_MAX_NAME || D9_WIRE(ftype[i]) > D9_W_LEN)
			return -EBADMSG;
		total += flen[i] + 1;
	}
	s = malloc(sizeof(*s) + nf * sizeof(s->fields[0]) + total);
	if (!s)
		return -ENOMEM;
	strings = (char *)(s->fields + nf);
	memcpy(strings, name, nlen);
	strings[nlen] = 0;
	s->pub.id = (uint32_t)id;
	s->pub.kind = kind;
	s->pub.name = strings;
	s->pub.nfields = (uint32_t)nf;
	s->pub.fields = s->fields;
	strings += nlen + 1;
	for (uint64_t i = 0; i < nf; i++) {
		memcpy(strings, fname[i], flen[i]);
		strings[flen[i]] = 0;
		s->fields[i].name = strings;
		s->fields[i].type = ftype[i];
		strings += flen[i] + 1;
	}
	if (id >= d->nschemas) {
		struct dschema **ns = realloc(d->schemas, (id + 1) * sizeof(*ns));

		if (!ns) {
			free(s);
			return -ENOMEM;
		}
		memset(ns + d->nschemas, 0, (id + 1 - d->nschemas) * sizeof(*ns));
		d->schemas = ns;
		d->nschemas = (uint32_t)id + 1;
	}
	free(d->schemas[id]);
	d->schemas[id] = s;
	return 0;
}

static int parse_string(struct dial9_decoder *d, struct rd *r)
{
	uint64_t id;
	const uint8_t *s;
	size_t n;
	int ret;

	if ((ret = rd_varint(r, &id)) || (ret = rd_bytes(r, &s, &n)))
		return ret;
	/* Ids are dense: a new one is the next, an old one is redefined. */
	if (id > d->nstrs || id > D9_MAX_STRING_ID)
		return -EBADMSG;
	if (id == d->nstrs) {
		if (d->nstrs == d->strs_cap) {
			uint32_t nc = d->strs_cap ? d->strs_cap * 2 : 64;
			struct dstr *ns = realloc(d->strs, nc * sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			d->strs = ns;
			d->strs_cap = nc;
		}
		d->nstrs++;
	}
	d->strs[id].p = s;
	d->strs[id].len = n;
	return 0;
}

static int parse_metadata(struct dial9_decoder *d, struct rd *r,
			  struct dial9_record *rec)
{
	uint64_t n;
	int ret = rd_varint(r, &n);

	if (ret)
		return ret;
	/* Each pair takes at least two bytes: bounds the allocation. */
	if (n > (uint64_t)(r->end - r->p) / 2)
		return -EBADMSG;
	if (n > d->kv_cap) {
		struct dial9_kv *nk = realloc(d->kv, n * sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		d->kv = nk;
		d->kv_cap = (unsigned int)n;
	}
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *k, *v;
		size_t kl, vl;

		if ((ret = rd_bytes(r, &k, &kl)) || (ret = rd_bytes(r, &v, &vl)))
			return ret;
		d->kv[i].key = (const char *)k;
		d->kv[i].key_len = kl;
		d->kv[i].value = (const char *)v;
		d->kv[i].value_len = vl;
	}
	rec->kind = DIAL9_RECORD_METADATA;
	rec->nkv = (unsigned int)n;
	rec->kv = d->kv;
	return 1;
}

/* One control frame at r (after its tag): 1 record, 0 none, <0 error. */
static int parse_control(struct dial9_decoder *d, uint8_t tag, struct rd *r,
			 struct dial9_record *rec)
{
	int ret;

	switch (tag) {
	case D9_F_SCHEMA:
		return parse_schema(d, r);
	case D9_F_STRING:
		return parse_string(d, r);
	case D9_F_TS_RESET:
		return rd_u64le(r, &d->ts_base);
	case D9_F_METADATA:
		return parse_metadata(d, r, rec);
	case D9_F_CLOCK_SYNC:
		if ((ret = rd_u64le(r, &rec->mono_ns)) ||
		    (ret = rd_u64le(r, &rec->real_ns)))
			return ret;
		rec->kind = DIAL9_RECORD_CLOCK_SYNC;
		return 1;
	case D9_F_THREAD: {
		uint64_t tid;
		const uint8_t *s;
		size_t n;

		if ((ret = rd_varint(r, &tid)) || (ret = rd_bytes(r, &s, &n)))
			return ret;
		if (tid > UINT32_MAX)
			return -EBADMSG;
		if (n >= sizeof(d->tname))
			n = sizeof(d->tname) - 1;
		memcpy(d->tname, s, n);
		d->tname[n] = 0;
		d->tid = (uint32_t)tid;
		rec->kind = DIAL9_RECORD_THREAD;
		rec->tid = d->tid;
		return 1;
	}
	case D9_F_BATCH_END:
		rec->kind = DIAL9_RECORD_BATCH_END;
		return 1;
	case D9_F_KLAYOUT:
		return d9_kdec_layout(&d->kdec, r->p, (size_t)(r->end - r->p));
	case D9_F_KCHUNK:
		return d9_kdec_chunk(&d->kdec, r->p, (size_t)(r->end - r->p),
				     rec->offset);
	case D9_F_KHORIZON: {
		uint64_t h;

		if ((ret = rd_u64le(r, &h)))
			return ret;
		d9_kdec_horizon(d->kdec, h);
		return 0;
	}
	default:
		return 0; /* a frame from a future writer: skip it */
	}
}

static int parse_event(struct dial9_decoder *d, uint8_t tag, struct rd *r,
		       struct dial9_record *rec)
{
	uint64_t id = (uint64_t)tag - D9_F_EVENT_BASE, delta;
	struct dschema *s;
	int ret;

	if (tag == D9_F_EVENT_EXT && (ret = rd_varint(r, &id)))
		return ret;
	if (id >= d->nschemas || !d->schemas[id])
		return -EBADMSG;
	s = d->schemas[id];
	if ((ret = rd_varint(r, &delta)))
		return ret;
	if (d->ts_base + delta < d->ts_base)
		return -EBADMSG;
	d->ts_base += delta;
	for (uint32_t i = 0; i < s->pub.nfields; i++) {
		struct dial9_value *v = &d->vals[i];
		uint8_t t = s->fields[i].type;
		uint64_t x;

		v->type = t;
		switch (D9_WIRE(t)) {
		case D9_W_VARINT:
			if ((ret = rd_varint(r, &x)))
				return ret;
			if (t == DIAL9_U64) {
				v->u64 = x;
			} else if (t == DIAL9_I64) {
				v->i64 = d9_unzigzag(x);
			} else if (t == DIAL9_BOOL) {
				if (x > 1)
					return -EBADMSG;
				v->b = x != 0;
			} else if (t == DIAL9_ISTR) {
				if (x >= d->nstrs)
					return -EBADMSG;
				v->str.ptr = d->strs[x].p;
				v->str.len = d->strs[x].len;
			} else {
				v->type = 0;
				v->u64 = x;
			}
			break;
		case D9_W_FIXED64:
			if ((ret = rd_u64le(r, &x)))
				return ret;
			if (t == DIAL9_F64) {
				memcpy(&v->f64, &x, 8);
			} else {
				v->type = 0;
				v->u64 = x;
			}
			break;
		default: {
			const uint8_t *p;
			size_t n;

			if ((ret = rd_bytes(r, &p, &n)))
				return ret;
			if (t != DIAL9_STR && t != DIAL9_BYTES)
				v->type = 0;
			v->str.ptr = p;
			v->str.len = n;
		}
		}
	}
	rec->kind = DIAL9_RECORD_EVENT;
	rec->ts_ns = d->ts_base;
	rec->schema = &s->pub;
	rec->values = d->vals;
	return 1;
}

/* The next kernel event that is due (all of them at @end): 1, 0, <0. */
static int kernel_next(struct dial9_decoder *d, bool end,
		       struct dial9_record *rec)
{
	uint64_t off = d->pos;
	int ret = d9_kdec_next(d->kdec, end, rec, &off);

	if (ret < 0)
		return fail(d, ret, (size_t)off);
	if (ret > 0)
		rec->stream = d->nstreams ? d->nstreams - 1 : 0;
	return ret;
}

/*
 * Whether @p[0, n) is all zeros: the padding of an unsealed segment
 * written with O_DIRECT, up to its last block's end (docs/format.md); a
 * stream header has D9_MAGIC1 after its zero tag.
 */
static bool zero_tail(const uint8_t *p, size_t n)
{
	if (n < 2)
		return n == 1 && !p[0];
	return !p[0] && !p[1] && !memcmp(p, p + 1, n - 1);
}

int dial9_decoder_next(struct dial9_decoder *d, struct dial9_record *rec)
{
	while (!d->err) {
		size_t start = d->pos;
		struct rd r;
		uint8_t tag;
		int ret;

		/* kernel records up to the last horizon go first */
		ret = kernel_next(d, d->pos >= d->len, rec);
		if (ret)
			return ret;
		/* before any pointer arithmetic: buf is NULL for empty input */
		if (d->pos >= d->len)
			return 0;
		r = (struct rd){ d->buf + d->pos, d->buf + d->len, -ENODATA };
		memset(rec, 0, sizeof(*rec));
		rec->offset = start;
		tag = *r.p++;
		if (tag == D9_F_HEADER && zero_tail(d->buf + start,
						    d->len - start)) {
			/* a direct-I/O writer's padding: the end */
			d->pos = d->len;
			continue;
		}
		if (tag == D9_F_HEADER) {
			if (d->len - start < D9_HEADER_LEN)
				return fail(d, -ENODATA, start);
			if (r.p[0] != D9_MAGIC1 || r.p[1] != D9_MAGIC2 ||
			    r.p[2] != D9_MAGIC3)
				return fail(d, -EBADMSG, start);
			if (r.p[3] < D9_VERSION_MIN || r.p[3] > D9_VERSION)
				return fail(d, -EPROTONOSUPPORT, start);
			reset_stream(d);
			d9_kdec_stream(d->kdec);
			d->nstreams++;
			d->pos = start + D9_HEADER_LEN;
			rec->kind = DIAL9_RECORD_STREAM;
			rec->stream = d->nstreams - 1;
			rec->thread_name = d->tname;
			return 1;
		}
		if (!d->nstreams)
			return fail(d, -EBADMSG, start);
		if (tag <= D9_F_CONTROL_MAX) {
			uint64_t n;

			ret = rd_varint(&r, &n);
			if (ret)
				return fail(d, ret, start);
			if (n > (uint64_t)(r.end - r.p))
				return fail(d, -ENODATA, start);
			r.end = r.p + n;
			r.trunc = -EBADMSG;
			ret = parse_control(d, tag, &r, rec);
			d->pos = (size_t)(r.end - d->buf);
		} else {
			ret = parse_event(d, tag, &r, rec);
			d->pos = (size_t)(r.p - d->buf);
		}
		if (ret < 0)
			return fail(d, ret, start);
		if (ret > 0) {
			rec->stream = d->nstreams - 1;
			rec->tid = d->tid;
			rec->thread_name = d->tname;
			return 1;
		}
	}
	return d->err;
}

const struct dial9_schema *dial9_decoder_schema(const struct dial9_decoder *d,
						const char *name)
{
	for (uint32_t i = 0; i < d->nschemas; i++)
		if (d->schemas[i] && !strcmp(d->schemas[i]->pub.name, name))
			return &d->schemas[i]->pub;
	return NULL;
}

int dial9_schema_field_index(const struct dial9_schema *s, const char *name)
{
	for (uint32_t i = 0; i < s->nfields; i++)
		if (!strcmp(s->fields[i].name, name))
			return (int)i;
	return -ENOENT;
}

const struct dial9_value *dial9_record_field(const struct dial9_record *rec,
					     const char *name)
{
	int i;

	if (rec->kind != DIAL9_RECORD_EVENT)
		return NULL;
	i = dial9_schema_field_index(rec->schema, name);
	return i < 0 ? NULL : &rec->values[i];
}
