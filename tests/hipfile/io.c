// SPDX-License-Identifier: MIT
/*
 * hipfile_io: the fastpath contract on AMD: GPU-direct file reads and writes
 * through the three entry points ROCm has for them (gc_hipfile.h):
 *   hipFile (hipFileRead / hipFileWrite, with a fallback through host
 *   memory), hipAmdFileRead / hipAmdFileWrite (the HIP runtime, GPU-direct
 *   only) and hsa_amd_ais_file_read / _write (ROCr, GPU-direct only).
 * They move the right bytes for every size, file offset and buffer offset;
 * what hipFile's fastpath cannot do, its fallback serves with the same bytes;
 * what the GPU-direct-only calls cannot do, they refuse with an error that
 * changes nothing; errors come back as errno; the library survives concurrent
 * first use, concurrency and signal storms; its batch API fails a bad entry
 * alone or rejects the batch whole.
 *
 * UNVERIFIED ON HARDWARE. Nothing of this was run on an AMD GPU: it was built
 * against Debian 12's ROCm 5.2.3 (which has none of the three entry points)
 * and seen only skipping. Every expectation comes from the documents cited in
 * each subtest; where they are silent the subtest records what it observed
 * (gc_info) and asserts only that nothing was corrupted.
 *
 * Documents cited:
 *  - `hipfile.h`: include/hipfile.h of hipFile 0.2.0 (ROCm/rocm-systems,
 *    projects/hipfile), the function's comment block [src ROCm/rocm-systems
 *    projects/hipfile/include/hipfile.h @ 50391dc3c770];
 *  - `io-backends`: hipFile's docs/conceptual/io-backends.rst [src
 *    ROCm/rocm-systems projects/hipfile/docs/conceptual/io-backends.rst @
 *    5b50b9d9ea8b];
 *  - `driver-lifecycle`: hipFile's docs/reference/driver-lifecycle.rst [src
 *    ROCm/rocm-systems projects/hipfile/docs/reference/driver-lifecycle.rst @
 *    996998c6d468];
 *  - `layer notes`: the comment at the top of hipFile's
 *    src/amd_detail/backend/fastpath.cpp, which lists what each layer below
 *    hipFile (HIP runtime, ROCr, HSA, thunk, KFD) returns for what [src
 *    ROCm/hipFile src/amd_detail/backend/fastpath.cpp @ e875da7de04c];
 *  - `hip_storage.h`: the HIP runtime's amd_detail/hip_storage.h comments
 *    [src ROCm/clr hipamd/include/hip/amd_detail/hip_storage.h @ 0c33dfa05b54].
 *
 * Each data check copies the device range back (guards included) and
 * compares it with lib/io's offset-keyed pattern; the file side is read
 * through a second, buffered descriptor (hf_util.h explains the keying).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hf_io.h"

/* ------------------------------------------------- documented outcomes */

/*
 * hipFile: io-backends says of the fallback: "Because it does not require
 * `O_DIRECT`, specific filesystem types, or aligned offsets, it can service
 * any IO request that the fastpath cannot." [src ROCm/rocm-systems
 * projects/hipfile/docs/conceptual/io-backends.rst @ 5b50b9d9ea8b]: every
 * request with size > 0 inside the file moves all its bytes. The
 * GPU-direct-only entries: layer notes (KFD, kfd_ais_rw_file): "[...] -EINVAL
 * if file_offset or size are not page aligned (4K) [...]"; the thunk: "[...]
 * converts buffer pointer + io_size to a buffer handle (no alignment check)
 * [...]" [src ROCm/hipFile src/amd_detail/backend/fastpath.cpp @
 * e875da7de04c]: a misaligned buffer is not documented either way. Size 0: see
 * size-zero.
 */
enum hf_outcome hf_expected(enum gc_hf_entry x, uint64_t size, int64_t foff, uintptr_t addr)
{
	if (size == 0)
		return HF_ZERO;
	if (x == GC_HF_HIPFILE)
		return HF_MUST_TRANSFER;
	if (foff < 0 || size % PAGE || (uint64_t)foff % PAGE)
		return HF_MUST_REFUSE;
	if (addr % PAGE)
		return HF_MAY_REFUSE;
	return HF_MUST_TRANSFER;
}

