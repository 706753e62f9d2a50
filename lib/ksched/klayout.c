// SPDX-License-Identifier: MIT
/*
 * klayout.c - the kernel layout frame: <linux/dial9.h>'s record layout
 * (and the schedstat backend's), described field by field, so that a
 * reader anywhere decodes the chunks of records written as the kernel
 * wrote them (docs/format.md, "Kernel chunks").
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <linux/dial9.h>

#include "ksched/ksched.h"
#include "format/wire.h"

struct kl_field {
	const char *name;
	uint16_t off;
	uint8_t width, flags;
};

struct kl_flag {
	const char *name;
	uint8_t bit;
};

struct kl_type {
	uint16_t type;
	const char *name;
	const struct kl_field *f;
	unsigned int nf;
	const struct kl_flag *fl;
	unsigned int nfl;
};

#define KF(st, m, fl) { #m, offsetof(st, m), sizeof(((st *)0)->m), fl }
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct kl_field f_hdr[] = {
	KF(struct dial9_rec_header, type, 0),
	KF(struct dial9_rec_header, size, 0),
	KF(struct dial9_rec_header, cpu, 0),
	KF(struct dial9_rec_header, flags, 0),
	KF(struct dial9_rec_header, time_ns, 0),
};
static const struct kl_field f_lost[] = {
	KF(struct dial9_rec_lost, count, 0),
};
static const struct kl_field f_switch[] = {
	KF(struct dial9_rec_switch, prev_tid, 0),
	KF(struct dial9_rec_switch, prev_tgid, 0),
	KF(struct dial9_rec_switch, next_tid, 0),
	KF(struct dial9_rec_switch, next_tgid, 0),
	KF(struct dial9_rec_switch, prev_prio, D9_KL_SIGNED),
	KF(struct dial9_rec_switch, next_prio, D9_KL_SIGNED),
	KF(struct dial9_rec_switch, prev_state, 0),
	KF(struct dial9_rec_switch, next_wait_ns, 0),
	KF(struct dial9_rec_switch, prev_run_delay_ns, 0),
	KF(struct dial9_rec_switch, next_run_delay_ns, 0),
	KF(struct dial9_rec_switch, prev_pcount, 0),
	KF(struct dial9_rec_switch, next_pcount, 0),
};
static const struct kl_flag fl_switch[] = {
	{ "preempt", 0 }, { "prev_runnable", 1 }, { "wait_valid", 2 },
	{ "prev_target", 3 }, { "next_target", 4 }, { "totals", 5 },
	{ "occupants", 6 },
};
static const struct kl_field f_wake[] = {
	KF(struct dial9_rec_wake, tid, 0),
	KF(struct dial9_rec_wake, tgid, 0),
	KF(struct dial9_rec_wake, waker_tid, 0),
	KF(struct dial9_rec_wake, waker_tgid, 0),
	KF(struct dial9_rec_wake, prio, D9_KL_SIGNED),
	KF(struct dial9_rec_wake, target_cpu, 0),
};
static const struct kl_flag fl_wake[] = {
	{ "from_irq", 0 }, { "task_target", 1 }, { "waker_target", 2 },
};
static const struct kl_field f_migrate[] = {
	KF(struct dial9_rec_migrate, tid, 0),
	KF(struct dial9_rec_migrate, tgid, 0),
	KF(struct dial9_rec_migrate, orig_cpu, 0),
	KF(struct dial9_rec_migrate, dest_cpu, 0),
};
static const struct kl_field f_exit[] = {
	KF(struct dial9_rec_exit, tid, 0),
	KF(struct dial9_rec_exit, tgid, 0),
};
static const struct kl_flag fl_exit[] = { { "group_dead", 0 } };
static const struct kl_field f_comm[] = {
	KF(struct dial9_rec_comm, tid, 0),
	KF(struct dial9_rec_comm, tgid, 0),
	KF(struct dial9_rec_comm, comm, 0),
};
static const struct kl_flag fl_comm[] = { { "occupant", 0 } };
static const struct kl_field f_unfollowed[] = {
	KF(struct dial9_rec_unfollowed, tgid, 0),
	KF(struct dial9_rec_unfollowed, parent_tgid, 0),
};
static const struct kl_flag fl_unfollowed[] = { { "exec", 0 } };
static const struct kl_field f_stack[] = {
	KF(struct dial9_rec_stack, tid, 0),
	KF(struct dial9_rec_stack, tgid, 0),
	KF(struct dial9_rec_stack, nr, 0),
	KF(struct dial9_rec_stack, reserved, 0),
	{ "ips", offsetof(struct dial9_rec_stack, ips), 8, D9_KL_ARRAY },
};
static const struct kl_flag fl_stack[] = {
	{ "truncated", 0 }, { "waker", 1 },
};
static const struct kl_flag fl_sample[] = {
	{ "truncated", 0 }, { "kernel", 2 },
};
static const struct kl_field f_sstat[] = {
	KF(struct d9_rec_schedstat, tid, 0),
	KF(struct d9_rec_schedstat, tgid, 0),
	KF(struct d9_rec_schedstat, run_ns, 0),
	KF(struct d9_rec_schedstat, delay_ns, 0),
	KF(struct d9_rec_schedstat, slices, 0),
	KF(struct d9_rec_schedstat, migrations, 0),
	KF(struct d9_rec_schedstat, prio, D9_KL_SIGNED),
};

static const struct kl_type kl_types[] = {
	{ D9_KL_HEADER, "header", f_hdr, N(f_hdr), NULL, 0 },
	{ DIAL9_REC_PAD, "pad", NULL, 0, NULL, 0 },
	{ DIAL9_REC_LOST, "lost", f_lost, N(f_lost), NULL, 0 },
	{ DIAL9_REC_SWITCH, "switch", f_switch, N(f_switch), fl_switch,
	  N(fl_switch) },
	{ DIAL9_REC_WAKING, "waking", f_wake, N(f_wake), fl_wake, N(fl_wake) },
	{ DIAL9_REC_WAKEUP, "wakeup", f_wake, N(f_wake), fl_wake, N(fl_wake) },
	{ DIAL9_REC_WAKEUP_NEW, "wakeup_new", f_wake, N(f_wake), fl_wake,
	  N(fl_wake) },
	{ DIAL9_REC_MIGRATE, "migrate", f_migrate, N(f_migrate), NULL, 0 },
	{ DIAL9_REC_EXIT, "exit", f_exit, N(f_exit), fl_exit, N(fl_exit) },
	{ DIAL9_REC_COMM, "comm", f_comm, N(f_comm), fl_comm, N(fl_comm) },
	{ DIAL9_REC_UNFOLLOWED, "unfollowed", f_unfollowed, N(f_unfollowed),
	  fl_unfollowed, N(fl_unfollowed) },
	{ DIAL9_REC_STACK, "stack", f_stack, N(f_stack), fl_stack,
	  N(fl_stack) },
	{ DIAL9_REC_SAMPLE, "sample", f_stack, N(f_stack), fl_sample,
	  N(fl_sample) },
	{ D9_REC_SCHEDSTAT, "schedstat", f_sstat, N(f_sstat), NULL, 0 },
};

/* The payload, at @p (room enough: D9_KLAYOUT_MAX); its end. */
static uint8_t *payload(uint8_t *p, const char *source, uint64_t period_ns)
{
	p = d9_put_bytes(p, source, strlen(source));
	p = d9_put_varint(p, DIAL9_ABI_VERSION);
	p = d9_put_varint(p, period_ns);
	p = d9_put_varint(p, N(kl_types));
	for (size_t i = 0; i < N(kl_types); i++) {
		const struct kl_type *t = &kl_types[i];

		p = d9_put_varint(p, t->type);
		p = d9_put_bytes(p, t->name, strlen(t->name));
		p = d9_put_varint(p, t->nf);
		for (unsigned int j = 0; j < t->nf; j++) {
			p = d9_put_bytes(p, t->f[j].name, strlen(t->f[j].name));
			p = d9_put_varint(p, t->f[j].off);
			*p++ = t->f[j].width;
			*p++ = t->f[j].flags;
		}
		p = d9_put_varint(p, t->nfl);
		for (unsigned int j = 0; j < t->nfl; j++) {
			p = d9_put_bytes(p, t->fl[j].name, strlen(t->fl[j].name));
			*p++ = t->fl[j].bit;
		}
	}
	return p;
}

size_t d9_klayout_frame(uint8_t *buf, size_t cap, const char *source,
			uint64_t sample_period_ns)
{
	uint8_t tmp[D9_KLAYOUT_MAX];
	size_t n;
	uint8_t *p;

	if (strlen(source) > 64)
		return 0;
	n = (size_t)(payload(tmp, source, sample_period_ns) - tmp);
	if (cap < 1 + D9_MAX_VARINT + n)
		return 0;
	buf[0] = D9_F_KLAYOUT;
	p = d9_put_varint(buf + 1, n);
	memcpy(p, tmp, n);
	return (size_t)(p + n - buf);
}
