/* SPDX-License-Identifier: MIT */
/*
 * The HIP runtime, loaded one way for every HIP binary: libamdhip64 opened at
 * run time and every entry point gpuconform calls resolved by name, with the
 * prototype of <hip/hip_runtime_api.h> (Debian 12's HIP 5.2.3, compiled with
 * -D__HIP_PLATFORM_AMD__), into one table; each binary names the entries it
 * needs (hipfile_io and hip_bubbles through gc_hip_load(), the HIP twins of
 * the CUDA driver-API binaries through gc_hip_open()). For the twins
 * (hip_mem, hip_multigpu) also: the devices, the VMM calls wrapped the way
 * lib/cuda wraps cuMem*, gpuconform's fill / check kernels launched from the
 * committed AMDGPU code objects, and the leak-checked fixture with per-device
 * and per-pair dynamic subtests (`gpu0`, `gpu0-gpu1`).
 *
 * UNVERIFIED ON HARDWARE: nothing here has run on an AMD GPU; it was built
 * against the 5.2.3 headers and seen skipping (no /dev/kfd).
 *
 *     struct gc_hip *hip = gc_hip_require();   // skips with the reason
 *     gc_hip_assert(hip, hip->hipMemGetInfo(&free_b, &total_b));
 *
 * or, for a binary that needs other entries and handles devices itself,
 *
 *     static const enum gc_hip_entry needs[] = { GC_HIP_ENTRY(hipMalloc) ... };
 *     err = gc_hip_load(&hip, needs, ARRAY_SIZE(needs), NULL, why, sizeof(why));
 *
 * Why dlopen and not hip_dep: a linked binary would not start without
 * libamdhip64.so.5 (Debian's soname), nor on ROCm 6.x / 7.x (.so.6 / .so.7);
 * opened at run time it starts everywhere and skips with the loader's words.
 * The VMM entry points carry the version tag hip_5.1 in the 5.2.3 library
 * (nm -D): an older runtime lacks them and the skip names the first missing.
 * A process holds one runtime: a library that links libamdhip64 itself
 * (hipFile) is loaded first and gc_hip_load() takes the runtime it pulled in.
 *
 * Errors print as `hipErrorInvalidValue` (HIP 5.x's hipGetErrorString gives
 * the name again; a runtime with a text adds it in parentheses).
 */
#ifndef GPUCONFORM_GC_HIP_H
#define GPUCONFORM_GC_HIP_H

#include <hip/hip_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

/* libamdhip64's sonames, newest ROCm first after the unversioned developer link. */
extern const char *const gc_hip_sonames[4];

/* What the HIP twins call: gc_hip_open() requires all of these. */
#define GC_HIP_TWIN_API(X)                                                                 \
	X(hipRuntimeGetVersion) X(hipDriverGetVersion) X(hipGetErrorName)                    \
	X(hipGetErrorString) X(hipGetDeviceCount) X(hipSetDevice) X(hipDeviceGetName)        \
	X(hipDeviceGetPCIBusId) X(hipDeviceTotalMem) X(hipDeviceSynchronize)                 \
	X(hipDeviceCanAccessPeer) X(hipDeviceEnablePeerAccess)                               \
	X(hipDeviceDisablePeerAccess) X(hipMemGetInfo) X(hipMalloc) X(hipFree)               \
	X(hipMemcpyHtoD) X(hipMemcpyDtoH) X(hipMemcpyDtoD) X(hipMemset)                      \
	X(hipMemGetAllocationGranularity) X(hipMemCreate) X(hipMemRelease)                   \
	X(hipMemAddressReserve) X(hipMemAddressFree) X(hipMemMap) X(hipMemUnmap)             \
	X(hipMemSetAccess) X(hipMemGetAccess) X(hipMemRetainAllocationHandle)                \
	X(hipModuleLoadData) X(hipModuleUnload) X(hipModuleGetFunction)                      \
	X(hipModuleLaunchKernel)

/*
 * Every runtime entry point a HIP binary calls: the table. gc_hip_load()
 * resolves them all; those a binary does not name in its needs may be NULL.
 */
#define GC_HIP_API(X)                                                                      \
	GC_HIP_TWIN_API(X)                                                                   \
	/* host memory and streams (hipfile_io) */                                          \
	X(hipMemcpy) X(hipHostMalloc) X(hipHostFree) X(hipStreamCreate)                      \
	X(hipStreamSynchronize) X(hipStreamDestroy)                                          \
	/* asynchronous work and graphs (hip_bubbles) */                                    \
	X(hipStreamCreateWithFlags) X(hipStreamQuery) X(hipMemsetD32Async)                   \
	X(hipMemcpyDtoDAsync) X(hipMemcpyDtoHAsync) X(hipMemcpyHtoDAsync) X(hipGraphCreate)  \
	X(hipGraphDestroy) X(hipGraphAddKernelNode) X(hipGraphAddMemsetNode)                 \
	X(hipGraphAddMemcpyNode1D) X(hipGraphInstantiate) X(hipGraphExecDestroy)             \
	X(hipGraphLaunch) X(hipGraphExecKernelNodeSetParams)

