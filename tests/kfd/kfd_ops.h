/* SPDX-License-Identifier: MIT */
/*
 * What kfd_interrupt and kfd_multigpu share: the flags of the buffers they
 * allocate, per-ioctl accounting under a signal storm, multi-device map /
 * unmap through the restart loop of kfd_restart.h, and the check of which
 * devices a buffer is mapped on.
 *
 * Which devices hold a mapping is not something KFD reports; it is told here
 * by unmapping each device alone. Per amdgpu_amdkfd_gpuvm.c (read, not run),
 * amdgpu_amdkfd_gpuvm_unmap_memory_from_gpu() reserves only the VMs the
 * buffer is mapped in and, when there are none, fails with -EINVAL (`If no
 * VMs were reserved, it means the BO wasn't actually mapped`); so a device
 * that held a mapping answers 0 and one that did not answers -EINVAL. After
 * that nothing is mapped, and FREE_MEMORY_OF_GPU must then succeed: per the
 * same file amdgpu_amdkfd_gpuvm_free_memory_of_gpu() refuses with -EBUSY
 * while the buffer's mapping count is above zero (its debug message:
 * `BO VA 0x%llx size 0x%lx is still mapped.`), so a mapping made twice, or
 * one the check missed, shows there.
 * [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c @ 002c6ca75289]
 */
#ifndef GPUCONFORM_KFD_OPS_H
#define GPUCONFORM_KFD_OPS_H

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "gc_kfd.h"
#include "interrupt.h"
#include "kfd_restart.h"

/* ---------------------------------------------------- allocation flags */

/* The buffers both binaries allocate: device-local and host (GTT), writable. */
#define VRAM_FLAGS (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
#define GTT_FLAGS (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)

/* ------------------------------------------------------------ errno names */

/* `-EINTR`, `0`, `-512 (ERESTARTSYS: ...)`... for messages. */
static inline const char *kfd_errname(int r, char *buf, size_t len)
{
	const char *name = r < 0 ? strerrorname_np(-r) : NULL;

	if (r == 0)
		snprintf(buf, len, "0");
	else if (r == -KFD_ERESTARTSYS)
		snprintf(buf, len, "-512 (ERESTARTSYS: a kernel-internal code that must never "
			 "reach user space)");
	else if (name)
		snprintf(buf, len, "-%s", name);
	else
		snprintf(buf, len, "%d", r);
	return buf;
}

/* ------------------------------------------------------ per-op accounting */

/* The first thing that went wrong in an experiment, asserted after clean-up. */
struct verdict {
	char msg[1536];
};

/* Records the first failure; always false, so that `return note(...)` ends a step. */
static inline __attribute__((format(printf, 2, 3))) bool note(struct verdict *v,
							       const char *fmt, ...)
{
	va_list ap;

	if (v->msg[0])
		return false;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
	return false;
}

static inline void verdict_assert(const struct verdict *v)
{
	gc_assert_f(!v->msg[0], "%s", v->msg);
}

static inline const char *en(int r, char *buf, size_t len)
{
	return kfd_errname(r, buf, len);
}

struct kfd_op {
	const char *name;
	uint64_t calls, hit, signals; /* hit: calls with a signal inside; signals inside */
	uint64_t eintr;               /* calls that returned -EINTR */
	uint64_t eintr_unhit;         /* of those, bracketed with no signal inside */
	uint64_t landed0;             /* the storm's landed_inside when the bracket opened */
	bool last_hit;
};

/* Opens the bracket (s NULL: the call is counted, not bracketed). */
static inline void kfd_op_enter(struct gc_storm *s, struct kfd_op *o)
{
	if (!s)
		return;
	o->landed0 = gc_storm_counts(s).landed_inside;
	gc_storm_enter(s);
}

/* Closes it and accounts the result r, which it returns. */
static inline int kfd_op_leave(struct gc_storm *s, struct kfd_op *o, int r)
{
	o->last_hit = false;
	if (s) {
		o->last_hit = gc_storm_leave(s);
		o->hit += o->last_hit;
		o->signals += gc_storm_counts(s).landed_inside - o->landed0;
	}
	o->calls++;
	if (r == -EINTR) {
		o->eintr++;
		o->eintr_unhit += s && !o->last_hit;
	}
	return r;
}

/* `call` bracketed under storm s and accounted to op o; evaluates to its result. */
#define KFD_STORMED(s, o, call) kfd_op_leave((s), (o), (kfd_op_enter((s), (o)), (call)))

static inline void kfd_op_report(const struct kfd_op *o, const char *what)
{
	if (!o->calls)
		return;
	gc_info("%s %s: %" PRIu64 " ioctls, %" PRIu64 " with a signal inside (%" PRIu64
		" signals), %" PRIu64 " returned EINTR", what, o->name, o->calls, o->hit,
		o->signals, o->eintr);
}

/*
 * lib/interrupt.h: EINTR implies a hit, a hit does not imply EINTR. An
 * EINTR from a bracketed ioctl with no signal inside it came from nowhere.
 */
static inline void kfd_op_assert_eintr_hit(const struct kfd_op *o)
{
	gc_assert_f(o->eintr_unhit == 0, "%s: %" PRIu64 " of %" PRIu64 " EINTR returns had no "
		    "signal inside the ioctl", o->name, o->eintr_unhit, o->eintr);
}

/* ------------------------------------------- multi-device map and unmap */

