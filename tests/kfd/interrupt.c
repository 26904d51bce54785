// SPDX-License-Identifier: MIT
/*
 * kfd_interrupt: the interrupt contract on raw KFD ioctls (DESIGN, interrupt,
 * AMD column), in our words: a call that a signal interrupts either completes
 * or fails with EINTR (ERESTARTSYS) having had no visible effect, and
 * reissuing it is idempotent and converges; for a multi-GPU map, n_success is
 * what lets the reissued call resume where the interrupted one stopped.
 *
 * lib/interrupt's storms aim a real-time signal at this thread with a handler
 * installed without SA_RESTART. Where a KFD ioctl returns -ERESTARTSYS, the
 * x86 handle_signal() then gives user space -EINTR instead of restarting the
 * call (`case -ERESTARTSYS: if (!(ksig->ka.sa.sa_flags & SA_RESTART)) {
 * regs->ax = -EINTR; break; }` [src torvalds/linux arch/x86/kernel/signal.c @
 * c9f289701540]); a wait that returns -EINTR itself gives -EINTR either way.
 * So user space sees EINTR, never 512 (ERESTARTSYS is kernel-internal,
 * include/linux/errno.h): a 512 is reported as a kernel bug.
 *
 * Which waits can be interrupted, per the kernel source (read, not run; the
 * mainline kfd_chardev.c / amdgpu_amdkfd_gpuvm.c of the kfd_node and drm_exec
 * era; Debian 12's 6.1 has the same n_success handling in kfd_chardev.c but
 * reserved buffers through ttm_eu_reserve_buffers, not checked here). The
 * kfd_chardev.c lines quoted below stand word for word in the older stored
 * version [src torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @
 * 29633d0e204d], of the kfd_dev era:
 *  - ALLOC_MEMORY_OF_GPU: the process, SVM and mmap locks are plain
 *    (uninterruptible) locks; the buffer is created by amdgpu_bo_create(),
 *    whose TTM context is interruptible for user buffers (`.interruptible =
 *    (bp->type != ttm_bo_type_kernel),` [src gregkh/linux
 *    drivers/gpu/drm/amd/amdgpu/amdgpu_object.c @ 11747c52c04a]), so an
 *    allocation that must evict can be interrupted. Every failure after the
 *    memory-limit reservation goes through the error path that gives it back
 *    (err_bo_create -> amdgpu_amdkfd_unreserve_mem_limit [src torvalds/linux
 *    drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c @ 64f9d8ac2cd4]), and
 *    args->handle is written only on the success path. Expected: no handle,
 *    available memory unchanged.
 *  - MAP_MEMORY_TO_GPU: per device, in list order from the n_success passed
 *    in, kfd_chardev.c looks the gpu_id up, binds the device, maps, and sets
 *    n_success to i + 1; the per-device map reserves the buffer and page
 *    directory with DRM_EXEC_INTERRUPTIBLE_WAIT, and DMA-buf / userptr
 *    attachments on peers validate with an interruptible TTM context. After
 *    the loop, amdgpu_amdkfd_gpuvm_sync_memory(..., true) waits
 *    interruptibly for the page-table updates (its debug message on failure:
 *    `Sync memory failed, wait interrupted by user signal`;
 *    dma_fence_default_wait() gives -ERESTARTSYS), then the TLBs are flushed.
 *    kfd_ioctl() copies the argument struct back to user space after the
 *    handler whatever it returned (IOWR), so n_success comes back with
 *    EINTR too. Expected: EINTR with n_success k in [n_success sent, n]; a
 *    reissue from k converges; each GPU ends mapped once.
 *  - UNMAP_MEMORY_FROM_GPU: the same loop (reservation interruptible), then
 *    the same interruptible wait when kfd_flush_tlb_after_unmap(), then the
 *    TLB flush and DMA unmap per device.
 *  - FREE_MEMORY_OF_GPU (freed in every cycle, under the same storm): the
 *    reservation of the buffer and its VMs is interruptible; kfd_chardev.c:
 *    "If freeing the buffer failed, leave the handle in place for clean-up
 *    during process tear-down.", so the free is reissued until it succeeds.
 *
 * With SA_RESTART (the `-sa-restart` twin of each subtest: same experiment,
 * the storm's handler installed with SA_RESTART, as most programs run; the
 * subtests above keep their names and results). x86 handle_signal() restarts
 * a call that returned -ERESTARTSYS when the handler has SA_RESTART: the
 * -ERESTARTSYS case above falls through (a fallthrough comment in the version
 * cited) into `case -ERESTARTNOINTR: regs->ax = regs->orig_ax; regs->ip -= 2;`
 * [src torvalds/linux arch/x86/kernel/signal.c @ c9f289701540]. The same ioctl
 * runs again on the same argument pointer, and kfd_ioctl() has copied the
 * argument struct back before returning, whatever the handler returned (`if
 * (cmd & IOC_OUT) if (copy_to_user((void __user *)arg, kdata, usize) != 0)
 * retcode = -EFAULT;`, no test of retcode first), so the restarted map reads
 * the n_success it reached and resumes there: `for (i = args->n_success; i <
 * args->n_devices; i++)` (both in the kfd_chardev.c cited above). Any other
 * return, -EINTR included, handle_signal() leaves as it is: it reaches user
 * space. Per the source (read, not run), KFD returns -EINTR itself from:
 *  - the drm_exec reservations of the per-device map / unmap and of the free,
 *    since `drm/amdkfd: switch over to using drm_exec v2` (merged for 6.6):
 *    amdgpu_amdkfd_gpuvm.c's reserve_bo_and_vm() and reserve_bo_and_cond_vms()
 *    set up their drm_exec context with the DRM_EXEC_INTERRUPTIBLE_WAIT flag
 *    (read in the drm_exec-era mainline source; the stored
 *    amdgpu_amdkfd_gpuvm.c versions predate drm_exec, so this is not cited),
 *    and drm_exec.c drm_exec_lock_obj() `if (exec->flags &
 *    DRM_EXEC_INTERRUPTIBLE_WAIT) ret = dma_resv_lock_interruptible(obj->resv,
 *    &exec->ticket);` ... `if (unlikely(ret)) return ret;` [src torvalds/linux
 *    drivers/gpu/drm/drm_exec.c @ 9356b50af547], unconverted.
 *    dma_resv_lock_interruptible() is `return
 *    ww_mutex_lock_interruptible(&obj->lock, ctx);` [src torvalds/linux
 *    include/linux/dma-resv.h @ c787c2901e2c], and of that: "If a signal
 *    arrives while waiting for the lock then this function returns -EINTR."
 *    [src torvalds/linux include/linux/ww_mutex.h @ b7f8f259896f]. Before 6.6
 *    these reserved through `ttm_eu_reserve_buffers(&ctx->ticket, &ctx->list,
 *    false, &ctx->duplicates);`, its third argument intr, uninterruptibly
 *    [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c @
 *    64f9d8ac2cd4];
 *  - TTM eviction waiting for a busy buffer while validating a buffer that
 *    was reserved under a ticket, with an interruptible context (the
 *    per-device map's validations): in TTM before its LRU-walk rework,
 *    ttm_bo.c's ttm_mem_evict_wait_busy() takes the busy buffer's reservation
 *    under the ticket with dma_resv_lock_interruptible() and hands any error
 *    but -EDEADLK (which it turns into -EBUSY) back up, -EINTR included (read
 *    in that source, not cited: of the stored ttm_bo.c versions one predates
 *    the function and one postdates the rework; the reworked TTM was not read).
 * Both are inside the map / unmap device loop (n_success < n), the first also
 * in the free. For ALLOC no -EINTR origin was found: amdgpu_bo_create()'s TTM
 * waits give -ERESTARTSYS, and ttm_mem_evict_wait_busy() gives -EBUSY at once
 * without a ticket, which a new buffer does not have, but its whole path was
 * not read for every version. After the loop, the map waits only in
 * amdgpu_amdkfd_gpuvm_sync_memory(..., true) -> dma_fence_wait, and of
 * dma_fence_wait_timeout(): "Returns -ERESTARTSYS if interrupted, 0 if the
 * wait timed out, or the remaining timeout in jiffies on success." [src
 * torvalds/linux drivers/dma-buf/dma-fence.c @ 96583ddbec29]; the unmap waits
 * in the same wait. The unmap's amdgpu_amdkfd_gpuvm_dmaunmap_mem() also
 * reserves the buffer, with `amdgpu_bo_reserve(mem->bo, true)`, but that
 * second argument is no_intr: `@no_intr: don't return -ERESTARTSYS on pending
 * signal` [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_object.h @
 * 42ac0be18bfa], and the helper passes `!no_intr` as ttm_bo_reserve()'s
 * interruptible, so that wait is not interruptible and gives no signal return
 * at all; only the sync wait does.
 * So, with SA_RESTART:
 *  - expected: the map (unmap) of every GPU converges, each GPU mapped once
 *    (none), allocations take their memory once; most calls complete in one
 *    ioctl however many signals landed inside it;
 *  - EINTR with n_success < n, and from FREE (the paths above) or ALLOC
 *    (none found, none ruled out), may still come: recorded with the kernel
 *    release, reissued as without SA_RESTART (libhsakmt's kmtIoctl reissues
 *    on EINTR too), never failed;
 *  - EINTR with n_success == n (after the device loop) cannot come: failed.
 * Each -sa-restart subtest first checks with lib/interrupt's restart probe
 * that its storm really restarts a blocking pipe read: otherwise an ioctl
 * completing under it would prove nothing.
 *
 * Every ioctl under test is bracketed (lib/interrupt.h) and counted per
 * operation: ioctls, ioctls with a signal inside, signals inside, EINTR
 * returns; restarts are counted by where they stopped (inside the device
 * loop: n_success < n; in the wait after it: n_success == n). A subtest only
 * counts when signals landed inside its ioctls; it does not require EINTR,
 * which needs a signal to arrive while the kernel is in one of the waits
 * above.
 *
 * alloc-free, map-all and unmap-all (and their -sa-restart twins) are soaks
 * (lib/soak.h): one sweep's cycles at level standard, a tenth of them at
 * quick, sweep after sweep at long.
 *
 * Experiments record the first thing that went wrong, stop the storm and give
 * back what they hold before asserting. The fixture checks after every
 * subtest that each GPU's available VRAM is back where it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core.h"
#include "gc_kfd.h"
#include "interrupt.h"
#include "kfd_ops.h"
#include "kfd_restart.h"
#include "measure.h"
#include "soak.h"

#define ALLOC_SIZE (64 * MiB) /* VRAM, alloc-free */
#define MAP_SIZE (64 * MiB)   /* GTT, mapped to every GPU */
#define VA_ALIGN (2 * MiB)
#define CYCLES 20             /* per storm period */
#define MAX_CALLS 1000        /* an ioctl still interrupted after this many tries never converges */
#define SETTLE_MS 1000        /* buffers freed by a worker: wait this long for the memory */

