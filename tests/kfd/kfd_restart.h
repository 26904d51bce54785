/* SPDX-License-Identifier: MIT */
/*
 * Restart bookkeeping for KFD's multi-device ioctls (MAP_MEMORY_TO_GPU and
 * UNMAP_MEMORY_FROM_GPU): pure logic over gc_progress_report(), no KFD
 * header, so tests/unit/test_kfd_restart.c drives it with a simulated kernel
 * on any machine. kfd_interrupt and kfd_multigpu issue every multi-device
 * map and unmap through kfd_restart_run().
 *
 * What it rests on, the UAPI (<linux/kfd_ioctl.h>, struct
 * kfd_ioctl_map_memory_to_gpu_args; the unmap struct has `same arguments as
 * for mapping`) [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]:
 *   "@n_success returns information to the caller how many devices from
 *    the start of the array have mapped the buffer successfully. It can be
 *    passed into a subsequent retry call to skip those devices. For the
 *    first call the caller should initialize it to 0."
 *   "If the ioctl completes with return code 0 (success), n_success ==
 *    n_devices."
 *
 * The loop: the first call gets n_success = 0; every later call gets the
 * n_success the previous one returned. -EINTR: issue it again. 0: done, and
 * n_success must then be n. Another error: stop and hand it back with the
 * n_success that came with it. A report that cannot be true (n_success going
 * backwards or beyond n, success with devices left, a positive return) stops
 * the loop with -EPROTO, and so does a call that keeps being interrupted
 * without end (-ELOOP after max_calls).
 *
 * -EINTR with n_success == n is issued again too. Per kfd_chardev.c (read,
 * not run): after its per-device loop the map ioctl waits, interruptibly, for
 * the page-table updates (amdgpu_amdkfd_gpuvm_sync_memory(..., true), whose
 * failure its debug message calls `Sync memory failed, wait interrupted by
 * user signal`) and only
 * then flushes the TLBs; the unmap ioctl waits the same way before its TLB
 * flush (when kfd_flush_tlb_after_unmap()). An EINTR there means every device
 * is done but the wait and flush were not: the reissued call skips all the
 * devices (n_success == n_devices passes the kernel's `n_success exceeds
 * n_devices` check, which is strict) and redoes the wait and the flush.
 * [src torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 29633d0e204d]
 */
#ifndef GPUCONFORM_KFD_RESTART_H
#define GPUCONFORM_KFD_RESTART_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "interrupt.h"

/*
 * include/linux/errno.h: ERESTARTSYS is 512, one of the codes under its
 * comment `Should never be seen by user programs`
 * [src torvalds/linux include/linux/errno.h @ 1da177e4c3f4]. With the handler lib/interrupt installs
 * (no SA_RESTART) the x86 handle_signal() turns -ERESTARTSYS into -EINTR; a
 * 512 reaching user space is a kernel bug, reported by name.
 */
#define KFD_ERESTARTSYS 512

#define KFD_RESTART_TRACE 16 /* the last calls, remembered for failure messages */

/* One call as the loop saw it: n_success sent and returned, the return. */
struct kfd_call {
	uint32_t sent, got;
	int ret;
};

/* Issue the ioctl once: *n_success in (devices to skip) and out. 0 or -errno. */
typedef int (*kfd_call_fn)(void *ctx, uint32_t *n_success);

struct kfd_restart {
	uint32_t n;            /* devices in the list */
	unsigned max_calls;    /* -ELOOP after this many calls */
	struct gc_progress p;  /* done = the last accepted n_success */
	/* results */
	int ret;               /* 0; the call's error; -EPROTO; -ELOOP; -EINVAL (n == 0) */
	unsigned calls;        /* ioctls issued */
	unsigned eintr;        /* of which returned -EINTR */
	unsigned eintr_in_loop; /* -EINTR with n_success < n: inside the device loop */
	unsigned eintr_after;  /* -EINTR with n_success == n: in the wait after it */
	struct kfd_call bad;   /* the impossible report (ret == -EPROTO) */
	unsigned n_trace;      /* calls in trace: min(calls, KFD_RESTART_TRACE) */
	struct kfd_call trace[KFD_RESTART_TRACE]; /* call i at trace[i % KFD_RESTART_TRACE] */
};

static inline void kfd_restart_note(struct kfd_restart *r, const struct kfd_call *c)
{
	r->trace[r->calls % KFD_RESTART_TRACE] = *c;
	if (r->n_trace < KFD_RESTART_TRACE)
		r->n_trace++;
}

/* The i-th oldest call still in the trace (0 <= i < n_trace). */
static inline const struct kfd_call *kfd_restart_trace(const struct kfd_restart *r, unsigned i)
{
	return &r->trace[(r->calls - r->n_trace + i) % KFD_RESTART_TRACE];
}

/* Account one call; false when the loop ends (r->ret says how). */
static inline bool kfd_restart_step(struct kfd_restart *r, const struct kfd_call *c)
{
	unsigned before = r->p.calls;
	int v = gc_progress_report(&r->p, c->ret, c->got);

	kfd_restart_note(r, c);
	r->calls++;
	if (r->p.calls == before) { /* refused: the report cannot be true */
		r->bad = *c;
		r->ret = -EPROTO;
		return false;
	}
	if (v != -EINTR) {
		r->ret = v;
		return false;
	}
	r->eintr++;
	if (c->got == r->n)
		r->eintr_after++;
	else
		r->eintr_in_loop++;
	return true;
}

/*
 * Issue call until it completes, fails with an error other than -EINTR, or
 * reports the impossible. Returns r->ret; r->p.done is the n_success the
 * last accepted call reported (the devices done, from the start of the list).
 */
static inline int kfd_restart_run(struct kfd_restart *r, uint32_t n, unsigned max_calls,
				  kfd_call_fn call, void *ctx)
{
	*r = (struct kfd_restart){ .n = n, .max_calls = max_calls };
	gc_progress_init(&r->p, n);
	if (n == 0) /* the kernel refuses an empty list: `Device IDs array empty` */
		return r->ret = -EINVAL;
	for (;;) {
		struct kfd_call c = { .sent = (uint32_t)r->p.done };

		if (r->calls == r->max_calls)
			return r->ret = -ELOOP;
		c.got = c.sent;
		c.ret = call(ctx, &c.got);
		if (!kfd_restart_step(r, &c))
			return r->ret;
	}
}

#endif
