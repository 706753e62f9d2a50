// SPDX-License-Identifier: MIT
/*
 * test_emit.c - the record path's typed fast path (dial9__emit_scalars,
 * taken by DIAL9_EMIT for declarations whose fields are all scalars)
 * against the generic one (dial9__emit): both read back exactly, calls
 * that do not match their declaration are dropped, never written,
 * and counted lost and invalid (dial9_get_stats() and dial9.lost), and
 * an event that fits a batch only without its schema frame is counted
 * lost instead of overrunning the buffer.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers.h"
#include "record/record.h"

DIAL9_EVENT_TYPE(t_sc, "fast.scalars", DIAL9_FIELD(U64, u), DIAL9_FIELD(I64, i),
		 DIAL9_FIELD(F64, f), DIAL9_FIELD(BOOL, b));
DIAL9_SPAN_TYPE(t_span, "fast.span", DIAL9_FIELD(U64, rows));
DIAL9_EVENT_TYPE(t_none, "fast.none");
/* more than DIAL9__MAX_SCALARS fields: always the generic path */
DIAL9_EVENT_TYPE(t_nine, "fast.nine", DIAL9_FIELD(U64, a0), DIAL9_FIELD(U64, a1),
		 DIAL9_FIELD(U64, a2), DIAL9_FIELD(U64, a3),
		 DIAL9_FIELD(U64, a4), DIAL9_FIELD(U64, a5),
		 DIAL9_FIELD(U64, a6), DIAL9_FIELD(U64, a7),
		 DIAL9_FIELD(I64, a8));
DIAL9_EVENT_TYPE(t_str, "fast.str", DIAL9_FIELD(STR, s));
/* a long name: its schema frame is larger than the slack in the
 * worst-case size the record path reserves for an event */
#define LONG "_123456789_123456789_123456789_123456789_123456789"
DIAL9_EVENT_TYPE(t_big, "fast.big" LONG LONG LONG LONG,
		 DIAL9_FIELD(BYTES, raw));

#define NEV 5000

static const uint64_t u_vals[] = { 0, 1, 127, 128, 16383, 16384,
				   (1ull << 35) + 7, UINT64_MAX };
static const int64_t i_vals[] = { 0, -1, 1, -64, 64, INT64_MIN, INT64_MAX,
				  -123456789 };

static double f_val(unsigned int k)
{
	switch (k % 5) {
	case 0:
		return 0.25 * k;
	case 1:
		return -DBL_MAX;
	case 2:
		return -0.0;
	case 3:
		return INFINITY;
	default:
		return DBL_MIN;
	}
}

static void cfg_for(struct dial9_config *c, const char *dir)
{
	dial9_config_init(c);
	c->trace_dir = dir;
	c->service_name = "test-emit";
}

struct seen {
	unsigned int sc_fast, sc_generic, span_b, span_e, none, nine, str;
	unsigned int big;
	uint64_t invalid; /* dial9.lost's invalid field, summed */
	int bad;
};

static void check_sc(const struct dial9_record *r, unsigned int k,
		     struct seen *s)
{
	double f = dial9_record_field(r, "f")->f64, want = f_val(k);

	if (dial9_record_field(r, "u")->type != DIAL9_U64 ||
	    dial9_record_field(r, "u")->u64 != u_vals[k % 8] ||
	    dial9_record_field(r, "i")->i64 != i_vals[k % 8] ||
	    memcmp(&f, &want, sizeof(f)) ||
	    dial9_record_field(r, "b")->b != (k % 3 == 0))
		s->bad |= 1;
}

