// SPDX-License-Identifier: MIT
/*
 * kmaps.c - a process's executable mappings, so that the addresses of
 * its stacks (sched.stack) can be shown later, on another host, as an
 * object and a file offset: the trace carries each mapping's range, file
 * offset, path and GNU build-id (sched.mapping, docs/format.md).
 *
 * The build-id is read from the file's PT_NOTE segments with pread():
 * a few hundred bytes per object, no ELF library needed.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "ksched/ksched.h"

#define D9_NOTE_MAX 4096	/* bytes of one PT_NOTE segment looked at */

/* The NT_GNU_BUILD_ID note among the notes in @buf, or -ENOENT. */
static int find_build_id(const uint8_t *buf, size_t n, uint8_t *id,
			 size_t cap)
{
	size_t at = 0;

	while (n - at >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name, desc;

		memcpy(&nh, buf + at, sizeof(nh));
		at += sizeof(nh);
		name = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
		desc = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
		if (name > n - at || desc > n - at - name)
			return -ENOENT;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(buf + at, "GNU", 4)) {
			size_t len = nh.n_descsz < cap ? nh.n_descsz : cap;

			memcpy(id, buf + at + name, len);
			return (int)len;
		}
		at += name + desc;
	}
	return -ENOENT;
}

/* Program headers read at once; a file with more is read in steps. */
#define D9_PHDRS_AT_ONCE 32

int d9_build_id(const char *path, uint8_t *id, size_t cap)
{
	uint8_t note[D9_NOTE_MAX];
	Elf64_Phdr ph[D9_PHDRS_AT_ONCE];
	Elf64_Ehdr eh;
	int fd, ret = -ENOENT;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256) {
		ret = -ENOEXEC;
		goto out;
	}
	for (unsigned int i = 0; i < eh.e_phnum && ret < 0;) {
		unsigned int n = eh.e_phnum - i < D9_PHDRS_AT_ONCE ?
				 eh.e_phnum - i : D9_PHDRS_AT_ONCE;
		ssize_t got = pread(fd, ph, n * sizeof(ph[0]),
				    (off_t)(eh.e_phoff + i * sizeof(ph[0])));

		if (got != (ssize_t)(n * sizeof(ph[0])))
			break;
		for (unsigned int k = 0; k < n && ret < 0; k++) {
			size_t len;

			if (ph[k].p_type != PT_NOTE)
				continue;
			len = ph[k].p_filesz < sizeof(note) ? ph[k].p_filesz :
							      sizeof(note);
			got = pread(fd, note, len, (off_t)ph[k].p_offset);
			if (got > 0)
				ret = find_build_id(note, (size_t)got, id, cap);
		}
		i += n;
	}
out:
	close(fd);
	return ret;
}

int d9_vdso_build_id(uint8_t *id, size_t cap)
{
	const uint8_t *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	Elf64_Ehdr eh;

	/* The kernel's image, mapped whole: its headers are in memory. */
	if (!base)
		return -ENOENT;
	memcpy(&eh, base, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 64)
		return -ENOEXEC;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		int ret;

		memcpy(&ph, base + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE || ph.p_filesz > D9_NOTE_MAX)
			continue;
		ret = find_build_id(base + ph.p_offset, (size_t)ph.p_filesz,
				    id, cap);
		if (ret > 0)
			return ret;
	}
	return -ENOENT;
}

/* The hex number at *@p, past one @sep after it; false if malformed. */
static bool hex_field(char **p, char sep, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(*p, &end, 16);
	if (end == *p || errno || *end != sep)
		return false;
	*p = end + 1;
	return true;
}

/* *@p past one field and the spaces after it. */
static void skip_field(char **p)
{
	*p += strcspn(*p, " \n");
	*p += strspn(*p, " ");
}

/*
 * One line of /proc/PID/maps, "start-end perms offset dev inode path",
 * into @m if it maps code from a file: 0 if it does, -1 if not (or if
 * the line is not one the kernel writes).  Parsed by hand: sscanf() was
 * most of a read's cost, ~4,300 instructions a line.
 */
static int parse_maps_line(char *line, struct d9_mapping *m)
{
	unsigned long long start, end, off;
	char *p = line;

	if (!hex_field(&p, '-', &start) || !hex_field(&p, ' ', &end) ||
	    strlen(p) < 5 || p[2] != 'x' || p[4] != ' ')
		return -1;
	p += 5;
	if (!hex_field(&p, ' ', &off))
		return -1;
	skip_field(&p);		/* dev */
	skip_field(&p);		/* inode */
	p[strcspn(p, "\n")] = 0;
	if (!*p)
		return -1;	/* anonymous: JIT code and the like */
	m->start = start;
	m->end = end;
	m->offset = off;
	m->path = p;
	return 0;
}

int d9_maps_read(int pid, int (*fn)(void *ctx, const struct d9_mapping *m),
		 void *ctx)
{
	char path[64], line[4096 + 128], last[4096] = "";
	uint8_t last_id[D9_BUILD_ID_MAX];
	int last_len = 0, ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		struct d9_mapping m = { .pid = pid };
		const char *file;

		if (parse_maps_line(line, &m))
			continue;
		file = m.path;
		/* A library's mappings come in a row: one read per file. */
		if (*file == '/' && strcmp(file, last)) {
			snprintf(last, sizeof(last), "%s", file);
			last_len = d9_build_id(file, last_id, sizeof(last_id));
		}
		if (*file == '/' && last_len > 0) {
			memcpy(m.build_id, last_id, (size_t)last_len);
			m.build_id_len = (uint32_t)last_len;
		}
		/* every process's vDSO is the kernel's one image: ours */
		if (!strcmp(file, "[vdso]")) {
			int n = d9_vdso_build_id(m.build_id, sizeof(m.build_id));

			m.build_id_len = n > 0 ? (uint32_t)n : 0;
		}
		ret = fn(ctx, &m);
	}
	fclose(f);
	return ret;
}