struct fx {
	struct gc_kfd_fixture dev;      /* first: /dev/kfd and the leak check (lib/kfd) */
	uint32_t ids[GC_KFD_MAX_NODES]; /* every GPU, topology order */
	uint32_t n;
};

/* ---------------------------------------------------------------- helpers */

/*
 * AVAILABLE_MEMORY (UAPI 1.9, the header's version list: `1.9 - Add available
 * memory ioctl` [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]) until it reads
 * want, for up to SETTLE_MS: a freed buffer's memory may be given back by a
 * worker. 0 when it did (*now = want), -EAGAIN when it did not, -errno.
 */
static int available_settles(const struct gc_kfd *kfd, uint32_t gpu_id, uint64_t want,
			     uint64_t *now)
{
	uint64_t deadline = gc_now_ns() + (uint64_t)SETTLE_MS * 1000000u;

	for (;;) {
		int r = gc_kfd_available(kfd, gpu_id, now);

		if (r)
			return r;
		if (*now == want)
			return 0;
		if (gc_now_ns() >= deadline)
			return -EAGAIN;
		usleep(1000);
	}
}

/* A GPU VA range for one buffer (gc_kfd_va_reserve), or fail. */
static uint64_t va_get(const struct gc_kfd *kfd, uint64_t size)
{
	uint64_t va = 0;

	gc_assert_ok(gc_kfd_va_reserve(kfd, size, VA_ALIGN, &va));
	return va;
}

