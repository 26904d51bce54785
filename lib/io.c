// SPDX-License-Identifier: MIT
/* Host file I/O helpers: see io.h. */
#include "io.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* ------------------------------------------------------- aligned buffers */

int gc_io_buf_alloc(struct gc_io_buf *b, size_t size, size_t align)
{
	int r;

	b->ptr = NULL;
	b->size = 0;
	b->align = 0;
	if (align == 0 || (align & (align - 1)))
		return -EINVAL;
	if (align < sizeof(void *))
		align = sizeof(void *);
	/* posix_memalign(0) may give NULL: ask for one byte so ptr is always valid. */
	r = posix_memalign(&b->ptr, align, size ? size : 1);
	if (r) {
		b->ptr = NULL;
		return -r;
	}
	b->size = size;
	b->align = align;
	return 0;
}

void gc_io_buf_free(struct gc_io_buf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->size = 0;
	b->align = 0;
}

/* -------------------------------------------------------------- patterns */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint8_t gc_pattern_byte(uint64_t file_offset, uint64_t seed)
{
	return (uint8_t)(splitmix64(seed ^ (file_offset >> 3)) >> (8 * (file_offset & 7)));
}

/* The 8 bytes at file offset off (a multiple of 8), in memory order. */
static uint64_t pattern_word(uint64_t off, uint64_t seed, uint8_t mask)
{
	return htole64(splitmix64(seed ^ (off >> 3))) ^ (0x0101010101010101ull * mask);
}

static void fill_xor(uint8_t *p, size_t len, uint64_t off, uint64_t seed, uint8_t mask)
{
	size_t i = 0;

	for (; i < len && ((off + i) & 7); i++)
		p[i] = gc_pattern_byte(off + i, seed) ^ mask;
	for (; len - i >= 8; i += 8) {
		uint64_t w = pattern_word(off + i, seed, mask);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = gc_pattern_byte(off + i, seed) ^ mask;
}

void gc_pattern_fill(void *buf, size_t len, uint64_t file_offset, uint64_t seed)
{
	fill_xor(buf, len, file_offset, seed, 0);
}

void gc_pattern_fill_inv(void *buf, size_t len, uint64_t file_offset, uint64_t seed)
{
	fill_xor(buf, len, file_offset, seed, 0xff);
}

static bool byte_ok(const uint8_t *p, size_t i, uint64_t off, uint64_t seed, uint8_t mask)
{
	return p[i] == (uint8_t)(gc_pattern_byte(off + i, seed) ^ mask);
}

/* Index of the first byte of p[0..len) off the pattern, or len. */
static size_t first_bad(const uint8_t *p, size_t len, uint64_t off, uint64_t seed, uint8_t mask)
{
	size_t i = 0;

	for (; i < len && ((off + i) & 7); i++)
		if (!byte_ok(p, i, off, seed, mask))
			return i;
	for (; len - i >= 8; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		if (w != pattern_word(off + i, seed, mask))
			break;
	}
	for (; i < len; i++)
		if (!byte_ok(p, i, off, seed, mask))
			return i;
	return len;
}

static uint64_t count_bad(const uint8_t *p, size_t len, uint64_t off, uint64_t seed, uint8_t mask)
{
	uint64_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += !byte_ok(p, i, off, seed, mask);
	return n;
}

static int64_t check_xor(const uint8_t *p, size_t len, uint64_t off, uint64_t seed, uint8_t mask,
			 struct gc_mismatch *mm)
{
	size_t i = first_bad(p, len, off, seed, mask);

	if (i == len)
		return -1;
	if (mm) {
		mm->offset = i;
		mm->file_offset = off + i;
		mm->expected = gc_pattern_byte(off + i, seed) ^ mask;
		mm->actual = p[i];
		mm->count = count_bad(p + i, len - i, off + i, seed, mask);
		mm->len = len;
	}
	return (int64_t)i;
}

int64_t gc_pattern_check(const void *buf, size_t len, uint64_t file_offset, uint64_t seed,
			 struct gc_mismatch *mm)
{
	return check_xor(buf, len, file_offset, seed, 0, mm);
}

int64_t gc_pattern_check_inv(const void *buf, size_t len, uint64_t file_offset, uint64_t seed,
			     struct gc_mismatch *mm)
{
	return check_xor(buf, len, file_offset, seed, 0xff, mm);
}

const char *gc_mismatch_str(const struct gc_mismatch *mm, char *out, size_t out_len)
{
	snprintf(out, out_len,
		 "byte %" PRIu64 " of %" PRIu64 " (file offset %" PRIu64
		 "): expected 0x%02x, got 0x%02x; %" PRIu64 " byte%s differ%s",
		 mm->offset, mm->len, mm->file_offset, mm->expected, mm->actual, mm->count,
		 mm->count == 1 ? "" : "s", mm->count == 1 ? "s" : "");
	return out;
}

int64_t gc_pattern_diff(const void *buf, size_t len, uint64_t file_offset, uint64_t seed,
			bool inv, char *out, size_t out_len)
{
	struct gc_mismatch mm;
	int64_t bad = check_xor(buf, len, file_offset, seed, inv ? 0xff : 0, &mm);

	if (bad >= 0)
		gc_mismatch_str(&mm, out, out_len);
	return bad;
}

/* ------------------------------------------------------------- O_DIRECT */

int gc_io_open_direct(const char *path, int flags, mode_t mode, int *fd)
{
	int r = open(path, flags | O_DIRECT | O_CLOEXEC, mode);

	if (r < 0)
		return -errno;
	*fd = r;
	return 0;
}

/*
 * STATX_DIOALIGN and its two fields came with Linux 6.1's <linux/stat.h>;
 * glibc's <sys/stat.h> uses that header's struct statx when it is installed.
 * With older headers glibc's own struct statx has only padding there: the
 * fields are then read at their kernel ABI offsets (stable: statx(2)).
 */
#ifdef STATX_DIOALIGN
_Static_assert(offsetof(struct statx, stx_dio_mem_align) == 152, "statx ABI");
_Static_assert(offsetof(struct statx, stx_dio_offset_align) == 156, "statx ABI");
static void statx_dio_fields(const struct statx *sx, uint32_t *mem, uint32_t *off)
{
	*mem = sx->stx_dio_mem_align;
	*off = sx->stx_dio_offset_align;
}
#else
#define STATX_DIOALIGN 0x2000U
_Static_assert(sizeof(struct statx) >= 160, "statx ABI");
static void statx_dio_fields(const struct statx *sx, uint32_t *mem, uint32_t *off)
{
	memcpy(mem, (const char *)sx + 152, sizeof(*mem));
	memcpy(off, (const char *)sx + 156, sizeof(*off));
}
#endif

/* 0, -EOPNOTSUPP (no direct I/O on this file), -ENODATA (not reported), -errno. */
static int dio_align_statx(int fd, struct gc_dio_align *a)
{
	struct statx sx;

	memset(&sx, 0, sizeof(sx));
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) != 0)
		return errno == ENOSYS ? -ENODATA : -errno;
	if (!(sx.stx_mask & STATX_DIOALIGN))
		return -ENODATA;
	statx_dio_fields(&sx, &a->mem_align, &a->offset_align);
	if (a->mem_align == 0 || a->offset_align == 0)
		return -EOPNOTSUPP;
	a->source = GC_DIO_ALIGN_STATX;
	return 0;
}

