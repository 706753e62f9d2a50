// SPDX-License-Identifier: MIT
/*
 * cmd_flame.c - dial9 flame [--tid N] [-o FILE] TRACE...: where threads
 * spent their time off the CPU, by the user stack each one left the CPU
 * with (recorded with DIAL9_SCHED_STACKS), as folded stacks, the input
 * of flamegraph.pl, speedscope and Perfetto's importers:
 *
 *   NAME TID;OUTERMOST;...;INNERMOST MICROSECONDS
 *
 * one line per distinct thread and stack, largest first.  A stack's time
 * runs from its switch-out to the thread's next switch-in (blocked and
 * runnable alike, as offcputime counts it); a stack whose switch-in is
 * not in the trace is left out and counted on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/grow.h"
#include "sched/sched_stacks.h"
#include "sched_report.h"
#include "symbols/symbols.h"

struct folded {
	char *key;
	uint64_t ns;
};

struct flame {
	struct sched_stats *st;
	uint32_t tid;
	struct folded *v;
	size_t n, cap;
	size_t open;			/* stacks with no switch-in after */
};

/* Append @s to @buf (at *@at, room @len) with ';' and controls as '_'. */
static void put_frame(char *buf, size_t len, size_t *at, const char *s)
{
	for (; *s && *at + 1 < len; s++)
		buf[(*at)++] = *s == ';' || (unsigned char)*s < 0x20 ? '_' : *s;
	buf[*at] = '\0';
}

static int add_stack(struct flame *f, const struct sched_stack *sk)
{
	char key[4096], frame[512], label[48];
	const struct sched_thread *t;
	long ti;
	size_t at = 0;

	ti = d9_sched_stats_find(f->st, sk->src, sk->tid, sk->pid);
	t = ti >= 0 ? &f->st->threads[ti] : NULL;
	snprintf(label, sizeof(label), "%s %u",
		 t && t->name[0] ? t->name : "?", sk->tid);
	put_frame(key, sizeof(key), &at, label);
	for (uint32_t i = sk->n; i-- > 0;) {
		d9_sched_stacks_frame(f->st->stacks, sk, i, frame, sizeof(frame));
		if (at + 2 < sizeof(key))
			key[at++] = ';';
		put_frame(key, sizeof(key), &at, frame);
	}
	if (d9_grow((void **)&f->v, &f->cap, f->n + 1, sizeof(*f->v)))
		return -ENOMEM;
	f->v[f->n].key = strdup(key);
	if (!f->v[f->n].key)
		return -ENOMEM;
	f->v[f->n++].ns = sk->end - sk->ts;
	return 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct folded *)a)->key,
		      ((const struct folded *)b)->key);
}

static int by_time(const void *pa, const void *pb)
{
	const struct folded *a = pa, *b = pb;

	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	return strcmp(a->key, b->key);
}

static int write_folded(FILE *out, void *arg)
{
	struct flame *f = arg;

	for (size_t i = 0; i < f->n; i++)
		fprintf(out, "%s %" PRIu64 "\n", f->v[i].key,
			(f->v[i].ns + 500) / 1000);
	return 0;
}

/* The stacks of @st into f->v, equal ones summed, largest first. */
static int fold(struct flame *f)
{
	const struct sched_stacks *s = f->st->stacks;
	size_t n = 0;
	int ret = 0;

	for (size_t i = 0; !ret && i < s->n; i++) {
		const struct sched_stack *sk = &s->v[i];

		if (f->tid && sk->tid != f->tid)
			continue;
		if (!sk->end)
			f->open++;
		else
			ret = add_stack(f, sk);
	}
	if (ret)
		return ret;
	d9_sort(f->v, f->n, sizeof(*f->v), by_key);
	for (size_t i = 0; i < f->n; i++) {
		if (n && !strcmp(f->v[n - 1].key, f->v[i].key)) {
			f->v[n - 1].ns += f->v[i].ns;
			free(f->v[i].key);
		} else {
			f->v[n++] = f->v[i];
		}
	}
	f->n = n;
	d9_sort(f->v, f->n, sizeof(*f->v), by_time);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dial9 flame [--tid N] [--no-symbols] [-o FILE] TRACE...\n"
		"Off-CPU time by the user stack each thread left the CPU with\n"
		"(traces recorded with DIAL9_SCHED_STACKS=1), as folded stacks:\n"
		"\"NAME TID;OUTERMOST;...;INNERMOST MICROSECONDS\", largest first,\n"
		"for flamegraph.pl or speedscope.  --tid: one thread only.\n"
		"Frames are function names, read from the files the trace's\n"
		"mappings name where they are here, else object+0xoffset\n"
		"(--no-symbols: always).\n");
}

int cmd_flame(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tid", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "no-symbols", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sched_stats st;
	struct flame f = { .st = &st };
	struct d9_syms syms;
	bool symbols = true;
	const char *outpath = NULL;
	char **paths, *end;
	int opt, n, rc = 0;
	unsigned long v;

	optind = 1;	/* a second call in one process (the fuzzer) */
	while ((opt = getopt_long(argc, argv, "t:o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !v || v > UINT32_MAX) {
				fprintf(stderr, "dial9 flame: bad --tid '%s'\n",
					optarg);
				return 2;
			}
			f.tid = (uint32_t)v;
			break;
		case 'o': outpath = optarg; break;
		case 'S': symbols = false; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	d9_sched_stats_init(&st);
	if (d9_sched_stats_want_stacks(&st)) {
		fprintf(stderr, "dial9 flame: out of memory\n");
		return 1;
	}
	/* frames as function names where the files are here */
	d9_syms_init(&syms);
	if (symbols) {
		st.stacks->symbolize = d9_syms_lookup;
		st.stacks->sym_ctx = &syms;
		syms.trace = st.stacks;	/* its own table first */
		st.stacks->names_only = true;
	}
	n = cli_collect(argc - optind, argv + optind, &paths);
	if (n < 0) {
		d9_sched_stats_free(&st);
		return 1;
	}
	for (int i = 0; i < n && !rc; i++) {
		cli_progress("flame", i, n, paths[i]);
		if (sched_file(&st, paths[i]))
			rc = 1;
	}
	cli_progress_done();
	cli_free_paths(paths, n);
	if (!rc && fold(&f)) {
		fprintf(stderr, "dial9 flame: out of memory\n");
		rc = 1;
	}
	if (!rc && !st.stacks->n) {
		fprintf(stderr, "dial9 flame: no stacks in these traces (record with DIAL9_SCHED_STACKS=1)\n");
		rc = 1;
	}
	if (!rc && !f.n)
		fprintf(stderr, "dial9 flame: no stack%s has a switch-in after it: nothing to show\n",
			f.tid ? " of that thread" : "");
	if (!rc && f.open)
		fprintf(stderr, "dial9 flame: %zu stacks left out: their thread's next switch-in is not in the traces\n",
			f.open);
	if (!rc)
		d9_syms_notes(&syms, "flame");
	if (!rc)
		rc = cli_write_output("flame", outpath, write_folded, &f);
	for (size_t i = 0; i < f.n; i++)
		free(f.v[i].key);
	free(f.v);
	d9_sched_stats_free(&st);
	d9_syms_free(&syms);
	return rc;
}