/* ------------------------------------------------------------ soaked sweeps */

/*
 * A soak's .dev_used: VRAM in use on one GPU since the soak began, from
 * AMDKFD_IOC_AVAILABLE_MEMORY (available at the start minus available now;
 * 0 where it rose: memory another process gave back), bytes, or -errno.
 */
struct vram_watch {
	const struct gc_kfd *kfd;
	uint32_t gpu_id;
	uint64_t base; /* available at the start */
};

static long long vram_used(void *arg)
{
	const struct vram_watch *w = arg;
	uint64_t now = 0;
	int r = gc_kfd_available(w->kfd, w->gpu_id, &now);

	if (r)
		return r;
	return now < w->base ? (long long)(w->base - now) : 0;
}

/*
 * The soak of one storm sweep's cycles (today's length at standard), VRAM
 * watched on w's GPU; w is filled here and must outlive the soak.
 */
static struct gc_soak *sweep_soak(struct vram_watch *w, const struct gc_kfd *kfd,
				  uint32_t gpu_id, const char *name, const char *cycle)
{
	*w = (struct vram_watch){ .kfd = kfd, .gpu_id = gpu_id };
	gc_assert_ok(gc_kfd_available(kfd, gpu_id, &w->base));
	return gc_soak_start(&(struct gc_soak_cfg){
		.name = name, .cycle = cycle, .cycles = GC_STORM_SWEEP_PERIODS * CYCLES,
		.dev_used = vram_used, .dev_arg = w });
}

/* Every storm started and stopped, every cycle begun ran to its end. */
static void soaked_sweep_assert(const struct gc_storm_sweep *sw, unsigned long done)
{
	gc_assert_ok(sw->storm_err);
	gc_assert_eq_uint(sw->cycles, done);
}

/* -------------------------------------------------------------- the modes */

/* The handler a subtest's storms install: without SA_RESTART, or with it. */
struct mode {
	const char *suffix; /* appended to the subtest's name: nothing or `-sa-restart` */
	bool sa_restart;
};

static const struct mode MODE_EINTR = { "", false };
static const struct mode MODE_SA_RESTART = { "-sa-restart", true };

/* `6.1.0-18-amd64` (say): which kernel an EINTR under SA_RESTART came from. */
static const char *kernel_release(char *buf, size_t len)
{
	struct utsname u;

	snprintf(buf, len, "%s", uname(&u) ? "unknown" : u.release);
	return buf;
}

/*
 * A -sa-restart subtest's first step: its storms must really restart a call
 * the kernel can restart (a blocking pipe read, lib/interrupt's probe), or a
 * KFD ioctl completing under them shows nothing.
 */
static void require_restarting_storm(const struct mode *m)
{
	static struct gc_storm s;
	struct gc_restart_probe p = { 0 };
	char why[320];

	if (!m->sa_restart)
		return;
	gc_assert_ok(gc_storm_probe_restart(&s, &(struct gc_storm_cfg){ .sa_restart = true },
					    &p));
	gc_assert_f(gc_restart_probe_verdict(&p) == GC_RESTART_RESTARTED, "the storm with "
		    "SA_RESTART does not restart a pipe read: %s",
		    gc_restart_probe_str(&p, why, sizeof(why)));
}

/* With SA_RESTART: what still reached user space as EINTR, and on which kernel. */
static void op_restart_report(const struct mode *m, const struct kfd_op *o, const char *what)
{
	char rel[128];

	if (!m->sa_restart || !o->calls)
		return;
	gc_info("%s %s: with SA_RESTART %" PRIu64 " of %" PRIu64 " ioctls returned EINTR to user "
		"space (kernel %s), %" PRIu64 " had a signal inside", what, o->name, o->eintr,
		o->calls, kernel_release(rel, sizeof(rel)), o->hit);
}

/* ------------------------------------------------------ restart accounting */

struct restart_sum {
	uint64_t loops, calls, eintr, in_loop, after;
	uint64_t single; /* loops one ioctl completed */
	unsigned most;   /* the most ioctls one loop needed */
};

static void restart_add(struct restart_sum *t, const struct kfd_restart *r)
{
	t->loops++;
	t->single += r->calls == 1 && r->ret == 0;
	t->calls += r->calls;
	t->eintr += r->eintr;
	t->in_loop += r->eintr_in_loop;
	t->after += r->eintr_after;
	if (r->calls > t->most)
		t->most = r->calls;
}

static void restart_report(const struct restart_sum *t, const char *what)
{
	if (!t->loops)
		return;
	gc_info("%s: %" PRIu64 " calls to convergence, %" PRIu64 " ioctls; %" PRIu64 " EINTR "
		"returns, %" PRIu64 " inside the device loop (n_success < n) and %" PRIu64
		" in the wait after it (n_success == n); at most %u ioctls for one call", what,
		t->loops, t->calls, t->eintr, t->in_loop, t->after, t->most);
}

