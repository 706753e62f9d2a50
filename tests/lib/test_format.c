// SPDX-License-Identifier: MIT
/* test_format.c - trace format round trips, schema evolution, corrupt input. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dial9.h"
#include "format/wire.h"

static const struct dial9_field all_fields[] = {
	{ "u", DIAL9_U64 },  { "i", DIAL9_I64 }, { "b", DIAL9_BOOL },
	{ "is", DIAL9_ISTR }, { "f", DIAL9_F64 }, { "s", DIAL9_STR },
	{ "by", DIAL9_BYTES },
};
#define NALL (sizeof(all_fields) / sizeof(all_fields[0]))

static void fill(struct dial9_value *v, uint64_t u, int64_t i, bool b,
		 const char *is, double f, const char *s, const void *by,
		 size_t bylen)
{
	v[0] = dial9_u64(u);
	v[1] = dial9_i64(i);
	v[2] = dial9_bool(b);
	v[3] = dial9_istr(is);
	v[4] = dial9_f64(f);
	v[5] = dial9_str(s);
	v[6] = dial9_bytes(by, bylen);
}

static int next(struct dial9_decoder *d, struct dial9_record *r)
{
	return dial9_decoder_next(d, r);
}

/* Skip records of kind other than want; return the next of kind want. */
static int next_kind(struct dial9_decoder *d, struct dial9_record *r,
		     uint32_t want)
{
	int ret;

	while ((ret = next(d, r)) == 1 && r->kind != want)
		;
	return ret;
}

