// SPDX-License-Identifier: MIT
/* json.c - JSON strings that are valid UTF-8 whatever the input. */
#include <string.h>

#include "common/text.h"

static const char hexd[] = "0123456789abcdef";

/* The characters of s, escaped, without quotes. */
static size_t escape_body(char *o, const uint8_t *s, size_t len,
			  unsigned int flags)
{
	size_t n = 0;

	for (size_t i = 0; i < len;) {
		uint8_t c = s[i];
		size_t k;

		if (c == '"' || c == '\\') {
			o[n++] = '\\';
			o[n++] = (char)c;
		} else if (c == '\n') {
			o[n++] = '\\';
			o[n++] = 'n';
		} else if (c == '\t') {
			o[n++] = '\\';
			o[n++] = 't';
		} else if (c < 0x20 || c == 0x7f ||
			   ((flags & D9_JSON_HTML) &&
			    (c == '<' || c == '>' || c == '&'))) {
			memcpy(o + n, "\\u00", 4);
			o[n + 4] = hexd[c >> 4];
			o[n + 5] = hexd[c & 15];
			n += 6;
		} else if (c < 0x80) {
			o[n++] = (char)c;
		} else if ((k = d9_utf8_seq(s + i, len - i))) {
			memcpy(o + n, s + i, k);
			n += k;
			i += k;
			continue;
		} else {
			memcpy(o + n, "\xef\xbf\xbd", 3); /* U+FFFD */
			n += 3;
		}
		i++;
	}
	return n;
}

size_t d9_json_escape(char *o, const void *s, size_t len, unsigned int flags)
{
	size_t n = 0;

	o[n++] = '"';
	n += escape_body(o + n, s, len, flags);
	o[n++] = '"';
	return n;
}

void d9_json_fwrite(FILE *f, const void *s, size_t len, unsigned int flags)
{
	const uint8_t *p = s;
	char buf[6 * 256];

	fputc('"', f);
	while (len) {
		size_t k = len > 256 ? 256 : len;

		/* never cut a sequence: end the piece before its lead byte
		 * (a byte four continuations deep starts none anyway) */
		for (int back = 0; k < len && back < 3 &&
				   (p[k] & 0xc0) == 0x80; back++)
			k--;
		fwrite(buf, 1, escape_body(buf, p, k, flags), f);
		p += k;
		len -= k;
	}
	fputc('"', f);
}

void d9_json_str(FILE *f, const char *s)
{
	d9_json_fwrite(f, s ? s : "", s ? strlen(s) : 0, 0);
}
