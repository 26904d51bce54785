// SPDX-License-Identifier: MIT
/*
 * amdgpu_mem: the mem contract on libdrm_amdgpu buffer objects:
 * amdgpu_bo_alloc, GPU VA map / unmap (amdgpu_bo_va_op, amdgpu_bo_va_op_raw),
 * CPU map (amdgpu_bo_cpu_map / amdgpu_bo_cpu_unmap), amdgpu_bo_free, and the
 * GEM ioctls themselves where libdrm cannot express the misuse (a stale or
 * unknown GEM handle: libdrm's amdgpu_bo_handle is a pointer).
 *
 * Where the expectations come from. amdgpu.h (libdrm 2.4.114: the commit
 * cited below bumps the version to 2.4.114, and its amdgpu.h is Debian 12's
 * /usr/include/libdrm/amdgpu.h byte for byte) documents every return as
 * `\return 0 on success\n` / `<0 - Negative POSIX Error code`
 * [src mesa/drm amdgpu/amdgpu.h @ b9ca37b31348] and names no code; which
 * code comes back is read from the kernel (amdgpu_gem.c, amdgpu_vm.c,
 * drm_gem.c, ttm) and from libdrm's amdgpu_bo.c, not run: no AMD GPU was
 * available when this was written. Each check quotes the line it
 * rests on. Kernel quotes are from the 6.x sources (the Debian 12 kernel is
 * 6.1); where older kernels differ in wording but not in errno, the comment
 * says so.
 *
 * Devices: every amdgpu device, one dynamic subtest each, named gpu0, gpu1...
 * in card order (lib/amdgpu; setup() prints card and render node of each).
 *
 * Leak check (lib/amdgpu's fixture): after every subtest each device's VRAM
 * and GTT heap usage (amdgpu_query_heap_info) may exceed what before_each
 * read by at most LEAK_SLACK, re-read for up to SETTLE_MS, and the
 * render-node and dma-buf fd counts must be unchanged. heap_usage: "This
 * includes all processes and private allocations in the kernel." (amdgpu.h,
 * above): usage
 * that fell is never a leak, another process's short-lived allocation
 * settles, a lasting one fails the check with a message saying the counter
 * is device-wide; so is a buffer of ours that is still alive. LEAK_SLACK
 * (1 MiB) covers the page tables the VM allocates when a mapping is first
 * written and may keep after the unmap; every buffer here is BO_SIZE (4 MiB),
 * so a leaked buffer always exceeds it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "gc_amdgpu_drm.h"
#include "io.h"

#define BO_SIZE (4 * MiB)
#define GPU_PAGE ((uint64_t)4096) /* AMDGPU_GPU_PAGE_SIZE */
#define LEAK_SLACK (1 * MiB)
#define SETTLE_MS 1000
#define SEED 0x61d6

#define VA_RWX (AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE | AMDGPU_VM_PAGE_EXECUTABLE)

/* One buffer and what was made for it; what a failed subtest left goes back at its end. */
struct held {
	amdgpu_bo_handle bo;   /* NULL: none, or freed */
	amdgpu_va_handle va_h; /* libdrm VA range reserved for it (NULL: none) */
	uint64_t va, size;
	bool va_mapped;        /* mapped at va */
	unsigned cpu_maps;     /* amdgpu_bo_cpu_map() calls not undone yet */
};

/* A GEM handle made by a raw ioctl (libdrm does not know it); closed at the scope's end if live. */
struct raw_bo {
	const struct gc_amdgpu_dev *d;
	uint32_t handle;
	bool live;
};

struct mem_fx {
	struct gc_amdgpu_fixture dev; /* first: devices and the leak check (lib/amdgpu) */
};

/* ----------------------------------------------------------------- holding */

