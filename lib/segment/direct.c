// SPDX-License-Identifier: MIT
/*
 * direct.c - a segment's appends with O_DIRECT, where its filesystem
 * takes them: the bytes go from an aligned staging buffer to the device,
 * with no copy into the page cache, no page to allocate and clear, and no
 * writeback left for the kernel's flusher threads.  Measured under
 * -icount on ext4 (docs/benchmarks.md): 0.3 ns of CPU a byte, where a
 * buffered write costs 4.3 (1.75 on tmpfs, which has no O_DIRECT).
 *
 * Every append writes whole blocks: the bytes given, after the partial
 * last block the file already has (kept here), padded with zeros to a
 * block's end.  So the file holds every byte appended as soon as the
 * append returns, and until the segment is sealed (d9_dio_end() cuts
 * the padding) it may end with up to a block of zeros, which readers
 * take as its end (docs/format.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment/segw.h"

/* Turn O_DIRECT off on @fd: what follows goes through the page cache. */
static void dio_off(struct d9_dio *d, int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_DIRECT);
	d->on = false;
	__atomic_store_n(&d->used, false, __ATOMIC_RELAXED);
}

bool d9_dio_begin(struct d9_dio *d, int fd)
{
	int fl;

	d->on = false;
	__atomic_store_n(&d->used, false, __ATOMIC_RELAXED);
	d->tail = 0;
	d->base = 0;
	if (!d->buf) {
		void *p = NULL;

		if (posix_memalign(&p, D9_DIO_BLOCK, D9_DIO_STAGE)) {
			d->err = -ENOMEM;
			return false;
		}
		d->buf = p;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_DIRECT)) {
		d->err = -errno;
		return false;
	}
	d->on = true;
	__atomic_store_n(&d->used, true, __ATOMIC_RELAXED);
	return true;
}

/* buf[0, len) at d->base, @len a multiple of the block: 0 or -errno. */
static int dio_write(struct d9_dio *d, int fd, struct io_uring *ring,
		     size_t len)
{
	ssize_t done;

	if (ring) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		struct io_uring_cqe *cqe;
		int ret;

		if (!sqe)
			return -EBUSY;
		io_uring_prep_write(sqe, fd, d->buf, (unsigned int)len,
				    d->base);
		ret = io_uring_submit_and_wait(ring, 1);
		if (ret < 0)
			return ret;
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret)
			return ret;
		done = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	} else {
		do
			done = pwrite(fd, d->buf, len, (off_t)d->base);
		while (done < 0 && errno == EINTR);
		if (done < 0)
			done = -errno;
	}
	if (done < 0)
		return (int)done;
	/* a short direct write (the device full): the caller cuts it */
	return (size_t)done == len ? 0 : -ENOSPC;
}

/*
 * Write what the staging buffer holds (d->tail bytes from d->base),
 * padded to a block; keep its partial last block for the next append.
 */
static int dio_flush(struct d9_dio *d, int fd, struct io_uring *ring)
{
	size_t whole = d->tail & ~(size_t)(D9_DIO_BLOCK - 1);
	size_t len = (d->tail + D9_DIO_BLOCK - 1) & ~(size_t)(D9_DIO_BLOCK - 1);
	int ret;

	memset(d->buf + d->tail, 0, len - d->tail);
	ret = dio_write(d, fd, ring, len);
	if (ret)
		return ret;
	if (whole) {
		memmove(d->buf, d->buf + whole, d->tail - whole);
		d->base += whole;
		d->tail -= whole;
	}
	return 0;
}

int d9_dio_append(struct d9_dio *d, int fd, struct io_uring *ring,
		  const struct iovec *iov, unsigned int n)
{
	int ret = 0;

	for (unsigned int i = 0; i < n && !ret; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left && !ret) {
			size_t room = D9_DIO_STAGE - d->tail;
			size_t take = left < room ? left : room;

			memcpy(d->buf + d->tail, p, take);
			d->tail += take;
			p += take;
			left -= take;
			if (d->tail == D9_DIO_STAGE)
				ret = dio_flush(d, fd, ring);
		}
	}
	if (!ret && d->tail)
		ret = dio_flush(d, fd, ring);
	if (ret) {
		/*
		 * The file holds the bytes before this append (the caller
		 * cuts it there): go on through the page cache.
		 */
		d->err = ret;
		dio_off(d, fd);
	}
	return ret;
}

int d9_dio_end(struct d9_dio *d, int fd, uint64_t size)
{
	bool was = d->on;

	d->on = false;
	d->tail = 0;
	d->base = 0;
	if (was && ftruncate(fd, (off_t)size))
		return -errno;
	return 0;
}

void d9_dio_free(struct d9_dio *d)
{
	free(d->buf);
	d->buf = NULL;
	d->on = false;
}
