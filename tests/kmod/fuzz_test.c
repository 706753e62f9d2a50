// SPDX-License-Identifier: GPL-2.0
/*
 * A fuzzer of the /dev/dial9 ABI: threads and forked children of one
 * process make random ioctl, mmap, mremap, mprotect, madvise, munmap,
 * control-page writes, close and open calls on shared sessions, as root
 * and as uid 65534, while a holder session of the process (enabled from
 * start to end, so the tracepoints are never detached and re-attached
 * under load) records them.  A finding is: a call that hangs (watchdog:
 * every task's stack to the kernel log, then failure), a writable data
 * page, a malformed record or a non-zero byte where the ABI says zero in
 * the rings of the holder or of the fuzzed sessions, an unprivileged
 * session following or seeing a process of another user, or a kernel
 * splat (the VM's log check).  A sequence is one thread's run of 200
 * random calls, or a forked child's 30, on the sessions as they stand.
 *
 * Seeds: each run replays the kept seeds (kept_seeds[]: add one that
 * found something) for KEPT_SECS each, then a fresh one, printed, for
 * d9_fuzz_secs= on the kernel command line (default FUZZ_SECS) per
 * privilege.
 */
#include "dial9_test.h"
#include <grp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

#define FUZZ_SECS	8
#define KEPT_SECS	2
#define NTHREADS	4
#define NFDS		3
#define NMAPS		32
#define NKIDS		64

static const uint64_t kept_seeds[] = { 1, 0x9e3779b97f4a7c15ull };

struct fuzz {
	uint64_t end_ns;
	bool unpriv;
	pthread_rwlock_t fd_lock;	/* open/close against calls on fds */
	int fds[NFDS];
	pthread_mutex_t lock;		/* maps and kids */
	struct { void *p; size_t len; bool ctrl; int prot; } maps[NMAPS];
	pid_t kids[NKIDS];
	int nkids;
	long calls, ioctls, mmaps, forks, sequences;
	long findings;
	long fuzzed_recs, skipped;	/* of the fuzzed sessions' rings */
	long page;
};

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void finding(struct fuzz *f, const char *what, long a, long b)
{
	__atomic_add_fetch(&f->findings, 1, __ATOMIC_RELAXED);
	printf("# FINDING: %s (%ld, %ld)\n", what, a, b);
	fflush(stdout);
}

/* A pointer argument: valid, NULL, unmapped, kernel, or misaligned. */
static void *rnd_ptr(uint64_t *s, void *valid)
{
	switch (rnd(s) % 8) {
	case 0:
		return NULL;
	case 1:
		return (void *)0x10000;	/* unmapped */
	case 2:
		return (void *)0xffffffff81000000ull;	/* kernel text */
	case 3:
		return (char *)valid + 1;
	default:
		return valid;
	}
}

