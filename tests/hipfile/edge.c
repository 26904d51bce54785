// SPDX-License-Identifier: MIT
/*
 * hipfile_io: errors and edges, one dynamic subtest per entry point. Each
 * says which document sentence it checks (the documents are listed at the
 * top of io.c); where the documents are silent it records what the
 * entry point did and asserts only that nothing was corrupted: the device
 * target and its guards, and the file around the target, unchanged on error.
 * UNVERIFIED ON HARDWARE.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hf_io.h"

#define E_SIZE (64 * KIB) /* the edge subtests' transfer */
#define E_FOFF 4096       /* ... and its file offset */

static char *target(const struct hf_env *e)
{
	return (char *)e->dev + GUARD;
}

static const char *errno_str(int64_t n)
{
	const char *s = n < 0 ? strerrorname_np((int)-n) : NULL;

	return s ? s : "no error";
}

/* A read of size at foff into data (poisoned first); returns res.n, desc[] says what happened. */
static int64_t edge_read(struct hf_env *e, enum gc_hf_entry x, int fd, gc_hipfile_handle fh,
			 char *data, uint64_t size, int64_t foff, struct gc_hf_res *res,
			 char *desc, size_t len)
{
	struct gc_hf_req r = hf_req_dev(e, x, false, fd, fh, data, size, foff);

	hf_poison(e, data, size, (uint64_t)foff, RD_SEED);
	return hf_io(e, &r, res, desc, len);
}

/*
 * A write of E_SIZE at foff from the target through (fd, fh) to the
 * fixture's write file, whose first MiB is restored first; returns res.n.
 */
static int64_t edge_write(struct hf_env *e, enum gc_hf_entry x, int fd, gc_hipfile_handle fh,
			  int64_t foff, struct gc_hf_res *res, char *desc, size_t len)
{
	struct gc_hf_req r = hf_req_dev(e, x, true, fd, fh, target(e), E_SIZE, foff);

	hf_file_restore(e, e->wr_bfd, 0, MiB, WR_OLD);
	hf_source(e, target(e), E_SIZE, (uint64_t)foff);
	return hf_io(e, &r, res, desc, len);
}

/* After a refused write at foff: the source and the write file's first MiB unchanged. */
static void expect_unwritten(struct hf_env *e, int64_t foff, const char *what)
{
	hf_expect_source(e, what, target(e), E_SIZE, (uint64_t)foff);
	hf_file_expect(&e->wr, e->wr_bfd, 0, MiB, WR_OLD, what);
}

/* --------------------------------------------------------------- size 0 */

static const char *zero_note(enum gc_hf_entry x)
{
	switch (x) {
	case GC_HF_HIPFILE:
		return "hipfile.h says nothing for size 0; the fastpath's documented rules "
		       "accept it (0 is a multiple of every alignment)";
	case GC_HF_HIP_AMD_FILE:
		return "layer notes: the HIP runtime returns hipSuccess for size 0 without doing "
		       "anything";
	default:
		return "layer notes: HSA returns HSA_STATUS_ERROR_INVALID_ARGUMENT for size 0";
	}
}

static void zero_one(struct hf_env *e, enum gc_hf_entry x, bool write, bool registered)
{
	int fd = write ? e->wr.fd : e->rd.fd;
	gc_hipfile_handle fh = hf_handle_for(e, x, fd);
	struct gc_hf_req r = hf_req_dev(e, x, write, fd, fh, target(e), 0, E_FOFF);
	struct gc_hf_res res;
	char desc[768];

	if (write) {
		hf_file_restore(e, e->wr_bfd, 0, MiB, WR_OLD);
		hf_source(e, target(e), 0, E_FOFF);
	} else {
		hf_poison(e, target(e), 0, E_FOFF, RD_SEED);
	}
	if (registered)
		hf_buf_register_ok(e, e->dev, DEV_LEN);
	hf_io(e, &r, &res, desc, sizeof(desc));
	if (registered)
		hf_buf_deregister_ok(e, e->dev);
	gc_info("%s%s: %s; documented: %s", gc_hf_entry_symbol(x, write),
		registered ? " (registered buffer)" : "", desc, zero_note(x));
	hf_judge(HF_ZERO, &res, 0, desc);
	gc_assert_f(res.copied == GC_HF_UNTOUCHED64 || res.copied == 0,
		    "size 0 reported %llu bytes copied", (unsigned long long)res.copied);
	if (write) {
		hf_expect_source(e, "size 0", target(e), 0, E_FOFF);
		hf_file_expect(&e->wr, e->wr_bfd, 0, MiB, WR_OLD, "size 0");
	} else {
		hf_expect_read(e, "size 0", target(e), 0, 0, E_FOFF, RD_SEED);
	}
}