/* One MAP_MEMORY_TO_GPU / UNMAP_MEMORY_FROM_GPU of handle on ids[0..n). */
struct kfd_multi {
	const struct gc_kfd *kfd;
	uint64_t handle;
	const uint32_t *ids;
	uint32_t n;
	bool unmap;
	struct gc_storm *s; /* each ioctl bracketed under it; NULL: not bracketed */
	struct kfd_op *o;   /* each ioctl accounted to it */
};

/* A kfd_call_fn (kfd_restart.h) for a struct kfd_multi. */
static inline int kfd_multi_call(void *ctx, uint32_t *n_success)
{
	struct kfd_multi *m = ctx;

	if (m->unmap)
		return KFD_STORMED(m->s, m->o, gc_kfd_unmap(m->kfd, m->handle, m->ids, m->n,
							    n_success));
	return KFD_STORMED(m->s, m->o, gc_kfd_map(m->kfd, m->handle, m->ids, m->n, n_success));
}

/* The call, reissued with the returned n_success while it gives EINTR. */
static inline int kfd_multi_run(struct kfd_multi *m, unsigned max_calls, struct kfd_restart *r)
{
	return kfd_restart_run(r, m->n, max_calls, kfd_multi_call, m);
}

/*
 * `(0->2 -EINTR) (2->4 0)`: n_success sent -> returned, and the return, of the
 * last calls (the oldest first), then the impossible report if there was one.
 */
static inline const char *kfd_restart_str(const struct kfd_restart *r, char *buf, size_t len)
{
	size_t used = 0;
	char e[96];

	buf[0] = '\0';
	if (r->calls > r->n_trace)
		used += (size_t)snprintf(buf, len, "%u calls, the last %u: ", r->calls, r->n_trace);
	for (unsigned i = 0; i < r->n_trace && used < len; i++) {
		const struct kfd_call *c = kfd_restart_trace(r, i);

		used += (size_t)snprintf(buf + used, len - used, "%s(%" PRIu32 "->%" PRIu32 " %s)",
					 i ? " " : "", c->sent, c->got,
					 kfd_errname(c->ret, e, sizeof(e)));
	}
	if (r->ret == -EPROTO && used < len)
		snprintf(buf + used, len - used, "; the impossible report: %" PRIu32 "->%" PRIu32
			 " %s", r->bad.sent, r->bad.got, kfd_errname(r->bad.ret, e, sizeof(e)));
	return buf;
}

/*
 * Clean-up after a failed experiment: unmap handle from every GPU whose VM
 * this process acquired, each alone, whatever the answers (never a GPU
 * without a VM: see kfd_multigpu's unacquired-vm).
 */
static inline void kfd_unmap_everywhere(const struct gc_kfd *kfd, uint64_t handle)
{
	for (unsigned g = 0; g < kfd->n_gpus; g++) {
		struct kfd_op o = { .name = "clean-up" };
		struct kfd_multi m = { .kfd = kfd, .handle = handle, .n = 1, .unmap = true,
				       .ids = &kfd->gpus[g].node.gpu_id, .o = &o };
		struct kfd_restart r;

		if (kfd->gpus[g].vm_acquired)
			kfd_multi_run(&m, 100, &r);
	}
}

/* -------------------------------------------------- which devices are mapped */

struct kfd_mapped {
	bool ok;
	uint32_t first_bad;  /* index into ids of the first wrong answer */
	int want, got;       /* what its unmap should have returned, and did */
	struct kfd_restart r; /* that unmap's calls */
};

/*
 * m->handle should be mapped on exactly ids[0..k) of m->ids[0..n): unmap each
 * device alone (through the restart loop: a signal may interrupt these too)
 * and expect 0 for those, -EINVAL for the others (see the top of this file).
 * Every device is tried, so nothing stays mapped whatever the answers.
 */
static inline bool kfd_mapped_check(const struct kfd_multi *m, uint32_t k, unsigned max_calls,
				    struct kfd_mapped *out)
{
	memset(out, 0, sizeof(*out));
	out->ok = true;
	for (uint32_t i = 0; i < m->n; i++) {
		struct kfd_multi one = *m;
		struct kfd_restart r;
		int want = i < k ? 0 : -EINVAL;
		int got;

		one.ids = &m->ids[i];
		one.n = 1;
		one.unmap = true;
		got = kfd_multi_run(&one, max_calls, &r);
		if (got == want || !out->ok)
			continue;
		*out = (struct kfd_mapped){ .first_bad = i, .want = want, .got = got, .r = r };
	}
	return out->ok;
}

/* `gpu 1234 (position 2) answered the lone unmap with 0, expected -EINVAL (...)` */
static inline const char *kfd_mapped_str(const struct kfd_multi *m, const struct kfd_mapped *c,
					 char *buf, size_t len)
{
	char w[96], g[96], t[512];

	if (c->ok) {
		snprintf(buf, len, "as expected");
		return buf;
	}
	snprintf(buf, len, "gpu %" PRIu32 " (position %" PRIu32 ") answered a lone unmap with "
		 "%s, expected %s (%s; calls %s)", m->ids[c->first_bad], c->first_bad,
		 kfd_errname(c->got, g, sizeof(g)), kfd_errname(c->want, w, sizeof(w)),
		 c->want ? "it should not have been mapped" : "it should have been mapped",
		 kfd_restart_str(&c->r, t, sizeof(t)));
	return buf;
}

#endif
