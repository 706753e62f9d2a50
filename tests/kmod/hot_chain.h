/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A known hot function for CPU profiles: spin() calls hot() until the
 * calling thread has used @ms of CPU time, so nearly every on-CPU sample
 * of it is inside hot(), called from spin() (the rest mostly in the
 * system call that reads the thread's CPU time).  Shared by the module's
 * test (tests/kmod/sample_test.c) and libdial9's (tests/sched/).  Build
 * with -fno-omit-frame-pointer.
 */
#ifndef DIAL9_HOT_CHAIN_H
#define DIAL9_HOT_CHAIN_H

#include <stdint.h>
#include <time.h>

/* What hot() knows: the return address inside spin() to expect. */
struct hot {
	uintptr_t in_spin;
	uint64_t sink;
};

static __attribute__((noinline, noclone)) void hot(struct hot *h)
{
	uint64_t x = h->sink;

	h->in_spin = (uintptr_t)__builtin_return_address(0);
	for (int i = 0; i < 200000; i++) {
		asm volatile("" : "+r"(x) : : "memory");
		x = x * 31 + 7;
	}
	h->sink = x;
}

static inline uint64_t hot_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline, noclone, unused)) void spin(struct hot *h,
						    unsigned int ms)
{
	uint64_t end = hot_cpu_ns() + (uint64_t)ms * 1000000ull;

	/* the clock is a system call: read it once per few calls */
	while (hot_cpu_ns() < end)
		for (int i = 0; i < 8; i++)
			hot(h);
	asm volatile("" ::: "memory");	/* no tail call */
}

#endif /* DIAL9_HOT_CHAIN_H */