static void zero_entry(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	zero_one(e, x, write, false);
}

static void zero_registered(void *arg)
{
	hf_require(arg, GC_HF_HIPFILE);
	hf_release_all(arg);
	zero_one(arg, GC_HF_HIPFILE, false, true);
	hf_release_all(arg);
}

static void zero_buf_register(void *arg)
{
	struct hf_env *e = arg;
	gc_hipfile_err r;
	char b[256];

	hf_require(e, GC_HF_HIPFILE);
	hf_release_all(e);
	hf_driver_ensure(e);
	r = e->h.hf.buf_register(e->dev, 0, 0);
	gc_info("hipFileBufRegister(length 0) = %s", gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	if (r.err == GC_HIPFILE_SUCCESS) {
		r = e->h.hf.buf_deregister(e->dev);
		gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "a 0-byte registration that succeeded "
			    "cannot be deregistered: %s",
			    gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	}
}

static void zero_read_async(void *arg)
{
	hf_zero_async(arg, false);
}

static void zero_write_async(void *arg)
{
	hf_zero_async(arg, true);
}

/* After the entries' own: hipFile's registered buffer, registration and stream-ordered calls. */
GC_FASTPATH_NAMED(zero_cases) = {
	{ "hipFileRead-registered", zero_registered },
	{ "hipFileBufRegister", zero_buf_register },
	{ "hipFileReadAsync", zero_read_async },
	{ "hipFileWriteAsync", zero_write_async },
};

/*
 * size-zero: a fastpath has been seen accepting size 0 where the layers
 * below it reject it. Each entry point's answer is recorded next to
 * what its documents say (zero_note), and checked: it transfers nothing,
 * reports no bytes copied and changes nothing. The reference, O_DIRECT
 * pread / pwrite, returns 0 (host_io).
 */
void test_size_zero(void *data)
{
	struct hf_env *e = data;

	hf_each_entry(e, false, true, zero_entry);
	hf_each_entry(e, true, true, zero_entry);
	gc_variants(zero_cases, e);
	hf_release_all(e);
}

/* ------------------------------------------------------------------ EOF */

/* True when the len device bytes at p are all zero. */
static bool dev_zero(struct hf_env *e, const char *p, uint64_t len)
{
	const char *h = e->stage.ptr;

	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < STAGE_LEN ? (size_t)(len - done) : STAGE_LEN;

		gc_hip_assert(e->h.hip, e->h.hip->hipMemcpy(e->stage.ptr, p + done, n,
							    hipMemcpyDeviceToHost));
		for (size_t i = 0; i < n; i++)
			if (h[i])
				return false;
		done += n;
	}
	return true;
}

/*
 * Linux O_DIRECT reads fill the part of a request past EOF with zeros: seen
 * here (ext4, Linux 6.18), an 8 KiB O_DIRECT pread at 64 KiB of a file of
 * 64 KiB + 100 bytes returns 100 and zeroes the buffer's other 8092 bytes,
 * and nothing outside the request. A GPU-direct read goes through the same
 * direct I/O, so past the count the target may be untouched or all zero;
 * outside the request (the guards) nothing may change; after an error,
 * nothing at all.
 */
