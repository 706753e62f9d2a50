/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * dial9: per-CPU rings of scheduler events, read from /dev/dial9.
 *
 * This header is the whole ABI: a tool needs nothing else to read the rings.
 *
 * Session life cycle (each open() of /dev/dial9 is an independent session):
 *
 *   fd = open("/dev/dial9", O_RDWR);
 *   ioctl(fd, DIAL9_IOC_GET_VERSION, &v);    abi_version, features, nr_cpu_ids
 *   ioctl(fd, DIAL9_IOC_CONFIGURE, &cfg);    optional; once, before mapping
 *   ioctl(fd, DIAL9_IOC_ADD_TARGET, &t);     optional; other processes
 *   for each cpu < nr_cpu_ids:
 *     ctrl = mmap(NULL, page, PROT_READ|PROT_WRITE, MAP_SHARED, fd,
 *                 DIAL9_MMAP_CTRL(cpu));
 *     data = mmap(NULL, ctrl->data_size, PROT_READ, MAP_SHARED, fd,
 *                 DIAL9_MMAP_DATA(cpu));
 *   ioctl(fd, DIAL9_IOC_ENABLE, 0);
 *   loop: poll(fd, POLLIN); for each cpu: read records in [tail, head)
 *
 * open() allocates the session and its target table, and the first mmap()
 * (or ENABLE) every CPU's ring, all charged to the caller's memory cgroup:
 * ENOMEM when it has no room.  For a session without CAP_PERFMON, open()
 * fails with EMFILE when its user holds the module's user_sessions
 * sessions already, and open(), mmap() or ENABLE with EDQUOT when its
 * user's sessions would hold more than the module's user_ring_kb
 * parameter (KiB) of memory: try smaller rings.
 *
 * Ring protocol.  head and tail are free-running byte counters; the offset
 * of a position in the data area is (pos & (data_size - 1)).  The kernel
 * writes records, then publishes head with release semantics.  The reader
 * loads head with acquire semantics, reads records, then stores tail with
 * release semantics.  Every record starts 8-byte aligned, its size is a
 * multiple of 8, and it never wraps: when a record does not fit before the
 * end of the data area, the kernel first fills the rest with a PAD record
 * (which may be as short as 8 bytes: only type and size are meaningful).
 *
 * When the ring is full the new record is dropped and counted; the next
 * record that fits is preceded by a LOST record carrying the number dropped
 * since the previous LOST record.  ctrl->lost is the running total.
 *
 * A session records the tasks of its targets (by default the opener's
 * process), or every task if system-wide; records also show the other
 * side of a switch or wake-up, redacted unless the session has
 * CAP_PERFMON.  The *_TARGET flags say which sides are recorded tasks.
 *
 * Timestamps are CLOCK_MONOTONIC nanoseconds, the clock of userspace
 * clock_gettime(CLOCK_MONOTONIC); on one CPU they never go backwards.
 * Task ids are as seen from the initial pid namespace.  Records never carry
 * kernel addresses, and every byte of a record is written.
 */
#ifndef _UAPI_LINUX_DIAL9_H
#define _UAPI_LINUX_DIAL9_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define DIAL9_ABI_VERSION	1
#define DIAL9_DEVICE		"/dev/dial9"

