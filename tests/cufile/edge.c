// SPDX-License-Identifier: MIT
/*
 * cufile_io: errors and edges. cufile.h (cuFileRead / cuFileWrite) documents
 * the return value: "@return size of bytes successfully read [...]"
 * (cuFileWrite: "@return size of bytes successfully written [...]"), "@return
 * -1 on error, in which case errno is set to indicate filesystem errors." and
 * "@return all other errors will return a negative integer value of @ref
 * CUfileOpError enum value." [src denglin-github/cuda11_cudnn8
 * include/cufile.h @ 20c191daf9a2] (a CUDA 11-era copy of NVIDIA's header;
 * its @return lines carry no full stop, and [...] marks where one ends).
 * Every subtest here also checks that an error changed nothing: the device
 * buffer (guards included) and the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cf_io.h"

#define EOF_SIZE (8 * KIB + 100) /* a file whose end is not block-aligned */

struct edge {
	struct cf_env *e;
	struct gc_fp_file f;
	void *fh;
	CUdeviceptr d;
	uint64_t total;
};

static void edge_open(struct edge *x, struct cf_env *e, uint64_t fsize, uint64_t total)
{
	memset(x, 0, sizeof(*x));
	x->e = e;
	cf_env_gpu(e);
	x->fh = cf_file_registered(e, "edge", fsize, SEED_A, O_RDWR, &x->f);
	x->total = total;
	x->d = cf_dev_alloc(e, total);
}

static void edge_close(struct edge *x)
{
	if (x->fh)
		x->e->cf.fn.handle_deregister(x->fh);
	cf_dev_free(x->e, x->d);
	gc_fp_file_destroy(&x->f);
}

/* A read of size at foff into [boff...): returns the count, device checked for done bytes. */
static ssize_t edge_read(struct edge *x, uint64_t size, int64_t foff, int64_t boff,
			 const char *what)
{
	char rb[128], path[96];
	int err_no;
	ssize_t r;

	cf_dev_poison(x->e, x->d, x->total, (uint64_t)foff - (uint64_t)boff, SEED_A);
	r = cf_read(x->e, x->fh, x->d, size, foff, boff, &err_no, path, sizeof(path));
	gc_info("%s: cuFileRead(%llu bytes, file offset %lld, buffer offset %lld) = %s; path %s",
		what, (unsigned long long)size, (long long)foff, (long long)boff,
		cf_ret(r, err_no, rb, sizeof(rb)), path);
	if (boff >= 0 && r >= 0 && (uint64_t)r < size)
		cf_dev_expect_eof(x->e, x->d, x->total, (uint64_t)boff, (uint64_t)r, size,
				  (uint64_t)foff, SEED_A, what);
	else if (boff >= 0)
		cf_dev_expect(x->e, x->d, x->total, (uint64_t)boff, r > 0 ? (uint64_t)r : 0,
			      (uint64_t)foff, SEED_A, what);
	return r;
}

/*
 * read-across-eof: cufile.h (cuFileRead): "@return size of bytes successfully
 * read [...]" [src denglin-github/cuda11_cudnn8 include/cufile.h @
 * 20c191daf9a2] (a CUDA 11-era copy of NVIDIA's header), which we read as
 * POSIX read semantics: the count stops at EOF. Bytes of the request past EOF
 * may be zero-filled, as the reference path (O_DIRECT pread(2)) does on
 * Linux; bytes outside the request are untouched.
 */
void test_read_across_eof(void *data)
{
	struct edge x;
	ssize_t r;

	edge_open(&x, data, EOF_SIZE, 32 * KIB);
	r = edge_read(&x, 16 * KIB, 4096, 0, "aligned read across EOF");
	gc_assert_cmpint(r, ==, EOF_SIZE - 4096);
	r = edge_read(&x, 4097, EOF_SIZE - 292, 1, "unaligned read across EOF");
	gc_assert_cmpint(r, ==, 292);
	edge_close(&x);
}

/*
 * shrinking-file: the file is truncated to 5000 bytes after registration (as
 * another process might): a read of 64 KiB from 0 returns what is left,
 * exact, and follows read-across-eof's rule past it; a read that now starts
 * past the end returns 0. Never stale bytes from before the truncation.
 */
