// SPDX-License-Identifier: GPL-2.0
/*
 * Races between the calls of one session: ioctl() against mmap(), and a
 * caller changing an argument while the kernel reads it.
 */
#include "dial9_test.h"
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>
#include "kselftest_harness.h"

#define RACE_SECS 3

struct race {
	struct d9 d;
	volatile int stop;
	void *buf;		/* GET_STATS's argument, faulted in each time */
	long page;
};

/* mmap() takes the mmap lock, then the session's lock; munmap() again. */
static void *map_loop(void *arg)
{
	struct race *r = arg;

	while (!r->stop) {
		void *c = mmap(NULL, r->page, PROT_READ | PROT_WRITE,
			       MAP_SHARED, r->d.fd, DIAL9_MMAP_CTRL(0));

		if (c != MAP_FAILED)
			munmap(c, r->page);
	}
	return NULL;
}

/*
 * ioctl() on a buffer whose page was just dropped: the copy faults, and a
 * fault takes the mmap lock.  Under the session's lock that deadlocks with
 * map_loop().  In a child, so that a hang is seen and reported.
 */
static int race_child(void)
{
	struct race r = { .page = sysconf(_SC_PAGESIZE) };
	pthread_t t;
	long calls = 0;
	uint64_t end;

	if (d9_open(&r.d))
		return 2;
	r.buf = mmap(NULL, r.page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r.buf == MAP_FAILED)
		return 2;
	if (pthread_create(&t, NULL, map_loop, &r))
		return 2;
	end = d9_now() + RACE_SECS * 1000000000ull;
	while (d9_now() < end) {
		struct dial9_ring_stats st = { .size = sizeof(st) };

		memcpy(r.buf, &st, sizeof(st));
		madvise(r.buf, r.page, MADV_DONTNEED);	/* zero-fill: size 0 */
		d9_ioctl(r.d.fd, DIAL9_IOC_GET_STATS, r.buf);
		memcpy(r.buf, &st, sizeof(st));
		/* write-protect, then fault in the copy-out */
		mprotect(r.buf, r.page, PROT_READ);
		mprotect(r.buf, r.page, PROT_READ | PROT_WRITE);
		d9_ioctl(r.d.fd, DIAL9_IOC_GET_STATS, r.buf);
		calls += 2;
	}
	r.stop = 1;
	pthread_join(t, NULL);
	d9_close(&r.d);
	printf("# %ld ioctls raced with mmap/munmap\n", calls);
	return 0;
}

TEST(ioctl_and_mmap_do_not_deadlock)
{
	int status = -1;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(race_child());
	for (int i = 0; i < (RACE_SECS + 20) * 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	ASSERT_TRUE(WIFEXITED(status))
		TH_LOG("ioctl/mmap still running after %d s: deadlock",
		       RACE_SECS + 20);
	EXPECT_EQ(0, WEXITSTATUS(status));
}

struct uffd_ctx {
	int uffd;
	volatile uint32_t *size;
	long page;
	int faults;
};

/* At the kernel's first touch of the tail page: change the size, then map. */
static void *uffd_loop(void *arg)
{
	struct uffd_ctx *c = arg;
	struct uffd_msg msg;
	struct uffdio_zeropage zp;

	if (read(c->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	*c->size = 3 * c->page;
	c->faults++;
	zp.range.start = msg.arg.pagefault.address & ~(c->page - 1);
	zp.range.len = c->page;
	zp.mode = 0;
	ioctl(c->uffd, UFFDIO_ZEROPAGE, &zp);
	return NULL;
}

/*
 * GET_STATS reads the caller's size once: a size changed meanwhile never
 * makes it write (or clear) more than the size it checked.  The struct
 * ends a page, so the check that the tail past it is zero is the kernel's
 * first touch of the next page; userfaultfd stops the kernel there while
 * the size grows from one page (the most it takes) to three.
 */
TEST(stats_size_is_read_once)
{
	const size_t ksize = sizeof(struct dial9_ring_stats);
	long page = sysconf(_SC_PAGESIZE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffd_ctx c = { .page = page };
	unsigned char *buf, *arg;
	long cleared = 0;
	pthread_t t;
	struct d9 d;
	int ret;

	ASSERT_EQ(0, d9_open(&d));
	buf = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0, page);
	memset(buf + 2 * page, 0xa5, 2 * page);
	arg = buf + page - ksize;
	((uint32_t *)arg)[0] = page;	/* size: ksize + a zero tail */
	c.size = (volatile uint32_t *)arg;
	c.uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	ASSERT_LE(0, c.uffd) TH_LOG("userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(c.uffd, UFFDIO_API, &api));
	reg.range.start = (uintptr_t)(buf + page);
	reg.range.len = page;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(0, ioctl(c.uffd, UFFDIO_REGISTER, &reg));
	ASSERT_EQ(0, pthread_create(&t, NULL, uffd_loop, &c));

	ret = d9_ioctl(d.fd, DIAL9_IOC_GET_STATS, arg);
	pthread_join(t, NULL);
	EXPECT_EQ(0, ret);
	ASSERT_EQ(1, c.faults) TH_LOG("the kernel never touched the tail page");
	/* Cleared: the size checked, no more. */
	for (long i = 0; i < 2 * page; i++)
		cleared += buf[2 * page + i] != 0xa5;
	EXPECT_EQ(0, cleared) TH_LOG("%ld bytes past the size checked cleared",
				     cleared);
	close(c.uffd);
	munmap(buf, 4 * page);
	d9_close(&d);
}

TEST_HARNESS_MAIN