static void fuzz_ioctl(struct fuzz *f, uint64_t *s, int fd)
{
	static const unsigned int nrs[] = { 0x01, 0x02, 0x03, 0x04, 0x05,
					    0x06, 0x07, 0x7f };
	unsigned char buf[256] __attribute__((aligned(8)));
	unsigned int nr = nrs[rnd(s) % 8], size = rnd(s) % 80;
	unsigned long cmd;
	uint32_t *w = (uint32_t *)buf;
	pid_t pid;
	int ret;

	/* Mostly plausible arguments, some garbage. */
	memset(buf, 0, sizeof(buf));
	w[0] = rnd(s) % 4 ? 16 + 8 * (rnd(s) % 6) : (uint32_t)rnd(s);
	for (int i = 1; i < 8; i++)
		w[i] = rnd(s) % 3 ? 0 : (uint32_t)rnd(s) >> (rnd(s) % 32);
	pthread_mutex_lock(&f->lock);
	pid = f->nkids && rnd(s) % 2 ? f->kids[rnd(s) % f->nkids] : getpid();
	pthread_mutex_unlock(&f->lock);
	if (nr == 0x02 || nr == 0x06)	/* a target / a thread to ignore */
		w[2] = rnd(s) % 4 ? (uint32_t)pid : rnd(s) % 2 ? 1 :
		       (uint32_t)rnd(s) % 40000;
	if (nr == 0x05)			/* stats: a CPU */
		w[1] = rnd(s) % 4 ? (uint32_t)rnd(s) % 3 : (uint32_t)rnd(s);
	cmd = rnd(s) % 6 ? _IOC(rnd(s) % 2 ? _IOC_WRITE : _IOC_READ | _IOC_WRITE,
				DIAL9_IOC_MAGIC, nr, size) :
	      (unsigned long)(uint32_t)rnd(s);
	if (nr == 0x03 || nr == 0x04)
		cmd = _IO(DIAL9_IOC_MAGIC, nr);
	if (!(rnd(s) % 8)) {
		/*
		 * An argument the kernel faults on: a page just dropped (it
		 * reads as zeros), as after fork()'s copy-on-write.
		 */
		static __thread void *fresh;

		if (!fresh)
			fresh = mmap(NULL, f->page, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fresh != MAP_FAILED) {
			madvise(fresh, f->page, MADV_DONTNEED);
			ret = ioctl(fd, cmd, fresh);
			goto done;
		}
	}
	ret = ioctl(fd, cmd, rnd_ptr(s, buf));
done:
	__atomic_add_fetch(&f->ioctls, 1, __ATOMIC_RELAXED);
	/* uid 65534 may never follow pid 1 (root's init). */
	if (f->unpriv && !ret && (nr == 0x02 || nr == 0x06) && w[2] == 1 &&
	    cmd == _IOC(_IOC_WRITE, DIAL9_IOC_MAGIC, nr, size))
		finding(f, "unprivileged ADD_TARGET/IGNORE of pid 1 succeeded",
			nr, 0);
}

static void fuzz_mmap(struct fuzz *f, uint64_t *s, int fd)
{
	int cpu = rnd(s) % 4, prot = PROT_READ;
	bool data = rnd(s) % 2;
	size_t len = data ? (size_t)f->page << (rnd(s) % 10) : f->page;
	off_t off = data ? DIAL9_MMAP_DATA(cpu) : DIAL9_MMAP_CTRL(cpu);
	void *p;

	if (rnd(s) % 2 || !data)
		prot |= PROT_WRITE;
	if (!(rnd(s) % 8))
		off += f->page * (rnd(s) % 3);
	p = mmap(NULL, len, prot, rnd(s) % 8 ? MAP_SHARED : MAP_PRIVATE, fd,
		 off);
	__atomic_add_fetch(&f->mmaps, 1, __ATOMIC_RELAXED);
	if (p == MAP_FAILED)
		return;
	if (data && (prot & PROT_WRITE)) {
		finding(f, "a writable mapping of a data area", cpu, (long)len);
		munmap(p, len);
		return;
	}
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < NMAPS; i++) {
		if (f->maps[i].p)
			continue;
		f->maps[i].p = p;
		f->maps[i].len = len;
		f->maps[i].ctrl = !data;
		f->maps[i].prot = prot;
		p = NULL;
		break;
	}
	pthread_mutex_unlock(&f->lock);
	if (p)
		munmap(p, len);
}

