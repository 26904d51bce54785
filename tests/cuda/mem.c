// SPDX-License-Identifier: MIT
/*
 * cuda_mem: the mem contract on the CUDA driver API's virtual memory
 * management (cuMemCreate / cuMemAddressReserve / cuMemMap / cuMemSetAccess /
 * cuMemUnmap / cuMemAddressFree / cuMemRelease, cuMemGetInfo). Allocations
 * keep their documented lifecycle, data written on the GPU reads back on the
 * GPU and the CPU, misuse gives the documented errors and changes nothing,
 * nothing leaks; per-operation latencies are recorded as metrics.
 *
 * Where cuda.h names a rule (a size that must be a multiple of the
 * granularity, a sub-range that cuMemUnmap cannot unmap) but not the code a
 * violation returns, a violated parameter rule is expected to give
 * CUDA_ERROR_INVALID_VALUE: the only argument error each of these functions
 * lists, documented as "This indicates that one or more of the parameters
 * passed to the API call is not within an acceptable range of values."
 * [src zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA 12.6.3).
 * Where cuda.h is silent (mapping over a mapping, unmapping or freeing in the
 * wrong state) a test asserts only what is promised (the call fails, with
 * one of the codes the function lists, and the state is intact) and prints
 * the code it saw; those places say `undocumented: observed`.
 *
 * Every subtest works on device 0 and records what it holds (handles,
 * reservations, mappings, cuMemAlloc pointers): after_each gives back what a
 * failed subtest left, then checks that device free memory and the
 * /dev/nvidia* descriptors are where before_each found them.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "contract/mem.h"
#include "vmm_cases.h"
#include "fault_helper.h"
#include "gc_cuda.h"
#include "ledger.h"
#include "measure.h"
#include "soak.h"

#define HELPER_TIMEOUT_MS 120000u   /* cuInit + PTX JIT + fault recovery in the helper */
#define SETTLE_NS 10000000000ull    /* how long to wait for a dead helper's memory */

/* A distinct pattern seed for every place data is written. */
enum seed {
	SEED_WARMUP = 0x57a4u,
	SEED_LIFE,
	SEED_GRAN,
	SEED_OVER_A,
	SEED_OVER_ALL,
	SEED_UNMAP,
	SEED_RWM_1,
	SEED_RWM_2,
	SEED_AFREE,
	SEED_HEALTH,
	SEED_90,
	SEED_OOM,
	SEED_STRESS,
	SEED_FILL,
	SEED_LAT,
};

/* ------------------------------------------------- what a subtest holds */

/* Given back in this order (lib/ledger): mappings, reservations, handles, cuMemAlloc memory. */
enum held_kind { HELD_MAP, HELD_RANGE, HELD_HANDLE, HELD_DEVPTR, HELD_KINDS };

struct mem_fx {
	struct gc_cuda_fixture dev; /* leak-checked after each subtest */
	int ordinal;                /* the device every subtest uses: 0, made current by dev */
	struct gc_cu_kernels k;
	struct gc_vmm_gran gran;
	struct gc_mem m;                /* the shared contract's view: mem_* over this */
	size_t page;                    /* host page size */
	struct gc_ledger held;       /* what the running subtest made and still holds */
};

static void hold(struct mem_fx *fx, enum held_kind kind, CUdeviceptr va, size_t size,
		 CUmemGenericAllocationHandle h)
{
	gc_ledger_hold(&fx->held, kind, kind == HELD_HANDLE ? h : va, size);
}

static void unhold(struct mem_fx *fx, enum held_kind kind, CUdeviceptr va,
		   CUmemGenericAllocationHandle h)
{
	gc_ledger_forget(&fx->held, kind, kind == HELD_HANDLE ? h : va);
}

