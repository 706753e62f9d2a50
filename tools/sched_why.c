// SPDX-License-Identifier: MIT
/*
 * sched_why.c - why a thread was late, as `dial9 sched` prints it: each
 * thread's culprits (--culprits) and each long delay explained
 * (--explain), from lib/sched/sched_culprits.h, as text or JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sched_report.h"

const char *sched_culprit_name(const struct sched_stats *st, uint32_t src,
			       uint32_t kind, uint32_t tid, uint32_t tgid)
{
	const char *name;
	long i;

	switch (kind) {
	case SCHED_OCC_IDLE: return "(idle)";
	case SCHED_OCC_OTHERS: return "(other processes)";
	case SCHED_OCC_IDLE_OR_OTHERS: return "(idle or other processes)";
	}
	i = d9_sched_stats_find(st, src, tid, tgid);
	if (i >= 0 && st->threads[i].name[0])
		return st->threads[i].name;
	/* a task outside the recording, named by dial9.ko (occupants) */
	name = d9_culprits_name_of(st->culprits, src, tid);
	return name && *name ? name : "?";
}

/* "name", "tid", "pid" of a task (tid and pid null where not known). */
static void task_json(struct sched_stats *st, uint32_t src, uint32_t kind,
		      uint32_t tid, uint32_t tgid, FILE *out)
{
	const char *name = sched_culprit_name(st, src, kind, tid, tgid);

	fputs("\"name\":", out);
	cli_json_str(out, name, strlen(name));
	if (kind != SCHED_OCC_THREAD)
		fputs(",\"tid\":null,\"pid\":null", out);
	else if (tgid)
		fprintf(out, ",\"tid\":%u,\"pid\":%u", tid, tgid);
	else
		fprintf(out, ",\"tid\":%u,\"pid\":null", tid);
}

/* "pid/tid", "?/tid" or "" (not a thread). */
static void task_ids(uint32_t kind, uint32_t tid, uint32_t tgid, char *buf,
		     size_t len)
{
	if (kind != SCHED_OCC_THREAD)
		snprintf(buf, len, "%s", "");
	else if (tgid)
		snprintf(buf, len, "%u/%u", tgid, tid);
	else
		snprintf(buf, len, "?/%u", tid);
}

void sched_culprits_json(struct sched_stats *st, const struct sched_thread *t,
			 FILE *out)
{
	fputs(",\"culprits\":[", out);
	for (size_t i = 0; i < t->nculprits; i++) {
		const struct sched_culprit *c = &t->culprits[i];

		fputs(i ? ",{" : "{", out);
		task_json(st, t->src, c->kind, c->tid, c->tgid, out);
		fprintf(out, ",\"ns\":%" PRIu64 ",\"count\":%" PRIu64 "}",
			c->ns, c->waits);
	}
	fputc(']', out);
}

void sched_culprits_text(struct sched_stats *st, const struct sched_thread *t,
			 size_t max, FILE *out)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->nculprits; i++)
		sum += t->culprits[i].ns;
	fprintf(out, "culprits of %u (%s), during %.3f ms of its waits:\n",
		t->tid, t->name[0] ? t->name : "?", sum / 1e6);
	for (size_t i = 0; i < t->nculprits && i < max; i++) {
		const struct sched_culprit *c = &t->culprits[i];
		char who[48];

		task_ids(c->kind, c->tid, c->tgid, who, sizeof(who));
		fprintf(out, "  %-26.26s %-16s %10.3f ms %5.1f%% in %" PRIu64
			" waits\n",
			sched_culprit_name(st, t->src, c->kind, c->tid, c->tgid), who,
			c->ns / 1e6, sum ? 100.0 * c->ns / sum : 0, c->waits);
	}
	if (t->nculprits > max)
		fprintf(out, "  (%zu more)\n", t->nculprits - max);
}

