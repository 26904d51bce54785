// SPDX-License-Identifier: MIT
/*
 * AMD GPU-direct file I/O helpers: see gc_hipfile.h (sources of every
 * declaration, why dlopen). Unverified on hardware.
 */
#include "gc_hipfile.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dl.h"

/* ------------------------------------------------------------- loading */

static const char *const hipfile_sonames[] = { "libhipfile.so.0", "libhipfile.so" };
#define HSA_SONAME "libhsa-runtime64.so.1"

/* The HIP runtime calls hipfile_io makes: lib/hip's table entries it needs. */
#define GC_HIPFILE_HIP_NEEDS(X)                                                     \
	X(hipRuntimeGetVersion) X(hipDriverGetVersion) X(hipGetDeviceCount)          \
	X(hipSetDevice) X(hipGetErrorName) X(hipGetErrorString) X(hipMalloc)         \
	X(hipFree) X(hipMemcpy) X(hipMemset) X(hipDeviceSynchronize) X(hipHostMalloc) \
	X(hipHostFree) X(hipStreamCreate) X(hipStreamSynchronize) X(hipStreamDestroy)

/* The runtime of h, or NULL: for the error strings, which take either. */
static const struct gc_hip *hip_of(const struct gc_hipfile *h)
{
	return h ? h->hip : NULL;
}

/* ------------------------------------------------ hipAmdFileRead / Write */

/* hipGetProcAddress first (what hipFile does), dlsym second. */
static void *find_hip_symbol(struct gc_hipfile *h, const char *sym, char *how, size_t how_len,
			     char *note, size_t note_len)
{
	char e[128];
	void *p = NULL;
	int st = -1;

	if (h->hip->hipGetProcAddress) {
		hipError_t r = h->hip->hipGetProcAddress(sym, &p, h->hip->runtime_version,
							 GC_HIP_GET_PROC_ADDRESS_DEFAULT, &st);

		if (r == hipSuccess && p) {
			snprintf(how, how_len, "hipGetProcAddress");
			return p;
		}
		snprintf(note, note_len, "hipGetProcAddress(\"%s\") returned %s, status %d", sym,
			 gc_hip_errstr(h->hip, r, e, sizeof(e)), st);
	} else {
		snprintf(note, note_len, "%s exports no hipGetProcAddress, so only dlsym was tried",
			 h->hip->soname);
	}
	p = dlsym(h->hip->lib, sym);
	if (p)
		snprintf(how, how_len, "dlsym");
	return p;
}

static void probe_hip_amd_file(struct gc_hipfile *h)
{
	struct gc_hf_backend *b = &h->backend[GC_HF_HIP_AMD_FILE];
	char note[256], rt[96];
	const char *sym = "hipAmdFileRead";

	h->amd_file_read = (gc_hip_amd_file_io_fn *)find_hip_symbol(h, sym, b->how,
								     sizeof(b->how), note,
								     sizeof(note));
	if (h->amd_file_read) {
		sym = "hipAmdFileWrite";
		h->amd_file_write = (gc_hip_amd_file_io_fn *)find_hip_symbol(
			h, sym, b->how, sizeof(b->how), note, sizeof(note));
	}
	b->found = h->amd_file_read && h->amd_file_write;
	snprintf(b->missing, sizeof(b->missing), "%s", sym);
	if (!b->found)
		snprintf(b->why, sizeof(b->why), "%s not found in %.96s: %.200s, and dlsym finds "
			 "no %s", sym, gc_hip_runtime_name(h->hip, rt, sizeof(rt)), note, sym);
}

/* ------------------------------------------------- hsa_amd_ais_file_* */

static void *load_hsa(void)
{
	void *lib = dlopen(HSA_SONAME, RTLD_NOW | RTLD_NOLOAD);

	return lib ? lib : dlopen(HSA_SONAME, RTLD_NOW | RTLD_GLOBAL);
}

