// SPDX-License-Identifier: MIT
/*
 * mktrace.c - traces for the export and report tests.
 *
 *   mktrace synth DIR    two segment files with exactly known content
 *                        (what check_export.js and report_browser.js expect)
 *   mktrace sched DIR    traces of scheduler losses and totals, one
 *                        directory per case (what check_sched.js expects)
 *   mktrace utf8 DIR     names cut inside a UTF-8 character (as the
 *                        kernel cuts comm at 15 bytes) and invalid bytes
 *                        in a string field
 *   mktrace clock DIR    a clock-sync pair at the ends of the ranges
 *   mktrace record DIR   a real recording through the perf backend: two
 *                        threads ping-pong through pipes inside spans,
 *                        with counters; exit 77 where perf is not permitted
 *   mktrace symbols|frames|why ...   stacks (mktrace_stacks.c)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dial9.h"
#include "mktrace.h"
#include "format/kschema.h"

enum { OUT = 1, IN, WAKING, COMM, BEGIN_REQ, END_REQ, BEGIN_Q, END_Q,
       BEGIN_FLUSH, INSTANT, COUNTER, GAUGE };

static const struct dial9_field f_out[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "state", DIAL9_U64 }, { "preempted", DIAL9_BOOL },
	{ "next_tid", DIAL9_U64 },
};
static const struct dial9_field f_in[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "runq_delay_ns", DIAL9_U64 }, { "delay_known", DIAL9_BOOL },
	{ "prev_tid", DIAL9_U64 },
};
static const struct dial9_field f_waking[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "waker_tid", DIAL9_U64 }, { "waker_pid", DIAL9_U64 },
	{ "from_irq", DIAL9_BOOL },
};
static const struct dial9_field f_migrate[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 },
	{ "from_cpu", DIAL9_U64 }, { "to_cpu", DIAL9_U64 },
};
static const struct dial9_field f_comm[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "name", DIAL9_ISTR },
};
static const struct dial9_field f_req_b[] = { { "id", DIAL9_U64 } };
static const struct dial9_field f_req_e[] = { { "status", DIAL9_U64 } };
static const struct dial9_field f_q_b[] = { { "table", DIAL9_ISTR } };
static const struct dial9_field f_q_e[] = { { "rows", DIAL9_U64 } };
static const struct dial9_field f_inst[] = { { "name", DIAL9_ISTR } };
static const struct dial9_field f_ctr[] = {
	{ "name", DIAL9_ISTR }, { "unit", DIAL9_ISTR }, { "value", DIAL9_U64 },
};
static const struct dial9_field f_gauge[] = {
	{ "name", DIAL9_ISTR }, { "unit", DIAL9_ISTR }, { "value", DIAL9_F64 },
};

static void sw_out(struct dial9_encoder *e, double t, uint64_t tid, bool pre)
{
	struct dial9_value v[6] = {
		dial9_u64(tid), dial9_u64(100), dial9_u64(0), dial9_u64(pre ? 0 : 1),
		dial9_bool(pre), dial9_u64(0),
	};

	CHECK(dial9_encoder_event(e, OUT, US(t), v));
}

static void sw_in(struct dial9_encoder *e, double t, uint64_t tid,
		  bool known, double delay_us)
{
	struct dial9_value v[6] = {
		dial9_u64(tid), dial9_u64(100), dial9_u64(0),
		dial9_u64((uint64_t)(delay_us * 1000)), dial9_bool(known),
		dial9_u64(0),
	};

	CHECK(dial9_encoder_event(e, IN, US(t), v));
}

static void preamble(struct dial9_encoder *e)
{
	const char *k[] = { "pid", "service" }, *v[] = { "100", "synth" };

	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_metadata(e, 2, k, v));
	CHECK(dial9_encoder_end_stream(e));
}

static void save(struct dial9_encoder *e, const char *dir, const char *name)
{
	char path[4096];
	size_t len;
	const void *d = dial9_encoder_data(e, &len);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(d, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
	dial9_encoder_clear(e);
}

/*
 * pid 100 "synth": worker-a (101, named by its stream) and worker-b (102,
 * named by sched.comm only).  Times in microseconds after T0.
 */
