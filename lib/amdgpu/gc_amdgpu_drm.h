/* SPDX-License-Identifier: MIT */
/*
 * libdrm_amdgpu helpers: every amdgpu device of this machine opened through
 * its render node, the device-wide heap usage the leak checks read, thin
 * GEM ioctl wrappers issued either as one ioctl(2) or through libdrm's
 * drmIoctl(), and per-device / per-pair dynamic subtests.
 *
 *     struct gc_amdgpu *ag = gc_amdgpu_require(1);  // skips with the reason
 *     for (unsigned i = 0; i < ag->n; i++) use ag->devs[i].adev, ag->devs[i].fd
 *
 * Devices are found in sysfs (lib/smi's gc_amdgpu_cards(): the cardN whose
 * driver is amdgpu), ordered by card number, and named `gpu<index>` in that
 * order (gpu0, gpu1, ...: the names cuda_mem and cuda_multigpu give their
 * devices); each one's render node is the renderD<M> entry under
 * /sys/class/drm/cardN/device/drm. gc_amdgpu_fixture_new() logs which card
 * and node each gpuN is.
 *
 * Every wrapper returns 0 or -errno as the kernel or libdrm gave it; nothing
 * here exits; gc_amdgpu_require(), gc_amdgpu_read_usage(), the fixture
 * functions and the GC_AMDGPU_*_SUBTEST macros act at subtest level, as
 * documented where they are declared.
 */
#ifndef GPUCONFORM_GC_AMDGPU_DRM_H
#define GPUCONFORM_GC_AMDGPU_DRM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <amdgpu.h>
#include <amdgpu_drm.h>

#include "core.h"
#include "gc_amdgpu.h" /* lib/smi: GC_AMDGPU_DRM_DIR, gc_amdgpu_cards() */

#define GC_AMDGPU_MAX_DEVS 16

struct gc_amdgpu_dev {
	unsigned index;            /* gpu<index>: position in card-number order */
	int card;                  /* N of /sys/class/drm/cardN */
	int render_minor;          /* M of /dev/dri/renderD<M> */
	char node[32];             /* `/dev/dri/renderD128` */
	int fd;                    /* our open(node, O_RDWR | O_CLOEXEC); -1: closed */
	amdgpu_device_handle adev; /* amdgpu_device_initialize(fd) */
	uint32_t drm_major, drm_minor;
};

struct gc_amdgpu {
	unsigned n;
	struct gc_amdgpu_dev devs[GC_AMDGPU_MAX_DEVS];
};

/*
 * Find and open every amdgpu device (drm_dir: GC_AMDGPU_DRM_DIR, or another
 * tree for tests). 0, or -errno with one line in why[]: -ENODEV `no amdgpu
 * device under /sys/class/drm`, -ENOENT `/dev/dri/renderD128: No such file
 * or directory`, -EACCES..., or amdgpu_device_initialize()'s own error
 * naming the node (why may be NULL when why_len is 0). Nothing stays open
 * on failure; *out is NULL then.
 */
int gc_amdgpu_open(const char *drm_dir, struct gc_amdgpu **out, char *why, size_t why_len);
void gc_amdgpu_close(struct gc_amdgpu *ag); /* NULL is fine */

/*
 * gc_amdgpu_open(GC_AMDGPU_DRM_DIR) with at least need devices, or skip /
 * fail (subtest level). Skips with open's reason for no node or no access;
 * with `needs <need> amdgpu GPUs, found <n>` when fewer are found and need
 * > 1 (no device at all is `found 0`, open's reason logged); otherwise
 * with `no amdgpu device under /sys/class/drm`. Other errors fail.
 */
struct gc_amdgpu *gc_amdgpu_require(unsigned need);

/* True for the reasons gc_amdgpu_require() skips on rather than fails. Pure. */
bool gc_amdgpu_open_err_is_skip(int err);

/* ------------------------------------------------------------ discovery (pure) */

