// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/hipfile's pure logic (no GPU, no ROCm library loaded):
 * the errno mapping of every entry point's result, which path served a
 * request, hipFile's documented fastpath rules, version and error names, and
 * the layout of the ABI structures declared in gc_hipfile.h (against the
 * sizes the hipfile.h / hsa_ext_amd.h declarations imply; against Debian's
 * <hsa/hsa.h> for the status values where that header is installed).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "core.h"
#include "gc_hipfile.h"

#if __has_include(<hsa/hsa.h>)
#include <hsa/hsa.h>
#define HAVE_HSA_H 1
#endif

static struct gc_hf_res res(int64_t ret, uint64_t copied, int32_t status, int err_no)
{
	return (struct gc_hf_res){ .ret = ret, .copied = copied, .status = status,
				   .err_no = err_no };
}

#define UNT64 GC_HF_UNTOUCHED64
#define UNT32 GC_HF_UNTOUCHED32

static void test_errno_raw(void *fx)
{
	struct gc_hf_res r;

	(void)fx;
	r = res(hipSuccess, 4096, 0, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), 4096);
	r = res(hipSuccess, 100, 0, 0); /* a short count is a count */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), 100);
	r = res(hipSuccess, UNT64, UNT32, 0); /* success, size_copied never written */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -EPROTO);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 0), 0);
	r = res(hipSuccess, 8192, 0, 0); /* more than asked */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -EPROTO);
	r = res(hipErrorUnknown, UNT64, -EINVAL, 0); /* the KFD's status wins */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -EINVAL);
	r = res(hipErrorUnknown, UNT64, EBADF, 0); /* positive status, as hipFile's abs() */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -EBADF);
	r = res(hipSuccess, 4096, -EIO, 0); /* success with a bad status is not a success */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -EIO);
	r = res(hipErrorUnknown, UNT64, UNT32, ENOTTY); /* KFD without the AIS ioctl */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -ENOTTY);
	r = res(hipErrorInvalidValue, UNT64, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -EINVAL);
	r = res(hipErrorInvalidDevice, UNT64, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -ENODEV);
	r = res(hipErrorUnknown, UNT64, 0, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIP_AMD_FILE, &r, 4096), -EIO);
	r = res(GC_HSA_STATUS_ERROR_INVALID_ARGUMENT, UNT64, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HSA_AIS, &r, 0), -EINVAL);
	r = res(GC_HSA_STATUS_ERROR, UNT64, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HSA_AIS, &r, 4096), -EIO);
	r = res(GC_HSA_STATUS_SUCCESS, 4096, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HSA_AIS, &r, 4096), 4096);
}

static void test_errno_hipfile(void *fx)
{
	struct gc_hf_res r;

	(void)fx;
	r = res(4096, UNT64, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIPFILE, &r, 4096), 4096);
	r = res(-1, UNT64, UNT32, EBADF);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIPFILE, &r, 4096), -EBADF);
	r = res(-1, UNT64, UNT32, 0); /* -1 with no errno: still an error */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIPFILE, &r, 4096), -EIO);
	r = res(-GC_HIPFILE_INVALID_VALUE, UNT64, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIPFILE, &r, 4096), -EINVAL);
	r = res(-GC_HIPFILE_HANDLE_NOT_REGISTERED, UNT64, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIPFILE, &r, 4096), -EBADF);
	r = res(-GC_HIPFILE_HIP_MEMORY_TYPE_INVALID, UNT64, UNT32, 0);
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIPFILE, &r, 4096), -EFAULT);
	r = res(-hipErrorInvalidValue - 1, UNT64, UNT32, 0); /* a negated hipError_t */
	gc_assert_eq_int(gc_hf_errno(GC_HF_HIPFILE, &r, 4096), -EIO);
	gc_assert_eq_int(gc_hipfile_op_errno(GC_HIPFILE_INTERNAL_ERROR), EIO);
	gc_assert_eq_int(gc_hipfile_op_errno(GC_HIPFILE_BATCH_FULL), EAGAIN);
	gc_assert_eq_int(gc_hipfile_err_errno((gc_hipfile_err){ 0, hipSuccess }), 0);
	gc_assert_eq_int(gc_hipfile_err_errno((gc_hipfile_err){ GC_HIPFILE_DIO_NOT_SET,
								 hipSuccess }), EINVAL);
}

