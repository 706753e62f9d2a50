// SPDX-License-Identifier: GPL-2.0
/* Filtering and privilege: who may record what, and what is redacted. */
#include "dial9_test.h"
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include "kselftest_harness.h"

/*
 * A process that bounces bytes with us through two pipes, on @cpu, after
 * sleeping @delay_us: we block meanwhile, so its reply wakes us.
 */
struct peer {
	pid_t pid;
	int to_peer, from_peer;
};

static int peer_start(struct peer *p, int cpu, int rounds, int delay_us)
{
	int a[2], b[2];
	char c;

	if (pipe(a) || pipe(b))
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (!p->pid) {
		d9_pin(cpu);
		close(a[1]);
		close(b[0]);
		for (int i = 0; i < rounds; i++)
			if (read(a[0], &c, 1) != 1 ||
			    (delay_us && usleep(delay_us)) ||
			    write(b[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	p->to_peer = a[1];
	p->from_peer = b[0];
	return 0;
}

static int peer_bounce(struct peer *p, int rounds)
{
	char c = 'x';

	for (int i = 0; i < rounds; i++)
		if (write(p->to_peer, &c, 1) != 1 ||
		    read(p->from_peer, &c, 1) != 1)
			return -EIO;
	return 0;
}

static int peer_wait(struct peer *p)
{
	int st;

	close(p->to_peer);
	close(p->from_peer);
	if (waitpid(p->pid, &st, 0) != p->pid)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int drop_privileges(void)
{
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return -errno;
	return 0;
}

/*
 * As uid 65534 (no capabilities): only the own process is recorded, the
 * other side of a switch or wake-up with a root process is redacted.
 */
TEST(unprivileged_sees_foreign_tasks_redacted)
{
	struct dial9_target t = { .size = sizeof(t) };
	struct d9_recs recs = { 0 };
	int redacted_switch = 0, redacted_waker = 0, leaks = 0, comms = 0;
	uint32_t me = getpid();
	struct peer peer;
	struct d9 d;

	ASSERT_EQ(0, d9_pin(0));
	ASSERT_EQ(0, peer_start(&peer, 0, 100, 100));	/* stays root */
	ASSERT_EQ(0, drop_privileges());
	ASSERT_NE(0, getuid());

	ASSERT_EQ(0, d9_open(&d));
	EXPECT_EQ(-EPERM, d9_configure(&d, DIAL9_CFG_SYSTEM_WIDE, 0, 0));
	t.pid = peer.pid;
	EXPECT_EQ(-EPERM, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &t));
	t.pid = 1;
	EXPECT_EQ(-EPERM, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &t));
	t.pid = getpid();
	EXPECT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &t));

	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, peer_bounce(&peer, 100));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_EQ(0, peer_wait(&peer));
	ASSERT_LT(0, d9_drain(&d, &recs));

	d9_for_each(r, &recs) {
		const struct dial9_rec_switch *sw = (const void *)r;
		const struct dial9_rec_wake *wk = (const void *)r;
		const struct dial9_rec_comm *cm = (const void *)r;

		switch (r->type) {
		case DIAL9_REC_SWITCH:
			if (sw->prev_tgid != me && sw->prev_tgid != 0) {
				leaks += sw->prev_tgid != DIAL9_TID_REDACTED ||
					 sw->prev_tid != DIAL9_TID_REDACTED ||
					 sw->prev_prio || sw->prev_state ||
					 (r->flags & (DIAL9_SWITCH_PREEMPT |
					  DIAL9_SWITCH_PREV_RUNNABLE));
				redacted_switch++;
			}
			if (sw->next_tgid != me && sw->next_tgid != 0) {
				leaks += sw->next_tgid != DIAL9_TID_REDACTED ||
					 sw->next_tid != DIAL9_TID_REDACTED ||
					 sw->next_prio || sw->next_wait_ns ||
					 (r->flags & DIAL9_SWITCH_WAIT_VALID);
				redacted_switch++;
			}
			break;
		case DIAL9_REC_WAKING:
		case DIAL9_REC_WAKEUP:
		case DIAL9_REC_WAKEUP_NEW:
			if (wk->tgid != me)
				leaks += wk->tgid != DIAL9_TID_REDACTED ||
					 wk->tid != DIAL9_TID_REDACTED ||
					 wk->prio;
			if (wk->waker_tgid != me && wk->waker_tgid != 0) {
				leaks += wk->waker_tgid != DIAL9_TID_REDACTED ||
					 wk->waker_tid != DIAL9_TID_REDACTED;
				redacted_waker++;
			}
			break;
		case DIAL9_REC_COMM:
			leaks += cm->tgid != me;
			comms++;
			break;
		case DIAL9_REC_MIGRATE:
		case DIAL9_REC_EXIT:
			leaks += ((const struct dial9_rec_exit *)r)->tgid != me;
			break;
		}
	}
	TH_LOG("redacted: %d switch sides, %d wakers", redacted_switch,
	       redacted_waker);
	EXPECT_EQ(0, leaks);
	/* Both share CPU 0, so they switch to each other, and wake each other. */
	EXPECT_LE(50, redacted_switch);
	EXPECT_LE(50, redacted_waker);
	EXPECT_LE(1, comms);
	d9_recs_free(&recs);
	d9_close(&d);
}

