/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - what the library's tests (tests/lib/test_*.c) share: temp
 * directories, the dial9 command and shell commands, waiting for the
 * recorder's statistics, reading back what a recorder wrote; this
 * process's threads in proc.h, a segment file's records in segfile.h.
 * One copy each.  Included after <cmocka.h>, whose assertions some of
 * them make.
 */
#ifndef DIAL9_TEST_HELPERS_H
#define DIAL9_TEST_HELPERS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dial9.h"
#include "proc.h"
#include "segfile.h"

#ifndef cmocka_unit_test
#error "include <cmocka.h> before helpers.h"
#endif

/*
 * Whether the sched_waking tracepoint may be read (the perf backend's
 * wake-ups): tracefs, mounted here where we may (root, as in CI).
 */
static inline bool test_tracefs_ready(void)
{
	struct statfs sf;

	if (!access("/sys/kernel/tracing/events/sched/sched_waking/format",
		    R_OK))
		return true;
	if (statfs("/sys/kernel/tracing", &sf) == 0 &&
	    mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
		return !access("/sys/kernel/tracing/events/sched/sched_waking/format",
			       R_OK);
	return false;
}

/* A fresh empty directory under /tmp; the caller frees the string. */
static inline char *test_tmpdir(const char *tag)
{
	char *p;

	if (asprintf(&p, "/tmp/dial9-test-%s-XXXXXX", tag) < 0)
		abort();
	if (!mkdtemp(p))
		abort();
	return p;
}

static inline void test_rm_rf(const char *path)
{
	char *cmd;

	if (asprintf(&cmd, "rm -rf '%s'", path) < 0)
		abort();
	if (system(cmd))
		(void)0;
	free(cmd);
}

/*
 * Start the recorder on the perf backend into @dir; false (and nothing
 * left behind, @dir freed) where perf events are not permitted at all.
 */
static inline bool test_start_perf(struct dial9_config *c, char *dir,
				   const char *service, struct dial9_stats *st)
{
	dial9_config_init(c);
	c->trace_dir = dir;
	c->service_name = service;
	c->sched = DIAL9_SCHED_PERF;
	assert_int_equal(dial9_start(c), 0);
	dial9_get_stats(st);
	if (st->sched_backend[0])
		return true;
	dial9_stop();
	test_rm_rf(dir);
	free(dir);
	return false;
}

/* The dial9 command under test: DIAL9_TEST_TOOL (make test-lib sets it),
 * else the tree's build. */
static inline const char *test_tool(void)
{
	const char *t = getenv("DIAL9_TEST_TOOL");

	return t ? t : "build/tools/dial9";
}

/* Run a shell command (printf-style); its exit status, -1 if it died. */
static inline int test_sh(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline int test_sh(const char *fmt, ...)
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

/* The whole of a file, its length in *len; NULL if it cannot be opened. */
static inline uint8_t *test_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, r;

	*len = 0;
	if (!f)
		return NULL;
	do {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r);
	fclose(f);
	*len = n;
	return buf;
}

static inline int ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Paths of files in dir ending with suffix, sorted; NULL-terminated. */
static inline char **test_list(const char *dir, const char *suffix,
			       size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = calloc(1, sizeof(char *));
	size_t n = 0;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || !ends_with(de->d_name, suffix))
			continue;
		v = realloc(v, (n + 2) * sizeof(char *));
		if (asprintf(&v[n], "%s/%s", dir, de->d_name) < 0)
			abort();
		n++;
	}
	if (d)
		closedir(d);
	v[n] = NULL;
	qsort(v, n, sizeof(char *), cmp_str);
	if (count)
		*count = n;
	return v;
}

static inline void test_free_list(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* The only subdirectory of dir (a recorder's boot directory). */
static inline char *test_boot_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *p = NULL;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		free(p);
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0)
			abort();
	}
	if (d)
		closedir(d);
	return p;
}

struct test_counts {
	uint64_t events;   /* all events */
	uint64_t user;     /* events whose name does not start "dial9." */
	uint64_t lost;     /* sum of dial9.lost events */
	uint64_t batches;  /* batch end frames */
	uint64_t streams;
	int err;           /* decoder result at the end */
};

struct test_count_visit {
	struct test_counts *c;
	test_visit_fn fn;
	void *arg;
};

static inline void test_count_record(const struct dial9_record *r, void *arg)
{
	struct test_count_visit *v = arg;
	struct test_counts *c = v->c;

	if (r->kind == DIAL9_RECORD_STREAM)
		c->streams++;
	if (r->kind == DIAL9_RECORD_BATCH_END)
		c->batches++;
	if (r->kind != DIAL9_RECORD_EVENT)
		return;
	c->events++;
	if (strncmp(r->schema->name, "dial9.", 6))
		c->user++;
	if (!strcmp(r->schema->name, "dial9.lost"))
		c->lost += dial9_record_field(r, "events")->u64;
	if (v->fn)
		v->fn(r, v->arg);
}

/* Decode one file, calling fn for every event; counts into *c. */
static inline int test_decode_file(const char *path, struct test_counts *c,
				   test_visit_fn fn, void *arg)
{
	struct test_count_visit v = { c, fn, arg };
	int ret;

	/* a file that cannot be read is not a decoder error (c->err) */
	if (access(path, R_OK))
		return -errno;
	ret = test_each_record(path, test_count_record, &v);
	if (ret)
		c->err = ret;
	return ret;
}

/* Decode every sealed segment in a boot directory, in order. */
static inline void test_decode_dir(const char *dir, struct test_counts *c,
				   test_visit_fn fn, void *arg)
{
	char **v = test_list(dir, ".dial9", NULL);

	for (size_t i = 0; v[i]; i++)
		test_decode_file(v[i], c, fn, arg);
	test_free_list(v);
}

/* Wait until cond holds of the recorder's statistics: 60 s at most, a
 * hang and not a timing check; fails the test then, naming what. */
static inline void test_wait_stats(bool (*cond)(const struct dial9_stats *),
				   const char *what)
{
	struct dial9_stats st = { .size = sizeof(st) };

	for (int i = 0; i < 6000; i++) {
		dial9_get_stats(&st);
		if (cond(&st))
			return;
		usleep(10000);
	}
	fail_msg("timed out waiting for %s", what);
}

/* A metadata record's value for @key, copied as a string into buf;
 * false where r is no metadata record or has no such key. */
static inline bool test_meta(const struct dial9_record *r, const char *key,
			     char *buf, size_t size)
{
	size_t kl = strlen(key);

	if (r->kind != DIAL9_RECORD_METADATA)
		return false;
	for (unsigned int i = 0; i < r->nkv; i++) {
		if (r->kv[i].key_len == kl && !memcmp(r->kv[i].key, key, kl)) {
			snprintf(buf, size, "%.*s", (int)r->kv[i].value_len,
				 r->kv[i].value);
			return true;
		}
	}
	return false;
}

static inline int test_streq(const struct dial9_value *v, const char *s)
{
	return v && v->str.len == strlen(s) && !memcmp(v->str.ptr, s, v->str.len);
}

#endif
