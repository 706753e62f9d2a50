// SPDX-License-Identifier: MIT
/* test_cli.c - the dial9 command on traces the library wrote. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "helpers.h"

/* Run the tool; its stdout (and stderr if merge) into a string. */
static char *run(const char *args, int merge, int *status)
{
	char *cmd, *out = NULL;
	size_t len = 0;
	FILE *p, *m = open_memstream(&out, &len);
	char buf[4096];
	size_t n;

	if (asprintf(&cmd, "%s %s%s", test_tool(), args, merge ? " 2>&1" : "") < 0)
		abort();
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		fwrite(buf, 1, n, m);
	*status = pclose(p);
	fclose(m);
	free(cmd);
	return out;
}

static unsigned int count_lines(const char *s, const char *needle)
{
	unsigned int n = 0;

	for (const char *l = s; l && *l;) {
		const char *e = strchr(l, '\n');

		if (!needle || (strstr(l, needle) && strstr(l, needle) < e))
			n++;
		l = e ? e + 1 : NULL;
	}
	return n;
}

DIAL9_EVENT_TYPE(t_ev, "cli.ev", DIAL9_FIELD(U64, n), DIAL9_FIELD(STR, s),
		 DIAL9_FIELD(F64, f), DIAL9_FIELD(BYTES, b));

static void *worker(void *arg)
{
	dial9_thread_name((const char *)arg);
	for (int i = 0; i < 50; i++)
		DIAL9_EMIT(t_ev, dial9_u64(5), dial9_str("a\"b\n"),
			   dial9_f64(0.5), dial9_bytes("\x01\xff", 2));
	return NULL;
}

static char *dir, *boot;

static int make_trace(void **state)
{
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	pthread_t a, b;
	(void)state;

	dir = test_tmpdir("cli");
	dial9_config_init(&c);
	c.trace_dir = dir;
	c.service_name = "clitest";
	c.sched = DIAL9_SCHED_OFF;	/* only the workers' events */
	if (dial9_start(&c))
		return -1;
	dial9_get_stats(&st);
	boot = strdup(st.dir);
	pthread_create(&a, NULL, worker, "alpha");
	pthread_join(a, NULL);
	dial9_rotate(); /* a second segment */
	pthread_create(&b, NULL, worker, "beta");
	pthread_join(b, NULL);
	return dial9_stop();
}

static int remove_trace(void **state)
{
	(void)state;
	test_rm_rf(dir);
	free(dir);
	free(boot);
	return 0;
}

static void dump_json_lines(void **state)
{
	char *args, *out;
	int status;
	(void)state;

	if (asprintf(&args, "dump %s", dir) < 0)
		abort();
	out = run(args, 0, &status);
	assert_int_equal(status, 0);
	/* 100 events and 2 thread-name events, one line each */
	assert_int_equal(count_lines(out, NULL), 102);
	assert_int_equal(count_lines(out, "\"name\":\"cli.ev\""), 100);
	assert_int_equal(count_lines(out, "\"thread\":\"alpha\""), 51);
	assert_int_equal(count_lines(out, "\"thread\":\"beta\""), 51);
	assert_non_null(strstr(out, "\"kind\":\"instant\",\"tid\":"));
	assert_non_null(strstr(out, "\"fields\":{\"n\":5,\"s\":\"a\\\"b\\n\","
				    "\"f\":0.5,\"b\":\"01ff\"}}"));
	free(out);
	free(args);
}

static void dump_sorted(void **state)
{
	char *args, *out;
	uint64_t prev = 0;
	int status;
	unsigned int lines = 0;
	(void)state;

	/* both segment files given explicitly, newest first */
	if (asprintf(&args, "dump --sorted %s/00000002.dial9 %s/00000001.dial9",
		     boot, boot) < 0)
		abort();
	out = run(args, 0, &status);
	assert_int_equal(status, 0);
	for (char *l = out; l && *l; lines++) {
		uint64_t ts;

		assert_int_equal(sscanf(l, "{\"ts\":%lu,", &ts), 1);
		assert_true(ts >= prev);
		prev = ts;
		l = strchr(l, '\n');
		l = l ? l + 1 : NULL;
	}
	assert_int_equal(lines, 102);
	free(out);
	free(args);
}

