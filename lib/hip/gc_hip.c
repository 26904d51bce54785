// SPDX-License-Identifier: MIT
/*
 * The HIP runtime table, its strings, the VMM wrappers and the fill / check
 * kernels: see gc_hip.h. Unverified on AMD hardware.
 */
#include "gc_hip.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dl.h"

#ifndef GPUCONFORM_DATA_DIR
#define GPUCONFORM_DATA_DIR "data"
#endif

const char *const gc_hip_sonames[4] = { "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
					"libamdhip64.so.5" };

/* ------------------------------------------------------------ strings */

const char *gc_hip_errstr(const struct gc_hip *hip, hipError_t e, char *buf, size_t len)
{
	const char *name = NULL, *text = NULL;

	if (hip && hip->hipGetErrorName)
		name = hip->hipGetErrorName(e);
	if (hip && hip->hipGetErrorString)
		text = hip->hipGetErrorString(e);
	if (!name)
		snprintf(buf, len, "hipError_t %d", (int)e);
	else if (text && strcmp(text, name)) /* HIP 5.x gives the name twice */
		snprintf(buf, len, "%s (%s)", name, text);
	else
		snprintf(buf, len, "%s", name);
	return buf;
}

const char *gc_hip_version_name(int version, char *buf, size_t len)
{
	if (version < 0) {
		snprintf(buf, len, "unknown");
		return buf;
	}
	snprintf(buf, len, "%d.%d.%d", version / 10000000, version % 10000000 / 100000,
		 version % 100000);
	return buf;
}

const char *gc_hip_runtime_name(const struct gc_hip *hip, char *buf, size_t len)
{
	char v[32];

	snprintf(buf, len, "HIP runtime %s (%s)",
		 gc_hip_version_name(hip->runtime_version, v, sizeof(v)), hip->soname);
	return buf;
}

void gc__hip_call_fail(const struct gc_hip *hip, const char *file, int line, const char *func,
		       const char *expr, hipError_t want, hipError_t got)
{
	char w[160], g[160];

	gc__fail(file, line, func, "%s\n  returned %s\n  expected %s", expr,
		 gc_hip_errstr(hip, got, g, sizeof(g)), gc_hip_errstr(hip, want, w, sizeof(w)));
}

/* ------------------------------------------------------------ loading */

static void set_soname(struct gc_hip *hip, const char *path)
{
	const char *slash = strrchr(path, '/');

	snprintf(hip->soname, sizeof(hip->soname), "%s", slash ? slash + 1 : path);
}

/*
 * The libamdhip64 that `beside` (a library that links it) pulled in: found
 * by dladdr of a runtime symbol beside resolves, so that the process never
 * holds two HIP runtimes.
 */
static bool adopt_runtime(struct gc_hip *hip, void *beside)
{
	void *sym;
	Dl_info info;

	if (!beside)
		return false;
	sym = dlsym(beside, "hipRuntimeGetVersion");
	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return false;
	hip->lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (hip->lib)
		set_soname(hip, info.dli_fname);
	return hip->lib != NULL;
}

static int load_library(struct gc_hip *hip, void *beside, char *why, size_t why_len)
{
	char first[256] = "";

	if (adopt_runtime(hip, beside))
		return 0;
	hip->lib = gc_dlopen_first(gc_hip_sonames, ARRAY_SIZE(gc_hip_sonames),
				   RTLD_NOW | RTLD_GLOBAL, hip->soname, sizeof(hip->soname),
				   first, sizeof(first));
	if (hip->lib)
		return 0;
	snprintf(why, why_len, "%s (also tried libamdhip64.so.7, .so.6, .so.5)", first);
	return -ENOENT;
}

/*
 * Every entry point by its name (the ABI of the 5.2.3 prototype we compile
 * against), the versions, then the first of needs[] missing, if any.
 */
