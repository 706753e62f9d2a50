// SPDX-License-Identifier: MIT
/*
 * dump.c - trigger mode: a dump's segments through the pipeline with the
 * dump's id, then (S3) its manifest; the receipt the caller waits for.
 */
#include "pipeline/worker.h"

/* Dumps are shared with the threads that wait for them (which may
 * outlive the worker): one lock and condition for all of them. */
pthread_mutex_t d9_dump_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dump_cv;
static pthread_once_t dump_once = PTHREAD_ONCE_INIT;

static void dump_cv_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dump_cv, &ca);
	pthread_condattr_destroy(&ca);
}



/* A ULID: 48 bits of milliseconds since the epoch, 80 random bits, in
 * Crockford's base32 (26 characters, sortable by time). */
static void make_ulid(char out[32])
{
	static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	uint64_t ms = d9_clock_realtime_ns() / 1000000ull;
	uint8_t rnd[10];
	unsigned __int128 v;

	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd)) {
		uint64_t t = d9_clock_gettime_ns() ^ ((uint64_t)getpid() << 32);

		memcpy(rnd, &t, 8);
		memcpy(rnd + 8, &t, 2);
	}
	v = (unsigned __int128)(ms & 0xffffffffffffull) << 80;
	for (int i = 0; i < 10; i++)
		v |= (unsigned __int128)rnd[i] << (8 * (9 - i));
	for (int i = 25; i >= 0; i--) {
		out[i] = b32[(unsigned int)(v & 31)];
		v >>= 5;
	}
	out[26] = 0;
}

static void iso_time(uint64_t real_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(real_ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (unsigned int)(real_ns / 1000000 % 1000));
}

/* {prefix}/dumps/{id}.json: what the dump holds and where it went. */
static char *manifest_json(struct d9_worker *wk, struct d9_dump *d, size_t *len)
{
	char *buf = NULL, t[64];
	size_t done = 0;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	pthread_mutex_lock(&d9_dump_mu);
	for (size_t i = 0; i < d->n; i++)
		done += d->segs[i].status > 0;
	fprintf(f, "{\n  \"dump_id\": \"%s\",\n  \"triggered_at\": ", d->id);
	iso_time(d->triggered_real_ns, t, sizeof(t));
	d9_json_str(f, t);
	fprintf(f, ",\n  \"reason\": ");
	d9_json_str(f, d->reason);
	fprintf(f, ",\n  \"service\": ");
	d9_json_str(f, wk->service);
	fprintf(f, ",\n  \"host\": ");
	d9_json_str(f, wk->host);
	fprintf(f, ",\n  \"boot_id\": ");
	d9_json_str(f, wk->boot_id);
	iso_time((uint64_t)((int64_t)d->start_ns + d->real_off), t, sizeof(t));
	fprintf(f, ",\n  \"time_range\": {\"start\": \"%s\", ", t);
	iso_time((uint64_t)((int64_t)d->end_ns + d->real_off), t, sizeof(t));
	fprintf(f, "\"end\": \"%s\", \"start_mono_ns\": %llu, "
		   "\"end_mono_ns\": %llu},\n", t,
		(unsigned long long)d->start_ns, (unsigned long long)d->end_ns);
	fprintf(f, "  \"segments_processed\": %zu,\n  \"metadata\": {\"reason\": ",
		done);
	d9_json_str(f, d->reason);
	fprintf(f, "},\n  \"segments\": [");
	for (size_t i = 0; i < d->n; i++) {
		struct dseg *e = &d->segs[i];

		fprintf(f, "%s\n    {\"index\": %llu, \"status\": \"%s\", \"key\": ",
			i ? "," : "", (unsigned long long)e->index,
			e->status > 0 ? "uploaded" : "failed");
		d9_json_str(f, e->status > 0 ? e->key : NULL);
		fprintf(f, ", \"bytes\": %llu, \"sealed_bytes\": %llu}",
			(unsigned long long)e->bytes_out,
			(unsigned long long)e->bytes_in);
	}
	fprintf(f, "%s]\n}\n", d->n ? "\n  " : "");
	pthread_mutex_unlock(&d9_dump_mu);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Every segment of d is through (or not): the manifest, or the end. */
void d9_dump_segments_ended(struct d9_worker *wk, struct d9_dump *d)
{
	struct job *j;

	if (!wk->bucket || wk->abandoning) {
		d9_dump_complete(wk, d, !wk->bucket);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (j)
		j->raw = (uint8_t *)manifest_json(wk, d, &j->raw_len);
	if (!j || !j->raw || !(j->key = strdup(d->manifest_key))) {
		d9_job_free(j);
		d9_wk_count_error(wk, -ENOMEM);
		d9_dump_complete(wk, d, false);
		return;
	}
	j->fd = -1;
	j->op.owner = j;
	j->manifest = true;
	j->dump = d;
	j->data = j->raw;
	j->len = j->raw_len;
	snprintf(j->src, sizeof(j->src), "manifest of dump %s", d->id);
	d9_wk_enqueue(wk, j, false);
}

void d9_dump_complete(struct d9_worker *wk, struct d9_dump *d, bool mok)
{
	/* counted before a waiter can see it complete */
	pthread_mutex_lock(&wk->mu);
	wk->st.dumps_done++;
	pthread_mutex_unlock(&wk->mu);
	pthread_mutex_lock(&d9_dump_mu);
	d->manifest_ok = mok;
	d->complete = true;
	pthread_cond_broadcast(&dump_cv);
	pthread_mutex_unlock(&d9_dump_mu);
	d9_dump_put(d); /* the worker's reference */
}

struct d9_dump *d9_dump_get(struct d9_dump *d)
{
	if (d)
		atomic_fetch_add(&d->refs, 1);
	return d;
}

void d9_dump_put(struct d9_dump *d)
{
	if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->segs[i].key);
	free(d->segs);
	free(d);
}

struct d9_dump *d9_worker_dump(struct d9_worker *wk,
			       const struct d9_ckpt_seg *segs, size_t n,
			       const char *reason, uint64_t now)
{
	struct d9_dump *d = calloc(1, sizeof(*d));
	struct job **jobs = calloc(n ? n : 1, sizeof(*jobs));
	uint64_t real = d9_clock_realtime_ns();

	pthread_once(&dump_once, dump_cv_init);
	if (!d || !jobs || !(d->segs = calloc(n ? n : 1, sizeof(*d->segs))))
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		jobs[i] = calloc(1, sizeof(**jobs));
		if (!jobs[i])
			goto nomem;
	}
	atomic_init(&d->refs, 2); /* the worker's and the caller's */
	make_ulid(d->id);
	snprintf(d->reason, sizeof(d->reason), "%s", reason ? reason : "");
	d->triggered_real_ns = real;
	d->real_off = (int64_t)real - (int64_t)d9_clock_gettime_ns();
	d->n = d->remaining = n;
	d->start_ns = n ? segs[0].start_ns : now;
	d->end_ns = n ? segs[n - 1].end_ns : now;
	d->want_manifest = wk->bucket != NULL;
	if (wk->bucket)
		snprintf(d->manifest_key, sizeof(d->manifest_key), "%s%sdumps/%s.json",
			 wk->prefix, *wk->prefix ? "/" : "", d->id);
	for (size_t i = 0; i < n; i++) {
		struct job *j = jobs[i];

		d->segs[i].index = segs[i].index;
		d->segs[i].bytes_in = segs[i].bytes;
		d->segs[i].start_ns = segs[i].start_ns;
		d->segs[i].end_ns = segs[i].end_ns;
		if (segs[i].start_ns < d->start_ns)
			d->start_ns = segs[i].start_ns;
		if (segs[i].end_ns > d->end_ns)
			d->end_ns = segs[i].end_ns;
		j->index = segs[i].index;
		j->fd = segs[i].fd;
		j->mem = segs[i].fd >= 0;
		j->op.owner = j;
		j->dump = d;
		j->dseg = i;
		snprintf(j->src, sizeof(j->src), "%s", segs[i].path);
	}
	pthread_mutex_lock(&wk->mu);
	for (size_t i = 0; i < n; i++) {
		if (wk->qtail)
			wk->qtail->next = jobs[i];
		else
			wk->qhead = jobs[i];
		wk->qtail = jobs[i];
	}
	wk->st.pipe_pending += n;
	pthread_mutex_unlock(&wk->mu);
	free(jobs);
	if (!n)
		d9_dump_segments_ended(wk, d);
	d9_wk_wake(wk);
	return d;
nomem:
	for (size_t i = 0; jobs && i < n; i++)
		free(jobs[i]);
	free(jobs);
	if (d)
		free(d->segs);
	free(d);
	return NULL;
}