/*
 * `card3 card0 card12` (gc_amdgpu_cards()' list) into cards[], ascending.
 * The count; -EINVAL for a word that is not card<digits>; -E2BIG for more
 * than max.
 */
int gc_amdgpu_parse_cards(const char *names, int *cards, size_t max);

/*
 * M of the renderD<M> entry in drm_dir/card<card>/device/drm: the render
 * node of that card's device. -ENOENT when there is none, -errno otherwise.
 */
int gc_amdgpu_render_minor(const char *drm_dir, int card);

/*
 * The errno a libdrm call's failure means, pure. libdrm returns either
 * -errno (drmCommandWrite*, and amdgpu_bo.c's own checks, e.g. -EPERM for a
 * KMS-handle import) or drmIoctl()'s -1 with errno set (drmPrimeFDToHandle,
 * hence amdgpu_bo_import of a dma-buf fd). -1 is ambiguous (-EPERM is -1):
 * with saved_errno, the errno read right after a call made with errno = 0,
 * -1 means saved_errno, or EPERM when that is 0. r < -1: -r. r >= 0: 0.
 */
int gc_amdgpu_failure_errno(int r, int saved_errno);

/* ------------------------------------------------------------------ ioctls */

/* How a wrapper issues its ioctl. */
enum gc_amdgpu_via {
	GC_AMDGPU_RAW,      /* one ioctl(2): EINTR reaches the caller */
	GC_AMDGPU_DRMIOCTL, /* xf86drm.c drmIoctl(): restarted on EINTR and EAGAIN */
};

/* One ioctl on fd, issued as via says: 0 or -errno. */
int gc_amdgpu_ioctl(int fd, enum gc_amdgpu_via via, unsigned long request, void *arg);

/*
 * DRM_IOCTL_AMDGPU_GEM_CREATE of size bytes in domains (AMDGPU_GEM_DOMAIN_*)
 * with flags (AMDGPU_GEM_CREATE_*), 4 KiB alignment. *handle only on success.
 */
int gc_amdgpu_gem_create(const struct gc_amdgpu_dev *d, enum gc_amdgpu_via via, uint64_t size,
			 uint64_t domains, uint64_t flags, uint32_t *handle);
/* DRM_IOCTL_GEM_CLOSE of handle, one ioctl(2). */
int gc_amdgpu_gem_close(const struct gc_amdgpu_dev *d, uint32_t handle);
/*
 * DRM_IOCTL_AMDGPU_GEM_VA: op AMDGPU_VA_OP_MAP / UNMAP of handle at va,
 * [offset, offset + size) of the BO, readable, writeable and executable (the
 * flags libdrm's amdgpu_bo_va_op() passes). Nothing is aligned here.
 */
int gc_amdgpu_gem_va(const struct gc_amdgpu_dev *d, enum gc_amdgpu_via via, uint32_t handle,
		     uint32_t op, uint64_t va, uint64_t offset, uint64_t size);
/*
 * DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE of handle until deadline_ns, an absolute
 * CLOCK_MONOTONIC time (amdgpu_drm.h: `Absolute timeout to wait`; see
 * gc_amdgpu_deadline_ns()). *busy: out.status (`0 - BO is idle, 1 - BO is
 * busy`), on success only [src mesa/drm include/drm/amdgpu_drm.h @ b9ca37b31348].
 */
int gc_amdgpu_gem_wait_idle(const struct gc_amdgpu_dev *d, enum gc_amdgpu_via via,
			    uint32_t handle, uint64_t deadline_ns, uint32_t *busy);
/* CLOCK_MONOTONIC now + rel_ns: the clock amdgpu_gem_timeout() compares with (ktime_get). */
uint64_t gc_amdgpu_deadline_ns(uint64_t rel_ns);

/* ---------------------------------------------------------- heap usage, leaks */

