// SPDX-License-Identifier: GPL-2.0
/* The /dev/dial9 ABI: handshake, configuration checks, mapping rules. */
#include "dial9_test.h"
#include "kselftest_harness.h"

FIXTURE(session) {
	struct d9 d;
};

FIXTURE_SETUP(session)
{
	ASSERT_EQ(0, d9_open(&self->d));
}

FIXTURE_TEARDOWN(session)
{
	d9_close(&self->d);
}

TEST_F(session, version_handshake)
{
	struct dial9_version v;

	memset(&v, 0xff, sizeof(v));
	ASSERT_EQ(0, d9_ioctl(self->d.fd, DIAL9_IOC_GET_VERSION, &v));
	EXPECT_EQ(DIAL9_ABI_VERSION, v.abi_version);
	EXPECT_EQ(sysconf(_SC_NPROCESSORS_CONF), v.nr_cpu_ids);
	EXPECT_TRUE(v.features & DIAL9_FEAT_SWITCH_WAIT);
	EXPECT_TRUE(v.features & DIAL9_FEAT_POLL);
	EXPECT_EQ(DIAL9_RING_DEFAULT_SIZE, v.default_ring_size);
	EXPECT_EQ(DIAL9_MAX_TARGETS, v.max_targets);
	EXPECT_EQ(0, v.reserved[0]);
	EXPECT_EQ(0, v.reserved[1]);
}

TEST_F(session, unknown_ioctl_is_enotty)
{
	EXPECT_EQ(-ENOTTY, d9_ioctl(self->d.fd, _IO(DIAL9_IOC_MAGIC, 0x7f),
				    NULL));
	EXPECT_EQ(-ENOTTY, d9_ioctl(self->d.fd, _IO('T', 0x01), NULL));
}

/* Not seekable, nor readable or writable as a file, on every kernel. */
TEST_F(session, no_seek_read_or_write)
{
	char b[8];

	errno = 0;
	EXPECT_EQ(-1, lseek(self->d.fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
	errno = 0;
	EXPECT_EQ(-1, pread(self->d.fd, b, sizeof(b), 0));
	EXPECT_EQ(ESPIPE, errno);
	errno = 0;
	EXPECT_EQ(-1, read(self->d.fd, b, sizeof(b)));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, write(self->d.fd, b, sizeof(b)));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(session, config_reserved_must_be_zero)
{
	struct dial9_session_config c = { .size = sizeof(c) };

	c.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_CONFIGURE, &c));
	c.reserved[0] = 0;
	c.reserved0 = 1;
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_CONFIGURE, &c));
	c.reserved0 = 0;
	c.flags = 1u << 31;
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_CONFIGURE, &c));
	c.flags = 0;
	c.events = 1u << 30;
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_CONFIGURE, &c));
}

TEST_F(session, config_bad_size)
{
	struct {
		struct dial9_session_config c;
		uint64_t future[4];
	} big;

	memset(&big, 0, sizeof(big));
	big.c.size = 8;		/* smaller than the first version */
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_CONFIGURE, &big));
	big.c.size = 1 << 20;	/* absurd */
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_CONFIGURE, &big));
	/* A newer, larger struct whose unknown tail is set. */
	big.c.size = sizeof(big);
	big.future[2] = 7;
	EXPECT_EQ(-E2BIG, d9_ioctl(self->d.fd, DIAL9_IOC_CONFIGURE, &big));
	/* ... and with the tail zero it is accepted. */
	big.future[2] = 0;
	EXPECT_EQ(0, d9_ioctl(self->d.fd, DIAL9_IOC_CONFIGURE, &big));
}

TEST_F(session, config_ring_size)
{
	EXPECT_EQ(-EINVAL, d9_configure(&self->d, 0, 12345, 0));
	EXPECT_EQ(-EINVAL, d9_configure(&self->d, 0, 3 * 4096, 0));
	EXPECT_EQ(-EINVAL, d9_configure(&self->d, 0, 2048, 0));
	EXPECT_EQ(-EINVAL, d9_configure(&self->d, 0, 1u << 31, 0));
	EXPECT_EQ(0, d9_configure(&self->d, 0, 8192, 0));
	ASSERT_EQ(0, d9_map(&self->d));
	EXPECT_EQ(8192, self->d.ctrl[0]->data_size);
	EXPECT_EQ(DIAL9_ABI_VERSION, self->d.ctrl[0]->abi_version);
	/* Once mapped, the configuration is fixed. */
	EXPECT_EQ(-EBUSY, d9_configure(&self->d, 0, 16384, 0));
}

TEST_F(session, stats_checks)
{
	struct dial9_ring_stats st;

	ASSERT_EQ(0, d9_stats(&self->d, 0, &st));
	EXPECT_EQ(DIAL9_RING_DEFAULT_SIZE, st.ring_size);
	EXPECT_EQ(0, st.written);
	EXPECT_EQ(-EINVAL, d9_stats(&self->d, 4096, &st));
	st.size = 4;
	st.cpu = 0;
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_GET_STATS, &st));
}