/* Feature bits reported by DIAL9_IOC_GET_VERSION. */
#define DIAL9_FEAT_SWITCH_WAIT	(1ULL << 0)	/* switch.next_wait_ns */
#define DIAL9_FEAT_SYSTEM_WIDE	(1ULL << 1)	/* DIAL9_CFG_SYSTEM_WIDE */
#define DIAL9_FEAT_FOLLOW_FORK	(1ULL << 2)	/* DIAL9_TARGET_CHILDREN */
#define DIAL9_FEAT_COMM		(1ULL << 3)	/* COMM records */
#define DIAL9_FEAT_POLL		(1ULL << 4)	/* poll() with a watermark */
#define DIAL9_FEAT_RUNQ_TOTALS	(1ULL << 5)	/* switch *_run_delay_ns, *_pcount */
#define DIAL9_FEAT_UNFOLLOWED	(1ULL << 6)	/* UNFOLLOWED records */
#define DIAL9_FEAT_IGNORE	(1ULL << 7)	/* DIAL9_IOC_IGNORE_THREAD */
#define DIAL9_FEAT_EXEC_UNFOLLOW (1ULL << 8)	/* DIAL9_UNFOLLOWED_EXEC */
#define DIAL9_FEAT_STACKS	(1ULL << 9)	/* DIAL9_CFG_STACKS, STACK records */
#define DIAL9_FEAT_OCCUPANTS	(1ULL << 10)	/* DIAL9_CFG_OCCUPANTS */
#define DIAL9_FEAT_SAMPLES	(1ULL << 11)	/* sample_hz, SAMPLE records */
#define DIAL9_FEAT_IGNORE_SYNC	(1ULL << 12)	/* IGNORE_THREAD waits out probes */

/* Sizes of the data area of one CPU's ring. */
#define DIAL9_RING_DEFAULT_SIZE	(256U * 1024)
#define DIAL9_RING_MIN_SIZE	4096U
#define DIAL9_RING_MAX_SIZE	(64U * 1024 * 1024)

/*
 * Most processes one session follows at once (ADD_TARGET and children
 * together).  A process is forgotten once its last thread is gone (after
 * its last switch), and it is followed by identity, not by number: a
 * process that reuses a followed tgid is not followed.  A child that does
 * not fit is counted in targets_dropped and reported by an UNFOLLOWED
 * record; ADD_TARGET fails with -ENOSPC.
 */
#define DIAL9_MAX_TARGETS	4096

/* mmap() offsets: the control page and the data area of one CPU. */
#define DIAL9_MMAP_CTRL(cpu)	(((__u64)(cpu) * 2) << 32)
#define DIAL9_MMAP_DATA(cpu)	(((__u64)(cpu) * 2 + 1) << 32)

struct dial9_version {
	__u32 abi_version;	/* DIAL9_ABI_VERSION */
	__u32 nr_cpu_ids;	/* rings are numbered 0 .. nr_cpu_ids - 1 */
	__u64 features;		/* DIAL9_FEAT_* */
	__u32 default_ring_size;
	__u32 max_targets;	/* DIAL9_MAX_TARGETS */
	__u64 reserved[2];	/* zero */
};

/* dial9_session_config.flags */
#define DIAL9_CFG_SYSTEM_WIDE	(1U << 0)	/* every task: CAP_PERFMON */
#define DIAL9_CFG_NO_SELF	(1U << 1)	/* do not target the opener */
#define DIAL9_CFG_STACKS	(1U << 2)	/* STACK records at switch-out */
#define DIAL9_CFG_OCCUPANTS	(1U << 3)	/* every switch where one waits */
#define DIAL9_CFG_ALL		(DIAL9_CFG_SYSTEM_WIDE | DIAL9_CFG_NO_SELF | \
				 DIAL9_CFG_STACKS | DIAL9_CFG_OCCUPANTS)

/*
 * DIAL9_CFG_OCCUPANTS: while a recorded task waits runnable on a CPU, the
 * session also gets the switches of that CPU between two tasks it does
 * not record (SWITCH records with neither *_TARGET flag), so a reader
 * sees what held the CPU meanwhile.  Those sides are redacted as any
 * foreign side is unless the session has CAP_PERFMON; a privileged
 * session also gets the name of such a task (a COMM record with
 * DIAL9_COMM_OCCUPANT) before its first switch in that ring, and again
 * when the name it had there changed or it was crowded out of the
 * ring's small cache of names.
 *
 * "Waits" is the module's own count per CPU of the recorded tasks queued
 * there: one more at a recorded task's switch-out while it stays queued,
 * at its wake-up or creation onto the CPU, and when the balancer moves
 * it there while queued; one fewer when one switches in there or is
 * moved away; zero when the CPU goes idle.  Known gaps: a task woken
 * while it was queued after a preemption (before it ran again) counts
 * twice, and a queued task that stops being recorded (its process is
 * forgotten, or its thread ignored) is not taken off: both make the CPU
 * record more than it must until it next goes idle.  A task the
 * balancer moves while its CPU goes idle may be missed on the new CPU
 * for the moment until it runs.  The SWITCH record carries
 * DIAL9_SWITCH_OCCUPANTS in every session that sets this flag.
 */

