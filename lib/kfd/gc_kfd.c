// SPDX-License-Identifier: MIT
/*
 * AMD KFD helpers (see gc_kfd.h). Every ioctl wrapper issues one ioctl(2)
 * and returns 0 or -errno as the kernel gave it; nothing is retried.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <amdgpu.h>

#include "devfd.h"
#include "gc_kfd.h"
#include "leakcheck.h"

#define TOPOLOGY_ENV "GPUCONFORM_KFD_TOPOLOGY"
#define VA_HINT_TRIES 64

/* ----------------------------------------------------------- raw ioctls */

static int kfd_ioctl_fd(int fd, unsigned long request, void *arg)
{
	return ioctl(fd, request, arg) == -1 ? -errno : 0;
}

int gc_kfd_ioctl(const struct gc_kfd *kfd, unsigned long request, void *arg)
{
	return kfd_ioctl_fd(kfd->fd, request, arg);
}

int gc_kfd_alloc(const struct gc_kfd *kfd, uint32_t gpu_id, uint64_t size, uint64_t va,
		 uint32_t flags, uint64_t *handle, uint64_t *mmap_offset)
{
	struct kfd_ioctl_alloc_memory_of_gpu_args a = {
		.va_addr = va,
		.size = size,
		.mmap_offset = mmap_offset ? *mmap_offset : 0,
		.gpu_id = gpu_id,
		.flags = flags,
	};
	int err = gc_kfd_ioctl(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);

	if (err)
		return err;
	*handle = a.handle;
	if (mmap_offset)
		*mmap_offset = a.mmap_offset;
	return 0;
}

int gc_kfd_free(const struct gc_kfd *kfd, uint64_t handle)
{
	struct kfd_ioctl_free_memory_of_gpu_args a = { .handle = handle };

	return gc_kfd_ioctl(kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &a);
}

/*
 * MAP and UNMAP share one argument layout (kfd_ioctl.h, unmap:
 * `same arguments as for mapping`). [src torvalds/linux include/uapi/linux/kfd_ioctl.h @ v6.1]
 */
static int map_op(const struct gc_kfd *kfd, unsigned long request, uint64_t handle,
		  const uint32_t *gpu_ids, uint32_t n, uint32_t *n_success)
{
	struct kfd_ioctl_map_memory_to_gpu_args a = {
		.handle = handle,
		.device_ids_array_ptr = (uint64_t)(uintptr_t)gpu_ids,
		.n_devices = n,
		.n_success = n_success ? *n_success : 0,
	};
	int err = gc_kfd_ioctl(kfd, request, &a);

	if (n_success)
		*n_success = a.n_success;
	return err;
}

int gc_kfd_map(const struct gc_kfd *kfd, uint64_t handle, const uint32_t *gpu_ids, uint32_t n,
	       uint32_t *n_success)
{
	return map_op(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, gpu_ids, n, n_success);
}

int gc_kfd_unmap(const struct gc_kfd *kfd, uint64_t handle, const uint32_t *gpu_ids,
		 uint32_t n, uint32_t *n_success)
{
	_Static_assert(sizeof(struct kfd_ioctl_map_memory_to_gpu_args) ==
		       sizeof(struct kfd_ioctl_unmap_memory_from_gpu_args), "map/unmap args");
	return map_op(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, gpu_ids, n, n_success);
}

int gc_kfd_available(const struct gc_kfd *kfd, uint32_t gpu_id, uint64_t *bytes)
{
	struct kfd_ioctl_get_available_memory_args a = { .gpu_id = gpu_id };
	int err = gc_kfd_ioctl(kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &a);

	if (!err)
		*bytes = a.available;
	return err;
}

/*
 * The attributes follow the fixed part in one buffer whose size is encoded
 * in the request: the UAPI header is silent on how the variable-length
 * attrs[] reach the kernel; kfd_ioctl() in kfd_chardev.c copies
 * _IOC_SIZE(cmd) bytes in and out, and libhsakmt's svm.c passes
 * `AMDKFD_IOC_SVM + (s_attr << _IOC_SIZESHIFT)` (`Driver does one
 * copy_from_user, with extra attrs size`).
 * [src ROCm/ROCR-Runtime src/svm.c @ 3f45f602d404]
 */
