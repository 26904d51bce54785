/* SPDX-License-Identifier: MIT */
/*
 * AMD KFD (/dev/kfd) helpers: open + version, topology, per-GPU VM
 * acquisition through a render node (libdrm_amdgpu), and thin ioctl wrappers.
 *
 *     struct gc_kfd *kfd = gc_kfd_require();        // skips with the reason
 *     gc_kfd_require_minor(kfd, 5, what);           // skips: `<what> needs KFD UAPI 1.5, ...`
 *     gc_kfd_require_vms(kfd);                      // ACQUIRE_VM on every GPU
 *     for (unsigned i = 0; i < kfd->n_gpus; i++) use kfd->gpus[i].node.gpu_id
 *
 * Every wrapper issues exactly one ioctl and returns 0 or -errno exactly as
 * the kernel gave it (EINTR included): nothing is retried here, since a
 * retry would hide the very restart behaviour the interrupt area tests.
 * Nothing here exits; only the *_require* functions skip.
 */
#ifndef GPUCONFORM_GC_KFD_H
#define GPUCONFORM_GC_KFD_H

#include <linux/kfd_ioctl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "kfd_topology.h"

#define GC_KFD_PATH "/dev/kfd"

/* libdrm_amdgpu's amdgpu_device_handle, kept opaque so users need no libdrm. */
struct amdgpu_device;

struct gc_kfd_gpu {
	struct gc_kfd_node node;      /* from the topology; node.gpu_id is the id */
	int drm_fd;                   /* /dev/dri/renderD<minor>, -1 until opened */
	struct amdgpu_device *adev;   /* amdgpu_device_initialize() on drm_fd */
	uint32_t drm_major, drm_minor; /* amdgpu DRM interface version */
	bool vm_acquired;             /* AMDKFD_IOC_ACQUIRE_VM returned 0 */
	/* AMDKFD_IOC_GET_PROCESS_APERTURES_NEW for this gpu_id (0 if absent) */
	uint64_t gpuvm_base, gpuvm_limit;
};

struct gc_kfd {
	int fd;                       /* /dev/kfd */
	uint32_t major, minor;        /* AMDKFD_IOC_GET_VERSION */
	struct gc_kfd_topology topo;
	unsigned n_gpus;
	struct gc_kfd_gpu gpus[GC_KFD_MAX_NODES];
};

/*
 * Opens /dev/kfd (O_RDWR | O_CLOEXEC), AMDKFD_IOC_GET_VERSION, read the
 * topology (GC_KFD_TOPOLOGY_ROOT, or $GPUCONFORM_KFD_TOPOLOGY when set) and
 * each GPU's GPUVM aperture (AMDKFD_IOC_GET_PROCESS_APERTURES_NEW).
 * On failure, -errno and a one-line reason in why[]:
 * `/dev/kfd: No such file or directory`, `KFD major version 2, this suite
 * speaks 1` (-EPROTO), `KFD topology: no GPU node` (-ENODEV), ...
 */
int gc_kfd_open(struct gc_kfd **out, char *why, size_t why_len);
/* Releases render nodes (VMs go with them) and /dev/kfd. NULL is fine. */
void gc_kfd_close(struct gc_kfd *kfd);

/* gc_kfd_open() or gc_skip() with its reason (gc_fail() for -ENOMEM, -EIO...). */
struct gc_kfd *gc_kfd_require(void);

/* True when the kernel's UAPI is at least 1.minor. */
bool gc_kfd_has_minor(const struct gc_kfd *kfd, uint32_t minor);
/* Skip `<what> needs KFD UAPI 1.<minor>, kernel has 1.<m>` when older. */
void gc_kfd_require_minor(const struct gc_kfd *kfd, uint32_t minor, const char *what);

/* Every GPU's gpu_id, in topology order, into ids[GC_KFD_MAX_NODES]; the count. */
uint32_t gc_kfd_gpu_ids(const struct gc_kfd *kfd, uint32_t *ids);
/* The GPU with this gpu_id, or NULL. */
struct gc_kfd_gpu *gc_kfd_gpu(struct gc_kfd *kfd, uint32_t gpu_id);

/*
 * Open /dev/dri/renderD<drm_render_minor>, amdgpu_device_initialize() it
 * (opens and queries the device), then AMDKFD_IOC_ACQUIRE_VM with that fd.
 * Idempotent once it succeeded. 0 or -errno with the reason in why[].
 */
int gc_kfd_acquire_vm(struct gc_kfd *kfd, struct gc_kfd_gpu *gpu, char *why, size_t why_len);
/* gc_kfd_acquire_vm() on every GPU; the first error stops it. */
int gc_kfd_acquire_all(struct gc_kfd *kfd, char *why, size_t why_len);
/* gc_kfd_acquire_all() or skip (-ENOENT, -EACCES, -ENODEV) / fail (others). */
void gc_kfd_require_vms(struct gc_kfd *kfd);

