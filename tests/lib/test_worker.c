// SPDX-License-Identifier: MIT
/*
 * test_worker.c - the worker pipeline on local files: LZ4 in place
 * (checked with the stock lz4 CLI), write-back to another directory
 * (compressed and plain), the dial9 command on compressed segments, the
 * disk budget evicting segments the worker cannot ship (counted, and
 * recording goes on), and the S3 step's keys and retry classification.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "helpers.h"
#include "worker_test.h"

static void lz4_round_trip_and_corruption(void **state)
{
	size_t n = 1 << 20, zn, on;
	uint8_t *in = malloc(n), *z, *out;

	(void)state;
	for (size_t i = 0; i < n; i++)
		in[i] = (uint8_t)((i * 7) ^ (i >> 9));
	assert_int_equal(d9_lz4_compress(in, n, (void **)&z, &zn), 0);
	assert_true(d9_lz4_is_frame(z, zn));
	assert_int_equal(d9_lz4_decompress(z, zn, (void **)&out, &on), 0);
	assert_int_equal(on, n);
	assert_memory_equal(out, in, n);
	free(out);
	/* cut short, and one flipped byte (the content checksum catches it) */
	assert_int_not_equal(d9_lz4_decompress(z, zn / 2, (void **)&out, &on), 0);
	z[zn / 2] ^= 0x55;
	assert_int_not_equal(d9_lz4_decompress(z, zn, (void **)&out, &on), 0);
	free(z);
	free(in);
}

