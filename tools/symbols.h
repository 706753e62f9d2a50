/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - function names for stack frames (object, file offset),
 * read with libelf from the files the trace's mappings name, on the
 * machine the command runs on (symbols.c).
 */
#ifndef DIAL9_SYMBOLS_H
#define DIAL9_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

struct cli_syms {
	struct elf_file *v;
	size_t n, cap;
};

void cli_syms_init(struct cli_syms *s);
/*
 * The function of @path holding file offset @off: *@name (valid until
 * cli_syms_free) and the offset *@within it; -ENOENT (no name: the file
 * is not here, not ELF, stripped, or the offset is in no function) or
 * -ENOMEM.  A struct sched_stacks symbolize hook (ctx: the cli_syms).
 */
int cli_syms_lookup(void *ctx, const char *path, uint64_t off,
		    const char **name, uint64_t *within);
/* On stderr, per file whose frames had no name, how many and why. */
void cli_syms_notes(const struct cli_syms *s, const char *cmd);
void cli_syms_free(struct cli_syms *s);

#endif