uint64_t hf_judge(enum hf_outcome o, const struct gc_hf_res *res, uint64_t size,
		  const char *desc)
{
	switch (o) {
	case HF_ZERO:
		gc_assert_f(res->n <= 0, "size 0 transferred bytes: %s", desc);
		return 0;
	case HF_MUST_REFUSE:
		gc_assert_f(res->n < 0, "a request the KFD refuses (file offset or size not a "
			    "4 KiB multiple) succeeded: %s", desc);
		if (res->n != -EINVAL)
			gc_info("refused, but with %s, not the documented EINVAL",
				strerrorname_np((int)-res->n) ?: "?");
		return 0;
	case HF_MAY_REFUSE:
		if (res->n < 0) {
			gc_info("refused (allowed: the buffer address is not 4 KiB aligned)");
			return 0;
		}
		break;
	case HF_MUST_TRANSFER:
		break;
	}
	gc_assert_f(res->n == (int64_t)size, "want all %llu bytes: %s", (unsigned long long)size,
		    desc);
	return size;
}

/* ----------------------------------------------------------- data matrix */

/* The cases (lib/fastpath_subtests.h): sizes x (file offset, buffer offset), each case_one. */
GC_FASTPATH_MATRIX(case_one);

struct mcase {
	struct hf_env *e;
	gc_hipfile_handle rd_fh, wr_fh;
	uint64_t size, foff, boff;
	bool registered; /* hipFile with the whole device buffer registered */
};

/*
 * The request for one case: hipFile gets the device allocation as
 * buffer_base (registered or not) and the offset of the target in it; the
 * raw entries the target's address. The case's buffer offset sets that
 * address's alignment (the allocation is 4 KiB aligned, the guard before the
 * target one page).
 */
static struct gc_hf_req case_req(const struct mcase *c, enum gc_hf_entry x, bool write,
				 char *data)
{
	struct hf_env *e = c->e;

	return hf_req_dev(e, x, write, write ? e->wr.fd : e->rd.fd, write ? c->wr_fh : c->rd_fh,
			  data, c->size, (int64_t)c->foff);
}

static uint64_t run_call(const struct mcase *c, const struct gc_hf_req *r, const char *data)
{
	enum hf_outcome o = hf_expected(r->entry, c->size, (int64_t)c->foff, (uintptr_t)data);
	struct gc_hf_res res;
	char desc[768];

	if (c->registered)
		hf_buf_register_ok(c->e, c->e->dev, DEV_LEN);
	hf_io(c->e, r, &res, desc, sizeof(desc));
	if (c->registered)
		hf_buf_deregister_ok(c->e, c->e->dev);
	gc_info("%s", desc);
	return hf_judge(o, &res, c->size, desc);
}

static void read_one(const struct mcase *c, enum gc_hf_entry x)
{
	char *data = (char *)c->e->dev + GUARD + c->boff;
	struct gc_hf_req r = case_req(c, x, false, data);
	uint64_t done;

	hf_poison(c->e, data, c->size, c->foff, RD_SEED);
	done = run_call(c, &r, data);
	hf_expect_read(c->e, gc_hf_entry_symbol(x, false), data, c->size, done, c->foff, RD_SEED);
}

static void write_one(const struct mcase *c, enum gc_hf_entry x)
{
	struct hf_env *e = c->e;
	char *data = (char *)e->dev + GUARD + c->boff;
	struct gc_hf_req r = case_req(c, x, true, data);
	uint64_t lo = c->foff > TAIL ? c->foff - TAIL : 0, hi = c->foff + c->size + TAIL;
	const char *sym = gc_hf_entry_symbol(x, true);
	uint64_t done;

	hf_file_restore(e, e->wr_bfd, lo, hi - lo, WR_OLD);
	hf_source(e, data, c->size, c->foff);
	done = run_call(c, &r, data);
	hf_expect_source(e, sym, data, c->size, c->foff);
	hf_expect_written(e, &e->wr, e->wr_bfd, lo, hi, c->foff, done, sym);
}

