// SPDX-License-Identifier: MIT
/*
 * amdgpu_multigpu: the multigpu contract between two amdgpu devices through
 * dma-buf (DESIGN, multigpu, AMD column: dma-buf export/import between
 * GPUs): a buffer of GPU A exported as a dma-buf fd (amdgpu_bo_export,
 * amdgpu_bo_handle_type_dma_buf_fd) and imported by GPU B (amdgpu_bo_import)
 * is one buffer, lives as long as either side holds it, and an import that
 * fails leaves nothing behind.
 *
 * Where the expectations come from: amdgpu.h (libdrm 2.4.114), libdrm's
 * amdgpu_bo.c and xf86drm.c, the kernel's drm_prime.c, dma-buf.c,
 * amdgpu_dma_buf.c and ttm_bo_vm.c, each quoted where it is checked; read,
 * not run: no AMD GPU was available when this was written.
 *
 * How B's side is seen from the CPU. amdgpu_bo_cpu_map() of B's import maps a
 * buffer whose pages TTM refuses to fault (see import-cpu-map), so B's view
 * of the bytes is taken through the dma-buf B itself hands out for its
 * import: amdgpu_bo_export() of the imported buffer gives back the original
 * dma-buf (drm_prime.c, under the comment `re-export the original imported
 * object` [src alvinsun039/linux-torvalds drivers/gpu/drm/drm_prime.c @
 * 00f18f2d3370]), checked by inode, and mapped with mmap() under
 * DMA_BUF_IOCTL_SYNC as <linux/dma-buf.h> asks ("To manage coherency,
 * DMA_BUF_IOCTL_SYNC must be used to bracket any CPU access to give the
 * kernel the chance to shuffle memory around if needed." [src torvalds/linux
 * include/uapi/linux/dma-buf.h @ 03ab8e6297ac]). A's side is its own
 * amdgpu_bo_cpu_map().
 *
 * Every subtest needs two amdgpu devices (`needs 2 amdgpu GPUs, found N`);
 * dynamic subtests per ordered pair, exporter first: gpu0-gpu1, gpu1-gpu0
 * (the names cuda_multigpu gives). The fixture is lib/amdgpu's leak check
 * (heap usage of every device, render-node and dma-buf fds).
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/dma-buf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "gc_amdgpu_drm.h"
#include "io.h"

#define BUF_SIZE (4 * MiB)
#define LEAK_SLACK (1 * MiB)
#define SETTLE_MS 1000
#define CHILD_MS 10000
#define SEED_A 0xa11ce
#define SEED_B 0xb0b

/* One shared buffer and everything made for it, on both sides. */
struct share {
	const struct gc_amdgpu_dev *a, *b;
	amdgpu_bo_handle exp;  /* A's buffer (NULL: none, or freed) */
	void *exp_cpu;         /* its amdgpu_bo_cpu_map() (NULL: none) */
	int fd;                /* A's dma-buf fd (-1: none) */
	amdgpu_bo_handle imp;  /* B's import (NULL: none) */
	void *imp_cpu;         /* B's amdgpu_bo_cpu_map() of it (NULL: none) */
	int fd_b;              /* B's re-export of its import (-1: none) */
	void *map_b;           /* mmap() of fd_b (NULL: none) */
	amdgpu_va_handle va_h; /* a VA range on B (NULL: none) */
	uint64_t va;
	bool va_mapped;
};

struct mg_fx {
	struct gc_amdgpu_fixture dev; /* first: devices and the leak check (lib/amdgpu) */
	struct share sh;
};

/* ------------------------------------------------------------ the buffer */

/* Everything still held, undone in reverse; no check. */
static void share_release(struct share *sh)
{
	if (sh->map_b)
		munmap(sh->map_b, BUF_SIZE);
	if (sh->fd_b >= 0)
		close(sh->fd_b);
	if (sh->va_mapped)
		amdgpu_bo_va_op(sh->imp, 0, BUF_SIZE, sh->va, 0, AMDGPU_VA_OP_UNMAP);
	if (sh->va_h)
		amdgpu_va_range_free(sh->va_h);
	if (sh->imp_cpu)
		amdgpu_bo_cpu_unmap(sh->imp);
	if (sh->imp)
		amdgpu_bo_free(sh->imp);
	if (sh->fd >= 0)
		close(sh->fd);
	if (sh->exp_cpu)
		amdgpu_bo_cpu_unmap(sh->exp);
	if (sh->exp)
		amdgpu_bo_free(sh->exp);
	*sh = (struct share){ .a = sh->a, .b = sh->b, .fd = -1, .fd_b = -1 };
}

