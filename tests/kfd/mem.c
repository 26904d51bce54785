// SPDX-License-Identifier: MIT
/*
 * kfd_mem: the mem contract on raw KFD ioctls (AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
 * MAP_MEMORY_TO_GPU, UNMAP_MEMORY_FROM_GPU, FREE_MEMORY_OF_GPU,
 * AVAILABLE_MEMORY) with each GPU's VM acquired from its render node.
 *
 * Where the expectations come from. <linux/kfd_ioctl.h> documents the
 * argument structs and n_success; it names no error code. Every errno
 * asserted here comes from the kernel source, read, not run (no AMD GPU was
 * available when this was written): kfd_chardev.c (the ioctl handlers) and
 * amdgpu_amdkfd_gpuvm.c (the BO work behind them). Each check quotes the
 * line it rests on; `(header silent)` marks where the header says nothing.
 *
 * Addresses. libhsakmt (fmm.c, read, not run) carves GPU VAs out of an
 * aperture it reserves in the process with mmap(PROT_NONE) and maps
 * host-accessible BOs for the CPU with mmap(addr, size, prot,
 * MAP_SHARED | MAP_FIXED, drm_render_fd, mmap_offset). This binary does the
 * same, per allocation: gc_kfd_va_reserve() gives a PROT_NONE host range
 * inside every acquired GPU's [gpuvm_base, gpuvm_limit] (from
 * AMDKFD_IOC_GET_PROCESS_APERTURES_NEW), used as va_addr; CPU access maps
 * the render node at mmap_offset over that same range.
 *
 * Fixture: /dev/kfd, topology, ACQUIRE_VM on every GPU. before_each takes
 * AMDKFD_IOC_AVAILABLE_MEMORY per GPU (UAPI 1.9, required). Each
 * allocation defers its give-back when it is made, so a failed subtest
 * leaves nothing; after_each requires every GPU's available memory and the
 * /dev/kfd fd count to be back where they were. AVAILABLE_MEMORY counts
 * VRAM (amdgpu_amdkfd_get_available_memory); GTT and USERPTR allocations
 * are not visible to it, so for them the leak check only proves VRAM was
 * not touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"
#include "gc_kfd.h"
#include "io.h"
#include "measure.h"

#define BO_SIZE (2 * MiB)          /* VRAM_AVAILABLITY_ALIGN: accounting is exact */
#define BO_ALIGN (2 * MiB)
#define ACCOUNT_SIZE (64 * MiB)
#define LAT_REPS 100

#define VRAM (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
#define GTT (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
#define USERPTR (KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
#define PUBLIC KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC

/* One allocation and everything made for it; what is left goes back at the scope's end. */
struct held {
	const struct gc_kfd *kfd;
	bool live;       /* handle not freed yet */
	uint64_t handle;
	uint32_t gpu_id;
	bool gpu_mapped;
	uint64_t va;     /* GPU VA reservation (0: none) */
	uint64_t size;
	bool cpu_mapped; /* the render node is mapped over [va, va + size) */
	void *user;      /* USERPTR host buffer (NULL: none) */
	uint64_t mmap_offset;
};

struct mem_fx {
	struct gc_kfd_fixture dev; /* first: /dev/kfd and the leak check (lib/kfd) */
	uint64_t page;
};

/* ----------------------------------------------------------- helpers */

static void bo_release_host(struct held *h)
{
	if (h->va) {
		gc_kfd_va_release(h->va, h->size);
		h->va = 0;
		h->cpu_mapped = false;
	}
	if (h->user) {
		munmap(h->user, h->size);
		h->user = NULL;
	}
}

/* Whatever of h is still held, given back without a check; then h itself. */
static void held_give_back(void *arg)
{
	struct held *h = arg;
	int err;

	if (h->cpu_mapped)
		gc_kfd_cpu_unmap(h->va, h->size);
	h->cpu_mapped = false;
	if (h->live && h->gpu_mapped)
		gc_kfd_unmap(h->kfd, h->handle, &h->gpu_id, 1, NULL);
	if (h->live) {
		err = gc_kfd_free(h->kfd, h->handle);
		if (err)
			gc_warn("giving back handle 0x%" PRIx64 ": %s", h->handle, strerror(-err));
	}
	h->live = h->gpu_mapped = false;
	bo_release_host(h);
	free(h);
}

