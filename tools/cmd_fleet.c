// SPDX-License-Identifier: MIT
/*
 * cmd_fleet.c - `dial9 fleet`: the worst threads, services or hosts by
 * runqueue delay over a time range, from the segment summaries alone.
 *
 *   dial9 fleet (DIR | s3://BUCKET[/PREFIX]) [--since T] [--until T]
 *         [--by thread|service|host|host,service] [--sort p99|max|total]
 *         [--top N] [--service S] [--host H] [--json] [--fetch DIR]
 *
 * DIR is laid out like the bucket (its summary/ level, or below it: a
 * write-back directory, or what dial9 fetch --summaries wrote). From S3
 * the summaries are fetched first (dial9 fetch --summaries); --fetch
 * then downloads just the segments that hold the worst delays.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli.h"
#include "fleet.h"
#include "sched/sched_stats.h"
#include "when.h"

enum by { BY_THREAD, BY_SERVICE, BY_HOST, BY_HOST_SERVICE };
enum sort { SORT_P99, SORT_MAX, SORT_TOTAL };

struct group {
	const struct fleet_row *first;	/* names the group */
	const struct fleet_row *worst_p99, *worst_max;
	uint64_t rows, waits, delay_count, delay_sum_ns, runq_total_ns;
	uint64_t lost_sched, unknown_delays;
};

struct opts {
	enum by by;
	enum sort sort;
	int top;
	bool json;
	bool per_host;	/* --top N of each host, not of all */
};

/*
 * Groups in ranked order, the first @top of each host kept (in place):
 * the worst threads or services of every host in one run.  Their count.
 */
static size_t top_per_host(struct group *g, size_t ng, int top)
{
	size_t kept = 0;

	for (size_t i = 0; i < ng; i++) {
		int seen = 0;

		for (size_t j = 0; j < kept; j++)
			seen += !strcmp(g[j].first->host, g[i].first->host);
		if (seen < top)
			g[kept++] = g[i];
	}
	return kept;
}

static const char *const by_names[] = { "thread", "service", "host",
					"host,service" };

static bool same_group(const struct fleet_row *a, const struct fleet_row *b,
		       enum by by)
{
	switch (by) {
	case BY_THREAD:
		return a->pid == b->pid && a->tid == b->tid &&
		       !strcmp(a->host, b->host) &&
		       !strcmp(a->service, b->service) &&
		       !strcmp(a->boot_id, b->boot_id);
	case BY_SERVICE:
		return !strcmp(a->service, b->service);
	case BY_HOST:
		return !strcmp(a->host, b->host);
	case BY_HOST_SERVICE:
		return !strcmp(a->host, b->host) &&
		       !strcmp(a->service, b->service);
	}
	return false;
}

static uint64_t sort_value(const struct group *g, enum sort s)
{
	return s == SORT_P99 ? g->worst_p99->delay_p99_ns :
	       s == SORT_MAX ? g->worst_max->delay_max_ns : g->runq_total_ns;
}

static enum sort g_sort;

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	uint64_t vx = sort_value(x, g_sort), vy = sort_value(y, g_sort);
	int c;

	if (vx != vy)
		return vx < vy ? 1 : -1;
	if (x->worst_max->delay_max_ns != y->worst_max->delay_max_ns)
		return x->worst_max->delay_max_ns < y->worst_max->delay_max_ns ?
			       1 : -1;
	c = strcmp(x->first->host, y->first->host);
	if (!c)
		c = strcmp(x->first->service, y->first->service);
	if (!c && x->first->tid != y->first->tid)
		c = x->first->tid < y->first->tid ? -1 : 1;
	return c;
}

/* Rows into groups (quadratic in groups: a fleet has few of them, and
 * by thread the rows are sorted first). */
