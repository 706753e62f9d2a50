// SPDX-License-Identifier: MIT
/*
 * symbols.c - names for the frames of a trace's stacks (symbols.h): which
 * image names the frames of each object, found once per object, and the
 * note that says why an object's frames have no names.
 *
 * A frame is a file offset in a mapped object; the object's PT_LOAD
 * segment holding that offset gives its address in the object (what
 * symbols are in, for executables, PIE and shared libraries alike:
 * the load bias is the mapping's, which the offset already took off).
 *  - A file: the file the mapping names, if it is the one recorded (the
 *    same build-id), with its .symtab; stripped, .symtab from its debug
 *    file: DEBUG/.build-id/xx/yyyy.debug (the same build-id), then its
 *    .gnu_debuglink name (the CRC-32 it records) in the file's
 *    directory, its .debug/ and DEBUG/DIR/; else its .dynsym.
 *  - [vdso]: an image of the recorded build-id: DEBUG/.build-id, this
 *    process's own vDSO, the kernel's vdso64.so under /lib/modules and
 *    DEBUG/lib/modules.
 *  - Outside every mapping (JIT code is in anonymous ones): the
 *    process's perf map, MAPDIR/perf-PID.map ("START SIZE name" lines).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>
#include <elf.h>

#include "common/common.h"
#include "common/grow.h"
#include "sched/sched_stacks.h"
#include "symbols/symbols.h"
#include "symbols/elf.h"

enum { OBJ_FILE, OBJ_VDSO, OBJ_JIT, OBJ_OTHER };

struct sym_obj {
	int kind;
	char *path;			/* file, "[vdso]" or the JIT map */
	uint32_t pid;			/* OBJ_JIT */
	uint8_t id[SYM_BUILD_ID_MAX];	/* recorded build-id */
	size_t idlen;
	struct sym_table t;
	char why[768];			/* why it names nothing, or "" */
	char partial[256];		/* why some frames may lack names */
	uint64_t misses;		/* frames it could not name */
};

static void __attribute__((format(printf, 2, 3)))
set_why(struct sym_obj *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->why, sizeof(o->why), fmt, ap);
	va_end(ap);
}

/*
 * @path opened for reading if it is a regular file, else -1 and *@why.
 * A path from a trace, maybe hostile: no device is opened (its open can
 * have effects), nor a FIFO put there since (no blocking); links are
 * followed (a library is often one).
 */
static bool pseudo_magic(const struct statfs *fs);

/* Files whose reading has effects or that are made up by the kernel. */
static bool pseudo_fs(int fd)
{
	struct statfs fs;

	return fstatfs(fd, &fs) || pseudo_magic(&fs);
}

static bool pseudo_magic(const struct statfs *fs)
{
	static const unsigned long magic[] = {
		PROC_SUPER_MAGIC, SYSFS_MAGIC, TRACEFS_MAGIC, DEBUGFS_MAGIC,
		SECURITYFS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
		BPF_FS_MAGIC, DEVPTS_SUPER_MAGIC, PSTOREFS_MAGIC, EFIVARFS_MAGIC,
		0x62656570, /* configfs */
	};

	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if ((unsigned long)fs->f_type == magic[i])
			return true;
	return false;
}

static int open_regular(const char *path, const char **why)
{
	struct statfs fs;
	struct stat sb;
	int fd;

	if (stat(path, &sb)) {
		*why = errno == ENOENT ? "no such file here" : "cannot be read";
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		*why = "not a regular file";
		return -1;
	}
	if (statfs(path, &fs) || pseudo_magic(&fs)) { /* not even opened */
		*why = "on a pseudo filesystem (proc, sysfs, tracefs, ...), not read";
		return -1;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		*why = "cannot be read";
		return -1;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		*why = "not a regular file";
		close(fd);
		return -1;
	}
	if (pseudo_fs(fd)) {
		/* /proc/kmsg, tracefs' trace_pipe: reading them consumes
		 * another reader's data, and none holds symbols */
		*why = "on a pseudo filesystem (proc, sysfs, tracefs, ...), not read";
		close(fd);
		return -1;
	}
	return fd;
}