static void expect_eof_target(struct hf_env *e, const char *what, uint64_t size, uint64_t done,
			      int64_t foff, bool failed)
{
	char *d = target(e);
	hipError_t he = hipSuccess;
	struct gc_mismatch mm;
	char w[192], m[192];
	int r;

	if (failed || done == size) {
		hf_expect_read(e, what, d, size, done, (uint64_t)foff, RD_SEED);
		return;
	}
	snprintf(w, sizeof(w), "%s: guard before the target", what);
	hf_dev_expect(e, w, d - GUARD, GUARD, (uint64_t)foff - GUARD, RD_SEED, true);
	snprintf(w, sizeof(w), "%s: the %llu bytes read", what, (unsigned long long)done);
	hf_dev_expect(e, w, d, done, (uint64_t)foff, RD_SEED, false);
	snprintf(w, sizeof(w), "%s: guard after the request", what);
	hf_dev_expect(e, w, d + size, GUARD, (uint64_t)foff + size, RD_SEED, true);
	r = gc_hip_check_pattern(&e->h, d + done, size - done, (uint64_t)foff + done, RD_SEED, true,
				 e->stage.ptr, STAGE_LEN, &mm, &he);
	if (r < 0)
		gc_hip_assert(e->h.hip, he);
	gc_assert_f(r == 0 || dev_zero(e, d + done, size - done), "%s: the %llu target bytes past "
		    "the count are neither untouched nor zero (as O_DIRECT leaves them): %s", what,
		    (unsigned long long)(size - done), gc_mismatch_str(&mm, m, sizeof(m)));
	gc_info("%s: the %llu target bytes past the count are %s", what,
		(unsigned long long)(size - done),
		r == 0 ? "untouched" : "zeroed (as O_DIRECT does)");
}

/*
 * One read expected to stop at EOF with avail bytes left. hipFile: exactly
 * avail (hipfile.h, hipFileRead: "@return if >= 0: Number of bytes read [...]"
 * [src ROCm/rocm-systems projects/hipfile/include/hipfile.h @ 50391dc3c770];
 * its fallback is POSIX pread). The GPU-direct-only entries: avail, or an
 * error (layer notes, KFD: "[...] -EIO on short reads [...]" [src ROCm/hipFile
 * src/amd_detail/backend/fastpath.cpp @ e875da7de04c]). The bytes past the
 * count: expect_eof_target().
 */
static void eof_read(struct hf_env *e, enum gc_hf_entry x, int fd, gc_hipfile_handle fh,
		     uint64_t size, int64_t foff, uint64_t avail, const char *what)
{
	struct gc_hf_res res;
	char desc[768];
	uint64_t done;

	edge_read(e, x, fd, fh, target(e), size, foff, &res, desc, sizeof(desc));
	gc_info("%s: %s", what, desc);
	if (x == GC_HF_HIPFILE)
		gc_assert_f(res.n == (int64_t)avail, "%s: want %llu bytes: %s", what,
			    (unsigned long long)avail, desc);
	else
		gc_assert_f(res.n == (int64_t)avail || res.n < 0, "%s: want %llu bytes or an "
			    "error: %s", what, (unsigned long long)avail, desc);
	done = res.n > 0 ? (uint64_t)res.n : 0;
	expect_eof_target(e, what, size, done, foff, res.n < 0);
}

static void across_eof(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	struct gc_fp_file *f = hf_file(e, "hipfile-eof", 64 * KIB + 100, RD_SEED, O_RDONLY);
	gc_hipfile_handle fh = hf_handle_for(e, x, f->fd);

	(void)write;
	eof_read(e, x, f->fd, fh, 8 * KIB, 64 * KIB, 100, "8 KiB at 64 KiB, 100 bytes to EOF");
	if (x == GC_HF_HIPFILE) /* misaligned: the fallback's */
		eof_read(e, x, f->fd, fh, 4096, 64 * KIB - 50, 150,
			 "4 KiB at 64 KiB - 50, 150 bytes to EOF");
	hf_release_all(e);
}

/*
 * read-across-eof: a read across EOF returns the short count and touches
 * nothing outside the request; inside it, past the count, only the zeros
 * O_DIRECT itself writes there are accepted.
 */
void test_read_across_eof(void *data)
{
	hf_each_entry(data, false, false, across_eof);
}

/*
 * At or past EOF: hipFile returns 0 (pread's answer, which its fallback
 * gives); the GPU-direct-only entries 0 or an error (layer notes, KFD: "[...]
 * -EIO on short reads [...]" [src ROCm/hipFile
 * src/amd_detail/backend/fastpath.cpp @ e875da7de04c]). Nothing changes either
 * way.
 */
static void at_eof(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	struct gc_fp_file *f = hf_file(e, "hipfile-eof0", 64 * KIB, RD_SEED, O_RDONLY);
	gc_hipfile_handle fh = hf_handle_for(e, x, f->fd);

	(void)write;
	eof_read(e, x, f->fd, fh, 4096, 64 * KIB, 0, "4 KiB at EOF (64 KiB)");
	eof_read(e, x, f->fd, fh, 4096, MiB, 0, "4 KiB at 1 MiB, past EOF (64 KiB)");
	hf_release_all(e);
}

