/*
 * cuda_mem@peer-access-self: cuCtxEnablePeerAccess with the current context
 * as its own peer returns CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, not the
 * documented CUDA_ERROR_INVALID_CONTEXT.
 *
 * cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/usr/local/cuda/include -ldl
 *
 * cuda.h, cuCtxEnablePeerAccess: "Returns ::CUDA_ERROR_INVALID_CONTEXT if
 * there is no current context, \p peerContext is not a valid context, or if
 * the current context is \p peerContext." [src zspace/system.cuda-12.6
 * include/cuda.h @ b3d92c837713] (CUDA 12.6.3; the same words in CUDA 13.0's).
 *
 * The suite's steps (tests/cuda/mem.c, test_peer_access_self): device 0's
 * primary context made current, cuCtxGetCurrent, then
 * cuCtxEnablePeerAccess(that context, 0). One GPU is enough. libcuda is
 * opened at run time, so that a machine without the driver gets "cannot
 * check". Exit 1: another code than CUDA_ERROR_INVALID_CONTEXT; 0: that code;
 * 2: cannot check.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define FUNCS(X) X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)         \
	X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxGetCurrent)                \
	X(cuCtxEnablePeerAccess) X(cuCtxDisablePeerAccess) X(cuGetErrorName)
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
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CUcontext ctx, cur = NULL;
	char dev_name[128];
	CUdevice dev;
	CUresult r;
	int n;

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
	SETUP(cu.cuDeviceGetCount(&n));
	SETUP(cu.cuDeviceGet(&dev, 0));
	SETUP(cu.cuDeviceGetName(dev_name, sizeof(dev_name), dev));
	SETUP(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
	SETUP(cu.cuCtxSetCurrent(ctx));
	SETUP(cu.cuCtxGetCurrent(&cur));
	printf("device 0 of %d: %s\n", n, dev_name);
	r = cu.cuCtxEnablePeerAccess(cur, 0);
	if (r == CUDA_SUCCESS)
		cu.cuCtxDisablePeerAccess(cur);
	printf("expected: cuCtxEnablePeerAccess(the current context, 0): "
	       "CUDA_ERROR_INVALID_CONTEXT\n");
	printf("actual:   cuCtxEnablePeerAccess(the current context, 0): %s\n", err(r));
	return r == CUDA_ERROR_INVALID_CONTEXT ? 0 : 1;
}
