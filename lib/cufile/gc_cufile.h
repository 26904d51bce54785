/* SPDX-License-Identifier: MIT */
/*
 * NVIDIA cuFile (GPUDirect Storage) helpers. libcufile is opened at run time
 * (dlopen), so cufile_io builds wherever <cuda.h> is (CI has no <cufile.h>:
 * no Debian package ships it) and skips with the loader's words where the
 * library is missing. The declarations the suite uses are in
 * gc_cufile_abi.h, in our own names; on a machine with <cufile.h> the unit
 * test unit_cufile_abi checks every size, offset and constant against it.
 *
 *     struct gc_cufile cf;
 *     char why[256];
 *     if (gc_cufile_open(&cf, why, sizeof(why)) < 0)
 *             gc_skip(as_is, why);           // as_is: the format `%s`
 *     gc_cufile_err e = cf.fn.driver_open();
 *
 * Which path served a request: with statistics at level 3 the library counts,
 * per GPU, reads and writes served by nvidia-fs, PCI P2PDMA and POSIX (the
 * compat path through host bounce buffers). gc_cufile_path_* reads those
 * counters before and after a request; where statistics are not available it
 * says that it cannot tell, and why.
 */
#ifndef GPUCONFORM_GC_CUFILE_H
#define GPUCONFORM_GC_CUFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc_cufile_abi.h"

/*
 * The entry points: X(member, symbol, type, required). symbol is the name
 * the library exports (cufile.h maps cuFileDriverClose to ..._v2).
 */
#define GC_CUFILE_FUNCS(X)                                                               \
	X(driver_open, "cuFileDriverOpen", gc_cufile_void_fn, true)                       \
	X(driver_close, "cuFileDriverClose_v2", gc_cufile_void_fn, true)                  \
	X(use_count, "cuFileUseCount", gc_cufile_use_count_fn, false)                     \
	X(get_version, "cuFileGetVersion", gc_cufile_get_version_fn, false)               \
	X(driver_get_properties, "cuFileDriverGetProperties", gc_cufile_props_fn, false)   \
	X(handle_register, "cuFileHandleRegister", gc_cufile_handle_register_fn, true)    \
	X(handle_deregister, "cuFileHandleDeregister", gc_cufile_handle_deregister_fn, true) \
	X(buf_register, "cuFileBufRegister", gc_cufile_buf_register_fn, true)             \
	X(buf_deregister, "cuFileBufDeregister", gc_cufile_buf_deregister_fn, true)       \
	X(read, "cuFileRead", gc_cufile_read_fn, true)                                    \
	X(write, "cuFileWrite", gc_cufile_write_fn, true)                                 \
	X(batch_setup, "cuFileBatchIOSetUp", gc_cufile_batch_setup_fn, false)             \
	X(batch_submit, "cuFileBatchIOSubmit", gc_cufile_batch_submit_fn, false)          \
	X(batch_get_status, "cuFileBatchIOGetStatus", gc_cufile_batch_status_fn, false)   \
	X(batch_cancel, "cuFileBatchIOCancel", gc_cufile_batch_cancel_fn, false)          \
	X(batch_destroy, "cuFileBatchIODestroy", gc_cufile_batch_destroy_fn, false)       \
	X(read_async, "cuFileReadAsync", gc_cufile_async_fn, false)                       \
	X(write_async, "cuFileWriteAsync", gc_cufile_async_fn, false)                     \
	X(stream_register, "cuFileStreamRegister", gc_cufile_stream_register_fn, false)   \
	X(stream_deregister, "cuFileStreamDeregister", gc_cufile_stream_deregister_fn, false) \
	X(set_stats_level, "cuFileSetStatsLevel", gc_cufile_set_stats_level_fn, false)    \
	X(stats_start, "cuFileStatsStart", gc_cufile_void_fn, false)                      \
	X(stats_reset, "cuFileStatsReset", gc_cufile_void_fn, false)                      \
	X(get_stats_l3, "cuFileGetStatsL3", gc_cufile_get_stats_l3_fn, false)

