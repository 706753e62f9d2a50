// SPDX-License-Identifier: MIT
/*
 * cmd_dump.c - dial9 dump [--sorted] TRACE...: every event as one JSON
 * line, in file order, or with --sorted in global time order across
 * batches and segments.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sched/sched_stats.h"

struct line {
	uint64_t ts, seq;
	char *text;
	size_t len;
};

struct lines {
	struct line *v;
	size_t n, cap;
};

/* A file's first clock sync: its events' wall clock (0: none yet). */
struct sync {
	uint64_t mono, real;
};

/* Whether field @i is a scheduler id the trace does not know (a task
 * not named: tid 4294967295, and the pid beside it; a CPU redacted, as
 * another user's woken task's target_cpu): null, not a number. */
static bool unknown_id(const struct dial9_record *r, uint32_t i)
{
	const struct dial9_schema *s = r->schema;
	const char *name = s->fields[i].name;
	size_t n = strlen(name);
	char tid[64];

	if (strncmp(s->name, "sched.", 6) || r->values[i].type != DIAL9_U64 ||
	    n < 3 || n >= sizeof(tid))
		return false;
	if (!strcmp(name + n - 3, "tid") || !strcmp(name + n - 3, "cpu"))
		return r->values[i].u64 == UINT32_MAX;	/* also a redacted CPU */
	if (strcmp(name + n - 3, "pid"))
		return false;
	memcpy(tid, name, n + 1);
	tid[n - 3] = 't';	/* next_pid -> next_tid */
	for (uint32_t j = 0; j < s->nfields; j++)
		if (!strcmp(s->fields[j].name, tid))
			return r->values[j].type == DIAL9_U64 &&
			       r->values[j].u64 == UINT32_MAX;
	return false;
}

static void print_event(FILE *out, const struct dial9_record *r,
			const struct sync *sy)
{
	const struct dial9_schema *s = r->schema;
	char utc[40] = "";

	if (sy->real)
		d9_sched_utc(d9_wall_ns(sy->mono, sy->real, r->ts_ns), utc,
			     sizeof(utc));
	fprintf(out, "{\"ts\":%llu,", (unsigned long long)r->ts_ns);
	if (*utc)
		fprintf(out, "\"utc\":\"%s\",", utc);
	fputs("\"name\":", out);
	cli_json_str(out, s->name, strlen(s->name));
	fprintf(out, ",\"kind\":\"%s\",\"tid\":%u,\"thread\":",
		dial9_kind_name(s->kind), r->tid);
	cli_json_str(out, r->thread_name, strlen(r->thread_name));
	fputs(",\"fields\":{", out);
	for (uint32_t i = 0; i < s->nfields; i++) {
		if (i)
			fputc(',', out);
		cli_json_str(out, s->fields[i].name, strlen(s->fields[i].name));
		fputc(':', out);
		if (unknown_id(r, i))
			fputs("null", out);
		else
			cli_json_value(out, &r->values[i]);
	}
	fputs("}}\n", out);
}

static int keep(struct lines *ls, const struct dial9_record *r,
		const struct sync *sy)
{
	struct line *l;
	FILE *m;

	if (ls->n == ls->cap) {
		size_t nc = ls->cap ? ls->cap * 2 : 1024;
		struct line *nv = realloc(ls->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		ls->v = nv;
		ls->cap = nc;
	}
	l = &ls->v[ls->n];
	m = open_memstream(&l->text, &l->len);
	if (!m)
		return -ENOMEM;
	print_event(m, r, sy);
	fclose(m);
	l->ts = r->ts_ns;
	l->seq = ls->n++;
	return 0;
}

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Decode one file; events go to stdout or into ls. 0 or an error. */
static int dump_file(const char *path, struct lines *ls)
{
	struct cli_file f;
	struct dial9_decoder *d;
	struct dial9_record r;
	struct sync sy = { 0, 0 };
	int ret = cli_map(path, &f);

	if (ret)
		return ret;
	ret = dial9_decoder_new(&d, f.data, f.len);
	if (ret) {
		cli_unmap(&f);
		return ret;
	}
	while ((ret = dial9_decoder_next(d, &r)) == 1) {
		if (r.kind == DIAL9_RECORD_CLOCK_SYNC && !sy.real &&
		    r.real_ns) {
			sy.mono = r.mono_ns;
			sy.real = r.real_ns;
		}
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		if (ls) {
			if ((ret = keep(ls, &r, &sy)))
				break;
		} else {
			print_event(stdout, &r, &sy);
		}
	}
	if (ret < 0)
		cli_decode_error(path, ret, dial9_decoder_offset(d));
	dial9_decoder_free(d);
	cli_unmap(&f);
	return ret;
}

int cmd_dump(int argc, char **argv)
{
	struct lines ls = { NULL, 0, 0 };
	int sorted = 0, n, rc = 0, first = 1;
	char **paths;

	while (first < argc && argv[first][0] == '-') {
		if (!strcmp(argv[first], "--sorted")) {
			sorted = 1;
		} else {
			fprintf(stderr, "dial9 dump: unknown option %s\n"
					"usage: dial9 dump [--sorted] TRACE...\n",
				argv[first]);
			return 2;
		}
		first++;
	}
	if (first == argc) {
		fprintf(stderr, "usage: dial9 dump [--sorted] TRACE...\n");
		return 2;
	}
	n = cli_collect(argc - first, argv + first, &paths);
	if (n < 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (dump_file(paths[i], sorted ? &ls : NULL))
			rc = 1;
	if (sorted) {
		d9_sort(ls.v, ls.n, sizeof(*ls.v), cmp_line);
		for (size_t i = 0; i < ls.n; i++) {
			fwrite(ls.v[i].text, 1, ls.v[i].len, stdout);
			free(ls.v[i].text);
		}
		free(ls.v);
	}
	cli_free_paths(paths, n);
	if (fflush(stdout))
		rc = 1;
	return rc;
}
