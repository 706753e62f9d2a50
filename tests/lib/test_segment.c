// SPDX-License-Identifier: MIT
/*
 * test_segment.c - segments on disk: naming, rotation by size, the disk
 * budget, both I/O backends, ENOSPC on a small tmpfs, the directory
 * deleted underneath, and salvage after SIGKILL.
 */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "helpers.h"
#include "record/record.h"
#include "segment/segw.h"

DIAL9_EVENT_TYPE(t_blob, "blob", DIAL9_FIELD(U64, seq), DIAL9_FIELD(BYTES, pad));

static char pad[200];


static void emit_n(uint64_t from, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		DIAL9_EMIT(t_blob, dial9_u64(from + i), dial9_bytes(pad, sizeof(pad)));
}

static void cfg_for(struct dial9_config *c, const char *dir)
{
	dial9_config_init(c);
	c->trace_dir = dir;
	c->service_name = "segtest";
	/* These tests count the application's own events; the scheduler
	 * source is tested by test_sched.c and in the VM. */
	c->sched = DIAL9_SCHED_OFF;
}

static uint64_t file_size(const char *p)
{
	struct stat st;

	return stat(p, &st) ? 0 : (uint64_t)st.st_size;
}

static size_t count_suffix(const char *dir, const char *suf)
{
	size_t n;
	char **v = test_list(dir, suf, &n);

	test_free_list(v);
	return n;
}

struct meta_seen {
	char backend[16];
	char service[32];
	unsigned int clock_syncs;
};

static void meta_visit(const struct dial9_record *r, void *arg)
{
	struct meta_seen *m = arg;

	if (r->kind == DIAL9_RECORD_CLOCK_SYNC) {
		m->clock_syncs++;
		assert_true(r->real_ns > 1600000000ull * 1000000000ull);
	}
	test_meta(r, "io_backend", m->backend, sizeof(m->backend));
	test_meta(r, "service", m->service, sizeof(m->service));
}

static void read_meta(const char *path, struct meta_seen *m)
{
	assert_int_equal(access(path, R_OK), 0);
	test_each_record(path, meta_visit, m);
}

/* Size rotation, the budget, naming, both backends. */
static void rotation_and_budget(int backend)
{
	char *dir = test_tmpdir("rot"), *boot;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	char **v;
	size_t nseg;
	uint64_t total = 0;
	struct meta_seen m = { { 0 }, { 0 }, 0 };

	cfg_for(&c, dir);
	c.buffer_bytes = 16 * 1024;
	c.max_file_bytes = 64 * 1024;
	c.max_disk_bytes = 256 * 1024;
	c.io_backend = (uint32_t)backend;
	if (backend == DIAL9_IO_URING && dial9_start(&c)) {
		/* io_uring disabled here (sysctl, seccomp): nothing to test */
		test_rm_rf(dir);
		free(dir);
		skip();
	}
	if (backend != DIAL9_IO_URING)
		assert_int_equal(dial9_start(&c), 0);
	dial9_get_stats(&st);
	boot = strdup(st.dir);
	for (int round = 0; round < 40; round++) {
		emit_n((uint64_t)round * 100, 100);
		assert_int_equal(dial9_flush(10000), 0);
		/* exactly one active segment while running */
		assert_int_equal(count_suffix(boot, ".active"), 1);
	}
	dial9_get_stats(&st);
	assert_int_equal(st.health, DIAL9_HEALTH_OK);
	assert_int_equal(st.io_backend, (uint32_t)(backend == DIAL9_IO_PWRITE ?
						     DIAL9_IO_PWRITE :
						     DIAL9_IO_URING));
	assert_true(st.segments_evicted > 0);
	assert_int_equal(dial9_stop(), 0);

	assert_int_equal(count_suffix(boot, ".active"), 0);
	v = test_list(boot, ".dial9", &nseg);
	assert_true(nseg >= 2);
	for (size_t i = 0; i < nseg; i++) {
		uint64_t sz = file_size(v[i]);

		/* a segment rotates before a batch would overflow it */
		assert_true(sz <= c.max_file_bytes);
		total += sz;
		test_decode_file(v[i], &cnt, NULL, NULL);
		assert_int_equal(cnt.err, 0);
		/* indices are consecutive: the oldest were evicted */
		if (i) {
			unsigned long a = strtoul(strrchr(v[i - 1], '/') + 1, NULL, 10);
			unsigned long b = strtoul(strrchr(v[i], '/') + 1, NULL, 10);

			assert_int_equal(b, a + 1);
		}
	}
	assert_true(total <= c.max_disk_bytes);
	/* evicted events are gone, the rest all decode */
	assert_true(cnt.user < 4000 && cnt.user > 0);
	read_meta(v[nseg - 1], &m);
	assert_string_equal(m.backend, backend == DIAL9_IO_PWRITE ? "pwrite" :
								    "io_uring");
	assert_string_equal(m.service, "segtest");
	assert_int_equal(m.clock_syncs, 1);
	test_free_list(v);
	test_rm_rf(dir);
	free(boot);
	free(dir);
}

