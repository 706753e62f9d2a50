// SPDX-License-Identifier: MIT
/*
 * test_stacks.c - dial9.ko's STACK records as sched.stack events, the
 * process's mappings (sched.mapping, with build-ids), and reading both
 * back as object+0xoffset frames, of their time, and which processes'
 * mappings are written when, and again in each segment, kept once when
 * read together (lib/sched/ktrace.c, kmaps.c, kmaps_follow.c,
 * sched_stacks.c).  The module's walk itself is tested in the VM
 * (tests/kmod/stack_test.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/dial9.h>

#include "helpers.h"
#include "ksched/ksched.h"
#include "sched/sched_read.h"

/* A STACK record of @n addresses, as the module writes it. */
struct stack_rec {
	struct dial9_rec_stack r;
	uint64_t ips[DIAL9_STACK_MAX_DEPTH];
};

static void stack_rec(struct stack_rec *s, uint64_t ts, uint32_t tid,
		      const uint64_t *ips, uint32_t n)
{
	memset(s, 0, sizeof(*s));
	s->r.hdr.type = DIAL9_REC_STACK;
	s->r.hdr.size = (uint16_t)(sizeof(s->r) + n * sizeof(uint64_t));
	s->r.hdr.time_ns = ts;
	s->r.tid = tid;
	s->r.tgid = tid;
	s->r.nr = n;
	memcpy(s->ips, ips, n * sizeof(*ips));
}

/* The trace of one stream with @recs, mappings of @maps; to free(). */
static void *trace_of(const struct stack_rec *recs, size_t nrecs,
		      const struct d9_mapping *maps, size_t nmaps, size_t *len)
{
	struct d9_ktrace kt = { 0 };
	const void *data;
	void *copy;

	assert_int_equal(dial9_encoder_new(&kt.enc), 0);
	assert_int_equal(d9_ktrace_begin(&kt), 0);
	for (size_t i = 0; i < nmaps; i++)
		assert_int_equal(d9_ktrace_mapping(&kt, 5, &maps[i]), 0);
	for (size_t i = 0; i < nrecs; i++)
		assert_int_equal(d9_ktrace_add(&kt, &recs[i].r.hdr), 0);
	assert_int_equal(d9_ktrace_end(&kt, &data, len), 0);
	copy = malloc(*len);
	assert_non_null(copy);
	memcpy(copy, data, *len);
	dial9_encoder_free(kt.enc);
	return copy;
}

static void stack_record_is_a_sched_stack_event(void **state)
{
	static const uint64_t ips[] = { 0x7f0000001234, 0x401000, 0x400800 };
	struct dial9_decoder *d;
	struct dial9_record r;
	struct stack_rec s[2];
	size_t len;
	void *buf;
	int found = 0;

	(void)state;
	stack_rec(&s[0], 1000, 42, ips, 3);
	s[0].r.hdr.flags = DIAL9_STACK_TRUNCATED;
	s[0].r.hdr.cpu = 1;
	s[1] = s[0];
	s[1].r.hdr.flags |= DIAL9_STACK_WAKER;	/* a waker's, after its waking */
	buf = trace_of(s, 2, NULL, 0, &len);
	assert_int_equal(dial9_decoder_new(&d, buf, len), 0);
	while (dial9_decoder_next(d, &r) == 1) {
		const struct dial9_schema *sc = r.schema;
		int f;

		if (r.kind != DIAL9_RECORD_EVENT ||
		    strcmp(sc->name, "sched.stack"))
			continue;
		found++;
		assert_int_equal(r.ts_ns, 1000);
		assert_int_equal(r.values[dial9_schema_field_index(sc, "tid")].u64, 42);
		assert_int_equal(r.values[dial9_schema_field_index(sc, "pid")].u64, 42);
		assert_int_equal(r.values[dial9_schema_field_index(sc, "cpu")].u64, 1);
		assert_true(r.values[dial9_schema_field_index(sc, "truncated")].b);
		f = dial9_schema_field_index(sc, "frames");
		assert_int_equal(r.values[f].type, DIAL9_BYTES);
		assert_int_equal(r.values[f].str.len, 24);
		/* little-endian u64s, innermost first */
		assert_memory_equal(r.values[f].str.ptr, ips, 24);
		f = dial9_schema_field_index(sc, "waker");
		assert_int_equal(r.values[f].type, DIAL9_BOOL);
		assert_int_equal(r.values[f].b, found == 2);
	}
	assert_int_equal(found, 2);
	dial9_decoder_free(d);
	free(buf);
}