static void test_served(void *fx)
{
	struct gc_hf_res ok = { .n = 4096 }, bad = { .n = -EIO };
	char why[256];

	(void)fx;
	gc_assert_eq_int(gc_hf_served(GC_HF_HIP_AMD_FILE, &bad, NULL, why, sizeof(why)),
			 GC_HF_PATH_NONE);
	gc_assert_eq_int(gc_hf_served(GC_HF_HIP_AMD_FILE, &ok, "true", why, sizeof(why)),
			 GC_HF_PATH_GPU_DIRECT);
	gc_assert_eq_int(gc_hf_served(GC_HF_HSA_AIS, &ok, NULL, why, sizeof(why)),
			 GC_HF_PATH_GPU_DIRECT);
	gc_assert_eq_int(gc_hf_served(GC_HF_HIPFILE, &ok, NULL, why, sizeof(why)),
			 GC_HF_PATH_CANNOT_TELL);
	gc_assert(strstr(why, "no per-request") != NULL);
	gc_assert_eq_int(gc_hf_served(GC_HF_HIPFILE, &ok, "0", why, sizeof(why)),
			 GC_HF_PATH_CANNOT_TELL);
	gc_assert_eq_int(gc_hf_served(GC_HF_HIPFILE, &ok, "TRUE", why, sizeof(why)),
			 GC_HF_PATH_FALLBACK);
	gc_assert(strstr(why, "HIPFILE_FORCE_COMPAT_MODE=TRUE") != NULL);
	gc_assert_eq_str(gc_hf_path_name(GC_HF_PATH_CANNOT_TELL), "cannot tell");
}

static void test_rules(void *fx)
{
	struct gc_hf_rules r = { .odirect = true, .device_memory = true, .supported_fs = true };
	char why[128];

	(void)fx;
	gc_assert(gc_hf_fastpath_eligible(&r, 0x10000, 8192, 4096, 4096, why, sizeof(why)));
	gc_assert(!gc_hf_fastpath_eligible(&r, 0x10000, 8192, 512, 0, why, sizeof(why)));
	gc_assert(strstr(why, "file offset") != NULL);
	gc_assert(!gc_hf_fastpath_eligible(&r, 0x10000, 4097, 0, 0, why, sizeof(why)));
	gc_assert(strstr(why, "size") != NULL);
	gc_assert(!gc_hf_fastpath_eligible(&r, 0x10000, 4096, 0, 1, why, sizeof(why)));
	gc_assert(strstr(why, "address") != NULL);
	gc_assert(!gc_hf_fastpath_eligible(&r, 0x10000, 4096, -4096, 0, why, sizeof(why)));
	r.offset_align = 512, r.mem_align = 4; /* statx's answer replaces the 4096 default */
	gc_assert(gc_hf_fastpath_eligible(&r, 0x10004, 1024, 512, 0, why, sizeof(why)));
	gc_assert(!gc_hf_fastpath_eligible(&r, 0x10001, 1024, 512, 0, why, sizeof(why)));
	r.odirect = false;
	gc_assert(!gc_hf_fastpath_eligible(&r, 0x10000, 4096, 0, 0, why, sizeof(why)));
	gc_assert(strstr(why, "O_DIRECT") != NULL);
	r.odirect = true, r.supported_fs = false;
	gc_assert(!gc_hf_fastpath_eligible(&r, 0x10000, 4096, 0, 0, why, sizeof(why)));
	r.supported_fs = true, r.device_memory = false;
	gc_assert(!gc_hf_fastpath_eligible(&r, 0x10000, 4096, 0, 0, why, sizeof(why)));
}

