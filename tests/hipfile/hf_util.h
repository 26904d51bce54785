/* SPDX-License-Identifier: MIT */
/*
 * hipfile_io's shared pieces: the per-process environment (HIP runtime, the
 * three AMD entry points, the scratch files, one device buffer), resources a
 * subtest holds (released by the fixture's after_each whatever happens), and
 * the byte-exact checks. UNVERIFIED ON HARDWARE (see io.c).
 *
 * Keying: device byte j of a checked range stands for the file offset key + j.
 * A read target [data, data + size) for file offset foff has GUARD bytes on
 * each side, keyed from foff - GUARD (mod 2^64): before the call the whole
 * span holds the inverse pattern; after a correct read the target holds the
 * pattern at the same keys, everything else is untouched. The inverse differs
 * from the pattern at every byte, so a single misplaced byte is seen.
 */
#ifndef GPUCONFORM_HF_UTIL_H
#define GPUCONFORM_HF_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "fastpath.h"
#include "fastpath_subtests.h"
#include "gc_hipfile.h"

#define KIB ((uint64_t)1 << 10)
#define PAGE 4096u
#define GUARD (4 * KIB)               /* bytes checked on each side of a target */
#define MAX_SIZE GC_FP_MATRIX_MAX_SIZE /* largest transfer of the matrix and perf */
#define MAX_FOFF GC_FP_MATRIX_MAX_FOFF /* largest file offset of the matrix */
#define TAIL (64 * KIB)               /* file bytes checked after a written range */
#define FILE_LEN (MAX_SIZE + 2 * MiB) /* >= MAX_FOFF + MAX_SIZE + TAIL, 4 KiB multiple */
#define DEV_LEN (GUARD + PAGE + MAX_SIZE + GUARD) /* guard, buffer offset, data, guard */
#define STAGE_LEN (8 * MiB)           /* host staging for device fills and checks */

#define RD_SEED 0x68697072u /* the read file */
#define WR_OLD 0x6869706fu  /* the write file before a write */
#define WR_NEW 0x6869706eu  /* what writes write */

enum hf_kind {
	HF_FD, HF_DEV, HF_PINNED, HF_FILE, HF_HANDLE, HF_BUF, HF_DRIVER, HF_BATCH,
	HF_STREAM,  /* hipStreamDestroy */
	HF_FSTREAM, /* hipFileStreamDeregister */
};
struct hf_res {
	enum hf_kind kind;
	union {
		int fd;
		void *p;
	} u;
};
#define HF_MAX_RES 96

struct hf_env {
	struct gc_hipfile h;
	struct gc_fp_scratch s;
	struct gc_hf_rules rules;  /* hipFile's fastpath rules on the scratch filesystem */
	struct gc_fp_file rd, wr;  /* FILE_LEN bytes: RD_SEED (O_RDONLY), WR_OLD (O_RDWR) */
	int rd_bfd, wr_bfd;        /* buffered descriptors of the same two files */
	struct gc_io_buf stage;
	void *dev;                 /* DEV_LEN bytes of device memory */
	int64_t use_baseline;      /* hipFileUseCount() when the fixture was made */
	int scratch_fds;           /* descriptors on scratch files before the subtest */
	struct hf_res res[HF_MAX_RES];
	int n_res;
};

/* ------------------------------------------------------------ fixture */

void *hf_setup(void);
void hf_teardown(void *data);
void hf_before_each(void *data);
void hf_after_each(void *data);

/* ------------------------------------------------------------ entries */

static inline bool hf_have(const struct hf_env *e, enum gc_hf_entry x)
{
	return e->h.backend[x].found;
}
/* Skip naming the missing symbol and the runtime version, unless x is there. */
void hf_require(const struct hf_env *e, enum gc_hf_entry x);
/* Skip naming every missing entry when none of them is there. */
void hf_require_any(const struct hf_env *e);

/*
 * One dynamic subtest per entry point, named by its symbol for the direction
 * (hipFileRead...) when by_symbol, else by the entry (hipFile, hipAmdFile,
 * hsa_amd_ais_file); a missing entry skips its dynamic subtest with why.
 * Everything held is released before and after each one.
 */
void hf_each_entry(struct hf_env *e, bool write, bool by_symbol,
		   void (*fn)(struct hf_env *e, enum gc_hf_entry x, bool write));

/* --------------------------------------------------- held resources */

int hf_reopen(struct hf_env *e, int fd, int flags);  /* /proc/self/fd/N, O_CLOEXEC */
void hf_close(struct hf_env *e, int fd);
void *hf_dev_alloc(struct hf_env *e, size_t len);
void hf_dev_free(struct hf_env *e, void *p);
void *hf_pinned_alloc(struct hf_env *e, size_t len);  /* hipHostMalloc */
struct gc_fp_file *hf_file(struct hf_env *e, const char *tag, uint64_t size, uint64_t seed,
			   int open_flags);