/* A new pair: what the previous pair's failed case still held is given back first. */
static void share_begin(struct share *sh, const struct gc_amdgpu_dev *a,
			const struct gc_amdgpu_dev *b)
{
	share_release(sh);
	sh->a = a;
	sh->b = b;
}

/*
 * A's buffer in heap, filled with SEED_A through A's CPU mapping, and
 * exported (amdgpu.h amdgpu_bo_export: `Allow others to get access to buffer`
 * [src mesa/drm amdgpu/amdgpu.h @ b9ca37b31348]; libdrm:
 * drmPrimeHandleToFD(..., DRM_CLOEXEC | DRM_RDWR, ...)).
 */
static void share_export(struct share *sh, uint32_t heap, uint64_t flags)
{
	struct amdgpu_bo_alloc_request req = { .alloc_size = BUF_SIZE, .phys_alignment = 4096,
					       .preferred_heap = heap, .flags = flags };
	uint32_t fd = 0;
	int r = amdgpu_bo_alloc(sh->a->adev, &req, &sh->exp);

	if (r)
		sh->exp = NULL;
	gc_assert_f(r == 0, "%s: amdgpu_bo_alloc(%zu MiB): %s", sh->a->node, BUF_SIZE / MiB,
		    strerror(-r));
	gc_assert_ok(amdgpu_bo_cpu_map(sh->exp, &sh->exp_cpu));
	gc_pattern_fill(sh->exp_cpu, BUF_SIZE, 0, SEED_A);
	r = amdgpu_bo_export(sh->exp, amdgpu_bo_handle_type_dma_buf_fd, &fd);
	gc_assert_f(r == 0, "%s: amdgpu_bo_export(dma_buf_fd): %d (errno %s)", sh->a->node, r,
		    strerrorname_np(errno) ? strerrorname_np(errno) : "?");
	sh->fd = (int)fd;
}

/*
 * B imports A's fd (amdgpu.h amdgpu_bo_import, whose brief asks for access to
 * a buffer it calls shared, with alloc_size the `Buffer size` [src mesa/drm
 * amdgpu/amdgpu.h @ b9ca37b31348]).
 */
