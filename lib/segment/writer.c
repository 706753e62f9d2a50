// SPDX-License-Identifier: MIT
/*
 * writer.c - segment files: {trace_dir}/{boot_id}/NNNNNNNN.dial9.active
 * while written, sealed by fsync + rename to NNNNNNNN.dial9. Writes go
 * through io_uring (one submission per flush tick), or pwrite where
 * io_uring is unavailable. Faults (ENOSPC, EIO, the directory deleted)
 * never stop the process: batches are counted lost, the fault shows in
 * the stats, and writing resumes when it clears.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "format/wire.h"
#include "segment/segw.h"

void d9_seg_name(uint64_t index, bool active, char *buf, size_t len)
{
	snprintf(buf, len, "%08llu" SEG_EXT "%s", (unsigned long long)index,
		 active ? ACTIVE_EXT : "");
}

void d9_seg_path(const struct d9_segw *w, uint64_t index, bool active,
		 char *buf, size_t len)
{
	char name[64];

	d9_seg_name(index, active, name, sizeof(name));
	snprintf(buf, len, "%s/%s", w->dir, name);
}

static void fault(struct d9_segw *w, int err, const char *what)
{
	pthread_mutex_lock(&w->lock);
	w->write_errors++;
	w->last_error = err;
	if (w->health != DIAL9_HEALTH_DEGRADED) {
		w->health = DIAL9_HEALTH_DEGRADED;
		d9_log("cannot %s in %s: %s; recording goes on, events are "
		       "counted as lost until this clears",
		       what, w->dir, strerror(-err));
	}
	pthread_mutex_unlock(&w->lock);
}

static void healthy(struct d9_segw *w)
{
	if (w->health == DIAL9_HEALTH_OK)
		return;
	pthread_mutex_lock(&w->lock);
	w->health = DIAL9_HEALTH_OK;
	w->faults_recovered++;
	pthread_mutex_unlock(&w->lock);
	d9_log("writing trace segments again in %s", w->dir);
}

static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t r = pwrite(fd, p, n, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static char hostname_buf[256];

static int append(struct d9_segw *w, const struct iovec *iov, unsigned int n,
		  bool uring);

/* Header, metadata and clock sync: the first stream of a segment. */
static int write_preamble(struct d9_segw *w)
{
	struct dial9_encoder *e;
	char pid[24], idx[24];
	const char *keys[] = { "boot_id", "pid", "host", "service", "library",
			       "io_backend", "clock", "segment_index",
			       "sched_backend", "sched_note", "io_direct" };
	const char *vals[11];
	char direct[96];
	const void *data;
	size_t len;
	int ret;

	if ((ret = dial9_encoder_new(&e)))
		return ret;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(idx, sizeof(idx), "%llu", (unsigned long long)w->index);
	if (!hostname_buf[0] && gethostname(hostname_buf, sizeof(hostname_buf) - 1))
		strcpy(hostname_buf, "unknown");
	vals[0] = w->boot_id;
	vals[1] = pid;
	vals[2] = w->o.host ? w->o.host : hostname_buf;
	vals[3] = w->service;
	vals[4] = "libdial9 " DIAL9_VERSION_STRING;
	vals[5] = w->uring ? "io_uring" : "pwrite";
	vals[6] = w->o.clock;
	vals[7] = idx;
	vals[8] = w->o.sched_backend ? w->o.sched_backend : "none";
	vals[9] = w->o.sched_note ? w->o.sched_note : "";
	if (w->dio.on)
		snprintf(direct, sizeof(direct), "yes");
	else if (!w->o.direct_io || w->o.memory)
		snprintf(direct, sizeof(direct), "no");
	else
		snprintf(direct, sizeof(direct), "no: %s", strerror(-w->dio.err));
	vals[10] = direct;
	ret = dial9_encoder_begin_stream(e);
	if (!ret)
		ret = dial9_encoder_metadata(e, 11, keys, vals);
	if (!ret)
		ret = dial9_encoder_clock_sync(e, d9_clock_gettime_ns(),
					       d9_clock_realtime_ns());
	if (!ret)
		ret = dial9_encoder_end_stream(e);
	if (!ret) {
		struct iovec iov;

		data = dial9_encoder_data(e, &len);
		iov.iov_base = (void *)data;
		iov.iov_len = len;
		w->size = 0;
		/*
		 * pwrite, not io_uring: the first segment is opened by the
		 * thread that starts the recorder, an application thread,
		 * which must not get an io_uring worker of its own
		 */
		ret = append(w, &iov, 1, false);
		if (!ret)
			w->size = len;
	}
	dial9_encoder_free(e);
	return ret;
}