static int synth(const char *dir)
{
	struct dial9_encoder *e;
	struct dial9_value v[3];

	CHECK(dial9_encoder_new(&e));

	/* 1.dial9: the kernel's view, and worker-b's unfinished span */
	preamble(e);
	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_clock_sync(e, T0, REAL0));
	CHECK(dial9_encoder_schema(e, OUT, DIAL9_KIND_INSTANT, "sched.switch_out", 6, f_out));
	CHECK(dial9_encoder_schema(e, IN, DIAL9_KIND_INSTANT, "sched.switch_in", 6, f_in));
	CHECK(dial9_encoder_schema(e, WAKING, DIAL9_KIND_INSTANT, "sched.waking", 6, f_waking));
	CHECK(dial9_encoder_schema(e, COMM, DIAL9_KIND_INSTANT, "sched.comm", 3, f_comm));
	v[0] = dial9_u64(101); v[1] = dial9_u64(100); v[2] = dial9_istr("comm-a");
	CHECK(dial9_encoder_event(e, COMM, US(0), v));
	v[0] = dial9_u64(102); v[2] = dial9_istr("worker-b");
	CHECK(dial9_encoder_event(e, COMM, US(0), v));
	sw_in(e, 0, 101, false, 0);
	sw_out(e, 100, 101, false);
	sw_in(e, 100, 102, true, 30);
	{
		struct dial9_value w[6] = {
			dial9_u64(101), dial9_u64(100), dial9_u64(0),
			dial9_u64(102), dial9_u64(100), dial9_bool(false),
		};

		CHECK(dial9_encoder_event(e, WAKING, US(150), w));
	}
	sw_out(e, 200, 102, true);
	sw_in(e, 200, 101, true, 40);
	sw_out(e, 300, 101, false);
	sw_in(e, 300, 102, true, 100);
	sw_out(e, 400, 102, false);
	sw_in(e, 400, 101, true, 80);
	CHECK(dial9_encoder_end_stream(e));

	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_thread(e, 102, ""));
	CHECK(dial9_encoder_schema(e, BEGIN_FLUSH, DIAL9_KIND_SPAN_BEGIN, "flush", 0, NULL));
	CHECK(dial9_encoder_event(e, BEGIN_FLUSH, US(210), NULL));
	CHECK(dial9_encoder_end_stream(e));
	save(e, dir, "00000001.dial9");

	/* 2.dial9: worker-a's spans, instant, counter and gauge */
	preamble(e);
	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_thread(e, 101, "worker-a"));
	CHECK(dial9_encoder_schema(e, BEGIN_REQ, DIAL9_KIND_SPAN_BEGIN, "request", 1, f_req_b));
	CHECK(dial9_encoder_schema(e, END_REQ, DIAL9_KIND_SPAN_END, "request", 1, f_req_e));
	CHECK(dial9_encoder_schema(e, BEGIN_Q, DIAL9_KIND_SPAN_BEGIN, "db.query", 1, f_q_b));
	CHECK(dial9_encoder_schema(e, END_Q, DIAL9_KIND_SPAN_END, "db.query", 1, f_q_e));
	CHECK(dial9_encoder_schema(e, INSTANT, DIAL9_KIND_INSTANT, "dial9.instant", 1, f_inst));
	CHECK(dial9_encoder_schema(e, COUNTER, DIAL9_KIND_COUNTER, "dial9.counter", 3, f_ctr));
	CHECK(dial9_encoder_schema(e, GAUGE, DIAL9_KIND_GAUGE, "dial9.gauge", 3, f_gauge));
	v[0] = dial9_u64(7);
	CHECK(dial9_encoder_event(e, BEGIN_REQ, US(50), v));
	v[0] = dial9_istr("users<&>");
	CHECK(dial9_encoder_event(e, BEGIN_Q, US(80), v));
	v[0] = dial9_istr("checkpoint");
	CHECK(dial9_encoder_event(e, INSTANT, US(120.25), v));
	v[0] = dial9_istr("rx"); v[1] = dial9_istr("bytes"); v[2] = dial9_u64(100);
	CHECK(dial9_encoder_event(e, COUNTER, US(130), v));
	v[0] = dial9_u64(3);
	CHECK(dial9_encoder_event(e, END_Q, US(250), v));
	v[0] = dial9_istr("rx"); v[1] = dial9_istr("bytes"); v[2] = dial9_u64(50);
	CHECK(dial9_encoder_event(e, COUNTER, US(330), v));
	v[0] = dial9_u64(200);
	CHECK(dial9_encoder_event(e, END_REQ, US(350), v));
	v[0] = dial9_istr("queue_depth"); v[1] = dial9_istr("items");
	v[2] = dial9_f64(7.5);
	CHECK(dial9_encoder_event(e, GAUGE, US(500), v));
	CHECK(dial9_encoder_end_stream(e));
	save(e, dir, "00000002.dial9");
	dial9_encoder_free(e);
	return 0;
}

/* ---- scheduler totals and losses (check_sched.js) ---- */

