// SPDX-License-Identifier: MIT
/*
 * host_io: the host file I/O reference path the GPU fastpath is judged
 * against. Buffered and O_DIRECT pread/pwrite over every size x offset x
 * buffer alignment case, byte-exact against an offset-keyed pattern, with
 * guard bytes around the buffer and around the written file range; O_DIRECT
 * alignment rules (misaligned -> EINVAL, nothing changed); throughput of both
 * paths as metrics (recorded, never asserted).
 *
 * Files live in the scratch directory ($GPUCONFORM_SCRATCH_DIR, else
 * /var/tmp). The fixture creates them, opens them and unlinks them at once:
 * the descriptors keep them alive until teardown closes them, and nothing is
 * left behind however the process ends (a crash, the runner's timeout kill).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "io.h"
#include "measure.h"

#define MAX_SIZE (64 * MiB)     /* largest case of the matrix */
#define MAX_OFF 4096u           /* largest file offset of the matrix */
#define TAIL (8 * KiB)          /* file bytes kept after every written range */
#define RD_LEN (MAX_OFF + MAX_SIZE + TAIL)
#define TP_MAX (256 * MiB)      /* largest throughput transfer */
#define BUF_LEN (TP_MAX + 64 * KiB)
#define RD_SEED 0x72656164ull   /* content of the read file */
#define WR_SEED 0x77726974ull   /* what the write cases write */

struct io_fx {
	unsigned instance;
	char dir[PATH_MAX];
	char fs[64];
	int rd_fd, wr_fd, tp_fd;    /* buffered, O_RDWR */
	int rd_dfd, wr_dfd, tp_dfd; /* O_DIRECT, or -1 */
	int direct_err;             /* -errno of the O_DIRECT open or alignment query */
	struct gc_dio_align align;
	size_t guard;               /* guard bytes each side of a buffer; >= mem_align */
	struct gc_io_buf buf;       /* BUF_LEN bytes, touched only as far as a case needs */
};

/* ------------------------------------------------------------- fixture */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void io_fx_destroy(struct io_fx *fx)
{
	close_fd(&fx->rd_fd);
	close_fd(&fx->wr_fd);
	close_fd(&fx->tp_fd);
	close_fd(&fx->rd_dfd);
	close_fd(&fx->wr_dfd);
	close_fd(&fx->tp_dfd);
	gc_io_buf_free(&fx->buf);
	free(fx);
}

/* `gpuconform-io-<pid>-<instance>-`: every file of one fixture instance starts so. */
static void fx_prefix(unsigned instance, char *out, size_t len)
{
	snprintf(out, len, GC_SCRATCH_PREFIX "io-%ld-%u-", (long)getpid(), instance);
}

/* A scratch file open buffered in *fd and, where possible, O_DIRECT in *dfd; unlinked. */
static int make_file(struct io_fx *fx, const char *what, int *fd, int *dfd)
{
	char tag[64], path[PATH_MAX];
	int r;

	snprintf(tag, sizeof(tag), "io-%ld-%u-%s", (long)getpid(), fx->instance, what);
	r = gc_io_scratch_file(tag, path, sizeof(path), fd);
	if (r)
		return r;
	if (!fx->direct_err)
		fx->direct_err = gc_io_open_direct(path, O_RDWR, 0, dfd);
	return unlink(path) ? -errno : 0;
}

static int make_files(struct io_fx *fx)
{
	int r = make_file(fx, "rd", &fx->rd_fd, &fx->rd_dfd);

	if (!r)
		r = make_file(fx, "wr", &fx->wr_fd, &fx->wr_dfd);
	if (!r)
		r = make_file(fx, "tp", &fx->tp_fd, &fx->tp_dfd);
	if (!r && !fx->direct_err)
		fx->direct_err = gc_io_dio_align(fx->rd_dfd, &fx->align);
	return r;
}

