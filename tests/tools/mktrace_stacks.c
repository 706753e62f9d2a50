// SPDX-License-Identifier: MIT
/*
 * mktrace_stacks.c - traces with stacks (sched.stack, sched.mapping) for
 * the symbol and --explain tests (tests/tools/symbols.sh, synthetic.sh):
 *
 *   mktrace symbols DIR SELF STRIPPED GARBAGE   this program's own frames
 *                        mapped from three files
 *   mktrace frames DIR   DIR/frames/: one thread per line of stdin,
 *                        "TID PATH ID START END OFFSET IP[,IP...]"
 *                        (hexadecimal; PATH "-": no mapping; ID as
 *                        s_map() takes it), blocked at 10 us with that
 *                        stack, back at 30
 *   mktrace vdso FILE    this process's vDSO mapping, written to FILE
 *   mktrace why DIR      DIR/why/: waits inside application spans, with
 *                        the waker's stack
 *   mktrace symtab IN OUT  segment IN with the symbol table the worker
 *                        appends before shipping it (lib/symbols/symtab.c),
 *                        made here, written to OUT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mktrace.h"
#include "ksched/ksched.h"
#include "symbols/symtab.h"

static const struct dial9_field f_stack[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "truncated", DIAL9_BOOL }, { "frames", DIAL9_BYTES },
};
static const struct dial9_field f_wstack[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "truncated", DIAL9_BOOL }, { "frames", DIAL9_BYTES },
	{ "waker", DIAL9_BOOL },
};
static const struct dial9_field f_map[] = {
	{ "pid", DIAL9_U64 }, { "start", DIAL9_U64 }, { "end", DIAL9_U64 },
	{ "offset", DIAL9_U64 }, { "path", DIAL9_STR },
	{ "build_id", DIAL9_BYTES },
};

void s_stack_schemas(struct dial9_encoder *e)
{
	CHECK(dial9_encoder_schema(e, S_STACK, DIAL9_KIND_INSTANT, "sched.stack", 5, f_stack));
	CHECK(dial9_encoder_schema(e, S_WSTACK, DIAL9_KIND_INSTANT, "sched.stack", 6, f_wstack));
	CHECK(dial9_encoder_schema(e, S_MAP, DIAL9_KIND_INSTANT, "sched.mapping", 6, f_map));
}

void s_stack(struct dial9_encoder *e, double t, uint64_t tid,
	     const uint64_t *ips, size_t n, bool waker)
{
	uint8_t frames[32 * 8];
	struct dial9_value v[6] = {
		dial9_u64(tid), dial9_u64(tid), dial9_u64(0), dial9_bool(false),
		{ 0 }, dial9_bool(true),
	};

	for (size_t i = 0; i < n && i < 32; i++)
		for (int b = 0; b < 8; b++)
			frames[i * 8 + b] = (uint8_t)(ips[i] >> (8 * b));
	v[4].type = DIAL9_BYTES;
	v[4].str.ptr = frames;
	v[4].str.len = (n < 32 ? n : 32) * 8;
	CHECK(dial9_encoder_event(e, waker ? S_WSTACK : S_STACK, US(t), v));
}

void s_map(struct dial9_encoder *e, double t, uint64_t pid, uint64_t start,
	   uint64_t end, uint64_t off, const char *path, const char *id)
{
	uint8_t bid[D9_BUILD_ID_MAX];
	struct dial9_value v[6] = {
		dial9_u64(pid), dial9_u64(start), dial9_u64(end), dial9_u64(off),
	};
	int n = 0;

	if (!strcmp(id, "auto"))
		n = d9_build_id(path, bid, sizeof(bid));
	else if (!strcmp(id, "vdso"))
		n = d9_vdso_build_id(bid, sizeof(bid));
	else if (strcmp(id, "-"))
		while (n < (int)sizeof(bid) && sscanf(id + 2 * n, "%2hhx",
						      &bid[n]) == 1)
			n++;
	v[4].type = DIAL9_STR;
	v[4].str.ptr = path;
	v[4].str.len = strlen(path);
	v[5].type = DIAL9_BYTES;
	v[5].str.ptr = bid;
	v[5].str.len = n > 0 ? (size_t)n : 0;
	CHECK(dial9_encoder_event(e, S_MAP, US(t), v));
}

/* Two functions of this program, for stacks with real frames. */
__attribute__((noinline)) void mktrace_sym_alpha(void);
__attribute__((noinline)) void mktrace_sym_beta(void);
__attribute__((noinline)) void mktrace_sym_alpha(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop" ::: "memory");
}

