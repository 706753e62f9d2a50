// SPDX-License-Identifier: MIT
/*
 * symtab_bench.c - what a segment's symbol table costs the worker
 * (lib/symbols/symtab.c): for one ELF file, N distinct addresses spread
 * over its functions, in a segment of stacks of 16 frames that holds
 * each address twice, with the file's mapping; the table made REPS
 * times, each from scratch as the worker makes one per segment (the
 * object's symbols read again).  make bench-syms; never part of make
 * test.
 *
 *   symtab_bench FILE [N] [REPS]
 *
 * BENCH lines: build_ms (one table), us_per_frame (of it, per distinct
 * frame), segment_bytes, table_bytes, table_lz4_bytes (the table's
 * share of the shipped segment), named, rss_kb (the process's peak).
 */
#include <endian.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dial9.h"
#include "pipeline/pipeline.h"
#include "ksched/ksched.h"
#include "symbols/elf.h"
#include "symbols/symtab.h"

#define BASE 0x100000000000ull
#define DEPTH 16

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static const struct dial9_field f_map[] = {
	{ "pid", DIAL9_U64 }, { "start", DIAL9_U64 }, { "end", DIAL9_U64 },
	{ "offset", DIAL9_U64 }, { "path", DIAL9_STR },
	{ "build_id", DIAL9_BYTES },
};
static const struct dial9_field f_stack[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "truncated", DIAL9_BOOL }, { "frames", DIAL9_BYTES },
	{ "waker", DIAL9_BOOL },
};

/* The file offsets of n addresses inside functions of @path, or NULL. */
static uint64_t *pick(const char *path, size_t *n)
{
	struct sym_table t = { 0 };
	const char *why;
	uint64_t *offs;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || d9_sym_elf_read(&t, fd, NULL, 0, SYM_LOADS | SYM_SYMTAB,
				      NULL, &why) ||
	    (!t.nsyms && d9_sym_elf_read(&t, fd, NULL, 0, SYM_DYNSYM, NULL,
					 &why)))
		return NULL;
	close(fd);
	if (*n > t.nsyms)
		*n = t.nsyms;
	offs = calloc(*n ? *n : 1, sizeof(*offs));
	for (size_t i = 0; offs && i < *n; i++) {
		const struct sym *s = &t.syms[i * t.nsyms / *n];
		uint64_t a = s->addr + (s->size > 1 ? s->size / 2 : 0);

		for (size_t k = 0; k < t.nloads; k++)
			if (a >= t.loads[k].vaddr &&
			    a - t.loads[k].vaddr < t.loads[k].filesz) {
				offs[got++] = a - t.loads[k].vaddr + t.loads[k].off;
				break;
			}
	}
	d9_sym_table_free(&t);
	*n = got;
	return offs;
}

int main(int argc, char **argv)
{
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	const char *keys[] = { "host" }, *vals[] = { "bench" };
	struct dial9_value mv[6], sv[6];
	struct dial9_encoder *e;
	uint64_t *offs, frames[DEPTH];
	uint8_t id[20];
	const void *seg;
	size_t seglen;
	int idlen;
	struct rusage ru;

	if (argc < 2) {
		fprintf(stderr, "usage: symtab_bench FILE [N] [REPS]\n");
		return 2;
	}
	offs = pick(argv[1], &n);
	if (!offs || !n) {
		fprintf(stderr, "symtab_bench: %s: no functions\n", argv[1]);
		return 1;
	}
	idlen = d9_build_id(argv[1], id, sizeof(id));
	if (dial9_encoder_new(&e) || dial9_encoder_begin_stream(e) ||
	    dial9_encoder_metadata(e, 1, keys, vals) ||
	    dial9_encoder_end_stream(e) || dial9_encoder_begin_stream(e) ||
	    dial9_encoder_schema(e, 1, DIAL9_KIND_INSTANT, "sched.mapping", 6,
				 f_map) ||
	    dial9_encoder_schema(e, 2, DIAL9_KIND_INSTANT, "sched.stack", 6,
				 f_stack))
		return 1;
	mv[0] = dial9_u64(1);
	mv[1] = dial9_u64(BASE);
	mv[2] = dial9_u64(BASE + (1ull << 40));
	mv[3] = dial9_u64(0);
	mv[4] = dial9_str(argv[1]);
	mv[5] = (struct dial9_value){ .type = DIAL9_BYTES };
	mv[5].str.ptr = id;
	mv[5].str.len = idlen > 0 ? (size_t)idlen : 0;
	if (dial9_encoder_event(e, 1, 1000, mv))
		return 1;
	/* each address twice: two passes of stacks of DEPTH frames */
	for (size_t k = 0; k < 2 * n; k += DEPTH) {
		size_t m = 2 * n - k < DEPTH ? 2 * n - k : DEPTH;

		for (size_t i = 0; i < m; i++)
			frames[i] = htole64(BASE + offs[(k + i) % n]);
		sv[0] = dial9_u64(2);
		sv[1] = dial9_u64(1);
		sv[2] = dial9_u64(0);
		sv[3] = (struct dial9_value){ .type = DIAL9_BOOL };
		sv[4] = (struct dial9_value){ .type = DIAL9_BYTES };
		sv[4].str.ptr = frames;
		sv[4].str.len = m * sizeof(frames[0]);
		sv[5] = (struct dial9_value){ .type = DIAL9_BOOL };
		if (dial9_encoder_event(e, 2, 2000 + k, sv))
			return 1;
	}
	if (dial9_encoder_end_stream(e))
		return 1;
	seg = dial9_encoder_data(e, &seglen);
	printf("BENCH-INFO symtab file=%s addresses=%zu segment_bytes=%zu\n",
	       argv[1], n, seglen);
	for (int r = 0; r < reps; r++) {
		struct d9_symtab_result res;
		struct d9_symtab *t;
		size_t tlen, zlen = 0;
		void *tab, *z = NULL;
		double t0, t1;

		if (d9_symtab_new(&t, (uint32_t)(n > 16384 ? n : 0)))
			return 1;
		t0 = now_ns();
		if (d9_symtab_build(t, seg, seglen, &tab, &tlen, &res))
			return 1;
		t1 = now_ns();
		if (tab && !d9_lz4_compress(tab, tlen, &z, &zlen))
			free(z);
		printf("BENCH symtab rep=%d build_ms=%.2f us_per_frame=%.3f "
		       "table_bytes=%zu table_lz4_bytes=%zu named=%llu "
		       "unnamed=%llu\n", r, (t1 - t0) / 1e6,
		       (t1 - t0) / 1e3 / (double)res.frames, tlen, zlen,
		       (unsigned long long)res.named,
		       (unsigned long long)res.unnamed);
		free(tab);
		d9_symtab_free(t);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("BENCH symtab rss_kb=%ld\n", ru.ru_maxrss);
	dial9_encoder_free(e);
	free(offs);
	return 0;
}
