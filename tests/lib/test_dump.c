// SPDX-License-Identifier: MIT
/*
 * test_dump.c - trigger mode and the memory buffer: segments retained
 * while the pipeline is parked, dumps from a thread and from a signal
 * (debounced, coalesced), a dump's segments kept from eviction, and the
 * memory buffer shipped through write-back and by a dump.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "helpers.h"
#include "worker_test.h"

/* Segment indexes of the files in dir ending with suffix. */
static size_t indexes(const char *dir, const char *suffix, uint64_t *out,
		      size_t max)
{
	size_t n;
	char **v = test_list(dir, suffix, &n);

	assert_true(n <= max);
	for (size_t i = 0; v[i]; i++)
		out[i] = strtoull(strrchr(v[i], '/') + 1, NULL, 10);
	test_free_list(v);
	return n;
}

static void trigger_cfg(struct dial9_config *c, const char *dir, const char *dst)
{
	cfg_for(c, dir);
	c->mode = DIAL9_MODE_TRIGGER;
	c->pipeline = DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK;
	c->write_back_dir = dst;
	c->dump_debounce_ms = 0;
}

/*
 * Segments accumulate while the pipeline is parked; a dump from a
 * thread seals the active segment and ships exactly what was retained;
 * the receipt says which segments and what time they cover; a second
 * dump takes only what was sealed since.
 */
