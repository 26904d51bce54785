/* SPDX-License-Identifier: MIT */
/*
 * Fastpath (GPU-direct file I/O) scratch location, vendor-neutral: where the
 * test files live, whether that filesystem can do what a fastpath needs
 * (O_DIRECT, a block device with a udev record), and pattern-filled test
 * files. cufile_io and hipfile_io share it; host_io's lib/io is beneath it.
 *
 *     struct gc_fp_scratch s;
 *     char why[512];
 *     if (gc_fp_scratch_probe(NULL, &s, why, sizeof(why)) < 0)
 *             gc_skip(as_is, why);             // names the path and the fix
 *
 * (as_is: the format `%s`.)
 *
 * Every function returning int gives 0 or -errno, fills why[] on failure
 * with one line that names the path, and never exits.
 */
#ifndef GPUCONFORM_FASTPATH_H
#define GPUCONFORM_FASTPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "io.h"

/* Where udev keeps its device database; overridable for unit tests. */
#define GC_FP_UDEV_DATA_ENV "GPUCONFORM_UDEV_DATA_DIR"
#define GC_FP_UDEV_DATA_DEFAULT "/run/udev/data"

struct gc_fp_scratch {
	char dir[4096];        /* gc_io_scratch_dir(): $GPUCONFORM_SCRATCH_DIR or /var/tmp */
	char fs[32];           /* gc_io_fs_name(): `ext4`, `tmpfs`, ... */
	unsigned int dev_major, dev_minor; /* st_dev of dir */
	bool block_dev;        /* /sys/dev/block/MAJ:MIN exists */
	struct gc_dio_align dio; /* of a file created in dir; valid when odirect */
	bool odirect;          /* a file in dir opened with O_DIRECT */
	int odirect_errno;     /* why not, when !odirect */
	char udev_path[256];   /* `<udev data dir>/bMAJ:MIN` */
	bool udev_record;      /* udev_path has E:ID_FS_USAGE= and E:ID_FS_TYPE= lines */
	char udev_fs_type[32]; /* its ID_FS_TYPE value, empty if none */
	uint64_t free_bytes;   /* statvfs f_bavail * f_frsize */
};

/*
 * Probe dir (NULL: gc_io_scratch_dir()). Fails only when dir itself is
 * unusable: -ENOENT / -EACCES / -ENOTDIR... from stat or a test file's
 * creation, why[] naming dir and strerror. The rest is recorded in *s for
 * gc_fp_scratch_require() to judge.
 */
int gc_fp_scratch_probe(const char *dir, struct gc_fp_scratch *s, char *why, size_t why_len);

enum gc_fp_need {
	GC_FP_NEED_ODIRECT = 1 << 0, /* the filesystem accepts O_DIRECT */
	GC_FP_NEED_BLOCKDEV = 1 << 1, /* backed by a block device (not tmpfs, overlay...) */
	GC_FP_NEED_UDEV = 1 << 2,    /* that device has a udev record (cuFile compat mode) */
};

/*
 * 0 when s meets every need in the mask; else -EOPNOTSUPP (O_DIRECT refused,
 * no block device) or -ENOENT (no udev record) with why[] saying what is
 * missing and how to fix it, e.g. `/var/tmp is on tmpfs (no block device):
 * set GPUCONFORM_SCRATCH_DIR to a directory on a disk filesystem` or `no udev
 * record /run/udev/data/b254:0 for /var/tmp (ext4 on 254:0): run
 * gpuconform doctor --fix as root` (the command itself in backticks).
 */
int gc_fp_scratch_require(const struct gc_fp_scratch *s, unsigned int needs, char *why,
			  size_t why_len);

/*
 * Parse a udev database record (the text of /run/udev/data/bMAJ:MIN): true
 * when it has both E:ID_FS_USAGE= and E:ID_FS_TYPE= with non-empty values;
 * the type into fs_type[len] (empty when absent). Pure: unit-tested.
 */
bool gc_fp_udev_record_parse(const char *text, char *fs_type, size_t len);

/*
 * A test file in s->dir: `gpuconform-<tag>-XXXXXX`, size bytes of lib/io's
 * offset-keyed pattern for seed (written buffered, then fsync'd), reopened
 * with open_flags | O_DIRECT (O_RDONLY, O_RDWR, O_WRONLY). The file is
 * unlinked at once unless keep_path is non-NULL (then its path is there, the
 * caller unlinks). -ENOSPC, -EDQUOT... with why[] naming the path.
 */
struct gc_fp_file {
	int fd;            /* O_DIRECT descriptor, or -1 */
	uint64_t size;
	uint64_t seed;
	char path[4200];
	bool linked;       /* path still names it (keep) */
};
int gc_fp_file_create(const struct gc_fp_scratch *s, const char *tag, uint64_t size,
		      uint64_t seed, int open_flags, bool keep, struct gc_fp_file *f, char *why,
		      size_t why_len);
/* Close and (if still linked) unlink. Safe on a zeroed or failed file. */
void gc_fp_file_destroy(struct gc_fp_file *f);

/*
 * Host-side check of a file's bytes [off, off+len) against the pattern for
 * seed (pread through a second, buffered descriptor of f->path or
 * /proc/self/fd/N, so O_DIRECT rules do not apply): -1 when they match, else
 * the first mismatching offset relative to off, *mm filled.
 */
int64_t gc_fp_file_check(const struct gc_fp_file *f, uint64_t off, size_t len, uint64_t seed,
			 struct gc_mismatch *mm);

/*
 * Drop the page cache (echo 1 > /proc/sys/vm/drop_caches after sync) so the
 * next read comes from the device. 0, or -EACCES / -EROFS when not permitted:
 * the caller says so in its metrics instead of failing.
 */
int gc_fp_drop_caches(void);

#endif