static struct group *group_rows(const struct fleet_rows *rows, enum by by,
				size_t *ng)
{
	struct group *g = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < rows->n; i++) {
		const struct fleet_row *r = &rows->v[i];
		size_t k = n;

		if (!r->delay_count && !r->waits)
			continue;	/* never waited: nothing to rank */
		for (size_t j = n; j-- > 0;)
			if (same_group(g[j].first, r, by)) {
				k = j;
				break;
			}
		if (k == n) {
			if (cli_grow((void **)&g, &cap, n + 1, sizeof(*g))) {
				free(g);
				return NULL;
			}
			memset(&g[n], 0, sizeof(g[n]));
			g[n].first = g[n].worst_p99 = g[n].worst_max = r;
			n++;
		}
		if (r->delay_p99_ns > g[k].worst_p99->delay_p99_ns)
			g[k].worst_p99 = r;
		if (r->delay_max_ns > g[k].worst_max->delay_max_ns)
			g[k].worst_max = r;
		g[k].rows++;
		g[k].waits += r->waits;
		g[k].delay_count += r->delay_count;
		g[k].delay_sum_ns += r->delay_sum_ns;
		g[k].runq_total_ns += r->runq_total_ns;
		g[k].lost_sched += r->lost_sched;
		g[k].unknown_delays += r->unknown_delays;
	}
	*ng = n;
	return g ? g : calloc(1, sizeof(*g));
}

static void utc(uint64_t wall_ns, char *buf, size_t len)
{
	d9_sched_utc(wall_ns, buf, len);
	if (!*buf)
		snprintf(buf, len, "-");
}

static void print_json(const struct group *g, size_t n, const struct opts *o,
		       const struct fleet_rows *rows, long long since,
		       long long until)
{
	printf("{\"by\":\"%s\",\"since\":%lld,\"until\":%lld,\"summaries\":%zu,"
	       "\"rows\":%zu,\"groups\":[", by_names[o->by], since, until,
	       rows->files, rows->n);
	for (size_t i = 0; i < n; i++) {
		const struct fleet_row *f = g[i].first, *p = g[i].worst_p99,
				       *m = g[i].worst_max;
		char at[40];

		d9_sched_utc(m->delay_max_at_ns, at, sizeof(at));
		printf("%s{\"host\":", i ? "," : "");
		if (o->by == BY_SERVICE)
			printf("null");
		else
			cli_json_str(stdout, f->host, strlen(f->host));
		printf(",\"service\":");
		if (o->by == BY_HOST)
			printf("null");
		else
			cli_json_str(stdout, f->service, strlen(f->service));
		if (o->by == BY_THREAD) {
			printf(",\"boot_id\":");
			cli_json_str(stdout, f->boot_id, strlen(f->boot_id));
			printf(",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64
			       ",\"thread\":", f->pid, f->tid);
			cli_json_str(stdout, f->thread, strlen(f->thread));
		}
		printf(",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
		       ",\"max_at_utc\":", p->delay_p99_ns, m->delay_max_ns);
		if (*at)
			cli_json_str(stdout, at, strlen(at));
		else
			printf("null");
		printf(",\"max_at_ns\":%" PRIu64 ",\"max_at_mono_ns\":%" PRIu64
		       ",\"runq_total_ns\":%" PRIu64 ",\"waits\":%" PRIu64
		       ",\"delay_count\":%" PRIu64 ",\"delay_sum_ns\":%" PRIu64
		       ",\"unknown_delays\":%" PRIu64 ",\"lost_sched\":%" PRIu64
		       ",\"rows\":%" PRIu64 ",\"worst_p99_tid\":%" PRIu64
		       ",\"worst_p99_segment\":", m->delay_max_at_ns,
		       m->delay_max_at_mono_ns, g[i].runq_total_ns, g[i].waits,
		       g[i].delay_count, g[i].delay_sum_ns, g[i].unknown_delays,
		       g[i].lost_sched, g[i].rows, p->tid);
		cli_json_str(stdout, p->segment, strlen(p->segment));
		printf(",\"worst_max_segment\":");
		cli_json_str(stdout, m->segment, strlen(m->segment));
		printf("}");
	}
	printf("]}\n");
}

/*
 * The segment as a local file when DIR holds it too: a write-back
 * directory names it below itself, a fetched bucket below the prefix.
 * A summary that names none (or a directory) gets "-" or its name.
 */