static void probe_hsa_ais(struct gc_hipfile *h)
{
	struct gc_hf_backend *b = &h->backend[GC_HF_HSA_AIS];
	char rt[96];

	snprintf(b->missing, sizeof(b->missing), "%s", HSA_SONAME);
	h->hsa_lib = load_hsa();
	if (!h->hsa_lib) {
		snprintf(b->why, sizeof(b->why), "%s (%s)", dlerror(),
			 gc_hip_runtime_name(h->hip, rt, sizeof(rt)));
		return;
	}
	h->hsa_init = (gc_hsa_void_fn *)dlsym(h->hsa_lib, "hsa_init");
	h->hsa_shut_down = (gc_hsa_void_fn *)dlsym(h->hsa_lib, "hsa_shut_down");
	h->hsa_status_string = (gc_hsa_status_string_fn *)dlsym(h->hsa_lib, "hsa_status_string");
	h->ais_read = (gc_hsa_ais_io_fn *)dlsym(h->hsa_lib, "hsa_amd_ais_file_read");
	h->ais_write = (gc_hsa_ais_io_fn *)dlsym(h->hsa_lib, "hsa_amd_ais_file_write");
	b->found = h->ais_read && h->ais_write && h->hsa_init && h->hsa_shut_down;
	snprintf(b->how, sizeof(b->how), "dlsym in " HSA_SONAME);
	snprintf(b->missing, sizeof(b->missing), "%s",
		 h->ais_read ? "hsa_amd_ais_file_write" : "hsa_amd_ais_file_read");
	if (!b->found)
		snprintf(b->why, sizeof(b->why), HSA_SONAME " has no %s (no AIS extension in this "
			 "ROCr; %s)",
			 h->ais_read ? "hsa_amd_ais_file_write" : "hsa_amd_ais_file_read",
			 gc_hip_runtime_name(h->hip, rt, sizeof(rt)));
}

/* The AIS calls need the HSA runtime initialized (refcounted: HIP's own init stays). */
static void init_hsa(struct gc_hipfile *h)
{
	struct gc_hf_backend *b = &h->backend[GC_HF_HSA_AIS];
	gc_hsa_status s;
	char e[160];

	if (!b->found)
		return;
	s = h->hsa_init();
	h->hsa_inited = s == GC_HSA_STATUS_SUCCESS;
	if (h->hsa_inited)
		return;
	b->found = false;
	snprintf(b->missing, sizeof(b->missing), "working hsa_init");
	snprintf(b->why, sizeof(b->why), "hsa_init: %s", gc_hsa_strerror(h, s, e, sizeof(e)));
}

/* ------------------------------------------------------------- hipFile */

static void load_hipfile(struct gc_hipfile *h)
{
	char first[256] = "";

	h->hf_lib = gc_dlopen_first(hipfile_sonames,
				    sizeof(hipfile_sonames) / sizeof(hipfile_sonames[0]),
				    RTLD_NOW | RTLD_GLOBAL, h->hf_soname, sizeof(h->hf_soname), first,
				    sizeof(first));
	if (h->hf_lib)
		return;
	snprintf(h->backend[GC_HF_HIPFILE].why, sizeof(h->backend[GC_HF_HIPFILE].why),
		 "%s (also tried libhipfile.so; hipFile ships with ROCm >= 7.2)", first);
}

static const char *resolve_hipfile(struct gc_hipfile *h)
{
	const char *missing = NULL;

#define GC_HIPFILE_RESOLVE(member, symbol, type, required)          \
	h->hf.member = (type *)dlsym(h->hf_lib, symbol);             \
	if (required && !h->hf.member && !missing)                   \
		missing = symbol;
	GC_HIPFILE_FUNCS(GC_HIPFILE_RESOLVE)
#undef GC_HIPFILE_RESOLVE
	return missing;
}

