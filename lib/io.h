/* SPDX-License-Identifier: MIT */
/*
 * Host file I/O helpers: aligned buffers, O_DIRECT files and their alignment
 * rules, offset-keyed data patterns, full-transfer pread/pwrite, scratch files.
 * Every function returning int gives 0 or -errno and never exits.
 */
#ifndef GPUCONFORM_IO_H
#define GPUCONFORM_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------- aligned buffers */

struct gc_io_buf {
	void *ptr;    /* aligned to align; valid (and freeable) even for size 0 */
	size_t size;  /* bytes requested */
	size_t align; /* bytes, a power of two */
};

/*
 * posix_memalign() of size bytes aligned to align (a power of two; values
 * below sizeof(void *) are raised to it). -EINVAL for a bad align, -ENOMEM.
 * On failure b->ptr is NULL, so gc_io_buf_free(b) is always safe.
 */
int gc_io_buf_alloc(struct gc_io_buf *b, size_t size, size_t align);
void gc_io_buf_free(struct gc_io_buf *b);

/* -------------------------------------------------------------- patterns */

/*
 * The byte at file offset o is a pure function of (o, seed): byte (o & 7) of
 * splitmix64(seed ^ (o >> 3)), bytes numbered from the least significant.
 * Any slice of a file can so be filled or verified on its own. The inverse
 * pattern is the bitwise complement: it differs from the pattern at every
 * byte, which makes it the right old content and guard filler.
 */
uint8_t gc_pattern_byte(uint64_t file_offset, uint64_t seed);
void gc_pattern_fill(void *buf, size_t len, uint64_t file_offset, uint64_t seed);
void gc_pattern_fill_inv(void *buf, size_t len, uint64_t file_offset, uint64_t seed);

struct gc_mismatch {
	uint64_t offset;      /* first mismatching byte, relative to buf */
	uint64_t file_offset; /* the same byte's file offset */
	uint8_t expected;
	uint8_t actual;
	uint64_t count;       /* mismatching bytes in the whole slice */
	uint64_t len;         /* length of the slice checked */
};

/*
 * -1 when buf[0..len) holds the pattern for file_offset; else the offset (in
 * buf) of the first mismatch, with *mm (may be NULL) filled.
 */
int64_t gc_pattern_check(const void *buf, size_t len, uint64_t file_offset, uint64_t seed,
			 struct gc_mismatch *mm);
int64_t gc_pattern_check_inv(const void *buf, size_t len, uint64_t file_offset, uint64_t seed,
			     struct gc_mismatch *mm);

/*
 * `byte 4096 of 8192 (file offset 4608): expected 0x3a, got 0xc5; 17 bytes
 * differ` into out; returns out, for gc_assert_f() with the format `%s`.
 */
const char *gc_mismatch_str(const struct gc_mismatch *mm, char *out, size_t out_len);

/*
 * gc_pattern_check (inv: gc_pattern_check_inv) of buf[0..len), its result
 * returned; a mismatch is described in out as gc_mismatch_str() writes it
 * (out is left alone when there is none).
 */
int64_t gc_pattern_diff(const void *buf, size_t len, uint64_t file_offset, uint64_t seed,
			bool inv, char *out, size_t out_len);

/* ------------------------------------------------------------- O_DIRECT */

/*
 * open(path, flags | O_DIRECT | O_CLOEXEC, mode) into *fd. -errno as the
 * kernel gave it: EINVAL where the filesystem refuses O_DIRECT.
 */
int gc_io_open_direct(const char *path, int flags, mode_t mode, int *fd);

enum gc_dio_align_source {
	GC_DIO_ALIGN_STATX,  /* statx(STATX_DIOALIGN): the filesystem said so */
	GC_DIO_ALIGN_BLKDEV, /* logical block size of the backing block device (sysfs) */
	GC_DIO_ALIGN_GUESS,  /* neither: the page size, which every known filesystem accepts */
};