static bool id_is(const uint8_t *id, size_t len, const struct sym_elf_info *in)
{
	return len && in->build_id_len == len && !memcmp(in->build_id, id, len);
}

static bool same_id(const struct sym_obj *o, const struct sym_elf_info *in)
{
	return id_is(o->id, o->idlen, in);
}

/* The CRC-32 of the file on @fd (zlib's: .gnu_debuglink's). */
static bool file_crc(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)n);
	*crc = (uint32_t)c;
	return n == 0;
}

/* Why a debug file candidate was not taken, kept for the note. */
static void debug_note(char *note, size_t len, const char *path,
		       const char *why)
{
	size_t at = strlen(note);

	snprintf(note + at, len - at, "%s%s: %s", at ? "; " : "", path, why);
}

/*
 * Debug file @path for @o, checked by build-id @id (@crc NULL) or CRC:
 * its .symtab into o->t; 0 taken, 1 not (why in @note), -ENOMEM.
 */
static int try_debug(struct sym_obj *o, const char *path, const uint8_t *id,
		     size_t idlen, const uint32_t *crc, char *note, size_t len)
{
	struct sym_table d = { 0 };
	struct sym_elf_info info;
	const char *why;
	uint32_t got;
	int fd, ret;

	fd = open_regular(path, &why);
	if (fd < 0)
		return 1;	/* looked for, not there: the usual case */
	if (crc && (!file_crc(fd, &got) || got != *crc)) {
		close(fd);
		debug_note(note, len, path, "its CRC is not the debuglink's");
		return 1;
	}
	ret = d9_sym_elf_read(&d, fd, NULL, 0, SYM_SYMTAB, &info, &why);
	close(fd);
	if (!ret && !crc && !id_is(id, idlen, &info))
		why = "another build-id";
	else if (!ret && !d.nsyms)
		why = "no function symbols";
	else if (!ret) {
		/* its names, the file's segments */
		free(o->t.syms);
		o->t.syms = d.syms;
		o->t.nsyms = d.nsyms;
		o->t.syms_cap = d.syms_cap;
		free(d.loads);
		return 0;
	}
	d9_sym_table_free(&d);
	if (ret < 0)
		return ret;
	debug_note(note, len, path, why);
	return 1;
}

/* DEBUG/.build-id/xx/yyyy.debug of build-id @id. */
static void build_id_path(const struct d9_syms *s, const uint8_t *id,
			  size_t len, const char *suffix, char *out,
			  size_t outlen)
{
	size_t at = (size_t)snprintf(out, outlen, "%s/.build-id/",
				     s->debug_dir);

	for (size_t i = 0; i < len && at + 4 < outlen; i++) {
		at += (size_t)snprintf(out + at, outlen - at, "%02x", id[i]);
		if (!i && at + 1 < outlen)
			out[at++] = '/';
	}
	snprintf(out + (at < outlen ? at : outlen - 1),
		 outlen - (at < outlen ? at : outlen - 1), "%s", suffix);
}

/*
 * The separate debug file of file @o (stripped, @info read from it) into
 * o->t; 0 found, 1 not (why in @note), -ENOMEM.
 */
