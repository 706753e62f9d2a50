// SPDX-License-Identifier: MIT
/*
 * kchunk.c - kernel chunks decoded (kchunk.h, docs/format.md "Kernel
 * chunks").  The layout frame names each record type's fields and where
 * they lie; the records are read through it, byte by byte (no struct of
 * <linux/dial9.h> is trusted: a chunk may come from another host), and
 * every read is checked against the record's own size, so a hostile
 * chunk gives an error or absent fields, never a read out of bounds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/dial9.h>

#include "format/kchunk.h"
#include "format/kschema.h"
#include "format/wire.h"
#include "common/text.h"

enum kr {
	KR_NONE, KR_PAD, KR_LOST, KR_SWITCH, KR_WAKING, KR_WAKEUP,
	KR_WAKEUP_NEW, KR_MIGRATE, KR_EXIT, KR_COMM, KR_UNFOLLOWED,
	KR_STACK, KR_SAMPLE, KR_SCHEDSTAT, KR_N
};

#define KL_MAXF 12
#define KL_MAXFL 8
#define KL_MAXTYPES 64

static const char *const kr_names[KR_N] = {
	[KR_PAD] = "pad", [KR_LOST] = "lost", [KR_SWITCH] = "switch",
	[KR_WAKING] = "waking", [KR_WAKEUP] = "wakeup",
	[KR_WAKEUP_NEW] = "wakeup_new", [KR_MIGRATE] = "migrate",
	[KR_EXIT] = "exit", [KR_COMM] = "comm",
	[KR_UNFOLLOWED] = "unfollowed", [KR_STACK] = "stack",
	[KR_SAMPLE] = "sample", [KR_SCHEDSTAT] = "schedstat",
};

/* The fields each kind is read by, in slot order (the enums below). */
#define WAKE_F { "tid", "tgid", "waker_tid", "waker_tgid", "prio", \
		 "target_cpu" }
#define STACK_F { "tid", "tgid", "nr", "reserved", "ips" }
static const char *const kr_fields[KR_N][KL_MAXF] = {
	[KR_LOST] = { "count" },
	[KR_SWITCH] = { "prev_tid", "prev_tgid", "next_tid", "next_tgid",
			"prev_prio", "next_prio", "prev_state",
			"next_wait_ns", "prev_run_delay_ns",
			"next_run_delay_ns", "prev_pcount", "next_pcount" },
	[KR_WAKING] = WAKE_F, [KR_WAKEUP] = WAKE_F, [KR_WAKEUP_NEW] = WAKE_F,
	[KR_MIGRATE] = { "tid", "tgid", "orig_cpu", "dest_cpu" },
	[KR_EXIT] = { "tid", "tgid" },
	[KR_COMM] = { "tid", "tgid", "comm" },
	[KR_UNFOLLOWED] = { "tgid", "parent_tgid" },
	[KR_STACK] = STACK_F, [KR_SAMPLE] = STACK_F,
	[KR_SCHEDSTAT] = { "tid", "tgid", "run_ns", "delay_ns", "slices",
			   "migrations", "prio" },
};
enum { SW_PTID, SW_PTGID, SW_NTID, SW_NTGID, SW_PPRIO, SW_NPRIO, SW_STATE,
       SW_WAIT, SW_PRD, SW_NRD, SW_PPC, SW_NPC };
enum { WK_TID, WK_TGID, WK_WTID, WK_WTGID, WK_PRIO, WK_TCPU };
enum { ST_TID, ST_TGID, ST_NR, ST_MISSED, ST_IPS };

#define WAKE_FL { "from_irq", "task_target", "waker_target" }
static const char *const kr_flags[KR_N][KL_MAXFL] = {
	[KR_SWITCH] = { "preempt", "prev_runnable", "wait_valid",
			"prev_target", "next_target", "totals", "occupants" },
	[KR_WAKING] = WAKE_FL, [KR_WAKEUP] = WAKE_FL,
	[KR_WAKEUP_NEW] = WAKE_FL,
	[KR_EXIT] = { "group_dead" }, [KR_COMM] = { "occupant" },
	[KR_UNFOLLOWED] = { "exec" },
	[KR_STACK] = { "truncated", "waker" },
	[KR_SAMPLE] = { "truncated", "kernel" },
};
enum { FS_PREEMPT, FS_RUNNABLE, FS_WAIT, FS_PTARGET, FS_NTARGET, FS_TOTALS,
       FS_OCC };
