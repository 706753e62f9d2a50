// SPDX-License-Identifier: MIT
/* fs.c - mkdir -p, for the segment directory and write-back (common.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"

int d9_mkdirs(const char *path)
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
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}