static void probe_hipfile(struct gc_hipfile *h)
{
	struct gc_hf_backend *b = &h->backend[GC_HF_HIPFILE];
	const char *missing;
	char rt[96];

	snprintf(b->missing, sizeof(b->missing), "libhipfile.so.0");
	if (!h->hf_lib) {
		size_t n = strlen(b->why);

		snprintf(b->why + n, sizeof(b->why) - n, "; %s",
			 gc_hip_runtime_name(h->hip, rt, sizeof(rt)));
		return;
	}
	missing = resolve_hipfile(h);
	if (missing) {
		snprintf(b->missing, sizeof(b->missing), "%s", missing);
		snprintf(b->why, sizeof(b->why), "%s has no %s (%s)", h->hf_soname, missing,
			 gc_hip_runtime_name(h->hip, rt, sizeof(rt)));
		return;
	}
	if (h->hf.get_version)
		(void)h->hf.get_version(&h->hf_version[0], &h->hf_version[1], &h->hf_version[2]);
	snprintf(b->how, sizeof(b->how), "%s %u.%u.%u", h->hf_soname, h->hf_version[0],
		 h->hf_version[1], h->hf_version[2]);
	b->found = true;
}

/* ----------------------------------------------------------- devices */

static int count_devices(struct gc_hipfile *h, char *why, size_t why_len)
{
	hipError_t r = h->hip->hipGetDeviceCount(&h->n_devices);
	const char *call = "hipGetDeviceCount";
	char rt[96], e[160];

	if (r == hipSuccess && h->n_devices > 0) {
		call = "hipSetDevice(0)";
		r = h->hip->hipSetDevice(0);
	}
	if (r == hipSuccess && h->n_devices > 0)
		return 0;
	gc_hip_runtime_name(h->hip, rt, sizeof(rt));
	if (r == hipSuccess || r == hipErrorNoDevice)
		snprintf(why, why_len, "%s: no ROCm-capable device (%s; %s)", call,
			 r == hipSuccess ? "count 0" : "hipErrorNoDevice", rt);
	else
		snprintf(why, why_len, "%s: %s; %s", call, gc_hip_errstr(h->hip, r, e, sizeof(e)),
			 rt);
	return r == hipSuccess || r == hipErrorNoDevice || r == hipErrorInsufficientDriver ||
	       r == hipErrorNotInitialized ? -ENODEV : -EIO;
}

int gc_hipfile_open(struct gc_hipfile *h, char *why, size_t why_len)
{
	static const enum gc_hip_entry needs[] = { GC_HIPFILE_HIP_NEEDS(GC_HIP_ENTRY) };
	int r;

	memset(h, 0, sizeof(*h));
	load_hipfile(h);
	r = gc_hip_load(&h->hip, needs, ARRAY_SIZE(needs), h->hf_lib, why, why_len);
	if (r)
		return r;
	probe_hipfile(h);
	probe_hip_amd_file(h);
	probe_hsa_ais(h);
	r = count_devices(h, why, why_len);
	if (!r)
		init_hsa(h);
	return r;
}

void gc_hipfile_close(struct gc_hipfile *h)
{
	if (h->hsa_inited)
		h->hsa_shut_down();
	/* The libraries stay loaded: unloading a GPU runtime mid-process is not supported. */
	gc_hip_close(h->hip);
	memset(h, 0, sizeof(*h));
}

/* ------------------------------------------------------------ strings */

const char *gc_hsa_strerror(const struct gc_hipfile *h, gc_hsa_status s, char *buf, size_t len)
{
	const char *text = NULL;

	if (h && h->hsa_status_string && h->hsa_status_string(s, &text) != GC_HSA_STATUS_SUCCESS)
		text = NULL;
	if (text)
		snprintf(buf, len, "%s", text);
	else
		snprintf(buf, len, "hsa_status_t 0x%x", (unsigned)s);
	return buf;
}