void test_shrinking_file(void *data)
{
	struct edge x;
	ssize_t r;

	edge_open(&x, data, 256 * KIB, 128 * KIB);
	gc_assert_syscall(ftruncate(x.f.fd, 5000));
	r = edge_read(&x, 64 * KIB, 0, 0, "read after the file shrank to 5000 bytes");
	gc_assert_cmpint(r, ==, 5000);
	r = edge_read(&x, 64 * KIB, 64 * KIB, 0, "read at the old middle of the file");
	gc_assert_cmpint(r, ==, 0);
	edge_close(&x);
}

/* read-at-eof: a read at or past EOF transfers nothing and returns 0 (POSIX). */
void test_read_at_eof(void *data)
{
	struct edge x;

	edge_open(&x, data, EOF_SIZE, 16 * KIB);
	gc_assert_cmpint(edge_read(&x, 4096, EOF_SIZE, 0, "read at EOF"), ==, 0);
	gc_assert_cmpint(edge_read(&x, 4096, EOF_SIZE + 4096, 0, "read past EOF"), ==, 0);
	gc_assert_cmpint(edge_read(&x, 8192, 2 * EOF_SIZE, 4096, "read far past EOF"), ==, 0);
	edge_close(&x);
}

/*
 * negative-offset: the suite's rule (file and buffer offsets are
 * non-negative) and pread(2)'s EINVAL: a negative file offset or buffer offset is an error, and the device
 * buffer and the file are unchanged.
 */
void test_negative_offset(void *data)
{
	struct edge x;
	char rb[128];
	int err_no;
	ssize_t r;

	edge_open(&x, data, 64 * KIB, 32 * KIB);
	r = edge_read(&x, 4096, -4096, 0, "read at file offset -4096");
	gc_assert_f(r < 0, "read at a negative file offset returned %zd", r);
	r = edge_read(&x, 4096, -1, 0, "read at file offset -1");
	gc_assert_f(r < 0, "read at file offset -1 returned %zd", r);
	/* File offset 0 lands at buffer byte 8192 - 4096: the poison is keyed for that. */
	cf_dev_poison(x.e, x.d, x.total, 0 - (uint64_t)4096, SEED_A);
	r = x.e->cf.fn.read(x.fh, (void *)(uintptr_t)(x.d + 8192), 4096, 0, -4096);
	err_no = errno;
	gc_info("read to buffer offset -4096 = %s", cf_ret(r, err_no, rb, sizeof(rb)));
	/*
	 * A negative buffer offset from an inner pointer stays inside the
	 * allocation: refused with nothing changed, or the 4096 bytes exactly
	 * at buffer byte 4096.
	 */
	gc_assert_f(r < 0 || r == 4096, "negative buffer offset returned %zd", r);
	cf_dev_expect(x.e, x.d, x.total, 4096, r > 0 ? 4096 : 0, 0, SEED_A,
		      "negative buffer offset");
	cf_dev_fill(x.e, x.d, 0, 4096, 0, SEED_B);
	r = cf_write(x.e, x.fh, x.d, 4096, -4096, 0, &err_no, NULL, 0);
	gc_info("write at file offset -4096 = %s", cf_ret(r, err_no, rb, sizeof(rb)));
	gc_assert_f(r < 0, "write at a negative file offset returned %zd", r);
	cf_file_expect(&x.f, 0, 64 * KIB, SEED_A, "file after a refused write");
	edge_close(&x);
}

/*
 * write-rdonly: write(2) on a descriptor not open for writing is EBADF; the
 * cuFile path must refuse too (at registration or at the write) and leave the
 * file as it was. Which errno it gives is error-convention's business.
 */
