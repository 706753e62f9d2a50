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
struct sym_obj;

struct cli_syms {
	struct sym_obj *v;
	size_t n, cap;
	char debug_dir[256], map_dir[256];
};

void cli_syms_init(struct cli_syms *s);
/*
 * The function holding frame @f: *@name (valid until cli_syms_free), the
 * offset *@within it, and, for a JIT frame, *@obj (its map's name);
 * -ENOENT (not named: the note of its object says why) or -ENOMEM.  A
 * struct sched_stacks symbolize hook (ctx: the cli_syms).
 */
int cli_syms_lookup(void *ctx, const struct sched_frame *f,
		    const char **name, uint64_t *within, const char **obj);
/* On stderr, per object whose frames had no name, how many and why. */
void cli_syms_notes(const struct cli_syms *s, const char *cmd);
void cli_syms_free(struct cli_syms *s);

#endif