/* Something to an existing mapping: write, protect, move, advise, unmap. */
static void fuzz_map_op(struct fuzz *f, uint64_t *s)
{
	int i = rnd(s) % NMAPS, op = rnd(s) % 6;

	pthread_mutex_lock(&f->lock);
	if (!f->maps[i].p) {
		pthread_mutex_unlock(&f->lock);
		return;
	}
	switch (op) {
	case 0: {	/* wild control-page values: never trusted */
		struct dial9_ring_ctrl *c = f->maps[i].p;

		if (f->maps[i].ctrl && (f->maps[i].prot & PROT_WRITE)) {
			if (rnd(s) % 2)
				c->tail = rnd(s) % 2 ? rnd(s) : c->head;
			else
				c->watermark = (uint32_t)rnd(s);
		}
		break;
	}
	case 1:
		if (!mprotect(f->maps[i].p, f->maps[i].len,
			      PROT_READ | PROT_WRITE)) {
			if (!f->maps[i].ctrl)
				finding(f, "mprotect made a data area writable",
					i, (long)f->maps[i].len);
			f->maps[i].prot = PROT_READ | PROT_WRITE;
		}
		break;
	case 2:
		if (!mprotect(f->maps[i].p, f->maps[i].len, PROT_READ))
			f->maps[i].prot = PROT_READ;
		break;
	case 3: {
		size_t nl = f->maps[i].len * (rnd(s) % 2 ? 2 : 1);
		void *q = mremap(f->maps[i].p, f->maps[i].len, nl,
				 MREMAP_MAYMOVE);

		if (q != MAP_FAILED) {
			f->maps[i].p = q;
			f->maps[i].len = nl;
		}
		break;
	}
	case 4:
		madvise(f->maps[i].p, f->maps[i].len,
			rnd(s) % 2 ? MADV_DONTNEED : MADV_DONTFORK);
		break;
	default:
		munmap(f->maps[i].p, f->maps[i].len);
		f->maps[i].p = NULL;
		break;
	}
	pthread_mutex_unlock(&f->lock);
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_RELAXED);
}

static void fuzz_reopen(struct fuzz *f, uint64_t *s)
{
	int i = rnd(s) % NFDS;

	pthread_rwlock_wrlock(&f->fd_lock);
	if (f->fds[i] >= 0)
		close(f->fds[i]);
	f->fds[i] = open("/dev/dial9", O_RDWR | O_CLOEXEC);
	pthread_rwlock_unlock(&f->fd_lock);
}

static void fuzz_ops(struct fuzz *f, uint64_t *s, long n);

/* A child: a few calls on the inherited sessions and mappings, then exit. */
static void fuzz_fork(struct fuzz *f, uint64_t *s)
{
	pid_t kid;

	pthread_mutex_lock(&f->lock);
	if (f->nkids == NKIDS) {
		pthread_mutex_unlock(&f->lock);
		return;
	}
	kid = fork();
	if (!kid) {
		uint64_t cs = rnd(s) | 1;

		/* The parent's locks may be held by threads not copied. */
		pthread_mutex_init(&f->lock, NULL);
		pthread_rwlock_init(&f->fd_lock, NULL);
		/* Mappings with MADV_DONTFORK are not here: only its own. */
		memset(f->maps, 0, sizeof(f->maps));
		fuzz_ops(f, &cs, 30);
		_exit(0);
	}
	if (kid > 0)
		f->kids[f->nkids++] = kid;
	pthread_mutex_unlock(&f->lock);
	__atomic_add_fetch(&f->forks, 1, __ATOMIC_RELAXED);
	/* the child's (its calls are its own, not counted here) */
	__atomic_add_fetch(&f->sequences, 1, __ATOMIC_RELAXED);
}

static void fuzz_ops(struct fuzz *f, uint64_t *s, long n)
{
	__atomic_add_fetch(&f->sequences, 1, __ATOMIC_RELAXED);
	for (long k = 0; k < n; k++) {
		unsigned int op = rnd(s) % 100;
		int fd;

		__atomic_add_fetch(&f->calls, 1, __ATOMIC_RELAXED);
		if (op < 2) {
			fuzz_reopen(f, s);
			continue;
		}
		if (op < 3 && n > 30) {
			fuzz_fork(f, s);
			continue;
		}
		if (op < 30) {
			fuzz_map_op(f, s);
			continue;
		}
		pthread_rwlock_rdlock(&f->fd_lock);
		fd = f->fds[rnd(s) % NFDS];
		if (op < 50)
			fuzz_mmap(f, s, fd);
		else
			fuzz_ioctl(f, s, fd);
		pthread_rwlock_unlock(&f->fd_lock);
	}
}

struct worker {
	struct fuzz *f;
	uint64_t seed;
};

static void *fuzz_thread(void *arg)
{
	struct worker *w = arg;

	while (d9_now() < w->f->end_ns)
		fuzz_ops(w->f, &w->seed, 200);
	return NULL;
}

