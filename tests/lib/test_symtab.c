// SPDX-License-Identifier: MIT
/*
 * test_symtab.c - a sealed segment's symbol table (lib/symbols/symtab.c):
 * a shared library built here with symbols, a segment whose stacks have
 * frames in it (and in a file that is gone, and outside every mapping),
 * the table's entries checked exactly against nm and readelf; the table
 * read back with the library renamed away (the names come from the
 * trace); the cap on distinct frames, noted; and the worker appending
 * the table before it compresses and writes the segment back, for CPU
 * samples without DIAL9_SCHED_STACKS too.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers.h"
#include "stacks_seg.h"
#include "pipeline/pipeline.h"
#include "ksched/ksched.h"
#include "sched/sched_read.h"
#include "sched/sched_stacks.h"
#include "symbols/symbols.h"
#include "symbols/symtab.h"

#define PID 4242u
#define BASE 0x7f1200000000ull	/* where the library is "mapped" */
#define GONE 0x7f1300000000ull	/* a library that is not here */
#define JIT 0x1234ull		/* outside every mapping */

static char *dir;
static char lib_path[512];
static uint64_t off_alpha, off_beta, off_gamma;

/* The value of symbol @name in `nm` of @path. */
static uint64_t nm_value(const char *path, const char *name)
{
	char cmd[1024], line[512];
	unsigned long long v = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a;
		char t, n[256];

		if (sscanf(line, "%llx %c %255s", &a, &t, n) == 3 &&
		    !strcmp(n, name))
			v = a;
	}
	pclose(p);
	assert_true(v != 0);
	return v;
}

/* File offset of address @addr of @path, through its PT_LOAD segments. */
static uint64_t file_off(const char *path, uint64_t addr)
{
	char cmd[1024], line[512];
	uint64_t off = UINT64_MAX;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long o, v, pa, fsz;

		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx", &o, &v,
			   &pa, &fsz) == 4 && addr >= v && addr - v < fsz)
			off = addr - v + o;
	}
	pclose(p);
	assert_true(off != UINT64_MAX);
	return off;
}

