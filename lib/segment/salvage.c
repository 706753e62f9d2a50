// SPDX-License-Identifier: MIT
/*
 * salvage.c - crash salvage: the .active segments of dead processes cut
 * after their last complete batch and sealed, at start-up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "segment/segw.h"

/* Cut a dead writer's segment after its last complete batch and seal
 * it; delete it if it holds no batch. */
static void salvage_file(int dfd, const char *dirpath, const char *name)
{
	int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct dial9_decoder *d;
	struct dial9_record rec;
	uint64_t keep = 0, ends = 0;
	char to[256];
	struct stat st;
	void *map = NULL;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
		goto out; /* not a segment this user's recorder wrote */
	if (st.st_size <= 0)
		goto remove;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	if (!dial9_decoder_new(&d, map, (size_t)st.st_size)) {
		while (dial9_decoder_next(d, &rec) == 1) {
			if (rec.kind == DIAL9_RECORD_BATCH_END) {
				keep = dial9_decoder_offset(d);
				ends++;
			}
		}
		dial9_decoder_free(d);
	}
	munmap(map, (size_t)st.st_size);
	if (ends < 2) /* the preamble alone: nothing recorded */
		goto remove;
	if (ftruncate(fd, (off_t)keep) || fsync(fd))
		goto out;
	snprintf(to, sizeof(to), "%.*s", (int)(strlen(name) - strlen(ACTIVE_EXT)),
		 name);
	if (!renameat(dfd, name, dfd, to))
		d9_log("salvaged %s/%s: %llu bytes in %llu batches", dirpath, to,
		       (unsigned long long)keep, (unsigned long long)ends - 1);
	goto out;
remove:
	unlinkat(dfd, name, 0);
out:
	close(fd);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/*
 * Every directory of the trace directory but the writer's own, not a
 * link, of this user, whose lock nobody holds: a dead writer's.  Nothing
 * is followed: a link planted in the trace directory, or in one of its
 * directories, is left alone.
 */
unsigned int d9_salvage(int tfd, const char *trace_dir, const char *own)
{
	int tdup = dup(tfd);
	DIR *top = tdup >= 0 ? fdopendir(tdup) : NULL;
	struct dirent *de;
	unsigned int n = 0;

	if (!top) {
		if (tdup >= 0)
			close(tdup);
		return 0;
	}
	while ((de = readdir(top))) {
		char path[600];
		int dfd, lfd;
		DIR *sub;
		struct dirent *se;
		struct stat st;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, own))
			continue;
		snprintf(path, sizeof(path), "%s/%s", trace_dir, de->d_name);
		dfd = openat(tfd, de->d_name, O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (fstat(dfd, &st) || st.st_uid != geteuid()) {
			close(dfd);
			continue;
		}
		lfd = openat(dfd, ".lock", O_RDWR | O_NOFOLLOW | O_NONBLOCK |
			     O_CLOEXEC);
		if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB)) {
			close(lfd); /* alive */
			close(dfd);
			continue;
		}
		sub = fdopendir(dup(dfd));
		while (sub && (se = readdir(sub))) {
			if (ends_with(se->d_name, SEG_EXT ACTIVE_EXT)) {
				salvage_file(dfd, path, se->d_name);
				n++;
			}
		}
		if (sub)
			closedir(sub);
		if (lfd >= 0)
			close(lfd);
		close(dfd);
	}
	closedir(top);
	return n;
}
