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

#include "sched/sched.h"

/*
 * What resolve() knows of one of the targets' threads: its state since
 * its last switch, and when it was last woken (or created) since its last
 * switch-in.
 */
enum { PT_UNSEEN, PT_RUNNING, PT_PREEMPTED, PT_BLOCKED };

struct ptask {
	uint32_t tid, tgid;
	int state;
	uint64_t since;			/* its last switch */
	uint64_t last_in;		/* its last switch-in */
	uint64_t woken;			/* the start of its wait, or 0 */
	char comm[16];
};

struct pbuf {
	int fd;				/* the CPU's first event: owns the mmap */
	struct perf_event_mmap_page *mp;
	uint64_t head;			/* data_head when this read began */
};

/* A fork seen while draining, turned into a COMM record by resolve(). */
struct pfork {
	struct dial9_rec_header hdr;	/* type D9_REC_PERF_FORK */
	uint32_t pid, tid, ptid, pad;
};

struct dial9_perf {
	int epfd;
	int waking_id;			/* sched_waking tracepoint, or -1 */
	int waking_pid_off, waking_cpu_off;
	const char *waking_note;	/* why there are no wake-ups */
	char note[256];
	long page;
	unsigned int pages;		/* data pages per CPU buffer, 2^n */
	int ncpu;
	struct pbuf *buf;		/* [ncpu] */
	int *fds;			/* every event */
	size_t nfds, capfds;
	uint64_t lost;
	struct ptask *tasks;
	size_t ntasks, captasks;
	struct dial9_rec_switch *pending;	/* one read's records */
	size_t npend, cappend;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct ptask *task_find(struct dial9_perf *p, uint32_t tid)
{
	for (size_t i = 0; i < p->ntasks; i++)
		if (p->tasks[i].tid == tid)
			return &p->tasks[i];
	return NULL;
}

/* The thread @tid of @tgid, known from now on; NULL without memory. */
static struct ptask *task_of(struct dial9_perf *p, uint32_t tid,
			     uint32_t tgid)
{
	struct ptask *t = task_find(p, tid);

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
	return t;
}

static void task_forget(struct dial9_perf *p, uint32_t tid)
{
	struct ptask *t = task_find(p, tid);

	if (t)
		*t = p->tasks[--p->ntasks];
}

static int push_rec(struct dial9_perf *p, const void *rec, size_t size)
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

static int push_comm(struct dial9_perf *p, uint32_t tgid, uint32_t tid,
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
	return push_rec(p, &c, sizeof(c));
}

static int read_comm(int tgid, int tid, char *name, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", tgid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, name, len - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	name[n] = 0;
	if (name[n - 1] == '\n')
		name[n - 1] = 0;
	return 0;
}

static int add_fd(struct dial9_perf *p, int fd)
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
static int waking_format(struct dial9_perf *p)
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

/* The wake-ups @tid performs on @cpu, into the CPU's buffer. */
static int open_waking(struct dial9_perf *p, int tid, int cpu)
{
	struct perf_event_attr a;
	int fd, ret;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = (uint64_t)p->waking_id;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_RAW;
	a.inherit = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	fd = (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = add_fd(p, fd);
	if (ret) {
		close(fd);
		return ret;
	}
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->buf[cpu].fd) ? -errno : 0;
}

/*
 * One inherited context-switch event for @tid on @cpu.  The CPU's first
 * maps its buffer: -ENOBUFS when the locked-memory limit refuses that size.
 */
static int open_event(struct dial9_perf *p, int tid, int cpu)
{
	size_t len = (size_t)(1 + p->pages) * (size_t)p->page;
	struct perf_event_attr a;
	int fd, ret;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a.sample_id_all = 1;
	a.context_switch = 1;
	a.comm = 1;
	a.task = 1;
	a.inherit = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(len - (size_t)p->page) / 4;
	fd = (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = add_fd(p, fd);
	if (ret) {
		close(fd);
		return ret;
	}
	if (p->buf[cpu].fd < 0) {
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, 0);
		struct epoll_event ev = { .events = EPOLLIN };

		if (m == MAP_FAILED)
			return errno == EPERM ? -ENOBUFS : -errno;
		p->buf[cpu].fd = fd;
		p->buf[cpu].mp = m;
		epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev);
		return 0;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->buf[cpu].fd))
		return -errno;
	return 0;
}