/* read-at-eof: a read at or past EOF returns 0 and changes nothing. */
void test_read_at_eof(void *data)
{
	hf_each_entry(data, false, false, at_eof);
}

/* ------------------------------------------------------ negative offset */

static void negative_buffer_offset(struct hf_env *e, gc_hipfile_handle fh)
{
	char *data = target(e);
	struct gc_hf_req r = hf_req(GC_HF_HIPFILE, false, -1, fh, data + PAGE, -(int64_t)PAGE,
				    PAGE, E_FOFF);
	struct gc_hf_res res;
	char desc[768];

	/* base + offset is valid device memory: only the sign is wrong. */
	hf_poison(e, data, 2 * PAGE, E_FOFF, RD_SEED);
	hf_io(e, &r, &res, desc, sizeof(desc));
	gc_info("buffer offset -4096: %s", desc);
	gc_assert_f(res.n < 0, "a negative buffer offset was accepted: %s", desc);
	hf_expect_read(e, "negative buffer offset", data, 2 * PAGE, 0, E_FOFF, RD_SEED);
}

/*
 * Negative offsets. The fastpath takes none: its score() requires
 * `0 <= file_offset` and `0 <= buffer_offset` [src ROCm/hipFile
 * src/amd_detail/backend/fastpath.cpp @ e875da7de04c]; hipFile's fallback
 * inherits pread(2) / pwrite(2), which fail with EINVAL where lseek(2) would
 * make the offset negative. hipfile.h documents nothing for it: every entry
 * must fail and change nothing; the errno is recorded.
 */
static void negative(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	int fd = write ? e->wr.fd : e->rd.fd;
	gc_hipfile_handle fh = hf_handle_for(e, x, fd);
	struct gc_hf_res res;
	char desc[768];

	if (write)
		edge_write(e, x, fd, fh, -(int64_t)PAGE, &res, desc, sizeof(desc));
	else
		edge_read(e, x, fd, fh, target(e), E_SIZE, -(int64_t)PAGE, &res, desc,
			  sizeof(desc));
	gc_info("file offset -4096: %s", desc);
	gc_assert_f(res.n < 0, "a negative file offset was accepted: %s", desc);
	if (write)
		expect_unwritten(e, -(int64_t)PAGE, "negative file offset");
	else
		hf_expect_read(e, "negative file offset", target(e), E_SIZE, 0,
			       (uint64_t)-(int64_t)PAGE, RD_SEED);
	if (x == GC_HF_HIPFILE && !write)
		negative_buffer_offset(e, fh);
	hf_release_all(e);
}

/* negative-offset: per entry point and direction (hipFileRead, hipFileWrite...). */
void test_negative_offset(void *data)
{
	hf_each_entry(data, false, true, negative);
	hf_each_entry(data, true, true, negative);
}

/* -------------------------------------------------------- write-rdonly */

/*
 * pwrite(2) fails with any error of write(2) or lseek(2) [src
 * mkerrisk/man-pages man2/pread.2 @ 091fbf1fef48], among them "EBADF fd is not
 * a valid file descriptor or is not open for writing." [src mkerrisk/man-pages
 * man2/write.2 @ 091fbf1fef48]; layer notes (KFD): the file is looked up from
 * the descriptor. A write through an O_RDONLY descriptor fails (EBADF
 * expected, another errno recorded) and the file is unchanged. hipFile may
 * refuse the registration itself (hipfile.h lists hipFileInvalidFileOpenFlag),
 * which counts as the refusal.
 */
static void rdonly(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	int fd = hf_reopen(e, e->wr.fd, O_RDONLY | O_DIRECT);
	gc_hipfile_handle fh = NULL;
	struct gc_hf_res res;
	gc_hipfile_err re;
	char desc[768];

	(void)write;
	if (x == GC_HF_HIPFILE) {
		hf_driver_ensure(e);
		re = hf_register(e, fd, &fh);
		if (re.err != GC_HIPFILE_SUCCESS) {
			gc_info("hipFileHandleRegister(O_RDONLY fd) refused it: %s",
				gc_hipfile_strerror(&e->h, re, desc, sizeof(desc)));
			expect_unwritten(e, E_FOFF, "refused O_RDONLY registration");
			return;
		}
	}
	edge_write(e, x, fd, fh, E_FOFF, &res, desc, sizeof(desc));
	gc_info("write through O_RDONLY: %s", desc);
	gc_assert_f(res.n < 0, "a write through an O_RDONLY descriptor succeeded: %s", desc);
	if (res.n != -EBADF)
		gc_info("refused with %s, not EBADF", errno_str(res.n));
	expect_unwritten(e, E_FOFF, "write through O_RDONLY");
	hf_release_all(e);
}

