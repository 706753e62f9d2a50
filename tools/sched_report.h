/* SPDX-License-Identifier: MIT */
/*
 * sched_report.h - the `dial9 sched` report of the statistics
 * (lib/sched/sched_stats.h): losses, threads, histogram, as text or JSON.
 */
#ifndef DIAL9_SCHED_REPORT_H
#define DIAL9_SCHED_REPORT_H

#include <stdio.h>

#include "sched/sched_stats.h"

struct sched_report_opts {
	uint32_t tid;			/* only this thread, 0 = all */
	uint64_t min_delay_ns;		/* only threads whose max is >= this */
	int top;			/* at most this many threads, 0 = all */
	bool json;
	bool culprits;			/* who had the CPU during the waits */
	bool explain;			/* each delay of explain_ns or more */
	uint64_t explain_ns;
};

/* Feed the trace @path to @st (cmd_sched.c); 0, or an error it printed. */
int sched_file(struct sched_stats *st, const char *path);
/* Losses and unfollowed processes: what makes the figures incomplete. */
void sched_losses_print(const struct sched_stats *st, FILE *out);
/* Threads by total runqueue wait, then the histogram; text or JSON. */
void sched_stats_report(struct sched_stats *st,
			const struct sched_report_opts *o, FILE *out);
/* The histogram alone, like BCC's runqlat. */
void sched_hist_print(const uint64_t *hist, FILE *out);

/* sched_why.c: culprits (st->culprits collected) and explanations. */
/* A culprit's name: its thread's, or what stood for it ("(idle)", ...). */
const char *sched_culprit_name(const struct sched_stats *st, uint32_t src,
			       uint32_t kind, uint32_t tid, uint32_t tgid);
void sched_culprits_json(struct sched_stats *st, const struct sched_thread *t,
			 FILE *out);
void sched_culprits_text(struct sched_stats *st, const struct sched_thread *t,
			 size_t max, FILE *out);
/* A delay --explain found: its wait (the last piece), what ran, idle. */
struct sched_explained {
	const struct sched_wait *w;
	struct sched_culprit *ran;
	size_t nran;
	uint64_t idle;			/* another CPU idle meanwhile, most */
};
/*
 * Every delay of @min_ns or more (st->culprits resolved), in the trace's
 * order, into *@v (free with sched_explained_free); 0 or -ENOMEM.
 */
int sched_explain_collect(struct sched_stats *st, uint64_t min_ns,
			  uint32_t tid, struct sched_explained **v, size_t *n);
void sched_explained_free(struct sched_explained *v, size_t n);
struct sched_stack;
struct sched_span;
/* The stack @w's thread was switched out with before the wait, or NULL. */
const struct sched_stack *sched_wait_stack(struct sched_stats *st,
					  const struct sched_wait *w);
/* The stack of @w's waker as it woke the thread, or NULL. */
const struct sched_stack *sched_waker_stack(struct sched_stats *st,
					   const struct sched_wait *w);
/* The application span open on @w's thread as the wait began, or NULL. */
const struct sched_span *sched_wait_span(struct sched_stats *st,
					const struct sched_wait *w);
/* "new", "preempted", "woken" or "unknown" (enum sched_cause). */
const char *sched_cause_name(uint32_t cause);
/* ,"delays":[...] / the @max longest as text, of thread @tid (0: every
 * thread's); 0 or -ENOMEM. */
int sched_explain_json(struct sched_stats *st, uint64_t min_ns, uint32_t tid,
		       FILE *out);
int sched_explain_text(struct sched_stats *st, uint64_t min_ns, uint32_t tid,
		       size_t max, FILE *out);

#endif
