// SPDX-License-Identifier: MIT
/*
 * test_account.c - per CPU, the kernel records a trace holds against
 * dial9.ko's counts of that CPU's ring (sched.ring): the events ktrace.c
 * writes for each kind of record, counted back by sched_account.c, and
 * `dial9 info`'s verdict.  A trace missing one record, or with one lost
 * record unannounced, must disagree on that CPU and only there.  The same
 * check on the real module's rings runs in the VM (tests/sched/pairs_test.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <linux/dial9.h>

#include "helpers.h"
#include "ksched/ksched.h"
#include "sched/sched_account.h"
#include "sched/sched_read.h"

/* Room for any record this test writes. */
union rec {
	struct dial9_rec_header h;
	struct dial9_rec_switch sw;
	struct dial9_rec_wake wk;
	struct dial9_rec_migrate mg;
	struct dial9_rec_exit ex;
	struct dial9_rec_comm cm;
	struct dial9_rec_unfollowed uf;
	struct dial9_rec_lost lo;
	struct {
		struct dial9_rec_stack st;
		uint64_t ips[2];
	} stk;
};

#define A 100u		/* recorded threads */
#define B 101u
#define C 102u
#define FOREIGN DIAL9_TID_REDACTED

static void hdr(union rec *r, uint16_t type, size_t size, uint16_t cpu,
		uint64_t ts, uint16_t flags)
{
	memset(r, 0, sizeof(*r));
	r->h.type = type;
	r->h.size = (uint16_t)size;
	r->h.cpu = cpu;
	r->h.time_ns = ts;
	r->h.flags = flags;
}

static void sw(union rec *r, uint16_t cpu, uint64_t ts, uint32_t prev,
	       uint32_t next)
{
	uint16_t f = DIAL9_SWITCH_TOTALS;

	f |= prev != FOREIGN && prev ? DIAL9_SWITCH_PREV_TARGET : 0;
	f |= next != FOREIGN && next ? DIAL9_SWITCH_NEXT_TARGET : 0;
	hdr(r, DIAL9_REC_SWITCH, sizeof(r->sw), cpu, ts, f);
	r->sw.prev_tid = r->sw.prev_tgid = prev;
	r->sw.next_tid = r->sw.next_tgid = next;
	r->sw.prev_state = DIAL9_STATE_SLEEPING;
}

/*
 * Every kind of record the module writes, on CPUs 0 and 1, in time order
 * (the merge's): how many each CPU carries in *@n0 and *@n1.  Switches
 * between two recorded threads are two events each, among them two at
 * one time on one CPU (A to B, then B to C).
 */
static size_t records(union rec *v, uint64_t *n0, uint64_t *n1)
{
	size_t n = 0;

	sw(&v[n++], 0, 1000, A, B);		/* both recorded */
	sw(&v[n++], 1, 1000, FOREIGN, C);	/* in only */
	sw(&v[n++], 0, 1100, B, C);
	sw(&v[n++], 0, 1100, C, A);		/* same time: two records */
	sw(&v[n++], 0, 1200, A, 0);		/* out only, to idle */
	hdr(&v[n], DIAL9_REC_WAKING, sizeof(v[n].wk), 1, 1300,
	    DIAL9_WAKE_TASK_TARGET);
	v[n].wk.tid = v[n].wk.tgid = A;
	v[n++].wk.waker_tid = C;
	hdr(&v[n], DIAL9_REC_WAKEUP, sizeof(v[n].wk), 1, 1301,
	    DIAL9_WAKE_TASK_TARGET);
	v[n++].wk.tid = A;
	hdr(&v[n], DIAL9_REC_WAKEUP_NEW, sizeof(v[n].wk), 0, 1302,
	    DIAL9_WAKE_TASK_TARGET);
	v[n++].wk.tid = B;
	hdr(&v[n], DIAL9_REC_MIGRATE, sizeof(v[n].mg), 1, 1400, 0);
	v[n].mg.tid = A;
	v[n].mg.orig_cpu = 0;
	v[n++].mg.dest_cpu = 1;
	hdr(&v[n], DIAL9_REC_COMM, sizeof(v[n].cm), 1, 1500, 0);
	v[n].cm.tid = C;
	memcpy(v[n++].cm.comm, "worker", 7);
	hdr(&v[n], DIAL9_REC_STACK, sizeof(v[n].stk), 0, 1600, 0);
	v[n].stk.st.tid = B;
	v[n].stk.st.nr = 2;
	v[n].stk.ips[0] = 0x401000;
	v[n++].stk.ips[1] = 0x400800;
	hdr(&v[n], DIAL9_REC_UNFOLLOWED, sizeof(v[n].uf), 0, 1700, 0);
	v[n++].uf.tgid = 900;
	sw(&v[n++], 1, 1800, A, C);		/* both again, on CPU 1 */
	hdr(&v[n], DIAL9_REC_EXIT, sizeof(v[n].ex), 1, 1900, 0);
	v[n++].ex.tid = C;
	*n0 = 7;
	*n1 = 7;
	return n;
}