/*
 * dial9_session_config.events: which records to write; 0 means
 * DIAL9_EV_DEFAULT, everything but WAKEUP: WAKING already says who woke
 * whom, and the switch-in says where the woken task ran and how long it
 * waited, so WAKEUP records cost a probe call and a record per wake-up
 * for little more (the CPU chosen before the task ran).
 */
#define DIAL9_EV_SWITCH		(1U << 0)
#define DIAL9_EV_WAKING		(1U << 1)
#define DIAL9_EV_WAKEUP		(1U << 2)
#define DIAL9_EV_WAKEUP_NEW	(1U << 3)
#define DIAL9_EV_MIGRATE	(1U << 4)
#define DIAL9_EV_EXIT		(1U << 5)
#define DIAL9_EV_COMM		(1U << 6)
#define DIAL9_EV_ALL		0x7fU
#define DIAL9_EV_DEFAULT	(DIAL9_EV_ALL & ~DIAL9_EV_WAKEUP)

/*
 * DIAL9_IOC_CONFIGURE takes a struct that starts with its own size, so it can
 * grow: the kernel accepts a smaller (older) struct with the missing fields
 * zero, and a larger (newer) one if the fields it does not know are zero.
 * The ioctl number is matched without its size bits.  Allowed once, before
 * the rings are mapped or the session enabled (-EBUSY after).
 */
struct dial9_session_config {
	__u32 size;		/* sizeof(struct dial9_session_config) */
	__u32 flags;		/* DIAL9_CFG_* */
	__u32 ring_size;	/* data bytes per CPU, power of two; 0: default */
	__u32 events;		/* DIAL9_EV_* mask; 0: DIAL9_EV_DEFAULT */
	/* DIAL9_FEAT_SAMPLES: SAMPLE records a second per CPU; 0: none */
	__u32 sample_hz;	/* at most DIAL9_SAMPLE_MAX_HZ */
	__u32 reserved0;	/* zero */
	__u64 reserved[1];	/* zero */
};
#define DIAL9_SESSION_CONFIG_SIZE_VER0	32

/* dial9_target.flags */
#define DIAL9_TARGET_CHILDREN	(1U << 0)	/* also processes it forks */

/* Record another process (by tgid).  CAP_PERFMON unless it is the caller's. */
struct dial9_target {
	__u32 size;		/* sizeof(struct dial9_target) */
	__u32 flags;		/* DIAL9_TARGET_* */
	__u32 pid;		/* tgid, in the caller's pid namespace */
	__u32 reserved;		/* zero */
};
#define DIAL9_TARGET_SIZE_VER0	16

/*
 * Leave one thread out of the session, as if it were not a target (a
 * recorder's own threads, whose switches would otherwise fill an idle
 * process's trace): its side of a record is shown as a foreign task.
 * The io_uring workers that run its requests (io-wq's "iou-wrk-<tid>")
 * are left out with it.
 * tid 0 is the calling thread; it must belong to a process the session
 * may see.  At most DIAL9_MAX_IGNORED threads (-ENOSPC); followed by
 * identity, so a thread that reuses the tid is recorded.
 * DIAL9_FEAT_IGNORE_SYNC: the ioctl returns once every probe that may
 * still have seen the thread as recorded is done, so no record of it
 * that the ring gets later is timed after the return (a reader may stop
 * looking for the thread in records past that time).
 */
