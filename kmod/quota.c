// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 ring memory per user.  The rings are kernel memory that the
 * process's own size does not show: each is charged to the opener's memory
 * cgroup (__GFP_ACCOUNT, ring.c), and the sessions of one unprivileged
 * user together may hold at most user_ring_kb of it, as perf caps its
 * buffers with perf_event_mlock_kb.  Privileged sessions (CAP_PERFMON) are
 * only charged to their cgroup.
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
		 "ring memory (KiB) all sessions of one unprivileged user may hold; 0: no limit (default 262144)");

struct dial9_user {
	struct hlist_node node;
	kuid_t uid;
	u64 bytes;
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

/*
 * Charge @bytes of rings to the session's user.  -EDQUOT if that would pass
 * user_ring_kb for an unprivileged session.
 */
int dial9_quota_charge(struct dial9_session *s, u64 bytes)
{
	u64 limit = (u64)READ_ONCE(user_ring_kb) << 10;
	struct dial9_user *u;
	int ret = 0;

	if (s->privileged)
		return 0;
	mutex_lock(&dial9_users_lock);
	u = dial9_user_find(s->uid);
	if (limit && (u ? u->bytes : 0) + bytes > limit) {
		ret = -EDQUOT;
		goto out_unlock;
	}
	if (!u) {
		u = kzalloc(sizeof(*u), GFP_KERNEL);
		if (!u) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		u->uid = s->uid;
		hash_add(dial9_users, &u->node, __kuid_val(s->uid));
	}
	u->bytes += bytes;
	s->charged = bytes;
out_unlock:
	mutex_unlock(&dial9_users_lock);
	return ret;
}

/* Give back what dial9_quota_charge() took for the session. */
void dial9_quota_uncharge(struct dial9_session *s)
{
	struct dial9_user *u;

	if (!s->charged)
		return;
	mutex_lock(&dial9_users_lock);
	u = dial9_user_find(s->uid);
	if (u) {
		u->bytes -= min(u->bytes, s->charged);
		if (!u->bytes) {
			hash_del(&u->node);
			kfree(u);
		}
	}
	s->charged = 0;
	mutex_unlock(&dial9_users_lock);
}
