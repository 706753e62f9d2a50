// SPDX-License-Identifier: MIT
/*
 * cmd_flame.c - dial9 flame [--on-cpu] [--tid N] [--span NAME]
 * [--from T] [--to T] [--svg] [-o FILE] TRACE...: where threads spent
 * their time, as folded stacks (the input of flamegraph.pl, speedscope
 * and Perfetto's importers) or an SVG flame graph of our own:
 *
 *   NAME TID;OUTERMOST;...;INNERMOST VALUE
 *
 * one line per distinct thread and stack, largest first.  Off the CPU
 * (the default; stacks recorded with DIAL9_SCHED_STACKS): VALUE is the
 * microseconds from each stack's switch-out to the thread's next
 * switch-in (blocked and runnable alike, as offcputime counts it); a
 * stack whose switch-in is not in the trace is left out and counted on
 * stderr.  On the CPU (--on-cpu; samples recorded with
 * DIAL9_CPU_SAMPLE_HZ): VALUE is the number of samples.  The folding and
 * filters are flame_fold.c, the SVG flame_svg.c.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flame.h"
#include "sched/sched_stacks.h"
#include "sched_report.h"
#include "symbols/symbols.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dial9 flame [--on-cpu] [--tid N] [--span NAME] [--from T] [--to T]\n"
		"                   [--svg] [--no-symbols] [-o FILE] TRACE...\n"
		"Off-CPU time by the user stack each thread left the CPU with\n"
		"(traces recorded with DIAL9_SCHED_STACKS=1), or with --on-cpu the\n"
		"on-CPU samples (DIAL9_CPU_SAMPLE_HZ, on by default), as folded\n"
		"stacks: \"NAME TID;OUTERMOST;...;INNERMOST VALUE\", largest first,\n"
		"VALUE in microseconds off the CPU or in samples on it, for\n"
		"flamegraph.pl or speedscope; --svg: a flame graph.\n"
		"--tid: one thread.  --span NAME: only while an application span of\n"
		"that name was open on the thread.  --from/--to T: only within that\n"
		"time, in the trace's seconds as dial9 sched prints them\n"
		"(1000.000065), or +S from the traces' first scheduler event.\n"
		"Frames are function names, read from the files the trace's\n"
		"mappings name where they are here, else object+0xoffset\n"
		"(--no-symbols: always).\n");
}

/*
 * A time argument: "[+]SECONDS[.FRACTION]" (at most 9 digits after the
 * point) in nanoseconds into *@ns, *@rel set for "+"; 0 or -EINVAL.
 */
static int parse_secs(const char *s, uint64_t *ns, bool *rel)
{
	uint64_t whole = 0, frac = 0;
	int digits = 0, fdigits = 0;

	*rel = *s == '+';
	s += *rel;
	for (; isdigit((unsigned char)*s); s++, digits++) {
		if (whole > (UINT64_MAX / 1000000000u - 9) / 10)
			return -EINVAL;
		whole = whole * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.')
		for (s++; isdigit((unsigned char)*s); s++, fdigits++) {
			if (fdigits == 9)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*s - '0');
		}
	if (*s || (!digits && !fdigits))
		return -EINVAL;
	for (int i = fdigits; i < 9; i++)
		frac *= 10;
	*ns = whole * 1000000000u + frac;
	return 0;
}

/*
 * The times the application span f->span was open on each thread (the
 * library pairs them, sched_spans.h); 0 or 1 after a message.
 */
static int span_times(struct flame *f)
{
	struct sched_spans *sp = f->st->spans;
	size_t found = 0;
	int err = 0;

	d9_sched_spans_at(sp, 0, 0, 0, &err);	/* pairs them */
	for (size_t i = 0; !err && i < sp->n; i++) {
		const struct sched_span *s = &sp->v[i];

		if (strcmp(d9_sched_span_name(sp, s), f->span))
			continue;
		found++;
		err = flame_span_add(f, s->src, s->tid, s->start, s->end);
	}
	if (err) {
		fprintf(stderr, "dial9 flame: out of memory\n");
		return 1;
	}
	if (!found)
		fprintf(stderr, "dial9 flame: no span named '%s' in these traces\n",
			f->span);
	return 0;
}

struct args {
	bool symbols, svg;
	const char *outpath, *from, *to;
};

