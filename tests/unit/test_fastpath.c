// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/fastpath: the udev record parser, the scratch probe and
 * its verdicts (with a fake udev database through $GPUCONFORM_UDEV_DATA_DIR),
 * pattern-filled O_DIRECT test files and their host-side check; and of
 * lib/fastpath_perf's timed loop, driven by a fake vendor (no GPU).
 *
 * Each subtest gets a fresh directory under $TMPDIR (else /var/tmp) and a
 * fresh fake udev data directory beside it; after_each removes both.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core.h"
#include "fastpath.h"
#include "fastpath_perf.h"

#define SEED 0xfa57ull

struct fx {
	char dir[1024];  /* scratch directory of this subtest */
	char udev[1024]; /* fake udev data directory */
	struct gc_fp_scratch odirect; /* probe_odirect()'s probe of dir */
};

/* ------------------------------------------------------------- fixture */

static void *fx_setup(void)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	gc_assert(fx != NULL);
	return fx;
}

static void fx_teardown(void *data)
{
	free(data);
}

static void make_temp_dir(char *out, size_t len, const char *what)
{
	const char *base = getenv("TMPDIR");

	if (!base || !*base)
		base = "/var/tmp";
	snprintf(out, len, "%s/gc-unit-fp-%s-XXXXXX", base, what);
	gc_assert_f(mkdtemp(out) != NULL, "mkdtemp %s: %s", out, strerror(errno));
}

static void fx_before(void *data)
{
	struct fx *fx = data;

	make_temp_dir(fx->dir, sizeof(fx->dir), "dir");
	make_temp_dir(fx->udev, sizeof(fx->udev), "udev");
	gc_assert_syscall(setenv(GC_FP_UDEV_DATA_ENV, fx->udev, 1));
}

