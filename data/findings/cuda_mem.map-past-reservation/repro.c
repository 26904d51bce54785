/*
 * cuda_mem@map-past-reservation: cuMemMap accepts a range that runs past the
 * end of its reservation, into free VA and into the next reservation.
 *
 * cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/usr/local/cuda/include -ldl
 *
 * cuda.h, cuMemMap: "This range must be an address reservation previously
 * reserved with ::cuMemAddressReserve, and \p offset + \p size must be less
 * than the size of the memory allocation." [src zspace/system.cuda-12.6
 * include/cuda.h @ b3d92c837713] (CUDA 12.6.3; the same words in CUDA 13.0's).
 *
 * The suite's steps (tests/cuda/mem.c, map_past_end), g the minimum
 * granularity: an allocation of 2g; a reservation of 4g at va; a second of 2g
 * asked for at va + 4g, which case into-free-va frees and case
 * into-next-reservation keeps; cuMemMap(va + 3g, 2g, offset 0) then runs g
 * past the first reservation. It maps the whole allocation (offset + size =
 * its size, as any whole-allocation map), so only the reservation rule is at
 * stake. Both cases run in this order in one process; an accepted map and
 * what it holds stay until exit, as in the suite. libcuda is opened at run
 * time, so that a machine without the driver gets "cannot check".
 * Exit 1: a map was accepted; 0: both refused; 2: cannot check.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define FUNCS(X) X(cuInit) X(cuDeviceGet) X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) \
	X(cuCtxSetCurrent) X(cuMemGetAllocationGranularity) X(cuMemCreate)               \
	X(cuMemAddressReserve) X(cuMemMap) X(cuMemAddressFree) X(cuMemRelease)           \
	X(cuGetErrorName)
#define MEMBER(f) __typeof__(f) *f;
static struct { FUNCS(MEMBER) } cu;

static const char *err(CUresult r)
{
	const char *s = NULL;

	cu.cuGetErrorName(r, &s);
	return s ? s : "unknown CUresult";
}

#define SETUP(call)                                                                \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		if (r_ != CUDA_SUCCESS) {                                          \
			printf("cannot check: %s: %s (%d)\n", #call, err(r_), r_); \
			return 2;                                                  \
		}                                                                  \
	} while (0)

int main(void)
{
	static const char *const name[2] = { "into-free-va", "into-next-reservation" };
	CUmemAllocationProp p = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				  .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int accepted = 0;
	char dev_name[128];
	CUcontext ctx;
	CUdevice dev;
	size_t g;

	if (!lib) {
		printf("cannot check: no CUDA driver: %s\n", dlerror());
		return 2;
	}
#define LOAD(f)                                                                        \
	if (!(cu.f = (__typeof__(f) *)dlsym(lib, STR(f)))) {                           \
		printf("cannot check: libcuda.so.1 has no %s\n", STR(f));              \
		return 2;                                                              \
	}
	FUNCS(LOAD)
	SETUP(cu.cuInit(0));
	SETUP(cu.cuDeviceGet(&dev, 0));
	SETUP(cu.cuDeviceGetName(dev_name, sizeof(dev_name), dev));
	SETUP(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
	SETUP(cu.cuCtxSetCurrent(ctx));
	SETUP(cu.cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	printf("device 0: %s; g (minimum granularity) = %zu bytes\n", dev_name, g);
	for (int c = 0; c < 2; c++) {
		CUmemGenericAllocationHandle h;
		CUdeviceptr va, next;
		CUresult r;

		SETUP(cu.cuMemCreate(&h, 2 * g, &p, 0));
		SETUP(cu.cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
		SETUP(cu.cuMemAddressReserve(&next, 2 * g, 0, va + 4 * g, 0));
		if (next != va + 4 * g) {
			printf("cannot check: the second reservation is at %#llx, not right after "
			       "the first (%#llx)\n", (unsigned long long)next,
			       (unsigned long long)(va + 4 * g));
			return 2;
		}
		if (c == 0)
			SETUP(cu.cuMemAddressFree(next, 2 * g));
		r = cu.cuMemMap(va + 3 * g, 2 * g, 0, h, 0);
		printf("expected: %s: cuMemMap(va + 3g, 2g) over the reservation [va, va + 4g), "
		       "%s after it: an error\n", name[c], c ? "another reservation" : "free VA");
		printf("actual:   %s: %s\n", name[c], err(r));
		if (r == CUDA_SUCCESS) {
			accepted++;
			continue;
		}
		if (c == 1)
			SETUP(cu.cuMemAddressFree(next, 2 * g));
		SETUP(cu.cuMemAddressFree(va, 4 * g));
		SETUP(cu.cuMemRelease(h));
	}
	return accepted ? 1 : 0;
}