#define DIAL9_MAX_IGNORED	8
#define DIAL9_IGNORE_REMOVE	(1U << 0)	/* record it again */

struct dial9_ignore {
	__u32 size;		/* sizeof(struct dial9_ignore) */
	__u32 flags;		/* DIAL9_IGNORE_* */
	__u32 tid;		/* in the caller's pid namespace; 0: caller */
	__u32 reserved;		/* zero */
};
#define DIAL9_IGNORE_SIZE_VER0	16

/* Counters of one CPU's ring; set cpu, the kernel fills in the rest. */
struct dial9_ring_stats {
	__u32 size;		/* sizeof(struct dial9_ring_stats) */
	__u32 cpu;
	__u64 written;		/* records written (LOST and PAD not counted) */
	__u64 lost;		/* records dropped because the ring was full */
	__u64 ring_size;	/* data bytes */
	__u64 targets_dropped;	/* children not followed: target table full */
	/* Processes followed now (session-wide, like targets_dropped). */
	__u64 targets;
	/* DIAL9_FEAT_SAMPLES: periods its sampling timer fired too late for */
	__u64 samples_missed;
	__u64 reserved[1];
};
#define DIAL9_RING_STATS_SIZE_VER0	64

/* The ioctl table, sorted by number. */
#define DIAL9_IOC_MAGIC		0xd9
#define DIAL9_IOC_GET_VERSION	_IOR(DIAL9_IOC_MAGIC, 0x00, struct dial9_version)
#define DIAL9_IOC_CONFIGURE	_IOW(DIAL9_IOC_MAGIC, 0x01, struct dial9_session_config)
#define DIAL9_IOC_ADD_TARGET	_IOW(DIAL9_IOC_MAGIC, 0x02, struct dial9_target)
#define DIAL9_IOC_ENABLE	_IO(DIAL9_IOC_MAGIC, 0x03)
#define DIAL9_IOC_DISABLE	_IO(DIAL9_IOC_MAGIC, 0x04)
#define DIAL9_IOC_GET_STATS	_IOWR(DIAL9_IOC_MAGIC, 0x05, struct dial9_ring_stats)
#define DIAL9_IOC_IGNORE_THREAD	_IOW(DIAL9_IOC_MAGIC, 0x06, struct dial9_ignore)

/*
 * The control page of one CPU's ring.  The first cache line is written by
 * the kernel only, the second by the reader only.
 */
struct dial9_ring_ctrl {
	/* Written by the kernel. */
	__u64 head;		/* bytes published; store-release */
	__u64 lost;		/* records dropped, running total */
	__u64 written;		/* records written, running total */
	__u32 data_size;	/* bytes in the data area, power of two */
	__u32 cpu;
	__u32 abi_version;
	__u32 kernel_reserved0;
	__u64 kernel_reserved[3];
	/* Written by the reader. */
	__u64 tail;		/* bytes consumed; store-release */
	__u32 watermark;	/* wake poll() at this many unread bytes; 0: 1 */
	__u32 reader_reserved0;
	__u64 reader_reserved[6];
};

/* Record types. */
enum dial9_record_type {
	DIAL9_REC_PAD		= 0,	/* skip size bytes */
	DIAL9_REC_LOST		= 1,
	DIAL9_REC_SWITCH	= 2,
	DIAL9_REC_WAKING	= 3,	/* wake-up requested (waker context) */
	DIAL9_REC_WAKEUP	= 4,	/* woken task made runnable */
	DIAL9_REC_WAKEUP_NEW	= 5,	/* new task made runnable */
	DIAL9_REC_MIGRATE	= 6,
	DIAL9_REC_EXIT		= 7,
	DIAL9_REC_COMM		= 8,
	DIAL9_REC_UNFOLLOWED	= 9,	/* a child the session cannot follow */
	DIAL9_REC_STACK		= 10,	/* user stack of a task switched out */
	DIAL9_REC_SAMPLE	= 11,	/* on-CPU sample of a recorded task */
	DIAL9_REC_MAX
};