/* write-rdonly: a write through an O_RDONLY descriptor fails, the file unchanged. */
void test_write_rdonly(void *data)
{
	hf_each_entry(data, true, false, rdonly);
}

/* ------------------------------------------------------------ closed fd */

static void expect_closed(int fd)
{
	errno = 0;
	gc_assert_f(fcntl(fd, F_GETFD) == -1 && errno == EBADF,
		    "fd %d was closed but is open again (reused by another thread): the test "
		    "cannot tell which file it would reach", fd);
}

/*
 * The raw entries take the descriptor itself: a closed one must fail (layer
 * notes, KFD: "[...] -EBADF unable to lookup the file object [...]" [src
 * ROCm/hipFile src/amd_detail/backend/fastpath.cpp @ e875da7de04c]) and change
 * nothing. hipFile keeps descriptors of its own for a registered file
 * (io-backends: "The file must have been opened with `O_DIRECT`. hipFile
 * internally maintains both a buffered and an unbuffered file descriptor for
 * each registered file and uses the unbuffered descriptor for fastpath IO."
 * [src ROCm/rocm-systems projects/hipfile/docs/conceptual/io-backends.rst @
 * 5b50b9d9ea8b]): closing the caller's may leave it able to serve; hipfile.h
 * says nothing. Either an error that changes nothing or the exact bytes; which
 * is recorded.
 */
static void closed(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	int fd = hf_reopen(e, e->rd.fd, O_RDONLY | O_DIRECT);
	gc_hipfile_handle fh = hf_handle_for(e, x, fd);
	struct gc_hf_res res;
	char desc[768];

	(void)write;
	hf_close(e, fd);
	expect_closed(fd);
	edge_read(e, x, fd, fh, target(e), E_SIZE, E_FOFF, &res, desc, sizeof(desc));
	gc_info("read through closed fd %d: %s", fd, desc);
	if (x != GC_HF_HIPFILE) {
		gc_assert_f(res.n < 0, "a read through a closed descriptor succeeded: %s", desc);
		if (res.n != -EBADF)
			gc_info("refused with %s, not the documented EBADF", errno_str(res.n));
	} else {
		gc_assert_f(res.n < 0 || res.n == E_SIZE, "want an error or all bytes: %s", desc);
	}
	hf_expect_read(e, "read through a closed descriptor", target(e), E_SIZE,
		       res.n > 0 ? (uint64_t)res.n : 0, E_FOFF, RD_SEED);
	hf_release_all(e); /* deregisters the handle of the closed fd: must not crash */
}

/* closed-fd: I/O through a descriptor closed before use. */
void test_closed_fd(void *data)
{
	hf_each_entry(data, false, false, closed);
}

/* ------------------------------------------------- deregistered handle */

