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
#include "common/common.h"
#include "sched/sched_read.h"
#include "sched_report.h"
#include "symbols/symbols.h"

int sched_file(struct sched_stats *st, const char *path)
{
	struct cli_file file;
	uint64_t off;
	int ret;

	ret = cli_map(path, &file);
	if (ret)
		return ret;
	ret = d9_sched_trace(st, file.data, file.len, &off);
	if (ret == -ENOMEM)
		fprintf(stderr, "dial9: %s: out of memory\n", path);
	else if (ret < 0)
		cli_decode_error(path, ret, off);
	cli_unmap(&file);
	return ret;
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

/* A switch record of dial9.ko (or its fallbacks) as two events. */
static void live_switch(const struct dial9_rec_header *h,
			struct sched_ev *out, struct sched_ev *in)
{
	const struct dial9_rec_switch *sw = (const void *)h;
	bool totals = h->size >= sizeof(*sw) && (h->flags & DIAL9_SWITCH_TOTALS);

	memset(out, 0, sizeof(*out));
	out->ts = h->time_ns;
	out->cpu = h->cpu;
	out->tid = sw->prev_tid;
	out->tgid = sw->prev_tgid;
	out->runnable = h->flags & DIAL9_SWITCH_PREV_RUNNABLE;
	out->dead = sw->prev_state == DIAL9_STATE_DEAD;
	*in = *out;
	in->runnable = in->dead = false;
	in->tid = sw->next_tid;
	in->tgid = sw->next_tgid;
	in->wait_known = h->flags & DIAL9_SWITCH_WAIT_VALID;
	in->wait_ns = sw->next_wait_ns;
	out->other = sw->next_tid;
	out->other_tgid = sw->next_tgid == DIAL9_TID_REDACTED ? 0 :
			  sw->next_tgid;
	out->other_prio = out->prio = -1;
	in->other = sw->prev_tid;
	in->other_tgid = sw->prev_tgid == DIAL9_TID_REDACTED ? 0 :
			 sw->prev_tgid;
	in->other_prio = -1;
	in->prio = sw->next_prio;
	if (totals) {
		out->totals = in->totals = true;
		out->runq_total = sw->prev_run_delay_ns;
		out->runq_count = sw->prev_pcount;
		in->runq_total = sw->next_run_delay_ns;
		in->runq_count = sw->next_pcount;
	}
}

static void live_record(void *ctx, const struct dial9_rec_header *h)
{
	struct live *l = ctx;
	const struct dial9_rec_comm *cm = (const void *)h;
	const struct dial9_rec_migrate *mg = (const void *)h;
	const struct dial9_rec_unfollowed *uf = (const void *)h;
	struct sched_ev out, in;
	struct sched_result r;

	switch (h->type) {
	case DIAL9_REC_SWITCH:
		if (h->size < DIAL9_REC_SWITCH_SIZE_VER0)
			break;
		live_switch(h, &out, &in);
		if (h->flags & DIAL9_SWITCH_PREV_TARGET)
			d9_sched_stats_out(l->st, &out, NULL);
		if (!(h->flags & DIAL9_SWITCH_NEXT_TARGET))
			break;
		r.delay = 0;
		if (d9_sched_stats_in(l->st, &in, &r) == 0 && r.delay > 0 &&
		    r.delay_ns >= l->threshold_ns) {
			struct sched_thread *t = &l->st->threads[r.thread];
			char utc[40];

			d9_sched_utc(d9_sched_wall_ns(l->st, 0, h->time_ns),
				     utc, sizeof(utc));
			fprintf(l->out, "%12.6f %-27s %-16.16s %8u %8u cpu%-3u %10.1f us\n",
				(double)(int64_t)(h->time_ns - l->start_ns) / 1e9,
				*utc ? utc : "-", t->name[0] ? t->name : "?",
				in.tgid, in.tid, h->cpu, r.delay_ns / 1e3);
			fflush(l->out);
		}
		break;
	case DIAL9_REC_MIGRATE:
		d9_sched_stats_migrate(l->st, 0, h->time_ns, mg->tid, mg->tgid,
				       mg->orig_cpu, mg->dest_cpu);
		break;
	case DIAL9_REC_COMM:
		d9_sched_stats_name(l->st, 0, h->time_ns, cm->tid, cm->tgid,
				 cm->comm, sizeof(cm->comm));
		break;
	case DIAL9_REC_LOST:
		d9_sched_stats_lost(l->st, 0, h->time_ns, h->cpu,
				 ((const struct dial9_rec_lost *)h)->count);
		break;
	case DIAL9_REC_UNFOLLOWED:
		if (h->size >= sizeof(*uf))
			d9_sched_stats_unfollowed(l->st, 0, uf->tgid,
					       uf->parent_tgid,
					       h->flags & DIAL9_UNFOLLOWED_EXEC);
		break;
	default:
		d9_sched_stats_cpu_seen(l->st, 0, h->cpu, h->time_ns);
	}
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
	int ret, src;

	/* The wall clock of the records' CLOCK_MONOTONIC times, as a
	 * trace's clock sync gives it: the lines and the report show UTC.
	 * Taken before the rings open: no record is older than time 0. */
	src = d9_sched_stats_source(st, NULL, NULL);
	if (src < 0) {
		fprintf(stderr, "dial9 sched --live: out of memory\n");
		return 1;
	}
	l.start_ns = d9_clock_gettime_ns();
	st->srcs[src].sync_mono = l.start_ns;
	st->srcs[src].sync_real = d9_clock_realtime_ns();
	st->srcs[src].synced = true;
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
	if (!ro->json)
		fprintf(stdout, "%12s %-27s %-16s %8s %8s %-6s %13s\n", "time_s",
			"utc", "comm", "pid", "tid", "cpu", "runq_delay");
	while (!interrupted) {
		struct pollfd p = { .fd = dial9_ksched_fd(k), .events = POLLIN };
		uint64_t now;

		poll(&p, 1, 100);
		now = d9_clock_gettime_ns();
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
	d9_sched_stats_finish(st, d9_clock_gettime_ns());
	if (d9_sched_stats_culprits(st)) {
		fprintf(stderr, "dial9 sched --live: out of memory\n");
		return 1;
	}
	fputc('\n', stdout);
	sched_stats_report(st, ro, stdout);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dial9 sched [--tid N] [--min-delay US] [--top N] [--culprits] [--explain [--no-symbols]] [--json] TRACE...\n"
		"       dial9 sched --live [-p PID]... [--threshold US] [--duration S]\n"
		"\nFirst the losses: scheduler records (per CPU, and the time window of\n"
		"each loss), application events, and processes the kernel could not\n"
		"follow.  Then per thread: switches (voluntary, involuntary), on-CPU,\n"
		"blocked and unknown (across a loss) time, the total runqueue wait\n"
		"and the number of waits, then the waits whose length is known\n"
		"(count/avg/p50/p99/max, when the max happened) and how many are\n"
		"unknown, migrations; then a log2 histogram of the known delays.\n"
		"Threads of different hosts or recordings (host, boot_id) never merge.\n"
		"--culprits: per thread, what had the CPU it waited on during its\n"
		"waits (threads of the recording by name; other processes and the\n"
		"idle task as one each), with the time and the number of waits.\n"
		"--explain: each delay of --min-delay or more (default 1000 us):\n"
		"when, on which CPU, preempted or woken and by whom, what ran on\n"
		"that CPU meanwhile, how long another CPU was idle meanwhile, the\n"
		"application span open on the thread, the stack it left the CPU\n"
		"with and its waker's (traces with DIAL9_SCHED_STACKS=1), the\n"
		"frames named from the files here, their debug files\n"
		"(DIAL9_DEBUG_DIR, default /usr/lib/debug) and perf JIT maps\n"
		"(DIAL9_PERF_MAP_DIR, default /tmp); --no-symbols: offsets only.\n"
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
		{ "culprits", no_argument, NULL, 'c' },
		{ "explain", no_argument, NULL, 'e' },
		{ "no-symbols", no_argument, NULL, 'S' },
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
	struct d9_syms syms;
	int pids[64], npids = 0, c, rc = 0;
	bool live = false, symbols = true, min_given = false;
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
		case 'm': ro.min_delay_ns = v * 1000; min_given = true; break;
		case 'n': ro.top = (int)v; break;
		case 'j': ro.json = true; break;
		case 'c': ro.culprits = true; break;
		case 'e': ro.explain = true; break;
		case 'S': symbols = false; break;
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
	/* --explain: each delay of --min-delay or more, by default 1 ms */
	ro.explain_ns = min_given ? ro.min_delay_ns : 1000000;
	d9_sched_stats_init(&st);
	if (((ro.culprits || ro.explain) &&
	     d9_sched_stats_want_culprits(&st)) ||
	    (ro.explain && (d9_sched_stats_want_stacks(&st) ||
			    d9_sched_stats_want_spans(&st)))) {
		fprintf(stderr, "dial9 sched: out of memory\n");
		return 1;
	}
	/* --explain's stacks: function names from the files, where here */
	d9_syms_init(&syms);
	if (ro.explain && symbols) {
		st.stacks->symbolize = d9_syms_lookup;
		st.stacks->sym_ctx = &syms;
		syms.trace = st.stacks;	/* its own table first */
	}
	if (live) {
		if (optind < argc) {
			fprintf(stderr, "dial9 sched: --live takes no TRACE\n");
			return 2;
		}
		rc = sched_live(&st, pids, (unsigned int)npids, threshold_ns,
				duration_ns, &ro);
		d9_sched_stats_free(&st);
		d9_syms_free(&syms);
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
	if (n < 0) {
		d9_sched_stats_free(&st);
		return 1;
	}
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
		d9_sched_stats_finish(&st, st.last_ns);
		if (d9_sched_stats_culprits(&st)) {
			fprintf(stderr, "dial9 sched: out of memory\n");
			rc = 1;
		} else {
			sched_stats_report(&st, &ro, stdout);
			d9_syms_notes(&syms, "sched");
		}
	}
	d9_sched_stats_free(&st);
	d9_syms_free(&syms);
	return rc;
}
