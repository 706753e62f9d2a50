// SPDX-License-Identifier: MIT
/*
 * ksched.c - the kernel's scheduler records, in time order.
 *
 * The module backend maps each CPU's ring of /dev/dial9, copies new records
 * out as soon as it sees them (so the kernel never waits for our merge), and
 * merges the per-CPU streams by timestamp.  Each CPU's stream is already in
 * time order; across CPUs a record can be published slightly after a later
 * one, so only records older than the caller's horizon are released.
 *
 * The rings, the inboxes and the reader thread are ksched_ring.c.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/dial9.h>

#include "dial9.h"
#include "ksched/ksched.h"

/* Append @s to the string in @d (replace it if @reset), truncating. */
static void str_append(char *d, size_t n, const char *s, bool reset)
{
	size_t len = reset ? 0 : strnlen(d, n - 1);
	size_t add = strnlen(s, n - 1 - len);

	memcpy(d + len, s, add);
	d[len + add] = 0;
}



static int ksched_module_open(struct dial9_ksched *k,
			      const struct dial9_ksched_opts *o)
{
	struct dial9_session_config cfg = { .size = sizeof(cfg) };
	struct dial9_version v;
	unsigned int cpu;

	k->fd = open(DIAL9_DEVICE, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		int e = errno;

		snprintf(k->reason, sizeof(k->reason), "%s: %s%s",
			 DIAL9_DEVICE, strerror(e),
			 e == ENOENT ? " (dial9.ko not loaded)" :
			 e == EACCES ? " (not in the device's group)" :
			 e == EMFILE ? " (this process's open files, or this user's dial9.ko sessions: the module's user_sessions)" :
			 e == EDQUOT ? " (this user's dial9.ko memory: the module's user_ring_kb)" :
			 e == ENOMEM ? " (no room in the memory cgroup)" : "");
		return -e;
	}
	if (ioctl(k->fd, DIAL9_IOC_GET_VERSION, &v)) {
		snprintf(k->reason, sizeof(k->reason), "%s: version: %s",
			 DIAL9_DEVICE, strerror(errno));
		return -errno;
	}
	if (v.abi_version != DIAL9_ABI_VERSION) {
		snprintf(k->reason, sizeof(k->reason),
			 "%s: ABI %u, this library speaks %u", DIAL9_DEVICE,
			 v.abi_version, DIAL9_ABI_VERSION);
		return -EPROTO;
	}
	k->ignore_settle_ns = v.features & DIAL9_FEAT_IGNORE_SYNC ?
			      KS_IGNORE_SETTLE_SYNC_NS : KS_IGNORE_SETTLE_NS;
	cfg.ring_size = o->ring_size;
	if (o->system_wide)
		cfg.flags |= DIAL9_CFG_SYSTEM_WIDE;
	if (!o->self && (o->npids || o->system_wide))
		cfg.flags |= DIAL9_CFG_NO_SELF;
	/* An older module has no stacks: record without them, and say so. */
	if (k->stacks && (v.features & DIAL9_FEAT_STACKS))
		cfg.flags |= DIAL9_CFG_STACKS;
	else if (k->stacks)
		snprintf(k->reason, sizeof(k->reason),
			 "no stacks: this dial9.ko does not record them");
	/*
	 * What ran on a CPU while a recorded thread waited there (the
	 * culprits of `dial9 sched`); an older module cannot: the trace
	 * then has no sched.occupants event, and its readers say so.
	 */
	if (k->occupants && (v.features & DIAL9_FEAT_OCCUPANTS))
		cfg.flags |= DIAL9_CFG_OCCUPANTS;
	/* The same for samples. */
	if (k->sample_hz && (v.features & DIAL9_FEAT_SAMPLES)) {
		cfg.sample_hz = k->sample_hz;
	} else if (k->sample_hz) {
		k->sample_hz = 0;
		str_append(k->reason, sizeof(k->reason), *k->reason ? "; " : "",
			   false);
		str_append(k->reason, sizeof(k->reason),
			   "no CPU samples: this dial9.ko does not take them",
			   false);
	}
	if (ioctl(k->fd, DIAL9_IOC_CONFIGURE, &cfg)) {
		snprintf(k->reason, sizeof(k->reason), "%s: configure: %s%s",
			 DIAL9_DEVICE, strerror(errno),
			 errno == EPERM ? " (system-wide needs CAP_PERFMON)" : "");
		return -errno;
	}
	for (unsigned int i = 0; i < o->npids; i++) {
		struct dial9_target t = {
			.size = sizeof(t), .pid = (uint32_t)o->pids[i],
			.flags = o->children ? DIAL9_TARGET_CHILDREN : 0,
		};

		if (ioctl(k->fd, DIAL9_IOC_ADD_TARGET, &t)) {
			snprintf(k->reason, sizeof(k->reason),
				 "%s: process %d: %s%s", DIAL9_DEVICE,
				 o->pids[i], strerror(errno),
				 errno == EPERM ? " (other processes need CAP_PERFMON)" : "");
			return -errno;
		}
	}
	k->ncpu = v.nr_cpu_ids;
	k->ctrl = calloc(k->ncpu, sizeof(*k->ctrl));
	k->data = calloc(k->ncpu, sizeof(*k->data));
	k->q = calloc(k->ncpu, sizeof(*k->q));
	k->lost_seen = calloc(k->ncpu, sizeof(*k->lost_seen));
	k->filtered = calloc(k->ncpu, sizeof(*k->filtered));
	k->ntaken = calloc(k->ncpu, sizeof(*k->ntaken));
	if (!k->ctrl || !k->data || !k->q || !k->lost_seen || !k->filtered ||
	    !k->ntaken)
		return -ENOMEM;
	for (cpu = 0; cpu < k->ncpu; cpu++) {
		void *c = mmap(NULL, (size_t)k->page, PROT_READ | PROT_WRITE,
			       MAP_SHARED, k->fd, (off_t)DIAL9_MMAP_CTRL(cpu));

		if (c == MAP_FAILED) {
			if (errno == ENODEV)	/* not a possible CPU */
				continue;
			snprintf(k->reason, sizeof(k->reason), "%s: mmap: %s",
				 DIAL9_DEVICE, strerror(errno));
			return -errno;
		}
		k->ctrl[cpu] = c;
		/*
		 * Populated now: a page first touched by the reader would be
		 * a page fault, which waits for the mmap lock, and a thread
		 * of the application preempted while it holds that (mmap,
		 * munmap, a new thread's stack) would hold the reader off
		 * for as long as the application's load keeps it off the
		 * CPU (300 ms seen at 64 ping-pong pairs on 2 CPUs).
		 */
		c = mmap(NULL, k->ctrl[cpu]->data_size, PROT_READ,
			 MAP_SHARED | MAP_POPULATE, k->fd,
			 (off_t)DIAL9_MMAP_DATA(cpu));
		if (c == MAP_FAILED) {
			snprintf(k->reason, sizeof(k->reason), "%s: mmap: %s",
				 DIAL9_DEVICE, strerror(errno));
			return -errno;
		}
		k->data[cpu] = c;
		/* Wake a poller when a quarter of a ring is used. */
		k->ctrl[cpu]->watermark = k->ctrl[cpu]->data_size / 4;
	}
	if (ioctl(k->fd, DIAL9_IOC_ENABLE, 0)) {
		snprintf(k->reason, sizeof(k->reason), "%s: enable: %s",
			 DIAL9_DEVICE, strerror(errno));
		return -errno;
	}
	k->backend = "dial9.ko";
	k->reason[0] = 0;
	return 0;
}

