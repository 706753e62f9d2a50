// SPDX-License-Identifier: MIT
/*
 * pool.c - the timeline's string pool (interned, NUL-terminated
 * strings) and the JSON it writes into the pool and out.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tl_internal.h"

/* ---- string pool ---- */

int tl_pool_put(struct timeline *tl, const void *s, size_t len)
{
	if (tl->pool_len + len > UINT32_MAX - 1)
		return -ENOMEM;
	if (cli_grow((void **)&tl->pool, &tl->pool_cap, tl->pool_len + len + 1, 1))
		return -ENOMEM;
	memcpy(tl->pool + tl->pool_len, s, len);
	tl->pool_len += len;
	return 0;
}

int tl_pool_printf(struct timeline *tl, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return tl_pool_put(tl, buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* The pool offset of a NUL-terminated copy of s, shared by equal strings. */
int tl_intern(struct timeline *tl, const void *s, size_t len, uint32_t *off)
{
	size_t i;

	if (!len) {
		*off = 0;
		return 0;
	}
	if (tl->nstr * 2 >= tl->strtab_cap) {
		size_t nc = tl->strtab_cap ? tl->strtab_cap * 2 : 1024;
		uint32_t *nt = calloc(nc, sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		for (size_t j = 0; j < tl->strtab_cap; j++) {
			uint32_t o = tl->strtab[j];

			if (!o)
				continue;
			i = d9_fnv1a(tl->pool + o, strlen(tl->pool + o)) & (nc - 1);
			while (nt[i])
				i = (i + 1) & (nc - 1);
			nt[i] = o;
		}
		free(tl->strtab);
		tl->strtab = nt;
		tl->strtab_cap = nc;
	}
	i = d9_fnv1a(s, len) & (tl->strtab_cap - 1);
	for (; tl->strtab[i]; i = (i + 1) & (tl->strtab_cap - 1)) {
		const char *c = tl->pool + tl->strtab[i];

		if (!strncmp(c, s, len) && c[len] == 0 && !memchr(s, 0, len)) {
			*off = tl->strtab[i];
			return 0;
		}
	}
	*off = (uint32_t)tl->pool_len;
	if (tl_pool_put(tl, s, strnlen(s, len)) || tl_pool_put(tl, "", 1))
		return -ENOMEM;
	tl->strtab[i] = *off;
	tl->nstr++;
	return 0;
}

/* ---- JSON ---- */

void tl_json_str(FILE *out, const char *s, size_t len)
{
	d9_json_fwrite(out, s, len, D9_JSON_HTML);
}

/* A string, or null. */
static void json_opt_str(FILE *out, const char *s)
{
	if (s)
		tl_json_str(out, s, strlen(s));
	else
		fputs("null", out);
}

void tl_json_sources(FILE *out, const struct timeline *tl)
{
	fputs("\"sched_sources\":[", out);
	for (size_t i = 0; i < tl->st.nsrcs; i++) {
		const struct sched_source *s = &tl->st.srcs[i];

		fputs(i ? ",{\"host\":" : "{\"host\":", out);
		json_opt_str(out, s->host);
		fputs(",\"boot_id\":", out);
		json_opt_str(out, s->boot_id);
		fputs(",\"backend\":", out);
		json_opt_str(out, s->backend);
		fputs(",\"note\":", out);
		json_opt_str(out, s->note);
		fputc('}', out);
	}
	fputc(']', out);
}

void tl_json_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%llu.%03u", (unsigned long long)(ns / 1000),
		(unsigned int)(ns % 1000));
}

static int pool_json_str(struct timeline *tl, const void *s, size_t len)
{
	char buf[D9_JSON_ROOM(64)];
	char *o = len > 64 ? malloc(D9_JSON_ROOM(len)) : buf;
	int ret;

	if (!o)
		return -ENOMEM;
	ret = tl_pool_put(tl, o, d9_json_escape(o, s, len, D9_JSON_HTML));
	if (o != buf)
		free(o);
	return ret;
}

static int pool_json_value(struct timeline *tl, const struct dial9_value *v)
{
	static const char hexd[] = "0123456789abcdef";
	char num[CLI_JSON_SCALAR];
	size_t n = cli_json_scalar(num, v);
	const uint8_t *b = v->str.ptr;
	int ret;

	if (n)
		return tl_pool_put(tl, num, n);
	if (v->type != DIAL9_BYTES)
		return pool_json_str(tl, v->str.ptr, v->str.len);
	ret = tl_pool_put(tl, "\"", 1);
	for (size_t i = 0; !ret && i < v->str.len; i++) {
		char h[2] = { hexd[b[i] >> 4], hexd[b[i] & 15] };

		ret = tl_pool_put(tl, h, 2);
	}
	return ret ? ret : tl_pool_put(tl, "\"", 1);
}

/* An event's fields as a JSON object in the pool, minus @skip fields. */
int tl_pool_args(struct timeline *tl, const struct dial9_record *r,
		     const char *skip1, const char *skip2, uint32_t *off)
{
	const struct dial9_schema *s = r->schema;
	bool first = true;
	int ret;

	*off = (uint32_t)tl->pool_len;
	ret = tl_pool_put(tl, "{", 1);
	for (uint32_t i = 0; !ret && i < s->nfields; i++) {
		const char *fn = s->fields[i].name;

		if ((skip1 && !strcmp(fn, skip1)) || (skip2 && !strcmp(fn, skip2)))
			continue;
		if (!first)
			ret = tl_pool_put(tl, ",", 1);
		first = false;
		if (!ret)
			ret = pool_json_str(tl, fn, strlen(fn));
		if (!ret)
			ret = tl_pool_put(tl, ":", 1);
		if (!ret)
			ret = pool_json_value(tl, &r->values[i]);
	}
	if (!ret)
		ret = tl_pool_put(tl, "}", 2);	/* with the NUL */
	if (!ret && first)
		*off = 0;	/* no fields: no args */
	return ret;
}

