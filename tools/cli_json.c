// SPDX-License-Identifier: MIT
/*
 * cli_json.c - an event's values as JSON, as dial9 dump prints them and
 * the timeline writes them into its pool (export, report): numbers,
 * booleans and null here, strings through the library's one JSON writer
 * (lib/json.c), bytes as hex digits.
 */
#include <math.h>

#include "cli.h"

size_t cli_json_scalar(char *buf, const struct dial9_value *v)
{
	int n;

	switch (v->type) {
	case DIAL9_U64:
		n = snprintf(buf, CLI_JSON_SCALAR, "%llu", (unsigned long long)v->u64);
		break;
	case DIAL9_I64:
		n = snprintf(buf, CLI_JSON_SCALAR, "%lld", (long long)v->i64);
		break;
	case DIAL9_BOOL:
		n = snprintf(buf, CLI_JSON_SCALAR, "%s", v->b ? "true" : "false");
		break;
	case DIAL9_F64:
		n = isfinite(v->f64) ? snprintf(buf, CLI_JSON_SCALAR, "%.17g", v->f64) :
				       snprintf(buf, CLI_JSON_SCALAR, "null");
		break;
	case DIAL9_STR:
	case DIAL9_ISTR:
	case DIAL9_BYTES:
		return 0;
	default:
		n = snprintf(buf, CLI_JSON_SCALAR, "null"); /* a type from a newer writer */
	}
	return (size_t)n;	/* at most 24 ("%.17g"): never cut */
}

void cli_json_value(FILE *out, const struct dial9_value *v)
{
	char num[CLI_JSON_SCALAR];
	size_t n = cli_json_scalar(num, v);

	if (n) {
		fwrite(num, 1, n, out);
	} else if (v->type == DIAL9_BYTES) {
		const uint8_t *b = v->str.ptr;

		fputc('"', out);
		for (size_t i = 0; i < v->str.len; i++)
			fprintf(out, "%02x", b[i]);
		fputc('"', out);
	} else {
		cli_json_str(out, v->str.ptr, v->str.len);
	}
}