static void print_segment(const char *local, const char *seg)
{
	const char *rel[2] = { seg, strchr(seg, '/') };
	char path[4096], safe[4096];
	struct stat st;

	if (!*seg) {
		printf("-\n");
		return;
	}
	for (int i = 0; local && i < 2; i++) {
		if (!rel[i] || !rel[i][i ? 1 : 0])
			continue;
		snprintf(path, sizeof(path), "%s/%s", local,
			 rel[i] + (i ? 1 : 0));
		if (!stat(path, &st) && S_ISREG(st.st_mode) &&
		    !access(path, R_OK)) {
			printf("%s\n", cli_safe(path, path, sizeof(path)));
			return;
		}
	}
	printf("%s\n", cli_safe(seg, safe, sizeof(safe)));
}

static void print_text(const struct group *g, size_t n, const struct opts *o,
		       const struct fleet_rows *rows, long long since,
		       long long until, const char *local)
{
	char a[40], b[40], safe[256];
	uint64_t lost = 0;

	utc(since > 0 ? (uint64_t)since * 1000000000ull : 0, a, sizeof(a));
	utc(until > 0 ? (uint64_t)until * 1000000000ull : 0, b, sizeof(b));
	printf("%zu summaries, %zu thread rows, from %s to %s (UTC); worst %s by %s\n\n",
	       rows->files, rows->n, since ? a : "the first",
	       until ? b : "now", by_names[o->by],
	       o->sort == SORT_P99 ? "p99 runqueue delay" :
	       o->sort == SORT_MAX ? "longest runqueue delay" :
				     "total runqueue wait");
	if (o->by != BY_SERVICE)
		printf("%-16s ", "host");
	if (o->by != BY_HOST)
		printf("%-16s ", "service");
	if (o->by == BY_THREAD)
		printf("%8s %8s %-16s ", "pid", "tid", "thread");
	printf("%9s %9s %-27s %14s %10s %7s %5s\n", "p99_us", "max_us",
	       "max_at (UTC)", "max_at_mono_s", "runq_ms", "waits", "rows");
	for (size_t i = 0; i < n; i++) {
		const struct fleet_row *f = g[i].first, *m = g[i].worst_max;

		utc(m->delay_max_at_ns, a, sizeof(a));
		/* names from the summaries: no control bytes to a terminal */
		if (o->by != BY_SERVICE)
			printf("%-16.16s ", cli_safe(f->host, safe, sizeof(safe)));
		if (o->by != BY_HOST)
			printf("%-16.16s ", cli_safe(f->service, safe,
						      sizeof(safe)));
		if (o->by == BY_THREAD)
			printf("%8" PRIu64 " %8" PRIu64 " %-16.16s ", f->pid,
			       f->tid, f->thread[0] ?
			       cli_safe(f->thread, safe, sizeof(safe)) : "?");
		printf("%9.1f %9.1f %-27s %14.6f %10.2f %7" PRIu64 " %5" PRIu64
		       "\n", g[i].worst_p99->delay_p99_ns / 1e3,
		       m->delay_max_ns / 1e3, a, m->delay_max_at_mono_ns / 1e9,
		       g[i].runq_total_ns / 1e6, g[i].waits, g[i].rows);
		lost += g[i].lost_sched;
	}
	printf("\n(p99: the worst p99 of one thread in one segment; max: the longest wait, at wall clock and trace time; rows: one per thread per segment)\n");
	for (size_t i = 0; i < n; i++) {
		printf("worst of #%zu: ", i + 1);
		print_segment(local, g[i].worst_max->segment);
	}
	if (lost)
		printf("warning: %" PRIu64 " scheduler records were lost in these segments: figures are incomplete\n",
		       lost);
	if (rows->bad)
		printf("warning: %zu summaries or lines could not be read\n",
		       rows->bad);
}

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Run dial9 fetch with these arguments (a NULL-terminated list). */
static int run_fetch(const char **args)
{
	int n = 0;

	while (args[n])
		n++;
	return cmd_fetch(n, (char **)args);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dial9 fleet (DIR | s3://BUCKET[/PREFIX]) [--since T] [--until T]\n"
		"         [--by thread|service|host|host,service] [--sort p99|max|total]\n"
		"         [--top N] [--service S] [--host H] [--json] [--fetch DIR]\n"
		"         [--keep DIR] [--endpoint URL] [--region R] [--max-rows N] [--per-host]\n"
		"  T: 90s, 30m, 2h, 7d (ago), now, today, yesterday (00:00 UTC),\n"
		"     YYYY-MM-DD[THH:MM[:SS]] (UTC), @EPOCH\n"
		"The worst threads, services or hosts by runqueue delay, from the segment\n"
		"summaries alone (docs/format.md). DIR is laid out like the bucket. From\n"
		"S3 the summaries are fetched first (into --keep DIR, else a temporary\n"
		"directory); --fetch DIR then downloads the segments of the worst delays.\n"
		"--per-host: the --top N worst of each host, in one ranking.\n"
		"--max-rows: rows (one per thread per segment) held at most, default\n"
		"%d (about 200 bytes each); past it dial9 fleet stops with an error.\n"
		"A line without host, service_name, boot_id, tid, segment_index,\n"
		"window_start_ns or window_end_ns is left out, and counted.\n",
		FLEET_MAX_ROWS_DEFAULT);
}

