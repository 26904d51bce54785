// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/io's pure logic: patterns (fill, slices, check, inverse,
 * mismatch report), aligned buffers, alignment predicate, scratch paths and
 * the full-transfer helpers on a plain file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "io.h"

#define BUF_LEN 65536
#define FILE_OFF 12345u /* odd: the slices below start at every alignment */
#define SEED 0x5eedull

static uint8_t whole[BUF_LEN], part[BUF_LEN];

static void test_pattern_byte(void *fx)
{
	(void)fx;
	gc_pattern_fill(whole, BUF_LEN, FILE_OFF, SEED);
	for (size_t i = 0; i < BUF_LEN; i++)
		gc_assert_f(whole[i] == gc_pattern_byte(FILE_OFF + i, SEED),
			    "fill and gc_pattern_byte disagree at byte %zu", i);
}

static void test_pattern_seed(void *fx)
{
	size_t same = 0;

	(void)fx;
	gc_pattern_fill(whole, BUF_LEN, 0, 1);
	gc_pattern_fill(part, BUF_LEN, 0, 2);
	for (size_t i = 0; i < BUF_LEN; i++)
		same += whole[i] == part[i];
	/* Independent bytes agree 1 time in 256: 256 expected here. */
	gc_assert_cmpuint(same, <, BUF_LEN / 64);
	gc_pattern_fill(part, BUF_LEN, 8, 1); /* same seed, other offset */
	gc_assert(memcmp(whole, part, BUF_LEN) != 0);
}

/* Every slice filled or checked on its own agrees with the whole. */
static void test_pattern_slices(void *fx)
{
	static const size_t starts[] = { 0, 1, 3, 7, 8, 9, 511, 4096, 4099, 65535 };
	static const size_t lens[] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 4097, 60000 };

	(void)fx;
	gc_pattern_fill(whole, BUF_LEN, FILE_OFF, SEED);
	for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			size_t st = starts[s], len = lens[l];

			if (st + len > BUF_LEN)
				continue;
			memset(part, 0, len);
			gc_pattern_fill(part, len, FILE_OFF + st, SEED);
			gc_assert_f(memcmp(part, whole + st, len) == 0,
				    "slice at %zu, %zu bytes differs from the whole", st, len);
			gc_assert_cmpint(gc_pattern_check(whole + st, len, FILE_OFF + st, SEED,
							  NULL), ==, -1);
		}
	}
}

static void expect_flip(size_t at)
{
	struct gc_mismatch mm;
	uint8_t want;

	memset(&mm, 0xa5, sizeof(mm));
	gc_pattern_fill(whole, BUF_LEN, FILE_OFF, SEED);
	want = whole[at];
	whole[at] ^= 0x10;
	gc_assert_cmpint(gc_pattern_check(whole, BUF_LEN, FILE_OFF, SEED, &mm), ==, at);
	gc_assert_eq_uint(mm.offset, at);
	gc_assert_eq_uint(mm.file_offset, FILE_OFF + at);
	gc_assert_eq_uint(mm.expected, want);
	gc_assert_eq_uint(mm.actual, want ^ 0x10);
	gc_assert_eq_uint(mm.count, 1);
	gc_assert_eq_uint(mm.len, BUF_LEN);
}

/* Head (before 8-byte file alignment), word body, and tail positions. */
static void test_pattern_flip(void *fx)
{
	static const size_t at[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 100, 4096, BUF_LEN - 9,
				     BUF_LEN - 8, BUF_LEN - 2, BUF_LEN - 1 };

	(void)fx;
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		expect_flip(at[i]);
}

static void test_pattern_first_of_many(void *fx)
{
	struct gc_mismatch mm;

	(void)fx;
	gc_pattern_fill(whole, BUF_LEN, FILE_OFF, SEED);
	whole[5000] ^= 1;
	whole[5001] ^= 0xff;
	whole[BUF_LEN - 1] ^= 0x80;
	gc_assert_cmpint(gc_pattern_check(whole, BUF_LEN, FILE_OFF, SEED, &mm), ==, 5000);
	gc_assert_eq_uint(mm.count, 3);
	/* A slice past the damage is clean; one ending at it reports its last byte. */
	gc_assert_cmpint(gc_pattern_check(whole + 5002, 100, FILE_OFF + 5002, SEED, NULL), ==, -1);
	gc_assert_cmpint(gc_pattern_check(whole + 4990, 11, FILE_OFF + 4990, SEED, NULL), ==, 10);
	/* The wrong file offset or seed fails at once. */
	gc_assert_cmpint(gc_pattern_check(whole, 64, FILE_OFF + 1, SEED, NULL), >=, 0);
	gc_assert_cmpint(gc_pattern_check(whole, 64, FILE_OFF, SEED + 1, NULL), >=, 0);
	gc_assert_cmpint(gc_pattern_check(whole, 0, FILE_OFF, SEED + 1, NULL), ==, -1);
}

