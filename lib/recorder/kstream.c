// SPDX-License-Identifier: MIT
/*
 * kstream.c - the kernel's scheduler records into segments as they were
 * written (docs/format.md, "Kernel chunks"): each CPU's bytes, as the
 * reader thread copied them out of its ring, become one chunk frame of a
 * stream, written from where they lie with one writev.  Nothing here
 * decodes or encodes a record, or reads one again: the ring parser, which
 * checks each record's type and size as it takes an inbox, hands the few
 * the recorder needs (names, the processes whose mappings the stacks
 * need, the counts of the stats) to d9_kstream_seen(); a stream that
 * reaches a batch's size ends at a record's end (cut()).
 */
#include <errno.h>
#include <string.h>
#include <linux/dial9.h>

#include "recorder/recorder.h"

int d9_kstream_put_mapping(void *ctx, uint64_t ts, const struct d9_mapping *m)
{
	struct recorder *r = ctx;

	return d9_ktrace_mapping(&r->kt, ts, m);
}

void d9_kstream_maps_again(struct recorder *r)
{
	uint64_t seg;

	if (!r->maps_on)
		return;
	seg = d9_segw_index(r->segw);
	if (seg == r->maps_seg)
		return;
	r->maps_seg = seg;
	if (d9_kmaps_follow_again(&r->maps, r->maps_floor,
				  d9_kstream_put_mapping, r))
		r->sched_error = -ENOMEM;
}

void d9_kstream_encoded(struct recorder *r)
{
	const void *data;
	size_t len;

	if (r->kt.nevents && !d9_ktrace_end(&r->kt, &data, &len)) {
		d9_segw_write_raw(r->segw, data, len);
		r->sched_events += r->kt.nevents;
	}
	if (d9_ktrace_begin(&r->kt))
		r->sched_error = -ENOMEM;
}

int d9_kstream_init(struct recorder *r, const char *backend,
		    uint64_t sample_period_ns)
{
	struct d9_kstream *s = &r->ks_out;
	size_t n;

	d9_put_header(s->head);
	n = d9_klayout_frame(s->head + D9_HEADER_LEN,
			     sizeof(s->head) - D9_HEADER_LEN, backend,
			     sample_period_ns);
	if (!n)
		return -EOVERFLOW;
	s->head_len = D9_HEADER_LEN + n;
	s->niov = 0;
	s->bytes = 0;
	s->records = 0;
	return 0;
}

/* Write the stream gathered, ended by @horizon (0: none) and its batch
 * end frame. */
static uint64_t stream_write(struct recorder *r, uint64_t horizon)
{
	struct d9_kstream *s = &r->ks_out;
	uint8_t *p = s->tail;
	uint64_t n = s->records;

	if (!s->niov)
		return 0;
	/*
	 * The mappings its stacks are read against go first: those read for
	 * them, and after a rotation (a segment that filled up) all of them
	 * again.  (A stream that does not fit where the segment is opens the
	 * next one: then they follow it, at the next stream or take.)
	 */
	d9_kstream_maps_again(r);
	d9_kstream_encoded(r);
	if (horizon) {
		*p++ = D9_F_KHORIZON;
		*p++ = 8;
		p = d9_put_u64le(p, horizon);
	}
	s->bytes += (size_t)(p - s->tail);
	p = d9_put_batch_end(p, s->bytes);
	s->iov[s->niov].iov_base = s->tail;
	s->iov[s->niov++].iov_len = (size_t)(p - s->tail);
	d9_segw_write_stream(r->segw, s->iov, s->niov, n);
	r->sched_events += n;
	s->niov = 0;
	s->bytes = 0;
	s->records = 0;
	return n;
}

/* A piece of @n bytes of CPU @cpu's records, as one chunk frame. */
static void add_piece(struct recorder *r, unsigned int cpu, const void *p,
		      size_t n)
{
	struct d9_kstream *s = &r->ks_out;
	uint8_t *h, *e;
	uint8_t id[D9_MAX_VARINT];
	size_t idl = (size_t)(d9_put_varint(id, cpu) - id);

	if (s->niov + 3 > KS_IOV)	/* two here, one for the tail */
		stream_write(r, 0);
	if (!s->niov) {
		s->iov[0].iov_base = s->head;
		s->iov[0].iov_len = s->head_len;
		s->niov = 1;
		s->bytes = s->head_len;
	}
	h = s->heads[s->niov];
	h[0] = D9_F_KCHUNK;
	e = d9_put_varint(h + 1, idl + n);
	memcpy(e, id, idl);
	e += idl;
	s->iov[s->niov].iov_base = h;
	s->iov[s->niov++].iov_len = (size_t)(e - h);
	s->iov[s->niov].iov_base = (void *)p;
	s->iov[s->niov++].iov_len = n;
	s->bytes += (size_t)(e - h) + n;
}

void d9_kstream_seen(void *ctx, const struct dial9_rec_header *h)
{
	struct recorder *r = ctx;

	if (h->type == DIAL9_REC_COMM &&
	    h->size >= sizeof(struct dial9_rec_comm))
		d9_names_see(&r->names, (const void *)h);
	if (r->maps_on && h->type != DIAL9_REC_LOST &&
	    h->type != DIAL9_REC_UNFOLLOWED &&
	    d9_kmaps_follow_rec(&r->maps, h, d9_kstream_put_mapping, r))
		r->sched_error = -ENOMEM;
	d9_ktrace_count(&r->kt, h);
}

/* The end of the whole records of @b that fit in @room (at least one). */
static size_t cut(const unsigned char *b, size_t n, size_t room)
{
	size_t at = d9_kq_fit(b, n, room);
	uint16_t size = ((const struct dial9_rec_header *)(const void *)b)->size;

	if (at)
		return at;
	/* the first alone is larger than @room: it goes by itself */
	return size >= 8 && size <= n ? size : n;
}

int d9_kstream_chunk(void *ctx, unsigned int cpu, const void *p, size_t n,
		     uint64_t nrec)
{
	struct recorder *r = ctx;
	struct d9_kstream *s = &r->ks_out;
	const unsigned char *b = p;

	s->records += nrec;
	while (n) {
		size_t bytes = s->niov ? s->bytes : s->head_len;
		size_t room = r->kt_batch_bytes > bytes + 64 ?
			      r->kt_batch_bytes - bytes - 64 : 0;
		size_t piece = n;

		/* a batch's worth: the stream ends at a record's end */
		if (n > room) {
			if (s->niov && room < n / 2) {
				stream_write(r, 0);
				continue;
			}
			piece = cut(b, n, room);
		}
		add_piece(r, cpu, b, piece);
		b += piece;
		n -= piece;
		if (n)
			stream_write(r, 0);
	}
	return 0;
}

uint64_t d9_kstream_end(struct recorder *r, uint64_t horizon)
{
	return stream_write(r, horizon);
}