static int resolve(struct gc_hip *hip, const enum gc_hip_entry *needs, size_t n_needs,
		   char *why, size_t why_len)
{
	static const char *const names[] = {
#define GC_HIP_NAME(name) #name,
		GC_HIP_API(GC_HIP_NAME)
#undef GC_HIP_NAME
	};
	bool found[GC_HIP_N_ENTRIES];
	char rt[96];

#define GC_HIP_RESOLVE(name)                                                   \
	hip->name = (__typeof__(name) *)dlsym(hip->lib, #name);                \
	found[gc_hip_e_##name] = hip->name != NULL;
	GC_HIP_API(GC_HIP_RESOLVE)
#undef GC_HIP_RESOLVE
	hip->hipGetProcAddress = (gc_hip_get_proc_address_fn *)dlsym(hip->lib, "hipGetProcAddress");
	if (hip->hipRuntimeGetVersion && hip->hipRuntimeGetVersion(&hip->runtime_version))
		hip->runtime_version = -1;
	if (hip->hipDriverGetVersion && hip->hipDriverGetVersion(&hip->driver_version))
		hip->driver_version = -1;
	for (size_t i = 0; i < n_needs; i++) {
		if (found[needs[i]])
			continue;
		snprintf(why, why_len, "%s has no %s; %s", hip->soname, names[needs[i]],
			 gc_hip_runtime_name(hip, rt, sizeof(rt)));
		return -ENOSYS;
	}
	return 0;
}

static int runtime_failure(const struct gc_hip *hip, const char *call, hipError_t e, char *why,
			   size_t why_len)
{
	char err[160], rt[96];

	gc_hip_errstr(hip, e, err, sizeof(err));
	gc_hip_runtime_name(hip, rt, sizeof(rt));
	if (e == hipErrorNoDevice || e == hipErrorInsufficientDriver) {
		snprintf(why, why_len, "no HIP device: %s: %s; %s", call, err, rt);
		return -ENODEV;
	}
	snprintf(why, why_len, "%s: %s; %s", call, err, rt);
	return -EIO;
}

static hipError_t describe(const struct gc_hip *hip, int i, struct gc_hip_device *d)
{
	hipError_t e = hip->hipDeviceGetName(d->name, sizeof(d->name), i);

	d->ordinal = i;
	if (e == hipSuccess)
		e = hip->hipDeviceGetPCIBusId(d->pci_bus_id, sizeof(d->pci_bus_id), i);
	if (e == hipSuccess)
		e = hip->hipDeviceTotalMem(&d->total_mem, i);
	return e;
}

static int list_devices(struct gc_hip *hip, char *why, size_t why_len)
{
	hipError_t e = hip->hipGetDeviceCount(&hip->n_devices);
	char rt[96];

	if (e != hipSuccess)
		return runtime_failure(hip, "hipGetDeviceCount", e, why, why_len);
	if (hip->n_devices < 1) {
		snprintf(why, why_len, "no HIP device: hipGetDeviceCount = %d; %s", hip->n_devices,
			 gc_hip_runtime_name(hip, rt, sizeof(rt)));
		return -ENODEV;
	}
	hip->devices = calloc((size_t)hip->n_devices, sizeof(*hip->devices));
	if (!hip->devices)
		return -ENOMEM;
	for (int i = 0; i < hip->n_devices; i++) {
		e = describe(hip, i, &hip->devices[i]);
		if (e != hipSuccess)
			return runtime_failure(hip, "describing a device", e, why, why_len);
	}
	e = gc_hip_use(hip, 0);
	return e == hipSuccess ? 0 : runtime_failure(hip, "hipSetDevice(0)", e, why, why_len);
}

int gc_hip_load(struct gc_hip **out, const enum gc_hip_entry *needs, size_t n_needs,
		void *beside, char *why, size_t why_len)
{
	struct gc_hip *hip = calloc(1, sizeof(*hip));
	int err;

	*out = NULL;
	if (!hip)
		return -ENOMEM;
	hip->runtime_version = hip->driver_version = -1;
	err = load_library(hip, beside, why, why_len);
	if (!err)
		err = resolve(hip, needs, n_needs, why, why_len);
	if (err) {
		gc_hip_close(hip);
		return err;
	}
	*out = hip;
	return 0;
}

int gc_hip_open(struct gc_hip **out, char *why, size_t why_len)
{
	static const enum gc_hip_entry needs[] = { GC_HIP_TWIN_API(GC_HIP_ENTRY) };
	int err = gc_hip_load(out, needs, ARRAY_SIZE(needs), NULL, why, why_len);

	if (!err)
		err = list_devices(*out, why, why_len);
	if (err && *out) {
		gc_hip_close(*out);
		*out = NULL;
	}
	return err;
}

void gc_hip_close(struct gc_hip *hip)
{
	if (!hip)
		return;
	free(hip->devices);
	/* The runtime stays loaded: its threads may outlive this call. */
	free(hip);
}

struct gc_hip *gc_hip_require_n(int n)
{
	struct gc_hip *hip;
	char why[512];
	int err = gc_hip_open(&hip, why, sizeof(why)), found;

	if (err == -ENODEV && n > 1)
		gc_skip("needs %d GPUs, found 0 (%s)", n, why);
	if (err == -ENOENT || err == -ENOSYS || err == -ENODEV)
		gc_skip("%s", why);
	if (err)
		gc_fail("HIP runtime: %s", err == -ENOMEM ? "out of host memory" : why);
	found = hip->n_devices;
	if (found < n) {
		gc_hip_close(hip);
		gc_skip("needs %d GPUs, found %d", n, found);
	}
	return hip;
}

struct gc_hip *gc_hip_require(void)
{
	return gc_hip_require_n(1);
}

hipError_t gc_hip_use(const struct gc_hip *hip, int i)
{
	return hip->hipSetDevice(i);
}

/* ---------------------------------------------------------------- VMM */

const hipError_t gc_hip_vmm_errors[2] = { hipErrorInvalidValue, hipErrorNotSupported };

bool gc_hip_listed(hipError_t e, const hipError_t *listed, size_t n)
{
	while (n--)
		if (listed[n] == e)
			return true;
	return false;
}

hipMemAllocationProp gc_hip_vmm_prop(int dev)
{
	hipMemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = hipMemAllocationTypePinned;
	p.requestedHandleType = hipMemHandleTypeNone;
	p.location.type = hipMemLocationTypeDevice;
	p.location.id = dev;
	return p;
}

hipError_t gc_hip_vmm_granularity(const struct gc_hip *hip, int dev, struct gc_hip_vmm_gran *g)
{
	hipMemAllocationProp p = gc_hip_vmm_prop(dev);
	hipError_t e = hip->hipMemGetAllocationGranularity(&g->minimum, &p,
							   hipMemAllocationGranularityMinimum);

	return e != hipSuccess ? e :
		hip->hipMemGetAllocationGranularity(&g->recommended, &p,
						    hipMemAllocationGranularityRecommended);
}

hipError_t gc_hip_vmm_set_access(const struct gc_hip *hip, void *va, size_t size,
				 const int *devs, size_t n, hipMemAccessFlags flags)
{
	hipMemAccessDesc d[16];

	if (n > ARRAY_SIZE(d))
		return hipErrorInvalidValue;
	memset(d, 0, sizeof(d));
	for (size_t i = 0; i < n; i++) {
		d[i].location = (hipMemLocation){ .type = hipMemLocationTypeDevice, .id = devs[i] };
		d[i].flags = flags;
	}
	return hip->hipMemSetAccess(va, size, d, n);
}

hipError_t gc_hip_vmm_get_access(const struct gc_hip *hip, void *va, int dev,
				 unsigned long long *flags)
{
	hipMemLocation loc = { .type = hipMemLocationTypeDevice, .id = dev };

	*flags = ~0ull;
	return hip->hipMemGetAccess(flags, &loc, va);
}

const char *gc_hip_access_name(unsigned long long flags)
{
	switch (flags) {
	case hipMemAccessFlagsProtNone:
		return "ProtNone";
	case hipMemAccessFlagsProtRead:
		return "ProtRead";
	case hipMemAccessFlagsProtReadWrite:
		return "ProtReadWrite";
	default:
		return "?";
	}
}

hipError_t gc_hip_vmm_make(const struct gc_hip *hip, int dev, size_t size, bool map,
			   struct gc_hip_vmm *m)
{
	hipMemAllocationProp p = gc_hip_vmm_prop(dev);
	struct gc_hip_vmm_gran g;
	hipError_t e;

	memset(m, 0, sizeof(*m));
	e = gc_hip_vmm_granularity(hip, dev, &g);
	if (e != hipSuccess)
		return e;
	m->size = gc_align_up(size, g.minimum);
	e = hip->hipMemCreate(&m->handle, m->size, &p, 0);
	m->created = e == hipSuccess;
	if (m->created) {
		e = hip->hipMemAddressReserve(&m->va, m->size, 0, NULL, 0);
		m->reserved = e == hipSuccess;
	}
	if (m->reserved && map) {
		e = hip->hipMemMap(m->va, m->size, 0, m->handle, 0);
		m->mapped = e == hipSuccess;
	}
	return e;
}

hipError_t gc_hip_vmm_alloc(const struct gc_hip *hip, int dev, size_t size,
			    struct gc_hip_vmm *m)
{
	hipError_t e = gc_hip_vmm_make(hip, dev, size, true, m);

	return e != hipSuccess ? e : gc_hip_vmm_set_access(hip, m->va, m->size, &dev, 1,
							     hipMemAccessFlagsProtReadWrite);
}

hipError_t gc_hip_vmm_free(const struct gc_hip *hip, struct gc_hip_vmm *m)
{
	hipError_t e[3] = { hipSuccess, hipSuccess, hipSuccess };

	if (m->mapped)
		e[0] = hip->hipMemUnmap(m->va, m->size);
	if (m->reserved)
		e[1] = hip->hipMemAddressFree(m->va, m->size);
	if (m->created)
		e[2] = hip->hipMemRelease(m->handle);
	m->mapped = m->reserved = m->created = false;
	return e[0] != hipSuccess ? e[0] : e[1] != hipSuccess ? e[1] : e[2];
}

/* ------------------------------------------------------------- kernels */

uint32_t gc_hip_chunk_seed(uint32_t seed, uint64_t c)
{
	/* An odd multiplier is a bijection on 32 bits: chunks 0 .. 2^32 - 1 differ. */
	return seed + (uint32_t)c * 0x9E3779B1u;
}

uint32_t gc_hip_name_seed(const char *subtest, const char *dynamic, unsigned n)
{
	const char *names[2] = { subtest, dynamic };
	uint32_t h = 2166136261u;

	for (int i = 0; i < 2; i++) {
		for (const char *c = names[i] ? names[i] : ""; *c; c++)
			h = (h ^ (unsigned char)*c) * 16777619u;
		h = (h ^ '@') * 16777619u; /* `ab` + the empty string differs from `a` + `b` */
	}
	return h + n;
}

static void put(unsigned char *buf, size_t off, const void *v, size_t n)
{
	memcpy(buf + off, v, n);
}

void gc_hip_fill_args(unsigned char *buf, void *p, uint64_t n, uint32_t seed)
{
	memset(buf, 0, GC_HIP_KERNARG_BYTES);
	put(buf, 0, &p, sizeof(p));
	put(buf, 8, &n, sizeof(n));
	put(buf, 16, &seed, sizeof(seed));
}

void gc_hip_check_args(unsigned char *buf, const void *p, uint64_t n, uint32_t seed, void *out)
{
	gc_hip_fill_args(buf, (void *)(uintptr_t)p, n, seed);
	put(buf, 24, &out, sizeof(out));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t gc_hip_code_objects(const char *const *names, size_t n, const char **out, size_t max)
{
	static const char prefix[] = "gpuconform.", suffix[] = ".hsaco";
	size_t got = 0;

	for (size_t i = 0; i < n && got < max; i++) {
		size_t len = strlen(names[i]);

		if (len > strlen(prefix) + strlen(suffix) &&
		    !strncmp(names[i], prefix, strlen(prefix)) &&
		    !strcmp(names[i] + len - strlen(suffix), suffix))
			out[got++] = names[i];
	}
	qsort(out, got, sizeof(*out), cmp_str);
	return got;
}

#define MAX_CODE_OBJECTS 32

struct listing {
	char dir[2048];
	char *names[MAX_CODE_OBJECTS * 4];
	size_t n;
	const char *objects[MAX_CODE_OBJECTS];
	size_t n_objects;
};

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	l->n = 0;
}

/* The committed code objects: their names into l->objects, sorted. errno's value or 0. */
static int list_code_objects(struct listing *l)
{
	const char *env = getenv("GPUCONFORM_DATA_DIR");
	DIR *d;
	struct dirent *ent;

	snprintf(l->dir, sizeof(l->dir), "%s/kernels", env && *env ? env : GPUCONFORM_DATA_DIR);
	d = opendir(l->dir);
	if (!d)
		return errno;
	while ((ent = readdir(d)) && l->n < ARRAY_SIZE(l->names)) {
		l->names[l->n] = strdup(ent->d_name);
		if (l->names[l->n])
			l->n++;
	}
	closedir(d);
	l->n_objects = gc_hip_code_objects((const char *const *)l->names, l->n, l->objects,
					   ARRAY_SIZE(l->objects));
	return 0;
}

/* The whole file into a malloc'd buffer; NULL with errno set. */
static void *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	unsigned char *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 0)
		buf = malloc((size_t)st.st_size);
	while (buf && got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r <= 0) {
			free(buf);
			buf = NULL;
			errno = r ? errno : EIO;
		} else {
			got += (size_t)r;
		}
	}
	close(fd);
	return buf;
}

