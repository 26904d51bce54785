// SPDX-License-Identifier: MIT
/*
 * kfd_svm: the svm contract on AMDKFD_IOC_SVM (KFD UAPI 1.5): attributes of
 * a process address range are set per device and read back exactly, the
 * documented aggregation rules of GET_ATTR hold, ranges split as
 * documented, and invalid ranges / attributes are rejected without effect.
 *
 * Where the expectations come from. <linux/kfd_ioctl.h> documents the
 * attribute semantics (quoted at each check). Error codes, defaults and the
 * page-alignment rules are not in the header; they come from the kernel
 * source, read, not run (no AMD GPU was available when this was written):
 * kfd_chardev.c (kfd_ioctl_svm) and kfd_svm.c (svm_range_check_attr,
 * svm_range_is_valid, svm_range_get_attr, svm_range_set_default_attributes).
 * How the variable-length attrs[] reach the kernel is not in the header
 * either; see gc_kfd_svm() (request size = fixed part + attrs, as libhsakmt
 * does it).
 *
 * Ranges: anonymous read-write memory mapped over a gc_kfd_va_reserve()
 * range (so it lies inside every GPU's GPUVM aperture), pages touched.
 * Every subtest unmaps what it made; the MMU notifier removes the SVM
 * ranges and migrated VRAM is freed asynchronously (kfd_svm.c), so the
 * leak check waits up to LEAK_SETTLE_MS for AVAILABLE_MEMORY to come back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core.h"
#include "gc_kfd.h"
#include "io.h"
#include "srcver.h"

#define RANGE_SIZE (6 * MiB) /* three 2 MiB thirds */
#define RANGE_ALIGN (2 * MiB)
#define MAX_RANGES 4
#define LEAK_SETTLE_MS 2000

#define LOC_UNDEF KFD_IOCTL_SVM_LOCATION_UNDEFINED
#define LOC_SYSMEM KFD_IOCTL_SVM_LOCATION_SYSMEM
/* kfd_svm.c, svm_range_set_default_attributes: HOST_ACCESS | COHERENT. */
#define DEFAULT_FLAGS (KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT)

struct svm_fx {
	struct gc_kfd_fixture dev; /* first: /dev/kfd and the leak check (lib/kfd) */
	bool xnack;     /* AMDKFD_IOC_SET_XNACK_MODE query (-1): the process mode */
	uint64_t page;
	struct { uint64_t va, size; } ranges[MAX_RANGES];
};

typedef struct kfd_ioctl_svm_attribute attr_t;

/* ------------------------------------------------------------ helpers */

/* A touched read-write range inside the GPUs' VA window; undone in after_each. */
static uint64_t range_new(struct svm_fx *fx, uint64_t size)
{
	uint64_t va = 0;
	void *p;

	for (int i = 0; i < MAX_RANGES; i++) {
		if (fx->ranges[i].va)
			continue;
		gc_assert_ok(gc_kfd_va_reserve(fx->dev.kfd, size, RANGE_ALIGN, &va));
		p = mmap((void *)(uintptr_t)va, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED) {
			gc_kfd_va_release(va, size);
			gc_fail("mmap(0x%" PRIx64 ", %" PRIu64 ") read-write: %s", va, size,
				strerror(errno));
		}
		fx->ranges[i].va = va;
		fx->ranges[i].size = size;
		return va;
	}
	gc_fail("more than %d ranges held at once", MAX_RANGES);
}

static void ranges_release(struct svm_fx *fx)
{
	for (int i = 0; i < MAX_RANGES; i++) {
		if (fx->ranges[i].va)
			munmap((void *)(uintptr_t)fx->ranges[i].va, fx->ranges[i].size);
		fx->ranges[i].va = 0;
	}
}

static bool gpu_svm_capable(const struct gc_kfd_gpu *g)
{
	return g->node.capability & GC_KFD_CAP_SVMAPI_SUPPORTED;
}

static void require_svm_gpu(const struct gc_kfd_gpu *g)
{
	gc_require_f(gpu_svm_capable(g), "gpu %u: topology capability 0x%x lacks "
		     "HSA_CAP_SVMAPI_SUPPORTED (0x%x): kfd_svm.c refuses it (\"GPU ... not "
		     "supported\")", g->node.gpu_id, g->node.capability,
		     GC_KFD_CAP_SVMAPI_SUPPORTED);
}

