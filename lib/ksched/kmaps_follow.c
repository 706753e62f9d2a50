// SPDX-License-Identifier: MIT
/*
 * kmaps_follow.c - which processes' mappings (sched.mapping) the trace
 * still needs, as the kernel's records go by.  A process's mappings are
 * read (again) from /proc/PID/maps when one of its stacks or samples
 * comes and
 *   - none were written for it yet: a child followed with --children, a
 *     process that started after the recording;
 *   - it exec'd since: the command of `dial9 record -- CMD` runs from a
 *     fork of dial9 itself until its exec, and any recorded process may
 *     exec.  Mappings read after an exec stand for the frames from the
 *     exec's time on (d9_sched_stacks_resolve());
 *   - its instruction (the first frame: the interrupted one, or where
 *     it entered the kernel) lies outside every mapping written for it:
 *     what the dynamic loader mapped after an early read, a dlopen.  Not
 *     the other frames: a frame-pointer chain through code built without
 *     frame pointers (glibc) yields addresses that are in no mapping, and
 *     would have the maps read at every stack.  Instructions that stay
 *     outside (JIT code, anonymous memory) would too: such reads back
 *     off, 100 ms after the first, doubling to 10 s.  A read costs about
 *     a millisecond (the maps parsed, each file's build-id read).
 * A mapping already written for the process is not written again: it is
 * kept, its file (path and build-id) once for all, so that each new
 * segment gets the mappings it needs from memory, without a read
 * (d9_kmaps_follow_again(), at a rotation: recorder/kstream.c).
 *
 * An exec is told from a rename by the process's executable and where
 * its text starts (/proc/PID/stat's startcode, randomized for each exec
 * of a PIE): a COMM record (which an exec writes, as does prctl) of a
 * process whose pair changed.  Two system calls per COMM record.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/dial9.h>

#include "ksched/ksched.h"
#include "common/grow.h"

#define BACKOFF_MIN_NS	100000000ull		/* 100 ms */
#define BACKOFF_MAX_NS	10000000000ull		/* 10 s */

/* @pid's executable and text start, or false if it is gone. */
static bool identity(int pid, uint64_t *dev, uint64_t *ino,
		     uint64_t *startcode)
{
	char path[64], buf[1024];
	struct stat sb;
	const char *at;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &sb))
		return false;
	*dev = (uint64_t)sb.st_dev;
	*ino = (uint64_t)sb.st_ino;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* after the name, which may hold anything: field 3 on; 26 is it */
	at = strrchr(buf, ')');
	*startcode = 0;
	for (int field = 2; at && field < 26; field++)
		at = strchr(at + 1, ' ');
	if (at)
		*startcode = strtoull(at + 1, NULL, 10);
	return true;
}

static int pid_before(const void *elem, const void *key)
{
	return ((const struct d9_kmaps_proc *)elem)->pid < *(const int *)key;
}

/* The index of @pid in f->procs (sorted by pid), or where it would go. */
static size_t slot(const struct d9_kmaps_follow *f, int pid)
{
	return d9_partition(f->procs, f->n, sizeof(*f->procs), pid_before,
			    &pid);
}

static struct d9_kmaps_proc *find(struct d9_kmaps_follow *f, int pid)
{
	size_t i = slot(f, pid);

	return i < f->n && f->procs[i].pid == pid ? &f->procs[i] : NULL;
}

static struct d9_kmaps_proc *get(struct d9_kmaps_follow *f, int pid)
{
	struct d9_kmaps_proc *p = find(f, pid);
	size_t i;

	if (p)
		return p;
	i = slot(f, pid);
	if (d9_grow((void **)&f->procs, &f->cap, f->n + 1, sizeof(*f->procs)))
		return NULL;
	memmove(&f->procs[i + 1], &f->procs[i], (f->n - i) * sizeof(*f->procs));
	f->n++;
	p = &f->procs[i];
	*p = (struct d9_kmaps_proc){ .pid = pid };
	return p;
}

