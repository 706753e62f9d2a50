// SPDX-License-Identifier: MIT
/*
 * test_spans.c - application spans paired per thread and looked up by
 * time, for dial9 sched --explain (lib/sched/sched_spans.c), and the
 * waker stacks beside the switch-out ones (sched_stacks.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sched/sched_stats.h"

static void add(struct sched_spans *s, uint32_t tid, uint64_t ts,
		const char *name, bool begin)
{
	assert_int_equal(d9_sched_spans_add(s, 0, tid, ts, name, strlen(name),
					    begin), 0);
}

/* The name of the span open on @tid at @ts, or "-". */
static const char *at(struct sched_spans *s, uint32_t tid, uint64_t ts)
{
	const struct sched_span *sp = d9_sched_spans_at(s, 0, tid, ts, NULL);

	return sp ? d9_sched_span_name(s, sp) : "-";
}

static void nested_spans_in_any_order(void **state)
{
	struct sched_spans s = { 0 };

	(void)state;
	/* thread 2's events between thread 1's, ends before begins */
	add(&s, 1, 50, "outer", false);	/* its begin is not in the trace */
	add(&s, 1, 300, "outer", false);
	add(&s, 2, 15, "other", true);
	add(&s, 1, 100, "outer", true);
	add(&s, 1, 200, "inner", false);
	add(&s, 1, 150, "inner", true);
	add(&s, 1, 400, "open", true);	/* never ended */
	assert_string_equal(at(&s, 1, 10), "-");
	assert_string_equal(at(&s, 1, 60), "-");
	assert_string_equal(at(&s, 1, 100), "outer");
	assert_string_equal(at(&s, 1, 150), "inner");
	assert_string_equal(at(&s, 1, 199), "inner");
	assert_string_equal(at(&s, 1, 200), "outer");	/* ended at 200 */
	assert_string_equal(at(&s, 1, 300), "-");
	assert_string_equal(at(&s, 1, 1000000), "open");
	assert_string_equal(at(&s, 2, 10), "-");
	assert_string_equal(at(&s, 2, 20), "other");
	assert_string_equal(at(&s, 3, 20), "-");
	d9_sched_spans_free(&s);
}

static void an_end_cuts_the_spans_inside_it(void **state)
{
	struct sched_spans s = { 0 };

	(void)state;
	add(&s, 1, 10, "a", true);
	add(&s, 1, 20, "b", true);
	add(&s, 1, 30, "c", true);
	add(&s, 1, 40, "a", false);	/* b and c never ended: cut at 40 */
	add(&s, 1, 50, "b", false);	/* nothing open of that name */
	add(&s, 1, 60, "a", true);
	assert_string_equal(at(&s, 1, 35), "c");
	assert_string_equal(at(&s, 1, 45), "-");
	assert_string_equal(at(&s, 1, 55), "-");
	assert_string_equal(at(&s, 1, 65), "a");
	/* a span of the same name inside itself: the inner one ends first */
	add(&s, 1, 70, "a", true);
	add(&s, 1, 80, "a", false);
	assert_string_equal(at(&s, 1, 75), "a");
	assert_int_equal(d9_sched_spans_at(&s, 0, 1, 75, NULL)->start, 70);
	assert_int_equal(d9_sched_spans_at(&s, 0, 1, 85, NULL)->start, 60);
	d9_sched_spans_free(&s);
}

static void waker_stacks_apart_from_switch_outs(void **state)
{
	static const uint64_t ips[2] = { 0x1000, 0x2000 };
	struct sched_stacks s = { 0 };
	const struct sched_stack *k;

	(void)state;
	assert_int_equal(d9_sched_stacks_add(&s, 0, 100, 7, 7, ips, 2, false,
					     false), 0);
	assert_int_equal(d9_sched_stacks_add(&s, 0, 150, 7, 7, ips, 1, false,
					     true), 0);
	/* a waker's stack is never where the thread left the CPU */
	k = d9_sched_stacks_before(&s, 0, 7, 200);
	assert_non_null(k);
	assert_int_equal(k->ts, 100);
	k = d9_sched_stacks_waker(&s, 0, 7, 150);
	assert_non_null(k);
	assert_int_equal(k->n, 1);
	assert_null(d9_sched_stacks_waker(&s, 0, 7, 149));
	assert_null(d9_sched_stacks_waker(&s, 0, 7, 151));
	assert_null(d9_sched_stacks_waker(&s, 0, 8, 150));
	d9_sched_stacks_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nested_spans_in_any_order),
		cmocka_unit_test(an_end_cuts_the_spans_inside_it),
		cmocka_unit_test(waker_stacks_apart_from_switch_outs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
