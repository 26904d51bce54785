// SPDX-License-Identifier: MIT
/*
 * cufile_io: the fastpath contract on NVIDIA cuFile (GPUDirect Storage).
 * cuFileRead / cuFileWrite move the right bytes between a file and device
 * memory for every size, file offset and buffer offset, registered buffer or
 * not; what cannot be done directly is served by the fallback (compat mode:
 * POSIX I/O through host bounce buffers) with the same bytes; errors come
 * back as -1 + errno or a negative CUfileOpError and change nothing; the
 * library survives concurrent first use, concurrency and signal storms; a
 * batch with one bad entry fails that entry alone or is rejected whole.
 *
 * Documentation cited as cufile.h is the comment block of that function in
 * <cufile.h> (libcufile 1.15, CUDA 13.0). Where it is silent the subtest says
 * what it observed (gc_info) and asserts only that nothing was corrupted.
 *
 * The file side is checked through a second, buffered descriptor; the device
 * side by copying the whole buffer back: the target range and the guard
 * bytes around it (cf_util.h explains the keying).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cf_io.h"

/* ----------------------------------------------------------- data matrix */

#define SEED_FILE 0x5eed0001u
#define SEED_DEV 0x5eed0002u

/* The cases (lib/fastpath_subtests.h): sizes x (file offset, buffer offset), each case_one. */
GC_FASTPATH_MATRIX(case_one);

struct mcase {
	struct cf_env *e;
	struct gc_fp_file *f; /* read: one shared file */
	void *fh;
	uint64_t size, foff, boff;
	bool registered;
};

/* Size 0 may be refused with an error (cufile.h documents none for it) or return 0. */
static void expect_count(struct mcase *c, ssize_t r, int err_no, const char *what)
{
	char rb[128];

	if (c->size == 0)
		gc_assert_f(r <= 0, "%s of 0 bytes returned %s", what,
			    cf_ret(r, err_no, rb, sizeof(rb)));
	else
		gc_assert_f(r == (ssize_t)c->size, "%s of %llu bytes returned %s", what,
			    (unsigned long long)c->size, cf_ret(r, err_no, rb, sizeof(rb)));
}

static void buf_register(const struct cf_env *e, CUdeviceptr d, uint64_t len)
{
	char eb[96];
	gc_cufile_err ce = e->cf.fn.buf_register((const void *)(uintptr_t)d, len, 0);

	gc_assert_f(ce.err == 0, "cuFileBufRegister(%llu bytes): %s", (unsigned long long)len,
		    gc_cufile_strerror(ce, eb, sizeof(eb)));
}

static void buf_deregister(const struct cf_env *e, CUdeviceptr d)
{
	char eb[96];
	gc_cufile_err ce = e->cf.fn.buf_deregister((const void *)(uintptr_t)d);

	gc_assert_f(ce.err == 0, "cuFileBufDeregister: %s", gc_cufile_strerror(ce, eb, sizeof(eb)));
}

static void read_case(struct mcase *c)
{
	uint64_t total = c->boff + c->size + GUARD;
	CUdeviceptr d = cf_dev_alloc(c->e, total);
	char path[96];
	int err_no;
	ssize_t r;

	cf_dev_poison(c->e, d, total, c->foff - c->boff, SEED_FILE);
	if (c->registered)
		buf_register(c->e, d, total);
	r = cf_read(c->e, c->fh, d, c->size, (int64_t)c->foff, (int64_t)c->boff, &err_no, path,
		    sizeof(path));
	if (c->registered)
		buf_deregister(c->e, d);
	expect_count(c, r, err_no, "cuFileRead");
	cf_dev_expect(c->e, d, total, c->boff, r > 0 ? (uint64_t)r : 0, c->foff, SEED_FILE,
		      "cuFileRead");
	gc_info("%llu bytes at file offset %llu -> buffer offset %llu%s: path %s",
		(unsigned long long)c->size, (unsigned long long)c->foff,
		(unsigned long long)c->boff, c->registered ? " (registered)" : "", path);
	cf_dev_free(c->e, d);
}

