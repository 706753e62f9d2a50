// SPDX-License-Identifier: MIT
/*
 * fuzz_roundtrip.c - random schemas, values and timestamps (driven by
 * the fuzzer's bytes) are encoded, decoded, and must come back exactly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dial9.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct src {
	const uint8_t *p;
	size_t n;
};

static uint8_t byte(struct src *s)
{
	if (!s->n)
		return 0;
	s->n--;
	return *s->p++;
}

static uint64_t u64(struct src *s)
{
	static const uint64_t edges[] = { 0, 1, 127, 128, 16383, 16384,
					  0xffffffffull, 0x100000000ull,
					  UINT64_MAX, UINT64_MAX - 1,
					  1ull << 63 };
	uint8_t k = byte(s);
	uint64_t v = 0;

	if (k < 64)
		return edges[k % (sizeof(edges) / sizeof(edges[0]))];
	for (int i = 0; i < (k & 7) + 1; i++)
		v = (v << 8) | byte(s);
	return v;
}

static const uint8_t types[] = { DIAL9_U64, DIAL9_I64, DIAL9_BOOL, DIAL9_ISTR,
				 DIAL9_F64, DIAL9_STR, DIAL9_BYTES };

#define MAXS 4
#define MAXF 6
#define MAXE 64

struct schema {
	uint32_t id;
	uint8_t kind;
	char name[16];
	uint32_t nf;
	struct dial9_field f[MAXF];
	char fname[MAXF][8];
};

struct ev {
	unsigned int schema;
	uint64_t ts;
	uint64_t stream;
	struct dial9_value v[MAXF];
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct src s = { data, size };
	struct schema sc[MAXS];
	struct ev ev[MAXE];
	unsigned int ns = 1 + byte(&s) % MAXS, ne = 0;
	struct dial9_encoder *e;
	struct dial9_decoder *d;
	struct dial9_record r;
	uint64_t stream = 0;
	const void *buf;
	size_t len;
	int ret;

	if (dial9_encoder_new(&e))
		return 0;
	if (dial9_encoder_begin_stream(e))
		abort();
	for (unsigned int i = 0; i < ns; i++) {
		struct schema *x = &sc[i];

		x->id = (uint32_t)(u64(&s) % 400);
		for (unsigned int j = 0; j < i; j++)
			if (sc[j].id == x->id)
				x->id = 1000 + i; /* ids distinct in a stream */
		x->kind = byte(&s) % 6;
		snprintf(x->name, sizeof(x->name), "s%u.%u", i, byte(&s));
		x->nf = byte(&s) % (MAXF + 1);
		for (uint32_t k = 0; k < x->nf; k++) {
			snprintf(x->fname[k], sizeof(x->fname[k]), "f%u", k);
			x->f[k].name = x->fname[k];
			x->f[k].type = types[byte(&s) % 7];
		}
	}
	for (unsigned int i = 0; i < ns; i++)
		if (dial9_encoder_schema(e, sc[i].id, sc[i].kind, sc[i].name,
					 sc[i].nf, sc[i].f))
			abort();
	while (s.n && ne < MAXE) {
		struct ev *x = &ev[ne];
		uint8_t op = byte(&s);
		struct schema *y;

		if (op == 0xff) {
			/* a new stream: the schemas again, base back to 0 */
			if (dial9_encoder_end_stream(e) ||
			    dial9_encoder_begin_stream(e))
				abort();
			stream++;
			for (unsigned int i = 0; i < ns; i++)
				if (dial9_encoder_schema(e, sc[i].id, sc[i].kind,
							 sc[i].name, sc[i].nf,
							 sc[i].f))
					abort();
			continue;
		}
		x->schema = op % ns;
		y = &sc[x->schema];
		x->ts = u64(&s);
		x->stream = stream;
		for (uint32_t k = 0; k < y->nf; k++) {
			struct dial9_value *v = &x->v[k];

			v->type = y->f[k].type;
			switch (v->type) {
			case DIAL9_U64:
				v->u64 = u64(&s);
				break;
			case DIAL9_I64:
				v->i64 = (int64_t)u64(&s);
				break;
			case DIAL9_BOOL:
				v->b = byte(&s) & 1;
				break;
			case DIAL9_F64: {
				uint64_t bits = u64(&s);

				memcpy(&v->f64, &bits, 8);
				break;
			}
			default: {
				size_t l = byte(&s) % 24;

				if (l > s.n)
					l = s.n;
				v->str.ptr = s.p;
				v->str.len = l;
				s.p += l;
				s.n -= l;
			}
			}
		}
		if (dial9_encoder_event(e, y->id, x->ts, x->v))
			abort();
		ne++;
	}
	if (dial9_encoder_end_stream(e))
		abort();
	buf = dial9_encoder_data(e, &len);
	if (dial9_decoder_new(&d, buf, len))
		abort();
	for (unsigned int i = 0; i < ne; i++) {
		struct schema *y = &sc[ev[i].schema];

		while ((ret = dial9_decoder_next(d, &r)) == 1 &&
		       r.kind != DIAL9_RECORD_EVENT)
			;
		if (ret != 1 || r.ts_ns != ev[i].ts || r.stream != ev[i].stream ||
		    r.schema->id != y->id || r.schema->kind != y->kind ||
		    strcmp(r.schema->name, y->name) || r.schema->nfields != y->nf)
			abort();
		for (uint32_t k = 0; k < y->nf; k++) {
			const struct dial9_value *a = &r.values[k], *b = &ev[i].v[k];

			if (a->type != b->type ||
			    strcmp(r.schema->fields[k].name, y->fname[k]))
				abort();
			switch (a->type) {
			case DIAL9_U64:
			case DIAL9_I64:
			case DIAL9_F64:
				if (memcmp(&a->u64, &b->u64, 8))
					abort();
				break;
			case DIAL9_BOOL:
				if (a->b != b->b)
					abort();
				break;
			default:
				if (a->str.len != b->str.len ||
				    (a->str.len &&
				     memcmp(a->str.ptr, b->str.ptr, a->str.len)))
					abort();
			}
		}
	}
	while ((ret = dial9_decoder_next(d, &r)) == 1)
		if (r.kind == DIAL9_RECORD_EVENT)
			abort();
	if (ret != 0 || dial9_decoder_offset(d) != len)
		abort();
	dial9_decoder_free(d);
	dial9_encoder_free(e);
	return 0;
}