__attribute__((noinline)) void mktrace_sym_beta(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop" ::: "memory");
	mktrace_sym_alpha();
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop" ::: "memory");
}

/* The mapping of this program that holds @addr (or, @name set, that
 * names it): start, end, offset. */
static int own_mapping(uintptr_t addr, const char *name, uint64_t *start,
		       uint64_t *end, uint64_t *off)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long long a, b, o;

		if (sscanf(line, "%llx-%llx %*s %llx", &a, &b, &o) == 3 &&
		    (name ? strstr(line, name) != NULL : addr >= a && addr < b)) {
			*start = a;
			*end = b;
			*off = o;
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found ? 0 : -1;
}

/*
 * symbols/: a stack of this program's own functions, blocked at 10 and
 * back at 30 (20 us): thread 800 maps them from this program (@self),
 * 801 from @stripped (a copy without symbols), 802 from @garbage (not
 * ELF): the same addresses, named only in the first.
 */
int symbols_case(const char *dir, const char *self, const char *stripped,
		 const char *garbage)
{
	const char *paths[] = { self, stripped, garbage };
	uint64_t ips[2], start, end, off;
	struct dial9_encoder *e;

	ips[0] = (uintptr_t)mktrace_sym_alpha + 3;
	ips[1] = (uintptr_t)mktrace_sym_beta + 5;
	if (own_mapping((uintptr_t)mktrace_sym_alpha, NULL, &start, &end, &off) ||
	    own_mapping((uintptr_t)mktrace_sym_beta, NULL, &start, &end, &off)) {
		fprintf(stderr, "mktrace: no mapping of its own code\n");
		return 1;
	}
	CHECK(dial9_encoder_new(&e));
	sched_begin(e, NULL, NULL);
	s_stack_schemas(e);
	for (uint64_t t = 800; t < 803; t++) {
		s_map(e, 0, t, start, end, off, paths[t - 800],
		      t == 800 ? "auto" : "-");
		s_inx(e, 0, t, 0, 0, 0, 0, 0);
		s_outx(e, 10, t, 0, false, 0, 1, 0);
		s_stack(e, 10, t, ips, 2, false);
		s_inx(e, 30, t, 0, 5000, 0, 1, 0);	/* 5 us runnable */
		s_outx(e, 40, t, 0, false, 5000, 2, 0);
	}
	s_save(e, dir, "symbols", "00000001.dial9");
	dial9_encoder_free(e);
	return 0;
}

int frames_case(const char *dir)
{
	char line[8192], path[4096], id[64], ipl[4096];
	struct dial9_encoder *e;

	CHECK(dial9_encoder_new(&e));
	sched_begin(e, NULL, NULL);
	s_stack_schemas(e);
	s_sample_schema(e);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long tid, start, end, off;
		uint64_t ips[32];
		size_t n = 0;

		if (sscanf(line, "%llu %4095s %63s %llx %llx %llx %4095s", &tid,
			   path, id, &start, &end, &off, ipl) != 7) {
			fprintf(stderr, "mktrace frames: bad line: %s", line);
			return 2;
		}
		for (char *p = ipl; *p && n < 32; n++) {
			ips[n] = strtoull(p, &p, 16);
			if (*p == ',')
				p++;
		}
		if (strcmp(path, "-"))
			s_map(e, 0, tid, start, end, off, path, id);
		s_inx(e, 0, tid, 0, 0, 0, 0, 0);
		s_outx(e, 10, tid, 0, false, 0, 1, 0);
		if (tid >= 1500 && tid < 1600)	/* a CPU sample, not a stack */
			s_sample(e, 5, tid, ips, n, 0);
		else
			s_stack(e, 10, tid, ips, n, false);
		s_inx(e, 30, tid, 0, 5000, 0, 1, 0);
		s_outx(e, 40, tid, 0, false, 5000, 2, 0);
	}
	s_save(e, dir, "frames", "00000001.dial9");
	dial9_encoder_free(e);
	return 0;
}

int vdso_dump(const char *file)
{
	uint64_t start, end, off;
	FILE *f;

	if (own_mapping(0, "[vdso]", &start, &end, &off)) {
		fprintf(stderr, "mktrace: no [vdso] mapping\n");
		return 77;
	}
	f = fopen(file, "wb");
	if (!f || fwrite((const void *)(uintptr_t)start, 1, end - start, f) !=
		  end - start || fclose(f)) {
		perror(file);
		return 1;
	}
	return 0;
}