/* Unmaps, frees and gives the VA range back, whatever is left; no check. */
static void held_release(struct held *h)
{
	if (h->bo && h->va_mapped)
		amdgpu_bo_va_op(h->bo, 0, h->size, h->va, 0, AMDGPU_VA_OP_UNMAP);
	for (; h->bo && h->cpu_maps; h->cpu_maps--)
		amdgpu_bo_cpu_unmap(h->bo);
	if (h->bo)
		amdgpu_bo_free(h->bo);
	if (h->va_h)
		amdgpu_va_range_free(h->va_h);
	memset(h, 0, sizeof(*h));
}

static void held_give_back(void *h)
{
	held_release(h);
	free(h);
}

static const char *heap_name(uint32_t heap)
{
	return heap == AMDGPU_GEM_DOMAIN_VRAM ? "VRAM" : "GTT";
}

/*
 * A BO_SIZE buffer in heap with flags, and a VA range of its size (libdrm's VA manager),
 * given back (held_release) when the (dynamic) subtest ends, however it ends.
 */
static struct held *bo_new(const struct gc_amdgpu_dev *d, uint32_t heap, uint64_t flags)
{
	struct amdgpu_bo_alloc_request req = { .alloc_size = BO_SIZE, .phys_alignment = 4096,
					       .preferred_heap = heap, .flags = flags };
	struct held *h = gc_defer_calloc(sizeof(*h), held_give_back);
	int r = amdgpu_bo_alloc(d->adev, &req, &h->bo);

	if (r)
		h->bo = NULL;
	gc_assert_f(r == 0, "%s: amdgpu_bo_alloc(%zu MiB of %s, flags 0x%" PRIx64 "): %s (%d)",
		    d->node, BO_SIZE / MiB, heap_name(heap), flags, strerror(-r), r);
	h->size = BO_SIZE;
	r = amdgpu_va_range_alloc(d->adev, amdgpu_gpu_va_range_general, h->size, 0, 0, &h->va,
				  &h->va_h, 0);
	if (r)
		h->va_h = NULL;
	gc_assert_f(r == 0, "%s: amdgpu_va_range_alloc(%zu MiB): %d", d->node, BO_SIZE / MiB, r);
	return h;
}

/* amdgpu_bo_va_op() of the whole buffer at va. */
static int va_op(const struct held *h, uint32_t op, uint64_t va)
{
	return amdgpu_bo_va_op(h->bo, 0, h->size, va, 0, op);
}

static void va_map(struct held *h)
{
	gc_assert_ok(va_op(h, AMDGPU_VA_OP_MAP, h->va));
	h->va_mapped = true;
}

static void va_unmap(struct held *h)
{
	gc_assert_ok(va_op(h, AMDGPU_VA_OP_UNMAP, h->va));
	h->va_mapped = false;
}

static void *cpu_map(struct held *h)
{
	void *p = NULL;

	gc_assert_ok(amdgpu_bo_cpu_map(h->bo, &p));
	h->cpu_maps++;
	return p;
}

static void cpu_unmap(struct held *h)
{
	gc_assert_ok(amdgpu_bo_cpu_unmap(h->bo));
	h->cpu_maps--;
}

/*
 * amdgpu.h amdgpu_bo_free: `\return 0 on success\n` [src mesa/drm amdgpu/amdgpu.h @ b9ca37b31348].
 * The VA range stays reserved.
 */
static void bo_free(struct held *h)
{
	gc_check_ok(amdgpu_bo_free(h->bo));
	h->bo = NULL;
	h->va_mapped = false;
	h->cpu_maps = 0;
}

static uint64_t heap_of(const struct gc_amdgpu_usage *u, uint32_t heap)
{
	return heap == AMDGPU_GEM_DOMAIN_VRAM ? u->vram : u->gtt;
}

/* The heap usage of d is back to base (LEAK_SLACK, SETTLE_MS): checked. */
static void check_usage_back(const struct gc_amdgpu_dev *d, const struct gc_amdgpu_usage *base,
			     const char *after)
{
	struct gc_amdgpu_usage now = { 0 };
	int r = gc_amdgpu_usage_settles(d, base, LEAK_SLACK, SETTLE_MS, &now);

	gc_check_f(r == 0, "%s: after %s, heap usage VRAM %" PRIu64 " -> %" PRIu64 ", GTT %" PRIu64
		   " -> %" PRIu64 " bytes (%s; device-wide counter)", d->node, after, base->vram,
		   now.vram, base->gtt, now.gtt, r == -EAGAIN ? "did not settle" : strerror(-r));
}

