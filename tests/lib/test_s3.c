// SPDX-License-Identifier: MIT
/*
 * test_s3.c - the S3 step against a real S3-compatible server on
 * loopback (tests/s3/server.js: s3rver behind a SigV4-checking front,
 * started and stopped here): the round trip (keys, metadata, content),
 * retries of 503 and 429, an outage (server stopped while segments are
 * produced, restarted later: every segment arrives exactly once and byte
 * for byte, recording never held up), 403s that are terminal, and a
 * segment with stacks uploaded with its symbol table.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "helpers.h"
#include "record/record.h"
#include "s3_test.h"
#include "ksched/ksched.h"
#include "stacks_seg.h"

/* The object at key, decompressed; its response headers in *hdrs. */
static uint8_t *get_object(const char *key, size_t *len, struct buf *hdrs)
{
	struct buf body = { 0 };
	char path[2100], enc[2048];
	void *out;

	assert_int_equal(d9_s3_uri_encode(key, true, enc, sizeof(enc)), 0);
	snprintf(path, sizeof(path), BUCKET "/%s", enc);
	assert_int_equal(s3_get(path, &body, hdrs), 200);
	assert_true(d9_lz4_is_frame(body.p, body.n));
	assert_int_equal(d9_lz4_decompress(body.p, body.n, &out, len), 0);
	free(body.p);
	return out;
}

static const char *header(const struct buf *h, const char *name, char *val,
			  size_t len)
{
	const char *p = strcasestr(h->p, name);
	size_t n = 0;

	if (!p)
		return NULL;
	p += strlen(name);
	while (*p == ' ' || *p == ':')
		p++;
	while (p[n] && p[n] != '\r' && p[n] != '\n' && n < len - 1)
		n++;
	memcpy(val, p, n);
	val[n] = 0;
	return val;
}

static void decode_mem(const void *p, size_t n, struct test_counts *c,
		       char *index, size_t ilen)
{
	struct dial9_decoder *d;
	struct dial9_record r;
	int ret;

	assert_int_equal(dial9_decoder_new(&d, p, n), 0);
	while ((ret = dial9_decoder_next(d, &r)) == 1) {
		if (r.kind == DIAL9_RECORD_METADATA && index) {
			for (unsigned int i = 0; i < r.nkv; i++)
				if (r.kv[i].key_len == 13 &&
				    !memcmp(r.kv[i].key, "segment_index", 13))
					snprintf(index, ilen, "%.*s",
						 (int)r.kv[i].value_len, r.kv[i].value);
		}
		if (r.kind == DIAL9_RECORD_EVENT &&
		    !strcmp(r.schema->name, "s3.ev"))
			c->user++;
	}
	assert_int_equal(ret, 0);
	dial9_decoder_free(d);
}

static void round_trip(void **state)
{
	char *dir = test_tmpdir("s3-rt"), host[256], want[512];
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	uint64_t first = seq;
	size_t n;
	char **keys;

	(void)state;
	cfg_for(&c, dir, "rt/traces");
	assert_int_equal(dial9_start(&c), 0);
	record_segments(3, 4000);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_int_equal(st.pipe_done, st.segments_sealed);
	assert_int_equal(st.s3_puts, st.segments_sealed);
	assert_int_equal(st.pipe_failed + st.pipe_abandoned + st.s3_retries, 0);
	gethostname(host, sizeof(host));
	keys = list_keys("rt/traces/", &n);
	assert_int_equal(n, st.segments_sealed);
	for (size_t i = 0; keys[i]; i++) {
		struct buf h = { 0 };
		char val[256], idx[32] = "", date[16];
		long long epoch;
		unsigned int hh, mm, index;
		size_t len;
		uint8_t *seg = get_object(keys[i], &len, &h);
		time_t t;
		struct tm tm;

		/* {prefix}/version=1/date=/service=/time=/instance=/boot=/{epoch}-{index}.bin.lz4 */
		assert_int_equal(sscanf(keys[i],
					"rt/traces/version=1/date=%10s", date), 1);
		assert_non_null(strstr(keys[i], "/service=s3test/time="));
		snprintf(want, sizeof(want), "/instance=%s/boot=%s/", host, st.boot_id);
		assert_non_null(strstr(keys[i], want));
		assert_int_equal(sscanf(strstr(keys[i], "/time=") + 6, "%2u%2u", &hh, &mm), 2);
		assert_int_equal(sscanf(strrchr(keys[i], '/') + 1, "%lld-%u.bin.lz4",
					&epoch, &index), 2);
		assert_true(ends_with(keys[i], ".bin.lz4"));
		t = (time_t)epoch;
		gmtime_r(&t, &tm);
		snprintf(want, sizeof(want), "%04d-%02d-%02d", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday);
		assert_string_equal(date, want);
		assert_int_equal(hh, tm.tm_hour);
		assert_int_equal(mm, tm.tm_min);
		/* metadata */
		assert_string_equal(header(&h, "x-amz-meta-service", val, sizeof(val)), "s3test");
		assert_string_equal(header(&h, "x-amz-meta-boot-id", val, sizeof(val)), st.boot_id);
		assert_string_equal(header(&h, "x-amz-meta-host", val, sizeof(val)), host);
		assert_int_equal(atoi(header(&h, "x-amz-meta-segment-index", val, sizeof(val))),
				 index);
		assert_non_null(header(&h, "x-amz-meta-start-time", val, sizeof(val)));
		snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		assert_true(!strncmp(val, want, strlen(want)));
		/* content: the segment that was sealed under that index */
		decode_mem(seg, len, &cnt, idx, sizeof(idx));
		assert_int_equal(atoi(idx), index);
		free(seg);
		free(h.p);
	}
	assert_int_equal(cnt.user, seq - first);
	/* the local copies are gone once uploaded */
	{
		char *boot = test_boot_dir(dir);

		if (boot) {
			size_t left;
			char **v = test_list(boot, "", &left);

			assert_int_equal(left, 0);
			test_free_list(v);
			free(boot);
		}
	}
	test_free_list(keys);
	test_rm_rf(dir);
	free(dir);
}

