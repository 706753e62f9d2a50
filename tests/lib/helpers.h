/* SPDX-License-Identifier: MIT */
/* helpers.h - reading back what a recorder wrote, for the tests. */
#ifndef DIAL9_TEST_HELPERS_H
#define DIAL9_TEST_HELPERS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dial9.h"

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

typedef void (*test_visit_fn)(const struct dial9_record *r, void *arg);

/* Decode one file, calling fn for every event; counts into *c. */
static inline int test_decode_file(const char *path, struct test_counts *c,
				   test_visit_fn fn, void *arg)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	void *map = NULL;
	struct dial9_decoder *d;
	struct dial9_record r;
	int ret;

	if (fd < 0)
		return -errno;
	fstat(fd, &st);
	if (st.st_size)
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
			   0);
	close(fd);
	if (dial9_decoder_new(&d, map, (size_t)st.st_size))
		abort();
	while ((ret = dial9_decoder_next(d, &r)) == 1) {
		if (r.kind == DIAL9_RECORD_STREAM)
			c->streams++;
		if (r.kind == DIAL9_RECORD_BATCH_END)
			c->batches++;
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		c->events++;
		if (strncmp(r.schema->name, "dial9.", 6))
			c->user++;
		if (!strcmp(r.schema->name, "dial9.lost"))
			c->lost += dial9_record_field(&r, "events")->u64;
		if (fn)
			fn(&r, arg);
	}
	if (ret)
		c->err = ret;
	dial9_decoder_free(d);
	if (map)
		munmap(map, (size_t)st.st_size);
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

static inline int test_streq(const struct dial9_value *v, const char *s)
{
	return v && v->str.len == strlen(s) && !memcmp(v->str.ptr, s, v->str.len);
}

#endif