/* switch_out and switch_in as dial9.ko writes them: with totals */
static const struct dial9_field f_out9[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "state", DIAL9_U64 }, { "preempted", DIAL9_BOOL },
	{ "next_tid", DIAL9_U64 }, { "runq_total_ns", DIAL9_U64 },
	{ "runq_count", DIAL9_U64 }, { "totals_known", DIAL9_BOOL },
};
static const struct dial9_field f_in9[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "runq_delay_ns", DIAL9_U64 }, { "delay_known", DIAL9_BOOL },
	{ "prev_tid", DIAL9_U64 }, { "runq_total_ns", DIAL9_U64 },
	{ "runq_count", DIAL9_U64 }, { "totals_known", DIAL9_BOOL },
};
static const struct dial9_field f_lost[] = {
	{ "cpu", DIAL9_U64 }, { "count", DIAL9_U64 },
};
/* The occupants case: as libdial9 writes them (format/kschema.c), but
 * without totals (delays from runq_delay_ns); the occupant's name as
 * older writers wrote it, without a cpu. */
static const struct dial9_field f_ocomm[] = {
	{ "occupant_tid", DIAL9_U64 }, { "occupant_pid", DIAL9_U64 },
	{ "name", DIAL9_ISTR },
};
static const struct dial9_field f_unf[] = {
	{ "pid", DIAL9_U64 }, { "parent_pid", DIAL9_U64 },
};

/* Schema @id as libdial9's sched.* type @t (format/kschema.c). */
static int ks_schema(struct dial9_encoder *e, uint32_t id, unsigned int t)
{
	return dial9_encoder_schema(e, id, DIAL9_KIND_INSTANT,
				    d9_kschemas[t].name, d9_kschemas[t].n,
				    d9_kschemas[t].f);
}

void sched_begin(struct dial9_encoder *e, const char *host, const char *boot)
{
	const char *k[] = { "pid", "host", "boot_id" };
	const char *v[] = { "1", host, boot };

	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_metadata(e, host ? 3 : 1, k, v));
	CHECK(dial9_encoder_end_stream(e));
	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_schema(e, S_OUT, DIAL9_KIND_INSTANT, "sched.switch_out", 9, f_out9));
	CHECK(dial9_encoder_schema(e, S_IN, DIAL9_KIND_INSTANT, "sched.switch_in", 9, f_in9));
	CHECK(dial9_encoder_schema(e, S_OUT0, DIAL9_KIND_INSTANT, "sched.switch_out", 6, f_out));
	CHECK(dial9_encoder_schema(e, S_IN0, DIAL9_KIND_INSTANT, "sched.switch_in", 6, f_in));
	CHECK(dial9_encoder_schema(e, S_LOST, DIAL9_KIND_INSTANT, "sched.lost", 2, f_lost));
	CHECK(dial9_encoder_schema(e, S_UNF, DIAL9_KIND_INSTANT, "sched.unfollowed", 2, f_unf));
	CHECK(dial9_encoder_schema(e, S_WAKE, DIAL9_KIND_INSTANT, "sched.waking", 6, f_waking));
	CHECK(dial9_encoder_schema(e, S_MIG, DIAL9_KIND_INSTANT, "sched.migrate", 4, f_migrate));
}

static void s_migrate(struct dial9_encoder *e, double t, uint64_t tid,
		      int from, int to)
{
	struct dial9_value v[4] = {
		dial9_u64(tid), dial9_u64(tid), dial9_u64((uint64_t)from),
		dial9_u64((uint64_t)to),
	};

	CHECK(dial9_encoder_event(e, S_MIG, US(t), v));
}

void s_waking(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
	      uint64_t waker)
{
	struct dial9_value v[6] = {
		dial9_u64(tid), dial9_u64(tid), dial9_u64((uint64_t)cpu),
		dial9_u64(waker), dial9_u64(waker), dial9_bool(false),
	};

	CHECK(dial9_encoder_event(e, S_WAKE, US(t), v));
}

/* REDACTED: a task outside the session (s_outx's @next, s_inx's @prev) */
#define REDACTED 4294967295u
void s_outx(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
	    bool pre, long long total_ns, uint64_t count, uint64_t next)
{
	struct dial9_value v[9] = {
		dial9_u64(tid), dial9_u64(tid), dial9_u64((uint64_t)cpu),
		dial9_u64(pre ? 0 : 1), dial9_bool(pre), dial9_u64(next),
		dial9_u64(total_ns < 0 ? 0 : (uint64_t)total_ns),
		dial9_u64(count), dial9_bool(total_ns >= 0),
	};

	CHECK(dial9_encoder_event(e, total_ns < 0 ? S_OUT0 : S_OUT, US(t), v));
}

