// SPDX-License-Identifier: MIT
/*
 * job.c - jobs: one sealed segment (or its summary, or a dump's
 * manifest) on its way through the steps; reading it in, admitting
 * jobs under the concurrency limit, ending, failing and retrying them
 * with backoff and jitter.
 */
#include "pipeline/worker.h"

/* ---- jobs ---- */

void d9_job_free(struct job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
#if DIAL9_S3
	if (j->easy)
		curl_easy_cleanup(j->easy);
	curl_slist_free_all(j->hdrs);
#endif
	free(j->url);
	free(j->key);
	if (j->data != j->raw)
		free(j->data);
	free(j->raw);
	free(j);
}

static void unlink_active(struct d9_worker *wk, struct job *j)
{
	struct job **pp = &wk->active;

	wk->active_tail = NULL;
	while (*pp) {
		if (*pp == j) {
			*pp = j->next;
			wk->nactive--;
			break;
		}
		pp = &(*pp)->next;
	}
	for (struct job *k = wk->active; k; k = k->next)
		wk->active_tail = k;
}



/* A segment of a dump left the pipeline (1 done, -1 not). */
void d9_dump_seg_end(struct d9_worker *wk, struct job *j, int status)
{
	struct d9_dump *d = j->dump;
	struct dseg *e = &d->segs[j->dseg];
	bool last;

	pthread_mutex_lock(&d9_dump_mu);
	e->status = status;
	e->bytes_out = status > 0 ? j->len : 0;
	if (!e->key) {
		e->key = j->key;
		j->key = NULL;
	}
	last = --d->remaining == 0;
	pthread_mutex_unlock(&d9_dump_mu);
	j->dump = NULL;
	if (last)
		d9_dump_segments_ended(wk, d);
}

/* The segment left the pipeline; remaining bytes of it stay local. */
void d9_job_end(struct d9_worker *wk, struct job *j, enum end how,
		uint64_t remaining)
{
	if (j->manifest) {
		d9_dump_complete(wk, j->dump, how == END_DONE);
		unlink_active(wk, j);
		d9_job_free(j);
		return;
	}
	if (j->summary) {
		pthread_mutex_lock(&wk->mu);
		if (how == END_DONE)
			wk->st.summaries_done++;
		else
			wk->st.summaries_failed++;
		pthread_mutex_unlock(&wk->mu);
		unlink_active(wk, j);
		d9_job_free(j);
		return;
	}
	if (how != END_GONE)
		wk->shipped(wk->shipped_ctx, j->index, remaining);
	pthread_mutex_lock(&wk->mu);
	wk->st.pipe_pending--;
	if (how == END_DONE) {
		wk->st.pipe_done++;
		wk->st.pipe_bytes_in += j->raw_len;
		wk->st.pipe_bytes_out += j->len;
	} else if (how == END_FAILED) {
		wk->st.pipe_failed++;
	}
	pthread_mutex_unlock(&wk->mu);
	/* after the counters: a dump's waiter sees them final */
	if (j->dump)
		d9_dump_seg_end(wk, j, how == END_DONE ? 1 : -1);
	unlink_active(wk, j);
	d9_job_free(j);
}

/* Terminal failure: the sealed file stays where it is. */
void d9_job_fail(struct d9_worker *wk, struct job *j, int err,
		 const char *what)
{
	d9_wk_count_error(wk, err);
	if (j->summary)
		d9_wk_log(wk, "summary %s: %s; it is lost", j->src, what);
	else
		d9_wk_log(wk, "segment %s: %s; it stays on disk", j->src, what);
	d9_job_end(wk, j, END_FAILED, j->raw_len);
}

static uint64_t backoff_ns(struct d9_worker *wk, unsigned int attempts)
{
	uint64_t d = wk->retry_base_ns;

	while (--attempts && d < wk->retry_max_ns)
		d *= 2;
	if (d > wk->retry_max_ns)
		d = wk->retry_max_ns;
	/* jitter: between half and all of it */
	return d / 2 + (uint64_t)rand_r(&wk->seed) % (d / 2 + 1);
}