static int setup(void **state)
{
	char src[600];
	FILE *f;

	(void)state;
	dir = test_tmpdir("symtab");
	snprintf(src, sizeof(src), "%s/symt.c", dir);
	snprintf(lib_path, sizeof(lib_path), "%s/libsymt.so", dir);
	f = fopen(src, "w");
	assert_non_null(f);
	fputs("__attribute__((noinline)) static int symt_gamma(int x)\n"
	      "{ __asm__ volatile(\"nop; nop; nop; nop\" ::: \"memory\"); return x + 3; }\n"
	      "__attribute__((noinline)) int symt_beta(int x)\n"
	      "{ __asm__ volatile(\"nop; nop; nop; nop\" ::: \"memory\"); return symt_gamma(x) * 2; }\n"
	      "__attribute__((noinline)) int symt_alpha(int x)\n"
	      "{ __asm__ volatile(\"nop; nop; nop; nop\" ::: \"memory\"); return symt_beta(x) + 1; }\n",
	      f);
	fclose(f);
	assert_int_equal(test_sh("cc -g -O1 -shared -fPIC -Wl,--build-id "
				 "-o '%s' '%s'", lib_path, src), 0);
	off_alpha = file_off(lib_path, nm_value(lib_path, "symt_alpha"));
	off_beta = file_off(lib_path, nm_value(lib_path, "symt_beta"));
	off_gamma = file_off(lib_path, nm_value(lib_path, "symt_gamma"));
	/* no JIT map for the frame outside every mapping */
	setenv("DIAL9_PERF_MAP_DIR", dir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_rm_rf(dir);
	free(dir);
	return 0;
}

/* A segment with its preamble only: no stacks. */
static uint8_t *make_preamble(size_t *len)
{
	const char *keys[] = { "host", "boot_id" }, *vals[] = { "h1", "b1" };
	struct dial9_encoder *e;
	const void *data;
	uint8_t *seg;

	assert_int_equal(dial9_encoder_new(&e), 0);
	assert_int_equal(dial9_encoder_begin_stream(e), 0);
	assert_int_equal(dial9_encoder_metadata(e, 2, keys, vals), 0);
	assert_int_equal(dial9_encoder_end_stream(e), 0);
	data = dial9_encoder_data(e, len);
	seg = malloc(*len);
	assert_non_null(seg);
	memcpy(seg, data, *len);
	dial9_encoder_free(e);
	return seg;
}

/*
 * A segment: its preamble, the mappings, two stacks: alpha+4 beta+8
 * gamma+1 (innermost first), then alpha+4 again, a frame in a library
 * that is gone and one outside every mapping.  *@len bytes, malloc'd.
 */
static uint8_t *make_segment(size_t *len)
{
	struct dial9_encoder *e = seg_begin();
	uint8_t id[20];
	int idlen = d9_build_id(lib_path, id, sizeof(id));
	const uint64_t s1[] = { BASE + off_gamma + 1, BASE + off_beta + 8,
				BASE + off_alpha + 4 };
	const uint64_t s2[] = { BASE + off_alpha + 4, GONE + 0x1000, JIT };

	assert_true(idlen > 0);
	seg_mapping(e, PID, BASE, BASE + 0x100000, 0, lib_path, id,
		    (size_t)idlen);
	seg_mapping(e, PID, GONE, GONE + 0x100000, 0, "/nonexistent/libgone.so",
		    NULL, 0);
	seg_stack(e, PID, 2000, s1, 3);
	seg_stack(e, PID, 3000, s2, 3);
	return seg_end(e, len);
}

struct seen {
	size_t nsym, nnote;
	struct {
		uint64_t pid, address, within, ts;
		char name[64], object[600];
	} sym[8];
	struct {
		uint64_t pid, frames;
		char object[600], why[600];
	} note[8];
};

static void str_of(const struct dial9_record *r, const char *field, char *buf,
		   size_t len)
{
	const struct dial9_value *v = dial9_record_field(r, field);

	assert_non_null(v);
	assert_true(v->type == DIAL9_STR || v->type == DIAL9_ISTR);
	snprintf(buf, len, "%.*s", (int)v->str.len, (const char *)v->str.ptr);
}

static void collect(const void *buf, size_t len, struct seen *s)
{
	struct dial9_decoder *d;
	struct dial9_record r;

	memset(s, 0, sizeof(*s));
	assert_int_equal(dial9_decoder_new(&d, buf, len), 0);
	while (dial9_decoder_next(d, &r) == 1) {
		if (r.kind != DIAL9_RECORD_EVENT)
			continue;
		if (!strcmp(r.schema->name, "sched.symbol")) {
			assert_true(s->nsym < 8);
			s->sym[s->nsym].pid = dial9_record_field(&r, "pid")->u64;
			s->sym[s->nsym].address =
				dial9_record_field(&r, "address")->u64;
			s->sym[s->nsym].within =
				dial9_record_field(&r, "within")->u64;
			s->sym[s->nsym].ts = r.ts_ns;
			str_of(&r, "name", s->sym[s->nsym].name, 64);
			str_of(&r, "object", s->sym[s->nsym].object, 600);
			s->nsym++;
		} else if (!strcmp(r.schema->name, "sched.symbol_note")) {
			assert_true(s->nnote < 8);
			s->note[s->nnote].pid = dial9_record_field(&r, "pid")->u64;
			s->note[s->nnote].frames =
				dial9_record_field(&r, "frames")->u64;
			str_of(&r, "object", s->note[s->nnote].object, 600);
			str_of(&r, "why", s->note[s->nnote].why, 600);
			s->nnote++;
		}
	}
	dial9_decoder_free(d);
}

static void check_sym(const struct seen *s, size_t i, uint64_t addr,
		      const char *name, uint64_t within)
{
	assert_int_equal(s->sym[i].pid, PID);
	assert_int_equal(s->sym[i].address, addr);
	assert_string_equal(s->sym[i].name, name);
	assert_int_equal(s->sym[i].within, within);
	assert_string_equal(s->sym[i].object, lib_path);
	assert_int_equal(s->sym[i].ts, 3000);	/* the last stack's */
}

/* The three functions' frames, by address (the build order sets it). */
static void check_table(const struct seen *s)
{
	struct { uint64_t addr; const char *name; uint64_t within; } want[] = {
		{ BASE + off_gamma + 1, "symt_gamma", 1 },
		{ BASE + off_beta + 8, "symt_beta", 8 },
		{ BASE + off_alpha + 4, "symt_alpha", 4 },
	};

	assert_int_equal(s->nsym, 3);
	for (size_t i = 0; i < 3; i++)
		for (size_t j = i + 1; j < 3; j++)
			if (want[j].addr < want[i].addr) {
				__typeof__(want[0]) t = want[i];

				want[i] = want[j];
				want[j] = t;
			}
	for (size_t i = 0; i < 3; i++)
		check_sym(s, i, want[i].addr, want[i].name, want[i].within);
}

static void table_names_each_distinct_frame(void **state)
{
	struct d9_symtab_result res;
	struct d9_symtab *t;
	size_t len, tlen;
	uint8_t *seg = make_segment(&len);
	void *tab;
	struct seen s;
	char jit[600];

	(void)state;
	assert_int_equal(d9_symtab_new(&t, 0), 0);
	assert_int_equal(d9_symtab_build(t, seg, len, &tab, &tlen, &res), 0);
	assert_non_null(tab);
	assert_int_equal(res.frames, 5);	/* alpha+4 once */
	assert_int_equal(res.named, 3);
	assert_int_equal(res.unnamed, 2);
	assert_int_equal(res.capped, 0);
	collect(tab, tlen, &s);
	check_table(&s);
	/* what was not named, and why, by the address of its first frame */
	assert_int_equal(s.nnote, 2);
	snprintf(jit, sizeof(jit), "%s/perf-%u.map", dir, PID);
	assert_int_equal(s.note[0].pid, PID);
	assert_string_equal(s.note[0].object, jit);
	assert_int_equal(s.note[0].frames, 1);
	assert_non_null(strstr(s.note[0].why, "no such file here"));
	assert_int_equal(s.note[1].pid, 0);
	assert_string_equal(s.note[1].object, "/nonexistent/libgone.so");
	assert_int_equal(s.note[1].frames, 1);
	assert_string_equal(s.note[1].why, "no such file here");
	free(tab);
	free(seg);
	/* a segment without stacks has no table */
	seg = make_preamble(&len);
	assert_int_equal(d9_symtab_build(t, seg, len, &tab, &tlen, &res), 0);
	assert_null(tab);
	d9_symtab_free(t);
	free(seg);
}

/* @buf read with its stacks named from its own symbol table first. */
static void read_named(struct sched_stats *st, struct d9_syms *syms,
		       const void *buf, size_t len)
{
	uint64_t err;

	d9_sched_stats_init(st);
	assert_int_equal(d9_sched_stats_want_stacks(st), 0);
	assert_int_equal(d9_sched_trace(st, buf, len, &err), 0);
	d9_syms_init(syms);
	syms->trace = st->stacks;
	st->stacks->symbolize = d9_syms_lookup;
	st->stacks->sym_ctx = syms;
}

/* The segment with its table, read as dial9 sched --explain does, with
 * the library gone: every frame in it named from the trace. */
static void reader_prefers_the_trace_table(void **state)
{
	struct d9_symtab_result res;
	struct d9_symtab *t;
	struct sched_stats st;
	struct d9_syms syms;
	size_t len, tlen;
	uint8_t *seg = make_segment(&len), *all;
	void *tab;
	char moved[600], buf[256];

	(void)state;
	assert_int_equal(d9_symtab_new(&t, 0), 0);
	assert_int_equal(d9_symtab_build(t, seg, len, &tab, &tlen, &res), 0);
	all = malloc(len + tlen);
	memcpy(all, seg, len);
	memcpy(all + len, tab, tlen);
	snprintf(moved, sizeof(moved), "%s.away", lib_path);
	assert_int_equal(rename(lib_path, moved), 0);
	read_named(&st, &syms, all, len + tlen);
	assert_int_equal(st.stacks->nsyms, 3);
	assert_int_equal(st.stacks->nnotes, 2);
	assert_int_equal(st.stacks->n, 2);
	d9_sched_stacks_frame(st.stacks, &st.stacks->v[0], 0, buf, sizeof(buf));
	assert_string_equal(buf, "symt_gamma+0x1 (libsymt.so)");
	d9_sched_stacks_frame(st.stacks, &st.stacks->v[0], 2, buf, sizeof(buf));
	assert_string_equal(buf, "symt_alpha+0x4 (libsymt.so)");
	/* the gone library's frame: an offset, as before */
	d9_sched_stacks_frame(st.stacks, &st.stacks->v[1], 1, buf, sizeof(buf));
	assert_string_equal(buf, "libgone.so+0x1000");
	assert_int_equal(syms.from_trace, 2);
	assert_int_equal(syms.from_files, 0);
	/* without the trace's table, the files here have no names */
	syms.trace = NULL;
	d9_sched_stacks_frame(st.stacks, &st.stacks->v[0], 0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "libsymt.so+0x"));
	assert_int_equal(rename(moved, lib_path), 0);
	d9_syms_free(&syms);
	d9_sched_stats_free(&st);
	d9_symtab_free(t);
	free(tab);
	free(all);
	free(seg);
}

