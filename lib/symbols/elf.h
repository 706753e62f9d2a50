/* SPDX-License-Identifier: MIT */
/*
 * elf.h - one ELF image read with libelf for symbols.c: its
 * loadable segments (file offset to address), the function symbols of
 * one symbol table, its build-id and its .gnu_debuglink (elf.c).
 */
#ifndef DIAL9_SYMBOLS_ELF_H
#define DIAL9_SYMBOLS_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYM_BUILD_ID_MAX 20		/* bytes compared (as the trace's) */

struct sym {
	uint64_t addr, size;
	char *name;
};

struct sym_load {
	uint64_t off, filesz, vaddr;
};

/* Names by address, and where the file's offsets land. */
struct sym_table {
	struct sym *syms;		/* sorted by addr once read */
	size_t nsyms, syms_cap;
	struct sym_load *loads;
	size_t nloads, loads_cap;
};

/* What an image says of itself. */
struct sym_elf_info {
	uint8_t build_id[SYM_BUILD_ID_MAX];
	size_t build_id_len;		/* 0: no build-id note */
	char debuglink[256];		/* "" if no .gnu_debuglink */
	uint32_t debuglink_crc;
	bool dynsym;			/* has a .dynsym */
};

/* What to read into the table. */
#define SYM_LOADS	1u		/* the PT_LOAD segments */
#define SYM_SYMTAB	2u		/* .symtab's functions */
#define SYM_DYNSYM	4u		/* .dynsym's functions */

/*
 * Read the ELF image of @fd (or, @fd < 0, the @len bytes at @mem): what
 * @what asks into @t (added to what it has, sorted again), what it says
 * of itself into @info (may be NULL).  0; 1 with *@why set if it is not
 * ELF or is corrupt (then @t is as before, but for its allocations); or
 * -ENOMEM.
 */
int d9_sym_elf_read(struct sym_table *t, int fd, const void *mem, size_t len,
		 unsigned int what, struct sym_elf_info *info,
		 const char **why);
/* The address in the image of file offset @off, false if none maps it. */
bool d9_sym_table_addr(const struct sym_table *t, uint64_t off, uint64_t *addr);
/* The function holding @addr, or NULL. */
const struct sym *d9_sym_table_find(const struct sym_table *t, uint64_t addr);
/* Add a function (a copy of @name, controls made '_'); -ENOMEM. */
int d9_sym_table_add(struct sym_table *t, uint64_t addr, uint64_t size,
		  const char *name, size_t len);
/* Sort what d9_sym_table_add() added. */
void d9_sym_table_sort(struct sym_table *t);
void d9_sym_table_free(struct sym_table *t);

#endif
