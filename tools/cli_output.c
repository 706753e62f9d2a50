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

/* ---- text that reaches a terminal: no control character of a trace ---- */

/*
 * A stream that writes through to @fd with every C0 control character
 * but newline and tab, DEL, and the C1 controls as UTF-8 (U+0080 to
 * U+009F, CSI among them) shown as '?': names and paths come from
 * traces, and ESC sequences in them would retitle, clear or write the
 * clipboard of the user's terminal (OSC 52).
 */
struct safe_out {
	int fd;
	bool c2;	/* the last byte written was 0xc2 (held back) */
};

static ssize_t put_all(int fd, const char *p, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(fd, p + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return (ssize_t)n;
}

static ssize_t safe_write(void *cookie, const char *buf, size_t size)
{
	struct safe_out *o = cookie;
	char out[4096 + 2];
	size_t k = 0;

	for (size_t i = 0; i < size; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (o->c2) {
			o->c2 = false;
			if (c >= 0x80 && c <= 0x9f) {
				out[k++] = '?';
				goto next;
			}
			out[k++] = (char)0xc2;
		}
		if (c == 0xc2) {
			o->c2 = true;
		} else {
			out[k++] = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ?
				   '?' : (char)c;
		}
next:
		if (k >= sizeof(out) - 2) {
			if (put_all(o->fd, out, k) < 0)
				return -1;
			k = 0;
		}
	}
	if (k && put_all(o->fd, out, k) < 0)
		return -1;
	return (ssize_t)size;
}

static int safe_close(void *cookie)
{
	struct safe_out *o = cookie;

	if (o->c2)
		put_all(o->fd, "\xc2", 1);
	o->c2 = false;
	return 0;
}

static struct safe_out safe_outs[2] = { { .fd = 1 }, { .fd = 2 } };

/* The terminal's own stderr, for the progress line's escapes. */
static FILE *raw_err;

int cli_safe_stdio(bool out)
{
	cookie_io_functions_t io = { .write = safe_write, .close = safe_close };
	FILE *f[2] = { NULL, NULL };

	for (int i = out ? 0 : 1; i < 2; i++) {
		f[i] = fopencookie(&safe_outs[i], "w", io);
		if (!f[i])
			return -ENOMEM;
		if (i)
			setvbuf(f[i], NULL, _IONBF, 0);
		else
			setvbuf(f[i], NULL, isatty(1) ? _IOLBF : _IOFBF, 1 << 16);
	}
	raw_err = stderr;
	if (f[0]) {
		fflush(stdout);
		stdout = f[0];
	}
	stderr = f[1];
	return 0;
}

/* Progress on stderr for long work, only when stderr is a terminal. */
static bool progress_shown;

void cli_progress(const char *what, int i, int n, const char *path)
{
	char safe[512];

	if (n < 2 || !isatty(2))
		return;
	fprintf(raw_err ? raw_err : stderr, "\r\033[K%s: %d/%d %s", what, i + 1,
		n, cli_safe(path, safe, sizeof(safe)));
	progress_shown = true;
}

void cli_progress_done(void)
{
	if (progress_shown)
		fprintf(raw_err ? raw_err : stderr, "\r\033[K");
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
