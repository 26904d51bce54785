/* SPDX-License-Identifier: MIT */
/*
 * NVIDIA CUDA driver API helpers. libcuda.so.1 is opened at run time and
 * every entry point is resolved by the symbol name <cuda.h>'s macros give it
 * (the ABI we compile against), so a binary built with the toolkit starts on
 * a machine without the driver and skips with the loader's own words.
 *
 *     struct gc_cuda *cu;
 *     gc_cuda_require(&cu);                      // skips with the reason
 *     gc_cu_assert(cu, cu->cuMemGetInfo(&free_b, &total_b));
 *
 * Calls go through the table: cu->cuMemCreate(...), with the exact types of
 * <cuda.h>. Errors print as `CUDA_ERROR_OUT_OF_MEMORY (out of memory)`.
 */
#ifndef GPUCONFORM_GC_CUDA_H
#define GPUCONFORM_GC_CUDA_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

/* Every driver entry point the suite uses. */
#define GC_CU_FUNCS(X)                                                          \
	X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)   \
	X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetUuid) \
	X(cuDeviceGetPCIBusId) X(cuDeviceTotalMem) X(cuDeviceGetAttribute)      \
	X(cuDeviceCanAccessPeer) X(cuDevicePrimaryCtxRetain)                    \
	X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent)      \
	X(cuCtxSynchronize) X(cuCtxEnablePeerAccess) X(cuCtxDisablePeerAccess)  \
	X(cuMemGetInfo) X(cuMemGetAllocationGranularity) X(cuMemCreate)         \
	X(cuMemRelease) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap)  \
	X(cuMemUnmap) X(cuMemSetAccess) X(cuMemGetAccess)                       \
	X(cuMemRetainAllocationHandle) X(cuMemAlloc) X(cuMemFree)               \
	X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoD) X(cuMemcpyDtoH)      \
	X(cuMemcpyDtoD) X(cuMemcpyPeer) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) \
	X(cuMemsetD32) X(cuMemsetD8) X(cuModuleLoadData) X(cuModuleUnload)     \
	X(cuModuleGetFunction) X(cuLaunchKernel) X(cuStreamCreate)              \
	X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate)              \
	X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)                \
	X(cuEventElapsedTime) X(cuMemHostAlloc) X(cuMemHostGetDevicePointer)    \
	X(cuStreamQuery) X(cuGraphCreate) X(cuGraphDestroy)                     \
	X(cuGraphAddKernelNode) X(cuGraphAddMemsetNode) X(cuGraphAddMemcpyNode) \
	X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy)            \
	X(cuGraphExecKernelNodeSetParams) X(cuMemsetD32Async) X(cuMemcpyDtoDAsync) \
	X(cuDevicePrimaryCtxGetState) X(cuPointerGetAttribute) X(cuLibraryLoadData) \
	X(cuLibraryUnload) X(cuLibraryGetKernel)

struct gc_cuda_device {
	int ordinal;
	CUdevice dev;
	char name[256];
	char uuid[37];        /* `GPU-` is not prefixed: the 16 bytes as 8-4-4-4-12 hex */
	char pci_bus_id[32];  /* `0000:19:00.0` */
	size_t total_mem;
	bool vmm;             /* CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
	CUcontext ctx;        /* primary context, retained by gc_cuda_open() */
};

struct gc_cuda {
	void *lib;
	int driver_version; /* cuDriverGetVersion: 13000 = 13.0 */
	int n_devices;
	struct gc_cuda_device *devices;
#define GC_CU_MEMBER(name) __typeof__(name) *name;
	GC_CU_FUNCS(GC_CU_MEMBER)
#undef GC_CU_MEMBER
};

/*
 * dlopen libcuda.so.1, resolve the table, cuInit(0), list devices and retain
 * each one's primary context (device 0's made current). On failure, a
 * one-line reason in why[] (the loader's dlerror(), the CUresult name) and
 * -ENOENT (no library), -ENOSYS (an entry point missing), -ENODEV (no device),
 * -EIO (another driver error). Never exits.
 */
int gc_cuda_open(struct gc_cuda **out, char *why, size_t why_len);
void gc_cuda_close(struct gc_cuda *cu);

/* gc_cuda_open() or gc_skip() with its reason. */
struct gc_cuda *gc_cuda_require(void);