/* One code object: loaded and both kernels found, or nothing kept. */
static hipError_t try_code_object(const struct gc_hip *hip, struct gc_hip_kernels *k,
				  const char *path, int *sys_err)
{
	hipError_t e;

	k->image = slurp(path);
	if (!k->image) {
		*sys_err = errno;
		return hipErrorFileNotFound;
	}
	e = hip->hipModuleLoadData(&k->module, k->image);
	if (e == hipSuccess)
		e = hip->hipModuleGetFunction(&k->fill_u32, k->module, "gc_fill_u32");
	if (e == hipSuccess)
		e = hip->hipModuleGetFunction(&k->check_u32, k->module, "gc_check_u32");
	if (e == hipSuccess)
		e = hip->hipMalloc(&k->out, 2 * sizeof(uint64_t));
	if (e == hipSuccess) {
		snprintf(k->path, sizeof(k->path), "%s", path);
		return hipSuccess;
	}
	gc_hip_kernels_unload(hip, k);
	return e;
}

static void note_try(const struct gc_hip *hip, char *why, size_t why_len, const char *name,
		     hipError_t e, int sys_err)
{
	size_t used = strlen(why);
	char err[128];

	snprintf(why + used, why_len - used, "%s%s: %s", used ? ", " : "", name,
		 sys_err ? strerror(sys_err) : gc_hip_errstr(hip, e, err, sizeof(err)));
}