void test_write_rdonly(void *data)
{
	struct cf_env *e = data;
	struct gc_fp_file f;
	CUdeviceptr d;
	char rb[128];
	int err_no, reg;
	ssize_t r;
	void *fh;

	cf_env_gpu(e);
	cf_file(e, "ro", 64 * KIB, SEED_A, O_RDONLY, &f);
	d = cf_dev_alloc(e, 64 * KIB);
	cf_dev_fill(e, d, 0, 64 * KIB, 0, SEED_B);
	reg = cf_register(e, f.fd, &fh);
	if (reg != 0) {
		gc_info("cuFileHandleRegister(O_RDONLY) refused: %s (%d)", gc_cufile_err_name(reg),
			reg);
	} else {
		r = cf_write(e, fh, d, 64 * KIB, 0, 0, &err_no, NULL, 0);
		gc_info("cuFileWrite on O_RDONLY = %s", cf_ret(r, err_no, rb, sizeof(rb)));
		e->cf.fn.handle_deregister(fh);
		gc_assert_f(r < 0, "a write through an O_RDONLY descriptor returned %zd", r);
	}
	cf_file_expect(&f, 0, 64 * KIB, SEED_A, "file after a refused write");
	cf_dev_free(e, d);
	gc_fp_file_destroy(&f);
}

/*
 * closed-fd: cufile.h says nothing of a descriptor closed after
 * registration. Either the I/O fails (EBADF, or a cuFile status) with the
 * buffer unchanged, or the library kept its own reference and the bytes are
 * exact: never a partial or wrong transfer.
 */
void test_closed_fd(void *data)
{
	struct edge x;
	ssize_t r;

	edge_open(&x, data, 64 * KIB, 32 * KIB);
	close(x.f.fd);
	r = edge_read(&x, 16 * KIB, 4096, 0, "read after close(fd)");
	x.f.fd = -1;
	gc_assert_f(r < 0 || r == 16 * KIB, "read after close returned %zd", r);
	if (r > 0)
		gc_info("undocumented: observed the read succeed after close(fd): the library "
			"holds its own reference");
	edge_close(&x);
}

/* The child of deregistered-handle: a process of its own, so a crash is contained. */
static void stale_handle_child(void *data)
{
	struct edge x;
	ssize_t r;

	edge_open(&x, data, 64 * KIB, 32 * KIB);
	x.e->cf.fn.handle_deregister(x.fh);
	r = edge_read(&x, 16 * KIB, 0, 0, "read through a deregistered handle");
	x.fh = NULL;
	gc_assert_f(r < 0, "a read through a deregistered handle returned %zd", r);
	edge_close(&x);
	cf_env_gpu_close(x.e);
	exit(0);
}

/*
 * deregistered-handle: a handle used after cuFileHandleDeregister must give
 * an error (cufile.h lists CU_FILE_HANDLE_NOT_REGISTERED among the statuses),
 * never a transfer or a crash. Run in a forked child (CUDA is initialised
 * there, never in this process before the fork).
 */
void test_deregistered_handle(void *data)
{
	cf_env_require_fresh(data);
	gc_expect_child_exit(stale_handle_child, data, 0, 60000);
}

/*
 * host-pointer: cufile.h documents cuFileRead's bufPtr_base as the `base
 * address of buffer in device or host memory`, so a host buffer is legal:
 * the bytes must be exact; a library configured to refuse system memory may
 * return CU_FILE_CUDA_MEMORY_TYPE_INVALID, with the buffer unchanged.
 * [pkg libcufile-dev-13-0 1.15.1.6-1 /usr/local/cuda-13.0/targets/x86_64-linux/include/cufile.h]
 */