/*
 * Undo ksched_module_open(), failed or not, and free the queues: @k is as
 * it was before (the perf and schedstat backends may open next).
 */
static void ksched_module_reset(struct dial9_ksched *k)
{
	for (unsigned int cpu = 0; k->ctrl && cpu < k->ncpu; cpu++) {
		if (k->data && k->data[cpu])
			munmap(k->data[cpu], k->ctrl[cpu]->data_size);
		if (k->ctrl[cpu])
			munmap(k->ctrl[cpu], (size_t)k->page);
	}
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	for (unsigned int i = 0; k->q && i < k->ncpu; i++)
		free(k->q[i].buf);
	free(k->ctrl);
	free(k->data);
	free(k->q);
	free(k->lost_seen);
	free(k->filtered);
	free(k->ntaken);
	k->filtered = NULL;
	k->ntaken = NULL;
	k->ctrl = NULL;
	k->data = NULL;
	k->q = NULL;
	k->lost_seen = NULL;
	k->ncpu = 0;
}

/* The perf and schedstat backends hand over one merged stream: q[0]. */
static int use_one_queue(struct dial9_ksched *k, const char *backend)
{
	k->backend = backend;
	k->ncpu = 1;
	k->q = calloc(1, sizeof(*k->q));
	return k->q ? 0 : -ENOMEM;
}

/*
 * dial9.ko's session.  Past the module's ring memory limit of an
 * unprivileged user (-EDQUOT), smaller rings: halved down to 64 KiB, and
 * said in k->reason.  On failure, why in @why.
 */