int gc_kfd_svm(const struct gc_kfd *kfd, uint32_t op, uint64_t start, uint64_t size,
	       struct kfd_ioctl_svm_attribute *attrs, uint32_t nattr)
{
	size_t s_attr = (size_t)nattr * sizeof(*attrs);
	size_t total = sizeof(struct kfd_ioctl_svm_args) + s_attr;
	struct kfd_ioctl_svm_args *a;
	int err;

	if (nattr > (_IOC_SIZEMASK - sizeof(*a)) / sizeof(*attrs))
		return -E2BIG; /* does not fit the request's size field: no ioctl */
	a = calloc(1, total);
	if (!a)
		return -ENOMEM;
	a->start_addr = start;
	a->size = size;
	a->op = op;
	a->nattr = nattr;
	if (s_attr)
		memcpy(a->attrs, attrs, s_attr);
	err = gc_kfd_ioctl(kfd, _IOC(_IOC_READ | _IOC_WRITE, AMDKFD_IOCTL_BASE,
				     _IOC_NR(AMDKFD_IOC_SVM), total), a);
	if (op == KFD_IOCTL_SVM_OP_GET_ATTR && s_attr)
		memcpy(attrs, a->attrs, s_attr);
	free(a);
	return err;
}

int gc_kfd_svm_set(const struct gc_kfd *kfd, uint64_t start, uint64_t size,
		   const struct kfd_ioctl_svm_attribute *attrs, uint32_t nattr)
{
	struct kfd_ioctl_svm_attribute *copy = NULL;
	int err;

	if (nattr) {
		copy = calloc(nattr, sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, attrs, nattr * sizeof(*copy));
	}
	err = gc_kfd_svm(kfd, KFD_IOCTL_SVM_OP_SET_ATTR, start, size, copy, nattr);
	free(copy);
	return err;
}

int gc_kfd_svm_get(const struct gc_kfd *kfd, uint64_t start, uint64_t size,
		   struct kfd_ioctl_svm_attribute *attrs, uint32_t nattr)
{
	return gc_kfd_svm(kfd, KFD_IOCTL_SVM_OP_GET_ATTR, start, size, attrs, nattr);
}

int gc_kfd_xnack_mode(const struct gc_kfd *kfd, int32_t *mode)
{
	struct kfd_ioctl_set_xnack_mode_args a = { .xnack_enabled = *mode };
	int err = gc_kfd_ioctl(kfd, AMDKFD_IOC_SET_XNACK_MODE, &a);

	if (!err)
		*mode = a.xnack_enabled;
	return err;
}

/* ---------------------------------------------------------------- open */

static int read_apertures(struct gc_kfd *kfd, char *why, size_t why_len)
{
	struct kfd_ioctl_get_process_apertures_new_args a = { 0 };
	struct kfd_process_device_apertures *pa;
	unsigned i;
	int err = gc_kfd_ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a);

	if (err || a.num_of_nodes == 0) {
		gc_kfd_why(why, why_len, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: %s",
			err ? strerror(-err) : "no device");
		return err ? err : -ENODEV;
	}
	pa = calloc(a.num_of_nodes, sizeof(*pa));
	if (!pa)
		return -ENOMEM;
	a.kfd_process_device_apertures_ptr = (uint64_t)(uintptr_t)pa;
	err = gc_kfd_ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a);
	if (err)
		gc_kfd_why(why, why_len, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: %s", strerror(-err));
	for (i = 0; !err && i < a.num_of_nodes; i++) {
		struct gc_kfd_gpu *g = gc_kfd_gpu(kfd, pa[i].gpu_id);

		if (g) {
			g->gpuvm_base = pa[i].gpuvm_base;
			g->gpuvm_limit = pa[i].gpuvm_limit;
		}
	}
	free(pa);
	return err;
}

