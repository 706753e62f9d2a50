// SPDX-License-Identifier: GPL-2.0
/*
 * dial9 per-CPU rings: a control page shared with the reader and a
 * power-of-two data area the reader maps read-only.
 *
 * The producer is the probe running on the ring's CPU with interrupts off,
 * so writes to one ring never interleave: a wake-up probe that interrupts
 * another on the same CPU waits for interrupts to come back on.  Records
 * are written in place.  The ring protocol follows perf's: write the
 * record, then publish head with release semantics; read the reader's tail
 * with acquire semantics before reusing space it has consumed.
 */
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <linux/build_bug.h>
#include "dial9_core.h"
#include "compat.h"

static_assert(sizeof(struct dial9_rec_header) == 16);
static_assert(sizeof(struct dial9_rec_lost) == 24);
static_assert(sizeof(struct dial9_rec_switch) == 80);
static_assert(offsetof(struct dial9_rec_switch, prev_run_delay_ns) ==
	      DIAL9_REC_SWITCH_SIZE_VER0);
static_assert(sizeof(struct dial9_rec_unfollowed) == 24);
static_assert(sizeof(struct dial9_rec_wake) == 40);
static_assert(sizeof(struct dial9_rec_migrate) == 32);
static_assert(sizeof(struct dial9_rec_exit) == 24);
static_assert(sizeof(struct dial9_rec_comm) == 40);
static_assert(sizeof(struct dial9_ring_ctrl) == 128);
static_assert(offsetof(struct dial9_ring_ctrl, tail) == 64);
static_assert(sizeof(struct dial9_ring_ctrl) <= PAGE_SIZE);
static_assert(sizeof(struct dial9_version) == 40);
static_assert(sizeof(struct dial9_session_config) == DIAL9_SESSION_CONFIG_SIZE_VER0);
static_assert(sizeof(struct dial9_target) == DIAL9_TARGET_SIZE_VER0);
static_assert(sizeof(struct dial9_ring_stats) == DIAL9_RING_STATS_SIZE_VER0);

struct dial9_ring *dial9_ring_alloc(u32 size, int cpu)
{
	struct dial9_ring *r;

	r = kzalloc(sizeof(*r), DIAL9_GFP);
	if (!r)
		return NULL;
	/*
	 * Zeroed, and charged to the memory cgroup of the process that maps
	 * or enables the session: -ENOMEM if it has no room, not its OOM
	 * killer.
	 */
	r->ctrl = __vmalloc(PAGE_SIZE, DIAL9_GFP_LARGE);
	r->data = __vmalloc(size, DIAL9_GFP_LARGE);
	if (!r->ctrl || !r->data) {
		dial9_ring_free(r);
		return NULL;
	}
	r->size = size;
	r->mask = size - 1;
	r->cpu = cpu;
	r->ctrl->data_size = size;
	r->ctrl->cpu = cpu;
	r->ctrl->abi_version = DIAL9_ABI_VERSION;
	r->woken_tail = U64_MAX;
	return r;
}

/*
 * The page of a ring's mapping at @vmf, found when it is first touched
 * (and again after madvise(MADV_DONTNEED) dropped it), as perf's rings
 * are.  The mapping's offset (DIAL9_MMAP_*) has its low 32 bits zero, so
 * those of the page offset are the page's index in the area, also in a
 * mapping that munmap() split or mremap() moved.  The vma holds the file,
 * so the session and its rings outlive it.
 */
