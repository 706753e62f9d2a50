/* SPDX-License-Identifier: MIT */
/*
 * worker_test.h - what the worker pipeline's tests share: the event type
 * they record, their configuration, segments of known events, and the
 * check of LZ4 segments against the stock lz4 CLI.  test_worker.c (LZ4,
 * write-back, the budget, S3 keys) and test_dump.c (trigger mode, the
 * memory buffer) include it after helpers.h.
 */
#ifndef DIAL9_TEST_WORKER_H
#define DIAL9_TEST_WORKER_H

#include "record/record.h"
#include "pipeline/pipeline.h"

DIAL9_EVENT_TYPE(t_w, "worker.ev", DIAL9_FIELD(U64, seq), DIAL9_FIELD(STR, s));

static inline void cfg_for(struct dial9_config *c, const char *dir)
{
	dial9_config_init(c);
	c->trace_dir = dir;
	c->service_name = "wtest";
	c->sched = DIAL9_SCHED_OFF;
}

/* n events per segment, nseg segments (rotations). */
static inline uint64_t record_segments(unsigned int nseg, unsigned int n)
{
	uint64_t seq = 0;

	for (unsigned int s = 0; s < nseg; s++) {
		for (unsigned int i = 0; i < n; i++, seq++)
			DIAL9_EMIT(t_w, dial9_u64(seq),
				   dial9_str("a string that repeats and compresses well"));
		assert_int_equal(dial9_rotate(), 0);
	}
	return seq;
}

/* Every .lz4 file: `lz4 -t` accepts it, `lz4 -d` gives what our own
 * decompressor gives, and that decodes; counts events into *c. */
static inline size_t check_lz4_dir(const char *dir, struct test_counts *c)
{
	size_t n;
	char **v = test_list(dir, ".lz4", &n);

	for (size_t i = 0; v[i]; i++) {
		char out[700];
		uint8_t *z, *cli, *ours;
		size_t zn, cn, on;

		assert_int_equal(test_sh("lz4 -q -t '%s'", v[i]), 0);
		snprintf(out, sizeof(out), "%s.plain", v[i]);
		assert_int_equal(test_sh("lz4 -q -d -f '%s' '%s'", v[i], out), 0);
		z = test_slurp(v[i], &zn);
		cli = test_slurp(out, &cn);
		assert_non_null(z);
		assert_non_null(cli);
		assert_int_equal(d9_lz4_decompress(z, zn, (void **)&ours, &on), 0);
		assert_int_equal(on, cn);
		assert_memory_equal(ours, cli, cn);
		assert_int_equal(test_decode_file(out, c, NULL, NULL), 0);
		unlink(out);
		free(z);
		free(cli);
		free(ours);
	}
	test_free_list(v);
	return n;
}

#endif