/* LOST records: 3 on CPU 0, 5 on CPU 1 (in two), between the others. */
static size_t losses(union rec *v)
{
	hdr(&v[0], DIAL9_REC_LOST, sizeof(v[0].lo), 0, 1250, 0);
	v[0].lo.count = 3;
	hdr(&v[1], DIAL9_REC_LOST, sizeof(v[1].lo), 1, 1350, 0);
	v[1].lo.count = 2;
	hdr(&v[2], DIAL9_REC_LOST, sizeof(v[2].lo), 1, 1850, 0);
	v[2].lo.count = 3;
	return 3;
}

/*
 * The trace of @recs less the one at @skip (SIZE_MAX: none) and of the
 * losses, with the rings' counts; to free().
 */
static void *trace_of(size_t skip, uint64_t lost1, size_t *len)
{
	union rec recs[32], lost[4];
	struct d9_ktrace kt = { 0 };
	uint64_t n0, n1;
	size_t n = records(recs, &n0, &n1), nl = losses(lost), l = 0;
	const void *data;
	void *copy;

	assert_int_equal(dial9_encoder_new(&kt.enc), 0);
	assert_int_equal(d9_ktrace_begin(&kt), 0);
	for (size_t i = 0; i < n; i++) {
		while (l < nl && lost[l].h.time_ns < recs[i].h.time_ns)
			assert_int_equal(d9_ktrace_add(&kt, &lost[l++].h), 0);
		if (i != skip)
			assert_int_equal(d9_ktrace_add(&kt, &recs[i].h), 0);
	}
	/* 2 records of CPU 0 left out by the recorder (its own threads') */
	assert_int_equal(d9_ktrace_ring(&kt, 5000, 0, n0 + 2, 3, 2), 0);
	assert_int_equal(d9_ktrace_ring(&kt, 5000, 1, n1, lost1, 0), 0);
	assert_int_equal(d9_ktrace_end(&kt, &data, len), 0);
	copy = malloc(*len);
	assert_non_null(copy);
	memcpy(copy, data, *len);
	dial9_encoder_free(kt.enc);
	return copy;
}

/* Count the trace in @buf per CPU into @a. */
static void account(struct d9_acct *a, const void *buf, size_t len)
{
	struct sched_fields cache[16];
	unsigned int ncache = 0;
	struct dial9_decoder *d;
	struct dial9_record r;

	d9_acct_init(a);
	assert_int_equal(dial9_decoder_new(&d, buf, len), 0);
	while (dial9_decoder_next(d, &r) == 1) {
		struct sched_fields *f = NULL;

		if (r.kind == DIAL9_RECORD_STREAM) {
			ncache = 0;
			d9_acct_stream(a);
		}
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		for (unsigned int i = 0; i < ncache; i++)
			if (cache[i].schema == r.schema)
				f = &cache[i];
		if (!f) {
			assert_true(ncache < 16);
			f = &cache[ncache++];
			d9_sched_fields_lookup(f, r.schema);
		}
		assert_int_equal(d9_acct_feed(a, f, &r, 0), 0);
	}
	dial9_decoder_free(d);
}

static void each_record_counts_once_per_cpu(void **state)
{
	const struct d9_acct_cpu *c0, *c1;
	struct d9_acct a;
	size_t len;
	void *buf = trace_of(SIZE_MAX, 5, &len);

	(void)state;
	account(&a, buf, len);
	c0 = d9_acct_get(&a, 0, 0);
	c1 = d9_acct_get(&a, 0, 1);
	assert_non_null(c0);
	assert_non_null(c1);
	assert_null(d9_acct_get(&a, 0, 2));
	assert_null(d9_acct_get(&a, 1, 0));
	assert_int_equal(a.n, 2);
	assert_int_equal(c0->records, 7);
	assert_int_equal(c0->lost, 3);
	assert_true(c0->ring);
	assert_int_equal(c0->written, 9);
	assert_int_equal(c0->filtered, 2);
	assert_int_equal(c0->klost, 3);
	assert_int_equal(c1->records, 7);
	assert_int_equal(c1->lost, 5);
	assert_true(d9_acct_agrees(c0));
	assert_true(d9_acct_agrees(c1));
	assert_int_equal(a.unplaced, 0);
	d9_acct_free(&a);
	free(buf);
}

