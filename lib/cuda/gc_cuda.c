// SPDX-License-Identifier: MIT
#include "gc_cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GPUCONFORM_DATA_DIR
#define GPUCONFORM_DATA_DIR "data"
#endif

/* ------------------------------------------------------------ loading */

/*
 * Entry points are looked up by the names the header's macros expand to
 * (cuMemGetInfo -> cuMemGetInfo_v2), which is what linking against libcuda
 * would bind: the ABI of the prototype we compile against. cuGetProcAddress
 * with CUDA_VERSION is not equivalent: it returns the newest ABI of the base
 * name (cuCtxSynchronize at 13000 is cuCtxSynchronize_v2(CUcontext), while
 * <cuda.h> declares cuCtxSynchronize(void)).
 */
#define GC_STR2(x) #x
#define GC_STR(x) GC_STR2(x)

static int resolve_one(void *lib, const char *symbol, void **slot, char *why, size_t why_len)
{
	*slot = dlsym(lib, symbol);
	if (*slot)
		return 0;
	snprintf(why, why_len, "libcuda.so.1 has no %s: driver older than the CUDA %d.%d headers "
		 "gpuconform was built with", symbol, CUDA_VERSION / 1000,
		 CUDA_VERSION % 1000 / 10);
	return -ENOSYS;
}

static int resolve_all(struct gc_cuda *cu, char *why, size_t why_len)
{
	int r = 0;

#define GC_CU_RESOLVE(name) \
	if (!r)             \
		r = resolve_one(cu->lib, GC_STR(name), (void **)&cu->name, why, why_len);
	GC_CU_FUNCS(GC_CU_RESOLVE)
#undef GC_CU_RESOLVE
	return r;
}

const char *gc_cu_strerror(const struct gc_cuda *cu, CUresult r, char *buf, size_t len)
{
	const char *name = NULL, *text = NULL;

	if (cu && cu->cuGetErrorName)
		cu->cuGetErrorName(r, &name);
	if (cu && cu->cuGetErrorString)
		cu->cuGetErrorString(r, &text);
	if (name)
		snprintf(buf, len, "%s (%s)", name, text ? text : "?");
	else
		snprintf(buf, len, "CUresult %d", (int)r);
	return buf;
}

static void format_uuid(const CUuuid *u, char *out)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

static CUresult describe_device(struct gc_cuda *cu, int i, struct gc_cuda_device *d)
{
	CUuuid uuid;
	int vmm = 0;
	CUresult r;

	d->ordinal = i;
	r = cu->cuDeviceGet(&d->dev, i);
	if (!r)
		r = cu->cuDeviceGetName(d->name, sizeof(d->name), d->dev);
	if (!r)
		r = cu->cuDeviceGetUuid(&uuid, d->dev);
	if (!r)
		r = cu->cuDeviceGetPCIBusId(d->pci_bus_id, sizeof(d->pci_bus_id), d->dev);
	if (!r)
		r = cu->cuDeviceTotalMem(&d->total_mem, d->dev);
	if (!r)
		r = cu->cuDeviceGetAttribute(&vmm,
			CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d->dev);
	if (!r)
		r = cu->cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
	if (!r)
		format_uuid(&uuid, d->uuid);
	d->vmm = vmm != 0;
	return r;
}

static int cu_failure(const struct gc_cuda *cu, const char *what, CUresult r, char *why,
		      size_t why_len)
{
	char err[160];

	snprintf(why, why_len, "%s: %s", what, gc_cu_strerror(cu, r, err, sizeof(err)));
	return r == CUDA_ERROR_NO_DEVICE ? -ENODEV : -EIO;
}

