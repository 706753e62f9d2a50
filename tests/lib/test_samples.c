// SPDX-License-Identifier: MIT
/*
 * test_samples.c - the CPU profile: SAMPLE records as sched.sample events
 * and read back with their period (lib/sched/ktrace.c, sched_read.c,
 * sched_stacks.c), and the perf backend's samples (SW_CPU_CLOCK with user
 * callchains, ksched_perf*.c) of a thread spinning in a known hot
 * function, where perf events are permitted.  The module's samples are
 * tested in the VM (tests/kmod/sample_test.c, tests/sched/).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <cmocka.h>
#include <linux/dial9.h>

#include "helpers.h"
#include "../kmod/hot_chain.h"
#include "ksched/ksched.h"
#include "sched/sched_read.h"
#include "sched/sched_stacks.h"

struct sample_rec {
	struct dial9_rec_stack r;
	uint64_t ips[DIAL9_STACK_MAX_DEPTH];
};

static void sample_record_reads_back_with_its_period(void **state)
{
	static const uint64_t ips[] = { 0x401234, 0x400800 };
	struct d9_ktrace kt = { .sample_period_ns = 10101010 };
	struct sched_stats st;
	struct sample_rec s;
	const struct sched_stack *sk;
	const void *data;
	uint64_t off;
	size_t len;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.r.hdr.type = DIAL9_REC_SAMPLE;
	s.r.hdr.size = (uint16_t)(sizeof(s.r) + sizeof(ips));
	s.r.hdr.time_ns = 5000;
	s.r.hdr.cpu = 1;
	s.r.hdr.flags = DIAL9_SAMPLE_KERNEL;
	s.r.tid = 43;
	s.r.tgid = 42;
	s.r.nr = 2;
	s.r.reserved = 3;		/* missed */
	memcpy(s.ips, ips, sizeof(ips));
	assert_int_equal(dial9_encoder_new(&kt.enc), 0);
	assert_int_equal(d9_ktrace_begin(&kt), 0);
	assert_int_equal(d9_ktrace_add(&kt, &s.r.hdr), 0);
	/* the same layout with one address more than it holds */
	s.r.nr = 3;
	assert_int_equal(d9_ktrace_add(&kt, &s.r.hdr), -EPROTO);
	assert_int_equal(d9_ktrace_end(&kt, &data, &len), 0);
	assert_int_equal(kt.samples, 1);
	assert_int_equal(kt.samples_missed, 3);

	d9_sched_stats_init(&st);
	assert_int_equal(d9_sched_stats_want_stacks(&st), 0);
	assert_int_equal(d9_sched_trace(&st, data, len, &off), 0);
	/* a sample is not a switch-out stack */
	assert_int_equal(st.stacks->n, 0);
	assert_int_equal(st.stacks->nsamples, 1);
	assert_int_equal(st.stacks->samples_missed, 3);
	sk = &st.stacks->samples[0];
	assert_int_equal(sk->tid, 43);
	assert_int_equal(sk->pid, 42);
	assert_int_equal(sk->ts, 5000);
	assert_int_equal(sk->end - sk->ts, 10101010);
	assert_int_equal(sk->n, 2);
	assert_int_equal(st.stacks->ips[sk->first], 0x401234);
	assert_int_equal(st.stacks->ips[sk->first + 1], 0x400800);
	d9_sched_stats_free(&st);
	dial9_encoder_free(kt.enc);
}

struct seen {
	uint32_t tid;
	const struct hot *h;
	int samples, ours, in_hot, other;
	uint64_t last_ns;
	bool ordered;
};

static void see(void *ctx, const struct dial9_rec_header *rec)
{
	const struct dial9_rec_stack *s = (const void *)rec;
	struct seen *sn = ctx;

	if (rec->time_ns < sn->last_ns)
		sn->ordered = false;
	sn->last_ns = rec->time_ns;
	if (rec->type != DIAL9_REC_SAMPLE)
		return;
	sn->samples++;
	assert_int_equal(rec->size, sizeof(*s) + 8 * s->nr);
	assert_int_equal(s->tgid, getpid());
	if (s->tid != sn->tid) {
		sn->other++;
		return;
	}
	sn->ours++;
	if (s->nr >= 2 && s->ips[1] == sn->h->in_spin &&
	    s->ips[0] >= (uintptr_t)hot && s->ips[0] < sn->h->in_spin)
		sn->in_hot++;
}

/* Spin in hot() for @ms of CPU time with the perf source at @hz. */
static int perf_spin(uint32_t hz, unsigned int ms, struct seen *sn)
{
	struct dial9_ksched_opts o = { .self = true };
	struct dial9_ksched *k = NULL;
	static struct hot h;
	bool samples;

	if (d9_ksched_open(&k, &o, D9_KSCHED_NO_MODULE, hz, NULL, 0))
		return -1;
	if (strcmp(dial9_ksched_backend(k), "perf")) {
		dial9_ksched_close(k);
		return -1;
	}
	samples = d9_ksched_samples(k);
	memset(sn, 0, sizeof(*sn));
	sn->tid = (uint32_t)syscall(SYS_gettid);
	sn->h = &h;
	sn->ordered = true;
	spin(&h, ms);
	assert_true(dial9_ksched_drain(k, UINT64_MAX, see, sn) >= 0);
	dial9_ksched_close(k);
	return samples;
}

static void perf_samples_show_the_hot_function(void **state)
{
	struct seen sn;
	int ret;

	(void)state;
	ret = perf_spin(1000, 300, &sn);
	if (ret < 0)
		skip();		/* no perf events here */
	print_message("perf: %d samples, %d ours, %d in hot()\n", sn.samples,
		      sn.ours, sn.in_hot);
	/* refused (a note says why) only where perf forbids SW_CPU_CLOCK */
	assert_int_equal(ret, 1);
	/* 300 ms of CPU time at 1000 Hz: ~300, allowing for slack */
	assert_true(sn.ours >= 30);
	assert_true(sn.in_hot * 2 > sn.ours);
	assert_true(sn.ordered);
}

static void perf_no_samples_at_zero_hz(void **state)
{
	struct seen sn;

	(void)state;
	if (perf_spin(0, 50, &sn) < 0)
		skip();
	assert_int_equal(sn.samples, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sample_record_reads_back_with_its_period),
		cmocka_unit_test(perf_samples_show_the_hot_function),
		cmocka_unit_test(perf_no_samples_at_zero_hz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