static uint32_t get1(struct svm_fx *fx, uint64_t va, uint64_t size, uint32_t type)
{
	attr_t a = { .type = type, .value = 0 };

	gc_assert_ok(gc_kfd_svm_get(fx->dev.kfd, va, size, &a, 1));
	gc_assert_eq_uint(a.type, type); /* only ACCESS queries rewrite the type */
	return a.value;
}

static void set1(struct svm_fx *fx, uint64_t va, uint64_t size, uint32_t type, uint32_t value)
{
	attr_t a = { .type = type, .value = value };

	gc_assert_ok(gc_kfd_svm_set(fx->dev.kfd, va, size, &a, 1));
}

/*
 * kfd_ioctl.h: "Querying of accessibility attributes works by initializing
 * the attribute type to @KFD_IOCTL_SVM_ATTR_ACCESS and the value to the
 * GPUID being queried. [...] The ioctl function overwrites the attribute
 * type to indicate the access for the specified GPU."
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
 */
static uint32_t access_of(struct svm_fx *fx, uint64_t va, uint64_t size, uint32_t gpu_id)
{
	attr_t a = { .type = KFD_IOCTL_SVM_ATTR_ACCESS, .value = gpu_id };

	gc_assert_ok(gc_kfd_svm_get(fx->dev.kfd, va, size, &a, 1));
	gc_assert_eq_uint(a.value, gpu_id);
	return a.type;
}

/*
 * What a GPU not named in any ACCESS attribute has: kfd_svm.c gives a new
 * range (and the no-range default) the process's supported GPUs when XNACK
 * is on (svm_range_new: `if (p->xnack_enabled)
 * bitmap_copy(prange->bitmap_access, svms->bitmap_supported,
 * MAX_GPU_INSTANCE);`), none when it is off.
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_svm.c @ 05e1afc54608]
 */
static uint32_t default_access(const struct svm_fx *fx, const struct gc_kfd_gpu *g)
{
	return fx->xnack && gpu_svm_capable(g) ? KFD_IOCTL_SVM_ATTR_ACCESS :
						 KFD_IOCTL_SVM_ATTR_NO_ACCESS;
}

/* ---------------------------------------------------------- defaults */

/*
 * A range never set reads back the defaults of kfd_svm.c's
 * svm_range_set_default_attributes (header silent): preferred and prefetch
 * location KFD_IOCTL_SVM_LOCATION_UNDEFINED, flags HOST_ACCESS | COHERENT,
 * granularity at most 0x1B (svm_range_list_init: `Value of default
 * granularity cannot exceed 0x1B, the number of pages supported by a
 * 4-level paging table`); CLR_FLAGS is the NOR of the flags (kfd_ioctl.h:
 * "That means, a flag will be set in the output, if that flag is clear for
 * all pages in the range.").
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_svm.c @ 05e1afc54608]
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
 */
static void test_defaults(void *data)
{
	struct svm_fx *fx = data;
	uint64_t va = range_new(fx, RANGE_SIZE);

	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), LOC_UNDEF);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC), LOC_UNDEF);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_SET_FLAGS), DEFAULT_FLAGS);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_CLR_FLAGS),
			 (uint32_t)~DEFAULT_FLAGS);
	gc_check_cmpuint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_GRANULARITY), <=, 0x1B);
	for (unsigned i = 0; i < fx->dev.kfd->n_gpus; i++) {
		const struct gc_kfd_gpu *g = &fx->dev.kfd->gpus[i];

		gc_check_eq_uint(access_of(fx, va, RANGE_SIZE, g->node.gpu_id),
				 default_access(fx, g));
	}
}

/* ------------------------------------------------------------ set/get */

/*
 * The granularity clamp is version-dependent: svm_range_apply_attrs stores
 * `min_t(uint32_t, attrs[i].value, 0x3F)` since `drm/amdkfd: Fix shift
 * out-of-bounds issue` (282c1d793076, mainline 6.7, backported to stable
 * series) [src torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_svm.c @
 * 282c1d793076]; before it `attrs[i].value` was stored as given in the u8
 * field. The release is read with uname: from 6.7 the clamp is the promise;
 * before, either, and the output says which this kernel has
 * (lib/srcver.h).
 */
