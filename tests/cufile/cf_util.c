/* SPDX-License-Identifier: MIT */
#include "cf_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"

void cf_env_probe(struct cf_env *e)
{
	char why[600];
	int r;

	memset(e, 0, sizeof(*e));
	r = gc_cufile_open(&e->cf, why, sizeof(why));
	if (r < 0)
		gc_skip("%s", why);
	r = gc_fp_scratch_probe(NULL, &e->scratch, why, sizeof(why));
	if (r < 0)
		gc_skip("scratch: %s", why);
	r = gc_fp_scratch_require(&e->scratch,
				  GC_FP_NEED_ODIRECT | GC_FP_NEED_BLOCKDEV | GC_FP_NEED_UDEV, why,
				  sizeof(why));
	if (r < 0)
		gc_skip("%s", why);
}

void cf_env_gpu(struct cf_env *e)
{
	char eb[96], mode[160], v[16];
	gc_cufile_err ce;

	if (e->cu)
		return; /* a previous subtest of this process opened it */
	e->cu = gc_cuda_require();
	ce = e->cf.fn.driver_open();
	if (ce.err != 0)
		gc_fail("cuFileDriverOpen: %s", gc_cufile_strerror(ce, eb, sizeof(eb)));
	e->stats = gc_cufile_stats_enable(&e->cf, e->stats_why, sizeof(e->stats_why)) == 0;
	gc_info("%s %s: %s; request paths %s%s", e->cf.soname,
		gc_cufile_version_str(e->cf.version, v, sizeof(v)),
		gc_cufile_mode_str(&e->cf, mode, sizeof(mode)),
		e->stats ? "counted by level-3 statistics" : "cannot be told: ",
		e->stats ? "" : e->stats_why);
}

void cf_env_gpu_close(struct cf_env *e)
{
	if (!e->cu)
		return;
	e->cf.fn.driver_close();
	gc_cuda_close(e->cu);
	e->cu = NULL;
}

void cf_env_require_fresh(const struct cf_env *e)
{
	if (e->cu)
		gc_skip("needs a process in which CUDA is not initialised yet (it forks): run it "
			"alone with --run-subtest, as the runner does");
}

int cf_register(const struct cf_env *e, int fd, void **fh)
{
	gc_cufile_descr d;

	memset(&d, 0, sizeof(d));
	d.type = GC_CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	d.handle.fd = fd;
	*fh = NULL;
	return e->cf.fn.handle_register(fh, &d).err;
}

void *cf_register_ok(const struct cf_env *e, int fd)
{
	void *fh;
	int err = cf_register(e, fd, &fh);

	gc_assert_f(err == 0, "cuFileHandleRegister(fd %d): %s (%d)", fd, gc_cufile_err_name(err),
		    err);
	return fh;
}

void cf_file(struct cf_env *e, const char *tag, uint64_t size, uint64_t seed,
	     int open_flags, struct gc_fp_file *f)
{
	char why[600];
	/*
	 * Kept linked until gc_fp_file_destroy(): in compat mode
	 * cuFileHandleRegister reopens the file by its path and fails with
	 * CU_FILE_GETNEWFD_FAILED (errno ENOENT) for an unlinked one (seen with
	 * libcufile 1.15; the unlinked-file subtest records it).
	 */
	int r = gc_fp_file_create(&e->scratch, tag, size, seed, open_flags, true, f, why,
				  sizeof(why));

	gc_assert_f(r == 0, "%s", why);
	if (e->n_kept < (int)(sizeof(e->kept) / sizeof(e->kept[0])))
		e->kept[e->n_kept++] = strdup(f->path);
}

void *cf_file_registered(struct cf_env *e, const char *tag, uint64_t size, uint64_t seed,
			 int open_flags, struct gc_fp_file *f)
{
	cf_file(e, tag, size, seed, open_flags, f);
	return cf_register_ok(e, f->fd);
}

