// SPDX-License-Identifier: MIT
/*
 * test_kchunk.c - kernel chunks (format version 2): the kernel's records
 * as it wrote them, decoded through the layout frame into sched.* events,
 * the CPUs merged in time order up to each horizon; hostile chunks give
 * an error, never a crash; version 1 streams still read, version 3 not.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dial9.h"
#include "format/wire.h"
#include "ksched/ksched.h"

struct bb {
	uint8_t b[8192];
	size_t n;
};

static void put(struct bb *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_var(struct bb *b, uint64_t v)
{
	uint8_t t[D9_MAX_VARINT];

	put(b, t, (size_t)(d9_put_varint(t, v) - t));
}

static void stream(struct bb *b, uint64_t period)
{
	uint8_t t[D9_HEADER_LEN + D9_KLAYOUT_MAX];
	size_t n;

	d9_put_header(t);
	n = d9_klayout_frame(t + D9_HEADER_LEN, sizeof(t) - D9_HEADER_LEN,
			     "dial9.ko", period);
	assert_true(n > 0);
	put(b, t, D9_HEADER_LEN + n);
}

/* A chunk frame of queue @cpu with @n bytes of records. */
static void chunk(struct bb *b, unsigned int cpu, const void *recs, size_t n)
{
	uint8_t id[D9_MAX_VARINT];
	size_t il = (size_t)(d9_put_varint(id, cpu) - id);
	uint8_t tag = D9_F_KCHUNK;

	put(b, &tag, 1);
	put_var(b, il + n);
	put(b, id, il);
	put(b, recs, n);
}