/* An empty record whose give-back runs when the (dynamic) subtest ends, however it ends. */
static struct held *held_new(struct mem_fx *fx)
{
	struct held *h = gc_defer_calloc(sizeof(*h), held_give_back);

	h->kfd = fx->dev.kfd;
	return h;
}

/* Everything but the handle: GPU VA, and for USERPTR the host buffer. */
static struct held *bo_prepare(struct mem_fx *fx, uint32_t gpu_id, uint64_t size,
			       uint32_t flags)
{
	struct held *h = held_new(fx);

	h->gpu_id = gpu_id;
	h->size = size;
	gc_assert_ok(gc_kfd_va_reserve(fx->dev.kfd, size, BO_ALIGN, &h->va));
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

		gc_assert_f(p != MAP_FAILED, "mmap(%" PRIu64 ") for USERPTR: %s", size,
			    strerror(errno));
		h->user = p;
		h->mmap_offset = (uint64_t)(uintptr_t)p;
	}
	return h;
}

static struct held *bo_alloc(struct mem_fx *fx, uint32_t gpu_id, uint64_t size, uint32_t flags)
{
	struct held *h = bo_prepare(fx, gpu_id, size, flags);

	gc_assert_ok(gc_kfd_alloc(fx->dev.kfd, gpu_id, size, h->va, flags, &h->handle,
				  &h->mmap_offset));
	h->live = true;
	return h;
}

/*
 * kfd_ioctl.h: "If the ioctl completes with return code 0 (success),
 * n_success == n_devices."; "[...] For the first call the caller should
 * initialize it to 0." Unmap: `same arguments as for mapping`.
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
 */
static void bo_map(struct mem_fx *fx, struct held *h)
{
	uint32_t n_success = 0;

	gc_assert_ok(gc_kfd_map(fx->dev.kfd, h->handle, &h->gpu_id, 1, &n_success));
	h->gpu_mapped = true;
	gc_assert_eq_uint(n_success, 1);
}

static void bo_unmap(struct mem_fx *fx, struct held *h)
{
	uint32_t n_success = 0;

	gc_assert_ok(gc_kfd_unmap(fx->dev.kfd, h->handle, &h->gpu_id, 1, &n_success));
	h->gpu_mapped = false;
	gc_assert_eq_uint(n_success, 1);
}

static void bo_free(struct mem_fx *fx, struct held *h)
{
	gc_assert_ok(gc_kfd_free(fx->dev.kfd, h->handle));
	h->live = false;
	bo_release_host(h);
}

/*
 * Asserts that the driver refuses a map or unmap (call) with -err, having done
 * no device: n_success still 0. A macro, so that a failure names the call as
 * written and the subtest it is in.
 */
#define REFUSED(call, err, n_success)                  \
	do {                                           \
		gc_assert_errno(call, err);            \
		gc_assert_eq_uint(n_success, 0);       \
	} while (0)

static bool node_large_bar(const struct gc_kfd_node *n)
{
	/*
	 * kfd_crat.c: `if (local_mem_info.local_mem_size_private == 0)` the bank
	 * is HSA_MEM_HEAP_TYPE_FB_PUBLIC, else FB_PRIVATE
	 * [src torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_crat.c @ 01bdb31fc5aa];
	 * kfd_chardev.c's kfd_dev_is_large_bar() tests the same condition (with
	 * `local_mem_size_public > 0`, and debug_largebar or an APP APU also
	 * counting as large BAR)
	 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9].
	 */
	return gc_kfd_node_heap_bytes(n, GC_KFD_HEAP_FB_PUBLIC) > 0;
}

static bool node_is_apu(const struct gc_kfd_node *n)
{
	return n->cpu_cores_count > 0; /* a GPU node with CPU cores: an APU */
}

static void require_dgpu(const struct gc_kfd_gpu *g, const char *what)
{
	gc_require_f(!node_is_apu(&g->node), "%s: gpu %u is an APU (cpu_cores_count %u); "
		     "its VRAM accounting differs", what, g->node.gpu_id,
		     g->node.cpu_cores_count);
}

/* ---------------------------------------------------------- lifecycle */

