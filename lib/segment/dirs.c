// SPDX-License-Identifier: MIT
/*
 * dirs.c - where a writer's files go: the trace directory, checked for
 * owner and mode, {boot_id} made in it by this process, the lock, and
 * every file of it created through that directory's descriptor with
 * O_EXCL|O_NOFOLLOW, so that no path of it can be swapped or planted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "segment/segw.h"

/* A new file of the writer's own directory: never one already there,
 * never through a link. */
int d9_seg_create(struct d9_segw *w, const char *name, int flags)
{
	int fd = openat(w->dfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC, (mode_t)w->o.file_mode);

	return fd < 0 ? -errno : fd;
}

static int take_lock(struct d9_segw *w)
{
	w->lockfd = d9_seg_create(w, ".lock", O_RDWR);
	if (w->lockfd < 0) {
		int ret = w->lockfd;

		w->lockfd = -1;
		return ret;
	}
	if (flock(w->lockfd, LOCK_EX | LOCK_NB)) {
		int ret = -errno;

		close(w->lockfd);
		w->lockfd = -1;
		return ret;
	}
	return 0;
}

void d9_seg_boot_id(char *buf, size_t len)
{
	uint8_t r[4];
	char tag[5];

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		uint64_t t = d9_clock_gettime_ns();

		memcpy(r, &t, sizeof(r));
	}
	for (int i = 0; i < 4; i++)
		tag[i] = (char)('a' + r[i] % 26);
	tag[4] = 0;
	snprintf(buf, len, "%s-%d", tag, (int)getpid());
}

static mode_t dir_mode(const struct d9_segw *w)
{
	return (mode_t)(w->o.file_mode | 0700 | ((w->o.file_mode & 0044) >> 2));
}

void d9_seg_close_dirs(struct d9_segw *w)
{
	if (w->lockfd >= 0)
		close(w->lockfd);
	if (w->dfd >= 0)
		close(w->dfd);
	if (w->tfd >= 0)
		close(w->tfd);
	w->lockfd = w->dfd = w->tfd = -1;
}

/*
 * The default trace directory is taken by another user (or open to
 * others): a fresh private one beside it, so that a squatter can neither
 * stop this recorder nor see into it.  Said in the log and the stats.
 */
static int fallback_dir(struct d9_segw *w)
{
	size_t n = strlen(w->trace_dir);
	char *t = malloc(n + 8);
	int fd;

	if (!t)
		return -ENOMEM;
	memcpy(t, w->trace_dir, n);
	memcpy(t + n, ".XXXXXX", 8);
	if (!mkdtemp(t)) {
		fd = -errno;
		free(t);
		return fd;
	}
	fd = d9_dir_open_own(t, dir_mode(w));
	if (fd < 0) {
		free(t);
		return fd;
	}
	d9_log("the default trace directory %s is not this user's own; "
	       "writing to %s instead", w->trace_dir, t);
	free(w->trace_dir);
	w->trace_dir = t;
	return fd;
}

/*
 * The trace directory, checked (owner, mode), then {boot_id} made in it
 * through its descriptor, and the lock: everything after this is opened
 * relative to w->dfd, so no path of it can be swapped.  @fresh: a new
 * boot_id if the name is taken; else (recovery) it must be made anew.
 */
int d9_seg_open_dirs(struct d9_segw *w, bool fresh)
{
	int ret, tries = 0;

	w->tfd = d9_dir_open_own(w->trace_dir, dir_mode(w));
	if (fresh && w->o.default_dir &&
	    (w->tfd == -EPERM || w->tfd == -EACCES || w->tfd == -ENOTDIR))
		w->tfd = fallback_dir(w);
	if (w->tfd < 0) {
		ret = w->tfd;
		w->tfd = -1;
		return ret;
	}
	while (mkdirat(w->tfd, w->boot_id, dir_mode(w))) {
		ret = -errno;
		if (ret != -EEXIST || !fresh || ++tries == 16)
			goto out;
		d9_seg_boot_id(w->boot_id, sizeof(w->boot_id));
	}
	if (snprintf(w->dir, sizeof(w->dir), "%s/%s", w->trace_dir,
		     w->boot_id) >= (int)sizeof(w->dir)) {
		ret = -ENAMETOOLONG;
		goto out_rmdir;
	}
	w->dfd = openat(w->tfd, w->boot_id, O_RDONLY | O_DIRECTORY |
			O_NOFOLLOW | O_CLOEXEC);
	if (w->dfd < 0) {
		ret = -errno;
		goto out_rmdir;
	}
	ret = d9_dir_check(w->dfd, w->dir);
	if (!ret)
		ret = take_lock(w);
	if (!ret)
		return 0;
out_rmdir:
	unlinkat(w->tfd, w->boot_id, AT_REMOVEDIR);
out:
	d9_seg_close_dirs(w);
	return ret;
}

