// SPDX-License-Identifier: MIT
/*
 * elf.c - an ELF image through libelf (symbols/elf.h): PT_LOAD
 * segments, function symbols, the build-id note and .gnu_debuglink.
 *
 * Files come from traces and from the disk, so anything may be wrong in
 * them: every count is bounded by the data libelf actually read, and a
 * header or a table libelf cannot read makes the image "corrupt" (the
 * table is left as it was), never a crash.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"
#include "symbols/elf.h"

static int by_addr(const void *pa, const void *pb)
{
	const struct sym *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	/* of two names at one address, the one with a size first */
	return a->size > b->size ? -1 : a->size < b->size;
}

int d9_sym_table_add(struct sym_table *t, uint64_t addr, uint64_t size,
		  const char *name, size_t len)
{
	char *copy;

	if (d9_grow((void **)&t->syms, &t->syms_cap, t->nsyms + 1,
		    sizeof(*t->syms)))
		return -ENOMEM;
	copy = strndup(name, len);
	if (!copy)
		return -ENOMEM;
	/* names reach terminals and folded stacks: no control characters */
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '_';
	t->syms[t->nsyms++] = (struct sym){ addr, size, copy };
	return 0;
}

void d9_sym_table_sort(struct sym_table *t)
{
	d9_sort(t->syms, t->nsyms, sizeof(*t->syms), by_addr);
}

void d9_sym_table_free(struct sym_table *t)
{
	for (size_t i = 0; i < t->nsyms; i++)
		free(t->syms[i].name);
	free(t->syms);
	free(t->loads);
	memset(t, 0, sizeof(*t));
}

bool d9_sym_table_addr(const struct sym_table *t, uint64_t off, uint64_t *addr)
{
	for (size_t i = 0; i < t->nloads; i++)
		if (off >= t->loads[i].off &&
		    off - t->loads[i].off < t->loads[i].filesz) {
			*addr = t->loads[i].vaddr + (off - t->loads[i].off);
			return true;
		}
	return false;
}

static int at_or_before(const void *elem, const void *key)
{
	return ((const struct sym *)elem)->addr <= *(const uint64_t *)key;
}

const struct sym *d9_sym_table_find(const struct sym_table *t, uint64_t addr)
{
	/* just after the last symbol at or before addr */
	size_t lo = d9_partition(t->syms, t->nsyms, sizeof(*t->syms),
				 at_or_before, &addr);

	/* a sized symbol before it may still hold addr (nested aliases) */
	for (size_t i = lo; i-- > 0 && lo - i <= 4;) {
		const struct sym *s = &t->syms[i];

		if (s->size ? addr - s->addr < s->size : i == lo - 1)
			return s;
	}
	return NULL;
}

/* The function symbols of section @scn into @t; 0, 1 (*@why) or -ENOMEM. */
static int read_syms(struct sym_table *t, Elf *elf, Elf_Scn *scn,
		     const GElf_Shdr *sh, const char **why)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t ent = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT), n;

	if (!d || !ent) {
		*why = "corrupt ELF file: a symbol table cannot be read "
		       "(truncated?)";
		return 1;
	}
	n = d->d_size / ent;	/* what was read, whatever sh_size says */
	for (size_t i = 0; i < n; i++) {
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
		if (d9_sym_table_add(t, s.st_value, s.st_size, name, strlen(name)))
			return -ENOMEM;
	}
	return 0;
}

/* The GNU build-id among the notes of @scn, into @info. */
static void read_build_id(Elf_Scn *scn, struct sym_elf_info *info)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t at = 0, name_at, desc_at;
	GElf_Nhdr nh;

	while (d && (at = gelf_getnote(d, at, &nh, &name_at, &desc_at))) {
		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
		    memcmp((const char *)d->d_buf + name_at, "GNU", 4))
			continue;
		info->build_id_len = nh.n_descsz < SYM_BUILD_ID_MAX ?
				     nh.n_descsz : SYM_BUILD_ID_MAX;
		memcpy(info->build_id, (const char *)d->d_buf + desc_at,
		       info->build_id_len);
		return;
	}
}

