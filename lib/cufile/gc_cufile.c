/* SPDX-License-Identifier: MIT */
#include "gc_cufile.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dl.h"

static const char *const sonames[] = { "libcufile.so.0", "libcufile.so" };

static void *open_lib(struct gc_cufile *cf, char *why, size_t why_len)
{
	return gc_dlopen_first(sonames, sizeof(sonames) / sizeof(sonames[0]), RTLD_NOW | RTLD_LOCAL,
			       cf->soname, sizeof(cf->soname), why, why_len);
}

static int resolve(struct gc_cufile *cf, char *why, size_t why_len)
{
#define GC_CUFILE_RESOLVE(member, symbol, type, required)                             \
	cf->fn.member = (type *)dlsym(cf->lib, symbol);                               \
	if (!cf->fn.member && (required)) {                                           \
		snprintf(why, why_len, "%s: no symbol %s", cf->soname, symbol);      \
		return -ENOSYS;                                                       \
	}
	GC_CUFILE_FUNCS(GC_CUFILE_RESOLVE)
#undef GC_CUFILE_RESOLVE
	return 0;
}

int gc_cufile_open(struct gc_cufile *cf, char *why, size_t why_len)
{
	int r;

	memset(cf, 0, sizeof(*cf));
	cf->version = -1;
	cf->lib = open_lib(cf, why, why_len);
	if (!cf->lib)
		return -ENOENT;
	r = resolve(cf, why, why_len);
	if (r < 0) {
		gc_cufile_close(cf);
		return r;
	}
	if (cf->fn.get_version && cf->fn.get_version(&cf->version).err != 0)
		cf->version = -1;
	return 0;
}

void gc_cufile_close(struct gc_cufile *cf)
{
	if (cf->lib)
		dlclose(cf->lib);
	memset(cf, 0, sizeof(*cf));
	cf->version = -1;
}

/* Names of the CUfileOpError values (cufile.h), indexed by value - 5000. */
static const char *const err_names[] = {
	[1] = "CU_FILE_DRIVER_NOT_INITIALIZED", [2] = "CU_FILE_DRIVER_INVALID_PROPS",
	[3] = "CU_FILE_DRIVER_UNSUPPORTED_LIMIT", [4] = "CU_FILE_DRIVER_VERSION_MISMATCH",
	[5] = "CU_FILE_DRIVER_VERSION_READ_ERROR", [6] = "CU_FILE_DRIVER_CLOSING",
	[7] = "CU_FILE_PLATFORM_NOT_SUPPORTED", [8] = "CU_FILE_IO_NOT_SUPPORTED",
	[9] = "CU_FILE_DEVICE_NOT_SUPPORTED", [10] = "CU_FILE_NVFS_DRIVER_ERROR",
	[11] = "CU_FILE_CUDA_DRIVER_ERROR", [12] = "CU_FILE_CUDA_POINTER_INVALID",
	[13] = "CU_FILE_CUDA_MEMORY_TYPE_INVALID", [14] = "CU_FILE_CUDA_POINTER_RANGE_ERROR",
	[15] = "CU_FILE_CUDA_CONTEXT_MISMATCH", [16] = "CU_FILE_INVALID_MAPPING_SIZE",
	[17] = "CU_FILE_INVALID_MAPPING_RANGE", [18] = "CU_FILE_INVALID_FILE_TYPE",
	[19] = "CU_FILE_INVALID_FILE_OPEN_FLAG", [20] = "CU_FILE_DIO_NOT_SET",
	[22] = "CU_FILE_INVALID_VALUE", [23] = "CU_FILE_MEMORY_ALREADY_REGISTERED",
	[24] = "CU_FILE_MEMORY_NOT_REGISTERED", [25] = "CU_FILE_PERMISSION_DENIED",
	[26] = "CU_FILE_DRIVER_ALREADY_OPEN", [27] = "CU_FILE_HANDLE_NOT_REGISTERED",
	[28] = "CU_FILE_HANDLE_ALREADY_REGISTERED", [29] = "CU_FILE_DEVICE_NOT_FOUND",
	[30] = "CU_FILE_INTERNAL_ERROR", [31] = "CU_FILE_GETNEWFD_FAILED",
	[33] = "CU_FILE_NVFS_SETUP_ERROR", [34] = "CU_FILE_IO_DISABLED",
	[35] = "CU_FILE_BATCH_SUBMIT_FAILED", [36] = "CU_FILE_GPU_MEMORY_PINNING_FAILED",
	[37] = "CU_FILE_BATCH_FULL", [38] = "CU_FILE_ASYNC_NOT_SUPPORTED",
	[39] = "CU_FILE_INTERNAL_BATCH_SETUP_ERROR", [40] = "CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR",
	[41] = "CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR",
	[42] = "CU_FILE_INTERNAL_BATCH_CANCEL_ERROR", [43] = "CU_FILE_NOMEM_ERROR",
	[44] = "CU_FILE_IO_ERROR", [45] = "CU_FILE_INTERNAL_BUF_REGISTER_ERROR",
	[46] = "CU_FILE_HASH_OPR_ERROR", [47] = "CU_FILE_INVALID_CONTEXT_ERROR",
	[48] = "CU_FILE_NVFS_INTERNAL_DRIVER_ERROR", [49] = "CU_FILE_BATCH_NOCOMPAT_ERROR",
	[50] = "CU_FILE_IO_MAX_ERROR",
};