/* Remove dir and the plain files in it; a missing dir is fine. */
static void remove_dir(const char *dir)
{
	char p[PATH_MAX + 256];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	gc_assert_f(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}

static void fx_after(void *data)
{
	struct fx *fx = data;

	unsetenv(GC_FP_UDEV_DATA_ENV);
	unsetenv(GC_SCRATCH_ENV);
	remove_dir(fx->dir);
	remove_dir(fx->udev);
}

static const struct gc_fixture fixture = {
	.setup = fx_setup,
	.teardown = fx_teardown,
	.before_each = fx_before,
	.after_each = fx_after,
};

/* ------------------------------------------------------------- helpers */

static unsigned int count_entries(const char *dir)
{
	unsigned int n = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	gc_assert_f(d != NULL, "opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

#define assert_has(s, needle) \
	gc_assert_f(strstr((s), (needle)) != NULL, "\"%s\" lacks \"%s\"", (s), (needle))

static void assert_one_line(const char *s)
{
	gc_assert_f(*s && !strchr(s, '\n'), "not one line: \"%s\"", s);
}

static void write_record(const struct fx *fx, const struct gc_fp_scratch *s, const char *text)
{
	char p[PATH_MAX + 64];
	FILE *f;

	snprintf(p, sizeof(p), "%s/b%u:%u", fx->udev, s->dev_major, s->dev_minor);
	f = fopen(p, "we");
	gc_assert_f(f != NULL, "%s: %s", p, strerror(errno));
	gc_assert(fputs(text, f) >= 0);
	gc_assert_syscall(fclose(f));
}

static void probe_ok(const char *dir, struct gc_fp_scratch *s)
{
	char why[512] = "";

	gc_assert_f(gc_fp_scratch_probe(dir, s, why, sizeof(why)) == 0, "probe: %s", why);
}

/* A probe of fx->dir that can make test files: O_DIRECT works there. */
static const struct gc_fp_scratch *probe_odirect(struct fx *fx)
{
	struct gc_fp_scratch *s = &fx->odirect;

	probe_ok(fx->dir, s);
	gc_require_f(s->odirect, "%s (%s) refuses O_DIRECT: %s", s->dir, s->fs,
		     strerror(s->odirect_errno));
	return s;
}

static void create_ok(const struct gc_fp_scratch *s, const char *tag, uint64_t size, int flags,
		      bool keep, struct gc_fp_file *f)
{
	char why[512] = "";

	gc_assert_f(gc_fp_file_create(s, tag, size, SEED, flags, keep, f, why, sizeof(why)) == 0,
		    "create %s, %llu bytes: %s", tag, (unsigned long long)size, why);
}

/* create_ok(), then: its descriptor has O_DIRECT and the whole file reads back
 * as written. Returns the descriptor's F_GETFL flags. */
static int create_direct(const struct gc_fp_scratch *s, const char *tag, uint64_t size,
			 int flags, bool keep, struct gc_fp_file *f)
{
	int fl;

	create_ok(s, tag, size, flags, keep, f);
	fl = fcntl(f->fd, F_GETFL);
	gc_assert(fl & O_DIRECT);
	gc_assert_cmpint(gc_fp_file_check(f, 0, size, SEED, NULL), ==, -1);
	return fl;
}

/* Flip one byte of f's file at off through a second, buffered descriptor. */
static uint8_t corrupt(const struct gc_fp_file *f, uint64_t off)
{
	char p[64];
	uint8_t b;
	int fd;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", f->fd);
	fd = open(p, O_RDWR | O_CLOEXEC);
	gc_assert_syscall(fd);
	gc_assert_cmpint(pread(fd, &b, 1, (off_t)off), ==, 1);
	b ^= 0x5a;
	gc_assert_cmpint(pwrite(fd, &b, 1, (off_t)off), ==, 1);
	gc_assert_syscall(close(fd));
	return b;
}

/* check(off, len) reports its first mismatch at rel with count bad bytes. */
static void expect_bad(const struct gc_fp_file *f, uint64_t off, size_t len, uint64_t rel,
		       uint64_t count, uint8_t actual)
{
	struct gc_mismatch mm;

	memset(&mm, 0xa5, sizeof(mm));
	gc_assert_cmpint(gc_fp_file_check(f, off, len, SEED, &mm), ==, (int64_t)rel);
	gc_assert_eq_uint(mm.offset, rel);
	gc_assert_eq_uint(mm.file_offset, off + rel);
	gc_assert_eq_uint(mm.expected, gc_pattern_byte(off + rel, SEED));
	gc_assert_eq_uint(mm.actual, actual);
	gc_assert_eq_uint(mm.count, count);
	gc_assert_eq_uint(mm.len, len);
}

/* ------------------------------------------------------ udev record parse */

/*
 * gc_fp_udev_record_parse() is true when the record has both E:ID_FS_USAGE=
 * and E:ID_FS_TYPE= with non-empty values, the type into fs_type[len]: a
 * real-looking record with every other udev line kind, E:ID_FS_TYPE_VERSION=
 * ahead of E:ID_FS_TYPE=, and no final newline.
 */
static void test_udev_parse_good(void *data)
{
	static const char rec[] = "S:disk/by-uuid/0b1c\nS:disk/by-path/pci-0000:00:04.0\n"
				  "L:0\nI:12345678\nG:systemd\nQ:systemd\nV:1\nW:3\n"
				  "E:ID_FS_UUID=0b1c\nE:ID_FS_TYPE_VERSION=1.0\n"
				  "E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\nE:SYSTEMD_READY=1";
	char t[32], tiny[3];

	(void)data;
	memset(t, 'x', sizeof(t));
	gc_assert(gc_fp_udev_record_parse(rec, t, sizeof(t)));
	gc_assert_eq_str(t, "ext4");
	/* The type on the last line, no newline after it. */
	gc_assert(gc_fp_udev_record_parse("E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=xfs", t,
					  sizeof(t)));
	gc_assert_eq_str(t, "xfs");
	/* A short buffer truncates the type, NUL-terminated; the verdict stands. */
	gc_assert(gc_fp_udev_record_parse(rec, tiny, sizeof(tiny)));
	gc_assert_eq_str(tiny, "ex");
	gc_assert(gc_fp_udev_record_parse(rec, NULL, 0));
}

/* True only with both lines; the type empty when absent. */
static void test_udev_parse_missing_key(void *data)
{
	char t[32];

	(void)data;
	gc_assert(!gc_fp_udev_record_parse("E:ID_FS_TYPE=ext4\nE:ID_FS_UUID=1\n", t, sizeof(t)));
	gc_assert_eq_str(t, "ext4");
	strcpy(t, "stale");
	gc_assert(!gc_fp_udev_record_parse("E:ID_FS_USAGE=filesystem\n", t, sizeof(t)));
	gc_assert_eq_str(t, "");
	strcpy(t, "stale");
	gc_assert(!gc_fp_udev_record_parse("", t, sizeof(t)));
	gc_assert_eq_str(t, "");
	strcpy(t, "stale");
	gc_assert(!gc_fp_udev_record_parse("\n\n", t, sizeof(t)));
	gc_assert_eq_str(t, "");
}

/* With non-empty values: an empty value is as good as none. */
static void test_udev_parse_empty_value(void *data)
{
	char t[32];

	(void)data;
	gc_assert(!gc_fp_udev_record_parse("E:ID_FS_USAGE=\nE:ID_FS_TYPE=ext4\n", t, sizeof(t)));
	gc_assert_eq_str(t, "ext4");
	gc_assert(!gc_fp_udev_record_parse("E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=\n", t,
					   sizeof(t)));
	gc_assert_eq_str(t, "");
	gc_assert(!gc_fp_udev_record_parse("E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=", t,
					   sizeof(t)));
	gc_assert_eq_str(t, "");
}

/*
 * Only `E:` lines carry properties (udev database format): the same keys
 * behind S:, L:, another prefix, inside a longer key or mid-line count not.
 */
static void test_udev_parse_other_prefix(void *data)
{
	static const char *const recs[] = {
		"S:ID_FS_USAGE=filesystem\nL:ID_FS_TYPE=ext4\n",
		"E:ID_FS_USAGEX=filesystem\nE:ID_FS_TYPE_VERSION=1.0\n",
		" E:ID_FS_USAGE=filesystem\nXE:ID_FS_TYPE=ext4\n",
		"e:ID_FS_USAGE=filesystem\nE:id_fs_type=ext4\n",
		"E:ID_FS_USAGE\nE:ID_FS_TYPE\n",
	};
	char t[32];

	(void)data;
	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		gc_assert_f(!gc_fp_udev_record_parse(recs[i], t, sizeof(t)), "record %zu", i);
		gc_assert_eq_str(t, "");
	}
	/* One valid pair among them is found. */
	gc_assert(gc_fp_udev_record_parse("S:ID_FS_TYPE=bad\nE:ID_FS_TYPE=btrfs\n"
					  "E:ID_FS_USAGE=filesystem\nL:100\n", t, sizeof(t)));
	gc_assert_eq_str(t, "btrfs");
}

/* ---------------------------------------------------------------- probe */

/*
 * The probe records (struct gc_fp_scratch) dir, fs from gc_io_fs_name(), the
 * st_dev of dir, block_dev when /sys/dev/block/MAJ:MIN exists, O_DIRECT with
 * its alignment (valid when odirect), udev_path as
 * `<udev data dir>/bMAJ:MIN`, free_bytes from statvfs; its test file is gone
 * afterwards.
 */
static void test_probe_dir(void *data)
{
	struct fx *fx = data;
	struct gc_fp_scratch s;
	char fs[32], want[PATH_MAX + 64];
	struct statvfs sv;
	struct stat st;

	probe_ok(fx->dir, &s);
	gc_assert_eq_str(s.dir, fx->dir);
	gc_assert_eq_str(s.fs, gc_io_fs_name(fx->dir, fs, sizeof(fs)));
	gc_assert_syscall(stat(fx->dir, &st));
	gc_assert_eq_uint(s.dev_major, major(st.st_dev));
	gc_assert_eq_uint(s.dev_minor, minor(st.st_dev));
	snprintf(want, sizeof(want), "/sys/dev/block/%u:%u", s.dev_major, s.dev_minor);
	gc_assert_eq_int(s.block_dev, access(want, F_OK) == 0);
	if (s.odirect) {
		gc_assert_eq_int(s.odirect_errno, 0);
		gc_assert_cmpuint(s.dio.mem_align, >, 0);
		gc_assert_cmpuint(s.dio.offset_align, >, 0);
	} else {
		gc_assert_cmpint(s.odirect_errno, >, 0);
	}
	snprintf(want, sizeof(want), "%s/b%u:%u", fx->udev, s.dev_major, s.dev_minor);
	gc_assert_eq_str(s.udev_path, want);
	gc_assert_syscall(statvfs(fx->dir, &sv));
	gc_assert_cmpuint(s.free_bytes, >, 0);
	gc_assert_cmpuint(s.free_bytes, <=, (uint64_t)sv.f_blocks * sv.f_frsize);
	gc_assert_eq_uint(count_entries(fx->dir), 0);
	gc_info("%s: %s on %u:%u, block device %d, O_DIRECT %d (%s), align %u/%u", s.dir, s.fs,
		s.dev_major, s.dev_minor, s.block_dev, s.odirect, strerror(s.odirect_errno),
		s.dio.mem_align, s.dio.offset_align);
}

/* dir NULL means gc_io_scratch_dir(), and the udev data dir defaults to /run/udev/data. */
static void test_probe_defaults(void *data)
{
	struct fx *fx = data;
	struct gc_fp_scratch s;
	char want[PATH_MAX];

	gc_assert_syscall(setenv(GC_SCRATCH_ENV, fx->dir, 1));
	gc_assert_syscall(unsetenv(GC_FP_UDEV_DATA_ENV));
	probe_ok(NULL, &s);
	gc_assert_eq_str(s.dir, fx->dir);
	snprintf(want, sizeof(want), GC_FP_UDEV_DATA_DEFAULT "/b%u:%u", s.dev_major, s.dev_minor);
	gc_assert_eq_str(s.udev_path, want);
}

/*
 * udev_record: udev_path has E:ID_FS_USAGE= and E:ID_FS_TYPE= lines;
 * require(UDEV) is then met.
 */
static void test_probe_udev_present(void *data)
{
	struct fx *fx = data;
	struct gc_fp_scratch s;
	char why[512] = "untouched";

	probe_ok(fx->dir, &s);
	write_record(fx, &s, "S:disk/by-uuid/1\nE:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n");
	probe_ok(fx->dir, &s);
	gc_assert(s.udev_record);
	gc_assert_eq_str(s.udev_fs_type, "ext4");
	gc_assert_ok(gc_fp_scratch_require(&s, GC_FP_NEED_UDEV, why, sizeof(why)));
	gc_assert_eq_str(why, "untouched");
}

/*
 * -ENOENT (no udev record) with why[] saying what is missing and how to fix
 * it: the record path, the dir, the fs and maj:min, `gpuconform doctor --fix`.
 */
static void test_probe_udev_absent(void *data)
{
	struct fx *fx = data;
	struct gc_fp_scratch s;
	char why[1024], majmin[32];

	probe_ok(fx->dir, &s);
	gc_assert(!s.udev_record);
	gc_assert_eq_str(s.udev_fs_type, "");
	gc_assert_errno(gc_fp_scratch_require(&s, GC_FP_NEED_UDEV, why, sizeof(why)), ENOENT);
	snprintf(majmin, sizeof(majmin), "%u:%u", s.dev_major, s.dev_minor);
	assert_one_line(why);
	assert_has(why, "no udev record");
	assert_has(why, s.udev_path);
	assert_has(why, fx->dir);
	assert_has(why, s.fs);
	assert_has(why, majmin);
	assert_has(why, "`gpuconform doctor --fix` as root");
	assert_has(why, "E:ID_FS_USAGE=filesystem");
	gc_info("%s", why);
}

/* A record without E:ID_FS_TYPE= (or E:ID_FS_USAGE=) is no record; why says which line lacks. */
static void test_probe_udev_incomplete(void *data)
{
	struct fx *fx = data;
	struct gc_fp_scratch s;
	char why[1024];

	probe_ok(fx->dir, &s);
	write_record(fx, &s, "E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE_VERSION=1.0\n");
	probe_ok(fx->dir, &s);
	gc_assert(!s.udev_record);
	gc_assert_eq_str(s.udev_fs_type, "");
	gc_assert_errno(gc_fp_scratch_require(&s, GC_FP_NEED_UDEV, why, sizeof(why)), ENOENT);
	assert_one_line(why);
	assert_has(why, s.udev_path);
	assert_has(why, "has no E:ID_FS_TYPE=");
	assert_has(why, "gpuconform doctor --fix");
	gc_info("%s", why);

	write_record(fx, &s, "E:ID_FS_TYPE=ext4\n");
	probe_ok(fx->dir, &s);
	gc_assert(!s.udev_record);
	gc_assert_eq_str(s.udev_fs_type, "ext4");
	gc_assert_errno(gc_fp_scratch_require(&s, GC_FP_NEED_UDEV, why, sizeof(why)), ENOENT);
	assert_has(why, "has no E:ID_FS_USAGE=");
	assert_has(why, "gpuconform doctor --fix");
}

/*
 * gc_fp_scratch_probe() fails only when dir itself is unusable: -ENOENT /
 * -EACCES / -ENOTDIR... from stat or a test file's creation, why[] naming dir
 * and strerror.
 */
static void test_probe_bad_dir(void *data)
{
	struct fx *fx = data;
	struct gc_fp_scratch s;
	char p[PATH_MAX + 16], why[PATH_MAX + 256], want[PATH_MAX + 256];
	int fd;

	snprintf(p, sizeof(p), "%s/missing", fx->dir);
	gc_assert_errno(gc_fp_scratch_probe(p, &s, why, sizeof(why)), ENOENT);
	snprintf(want, sizeof(want), "scratch dir %s: %s", p, strerror(ENOENT));
	gc_assert_eq_str(why, want);
	snprintf(p, sizeof(p), "%s/file", fx->dir);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	gc_assert_syscall(fd);
	gc_assert_syscall(close(fd));
	gc_assert_errno(gc_fp_scratch_probe(p, &s, why, sizeof(why)), ENOTDIR);
	snprintf(want, sizeof(want), "scratch dir %s: %s", p, strerror(ENOTDIR));
	gc_assert_eq_str(why, want); /* stat said it: not a failed file creation */
	/* A path through a file: stat itself says ENOTDIR. */
	snprintf(p, sizeof(p), "%s/file/sub", fx->dir);
	gc_assert_errno(gc_fp_scratch_probe(p, &s, why, sizeof(why)), ENOTDIR);
	assert_has(why, p);
}

/* tmpfs gives a skip whose reason says how to fix it: require(BLOCKDEV) on /dev/shm. */
static void test_probe_tmpfs(void *data)
{
	struct gc_fp_scratch s;
	char why[1024];
	struct stat st;

	(void)data;
	gc_require_f(stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode), "/dev/shm: %s",
		     strerror(errno ? errno : ENOTDIR));
	probe_ok("/dev/shm", &s);
	gc_require_f(strcmp(s.fs, "tmpfs") == 0, "/dev/shm is %s, not tmpfs", s.fs);
	gc_assert(!s.block_dev);
	gc_assert_errno(gc_fp_scratch_require(&s, GC_FP_NEED_BLOCKDEV, why, sizeof(why)),
			EOPNOTSUPP);
	assert_one_line(why);
	assert_has(why, "/dev/shm is on tmpfs");
	assert_has(why, "no block device");
	assert_has(why, "set GPUCONFORM_SCRATCH_DIR to a directory on a disk filesystem");
	gc_info("%s; O_DIRECT %s", why, s.odirect ? "accepted" : strerror(s.odirect_errno));
}

/* ------------------------------------------------------------- require */

static struct gc_fp_scratch fake_scratch(void)
{
	struct gc_fp_scratch s;

	memset(&s, 0, sizeof(s));
	strcpy(s.dir, "/scratch/x");
	strcpy(s.fs, "ext4");
	s.dev_major = 254;
	s.dev_minor = 3;
	s.block_dev = true;
	s.odirect = true;
	strcpy(s.udev_path, "/nonexistent-gc-udev/b254:3");
	s.udev_record = true;
	strcpy(s.udev_fs_type, "ext4");
	return s;
}

/*
 * gc_fp_scratch_require(): 0 when s meets every need in the mask; else
 * -EOPNOTSUPP (O_DIRECT refused, no block device) or -ENOENT (no udev record)
 * with why[] saying what is missing and how to fix it, on hand-made probe
 * results.
 */
static void test_require(void *data)
{
	const unsigned int all = GC_FP_NEED_ODIRECT | GC_FP_NEED_BLOCKDEV | GC_FP_NEED_UDEV;
	struct gc_fp_scratch s = fake_scratch();
	char why[512], tiny[16];

	(void)data;
	strcpy(why, "untouched");
	gc_assert_ok(gc_fp_scratch_require(&s, all, why, sizeof(why)));
	gc_assert_ok(gc_fp_scratch_require(&s, 0, why, sizeof(why)));
	gc_assert_eq_str(why, "untouched");
	gc_assert_errno(gc_fp_scratch_require(&s, 1u << 7, why, sizeof(why)), EINVAL);

	s.odirect = false;
	s.odirect_errno = EINVAL;
	gc_assert_ok(gc_fp_scratch_require(&s, GC_FP_NEED_BLOCKDEV | GC_FP_NEED_UDEV, why,
					   sizeof(why)));
	gc_assert_errno(gc_fp_scratch_require(&s, all, why, sizeof(why)), EOPNOTSUPP);
	assert_one_line(why);
	assert_has(why, "/scratch/x (ext4 on 254:3) refuses O_DIRECT");
	assert_has(why, strerror(EINVAL));
	assert_has(why, "set GPUCONFORM_SCRATCH_DIR to");

	/* No block device comes first: on tmpfs it is why the rest fails. */
	s.block_dev = false;
	s.udev_record = false;
	gc_assert_errno(gc_fp_scratch_require(&s, all, why, sizeof(why)), EOPNOTSUPP);
	assert_has(why, "/scratch/x is on ext4 (device 254:3, no block device)");

	gc_assert_errno(gc_fp_scratch_require(&s, GC_FP_NEED_UDEV, why, sizeof(why)), ENOENT);
	assert_has(why, "no udev record /nonexistent-gc-udev/b254:3 for /scratch/x "
			"(ext4 on 254:3)");

	/* A short why[] is cut, NUL-terminated, nothing written past it; NULL is fine. */
	memset(tiny, '#', sizeof(tiny));
	gc_assert_errno(gc_fp_scratch_require(&s, GC_FP_NEED_UDEV, tiny, 8), ENOENT);
	gc_assert_eq_str(tiny, "no udev");
	gc_assert_eq_uint((uint8_t)tiny[8], '#');
	gc_assert_errno(gc_fp_scratch_require(&s, GC_FP_NEED_UDEV, NULL, 0), ENOENT);
}

/* ---------------------------------------------------------- test files */

/*
 * gc_fp_file_create() writes size bytes of lib/io's offset-keyed pattern for
 * seed, reopens the file with open_flags | O_DIRECT and unlinks it at once
 * unless keep: sizes 0, 1, 4097, 1 MiB + 1 check clean end to end.
 */
static void test_file_sizes(void *data)
{
	static const uint64_t sizes[] = { 0, 1, 4097, MiB + 1 };
	struct fx *fx = data;
	const struct gc_fp_scratch *s = probe_odirect(fx);
	char prefix[PATH_MAX + 32];
	struct stat st;

	snprintf(prefix, sizeof(prefix), "%s/gpuconform-sz-", fx->dir);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct gc_fp_file f;
		int fl;

		create_ok(s, "sz", sizes[i], O_RDWR, false, &f);
		gc_assert_cmpint(f.fd, >=, 0);
		gc_assert_eq_uint(f.size, sizes[i]);
		gc_assert_eq_uint(f.seed, SEED);
		gc_assert(!f.linked);
		gc_assert_f(strncmp(f.path, prefix, strlen(prefix)) == 0, "path %s", f.path);
		fl = fcntl(f.fd, F_GETFL);
		gc_assert_syscall(fl);
		gc_assert(fl & O_DIRECT);
		gc_assert_eq_int(fl & O_ACCMODE, O_RDWR);
		gc_assert(fcntl(f.fd, F_GETFD) & FD_CLOEXEC);
		gc_assert_syscall(fstat(f.fd, &st));
		gc_assert_eq_uint(st.st_size, sizes[i]);
		gc_assert_eq_uint(st.st_nlink, 0);
		gc_assert_eq_uint(count_entries(fx->dir), 0);
		gc_assert_cmpint(gc_fp_file_check(&f, 0, sizes[i], SEED, NULL), ==, -1);
		if (sizes[i])
			gc_assert_cmpint(gc_fp_file_check(&f, 0, sizes[i], SEED + 1, NULL), >=, 0);
		gc_fp_file_destroy(&f);
		gc_assert_eq_int(f.fd, -1);
	}
}

