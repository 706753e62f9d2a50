// SPDX-License-Identifier: MIT
/*
 * lifecycle.c - the worker's lifecycle: configuration checked, the
 * thread started and stopped, segments submitted, counters read.
 */
#include "pipeline/worker.h"

#if DIAL9_S3
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}
#endif

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

void d9_worker_free(struct d9_worker *wk)
{
	if (!wk)
		return;
	wk->closing = true;
	while (wk->qhead) { /* never started: nothing was taken */
		struct job *j = wk->qhead;

		wk->qhead = j->next;
		d9_job_free(j);
	}
#if DIAL9_S3
	if (wk->multi)
		curl_multi_cleanup(wk->multi);
#endif
	if (wk->ring_ok)
		io_uring_queue_exit(&wk->ring);
	if (wk->efd >= 0)
		close(wk->efd);
	d9_wk_free_dead(wk);
	d9_symtab_free(wk->symtab);
	free(wk->wb_dir);
	free(wk->bucket);
	free(wk->prefix);
	free(wk->region);
	free(wk->endpoint);
	free(wk->ak);
	free(wk->sk);
	free(wk->token);
	pthread_mutex_destroy(&wk->mu);
	free(wk);
}

int d9_worker_new(struct d9_worker **out, const struct dial9_config *cfg)
{
	uint32_t p = cfg->pipeline;
	struct d9_worker *wk;

	*out = NULL;
	if (p & ~(DIAL9_PIPE_LZ4 | DIAL9_PIPE_WRITE_BACK | DIAL9_PIPE_S3))
		return -EINVAL;
	if (!p)
		return 0;
	if ((p & DIAL9_PIPE_WRITE_BACK) && (p & DIAL9_PIPE_S3))
		return -EINVAL;
	if ((p & DIAL9_PIPE_WRITE_BACK) &&
	    (!cfg->write_back_dir || !*cfg->write_back_dir))
		return -EINVAL;
	if ((p & DIAL9_PIPE_S3) && (!cfg->s3_bucket || !*cfg->s3_bucket))
		return -EINVAL;
	if ((p & DIAL9_PIPE_S3) && !DIAL9_S3) {
		d9_log("S3 upload (bucket \"%s\") is not in this libdial9: it "
		       "was built without it (make DIAL9_S3=0); nothing is "
		       "recorded", cfg->s3_bucket);
		return -EOPNOTSUPP;
	}
	wk = calloc(1, sizeof(*wk));
	if (!wk)
		return -ENOMEM;
	wk->efd = -1;
	pthread_mutex_init(&wk->mu, NULL);
	if (p & DIAL9_PIPE_LZ4)
		wk->steps[wk->nsteps++] = STEP_LZ4;
	if (p & DIAL9_PIPE_S3)
		wk->steps[wk->nsteps++] = STEP_S3;
	else
		wk->steps[wk->nsteps++] = STEP_WRITE; /* write-back or in place */
	wk->concurrency = cfg->upload_concurrency ? cfg->upload_concurrency : 4;
	if (cfg->host_name && *cfg->host_name)
		snprintf(wk->host, sizeof(wk->host), "%s", cfg->host_name);
	wk->upload_timeout_ms = cfg->upload_timeout_ms ? cfg->upload_timeout_ms :
							  30000;
	wk->retry_base_ns = (uint64_t)(cfg->retry_base_ms ? cfg->retry_base_ms :
							    500) * D9_NS_PER_MS;
	wk->retry_max_ns = (uint64_t)(cfg->retry_max_ms ? cfg->retry_max_ms :
							  300000) * D9_NS_PER_MS;
	if (wk->retry_max_ns < wk->retry_base_ns)
		wk->retry_max_ns = wk->retry_base_ns;
	/* frames come with DIAL9_SCHED_STACKS and CPU samples: without
	 * either, nothing to do */
	if (cfg->symbols != DIAL9_SYMBOLS_OFF &&
	    ((cfg->sched_flags & DIAL9_SCHED_STACKS) || cfg->cpu_sample_hz) &&
	    d9_symtab_new(&wk->symtab, cfg->symbols_max_frames))
		goto out_nomem;
	wk->file_mode = cfg->trace_mode == 0640 ? 0640 : 0600;
	wk->dir_mode = wk->file_mode == 0640 ? 0750 : 0700;
	if (p & DIAL9_PIPE_WRITE_BACK) {
		wk->wb_dir = strdup(cfg->write_back_dir);
		if (!wk->wb_dir)
			goto out_nomem;
	}
	if (p & DIAL9_PIPE_S3) {
		const char *endpoint = cfg->s3_endpoint;

		wk->bucket = strdup(cfg->s3_bucket);
		wk->prefix = strdup(cfg->s3_prefix ? cfg->s3_prefix : "dial9-traces");
		wk->region = strdup(cfg->s3_region && *cfg->s3_region ?
					    cfg->s3_region : "us-east-1");
		wk->endpoint = dup_or_null(endpoint);
		wk->ak = dup_or_null(getenv("AWS_ACCESS_KEY_ID"));
		wk->sk = dup_or_null(getenv("AWS_SECRET_ACCESS_KEY"));
		wk->token = dup_or_null(getenv("AWS_SESSION_TOKEN"));
		if (!wk->bucket || !wk->prefix || !wk->region)
			goto out_nomem;
		if (!wk->ak || !wk->sk) {
			d9_log("S3 upload needs AWS_ACCESS_KEY_ID and "
			       "AWS_SECRET_ACCESS_KEY in the environment");
			d9_worker_free(wk);
			return -ENOKEY;
		}
		/* no trailing '/' on the endpoint; no '/' around the prefix */
		if (wk->endpoint) {
			size_t n = strlen(wk->endpoint);

			while (n && wk->endpoint[n - 1] == '/')
				wk->endpoint[--n] = 0;
		}
		{
			size_t n = strlen(wk->prefix);
			char *s = wk->prefix;

			while (n && s[n - 1] == '/')
				s[--n] = 0;
			while (*s == '/')
				memmove(s, s + 1, strlen(s));
		}
		snprintf(wk->sigv4, sizeof(wk->sigv4), "aws:amz:%s:s3", wk->region);
#if DIAL9_S3
		pthread_once(&curl_once, curl_init_once);
#endif
	}
	*out = wk;
	return 0;
out_nomem:
	d9_worker_free(wk);
	return -ENOMEM;
}

