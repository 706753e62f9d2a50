// SPDX-License-Identifier: MIT
/*
 * cmd_sched.c - `dial9 sched`: who waited for a CPU, how long, and when.
 *
 *   dial9 sched [--tid N] [--min-delay US] [--top N] [--json] TRACE...
 *   dial9 sched --live [-p PID]... [--threshold US] [--json]
 *
 * From traces it reads the sched.* events; live it reads the kernel's
 * records directly (dial9.ko, else perf), prints every runqueue delay
 * above the threshold as it happens, and the report on Ctrl-C.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/dial9.h>

#include "cli.h"
#include "sched_stats.h"

/* Field indexes of one schema, looked up once per schema. */
struct sched_fields {
	const struct dial9_schema *schema;
	int kind;
	int tid, pid, runnable, wait, known, name, count, run, slices;
};

enum { K_OTHER, K_OUT, K_IN, K_MIGRATE, K_COMM, K_LOST, K_SSTAT };

static uint64_t fu64(const struct dial9_record *r, int i)
{
	return i >= 0 && r->values[i].type == DIAL9_U64 ? r->values[i].u64 : 0;
}

static bool fbool(const struct dial9_record *r, int i)
{
	return i >= 0 && r->values[i].type == DIAL9_BOOL && r->values[i].b;
}

static void lookup(struct sched_fields *f, const struct dial9_schema *s)
{
	static const struct {
		const char *name;
		int kind;
	} names[] = {
		{ "sched.switch_out", K_OUT }, { "sched.switch_in", K_IN },
		{ "sched.migrate", K_MIGRATE }, { "sched.comm", K_COMM },
		{ "sched.lost", K_LOST }, { "sched.schedstat", K_SSTAT },
	};

	memset(f, 0, sizeof(*f));
	f->schema = s;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s->name, names[i].name))
			f->kind = names[i].kind;
	f->tid = dial9_schema_field_index(s, "tid");
	f->pid = dial9_schema_field_index(s, "pid");
	f->runnable = dial9_schema_field_index(s, "preempted");
	f->wait = dial9_schema_field_index(s, "runq_delay_ns");
	f->known = dial9_schema_field_index(s, "delay_known");
	f->name = dial9_schema_field_index(s, "name");
	f->count = dial9_schema_field_index(s, "count");
	f->run = dial9_schema_field_index(s, "run_ns");
	f->slices = dial9_schema_field_index(s, "timeslices");
}

static int sched_event(struct sched_stats *st, const struct sched_fields *f,
		       const struct dial9_record *r)
{
	uint32_t tid = (uint32_t)fu64(r, f->tid), pid = (uint32_t)fu64(r, f->pid);

	switch (f->kind) {
	case K_OUT:
		return sched_stats_out(st, r->ts_ns, tid, pid,
				       fbool(r, f->runnable));
	case K_IN:
		return sched_stats_in(st, r->ts_ns, tid, pid,
				      fbool(r, f->known), fu64(r, f->wait));
	case K_MIGRATE:
		sched_stats_migrate(st, r->ts_ns, tid, pid);
		return 0;
	case K_COMM:
		if (f->name >= 0 && (r->values[f->name].type == DIAL9_ISTR ||
				     r->values[f->name].type == DIAL9_STR))
			sched_stats_name(st, r->ts_ns, tid, pid,
					 r->values[f->name].str.ptr,
					 r->values[f->name].str.len);
		return 0;
	case K_LOST:
		st->lost += fu64(r, f->count);
		return 0;
	case K_SSTAT:
		sched_stats_sample(st, r->ts_ns, tid, pid, fu64(r, f->run),
				   fu64(r, f->wait), fu64(r, f->slices));
		return 0;
	}
	return 0;
}