void hf_file_destroy(struct hf_env *e, struct gc_fp_file *f);

/* hipFile: errors come back (the error pair); what succeeded is held. */
gc_hipfile_err hf_register(struct hf_env *e, int fd, gc_hipfile_handle *fh);
gc_hipfile_handle hf_register_ok(struct hf_env *e, int fd);
void hf_deregister(struct hf_env *e, gc_hipfile_handle fh);
void hf_buf_register_ok(struct hf_env *e, const void *base, size_t len);
void hf_buf_deregister_ok(struct hf_env *e, const void *base);
void hf_driver_open_ok(struct hf_env *e);
void hf_driver_close_ok(struct hf_env *e);
/* hipFileDriverOpen unless this subtest already holds it open. */
void hf_driver_ensure(struct hf_env *e);
/* hipFile: the driver held open and fd registered (NULL for the raw entries). */
gc_hipfile_handle hf_handle_for(struct hf_env *e, enum gc_hf_entry x, int fd);
void hf_hold(struct hf_env *e, enum hf_kind kind, void *p);
void hf_forget(struct hf_env *e, enum hf_kind kind, const void *p);
/* Release everything held, newest first (after_each; subtests may call it too). */
void hf_release_all(struct hf_env *e);

/* --------------------------------------------------------- requests */

/*
 * The request for entry x: hipFile gets (fh, base, buf_off); the raw entries
 * get (fd, base + buf_off).
 */
struct gc_hf_req hf_req(enum gc_hf_entry x, bool write, int fd, gc_hipfile_handle fh,
			void *base, int64_t buf_off, uint64_t size, int64_t foff);
/*
 * The same for a target inside the fixture's device buffer: hipFile gets the
 * allocation's base and the target's offset in it (the form every hipFile
 * user has), the raw entries the target's address.
 */
struct gc_hf_req hf_req_dev(const struct hf_env *e, enum gc_hf_entry x, bool write, int fd,
			    gc_hipfile_handle fh, char *data, uint64_t size, int64_t foff);
/* Make the call; desc[] gets the result and the path that served it. */
int64_t hf_io(struct hf_env *e, const struct gc_hf_req *r, struct gc_hf_res *res, char *desc,
	      size_t len);
/* `GPU-direct (...)` / `cannot tell (...; documented rules predict ...)`. */
const char *hf_path_str(const struct hf_env *e, const struct gc_hf_req *r,
			const struct gc_hf_res *res, char *buf, size_t len);

/* ------------------------------------------------------------ checks */

/* Fill len device bytes at dev with the pattern (or inverse) keyed from key. */
void hf_dev_fill(struct hf_env *e, void *dev, uint64_t len, uint64_t key, uint64_t seed,
		 bool inv);
/* The len device bytes at dev hold the pattern (or inverse) keyed from key, else fail. */
void hf_dev_expect(struct hf_env *e, const char *what, const void *dev, uint64_t len,
		   uint64_t key, uint64_t seed, bool inv);
/* Poison [data - GUARD, data + size + GUARD) with the inverse keyed from foff - GUARD. */
void hf_poison(struct hf_env *e, char *data, uint64_t size, uint64_t foff, uint64_t seed);
/*
 * After a read of done bytes into [data, data + size): the guards and
 * [done, size) untouched, [0, done) the pattern at foff.
 */
void hf_expect_read(struct hf_env *e, const char *what, const char *data, uint64_t size,
		    uint64_t done, uint64_t foff, uint64_t seed);
/*
 * The source of a write: guards hold WR_OLD's inverse, [data, data + size)
 * WR_NEW's pattern at foff. hf_expect_source() checks it is all unchanged.
 */
void hf_source(struct hf_env *e, char *data, uint64_t size, uint64_t foff);
void hf_expect_source(struct hf_env *e, const char *what, const char *data, uint64_t size,
		      uint64_t foff);

/* Write [off, off + len) of bfd's file with the pattern for seed; sync; drop its cache. */
void hf_file_restore(struct hf_env *e, int bfd, uint64_t off, uint64_t len, uint64_t seed);
/* The file's bytes [off, off + len) hold the pattern for seed, else fail (cache dropped first). */
void hf_file_expect(const struct gc_fp_file *f, int bfd, uint64_t off, uint64_t len,
		    uint64_t seed, const char *what);
/* After a write of done bytes at foff of size: [lo, hi) of WR_OLD around WR_NEW's done bytes. */
void hf_expect_written(struct hf_env *e, const struct gc_fp_file *f, int bfd, uint64_t lo,
		       uint64_t hi, uint64_t foff, uint64_t done, const char *what);

#endif