int cmd_fleet(int argc, char **argv)
{
	const char *src = NULL, *since_s = NULL, *until_s = NULL;
	const char *fetch_dir = NULL, *keep = NULL, *endpoint = NULL;
	const char *region = NULL;
	struct opts o = { .by = BY_HOST_SERVICE, .sort = SORT_P99, .top = 20 };
	struct fleet_filter f = { 0 };
	struct fleet_rows rows = { 0 };
	char tmp[] = "/tmp/dial9-fleet-XXXXXX", since_arg[32], until_arg[32];
	const char *dir;
	struct group *g;
	size_t ng = 0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--json")) {
			o.json = true;
			continue;
		}
		if (!strcmp(a, "--per-host")) {
			o.per_host = true;
			continue;
		}
		if (a[0] != '-') {
			if (src) {
				usage(stderr);
				return 2;
			}
			src = a;
			continue;
		}
		if (!v) {
			fprintf(stderr, "dial9 fleet: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--since"))
			since_s = v;
		else if (!strcmp(a, "--until"))
			until_s = v;
		else if (!strcmp(a, "--service"))
			f.service = v;
		else if (!strcmp(a, "--host"))
			f.host = v;
		else if (!strcmp(a, "--fetch"))
			fetch_dir = v;
		else if (!strcmp(a, "--keep"))
			keep = v;
		else if (!strcmp(a, "--endpoint"))
			endpoint = v;
		else if (!strcmp(a, "--region"))
			region = v;
		else if (!strcmp(a, "--top") && atoi(v) > 0)
			o.top = atoi(v);
		else if (!strcmp(a, "--max-rows")) {
			char *e;
			unsigned long long m = strtoull(v, &e, 10);

			if (!*v || *e || *v == '-' || !m || m > (1ull << 32)) {
				fprintf(stderr, "dial9 fleet: --max-rows %s: not a number in 1..%llu\n",
					v, 1ull << 32);
				return 2;
			}
			f.max_rows = (size_t)m;
		}
		else if (!strcmp(a, "--by")) {
			size_t k = 0;

			while (k < 4 && strcmp(v, by_names[k]))
				k++;
			if (k == 4) {
				fprintf(stderr, "dial9 fleet: --by %s: not thread, service, host or host,service\n", v);
				return 2;
			}
			o.by = (enum by)k;
		} else if (!strcmp(a, "--sort")) {
			if (!strcmp(v, "p99"))
				o.sort = SORT_P99;
			else if (!strcmp(v, "max"))
				o.sort = SORT_MAX;
			else if (!strcmp(v, "total"))
				o.sort = SORT_TOTAL;
			else {
				fprintf(stderr, "dial9 fleet: --sort %s: not p99, max or total\n", v);
				return 2;
			}
		} else {
			fprintf(stderr, "dial9 fleet: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!src) {
		usage(stderr);
		return 2;
	}
	if ((since_s && cli_parse_time(since_s, &f.since)) ||
	    (until_s && cli_parse_time(until_s, &f.until))) {
		fprintf(stderr, "dial9 fleet: \"%s\": not a time\n",
			since_s && cli_parse_time(since_s, &f.since) ? since_s :
								       until_s);
		return 2;
	}
	dir = src;
	if (!strncmp(src, "s3://", 5)) {
		const char *args[24];
		int n = 0;

		dir = keep;
		if (!dir && !(dir = mkdtemp(tmp))) {
			perror("dial9 fleet: a temporary directory");
			return 1;
		}
		args[n++] = "fetch";
		args[n++] = src;
		args[n++] = "--summaries";
		args[n++] = "-o";
		args[n++] = dir;
		/* a summary is named by its segment's start: one that began
		 * up to a day earlier may reach into the range */
		if (f.since) {
			snprintf(since_arg, sizeof(since_arg), "@%lld",
				 f.since - 86400);
			args[n++] = "--since";
			args[n++] = since_arg;
		}
		if (f.until) {
			snprintf(until_arg, sizeof(until_arg), "@%lld", f.until);
			args[n++] = "--until";
			args[n++] = until_arg;
		}
		if (f.service) {
			args[n++] = "--service";
			args[n++] = f.service;
		}
		if (f.host) {
			args[n++] = "--host";
			args[n++] = f.host;
		}
		if (endpoint) {
			args[n++] = "--endpoint";
			args[n++] = endpoint;
		}
		if (region) {
			args[n++] = "--region";
			args[n++] = region;
		}
		args[n] = NULL;
		rc = run_fetch(args);
	} else if (fetch_dir) {
		fprintf(stderr, "dial9 fleet: --fetch needs s3://; the segments of %s are named in its output\n",
			src);
		return 2;
	}
	if (!rc && fleet_read_dir(dir, &f, &rows))
		rc = 1;
	if (dir == tmp)
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (rc) {
		fleet_rows_free(&rows);
		return rc;
	}
	g = group_rows(&rows, o.by, &ng);
	if (!g) {
		fprintf(stderr, "dial9 fleet: out of memory\n");
		fleet_rows_free(&rows);
		return 1;
	}
	g_sort = o.sort;
	d9_sort(g, ng, sizeof(*g), cmp_group);
	if (o.per_host)
		ng = top_per_host(g, ng, o.top);
	else if ((size_t)o.top < ng)
		ng = (size_t)o.top;
	if (o.json)
		print_json(g, ng, &o, &rows, f.since, f.until);
	else
		print_text(g, ng, &o, &rows, f.since, f.until,
			   dir == src ? dir : NULL);
	if (fetch_dir && ng) {
		const char **args = calloc(7 + 4 * ng, sizeof(*args));
		int n = 0, first;

		if (!args) {
			rc = 1;
		} else {
			args[n++] = "fetch";
			args[n++] = src;
			args[n++] = "-o";
			args[n++] = fetch_dir;
			if (endpoint) {
				args[n++] = "--endpoint";
				args[n++] = endpoint;
			}
			first = n;
			for (size_t i = 0; i < ng; i++) {
				const char *k[2] = { g[i].worst_p99->segment,
						     g[i].worst_max->segment };

				for (int j = 0; j < 2; j++) {
					bool dup = false;

					for (int x = first + 1; x < n; x += 2)
						dup |= !strcmp(args[x], k[j]);
					if (dup || !*k[j])
						continue;
					args[n++] = "--key";
					args[n++] = k[j];
				}
			}
			args[n] = NULL;
			fflush(stdout);
			rc = run_fetch(args);
			free(args);
		}
	}
	free(g);
	fleet_rows_free(&rows);
	return rc;
}