static void set_get_granularity(struct svm_fx *fx, uint64_t va)
{
	struct gc_svm_gran_rule r;
	struct utsname u;
	unsigned ma, mi, got;

	gc_assert_syscall(uname(&u));
	gc_assert_f(gc_kernel_release_parse(u.release, &ma, &mi) == 0,
		    "kernel release %s is not MAJOR.MINOR...", u.release);
	r = gc_svm_granularity_rule(ma, mi, 200);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_GRANULARITY, 200);
	got = get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_GRANULARITY);
	gc_info("kernel %s: %s; granularity 200 read back as %u (%s)", u.release, r.why, got,
		got == r.clamped ? "clamped" : got == r.as_given ? "as given" : "neither");
	if (r.either)
		gc_check_f(got == r.clamped || got == r.as_given, "granularity 200 read back as %u, "
			   "want %u (clamped) or %u (as given) on %s", got, r.clamped, r.as_given,
			   u.release);
	else
		gc_check_f(got == r.clamped, "granularity 200 read back as %u, want %u (clamped) "
			   "on %s", got, r.clamped, u.release);
}

/*
 * Every attribute set on a whole range reads back exactly
 * (svm_range_apply_attrs stores each value; GET over one uniform range
 * returns it). SET_FLAGS adds to and CLR_FLAGS removes from the defaults.
 */
GC_KFD_GPU_SUBTEST(test_set_get, struct svm_fx, fx, gpu)
{
	uint32_t id = gpu->node.gpu_id;
	uint64_t va;
	const uint32_t want_flags = KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_GPU_RO |
				    KFD_IOCTL_SVM_FLAG_GPU_EXEC;
	attr_t set[] = {
		{ KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, id },
		{ KFD_IOCTL_SVM_ATTR_ACCESS, id },
		{ KFD_IOCTL_SVM_ATTR_SET_FLAGS,
		  KFD_IOCTL_SVM_FLAG_GPU_RO | KFD_IOCTL_SVM_FLAG_GPU_EXEC },
		{ KFD_IOCTL_SVM_ATTR_CLR_FLAGS, KFD_IOCTL_SVM_FLAG_COHERENT },
		{ KFD_IOCTL_SVM_ATTR_GRANULARITY, 4 },
	};
	attr_t get[] = {
		{ KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 0 },
		{ KFD_IOCTL_SVM_ATTR_ACCESS, id },
		{ KFD_IOCTL_SVM_ATTR_SET_FLAGS, 0 },
		{ KFD_IOCTL_SVM_ATTR_CLR_FLAGS, 0 },
		{ KFD_IOCTL_SVM_ATTR_GRANULARITY, 0 },
	};

	require_svm_gpu(gpu);
	va = range_new(fx, RANGE_SIZE);
	gc_assert_ok(gc_kfd_svm_set(fx->dev.kfd, va, RANGE_SIZE, set, 5));
	gc_assert_ok(gc_kfd_svm_get(fx->dev.kfd, va, RANGE_SIZE, get, 5));
	gc_assert_eq_uint(get[0].value, id);
	gc_assert_eq_uint(get[1].type, KFD_IOCTL_SVM_ATTR_ACCESS);
	gc_assert_eq_uint(get[1].value, id);
	gc_assert_eq_uint(get[2].value, want_flags);
	gc_assert_eq_uint(get[3].value, (uint32_t)~want_flags);
	gc_assert_eq_uint(get[4].value, 4);
	/* Other GPUs keep what a new range gives them. */
	for (unsigned i = 0; i < fx->dev.kfd->n_gpus; i++) {
		const struct gc_kfd_gpu *g = &fx->dev.kfd->gpus[i];

		if (g != gpu)
			gc_check_eq_uint(access_of(fx, va, RANGE_SIZE, g->node.gpu_id),
					 default_access(fx, g));
	}
	/*
	 * The three access kinds (header: `@KFD_IOCTL_SVM_ATTR_NO_ACCESS: specify
	 * memory access for the gpuid given by the attribute value`).
	 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
	 */
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, id);
	gc_check_eq_uint(access_of(fx, va, RANGE_SIZE, id), KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_NO_ACCESS, id);
	gc_check_eq_uint(access_of(fx, va, RANGE_SIZE, id), KFD_IOCTL_SVM_ATTR_NO_ACCESS);
	/*
	 * Header: `@KFD_IOCTL_SVM_ATTR_PREFERRED_LOC: gpuid of the preferred
	 * location, 0 for system memory`; UNDEFINED leaves it unspecified.
	 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
	 */
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, LOC_SYSMEM);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), LOC_SYSMEM);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, LOC_UNDEF);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), LOC_UNDEF);
	set_get_granularity(fx, va);
}

