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
	char host[256], service[256], boot_id[64], thread[64];
	char segment[1024];	/* the segment's key (S3) or path (write-back) */
	char file[1024];	/* the summary it came from */
	uint64_t pid, tid, segment_index;
	uint64_t window_start_ns, window_end_ns; /* wall clock, UTC */
	uint64_t switches, runq_total_ns, waits, unknown_delays;
	uint64_t delay_count, delay_sum_ns, delay_max_ns, delay_p50_ns,
		delay_p99_ns;
	uint64_t delay_max_at_ns, delay_max_at_mono_ns;
	uint64_t lost_sched, lost_app;
};

struct fleet_rows {
	struct fleet_row *v;
	size_t n, cap;
	size_t files, bad;	/* summaries read; files or lines not understood */
};

/* Which rows: window overlapping [since, until) (seconds; 0: open). */
struct fleet_filter {
	long long since, until;
	const char *service, *host;
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