static void check_pattern(const void *p, size_t len, uint64_t seed, const char *where)
{
	struct gc_mismatch mm;
	char msg[192];

	gc_check_f(gc_pattern_check(p, len, 0, seed, &mm) < 0, "%s: %s", where,
		   gc_mismatch_str(&mm, msg, sizeof(msg)));
}

/* --------------------------------------------------------------- lifecycle */

/*
 * Contract (amdgpu.h: amdgpu_bo_alloc `Allocate memory to be used by UMD for
 * GPU related operations`, amdgpu_bo_query_info, amdgpu_bo_va_op
 * `AMDGPU_VA_OP_MAP or AMDGPU_VA_OP_UNMAP`, amdgpu_bo_cpu_map `Request CPU
 * access to GPU accessible memory`, amdgpu_bo_free; heap_usage "It changes
 * when new buffers are allocated, freed, and moved."
 * [src mesa/drm amdgpu/amdgpu.h @ b9ca37b31348]): the allocation raises its
 * heap's usage by at least its size, amdgpu_bo_query_info reports the size
 * and heap asked for, the buffer maps at a GPU VA and unmaps, bytes written
 * through one CPU mapping read back through a fresh one, and after the free
 * the heap's usage comes back. The rise is read device-wide: it assumes no
 * other process frees memory on the device meanwhile.
 */
static void lifecycle(const struct gc_amdgpu_dev *d, uint32_t heap, uint64_t flags)
{
	struct gc_amdgpu_usage u0, u1;
	struct amdgpu_bo_info info;
	struct held *h;
	void *p;

	gc_amdgpu_read_usage(d, &u0);
	h = bo_new(d, heap, flags);
	gc_amdgpu_read_usage(d, &u1);
	gc_check_cmpuint(heap_of(&u1, heap), >=, heap_of(&u0, heap) + h->size);
	gc_assert_ok(amdgpu_bo_query_info(h->bo, &info));
	gc_check_eq_uint(info.alloc_size, h->size);
	gc_check_eq_uint(info.preferred_heap, heap);
	va_map(h);
	p = cpu_map(h);
	gc_pattern_fill(p, h->size, 0, SEED);
	cpu_unmap(h);
	p = cpu_map(h);
	check_pattern(p, h->size, SEED, "through a fresh CPU mapping");
	cpu_unmap(h);
	va_unmap(h);
	bo_free(h);
	held_release(h);
	check_usage_back(d, &u0, "the free");
}

/*
 * CPU_ACCESS_REQUIRED: amdgpu_drm.h `Flag that CPU access will be required for
 * the case of VRAM domain` [src mesa/drm include/drm/amdgpu_drm.h @ b9ca37b31348].
 */
GC_AMDGPU_DEV_SUBTEST(test_lifecycle_vram, struct mem_fx, fx, d)
{
	(void)fx;
	lifecycle(d, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED);
}

GC_AMDGPU_DEV_SUBTEST(test_lifecycle_gtt, struct mem_fx, fx, d)
{
	(void)fx;
	lifecycle(d, AMDGPU_GEM_DOMAIN_GTT, 0);
}

/* ----------------------------------------------------------------- CPU map */

/*
 * Contract (libdrm amdgpu_bo.c [src mesa/drm amdgpu/amdgpu_bo.c @
 * b9ca37b31348]; amdgpu.h says only `Request CPU access to GPU accessible
 * memory` / `Release CPU access to GPU memory` [src mesa/drm amdgpu/amdgpu.h
 * @ b9ca37b31348]): a second amdgpu_bo_cpu_map of a mapped buffer returns the
 * same address (commented `already mapped`: `bo->cpu_map_count++;`), the
 * first of two unmaps keeps the mapping (commented `mapped multiple times`),
 * and an unmap of an unmapped buffer is -EINVAL (commented `not mapped`:
 * `return -EINVAL;`).
 */