/* hipfile.h's hipFileOpError_t names, indexed by code - 5000 (21 and 32 unused). */
static const char *const hipfile_err_names[] = {
	"hipFileSuccess", "hipFileDriverNotInitialized", "hipFileDriverInvalidProps",
	"hipFileDriverUnsupportedLimit", "hipFileDriverVersionMismatch",
	"hipFileDriverVersionReadError", "hipFileDriverClosing", "hipFilePlatformNotSupported",
	"hipFileIONotSupported", "hipFileDeviceNotSupported", "hipFileDriverError",
	"hipFileHipDriverError", "hipFileHipPointerInvalid", "hipFileHipMemoryTypeInvalid",
	"hipFileHipPointerRangeError", "hipFileHipContextMismatch", "hipFileInvalidMappingSize",
	"hipFileInvalidMappingRange", "hipFileInvalidFileType", "hipFileInvalidFileOpenFlag",
	"hipFileDIONotSet", NULL, "hipFileInvalidValue", "hipFileMemoryAlreadyRegistered",
	"hipFileMemoryNotRegistered", "hipFilePermissionDenied", "hipFileDriverAlreadyOpen",
	"hipFileHandleNotRegistered", "hipFileHandleAlreadyRegistered", "hipFileDeviceNotFound",
	"hipFileInternalError", "hipFileGetNewFDFailed", NULL, "hipFileDriverSetupError",
	"hipFileIODisabled", "hipFileBatchSubmitFailed", "hipFileGPUMemoryPinningFailed",
	"hipFileBatchFull", "hipFileAsyncNotSupported", "hipFileIOMaxError",
};

const char *gc_hipfile_err_name(int err)
{
	size_t n = sizeof(hipfile_err_names) / sizeof(hipfile_err_names[0]);

	if (err == 0)
		return hipfile_err_names[0];
	if (err <= GC_HIPFILE_BASE_ERR || (size_t)(err - GC_HIPFILE_BASE_ERR) >= n)
		return NULL;
	return hipfile_err_names[err - GC_HIPFILE_BASE_ERR];
}

const char *gc_hipfile_strerror(const struct gc_hipfile *h, gc_hipfile_err e, char *buf,
				size_t len)
{
	const char *name = gc_hipfile_err_name(e.err);
	const char *text = h && h->hf.op_error_string && e.err ? h->hf.op_error_string(e.err)
							       : NULL;
	char hip[160] = "", herr[128];

	if (e.err == GC_HIPFILE_HIP_DRIVER_ERROR)
		snprintf(hip, sizeof(hip), ", %s",
			 gc_hip_errstr(hip_of(h), e.hip_drv_err, herr, sizeof(herr)));
	snprintf(buf, len, "%s (%d%s%s%s)", name ? name : "hipFileOpError", e.err, text ? ": " : "",
		 text ? text : "", hip);
	return buf;
}

const char *gc_hf_entry_name(enum gc_hf_entry e)
{
	static const char *const names[] = { "hipFile", "hipAmdFile", "hsa_amd_ais_file" };

	return e < GC_HF_N_ENTRIES ? names[e] : "?";
}

const char *gc_hf_entry_symbol(enum gc_hf_entry e, bool write)
{
	static const char *const names[][2] = {
		{ "hipFileRead", "hipFileWrite" },
		{ "hipAmdFileRead", "hipAmdFileWrite" },
		{ "hsa_amd_ais_file_read", "hsa_amd_ais_file_write" },
	};

	return e < GC_HF_N_ENTRIES ? names[e][write] : "?";
}

const char *gc_hf_backend_str(const struct gc_hipfile *h, enum gc_hf_entry e, char *buf,
			      size_t len)
{
	const struct gc_hf_backend *b = &h->backend[e];

	if (b->found)
		snprintf(buf, len, "%s: found (%s)", gc_hf_entry_name(e), b->how);
	else
		snprintf(buf, len, "%s: not available: %s", gc_hf_entry_name(e), b->why);
	return buf;
}

/* ------------------------------------------------------------- requests */

static int64_t call_hipfile(const struct gc_hipfile *h, const struct gc_hf_req *r)
{
	if (r->write)
		return h->hf.write(r->fh, r->base, r->size, r->file_off, r->buf_off);
	return h->hf.read(r->fh, r->base, r->size, r->file_off, r->buf_off);
}

static int64_t call_raw(const struct gc_hipfile *h, const struct gc_hf_req *r,
			struct gc_hf_res *res)
{
	void *ptr = (char *)r->base + r->buf_off;
	gc_amd_file_handle fh;

	memset(&fh, 0, sizeof(fh));
	fh.fd = r->fd;
	if (r->entry == GC_HF_HIP_AMD_FILE)
		return (r->write ? h->amd_file_write : h->amd_file_read)(
			fh, ptr, r->size, r->file_off, &res->copied, &res->status);
	return (r->write ? h->ais_write : h->ais_read)(fh, ptr, r->size, r->file_off,
							&res->copied, &res->status);
}