static void share_import(struct share *sh)
{
	struct amdgpu_bo_import_result res = { 0 };
	int r = amdgpu_bo_import(sh->b->adev, amdgpu_bo_handle_type_dma_buf_fd, (uint32_t)sh->fd,
				 &res);

	gc_assert_f(r == 0, "%s: amdgpu_bo_import of %s's dma-buf: %d (errno %s)", sh->b->node,
		    sh->a->node, r, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
	sh->imp = res.buf_handle;
	gc_check_eq_uint(res.alloc_size, BUF_SIZE);
}

/* B's own GPU VA map and unmap of its import: B's VM takes it as a buffer of its own. */
static void importer_gpu_map(struct share *sh)
{
	gc_assert_ok(amdgpu_va_range_alloc(sh->b->adev, amdgpu_gpu_va_range_general, BUF_SIZE, 0,
					   0, &sh->va, &sh->va_h, 0));
	gc_check_ok(amdgpu_bo_va_op(sh->imp, 0, BUF_SIZE, sh->va, 0, AMDGPU_VA_OP_MAP));
	sh->va_mapped = true;
	gc_check_ok(amdgpu_bo_va_op(sh->imp, 0, BUF_SIZE, sh->va, 0, AMDGPU_VA_OP_UNMAP));
	sh->va_mapped = false;
}

/* fstat() of fd: 0 or fail naming what. */
static struct stat fd_stat(int fd, const char *what)
{
	struct stat st;

	gc_assert_f(fstat(fd, &st) == 0, "fstat(%s): %s", what, strerror(errno));
	return st;
}

/*
 * B's view: B's re-export of its import is A's dma-buf (drm_prime.c,
 * drm_gem_prime_handle_to_fd(), under the comment `re-export the original
 * imported object`: `if (obj->import_attach) { dmabuf =
 * obj->import_attach->dmabuf;` [src alvinsun039/linux-torvalds
 * drivers/gpu/drm/drm_prime.c @ 00f18f2d3370]; each dma-buf has an inode of
 * its own, dma-buf.c dma_buf_getfile(): `inode->i_ino =
 * atomic64_inc_return(&dmabuf_inode);` [src gregkh/linux
 * drivers/dma-buf/dma-buf.c @ 73e7709d9919]), mapped for the CPU.
 */
static void importer_view(struct share *sh)
{
	uint32_t fd = 0;
	int r = amdgpu_bo_export(sh->imp, amdgpu_bo_handle_type_dma_buf_fd, &fd);
	void *m;

	gc_assert_f(r == 0, "%s: amdgpu_bo_export of the import: %d (errno %s)", sh->b->node, r,
		    strerrorname_np(errno) ? strerrorname_np(errno) : "?");
	sh->fd_b = (int)fd;
	if (sh->fd >= 0) {
		struct stat sa = fd_stat(sh->fd, "A's dma-buf"), sb = fd_stat(sh->fd_b, "B's");

		gc_check_f(sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino, "B re-exported "
			   "another dma-buf: inode %ju, A's is %ju", (uintmax_t)sb.st_ino,
			   (uintmax_t)sa.st_ino);
	}
	m = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, sh->fd_b, 0);
	gc_assert_f(m != MAP_FAILED, "mmap of B's dma-buf: %s", strerror(errno));
	sh->map_b = m;
}

/* <linux/dma-buf.h> DMA_BUF_IOCTL_SYNC with flags (DMA_BUF_SYNC_START/END | READ/WRITE). */
static void dmabuf_sync(int fd, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags };

	gc_assert_f(ioctl(fd, DMA_BUF_IOCTL_SYNC, &s) == 0, "DMA_BUF_IOCTL_SYNC(0x%" PRIx64 "): "
		    "%s", flags, strerror(errno));
}

static void check_pattern(const void *p, uint64_t seed, const char *where)
{
	struct gc_mismatch mm;
	char msg[192];

	gc_check_f(gc_pattern_check(p, BUF_SIZE, 0, seed, &mm) < 0, "%s: %s", where,
		   gc_mismatch_str(&mm, msg, sizeof(msg)));
}

