// SPDX-License-Identifier: MIT
/*
 * symbols.c - names for the frames of a trace's stacks, from the ELF
 * files their mappings name, read here with libelf (symbols.h).
 *
 * A frame is a file offset in a mapped object.  The object's PT_LOAD
 * segment holding that offset gives its address in the object (which is
 * what symbols are in, for executables, PIE and shared libraries alike),
 * and .symtab, or .dynsym where the file is stripped, the function there.
 * Each file is read once; a file that cannot be read (gone, not a regular
 * file, not ELF, no symbols) is remembered with the reason, and its
 * frames stay object+0xoffset.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "common/grow.h"
#include "symbols.h"

struct sym {
	uint64_t addr, size;
	char *name;
};

struct load {
	uint64_t off, filesz, vaddr;
};

struct elf_file {
	char *path;
	const char *why;		/* why it has no names, or NULL */
	struct sym *syms;
	size_t nsyms, syms_cap;
	struct load *loads;
	size_t nloads, loads_cap;
	uint64_t misses;		/* frames it could not name */
};

static int by_addr(const void *pa, const void *pb)
{
	const struct sym *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The function symbols of section @scn into @f; -ENOMEM. */
static int read_syms(struct elf_file *f, Elf *elf, Elf_Scn *scn,
		     const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, (int)i, &s) || !s.st_value ||
		    s.st_shndx == SHN_UNDEF ||
		    (GELF_ST_TYPE(s.st_info) != STT_FUNC &&
		     GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC))
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (d9_grow((void **)&f->syms, &f->syms_cap, f->nsyms + 1,
			    sizeof(*f->syms)))
			return -ENOMEM;
		f->syms[f->nsyms].name = strdup(name);
		if (!f->syms[f->nsyms].name)
			return -ENOMEM;
		f->syms[f->nsyms].addr = s.st_value;
		f->syms[f->nsyms++].size = s.st_size;
	}
	return 0;
}

/* Read @f->path: its loadable segments and function symbols; -ENOMEM. */
static int load_file(struct elf_file *f)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh, symsh, dynsh;
	size_t nph = 0;
	struct stat sb;
	Elf *elf;
	int fd, ret = 0;

	/*
	 * A path from a trace, maybe hostile: only a regular file is opened
	 * (a device's open can have effects), without blocking (a FIFO put
	 * there since), and checked again once open.  Links are followed:
	 * a library is often one.
	 */
	if (stat(f->path, &sb)) {
		f->why = errno == ENOENT ? "no such file here" : "cannot be read";
		return 0;
	}
	if (!S_ISREG(sb.st_mode)) {
		f->why = "not a regular file";
		return 0;
	}
	fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		f->why = "cannot be read";
		return 0;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		f->why = "not a regular file";
		close(fd);
		return 0;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		f->why = "not an ELF file";
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (d9_grow((void **)&f->loads, &f->loads_cap, f->nloads + 1,
			    sizeof(*f->loads))) {
			ret = -ENOMEM;
			goto out;
		}
		f->loads[f->nloads++] = (struct load){ ph.p_offset, ph.p_filesz,
						       ph.p_vaddr };
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symtab) {
			symtab = scn;
			symsh = sh;
		} else if (sh.sh_type == SHT_DYNSYM && !dynsym) {
			dynsym = scn;
			dynsh = sh;
		}
	}
	/* .symtab has every function; a stripped file keeps .dynsym */
	if (symtab)
		ret = read_syms(f, elf, symtab, &symsh);
	if (!ret && !f->nsyms && dynsym)
		ret = read_syms(f, elf, dynsym, &dynsh);
	if (!ret && !f->nsyms)
		f->why = "no function symbols (stripped)";
	else if (!ret && !f->nloads)
		f->why = "not an ELF file";
	d9_sort(f->syms, f->nsyms, sizeof(*f->syms), by_addr);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

static struct elf_file *file_of(struct cli_syms *s, const char *path)
{
	struct elf_file *f;

	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].path, path))
			return &s->v[i];
	if (d9_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return NULL;
	f = &s->v[s->n];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	s->n++;
	if (load_file(f))
		f->why = "out of memory";
	return f;
}

int cli_syms_lookup(void *ctx, const char *path, uint64_t off,
		    const char **name, uint64_t *within)
{
	struct cli_syms *s = ctx;
	struct elf_file *f = file_of(s, path);
	size_t lo = 0, hi;
	uint64_t addr = 0;
	bool mapped = false;

	if (!f)
		return -ENOMEM;
	if (f->why)
		goto miss;
	for (size_t i = 0; i < f->nloads && !mapped; i++)
		if (off >= f->loads[i].off &&
		    off - f->loads[i].off < f->loads[i].filesz) {
			addr = f->loads[i].vaddr + (off - f->loads[i].off);
			mapped = true;
		}
	if (!mapped)
		goto miss;
	/* the last symbol at or before addr */
	hi = f->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && (!f->syms[lo - 1].size ||
		   addr - f->syms[lo - 1].addr < f->syms[lo - 1].size)) {
		*name = f->syms[lo - 1].name;
		*within = addr - f->syms[lo - 1].addr;
		return 0;
	}
miss:
	f->misses++;
	return -ENOENT;
}

void cli_syms_init(struct cli_syms *s)
{
	memset(s, 0, sizeof(*s));
	elf_version(EV_CURRENT);
}

void cli_syms_notes(const struct cli_syms *s, const char *cmd)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct elf_file *f = &s->v[i];

		if (!f->misses)
			continue;
		fprintf(stderr, "dial9 %s: %llu frame%s in %s not named: %s\n",
			cmd, (unsigned long long)f->misses,
			f->misses == 1 ? "" : "s", f->path,
			f->why ? f->why : "outside its functions");
	}
}

void cli_syms_free(struct cli_syms *s)
{
	for (size_t i = 0; i < s->n; i++) {
		for (size_t j = 0; j < s->v[i].nsyms; j++)
			free(s->v[i].syms[j].name);
		free(s->v[i].syms);
		free(s->v[i].loads);
		free(s->v[i].path);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}
