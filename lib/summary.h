/* SPDX-License-Identifier: MIT */
/*
 * summary.h - the summary of a sealed segment (summary.c): gzip'd JSON
 * lines, one per thread, shipped beside the segment under
 *
 *   {prefix}/summary/version=1/date=.../service=.../time=.../
 *            instance=.../boot=.../{epoch_secs}-{index}.json.gz
 *
 * (S3; write-back: {write_back_dir}/summary/version=1/...).
 */
#ifndef DIAL9_SUMMARY_H
#define DIAL9_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

/* The level of the key layout below the prefix that holds summaries. */
#define D9_SUMMARY_DIR "summary"
#define D9_SUMMARY_EXT ".json.gz"

/* What the worker knows of the segment (the segment's own metadata wins). */
struct d9_summary_src {
	const char *host, *service, *boot_id;
	uint64_t index;
	const char *segment; /* where the segment went: its key or path */
};

/*
 * The summary of the segment seg[0..len) (not compressed) into *out
 * (malloc'd, *outlen bytes) and the number of rows (threads) in *nrows;
 * no rows: *out is NULL. 0, -ENOMEM, or the decoder's error.
 */
int d9_summary_build(const void *seg, size_t len,
		     const struct d9_summary_src *m, void **out,
		     size_t *outlen, size_t *nrows);

#endif