int d9_worker_start(struct d9_worker *wk, const char *boot_id,
		    const char *service, d9_shipped_fn *shipped,
		    void *shipped_ctx, void (*on_thread)(void *ctx), void *ctx)
{
	int ret;

	wk->shipped = shipped;
	wk->shipped_ctx = shipped_ctx;
	wk->on_thread = on_thread;
	wk->on_thread_ctx = ctx;
	snprintf(wk->boot_id, sizeof(wk->boot_id), "%s", boot_id);
	snprintf(wk->service, sizeof(wk->service), "%s", service);
	if (!wk->host[0] && gethostname(wk->host, sizeof(wk->host) - 1))
		strcpy(wk->host, "unknown");
	if (getrandom(&wk->seed, sizeof(wk->seed), GRND_NONBLOCK) < 0)
		wk->seed = (unsigned int)d9_clock_gettime_ns();
	wk->wake_op.kind = OP_WAKE;
	wk->ignore_op.kind = OP_IGNORE;
	wk->curl_deadline = NO_DEADLINE;
	wk->efd = eventfd(0, EFD_CLOEXEC);
	if (wk->efd < 0)
		return -errno;
	ret = io_uring_queue_init(RING_DEPTH, &wk->ring, 0);
	if (ret) {
		d9_log("the worker pipeline needs io_uring: %s", strerror(-ret));
		return ret;
	}
	wk->ring_ok = true;
#if DIAL9_S3
	if (wk->bucket) {
		wk->multi = curl_multi_init();
		if (!wk->multi)
			return -ENOMEM;
		curl_multi_setopt(wk->multi, CURLMOPT_SOCKETFUNCTION, d9_sock_cb);
		curl_multi_setopt(wk->multi, CURLMOPT_SOCKETDATA, wk);
		curl_multi_setopt(wk->multi, CURLMOPT_TIMERFUNCTION, d9_timer_cb);
		curl_multi_setopt(wk->multi, CURLMOPT_TIMERDATA, wk);
	}
#endif
	ret = -pthread_create(&wk->thread, NULL, d9_wk_main, wk);
	if (ret)
		return ret;
	wk->started = true;
	return 0;
}