static void lz4_in_place(void **state)
{
	char *dir = test_tmpdir("w-lz4");
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	uint64_t emitted;
	char *boot;
	size_t nz;

	(void)state;
	cfg_for(&c, dir);
	c.pipeline = DIAL9_PIPE_LZ4;
	assert_int_equal(dial9_start(&c), 0);
	emitted = record_segments(4, 5000);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	boot = test_boot_dir(dir);
	assert_non_null(boot);
	/* every sealed segment was compressed, none is left plain */
	assert_int_equal(st.pipe_done, st.segments_sealed);
	assert_true(st.segments_sealed >= 4);
	assert_int_equal(st.pipe_pending, 0);
	assert_int_equal(st.pipe_failed + st.pipe_errors + st.pipe_abandoned, 0);
	assert_true(st.pipe_bytes_out * 3 < st.pipe_bytes_in);
	{
		size_t plain;
		char **v = test_list(boot, ".dial9", &plain);

		test_free_list(v);
		assert_int_equal(plain, 0);
	}
	nz = check_lz4_dir(boot, &cnt);
	assert_int_equal(nz, st.segments_sealed);
	assert_int_equal(cnt.user, emitted);
	assert_int_equal(cnt.err, 0);
	printf("lz4 in place: %llu -> %llu bytes (%.1fx) in %zu segments\n",
	       (unsigned long long)st.pipe_bytes_in,
	       (unsigned long long)st.pipe_bytes_out,
	       (double)st.pipe_bytes_in / (double)st.pipe_bytes_out, nz);
	/* the dial9 command reads them as they are */
	assert_int_equal(test_sh("%s info '%s' > '%s/info.txt'", test_tool(), boot, dir), 0);
	assert_int_equal(test_sh("test $(%s dump '%s' | grep -c '\"worker.ev\"') -eq %llu",
				 test_tool(), boot, (unsigned long long)emitted), 0);
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

static void write_back(uint32_t pipeline, const char *suffix)
{
	char *dir = test_tmpdir("w-src"), *dst = test_tmpdir("w-dst");
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	uint64_t emitted;
	char *boot, *wboot;
	size_t n, left, tmps;
	char **v;

	cfg_for(&c, dir);
	c.pipeline = pipeline;
	c.write_back_dir = dst;
	assert_int_equal(dial9_start(&c), 0);
	emitted = record_segments(3, 3000);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_int_equal(st.pipe_done, st.segments_sealed);
	assert_int_equal(st.pipe_failed + st.pipe_abandoned, 0);
	/* nothing left in the trace directory, all of it in {dst}/{boot_id} */
	boot = test_boot_dir(dir);
	if (boot) {
		v = test_list(boot, "", &left);
		test_free_list(v);
		assert_int_equal(left, 0);
	}
	wboot = test_boot_dir(dst);
	assert_non_null(wboot);
	assert_non_null(strstr(wboot, st.boot_id));
	v = test_list(wboot, suffix, &n);
	assert_int_equal(n, st.segments_sealed);
	for (size_t i = 0; v[i] && !(pipeline & DIAL9_PIPE_LZ4); i++)
		assert_int_equal(test_decode_file(v[i], &cnt, NULL, NULL), 0);
	test_free_list(v);
	v = test_list(wboot, ".tmp", &tmps);
	test_free_list(v);
	assert_int_equal(tmps, 0);
	if (pipeline & DIAL9_PIPE_LZ4) {
		struct test_counts c2 = { 0 };

		assert_int_equal(check_lz4_dir(wboot, &c2), n);
		assert_int_equal(c2.user, emitted);
	} else {
		assert_int_equal(cnt.user, emitted);
	}
	free(boot);
	free(wboot);
	test_rm_rf(dir);
	test_rm_rf(dst);
	free(dir);
	free(dst);
}

static void write_back_lz4(void **state)
{
	(void)state;
	write_back(DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK, ".dial9.lz4");
}

static void write_back_plain(void **state)
{
	(void)state;
	write_back(DIAL9_PIPE_WRITE_BACK, ".dial9");
}

/*
 * The destination cannot be created (a file is in the way): the worker
 * retries, the budget evicts what it could not ship and says so, and
 * recording goes on without losing a thing.
 */
static void unshippable_segments_are_evicted_and_counted(void **state)
{
	char *dir = test_tmpdir("w-evict"), *blocker;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	uint64_t emitted;

	(void)state;
	if (asprintf(&blocker, "%s/not-a-dir", dir) < 0)
		abort();
	assert_int_equal(test_sh("touch '%s'", blocker), 0);
	cfg_for(&c, dir);
	c.pipeline = DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK;
	c.write_back_dir = blocker;
	c.max_disk_bytes = 256 * 1024;
	c.max_file_bytes = 64 * 1024;
	c.retry_base_ms = 20;
	c.retry_max_ms = 50;
	c.shutdown_timeout_ms = 100;
	assert_int_equal(dial9_start(&c), 0);
	emitted = record_segments(12, 2000);
	assert_int_equal(dial9_flush(5000), 0);
	dial9_get_stats(&st);
	assert_int_equal(st.health, DIAL9_HEALTH_OK);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_true(st.segments_evicted > 0);
	assert_true(st.pipe_evicted > 0);
	assert_int_equal(st.pipe_done, 0);
	assert_true(st.pipe_errors > 0);
	assert_true(st.pipe_last_error < 0);
	/* recording was never held up by the stuck pipeline */
	assert_int_equal(st.events_lost, 0);
	assert_int_equal(st.events_written, emitted);
	free(blocker);
	test_rm_rf(dir);
	free(dir);
}

static void s3_keys(void **state)
{
	struct d9_s3_target t = {
		.prefix = "dial9-traces", .service = "api/v2 =x", .host = "h1",
		.boot_id = "abcd-42", .index = 7,
		.start_real_ns = 1700000000123456789ull, .ext = ".bin.lz4",
	};
	char key[512], enc[1024];

	(void)state;
	assert_int_equal(d9_s3_key(&t, key, sizeof(key)), 0);
	/* 1700000000 is 2023-11-14 22:13:20 UTC */
	assert_string_equal(key,
			    "dial9-traces/version=1/date=2023-11-14/service=api%2Fv2 %3Dx/"
			    "time=2213/instance=h1/boot=abcd-42/1700000000-7.bin.lz4");
	assert_int_equal(d9_s3_uri_encode(key, true, enc, sizeof(enc)), 0);
	assert_string_equal(enc,
			    "dial9-traces/version%3D1/date%3D2023-11-14/service%3Dapi%252Fv2%20%253Dx/"
			    "time%3D2213/instance%3Dh1/boot%3Dabcd-42/1700000000-7.bin.lz4");
	t.prefix = "";
	assert_int_equal(d9_s3_key(&t, key, sizeof(key)), 0);
	assert_true(!strncmp(key, "version=1/", 10));
	/* its summary: the same partitions below summary/ */
	assert_int_equal(d9_s3_summary_key(&t, key, sizeof(key)), 0);
	assert_string_equal(key,
			    "summary/version=1/date=2023-11-14/service=api%2Fv2 %3Dx/"
			    "time=2213/instance=h1/boot=abcd-42/1700000000-7.json.gz");
	t.prefix = "dial9-traces";
	assert_int_equal(d9_s3_summary_key(&t, key, sizeof(key)), 0);
	assert_true(!strncmp(key, "dial9-traces/summary/version=1/date=2023-11-14/", 47));
}

/*
 * Segment summaries beside write-back: with scheduler events each
 * segment's summary lands below {dst}/summary/version=1/ (counted in
 * summaries_done), every row with its thread's name (a thread that
 * records nothing itself, "w-sleeper", too); with that directory
 * blocked by a file, the segments still ship and every summary is
 * counted as lost.
 */
static int sleeper_stop;

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "w-sleeper");
	while (!__atomic_load_n(&sleeper_stop, __ATOMIC_ACQUIRE))
		usleep(2000);
	return NULL;
}