TEST_F(session, target_checks)
{
	struct dial9_target t = { .size = sizeof(t), .pid = getpid() };

	EXPECT_EQ(0, d9_ioctl(self->d.fd, DIAL9_IOC_ADD_TARGET, &t));
	t.reserved = 1;
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_ADD_TARGET, &t));
	t.reserved = 0;
	t.flags = 0x100;
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_ADD_TARGET, &t));
	t.flags = 0;
	t.pid = 0;
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_ADD_TARGET, &t));
	t.pid = 5000000;	/* above PID_MAX_LIMIT (4M) */
	EXPECT_EQ(-EINVAL, d9_ioctl(self->d.fd, DIAL9_IOC_ADD_TARGET, &t));
	t.pid = 4194303;	/* valid but unused */
	EXPECT_EQ(-ESRCH, d9_ioctl(self->d.fd, DIAL9_IOC_ADD_TARGET, &t));
}

TEST_F(session, data_pages_are_read_only)
{
	void *p;

	ASSERT_EQ(0, d9_map(&self->d));
	p = mmap(NULL, self->d.size[0], PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->d.fd, DIAL9_MMAP_DATA(0));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* The read-only mapping cannot be upgraded. */
	EXPECT_EQ(-1, mprotect(self->d.data[0], self->d.size[0],
			       PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	/* The control page is the reader's to write. */
	self->d.ctrl[0]->watermark = 64;
	EXPECT_EQ(64, self->d.ctrl[0]->watermark);
}

/* Dropped pages of a mapping come back on the next touch, as they were. */
TEST_F(session, mappings_survive_madvise_dontneed)
{
	ASSERT_EQ(0, d9_map(&self->d));
	self->d.ctrl[0]->watermark = 4096;
	ASSERT_EQ(0, madvise(self->d.ctrl[0], self->d.page, MADV_DONTNEED));
	ASSERT_EQ(0, madvise(self->d.data[0], self->d.size[0], MADV_DONTNEED));
	EXPECT_EQ(4096, self->d.ctrl[0]->watermark);
	EXPECT_EQ(self->d.size[0], self->d.ctrl[0]->data_size);
	EXPECT_EQ(0, self->d.data[0][self->d.size[0] - 1]);
}

TEST_F(session, bad_mappings)
{
	void *p;

	/* Wrong length for the data area and the control page. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->d.fd,
		 DIAL9_MMAP_DATA(0));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, self->d.fd,
		 DIAL9_MMAP_CTRL(0));
	EXPECT_EQ(MAP_FAILED, p);
	/* Private mappings and unknown offsets. */
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, self->d.fd,
		 DIAL9_MMAP_CTRL(0));
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->d.fd, 4096);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->d.fd,
		 DIAL9_MMAP_CTRL(4096));
	EXPECT_EQ(MAP_FAILED, p);
}

TEST_F(session, enable_disable_enable)
{
	struct d9_recs recs = { 0 };

	ASSERT_EQ(0, d9_map(&self->d));
	ASSERT_EQ(0, d9_enable(&self->d));
	EXPECT_EQ(0, d9_enable(&self->d));	/* idempotent */
	usleep(1000);
	ASSERT_EQ(0, d9_disable(&self->d));
	ASSERT_EQ(0, d9_enable(&self->d));
	usleep(1000);
	ASSERT_EQ(0, d9_disable(&self->d));
	EXPECT_LT(0, d9_drain(&self->d, &recs));
	d9_recs_free(&recs);
}

TEST(two_sessions_are_independent)
{
	struct d9 a, b;
	struct d9_recs ra = { 0 }, rb = { 0 };

	ASSERT_EQ(0, d9_open(&a));
	ASSERT_EQ(0, d9_open(&b));
	ASSERT_EQ(0, d9_configure(&a, 0, 8192, 0));
	ASSERT_EQ(0, d9_map(&a));
	ASSERT_EQ(0, d9_map(&b));
	EXPECT_EQ(8192, a.ctrl[0]->data_size);
	EXPECT_EQ(DIAL9_RING_DEFAULT_SIZE, b.ctrl[0]->data_size);
	ASSERT_EQ(0, d9_enable(&a));
	ASSERT_EQ(0, d9_enable(&b));
	usleep(2000);
	ASSERT_EQ(0, d9_disable(&a));
	/* b keeps recording after a stopped. */
	usleep(2000);
	ASSERT_EQ(0, d9_disable(&b));
	EXPECT_LT(0, d9_drain(&a, &ra));
	EXPECT_LT(0, d9_drain(&b, &rb));
	d9_recs_free(&ra);
	d9_recs_free(&rb);
	d9_close(&a);
	d9_close(&b);
}

TEST_HARNESS_MAIN