static void test_pattern_inverse(void *fx)
{
	struct gc_mismatch mm;

	(void)fx;
	gc_pattern_fill(whole, BUF_LEN, FILE_OFF, SEED);
	gc_pattern_fill_inv(part, BUF_LEN, FILE_OFF, SEED);
	for (size_t i = 0; i < BUF_LEN; i++)
		gc_assert_f((whole[i] ^ part[i]) == 0xff, "inverse differs at byte %zu", i);
	gc_assert_cmpint(gc_pattern_check_inv(part + 3, 1000, FILE_OFF + 3, SEED, NULL), ==, -1);
	gc_assert_cmpint(gc_pattern_check(part, BUF_LEN, FILE_OFF, SEED, &mm), ==, 0);
	gc_assert_eq_uint(mm.count, BUF_LEN);
	gc_assert_cmpint(gc_pattern_check_inv(whole, BUF_LEN, FILE_OFF, SEED, &mm), ==, 0);
	gc_assert_eq_uint(mm.expected, (uint8_t)~whole[0]);
	gc_assert_eq_uint(mm.actual, whole[0]);
}

static void test_mismatch_str(void *fx)
{
	struct gc_mismatch mm = { .offset = 4096, .file_offset = 4608, .expected = 0x3a,
				  .actual = 0xc5, .count = 17, .len = 8192 };
	char s[160], tiny[8];

	(void)fx;
	gc_assert_eq_str(gc_mismatch_str(&mm, s, sizeof(s)),
			 "byte 4096 of 8192 (file offset 4608): expected 0x3a, got 0xc5; "
			 "17 bytes differ");
	mm.count = 1;
	gc_assert_eq_str(gc_mismatch_str(&mm, s, sizeof(s)),
			 "byte 4096 of 8192 (file offset 4608): expected 0x3a, got 0xc5; "
			 "1 byte differs");
	gc_assert_eq_str(gc_mismatch_str(&mm, tiny, sizeof(tiny)), "byte 40");
}

/* gc_pattern_diff: gc_pattern_check's (inv: _inv's) result, a mismatch in gc_mismatch_str's words. */
static void test_pattern_diff(void *fx)
{
	struct gc_mismatch mm;
	char s[160] = "untouched", want[160];

	(void)fx;
	gc_pattern_fill(whole, BUF_LEN, FILE_OFF, SEED);
	gc_pattern_fill_inv(part, BUF_LEN, FILE_OFF, SEED);
	gc_assert_cmpint(gc_pattern_diff(whole, BUF_LEN, FILE_OFF, SEED, false, s, sizeof(s)), ==, -1);
	gc_assert_cmpint(gc_pattern_diff(part, BUF_LEN, FILE_OFF, SEED, true, s, sizeof(s)), ==, -1);
	gc_assert_eq_str(s, "untouched");
	whole[77] ^= 0x10;
	gc_assert_cmpint(gc_pattern_diff(whole, BUF_LEN, FILE_OFF, SEED, false, s, sizeof(s)), ==, 77);
	gc_assert_cmpint(gc_pattern_check(whole, BUF_LEN, FILE_OFF, SEED, &mm), ==, 77);
	gc_assert_eq_str(s, gc_mismatch_str(&mm, want, sizeof(want)));
	gc_assert_cmpint(gc_pattern_diff(whole, BUF_LEN, FILE_OFF, SEED, true, s, sizeof(s)), ==, 0);
	gc_assert_cmpint(gc_pattern_check_inv(whole, BUF_LEN, FILE_OFF, SEED, &mm), ==, 0);
	gc_assert_eq_str(s, gc_mismatch_str(&mm, want, sizeof(want)));
}