static void malformed_stack_record_is_refused(void **state)
{
	static const uint64_t ips[] = { 1, 2 };
	struct d9_ktrace kt = { 0 };
	struct stack_rec s;

	(void)state;
	assert_int_equal(dial9_encoder_new(&kt.enc), 0);
	assert_int_equal(d9_ktrace_begin(&kt), 0);
	stack_rec(&s, 1, 7, ips, 2);
	s.r.nr = 3;			/* more than the record holds */
	assert_int_equal(d9_ktrace_add(&kt, &s.r.hdr), -EPROTO);
	s.r.nr = DIAL9_STACK_MAX_DEPTH + 1;
	s.r.hdr.size = sizeof(s);
	assert_int_equal(d9_ktrace_add(&kt, &s.r.hdr), -EPROTO);
	s.r.hdr.size = sizeof(s.r) - 8;
	assert_int_equal(d9_ktrace_add(&kt, &s.r.hdr), -EPROTO);
	dial9_encoder_free(kt.enc);
}

struct maps_seen {
	const char *exe;
	uintptr_t fn;
	int exe_maps, fn_in;
	uint64_t fn_start, fn_end, fn_off;	/* the mapping of fn */
	uint8_t id[D9_BUILD_ID_MAX];
	uint32_t id_len;
	uint32_t vdso_id_len;		/* of the [vdso] mapping */
};

static int see_map(void *ctx, const struct d9_mapping *m)
{
	struct maps_seen *ms = ctx;

	assert_true(m->start < m->end);
	if (!strcmp(m->path, "[vdso]"))
		ms->vdso_id_len = m->build_id_len;
	if (strcmp(m->path, ms->exe))
		return 0;
	ms->exe_maps++;
	ms->id_len = m->build_id_len;
	memcpy(ms->id, m->build_id, m->build_id_len);
	if (ms->fn >= m->start && ms->fn < m->end) {
		ms->fn_in++;
		ms->fn_start = m->start;
		ms->fn_end = m->end;
		ms->fn_off = m->offset;
	}
	return 0;
}

/* The line of /proc/self/maps that holds @fn, read with sscanf(). */
static void maps_line_of(uintptr_t fn, unsigned long long *start,
			 unsigned long long *end, unsigned long long *off)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");

	assert_non_null(f);
	*start = *end = *off = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, o;

		if (sscanf(line, "%llx-%llx %*s %llx", &a, &b, &o) == 3 &&
		    fn >= a && fn < b) {
			*start = a;
			*end = b;
			*off = o;
		}
	}
	fclose(f);
}

static void own_mappings_hold_our_code_and_build_id(void **state)
{
	char exe[PATH_MAX];
	uint8_t id[D9_BUILD_ID_MAX];
	struct maps_seen ms = { .exe = exe };
	int n;

	(void)state;
	assert_non_null(realpath("/proc/self/exe", exe));
	ms.fn = (uintptr_t)own_mappings_hold_our_code_and_build_id;
	assert_int_equal(d9_maps_read(getpid(), see_map, &ms), 0);
	assert_true(ms.exe_maps >= 1);
	assert_int_equal(ms.fn_in, 1);
	{	/* the range and file offset as the kernel wrote them */
		unsigned long long a, b, o;

		maps_line_of(ms.fn, &a, &b, &o);
		assert_int_equal(ms.fn_start, a);
		assert_int_equal(ms.fn_end, b);
		assert_int_equal(ms.fn_off, o);
		assert_true(o > 0);	/* code follows the ELF headers */
	}
	n = d9_build_id(exe, id, sizeof(id));
	assert_true(n > 0);	/* Debian's gcc links with --build-id */
	assert_int_equal(ms.id_len, n);
	assert_memory_equal(ms.id, id, (size_t)n);
	/* the vDSO's, the kernel's image (ours): where there is one */
	n = d9_vdso_build_id(id, sizeof(id));
	if (getauxval(AT_SYSINFO_EHDR)) {
		assert_true(n > 0);
		assert_int_equal(ms.vdso_id_len, n);
	}
	/* not ELF, and gone */
	assert_int_equal(d9_build_id("/proc/self/status", id, sizeof(id)),
			 -ENOEXEC);
	assert_int_equal(d9_build_id("/nonexistent/d9", id, sizeof(id)),
			 -ENOENT);
	assert_int_equal(d9_maps_read(INT_MAX, see_map, &ms), -ENOENT);
}