/* Every record starts with this header. */
struct dial9_rec_header {
	__u16 type;		/* enum dial9_record_type */
	__u16 size;		/* bytes, header included, multiple of 8 */
	__u16 cpu;		/* CPU that wrote the record */
	__u16 flags;		/* per type */
	__u64 time_ns;		/* CLOCK_MONOTONIC */
};

/* A tid or tgid that the session may not see (a foreign task). */
#define DIAL9_TID_REDACTED	0xffffffffU

struct dial9_rec_lost {
	struct dial9_rec_header hdr;
	__u64 count;		/* records dropped just before this one */
};

/* dial9_rec_switch.hdr.flags */
#define DIAL9_SWITCH_PREEMPT	(1U << 0)	/* prev was preempted */
#define DIAL9_SWITCH_PREV_RUNNABLE (1U << 1)	/* prev stays on the runqueue */
#define DIAL9_SWITCH_WAIT_VALID	(1U << 2)	/* next_wait_ns is known */
#define DIAL9_SWITCH_PREV_TARGET (1U << 3)	/* prev is a task recorded */
#define DIAL9_SWITCH_NEXT_TARGET (1U << 4)	/* next is a task recorded */
#define DIAL9_SWITCH_TOTALS	(1U << 5)	/* *_run_delay_ns, *_pcount valid */
#define DIAL9_SWITCH_OCCUPANTS	(1U << 6)	/* DIAL9_CFG_OCCUPANTS session */

/*
 * A switch.  next_wait_ns is how long next waited on this CPU: a task the
 * load balancer moved while it waited restarts that clock on the new CPU.
 * The cumulative fields are the scheduler's own per-task totals (what
 * /proc/<pid>/task/<tid>/schedstat shows as its second and third fields):
 * for prev, as they stand while it runs (its totals after its last
 * switch-in); for next, as they stand before this switch-in is counted,
 * so they include the parts of the current wait spent on other CPUs.  A
 * reader takes differences of them between two records of one task, which
 * are exact whatever was lost in between:
 *
 *   whole current wait = next_run_delay_ns - prev_run_delay_ns at the
 *                        task's last switch-out + next_wait_ns,
 *                        if next_pcount equals prev_pcount there
 *   totals after it    = next_run_delay_ns + next_wait_ns and
 *                        next_pcount + 1   (WAIT_VALID set), else unchanged
 *
 * next_wait_ns ends at this tracepoint while the kernel ends the wait at
 * its runqueue clock update a little earlier, so a total reconstructed
 * from switch-ins can exceed the kernel's by that much per wait; the
 * prev_* values of a switch-out are the kernel's figures exactly.  A
 * redacted side has its totals zero; pcount is the low 32 bits.
 */
struct dial9_rec_switch {
	struct dial9_rec_header hdr;
	__u32 prev_tid;
	__u32 prev_tgid;
	__u32 next_tid;
	__u32 next_tgid;
	__s32 prev_prio;	/* kernel prio: 0..99 RT, 100..139 normal */
	__s32 next_prio;
	__u32 prev_state;	/* DIAL9_STATE_* */
	__u32 reserved;		/* zero */
	__u64 next_wait_ns;	/* how long next waited runnable before now */
	/* DIAL9_FEAT_RUNQ_TOTALS: records of older modules end here (56). */
	__u64 prev_run_delay_ns;
	__u64 next_run_delay_ns;
	__u32 prev_pcount;
	__u32 next_pcount;
};
#define DIAL9_REC_SWITCH_SIZE_VER0	56

/*
 * dial9_rec_switch.prev_state: what prev was switched out for, as in
 * /proc/<pid>/stat's state letter (an index, not the kernel's bit mask).
 */
