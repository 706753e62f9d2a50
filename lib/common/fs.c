// SPDX-License-Identifier: MIT
/*
 * fs.c - directories the recorder writes into (created private, checked
 * for owner and mode before use), and small files read whole, for the
 * scheduler backends (common.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"

int d9_mkdirs(const char *path, mode_t mode)
{
	char tmp[4096];
	size_t n = strlen(path);

	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

int d9_dir_check(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		d9_log("%s is not a directory; refusing to write into it", path);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		d9_log("%s belongs to uid %u, not to this process (uid %u); "
		       "refusing to write into it (choose a directory of your "
		       "own)", path, (unsigned int)st.st_uid,
		       (unsigned int)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		d9_log("%s is writable by %s (mode %04o); refusing to write "
		       "into it (chmod go-w, or choose another)", path,
		       st.st_mode & S_IWOTH ? "every user" : "its group",
		       (unsigned int)(st.st_mode & 07777));
		return -EACCES;
	}
	return 0;
}

int d9_dir_open_own(const char *path, mode_t mode)
{
	int fd, ret;

	ret = d9_mkdirs(path, mode);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = d9_dir_check(fd, path);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int d9_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	return 0;
}