/* Whether an unprivileged session may name process @id. */
static bool visible(struct fuzz *f, uint32_t id, bool redacted_ok)
{
	bool ok = id == (uint32_t)getpid() ||
		  (redacted_ok && (!id || id == DIAL9_TID_REDACTED));

	pthread_mutex_lock(&f->lock);
	for (int k = 0; !ok && k < f->nkids; k++)
		ok = id == (uint32_t)f->kids[k];
	pthread_mutex_unlock(&f->lock);
	return ok;
}

/* @n bytes at @p are zero. */
static bool zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n && !*b) {
		b++;
		n--;
	}
	return !n;
}

/* A redacted side of a switch shows nothing but that it is redacted. */
static bool redacted_side_empty(const struct dial9_rec_switch *sw, bool prev)
{
	if (prev)
		return sw->prev_tid == DIAL9_TID_REDACTED && !sw->prev_prio &&
		       !sw->prev_state && !sw->prev_run_delay_ns &&
		       !sw->prev_pcount &&
		       !(sw->hdr.flags & (DIAL9_SWITCH_PREEMPT |
					  DIAL9_SWITCH_PREV_RUNNABLE |
					  DIAL9_SWITCH_PREV_TARGET));
	return sw->next_tid == DIAL9_TID_REDACTED && !sw->next_prio &&
	       !sw->next_wait_ns && !sw->next_run_delay_ns &&
	       !sw->next_pcount &&
	       !(sw->hdr.flags & (DIAL9_SWITCH_WAIT_VALID |
				  DIAL9_SWITCH_NEXT_TARGET));
}

/*
 * One record of @who's rings: zero where the ABI says zero (reserved
 * fields, flags no one defined, a redacted side's fields, a name's
 * padding) and, unprivileged, naming only this process and its children
 * (else redacted, or 0 for the idle task).
 */
