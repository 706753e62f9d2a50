// SPDX-License-Identifier: GPL-2.0
/*
 * dial9: the /dev/dial9 misc device.  Each open() is a session with its own
 * per-CPU rings; the ioctls configure it, mmap() exposes the rings, poll()
 * waits for the reader's watermark.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/cpumask.h>
#include <linux/log2.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include "dial9_core.h"
#include "compat.h"

#define DIAL9_FEATURES (DIAL9_FEAT_SWITCH_WAIT | DIAL9_FEAT_SYSTEM_WIDE | \
			DIAL9_FEAT_FOLLOW_FORK | DIAL9_FEAT_COMM | \
			DIAL9_FEAT_POLL | DIAL9_FEAT_RUNQ_TOTALS | \
			DIAL9_FEAT_UNFOLLOWED | DIAL9_FEAT_IGNORE | \
			DIAL9_FEAT_EXEC_UNFOLLOW | DIAL9_FEAT_STACKS | \
			DIAL9_FEAT_OCCUPANTS | DIAL9_FEAT_SAMPLES | \
			DIAL9_FEAT_IGNORE_SYNC)

static void dial9_wakeup_fn(struct irq_work *work)
{
	struct dial9_session *s = container_of(work, struct dial9_session,
					       wakeup);

	wake_up_all(&s->wq);
}

static void dial9_rings_free(struct dial9_session *s)
{
	int cpu;

	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		dial9_ring_free(s->rings[cpu]);
	kfree(s->rings);
}

/* What a session's rings take: a data area and a control page per CPU. */
static u64 dial9_rings_bytes(const struct dial9_session *s)
{
	return (u64)num_possible_cpus() *
	       (s->ring_size + PAGE_SIZE + sizeof(struct dial9_ring));
}

/*
 * Allocate the rings on first use, charged to the opener's user (quota.c):
 * -EDQUOT past its limit; -ENOMEM if the caller's memory cgroup has no
 * room.  Caller holds s->lock.
 */
static int dial9_rings_ready(struct dial9_session *s)
{
	int cpu, ret;

	if (s->rings_ready)
		return 0;
	ret = dial9_quota_charge(s, dial9_rings_bytes(s));
	if (ret)
		return ret;
	for_each_possible_cpu(cpu) {
		s->rings[cpu] = dial9_ring_alloc(s->ring_size, cpu);
		if (!s->rings[cpu])
			goto out_free;
	}
	/* poll() reads rings without the lock once this is seen. */
	smp_store_release(&s->rings_ready, true);
	return 0;

out_free:
	for_each_possible_cpu(cpu) {
		dial9_ring_free(s->rings[cpu]);
		s->rings[cpu] = NULL;
	}
	dial9_quota_uncharge(s, dial9_rings_bytes(s));
	return -ENOMEM;
}

/* What a session takes at open: itself, its rings array, its targets. */
static u64 dial9_session_bytes(void)
{
	return sizeof(struct dial9_session) +
	       nr_cpu_ids * sizeof(struct dial9_ring *) +
	       dial9_targets_bytes();
}

/*
 * A session.  Its memory is charged to the opener's memory cgroup and,
 * without CAP_PERFMON, to its user, who may hold a limited number of
 * sessions (quota.c): -EMFILE past user_sessions, -EDQUOT past
 * user_ring_kb, -ENOMEM if the cgroup has no room for the target table.
 */
static int dial9_open(struct inode *inode, struct file *file)
{
	struct dial9_session *s;
	int ret;

	s = kzalloc(sizeof(*s), DIAL9_GFP);
	if (!s)
		return -ENOMEM;
	s->privileged = perfmon_capable();
	s->uid = current_uid();
	s->occ_slot = -1;
	/* Counted and charged before the large parts are allocated. */
	ret = dial9_quota_open(s, dial9_session_bytes());
	if (ret)
		goto out_free;
	ret = -ENOMEM;
	s->rings = kcalloc(nr_cpu_ids, sizeof(*s->rings), DIAL9_GFP);
	if (!s->rings || dial9_targets_init(s))
		goto out_quota;
	INIT_LIST_HEAD(&s->node);
	mutex_init(&s->lock);
	init_waitqueue_head(&s->wq);
	init_irq_work(&s->wakeup, dial9_wakeup_fn);
	s->cred = get_cred(current_real_cred());
	s->opener_secure = dial9_secure_image(current);
	s->owner_tgid = task_tgid_nr(current);
	s->owner_start = dial9_process_start(current);
	s->events = DIAL9_EV_DEFAULT;
	s->ring_size = DIAL9_RING_DEFAULT_SIZE;
	dial9_target_add(s, current, 0);
	file->private_data = s;
	return nonseekable_open(inode, file);

out_quota:
	dial9_targets_free(s);
	kfree(s->rings);
	dial9_quota_close(s);
out_free:
	kfree(s);
	return ret;
}