static vm_fault_t dial9_ring_fault(struct vm_fault *vmf, void *area,
				   u32 size)
{
	unsigned long i = vmf->pgoff & ((1UL << (32 - PAGE_SHIFT)) - 1);
	struct page *page;

	if (i >= size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	page = vmalloc_to_page(area + (i << PAGE_SHIFT));
	get_page(page);
	vmf->page = page;
	return 0;
}

static vm_fault_t dial9_ctrl_fault(struct vm_fault *vmf)
{
	struct dial9_ring *r = vmf->vma->vm_private_data;

	return dial9_ring_fault(vmf, r->ctrl, PAGE_SIZE);
}

static vm_fault_t dial9_data_fault(struct vm_fault *vmf)
{
	struct dial9_ring *r = vmf->vma->vm_private_data;

	return dial9_ring_fault(vmf, r->data, r->size);
}

static const struct vm_operations_struct dial9_ctrl_vm_ops = {
	.fault = dial9_ctrl_fault,
};

static const struct vm_operations_struct dial9_data_vm_ops = {
	.fault = dial9_data_fault,
};

/*
 * Map @r's control page or (@data) its data area into @vma, whose length
 * the caller checked.  Pages come in on first touch.  The rings are
 * vmalloc memory charged to a cgroup, which remap_vmalloc_range() does
 * not take (it wants vmalloc_user()'s VM_USERMAP).
 */
void dial9_ring_map(struct vm_area_struct *vma, struct dial9_ring *r,
		    bool data)
{
	vma->vm_ops = data ? &dial9_data_vm_ops : &dial9_ctrl_vm_ops;
	vma->vm_private_data = r;
	dial9_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
}

void dial9_ring_free(struct dial9_ring *r)
{
	if (!r)
		return;
	vfree(r->data);
	vfree(r->ctrl);
	kfree(r);
}

/*
 * The reader's tail.  It is untrusted: a tail beyond head or too far
 * behind is garbage, and reads as a full ring.
 */
static u64 dial9_ring_tail(struct dial9_ring *r, u64 head)
{
	/* Acquire: the reader is done with the bytes before its tail. */
	u64 tail = smp_load_acquire(&r->ctrl->tail);

	if (tail > head || head - tail > r->size)
		return head - r->size;
	return tail;
}

bool dial9_ring_readable(struct dial9_ring *r)
{
	/* Acquire: pairs with the release in dial9_ring_commit(). */
	u64 head = smp_load_acquire(&r->ctrl->head);
	u32 wm = READ_ONCE(r->ctrl->watermark);
	u64 used = head - dial9_ring_tail(r, head);

	if (!wm)
		wm = 1;
	if (wm > r->size)
		wm = r->size;
	return used && used >= wm;
}

static void dial9_put_pad(struct dial9_ring *r, u32 off, u32 len)
{
	struct dial9_rec_header pad = {
		.type = DIAL9_REC_PAD,
		.size = len,
		.cpu = r->cpu,
	};

	/* A tail of 8 bytes holds only type, size, cpu and flags. */
	memcpy(r->data + off, &pad, min_t(u32, len, sizeof(pad)));
}

/*
 * dial9_ring_reserve() when the record may not fit by the reader's tail
 * last seen, needs a pad to the end of the area first, or follows drops:
 * the tail read again, then a PAD and a LOST record as needed.
 */
void *dial9_ring_reserve_slow(struct dial9_ring *r, u16 type, u32 size,
			      u64 time_ns)
{
	struct dial9_rec_header *h;
	u64 head = r->head;
	u32 off = head & r->mask;
	u32 need = size;
	u32 pad = 0;

	if (r->unreported_lost)
		need += sizeof(struct dial9_rec_lost);
	/* Records never wrap: pad to the end of the data area first. */
	if (off + need > r->size)
		pad = r->size - off;
	r->tail_seen = dial9_ring_tail(r, head);
	if (head - r->tail_seen + pad + need > r->size) {
		r->lost++;
		r->unreported_lost++;
		WRITE_ONCE(r->ctrl->lost, r->lost);
		return NULL;
	}
	/* One CPU's records never go backwards in time. */
	if (time_ns < r->last_ns)
		time_ns = r->last_ns;
	r->last_ns = time_ns;
	if (pad) {
		dial9_put_pad(r, off, pad);
		head += pad;
		off = 0;
	}
	if (r->unreported_lost) {
		struct dial9_rec_lost *lost = r->data + off;

		lost->hdr.type = DIAL9_REC_LOST;
		lost->hdr.size = sizeof(*lost);
		lost->hdr.cpu = r->cpu;
		lost->hdr.flags = 0;
		lost->hdr.time_ns = time_ns;
		lost->count = r->unreported_lost;
		off += sizeof(*lost);
		head += sizeof(*lost);
		r->unreported_lost = 0;
	}
	h = r->data + off;
	dial9_ring_header(r, h, type, size, time_ns);
	r->head = head + size;
	return h;
}

/*
 * dial9_ring_commit() when the reader's watermark may be crossed by the
 * tail last seen: the tail read again; true if the reader should be woken
 * (crossed, and not yet woken since it last moved its tail: one wake-up
 * per step of the reader).
 */
bool dial9_ring_wake_due(struct dial9_ring *r)
{
	u32 wm = READ_ONCE(r->ctrl->watermark);

	r->tail_seen = dial9_ring_tail(r, r->head);
	if (!wm)
		wm = 1;
	if (wm > r->size)
		wm = r->size;
	if (r->head - r->tail_seen < wm || r->woken_tail == r->tail_seen)
		return false;
	r->woken_tail = r->tail_seen;
	return true;
}