/* -1 when they match, else the first mismatching offset relative to off, *mm filled. */
static void test_file_corrupt(void *data)
{
	const uint64_t size = MiB + 1;
	const struct gc_fp_scratch *s = probe_odirect(data);
	struct gc_fp_file f;
	uint8_t a, b;

	create_ok(s, "bad", size, O_RDONLY, false, &f);
	gc_assert_cmpint(gc_fp_file_check(&f, 0, size, SEED, NULL), ==, -1);
	a = corrupt(&f, MiB); /* the second 1 MiB chunk's first (and last) byte */
	expect_bad(&f, 0, size, MiB, 1, a);
	expect_bad(&f, 1, size - 1, MiB - 1, 1, a);
	gc_assert_cmpint(gc_fp_file_check(&f, 0, MiB, SEED, NULL), ==, -1);
	b = corrupt(&f, 4096); /* one in each chunk: the first one and both counted */
	expect_bad(&f, 0, size, 4096, 2, b);
	expect_bad(&f, 4000, size - 4000, 96, 2, b);
	expect_bad(&f, 4097, size - 4097, MiB - 4097, 1, a);
	gc_assert_cmpint(gc_fp_file_check(&f, 4097, MiB - 4097, SEED, NULL), ==, -1);
	gc_fp_file_destroy(&f);
}

