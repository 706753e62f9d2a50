/* SPDX-License-Identifier: MIT */
/*
 * bench_time.h - how the record benchmarks time a loop: the calling
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that time in which
 * other processes on this shared machine hold the CPU is not counted,
 * over BENCH_ROUNDS rounds, reporting the median round; and the wall
 * clock the benchmarks pace and time runs by (bench_mono_ns()).
 */
#ifndef BENCH_TIME_H
#define BENCH_TIME_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define BENCH_ROUNDS 5

static inline uint64_t bench_thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t bench_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of n values (sorts them). */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* BENCH_TIME_H */