/* O_DIRECT for the new active segment, where its filesystem takes it. */
static void direct_begin(struct d9_segw *w)
{
	bool was = w->dio.on || !w->dio.err;

	if (d9_dio_begin(&w->dio, w->fd, w->uring ? &w->ring : NULL))
		return;
	if (was)	/* once, not at every segment */
		d9_log("segments in %s are written through the page cache: "
		       "O_DIRECT: %s", w->dir, strerror(-w->dio.err));
}

static int open_segment(struct d9_segw *w)
{
	char name[64];
	int ret;

	d9_seg_name(w->index, true, name, sizeof(name));
	if (w->o.memory) { /* RAM only: never linked into a directory */
		w->fd = memfd_create(name, MFD_CLOEXEC);
		if (w->fd < 0)
			return -errno;
	} else {
		w->fd = d9_seg_create(w, name, O_WRONLY);
		if (w->fd < 0)
			return w->fd;
		if (w->o.direct_io)
			direct_begin(w);
	}
	w->size = 0;
	w->nbatches = 0;
	w->opened_ns = d9_clock_gettime_ns();
	pthread_mutex_lock(&w->lock);
	w->seg_events = 0;
	w->seg_batches = 0;
	pthread_mutex_unlock(&w->lock);
	ret = write_preamble(w);
	if (ret) {
		close(w->fd);
		w->fd = -1;
		if (!w->o.memory)
			unlinkat(w->dfd, name, 0);
	}
	return ret;
}

/*
 * The active segment was deleted underneath: what was written into it
 * is gone, so it counts as lost, not written (and dial9.lost says so in
 * the next segment).
 */
static void lose_active(struct d9_segw *w)
{
	pthread_mutex_lock(&w->lock);
	w->events_written -= w->seg_events;
	w->events_lost += w->seg_events;
	w->batches_written -= w->seg_batches;
	w->batches_lost += w->seg_batches;
	w->seg_events = 0;
	w->seg_batches = 0;
	pthread_mutex_unlock(&w->lock);
}

/* What the active segment and the counts are now (for dio_take_back()). */
static struct d9_dio_mark dio_mark_now(struct d9_segw *w)
{
	struct d9_dio_mark m;

	pthread_mutex_lock(&w->lock);
	m.events = w->events_written;
	m.batches = w->batches_written;
	m.bytes = w->bytes_written;
	m.seg_events = w->seg_events;
	m.seg_batches = w->seg_batches;
	pthread_mutex_unlock(&w->lock);
	m.size = w->size;
	m.nbatches = w->nbatches;
	return m;
}

/*
 * The last O_DIRECT append's writes failed after it returned (direct.c):
 * what it wrote is cut off the file, and its events count as lost.
 */
static void dio_take_back(struct d9_segw *w)
{
	const struct d9_dio_mark *m = &w->dio_mark;

	pthread_mutex_lock(&w->lock);
	w->events_lost += w->events_written - m->events;
	w->batches_lost += w->batches_written - m->batches;
	w->events_written = m->events;
	w->batches_written = m->batches;
	w->bytes_written = m->bytes;
	w->seg_events = m->seg_events;
	w->seg_batches = m->seg_batches;
	pthread_mutex_unlock(&w->lock);
	w->size = m->size;
	w->nbatches = m->nbatches;
	if (ftruncate(w->fd, (off_t)w->size))
		(void)0; /* the next successful write overwrites the tail */
	fault(w, w->dio.err, "write a segment");
}