/* A file of its own per case, registered for the case alone. */
static void write_case(struct mcase *c)
{
	uint64_t total = c->boff + c->size + GUARD, fsize = c->foff + c->size + GUARD;
	CUdeviceptr d = cf_dev_alloc(c->e, total);
	struct gc_fp_file f;
	char path[96];
	struct stat st;
	int err_no;
	ssize_t r;
	void *fh;

	fh = cf_file_registered(c->e, "wm", fsize, SEED_FILE, O_RDWR, &f);
	cf_dev_fill(c->e, d, c->boff, c->size, c->foff, SEED_DEV);
	if (c->registered)
		buf_register(c->e, d, total);
	r = cf_write(c->e, fh, d, c->size, (int64_t)c->foff, (int64_t)c->boff, &err_no, path,
		     sizeof(path));
	if (c->registered)
		buf_deregister(c->e, d);
	c->e->cf.fn.handle_deregister(fh);
	expect_count(c, r, err_no, "cuFileWrite");
	cf_file_expect(&f, 0, c->foff, SEED_FILE, "bytes before the write");
	cf_file_expect(&f, c->foff, r > 0 ? (uint64_t)r : 0, SEED_DEV, "written bytes");
	cf_file_expect(&f, c->foff + (r > 0 ? (uint64_t)r : 0),
		       fsize - c->foff - (r > 0 ? (uint64_t)r : 0), SEED_FILE,
		       "bytes after the write");
	gc_assert_syscall(fstat(f.fd, &st));
	gc_assert_cmpuint(st.st_size, ==, fsize);
	gc_info("%llu bytes from buffer offset %llu -> file offset %llu%s: path %s",
		(unsigned long long)c->size, (unsigned long long)c->boff,
		(unsigned long long)c->foff, c->registered ? " (registered)" : "", path);
	gc_fp_file_destroy(&f);
	cf_dev_free(c->e, d);
}

/* The read file's handle of one registered-matrix read case (also one a failed case left). */
static void drop_handle(struct mcase *c)
{
	if (c->fh)
		c->e->cf.fn.handle_deregister(c->fh);
	c->fh = NULL;
}

/*
 * A read of read-matrix through the subtest's handle; of registered-matrix
 * through a handle registered for it alone; each write as write-matrix's.
 */
static void case_one(void *ctx, bool write, uint64_t size, const struct gc_fp_place *b)
{
	struct mcase *c = ctx;

	c->size = size, c->foff = b->foff, c->boff = b->boff;
	if (write) {
		write_case(c);
		return;
	}
	if (!c->registered) {
		read_case(c);
		return;
	}
	drop_handle(c);
	c->fh = cf_register_ok(c->e, c->f->fd);
	read_case(c);
	drop_handle(c);
}

/*
 * read-matrix: cufile.h (cuFileRead): "@return size of bytes successfully
 * read [...]", and "If the devPtr is not registered with @ref
 * cuFileBufRegister, the data will be buffered through preallocated pinned
 * buffers." and "This is useful for applications that need to perform IO to
 * unaligned file offsets and/or size." [src denglin-github/cuda11_cudnn8
 * include/cufile.h @ 20c191daf9a2] (a CUDA 11-era copy of NVIDIA's header):
 * every case must move exactly size bytes to exactly [boff, boff + size) and
 * touch nothing else.
 */
void test_read_matrix(void *data)
{
	struct cf_env *e = data;
	uint64_t fsize = GC_FP_MATRIX_MAX_FOFF + GC_FP_MATRIX_MAX_SIZE + GUARD;
	struct gc_fp_file f;
	struct mcase c = { .e = e, .f = &f };

	cf_env_gpu(e);
	c.fh = cf_file_registered(e, "rm", fsize, SEED_FILE, O_RDWR, &f);
	gc_product(gc_fp_read_matrix, &c);
	e->cf.fn.handle_deregister(c.fh);
	gc_fp_file_destroy(&f);
}

/* write-matrix: cufile.h (cuFileWrite), the same promise in the other direction. */
void test_write_matrix(void *data)
{
	struct cf_env *e = data;
	struct mcase c = { .e = e };

	cf_env_gpu(e);
	gc_product(gc_fp_write_matrix, &c);
}