/*
 * With SA_RESTART (see the top of this file): EINTR inside the device loop is
 * recorded with the kernel release; after it, where the source has only
 * -ERESTARTSYS waits, the kernel restarts the call itself, so none may come.
 */
static void restart_mode_check(const struct mode *m, const struct restart_sum *t,
			       const char *what)
{
	char rel[128];

	if (!m->sa_restart || !t->loops)
		return;
	gc_info("%s with SA_RESTART: %" PRIu64 " of %" PRIu64 " calls completed in one ioctl; %"
		PRIu64 " EINTR reached user space inside the device loop (kernel %s)", what,
		t->single, t->loops, t->in_loop, kernel_release(rel, sizeof(rel)));
	gc_assert_f(t->after == 0, "%s: %" PRIu64 " EINTR returns with n_success == n_devices "
		    "although the handler has SA_RESTART: after the device loop kfd_chardev.c "
		    "waits only where the kernel returns -ERESTARTSYS (dma_fence_wait, "
		    "ttm_bo_reserve), which it restarts itself", what, t->after);
}

/* -------------------------------------------------------------- alloc-free */

enum { AF_ALLOC, AF_FREE, AF_N };

struct af {
	const struct gc_kfd *kfd;
	const struct mode *m;
	uint32_t gpu_id;
	uint64_t va;
	struct kfd_op op[AF_N];
	uint64_t eintr_checked; /* interrupted allocations whose absence was verified */
	struct verdict v;
};

/*
 * ALLOC_MEMORY_OF_GPU as a raw ioctl, so that the argument struct the kernel
 * copied back is seen as it is (gc_kfd_alloc() hides it on failure).
 */
static int alloc_raw(const struct af *a, struct kfd_ioctl_alloc_memory_of_gpu_args *args)
{
	*args = (struct kfd_ioctl_alloc_memory_of_gpu_args){
		.va_addr = a->va,
		.size = ALLOC_SIZE,
		.gpu_id = a->gpu_id,
		.flags = VRAM_FLAGS,
	};
	return gc_kfd_ioctl(a->kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, args);
}

/*
 * Contract: an interrupted allocation has no visible effect. Per
 * kfd_ioctl_alloc_memory_of_gpu() (read, not run), args->handle is set only
 * after the allocation succeeded, and the memory-limit reservation is given
 * back on every failure path: the handle comes back as sent (0) and the
 * GPU's available VRAM is what it was before the call.
 */
static bool af_interrupted(struct af *a, unsigned i,
			   const struct kfd_ioctl_alloc_memory_of_gpu_args *args, uint64_t avail0)
{
	uint64_t now = 0;
	char e[96];
	int r;

	if (args->handle != 0)
		return note(&a->v, "cycle %u: ALLOC_MEMORY_OF_GPU returned EINTR with handle "
			    "0x%" PRIx64 " (the kernel sets it on success only)", i,
			    (uint64_t)args->handle);
	r = available_settles(a->kfd, a->gpu_id, avail0, &now);
	if (r == -EAGAIN)
		return note(&a->v, "cycle %u: ALLOC_MEMORY_OF_GPU returned EINTR, but gpu %u's "
			    "available VRAM went from %" PRIu64 " to %" PRIu64 " bytes and stayed "
			    "(%d ms)", i, a->gpu_id, avail0, now, SETTLE_MS);
	if (r)
		return note(&a->v, "cycle %u: AVAILABLE_MEMORY: %s", i, en(r, e, sizeof(e)));
	a->eintr_checked++;
	return true;
}

static bool af_alloc(struct af *a, struct gc_storm *s, unsigned i, uint64_t avail0,
		     uint64_t *handle)
{
	struct kfd_ioctl_alloc_memory_of_gpu_args args;
	char e[96];

	for (unsigned t = 0; t < MAX_CALLS; t++) {
		int r = KFD_STORMED(s, &a->op[AF_ALLOC], alloc_raw(a, &args));

		if (r == 0) {
			*handle = args.handle;
			return true;
		}
		if (r != -EINTR)
			return note(&a->v, "cycle %u: ALLOC_MEMORY_OF_GPU (%" PRIu64 " MiB of VRAM on "
				    "gpu %u) returned %s", i, ALLOC_SIZE / MiB, a->gpu_id,
				    en(r, e, sizeof(e)));
		if (!af_interrupted(a, i, &args, avail0))
			return false;
	}
	return note(&a->v, "cycle %u: ALLOC_MEMORY_OF_GPU interrupted %d times in a row", i,
		    MAX_CALLS);
}

/*
 * kfd_chardev.c: "If freeing the buffer failed, leave the handle in place for
 * clean-up during process tear-down." [src torvalds/linux
 * drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 00af6729b52e]: reissue.
 */
static bool af_free(struct af *a, struct gc_storm *s, unsigned i, uint64_t handle)
{
	char e[96];

	for (unsigned t = 0; t < MAX_CALLS; t++) {
		int r = KFD_STORMED(s, &a->op[AF_FREE], gc_kfd_free(a->kfd, handle));

		if (r == 0)
			return true;
		if (r != -EINTR)
			return note(&a->v, "cycle %u: FREE_MEMORY_OF_GPU returned %s%s", i,
				    en(r, e, sizeof(e)), t ? " after an interrupted free" : "");
	}
	return note(&a->v, "cycle %u: FREE_MEMORY_OF_GPU interrupted %d times in a row", i,
		    MAX_CALLS);
}

