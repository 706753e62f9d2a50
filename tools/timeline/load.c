// SPDX-License-Identifier: MIT
/*
 * load.c - a timeline loaded from TRACE arguments or files (read, then
 * replayed) and freed.
 */
#include <stdlib.h>
#include <string.h>

#include "tl_internal.h"

int tl_load(struct timeline *tl, char **paths, int n, const char *what,
	    unsigned int flags)
{
	struct priv *p = calloc(1, sizeof(*p));
	int ret = 0;

	memset(tl, 0, sizeof(*tl));
	d9_sched_stats_init(&tl->st);
	tl->priv = p;
	if (!p || tl_pool_put(tl, "", 1) ||
	    ((flags & TL_CULPRITS) && (d9_sched_stats_want_culprits(&tl->st) ||
					d9_sched_stats_want_stacks(&tl->st) ||
					d9_sched_stats_want_spans(&tl->st)))) {
		fprintf(stderr, "dial9: out of memory\n");
		return -1;
	}
	for (int i = 0; i < n && !ret; i++) {
		cli_progress(what, i, n, paths[i]);
		ret = tl_read_file(tl, paths[i]);
		tl->files++;
	}
	cli_progress_done();
	if (!ret) {
		ret = tl_replay(tl);
		if (ret)
			fprintf(stderr, "dial9: out of memory\n");
	}
	free(p->raw);
	free(tl->strtab);
	p->raw = NULL;
	tl->strtab = NULL;
	return ret ? -1 : 0;
}

void tl_free(struct timeline *tl)
{
	struct priv *p = tl->priv;

	for (size_t i = 0; i < tl->n_threads; i++)
		free(tl->threads[i].stack);
	free(tl->threads);
	free(tl->slices);
	free(tl->spans);
	free(tl->marks);
	free(tl->counters);
	free(tl->samples);
	free(tl->flows);
	free(tl->delays);
	free(tl->procs);
	free(tl->pool);
	free(tl->strtab);
	if (p) {
		free(p->raw);
		free(p->tidtab);
		free(p);
	}
	d9_sched_stats_free(&tl->st);
	memset(tl, 0, sizeof(*tl));
}

int tl_load_args(struct timeline *tl, int argc, char **argv, const char *what,
		 unsigned int flags)
{
	char **paths = NULL;
	int n = cli_collect(argc, argv, &paths);

	memset(tl, 0, sizeof(*tl));
	if (n < 0)
		return 1;
	if (n == 0) {
		fprintf(stderr, "dial9 %s: no trace files found\n", what);
		cli_free_paths(paths, n);
		return 1;
	}
	if (tl_load(tl, paths, n, what, flags)) {
		tl_free(tl);
		cli_free_paths(paths, n);
		return 1;
	}
	cli_free_paths(paths, n);
	return 0;
}