/* Seal the active segment (or delete it if it holds no batch). */
static void seal(struct d9_segw *w)
{
	char from[64], toname[64], to[600];
	int memfd = -1, ret;

	if (w->fd < 0)
		return;
	d9_seg_name(w->index, true, from, sizeof(from));
	d9_seg_name(w->index, false, toname, sizeof(toname));
	if (w->o.memory) {
		if (!w->nbatches) {
			close(w->fd);
			w->fd = -1;
			return;
		}
		memfd = w->fd; /* sealed: kept, read-only from now on */
		w->fd = -1;
		d9_seg_path(w, w->index, false, to, sizeof(to));
		goto sealed;
	}
	if (!w->nbatches) {
		d9_dio_end(&w->dio, w->fd, w->uring ? &w->ring : NULL, w->size);
		close(w->fd);
		w->fd = -1;
		unlinkat(w->dfd, from, 0);
		return;
	}
	d9_seg_path(w, w->index, false, to, sizeof(to));
	ret = d9_dio_end(&w->dio, w->fd, w->uring ? &w->ring : NULL, w->size);
	if (ret == D9_DIO_LATE)
		dio_take_back(w);
	else if (ret)
		fault(w, ret, "cut a segment's padding");
	if (fsync(w->fd))
		fault(w, -errno, "sync a segment");
	close(w->fd);
	w->fd = -1;
	if (renameat(w->dfd, from, w->dfd, toname)) {
		int err = -errno;

		if (err == -ENOENT)
			lose_active(w);
		fault(w, err, "seal a segment");
		w->broken = true;
		return;
	}
sealed:
	pthread_mutex_lock(&w->budget_lock);
	if (w->nsealed == w->sealed_cap) {
		size_t nc = w->sealed_cap ? w->sealed_cap * 2 : 16;
		struct sealed *ns = realloc(w->sealed, nc * sizeof(*ns));

		if (ns) {
			w->sealed = ns;
			w->sealed_cap = nc;
		}
	}
	if (w->nsealed < w->sealed_cap) {
		memset(&w->sealed[w->nsealed], 0, sizeof(*w->sealed));
		w->sealed[w->nsealed].index = w->index;
		w->sealed[w->nsealed].size = w->size;
		w->sealed[w->nsealed].start_ns = w->opened_ns;
		w->sealed[w->nsealed].end_ns = d9_clock_gettime_ns();
		w->sealed[w->nsealed].fd = memfd;
		w->nsealed++;
		w->sealed_bytes += w->size;
		memfd = -1;
	}
	pthread_mutex_unlock(&w->budget_lock);
	if (memfd >= 0) { /* no memory to keep it: lost */
		close(memfd);
		fault(w, -ENOMEM, "keep a sealed segment");
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->segments_sealed++;
	pthread_mutex_unlock(&w->lock);
	if (w->o.sealed && !w->o.trigger) {
		if (w->o.memory) {
			int fd = d9_segw_dup(w, w->index);

			if (fd >= 0)
				w->o.sealed(w->o.sealed_ctx, w->index, to, fd);
		} else {
			w->o.sealed(w->o.sealed_ctx, w->index, to, -1);
		}
	}
}

void d9_segw_settle(struct d9_segw *w)
{
	if (w->fd >= 0 && d9_dio_settle(&w->dio, w->fd,
					 w->uring ? &w->ring : NULL) ==
			  D9_DIO_LATE)
		dio_take_back(w);
}

void d9_segw_seal_final(struct d9_segw *w)
{
	if (!w->broken)
		seal(w);
	w->o.sealed = NULL;
}

void d9_segw_rotate(struct d9_segw *w)
{
	int ret;

	if (w->fd < 0 || !w->nbatches)
		return;
	seal(w);
	w->size = 0;
	d9_segw_evict(w);
	if (w->broken)
		return;
	w->index++;
	ret = open_segment(w);
	if (ret) {
		fault(w, ret, "open a segment");
		w->broken = true;
	}
}

bool d9_segw_rotation_due(struct d9_segw *w, uint64_t now)
{
	/* a segment opened after @now (a caller's time read before a write
	 * that rotated) is not due: now - opened_ns would wrap */
	return w->fd >= 0 && w->nbatches && now >= w->opened_ns &&
	       now - w->opened_ns >= w->o.rotation_ns;
}

static void try_reopen(struct d9_segw *w)
{
	uint64_t now = d9_clock_gettime_ns();
	struct stat st;
	bool existed;
	int ret;

	if (now < w->next_retry_ns)
		return;
	w->next_retry_ns = now + RETRY_NS;
	if (w->fd >= 0) {
		/* its writes done first: their buffers serve the next file */
		d9_dio_end(&w->dio, w->fd, w->uring ? &w->ring : NULL, w->size);
		close(w->fd);
		w->fd = -1;
	}
	if (w->o.memory) { /* a new memfd, nothing else to recreate */
		w->index++;
		ret = open_segment(w);
		if (ret) {
			fault(w, ret, "create a segment in memory");
			return;
		}
		w->broken = false;
		healthy(w);
		return;
	}
	existed = w->dfd >= 0 && !fstat(w->dfd, &st) && st.st_nlink > 0;
	ret = 0;
	if (!existed) {
		d9_seg_close_dirs(w);
		ret = d9_seg_open_dirs(w, false);
	}
	if (!ret) {
		w->index++;
		ret = open_segment(w);
	}
	if (ret) {
		fault(w, ret, "recreate the trace directory");
		return;
	}
	w->broken = false;
	if (!existed) {
		/* the directory was deleted with the segments in it */
		pthread_mutex_lock(&w->budget_lock);
		w->nsealed = 0;
		w->sealed_bytes = 0;
		pthread_mutex_unlock(&w->budget_lock);
	}
	healthy(w);
}

void d9_segw_tick(struct d9_segw *w)
{
	struct stat st;

	if (!w->o.memory && !w->broken && w->fd >= 0 && !fstat(w->fd, &st) &&
	    st.st_nlink == 0) {
		lose_active(w);
		fault(w, -ENOENT, "find the active segment (deleted)");
		w->broken = true;
	}
	if (w->broken)
		try_reopen(w);
}

static void count(struct d9_segw *w, struct d9_batch *b, bool ok)
{
	pthread_mutex_lock(&w->lock);
	if (ok) {
		w->events_written += b->nevents;
		w->batches_written += b->nevents ? 1 : 0;
		w->seg_events += b->nevents;
		w->seg_batches += b->nevents ? 1 : 0;
		w->bytes_written += b->len;
	} else {
		w->events_lost += b->nevents;
		w->batches_lost++;
	}
	pthread_mutex_unlock(&w->lock);
}

/* Write b[0..n) at consecutive offsets; returns how many were written
 * completely (a failure truncates the file after the last of those). */
static unsigned int write_run(struct d9_segw *w, struct d9_batch **b,
			      unsigned int n, int *err)
{
	uint64_t off = w->size;
	unsigned int done = n;
	int res[RING_DEPTH];

	*err = 0;
	if (w->dio.on) {
		struct iovec iov[RING_DEPTH];

		for (unsigned int i = 0; i < n; i++) {
			iov[i].iov_base = b[i]->data;
			iov[i].iov_len = b[i]->len;
		}
		*err = append(w, iov, n, true);
		done = *err ? 0 : n;
	} else if (w->uring) {
		for (unsigned int i = 0; i < n; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);

			io_uring_prep_write(sqe, w->fd, b[i]->data, (unsigned int)b[i]->len,
					    off);
			sqe->user_data = i;
			off += b[i]->len;
			res[i] = 0;
		}
		int ret = io_uring_submit_and_wait(&w->ring, n);

		for (unsigned int got = 0; got < n && ret >= 0; got++) {
			struct io_uring_cqe *cqe;

			ret = io_uring_wait_cqe(&w->ring, &cqe);
			if (ret)
				break;
			res[cqe->user_data] = cqe->res;
			io_uring_cqe_seen(&w->ring, cqe);
		}
		if (ret < 0) {
			*err = ret;
			return 0;
		}
		off = w->size;
		for (unsigned int i = 0; i < n; i++) {
			if (res[i] < 0) {
				*err = res[i];
			} else if ((size_t)res[i] < b[i]->len) {
				/* short write: finish it synchronously */
				*err = pwrite_all(w->fd, b[i]->data + res[i],
						  b[i]->len - (size_t)res[i],
						  off + (uint64_t)res[i]);
			}
			if (*err) {
				done = i;
				break;
			}
			off += b[i]->len;
		}
	} else {
		for (unsigned int i = 0; i < n; i++) {
			*err = pwrite_all(w->fd, b[i]->data, b[i]->len, off);
			if (*err) {
				done = i;
				break;
			}
			off += b[i]->len;
		}
	}
	for (unsigned int i = 0; i < done; i++)
		w->size += b[i]->len;
	if (done < n && ftruncate(w->fd, (off_t)w->size))
		(void)0; /* the next successful write overwrites the tail */
	return done;
}