GC_KFD_GPU_SUBTEST(test_lifecycle_vram, struct mem_fx, fx, gpu)
{
	struct held *h1, *h2;

	h1 = bo_alloc(fx, gpu->node.gpu_id, BO_SIZE, VRAM);
	/*
	 * kfd_ioctl.h: @handle is `used to refer to this allocation`
	 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]: two differ.
	 */
	h2 = bo_alloc(fx, gpu->node.gpu_id, BO_SIZE, VRAM);
	gc_assert_f(h1->handle != h2->handle, "two allocations share handle 0x%" PRIx64,
		    h1->handle);
	bo_map(fx, h1);
	bo_map(fx, h2);
	bo_unmap(fx, h1);
	bo_unmap(fx, h2);
	bo_free(fx, h1);
	bo_free(fx, h2);
}

/*
 * Host-visible BO: CPU-map it at mmap_offset (`for CPU-mapping the
 * allocation by mmapping a render node`, kfd_ioctl.h
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]), write a pattern,
 * GPU-map it, and read the pattern through a second CPU mapping of the same
 * offset: both mappings reach the BO, not private memory.
 */
static void cpu_roundtrip(struct mem_fx *fx, struct gc_kfd_gpu *g, uint32_t flags,
			  uint64_t seed)
{
	struct held *h = bo_alloc(fx, g->node.gpu_id, BO_SIZE, flags);
	uint64_t va2 = 0;
	struct gc_mismatch mm;
	char msg[160];
	int64_t bad;
	int err;

	gc_assert_ok(gc_kfd_cpu_map(g, h->va, h->size, h->mmap_offset, PROT_READ | PROT_WRITE));
	h->cpu_mapped = true;
	gc_pattern_fill((void *)(uintptr_t)h->va, h->size, 0, seed);
	bo_map(fx, h);
	gc_assert_ok(gc_kfd_va_reserve(fx->dev.kfd, h->size, BO_ALIGN, &va2));
	err = gc_kfd_cpu_map(g, va2, h->size, h->mmap_offset, PROT_READ);
	if (err) {
		gc_kfd_va_release(va2, h->size);
		gc_fail("second CPU mapping of mmap_offset 0x%" PRIx64 ": %s", h->mmap_offset,
			strerror(-err));
	}
	bad = gc_pattern_check((void *)(uintptr_t)va2, h->size, 0, seed, &mm);
	gc_kfd_va_release(va2, h->size);
	gc_assert_f(bad < 0, "second mapping: %s", gc_mismatch_str(&mm, msg, sizeof(msg)));
	bo_unmap(fx, h);
	bad = gc_pattern_check((void *)(uintptr_t)h->va, h->size, 0, seed, &mm);
	gc_assert_f(bad < 0, "after GPU unmap: %s", gc_mismatch_str(&mm, msg, sizeof(msg)));
	gc_assert_ok(gc_kfd_cpu_unmap(h->va, h->size));
	h->cpu_mapped = false;
	bo_free(fx, h);
}

GC_KFD_GPU_SUBTEST(test_lifecycle_vram_cpu, struct mem_fx, fx, gpu)
{
	/*
	 * kfd_chardev.c: `Alloc host visible vram on small bar is not allowed`.
	 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9]
	 */
	gc_require_f(node_large_bar(&gpu->node), "gpu %u has no FB_PUBLIC bank (small "
		     "BAR): host-visible VRAM is refused", gpu->node.gpu_id);
	cpu_roundtrip(fx, gpu, VRAM | PUBLIC, 0x7a11);
}

GC_KFD_GPU_SUBTEST(test_lifecycle_gtt, struct mem_fx, fx, gpu)
{
	cpu_roundtrip(fx, gpu, GTT, 0x6771);
}

/*
 * USERPTR: kfd_ioctl.h, @mmap_offset `for userptrs this is overloaded to
 * specify the CPU address` [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]. The CPU accesses its own pages; they must keep
 * their content through alloc, map, CPU writes while mapped, unmap, free.
 */