static void cap_on_distinct_frames_is_noted(void **state)
{
	struct d9_symtab_result res;
	struct d9_symtab *t;
	size_t len, tlen;
	uint8_t *seg = make_segment(&len);
	void *tab;
	struct seen s;

	(void)state;
	assert_int_equal(d9_symtab_new(&t, 2), 0);
	assert_int_equal(d9_symtab_build(t, seg, len, &tab, &tlen, &res), 0);
	/* the first two distinct frames seen: gamma+1, beta+8 */
	assert_int_equal(res.frames, 2);
	assert_int_equal(res.named, 2);
	assert_int_equal(res.capped, 4);	/* alpha+4 twice, gone, jit */
	collect(tab, tlen, &s);
	assert_int_equal(s.nsym, 2);
	assert_int_equal(s.nnote, 1);
	assert_int_equal(s.note[0].frames, 4);
	assert_string_equal(s.note[0].object, "");
	assert_non_null(strstr(s.note[0].why, "DIAL9_SYMBOLS_MAX_FRAMES, 2 "));
	free(tab);
	d9_symtab_free(t);
	free(seg);
}

static void shipped(void *ctx, uint64_t index, uint64_t remaining)
{
	(void)ctx;
	(void)index;
	(void)remaining;
}

/*
 * Segment @index (@seg, @len), written in dir, through a worker (LZ4,
 * write-back into {dir}/@wbname, @sched_flags, @cpu_sample_hz): its
 * stats, and the shipped segment decompressed into *@plain (*@pn long).
 */