static void run_entries(const struct mcase *c, bool write)
{
	int ran = 0;

	for (int i = 0; i < GC_HF_N_ENTRIES; i++) {
		enum gc_hf_entry x = (enum gc_hf_entry)i;

		if (!hf_have(c->e, x) || (c->registered && x != GC_HF_HIPFILE))
			continue;
		if (write)
			write_one(c, x);
		else
			read_one(c, x);
		ran++;
	}
	if (!ran)
		hf_require_any(c->e);
}

/* Every entry point this machine has (hipFile alone for registered-matrix). */
static void case_one(void *ctx, bool write, uint64_t size, const struct gc_fp_place *b)
{
	struct mcase *c = ctx;

	c->size = size, c->foff = b->foff, c->boff = b->boff;
	run_entries(c, write);
}

/* hipFile opened for the subtest, the fixture's two files registered. */
static void matrix_begin(struct mcase *c)
{
	struct hf_env *e = c->e;
	char b[512];

	hf_require_any(e);
	for (int x = 0; x < GC_HF_N_ENTRIES; x++)
		if (!hf_have(e, (enum gc_hf_entry)x))
			gc_info("not run: %s", gc_hf_backend_str(&e->h, (enum gc_hf_entry)x, b,
								  sizeof(b)));
	if (!hf_have(e, GC_HF_HIPFILE))
		return;
	hf_driver_open_ok(e);
	c->rd_fh = hf_register_ok(e, e->rd.fd);
	c->wr_fh = hf_register_ok(e, e->wr.fd);
}

static void run_matrix(struct hf_env *e, bool write)
{
	struct mcase c = { .e = e };

	matrix_begin(&c);
	if (write)
		gc_product(gc_fp_write_matrix, &c);
	else
		gc_product(gc_fp_read_matrix, &c);
	hf_release_all(e);
}

/*
 * read-matrix: hipfile.h (hipFileRead): "@return if >= 0: Number of bytes read
 * [...]" [src ROCm/rocm-systems projects/hipfile/include/hipfile.h @
 * 50391dc3c770] and io-backends' fallback promise: hipFile moves exactly size
 * bytes to exactly [buffer, buffer + size) for every case, unregistered
 * buffer. hipAmdFileRead (hip_storage.h: "Reads data from a file at the
 * specified offset into a device memory buffer."; "@param[IN/OUT] size_copied:
 * Actual number of bytes copied." [src ROCm/clr
 * hipamd/include/hip/amd_detail/hip_storage.h @ 0c33dfa05b54]) and
 * hsa_amd_ais_file_read move all bytes when file offset, size and buffer are 4
 * KiB aligned and refuse, changing nothing, when the file offset or size is
 * not (layer notes, KFD). Guards on both sides stay untouched.
 */
void test_read_matrix(void *data)
{
	run_matrix(data, false);
}

/* write-matrix: the same promises in the other direction (hipFileWrite, hipAmdFileWrite...). */
void test_write_matrix(void *data)
{
	run_matrix(data, true);
}

/*
 * registered-matrix: hipfile.h (hipFileBufRegister) "@brief Registers a GPU
 * memory region to be used with GPU IO [...]" [src ROCm/rocm-systems
 * projects/hipfile/include/hipfile.h @ 50391dc3c770]: a registered buffer
 * gives the same bytes as an unregistered one (both checked against the same
 * pattern), aligned or not, read and write. hipFile only: the other entries
 * have no registration.
 */
void test_registered_matrix(void *data)
{
	struct hf_env *e = data;
	struct mcase c = { .e = e, .registered = true };

	hf_require(e, GC_HF_HIPFILE);
	matrix_begin(&c);
	gc_product(gc_fp_registered_matrix, &c);
	hf_release_all(e);
}