static void test_names(void *fx)
{
	char b[32];

	(void)fx;
	gc_assert_eq_str(gc_hip_version_name(50221153, b, sizeof(b)), "5.2.21153");
	gc_assert_eq_str(gc_hip_version_name(60443483, b, sizeof(b)), "6.4.43483");
	gc_assert_eq_str(gc_hip_version_name(-1, b, sizeof(b)), "unknown");
	gc_assert_eq_str(gc_hipfile_err_name(0), "hipFileSuccess");
	gc_assert_eq_str(gc_hipfile_err_name(5027), "hipFileHandleNotRegistered");
	gc_assert_eq_str(gc_hipfile_err_name(5022), "hipFileInvalidValue");
	gc_assert_eq_str(gc_hipfile_err_name(5039), "hipFileIOMaxError");
	gc_assert(gc_hipfile_err_name(5021) == NULL);
	gc_assert(gc_hipfile_err_name(5032) == NULL);
	gc_assert(gc_hipfile_err_name(5040) == NULL);
	gc_assert(gc_hipfile_err_name(4999) == NULL);
	gc_assert_eq_str(gc_hf_entry_symbol(GC_HF_HSA_AIS, true), "hsa_amd_ais_file_write");
	gc_assert_eq_str(gc_hf_entry_symbol(GC_HF_HIPFILE, false), "hipFileRead");
	gc_assert_eq_str(gc_hf_entry_name(GC_HF_HIP_AMD_FILE), "hipAmdFile");
}

/* The layouts hipfile.h and hsa_ext_amd.h imply on LP64. */
static void test_abi(void *fx)
{
	(void)fx;
	gc_assert_eq_uint(sizeof(gc_amd_file_handle), 8);
	gc_assert_eq_uint(sizeof(gc_hipfile_err), 8);
	gc_assert_eq_uint(sizeof(gc_hipfile_descr), 24);
	gc_assert_eq_uint(offsetof(gc_hipfile_descr, fs_ops), 16);
	gc_assert_eq_uint(sizeof(gc_hipfile_io_params), 64);
	gc_assert_eq_uint(offsetof(gc_hipfile_io_params, u.batch.dev_base), 8);
	gc_assert_eq_uint(offsetof(gc_hipfile_io_params, u.batch.size), 32);
	gc_assert_eq_uint(offsetof(gc_hipfile_io_params, fh), 40);
	gc_assert_eq_uint(offsetof(gc_hipfile_io_params, opcode), 48);
	gc_assert_eq_uint(offsetof(gc_hipfile_io_params, cookie), 56);
	gc_assert_eq_uint(sizeof(gc_hipfile_io_events), 24);
	gc_assert_eq_uint(offsetof(gc_hipfile_io_events, status), 8);
	gc_assert_eq_uint(offsetof(gc_hipfile_io_events, ret), 16);
#ifdef HAVE_HSA_H
	gc_assert_eq_int(GC_HSA_STATUS_SUCCESS, HSA_STATUS_SUCCESS);
	gc_assert_eq_int(GC_HSA_STATUS_ERROR, HSA_STATUS_ERROR);
	gc_assert_eq_int(GC_HSA_STATUS_ERROR_INVALID_ARGUMENT, HSA_STATUS_ERROR_INVALID_ARGUMENT);
	gc_assert_eq_int(GC_HSA_STATUS_ERROR_OUT_OF_RESOURCES, HSA_STATUS_ERROR_OUT_OF_RESOURCES);
	gc_assert_eq_int(GC_HSA_STATUS_ERROR_NOT_INITIALIZED, HSA_STATUS_ERROR_NOT_INITIALIZED);
#else
	gc_info("<hsa/hsa.h> not installed: HSA status values not compared");
#endif
}

static const struct gc_subtest subtests[] = {
	{ "errno-raw", test_errno_raw, "hipAmdFile* / hsa_amd_ais_* results as errno" },
	{ "errno-hipfile", test_errno_hipfile, "hipFileRead/Write results as errno" },
	{ "served", test_served, "which path served a request, or why we cannot tell" },
	{ "rules", test_rules, "hipFile's documented fastpath rules" },
	{ "names", test_names, "versions, error and entry names" },
	{ "abi", test_abi, "layouts of the declared hipFile / HSA structures" },
	{ 0 }
};

GC_MAIN(.name = "unit_hipfile", .description = "lib/hipfile pure logic", .subtests = subtests)