static void ship_through_worker(uint64_t index,
				const uint8_t *seg, size_t len,
				const char *wbname, uint32_t sched_flags,
				uint32_t cpu_sample_hz, struct dial9_stats *st,
				void **plain, size_t *pn)
{
	char path[600], wb[600], out[700];
	struct d9_worker *wk;
	struct dial9_config c;
	uint8_t *z;
	size_t zn;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%08llu.dial9", dir,
		 (unsigned long long)index);
	snprintf(wb, sizeof(wb), "%s/%s", dir, wbname);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(seg, 1, len, f), len);
	fclose(f);
	dial9_config_init(&c);
	c.pipeline = DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK;
	c.write_back_dir = wb;
	c.sched_flags = sched_flags;
	c.cpu_sample_hz = cpu_sample_hz;
	assert_int_equal(d9_worker_new(&wk, &c), 0);
	assert_int_equal(d9_worker_start(wk, "b1", "svc", shipped, NULL, NULL,
					 NULL), 0);
	d9_worker_submit(wk, index, path);
	d9_worker_stop(wk, 10000);
	d9_worker_stats(wk, st);
	d9_worker_free(wk);
	assert_int_equal(st->pipe_done, 1);
	snprintf(out, sizeof(out), "%s/b1/%08llu.dial9.lz4", wb,
		 (unsigned long long)index);
	z = test_slurp(out, &zn);
	assert_non_null(z);
	assert_int_equal(d9_lz4_decompress(z, zn, plain, pn), 0);
	assert_true(*pn > len);
	assert_memory_equal(*plain, seg, len);	/* the segment as sealed */
	free(z);
}