static const char *const cause_names[] = {
	[SCHED_CAUSE_NEW] = "new", [SCHED_CAUSE_PREEMPTED] = "preempted",
	[SCHED_CAUSE_WOKEN] = "woken", [SCHED_CAUSE_UNKNOWN] = "unknown",
};

const char *sched_cause_name(uint32_t cause)
{
	return cause <= SCHED_CAUSE_UNKNOWN ? cause_names[cause] : "unknown";
}

/* The delays, kept for sorting (text) or written as they come (JSON). */
struct explain {
	struct sched_stats *st;
	uint32_t tid;			/* only this thread's delays; 0: all */
	FILE *out;			/* JSON: write each */
	size_t n;
	struct sched_explained *v;
	size_t cap;
};

static void waker_json(struct sched_stats *st, const struct sched_wait *w,
		       FILE *out)
{
	fputs(",\"waker\":", out);
	if (!w->info.waker_known) {
		fputs("null", out);
	} else if (w->info.waker_irq) {
		fputs("{\"name\":\"(interrupt)\",\"tid\":null,\"pid\":null}", out);
	} else {
		fputc('{', out);
		task_json(st, w->src, w->info.waker_tid ? SCHED_OCC_THREAD :
			  SCHED_OCC_IDLE, w->info.waker_tid, w->info.waker_tgid,
			  out);
		fputc('}', out);
	}
}

const struct sched_stack *sched_wait_stack(struct sched_stats *st,
					  const struct sched_wait *w)
{
	return d9_sched_stacks_before(st->stacks, w->src,
				      st->threads[w->thread].tid, w->end);
}

const struct sched_stack *sched_waker_stack(struct sched_stats *st,
					   const struct sched_wait *w)
{
	if (!w->info.waker_known || w->info.waker_irq || !w->info.waker_tid)
		return NULL;
	return d9_sched_stacks_waker(st->stacks, w->src, w->info.waker_tid,
				     w->info.wake_ts);
}

const struct sched_span *sched_wait_span(struct sched_stats *st,
					const struct sched_wait *w)
{
	return d9_sched_spans_at(st->spans, w->src, st->threads[w->thread].tid,
				 w->end - w->info.delay_ns, NULL);
}

/* ,"@key":[frames] or null */
static void stack_json(struct sched_stats *st, const struct sched_stack *sk,
		       const char *key, FILE *out)
{
	char frame[300];

	fprintf(out, ",\"%s\":", key);
	if (!sk) {
		fputs("null", out);
		return;
	}
	fputc('[', out);
	for (uint32_t i = 0; i < sk->n; i++) {
		d9_sched_stacks_frame(st->stacks, sk, i, frame, sizeof(frame));
		if (i)
			fputc(',', out);
		cli_json_str(out, frame, strlen(frame));
	}
	fputc(']', out);
}

/* @what's stack (at @sk's time): then its frames, a line each */
static void stack_text(struct sched_stats *st, const struct sched_stack *sk,
		       const char *what, FILE *out)
{
	char frame[300];

	if (!sk)
		return;
	fprintf(out, "    %s (%.6f s)%s:\n", what, sk->ts / 1e9,
		sk->truncated ? ", cut at the depth limit" : "");
	for (uint32_t i = 0; i < sk->n; i++) {
		d9_sched_stacks_frame(st->stacks, sk, i, frame, sizeof(frame));
		fprintf(out, "      #%-2u %s\n", i, frame);
	}
}

static void span_json(struct sched_stats *st, const struct sched_wait *w,
		      FILE *out)
{
	const struct sched_span *sp = sched_wait_span(st, w);
	const char *name;

	fputs(",\"span\":", out);
	if (!sp) {
		fputs("null", out);
		return;
	}
	name = d9_sched_span_name(st->spans, sp);
	fputs("{\"name\":", out);
	cli_json_str(out, name, strlen(name));
	fprintf(out, ",\"start_ns\":%" PRIu64 "}", sp->start);
}

