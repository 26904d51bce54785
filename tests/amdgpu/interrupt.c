// SPDX-License-Identifier: MIT
/*
 * amdgpu_interrupt: the interrupt contract on the amdgpu GEM ioctls (DESIGN,
 * interrupt, AMD column): a call interrupted by a signal either completes or
 * fails with EINTR/ERESTARTSYS and no visible effect; restarting it is
 * idempotent and converges. Three experiments, each per device (gpu0,
 * gpu1... as in amdgpu_mem), each under lib/interrupt's storm sweep (signals
 * every 20 us to 1 ms, handler without SA_RESTART):
 *
 *  - alloc-free: DRM_IOCTL_AMDGPU_GEM_CREATE of 64 MiB of VRAM, then
 *    DRM_IOCTL_GEM_CLOSE. amdgpu_gem.c amdgpu_gem_create_ioctl() hands
 *    -ERESTARTSYS straight back (`if (r && r != -ERESTARTSYS) {` guards its
 *    retry with other placements); amdgpu_bo_create()'s TTM context is
 *    interruptible for user buffers (amdgpu_object.c `.interruptible =
 *    (bp->type != ttm_bo_type_kernel),` [src gregkh/linux
 *    drivers/gpu/drm/amd/amdgpu/amdgpu_object.c @ 11747c52c04a]); the handle
 *    is made only after the buffer was (`r = drm_gem_handle_create(filp,
 *    gobj, &handle);` [src gregkh/linux
 *    drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @ 0399b8416ecf]). No visible
 *    effect: after an EINTR the device's VRAM heap usage is back where it was
 *    before the call (re-read for up to SETTLE_MS: the counter is
 *    device-wide, see lib/amdgpu), and after each close too.
 *  - map-unmap: DRM_IOCTL_AMDGPU_GEM_VA MAP, then UNMAP, of one 4 MiB GTT
 *    buffer at one address. The buffer and page directory are reserved
 *    interruptibly before anything changes (6.1: ttm_eu_reserve_buffers(...,
 *    true, ...), whose ttm_bo_reserve() turns the lock's -EINTR into
 *    -ERESTARTSYS, `if (ret == -EINTR) return -ERESTARTSYS;` [src
 *    torvalds/linux include/drm/ttm/ttm_bo.h @ 0089d6ee3bb6]; 6.6+:
 *    drm_exec_init(&exec, DRM_EXEC_INTERRUPTIBLE_WAIT ...), which returns the
 *    lock's -EINTR as it is); after the map or unmap itself, nothing that
 *    amdgpu_gem_va_update_vm() meets comes back: "Errors are not vital here,
 *    so they are not reported back to userspace." [src gregkh/linux
 *    drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @ 0399b8416ecf]. No visible
 *    effect, checked by the next VA operation: a reissued MAP after EINTR
 *    must succeed (had the interrupted one mapped, amdgpu_vm_bo_map() refuses
 *    the overlap with -EINVAL), a reissued UNMAP must succeed (had the
 *    interrupted one unmapped, amdgpu_vm_bo_unmap() answers -ENOENT), and
 *    after both an UNMAP must be -ENOENT (nothing left mapped).
 *  - wait-idle: DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE on a 64 MiB VRAM buffer made
 *    with AMDGPU_GEM_CREATE_VRAM_CLEARED, busy while the kernel clears it
 *    (amdgpu_object.c amdgpu_bo_create(): amdgpu_fill_buffer(), in the newer
 *    version cited above amdgpu_ttm_clear_buffer(), its fence added to the
 *    buffer's reservation object, which the wait covers:
 *    dma_resv_wait_timeout(..., DMA_RESV_USAGE_READ, true, timeout)). The
 *    wait is interruptible (amdgpu_gem_wait_idle_ioctl(): `ret < 0 means
 *    interrupted before timeout`; amdgpu_gem_timeout(): "Calculate the
 *    timeout in jiffies from an absolute timeout in ns." [src gregkh/linux
 *    drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @ 0399b8416ecf];
 *    dma_resv_wait_timeout(): "Returns -ERESTARTSYS if interrupted, 0 if the
 *    wait timed out, or greater than zer on success." [src torvalds/linux
 *    drivers/dma-buf/dma-resv.c @ 047a1b877ed4]) and its timeout is absolute
 *    (amdgpu_drm.h `Absolute timeout to wait` [src mesa/drm
 *    include/drm/amdgpu_drm.h @ b9ca37b31348]), so a reissue with the same
 *    deadline does not extend it. Converges: the reissued wait returns 0 with
 *    out.status 0 (`0 - BO is idle`, same header) before the deadline (5 s).
 *    (If a kernel clears VRAM ahead of time the buffer is idle at once and
 *    the wait is short: signals may then rarely land.)
 *
 * Command-submission wait: DRM_IOCTL_AMDGPU_WAIT_CS needs a submitted IB,
 * and a command stream is not something this file writes without hardware to
 * try it on; the wait here is the buffer's wait-idle, on a fence the kernel
 * itself queued (the VRAM clear). Not run on AMD hardware: every expectation
 * above is read from the kernel source.
 *
 * Each experiment runs twice:
 *  - raw ioctl(2) (alloc-free, map-unmap, wait-idle): with the storm's
 *    handler lacking SA_RESTART, x86 handle_signal() turns -ERESTARTSYS into
 *    -EINTR (`case -ERESTARTSYS: if (!(ksig->ka.sa.sa_flags & SA_RESTART)) {
 *    regs->ax = -EINTR;` [src torvalds/linux arch/x86/kernel/signal.c @
 *    00ed905ab8e5]), so EINTR reaches this file, which checks that it had no
 *    effect and reissues the ioctl (as many as MAX_CALLS times);
 *  - through libdrm's drmIoctl() (the -drmioctl twins), which every libdrm
 *    call uses. xf86drm.c: `do { ret = ioctl(fd, request, arg); } while (ret
 *    == -1 && (errno == EINTR || errno == EAGAIN));` [src mesa/drm xf86drm.c
 *    @ b9ca37b31348]: EINTR never comes back (one that did fails the
 *    subtest), and the reissue on the same argument struct must give the
 *    uninterrupted result: a reissue after an interrupted MAP that had mapped
 *    would come back -EINVAL, after an UNMAP that had unmapped -ENOENT, and
 *    both fail.
 *
 * Every ioctl under test is bracketed (lib/interrupt.h) and counted: calls,
 * calls with a signal inside, EINTR returns. A subtest fails when no signal
 * landed inside any of its ioctls (it tested nothing), or when an EINTR came
 * from a call no signal landed in. It does not require EINTR: that needs a
 * signal to arrive while the kernel waits in one of the places above.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "gc_amdgpu_drm.h"
#include "interrupt.h"

#define CREATE_SIZE (64 * MiB)
#define VA_SIZE (4 * MiB)
#define WAIT_DEADLINE_NS 5000000000ull
#define CYCLES 20      /* per storm period */
#define MAX_CALLS 1000 /* an ioctl still interrupted after this many tries never converges */
#define LEAK_SLACK (1 * MiB)
#define SETTLE_MS 1000

