// SPDX-License-Identifier: MIT
/*
 * syms_bench.c - what naming stack frames costs (lib/symbols/symbols.c): for
 * one ELF file, the first frame (the object found and its symbols read,
 * sorted), then N distinct addresses, each inside a function, spread
 * over the file's functions, looked up once each and then again; the
 * heap the object holds afterwards (mallinfo2) and the process's peak
 * RSS.  make bench-syms; never part of make test.
 *
 *   syms_bench FILE [N] [REPS] [FROM]
 *
 * FROM: the file to pick the addresses from (an unstripped copy of a
 * stripped FILE, named through its debug file).  Prints BENCH lines:
 * load_ms, lookup_ns (first sight of each address), relookup_ns,
 * heap_bytes (the object's, after the lookups), heap_per_func, rss_kb.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sched/sched_stacks.h"
#include "symbols/symbols.h"
#include "symbols/elf.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The file offset of address @addr, through the segment holding it. */
static bool file_off(const struct sym_table *t, uint64_t addr, uint64_t *off)
{
	for (size_t i = 0; i < t->nloads; i++)
		if (addr >= t->loads[i].vaddr &&
		    addr - t->loads[i].vaddr < t->loads[i].filesz) {
			*off = addr - t->loads[i].vaddr + t->loads[i].off;
			return true;
		}
	return false;
}

int main(int argc, char **argv)
{
	size_t want = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	const char *from = argc > 4 ? argv[4] : argv[1];
	struct sym_table t = { 0 };
	struct sched_mapping m = { .start = 0x100000000000ull,
				   .end = 0x200000000000ull };
	struct sched_frame f = { .pid = 1, .m = &m };
	uint64_t *offs;
	size_t n = 0, named = 0, funcs;
	const char *why;
	struct rusage ru;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: syms_bench FILE [N] [REPS]\n");
		return 2;
	}
	/* the addresses: from the file's own table (the same reader) */
	fd = open(from, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || d9_sym_elf_read(&t, fd, NULL, 0, SYM_LOADS | SYM_SYMTAB,
				   NULL, &why) ||
	    (!t.nsyms && d9_sym_elf_read(&t, fd, NULL, 0, SYM_DYNSYM, NULL,
				      &why))) {
		fprintf(stderr, "syms_bench: %s: cannot be read\n", from);
		return 1;
	}
	close(fd);
	if (want > t.nsyms)
		want = t.nsyms;
	offs = calloc(want ? want : 1, sizeof(*offs));
	for (size_t i = 0; offs && i < want; i++) {
		const struct sym *s = &t.syms[i * t.nsyms / want];
		uint64_t off;

		if (file_off(&t, s->addr + (s->size > 1 ? s->size / 2 : 0),
			     &off))
			offs[n++] = off;
	}
	printf("BENCH-INFO syms file=%s functions=%zu addresses=%zu\n",
	       argv[1], t.nsyms, n);
	funcs = t.nsyms;
	d9_sym_table_free(&t);
	if (!n)
		return 1;
	m.path = argv[1];
	for (int r = 0; r < reps; r++) {
		struct mallinfo2 before = mallinfo2(), after;
		struct d9_syms s;
		const char *name, *obj;
		uint64_t within;
		double t0, t1, t2, t3;

		d9_syms_init(&s);
		t0 = now_ns();
		f.off = offs[0];
		named = !d9_syms_lookup(&s, &f, &name, &within, &obj);
		t1 = now_ns();
		for (size_t i = 1; i < n; i++) {
			f.off = offs[i];
			named += !d9_syms_lookup(&s, &f, &name, &within, &obj);
		}
		t2 = now_ns();
		for (size_t i = 0; i < n; i++) {
			f.off = offs[i];
			d9_syms_lookup(&s, &f, &name, &within, &obj);
		}
		t3 = now_ns();
		after = mallinfo2();
		printf("BENCH syms rep=%d load_ms=%.2f lookup_ns=%.0f "
		       "relookup_ns=%.0f heap_bytes=%zu heap_per_func=%.0f "
		       "named=%zu\n", r, (t1 - t0) / 1e6,
		       n > 1 ? (t2 - t1) / (double)(n - 1) : 0,
		       (t3 - t2) / (double)n, after.uordblks - before.uordblks,
		       (double)(after.uordblks - before.uordblks) /
		       (double)funcs, named);
		d9_syms_free(&s);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("BENCH syms rss_kb=%ld\n", ru.ru_maxrss);
	free(offs);
	return 0;
}