static void span_text(struct sched_stats *st, const struct sched_wait *w,
		      FILE *out)
{
	const struct sched_span *sp = sched_wait_span(st, w);

	if (sp)
		fprintf(out, "    in span %s (since %.6f s)\n",
			d9_sched_span_name(st->spans, sp), sp->start / 1e9);
}

static void delay_json(struct explain *x, const struct sched_explained *e)
{
	const struct sched_wait *w = e->w;
	const struct sched_thread *t = &x->st->threads[w->thread];
	uint64_t at = w->end - w->info.delay_ns;
	char utc[40];

	d9_sched_utc(d9_sched_wall_ns(x->st, w->src, at), utc, sizeof(utc));
	fprintf(x->out, "%s{\"tid\":%u,\"pid\":%u,\"thread\":", x->n ? "," : "",
		t->tid, t->tgid);
	cli_json_str(x->out, t->name, strnlen(t->name, sizeof(t->name)));
	fprintf(x->out, ",\"at_ns\":%" PRIu64 ",\"at_utc\":%s%s%s,\"end_ns\":%"
		PRIu64 ",\"wait_ns\":%" PRIu64 ",\"cpu\":%u,\"cause\":\"%s\"",
		at, *utc ? "\"" : "", *utc ? utc : "null", *utc ? "\"" : "",
		w->end, w->info.delay_ns, w->cpu, cause_names[w->info.cause]);
	waker_json(x->st, w, x->out);
	fputs(",\"ran\":[", x->out);
	for (size_t i = 0; i < e->nran; i++) {
		fputs(i ? ",{" : "{", x->out);
		task_json(x->st, w->src, e->ran[i].kind, e->ran[i].tid,
			  e->ran[i].tgid, x->out);
		fprintf(x->out, ",\"ns\":%" PRIu64, e->ran[i].ns);
		if (e->ran[i].kind == SCHED_OCC_THREAD && e->ran[i].prio >= 0)
			fprintf(x->out, ",\"prio\":%d}", e->ran[i].prio);
		else
			fputs(",\"prio\":null}", x->out);
	}
	fprintf(x->out, "],\"idle_elsewhere_ns\":%" PRIu64, e->idle);
	span_json(x->st, w, x->out);
	stack_json(x->st, sched_wait_stack(x->st, w), "stack", x->out);
	stack_json(x->st, sched_waker_stack(x->st, w), "waker_stack", x->out);
	fputc('}', x->out);
}

static int explain_one(void *ctx, const struct sched_wait *w,
		       const struct sched_culprit *ran, size_t n,
		       uint64_t idle)
{
	struct explain *x = ctx;
	struct sched_explained e = { w, NULL, n, idle };

	if (x->tid && x->st->threads[w->thread].tid != x->tid)
		return 0;
	if (x->out) {
		e.ran = (struct sched_culprit *)ran;
		delay_json(x, &e);
		x->n++;
		return 0;
	}
	if (cli_grow((void **)&x->v, &x->cap, x->n + 1, sizeof(*x->v)))
		return -ENOMEM;
	e.ran = n ? malloc(n * sizeof(*ran)) : NULL;
	if (n && !e.ran)
		return -ENOMEM;
	if (n)
		memcpy(e.ran, ran, n * sizeof(*ran));
	x->v[x->n++] = e;
	return 0;
}

int sched_explain_json(struct sched_stats *st, uint64_t min_ns, uint32_t tid,
		       FILE *out)
{
	struct explain x = { .st = st, .tid = tid, .out = out };
	int ret;

	fputs(",\"delays\":[", out);
	ret = st->culprits ? d9_culprits_explain(st->culprits, min_ns,
						 explain_one, &x) : 0;
	fputc(']', out);
	return ret;
}

int sched_explain_collect(struct sched_stats *st, uint64_t min_ns,
			  uint32_t tid, struct sched_explained **v, size_t *n)
{
	struct explain x = { .st = st, .tid = tid };
	int ret = st->culprits ? d9_culprits_explain(st->culprits, min_ns,
						     explain_one, &x) : 0;

	*v = x.v;
	*n = x.n;
	return ret;
}