static int list_devices(struct gc_cuda *cu, char *why, size_t why_len)
{
	CUresult r = cu->cuDeviceGetCount(&cu->n_devices);

	if (r)
		return cu_failure(cu, "cuDeviceGetCount", r, why, why_len);
	if (cu->n_devices < 1) {
		snprintf(why, why_len, "no CUDA device (cuDeviceGetCount = 0)");
		return -ENODEV;
	}
	cu->devices = calloc((size_t)cu->n_devices, sizeof(*cu->devices));
	if (!cu->devices)
		return -ENOMEM;
	for (int i = 0; i < cu->n_devices; i++) {
		r = describe_device(cu, i, &cu->devices[i]);
		if (r)
			return cu_failure(cu, "describing a device", r, why, why_len);
	}
	r = cu->cuCtxSetCurrent(cu->devices[0].ctx);
	return r ? cu_failure(cu, "cuCtxSetCurrent", r, why, why_len) : 0;
}

static int start_driver(struct gc_cuda *cu, char *why, size_t why_len)
{
	CUresult r;
	int err;

	cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cu->lib) {
		snprintf(why, why_len, "%s", dlerror());
		return -ENOENT;
	}
	err = resolve_all(cu, why, why_len);
	if (err)
		return err;
	r = cu->cuInit(0);
	if (r)
		return cu_failure(cu, "cuInit", r, why, why_len);
	r = cu->cuDriverGetVersion(&cu->driver_version);
	if (r)
		return cu_failure(cu, "cuDriverGetVersion", r, why, why_len);
	return list_devices(cu, why, why_len);
}

int gc_cuda_open(struct gc_cuda **out, char *why, size_t why_len)
{
	struct gc_cuda *cu = calloc(1, sizeof(*cu));
	int err;

	*out = NULL;
	if (!cu)
		return -ENOMEM;
	err = start_driver(cu, why, why_len);
	if (err) {
		gc_cuda_close(cu);
		return err;
	}
	*out = cu;
	return 0;
}

void gc_cuda_close(struct gc_cuda *cu)
{
	if (!cu)
		return;
	for (int i = 0; cu->devices && i < cu->n_devices; i++)
		if (cu->devices[i].ctx)
			cu->cuDevicePrimaryCtxRelease(cu->devices[i].dev);
	free(cu->devices);
	/* libcuda stays loaded: unloading a driver library mid-process is not supported. */
	free(cu);
}

struct gc_cuda *gc_cuda_require(void)
{
	struct gc_cuda *cu;
	char why[512];
	int err = gc_cuda_open(&cu, why, sizeof(why));

	if (err == -ENOENT || err == -ENODEV || err == -ENOSYS)
		gc_skip("%s", why);
	if (err)
		gc_fail("CUDA driver: %s", err == -ENOMEM ? "out of host memory" : why);
	return cu;
}

CUresult gc_cuda_release_primary(struct gc_cuda *cu)
{
	CUresult first = cu->cuCtxSetCurrent(NULL);

	for (int i = 0; i < cu->n_devices; i++) {
		CUresult r = CUDA_SUCCESS;

		if (cu->devices[i].ctx)
			r = cu->cuDevicePrimaryCtxRelease(cu->devices[i].dev);
		cu->devices[i].ctx = NULL;
		if (!first)
			first = r;
	}
	return first;
}

CUresult gc_cuda_use(const struct gc_cuda *cu, int i)
{
	return cu->cuCtxSetCurrent(cu->devices[i].ctx);
}

long long gc_cuda_dev_used(const struct gc_cuda *cu, int i)
{
	size_t free_b = 0, total_b = 0;
	CUcontext cur = NULL;

	if (cu->cuCtxGetCurrent(&cur) || (cur != cu->devices[i].ctx && gc_cuda_use(cu, i)) ||
	    cu->cuMemGetInfo(&free_b, &total_b))
		return -EIO;
	return (long long)(total_b - free_b);
}

long long gc_cuda_soak_dev0(void *cu)
{
	return gc_cuda_dev_used(cu, 0);
}

void gc__cu_fail(const struct gc_cuda *cu, const char *file, int line, const char *func,
		 const char *expr, CUresult want, CUresult got)
{
	char w[160], g[160];

	gc__fail(file, line, func, "%s\n  returned %s\n  expected %s", expr,
		 gc_cu_strerror(cu, got, g, sizeof(g)), gc_cu_strerror(cu, want, w, sizeof(w)));
}

