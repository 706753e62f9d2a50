// SPDX-License-Identifier: MIT
/* cli_util.c - helpers of the subcommands: arrays, JSON, messages, output. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/grow.h"

int cli_grow(void **v, size_t *cap, size_t need, size_t size)
{
	return d9_grow(v, cap, need, size);
}

void cli_json_value(FILE *out, const struct dial9_value *v)
{
	switch (v->type) {
	case DIAL9_U64:
		fprintf(out, "%llu", (unsigned long long)v->u64);
		break;
	case DIAL9_I64:
		fprintf(out, "%lld", (long long)v->i64);
		break;
	case DIAL9_BOOL:
		fputs(v->b ? "true" : "false", out);
		break;
	case DIAL9_F64:
		if (isfinite(v->f64))
			fprintf(out, "%.17g", v->f64);
		else
			fputs("null", out);
		break;
	case DIAL9_STR:
	case DIAL9_ISTR:
		cli_json_str(out, v->str.ptr, v->str.len);
		break;
	case DIAL9_BYTES: {
		const uint8_t *b = v->str.ptr;

		fputc('"', out);
		for (size_t i = 0; i < v->str.len; i++)
			fprintf(out, "%02x", b[i]);
		fputc('"', out);
		break;
	}
	default:
		fputs("null", out); /* a type from a newer writer */
	}
}

void cli_decode_error(const char *path, int err, uint64_t off)
{
	fprintf(stderr, "dial9: %s: %s at offset %llu\n", path,
		dial9_strerror(err), (unsigned long long)off);
}

/* Progress on stderr for long work, only when stderr is a terminal. */
static bool progress_shown;

void cli_progress(const char *what, int i, int n, const char *path)
{
	if (n < 2 || !isatty(2))
		return;
	fprintf(stderr, "\r\033[K%s: %d/%d %s", what, i + 1, n, path);
	progress_shown = true;
}

void cli_progress_done(void)
{
	if (progress_shown)
		fprintf(stderr, "\r\033[K");
	progress_shown = false;
}

int cli_write_output(const char *cmd, const char *path,
		     int (*fn)(FILE *f, void *arg), void *arg)
{
	bool file = path && strcmp(path, "-");
	FILE *f = stdout;
	int rc = 0;

	if (file) {
		f = fopen(path, "w");
		if (!f) {
			fprintf(stderr, "dial9 %s: %s: %s\n", cmd, path,
				strerror(errno));
			return 1;
		}
	}
	if (fn(f, arg)) {
		fprintf(stderr, "dial9 %s: out of memory\n", cmd);
		rc = 1;
	}
	if (file ? fclose(f) : fflush(f)) {
		fprintf(stderr, "dial9 %s: %s: %s\n", cmd,
			file ? path : "stdout", strerror(errno));
		rc = 1;
	}
	if (rc && file)
		unlink(path);
	return rc;
}