static void cpu_map_refcount(const struct gc_amdgpu_dev *d)
{
	struct held *h = bo_new(d, AMDGPU_GEM_DOMAIN_GTT, 0);
	void *p1 = cpu_map(h), *p2 = cpu_map(h);

	gc_assert_f(p1 == p2, "second amdgpu_bo_cpu_map: %p, the first gave %p", p2, p1);
	gc_pattern_fill(p1, GPU_PAGE, 0, SEED);
	cpu_unmap(h);
	check_pattern(p1, GPU_PAGE, SEED, "after the first of two unmaps");
	cpu_unmap(h);
	gc_check_errno(amdgpu_bo_cpu_unmap(h->bo), EINVAL);
	held_release(h);
}

/*
 * amdgpu_drm.h: AMDGPU_GEM_CREATE_NO_CPU_ACCESS `Flag that CPU access will
 * not work, this VRAM domain is invisible` [src mesa/drm
 * include/drm/amdgpu_drm.h @ b9ca37b31348]; amdgpu_gem.c
 * amdgpu_mode_dumb_mmap() (the DRM_AMDGPU_GEM_MMAP that amdgpu_bo_cpu_map
 * issues): `(robj->flags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS)) {` then `return
 * -EPERM;` [src gregkh/linux drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @
 * 0399b8416ecf], which libdrm's drmCommandWriteRead hands back as it is.
 */
static void cpu_map_no_access(const struct gc_amdgpu_dev *d)
{
	struct held *h = bo_new(d, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_NO_CPU_ACCESS);
	void *p = NULL;
	int r = amdgpu_bo_cpu_map(h->bo, &p);

	h->cpu_maps += r == 0;
	gc_check_errno(r, EPERM);
	held_release(h);
}

GC_AMDGPU_DEV_SUBTEST(test_cpu_map, struct mem_fx, fx, d)
{
	(void)fx;
	cpu_map_refcount(d);
	cpu_map_no_access(d);
}

/* ---------------------------------------------------------- VA alignment */

/* A map that must be refused; if it was not, it is undone at once (with a note). */
static void expect_map_refused(const struct gc_amdgpu_dev *d, const struct held *h,
			       uint64_t va, uint64_t offset, uint64_t size, int err,
			       const char *what)
{
	int r = amdgpu_bo_va_op_raw(d->adev, h->bo, offset, size, va, VA_RWX,
				    AMDGPU_VA_OP_MAP);

	gc_check_f(r == -err, "%s: map of [0x%" PRIx64 ", +0x%" PRIx64 ") at offset 0x%" PRIx64
		   " returned %d (%s), expected -%s", what, va, size, offset, r,
		   r ? strerror(-r) : "mapped", strerrorname_np(err));
	if (r == 0)
		amdgpu_bo_va_op_raw(d->adev, h->bo, offset, size, va, VA_RWX, AMDGPU_VA_OP_UNMAP);
}

