// SPDX-License-Identifier: MIT
/*
 * cli_lz4.c - LZ4 segments decompressed into memory, within a bound: a
 * small file must not become gigabytes of memory before it is judged.
 */
#include <errno.h>
#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cli.h"

size_t cli_inflate_max(void)
{
	const char *e = getenv("DIAL9_INFLATE_MAX_MB");
	char *end;
	unsigned long long mb;

	if (!e || !*e)
		return CLI_INFLATE_MAX_MB << 20;
	errno = 0;
	mb = strtoull(e, &end, 10);
	if (errno || *end || !mb || mb > (SIZE_MAX >> 21))
		return CLI_INFLATE_MAX_MB << 20;
	return (size_t)mb << 20;
}

/* Room for at least @need bytes, never more than @max; 0 or -errno. */
static int grow(uint8_t **buf, size_t *cap, size_t need, size_t max)
{
	size_t nc = *cap;
	void *nb;

	if (need > max)
		return -EFBIG;
	while (nc < need)
		nc = nc > max / 2 ? max : nc * 2;
	if (nc == *cap)
		return 0;
	nb = mremap(*buf, *cap, nc, MREMAP_MAYMOVE);
	if (nb == MAP_FAILED)
		return -ENOMEM;
	*buf = nb;
	*cap = nc;
	return 0;
}

/*
 * An LZ4 frame (or several) decompressed into anonymous memory, shrunk to
 * its length so that cli_unmap()'s munmap() frees it all.  The first
 * frame's content size, when it has one, sizes the buffer once, and one
 * past cli_inflate_max() is refused before anything is allocated;
 * otherwise the buffer grows with the output, up to the same bound.
 * -EFBIG past the bound, -EBADMSG corrupt (liblz4 checks the content
 * size at the frame's end), -ENODATA cut short.
 */
int cli_lz4_inflate(const uint8_t *in, size_t n, struct cli_file *f)
{
	size_t max = cli_inflate_max(), cap, len = 0, done = 0, hn = n, r;
	LZ4F_dctx *dctx;
	LZ4F_frameInfo_t fi;
	uint8_t *buf;
	int ret = 0;

	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		return -ENOMEM;
	r = LZ4F_getFrameInfo(dctx, &fi, in, &hn);
	if (LZ4F_isError(r)) {
		LZ4F_freeDecompressionContext(dctx);
		return -EBADMSG;
	}
	done = hn;
	if (fi.contentSize > max) {
		LZ4F_freeDecompressionContext(dctx);
		return -EFBIG;
	}
	/* one frame of known size fits at once; more frames grow it */
	cap = fi.contentSize ? (size_t)fi.contentSize + 65536 : n * 4 + 65536;
	if (cap > max)
		cap = max;
	buf = mmap(NULL, cap, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		LZ4F_freeDecompressionContext(dctx);
		return -ENOMEM;
	}
	while (done < n) {
		size_t sn = n - done, dn;

		if (cap - len < 65536) {
			ret = grow(&buf, &cap, len + 65536 > max ? max : len + 65536,
				   max);
			if (!ret && cap == len)
				ret = -EFBIG;	/* full at the bound */
			if (ret)
				break;
		}
		dn = cap - len;
		r = LZ4F_decompress(dctx, buf + len, &dn, in + done, &sn, NULL);
		if (LZ4F_isError(r)) {
			ret = -EBADMSG;
			break;
		}
		len += dn;
		done += sn;
		if ((!sn && !dn) || (done == n && r)) {
			ret = -ENODATA; /* cut short */
			break;
		}
	}
	LZ4F_freeDecompressionContext(dctx);
	if (!ret && r)
		ret = -ENODATA;	/* the frame header, and no end */
	if (ret || !len) {
		munmap(buf, cap);
		f->data = NULL;	/* not the caller's mapping of the input */
		f->len = 0;
		return ret;
	}
	if (cap > len) {
		void *nb = mremap(buf, cap, len, 0);

		if (nb != MAP_FAILED)
			buf = nb;
	}
	f->data = buf;
	f->len = len;
	return 0;
}
