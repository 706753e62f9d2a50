// SPDX-License-Identifier: MIT
/*
 * worker.c - the worker thread: takes sealed segments oldest first
 * through the configured steps (LZ4, then write-back to a directory or
 * an S3 PutObject; LZ4 alone compresses in place). With a destination,
 * each segment's summary (summary.c) follows it there as a job of its
 * own.
 *
 * One thread, one io_uring event loop: segment reads, write-back writes
 * and fsyncs, the wake-up eventfd and the sockets of libcurl's multi
 * interface (its socket callback arms one-shot io_uring polls, its timer
 * callback sets the loop's wait deadline) all complete on the same ring,
 * so several uploads proceed at once without a thread each.
 *
 * The flush thread only appends to a queue under a mutex and writes the
 * eventfd: nothing here can block recording. A failing step is counted,
 * logged at most every LOG_EVERY_NS, and retried with exponential
 * backoff and jitter (transient) or left on disk (terminal).
 *
 * This file holds the loop and what every step uses; worker.h lists the
 * files of the steps.
 */
#include "pipeline/worker.h"

/* At most one line per LOG_EVERY_NS; the rest are counted. */
void d9_wk_log(struct d9_worker *wk, const char *fmt, ...)
{
	uint64_t now = d9_clock_gettime_ns();
	char msg[400];
	va_list ap;

	if (now < wk->log_next) {
		wk->log_suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (wk->log_suppressed)
		d9_log("%s (and %u similar messages)", msg, wk->log_suppressed);
	else
		d9_log("%s", msg);
	wk->log_next = now + LOG_EVERY_NS;
	wk->log_suppressed = 0;
}

void d9_wk_count_error(struct d9_worker *wk, int err)
{
	pthread_mutex_lock(&wk->mu);
	wk->st.pipe_errors++;
	wk->st.pipe_last_error = err;
	pthread_mutex_unlock(&wk->mu);
}

struct io_uring_sqe *d9_wk_sqe(struct d9_worker *wk)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&wk->ring);

	if (!sqe) {
		io_uring_submit(&wk->ring);
		sqe = io_uring_get_sqe(&wk->ring);
	}
	return sqe; /* the ring is never this full: RING_DEPTH > ops */
}

static void arm_wake(struct d9_worker *wk)
{
	struct io_uring_sqe *sqe = d9_wk_sqe(wk);

	io_uring_prep_read(sqe, wk->efd, &wk->wake_buf, sizeof(wk->wake_buf), 0);
	io_uring_sqe_set_data(sqe, &wk->wake_op);
}

void d9_wk_wake(struct d9_worker *wk)
{
	uint64_t one = 1;

	if (write(wk->efd, &one, sizeof(one)) < 0)
		(void)0; /* the counter is already non-zero */
}


/* ---- the steps ---- */

static void finish(struct d9_worker *wk, struct job *j)
{
	bool in_place = wk->steps[wk->nsteps - 1] == STEP_WRITE && !wk->wb_dir;

	if (j->manifest || j->summary) {
		d9_job_end(wk, j, END_DONE, 0);
		return;
	}
	if (!j->mem && unlink(j->src) && errno != ENOENT)
		d9_wk_log(wk, "cannot delete %s after shipping it: %s", j->src,
		     strerror(errno));
	d9_job_end(wk, j, END_DONE, in_place ? j->len : 0);
}

/* Run a job's steps until one has to wait. */
static void run(struct d9_worker *wk, struct job *j)
{
	while (j->state == J_RUN) {
		if (j->step == wk->nsteps) {
			finish(wk, j);
			return;
		}
		switch (wk->steps[j->step]) {
		case STEP_LZ4:
			if (!j->compressed) {
				void *out;
				size_t n;
				int ret = d9_lz4_compress(j->raw, j->raw_len, &out, &n);

				if (ret) {
					d9_job_fail(wk, j, ret, "cannot compress it");
					return;
				}
				j->data = out;
				j->len = n;
				j->compressed = true;
			}
			j->step++;
			break;
		case STEP_WRITE:
			d9_wb_start(wk, j);
			return;
		case STEP_S3:
			j->state = J_WAIT;
			j->retry_at = 0;
			return;
		}
	}
}

