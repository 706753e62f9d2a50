/* SPDX-License-Identifier: MIT */
/*
 * symtab.h - a sealed segment's symbol table, made by the worker on the
 * recording host before the segment is shipped (symtab.c): each distinct
 * frame of its stacks (sched.stack) named from the files here, as
 * sched.symbol events, and what could not be named as sched.symbol_note
 * events (docs/format.md), in one stream appended to the segment.
 */
#ifndef DIAL9_SYMBOLS_SYMTAB_H
#define DIAL9_SYMBOLS_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#define D9_SYMTAB_MAX_FRAMES_DEFAULT 16384u

struct d9_symtab;

/* What one segment's table holds. */
struct d9_symtab_result {
	uint64_t frames;	/* distinct frames in the segment's stacks */
	uint64_t named;		/* of those, in the table */
	uint64_t unnamed;	/* looked up, not named (noted) */
	uint64_t capped;	/* past max_frames: not looked up (noted) */
};

/*
 * The table maker of one recorder: it keeps the mappings of the
 * segments it saw (a process's are written once, at the start), and
 * names at most @max_frames distinct frames per segment (0: the
 * default).  0 or -ENOMEM.
 */
int d9_symtab_new(struct d9_symtab **out, uint32_t max_frames);
void d9_symtab_free(struct d9_symtab *t);
/*
 * The table of segment seg[0..len) (not compressed) into *@out
 * (malloc'd, *@outlen bytes: a stream to append to it), or *@out NULL if
 * it has no stacks; what it holds into *@res.  0, -ENOMEM, or the
 * decoder's error.
 */
int d9_symtab_build(struct d9_symtab *t, const void *seg, size_t len,
		    void **out, size_t *outlen, struct d9_symtab_result *res);

#endif