static int dial9_release(struct inode *inode, struct file *file)
{
	struct dial9_session *s = file->private_data;

	/* Mappings hold the file, so none is left: free everything. */
	mutex_lock(&s->lock);
	dial9_sample_stop(s);
	dial9_session_disable(s);
	mutex_unlock(&s->lock);
	dial9_sample_free(s);
	dial9_rings_free(s);
	dial9_targets_free(s);
	dial9_quota_close(s);
	put_cred(s->cred);
	mutex_destroy(&s->lock);
	kfree(s);
	return 0;
}

static int dial9_ioc_get_version(void __user *arg)
{
	struct dial9_version v = {
		.abi_version = DIAL9_ABI_VERSION,
		.nr_cpu_ids = nr_cpu_ids,
		.features = DIAL9_FEATURES,
		.default_ring_size = DIAL9_RING_DEFAULT_SIZE,
		.max_targets = DIAL9_MAX_TARGETS,
	};

	return copy_to_user(arg, &v, sizeof(v)) ? -EFAULT : 0;
}

/*
 * Read a size-first struct of at least @min bytes; *@usize is the caller's
 * size, read once.  Bytes past what this kernel knows must be zero
 * (-E2BIG), as for openat2() and clone3().  Never called under s->lock:
 * the copy can fault, and a fault takes the mmap lock, which dial9_mmap()
 * holds while it waits for s->lock.
 */
static int dial9_get_struct(void *dst, size_t ksize, size_t min,
			    void __user *arg, u32 *usize)
{
	int ret;

	if (get_user(*usize, (u32 __user *)arg))
		return -EFAULT;
	if (*usize < min || *usize > PAGE_SIZE)
		return -EINVAL;
	ret = copy_struct_from_user(dst, ksize, arg, *usize);
	/* The struct's own size field may have changed since: not used. */
	*(u32 *)dst = min_t(u32, *usize, ksize);
	return ret;
}

static int dial9_ioc_configure(struct dial9_session *s,
			       const struct dial9_session_config *cfg)
{
	if (cfg->flags & ~DIAL9_CFG_ALL || cfg->events & ~DIAL9_EV_ALL ||
	    cfg->sample_hz > DIAL9_SAMPLE_MAX_HZ || cfg->reserved0 ||
	    cfg->reserved[0])
		return -EINVAL;
	if (cfg->ring_size &&
	    (!is_power_of_2(cfg->ring_size) ||
	     cfg->ring_size < DIAL9_RING_MIN_SIZE ||
	     cfg->ring_size > DIAL9_RING_MAX_SIZE ||
	     cfg->ring_size < PAGE_SIZE))
		return -EINVAL;
	if ((cfg->flags & DIAL9_CFG_SYSTEM_WIDE) && !s->privileged)
		return -EPERM;
	if (s->rings_ready || s->enabled)
		return -EBUSY;

	s->system_wide = cfg->flags & DIAL9_CFG_SYSTEM_WIDE;
	s->stacks = cfg->flags & DIAL9_CFG_STACKS;
	s->sample_hz = cfg->sample_hz;
	s->events = cfg->events ? cfg->events : DIAL9_EV_DEFAULT;
	/* Occupants are switches: nothing to do without them. */
	s->occupants = (cfg->flags & DIAL9_CFG_OCCUPANTS) &&
		       (s->events & DIAL9_EV_SWITCH);
	if (cfg->ring_size)
		s->ring_size = cfg->ring_size;
	if (cfg->flags & DIAL9_CFG_NO_SELF)
		dial9_target_forget(s, s->owner_tgid, 0, true);
	return 0;
}

static int dial9_ioc_add_target(struct dial9_session *s,
				const struct dial9_target *t)
{
	struct task_struct *task;
	pid_t tgid = 0;
	int ret;

	if (t->flags & ~DIAL9_TARGET_CHILDREN || t->reserved || !t->pid ||
	    t->pid > PID_MAX_LIMIT)
		return -EINVAL;

	rcu_read_lock();
	task = pid_task(find_vpid(t->pid), PIDTYPE_PID);
	ret = -ESRCH;
	if (task) {
		tgid = task_tgid_nr(task);
		ret = !s->privileged && (!dial9_is_owner(s, task) ||
					 !dial9_may_follow(s, task)) ?
		      -EPERM : dial9_target_add(s, task, t->flags);
	}
	rcu_read_unlock();
	if (!ret && s->enabled) {
		dial9_targets_sync(s, tgid);
		dial9_sample_kick(s);	/* it may be running now */
	}
	return ret;
}