static unsigned int summaries_run(const char *dir, const char *dst,
				  struct dial9_stats *st)
{
	struct dial9_config c;
	pthread_t t;

	cfg_for(&c, dir);
	c.sched = DIAL9_SCHED_AUTO;	/* perf, else schedstat: switches */
	c.host_name = "summary-host";
	c.pipeline = DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK;
	c.write_back_dir = dst;
	c.retry_base_ms = 20;
	c.retry_max_ms = 50;
	c.shutdown_timeout_ms = 500;
	assert_int_equal(dial9_start(&c), 0);
	__atomic_store_n(&sleeper_stop, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&t, NULL, sleeper, NULL), 0);
	for (int s = 0; s < 3; s++) {
		for (int i = 0; i < 20; i++) {
			DIAL9_EMIT(t_w, dial9_u64((uint64_t)i), dial9_str("x"));
			usleep(2000);	/* switches to summarize */
		}
		assert_int_equal(dial9_rotate(), 0);
	}
	__atomic_store_n(&sleeper_stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(st);
	return (unsigned int)st->segments_sealed;
}

static void summaries_beside_write_back(void **state)
{
	char *dir = test_tmpdir("w-sum"), *dst = test_tmpdir("w-sumdst");
	struct dial9_stats st = { .size = sizeof(st) };
	char *blocked;
	unsigned int sealed;
	size_t n;

	(void)state;
	sealed = summaries_run(dir, dst, &st);
	assert_int_equal(st.pipe_done, sealed);
	assert_true(st.summaries_done >= 1);
	assert_int_equal(st.summaries_failed, 0);
	assert_int_equal(test_sh("test $(find '%s/summary/version=1' -path '*/instance=summary-host/*' "
				 "-name '*.json.gz' | wc -l) -eq %llu", dst,
				 (unsigned long long)st.summaries_done), 0);
	/* gzip'd JSON lines that name the host and the segment shipped */
	assert_int_equal(test_sh("for f in $(find '%s/summary' -name '*.json.gz'); do "
				 "zcat $f | grep -q '^{\"host\":\"summary-host\",' || exit 1; "
				 "s=$(zcat $f | grep -o '\"segment\":\"[^\"]*\"' | head -1 | "
				 "cut -d'\"' -f4); test -n \"$s\" && test -f '%s'/$s || exit 1; "
				 "done", dst, dst), 0);
	/* every row names its thread, in every segment: the sleeper
	 * (named by the kernel in the first segment only, and recording
	 * no event of its own) has rows after it, and those name it too
	 * (each segment names its threads again: sched.thread_name) */
	assert_int_equal(test_sh("for f in $(find '%s/summary' -name '*.json.gz'); do "
				 "zcat $f | grep -q '\"thread\":\"\"' && exit 1; done; "
				 "find '%s/summary' -name '*.json.gz' -exec zcat {} + | "
				 "grep -E '\"thread\":\"w-sleeper\",\"segment_index\":([2-9]|[1-9][0-9]+),' >/dev/null",
				 dst, dst), 0);
	test_rm_rf(dir);
	test_rm_rf(dst);

	if (asprintf(&blocked, "%s/summary", dst) < 0)
		abort();
	assert_int_equal(test_sh("mkdir -p '%s' && touch '%s'", dst, blocked), 0);
	sealed = summaries_run(dir, dst, &st);
	assert_int_equal(st.pipe_done, sealed);	/* the segments still go */
	assert_int_equal(st.summaries_done, 0);
	assert_true(st.summaries_failed >= 1);	/* and the loss is counted */
	assert_true(st.pipe_errors > 0);
	{
		char *wboot = test_boot_dir(dst);
		char **v;

		assert_non_null(wboot);
		v = test_list(wboot, ".dial9.lz4", &n);
		test_free_list(v);
		assert_int_equal(n, sealed);
		free(wboot);
	}
	free(blocked);
	test_rm_rf(dir);
	test_rm_rf(dst);
	free(dir);
	free(dst);
}