/* `CUDA_ERROR_INVALID_VALUE (invalid argument)` into buf. */
const char *gc_cu_strerror(const struct gc_cuda *cu, CUresult r, char *buf, size_t len);

/*
 * Give back the primary-context references gc_cuda_open() took (every
 * device's ctx becomes NULL, none is current on this thread): for tests of
 * the primary context's own lifecycle, which must start from no reference.
 * The first error, CUDA_SUCCESS when none.
 */
CUresult gc_cuda_release_primary(struct gc_cuda *cu);

/* Make device i's primary context current on this thread. */
CUresult gc_cuda_use(const struct gc_cuda *cu, int i);

/*
 * Device i's memory in use (total - free, cuMemGetInfo), bytes, or -EIO;
 * its primary context made current on this thread first if it is not.
 * gc_cuda_soak_dev0 is the soak callback (lib/soak.h .dev_used) of device 0,
 * its argument the struct gc_cuda.
 */
long long gc_cuda_dev_used(const struct gc_cuda *cu, int i);
long long gc_cuda_soak_dev0(void *cu);

#define gc_cu_assert(cu, call)                                                        \
	do {                                                                          \
		CUresult gc_r__ = (call);                                             \
		if (gc_r__ != CUDA_SUCCESS)                                           \
			gc__cu_fail(cu, __FILE__, __LINE__, __func__, #call, CUDA_SUCCESS, \
				    gc_r__);                                          \
	} while (0)
