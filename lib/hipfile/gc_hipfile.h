/* SPDX-License-Identifier: MIT */
/*
 * AMD GPU-direct file I/O (`fastpath`) helpers. Every entry point is found at
 * run time, so hipfile_io builds against Debian 12's ROCm 5.2.3 (which has
 * none of them) and skips naming the missing symbol and the runtime version.
 *
 * UNVERIFIED ON HARDWARE: nothing of this was run on an AMD GPU. The
 * declarations below follow the sources and documents named here; the test
 * binary has been seen skipping (no /dev/kfd, HIP 5.2.3), and its own logic
 * was exercised against a host-memory stand-in for the three libraries
 * (pread / pwrite and malloc; kept out of the tree: no mock device here).
 *
 * Three entry points (our `entries`):
 *  - hipFile (libhipfile.so.0): the cuFile-like library. Registers files
 *    and buffers, picks a backend per request (fastpath through the HIP
 *    runtime, or a fallback that bounces through host memory with pread /
 *    pwrite + hipMemcpy), and retries a fastpath ENODEV / EREMOTEIO on the
 *    fallback.
 *  - hipAmdFileRead / hipAmdFileWrite: the HIP runtime's GPU-direct calls
 *    (what hipFile's fastpath calls). No fallback: a success is GPU-direct.
 *  - hsa_amd_ais_file_read / _write: the ROCr (HSA) calls below them.
 *
 * Where each declaration was taken from (restated in our own names; declared
 * here only as far as gpuconform calls it):
 *  - hipAmdFileRead / hipAmdFileWrite: the ROCm 7.x HIP runtime (clr, hipamd
 *    include/hip/amd_detail/hip_storage.h [src ROCm/clr
 *    hipamd/include/hip/amd_detail/hip_storage.h @ 0c33dfa05b54]). That header is not one of the
 *    public hip_runtime_api.h declarations: hipFile itself (src/amd_detail/
 *    hip.cpp) looks both up with hipGetProcAddress, and so do we, with dlsym
 *    as the second try. Signature: a file handle passed by value (8 bytes: a
 *    union of a void *, the int fd used on Linux, and padding), the device
 *    pointer, size (uint64_t), file offset (int64_t), then two out-pointers:
 *    bytes copied (uint64_t) and an extra status (int32_t, the KFD ioctl's
 *    result); returns hipError_t.
 *  - hipGetProcAddress: hip_runtime_api.h of HIP 6.x / 7.x: (symbol name,
 *    void **out, int HIP version, uint64_t flags with 0 the default, optional
 *    out status: 0 found, 1 symbol not found, 2 version not sufficient).
 *    Debian 12's HIP 5.2.3 neither declares nor exports it: there the lookup
 *    is dlsym only, and the skip reason says so. Like hipFile and the HIP
 *    tests, we pass hipRuntimeGetVersion()'s value as the version.
 *  - hsa_amd_ais_file_read / _write: hsa_ext_amd.h of ROCr in
 *    ROCm/rocm-systems (ROCm 7.x): the same six arguments with
 *    hsa_amd_ais_file_handle_t (the same 8-byte union) and an hsa_status_t
 *    result. Found with dlsym in libhsa-runtime64.so.1 after hsa_init().
 *  - hipFile: include/hipfile.h of ROCm/rocm-systems projects/hipfile, library
 *    version 0.2.0 (ROCm >= 7.2; soname libhipfile.so.0) [src ROCm/rocm-systems
 *    projects/hipfile/include/hipfile.h @ 50391dc3c770]: the error pair
 *    hipFileError_t { hipFileOpError_t err; hipError_t hip_drv_err; }, op
 *    errors at 5000 + n, the fd descriptor hipFileDescr_t, the opaque
 *    hipFileHandle_t, driver open / close / use count, handle and buffer
 *    (de)registration, hipFileRead / hipFileWrite (ssize_t: bytes, -1 with
 *    errno, or the negated op error), hipFileGetVersion, the batch API
 *    (hipFileIOParams_t / hipFileIOEvents_t, statuses as bit flags; its API
 *    reference: "Batch IO is not yet supported on AMD backends in the
 *    current release." [src ROCm/rocm-systems
 *    projects/hipfile/docs/reference/api-batch-io.rst @ 5b50b9d9ea8b]),
 *    the stream-ordered hipFileReadAsync / WriteAsync (size, offsets and the
 *    result passed by pointer; "Calls to the functions documented on this
 *    page return the error code `hipFileAsyncNotSupported`." [src
 *    ROCm/rocm-systems projects/hipfile/docs/reference/api-async-io.rst @
 *    5b50b9d9ea8b]) and hipFileStreamRegister.
 *  - the runtime calls (hipMalloc, hipMemcpy, ...): Debian 12's
 *    <hip/hip_runtime_api.h> (HIP 5.2.3); what we call keeps those
 *    prototypes in HIP 6.x and 7.x as far as their headers show (hipFile's
 *    own hip.cpp calls the same ones).
 *
 * Why dlopen and not hip_dep: linking would record libamdhip64.so.5 (Debian's
 * soname) as NEEDED, and the binary would then not start at all on a machine
 * without it, nor on ROCm 6.x / 7.x (libamdhip64.so.6 / .7): exactly the
 * runtimes that have the fastpath. Opened at run time, it starts everywhere
 * and skips with the loader's own words. The runtime is lib/hip's (one table,
 * one loader: gc_hip_load()). hipFile is opened first: when it loads, the
 * libamdhip64 it pulled in is the one used, so that a process never holds two
 * HIP runtimes.
 *
 * Which path served a request: hipAmdFile* and hsa_amd_ais_file_* have no
 * fallback, so a success is GPU-direct. hipFile can route a request either
 * way and its public API (hipfile.h 0.2) has no per-request query; its
 * per-backend counters are only readable through the internal statistics
 * interface its ais-stats tool uses. So for hipFile we say `cannot tell`,
 * unless HIPFILE_FORCE_COMPAT_MODE forces every request to the fallback, and
 * we add what its documented fastpath rules predict.
 */
