// SPDX-License-Identifier: MIT
/*
 * test_rotation.c - segment rotations as the recorder makes them: a
 * segment filled past max_file_bytes at a time rotation is rotated once.
 * (The drain epoch across a time rotation is test_recorder.c's.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "helpers.h"

DIAL9_EVENT_TYPE(t_phase, "phase", DIAL9_FIELD(U64, n));

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void count_phase(const struct dial9_record *r, void *arg)
{
	unsigned int *n = arg;

	if (!strcmp(r->schema->name, "phase"))
		n[dial9_record_field(r, "n")->u64 % 4]++;
}

/*
 * A time rotation is decided at step one of a drain epoch and done a tick
 * later, at step two, which also writes the buffers of idle threads.
 * Here this thread's buffer fills the segment past max_file_bytes at
 * that step, so the segment is rotated for its size and the buffer opens
 * the next one.  That successor is not due and must not be cut again (a
 * tiny segment right after every full one): the events recorded after
 * the rotation land in it.  e1e1c1b made step two ask whether the
 * segment is still due, with the time read before the write, which the
 * new segment's opening is after: it wrapped and was always due, until
 * d9_segw_rotation_due() took a segment opened after that time as not.
 * Either change undone, this fails (phase 3 in a third segment).
 */
static void size_rotation_is_not_followed_by_a_tiny_segment(void **state)
{
	const uint64_t max_file = 128 << 10;
	char *dir = test_tmpdir("tiny"), *boot;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	uint64_t n1 = 0, n2, polled = 0, now, start;
	unsigned int seen[8][4] = { { 0 } };
	size_t nseg;
	char **v;
	(void)state;

	dial9_config_init(&c);
	c.trace_dir = dir;
	c.service_name = "test";
	c.sched = DIAL9_SCHED_OFF;	/* application events only */
	c.rotation_secs = 1;
	c.max_file_bytes = max_file;
	c.buffer_bytes = 1 << 20;
	start = mono_ns();
	assert_int_equal(dial9_start(&c), 0);
	/* phase 1: a little over half a segment, written by flushes */
	do {
		for (int i = 0; i < 2000; i++)
			DIAL9_EMIT(t_phase, dial9_u64(1));
		n1 += 2000;
		assert_int_equal(dial9_flush(5000), 0);
		assert_int_equal(dial9_get_stats(&st), 0);
	} while (st.bytes_written < max_file * 55 / 100);
	/* phase 2: as much again, kept in this thread's buffer */
	n2 = n1 * (max_file * 60 / 100) / st.bytes_written;
	for (uint64_t i = 0; i < n2; i++)
		DIAL9_EMIT(t_phase, dial9_u64(2));
	/* all before the first step one (1 s in), or this shows nothing */
	if (mono_ns() - start > 800000000ull) {
		assert_int_equal(dial9_stop(), 0);
		test_rm_rf(dir);
		free(dir);
		skip();	/* too slow here: the time rotation came first */
	}
	assert_int_equal(st.segments_sealed, 0);
	/* idle until the time rotation (about 1 s after the start) */
	for (int i = 0; i < 1000 && !st.segments_sealed; i++) {
		polled = mono_ns();
		sleep_ms(10);
		dial9_get_stats(&st);
	}
	assert_true(st.segments_sealed >= 1);
	/* phase 3, within a second of the rotation: not yet due again */
	DIAL9_EMIT(t_phase, dial9_u64(3));
	now = mono_ns();
	assert_int_equal(dial9_stop(), 0);
	if (now - polled > 500000000ull) {
		/* stalled: the successor may have been due */
		test_rm_rf(dir);
		free(dir);
		skip();
	}
	boot = test_boot_dir(dir);
	v = test_list(boot, ".dial9", &nseg);
	assert_true(nseg >= 2 && nseg <= 8);
	for (size_t i = 0; i < nseg; i++) {
		struct test_counts cnt = { 0 };

		test_decode_file(v[i], &cnt, count_phase, seen[i]);
		assert_int_equal(cnt.err, 0);
	}
	print_message("%zu segments; phase 1, 2, 3 events: %u %u %u, %u %u %u%s\n",
		      nseg, seen[0][1], seen[0][2], seen[0][3], seen[1][1],
		      seen[1][2], seen[1][3], nseg > 2 ? ", ..." : "");
	/* the first segment was full: phase 2 did not fit in it */
	assert_int_equal(seen[0][1], n1);
	assert_int_equal(seen[0][2], 0);
	/* its successor holds phase 2 and what came after it */
	assert_int_equal(seen[1][2], n2);
	assert_int_equal(seen[1][3], 1);
	assert_int_equal(nseg, 2);
	test_free_list(v);
	test_rm_rf(dir);
	free(boot);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(size_rotation_is_not_followed_by_a_tiny_segment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