/*
 * Contract (amdgpu_drm.h struct drm_amdgpu_gem_va: of va_address,
 * offset_in_bo and map_size alike, "Must be correctly aligned." [src mesa/drm
 * include/drm/amdgpu_drm.h @ b9ca37b31348]). What a violation gives,
 * amdgpu_vm.c amdgpu_vm_verify_parameters() (6.x; amdgpu_vm_bo_map() in older
 * kernels, same errno): `if (saddr & AMDGPU_GPU_PAGE_MASK || offset &
 * AMDGPU_GPU_PAGE_MASK || size & AMDGPU_GPU_PAGE_MASK) return -EINVAL;`,
 * `size == 0` (commented `which also leads to end < begin`) -> -EINVAL, and,
 * under the comment `make sure object fit at this offset`, `if (bo && offset
 * + size > amdgpu_bo_size(bo)) return -EINVAL;` [src gregkh/linux
 * drivers/gpu/drm/amd/amdgpu/amdgpu_vm.c @ 09b45a4528e6]; amdgpu_gem.c
 * amdgpu_gem_va_ioctl(): `va_address 0x%llx is in reserved area` -> -EINVAL
 * for address 0 [src gregkh/linux drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @
 * 0399b8416ecf]. None of them maps anything: the whole buffer then maps at
 * the same address (an overlap would be refused, see map-over-mapped).
 * amdgpu.h amdgpu_bo_va_op_raw: "This is not a simple drop-in extension for
 * amdgpu_bo_va_op; instead, all parameters are treated [...], i.e. size is
 * not automatically aligned, and all flags must be specified explicitly."
 * [src mesa/drm amdgpu/amdgpu.h @ b9ca37b31348] (the cut word is raw): the
 * non-raw amdgpu_bo_va_op aligns it (amdgpu_bo.c `size = ALIGN(size,
 * getpagesize());` [src mesa/drm amdgpu/amdgpu_bo.c @ b9ca37b31348]), so an
 * unaligned size maps there.
 */
GC_AMDGPU_DEV_SUBTEST(test_granularity, struct mem_fx, fx, d)
{
	struct held *h = bo_new(d, AMDGPU_GEM_DOMAIN_GTT, 0);
	const uint64_t half = GPU_PAGE / 2, most = h->size - GPU_PAGE;

	(void)fx;
	expect_map_refused(d, h, h->va + half, 0, most, EINVAL, "unaligned address");
	expect_map_refused(d, h, h->va, half, most, EINVAL, "unaligned offset");
	expect_map_refused(d, h, h->va, 0, most + half, EINVAL, "unaligned size");
	expect_map_refused(d, h, h->va, 0, 0, EINVAL, "size 0");
	expect_map_refused(d, h, h->va, GPU_PAGE, h->size, EINVAL, "past the end of the buffer");
	expect_map_refused(d, h, 0, 0, h->size, EINVAL, "address 0 (reserved area)");
	va_map(h);
	va_unmap(h);
	gc_check_ok(amdgpu_bo_va_op(h->bo, 0, h->size - 100, h->va, 0, AMDGPU_VA_OP_MAP));
	gc_check_ok(amdgpu_bo_va_op(h->bo, 0, h->size - 100, h->va, 0, AMDGPU_VA_OP_UNMAP));
	held_release(h);
}

/*
 * Contract (amdgpu.h amdgpu_va_range_alloc: "Neither kernel driver nor
 * libdrm_amdpgu are able to prevent and detect wrong va assignment."
 * [src mesa/drm amdgpu/amdgpu.h @ b9ca37b31348]): a
 * mapping that runs past the end of its VA range is not refused. The range
 * here is half the buffer; the whole buffer maps at its start (nothing else
 * is mapped past it) and unmaps again. What cuda_mem's subtest of this name
 * expects refused, amdgpu documents as the client's responsibility.
 */
GC_AMDGPU_DEV_SUBTEST(test_map_past_reservation, struct mem_fx, fx, d)
{
	struct held *h = bo_new(d, AMDGPU_GEM_DOMAIN_GTT, 0);
	amdgpu_va_handle half_h = NULL;
	uint64_t va = 0;

	(void)fx;
	gc_assert_ok(amdgpu_va_range_alloc(d->adev, amdgpu_gpu_va_range_general, h->size / 2, 0,
					   0, &va, &half_h, 0));
	gc_check_ok(va_op(h, AMDGPU_VA_OP_MAP, va));
	gc_check_ok(va_op(h, AMDGPU_VA_OP_UNMAP, va));
	amdgpu_va_range_free(half_h);
	held_release(h);
}

/* ------------------------------------------------------- map over, unmap */

/*
 * Contract (amdgpu_vm.c amdgpu_vm_bo_map(): `tmp =
 * amdgpu_vm_it_iter_first(&vm->va, saddr, eaddr); if (tmp) {`, commented `bo
 * and tmp overlap, invalid addr`, `return -EINVAL;`
 * [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_vm.c @
 * 004da42b8e57]): a map over any part of a
 * mapping, of the same buffer or another, is refused with -EINVAL and
 * changes nothing: the first mapping unmaps exactly once (a second unmap is
 * -ENOENT, see unmap-unmapped).
 */
