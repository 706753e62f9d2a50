// SPDX-License-Identifier: MIT
/*
 * cli_json.c - an event's values as JSON, as dial9 dump prints them;
 * strings through the library's one JSON writer (lib/json.c).
 */
#include <math.h>

#include "cli.h"

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