/* One read through a registered allocation at (base, buf_off), checked around data. */
static void subrange_read(struct hf_env *e, gc_hipfile_handle fh, char *base, int64_t buf_off,
			  const char *what)
{
	const uint64_t size = 2 * MiB + 4096, foff = 4096;
	char *data = base + buf_off;
	struct gc_hf_req r = hf_req(GC_HF_HIPFILE, false, -1, fh, base, buf_off, size, foff);
	struct gc_hf_res res;
	char desc[768];

	hf_poison(e, data, size, foff, RD_SEED);
	hf_io(e, &r, &res, desc, sizeof(desc));
	gc_info("%s: %s", what, desc);
	gc_assert_f(res.n == (int64_t)size, "%s: %s", what, desc);
	hf_expect_read(e, what, data, size, size, foff, RD_SEED);
}

/*
 * read-registered-subrange: hipfile.h (hipFileRead): buffer_base is the base
 * of the GPU buffer, and "@param [in] buffer_offset Offset of the GPU buffer
 * that that the data should be written to [...]" (the doubled word is the
 * header's): a read into the middle of a registered allocation, by a pointer
 * inside it or by the base plus an offset, lands exactly there. A request
 * running past the registered length fails and changes nothing: hipfile.h
 * lists `hipFileHipPointerRangeError = HIPFILE_BASE_ERR + 14, //!< Pointer
 * range exceeds allocated memory region` and `hipFileInvalidMappingSize =
 * HIPFILE_BASE_ERR + 16, //!< Accessing memory beyond pinned memory buffer`
 * [src ROCm/rocm-systems projects/hipfile/include/hipfile.h @ 50391dc3c770]
 * for it; which one is recorded.
 */
void test_read_registered_subrange(void *data)
{
	struct hf_env *e = data;
	char *dev = e->dev, *end = dev + DEV_LEN;
	struct gc_hf_req r;
	struct gc_hf_res res;
	gc_hipfile_handle fh;
	char desc[768];

	hf_require(e, GC_HF_HIPFILE);
	hf_driver_open_ok(e);
	fh = hf_register_ok(e, e->rd.fd);
	hf_buf_register_ok(e, dev, DEV_LEN);
	subrange_read(e, fh, dev + MiB, 4096, "inner pointer + 4096");
	subrange_read(e, fh, dev, 3 * MiB + 1, "base + 3 MiB + 1");
	hf_dev_fill(e, end - 2 * GUARD, 2 * GUARD, 0, RD_SEED, true);
	r = hf_req(GC_HF_HIPFILE, false, -1, fh, dev, DEV_LEN - GUARD, 2 * GUARD, 0);
	hf_io(e, &r, &res, desc, sizeof(desc));
	gc_info("4 KiB past the registered length: %s", desc);
	gc_assert_f(res.n < 0, "a read running 4 KiB past the registration succeeded: %s", desc);
	hf_dev_expect(e, "the registration's last 8 KiB after a refused read", end - 2 * GUARD,
		      2 * GUARD, 0, RD_SEED, true);
	hf_release_all(e);
}

/* -------------------------------------------------------------- main */

static const struct gc_fixture fixture = {
	.setup = hf_setup,
	.teardown = hf_teardown,
	.before_each = hf_before_each,
	.after_each = hf_after_each,
};

/* lib/fastpath_subtests.h's groups: subtests, soaks, placements. */
GC_FASTPATH_TABLES();

/* Not GC_MAIN: the first-use race re-executes this binary as a fresh process. */
int main(int argc, char **argv)
{
	static const struct gc_test test = {
		.name = "hipfile_io",
		.description = "AMD GPU-direct file I/O (hipFile, hipAmdFile*, "
			       "hsa_amd_ais_file_*): byte-exact reads and writes, fallback, "
			       "errors, concurrency",
		.subtests = subtests,
		.fixture = &fixture,
		.soaks = soaks,
		.placement = GC_PLACE_GPU,
		.placements = placements,
	};
	const char *race = getenv(HF_RACE_ENV);

	if (race && *race)
		return hf_race_child(race);
	return gc_main(&test, argc, argv);
}