/*
 * Hand a job to the worker thread (the flush thread never waits on it);
 * a segment's job counts as pending until it is through.
 */
void d9_wk_enqueue(struct d9_worker *wk, struct job *j, bool segment)
{
	pthread_mutex_lock(&wk->mu);
	if (wk->qtail)
		wk->qtail->next = j;
	else
		wk->qhead = j;
	wk->qtail = j;
	if (segment)
		wk->st.pipe_pending++;
	pthread_mutex_unlock(&wk->mu);
	d9_wk_wake(wk);
}

void d9_worker_submit(struct d9_worker *wk, uint64_t index, const char *path)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		d9_wk_count_error(wk, -ENOMEM); /* the segment stays on disk */
		return;
	}
	j->index = index;
	j->fd = -1;
	j->op.owner = j;
	snprintf(j->src, sizeof(j->src), "%s", path);
	d9_wk_enqueue(wk, j, true);
}

void d9_worker_submit_fd(struct d9_worker *wk, uint64_t index,
			 const char *label, int fd)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		close(fd);
		d9_wk_count_error(wk, -ENOMEM);
		return;
	}
	j->index = index;
	j->fd = fd;
	j->mem = true;
	j->op.owner = j;
	snprintf(j->src, sizeof(j->src), "%s", label);
	d9_wk_enqueue(wk, j, true);
}

void d9_worker_stop(struct d9_worker *wk, unsigned int timeout_ms)
{
	if (!wk || !wk->started)
		return;
	pthread_mutex_lock(&wk->mu);
	wk->stop = true;
	wk->stop_deadline = d9_clock_gettime_ns() + (uint64_t)timeout_ms * D9_NS_PER_MS;
	pthread_mutex_unlock(&wk->mu);
	d9_wk_wake(wk);
	pthread_join(wk->thread, NULL);
	wk->started = false;
}

uint64_t d9_worker_cpu_ns(struct d9_worker *wk)
{
	return wk ? atomic_load(&wk->cpu_ns) : 0;
}

void d9_worker_stats(struct d9_worker *wk, struct dial9_stats *st)
{
	if (!wk)
		return;
	pthread_mutex_lock(&wk->mu);
	st->pipe_done = wk->st.pipe_done;
	st->pipe_pending = wk->st.pipe_pending;
	st->pipe_bytes_in = wk->st.pipe_bytes_in;
	st->pipe_bytes_out = wk->st.pipe_bytes_out;
	st->pipe_failed = wk->st.pipe_failed;
	st->pipe_errors = wk->st.pipe_errors;
	st->pipe_abandoned = wk->st.pipe_abandoned;
	st->s3_puts = wk->st.s3_puts;
	st->s3_retries = wk->st.s3_retries;
	st->s3_breaker_opens = wk->st.s3_breaker_opens;
	st->pipe_last_error = wk->st.pipe_last_error;
	st->s3_breaker_open = wk->st.s3_breaker_open;
	st->dumps_done = wk->st.dumps_done;
	st->summaries_done = wk->st.summaries_done;
	st->summaries_failed = wk->st.summaries_failed;
	st->symbols_segments = wk->st.symbols_segments;
	st->symbols_named = wk->st.symbols_named;
	st->symbols_unnamed = wk->st.symbols_unnamed;
	st->symbols_capped = wk->st.symbols_capped;
	st->symbols_failed = wk->st.symbols_failed;
	pthread_mutex_unlock(&wk->mu);
}