static int read_u32_file(const char *path, uint32_t *v)
{
	unsigned long x;
	FILE *f = fopen(path, "re");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%lu", &x);
	fclose(f);
	if (n != 1 || x == 0 || x > UINT32_MAX)
		return -ENODATA;
	*v = (uint32_t)x;
	return 0;
}

/* Logical block size of the device behind fd, from sysfs; -ENODATA if none. */
static int dio_align_blkdev(int fd, struct gc_dio_align *a)
{
	char path[96];
	struct stat st;
	uint32_t lbs;

	if (fstat(fd, &st) != 0)
		return -errno;
	if (major(st.st_dev) == 0) /* anonymous device: tmpfs, NFS, FUSE, overlayfs, btrfs */
		return -ENODATA;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/logical_block_size",
		 major(st.st_dev), minor(st.st_dev));
	if (read_u32_file(path, &lbs) != 0) {
		/* A partition: its queue/ is its parent disk's. */
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/logical_block_size",
			 major(st.st_dev), minor(st.st_dev));
		if (read_u32_file(path, &lbs) != 0)
			return -ENODATA;
	}
	a->mem_align = lbs;
	a->offset_align = lbs;
	a->source = GC_DIO_ALIGN_BLKDEV;
	return 0;
}

int gc_io_dio_align(int fd, struct gc_dio_align *a)
{
	int r;

	memset(a, 0, sizeof(*a));
	r = dio_align_statx(fd, a);
	if (r == -ENODATA)
		r = dio_align_blkdev(fd, a);
	if (r == -ENODATA) {
		long page = sysconf(_SC_PAGESIZE);

		a->mem_align = page > 0 ? (uint32_t)page : 4096;
		a->offset_align = a->mem_align;
		a->source = GC_DIO_ALIGN_GUESS;
		r = 0;
	}
	if (r == 0)
		a->required = a->mem_align > 1 || a->offset_align > 1;
	return r;
}

const char *gc_dio_align_source_name(enum gc_dio_align_source s)
{
	switch (s) {
	case GC_DIO_ALIGN_STATX:
		return "statx(STATX_DIOALIGN)";
	case GC_DIO_ALIGN_BLKDEV:
		return "block device logical block size";
	case GC_DIO_ALIGN_GUESS:
		return "page size (guess)";
	}
	return "unknown";
}