GC_AMDGPU_DEV_SUBTEST(test_map_over_mapped, struct mem_fx, fx, d)
{
	struct held *a = bo_new(d, AMDGPU_GEM_DOMAIN_GTT, 0);
	struct held *b = bo_new(d, AMDGPU_GEM_DOMAIN_GTT, 0);

	(void)fx;
	va_map(a);
	expect_map_refused(d, a, a->va, 0, a->size, EINVAL, "the same buffer again");
	expect_map_refused(d, b, a->va, 0, b->size, EINVAL, "another buffer at the same address");
	expect_map_refused(d, b, a->va + a->size / 2, 0, b->size / 2, EINVAL,
			   "another buffer over the second half");
	va_unmap(a);
	gc_check_errno(va_op(a, AMDGPU_VA_OP_UNMAP, a->va), ENOENT);
	held_release(b);
	held_release(a);
}

/*
 * Contract (amdgpu_vm.c amdgpu_vm_bo_unmap(): a mapping is found by its
 * start among this buffer's mappings, `if (mapping->start == saddr)`, and
 * `if (&mapping->list == &bo_va->invalids) return -ENOENT;`
 * [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_vm.c @
 * 004da42b8e57]): unmap of a
 * never-mapped address, of an address inside a mapping but not its start,
 * and a second unmap are -ENOENT and change nothing (the mapping is still
 * there for the unmap at its start).
 */
GC_AMDGPU_DEV_SUBTEST(test_unmap_unmapped, struct mem_fx, fx, d)
{
	struct held *h = bo_new(d, AMDGPU_GEM_DOMAIN_GTT, 0);

	(void)fx;
	gc_check_errno(va_op(h, AMDGPU_VA_OP_UNMAP, h->va), ENOENT);
	va_map(h);
	gc_check_errno(va_op(h, AMDGPU_VA_OP_UNMAP, h->va + GPU_PAGE), ENOENT);
	va_unmap(h);
	gc_check_errno(va_op(h, AMDGPU_VA_OP_UNMAP, h->va), ENOENT);
	held_release(h);
}

/*
 * Contract (free while mapped). amdgpu.h amdgpu_bo_free: `\return 0 on
 * success\n` (its only note on GPU use is an obligation on the caller, `If is
 * UMD responsibility to ‘free’ buffer only when there is no more GPU access`
 * [src mesa/drm amdgpu/amdgpu.h @ b9ca37b31348]; no GPU access is made here).
 * libdrm's amdgpu_bo_free closes the GEM handle when its refcount reaches 0
 * (drmCloseBufferHandle), and the kernel's amdgpu_gem_object_close() then
 * removes the buffer and its mappings from this file's VM: `bo_va =
 * amdgpu_vm_bo_find(vm, bo); if (!bo_va || --bo_va->ref_count) goto
 * out_unlock; amdgpu_vm_bo_del(adev, bo_va);` [src gregkh/linux
 * drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @ 0399b8416ecf] (amdgpu_vm.c
 * amdgpu_vm_bo_del: "Remove @bo_va->bo from the requested vm." [src
 * gregkh/linux drivers/gpu/drm/amd/amdgpu/amdgpu_vm.c @ 09b45a4528e6]). So:
 * the free returns 0, the address is free again (another buffer maps there;
 * an overlap would be -EINVAL), and the heap usage comes back. cuda_mem's
 * subtest of this name expects the memory to stay valid until the unmap:
 * amdgpu has no unmap after the free.
 */