/* One ioctl under test, counted. */
struct op_count {
	const char *name;
	uint64_t calls, hit, eintr, eintr_unhit;
	bool last_hit; /* a signal landed inside the latest call */
};

enum { OP_A, OP_B, OP_N }; /* the experiment's first and second ioctl */

/* One experiment on one device; what it holds is given back by after_each too. */
struct exp {
	const struct gc_amdgpu_dev *d;
	enum gc_amdgpu_via via;
	struct op_count op[OP_N];
	uint64_t no_effect;    /* EINTR returns whose absence of effect was checked */
	uint32_t handle;       /* the buffer map-unmap maps (0: none) */
	amdgpu_va_handle va_h; /* its address range (NULL: none) */
	uint64_t va;
	char first[1024];      /* the first failure, asserted after clean-up */
};

struct int_fx {
	struct gc_amdgpu_fixture dev; /* first: devices and the leak check (lib/amdgpu) */
	struct exp e;
};

/* One experiment: its two ioctls' names and its steps. */
struct kind {
	const char *name;
	const char *op_name[OP_N];
	void (*prepare)(struct exp *e); /* subtest level: may fail */
	bool (*cycle)(void *ctx, struct gc_storm *s, unsigned i);
};

/* ------------------------------------------------------------ bookkeeping */

/*
 * Records the first failure in e->first; evaluates to false, so that
 * `return FAILED(e, ...)` ends a cycle.
 */
#define FAILED(e, ...) \
	((e)->first[0] ? false : (snprintf((e)->first, sizeof((e)->first), __VA_ARGS__), false))