static int ksched_module_open_fitting(struct dial9_ksched *k,
				      const struct dial9_ksched_opts *o,
				      char *why, size_t whylen)
{
	struct dial9_ksched_opts mo = *o;
	int ret;

	while ((ret = ksched_module_open(k, &mo))) {
		str_append(why, whylen, k->reason, true);
		ksched_module_reset(k);
		if (ret != -EDQUOT)
			return ret;
		if (!mo.ring_size)
			mo.ring_size = DIAL9_RING_DEFAULT_SIZE;
		if (mo.ring_size <= 64 << 10)
			return ret;
		mo.ring_size /= 2;
	}
	if (mo.ring_size != o->ring_size)
		snprintf(k->reason, sizeof(k->reason),
			 "rings of %u KiB per CPU, not %u: the most dial9.ko's per-user limit (its user_ring_kb) left",
			 mo.ring_size >> 10,
			 (o->ring_size ? o->ring_size : DIAL9_RING_DEFAULT_SIZE) >> 10);
	return 0;
}

static int ksched_open_backend(struct dial9_ksched **out,
			       const struct dial9_ksched_opts *o,
			       unsigned int skip, uint32_t sample_hz, char *why,
			       size_t whylen)
{
	struct dial9_ksched *k = calloc(1, sizeof(*k));
	char modwhy[512] = "";
	int ret = -ENODEV;

	*out = NULL;
	if (!k)
		return -ENOMEM;
	k->fd = -1;
	k->kick_fd = -1;
	k->page = sysconf(_SC_PAGESIZE);
	k->stacks = skip & D9_KSCHED_STACKS;
	k->occupants = !(skip & D9_KSCHED_NO_OCCUPANTS);
	k->sample_hz = sample_hz;
	if (!(skip & D9_KSCHED_NO_MODULE)) {
		ret = ksched_module_open_fitting(k, o, modwhy, sizeof(modwhy));
		if (!ret) {
			*out = k;
			return 0;
		}
	} else {
		snprintf(modwhy, sizeof(modwhy), "module not requested");
	}
	ret = skip & D9_KSCHED_NO_PERF ? -ENODEV :
	      d9_perf_open(&k->perf, o, k->occupants, sample_hz, k->reason,
			   sizeof(k->reason));
	if (skip & D9_KSCHED_NO_PERF)
		str_append(k->reason, sizeof(k->reason), "not requested", true);
	if (!ret) {
		d9_perf_set_ignored(k->perf, d9_ksched_ignored, k);
		if (use_one_queue(k, "perf")) {
			dial9_ksched_close(k);
			return -ENOMEM;
		}
		str_append(k->reason, sizeof(k->reason), modwhy, true);
		if (*d9_perf_note(k->perf)) {
			str_append(k->reason, sizeof(k->reason), "; ", false);
			str_append(k->reason, sizeof(k->reason),
				   d9_perf_note(k->perf), false);
		}
		*out = k;
		return 0;
	}
	/* The last resort: cumulative counters from /proc. */
	{
		char perfwhy[512], sswhy[256] = "";

		str_append(perfwhy, sizeof(perfwhy), k->reason, true);
		if (!d9_sstat_open(&k->sstat, o, sswhy, sizeof(sswhy))) {
			if (use_one_queue(k, "schedstat")) {
				dial9_ksched_close(k);
				return -ENOMEM;
			}
			str_append(k->reason, sizeof(k->reason), modwhy, true);
			str_append(k->reason, sizeof(k->reason), "; perf: ", false);
			str_append(k->reason, sizeof(k->reason), perfwhy, false);
			*out = k;
			return 0;
		}
		if (why && whylen) {
			str_append(why, whylen, modwhy, true);
			str_append(why, whylen, "; perf: ", false);
			str_append(why, whylen, perfwhy, false);
			str_append(why, whylen, "; schedstat: ", false);
			str_append(why, whylen, sswhy, false);
		}
	}
	dial9_ksched_close(k);
	return ret;
}

int d9_ksched_open(struct dial9_ksched **out,
		   const struct dial9_ksched_opts *o, unsigned int skip,
		   uint32_t sample_hz, char *why, size_t whylen)
{
	int ret;

	ret = ksched_open_backend(out, o, skip, sample_hz, why, whylen);
	if (ret || !o->reader_thread)
		return ret;
	ret = d9_ksched_reader_start(*out, o->reader_prio);
	if (ret) {
		if (why && whylen)
			snprintf(why, whylen, "reader thread: %s",
				 strerror(-ret));
		dial9_ksched_close(*out);
		*out = NULL;
	}
	return ret;
}

int dial9_ksched_open(struct dial9_ksched **out,
		      const struct dial9_ksched_opts *o, char *why,
		      size_t whylen)
{
	for (size_t i = 0; i < sizeof(o->reserved); i++) {
		if (o->reserved[i]) {
			*out = NULL;
			if (why && whylen)
				snprintf(why, whylen,
					 "dial9_ksched_opts.reserved is not 0");
			return -EINVAL;
		}
	}
	return d9_ksched_open(out, o, 0, 0, why, whylen);
}

bool d9_ksched_samples(const struct dial9_ksched *k)
{
	if (!k)
		return false;
	return k->perf ? d9_perf_samples(k->perf) : k->fd >= 0 && k->sample_hz;
}

