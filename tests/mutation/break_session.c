// SPDX-License-Identifier: MIT
/*
 * break_session.so: an LD_PRELOAD shim that breaks the session contract of
 * NVML or of the CUDA primary context one way at a time, so that
 * nvml_session and cuda_context can be shown to catch it. Both open their
 * library with dlopen and resolve it with dlsym, so the shim interposes
 * dlsym(): for the few entry points a break needs, it hands out a wrapper
 * that calls the real one and then misbehaves. $GPUCONFORM_BREAK picks:
 *
 *   nvml-shutdown-unrefcounted  nvmlShutdown tears the whole library down
 *   nvml-extra-shutdown-ok      nvmlShutdown with nothing open reports success
 *   nvml-shutdown-keeps-node    every nvmlShutdown after the first leaves an
 *                               fd of /dev/nvidiactl open
 *   nvml-name-flips             every 100th nvmlDeviceGetName answers another name
 *   nvml-temperature-fails      every 100th nvmlDeviceGetTemperature fails UNKNOWN
 *   nvml-init-hangs             the 200th nvmlInit_v2 never returns
 *   nvml-stale-handle-other     nvmlDeviceGetUUID of a handle from an ended
 *                               session names another device
 *   nvml-unknown-uuid-found     a UUID of no device finds device 0
 *   cuda-release-twice          cuDevicePrimaryCtxRelease drops two references
 *   cuda-release-leaks          the second release drops none (and says success)
 *   cuda-release-leaks-hidden   the same, and from then on the context reads
 *                               inactive (so only device memory tells)
 *   cuda-release-leaks-fd       every release after the first leaves an fd of
 *                               /dev/nvidiactl open
 *   cuda-extra-release-ok       a release with no reference left reports success
 *   cuda-retain-new-handle      a retain of a context already retained answers
 *                               another handle
 *   cuda-stale-pointer-valid    cuPointerGetAttribute never fails INVALID_VALUE
 *   cuda-copy-flips             every 3000th cuMemcpyDtoH flips a bit
 *   cuda-retain-hangs           the 3000th retain never returns
 *
 * The NVML counts fire inside the rounds nvml_session's concurrent-sessions
 * must run whatever its budget and the node: each of its 256 threads runs
 * at least one round (one init, one name, one temperature), so the 200th
 * init and the 100th name and temperature come, however few rounds a slow
 * node fits in quick's 3 s (counted to 500, name-flips and init-hangs went
 * uncaught on four H200s).
 *
 * Why some breaks start after the first call: the fixtures shut down or
 * release once before any subtest runs; a break that started there would fail
 * the fixture instead of the check meant for it. The first time a break
 * changes a result the shim writes `break_session: applied NAME` to stderr. An
 * unknown name exits 2 at load. Library types are declared here as the plain C
 * types of their ABI (nvmlReturn_t and CUresult are ints), so the shim builds
 * without either header. Caveat: code that calls dlsym(RTLD_NEXT, ...) while
 * the shim is loaded resolves relative to the shim; neither library under test
 * does.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_UNKNOWN 999
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_INVALID_CONTEXT 201

enum brk {
	BRK_NONE,
	NV_UNREFCOUNTED,
	NV_EXTRA_OK,
	NV_KEEPS_NODE,
	NV_NAME_FLIPS,
	NV_TEMP_FAILS,
	NV_INIT_HANGS,
	NV_STALE_OTHER,
	NV_UNKNOWN_FOUND,
	CU_RELEASE_TWICE,
	CU_RELEASE_LEAKS,
	CU_LEAKS_HIDDEN,
	CU_LEAKS_FD,
	CU_EXTRA_OK,
	CU_NEW_HANDLE,
	CU_STALE_VALID,
	CU_COPY_FLIPS,
	CU_RETAIN_HANGS,
	BRK_COUNT
};

static const char *const brk_names[BRK_COUNT] = {
	[NV_UNREFCOUNTED] = "nvml-shutdown-unrefcounted",
	[NV_EXTRA_OK] = "nvml-extra-shutdown-ok",
	[NV_KEEPS_NODE] = "nvml-shutdown-keeps-node",
	[NV_NAME_FLIPS] = "nvml-name-flips",
	[NV_TEMP_FAILS] = "nvml-temperature-fails",
	[NV_INIT_HANGS] = "nvml-init-hangs",
	[NV_STALE_OTHER] = "nvml-stale-handle-other",
	[NV_UNKNOWN_FOUND] = "nvml-unknown-uuid-found",
	[CU_RELEASE_TWICE] = "cuda-release-twice",
	[CU_RELEASE_LEAKS] = "cuda-release-leaks",
	[CU_LEAKS_HIDDEN] = "cuda-release-leaks-hidden",
	[CU_LEAKS_FD] = "cuda-release-leaks-fd",
	[CU_EXTRA_OK] = "cuda-extra-release-ok",
	[CU_NEW_HANDLE] = "cuda-retain-new-handle",
	[CU_STALE_VALID] = "cuda-stale-pointer-valid",
	[CU_COPY_FLIPS] = "cuda-copy-flips",
	[CU_RETAIN_HANGS] = "cuda-retain-hangs",
};

typedef void *handle_t;

/* Set once at load, before any thread. */
static enum brk mode;
static void *(*real_dlsym)(void *, const char *);

