/* SPDX-License-Identifier: MIT */
/* wire.h - byte-level pieces of the trace format (docs/format.md). */
#ifndef DIAL9_WIRE_H
#define DIAL9_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dial9.h"

#define D9_MAGIC0 0x00
#define D9_MAGIC1 0xD9
#define D9_MAGIC2 'T'
#define D9_MAGIC3 'R'
/* Written by this library; readers take D9_VERSION_MIN up to it. */
#define D9_VERSION 2
#define D9_VERSION_MIN 1
#define D9_HEADER_LEN 5

/* Control frames: tag, varint payload length, payload. */
enum {
	D9_F_HEADER = 0x00, /* not length-prefixed: magic + version */
	D9_F_SCHEMA = 0x01,
	D9_F_STRING = 0x02,
	D9_F_TS_RESET = 0x03,
	D9_F_METADATA = 0x04,
	D9_F_CLOCK_SYNC = 0x05,
	D9_F_THREAD = 0x06,
	D9_F_BATCH_END = 0x07,
	/* version 2: the kernel's records as it wrote them (kchunk.c) */
	D9_F_KLAYOUT = 0x08,
	D9_F_KCHUNK = 0x09,
	D9_F_KHORIZON = 0x0a,
	D9_F_CONTROL_MAX = 0x3f,
	D9_F_EVENT_BASE = 0x40, /* 0x40..0xfe: event, type id = tag - 0x40 */
	D9_F_EVENT_EXT = 0xff,  /* event, varint type id follows */
};

#define D9_EVENT_INLINE_IDS (D9_F_EVENT_EXT - D9_F_EVENT_BASE)
/* Largest timestamp delta written as a delta; beyond it, a reset. */
#define D9_MAX_DELTA 0xffffffffull
#define D9_MAX_VARINT 10

/*
 * The encoder's fast path for schemas of U64 and BOOL fields only (the
 * kernel's sched.* records): @v holds one value per field, a BOOL as
 * 0 or 1.  -ENOENT for another schema.  In encode.c.
 */
struct dial9_encoder;
int d9_encoder_event_u64(struct dial9_encoder *e, uint32_t id, uint64_t ts,
			 const uint64_t *v);

/* kernel layout frame: field flags */
#define D9_KL_SIGNED 0x1	/* two's complement */
#define D9_KL_ARRAY 0x2		/* u64s from offset, as many as field "nr" */
/* the type number of the header every record starts with */
#define D9_KL_HEADER 0xffff
/* the queue of a chunk whose records are in time order already */
#define D9_KQ_MERGED 0xffffffffu

/* Wire classes: top three bits of a field type. */
enum { D9_W_VARINT = 0, D9_W_FIXED64 = 1, D9_W_LEN = 2 };
#define D9_WIRE(type) ((uint8_t)(type) >> 5)

/* Limits every reader enforces, and so every writer must respect. */
#define D9_MAX_FIELDS 255
#define D9_MAX_TYPE_ID 65535
#define D9_MAX_STRING_ID ((1u << 20) - 1)
#define D9_MAX_NAME 1024

static inline uint8_t *d9_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/*
 * The varint at *@p, before @end, into *@v, *@p past it: 0; 1 when the
 * input ends inside it; -1 when it is corrupt (over 10 bytes, the 10th
 * above 1).  The decoder and the kernel chunks' layout read them here.
 */
static inline int d9_get_varint(const uint8_t **p, const uint8_t *end,
				uint64_t *v)
{
	uint64_t x = 0;

	for (int i = 0; i < D9_MAX_VARINT; i++) {
		uint8_t b;

		if (*p >= end)
			return 1;
		b = *(*p)++;
		if (i == 9 && b > 1)
			return -1;	/* more than 64 bits */
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

static inline unsigned int d9_varint_len(uint64_t v)
{
	unsigned int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline uint64_t d9_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t d9_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *d9_put_u64le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 8;
}

static inline uint64_t d9_get_u64le(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint8_t *d9_put_bytes(uint8_t *p, const void *s, size_t n)
{
	p = d9_put_varint(p, n);
	if (n)
		memcpy(p, s, n);
	return p + n;
}

/*
 * A batch end frame at @p for a stream of @stream_bytes before it (from
 * its header); its end.  At most 2 + D9_MAX_VARINT bytes.
 */
static inline uint8_t *d9_put_batch_end(uint8_t *p, uint64_t stream_bytes)
{
	uint8_t len[D9_MAX_VARINT];
	size_t n = (size_t)(d9_put_varint(len, stream_bytes) - len);

	*p++ = D9_F_BATCH_END;
	*p++ = (uint8_t)n;
	memcpy(p, len, n);
	return p + n;
}

static inline uint8_t *d9_put_header(uint8_t *p)
{
	p[0] = D9_MAGIC0;
	p[1] = D9_MAGIC1;
	p[2] = D9_MAGIC2;
	p[3] = D9_MAGIC3;
	p[4] = D9_VERSION;
	return p + D9_HEADER_LEN;
}

/* Is @t one of the field types (enum dial9_type)? */
static inline bool d9_type_known(uint8_t t)
{
	switch (t) {
	case DIAL9_U64:
	case DIAL9_I64:
	case DIAL9_BOOL:
	case DIAL9_ISTR:
	case DIAL9_F64:
	case DIAL9_STR:
	case DIAL9_BYTES:
		return true;
	}
	return false;
}

/* Worst-case encoded size of one field value. */
static inline size_t d9_value_max(uint8_t type, size_t len)
{
	switch (D9_WIRE(type)) {
	case D9_W_VARINT:
		return D9_MAX_VARINT;
	case D9_W_FIXED64:
		return 8;
	default:
		return D9_MAX_VARINT + len;
	}
}

/*
 * One field value @v of type @type at @p (at most d9_value_max() bytes);
 * an interned string (DIAL9_ISTR) is written as its id *@sid (read for
 * that type only).  Returns the end.  The encoder and the record path
 * both write values here.
 */
static inline uint8_t *d9_put_value(uint8_t *p, uint8_t type,
				    const struct dial9_value *v,
				    const uint32_t *sid)
{
	switch (type) {
	case DIAL9_U64:
		return d9_put_varint(p, v->u64);
	case DIAL9_I64:
		return d9_put_varint(p, d9_zigzag(v->i64));
	case DIAL9_BOOL:
		*p++ = v->b ? 1 : 0;
		return p;
	case DIAL9_ISTR:
		return d9_put_varint(p, *sid);
	case DIAL9_F64: {
		uint64_t bits;

		memcpy(&bits, &v->f64, 8);
		return d9_put_u64le(p, bits);
	}
	default: /* STR, BYTES */
		return d9_put_bytes(p, v->str.ptr, v->str.len);
	}
}

#endif /* DIAL9_WIRE_H */