/*
 * Events for every thread of @pid that exists now, named by COMM records;
 * each thread is known to resolve() from here on.
 */
static int open_process(struct dial9_perf *p, int pid, uint64_t now)
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
			if (!ret && p->waking_id >= 0 &&
			    open_waking(p, tid, cpu)) {
				/* Not permitted: switches only, for all. */
				p->waking_id = -1;
				p->waking_note = "wake-ups need CAP_PERFMON or perf_event_paranoid -1";
			}
		}
		if (ret == -ESRCH) {		/* exited meanwhile */
			ret = 0;
			continue;
		}
		t = ret ? NULL : task_of(p, (uint32_t)tid, (uint32_t)pid);
		if (!ret && !t)
			ret = -ENOMEM;
		if (t && !read_comm(pid, tid, t->comm, sizeof(t->comm)))
			ret = push_comm(p, (uint32_t)pid, (uint32_t)tid, t->comm,
					now);
		n++;
	}
	closedir(d);
	return ret ? ret : n ? 0 : -ESRCH;
}

/* Undo open_all(): no events, buffers, threads or records. */
static void close_events(struct dial9_perf *p)
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

static int open_all(struct dial9_perf *p, const struct dial9_ksched_opts *o,
		    uint64_t now)
{
	int ret = 0;

	if (o->self || !o->npids)
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

int dial9_perf_open(struct dial9_perf **out, const struct dial9_ksched_opts *o,
		    char *why, size_t whylen)
{
	uint64_t now = mono_ns();
	struct dial9_perf *p;
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
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->buf = calloc((size_t)p->ncpu, sizeof(*p->buf));
	if (!p->buf || p->epfd < 0) {
		dial9_perf_close(p);
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
		dial9_perf_close(p);
		return ret;
	}
	/* What the records cannot tell (the segment's sched_note). */
	if (p->waking_note)
		snprintf(p->note, sizeof(p->note), "%s: waits after a wake-up are unknown",
			 p->waking_note);
	else
		snprintf(p->note, sizeof(p->note), "wake-ups by other processes or by interrupts on idle CPUs are not seen: waits after them are unknown");
	if (p->pages < want)
		snprintf(p->note + strlen(p->note),
			 sizeof(p->note) - strlen(p->note),
			 "; ring %lu KiB per CPU, not %lu (locked-memory limit)",
			 (unsigned long)p->pages * (unsigned long)p->page / 1024,
			 (unsigned long)want * (unsigned long)p->page / 1024);
	*out = p;
	return 0;
}

void dial9_perf_close(struct dial9_perf *p)
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
	free(p);
}

const char *dial9_perf_note(const struct dial9_perf *p)
{
	return p->note;
}

int dial9_perf_fd(const struct dial9_perf *p)
{
	return p->epfd;
}

uint64_t dial9_perf_lost(const struct dial9_perf *p)
{
	return p->lost;
}

/* The sample_id trailer: pid, tid, time, cpu (PERF_SAMPLE_TID|TIME|CPU). */
struct perf_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

/*
 * A sched_waking sample: pid/tid, time, cpu, then the raw tracepoint data.
 * resolve() fills in the woken task's process when it is one of ours.
 */