/* One cycle: alloc (reissued on EINTR), free (likewise), all the memory back. */
static bool af_cycle(void *ctx, struct gc_storm *s, unsigned i)
{
	struct af *a = ctx;
	uint64_t avail0 = 0, now = 0, handle = 0;
	char e[96];
	int r = gc_kfd_available(a->kfd, a->gpu_id, &avail0);

	if (r)
		return note(&a->v, "cycle %u: AVAILABLE_MEMORY: %s", i, en(r, e, sizeof(e)));
	if (!af_alloc(a, s, i, avail0, &handle) || !af_free(a, s, i, handle))
		return false;
	r = available_settles(a->kfd, a->gpu_id, avail0, &now);
	if (r == -EAGAIN)
		return note(&a->v, "cycle %u: gpu %u had %" PRIu64 " bytes of VRAM available "
			    "before the alloc and %" PRIu64 " after the free", i, a->gpu_id,
			    avail0, now);
	if (r)
		return note(&a->v, "cycle %u: AVAILABLE_MEMORY: %s", i, en(r, e, sizeof(e)));
	return true;
}

static void af_gpu(void *ctx, const void *vgpu)
{
	const struct gc_kfd_gpu *gpu = vgpu;
	static struct gc_storm s;
	struct af *a = ctx;
	struct gc_storm_sweep sw = { .cycle = af_cycle, .ctx = a, .per_period = CYCLES,
				     .sa_restart = a->m->sa_restart };
	uint64_t avail = 0;
	struct vram_watch w;
	struct gc_soak *soak;
	unsigned long done;
	char what[64];
	int r;

	a->gpu_id = gpu->node.gpu_id;
	a->op[AF_ALLOC] = (struct kfd_op){ .name = "ALLOC_MEMORY_OF_GPU" };
	a->op[AF_FREE] = (struct kfd_op){ .name = "FREE_MEMORY_OF_GPU" };
	a->eintr_checked = 0;
	a->v.msg[0] = '\0';
	gc_assert_ok(gc_kfd_available(a->kfd, a->gpu_id, &avail));
	gc_require_f(avail >= 2 * ALLOC_SIZE, "gpu %u: %" PRIu64 " MiB of VRAM available, the "
		     "test allocates %" PRIu64 " MiB", a->gpu_id, avail / MiB, ALLOC_SIZE / MiB);
	a->va = va_get(a->kfd, ALLOC_SIZE);
	snprintf(what, sizeof(what), "alloc-free%s", a->m->suffix);
	soak = sweep_soak(&w, a->kfd, a->gpu_id, what, "under a signal storm: ALLOC_MEMORY_OF_GPU "
			  "of 64 MiB of VRAM and FREE_MEMORY_OF_GPU, each reissued on EINTR; all "
			  "the VRAM available again");
	gc_storm_sweep_soak(&s, &sw, soak);
	r = gc_kfd_va_release(a->va, ALLOC_SIZE);
	done = gc_soak_count(soak);
	gc_soak_end(soak);

	gc_storm_sweep_report(&sw, what);
	for (int o = 0; o < AF_N; o++) {
		kfd_op_report(&a->op[o], what);
		op_restart_report(a->m, &a->op[o], what);
	}
	gc_info("%s: %" PRIu64 " interrupted allocations left no handle and no memory taken",
		what, a->eintr_checked);
	verdict_assert(&a->v);
	soaked_sweep_assert(&sw, done);
	gc_assert_ok(r);
	kfd_op_assert_eintr_hit(&a->op[AF_ALLOC]);
	kfd_op_assert_eintr_hit(&a->op[AF_FREE]);
	gc_assert_f(a->op[AF_ALLOC].hit + a->op[AF_FREE].hit > 0, "no signal landed inside any "
		    "of %" PRIu64 " ALLOC / FREE ioctls", a->op[AF_ALLOC].calls + a->op[AF_FREE].calls);
}

static void af_run(struct fx *f, const struct mode *m)
{
	struct af a = { .kfd = f->dev.kfd, .m = m };
	struct gc_devices gpus = gc_kfd_devices(f->dev.kfd);

	require_restarting_storm(m);
	gc_each_device(&gpus, af_gpu, &a);
}

/*
 * Contract (DESIGN interrupt; kfd_ioctl_alloc_memory_of_gpu, read, not run):
 * ALLOC_MEMORY_OF_GPU under signal storms either returns a handle or EINTR
 * with no handle and the GPU's available VRAM unchanged; reissued, it
 * succeeds; FREE_MEMORY_OF_GPU interrupted leaves the handle in place and a
 * reissue frees it; after each cycle all the VRAM is available again. One
 * dynamic subtest per GPU.
 */
static void test_alloc_free(void *data)
{
	af_run(data, &MODE_EINTR);
}

/*
 * Contract: the same with SA_RESTART. An allocation the kernel restarted
 * itself (amdgpu_bo_create()'s TTM context is interruptible: `.interruptible
 * = (bp->type != ttm_bo_type_kernel),` [src torvalds/linux
 * drivers/gpu/drm/amd/amdgpu/amdgpu_object.c @ 0010b838db9f]) must take its memory once: the cycle's
 * check that all the VRAM is back after the free catches a restarted ALLOC
 * that allocated twice. EINTR from FREE (its drm_exec reservation) or ALLOC
 * (no origin found, none ruled out; see the top of this file) is recorded
 * with the kernel release, not failed.
 */
static void test_alloc_free_sa_restart(void *data)
{
	af_run(data, &MODE_SA_RESTART);
}

/* ------------------------------------------------------ map-all, unmap-all */

enum { MA_MAP, MA_UNMAP, MA_CHECK, MA_N };

struct ma {
	const struct gc_kfd *kfd;
	const struct mode *m;
	const uint32_t *ids;
	uint32_t n;
	uint64_t handle;
	bool test_unmap; /* unmap-all: the unmap is the call under test */
	const char *unit; /* `cycle` or `pass`, for messages */
	struct kfd_op op[MA_N];
	struct restart_sum sum[2]; /* MA_MAP, MA_UNMAP */
	struct verdict v;
};

