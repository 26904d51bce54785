/* SPDX-License-Identifier: MIT */
/*
 * The part of the cuFile C ABI gpuconform calls, declared in our own names
 * from the cuFile API reference (libcufile 1.x, CUDA 12/13): error struct,
 * file descriptor description, batch parameters and events, level-3
 * statistics. Only what the suite uses; opaque padding where a structure
 * holds fields we never read. tests/unit/test_cufile_abi.c checks every
 * size, offset and constant here against <cufile.h> wherever that header is
 * installed (the device machines), so a drift fails a unit test instead of
 * corrupting memory.
 */
#ifndef GPUCONFORM_GC_CUFILE_ABI_H
#define GPUCONFORM_GC_CUFILE_ABI_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* CUfileError_t: a cuFile status and, for CU_FILE_CUDA_DRIVER_ERROR, the CUresult. */
typedef struct {
	int err;     /* CUfileOpError: 0 or GC_CUFILE_BASE_ERR + n */
	CUresult cu_err;
} gc_cufile_err;

#define GC_CUFILE_BASE_ERR 5000
enum {
	GC_CU_FILE_SUCCESS = 0,
	GC_CU_FILE_DRIVER_NOT_INITIALIZED = 5001,
	GC_CU_FILE_CUDA_DRIVER_ERROR = 5011,
	GC_CU_FILE_CUDA_POINTER_INVALID = 5012,
	GC_CU_FILE_CUDA_MEMORY_TYPE_INVALID = 5013,
	GC_CU_FILE_CUDA_POINTER_RANGE_ERROR = 5014,
	GC_CU_FILE_INVALID_FILE_TYPE = 5018,
	GC_CU_FILE_INVALID_FILE_OPEN_FLAG = 5019,
	GC_CU_FILE_DIO_NOT_SET = 5020,
	GC_CU_FILE_INVALID_VALUE = 5022,
	GC_CU_FILE_MEMORY_ALREADY_REGISTERED = 5023,
	GC_CU_FILE_MEMORY_NOT_REGISTERED = 5024,
	GC_CU_FILE_DRIVER_ALREADY_OPEN = 5026,
	GC_CU_FILE_HANDLE_NOT_REGISTERED = 5027,
	GC_CU_FILE_HANDLE_ALREADY_REGISTERED = 5028,
	GC_CU_FILE_BATCH_SUBMIT_FAILED = 5035,
	GC_CU_FILE_BATCH_NOCOMPAT_ERROR = 5049,
};

/* CUfileDescr_t with CU_FILE_HANDLE_TYPE_OPAQUE_FD. */
#define GC_CU_FILE_HANDLE_TYPE_OPAQUE_FD 1
typedef struct {
	int type;
	union {
		int fd;
		void *handle;
	} handle;
	const void *fs_ops; /* NULL: the library discovers the filesystem */
} gc_cufile_descr;

/*
 * CUfileDrvProps_t: nvfs.dcontrolflags bit 1 is set when compat mode is
 * allowed (CU_FILE_ALLOW_COMPAT_MODE = 1, `allow COMPATIBILITY mode.
 * properties.allow_compat_mode` [src denglin-github/cuda11_cudnn8
 * include/cufile.h @ 20c191daf9a2]).
 */
#define GC_CU_FILE_ALLOW_COMPAT_MODE_BIT 1
typedef struct {
	struct {
		unsigned int major_version;
		unsigned int minor_version;
		size_t poll_thresh_size;
		size_t max_direct_io_size;
		unsigned int dstatusflags;
		unsigned int dcontrolflags;
	} nvfs;
	unsigned int fflags;
	unsigned int max_device_cache_size;
	unsigned int per_buffer_cache_size;
	unsigned int max_device_pinned_mem_size;
	unsigned int max_batch_io_size;
	unsigned int max_batch_io_timeout_msecs;
} gc_cufile_props;