#define DIAL9_STATE_RUNNING	0	/* R: preempted, still runnable */
#define DIAL9_STATE_SLEEPING	1	/* S: interruptible sleep */
#define DIAL9_STATE_DISK	2	/* D: uninterruptible sleep */
#define DIAL9_STATE_STOPPED	3	/* T */
#define DIAL9_STATE_TRACED	4	/* t */
#define DIAL9_STATE_DEAD	5	/* X */
#define DIAL9_STATE_ZOMBIE	6	/* Z */
#define DIAL9_STATE_PARKED	7	/* P */
#define DIAL9_STATE_IDLE	8	/* I: idle kernel thread wait */

/* dial9_rec_wake.hdr.flags */
#define DIAL9_WAKE_FROM_IRQ	(1U << 0)	/* waker is who was interrupted */
#define DIAL9_WAKE_TASK_TARGET	(1U << 1)	/* the woken task is recorded */
#define DIAL9_WAKE_WAKER_TARGET	(1U << 2)	/* the waker is recorded */

/* DIAL9_REC_WAKING, DIAL9_REC_WAKEUP, DIAL9_REC_WAKEUP_NEW */
struct dial9_rec_wake {
	struct dial9_rec_header hdr;
	__u32 tid;		/* the woken task */
	__u32 tgid;
	__u32 waker_tid;	/* the task running when the wake-up happened */
	__u32 waker_tgid;
	__s32 prio;
	/* the CPU the woken task will run on, or DIAL9_CPU_REDACTED */
	__u32 target_cpu;
};

/*
 * A CPU that the session may not see: the target_cpu of a foreign task
 * (one the session does not record, woken by one it does) in a session
 * without CAP_PERFMON, as its ids are DIAL9_TID_REDACTED and its prio 0.
 * Modules before this value wrote the real CPU there.
 */
#define DIAL9_CPU_REDACTED	0xffffffffU

struct dial9_rec_migrate {
	struct dial9_rec_header hdr;
	__u32 tid;
	__u32 tgid;
	__u32 orig_cpu;
	__u32 dest_cpu;
};

/* dial9_rec_exit.hdr.flags */
#define DIAL9_EXIT_GROUP_DEAD	(1U << 0)	/* the last thread of its process */

struct dial9_rec_exit {
	struct dial9_rec_header hdr;
	__u32 tid;
	__u32 tgid;
};

/*
 * A task's name: at enable for existing threads, at fork and at rename.
 * With DIAL9_COMM_OCCUPANT in hdr.flags: a task the session does not
 * record, named for a privileged session before a switch of it that
 * DIAL9_CFG_OCCUPANTS recorded (its name at that switch).
 */
#define DIAL9_COMM_OCCUPANT	(1U << 0)

struct dial9_rec_comm {
	struct dial9_rec_header hdr;
	__u32 tid;
	__u32 tgid;
	char comm[16];		/* NUL-padded */
};

/*
 * A process forked by a followed process, with DIAL9_TARGET_CHILDREN, that
 * the session could not follow (DIAL9_MAX_TARGETS): none of its records
 * will be written.  Written on the CPU that ran the fork.
 *
 * With DIAL9_UNFOLLOWED_EXEC in hdr.flags: a followed process (tgid; its
 * parent in parent_tgid) that an unprivileged session stopped following
 * because it exec'd a program that gains privileges (setuid, setgid or
 * file capabilities: the exec's AT_SECURE), as perf stops at such an
 * exec.  Its records up to the exec are in the rings, none after it;
 * from then on it is a foreign process, redacted.  Written on the CPU
 * that ran the exec, when the kernel has loaded the program (the
 * sched_process_exec tracepoint); while the kernel loads it, once its
 * new credentials are committed, the task is already left out unless
 * they are its old ids and capabilities (an LSM's transition alone).
 * An exec while the session was disabled is found at the next ENABLE,
 * which writes the record on its own CPU.  Whatever the session's
 * state, an unprivileged session records a task only while its user and
 * group ids and capabilities are the opener's at open(), and ADD_TARGET
 * of a process started by such an exec fails with EPERM.
 */