/* .gnu_debuglink: a file name, NUL, padding to 4, a CRC-32. */
static void read_debuglink(Elf *elf, Elf_Scn *scn, struct sym_elf_info *info)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const char *p = d ? d->d_buf : NULL;
	size_t len, crc_at;
	GElf_Ehdr eh;

	if (!p || !gelf_getehdr(elf, &eh))
		return;
	len = strnlen(p, d->d_size);
	crc_at = (len + 4) & ~(size_t)3;
	/* a name, not a path: it is looked for in known directories */
	if (!len || len >= sizeof(info->debuglink) || memchr(p, '/', len) ||
	    crc_at + 4 > d->d_size)
		return;
	memcpy(info->debuglink, p, len);
	info->debuglink[len] = '\0';
	{
		const unsigned char *c = (const unsigned char *)p + crc_at;

		info->debuglink_crc = eh.e_ident[EI_DATA] == ELFDATA2MSB ?
			(uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 |
			(uint32_t)c[2] << 8 | c[3] :
			(uint32_t)c[3] << 24 | (uint32_t)c[2] << 16 |
			(uint32_t)c[1] << 8 | c[0];
	}
}

/* The PT_LOAD segments of @elf into @t; 0, 1 (*@why) or -ENOMEM. */
static int read_loads(struct sym_table *t, Elf *elf, const char **why)
{
	size_t nph;

	if (elf_getphdrnum(elf, &nph)) {
		*why = "corrupt ELF file: bad program headers";
		return 1;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			*why = "corrupt ELF file: bad program headers";
			return 1;
		}
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (d9_grow((void **)&t->loads, &t->loads_cap, t->nloads + 1,
			    sizeof(*t->loads)))
			return -ENOMEM;
		t->loads[t->nloads++] = (struct sym_load){ ph.p_offset,
							   ph.p_filesz,
							   ph.p_vaddr };
	}
	return 0;
}

/* Whether [off, off + n * size) lies within @len bytes. */
static bool within(uint64_t off, uint64_t n, uint64_t size, uint64_t len)
{
	return off <= len && (!size || n <= (len - off) / size);
}

static int read_elf(struct sym_table *t, Elf *elf, uint64_t len,
		    unsigned int what, struct sym_elf_info *info,
		    const char **why)
{
	size_t shnum, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	int ret;

	if (!gelf_getehdr(elf, &eh) || elf_getshdrnum(elf, &shnum) ||
	    elf_getshdrstrndx(elf, &shstrndx)) {
		*why = "corrupt ELF file: bad ELF or section headers";
		return 1;
	}
	/* libelf reads headers past the end as none: say it */
	if (!within(eh.e_shoff, eh.e_shnum, eh.e_shentsize, len) ||
	    !within(eh.e_phoff, eh.e_phnum, eh.e_phentsize, len)) {
		*why = "corrupt ELF file: headers past its end (truncated?)";
		return 1;
	}
	if ((what & SYM_LOADS) && (ret = read_loads(t, elf, why)))
		return ret;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh)) {
			*why = "corrupt ELF file: bad section headers";
			return 1;
		}
		if (sh.sh_type == SHT_DYNSYM)
			info->dynsym = true;
		if ((sh.sh_type == SHT_SYMTAB && (what & SYM_SYMTAB)) ||
		    (sh.sh_type == SHT_DYNSYM && (what & SYM_DYNSYM))) {
			ret = read_syms(t, elf, scn, &sh, why);
			if (ret)
				return ret;
		} else if (sh.sh_type == SHT_NOTE && !info->build_id_len) {
			read_build_id(scn, info);
		} else if (sh.sh_type == SHT_PROGBITS) {
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (name && !strcmp(name, ".gnu_debuglink"))
				read_debuglink(elf, scn, info);
		}
	}
	return 0;
}

/* Section and program headers a file may have before libelf sees it:
 * libelf allocates per section header, so a sparse file claiming
 * millions (e_shnum 0 and section 0's sh_size, the extended count)
 * would cost gigabytes.  Real objects have tens; 65536 is ELF's own
 * limit without the extension. */
#define ELF_MAX_HEADERS 65536u