/*
 * What every leak-checked KFD fixture requires of an open kfd: KFD 1.9 for
 * the leak check's AMDKFD_IOC_AVAILABLE_MEMORY (`- 1.9 - Add available memory
 * ioctl` [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]), then gc_kfd_require_vms().
 */
void gc_kfd_require_leak_check(struct gc_kfd *kfd);

/* ----------------------------------------------------------- raw ioctls */

/* One ioctl(2) on /dev/kfd: 0, or -errno as the kernel gave it. */
int gc_kfd_ioctl(const struct gc_kfd *kfd, unsigned long request, void *arg);

/*
 * AMDKFD_IOC_ALLOC_MEMORY_OF_GPU. flags: KFD_IOC_ALLOC_MEM_FLAGS_*. *mmap_offset
 * is in/out, passed to the kernel as given (UAPI: `@mmap_offset: for CPU-mapping
 * the allocation by mmapping a render node for userptrs this is overloaded to
 * specify the CPU address`
 * [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]): for USERPTR set it
 * to the user address; on success it receives the kernel's value, the offset for
 * mmapping a render node. NULL passes 0 and drops the result. *handle and
 * *mmap_offset are written only on success.
 */
int gc_kfd_alloc(const struct gc_kfd *kfd, uint32_t gpu_id, uint64_t size, uint64_t va,
		 uint32_t flags, uint64_t *handle, uint64_t *mmap_offset);
/* AMDKFD_IOC_FREE_MEMORY_OF_GPU. */
int gc_kfd_free(const struct gc_kfd *kfd, uint64_t handle);

/*
 * AMDKFD_IOC_MAP_MEMORY_TO_GPU / UNMAP_MEMORY_FROM_GPU on gpu_ids[0..n).
 * *n_success is to/from KFD exactly as the UAPI says: "@n_success returns
 * information to the caller how many devices from the start of the array
 * have mapped the buffer successfully. It can be passed into a subsequent
 * retry call to skip those devices. For the first call the caller should
 * initialize it to 0." [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
 * It is written back on failure too (whatever the kernel copied out).
 * n_success may be NULL: then 0 is passed and the result dropped.
 */
int gc_kfd_map(const struct gc_kfd *kfd, uint64_t handle, const uint32_t *gpu_ids, uint32_t n,
	       uint32_t *n_success);
int gc_kfd_unmap(const struct gc_kfd *kfd, uint64_t handle, const uint32_t *gpu_ids,
		 uint32_t n, uint32_t *n_success);

/* AMDKFD_IOC_AVAILABLE_MEMORY (UAPI 1.9): bytes still allocatable on gpu_id. */
int gc_kfd_available(const struct gc_kfd *kfd, uint32_t gpu_id, uint64_t *bytes);

/*
 * AMDKFD_IOC_SVM (UAPI 1.5) with op KFD_IOCTL_SVM_OP_SET_ATTR / GET_ATTR on
 * [start, start + size). attrs[0..nattr) are copied in, and for GET copied
 * back (the kernel overwrites values, and for ACCESS queries the type).
 */
int gc_kfd_svm(const struct gc_kfd *kfd, uint32_t op, uint64_t start, uint64_t size,
	       struct kfd_ioctl_svm_attribute *attrs, uint32_t nattr);
int gc_kfd_svm_set(const struct gc_kfd *kfd, uint64_t start, uint64_t size,
		   const struct kfd_ioctl_svm_attribute *attrs, uint32_t nattr);
int gc_kfd_svm_get(const struct gc_kfd *kfd, uint64_t start, uint64_t size,
		   struct kfd_ioctl_svm_attribute *attrs, uint32_t nattr);

/* AMDKFD_IOC_SET_XNACK_MODE: *mode in (<0: leave unchanged), out: the mode now. */
int gc_kfd_xnack_mode(const struct gc_kfd *kfd, int32_t *mode);

/* ------------------------------------------------------ address space */

/*
 * A VA for ALLOC_MEMORY_OF_GPU, as libhsakmt's SVM aperture does it: a host
 * range reserved with mmap(PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
 * MAP_NORESERVE), aligned to align (a power of two, >= page size), that lies
 * inside every acquired GPU's [gpuvm_base, gpuvm_limit] (so CPU and GPU can
 * use the same address, and no other mapping of this process takes it).
 * If the kernel's first choice is outside, hints below the common limit are
 * tried with MAP_FIXED_NOREPLACE. 0, or -errno (-ENOMEM: no such range,
 * -ENODEV: no acquired GPU).
 */
int gc_kfd_va_reserve(const struct gc_kfd *kfd, uint64_t size, uint64_t align, uint64_t *va);
int gc_kfd_va_release(uint64_t va, uint64_t size);

/*
 * CPU mapping of a host-accessible BO as libhsakmt does: mmap the GPU's
 * render node fd at mmap_offset, MAP_SHARED | MAP_FIXED over [va, va+size)
 * (the reserved range), so the CPU and GPU see the BO at the same address.
 * 0 or -errno. gc_kfd_cpu_unmap() puts a PROT_NONE reservation back.
 */
