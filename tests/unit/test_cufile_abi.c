// SPDX-License-Identifier: MIT
/*
 * lib/cufile declares the part of the cuFile ABI it calls in its own names
 * (gc_cufile_abi.h), so cufile_io builds where <cufile.h> is not installed.
 * Where <cufile.h> is installed (GC_HAVE_CUFILE_H), every size, offset and
 * constant of those declarations is checked against NVIDIA's header: a drift
 * fails the build (static assertions) or error-names, instead of corrupting
 * memory at run time. The other subtests check gc_cufile.c's pure helpers
 * and run wherever <cuda.h> is.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "core.h"
#include "gc_cufile.h"

#ifdef GC_HAVE_CUFILE_H
#include <cufile.h>

#include "abi_check.h"

SAME_LAYOUT(gc_cufile_err, CUfileError_t);
SAME_FIELDS(gc_cufile_err, CUfileError_t, cu_err);
SAME_LAYOUT(gc_cufile_descr, CUfileDescr_t);
SAME_FIELDS(gc_cufile_descr, CUfileDescr_t, handle.fd, fs_ops);
SAME_LAYOUT(gc_cufile_props, CUfileDrvProps_t);
SAME_FIELDS(gc_cufile_props, CUfileDrvProps_t, nvfs.dcontrolflags, max_batch_io_timeout_msecs);
SAME_LAYOUT(gc_cufile_io_params, CUfileIOParams_t);
SAME_OFFSET(gc_cufile_io_params, u.batch.dev_ptr_base, CUfileIOParams_t, u.batch.devPtr_base);
SAME_FIELDS(gc_cufile_io_params, CUfileIOParams_t, u.batch.file_offset);
SAME_OFFSET(gc_cufile_io_params, u.batch.dev_ptr_offset, CUfileIOParams_t,
	    u.batch.devPtr_offset);
SAME_FIELDS(gc_cufile_io_params, CUfileIOParams_t, u.batch.size, fh, opcode, cookie);
SAME_LAYOUT(gc_cufile_io_event, CUfileIOEvents_t);
SAME_FIELDS(gc_cufile_io_event, CUfileIOEvents_t, status, ret);
_Static_assert(sizeof(CUfileStatsLevel1_t) == GC_CUFILE_STATS_L1_BYTES, "level-1 stats size");
_Static_assert(sizeof(CUfileStatsLevel2_t) == GC_CUFILE_STATS_L2_BYTES, "level-2 stats size");
SAME_LAYOUT(gc_cufile_gpu_stats, CUfilePerGpuStats_t);
SAME_FIELDS(gc_cufile_gpu_stats, CUfilePerGpuStats_t, n_p2p_reads, n_nvfs_reads, n_posix_reads,
	    n_p2p_writes, n_nvfs_writes, n_posix_writes, reg_bytes);
SAME_LAYOUT(gc_cufile_stats_l3, CUfileStatsLevel3_t);
SAME_FIELDS(gc_cufile_stats_l3, CUfileStatsLevel3_t, num_gpus);
SAME_OFFSET(gc_cufile_stats_l3, per_gpu, CUfileStatsLevel3_t, per_gpu_stats);
_Static_assert(GC_CUFILE_MAX_GPUS == sizeof(((CUfileStatsLevel3_t *)0)->per_gpu_stats) /
					     sizeof(CUfilePerGpuStats_t), "per-GPU array");
SAME_VALUE(GC_CUFILE_BASE_ERR, CUFILEOP_BASE_ERR);
SAME_VALUE(GC_CU_FILE_DRIVER_NOT_INITIALIZED, CU_FILE_DRIVER_NOT_INITIALIZED);
SAME_VALUE(GC_CU_FILE_CUDA_DRIVER_ERROR, CU_FILE_CUDA_DRIVER_ERROR);
SAME_VALUE(GC_CU_FILE_CUDA_POINTER_INVALID, CU_FILE_CUDA_POINTER_INVALID);
SAME_VALUE(GC_CU_FILE_CUDA_MEMORY_TYPE_INVALID, CU_FILE_CUDA_MEMORY_TYPE_INVALID);
SAME_VALUE(GC_CU_FILE_CUDA_POINTER_RANGE_ERROR, CU_FILE_CUDA_POINTER_RANGE_ERROR);
SAME_VALUE(GC_CU_FILE_INVALID_FILE_TYPE, CU_FILE_INVALID_FILE_TYPE);
SAME_VALUE(GC_CU_FILE_INVALID_FILE_OPEN_FLAG, CU_FILE_INVALID_FILE_OPEN_FLAG);
SAME_VALUE(GC_CU_FILE_DIO_NOT_SET, CU_FILE_DIO_NOT_SET);
SAME_VALUE(GC_CU_FILE_INVALID_VALUE, CU_FILE_INVALID_VALUE);
SAME_VALUE(GC_CU_FILE_MEMORY_ALREADY_REGISTERED, CU_FILE_MEMORY_ALREADY_REGISTERED);
SAME_VALUE(GC_CU_FILE_MEMORY_NOT_REGISTERED, CU_FILE_MEMORY_NOT_REGISTERED);
SAME_VALUE(GC_CU_FILE_DRIVER_ALREADY_OPEN, CU_FILE_DRIVER_ALREADY_OPEN);
SAME_VALUE(GC_CU_FILE_HANDLE_NOT_REGISTERED, CU_FILE_HANDLE_NOT_REGISTERED);
SAME_VALUE(GC_CU_FILE_HANDLE_ALREADY_REGISTERED, CU_FILE_HANDLE_ALREADY_REGISTERED);
SAME_VALUE(GC_CU_FILE_BATCH_SUBMIT_FAILED, CU_FILE_BATCH_SUBMIT_FAILED);
SAME_VALUE(GC_CU_FILE_BATCH_NOCOMPAT_ERROR, CU_FILE_BATCH_NOCOMPAT_ERROR);
SAME_VALUE(GC_CU_FILE_HANDLE_TYPE_OPAQUE_FD, CU_FILE_HANDLE_TYPE_OPAQUE_FD);
SAME_VALUE(GC_CU_FILE_ALLOW_COMPAT_MODE_BIT, CU_FILE_ALLOW_COMPAT_MODE);
SAME_VALUE(GC_CUFILE_READ, CUFILE_READ);
SAME_VALUE(GC_CUFILE_WRITE, CUFILE_WRITE);
SAME_VALUE(GC_CUFILE_BATCH, CUFILE_BATCH);
SAME_VALUE(GC_CUFILE_WAITING, CUFILE_WAITING);
SAME_VALUE(GC_CUFILE_PENDING, CUFILE_PENDING);
SAME_VALUE(GC_CUFILE_INVALID, CUFILE_INVALID);
SAME_VALUE(GC_CUFILE_CANCELED, CUFILE_CANCELED);
SAME_VALUE(GC_CUFILE_COMPLETE, CUFILE_COMPLETE);
SAME_VALUE(GC_CUFILE_TIMEOUT, CUFILE_TIMEOUT);
SAME_VALUE(GC_CUFILE_FAILED, CUFILE_FAILED);

/* Entry point types that name no struct must be the header's prototypes exactly. */
_Static_assert(__builtin_types_compatible_p(gc_cufile_read_fn *, __typeof__(&cuFileRead)),
	       "cuFileRead prototype");