static int find_debug(const struct d9_syms *s, struct sym_obj *o,
		      const struct sym_elf_info *info, char *note, size_t len)
{
	char path[4096 + 512], dir[4096];
	const char *slash = strrchr(o->path, '/');
	int ret;

	/* the file's build-id is the recorded one, if one was */
	if (info->build_id_len) {
		build_id_path(s, info->build_id, info->build_id_len, ".debug",
			      path, sizeof(path));
		ret = try_debug(o, path, info->build_id, info->build_id_len,
				NULL, note, len);
		if (ret <= 0)
			return ret;
	}
	if (!info->debuglink[0]) {
		if (!*note)
			snprintf(note, len, "none under %s/.build-id, no "
				 ".gnu_debuglink", s->debug_dir);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - o->path), o->path);
	/* beside it, in .debug/ beside it, under DEBUG/ by its directory */
	for (int i = 0; i < 3; i++) {
		if (i < 2)
			snprintf(path, sizeof(path), i ? "%s/.debug/%s" : "%s/%s",
				 dir, info->debuglink);
		else
			snprintf(path, sizeof(path), "%s%s/%s", s->debug_dir,
				 dir, info->debuglink);
		ret = try_debug(o, path, NULL, 0, &info->debuglink_crc, note,
				len);
		if (ret <= 0)
			return ret;
	}
	if (!*note)
		snprintf(note, len, "none under %.80s/.build-id, no %.80s beside it, "
			 "in .debug/ or %.80s%.80s/", s->debug_dir, info->debuglink,
			 s->debug_dir, dir);
	return 1;
}

static int load_file(const struct d9_syms *s, struct sym_obj *o)
{
	struct sym_elf_info info;
	char note[512] = "";
	const char *why;
	int fd, ret;

	fd = open_regular(o->path, &why);
	if (fd < 0) {
		set_why(o, "%s", why);
		return 0;
	}
	ret = d9_sym_elf_read(&o->t, fd, NULL, 0, SYM_LOADS | SYM_SYMTAB, &info,
			   &why);
	if (ret) {
		close(fd);
		if (ret > 0)
			set_why(o, "%s", why);
		return ret < 0 ? ret : 0;
	}
	if (o->idlen && !same_id(o, &info)) {
		close(fd);
		set_why(o, "build-id mismatch: the file here is not the one "
			"the trace recorded");
		return 0;
	}
	ret = o->t.nsyms ? 0 : find_debug(s, o, &info, note, sizeof(note));
	if (ret == 1 && info.dynsym) {
		/* its exported functions, at least */
		ret = d9_sym_elf_read(&o->t, fd, NULL, 0, SYM_DYNSYM, NULL, &why);
		if (!ret)
			snprintf(o->partial, sizeof(o->partial),
				 "stripped to .dynsym, no debug file (%.200s)",
				 note);
	}
	close(fd);
	if (ret > 0 || (!ret && !o->t.nsyms))
		set_why(o, "stripped, and no debug file (%s)", note);
	return ret < 0 ? ret : 0;
}

/* The image of this process's vDSO: its start and length, or NULL. */
static const void *own_vdso(size_t *len)
{
	const unsigned char *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	Elf64_Ehdr eh;
	uint64_t end;

	if (!base)
		return NULL;
	memcpy(&eh, base, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phnum > 64)
		return NULL;
	/* mapped whole: up to its section headers, after everything */
	end = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, base + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_offset + ph.p_filesz > end)
			end = ph.p_offset + ph.p_filesz;
	}
	if (end > (1u << 20))
		return NULL;
	*len = (size_t)end;
	return base;
}

/*
 * vDSO image @path (or @mem) for @o if it has the recorded build-id:
 * loads and functions (.symtab, else .dynsym) into o->t; 0 taken, 1 not,
 * -ENOMEM.
 */
static int try_vdso(struct sym_obj *o, const char *path, const void *mem,
		    size_t len)
{
	struct sym_elf_info info;
	const char *why;
	int fd = -1, ret;

	if (path && (fd = open_regular(path, &why)) < 0)
		return 1;
	ret = d9_sym_elf_read(&o->t, fd, mem, len, 0, &info, &why);
	if (!ret && same_id(o, &info)) {
		ret = d9_sym_elf_read(&o->t, fd, mem, len, SYM_LOADS | SYM_SYMTAB,
				   &info, &why);
		if (!ret && !o->t.nsyms)
			ret = d9_sym_elf_read(&o->t, fd, mem, len, SYM_DYNSYM,
					   NULL, &why);
		if (!ret && !o->t.nsyms)
			ret = 1;
	} else if (!ret) {
		ret = 1;
	}
	if (fd >= 0)
		close(fd);
	if (ret)
		d9_sym_table_free(&o->t);
	return ret;
}

