/* SPDX-License-Identifier: MIT */
/*
 * lttng_tp.h - the LTTng-UST tracepoint provider the record benchmark
 * compares dial9 with: one event with the same payload as dial9's
 * bench.event (two u64 fields).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER dial9_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(DIAL9_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define DIAL9_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(dial9_bench, event,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, a, a)
		lttng_ust_field_integer(uint64_t, b, b)
	)
)

#endif /* DIAL9_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