static void s3_classify(void **state)
{
	(void)state;
	assert_int_equal(d9_s3_classify(CURLE_OK, 200), D9_S3_OK);
	assert_int_equal(d9_s3_classify(CURLE_OK, 500), D9_S3_RETRY);
	assert_int_equal(d9_s3_classify(CURLE_OK, 503), D9_S3_RETRY);
	assert_int_equal(d9_s3_classify(CURLE_OK, 429), D9_S3_RETRY);
	assert_int_equal(d9_s3_classify(CURLE_OK, 403), D9_S3_TERMINAL);
	assert_int_equal(d9_s3_classify(CURLE_OK, 404), D9_S3_TERMINAL);
	assert_int_equal(d9_s3_classify(CURLE_OK, 400), D9_S3_TERMINAL);
	assert_int_equal(d9_s3_classify(CURLE_COULDNT_CONNECT, 0), D9_S3_RETRY);
	assert_int_equal(d9_s3_classify(CURLE_OPERATION_TIMEDOUT, 0), D9_S3_RETRY);
	assert_int_equal(d9_s3_classify(CURLE_GOT_NOTHING, 0), D9_S3_RETRY);
	assert_int_equal(d9_s3_classify(CURLE_URL_MALFORMAT, 0), D9_S3_TERMINAL);
}

static void bad_pipelines_are_refused(void **state)
{
	char *dir = test_tmpdir("w-bad");
	struct dial9_config c;

	(void)state;
	cfg_for(&c, dir);
	c.pipeline = DIAL9_PIPE_WRITE_BACK; /* no directory */
	assert_int_equal(dial9_start(&c), -EINVAL);
	c.pipeline = DIAL9_PIPE_S3; /* no bucket */
	assert_int_equal(dial9_start(&c), -EINVAL);
	c.pipeline = DIAL9_PIPE_S3 | DIAL9_PIPE_WRITE_BACK;
	c.s3_bucket = "b";
	c.write_back_dir = dir;
	assert_int_equal(dial9_start(&c), -EINVAL);
	c.pipeline = 1u << 9;
	assert_int_equal(dial9_start(&c), -EINVAL);
	unsetenv("AWS_ACCESS_KEY_ID");
	c.pipeline = DIAL9_PIPE_S3;
	assert_int_equal(dial9_start(&c), -ENOKEY);
	test_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lz4_round_trip_and_corruption),
		cmocka_unit_test(s3_keys),
		cmocka_unit_test(s3_classify),
		cmocka_unit_test(bad_pipelines_are_refused),
		cmocka_unit_test(lz4_in_place),
		cmocka_unit_test(write_back_lz4),
		cmocka_unit_test(write_back_plain),
		cmocka_unit_test(summaries_beside_write_back),
		cmocka_unit_test(unshippable_segments_are_evicted_and_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
