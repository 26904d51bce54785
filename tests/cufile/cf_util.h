/* SPDX-License-Identifier: MIT */
/*
 * cufile_io's shared pieces: the per-process environment (CUDA + cuFile +
 * scratch), device buffers with guard bytes, and the byte-exact checks.
 *
 * Device buffer layout of every data check: total bytes, the target range
 * [boff, boff + size) in the middle. Before the call the whole buffer holds
 * the inverse pattern keyed so that byte j sits at file offset key + j with
 * key = foff - boff (mod 2^64); after a correct read, the target bytes hold
 * the pattern at the same keys and everything else is untouched. One key
 * thus checks the data and both guards.
 */
#ifndef GPUCONFORM_CF_UTIL_H
#define GPUCONFORM_CF_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "fastpath.h"
#include "gc_cuda.h"
#include "gc_cufile.h"

#define KIB ((uint64_t)1 << 10)
#define GUARD (4 * KIB)  /* bytes checked on each side of a target range */

struct cf_env {
	struct gc_cuda *cu;
	struct gc_cufile cf;
	struct gc_fp_scratch scratch;
	bool stats;          /* level-3 statistics on: the path is known */
	char stats_why[256]; /* why not */
	char *kept[64];      /* paths of the files cf_file() made, unlinked after each subtest */
	int n_kept;
};

/*
 * In the fixture's setup: libcufile present and the scratch location fit for
 * it (O_DIRECT, a block device, its udev record), else skip naming what is
 * missing and the fix. CUDA is not touched, so subtests may still fork.
 */
void cf_env_probe(struct cf_env *e);
/* In a subtest: CUDA on device 0, cuFileDriverOpen, statistics if possible. */
void cf_env_gpu(struct cf_env *e);
/* Skip unless CUDA is still untouched in this process (for subtests that fork). */
void cf_env_require_fresh(const struct cf_env *e);
/* cuFileDriverClose and the CUDA table; safe if cf_env_gpu never ran. */
void cf_env_gpu_close(struct cf_env *e);

/* Unlink every file cf_file() made (a failed subtest leaves nothing behind). */
void cf_env_cleanup(struct cf_env *e);

/* cuFileHandleRegister for fd: 0 or the cuFile status (never skips or fails). */
int cf_register(const struct cf_env *e, int fd, void **fh);
/* The same, failing the subtest with the status name. */
void *cf_register_ok(const struct cf_env *e, int fd);

/* A test file of size bytes of the pattern for seed, O_RDWR | O_DIRECT. */
void cf_file(struct cf_env *e, const char *tag, uint64_t size, uint64_t seed,
	     int open_flags, struct gc_fp_file *f);
/* cf_file(), then cf_register_ok() of its fd: the file in f, its cuFile handle returned. */
void *cf_file_registered(struct cf_env *e, const char *tag, uint64_t size, uint64_t seed,
			 int open_flags, struct gc_fp_file *f);

/* cuMemAlloc / cuMemFree, failing the subtest with the CUresult. */
CUdeviceptr cf_dev_alloc(const struct cf_env *e, uint64_t size);
void cf_dev_free(const struct cf_env *e, CUdeviceptr d);

/* Fill all total bytes at d with the inverse pattern at keys key + j. */
void cf_dev_poison(const struct cf_env *e, CUdeviceptr d, uint64_t total, uint64_t key,
		   uint64_t seed);
/* Fill [boff, boff + size) with the pattern at keys foff + j (the source of a write). */
void cf_dev_fill(const struct cf_env *e, CUdeviceptr d, uint64_t boff, uint64_t size,
		 uint64_t foff, uint64_t seed);

/*
 * Check the whole buffer: [boff, boff + done) must hold the pattern (foff +
 * j), everything else the untouched poison (key foff - boff). Fails the
 * subtest naming the first bad byte and the region it is in.
 */
void cf_dev_expect(const struct cf_env *e, CUdeviceptr d, uint64_t total, uint64_t boff,
		   uint64_t done, uint64_t foff, uint64_t seed, const char *what);
/*
 * For a read of req bytes that stopped at EOF after done: as cf_dev_expect,
 * except that [boff + done, boff + req) may be either untouched or all zero:
 * Linux's O_DIRECT pread(2) itself zero-fills the request past EOF (seen on
 * ext4, 6.18: a 16 KiB read at 4096 of an 8292-byte file returns 4196 and
 * zeroes the rest of the buffer up to 16 KiB). Past the request: untouched.
 */
void cf_dev_expect_eof(const struct cf_env *e, CUdeviceptr d, uint64_t total, uint64_t boff,
		       uint64_t done, uint64_t req, uint64_t foff, uint64_t seed, const char *what);
/* The file's bytes [off, off + len) hold the pattern for seed, else fail. */
void cf_file_expect(const struct gc_fp_file *f, uint64_t off, uint64_t len, uint64_t seed,
		    const char *what);

/* Run a cuFileRead / cuFileWrite and say which path served it (if known). */
ssize_t cf_read(const struct cf_env *e, void *fh, CUdeviceptr d, uint64_t size, int64_t foff,
		int64_t boff, int *err_no, char *path, size_t path_len);
ssize_t cf_write(const struct cf_env *e, void *fh, CUdeviceptr d, uint64_t size, int64_t foff,
		 int64_t boff, int *err_no, char *path, size_t path_len);

/* `4096 bytes` / `-1 (errno ...)` / `-5022 (CU_FILE_INVALID_VALUE)`. */
const char *cf_ret(ssize_t r, int err_no, char *buf, size_t len);

#endif
