// SPDX-License-Identifier: MIT
/*
 * cli_lz4.c - LZ4 segments decompressed into memory, within a bound: a
 * small file must not become gigabytes of memory before it is judged.
 * The decompression itself is the library's (d9_lz4_inflate).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cli.h"
#include "pipeline/pipeline.h"

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

/* d9_lz4_inflate()'s buffer in anonymous memory. */
static int map_resize(struct d9_lz4_out *o, size_t cap)
{
	void *nb = o->buf ? mremap(o->buf, o->cap, cap, MREMAP_MAYMOVE) :
			    mmap(NULL, cap, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (nb == MAP_FAILED)
		return -ENOMEM;
	o->buf = nb;
	return 0;
}

/*
 * An LZ4 frame (or several) decompressed into anonymous memory
 * (d9_lz4_inflate(), within cli_inflate_max()), shrunk to its length so
 * that cli_unmap()'s munmap() frees it all.
 */
int cli_lz4_inflate(const uint8_t *in, size_t n, struct cli_file *f)
{
	struct d9_lz4_out o = { .max = cli_inflate_max(), .resize = map_resize };
	int ret = d9_lz4_inflate(in, n, &o);

	if (ret || !o.len) {
		if (o.buf)
			munmap(o.buf, o.cap);
		f->data = NULL;	/* not the caller's mapping of the input */
		f->len = 0;
		return ret;
	}
	if (o.cap > o.len) {
		void *nb = mremap(o.buf, o.cap, o.len, 0);

		if (nb != MAP_FAILED)
			o.buf = nb;
	}
	f->data = o.buf;
	f->len = o.len;
	return 0;
}