uint64_t d9_segw_write(struct d9_segw *w, struct d9_batch **b, unsigned int n)
{
	uint64_t written = 0;
	unsigned int i = 0;

	if (w->broken)
		try_reopen(w);
	while (i < n) {
		unsigned int k = 0, done;
		uint64_t sz;
		int err;

		if (w->broken || w->fd < 0) {
			for (; i < n; i++)
				count(w, b[i], false);
			break;
		}
		if (w->nbatches && w->size + b[i]->len > w->o.max_file) {
			d9_segw_rotate(w);
			continue;
		}
		/* a run that fits the file and the ring */
		sz = w->size;
		while (i + k < n && k < RING_DEPTH &&
		       (!k || sz + b[i + k]->len <= w->o.max_file)) {
			sz += b[i + k]->len;
			k++;
		}
		done = write_run(w, b + i, k, &err);
		for (unsigned int j = 0; j < k; j++) {
			count(w, b[i + j], j < done);
			if (j < done) {
				written += b[i + j]->nevents;
				w->nbatches++;
			}
		}
		i += k;
		if (err)
			fault(w, err, "write a segment");
		else
			healthy(w);
	}
	if (w->fd >= 0 && w->size >= w->o.max_file)
		d9_segw_rotate(w);
	return written;
}

/* @iov[0..n) at @off, whole: 0 or -errno (io_uring's one writev if
 * there is one and @uring, or pwritev; a short write is finished with
 * pwrite). */