static void check_rec(struct fuzz *f, const struct dial9_rec_header *r,
		      const char *who)
{
	const struct dial9_rec_switch *sw = (const void *)r;
	const struct dial9_rec_wake *wk = (const void *)r;
	const struct dial9_rec_comm *cm = (const void *)r;
	const struct dial9_rec_unfollowed *uf = (const void *)r;
	const struct dial9_rec_stack *st = (const void *)r;
	const char *bad = NULL;
	uint32_t ids[2] = { 0, 0 };
	bool own_only = false;
	int nids = 2;
	size_t n;

	switch (r->type) {
	case DIAL9_REC_SWITCH:
		if (r->size < sizeof(*sw))
			bad = "short switch record";
		else if (sw->reserved || r->flags >> 6)
			bad = "switch record: reserved or flags not zero";
		else if ((sw->prev_tgid == DIAL9_TID_REDACTED &&
			  !redacted_side_empty(sw, true)) ||
			 (sw->next_tgid == DIAL9_TID_REDACTED &&
			  !redacted_side_empty(sw, false)))
			bad = "switch record: a redacted side shows something";
		ids[0] = sw->prev_tgid;
		ids[1] = sw->next_tgid;
		break;
	case DIAL9_REC_WAKING:
	case DIAL9_REC_WAKEUP:
	case DIAL9_REC_WAKEUP_NEW:
		if (r->flags >> 3)
			bad = "wake record: flags not zero";
		else if (wk->tgid == DIAL9_TID_REDACTED &&
			 (wk->tid != DIAL9_TID_REDACTED || wk->prio))
			bad = "wake record: a redacted task shows something";
		else if (wk->waker_tgid == DIAL9_TID_REDACTED &&
			 wk->waker_tid != DIAL9_TID_REDACTED)
			bad = "wake record: a redacted waker shows its tid";
		ids[0] = wk->tgid;
		ids[1] = wk->waker_tgid;
		break;
	case DIAL9_REC_COMM:
		n = strnlen(cm->comm, sizeof(cm->comm));
		if (r->flags || !zero(cm->comm + n, sizeof(cm->comm) - n))
			bad = "comm record: flags or padding not zero";
		ids[0] = cm->tgid;
		own_only = true;
		nids = 1;
		break;
	case DIAL9_REC_MIGRATE:
		if (r->flags)
			bad = "migrate record: flags not zero";
		ids[0] = ((const struct dial9_rec_migrate *)r)->tgid;
		own_only = true;
		nids = 1;
		break;
	case DIAL9_REC_EXIT:
		if (r->flags & ~DIAL9_EXIT_GROUP_DEAD)
			bad = "exit record: flags not zero";
		ids[0] = ((const struct dial9_rec_exit *)r)->tgid;
		own_only = true;
		nids = 1;
		break;
	case DIAL9_REC_UNFOLLOWED:
		if (r->flags & ~DIAL9_UNFOLLOWED_EXEC)
			bad = "unfollowed record: flags not zero";
		ids[0] = uf->tgid;
		ids[1] = uf->parent_tgid;
		own_only = true;
		break;
	case DIAL9_REC_STACK:
	case DIAL9_REC_SAMPLE:
		/* a recorded task's own stack: never a foreign one */
		if (r->size < sizeof(*st) || st->nr > DIAL9_STACK_MAX_DEPTH ||
		    r->size < sizeof(*st) + st->nr * sizeof(st->ips[0]))
			bad = "stack record: short, or deeper than the limit";
		else if (r->flags & ~(DIAL9_STACK_TRUNCATED |
				      (r->type == DIAL9_REC_STACK ?
				       DIAL9_STACK_WAKER : DIAL9_SAMPLE_KERNEL)))
			bad = "stack record: flags not zero";
		else if (r->type == DIAL9_REC_STACK && st->reserved)
			bad = "stack record: reserved not zero";
		ids[0] = st->tgid;
		own_only = true;
		nids = 1;
		break;
	case DIAL9_REC_LOST:
		if (r->flags)
			bad = "lost record: flags not zero";
		nids = 0;
		break;
	default:
		bad = "a record of no known type";
		nids = 0;
	}
	if (bad) {
		printf("# in the %s's rings:\n", who);
		finding(f, bad, r->type, r->flags);
	}
	for (int i = 0; f->unpriv && i < nids; i++) {
		if ((ids[i] || own_only) && !visible(f, ids[i], !own_only)) {
			printf("# in the %s's rings:\n", who);
			finding(f, "unprivileged session saw another process",
				ids[i], r->type);
		}
	}
}

/* The holder's records: well formed (d9_drain) and check_rec()'s. */
static int check_records(struct fuzz *f, struct d9 *h, long *nrec)
{
	struct d9_recs recs = { 0 };
	int ret = d9_drain(h, &recs);

	if (ret < 0) {
		finding(f, "malformed record in the holder's rings", ret, 0);
		return ret;
	}
	d9_for_each(r, &recs) {
		(*nrec)++;
		check_rec(f, r, "holder");
	}
	d9_recs_free(&recs);
	return 0;
}

/*
 * Copy what is unread in one ring of a fuzzed session into @out and
 * consume it.  Its tail is the fuzzer's to scribble on: read once, and a
 * wild one (beyond head, too far behind, misaligned) only skips the ring.
 * The kernel, trusting such a tail, may also write over bytes while they
 * are copied: the copy is kept only if head stayed short of tail + size
 * (a record and a pad below it).  0, 1 if skipped, -EPROTO if malformed.
 */