/*
 * Header: `@KFD_IOCTL_SVM_ATTR_PREFETCH_LOC: gpuid of the prefetch location, 0 for
 * system memory. Setting this triggers an immediate prefetch (migration).`
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1] The value reads back,
 * and the range's bytes survive the round trip to the GPU and back (the CPU reads
 * them after each migration).
 */
GC_KFD_GPU_SUBTEST(test_prefetch, struct svm_fx, fx, gpu)
{
	uint32_t id = gpu->node.gpu_id;
	struct gc_mismatch mm;
	char msg[160];
	uint64_t va;
	void *p;

	require_svm_gpu(gpu);
	va = range_new(fx, RANGE_SIZE);
	p = (void *)(uintptr_t)va;
	gc_pattern_fill(p, RANGE_SIZE, 0, id);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_ACCESS, id);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, id);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC), id);
	gc_assert_f(gc_pattern_check(p, RANGE_SIZE, 0, id, &mm) < 0, "after prefetch to gpu %u: %s",
		    id, gc_mismatch_str(&mm, msg, sizeof(msg)));
	gc_pattern_fill_inv(p, RANGE_SIZE, 0, id);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, id);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, LOC_SYSMEM);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC), LOC_SYSMEM);
	gc_assert_f(gc_pattern_check_inv(p, RANGE_SIZE, 0, id, &mm) < 0,
		    "after prefetch to system memory: %s", gc_mismatch_str(&mm, msg, sizeof(msg)));
}

/* ------------------------------------------------- aggregation, split */

/*
 * kfd_ioctl.h, GET_ATTR over pages that differ: "If different pages have
 * different preferred or prefetch locations, 0xffffffff will be returned for
 * @KFD_IOCTL_SVM_ATTR_PREFERRED_LOC or @KFD_IOCTL_SVM_ATTR_PREFETCH_LOC
 * resepctively." "For @KFD_IOCTL_SVM_ATTR_SET_FLAGS, flags of all pages will
 * be aggregated by bitwise AND." "For @KFD_IOCTL_SVM_ATTR_CLR_FLAGS, flags of
 * all pages will be aggregated by bitwise NOR." "The minimum migration
 * granularity throughout the range will be returned for
 * @KFD_IOCTL_SVM_ATTR_GRANULARITY." [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
 * Each half on its own reads back its own values.
 */