/*
 * Implementation contract (fastpath.c, check_fd): bytes past the end of the
 * file count as mismatches, actual 0, so a short file never passes.
 */
static void test_file_short(void *data)
{
	const struct gc_fp_scratch *s = probe_odirect(data);
	struct gc_fp_file f;
	uint8_t a;

	create_ok(s, "short", 4097, O_RDWR, false, &f);
	expect_bad(&f, 4000, 200, 97, 103, 0);
	expect_bad(&f, 0, 4097 + 5, 4097, 5, 0);
	expect_bad(&f, 10000, 10, 0, 10, 0);
	a = corrupt(&f, 4000); /* a bad byte ahead of the missing ones is the first */
	expect_bad(&f, 3990, 200, 10, 1 + 93, a);
	gc_fp_file_destroy(&f);

	create_ok(s, "short", MiB + 1, O_RDWR, false, &f); /* EOF in the second chunk */
	expect_bad(&f, 0, 2 * MiB, MiB + 1, MiB - 1, 0);
	gc_fp_file_destroy(&f);
}

/*
 * The file is unlinked at once unless kept (then its path is there, the
 * caller unlinks); gc_fp_file_destroy() closes and (if still linked) unlinks,
 * and is safe on a zeroed or failed file.
 */
static void test_file_keep(void *data)
{
	struct fx *fx = data;
	const struct gc_fp_scratch *s = probe_odirect(fx);
	struct gc_fp_file f;
	struct stat st, pst;
	int fd, fd0;

	create_direct(s, "keep", 4097, O_RDWR, true, &f);
	gc_assert(f.linked);
	gc_assert_syscall(stat(f.path, &pst));
	gc_assert_syscall(fstat(f.fd, &st));
	gc_assert_eq_uint(pst.st_ino, st.st_ino);
	gc_assert_eq_uint(st.st_nlink, 1);
	fd = f.fd;
	gc_fp_file_destroy(&f);
	gc_assert(!f.linked);
	gc_assert_eq_int(f.fd, -1);
	gc_assert(stat(f.path, &pst) == -1 && errno == ENOENT);
	gc_assert(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
	gc_fp_file_destroy(&f); /* twice */
	gc_assert_eq_uint(count_entries(fx->dir), 0);

	fd0 = fcntl(0, F_GETFD);
	memset(&f, 0, sizeof(f)); /* fd 0, no path: stdin stays open */
	gc_fp_file_destroy(&f);
	gc_assert_eq_int(fcntl(0, F_GETFD), fd0);
}

/* Reopened with open_flags | O_DIRECT (O_RDONLY, O_RDWR, O_WRONLY); check reads any of them. */
static void test_file_flags(void *data)
{
	static const int modes[] = { O_RDONLY, O_WRONLY, O_RDWR };
	const struct gc_fp_scratch *s = probe_odirect(data);

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct gc_fp_file f;
		int fl = create_direct(s, "mode", 8192, modes[i], i == 1, &f);

		gc_assert_eq_int(fl & O_ACCMODE, modes[i]);
		gc_fp_file_destroy(&f);
	}
}

