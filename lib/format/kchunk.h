/* SPDX-License-Identifier: MIT */
/*
 * kchunk.h - inside the decoder: kernel chunks (format version 2), the
 * kernel's records as it wrote them, queued per CPU, merged in time order
 * up to each horizon, and given out as the sched.* events of kschema.h.
 * decode.c calls it; it calls nothing of decode.c.
 */
#ifndef DIAL9_KCHUNK_H
#define DIAL9_KCHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9.h"

struct d9_kdec;

/* A layout frame's payload (@off: the frame's offset, for errors). */
int d9_kdec_layout(struct d9_kdec **k, const uint8_t *p, size_t n);
/* A chunk frame's payload: kept by reference (the input stays alive). */
int d9_kdec_chunk(struct d9_kdec **k, const uint8_t *p, size_t n,
		  uint64_t off);
/* A horizon frame's value. */
void d9_kdec_horizon(struct d9_kdec *k, uint64_t horizon);
/* A stream header: its layout and its occupants mark are forgotten. */
void d9_kdec_stream(struct d9_kdec *k);
/*
 * The next event, in time order, of a record at or before the horizon
 * (every record, with @end): 1 and *@rec filled, 0 for none yet, or
 * -EBADMSG with *@err_off the chunk at fault.
 */
int d9_kdec_next(struct d9_kdec *k, bool end, struct dial9_record *rec,
		 uint64_t *err_off);
void d9_kdec_free(struct d9_kdec *k);

#endif /* DIAL9_KCHUNK_H */