/* The read file: RD_SEED's pattern over [0, RD_LEN). */
static int fill_read_file(struct io_fx *fx)
{
	ssize_t n;

	gc_pattern_fill(fx->buf.ptr, RD_LEN, 0, RD_SEED);
	n = gc_io_pwrite_all(fx->rd_fd, fx->buf.ptr, RD_LEN, 0);
	if (n < 0)
		return (int)n;
	return n == RD_LEN ? 0 : -EIO;
}

static struct io_fx *io_fx_alloc(unsigned instance)
{
	struct io_fx *fx = calloc(1, sizeof(*fx));

	if (!fx)
		gc_fail("calloc(%zu) failed", sizeof(*fx));
	fx->instance = instance;
	fx->rd_fd = fx->wr_fd = fx->tp_fd = -1;
	fx->rd_dfd = fx->wr_dfd = fx->tp_dfd = -1;
	return fx;
}

/* Every failure path removes what was made before leaving: nothing is left behind. */
static struct io_fx *io_fx_create(unsigned instance)
{
	struct io_fx *fx = io_fx_alloc(instance);
	const char *step = "scratch directory";
	int r = gc_io_scratch_dir(fx->dir, sizeof(fx->dir));

	gc_io_fs_name(fx->dir, fx->fs, sizeof(fx->fs));
	if (!r) {
		step = "creating scratch files";
		r = make_files(fx);
	}
	fx->guard = fx->align.mem_align > 4 * KiB ? fx->align.mem_align : 4 * KiB;
	if (!r) {
		step = "buffer allocation";
		r = gc_io_buf_alloc(&fx->buf, BUF_LEN, fx->guard);
	}
	if (!r) {
		step = "writing the read file";
		r = fill_read_file(fx);
	}
	if (r) {
		const char *env = getenv(GC_SCRATCH_ENV);
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s", fx->dir);
		io_fx_destroy(fx);
		gc_fail("%s in %s (%s=%s, default " GC_SCRATCH_DEFAULT "): %s", step, dir,
			GC_SCRATCH_ENV, env ? env : "unset", strerror(-r));
	}
	return fx;
}

static void *io_setup(void)
{
	struct io_fx *fx = io_fx_create(0);

	if (fx->direct_err)
		gc_info("O_DIRECT unavailable in %s (%s): %s", fx->dir, fx->fs,
			strerror(-fx->direct_err));
	else
		gc_info("O_DIRECT in %s (%s): memory %u, offset %u, from %s", fx->dir, fx->fs,
			fx->align.mem_align, fx->align.offset_align,
			gc_dio_align_source_name(fx->align.source));
	return fx;
}