GC_KFD_GPU_SUBTEST(test_intersection, struct svm_fx, fx, gpu)
{
	uint32_t id = gpu->node.gpu_id;
	const uint64_t half = RANGE_SIZE / 2;
	uint64_t va;
	attr_t lo[] = {
		{ KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, id },
		{ KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, id },
		{ KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_FLAG_GPU_EXEC },
		{ KFD_IOCTL_SVM_ATTR_GRANULARITY, 3 },
	};
	attr_t hi[] = {
		{ KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, LOC_SYSMEM },
		{ KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, LOC_SYSMEM },
		{ KFD_IOCTL_SVM_ATTR_CLR_FLAGS, KFD_IOCTL_SVM_FLAG_GPU_EXEC },
		{ KFD_IOCTL_SVM_ATTR_GRANULARITY, 6 },
	};
	uint32_t set_and, clr_nor;

	require_svm_gpu(gpu);
	va = range_new(fx, RANGE_SIZE);
	gc_assert_ok(gc_kfd_svm_set(fx->dev.kfd, va, half, lo, 4));
	gc_assert_ok(gc_kfd_svm_set(fx->dev.kfd, va + half, half, hi, 4));
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), LOC_UNDEF);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC), LOC_UNDEF);
	set_and = get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_SET_FLAGS);
	clr_nor = get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_CLR_FLAGS);
	gc_assert_eq_uint(set_and, DEFAULT_FLAGS);  /* GPU_EXEC is set on one half only */
	gc_assert_eq_uint(clr_nor, (uint32_t)~(DEFAULT_FLAGS | KFD_IOCTL_SVM_FLAG_GPU_EXEC));
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_GRANULARITY), 3);
	/* Each half alone. */
	gc_check_eq_uint(get1(fx, va, half, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), id);
	gc_check_eq_uint(get1(fx, va + half, half, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), LOC_SYSMEM);
	gc_check_eq_uint(get1(fx, va, half, KFD_IOCTL_SVM_ATTR_SET_FLAGS),
			 DEFAULT_FLAGS | KFD_IOCTL_SVM_FLAG_GPU_EXEC);
	gc_check_eq_uint(get1(fx, va + half, half, KFD_IOCTL_SVM_ATTR_GRANULARITY), 6);
}

/*
 * kfd_ioctl.h, SET_ATTR: "It may overlap existing virtual address ranges.
 * If it does, the existing ranges will be split such that the attribute
 * changes only apply to the specified address range."
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
 */
GC_KFD_GPU_SUBTEST(test_split, struct svm_fx, fx, gpu)
{
	uint32_t id = gpu->node.gpu_id;
	const uint64_t third = RANGE_SIZE / 3;
	uint64_t va;

	require_svm_gpu(gpu);
	va = range_new(fx, RANGE_SIZE);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, id);
	set1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_ACCESS, id);
	set1(fx, va + third, third, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, LOC_SYSMEM);
	set1(fx, va + third, third, KFD_IOCTL_SVM_ATTR_NO_ACCESS, id);
	gc_check_eq_uint(get1(fx, va, third, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), id);
	gc_check_eq_uint(get1(fx, va + third, third, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC),
			 LOC_SYSMEM);
	gc_check_eq_uint(get1(fx, va + 2 * third, third, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), id);
	gc_check_eq_uint(access_of(fx, va, third, id), KFD_IOCTL_SVM_ATTR_ACCESS);
	gc_check_eq_uint(access_of(fx, va + third, third, id), KFD_IOCTL_SVM_ATTR_NO_ACCESS);
	gc_check_eq_uint(access_of(fx, va + 2 * third, third, id), KFD_IOCTL_SVM_ATTR_ACCESS);
	/* A page at each inner boundary belongs to its own third. */
	gc_check_eq_uint(get1(fx, va + third - fx->page, fx->page,
			      KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), id);
	gc_check_eq_uint(get1(fx, va + third, fx->page, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC),
			 LOC_SYSMEM);
	gc_check_eq_uint(get1(fx, va + 2 * third, fx->page, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC),
			 id);
}

/* ------------------------------------------------------------ invalid */

/* SET and GET of one PREFERRED_LOC attribute on [start, start + size) must give -err. */
static void expect_range_err(struct svm_fx *fx, uint64_t start, uint64_t size, int err,
			     const char *what)
{
	attr_t a = { KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, LOC_SYSMEM };
	int got = gc_kfd_svm_set(fx->dev.kfd, start, size, &a, 1);

	gc_assert_f(got == -err, "SET %s [0x%" PRIx64 ", +0x%" PRIx64 "): %d (%s), want -%d",
		    what, start, size, got, strerror(-got), err);
	got = gc_kfd_svm_get(fx->dev.kfd, start, size, &a, 1);
	gc_assert_f(got == -err, "GET %s [0x%" PRIx64 ", +0x%" PRIx64 "): %d (%s), want -%d",
		    what, start, size, got, strerror(-got), err);
}