#ifndef GPUCONFORM_GC_HIPFILE_H
#define GPUCONFORM_GC_HIPFILE_H

#include <hip/hip_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core.h"
#include "gc_hip.h"
#include "io.h"

/* --------------------------------------------------- the entries' ABI */

/* hipAmdFileHandle_t and hsa_amd_ais_file_handle_t: the same 8 bytes. */
typedef struct {
	union {
		void *handle;
		int fd;
		uint8_t pad[8];
	};
} gc_amd_file_handle;

typedef hipError_t gc_hip_amd_file_io_fn(gc_amd_file_handle handle, void *device_ptr,
					 uint64_t size, int64_t file_offset,
					 uint64_t *size_copied, int32_t *status);

/* hsa_status_t values (hsa.h); our own copy: hsa.h is optional at build time. */
typedef int gc_hsa_status;
enum {
	GC_HSA_STATUS_SUCCESS = 0,
	GC_HSA_STATUS_ERROR = 0x1000,
	GC_HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001,
	GC_HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008,
	GC_HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B,
};
typedef gc_hsa_status gc_hsa_ais_io_fn(gc_amd_file_handle handle, void *device_ptr,
				       uint64_t size, int64_t file_offset,
				       uint64_t *size_copied, int32_t *status);
typedef gc_hsa_status gc_hsa_void_fn(void);
typedef gc_hsa_status gc_hsa_status_string_fn(gc_hsa_status status, const char **text);

/* ------------------------------------------------------------ hipFile ABI */

typedef struct {
	int err;                /* hipFileOpError_t: 0 or GC_HIPFILE_BASE_ERR + n */
	hipError_t hip_drv_err; /* for GC_HIPFILE_HIP_DRIVER_ERROR */
} gc_hipfile_err;