void dial9_ksched_close(struct dial9_ksched *k)
{
	if (!k)
		return;
	d9_ksched_reader_stop(k);
	ksched_module_reset(k);
	d9_perf_close(k->perf);
	d9_sstat_close(k->sstat);
	free(k);
}

const char *dial9_ksched_backend(const struct dial9_ksched *k)
{
	return k->backend;
}

const char *dial9_ksched_fallback_reason(const struct dial9_ksched *k)
{
	return k->reason;
}

uint32_t dial9_ksched_reader_prio(const struct dial9_ksched *k)
{
	return k->reader_prio;
}

int dial9_ksched_fd(const struct dial9_ksched *k)
{
	return k->perf ? d9_perf_fd(k->perf) : k->fd;	/* -1: sampled */
}

uint64_t dial9_ksched_lost(const struct dial9_ksched *k)
{
	uint64_t lost = 0;

	if (k->reader)	/* written under k->mu, read here without it */
		lost = __atomic_load_n(&k->inbox_lost, __ATOMIC_RELAXED);
	if (k->perf)
		return lost + d9_perf_lost(k->perf);
	if (k->sstat)
		return 0;
	for (unsigned int cpu = 0; k->ctrl && cpu < k->ncpu; cpu++)
		if (k->ctrl[cpu])
			lost += __atomic_load_n(&k->ctrl[cpu]->lost,
						__ATOMIC_RELAXED);
	return lost;
}

bool dial9_ksched_pending(const struct dial9_ksched *k)
{
	if (k->perf)
		return d9_perf_pending(k->perf);
	if (k->fd < 0)
		return false;
	for (unsigned int cpu = 0; cpu < k->ncpu; cpu++)
		if (k->ctrl[cpu] &&
		    __atomic_load_n(&k->ctrl[cpu]->head, __ATOMIC_ACQUIRE) !=
		    __atomic_load_n(&k->ctrl[cpu]->tail, __ATOMIC_RELAXED))
			return true;
	return false;
}

void dial9_ksched_counts(const struct dial9_ksched *k, uint64_t *read,
			 uint64_t *written)
{
	*read = *written = 0;
	if (k->fd < 0 || k->perf)
		return;
	*read = __atomic_load_n(&k->nread, __ATOMIC_RELAXED);
	for (unsigned int cpu = 0; k->ctrl && cpu < k->ncpu; cpu++)
		if (k->ctrl[cpu])
			*written += __atomic_load_n(&k->ctrl[cpu]->written,
						    __ATOMIC_RELAXED);
}

int d9_ksched_ring_counts(const struct dial9_ksched *k, unsigned int cpu,
			  uint64_t *written, uint64_t *lost,
			  uint64_t *filtered)
{
	if (k->fd < 0 || k->perf || !k->ctrl || cpu >= k->ncpu ||
	    !k->ctrl[cpu])
		return -ENOENT;
	*written = __atomic_load_n(&k->ctrl[cpu]->written, __ATOMIC_RELAXED);
	*lost = __atomic_load_n(&k->ctrl[cpu]->lost, __ATOMIC_RELAXED);
	*filtered = k->filtered[cpu];
	return 0;
}

unsigned int d9_ksched_ncpu(const struct dial9_ksched *k)
{
	return k->fd >= 0 && !k->perf ? k->ncpu : 0;
}

int dial9_ksched_ignore_thread(struct dial9_ksched *k, int tid)
{
	struct dial9_ignore ig = { .size = sizeof(ig) };
	uint64_t until, prev;
	unsigned int i;

	if (k->sstat)
		return -EOPNOTSUPP;
	if (!tid)
		tid = (int)syscall(SYS_gettid);
	/* Filtered as records are read (perf_push), for both backends. */
	i = __atomic_fetch_add(&k->nignored, 1, __ATOMIC_ACQ_REL);
	if (i >= KS_MAX_IGNORED)
		return -ENOSPC;
	__atomic_store_n(&k->ignored[i], tid, __ATOMIC_RELEASE);
	__atomic_fetch_or(&k->ignored_bits, 1ull << (tid % 64), __ATOMIC_RELEASE);
	if (k->perf || k->fd < 0)
		return 0;
	ig.tid = (uint32_t)tid;
	if (ioctl(k->fd, DIAL9_IOC_IGNORE_THREAD, &ig))
		return -errno;
	/* from now on dial9.ko writes none of its records (ring parser) */
	until = d9_clock_gettime_ns() + k->ignore_settle_ns;
	prev = __atomic_load_n(&k->ignore_until_ns, __ATOMIC_RELAXED);
	while (prev < until &&
	       !__atomic_compare_exchange_n(&k->ignore_until_ns, &prev, until,
					    false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	return 0;
}
