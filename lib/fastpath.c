// SPDX-License-Identifier: MIT
/* Fastpath scratch location and pattern-filled test files: see fastpath.h. */
#include "fastpath.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define CHUNK (1024u * 1024u)          /* pattern write / check granularity */
#define UDEV_RECORD_MAX (64u * 1024u)  /* udev records are a few KiB; more is ignored */

static void __attribute__((format(printf, 3, 4)))
say(char *why, size_t why_len, const char *fmt, ...)
{
	if (!why || !why_len)
		return;
	GC_VFORMAT(why, why_len, fmt);
}

/* -------------------------------------------------------- scratch files */

/* Open fd's file again through /proc/self/fd/N: works after unlink. */
static int reopen_fd(int fd, int flags, int *out)
{
	char p[64];
	int r;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	r = open(p, flags | O_CLOEXEC);
	if (r < 0)
		return -errno;
	*out = r;
	return 0;
}

/* ---------------------------------------------------------------- probe */

static int probe_dir(const char *dir, struct gc_fp_scratch *s, char *why, size_t why_len)
{
	char sys[64];
	struct stat st;
	int n;

	if (dir)
		n = snprintf(s->dir, sizeof(s->dir), "%s", dir);
	else
		n = gc_io_scratch_dir(s->dir, sizeof(s->dir)) ? -1 : 0;
	if (n < 0 || (size_t)n >= sizeof(s->dir)) {
		say(why, why_len, "scratch dir %.200s...: %s", dir ? dir : "$" GC_SCRATCH_ENV,
		    strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	if (stat(s->dir, &st) != 0) {
		n = errno;
		say(why, why_len, "scratch dir %s: %s", s->dir, strerror(n));
		return -n;
	}
	if (!S_ISDIR(st.st_mode)) {
		say(why, why_len, "scratch dir %s: %s", s->dir, strerror(ENOTDIR));
		return -ENOTDIR;
	}
	gc_io_fs_name(s->dir, s->fs, sizeof(s->fs));
	s->dev_major = major(st.st_dev);
	s->dev_minor = minor(st.st_dev);
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", s->dev_major, s->dev_minor);
	s->block_dev = access(sys, F_OK) == 0;
	return 0;
}

/*
 * A probe file in s->dir, unlinked at once (nothing left behind), opened
 * again with O_DIRECT through /proc/self/fd/N. Only the creation can fail the
 * probe: it is what says the directory is not writable. A file that opens
 * with O_DIRECT but whose alignment query says direct I/O is unsupported
 * (statx: both alignments 0, e.g. ext4 data=journal) counts as refused, so
 * that s->dio is valid whenever s->odirect is true.
 */
static int probe_odirect(struct gc_fp_scratch *s, char *why, size_t why_len)
{
	char path[sizeof(s->dir) + 64];
	int fd, dfd = -1, r;

	r = gc_io_scratch_file_in(s->dir, "probe", path, sizeof(path), &fd);
	if (r < 0) {
		say(why, why_len, "scratch dir %s: cannot create a file there: %s", s->dir,
		    strerror(-r));
		return r;
	}
	unlink(path);
	r = reopen_fd(fd, O_RDWR | O_DIRECT, &dfd);
	close(fd);
	if (r == 0) {
		r = gc_io_dio_align(dfd, &s->dio);
		close(dfd);
	}
	s->odirect = r == 0;
	s->odirect_errno = -r;
	if (r)
		memset(&s->dio, 0, sizeof(s->dio));
	return 0;
}

/* Up to cap - 1 bytes of path, NUL-terminated: length or -errno. */
static ssize_t read_text(const char *path, char *buf, size_t cap)
{
	size_t done = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (done < cap - 1) {
		ssize_t r = read(fd, buf + done, cap - 1 - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	buf[done] = '\0';
	return (ssize_t)done;
}

/* A missing, unreadable or (path too long) unnamed record leaves udev_record false. */
static void probe_udev(struct gc_fp_scratch *s)
{
	const char *d = getenv(GC_FP_UDEV_DATA_ENV);
	char *text;
	int n;

	if (!d || !*d)
		d = GC_FP_UDEV_DATA_DEFAULT;
	n = snprintf(s->udev_path, sizeof(s->udev_path), "%s/b%u:%u", d, s->dev_major,
		     s->dev_minor);
	if (n < 0 || (size_t)n >= sizeof(s->udev_path))
		return; /* truncated: do not read some other file */
	text = malloc(UDEV_RECORD_MAX);
	if (!text)
		return;
	if (read_text(s->udev_path, text, UDEV_RECORD_MAX) >= 0)
		s->udev_record = gc_fp_udev_record_parse(text, s->udev_fs_type,
							 sizeof(s->udev_fs_type));
	free(text);
}

static void probe_free(struct gc_fp_scratch *s)
{
	struct statvfs sv;

	if (statvfs(s->dir, &sv) == 0)
		s->free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
}

int gc_fp_scratch_probe(const char *dir, struct gc_fp_scratch *s, char *why, size_t why_len)
{
	int r;

	memset(s, 0, sizeof(*s));
	r = probe_dir(dir, s, why, why_len);
	if (r == 0)
		r = probe_odirect(s, why, why_len);
	if (r)
		return r;
	probe_udev(s);
	probe_free(s);
	return 0;
}

/* -------------------------------------------------------------- require */

#define FIX_DIR "set " GC_SCRATCH_ENV " to a directory on a disk filesystem (ext4, xfs)"

static int need_blockdev(const struct gc_fp_scratch *s, char *why, size_t why_len)
{
	say(why, why_len, "%s is on %s (device %u:%u, no block device): " FIX_DIR, s->dir, s->fs,
	    s->dev_major, s->dev_minor);
	return -EOPNOTSUPP;
}

static int need_odirect(const struct gc_fp_scratch *s, char *why, size_t why_len)
{
	say(why, why_len, "%s (%s on %u:%u) refuses O_DIRECT (%s): " FIX_DIR, s->dir, s->fs,
	    s->dev_major, s->dev_minor, strerror(s->odirect_errno));
	return -EOPNOTSUPP;
}

/*
 * Missing record, or one without a usable E:ID_FS_TYPE= / E:ID_FS_USAGE=
 * line: which one is told apart by the record file's existence and by
 * udev_fs_type (set whenever the record has a non-empty type).
 */
static int need_udev(const struct gc_fp_scratch *s, char *why, size_t why_len)
{
	const char *fix = "run `gpuconform doctor --fix` as root";

	if (access(s->udev_path, F_OK) != 0)
		say(why, why_len,
		    "no udev record %s for %s (%s on %u:%u): %s (cuFile needs "
		    "E:ID_FS_USAGE=filesystem and E:ID_FS_TYPE=%s there)",
		    s->udev_path, s->dir, s->fs, s->dev_major, s->dev_minor, fix, s->fs);
	else if (!s->udev_fs_type[0])
		say(why, why_len, "udev record %s for %s (%s on %u:%u) has no E:ID_FS_TYPE=: %s "
		    "(cuFile needs E:ID_FS_TYPE=%s there)", s->udev_path, s->dir, s->fs,
		    s->dev_major, s->dev_minor, fix, s->fs);
	else
		say(why, why_len, "udev record %s for %s (%s on %u:%u) has no E:ID_FS_USAGE=: %s "
		    "(cuFile needs E:ID_FS_USAGE=filesystem there)", s->udev_path, s->dir, s->fs,
		    s->dev_major, s->dev_minor, fix);
	return -ENOENT;
}

int gc_fp_scratch_require(const struct gc_fp_scratch *s, unsigned int needs, char *why,
			  size_t why_len)
{
	const unsigned int known = GC_FP_NEED_ODIRECT | GC_FP_NEED_BLOCKDEV | GC_FP_NEED_UDEV;

	if (needs & ~known) {
		say(why, why_len, "gc_fp_scratch_require: unknown needs 0x%x for %s",
		    needs & ~known, s->dir);
		return -EINVAL;
	}
	/* The block device first: on tmpfs it is the root cause of the others. */
	if ((needs & GC_FP_NEED_BLOCKDEV) && !s->block_dev)
		return need_blockdev(s, why, why_len);
	if ((needs & GC_FP_NEED_ODIRECT) && !s->odirect)
		return need_odirect(s, why, why_len);
	if ((needs & GC_FP_NEED_UDEV) && !s->udev_record)
		return need_udev(s, why, why_len);
	return 0;
}

/* ------------------------------------------------------------ udev parse */

/* If line [p, end) is `E:<key>=<value>`, the value's start; else NULL. */
static const char *env_value(const char *p, const char *end, const char *key)
{
	size_t k = strlen(key);

	if (end - p < (ptrdiff_t)(k + 3) || p[0] != 'E' || p[1] != ':' ||
	    strncmp(p + 2, key, k) != 0 || p[2 + k] != '=')
		return NULL;
	return p + 3 + k;
}

bool gc_fp_udev_record_parse(const char *text, char *fs_type, size_t len)
{
	bool usage = false, type = false;

	if (fs_type && len)
		fs_type[0] = '\0';
	for (const char *p = text; p && *p;) {
		const char *end = strchrnul(p, '\n');
		const char *v;

		if ((v = env_value(p, end, "ID_FS_USAGE")))
			usage = v < end;
		if ((v = env_value(p, end, "ID_FS_TYPE"))) {
			type = v < end;
			if (fs_type && len)
				snprintf(fs_type, len, "%.*s", (int)(end - v), v);
		}
		p = *end ? end + 1 : end;
	}
	return usage && type;
}

/* ----------------------------------------------------------- test files */

/* size bytes of the pattern for seed into fd from offset 0, buffered, 1 MiB at a time. */
static int write_pattern(int fd, uint64_t size, uint64_t seed)
{
	uint8_t *buf;
	int r = 0;

	if (size == 0)
		return 0;
	buf = malloc(size < CHUNK ? (size_t)size : CHUNK);
	if (!buf)
		return -ENOMEM;
	for (uint64_t done = 0; done < size && r == 0;) {
		size_t n = size - done < CHUNK ? (size_t)(size - done) : CHUNK;
		ssize_t w;

		gc_pattern_fill(buf, n, done, seed);
		w = gc_io_pwrite_all(fd, buf, n, (off_t)done);
		if (w < 0)
			r = (int)w;
		else if ((size_t)w != n)
			r = -EIO; /* the kernel made no progress and said nothing */
		done += n;
	}
	free(buf);
	return r;
}

/* Fill the new file, fsync it, open it again with O_DIRECT into f->fd. */
static int fill_and_reopen(struct gc_fp_file *f, int bfd, int open_flags, const char **step)
{
	int r;

	*step = "write";
	r = write_pattern(bfd, f->size, f->seed);
	if (r)
		return r;
	*step = "fsync";
	if (fsync(bfd) != 0)
		return -errno;
	*step = "open with O_DIRECT";
	if (f->linked)
		return gc_io_open_direct(f->path, open_flags, 0, &f->fd);
	return reopen_fd(bfd, open_flags | O_DIRECT, &f->fd);
}

/*
 * Unlinked at once unless keep: the O_DIRECT descriptor is then opened
 * through /proc/self/fd/N, so a crash while filling leaves nothing behind.
 */
int gc_fp_file_create(const struct gc_fp_scratch *s, const char *tag, uint64_t size,
		      uint64_t seed, int open_flags, bool keep, struct gc_fp_file *f, char *why,
		      size_t why_len)
{
	const char *step;
	int bfd, r;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->size = size;
	f->seed = seed;
	r = gc_io_scratch_file_in(s->dir, tag, f->path, sizeof(f->path), &bfd);
	if (r < 0) {
		say(why, why_len, "create %s/" GC_SCRATCH_PREFIX "%s-XXXXXX: %s", s->dir,
		    tag ? tag : "(null)", strerror(-r));
		f->path[0] = '\0';
		return r;
	}
	f->linked = keep || unlink(f->path) != 0;
	r = fill_and_reopen(f, bfd, open_flags, &step);
	close(bfd);
	if (r) {
		say(why, why_len, "%s %s (%llu bytes): %s", step, f->path,
		    (unsigned long long)size, strerror(-r));
		gc_fp_file_destroy(f);
	}
	return r;
}

void gc_fp_file_destroy(struct gc_fp_file *f)
{
	/* A zeroed struct has fd 0 but no path: never close what it did not open. */
	if (f->path[0] && f->fd >= 0)
		close(f->fd);
	if (f->path[0] && f->linked)
		unlink(f->path);
	f->fd = -1;
	f->linked = false;
}

/* ----------------------------------------------------------------- check */

/* Record a mismatch at rel (relative to the checked range) unless one came first. */
static void note_first(struct gc_mismatch *mm, bool *seen, uint64_t rel, uint64_t off,
		       uint8_t expected, uint8_t actual)
{
	if (*seen)
		return;
	*seen = true;
	mm->offset = rel;
	mm->file_offset = off + rel;
	mm->expected = expected;
	mm->actual = actual;
}

/*
 * Every chunk is checked on its own and the results combined: the first
 * mismatch of the first bad chunk, and the sum of all chunks' counts.
 * Bytes the file does not have (EOF before off + len), and bytes a read
 * error kept from being read, count as mismatches: a short or unreadable
 * file never passes. For such a byte mm->actual is 0 (there is no byte);
 * errno is left at the read error, if any.
 */
static int64_t check_fd(int fd, uint64_t off, size_t len, uint64_t seed, uint8_t *buf,
			struct gc_mismatch *mm)
{
	struct gc_mismatch cm;
	bool seen = false;
	size_t done = 0;

	memset(mm, 0, sizeof(*mm));
	mm->len = len;
	while (done < len) {
		size_t n = len - done < CHUNK ? len - done : CHUNK;
		ssize_t got = gc_io_pread_all(fd, buf, n, (off_t)(off + done));

		if (got < 0)
			errno = (int)-got;
		got = got < 0 ? 0 : got;
		if (gc_pattern_check(buf, (size_t)got, off + done, seed, &cm) >= 0) {
			note_first(mm, &seen, done + cm.offset, off, cm.expected, cm.actual);
			mm->count += cm.count;
		}
		if ((size_t)got < n) { /* end of file or error: the rest is missing */
			note_first(mm, &seen, done + (size_t)got, off,
				   gc_pattern_byte(off + done + (size_t)got, seed), 0);
			mm->count += len - done - (size_t)got;
			break;
		}
		done += n;
	}
	return seen ? (int64_t)mm->offset : -1;
}

/* Nothing could be read (no descriptor, no memory; errno says why): every byte is missing. */
static int64_t all_missing(uint64_t off, size_t len, uint64_t seed, struct gc_mismatch *mm)
{
	memset(mm, 0, sizeof(*mm));
	mm->len = len;
	mm->count = len;
	mm->file_offset = off;
	mm->expected = gc_pattern_byte(off, seed);
	return 0;
}

int64_t gc_fp_file_check(const struct gc_fp_file *f, uint64_t off, size_t len, uint64_t seed,
			 struct gc_mismatch *mm)
{
	struct gc_mismatch local;
	uint8_t *buf = NULL;
	int fd = -1, r = -EBADF;
	int64_t res;

	if (!mm)
		mm = &local;
	if (len == 0) {
		memset(mm, 0, sizeof(*mm));
		return -1;
	}
	if (f->path[0] && f->fd >= 0) /* as in destroy: a zeroed file's fd 0 is not its own */
		r = reopen_fd(f->fd, O_RDONLY, &fd);
	if (r && f->linked) /* no /proc: the path still names it */
		fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		buf = malloc(len < CHUNK ? len : CHUNK);
	res = buf ? check_fd(fd, off, len, seed, buf, mm) : all_missing(off, len, seed, mm);
	free(buf);
	if (fd >= 0)
		close(fd);
	return res;
}

/* ----------------------------------------------------------- page cache */

int gc_fp_drop_caches(void)
{
	ssize_t w;
	int fd, r = 0;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, "1\n", 2);
	if (w < 0)
		r = -errno;
	else if (w != 2)
		r = -EIO;
	close(fd);
	return r;
}