static int dial9_ioc_ignore_thread(struct dial9_session *s,
				   const struct dial9_ignore *ig)
{
	struct task_struct *task;
	int ret;

	if (ig->flags & ~DIAL9_IGNORE_REMOVE || ig->reserved ||
	    ig->tid > PID_MAX_LIMIT)
		return -EINVAL;
	rcu_read_lock();
	task = ig->tid ? pid_task(find_vpid(ig->tid), PIDTYPE_PID) : current;
	ret = -ESRCH;
	if (task)
		ret = !dial9_is_owner(s, task) && !s->privileged ?
		      -EPERM : dial9_ignore_set(s, task,
						ig->flags & DIAL9_IGNORE_REMOVE);
	rcu_read_unlock();
	/*
	 * DIAL9_FEAT_IGNORE_SYNC: the probes run with preemption off, so
	 * once a grace period has passed, every probe that matched the
	 * thread before dial9_ignore_set() has written its record.
	 * Expedited: a recorder thread calls this as it starts, while its
	 * rings fill.
	 */
	if (!ret && !(ig->flags & DIAL9_IGNORE_REMOVE) && s->enabled)
		synchronize_rcu_expedited();
	/* Recorded again, it may be running now (as for ADD_TARGET). */
	if (!ret && (ig->flags & DIAL9_IGNORE_REMOVE) && s->enabled)
		dial9_sample_kick(s);
	return ret;
}

/* Fill @st for the CPU it names.  Its copy out is the caller's. */
static int dial9_ioc_get_stats(struct dial9_session *s,
			       struct dial9_ring_stats *st)
{
	struct dial9_ring *r;
	u32 cpu = st->cpu;

	if (cpu >= nr_cpu_ids)
		return -EINVAL;
	if (!cpu_possible(cpu))
		return -ENODEV;
	r = s->rings_ready ? s->rings[cpu] : NULL;
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->cpu = r ? r->cpu : 0;
	st->written = r ? READ_ONCE(r->written) : 0;
	st->lost = r ? READ_ONCE(r->lost) : 0;
	st->ring_size = s->ring_size;
	st->targets_dropped = atomic64_read(&s->targets_dropped);
	st->targets = dial9_targets_count(s);
	st->samples_missed = dial9_sample_missed(s, cpu);
	return 0;
}

/* Copy stats out: what the caller's @usize holds, the rest zeroed. */
static int dial9_put_stats(void __user *arg, const struct dial9_ring_stats *st,
			   u32 usize)
{
	if (copy_to_user(arg, st, min_t(size_t, usize, sizeof(*st))))
		return -EFAULT;
	if (usize > sizeof(*st) &&
	    clear_user(arg + sizeof(*st), usize - sizeof(*st)))
		return -EFAULT;
	return 0;
}

/* The ioctl number without its size bits, so extensible structs can grow. */
#define DIAL9_IOC_BASE(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

union dial9_ioc_arg {
	struct dial9_session_config cfg;
	struct dial9_target target;
	struct dial9_ring_stats stats;
	struct dial9_ignore ignore;
};

/* Copy in the argument of @base, before s->lock is taken. */
static int dial9_ioc_in(unsigned int base, void __user *arg,
			union dial9_ioc_arg *u, u32 *usize)
{
	switch (base) {
	case DIAL9_IOC_BASE(DIAL9_IOC_CONFIGURE):
		return dial9_get_struct(&u->cfg, sizeof(u->cfg),
					DIAL9_SESSION_CONFIG_SIZE_VER0, arg,
					usize);
	case DIAL9_IOC_BASE(DIAL9_IOC_ADD_TARGET):
		return dial9_get_struct(&u->target, sizeof(u->target),
					DIAL9_TARGET_SIZE_VER0, arg, usize);
	case DIAL9_IOC_BASE(DIAL9_IOC_GET_STATS):
		return dial9_get_struct(&u->stats, sizeof(u->stats),
					DIAL9_RING_STATS_SIZE_VER0, arg, usize);
	case DIAL9_IOC_BASE(DIAL9_IOC_IGNORE_THREAD):
		return dial9_get_struct(&u->ignore, sizeof(u->ignore),
					DIAL9_IGNORE_SIZE_VER0, arg, usize);
	case DIAL9_IOC_ENABLE:
	case DIAL9_IOC_DISABLE:
		return 0;
	default:
		return -ENOTTY;
	}
}

/*
 * Every copy from and to the caller happens outside s->lock (see
 * dial9_get_struct()); under it, only kernel memory is touched.
 */