struct wake_cpus {
	int foreign;		/* WAKING records of the peer, woken by us */
	int foreign_want;	/* of them, with the target_cpu expected */
	int own;		/* WAKING records of our thread */
	int own_bad;		/* of them, with no real CPU */
};

/*
 * Record ourselves waking a peer (root: a foreign process when we are
 * not) @rounds times, and it waking us; count the peer's WAKING records
 * (ours are its waker), and those whose target_cpu is @want.
 */
static int record_wake_cpus(struct peer *peer, int rounds, uint32_t want,
			    struct wake_cpus *w)
{
	struct d9_recs recs = { 0 };
	uint32_t me = getpid();
	struct d9 d;
	int ret;

	memset(w, 0, sizeof(*w));
	ret = d9_open(&d);
	if (!ret)
		ret = d9_map(&d);
	if (!ret)
		ret = d9_enable(&d);
	if (!ret)
		ret = peer_bounce(peer, rounds);
	if (!ret)
		ret = d9_disable(&d);
	if (!ret && d9_drain(&d, &recs) < 0)
		ret = -EPROTO;
	d9_close(&d);
	d9_for_each(r, &recs) {
		const struct dial9_rec_wake *wk = (const void *)r;

		if (r->type != DIAL9_REC_WAKING)
			continue;
		if (r->flags & DIAL9_WAKE_TASK_TARGET) {
			w->own += wk->tgid == me;
			w->own_bad += wk->tgid == me &&
				      wk->target_cpu >= (uint32_t)d.ncpu;
		} else if (wk->waker_tgid == me &&
			   !(r->flags & DIAL9_WAKE_FROM_IRQ)) {
			w->foreign++;
			w->foreign_want += wk->target_cpu == want;
		}
	}
	d9_recs_free(&recs);
	return ret;
}

/*
 * The CPU a foreign task is woken onto is not for an unprivileged
 * session (DIAL9_CPU_REDACTED, as its ids are redacted); a privileged
 * one sees it, and both see their own tasks' CPUs.
 */
TEST(foreign_target_cpu_is_redacted)
{
	struct wake_cpus priv, unpriv;
	struct peer peer;
	int peer_cpu;
	struct d9 d;

	if (geteuid() != 0)
		SKIP(return, "needs root");
	ASSERT_EQ(0, d9_open(&d));
	peer_cpu = d.ncpu > 1 ? 1 : 0;
	d9_close(&d);
	ASSERT_EQ(0, d9_pin(0));
	ASSERT_EQ(0, peer_start(&peer, peer_cpu, 100, 0));	/* stays root */
	ASSERT_EQ(0, record_wake_cpus(&peer, 50, peer_cpu, &priv));
	ASSERT_EQ(0, drop_privileges());
	ASSERT_EQ(0, record_wake_cpus(&peer, 50, DIAL9_CPU_REDACTED, &unpriv));
	ASSERT_EQ(0, peer_wait(&peer));
	TH_LOG("privileged: %d/%d wake-ups of the peer on CPU %d, %d own; unprivileged: %d/%d redacted, %d own",
	       priv.foreign_want, priv.foreign, peer_cpu, priv.own,
	       unpriv.foreign_want, unpriv.foreign, unpriv.own);
	EXPECT_LE(25, priv.foreign);
	EXPECT_EQ(priv.foreign, priv.foreign_want);
	EXPECT_LE(25, unpriv.foreign);
	EXPECT_EQ(unpriv.foreign, unpriv.foreign_want);
	EXPECT_LE(25, priv.own);
	EXPECT_LE(25, unpriv.own);
	EXPECT_EQ(0, priv.own_bad);
	EXPECT_EQ(0, unpriv.own_bad);
}