static int open_version(struct gc_kfd *kfd, char *why, size_t why_len)
{
	struct kfd_ioctl_get_version_args v = { 0 };
	int err;

	kfd->fd = open(GC_KFD_PATH, O_RDWR | O_CLOEXEC);
	if (kfd->fd < 0) {
		err = -errno;
		gc_kfd_why(why, why_len, "%s: %s", GC_KFD_PATH, strerror(-err));
		return err;
	}
	err = gc_kfd_ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v);
	if (err) {
		gc_kfd_why(why, why_len, "AMDKFD_IOC_GET_VERSION: %s", strerror(-err));
		return err;
	}
	kfd->major = v.major_version;
	kfd->minor = v.minor_version;
	if (kfd->major != KFD_IOCTL_MAJOR_VERSION) {
		gc_kfd_why(why, why_len, "KFD UAPI major version %u, this suite speaks %d",
			kfd->major, KFD_IOCTL_MAJOR_VERSION);
		return -EPROTO;
	}
	return 0;
}

static int read_topology(struct gc_kfd *kfd, char *why, size_t why_len)
{
	const char *root = getenv(TOPOLOGY_ENV);
	char w[384];
	unsigned i;
	int err;

	if (!root || !*root)
		root = GC_KFD_TOPOLOGY_ROOT;
	err = gc_kfd_topology_read(root, &kfd->topo, w, sizeof(w));
	if (err) {
		gc_kfd_why(why, why_len, "KFD topology: %s", w);
		return err;
	}
	for (i = 0; i < kfd->topo.n_nodes; i++) {
		struct gc_kfd_gpu *g;

		if (!gc_kfd_node_is_gpu(&kfd->topo.nodes[i]))
			continue;
		g = &kfd->gpus[kfd->n_gpus++];
		g->node = kfd->topo.nodes[i];
		g->drm_fd = -1;
	}
	if (kfd->n_gpus == 0) {
		gc_kfd_why(why, why_len, "KFD topology %s: no GPU node (%u nodes, %u denied by the "
			"device cgroup)", root, kfd->topo.n_nodes, kfd->topo.n_denied);
		return -ENODEV;
	}
	return 0;
}

int gc_kfd_open(struct gc_kfd **out, char *why, size_t why_len)
{
	struct gc_kfd *kfd = calloc(1, sizeof(*kfd));
	int err;

	*out = NULL;
	if (!kfd) {
		gc_kfd_why(why, why_len, "out of host memory");
		return -ENOMEM;
	}
	kfd->fd = -1;
	err = open_version(kfd, why, why_len);
	if (!err)
		err = read_topology(kfd, why, why_len);
	if (!err)
		err = read_apertures(kfd, why, why_len);
	if (err) {
		gc_kfd_close(kfd);
		return err;
	}
	*out = kfd;
	return 0;
}

static void gpu_release(struct gc_kfd_gpu *g)
{
	if (g->adev)
		amdgpu_device_deinitialize(g->adev);
	if (g->drm_fd >= 0)
		close(g->drm_fd);
	g->adev = NULL;
	g->drm_fd = -1;
	g->vm_acquired = false;
}

void gc_kfd_close(struct gc_kfd *kfd)
{
	unsigned i;

	if (!kfd)
		return;
	for (i = 0; i < kfd->n_gpus; i++)
		gpu_release(&kfd->gpus[i]);
	if (kfd->fd >= 0)
		close(kfd->fd);
	free(kfd);
}

struct gc_kfd *gc_kfd_require(void)
{
	struct gc_kfd *kfd;
	char why[512];
	int err = gc_kfd_open(&kfd, why, sizeof(why));

	switch (err) {
	case 0:
		return kfd;
	case -ENOENT:
	case -ENODEV:
	case -ENXIO:
	case -EACCES:
	case -EPERM:
	case -EPROTO:
		gc_skip("%s", why);
	default:
		gc_fail("%s", err == -ENOMEM ? "out of host memory" : why);
	}
}

void gc_kfd_require_leak_check(struct gc_kfd *kfd)
{
	gc_kfd_require_minor(kfd, 9, "the leak check (AMDKFD_IOC_AVAILABLE_MEMORY)");
	gc_kfd_require_vms(kfd);
}

bool gc_kfd_has_minor(const struct gc_kfd *kfd, uint32_t minor)
{
	return kfd->major == KFD_IOCTL_MAJOR_VERSION && kfd->minor >= minor;
}

void gc_kfd_require_minor(const struct gc_kfd *kfd, uint32_t minor, const char *what)
{
	gc_require_f(gc_kfd_has_minor(kfd, minor), "%s needs KFD UAPI %d.%u, kernel has %u.%u",
		     what, KFD_IOCTL_MAJOR_VERSION, minor, kfd->major, kfd->minor);
}