#define GC_HIPFILE_BASE_ERR 5000
enum {
	GC_HIPFILE_SUCCESS = 0,
	GC_HIPFILE_DRIVER_NOT_INITIALIZED = 5001,
	GC_HIPFILE_DRIVER_CLOSING = 5006,
	GC_HIPFILE_PLATFORM_NOT_SUPPORTED = 5007,
	GC_HIPFILE_IO_NOT_SUPPORTED = 5008,
	GC_HIPFILE_DEVICE_NOT_SUPPORTED = 5009,
	GC_HIPFILE_HIP_DRIVER_ERROR = 5011,
	GC_HIPFILE_HIP_POINTER_INVALID = 5012,
	GC_HIPFILE_HIP_MEMORY_TYPE_INVALID = 5013,
	GC_HIPFILE_HIP_POINTER_RANGE_ERROR = 5014,
	GC_HIPFILE_INVALID_MAPPING_SIZE = 5016,
	GC_HIPFILE_INVALID_MAPPING_RANGE = 5017,
	GC_HIPFILE_INVALID_FILE_TYPE = 5018,
	GC_HIPFILE_INVALID_FILE_OPEN_FLAG = 5019,
	GC_HIPFILE_DIO_NOT_SET = 5020,
	GC_HIPFILE_INVALID_VALUE = 5022,
	GC_HIPFILE_MEMORY_ALREADY_REGISTERED = 5023,
	GC_HIPFILE_MEMORY_NOT_REGISTERED = 5024,
	GC_HIPFILE_PERMISSION_DENIED = 5025,
	GC_HIPFILE_DRIVER_ALREADY_OPEN = 5026,
	GC_HIPFILE_HANDLE_NOT_REGISTERED = 5027,
	GC_HIPFILE_HANDLE_ALREADY_REGISTERED = 5028,
	GC_HIPFILE_INTERNAL_ERROR = 5030,
	GC_HIPFILE_BATCH_FULL = 5037,
	GC_HIPFILE_ASYNC_NOT_SUPPORTED = 5038,
};

#define GC_HIPFILE_HANDLE_TYPE_OPAQUE_FD 1
typedef struct {
	int type;
	union {
		int fd;
		void *hfile;
	} handle;
	const void *fs_ops; /* NULL: the library looks at the fd itself */
} gc_hipfile_descr;
typedef void *gc_hipfile_handle;

/* Batch: the read opcode, final statuses (bit flags), one request, one completion. */
enum { GC_HIPFILE_BATCH_READ = 0 };
enum {
	GC_HIPFILE_ST_INVALID = 1 << 2,
	GC_HIPFILE_ST_CANCELED = 1 << 3,
	GC_HIPFILE_ST_COMPLETE = 1 << 4,
	GC_HIPFILE_ST_TIMEOUT = 1 << 5,
	GC_HIPFILE_ST_FAILED = 1 << 6,
};
#define GC_HIPFILE_BATCH_MODE 1
typedef struct {
	int mode;
	union {
		struct {
			void *dev_base;
			int64_t file_offset;
			int64_t dev_offset;
			size_t size;
		} batch;
	} u;
	gc_hipfile_handle fh;
	int opcode;
	void *cookie;
} gc_hipfile_io_params;
typedef struct {
	void *cookie;
	int status;
	size_t ret; /* bytes when complete; a negated error (as ssize_t) when failed */
} gc_hipfile_io_events;
typedef void *gc_hipfile_batch;

typedef gc_hipfile_err gc_hipfile_void_fn(void);
typedef int64_t gc_hipfile_use_count_fn(void);
typedef gc_hipfile_err gc_hipfile_handle_register_fn(gc_hipfile_handle *fh, gc_hipfile_descr *d);
typedef void gc_hipfile_handle_deregister_fn(gc_hipfile_handle fh);
typedef gc_hipfile_err gc_hipfile_buf_register_fn(const void *base, size_t len, int flags);
typedef gc_hipfile_err gc_hipfile_buf_deregister_fn(const void *base);
typedef ssize_t gc_hipfile_read_fn(gc_hipfile_handle fh, void *base, size_t size,
				   off_t file_offset, off_t buffer_offset);
typedef ssize_t gc_hipfile_write_fn(gc_hipfile_handle fh, const void *base, size_t size,
				    off_t file_offset, off_t buffer_offset);
typedef gc_hipfile_err gc_hipfile_get_version_fn(unsigned *major, unsigned *minor,
						 unsigned *patch);
typedef const char *gc_hipfile_op_error_string_fn(int err);
typedef gc_hipfile_err gc_hipfile_batch_setup_fn(gc_hipfile_batch *b, unsigned max_nr);
typedef gc_hipfile_err gc_hipfile_batch_submit_fn(gc_hipfile_batch b, unsigned nr,
						  gc_hipfile_io_params *io, unsigned flags);