int64_t gc_hf_io(const struct gc_hipfile *h, const struct gc_hf_req *r, struct gc_hf_res *res)
{
	*res = (struct gc_hf_res){ .copied = GC_HF_UNTOUCHED64, .status = GC_HF_UNTOUCHED32 };
	errno = 0;
	if (r->entry == GC_HF_HIPFILE)
		res->ret = call_hipfile(h, r);
	else
		res->ret = call_raw(h, r, res);
	res->err_no = errno;
	res->n = gc_hf_errno(r->entry, res, r->size);
	return res->n;
}

int gc_hipfile_op_errno(int op_err)
{
	switch (op_err) {
	case GC_HIPFILE_SUCCESS:
		return 0;
	case GC_HIPFILE_INVALID_VALUE:
	case GC_HIPFILE_DIO_NOT_SET:
	case GC_HIPFILE_DRIVER_NOT_INITIALIZED:
	case GC_HIPFILE_INVALID_FILE_OPEN_FLAG:
		return EINVAL;
	case GC_HIPFILE_HANDLE_NOT_REGISTERED:
		return EBADF;
	case GC_HIPFILE_HIP_POINTER_INVALID:
	case GC_HIPFILE_HIP_MEMORY_TYPE_INVALID:
		return EFAULT;
	case GC_HIPFILE_HIP_POINTER_RANGE_ERROR:
	case GC_HIPFILE_INVALID_MAPPING_SIZE:
	case GC_HIPFILE_INVALID_MAPPING_RANGE:
		return ERANGE;
	case GC_HIPFILE_PLATFORM_NOT_SUPPORTED:
	case GC_HIPFILE_IO_NOT_SUPPORTED:
	case GC_HIPFILE_DEVICE_NOT_SUPPORTED:
	case GC_HIPFILE_INVALID_FILE_TYPE:
	case GC_HIPFILE_ASYNC_NOT_SUPPORTED:
		return EOPNOTSUPP;
	case GC_HIPFILE_MEMORY_NOT_REGISTERED:
		return ENOENT;
	case GC_HIPFILE_MEMORY_ALREADY_REGISTERED:
	case GC_HIPFILE_HANDLE_ALREADY_REGISTERED:
	case GC_HIPFILE_DRIVER_ALREADY_OPEN:
		return EEXIST;
	case GC_HIPFILE_PERMISSION_DENIED:
		return EACCES;
	case GC_HIPFILE_DRIVER_CLOSING:
		return ESHUTDOWN;
	case GC_HIPFILE_BATCH_FULL:
		return EAGAIN;
	default:
		return EIO;
	}
}

int gc_hipfile_err_errno(gc_hipfile_err e)
{
	return e.err == GC_HIPFILE_SUCCESS ? 0 : gc_hipfile_op_errno(e.err);
}

static int hip_errno(int64_t e)
{
	switch (e) {
	case hipErrorInvalidValue:
		return EINVAL;
	case hipErrorOutOfMemory:
		return ENOMEM;
	case hipErrorInvalidDevice:
	case hipErrorNoDevice:
	case hipErrorNotInitialized:
		return ENODEV;
	case hipErrorNotSupported:
		return EOPNOTSUPP;
	default:
		return EIO;
	}
}

static int hsa_errno(int64_t s)
{
	switch (s) {
	case GC_HSA_STATUS_ERROR_INVALID_ARGUMENT:
		return EINVAL;
	case GC_HSA_STATUS_ERROR_OUT_OF_RESOURCES:
		return ENOMEM;
	case GC_HSA_STATUS_ERROR_NOT_INITIALIZED:
		return ENODEV;
	default:
		return EIO;
	}
}

