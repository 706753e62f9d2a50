// SPDX-License-Identifier: MIT
/*
 * symtab.c - a sealed segment's symbol table (symtab.h), on the worker
 * thread, off the application's and the recorder's paths.
 *
 * One pass over the segment collects its mappings (kept for later
 * segments: a process's are written once, at the start) and its
 * distinct frames (pid, address) in a hash set of at most max_frames;
 * frames of processes with no mapping seen get their mappings from
 * /proc/PID/maps here, once.  Each frame is then named as `dial9 sched
 * --explain` names it (symbols.c: the file, its debug file, the vDSO, a
 * perf JIT map), and the table is one stream: sched.symbol per named
 * frame, sched.symbol_note per object with frames it could not name and
 * for the frames past the cap.  The objects' symbols are freed after
 * each segment: memory is the objects one segment touches, for as long
 * as its table takes.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dial9.h"
#include "common/grow.h"
#include "ksched/ksched.h"
#include "sched/sched_read.h"
#include "sched/sched_stacks.h"
#include "symbols/symbols.h"
#include "symbols/symtab.h"

struct d9_symtab {
	struct sched_stacks maps;	/* of every segment so far (src 0) */
	uint32_t max_frames;
	uint32_t *tried;		/* pids whose live maps were read */
	size_t ntried, tried_cap;
};

struct frame {
	uint32_t pid;
	bool used;
	uint64_t ip;
};

/* One segment's frames: a hash set of at most max entries. */
struct frames {
	struct frame *v;
	size_t cap, n, max;
	uint64_t capped;		/* occurrences of frames left out */
	uint64_t last_ts;		/* of the last stack */
};

int d9_symtab_new(struct d9_symtab **out, uint32_t max_frames)
{
	struct d9_symtab *t = calloc(1, sizeof(*t));

	*out = t;
	if (!t)
		return -ENOMEM;
	t->max_frames = max_frames ? max_frames : D9_SYMTAB_MAX_FRAMES_DEFAULT;
	return 0;
}

void d9_symtab_free(struct d9_symtab *t)
{
	if (!t)
		return;
	d9_sched_stacks_free(&t->maps);
	free(t->tried);
	free(t);
}

static uint64_t hash(uint32_t pid, uint64_t ip)
{
	uint64_t h = (ip ^ ((uint64_t)pid << 40)) * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 29);
}

static void frame_add(struct frames *fs, uint32_t pid, uint64_t ip)
{
	size_t mask = fs->cap - 1;

	for (size_t i = hash(pid, ip) & mask;; i = (i + 1) & mask) {
		struct frame *e = &fs->v[i];

		if (e->used && e->pid == pid && e->ip == ip)
			return;
		if (e->used)
			continue;
		if (fs->n >= fs->max) {
			fs->capped++;
			return;
		}
		*e = (struct frame){ .pid = pid, .used = true, .ip = ip };
		fs->n++;
		return;
	}
}

static bool same_mapping(const struct sched_mapping *m, uint32_t pid,
			 uint64_t start, uint64_t end, uint64_t off,
			 const char *path, size_t pathlen)
{
	return m->pid == pid && m->start == start && m->end == end &&
	       m->offset == off && strlen(m->path) == pathlen &&
	       !memcmp(m->path, path, pathlen);
}

static int add_mapping(struct d9_symtab *t, uint32_t pid, uint64_t start,
		       uint64_t end, uint64_t off, const char *path,
		       size_t pathlen, const void *id, size_t idlen)
{
	for (const struct sched_mapping *m = d9_sched_stacks_last_map(&t->maps, 0, pid);
	     m; m = m->prev ? &t->maps.maps[m->prev - 1] : NULL)
		if (same_mapping(m, pid, start, end, off, path, pathlen))
			return 0;
	/* all at time 0, looked up after it: the one read last wins */
	return d9_sched_stacks_map(&t->maps, 0, pid, 0, start, end, off, path,
				   pathlen, id, idlen);
}