void test_host_pointer(void *data)
{
	struct cf_env *e = data;
	struct gc_fp_file f;
	struct gc_io_buf b;
	struct gc_mismatch mm;
	char rb[128], m[200];
	int err_no;
	ssize_t r;
	void *fh;

	cf_env_gpu(e);
	fh = cf_file_registered(e, "host", 256 * KIB, SEED_A, O_RDWR, &f);
	gc_assert_ok(gc_io_buf_alloc(&b, 64 * KIB + GUARD, 4096));
	gc_pattern_fill_inv(b.ptr, b.size, 8192, SEED_A);
	errno = 0;
	r = e->cf.fn.read(fh, b.ptr, 64 * KIB, 8192, 0);
	err_no = errno;
	gc_info("cuFileRead into malloc'd host memory = %s", cf_ret(r, err_no, rb, sizeof(rb)));
	e->cf.fn.handle_deregister(fh);
	gc_assert_f(r == 64 * KIB || r == -GC_CU_FILE_CUDA_MEMORY_TYPE_INVALID,
		    "host buffer read returned %s", rb);
	if (r > 0)
		gc_assert_f(gc_pattern_check(b.ptr, 64 * KIB, 8192, SEED_A, &mm) < 0,
			    "host buffer data: %s", gc_mismatch_str(&mm, m, sizeof(m)));
	gc_assert_f(gc_pattern_check_inv((uint8_t *)b.ptr + (r > 0 ? r : 0),
					 b.size - (size_t)(r > 0 ? r : 0),
					 8192 + (uint64_t)(r > 0 ? r : 0), SEED_A, &mm) < 0,
		    "host buffer past the read: %s", gc_mismatch_str(&mm, m, sizeof(m)));
	gc_io_buf_free(&b);
	gc_fp_file_destroy(&f);
}

/*
 * non-odirect: cufile.h (cuFileHandleRegister): "@return
 * CU_FILE_INVALID_FILE_OPEN_FLAG if file is opened with unsupported modes
 * like no O_DIRECT [...]" [src denglin-github/cuda11_cudnn8 include/cufile.h
 * @ 20c191daf9a2] (a CUDA 11-era copy of NVIDIA's header). Compat mode may
 * accept the descriptor instead: then the fallback must serve the request
 * with the same bytes.
 */
void test_non_odirect(void *data)
{
	struct cf_env *e = data;
	struct gc_fp_file f;
	CUdeviceptr d;
	char proc[64], rb[128];
	int fd, err_no, reg;
	ssize_t r;
	void *fh;

	cf_env_gpu(e);
	cf_file(e, "nod", 256 * KIB, SEED_A, O_RDWR, &f);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f.fd);
	fd = open(proc, O_RDWR | O_CLOEXEC);
	gc_assert_syscall(fd);
	reg = cf_register(e, fd, &fh);
	gc_info("cuFileHandleRegister(no O_DIRECT) = %s (%d)", gc_cufile_err_name(reg), reg);
	if (reg == 0) {
		d = cf_dev_alloc(e, 64 * KIB + GUARD);
		cf_dev_poison(e, d, 64 * KIB + GUARD, 4096, SEED_A);
		r = cf_read(e, fh, d, 64 * KIB, 4096, 0, &err_no, rb, sizeof(rb));
		gc_info("undocumented: observed registration accepted; read = %zd, path %s", r, rb);
		e->cf.fn.handle_deregister(fh);
		gc_assert_cmpint(r, ==, 64 * KIB);
		cf_dev_expect(e, d, 64 * KIB + GUARD, 0, 64 * KIB, 4096, SEED_A, "no O_DIRECT");
		cf_dev_free(e, d);
	} else {
		gc_assert_f(reg == GC_CU_FILE_INVALID_FILE_OPEN_FLAG,
			    "registration refused with %s, cufile.h documents "
			    "CU_FILE_INVALID_FILE_OPEN_FLAG", gc_cufile_err_name(reg));
	}
	close(fd);
	gc_fp_file_destroy(&f);
}

/*
 * unlinked-file: an open, unlinked file is a file like any other to
 * read(2). cufile.h (cuFileHandleRegister) promises a handle for an O_DIRECT
 * regular file; where the library cannot give one, the error must come at
 * registration, named, and no I/O happens. Either outcome is recorded.
 */