/* With CAP_PERFMON another process can be added, and its children. */
TEST(privileged_records_targets_and_children)
{
	struct dial9_target t = { .size = sizeof(t) };
	struct d9_recs recs = { 0 };
	int parent_sw = 0, grandchild_sw = 0, own = 0;
	pid_t child, grandchild = 0;
	int go[2], report[2], st;
	struct d9 d;

	if (geteuid() != 0)
		SKIP(return, "needs root");
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(report));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		char c;
		pid_t gc;

		if (read(go[0], &c, 1) != 1)
			_exit(1);
		gc = fork();
		if (!gc) {
			usleep(1000);
			usleep(1000);
			_exit(0);
		}
		if (write(report[1], &gc, sizeof(gc)) != sizeof(gc))
			_exit(1);
		waitpid(gc, NULL, 0);
		usleep(1000);
		_exit(0);
	}
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, DIAL9_CFG_NO_SELF, 0, 0));
	t.pid = child;
	t.flags = DIAL9_TARGET_CHILDREN;
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &t));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(sizeof(grandchild), read(report[0], &grandchild,
					   sizeof(grandchild)));
	ASSERT_EQ(child, waitpid(child, &st, 0));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LT(0, d9_drain(&d, &recs));
	d9_for_each(r, &recs) {
		const struct dial9_rec_switch *sw = (const void *)r;

		if (r->type != DIAL9_REC_SWITCH)
			continue;
		parent_sw += (pid_t)sw->prev_tgid == child;
		grandchild_sw += (pid_t)sw->prev_tgid == grandchild;
		own += (pid_t)sw->prev_tgid == getpid() &&
		       (pid_t)sw->next_tgid != child &&
		       (pid_t)sw->next_tgid != grandchild;
	}
	TH_LOG("switch-outs: child %d, grandchild %d, self %d", parent_sw,
	       grandchild_sw, own);
	EXPECT_LE(1, parent_sw);
	EXPECT_LE(2, grandchild_sw);
	EXPECT_EQ(0, own);	/* DIAL9_CFG_NO_SELF */
	d9_recs_free(&recs);
	d9_close(&d);
}

TEST(system_wide_sees_other_processes)
{
	struct d9_recs recs = { 0 };
	struct peer peer;
	int peer_sw = 0;
	struct d9 d;

	if (geteuid() != 0)
		SKIP(return, "needs root");
	ASSERT_EQ(0, d9_open(&d));
	ASSERT_EQ(0, d9_configure(&d, DIAL9_CFG_SYSTEM_WIDE, 0, 0));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, peer_start(&peer, 1 % d.ncpu, 20, 0));
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(0, peer_bounce(&peer, 20));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_EQ(0, peer_wait(&peer));
	ASSERT_LT(0, d9_drain(&d, &recs));
	d9_for_each(r, &recs) {
		const struct dial9_rec_switch *sw = (const void *)r;

		if (r->type == DIAL9_REC_SWITCH)
			peer_sw += (pid_t)sw->prev_tgid == peer.pid;
	}
	EXPECT_LE(10, peer_sw);
	d9_recs_free(&recs);
	d9_close(&d);
}

/*
 * One try of the test below: 1 when a root process got the opener's pid
 * (then *@eperm says whether the keeper's ADD_TARGET of it was -EPERM),
 * 0 when another task took that pid first (a kernel thread can), -1 on
 * an error.
 */