typedef gc_hipfile_err gc_hipfile_batch_status_fn(gc_hipfile_batch b, unsigned min_nr,
						  unsigned *nr, gc_hipfile_io_events *ev,
						  struct timespec *timeout);
typedef void gc_hipfile_batch_destroy_fn(gc_hipfile_batch b);
typedef gc_hipfile_err gc_hipfile_async_fn(gc_hipfile_handle fh, void *base, size_t *size,
					   off_t *file_offset, off_t *buffer_offset,
					   ssize_t *bytes_done, hipStream_t stream);
typedef gc_hipfile_err gc_hipfile_stream_register_fn(hipStream_t stream, unsigned flags);
typedef gc_hipfile_err gc_hipfile_stream_deregister_fn(hipStream_t stream);

/* X(member, symbol, type, required) */
#define GC_HIPFILE_FUNCS(X)                                                                   \
	X(driver_open, "hipFileDriverOpen", gc_hipfile_void_fn, true)                          \
	X(driver_close, "hipFileDriverClose", gc_hipfile_void_fn, true)                        \
	X(use_count, "hipFileUseCount", gc_hipfile_use_count_fn, true)                         \
	X(handle_register, "hipFileHandleRegister", gc_hipfile_handle_register_fn, true)       \
	X(handle_deregister, "hipFileHandleDeregister", gc_hipfile_handle_deregister_fn, true) \
	X(buf_register, "hipFileBufRegister", gc_hipfile_buf_register_fn, true)                \
	X(buf_deregister, "hipFileBufDeregister", gc_hipfile_buf_deregister_fn, true)          \
	X(read, "hipFileRead", gc_hipfile_read_fn, true)                                       \
	X(write, "hipFileWrite", gc_hipfile_write_fn, true)                                    \
	X(get_version, "hipFileGetVersion", gc_hipfile_get_version_fn, false)                  \
	X(op_error_string, "hipFileGetOpErrorString", gc_hipfile_op_error_string_fn, false)    \
	X(batch_setup, "hipFileBatchIOSetUp", gc_hipfile_batch_setup_fn, false)                \
	X(batch_submit, "hipFileBatchIOSubmit", gc_hipfile_batch_submit_fn, false)             \
	X(batch_get_status, "hipFileBatchIOGetStatus", gc_hipfile_batch_status_fn, false)      \
	X(batch_destroy, "hipFileBatchIODestroy", gc_hipfile_batch_destroy_fn, false)          \
	X(read_async, "hipFileReadAsync", gc_hipfile_async_fn, false)                          \
	X(write_async, "hipFileWriteAsync", gc_hipfile_async_fn, false)                        \
	X(stream_register, "hipFileStreamRegister", gc_hipfile_stream_register_fn, false)      \
	X(stream_deregister, "hipFileStreamDeregister", gc_hipfile_stream_deregister_fn, false)

struct gc_hipfile_fns {
#define GC_HIPFILE_MEMBER(member, symbol, type, required) type *member;
	GC_HIPFILE_FUNCS(GC_HIPFILE_MEMBER)
#undef GC_HIPFILE_MEMBER
};

/* ----------------------------------------------------------- the handle */

enum gc_hf_entry {
	GC_HF_HIPFILE,      /* hipFileRead / hipFileWrite */
	GC_HF_HIP_AMD_FILE, /* hipAmdFileRead / hipAmdFileWrite */
	GC_HF_HSA_AIS,      /* hsa_amd_ais_file_read / _write */
	GC_HF_N_ENTRIES,
};

struct gc_hf_backend {
	bool found;
	char how[64];  /* `hipGetProcAddress`, `dlsym`, `libhipfile.so.0 0.2.0` */
	char why[384]; /* when not found: the missing symbol, where, the runtime version */
	char missing[64]; /* when not found: the symbol or library missing, alone */
};

struct gc_hipfile {
	struct gc_hip *hip; /* the HIP runtime (lib/hip's table); NULL until loaded */
	int n_devices;
	gc_hip_amd_file_io_fn *amd_file_read, *amd_file_write;