struct gc_dio_align {
	uint32_t mem_align;    /* buffer address alignment, bytes */
	uint32_t offset_align; /* file offset and length alignment, bytes */
	/*
	 * Misaligned O_DIRECT I/O is refused (EINVAL). With GC_DIO_ALIGN_GUESS it
	 * is an assumption, not a fact: aligned I/O works, but misaligned I/O
	 * may be refused or accepted.
	 */
	bool required;
	enum gc_dio_align_source source;
};

/*
 * The alignment O_DIRECT I/O on fd needs. In order:
 *  1. statx(fd, empty path, AT_EMPTY_PATH, STATX_DIOALIGN) (Linux >= 6.1): when the
 *     kernel sets STATX_DIOALIGN in stx_mask, stx_dio_mem_align and
 *     stx_dio_offset_align; both 0 means this file does not support direct
 *     I/O: -EOPNOTSUPP.
 *  2. /sys/dev/block/MAJ:MIN/queue/logical_block_size of the file's st_dev
 *     (or of the parent device for a partition), for both alignments: what
 *     kernels before 6.0 required of memory too. sysfs rather than
 *     ioctl(BLKSSZGET), which needs the device node opened (root).
 *  3. Otherwise (no block device: NFS, FUSE, overlayfs, tmpfs, btrfs'
 *     anonymous st_dev...) the page size, source GC_DIO_ALIGN_GUESS.
 * required = (mem_align > 1 || offset_align > 1).
 */
int gc_io_dio_align(int fd, struct gc_dio_align *a);
const char *gc_dio_align_source_name(enum gc_dio_align_source s);

/* True when (addr, offset, len) meets a. */
bool gc_dio_aligned(const struct gc_dio_align *a, const void *addr, uint64_t offset,
		    size_t len);

/* Filesystem type of path (statfs f_type) as a name (`ext4`, `tmpfs`...) or `0x%lx`. */
const char *gc_io_fs_name(const char *path, char *out, size_t len);

/* ---------------------------------------------------- pread / pwrite */

/*
 * One pread/pwrite: bytes transferred or -errno (EINTR included). len is
 * capped at SSIZE_MAX by the kernel's own rules, not here.
 */
ssize_t gc_io_pread(int fd, void *buf, size_t len, off_t off);
ssize_t gc_io_pwrite(int fd, const void *buf, size_t len, off_t off);

/*
 * Loop over short transfers and EINTR until len bytes moved. At least one
 * call is made, so len == 0 still reports EBADF, EINVAL... Returns len; for
 * pread fewer only at end of file; for pwrite fewer only if the kernel made
 * no progress (returned 0). -errno on any error, even after partial progress.
 */
ssize_t gc_io_pread_all(int fd, void *buf, size_t len, off_t off);
ssize_t gc_io_pwrite_all(int fd, const void *buf, size_t len, off_t off);

/* ------------------------------------------------------- scratch files */

#define GC_SCRATCH_ENV "GPUCONFORM_SCRATCH_DIR"
#define GC_SCRATCH_DEFAULT "/var/tmp"
/* Every scratch file's name starts with this, in the scratch directory. */
#define GC_SCRATCH_PREFIX "gpuconform-"

/* $GPUCONFORM_SCRATCH_DIR if set and not empty, else /var/tmp. -ENAMETOOLONG. */
int gc_io_scratch_dir(char *out, size_t len);

/*
 * Create (mkostemp, O_CLOEXEC, mode 0600) `<scratch dir>/gpuconform-<tag>-XXXXXX`,
 * its path in path[len] and an O_RDWR fd in *fd. The caller unlinks and closes.
 * tag: [A-Za-z0-9_-], else -EINVAL.
 */
int gc_io_scratch_file(const char *tag, char *path, size_t len, int *fd);
/* The same in dir rather than the scratch directory. */
int gc_io_scratch_file_in(const char *dir, const char *tag, char *path, size_t len, int *fd);

#endif