static int load_vdso(const struct d9_syms *s, struct sym_obj *o)
{
	char path[4096];
	struct utsname u;
	const void *mem;
	size_t len = 0;
	int ret;

	if (!o->idlen) {
		set_why(o, "the trace has no build-id for it");
		return 0;
	}
	build_id_path(s, o->id, o->idlen, ".debug", path, sizeof(path));
	if ((ret = try_vdso(o, path, NULL, 0)) <= 0)
		return ret;
	mem = own_vdso(&len);
	if (mem && (ret = try_vdso(o, NULL, mem, len)) <= 0)
		return ret;
	if (uname(&u))
		u.release[0] = '\0';
	snprintf(path, sizeof(path), "%s/lib/modules/%s/vdso/vdso64.so",
		 s->debug_dir, u.release);
	if ((ret = try_vdso(o, path, NULL, 0)) <= 0)
		return ret;
	snprintf(path, sizeof(path), "/lib/modules/%s/vdso/vdso64.so",
		 u.release);
	if ((ret = try_vdso(o, path, NULL, 0)) <= 0)
		return ret;
	set_why(o, "no vDSO image of its build-id here (this kernel's is "
		"another; none under %s/.build-id or %s/vdso)", s->debug_dir,
		"/lib/modules/RELEASE");
	return 0;
}

/* A perf map line's length at most; longer ones are skipped, counted. */
#define JIT_LINE_MAX 4096

/*
 * A perf map: "START SIZE name" per line, hexadecimal.  As perf does,
 * only a map of the reading user or of root: anyone can write /tmp, and
 * a map planted there for a recorded pid would name its frames.
 */
static int load_jit(struct sym_obj *o)
{
	char line[JIT_LINE_MAX + 2];
	unsigned long long skipped = 0;
	const char *why;
	struct stat sb;
	int fd, ret = 0;
	FILE *f;

	fd = open_regular(o->path, &why);
	if (fd < 0) {
		set_why(o, "its perf map %s: %s", o->path, why);
		return 0;
	}
	if (fstat(fd, &sb) || (sb.st_uid != geteuid() && sb.st_uid != 0)) {
		set_why(o, "its perf map %s belongs to uid %u, neither this user "
			"nor root: not trusted", o->path, (unsigned int)sb.st_uid);
		close(fd);
		return 0;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		unsigned long long start, size;
		size_t n = strlen(line);
		int at = 0;

		if (n && line[n - 1] != '\n' && !feof(f)) {
			int c;

			while ((c = getc(f)) != EOF && c != '\n')
				;
			skipped++;
			continue;
		}
		if (sscanf(line, "%llx %llx %n", &start, &size, &at) < 2 ||
		    !at || !size)
			continue;
		line[strcspn(line, "\n")] = '\0';
		ret = d9_sym_table_add(&o->t, start, size, line + at,
				    strlen(line + at));
	}
	fclose(f);
	d9_sym_table_sort(&o->t);
	if (!ret && !o->t.nsyms)
		set_why(o, "its perf map %s: no entries%s", o->path,
			skipped ? " (lines too long skipped)" : "");
	else if (!ret && skipped)
		d9_log("perf map %s: %llu lines longer than %d bytes skipped",
		       o->path, skipped, JIT_LINE_MAX);
	return ret;
}

static size_t obj_hash(int kind, const char *path, uint32_t pid,
		       const uint8_t *id, size_t idlen)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 1099511628211ull;
	h = (h ^ pid) * 1099511628211ull;
	for (size_t i = 0; i < idlen && id; i++)
		h = (h ^ id[i]) * 1099511628211ull;
	return (size_t)(h ^ h >> 29);
}

static size_t obj_hash_of(const struct sym_obj *o)
{
	return obj_hash(o->kind, o->path, o->kind == OBJ_JIT ? o->pid : 0,
			o->kind == OBJ_JIT ? NULL : o->id,
			o->kind == OBJ_JIT ? 0 : o->idlen);
}