_Static_assert(__builtin_types_compatible_p(gc_cufile_write_fn *, __typeof__(&cuFileWrite)),
	       "cuFileWrite prototype");
_Static_assert(__builtin_types_compatible_p(gc_cufile_handle_deregister_fn *,
					    __typeof__(&cuFileHandleDeregister)),
	       "cuFileHandleDeregister prototype");
_Static_assert(__builtin_types_compatible_p(gc_cufile_batch_destroy_fn *,
					    __typeof__(&cuFileBatchIODestroy)),
	       "cuFileBatchIODestroy prototype");
_Static_assert(__builtin_types_compatible_p(gc_cufile_use_count_fn *, __typeof__(&cuFileUseCount)),
	       "cuFileUseCount prototype");
#endif /* GC_HAVE_CUFILE_H */

/* Every error name the header defines is ours too, by value. */
static void test_error_names(void *fx)
{
	(void)fx;
#ifdef GC_HAVE_CUFILE_H
#define CUFILE_OP(code, name, string) gc_assert_eq_str(gc_cufile_err_name(code), #name);
	CUFILEOP_STATUS_ENTRIES
#undef CUFILE_OP
#else
	gc_skip("<cufile.h> is not installed: the ABI is checked where it is");
#endif
}

static void test_paths_diff(void *fx)
{
	struct gc_cufile_paths a = { 1, 2, 3 }, b = a;
	char buf[128];

	(void)fx;
	gc_assert_eq_str(gc_cufile_paths_diff_str(&a, &b, buf, sizeof(buf)), "none counted");
	b.posix += 2;
	gc_assert_eq_str(gc_cufile_paths_diff_str(&a, &b, buf, sizeof(buf)), "posix (compat)");
	b = a;
	b.nvfs += 1;
	gc_assert_eq_str(gc_cufile_paths_diff_str(&a, &b, buf, sizeof(buf)), "nvidia-fs");
	b.posix += 4;
	gc_assert_eq_str(gc_cufile_paths_diff_str(&a, &b, buf, sizeof(buf)),
			 "mixed: 1 nvidia-fs, 0 p2pdma, 4 posix");
}