/*
 * SVM over a KFD allocation's VA. kfd_svm.c, svm_range_check_vm: "The purpose is
 * to avoid virtual address ranges already allocated by
 * kfd_ioctl_alloc_memory_of_gpu ioctl." `-EADDRINUSE - if address is mapped
 * already by kfd_ioctl_alloc_memory_of_gpu`
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_svm.c @ 05e1afc54608]; it looks
 * at the GPU VMs' mappings, which a BO gets when it is mapped (kfd_mem_attach on
 * MAP_MEMORY_TO_GPU), so the BO is mapped first. The PROT_NONE VA reservation
 * under it is an ordinary VMA.
 */
static int svm_over_bo(struct svm_fx *fx, struct gc_kfd_gpu *g)
{
	const uint32_t gtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
	attr_t a = { KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, LOC_SYSMEM };
	uint64_t bo_va = 0, handle = 0;
	uint32_t id = g->node.gpu_id;
	int err, got;

	gc_assert_ok(gc_kfd_va_reserve(fx->dev.kfd, RANGE_ALIGN, RANGE_ALIGN, &bo_va));
	err = gc_kfd_alloc(fx->dev.kfd, id, RANGE_ALIGN, bo_va, gtt, &handle, NULL);
	if (!err)
		err = gc_kfd_map(fx->dev.kfd, handle, &id, 1, NULL);
	got = err ? 0 : gc_kfd_svm_set(fx->dev.kfd, bo_va, RANGE_ALIGN, &a, 1);
	gc_kfd_unmap(fx->dev.kfd, handle, &id, 1, NULL);
	if (handle)
		gc_kfd_free(fx->dev.kfd, handle);
	gc_kfd_va_release(bo_va, RANGE_ALIGN);
	if (err)
		gc_fail("GTT BO for the EADDRINUSE case (alloc, map): %s", strerror(-err));
	return got;
}

/*
 * The other way round, kfd_chardev.c, alloc_memory_of_gpu: a VA inside an
 * SVM range gives `Address: 0x%llx already allocated by SVM` -> -EADDRINUSE.
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9]
 */
static int bo_over_svm(struct svm_fx *fx, struct gc_kfd_gpu *g, uint64_t va)
{
	const uint32_t gtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
	uint64_t handle = 0;
	int err;

	set1(fx, va, RANGE_ALIGN, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, LOC_SYSMEM);
	err = gc_kfd_alloc(fx->dev.kfd, g->node.gpu_id, RANGE_ALIGN, va, gtt, &handle, NULL);
	if (!err)
		gc_kfd_free(fx->dev.kfd, handle);
	return err;
}

/*
 * kfd_chardev.c, kfd_ioctl_svm: `if ((args->start_addr & ~PAGE_MASK) ||
 * (args->size & ~PAGE_MASK)) return -EINVAL; if (!args->start_addr || !args->size)
 * return -EINVAL;`
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9].
 * kfd_svm.c, svm_range_is_valid (`Valid virtual address range means it belongs to
 * one or more VMAs`): `if (!vma || (vma->vm_flags & device_vma)) return -EFAULT;`
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_svm.c @ 05e1afc54608]. (Header
 * silent on all of these.) The valid range next to them is unchanged afterwards.
 */
static void test_invalid_ranges(void *data)
{
	struct svm_fx *fx = data;
	uint64_t va = range_new(fx, RANGE_SIZE), pg = fx->page, hole = 0;
	struct gc_kfd_gpu *g = &fx->dev.kfd->gpus[0];

	expect_range_err(fx, 0, pg, EINVAL, "start 0");
	expect_range_err(fx, va, 0, EINVAL, "size 0");
	expect_range_err(fx, va + 1, pg, EINVAL, "unaligned start");
	expect_range_err(fx, va, pg + 1, EINVAL, "unaligned size");
	gc_assert_ok(gc_kfd_va_reserve(fx->dev.kfd, RANGE_SIZE, RANGE_ALIGN, &hole));
	gc_assert_ok(gc_kfd_va_release(hole, RANGE_SIZE));
	expect_range_err(fx, hole, RANGE_SIZE, EFAULT, "unmapped");
	/* Partly mapped: the last page of the range and the next, unmapped one. */
	gc_assert_syscall(munmap((void *)(uintptr_t)(va + RANGE_SIZE - pg), pg));
	expect_range_err(fx, va + RANGE_SIZE - 2 * pg, 2 * pg, EFAULT, "partly unmapped");
	/* No visible effect on the valid range. */
	gc_check_eq_uint(get1(fx, va, pg, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), LOC_UNDEF);
	/* A kernel that refuses neither may carry the amd-gfx proposal that drops the rule. */
	gc_info("SVM over a mapped BO and a BO over SVM: -EADDRINUSE in mainline; an amd-gfx "
		"proposal (merged in no tree read) drops it");
	gc_assert_errno(svm_over_bo(fx, g), EADDRINUSE);
	gc_assert_errno(bo_over_svm(fx, g, va), EADDRINUSE);
}