static long dial9_ioctl(struct file *file, unsigned int cmd, unsigned long a)
{
	struct dial9_session *s = file->private_data;
	void __user *arg = (void __user *)a;
	unsigned int base = DIAL9_IOC_BASE(cmd);
	union dial9_ioc_arg u;
	u32 usize = 0;
	long ret;

	if (cmd == DIAL9_IOC_GET_VERSION)
		return dial9_ioc_get_version(arg);
	ret = dial9_ioc_in(base, arg, &u, &usize);
	if (ret)
		return ret;

	mutex_lock(&s->lock);
	switch (base) {
	case DIAL9_IOC_BASE(DIAL9_IOC_CONFIGURE):
		ret = dial9_ioc_configure(s, &u.cfg);
		break;
	case DIAL9_IOC_BASE(DIAL9_IOC_ADD_TARGET):
		ret = dial9_ioc_add_target(s, &u.target);
		break;
	case DIAL9_IOC_ENABLE:
		ret = dial9_rings_ready(s);
		if (!ret)
			ret = dial9_session_enable(s);
		if (!ret)
			ret = dial9_sample_start(s);
		if (ret)
			dial9_session_disable(s);
		break;
	case DIAL9_IOC_DISABLE:
		dial9_sample_stop(s);
		dial9_session_disable(s);
		ret = 0;
		break;
	case DIAL9_IOC_BASE(DIAL9_IOC_GET_STATS):
		ret = dial9_ioc_get_stats(s, &u.stats);
		break;
	case DIAL9_IOC_BASE(DIAL9_IOC_IGNORE_THREAD):
		ret = dial9_ioc_ignore_thread(s, &u.ignore);
		break;
	}
	mutex_unlock(&s->lock);
	if (!ret && base == DIAL9_IOC_BASE(DIAL9_IOC_GET_STATS))
		ret = dial9_put_stats(arg, &u.stats, usize);
	return ret;
}

static int dial9_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct dial9_session *s = file->private_data;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned long len = vma->vm_end - vma->vm_start;
	u64 cpu = off >> 33;
	bool data = (off >> 32) & 1;
	struct dial9_ring *r;
	int ret;

	if (off & 0xffffffffULL || cpu >= nr_cpu_ids)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	mutex_lock(&s->lock);
	ret = dial9_rings_ready(s);
	if (ret)
		goto out_unlock;
	r = s->rings[cpu];
	ret = -ENODEV;
	if (!r)
		goto out_unlock;
	ret = -EINVAL;
	if (data) {
		if (len != r->size)
			goto out_unlock;
		/* Only the kernel writes records: no write, now or later. */
		ret = -EPERM;
		if (vma->vm_flags & VM_WRITE)
			goto out_unlock;
		dial9_vm_flags_clear(vma, VM_MAYWRITE);
	} else if (len != PAGE_SIZE) {
		goto out_unlock;
	}
	dial9_ring_map(vma, r, data);
	ret = 0;
out_unlock:
	mutex_unlock(&s->lock);
	return ret;
}

static __poll_t dial9_poll(struct file *file, poll_table *pt)
{
	struct dial9_session *s = file->private_data;
	int cpu;

	/*
	 * On the wait queue before reading heads: a record committed after
	 * this read is followed by a wake-up that finds us there.
	 */
	poll_wait(file, &s->wq, pt);
	/* Acquire: pairs with the release in dial9_rings_ready(). */
	if (!smp_load_acquire(&s->rings_ready))
		return 0;
	for_each_possible_cpu(cpu)
		if (dial9_ring_readable(s->rings[cpu]))
			return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static const struct file_operations dial9_fops = {
	.owner = THIS_MODULE,
	.open = dial9_open,
	.release = dial9_release,
	.unlocked_ioctl = dial9_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = dial9_mmap,
	.poll = dial9_poll,
	/*
	 * No .llseek: with none, and nonseekable_open(), lseek() gives
	 * -ESPIPE on every kernel (6.12 removed no_llseek).
	 */
};

static struct miscdevice dial9_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "dial9",
	.fops = &dial9_fops,
	.mode = 0600,	/* the udev rule opens it to a group */
};

static int __init dial9_init(void)
{
	int ret;

	dial9_index_init();
	ret = dial9_probes_init();
	if (ret)
		return ret;
	return misc_register(&dial9_misc);
}

static void __exit dial9_exit(void)
{
	misc_deregister(&dial9_misc);
	dial9_sample_exit();
	dial9_probes_exit();
}

module_init(dial9_init);
module_exit(dial9_exit);
MODULE_DESCRIPTION("dial9: per-CPU rings of scheduler events");
MODULE_LICENSE("GPL");
MODULE_VERSION(DIAL9_VERSION);