GC_KFD_GPU_SUBTEST(test_lifecycle_userptr, struct mem_fx, fx, gpu)
{
	struct held *h = bo_prepare(fx, gpu->node.gpu_id, BO_SIZE, USERPTR);
	struct gc_mismatch mm;
	char msg[160];

	gc_pattern_fill(h->user, h->size, 0, 0x05e1);
	gc_assert_ok(gc_kfd_alloc(fx->dev.kfd, h->gpu_id, h->size, h->va, USERPTR, &h->handle,
				  &h->mmap_offset));
	h->live = true;
	bo_map(fx, h);
	gc_assert_f(gc_pattern_check(h->user, h->size, 0, 0x05e1, &mm) < 0, "after map: %s",
		    gc_mismatch_str(&mm, msg, sizeof(msg)));
	gc_pattern_fill(h->user, h->size, 0, 0x05e2);
	bo_unmap(fx, h);
	gc_assert_f(gc_pattern_check(h->user, h->size, 0, 0x05e2, &mm) < 0, "after unmap: %s",
		    gc_mismatch_str(&mm, msg, sizeof(msg)));
	gc_assert_ok(gc_kfd_free(fx->dev.kfd, h->handle));
	h->live = false;
	gc_assert_f(gc_pattern_check(h->user, h->size, 0, 0x05e2, &mm) < 0, "after free: %s",
		    gc_mismatch_str(&mm, msg, sizeof(msg)));
	bo_release_host(h);
}

/* ------------------------------------------------------ invalid alloc */

GC_KFD_GPU_SUBTEST(test_vram_public_small_bar, struct mem_fx, fx, gpu)
{
	struct held *h;
	uint64_t handle = 0;

	gc_require_f(!node_large_bar(&gpu->node), "gpu %u has an FB_PUBLIC bank (large "
		     "BAR): host-visible VRAM is allowed", gpu->node.gpu_id);
	require_dgpu(gpu, "small-BAR refusal");
	h = bo_prepare(fx, gpu->node.gpu_id, BO_SIZE, VRAM | PUBLIC);
	/*
	 * kfd_chardev.c: `Alloc host visible vram on small bar is not allowed` -> -EINVAL.
	 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9]
	 */
	gc_assert_errno(gc_kfd_alloc(fx->dev.kfd, h->gpu_id, h->size, h->va, VRAM | PUBLIC,
				     &handle, NULL), EINVAL);
	bo_release_host(h);
}

GC_KFD_GPU_SUBTEST(test_alloc_invalid, struct mem_fx, fx, gpu)
{
	const struct gc_kfd *kfd = fx->dev.kfd;
	uint32_t id = gpu->node.gpu_id;
	struct held *h = bo_prepare(fx, id, BO_SIZE, VRAM);
	uint64_t handle = 0, zero = 0;

	/*
	 * kfd_chardev.c: `if (args->size == 0) return -EINVAL;`
	 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9]
	 */
	gc_check_errno(gc_kfd_alloc(kfd, id, 0, h->va, VRAM, &handle, NULL), EINVAL);
	/*
	 * kfd_chardev.c: no process device for args->gpu_id -> `err = -EINVAL;`
	 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9]
	 */
	gc_check_errno(gc_kfd_alloc(kfd, gc_kfd_unknown_gpu_id(kfd), BO_SIZE, h->va, VRAM, &handle,
				    NULL), EINVAL);
	/*
	 * amdgpu_amdkfd_gpuvm.c, USERPTR: `if (!offset || !*offset) return -EINVAL;`
	 * [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c @ 002c6ca75289]
	 */
	gc_check_errno(gc_kfd_alloc(kfd, id, BO_SIZE, h->va, USERPTR, &handle, &zero), EINVAL);
	/*
	 * amdgpu_amdkfd_gpuvm.c: no memory-type flag falls to `} else { return -EINVAL; }`
	 * [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c @ 002c6ca75289]
	 */
	gc_check_errno(gc_kfd_alloc(kfd, id, BO_SIZE, h->va, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
				    &handle, NULL), EINVAL);
	/* Nothing was made: the VA is still free for a real allocation. */
	gc_assert_ok(gc_kfd_alloc(kfd, id, BO_SIZE, h->va, VRAM, &h->handle, NULL));
	h->live = true;
	bo_free(fx, h);
}

/* ------------------------------------------------------ invalid handle */

/*
 * A handle no allocation returned (header: `@handle: buffer handle returned to
 * user mode, used to refer to this allocation for mapping, unmapping and freeing`
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]). 0 and all-ones:
 * kfd_chardev.c looks the handle's device up first and answers -EINVAL when
 * `Process device data doesn't exist` (free) or no pdd is found (map, unmap).
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9]
 */
static void test_invalid_handle(void *data)
{
	struct mem_fx *fx = data;
	const uint64_t bad[] = { 0, UINT64_MAX };
	uint32_t id = fx->dev.kfd->gpus[0].node.gpu_id;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t n_success = 0;

		gc_assert_errno(gc_kfd_free(fx->dev.kfd, bad[i]), EINVAL);
		REFUSED(gc_kfd_map(fx->dev.kfd, bad[i], &id, 1, &n_success), EINVAL, n_success);
		REFUSED(gc_kfd_unmap(fx->dev.kfd, bad[i], &id, 1, &n_success), EINVAL, n_success);
	}
}

