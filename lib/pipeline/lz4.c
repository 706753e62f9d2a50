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

int d9_lz4_decompress(const void *in, size_t n, void **out, size_t *outlen)
{
	LZ4F_dctx *dctx;
	const uint8_t *src = in;
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0, done = 0;
	int ret = 0;

	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		return -ENOMEM;
	while (done < n) {
		size_t sn = n - done, dn, r;

		if (cap - len < 65536) {
			size_t nc = cap ? cap * 2 : (n * 4 > 65536 ? n * 4 : 65536);
			uint8_t *nb = realloc(buf, nc);

			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			buf = nb;
			cap = nc;
		}
		dn = cap - len;
		r = LZ4F_decompress(dctx, buf + len, &dn, src + done, &sn, NULL);
		if (LZ4F_isError(r)) {
			ret = -EBADMSG;
			break;
		}
		len += dn;
		done += sn;
		if (!sn && !dn) { /* no progress: truncated input */
			ret = -ENODATA;
			break;
		}
		if (done == n && r != 0)
			ret = -ENODATA; /* the last frame is incomplete */
	}
	LZ4F_freeDecompressionContext(dctx);
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*outlen = len;
	return 0;
}