static bool bytes_at(int fd, const void *mem, size_t len, uint64_t off,
		     void *out, size_t n)
{
	if (fd >= 0)
		return pread(fd, out, n, (off_t)off) == (ssize_t)n;
	if (off > len || n > len - off)
		return false;
	memcpy(out, (const char *)mem + off, n);
	return true;
}

/* NULL if the headers' counts and sizes are sane, else why not. */
static const char *precheck(int fd, const void *mem, size_t len)
{
	unsigned char id[EI_NIDENT];
	union {
		Elf64_Ehdr e64;
		Elf32_Ehdr e32;
	} eh;
	union {
		Elf64_Shdr s64;
		Elf32_Shdr s32;
	} sh0;
	uint64_t shoff, shnum, phnum, shentsize, phentsize;
	size_t sh_size, ph_size, eh_size;

	if (!bytes_at(fd, mem, len, 0, id, sizeof(id)) ||
	    memcmp(id, ELFMAG, SELFMAG))
		return NULL; /* not ELF: libelf says so */
	if (id[EI_DATA] != ELFDATA2LSB)
		return NULL; /* big-endian: libelf's own checks */
	if (id[EI_CLASS] == ELFCLASS64) {
		eh_size = sizeof(eh.e64);
		sh_size = sizeof(Elf64_Shdr);
		ph_size = sizeof(Elf64_Phdr);
	} else if (id[EI_CLASS] == ELFCLASS32) {
		eh_size = sizeof(eh.e32);
		sh_size = sizeof(Elf32_Shdr);
		ph_size = sizeof(Elf32_Phdr);
	} else {
		return NULL;
	}
	if (!bytes_at(fd, mem, len, 0, &eh, eh_size))
		return "corrupt ELF file: truncated ELF header";
	if (id[EI_CLASS] == ELFCLASS64) {
		shoff = eh.e64.e_shoff;
		shnum = eh.e64.e_shnum;
		phnum = eh.e64.e_phnum;
		shentsize = eh.e64.e_shentsize;
		phentsize = eh.e64.e_phentsize;
	} else {
		shoff = eh.e32.e_shoff;
		shnum = eh.e32.e_shnum;
		phnum = eh.e32.e_phnum;
		shentsize = eh.e32.e_shentsize;
		phentsize = eh.e32.e_phentsize;
	}
	if (shoff && !shnum) { /* the extended count: section 0's sh_size */
		if (!bytes_at(fd, mem, len, shoff, &sh0, sh_size))
			return "corrupt ELF file: headers past its end (truncated?)";
		shnum = id[EI_CLASS] == ELFCLASS64 ? sh0.s64.sh_size :
						     sh0.s32.sh_size;
	}
	if ((shnum && shentsize != sh_size) || (phnum && phentsize != ph_size))
		return "corrupt ELF file: bad header entry sizes";
	if (shnum > ELF_MAX_HEADERS || phnum > ELF_MAX_HEADERS)
		return "corrupt ELF file: more section or program headers than any object has";
	return NULL;
}

int d9_sym_elf_read(struct sym_table *t, int fd, const void *mem, size_t len,
		 unsigned int what, struct sym_elf_info *info,
		 const char **why)
{
	size_t nsyms = t->nsyms, nloads = t->nloads;
	struct sym_elf_info scratch;
	struct stat sb;
	Elf *elf;
	int ret;

	if (!info)
		info = &scratch;
	memset(info, 0, sizeof(*info));
	if ((*why = precheck(fd, mem, len)))
		return 1;
	elf_version(EV_CURRENT);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) :
			elf_memory((char *)mem, len);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		*why = "not an ELF file";
		ret = 1;
	} else if (fd >= 0 && fstat(fd, &sb)) {
		*why = "cannot be read";
		ret = 1;
	} else {
		ret = read_elf(t, elf, fd >= 0 ? (uint64_t)sb.st_size : len,
			       what, info, why);
	}
	if (elf)
		elf_end(elf);
	if (ret) {
		/* as it was: nothing of a file half read */
		for (size_t i = nsyms; i < t->nsyms; i++)
			free(t->syms[i].name);
		t->nsyms = nsyms;
		t->nloads = nloads;
		return ret;
	}
	d9_sym_table_sort(t);
	return 0;
}