/*
 * Double free, and a freed handle used again. kfd_chardev.c: free of a
 * handle that no longer translates: `if (!mem) { ret = -EINVAL;`; map and
 * unmap of it: `if (!mem) { err = -ENOMEM;` (header silent; -ENOMEM for a
 * stale handle is what the source says, not an out-of-memory condition).
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9]
 */
GC_KFD_GPU_SUBTEST(test_double_free, struct mem_fx, fx, gpu)
{
	struct held *h = bo_alloc(fx, gpu->node.gpu_id, BO_SIZE, VRAM);
	uint64_t handle = h->handle;
	uint32_t n_success = 0;

	bo_free(fx, h);
	gc_assert_errno(gc_kfd_free(fx->dev.kfd, handle), EINVAL);
	REFUSED(gc_kfd_map(fx->dev.kfd, handle, &h->gpu_id, 1, &n_success), ENOMEM, n_success);
	REFUSED(gc_kfd_unmap(fx->dev.kfd, handle, &h->gpu_id, 1, &n_success), ENOMEM, n_success);
}

/*
 * amdgpu_amdkfd_gpuvm.c: `BO VA 0x%llx size 0x%lx is still mapped.` -> -EBUSY
 * [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c @ 002c6ca75289];
 * kfd_chardev.c: "If freeing the buffer failed, leave the handle in place for
 * clean-up during process tear-down." [src torvalds/linux
 * drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 00af6729b52e]: the handle
 * still unmaps and frees.
 */
GC_KFD_GPU_SUBTEST(test_free_while_mapped, struct mem_fx, fx, gpu)
{
	struct held *h = bo_alloc(fx, gpu->node.gpu_id, BO_SIZE, VRAM);

	bo_map(fx, h);
	gc_assert_errno(gc_kfd_free(fx->dev.kfd, h->handle), EBUSY);
	bo_unmap(fx, h);
	bo_free(fx, h);
}

/*
 * amdgpu_amdkfd_gpuvm.c unmap: `If no VMs were reserved, it means the BO
 * wasn't actually mapped` -> -EINVAL [src torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c @ 002c6ca75289];
 * kfd_chardev.c only advances n_success after a device succeeded
 * (`args->n_success = i+1;`)
 * [src torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 29633d0e204d].
 */
GC_KFD_GPU_SUBTEST(test_unmap_unmapped, struct mem_fx, fx, gpu)
{
	struct held *h = bo_alloc(fx, gpu->node.gpu_id, BO_SIZE, VRAM);
	uint32_t n_success = 0;

	REFUSED(gc_kfd_unmap(fx->dev.kfd, h->handle, &h->gpu_id, 1, &n_success), EINVAL, n_success);
	bo_map(fx, h);
	bo_unmap(fx, h);
	n_success = 0;
	REFUSED(gc_kfd_unmap(fx->dev.kfd, h->handle, &h->gpu_id, 1, &n_success), EINVAL, n_success);
	bo_free(fx, h);
}

/*
 * kfd_chardev.c, map and unmap: `if (!args->n_devices)` ... `Device IDs array
 * empty` ... `return -EINVAL;` and `n_success exceeds n_devices` -> -EINVAL
 * [src torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 29633d0e204d].
 * Neither maps anything: the BO then frees at once (free of a mapped BO is
 * -EBUSY, see free-while-mapped).
 */
GC_KFD_GPU_SUBTEST(test_map_empty_list, struct mem_fx, fx, gpu)
{
	struct held *h = bo_alloc(fx, gpu->node.gpu_id, BO_SIZE, VRAM);
	uint32_t n_success = 0;

	REFUSED(gc_kfd_map(fx->dev.kfd, h->handle, &h->gpu_id, 0, &n_success), EINVAL, n_success);
	gc_assert_errno(gc_kfd_map(fx->dev.kfd, h->handle, NULL, 0, &n_success), EINVAL);
	gc_assert_errno(gc_kfd_unmap(fx->dev.kfd, h->handle, &h->gpu_id, 0, &n_success), EINVAL);
	n_success = 2;
	gc_assert_errno(gc_kfd_map(fx->dev.kfd, h->handle, &h->gpu_id, 1, &n_success), EINVAL);
	gc_assert_eq_uint(n_success, 2);
	bo_free(fx, h);
}