/* Transient failure: the current step again later. */
void d9_job_retry(struct d9_worker *wk, struct job *j, int err,
		  const char *what)
{
	d9_wk_count_error(wk, err);
	j->attempts++;
	j->retry_at = d9_clock_gettime_ns() + backoff_ns(wk, j->attempts);
	j->state = J_WAIT;
	d9_wk_log(wk, "%s %s: %s; retrying (attempt %u)",
	     j->summary ? "summary" : "segment", j->src, what, j->attempts + 1);
}

static void read_more(struct d9_worker *wk, struct job *j)
{
	struct io_uring_sqe *sqe = d9_wk_sqe(wk);

	j->op.kind = OP_READ;
	io_uring_prep_read(sqe, j->fd, j->raw + j->off,
			   (unsigned int)(j->raw_len - j->off > (1u << 30) ?
						  (1u << 30) :
						  j->raw_len - j->off),
			   j->off);
	io_uring_sqe_set_data(sqe, &j->op);
}

/* CLOCK_REALTIME of the segment's start, from its clock sync. */
static uint64_t start_real(const struct job *j)
{
	struct dial9_decoder *d;
	struct dial9_record rec;
	uint64_t real = 0;

	if (dial9_decoder_new(&d, j->raw, j->raw_len))
		return 0;
	for (int i = 0; i < 16 && dial9_decoder_next(d, &rec) == 1; i++) {
		if (rec.kind == DIAL9_RECORD_CLOCK_SYNC) {
			real = rec.real_ns;
			break;
		}
	}
	dial9_decoder_free(d);
	return real;
}

/* Take queued segments, oldest first, while there is room. */
/* The oldest queued job, or NULL. */
struct job *d9_job_dequeue(struct d9_worker *wk)
{
	struct job *j;

	pthread_mutex_lock(&wk->mu);
	j = wk->qhead;
	if (j) {
		wk->qhead = j->next;
		if (!wk->qhead)
			wk->qtail = NULL;
	}
	pthread_mutex_unlock(&wk->mu);
	return j;
}