/* Bad input: a skip or failure that names the path and errno; never a corrupt result. */
static void test_file_errors(void *data)
{
	struct fx *fx = data;
	struct gc_fp_scratch s;
	struct gc_fp_file f;
	struct rlimit old, lim;
	struct gc_mismatch mm;
	char why[PATH_MAX + 256], p[PATH_MAX + 32];
	void (*old_xfsz)(int);

	probe_ok(fx->dir, &s);
	gc_assert_errno(gc_fp_file_create(&s, "bad/tag", 1, SEED, O_RDWR, false, &f, why,
					  sizeof(why)), EINVAL);
	gc_assert_eq_int(f.fd, -1);
	gc_fp_file_destroy(&f);
	/* A file that failed is unreadable: it never passes a check. */
	gc_assert_cmpint(gc_fp_file_check(&f, 0, 10, SEED, NULL), ==, 0);

	snprintf(s.dir, sizeof(s.dir), "%s/missing", fx->dir);
	gc_assert_errno(gc_fp_file_create(&s, "gone", 1, SEED, O_RDWR, false, &f, why,
					  sizeof(why)), ENOENT);
	snprintf(p, sizeof(p), "%s/gpuconform-gone-", s.dir);
	assert_one_line(why);
	assert_has(why, p);
	assert_has(why, strerror(ENOENT));
	snprintf(s.dir, sizeof(s.dir), "%s", fx->dir);

	/* A file size limit makes the fill fail with EFBIG: the kept path is removed too. */
	gc_assert_syscall(getrlimit(RLIMIT_FSIZE, &old));
	lim = old;
	lim.rlim_cur = 64 * 1024;
	old_xfsz = signal(SIGXFSZ, SIG_IGN);
	for (int keep = 0; keep < 2; keep++) {
		int r;

		gc_assert_syscall(setrlimit(RLIMIT_FSIZE, &lim));
		r = gc_fp_file_create(&s, "big", MiB, SEED, O_RDWR, keep, &f, why, sizeof(why));
		gc_assert_syscall(setrlimit(RLIMIT_FSIZE, &old));
		gc_assert_errno(r, EFBIG);
		gc_assert_eq_int(f.fd, -1);
		gc_assert(!f.linked);
		snprintf(p, sizeof(p), "%s/gpuconform-big-", fx->dir);
		assert_has(why, p);
		assert_has(why, strerror(EFBIG));
		gc_info("keep %d: %s", keep, why);
		/* Its path is kept for messages; the file is gone and never passes a check. */
		memset(&mm, 0, sizeof(mm));
		gc_assert_cmpint(gc_fp_file_check(&f, 0, 10, SEED, &mm), ==, 0);
		gc_assert_eq_uint(mm.count, 10);
		gc_assert_eq_uint(count_entries(fx->dir), 0);
	}
	signal(SIGXFSZ, old_xfsz);
}