/* An application's stream (the encoder's): one event of @name at @ts. */
static void app_stream(struct bb *b, const char *name, uint64_t ts)
{
	struct dial9_encoder *e;
	const void *p;
	size_t len;

	assert_int_equal(dial9_encoder_new(&e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_schema(e, 1, DIAL9_KIND_INSTANT, name,
					      0, NULL), 0);
	assert_int_equal(dial9_encoder_event(e, 1, ts, NULL), 0);
	assert_int_equal(dial9_encoder_end_stream(e), 0);
	p = dial9_encoder_data(e, &len);
	put(b, p, len);
	dial9_encoder_free(e);
}

static void horizon(struct bb *b, uint64_t h)
{
	uint8_t t[10] = { D9_F_KHORIZON, 8 };

	d9_put_u64le(t + 2, h);
	put(b, t, 10);
}

static struct dial9_rec_header hdr(uint16_t type, uint16_t size, uint16_t cpu,
				   uint16_t flags, uint64_t t)
{
	return (struct dial9_rec_header){ type, size, cpu, flags, t };
}

static struct dial9_rec_switch sw(uint16_t cpu, uint64_t t, uint32_t prev,
				  uint32_t next, uint16_t flags)
{
	struct dial9_rec_switch s;

	memset(&s, 0, sizeof(s));
	s.hdr = hdr(DIAL9_REC_SWITCH, sizeof(s), cpu,
		    flags | DIAL9_SWITCH_TOTALS | DIAL9_SWITCH_WAIT_VALID, t);
	s.prev_tid = s.prev_tgid = prev;
	s.next_tid = s.next_tgid = next;
	s.prev_prio = 120;
	s.next_prio = -5;		/* never negative as a field */
	s.prev_state = DIAL9_STATE_SLEEPING;
	s.next_wait_ns = 777;
	s.prev_run_delay_ns = 1000 + prev;
	s.next_run_delay_ns = 2000 + next;
	s.prev_pcount = 3;
	s.next_pcount = 4;
	return s;
}

static uint64_t fu(const struct dial9_record *r, const char *name)
{
	const struct dial9_value *v = dial9_record_field(r, name);

	assert_non_null(v);
	return v->type == DIAL9_BOOL ? v->b : v->u64;
}

/* The events of @b, as "name@ts" lines, and the records' count. */
static int decode(const struct bb *b, char *out, size_t cap, size_t *n)
{
	struct dial9_decoder *d;
	struct dial9_record r;
	size_t used = 0;
	int ret;

	*n = 0;
	out[0] = 0;
	assert_int_equal(dial9_decoder_new(&d, b->b, b->n), 0);
	while ((ret = dial9_decoder_next(d, &r)) == 1) {
		if (r.kind == DIAL9_RECORD_STREAM)
			used += (size_t)snprintf(out + used, cap - used, "|");
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		(*n)++;
		used += (size_t)snprintf(out + used, cap - used, "%s@%llu ",
					 r.schema->name +
					 (strncmp(r.schema->name, "sched.", 6) ? 0 : 6),
					 (unsigned long long)r.ts_ns);
	}
	if (ret < 0)
		used += (size_t)snprintf(out + used, cap - used, "error at %llu",
			(unsigned long long)dial9_decoder_offset(d));
	dial9_decoder_free(d);
	return ret;
}

static void merged_by_horizon(void **state)
{
	struct bb b = { .n = 0 }, c0 = { .n = 0 }, c1 = { .n = 0 };
	struct dial9_rec_switch s0 = sw(0, 20, 0, 5, DIAL9_SWITCH_NEXT_TARGET);
	struct dial9_rec_switch s1 = sw(1, 30, 5, 6, DIAL9_SWITCH_PREV_TARGET |
					DIAL9_SWITCH_NEXT_TARGET);
	struct dial9_rec_lost lo = { hdr(DIAL9_REC_LOST, sizeof(lo), 0, 0, 40),
				     9 };
	struct dial9_rec_comm cm = { hdr(DIAL9_REC_COMM, sizeof(cm), 0, 0, 45),
				     6, 6, "worker" };
	struct dial9_rec_wake wk = { hdr(DIAL9_REC_WAKING, sizeof(wk), 1,
					 DIAL9_WAKE_FROM_IRQ, 50),
				     5, 5, 6, 6, 120, 1 };
	struct { struct dial9_rec_stack st; uint64_t ips[2]; } stk = {
		{ hdr(DIAL9_REC_SAMPLE, sizeof(stk), 0, DIAL9_SAMPLE_KERNEL, 60),
		  6, 6, 2, 3 }, { 0x1234, 0x5678 } };
	struct dial9_rec_exit ex = { hdr(DIAL9_REC_EXIT, sizeof(ex), 0,
					 DIAL9_EXIT_GROUP_DEAD, 70), 6, 6 };
	struct dial9_rec_header pad = hdr(DIAL9_REC_PAD, 8, 0, 0, 0);
	struct dial9_rec_header unk = hdr(42, 16, 1, 0, 80);
	struct dial9_decoder *d;
	struct dial9_record r;
	char out[2048];
	size_t n;
	bool saw_sample = false, saw_in = false;
	(void)state;

	put(&c0, &s0, sizeof(s0));
	put(&c0, &pad, 8);	/* a PAD may be 8 bytes */
	put(&c0, &lo, sizeof(lo));
	put(&c0, &cm, sizeof(cm));
	put(&c0, &stk, sizeof(stk));
	put(&c1, &s1, sizeof(s1));
	put(&c1, &wk, sizeof(wk));
	stream(&b, 10101010);
	chunk(&b, 1, c1.b, c1.n);
	chunk(&b, 0, c0.b, c0.n);
	horizon(&b, 45);
	/* an application's stream between two kernel ones */
	app_stream(&b, "app", 100);
	stream(&b, 10101010);
	c0.n = 0;
	put(&c0, &ex, sizeof(ex));
	chunk(&b, 0, c0.b, c0.n);
	chunk(&b, 1, &unk, sizeof(unk));

	if (decode(&b, out, sizeof(out), &n))
		fail_msg("%s", out);
	/* up to the horizon, then the application's stream, then the rest
	 * at the end of the input, in time order across the CPUs */
	assert_string_equal(out,
		"|switch_in@20 switch_out@30 switch_in@30 lost@40 comm@45 "
		"|app@100 |waking@50 sample@60 exit@70 unknown@80 ");

	assert_int_equal(dial9_decoder_new(&d, b.b, b.n), 0);
	while (dial9_decoder_next(d, &r) == 1) {
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		if (!strcmp(r.schema->name, "sched.switch_in") &&
		    r.ts_ns == 30) {
			saw_in = true;
			assert_int_equal(fu(&r, "tid"), 6);
			assert_int_equal(fu(&r, "cpu"), 1);
			assert_int_equal(fu(&r, "prev_tid"), 5);
			assert_int_equal(fu(&r, "runq_delay_ns"), 777);
			assert_int_equal(fu(&r, "delay_known"), 1);
			assert_int_equal(fu(&r, "runq_total_ns"), 2006);
			assert_int_equal(fu(&r, "runq_count"), 4);
			assert_int_equal(fu(&r, "totals_known"), 1);
			assert_int_equal(fu(&r, "prev_prio"), 120);
			assert_int_equal(fu(&r, "prio"), 0);
		}
		if (!strcmp(r.schema->name, "sched.switch_out")) {
			assert_int_equal(fu(&r, "tid"), 5);
			assert_int_equal(fu(&r, "state"), DIAL9_STATE_SLEEPING);
			assert_int_equal(fu(&r, "preempted"), 0);
			assert_int_equal(fu(&r, "runq_total_ns"), 1005);
			assert_int_equal(fu(&r, "runq_count"), 3);
		}
		if (!strcmp(r.schema->name, "sched.lost"))
			assert_int_equal(fu(&r, "count"), 9);
		if (!strcmp(r.schema->name, "sched.waking")) {
			assert_int_equal(fu(&r, "waker_tid"), 6);
			assert_int_equal(fu(&r, "from_irq"), 1);
		}
		if (!strcmp(r.schema->name, "sched.comm")) {
			const struct dial9_value *v =
				dial9_record_field(&r, "name");

			assert_int_equal(v->str.len, 6);
			assert_memory_equal(v->str.ptr, "worker", 6);
		}
		if (!strcmp(r.schema->name, "sched.sample")) {
			const struct dial9_value *v =
				dial9_record_field(&r, "frames");
			uint64_t f[2];

			saw_sample = true;
			assert_int_equal(v->str.len, 16);
			memcpy(f, v->str.ptr, 16);
			assert_int_equal(f[1], 0x5678);
			assert_int_equal(fu(&r, "period_ns"), 10101010);
			assert_int_equal(fu(&r, "missed"), 3);
			assert_int_equal(fu(&r, "in_kernel"), 1);
		}
		if (!strcmp(r.schema->name, "sched.unknown"))
			assert_int_equal(fu(&r, "type"), 42);
		if (!strcmp(r.schema->name, "sched.exit"))
			assert_int_equal(fu(&r, "process_exit"), 1);
	}
	dial9_decoder_free(d);
	assert_true(saw_in && saw_sample);
}

/* A module's 56-byte switch (before the totals): no totals, still read. */
static void older_switch_has_no_totals(void **state)
{
	struct bb b = { .n = 0 };
	struct dial9_rec_switch s = sw(0, 20, 0, 5, DIAL9_SWITCH_NEXT_TARGET);
	struct dial9_decoder *d;
	struct dial9_record r;
	int ret, n = 0;
	(void)state;

	s.hdr.size = DIAL9_REC_SWITCH_SIZE_VER0;
	stream(&b, 0);
	chunk(&b, 0, &s, DIAL9_REC_SWITCH_SIZE_VER0);
	assert_int_equal(dial9_decoder_new(&d, b.b, b.n), 0);
	while ((ret = dial9_decoder_next(d, &r)) == 1) {
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		n++;
		assert_int_equal(fu(&r, "totals_known"), 0);
		assert_int_equal(fu(&r, "runq_total_ns"), 0);
		assert_int_equal(fu(&r, "runq_delay_ns"), 777);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(n, 1);
	dial9_decoder_free(d);
}

static void expect_bad(const struct bb *b, const char *what)
{
	char out[2048];
	size_t n;

	if (decode(b, out, sizeof(out), &n) != -EBADMSG)
		fail_msg("%s: not refused", what);
}

static void hostile_chunks(void **state)
{
	struct bb b;
	struct dial9_rec_switch s = sw(0, 20, 0, 5, DIAL9_SWITCH_NEXT_TARGET);
	struct { struct dial9_rec_stack st; uint64_t ips[2]; } stk = {
		{ hdr(DIAL9_REC_STACK, sizeof(stk), 0, 0, 60), 6, 6, 33, 0 },
		{ 1, 2 } };
	struct dial9_rec_header tiny = hdr(DIAL9_REC_SWITCH, 8, 0, 0, 0);
	uint8_t odd[24] = { 0 };
	(void)state;

	b.n = 0;
	put(&b, "\x00\xd9TR\x02", 5);
	chunk(&b, 0, &s, sizeof(s));
	expect_bad(&b, "a chunk before any layout");

	b.n = 0;
	stream(&b, 0);
	s.hdr.size = 12;
	chunk(&b, 0, &s, sizeof(s));
	expect_bad(&b, "a size not a multiple of 8");

	b.n = 0;
	stream(&b, 0);
	s.hdr.size = 4096;
	chunk(&b, 0, &s, sizeof(s));
	expect_bad(&b, "a record longer than its chunk");

	b.n = 0;
	stream(&b, 0);
	chunk(&b, 0, &stk, sizeof(stk));
	expect_bad(&b, "a stack of 33 frames");

	b.n = 0;
	stream(&b, 0);
	chunk(&b, 0, &tiny, sizeof(tiny));
	expect_bad(&b, "a switch as short as a PAD");

	b.n = 0;
	stream(&b, 0);
	chunk(&b, 0, odd, 4);
	expect_bad(&b, "a chunk of 4 bytes");

	/* a zero size would loop forever */
	b.n = 0;
	stream(&b, 0);
	chunk(&b, 0, odd, sizeof(odd));
	expect_bad(&b, "a record of size 0");
}

/* Flipped bytes in a trace of chunks: it always ends. */
static void random_mutations(void **state)
{
	struct bb b = { .n = 0 }, m;
	struct dial9_rec_switch s0 = sw(0, 20, 0, 5, DIAL9_SWITCH_NEXT_TARGET);
	struct dial9_rec_switch s1 = sw(1, 10, 5, 6, DIAL9_SWITCH_PREV_TARGET);
	uint64_t x = 88172645463325252ull;
	char out[4096];
	size_t n;
	(void)state;

	stream(&b, 0);
	chunk(&b, 0, &s0, sizeof(s0));
	chunk(&b, 1, &s1, sizeof(s1));
	horizon(&b, 15);
	chunk(&b, 1, &s1, sizeof(s1));
	for (int round = 0; round < 20000; round++) {
		m = b;
		for (int k = 0; k < 1 + round % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			m.b[x % m.n] = (uint8_t)(x >> 32);
		}
		assert_true(decode(&m, out, sizeof(out), &n) <= 0);
	}
}

static void versions(void **state)
{
	struct bb b = { .n = 0 };
	char out[256];
	size_t n;
	(void)state;

	/* a stream of version 1, as libdial9 wrote before: read */
	app_stream(&b, "old", 5);
	assert_int_equal(b.b[4], D9_VERSION);
	assert_int_equal(D9_VERSION, 2);
	b.b[4] = 1;
	assert_int_equal(decode(&b, out, sizeof(out), &n), 0);
	assert_int_equal(n, 1);
	/* a version this reader does not know: refused */
	b.b[4] = 3;
	assert_int_equal(decode(&b, out, sizeof(out), &n), -EPROTONOSUPPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(merged_by_horizon),
		cmocka_unit_test(older_switch_has_no_totals),
		cmocka_unit_test(hostile_chunks),
		cmocka_unit_test(random_mutations),
		cmocka_unit_test(versions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