static void frames_read_back_as_object_offsets(void **state)
{
	static const uint64_t first[] = { 0x7f0000000100, 0x400500 };
	static const uint64_t second[] = { 0x400123, 0x9999 };
	struct d9_mapping maps[2] = {
		{ .pid = 42, .start = 0x400000, .end = 0x401000, .offset = 0,
		  .path = "/usr/bin/app" },
		{ .pid = 42, .start = 0x7f0000000000, .end = 0x7f0000100000,
		  .offset = 0x2000, .path = "/lib/libc.so.6" },
	};
	const struct sched_stack *sk;
	struct sched_stats st;
	struct stack_rec s[3];
	uint64_t off;
	char f[64];
	size_t len;
	void *buf;

	(void)state;
	stack_rec(&s[0], 100, 42, first, 2);
	stack_rec(&s[1], 150, 42, second, 2);
	s[1].r.hdr.flags = DIAL9_STACK_WAKER;	/* not a switch-out: left out */
	stack_rec(&s[2], 200, 42, second, 2);
	buf = trace_of(s, 3, maps, 2, &len);
	d9_sched_stats_init(&st);
	assert_int_equal(d9_sched_stats_want_stacks(&st), 0);
	assert_int_equal(d9_sched_trace(&st, buf, len, &off), 0);
	assert_int_equal(st.stacks->n, 2);
	assert_int_equal(st.stacks->nmaps, 2);
	/* the last switch-out strictly before the time asked for */
	assert_null(d9_sched_stacks_before(st.stacks, 0, 42, 100));
	assert_null(d9_sched_stacks_before(st.stacks, 0, 43, 1000));
	sk = d9_sched_stacks_before(st.stacks, 0, 42, 190);
	assert_non_null(sk);
	assert_int_equal(sk->ts, 100);
	d9_sched_stacks_frame(st.stacks, sk, 0, f, sizeof(f));
	assert_string_equal(f, "libc.so.6+0x2100");
	d9_sched_stacks_frame(st.stacks, sk, 1, f, sizeof(f));
	assert_string_equal(f, "app+0x500");
	sk = d9_sched_stacks_before(st.stacks, 0, 42, 1000);
	assert_int_equal(sk->ts, 200);
	d9_sched_stacks_frame(st.stacks, sk, 1, f, sizeof(f));
	assert_string_equal(f, "0x9999");
	d9_sched_stats_free(&st);
	free(buf);
}

/*
 * A process that exec'd has its mappings read again, from the exec on:
 * a frame is named by the newest mapping read at or before it, else the
 * oldest (a process first seen after the frame).
 */
static void frames_read_against_mappings_of_their_time(void **state)
{
	struct sched_stacks s = { 0 };
	struct sched_frame f;

	(void)state;
	assert_int_equal(d9_sched_stacks_map(&s, 0, 7, 100, 0x1000, 0x2000, 0,
					     "/bin/old", 8, NULL, 0), 0);
	assert_int_equal(d9_sched_stacks_map(&s, 0, 7, 300, 0x1000, 0x3000,
					     0x10, "/bin/new", 8, NULL, 0), 0);
	assert_int_equal(d9_sched_stacks_map(&s, 0, 8, 50, 0x1000, 0x2000, 0,
					     "/bin/other", 10, NULL, 0), 0);
	d9_sched_stacks_resolve(&s, 0, 7, 0x1800, 200, &f);
	assert_string_equal(f.m->path, "/bin/old");
	assert_int_equal(f.off, 0x800);
	d9_sched_stacks_resolve(&s, 0, 7, 0x1800, 300, &f);
	assert_string_equal(f.m->path, "/bin/new");
	assert_int_equal(f.off, 0x810);
	d9_sched_stacks_resolve(&s, 0, 7, 0x1800, 10, &f);
	assert_string_equal(f.m->path, "/bin/old");	/* before both */
	d9_sched_stacks_resolve(&s, 0, 7, 0x2800, 200, &f);
	assert_string_equal(f.m->path, "/bin/new");	/* only the new holds it */
	d9_sched_stacks_resolve(&s, 0, 7, 0x3800, 400, &f);
	assert_null(f.m);
	d9_sched_stacks_resolve(&s, 0, 8, 0x1800, 400, &f);
	assert_string_equal(f.m->path, "/bin/other");
	d9_sched_stacks_free(&s);
}