static void s_out(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
		  bool pre, long long total_ns, uint64_t count)
{
	s_outx(e, t, tid, cpu, pre, total_ns, count, 0);
}

void s_inx(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
	   long long wait_ns, long long total_ns, uint64_t count,
	   uint64_t prev)
{
	struct dial9_value v[9] = {
		dial9_u64(tid), dial9_u64(tid), dial9_u64((uint64_t)cpu),
		dial9_u64(wait_ns < 0 ? 0 : (uint64_t)wait_ns),
		dial9_bool(wait_ns >= 0), dial9_u64(prev),
		dial9_u64(total_ns < 0 ? 0 : (uint64_t)total_ns),
		dial9_u64(count), dial9_bool(total_ns >= 0),
	};

	CHECK(dial9_encoder_event(e, total_ns < 0 ? S_IN0 : S_IN, US(t), v));
}

static void s_in(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
		 long long wait_ns, long long total_ns, uint64_t count)
{
	s_inx(e, t, tid, cpu, wait_ns, total_ns, count, 0);
}

static void s_lost(struct dial9_encoder *e, double t, int cpu, uint64_t n)
{
	struct dial9_value v[2] = { dial9_u64((uint64_t)cpu), dial9_u64(n) };

	CHECK(dial9_encoder_event(e, S_LOST, US(t), v));
}

void s_save(struct dial9_encoder *e, const char *dir, const char *sub,
	    const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	CHECK(dial9_encoder_end_stream(e));
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	save(e, path, name);
}

/* A task of the occupants case: tid, pid (REDACTED both: redacted). */
struct otask {
	uint64_t tid, pid, prio;
};

static void o_out(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
		  bool pre, uint64_t count, struct otask next)
{
	struct dial9_value v[11] = {
		dial9_u64(tid), dial9_u64(tid), dial9_u64((uint64_t)cpu),
		dial9_u64(pre ? 0 : 1), dial9_bool(pre), dial9_u64(next.tid),
		dial9_u64(0), dial9_u64(count), dial9_bool(false),
		dial9_u64(next.pid), dial9_u64(next.prio),
	};

	CHECK(dial9_encoder_event(e, S_OUT11, US(t), v));
}

static void o_in(struct dial9_encoder *e, double t, uint64_t tid, int cpu,
		 uint64_t wait_ns, uint64_t count, struct otask prev)
{
	struct dial9_value v[12] = {
		dial9_u64(tid), dial9_u64(tid), dial9_u64((uint64_t)cpu),
		dial9_u64(wait_ns), dial9_bool(true), dial9_u64(prev.tid),
		dial9_u64(0), dial9_u64(count), dial9_bool(false),
		dial9_u64(prev.pid), dial9_u64(prev.prio), dial9_u64(120),
	};

	CHECK(dial9_encoder_event(e, S_IN12, US(t), v));
}

static void o_sw(struct dial9_encoder *e, double t, int cpu, struct otask prev,
		 struct otask next)
{
	struct dial9_value v[7] = {
		dial9_u64((uint64_t)cpu), dial9_u64(prev.tid),
		dial9_u64(prev.pid), dial9_u64(prev.prio), dial9_u64(next.tid),
		dial9_u64(next.pid), dial9_u64(next.prio),
	};

	CHECK(dial9_encoder_event(e, S_CPUSW, US(t), v));
}

static void o_name(struct dial9_encoder *e, double t, struct otask p,
		   const char *name)
{
	struct dial9_value v[3] = {
		dial9_u64(p.tid), dial9_u64(p.pid),
		{ .type = DIAL9_ISTR, .str = { name, strlen(name) } },
	};

	CHECK(dial9_encoder_event(e, S_OCOMM, US(t), v));
}

/*
 * occupants/ (dial9.ko's DIAL9_CFG_OCCUPANTS; every wait is preempted or
 * woken onto a busy CPU).  CPU 0, named (a privileged recording): 801
 * runs 0-10, preempted by hog-a (2001 of 2000, prio 120), then hog-b
 * (2002, prio 130) 20-25, idle 25-28, other (3001, prio 110) 28-35, and
 * 801 again at 35 (a 25 us wait).  CPU 1, redacted: 802 runs 0-10,
 * preempted by a foreign task, another at 15, idle 18-20, another from
 * 20, 802 at 30 (20 us).  CPU 2: 803 blocks to idle at 10; unrecorded
 * switches follow (nobody recorded waits); it is woken at 25 while 4001
 * runs, 4002 runs from 30, and 803 at 40 (15 us): 4001's 5 us, 4002's
 * 10 us, though the gap began with the idle task.
 */