struct gc_cufile_fns {
#define GC_CUFILE_MEMBER(member, symbol, type, required) type *member;
	GC_CUFILE_FUNCS(GC_CUFILE_MEMBER)
#undef GC_CUFILE_MEMBER
};

struct gc_cufile {
	void *lib;
	char soname[64];  /* the name dlopen() succeeded with */
	int version;      /* cuFileGetVersion(): 1000 * major + 10 * minor; -1 unknown */
	struct gc_cufile_fns fn;
};

/*
 * dlopen libcufile.so.0 (then libcufile.so) and resolve the table. -ENOENT
 * with dlerror()'s words when no library loads; -ENOSYS naming the first
 * missing required symbol (optional ones are left NULL). Never exits.
 */
int gc_cufile_open(struct gc_cufile *cf, char *why, size_t why_len);
void gc_cufile_close(struct gc_cufile *cf);

/* `CU_FILE_HANDLE_NOT_REGISTERED (5027, file descriptor is not registered)`. */
const char *gc_cufile_err_name(int err);
const char *gc_cufile_strerror(gc_cufile_err e, char *buf, size_t len);
/*
 * What a cuFileRead/Write return value means: `4096 bytes`, `-1 (errno EBADF:
 * Bad file descriptor)` (errno as the call left it: pass it in) or `-5022
 * (CU_FILE_INVALID_VALUE ...)`.
 */
const char *gc_cufile_ret_str(ssize_t ret, int err_no, char *buf, size_t len);

/*
 * Whether a failed cuFileRead/Write (ret < 0) follows cufile.h's return
 * convention, "[...] -1 on error, in which case errno is set to indicate
 * filesystem errors." (a real errno, below 4096) and "[...] all other
 * errors will return a negative integer value of @ref CUfileOpError enum
 * value." (a known status) [src denglin-github/cuda11_cudnn8
 * include/cufile.h @ 20c191daf9a2] (a copy of the CUDA 11 toolkit's header, of 2020: no newer
 * cufile.h is stored in a repository; NVIDIA's cuFile API reference of
 * today gives the same convention in slightly other words). -1 with a
 * cuFile status in errno is neither. Pure.
 */
bool gc_cufile_ret_documented(ssize_t ret, int err_no);

/* `1.15` from 1150; `unknown` for -1. */
const char *gc_cufile_version_str(int version, char *buf, size_t len);

/* -------------------------------------------------- which path served */

struct gc_cufile_paths {
	uint64_t nvfs, p2p, posix;   /* reads (or writes) per path, all GPUs */
};
enum gc_cufile_dir { GC_CUFILE_READS, GC_CUFILE_WRITES };

/*
 * Turn level-3 statistics on (cuFileSetStatsLevel(3) + cuFileStatsStart).
 * 0, -ENOSYS (entry points missing) or -EIO with why[] naming the error.
 */
int gc_cufile_stats_enable(const struct gc_cufile *cf, char *why, size_t why_len);
/* Current per-path counters for dir, summed over GPUs. 0 or -EIO/-ENOSYS. */
int gc_cufile_paths_get(const struct gc_cufile *cf, enum gc_cufile_dir dir,
			struct gc_cufile_paths *p);
/*
 * The path between two snapshots: `nvidia-fs`, `p2pdma`, `posix (compat)`,
 * `mixed: 3 nvidia-fs, 1 posix` or `none counted` (pure: unit-tested).
 */
const char *gc_cufile_paths_diff_str(const struct gc_cufile_paths *before,
				     const struct gc_cufile_paths *after, char *buf, size_t len);

/*
 * Why compat mode, as the system shows it: nvidia-fs loaded or not
 * (/proc/driver/nvidia-fs/version), and the driver properties' compat flag.
 */
const char *gc_cufile_mode_str(const struct gc_cufile *cf, char *buf, size_t len);

#endif
