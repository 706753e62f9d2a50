// SPDX-License-Identifier: MIT
/*
 * test_text.c - UTF-8 and JSON strings (lib/common/text.h): which sequences are
 * valid, names cut between characters, JSON that is valid UTF-8 whatever
 * the input; and the recorder's thread names, cut by the kernel (15
 * bytes) or by the library (31 bytes), never ending inside a character.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers.h"
#include "common/text.h"

static void utf8_sequences(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} cases[] = {
		{ "a", 1 }, { "\xc3\xa9", 2 }, { "\xe2\x82\xac", 3 },
		{ "\xf0\x9f\x98\x80", 4 }, { "\xf4\x8f\xbf\xbf", 4 },
		{ "\xc3", 0 },		/* cut */
		{ "\xe2\x82", 0 },	/* cut */
		{ "\x80", 0 },		/* a continuation alone */
		{ "\xc0\xaf", 0 },	/* overlong */
		{ "\xe0\x80\xaf", 0 },	/* overlong */
		{ "\xed\xa0\x80", 0 },	/* a surrogate */
		{ "\xf4\x90\x80\x80", 0 }, /* past U+10FFFF */
		{ "\xff", 0 },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(d9_utf8_seq((const uint8_t *)cases[i].s,
					     strlen(cases[i].s)), cases[i].len);
	assert_int_equal(d9_utf8_seq((const uint8_t *)"", 0), 0);
}

static void utf8_cut(void **state)
{
	(void)state;
	assert_int_equal(d9_utf8_cut("abc", 31), 3);
	assert_int_equal(d9_utf8_cut("ab\xc3\xa9", 4), 4);
	assert_int_equal(d9_utf8_cut("ab\xc3\xa9", 3), 2);
	assert_int_equal(d9_utf8_cut("ab\xe2\x82\xac", 4), 2);
	assert_int_equal(d9_utf8_cut("ab\xf0\x9f\x98\x80", 5), 2);
	assert_int_equal(d9_utf8_cut("ab\xf0\x9f\x98\x80", 6), 6);
	assert_int_equal(d9_utf8_cut("ab\xc3", 15), 2);	/* already cut */
	assert_int_equal(d9_utf8_cut("\x80\x80\x80\x80", 4), 4); /* not ours */
}

static void json_strings(void **state)
{
	const char in[] = "q\"\\\n\t\x01<&> \xc3\xa9 \xff \xe2\x82 \xf0\x9f\x98\x80";
	char out[D9_JSON_ROOM(sizeof(in))];
	size_t n = d9_json_escape(out, in, sizeof(in) - 1, 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	(void)state;

	out[n] = 0;
	assert_string_equal(out, "\"q\\\"\\\\\\n\\t\\u0001<&> \xc3\xa9 \xef\xbf\xbd "
			    "\xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80\"");
	n = d9_json_escape(out, "<&>", 3, D9_JSON_HTML);
	out[n] = 0;
	assert_string_equal(out, "\"\\u003c\\u0026\\u003e\"");

	/* the FILE writer cuts long input in pieces, never inside a
	 * character: 1000 euro signs come out whole */
	f = open_memstream(&buf, &len);
	{
		char big[3000];

		for (int i = 0; i < 1000; i++)
			memcpy(big + 3 * i, "\xe2\x82\xac", 3);
		d9_json_fwrite(f, big, sizeof(big), 0);
		fclose(f);
		assert_int_equal(len, sizeof(big) + 2);
		assert_memory_equal(buf + 1, big, sizeof(big));
	}
	free(buf);
}

/* ---- the recorder's thread names ---- */

struct names {
	unsigned int seen, bad;
	char last[64];
};

static void visit(const struct dial9_record *r, void *arg)
{
	struct names *nm = arg;
	const uint8_t *s = (const uint8_t *)r->thread_name;
	size_t len = strlen(r->thread_name);

	if (strcmp(r->schema->name, "name.ev"))
		return;
	for (size_t i = 0; i < len;) {
		size_t k = d9_utf8_seq(s + i, len - i);

		if (!k) {
			nm->bad++;
			break;
		}
		i += k;
	}
	nm->seen++;
	snprintf(nm->last, sizeof(nm->last), "%s", r->thread_name);
}

DIAL9_EVENT_TYPE(t_name_ev, "name.ev", DIAL9_FIELD(U64, n));

static void *named_thread(void *arg)
{
	(void)arg;

	/* 14 bytes and the first of a two-byte character: as the kernel
	 * keeps a longer name, cut at 15 bytes */
	pthread_setname_np(pthread_self(), "kernel-cut-ab\xc3");
	DIAL9_EMIT(t_name_ev, dial9_u64(1));
	dial9_flush(5000);
	/* 30 bytes, then "é" across bytes 31 and 32 */
	dial9_thread_name("library-cut-abcdefghijklmnopqr\xc3\xa9");
	dial9_rotate();
	DIAL9_EMIT(t_name_ev, dial9_u64(2));
	return NULL;
}

static void thread_names_cut(void **state)
{
	char *dir = test_tmpdir("names"), *boot;
	struct dial9_config c;
	struct test_counts cnt = { 0 };
	struct names nm = { 0 };
	char **v;
	pthread_t t;
	(void)state;

	dial9_config_init(&c);
	c.trace_dir = dir;
	c.sched = DIAL9_SCHED_OFF;
	assert_int_equal(dial9_start(&c), 0);
	pthread_create(&t, NULL, named_thread, NULL);
	pthread_join(t, NULL);
	assert_int_equal(dial9_stop(), 0);
	boot = test_boot_dir(dir);
	assert_non_null(boot);
	v = test_list(boot, ".dial9", NULL);
	assert_non_null(v[0]);
	test_decode_file(v[0], &cnt, visit, &nm);
	assert_int_equal(nm.seen, 1);
	assert_string_equal(nm.last, "kernel-cut-ab");
	for (size_t i = 1; v[i]; i++)
		test_decode_file(v[i], &cnt, visit, &nm);
	assert_int_equal(cnt.err, 0);
	assert_int_equal(nm.seen, 2);
	assert_int_equal(nm.bad, 0);
	assert_string_equal(nm.last, "library-cut-abcdefghijklmnopqr");
	test_free_list(v);
	test_rm_rf(dir);
	free(boot);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(utf8_sequences),
		cmocka_unit_test(utf8_cut),
		cmocka_unit_test(json_strings),
		cmocka_unit_test(thread_names_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