/* 503 and 429 answers are retried until the object is stored. */
static void throttling_is_retried(void **state)
{
	char *dir = test_tmpdir("s3-503");
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	size_t n;
	char **keys;

	(void)state;
	server_stop();
	server_start("--fail 503,429,503");
	cfg_for(&c, dir, "throttle");
	c.upload_concurrency = 1;
	assert_int_equal(dial9_start(&c), 0);
	record_segments(2, 1000);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_int_equal(st.pipe_done, st.segments_sealed);
	assert_int_equal(st.s3_retries, 3);
	assert_int_equal(st.s3_puts, st.segments_sealed + 3);
	assert_int_equal(st.pipe_failed, 0);
	keys = list_keys("throttle/", &n);
	assert_int_equal(n, st.segments_sealed);
	test_free_list(keys);
	server_stop();
	server_start(NULL);
	test_rm_rf(dir);
	free(dir);
}

static atomic_bool emitting;
static atomic_ullong emitted;

static void *emitter(void *arg)
{
	(void)arg;
	while (atomic_load(&emitting)) {
		for (int i = 0; i < 100; i++)
			DIAL9_EMIT(t_s, dial9_u64(i), dial9_str("emitted during the outage"));
		atomic_fetch_add(&emitted, 100);
		/*
		 * A steady stream, not a flood: unthrottled, this thread
		 * fills a 100 MiB segment every fraction of a second, and on
		 * a loaded machine the uploads of the backlog never catch up
		 * before the wait below gives up.
		 */
		usleep(1000);
	}
	return NULL;
}

static bool two_done(const struct dial9_stats *st) { return st->pipe_done >= 2; }
static bool retrying(const struct dial9_stats *st)
{
	return st->s3_retries >= 3 && st->s3_breaker_opens >= 1;
}
static bool all_done(const struct dial9_stats *st)
{
	return st->pipe_pending == 0 && st->pipe_done == st->segments_sealed;
}

/* Seal a segment that holds a batch however the emitter thread is
 * scheduled (on a loaded machine it may not have run since the last). */
static void rotate_nonempty(void)
{
	DIAL9_EMIT(t_s, dial9_u64(0), dial9_str("between rotations"));
	atomic_fetch_add(&emitted, 1);
	assert_int_equal(dial9_rotate(), 0);
}

/*
 * The server goes away while segments are produced and comes back: each
 * segment reaches the bucket once, byte for byte as sealed, and the
 * recording threads never noticed.
 */