static void check_alloc(size_t size, size_t align)
{
	struct gc_io_buf b;

	gc_assert_ok(gc_io_buf_alloc(&b, size, align));
	gc_assert(b.ptr != NULL);
	gc_assert_eq_uint(b.size, size);
	gc_assert_cmpuint(b.align, >=, align);
	gc_assert_f((uintptr_t)b.ptr % align == 0, "%p not aligned to %zu", b.ptr, align);
	memset(b.ptr, 0x5a, size); /* writable, all of it (ASan/valgrind would see) */
	gc_io_buf_free(&b);
	gc_assert(b.ptr == NULL);
	gc_io_buf_free(&b);
}

static void test_buf_alloc(void *fx)
{
	struct gc_io_buf b;

	(void)fx;
	for (size_t align = 1; align <= (2u << 20); align <<= 1) {
		check_alloc(0, align);
		check_alloc(1, align);
		check_alloc(4097, align);
	}
	gc_assert_errno(gc_io_buf_alloc(&b, 16, 0), EINVAL);
	gc_assert(b.ptr == NULL);
	gc_assert_errno(gc_io_buf_alloc(&b, 16, 3), EINVAL);
	gc_assert_errno(gc_io_buf_alloc(&b, 16, 4096 + 512), EINVAL);
	gc_assert_errno(gc_io_buf_alloc(&b, SIZE_MAX - 4096, 4096), ENOMEM);
	gc_assert(b.ptr == NULL);
	gc_io_buf_free(&b);
}

static void test_dio_aligned(void *fx)
{
	const struct gc_dio_align a = { .mem_align = 8, .offset_align = 512, .required = true };
	const struct gc_dio_align none = { .mem_align = 1, .offset_align = 1 };
	const char *p = (const char *)(uintptr_t)4096;

	(void)fx;
	gc_assert(gc_dio_aligned(&a, p, 0, 0));
	gc_assert(gc_dio_aligned(&a, p + 8, 1024, 512));
	gc_assert(!gc_dio_aligned(&a, p + 4, 1024, 512));
	gc_assert(!gc_dio_aligned(&a, p, 1, 512));
	gc_assert(!gc_dio_aligned(&a, p, 512, 511));
	gc_assert(!gc_dio_aligned(&a, p, 0, 4097));
	gc_assert(gc_dio_aligned(&none, p + 1, 1, 4097));
	gc_assert_eq_str(gc_dio_align_source_name(GC_DIO_ALIGN_STATX), "statx(STATX_DIOALIGN)");
}

static void test_scratch_dir(void *fx)
{
	char d[PATH_MAX], tiny[4];

	(void)fx;
	gc_assert_syscall(setenv(GC_SCRATCH_ENV, "/some/where", 1));
	gc_assert_ok(gc_io_scratch_dir(d, sizeof(d)));
	gc_assert_eq_str(d, "/some/where");
	gc_assert_errno(gc_io_scratch_dir(tiny, sizeof(tiny)), ENAMETOOLONG);
	gc_assert_syscall(setenv(GC_SCRATCH_ENV, "", 1));
	gc_assert_ok(gc_io_scratch_dir(d, sizeof(d)));
	gc_assert_eq_str(d, "/var/tmp");
	gc_assert_syscall(unsetenv(GC_SCRATCH_ENV));
	gc_assert_ok(gc_io_scratch_dir(d, sizeof(d)));
	gc_assert_eq_str(d, "/var/tmp");
}

static void test_scratch_file(void *fx)
{
	char dir[] = "/tmp/gc-unit-io-XXXXXX", path[PATH_MAX], want[PATH_MAX];
	struct stat st;
	int fd = -1;

	(void)fx;
	gc_assert(mkdtemp(dir) != NULL);
	gc_assert_syscall(setenv(GC_SCRATCH_ENV, dir, 1));
	gc_assert_errno(gc_io_scratch_file("bad/tag", path, sizeof(path), &fd), EINVAL);
	gc_assert_errno(gc_io_scratch_file("", path, sizeof(path), &fd), EINVAL);
	gc_assert_errno(gc_io_scratch_file("t", path, 8, &fd), ENAMETOOLONG);
	gc_assert_ok(gc_io_scratch_file("unit_1", path, sizeof(path), &fd));
	snprintf(want, sizeof(want), "%s/gpuconform-unit_1-", dir);
	gc_assert_f(strncmp(path, want, strlen(want)) == 0, "path %s", path);
	gc_assert_eq_uint(strlen(path), strlen(want) + 6);
	gc_assert_syscall(fstat(fd, &st));
	gc_assert(S_ISREG(st.st_mode));
	gc_assert_eq_uint(st.st_mode & 0777, 0600);
	gc_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	gc_assert_syscall(unlink(path));
	gc_assert_syscall(close(fd));
	gc_assert_syscall(rmdir(dir)); /* empty: only the one file was made */
	gc_assert_syscall(unsetenv(GC_SCRATCH_ENV));
}