static int sched_file(struct sched_stats *st, const char *path)
{
	struct sched_fields cache[16];
	struct dial9_decoder *dec;
	struct dial9_record rec;
	struct cli_file file;
	unsigned int ncache = 0;
	int ret;

	ret = cli_map(path, &file);
	if (ret)
		return ret;
	ret = dial9_decoder_new(&dec, file.data, file.len);
	if (ret) {
		cli_unmap(&file);
		return ret;
	}
	while ((ret = dial9_decoder_next(dec, &rec)) > 0) {
		struct sched_fields *f = NULL;

		if (rec.kind == DIAL9_REC_STREAM)
			ncache = 0;	/* schemas are per stream */
		/* A name the application gave its thread wins over comm. */
		if (rec.kind == DIAL9_REC_THREAD && rec.tid && rec.thread_name[0])
			sched_stats_name(st, UINT64_MAX, rec.tid, 0,
					 rec.thread_name, strlen(rec.thread_name));
		if (rec.kind != DIAL9_REC_EVENT || strncmp(rec.schema->name,
							   "sched.", 6))
			continue;
		for (unsigned int i = 0; i < ncache; i++)
			if (cache[i].schema == rec.schema)
				f = &cache[i];
		if (!f) {
			f = &cache[ncache < 16 ? ncache++ : 15];
			lookup(f, rec.schema);
		}
		ret = sched_event(st, f, &rec);
		if (ret)
			break;
	}
	if (ret < 0)
		cli_decode_error(path, ret, dial9_decoder_offset(dec));
	dial9_decoder_free(dec);
	cli_unmap(&file);
	return ret < 0 ? ret : 0;
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct live {
	struct sched_stats *st;
	uint64_t threshold_ns, start_ns;
	FILE *out;
};

static void live_record(void *ctx, const struct dial9_rec_header *h)
{
	struct live *l = ctx;
	const struct dial9_rec_switch *sw = (const void *)h;
	const struct dial9_rec_comm *cm = (const void *)h;
	const struct dial9_rec_migrate *mg = (const void *)h;

	switch (h->type) {
	case DIAL9_REC_SWITCH:
		if (h->flags & DIAL9_SWITCH_PREV_TARGET)
			sched_stats_out(l->st, h->time_ns, sw->prev_tid,
					sw->prev_tgid,
					h->flags & DIAL9_SWITCH_PREV_RUNNABLE);
		if (!(h->flags & DIAL9_SWITCH_NEXT_TARGET))
			break;
		sched_stats_in(l->st, h->time_ns, sw->next_tid, sw->next_tgid,
			       h->flags & DIAL9_SWITCH_WAIT_VALID,
			       sw->next_wait_ns);
		if ((h->flags & DIAL9_SWITCH_WAIT_VALID) &&
		    sw->next_wait_ns >= l->threshold_ns &&
		    sw->next_tid && sw->next_tid != DIAL9_TID_REDACTED) {
			struct sched_thread *t = sched_stats_thread(
				l->st, sw->next_tid, sw->next_tgid);

			fprintf(l->out, "%12.6f %-16.16s %8u %8u cpu%-3u %10.1f us\n",
				(h->time_ns - l->start_ns) / 1e9,
				t && t->name[0] ? t->name : "?",
				sw->next_tgid, sw->next_tid, h->cpu,
				sw->next_wait_ns / 1e3);
			fflush(l->out);
		}
		break;
	case DIAL9_REC_MIGRATE:
		sched_stats_migrate(l->st, h->time_ns, mg->tid, mg->tgid);
		break;
	case DIAL9_REC_COMM:
		sched_stats_name(l->st, h->time_ns, cm->tid, cm->tgid, cm->comm,
				 sizeof(cm->comm));
		break;
	case DIAL9_REC_LOST:
		l->st->lost += ((const struct dial9_rec_lost *)h)->count;
		break;
	}
}

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int sched_live(struct sched_stats *st, int *pids, unsigned int npids,
		      uint64_t threshold_ns, uint64_t duration_ns,
		      const struct sched_report_opts *ro)
{
	struct dial9_ksched_opts o = {
		.pids = pids, .npids = npids, .system_wide = !npids,
		.ring_size = 1024 * 1024,	/* a tool: 4x the module's default */
	};
	struct live l = { .st = st, .threshold_ns = threshold_ns,
			  .out = stdout };
	struct sigaction sa = { .sa_handler = on_sigint };
	struct dial9_ksched *k;
	char why[512] = "";
	int ret;

	ret = dial9_ksched_open(&k, &o, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "dial9 sched --live: %s\n%s\n", why,
			npids ? "Recording another process needs CAP_PERFMON (or run as its owner with a process that links libdial9)." :
				"Recording every task needs dial9.ko and CAP_PERFMON; use -p PID for one process.");
		return 1;
	}
	if (*dial9_ksched_fallback_reason(k))
		fprintf(stderr, "dial9: using %s: %s\n",
			dial9_ksched_backend(k), dial9_ksched_fallback_reason(k));
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	l.start_ns = mono_now();
	if (!ro->json)
		fprintf(stdout, "%12s %-16s %8s %8s %-6s %13s\n", "time_s",
			"comm", "pid", "tid", "cpu", "runq_delay");
	while (!interrupted) {
		struct pollfd p = { .fd = dial9_ksched_fd(k), .events = POLLIN };
		uint64_t now;

		poll(&p, 1, 100);
		now = mono_now();
		ret = dial9_ksched_drain(k, now - 2000000, live_record, &l);
		if (ret < 0)
			break;
		if (duration_ns && now - l.start_ns >= duration_ns)
			break;
	}
	if (ret >= 0)
		ret = dial9_ksched_drain(k, UINT64_MAX, live_record, &l);
	st->lost = dial9_ksched_lost(k);
	dial9_ksched_close(k);
	if (ret < 0) {
		fprintf(stderr, "dial9 sched --live: %s\n", dial9_strerror(ret));
		return 1;
	}
	sched_stats_finish(st, mono_now());
	fputc('\n', stdout);
	sched_stats_report(st, ro, stdout);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dial9 sched [--tid N] [--min-delay US] [--top N] [--json] TRACE...\n"
		"       dial9 sched --live [-p PID]... [--threshold US] [--duration S]\n"
		"\nPer thread: switches (voluntary, involuntary), on-CPU, runnable and\n"
		"blocked time, runqueue delay count/avg/p50/p99/max and when the max\n"
		"happened, migrations; then a log2 histogram of delays.\n"
		"--live prints each delay above --threshold (default 10000 us) as it\n"
		"happens and the report on Ctrl-C.\n");
}