/*
 * why/, on CPU 0: 700 (process 700) opens span "request" at 5 and
 * "db.query" at 8, blocks at 10, is woken at 20 by 601 (process 601, on
 * CPU 1, whose stack at the waking is in the trace) and runs at 25 (a
 * 5 us wait); db.query ends at 30; preempted at 40, it runs at 50 (10
 * us, in request); request ends at 52; preempted at 60, it runs at 63
 * (3 us, in no span).
 */
int why_case(const char *dir)
{
	static const uint64_t blocked[] = { 0x400500, 0x400400 };
	static const uint64_t waker[] = { 0x500100, 0x500200 };
	static const uint64_t pre1[] = { 0x400600 }, pre2[] = { 0x400700 };
	struct dial9_encoder *e;

	CHECK(dial9_encoder_new(&e));
	sched_begin(e, NULL, NULL);
	s_stack_schemas(e);
	s_map(e, 0, 700, 0x400000, 0x401000, 0, "/nonexistent/app", "-");
	s_map(e, 0, 601, 0x500000, 0x501000, 0, "/nonexistent/waker", "-");
	s_inx(e, 0, 700, 0, 0, 0, 0, 0);
	s_inx(e, 0, 601, 1, 0, 0, 0, 0);
	s_outx(e, 10, 700, 0, false, 0, 1, 0);
	s_stack(e, 10, 700, blocked, 2, false);
	s_waking(e, 20, 700, 1, 601);
	s_stack(e, 20, 601, waker, 2, true);
	s_inx(e, 25, 700, 0, 5000, 0, 1, 0);
	s_outx(e, 40, 700, 0, true, 5000, 2, 0);
	s_stack(e, 40, 700, pre1, 1, false);
	s_inx(e, 50, 700, 0, 10000, 5000, 2, 0);
	s_outx(e, 60, 700, 0, true, 15000, 3, 0);
	s_stack(e, 60, 700, pre2, 1, false);
	s_inx(e, 63, 700, 0, 3000, 15000, 3, 0);
	s_outx(e, 70, 700, 0, false, 18000, 4, 0);
	s_outx(e, 70, 601, 1, false, 0, 1, 0);
	CHECK(dial9_encoder_end_stream(e));
	/* 700's own stream: its spans */
	CHECK(dial9_encoder_begin_stream(e));
	CHECK(dial9_encoder_thread(e, 700, "app-main"));
	CHECK(dial9_encoder_schema(e, S_SPAN_B, DIAL9_KIND_SPAN_BEGIN, "request", 0, NULL));
	CHECK(dial9_encoder_schema(e, S_SPAN_E, DIAL9_KIND_SPAN_END, "request", 0, NULL));
	CHECK(dial9_encoder_schema(e, S_SPAN_E + 1, DIAL9_KIND_SPAN_BEGIN, "db.query", 0, NULL));
	CHECK(dial9_encoder_schema(e, S_SPAN_E + 2, DIAL9_KIND_SPAN_END, "db.query", 0, NULL));
	CHECK(dial9_encoder_event(e, S_SPAN_B, US(5), NULL));
	CHECK(dial9_encoder_event(e, S_SPAN_E + 1, US(8), NULL));
	CHECK(dial9_encoder_event(e, S_SPAN_E + 2, US(30), NULL));
	CHECK(dial9_encoder_event(e, S_SPAN_E, US(52), NULL));
	s_save(e, dir, "why", "00000001.dial9");
	dial9_encoder_free(e);
	return 0;
}

int symtab_case(const char *in, const char *out)
{
	struct d9_symtab_result res;
	struct d9_symtab *t;
	size_t len = 0, tlen = 0;
	uint8_t *seg = NULL;
	void *tab = NULL;
	FILE *f = fopen(in, "rb");
	int ret = 1;

	if (f && !fseek(f, 0, SEEK_END) && ftell(f) > 0) {
		len = (size_t)ftell(f);
		seg = malloc(len);
		rewind(f);
		if (seg && fread(seg, 1, len, f) != len)
			len = 0;
	}
	if (f)
		fclose(f);
	if (!seg || !len || d9_symtab_new(&t, 0)) {
		perror(in);
		free(seg);
		return 1;
	}
	if (!d9_symtab_build(t, seg, len, &tab, &tlen, &res) && tab &&
	    (f = fopen(out, "wb"))) {
		ret = fwrite(seg, 1, len, f) != len ||
		      fwrite(tab, 1, tlen, f) != tlen;
		ret |= fclose(f) != 0;
		printf("%llu frames, %llu named, %llu not\n",
		       (unsigned long long)res.frames,
		       (unsigned long long)res.named,
		       (unsigned long long)res.unnamed);
	}
	d9_symtab_free(t);
	free(tab);
	free(seg);
	return ret;
}
