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
 * block's end.  Until the segment is sealed (d9_dio_end() cuts the
 * padding) it may end with up to a block of zeros, which readers take as
 * its end (docs/format.md).
 *
 * Through io_uring the writes are not waited for: the flush thread goes
 * on while the device works, and waits only for a staging buffer to
 * reuse (two of them) or, at the next append, for the last append's
 * writes, whose last block that append writes again.  So a write that
 * fails is known one append late: d9_dio_append() then says so
 * (D9_DIO_LATE) and the writer takes that append back (writer.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment/segw.h"

/* io_uring user_data of our writes: the buffer's index, tagged. */
#define DIO_TAG 0xd19d1000ull

/* Turn O_DIRECT off on @fd: what follows goes through the page cache. */
static void dio_off(struct d9_dio *d, int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_DIRECT);
	d->on = false;
	__atomic_store_n(&d->used, false, __ATOMIC_RELAXED);
}

/* Reap one completion of ours (waiting for it); 0 or -errno of io_uring. */
static int dio_reap(struct d9_dio *d, struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	unsigned int i;
	int ret;

	do	/* a signal is no answer */
		ret = io_uring_wait_cqe(ring, &cqe);
	while (ret == -EINTR);
	if (ret)
		return ret;
	i = (unsigned int)(cqe->user_data - DIO_TAG);
	if (i < D9_DIO_BUFS && d->inflight[i]) {
		/* a short direct write (the device full) is a failure */
		if (cqe->res < 0 && !d->late)
			d->late = cqe->res;
		else if ((size_t)cqe->res != d->want[i] && !d->late)
			d->late = -ENOSPC;
		d->inflight[i] = false;
		d->ninflight--;
	}
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

/* Wait until buffer @i (or, at D9_DIO_BUFS, every buffer) is free. */
static int dio_wait(struct d9_dio *d, struct io_uring *ring, unsigned int i)
{
	while (i < D9_DIO_BUFS ? d->inflight[i] : d->ninflight > 0) {
		int ret = dio_reap(d, ring);

		if (ret) {
			/* cannot tell: treat what was in flight as lost */
			d->late = d->late ? d->late : ret;
			for (unsigned int j = 0; j < D9_DIO_BUFS; j++)
				d->inflight[j] = false;
			d->ninflight = 0;
			return ret;
		}
	}
	return 0;
}

bool d9_dio_begin(struct d9_dio *d, int fd, struct io_uring *ring)
{
	int fl;

	/* a file left with writes in flight (try_reopen()): their end */
	if (ring)
		dio_wait(d, ring, D9_DIO_BUFS);
	d->late = 0;
	d->on = false;
	__atomic_store_n(&d->used, false, __ATOMIC_RELAXED);
	d->tail = 0;
	d->base = 0;
	d->cur = 0;
	d->carry = false;
	for (unsigned int i = 0; i < D9_DIO_BUFS; i++) {
		void *p = NULL;

		if (d->buf[i])
			continue;
		if (posix_memalign(&p, D9_DIO_BLOCK, D9_DIO_STAGE)) {
			d->err = -ENOMEM;
			return false;
		}
		d->buf[i] = p;
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

/*
 * buf[cur][0, len) at d->base, @len a multiple of the block: submitted
 * (io_uring, not waited for) or written (pwrite); 0 or -errno.
 */
static int dio_write(struct d9_dio *d, int fd, struct io_uring *ring,
		     size_t len)
{
	ssize_t done;

	if (ring) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		int ret;

		if (!sqe)
			return -EBUSY;
		io_uring_prep_write(sqe, fd, d->buf[d->cur], (unsigned int)len,
				    d->base);
		sqe->user_data = DIO_TAG + d->cur;
		ret = io_uring_submit(ring);
		if (ret < 0)
			return ret;
		d->inflight[d->cur] = true;
		d->want[d->cur] = len;
		d->ninflight++;
		return 0;
	}
	do
		done = pwrite(fd, d->buf[d->cur], len, (off_t)d->base);
	while (done < 0 && errno == EINTR);
	if (done < 0)
		return -errno;
	return (size_t)done == len ? 0 : -ENOSPC;
}

/*
 * Write what the current buffer holds (d->tail bytes from d->base),
 * padded to a block.  A full buffer (whole blocks only) is written
 * alongside the next, into which its successor goes; the partial last
 * block of a write stays where it is, to be moved to the front at the
 * next append, once this write is done (d->carry).
 */
static int dio_flush(struct d9_dio *d, int fd, struct io_uring *ring)
{
	size_t len = (d->tail + D9_DIO_BLOCK - 1) & ~(size_t)(D9_DIO_BLOCK - 1);
	int ret;

	memset(d->buf[d->cur] + d->tail, 0, len - d->tail);
	ret = dio_write(d, fd, ring, len);
	if (ret)
		return ret;
	if (d->tail == D9_DIO_STAGE) {
		d->base += D9_DIO_STAGE;
		d->tail = 0;
		d->cur = (d->cur + 1) % D9_DIO_BUFS;
		/* the next buffer, free (no wait without io_uring) */
		return ring ? dio_wait(d, ring, d->cur) : 0;
	}
	d->carry = true;
	return 0;
}

/* The partial last block to the front of its buffer, its write done. */
static void dio_carry(struct d9_dio *d)
{
	size_t whole = d->tail & ~(size_t)(D9_DIO_BLOCK - 1);

	if (!d->carry)
		return;
	d->carry = false;
	if (whole) {
		memmove(d->buf[d->cur], d->buf[d->cur] + whole,
			d->tail - whole);
		d->base += whole;
		d->tail -= whole;
	}
}

/* After a failure: every write done, O_DIRECT off. */
static void dio_stop(struct d9_dio *d, int fd, struct io_uring *ring)
{
	if (ring)
		dio_wait(d, ring, D9_DIO_BUFS);
	dio_off(d, fd);
}

int d9_dio_settle(struct d9_dio *d, int fd, struct io_uring *ring)
{
	if (!d->on || !ring)
		return 0;
	dio_wait(d, ring, D9_DIO_BUFS);
	if (!d->late)
		return 0;
	d->err = d->late;
	d->late = 0;
	dio_stop(d, fd, ring);
	return D9_DIO_LATE;
}

int d9_dio_append(struct d9_dio *d, int fd, struct io_uring *ring,
		  const struct iovec *iov, unsigned int n)
{
	/* the last append's writes: done, and whole? */
	int ret = d9_dio_settle(d, fd, ring);

	if (ret)
		return ret;
	dio_carry(d);
	for (unsigned int i = 0; i < n && !ret; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left && !ret) {
			size_t room = D9_DIO_STAGE - d->tail;
			size_t take = left < room ? left : room;

			memcpy(d->buf[d->cur] + d->tail, p, take);
			d->tail += take;
			p += take;
			left -= take;
			if (d->tail == D9_DIO_STAGE)
				ret = dio_flush(d, fd, ring);
		}
	}
	if (!ret && d->tail)
		ret = dio_flush(d, fd, ring);
	if (!ret && d->late)	/* a write of this append failed already */
		ret = d->late;
	if (ret) {
		/*
		 * The file holds the bytes before this append (the caller
		 * cuts it there): go on through the page cache.
		 */
		d->late = 0;
		d->err = ret;
		dio_stop(d, fd, ring);
	}
	return ret;
}

int d9_dio_end(struct d9_dio *d, int fd, struct io_uring *ring, uint64_t size)
{
	bool was = d->on;
	int late = d9_dio_settle(d, fd, ring);

	d->on = false;
	d->tail = 0;
	d->base = 0;
	d->carry = false;
	if (late)
		return D9_DIO_LATE;
	if (was && ftruncate(fd, (off_t)size))
		return -errno;
	return 0;
}

void d9_dio_free(struct d9_dio *d)
{
	for (unsigned int i = 0; i < D9_DIO_BUFS; i++) {
		free(d->buf[i]);
		d->buf[i] = NULL;
	}
	d->on = false;
}