static int copy_ring(struct dial9_ring_ctrl *c, const unsigned char *data,
		     uint32_t size, struct d9_recs *out)
{
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_RELAXED), t;
	size_t len = out->len, count = out->count;
	int ret = 0;

	if (tail > head || head - tail > size || tail % 8) {
		__atomic_store_n(&c->tail, head, __ATOMIC_RELEASE);
		return 1;
	}
	for (t = tail; !ret && t < head;) {
		uint32_t off = t & (size - 1);
		const struct dial9_rec_header *h = (const void *)(data + off);
		struct dial9_rec_header hdr;

		memcpy(&hdr, h, sizeof(hdr.type) + sizeof(hdr.size));
		if (hdr.size < 8 || hdr.size % 8 || off + hdr.size > size ||
		    (hdr.type != DIAL9_REC_PAD && hdr.size < sizeof(hdr))) {
			ret = -EPROTO;
			break;
		}
		if (hdr.type != DIAL9_REC_PAD) {
			if (out->len + hdr.size > out->cap) {
				size_t cap = out->cap ? out->cap * 2 : 65536;
				void *b;

				while (cap < out->len + hdr.size)
					cap *= 2;
				b = realloc(out->buf, cap);
				if (!b) {
					ret = 1;
					break;
				}
				out->buf = b;
				out->cap = cap;
			}
			memcpy(out->buf + out->len, h, hdr.size);
			/* the size it was copied by, whatever the ring says now */
			memcpy(out->buf + out->len + 2, &hdr.size, 2);
			out->len += hdr.size;
			out->count++;
		}
		t += hdr.size;
	}
	if (__atomic_load_n(&c->head, __ATOMIC_ACQUIRE) + 256 > tail + size) {
		out->len = len;		/* perhaps written over: not checked */
		out->count = count;
		ret = 1;
	}
	__atomic_store_n(&c->tail, head, __ATOMIC_RELEASE);
	return ret;
}

/*
 * The records of the fuzzed sessions, as the holder's: each CPU's ring
 * whose stats show records (never allocating rings of a session that
 * has none), mapped for the check and unmapped after.
 */
static void check_fuzzed(struct fuzz *f, long *nrec)
{
	int ncpu = sysconf(_SC_NPROCESSORS_CONF);

	if (ncpu > D9_MAX_CPUS)
		ncpu = D9_MAX_CPUS;
	pthread_rwlock_rdlock(&f->fd_lock);
	for (int i = 0; i < NFDS; i++) {
		struct d9_recs recs = { 0 };
		struct d9 d = { .fd = f->fds[i] };

		for (int cpu = 0; d.fd >= 0 && cpu < ncpu; cpu++) {
			struct dial9_ring_stats st;
			struct dial9_ring_ctrl *c;
			void *data;
			int ret;

			if (d9_stats(&d, cpu, &st) || (!st.written && !st.lost))
				continue;
			c = mmap(NULL, f->page, PROT_READ | PROT_WRITE,
				 MAP_SHARED, d.fd, DIAL9_MMAP_CTRL(cpu));
			if (c == MAP_FAILED)
				continue;
			/* its size from the kernel, not from the page */
			data = mmap(NULL, st.ring_size, PROT_READ, MAP_SHARED,
				    d.fd, DIAL9_MMAP_DATA(cpu));
			if (data != MAP_FAILED) {
				ret = copy_ring(c, data, st.ring_size, &recs);
				if (ret < 0)
					finding(f, "malformed record in a fuzzed session's rings",
						i, cpu);
				f->skipped += ret == 1;
				munmap(data, st.ring_size);
			}
			munmap(c, f->page);
		}
		d9_for_each(r, &recs) {
			(*nrec)++;
			f->fuzzed_recs++;
			check_rec(f, r, "fuzzed session");
		}
		d9_recs_free(&recs);
	}
	pthread_rwlock_unlock(&f->fd_lock);
}