static const char *ename(int r, char *buf, size_t len)
{
	const char *n = r < 0 ? strerrorname_np(-r) : NULL;

	if (r == -512)
		snprintf(buf, len, "-512 (ERESTARTSYS, which must never reach user space)");
	else if (n)
		snprintf(buf, len, "-%s", n);
	else
		snprintf(buf, len, "%d", r);
	return buf;
}

static const char *via_name(enum gc_amdgpu_via via)
{
	return via == GC_AMDGPU_RAW ? "ioctl" : "drmIoctl";
}

static void op_enter(struct gc_storm *s)
{
	gc_storm_enter(s);
}

/* Closes the bracket opened before the call and counts its result r. */
static int op_leave(struct gc_storm *s, struct op_count *o, int r)
{
	bool hit = gc_storm_leave(s);

	o->calls++;
	o->hit += hit;
	o->last_hit = hit;
	if (r == -EINTR) {
		o->eintr++;
		o->eintr_unhit += !hit;
	}
	return r;
}

/* `call`, bracketed under s and counted in o; evaluates to its result. */
#define BRACKETED(s, o, call) op_leave((s), (o), (op_enter(s), (call)))

/*
 * After an EINTR: an error for drmIoctl (which restarts on EINTR), or true
 * to reissue the raw ioctl.
 */
static bool eintr_allowed(struct exp *e, unsigned i, const char *what)
{
	if (e->via == GC_AMDGPU_RAW)
		return true;
	return FAILED(e, "cycle %u: %s through drmIoctl returned EINTR; xf86drm.c restarts it "
		      "\"while ((ret == -1) && ((errno == EINTR) || (errno == EAGAIN)))\"", i,
		      what);
}

/* The device's heap usage is back to base (LEAK_SLACK, SETTLE_MS). */
static bool usage_back(struct exp *e, unsigned i, const struct gc_amdgpu_usage *base,
		       const char *after)
{
	struct gc_amdgpu_usage now = { 0 };
	char n[96];
	int r = gc_amdgpu_usage_settles(e->d, base, LEAK_SLACK, SETTLE_MS, &now);

	if (!r)
		return true;
	return FAILED(e, "cycle %u: after %s, VRAM heap usage %" PRIu64 " -> %" PRIu64 ", GTT %"
		      PRIu64 " -> %" PRIu64 " bytes (%s; device-wide counter)", i, after,
		      base->vram, now.vram, base->gtt, now.gtt,
		      r == -EAGAIN ? "did not settle" : ename(r, n, sizeof(n)));
}

/* ------------------------------------------------------------- alloc-free */

static bool af_create(struct exp *e, struct gc_storm *s, unsigned i,
		      const struct gc_amdgpu_usage *u0, uint32_t *h)
{
	char n[96];

	for (unsigned t = 0; t < MAX_CALLS; t++) {
		int r = BRACKETED(s, &e->op[OP_A], gc_amdgpu_gem_create(e->d, e->via, CREATE_SIZE,
									  AMDGPU_GEM_DOMAIN_VRAM,
									  0, h));

		if (!r)
			return true;
		if (r != -EINTR)
			return FAILED(e, "cycle %u: GEM_CREATE of %zu MiB of VRAM (%s): %s", i,
				      CREATE_SIZE / MiB, via_name(e->via), ename(r, n, sizeof(n)));
		if (!eintr_allowed(e, i, "GEM_CREATE") ||
		    !usage_back(e, i, u0, "a GEM_CREATE that returned EINTR"))
			return false;
		e->no_effect++;
	}
	return FAILED(e, "cycle %u: GEM_CREATE interrupted %d times in a row", i, MAX_CALLS);
}

/*
 * One cycle: create (reissued on EINTR, each EINTR checked for no effect),
 * close, memory back. The close must return 0: drm_gem.c
 * drm_gem_handle_delete() fails only for an unknown handle, and
 * amdgpu_gem_object_close() reserves without an interruptible wait (6.1, as
 * in the older version cited: `r = ttm_eu_reserve_buffers(&ticket, &list,
 * false, &duplicates);` [src torvalds/linux
 * drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @ 51a831a7725b]; 6.6+:
 * drm_exec_init() without DRM_EXEC_INTERRUPTIBLE_WAIT [src gregkh/linux
 * drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @ 0399b8416ecf]) and only logs its
 * errors (`leaking bo va`, in both).
 */