/* Where a refused attribute's value comes from. */
enum refused_value {
	AS_WRITTEN,  /* the row's value */
	UNKNOWN_GPU, /* a gpuid the process does not have */
	THIS_GPU,    /* the subtest's GPU */
};
#define REFUSED_BY_SET 1u
#define REFUSED_BY_GET 2u

/*
 * kfd_ioctl.h: "If unknown attributes are given, the function returns -EINVAL."
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1] kfd_svm.c (header
 * silent): svm_range_check_attr rejects a gpuid the process does not have for
 * PREFERRED_LOC, PREFETCH_LOC (only SYSMEM is exempt there, so UNDEFINED is
 * refused too) and the access types; GET accepts only ACCESS among the access
 * types (`get invalid attr type 0x%x`) and refuses an unknown gpuid in it;
 * svm_ioctl refuses an unknown op. A refused SET changes nothing: the check runs
 * before any range is touched.
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_svm.c @ 05e1afc54608]
 *
 * Each attribute alone, refused with -EINVAL by SET, GET or both (in this order):
 */
static const struct refused_attr {
	uint32_t type;
	enum refused_value from;
	uint32_t value; /* AS_WRITTEN */
	unsigned by;    /* REFUSED_BY_* */
} refused_attrs[] = {
	{ 0x7fff, AS_WRITTEN, 0, REFUSED_BY_SET | REFUSED_BY_GET },
	{ KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, UNKNOWN_GPU, 0, REFUSED_BY_SET },
	{ KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, UNKNOWN_GPU, 0, REFUSED_BY_SET },
	{ KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, AS_WRITTEN, LOC_UNDEF, REFUSED_BY_SET },
	{ KFD_IOCTL_SVM_ATTR_ACCESS, UNKNOWN_GPU, 0, REFUSED_BY_SET | REFUSED_BY_GET },
	{ KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, THIS_GPU, 0, REFUSED_BY_GET },
	{ KFD_IOCTL_SVM_ATTR_NO_ACCESS, THIS_GPU, 0, REFUSED_BY_GET },
};

GC_KFD_GPU_SUBTEST(test_invalid_attrs, struct svm_fx, fx, gpu)
{
	uint32_t id = gpu->node.gpu_id, bad = gc_kfd_unknown_gpu_id(fx->dev.kfd);
	uint64_t va;
	attr_t at;

	require_svm_gpu(gpu);
	va = range_new(fx, RANGE_SIZE);
	for (size_t i = 0; i < ARRAY_SIZE(refused_attrs); i++) {
		const struct refused_attr *c = &refused_attrs[i];

		at = (attr_t){ c->type, c->from == UNKNOWN_GPU ? bad :
					c->from == THIS_GPU ? id : c->value };
		/* one line a row: a failed assertion below names the loop's line only */
		gc_info("attribute %#x, value %#x: refused by%s%s", at.type, at.value,
			c->by & REFUSED_BY_SET ? " SET" : "", c->by & REFUSED_BY_GET ? " GET" : "");
		if (c->by & REFUSED_BY_SET)
			gc_assert_errno(gc_kfd_svm_set(fx->dev.kfd, va, RANGE_SIZE, &at, 1), EINVAL);
		if (c->by & REFUSED_BY_GET)
			gc_assert_errno(gc_kfd_svm_get(fx->dev.kfd, va, RANGE_SIZE, &at, 1), EINVAL);
	}
	at = (attr_t){ KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, id };
	gc_assert_errno(gc_kfd_svm(fx->dev.kfd, 2, va, RANGE_SIZE, &at, 1), EINVAL);
	/* A valid attribute next to an invalid one: neither is applied. */
	{
		attr_t two[] = {
			{ KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, id },
			{ KFD_IOCTL_SVM_ATTR_ACCESS, bad },
		};

		gc_assert_errno(gc_kfd_svm_set(fx->dev.kfd, va, RANGE_SIZE, two, 2), EINVAL);
	}
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC), LOC_UNDEF);
	gc_check_eq_uint(get1(fx, va, RANGE_SIZE, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC), LOC_UNDEF);
	gc_check_eq_uint(access_of(fx, va, RANGE_SIZE, id), default_access(fx, gpu));
}