/* One run: NTHREADS threads for @secs with @seed.  Returns findings. */
static long fuzz_run(uint64_t seed, int secs, bool unpriv)
{
	struct worker w[NTHREADS];
	pthread_t t[NTHREADS];
	struct fuzz *f = calloc(1, sizeof(*f));
	long nrec = 0, found;
	struct d9 holder;

	if (!f)
		return 1;
	f->unpriv = unpriv;
	f->page = sysconf(_SC_PAGESIZE);
	pthread_rwlock_init(&f->fd_lock, NULL);
	pthread_mutex_init(&f->lock, NULL);
	for (int i = 0; i < NFDS; i++)
		f->fds[i] = open("/dev/dial9", O_RDWR | O_CLOEXEC);
	if (d9_open(&holder) || d9_map(&holder) || d9_enable(&holder)) {
		printf("# no holder session\n");
		return 1;
	}
	f->end_ns = d9_now() + (uint64_t)secs * 1000000000ull;
	for (int i = 0; i < NTHREADS; i++) {
		w[i].f = f;
		w[i].seed = seed * (i + 1) | 1;
		pthread_create(&t[i], NULL, fuzz_thread, &w[i]);
	}
	while (d9_now() < f->end_ns) {
		usleep(100000);
		check_records(f, &holder, &nrec);
		check_fuzzed(f, &nrec);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	while (waitpid(-1, NULL, 0) > 0)
		;
	check_records(f, &holder, &nrec);
	check_fuzzed(f, &nrec);
	d9_close(&holder);
	for (int i = 0; i < NFDS; i++)
		if (f->fds[i] >= 0)
			close(f->fds[i]);
	for (int i = 0; i < NMAPS; i++)
		if (f->maps[i].p)
			munmap(f->maps[i].p, f->maps[i].len);
	printf("# seed %#llx, %s, %d s: %ld calls (%ld ioctl, %ld mmap) in %ld sequences, %ld forks, %ld records checked (%ld of the fuzzed sessions, %ld of their rings skipped), %ld findings\n",
	       (unsigned long long)seed, unpriv ? "uid 65534" : "root", secs,
	       f->calls, f->ioctls, f->mmaps, f->sequences, f->forks, nrec,
	       f->fuzzed_recs, f->skipped, f->findings);
	found = f->findings;
	free(f);
	return found;
}

static int fuzz_secs(void)
{
	char line[1024] = "";
	FILE *c = fopen("/proc/cmdline", "r");
	const char *p;

	if (c) {
		if (!fgets(line, sizeof(line), c))
			line[0] = 0;
		fclose(c);
	}
	p = strstr(line, "d9_fuzz_secs=");
	return p ? atoi(p + 13) : FUZZ_SECS;
}

/*
 * Every seed in a child with a watchdog: a hang is told apart from a slow
 * run by its deadline, and every task's stack goes to the kernel log.
 */
static int fuzz_watched(uint64_t seed, int secs, bool unpriv)
{
	int st = 0;
	pid_t kid = fork();

	if (kid < 0)
		return -1;
	if (!kid) {
		signal(SIGPIPE, SIG_IGN);
		if (unpriv && (setgroups(0, NULL) || setgid(65534) ||
			       setuid(65534)))
			_exit(2);
		_exit(fuzz_run(seed, secs, unpriv) ? 1 : 0);
	}
	for (int i = 0; i < (secs + 20) * 10; i++) {
		if (waitpid(kid, &st, WNOHANG) == kid) {
			if (WIFSIGNALED(st))
				printf("# seed %#llx: killed by signal %d\n",
				       (unsigned long long)seed, WTERMSIG(st));
			return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
		}
		usleep(100000);
	}
	printf("# HANG: seed %#llx still running %d s after its end; task stacks in dmesg\n",
	       (unsigned long long)seed, 20);
	system("echo 1 >/proc/sys/kernel/sysrq; echo t >/proc/sysrq-trigger");
	kill(kid, SIGKILL);
	return 4;
}

FIXTURE(fuzz) {
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

/* The harness's own timeout, above every watchdog's deadline. */
TEST_F_TIMEOUT(fuzz, abi, 110)
{
	int secs = fuzz_secs();
	uint64_t fresh = d9_now() ^ ((uint64_t)getpid() << 32);

	for (size_t i = 0; i < sizeof(kept_seeds) / sizeof(*kept_seeds); i++) {
		EXPECT_EQ(0, fuzz_watched(kept_seeds[i], KEPT_SECS, false));
		EXPECT_EQ(0, fuzz_watched(kept_seeds[i], KEPT_SECS, true));
	}
	TH_LOG("fresh seed %#llx for %d s as root and as uid 65534 (keep it in kept_seeds[] if it finds something)",
	       (unsigned long long)fresh, secs);
	EXPECT_EQ(0, fuzz_watched(fresh, secs, false));
	EXPECT_EQ(0, fuzz_watched(fresh, secs, true));
}

TEST_HARNESS_MAIN
