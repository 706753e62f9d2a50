/* SPDX-License-Identifier: MIT */
/*
 * stacks_seg.h - segments with stacks (sched.mapping, sched.stack) built
 * with the encoder, for the symbol table tests: test_symtab.c (the table
 * itself, write-back) and test_s3.c (through S3).  After helpers.h.
 */
#ifndef DIAL9_TEST_STACKS_SEG_H
#define DIAL9_TEST_STACKS_SEG_H

#include <endian.h>

static const struct dial9_field seg_f_mapping[] = {
	{ "pid", DIAL9_U64 }, { "start", DIAL9_U64 }, { "end", DIAL9_U64 },
	{ "offset", DIAL9_U64 }, { "path", DIAL9_STR },
	{ "build_id", DIAL9_BYTES },
};
static const struct dial9_field seg_f_stack[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "truncated", DIAL9_BOOL }, { "frames", DIAL9_BYTES },
	{ "waker", DIAL9_BOOL },
};

static inline struct dial9_value seg_bytes(const void *p, size_t n)
{
	struct dial9_value v = { .type = DIAL9_BYTES };

	v.str.ptr = p;
	v.str.len = n;
	return v;
}

/* A new encoder: the preamble (host h1, boot b1), then a stream with
 * the two schemas (1 sched.mapping, 2 sched.stack) begun. */
static inline struct dial9_encoder *seg_begin(void)
{
	const char *keys[] = { "host", "boot_id" }, *vals[] = { "h1", "b1" };
	struct dial9_encoder *e;

	assert_int_equal(dial9_encoder_new(&e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_metadata(e, 2, keys, vals), 0);
	assert_int_equal(dial9_encoder_end_stream(e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_schema(e, 1, DIAL9_KIND_INSTANT,
					      "sched.mapping", 6,
					      seg_f_mapping), 0);
	assert_int_equal(dial9_encoder_schema(e, 2, DIAL9_KIND_INSTANT,
					      "sched.stack", 6, seg_f_stack), 0);
	return e;
}

/* File @path (its build-id @id) mapped at [@start, @end) from @off. */
static inline void seg_mapping(struct dial9_encoder *e, uint32_t pid,
			       uint64_t start, uint64_t end, uint64_t off,
			       const char *path, const uint8_t *id,
			       size_t idlen)
{
	struct dial9_value v[6] = {
		dial9_u64(pid), dial9_u64(start), dial9_u64(end),
		dial9_u64(off), dial9_str(path), seg_bytes(id, idlen),
	};

	assert_int_equal(dial9_encoder_event(e, 1, 1000, v), 0);
}

/* Thread @pid + 1's stack at @ts: @n (at most 8) addresses. */
static inline void seg_stack(struct dial9_encoder *e, uint32_t pid,
			     uint64_t ts, const uint64_t *ips, size_t n)
{
	uint64_t le[8];
	struct dial9_value v[6];

	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		le[i] = htole64(ips[i]);
	v[0] = dial9_u64(pid + 1);
	v[1] = dial9_u64(pid);
	v[2] = dial9_u64(0);
	v[3] = (struct dial9_value){ .type = DIAL9_BOOL, .b = false };
	v[4] = seg_bytes(le, n * sizeof(le[0]));
	v[5] = (struct dial9_value){ .type = DIAL9_BOOL, .b = false };
	assert_int_equal(dial9_encoder_event(e, 2, ts, v), 0);
}

/* The stream ended, its bytes (*@len, malloc'd), the encoder freed. */
static inline uint8_t *seg_end(struct dial9_encoder *e, size_t *len)
{
	const void *data;
	uint8_t *seg;

	assert_int_equal(dial9_encoder_end_stream(e), 0);
	data = dial9_encoder_data(e, len);
	seg = malloc(*len);
	assert_non_null(seg);
	memcpy(seg, data, *len);
	dial9_encoder_free(e);
	return seg;
}

#endif