static void visit(const struct dial9_record *r, void *arg)
{
	struct seen *s = arg;
	const char *n = r->schema->name;

	if (!strcmp(n, "fast.scalars")) {
		/* first NEV through DIAL9_EMIT, then NEV through dial9__emit */
		unsigned int k = s->sc_fast + s->sc_generic;

		if (s->sc_fast < NEV)
			s->sc_fast++;
		else
			s->sc_generic++;
		check_sc(r, k % NEV, s);
	} else if (!strcmp(n, "fast.span")) {
		if (r->schema->kind == DIAL9_KIND_SPAN_BEGIN) {
			if (dial9_record_field(r, "rows")->u64 != s->span_b)
				s->bad |= 2;
			s->span_b++;
		} else {
			if (r->schema->kind != DIAL9_KIND_SPAN_END ||
			    dial9_record_field(r, "rows")->u64 != 2 * s->span_e)
				s->bad |= 4;
			s->span_e++;
		}
	} else if (!strcmp(n, "fast.none")) {
		s->none++;
	} else if (!strcmp(n, "fast.nine")) {
		if (dial9_record_field(r, "a7")->u64 != 7 ||
		    dial9_record_field(r, "a8")->i64 != -8)
			s->bad |= 8;
		s->nine++;
	} else if (!strcmp(n, "fast.str")) {
		s->str++;
	} else if (!strncmp(n, "fast.big", 8)) {
		s->big++;
	} else if (!strcmp(n, "dial9.lost")) {
		s->invalid += dial9_record_field(r, "invalid")->u64;
	}
}

static void scalars_read_back(void **state)
{
	char *dir = test_tmpdir("emit"), *boot;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	struct seen s = { 0 };
	uint64_t w[DIAL9__MAX_SCALARS] = { 1, 2, 3, 4 };
	(void)state;

	cfg_for(&c, dir);
	c.buffer_bytes = 4096;
	/* Application batches only: scheduler streams have no such bound. */
	c.sched = DIAL9_SCHED_OFF; /* many batches: schemas sent again */
	assert_int_equal(dial9_start(&c), 0);
	for (unsigned int k = 0; k < NEV; k++) {
		DIAL9_EMIT(t_sc, dial9_u64(u_vals[k % 8]),
			   dial9_i64(i_vals[k % 8]), dial9_f64(f_val(k)),
			   dial9_bool(k % 3 == 0));
		DIAL9_SPAN_BEGIN(t_span, dial9_u64(k));
		DIAL9_SPAN_END(t_span, dial9_u64(2 * k));
		DIAL9_EMIT(t_none);
		DIAL9_EMIT(t_nine, dial9_u64(0), dial9_u64(1), dial9_u64(2),
			   dial9_u64(3), dial9_u64(4), dial9_u64(5),
			   dial9_u64(6), dial9_u64(7), dial9_i64(-8));
	}
	/* the same values through the generic entry, typed at run time */
	for (unsigned int k = 0; k < NEV; k++) {
		struct dial9_value v[4];

		v[0] = dial9_u64(u_vals[k % 8]);
		v[1] = dial9_i64(i_vals[k % 8]);
		v[2] = dial9_f64(f_val(k));
		v[3] = dial9_bool(k % 3 == 0);
		dial9__emit(&t_sc, v, 4);
	}
	/* calls that do not match their declaration: dropped, not written,
	 * counted lost (and invalid) in the stats and in the trace */
	DIAL9_EMIT(t_sc, dial9_u64(1), dial9_u64(2), dial9_f64(3),
		   dial9_bool(1)); /* U64 for I64 */
	DIAL9_EMIT(t_sc, dial9_u64(1));       /* too few values */
	DIAL9_EMIT(t_none, dial9_u64(1));     /* too many */
	dial9__emit_scalars(&t_sc, w, 3);     /* wrong count */
	dial9__emit_scalars(&t_str, w, 1);    /* not a scalar type */
	dial9__emit_scalars(&t_nine, w, 8);   /* more than the fast path */
	assert_int_equal(dial9_flush(10000), 0);
	assert_int_equal(dial9_stop(), 0);
	assert_int_equal(dial9_get_stats(&st), 0);
	assert_int_equal(st.events_lost, 6);
	assert_int_equal(st.events_invalid, 6);

	boot = test_boot_dir(dir);
	assert_non_null(boot);
	test_decode_dir(boot, &cnt, visit, &s);
	assert_int_equal(cnt.err, 0);
	assert_int_equal(cnt.lost, 6);
	assert_int_equal(s.invalid, 6);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.sc_fast, NEV);
	assert_int_equal(s.sc_generic, NEV);
	assert_int_equal(s.span_b, NEV);
	assert_int_equal(s.span_e, NEV);
	assert_int_equal(s.none, NEV);
	assert_int_equal(s.nine, NEV);
	assert_int_equal(s.str, 0);
	assert_true(cnt.batches > 10);
	test_rm_rf(dir);
	free(boot);
	free(dir);
}