/* Start what is due: steps to run, retries whose time has come, and
 * uploads if the circuit breaker lets them. */
static void progress(struct d9_worker *wk, uint64_t now)
{
	struct job *j = wk->active, *next;

	for (; j; j = next) {
		next = j->next; /* run() may free j, never another job */
		if (j->state == J_RUN)
			run(wk, j);
	}
	for (j = wk->active; j; j = next) {
		next = j->next;
		if (j->state != J_WAIT || j->retry_at > now)
			continue;
		if (wk->steps[j->step] != STEP_S3) {
			j->state = J_RUN;
			continue;
		}
		if (wk->breaker_open) {
			if (now < wk->breaker_until || wk->probe_inflight)
				continue;
			wk->probe_inflight = true; /* half open: one attempt */
			j->probe = true;
		}
		d9_s3_start(wk, j);
	}
}

static uint64_t next_deadline(struct d9_worker *wk, uint64_t stop_deadline)
{
	uint64_t d = wk->curl_deadline;

	if (stop_deadline && stop_deadline < d)
		d = stop_deadline;
	for (struct job *j = wk->active; j; j = j->next) {
		uint64_t t;

		if (j->state == J_RUN)
			return 0;
		if (j->state != J_WAIT)
			continue;
		t = j->retry_at;
		if (wk->steps[j->step] == STEP_S3 && wk->breaker_open &&
		    !wk->probe_inflight && wk->breaker_until > t)
			t = wk->breaker_until;
		if (t < d)
			d = t;
	}
	return d;
}

static void handle_cqe(struct d9_worker *wk, struct io_uring_cqe *cqe)
{
	struct op *op = io_uring_cqe_get_data(cqe);
	int res = cqe->res;

	if (!op)
		return;
	switch (op->kind) {
	case OP_WAKE:
		arm_wake(wk);
		break;
#if DIAL9_S3
	case OP_SOCK:
		d9_sock_event(wk, op->owner, res);
		break;
#endif
	case OP_READ:
		d9_job_read_done(wk, op->owner, res);
		break;
	case OP_WRITE:
		d9_wb_write_done(wk, op->owner, res);
		break;
	case OP_FSYNC:
		d9_wb_fsync_done(wk, op->owner, res);
		break;
	default:
		break;
	}
}

static void wait_events(struct d9_worker *wk, uint64_t deadline)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts;
	uint64_t now = d9_clock_gettime_ns(), wait;
	unsigned int head, n = 0;

	wait = deadline <= now ? 0 : deadline - now;
	if (wait > MAX_WAIT_NS)
		wait = MAX_WAIT_NS;
	ts.tv_sec = (long long)(wait / 1000000000ull);
	ts.tv_nsec = (long long)(wait % 1000000000ull);
	if (wait)
		io_uring_submit_and_wait_timeout(&wk->ring, &cqe, 1, &ts, NULL);
	else
		io_uring_submit(&wk->ring);
	io_uring_for_each_cqe(&wk->ring, head, cqe) {
		handle_cqe(wk, cqe);
		n++;
	}
	io_uring_cq_advance(&wk->ring, n);
}

void d9_wk_free_dead(struct d9_worker *wk)
{
	while (wk->dead) {
		struct sock *sk = wk->dead;

		wk->dead = sk->next_dead;
		free(sk);
	}
}

static void abandon_job(struct d9_worker *wk, struct job *j)
{
	if (j->summary) {
		pthread_mutex_lock(&wk->mu);
		wk->st.summaries_failed++;
		pthread_mutex_unlock(&wk->mu);
	} else if (j->manifest) {
		pthread_mutex_lock(&d9_dump_mu);
		j->dump->cancelled = true;
		pthread_mutex_unlock(&d9_dump_mu);
		d9_dump_complete(wk, j->dump, false);
	} else if (j->dump) {
		pthread_mutex_lock(&d9_dump_mu);
		j->dump->cancelled = true;
		pthread_mutex_unlock(&d9_dump_mu);
		d9_dump_seg_end(wk, j, -1);
	}
	d9_job_free(j);
}