hipError_t gc_hip_kernels_load(const struct gc_hip *hip, struct gc_hip_kernels *k, char *why,
			       size_t why_len)
{
	struct listing l = { .n = 0 };
	char tried[1024] = "", path[4096];
	hipError_t e = hipErrorFileNotFound;
	int err;

	memset(k, 0, sizeof(*k));
	err = list_code_objects(&l);
	if (err || !l.n_objects) {
		snprintf(why, why_len, "%s: %s (set GPUCONFORM_DATA_DIR)", l.dir,
			 err ? strerror(err) : "no gpuconform.<gfx>.hsaco code object");
		listing_free(&l);
		return hipErrorFileNotFound;
	}
	for (size_t i = 0; i < l.n_objects && e != hipSuccess; i++) {
		int sys_err = 0;

		snprintf(path, sizeof(path), "%s/%s", l.dir, l.objects[i]);
		e = try_code_object(hip, k, path, &sys_err);
		if (e != hipSuccess)
			note_try(hip, tried, sizeof(tried), l.objects[i], e, sys_err);
	}
	if (e != hipSuccess)
		snprintf(why, why_len, "no code object in %s loads on this device (%s)", l.dir,
			 tried);
	listing_free(&l);
	return e;
}

void gc_hip_kernels_unload(const struct gc_hip *hip, struct gc_hip_kernels *k)
{
	if (k->out)
		hip->hipFree(k->out);
	if (k->module)
		hip->hipModuleUnload(k->module);
	free(k->image);
	memset(k, 0, sizeof(*k));
}