static void outage(void **state)
{
	char *dir = test_tmpdir("s3-outage"), *saved = test_tmpdir("s3-saved");
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	pthread_t th;
	size_t n, nsaved;
	char **keys, **v, *boot;

	(void)state;
	cfg_for(&c, dir, "outage");
	assert_int_equal(dial9_start(&c), 0);
	atomic_store(&emitting, true);
	atomic_store(&emitted, 0);
	assert_int_equal(pthread_create(&th, NULL, emitter, NULL), 0);
	rotate_nonempty();
	rotate_nonempty();
	test_wait_stats(two_done, "two uploads");

	server_stop();
	for (int i = 0; i < 4; i++)
		rotate_nonempty();
	test_wait_stats(retrying, "retries and an open circuit breaker");
	/* what waits for upload, as sealed, to compare with what arrives */
	boot = test_boot_dir(dir);
	assert_int_equal(system("true"), 0);
	{
		char *cmd;

		if (asprintf(&cmd, "cp '%s'/*.dial9 '%s'/", boot, saved) < 0)
			abort();
		assert_int_equal(system(cmd), 0);
		free(cmd);
	}
	dial9_get_stats(&st);
	assert_int_equal(st.s3_breaker_open, 1);
	assert_true(st.pipe_pending >= 4);

	server_start(NULL); /* the same port and objects */
	assert_int_equal(dial9_rotate(), 0);
	test_wait_stats(all_done, "every segment uploaded");
	atomic_store(&emitting, false);
	pthread_join(th, NULL);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	printf("outage: %llu segments, %llu PUTs, %llu retries, breaker opened "
	       "%llu times, %llu events emitted, %llu lost\n",
	       (unsigned long long)st.segments_sealed,
	       (unsigned long long)st.s3_puts,
	       (unsigned long long)st.s3_retries,
	       (unsigned long long)st.s3_breaker_opens,
	       (unsigned long long)atomic_load(&emitted),
	       (unsigned long long)st.events_lost);
	assert_int_equal(st.pipe_done, st.segments_sealed);
	assert_int_equal(st.pipe_failed + st.pipe_abandoned + st.pipe_evicted, 0);
	assert_int_equal(st.s3_puts, st.pipe_done + st.s3_retries);
	assert_int_equal(st.s3_breaker_open, 0);
	assert_int_equal(st.events_lost, 0);
	assert_int_equal(st.events_written, atomic_load(&emitted));

	keys = list_keys("outage/", &n);
	assert_int_equal(n, st.segments_sealed);
	/* one object per index */
	for (size_t i = 0; keys[i]; i++) {
		unsigned int a, b;

		for (size_t k = i + 1; keys[k]; k++) {
			sscanf(strrchr(keys[i], '-') + 1, "%u", &a);
			sscanf(strrchr(keys[k], '-') + 1, "%u", &b);
			assert_int_not_equal(a, b);
		}
	}
	/* byte for byte */
	v = test_list(saved, ".dial9", &nsaved);
	assert_true(nsaved >= 4);
	for (size_t i = 0; v[i]; i++) {
		unsigned int idx = (unsigned int)atoi(strrchr(v[i], '/') + 1);
		char suffix[32];
		size_t len, slen;
		uint8_t *obj = NULL, *orig;
		FILE *f = fopen(v[i], "rb");
		struct buf h = { 0 };

		snprintf(suffix, sizeof(suffix), "-%u.bin.lz4", idx);
		for (size_t k = 0; keys[k]; k++)
			if (ends_with(keys[k], suffix))
				obj = get_object(keys[k], &len, &h);
		assert_non_null(obj);
		fseek(f, 0, SEEK_END);
		slen = (size_t)ftell(f);
		rewind(f);
		orig = malloc(slen);
		assert_int_equal(fread(orig, 1, slen, f), slen);
		fclose(f);
		assert_int_equal(len, slen);
		assert_memory_equal(obj, orig, slen);
		free(obj);
		free(orig);
		free(h.p);
	}
	test_free_list(v);
	test_free_list(keys);
	free(boot);
	test_rm_rf(dir);
	test_rm_rf(saved);
	free(dir);
	free(saved);
}

/* Wrong credentials: 403, no retry, the segments stay on disk. */
static void forbidden_is_terminal(void **state)
{
	static const char *const bad[][2] = { { "nobody", SK }, { AK, "wrong" } };

	(void)state;
	for (int b = 0; b < 2; b++) {
		char *dir = test_tmpdir("s3-403"), *boot;
		struct dial9_config c;
		struct dial9_stats st = { .size = sizeof(st) };
		size_t n, left;
		char **keys, **v;

		setenv("AWS_ACCESS_KEY_ID", bad[b][0], 1);
		setenv("AWS_SECRET_ACCESS_KEY", bad[b][1], 1);
		cfg_for(&c, dir, "forbidden");
		assert_int_equal(dial9_start(&c), 0);
		record_segments(2, 500);
		assert_int_equal(dial9_stop(), 0);
		dial9_get_stats(&st);
		assert_int_equal(st.pipe_failed, st.segments_sealed);
		assert_int_equal(st.pipe_done + st.s3_retries, 0);
		assert_int_equal(st.pipe_last_error, 403);
		boot = test_boot_dir(dir);
		v = test_list(boot, ".dial9", &left);
		assert_int_equal(left, st.segments_sealed);
		test_free_list(v);
		setenv("AWS_ACCESS_KEY_ID", AK, 1);
		setenv("AWS_SECRET_ACCESS_KEY", SK, 1);
		keys = list_keys("forbidden/", &n);
		assert_int_equal(n, 0);
		test_free_list(keys);
		free(boot);
		test_rm_rf(dir);
		free(dir);
	}
}