static void trigger_from_thread(void **state)
{
	char *dir = test_tmpdir("t-src"), *dst = test_tmpdir("t-dst");
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct dial9_dump_receipt rc, rc2;
	struct test_counts cnt = { 0 };
	uint64_t emitted, idx[64], t0 = dial9_now_ns(), real0;
	struct timespec now;
	char *boot, *wboot;

	(void)state;
	clock_gettime(CLOCK_REALTIME, &now);
	real0 = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	trigger_cfg(&c, dir, dst);
	assert_int_equal(dial9_start(&c), 0);
	emitted = record_segments(3, 3000);
	for (unsigned int i = 0; i < 500; i++, emitted++) /* the active one */
		DIAL9_EMIT(t_w, dial9_u64(i), dial9_str("unsealed"));
	assert_int_equal(dial9_flush(5000), 0);
	dial9_get_stats(&st);
	boot = test_boot_dir(dir);
	/* parked: everything sealed is still here, nothing was shipped */
	assert_int_equal(st.segments_sealed, 3);
	assert_int_equal(indexes(boot, ".dial9", idx, 64), 3);
	assert_int_equal(st.pipe_done + st.pipe_pending + st.dumps, 0);
	assert_null(test_boot_dir(dst));

	assert_int_equal(dial9_dump_trigger("from a thread", 30000, &rc), 0);
	assert_int_equal(rc.status, 0);
	assert_int_equal(rc.segments, 4);
	assert_int_equal(rc.segments_done, 4);
	assert_int_equal(rc.segments_failed, 0);
	assert_int_equal(rc.first_index, 1);
	assert_int_equal(rc.last_index, 4);
	assert_int_equal(strlen(rc.dump_id), 26);
	assert_true(rc.start_ns >= t0 && rc.start_ns < rc.end_ns);
	assert_true(rc.end_ns <= dial9_now_ns());
	assert_true(rc.start_real_ns >= real0 - 1000000000ull);
	assert_true(rc.end_real_ns - rc.start_real_ns == rc.end_ns - rc.start_ns);
	assert_string_equal(rc.manifest_key, ""); /* S3 only */
	dial9_get_stats(&st);
	assert_int_equal(st.dumps, 1);
	assert_int_equal(st.dumps_done, 1);
	assert_string_equal(st.last_dump_id, rc.dump_id);
	wboot = test_boot_dir(dst);
	assert_non_null(wboot);
	assert_int_equal(indexes(wboot, ".dial9.lz4", idx, 64), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(idx[i], i + 1);
	assert_int_equal(check_lz4_dir(wboot, &cnt), 4);
	assert_int_equal(cnt.user, emitted);
	assert_int_equal(indexes(boot, ".dial9", idx, 64), 0);

	/* the next dump: only what was sealed since */
	record_segments(2, 1000);
	assert_int_equal(dial9_dump_trigger(NULL, 30000, &rc2), 0);
	assert_int_equal(rc2.status, 0);
	assert_int_equal(rc2.segments, 2);
	assert_int_equal(rc2.first_index, 5);
	assert_int_equal(rc2.last_index, 6);
	assert_true(strcmp(rc2.dump_id, rc.dump_id) > 0); /* sortable by time */
	assert_true(rc2.start_ns >= rc.end_ns);
	/* outside trigger mode there is nothing to dump */
	record_segments(1, 10);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_int_equal(st.dumps, 2);
	assert_int_equal(st.pipe_done, 6);
	assert_int_equal(indexes(wboot, ".dial9.lz4", idx, 64), 6);
	/* sealed after the last dump: stays as sealed */
	assert_int_equal(indexes(boot, ".dial9", idx, 64), 1);
	assert_int_equal(idx[0], 7);
	assert_int_equal(dial9_dump_trigger(NULL, 0, NULL), -ENOENT);
	cfg_for(&c, dir);
	assert_int_equal(dial9_start(&c), 0);
	assert_int_equal(dial9_dump_trigger(NULL, 0, NULL), -EINVAL);
	assert_int_equal(dial9_stop(), 0);
	c.mode = DIAL9_MODE_TRIGGER; /* with nowhere to send a dump */
	assert_int_equal(dial9_start(&c), -EINVAL);
	free(boot);
	free(wboot);
	test_rm_rf(dir);
	test_rm_rf(dst);
	free(dir);
	free(dst);
}

struct burst {
	pthread_barrier_t *bar;
	struct dial9_dump_receipt rc;
	int ret;
};

static void *burst_thread(void *arg)
{
	struct burst *b = arg;

	pthread_barrier_wait(b->bar);
	b->ret = dial9_dump_trigger("burst", 30000, &b->rc);
	return NULL;
}

/* Eight threads trigger at once inside the debounce window: one dump;
 * the others are folded into it and get its receipt. */
static void debounce_burst(void **state)
{
	char *dir = test_tmpdir("t-deb"), *dst = test_tmpdir("t-deb-dst");
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	pthread_barrier_t bar;
	pthread_t th[8];
	struct burst b[8];
	int first = 0, coalesced = 0;

	(void)state;
	trigger_cfg(&c, dir, dst);
	c.dump_debounce_ms = 600000; /* far longer than the test */
	assert_int_equal(dial9_start(&c), 0);
	record_segments(2, 1000);
	pthread_barrier_init(&bar, NULL, 8);
	for (int i = 0; i < 8; i++) {
		b[i].bar = &bar;
		assert_int_equal(pthread_create(&th[i], NULL, burst_thread, &b[i]), 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 8; i++) {
		first += b[i].ret == 0;
		coalesced += b[i].ret == -EALREADY;
		assert_string_equal(b[i].rc.dump_id, b[0].rc.dump_id);
		assert_int_equal(b[i].rc.segments, 2);
	}
	assert_int_equal(first, 1);
	assert_int_equal(coalesced, 7);
	/* later, still inside the window */
	record_segments(1, 100);
	assert_int_equal(dial9_dump_trigger("again", 1000, NULL), -EALREADY);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_int_equal(st.dumps, 1);
	assert_int_equal(st.dumps_coalesced, 8);
	assert_int_equal(st.pipe_done, 2);
	pthread_barrier_destroy(&bar);
	test_rm_rf(dir);
	test_rm_rf(dst);
	free(dir);
	free(dst);
}

static bool one_dump_done(const struct dial9_stats *st) { return st->dumps_done >= 1; }
static bool one_coalesced(const struct dial9_stats *st) { return st->dumps_coalesced >= 1; }

/* DIAL9_MODE=trigger DIAL9_TRIGGER_SIGNAL=USR2: a burst of SIGUSR2
 * makes one dump, a later one inside the debounce window none. */
static void trigger_by_signal(void **state)
{
	char *dir = test_tmpdir("t-sig"), *dst = test_tmpdir("t-sig-dst");
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	uint64_t idx[16];
	char *wboot;

	(void)state;
	cfg_for(&c, dir);
	setenv("DIAL9_MODE", "trigger", 1);
	setenv("DIAL9_TRIGGER_SIGNAL", "SIGUSR2", 1);
	setenv("DIAL9_DUMP_DEBOUNCE_MS", "600000", 1);
	setenv("DIAL9_WRITE_BACK_DIR", dst, 1);
	dial9_config_from_env(&c);
	unsetenv("DIAL9_MODE");
	unsetenv("DIAL9_TRIGGER_SIGNAL");
	unsetenv("DIAL9_DUMP_DEBOUNCE_MS");
	unsetenv("DIAL9_WRITE_BACK_DIR");
	assert_int_equal(c.mode, DIAL9_MODE_TRIGGER);
	assert_int_equal(c.trigger_signal, SIGUSR2);
	assert_int_equal(c.dump_debounce_ms, 600000);
	assert_int_equal(c.pipeline, DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK);
	assert_int_equal(dial9_start(&c), 0);
	record_segments(2, 1000);
	for (int i = 0; i < 5; i++)
		assert_int_equal(raise(SIGUSR2), 0);
	test_wait_stats(one_dump_done, "the signal's dump");
	for (int i = 0; i < 3; i++)
		assert_int_equal(raise(SIGUSR2), 0);
	test_wait_stats(one_coalesced, "a signal inside the debounce window");
	dial9_get_stats(&st);
	assert_int_equal(st.dumps, 1);
	assert_int_equal(st.pipe_done, 2);
	assert_int_equal(strlen(st.last_dump_id), 26);
	assert_int_equal(dial9_stop(), 0);
	wboot = test_boot_dir(dst);
	assert_non_null(wboot);
	assert_int_equal(indexes(wboot, ".dial9.lz4", idx, 16), 2);
	/* without a recorder the handler does nothing */
	assert_int_equal(dial9_dump_request(), -ENOENT);
	assert_int_equal(raise(SIGUSR2), 0);
	free(wboot);
	test_rm_rf(dir);
	test_rm_rf(dst);
	free(dir);
	free(dst);
}

/*
 * A dump whose destination is unreachable for now: while it waits, the
 * budget evicts newer segments that are not in it, never the dumped
 * ones; once the destination works, exactly the dumped ones arrive.
 */
static void dump_is_protected_from_eviction(void **state)
{
	char *dir = test_tmpdir("t-prot"), *base = test_tmpdir("t-prot-dst");
	char *dst, *boot, *wboot;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct dial9_dump_receipt rc;
	uint64_t idx[64];
	size_t n;

	(void)state;
	if (asprintf(&dst, "%s/out", base) < 0)
		abort();
	assert_int_equal(test_sh("touch '%s'", dst), 0); /* a file in the way */
	trigger_cfg(&c, dir, dst);
	c.max_disk_bytes = 256 * 1024;
	c.max_file_bytes = 64 * 1024;
	c.retry_base_ms = 20;
	c.retry_max_ms = 50;
	assert_int_equal(dial9_start(&c), 0);
	record_segments(3, 500);
	assert_int_equal(dial9_dump_trigger("stuck", 0, &rc), -ETIMEDOUT);
	assert_int_equal(rc.status, -EINPROGRESS);
	assert_true(rc.segments >= 3);
	/* far more than the budget after the dump */
	record_segments(12, 2000);
	assert_int_equal(dial9_flush(5000), 0);
	dial9_get_stats(&st);
	assert_true(st.segments_evicted > 0);
	assert_int_equal(st.pipe_done, 0);
	assert_true(st.pipe_errors > 0);
	boot = test_boot_dir(dir);
	n = indexes(boot, ".dial9", idx, 64);
	/* every dumped segment is still here */
	for (uint64_t k = rc.first_index; k <= rc.last_index; k++) {
		bool found = false;

		for (size_t i = 0; i < n; i++)
			found |= idx[i] == k;
		assert_true(found);
	}
	/* and some newer ones were evicted instead */
	assert_true(n < 15);
	assert_int_equal(test_sh("rm '%s'", dst), 0);
	test_wait_stats(one_dump_done, "the dump after the destination came back");
	dial9_get_stats(&st);
	assert_int_equal(st.pipe_done, rc.segments);
	assert_int_equal(st.pipe_evicted, 0);
	assert_int_equal(dial9_stop(), 0);
	wboot = test_boot_dir(dst);
	assert_non_null(wboot);
	n = indexes(wboot, ".dial9.lz4", idx, 64);
	assert_int_equal(n, rc.segments);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(idx[i], rc.first_index + i);
	free(boot);
	free(wboot);
	free(dst);
	test_rm_rf(dir);
	test_rm_rf(base);
	free(dir);
	free(base);
}

/* ---- the memory buffer ---- */

/*
 * DIAL9_STORAGE=memory: segments live in memfds, the trace directory is
 * never created (nothing touches the disk before the pipeline), and
 * every segment arrives by write-back, whole.
 */
static void memory_buffer_write_back(void **state)
{
	char *base = test_tmpdir("m-src"), *dst = test_tmpdir("m-dst"), *dir;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	uint64_t emitted, idx[32];
	char *wboot;
	size_t n;

	(void)state;
	if (asprintf(&dir, "%s/never-created", base) < 0)
		abort();
	cfg_for(&c, dir);
	setenv("DIAL9_STORAGE", "memory", 1);
	setenv("DIAL9_MEMORY_BUDGET_MB", "8", 1);
	setenv("DIAL9_WRITE_BACK_DIR", dst, 1);
	dial9_config_from_env(&c);
	unsetenv("DIAL9_STORAGE");
	unsetenv("DIAL9_MEMORY_BUDGET_MB");
	unsetenv("DIAL9_WRITE_BACK_DIR");
	assert_int_equal(c.storage, DIAL9_STORAGE_MEMORY);
	assert_int_equal(c.max_disk_bytes, 8 << 20);
	assert_int_equal(dial9_start(&c), 0);
	emitted = record_segments(3, 3000);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	dial9_get_stats(&st);
	assert_true(!strncmp(st.dir, "memory:", 7));
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(st.pipe_done, st.segments_sealed);
	assert_int_equal(st.pipe_failed + st.pipe_abandoned + st.pipe_evicted, 0);
	assert_int_equal(st.events_lost, 0);
	wboot = test_boot_dir(dst);
	assert_non_null(wboot);
	n = indexes(wboot, ".dial9.lz4", idx, 32);
	assert_int_equal(n, st.segments_sealed);
	assert_int_equal(check_lz4_dir(wboot, &cnt), n);
	assert_int_equal(cnt.user, emitted);
	/* in memory with nowhere to ship to is refused */
	cfg_for(&c, dir);
	c.storage = DIAL9_STORAGE_MEMORY;
	assert_int_equal(dial9_start(&c), -EINVAL);
	c.pipeline = DIAL9_PIPE_LZ4;
	assert_int_equal(dial9_start(&c), -EINVAL);
	free(wboot);
	free(dir);
	test_rm_rf(base);
	test_rm_rf(dst);
	free(base);
	free(dst);
}

/* Trigger mode in memory: the RAM budget evicts the oldest segments;
 * a dump ships exactly what was retained, nothing touches trace_dir. */
static void memory_buffer_trigger(void **state)
{
	char *base = test_tmpdir("m-trig"), *dst = test_tmpdir("m-trig-dst"), *dir;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct dial9_dump_receipt rc;
	struct test_counts cnt = { 0 };
	uint64_t idx[64];
	char *wboot;
	size_t n;

	(void)state;
	if (asprintf(&dir, "%s/never-created", base) < 0)
		abort();
	trigger_cfg(&c, dir, dst);
	c.storage = DIAL9_STORAGE_MEMORY;
	c.max_disk_bytes = 256 * 1024;
	c.max_file_bytes = 64 * 1024;
	assert_int_equal(dial9_start(&c), 0);
	record_segments(12, 2000);
	dial9_get_stats(&st);
	assert_true(st.segments_evicted > 0);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(dial9_dump_trigger("memory", 30000, &rc), 0);
	assert_int_equal(rc.status, 0);
	assert_int_equal(rc.segments + st.segments_evicted, st.segments_sealed);
	assert_int_equal(rc.last_index, st.segments_sealed);
	assert_int_equal(dial9_stop(), 0);
	assert_int_equal(access(dir, F_OK), -1);
	wboot = test_boot_dir(dst);
	assert_non_null(wboot);
	n = indexes(wboot, ".dial9.lz4", idx, 64);
	assert_int_equal(n, rc.segments);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(idx[i], rc.first_index + i);
	assert_int_equal(check_lz4_dir(wboot, &cnt), n);
	assert_int_equal(cnt.err, 0);
	assert_true(cnt.user > 0);
	free(wboot);
	free(dir);
	test_rm_rf(base);
	test_rm_rf(dst);
	free(base);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(trigger_from_thread),
		cmocka_unit_test(debounce_burst),
		cmocka_unit_test(trigger_by_signal),
		cmocka_unit_test(dump_is_protected_from_eviction),
		cmocka_unit_test(memory_buffer_write_back),
		cmocka_unit_test(memory_buffer_trigger),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