static void round_trip_all_types(void **state)
{
	static const uint64_t us[] = { 0, 1, 127, 128, 16383, 16384,
				       UINT32_MAX, (uint64_t)1 << 63,
				       UINT64_MAX };
	static const int64_t is[] = { 0, -1, 1, -64, 64, INT64_MIN, INT64_MAX };
	static const double fs[] = { 0.0, -0.0, 1.5, -1e300, INFINITY, 5e-324 };
	static const uint64_t ts[] = { 5, 5, 100, 99, (uint64_t)1 << 40,
				       ((uint64_t)1 << 40) + D9_MAX_DELTA,
				       ((uint64_t)1 << 40) + D9_MAX_DELTA + 1 +
					       D9_MAX_DELTA + 1,
				       0, UINT64_MAX };
	const unsigned int n = 40;
	struct dial9_encoder *e;
	struct dial9_decoder *d;
	struct dial9_value v[NALL];
	struct dial9_record r;
	const uint8_t bytes[] = { 0, 1, 0, 0xff };
	const void *buf;
	size_t len;
	unsigned int strings = 0;
	(void)state;

	assert_int_equal(dial9_encoder_new(&e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_schema(e, 300, DIAL9_KIND_INSTANT,
					      "everything", NALL, all_fields),
			 0);
	for (unsigned int k = 0; k < n; k++) {
		char s[32];

		memset(s, 'x', k % 20);
		s[k % 20] = 0;
		fill(v, us[k % 9], is[k % 7], k & 1, k % 3 ? "same" : "other",
		     fs[k % 6], s, bytes, k % 5);
		assert_int_equal(dial9_encoder_event(e, 300, ts[k % 9], v), 0);
	}
	assert_int_equal(dial9_encoder_end_stream(e), 0);
	buf = dial9_encoder_data(e, &len);

	assert_int_equal(dial9_decoder_new(&d, buf, len), 0);
	assert_int_equal(next(d, &r), 1);
	assert_int_equal(r.kind, DIAL9_RECORD_STREAM);
	for (unsigned int k = 0; k < n; k++) {
		assert_int_equal(next_kind(d, &r, DIAL9_RECORD_EVENT), 1);
		assert_string_equal(r.schema->name, "everything");
		assert_int_equal(r.schema->id, 300);
		assert_int_equal(r.schema->nfields, NALL);
		assert_true(r.ts_ns == ts[k % 9]);
		assert_true(r.values[0].u64 == us[k % 9]);
		assert_true(r.values[1].i64 == is[k % 7]);
		assert_int_equal(r.values[2].b, k & 1);
		assert_int_equal(r.values[3].type, DIAL9_ISTR);
		assert_memory_equal(r.values[3].str.ptr,
				    k % 3 ? "same" : "other",
				    r.values[3].str.len);
		assert_int_equal(r.values[3].str.len, k % 3 ? 4 : 5);
		assert_memory_equal(&r.values[4].f64, &fs[k % 6], 8);
		assert_int_equal(r.values[5].str.len, k % 20);
		assert_int_equal(r.values[6].str.len, k % 5 > 4 ? 4 : k % 5);
		if (k % 5)
			assert_memory_equal(r.values[6].str.ptr, bytes, k % 5);
		assert_non_null(dial9_record_field(&r, "f"));
		assert_null(dial9_record_field(&r, "nope"));
	}
	assert_int_equal(next(d, &r), 1);
	assert_int_equal(r.kind, DIAL9_RECORD_BATCH_END);
	assert_int_equal(next(d, &r), 0);
	assert_int_equal(dial9_decoder_offset(d), len);
	dial9_decoder_free(d);

	/* Interning: each distinct string has exactly one string frame. */
	for (size_t i = 0; i + 1 < len; i++)
		if (((const uint8_t *)buf)[i] == D9_F_STRING &&
		    ((const uint8_t *)buf)[i + 1] == 6 &&
		    i + 4 < len && !memcmp((const uint8_t *)buf + i + 4, "same", 4))
			strings++;
	assert_int_equal(strings, 1);
	dial9_encoder_free(e);
}

static void encoder_rejects_mismatch(void **state)
{
	struct dial9_encoder *e;
	struct dial9_value v[NALL];
	struct dial9_field bad = { "x", 0x1f };
	(void)state;

	assert_int_equal(dial9_encoder_new(&e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_schema(e, 1, 0, "t", NALL, all_fields), 0);
	fill(v, 1, 1, 1, "a", 1, "b", "c", 1);
	v[0] = dial9_i64(3);
	assert_int_equal(dial9_encoder_event(e, 1, 1, v), -EINVAL);
	assert_int_equal(dial9_encoder_event(e, 2, 1, v), -ENOENT);
	assert_int_equal(dial9_encoder_schema(e, 2, 0, "t", 1, &bad), -EINVAL);
	assert_int_equal(dial9_encoder_schema(e, 70000, 0, "t", 0, NULL),
			 -EINVAL);
	dial9_encoder_free(e);
}

/*
 * d9_encoder_event_u64() (the sched.* records' path) writes the bytes
 * dial9_encoder_event() writes for the same U64 and BOOL values (one-,
 * two- and more-byte varints, each side of each bound),
 * timestamp resets and type ids past the inline range included, and
 * refuses a schema with another type.
 */
static void u64_path_matches_general(void **state)
{
	static const struct dial9_field f[] = {
		{ "a", DIAL9_U64 }, { "b", DIAL9_BOOL }, { "c", DIAL9_U64 },
	};
	static const uint64_t vals[][3] = {
		{ 0, 0, 0 }, { 127, 1, 128 }, { UINT64_MAX, 1, 1ull << 35 },
		{ 300, 0, 16383 }, { 16384, 1, 0x3fff }, { 0x80, 0, 0x1fffff },
	};
	static const uint64_t ts[] = { 5, 6, 6 + (1ull << 33), 2, 3, 900 };
	static const uint32_t ids[] = { 1, 300 };
	struct dial9_encoder *e[2];
	const void *d[2];
	size_t len[2];
	(void)state;

	for (int k = 0; k < 2; k++) {
		assert_int_equal(dial9_encoder_new(&e[k]), 0);
		assert_int_equal(dial9_encoder_begin_stream(e[k]), 0);
		for (int j = 0; j < 2; j++)
			assert_int_equal(dial9_encoder_schema(e[k], ids[j], 0,
							      "t", 3, f), 0);
		for (int j = 0; j < 2; j++)
			for (size_t i = 0; i < 6; i++) {
				struct dial9_value v[3] = {
					dial9_u64(vals[i][0]),
					dial9_bool(vals[i][1] != 0),
					dial9_u64(vals[i][2]),
				};

				assert_int_equal(k ?
					d9_encoder_event_u64(e[k], ids[j], ts[i],
							     vals[i]) :
					dial9_encoder_event(e[k], ids[j], ts[i],
							    v), 0);
			}
		assert_int_equal(dial9_encoder_end_stream(e[k]), 0);
		d[k] = dial9_encoder_data(e[k], &len[k]);
	}
	assert_int_equal(len[0], len[1]);
	assert_memory_equal(d[0], d[1], len[0]);
	assert_int_equal(dial9_encoder_schema(e[1], 2, 0, "t", NALL,
					      all_fields), 0);
	assert_int_equal(d9_encoder_event_u64(e[1], 2, 1, vals[0]), -ENOENT);
	assert_int_equal(d9_encoder_event_u64(e[1], 3, 1, vals[0]), -ENOENT);
	dial9_encoder_free(e[0]);
	dial9_encoder_free(e[1]);
}

/* Two streams back to back: the second redefines type 1 and string 0. */
static void concatenated_streams(void **state)
{
	struct dial9_field f1 = { "a", DIAL9_U64 }, f2 = { "name", DIAL9_ISTR };
	const char *keys[] = { "boot_id", "service" };
	const char *vals[] = { "abcd-1", "svc" };
	struct dial9_encoder *e;
	struct dial9_decoder *d;
	struct dial9_record r;
	struct dial9_value v;
	const void *buf;
	size_t len;
	(void)state;

	assert_int_equal(dial9_encoder_new(&e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_metadata(e, 2, keys, vals), 0);
	assert_int_equal(dial9_encoder_clock_sync(e, 111, 222), 0);
	assert_int_equal(dial9_encoder_end_stream(e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_thread(e, 42, "worker"), 0);
	assert_int_equal(dial9_encoder_schema(e, 1, 0, "first", 1, &f1), 0);
	v = dial9_u64(7);
	assert_int_equal(dial9_encoder_event(e, 1, 1000, &v), 0);
	assert_int_equal(dial9_encoder_end_stream(e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_schema(e, 1, 0, "second", 1, &f2), 0);
	v = dial9_istr("zz");
	assert_int_equal(dial9_encoder_event(e, 1, 500, &v), 0);
	assert_int_equal(dial9_encoder_end_stream(e), 0);
	buf = dial9_encoder_data(e, &len);

	assert_int_equal(dial9_decoder_new(&d, buf, len), 0);
	assert_int_equal(next_kind(d, &r, DIAL9_RECORD_METADATA), 1);
	assert_int_equal(r.nkv, 2);
	assert_int_equal(r.kv[1].value_len, 3);
	assert_memory_equal(r.kv[1].value, "svc", 3);
	assert_int_equal(next(d, &r), 1);
	assert_int_equal(r.kind, DIAL9_RECORD_CLOCK_SYNC);
	assert_true(r.mono_ns == 111 && r.real_ns == 222);
	assert_int_equal(next_kind(d, &r, DIAL9_RECORD_EVENT), 1);
	assert_string_equal(r.schema->name, "first");
	assert_int_equal(r.stream, 1);
	assert_int_equal(r.tid, 42);
	assert_string_equal(r.thread_name, "worker");
	assert_true(r.values[0].u64 == 7 && r.ts_ns == 1000);
	assert_non_null(dial9_decoder_schema(d, "first"));
	assert_int_equal(next_kind(d, &r, DIAL9_RECORD_STREAM), 1);
	assert_null(dial9_decoder_schema(d, "first"));
	assert_int_equal(next_kind(d, &r, DIAL9_RECORD_EVENT), 1);
	assert_string_equal(r.schema->name, "second");
	assert_int_equal(r.stream, 2);
	assert_int_equal(r.tid, 0); /* thread frames are per stream */
	assert_true(r.ts_ns == 500); /* base restarts at 0 in each stream */
	assert_memory_equal(r.values[0].str.ptr, "zz", 2);
	assert_int_equal(next_kind(d, &r, 0), 0);
	dial9_decoder_free(d);
	dial9_encoder_free(e);
}

/* Build bytes by hand, as a future writer might. */
struct bb {
	uint8_t b[512];
	size_t n;
};

static void put(struct bb *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_byte(struct bb *b, uint8_t x)
{
	b->b[b->n++] = x;
}

static void put_var(struct bb *b, uint64_t v)
{
	b->n = (size_t)(d9_put_varint(b->b + b->n, v) - b->b);
}

static void put_str(struct bb *b, const char *s)
{
	put_var(b, strlen(s));
	put(b, s, strlen(s));
}

static void put_header(struct bb *b)
{
	b->n = (size_t)(d9_put_header(b->b + b->n) - b->b);
}

/* A control frame from the payload bytes in p. */
static void put_frame(struct bb *b, uint8_t tag, const struct bb *p)
{
	put_byte(b, tag);
	put_var(b, p->n);
	put(b, p->b, p->n);
}

/* Schema id 2 "future": unknown types of each wire class, then "known". */
static void put_future_schema(struct bb *b, int extra)
{
	struct bb s = { .n = 0 };

	put_var(&s, 2);
	put_byte(&s, 9); /* an unknown kind */
	put_str(&s, "future");
	put_var(&s, 4);
	put_str(&s, "v");
	put_byte(&s, 0x1e);
	put_str(&s, "fx");
	put_byte(&s, 0x3e);
	put_str(&s, "blob");
	put_byte(&s, 0x5e);
	put_str(&s, "known");
	put_byte(&s, DIAL9_U64);
	if (extra)
		put(&s, "\x01\x02\x03", 3); /* future schema attributes */
	put_frame(b, D9_F_SCHEMA, &s);
}

static void future_writer_is_readable(void **state)
{
	struct bb b = { .n = 0 }, unk = { .n = 0 };
	struct dial9_decoder *d;
	struct dial9_record r;
	(void)state;

	put_header(&b);
	put(&unk, "opaque", 6);
	put_frame(&b, 0x20, &unk); /* unknown control frame: skipped */
	put_future_schema(&b, 1);
	put_byte(&b, D9_F_EVENT_BASE + 2);
	put_var(&b, 77); /* ts delta */
	put_var(&b, 300);
	put(&b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	put_str(&b, "payload");
	put_var(&b, 12345);
	put_frame(&b, 0x3f, &unk);

	assert_int_equal(dial9_decoder_new(&d, b.b, b.n), 0);
	assert_int_equal(next_kind(d, &r, DIAL9_RECORD_EVENT), 1);
	assert_string_equal(r.schema->name, "future");
	assert_int_equal(r.schema->kind, 9);
	assert_int_equal(r.values[0].type, 0);
	assert_true(r.values[0].u64 == 300);
	assert_int_equal(r.values[1].type, 0);
	assert_int_equal(r.values[2].type, 0);
	assert_int_equal(r.values[2].str.len, 7);
	assert_int_equal(r.values[3].type, DIAL9_U64);
	assert_true(r.values[3].u64 == 12345);
	assert_true(r.ts_ns == 77);
	assert_int_equal(next(d, &r), 0);
	dial9_decoder_free(d);
}

struct corrupt_case {
	const char *what;
	int err;
	size_t off; /* where the error must be reported */
};

static void expect_error(const struct bb *b, int err, size_t off,
			 const char *what)
{
	struct dial9_decoder *d;
	struct dial9_record r;
	int ret;

	assert_int_equal(dial9_decoder_new(&d, b->b, b->n), 0);
	while ((ret = next(d, &r)) == 1)
		;
	if (ret != err || dial9_decoder_offset(d) != off)
		fail_msg("%s: got %d at %llu, want %d at %zu", what, ret,
			 (unsigned long long)dial9_decoder_offset(d), err, off);
	/* Sticky: the same error again, no progress. */
	assert_int_equal(next(d, &r), err);
	dial9_decoder_free(d);
}

static void corrupt_input_classes(void **state)
{
	struct bb b;
	size_t at;
	(void)state;

	b.n = 0;
	put(&b, "\x00\xd9TX\x01", 5);
	expect_error(&b, -EBADMSG, 0, "bad magic");

	b.n = 0;
	put(&b, "\x00\xd9TR\x03", 5);
	expect_error(&b, -EPROTONOSUPPORT, 0, "future version");

	b.n = 0;
	put(&b, "\x00\xd9T", 3);
	expect_error(&b, -ENODATA, 0, "short header");

	b.n = 0;
	put_byte(&b, D9_F_BATCH_END);
	put_byte(&b, 0);
	expect_error(&b, -EBADMSG, 0, "frame before any header");

	b.n = 0;
	put_header(&b);
	at = b.n;
	put_byte(&b, D9_F_EVENT_BASE + 5);
	put_var(&b, 1);
	expect_error(&b, -EBADMSG, at, "event without schema");

	b.n = 0;
	put_header(&b);
	at = b.n;
	put_byte(&b, D9_F_EVENT_EXT);
	put(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
	expect_error(&b, -EBADMSG, at, "varint longer than 10 bytes");

	b.n = 0;
	put_header(&b);
	at = b.n;
	put_byte(&b, D9_F_EVENT_EXT);
	put(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
	expect_error(&b, -EBADMSG, at, "varint over 64 bits");

	b.n = 0;
	put_header(&b);
	at = b.n;
	put_byte(&b, D9_F_SCHEMA);
	put_var(&b, 100);
	put_byte(&b, 1);
	expect_error(&b, -ENODATA, at, "frame longer than the input");

	{
		struct bb s = { .n = 0 };

		put_var(&s, 1);
		put_byte(&s, 0);
		put_str(&s, "x");
		put_var(&s, 1);
		put_str(&s, "f");
		put_byte(&s, 0x61); /* wire class 3: reserved */
		b.n = 0;
		put_header(&b);
		at = b.n;
		put_frame(&b, D9_F_SCHEMA, &s);
		expect_error(&b, -EBADMSG, at, "reserved wire class");

		s.n = 0;
		put_var(&s, 1);
		put_byte(&s, 0);
		put_str(&s, "x");
		put_var(&s, 256);
		b.n = 0;
		put_header(&b);
		at = b.n;
		put_frame(&b, D9_F_SCHEMA, &s);
		expect_error(&b, -EBADMSG, at, "too many fields");

		s.n = 0;
		put_var(&s, 1);
		put_byte(&s, 0);
		put_str(&s, "x");
		put_var(&s, 2); /* says two fields, has none */
		b.n = 0;
		put_header(&b);
		at = b.n;
		put_frame(&b, D9_F_SCHEMA, &s);
		expect_error(&b, -EBADMSG, at, "schema shorter than its frame");

		s.n = 0;
		put_var(&s, 1);
		put_byte(&s, 0);
		put_str(&s, "x");
		put_var(&s, 1);
		put_str(&s, "f");
		put_byte(&s, DIAL9_BOOL);
		b.n = 0;
		put_header(&b);
		put_frame(&b, D9_F_SCHEMA, &s);
		at = b.n;
		put_byte(&b, D9_F_EVENT_BASE + 1);
		put_var(&b, 0);
		put_var(&b, 2);
		expect_error(&b, -EBADMSG, at, "bool of 2");

		s.n = 0;
		put_var(&s, 1);
		put_byte(&s, 0);
		put_str(&s, "x");
		put_var(&s, 1);
		put_str(&s, "f");
		put_byte(&s, DIAL9_ISTR);
		b.n = 0;
		put_header(&b);
		put_frame(&b, D9_F_SCHEMA, &s);
		at = b.n;
		put_byte(&b, D9_F_EVENT_BASE + 1);
		put_var(&b, 0);
		put_var(&b, 0);
		expect_error(&b, -EBADMSG, at, "undefined string id");

		/* the event is cut inside its string value */
		s.n = 0;
		put_var(&s, 1);
		put_byte(&s, 0);
		put_str(&s, "x");
		put_var(&s, 1);
		put_str(&s, "f");
		put_byte(&s, DIAL9_STR);
		b.n = 0;
		put_header(&b);
		put_frame(&b, D9_F_SCHEMA, &s);
		at = b.n;
		put_byte(&b, D9_F_EVENT_BASE + 1);
		put_var(&b, 0);
		put_var(&b, 10);
		put(&b, "abc", 3);
		expect_error(&b, -ENODATA, at, "truncated event");
	}

	{
		struct bb s = { .n = 0 };

		put_var(&s, 3); /* ids are dense: 3 before 0 */
		put_str(&s, "x");
		b.n = 0;
		put_header(&b);
		at = b.n;
		put_frame(&b, D9_F_STRING, &s);
		expect_error(&b, -EBADMSG, at, "sparse string id");

		s.n = 0;
		put(&s, "\x01\x02\x03", 3);
		b.n = 0;
		put_header(&b);
		at = b.n;
		put_frame(&b, D9_F_TS_RESET, &s);
		expect_error(&b, -EBADMSG, at, "short reset frame");

		s.n = 0;
		d9_put_u64le(s.b, UINT64_MAX);
		s.n = 8;
		b.n = 0;
		put_header(&b);
		put_frame(&b, D9_F_TS_RESET, &s);
		s.n = 0;
		put_var(&s, 1);
		put_byte(&s, 0);
		put_str(&s, "x");
		put_var(&s, 0);
		put_frame(&b, D9_F_SCHEMA, &s);
		at = b.n;
		put_byte(&b, D9_F_EVENT_BASE + 1);
		put_var(&b, 1);
		expect_error(&b, -EBADMSG, at, "timestamp overflow");

		s.n = 0;
		put_var(&s, 1000000); /* pairs that cannot fit */
		b.n = 0;
		put_header(&b);
		at = b.n;
		put_frame(&b, D9_F_METADATA, &s);
		expect_error(&b, -EBADMSG, at, "metadata count too large");
	}
}

/* A realistic two-stream trace for the prefix and mutation tests. */
static struct dial9_encoder *sample_trace(const void **buf, size_t *len)
{
	struct dial9_encoder *e;
	struct dial9_value v[NALL];
	const char *k = "service", *val = "t";

	assert_int_equal(dial9_encoder_new(&e), 0);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(dial9_encoder_begin_stream(e), 0);
		assert_int_equal(dial9_encoder_metadata(e, 1, &k, &val), 0);
		assert_int_equal(dial9_encoder_thread(e, 9, "th"), 0);
		assert_int_equal(dial9_encoder_schema(e, 200, 0, "all", NALL,
						      all_fields),
				 0);
		for (int i = 0; i < 6; i++) {
			fill(v, (uint64_t)i << 20, -i, i & 1, i & 1 ? "a" : "b",
			     i * 0.5, "str", "bb", 2);
			assert_int_equal(dial9_encoder_event(
						 e, 200, (uint64_t)i << 31, v),
					 0);
		}
		assert_int_equal(dial9_encoder_end_stream(e), 0);
	}
	*buf = dial9_encoder_data(e, len);
	return e;
}

static int decode_all(const void *buf, size_t len, size_t *events,
		      uint64_t *off)
{
	struct dial9_decoder *d;
	struct dial9_record r;
	int ret;

	*events = 0;
	assert_int_equal(dial9_decoder_new(&d, buf, len), 0);
	while ((ret = next(d, &r)) == 1)
		*events += r.kind == DIAL9_RECORD_EVENT;
	*off = dial9_decoder_offset(d);
	dial9_decoder_free(d);
	return ret;
}

/* Every prefix decodes to fewer events or fails with -ENODATA inside it. */
static void every_truncation(void **state)
{
	const void *buf;
	size_t len, all, ev;
	uint64_t off;
	struct dial9_encoder *e = sample_trace(&buf, &len);
	(void)state;

	assert_int_equal(decode_all(buf, len, &all, &off), 0);
	assert_int_equal(all, 12);
	for (size_t n = 0; n < len; n++) {
		/* a heap copy of exactly n bytes, so ASan sees overreads */
		uint8_t *cut = malloc(n ? n : 1);
		int ret;

		memcpy(cut, buf, n);
		ret = decode_all(cut, n, &ev, &off);
		assert_true(ret == 0 || ret == -ENODATA);
		assert_true(off <= n);
		assert_true(ev <= all);
		free(cut);
	}
	dial9_encoder_free(e);
}

/*
 * Zeros to the end, where a frame would begin, are the padding of a
 * segment written with O_DIRECT and not yet sealed: the end, no error.
 * A zero followed by anything else is still a header, and a bad one.
 */
static void zero_padding_ends_input(void **state)
{
	const void *buf;
	size_t len, all, ev;
	uint64_t off;
	struct dial9_encoder *e = sample_trace(&buf, &len);
	uint8_t *padded = calloc(1, len + 4096);
	(void)state;

	assert_int_equal(decode_all(buf, len, &all, &off), 0);
	memcpy(padded, buf, len);
	for (size_t pad = 1; pad <= 4096; pad = pad * 2 + 1) {
		assert_int_equal(decode_all(padded, len + pad, &ev, &off), 0);
		assert_int_equal(ev, all);
		assert_int_equal(off, len + pad);
	}
	padded[len + 100] = 1;
	assert_int_equal(decode_all(padded, len + 4096, &ev, &off), -EBADMSG);
	assert_int_equal(ev, all);
	assert_int_equal(off, len);
	free(padded);
	dial9_encoder_free(e);
}

/* Flipped bytes: always terminates with records or an error. */
static void random_mutations(void **state)
{
	const void *buf;
	size_t len, ev;
	uint64_t off, x = 88172645463325252ull;
	struct dial9_encoder *e = sample_trace(&buf, &len);
	uint8_t *m = malloc(len);
	(void)state;

	for (int round = 0; round < 20000; round++) {
		memcpy(m, buf, len);
		for (int k = 0; k < 1 + round % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			m[x % len] = (uint8_t)(x >> 32);
		}
		int ret = decode_all(m, len, &ev, &off);

		assert_true(ret <= 0);
		assert_true(off <= len);
	}
	free(m);
	dial9_encoder_free(e);
}

static void strerror_names(void **state)
{
	(void)state;
	assert_string_equal(dial9_strerror(-EBADMSG), "corrupt trace data");
	assert_string_equal(dial9_strerror(-ENODATA), "truncated trace data");
	assert_non_null(dial9_strerror(-ENOSPC));
	assert_string_equal(dial9_type_name(DIAL9_F64), "f64");
	assert_string_equal(dial9_kind_name(DIAL9_KIND_GAUGE), "gauge");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_all_types),
		cmocka_unit_test(encoder_rejects_mismatch),
		cmocka_unit_test(u64_path_matches_general),
		cmocka_unit_test(concatenated_streams),
		cmocka_unit_test(future_writer_is_readable),
		cmocka_unit_test(corrupt_input_classes),
		cmocka_unit_test(every_truncation),
		cmocka_unit_test(zero_padding_ends_input),
		cmocka_unit_test(random_mutations),
		cmocka_unit_test(strerror_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
