// SPDX-License-Identifier: MIT
/* kschema.c - the sched.* event types' names and fields (kschema.h). */
#include "format/kschema.h"

/* prio: the kernel's, 0..139 (0 where the kernel redacted the task) */
static const struct dial9_field f_out[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "state", DIAL9_U64 }, { "preempted", DIAL9_BOOL },
	{ "next_tid", DIAL9_U64 }, { "runq_total_ns", DIAL9_U64 },
	{ "runq_count", DIAL9_U64 }, { "totals_known", DIAL9_BOOL },
	{ "next_pid", DIAL9_U64 }, { "next_prio", DIAL9_U64 },
};
static const struct dial9_field f_in[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "runq_delay_ns", DIAL9_U64 }, { "delay_known", DIAL9_BOOL },
	{ "prev_tid", DIAL9_U64 }, { "runq_total_ns", DIAL9_U64 },
	{ "runq_count", DIAL9_U64 }, { "totals_known", DIAL9_BOOL },
	{ "prev_pid", DIAL9_U64 }, { "prev_prio", DIAL9_U64 },
	{ "prio", DIAL9_U64 },
};
/*
 * A switch between two tasks the recording does not record, on a CPU where
 * a recorded one waited (DIAL9_CFG_OCCUPANTS): no "tid" field, as it is
 * no thread's event.
 */
static const struct dial9_field f_cpu_switch[] = {
	{ "cpu", DIAL9_U64 }, { "prev_tid", DIAL9_U64 },
	{ "prev_pid", DIAL9_U64 }, { "prev_prio", DIAL9_U64 },
	{ "next_tid", DIAL9_U64 }, { "next_pid", DIAL9_U64 },
	{ "next_prio", DIAL9_U64 },
};
/* Once per stream: the CPUs' switches are whole while one waits. */
static const struct dial9_field f_occupants[] = {
	{ "cpu", DIAL9_U64 },
};
/* The name of such a task (a privileged recording only). */
static const struct dial9_field f_occupant_comm[] = {
	{ "occupant_tid", DIAL9_U64 }, { "occupant_pid", DIAL9_U64 },
	{ "name", DIAL9_ISTR }, { "cpu", DIAL9_U64 },
};
static const struct dial9_field f_waking[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "waker_tid", DIAL9_U64 }, { "waker_pid", DIAL9_U64 },
	{ "from_irq", DIAL9_BOOL },
};
static const struct dial9_field f_wakeup[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "target_cpu", DIAL9_U64 }, { "new_task", DIAL9_BOOL },
};
/* cpu, here and below: the CPU whose ring carried the record */
static const struct dial9_field f_migrate[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 },
	{ "from_cpu", DIAL9_U64 }, { "to_cpu", DIAL9_U64 },
	{ "cpu", DIAL9_U64 },
};
static const struct dial9_field f_exit[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 },
	{ "process_exit", DIAL9_BOOL }, { "cpu", DIAL9_U64 },
};
static const struct dial9_field f_lost[] = {
	{ "cpu", DIAL9_U64 }, { "count", DIAL9_U64 },
};
static const struct dial9_field f_comm[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "name", DIAL9_ISTR },
	{ "cpu", DIAL9_U64 },
};

/* A kernel record of a type this library does not know: counted. */
static const struct dial9_field f_unknown[] = {
	{ "cpu", DIAL9_U64 }, { "type", DIAL9_U64 },
};

/* A name written again by the recorder (no kernel record, no CPU). */
static const struct dial9_field f_thread_name[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "name", DIAL9_ISTR },
};

static const struct dial9_field f_sstat[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "run_ns", DIAL9_U64 },
	{ "runq_delay_ns", DIAL9_U64 }, { "timeslices", DIAL9_U64 },
	{ "migrations", DIAL9_U64 }, { "prio", DIAL9_U64 },
};
static const struct dial9_field f_unfollowed[] = {
	{ "pid", DIAL9_U64 }, { "parent_pid", DIAL9_U64 },
	{ "privileged_exec", DIAL9_BOOL }, { "cpu", DIAL9_U64 },
};
/* One CPU's ring at the end of a recording: its counters (format.md) */
static const struct dial9_field f_ring[] = {
	{ "cpu", DIAL9_U64 }, { "written", DIAL9_U64 }, { "lost", DIAL9_U64 },
	{ "filtered", DIAL9_U64 },
};

/* frames: the addresses, innermost first, as little-endian u64s */
static const struct dial9_field f_stack[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "truncated", DIAL9_BOOL }, { "frames", DIAL9_BYTES },
	{ "waker", DIAL9_BOOL },
};
/*
 * an on-CPU sample: frames as sched.stack's; period_ns of CPU time;
 * missed: periods the CPU's timer skipped since its previous sample
 */
static const struct dial9_field f_sample[] = {
	{ "tid", DIAL9_U64 }, { "pid", DIAL9_U64 }, { "cpu", DIAL9_U64 },
	{ "truncated", DIAL9_BOOL }, { "frames", DIAL9_BYTES },
	{ "in_kernel", DIAL9_BOOL }, { "period_ns", DIAL9_U64 },
	{ "missed", DIAL9_U64 },
};
static const struct dial9_field f_mapping[] = {
	{ "pid", DIAL9_U64 }, { "start", DIAL9_U64 }, { "end", DIAL9_U64 },
	{ "offset", DIAL9_U64 }, { "path", DIAL9_STR },
	{ "build_id", DIAL9_BYTES },
};

const struct d9_kschema d9_kschemas[D9_KS_N] = {
	[D9_KS_SWITCH_OUT] = { "sched.switch_out", f_out, 11 },
	[D9_KS_SWITCH_IN] = { "sched.switch_in", f_in, 12 },
	[D9_KS_WAKING] = { "sched.waking", f_waking, 6 },
	[D9_KS_WAKEUP] = { "sched.wakeup", f_wakeup, 5 },
	[D9_KS_MIGRATE] = { "sched.migrate", f_migrate, 5 },
	[D9_KS_EXIT] = { "sched.exit", f_exit, 4 },
	[D9_KS_LOST] = { "sched.lost", f_lost, 2 },
	[D9_KS_COMM] = { "sched.comm", f_comm, 4 },
	[D9_KS_SCHEDSTAT] = { "sched.schedstat", f_sstat, 7 },
	[D9_KS_UNFOLLOWED] = { "sched.unfollowed", f_unfollowed, 4 },
	[D9_KS_STACK] = { "sched.stack", f_stack, 6 },
	[D9_KS_MAPPING] = { "sched.mapping", f_mapping, 6 },
	[D9_KS_CPU_SWITCH] = { "sched.cpu_switch", f_cpu_switch, 7 },
	[D9_KS_OCCUPANTS] = { "sched.occupants", f_occupants, 1 },
	[D9_KS_OCCUPANT_COMM] = { "sched.occupant_comm", f_occupant_comm, 4 },
	[D9_KS_RING] = { "sched.ring", f_ring, 4 },
	[D9_KS_SAMPLE] = { "sched.sample", f_sample, 8 },
	[D9_KS_THREAD_NAME] = { "sched.thread_name", f_thread_name, 3 },
	[D9_KS_UNKNOWN] = { "sched.unknown", f_unknown, 2 },
};