static void test_version_and_ret(void *fx)
{
	char buf[128];

	(void)fx;
	gc_assert_eq_str(gc_cufile_version_str(1150, buf, sizeof(buf)), "1.15");
	gc_assert_eq_str(gc_cufile_version_str(-1, buf, sizeof(buf)), "unknown");
	gc_assert_eq_str(gc_cufile_ret_str(4096, 0, buf, sizeof(buf)), "4096 bytes");
	gc_assert_eq_str(gc_cufile_ret_str(-5022, 0, buf, sizeof(buf)),
			 "-5022 (CU_FILE_INVALID_VALUE)");
	gc_assert_eq_str(gc_cufile_ret_str(-1, EBADF, buf, sizeof(buf)),
			 "-1 (errno EBADF: Bad file descriptor)");
}

static void test_ret_documented(void *fx)
{
	char buf[128];

	(void)fx;
	gc_assert(gc_cufile_ret_documented(0, 0));
	gc_assert(gc_cufile_ret_documented(4096, 5022));
	gc_assert(gc_cufile_ret_documented(-1, EBADF));
	gc_assert(!gc_cufile_ret_documented(-1, 0));
	gc_assert(!gc_cufile_ret_documented(-1, 5022)); /* a status smuggled through errno */
	gc_assert(gc_cufile_ret_documented(-5022, 0));
	gc_assert(gc_cufile_ret_documented(-5027, EBADF));
	gc_assert(!gc_cufile_ret_documented(-5, 0));    /* neither form */
	gc_assert(!gc_cufile_ret_documented(-5021, 0)); /* 5021 is no status */
	gc_assert(!gc_cufile_ret_documented(-5000, 0)); /* 5000 is the base, not a status */
	gc_assert_eq_str(gc_cufile_ret_str(-1, 5022, buf, sizeof(buf)),
			 "-1 (errno 5022 = CU_FILE_INVALID_VALUE: a cuFile status, not an errno)");
}

static const struct gc_subtest subtests[] = {
	{ "ret-documented", test_ret_documented, "cufile.h's two error return forms" },
	{ "error-names", test_error_names, "every CUfileOpError of <cufile.h> has its name here" },
	{ "paths-diff", test_paths_diff, "per-path counter differences named" },
	{ "version-and-ret", test_version_and_ret, "version and return value strings" },
	{ 0 }
};

GC_MAIN(.name = "unit_cufile_abi", .subtests = subtests)