static void occupants_case(struct dial9_encoder *e, const char *dir)
{
	const struct otask idle = { 0, 0, 120 }, r = { REDACTED, REDACTED, 0 };
	const struct otask a = { 2001, 2000, 120 }, b = { 2002, 2000, 130 };
	const struct otask o = { 3001, 3001, 110 };
	const struct otask p = { 4001, 4001, 120 }, q = { 4002, 4002, 120 };

	sched_begin(e, NULL, NULL);
	CHECK(ks_schema(e, S_OUT11, D9_KS_SWITCH_OUT));
	CHECK(ks_schema(e, S_IN12, D9_KS_SWITCH_IN));
	CHECK(ks_schema(e, S_CPUSW, D9_KS_CPU_SWITCH));
	CHECK(ks_schema(e, S_OCC, D9_KS_OCCUPANTS));
	CHECK(dial9_encoder_schema(e, S_OCOMM, DIAL9_KIND_INSTANT, "sched.occupant_comm", 3, f_ocomm));
	{
		struct dial9_value v[1] = { dial9_u64(0) };

		CHECK(dial9_encoder_event(e, S_OCC, US(0), v));
	}
	o_in(e, 0, 801, 0, 0, 0, idle);
	o_in(e, 0, 802, 1, 0, 0, idle);
	o_in(e, 0, 803, 2, 0, 0, idle);
	o_name(e, 10, a, "hog-a");
	o_out(e, 10, 801, 0, true, 1, a);
	o_out(e, 10, 802, 1, true, 1, r);
	o_out(e, 10, 803, 2, false, 1, idle);
	o_sw(e, 15, 1, r, r);
	o_sw(e, 18, 1, r, idle);
	o_name(e, 20, b, "hog-b");
	o_sw(e, 20, 0, a, b);
	o_sw(e, 20, 1, idle, r);
	o_sw(e, 25, 0, b, idle);
	o_name(e, 28, o, "other");
	o_sw(e, 28, 0, idle, o);
	s_waking(e, 25, 803, 2, 4001);
	o_sw(e, 30, 2, p, q);
	o_in(e, 30, 802, 1, 20000, 1, r);
	o_in(e, 35, 801, 0, 25000, 1, o);
	o_in(e, 40, 803, 2, 15000, 1, q);
	o_out(e, 50, 801, 0, false, 2, idle);
	o_out(e, 50, 802, 1, false, 2, idle);
	o_out(e, 50, 803, 2, false, 2, idle);
	s_save(e, dir, "occupants", "00000001.dial9");
}