void d9_job_admit(struct d9_worker *wk)
{
	while (wk->nactive < wk->concurrency) {
		struct job *j;
		struct stat st;

		j = d9_job_dequeue(wk);
		if (!j)
			return;
		j->next = NULL;
		if (wk->active_tail)
			wk->active_tail->next = j;
		else
			wk->active = j;
		wk->active_tail = j;
		wk->nactive++;
		if (j->manifest || j->summary) {
			/* in memory already: straight to the destination */
			j->step = wk->nsteps - 1;
			j->state = J_RUN;
			continue;
		}
		if (j->fd < 0)
			j->fd = open(j->src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (j->fd < 0 || fstat(j->fd, &st)) {
			if (errno == ENOENT) {
				/* evicted by the budget (counted there) */
				d9_job_end(wk, j, END_GONE, 0);
			} else {
				d9_job_fail(wk, j, -errno, "cannot open it");
			}
			continue;
		}
		j->start_real_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
				   (uint64_t)st.st_mtim.tv_nsec;
		j->raw_len = (size_t)st.st_size;
		j->raw = malloc(j->raw_len ? j->raw_len : 1);
		if (!j->raw) {
			d9_job_fail(wk, j, -ENOMEM, "no memory to read it");
			continue;
		}
		j->state = J_READING;
		if (j->raw_len)
			read_more(wk, j);
		else
			j->state = J_RUN;
	}
}


/* Where the segment goes: its S3 key, or its path below write_back_dir. */
static int segment_dest(struct d9_worker *wk, const struct job *j,
			char *buf, size_t len)
{
	bool lz4 = j->compressed;
	const char *base = strrchr(j->src, '/');
	int n;

	for (unsigned int i = 0; i < wk->nsteps; i++)
		lz4 |= wk->steps[i] == STEP_LZ4;
	if (!wk->wb_dir) {
		struct d9_s3_target t = {
			.prefix = wk->prefix, .service = wk->service,
			.host = wk->host, .boot_id = wk->boot_id,
			.index = j->index, .start_real_ns = j->start_real_ns,
			.ext = lz4 ? ".bin.lz4" : ".bin",
		};

		return d9_s3_key(&t, buf, len);
	}
	base = base ? base + 1 : j->src;
	n = snprintf(buf, len, "%s/%s%s", wk->boot_id, base,
		     lz4 && !j->compressed ? ".lz4" : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * The segment's summary, a job of its own for the destination. A
 * summary that cannot be made is counted and logged; the segment goes
 * on all the same.
 */
static void summarize(struct d9_worker *wk, struct job *j)
{
	struct d9_summary_src m = {
		.host = wk->host, .service = wk->service,
		.boot_id = wk->boot_id, .index = j->index,
	};
	void *plain = NULL, *gz = NULL;
	const void *seg = j->raw;
	size_t seglen = j->raw_len, gzlen = 0, rows = 0;
	char dest[1024];
	struct job *s;
	int ret;

	ret = segment_dest(wk, j, dest, sizeof(dest));
	m.segment = dest;
	if (!ret && j->compressed) {
		ret = d9_lz4_decompress(j->raw, j->raw_len, &plain, &seglen);
		seg = plain;
	}
	if (!ret)
		ret = d9_summary_build(seg, seglen, &m, &gz, &gzlen, &rows);
	free(plain);
	if (!ret && !rows)
		return; /* no thread did anything: nothing to say */
	s = ret ? NULL : calloc(1, sizeof(*s));
	if (!s) {
		free(gz);
		d9_wk_count_error(wk, ret ? ret : -ENOMEM);
		pthread_mutex_lock(&wk->mu);
		wk->st.summaries_failed++;
		pthread_mutex_unlock(&wk->mu);
		d9_wk_log(wk, "segment %s: cannot summarize it: %s; it has no summary",
		     j->src, dial9_strerror(ret ? ret : -ENOMEM));
		return;
	}
	s->summary = true;
	s->mem = true;
	s->fd = -1;
	s->op.owner = s;
	s->index = j->index;
	s->start_real_ns = j->start_real_ns;
	s->raw = s->data = gz;
	s->raw_len = s->len = gzlen;
	s->compressed = true;
	snprintf(s->src, sizeof(s->src), "of %.580s", j->src);
	d9_wk_enqueue(wk, s, false);
}

/*
 * The segment's symbol table (symbols/symtab.h) appended to it before it
 * is compressed, if it has stack frames.  A table that cannot be made is
 * counted and logged; the segment goes on without it.
 */
static void add_symbols(struct d9_worker *wk, struct job *j)
{
	struct d9_symtab_result r;
	void *tab = NULL;
	uint8_t *grown;
	size_t n = 0;
	int ret;

	ret = d9_symtab_build(wk->symtab, j->raw, j->raw_len, &tab, &n, &r);
	if (!ret && !tab)
		return; /* no stacks */
	grown = ret ? NULL : realloc(j->raw, j->raw_len + n);
	if (grown) {
		memcpy(grown + j->raw_len, tab, n);
		j->raw = grown;
		j->raw_len += n;
	} else if (!ret) {
		ret = -ENOMEM;
	}
	free(tab);
	pthread_mutex_lock(&wk->mu);
	if (ret) {
		wk->st.symbols_failed++;
	} else {
		wk->st.symbols_segments++;
		wk->st.symbols_named += r.named;
		wk->st.symbols_unnamed += r.unnamed;
		wk->st.symbols_capped += r.capped;
	}
	pthread_mutex_unlock(&wk->mu);
	if (ret)
		d9_wk_log(wk, "segment %s: cannot make its symbol table: %s; "
			  "it is shipped without one", j->src,
			  dial9_strerror(ret));
}

void d9_job_read_done(struct d9_worker *wk, struct job *j, int res)
{
	if (res < 0) {
		d9_job_fail(wk, j, res, "cannot read it");
		return;
	}
	j->off += (size_t)res;
	if (res > 0 && j->off < j->raw_len) {
		read_more(wk, j);
		return;
	}
	j->raw_len = j->off; /* shorter than at fstat: cut by eviction */
	close(j->fd);
	j->fd = -1;
	j->compressed = d9_lz4_is_frame(j->raw, j->raw_len);
	if (wk->symtab && !j->compressed)
		add_symbols(wk, j);
	j->data = j->raw;
	j->len = j->raw_len;
	{
		uint64_t real = start_real(j);

		if (real)
			j->start_real_ns = real;
	}
	j->state = J_RUN;
	if (wk->wb_dir || wk->steps[wk->nsteps - 1] == STEP_S3)
		summarize(wk, j);
}