void cf_env_cleanup(struct cf_env *e)
{
	for (int i = 0; i < e->n_kept; i++) {
		if (e->kept[i])
			unlink(e->kept[i]); /* ENOENT: destroyed already */
		free(e->kept[i]);
	}
	e->n_kept = 0;
}

CUdeviceptr cf_dev_alloc(const struct cf_env *e, uint64_t size)
{
	CUdeviceptr d = 0;

	gc_cu_assert(e->cu, e->cu->cuMemAlloc(&d, size ? size : 1));
	return d;
}

void cf_dev_free(const struct cf_env *e, CUdeviceptr d)
{
	if (d)
		gc_cu_assert(e->cu, e->cu->cuMemFree(d));
}

static void *host_alloc(uint64_t size)
{
	void *p = malloc(size ? size : 1);

	gc_assert_f(p, "malloc(%llu): out of memory", (unsigned long long)size);
	return p;
}

void cf_dev_poison(const struct cf_env *e, CUdeviceptr d, uint64_t total, uint64_t key,
		   uint64_t seed)
{
	uint8_t *h = host_alloc(total);

	gc_pattern_fill_inv(h, total, key, seed);
	gc_cu_assert(e->cu, e->cu->cuMemcpyHtoD(d, h, total));
	free(h);
}

void cf_dev_fill(const struct cf_env *e, CUdeviceptr d, uint64_t boff, uint64_t size,
		 uint64_t foff, uint64_t seed)
{
	uint8_t *h = host_alloc(size);

	gc_pattern_fill(h, size, foff, seed);
	if (size)
		gc_cu_assert(e->cu, e->cu->cuMemcpyHtoD(d + boff, h, size));
	free(h);
}

static void expect_region(const uint8_t *h, uint64_t from, uint64_t to, uint64_t key,
			  uint64_t seed, bool poison, const char *what, const char *region)
{
	struct gc_mismatch mm;
	char m[200];
	int64_t bad;

	if (to <= from)
		return;
	bad = poison ? gc_pattern_check_inv(h + from, to - from, key + from, seed, &mm) :
		       gc_pattern_check(h + from, to - from, key + from, seed, &mm);
	gc_assert_f(bad < 0, "%s: device buffer %s [%llu, %llu): %s", what, region,
		    (unsigned long long)from, (unsigned long long)to,
		    gc_mismatch_str(&mm, m, sizeof(m)));
}

void cf_dev_expect(const struct cf_env *e, CUdeviceptr d, uint64_t total, uint64_t boff,
		   uint64_t done, uint64_t foff, uint64_t seed, const char *what)
{
	uint8_t *h = host_alloc(total);
	uint64_t key = foff - boff;

	gc_cu_assert(e->cu, e->cu->cuMemcpyDtoH(h, d, total));
	expect_region(h, 0, boff, key, seed, true, what, "guard before");
	expect_region(h, boff, boff + done, key, seed, false, what, "data");
	expect_region(h, boff + done, total, key, seed, true, what, "bytes after the data");
	free(h);
}

/*
 * What the n bytes at h are, for a region that is neither untouched nor
 * zero: how many are zero, and where in this file (seed) their first 64
 * bytes come from, if anywhere in [0, scan): stale bytes of an earlier
 * request, say.
 */
static void describe_stale(const uint8_t *h, uint64_t n, uint64_t scan, uint64_t seed,
			   const char *what)
{
	uint64_t zeros = 0, probe = n < 64 ? n : 64;
	uint8_t *file = host_alloc(scan);
	const uint8_t *hit;

	for (uint64_t i = 0; i < n; i++)
		zeros += h[i] == 0;
	gc_pattern_fill(file, scan, 0, seed);
	hit = probe ? memmem(file, scan, h, probe) : NULL;
	if (hit)
		gc_info("%s: of the %llu bytes past EOF, %llu are zero; the first %llu equal this "
			"file's bytes at offset %lld: stale data of an earlier request", what,
			(unsigned long long)n, (unsigned long long)zeros,
			(unsigned long long)probe, (long long)(hit - file));
	else
		gc_info("%s: of the %llu bytes past EOF, %llu are zero; the first %llu are found "
			"nowhere in this file's first %llu bytes", what, (unsigned long long)n,
			(unsigned long long)zeros, (unsigned long long)probe,
			(unsigned long long)scan);
	free(file);
}