/* The stop deadline passed: what is left stays on disk. */
static void abandon(struct d9_worker *wk)
{
	uint64_t n = 0, lost;
	struct job *j;

	for (j = wk->active; j; j = j->next) {
#if DIAL9_S3
		if (j->state == J_UPLOADING) {
			curl_multi_remove_handle(wk->multi, j->easy);
			j->state = J_WAIT;
		}
#endif
	}
	/* reads and writes in flight complete before their buffers go */
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		bool busy = false;

		for (j = wk->active; j; j = j->next)
			busy |= j->state == J_READING || j->state == J_WRITING;
		if (!busy || io_uring_submit_and_wait(&wk->ring, 1) < 0)
			break;
		io_uring_for_each_cqe(&wk->ring, head, cqe) {
			struct op *op = io_uring_cqe_get_data(cqe);

			if (op && (op->kind == OP_READ || op->kind == OP_WRITE ||
				   op->kind == OP_FSYNC))
				((struct job *)op->owner)->state = J_WAIT;
			seen++;
		}
		io_uring_cq_advance(&wk->ring, seen);
	}
	wk->abandoning = true; /* dumps end here, without a manifest */
	pthread_mutex_lock(&wk->mu);
	lost = wk->st.summaries_failed;
	pthread_mutex_unlock(&wk->mu);
	while ((j = wk->active)) {
		wk->active = j->next;
		if (j->fd >= 0 && j->tmp[0])
			unlink(j->tmp); /* a write-back cut short */
		n += !j->manifest && !j->summary;
		abandon_job(wk, j);
	}
	wk->active_tail = NULL;
	wk->nactive = 0;
	for (;;) {
		j = d9_job_dequeue(wk);
		if (!j)
			break;
		n += !j->manifest && !j->summary;
		abandon_job(wk, j);
	}
	pthread_mutex_lock(&wk->mu);
	wk->st.pipe_abandoned += n;
	wk->st.pipe_pending = 0;
	lost = wk->st.summaries_failed - lost;
	pthread_mutex_unlock(&wk->mu);
	if (lost)
		d9_log("%llu segment summaries were not shipped before the "
		       "shutdown deadline; they are lost",
		       (unsigned long long)lost);
	if (n)
		d9_log("%llu segments were not shipped before the shutdown "
		       "deadline; they stay on disk", (unsigned long long)n);
}

void *d9_wk_main(void *arg)
{
	struct d9_worker *wk = arg;

	d9_thread_background();
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_setname_np(pthread_self(), "dial9-worker");
	if (wk->on_thread)
		wk->on_thread(wk->on_thread_ctx);
	arm_wake(wk);
	for (;;) {
		uint64_t now = d9_clock_gettime_ns(), deadline;
		bool stopping, empty;

		pthread_mutex_lock(&wk->mu);
		stopping = wk->stop;
		deadline = wk->stop_deadline;
		empty = !wk->qhead;
		pthread_mutex_unlock(&wk->mu);
		if (stopping && (now >= deadline || (empty && !wk->nactive)))
			break;
		d9_job_admit(wk);
		progress(wk, now);
		wait_events(wk, next_deadline(wk, stopping ? deadline : 0));
#if DIAL9_S3
		if (wk->curl_deadline != NO_DEADLINE &&
		    d9_clock_gettime_ns() >= wk->curl_deadline) {
			int running;

			wk->curl_deadline = NO_DEADLINE;
			curl_multi_socket_action(wk->multi, CURL_SOCKET_TIMEOUT, 0,
						 &running);
		}
		d9_s3_reap(wk);
#endif
		d9_wk_free_dead(wk);
	}
	abandon(wk);
	{
		struct timespec ts;

		if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
			atomic_store(&wk->cpu_ns, (uint64_t)ts.tv_sec *
				     D9_NS_PER_SEC + (uint64_t)ts.tv_nsec);
	}
	return NULL;
}