/*
 * Trigger mode: only the dumped segments reach the bucket, each tagged
 * with the dump id; {prefix}/dumps/{id}.json lists them with the reason.
 */
static void trigger_manifest(void **state)
{
	char *dir = test_tmpdir("s3-trig"), *boot, *manifest, want[1200], val[64];
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct dial9_dump_receipt rc;
	struct buf mh = { 0 };
	size_t n, left;
	char **keys, **v;

	(void)state;
	cfg_for(&c, dir, "trig");
	c.mode = DIAL9_MODE_TRIGGER;
	assert_int_equal(dial9_start(&c), 0);
	record_segments(3, 2000);
	assert_int_equal(dial9_dump_trigger("p99 \"latency\" spike", 30000, &rc), 0);
	assert_int_equal(rc.status, 0);
	assert_int_equal(rc.segments, 3);
	assert_int_equal(rc.segments_done, 3);
	snprintf(want, sizeof(want), "trig/dumps/%s.json", rc.dump_id);
	assert_string_equal(rc.manifest_key, want);
	/* sealed after the dump, never dumped: stays local */
	record_segments(2, 500);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_int_equal(st.dumps, 1);
	assert_int_equal(st.pipe_done, 3);
	assert_int_equal(st.segments_sealed, 5);
	boot = test_boot_dir(dir);
	v = test_list(boot, ".dial9", &left);
	assert_int_equal(left, 2);
	test_free_list(v);

	keys = list_keys("trig/version=1/", &n);
	assert_int_equal(n, 3);
	manifest = get_raw(rc.manifest_key, &mh);
	assert_non_null(strstr(mh.p, "application/json"));
	assert_string_equal(header(&mh, "x-amz-meta-dump-id", val, sizeof(val)),
			    rc.dump_id);
	snprintf(want, sizeof(want), "\"dump_id\": \"%s\"", rc.dump_id);
	assert_non_null(strstr(manifest, want));
	assert_non_null(strstr(manifest, "\"reason\": \"p99 \\\"latency\\\" spike\""));
	assert_non_null(strstr(manifest, "\"metadata\": {\"reason\": \"p99 \\\"latency\\\" spike\"}"));
	assert_non_null(strstr(manifest, "\"segments_processed\": 3,"));
	snprintf(want, sizeof(want), "\"boot_id\": \"%s\"", st.boot_id);
	assert_non_null(strstr(manifest, want));
	assert_non_null(strstr(manifest, "\"time_range\": {\"start\": \""));
	for (size_t i = 0; keys[i]; i++) {
		struct buf h = { 0 };
		size_t len;
		uint8_t *seg = get_object(keys[i], &len, &h);

		/* every object of the dump is in the manifest and tagged */
		snprintf(want, sizeof(want), "\"status\": \"uploaded\", \"key\": \"%s\"",
			 keys[i]);
		assert_non_null(strstr(manifest, want));
		assert_string_equal(header(&h, "x-amz-meta-dump-id", val, sizeof(val)),
				    rc.dump_id);
		free(seg);
		free(h.p);
	}
	free(manifest);
	free(mh.p);
	test_free_list(keys);
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

/* Segments kept in memory (DIAL9_STORAGE_MEMORY): uploaded whole, and
 * the trace directory never exists. */
static void memory_round_trip(void **state)
{
	char *base = test_tmpdir("s3-mem"), *dir;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	uint64_t first = seq;
	size_t n;
	char **keys;

	(void)state;
	if (asprintf(&dir, "%s/never-created", base) < 0)
		abort();
	cfg_for(&c, dir, "mem");
	c.storage = DIAL9_STORAGE_MEMORY;
	c.max_disk_bytes = 32 << 20;
	assert_int_equal(dial9_start(&c), 0);
	record_segments(3, 3000);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(dial9_stop(), 0);
	assert_int_equal(access(dir, F_OK), -1);
	dial9_get_stats(&st);
	assert_int_equal(st.pipe_done, st.segments_sealed);
	assert_int_equal(st.pipe_failed + st.pipe_abandoned + st.pipe_evicted, 0);
	keys = list_keys("mem/", &n);
	assert_int_equal(n, st.segments_sealed);
	for (size_t i = 0; keys[i]; i++) {
		struct buf h = { 0 };
		char idx[32] = "", val[64];
		size_t len;
		uint8_t *seg = get_object(keys[i], &len, &h);

		decode_mem(seg, len, &cnt, idx, sizeof(idx));
		assert_string_equal(header(&h, "x-amz-meta-segment-index", val,
					   sizeof(val)), idx);
		free(seg);
		free(h.p);
	}
	assert_int_equal(cnt.user, seq - first);
	test_free_list(keys);
	free(dir);
	test_rm_rf(base);
	free(base);
}

static void no_budget(void *ctx, uint64_t index, uint64_t remaining)
{
	(void)ctx;
	(void)index;
	(void)remaining;
}

/* The mapping of this program holding @addr: its start, file offset and
 * path (/proc/self/maps). */
static void own_mapping(uintptr_t addr, uint64_t *start, uint64_t *end,
			uint64_t *off, char *path, size_t len)
{
	char line[4200], p[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long a, b, o;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &a, &b, &o,
			   p) == 4 && addr >= a && addr < b) {
			*start = a;
			*end = b;
			*off = o;
			snprintf(path, len, "%s", p);
			found = true;
		}
	}
	fclose(f);
	assert_true(found);
}