/* A table entry, for a binary's needs: GC_HIP_ENTRY(hipMalloc). */
#define GC_HIP_ENTRY(name) gc_hip_e_##name,
enum gc_hip_entry { GC_HIP_API(GC_HIP_ENTRY) GC_HIP_N_ENTRIES };

/*
 * hipGetProcAddress (hip_runtime_api.h of HIP 6.x, 7.x; Debian's 5.2.3 neither
 * declares nor exports it): (symbol name, void **out, int HIP version, uint64_t flags with
 * 0 the default, optional out status, an int-sized enum: 0 found, 1 symbol
 * not found, 2 version not sufficient). In the table beside the others,
 * never required: NULL on a runtime without it.
 */
typedef hipError_t gc_hip_get_proc_address_fn(const char *symbol, void **pfn, int hip_version,
					      uint64_t flags, int *symbol_status);
#define GC_HIP_GET_PROC_ADDRESS_DEFAULT 0

struct gc_hip_device {
	int ordinal;
	char name[256];
	char pci_bus_id[32]; /* `0000:c1:00.0` */
	size_t total_mem;
};

struct gc_hip {
	void *lib;
	char soname[48];
	int runtime_version; /* hipRuntimeGetVersion: 50221153 = 5.2.21153; -1 unknown */
	int driver_version;  /* hipDriverGetVersion; -1 unknown */
	int n_devices;       /* gc_hip_open() only; 0 after gc_hip_load() */
	struct gc_hip_device *devices;
#define GC_HIP_MEMBER(name) __typeof__(name) *name;
	GC_HIP_API(GC_HIP_MEMBER)
#undef GC_HIP_MEMBER
	gc_hip_get_proc_address_fn *hipGetProcAddress;
};

/*
 * Load the runtime: dlopen libamdhip64, resolve the whole table, read the
 * versions; no device is touched. The library is the one `beside` pulled in
 * when beside is the handle of a library that links libamdhip64 (hipFile's),
 * else the first of gc_hip_sonames that loads. On failure *out is NULL, a
 * one-line reason is in why[] and the result is -ENOENT (no library:
 * dlerror()'s words), -ENOSYS (the first of needs[0..n_needs) the runtime
 * lacks: `libamdhip64.so.5 has no hipMemCreate; HIP runtime 5.0.13601
 * (libamdhip64.so.5)`) or -ENOMEM. Never exits.
 */
int gc_hip_load(struct gc_hip **out, const enum gc_hip_entry *needs, size_t n_needs,
		void *beside, char *why, size_t why_len);
/*
 * The HIP twins' open: gc_hip_load() needing the twins' entries, then count
 * and describe the devices and make device 0 current. Besides
 * gc_hip_load()'s failures, -ENODEV (`no HIP device: hipGetDeviceCount:
 * hipErrorNoDevice ...`) and -EIO (another runtime error, named).
 */
int gc_hip_open(struct gc_hip **out, char *why, size_t why_len);
void gc_hip_close(struct gc_hip *hip);

/* gc_hip_open() or gc_skip() with its reason (-EIO, -ENOMEM: gc_fail()). */
struct gc_hip *gc_hip_require(void);
/*
 * The same for a binary that needs n devices: with fewer, `needs 2 GPUs,
 * found 1` (found 0 carries the reason: `... (no HIP device: ...)`).
 */
struct gc_hip *gc_hip_require_n(int n);

/* `hipErrorInvalidValue`, or `hipErrorX (text)` where the runtime has a text. */
const char *gc_hip_errstr(const struct gc_hip *hip, hipError_t e, char *buf, size_t len);
/* `5.2.21153` from 50221153 (HIP_VERSION: major * 10^7 + minor * 10^5 + patch). */
const char *gc_hip_version_name(int version, char *buf, size_t len);
/* `HIP runtime 5.2.21153 (libamdhip64.so)`: what every skip reason ends with. */
const char *gc_hip_runtime_name(const struct gc_hip *hip, char *buf, size_t len);

/* Make device i current on this thread (hipSetDevice). */
hipError_t gc_hip_use(const struct gc_hip *hip, int i);

#define gc_hip_assert(hip, call)                                                         \
	do {                                                                             \
		hipError_t gc_he__ = (call);                                             \
		if (gc_he__ != hipSuccess)                                               \
			gc__hip_call_fail(hip, __FILE__, __LINE__, __func__, #call,      \
					  hipSuccess, gc_he__);                          \
	} while (0)