static size_t count_prefixed(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	gc_assert_f(d != NULL, "opendir(%s): %s", dir, strerror(errno));
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

static void io_teardown(void *data)
{
	struct io_fx *fx = data;
	char dir[PATH_MAX], prefix[64];
	size_t left;

	snprintf(dir, sizeof(dir), "%s", fx->dir);
	fx_prefix(fx->instance, prefix, sizeof(prefix));
	io_fx_destroy(fx);
	left = count_prefixed(dir, prefix);
	if (left)
		gc_fail("%zu scratch file(s) %s* left in %s", left, prefix, dir);
}

static const struct gc_fixture fixture = {
	.setup = io_setup,
	.teardown = io_teardown,
};

static void require_direct(const struct io_fx *fx)
{
	gc_require_f(!fx->direct_err,
		     "O_DIRECT refused in %s (filesystem %s): %s; set %s to a directory on a "
		     "filesystem with O_DIRECT support (ext4, xfs)",
		     fx->dir, fx->fs, strerror(-fx->direct_err), GC_SCRATCH_ENV);
}

/* ---------------------------------------------------------- the matrix */

struct io_case {
	struct io_fx *fx;
	bool direct;
	size_t size;
	uint64_t off;     /* file offset */
	size_t shift;     /* buffer address = guard-aligned + shift */
};

/*
 * The matrix: every size at every place (file offset, buffer shift), one
 * dynamic subtest `size-<bytes>-<place>` each, read and write alike.
 */
static const size_t sizes[] = { 0, 1, 511, 512, 4095, 4096, 4097, MiB + 1, MAX_SIZE };
static const struct io_place {
	const char *name;
	uint64_t off;
	size_t shift;
} places[] = {
	{ "off-0", 0, 0 },
	{ "off-1", 1, 0 },
	{ "off-512", 512, 0 },
	{ "off-4096", MAX_OFF, 0 },
	{ "unaligned-buf", 0, 1 },
};

GC_PRODUCT_F(read_matrix, size_t, sizes, struct io_place, places, read_case,
	     "size-%zu-%s", *a, b->name);
GC_PRODUCT_F(write_matrix, size_t, sizes, struct io_place, places, write_case,
	     "size-%zu-%s", *a, b->name);

/* What the subtest hands every case: the fixture, and buffered or O_DIRECT. */
struct io_run {
	struct io_fx *fx;
	bool direct;
};

static struct io_case case_of(const struct io_run *run, size_t size, const struct io_place *at)
{
	return (struct io_case){ .fx = run->fx, .direct = run->direct, .size = size,
				 .off = at->off, .shift = at->shift };
}

/* What a case must do: transfer everything, or be refused with EINVAL. */
enum outcome { MUST_TRANSFER, MUST_REFUSE, MAY_REFUSE };

/*
 * Size 0: read(2) says "If count is zero, read() may detect the errors
 * described below. In the absence of any errors, or if read() does not check
 * for errors, a read() with a count of 0 returns zero and has no other
 * effects." and write(2) "If count is zero and fd refers to a regular file,
 * then write() may return a failure status if one of the errors below is
 * detected. If no errors are detected, or error detection is not performed, 0
 * is returned without causing any other effect." [src mkerrisk/man-pages
 * man2/read.2 @ 091fbf1fef48] [src mkerrisk/man-pages man2/write.2 @
 * 091fbf1fef48] (man-pages 5.13). On ext4 (Linux 6.18, statx offset/memory
 * alignment 512) a 0-byte O_DIRECT pread and pwrite return 0 at every offset
 * (0, 1, 512, 4096, at and past EOF) and buffer address (aligned or +1):
 * ext4_file_read_iter() returns 0 on an empty iov_iter before any check, and
 * ext4_dio_write_iter() returns generic_write_checks()'s 0 for count 0. So:
 * aligned -> must return 0; misaligned -> 0 or EINVAL, and in both cases
 * nothing may change. Reads at or past EOF also return 0 when misaligned: the
 * matrix reads only inside the file.
 *
 * Memory: stx_dio_mem_align is what is sufficient (statx(2): "The alignment
 * (in bytes) required for user memory buffers for direct I/O (O_DIRECT) on
 * this file, or 0 if direct I/O is not supported on this file." [src
 * kernelorg-mirror/docs_man-pages_man-pages man/man2/statx.2 @ 2fc4bf025adb],
 * a man-pages newer than 5.13, which predates the field), not a promise to
 * refuse the rest. Linux 6.18 on ext4/virtio-blk (mem_align 512) accepts a
 * 512-byte transfer from buffer+1 (one segment within a page) and refuses 4096
 * bytes from buffer+1 (split at the page boundary into pieces that are not
 * logical-block multiples). A buffer misaligned while offset and length are
 * aligned may thus be refused (EINVAL, nothing changed) or done, and then
 * byte-exact. Offset or length misaligned against stx_dio_offset_align (or the
 * block device's logical block size) must be refused.
 */
static enum outcome expected_outcome(const struct io_case *c, const void *data)
{
	const struct gc_dio_align *a = &c->fx->align;

	if (!c->direct || gc_dio_aligned(a, data, c->off, c->size))
		return MUST_TRANSFER;
	if (c->size == 0 || a->source == GC_DIO_ALIGN_GUESS)
		return MAY_REFUSE;
	if (c->off % a->offset_align || c->size % a->offset_align)
		return MUST_REFUSE;
	return MAY_REFUSE;
}

/* True when the call transferred the data, false when it was (rightly) refused. */
static bool check_result(const struct io_case *c, const char *op, ssize_t r, enum outcome o)
{
	if (o == MUST_REFUSE) {
		gc_assert_f(r == -EINVAL, "misaligned O_DIRECT %s of %zu bytes at %" PRIu64
			    " (buffer +%zu) returned %zd (%s), want -EINVAL", op, c->size, c->off,
			    c->shift, r, r < 0 ? strerror((int)-r) : "success");
		return false;
	}
	if (o == MAY_REFUSE && r == -EINVAL) {
		gc_info("misaligned O_DIRECT %s of %zu bytes at %" PRIu64 " (buffer +%zu) refused "
			"with EINVAL", op, c->size, c->off, c->shift);
		return false;
	}
	gc_assert_f(r == (ssize_t)c->size, "%s of %zu bytes at %" PRIu64 " returned %zd (%s)", op,
		    c->size, c->off, r, r < 0 ? strerror((int)-r) : "short transfer");
	if (o == MAY_REFUSE)
		gc_info("misaligned O_DIRECT %s of %zu bytes at %" PRIu64 " (buffer +%zu) accepted",
			op, c->size, c->off, c->shift);
	return true;
}

static void expect_pattern(const char *what, const void *p, size_t len, uint64_t off,
			   uint64_t seed, bool inv)
{
	char msg[192];
	int64_t bad = gc_pattern_diff(p, len, off, seed, inv, msg, sizeof(msg));

	gc_check_f(bad < 0, "%s: %s", what, msg);
}

/* Where the case's data goes in the fixture buffer (a guard precedes it). */
static uint8_t *case_data(const struct io_case *c)
{
	return (uint8_t *)c->fx->buf.ptr + c->fx->guard + c->shift;
}

/*
 * The buffer around data: guard | data | guard. Each byte holds the inverse
 * of the pattern at the file offset it stands for, so a transfer that spills
 * even correct file bytes into a guard is seen.
 */
static void fill_guards(const struct io_case *c, uint64_t seed)
{
	size_t g = c->fx->guard;

	gc_pattern_fill_inv(case_data(c) - g, g + c->size + g, c->off - g, seed);
}

static void expect_guards(const struct io_case *c, uint64_t seed)
{
	size_t g = c->fx->guard;
	const uint8_t *d = case_data(c);

	expect_pattern("guard before the buffer", d - g, g, c->off - g, seed, true);
	expect_pattern("guard after the buffer", d + c->size, g, c->off + c->size, seed, true);
}

static void read_case(void *ctx, const size_t *size, const struct io_place *at)
{
	const struct io_case cs = case_of(ctx, *size, at), *c = &cs;
	uint8_t *d = case_data(c);
	enum outcome o = expected_outcome(c, d);
	ssize_t r;

	fill_guards(c, RD_SEED);
	if (c->direct)
		r = gc_io_pread(c->fx->rd_dfd, d, c->size, (off_t)c->off);
	else
		r = gc_io_pread_all(c->fx->rd_fd, d, c->size, (off_t)c->off);
	if (check_result(c, "pread", r, o))
		expect_pattern("data read", d, c->size, c->off, RD_SEED, false);
	else
		expect_pattern("buffer of a refused read", d, c->size, c->off, RD_SEED, true);
	expect_guards(c, RD_SEED);
}

/* The write file: exactly [0, window) of WR_SEED's inverse. */
static void prefill_write_file(const struct io_case *c, size_t window)
{
	gc_assert_syscall(ftruncate(c->fx->wr_fd, 0));
	gc_pattern_fill_inv(c->fx->buf.ptr, window, 0, WR_SEED);
	gc_assert_cmpint(gc_io_pwrite_all(c->fx->wr_fd, c->fx->buf.ptr, window, 0), ==, window);
}

/* Read the whole window back with a plain buffered read and check every byte. */
static void verify_write_file(const struct io_case *c, size_t window, bool written)
{
	const uint8_t *p = c->fx->buf.ptr;
	struct stat st;

	gc_assert_syscall(fstat(c->fx->wr_fd, &st));
	gc_check_f(st.st_size == (off_t)window, "file size %jd after a write inside it, want %zu",
		   (intmax_t)st.st_size, window);
	gc_assert_cmpint(gc_io_pread_all(c->fx->wr_fd, c->fx->buf.ptr, window, 0), ==, window);
	expect_pattern("file before the written range", p, c->off, 0, WR_SEED, true);
	expect_pattern(written ? "file range written" : "file range of a refused write",
		       p + c->off, c->size, c->off, WR_SEED, !written);
	expect_pattern("file after the written range", p + c->off + c->size, TAIL,
		       c->off + c->size, WR_SEED, true);
}

static void write_case(void *ctx, const size_t *size, const struct io_place *at)
{
	const struct io_case cs = case_of(ctx, *size, at), *c = &cs;
	size_t window = c->off + c->size + TAIL;
	uint8_t *d = case_data(c);
	enum outcome o = expected_outcome(c, d);
	bool written;
	ssize_t r;

	prefill_write_file(c, window);
	fill_guards(c, WR_SEED);
	gc_pattern_fill(d, c->size, c->off, WR_SEED);
	if (c->direct)
		r = gc_io_pwrite(c->fx->wr_dfd, d, c->size, (off_t)c->off);
	else
		r = gc_io_pwrite_all(c->fx->wr_fd, d, c->size, (off_t)c->off);
	written = check_result(c, "pwrite", r, o);
	expect_pattern("source buffer after pwrite", d, c->size, c->off, WR_SEED, false);
	expect_guards(c, WR_SEED);
	verify_write_file(c, window, written);
}

static void test_buffered_read(void *data)
{
	gc_product(read_matrix, &(struct io_run){ data, false });
}

static void test_buffered_write(void *data)
{
	gc_product(write_matrix, &(struct io_run){ data, false });
}

static void test_direct_read(void *data)
{
	require_direct(data);
	gc_product(read_matrix, &(struct io_run){ data, true });
}

static void test_direct_write(void *data)
{
	require_direct(data);
	gc_product(write_matrix, &(struct io_run){ data, true });
}

/* ----------------------------------------------------------- throughput */

struct tp_run {
	struct io_fx *fx;
	size_t size;
	double mbps[4][8]; /* [kind][repetition] */
	size_t reps;
};

enum tp_kind { TP_BUFFERED_WRITE, TP_BUFFERED_READ, TP_DIRECT_WRITE, TP_DIRECT_READ };
static const char *const tp_names[] = { "buffered-write", "buffered-read", "direct-write",
					"direct-read" };

static double mb_per_s(size_t bytes, uint64_t ns)
{
	return (double)bytes / 1e6 / ((double)(ns ? ns : 1) / 1e9);
}

/*
 * Writes are timed up to fdatasync(): the data has reached the device (the
 * buffered path would otherwise measure a memcpy into the page cache).
 */
static uint64_t timed_write(int fd, const void *p, size_t len)
{
	uint64_t t0 = gc_now_ns();

	gc_assert_cmpint(gc_io_pwrite_all(fd, p, len, 0), ==, len);
	gc_assert_syscall(fdatasync(fd));
	return gc_now_ns() - t0;
}

static uint64_t timed_read(int fd, void *p, size_t len)
{
	uint64_t t0 = gc_now_ns();

	gc_assert_cmpint(gc_io_pread_all(fd, p, len, 0), ==, len);
	return gc_now_ns() - t0;
}

/*
 * The buffered read starts from a cold page cache: fsync then
 * POSIX_FADV_DONTNEED drop the file's (now clean) cached pages, so it
 * measures device reads through the page cache (readahead + copy to the
 * user buffer), comparable with the O_DIRECT read, not a memcpy.
 */
static void drop_cache(int fd)
{
	gc_assert_syscall(fsync(fd));
	gc_assert_eq_int(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
}

static void tp_rep(struct tp_run *t, size_t rep)
{
	struct io_fx *fx = t->fx;
	uint8_t *p = fx->buf.ptr;
	uint64_t seed = WR_SEED + rep, ns;

	gc_pattern_fill(p, t->size, 0, seed);
	ns = timed_write(fx->tp_fd, p, t->size);
	t->mbps[TP_BUFFERED_WRITE][rep] = mb_per_s(t->size, ns);
	drop_cache(fx->tp_fd);
	gc_pattern_fill_inv(p, t->size, 0, seed);
	ns = timed_read(fx->tp_fd, p, t->size);
	t->mbps[TP_BUFFERED_READ][rep] = mb_per_s(t->size, ns);
	expect_pattern("buffered read back", p, t->size, 0, seed, false);

	gc_pattern_fill(p, t->size, 0, ~seed);
	ns = timed_write(fx->tp_dfd, p, t->size);
	t->mbps[TP_DIRECT_WRITE][rep] = mb_per_s(t->size, ns);
	gc_pattern_fill_inv(p, t->size, 0, ~seed);
	ns = timed_read(fx->tp_dfd, p, t->size);
	t->mbps[TP_DIRECT_READ][rep] = mb_per_s(t->size, ns);
	expect_pattern("O_DIRECT read back", p, t->size, 0, ~seed, false);
}

static void tp_size(struct io_fx *fx, size_t size, size_t reps)
{
	struct tp_run t = { .fx = fx, .size = size, .reps = reps };
	char name[64];

	for (size_t rep = 0; rep < reps; rep++)
		tp_rep(&t, rep);
	for (size_t k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "%s-%zuMiB", tp_names[k], size / MiB);
		gc_metric(name, "MB/s", GC_HIGHER_IS_BETTER, t.mbps[k], reps);
	}
}

/* MB = 10^6 bytes. Data is verified after every read; speeds are only recorded. */
static void test_throughput(void *data)
{
	struct io_fx *fx = data;

	require_direct(fx);
	gc_require_f(fx->align.mem_align <= fx->buf.align && MiB % fx->align.offset_align == 0,
		     "O_DIRECT in %s needs alignment %u/%u, beyond the 1 MiB multiples used here",
		     fx->dir, fx->align.mem_align, fx->align.offset_align);
	tp_size(fx, 1 * MiB, 5);
	tp_size(fx, 16 * MiB, 5);
	tp_size(fx, TP_MAX, 3);
	gc_assert_syscall(ftruncate(fx->tp_fd, 0));
}

/* ------------------------------------------------------------- cleanup */

static nlink_t fd_nlink(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? st.st_nlink : (nlink_t)-1;
}

/*
 * A second fixture instance: while alive its files are open but have no name
 * left in the scratch directory; once destroyed, nothing of it remains.
 */
static void test_scratch_cleanup(void *data)
{
	struct io_fx *fx = io_fx_create(1);
	char dir[PATH_MAX], prefix[64];
	nlink_t links = fd_nlink(fx->rd_fd) + fd_nlink(fx->wr_fd) + fd_nlink(fx->tp_fd);
	size_t alive;

	(void)data;
	snprintf(dir, sizeof(dir), "%s", fx->dir);
	fx_prefix(1, prefix, sizeof(prefix));
	alive = count_prefixed(dir, prefix);
	io_fx_destroy(fx);
	gc_assert_eq_uint(alive, 0);
	gc_assert_eq_uint(links, 0);
	gc_assert_eq_uint(count_prefixed(dir, prefix), 0);
}

static const struct gc_subtest subtests[] = {
	{ "buffered-read", test_buffered_read, "buffered pread of every size x offset" },
	{ "buffered-write", test_buffered_write, "buffered pwrite of every size x offset" },
	{ "direct-read", test_direct_read, "O_DIRECT pread: aligned exact, misaligned EINVAL" },
	{ "direct-write", test_direct_write, "O_DIRECT pwrite: aligned exact, misaligned EINVAL" },
	{ "throughput", test_throughput, "MB/s of buffered vs O_DIRECT at 1, 16, 256 MiB" },
	{ "scratch-cleanup", test_scratch_cleanup, "the fixture leaves no scratch file behind" },
	{ 0 }
};

GC_MAIN(.name = "host_io", .description = "host file I/O reference path",
	.subtests = subtests, .fixture = &fixture, .placement = GC_PLACE_HOST)
