// SPDX-License-Identifier: MIT
/* json.c - JSON strings for the library's JSON writers (json.h). */
#include "json.h"

/* A JSON string (quotes included) appended to f. */
void d9_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