enum { FW_IRQ };
enum { FX_TRUNC, FX_OTHER };	/* stack: waker; sample: kernel */

static const char *const hdr_fields[] = { "type", "size", "cpu", "flags",
					  "time_ns" };
enum { H_TYPE, H_SIZE, H_CPU, H_FLAGS, H_TIME, H_N };

struct kslot {
	uint16_t off;
	uint8_t width, flags;
	bool have;
};

struct klayout {
	uint64_t period_ns;
	struct kslot hdr[H_N];
	uint32_t hdr_len;	/* a record other than PAD holds the header */
	uint16_t num[KL_MAXTYPES];
	uint8_t kind[KL_MAXTYPES];
	unsigned int ntypes;
	struct kslot f[KR_N][KL_MAXF];
	int8_t bit[KR_N][KL_MAXFL];
};

struct kref {
	const uint8_t *p;
	size_t len;
	uint32_t layout;
	uint64_t off;		/* of its frame, for errors */
};

struct kq {
	uint32_t id;
	struct kref *refs;
	size_t n, cap, head, pos;
};

struct kout {
	struct dial9_record rec;
	struct dial9_value v[KL_MAXF];
};

struct d9_kdec {
	struct klayout *layouts;
	size_t nlayouts, caplayouts;
	long cur;		/* the stream's layout, or -1 */
	struct kq *q;
	size_t nq, capq;
	uint64_t horizon;
	bool occ_marked;
	struct dial9_schema schemas[D9_KS_N];
	struct dial9_field_info *finfo;
	struct kout out[3];
	unsigned int nout, iout;
};

static int kdec_get(struct d9_kdec **pk)
{
	struct d9_kdec *k = *pk;
	size_t nf = 0;

	if (k)
		return 0;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	for (unsigned int t = 1; t < D9_KS_N; t++)
		nf += d9_kschemas[t].n;
	k->finfo = calloc(nf, sizeof(*k->finfo));
	if (!k->finfo) {
		free(k);
		return -ENOMEM;
	}
	nf = 0;
	for (unsigned int t = 1; t < D9_KS_N; t++) {
		const struct d9_kschema *s = &d9_kschemas[t];

		for (uint32_t i = 0; i < s->n; i++) {
			k->finfo[nf + i].name = s->f[i].name;
			k->finfo[nf + i].type = s->f[i].type;
		}
		k->schemas[t] = (struct dial9_schema){
			.id = t, .kind = DIAL9_KIND_INSTANT, .name = s->name,
			.nfields = s->n, .fields = k->finfo + nf,
		};
		nf += s->n;
	}
	k->cur = -1;
	*pk = k;
	return 0;
}

void d9_kdec_free(struct d9_kdec *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nq; i++)
		free(k->q[i].refs);
	free(k->q);
	free(k->layouts);
	free(k->finfo);
	free(k);
}

/* ---- the layout frame ---- */

struct lrd {
	const uint8_t *p, *end;
};

/* (inside a frame whose length was checked: any shortfall is corrupt) */
static int l_varint(struct lrd *r, uint64_t *v)
{
	return d9_get_varint(&r->p, r->end, v) ? -EBADMSG : 0;
}

static int l_str(struct lrd *r, const uint8_t **s, size_t *n)
{
	uint64_t l;

	if (l_varint(r, &l) || l > (uint64_t)(r->end - r->p))
		return -EBADMSG;
	*s = r->p;
	*n = (size_t)l;
	r->p += l;
	return 0;
}

static int l_u8(struct lrd *r, uint8_t *v)
{
	if (r->p >= r->end)
		return -EBADMSG;
	*v = *r->p++;
	return 0;
}

static int name_index(const char *const *names, unsigned int n,
		      const uint8_t *s, size_t len)
{
	for (unsigned int i = 0; i < n; i++)
		if (names[i] && strlen(names[i]) == len &&
		    !memcmp(names[i], s, len))
			return (int)i;
	return -1;
}