uint32_t gc_kfd_gpu_ids(const struct gc_kfd *kfd, uint32_t *ids)
{
	for (unsigned i = 0; i < kfd->n_gpus; i++)
		ids[i] = kfd->gpus[i].node.gpu_id;
	return kfd->n_gpus;
}

struct gc_kfd_gpu *gc_kfd_gpu(struct gc_kfd *kfd, uint32_t gpu_id)
{
	unsigned i;

	for (i = 0; gpu_id && i < kfd->n_gpus; i++)
		if (kfd->gpus[i].node.gpu_id == gpu_id)
			return &kfd->gpus[i];
	return NULL;
}

/* ------------------------------------------------------------- VM */

static int open_render(struct gc_kfd_gpu *g, char *path, size_t plen, char *why,
		       size_t why_len)
{
	amdgpu_device_handle dev;
	int err;

	snprintf(path, plen, "/dev/dri/renderD%d", g->node.drm_render_minor);
	g->drm_fd = open(path, O_RDWR | O_CLOEXEC);
	if (g->drm_fd < 0) {
		err = -errno;
		gc_kfd_why(why, why_len, "%s: %s", path, strerror(-err));
		return err;
	}
	err = amdgpu_device_initialize(g->drm_fd, &g->drm_major, &g->drm_minor, &dev);
	if (err) {
		gc_kfd_why(why, why_len, "amdgpu_device_initialize(%s): %s", path,
			strerror(err < 0 ? -err : err));
		gpu_release(g);
		return err < 0 ? err : -EIO;
	}
	g->adev = dev;
	return 0;
}

int gc_kfd_acquire_vm(struct gc_kfd *kfd, struct gc_kfd_gpu *gpu, char *why, size_t why_len)
{
	struct kfd_ioctl_acquire_vm_args a;
	char path[64];
	int err;

	if (gpu->vm_acquired)
		return 0;
	err = open_render(gpu, path, sizeof(path), why, why_len);
	if (err)
		return err;
	a.drm_fd = (uint32_t)gpu->drm_fd;
	a.gpu_id = gpu->node.gpu_id;
	err = gc_kfd_ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &a);
	if (err) {
		gc_kfd_why(why, why_len, "AMDKFD_IOC_ACQUIRE_VM(gpu_id %u, %s): %s",
			gpu->node.gpu_id, path, strerror(-err));
		gpu_release(gpu);
		return err;
	}
	gpu->vm_acquired = true;
	return 0;
}

int gc_kfd_acquire_all(struct gc_kfd *kfd, char *why, size_t why_len)
{
	unsigned i;

	for (i = 0; i < kfd->n_gpus; i++) {
		int err = gc_kfd_acquire_vm(kfd, &kfd->gpus[i], why, why_len);

		if (err)
			return err;
	}
	return 0;
}

void gc_kfd_require_vms(struct gc_kfd *kfd)
{
	char why[512];
	int err = gc_kfd_acquire_all(kfd, why, sizeof(why));

	if (err == -ENOENT || err == -EACCES || err == -ENODEV || err == -EPERM)
		gc_skip("%s", why);
	if (err)
		gc_fail("%s", why);
}

/* ------------------------------------------------------ address space */

/* The VA window every acquired GPU can address; -ENODEV when none is acquired. */
static int va_window(const struct gc_kfd *kfd, uint64_t *lo, uint64_t *hi)
{
	bool any = false;
	unsigned i;

	*lo = 0;
	*hi = UINT64_MAX;
	for (i = 0; i < kfd->n_gpus; i++) {
		const struct gc_kfd_gpu *g = &kfd->gpus[i];

		if (!g->vm_acquired)
			continue;
		any = true;
		if (g->gpuvm_limit == 0)
			continue; /* aperture unknown: no constraint we could check */
		if (g->gpuvm_base > *lo)
			*lo = g->gpuvm_base;
		if (g->gpuvm_limit < *hi)
			*hi = g->gpuvm_limit;
	}
	return any ? 0 : -ENODEV;
}

static bool in_window(uint64_t va, uint64_t size, uint64_t lo, uint64_t hi)
{
	return va >= lo && va + size - 1 >= va && va + size - 1 <= hi;
}

