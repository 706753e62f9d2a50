// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 kernel memory per user.  A session's memory (its own struct, its
 * target table, its rings and samplers) is kernel memory that the
 * process's own size does not show.  All of it is charged to the memory
 * cgroup of the process that allocates it (__GFP_ACCOUNT), the large
 * parts with __GFP_NORETRY, so that a cgroup without room fails the
 * call with -ENOMEM instead of calling its OOM killer.  And one
 * unprivileged user's sessions together may hold at most user_ring_kb of
 * it, as perf caps its buffers with perf_event_mlock_kb, and at most
 * user_sessions sessions (open files of /dev/dial9), as inotify caps
 * instances with max_user_instances.  Privileged sessions (CAP_PERFMON)
 * are only charged to their cgroup.
 */
#include <linux/module.h>
#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include "dial9_core.h"

static unsigned long user_ring_kb = 256 * 1024;
module_param(user_ring_kb, ulong, 0644);
MODULE_PARM_DESC(user_ring_kb,
		 "kernel memory (KiB: rings, target tables) all sessions of one unprivileged user may hold; 0: no limit (default 262144)");

static unsigned int user_sessions = 64;
module_param(user_sessions, uint, 0644);
MODULE_PARM_DESC(user_sessions,
		 "sessions (open files of /dev/dial9) one unprivileged user may hold at once, past which open() fails with EMFILE; 0: no limit (default 64)");

struct dial9_user {
	struct hlist_node node;
	kuid_t uid;
	u64 bytes;
	u32 sessions;
};

static DEFINE_HASHTABLE(dial9_users, 6);
static DEFINE_MUTEX(dial9_users_lock);

static struct dial9_user *dial9_user_find(kuid_t uid)
{
	struct dial9_user *u;

	hash_for_each_possible(dial9_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/* Whether @u may hold @bytes more.  Caller holds dial9_users_lock. */
static bool dial9_user_fits(const struct dial9_user *u, u64 bytes)
{
	u64 limit = (u64)READ_ONCE(user_ring_kb) << 10;

	return !limit || (u ? u->bytes : 0) + bytes <= limit;
}

/*
 * A new session of its user, which is to hold @bytes: counted, and the
 * bytes charged, before they are allocated.  For an unprivileged session,
 * -EMFILE when its user holds user_sessions sessions already, -EDQUOT
 * when @bytes would pass user_ring_kb.  s->privileged and s->uid are set.
 */
int dial9_quota_open(struct dial9_session *s, u64 bytes)
{
	unsigned int max_sessions = READ_ONCE(user_sessions);
	struct dial9_user *u;
	int ret = 0;

	if (s->privileged)
		return 0;
	mutex_lock(&dial9_users_lock);
	u = dial9_user_find(s->uid);
	if (max_sessions && u && u->sessions >= max_sessions) {
		ret = -EMFILE;
		goto out_unlock;
	}
	if (!dial9_user_fits(u, bytes)) {
		ret = -EDQUOT;
		goto out_unlock;
	}
	if (!u) {
		u = kzalloc(sizeof(*u), DIAL9_GFP);
		if (!u) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		u->uid = s->uid;
		hash_add(dial9_users, &u->node, __kuid_val(s->uid));
	}
	u->sessions++;
	u->bytes += bytes;
	s->charged = bytes;
out_unlock:
	mutex_unlock(&dial9_users_lock);
	return ret;
}

/*
 * Charge @bytes more (rings, samplers) to the session's user, before they
 * are allocated: -EDQUOT if that would pass user_ring_kb for an
 * unprivileged session.
 */
int dial9_quota_charge(struct dial9_session *s, u64 bytes)
{
	struct dial9_user *u;
	int ret = 0;

	if (s->privileged)
		return 0;
	mutex_lock(&dial9_users_lock);
	u = dial9_user_find(s->uid);
	if (WARN_ON_ONCE(!u)) {		/* dial9_quota_open() made it */
		ret = -EINVAL;
	} else if (!dial9_user_fits(u, bytes)) {
		ret = -EDQUOT;
	} else {
		u->bytes += bytes;
		s->charged += bytes;
	}
	mutex_unlock(&dial9_users_lock);
	return ret;
}

/* Give back @bytes of what the session was charged (allocation failed). */
void dial9_quota_uncharge(struct dial9_session *s, u64 bytes)
{
	struct dial9_user *u;

	if (s->privileged)
		return;
	mutex_lock(&dial9_users_lock);
	u = dial9_user_find(s->uid);
	bytes = min(bytes, s->charged);
	if (u)
		u->bytes -= min(u->bytes, bytes);
	s->charged -= bytes;
	mutex_unlock(&dial9_users_lock);
}

/*
 * The session is gone (release, or a failed open after dial9_quota_open()
 * succeeded): its bytes and its place given back.
 */
void dial9_quota_close(struct dial9_session *s)
{
	struct dial9_user *u;

	if (s->privileged)
		return;
	mutex_lock(&dial9_users_lock);
	u = dial9_user_find(s->uid);
	if (u) {
		u->bytes -= min(u->bytes, s->charged);
		if (u->sessions)
			u->sessions--;
		if (!u->sessions) {
			hash_del(&u->node);
			kfree(u);
		}
	}
	s->charged = 0;
	mutex_unlock(&dial9_users_lock);
}