/*
 * kfd_ioctl.h: n_success "[...] It can be passed into a subsequent retry
 * call to skip those devices." [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]. n_success = n_devices = 1 skips the only device: the
 * call succeeds, n_success stays 1, and nothing was mapped (the BO frees).
 */
GC_KFD_GPU_SUBTEST(test_map_resume_skips, struct mem_fx, fx, gpu)
{
	struct held *h = bo_alloc(fx, gpu->node.gpu_id, BO_SIZE, VRAM);
	uint32_t n_success = 1;

	gc_assert_ok(gc_kfd_map(fx->dev.kfd, h->handle, &h->gpu_id, 1, &n_success));
	gc_assert_eq_uint(n_success, 1);
	bo_free(fx, h);
}

/* ---------------------------------------------------------- acquire VM */

/*
 * kfd_chardev.c acquire_vm: `drm_file = fget(args->drm_fd); if (!drm_file)
 * return -EINVAL;` and once acquired `ret = pdd->drm_file == drm_file ? 0 :
 * -EBUSY;`. A dup() shares the struct file; a new open() does not.
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9]
 */
GC_KFD_GPU_SUBTEST(test_acquire_vm_again, struct mem_fx, fx, gpu)
{
	struct kfd_ioctl_acquire_vm_args v = { .gpu_id = gpu->node.gpu_id };
	char path[64];
	int fd2, dupfd, closed;

	gc_assert(gpu->vm_acquired);
	v.drm_fd = (uint32_t)gpu->drm_fd;
	gc_assert_ok(gc_kfd_ioctl(fx->dev.kfd, AMDKFD_IOC_ACQUIRE_VM, &v));
	dupfd = dup(gpu->drm_fd);
	gc_assert_syscall(dupfd);
	v.drm_fd = (uint32_t)dupfd;
	gc_assert_ok(gc_kfd_ioctl(fx->dev.kfd, AMDKFD_IOC_ACQUIRE_VM, &v));
	close(dupfd);
	snprintf(path, sizeof(path), "/dev/dri/renderD%d", gpu->node.drm_render_minor);
	fd2 = open(path, O_RDWR | O_CLOEXEC);
	gc_assert_f(fd2 >= 0, "%s: %s", path, strerror(errno));
	v.drm_fd = (uint32_t)fd2;
	gc_assert_errno(gc_kfd_ioctl(fx->dev.kfd, AMDKFD_IOC_ACQUIRE_VM, &v), EBUSY);
	close(fd2);
	closed = fd2; /* just closed, and nothing opened since on this thread */
	v.drm_fd = (uint32_t)closed;
	gc_assert_errno(gc_kfd_ioctl(fx->dev.kfd, AMDKFD_IOC_ACQUIRE_VM, &v), EINVAL);
}

/* ------------------------------------------------------- accounting */

/*
 * Header silent on what AMDKFD_IOC_AVAILABLE_MEMORY counts. Per
 * amdgpu_amdkfd_gpuvm.c (read, not run): available = real VRAM size -
 * vram_used_aligned - pinned - reserved, ALIGN_DOWN to
 * VRAM_AVAILABLITY_ALIGN (2 MiB), and a VRAM allocation adds
 * ALIGN(size, VRAM_AVAILABLITY_ALIGN) to vram_used_aligned. A 64 MiB VRAM
 * BO so lowers it by exactly 64 MiB on a dGPU (nothing else allocating).
 */
GC_KFD_GPU_SUBTEST(test_available_accounting, struct mem_fx, fx, gpu)
{
	uint64_t before, during, after;
	struct held *h;

	require_dgpu(gpu, "exact VRAM accounting");
	gc_assert_ok(gc_kfd_available(fx->dev.kfd, gpu->node.gpu_id, &before));
	gc_require_f(before >= 2 * ACCOUNT_SIZE, "gpu %u: %" PRIu64 " bytes available",
		     gpu->node.gpu_id, before);
	gc_check_cmpuint(before, <=, gc_kfd_node_vram_bytes(&gpu->node));
	h = bo_alloc(fx, gpu->node.gpu_id, ACCOUNT_SIZE, VRAM);
	gc_assert_ok(gc_kfd_available(fx->dev.kfd, gpu->node.gpu_id, &during));
	gc_check_eq_uint(before - during, ACCOUNT_SIZE);
	bo_free(fx, h);
	gc_assert_ok(gc_kfd_available(fx->dev.kfd, gpu->node.gpu_id, &after));
	gc_check_eq_uint(after, before);
}