/*
 * Many processes, their mappings interleaved, two sources with the same
 * pids: each frame is named against its own process's mappings (the
 * walk from d9_sched_stacks_last_map() holds those and no other), of
 * equal times the one read last.
 */
static void mappings_indexed_by_process(void **state)
{
	enum { NPROC = 10000 };
	struct sched_stacks s = { 0 };
	struct sched_frame f;
	char path[32];

	(void)state;
	for (int round = 0; round < 2; round++)
		for (uint32_t src = 0; src < 2; src++)
			for (uint32_t pid = 1; pid <= NPROC; pid++) {
				int n = snprintf(path, sizeof(path), "/p%u.%u.%d",
						 src, pid, round);

				assert_int_equal(d9_sched_stacks_map(&s, src, pid, 100,
						 0x1000, 0x2000, 0, path, (size_t)n,
						 NULL, 0), 0);
			}
	for (uint32_t src = 0; src < 2; src++) {
		for (uint32_t pid = 1; pid <= NPROC; pid += 97) {
			size_t walk = 0;

			for (const struct sched_mapping *m =
				     d9_sched_stacks_last_map(&s, src, pid);
			     m; m = m->prev ? &s.maps[m->prev - 1] : NULL) {
				assert_int_equal(m->src, src);
				assert_int_equal(m->pid, pid);
				walk++;
			}
			assert_int_equal(walk, 2);
			snprintf(path, sizeof(path), "/p%u.%u.1", src, pid);
			d9_sched_stacks_resolve(&s, src, pid, 0x1800, 200, &f);
			assert_non_null(f.m);
			assert_string_equal(f.m->path, path); /* read last */
			d9_sched_stacks_resolve(&s, src, pid, 0x1800, 50, &f);
			snprintf(path, sizeof(path), "/p%u.%u.0", src, pid);
			assert_string_equal(f.m->path, path); /* the oldest */
		}
	}
	assert_null(d9_sched_stacks_last_map(&s, 0, NPROC + 1));
	d9_sched_stacks_resolve(&s, 0, NPROC + 1, 0x1800, 200, &f);
	assert_null(f.m);
	d9_sched_stacks_free(&s);
}

struct emits {
	int n;
	uint64_t ts;
};

static int count_emit(void *ctx, uint64_t ts, const struct d9_mapping *m)
{
	struct emits *e = ctx;

	(void)m;
	e->n++;
	e->ts = ts;
	return 0;
}

/* SAMPLE record @s of this process at @ts, one frame at @ip. */
static int sample_at(struct d9_kmaps_follow *f, struct stack_rec *s,
		     uint64_t ts, uint64_t ip, struct emits *e)
{
	stack_rec(s, ts, (uint32_t)getpid(), &ip, 1);
	s->r.hdr.type = DIAL9_REC_SAMPLE;
	e->n = 0;
	return d9_kmaps_follow_rec(f, &s->r.hdr, count_emit, e);
}

/*
 * Whose mappings are written, and when again (kmaps_follow.c): at a
 * process's first sample, not while its frames are in them, again for a
 * frame outside them (backing off), after an exec (from its time on);
 * never for a process that is gone, and each mapping once.
 */
