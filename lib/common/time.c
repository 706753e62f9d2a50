// SPDX-License-Identifier: MIT
/*
 * time.c - the deadlines of timed waits (common.h; the clocks are inline
 * there).  The record path's cheap clock (TSC) is record/clock.c.
 */
#include <time.h>

#include "common/common.h"

struct timespec d9_deadline_ms(uint64_t ms)
{
	return d9_ns_timespec(d9_clock_gettime_ns() + ms * D9_NS_PER_MS);
}