/* The map (or unmap) of every GPU, through the restart loop. */
static bool ma_all(struct ma *a, struct gc_storm *s, unsigned i, bool unmap)
{
	int op = unmap ? MA_UNMAP : MA_MAP;
	struct kfd_multi m = { .kfd = a->kfd, .handle = a->handle, .ids = a->ids, .n = a->n,
			       .unmap = unmap, .s = s, .o = &a->op[op] };
	struct kfd_restart r;
	char e[96], t[768];
	int ret = kfd_multi_run(&m, MAX_CALLS, &r);

	restart_add(&a->sum[op], &r);
	if (ret == 0)
		return true;
	return note(&a->v, "%s %u: %s of all %u GPUs did not converge: %s with n_success "
		    "%" PRIu64 "%s; calls (n_success sent->returned, result): %s", a->unit, i,
		    unmap ? "UNMAP_MEMORY_FROM_GPU" : "MAP_MEMORY_TO_GPU", a->n,
		    en(ret, e, sizeof(e)), r.p.done,
		    ret == -EPROTO ? " (an impossible report)" : "", kfd_restart_str(&r, t, sizeof(t)));
}

/*
 * After the map converged every GPU holds the mapping once (k = n); after the
 * unmap converged none does (k = 0). The check unmaps what is left.
 */
static bool ma_check(struct ma *a, struct gc_storm *s, unsigned i, uint32_t k)
{
	struct kfd_multi m = { .kfd = a->kfd, .handle = a->handle, .ids = a->ids, .n = a->n,
			       .s = s, .o = &a->op[MA_CHECK] };
	struct kfd_mapped c;
	char d[1024];

	if (kfd_mapped_check(&m, k, MAX_CALLS, &c))
		return true;
	return note(&a->v, "%s %u: after the %s of all %u GPUs converged, %s", a->unit, i,
		    a->test_unmap ? "unmap" : "map", a->n, kfd_mapped_str(&m, &c, d, sizeof(d)));
}

static bool ma_cycle(void *ctx, struct gc_storm *s, unsigned i)
{
	struct ma *a = ctx;

	if (!ma_all(a, s, i, false))
		return false;
	if (a->test_unmap && !ma_all(a, s, i, true))
		return false;
	return ma_check(a, s, i, a->test_unmap ? 0 : a->n);
}

/* One GTT buffer on the first GPU, mappable by all (system memory). */
static void ma_alloc(struct ma *a, uint64_t *va)
{
	*va = va_get(a->kfd, MAP_SIZE);
	gc_assert_ok(gc_kfd_alloc(a->kfd, a->ids[0], MAP_SIZE, *va, GTT_FLAGS, &a->handle, NULL));
}

/*
 * FREE_MEMORY_OF_GPU of the buffer: 0 expected (-EBUSY: a mapping was left).
 * After a failure, the buffer is unmapped everywhere and freed all the same,
 * so that the next subtest starts clean; the first result is returned.
 */
static int ma_free(struct ma *a)
{
	int r = gc_kfd_free(a->kfd, a->handle);

	if (r == -EBUSY) {
		kfd_unmap_everywhere(a->kfd, a->handle);
		gc_kfd_free(a->kfd, a->handle);
	}
	return r;
}

static void ma_run(struct fx *f, bool test_unmap, const struct mode *m)
{
	static struct gc_storm s;
	static struct ma a;
	struct gc_storm_sweep sw = { .cycle = ma_cycle, .ctx = &a, .per_period = CYCLES,
				     .sa_restart = m->sa_restart };
	int op = test_unmap ? MA_UNMAP : MA_MAP;
	struct vram_watch w;
	struct gc_soak *soak;
	unsigned long done;
	char what[64];
	uint64_t va;
	int fr, vr;

	snprintf(what, sizeof(what), "%s%s", test_unmap ? "unmap-all" : "map-all", m->suffix);
	require_restarting_storm(m);
	a = (struct ma){ .kfd = f->dev.kfd, .m = m, .ids = f->ids, .n = f->n,
			 .test_unmap = test_unmap, .unit = "cycle" };
	a.op[MA_MAP].name = "MAP_MEMORY_TO_GPU";
	a.op[MA_UNMAP].name = "UNMAP_MEMORY_FROM_GPU (all)";
	a.op[MA_CHECK].name = "UNMAP_MEMORY_FROM_GPU (one GPU, the check)";
	ma_alloc(&a, &va);
	soak = sweep_soak(&w, a.kfd, a.ids[0], what, test_unmap ?
			  "under a signal storm: MAP_MEMORY_TO_GPU of a 64 MiB GTT buffer to every "
			  "GPU, then UNMAP_MEMORY_FROM_GPU from every GPU, each reissued with "
			  "n_success until it converges; none left mapped" :
			  "under a signal storm: MAP_MEMORY_TO_GPU of a 64 MiB GTT buffer to every "
			  "GPU, reissued with n_success until it converges; each GPU mapped once, "
			  "unmapped by the check");
	gc_storm_sweep_soak(&s, &sw, soak);
	fr = ma_free(&a); /* no storm: nothing interrupts it */
	vr = gc_kfd_va_release(va, MAP_SIZE);
	done = gc_soak_count(soak);
	gc_soak_end(soak);

	gc_storm_sweep_report(&sw, what);
	for (int o = 0; o < MA_N; o++) {
		kfd_op_report(&a.op[o], what);
		op_restart_report(m, &a.op[o], what);
	}
	restart_report(&a.sum[MA_MAP], "MAP_MEMORY_TO_GPU of all GPUs");
	restart_report(&a.sum[MA_UNMAP], "UNMAP_MEMORY_FROM_GPU of all GPUs");
	verdict_assert(&a.v);
	restart_mode_check(m, &a.sum[MA_MAP], "MAP_MEMORY_TO_GPU of all GPUs");
	restart_mode_check(m, &a.sum[MA_UNMAP], "UNMAP_MEMORY_FROM_GPU of all GPUs");
	soaked_sweep_assert(&sw, done);
	/* Every mapping was undone once: a count left above zero would be -EBUSY. */
	gc_assert_ok(fr);
	gc_assert_ok(vr);
	for (int o = 0; o < MA_N; o++)
		kfd_op_assert_eintr_hit(&a.op[o]);
	gc_assert_f(a.op[op].hit > 0, "%s: no signal landed inside any of %" PRIu64 " %s "
		    "ioctls", what, a.op[op].calls, a.op[op].name);
}