/* 0, or -EACCES / -EROFS when not permitted (-EPERM too: a container's read-only /proc/sys). */
static void test_drop_caches(void *data)
{
	int r = gc_fp_drop_caches();

	(void)data;
	gc_assert_f(r == 0 || r == -EACCES || r == -EPERM || r == -EROFS, "drop caches: %s",
		    strerror(-r));
	gc_info("drop caches: %s", r ? strerror(-r) : "done");
}

/* ---------------------------------------------------------- perf loop */

/* Two fastpaths (the second missing), then the reference and the host. */
#define FAKE_PATHS 4
static const char *const fake_names[FAKE_PATHS] = { "fastA", "fastB", "reference", "host" };
static const bool fake_have[FAKE_PATHS] = { true, false, true, true };

struct fake {
	unsigned inits;                  /* atomic: thread_init calls */
	uint64_t bytes[FAKE_PATHS];      /* atomic: bytes moved per path */
	unsigned calls[FAKE_PATHS];      /* atomic: transfers per path */
	int firsts[FAKE_PATHS];          /* first_before, first_after order: 1, 2 */
	unsigned calls_at_first[FAKE_PATHS];
	int fail_path;                   /* this path's transfers fail with -EIO; -1 none */
	bool misplaced;                  /* a share not where the loop's split puts it */
};