/* A new address space (an exec): nothing of it was written. */
static void forget_maps(struct d9_kmaps_proc *p)
{
	free(p->maps);
	p->maps = NULL;
	p->nmaps = p->maps_cap = 0;
	p->next_read = 0;
	p->backoff = 0;
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static int starts_at_or_before(const void *elem, const void *key)
{
	return ((const struct d9_kmaps_range *)elem)->start <=
	       *(const uint64_t *)key;
}

/* The first of p->maps (sorted by start) that starts after @a. */
static size_t range_slot(const struct d9_kmaps_proc *p, uint64_t a)
{
	return d9_partition(p->maps, p->nmaps, sizeof(*p->maps),
			    starts_at_or_before, &a);
}

struct read_ctx {
	struct d9_kmaps_follow *f;
	struct d9_kmaps_proc *p;
	int (*emit)(void *ctx, uint64_t ts, const struct d9_mapping *m);
	void *ctx;
	uint64_t ts;
	int err;
};

static bool same_obj(const struct d9_kmaps_obj *o, uint64_t h,
		     const struct d9_mapping *m)
{
	return o->hash == h && o->build_id_len == m->build_id_len &&
	       !memcmp(o->build_id, m->build_id, m->build_id_len) &&
	       !strcmp(o->path, m->path);
}

/*
 * The index in f->objs of @m's file (path and build-id), added if new;
 * -ENOMEM.  Kept once for all processes and ranges: a library's
 * mappings come in a row, and most processes map the same few files.
 */
static int64_t obj_of(struct d9_kmaps_follow *f, const struct d9_mapping *m)
{
	uint64_t h = path_hash(m->path);
	struct d9_kmaps_obj *o;
	char *path;

	if (f->last_obj < f->nobjs && same_obj(&f->objs[f->last_obj], h, m))
		return f->last_obj;
	for (size_t i = 0; i < f->nobjs; i++)
		if (same_obj(&f->objs[i], h, m)) {
			f->last_obj = (uint32_t)i;
			return (int64_t)i;
		}
	if (f->nobjs >= UINT32_MAX ||
	    d9_grow((void **)&f->objs, &f->objs_cap, f->nobjs + 1,
		    sizeof(*f->objs)))
		return -ENOMEM;
	path = strdup(m->path);
	if (!path)
		return -ENOMEM;
	o = &f->objs[f->nobjs];
	*o = (struct d9_kmaps_obj){ .hash = h, .path = path,
				    .build_id_len = m->build_id_len };
	memcpy(o->build_id, m->build_id, m->build_id_len);
	f->last_obj = (uint32_t)f->nobjs;
	return (int64_t)f->nobjs++;
}

/*
 * One mapping read: written unless it was, kept for the coverage test
 * and, with its file and time, to be written again (d9_kmaps_follow_again()).
 */
static int take(void *arg, const struct d9_mapping *m)
{
	struct read_ctx *rc = arg;
	struct d9_kmaps_proc *p = rc->p;
	int64_t obj = obj_of(rc->f, m);
	struct d9_kmaps_range *r;

	if (obj < 0) {
		rc->err = (int)obj;
		return rc->err;
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		r = &p->maps[i];
		if (r->start == m->start && r->end == m->end &&
		    r->offset == m->offset && r->obj == (uint32_t)obj)
			return 0;
	}
	if (d9_grow((void **)&p->maps, &p->maps_cap, p->nmaps + 1,
		    sizeof(*p->maps))) {
		rc->err = -ENOMEM;
		return rc->err;
	}
	r = &p->maps[range_slot(p, m->start)];	/* sorted by start */
	memmove(r + 1, r, (size_t)(p->maps + p->nmaps - r) * sizeof(*r));
	p->nmaps++;
	*r = (struct d9_kmaps_range){ .start = m->start, .end = m->end,
				      .offset = m->offset, .ts = rc->ts,
				      .obj = (uint32_t)obj };
	return rc->emit(rc->ctx, rc->ts, m);
}

int d9_kmaps_follow_read(struct d9_kmaps_follow *f, int pid, uint64_t ts,
			 int (*emit)(void *ctx, uint64_t ts,
				     const struct d9_mapping *m),
			 void *ctx)
{
	struct d9_kmaps_proc *p = get(f, pid);
	struct read_ctx rc = { .f = f, .p = p, .emit = emit, .ctx = ctx,
			       .ts = ts };
	int ret;

	if (!p)
		return -ENOMEM;
	if (!p->known) {
		p->known = true;
		p->gone = !identity(pid, &p->dev, &p->ino, &p->startcode);
	}
	p->exec_ts = 0;
	ret = p->gone ? -ESRCH : d9_maps_read(pid, take, &rc);
	if (ret == -ENOENT || ret == -ESRCH) {
		p->gone = true;
		return 0;
	}
	if (!ret)
		p->dead = false;	/* read: alive (again, if a pid reused) */
	return rc.err ? rc.err : ret;
}

/* @p's ranges written at @ts (raised to @floor) to @emit again. */
static int again_at(const struct d9_kmaps_follow *f,
		    const struct d9_kmaps_proc *p, uint64_t ts, uint64_t floor,
		    int (*emit)(void *ctx, uint64_t ts,
				const struct d9_mapping *m),
		    void *ctx)
{
	for (size_t j = 0; j < p->nmaps; j++) {
		const struct d9_kmaps_range *r = &p->maps[j];
		const struct d9_kmaps_obj *o = &f->objs[r->obj];
		struct d9_mapping m = { .pid = p->pid, .start = r->start,
					.end = r->end, .offset = r->offset,
					.path = o->path,
					.build_id_len = o->build_id_len };
		int ret;

		if (r->ts != ts)
			continue;
		memcpy(m.build_id, o->build_id, o->build_id_len);
		ret = emit(ctx, ts > floor ? ts : floor, &m);
		if (ret)
			return ret;
	}
	return 0;
}

int d9_kmaps_follow_again(struct d9_kmaps_follow *f, uint64_t floor,
			  int (*emit)(void *ctx, uint64_t ts,
				      const struct d9_mapping *m),
			  void *ctx)
{
	for (size_t i = 0; i < f->n; i++) {
		struct d9_kmaps_proc *p = &f->procs[i];
		uint64_t prev = 0;
		bool any = false;

		if (!p->nmaps || p->dead)
			continue;
		/* one system call, no /proc read: an exited process's last
		 * records may still come, in this segment, not in the next */
		if (kill(p->pid, 0) && errno == ESRCH)
			p->dead = true;
		/*
		 * In the order they were read (one read's share a time, a
		 * few reads a process): raised to @floor, times may tie, and
		 * of equal times a reader takes the one written last, so a
		 * range mapped over an older one (a dlopen where a dlclose'd
		 * library was) still wins.
		 */
		for (;;) {
			uint64_t ts = 0;
			bool found = false;
			int ret;

			for (size_t j = 0; j < p->nmaps; j++)
				if ((!any || p->maps[j].ts > prev) &&
				    (!found || p->maps[j].ts < ts)) {
					ts = p->maps[j].ts;
					found = true;
				}
			if (!found)
				break;
			ret = again_at(f, p, ts, floor, emit, ctx);
			if (ret)
				return ret;
			prev = ts;
			any = true;
		}
	}
	return 0;
}

/* Whether the instruction of @st lies in a mapping written for @p. */
static bool covered(const struct d9_kmaps_proc *p,
		    const struct dial9_rec_stack *st)
{
	/* the last mapping that starts at or below it; one that was
	 * unmapped since may hide another: then a read too many */
	size_t j;

	if (!st->nr)
		return true;
	j = range_slot(p, st->ips[0]);
	return j && st->ips[0] < p->maps[j - 1].end;
}

int d9_kmaps_follow_rec(struct d9_kmaps_follow *f,
			const struct dial9_rec_header *rec,
			int (*emit)(void *ctx, uint64_t ts,
				    const struct d9_mapping *m),
			void *ctx)
{
	const struct dial9_rec_stack *st = (const void *)rec;
	const struct dial9_rec_comm *cm = (const void *)rec;
	uint64_t dev, ino, startcode, ts = rec->time_ns;
	struct d9_kmaps_proc *p;

	switch (rec->type) {
	case DIAL9_REC_COMM:
		if (rec->size < sizeof(*cm) ||
		    (rec->flags & DIAL9_COMM_OCCUPANT))
			return 0;
		p = find(f, (int)cm->tgid);
		if (!p || p->gone || p->exec_ts ||
		    !identity(p->pid, &dev, &ino, &startcode))
			return 0;	/* gone: its last mappings stand */
		if (dev != p->dev || ino != p->ino ||
		    startcode != p->startcode) {
			forget_maps(p);
			p->dev = dev;
			p->ino = ino;
			p->startcode = startcode;
			p->exec_ts = ts ? ts : 1;
		}
		return 0;
	case DIAL9_REC_STACK:
	case DIAL9_REC_SAMPLE:
		if (rec->size < sizeof(*st) ||
		    rec->size < sizeof(*st) + (size_t)st->nr * sizeof(st->ips[0]) ||
		    !st->tgid || st->tgid == DIAL9_TID_REDACTED)
			return 0;
		p = find(f, (int)st->tgid);
		if (p && (p->gone || (!p->exec_ts && covered(p, st))))
			return 0;
		if (p && !p->exec_ts) {
			/* outside what was written: read again, backing off */
			if (ts < p->next_read)
				return 0;
			p->backoff = !p->backoff ? BACKOFF_MIN_NS :
				     p->backoff * 2 > BACKOFF_MAX_NS ?
				     BACKOFF_MAX_NS : p->backoff * 2;
			p->next_read = ts + p->backoff;
		}
		if (p && p->exec_ts)
			ts = p->exec_ts;
		return d9_kmaps_follow_read(f, (int)st->tgid, ts, emit, ctx);
	default:
		return 0;
	}
}

void d9_kmaps_follow_free(struct d9_kmaps_follow *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->procs[i].maps);
	free(f->procs);
	for (size_t i = 0; i < f->nobjs; i++)
		free(f->objs[i].path);
	free(f->objs);
	*f = (struct d9_kmaps_follow){ 0 };
}