/* Without each record in turn, its CPU disagrees and the other does not. */
static void a_missing_record_disagrees(void **state)
{
	union rec recs[32];
	uint64_t n0, n1;
	size_t n = records(recs, &n0, &n1);

	(void)state;
	for (size_t skip = 0; skip < n; skip++) {
		unsigned int cpu = recs[skip].h.cpu;
		struct d9_acct a;
		size_t len;
		void *buf = trace_of(skip, 5, &len);

		account(&a, buf, len);
		assert_int_equal(d9_acct_get(&a, 0, cpu)->records, 6);
		assert_false(d9_acct_agrees(d9_acct_get(&a, 0, cpu)));
		assert_true(d9_acct_agrees(d9_acct_get(&a, 0, !cpu)));
		d9_acct_free(&a);
		free(buf);
	}
}

/* The kernel dropped one more on CPU 1 than the trace's sched.lost say. */
static void an_unannounced_loss_disagrees(void **state)
{
	struct d9_acct a;
	size_t len;
	void *buf = trace_of(SIZE_MAX, 6, &len);

	(void)state;
	account(&a, buf, len);
	assert_true(d9_acct_agrees(d9_acct_get(&a, 0, 0)));
	assert_false(d9_acct_agrees(d9_acct_get(&a, 0, 1)));
	d9_acct_free(&a);
	free(buf);
}

/* Count the trace in @buf as source @src into @a (already set up). */
static void account_as(struct d9_acct *a, const void *buf, size_t len,
		       uint32_t src)
{
	struct sched_fields f;
	struct dial9_decoder *d;
	struct dial9_record r;

	assert_int_equal(dial9_decoder_new(&d, buf, len), 0);
	while (dial9_decoder_next(d, &r) == 1) {
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		d9_sched_fields_lookup(&f, r.schema);
		assert_int_equal(d9_acct_feed(a, &f, &r, src), 0);
	}
	dial9_decoder_free(d);
}

/* 1000 CPUs of two sources (ids 0 and 7) stay apart, in order. */
static void many_cpus_and_sources_stay_apart(void **state)
{
	struct d9_ktrace kt = { 0 };
	struct d9_acct a;
	const void *data;
	size_t len;

	(void)state;
	assert_int_equal(dial9_encoder_new(&kt.enc), 0);
	assert_int_equal(d9_ktrace_begin(&kt), 0);
	for (uint16_t cpu = 0; cpu < 1000; cpu++) {
		union rec lo;

		hdr(&lo, DIAL9_REC_LOST, sizeof(lo.lo), (uint16_t)(999 - cpu),
		    1000 + cpu, 0);
		lo.lo.count = 1000u - cpu;
		assert_int_equal(d9_ktrace_add(&kt, &lo.h), 0);
	}
	assert_int_equal(d9_ktrace_end(&kt, &data, &len), 0);
	d9_acct_init(&a);
	account_as(&a, data, len, 7);
	account_as(&a, data, len, 0);
	dial9_encoder_free(kt.enc);
	assert_int_equal(a.n, 2000);
	assert_null(d9_acct_get(&a, 1, 0));
	assert_null(d9_acct_get(&a, 7, 1000));
	d9_acct_sort(&a);
	for (size_t i = 0; i < a.n; i++) {
		assert_int_equal(a.v[i].src, i < 1000 ? 0 : 7);
		assert_int_equal(a.v[i].cpu, i % 1000);
		assert_int_equal(a.v[i].lost, i % 1000 + 1);
		assert_ptr_equal(d9_acct_get(&a, a.v[i].src, a.v[i].cpu),
				 &a.v[i]);
		assert_false(d9_acct_agrees(&a.v[i]));	/* no sched.ring */
	}
	d9_acct_free(&a);
}

/* dial9 info prints each CPU's figures and its verdict. */
static void info_prints_the_verdict_per_cpu(void **state)
{
	char *dir = test_tmpdir("acct"), path[512], out[600];
	size_t len, n;
	void *buf = trace_of(2, 5, &len);	/* CPU 0 lacks one */
	uint8_t *text;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/t.dial9", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	snprintf(out, sizeof(out), "%s/info.txt", dir);
	assert_int_equal(test_sh("%s info %s >%s", test_tool(), path, out), 0);
	text = test_slurp(out, &n);
	assert_non_null(text);
	text = realloc(text, n + 1);
	text[n] = 0;
	assert_non_null(strstr((char *)text,
		"cpu 0: 6 in the trace + 2 left out by the recorder + 3 lost = 9 written + 3 dropped by the kernel: DIFFER"));
	assert_non_null(strstr((char *)text,
		"cpu 1: 7 in the trace + 0 left out by the recorder + 5 lost = 7 written + 5 dropped by the kernel: agree"));
	free(text);
	free(buf);
	test_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_record_counts_once_per_cpu),
		cmocka_unit_test(a_missing_record_disagrees),
		cmocka_unit_test(an_unannounced_loss_disagrees),
		cmocka_unit_test(many_cpus_and_sources_stay_apart),
		cmocka_unit_test(info_prints_the_verdict_per_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