static void mappings_follow_the_samples(void **state)
{
	uint64_t ip = (uint64_t)(uintptr_t)&mappings_follow_the_samples;
	struct d9_kmaps_follow f = { 0 };
	struct dial9_rec_comm cm = { 0 };
	struct d9_kmaps_proc *p;
	struct stack_rec s;
	struct emits e;
	int first;

	(void)state;
	assert_int_equal(sample_at(&f, &s, 1000, ip, &e), 0);
	first = e.n;
	assert_true(first > 0);
	assert_int_equal(e.ts, 1000);
	assert_int_equal(f.n, 1);
	p = &f.procs[0];
	assert_int_equal(sample_at(&f, &s, 2000, ip, &e), 0);
	assert_int_equal(e.n, 0);
	/* outside them: read again (nothing new to write), then back off */
	assert_int_equal(sample_at(&f, &s, 3000, 0x10, &e), 0);
	assert_int_equal(e.n, 0);
	assert_true(p->backoff == 100000000ull);
	assert_int_equal(sample_at(&f, &s, 4000, 0x10, &e), 0);
	assert_true(p->backoff == 100000000ull);	/* not read */
	assert_int_equal(sample_at(&f, &s, 3000 + 100000000ull, 0x10, &e), 0);
	assert_true(p->backoff == 200000000ull);
	/* a rename is no exec */
	cm.hdr.type = DIAL9_REC_COMM;
	cm.hdr.size = sizeof(cm);
	cm.hdr.time_ns = 5000;
	cm.tid = cm.tgid = (uint32_t)getpid();
	assert_int_equal(d9_kmaps_follow_rec(&f, &cm.hdr, count_emit, &e), 0);
	assert_int_equal(p->exec_ts, 0);
	/* an exec (its text elsewhere): all again, from the exec's time */
	p->startcode ^= 1;
	cm.hdr.time_ns = 6000;
	assert_int_equal(d9_kmaps_follow_rec(&f, &cm.hdr, count_emit, &e), 0);
	assert_int_equal(p->exec_ts, 6000);
	assert_int_equal(sample_at(&f, &s, 7000, ip, &e), 0);
	assert_int_equal(e.n, first);
	assert_int_equal(e.ts, 6000);
	/* gone: once, and never again */
	stack_rec(&s, 8000, 4194000, &ip, 1);
	s.r.tgid = 4194000;
	assert_int_equal(d9_kmaps_follow_rec(&f, &s.r.hdr, count_emit, &e), 0);
	assert_int_equal(f.n, 2);
	assert_true(f.procs[1].gone);
	/* a redacted process is no one's */
	s.r.tgid = DIAL9_TID_REDACTED;
	assert_int_equal(d9_kmaps_follow_rec(&f, &s.r.hdr, count_emit, &e), 0);
	assert_int_equal(f.n, 2);
	d9_kmaps_follow_free(&f);
}

/* The mappings an emit callback got, copied. */
struct kept {
	struct d9_mapping m[512];
	char path[512][256];
	uint64_t ts[512];
	int n;
};

static int keep_emit(void *ctx, uint64_t ts, const struct d9_mapping *m)
{
	struct kept *k = ctx;

	assert_true(k->n < 512);
	k->m[k->n] = *m;
	snprintf(k->path[k->n], sizeof(k->path[0]), "%s", m->path);
	k->m[k->n].path = k->path[k->n];
	k->ts[k->n++] = ts;
	return 0;
}

static int count_pid(const struct kept *k, int pid)
{
	int n = 0;

	for (int i = 0; i < k->n; i++)
		n += k->m[i].pid == pid;
	return n;
}

/*
 * Each new segment gets the mappings held again (d9_kmaps_follow_again(),
 * at a rotation: recorder/kstream.c): the same ones, path and build-id
 * included, from memory, each at the time it was written or @floor if
 * later.  A process that exited gets them once more (its /proc gone: no
 * read), then no more.
 */
static void mappings_written_again_from_memory(void **state)
{
	uint64_t ip = (uint64_t)(uintptr_t)&mappings_written_again_from_memory;
	struct d9_kmaps_follow f = { 0 };
	static struct kept first, again;
	struct stack_rec s;
	int pipefd[2], n;
	pid_t child;
	char c;

	(void)state;
	memset(&first, 0, sizeof(first));
	stack_rec(&s, 1000, (uint32_t)getpid(), &ip, 1);
	assert_int_equal(d9_kmaps_follow_rec(&f, &s.r.hdr, keep_emit, &first), 0);
	n = first.n;
	assert_true(n > 0);
	/* a child, its own copy of our mappings, followed then killed */
	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1);	/* until the parent kills it */
		_exit(0);
	}
	close(pipefd[0]);
	stack_rec(&s, 2000, (uint32_t)child, &ip, 1);
	assert_int_equal(d9_kmaps_follow_rec(&f, &s.r.hdr, keep_emit, &first), 0);
	assert_true(count_pid(&first, child) > 0);

	/* again, at a floor between the two reads */
	memset(&again, 0, sizeof(again));
	assert_int_equal(d9_kmaps_follow_again(&f, 1500, keep_emit, &again), 0);
	assert_int_equal(again.n, first.n);
	for (int i = 0; i < first.n; i++) {
		int j;

		for (j = 0; j < again.n; j++)
			if (again.m[j].pid == first.m[i].pid &&
			    again.m[j].start == first.m[i].start)
				break;
		assert_true(j < again.n);
		assert_int_equal(again.m[j].end, first.m[i].end);
		assert_int_equal(again.m[j].offset, first.m[i].offset);
		assert_string_equal(again.m[j].path, first.m[i].path);
		assert_int_equal(again.m[j].build_id_len, first.m[i].build_id_len);
		assert_memory_equal(again.m[j].build_id, first.m[i].build_id,
				    first.m[i].build_id_len);
		/* ours raised to the floor, the child's as they were */
		assert_int_equal(again.ts[j], first.m[i].pid == getpid() ?
				 1500 : 2000);
	}

	/* the child gone: its mappings once more, from memory, then not */
	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	close(pipefd[1]);
	memset(&again, 0, sizeof(again));
	assert_int_equal(d9_kmaps_follow_again(&f, 3000, keep_emit, &again), 0);
	assert_int_equal(again.n, first.n);
	assert_int_equal(again.ts[0], 3000);
	memset(&again, 0, sizeof(again));
	assert_int_equal(d9_kmaps_follow_again(&f, 4000, keep_emit, &again), 0);
	assert_int_equal(again.n, n);
	assert_int_equal(count_pid(&again, child), 0);
	d9_kmaps_follow_free(&f);
}

