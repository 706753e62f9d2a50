// SPDX-License-Identifier: MIT
/*
 * ksched_perf.c - scheduler records from perf_event_open, for hosts without
 * dial9.ko.
 *
 * Software dummy events with context_switch set: the kernel writes a
 * PERF_RECORD_SWITCH when a monitored thread goes on and off a CPU, with a
 * flag when it was preempted (still runnable).  One event per existing
 * thread and CPU, inherited by the threads and processes they create, all
 * of a CPU's events writing into one buffer (PERF_EVENT_IOC_SET_OUTPUT);
 * task and comm records name new threads and tell when they exit.  That
 * works for one's own threads at perf_event_paranoid 2 (the default), with
 * no tracefs and no capability.  What it cannot see: the other side of a
 * switch, and so how long a woken thread waited on the runqueue — only
 * waits after a preemption are known (switch-out to switch-in); migrations;
 * threads that existed before and were created by threads outside the
 * targets.  Where the sched_waking tracepoint may be read (tracefs mounted,
 * and CAP_PERFMON or perf_event_paranoid -1, as raw tracepoint data needs),
 * the wake-ups our threads perform are recorded too (who woke whom).
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

#include "ksched_internal.h"

#define PERF_PAGES 32	/* data pages per CPU buffer: 128 KiB */

/* Per-thread state: when it was preempted (its wait began), if it was. */
struct ptask {
	uint32_t tid, tgid;
	uint64_t runnable_since;
};

struct pbuf {
	int fd;				/* the CPU's first event: owns the mmap */
	struct perf_event_mmap_page *mp;
};

struct dial9_perf {
	int epfd;
	int waking_id;			/* sched_waking tracepoint, or -1 */
	int waking_pid_off, waking_cpu_off;
	const char *waking_note;	/* why there are no wake-ups */
	long page;
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

static struct ptask *task_of(struct dial9_perf *p, uint32_t tid)
{
	for (size_t i = 0; i < p->ntasks; i++)
		if (p->tasks[i].tid == tid)
			return &p->tasks[i];
	if (p->ntasks == p->captasks) {
		size_t cap = p->captasks ? p->captasks * 2 : 64;
		struct ptask *nt = realloc(p->tasks, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		p->tasks = nt;
		p->captasks = cap;
	}
	p->tasks[p->ntasks].tid = tid;
	p->tasks[p->ntasks].tgid = 0;
	p->tasks[p->ntasks].runnable_since = 0;
	return &p->tasks[p->ntasks++];
}

static void task_forget(struct dial9_perf *p, uint32_t tid)
{
	for (size_t i = 0; i < p->ntasks; i++)
		if (p->tasks[i].tid == tid) {
			p->tasks[i] = p->tasks[--p->ntasks];
			return;
		}
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

/* One inherited context-switch event for @tid on @cpu. */
static int open_event(struct dial9_perf *p, int tid, int cpu)
{
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
	a.wakeup_watermark = (uint32_t)(PERF_PAGES * p->page / 4);
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
		void *m = mmap(NULL, (size_t)((1 + PERF_PAGES) * p->page),
			       PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		struct epoll_event ev = { .events = EPOLLIN };

		if (m == MAP_FAILED)
			return -errno;
		p->buf[cpu].fd = fd;
		p->buf[cpu].mp = m;
		epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev);
		return 0;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->buf[cpu].fd))
		return -errno;
	return 0;
}

/* Events for every thread of @pid that exists now, named by COMM records. */
static int open_process(struct dial9_perf *p, int pid, uint64_t now)
{
	char path[64], name[32];
	struct dirent *de;
	int n = 0, ret = 0;
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
		if (!ret && !read_comm(pid, tid, name, sizeof(name)))
			ret = push_comm(p, (uint32_t)pid, (uint32_t)tid, name,
					now);
		n++;
	}
	closedir(d);
	return ret ? ret : n ? 0 : -ESRCH;
}