/* One type's fields and flags into @l (kind @kind; KR_NONE: skipped). */
static int layout_type(struct lrd *r, struct klayout *l, int kind,
		       bool header)
{
	uint64_t nf, nfl;

	if (l_varint(r, &nf) || nf > 255)
		return -EBADMSG;
	for (uint64_t i = 0; i < nf; i++) {
		const uint8_t *s;
		size_t len;
		uint64_t off;
		uint8_t w, fl;
		struct kslot *slot = NULL;
		int j;

		if (l_str(r, &s, &len) || l_varint(r, &off) || l_u8(r, &w) ||
		    l_u8(r, &fl))
			return -EBADMSG;
		if (off > 65535 || (w != 1 && w != 2 && w != 4 && w != 8 &&
				    w != 16))
			return -EBADMSG;
		if (header) {
			j = name_index(hdr_fields, H_N, s, len);
			slot = j >= 0 ? &l->hdr[j] : NULL;
		} else if (kind != KR_NONE) {
			j = name_index(kr_fields[kind], KL_MAXF, s, len);
			slot = j >= 0 ? &l->f[kind][j] : NULL;
		}
		if (slot)
			*slot = (struct kslot){ (uint16_t)off, w, fl, true };
	}
	if (l_varint(r, &nfl) || nfl > 64)
		return -EBADMSG;
	for (uint64_t i = 0; i < nfl; i++) {
		const uint8_t *s;
		size_t len;
		uint8_t bit;
		int j;

		if (l_str(r, &s, &len) || l_u8(r, &bit) || bit > 15)
			return -EBADMSG;
		if (kind == KR_NONE || header)
			continue;
		j = name_index(kr_flags[kind], KL_MAXFL, s, len);
		if (j >= 0)
			l->bit[kind][j] = (int8_t)bit;
	}
	return 0;
}