/*
 * A segment whose stack has a frame in this program's round_trip(),
 * through the worker to S3: the object holds the segment as sealed and
 * then the table naming it (the step runs before every destination).
 */
static void symbol_table_is_uploaded(void **state)
{
	char *dir = test_tmpdir("s3-sym"), path[600], exe[4096];
	struct dial9_stats st = { .size = sizeof(st) };
	uintptr_t ip = (uintptr_t)round_trip + 4;
	struct dial9_decoder *dec;
	struct dial9_encoder *e;
	struct dial9_record r;
	struct dial9_config c;
	struct d9_worker *wk;
	uint64_t start, end, off;
	size_t len, n, olen;
	uint8_t *seg, *obj, id[20];
	struct buf h = { 0 };
	int idlen, found = 0;
	char **keys;
	FILE *f;

	(void)state;
	own_mapping(ip, &start, &end, &off, exe, sizeof(exe));
	idlen = d9_build_id(exe, id, sizeof(id));
	e = seg_begin();
	seg_mapping(e, 77, start, end, off, exe, id, idlen > 0 ? (size_t)idlen : 0);
	seg_stack(e, 77, 2000, (uint64_t[]){ ip }, 1);
	seg = seg_end(e, &len);
	snprintf(path, sizeof(path), "%s/00000000.dial9", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(seg, 1, len, f), len);
	fclose(f);
	cfg_for(&c, dir, "sym/traces");
	c.sched_flags = DIAL9_SCHED_STACKS;
	assert_int_equal(d9_worker_new(&wk, &c), 0);
	assert_int_equal(d9_worker_start(wk, "b1", "s3test", no_budget, NULL,
					 NULL, NULL), 0);
	d9_worker_submit(wk, 0, path);
	d9_worker_stop(wk, 20000);
	d9_worker_stats(wk, &st);
	d9_worker_free(wk);
	assert_int_equal(st.pipe_done, 1);
	assert_int_equal(st.symbols_segments, 1);
	assert_int_equal(st.symbols_named, 1);
	keys = list_keys("sym/traces/version=1/", &n);
	assert_int_equal(n, 1);
	obj = get_object(keys[0], &olen, &h);
	free(h.p);
	assert_true(olen > len);
	assert_memory_equal(obj, seg, len);
	assert_int_equal(dial9_decoder_new(&dec, obj, olen), 0);
	while (dial9_decoder_next(dec, &r) == 1) {
		const struct dial9_value *name;

		if (r.kind != DIAL9_RECORD_EVENT ||
		    strcmp(r.schema->name, "sched.symbol"))
			continue;
		name = dial9_record_field(&r, "name");
		assert_int_equal(dial9_record_field(&r, "address")->u64, ip);
		assert_int_equal(dial9_record_field(&r, "within")->u64, 4);
		assert_int_equal(name->str.len, strlen("round_trip"));
		assert_memory_equal(name->str.ptr, "round_trip", name->str.len);
		found++;
	}
	dial9_decoder_free(dec);
	assert_int_equal(found, 1);
	free(obj);
	free(seg);
	test_free_list(keys);
	test_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(throttling_is_retried),
		cmocka_unit_test(outage),
		cmocka_unit_test(forbidden_is_terminal),
		cmocka_unit_test(trigger_manifest),
		cmocka_unit_test(memory_round_trip),
		cmocka_unit_test(symbol_table_is_uploaded),
	};

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, setup, teardown);
}