/* ------------------------------------------------------------ fixture */

/*
 * kfd_chardev.c: without CONFIG_HSA_AMD_SVM, AMDKFD_IOC_SVM and SET_XNACK_MODE
 * `return -EPERM;`
 * [src gregkh/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 01ffa1ba69d9].
 * Probe with an XNACK-mode query (kfd_ioctl.h: "0 means disabled, positive means
 * enabled, negative means leave unchanged."
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]), which also gives
 * the mode.
 */
static void probe_svm(struct svm_fx *fx)
{
	int32_t mode = -1;
	int err = gc_kfd_xnack_mode(fx->dev.kfd, &mode);

	gc_require_f(err != -EPERM, "AMDKFD_IOC_SET_XNACK_MODE gave EPERM: kernel built without "
		     "CONFIG_HSA_AMD_SVM (kfd_chardev.c)");
	if (err)
		gc_fail("AMDKFD_IOC_SET_XNACK_MODE query: %s", strerror(-err));
	fx->xnack = mode > 0;
}

static void *svm_setup(void)
{
	struct gc_kfd *kfd = gc_kfd_require();
	struct svm_fx *fx;

	gc_kfd_require_minor(kfd, 5, "AMDKFD_IOC_SVM");
	fx = gc_kfd_fixture_new(kfd, sizeof(*fx), LEAK_SETTLE_MS);
	fx->page = (uint64_t)sysconf(_SC_PAGESIZE);
	probe_svm(fx);
	gc_info("KFD UAPI %u.%u, XNACK %s, %u GPU(s)", kfd->major, kfd->minor,
		fx->xnack ? "on" : "off", kfd->n_gpus);
	for (unsigned i = 0; i < kfd->n_gpus; i++)
		gc_info("gpu %u: SVM API %s", kfd->gpus[i].node.gpu_id,
			gpu_svm_capable(&kfd->gpus[i]) ? "supported" : "not supported");
	return fx;
}

static void svm_after_each(void *data)
{
	struct svm_fx *fx = data;

	ranges_release(fx);
	gc_kfd_fixture_check(fx);
}

static const struct gc_fixture fixture = {
	.setup = svm_setup,
	.teardown = gc_kfd_fixture_free,
	.before_each = gc_kfd_fixture_snapshot,
	.after_each = svm_after_each,
};

static const struct gc_subtest subtests[] = {
	{ "defaults", test_defaults,
	  "a range never set reads back kfd_svm.c's defaults; per-GPU access by XNACK mode" },
	{ "set-get", test_set_get,
	  "preferred location, access kinds, flags, granularity set per GPU read back exactly" },
	{ "prefetch", test_prefetch,
	  "prefetch to the GPU and back to system memory: value reads back, data intact" },
	{ "intersection", test_intersection,
	  "GET over differing halves: 0xffffffff locations, AND / NOR flags, min granularity" },
	{ "split", test_split,
	  "SET over part of a range splits it: only that part changes" },
	{ "invalid-ranges", test_invalid_ranges,
	  "start/size 0 or unaligned: EINVAL; unmapped: EFAULT; SVM over a BO and BO over SVM: "
	  "EADDRINUSE" },
	{ "invalid-attrs", test_invalid_attrs,
	  "unknown attribute/op/gpuid, UNDEFINED prefetch, GET of non-ACCESS kinds: EINVAL, no effect" },
	{ 0 }
};

GC_MAIN(.name = "kfd_svm", .description = "KFD SVM range attributes (AMDKFD_IOC_SVM)",
	.subtests = subtests, .fixture = &fixture)