static void rotation_io_uring(void **state)
{
	(void)state;
	rotation_and_budget(DIAL9_IO_URING);
}

static void rotation_pwrite(void **state)
{
	(void)state;
	rotation_and_budget(DIAL9_IO_PWRITE);
}

/* io_uring refused by seccomp (as in many containers): pwrite, said so. */
static int fallback_child(const char *dir)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct meta_seen m = { { 0 }, { 0 }, 0 };
	char *boot;
	char **v;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 77;
	cfg_for(&c, dir);
	c.io_backend = DIAL9_IO_URING; /* strict: refused */
	if (dial9_start(&c) != -EPERM)
		return 10;
	c.io_backend = DIAL9_IO_AUTO;
	if (dial9_start(&c))
		return 11;
	emit_n(0, 10);
	dial9_get_stats(&st);
	if (st.io_backend != DIAL9_IO_PWRITE)
		return 12;
	boot = strdup(st.dir);
	if (dial9_stop())
		return 13;
	v = test_list(boot, ".dial9", NULL);
	if (!v[0])
		return 14;
	read_meta(v[0], &m);
	if (strcmp(m.backend, "pwrite"))
		return 15;
	test_free_list(v);
	free(boot);
	return 0;
}

static void io_uring_blocked_falls_back(void **state)
{
	char *dir = test_tmpdir("fallback");
	int status;
	pid_t pid;
	(void)state;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(fallback_child(dir));
	waitpid(pid, &status, 0);
	test_rm_rf(dir);
	free(dir);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The trace directory deleted underneath: fault, recreate, resume. */
/*
 * Emit one event (numbered @seq) and flush until the writer reports a
 * recovered fault, 10 ms apart, at most 500 times; the stats in @st.
 * Returns how many events it emitted.
 */
static unsigned int until_recovered(uint64_t seq, struct dial9_stats *st)
{
	unsigned int i;

	for (i = 0; i < 500; i++) {
		struct timespec ts = { 0, 10000000 };

		emit_n(seq, 1);
		dial9_flush(10000);
		dial9_get_stats(st);
		if (st->faults_recovered)
			return i + 1;
		nanosleep(&ts, NULL);
	}
	return i;
}

static void deleted_directory(void **state)
{
	char *dir = test_tmpdir("del"), *boot;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	(void)state;

	cfg_for(&c, dir);
	assert_int_equal(dial9_start(&c), 0);
	emit_n(0, 100);
	assert_int_equal(dial9_flush(10000), 0);
	dial9_get_stats(&st);
	boot = strdup(st.dir);
	test_rm_rf(dir);
	emit_n(100, 100);
	assert_int_equal(dial9_flush(10000), 0);
	/* recovery may take a retry period: wait for it, bounded */
	until_recovered(200, &st);
	assert_true(st.write_errors >= 1);
	assert_int_equal(st.last_error, -ENOENT);
	assert_true(st.faults_recovered >= 1);
	assert_int_equal(st.health, DIAL9_HEALTH_OK);
	emit_n(1000, 50);
	assert_int_equal(dial9_stop(), 0);
	/* the directory is back, with the events recorded after recovery */
	test_decode_dir(boot, &cnt, NULL, NULL);
	assert_int_equal(cnt.err, 0);
	assert_true(cnt.user >= 50);
	test_rm_rf(dir);
	free(boot);
	free(dir);
}

/*
 * The active segment deleted underneath: what it held is counted lost,
 * in the stats and by dial9.lost in the trace; written + lost == emitted
 * and written == what the sealed segments hold.
 */
static void deleted_active_segment(void **state)
{
	char *dir = test_tmpdir("delact"), *boot;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	uint64_t emitted = 0;
	char **v;
	(void)state;

	cfg_for(&c, dir);
	assert_int_equal(dial9_start(&c), 0);
	emit_n(0, 100);
	emitted += 100;
	assert_int_equal(dial9_flush(10000), 0);
	dial9_get_stats(&st);
	boot = strdup(st.dir);
	v = test_list(boot, ".dial9.active", NULL);
	assert_non_null(v[0]);
	assert_int_equal(unlink(v[0]), 0);
	test_free_list(v);
	emitted += until_recovered(100, &st);
	assert_true(st.faults_recovered >= 1);
	emit_n(1000, 50);
	emitted += 50;
	assert_int_equal(dial9_stop(), 0);
	dial9_get_stats(&st);
	test_decode_dir(boot, &cnt, NULL, NULL);
	assert_int_equal(cnt.err, 0);
	assert_true(st.events_lost >= 100);
	assert_int_equal(st.events_written + st.events_lost, emitted);
	assert_int_equal(cnt.user, st.events_written);
	assert_int_equal(cnt.lost, st.events_lost);
	test_rm_rf(dir);
	free(boot);
	free(dir);
}

/* ENOSPC on a small tmpfs (in a child with its own mount namespace). */
static int enospc_child(const char *mnt)
{
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	char filler[600];
	int fd, ret = 0;
	static char block[64 * 1024];

	if (unshare(CLONE_NEWNS) && unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return 77;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("dial9test", mnt, "tmpfs", 0, "size=2m,mode=0700"))
		return 77;
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	cfg_for(&c, mnt);
	c.buffer_bytes = 32 * 1024;
	if (dial9_start(&c))
		return 10;
	/* fill the file system */
	fd = open(filler, O_WRONLY | O_CREAT, 0644);
	while (write(fd, block, sizeof(block)) > 0)
		;
	close(fd);
	for (int i = 0; i < 20; i++) {
		emit_n(0, 200);
		dial9_flush(10000);
	}
	dial9_get_stats(&st);
	if (st.health != DIAL9_HEALTH_DEGRADED || st.last_error != -ENOSPC ||
	    !st.events_lost)
		ret = 11;
	/* free space: recording resumes */
	unlink(filler);
	for (int i = 0; i < 5; i++) {
		emit_n(5000, 100);
		dial9_flush(10000);
	}
	dial9_get_stats(&st);
	if (!ret && (st.health != DIAL9_HEALTH_OK || !st.faults_recovered))
		ret = 12;
	{
		char *boot = strdup(st.dir);
		struct test_counts cnt = { 0 };

		if (dial9_stop())
			return 13;
		test_decode_dir(boot, &cnt, NULL, NULL);
		/* what was written is intact; the loss is in the trace */
		if (!ret && (cnt.err || cnt.user < 500 || !cnt.lost))
			ret = 14;
		free(boot);
	}
	return ret;
}

static void enospc_then_recovery(void **state)
{
	char *dir = test_tmpdir("nospc");
	int status;
	pid_t pid;
	(void)state;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(enospc_child(dir));
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		print_message("cannot mount a tmpfs here: skipped\n");
		test_rm_rf(dir);
		free(dir);
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
	test_rm_rf(dir);
	free(dir);
}

struct direct_seen {
	char io_direct[96];
};

static void direct_visit(const struct dial9_record *r, void *arg)
{
	struct direct_seen *m = arg;

	test_meta(r, "io_direct", m->io_direct, sizeof(m->io_direct));
}

/* The active segment's path in @boot (exactly one). */
static char *active_path(const char *boot)
{
	size_t n;
	char **v = test_list(boot, ".active", &n), *p;

	assert_int_equal(n, 1);
	p = strdup(v[0]);
	test_free_list(v);
	return p;
}

/* The last byte of @path, or -1. */
static int last_byte(const char *path)
{
	unsigned char b;
	int fd = open(path, O_RDONLY), ret = -1;

	if (fd >= 0 && pread(fd, &b, 1, (off_t)file_size(path) - 1) == 1)
		ret = b;
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * O_DIRECT (the default where the filesystem takes it): while a segment
 * is active it ends with zeros up to a block's end, which readers take as
 * its end; sealed, it ends at its last batch.  Off: no padding ever.
 */
static void direct_io(bool on)
{
	char *dir = test_tmpdir("dio"), *boot, *active;
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	struct test_counts cnt = { 0 };
	struct direct_seen m = { { 0 } };
	char **v;
	size_t nseg;

	cfg_for(&c, dir);
	c.direct_io = on ? DIAL9_DIRECT_IO_AUTO : DIAL9_DIRECT_IO_OFF;
	assert_int_equal(dial9_start(&c), 0);
	emit_n(0, 333);
	assert_int_equal(dial9_flush(10000), 0);
	dial9_get_stats(&st);
	boot = strdup(st.dir);
	active = active_path(boot);
	test_decode_file(active, &cnt, NULL, NULL);
	test_each_record(active, direct_visit, &m);
	if (on && !st.direct_io) {
		/* the filesystem refused it: the trace says why */
		print_message("no O_DIRECT here (%s): skipped\n", m.io_direct);
		assert_true(!strncmp(m.io_direct, "no: ", 4));
		dial9_stop();
		goto out;
	}
	assert_int_equal(st.direct_io, on);
	assert_string_equal(m.io_direct, on ? "yes" : "no");
	/* read while active: every event, the padding no error */
	assert_int_equal(cnt.err, 0);
	assert_int_equal(cnt.user, 333);
	if (on) {
		assert_int_equal(file_size(active) % D9_DIO_BLOCK, 0);
		assert_int_equal(last_byte(active), 0);
	} else {
		assert_true(last_byte(active) > 0);
	}
	emit_n(333, 100);
	assert_int_equal(dial9_stop(), 0);
	v = test_list(boot, ".dial9", &nseg);
	assert_int_equal(nseg, 1);
	memset(&cnt, 0, sizeof(cnt));
	test_decode_file(v[0], &cnt, NULL, NULL);
	assert_int_equal(cnt.err, 0);
	assert_int_equal(cnt.user, 433);
	/* sealed: it ends with its last batch end, not with padding */
	assert_true(last_byte(v[0]) > 0);
	test_free_list(v);
out:
	free(active);
	free(boot);
	test_rm_rf(dir);
	free(dir);
}

static void direct_io_on(void **state)
{
	(void)state;
	direct_io(true);
}

static void direct_io_off(void **state)
{
	(void)state;
	direct_io(false);
}

/* SIGKILL mid-write, then a new recorder salvages the dead segment. */
static void salvage_after_sigkill(void **state)
{
	char *dir = test_tmpdir("salv"), *boot;
	int pfd[2];
	pid_t pid;
	char buf[600];
	struct dial9_config c;
	struct test_counts cnt = { 0 };
	char **v;
	size_t n;
	(void)state;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct dial9_stats st = { .size = sizeof(st) };
		bool told = false;

		close(pfd[0]);
		cfg_for(&c, dir);
		c.buffer_bytes = 8192;
		if (dial9_start(&c))
			_exit(1);
		dial9_get_stats(&st);
		if (write(pfd[1], st.dir, strlen(st.dir) + 1) < 0)
			_exit(2);
		for (uint64_t i = 0;; i += 100) {
			emit_n(i, 100);
			if (i < 3000)
				continue;
			/* Tell the parent once batches are on disk, however
			 * slowly this machine runs the flush thread. */
			dial9_get_stats(&st);
			if (st.batches_written >= 2 && !told) {
				told = true;
				if (write(pfd[1], "k", 1) < 0)
					_exit(3);
			}
		}
	}
	close(pfd[1]);
	{
		size_t got = 0;
		char k;

		while (got < sizeof(buf)) {
			ssize_t r = read(pfd[0], buf + got, 1);

			assert_int_equal(r, 1);
			if (!buf[got++])
				break;
		}
		assert_int_equal(read(pfd[0], &k, 1), 1);
	}
	/* batches are on disk: let it write a few more, then kill mid-write */
	{
		struct timespec ts = { 0, 50000000 };

		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pfd[0]);
	boot = strdup(buf);
	assert_int_equal(count_suffix(boot, ".active"), 1);
	/* a torn batch at the end, as a crash mid-write leaves */
	{
		char **a = test_list(boot, ".active", NULL);
		int fd = open(a[0], O_WRONLY | O_APPEND);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "\x00\xd9TR\x01\x06\x05\x01", 8), 8);
		close(fd);
		test_free_list(a);
	}
	cfg_for(&c, dir);
	assert_int_equal(dial9_start(&c), 0); /* salvages */
	assert_int_equal(dial9_stop(), 0);
	assert_int_equal(count_suffix(boot, ".active"), 0);
	v = test_list(boot, ".dial9", &n);
	assert_true(n >= 1);
	test_free_list(v);
	test_decode_dir(boot, &cnt, NULL, NULL);
	assert_int_equal(cnt.err, 0);
	assert_true(cnt.user > 0);
	print_message("salvaged %llu events in %llu batches\n",
		      (unsigned long long)cnt.user,
		      (unsigned long long)cnt.batches);
	test_rm_rf(dir);
	free(boot);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rotation_io_uring),
		cmocka_unit_test(rotation_pwrite),
		cmocka_unit_test(io_uring_blocked_falls_back),
		cmocka_unit_test(deleted_directory),
		cmocka_unit_test(deleted_active_segment),
		cmocka_unit_test(enospc_then_recovery),
		cmocka_unit_test(salvage_after_sigkill),
		cmocka_unit_test(direct_io_on),
		cmocka_unit_test(direct_io_off),
	};

	memset(pad, 'p', sizeof(pad));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