static void stale_buffer(struct hf_env *e)
{
	gc_hipfile_err r;
	char b[256];

	hf_buf_register_ok(e, e->dev, DEV_LEN);
	hf_buf_deregister_ok(e, e->dev);
	r = e->h.hf.buf_deregister(e->dev);
	gc_info("hipFileBufDeregister of a buffer no longer registered: %s",
		gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	gc_assert_f(r.err != GC_HIPFILE_SUCCESS, "a second hipFileBufDeregister succeeded");
}

/*
 * hipfile.h (hipFileHandleDeregister): "@brief Deregisters a file from GPU IO
 * [...]"; a second deregistration of a buffer: `hipFileMemoryNotRegistered =
 * HIPFILE_BASE_ERR + 24, //!< Device pointer is not registered` [src
 * ROCm/rocm-systems projects/hipfile/include/hipfile.h @ 50391dc3c770].
 * driver-lifecycle, of handles and buffers no longer valid: "Attempting to use
 * them results in errors such as `hipFileHandleNotRegistered` or
 * `hipFileMemoryNotRegistered`." [src ROCm/rocm-systems
 * projects/hipfile/docs/reference/driver-lifecycle.rst @ 996998c6d468]. A read
 * and a write on a deregistered handle fail and change nothing; a second
 * deregistration of a buffer fails. The exact codes are recorded.
 */
void test_deregistered_handle(void *data)
{
	struct hf_env *e = data;
	gc_hipfile_handle rfh, wfh;
	struct gc_hf_res res;
	char desc[768];

	hf_require(e, GC_HF_HIPFILE);
	rfh = hf_handle_for(e, GC_HF_HIPFILE, hf_reopen(e, e->rd.fd, O_RDONLY | O_DIRECT));
	wfh = hf_handle_for(e, GC_HF_HIPFILE, hf_reopen(e, e->wr.fd, O_RDWR | O_DIRECT));
	hf_deregister(e, rfh);
	hf_deregister(e, wfh);
	edge_read(e, GC_HF_HIPFILE, -1, rfh, target(e), E_SIZE, E_FOFF, &res, desc, sizeof(desc));
	gc_info("read on a deregistered handle: %s", desc);
	gc_assert_f(res.n < 0, "a read on a deregistered handle succeeded: %s", desc);
	hf_expect_read(e, "read on a deregistered handle", target(e), E_SIZE, 0, E_FOFF, RD_SEED);
	edge_write(e, GC_HF_HIPFILE, -1, wfh, E_FOFF, &res, desc, sizeof(desc));
	gc_info("write on a deregistered handle: %s", desc);
	gc_assert_f(res.n < 0, "a write on a deregistered handle succeeded: %s", desc);
	expect_unwritten(e, E_FOFF, "write on a deregistered handle");
	stale_buffer(e);
	hf_release_all(e);
}

/* --------------------------------------------------------- host pointer */

/* Host bytes [p, p + len) hold the inverse pattern keyed from key, else fail. */
static void host_expect(const char *what, const char *p, uint64_t len, uint64_t key,
			uint64_t seed, bool inv)
{
	char msg[192];
	int64_t bad = gc_pattern_diff(p, len, key, seed, inv, msg, sizeof(msg));

	gc_assert_f(bad < 0, "%s: host %s", what, msg);
}

/*
 * The call on host memory (kind: `pageable` / `pinned`), recorded, and
 * judged by host-pointer's rule below: the GPU-direct-only entries refuse,
 * hipFile refuses or moves every byte.
 */
static void host_call(struct hf_env *e, const struct gc_hf_req *r, struct gc_hf_res *res,
		      const char *kind)
{
	const char *how = r->write ? "write from" : "read into";
	char desc[768];

	hf_io(e, r, res, desc, sizeof(desc));
	gc_info("%s %s host memory: %s", how, kind, desc);
	if (r->entry != GC_HF_HIPFILE)
		gc_assert_f(res->n < 0, "a %s %s host memory succeeded: %s", how, kind, desc);
	else
		gc_assert_f(res->n < 0 || res->n == E_SIZE, "want an error or all bytes: %s", desc);
}

static void host_read(struct hf_env *e, enum gc_hf_entry x, gc_hipfile_handle fh, char *host,
		      const char *kind)
{
	struct gc_hf_req r = hf_req(x, false, e->rd.fd, fh, host + GUARD, 0, E_SIZE, E_FOFF);
	struct gc_hf_res res;

	gc_pattern_fill_inv(host, E_SIZE + 2 * GUARD, E_FOFF - GUARD, RD_SEED);
	host_call(e, &r, &res, kind);
	host_expect("host guard before", host, GUARD, E_FOFF - GUARD, RD_SEED, true);
	host_expect("host target", host + GUARD, E_SIZE, E_FOFF, RD_SEED, res.n < 0);
	host_expect("host guard after", host + GUARD + E_SIZE, GUARD, E_FOFF + E_SIZE, RD_SEED,
		    true);
}

static void host_write(struct hf_env *e, enum gc_hf_entry x, gc_hipfile_handle fh, char *host,
		       const char *kind)
{
	struct gc_hf_req r = hf_req(x, true, e->wr.fd, fh, host, 0, E_SIZE, E_FOFF);
	struct gc_hf_res res;

	hf_file_restore(e, e->wr_bfd, 0, MiB, WR_OLD);
	gc_pattern_fill(host, E_SIZE, E_FOFF, WR_NEW);
	host_call(e, &r, &res, kind);
	hf_expect_written(e, &e->wr, e->wr_bfd, 0, MiB, E_FOFF, res.n < 0 ? 0 : E_SIZE,
			  "write from host memory");
}

static void host_register(struct hf_env *e, const void *host, const char *kind)
{
	gc_hipfile_err r = e->h.hf.buf_register(host, E_SIZE + 2 * GUARD, 0);
	char b[256];

	gc_info("hipFileBufRegister(%s host memory) = %s", kind,
		gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	if (r.err == GC_HIPFILE_SUCCESS)
		(void)e->h.hf.buf_deregister(host);
}

/*
 * io-backends: "The destination or source buffer must be `hipMemoryTypeDevice`
 * memory. Only device-resident buffers can participate in the direct DMA
 * path." [src ROCm/rocm-systems
 * projects/hipfile/docs/conceptual/io-backends.rst @ 5b50b9d9ea8b]; layer
 * notes (KFD): "[...] -EINVAL if the buffer's domain is not
 * AMDGPU_GEM_DOMAIN_VRAM [...]" [src ROCm/hipFile
 * src/amd_detail/backend/fastpath.cpp @ e875da7de04c]. The GPU-direct-only
 * entries must refuse host memory (pageable and pinned) and change nothing.
 * hipFile lists hipFileHipMemoryTypeInvalid for it, but of its fallback
 * io-backends says: "Because it does not require `O_DIRECT`, specific
 * filesystem types, or aligned offsets, it can service any IO request that the
 * fastpath cannot.": an error that changes nothing, or the exact bytes; which
 * one is recorded, and so is hipFileBufRegister's answer.
 */
static void host_pointer(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	gc_hipfile_handle fh = hf_handle_for(e, x, write ? e->wr.fd : e->rd.fd);
	char *pinned = hf_pinned_alloc(e, E_SIZE + 2 * GUARD);
	struct gc_io_buf pageable;
	char *kinds[2];

	gc_assert_ok(gc_io_buf_alloc(&pageable, E_SIZE + 2 * GUARD, PAGE));
	kinds[0] = pageable.ptr, kinds[1] = pinned;
	for (int k = 0; k < 2; k++) {
		const char *kind = k ? "pinned" : "pageable";

		if (write)
			host_write(e, x, fh, kinds[k], kind);
		else
			host_read(e, x, fh, kinds[k], kind);
		if (x == GC_HF_HIPFILE && !write)
			host_register(e, kinds[k], kind);
	}
	gc_io_buf_free(&pageable);
	hf_release_all(e);
}

/* host-pointer: per entry point and direction. */
void test_host_pointer(void *data)
{
	hf_each_entry(data, false, true, host_pointer);
	hf_each_entry(data, true, true, host_pointer);
}

/* ---------------------------------------------------------- non-O_DIRECT */

static bool env_false(const char *v)
{
	return v && (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no") ||
		     !strcasecmp(v, "off"));
}

static void buffered_read(struct hf_env *e, enum gc_hf_entry x, int fd, gc_hipfile_handle fh,
			  uint64_t size, int64_t foff)
{
	struct gc_hf_res res;
	char desc[768];

	edge_read(e, x, fd, fh, target(e), size, foff, &res, desc, sizeof(desc));
	gc_info("buffered fd, %llu bytes at %lld: %s", (unsigned long long)size, (long long)foff,
		desc);
	if (x == GC_HF_HIPFILE)
		gc_assert_f(res.n == (int64_t)size, "want all %llu bytes: %s",
			    (unsigned long long)size, desc);
	else
		gc_assert_f(res.n < 0 || res.n == (int64_t)size, "want an error or all bytes: %s",
			    desc);
	hf_expect_read(e, "read through a buffered descriptor", target(e), size,
		       res.n > 0 ? (uint64_t)res.n : 0, (uint64_t)foff, RD_SEED);
}

static void buffered_write(struct hf_env *e, enum gc_hf_entry x, int fd, gc_hipfile_handle fh)
{
	struct gc_hf_res res;
	char desc[768];

	edge_write(e, x, fd, fh, E_FOFF, &res, desc, sizeof(desc));
	gc_info("buffered fd, write of %llu bytes at %d: %s", (unsigned long long)E_SIZE, E_FOFF,
		desc);
	if (x == GC_HF_HIPFILE)
		gc_assert_f(res.n == E_SIZE, "want all %llu bytes: %s", (unsigned long long)E_SIZE,
			    desc);
	else
		gc_assert_f(res.n < 0 || res.n == E_SIZE, "want an error or all bytes: %s", desc);
	hf_expect_source(e, "write through a buffered descriptor", target(e), E_SIZE, E_FOFF);
	hf_expect_written(e, &e->wr, e->wr_bfd, 0, MiB, E_FOFF, res.n < 0 ? 0 : E_SIZE,
			  "write through a buffered descriptor");
}

/*
 * io-backends, of the fallback: "Because it does not require `O_DIRECT`,
 * specific filesystem types, or aligned offsets, it can service any IO request
 * that the fastpath cannot." [src ROCm/rocm-systems
 * projects/hipfile/docs/conceptual/io-backends.rst @ 5b50b9d9ea8b]; and
 * hipFile opens an O_DIRECT twin of a buffered descriptor itself: through a
 * descriptor without O_DIRECT, hipFile moves the exact bytes, aligned or not
 * (unless HIPFILE_ALLOW_COMPAT_MODE turns the fallback off: then skipped). For
 * the GPU-direct-only entries the documents say nothing: exact bytes, or an
 * error that changes nothing; which one is recorded.
 */
static void non_odirect(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	const char *compat = getenv("HIPFILE_ALLOW_COMPAT_MODE");
	int fd = hf_reopen(e, write ? e->wr.fd : e->rd.fd, write ? O_RDWR : O_RDONLY);
	gc_hipfile_handle fh;

	if (x == GC_HF_HIPFILE && env_false(compat))
		gc_skip("HIPFILE_ALLOW_COMPAT_MODE=%s: hipFile's fallback is off, so I/O without "
			"O_DIRECT is not promised", compat);
	fh = hf_handle_for(e, x, fd);
	if (write) {
		buffered_write(e, x, fd, fh);
	} else {
		buffered_read(e, x, fd, fh, E_SIZE, E_FOFF);
		if (x == GC_HF_HIPFILE)
			buffered_read(e, x, fd, fh, 4097, 513);
	}
	hf_release_all(e);
}

/* non-odirect: per entry point and direction. */
void test_non_odirect(void *data)
{
	hf_each_entry(data, false, true, non_odirect);
	hf_each_entry(data, true, true, non_odirect);
}

/* -------------------------------------------------------- unlinked file */

static void unlinked(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	struct gc_fp_file *f = calloc(1, sizeof(*f));
	gc_hipfile_handle fh;
	struct gc_hf_res res;
	char why[512], desc[768];
	int r;

	(void)write;
	gc_assert_f(f != NULL, "out of memory");
	r = gc_fp_file_create(&e->s, "hipfile-unl", MiB, RD_SEED, O_RDONLY, true, f, why,
			      sizeof(why));
	if (r)
		free(f);
	gc_assert_f(r == 0, "%s", why);
	hf_hold(e, HF_FILE, f);
	fh = hf_handle_for(e, x, f->fd);
	edge_read(e, x, f->fd, fh, target(e), E_SIZE, E_FOFF, &res, desc, sizeof(desc));
	gc_assert_f(res.n == E_SIZE, "read of a named file: %s", desc);
	gc_assert_syscall(unlink(f->path));
	f->linked = false;
	edge_read(e, x, f->fd, fh, target(e), E_SIZE, E_FOFF, &res, desc, sizeof(desc));
	gc_info("after unlink(%s): %s", f->path, desc);
	gc_assert_f(res.n < 0 || res.n == E_SIZE, "want an error or all bytes: %s", desc);
	hf_expect_read(e, "read after unlink", target(e), E_SIZE,
		       res.n > 0 ? (uint64_t)res.n : 0, E_FOFF, RD_SEED);
	hf_release_all(e);
}

/*
 * unlinked-file: an open file keeps its data after unlink(2) ("If the name was
 * the last link to a file but any processes still have the file open, the file
 * will remain in existence until the last file descriptor referring to it is
 * closed." [src mkerrisk/man-pages man2/unlink.2 @ 091fbf1fef48]): a read of a
 * file unlinked after registration gives the same bytes or an error that
 * changes nothing (the AMD documents are silent); which one is recorded. (The
 * fixture's own files are unlinked at creation, so every other subtest already
 * runs on unlinked files.)
 */
void test_unlinked_file(void *data)
{
	hf_each_entry(data, false, false, unlinked);
}
