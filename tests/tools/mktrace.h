/* SPDX-License-Identifier: MIT */
/*
 * mktrace.h - what mktrace.c's trace writers share with
 * mktrace_stacks.c and mktrace_samples.c: times, the sched.* schemas and
 * their events.
 */
#ifndef DIAL9_MKTRACE_H
#define DIAL9_MKTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dial9.h"

#define T0 1000000000000ull	/* ns: 1000 s of CLOCK_MONOTONIC */
/* The wall clock at T0 where a trace has a clock sync (synth, culprits):
 * 2025-12-01T00:00:00Z, so US(x) is 2025-12-01T00:00:00.000xxxZ. */
#define REAL0 1764547200000000000ull
#define US(x) (T0 + (uint64_t)((x) * 1000.0))

#define CHECK(x) do { if ((x) != 0) { fprintf(stderr, "mktrace: %s failed\n", #x); exit(1); } } while (0)

/* schema ids of sched_begin()'s stream (and s_stack_schemas()'s) */
enum { S_OUT = 1, S_IN, S_LOST, S_UNF, S_OUT0, S_IN0, S_WAKE, S_MIG, S_STACK,
	S_MAP, S_WSTACK, S_SPAN_B, S_SPAN_E,
	/* the occupants case (mktrace.c) */
	S_OUT11, S_IN12, S_CPUSW, S_OCC, S_OCOMM };

/* A stream of scheduler events of the sched.* schemas. */
void sched_begin(struct dial9_encoder *e, const char *host, const char *boot);
/* @waker (running on @cpu) wakes @tid */
void s_waking(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
	      uint64_t waker);
/* total_ns < 0: an older module's record, without totals; @next: the
 * task that ran next (0 the idle task) */
void s_outx(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
	    bool pre, long long total_ns, uint64_t count, uint64_t next);
/* wait_ns < 0: no wait measured (delay_known false); @prev: the task
 * that ran before */
void s_inx(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
	   long long wait_ns, long long total_ns, uint64_t count,
	   uint64_t prev);
/* End the stream, write it to DIR/SUB/NAME. */
void s_save(struct dial9_encoder *e, const char *dir, const char *sub,
	    const char *name);

/* mktrace_stacks.c: sched.stack and sched.mapping, as ktrace.c writes them */
void s_stack_schemas(struct dial9_encoder *e);
/* @n addresses, innermost first, of @tid (its own process) on CPU 0;
 * @waker: its stack as it woke a thread at @t */
void s_stack(struct dial9_encoder *e, double t, uint64_t tid,
	     const uint64_t *ips, size_t n, bool waker);
/* @id: the build-id in hex, "-" none, "auto" @path's, "vdso" ours */
void s_map(struct dial9_encoder *e, double t, uint64_t pid, uint64_t start,
	   uint64_t end, uint64_t off, const char *path, const char *id);
int symbols_case(const char *dir, const char *self, const char *stripped,
		 const char *garbage);
int frames_case(const char *dir);
int vdso_dump(const char *file);
int symtab_case(const char *in, const char *out);
int why_case(const char *dir);

/* mktrace_samples.c: sched.sample, for dial9 flame --on-cpu */
int samples_case(const char *dir);
void s_sample_schema(struct dial9_encoder *e);
/* A sample of @tid at 99 Hz, @n addresses innermost first, on CPU 0. */
void s_sample(struct dial9_encoder *e, double t, uint64_t tid,
	      const uint64_t *ips, size_t n, uint64_t missed);

#endif