int d9_dump_wait(struct d9_dump *d, unsigned int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	pthread_once(&dump_once, dump_cv_init);
	ts = d9_deadline_ms(timeout_ms);
	pthread_mutex_lock(&d9_dump_mu);
	while (!d->complete && !ret)
		ret = pthread_cond_timedwait(&dump_cv, &d9_dump_mu, &ts);
	ret = d->complete ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&d9_dump_mu);
	return ret;
}

void d9_dump_receipt(struct d9_dump *d, struct dial9_dump_receipt *r)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	pthread_mutex_lock(&d9_dump_mu);
	snprintf(r->dump_id, sizeof(r->dump_id), "%s", d->id);
	r->segments = d->n;
	for (size_t i = 0; i < d->n; i++) {
		r->segments_done += d->segs[i].status > 0;
		r->segments_failed += d->segs[i].status < 0;
	}
	if (d->n) {
		r->first_index = d->segs[0].index;
		r->last_index = d->segs[d->n - 1].index;
	}
	r->start_ns = d->start_ns;
	r->end_ns = d->end_ns;
	r->start_real_ns = (uint64_t)((int64_t)d->start_ns + d->real_off);
	r->end_real_ns = (uint64_t)((int64_t)d->end_ns + d->real_off);
	r->triggered_real_ns = d->triggered_real_ns;
	if (d->want_manifest)
		snprintf(r->manifest_key, sizeof(r->manifest_key), "%s",
			 d->manifest_key);
	if (!d->complete)
		r->status = -EINPROGRESS;
	else if (d->cancelled)
		r->status = -ECANCELED;
	else if (r->segments_failed || !d->manifest_ok)
		r->status = -EIO;
	pthread_mutex_unlock(&d9_dump_mu);
}