static hipError_t launch(const struct gc_hip *hip, hipFunction_t f, uint64_t words,
			 unsigned char *args)
{
	size_t size = GC_HIP_KERNARG_BYTES;
	void *extra[] = { HIP_LAUNCH_PARAM_BUFFER_POINTER, args, HIP_LAUNCH_PARAM_BUFFER_SIZE,
			  &size, HIP_LAUNCH_PARAM_END };
	unsigned blocks = (unsigned)((words + GC_HIP_BLOCK - 1) / GC_HIP_BLOCK);

	/*
	 * kernelParams: "@warning kernellParams argument is not yet implemented
	 * in HIP. Please use extra instead." [src ROCm/HIP
	 * include/hip/hip_runtime_api.h @ rocm-5.2.3]
	 */
	return hip->hipModuleLaunchKernel(f, blocks, 1, 1, GC_HIP_BLOCK, 1, 1, 0, NULL, NULL,
					  extra);
}

static uint64_t chunk_words(uint64_t n, uint64_t c)
{
	uint64_t left = n - c * GC_HIP_CHUNK_WORDS;

	return left < GC_HIP_CHUNK_WORDS ? left : GC_HIP_CHUNK_WORDS;
}

hipError_t gc_hip_fill_u32(const struct gc_hip *hip, const struct gc_hip_kernels *k, void *p,
			   uint64_t n, uint32_t seed)
{
	unsigned char args[GC_HIP_KERNARG_BYTES];
	hipError_t e = hipSuccess;

	for (uint64_t c = 0; e == hipSuccess && c * GC_HIP_CHUNK_WORDS < n; c++) {
		gc_hip_fill_args(args, (uint32_t *)p + c * GC_HIP_CHUNK_WORDS, chunk_words(n, c),
				 gc_hip_chunk_seed(seed, c));
		e = launch(hip, k->fill_u32, chunk_words(n, c), args);
	}
	return e;
}

