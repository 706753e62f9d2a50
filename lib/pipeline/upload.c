// SPDX-License-Identifier: MIT
/*
 * upload.c - the S3 step: PutObject through libcurl's multi interface,
 * its sockets polled through the worker's ring, SigV4 signed, with a
 * circuit breaker over failures in a row.  Keys and signing helpers are
 * in s3.c.
 */
#include "pipeline/worker.h"

#if DIAL9_S3
/* ---- curl's sockets, polled through the ring ---- */

static void sock_arm(struct d9_worker *wk, struct sock *sk)
{
	struct io_uring_sqe *sqe = d9_wk_sqe(wk);

	io_uring_prep_poll_add(sqe, sk->fd, sk->want);
	io_uring_sqe_set_data(sqe, &sk->op);
	sk->armed = true;
	sk->armed_mask = sk->want;
}

static void sock_cancel(struct d9_worker *wk, struct sock *sk)
{
	struct io_uring_sqe *sqe;

	if (sk->removing)
		return;
	sqe = d9_wk_sqe(wk);
	io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)&sk->op);
	io_uring_sqe_set_data(sqe, &wk->ignore_op);
	sk->removing = true;
}

int d9_sock_cb(CURL *e, curl_socket_t s, int what, void *userp,
	       void *socketp)
{
	struct d9_worker *wk = userp;
	struct sock *sk = socketp;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (!sk)
			return 0;
		curl_multi_assign(wk->multi, s, NULL);
		sk->dead = true;
		sk->want = 0;
		if (wk->closing) {
			free(sk); /* the ring goes next, and its polls */
		} else if (sk->armed) {
			sock_cancel(wk, sk); /* freed when its poll completes */
		} else {
			sk->next_dead = wk->dead;
			wk->dead = sk;
		}
		return 0;
	}
	if (!sk) {
		sk = calloc(1, sizeof(*sk));
		if (!sk)
			return -1;
		sk->op.kind = OP_SOCK;
		sk->op.owner = sk;
		sk->fd = s;
		curl_multi_assign(wk->multi, s, sk);
	}
	sk->want = (what & CURL_POLL_IN ? POLLIN : 0) |
		   (what & CURL_POLL_OUT ? POLLOUT : 0);
	if (!sk->armed)
		sock_arm(wk, sk);
	else if (sk->armed_mask != sk->want)
		sock_cancel(wk, sk); /* re-armed with the new mask */
	return 0;
}

int d9_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	struct d9_worker *wk = userp;

	(void)m;
	wk->curl_deadline = timeout_ms < 0 ? NO_DEADLINE :
			    d9_clock_gettime_ns() + (uint64_t)timeout_ms * D9_NS_PER_MS;
	return 0;
}

void d9_sock_event(struct d9_worker *wk, struct sock *sk, int res)
{
	int running;

	sk->armed = false;
	sk->removing = false;
	if (sk->dead) {
		sk->next_dead = wk->dead;
		wk->dead = sk;
		return;
	}
	if (res > 0) {
		int ev = (res & POLLIN ? CURL_CSELECT_IN : 0) |
			 (res & POLLOUT ? CURL_CSELECT_OUT : 0) |
			 (res & (POLLERR | POLLHUP) ? CURL_CSELECT_ERR : 0);

		curl_multi_socket_action(wk->multi, sk->fd, ev, &running);
	}
	/* d9_sock_cb may have removed it meanwhile (then it is on wk->dead) */
	if (!sk->dead && sk->want && !sk->armed)
		sock_arm(wk, sk);
}
#endif /* DIAL9_S3 */


/* ---- S3 ---- */
#if DIAL9_S3

static size_t sink(char *p, size_t size, size_t n, void *arg)
{
	struct job *j = arg;
	size_t len = size * n, room = sizeof(j->resp) - 1 - j->resp_len;

	for (size_t i = 0; i < len && room; i++, room--) /* one log line */
		j->resp[j->resp_len++] = p[i] == '\n' || p[i] == '\r' ? ' ' : p[i];
	j->resp[j->resp_len] = 0;
	return len;
}

/* A header value in printable ASCII (others become '_'). */
static int add_header(struct curl_slist **l, const char *name,
		      const char *value)
{
	char buf[600];
	int n = snprintf(buf, sizeof(buf), "%s: ", name);
	struct curl_slist *nl;

	for (const char *p = value; *p && n < (int)sizeof(buf) - 1; p++)
		buf[n++] = *p >= 0x20 && *p < 0x7f ? *p : '_';
	buf[n] = 0;
	nl = curl_slist_append(*l, buf);
	if (!nl)
		return -ENOMEM;
	*l = nl;
	return 0;
}