static int64_t raw_errno(enum gc_hf_entry e, const struct gc_hf_res *res, uint64_t size)
{
	bool status_set = res->status != GC_HF_UNTOUCHED32;
	bool copied_set = res->copied != GC_HF_UNTOUCHED64;
	int64_t status = res->status;

	if (status_set && status != 0)
		return status < 0 ? status : -status;
	if (res->ret != 0 && res->err_no == ENOTTY)
		return -ENOTTY;
	if (res->ret != 0)
		return -(e == GC_HF_HIP_AMD_FILE ? hip_errno(res->ret) : hsa_errno(res->ret));
	if (copied_set)
		return res->copied <= size ? (int64_t)res->copied : -EPROTO;
	return size == 0 ? 0 : -EPROTO;
}

int64_t gc_hf_errno(enum gc_hf_entry e, const struct gc_hf_res *res, uint64_t size)
{
	int64_t ret = res->ret;

	if (e != GC_HF_HIPFILE)
		return raw_errno(e, res, size);
	if (ret >= 0)
		return ret;
	if (ret == -1)
		return res->err_no ? -res->err_no : -EIO;
	if (-ret > GC_HIPFILE_BASE_ERR && -ret < GC_HIPFILE_BASE_ERR + 100)
		return -gc_hipfile_op_errno((int)-ret);
	return -EIO;
}

static const char *errno_name(int64_t n)
{
	const char *s = n < 0 ? strerrorname_np((int)-n) : NULL;

	return s ? s : "?";
}

static const char *raw_detail(const struct gc_hipfile *h, const struct gc_hf_req *r,
			      const struct gc_hf_res *res, char *buf, size_t len)
{
	char native[192], copied[32], status[32];

	if (r->entry == GC_HF_HIP_AMD_FILE)
		gc_hip_errstr(hip_of(h), (hipError_t)res->ret, native, sizeof(native));
	else
		gc_hsa_strerror(h, (gc_hsa_status)res->ret, native, sizeof(native));
	if (res->copied == GC_HF_UNTOUCHED64)
		snprintf(copied, sizeof(copied), "untouched");
	else
		snprintf(copied, sizeof(copied), "%llu", (unsigned long long)res->copied);
	if (res->status == GC_HF_UNTOUCHED32)
		snprintf(status, sizeof(status), "untouched");
	else
		snprintf(status, sizeof(status), "%d", (int)res->status);
	snprintf(buf, len, "%s, size_copied %s, status %s, errno %d", native, copied, status,
		 res->err_no);
	return buf;
}

static const char *hipfile_detail(const struct gc_hf_res *res, char *buf, size_t len)
{
	const char *name = res->ret < -1 ? gc_hipfile_err_name((int)-res->ret) : NULL;

	if (res->ret == -1)
		snprintf(buf, len, "returned -1, errno %s", errno_name(-res->err_no));
	else
		snprintf(buf, len, "returned %lld%s%s", (long long)res->ret, name ? " = -" : "",
			 name ? name : "");
	return buf;
}

const char *gc_hf_res_str(const struct gc_hipfile *h, const struct gc_hf_req *r,
			  const struct gc_hf_res *res, char *buf, size_t len)
{
	char detail[320];

	if (r->entry == GC_HF_HIPFILE)
		hipfile_detail(res, detail, sizeof(detail));
	else
		raw_detail(h, r, res, detail, sizeof(detail));
	if (res->n >= 0)
		snprintf(buf, len, "%lld bytes (%s: %s)", (long long)res->n,
			 gc_hf_entry_symbol(r->entry, r->write), detail);
	else
		snprintf(buf, len, "-%s (%s: %s)", errno_name(res->n),
			 gc_hf_entry_symbol(r->entry, r->write), detail);
	return buf;
}

/* ----------------------------------------------------- which path served */

const char *gc_hf_path_name(enum gc_hf_path p)
{
	static const char *const names[] = { "none", "GPU-direct", "fallback", "cannot tell" };

	return p <= GC_HF_PATH_CANNOT_TELL ? names[p] : "?";
}

/* hipFile reads its boolean environment variables once; we accept the usual spellings. */
static bool env_true(const char *v)
{
	return v && (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes") ||
		     !strcasecmp(v, "on"));
}