#define DIAL9_UNFOLLOWED_EXEC	0x1

struct dial9_rec_unfollowed {
	struct dial9_rec_header hdr;
	__u32 tgid;		/* the child */
	__u32 parent_tgid;
};

/*
 * With DIAL9_CFG_STACKS: the user-space stack of a recorded task (never a
 * foreign one) as it is switched out, where it blocked or was preempted.
 * Written right after that task's SWITCH record in the same ring, with the
 * same time_ns, and counted in written and lost like any record (a STACK
 * can be lost while its SWITCH is not).  ips[0] is the user instruction
 * pointer (after the system call or the interrupted instruction), then the
 * return addresses found by following the frame pointer (rbp) chain, the
 * innermost first: code built without frame pointers (most of Debian's
 * libraries) cuts the chain short or adds a wrong frame.  The walk reads
 * user memory with page faults disabled and stops at the first address it
 * cannot read, at a frame that does not lie above the last one, at a zero
 * return address, or after DIAL9_STACK_MAX_DEPTH addresses (the flag
 * DIAL9_STACK_TRUNCATED).  Kernel threads, io_uring workers, exiting
 * tasks with no memory left and 32-bit tasks get none; nr is at least 1.
 */
#define DIAL9_STACK_MAX_DEPTH	32

/*
 * dial9_rec_stack.hdr.flags.  With DIAL9_STACK_WAKER the record follows a
 * WAKING record instead, in the same ring with the same time_ns: the
 * stack of the waker (tid, tgid) as it woke a recorded task, written only
 * when the waker is a recorded task too and the wake-up is not from an
 * interrupt (DIAL9_WAKE_FROM_IRQ).
 */
#define DIAL9_STACK_TRUNCATED	(1U << 0)	/* the walk hit the depth limit */
#define DIAL9_STACK_WAKER	(1U << 1)	/* a waker's, after its WAKING */

struct dial9_rec_stack {
	struct dial9_rec_header hdr;
	__u32 tid;
	__u32 tgid;
	__u32 nr;		/* addresses in ips[] */
	__u32 reserved;		/* STACK: zero; SAMPLE: missed (below) */
	__u64 ips[];		/* user addresses, innermost first */
};

/*
 * With sample_hz: a per-CPU timer fires sample_hz times a second on each
 * online CPU while the session is enabled and a recorded task runs there
 * (it stops at its first firing without one, and resumes when one is
 * switched in, whether or not the session asks for SWITCH records), and
 * if the task it interrupts is a recorded one (never a foreign task),
 * writes a SAMPLE record of it:
 * the layout of struct dial9_rec_stack, with its user stack at that
 * moment.  If the task was running user code, ips[0] is the interrupted
 * instruction and the walk starts from the interrupted registers; if it
 * was in the kernel (a system call, a page fault), DIAL9_SAMPLE_KERNEL is
 * set and the stack is the one it entered the kernel with, as for STACK
 * records.  The walk and its limits are those of STACK records; samples
 * of tasks with no user stack (kernel threads, io_uring workers) are not
 * written.  A sample that does not fit the ring is lost and counted like
 * any record.  Each SAMPLE stands for one period of CPU time (1e9 /
 * sample_hz ns); periods the timer fired too late for (interrupts off for
 * longer than a period) are not made up, but counted: the rec_stack's
 * reserved field of a SAMPLE is "missed", the periods the CPU's timer
 * skipped since its previous SAMPLE record (of whichever task), and
 * dial9_ring_stats.samples_missed their total.
 */
#define DIAL9_SAMPLE_MAX_HZ	1000
#define DIAL9_SAMPLE_KERNEL	(1U << 2)	/* in the kernel when sampled */

#endif /* _UAPI_LINUX_DIAL9_H */
