/* SPDX-License-Identifier: MIT */
/*
 * sched_stacks.h - the user stacks of a trace (sched.stack events), its
 * on-CPU samples (sched.sample) and the mappings they are read against
 * (sched.mapping), for `dial9 sched --explain` and `dial9 flame`: the
 * stack a thread was switched out with before a wait, the stack of the
 * thread that woke it, and where threads ran, each frame as
 * object+0xoffset or as a symbolizer names it.
 */
#ifndef DIAL9_SCHED_STACKS_H
#define DIAL9_SCHED_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sched_stack {
	uint32_t src, tid, pid;
	uint64_t ts;
	size_t first;			/* index into sched_stacks.ips */
	uint32_t n;
	bool truncated;
	uint64_t end;			/* the thread's next switch-in, 0: none */
};

#define SCHED_BUILD_ID_MAX 20		/* bytes kept (as D9_BUILD_ID_MAX) */

struct sched_mapping {
	uint32_t src, pid;
	uint64_t ts;			/* of its sched.mapping event */
	uint64_t start, end, offset;
	char *path;
	uint8_t build_id[SCHED_BUILD_ID_MAX];
	uint32_t build_id_len;		/* 0: none recorded */
	size_t prev;			/* 1 + the process's mapping before it; 0: none */
};

/* A frame to name: address @ip of process @pid (source @src), at file
 * offset @off of mapping @m, or outside every mapping (@m NULL). */
struct sched_frame {
	uint32_t src, pid;
	uint64_t ip, off;
	const struct sched_mapping *m;
};

/* A frame the recording host named (sched.symbol, docs/format.md). */
struct sched_symbol {
	uint32_t src, pid;
	uint64_t ip, within;
	char *name, *obj;
};

/* Frames the recording host could not name, and why (sched.symbol_note). */
struct sched_symbol_note {
	uint32_t src, pid;
	uint64_t frames;
	char *obj, *why;
};

struct sched_stacks {
	struct sched_stack *v;
	size_t n, cap;
	uint64_t *ips;
	size_t nips, ips_cap;
	struct sched_mapping *maps;
	size_t nmaps, maps_cap;
	/* (src, pid) -> 1 + its last mapping, open addressing: a frame
	 * looks at its own process's mappings only */
	struct sched_map_slot { uint64_t key; size_t last; } *pidx;
	size_t pidx_n, pidx_cap;
	bool sorted;
	/* wakers' stacks (sched.stack with waker true), by thread and time */
	struct sched_stack *wakers;
	size_t nwakers, wakers_cap;
	bool wakers_sorted;
	/* on-CPU samples, in the trace's order: end - ts is their period */
	struct sched_stack *samples;
	size_t nsamples, samples_cap;
	uint64_t samples_missed;	/* periods the timers skipped */
	/*
	 * Names for frames, if set (the command's symbolizer): the function
	 * holding frame @f, *@within it, and *@obj, what to call its object
	 * (left alone: the mapping's file name); 0 or -errno.  @names_only:
	 * frames as the function's name alone, and unnamed ones as
	 * "[object]" (flame graphs), else name+0xN (object).
	 */
	int (*symbolize)(void *ctx, const struct sched_frame *f,
			 const char **name, uint64_t *within, const char **obj);
	void *sym_ctx;
	bool names_only;
	/* the trace's own symbol table, by (src, pid, ip) once sorted */
	struct sched_symbol *syms;
	size_t nsyms, syms_cap;
	bool syms_sorted;
	struct sched_symbol_note *notes;
	size_t nnotes, notes_cap;
	/* while reading: stacks whose thread has not run again (indexes) */
	size_t *open;
	size_t nopen, open_cap;
};

struct sched_stats;

/* Collect stacks and mappings into st->stacks from now on; -ENOMEM. */
int d9_sched_stats_want_stacks(struct sched_stats *st);
void d9_sched_stacks_free(struct sched_stacks *s);
/*
 * A stack: @frames holds @n little-endian u64 addresses; @waker: the
 * stack of thread @tid as it woke another at @ts, else its stack as it
 * left the CPU at @ts; -ENOMEM.
 */