static int perf_waking(struct dial9_perf *p, const unsigned char *r,
		       uint16_t size)
{
	struct dial9_rec_wake wk;
	struct perf_id id;
	uint32_t raw_size;
	int32_t pid, cpu;
	const unsigned char *raw;

	if (p->waking_id < 0 ||
	    size < sizeof(struct perf_event_header) + sizeof(id) + 4)
		return 0;
	memcpy(&id, r + sizeof(struct perf_event_header), sizeof(id));
	memcpy(&raw_size, r + sizeof(struct perf_event_header) + sizeof(id), 4);
	raw = r + sizeof(struct perf_event_header) + sizeof(id) + 4;
	if (raw + raw_size > r + size ||
	    (uint32_t)p->waking_pid_off + 4 > raw_size ||
	    (uint32_t)p->waking_cpu_off + 4 > raw_size)
		return 0;
	memcpy(&pid, raw + p->waking_pid_off, 4);
	memcpy(&cpu, raw + p->waking_cpu_off, 4);
	memset(&wk, 0, sizeof(wk));
	wk.hdr.type = DIAL9_REC_WAKING;
	wk.hdr.size = sizeof(wk);
	wk.hdr.cpu = (uint16_t)id.cpu;
	wk.hdr.time_ns = id.time;
	wk.tid = (uint32_t)pid;
	wk.waker_tid = id.tid;
	wk.waker_tgid = id.pid;
	wk.hdr.flags = DIAL9_WAKE_WAKER_TARGET;
	wk.target_cpu = (uint32_t)cpu;
	return push_rec(p, &wk, sizeof(wk));
}

/* What the kernel wrote, as dial9 records (resolve() completes them). */
static int perf_record(struct dial9_perf *p, const unsigned char *r,
		       uint16_t size)
{
	struct perf_event_header h;
	struct dial9_rec_switch sw;
	struct perf_id id;

	memcpy(&h, r, sizeof(h));
	if (h.type == PERF_RECORD_LOST) {
		struct dial9_rec_lost lo;
		uint64_t v[2];	/* id, lost */

		if (size < sizeof(h) + sizeof(v))
			return 0;
		memcpy(v, r + sizeof(h), sizeof(v));
		memset(&lo, 0, sizeof(lo));
		lo.hdr.type = DIAL9_REC_LOST;
		lo.hdr.size = sizeof(lo);
		/* drain_buf() dates it just before the buffer's next record */
		lo.hdr.time_ns = mono_ns();
		lo.count = v[1];
		p->lost += v[1];
		return push_rec(p, &lo, sizeof(lo));
	}
	if (h.type == PERF_RECORD_SAMPLE)
		return perf_waking(p, r, size);
	if (size < sizeof(h) + sizeof(id))
		return 0;
	memcpy(&id, r + size - sizeof(id), sizeof(id));
	if (h.type == PERF_RECORD_COMM && size >= sizeof(h) + 8 + sizeof(id)) {
		char name[17] = "";
		size_t max = size - sizeof(h) - 8 - sizeof(id);

		memcpy(name, r + sizeof(h) + 8, max < 16 ? max : 16);
		return push_comm(p, id.pid, id.tid, name, id.time);
	}
	if (h.type == PERF_RECORD_FORK &&
	    size >= sizeof(h) + 16 + 8 + sizeof(id)) {
		uint32_t v[4];	/* pid, ppid, tid, ptid */
		struct pfork f;

		memcpy(v, r + sizeof(h), sizeof(v));
		memset(&f, 0, sizeof(f));
		f.hdr.type = D9_REC_PERF_FORK;
		f.hdr.size = sizeof(f);
		f.hdr.cpu = (uint16_t)id.cpu;
		memcpy(&f.hdr.time_ns, r + sizeof(h) + sizeof(v), 8);
		f.pid = v[0];
		f.tid = v[2];
		f.ptid = v[3];
		return push_rec(p, &f, sizeof(f));
	}
	if (h.type == PERF_RECORD_EXIT) {
		struct dial9_rec_exit ex;

		memset(&ex, 0, sizeof(ex));
		ex.hdr.type = DIAL9_REC_EXIT;
		ex.hdr.size = sizeof(ex);
		ex.hdr.cpu = (uint16_t)id.cpu;
		ex.hdr.time_ns = id.time;
		ex.tid = id.tid;
		ex.tgid = id.pid;
		if (ex.tid == ex.tgid)
			ex.hdr.flags = DIAL9_EXIT_GROUP_DEAD;
		return push_rec(p, &ex, sizeof(ex));
	}
	if (h.type != PERF_RECORD_SWITCH)
		return 0;
	memset(&sw, 0, sizeof(sw));
	sw.hdr.type = DIAL9_REC_SWITCH;
	sw.hdr.size = sizeof(sw);
	sw.hdr.cpu = (uint16_t)id.cpu;
	sw.hdr.time_ns = id.time;
	if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
		bool preempted = h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;

		sw.prev_tid = id.tid;
		sw.prev_tgid = id.pid;
		sw.next_tid = sw.next_tgid = DIAL9_TID_REDACTED;
		sw.prev_state = preempted ? DIAL9_STATE_RUNNING :
					    DIAL9_STATE_SLEEPING;
		sw.hdr.flags |= DIAL9_SWITCH_PREV_TARGET;
		if (preempted)
			sw.hdr.flags |= DIAL9_SWITCH_PREV_RUNNABLE;
	} else {
		sw.prev_tid = sw.prev_tgid = DIAL9_TID_REDACTED;
		sw.next_tid = id.tid;
		sw.next_tgid = id.pid;
		sw.hdr.flags |= DIAL9_SWITCH_NEXT_TARGET;
	}
	return push_rec(p, &sw, sizeof(sw));
}

