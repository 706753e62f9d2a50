// SPDX-License-Identifier: MIT
/*
 * ksched_perf.c - scheduler records from perf_event_open, for hosts without
 * dial9.ko.
 *
 * Software dummy events with context_switch set: the kernel writes a
 * PERF_RECORD_SWITCH when a monitored thread goes on and off a CPU, with a
 * flag when it was preempted (still runnable).  One event per existing
 * thread and CPU, inherited by the threads and processes they create, all
 * of a CPU's events writing into one buffer (PERF_EVENT_IOC_SET_OUTPUT) of
 * dial9_ksched_opts.ring_size bytes (a power of two of pages, like the
 * module's rings; halved until the locked-memory limit allows it); task
 * and comm records name new threads (a fork: the creating thread's name,
 * which the child inherits) and tell when they exit.  That works for one's
 * own threads at perf_event_paranoid 2 (the default), with no tracefs and
 * no capability.  Where the sched_waking tracepoint may be read (tracefs
 * mounted, and CAP_PERFMON or perf_event_paranoid -1, as raw tracepoint
 * data needs), the wake-ups our threads perform are recorded too (who woke
 * whom): the kernel delivers a task's tracepoint samples only while it
 * runs, so these are the wake-ups done by the targets' threads, or by an
 * interrupt that arrived while one of them ran.
 *
 * The runqueue wait.  The switch-in records carry the wait this backend
 * can measure from its own records, computed here, once, in time order
 * over all CPUs (resolve()): after a preemption, from the switch-out; after
 * a block, from the sched_waking of the thread (the wake-up that queued
 * it; the kernel's own wait starts at the enqueue just after); for a new
 * thread, from its fork record (a few microseconds before the scheduler
 * first queues it).  Done here rather than by the tools because this is
 * where all of a thread's records meet, so the trace carries the wait as
 * dial9.ko's does and every reader (dial9 sched, export, report, dump)
 * sees the same figure.  A switch-in whose wait began unseen (a thread
 * woken by another process, or by an interrupt on an idle CPU, or
 * anything before the tracepoint was readable) has no wait (no
 * DIAL9_SWITCH_WAIT_VALID): the tools count it as a wait of unknown
 * length.  What it cannot see: the other side of a switch, migrations,
 * threads that existed before and were created by threads outside the
 * targets.
 *
 * Occupants.  Where CPU-wide events are allowed (CAP_PERFMON, or
 * perf_event_paranoid 0 or less) and occupants are asked for, one
 * CPU-wide dummy event per CPU with context_switch set gives every
 * switch of that CPU whole (PERF_RECORD_SWITCH_CPU_WIDE: the other
 * side's pid and tid), and one CPU-wide sched_waking per CPU every
 * wake-up; the threads' own events then carry names, forks and exits
 * only.  The reader keeps what dial9.ko's DIAL9_CFG_OCCUPANTS would:
 * the switches of our threads, a switch of two other tasks only while
 * one of ours waits runnable on that CPU, the wake-ups of or by our
 * threads; it names the other tasks from /proc (resolve_whole()).
 *
 * On-CPU samples: with a sample rate, one more inherited event per thread
 * and CPU, a SW_CPU_CLOCK of period 1e9 / rate ns of the thread's CPU
 * time, sampling its user callchain (the kernel's own frame-pointer walk,
 * at most DIAL9_STACK_MAX_DEPTH frames) into the same buffer.  User time
 * only: what perf_event_paranoid 2 allows, so a thread sampled in the
 * kernel is not sampled at all, unlike dial9.ko's samples.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <linux/dial9.h>

#include "ksched/ksched.h"

struct ptask *d9_perf_task_find(struct d9_perf *p, uint32_t tid)
{
	for (size_t i = 0; i < p->ntasks; i++)
		if (p->tasks[i].tid == tid)
			return &p->tasks[i];
	return NULL;
}

/* The thread @tid of @tgid, known from now on; NULL without memory. */
struct ptask *d9_perf_task_of(struct d9_perf *p, uint32_t tid,
			      uint32_t tgid)
{
	struct ptask *t = d9_perf_task_find(p, tid);

	if (t) {
		if (tgid)
			t->tgid = tgid;
		return t;
	}
	if (p->ntasks == p->captasks) {
		size_t cap = p->captasks ? p->captasks * 2 : 64;
		struct ptask *nt = realloc(p->tasks, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		p->tasks = nt;
		p->captasks = cap;
	}
	t = &p->tasks[p->ntasks++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->tgid = tgid;
	t->prio = -1;
	t->wait_cpu = -1;
	return t;
}

void d9_perf_task_forget(struct d9_perf *p, uint32_t tid)
{
	struct ptask *t = d9_perf_task_find(p, tid);

	if (!t)
		return;
	d9_perf_wait_end(p, t);
	*t = p->tasks[--p->ntasks];
}

void d9_perf_wait_at(struct d9_perf *p, struct ptask *t, int cpu)
{
	d9_perf_wait_end(p, t);
	if (p->waiting && cpu >= 0 && cpu < p->ncpu) {
		t->wait_cpu = cpu;
		p->waiting[cpu]++;
	}
}

void d9_perf_wait_end(struct d9_perf *p, struct ptask *t)
{
	if (p->waiting && t->wait_cpu >= 0 && p->waiting[t->wait_cpu])
		p->waiting[t->wait_cpu]--;
	t->wait_cpu = -1;
}

int d9_perf_push_rec(struct d9_perf *p, const void *rec, size_t size)
{
	if (p->npend == p->cappend) {
		size_t cap = p->cappend ? p->cappend * 2 : 256;
		struct dial9_rec_switch *np = realloc(p->pending,
						      cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		p->pending = np;
		p->cappend = cap;
	}
	memset(&p->pending[p->npend], 0, sizeof(p->pending[0]));
	memcpy(&p->pending[p->npend++], rec, size);
	return 0;
}

int d9_perf_push_comm(struct d9_perf *p, uint32_t tgid, uint32_t tid,
		      const char *name, uint64_t now)
{
	struct dial9_rec_comm c;

	memset(&c, 0, sizeof(c));
	c.hdr.type = DIAL9_REC_COMM;
	c.hdr.size = sizeof(c);
	c.hdr.time_ns = now;
	c.tid = tid;
	c.tgid = tgid;
	memcpy(c.comm, name, strnlen(name, sizeof(c.comm) - 1));
	return d9_perf_push_rec(p, &c, sizeof(c));
}

int d9_perf_read_comm(int tgid, int tid, char *name, size_t len)
{
	char path[64];
	size_t n;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", tgid, tid);
	ret = d9_read_small(path, name, len);
	if (ret)
		return ret;
	n = strlen(name);
	if (n && name[n - 1] == '\n')
		name[n - 1] = 0;
	return 0;
}

static int add_fd(struct d9_perf *p, int fd)
{
	if (p->nfds == p->capfds) {
		size_t cap = p->capfds ? p->capfds * 2 : 64;
		int *nf = realloc(p->fds, cap * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		p->fds = nf;
		p->capfds = cap;
	}
	p->fds[p->nfds++] = fd;
	return 0;
}

/*
 * The sched_waking tracepoint's id and the offsets of pid and target_cpu in
 * its raw data, from tracefs.  Returns 0, or -errno when unavailable.
 */
static int waking_format(struct d9_perf *p)
{
	static const char *const dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing" };
	char path[128], line[256];
	FILE *f = NULL;

	for (size_t i = 0; !f && i < 2; i++) {
		snprintf(path, sizeof(path), "%s/events/sched/sched_waking/format",
			 dirs[i]);
		f = fopen(path, "re");
	}
	if (!f)
		return -ENOENT;
	p->waking_id = p->waking_pid_off = p->waking_cpu_off = -1;
	while (fgets(line, sizeof(line), f)) {
		const char *o = strstr(line, "offset:");
		int off = o ? atoi(o + 7) : -1;

		if (!strncmp(line, "ID:", 3))
			p->waking_id = atoi(line + 3);
		else if (strstr(line, " pid;"))
			p->waking_pid_off = off;
		else if (strstr(line, " target_cpu;"))
			p->waking_cpu_off = off;
	}
	fclose(f);
	if (p->waking_id < 0 || p->waking_pid_off < 0 || p->waking_cpu_off < 0) {
		p->waking_id = -1;
		return -EPROTO;
	}
	return 0;
}

/* perf_event_open(@a) for @tid on @cpu, kept in p->fds: the fd or -errno. */
static int open_fd(struct d9_perf *p, struct perf_event_attr *a, int tid,
		   int cpu)
{
	int fd = (int)syscall(SYS_perf_event_open, a, tid, cpu, -1,
			      PERF_FLAG_FD_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = add_fd(p, fd);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * What every event of a session shares: inherited by new threads and
 * children, stamped with CLOCK_MONOTONIC, its tid, time and CPU sampled.
 */
static void attr_init(struct perf_event_attr *a, uint32_t type,
		      uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = type;
	a->config = config;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a->inherit = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

/* The output of @fd goes to @cpu's buffer: 0 or -errno. */
static int set_output(struct d9_perf *p, int fd, int cpu)
{
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->buf[cpu].fd) ? -errno : 0;
}

/*
 * The wake-ups @tid performs on @cpu, into the CPU's buffer; with @tid
 * -1, every wake-up there (not inherited: CPU-wide).
 */
static int open_waking(struct d9_perf *p, int tid, int cpu)
{
	struct perf_event_attr a;
	int fd;

	attr_init(&a, PERF_TYPE_TRACEPOINT, (uint64_t)p->waking_id);
	a.inherit = tid >= 0;
	a.sample_period = 1;
	a.sample_type |= PERF_SAMPLE_RAW;
	fd = open_fd(p, &a, tid, cpu);
	return fd < 0 ? fd : set_output(p, fd, cpu);
}

/*
 * The on-CPU samples of @tid on @cpu, into the CPU's buffer.  Their
 * PERF_RECORD_SAMPLEs are told from sched_waking's by the CPU mode the
 * kernel puts in the header: user (exclude_kernel), where a tracepoint
 * sample is always the kernel's.
 */
static int open_clock(struct d9_perf *p, int tid, int cpu)
{
	struct perf_event_attr a;
	int fd;

	attr_init(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
	a.sample_period = 1000000000ull / p->sample_hz;
	a.sample_type |= PERF_SAMPLE_CALLCHAIN;
	a.sample_max_stack = DIAL9_STACK_MAX_DEPTH;
	a.exclude_callchain_kernel = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = open_fd(p, &a, tid, cpu);
	return fd < 0 ? fd : set_output(p, fd, cpu);
}

/*
 * @fd's records into @cpu's buffer: the CPU's first event maps it
 * (-ENOBUFS when the locked-memory limit refuses that size).
 */
static int attach(struct d9_perf *p, int fd, int cpu)
{
	size_t len = (size_t)(1 + p->pages) * (size_t)p->page;
	struct epoll_event ev = { .events = EPOLLIN };
	void *m;

	if (p->buf[cpu].fd >= 0)
		return set_output(p, fd, cpu);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return errno == EPERM ? -ENOBUFS : -errno;
	p->buf[cpu].fd = fd;
	p->buf[cpu].mp = m;
	epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

/* The buffer's wake-up: a quarter of it filled. */
static void watermark(const struct d9_perf *p, struct perf_event_attr *a)
{
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)((size_t)p->pages * (size_t)p->page) / 4;
}

/*
 * One inherited event for @tid on @cpu: its thread's names, forks and
 * exits, and its switches unless a CPU-wide event has them.
 */
static int open_event(struct d9_perf *p, int tid, int cpu)
{
	struct perf_event_attr a;
	int fd;

	attr_init(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
	a.sample_id_all = 1;
	a.context_switch = !p->cpu_wide;
	a.comm = 1;
	a.task = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	watermark(p, &a);
	fd = open_fd(p, &a, tid, cpu);
	return fd < 0 ? fd : attach(p, fd, cpu);
}

/*
 * Every switch on @cpu, whole (PERF_RECORD_SWITCH_CPU_WIDE: the other
 * side's pid and tid): CAP_PERFMON, or perf_event_paranoid 0 or less.
 */
static int open_cpu_wide(struct d9_perf *p, int cpu)
{
	struct perf_event_attr a;
	int fd;

	attr_init(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
	a.inherit = 0;
	a.sample_id_all = 1;
	a.context_switch = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	watermark(p, &a);
	fd = open_fd(p, &a, -1, cpu);
	return fd < 0 ? fd : attach(p, fd, cpu);
}

/*
 * Events for every thread of @pid that exists now, named by COMM records;
 * each thread is known to resolve() from here on.
 */
static int open_process(struct d9_perf *p, int pid, uint64_t now)
{
	char path[64];
	struct dirent *de;
	int n = 0, ret = 0;
	struct ptask *t;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		for (int cpu = 0; !ret && cpu < p->ncpu; cpu++) {
			ret = open_event(p, tid, cpu);
			if (ret == -ENODEV || ret == -EINVAL) {
				ret = 0;	/* offline CPU */
				continue;
			}
			if (!ret && p->waking_id >= 0 && !p->waking_wide &&
			    open_waking(p, tid, cpu)) {
				/* Not permitted: switches only, for all. */
				p->waking_id = -1;
				p->waking_note = "wake-ups need CAP_PERFMON or perf_event_paranoid -1";
			}
			if (!ret && p->sample_hz && open_clock(p, tid, cpu)) {
				/* Not permitted: no samples, for all. */
				p->sample_hz = 0;
				p->sample_note = "no CPU samples: perf_event_open refused SW_CPU_CLOCK";
			}
		}
		if (ret == -ESRCH) {		/* exited meanwhile */
			ret = 0;
			continue;
		}
		t = ret ? NULL : d9_perf_task_of(p, (uint32_t)tid, (uint32_t)pid);
		if (!ret && !t)
			ret = -ENOMEM;
		if (t && !d9_perf_read_comm(pid, tid, t->comm, sizeof(t->comm)))
			ret = d9_perf_push_comm(p, (uint32_t)pid, (uint32_t)tid, t->comm,
					now);
		/* its totals as recording starts (d9_perf_final) */
		if (!ret && t) {
			struct d9_rec_schedstat ss;

			if (!d9_sstat_thread(pid, tid, now, true, &ss)) {
				t->prio = ss.prio;
				ret = d9_perf_push_rec(p, &ss, sizeof(ss));
			}
		}
		n++;
	}
	closedir(d);
	return ret ? ret : n ? 0 : -ESRCH;
}

/* Undo open_all(): no events, buffers, threads or records. */
static void close_events(struct d9_perf *p)
{
	for (int cpu = 0; p->buf && cpu < p->ncpu; cpu++) {
		if (p->buf[cpu].mp)
			munmap(p->buf[cpu].mp,
			       (size_t)(1 + p->pages) * (size_t)p->page);
		p->buf[cpu].mp = NULL;
		p->buf[cpu].fd = -1;
	}
	for (size_t i = 0; i < p->nfds; i++)
		close(p->fds[i]);
	p->nfds = p->ntasks = p->npend = 0;
}

static int open_all(struct d9_perf *p, const struct dial9_ksched_opts *o,
		    uint64_t now)
{
	int ret = 0;

	/* every wake-up too, where the tracepoint may be read */
	p->waking_wide = p->cpu_wide && p->waking_id >= 0;
	for (int cpu = 0; p->cpu_wide && !ret && cpu < p->ncpu; cpu++) {
		ret = open_cpu_wide(p, cpu);
		if (!ret && p->waking_wide)
			ret = open_waking(p, -1, cpu);
		if (ret == -ENODEV || ret == -EINVAL)
			ret = 0;	/* offline CPU */
		if (ret == -EACCES || ret == -EPERM) {
			/* not permitted: each thread's own switches */
			close_events(p);
			p->cpu_wide = p->waking_wide = false;
			p->occ_note = "other processes that ran while ours waited are not named (CPU-wide switch events need CAP_PERFMON or perf_event_paranoid 0)";
			ret = 0;
		}
	}
	if (!ret && (o->self || !o->npids))
		ret = open_process(p, getpid(), now);
	for (unsigned int i = 0; !ret && i < o->npids; i++)
		ret = open_process(p, o->pids[i], now);
	return ret;
}

/* The buffer per CPU: ring_size rounded up to a power of two of pages. */
static unsigned int ring_pages(const struct dial9_ksched_opts *o, long page)
{
	uint64_t want = o->ring_size ? o->ring_size : DIAL9_SCHED_RING_DEFAULT;
	unsigned int n = 1;

	while ((uint64_t)n * (uint64_t)page < want && n < (1u << 30))
		n <<= 1;
	return n;
}

int d9_perf_open(struct d9_perf **out, const struct dial9_ksched_opts *o,
		 bool occupants, uint32_t sample_hz, char *why,
		 size_t whylen)
{
	uint64_t now = d9_clock_gettime_ns();
	struct d9_perf *p;
	unsigned int want;
	int ret = 0;

	*out = NULL;
	if (o->system_wide) {
		snprintf(why, whylen, "system-wide recording needs dial9.ko");
		return -EOPNOTSUPP;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->page = sysconf(_SC_PAGESIZE);
	p->ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	p->pages = want = ring_pages(o, p->page);
	p->waking_id = -1;
	p->sample_hz = sample_hz;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->buf = calloc((size_t)p->ncpu, sizeof(*p->buf));
	p->samples = sample_hz ? calloc(1, sizeof(*p->samples)) : NULL;
	p->cpu_wide = occupants;
	p->waiting = occupants ? calloc((size_t)p->ncpu, sizeof(*p->waiting)) :
				 NULL;
	p->idle_out = occupants ? calloc((size_t)p->ncpu, sizeof(*p->idle_out)) :
				  NULL;
	if (o->self || !o->npids)
		p->pend_pids[p->npend_pids++] = getpid();
	for (unsigned int i = 0; i < o->npids && p->npend_pids >= 0; i++)
		if (p->npend_pids < PERF_PENDING_PIDS)
			p->pend_pids[p->npend_pids++] = o->pids[i];
		else
			p->npend_pids = -1;
	if (!p->buf || p->epfd < 0 || (sample_hz && !p->samples) ||
	    (occupants && (!p->waiting || !p->idle_out))) {
		d9_perf_close(p);
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < p->ncpu; cpu++)
		p->buf[cpu].fd = -1;
	if (waking_format(p))
		p->waking_note = "wake-ups need tracefs mounted at /sys/kernel/tracing";
	/* Unprivileged, perf buffers count against the locked-memory limit. */
	while ((ret = open_all(p, o, now)) == -ENOBUFS && p->pages > 1) {
		close_events(p);
		p->pages /= 2;
	}
	if (ret) {
		snprintf(why, whylen, "perf_event_open: %s%s",
			 strerror(ret == -ENOBUFS ? EPERM : -ret),
			 ret == -EACCES || ret == -EPERM ?
			 " (other users' processes need CAP_PERFMON, or a lower kernel.perf_event_paranoid)" :
			 ret == -ENOBUFS ? " (mmap: kernel.perf_event_mlock_kb, RLIMIT_MEMLOCK)" : "");
		d9_perf_close(p);
		return ret;
	}
	/* What the records cannot tell (the segment's sched_note). */
	if (p->waking_note)
		snprintf(p->note, sizeof(p->note), "%s: waits after a wake-up are unknown",
			 p->waking_note);
	else if (p->waking_wide)
		snprintf(p->note, sizeof(p->note), "every wake-up and switch of each CPU is read (CPU-wide events): the waker of a wake-up from an interrupt is the task it interrupted");
	else
		snprintf(p->note, sizeof(p->note), "wake-ups by other processes or by interrupts on idle CPUs are not seen: waits after them are unknown");
	/* perf_event_exit_task() detaches a task's events in do_exit() */
	snprintf(p->note + strlen(p->note), sizeof(p->note) - strlen(p->note),
		 "; a task is not followed past its exit record: a wait between it and its last switch is missing");
	if (p->occ_note)
		snprintf(p->note + strlen(p->note),
			 sizeof(p->note) - strlen(p->note), "; %s",
			 p->occ_note);
	if (p->sample_note)
		snprintf(p->note + strlen(p->note),
			 sizeof(p->note) - strlen(p->note), "; %s",
			 p->sample_note);
	else if (p->sample_hz)
		snprintf(p->note + strlen(p->note),
			 sizeof(p->note) - strlen(p->note),
			 "; CPU samples of user time only");
	if (p->pages < want)
		snprintf(p->note + strlen(p->note),
			 sizeof(p->note) - strlen(p->note),
			 "; ring %lu KiB per CPU, not %lu (locked-memory limit)",
			 (unsigned long)p->pages * (unsigned long)p->page / 1024,
			 (unsigned long)want * (unsigned long)p->page / 1024);
	*out = p;
	return 0;
}

void d9_perf_close(struct d9_perf *p)
{
	if (!p)
		return;
	close_events(p);
	if (p->epfd >= 0)
		close(p->epfd);
	free(p->buf);
	free(p->fds);
	free(p->tasks);
	free(p->pending);
	free(p->waiting);
	free(p->idle_out);
	if (p->samples)
		free(p->samples->buf);
	free(p->samples);
	free(p);
}

bool d9_perf_samples(const struct d9_perf *p)
{
	return p->sample_hz;
}

const char *d9_perf_note(const struct d9_perf *p)
{
	return p->note;
}

int d9_perf_fd(const struct d9_perf *p)
{
	return p->epfd;
}

uint64_t d9_perf_lost(const struct d9_perf *p)
{
	return p->lost;
}