void sched_explained_free(struct sched_explained *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].ran);
	free(v);
}

static int cmp_explained(const void *pa, const void *pb)
{
	const struct sched_explained *a = pa, *b = pb;

	if (a->w->info.delay_ns != b->w->info.delay_ns)
		return a->w->info.delay_ns > b->w->info.delay_ns ? -1 : 1;
	return a->w->end < b->w->end ? -1 : a->w->end > b->w->end;
}

static void waker_text(struct sched_stats *st, const struct sched_wait *w,
		       FILE *out)
{
	char who[48];

	if (w->info.cause != SCHED_CAUSE_WOKEN) {
		fputs(cause_names[w->info.cause], out);
	} else if (!w->info.waker_known) {
		fputs("woken (the waking is not in the trace)", out);
	} else if (w->info.waker_irq) {
		fputs("woken from an interrupt", out);
	} else {
		task_ids(SCHED_OCC_THREAD, w->info.waker_tid,
			 w->info.waker_tgid, who, sizeof(who));
		fprintf(out, "woken by %s (%s)",
			sched_culprit_name(st, w->src, w->info.waker_tid ?
				     SCHED_OCC_THREAD : SCHED_OCC_IDLE,
				     w->info.waker_tid, w->info.waker_tgid),
			who);
	}
}

int sched_explain_text(struct sched_stats *st, uint64_t min_ns, uint32_t tid,
		       size_t max, FILE *out)
{
	struct explain x = { .st = st };
	int ret = sched_explain_collect(st, min_ns, tid, &x.v, &x.n);

	if (!ret) {
		d9_sort(x.v, x.n, sizeof(*x.v), cmp_explained);
		fprintf(out, "delays of %.3f ms or more: %zu%s\n", min_ns / 1e6,
			x.n, x.n > max ? " (the longest shown; --json lists all)" : "");
	}
	for (size_t i = 0; !ret && i < x.n && i < max; i++) {
		const struct sched_explained *e = &x.v[i];
		const struct sched_wait *w = e->w;
		const struct sched_thread *t = &st->threads[w->thread];
		uint64_t at = w->end - w->info.delay_ns;
		char utc[40];

		d9_sched_utc(d9_sched_wall_ns(st, w->src, at), utc, sizeof(utc));
		fprintf(out, "  %u (%s): %.3f ms from %.6f s%s%s%s on CPU %u, ",
			t->tid, t->name[0] ? t->name : "?",
			w->info.delay_ns / 1e6, at / 1e9, *utc ? " (" : "",
			utc, *utc ? ")" : "", w->cpu);
		waker_text(st, w, out);
		fputs("\n    ran meanwhile:", out);
		for (size_t j = 0; j < e->nran; j++) {
			char who[48];

			char prio[24] = "";

			task_ids(e->ran[j].kind, e->ran[j].tid, e->ran[j].tgid,
				 who, sizeof(who));
			if (e->ran[j].kind == SCHED_OCC_THREAD &&
			    e->ran[j].prio >= 0)
				snprintf(prio, sizeof(prio), ", prio %d",
					 e->ran[j].prio);
			fprintf(out, "%s %s%s%s%s%s %.3f ms", j ? "," : "",
				sched_culprit_name(st, w->src, e->ran[j].kind,
					     e->ran[j].tid, e->ran[j].tgid),
				*who || *prio ? " (" : "", who, prio,
				*who || *prio ? ")" : "", e->ran[j].ns / 1e6);
		}
		fprintf(out, "%s; another CPU idle meanwhile: %.3f ms\n",
			e->nran ? "" : " nothing recorded", e->idle / 1e6);
		span_text(st, w, out);
		stack_text(st, sched_wait_stack(st, w), "stack at its switch-out",
			   out);
		stack_text(st, sched_waker_stack(st, w), "its waker's stack as it "
			   "woke it", out);
	}
	sched_explained_free(x.v, x.n);
	return ret;
}