static int writev_all(struct d9_segw *w, const struct iovec *iov,
		      unsigned int n, uint64_t off, bool uring)
{
	ssize_t done;
	int ret;

	if (w->uring && uring) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
		struct io_uring_cqe *cqe;

		io_uring_prep_writev(sqe, w->fd, iov, n, off);
		ret = io_uring_submit_and_wait(&w->ring, 1);
		if (ret < 0)
			return ret;
		ret = io_uring_wait_cqe(&w->ring, &cqe);
		if (ret)
			return ret;
		done = cqe->res;
		io_uring_cqe_seen(&w->ring, cqe);
	} else {
		do
			done = pwritev(w->fd, iov, (int)n, (off_t)off);
		while (done < 0 && errno == EINTR);
		if (done < 0)
			done = -errno;
	}
	if (done < 0)
		return (int)done;
	for (unsigned int i = 0; i < n; i++) {
		size_t skip = (size_t)done < iov[i].iov_len ? (size_t)done :
							      iov[i].iov_len;

		done -= (ssize_t)skip;
		off += skip;
		if (skip == iov[i].iov_len)
			continue;
		ret = pwrite_all(w->fd, (const uint8_t *)iov[i].iov_base + skip,
				 iov[i].iov_len - skip, off);
		if (ret)
			return ret;
		off += iov[i].iov_len - skip;
	}
	return 0;
}

/*
 * @iov[0..n) at the end of the active segment, whole: 0 or -errno;
 * through io_uring if there is one and @uring.
 */
static int append(struct d9_segw *w, const struct iovec *iov, unsigned int n,
		  bool uring)
{
	if (w->dio.on) {
		struct d9_dio_mark m = dio_mark_now(w);
		int ret = d9_dio_append(&w->dio, w->fd,
					w->uring && uring ? &w->ring : NULL,
					iov, n);

		if (ret != D9_DIO_LATE) {
			if (!ret)	/* in flight: taken back if it fails */
				w->dio_mark = m;
			return ret;
		}
		/* the last append was lost: cut, then this one buffered */
		dio_take_back(w);
	}
	return writev_all(w, iov, n, w->size, uring);
}

uint64_t d9_segw_write_stream(struct d9_segw *w, const struct iovec *iov,
			      unsigned int n, uint64_t nevents)
{
	struct d9_batch b = { .nevents = nevents };
	int err;

	for (unsigned int i = 0; i < n; i++)
		b.len += iov[i].iov_len;
	if (w->broken)
		try_reopen(w);
	if (w->fd >= 0 && !w->broken && w->nbatches &&
	    w->size + b.len > w->o.max_file)
		d9_segw_rotate(w);
	if (w->broken || w->fd < 0) {
		count(w, &b, false);
		return 0;
	}
	err = append(w, iov, n, true);
	if (err) {
		if (ftruncate(w->fd, (off_t)w->size))
			(void)0; /* the next successful write overwrites it */
		count(w, &b, false);
		fault(w, err, "write a segment");
		return 0;
	}
	w->size += b.len;
	w->nbatches++;
	count(w, &b, true);
	healthy(w);
	if (w->size >= w->o.max_file)
		d9_segw_rotate(w);
	return nevents;
}

void d9_segw_write_raw(struct d9_segw *w, const void *p, size_t n)
{
	struct d9_batch b = { .data = (uint8_t *)p, .len = n }, *bp = &b;

	d9_segw_write(w, &bp, 1);
}