	void *hsa_lib;
	bool hsa_inited;
	gc_hsa_void_fn *hsa_init, *hsa_shut_down;
	gc_hsa_status_string_fn *hsa_status_string;
	gc_hsa_ais_io_fn *ais_read, *ais_write;

	void *hf_lib;
	char hf_soname[32];
	unsigned hf_version[3]; /* hipFileGetVersion(); all 0 when unknown */
	struct gc_hipfile_fns hf;

	struct gc_hf_backend backend[GC_HF_N_ENTRIES];
};

/*
 * Load hipFile (when there is one), then the HIP runtime with lib/hip's
 * gc_hip_load() (the libamdhip64 hipFile pulled in, else libamdhip64.so,
 * .so.7, .so.6, .so.5) needing the runtime calls hipfile_io makes; find the
 * three entries (a missing one is recorded in h->backend[], never an error)
 * and count devices. 0; -ENOENT (no runtime: dlerror()'s words in why[]);
 * -ENOSYS (a runtime call missing); -ENODEV (`hipGetDeviceCount: no
 * ROCm-capable device (hipErrorNoDevice)`); -EIO (another runtime error).
 * After -ENODEV or -EIO h->hip is set and the backend records are filled and
 * may be printed. gc_hipfile_close() always.
 */
int gc_hipfile_open(struct gc_hipfile *h, char *why, size_t why_len);
void gc_hipfile_close(struct gc_hipfile *h);

/* `HSA_STATUS_ERROR_INVALID_ARGUMENT ...` via hsa_status_string, or `hsa_status_t 0x1001`. */
const char *gc_hsa_strerror(const struct gc_hipfile *h, gc_hsa_status s, char *buf, size_t len);
/* `hipFileHandleNotRegistered (5027)` (+ the library's text when it has one). */
const char *gc_hipfile_err_name(int err);
const char *gc_hipfile_strerror(const struct gc_hipfile *h, gc_hipfile_err e, char *buf,
				size_t len);

/* `hipFile`, `hipAmdFile`, `hsa_amd_ais_file`. */
const char *gc_hf_entry_name(enum gc_hf_entry e);
/* `hipFileRead`, `hipAmdFileWrite`, `hsa_amd_ais_file_read`... */
const char *gc_hf_entry_symbol(enum gc_hf_entry e, bool write);

/* One-line summary of every backend (found how / why not), for gc_info. */
const char *gc_hf_backend_str(const struct gc_hipfile *h, enum gc_hf_entry e, char *buf,
			      size_t len);

/* ------------------------------------------------------------- requests */

struct gc_hf_req {
	enum gc_hf_entry entry;
	bool write;
	int fd;                /* raw entries: the descriptor (hipFile: unused) */
	gc_hipfile_handle fh;  /* hipFile: the registered handle */
	void *base;            /* hipFile: buffer_base; raw: the device pointer is base + buf_off */
	int64_t buf_off;
	uint64_t size;
	int64_t file_off;
};

/* Left in the out-arguments of a raw call, to see whether it wrote them. */
#define GC_HF_UNTOUCHED64 0xdeadbeefcafef00dull
#define GC_HF_UNTOUCHED32 ((int32_t)0x5eedf00d)

struct gc_hf_res {
	int64_t n;       /* bytes (>= 0) or -errno, as gc_hf_errno() maps the call's result */
	int64_t ret;     /* what the call returned: hipError_t, hsa_status_t, or the ssize_t */
	int err_no;      /* errno right after the call */
	uint64_t copied; /* raw: *size_copied (GC_HF_UNTOUCHED64 if left alone) */
	int32_t status;  /* raw: *status (GC_HF_UNTOUCHED32 if left alone) */
};

/* Make the call; the result is also res->n. The entry must be found. */
int64_t gc_hf_io(const struct gc_hipfile *h, const struct gc_hf_req *r, struct gc_hf_res *res);

