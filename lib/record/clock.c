// SPDX-License-Identifier: MIT
/*
 * clock.c - CLOCK_MONOTONIC nanoseconds, cheaply. Where the TSC is
 * invariant, timestamps are rdtsc converted with a multiplier measured
 * against clock_gettime(CLOCK_MONOTONIC) (anchored, then refined by the
 * flush thread over a growing baseline); elsewhere clock_gettime.
 */
#include <cpuid.h>
#include <time.h>

#include "record/record.h"

struct d9_clock_state d9_clk;

static uint64_t first_tsc, first_mono; /* flush thread / init only */

bool d9_clock_uses_tsc(void)
{
	return atomic_load(&d9_clk.use_tsc);
}

uint64_t dial9_now_ns(void)
{
	return d9_now();
}

static bool tsc_invariant(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return false;
	__get_cpuid(0x80000007, &a, &b, &c, &d);
	return d & (1u << 8);
}

/* A (tsc, mono) pair read as close together as we can manage. */
static void sample(uint64_t *tsc, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 7; i++) {
		uint64_t t1 = d9_rdtsc(), m = d9_clock_gettime_ns();
		uint64_t t2 = d9_rdtsc();

		if (t2 - t1 < best) {
			best = t2 - t1;
			*tsc = t1 + (t2 - t1) / 2;
			*mono = m;
		}
	}
}

static void publish(uint64_t tsc0, uint64_t mono0, uint64_t mult)
{
	unsigned int s = atomic_load_explicit(&d9_clk.seq, memory_order_relaxed);

	/* seq odd first: release stores keep it before the data */
	atomic_store_explicit(&d9_clk.seq, s + 1, memory_order_relaxed);
	atomic_store_explicit(&d9_clk.tsc0, tsc0, memory_order_release);
	atomic_store_explicit(&d9_clk.mono0, mono0, memory_order_release);
	atomic_store_explicit(&d9_clk.mult, mult, memory_order_release);
	atomic_store_explicit(&d9_clk.seq, s + 2, memory_order_release);
}

/* 32.32 fixed-point ns per tick; 0 if the rate is implausible. */
static uint64_t rate(uint64_t dtsc, uint64_t dns)
{
	uint64_t mult;

	if (!dtsc || dns < 1000000)
		return 0;
	mult = (uint64_t)(((unsigned __int128)dns << 32) / dtsc);
	/* between 10 GHz and 100 MHz */
	if (mult < (1ull << 32) / 10 || mult > (10ull << 32))
		return 0;
	return mult;
}

int d9_clock_init(int mode)
{
	uint64_t t1, m1, mult;
	struct timespec ts = { 0, 5000000 };

	if (mode == DIAL9_CLOCK_GETTIME ||
	    (mode == DIAL9_CLOCK_AUTO && !tsc_invariant())) {
		atomic_store(&d9_clk.use_tsc, 0);
		return DIAL9_CLOCK_GETTIME;
	}
	sample(&first_tsc, &first_mono);
	nanosleep(&ts, NULL);
	sample(&t1, &m1);
	mult = rate(t1 - first_tsc, m1 - first_mono);
	if (!mult) {
		atomic_store(&d9_clk.use_tsc, 0);
		return DIAL9_CLOCK_GETTIME;
	}
	publish(t1, m1, mult);
	atomic_store(&d9_clk.use_tsc, 1);
	return DIAL9_CLOCK_TSC;
}

void d9_clock_refine(void)
{
	uint64_t t, m, mult;

	if (!atomic_load(&d9_clk.use_tsc))
		return;
	sample(&t, &m);
	mult = rate(t - first_tsc, m - first_mono);
	if (mult)
		publish(t, m, mult);
}