static int fake_init(void *ctx)
{
	struct fake *f = ctx;

	__atomic_fetch_add(&f->inits, 1, __ATOMIC_RELAXED);
	return 0;
}

static int64_t fake_transfer(void *ctx, int path, uint64_t off, uint64_t len, char *what,
			     size_t what_len)
{
	struct fake *f = ctx;

	if (len == 0 || off % len)
		f->misplaced = true;
	__atomic_fetch_add(&f->bytes[path], len, __ATOMIC_RELAXED);
	__atomic_fetch_add(&f->calls[path], 1, __ATOMIC_RELAXED);
	if (path != f->fail_path)
		return 0;
	snprintf(what, what_len, "fake failure");
	return -EIO;
}

static const char *fake_err_str(void *ctx, int64_t err, const char *what, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "%lld (%s)", (long long)err, what);
	return buf;
}

static void fake_before(void *ctx, int path)
{
	struct fake *f = ctx;

	f->firsts[path] = 1;
	f->calls_at_first[path] = f->calls[path];
}

static void fake_after(void *ctx, int path)
{
	struct fake *f = ctx;

	f->firsts[path] = 2;
	f->calls_at_first[path] = f->calls[path] - f->calls_at_first[path];
}

/* Every op, the optional ones included. */
static const struct gc_fp_perf_ops fake_ops = {
	.thread_init = fake_init, .transfer = fake_transfer, .err_str = fake_err_str,
	.first_before = fake_before, .first_after = fake_after,
};

/* The metric names fastpath_perf.h promises, in its order, for fake_names/fake_have. */
static size_t expected_metrics(char names[][96], size_t cap)
{
	static const unsigned mib[] = { 1, 16, 256 };
	size_t n = 0;

	for (int k = 0; k < FAKE_PATHS; k++)
		if (fake_have[k] && n < cap)
			snprintf(names[n++], 96, "write.first-call.%s.1MiB", fake_names[k]);
	for (size_t i = 0; i < ARRAY_SIZE(mib); i++)
		for (int t = 1; t <= 4; t *= 4) {
			for (int k = 0; k < FAKE_PATHS; k++)
				if (fake_have[k] && n < cap)
					snprintf(names[n++], 96, "write.%s.%uMiB.t%d",
						 fake_names[k], mib[i], t);
			for (int k = 0; k < FAKE_PATHS - 2; k++)
				for (int b = FAKE_PATHS - 2; b < FAKE_PATHS; b++)
					if (fake_have[k] && n < cap)
						snprintf(names[n++], 96,
							 "write.ratio.%s-over-%s.%uMiB.t%d",
							 fake_names[k], fake_names[b], mib[i], t);
		}
	return n;
}

/* The `name` values of the JSON lines in path, in order. */
static size_t read_metric_names(const char *path, char names[][96], size_t cap)
{
	char line[4096];
	size_t n = 0;
	FILE *f = fopen(path, "re");

	gc_assert_f(f != NULL, "%s: %s", path, strerror(errno));
	while (n < cap && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "\"name\":\""), *q;

		gc_assert_f(p != NULL, "no name in %s", line);
		p += strlen("\"name\":\"");
		q = strchr(p, '"');
		gc_assert(q != NULL);
		snprintf(names[n++], 96, "%.*s", (int)(q - p), p);
	}
	fclose(f);
	return n;
}

static void run_fake_perf(struct gc_fp_perf *run, const char *metrics)
{
	const char *old = getenv(GC_METRICS_ENV);
	char saved[PATH_MAX] = "";

	if (old)
		snprintf(saved, sizeof(saved), "%s", old);
	gc_assert_syscall(setenv(GC_METRICS_ENV, metrics, 1));
	gc_fp_perf_run(run);
	if (old)
		gc_assert_syscall(setenv(GC_METRICS_ENV, saved, 1));
	else
		gc_assert_syscall(unsetenv(GC_METRICS_ENV));
}

/*
 * One run of the loop as copy of `copies` ($GPUCONFORM_COPIES, NULL: unset),
 * which must make `reps` repetitions a point: per path its first call, then
 * 1, 16 and 256 MiB with one thread and four; the metric names and their
 * order; missing paths never called; the first call bracketed by
 * first_before and first_after around exactly one transfer.
 */
static void perf_loop_as_copy(struct fx *fx, const char *copies, unsigned reps)
{
	/* per path: 1 MiB + 1 MiB (warm-up), then reps x (1 + 16 + 256) MiB x 2 thread counts */
	const uint64_t per_path = 2 * MiB + reps * 273 * MiB * 2;
	static char want[128][96], got[128][96];
	struct fake f = { .fail_path = -1 };
	struct gc_fp_perf run = { .write = true, .n_paths = FAKE_PATHS, .names = fake_names,
				  .have = fake_have, .sync_fd = -1, .ops = &fake_ops, .ctx = &f };
	char metrics[PATH_MAX];
	size_t nw, ng;

	snprintf(metrics, sizeof(metrics), "%s/metrics-%s.jsonl", fx->dir, copies ? copies : "1");
	if (copies)
		gc_assert_syscall(setenv(GC_COPIES_ENV, copies, 1));
	run_fake_perf(&run, metrics);
	gc_assert_syscall(unsetenv(GC_COPIES_ENV));
	gc_assert(run.dropped); /* writes never drop the cache */
	gc_assert(!f.misplaced);
	for (int k = 0; k < FAKE_PATHS; k++) {
		gc_assert_eq_uint(f.bytes[k], fake_have[k] ? per_path : 0);
		gc_assert_eq_uint(f.calls[k], fake_have[k] ? 1 + 4 + reps * 3 * (1 + 4) : 0);
		gc_assert_eq_int(f.firsts[k], fake_have[k] ? 2 : 0);
		gc_assert_eq_uint(f.calls_at_first[k], fake_have[k] ? 1 : 0);
	}
	gc_assert_eq_uint(f.inits, 3 * (1 + 4 + reps * 3 * (1 + 4)));
	nw = expected_metrics(want, ARRAY_SIZE(want));
	ng = read_metric_names(metrics, got, ARRAY_SIZE(got));
	gc_assert_eq_uint(ng, nw);
	for (size_t i = 0; i < nw; i++)
		gc_assert_eq_str(got[i], want[i]);
	gc_info("copies %s: %u repetitions, %zu metrics, as fastpath_perf.h names them",
		copies ? copies : "unset", reps, ng);
}