/* The shim's own bookkeeping, touched only through atomics or under lock. */
static unsigned long calls[8];
static int announced;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int nv_depth;         /* open NVML sessions as the shim counted them */
static unsigned nv_gen;      /* outermost NVML sessions begun */
static struct { handle_t h; unsigned gen; } nv_handles[64];
static int cu_refs[64];      /* primary-context references per device, as counted here */
static int cu_hidden;        /* cuda-release-leaks-hidden: the leak happened */

static void applied(void)
{
	if (!__atomic_exchange_n(&announced, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "break_session: applied %s\n", brk_names[mode]);
}

/* 1 for the first call of counter c, 2 for the second, ... */
static unsigned long nth(int c)
{
	return __atomic_add_fetch(&calls[c], 1, __ATOMIC_RELAXED);
}

static void hang_forever(void)
{
	applied();
	for (;;)
		pause();
}

static void leak_ctl_fd(void)
{
	if (open("/dev/nvidiactl", O_RDONLY | O_CLOEXEC) >= 0)
		applied();
}

/* ---------------------------------------------------------------- NVML */

static int (*nv_init)(void);
static int (*nv_shutdown)(void);
static int (*nv_name)(handle_t, char *, unsigned);
static int (*nv_temp)(handle_t, int, unsigned *);
static int (*nv_uuid)(handle_t, char *, unsigned);
static int (*nv_by_uuid)(const char *, handle_t *);
static int (*nv_by_index)(unsigned, handle_t *);

static int w_nv_init(void)
{
	int r;

	if (mode == NV_INIT_HANGS && nth(0) == 200)
		hang_forever();
	r = nv_init();
	if (r == NVML_SUCCESS) {
		pthread_mutex_lock(&lock);
		nv_gen += nv_depth++ == 0;
		pthread_mutex_unlock(&lock);
	}
	return r;
}

static int w_nv_shutdown(void)
{
	int r = nv_shutdown();

	if (r == NVML_SUCCESS) {
		pthread_mutex_lock(&lock);
		nv_depth--;
		pthread_mutex_unlock(&lock);
	}
	if (mode == NV_UNREFCOUNTED && r == NVML_SUCCESS && nv_shutdown() == NVML_SUCCESS) {
		applied();
		while (nv_shutdown() == NVML_SUCCESS)
			;
	}
	if (mode == NV_EXTRA_OK && r == NVML_ERROR_UNINITIALIZED) {
		applied();
		r = NVML_SUCCESS;
	}
	if (mode == NV_KEEPS_NODE && r == NVML_SUCCESS && nth(1) > 1)
		leak_ctl_fd();
	return r;
}

static int w_nv_name(handle_t d, char *name, unsigned len)
{
	int r = nv_name(d, name, len);

	if (mode == NV_NAME_FLIPS && r == NVML_SUCCESS && len > 1 && nth(2) % 100 == 0) {
		applied();
		name[0] = name[0] == 'X' ? 'Y' : 'X';
	}
	return r;
}

static int w_nv_temp(handle_t d, int sensor, unsigned *t)
{
	int r = nv_temp(d, sensor, t);

	if (mode == NV_TEMP_FAILS && nth(3) % 100 == 0) {
		applied();
		return NVML_ERROR_UNKNOWN;
	}
	return r;
}

/* nvml-stale-handle-other: remember in which outermost session a handle was last given. */
static void note_handle(handle_t h)
{
	size_t i, free_slot = sizeof(nv_handles) / sizeof(nv_handles[0]);

	pthread_mutex_lock(&lock);
	for (i = 0; i < sizeof(nv_handles) / sizeof(nv_handles[0]); i++) {
		if (nv_handles[i].h == h)
			break;
		if (!nv_handles[i].h && i < free_slot)
			free_slot = i;
	}
	if (i == sizeof(nv_handles) / sizeof(nv_handles[0]))
		i = free_slot;
	if (i < sizeof(nv_handles) / sizeof(nv_handles[0])) {
		nv_handles[i].h = h;
		nv_handles[i].gen = nv_gen;
	}
	pthread_mutex_unlock(&lock);
}

static bool handle_is_stale(handle_t h)
{
	bool stale = false;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < sizeof(nv_handles) / sizeof(nv_handles[0]); i++)
		if (nv_handles[i].h == h)
			stale = nv_handles[i].gen != nv_gen;
	pthread_mutex_unlock(&lock);
	return stale;
}

