/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what the dial9 subcommands share. Only <dial9.h> below, and the
 * library's text helpers (UTF-8, JSON strings) from libdial9.a.
 */
#ifndef DIAL9_CLI_H
#define DIAL9_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dial9.h"
#include "common/text.h"
#include "common/grow.h"

/* dial9 ls and fetch talk to S3 through libcurl, unless the command is
 * built with make DIAL9_S3=0 (lib/lib.mk passes -DDIAL9_S3=0). */
#ifndef DIAL9_S3
#define DIAL9_S3 1
#endif

/* A trace file mapped into memory. */
struct cli_file {
	char *path;
	const uint8_t *data;
	size_t len;
};

/*
 * Expand TRACE arguments (files, or directories searched recursively
 * for segment files) into a sorted list; returns the count or -errno
 * after printing a message.  Symbolic links are followed, but a
 * directory (by device and inode) and a segment file are taken once
 * each, so a link loop neither repeats segments nor recurses forever.
 * Arguments that are neither directories nor regular files (FIFOs,
 * devices, sockets) are refused.
 */
int cli_collect(int argc, char **argv, char ***paths);
void cli_free_paths(char **paths, int n);
int cli_map(const char *path, struct cli_file *f);
void cli_unmap(struct cli_file *f);

/*
 * An LZ4 segment decompresses to at most CLI_INFLATE_MAX_MB MiB, or
 * DIAL9_INFLATE_MAX_MB from the environment (cli_inflate_max() in
 * bytes); past that it is refused with -EFBIG before it takes the memory.
 */
#define CLI_INFLATE_MAX_MB ((size_t)256)
size_t cli_inflate_max(void);
int cli_lz4_inflate(const uint8_t *in, size_t n, struct cli_file *f);


/*
 * Make room for @need elements of @size bytes in *@v (capacity *@cap,
 * doubled as needed); 0 or -ENOMEM, *@v unchanged on failure.
 */
static inline int cli_grow(void **v, size_t *cap, size_t need, size_t size)
{
	return d9_grow(v, cap, need, size);
}
/* Print s (len bytes) as a JSON string, always valid UTF-8 (lib/common/text.h). */
static inline void cli_json_str(FILE *out, const void *s, size_t len)
{
	d9_json_fwrite(out, s, len, 0);
}
/*
 * A value that is not a string nor bytes (a number, a boolean, or null:
 * a non-finite double, a type from a newer writer) as JSON text in @buf,
 * of CLI_JSON_SCALAR bytes; its length, or 0 for strings and bytes.
 */
#define CLI_JSON_SCALAR 32
size_t cli_json_scalar(char *buf, const struct dial9_value *v);
/* Print one value as JSON (cli_json.c). */
void cli_json_value(FILE *out, const struct dial9_value *v);
/* Report a decoder error as "dial9: FILE: what at offset N"; this and
 * what follows are in cli_output.c. */
void cli_decode_error(const char *path, int err, uint64_t off);

/* "what: i/n path" on stderr when it is a terminal; nothing otherwise. */
void cli_progress(const char *what, int i, int n, const char *path);
/* stderr (and stdout if @out) through a filter that shows control
 * characters as '?' (cli_output.c); 0 or -ENOMEM. */
int cli_safe_stdio(bool out);
void cli_progress_done(void);

/*
 * Write a command's output to @path ("-" or NULL: stdout) with @fn, which
 * returns non-zero when it runs out of memory.  On any failure the message
 * names @cmd and the file, a partial file is removed, and 1 is returned.
 */
int cli_write_output(const char *cmd, const char *path,
		     int (*fn)(FILE *f, void *arg), void *arg);

/*
 * @s for a terminal: control characters (which a trace or a summary may
 * carry, in a name) as '?', cut to @len - 1 bytes; returns @buf.
 */
const char *cli_safe(const char *s, char *buf, size_t len);

int cmd_dump(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_sched(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_flame(int argc, char **argv);

#endif