/*
 * Contract (UAPI, struct kfd_ioctl_map_memory_to_gpu_args: n_success "[...] It
 * can be passed into a subsequent retry call to skip those devices."; "If the
 * ioctl completes with return code 0 (success), n_success == n_devices."
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]): a map of
 * one buffer to every GPU, under signal storms and reissued with the
 * returned n_success while it gives EINTR, converges with n_success == n,
 * and leaves the buffer mapped exactly once on each GPU (each answers a lone
 * unmap with 0, and the free afterwards is not -EBUSY).
 */
static void test_map_all(void *data)
{
	ma_run(data, false, &MODE_EINTR);
}

/*
 * Contract: the same with SA_RESTART (see the top of this file). The kernel
 * restarts the map itself where it returned -ERESTARTSYS, resuming from the
 * n_success it copied back: the map converges with each GPU mapped exactly
 * once; EINTR inside the device loop (n_success < n) is reissued and
 * recorded with the kernel release; EINTR with n_success == n fails.
 */
static void test_map_all_sa_restart(void *data)
{
	ma_run(data, false, &MODE_SA_RESTART);
}

/*
 * Contract (UAPI: unmap takes the same arguments, `same arguments as for
 * mapping` [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]): the
 * unmap of every GPU under storms, reissued with the returned n_success,
 * converges with n_success == n and leaves no GPU mapped (each answers a
 * lone unmap with -EINVAL, and the free is not -EBUSY).
 */
static void test_unmap_all(void *data)
{
	ma_run(data, true, &MODE_EINTR);
}

/*
 * Contract: the same with SA_RESTART: a restarted unmap resumes from its
 * n_success (a device unmapped twice would answer -EINVAL: `If no VMs were
 * reserved, it means the BO wasn't actually mapped` [src torvalds/linux
 * drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c @ 002c6ca75289]), converges, leaves no
 * GPU mapped; EINTR with n_success == n (the sync wait after the loop gives
 * -ERESTARTSYS; the dmaunmap reservation after it is not interruptible) fails.
 */
static void test_unmap_all_sa_restart(void *data)
{
	ma_run(data, true, &MODE_SA_RESTART);
}

/* ------------------------------------------------------- sigiter-map-all */

static const uint64_t sweep_first_ns[] = { 1000, 1260, 1587 };
#define SWEEPS_MAX 30

struct si {
	struct ma a;               /* a.op[MA_MAP]: the map; a.op[MA_CHECK]: the check */
	unsigned sweeps, completed, passes, interrupted, early;
	uint64_t calls_hit, landed, delivered;
	int iter_err;
};

/*
 * One pass: the map of every GPU (reissued on EINTR) under the pass's
 * one-shot signal, then the check. At most one EINTR per signal delivered in
 * the pass: an ioctl is interrupted by a signal, not by nothing.
 */
static bool si_pass(struct si *x, struct gc_sigiter *it)
{
	struct ma *a = &x->a;
	uint64_t d0 = gc_storm_counts(&it->storm).delivered, d1, e0 = a->op[MA_MAP].eintr;
	unsigned pass = it->passes;
	bool ok;

	gc_sigiter_enter(it);
	ok = ma_all(a, NULL, pass, false);
	gc_sigiter_leave(it);
	d1 = gc_storm_counts(&it->storm).delivered;
	if (!ok)
		return false;
	if (a->op[MA_MAP].eintr - e0 > d1 - d0)
		return note(&a->v, "pass %u (signal after %" PRIu64 " ns): %" PRIu64 " EINTR returns "
			    "but %" PRIu64 " signals delivered", pass, it->delay_ns,
			    a->op[MA_MAP].eintr - e0, d1 - d0);
	return ma_check(a, NULL, pass, a->n);
}

static void si_account(struct si *x, const struct gc_sigiter *it)
{
	struct gc_storm_counts sc = gc_storm_counts(&it->storm);

	x->sweeps++;
	x->passes += it->passes;
	x->interrupted += it->passes_interrupted;
	x->early += it->passes_early;
	x->completed += it->completed;
	x->delivered += sc.delivered;
	x->landed += sc.landed_inside;
	x->calls_hit += sc.calls_hit;
}

/* Sweeps at a few first delays; short maps are hit only by chance: more sweeps until one is. */
static void si_sweeps(struct si *x)
{
	static struct gc_sigiter it;
	bool ok = true;

	for (size_t k = 0; ok && (k < ARRAY_SIZE(sweep_first_ns) ||
				  (x->calls_hit == 0 && k < SWEEPS_MAX)); k++) {
		struct gc_sigiter_cfg cfg = {
			.first_delay_ns = sweep_first_ns[k % ARRAY_SIZE(sweep_first_ns)],
			.sa_restart = x->a.m->sa_restart,
		};
		int r = gc_sigiter_begin(&it, &cfg);

		if (r) {
			x->iter_err = r;
			return;
		}
		while (ok && gc_sigiter_next(&it))
			ok = si_pass(x, &it);
		r = gc_sigiter_end(&it);
		if (r && !x->iter_err)
			x->iter_err = r;
		si_account(x, &it);
		ok = ok && !r;
	}
}

