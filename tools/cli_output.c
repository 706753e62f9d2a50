// SPDX-License-Identifier: MIT
/*
 * cli_output.c - what the subcommands tell and write: decoder errors,
 * progress on a terminal, and an output file written whole or removed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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

const char *cli_safe(const char *s, char *buf, size_t len)
{
	size_t i = 0;

	for (; *s && i + 1 < len; s++)
		buf[i++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	if (len)
		buf[i] = '\0';
	return buf;
}
