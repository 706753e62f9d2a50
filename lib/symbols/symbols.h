/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - function names for stack frames, on the machine the command
 * runs on (symbols.c): a frame in a file's mapping is named from that
 * file (checked against the build-id the trace recorded) or its separate
 * debug file (the build-id directory, .gnu_debuglink); a frame in the
 * vDSO from a vDSO image with the recorded build-id; a frame outside
 * every mapping from the process's perf JIT map (/tmp/perf-PID.map).
 *
 * Where to look, besides the files themselves: DIAL9_DEBUG_DIR (default
 * /usr/lib/debug) for debug files, DIAL9_PERF_MAP_DIR (default /tmp) for
 * JIT maps.
 */
#ifndef DIAL9_SYMBOLS_H
#define DIAL9_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct sched_frame;
struct sched_stacks;
struct sym_obj;

struct d9_syms {
	struct sym_obj *v;
	size_t n, cap;
	size_t *idx;		/* 1 + index into v, by object: open addressing */
	size_t idx_cap;
	char debug_dir[256], map_dir[256];
	/* the trace's own symbol table (sched.symbol), tried first if set */
	struct sched_stacks *trace;
	uint64_t from_trace, from_files;	/* frames named by each */
};

void d9_syms_init(struct d9_syms *s);
/*
 * The function holding frame @f: *@name (valid until d9_syms_free), the
 * offset *@within it, and, for a JIT frame, *@obj (its map's name);
 * -ENOENT (not named: the note of its object says why) or -ENOMEM.  A
 * struct sched_stacks symbolize hook (ctx: the d9_syms).
 */
int d9_syms_lookup(void *ctx, const struct sched_frame *f,
		    const char **name, uint64_t *within, const char **obj);
/*
 * Each object whose frames had no name: @fn(@ctx, its pid (outside every
 * mapping: the process's JIT map; else 0), its path, how many frames,
 * why); stops at the first non-zero return, which it returns.
 */
int d9_syms_each_miss(const struct d9_syms *s,
		      int (*fn)(void *ctx, uint32_t pid, const char *obj,
				uint64_t frames, const char *why),
		      void *ctx);
/*
 * On stderr: where the names came from (the trace's table, the files
 * here), what the recording host could not name (the trace's notes),
 * and per object here whose frames had no name, how many and why.
 */
void d9_syms_notes(const struct d9_syms *s, const char *cmd);
void d9_syms_free(struct d9_syms *s);

#endif