int cmd_sched(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tid", required_argument, NULL, 't' },
		{ "min-delay", required_argument, NULL, 'm' },
		{ "top", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "live", no_argument, NULL, 'l' },
		{ "pid", required_argument, NULL, 'p' },
		{ "threshold", required_argument, NULL, 'T' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sched_report_opts ro = { 0 };
	uint64_t threshold_ns = 10000000, duration_ns = 0;
	struct sched_stats st;
	int pids[64], npids = 0, c, rc = 0;
	bool live = false;
	char **paths = NULL;
	char *end;
	int n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:h", opts, NULL)) != -1) {
		unsigned long long v = 0;

		if (c == 't' || c == 'm' || c == 'n' || c == 'p' || c == 'T' ||
		    c == 'd') {
			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end) {
				fprintf(stderr, "dial9 sched: invalid number '%s'\n",
					optarg);
				return 2;
			}
		}
		switch (c) {
		case 't': ro.tid = (uint32_t)v; break;
		case 'm': ro.min_delay_ns = v * 1000; break;
		case 'n': ro.top = (int)v; break;
		case 'j': ro.json = true; break;
		case 'l': live = true; break;
		case 'p':
			if (npids == 64 || !v || v > 4194304) {
				fprintf(stderr, "dial9 sched: bad or too many -p (at most 64)\n");
				return 2;
			}
			pids[npids++] = (int)v;
			break;
		case 'T': threshold_ns = v * 1000; break;
		case 'd': duration_ns = v * 1000000000ull; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	sched_stats_init(&st);
	if (live) {
		if (optind < argc) {
			fprintf(stderr, "dial9 sched: --live takes no TRACE\n");
			return 2;
		}
		rc = sched_live(&st, pids, (unsigned int)npids, threshold_ns,
				duration_ns, &ro);
		sched_stats_free(&st);
		return rc;
	}
	if (npids) {
		fprintf(stderr, "dial9 sched: -p needs --live\n");
		return 2;
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	n = cli_collect(argc - optind, argv + optind, &paths);
	if (n < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		cli_progress("sched", i, n, paths[i]);
		if (sched_file(&st, paths[i])) {
			rc = 1;
			break;
		}
	}
	cli_progress_done();
	cli_free_paths(paths, n);
	if (!rc) {
		sched_stats_finish(&st, st.last_ns);
		sched_stats_report(&st, &ro, stdout);
	}
	sched_stats_free(&st);
	return rc;
}