int d9_segw_open(struct d9_segw **out, const struct d9_seg_opts *o)
{
	struct d9_segw *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	w->o = *o;
	w->fd = w->lockfd = w->tfd = w->dfd = -1;
	w->index = 1;
	w->health = DIAL9_HEALTH_OK;
	w->pipeline = o->sealed != NULL && !o->trigger;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->budget_lock, NULL);
	w->trace_dir = strdup(o->trace_dir);
	w->service = strdup(o->service);
	if (!w->trace_dir || !w->service) {
		ret = -ENOMEM;
		goto out_free;
	}
	d9_seg_boot_id(w->boot_id, sizeof(w->boot_id));
	if (o->memory) {
		/* no directory, no lock, no salvage: nothing on disk */
		snprintf(w->dir, sizeof(w->dir), "memory:%s", w->boot_id);
		goto ring;
	}
	ret = d9_seg_open_dirs(w, true);
	if (ret)
		goto out_free;
	d9_salvage(w->tfd, w->trace_dir, w->boot_id);
ring:
	if (o->io_backend != DIAL9_IO_PWRITE) {
		ret = io_uring_queue_init(RING_DEPTH, &w->ring, 0);
		if (!ret) {
			w->uring = true;
		} else if (o->io_backend == DIAL9_IO_URING) {
			goto out_unlock;
		}
	}
	ret = open_segment(w);
	if (ret)
		goto out_ring;
	*out = w;
	return 0;
out_ring:
	if (w->uring)
		io_uring_queue_exit(&w->ring);
out_unlock:
	if (!o->memory) {
		unlinkat(w->dfd, ".lock", 0);
		unlinkat(w->tfd, w->boot_id, AT_REMOVEDIR);
		d9_seg_close_dirs(w);
	}
out_free:
	free(w->trace_dir);
	free(w->service);
	free(w);
	return ret;
}

void d9_segw_close(struct d9_segw *w, struct dial9_stats *st)
{
	if (!w)
		return;
	if (!w->broken) {
		seal(w);
	} else if (w->fd >= 0) {
		d9_dio_end(&w->dio, w->fd, w->uring ? &w->ring : NULL, w->size);
		close(w->fd);
	}
	w->size = 0;
	d9_segw_evict(w);
	if (st)
		d9_segw_stats(w, st);
	if (w->uring)
		io_uring_queue_exit(&w->ring);
	for (size_t i = 0; i < w->nsealed; i++) /* memory: what is left is lost */
		if (w->sealed[i].fd >= 0)
			close(w->sealed[i].fd);
	if (!w->o.memory) {
		if (w->dfd >= 0)
			unlinkat(w->dfd, ".lock", 0);
		if (w->tfd >= 0) /* only if empty */
			unlinkat(w->tfd, w->boot_id, AT_REMOVEDIR);
		d9_seg_close_dirs(w);
	}
	d9_dio_free(&w->dio);
	free(w->sealed);
	free(w->trace_dir);
	free(w->service);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->budget_lock);
	free(w);
}

uint64_t d9_segw_index(const struct d9_segw *w)
{
	return w->index;
}

void d9_segw_stats(struct d9_segw *w, struct dial9_stats *st)
{
	pthread_mutex_lock(&w->lock);
	st->health = (uint32_t)w->health;
	st->last_error = w->last_error;
	st->io_backend = w->uring ? DIAL9_IO_URING : DIAL9_IO_PWRITE;
	st->events_written = w->events_written;
	st->events_lost += w->events_lost;
	st->batches_written = w->batches_written;
	st->batches_lost += w->batches_lost;
	st->bytes_written = w->bytes_written;
	st->segments_sealed = w->segments_sealed;
	st->segments_evicted = w->segments_evicted;
	st->write_errors = w->write_errors;
	st->faults_recovered = w->faults_recovered;
	st->pipe_evicted = w->pipe_evicted;
	st->direct_io = __atomic_load_n(&w->dio.used, __ATOMIC_RELAXED);
	snprintf(st->boot_id, sizeof(st->boot_id), "%s", w->boot_id);
	snprintf(st->dir, sizeof(st->dir), "%s", w->dir);
	pthread_mutex_unlock(&w->lock);
}

/* In a forked child: let go of the parent's files without touching them. */
void d9_segw_fork_child(struct d9_segw *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	d9_seg_close_dirs(w);
	if (w->uring)
		close(w->ring.ring_fd);
	for (size_t i = 0; i < w->nsealed; i++)
		if (w->sealed[i].fd >= 0)
			close(w->sealed[i].fd);
}