static int w_nv_uuid(handle_t d, char *uuid, unsigned len)
{
	int r = nv_uuid(d, uuid, len);

	if (mode == NV_STALE_OTHER && handle_is_stale(d)) {
		applied();
		snprintf(uuid, len, "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff");
		return NVML_SUCCESS;
	}
	return r;
}

static int w_nv_by_index(unsigned i, handle_t *d)
{
	int r = nv_by_index(i, d);

	if (r == NVML_SUCCESS)
		note_handle(*d);
	return r;
}

static int w_nv_by_uuid(const char *uuid, handle_t *d)
{
	int r = nv_by_uuid(uuid, d);

	if (mode == NV_UNKNOWN_FOUND && r == NVML_ERROR_NOT_FOUND) {
		applied();
		return nv_by_index(0, d);
	}
	return r;
}

/* ---------------------------------------------------------------- CUDA */

static int (*cu_retain)(handle_t *, int);
static int (*cu_release)(int);
static int (*cu_state)(int, unsigned *, int *);
static int (*cu_ptr_attr)(void *, int, unsigned long long);
static int (*cu_dtoh)(void *, unsigned long long, size_t);

static int *refs_of(int dev)
{
	static int spare;

	return dev >= 0 && dev < 64 ? &cu_refs[dev] : &spare;
}

static int w_cu_retain(handle_t *ctx, int dev)
{
	int r, before;

	if (mode == CU_RETAIN_HANGS && nth(0) == 3000)
		hang_forever();
	r = cu_retain(ctx, dev);
	if (r != CUDA_SUCCESS)
		return r;
	before = __atomic_fetch_add(refs_of(dev), 1, __ATOMIC_RELAXED);
	if (mode == CU_NEW_HANDLE && before > 0) {
		applied();
		*ctx = (char *)*ctx + 64;
	}
	return r;
}

static bool skip_this_release(void)
{
	if ((mode != CU_RELEASE_LEAKS && mode != CU_LEAKS_HIDDEN) || nth(1) != 2)
		return false;
	applied();
	__atomic_store_n(&cu_hidden, mode == CU_LEAKS_HIDDEN, __ATOMIC_RELAXED);
	return true;
}

static int w_cu_release(int dev)
{
	int r;

	if (skip_this_release())
		return CUDA_SUCCESS;
	r = cu_release(dev);
	if (mode == CU_EXTRA_OK && r == CUDA_ERROR_INVALID_CONTEXT) {
		applied();
		return CUDA_SUCCESS;
	}
	if (r != CUDA_SUCCESS)
		return r;
	__atomic_fetch_sub(refs_of(dev), 1, __ATOMIC_RELAXED);
	if (mode == CU_RELEASE_TWICE && cu_release(dev) == CUDA_SUCCESS)
		applied();
	if (mode == CU_LEAKS_FD && nth(2) > 1)
		leak_ctl_fd();
	return r;
}