/* The call must return exactly `want`. */
#define gc_hip_assert_err(hip, call, want)                                               \
	do {                                                                             \
		hipError_t gc_he__ = (call);                                             \
		if (gc_he__ != (want))                                                   \
			gc__hip_call_fail(hip, __FILE__, __LINE__, __func__, #call, want, \
					  gc_he__);                                      \
	} while (0)
void gc__hip_call_fail(const struct gc_hip *hip, const char *file, int line, const char *func,
		       const char *expr, hipError_t want, hipError_t got)
	__attribute__((noreturn));

/* ---------------------------------------------------------------- VMM */

/*
 * The codes hip_runtime_api.h lists for every VMM call: "@returns
 * #hipSuccess, #hipErrorInvalidValue, #hipErrorNotSupported [...]" [src
 * ROCm/HIP include/hip/hip_runtime_api.h @ rocm-5.2.3].
 */
extern const hipError_t gc_hip_vmm_errors[2];
/* Pure: e is one of the n codes of listed[]. */
bool gc_hip_listed(hipError_t e, const hipError_t *listed, size_t n);

struct gc_hip_vmm_gran {
	size_t minimum;     /* hipMemAllocationGranularityMinimum */
	size_t recommended; /* hipMemAllocationGranularityRecommended */
};

/* Pinned device memory on device ordinal dev, no export handle (every VMM test's props). */
hipMemAllocationProp gc_hip_vmm_prop(int dev);
hipError_t gc_hip_vmm_granularity(const struct gc_hip *hip, int dev, struct gc_hip_vmm_gran *g);

/* hipMemSetAccess with one descriptor per device ordinal in devs[0..n), n <= 16. */
hipError_t gc_hip_vmm_set_access(const struct gc_hip *hip, void *va, size_t size,
				 const int *devs, size_t n, hipMemAccessFlags flags);
/* hipMemGetAccess for device dev; *flags starts as ~0 so an untouched value shows. */
hipError_t gc_hip_vmm_get_access(const struct gc_hip *hip, void *va, int dev,
				 unsigned long long *flags);
/* `ProtNone`, `ProtRead`, `ProtReadWrite` or `?` for what hipMemGetAccess gave. */
const char *gc_hip_access_name(unsigned long long flags);

/*
 * A whole VMM allocation on device dev: create (size rounded up to the
 * minimum granularity), reserve, map, read-write access for dev.
 * gc_hip_vmm_make() stops before the access (map false: before the map).
 * gc_hip_vmm_free() undoes what was done, in reverse order, and returns the
 * first error.
 */
struct gc_hip_vmm {
	hipMemGenericAllocationHandle_t handle;
	void *va;
	size_t size;
	bool created, reserved, mapped;
};
hipError_t gc_hip_vmm_make(const struct gc_hip *hip, int dev, size_t size, bool map,
			   struct gc_hip_vmm *m);
hipError_t gc_hip_vmm_alloc(const struct gc_hip *hip, int dev, size_t size,
			    struct gc_hip_vmm *m);
hipError_t gc_hip_vmm_free(const struct gc_hip *hip, struct gc_hip_vmm *m);

/* ------------------------------------------------------------- kernels */

#define GC_HIP_BLOCK 256 /* every gpuconform kernel's reqd_work_group_size */

/*
 * gc_fill_u32 / gc_check_u32 index words from the pointer they are given and
 * HIP launches fewer than 2^32 work-items ("Please note, HIP does not
 * support kernel launch with total work items defined in dimension with
 * size gridDim x blockDim >= 2^32.", hipModuleLaunchKernel [src ROCm/HIP
 * include/hip/hip_runtime_api.h @ rocm-5.2.3]): a range is filled and checked
 * in chunks of GC_HIP_CHUNK_WORDS words, chunk c with the seed
 * gc_hip_chunk_seed(seed, c), so that two chunks never hold the same data.
 */
#define GC_HIP_CHUNK_WORDS ((uint64_t)1 << 30)
/* Pure: the seed of chunk c (c = 0: seed itself; distinct for every c < 2^32). */
uint32_t gc_hip_chunk_seed(uint32_t seed, uint64_t c);
/*
 * Pure: a pattern seed for the n-th place a (dynamic) subtest writes: FNV-1a
 * of its names (NULL counts as the empty string), plus n. Places of one
 * subtest differ by n, subtests by their names, so a check that reads
 * another place's data fails.
 */
uint32_t gc_hip_name_seed(const char *subtest, const char *dynamic, unsigned n);