/*
 * amdgpu_amdkfd_reserve_mem_limit: a VRAM request past what
 * get_available_memory reports (the same bound, aligned down) -> -ENOMEM,
 * and nothing is accounted.
 */
GC_KFD_GPU_SUBTEST(test_alloc_over_available, struct mem_fx, fx, gpu)
{
	uint64_t avail, after, handle = 0, size, va = 0;
	int err;

	require_dgpu(gpu, "exact VRAM accounting");
	gc_assert_ok(gc_kfd_available(fx->dev.kfd, gpu->node.gpu_id, &avail));
	size = avail + BO_ALIGN;
	gc_assert_ok(gc_kfd_va_reserve(fx->dev.kfd, size, BO_ALIGN, &va));
	err = gc_kfd_alloc(fx->dev.kfd, gpu->node.gpu_id, size, va, VRAM, &handle, NULL);
	if (!err)
		gc_kfd_free(fx->dev.kfd, handle);
	gc_kfd_va_release(va, size);
	gc_assert_errno(err, ENOMEM);
	gc_assert_ok(gc_kfd_available(fx->dev.kfd, gpu->node.gpu_id, &after));
	gc_assert_eq_uint(after, avail);
}

/* ----------------------------------------------------------- latency */

enum lat_op { L_ALLOC, L_MAP, L_UNMAP, L_FREE, L_AVAIL, L_N };
static const char *const lat_names[L_N] = {
	"ALLOC_MEMORY_OF_GPU", "MAP_MEMORY_TO_GPU", "UNMAP_MEMORY_FROM_GPU",
	"FREE_MEMORY_OF_GPU", "AVAILABLE_MEMORY",
};

static double us_since(uint64_t t0)
{
	return (double)(gc_now_raw_ns() - t0) / 1000.0;
}

static void lat_round(struct mem_fx *fx, struct held *h, uint32_t flags, double *s)
{
	uint32_t n_success = 0;
	uint64_t t0, avail;

	t0 = gc_now_raw_ns();
	gc_assert_ok(gc_kfd_alloc(fx->dev.kfd, h->gpu_id, h->size, h->va, flags, &h->handle, NULL));
	s[L_ALLOC] = us_since(t0);
	h->live = true;
	t0 = gc_now_raw_ns();
	gc_assert_ok(gc_kfd_map(fx->dev.kfd, h->handle, &h->gpu_id, 1, &n_success));
	s[L_MAP] = us_since(t0);
	h->gpu_mapped = true;
	n_success = 0;
	t0 = gc_now_raw_ns();
	gc_assert_ok(gc_kfd_unmap(fx->dev.kfd, h->handle, &h->gpu_id, 1, &n_success));
	s[L_UNMAP] = us_since(t0);
	h->gpu_mapped = false;
	t0 = gc_now_raw_ns();
	gc_assert_ok(gc_kfd_free(fx->dev.kfd, h->handle));
	s[L_FREE] = us_since(t0);
	h->live = false;
	t0 = gc_now_raw_ns();
	gc_assert_ok(gc_kfd_available(fx->dev.kfd, h->gpu_id, &avail));
	s[L_AVAIL] = us_since(t0);
}

static void lat_kind(struct mem_fx *fx, struct gc_kfd_gpu *g, uint32_t flags, const char *label)
{
	static double s[L_N][LAT_REPS];
	struct held *h = bo_prepare(fx, g->node.gpu_id, BO_SIZE, flags);
	double one[L_N];
	char name[96];

	lat_round(fx, h, flags, one); /* warm-up: first-use work is not a sample */
	for (int i = 0; i < LAT_REPS; i++) {
		lat_round(fx, h, flags, one);
		for (int op = 0; op < L_N; op++)
			s[op][i] = one[op];
	}
	bo_release_host(h);
	for (int op = 0; op < L_N; op++) {
		snprintf(name, sizeof(name), "%s-%s-2MiB", lat_names[op], label);
		gc_metric(name, "us", GC_LOWER_IS_BETTER, s[op], LAT_REPS);
	}
}