bool gc_dio_aligned(const struct gc_dio_align *a, const void *addr, uint64_t offset, size_t len)
{
	uint64_t mem = a->mem_align ? a->mem_align : 1;
	uint64_t off = a->offset_align ? a->offset_align : 1;

	return (uintptr_t)addr % mem == 0 && offset % off == 0 && len % off == 0;
}

static const struct {
	unsigned long magic;
	const char *name;
} fs_names[] = {
	{ EXT4_SUPER_MAGIC, "ext4" },	{ XFS_SUPER_MAGIC, "xfs" },
	{ BTRFS_SUPER_MAGIC, "btrfs" }, { F2FS_SUPER_MAGIC, "f2fs" },
	{ TMPFS_MAGIC, "tmpfs" },	{ RAMFS_MAGIC, "ramfs" },
	{ OVERLAYFS_SUPER_MAGIC, "overlayfs" }, { FUSE_SUPER_MAGIC, "fuse" },
	{ NFS_SUPER_MAGIC, "nfs" },	{ CIFS_SUPER_MAGIC, "cifs" },
	{ SMB2_SUPER_MAGIC, "smb2" },	{ CEPH_SUPER_MAGIC, "ceph" },
	{ 0x2fc12fc1, "zfs" },		{ 0xca451a4e, "bcachefs" },
};

const char *gc_io_fs_name(const char *path, char *out, size_t len)
{
	struct statfs sf;

	if (statfs(path, &sf) != 0) {
		snprintf(out, len, "unknown (statfs: %s)", strerror(errno));
		return out;
	}
	for (size_t i = 0; i < sizeof(fs_names) / sizeof(fs_names[0]); i++) {
		if ((unsigned long)sf.f_type == fs_names[i].magic) {
			snprintf(out, len, "%s", fs_names[i].name);
			return out;
		}
	}
	snprintf(out, len, "0x%lx", (unsigned long)sf.f_type);
	return out;
}

/* ---------------------------------------------------- pread / pwrite */

ssize_t gc_io_pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t r = pread(fd, buf, len, off);

	return r < 0 ? -errno : r;
}

ssize_t gc_io_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t r = pwrite(fd, buf, len, off);

	return r < 0 ? -errno : r;
}

/*
 * The loop of gc_io_pread_all (pread into rbuf) and gc_io_pwrite_all
 * (writing: pwrite from wbuf). EINTR retries, 0 ends, done counts what moved.
 */
static ssize_t rw_all(int fd, bool writing, void *rbuf, const void *wbuf, size_t len, off_t off)
{
	size_t done = 0;

	do {
		off_t at = off + (off_t)done;
		ssize_t r = writing ? pwrite(fd, (const char *)wbuf + done, len - done, at)
				  : pread(fd, (char *)rbuf + done, len - done, at);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		done += (size_t)r;
	} while (done < len);
	return (ssize_t)done;
}

ssize_t gc_io_pread_all(int fd, void *buf, size_t len, off_t off)
{
	return rw_all(fd, false, buf, NULL, len, off);
}

ssize_t gc_io_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	return rw_all(fd, true, NULL, buf, len, off);
}

/* ------------------------------------------------------- scratch files */

int gc_io_scratch_dir(char *out, size_t len)
{
	const char *d = getenv(GC_SCRATCH_ENV);
	int n;

	if (!d || !*d)
		d = GC_SCRATCH_DEFAULT;
	n = snprintf(out, len, "%s", d);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

static bool tag_is_valid(const char *tag)
{
	if (!*tag)
		return false;
	for (; *tag; tag++)
		if (!(*tag >= 'a' && *tag <= 'z') && !(*tag >= 'A' && *tag <= 'Z') &&
		    !(*tag >= '0' && *tag <= '9') && *tag != '_' && *tag != '-')
			return false;
	return true;
}

int gc_io_scratch_file(const char *tag, char *path, size_t len, int *fd)
{
	char dir[PATH_MAX];
	int r;

	if (!tag_is_valid(tag))
		return -EINVAL;
	r = gc_io_scratch_dir(dir, sizeof(dir));
	if (r)
		return r;
	return gc_io_scratch_file_in(dir, tag, path, len, fd);
}

int gc_io_scratch_file_in(const char *dir, const char *tag, char *path, size_t len, int *fd)
{
	int r, n;

	if (!tag_is_valid(tag))
		return -EINVAL;
	n = snprintf(path, len, "%s/" GC_SCRATCH_PREFIX "%s-XXXXXX", dir, tag);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	r = mkostemp(path, O_CLOEXEC);
	if (r < 0)
		return -errno;
	*fd = r;
	return 0;
}