static void roundtrip(int fd)
{
	gc_pattern_fill(whole, BUF_LEN, 100, SEED);
	gc_assert_cmpint(gc_io_pwrite_all(fd, whole, BUF_LEN, 100), ==, BUF_LEN);
	memset(part, 0, BUF_LEN);
	gc_assert_cmpint(gc_io_pread_all(fd, part, BUF_LEN, 100), ==, BUF_LEN);
	gc_assert_cmpint(gc_pattern_check(part, BUF_LEN, 100, SEED, NULL), ==, -1);
	/* Short only at end of file: 100 + BUF_LEN bytes in the file. */
	gc_assert_cmpint(gc_io_pread_all(fd, part, BUF_LEN, 200), ==, BUF_LEN - 100);
	gc_assert_cmpint(gc_io_pread_all(fd, part, 10, 100 + BUF_LEN), ==, 0);
	gc_assert_cmpint(gc_io_pread(fd, part, 10, 100 + BUF_LEN - 4), ==, 4);
	gc_assert_cmpint(gc_io_pwrite(fd, whole, 0, 0), ==, 0);
	gc_assert_errno(gc_io_pread_all(fd, part, 1, -1), EINVAL);
	gc_assert_errno(gc_io_pwrite_all(fd, part, 1, -1), EINVAL);
}

static void test_transfer(void *fx)
{
	char path[] = "/tmp/gc-unit-io-file-XXXXXX";
	int fd = mkstemp(path);

	(void)fx;
	gc_assert_syscall(fd);
	gc_assert_syscall(unlink(path));
	roundtrip(fd);
	gc_assert_syscall(close(fd));
	/* At least one call even for 0 bytes: errors are still reported. */
	gc_assert_errno(gc_io_pread_all(fd, part, 0, 0), EBADF);
	gc_assert_errno(gc_io_pwrite_all(fd, part, 0, 0), EBADF);
	gc_assert_errno(gc_io_pread(fd, part, 1, 0), EBADF);
	gc_assert_errno(gc_io_pwrite(fd, part, 1, 0), EBADF);
}

static void test_open_direct(void *fx)
{
	int fd;

	(void)fx;
	gc_assert_errno(gc_io_open_direct("/nonexistent-gc/x", O_RDONLY, 0, &fd), ENOENT);
}

static const struct gc_subtest subtests[] = {
	{ "pattern-byte", test_pattern_byte, "fill agrees with gc_pattern_byte at every offset" },
	{ "pattern-seed", test_pattern_seed, "seed and offset change the pattern" },
	{ "pattern-slices", test_pattern_slices, "slices at any offset agree with the whole" },
	{ "pattern-flip", test_pattern_flip, "a flipped byte is reported at its offset" },
	{ "pattern-first-of-many", test_pattern_first_of_many, "first mismatch and count" },
	{ "pattern-inverse", test_pattern_inverse, "the inverse differs at every byte" },
	{ "mismatch-str", test_mismatch_str, "mismatch formatting" },
	{ "pattern-diff", test_pattern_diff, "check and mismatch words in one call" },
	{ "buf-alloc", test_buf_alloc, "aligned buffers, size 0, bad alignment" },
	{ "dio-aligned", test_dio_aligned, "alignment predicate" },
	{ "scratch-dir", test_scratch_dir, "$GPUCONFORM_SCRATCH_DIR or /var/tmp" },
	{ "scratch-file", test_scratch_file, "unique 0600 O_CLOEXEC file in the scratch dir" },
	{ "transfer", test_transfer, "pread/pwrite helpers: round trip, EOF, -errno" },
	{ "open-direct", test_open_direct, "open errors come back as -errno" },
	{ 0 }
};

GC_MAIN(.name = "unit_io", .description = "lib/io pure logic", .subtests = subtests)