int gc_kfd_cpu_map(const struct gc_kfd_gpu *gpu, uint64_t va, uint64_t size,
		   uint64_t mmap_offset, int prot);
int gc_kfd_cpu_unmap(uint64_t va, uint64_t size);

/* ------------------------------------------------------- leak checks */

/*
 * AMDKFD_IOC_AVAILABLE_MEMORY for every GPU with an acquired VM, and the
 * count of open /dev/kfd fds. Needs UAPI 1.9: -EPROTONOSUPPORT (no ioctl
 * issued) on an older kernel; otherwise 0 or the first ioctl's -errno.
 */
struct gc_kfd_snapshot {
	unsigned n;
	uint32_t gpu_id[GC_KFD_MAX_NODES];
	uint64_t available[GC_KFD_MAX_NODES];
	int kfd_fds; /* open fds on /dev/kfd */
};
int gc_kfd_snapshot(const struct gc_kfd *kfd, struct gc_kfd_snapshot *s);
/*
 * Fails the subtest, naming every GPU whose available memory differs from
 * before by more than slack bytes (either way) and any change in /dev/kfd
 * fds. settle_ms > 0 re-reads for up to that long before failing: for
 * releases the kernel finishes asynchronously (kfd_svm.c frees migrated
 * VRAM from a work item: svm_range_bo_unref_async). 0: one reading.
 */
void gc_kfd_leak_check(const struct gc_kfd *kfd, const struct gc_kfd_snapshot *before,
		       uint64_t slack, unsigned settle_ms);

/*
 * The leak-checked device fixture of a KFD binary: /dev/kfd opened once, and
 * every subtest bracketed by a snapshot (gc_kfd_snapshot) and a leak check
 * against it (gc_kfd_leak_check, no slack: available memory must come back to
 * the byte). A binary's fixture data begins with one, as its member `dev`, so
 * that the functions below take that data as the gc_fixture hands it over.
 */
struct gc_kfd_fixture {
	struct gc_kfd *kfd;
	struct gc_kfd_snapshot before;
	unsigned settle_ms; /* how long a release may take to show (gc_kfd_leak_check) */
};
/*
 * setup(): size bytes of fixture data, zeroed, beginning with a gc_kfd_fixture
 * on kfd (skips, naming why, where the leak check cannot read available memory).
 */
void *gc_kfd_fixture_new(struct gc_kfd *kfd, size_t size, unsigned settle_ms);
void gc_kfd_fixture_snapshot(void *data); /* before_each(): a failed snapshot fails */
void gc_kfd_fixture_check(void *data);    /* after_each(): the leak check */
void gc_kfd_fixture_free(void *data);     /* teardown(): /dev/kfd closed, data freed */

/*
 * The GPUs of kfd, in topology order, as lib/core.h's device list:
 * gc_each_device() and gc_each_device_pair() over it name each `gpu<N>`, N
 * its place in that order (KFD sees every GPU, pinned or not), print its
 * gpu_id as the dynamic subtest begins (`gpu1: gpu_id 41234`), and hand the
 * body a const pointer into kfd->gpus (not const: cast it back).
 */
struct gc_devices gc_kfd_devices(const struct gc_kfd *kfd);

/*
 * A subtest that runs its body once per GPU, the body written in place:
 *
 *     GC_KFD_GPU_SUBTEST(test_lifecycle_gtt, struct mem_fx, fx, gpu)
 *     {
 *         cpu_roundtrip(fx, gpu, GTT, 0x6771);
 *     }
 *     ... { name, test_lifecycle_gtt, description } in the subtest table
 *
 * defines test_lifecycle_gtt(void *fixture) for the table, and the body with
 * fx (a FX_TYPE *, the fixture's data) and gpu (a struct gc_kfd_gpu *).
 * FX_TYPE begins with `struct gc_kfd_fixture dev`: its GPUs are iterated.
 */
#define GC_KFD_GPU_SUBTEST(fn, fx_type, fx, gpu)                                  \
	static void fn##__gpu(fx_type *fx, struct gc_kfd_gpu *gpu);                \
	static void fn##__each(void *ctx, const void *g)                           \
	{                                                                          \
		fn##__gpu(ctx, (struct gc_kfd_gpu *)g);                            \
	}                                                                          \
	static void fn(void *fixture)                                              \
	{                                                                          \
		fx_type *f = fixture;                                              \
		struct gc_devices gpus = gc_kfd_devices(f->dev.kfd);               \
		gc_each_device(&gpus, fn##__each, f);                              \
	}                                                                          \
	static void fn##__gpu(fx_type *fx, struct gc_kfd_gpu *gpu)

/* A gpu_id that no topology node of this machine has (gpu_ids are hashes; 0 is a CPU node's). */
uint32_t gc_kfd_unknown_gpu_id(const struct gc_kfd *kfd);

#endif