#define RESERVE_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

/* Let the kernel choose, then trim to an aligned [va, va + size). */
static int va_any(uint64_t size, uint64_t align, uint64_t *va)
{
	uint64_t len = size + align, p, a;
	void *m = mmap(NULL, len, PROT_NONE, RESERVE_FLAGS, -1, 0);

	if (m == MAP_FAILED)
		return -errno;
	p = (uint64_t)(uintptr_t)m;
	a = (p + align - 1) & ~(align - 1);
	if (a > p)
		munmap(m, a - p);
	if (p + len > a + size)
		munmap((void *)(uintptr_t)(a + size), p + len - (a + size));
	*va = a;
	return 0;
}

/* Top-down hints inside the window, each with MAP_FIXED_NOREPLACE. */
static int va_hinted(uint64_t size, uint64_t align, uint64_t lo, uint64_t hi, uint64_t *va)
{
	uint64_t step = size > (1ull << 30) ? size : (1ull << 30);
	uint64_t hint;
	int i;

	if (hi - lo + 1 < size)
		return -ENOMEM;
	hint = (hi + 1 - size) & ~(align - 1);
	for (i = 0; i < VA_HINT_TRIES && hint >= lo; i++, hint -= step) {
		void *m = mmap((void *)(uintptr_t)hint, size, PROT_NONE,
			       RESERVE_FLAGS | MAP_FIXED_NOREPLACE, -1, 0);

		if (m == MAP_FAILED) {
			if (errno != EEXIST && errno != ENOMEM && errno != EPERM)
				return -errno;
		} else if ((uint64_t)(uintptr_t)m == hint) {
			*va = hint;
			return 0;
		} else {
			munmap(m, size); /* a kernel without MAP_FIXED_NOREPLACE moved it */
		}
		if (hint < step)
			break;
	}
	return -ENOMEM;
}

int gc_kfd_va_reserve(const struct gc_kfd *kfd, uint64_t size, uint64_t align, uint64_t *va)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), lo, hi;
	int err = va_window(kfd, &lo, &hi);

	if (err)
		return err;
	if (align < page)
		align = page;
	if (size == 0 || (align & (align - 1)) || (size & (page - 1)))
		return -EINVAL;
	err = va_any(size, align, va);
	if (err)
		return err;
	if (in_window(*va, size, lo, hi))
		return 0;
	munmap((void *)(uintptr_t)*va, size);
	return va_hinted(size, align, lo, hi, va);
}

int gc_kfd_va_release(uint64_t va, uint64_t size)
{
	return munmap((void *)(uintptr_t)va, size) ? -errno : 0;
}

int gc_kfd_cpu_map(const struct gc_kfd_gpu *gpu, uint64_t va, uint64_t size,
		   uint64_t mmap_offset, int prot)
{
	void *m;

	if (gpu->drm_fd < 0)
		return -EBADF;
	m = mmap((void *)(uintptr_t)va, size, prot, MAP_SHARED | MAP_FIXED, gpu->drm_fd,
		 (off_t)mmap_offset);
	if (m == MAP_FAILED)
		return -errno;
	return (uint64_t)(uintptr_t)m == va ? 0 : -EFAULT;
}

int gc_kfd_cpu_unmap(uint64_t va, uint64_t size)
{
	void *m = mmap((void *)(uintptr_t)va, size, PROT_NONE, RESERVE_FLAGS | MAP_FIXED, -1, 0);

	return m == MAP_FAILED ? -errno : 0;
}

/* ------------------------------------------------------- leak checks */

int gc_kfd_snapshot(const struct gc_kfd *kfd, struct gc_kfd_snapshot *s)
{
	unsigned i;
	int n;

	memset(s, 0, sizeof(*s));
	if (!gc_kfd_has_minor(kfd, 9))
		return -EPROTONOSUPPORT;
	for (i = 0; i < kfd->n_gpus; i++) {
		const struct gc_kfd_gpu *g = &kfd->gpus[i];
		int err;

		if (!g->vm_acquired)
			continue;
		err = gc_kfd_available(kfd, g->node.gpu_id, &s->available[s->n]);
		if (err)
			return err;
		s->gpu_id[s->n++] = g->node.gpu_id;
	}
	n = gc_devfd_count(GC_KFD_PATH);
	if (n < 0)
		return n;
	s->kfd_fds = n;
	return 0;
}