int d9_kdec_layout(struct d9_kdec **pk, const uint8_t *p, size_t n)
{
	struct lrd r = { p, p + n };
	struct klayout l;
	const uint8_t *s;
	size_t len;
	uint64_t abi, nt;
	int ret = kdec_get(pk);
	struct d9_kdec *k = *pk;

	if (ret)
		return ret;
	memset(&l, 0, sizeof(l));
	memset(l.bit, -1, sizeof(l.bit));
	if (l_str(&r, &s, &len) || l_varint(&r, &abi) ||
	    l_varint(&r, &l.period_ns) || l_varint(&r, &nt) || nt > 1024)
		return -EBADMSG;
	for (uint64_t i = 0; i < nt; i++) {
		uint64_t num;
		int kind;

		if (l_varint(&r, &num) || num > 65535 || l_str(&r, &s, &len))
			return -EBADMSG;
		if (num == D9_KL_HEADER) {
			ret = layout_type(&r, &l, KR_NONE, true);
		} else {
			kind = name_index(kr_names, KR_N, s, len);
			if (kind > 0 && l.ntypes < KL_MAXTYPES) {
				l.num[l.ntypes] = (uint16_t)num;
				l.kind[l.ntypes++] = (uint8_t)kind;
			}
			ret = layout_type(&r, &l, kind > 0 ? kind : KR_NONE,
					  false);
		}
		if (ret)
			return ret;
	}
	/* type and size must be in the first 8 bytes: a PAD has no more */
	if (!l.hdr[H_TYPE].have || !l.hdr[H_SIZE].have ||
	    l.hdr[H_TYPE].off + l.hdr[H_TYPE].width > 8 ||
	    l.hdr[H_SIZE].off + l.hdr[H_SIZE].width > 8 ||
	    !l.hdr[H_TIME].have)
		return -EBADMSG;
	for (int i = 0; i < H_N; i++)
		if (l.hdr[i].have &&
		    l.hdr[i].off + l.hdr[i].width > l.hdr_len)
			l.hdr_len = l.hdr[i].off + l.hdr[i].width;
	/* the same as the last one (every stream has one): shared */
	if (k->nlayouts && !memcmp(&k->layouts[k->nlayouts - 1], &l,
				   sizeof(l))) {
		k->cur = (long)k->nlayouts - 1;
		return 0;
	}
	if (k->nlayouts == k->caplayouts) {
		size_t nc = k->caplayouts ? k->caplayouts * 2 : 4;
		struct klayout *nl = realloc(k->layouts, nc * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		k->layouts = nl;
		k->caplayouts = nc;
	}
	k->layouts[k->nlayouts] = l;
	k->cur = (long)k->nlayouts++;
	return 0;
}

/* ---- chunks and the merge ---- */

static struct kq *queue_of(struct d9_kdec *k, uint32_t id)
{
	for (size_t i = 0; i < k->nq; i++)
		if (k->q[i].id == id)
			return &k->q[i];
	if (k->nq == k->capq) {
		size_t nc = k->capq ? k->capq * 2 : 8;
		struct kq *nq;

		if (k->nq >= 65536)
			return NULL;
		nq = realloc(k->q, nc * sizeof(*nq));
		if (!nq)
			return NULL;
		k->q = nq;
		k->capq = nc;
	}
	k->q[k->nq] = (struct kq){ .id = id };
	return &k->q[k->nq++];
}

int d9_kdec_chunk(struct d9_kdec **pk, const uint8_t *p, size_t n,
		  uint64_t off)
{
	struct lrd r = { p, p + n };
	uint64_t id;
	struct kq *q;
	int ret = kdec_get(pk);
	struct d9_kdec *k = *pk;

	if (ret)
		return ret;
	if (k->cur < 0 || l_varint(&r, &id) || id > UINT32_MAX)
		return -EBADMSG;
	if (r.p == r.end)
		return 0;
	q = queue_of(k, (uint32_t)id);
	if (!q)
		return -ENOMEM;
	/* taken up to the head: the room before it is used again */
	if (q->head && q->head == q->n) {
		q->n = q->head = q->pos = 0;
	}
	if (q->n == q->cap) {
		size_t nc = q->cap ? q->cap * 2 : 8;
		struct kref *nr = realloc(q->refs, nc * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		q->refs = nr;
		q->cap = nc;
	}
	q->refs[q->n++] = (struct kref){ r.p, (size_t)(r.end - r.p),
					 (uint32_t)k->cur, off };
	return 0;
}

void d9_kdec_horizon(struct d9_kdec *k, uint64_t horizon)
{
	if (k && horizon > k->horizon)
		k->horizon = horizon;
}

void d9_kdec_stream(struct d9_kdec *k)
{
	if (!k)
		return;
	k->cur = -1;
	k->occ_marked = false;
}

/* Field @s of the record @p of @size bytes; 0 when it lies outside it. */
static uint64_t get(const uint8_t *p, size_t size, const struct kslot *s)
{
	uint64_t v = 0;

	if (!s->have || s->width > 8 || (size_t)s->off + s->width > size)
		return 0;
	for (int i = s->width - 1; i >= 0; i--)
		v = (v << 8) | p[s->off + i];
	if ((s->flags & D9_KL_SIGNED) && s->width < 8 &&
	    (v >> (8 * s->width - 1)) & 1)
		v |= ~0ull << (8 * s->width);
	return v;
}

static bool within(size_t size, const struct kslot *s)
{
	return s->have && (size_t)s->off + s->width <= size;
}

/*
 * The head record of @q, past PADs: its bytes and size, or NULL at the
 * end of what is queued; -EBADMSG for a record that is not whole.
 */
static int peek(struct d9_kdec *k, struct kq *q, const uint8_t **rec,
		size_t *size, const struct klayout **lp, uint64_t *err_off)
{
	while (q->head < q->n) {
		const struct kref *c = &q->refs[q->head];
		const struct klayout *l = &k->layouts[c->layout];
		size_t left = c->len - q->pos;
		const uint8_t *p = c->p + q->pos;
		uint64_t type, sz;

		if (!left) {
			q->head++;
			q->pos = 0;
			continue;
		}
		*err_off = c->off;
		if (left < 8)
			return -EBADMSG;
		type = get(p, 8, &l->hdr[H_TYPE]);
		sz = get(p, 8, &l->hdr[H_SIZE]);
		if (sz < 8 || sz % 8 || sz > left ||
		    (type != DIAL9_REC_PAD && sz < l->hdr_len))
			return -EBADMSG;
		if (type == DIAL9_REC_PAD) {
			q->pos += sz;
			continue;
		}
		*rec = p;
		*size = (size_t)sz;
		*lp = l;
		return 1;
	}
	return 0;
}

static int kind_of(const struct klayout *l, uint64_t type)
{
	for (unsigned int i = 0; i < l->ntypes; i++)
		if (l->num[i] == type)
			return l->kind[i];
	return KR_NONE;
}

static bool flag(const struct klayout *l, int kind, int which, uint64_t fl)
{
	int b = l->bit[kind][which];

	return b >= 0 && ((fl >> b) & 1);
}

/* The next event slot, of schema @t at @ts. */
static struct dial9_value *out(struct d9_kdec *k, unsigned int t, uint64_t ts,
			       uint64_t off)
{
	struct kout *o = &k->out[k->nout++];

	memset(&o->rec, 0, sizeof(o->rec));
	o->rec.kind = DIAL9_RECORD_EVENT;
	o->rec.offset = off;
	o->rec.thread_name = "";
	o->rec.ts_ns = ts;
	o->rec.schema = &k->schemas[t];
	o->rec.values = o->v;
	return o->v;
}

static inline struct dial9_value u(uint64_t x)
{
	return (struct dial9_value){ .type = DIAL9_U64, .u64 = x };
}

static inline struct dial9_value b(bool x)
{
	return (struct dial9_value){ .type = DIAL9_BOOL, .b = x };
}

/* A kernel prio as a field: never negative (0..139). */
static inline struct dial9_value prio(uint64_t p)
{
	return u((int64_t)p > 0 ? p : 0);
}

static int emit_switch(struct d9_kdec *k, const struct klayout *l,
		       const uint8_t *p, size_t n, uint64_t ts, uint64_t cpu,
		       uint64_t fl, uint64_t off)
{
	const struct kslot *f = l->f[KR_SWITCH];
	bool totals = within(n, &f[SW_NPC]) && within(n, &f[SW_PRD]) &&
		      within(n, &f[SW_NRD]) && within(n, &f[SW_PPC]) &&
		      flag(l, KR_SWITCH, FS_TOTALS, fl);
	bool pt = flag(l, KR_SWITCH, FS_PTARGET, fl);
	bool nt = flag(l, KR_SWITCH, FS_NTARGET, fl);
	uint64_t ptid = get(p, n, &f[SW_PTID]), ntid = get(p, n, &f[SW_NTID]);
	struct dial9_value *v;

	/* an older module's record ends before the totals, none before */
	if (!within(n, &f[SW_WAIT]))
		return -EBADMSG;
	if (flag(l, KR_SWITCH, FS_OCC, fl) && !k->occ_marked) {
		v = out(k, D9_KS_OCCUPANTS, ts, off);
		v[0] = u(cpu);
		k->occ_marked = true;
	}
	if (!pt && !nt) {
		v = out(k, D9_KS_CPU_SWITCH, ts, off);
		v[0] = u(cpu);
		v[1] = u(ptid);
		v[2] = u(get(p, n, &f[SW_PTGID]));
		v[3] = prio(get(p, n, &f[SW_PPRIO]));
		v[4] = u(ntid);
		v[5] = u(get(p, n, &f[SW_NTGID]));
		v[6] = prio(get(p, n, &f[SW_NPRIO]));
		return 0;
	}
	if (pt && ptid && ptid != 0xffffffffu) {
		v = out(k, D9_KS_SWITCH_OUT, ts, off);
		v[0] = u(ptid);
		v[1] = u(get(p, n, &f[SW_PTGID]));
		v[2] = u(cpu);
		v[3] = u(get(p, n, &f[SW_STATE]));
		v[4] = b(flag(l, KR_SWITCH, FS_RUNNABLE, fl));
		v[5] = u(ntid);
		v[6] = u(totals ? get(p, n, &f[SW_PRD]) : 0);
		v[7] = u(totals ? get(p, n, &f[SW_PPC]) : 0);
		v[8] = b(totals);
		v[9] = u(get(p, n, &f[SW_NTGID]));
		v[10] = prio(get(p, n, &f[SW_NPRIO]));
	}
	if (nt && ntid && ntid != 0xffffffffu) {
		v = out(k, D9_KS_SWITCH_IN, ts, off);
		v[0] = u(ntid);
		v[1] = u(get(p, n, &f[SW_NTGID]));
		v[2] = u(cpu);
		v[3] = u(get(p, n, &f[SW_WAIT]));
		v[4] = b(flag(l, KR_SWITCH, FS_WAIT, fl));
		v[5] = u(ptid);
		v[6] = u(totals ? get(p, n, &f[SW_NRD]) : 0);
		v[7] = u(totals ? get(p, n, &f[SW_NPC]) : 0);
		v[8] = b(totals);
		v[9] = u(get(p, n, &f[SW_PTGID]));
		v[10] = prio(get(p, n, &f[SW_PPRIO]));
		v[11] = prio(get(p, n, &f[SW_NPRIO]));
	}
	return 0;
}

static int emit_stack(struct d9_kdec *k, const struct klayout *l, int kind,
		      const uint8_t *p, size_t n, uint64_t ts, uint64_t cpu,
		      uint64_t fl, uint64_t off)
{
	const struct kslot *f = l->f[kind];
	uint64_t nr = get(p, n, &f[ST_NR]);
	bool sample = kind == KR_SAMPLE;
	struct dial9_value *v;

	if (!within(n, &f[ST_NR]) || !f[ST_IPS].have || f[ST_IPS].width != 8 ||
	    nr > 32 || f[ST_IPS].off + nr * 8 > n)
		return -EBADMSG;
	v = out(k, sample ? D9_KS_SAMPLE : D9_KS_STACK, ts, off);
	v[0] = u(get(p, n, &f[ST_TID]));
	v[1] = u(get(p, n, &f[ST_TGID]));
	v[2] = u(cpu);
	v[3] = b(flag(l, kind, FX_TRUNC, fl));
	/* the frames as little-endian u64s: as the chunk holds them */
	v[4].type = DIAL9_BYTES;
	v[4].str.ptr = p + f[ST_IPS].off;
	v[4].str.len = (size_t)nr * 8;
	v[5] = b(flag(l, kind, FX_OTHER, fl));
	if (sample) {
		v[6] = u(l->period_ns);
		v[7] = u(get(p, n, &f[ST_MISSED]));
	}
	return 0;
}

/* The events of one record into k->out[]. */
static int emit(struct d9_kdec *k, const struct klayout *l, const uint8_t *p,
		size_t n, uint64_t off)
{
	uint64_t type = get(p, n, &l->hdr[H_TYPE]);
	uint64_t ts = get(p, n, &l->hdr[H_TIME]);
	uint64_t cpu = get(p, n, &l->hdr[H_CPU]);
	uint64_t fl = get(p, n, &l->hdr[H_FLAGS]);
	int kind = kind_of(l, type);
	const struct kslot *f = l->f[kind];
	struct dial9_value *v;

	switch (kind) {
	case KR_SWITCH:
		return emit_switch(k, l, p, n, ts, cpu, fl, off);
	case KR_WAKING:
		v = out(k, D9_KS_WAKING, ts, off);
		v[0] = u(get(p, n, &f[WK_TID]));
		v[1] = u(get(p, n, &f[WK_TGID]));
		v[2] = u(cpu);
		v[3] = u(get(p, n, &f[WK_WTID]));
		v[4] = u(get(p, n, &f[WK_WTGID]));
		v[5] = b(flag(l, kind, FW_IRQ, fl));
		return 0;
	case KR_WAKEUP:
	case KR_WAKEUP_NEW:
		v = out(k, D9_KS_WAKEUP, ts, off);
		v[0] = u(get(p, n, &f[WK_TID]));
		v[1] = u(get(p, n, &f[WK_TGID]));
		v[2] = u(cpu);
		v[3] = u(get(p, n, &f[WK_TCPU]));
		v[4] = b(kind == KR_WAKEUP_NEW);
		return 0;
	case KR_MIGRATE:
		v = out(k, D9_KS_MIGRATE, ts, off);
		for (int i = 0; i < 4; i++)
			v[i] = u(get(p, n, &f[i]));
		v[4] = u(cpu);
		return 0;
	case KR_EXIT:
		v = out(k, D9_KS_EXIT, ts, off);
		v[0] = u(get(p, n, &f[0]));
		v[1] = u(get(p, n, &f[1]));
		v[2] = b(flag(l, kind, 0, fl));
		v[3] = u(cpu);
		return 0;
	case KR_LOST:
		v = out(k, D9_KS_LOST, ts, off);
		v[0] = u(cpu);
		v[1] = u(get(p, n, &f[0]));
		return 0;
	case KR_COMM:
		if (!within(n, &f[2]) || f[2].width != 16)
			return -EBADMSG;
		v = out(k, flag(l, kind, 0, fl) ? D9_KS_OCCUPANT_COMM :
						  D9_KS_COMM, ts, off);
		v[0] = u(get(p, n, &f[0]));
		v[1] = u(get(p, n, &f[1]));
		v[2].type = DIAL9_ISTR;
		v[2].str.ptr = p + f[2].off;
		/* the kernel cut it at 15 bytes, maybe inside a character */
		v[2].str.len = d9_utf8_cut((const char *)p + f[2].off,
					   strnlen((const char *)p + f[2].off,
						   16));
		v[3] = u(cpu);
		return 0;
	case KR_UNFOLLOWED:
		v = out(k, D9_KS_UNFOLLOWED, ts, off);
		v[0] = u(get(p, n, &f[0]));
		v[1] = u(get(p, n, &f[1]));
		v[2] = b(flag(l, kind, 0, fl));
		v[3] = u(cpu);
		return 0;
	case KR_STACK:
	case KR_SAMPLE:
		return emit_stack(k, l, kind, p, n, ts, cpu, fl, off);
	case KR_SCHEDSTAT:
		v = out(k, D9_KS_SCHEDSTAT, ts, off);
		for (int i = 0; i < 5; i++)
			v[i] = u(get(p, n, &f[i]));
		/* not in a record of an older writer: not known */
		v[5] = u(within(n, &f[5]) ? get(p, n, &f[5]) : UINT64_MAX);
		v[6] = u(within(n, &f[6]) && (int64_t)get(p, n, &f[6]) >= 0 ?
			 get(p, n, &f[6]) : UINT64_MAX);
		return 0;
	default:	/* a type this reader does not know: counted */
		v = out(k, D9_KS_UNKNOWN, ts, off);
		v[0] = u(cpu);
		v[1] = u(type);
		return 0;
	}
}

int d9_kdec_next(struct d9_kdec *k, bool end, struct dial9_record *rec,
		 uint64_t *err_off)
{
	if (!k)
		return 0;
	while (k->iout == k->nout) {
		const struct klayout *l = NULL, *best_l = NULL;
		const uint8_t *p, *best = NULL;
		size_t n, best_n = 0;
		struct kq *bq = NULL;
		uint64_t best_ts = 0;
		int ret;

		k->iout = k->nout = 0;
		for (size_t i = 0; i < k->nq; i++) {
			struct kq *q = &k->q[i];
			uint64_t ts;

			ret = peek(k, q, &p, &n, &l, err_off);
			if (ret < 0)
				return ret;
			if (!ret)
				continue;
			ts = get(p, n, &l->hdr[H_TIME]);
			if (!best || ts < best_ts) {
				best = p;
				best_n = n;
				best_l = l;
				best_ts = ts;
				bq = q;
			}
		}
		if (!best || (!end && best_ts > k->horizon))
			return 0;
		*err_off = bq->refs[bq->head].off;
		bq->pos += best_n;
		ret = emit(k, best_l, best, best_n, *err_off);
		if (ret)
			return ret;
	}
	*rec = k->out[k->iout++].rec;
	return 1;
}