/* One sigiter-map-all run in mode m; its two subtests below. */
static void si_run(struct fx *f, const struct mode *m)
{
	static struct si x;
	char what[64];
	uint64_t va;
	int fr, vr;

	snprintf(what, sizeof(what), "sigiter-map-all%s", m->suffix);
	require_restarting_storm(m);
	memset(&x, 0, sizeof(x));
	x.a = (struct ma){ .kfd = f->dev.kfd, .m = m, .ids = f->ids, .n = f->n, .unit = "pass" };
	x.a.op[MA_MAP].name = "MAP_MEMORY_TO_GPU";
	x.a.op[MA_CHECK].name = "UNMAP_MEMORY_FROM_GPU (one GPU, the check)";
	ma_alloc(&x.a, &va);
	si_sweeps(&x);
	fr = ma_free(&x.a);
	vr = gc_kfd_va_release(va, MAP_SIZE);

	gc_info("%s (%u GPUs): %u sweeps, %u completed; %u passes, %u interrupted, %u early; "
		"signals delivered %" PRIu64 ", landed inside %" PRIu64 " (in %" PRIu64 " passes)",
		what, f->n, x.sweeps, x.completed, x.passes, x.interrupted, x.early, x.delivered,
		x.landed, x.calls_hit);
	kfd_op_report(&x.a.op[MA_MAP], what);
	kfd_op_report(&x.a.op[MA_CHECK], what);
	op_restart_report(m, &x.a.op[MA_MAP], what);
	restart_report(&x.a.sum[MA_MAP], "MAP_MEMORY_TO_GPU of all GPUs (sigiter)");
	verdict_assert(&x.a.v);
	restart_mode_check(m, &x.a.sum[MA_MAP], "MAP_MEMORY_TO_GPU of all GPUs (sigiter)");
	gc_assert_ok(x.iter_err);
	gc_assert_ok(fr);
	gc_assert_ok(vr);
	gc_assert_f(x.calls_hit > 0, "no signal landed inside any of %u passes", x.passes);
	gc_assert_f(x.completed == x.sweeps, "%u of %u sweeps reached a pass with no signal "
		    "inside (the map outlasted every delay up to 1 s?)", x.completed, x.sweeps);
}

/*
 * Contract (as map-all, at every depth): the map of one buffer to every GPU
 * interrupted by one signal placed ever deeper into it (IGT's sigiter: from
 * 1 us, doubling, until a pass is not reached by the signal) converges each
 * time with n_success == n when reissued with the returned n_success, and
 * each GPU holds the mapping exactly once afterwards.
 */
static void test_sigiter_map_all(void *data)
{
	si_run(data, &MODE_EINTR);
}

/*
 * Contract: the same with SA_RESTART: at every depth, the map the kernel
 * restarted converges with each GPU mapped once; EINTR with n_success == n
 * fails, EINTR inside the device loop is recorded (see the top of this file).
 */
static void test_sigiter_map_all_sa_restart(void *data)
{
	si_run(data, &MODE_SA_RESTART);
}

/* ------------------------------------------------------------------ fixture */

static void *setup(void)
{
	struct gc_kfd *kfd = gc_kfd_require();
	struct fx *f = gc_kfd_fixture_new(kfd, sizeof(*f), SETTLE_MS);

	f->n = gc_kfd_gpu_ids(kfd, f->ids);
	return f;
}

/* A subtest that failed with a storm running left it here: stop it before any ioctl. */
static void after_each(void *data)
{
	struct fx *f = data;

	gc_storm_stop_leftover();
	gc_kfd_fixture_check(f);
}

static const struct gc_fixture fixture = {
	.setup = setup,
	.teardown = gc_kfd_fixture_free,
	.before_each = gc_kfd_fixture_snapshot,
	.after_each = after_each,
};

static const struct gc_subtest subtests[] = {
	{ "alloc-free", test_alloc_free,
	  "VRAM alloc / free under storms: EINTR leaves no handle and no memory taken; "
	  "reissued, both complete (per GPU)" },
	{ "map-all", test_map_all,
	  "map to every GPU under storms, reissued with n_success: converges, each GPU mapped "
	  "once" },
	{ "unmap-all", test_unmap_all,
	  "unmap from every GPU under storms, reissued with n_success: converges, none mapped" },
	{ "sigiter-map-all", test_sigiter_map_all,
	  "one signal at every depth of a map to every GPU: converges, each GPU mapped once" },
	{ "alloc-free-sa-restart", test_alloc_free_sa_restart,
	  "alloc-free with SA_RESTART: restarted allocations take their memory once (per GPU)" },
	{ "map-all-sa-restart", test_map_all_sa_restart,
	  "map-all with SA_RESTART: the kernel resumes from n_success, each GPU mapped once, "
	  "no EINTR after the device loop" },
	{ "unmap-all-sa-restart", test_unmap_all_sa_restart,
	  "unmap-all with SA_RESTART: converges, none mapped, no EINTR after the device loop" },
	{ "sigiter-map-all-sa-restart", test_sigiter_map_all_sa_restart,
	  "sigiter-map-all with SA_RESTART: converges at every depth, each GPU mapped once" },
	{ 0 }
};

/* alloc-free and map-all / unmap-all, with and without SA_RESTART: one sweep at standard. */
static const char *const soaks[] = {
	"alloc-free", "map-all", "unmap-all",
	"alloc-free-sa-restart", "map-all-sa-restart", "unmap-all-sa-restart", NULL
};

GC_MAIN(.name = "kfd_interrupt",
	.description = "the interrupt contract on raw KFD ioctls: EINTR with no effect, "
		       "n_success restarts converge",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks)