/*
 * Alone, all GC_FP_PERF_REPS repetitions; as one of four copies (the runner
 * runs perf-read once per GPU), ceil(5 / 4) = 2, under the same names; as one
 * of eight, still one.
 */
static void test_perf_loop(void *data)
{
	gc_assert_f(getenv(GC_COPIES_ENV) == NULL, "run with %s unset", GC_COPIES_ENV);
	perf_loop_as_copy(data, NULL, GC_FP_PERF_REPS);
	perf_loop_as_copy(data, "4", 2);
	perf_loop_as_copy(data, "8", 1);
}

static void perf_failing_child(void *data)
{
	struct fake f = { .fail_path = 2 };
	struct gc_fp_perf run = { .write = true, .n_paths = FAKE_PATHS, .names = fake_names,
				  .have = fake_have, .sync_fd = -1, .ops = &fake_ops, .ctx = &f };
	char metrics[PATH_MAX];

	snprintf(metrics, sizeof(metrics), "%s/metrics-fail.jsonl", ((struct fx *)data)->dir);
	run_fake_perf(&run, metrics);
	exit(0); /* not reached: the reference path's first transfer fails the subtest */
}

/* A failed transfer fails the subtest (here: a child, which exits 98 for it). */
static void test_perf_loop_failure(void *data)
{
	gc_expect_child_exit(perf_failing_child, data, GC_EXIT_FAILURE, 60000);
}

/* The host path's transfer: all of [off, off + len) at host + off, -EIO when short, -errno. */
static void test_perf_host_io(void *data)
{
	struct fx *fx = data;
	uint8_t out[3 * 4096], in[3 * 4096];
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/host-io", fx->dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	gc_assert_syscall(fd);
	gc_pattern_fill(out, sizeof(out), 0, SEED);
	memset(in, 0, sizeof(in));
	gc_assert_eq_int(gc_fp_perf_host_io(fd, true, out, 4096, 8192), 0);
	gc_assert_eq_int(gc_fp_perf_host_io(fd, false, in, 4096, 8192), 0);
	gc_assert(memcmp(in + 4096, out + 4096, 8192) == 0);
	gc_assert(in[0] == 0 && in[4095] == 0); /* nothing before host + off */
	gc_assert_eq_int(gc_fp_perf_host_io(fd, false, in, 8192, 8192), -EIO); /* 4096 to EOF */
	close(fd);
	gc_assert_eq_int(gc_fp_perf_host_io(fd, false, in, 0, 4096), -EBADF);
}

static const struct gc_subtest subtests[] = {
	{ "udev-parse-good", test_udev_parse_good, "record with both keys, other lines" },
	{ "udev-parse-missing-key", test_udev_parse_missing_key, "one key missing, empty text" },
	{ "udev-parse-empty-value", test_udev_parse_empty_value, "empty values count as none" },
	{ "udev-parse-other-prefix", test_udev_parse_other_prefix, "only E: lines, exact keys" },
	{ "probe-dir", test_probe_dir, "what the probe records about a directory" },
	{ "probe-defaults", test_probe_defaults, "scratch and udev directories by default" },
	{ "probe-udev-present", test_probe_udev_present, "a complete udev record is found" },
	{ "probe-udev-absent", test_probe_udev_absent, "no record: -ENOENT, why names the fix" },
	{ "probe-udev-incomplete", test_probe_udev_incomplete, "a record missing a key" },
	{ "probe-bad-dir", test_probe_bad_dir, "missing dir, a file: -errno naming the path" },
	{ "probe-tmpfs", test_probe_tmpfs, "tmpfs has no block device; why says how to fix" },
	{ "require", test_require, "verdicts and messages on hand-made probe results" },
	{ "file-sizes", test_file_sizes, "test files of 0, 1, 4097, 1 MiB + 1 bytes" },
	{ "file-corrupt", test_file_corrupt, "a flipped byte: its offset, count 1" },
	{ "file-short", test_file_short, "bytes past EOF count as mismatches" },
	{ "file-keep", test_file_keep, "keep leaves the path; destroy removes it" },
	{ "file-flags", test_file_flags, "O_RDONLY, O_WRONLY, O_RDWR with O_DIRECT" },
	{ "file-errors", test_file_errors, "bad tag, missing dir, a write failing: -errno" },
	{ "drop-caches", test_drop_caches, "0 or a permission error" },
	{ "perf-loop", test_perf_loop, "the timed loop's calls, shares and metric names" },
	{ "perf-loop-failure", test_perf_loop_failure, "a failed transfer fails the subtest" },
	{ "perf-host-io", test_perf_host_io, "the host path's whole-range pread / pwrite" },
	{ 0 }
};

GC_MAIN(.name = "unit_fastpath", .description = "lib/fastpath", .subtests = subtests,
	.fixture = &fixture)