/* One chunk checked: its counters reset, the kernel, the counters read back. */
static hipError_t check_chunk(const struct gc_hip *hip, const struct gc_hip_kernels *k,
			      const uint32_t *p, uint64_t words, uint32_t seed, uint64_t res[2])
{
	uint64_t init[2] = { 0, UINT64_MAX };
	unsigned char args[GC_HIP_KERNARG_BYTES];
	hipError_t e = hip->hipMemcpyHtoD(k->out, init, sizeof(init));

	gc_hip_check_args(args, p, words, seed, k->out);
	if (e == hipSuccess)
		e = launch(hip, k->check_u32, words, args);
	if (e == hipSuccess) /* a blocking copy on the null stream: after the kernel */
		e = hip->hipMemcpyDtoH(res, k->out, 2 * sizeof(uint64_t));
	return e;
}

hipError_t gc_hip_check_u32(const struct gc_hip *hip, const struct gc_hip_kernels *k,
			    const void *p, uint64_t n, uint32_t seed, uint64_t *bad,
			    uint64_t *first)
{
	uint64_t res[2];
	hipError_t e = hipSuccess;

	*bad = 0;
	*first = UINT64_MAX;
	for (uint64_t c = 0; e == hipSuccess && c * GC_HIP_CHUNK_WORDS < n; c++) {
		e = check_chunk(hip, k, (const uint32_t *)p + c * GC_HIP_CHUNK_WORDS,
				chunk_words(n, c), gc_hip_chunk_seed(seed, c), res);
		if (e == hipSuccess && res[0] && *first == UINT64_MAX)
			*first = c * GC_HIP_CHUNK_WORDS + res[1];
		if (e == hipSuccess)
			*bad += res[0];
	}
	return e;
}