/* ---------------------------------------------------------------- VMM */

CUmemAllocationProp gc_vmm_prop(int dev)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	return p;
}

CUresult gc_vmm_granularity(const struct gc_cuda *cu, int dev, struct gc_vmm_gran *g)
{
	CUmemAllocationProp p = gc_vmm_prop(dev);
	CUresult r = cu->cuMemGetAllocationGranularity(&g->minimum, &p,
						       CU_MEM_ALLOC_GRANULARITY_MINIMUM);

	if (!r)
		r = cu->cuMemGetAllocationGranularity(&g->recommended, &p,
						      CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
	return r;
}

CUresult gc_vmm_set_access(const struct gc_cuda *cu, CUdeviceptr va, size_t size,
			   const int *devs, size_t n, CUmemAccess_flags flags)
{
	CUmemAccessDesc desc[16];

	if (n > 16)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		memset(&desc[i], 0, sizeof(desc[i]));
		desc[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		desc[i].location.id = devs[i];
		desc[i].flags = flags;
	}
	return cu->cuMemSetAccess(va, size, desc, n);
}

CUresult gc_vmm_alloc(const struct gc_cuda *cu, int dev, size_t size, struct gc_vmm *m)
{
	CUmemAllocationProp p = gc_vmm_prop(dev);
	struct gc_vmm_gran g;
	CUresult r = gc_vmm_granularity(cu, dev, &g);

	memset(m, 0, sizeof(*m));
	if (r)
		return r;
	m->size = gc_align_up(size, g.minimum);
	r = cu->cuMemCreate(&m->handle, m->size, &p, 0);
	m->created = !r;
	if (!r)
		r = cu->cuMemAddressReserve(&m->va, m->size, 0, 0, 0);
	m->reserved = m->created && !r;
	if (!r)
		r = cu->cuMemMap(m->va, m->size, 0, m->handle, 0);
	m->mapped = m->reserved && !r;
	if (!r)
		r = gc_vmm_set_access(cu, m->va, m->size, &dev, 1,
				      CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	return r;
}

CUresult gc_vmm_free(const struct gc_cuda *cu, struct gc_vmm *m)
{
	CUresult first = CUDA_SUCCESS, r;

	if (m->mapped && (r = cu->cuMemUnmap(m->va, m->size)) && !first)
		first = r;
	if (m->reserved && (r = cu->cuMemAddressFree(m->va, m->size)) && !first)
		first = r;
	if (m->created && (r = cu->cuMemRelease(m->handle)) && !first)
		first = r;
	m->mapped = m->reserved = m->created = false;
	return first;
}

/* ------------------------------------------------------------- kernels */

uint32_t gc_pattern_u32(uint64_t i, uint32_t seed)
{
	uint64_t x = i * 0x9E3779B97F4A7C15ull ^ (uint64_t)seed;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = '\0';
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void kernels_path(char *out, size_t len)
{
	const char *dir = getenv("GPUCONFORM_DATA_DIR");

	snprintf(out, len, "%s/kernels/gpuconform.ptx", dir && *dir ? dir : GPUCONFORM_DATA_DIR);
}

/* The PTX text (malloc'd) into *ptx, its path into path[]; why[] on failure. */
static CUresult read_ptx(char **ptx, char *path, size_t path_len, char *why, size_t why_len)
{
	size_t len = 0;

	kernels_path(path, path_len);
	*ptx = read_file(path, &len);
	if (*ptx)
		return CUDA_SUCCESS;
	snprintf(why, why_len, "%s: %s (set GPUCONFORM_DATA_DIR)", path, strerror(errno));
	return CUDA_ERROR_FILE_NOT_FOUND;
}

CUresult gc_cu_kernels_library(const struct gc_cuda *cu, CUlibrary *lib, char *why,
			       size_t why_len)
{
	char path[4096], err[160];
	char *ptx;
	CUresult r = read_ptx(&ptx, path, sizeof(path), why, why_len);

	if (r)
		return r;
	r = cu->cuLibraryLoadData(lib, ptx, NULL, NULL, 0, NULL, NULL, 0);
	free(ptx);
	if (r)
		snprintf(why, why_len, "cuLibraryLoadData(%s): %s", path,
			 gc_cu_strerror(cu, r, err, sizeof(err)));
	return r;
}

CUresult gc_cu_kernels_load(const struct gc_cuda *cu, struct gc_cu_kernels *k, char *why,
			    size_t why_len)
{
	char path[4096], err[160];
	char *ptx;
	CUresult r;

	memset(k, 0, sizeof(*k));
	r = read_ptx(&ptx, path, sizeof(path), why, why_len);
	if (r)
		return r;
	r = cu->cuModuleLoadData(&k->module, ptx);
	free(ptx);
	if (!r)
		r = cu->cuModuleGetFunction(&k->fill_u32, k->module, "gc_fill_u32");
	if (!r)
		r = cu->cuModuleGetFunction(&k->check_u32, k->module, "gc_check_u32");
	/* Only cuda_bubbles needs these: it checks for NULL and says so. */
	if (!r && cu->cuModuleGetFunction(&k->stamp, k->module, "gc_stamp") != CUDA_SUCCESS)
		k->stamp = NULL;
	if (!r && cu->cuModuleGetFunction(&k->gate, k->module, "gc_gate") != CUDA_SUCCESS)
		k->gate = NULL;
	if (r)
		snprintf(why, why_len, "loading %s: %s", path, gc_cu_strerror(cu, r, err, sizeof(err)));
	return r;
}

void gc_cu_kernels_unload(const struct gc_cuda *cu, struct gc_cu_kernels *k)
{
	if (k->module)
		cu->cuModuleUnload(k->module);
	memset(k, 0, sizeof(*k));
}

static unsigned blocks_for(uint64_t n)
{
	return (unsigned)((n + GC_CU_BLOCK - 1) / GC_CU_BLOCK);
}

CUresult gc_cu_launch_fill(const struct gc_cuda *cu, CUfunction fill, CUdeviceptr p, uint64_t n,
			   uint32_t seed, CUstream s)
{
	void *args[] = { &p, &n, &seed };

	if (!n)
		return CUDA_SUCCESS;
	return cu->cuLaunchKernel(fill, blocks_for(n), 1, 1, GC_CU_BLOCK, 1, 1, 0, s, args, NULL);
}

CUresult gc_cu_fill_u32(const struct gc_cuda *cu, const struct gc_cu_kernels *k, CUdeviceptr p,
			uint64_t n, uint32_t seed, CUstream s)
{
	return gc_cu_launch_fill(cu, k->fill_u32, p, n, seed, s);
}

CUresult gc_cu_check_u32(const struct gc_cuda *cu, const struct gc_cu_kernels *k, CUdeviceptr p,
			 uint64_t n, uint32_t seed, uint64_t *bad, uint64_t *first)
{
	uint64_t init[2] = { 0, UINT64_MAX }, res[2];
	CUdeviceptr out = 0;
	void *args[] = { &p, &n, &seed, &out };
	CUresult r = cu->cuMemAlloc(&out, sizeof(init));

	if (!r)
		r = cu->cuMemcpyHtoD(out, init, sizeof(init));
	if (!r && n)
		r = cu->cuLaunchKernel(k->check_u32, blocks_for(n), 1, 1, GC_CU_BLOCK, 1, 1, 0, 0,
				       args, NULL);
	if (!r)
		r = cu->cuMemcpyDtoH(res, out, sizeof(res)); /* synchronises with the launch */
	if (out)
		cu->cuMemFree(out);
	if (!r) {
		*bad = res[0];
		*first = res[1];
	}
	return r;
}
