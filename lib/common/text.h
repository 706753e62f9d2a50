/* SPDX-License-Identifier: MIT */
/*
 * text.h - UTF-8 and JSON strings, shared by the library (manifests,
 * thread names) and the dial9 command (dump, export, report, sched).
 * Not installed: the command links these from libdial9.a.
 */
#ifndef DIAL9_TEXT_H
#define DIAL9_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The length of the valid UTF-8 sequence (RFC 3629: no overlong forms,
 * no surrogates, at most U+10FFFF) at @s, of at most @len bytes: 1 to 4,
 * or 0 if @s does not start one (@len 0 included).
 */
size_t d9_utf8_seq(const uint8_t *s, size_t len);

/*
 * The longest prefix of @s, at most @max bytes and up to its first NUL,
 * that does not end inside a UTF-8 sequence: a name cut to a fixed size
 * is cut between characters.  Bytes before the cut are not checked.
 */
size_t d9_utf8_cut(const char *s, size_t max);

/* Also escape <, > and & (as \u003c...): for JSON inside an HTML page. */
#define D9_JSON_HTML 1u

/* Bytes d9_json_escape() may write for @len input bytes, quotes included. */
#define D9_JSON_ROOM(len) (6 * (size_t)(len) + 2)

/*
 * @len bytes at @s as a JSON string, quotes included, into @o (room for
 * D9_JSON_ROOM(@len) bytes); returns the length written.  '"', '\\' and
 * control characters are escaped; every byte that is not part of a valid
 * UTF-8 sequence is written as U+FFFD, so that the output is always
 * valid UTF-8 whatever the input.
 */
size_t d9_json_escape(char *o, const void *s, size_t len, unsigned int flags);

/* The same, written to @f (any length, in pieces; no allocation). */
void d9_json_fwrite(FILE *f, const void *s, size_t len, unsigned int flags);

/* A NUL-terminated string the same way (NULL is ""). */
void d9_json_str(FILE *f, const char *s);

#endif
