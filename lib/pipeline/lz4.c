// SPDX-License-Identifier: MIT
/*
 * lz4.c - the LZ4 step: one LZ4 frame per segment, with the content
 * checksum and the content size in the frame header, so that the stock
 * `lz4 -d` verifies it and a reader can size its buffer up front.
 */
#include <errno.h>
#include <lz4frame.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"

int d9_lz4_is_frame(const void *p, size_t n)
{
	static const uint8_t magic[4] = { 0x04, 0x22, 0x4d, 0x18 };

	return n >= 4 && !memcmp(p, magic, 4);
}

int d9_lz4_compress(const void *in, size_t n, void **out, size_t *outlen)
{
	LZ4F_preferences_t prefs;
	size_t cap, r;
	void *buf;

	memset(&prefs, 0, sizeof(prefs));
	prefs.frameInfo.blockSizeID = LZ4F_max4MB;
	prefs.frameInfo.blockMode = LZ4F_blockLinked;
	prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
	prefs.frameInfo.contentSize = n;
	prefs.compressionLevel = 0; /* the fast default */
	cap = LZ4F_compressFrameBound(n, &prefs);
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	r = LZ4F_compressFrame(buf, cap, in, n, &prefs);
	if (LZ4F_isError(r)) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*outlen = r;
	return 0;
}

/* Room for at least @need bytes (capped at o->max), doubling. */
static int out_room(struct d9_lz4_out *o, size_t need)
{
	size_t nc;
	int ret;

	if (need > o->max)
		need = o->max;
	nc = o->cap ? o->cap : need;
	while (nc < need)
		nc = nc > o->max / 2 ? o->max : nc * 2;
	if (nc == o->cap)
		return 0;
	ret = o->resize(o, nc);
	if (!ret)
		o->cap = nc;
	return ret;
}

int d9_lz4_inflate(const void *in, size_t n, struct d9_lz4_out *o)
{
	const uint8_t *src = in;
	size_t done, hn = n, r;
	LZ4F_dctx *dctx;
	LZ4F_frameInfo_t fi;
	int ret;

	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		return -ENOMEM;
	r = LZ4F_getFrameInfo(dctx, &fi, src, &hn);
	if (LZ4F_isError(r)) {
		ret = -EBADMSG;
		goto out;
	}
	done = hn;
	if (fi.contentSize > o->max) {
		ret = -EFBIG;
		goto out;
	}
	/* one frame of known size fits at once; more frames grow it */
	ret = out_room(o, fi.contentSize ? (size_t)fi.contentSize + 65536 :
					   n * 4 + 65536);
	while (!ret && done < n) {
		size_t sn = n - done, dn;

		if (o->cap - o->len < 65536) {
			ret = out_room(o, o->len + 65536);
			if (!ret && o->cap == o->len)
				ret = -EFBIG;	/* full at the bound */
			if (ret)
				break;
		}
		dn = o->cap - o->len;
		r = LZ4F_decompress(dctx, o->buf + o->len, &dn, src + done, &sn,
				    NULL);
		if (LZ4F_isError(r)) {
			ret = -EBADMSG;
			break;
		}
		o->len += dn;
		done += sn;
		if ((!sn && !dn) || (done == n && r))
			ret = -ENODATA; /* cut short */
	}
	if (!ret && r)
		ret = -ENODATA;	/* the frame header, and no end */
out:
	LZ4F_freeDecompressionContext(dctx);
	return ret;
}

static int heap_resize(struct d9_lz4_out *o, size_t cap)
{
	uint8_t *nb = realloc(o->buf, cap);

	if (!nb)
		return -ENOMEM;
	o->buf = nb;
	return 0;
}

int d9_lz4_decompress(const void *in, size_t n, void **out, size_t *outlen)
{
	struct d9_lz4_out o = { .max = SIZE_MAX / 4, .resize = heap_resize };
	int ret = d9_lz4_inflate(in, n, &o);

	if (ret) {
		free(o.buf);
		return ret;
	}
	*out = o.buf;
	*outlen = o.len;
	return 0;
}
