/* SPDX-License-Identifier: MIT */
/*
 * s3_test.h - the S3-compatible test server on loopback (tests/s3/server.js:
 * s3rver behind a SigV4-checking front), started by each program's setup
 * and stopped by its teardown, the configuration that ships to it, and a
 * small signed client for the checks: what test_s3.c (the upload step)
 * and test_s3_cli.c (dial9 ls, dial9 fetch) share.  After helpers.h.
 */
#ifndef DIAL9_TEST_S3_H
#define DIAL9_TEST_S3_H

#include <curl/curl.h>
#include <signal.h>
#include <sys/wait.h>

#include "pipeline/pipeline.h"

#define AK "dial9test"
#define SK "dial9secret"
#define TOKEN "dial9-session-token"
#define BUCKET "dial9-test"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

DIAL9_EVENT_TYPE(t_s, "s3.ev", DIAL9_FIELD(U64, seq), DIAL9_FIELD(STR, s));

struct server {
	pid_t pid;
	int port;
	char *dir;
};

static struct server srv;

/* Start server.js; port 0 picks one (kept for a restart). */
static inline void server_start(const char *extra)
{
	int pfd[2];
	char line[64] = "", *cmd;
	FILE *f;

	assert_int_equal(pipe(pfd), 0);
	if (asprintf(&cmd,
		     /* s3rver's ListObjectsV2 continuation tokens use DES,
		      * which OpenSSL 3 keeps in its legacy provider */
		     "exec node --openssl-legacy-provider %s --port %d --dir '%s' --bucket " BUCKET
		     " --access-key " AK " --secret " SK " --token " TOKEN " %s",
		     getenv("DIAL9_TEST_S3_SERVER") ?: "tests/s3/server.js",
		     srv.port, srv.dir, extra ? extra : "") < 0)
		abort();
	srv.pid = fork();
	assert_true(srv.pid >= 0);
	if (!srv.pid) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	if (strncmp(line, "ready ", 6)) {
		kill(srv.pid, SIGKILL);
		waitpid(srv.pid, NULL, 0);
		fail_msg("the S3 test server did not start (make s3-server?)");
	}
	srv.port = atoi(line + 6);
}

static inline void server_stop(void)
{
	if (srv.pid <= 0)
		return;
	kill(srv.pid, SIGTERM);
	waitpid(srv.pid, NULL, 0);
	srv.pid = 0;
}

static inline int setup(void **state)
{
	(void)state;
	srv.dir = test_tmpdir("s3-objects");
	srv.port = 0;
	setenv("AWS_ACCESS_KEY_ID", AK, 1);
	setenv("AWS_SECRET_ACCESS_KEY", SK, 1);
	setenv("AWS_SESSION_TOKEN", TOKEN, 1);
	server_start(NULL);
	return 0;
}

static inline int teardown(void **state)
{
	(void)state;
	server_stop();
	test_rm_rf(srv.dir);
	free(srv.dir);
	return 0;
}

static char endpoint[64];

static inline void cfg_for(struct dial9_config *c, const char *dir, const char *prefix)
{
	dial9_config_init(c);
	c->trace_dir = dir;
	c->service_name = "s3test";
	c->sched = DIAL9_SCHED_OFF;
	c->pipeline = DIAL9_PIPE_LZ4 | DIAL9_PIPE_S3;
	c->s3_bucket = BUCKET;
	c->s3_prefix = prefix;
	c->s3_region = "eu-west-1";
	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", srv.port);
	c->s3_endpoint = endpoint;
	c->retry_base_ms = 50;
	c->retry_max_ms = 400;
	c->shutdown_timeout_ms = 20000;
}

static uint64_t seq;

static inline void record_segments(unsigned int nseg, unsigned int n)
{
	for (unsigned int s = 0; s < nseg; s++) {
		for (unsigned int i = 0; i < n; i++, seq++)
			DIAL9_EMIT(t_s, dial9_u64(seq), dial9_str("payload of a segment"));
		assert_int_equal(dial9_rotate(), 0);
	}
}

/* ---- a small signed S3 client for the checks ---- */

struct buf {
	char *p;
	size_t n;
};

static inline size_t collect(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	b->p = realloc(b->p, b->n + size * n + 1);
	memcpy(b->p + b->n, p, size * n);
	b->n += size * n;
	b->p[b->n] = 0;
	return size * n;
}

/* A signed GET of path?query; body and headers; returns the status. */
static inline long s3_get(const char *path_query, struct buf *body, struct buf *hdrs)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[2048];
	long status = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s", srv.port, path_query);
	h = curl_slist_append(h, "x-amz-content-sha256: " EMPTY_SHA);
	h = curl_slist_append(h, "x-amz-security-token: " TOKEN);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:eu-west-1:s3");
	curl_easy_setopt(c, CURLOPT_USERNAME, AK);
	curl_easy_setopt(c, CURLOPT_PASSWORD, SK);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, hdrs);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

/* Keys under prefix (ListObjectsV2), sorted; NULL-terminated. */
static inline char **list_keys(const char *prefix, size_t *count)
{
	struct buf body = { 0 }, hdrs = { 0 };
	char q[512], enc[256], **v = calloc(1, sizeof(char *));
	size_t n = 0;

	/* already encoded as SigV4 wants: curl signs the query as given */
	assert_int_equal(d9_s3_uri_encode(prefix, false, enc, sizeof(enc)), 0);
	snprintf(q, sizeof(q), BUCKET "?list-type=2&max-keys=1000&prefix=%s", enc);
	assert_int_equal(s3_get(q, &body, &hdrs), 200);
	for (char *p = body.p; p && (p = strstr(p, "<Key>"));) {
		char *e = strstr(p, "</Key>");

		assert_non_null(e);
		v = realloc(v, (n + 2) * sizeof(char *));
		v[n++] = strndup(p + 5, (size_t)(e - p - 5));
		p = e;
	}
	v[n] = NULL;
	qsort(v, n, sizeof(char *), cmp_str);
	*count = n;
	free(body.p);
	free(hdrs.p);
	return v;
}

/* The body of an object as it is stored. */
static inline char *get_raw(const char *key, struct buf *hdrs)
{
	struct buf body = { 0 };
	char path[2100], enc[2048];

	assert_int_equal(d9_s3_uri_encode(key, true, enc, sizeof(enc)), 0);
	snprintf(path, sizeof(path), BUCKET "/%s", enc);
	assert_int_equal(s3_get(path, &body, hdrs), 200);
	return body.p;
}

#endif