/*
 * The explicit arguments of the two kernels as hipModuleLaunchKernel's
 * `extra` buffer ("These are passed directly to the kernel and must be in
 * the memory layout and alignment expected by the kernel." [src ROCm/HIP
 * include/hip/hip_runtime_api.h @ rocm-5.2.3]): the code objects' metadata
 * gives gc_fill_u32 (p, n, seed) at
 * offsets 0, 8, 16 (kernarg_segment_size 20) and gc_check_u32 (p, n, seed,
 * out) at 0, 8, 16, 24 (32). Pure; the buffer is GC_HIP_KERNARG_BYTES.
 */
#define GC_HIP_KERNARG_BYTES 32
void gc_hip_fill_args(unsigned char *buf, void *p, uint64_t n, uint32_t seed);
void gc_hip_check_args(unsigned char *buf, const void *p, uint64_t n, uint32_t seed, void *out);

struct gc_hip_kernels {
	hipModule_t module;
	hipFunction_t fill_u32, check_u32;
	void *out;          /* device memory for gc_check_u32's two counters */
	void *image;        /* the code object's bytes, kept while the module is loaded */
	char path[4096];    /* the code object that loaded */
};

/*
 * Pure: the names `gpuconform.<target>.hsaco` among names[0..n), sorted, into
 * out[] (at most max, pointers into names); returns how many.
 */
size_t gc_hip_code_objects(const char *const *names, size_t n, const char **out, size_t max);

/*
 * Load the first committed code object ($GPUCONFORM_DATA_DIR/kernels, else
 * the source tree's data/kernels: gpuconform.<gfx>.hsaco, in name order) that
 * the current device accepts (hipModuleLoadData is expected to refuse another
 * ISA's code object with an error; not seen on AMD hardware), resolve both
 * kernels, allocate the check's counters, all on the current device (the
 * one every later launch with k must have current). why[] names every code
 * object tried and what it gave; hipErrorFileNotFound when there is none.
 */
hipError_t gc_hip_kernels_load(const struct gc_hip *hip, struct gc_hip_kernels *k, char *why,
			       size_t why_len);
void gc_hip_kernels_unload(const struct gc_hip *hip, struct gc_hip_kernels *k);

/* gc_fill_u32 over n words at p on the null stream (asynchronous). */
hipError_t gc_hip_fill_u32(const struct gc_hip *hip, const struct gc_hip_kernels *k, void *p,
			   uint64_t n, uint32_t seed);
/*
 * gc_check_u32 over n words at p: *bad = words that differ from the pattern,
 * *first = the first one's index (UINT64_MAX when none). Synchronous.
 */
hipError_t gc_hip_check_u32(const struct gc_hip *hip, const struct gc_hip_kernels *k,
			    const void *p, uint64_t n, uint32_t seed, uint64_t *bad,
			    uint64_t *first);

/* ------------------------------------------------------- leak checks */

#define GC_HIP_SNAPSHOT_MAX 16 /* devices a snapshot covers; further ones are not checked */

/* What a subtest must give back: device free memory, /dev/kfd and /dev/dri fds. */
struct gc_hip_snapshot {
	int n_devices;
	size_t free_mem[GC_HIP_SNAPSHOT_MAX];
	int kfd_fds, dri_fds;
};
/* 0, -EIO (a runtime call failed: *err says which error) or -errno from /proc/self/fd. */
int gc_hip_snapshot(const struct gc_hip *hip, struct gc_hip_snapshot *s, hipError_t *err);
/*
 * Fails the subtest, naming every difference, unless now equals before
 * (free memory within slack bytes per device).
 */
void gc_hip_leak_check(const struct gc_hip *hip, const struct gc_hip_snapshot *before,
		       size_t slack);

/*
 * The HIP binaries' twin of gc_cuda_fixture (lib/cuda/gc_cuda.h), used the
 * same way, step for step: the fixture data begins with this struct, named
 * dev; a binary that holds resources of its own gives them back in its own
 * after_each() and teardown() before calling these (hip_mem).
 */
struct gc_hip_fixture {
	struct gc_hip *hip;
	struct gc_hip_snapshot before;
	size_t slack; /* free-memory bytes per device the leak check tolerates */
};
void *gc_hip_fixture_new(struct gc_hip *hip, size_t size, size_t slack);
void gc_hip_fixture_snapshot(void *data); /* before_each(): device 0 current, snapshot */
void gc_hip_fixture_check(void *data);    /* after_each(): sync every device, leak check */
void gc_hip_fixture_free(void *data);     /* teardown(): gc_hip_close(), data freed */

/* ------------------------------------------------- per device, per pair */

/*
 * The first n devices (all when n < 0 or n > hip->n_devices), in ordinal
 * order, as lib/core.h's device list: gc_each_device() and
 * gc_each_device_pair() over it name each `gpu<N>`, N the ordinal's
 * gc_device_index(), and hand the body a const struct gc_hip_device *.
 */
struct gc_devices gc_hip_devices(const struct gc_hip *hip, int n);

#endif