/* The largest stream (batch) in the sealed segments of dir, in bytes. */
static uint64_t largest_stream(const char *dir)
{
	char **v = test_list(dir, ".dial9", NULL);
	uint64_t max = 0;

	for (size_t i = 0; v[i]; i++) {
		int fd = open(v[i], O_RDONLY);
		struct stat stt;
		struct dial9_decoder *d;
		struct dial9_record r;
		uint64_t start = 0;
		void *map;

		assert_true(fd >= 0);
		assert_int_equal(fstat(fd, &stt), 0);
		map = mmap(NULL, (size_t)stt.st_size, PROT_READ, MAP_PRIVATE,
			   fd, 0);
		close(fd);
		assert_true(map != MAP_FAILED);
		assert_int_equal(dial9_decoder_new(&d, map, (size_t)stt.st_size),
				 0);
		while (dial9_decoder_next(d, &r) == 1) {
			if (r.kind == DIAL9_RECORD_STREAM)
				start = r.offset;
			if (r.kind == DIAL9_RECORD_BATCH_END &&
			    dial9_decoder_offset(d) - start > max)
				max = dial9_decoder_offset(d) - start;
		}
		dial9_decoder_free(d);
		munmap(map, (size_t)stt.st_size);
	}
	test_free_list(v);
	return max;
}

/*
 * Events sized around what a fresh batch holds, each after a small one
 * of the same type: the big one starts a batch that has not carried the
 * schema yet. Every one is either recorded whole or counted lost, and
 * the trace decodes cleanly (the schema frame is part of the room the
 * event needs).
 */
static void event_filling_a_batch(void **state)
{
	char *dir = test_tmpdir("emitbig"), *boot;
	static uint8_t pad[4096];
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	struct seen s = { 0 };
	unsigned int emitted = 0;
	(void)state;

	cfg_for(&c, dir);
	c.buffer_bytes = 4096;
	/* Application batches only: scheduler streams have no such bound. */
	c.sched = DIAL9_SCHED_OFF;
	assert_int_equal(dial9_start(&c), 0);
	for (size_t len = 3700; len <= 4090; len++) {
		DIAL9_EMIT(t_big, dial9_bytes(pad, 1));
		DIAL9_EMIT(t_big, dial9_bytes(pad, len));
		emitted += 2;
		/* keep the collector from overflowing */
		if (len % 32 == 0)
			assert_int_equal(dial9_flush(10000), 0);
	}
	assert_int_equal(dial9_stop(), 0);
	assert_int_equal(dial9_get_stats(&st), 0);
	boot = test_boot_dir(dir);
	assert_non_null(boot);
	test_decode_dir(boot, &cnt, visit, &s);
	assert_int_equal(cnt.err, 0);
	print_message("emitted %u recorded %u lost (too big) %llu, largest batch %llu bytes\n",
		      emitted, s.big, (unsigned long long)st.events_lost,
		      (unsigned long long)largest_stream(boot));
	/* no batch outgrew its buffer */
	assert_true(largest_stream(boot) <= c.buffer_bytes);
	assert_true(st.events_lost > 0); /* the largest cannot fit */
	assert_int_equal(s.big + st.events_lost, emitted);
	test_rm_rf(dir);
	free(boot);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scalars_read_back),
		cmocka_unit_test(event_filling_a_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