static void info_summary(void **state)
{
	char *args, *out;
	int status;
	(void)state;

	if (asprintf(&args, "info %s", dir) < 0)
		abort();
	out = run(args, 0, &status);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "service = clitest"));
	assert_true(strstr(out, "io_backend = io_uring") ||
		    strstr(out, "io_backend = pwrite"));
	assert_non_null(strstr(out, "total: 2 files"));
	assert_non_null(strstr(out, "           100  cli.ev"));
	/* losses first: scheduler records beside application events */
	assert_true(strncmp(out, "lost: 0 scheduler records (sched.lost), "
			    "0 application events (dial9.lost)\n", 70) == 0);
	assert_non_null(strstr(out, "  lost     0 events (application), "
				    "0 scheduler records in 0 windows"));
	assert_non_null(strstr(out, "  first    "));
	free(out);
	free(args);
}

static void corrupt_input(void **state)
{
	char *args, *out, *bad;
	int status, fd;
	struct stat st;
	char *src;
	(void)state;

	if (asprintf(&src, "%s/00000001.dial9", boot) < 0 ||
	    asprintf(&bad, "%s/corrupt.bin", dir) < 0)
		abort();
	/* the first 20 bytes of a segment, then a bad frame tag */
	assert_int_equal(stat(src, &st), 0);
	{
		FILE *in = fopen(src, "rb"), *o = fopen(bad, "wb");
		char buf[20];

		assert_int_equal(fread(buf, 1, 5, in), 5);
		fwrite(buf, 1, 5, o);
		fwrite("\x40\x00", 1, 2, o); /* event of undeclared type 0 */
		fclose(in);
		fclose(o);
	}
	if (asprintf(&args, "dump %s", bad) < 0)
		abort();
	out = run(args, 1, &status);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	assert_non_null(strstr(out, "corrupt.bin: corrupt trace data at offset 5"));
	free(out);
	free(args);

	/* truncated inside the first frame after the header */
	fd = open(bad, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "\x00\xd9TR\x01\x04\x20\x01", 8), 8);
	close(fd);
	if (asprintf(&args, "info %s", bad) < 0)
		abort();
	out = run(args, 1, &status);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	assert_non_null(strstr(out, "truncated trace data at offset 5"));
	free(out);
	free(args);

	out = run("dump /nonexistent/trace", 1, &status);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	assert_non_null(strstr(out, "/nonexistent/trace"));
	free(out);
	unlink(bad);
	free(bad);
	free(src);
}

/* Calls that do not match their type: lost, and said so by info. */
static void info_invalid_calls(void **state)
{
	char *d = test_tmpdir("cli-invalid"), *args, *out;
	struct dial9_config c;
	struct dial9_value v = dial9_str("not a u64");
	int status;
	(void)state;

	dial9_config_init(&c);
	c.trace_dir = d;
	c.sched = DIAL9_SCHED_OFF;
	assert_int_equal(dial9_start(&c), 0);
	DIAL9_EMIT(t_ev, dial9_u64(1), dial9_str("ok"), dial9_f64(1),
		   dial9_bytes("", 0));
	for (int i = 0; i < 3; i++)
		dial9__emit(&t_ev, &v, 1);	/* too few, mistyped */
	assert_int_equal(dial9_flush(10000), 0);
	assert_int_equal(dial9_stop(), 0);
	if (asprintf(&args, "info %s", d) < 0)
		abort();
	out = run(args, 0, &status);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "3 application events (dial9.lost)"));
	assert_non_null(strstr(out, "  lost     3 events (application, 3 of "
				    "them invalid calls)"));
	free(out);
	free(args);
	test_rm_rf(d);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dump_json_lines),
		cmocka_unit_test(dump_sorted),
		cmocka_unit_test(info_summary),
		cmocka_unit_test(corrupt_input),
		cmocka_unit_test(info_invalid_calls),
	};

	return cmocka_run_group_tests(tests, make_trace, remove_trace);
}