int dial9_perf_open(struct dial9_perf **out, const struct dial9_ksched_opts *o,
		    char *why, size_t whylen)
{
	uint64_t now = mono_ns();
	struct dial9_perf *p;
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
	if (o->self || !o->npids)
		ret = open_process(p, getpid(), now);
	for (unsigned int i = 0; !ret && i < o->npids; i++)
		ret = open_process(p, o->pids[i], now);
	if (ret) {
		snprintf(why, whylen, "perf_event_open: %s%s", strerror(-ret),
			 ret == -EACCES || ret == -EPERM ?
			 " (other users' processes need CAP_PERFMON, or a lower kernel.perf_event_paranoid)" : "");
		dial9_perf_close(p);
		return ret;
	}
	*out = p;
	return 0;
}

void dial9_perf_close(struct dial9_perf *p)
{
	if (!p)
		return;
	for (int cpu = 0; p->buf && cpu < p->ncpu; cpu++)
		if (p->buf[cpu].mp)
			munmap(p->buf[cpu].mp,
			       (size_t)((1 + PERF_PAGES) * p->page));
	for (size_t i = 0; i < p->nfds; i++)
		close(p->fds[i]);
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
	return p->waking_note ? p->waking_note : "";
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

/* A sched_waking sample: pid/tid, time, cpu, then the raw tracepoint data. */
static int perf_waking(struct dial9_perf *p, const unsigned char *r,
		       uint16_t size)
{
	struct dial9_rec_wake wk;
	struct perf_id id;
	uint32_t raw_size;
	int32_t pid, cpu;
	const unsigned char *raw;
	struct ptask *t;

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
	/* The woken task's process is known only if it is one of ours. */
	for (size_t i = 0; i < p->ntasks; i++)
		if (p->tasks[i].tid == (uint32_t)pid)
			wk.tgid = p->tasks[i].tgid;
	wk.waker_tid = id.tid;
	wk.waker_tgid = id.pid;
	wk.hdr.flags = DIAL9_WAKE_WAKER_TARGET | (wk.tgid ? DIAL9_WAKE_TASK_TARGET : 0);
	wk.target_cpu = (uint32_t)cpu;
	t = task_of(p, id.tid);
	if (t)
		t->tgid = id.pid;
	return push_rec(p, &wk, sizeof(wk));
}

static int perf_record(struct dial9_perf *p, const unsigned char *r,
		       uint16_t size)
{
	struct perf_event_header h;
	struct dial9_rec_switch sw;
	struct perf_id id;
	struct ptask *t;

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
		task_forget(p, id.tid);
		return push_rec(p, &ex, sizeof(ex));
	}
	if (h.type != PERF_RECORD_SWITCH)
		return 0;
	t = task_of(p, id.tid);
	if (!t)
		return -ENOMEM;
	t->tgid = id.pid;
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
		t->runnable_since = preempted ? id.time : 0;
	} else {
		sw.prev_tid = sw.prev_tgid = DIAL9_TID_REDACTED;
		sw.next_tid = id.tid;
		sw.next_tgid = id.pid;
		sw.hdr.flags |= DIAL9_SWITCH_NEXT_TARGET;
		/* Only a preempted thread's wait is known here. */
		if (t->runnable_since && id.time >= t->runnable_since) {
			sw.next_wait_ns = id.time - t->runnable_since;
			sw.hdr.flags |= DIAL9_SWITCH_WAIT_VALID;
		}
		t->runnable_since = 0;
	}
	return push_rec(p, &sw, sizeof(sw));
}

static int drain_buf(struct dial9_perf *p, struct perf_event_mmap_page *mp)
{
	unsigned char *data = (unsigned char *)mp + p->page;
	uint64_t size = (uint64_t)PERF_PAGES * (uint64_t)p->page;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	_Alignas(8) unsigned char rec[512];
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
		ret = perf_record(p, rec, h.size);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
	return ret;
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

	for (int cpu = 0; !ret && cpu < p->ncpu; cpu++)
		if (p->buf[cpu].mp)
			ret = drain_buf(p, p->buf[cpu].mp);
	/* One merged, time-ordered batch per read. */
	qsort(p->pending, p->npend, sizeof(p->pending[0]), cmp_time);
	for (size_t i = 0; !ret && i < p->npend; i++)
		ret = push(ctx, &p->pending[i].hdr);
	p->npend = 0;
	return ret;
}