static bool af_cycle(void *ctx, struct gc_storm *s, unsigned i)
{
	struct exp *e = ctx;
	struct gc_amdgpu_usage u0;
	uint32_t h = 0;
	char n[96];
	int r = gc_amdgpu_heap_usage(e->d, &u0);

	if (r)
		return FAILED(e, "cycle %u: heap usage: %s", i, ename(r, n, sizeof(n)));
	if (!af_create(e, s, i, &u0, &h))
		return false;
	r = BRACKETED(s, &e->op[OP_B], gc_amdgpu_gem_close(e->d, h));
	if (r)
		return FAILED(e, "cycle %u: GEM_CLOSE of handle %u: %s", i, h,
			      ename(r, n, sizeof(n)));
	return usage_back(e, i, &u0, "GEM_CLOSE");
}

static void nothing(struct exp *e)
{
	(void)e;
}

/* -------------------------------------------------------------- map-unmap */

/* One 4 MiB GTT buffer (drmIoctl: made before any storm) and an address for it. */
static void mu_prepare(struct exp *e)
{
	gc_assert_ok(gc_amdgpu_gem_create(e->d, GC_AMDGPU_DRMIOCTL, VA_SIZE, AMDGPU_GEM_DOMAIN_GTT,
					  0, &e->handle));
	gc_assert_ok(amdgpu_va_range_alloc(e->d->adev, amdgpu_gpu_va_range_general, VA_SIZE, 0, 0,
					   &e->va, &e->va_h, 0));
}

static int mu_va(const struct exp *e, uint32_t op)
{
	return gc_amdgpu_gem_va(e->d, e->via, e->handle, op, e->va, 0, VA_SIZE);
}

/*
 * MAP (or UNMAP), reissued while it returns EINTR. Answering `applied`
 * (MAP -EINVAL: overlap; UNMAP -ENOENT: no such mapping) shows that an
 * interrupted attempt had taken effect: when this loop reissued it after
 * EINTR (t > 0), or when drmIoctl did (a signal landed inside the call).
 */
static bool mu_once(struct exp *e, struct gc_storm *s, unsigned i, uint32_t op)
{
	const char *what = op == AMDGPU_VA_OP_MAP ? "GEM_VA MAP" : "GEM_VA UNMAP";
	int applied = op == AMDGPU_VA_OP_MAP ? -EINVAL : -ENOENT;
	struct op_count *o = &e->op[op == AMDGPU_VA_OP_MAP ? OP_A : OP_B];
	char n[96];

	for (unsigned t = 0; t < MAX_CALLS; t++) {
		int r = BRACKETED(s, o, mu_va(e, op));

		if (!r)
			return true;
		if (r == applied && t)
			return FAILED(e, "cycle %u: %s (%s) returned %s when reissued after "
				      "EINTR: the interrupted attempt had taken effect", i, what,
				      via_name(e->via), ename(r, n, sizeof(n)));
		if (r == applied && e->via == GC_AMDGPU_DRMIOCTL && o->last_hit)
			return FAILED(e, "cycle %u: %s (drmIoctl) returned %s with a signal "
				      "inside: drmIoctl restarts an interrupted call, so an "
				      "interrupted attempt had taken effect (unless it fails "
				      "uninterrupted too: see the raw subtest)", i, what,
				      ename(r, n, sizeof(n)));
		if (r != -EINTR)
			return FAILED(e, "cycle %u: %s (%s): %s", i, what, via_name(e->via),
				      ename(r, n, sizeof(n)));
		if (!eintr_allowed(e, i, what))
			return false;
		e->no_effect++;
	}
	return FAILED(e, "cycle %u: %s interrupted %d times in a row", i, what, MAX_CALLS);
}

/* After map and unmap converged nothing is mapped: one more UNMAP is -ENOENT. */
static bool mu_nothing_left(struct exp *e, unsigned i)
{
	char n[96];
	int r;

	do
		r = mu_va(e, AMDGPU_VA_OP_UNMAP);
	while (r == -EINTR);
	if (r == -ENOENT)
		return true;
	return FAILED(e, "cycle %u: after MAP and UNMAP each converged, another UNMAP returned %s, "
		      "expected -ENOENT (amdgpu_vm_bo_unmap: no mapping at that start)", i,
		      ename(r, n, sizeof(n)));
}

static bool mu_cycle(void *ctx, struct gc_storm *s, unsigned i)
{
	struct exp *e = ctx;

	return mu_once(e, s, i, AMDGPU_VA_OP_MAP) && mu_once(e, s, i, AMDGPU_VA_OP_UNMAP) &&
	       mu_nothing_left(e, i);
}

/* -------------------------------------------------------------- wait-idle */