/* Batch I/O: CUfileIOParams_t, CUfileIOEvents_t. */
enum { GC_CUFILE_READ = 0, GC_CUFILE_WRITE = 1 };
enum { GC_CUFILE_BATCH = 1 };
enum {
	GC_CUFILE_WAITING = 0x01,
	GC_CUFILE_PENDING = 0x02,
	GC_CUFILE_INVALID = 0x04,
	GC_CUFILE_CANCELED = 0x08,
	GC_CUFILE_COMPLETE = 0x10,
	GC_CUFILE_TIMEOUT = 0x20,
	GC_CUFILE_FAILED = 0x40,
};
typedef struct {
	int mode; /* GC_CUFILE_BATCH */
	union {
		struct {
			void *dev_ptr_base;
			off_t file_offset;
			off_t dev_ptr_offset;
			size_t size;
		} batch;
	} u;
	void *fh;
	int opcode;
	void *cookie;
} gc_cufile_io_params;

typedef struct {
	void *cookie;
	int status;
	size_t ret; /* bytes done, or a negative error stored in a size_t */
} gc_cufile_io_event;

/* Level-3 statistics: only the per-GPU path counters are read. */
#define GC_CUFILE_STATS_L1_BYTES 512  /* CUfileStatsLevel1_t: 64 counters */
#define GC_CUFILE_STATS_L2_BYTES 1024 /* level 1 + two 32-entry histograms */
#define GC_CUFILE_MAX_GPUS 16
typedef struct {
	char uuid[16];
	uint64_t read_bytes, read_bw, read_util, read_duration_us;
	uint64_t n_total_reads, n_p2p_reads, n_nvfs_reads, n_posix_reads;
	uint64_t n_unaligned_reads, n_dr_reads, n_sparse_regions, n_inline_regions;
	uint64_t n_reads_err;
	uint64_t write_bytes, write_bw, write_util, write_duration_us;
	uint64_t n_total_writes, n_p2p_writes, n_nvfs_writes, n_posix_writes;
	uint64_t n_unaligned_writes, n_dr_writes, n_writes_err;
	uint64_t n_mmap, n_mmap_ok, n_mmap_err, n_mmap_free, reg_bytes;
} gc_cufile_gpu_stats;

typedef struct {
	unsigned char level2[GC_CUFILE_STATS_L2_BYTES];
	uint32_t num_gpus;
	gc_cufile_gpu_stats per_gpu[GC_CUFILE_MAX_GPUS];
} gc_cufile_stats_l3;

/* Entry point types. */
typedef gc_cufile_err gc_cufile_void_fn(void);
typedef long gc_cufile_use_count_fn(void);
typedef gc_cufile_err gc_cufile_get_version_fn(int *version);
typedef gc_cufile_err gc_cufile_props_fn(gc_cufile_props *props);
typedef gc_cufile_err gc_cufile_handle_register_fn(void **fh, gc_cufile_descr *descr);
typedef void gc_cufile_handle_deregister_fn(void *fh);
typedef gc_cufile_err gc_cufile_buf_register_fn(const void *base, size_t len, int flags);
typedef gc_cufile_err gc_cufile_buf_deregister_fn(const void *base);
typedef ssize_t gc_cufile_read_fn(void *fh, void *base, size_t size, off_t file_off,
				  off_t buf_off);
typedef ssize_t gc_cufile_write_fn(void *fh, const void *base, size_t size, off_t file_off,
				   off_t buf_off);
typedef gc_cufile_err gc_cufile_batch_setup_fn(void **batch, unsigned int nr);
typedef gc_cufile_err gc_cufile_batch_submit_fn(void *batch, unsigned int nr,
						gc_cufile_io_params *io, unsigned int flags);
typedef gc_cufile_err gc_cufile_batch_status_fn(void *batch, unsigned int min_nr,
						unsigned int *nr, gc_cufile_io_event *ev,
						struct timespec *timeout);
typedef gc_cufile_err gc_cufile_batch_cancel_fn(void *batch);
typedef void gc_cufile_batch_destroy_fn(void *batch);
typedef gc_cufile_err gc_cufile_async_fn(void *fh, void *base, size_t *size, off_t *file_off,
					 off_t *buf_off, ssize_t *done, CUstream stream);
typedef gc_cufile_err gc_cufile_stream_register_fn(CUstream stream, unsigned int flags);
typedef gc_cufile_err gc_cufile_stream_deregister_fn(CUstream stream);
typedef gc_cufile_err gc_cufile_set_stats_level_fn(int level);
typedef gc_cufile_err gc_cufile_get_stats_l3_fn(gc_cufile_stats_l3 *stats);

#endif