/* The worker: the table appended before LZ4 and the write-back. */
static void worker_ships_the_table(void **state)
{
	struct dial9_stats st = { .size = sizeof(st) };
	size_t len, pn;
	uint8_t *seg = make_segment(&len);
	void *plain;
	struct seen s;

	(void)state;
	/* symbols: on by default with stacks */
	ship_through_worker(0, seg, len, "wb", DIAL9_SCHED_STACKS, 99,
			    &st, &plain, &pn);
	assert_int_equal(st.symbols_segments, 1);
	assert_int_equal(st.symbols_named, 3);
	assert_int_equal(st.symbols_unnamed, 2);
	assert_int_equal(st.symbols_capped, 0);
	assert_int_equal(st.symbols_failed, 0);
	assert_int_equal(st.pipe_bytes_in, pn);	/* the segment and its table */
	collect(plain, pn, &s);
	check_table(&s);
	assert_int_equal(s.nnote, 2);
	free(plain);
	free(seg);
}

/* DIAL9_SYMBOLS=0: the segment ships as sealed. */
static void symbols_off_ships_it_as_sealed(void **state)
{
	struct dial9_stats st = { .size = sizeof(st) };
	struct d9_worker *wk;
	struct dial9_config c;
	char path[600], wb[600], out[700];
	size_t len, zn, pn;
	uint8_t *seg = make_segment(&len), *z;
	void *plain;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/00000001.dial9", dir);
	snprintf(wb, sizeof(wb), "%s/wb-off", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(seg, 1, len, f), len);
	fclose(f);
	setenv("DIAL9_SYMBOLS", "0", 1);
	dial9_config_init(&c);
	dial9_config_from_env(&c);
	unsetenv("DIAL9_SYMBOLS");
	assert_int_equal(c.symbols, DIAL9_SYMBOLS_OFF);
	c.pipeline = DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK;
	c.write_back_dir = wb;
	c.sched_flags = DIAL9_SCHED_STACKS;
	assert_int_equal(d9_worker_new(&wk, &c), 0);
	assert_int_equal(d9_worker_start(wk, "b1", "svc", shipped, NULL, NULL,
					 NULL), 0);
	d9_worker_submit(wk, 1, path);
	d9_worker_stop(wk, 10000);
	d9_worker_stats(wk, &st);
	d9_worker_free(wk);
	assert_int_equal(st.pipe_done, 1);
	assert_int_equal(st.symbols_segments, 0);
	snprintf(out, sizeof(out), "%s/b1/00000001.dial9.lz4", wb);
	z = test_slurp(out, &zn);
	assert_non_null(z);
	assert_int_equal(d9_lz4_decompress(z, zn, &plain, &pn), 0);
	assert_int_equal(pn, len);
	assert_memory_equal(plain, seg, len);
	free(plain);
	free(z);
	free(seg);
}

/*
 * CPU samples alone (DIAL9_CPU_SAMPLE_HZ without DIAL9_SCHED_STACKS,
 * issue 24): the worker makes the table all the same, and the samples
 * are named from it with the library renamed away (another host).
 */
static const struct dial9_field f_sample[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "truncated", DIAL9_BOOL }, { "frames", DIAL9_BYTES },
	{ "in_kernel", DIAL9_BOOL }, { "period_ns", DIAL9_U64 },
	{ "missed", DIAL9_U64 },
};