void test_unlinked_file(void *data)
{
	struct cf_env *e = data;
	struct gc_fp_file f;
	char why[600], rb[128];
	CUdeviceptr d;
	int reg, err_no;
	ssize_t r;
	void *fh;

	cf_env_gpu(e);
	gc_assert_f(gc_fp_file_create(&e->scratch, "unl", 64 * KIB, SEED_A, O_RDWR, false, &f, why,
				      sizeof(why)) == 0, "%s", why);
	reg = cf_register(e, f.fd, &fh);
	gc_info("cuFileHandleRegister(unlinked file) = %s (%d), errno %s", gc_cufile_err_name(reg),
		reg, strerrorname_np(errno) ?: "?");
	if (reg == 0) {
		d = cf_dev_alloc(e, 64 * KIB + GUARD);
		cf_dev_poison(e, d, 64 * KIB + GUARD, 0, SEED_A);
		r = cf_read(e, fh, d, 64 * KIB, 0, 0, &err_no, NULL, 0);
		e->cf.fn.handle_deregister(fh);
		gc_assert_f(r == 64 * KIB, "read of an unlinked file: %s",
			    cf_ret(r, err_no, rb, sizeof(rb)));
		cf_dev_expect(e, d, 64 * KIB + GUARD, 0, 64 * KIB, 0, SEED_A, "unlinked file");
		cf_dev_free(e, d);
	} else {
		gc_assert_f(reg > GC_CUFILE_BASE_ERR, "registration failed with %d: not a status",
			    reg);
	}
	gc_fp_file_destroy(&f);
}

/* ------------------------------------------------------ error convention */

enum conv_kind { CONV_NEG_OFFSET, CONV_CLOSED_FD, CONV_WRITE_RDONLY };
/* One mistake, and the errno read(2)/write(2) give for it: what `-1 + errno` must carry. */
struct conv_case {
	const char *name;
	enum conv_kind kind;
	int want_errno;
};

GC_VARIANTS(struct conv_case, conv_cases, conv_one) = {
	{ "negative-offset", CONV_NEG_OFFSET, EINVAL },
	{ "closed-fd", CONV_CLOSED_FD, EBADF },
	{ "write-rdonly", CONV_WRITE_RDONLY, EBADF },
};

static void conv_one(void *ctx, const struct conv_case *c)
{
	struct cf_env *e = ctx;
	int flags = c->kind == CONV_WRITE_RDONLY ? O_RDONLY : O_RDWR;
	struct gc_fp_file f;
	CUdeviceptr d;
	char rb[160];
	int err_no;
	ssize_t r;
	void *fh;

	fh = cf_file_registered(e, "conv", 64 * KIB, SEED_A, flags, &f);
	d = cf_dev_alloc(e, 64 * KIB);
	if (c->kind == CONV_CLOSED_FD)
		close(f.fd), f.fd = -1;
	if (c->kind == CONV_WRITE_RDONLY)
		r = cf_write(e, fh, d, 4096, 0, 0, &err_no, NULL, 0);
	else
		r = cf_read(e, fh, d, 4096, c->kind == CONV_NEG_OFFSET ? -4096 : 0, 0, &err_no,
			    NULL, 0);
	e->cf.fn.handle_deregister(fh);
	cf_dev_free(e, d);
	gc_fp_file_destroy(&f);
	cf_ret(r, err_no, rb, sizeof(rb));
	gc_info("%s: %s", c->name, rb);
	gc_assert_f(r < 0, "%s succeeded: %s", c->name, rb);
	gc_assert_f(gc_cufile_ret_documented(r, err_no),
		    "%s returned %s: neither -1 with an errno nor a negative CUfileOpError",
		    c->name, rb);
	if (r == -1)
		gc_assert_f(err_no == c->want_errno, "%s: errno %s, the same call through "
			    "the POSIX path gives %s", c->name, strerrorname_np(err_no) ?: "?",
			    strerrorname_np(c->want_errno));
}

/*
 * error-convention: cufile.h (cuFileRead/Write): "@return -1 on error, in
 * which case errno is set to indicate filesystem errors." and "@return all
 * other errors will return a negative integer value of @ref CUfileOpError
 * enum value." [src denglin-github/cuda11_cudnn8 include/cufile.h @
 * 20c191daf9a2] (a CUDA 11-era copy of NVIDIA's header). Per mistake: the
 * result is one of the two forms, and a filesystem errno is the one
 * read(2)/write(2) give for it (the fastpath's errors map to errno).
 */
void test_error_convention(void *data)
{
	cf_env_gpu(data);
	gc_variants(conv_cases, data);
}
