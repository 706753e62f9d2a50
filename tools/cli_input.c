// SPDX-License-Identifier: MIT
/*
 * cli_input.c - what the subcommands read: TRACE arguments expanded into
 * segment files, and each file mapped (LZ4 segments decompressed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* {epoch}-{index}.bin: a segment uploaded to S3 uncompressed. */
static int is_s3_plain(const char *name)
{
	unsigned long long a, b;
	int end = 0;

	return sscanf(name, "%llu-%llu.bin%n", &a, &b, &end) == 2 && end &&
	       !name[end];
}

static int is_segment(const char *name)
{
	size_t n = strlen(name);

	return (n > 6 && !strcmp(name + n - 6, ".dial9")) ||
	       (n > 13 && !strcmp(name + n - 13, ".dial9.active")) ||
	       (n > 10 && !strcmp(name + n - 10, ".dial9.lz4")) ||
	       (n > 8 && !strcmp(name + n - 8, ".bin.lz4")) ||
	       is_s3_plain(name);
}

/* What a walk has seen: paths found, and directories and files by
 * device and inode, so that none is taken twice. */
struct walk {
	char **v;
	int n;
	struct seen {
		dev_t dev;
		ino_t ino;
	} *dirs, *files;
	size_t ndirs, cdirs, nfiles, cfiles;
};

/* 1 if (dev, ino) was in the set already, else added: 0, or -ENOMEM. */
static int see(struct seen **set, size_t *n, size_t *cap,
	       const struct stat *st)
{
	for (size_t i = 0; i < *n; i++)
		if ((*set)[i].dev == st->st_dev && (*set)[i].ino == st->st_ino)
			return 1;
	if (cli_grow((void **)set, cap, *n + 1, sizeof(**set)))
		return -ENOMEM;
	(*set)[*n].dev = st->st_dev;
	(*set)[*n].ino = st->st_ino;
	(*n)++;
	return 0;
}

static int add_file(struct walk *w, const char *p, const struct stat *st)
{
	char **nv;
	int ret = see(&w->files, &w->nfiles, &w->cfiles, st);

	if (ret)
		return ret > 0 ? 0 : ret;	/* the same file by another name */
	nv = realloc(w->v, (size_t)(w->n + 1) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	w->v = nv;
	nv[w->n] = strdup(p);
	if (!nv[w->n])
		return -ENOMEM;
	w->n++;
	return 0;
}

static int walk(struct walk *w, const char *dir, const struct stat *dst,
		int depth)
{
	struct dirent *de;
	int ret = see(&w->dirs, &w->ndirs, &w->cdirs, dst);
	DIR *d;

	if (ret)
		return ret > 0 ? 0 : ret;	/* a loop, or a second way in */
	d = opendir(dir);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		char p[4096];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >=
		    sizeof(p))
			continue;
		if (stat(p, &st))
			continue;
		if (S_ISDIR(st.st_mode) && depth < 8)
			ret = walk(w, p, &st, depth + 1);
		else if (S_ISREG(st.st_mode) && is_segment(de->d_name))
			ret = add_file(w, p, &st);
	}
	closedir(d);
	return ret;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_collect(int argc, char **argv, char ***paths)
{
	struct walk w = { 0 };
	int ret = 0;

	for (int i = 0; !ret && i < argc; i++) {
		struct stat st;
		int before = w.n;

		if (stat(argv[i], &st)) {
			ret = -errno;
			fprintf(stderr, "dial9: %s: %s\n", argv[i], strerror(errno));
			break;
		}
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
			fprintf(stderr, "dial9: %s: not a regular file or a "
				"directory\n", argv[i]);
			ret = -EINVAL;
			break;
		}
		ret = S_ISDIR(st.st_mode) ? walk(&w, argv[i], &st, 0) :
					    add_file(&w, argv[i], &st);
		if (ret)
			fprintf(stderr, "dial9: %s: %s\n", argv[i], strerror(-ret));
		else if (S_ISDIR(st.st_mode))
			d9_sort(w.v + before, (size_t)(w.n - before),
				 sizeof(char *), cmp_path);
	}
	free(w.dirs);
	free(w.files);
	if (ret) {
		cli_free_paths(w.v, w.n);
		return ret;
	}
	*paths = w.v;
	return w.n;
}

void cli_free_paths(char **paths, int n)
{
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

int cli_map(const char *path, struct cli_file *f)
{
	/* O_NONBLOCK: a FIFO put in the file's place does not block the
	 * open; fstat() then refuses it */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	f->path = (char *)path;
	f->data = NULL;
	f->len = 0;
	if (fd < 0 || fstat(fd, &st)) {
		int ret = -errno;

		fprintf(stderr, "dial9: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "dial9: %s: not a regular file\n", path);
		close(fd);
		return -EINVAL;
	}
	if (st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			       fd, 0);

		if (m == MAP_FAILED) {
			int ret = -errno;

			fprintf(stderr, "dial9: %s: %s\n", path, strerror(errno));
			close(fd);
			return ret;
		}
		f->data = m;
		f->len = (size_t)st.st_size;
		if (f->len >= 4 && !memcmp(m, "\x04\x22\x4d\x18", 4)) {
			/* an LZ4 segment: read its decompressed bytes */
			int ret = cli_lz4_inflate(m, f->len, f);

			munmap(m, (size_t)st.st_size);
			if (ret) {
				f->data = NULL;
				f->len = 0;
				if (ret == -EFBIG)
					fprintf(stderr, "dial9: %s: LZ4 data "
						"decompresses to more than %zu MiB "
						"(DIAL9_INFLATE_MAX_MB)\n", path,
						cli_inflate_max() >> 20);
				else
					fprintf(stderr, "dial9: %s: bad LZ4 data: "
						"%s\n", path, strerror(-ret));
				close(fd);
				return ret;
			}
		}
	}
	close(fd);
	return 0;
}

void cli_unmap(struct cli_file *f)
{
	if (f->data)
		munmap((void *)f->data, f->len);
}