GC_KFD_GPU_SUBTEST(test_latency, struct mem_fx, fx, gpu)
{
	lat_kind(fx, gpu, VRAM, "vram");
	lat_kind(fx, gpu, GTT, "gtt");
}

/* ----------------------------------------------------------- fixture */

static void *mem_setup(void)
{
	struct gc_kfd *kfd = gc_kfd_require();
	struct mem_fx *fx = gc_kfd_fixture_new(kfd, sizeof(*fx), 0);

	fx->page = (uint64_t)sysconf(_SC_PAGESIZE);
	gc_info("KFD UAPI %u.%u, %u GPU(s)", kfd->major, kfd->minor, kfd->n_gpus);
	for (unsigned i = 0; i < kfd->n_gpus; i++) {
		const struct gc_kfd_gpu *g = &kfd->gpus[i];

		gc_info("gpu %u: node %u, renderD%d, gfx %u, VRAM %" PRIu64 " MiB (%s BAR%s), "
			"GPUVM 0x%" PRIx64 "-0x%" PRIx64, g->node.gpu_id, g->node.node_id,
			g->node.drm_render_minor, g->node.gfx_target_version,
			gc_kfd_node_vram_bytes(&g->node) / MiB,
			node_large_bar(&g->node) ? "large" : "small",
			node_is_apu(&g->node) ? ", APU" : "", g->gpuvm_base, g->gpuvm_limit);
	}
	return fx;
}

static const struct gc_fixture fixture = {
	.setup = mem_setup,
	.teardown = gc_kfd_fixture_free,
	.before_each = gc_kfd_fixture_snapshot,
	.after_each = gc_kfd_fixture_check,
};

static const struct gc_subtest subtests[] = {
	{ "lifecycle-vram", test_lifecycle_vram,
	  "VRAM alloc, map (n_success == n_devices), unmap, free; distinct handles" },
	{ "lifecycle-vram-cpu", test_lifecycle_vram_cpu,
	  "host-visible VRAM (large BAR): CPU map at mmap_offset, data through a second mapping" },
	{ "lifecycle-gtt", test_lifecycle_gtt,
	  "GTT alloc, CPU map at mmap_offset, GPU map, data through a second mapping, free" },
	{ "lifecycle-userptr", test_lifecycle_userptr,
	  "USERPTR over host pages: alloc, map, CPU writes, unmap, free keep the data" },
	{ "vram-public-small-bar", test_vram_public_small_bar,
	  "host-visible VRAM on a small-BAR dGPU: EINVAL" },
	{ "alloc-invalid", test_alloc_invalid,
	  "size 0, unknown gpu_id, USERPTR at 0, no memory type: EINVAL, nothing allocated" },
	{ "invalid-handle", test_invalid_handle,
	  "free/map/unmap of handles never returned: EINVAL, n_success 0" },
	{ "double-free", test_double_free,
	  "second free: EINVAL; map/unmap of the freed handle: ENOMEM (per kfd_chardev.c)" },
	{ "free-while-mapped", test_free_while_mapped,
	  "free of a mapped BO: EBUSY, the handle still unmaps and frees" },
	{ "unmap-unmapped", test_unmap_unmapped,
	  "unmap of a never-mapped and of an already-unmapped BO: EINVAL, n_success 0" },
	{ "map-empty-list", test_map_empty_list,
	  "map/unmap with no device, n_success > n_devices: EINVAL, nothing mapped" },
	{ "map-resume-skips", test_map_resume_skips,
	  "n_success = n_devices skips every device: success, nothing mapped" },
	{ "acquire-vm-again", test_acquire_vm_again,
	  "ACQUIRE_VM: same file 0, dup 0, another open EBUSY, closed fd EINVAL" },
	{ "available-accounting", test_available_accounting,
	  "a 64 MiB VRAM BO lowers AVAILABLE_MEMORY by exactly 64 MiB, free restores it" },
	{ "alloc-over-available", test_alloc_over_available,
	  "VRAM request past AVAILABLE_MEMORY: ENOMEM, nothing accounted" },
	{ "latency", test_latency,
	  "alloc/map/unmap/free/available latency, 2 MiB VRAM and GTT (metrics)" },
	{ 0 }
};

GC_MAIN(.name = "kfd_mem", .description = "KFD memory lifecycle on raw ioctls",
	.subtests = subtests, .fixture = &fixture)