static bool wi_wait(struct exp *e, struct gc_storm *s, unsigned i, uint32_t h)
{
	uint64_t deadline = gc_amdgpu_deadline_ns(WAIT_DEADLINE_NS);
	uint32_t busy = 1;
	char n[96];

	for (unsigned t = 0; t < MAX_CALLS; t++) {
		int r = BRACKETED(s, &e->op[OP_A], gc_amdgpu_gem_wait_idle(e->d, e->via, h,
									    deadline, &busy));

		if (!r && busy)
			return FAILED(e, "cycle %u: GEM_WAIT_IDLE (%s): the cleared buffer "
				      "still busy at the %llu s deadline", i, via_name(e->via),
				      WAIT_DEADLINE_NS / 1000000000ull);
		if (!r)
			return true;
		if (r != -EINTR)
			return FAILED(e, "cycle %u: GEM_WAIT_IDLE (%s): %s", i, via_name(e->via),
				      ename(r, n, sizeof(n)));
		if (!eintr_allowed(e, i, "GEM_WAIT_IDLE"))
			return false;
		e->no_effect++;
	}
	return FAILED(e, "cycle %u: GEM_WAIT_IDLE interrupted %d times in a row", i, MAX_CALLS);
}

/* A freshly cleared VRAM buffer (drmIoctl: restarted under the storm), waited on, closed. */
static bool wi_cycle(void *ctx, struct gc_storm *s, unsigned i)
{
	struct exp *e = ctx;
	uint32_t h = 0;
	char n[96];
	int r = gc_amdgpu_gem_create(e->d, GC_AMDGPU_DRMIOCTL, CREATE_SIZE, AMDGPU_GEM_DOMAIN_VRAM,
				     AMDGPU_GEM_CREATE_VRAM_CLEARED, &h);
	bool ok;

	if (r)
		return FAILED(e, "cycle %u: GEM_CREATE (VRAM_CLEARED, drmIoctl): %s", i,
			      ename(r, n, sizeof(n)));
	ok = wi_wait(e, s, i, h);
	r = BRACKETED(s, &e->op[OP_B], gc_amdgpu_gem_close(e->d, h));
	if (r)
		return FAILED(e, "cycle %u: GEM_CLOSE of handle %u: %s", i, h,
			      ename(r, n, sizeof(n)));
	return ok;
}

/* ------------------------------------------------------------- the driver */

static const struct kind KIND_ALLOC_FREE = {
	"alloc-free", { "GEM_CREATE", "GEM_CLOSE" }, nothing, af_cycle,
};
static const struct kind KIND_MAP_UNMAP = {
	"map-unmap", { "GEM_VA MAP", "GEM_VA UNMAP" }, mu_prepare, mu_cycle,
};
static const struct kind KIND_WAIT_IDLE = {
	"wait-idle", { "GEM_WAIT_IDLE", "GEM_CLOSE" }, nothing, wi_cycle,
};

/* What an experiment holds, given back (no storm runs by then). */
static void exp_release(struct exp *e)
{
	if (e->handle)
		gc_amdgpu_gem_close(e->d, e->handle);
	if (e->va_h)
		amdgpu_va_range_free(e->va_h);
	e->handle = 0;
	e->va_h = NULL;
}

static void exp_report(const struct exp *e, const char *what)
{
	for (int k = 0; k < OP_N; k++) {
		const struct op_count *o = &e->op[k];

		gc_info("%s %s (%s): %" PRIu64 " calls, %" PRIu64 " with a signal inside, %" PRIu64
			" returned EINTR", what, o->name, via_name(e->via), o->calls, o->hit,
			o->eintr);
	}
	gc_info("%s: %" PRIu64 " EINTR returns checked for no visible effect", what, e->no_effect);
}

/* Verdicts, in order: the first failure, the sweep, EINTR only with a signal, some signal. */
static void exp_assert(const struct exp *e, const struct gc_storm_sweep *sw)
{
	gc_assert_f(!e->first[0], "%s", e->first);
	gc_storm_sweep_assert(sw);
	for (int k = 0; k < OP_N; k++)
		gc_assert_f(e->op[k].eintr_unhit == 0, "%s: %" PRIu64 " of %" PRIu64 " EINTR "
			    "returns had no signal inside the ioctl", e->op[k].name,
			    e->op[k].eintr_unhit, e->op[k].eintr);
	gc_assert_f(e->op[OP_A].hit + e->op[OP_B].hit > 0, "no signal landed inside any of %"
		    PRIu64 " ioctls", e->op[OP_A].calls + e->op[OP_B].calls);
}