static int w_cu_state(int dev, unsigned *flags, int *active)
{
	int r = cu_state(dev, flags, active);

	if (r == CUDA_SUCCESS && __atomic_load_n(&cu_hidden, __ATOMIC_RELAXED))
		*active = 0;
	return r;
}

static int w_cu_ptr_attr(void *data, int attr, unsigned long long ptr)
{
	int r = cu_ptr_attr(data, attr, ptr);

	if (mode == CU_STALE_VALID && r == CUDA_ERROR_INVALID_VALUE) {
		applied();
		memset(data, 0, sizeof(void *));
		return CUDA_SUCCESS;
	}
	return r;
}

static int w_cu_dtoh(void *dst, unsigned long long src, size_t n)
{
	int r = cu_dtoh(dst, src, n);

	if (mode == CU_COPY_FLIPS && r == CUDA_SUCCESS && n && nth(3) % 3000 == 0) {
		applied();
		((unsigned char *)dst)[n / 2] ^= 1;
	}
	return r;
}

/* ---------------------------------------------------------------- dlsym */

struct wrap {
	const char *symbol;
	void **real;
	void *wrapper;
	bool (*wanted)(void); /* NULL: for every NVML break or every CUDA break */
};

static bool nvml_break(void) { return mode >= NV_UNREFCOUNTED && mode <= NV_UNKNOWN_FOUND; }
static bool cuda_break(void) { return mode >= CU_RELEASE_TWICE && mode <= CU_RETAIN_HANGS; }

#define W(sym, slot, fn, pred) { sym, (void **)&slot, (void *)fn, pred }
static const struct wrap wraps[] = {
	W("nvmlInit_v2", nv_init, w_nv_init, nvml_break),
	W("nvmlShutdown", nv_shutdown, w_nv_shutdown, nvml_break),
	W("nvmlDeviceGetName", nv_name, w_nv_name, nvml_break),
	W("nvmlDeviceGetTemperature", nv_temp, w_nv_temp, nvml_break),
	W("nvmlDeviceGetUUID", nv_uuid, w_nv_uuid, nvml_break),
	W("nvmlDeviceGetHandleByUUID", nv_by_uuid, w_nv_by_uuid, nvml_break),
	W("nvmlDeviceGetHandleByIndex_v2", nv_by_index, w_nv_by_index, nvml_break),
	W("cuDevicePrimaryCtxRetain", cu_retain, w_cu_retain, cuda_break),
	W("cuDevicePrimaryCtxRelease_v2", cu_release, w_cu_release, cuda_break),
	W("cuDevicePrimaryCtxGetState", cu_state, w_cu_state, cuda_break),
	W("cuPointerGetAttribute", cu_ptr_attr, w_cu_ptr_attr, cuda_break),
	W("cuMemcpyDtoH_v2", cu_dtoh, w_cu_dtoh, cuda_break),
};
#undef W

void *dlsym(void *handle, const char *symbol)
{
	void *p = real_dlsym(handle, symbol);

	if (!p || mode == BRK_NONE)
		return p;
	for (size_t i = 0; i < sizeof(wraps) / sizeof(wraps[0]); i++)
		if (!strcmp(symbol, wraps[i].symbol) && wraps[i].wanted()) {
			*wraps[i].real = p;
			return wraps[i].wrapper;
		}
	return p;
}

static void __attribute__((constructor)) load(void)
{
	const char *want = getenv("GPUCONFORM_BREAK");

	real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!real_dlsym)
		real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym",
								     "GLIBC_2.2.5");
	if (!real_dlsym) {
		fprintf(stderr, "break_session: cannot find the real dlsym\n");
		_exit(2);
	}
	if (!want || !*want)
		return;
	for (int m = 1; m < BRK_COUNT; m++)
		if (!strcmp(want, brk_names[m]))
			mode = (enum brk)m;
	if (mode == BRK_NONE) {
		fprintf(stderr, "break_session: unknown GPUCONFORM_BREAK '%s'\n", want);
		_exit(2);
	}
}