/*
 * The records of @cpu's buffer up to the head it had when this read began.
 * The kernel writes a LOST record where it dropped records: it is dated
 * just before the buffer's next record (or now), so that its window is
 * from the CPU's last record before it to the first after it.
 */
static int drain_buf(struct dial9_perf *p, int cpu)
{
	struct pbuf *b = &p->buf[cpu];
	unsigned char *data = (unsigned char *)b->mp + p->page;
	uint64_t size = (uint64_t)p->pages * (uint64_t)p->page;
	uint64_t head = b->head;
	uint64_t tail = b->mp->data_tail;
	_Alignas(8) unsigned char rec[512];
	size_t lost = SIZE_MAX, n;
	int ret = 0;

	while (tail < head && !ret) {
		struct perf_event_header h;

		for (size_t i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = data[(tail + i) % size];
		if (h.size < sizeof(h) || h.size > sizeof(rec))
			break;	/* malformed: drop the rest of this buffer */
		/* A record may wrap at the end of the buffer: copy it. */
		for (uint16_t i = 0; i < h.size; i++)
			rec[i] = data[(tail + i) % size];
		n = p->npend;
		ret = perf_record(p, rec, h.size);
		tail += h.size;
		if (ret || p->npend == n)
			continue;
		if (p->pending[n].hdr.type == DIAL9_REC_LOST) {
			p->pending[n].hdr.cpu = (uint16_t)cpu;
			if (lost == SIZE_MAX)
				lost = n;
		} else if (lost != SIZE_MAX) {
			uint64_t t = p->pending[n].hdr.time_ns;

			for (size_t i = lost; i < n; i++)
				if (p->pending[i].hdr.type == DIAL9_REC_LOST)
					p->pending[i].hdr.time_ns = t ? t - 1 : 0;
			lost = SIZE_MAX;
		}
	}
	__atomic_store_n(&b->mp->data_tail, head, __ATOMIC_RELEASE);
	return ret;
}

/* A new thread: named as the thread that created it, until it renames. */
static void resolve_fork(struct dial9_perf *p, struct dial9_rec_switch *slot)
{
	struct pfork f;
	struct dial9_rec_comm *c = (void *)slot;
	struct ptask *t, *parent;
	char name[16] = "";

	memcpy(&f, slot, sizeof(f));
	parent = task_find(p, f.ptid);
	if (parent)
		memcpy(name, parent->comm, sizeof(name));
	else if (read_comm((int)f.pid, (int)f.tid, name, sizeof(name)))
		name[0] = 0;
	t = task_of(p, f.tid, f.pid);
	if (t) {
		memcpy(t->comm, name, sizeof(t->comm));
		t->state = PT_UNSEEN;
		t->woken = f.hdr.time_ns;	/* its first wait begins */
	}
	memset(slot, 0, sizeof(*slot));
	if (!name[0]) {
		slot->hdr.type = DIAL9_REC_PAD;
		return;
	}
	c->hdr.type = DIAL9_REC_COMM;
	c->hdr.size = sizeof(*c);
	c->hdr.cpu = f.hdr.cpu;
	c->hdr.time_ns = f.hdr.time_ns;
	c->tid = f.tid;
	c->tgid = f.pid;
	memcpy(c->comm, name, sizeof(c->comm) - 1);
}

/* The switch-in of @t at @now: the wait it ends, if its start was seen. */
static void resolve_in(struct ptask *t, struct dial9_rec_switch *sw,
		       uint64_t now)
{
	uint64_t from = 0;

	if (t->state == PT_PREEMPTED)
		from = t->since;
	else if (t->state == PT_BLOCKED && t->woken)
		/* woken before its switch-out ended: from the switch-out */
		from = t->woken > t->since ? t->woken : t->since;
	else if (t->state == PT_UNSEEN && t->woken)
		from = t->woken;
	if (from && now >= from) {
		sw->next_wait_ns = now - from;
		sw->hdr.flags |= DIAL9_SWITCH_WAIT_VALID;
	}
	t->state = PT_RUNNING;
	t->since = t->last_in = now;
	t->woken = 0;
}

/*
 * The threads' states over one read's records, in time order: the waits
 * of switch-ins, the woken task's process, new threads' names.
 */
static int resolve(struct dial9_perf *p, struct dial9_rec_switch *slot)
{
	struct dial9_rec_header *h = &slot->hdr;
	struct dial9_rec_wake *wk = (void *)slot;
	struct dial9_rec_comm *c = (void *)slot;
	struct ptask *t;

	switch (h->type) {
	case D9_REC_PERF_FORK:
		resolve_fork(p, slot);
		return 0;
	case DIAL9_REC_COMM:
		t = task_of(p, c->tid, c->tgid);
		if (!t)
			return -ENOMEM;
		memcpy(t->comm, c->comm, sizeof(t->comm));
		return 0;
	case DIAL9_REC_EXIT:
		task_forget(p, ((struct dial9_rec_exit *)(void *)slot)->tid);
		return 0;
	case DIAL9_REC_WAKING:
		t = task_find(p, wk->tid);
		if (!t)
			return 0;	/* not one of ours */
		wk->tgid = t->tgid;
		wk->hdr.flags |= DIAL9_WAKE_TASK_TARGET;
		/* An older waking was published late: its wait is over. */
		if (h->time_ns >= t->last_in)
			t->woken = h->time_ns;
		return 0;
	case DIAL9_REC_SWITCH:
		if (h->flags & DIAL9_SWITCH_NEXT_TARGET) {
			t = task_of(p, slot->next_tid, slot->next_tgid);
			if (!t)
				return -ENOMEM;
			resolve_in(t, slot, h->time_ns);
			return 0;
		}
		t = task_of(p, slot->prev_tid, slot->prev_tgid);
		if (!t)
			return -ENOMEM;
		t->state = h->flags & DIAL9_SWITCH_PREV_RUNNABLE ?
			   PT_PREEMPTED : PT_BLOCKED;
		t->since = h->time_ns;
		return 0;
	}
	return 0;
}

static int cmp_time(const void *a, const void *b)
{
	const struct dial9_rec_header *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

int dial9_perf_read(struct dial9_perf *p,
		    int (*push)(void *ctx, const struct dial9_rec_header *rec),
		    void *ctx)
{
	int ret = 0;

	/*
	 * Every buffer's head first, then the records up to them: a record
	 * older than one read from another CPU is then rarely left for the
	 * next read (where a waking would come after the switch-in it
	 * explains, which then has no wait).
	 */
	for (int cpu = 0; cpu < p->ncpu; cpu++)
		if (p->buf[cpu].mp)
			p->buf[cpu].head = __atomic_load_n(&p->buf[cpu].mp->data_head,
							   __ATOMIC_ACQUIRE);
	for (int cpu = 0; !ret && cpu < p->ncpu; cpu++)
		if (p->buf[cpu].mp)
			ret = drain_buf(p, cpu);
	/* One merged, time-ordered batch per read. */
	if (p->npend > 1)
		qsort(p->pending, p->npend, sizeof(p->pending[0]), cmp_time);
	for (size_t i = 0; !ret && i < p->npend; i++) {
		ret = resolve(p, &p->pending[i]);
		if (!ret && p->pending[i].hdr.type != DIAL9_REC_PAD)
			ret = push(ctx, &p->pending[i].hdr);
	}
	p->npend = 0;
	return ret;
}