/* ctx of a per-device body: the experiment and its kind. */
struct run {
	struct exp *e;
	const struct kind *k;
	enum gc_amdgpu_via via;
};

static void run_dev(const struct run *r, struct gc_amdgpu_dev *d)
{
	static struct gc_storm s;
	struct exp *e = r->e;
	struct gc_storm_sweep sw = { .cycle = r->k->cycle, .ctx = e, .per_period = CYCLES };

	if (e->d)
		exp_release(e); /* what the previous device's failed case still held */
	*e = (struct exp){ .d = d, .via = r->via };
	for (int k = 0; k < OP_N; k++)
		e->op[k].name = r->k->op_name[k];
	r->k->prepare(e);
	gc_storm_sweep(&s, &sw);
	exp_release(e);
	gc_storm_sweep_report(&sw, r->k->name);
	exp_report(e, r->k->name);
	exp_assert(e, &sw);
}

static void run_dev_case(void *ctx, const void *d)
{
	run_dev(ctx, (struct gc_amdgpu_dev *)d);
}

static void run_kind(void *data, const struct kind *k, enum gc_amdgpu_via via)
{
	struct int_fx *f = data;
	struct run r = { .e = &f->e, .k = k, .via = via };
	struct gc_devices devs = gc_amdgpu_devices(f->dev.ag);

	gc_each_device(&devs, run_dev_case, &r);
}

/* The subtest fn runs kind as raw ioctls, fn##_drmioctl through drmIoctl. */
#define KIND_SUBTESTS(fn, kind)                                  \
	static void fn(void *data)                               \
	{                                                        \
		run_kind(data, &(kind), GC_AMDGPU_RAW);          \
	}                                                        \
	static void fn##_drmioctl(void *data)                    \
	{                                                        \
		run_kind(data, &(kind), GC_AMDGPU_DRMIOCTL);     \
	}

KIND_SUBTESTS(test_alloc_free, KIND_ALLOC_FREE)
KIND_SUBTESTS(test_map_unmap, KIND_MAP_UNMAP)
KIND_SUBTESTS(test_wait_idle, KIND_WAIT_IDLE)

/* ----------------------------------------------------------------- fixture */

static void *int_setup(void)
{
	return gc_amdgpu_fixture_new(gc_amdgpu_require(1), sizeof(struct int_fx), LEAK_SLACK,
				     SETTLE_MS);
}

/* A failed subtest may have left its storm running and its buffer held. */
static void int_after_each(void *data)
{
	struct int_fx *f = data;

	gc_storm_stop_leftover();
	if (f->e.d)
		exp_release(&f->e);
	gc_amdgpu_fixture_check(f);
}

static const struct gc_fixture fixture = {
	.setup = int_setup,
	.teardown = gc_amdgpu_fixture_free,
	.before_each = gc_amdgpu_fixture_snapshot,
	.after_each = int_after_each,
};

static const struct gc_subtest subtests[] = {
	{ "alloc-free", test_alloc_free,
	  "GEM_CREATE (64 MiB VRAM) / GEM_CLOSE as raw ioctls under storms: EINTR leaves no "
	  "memory taken, reissued it converges" },
	{ "alloc-free-drmioctl", test_alloc_free_drmioctl,
	  "the same through drmIoctl: never EINTR, every cycle gives its memory back" },
	{ "map-unmap", test_map_unmap,
	  "GEM_VA MAP / UNMAP as raw ioctls under storms: EINTR had no effect (the reissue "
	  "succeeds), nothing left mapped" },
	{ "map-unmap-drmioctl", test_map_unmap_drmioctl,
	  "the same through drmIoctl: never EINTR, no restarted MAP/UNMAP finds it already done" },
	{ "wait-idle", test_wait_idle,
	  "GEM_WAIT_IDLE on a buffer being cleared, raw ioctl under storms: reissued with the "
	  "same absolute deadline it returns idle" },
	{ "wait-idle-drmioctl", test_wait_idle_drmioctl,
	  "the same through drmIoctl: never EINTR, idle before the deadline" },
	{ 0 }
};

GC_MAIN(.name = "amdgpu_interrupt",
	.description = "the interrupt contract on amdgpu GEM ioctls: EINTR with no effect, "
		       "raw and through drmIoctl",
	.subtests = subtests, .fixture = &fixture)
