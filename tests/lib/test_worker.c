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
#include "record/record.h"
#include "pipeline/pipeline.h"

DIAL9_EVENT_TYPE(t_w, "worker.ev", DIAL9_FIELD(U64, seq), DIAL9_FIELD(STR, s));

static void cfg_for(struct dial9_config *c, const char *dir)
{
	dial9_config_init(c);
	c->trace_dir = dir;
	c->service_name = "wtest";
	c->sched = DIAL9_SCHED_OFF;
}

/* n events per segment, nseg segments (rotations). */
static uint64_t record_segments(unsigned int nseg, unsigned int n)
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
static size_t check_lz4_dir(const char *dir, struct test_counts *c)
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
 * summaries_done); with that directory blocked by a file, the segments
 * still ship and every summary is counted as lost.
 */
static unsigned int summaries_run(const char *dir, const char *dst,
				  struct dial9_stats *st)
{
	struct dial9_config c;

	cfg_for(&c, dir);
	c.sched = DIAL9_SCHED_AUTO;	/* perf, else schedstat: switches */
	c.host_name = "summary-host";
	c.pipeline = DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK;
	c.write_back_dir = dst;
	c.retry_base_ms = 20;
	c.retry_max_ms = 50;
	c.shutdown_timeout_ms = 500;
	assert_int_equal(dial9_start(&c), 0);
	for (int s = 0; s < 3; s++) {
		for (int i = 0; i < 20; i++) {
			DIAL9_EMIT(t_w, dial9_u64((uint64_t)i), dial9_str("x"));
			usleep(2000);	/* switches to summarize */
		}
		assert_int_equal(dial9_rotate(), 0);
	}
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

/* ---- trigger mode ---- */

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
		cmocka_unit_test(lz4_round_trip_and_corruption),
		cmocka_unit_test(s3_keys),
		cmocka_unit_test(s3_classify),
		cmocka_unit_test(bad_pipelines_are_refused),
		cmocka_unit_test(lz4_in_place),
		cmocka_unit_test(write_back_lz4),
		cmocka_unit_test(write_back_plain),
		cmocka_unit_test(summaries_beside_write_back),
		cmocka_unit_test(unshippable_segments_are_evicted_and_counted),
		cmocka_unit_test(trigger_from_thread),
		cmocka_unit_test(debounce_burst),
		cmocka_unit_test(trigger_by_signal),
		cmocka_unit_test(dump_is_protected_from_eviction),
		cmocka_unit_test(memory_buffer_write_back),
		cmocka_unit_test(memory_buffer_trigger),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
