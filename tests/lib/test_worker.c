// SPDX-License-Identifier: MIT
/*
 * test_worker.c - the worker pipeline on local files: LZ4 in place
 * (checked with the stock lz4 CLI), write-back to another directory
 * (compressed and plain), the dial9 command on compressed segments, the
 * disk budget evicting segments the worker cannot ship (counted, and
 * recording goes on), and the S3 step's keys and retry classification.
 */
#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "helpers.h"
#include "internal.h"
#include "worker.h"

DIAL9_EVENT_TYPE(t_w, "worker.ev", DIAL9_FIELD(U64, seq), DIAL9_FIELD(STR, s));

static const char *tool(void)
{
	const char *t = getenv("DIAL9_TEST_TOOL");

	return t ? t : "build/tools/dial9";
}

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

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, r;

	assert_non_null(f);
	do {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r);
	fclose(f);
	*len = n;
	return buf;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	int st;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	st = system(cmd);
	free(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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

		assert_int_equal(sh("lz4 -q -t '%s'", v[i]), 0);
		snprintf(out, sizeof(out), "%s.plain", v[i]);
		assert_int_equal(sh("lz4 -q -d -f '%s' '%s'", v[i], out), 0);
		z = slurp(v[i], &zn);
		cli = slurp(out, &cn);
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
	struct dial9_stats st;
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
	assert_int_equal(sh("%s info '%s' > '%s/info.txt'", tool(), boot, dir), 0);
	assert_int_equal(sh("test $(%s dump '%s' | grep -c '\"worker.ev\"') -eq %llu",
			    tool(), boot, (unsigned long long)emitted), 0);
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

static void write_back(uint32_t pipeline, const char *suffix)
{
	char *dir = test_tmpdir("w-src"), *dst = test_tmpdir("w-dst");
	struct dial9_config c;
	struct dial9_stats st;
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
	struct dial9_stats st;
	uint64_t emitted;

	(void)state;
	if (asprintf(&blocker, "%s/not-a-dir", dir) < 0)
		abort();
	assert_int_equal(sh("touch '%s'", blocker), 0);
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
		cmocka_unit_test(unshippable_segments_are_evicted_and_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