int d9_sched_stacks_add(struct sched_stacks *s, uint32_t src, uint64_t ts,
			uint32_t tid, uint32_t pid, const void *frames,
			size_t n, bool truncated, bool waker);
/*
 * An on-CPU sample standing for @period_ns of CPU time, after @missed
 * periods its CPU's timer skipped; -ENOMEM.
 */
int d9_sched_stacks_sample(struct sched_stacks *s, uint32_t src, uint64_t ts,
			   uint32_t tid, uint32_t pid, const void *frames,
			   size_t n, bool truncated, uint64_t period_ns,
			   uint64_t missed);
/*
 * Thread (@src, @tid) was switched in at @ts: its open stack's end (the
 * off-CPU time it stands for).  Fed in time order, before any lookup.
 */
void d9_sched_stacks_in(struct sched_stacks *s, uint32_t src, uint32_t tid,
			uint64_t ts);
/* A mapping of process @pid as read at @ts, its file's build-id @id
 * (@idlen 0: none); -ENOMEM. */
int d9_sched_stacks_map(struct sched_stacks *s, uint32_t src, uint32_t pid,
			uint64_t ts, uint64_t start, uint64_t end,
			uint64_t offset,
			const char *path, size_t pathlen, const void *id,
			size_t idlen);
/* The mapping of (@src, @pid) read last, or NULL; its ->prev (1 + an
 * index into s->maps, 0: none) leads through the process's others. */
const struct sched_mapping *d9_sched_stacks_last_map(const struct sched_stacks *s,
						     uint32_t src, uint32_t pid);
/* A sched.symbol of the trace: address @ip of process @pid is @within
 * bytes into function @name of object @obj; -ENOMEM. */
int d9_sched_stacks_symbol(struct sched_stacks *s, uint32_t src, uint32_t pid,
			   uint64_t ip, const char *name, size_t namelen,
			   uint64_t within, const char *obj, size_t objlen);
/* A sched.symbol_note: @frames frames in @obj not named, because @why. */
int d9_sched_stacks_symbol_note(struct sched_stacks *s, uint32_t src,
				uint32_t pid, uint64_t frames, const char *obj,
				size_t objlen, const char *why, size_t whylen);
/* The trace's name for address @ip of (@src, @pid), or NULL. */
const struct sched_symbol *d9_sched_stacks_find_symbol(struct sched_stacks *s,
						       uint32_t src,
						       uint32_t pid,
						       uint64_t ip);
/*
 * Frame @ip of process (@src, @pid) at time @ts against the mappings of
 * @s: *@f with its mapping and file offset, or f->m NULL.  Of the
 * mappings that hold @ip, the newest read at or before @ts (a process
 * that exec'd has its mappings read again, from the exec on), else the
 * oldest (a process first seen after the frame).
 */
void d9_sched_stacks_resolve(const struct sched_stacks *s, uint32_t src,
			     uint32_t pid, uint64_t ip, uint64_t ts,
			     struct sched_frame *f);
/*
 * The stack of thread (@src, @tid) at its last switch-out before @ts (the
 * switch-in that ends a wait: the thread is not switched out again while
 * it waits), or NULL.
 */
const struct sched_stack *d9_sched_stacks_before(struct sched_stacks *s,
						 uint32_t src, uint32_t tid,
						 uint64_t ts);
/* The stack of waker (@src, @tid) as it woke a thread at @ts, or NULL. */
const struct sched_stack *d9_sched_stacks_waker(struct sched_stacks *s,
						uint32_t src, uint32_t tid,
						uint64_t ts);
/*
 * Frame @i of @st as "object+0xoffset" (the file offset in the object's
 * mapping, basename of its path), or "0xaddress" outside every mapping;
 * with a symbolizer that names it, "function+0xN (object)".  With
 * names_only (flame graphs): "function", and a frame without a name
 * "[object]" ("[unknown]" outside every mapping), so that it folds.
 */
void d9_sched_stacks_frame(const struct sched_stacks *s,
			   const struct sched_stack *st, uint32_t i,
			   char *buf, size_t len);

#endif