/* Thread PID + 1's sample at @ts: @n (at most 8) addresses. */
static void sample_at(struct dial9_encoder *e, uint64_t ts,
		      const uint64_t *ips, size_t n)
{
	uint64_t le[8];
	struct dial9_value v[8] = {
		dial9_u64(PID + 1), dial9_u64(PID), dial9_u64(0),
		dial9_bool(false), seg_bytes(le, n * sizeof(le[0])),
		dial9_bool(false), dial9_u64(10101010), dial9_u64(0),
	};

	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		le[i] = htole64(ips[i]);
	assert_int_equal(dial9_encoder_event(e, 3, ts, v), 0);
}

static void worker_names_samples_without_stacks(void **state)
{
	struct dial9_stats st = { .size = sizeof(st) };
	struct dial9_encoder *e = seg_begin();
	struct sched_stats ss;
	struct d9_syms syms;
	char moved[600], buf[256];
	const uint64_t s1[] = { BASE + off_gamma + 1, BASE + off_beta + 8,
				BASE + off_alpha + 4 };
	const uint64_t s2[] = { BASE + off_alpha + 4 };
	uint8_t id[20], *seg;
	int idlen = d9_build_id(lib_path, id, sizeof(id));
	size_t len, pn;
	void *plain;
	struct seen s;

	(void)state;
	assert_true(idlen > 0);
	assert_int_equal(dial9_encoder_schema(e, 3, DIAL9_KIND_INSTANT,
					      "sched.sample", 8, f_sample), 0);
	seg_mapping(e, PID, BASE, BASE + 0x100000, 0, lib_path, id,
		    (size_t)idlen);
	sample_at(e, 2000, s1, 3);
	sample_at(e, 3000, s2, 1);
	seg = seg_end(e, &len);
	/* no DIAL9_SCHED_STACKS: samples only */
	ship_through_worker(2, seg, len, "wb-samples", 0, 99, &st, &plain,
			    &pn);
	assert_int_equal(st.symbols_segments, 1);
	assert_int_equal(st.symbols_named, 3);
	assert_int_equal(st.symbols_unnamed, 0);
	assert_int_equal(st.symbols_failed, 0);
	collect(plain, pn, &s);
	check_table(&s);			/* ts: the last sample's */
	assert_int_equal(s.nnote, 0);

	/* read elsewhere: the library is not there */
	snprintf(moved, sizeof(moved), "%s.away", lib_path);
	assert_int_equal(rename(lib_path, moved), 0);
	read_named(&ss, &syms, plain, pn);
	assert_int_equal(ss.stacks->nsamples, 2);
	assert_int_equal(ss.stacks->nsyms, 3);
	d9_sched_stacks_frame(ss.stacks, &ss.stacks->samples[0], 0, buf,
			      sizeof(buf));
	assert_string_equal(buf, "symt_gamma+0x1 (libsymt.so)");
	d9_sched_stacks_frame(ss.stacks, &ss.stacks->samples[0], 1, buf,
			      sizeof(buf));
	assert_string_equal(buf, "symt_beta+0x8 (libsymt.so)");
	d9_sched_stacks_frame(ss.stacks, &ss.stacks->samples[1], 0, buf,
			      sizeof(buf));
	assert_string_equal(buf, "symt_alpha+0x4 (libsymt.so)");
	assert_int_equal(syms.from_files, 0);
	assert_int_equal(rename(moved, lib_path), 0);
	d9_syms_free(&syms);
	d9_sched_stats_free(&ss);
	free(plain);
	free(seg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_names_each_distinct_frame),
		cmocka_unit_test(reader_prefers_the_trace_table),
		cmocka_unit_test(cap_on_distinct_frames_is_noted),
		cmocka_unit_test(worker_ships_the_table),
		cmocka_unit_test(symbols_off_ships_it_as_sealed),
		cmocka_unit_test(worker_names_samples_without_stacks),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
