// SPDX-License-Identifier: MIT
/*
 * writeback.c - the write-back step (and LZ4 in place): temp file,
 * fsync, rename, under {write_back_dir} or beside the segment.
 */
#include "pipeline/worker.h"

/* ---- write-back (and LZ4 in place): temp file, fsync, rename ---- */


static void write_more(struct d9_worker *wk, struct job *j)
{
	struct io_uring_sqe *sqe = d9_wk_sqe(wk);
	size_t n = j->len - j->off;

	j->op.kind = OP_WRITE;
	io_uring_prep_write(sqe, j->fd, j->data + j->off,
			    (unsigned int)(n > (1u << 30) ? (1u << 30) : n), j->off);
	io_uring_sqe_set_data(sqe, &j->op);
}

/* Open the temp file of j->dst in dir, then write. */
static void write_open(struct d9_worker *wk, struct job *j)
{
	unlink(j->tmp); /* one of an attempt cut short */
	j->fd = open(j->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     (mode_t)wk->file_mode);
	if (j->fd < 0) {
		if (errno == ENOENT)
			wk->wb_made = false; /* the directory went away */
		d9_job_retry(wk, j, -errno, "cannot create the output file");
		return;
	}
	j->off = 0;
	j->state = J_WRITING;
	write_more(wk, j); /* zero bytes: completes at once, then fsync */
}

/* The write-back directory, made if missing: this user's own, that no
 * other can write (d9_dir_check), before anything goes into it. */
static int wb_root(struct d9_worker *wk)
{
	int fd = d9_dir_open_own(wk->wb_dir, wk->dir_mode);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* A summary to {write_back_dir}/summary/version=1/...: as in the bucket. */
static void summary_start(struct d9_worker *wk, struct job *j)
{
	struct d9_s3_target t = {
		.prefix = "", .service = wk->service, .host = wk->host,
		.boot_id = wk->boot_id, .index = j->index,
		.start_real_ns = j->start_real_ns,
	};
	char key[1024], *slash;
	int ret;

	ret = d9_s3_summary_key(&t, key, sizeof(key));
	if (!ret && (snprintf(j->dst, sizeof(j->dst), "%s/%s", wk->wb_dir,
			      key) >= (int)sizeof(j->dst)))
		ret = -ENAMETOOLONG;
	if (ret) {
		d9_job_fail(wk, j, ret, "cannot name it");
		return;
	}
	slash = strrchr(j->dst, '/');
	*slash = 0;
	ret = wb_root(wk);
	if (!ret)
		ret = d9_mkdirs(j->dst, wk->dir_mode);
	if (!ret && snprintf(j->tmp, sizeof(j->tmp), "%s/.%s.tmp", j->dst,
			     slash + 1) >= (int)sizeof(j->tmp))
		ret = -ENAMETOOLONG;
	*slash = '/';
	if (ret) {
		d9_job_retry(wk, j, ret, "cannot create its directory");
		return;
	}
	write_open(wk, j);
}

void d9_wb_start(struct d9_worker *wk, struct job *j)
{
	const char *base = strrchr(j->src, '/');
	char dir[700];
	int ret;

	base = base ? base + 1 : j->src;
	if (j->summary) {
		summary_start(wk, j);
		return;
	}
	if (wk->wb_dir) {
		snprintf(dir, sizeof(dir), "%s/%s", wk->wb_dir, wk->boot_id);
		if (!wk->wb_made) {
			ret = wb_root(wk);
			if (!ret)
				ret = d9_mkdirs(dir, wk->dir_mode);
			if (ret) {
				d9_job_retry(wk, j, ret, "cannot create the write-back directory");
				return;
			}
			wk->wb_made = true;
		}
	} else {
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - j->src - 1), j->src);
	}
	snprintf(j->dst, sizeof(j->dst), "%s/%s%s", dir, base,
		 j->compressed ? ".lz4" : "");
	snprintf(j->tmp, sizeof(j->tmp), "%s/.%s%s.tmp", dir, base,
		 j->compressed ? ".lz4" : "");
	write_open(wk, j);
}

static void write_failed(struct d9_worker *wk, struct job *j, int err)
{
	close(j->fd);
	j->fd = -1;
	unlink(j->tmp);
	d9_job_retry(wk, j, err, "cannot write the output file");
}

void d9_wb_write_done(struct d9_worker *wk, struct job *j, int res)
{
	struct io_uring_sqe *sqe;

	if (res < 0) {
		write_failed(wk, j, res);
		return;
	}
	j->off += (size_t)res;
	if (j->off < j->len || (!res && j->len)) {
		if (!res) {
			write_failed(wk, j, -EIO);
			return;
		}
		write_more(wk, j);
		return;
	}
	sqe = d9_wk_sqe(wk);
	j->op.kind = OP_FSYNC;
	io_uring_prep_fsync(sqe, j->fd, 0);
	io_uring_sqe_set_data(sqe, &j->op);
}

void d9_wb_fsync_done(struct d9_worker *wk, struct job *j, int res)
{
	if (res < 0) {
		write_failed(wk, j, res);
		return;
	}
	close(j->fd);
	j->fd = -1;
	if (rename(j->tmp, j->dst)) {
		int err = -errno;

		unlink(j->tmp);
		d9_job_retry(wk, j, err, "cannot rename the output file");
		return;
	}
	j->step++;
	j->state = J_RUN;
}