static int reuse_opener_pid(bool *eperm)
{
	struct dial9_target t = { .size = sizeof(t) };
	int go[2], done[2], st, ret = -1;
	pid_t opener, reuser;
	FILE *f;
	char c;

	if (pipe(go) || pipe(done))
		return -1;
	opener = fork();
	if (opener < 0)
		return -1;
	if (!opener) {
		struct d9 d;
		pid_t keeper;

		close(go[1]);
		close(done[0]);
		if (drop_privileges() || d9_open(&d))
			_exit(2);
		keeper = fork();
		if (keeper < 0)
			_exit(2);
		if (keeper)
			_exit(0);	/* the opener goes; its child keeps d */
		if (read(go[0], &t.pid, sizeof(t.pid)) != sizeof(t.pid))
			_exit(2);	/* no pid: the try is over */
		st = d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &t);
		c = st == -EPERM ? 0 : 1;
		if (write(done[1], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	if (waitpid(opener, &st, 0) != opener || WEXITSTATUS(st))
		goto out;
	usleep(100000);		/* its task_struct is freed after RCU */
	f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	if (!f)
		goto out;
	fprintf(f, "%d", opener - 1);
	fclose(f);
	reuser = fork();
	if (reuser < 0)
		goto out;
	if (!reuser) {
		for (;;)
			usleep(2000);
	}
	ret = 0;
	if (reuser == opener &&	/* root, with the opener's pid */
	    write(go[1], &reuser, sizeof(reuser)) == sizeof(reuser) &&
	    read(done[0], &c, 1) == 1) {
		*eperm = !c;
		ret = 1;
	}
	kill(reuser, SIGKILL);
	waitpid(reuser, NULL, 0);
out:
	close(go[1]);		/* a keeper still waiting reads nothing: it goes */
	close(done[0]);
	return ret;
}

/*
 * A session names its opener by identity: after the opener exits and a
 * root process takes its pid, a child that kept the session open (uid
 * 65534) cannot make it follow that process.  A try in which another
 * task took the pid first proves nothing: up to 5 tries.
 */
TEST(reused_opener_pid_is_not_the_opener)
{
	bool eperm = false;
	int ret = 0, tries;

	if (access("/proc/sys/kernel/ns_last_pid", W_OK))
		SKIP(return, "cannot choose pids (ns_last_pid)");
	for (tries = 1; tries <= 5 && !ret; tries++)
		ret = reuse_opener_pid(&eperm);
	ASSERT_EQ(1, ret) TH_LOG("no try got the opener's pid back");
	TH_LOG("the opener's pid reused by root in try %d", tries - 1);
	EXPECT_TRUE(eperm) TH_LOG("ADD_TARGET of the reused pid was not -EPERM");
}

/*
 * Make the setuid-root copy of busybox that the tests below exec; 0 or
 * -1 (then they skip).
 */
static int make_setuid_prog(void)
{
	return system("cp /bin/busybox /tmp/d9-setuid-busybox && "
		      "chown 0:0 /tmp/d9-setuid-busybox && "
		      "chmod 4755 /tmp/d9-setuid-busybox") ? -1 : 0;
}

/*
 * An unprivileged session stops following a child at an exec that gains
 * privileges (a setuid-root program), and says so: an UNFOLLOWED record
 * with DIAL9_UNFOLLOWED_EXEC, and nothing of the child unredacted after.
 */
TEST(setuid_exec_ends_following)
{
	static const char prog[] = "/tmp/d9-setuid-busybox";
	struct dial9_target t = { .size = sizeof(t) };
	struct d9_recs recs = { 0 };
	int unfollowed = 0, before = 0, after = 0, st, part = 0;
	int n[3] = { 0, 0, 0 };
	pid_t kid;
	struct d9 d;

	if (make_setuid_prog())
		SKIP(return, "cannot make a setuid program");
	ASSERT_EQ(0, drop_privileges());
	ASSERT_EQ(0, d9_open(&d));
	t.pid = getpid();
	t.flags = DIAL9_TARGET_CHILDREN;
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &t));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		/* followed: switches before the exec */
		for (int i = 0; i < 20; i++)
			usleep(1000);
		execl(prog, "sh", "-c",
		      "i=0; while [ $i -lt 20 ]; do usleep 1000; i=$((i+1)); done",
		      (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LT(0, d9_drain(&d, &recs));
	{
		const struct dial9_rec_header **v = d9_sorted(&recs);

		ASSERT_NE(NULL, v);
		/*
		 * Three parts: before the exec renames the child, while the
		 * kernel loads the program (the credentials are committed in
		 * there; the probe at its end stops following), and after
		 * the UNFOLLOWED record.  Without one, all after the rename.
		 */
		for (size_t i = 0; i < recs.count; i++) {
			const struct dial9_rec_switch *sw = (const void *)v[i];
			const struct dial9_rec_unfollowed *uf = (const void *)v[i];
			const struct dial9_rec_comm *cm = (const void *)v[i];

			if (v[i]->type == DIAL9_REC_COMM &&
			    (pid_t)cm->tid == kid &&
			    !strncmp(cm->comm, "d9-setuid", 9))
				part = part ? part : 1;
			if (v[i]->type == DIAL9_REC_UNFOLLOWED &&
			    (pid_t)uf->tgid == kid &&
			    (v[i]->flags & DIAL9_UNFOLLOWED_EXEC)) {
				unfollowed++;
				EXPECT_EQ(getpid(), (pid_t)uf->parent_tgid);
				part = 2;
			}
			if (v[i]->type == DIAL9_REC_SWITCH &&
			    ((pid_t)sw->prev_tgid == kid ||
			     (pid_t)sw->next_tgid == kid))
				n[part]++;
		}
		free(v);
		before = n[0];
		after = unfollowed ? n[2] : n[1] + n[2];
	}
	unlink(prog);
	TH_LOG("child %d: %d switches recorded before its setuid exec, %d while loading it, %d after",
	       kid, before, unfollowed ? n[1] : 0, after);
	EXPECT_EQ(1, unfollowed);
	EXPECT_LE(5, before);
	EXPECT_EQ(0, after);
	d9_recs_free(&recs);
	d9_close(&d);
}

/*
 * In @kid's records: UNFOLLOWED (DIAL9_UNFOLLOWED_EXEC) records of it, and
 * records that show it unredacted.
 */
static void count_kid(const struct d9_recs *recs, pid_t kid, int *unfollowed,
		      int *seen)
{
	*unfollowed = 0;
	*seen = 0;
	d9_for_each(r, recs) {
		int before = *seen;

		const struct dial9_rec_switch *sw = (const void *)r;
		const struct dial9_rec_wake *wk = (const void *)r;
		const struct dial9_rec_comm *cm = (const void *)r;
		const struct dial9_rec_unfollowed *uf = (const void *)r;

		switch (r->type) {
		case DIAL9_REC_SWITCH:
			*seen += (pid_t)sw->prev_tgid == kid ||
				 (pid_t)sw->next_tgid == kid;
			break;
		case DIAL9_REC_WAKING:
		case DIAL9_REC_WAKEUP:
		case DIAL9_REC_WAKEUP_NEW:
			*seen += (pid_t)wk->tgid == kid ||
				 (pid_t)wk->waker_tgid == kid;
			break;
		case DIAL9_REC_COMM:
		case DIAL9_REC_MIGRATE:
		case DIAL9_REC_EXIT:
			*seen += (pid_t)cm->tgid == kid;
			break;
		case DIAL9_REC_UNFOLLOWED:
			*unfollowed += (pid_t)uf->tgid == kid &&
				       (r->flags & DIAL9_UNFOLLOWED_EXEC);
			break;
		}
		if (*seen != before)	/* what it was, should one be seen */
			fprintf(stderr, "# %d seen: record type %u at %llu cpu %u flags %#x, ids %u/%u %u/%u\n",
				kid, r->type, (unsigned long long)r->time_ns,
				r->cpu, r->flags, sw->prev_tgid, sw->prev_tid,
				sw->next_tgid, sw->next_tid);
	}
}

/*
 * Give the setuid shell @ready as fd 3 and @go as fd 4 (both may be
 * among fds 3 and 4 now): 0 or -1.
 */
static int script_fds(int ready, int go)
{
	int r = fcntl(ready, F_DUPFD, 10), g = fcntl(go, F_DUPFD, 10);

	return r < 0 || g < 0 || dup2(r, 3) != 3 || dup2(g, 4) != 4 ? -1 : 0;
}

/*
 * The setuid shell's script: "a\n" on fd 3, a line from fd 4, 30 sleeps,
 * "b\n" on fd 3.
 */
#define D9_SETUID_SCRIPT \
	"echo a >&3; read x <&4; i=0; while [ $i -lt 30 ]; do usleep 1000; " \
	"i=$((i+1)); done; echo b >&3"

/*
 * The ids @pid runs with: whether the setuid program kept its privileges
 * (then the credentials stop the records) or dropped them (then its
 * AT_SECURE does).
 */
static void log_ids(struct __test_metadata *_metadata, pid_t pid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Uid:", 4) || !strncmp(line, "CapPrm:", 7))
			TH_LOG("%d %.*s", pid, (int)strcspn(line, "\n"), line);
	if (f)
		fclose(f);
}

/*
 * A followed child that execs a setuid program while the session is
 * disabled is not recorded after ENABLE: the trace says it is no longer
 * followed, and shows none of its records.
 */
TEST(setuid_exec_while_disabled_ends_following)
{
	struct dial9_target t = { .size = sizeof(t) };
	struct d9_recs recs = { 0 };
	int go[2], ready[2], st, unfollowed, seen;
	pid_t kid;
	struct d9 d;
	char c, l[2];

	if (make_setuid_prog())
		SKIP(return, "cannot make a setuid program");
	ASSERT_EQ(0, drop_privileges());
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, d9_open(&d));
	t.pid = getpid();
	t.flags = DIAL9_TARGET_CHILDREN;
	ASSERT_EQ(0, d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &t));
	ASSERT_EQ(0, d9_map(&d));
	ASSERT_EQ(0, d9_enable(&d));
	kid = fork();		/* followed: the session is enabled */
	ASSERT_LE(0, kid);
	if (!kid) {
		if (read(go[0], &c, 1) != 1 || script_fds(ready[1], go[0]))
			_exit(126);
		execl("/tmp/d9-setuid-busybox", "sh", "-c", D9_SETUID_SCRIPT,
		      (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LE(0, d9_drain(&d, &recs));	/* before: not counted */
	d9_recs_free(&recs);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(2, read(ready[0], l, 2));	/* the setuid shell runs */
	log_ids(_metadata, kid);
	ASSERT_EQ(0, d9_enable(&d));
	ASSERT_EQ(2, write(go[1], "g\n", 2));
	ASSERT_EQ(2, read(ready[0], l, 2));	/* its sleeps are done */
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_EQ(0, d9_disable(&d));
	ASSERT_LE(0, d9_drain(&d, &recs));
	count_kid(&recs, kid, &unfollowed, &seen);
	unlink("/tmp/d9-setuid-busybox");
	TH_LOG("child %d, setuid exec while disabled: %d records of it after ENABLE, %d UNFOLLOWED",
	       kid, seen, unfollowed);
	EXPECT_EQ(0, seen);
	EXPECT_EQ(1, unfollowed);
	d9_recs_free(&recs);
	d9_close(&d);
}

/*
 * The opener (uid 65534) execs a setuid program while its child keeps
 * the session: the child cannot ADD_TARGET it, and the opener's own
 * entry (every session follows its opener) records nothing of it.  The
 * child reports to us through @res: -errno of ADD_TARGET, then the
 * records of the opener it saw and the UNFOLLOWED records of it.
 */
TEST(setuid_opener_is_not_followed)
{
	int res[2], ready[2], go[2], st, v[3] = { 1, -1, -1 };
	pid_t opener;

	if (make_setuid_prog())
		SKIP(return, "cannot make a setuid program");
	ASSERT_EQ(0, pipe(res));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	opener = fork();
	ASSERT_LE(0, opener);
	if (!opener) {
		struct dial9_target t = { .size = sizeof(t) };
		struct d9_recs recs = { 0 };
		pid_t me = getpid();
		struct d9 d;
		char l[2];

		if (drop_privileges() || d9_open(&d))
			_exit(2);
		if (fork()) {	/* the opener; d is close-on-exec */
			if (script_fds(ready[1], go[0]))
				_exit(126);
			execl("/tmp/d9-setuid-busybox", "sh", "-c",
			      D9_SETUID_SCRIPT, (char *)NULL);
			_exit(127);
		}
		close(ready[1]);
		if (d9_map(&d) || read(ready[0], l, 2) != 2)
			_exit(2);	/* the setuid shell runs */
		t.pid = me;
		v[0] = d9_ioctl(d.fd, DIAL9_IOC_ADD_TARGET, &t);
		if (d9_enable(&d) || write(go[1], "g\n", 2) != 2 ||
		    read(ready[0], l, 2) != 2 || d9_disable(&d) ||
		    d9_drain(&d, &recs) < 0)
			_exit(2);
		count_kid(&recs, me, &v[2], &v[1]);
		if (write(res[1], v, sizeof(v)) != sizeof(v))
			_exit(2);
		_exit(0);
	}
	close(res[1]);
	ASSERT_EQ(sizeof(v), read(res[0], v, sizeof(v)));
	ASSERT_EQ(opener, waitpid(opener, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));
	unlink("/tmp/d9-setuid-busybox");
	TH_LOG("opener %d after its setuid exec: ADD_TARGET %d, %d records of it, %d UNFOLLOWED",
	       opener, v[0], v[1], v[2]);
	EXPECT_EQ(-EPERM, v[0]);
	EXPECT_EQ(0, v[1]);
	EXPECT_EQ(1, v[2]);
}

TEST_HARNESS_MAIN