static void say_available(const struct gc_leak_probe *p, uint64_t before, uint64_t now,
			  char *msg, size_t len)
{
	snprintf(msg, len, "%s: available %" PRIu64 " -> %" PRIu64 " bytes", p->name, before, now);
}

_Static_assert(GC_KFD_MAX_NODES + 1 <= GC_LEAK_MAX_PROBES, "every probe fits one reading");

/* The probes: each GPU's available memory (slack bytes either way), then /dev/kfd fds. */
static void probes(const struct gc_kfd_snapshot *s, uint64_t slack, struct gc_leak_reading *r)
{
	const struct gc_leak_probe mem = { .slack = slack, .say = say_available };

	r->n = 0;
	for (unsigned i = 0; i < s->n; i++)
		gc_leak_add(r, &mem, s->available[i], "gpu %u", s->gpu_id[i]);
	gc_leak_add(r, &(struct gc_leak_probe){ 0 }, (uint64_t)s->kfd_fds, "/dev/kfd fds");
}

/* A reading, failing where the GPUs with a VM are not those of the snapshot. */
static void read_probes(const struct gc_leak_set *set, struct gc_leak_reading *r, const char *when)
{
	struct gc_kfd_snapshot now;
	int err = gc_kfd_snapshot(set->ctx, &now);

	(void)when;
	if (err)
		gc_fail("leak check: cannot read available memory: %s", strerror(-err));
	if (now.n != set->before.n - 1)
		gc_fail("leak check: %u GPUs with a VM now, %u before", now.n, set->before.n - 1);
	probes(&now, set->slack, r);
}

void gc_kfd_leak_check(const struct gc_kfd *kfd, const struct gc_kfd_snapshot *before,
		       uint64_t slack, unsigned settle_ms)
{
	struct gc_leak_set set = { .read = read_probes, .ctx = kfd, .slack = slack,
				   .settle_ms = settle_ms, .poll_us = 10000, .every_leak = true,
				   .msg_len = 1024 };

	set.tail = settle_ms ? " (after waiting for asynchronous release)" : "";
	probes(before, slack, &set.before);
	gc_leak_check(&set);
}

static long gpu_place(const void *gpu, size_t i)
{
	(void)gpu;
	return (long)i;
}

static const char *gpu_id_text(const void *gpu, char *buf, size_t len)
{
	snprintf(buf, len, "gpu_id %u", ((const struct gc_kfd_gpu *)gpu)->node.gpu_id);
	return buf;
}

struct gc_devices gc_kfd_devices(const struct gc_kfd *kfd)
{
	return (struct gc_devices){ .first = kfd->gpus, .n = kfd->n_gpus,
				    .size = sizeof(kfd->gpus[0]), .index = gpu_place,
				    .id = gpu_id_text };
}

uint32_t gc_kfd_unknown_gpu_id(const struct gc_kfd *kfd)
{
	uint32_t id = 0xfffffffeu;

	while (gc_kfd_topology_find(&kfd->topo, id))
		id--;
	return id;
}

void *gc_kfd_fixture_new(struct gc_kfd *kfd, size_t size, unsigned settle_ms)
{
	struct gc_kfd_fixture *dev;

	gc_kfd_require_leak_check(kfd);
	dev = calloc(1, size);
	gc_assert_f(dev != NULL, "calloc(%zu) failed", size);
	dev->kfd = kfd;
	dev->settle_ms = settle_ms;
	return dev;
}

void gc_kfd_fixture_snapshot(void *data)
{
	struct gc_kfd_fixture *dev = data;
	int err = gc_kfd_snapshot(dev->kfd, &dev->before);

	if (err)
		gc_fail("leak snapshot: %s", strerror(-err));
}

void gc_kfd_fixture_check(void *data)
{
	struct gc_kfd_fixture *dev = data;

	gc_kfd_leak_check(dev->kfd, &dev->before, 0, dev->settle_ms);
}

void gc_kfd_fixture_free(void *data)
{
	struct gc_kfd_fixture *dev = data;

	gc_kfd_close(dev->kfd);
	free(dev);
}