/*
 * amdgpu_query_heap_info() heap_usage of the VRAM and GTT heaps. amdgpu.h:
 * "Number of bytes allocated in the heap. This includes all processes and
 * private allocations in the kernel. It changes when new buffers are
 * allocated, freed, and moved." [src mesa/drm amdgpu/amdgpu.h @ b9ca37b31348]
 * Device-wide, so see gc_amdgpu_grew().
 */
struct gc_amdgpu_usage {
	uint64_t vram, gtt;
};
int gc_amdgpu_heap_usage(const struct gc_amdgpu_dev *d, struct gc_amdgpu_usage *u);
/* Subtest level: gc_amdgpu_heap_usage() or fail naming the device and the error. */
void gc_amdgpu_read_usage(const struct gc_amdgpu_dev *d, struct gc_amdgpu_usage *u);

/*
 * `gpu0: card0, /dev/dri/renderD128, amdgpu DRM 3.49, VRAM heap 16368 MiB
 * (312 MiB used), GTT heap 32000 MiB (20 MiB used)` into buf, for setup()'s
 * log; the heap part reads `heaps: <error>` when the query fails.
 */
const char *gc_amdgpu_describe(const struct gc_amdgpu_dev *d, char *buf, size_t len);

/*
 * The leak rule for a device-wide counter, pure: now is a leak against base
 * when either heap grew by more than slack. Usage that fell is never a leak
 * (another process freed memory meanwhile); usage that another process
 * holds longer than the settle time is reported as a leak of ours, and the
 * message says the counter is device-wide.
 */
bool gc_amdgpu_grew(const struct gc_amdgpu_usage *base, const struct gc_amdgpu_usage *now,
		    uint64_t slack);

/*
 * Re-read d's heap usage until it no longer grew past base + slack, for up
 * to settle_ms (released buffers are destroyed once idle, by TTM's delayed
 * delete). 0 with *now the last reading; -EAGAIN when it stayed above;
 * -errno of the query.
 */
int gc_amdgpu_usage_settles(const struct gc_amdgpu_dev *d, const struct gc_amdgpu_usage *base,
			    uint64_t slack, unsigned settle_ms, struct gc_amdgpu_usage *now);

/* What a subtest must give back: every device's heap usage, render-node and dma-buf fds. */
struct gc_amdgpu_snapshot {
	unsigned n;
	struct gc_amdgpu_usage use[GC_AMDGPU_MAX_DEVS];
	int render_fds; /* open fds on /dev/dri/renderD* */
	int dmabuf_fds; /* open dma-buf fds (`/dmabuf:`, older kernels `anon_inode:dmabuf`) */
};
int gc_amdgpu_snapshot(const struct gc_amdgpu *ag, struct gc_amdgpu_snapshot *s);

/*
 * Pure: how many leaks now shows against before (each device's VRAM and GTT
 * heap that grew past slack, any change in either fd count: lib/leakcheck's
 * probes), described in msg with each device named as names[i]
 * (`gpu0 (/dev/dri/renderD128)`; NULL: `gpu<i>`).
 */
unsigned gc_amdgpu_snapshot_diff(const struct gc_amdgpu_snapshot *before,
				 const struct gc_amdgpu_snapshot *now, uint64_t slack,
				 const char *const *names, char *msg, size_t len);

/* Fails the subtest naming every leak, after re-reading for up to settle_ms. */
void gc_amdgpu_leak_check(const struct gc_amdgpu *ag, const struct gc_amdgpu_snapshot *before,
			  uint64_t slack, unsigned settle_ms);

