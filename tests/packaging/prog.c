// SPDX-License-Identifier: MIT
/*
 * prog.c - a program as a user of the installed libdial9 writes it:
 * <dial9.h> and <linux/dial9.h> found through pkg-config, linked
 * shared, static, or fully static (the scripts beside it).
 *
 *   prog DIR       record one event into DIR; print "recorded N events,
 *                  ABI A, dial9 VERSION" (<dial9.h>'s DIAL9_VERSION_STRING)
 *   prog --s3 DIR  start a recorder that uploads to S3 (nothing listens;
 *                  what is left stays in DIR): print "s3: started" or
 *                  "s3: <error>"; exit 0, or 3 for EOPNOTSUPP
 */
#include <dial9.h>
#include <errno.h>
#include <linux/dial9.h>
#include <stdio.h>
#include <string.h>

static int record(const char *dir)
{
	struct dial9_config cfg;
	struct dial9_stats st = { .size = sizeof(st) };
	int ret;

	dial9_config_init(&cfg);
	cfg.trace_dir = dir;
	cfg.service_name = "pkgtest";
	cfg.sched = DIAL9_SCHED_OFF;
	ret = dial9_start(&cfg);
	if (ret) {
		fprintf(stderr, "prog: dial9_start: %s\n", dial9_strerror(ret));
		return 1;
	}
	dial9_instant("pkgtest.hello");
	ret = dial9_flush(5000);
	if (!ret)
		ret = dial9_get_stats(&st);
	if (ret) {
		fprintf(stderr, "prog: %s\n", dial9_strerror(ret));
		return 1;
	}
	dial9_stop();
	printf("recorded %llu events, ABI %d, dial9 %s\n",
	       (unsigned long long)st.events_written, DIAL9_ABI_VERSION,
	       DIAL9_VERSION_STRING);
	return st.events_written ? 0 : 1;
}

static int s3(const char *dir)
{
	struct dial9_config cfg;
	int ret;

	dial9_config_init(&cfg);
	cfg.trace_dir = dir;
	cfg.shutdown_timeout_ms = 0;
	cfg.sched = DIAL9_SCHED_OFF;
	cfg.pipeline = DIAL9_PIPE_S3 | DIAL9_PIPE_LZ4;
	cfg.s3_bucket = "pkgtest";
	cfg.s3_endpoint = "http://127.0.0.1:9";
	ret = dial9_start(&cfg);
	if (ret) {
		printf("s3: %s\n", dial9_strerror(ret));
		return ret == -EOPNOTSUPP ? 3 : 1;
	}
	dial9_stop();
	printf("s3: started\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--s3"))
		return s3(argv[2]);
	if (argc == 2)
		return record(argv[1]);
	fprintf(stderr, "usage: prog DIR | prog --s3 DIR\n");
	return 2;
}