/* The call must fail with exactly `want`. */
#define gc_cu_assert_err(cu, call, want)                                                \
	do {                                                                            \
		CUresult gc_r__ = (call);                                               \
		if (gc_r__ != (want))                                                   \
			gc__cu_fail(cu, __FILE__, __LINE__, __func__, #call, want, gc_r__); \
	} while (0)
void gc__cu_fail(const struct gc_cuda *cu, const char *file, int line, const char *func,
		 const char *expr, CUresult want, CUresult got) __attribute__((noreturn));

/* ---------------------------------------------------------------- VMM */

struct gc_vmm_gran {
	size_t minimum;     /* CU_MEM_ALLOC_GRANULARITY_MINIMUM */
	size_t recommended; /* CU_MEM_ALLOC_GRANULARITY_RECOMMENDED */
};

/* Pinned device memory on device ordinal dev (the props every VMM test uses). */
CUmemAllocationProp gc_vmm_prop(int dev);
CUresult gc_vmm_granularity(const struct gc_cuda *cu, int dev, struct gc_vmm_gran *g);

/* Access descriptors: flags for each device ordinal in devs[0..n). */
CUresult gc_vmm_set_access(const struct gc_cuda *cu, CUdeviceptr va, size_t size,
			   const int *devs, size_t n, CUmemAccess_flags flags);

/*
 * A whole VMM allocation: create (size rounded up to the granularity),
 * reserve, map, set read-write access for device dev. gc_vmm_free() undoes
 * what was done, in reverse order, and returns the first error.
 */
struct gc_vmm {
	CUmemGenericAllocationHandle handle;
	CUdeviceptr va;
	size_t size;
	bool created, reserved, mapped;
};
CUresult gc_vmm_alloc(const struct gc_cuda *cu, int dev, size_t size, struct gc_vmm *m);
CUresult gc_vmm_free(const struct gc_cuda *cu, struct gc_vmm *m);

/* ------------------------------------------------------------- kernels */

#define GC_CU_BLOCK 256 /* every gpuconform kernel's fixed block size */

struct gc_cu_kernels {
	CUmodule module;
	CUfunction fill_u32;
	CUfunction check_u32;
	CUfunction stamp; /* gc_stamp: device-clock start/end stamps and a run count */
	CUfunction gate;  /* gc_gate: spins until a host-mapped flag opens it */
};

/*
 * Load data/kernels/gpuconform.ptx into the current context. The directory is
 * $GPUCONFORM_DATA_DIR/kernels, else the source tree's data/kernels.
 */
CUresult gc_cu_kernels_load(const struct gc_cuda *cu, struct gc_cu_kernels *k, char *why,
			    size_t why_len);
void gc_cu_kernels_unload(const struct gc_cuda *cu, struct gc_cu_kernels *k);

/*
 * The same PTX as a context-independent library (cuLibraryLoadData): its
 * kernels (cuLibraryGetKernel) launch in whichever context is current, also
 * in contexts created after the load. why[] as for gc_cu_kernels_load().
 */
CUresult gc_cu_kernels_library(const struct gc_cuda *cu, CUlibrary *lib, char *why,
			       size_t why_len);

/* The pattern gc_fill_u32 writes: must equal the kernel's gc_pattern_u32(). */
uint32_t gc_pattern_u32(uint64_t i, uint32_t seed);

/*
 * Launch gc_fill_u32 given as fill (a CUfunction, or a library's CUkernel
 * cast to one, which launches in the current context) over n words at p.
 */
CUresult gc_cu_launch_fill(const struct gc_cuda *cu, CUfunction fill, CUdeviceptr p, uint64_t n,
			   uint32_t seed, CUstream s);
/* Launch fill / check over n 32-bit words at p on stream s (0: legacy default). */
CUresult gc_cu_fill_u32(const struct gc_cuda *cu, const struct gc_cu_kernels *k, CUdeviceptr p,
			uint64_t n, uint32_t seed, CUstream s);
/*
 * Check n words at p against the pattern on the GPU: *bad = mismatching
 * words, *first = the first one's index (UINT64_MAX when none). Synchronous.
 */
CUresult gc_cu_check_u32(const struct gc_cuda *cu, const struct gc_cu_kernels *k, CUdeviceptr p,
			 uint64_t n, uint32_t seed, uint64_t *bad, uint64_t *first);

/* ------------------------------------------------------- leak checks */

#define GC_CUDA_SNAPSHOT_MAX 16 /* devices a snapshot covers; further ones are not checked */

/* What a subtest must give back: device free memory and /dev/nvidia* fds. */
struct gc_cuda_snapshot {
	int n_devices;
	size_t free_mem[GC_CUDA_SNAPSHOT_MAX];
	int nvidia_fds;
};
int gc_cuda_snapshot(const struct gc_cuda *cu, struct gc_cuda_snapshot *s);
/*
 * Fails the subtest, naming every difference, unless now equals before
 * (free memory within slack bytes per device).
 */
void gc_cuda_leak_check(const struct gc_cuda *cu, const struct gc_cuda_snapshot *before,
			size_t slack);

/*
 * The leak-checked fixture every CUDA binary uses: its fixture data begins
 * with a struct gc_cuda_fixture named dev. Before each subtest device 0's
 * primary context is made current and a snapshot taken; after each, every
 * device is synchronised (an error a subtest left queued fails here, named)
 * and gc_cuda_leak_check() compares with the snapshot.
 *
 *     struct my_fx { struct gc_cuda_fixture dev; ... };
 *     setup():     f = gc_cuda_fixture_new(gc_cuda_require(), sizeof(*f), 0);
 *     fixture:     .before_each = gc_cuda_fixture_snapshot,
 *                  .after_each = gc_cuda_fixture_check,   (or a function that
 *                                gives back its own first, then calls it)
 *                  .teardown = gc_cuda_fixture_free       (likewise)
 */
struct gc_cuda_fixture {
	struct gc_cuda *cu;
	struct gc_cuda_snapshot before;
	size_t slack; /* free-memory bytes per device the leak check tolerates */
};
/* setup(): size bytes of fixture data, zeroed, beginning with a gc_cuda_fixture on cu. */
void *gc_cuda_fixture_new(struct gc_cuda *cu, size_t size, size_t slack);
void gc_cuda_fixture_snapshot(void *data); /* before_each() */
void gc_cuda_fixture_check(void *data);    /* after_each(): sync every device, leak check */
void gc_cuda_fixture_free(void *data);     /* teardown(): gc_cuda_close(), data freed */

/* ------------------------------------------------- per device, per pair */

/*
 * The first n devices of cu (all when n < 0 or n > cu->n_devices), in
 * ordinal order, as lib/core.h's device list: gc_each_device() and
 * gc_each_device_pair() over it name each `gpu<N>`, N the ordinal's
 * gc_device_index(), and hand the body a const struct gc_cuda_device *.
 */
struct gc_devices gc_cuda_devices(const struct gc_cuda *cu, int n);

#endif