static int s3_prepare(struct d9_worker *wk, struct job *j)
{
	struct d9_s3_target t = {
		.prefix = wk->prefix, .service = wk->service, .host = wk->host,
		.boot_id = wk->boot_id, .index = j->index,
		.start_real_ns = j->start_real_ns,
		.ext = j->compressed ? ".bin.lz4" : ".bin",
	};
	char key[1024], ekey[3072], ebucket[200], sha[65], idx[24], when[96];
	time_t secs = (time_t)(j->start_real_ns / 1000000000ull);
	struct tm tm;
	int ret;

	if (j->manifest)
		ret = snprintf(key, sizeof(key), "%s", j->key) >= (int)sizeof(key) ?
			      -ENAMETOOLONG : 0;
	else if (j->summary)
		ret = d9_s3_summary_key(&t, key, sizeof(key));
	else
		ret = d9_s3_key(&t, key, sizeof(key));
	if (!ret && !j->key && !(j->key = strdup(key)))
		ret = -ENOMEM;
	if (!ret)
		ret = d9_s3_uri_encode(key, true, ekey, sizeof(ekey));
	if (!ret)
		ret = d9_s3_uri_encode(wk->bucket, false, ebucket, sizeof(ebucket));
	if (!ret)
		ret = d9_sha256_hex(j->data, j->len, sha);
	if (ret)
		return ret;
	if (wk->endpoint)
		ret = asprintf(&j->url, "%s/%s/%s", wk->endpoint, ebucket, ekey);
	else
		ret = asprintf(&j->url, "https://%s.s3.%s.amazonaws.com/%s",
			       wk->bucket, wk->region, ekey);
	if (ret < 0) {
		j->url = NULL;
		return -ENOMEM;
	}
	snprintf(idx, sizeof(idx), "%llu", (unsigned long long)j->index);
	gmtime_r(&secs, &tm);
	snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec,
		 (unsigned int)(j->start_real_ns / 1000000 % 1000));
	if (add_header(&j->hdrs, "Content-Type", j->manifest ? "application/json" :
				      j->summary ? "application/gzip" :
				      "application/octet-stream") ||
	    (j->dump && add_header(&j->hdrs, "x-amz-meta-dump-id", j->dump->id)) ||
	    add_header(&j->hdrs, "x-amz-content-sha256", sha) ||
	    add_header(&j->hdrs, "x-amz-meta-service", wk->service) ||
	    add_header(&j->hdrs, "x-amz-meta-boot-id", wk->boot_id) ||
	    (!j->manifest &&
	     (add_header(&j->hdrs, "x-amz-meta-segment-index", idx) ||
	      add_header(&j->hdrs, "x-amz-meta-start-time", when))) ||
	    add_header(&j->hdrs, "x-amz-meta-host", wk->host) ||
	    (wk->token && add_header(&j->hdrs, "x-amz-security-token", wk->token)))
		return -ENOMEM;
	/* no "Expect:" to turn 100-continue off: curl would sign it */
	j->easy = curl_easy_init();
	if (!j->easy)
		return -ENOMEM;
	curl_easy_setopt(j->easy, CURLOPT_URL, j->url);
	curl_easy_setopt(j->easy, CURLOPT_CUSTOMREQUEST, "PUT");
	curl_easy_setopt(j->easy, CURLOPT_POSTFIELDS, j->data);
	curl_easy_setopt(j->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->len);
	curl_easy_setopt(j->easy, CURLOPT_HTTPHEADER, j->hdrs);
	curl_easy_setopt(j->easy, CURLOPT_AWS_SIGV4, wk->sigv4);
	curl_easy_setopt(j->easy, CURLOPT_USERNAME, wk->ak);
	curl_easy_setopt(j->easy, CURLOPT_PASSWORD, wk->sk);
	curl_easy_setopt(j->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(j->easy, CURLOPT_TIMEOUT_MS, (long)wk->upload_timeout_ms);
	curl_easy_setopt(j->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(wk->upload_timeout_ms < 10000 ?
					wk->upload_timeout_ms : 10000));
	curl_easy_setopt(j->easy, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(j->easy, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(j->easy, CURLOPT_PRIVATE, j);
	return 0;
}

void d9_s3_start(struct d9_worker *wk, struct job *j)
{
	int ret;

	if (!j->easy) {
		ret = s3_prepare(wk, j);
		if (ret) {
			if (j->probe)
				wk->probe_inflight = false;
			d9_job_fail(wk, j, ret, "cannot prepare the upload");
			return;
		}
	}
	j->resp_len = 0;
	j->resp[0] = 0;
	if (curl_multi_add_handle(wk->multi, j->easy) != CURLM_OK) {
		if (j->probe)
			wk->probe_inflight = false;
		j->probe = false;
		d9_job_retry(wk, j, -ENOMEM, "cannot start the upload");
		return;
	}
	j->state = J_UPLOADING;
	pthread_mutex_lock(&wk->mu);
	wk->st.s3_puts++;
	pthread_mutex_unlock(&wk->mu);
}

static void breaker_set(struct d9_worker *wk, bool open)
{
	pthread_mutex_lock(&wk->mu);
	if (open && !wk->breaker_open)
		wk->st.s3_breaker_opens++;
	wk->st.s3_breaker_open = open;
	pthread_mutex_unlock(&wk->mu);
	wk->breaker_open = open;
}

static int curl_errno(int res)
{
	switch (res) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		return -ECONNRESET;
	}
	return -EIO;
}

static void s3_done(struct d9_worker *wk, struct job *j, int res)
{
	long status = 0;
	char what[400];
	bool probe = j->probe;

	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(wk->multi, j->easy);
	if (probe)
		wk->probe_inflight = false;
	j->probe = false;
	switch (d9_s3_classify(res, status)) {
	case D9_S3_OK:
		wk->fails_in_row = 0;
		wk->breaker_delay = 0;
		if (wk->breaker_open) {
			breaker_set(wk, false);
			d9_wk_log(wk, "S3 uploads work again");
		}
		j->step++;
		j->state = J_RUN;
		return;
	case D9_S3_RETRY:
		if (status)
			snprintf(what, sizeof(what), "PutObject answered HTTP %ld %.200s",
				 status, j->resp);
		else
			snprintf(what, sizeof(what), "PutObject failed: %s",
				 curl_easy_strerror((CURLcode)res));
		d9_job_retry(wk, j, status ? (int)status : curl_errno(res), what);
		pthread_mutex_lock(&wk->mu);
		wk->st.s3_retries++;
		pthread_mutex_unlock(&wk->mu);
		wk->fails_in_row++;
		if (probe || (!wk->breaker_open && wk->fails_in_row >= BREAKER_AFTER)) {
			uint64_t cap = wk->retry_max_ns;

			wk->breaker_delay = wk->breaker_delay ?
						    wk->breaker_delay * 2 :
						    BREAKER_FIRST_MS * D9_NS_PER_MS;
			if (wk->breaker_delay > cap)
				wk->breaker_delay = cap;
			wk->breaker_until = d9_clock_gettime_ns() + wk->breaker_delay;
			if (!wk->breaker_open)
				d9_wk_log(wk, "S3 endpoint failing: no upload for %llu ms",
				     (unsigned long long)(wk->breaker_delay /
							  D9_NS_PER_MS));
			breaker_set(wk, true);
		}
		return;
	case D9_S3_TERMINAL:
		/* the endpoint answered: it is up */
		wk->fails_in_row = 0;
		if (wk->breaker_open)
			breaker_set(wk, false);
		if (status)
			snprintf(what, sizeof(what),
				 "PutObject refused with HTTP %ld %.200s", status,
				 j->resp);
		else
			snprintf(what, sizeof(what), "PutObject failed: %s",
				 curl_easy_strerror((CURLcode)res));
		d9_job_fail(wk, j, status ? (int)status : curl_errno(res), what);
		return;
	}
}

void d9_s3_reap(struct d9_worker *wk)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(wk->multi, &left))) {
		struct job *j = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
		if (j)
			s3_done(wk, j, m->data.result);
	}
}
#else
/* Never reached: d9_worker_new() refuses DIAL9_PIPE_S3 in this build. */
void d9_s3_start(struct d9_worker *wk, struct job *j)
{
	d9_job_fail(wk, j, -EOPNOTSUPP, "S3 upload is not in this build");
}
#endif /* DIAL9_S3 */