/* Times in microseconds after T0, totals in ns. */
static int sched_cases(const char *dir)
{
	struct dial9_encoder *e;

	CHECK(dial9_encoder_new(&e));

	/*
	 * migrated/: 201 waits 3500 ns in all, 500 of them on the CPU it
	 * runs on; 202 is new (never ran) and waits twice; 203 is first seen
	 * at a switch-in with 7 runs behind it: its wait began unseen.
	 */
	sched_begin(e, NULL, NULL);
	s_out(e, 0, 201, 0, false, 1000, 5);
	s_in(e, 1, 202, 1, 700, 0, 0);
	s_out(e, 3, 202, 1, false, 700, 1);
	s_in(e, 10, 201, 1, 500, 4000, 5);
	s_in(e, 20, 203, 0, 400, 5000, 7);
	s_in(e, 30, 202, 0, 200, 1000, 1);
	s_out(e, 40, 202, 0, false, 1200, 2);
	s_out(e, 40, 201, 1, false, 4500, 6);
	s_out(e, 40, 203, 0, false, 5400, 8);
	s_save(e, dir, "migrated", "00000001.dial9");

	/*
	 * lost/ (no totals, as an older module writes): 301 blocks at 100 on
	 * CPU 0; CPU 1, last seen at 120, loses 5 records before 150; 301
	 * runs at 200 after 30 us on CPU 0's runqueue.
	 */
	sched_begin(e, NULL, NULL);
	s_in(e, 0, 301, 0, 10000, -1, 0);
	s_in(e, 1, 302, 1, 0, -1, 0);
	s_out(e, 100, 301, 0, false, -1, 0);
	s_out(e, 120, 302, 1, false, -1, 0);
	s_lost(e, 150, 1, 5);
	s_in(e, 200, 301, 0, 30000, -1, 0);
	s_out(e, 300, 301, 0, false, -1, 0);
	s_save(e, dir, "lost", "00000001.dial9");

	/*
	 * lostin/: 401's three switch-ins between its switch-out (count 5)
	 * and this switch-in (count 8) were lost with 6 records of CPU 1;
	 * a child process 777 of 400 could not be followed.
	 */
	sched_begin(e, NULL, NULL);
	s_out(e, 0, 401, 0, false, 1000, 5);
	s_out(e, 5, 402, 1, false, 0, 1);
	s_lost(e, 50, 1, 6);
	{
		struct dial9_value v[2] = { dial9_u64(777), dial9_u64(400) };

		CHECK(dial9_encoder_event(e, S_UNF, US(60), v));
	}
	s_in(e, 100, 401, 0, 500, 9000, 8);
	s_out(e, 110, 401, 0, false, 9500, 9);
	s_save(e, dir, "lostin", "00000001.dial9");

	/*
	 * hosts/: tid 500 on two hosts; the second segment of alpha's
	 * recording has the same tid again: the same thread.
	 */
	sched_begin(e, "alpha", "aaaa-1");
	s_in(e, 0, 500, 0, 1000, -1, 0);
	s_out(e, 10, 500, 0, true, -1, 0);
	s_save(e, dir, "hosts", "alpha-1.dial9");
	sched_begin(e, "beta", "bbbb-1");
	s_in(e, 0, 500, 0, 2000, -1, 0);
	s_out(e, 10, 500, 0, true, -1, 0);
	s_save(e, dir, "hosts", "beta-1.dial9");
	sched_begin(e, "alpha", "aaaa-1");
	s_in(e, 20, 500, 0, 4000, -1, 0);
	s_out(e, 30, 500, 0, false, -1, 0);
	s_save(e, dir, "hosts", "alpha-2.dial9");

	/*
	 * perf/ (no totals; the waits the perf backend measured): 601 is
	 * first seen at a switch-in (unmeasured), blocks at 10 and runs at
	 * 30 after 5 us (from its waking), is preempted at 40 and runs at 45,
	 * blocks at 50 and runs at 80 with no waking seen (unmeasured).
	 */
	sched_begin(e, NULL, NULL);
	s_in(e, 0, 601, 0, -1, -1, 0);
	s_out(e, 10, 601, 0, false, -1, 0);
	s_in(e, 30, 601, 0, 5000, -1, 0);
	s_out(e, 40, 601, 0, true, -1, 0);
	s_in(e, 45, 601, 0, 5000, -1, 0);
	s_out(e, 50, 601, 0, false, -1, 0);
	s_in(e, 80, 601, 0, -1, -1, 0);
	s_out(e, 90, 601, 0, false, -1, 0);
	s_save(e, dir, "perf", "00000001.dial9");

	/*
	 * culprits/, all on CPU 0: 501 runs 0-10 and is preempted by 502
	 * (10-30), then the CPU is idle (30-40), 503 runs (40-45), a task
	 * outside the session (45-50), and 501 again (50-60), blocking to
	 * idle; 502 wakes at 65 and runs at 70 after a task outside the
	 * session (the gap 60-70 is idle, then other processes).  502 and
	 * 503 are new: 502 waited 1 us (9-10, 501 running), 503 2 us
	 * (38-40, idle).  On CPU 1, 601 runs 0-55, waking 502 at 54, and
	 * blocks: CPU 1 is idle 55-75, so during 502's wait (65-70) another
	 * CPU was idle throughout.  901, new, waits from 86 on CPU 1 behind
	 * 601 (running 75-100), is migrated to CPU 0 at 90 and runs there at
	 * 92: 4 us behind 601, then 2 us on an idle CPU 0 (idle from 80).
	 */
	sched_begin(e, NULL, NULL);
	CHECK(dial9_encoder_clock_sync(e, T0, REAL0));
	s_inx(e, 0, 501, 0, 0, 0, 0, 0);
	s_inx(e, 0, 601, 1, 0, 0, 0, 0);
	s_outx(e, 10, 501, 0, true, 0, 1, 502);
	s_inx(e, 10, 502, 0, 1000, 0, 0, 501);
	s_outx(e, 30, 502, 0, false, 1000, 1, 0);
	s_inx(e, 40, 503, 0, 2000, 0, 0, 0);
	s_outx(e, 45, 503, 0, false, 2000, 1, REDACTED);
	s_inx(e, 50, 501, 0, 40000, 0, 1, REDACTED);
	s_waking(e, 54, 502, 1, 601);
	s_outx(e, 55, 601, 1, false, 0, 1, 0);
	s_outx(e, 60, 501, 0, false, 40000, 2, 0);
	s_inx(e, 70, 502, 0, 5000, 1000, 1, REDACTED);
	s_inx(e, 75, 601, 1, 0, 0, 1, 0);
	s_outx(e, 80, 502, 0, false, 6000, 2, 0);
	s_migrate(e, 90, 901, 1, 0);
	s_inx(e, 92, 901, 0, 6000, 0, 0, 0);
	s_outx(e, 95, 901, 0, false, 6000, 1, 0);
	s_outx(e, 100, 601, 1, false, 0, 2, 0);
	s_save(e, dir, "culprits", "00000001.dial9");
	occupants_case(e, dir);

	/*
	 * stacks/, on CPU 0: 700 (of process 700, mapped as below) blocks at
	 * 10 in libc, called from app, called from an address outside every
	 * mapping; 601 wakes it at 20, it runs at 25 (a 5 us wait).  It is
	 * preempted at 40 in app and runs at 50 (10 us).  701 has a 3 us
	 * wait and no stack.
	 */
	sched_begin(e, NULL, NULL);
	s_stack_schemas(e);
	s_map(e, 0, 700, 0x400000, 0x401000, 0, "/usr/bin/app", "abcdef01");
	s_map(e, 0, 700, 0x7f0000000000, 0x7f0000100000, 0x2000,
	      "/opt/dial9-test/lib/libc.so.6", "abcdef01");
	s_inx(e, 0, 700, 0, 0, 0, 0, 0);
	s_outx(e, 10, 700, 0, false, 0, 1, 0);
	{
		static const uint64_t blocked[] = {
			0x7f0000000100, 0x400500, 0x400400, 0xdead,
		};
		static const uint64_t preempted[] = { 0x400123, 0x400400 };

		s_stack(e, 10, 700, blocked, 4, false);
		s_waking(e, 20, 700, 1, 601);
		s_inx(e, 25, 700, 0, 5000, 0, 1, 0);
		s_outx(e, 40, 700, 0, true, 5000, 2, 701);
		s_stack(e, 40, 700, preempted, 2, false);
	}
	s_inx(e, 40, 701, 0, 3000, 0, 0, 700);
	s_outx(e, 50, 701, 0, false, 3000, 1, 700);
	s_inx(e, 50, 700, 0, 10000, 5000, 2, 701);
	s_outx(e, 60, 700, 0, false, 15000, 3, 0);
	s_save(e, dir, "stacks", "00000001.dial9");
	dial9_encoder_free(e);
	return 0;
}

