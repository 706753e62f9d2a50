// SPDX-License-Identifier: MIT
/*
 * mktrace_samples.c - a trace of on-CPU samples (sched.sample) for the
 * tests of dial9 flame --on-cpu and its filters (synthetic.sh):
 *
 *   mktrace samples DIR  DIR/samples/: process 900 (/usr/bin/app);
 *                        900 ("main") sampled in hot() (0x100) called
 *                        from main (0x200) at 10, 20 and 30 us, in
 *                        cold() (0x300) at 40 (after a period its timer
 *                        missed); 901 (a name with <&>"' and a cut UTF-8
 *                        character, of its own process, unmapped) in
 *                        hot() from 0x400 at 50 and 60.  900 has the span
 *                        "request" open from 15 to 35, and is off the CPU
 *                        from 32 to 38 with the stack 0x500 from main.
 */
#include <string.h>

#include "mktrace.h"

#define S_SAMPLE (S_SPAN_E + 10)	/* clear of the ids others use */

static const struct dial9_field f_sample[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "truncated", DIAL9_BOOL }, { "frames", DIAL9_BYTES },
	{ "in_kernel", DIAL9_BOOL }, { "period_ns", DIAL9_U64 },
	{ "missed", DIAL9_U64 },
};

void s_sample_schema(struct dial9_encoder *e)
{
	CHECK(dial9_encoder_schema(e, S_SAMPLE, DIAL9_KIND_INSTANT, "sched.sample", 8, f_sample));
}

/* A sample of @tid at 99 Hz, @n addresses innermost first, on CPU 0. */
void s_sample(struct dial9_encoder *e, double t, uint64_t tid,
	      const uint64_t *ips, size_t n, uint64_t missed)
{
	uint8_t frames[32 * 8];
	struct dial9_value v[8] = {
		dial9_u64(tid), dial9_u64(tid), dial9_u64(0), dial9_bool(false),
		{ 0 }, dial9_bool(false), dial9_u64(10101010), dial9_u64(missed),
	};

	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 8; b++)
			frames[i * 8 + b] = (uint8_t)(ips[i] >> (8 * b));
	v[4].type = DIAL9_BYTES;
	v[4].str.ptr = frames;
	v[4].str.len = n * 8;
	CHECK(dial9_encoder_event(e, S_SAMPLE, US(t), v));
}

int samples_case(const char *dir)
{
	static const uint64_t hot[] = { 0x400100, 0x400200 };
	static const uint64_t cold[] = { 0x400300, 0x400200 };
	static const uint64_t off[] = { 0x400500, 0x400200 };
	static const uint64_t other[] = { 0x400100, 0x400400 };
	struct dial9_encoder *e;

	CHECK(dial9_encoder_new(&e));
	sched_begin(e, NULL, NULL);
	s_stack_schemas(e);
	s_sample_schema(e);
	s_map(e, 0, 900, 0x400000, 0x401000, 0, "/usr/bin/app", "-");
	s_inx(e, 0, 900, 0, 0, 0, 0, 0);
	s_inx(e, 0, 901, 1, 0, 0, 0, 0);
	for (int t = 10; t <= 30; t += 10)
		s_sample(e, t, 900, hot, 2, 0);
	s_outx(e, 32, 900, 0, false, 0, 1, 0);
	s_stack(e, 32, 900, off, 2, false);
	s_inx(e, 38, 900, 0, 1000, 0, 1, 0);
	s_sample(e, 40, 900, cold, 2, 1);
	s_sample(e, 50, 901, other, 2, 0);
	s_sample(e, 60, 901, other, 2, 0);
	CHECK(dial9_encoder_end_stream(e));
	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_thread(e, 900, "main"));
	CHECK(dial9_encoder_schema(e, S_SPAN_B, DIAL9_KIND_SPAN_BEGIN, "request", 0, NULL));
	CHECK(dial9_encoder_schema(e, S_SPAN_E, DIAL9_KIND_SPAN_END, "request", 0, NULL));
	CHECK(dial9_encoder_event(e, S_SPAN_B, US(15), NULL));
	CHECK(dial9_encoder_event(e, S_SPAN_E, US(35), NULL));
	CHECK(dial9_encoder_thread(e, 901, "w<&>\"'\xc3"));
	s_save(e, dir, "samples", "00000001.dial9");
	dial9_encoder_free(e);
	return 0;
}