static int parse_args(int argc, char **argv, struct flame *f,
		      struct args *a)
{
	static const struct option opts[] = {
		{ "tid", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "no-symbols", no_argument, NULL, 'S' },
		{ "on-cpu", no_argument, NULL, 'c' },
		{ "span", required_argument, NULL, 's' },
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 'T' },
		{ "svg", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t ns;
	unsigned long v;
	char *end;
	bool rel;
	int opt;

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
			f->tid = (uint32_t)v;
			break;
		case 'o': a->outpath = optarg; break;
		case 'S': a->symbols = false; break;
		case 'c': f->on_cpu = true; break;
		case 's': f->span = optarg; break;
		case 'g': a->svg = true; break;
		case 'f':
		case 'T':
			if (parse_secs(optarg, &ns, &rel)) {
				fprintf(stderr, "dial9 flame: bad --%s '%s' (seconds, or +seconds from the start)\n",
					opt == 'f' ? "from" : "to", optarg);
				return 2;
			}
			if (opt == 'f')
				a->from = optarg;
			else
				a->to = optarg;
			break;
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	return 0;
}

/* --from and --to, now that the traces' first event is known. */
static void window(struct flame *f, const struct args *a)
{
	uint64_t ns;
	bool rel;

	f->to = UINT64_MAX;
	if (a->from && !parse_secs(a->from, &ns, &rel))
		f->from = rel ? f->st->first_ns + ns : ns;
	if (a->to && !parse_secs(a->to, &ns, &rel))
		f->to = rel ? f->st->first_ns + ns : ns;
}

/* What the output leaves out, on stderr; 1 if there was nothing at all. */
static int notes(const struct flame *f)
{
	const struct sched_stacks *s = f->st->stacks;

	if (f->st->lost)
		fprintf(stderr, "dial9 flame: INCOMPLETE: %" PRIu64 " scheduler records lost (stacks and samples among them; dial9 sched lists the windows)\n",
			f->st->lost);
	if (f->on_cpu && s->samples_missed)
		fprintf(stderr, "dial9 flame: INCOMPLETE: the sampling timers fired too late for %" PRIu64 " periods (interrupts off): CPU time the samples do not show\n",
			s->samples_missed);
	if (f->on_cpu && !s->nsamples) {
		fprintf(stderr, "dial9 flame: no CPU samples in these traces (record with DIAL9_CPU_SAMPLE_HZ, e.g. 99, with dial9.ko or perf)\n");
		return 1;
	}
	if (!f->on_cpu && !s->n) {
		fprintf(stderr, "dial9 flame: no stacks in these traces (record with DIAL9_SCHED_STACKS=1; --on-cpu for CPU samples)\n");
		return 1;
	}
	if (!f->n)
		fprintf(stderr, "dial9 flame: nothing %s: nothing to show\n",
			f->tid || f->span || f->from || f->to != UINT64_MAX ?
			"passes the filters" : f->on_cpu ? "sampled" :
			"has a switch-in after it");
	if (f->open)
		fprintf(stderr, "dial9 flame: %zu stacks left out: their thread's next switch-in is not in the traces\n",
			f->open);
	return 0;
}

int cmd_flame(int argc, char **argv)
{
	struct sched_stats st;
	struct flame f = { .st = &st };
	struct args a = { .symbols = true };
	struct d9_syms syms;
	char **paths;
	int n, rc;

	rc = parse_args(argc, argv, &f, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	d9_sched_stats_init(&st);
	if (d9_sched_stats_want_stacks(&st) ||
	    (f.span && d9_sched_stats_want_spans(&st))) {
		fprintf(stderr, "dial9 flame: out of memory\n");
		return 1;
	}
	/* frames as function names where the files are here */
	d9_syms_init(&syms);
	if (a.symbols) {
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
	if (!rc && f.span)
		rc = span_times(&f);
	window(&f, &a);
	if (!rc && flame_fold(&f)) {
		fprintf(stderr, "dial9 flame: out of memory\n");
		rc = 1;
	}
	if (!rc)
		rc = notes(&f);
	if (!rc)
		d9_syms_notes(&syms, "flame");
	if (!rc)
		rc = cli_write_output("flame", a.outpath, a.svg ?
				      flame_write_svg : flame_write_folded, &f);
	flame_free(&f);
	d9_sched_stats_free(&st);
	d9_syms_free(&syms);
	return rc;
}