/*
 * registered-matrix: a buffer registered with cuFileBufRegister gives the
 * same bytes as an unregistered one (both are checked against the same
 * pattern), aligned or not, read and write.
 */
void test_registered_matrix(void *data)
{
	struct cf_env *e = data;
	struct gc_fp_file f;
	struct mcase c = { .e = e, .f = &f, .registered = true };

	cf_env_gpu(e);
	cf_file(e, "rr", 4 * MiB, SEED_FILE, O_RDWR, &f);
	gc_product(gc_fp_registered_matrix, &c);
	drop_handle(&c);
	gc_fp_file_destroy(&f);
}

/*
 * read-registered-subrange: cufile.h (cuFileRead): "@param devPtr_base base
 * address of buffer in device memory [...]" and "@param devPtr_offset offset
 * relative to the devPtr_base pointer to read into." [src
 * denglin-github/cuda11_cudnn8 include/cufile.h @ 20c191daf9a2] (a CUDA
 * 11-era copy of NVIDIA's header; later headers name the two bufPtr_base and
 * bufPtr_offset): a read into the middle of a registered allocation, by a
 * pointer inside it or by the base plus an offset, lands exactly there.
 */
void test_read_registered_subrange(void *data)
{
	struct cf_env *e = data;
	const uint64_t total = 8 * MiB, foff = 4096, size = 2 * MiB + 4096;
	struct gc_fp_file f;
	CUdeviceptr d;
	int err_no;
	ssize_t r;
	void *fh;

	cf_env_gpu(e);
	fh = cf_file_registered(e, "rs", 4 * MiB, SEED_FILE, O_RDWR, &f);
	d = cf_dev_alloc(e, total);
	buf_register(e, d, total);
	/* A pointer 1 MiB into the registration, buffer offset 4096 from it. */
	cf_dev_poison(e, d, total, foff - (MiB + 4096), SEED_FILE);
	r = e->cf.fn.read(fh, (void *)(uintptr_t)(d + MiB), size, foff, 4096);
	err_no = errno;
	gc_assert_f(r == (ssize_t)size, "read via an inner pointer: %s",
		    gc_cufile_ret_str(r, err_no, (char[128]){ 0 }, 128));
	cf_dev_expect(e, d, total, MiB + 4096, size, foff, SEED_FILE, "inner pointer");
	/* The base pointer with a 3 MiB + 1 buffer offset. */
	cf_dev_poison(e, d, total, foff - (3 * MiB + 1), SEED_FILE);
	r = e->cf.fn.read(fh, (void *)(uintptr_t)d, size, foff, 3 * MiB + 1);
	err_no = errno;
	gc_assert_f(r == (ssize_t)size, "read at base + offset: %s",
		    gc_cufile_ret_str(r, err_no, (char[128]){ 0 }, 128));
	cf_dev_expect(e, d, total, 3 * MiB + 1, size, foff, SEED_FILE, "base + offset");
	buf_deregister(e, d);
	e->cf.fn.handle_deregister(fh);
	cf_dev_free(e, d);
	gc_fp_file_destroy(&f);
}

/* -------------------------------------------------------------- fixture */

static void *cf_setup(void)
{
	struct cf_env *e = calloc(1, sizeof(*e));

	gc_assert_f(e, "out of memory");
	cf_env_probe(e);
	return e;
}

static void cf_after_each(void *data)
{
	cf_env_cleanup(data);
}

static void cf_teardown(void *data)
{
	struct cf_env *e = data;

	cf_env_cleanup(e);
	cf_env_gpu_close(e);
	gc_cufile_close(&e->cf);
	free(e);
}

static const struct gc_fixture fixture = {
	.setup = cf_setup, .teardown = cf_teardown, .after_each = cf_after_each,
};

/* lib/fastpath_subtests.h's groups, error-convention and shrinking-file after the edge cases. */
GC_FASTPATH_TABLES(CF_EXTRA_SUBTESTS);

GC_MAIN(.name = "cufile_io",
	.description = "cuFile: byte-exact GPU-direct reads and writes, fallback, errors, concurrency",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks,
	.placement = GC_PLACE_GPU, .placements = placements)