/*
 * The leak-checked fixture of an amdgpu binary: its fixture data begins with
 * a struct gc_amdgpu_fixture named dev; before_each takes a snapshot, after_each
 * runs gc_amdgpu_leak_check() against it. gc_amdgpu_fixture_new() logs each
 * device (gc_amdgpu_describe()).
 *
 *     struct my_fx { struct gc_amdgpu_fixture dev; ... };
 *     setup():     return gc_amdgpu_fixture_new(gc_amdgpu_require(1), sizeof(struct my_fx),
 *                                               slack, ms);
 *     fixture:     .before_each = gc_amdgpu_fixture_snapshot,
 *                  .after_each = gc_amdgpu_fixture_check,  (or a function that gives
 *                                back its own first, then calls it)
 *                  .teardown = gc_amdgpu_fixture_free
 */
struct gc_amdgpu_fixture {
	struct gc_amdgpu *ag;
	struct gc_amdgpu_snapshot before;
	uint64_t slack;     /* heap bytes per device a subtest may leave (page tables) */
	unsigned settle_ms; /* how long a release may take to show */
};
void *gc_amdgpu_fixture_new(struct gc_amdgpu *ag, size_t size, uint64_t slack,
			    unsigned settle_ms);
void gc_amdgpu_fixture_snapshot(void *data); /* before_each(): a failed snapshot fails */
void gc_amdgpu_fixture_check(void *data);    /* after_each(): the leak check */
void gc_amdgpu_fixture_free(void *data);     /* teardown(): devices closed, data freed */

/* ---------------------------------------------------- per device, per pair */

/*
 * The devices of ag, in card-number order, as lib/core.h's device list:
 * gc_each_device() and gc_each_device_pair() over it name each
 * `gpu<index>` (d->index: DRM sees every card, pinned or not) and hand the
 * body a const pointer into ag->devs (not const: cast it back). The macros
 * below write a typed body in place.
 */
struct gc_devices gc_amdgpu_devices(const struct gc_amdgpu *ag);

/*
 * Subtests that run their body once per device, or once per ordered pair,
 * the body written in place; FX_TYPE begins with `struct gc_amdgpu_fixture
 * dev`, and fx is the fixture's data:
 *
 *     GC_AMDGPU_DEV_SUBTEST(test_lifecycle_gtt, struct mem_fx, fx, d)
 *     {
 *         lifecycle(fx, d, AMDGPU_GEM_DOMAIN_GTT);
 *     }
 *     GC_AMDGPU_PAIR_SUBTEST(test_shared, struct mg_fx, fx, a, b) { ... }
 */
#define GC_AMDGPU_DEV_SUBTEST(fn, fx_type, fx, d)                                   \
	static void fn##__body(fx_type *fx, struct gc_amdgpu_dev *d);                \
	static void fn##__one(void *ctx, const void *c)                              \
	{                                                                            \
		fn##__body(ctx, (struct gc_amdgpu_dev *)c);                          \
	}                                                                            \
	static void fn(void *fixture)                                                \
	{                                                                            \
		fx_type *all = fixture;                                              \
		struct gc_devices devs = gc_amdgpu_devices(all->dev.ag);             \
		gc_each_device(&devs, fn##__one, all);                               \
	}                                                                            \
	static void fn##__body(fx_type *fx, struct gc_amdgpu_dev *d)

#define GC_AMDGPU_PAIR_SUBTEST(fn, fx_type, fx, a, b)                               \
	static void fn##__body(fx_type *fx, struct gc_amdgpu_dev *a,                 \
			       struct gc_amdgpu_dev *b);                             \
	static void fn##__two(void *ctx, const void *x, const void *y)               \
	{                                                                            \
		fn##__body(ctx, (struct gc_amdgpu_dev *)x, (struct gc_amdgpu_dev *)y); \
	}                                                                            \
	static void fn(void *fixture)                                                \
	{                                                                            \
		fx_type *all = fixture;                                              \
		struct gc_devices devs = gc_amdgpu_devices(all->dev.ag);             \
		gc_each_device_pair(&devs, GC_PAIRS_DISTINCT, fn##__two, all);       \
	}                                                                            \
	static void fn##__body(fx_type *fx, struct gc_amdgpu_dev *a, struct gc_amdgpu_dev *b)

#endif
