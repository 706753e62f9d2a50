/* SPDX-License-Identifier: MIT */
/*
 * kschema.h - the sched.* event types (docs/format.md): their names and
 * fields, the one definition that the recorder's encoder (ktrace.c) and
 * the decoder of raw kernel chunks (kchunk.c) both use.
 */
#ifndef DIAL9_KSCHEMA_H
#define DIAL9_KSCHEMA_H

#include <stdint.h>

#include "dial9.h"

enum d9_ks {
	D9_KS_SWITCH_OUT = 1,
	D9_KS_SWITCH_IN,
	D9_KS_WAKING,
	D9_KS_WAKEUP,
	D9_KS_MIGRATE,
	D9_KS_EXIT,
	D9_KS_LOST,
	D9_KS_COMM,
	D9_KS_SCHEDSTAT,
	D9_KS_UNFOLLOWED,
	D9_KS_STACK,
	D9_KS_MAPPING,
	D9_KS_CPU_SWITCH,
	D9_KS_OCCUPANTS,
	D9_KS_OCCUPANT_COMM,
	D9_KS_RING,
	D9_KS_SAMPLE,
	D9_KS_THREAD_NAME,
	D9_KS_UNKNOWN,
	D9_KS_N
};

struct d9_kschema {
	const char *name;
	const struct dial9_field *f;
	uint32_t n;
};

/* By enum d9_ks; entry 0 is empty.  Every type is of kind instant. */
extern const struct d9_kschema d9_kschemas[D9_KS_N];

#endif /* DIAL9_KSCHEMA_H */