/*
 * Pure: errno-style result of one call (unit-tested).
 * raw (hipAmdFile* / hsa_amd_ais_*): native 0 -> *size_copied, or -EPROTO
 *   when a size > 0 succeeded without setting it, or -abs(status) when the
 *   status says otherwise; native error -> -abs(status) when set and
 *   nonzero, -ENOTTY when errno is ENOTTY (a KFD without the AIS ioctl),
 *   else the native code mapped (invalid value -> EINVAL, out of memory ->
 *   ENOMEM, invalid device / not initialized -> ENODEV, else EIO).
 * hipFile: >= 0 bytes; -1 -> -errno; -(5000 + n) -> the op error mapped;
 *   another negative value (a hipError_t) -> -EIO.
 */
int64_t gc_hf_errno(enum gc_hf_entry e, const struct gc_hf_res *res, uint64_t size);
int gc_hipfile_op_errno(int op_err);
/* 0 or the errno of a hipFile error pair (op error mapped; a HIP error -> EIO). */
int gc_hipfile_err_errno(gc_hipfile_err e);

/* `4096 bytes`, `-EINVAL (hipAmdFileRead: hipErrorUnknown, status -22, copied untouched)`. */
const char *gc_hf_res_str(const struct gc_hipfile *h, const struct gc_hf_req *r,
			  const struct gc_hf_res *res, char *buf, size_t len);

/* ----------------------------------------------------- which path served */

enum gc_hf_path {
	GC_HF_PATH_NONE,        /* the call failed: nothing served it */
	GC_HF_PATH_GPU_DIRECT,
	GC_HF_PATH_FALLBACK,    /* bounce through host memory */
	GC_HF_PATH_CANNOT_TELL,
};
const char *gc_hf_path_name(enum gc_hf_path p);

/*
 * Which path served a request that returned res (pure: unit-tested).
 * force_compat is the value of `HIPFILE_FORCE_COMPAT_MODE` in the
 * environment (NULL when unset). why[]
 * says how we know, or why we cannot.
 */
enum gc_hf_path gc_hf_served(enum gc_hf_entry e, const struct gc_hf_res *res,
			     const char *force_compat, char *why, size_t len);

/*
 * hipFile's documented fastpath rules (docs/conceptual/io-backends.rst,
 * the fastpath backend's score()) [src ROCm/rocm-systems
 * projects/hipfile/docs/conceptual/io-backends.rst @ 5b50b9d9ea8b] [src
 * ROCm/hipFile src/amd_detail/backend/fastpath.cpp @ e875da7de04c]: the
 * descriptor is O_DIRECT (hipFile opens an O_DIRECT twin of a buffered one,
 * so this means that O_DIRECT is possible), device memory, non-negative
 * offsets, a regular file on ext4 / xfs or a block device, file offset and
 * size multiples of the O_DIRECT offset alignment and the address (base +
 * buffer offset) of the memory alignment (statx STATX_DIOALIGN; 4096 each
 * when unknown, i.e. 0 here).
 */
struct gc_hf_rules {
	bool odirect;
	bool device_memory;
	bool supported_fs;
	uint32_t mem_align;    /* 0: unknown, 4096 */
	uint32_t offset_align; /* 0: unknown, 4096 */
};
/* Pure: true when the fastpath would take the request; else why[] names the first rule broken. */
bool gc_hf_fastpath_eligible(const struct gc_hf_rules *rules, uintptr_t addr, uint64_t size,
			     int64_t file_off, int64_t buf_off, char *why, size_t len);

/* ---------------------------------------------------- device memory helpers */

/*
 * Fill len device bytes at dev with lib/io's pattern (or its inverse) for
 * file offsets starting at file_off, through the host staging buffer stage
 * (stage_len bytes, reused chunk by chunk). 0 or -EIO (*herr = the HIP error).
 */
int gc_hip_fill_pattern(const struct gc_hipfile *h, void *dev, size_t len, uint64_t file_off,
			uint64_t seed, bool inv, void *stage, size_t stage_len, hipError_t *herr);
/*
 * Check len device bytes at dev against the pattern (or its inverse): 0 when
 * they match, 1 with *mm filled (first mismatch, offsets relative to dev,
 * count over the whole range), -EIO on a HIP error (*herr).
 */
int gc_hip_check_pattern(const struct gc_hipfile *h, const void *dev, size_t len,
			 uint64_t file_off, uint64_t seed, bool inv, void *stage,
			 size_t stage_len, struct gc_mismatch *mm, hipError_t *herr);

#endif