enum gc_hf_path gc_hf_served(enum gc_hf_entry e, const struct gc_hf_res *res,
			     const char *force_compat, char *why, size_t len)
{
	if (res->n < 0) {
		snprintf(why, len, "the call failed: nothing served it");
		return GC_HF_PATH_NONE;
	}
	if (e != GC_HF_HIPFILE) {
		snprintf(why, len, "%s has no fallback: a success is GPU-direct",
			 gc_hf_entry_name(e));
		return GC_HF_PATH_GPU_DIRECT;
	}
	if (env_true(force_compat)) {
		snprintf(why, len, "HIPFILE_FORCE_COMPAT_MODE=%s sends every hipFile request to "
			 "the POSIX fallback", force_compat);
		return GC_HF_PATH_FALLBACK;
	}
	snprintf(why, len, "hipFile's public API has no per-request backend query (its "
		 "per-backend counters are only in the internal ais-stats interface)");
	return GC_HF_PATH_CANNOT_TELL;
}

static bool misaligned(int64_t v, uint32_t align)
{
	return (uint64_t)v % (align ? align : 4096) != 0;
}

bool gc_hf_fastpath_eligible(const struct gc_hf_rules *rules, uintptr_t addr, uint64_t size,
			     int64_t file_off, int64_t buf_off, char *why, size_t len)
{
	const char *broken = NULL;

	if (!rules->odirect)
		broken = "the file cannot be opened O_DIRECT";
	else if (!rules->device_memory)
		broken = "the buffer is not device memory";
	else if (file_off < 0 || buf_off < 0)
		broken = "a negative offset";
	else if (!rules->supported_fs)
		broken = "not a block device, nor a regular file on ext4 / xfs";
	else if (misaligned(file_off, rules->offset_align))
		broken = "the file offset is not a multiple of the O_DIRECT offset alignment";
	else if (misaligned((int64_t)size, rules->offset_align))
		broken = "the size is not a multiple of the O_DIRECT offset alignment";
	else if (misaligned((int64_t)(addr + (uintptr_t)buf_off), rules->mem_align))
		broken = "the buffer address is not a multiple of the O_DIRECT memory alignment";
	snprintf(why, len, "%s", broken ? broken : "every documented fastpath rule is met");
	return broken == NULL;
}

/* ---------------------------------------------------- device memory helpers */

int gc_hip_fill_pattern(const struct gc_hipfile *h, void *dev, size_t len, uint64_t file_off,
			uint64_t seed, bool inv, void *stage, size_t stage_len, hipError_t *herr)
{
	for (size_t done = 0; done < len;) {
		size_t n = len - done < stage_len ? len - done : stage_len;

		if (inv)
			gc_pattern_fill_inv(stage, n, file_off + done, seed);
		else
			gc_pattern_fill(stage, n, file_off + done, seed);
		*herr = h->hip->hipMemcpy((char *)dev + done, stage, n, hipMemcpyHostToDevice);
		if (*herr != hipSuccess)
			return -EIO;
		done += n;
	}
	return 0;
}

static void merge_mismatch(struct gc_mismatch *mm, const struct gc_mismatch *m, size_t at,
			   bool first)
{
	if (first) {
		*mm = *m;
		mm->offset += at;
		mm->count = 0;
	}
	mm->count += m->count;
}

int gc_hip_check_pattern(const struct gc_hipfile *h, const void *dev, size_t len,
			 uint64_t file_off, uint64_t seed, bool inv, void *stage,
			 size_t stage_len, struct gc_mismatch *mm, hipError_t *herr)
{
	bool bad = false;

	for (size_t done = 0; done < len;) {
		size_t n = len - done < stage_len ? len - done : stage_len;
		struct gc_mismatch m;
		int64_t at;

		*herr = h->hip->hipMemcpy(stage, (const char *)dev + done, n,
					  hipMemcpyDeviceToHost);
		if (*herr != hipSuccess)
			return -EIO;
		at = inv ? gc_pattern_check_inv(stage, n, file_off + done, seed, &m)
			 : gc_pattern_check(stage, n, file_off + done, seed, &m);
		if (at >= 0)
			merge_mismatch(mm, &m, done, !bad);
		bad |= at >= 0;
		done += n;
	}
	if (bad)
		mm->len = len;
	return bad;
}