/* ---- a real recording ---- */

DIAL9_SPAN_TYPE(round_span, "round", DIAL9_FIELD(U64, i));

#define ROUNDS 50

static int ab[2], ba[2];

static void *pong(void *arg)
{
	char c;

	(void)arg;
	dial9_thread_name("pong");
	for (int i = 0; i < ROUNDS; i++) {
		if (read(ab[0], &c, 1) != 1)
			break;
		DIAL9_SPAN_BEGIN(round_span, dial9_u64((uint64_t)i));
		usleep(200);
		dial9_counter("pongs", "rounds", 1);
		DIAL9_SPAN_END(round_span, dial9_u64((uint64_t)i));
		if (write(ba[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

static int record(const char *dir)
{
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	pthread_t t;
	char ch = 'x';

	dial9_config_init(&c);
	c.trace_dir = dir;
	c.service_name = "pingpong";
	c.sched = DIAL9_SCHED_PERF;
	CHECK(dial9_start(&c));
	dial9_get_stats(&st);
	if (strcmp(st.sched_backend, "perf")) {
		dial9_stop();
		fprintf(stderr, "mktrace: perf backend not available here\n");
		return 77;
	}
	dial9_thread_name("ping");
	CHECK(pipe(ab));
	CHECK(pipe(ba));
	CHECK(pthread_create(&t, NULL, pong, NULL));
	for (int i = 0; i < ROUNDS; i++) {
		DIAL9_SPAN_BEGIN(round_span, dial9_u64((uint64_t)i));
		if (write(ab[1], &ch, 1) != 1 || read(ba[0], &ch, 1) != 1)
			break;
		dial9_gauge("progress", "rounds", i + 1);
		DIAL9_SPAN_END(round_span, dial9_u64((uint64_t)i));
	}
	pthread_join(t, NULL);
	CHECK(dial9_stop());
	printf("%ld %ld\n", (long)getpid(), (long)syscall(SYS_gettid));
	return 0;
}

/* pid 100: thread 201 whose names end inside a character. */
static int utf8(const char *dir)
{
	static const struct dial9_field f_note[] = { { "text", DIAL9_STR } };
	struct dial9_encoder *e;
	struct dial9_value v[3];

	CHECK(dial9_encoder_new(&e));
	preamble(e);
	CHECK(dial9_encoder_begin_stream(e));
	/* "worker-caf\xc3\xa9" cut after the \xc3, "\xe6\x97\xa5\xe6\x9c\xac"
	 * after the second \xe6\x9c */
	CHECK(dial9_encoder_thread(e, 201, "worker-caf\xc3"));
	CHECK(dial9_encoder_schema(e, COMM, DIAL9_KIND_INSTANT, "sched.comm", 3, f_comm));
	CHECK(dial9_encoder_schema(e, OUT, DIAL9_KIND_INSTANT, "sched.switch_out", 6, f_out));
	CHECK(dial9_encoder_schema(e, IN, DIAL9_KIND_INSTANT, "sched.switch_in", 6, f_in));
	CHECK(dial9_encoder_schema(e, INSTANT, DIAL9_KIND_INSTANT, "note", 1, f_note));
	v[0] = dial9_u64(201); v[1] = dial9_u64(100);
	v[2] = dial9_istr("\xe6\x97\xa5\xe6\x9c");
	CHECK(dial9_encoder_event(e, COMM, US(0), v));
	sw_in(e, 1, 201, true, 5);
	v[0] = dial9_str("bad \xff\xfe, cut \xf0\x9f\x98, ok \xc3\xa9");
	CHECK(dial9_encoder_event(e, INSTANT, US(2), v));
	sw_out(e, 3, 201, false);
	CHECK(dial9_encoder_end_stream(e));
	save(e, dir, "00000001.dial9");
	dial9_encoder_free(e);
	return 0;
}

/* pid 100: names that carry terminal escapes (OSC title, clear screen,
 * OSC 52 clipboard, a C1 CSI as UTF-8), and a wait to report. */
static int escapes(const char *dir)
{
	struct dial9_encoder *e;
	struct dial9_value v[3];

	CHECK(dial9_encoder_new(&e));
	preamble(e);
	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_thread(e, 202, "w\033]0;pwned\007\033[2J"));
	CHECK(dial9_encoder_schema(e, COMM, DIAL9_KIND_INSTANT, "sched.comm", 3, f_comm));
	CHECK(dial9_encoder_schema(e, OUT, DIAL9_KIND_INSTANT, "sched.switch_out", 6, f_out));
	CHECK(dial9_encoder_schema(e, IN, DIAL9_KIND_INSTANT, "sched.switch_in", 6, f_in));
	v[0] = dial9_u64(202); v[1] = dial9_u64(100);
	v[2] = dial9_istr("c\033]52;c;ZXZpbA==\007\xc2\x9b" "31m\r");
	CHECK(dial9_encoder_event(e, COMM, US(0), v));
	sw_in(e, 1, 202, true, 5);
	sw_out(e, 3, 202, true);
	sw_in(e, 30, 202, true, 25);
	sw_out(e, 31, 202, false);
	CHECK(dial9_encoder_end_stream(e));
	save(e, dir, "00000001.dial9");
	dial9_encoder_free(e);
	return 0;
}

/* Wall clock near the top of the range, an event long after the sync. */
static int clock_extreme(const char *dir)
{
	struct dial9_encoder *e;
	struct dial9_value v = dial9_istr("late");

	CHECK(dial9_encoder_new(&e));
	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_clock_sync(e, 0, (uint64_t)INT64_MAX - 1));
	CHECK(dial9_encoder_schema(e, INSTANT, DIAL9_KIND_INSTANT, "late", 1, f_inst));
	CHECK(dial9_encoder_event(e, INSTANT, UINT64_MAX / 2, &v));
	CHECK(dial9_encoder_end_stream(e));
	save(e, dir, "00000001.dial9");
	dial9_encoder_free(e);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "synth"))
		return synth(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "sched"))
		return sched_cases(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "utf8"))
		return utf8(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "clock"))
		return clock_extreme(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "escapes"))
		return escapes(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "record"))
		return record(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "symbols"))
		return symbols_case(argv[2], argv[3], argv[4], argv[5]);
	if (argc == 3 && !strcmp(argv[1], "frames"))
		return frames_case(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "vdso"))
		return vdso_dump(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "why"))
		return why_case(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "samples"))
		return samples_case(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "symtab"))
		return symtab_case(argv[2], argv[3]);
	fprintf(stderr, "usage: mktrace synth|sched|utf8|escapes|clock|record DIR\n"
			"       mktrace symbols DIR SELF STRIPPED GARBAGE\n"
			"       mktrace frames|why|samples DIR, mktrace vdso FILE\n");
	return 2;
}
