/* SPDX-License-Identifier: MIT */
/* ktrace.h - scheduler records (<linux/dial9.h> layout) as sched.* events. */
#ifndef DIAL9_KTRACE_H
#define DIAL9_KTRACE_H

#include <stddef.h>
#include <stdint.h>

struct dial9_encoder;
struct dial9_rec_header;

struct d9_ktrace {
	struct dial9_encoder *enc;
	uint32_t defined;	/* schemas written in this stream */
	uint64_t nevents;	/* events in this stream */
	uint64_t lost;		/* records the kernel reported lost, total */
	uint64_t unfollowed;	/* UNFOLLOWED records, total */
};

/* Start a stream (one per flush). */
int d9_ktrace_begin(struct d9_ktrace *kt);
/* Add one record; records of unknown types are skipped. */
int d9_ktrace_add(struct d9_ktrace *kt, const struct dial9_rec_header *rec);
/* End the stream; the bytes stay valid until the next begin. */
int d9_ktrace_end(struct d9_ktrace *kt, const void **data, size_t *len);

#endif