/* A sched.stack, sched.sample or sched.mapping event into @fs or t->maps. */
static int take(struct d9_symtab *t, struct frames *fs,
		const struct sched_fields *f, const struct dial9_record *r)
{
	uint32_t pid = (uint32_t)d9_sched_fu64(r, f->pid);

	if ((f->kind == SK_STACK || f->kind == SK_SAMPLE) && f->frames >= 0 &&
	    r->values[f->frames].type == DIAL9_BYTES) {
		const unsigned char *p = r->values[f->frames].str.ptr;
		size_t n = r->values[f->frames].str.len / sizeof(uint64_t);

		for (size_t i = 0; i < n; i++) {
			uint64_t ip;

			memcpy(&ip, p + i * sizeof(ip), sizeof(ip));
			frame_add(fs, pid, le64toh(ip));
		}
		if (r->ts_ns > fs->last_ts)
			fs->last_ts = r->ts_ns;
		return 0;
	}
	if (f->kind == SK_MAPPING && f->path >= 0 &&
	    r->values[f->path].type == DIAL9_STR) {
		bool id = f->build_id >= 0 &&
			  r->values[f->build_id].type == DIAL9_BYTES;

		return add_mapping(t, pid, d9_sched_fu64(r, f->start),
				   d9_sched_fu64(r, f->end),
				   d9_sched_fu64(r, f->offset),
				   r->values[f->path].str.ptr,
				   r->values[f->path].str.len,
				   id ? r->values[f->build_id].str.ptr : NULL,
				   id ? r->values[f->build_id].str.len : 0);
	}
	return 0;
}

/* The segment's stacks, samples and mappings; 0, -ENOMEM or the
 * decoder's error. */
static int scan(struct d9_symtab *t, struct frames *fs, const void *seg,
		size_t len)
{
	struct sched_fields cache[8];
	struct dial9_decoder *dec;
	struct dial9_record rec;
	unsigned int ncache = 0;
	int ret;

	ret = dial9_decoder_new(&dec, seg, len);
	if (ret)
		return ret;
	while ((ret = dial9_decoder_next(dec, &rec)) > 0) {
		struct sched_fields *f = NULL;

		if (rec.kind == DIAL9_RECORD_STREAM)
			ncache = 0;	/* schemas are per stream */
		if (rec.kind != DIAL9_RECORD_EVENT ||
		    (strcmp(rec.schema->name, "sched.stack") &&
		     strcmp(rec.schema->name, "sched.sample") &&
		     strcmp(rec.schema->name, "sched.mapping")))
			continue;
		for (unsigned int i = 0; i < ncache; i++)
			if (cache[i].schema == rec.schema)
				f = &cache[i];
		if (!f) {
			f = &cache[ncache < 8 ? ncache++ : 7];
			d9_sched_fields_lookup(f, rec.schema);
		}
		ret = take(t, fs, f, &rec);
		if (ret)
			break;
	}
	dial9_decoder_free(dec);
	return ret < 0 ? ret : 0;
}

static bool has_mappings(const struct d9_symtab *t, uint32_t pid)
{
	return d9_sched_stacks_last_map(&t->maps, 0, pid) != NULL;
}

static int put_live(void *ctx, const struct d9_mapping *m)
{
	struct d9_symtab *t = ctx;

	return add_mapping(t, (uint32_t)m->pid, m->start, m->end, m->offset,
			   m->path, strlen(m->path), m->build_id,
			   m->build_id_len);
}

/*
 * Mappings of @pid from /proc, if no segment had any (its first segment
 * was not seen: trigger mode, or evicted), once per process.
 */
static int live_mappings(struct d9_symtab *t, uint32_t pid)
{
	int ret;

	if (has_mappings(t, pid))
		return 0;
	for (size_t i = 0; i < t->ntried; i++)
		if (t->tried[i] == pid)
			return 0;
	if (d9_grow((void **)&t->tried, &t->tried_cap, t->ntried + 1,
		    sizeof(*t->tried)))
		return -ENOMEM;
	t->tried[t->ntried++] = pid;
	ret = d9_maps_read((int)pid, put_live, t);
	return ret == -ENOMEM ? ret : 0;
}

enum { T_SYMBOL = 1, T_NOTE };

static const struct dial9_field f_symbol[] = {
	{ "pid", DIAL9_U64 }, { "address", DIAL9_U64 }, { "name", DIAL9_STR },
	{ "within", DIAL9_U64 }, { "object", DIAL9_ISTR },
};
static const struct dial9_field f_note[] = {
	{ "pid", DIAL9_U64 }, { "object", DIAL9_ISTR }, { "frames", DIAL9_U64 },
	{ "why", DIAL9_STR },
};

static struct dial9_value str_value(const char *s)
{
	struct dial9_value v = { .type = DIAL9_STR };

	v.str.ptr = s;
	v.str.len = strlen(s);
	return v;
}

struct emit_ctx {
	struct dial9_encoder *enc;
	uint64_t ts;
};

