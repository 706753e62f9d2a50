/* SPDX-License-Identifier: MIT */
/*
 * fleet.h - `dial9 fleet`: rows of segment summaries (docs/format.md)
 * read from a directory laid out like the bucket (fleet_read.c), ranked
 * by runqueue delay (cmd_fleet.c).
 */
#ifndef DIAL9_FLEET_H
#define DIAL9_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One thread of one segment: the columns dial9 fleet uses. */
struct fleet_row {
	/* interned in struct fleet_rows (never NULL): a row costs its
	 * numbers, not its strings, which repeat across rows */
	const char *host, *service, *boot_id, *thread;
	const char *segment;	/* the segment's key (S3) or path (write-back) */
	const char *file;	/* the summary it came from */
	uint64_t pid, tid, segment_index;
	uint64_t window_start_ns, window_end_ns; /* wall clock, UTC */
	uint64_t switches, runq_total_ns, waits, unknown_delays;
	uint64_t delay_count, delay_sum_ns, delay_max_ns, delay_p50_ns,
		delay_p99_ns;
	uint64_t delay_max_at_ns, delay_max_at_mono_ns;
	uint64_t lost_sched, lost_app;
};

struct fleet_strs;

struct fleet_rows {
	struct fleet_row *v;
	size_t n, cap;
	size_t files, bad;	/* summaries read; files or lines not understood */
	size_t incomplete;	/* lines without a key column (of bad) */
	struct fleet_strs *strs;
};

/* Rows kept at most by default (dial9 fleet --max-rows): ~200 bytes each. */
#define FLEET_MAX_ROWS_DEFAULT 2000000

/* Which rows: window overlapping [since, until) (seconds; 0: open). */
struct fleet_filter {
	long long since, until;
	const char *service, *host;
	size_t max_rows;	/* past it: -E2BIG after a message; 0: the default */
};

/*
 * Every summary (*.json.gz) below @dir (its summary/ level if it has
 * one), with progress on a terminal; rows outside @f are left out.
 * 0, or -errno after a message.
 */
int fleet_read_dir(const char *dir, const struct fleet_filter *f,
		   struct fleet_rows *rows);
void fleet_rows_free(struct fleet_rows *rows);

#endif