void cf_dev_expect_eof(const struct cf_env *e, CUdeviceptr d, uint64_t total, uint64_t boff,
		       uint64_t done, uint64_t req, uint64_t foff, uint64_t seed, const char *what)
{
	uint8_t *h = host_alloc(total);
	uint64_t key = foff - boff, from = boff + done, to = boff + req;
	bool zero = true;

	gc_cu_assert(e->cu, e->cu->cuMemcpyDtoH(h, d, total));
	expect_region(h, 0, boff, key, seed, true, what, "guard before");
	expect_region(h, boff, from, key, seed, false, what, "data");
	for (uint64_t i = from; i < to && zero; i++)
		zero = h[i] == 0;
	if (!zero && gc_pattern_check_inv(h + from, to - from, key + from, seed, NULL) >= 0)
		describe_stale(h + from, to - from, foff + req + (1u << 20), seed, what);
	if (!zero || from == to)
		expect_region(h, from, to, key, seed, true, what,
			      "request past EOF (neither untouched nor zero-filled)");
	else
		gc_info("%s: the %llu requested bytes past EOF were zero-filled, as an O_DIRECT "
			"pread(2) on this kernel does too", what, (unsigned long long)(to - from));
	expect_region(h, to, total, key, seed, true, what, "guard after the request");
	free(h);
}

void cf_file_expect(const struct gc_fp_file *f, uint64_t off, uint64_t len, uint64_t seed,
		    const char *what)
{
	struct gc_mismatch mm;
	char m[200];

	gc_assert_f(gc_fp_file_check(f, off, len, seed, &mm) < 0, "%s: file [%llu, %llu): %s", what,
		    (unsigned long long)off, (unsigned long long)(off + len),
		    gc_mismatch_str(&mm, m, sizeof(m)));
}

static void path_note(const struct cf_env *e, enum gc_cufile_dir dir,
		      const struct gc_cufile_paths *before, char *path, size_t len)
{
	struct gc_cufile_paths after;

	if (!path || !len)
		return;
	if (!e->stats || gc_cufile_paths_get(&e->cf, dir, &after) < 0)
		snprintf(path, len, "cannot tell");
	else
		gc_cufile_paths_diff_str(before, &after, path, len);
}

static ssize_t cf_io(const struct cf_env *e, bool write, void *fh, CUdeviceptr d, uint64_t size,
		     int64_t foff, int64_t boff, int *err_no, char *path, size_t path_len)
{
	enum gc_cufile_dir dir = write ? GC_CUFILE_WRITES : GC_CUFILE_READS;
	struct gc_cufile_paths before = { 0 };
	ssize_t r;

	if (e->stats)
		gc_cufile_paths_get(&e->cf, dir, &before);
	errno = 0;
	r = write ? e->cf.fn.write(fh, (const void *)(uintptr_t)d, size, foff, boff) :
		    e->cf.fn.read(fh, (void *)(uintptr_t)d, size, foff, boff);
	*err_no = errno;
	path_note(e, dir, &before, path, path_len);
	return r;
}

ssize_t cf_read(const struct cf_env *e, void *fh, CUdeviceptr d, uint64_t size, int64_t foff,
		int64_t boff, int *err_no, char *path, size_t path_len)
{
	return cf_io(e, false, fh, d, size, foff, boff, err_no, path, path_len);
}

ssize_t cf_write(const struct cf_env *e, void *fh, CUdeviceptr d, uint64_t size, int64_t foff,
		 int64_t boff, int *err_no, char *path, size_t path_len)
{
	return cf_io(e, true, fh, d, size, foff, boff, err_no, path, path_len);
}

const char *cf_ret(ssize_t r, int err_no, char *buf, size_t len)
{
	return gc_cufile_ret_str(r, err_no, buf, len);
}