/* The index of objects twice as large (or first made). */
static int obj_reindex(struct d9_syms *s)
{
	size_t nc = s->idx_cap ? s->idx_cap * 2 : 1024, *ni = calloc(nc, sizeof(*ni));

	if (!ni)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		size_t j = obj_hash_of(&s->v[i]) & (nc - 1);

		while (ni[j])
			j = (j + 1) & (nc - 1);
		ni[j] = i + 1;
	}
	free(s->idx);
	s->idx = ni;
	s->idx_cap = nc;
	return 0;
}

/* The object of frame @f, found and read on first sight; NULL: ENOMEM. */
static struct sym_obj *obj_of(struct d9_syms *s, const struct sched_frame *f)
{
	const struct sched_mapping *m = f->m;
	char jit[sizeof(s->map_dir) + 32];
	const char *path = m ? m->path : jit;
	struct sym_obj *o;
	size_t h, slot;
	int kind, ret;

	if (!m) {
		kind = OBJ_JIT;
		snprintf(jit, sizeof(jit), "%s/perf-%u.map", s->map_dir, f->pid);
	} else {
		/* "[vsyscall]" and the like are no file */
		kind = !strcmp(path, "[vdso]") ? OBJ_VDSO :
		       *path && *path != '[' ? OBJ_FILE : OBJ_OTHER;
	}
	h = obj_hash(kind, path, m ? 0 : f->pid, m ? m->build_id : NULL,
		     !m ? 0 : m->build_id_len < SYM_BUILD_ID_MAX ?
		     m->build_id_len : SYM_BUILD_ID_MAX);
	if (2 * (s->n + 1) > s->idx_cap && obj_reindex(s))
		return NULL;
	for (slot = h & (s->idx_cap - 1); s->idx[slot];
	     slot = (slot + 1) & (s->idx_cap - 1)) {
		o = &s->v[s->idx[slot] - 1];
		if (o->kind == kind && !strcmp(o->path, path) &&
		    (!m || (o->idlen == m->build_id_len &&
			    !memcmp(o->id, m->build_id, o->idlen))) &&
		    (m || o->pid == f->pid))
			return o;
	}
	if (d9_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return NULL;
	o = &s->v[s->n];
	memset(o, 0, sizeof(*o));
	o->path = strdup(path);
	if (!o->path)
		return NULL;
	s->n++;
	s->idx[slot] = s->n;
	o->kind = kind;
	o->pid = f->pid;
	if (m) {
		o->idlen = m->build_id_len < sizeof(o->id) ? m->build_id_len :
			   sizeof(o->id);
		memcpy(o->id, m->build_id, o->idlen);
	}
	switch (kind) {
	case OBJ_FILE: ret = load_file(s, o); break;
	case OBJ_VDSO: ret = load_vdso(s, o); break;
	case OBJ_JIT: ret = load_jit(o); break;
	default:
		set_why(o, "not a file");
		ret = 0;
	}
	if (ret)
		set_why(o, "out of memory");
	return o;
}

int d9_syms_lookup(void *ctx, const struct sched_frame *f,
		    const char **name, uint64_t *within, const char **obj)
{
	struct d9_syms *s = ctx;
	const struct sched_symbol *y =
		d9_sched_stacks_find_symbol(s->trace, f->src, f->pid, f->ip);
	struct sym_obj *o;
	const struct sym *sym;
	uint64_t addr = f->ip;

	if (y) {
		const char *base = strrchr(y->obj, '/');

		/* named on the recording host, where the files were */
		*name = y->name;
		*within = y->within;
		if (*y->obj)
			*obj = base && base[1] ? base + 1 : y->obj;
		s->from_trace++;
		return 0;
	}
	o = obj_of(s, f);
	if (!o)
		return -ENOMEM;
	if (o->why[0] || (o->kind != OBJ_JIT &&
			  !d9_sym_table_addr(&o->t, f->off, &addr)) ||
	    !(sym = d9_sym_table_find(&o->t, addr))) {
		o->misses++;
		return -ENOENT;
	}
	*name = sym->name;
	*within = addr - sym->addr;
	s->from_files++;
	if (o->kind == OBJ_JIT) {
		const char *base = strrchr(o->path, '/');

		*obj = base ? base + 1 : o->path;
	}
	return 0;
}

static void dir_from_env(char *buf, size_t len, const char *env,
			 const char *dflt)
{
	const char *v = getenv(env);

	snprintf(buf, len, "%s", v && *v ? v : dflt);
	/* no trailing '/': paths are joined with one */
	for (size_t n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--)
		buf[n - 1] = '\0';
}

void d9_syms_init(struct d9_syms *s)
{
	memset(s, 0, sizeof(*s));
	dir_from_env(s->debug_dir, sizeof(s->debug_dir), "DIAL9_DEBUG_DIR",
		     "/usr/lib/debug");
	dir_from_env(s->map_dir, sizeof(s->map_dir), "DIAL9_PERF_MAP_DIR",
		     "/tmp");
}

/* Why object @o named none or some of its frames. */
static const char *why_of(const struct sym_obj *o)
{
	return o->why[0] ? o->why : o->partial[0] ? o->partial :
	       "outside its functions";
}

int d9_syms_each_miss(const struct d9_syms *s,
		      int (*fn)(void *ctx, uint32_t pid, const char *obj,
				uint64_t frames, const char *why),
		      void *ctx)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct sym_obj *o = &s->v[i];
		int ret;