static int give_back_one(void *ctx, const struct gc_held *e)
{
	const struct gc_cuda *cu = ((struct mem_fx *)ctx)->dev.cu;

	switch (e->kind) {
	case HELD_MAP:
		return cu->cuMemUnmap(e->key, e->size);
	case HELD_RANGE:
		return cu->cuMemAddressFree(e->key, e->size);
	case HELD_HANDLE:
		return cu->cuMemRelease(e->key);
	case HELD_DEVPTR:
		return cu->cuMemFree(e->key);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static const char *held_strerror(void *ctx, int status, char *buf, size_t len)
{
	return gc_cu_strerror(((struct mem_fx *)ctx)->dev.cu, (CUresult)status, buf, len);
}

/* --------------------------------------- driver calls that record what they made */

static CUresult try_create(struct mem_fx *fx, size_t size, CUmemGenericAllocationHandle *h)
{
	CUmemAllocationProp p = gc_vmm_prop(fx->ordinal);
	CUresult r = fx->dev.cu->cuMemCreate(h, size, &p, 0);

	if (r == CUDA_SUCCESS)
		hold(fx, HELD_HANDLE, 0, 0, *h);
	return r;
}

static CUresult try_reserve(struct mem_fx *fx, size_t size, size_t align, CUdeviceptr addr,
			    CUdeviceptr *va)
{
	CUresult r = fx->dev.cu->cuMemAddressReserve(va, size, align, addr, 0);

	if (r == CUDA_SUCCESS)
		hold(fx, HELD_RANGE, *va, size, 0);
	return r;
}

static CUresult try_map(struct mem_fx *fx, CUdeviceptr va, size_t size, size_t off,
			CUmemGenericAllocationHandle h)
{
	CUresult r = fx->dev.cu->cuMemMap(va, size, off, h, 0);

	if (r == CUDA_SUCCESS)
		hold(fx, HELD_MAP, va, size, 0);
	return r;
}

static CUresult try_access(struct mem_fx *fx, CUdeviceptr va, size_t size,
			   CUmemAccess_flags flags)
{
	return gc_vmm_set_access(fx->dev.cu, va, size, &fx->ordinal, 1, flags);
}

static CUresult try_unmap(struct mem_fx *fx, CUdeviceptr va, size_t size)
{
	CUresult r = fx->dev.cu->cuMemUnmap(va, size);

	if (r == CUDA_SUCCESS)
		unhold(fx, HELD_MAP, va, 0);
	return r;
}

static CUresult try_addr_free(struct mem_fx *fx, CUdeviceptr va, size_t size)
{
	CUresult r = fx->dev.cu->cuMemAddressFree(va, size);

	if (r == CUDA_SUCCESS)
		unhold(fx, HELD_RANGE, va, 0);
	return r;
}

static CUresult try_release(struct mem_fx *fx, CUmemGenericAllocationHandle h)
{
	CUresult r = fx->dev.cu->cuMemRelease(h);

	if (r == CUDA_SUCCESS)
		unhold(fx, HELD_HANDLE, 0, h);
	return r;
}

static CUresult try_mem_alloc(struct mem_fx *fx, size_t size, CUdeviceptr *p)
{
	CUresult r = fx->dev.cu->cuMemAlloc(p, size);

	if (r == CUDA_SUCCESS)
		hold(fx, HELD_DEVPTR, *p, size, 0);
	return r;
}

/* ------------------------------------------------------------ verdicts */

#define SITE __FILE__, __LINE__, __func__
#define SITE_PARAMS const char *file, int line, const char *func

/* The call `what` returned got; it must be want. */
#define WANT(fx, call, want, what) want_rc(SITE, (fx)->dev.cu, (call), (want), (what))
#define OK(fx, call, what) WANT(fx, call, CUDA_SUCCESS, what)
#define INVALID(fx, call, what) WANT(fx, call, CUDA_ERROR_INVALID_VALUE, what)
/*
 * cuda.h states the rule but not the code, or not even the rule: the code the
 * reference driver (580.159.04, CUDA 13.0, H100) gave, so a change is caught.
 */
#define OBSERVED(fx, call, code, what) \
	WANT(fx, call, code, what " [undocumented; as observed on driver 580.159.04]")
/* Must fail with one of the codes cuda.h lists for the function (which one: observed). */
#define FAILS(fx, call, listed, what) \
	want_listed(SITE, (fx)->dev.cu, (call), (listed), sizeof(listed) / sizeof((listed)[0]), (what))

static void want_rc(SITE_PARAMS, const struct gc_cuda *cu, CUresult got, CUresult want,
		    const char *what)
{
	if (got != want)
		gc__cu_fail(cu, file, line, func, what, want, got);
}

/* The \return lists of cuda.h (CUDA 13.0). */
static const CUresult map_errors[] = {
	CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_OUT_OF_MEMORY,
	CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_DEINITIALIZED, CUDA_ERROR_NOT_PERMITTED,
	CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_ILLEGAL_STATE,
};
static const CUresult addr_free_errors[] = {
	CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_DEINITIALIZED,
	CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_SUPPORTED,
};

static void want_listed(SITE_PARAMS, const struct gc_cuda *cu, CUresult got,
			const CUresult *listed, size_t n, const char *what)
{
	char e[160];

	if (got == CUDA_SUCCESS)
		gc__fail(file, line, func, "%s\n  returned CUDA_SUCCESS\n  expected a failure",
			 what);
	for (size_t i = 0; i < n; i++) {
		if (got == listed[i]) {
			gc_info("%s -> %s (the code is undocumented: observed)", what,
				gc_cu_strerror(cu, got, e, sizeof(e)));
			return;
		}
	}
	gc__fail(file, line, func, "%s\n  returned %s\n  expected one of the errors cuda.h lists "
		 "for it", what, gc_cu_strerror(cu, got, e, sizeof(e)));
}

/* ------------------------------------------------------ memory and data */

static size_t dev_free(void *ctx)
{
	struct mem_fx *fx = ctx;
	size_t free_b = 0, total_b = 0;

	OK(fx, fx->dev.cu->cuMemGetInfo(&free_b, &total_b), "cuMemGetInfo");
	return free_b;
}

static size_t dev_total(struct mem_fx *fx)
{
	size_t free_b = 0, total_b = 0;

	OK(fx, fx->dev.cu->cuMemGetInfo(&free_b, &total_b), "cuMemGetInfo");
	return total_b;
}

/* A soak's .dev_used: device memory in use on the fixture's device. */
static long long mem_dev_used(void *arg)
{
	const struct mem_fx *fx = arg;

	return gc_cuda_dev_used(fx->dev.cu, fx->ordinal);
}

/* Free memory is lower than base by at least size: the allocation is still backed. */
static void expect_backed(void *ctx, size_t base, size_t size, const char *when)
{
	size_t now = dev_free(ctx);

	gc_assert_f(now + size <= base, "%s: free memory %zu, expected at most %zu - %zu = %zu "
		    "(the allocation must still hold its memory)", when, now, base, size,
		    base - size);
}

/* Free memory is back to base (within GC_VMM_LEAK_SLACK). */
static void expect_free_back(void *ctx, size_t base, const char *when)
{
	size_t now = dev_free(ctx);
	long long diff = (long long)base - (long long)now;

	gc_assert_f(diff <= GC_VMM_LEAK_SLACK && diff >= -GC_VMM_LEAK_SLACK,
		    "%s: free memory %zu, expected %zu (%lld bytes not given back; slack %d)", when,
		    now, base, diff, GC_VMM_LEAK_SLACK);
}

/* gc_fill_u32 over [va, va + size), synchronised so that a fault shows here. */
static void fill(void *ctx, uint64_t va, size_t size, uint32_t seed)
{
	struct mem_fx *fx = ctx;

	OK(fx, gc_cu_fill_u32(fx->dev.cu, &fx->k, va, size / 4, seed, 0), "gc_fill_u32 launch");
	OK(fx, fx->dev.cu->cuCtxSynchronize(), "cuCtxSynchronize after gc_fill_u32");
}

/* gc_check_u32 over [va, va + size): every word holds the pattern. */
static void expect_gpu(void *ctx, uint64_t va, size_t size, uint32_t seed, const char *what)
{
	struct mem_fx *fx = ctx;
	uint64_t bad = 0, first = 0, n = size / 4;

	OK(fx, gc_cu_check_u32(fx->dev.cu, &fx->k, va, n, seed, &bad, &first), "gc_check_u32");
	gc_assert_f(bad == 0, "%s: %" PRIu64 " of %" PRIu64 " words differ from pattern %#x, "
		    "the first at word %" PRIu64, what, bad, n, seed, first);
}

/* n words from word `first` copied to the host (cuMemcpyDtoH), checked on the CPU. */
static void expect_host_words(struct mem_fx *fx, CUdeviceptr va, uint64_t first, size_t n,
			      uint32_t seed, const char *what)
{
	uint32_t *buf = malloc(n * sizeof(*buf));
	uint64_t bad_at = UINT64_MAX;
	uint32_t got = 0;
	CUresult r;

	gc_assert_f(buf != NULL, "malloc(%zu) failed", n * sizeof(*buf));
	r = fx->dev.cu->cuMemcpyDtoH(buf, va + first * 4, n * sizeof(*buf));
	for (size_t i = 0; r == CUDA_SUCCESS && i < n && bad_at == UINT64_MAX; i++) {
		if (buf[i] != gc_pattern_u32(first + i, seed)) {
			bad_at = first + i;
			got = buf[i];
		}
	}
	free(buf);
	OK(fx, r, "cuMemcpyDtoH");
	gc_assert_f(bad_at == UINT64_MAX, "%s: word %" PRIu64 " read back %#x on the CPU, "
		    "expected %#x", what, bad_at, got, gc_pattern_u32(bad_at, seed));
}

/* The first, middle and last host pages of [va, va + size), checked on the CPU. */
static void expect_host_pages(void *ctx, uint64_t va, size_t size, uint32_t seed,
			      const char *what)
{
	struct mem_fx *fx = ctx;
	size_t words = fx->page / 4, pages = size / fx->page;
	size_t at[3] = { 0, pages / 2, pages - 1 };

	for (int i = 0; i < 3; i++)
		expect_host_words(fx, va, (uint64_t)at[i] * words, words, seed, what);
}

/* The data check itself can fail: the wrong seed must be reported. */
static void expect_gpu_detects(void *ctx, uint64_t va, size_t size, uint32_t seed)
{
	struct mem_fx *fx = ctx;
	uint64_t bad = 0, first = 0, n = size / 4;

	OK(fx, gc_cu_check_u32(fx->dev.cu, &fx->k, va, n, seed ^ 1u, &bad, &first), "gc_check_u32");
	gc_assert_f(bad > 0 && first < n, "gc_check_u32 with the wrong seed found %" PRIu64
		    " mismatching words of %" PRIu64 ": the check cannot fail", bad, n);
}

static unsigned long long get_access(struct mem_fx *fx, CUdeviceptr va)
{
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = fx->ordinal };
	unsigned long long flags = ~0ull;

	OK(fx, fx->dev.cu->cuMemGetAccess(&flags, &loc, va), "cuMemGetAccess");
	return flags;
}

static bool is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

/* ------------------------------------------------ the contract's calls */

/*
 * lib/contract/mem.c runs lifecycle, map-over-mapped, stress-10k,
 * fill-near-limit and latency over these: the try_* calls (so its handles,
 * reservations and mappings are in the fixture's ledger) and this file's
 * checks, wording and seeds.
 */
static void op_fail(void *ctx, const char *file, int line, const char *func, const char *what,
		    int want, int got)
{
	const struct mem_fx *fx = ctx;

	gc__cu_fail(fx->dev.cu, file, line, func, what, (CUresult)want, (CUresult)got);
}

static int op_create(void *ctx, size_t size, uint64_t *h)
{
	CUmemGenericAllocationHandle made = 0;
	CUresult r = try_create(ctx, size, &made);

	*h = made;
	return r;
}

static int op_reserve(void *ctx, size_t size, uint64_t *va)
{
	CUdeviceptr got = 0;
	CUresult r = try_reserve(ctx, size, 0, 0, &got);

	*va = got;
	return r;
}

static int op_map(void *ctx, uint64_t va, size_t size, uint64_t h)
{
	return try_map(ctx, va, size, 0, h);
}

static int op_set_rw(void *ctx, uint64_t va, size_t size)
{
	return try_access(ctx, va, size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

static int op_unmap(void *ctx, uint64_t va, size_t size)
{
	return try_unmap(ctx, va, size);
}

static int op_addr_free(void *ctx, uint64_t va, size_t size)
{
	return try_addr_free(ctx, va, size);
}

static int op_release(void *ctx, uint64_t h)
{
	return try_release(ctx, h);
}

/* cuda.h is silent on the code: one of those it lists for cuMemMap (printed). */
static void op_map_refused(void *ctx, int got, const char *what)
{
	struct mem_fx *fx = ctx;

	FAILS(fx, (CUresult)got, map_errors, what);
}

static const struct gc_mem_vmm mem_vmm = {
	.api = "cu", .rw_name = "PROT_READWRITE", .oom = CUDA_ERROR_OUT_OF_MEMORY,
	.oom_name = "CUDA_ERROR_OUT_OF_MEMORY", .fail = op_fail, .create = op_create,
	.reserve = op_reserve, .map = op_map, .set_rw = op_set_rw, .unmap = op_unmap,
	.addr_free = op_addr_free, .release = op_release, .map_refused = op_map_refused,
};

/* The word of piece i: the GPU pattern's word i (cuMemsetD32 writes it). */
static uint32_t op_word(uint32_t seed, size_t i)
{
	return gc_pattern_u32(i, seed);
}

static int op_put_word(void *ctx, uint64_t va, uint32_t w)
{
	return ((struct mem_fx *)ctx)->dev.cu->cuMemsetD32(va, w, 1);
}

static int op_get_word(void *ctx, uint64_t va, uint32_t *w)
{
	return ((struct mem_fx *)ctx)->dev.cu->cuMemcpyDtoH(w, va, sizeof(*w));
}

/* This file's seed of each place, the cycle's 0x10000 apart. */
static uint32_t op_seed(void *ctx, enum gc_mem_seed where, unsigned cycle)
{
	static const uint32_t base[] = {
		[GC_MEM_SEED_LIFE] = SEED_LIFE, [GC_MEM_SEED_OVER_A] = SEED_OVER_A,
		[GC_MEM_SEED_OVER_ALL] = SEED_OVER_ALL, [GC_MEM_SEED_STRESS] = SEED_STRESS,
		[GC_MEM_SEED_FILL] = SEED_FILL, [GC_MEM_SEED_LAT] = SEED_LAT,
		[GC_MEM_SEED_GRAN] = SEED_GRAN,
	};

	(void)ctx;
	return base[where] + 0x10000u * cycle;
}

/* cuda_mem reads its GPU pattern back on the CPU after the GPU check. */
static const struct gc_mem_data mem_data = {
	.put_word = op_put_word, .get_word = op_get_word, .put_name = "cuMemsetD32",
	.get_name = "cuMemcpyDtoH", .word = op_word, .seed = op_seed, .fill = fill,
	.expect_gpu = expect_gpu, .expect_gpu_detects = expect_gpu_detects,
	.host_out = expect_host_pages,
};

static void op_expect_reserved(void *ctx, uint64_t at)
{
	struct mem_fx *fx = ctx;
	CUdeviceptr va = at;

	/* Implied: cuMemMap below needs va to be a multiple of the minimum granularity. */
	gc_assert_f(va != 0 && va % fx->gran.minimum == 0, "reserved va %#llx, granularity %zu",
		    (unsigned long long)va, fx->gran.minimum);
}

static void op_expect_access(void *ctx, uint64_t at, bool rw)
{
	struct mem_fx *fx = ctx;
	CUdeviceptr va = at;

	/* Documented state; that cuMemGetAccess reports it as PROT_NONE is the natural reading. */
	if (!rw)
		gc_assert_eq_uint(get_access(fx, va), CU_MEM_ACCESS_FLAGS_PROT_NONE);
	else
		gc_assert_eq_uint(get_access(fx, va), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

static const char *op_va_str(uint64_t va, char *buf, size_t len)
{
	snprintf(buf, len, "%#llx", (unsigned long long)va);
	return buf;
}

static const struct gc_mem_checks mem_checks = {
	.dev_free = dev_free, .dev_used = mem_dev_used, .expect_backed = expect_backed,
	.expect_free_back = expect_free_back, .expect_reserved = op_expect_reserved,
	.expect_access = op_expect_access, .va_str = op_va_str,
};


/* -------------------------------------------------------------- fixture */

static void *mem_setup(void)
{
	struct gc_cuda *cu = gc_cuda_require();
	struct mem_fx *fx = gc_cuda_fixture_new(cu, sizeof(*fx), GC_VMM_LEAK_SLACK);
	char why[512];
	CUresult r;

	fx->ordinal = 0;
	fx->held = (struct gc_ledger){ .give = give_back_one, .strerror = held_strerror, .ctx = fx,
				       .n_kinds = HELD_KINDS, .what = "driver resources" };
	gc_require_f(cu->devices[0].vmm, "device 0 (%s) has no virtual memory management "
		     "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)",
		     cu->devices[0].name);
	r = gc_cu_kernels_load(cu, &fx->k, why, sizeof(why));
	if (r == CUDA_ERROR_FILE_NOT_FOUND)
		gc_skip("%s", why);
	if (r)
		gc_fail("%s", why);
	OK(fx, gc_vmm_granularity(cu, fx->ordinal, &fx->gran), "cuMemGetAllocationGranularity");
	fx->page = (size_t)sysconf(_SC_PAGESIZE);
	fx->m = (struct gc_mem){ &mem_vmm, &mem_data, &mem_checks, fx, fx->gran.minimum };
	gc_info("device 0: %s (%s), driver %d, %zu MiB, granularity minimum %zu recommended %zu, "
		"host page %zu", cu->devices[0].name, cu->devices[0].pci_bus_id,
		cu->driver_version, cu->devices[0].total_mem / MiB, fx->gran.minimum,
		fx->gran.recommended, fx->page);
	/* Lazily made driver state (module code, cuMemAlloc pools) is made here, not in a test. */
	gc_mem_roundtrip(&fx->m, fx->gran.minimum, SEED_WARMUP, "warm-up");
	return fx;
}

static void mem_teardown(void *data)
{
	struct mem_fx *fx = data;

	gc_ledger_free(&fx->held);
	gc_cu_kernels_unload(fx->dev.cu, &fx->k);
	gc_cuda_fixture_free(fx);
}

static void mem_after_each(void *data)
{
	struct mem_fx *fx = data;

	gc_ledger_give_back(&fx->held);
	gc_cuda_fixture_check(fx);
}

/* ------------------------------------------------------------- subtests */

/* lifecycle, map-over-mapped, stress-10k, fill-near-limit, latency: lib/contract/mem.c */
GC_MEM_SUBTESTS(struct mem_fx, m);

/*
 * Contract (cuMemGetAllocationGranularity, cuMemCreate, cuMemAddressReserve,
 * cuMemMap): cuMemCreate "The \p size of this allocation must be a multiple
 * of the the value given via ::cuMemGetAllocationGranularity with the
 * ::CU_MEM_ALLOC_GRANULARITY_MINIMUM flag."; cuMemAddressReserve "The size
 * and address parameters must be a multiple of the host page size and the
 * alignment must be a power of two or zero for default alignment.";
 * cuMemMap "This range must be an address reservation previously reserved
 * with ::cuMemAddressReserve, and \p offset + \p size must be less than the
 * size of the memory allocation. Both \p ptr, \p size, and \p offset must
 * be a multiple of the value given via ::cuMemGetAllocationGranularity with
 * the ::CU_MEM_ALLOC_GRANULARITY_MINIMUM flag."
 * [src zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA 12.6.3).
 * A violation fails (INVALID_VALUE, see the top of the file) and maps
 * nothing: the same range then maps correctly.
 */
static void gran_sizes(struct mem_fx *fx)
{
	size_t g = fx->gran.minimum, rec = fx->gran.recommended;

	gc_assert_f(is_pow2(g), "minimum granularity %zu is not a power of two", g);
	gc_assert_f(is_pow2(rec), "recommended granularity %zu is not a power of two", rec);
	gc_assert_cmpuint(rec, >=, g);
	/* For the record: the values themselves are not documented. */
	gc_info("granularity: minimum %zu, recommended %zu, host page %zu", g, rec, fx->page);
}

static void gran_create(struct mem_fx *fx)
{
	size_t g = fx->gran.minimum;
	CUmemGenericAllocationHandle h = 0;

	INVALID(fx, try_create(fx, g / 2, &h), "cuMemCreate(minimum / 2)");
	INVALID(fx, try_create(fx, g + g / 2, &h), "cuMemCreate(minimum * 3 / 2)");
}

static void gran_reserve(struct mem_fx *fx)
{
	size_t g = fx->gran.minimum, pg = fx->page;
	CUdeviceptr va = 0, hole = 0;
	CUresult r;
	char e[160];

	INVALID(fx, try_reserve(fx, pg + 1, 0, 0, &va), "cuMemAddressReserve(size = page + 1)");
	INVALID(fx, try_reserve(fx, 2 * g, 3 * g, 0, &va),
		"cuMemAddressReserve(alignment = 3 * granularity)");
	/* A hint known to be free (reserved, then freed), moved off the page boundary. */
	OK(fx, try_reserve(fx, 4 * g, 0, 0, &hole), "cuMemAddressReserve");
	OK(fx, try_addr_free(fx, hole, 4 * g), "cuMemAddressFree");
	INVALID(fx, try_reserve(fx, 2 * g, 0, hole + 1, &va),
		"cuMemAddressReserve(addr = free address + 1)");
	/* undocumented: cuda.h asks only for a page multiple; observed result printed. */
	r = try_reserve(fx, g + pg, 0, 0, &va);
	gc_info("cuMemAddressReserve(size = granularity + page) -> %s",
		gc_cu_strerror(fx->dev.cu, r, e, sizeof(e)));
	if (r == CUDA_SUCCESS)
		OK(fx, try_addr_free(fx, va, g + pg), "cuMemAddressFree(granularity + page)");
}

static void gran_map(struct mem_fx *fx)
{
	size_t g = fx->gran.minimum;
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr va = 0;

	OK(fx, try_create(fx, 2 * g, &h), "cuMemCreate(2 * granularity)");
	OK(fx, try_reserve(fx, 4 * g, 0, 0, &va), "cuMemAddressReserve(4 * granularity)");
	/*
	 * cuda.h: "Both \p ptr, \p size, and \p offset must be a multiple of the
	 * value given via ::cuMemGetAllocationGranularity with the
	 * ::CU_MEM_ALLOC_GRANULARITY_MINIMUM flag.", "[...] \p offset + \p size
	 * must be less than the size of the memory allocation.", of offset "Note:
	 * currently must be zero." [src zspace/system.cuda-12.6 include/cuda.h @
	 * b3d92c837713] (CUDA 12.6.3). Which code is not said:
	 * the reference driver gives NOT_SUPPORTED for each (where a misaligned
	 * cuMemCreate size or cuMemAddressReserve gives INVALID_VALUE).
	 */
	OBSERVED(fx, try_map(fx, va + g / 2, g, 0, h), CUDA_ERROR_NOT_SUPPORTED,
		 "cuMemMap(ptr = va + granularity / 2)");
	OBSERVED(fx, try_map(fx, va, g + g / 2, 0, h), CUDA_ERROR_NOT_SUPPORTED,
		 "cuMemMap(size = granularity * 3 / 2)");
	OBSERVED(fx, try_map(fx, va, g, g / 2, h), CUDA_ERROR_NOT_SUPPORTED,
		 "cuMemMap(offset = granularity / 2)");
	OBSERVED(fx, try_map(fx, va, 4 * g, 0, h), CUDA_ERROR_NOT_SUPPORTED,
		 "cuMemMap(size = 2 * the allocation's size)");
	gc_mem_gran_maps(&fx->m, va, h);
}

static void test_granularity(void *data)
{
	struct mem_fx *fx = data;

	gran_sizes(fx);
	gran_create(fx);
	gran_reserve(fx);
	gran_map(fx);
}

/*
 * Contract (cuMemUnmap): "The range must be the entire contiguous address
 * range that was mapped to. In other words, ::cuMemUnmap cannot unmap a
 * sub-range of an address range mapped by ::cuMemCreate / ::cuMemMap."
 * [src zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA 12.6.3):
 * a sub-range fails with INVALID_VALUE and the mapping stays whole and intact.
 * Unmapping a reservation that was never mapped, or unmapping twice: cuda.h
 * says nothing; the reference driver returns CUDA_SUCCESS for a range that
 * holds no mapping (asserted as observed), and the range is still usable.
 */
static void test_unmap_unmapped(void *data)
{
	struct mem_fx *fx = data;
	size_t g = fx->gran.minimum;
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr va = 0;

	OK(fx, try_reserve(fx, 2 * g, 0, 0, &va), "cuMemAddressReserve(2 * granularity)");
	/* Finding: unmapping a range that holds no mapping is accepted silently. */
	OBSERVED(fx, try_unmap(fx, va, 2 * g), CUDA_SUCCESS, "cuMemUnmap(never mapped reservation)");

	OK(fx, try_create(fx, 2 * g, &h), "cuMemCreate(2 * granularity)");
	OK(fx, try_map(fx, va, 2 * g, 0, h), "cuMemMap");
	OK(fx, try_access(fx, va, 2 * g, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), "cuMemSetAccess");
	fill(fx, va, 2 * g, SEED_UNMAP);
	INVALID(fx, try_unmap(fx, va, g), "cuMemUnmap(first half of a mapping)");
	INVALID(fx, try_unmap(fx, va + g, g), "cuMemUnmap(second half of a mapping)");
	expect_gpu(fx, va, 2 * g, SEED_UNMAP, "mapping after the refused sub-range unmaps");
	gc_assert_eq_uint(get_access(fx, va + g), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

	OK(fx, try_unmap(fx, va, 2 * g), "cuMemUnmap(whole mapping)");
	OBSERVED(fx, try_unmap(fx, va, 2 * g), CUDA_SUCCESS, "cuMemUnmap(the same range again)");
	/* The reservation survived the refused unmaps: it maps again. */
	OK(fx, try_map(fx, va, 2 * g, 0, h), "cuMemMap(again)");
	OK(fx, try_unmap(fx, va, 2 * g), "cuMemUnmap");
	OK(fx, try_addr_free(fx, va, 2 * g), "cuMemAddressFree");
	OK(fx, try_release(fx, h), "cuMemRelease");
}

/*
 * Contract (cuMemRelease): "The generic memory handle can be freed when there
 * are still outstanding mappings made with this handle."; "The memory
 * allocation will be freed when all outstanding mappings to the memory are
 * unmapped and when all outstanding references to the handle (including it's
 * shareable counterparts) are also released." [src zspace/system.cuda-12.6
 * include/cuda.h @ b3d92c837713] (CUDA 12.6.3). Released while mapped, the
 * memory stays allocated, readable (GPU and CPU) and writable; cuMemUnmap then
 * gives it back.
 */
static void test_release_while_mapped(void *data)
{
	struct mem_fx *fx = data;
	size_t size = gc_align_up(GC_VMM_LIFECYCLE_SIZE, fx->gran.minimum), f0 = dev_free(fx), f1, f2;
	struct gc_mem_alloc a;

	gc_mem_alloc_rw(&fx->m, size, &a);
	fill(fx, a.va, size, SEED_RWM_1);
	OK(fx, try_release(fx, a.h), "cuMemRelease while mapped");
	expect_backed(fx, f0, size, "after cuMemRelease, still mapped");

	expect_gpu(fx, a.va, size, SEED_RWM_1, "released but mapped: read");
	expect_host_pages(fx, a.va, size, SEED_RWM_1, "released but mapped: CPU read");
	fill(fx, a.va, size, SEED_RWM_2);
	expect_gpu(fx, a.va, size, SEED_RWM_2, "released but mapped: write");
	expect_host_pages(fx, a.va, size, SEED_RWM_2, "released but mapped: CPU read of write");

	f1 = dev_free(fx);
	OK(fx, try_unmap(fx, a.va, size), "cuMemUnmap (the last reference)");
	f2 = dev_free(fx);
	gc_assert_f(f2 >= f1 + size, "after the last cuMemUnmap: free memory %zu, expected at "
		    "least %zu + %zu: the released allocation was not freed", f2, f1, size);
	OK(fx, try_addr_free(fx, a.va, size), "cuMemAddressFree");
	expect_free_back(fx, f0, "after cuMemUnmap and cuMemAddressFree");
}

/*
 * Contract (cuMemAddressFree): "The size must match what was given to
 * memAddressReserve and the ptr given must match what was returned from
 * memAddressReserve." [src zspace/system.cuda-12.6 include/cuda.h @
 * b3d92c837713] (CUDA 12.6.3): a mismatch fails with INVALID_VALUE. Freeing
 * the reservation while it is still mapped is not described: the result is
 * printed (`undocumented: observed`); it must be a listed code, and whatever
 * it did, everything can still be given back and free memory returns to where
 * it was.
 */
static void afree_mismatch(struct mem_fx *fx)
{
	size_t g = fx->gran.minimum;
	CUdeviceptr va = 0;

	OK(fx, try_reserve(fx, 2 * g, 0, 0, &va), "cuMemAddressReserve(2 * granularity)");
	INVALID(fx, try_addr_free(fx, va, g), "cuMemAddressFree(size = half the reservation)");
	INVALID(fx, try_addr_free(fx, va + g, g), "cuMemAddressFree(ptr = inside the reservation)");
	OK(fx, try_addr_free(fx, va, 2 * g), "cuMemAddressFree(exact)");
}

/* cuMemAddressFree refused a mapped range: the mapping must be untouched. */
static void afree_refused(struct mem_fx *fx, struct gc_mem_alloc *a)
{
	expect_gpu(fx, a->va, a->size, SEED_AFREE, "mapping after the refused cuMemAddressFree");
	gc_mem_alloc_free(&fx->m, a);
}

/* cuMemAddressFree took a mapped range: unmap may or may not apply; release must. */
static void afree_taken(struct mem_fx *fx, struct gc_mem_alloc *a)
{
	CUresult r = fx->dev.cu->cuMemUnmap(a->va, a->size);
	char e[160];

	gc_info("cuMemUnmap after that -> %s", gc_cu_strerror(fx->dev.cu, r, e, sizeof(e)));
	unhold(fx, HELD_MAP, a->va, 0); /* gone either way */
	OK(fx, try_release(fx, a->h), "cuMemRelease");
}

static void test_address_free_ordering(void *data)
{
	struct mem_fx *fx = data;
	size_t size = 2 * fx->gran.minimum, f0;
	struct gc_mem_alloc a;
	CUresult r;

	afree_mismatch(fx);
	f0 = dev_free(fx);
	gc_mem_alloc_rw(&fx->m, size, &a);
	fill(fx, a.va, size, SEED_AFREE);
	/* undocumented: observed result printed; a refusal must be one of the listed codes. */
	r = try_addr_free(fx, a.va, size);
	if (r == CUDA_SUCCESS) {
		gc_info("cuMemAddressFree(mapped range) -> CUDA_SUCCESS (undocumented: observed)");
		afree_taken(fx, &a);
	} else {
		FAILS(fx, r, addr_free_errors, "cuMemAddressFree(mapped range)");
		afree_refused(fx, &a);
	}
	expect_free_back(fx, f0, "after giving everything back");
}

/* ---------------------------------------------------------- read-only */

struct helper_exec {
	char path[PATH_MAX + 32];
	char dev[16];
};

/* In the forked child: become the helper (no CUDA call happens in between). */
static void exec_helper(void *arg)
{
	struct helper_exec *x = arg;
	char *argv[] = { x->path, x->dev, NULL };

	execv(x->path, argv);
	fprintf(stderr, "execv(%s) failed\n", x->path);
	fflush(stderr);
	_exit(127);
}

/* cuda_fault_helper, next to this binary. */
static void find_helper(struct helper_exec *x)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	gc_assert_syscall(n);
	self[n] = '\0';
	slash = strrchr(self, '/');
	gc_assert(slash != NULL);
	*slash = '\0';
	snprintf(x->path, sizeof(x->path), "%s/" FAULT_HELPER_NAME, self);
	gc_assert_f(access(x->path, X_OK) == 0, "%s is not an executable next to this binary "
		    "(it is built with it: tests/cuda/meson.build)", x->path);
}

/* After the helper exits its context's memory comes back; wait for it (bounded). */
static void settle_free_mem(struct mem_fx *fx)
{
	uint64_t t0 = gc_now_ns();
	size_t want = fx->dev.before.free_mem[fx->ordinal], now = dev_free(fx);

	while (now < want && gc_now_ns() - t0 < SETTLE_NS) {
		usleep(10000);
		now = dev_free(fx);
	}
	/* undocumented: observed; the leak check in after_each is the assertion. */
	gc_info("free memory %s %.3f s after the helper exited (%zu, before %zu)",
		now >= want ? "back" : "NOT back", (double)(gc_now_ns() - t0) / 1e9, now, want);
}

static const char *helper_verdict(const struct gc_child_status *st)
{
	if (st->fate == GC_CHILD_TIMED_OUT)
		return "was killed at the timeout";
	if (st->fate == GC_CHILD_SIGNALED)
		return "died of a signal";
	switch (st->code) {
	case FAULT_HELPER_WROTE:
		return "reports that the write through the read-only mapping succeeded";
	case FAULT_HELPER_ERROR:
		return "failed for another reason (its output above says which)";
	case 127:
		return "could not be executed";
	default:
		return "exited with an unexpected status";
	}
}

/*
 * Contract (cuMemSetAccess with CU_MEM_ACCESS_FLAGS_PROT_READ, which cuda.h
 * documents as making the range read accessible): through a read-only mapping
 * a kernel reads the data and a write faults. The fault is the helper's (its
 * own process: the context a fault poisons is not ours); the helper exits 0
 * when the read worked and the write failed with CUDA_ERROR_ILLEGAL_ADDRESS
 * (undocumented: the code of a write fault is not in cuda.h; of
 * ILLEGAL_ADDRESS it says "While executing a kernel, the device encountered a
 * load or store instruction on an invalid memory address." [src
 * zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA 12.6.3)). Our
 * own context stays healthy.
 */
static void test_read_only_fault(void *data)
{
	struct mem_fx *fx = data;
	struct helper_exec x;
	struct gc_child_status st;
	int mode = -1, r;

	OK(fx, fx->dev.cu->cuDeviceGetAttribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
					    fx->dev.cu->devices[fx->ordinal].dev), "cuDeviceGetAttribute");
	gc_require_f(mode != CU_COMPUTEMODE_EXCLUSIVE_PROCESS, "device 0 is in exclusive-process "
		     "compute mode: the helper process cannot open a context beside ours");
	find_helper(&x);
	snprintf(x.dev, sizeof(x.dev), "%d", fx->ordinal);
	gc_info("running %s %s: exit 0 = write faulted, 1 = write landed, 2 = other error",
		x.path, x.dev);
	r = gc_fork_run(exec_helper, &x, HELPER_TIMEOUT_MS, &st);
	gc_assert_f(r == 0, "could not run the helper: %s", strerror(-r));
	settle_free_mem(fx);
	gc_assert_f(st.fate == GC_CHILD_EXITED && st.code == FAULT_HELPER_FAULTED,
		    "%s %s (fate %d, code %d)", FAULT_HELPER_NAME, helper_verdict(&st),
		    (int)st.fate, st.code);

	OK(fx, fx->dev.cu->cuCtxSynchronize(), "cuCtxSynchronize in the parent");
	gc_mem_roundtrip(&fx->m, fx->gran.minimum, SEED_HEALTH, "parent after the helper's fault");
}

/* ------------------------------------------------------------ capacity */

/*
 * Contract (cuMemCreate; cuMemGetInfo "Returns in \p *free the amount of
 * memory on the device that is free according to the OS. CUDA is not
 * guaranteed to be able to allocate all of the memory that the OS reports as
 * free." [src zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA
 * 12.6.3), hence 90%): one allocation of 90% of the free memory is created,
 * mapped, written and read back in full, and given back.
 */
static void test_alloc_90pct(void *data)
{
	struct mem_fx *fx = data;
	size_t f0 = dev_free(fx);
	size_t size = f0 / 10 * 9 / fx->gran.minimum * fx->gran.minimum;
	struct gc_mem_alloc a;
	uint64_t t0;

	gc_require_f(size >= fx->gran.minimum, "only %zu bytes free", f0);
	gc_info("allocating %zu MiB of %zu MiB free", size / MiB, f0 / MiB);
	t0 = gc_now_ns();
	gc_mem_alloc_rw(&fx->m, size, &a);
	expect_backed(fx, f0, size, "after the 90% allocation");
	fill(fx, a.va, size, SEED_90);
	expect_gpu(fx, a.va, size, SEED_90, "90% allocation");
	expect_host_pages(fx, a.va, size, SEED_90, "90% allocation");
	gc_mem_alloc_free(&fx->m, &a);
	gc_info("done in %.3f s", (double)(gc_now_ns() - t0) / 1e9);
	expect_free_back(fx, f0, "after giving the 90% allocation back");
}

/*
 * Contract (cuMemCreate, cuMemAlloc list CUDA_ERROR_OUT_OF_MEMORY, "The API
 * call failed because it was unable to allocate enough memory or other
 * resources to perform the requested operation." [src zspace/system.cuda-12.6
 * include/cuda.h @ b3d92c837713] (CUDA 12.6.3)): more than the device's total
 * memory fails with it; the suite's contract adds that free memory is
 * unchanged, and the device still allocates normally afterwards.
 */
static void test_oom(void *data)
{
	struct mem_fx *fx = data;
	size_t total = dev_total(fx), g = fx->gran.minimum;
	size_t too_much = gc_align_up(total + g, g), f0 = dev_free(fx);
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr p = 0;

	gc_info("asking for %zu bytes of a device with %zu", too_much, total);
	WANT(fx, try_create(fx, too_much, &h), CUDA_ERROR_OUT_OF_MEMORY,
	     "cuMemCreate(total + granularity)");
	expect_free_back(fx, f0, "after the refused cuMemCreate");
	WANT(fx, try_mem_alloc(fx, total + MiB, &p), CUDA_ERROR_OUT_OF_MEMORY,
	     "cuMemAlloc(total + 1 MiB)");
	expect_free_back(fx, f0, "after the refused cuMemAlloc");
	gc_mem_roundtrip(&fx->m, gc_align_up(GC_VMM_LIFECYCLE_SIZE, g), SEED_OOM,
			 "allocation after OOM");
}

/*
 * Contract (cuMemMap): "This range must be an address reservation previously
 * reserved with ::cuMemAddressReserve, and \p offset + \p size must be less
 * than the size of the memory allocation." [src zspace/system.cuda-12.6
 * include/cuda.h @ b3d92c837713] (CUDA 12.6.3). A mapping that starts inside a
 * reservation and runs past its end must be refused, whether the VA after it
 * is free or belongs to another reservation (two reservations are not one).
 * Whatever the driver answers, everything it mapped is found and given back.
 */
struct past_case {
	const char *name;
	bool next_reserved; /* the VA after the reservation is a second reservation */
};

GC_VARIANTS(struct past_case, past_cases, map_past_end) = {
	{ "into-free-va", false },
	{ "into-next-reservation", true },
};

static void map_past_end(void *ctx, const struct past_case *pc)
{
	struct mem_fx *fx = ctx;
	size_t g = fx->gran.minimum;
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr va = 0, next = 0;
	CUresult r;
	char e[160];

	OK(fx, try_create(fx, 2 * g, &h), "cuMemCreate(2 * granularity)");
	OK(fx, try_reserve(fx, 4 * g, 0, 0, &va), "cuMemAddressReserve(4 * granularity)");
	OK(fx, try_reserve(fx, 2 * g, 0, va + 4 * g, &next), "cuMemAddressReserve(just after)");
	if (next != va + 4 * g)
		gc_skip("the driver placed the second reservation at %#llx, not right after the "
			"first (%#llx)", (unsigned long long)next, (unsigned long long)(va + 4 * g));
	if (!pc->next_reserved)
		OK(fx, try_addr_free(fx, next, 2 * g), "cuMemAddressFree(the one after)");
	r = try_map(fx, va + 3 * g, 2 * g, 0, h);
	gc_info("cuMemMap([va + 3g, va + 5g) over a 4g reservation, %s after it) -> %s",
		pc->next_reserved ? "another reservation" : "free VA",
		gc_cu_strerror(fx->dev.cu, r, e, sizeof(e)));
	/* The fixture's after_each unmaps what try_map recorded if we fail below. */
	gc_assert_f(r != CUDA_SUCCESS, "cuMemMap accepted a range running %zu bytes past the end "
		    "of its reservation (into %s)", g,
		    pc->next_reserved ? "another reservation" : "unreserved VA");
	if (pc->next_reserved)
		OK(fx, try_addr_free(fx, next, 2 * g), "cuMemAddressFree(the one after)");
	OK(fx, try_addr_free(fx, va, 4 * g), "cuMemAddressFree");
	OK(fx, try_release(fx, h), "cuMemRelease");
}

static void test_map_past_reservation(void *data)
{
	gc_variants(past_cases, data);
}

/*
 * Contract (cuCtxEnablePeerAccess): "Returns ::CUDA_ERROR_INVALID_CONTEXT if
 * there is no current context, \p peerContext is not a valid context, or if
 * the current context is \p peerContext." [src zspace/system.cuda-12.6
 * include/cuda.h @ b3d92c837713] (CUDA 12.6.3). Needs one GPU only.
 */
static void test_peer_access_self(void *data)
{
	struct mem_fx *fx = data;
	CUcontext cur = NULL;
	CUresult r;
	char e[160];

	gc_cu_assert(fx->dev.cu, fx->dev.cu->cuCtxGetCurrent(&cur));
	r = fx->dev.cu->cuCtxEnablePeerAccess(cur, 0);
	gc_info("cuCtxEnablePeerAccess(the current context, 0) -> %s",
		gc_cu_strerror(fx->dev.cu, r, e, sizeof(e)));
	if (r == CUDA_SUCCESS)
		gc_cu_assert(fx->dev.cu, fx->dev.cu->cuCtxDisablePeerAccess(cur));
	WANT(fx, r, CUDA_ERROR_INVALID_CONTEXT, "cuCtxEnablePeerAccess(the current context, 0)");
}

static const struct gc_fixture fixture = {
	.setup = mem_setup,
	.teardown = mem_teardown,
	.before_each = gc_cuda_fixture_snapshot,
	.after_each = mem_after_each,
};

static const struct gc_subtest subtests[] = {
	{ "lifecycle", test_lifecycle,
	  "create/reserve/map/set-access, GPU fill + GPU and CPU check, unmap/free/release" },
	{ "granularity", test_granularity,
	  "unaligned sizes, offsets, addresses and alignments give the documented error" },
	{ "map-past-reservation", test_map_past_reservation,
	  "a mapping running past the end of its reservation is refused" },
	{ "map-over-mapped", test_map_over_mapped,
	  "cuMemMap over a mapped range fails and changes nothing" },
	{ "unmap-unmapped", test_unmap_unmapped,
	  "cuMemUnmap of an unmapped range or a sub-range fails and changes nothing" },
	{ "release-while-mapped", test_release_while_mapped,
	  "cuMemRelease while mapped: memory stays valid until cuMemUnmap, then is freed" },
	{ "address-free-ordering", test_address_free_ordering,
	  "cuMemAddressFree of a mismatched or still-mapped range; everything still cleans up" },
	{ "read-only-fault", test_read_only_fault,
	  "a write through a PROT_READ mapping faults (in a helper process), a read works" },
	{ "alloc-90pct", test_alloc_90pct,
	  "one allocation of 90% of free memory, filled and checked in full" },
	{ "oom", test_oom,
	  "more than the device's memory: CUDA_ERROR_OUT_OF_MEMORY, free memory unchanged" },
	{ "stress-10k", test_stress_10k,
	  "10,000 small mappings in one reservation, filled, checked, given back" },
	{ "fill-near-limit", test_fill_near_limit,
	  "90% of free memory in 512 MiB pieces, each written, then all given back, many times" },
	{ "peer-access-self", test_peer_access_self,
	  "the current context as its own peer: CUDA_ERROR_INVALID_CONTEXT, as documented" },
	{ "latency", test_latency,
	  "create/reserve/map/set-access/unmap/release latency at 2 MiB and 1 GiB (metrics)" },
	{ 0 }
};

static const char *const soaks[] = { "stress-10k", "fill-near-limit", NULL };

GC_MAIN(.name = "cuda_mem", .description = "VMM memory lifecycle on the CUDA driver API",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks,
	.placement = GC_PLACE_GPU)