/* How many mappings the walk of process @pid holds. */
static size_t maps_of(const struct sched_stacks *s, uint32_t pid)
{
	size_t n = 0;

	for (const struct sched_mapping *m = d9_sched_stacks_last_map(s, 0, pid);
	     m; m = m->prev ? &s->maps[m->prev - 1] : NULL)
		n++;
	return n;
}

/*
 * Segments read together each carry the process's mappings: a copy that
 * names no frame otherwise than those read is not kept (the walk stays
 * as long as in one segment); one that does (the process mapped
 * something else there since) is.
 */
static void same_mapping_again_kept_once(void **state)
{
	struct sched_stacks s = { 0 };
	struct sched_frame f;

	(void)state;
	assert_int_equal(d9_sched_stacks_map(&s, 0, 7, 100, 0x1000, 0x2000, 0,
					     "/bin/a", 6, "ab", 2), 0);
	assert_int_equal(d9_sched_stacks_map(&s, 0, 7, 100, 0x5000, 0x6000, 0,
					     "/lib/c", 6, NULL, 0), 0);
	for (uint64_t ts = 200; ts <= 400; ts += 100) {
		assert_int_equal(d9_sched_stacks_map(&s, 0, 7, ts, 0x1000,
						     0x2000, 0, "/bin/a", 6,
						     "ab", 2), 0);
		assert_int_equal(d9_sched_stacks_map(&s, 0, 7, ts, 0x5000,
						     0x6000, 0, "/lib/c", 6,
						     NULL, 0), 0);
	}
	assert_int_equal(maps_of(&s, 7), 2);
	/* not the same: another build-id, offset, path or range */
	assert_int_equal(d9_sched_stacks_map(&s, 0, 7, 500, 0x1000, 0x2000, 0,
					     "/bin/a", 6, "ac", 2), 0);
	assert_int_equal(maps_of(&s, 7), 3);
	/* the first again: the newest there is another, so it is kept */
	assert_int_equal(d9_sched_stacks_map(&s, 0, 7, 600, 0x1000, 0x2000, 0,
					     "/bin/a", 6, "ab", 2), 0);
	assert_int_equal(maps_of(&s, 7), 4);
	d9_sched_stacks_resolve(&s, 0, 7, 0x1800, 550, &f);
	assert_int_equal(f.m->build_id[1], 'c');
	d9_sched_stacks_resolve(&s, 0, 7, 0x1800, 700, &f);
	assert_int_equal(f.m->build_id[1], 'b');
	d9_sched_stacks_resolve(&s, 0, 7, 0x1800, 150, &f);
	assert_int_equal(f.m->build_id[1], 'b');
	/* another process's are its own */
	assert_int_equal(d9_sched_stacks_map(&s, 0, 8, 100, 0x1000, 0x2000, 0,
					     "/bin/a", 6, "ab", 2), 0);
	assert_int_equal(maps_of(&s, 8), 1);
	d9_sched_stacks_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stack_record_is_a_sched_stack_event),
		cmocka_unit_test(malformed_stack_record_is_refused),
		cmocka_unit_test(own_mappings_hold_our_code_and_build_id),
		cmocka_unit_test(frames_read_back_as_object_offsets),
		cmocka_unit_test(frames_read_against_mappings_of_their_time),
		cmocka_unit_test(mappings_indexed_by_process),
		cmocka_unit_test(mappings_follow_the_samples),
		cmocka_unit_test(mappings_written_again_from_memory),
		cmocka_unit_test(same_mapping_again_kept_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