static int emit_note(void *ctx, uint32_t pid, const char *obj,
		     uint64_t frames, const char *why)
{
	struct emit_ctx *e = ctx;
	struct dial9_value v[4] = {
		dial9_u64(pid), str_value(obj), dial9_u64(frames),
		str_value(why),
	};

	return dial9_encoder_event(e->enc, T_NOTE, e->ts, v);
}

static int by_pid_ip(const void *pa, const void *pb)
{
	const struct frame *a = pa, *b = pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

/* Name the frames of @fs (sorted, packed) into the stream of @e. */
static int name_frames(struct d9_symtab *t, struct frames *fs,
		       struct emit_ctx *e, struct d9_symtab_result *res)
{
	struct d9_syms syms;
	int ret = 0;

	d9_syms_init(&syms);
	for (size_t i = 0; i < fs->n && !ret; i++) {
		const char *name, *obj;
		struct sched_frame f;
		uint64_t within;

		d9_sched_stacks_resolve(&t->maps, 0, fs->v[i].pid, fs->v[i].ip,
					UINT64_MAX, &f);
		obj = f.m ? f.m->path : "";
		ret = d9_syms_lookup(&syms, &f, &name, &within, &obj);
		if (ret == -ENOENT) {
			res->unnamed++;
			ret = 0;
			continue;
		}
		if (!ret) {
			struct dial9_value v[5] = {
				dial9_u64(f.pid), dial9_u64(f.ip),
				str_value(name), dial9_u64(within),
				str_value(obj ? obj : ""),
			};

			ret = dial9_encoder_event(e->enc, T_SYMBOL, e->ts, v);
			res->named++;
		}
	}
	if (!ret)
		ret = d9_syms_each_miss(&syms, emit_note, e);
	d9_syms_free(&syms);
	return ret;
}

int d9_symtab_build(struct d9_symtab *t, const void *seg, size_t len,
		    void **out, size_t *outlen, struct d9_symtab_result *res)
{
	struct frames fs = { .max = t->max_frames };
	struct emit_ctx e = { 0 };
	const void *data;
	size_t n = 0;
	int ret;

	*out = NULL;
	*outlen = 0;
	memset(res, 0, sizeof(*res));
	for (fs.cap = 16; fs.cap < 2 * (size_t)fs.max; fs.cap *= 2)
		;
	fs.v = calloc(fs.cap, sizeof(*fs.v));
	if (!fs.v)
		return -ENOMEM;
	ret = scan(t, &fs, seg, len);
	if (ret || (!fs.n && !fs.capped))
		goto out;
	/* packed and in order: the table comes out the same each time */
	for (size_t i = 0; i < fs.cap; i++)
		if (fs.v[i].used)
			fs.v[n++] = fs.v[i];
	d9_sort(fs.v, n, sizeof(*fs.v), by_pid_ip);
	for (size_t i = 0; i < n && !ret; i++)
		if (!i || fs.v[i].pid != fs.v[i - 1].pid)
			ret = live_mappings(t, fs.v[i].pid);
	res->frames = n;
	res->capped = fs.capped;
	e.ts = fs.last_ts;
	if (!ret)
		ret = dial9_encoder_new(&e.enc);
	if (ret)
		goto out;
	ret = dial9_encoder_begin_stream(e.enc);
	if (!ret)
		ret = dial9_encoder_schema(e.enc, T_SYMBOL, DIAL9_KIND_INSTANT,
					   "sched.symbol", 5, f_symbol);
	if (!ret)
		ret = dial9_encoder_schema(e.enc, T_NOTE, DIAL9_KIND_INSTANT,
					   "sched.symbol_note", 4, f_note);
	if (!ret)
		ret = name_frames(t, &fs, &e, res);
	if (!ret && fs.capped) {
		char why[160];

		snprintf(why, sizeof(why), "not looked up: past "
			 "DIAL9_SYMBOLS_MAX_FRAMES, %u distinct frames per "
			 "segment", t->max_frames);
		ret = emit_note(&e, 0, "", fs.capped, why);
	}
	if (!ret)
		ret = dial9_encoder_end_stream(e.enc);
	if (!ret) {
		data = dial9_encoder_data(e.enc, outlen);
		*out = malloc(*outlen);
		if (*out)
			memcpy(*out, data, *outlen);
		else
			ret = -ENOMEM;
	}
out:
	if (ret)
		*outlen = 0;
	dial9_encoder_free(e.enc);
	free(fs.v);
	return ret;
}
