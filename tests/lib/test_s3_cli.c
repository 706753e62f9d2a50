// SPDX-License-Identifier: MIT
/*
 * test_s3_cli.c - dial9 ls and dial9 fetch against the S3 test server
 * (s3_test.h): real uploads of two services and crafted objects, paged
 * two keys at a time; what is fetched is what is stored, byte for byte.
 */
#include <curl/curl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers.h"
#include "s3_test.h"

/* A signed PUT of body at key. */
static void put_object(const char *key, const char *body)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[2048], enc[1500], sha[65], hdr[128];
	long status = 0;

	assert_int_equal(d9_s3_uri_encode(key, true, enc, sizeof(enc)), 0);
	assert_int_equal(d9_sha256_hex(body, strlen(body), sha), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/" BUCKET "/%s", srv.port, enc);
	snprintf(hdr, sizeof(hdr), "x-amz-content-sha256: %s", sha);
	h = curl_slist_append(h, hdr);
	h = curl_slist_append(h, "x-amz-security-token: " TOKEN);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:eu-west-1:s3");
	curl_easy_setopt(c, CURLOPT_USERNAME, AK);
	curl_easy_setopt(c, CURLOPT_PASSWORD, SK);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	{
		struct buf b = { 0 };

		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		assert_int_equal(curl_easy_perform(c), CURLE_OK);
		free(b.p);
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	assert_int_equal(status, 200);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

/* The keys (last column) dial9 ls printed into file, in order. */
static char **ls_keys(const char *file, size_t *n)
{
	FILE *f = fopen(file, "r");
	char line[2048], **v = calloc(1, sizeof(char *));

	*n = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *k = strrchr(line, ' ');

		assert_non_null(k);
		k[strcspn(k, "\n")] = 0;
		v = realloc(v, (*n + 2) * sizeof(char *));
		v[(*n)++] = strdup(k + 1);
	}
	v[*n] = NULL;
	fclose(f);
	return v;
}

static size_t ls_count(const char *out, const char *args)
{
	size_t n;
	char **v;

	assert_int_equal(test_sh("%s ls s3://" BUCKET "/cli --endpoint http://127.0.0.1:%d "
				 "--region eu-west-1 --page-size 2 %s > '%s'",
				 test_tool(), srv.port, args, out), 0);
	v = ls_keys(out, &n);
	test_free_list(v);
	return n;
}

/*
 * dial9 ls and dial9 fetch on real uploads (two services) and crafted
 * objects (another host, an old date, a key that is not a segment),
 * listed two keys per page so that continuation tokens are followed.
 */
static void cli_ls_fetch(void **state)
{
	char *dir = test_tmpdir("s3-cli"), *out, *err, *dl, host[256];
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	uint64_t before;
	size_t n, nall;
	char **keys, **all;

	(void)state;
	if (asprintf(&out, "%s/ls.txt", dir) < 0 || asprintf(&err, "%s/err.txt", dir) < 0 ||
	    asprintf(&dl, "%s/fetched", dir) < 0)
		abort();
	gethostname(host, sizeof(host));
	cfg_for(&c, dir, "cli");
	c.service_name = "svc-a";
	assert_int_equal(dial9_start(&c), 0);
	record_segments(3, 300);
	assert_int_equal(dial9_stop(), 0);
	c.service_name = "svc/b"; /* Hive-escaped in keys: svc%2Fb */
	assert_int_equal(dial9_start(&c), 0);
	before = seq;
	record_segments(2, 300);
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	assert_int_equal(st.pipe_done, 2);
	put_object("cli/version=1/date=2020-01-01/service=svc-a/time=0000/"
		   "instance=other-host/boot=abcd-1/1577836800-1.bin.lz4", "old segment");
	put_object("cli/version=1/notes.txt", "not a segment");
	put_object("cli/dumps/01ABC.json", "{}");

	all = list_keys("cli/version=1/", &nall);
	assert_int_equal(nall, 7);
	/* everything that is a segment, in key order, each line once */
	assert_int_equal(test_sh("%s ls s3://" BUCKET "/cli --endpoint http://127.0.0.1:%d "
				 "--region eu-west-1 --page-size 2 > '%s'", test_tool(),
				 srv.port, out), 0);
	keys = ls_keys(out, &n);
	assert_int_equal(n, 6);
	for (size_t i = 0, k = 0; all[i]; i++) {
		if (ends_with(all[i], "notes.txt"))
			continue;
		assert_string_equal(keys[k++], all[i]);
	}
	test_free_list(keys);
	/* the partition keys */
	assert_int_equal(ls_count(out, "--service svc-a"), 4);
	assert_int_equal(ls_count(out, "--service svc/b"), 2);
	assert_int_equal(ls_count(out, "--service svc-a --host other-host"), 1);
	{
		char args[400];

		snprintf(args, sizeof(args), "--host '%s'", host);
		assert_int_equal(ls_count(out, args), 5);
	}
	assert_int_equal(ls_count(out, "--since 2021-01-01"), 5);
	assert_int_equal(ls_count(out, "--since 2019-12-31T23:59"), 6);
	assert_int_equal(ls_count(out, "--since 1h"), 5);
	assert_int_equal(ls_count(out, "--since yesterday"), 5);
	assert_int_equal(ls_count(out, "--until 2021-01-01"), 1);
	assert_int_equal(ls_count(out, "--since 2019-12-31 --until today"), 1);
	assert_int_equal(ls_count(out, "--service nobody"), 0);
	/* the environment instead of options; the prefix's default */
	assert_int_equal(test_sh("DIAL9_S3_ENDPOINT=http://127.0.0.1:%d %s ls s3://" BUCKET
				 " > '%s'", srv.port, test_tool(), out), 0);
	keys = ls_keys(out, &n);
	test_free_list(keys);
	assert_int_equal(n, 0); /* nothing under dial9-traces/ */

	/* fetch: the same selection, byte for byte, readable by dial9 */
	assert_int_equal(test_sh("%s fetch s3://" BUCKET "/cli --endpoint http://127.0.0.1:%d "
				 "--page-size 2 --service svc/b -o '%s' 2> '%s'",
				 test_tool(), srv.port, dl, err), 0);
	keys = list_keys("cli/version=1/", &n);
	{
		size_t got = 0;

		for (size_t i = 0; keys[i]; i++) {
			char path[2200], *obj;
			struct buf h = { 0 };
			size_t len;
			uint8_t *local;

			if (!strstr(keys[i], "service=svc%2Fb/"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dl, keys[i] + 4);
			obj = get_raw(keys[i], &h);
			local = test_slurp(path, &len);
			assert_non_null(local);
			assert_int_equal(len, h.p ? strtoull(strcasestr(h.p, "content-length:") + 15,
							    NULL, 10) : 0);
			assert_memory_equal(local, obj, len);
			free(local);
			free(obj);
			free(h.p);
			got++;
		}
		assert_int_equal(got, 2);
	}
	test_free_list(keys);
	assert_int_equal(test_sh("grep -q '2 segments' '%s'", err), 0);
	assert_int_equal(test_sh("test $(%s dump '%s' | grep -c '\"s3.ev\"') -eq %llu", test_tool(),
				 dl, (unsigned long long)(seq - before)), 0);
	/* again: nothing new to fetch */
	assert_int_equal(test_sh("%s fetch s3://" BUCKET "/cli --endpoint http://127.0.0.1:%d "
				 "--service svc/b -o '%s' 2> '%s'", test_tool(), srv.port, dl, err), 0);
	assert_int_equal(test_sh("grep -q '0 segments.*2 already there' '%s'", err), 0);
	/* a wrong secret: the server's refusal, exit status 1 */
	assert_int_equal(test_sh("AWS_SECRET_ACCESS_KEY=wrong %s ls s3://" BUCKET "/cli "
				 "--endpoint http://127.0.0.1:%d 2> '%s' > /dev/null",
				 test_tool(), srv.port, err), 1);
	assert_int_equal(test_sh("grep -q 'HTTP 403 SignatureDoesNotMatch' '%s'", err), 0);
	assert_int_equal(test_sh("%s ls s3://" BUCKET " --since someday 2> /dev/null", test_tool()), 2);
	assert_int_equal(test_sh("%s ls s3://" BUCKET " --until soon 2> /dev/null", test_tool()), 2);
	assert_int_equal(test_sh("%s fetch s3://" BUCKET " 2> /dev/null", test_tool()), 2);
	test_free_list(all);
	test_rm_rf(dir);
	free(dir);
	free(out);
	free(err);
	free(dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cli_ls_fetch),
	};

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, setup, teardown);
}
