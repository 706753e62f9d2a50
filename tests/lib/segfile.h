/* SPDX-License-Identifier: MIT */
/*
 * segfile.h - every record of one segment file, for the library's tests
 * (through helpers.h) and the VM's tests of libdial9 (tests/sched), which
 * are kselftest programs: no cmocka here.
 */
#ifndef DIAL9_TEST_SEGFILE_H
#define DIAL9_TEST_SEGFILE_H

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dial9.h"

typedef void (*test_visit_fn)(const struct dial9_record *r, void *arg);

/* Decode one file, calling fn for every record of every kind; the
 * decoder's result at the end (0 or an error), -errno if the file
 * cannot be opened. */
static inline int test_each_record(const char *path, test_visit_fn fn,
				   void *arg)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	void *map = NULL;
	struct dial9_decoder *d;
	struct dial9_record r;
	int ret;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (st.st_size)
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
			   0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	ret = dial9_decoder_new(&d, map, (size_t)st.st_size);
	if (!ret) {
		while ((ret = dial9_decoder_next(d, &r)) == 1)
			fn(&r, arg);
		dial9_decoder_free(d);
	}
	if (map)
		munmap(map, (size_t)st.st_size);
	return ret;
}

#endif