/* B's view holds the pattern of seed (read under SYNC_START/END | READ). */
static void view_check(const struct share *sh, uint64_t seed, const char *where)
{
	dmabuf_sync(sh->fd_b, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
	check_pattern(sh->map_b, seed, where);
	dmabuf_sync(sh->fd_b, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
}

static void view_fill(const struct share *sh, uint64_t seed)
{
	dmabuf_sync(sh->fd_b, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
	gc_pattern_fill(sh->map_b, BUF_SIZE, 0, seed);
	dmabuf_sync(sh->fd_b, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);
}

/* ---------------------------------------------------------- shared-mapping */

/*
 * Contract (amdgpu.h amdgpu_bo_export `Allow others to get access to buffer`
 * / amdgpu_bo_import, access to the buffer it calls shared [src mesa/drm
 * amdgpu/amdgpu.h @ b9ca37b31348]): one buffer. B's import has the exported
 * size, maps into B's GPU VA space, re-exports as the same dma-buf, and its
 * bytes are A's: what A wrote through its CPU mapping reads back through B's
 * view, and what is written through B's view reads back through A's mapping.
 */
static void shared_one(struct share *sh, uint32_t heap, uint64_t flags, const char *what)
{
	char where[96];

	share_export(sh, heap, flags);
	share_import(sh);
	importer_gpu_map(sh);
	importer_view(sh);
	snprintf(where, sizeof(where), "%s: A's bytes through B's view", what);
	view_check(sh, SEED_A, where);
	view_fill(sh, SEED_B);
	snprintf(where, sizeof(where), "%s: B's bytes through A's CPU mapping", what);
	check_pattern(sh->exp_cpu, SEED_B, where);
	share_release(sh);
}

GC_AMDGPU_PAIR_SUBTEST(test_shared_mapping, struct mg_fx, fx, a, b)
{
	share_begin(&fx->sh, a, b);
	shared_one(&fx->sh, AMDGPU_GEM_DOMAIN_GTT, 0, "GTT");
	shared_one(&fx->sh, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED, "VRAM");
}

/* ---------------------------------------------------- exporter closes first */

/*
 * Contract (lifetime). drm_prime.c, its DOC section on reference counting for
 * GEM drivers: "On the export the &dma_buf holds a reference to the exported
 * buffer object, usually a &drm_gem_object." and "This reference needs to be
 * released when the final reference to the &dma_buf itself is dropped and its
 * &dma_buf_ops.release function is called." and "Thus the chain of references
 * always flows in one direction, avoiding loops: importing GEM object ->
 * dma-buf -> exported GEM bo." [src alvinsun039/linux-torvalds
 * drivers/gpu/drm/drm_prime.c @ 00f18f2d3370]; amdgpu_dma_buf.c's import
 * takes that dma-buf reference (`get_dma_buf(dma_buf);` [src gregkh/linux
 * drivers/gpu/drm/amd/amdgpu/amdgpu_dma_buf.c @ 8a7bbd0236d2]). amdgpu.h
 * amdgpu_bo_free: `In the case of memory shared between different
 * applications all resources will be “physically” freed only all such
 * applications will be terminated` [src mesa/drm amdgpu/amdgpu.h @
 * b9ca37b31348]. So once A has unmapped and freed its buffer and closed its
 * fd: B's view still reads A's bytes, A's GTT heap still holds the buffer
 * (device-wide reading: at least BUF_SIZE above what it was before the
 * export), and when B lets go, A's GTT usage comes back.
 */
GC_AMDGPU_PAIR_SUBTEST(test_exporter_closes_first, struct mg_fx, fx, a, b)
{
	struct share *sh = &fx->sh;
	struct gc_amdgpu_usage base, during, after = { 0 };
	int r;

	share_begin(sh, a, b);
	gc_amdgpu_read_usage(a, &base);
	share_export(sh, AMDGPU_GEM_DOMAIN_GTT, 0);
	share_import(sh);
	gc_assert_ok(amdgpu_bo_cpu_unmap(sh->exp));
	sh->exp_cpu = NULL;
	gc_check_ok(amdgpu_bo_free(sh->exp));
	sh->exp = NULL;
	gc_assert_syscall(close(sh->fd));
	sh->fd = -1;
	importer_view(sh);
	view_check(sh, SEED_A, "A's bytes through B's view after A let go");
	gc_amdgpu_read_usage(a, &during);
	gc_check_cmpuint(during.gtt, >=, base.gtt + BUF_SIZE);
	share_release(sh);
	r = gc_amdgpu_usage_settles(a, &base, LEAK_SLACK, SETTLE_MS, &after);
	gc_check_f(r == 0, "%s: GTT heap usage %" PRIu64 " -> %" PRIu64 " bytes after B let go "
		   "too (%s; device-wide counter)", a->node, base.gtt, after.gtt,
		   r == -EAGAIN ? "did not settle" : strerror(-r));
}

/* --------------------------------------------------------- invalid import */

/*
 * One import that must fail with errno want, and leave nothing: no buffer
 * handed out (res untouched) and B's heap usage where it was. What a failure
 * returns: amdgpu.h `<0 - Negative POSIX Error code` [src mesa/drm
 * amdgpu/amdgpu.h @ b9ca37b31348]; libdrm 2.4.114's amdgpu_bo_import()
 * returns drmPrimeFDToHandle()'s own result, which is drmIoctl()'s -1 with
 * errno set (`ret = drmIoctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &args); if
 * (ret) return ret;` [src mesa/drm xf86drm.c @ b9ca37b31348]): the errno is
 * read from either (gc_amdgpu_failure_errno()).
 */
static void usage_unchanged(const struct gc_amdgpu_dev *d, const struct gc_amdgpu_usage *u0,
			    const char *what)
{
	struct gc_amdgpu_usage now = { 0 };

	gc_check_f(gc_amdgpu_usage_settles(d, u0, LEAK_SLACK, SETTLE_MS, &now) == 0, "%s: %s heap "
		   "usage VRAM %" PRIu64 " -> %" PRIu64 ", GTT %" PRIu64 " -> %" PRIu64 " bytes",
		   what, d->node, u0->vram, now.vram, u0->gtt, now.gtt);
}

static void expect_import_fails(const struct gc_amdgpu_dev *b, enum amdgpu_bo_handle_type type,
				uint32_t handle, int want, const char *what)
{
	struct amdgpu_bo_import_result res = { .buf_handle = NULL, .alloc_size = 7 };
	struct gc_amdgpu_usage u0;
	int r, err;

	gc_amdgpu_read_usage(b, &u0);
	errno = 0;
	r = amdgpu_bo_import(b->adev, type, handle, &res);
	err = gc_amdgpu_failure_errno(r, errno);
	if (r == 0 && res.buf_handle)
		amdgpu_bo_free(res.buf_handle);
	gc_check_f(r < 0 && err == want, "%s: amdgpu_bo_import returned %d, errno %s; expected "
		   "< 0 with %s", what, r, strerrorname_np(err) ? strerrorname_np(err) : "0",
		   strerrorname_np(want));
	gc_check_f(res.buf_handle == NULL && res.alloc_size == 7, "%s: a failed import wrote its "
		   "result (buffer %p, size %" PRIu64 ")", what, (void *)res.buf_handle,
		   res.alloc_size);
	usage_unchanged(b, &u0, what);
}

/*
 * Contract (an invalid or closed fd is rejected). dma-buf.c dma_buf_get(),
 * where the kernel's import starts (drm_prime.c drm_gem_prime_fd_to_handle():
 * `dma_buf = dma_buf_get(prime_fd); if (IS_ERR(dma_buf)) return
 * PTR_ERR(dma_buf);` [src alvinsun039/linux-torvalds
 * drivers/gpu/drm/drm_prime.c @ 00f18f2d3370]): `file = fget(fd); if (!file)
 * return ERR_PTR(-EBADF); if (!is_dma_buf_file(file)) { fput(file); return
 * ERR_PTR(-EINVAL); }` [src gregkh/linux drivers/dma-buf/dma-buf.c @
 * 73e7709d9919]. So a closed fd (A's dma-buf fd, just closed) is EBADF, an
 * open fd that is not a dma-buf (B's own render node) EINVAL; libdrm refuses
 * a KMS handle itself: amdgpu_bo.c "Importing a KMS handle in not allowed."
 * [src mesa/drm amdgpu/amdgpu_bo.c @ b9ca37b31348] -> -EPERM. Nothing
 * half-imported: no buffer returned, B's memory unchanged, and the fixture's
 * fd count unchanged; and the buffer still imports and shares afterwards.
 */
GC_AMDGPU_PAIR_SUBTEST(test_import_invalid_fd, struct mg_fx, fx, a, b)
{
	struct share *sh = &fx->sh;
	int closed;

	share_begin(sh, a, b);
	share_export(sh, AMDGPU_GEM_DOMAIN_GTT, 0);
	closed = dup(sh->fd);
	gc_assert_syscall(closed);
	gc_assert_syscall(close(closed)); /* a number nothing holds now (this thread opens none) */
	expect_import_fails(b, amdgpu_bo_handle_type_dma_buf_fd, (uint32_t)closed, EBADF,
			    "closed fd");
	expect_import_fails(b, amdgpu_bo_handle_type_dma_buf_fd, (uint32_t)b->fd, EINVAL,
			    "render-node fd (not a dma-buf)");
	expect_import_fails(b, amdgpu_bo_handle_type_kms, 1, EPERM, "KMS handle");
	share_import(sh);
	importer_view(sh);
	view_check(sh, SEED_A, "A's bytes through B's view after the failed imports");
	share_release(sh);
}

/* --------------------------------------------------------- import CPU map */

static void touch_import(void *arg)
{
	const volatile uint8_t *p = arg;

	_exit(p[0] == gc_pattern_byte(0, SEED_A) ? 0 : 1); /* SIGBUS expected before this */
}

/*
 * Contract (the importer's own CPU mapping). amdgpu_dma_buf.c
 * amdgpu_dma_buf_create_obj(): "Creates an empty SG BO for DMA-buf import."
 * [src gregkh/linux drivers/gpu/drm/amd/amdgpu/amdgpu_dma_buf.c @
 * 8a7bbd0236d2], handing `ttm_bo_type_sg` to amdgpu_gem_object_create();
 * ttm_tt.c ttm_tt_create(): `case ttm_bo_type_sg: page_flags |=
 * TTM_TT_FLAG_EXTERNAL;` [src torvalds/linux drivers/gpu/drm/ttm/ttm_tt.c @
 * 03a0a1040895]; ttm_bo_vm.c ttm_bo_vm_reserve(), which amdgpu's fault
 * handler calls first: "Refuse to fault imported pages. This should be
 * handled (if at all) by redirecting mmap to the exporter." [src
 * torvalds/linux drivers/gpu/drm/ttm/ttm_bo_vm.c @ 03a0a1040895] ->
 * VM_FAULT_SIGBUS, unless the buffer is also flagged
 * TTM_TT_FLAG_EXTERNAL_MAPPABLE, which nothing read here shows amdgpu setting
 * (older kernels: the same test on TTM_PAGE_FLAG_SG, in ttm_bo_vm_fault()
 * [src torvalds/linux drivers/gpu/drm/ttm/ttm_bo_vm.c @ 5a0e3eb339c7]).
 * amdgpu's mmap does not redirect (amdgpu_gem.c amdgpu_gem_object_mmap()
 * refuses only userptr and NO_CPU_ACCESS buffers, then drm_gem_ttm_mmap()).
 * So amdgpu_bo_cpu_map() of B's import succeeds and the first read through it
 * raises SIGBUS: never other bytes. The read is a forked helper's (the
 * MAP_SHARED mapping is inherited), so this process's devices see no fault.
 */
GC_AMDGPU_PAIR_SUBTEST(test_import_cpu_map, struct mg_fx, fx, a, b)
{
	struct share *sh = &fx->sh;

	share_begin(sh, a, b);
	share_export(sh, AMDGPU_GEM_DOMAIN_GTT, 0);
	share_import(sh);
	gc_assert_ok(amdgpu_bo_cpu_map(sh->imp, &sh->imp_cpu));
	gc_expect_child_signal(touch_import, sh->imp_cpu, SIGBUS, CHILD_MS);
	share_release(sh);
}

/* ----------------------------------------------------------------- fixture */

static void *mg_setup(void)
{
	struct mg_fx *f = gc_amdgpu_fixture_new(gc_amdgpu_require(2), sizeof(struct mg_fx),
						LEAK_SLACK, SETTLE_MS);

	f->sh = (struct share){ .fd = -1, .fd_b = -1 };
	return f;
}

static void mg_after_each(void *data)
{
	struct mg_fx *f = data;

	share_release(&f->sh);
	gc_amdgpu_fixture_check(f);
}

static const struct gc_fixture fixture = {
	.setup = mg_setup,
	.teardown = gc_amdgpu_fixture_free,
	.before_each = gc_amdgpu_fixture_snapshot,
	.after_each = mg_after_each,
};

static const struct gc_subtest subtests[] = {
	{ "shared-mapping", test_shared_mapping,
	  "a GTT and a VRAM buffer exported by A, imported by B: same size, B maps it, same "
	  "dma-buf, the same bytes either way" },
	{ "exporter-closes-first", test_exporter_closes_first,
	  "A frees its buffer and closes its fd first: B still reads A's bytes, A's memory "
	  "held until B lets go" },
	{ "import-invalid-fd", test_import_invalid_fd,
	  "import of a closed fd (EBADF), a non-dma-buf fd (EINVAL), a KMS handle (EPERM): "
	  "nothing imported, memory unchanged" },
	{ "import-cpu-map", test_import_cpu_map,
	  "B's own CPU mapping of its import: a read raises SIGBUS (TTM refuses to fault "
	  "imported pages), never other bytes" },
	{ 0 }
};

GC_MAIN(.name = "amdgpu_multigpu",
	.description = "the multigpu contract between two amdgpu devices through dma-buf",
	.subtests = subtests, .fixture = &fixture)