GC_AMDGPU_DEV_SUBTEST(test_release_while_mapped, struct mem_fx, fx, d)
{
	struct gc_amdgpu_usage u0;
	struct held *a, *b;
	int r;

	(void)fx;
	gc_amdgpu_read_usage(d, &u0);
	a = bo_new(d, AMDGPU_GEM_DOMAIN_VRAM, 0);
	va_map(a);
	bo_free(a);
	b = bo_new(d, AMDGPU_GEM_DOMAIN_GTT, 0);
	r = va_op(b, AMDGPU_VA_OP_MAP, a->va);
	gc_check_f(r == 0, "map of another buffer where the freed one was mapped: %d (%s)", r,
		   strerror(-r));
	if (r == 0)
		gc_check_ok(va_op(b, AMDGPU_VA_OP_UNMAP, a->va));
	held_release(b);
	held_release(a);
	check_usage_back(d, &u0, "freeing a mapped buffer");
}

/* ------------------------------------------------------------ raw handles */

static void raw_give_back(void *arg)
{
	struct raw_bo *b = arg;

	if (b->live)
		gc_amdgpu_gem_close(b->d, b->handle);
	free(b);
}

/* A BO_SIZE GTT buffer made by DRM_IOCTL_AMDGPU_GEM_CREATE, its close deferred. */
static struct raw_bo *raw_new(const struct gc_amdgpu_dev *d)
{
	struct raw_bo *b = gc_defer_calloc(sizeof(*b), raw_give_back);

	b->d = d;
	gc_assert_ok(gc_amdgpu_gem_create(d, GC_AMDGPU_RAW, BO_SIZE, AMDGPU_GEM_DOMAIN_GTT, 0,
					  &b->handle));
	b->live = true;
	return b;
}

/* A libdrm VA range of BO_SIZE, for ioctls that must get past the address checks. */
static uint64_t va_range(const struct gc_amdgpu_dev *d, amdgpu_va_handle *vh)
{
	uint64_t va = 0;

	gc_assert_ok(amdgpu_va_range_alloc(d->adev, amdgpu_gpu_va_range_general, BO_SIZE, 0, 0,
					   &va, vh, 0));
	return va;
}

/*
 * Contract (GEM handles this file never had). Handles start at 1 (drm_gem.c
 * drm_gem_handle_create_tail(): `ret = idr_alloc(&file_priv->object_idr, obj,
 * 1, 0, GFP_NOWAIT);` [src torvalds/linux drivers/gpu/drm/drm_gem.c @
 * 002c6ca75289]) and stay below 2^31, so 0 and 0xffffffff name nothing.
 * amdgpu_gem.c amdgpu_gem_va_ioctl(): `gobj = drm_gem_object_lookup(filp,
 * args->handle); if (gobj == NULL) return -ENOENT;` [src gregkh/linux
 * drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @ 0399b8416ecf] (after the address
 * checks, hence a valid address); amdgpu_gem_wait_idle_ioctl() looks the
 * handle up the same way (-ENOENT); DRM_IOCTL_GEM_CLOSE, drm_gem.c
 * drm_gem_handle_delete(): `if (IS_ERR_OR_NULL(obj)) return -EINVAL;` (same
 * version).
 */
GC_AMDGPU_DEV_SUBTEST(test_invalid_handle, struct mem_fx, fx, d)
{
	static const uint32_t bad[] = { 0, 0xffffffffu };
	amdgpu_va_handle vh = NULL;
	uint64_t va = va_range(d, &vh);
	uint32_t busy = 0;

	(void)fx;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		gc_check_errno(gc_amdgpu_gem_va(d, GC_AMDGPU_RAW, bad[i], AMDGPU_VA_OP_MAP, va, 0,
						BO_SIZE), ENOENT);
		gc_check_errno(gc_amdgpu_gem_va(d, GC_AMDGPU_RAW, bad[i], AMDGPU_VA_OP_UNMAP, va, 0,
						BO_SIZE), ENOENT);
		gc_check_errno(gc_amdgpu_gem_wait_idle(d, GC_AMDGPU_RAW, bad[i],
						       gc_amdgpu_deadline_ns(0), &busy), ENOENT);
		gc_check_errno(gc_amdgpu_gem_close(d, bad[i]), EINVAL);
	}
	amdgpu_va_range_free(vh);
}