		if (!o->misses)
			continue;
		ret = fn(ctx, o->kind == OBJ_JIT ? o->pid : 0, o->path,
			 o->misses, why_of(o));
		if (ret)
			return ret;
	}
	return 0;
}

static int print_miss(void *ctx, uint32_t pid, const char *obj,
		      uint64_t frames, const char *why)
{
	const char *cmd = ctx;
	unsigned long long n = (unsigned long long)frames;

	if (pid)
		fprintf(stderr, "dial9 %s: %llu frame%s outside every "
			"mapping of process %u not named: %s\n", cmd, n,
			n == 1 ? "" : "s", pid, why);
	else
		fprintf(stderr, "dial9 %s: %llu frame%s in %s not named: "
			"%s\n", cmd, n, n == 1 ? "" : "s", obj, why);
	return 0;
}

void d9_syms_notes(const struct d9_syms *s, const char *cmd)
{
	const struct sched_stacks *t = s->trace;

	if (s->from_trace)
		fprintf(stderr, "dial9 %s: %llu frame%s named from the trace's "
			"symbol table (made on the recording host), %llu from "
			"the files here\n", cmd,
			(unsigned long long)s->from_trace,
			s->from_trace == 1 ? "" : "s",
			(unsigned long long)s->from_files);
	else if (s->from_files)
		fprintf(stderr, "dial9 %s: %llu frame%s named from the files "
			"here (the trace has no symbol table for them)\n", cmd,
			(unsigned long long)s->from_files,
			s->from_files == 1 ? "" : "s");
	for (size_t i = 0; t && i < t->nnotes; i++) {
		const struct sched_symbol_note *e = &t->notes[i];

		fprintf(stderr, "dial9 %s: the recording host did not name "
			"%llu frame%s%s%s: %s\n", cmd,
			(unsigned long long)e->frames, e->frames == 1 ? "" : "s",
			*e->obj ? " in " : "", e->obj, e->why);
	}
	d9_syms_each_miss(s, print_miss, (void *)cmd);
}

void d9_syms_free(struct d9_syms *s)
{
	for (size_t i = 0; i < s->n; i++) {
		d9_sym_table_free(&s->v[i].t);
		free(s->v[i].path);
	}
	free(s->v);
	free(s->idx);
	memset(s, 0, sizeof(*s));
}