const char *gc_cufile_err_name(int err)
{
	size_t i;

	if (err == 0)
		return "CU_FILE_SUCCESS";
	if (err < GC_CUFILE_BASE_ERR)
		return "not a cuFile status";
	i = (size_t)(err - GC_CUFILE_BASE_ERR);
	if (i >= sizeof(err_names) / sizeof(err_names[0]) || !err_names[i])
		return "unknown cuFile status";
	return err_names[i];
}

const char *gc_cufile_strerror(gc_cufile_err e, char *buf, size_t len)
{
	if (e.err == GC_CU_FILE_CUDA_DRIVER_ERROR)
		snprintf(buf, len, "%s (%d, CUresult %d)", gc_cufile_err_name(e.err), e.err,
			 (int)e.cu_err);
	else
		snprintf(buf, len, "%s (%d)", gc_cufile_err_name(e.err), e.err);
	return buf;
}

const char *gc_cufile_ret_str(ssize_t ret, int err_no, char *buf, size_t len)
{
	if (ret >= 0)
		snprintf(buf, len, "%zd bytes", ret);
	else if (ret == -1 && err_no > GC_CUFILE_BASE_ERR)
		snprintf(buf, len, "-1 (errno %d = %s: a cuFile status, not an errno)", err_no,
			 gc_cufile_err_name(err_no));
	else if (ret == -1)
		snprintf(buf, len, "-1 (errno %s: %s)", strerrorname_np(err_no) ?: "?",
			 strerror(err_no));
	else
		snprintf(buf, len, "%zd (%s)", ret, gc_cufile_err_name((int)-ret));
	return buf;
}

bool gc_cufile_ret_documented(ssize_t ret, int err_no)
{
	if (ret >= 0)
		return true;
	if (ret == -1)
		return err_no > 0 && err_no < 4096;
	return ret >= -INT32_MAX && strncmp(gc_cufile_err_name((int)-ret), "CU_FILE_", 8) == 0 &&
	       -ret > GC_CUFILE_BASE_ERR;
}

const char *gc_cufile_version_str(int version, char *buf, size_t len)
{
	if (version < 0)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%d.%d", version / 1000, (version % 1000) / 10);
	return buf;
}

int gc_cufile_stats_enable(const struct gc_cufile *cf, char *why, size_t why_len)
{
	char eb[96];
	gc_cufile_err e;

	if (!cf->fn.set_stats_level || !cf->fn.stats_start || !cf->fn.get_stats_l3) {
		snprintf(why, why_len, "%s has no level-3 statistics API", cf->soname);
		return -ENOSYS;
	}
	e = cf->fn.set_stats_level(3);
	if (e.err == 0)
		e = cf->fn.stats_start();
	if (e.err != 0) {
		snprintf(why, why_len, "statistics refused: %s",
			 gc_cufile_strerror(e, eb, sizeof(eb)));
		return -EIO;
	}
	return 0;
}

int gc_cufile_paths_get(const struct gc_cufile *cf, enum gc_cufile_dir dir,
			struct gc_cufile_paths *p)
{
	gc_cufile_stats_l3 *st; /* 5 KiB: not on a test thread's stack */
	int r = 0;

	memset(p, 0, sizeof(*p));
	if (!cf->fn.get_stats_l3)
		return -ENOSYS;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	if (cf->fn.get_stats_l3(st).err != 0)
		r = -EIO;
	for (uint32_t g = 0; r == 0 && g < st->num_gpus && g < GC_CUFILE_MAX_GPUS; g++) {
		const gc_cufile_gpu_stats *s = &st->per_gpu[g];

		p->nvfs += dir == GC_CUFILE_READS ? s->n_nvfs_reads : s->n_nvfs_writes;
		p->p2p += dir == GC_CUFILE_READS ? s->n_p2p_reads : s->n_p2p_writes;
		p->posix += dir == GC_CUFILE_READS ? s->n_posix_reads : s->n_posix_writes;
	}
	free(st);
	return r;
}

const char *gc_cufile_paths_diff_str(const struct gc_cufile_paths *before,
				     const struct gc_cufile_paths *after, char *buf, size_t len)
{
	uint64_t nvfs = after->nvfs - before->nvfs, p2p = after->p2p - before->p2p;
	uint64_t posix = after->posix - before->posix;
	int kinds = (nvfs > 0) + (p2p > 0) + (posix > 0);

	if (kinds == 0)
		snprintf(buf, len, "none counted");
	else if (kinds > 1)
		snprintf(buf, len, "mixed: %llu nvidia-fs, %llu p2pdma, %llu posix",
			 (unsigned long long)nvfs, (unsigned long long)p2p,
			 (unsigned long long)posix);
	else
		snprintf(buf, len, "%s", nvfs ? "nvidia-fs" : p2p ? "p2pdma" : "posix (compat)");
	return buf;
}

const char *gc_cufile_mode_str(const struct gc_cufile *cf, char *buf, size_t len)
{
	bool nvfs = access("/proc/driver/nvidia-fs/version", F_OK) == 0;
	gc_cufile_props props;
	const char *compat = "compat flag unknown";

	memset(&props, 0, sizeof(props));
	if (cf->fn.driver_get_properties && cf->fn.driver_get_properties(&props).err == 0)
		compat = props.nvfs.dcontrolflags & (1u << GC_CU_FILE_ALLOW_COMPAT_MODE_BIT) ?
				 "compat mode allowed" :
				 "compat mode not allowed";
	snprintf(buf, len, "%s; %s",
		 nvfs ? "nvidia-fs loaded (GPU-direct possible)" :
			"nvidia-fs not loaded (/proc/driver/nvidia-fs absent): compat mode only",
		 compat);
	return buf;
}