/*
 * Contract (a GEM handle closed twice; libdrm's amdgpu_bo_free of a freed
 * amdgpu_bo_handle would be a use after free, so the double free is made on
 * the GEM handle): the second DRM_IOCTL_GEM_CLOSE is -EINVAL, drm_gem.c
 * drm_gem_handle_delete(): `if (IS_ERR_OR_NULL(obj)) return -EINVAL;` [src
 * torvalds/linux drivers/gpu/drm/drm_gem.c @ 002c6ca75289], and the closed
 * handle maps nothing, amdgpu_gem_va_ioctl(): `if (gobj == NULL) return
 * -ENOENT;` [src gregkh/linux drivers/gpu/drm/amd/amdgpu/amdgpu_gem.c @
 * 0399b8416ecf]. The buffer's memory comes back (the fixture's check).
 */
GC_AMDGPU_DEV_SUBTEST(test_double_free, struct mem_fx, fx, d)
{
	struct raw_bo *b = raw_new(d);
	amdgpu_va_handle vh = NULL;
	uint64_t va = va_range(d, &vh);

	(void)fx;
	gc_assert_ok(gc_amdgpu_gem_close(d, b->handle));
	b->live = false;
	gc_check_errno(gc_amdgpu_gem_close(d, b->handle), EINVAL);
	gc_check_errno(gc_amdgpu_gem_va(d, GC_AMDGPU_RAW, b->handle, AMDGPU_VA_OP_MAP, va, 0,
					BO_SIZE), ENOENT);
	amdgpu_va_range_free(vh);
}

/* ----------------------------------------------------------------- fixture */

static void *mem_setup(void)
{
	return gc_amdgpu_fixture_new(gc_amdgpu_require(1), sizeof(struct mem_fx), LEAK_SLACK,
				     SETTLE_MS);
}

static const struct gc_fixture fixture = {
	.setup = mem_setup,
	.teardown = gc_amdgpu_fixture_free,
	.before_each = gc_amdgpu_fixture_snapshot,
	.after_each = gc_amdgpu_fixture_check,
};

static const struct gc_subtest subtests[] = {
	{ "lifecycle-vram", test_lifecycle_vram,
	  "VRAM buffer: alloc raises VRAM usage, query info, VA map/unmap, CPU data through a "
	  "fresh mapping, free gives the memory back" },
	{ "lifecycle-gtt", test_lifecycle_gtt,
	  "the same for a GTT buffer" },
	{ "cpu-map", test_cpu_map,
	  "amdgpu_bo_cpu_map is refcounted (same address, unmap of unmapped: EINVAL); "
	  "NO_CPU_ACCESS VRAM: EPERM" },
	{ "granularity", test_granularity,
	  "unaligned address / offset / size, size 0, past the buffer, address 0: EINVAL, "
	  "nothing mapped; amdgpu_bo_va_op aligns the size" },
	{ "map-past-reservation", test_map_past_reservation,
	  "a mapping past its libdrm VA range is not refused (amdgpu.h: not detected)" },
	{ "map-over-mapped", test_map_over_mapped,
	  "a map over a mapping (same or other buffer, whole or half): EINVAL, the mapping "
	  "intact" },
	{ "unmap-unmapped", test_unmap_unmapped,
	  "unmap of a never-mapped address, inside a mapping, or twice: ENOENT" },
	{ "release-while-mapped", test_release_while_mapped,
	  "free of a mapped buffer: 0, the address free again, the memory back" },
	{ "invalid-handle", test_invalid_handle,
	  "GEM handles 0 and 0xffffffff: GEM_VA and WAIT_IDLE ENOENT, GEM_CLOSE EINVAL" },
	{ "double-free", test_double_free,
	  "a GEM handle closed twice: EINVAL, then GEM_VA of it ENOENT" },
	{ 0 }
};

GC_MAIN(.name = "amdgpu_mem",
	.description = "libdrm_amdgpu buffer objects: lifecycle, GPU VA and CPU maps, misuse",
	.subtests = subtests, .fixture = &fixture)
