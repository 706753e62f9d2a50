// SPDX-License-Identifier: MIT
/*
 * kconv.c - a trace with kernel chunks (format version 2) rewritten as
 * the encoding pipeline wrote it before (version 1): every kernel record
 * encoded as sched.* events by ktrace.c, the CPUs merged in time order,
 * with the records read through <linux/dial9.h>'s structs, not through
 * the layout frame.  A test reads both with dial9 and compares: the
 * decoder of chunks must give what the old pipeline gave.
 *
 *   kconv IN OUT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/dial9.h>

#include "dial9.h"
#include "format/wire.h"
#include "ksched/ksched.h"

#define MAXQ 1024

static void die(const char *what)
{
	fprintf(stderr, "kconv: %s\n", what);
	exit(1);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *b;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		die("cannot open the input");
	b = malloc((size_t)st.st_size + 1);
	if (!b || read(fd, b, (size_t)st.st_size) != st.st_size)
		die("cannot read the input");
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	if (d9_get_varint(p, end, &v))
		die("bad varint");
	return v;
}

static struct d9_kq q[MAXQ];
static uint64_t period_ns;

/* A kernel stream [p, end): its chunks' records queued. */
static void kernel_stream(const uint8_t *p, const uint8_t *end)
{
	p += D9_HEADER_LEN;
	while (p < end) {
		uint8_t tag = *p++;
		uint64_t n = varint(&p, end);
		const uint8_t *f = p, *fend = p + n;

		if (tag > D9_F_CONTROL_MAX || fend > end)
			die("a kernel stream holds only control frames");
		if (tag == D9_F_KLAYOUT) {
			uint64_t sl = varint(&f, fend);

			f += sl;
			varint(&f, fend);		/* ABI */
			period_ns = varint(&f, fend);
		} else if (tag == D9_F_KCHUNK) {
			uint64_t id = varint(&f, fend);

			if (id >= MAXQ)
				die("queue id too large");
			if (d9_kq_push(&q[id], f, (size_t)(fend - f)))
				die("no memory");
		}
		p = fend;
	}
}

int main(int argc, char **argv)
{
	struct dial9_decoder *dec;
	struct dial9_record rec;
	struct d9_ktrace kt = { 0 };
	uint64_t starts[1 << 16];
	size_t len, ns = 0;
	uint8_t *in;
	FILE *out;
	int ret;

	if (argc != 3)
		die("usage: kconv IN OUT");
	in = slurp(argv[1], &len);
	if (dial9_decoder_new(&dec, in, len))
		die("no memory");
	while ((ret = dial9_decoder_next(dec, &rec)) > 0)
		if (rec.kind == DIAL9_RECORD_STREAM && ns < 65535)
			starts[ns++] = rec.offset;
	if (ret < 0)
		die("the input does not decode");
	dial9_decoder_free(dec);
	starts[ns] = len;
	out = fopen(argv[2], "w");
	if (!out)
		die("cannot open the output");
	for (size_t i = 0; i < ns; i++) {
		uint8_t *s = in + starts[i];
		size_t sl = starts[i + 1] - starts[i];

		if (sl > D9_HEADER_LEN && s[D9_HEADER_LEN] == D9_F_KLAYOUT) {
			kernel_stream(s, s + sl);
			continue;
		}
		s[4] = 1;		/* version 1: no chunk in it */
		fwrite(s, 1, sl, out);
	}
	/* every CPU's records merged by time, equal times in queue order */
	if (dial9_encoder_new(&kt.enc) || d9_ktrace_begin(&kt))
		die("no memory");
	kt.sample_period_ns = period_ns;
	for (;;) {
		const struct dial9_rec_header *best = NULL;
		unsigned int bq = 0;

		for (unsigned int i = 0; i < MAXQ; i++) {
			const struct dial9_rec_header *h;

			while ((h = d9_kq_peek(&q[i])) && h->type == DIAL9_REC_PAD)
				q[i].off += h->size;
			if (h && (!best || h->time_ns < best->time_ns)) {
				best = h;
				bq = i;
			}
		}
		if (!best)
			break;
		if (d9_ktrace_add(&kt, best))
			die("a record the old pipeline refused");
		q[bq].off += best->size;
	}
	{
		const void *data;
		uint8_t *b;

		if (d9_ktrace_end(&kt, &data, &len))
			die("no memory");
		b = (uint8_t *)data;
		b[4] = 1;
		fwrite(b, 1, len, out);
	}
	if (fclose(out))
		die("cannot write the output");
	return 0;
}
