// SPDX-License-Identifier: MIT
/*
 * cuda_context: the primary context's lifecycle, the session contract of the
 * CUDA driver API. cuda.h, of cuDevicePrimaryCtxRetain: "Retains the primary
 * context on the device. Once the user successfully retains the primary
 * context, the primary context will be active and available to the user
 * until the user releases it with ::cuDevicePrimaryCtxRelease() or resets it
 * with ::cuDevicePrimaryCtxReset()."; of cuDevicePrimaryCtxRelease, "The
 * context is automatically reset once the last reference to it is
 * released." and "Releasing a primary context that has not been previously
 * retained will fail with ::CUDA_ERROR_INVALID_CONTEXT."; of
 * CU_POINTER_ATTRIBUTE_CONTEXT, "If \p ptr was not allocated by, mapped by,
 * or registered with a ::CUcontext which uses unified virtual addressing
 * then ::CUDA_ERROR_INVALID_VALUE is returned."
 * [src zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA 12.6.3).
 *
 * Device memory is watched from outside the context under test, through an
 * NVML session the fixture holds for the whole binary: cuMemGetInfo would
 * need a context, and so would change what it measures.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "devfd.h"
#include "gc_cuda.h"
#include "session_cases.h"
#include "gc_nvml.h"
#include "measure.h"
#include "soak.h"
#include "usage.h"
#include "workers.h"

#define DEV_PREFIX "/dev/nvidia"
#define ALLOC_BYTES (64ull * MiB) /* what a refcount case allocates in the context */
#define MEM_SLACK (2ull * MiB)    /* NVML's used memory may move by a page table or two */
#define SETTLE_MS 2000         /* how long freed memory may take to show in NVML */

struct fx {
	struct gc_cuda *cu;
	struct gc_nvml n;
	gc_nvml_device nv[16];
	CUlibrary lib;
	CUkernel fill;
	int ndev;
	int fds0; /* /dev/nvidia* open with no primary context retained */
	unsigned long long used0[16];
};

static int devfds(void)
{
	int n = gc_devfd_count(DEV_PREFIX);

	gc_assert_f(n >= 0, "/proc/self/fd: %s", strerror(-n));
	return n;
}

static void fds_info(const char *when)
{
	char fds[512];

	gc_devfd_list(DEV_PREFIX, fds, sizeof(fds));
	gc_info("%s: %d " DEV_PREFIX "* fds (%s)", when, devfds(), fds);
}

/* Device i's used memory as NVML reports it (bytes). */
static unsigned long long used(const struct fx *f, int i)
{
	gc_nvml_memory m;
	gc_nvml_ret r = f->n.fn.memory(f->nv[i], &m);
	char b[128];

	gc_assert_f(r == GC_NVML_SUCCESS, "nvmlDeviceGetMemoryInfo(device %d): %s", i,
		    gc_nvml_strerror(&f->n, r, b, sizeof(b)));
	return m.used;
}

/* Wait up to SETTLE_MS for device i's used memory to come back to the baseline. */
static void expect_used_back(const struct fx *f, int i, const char *after)
{
	unsigned long long now = used(f, i);

	for (int ms = 0; ms < SETTLE_MS && now > f->used0[i] + MEM_SLACK; ms += 10) {
		usleep(10000);
		now = used(f, i);
	}
	gc_info("device %d used memory %s: %llu MiB, %llu MiB before", i, after, now / MiB,
		f->used0[i] / MiB);
	gc_assert_f(now <= f->used0[i] + MEM_SLACK && now + MEM_SLACK >= f->used0[i],
		    "device %d: %llu bytes used %s, %llu before the first retain (slack %llu)", i,
		    now, after, f->used0[i], MEM_SLACK);
}

/* Whether device i's primary context is active, from cuDevicePrimaryCtxGetState. */
static bool active(const struct fx *f, int i)
{
	unsigned flags;
	int on = -1;

	gc_cu_assert(f->cu, f->cu->cuDevicePrimaryCtxGetState(f->cu->devices[i].dev, &flags, &on));
	return on != 0;
}

static void nvml_attach(struct fx *f)
{
	char why[256], b[128], uuid[48];
	gc_nvml_ret r;

	if (gc_nvml_open(&f->n, why, sizeof(why)) < 0)
		gc_skip("NVML (device memory is watched through it): %s", why);
	r = f->n.fn.init();
	gc_assert_f(r == GC_NVML_SUCCESS, "nvmlInit_v2: %s", gc_nvml_strerror(&f->n, r, b,
										 sizeof(b)));
	for (int i = 0; i < f->ndev; i++) {
		snprintf(uuid, sizeof(uuid), "GPU-%s", f->cu->devices[i].uuid);
		r = f->n.fn.by_uuid(uuid, &f->nv[i]);
		gc_assert_f(r == GC_NVML_SUCCESS, "NVML has no %s (CUDA device %d): %s", uuid, i,
			    gc_nvml_strerror(&f->n, r, b, sizeof(b)));
	}
}

static void *fx_setup(void)
{
	struct fx *f = calloc(1, sizeof(*f));
	char why[512];

	gc_assert(f);
	f->cu = gc_cuda_require();
	f->ndev = f->cu->n_devices < 16 ? f->cu->n_devices : 16;
	gc_cu_assert(f->cu, gc_cuda_release_primary(f->cu));
	if (gc_cu_kernels_library(f->cu, &f->lib, why, sizeof(why)))
		gc_fail("%s", why);
	gc_cu_assert(f->cu, f->cu->cuLibraryGetKernel(&f->fill, f->lib, "gc_fill_u32"));
	nvml_attach(f);
	for (int i = 0; i < f->ndev; i++) {
		gc_assert_f(!active(f, i), "device %d's primary context is active with no "
			    "reference retained", i);
		f->used0[i] = used(f, i);
	}
	f->fds0 = devfds();
	fds_info("no primary context retained");
	return f;
}

static void fx_teardown(void *data)
{
	struct fx *f = data;

	f->cu->cuLibraryUnload(f->lib);
	f->n.fn.shutdown();
	gc_nvml_close(&f->n);
	gc_cuda_close(f->cu);
	free(f);
}

/* Every device inactive, its memory and the fds as before the first retain. */
static void expect_baseline(const struct fx *f, const char *after)
{
	for (int i = 0; i < f->ndev; i++) {
		gc_assert_f(!active(f, i), "device %d's primary context still active %s", i, after);
		expect_used_back(f, i, after);
	}
	fds_info(after);
	gc_assert_cmpint(devfds(), ==, f->fds0);
}

/* Words of host[0..n) that differ from the pattern. */
static uint64_t mismatches(const uint32_t *host, uint64_t n, uint32_t seed)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++)
		bad += host[i] != gc_pattern_u32(i, seed);
	return bad;
}

/* ------------------------------------------------------------ refcount */

struct kcase {
	struct fx *f;
	int dev;
	unsigned k;
};

/* k retains: one context, active, 64 MiB allocated and filled in it. */
static CUdeviceptr retain_k(const struct kcase *c, CUcontext *ctx)
{
	struct gc_cuda *cu = c->f->cu;
	CUdevice d = cu->devices[c->dev].dev;
	CUdeviceptr p;
	CUcontext again;

	gc_cu_assert(cu, cu->cuDevicePrimaryCtxRetain(ctx, d));
	for (unsigned i = 1; i < c->k; i++) {
		gc_cu_assert(cu, cu->cuDevicePrimaryCtxRetain(&again, d));
		gc_assert_f(again == *ctx, "retain %u of %u gave context %p, the first %p", i + 1,
			    c->k, (void *)again, (void *)*ctx);
	}
	gc_assert_f(active(c->f, c->dev), "not active after %u retains", c->k);
	gc_cu_assert(cu, cu->cuCtxSetCurrent(*ctx));
	gc_cu_assert(cu, cu->cuMemAlloc(&p, ALLOC_BYTES));
	gc_cu_assert(cu, gc_cu_launch_fill(cu, (CUfunction)c->f->fill, p, ALLOC_BYTES / 4, c->k, 0));
	gc_cu_assert(cu, cu->cuCtxSynchronize());
	gc_assert_f(used(c->f, c->dev) >= c->f->used0[c->dev] + ALLOC_BYTES,
		    "device %d: %llu bytes used with a %llu-byte allocation, %llu before", c->dev,
		    used(c->f, c->dev), ALLOC_BYTES, c->f->used0[c->dev]);
	return p;
}

/*
 * refcount: k retains (k = 1, 2, 16) give one context; with 64 MiB allocated
 * in it, k - 1 releases leave it active and the allocation usable; the k-th
 * frees everything (memory and fds back to where they were, inactive); a
 * (k+1)-th is CUDA_ERROR_INVALID_CONTEXT.
 */
static void refcount_case(void *f, const void *dev, const void *k)
{
	const struct kcase kc = { f, ((const struct gc_cuda_device *)dev)->ordinal,
				  *(const unsigned *)k }, *c = &kc;
	struct gc_cuda *cu = c->f->cu;
	CUdevice d = cu->devices[c->dev].dev;
	CUcontext ctx, owner = NULL;
	CUdeviceptr p = retain_k(c, &ctx);
	char when[64];

	snprintf(when, sizeof(when), "with %u references", c->k);
	fds_info(when);
	gc_info("device %d used memory with %u references and 64 MiB: %llu MiB", c->dev, c->k,
		used(c->f, c->dev) / MiB);
	for (unsigned i = 1; i < c->k; i++) {
		gc_cu_assert(cu, cu->cuDevicePrimaryCtxRelease(d));
		gc_assert_f(active(c->f, c->dev), "release %u of %u reset the context", i, c->k);
	}
	gc_cu_assert(cu, cu->cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p));
	gc_assert_f(owner == ctx, "the allocation's context is %p, the primary %p", (void *)owner,
		    (void *)ctx);
	gc_cu_assert(cu, cu->cuMemsetD32(p, 0, ALLOC_BYTES / 4));
	gc_cu_assert(cu, cu->cuDevicePrimaryCtxRelease(d));
	gc_cu_assert(cu, cu->cuCtxSetCurrent(NULL));
	expect_baseline(c->f, "after the last release");
	gc_cu_assert_err(cu, cu->cuDevicePrimaryCtxRelease(d), CUDA_ERROR_INVALID_CONTEXT);
}

static const unsigned refcount_ks[] = { GC_SESSION_REFCOUNT_KS };

/* `k<k>`: a case's part of its dynamic subtest name, `gpu<N>-k<k>` */
static const char *k_name(const void *k, char *buf, size_t len)
{
	snprintf(buf, len, "k%u", *(const unsigned *)k);
	return buf;
}

/* One dynamic subtest per device and k (every k on a device before the next device). */
static void test_refcount(void *data)
{
	struct fx *f = data;
	struct gc_devices devs = gc_cuda_devices(f->cu, f->ndev);
	const struct gc_cases ks = { refcount_ks, ARRAY_SIZE(refcount_ks), sizeof(refcount_ks[0]),
				     k_name, NULL };

	gc_each_device_case(&devs, &ks, refcount_case, f);
}

/* ------------------------------------------------------------ stale pointer */

/*
 * stale-pointer: a pointer allocated in one generation of the primary
 * context, asked about in the next (after the last release and a new
 * retain), gives the documented CUDA_ERROR_INVALID_VALUE, and cuMemFree of it
 * fails rather than freeing something of the new generation. Whether the
 * new generation reuses the address or the handle is recorded: where it
 * does, a stale pointer silently aliases live memory.
 */
static void stale_case(void *f, const void *vdev)
{
	const struct gc_cuda_device *dev = vdev;
	const struct kcase kc = { f, dev->ordinal, 1 }, *c = &kc;
	struct gc_cuda *cu = c->f->cu;
	CUdevice d = cu->devices[c->dev].dev;
	CUcontext gen1, gen2, owner = NULL;
	CUdeviceptr old, fresh;
	char b[160];
	CUresult r;

	gc_cu_assert(cu, cu->cuDevicePrimaryCtxRetain(&gen1, d));
	gc_cu_assert(cu, cu->cuCtxSetCurrent(gen1));
	gc_cu_assert(cu, cu->cuMemAlloc(&old, ALLOC_BYTES));
	gc_cu_assert(cu, cu->cuDevicePrimaryCtxRelease(d));
	gc_assert_f(!active(c->f, c->dev), "the only release left the context active");
	gc_cu_assert(cu, cu->cuDevicePrimaryCtxRetain(&gen2, d));
	gc_cu_assert(cu, cu->cuCtxSetCurrent(gen2));
	r = cu->cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, old);
	gc_info("pointer of the ended generation: CU_POINTER_ATTRIBUTE_CONTEXT -> %s",
		gc_cu_strerror(cu, r, b, sizeof(b)));
	gc_cu_assert_err(cu, r, CUDA_ERROR_INVALID_VALUE);
	r = cu->cuMemFree(old);
	gc_info("cuMemFree of it: %s", gc_cu_strerror(cu, r, b, sizeof(b)));
	gc_assert_f(r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_CONTEXT,
		    "cuMemFree of a pointer of an ended context: %s, not a documented error", b);
	gc_cu_assert(cu, cu->cuMemAlloc(&fresh, ALLOC_BYTES));
	gc_info("new generation: handle %s, first 64 MiB allocation %s", gen2 == gen1 ?
		"reused" : "new", fresh == old ? "at the ended one's address (a stale pointer "
		"would alias it)" : "at a new address");
	gc_cu_assert(cu, cu->cuMemFree(fresh));
	gc_cu_assert(cu, cu->cuDevicePrimaryCtxRelease(d));
	gc_cu_assert(cu, cu->cuCtxSetCurrent(NULL));
	expect_baseline(c->f, "after the second generation");
}

static void test_stale(void *data)
{
	struct fx *f = data;
	struct gc_devices devs = gc_cuda_devices(f->cu, f->ndev);

	gc_each_device(&devs, stale_case, f);
}

/* ------------------------------------------------------------ concurrency */

#define THREADS 256
#define ROUNDS 100      /* each thread's share of concurrent-retain's rounds at standard */
#define ROUNDS_QUICK 20
#define WORDS 4096
#define STALL_S 60 /* no round finished anywhere for this long: a deadlock */

struct worker {
	struct shared *s;
	unsigned id;
};

/* On the heap: after a deadlock, stuck threads keep using it. */
struct shared {
	struct worker wk[THREADS];
	struct fx *f;
	struct gc_soak *soak; /* the rounds, shared by the threads (concurrent-retain) */
	unsigned rounds;      /* without a soak: each thread's (concurrent-reset) */
	unsigned exhausted;   /* atomic: threads that stopped because the rounds ran out */
	struct gc_problems pr;
	struct gc_progress pg;
	int stop;          /* atomic */
	unsigned long found_inactive; /* atomic: retains that found no context */
	struct trace *trace;          /* what the process held as the rounds went */
};

#define STEP(s, call)                                                                    \
	do {                                                                             \
		CUresult r_ = (call);                                                    \
		char b_[160];                                                            \
		if (r_ != CUDA_SUCCESS) {                                                \
			gc_problem(&s->pr, "%s: %s", #call, gc_cu_strerror((s)->f->cu, r_, b_,   \
								    sizeof(b_)));        \
			return false;                                                    \
		}                                                                        \
	} while (0)

/* In the current context: allocate, fill on the GPU, read back, compare, free. */
static bool launch_and_check(struct shared *s, uint32_t seed, uint32_t *host)
{
	const struct gc_cuda *cu = s->f->cu;
	CUdeviceptr p;
	uint64_t bad;

	STEP(s, cu->cuMemAlloc(&p, WORDS * 4));
	STEP(s, gc_cu_launch_fill(cu, (CUfunction)s->f->fill, p, WORDS, seed, 0));
	STEP(s, cu->cuMemcpyDtoH(host, p, WORDS * 4));
	STEP(s, cu->cuMemFree(p));
	bad = mismatches(host, WORDS, seed);
	if (bad)
		gc_problem(&s->pr, "seed %u: %llu of %d words wrong after the kernel", seed,
			(unsigned long long)bad, WORDS);
	return bad == 0;
}

/*
 * What the process held while the rounds went, sampled every TRACE_MS by a
 * thread of its own: host RSS, how many primary contexts were alive and how
 * many retains had found theirs inactive (new generations). A soak's RSS
 * series alone cannot tell a leak from a process that holds one context
 * more at the end than at the start; these say which.
 */
#define TRACE_MS 10
#define TRACE_MAX 1024

struct trace_point {
	double t, cycles, gens, rss_kib;
	int live;
};

struct trace {
	struct shared *s;
	pthread_t th;
	int stop; /* atomic */
	size_t n, every; /* points kept; keep one sample in `every` */
	unsigned long taken;
	struct trace_point p[TRACE_MAX];
	double x[TRACE_MAX], y[TRACE_MAX]; /* the report's scratch */
};

static int live_contexts(const struct fx *f)
{
	int live = 0;

	for (int i = 0; i < f->ndev; i++) {
		unsigned flags;
		int on = 0;

		if (f->cu->cuDevicePrimaryCtxGetState(f->cu->devices[i].dev, &flags, &on) ==
		    CUDA_SUCCESS)
			live += on != 0;
	}
	return live;
}

static void trace_take(struct trace *tr, uint64_t t0)
{
	struct shared *s = tr->s;
	struct gc_usage u;

	if (tr->taken++ % tr->every)
		return;
	u = gc_usage_now(0);
	if (tr->n == TRACE_MAX) { /* keep every other point, sample half as often */
		for (size_t i = 0; i < TRACE_MAX / 2; i++)
			tr->p[i] = tr->p[2 * i];
		tr->n = TRACE_MAX / 2;
		tr->every *= 2;
	}
	tr->p[tr->n++] = (struct trace_point){
		.t = (double)(gc_now_ns() - t0) / 1e9,
		.cycles = (double)(s->soak ? gc_soak_count(s->soak) : gc_progress_rounds(&s->pg)),
		.gens = (double)__atomic_load_n(&s->found_inactive, __ATOMIC_RELAXED),
		.rss_kib = (double)u.rss_kib,
		.live = live_contexts(s->f),
	};
}

static void *trace_thread(void *p)
{
	struct trace *tr = p;
	uint64_t t0 = gc_now_ns();

	while (!__atomic_load_n(&tr->stop, __ATOMIC_ACQUIRE)) {
		trace_take(tr, t0);
		usleep(TRACE_MS * 1000);
	}
	trace_take(tr, t0);
	return NULL;
}

static struct trace *trace_start(struct shared *s)
{
	struct trace *tr = calloc(1, sizeof(*tr));

	gc_assert(tr);
	tr->s = s;
	tr->every = 1;
	gc_assert(pthread_create(&tr->th, NULL, trace_thread, tr) == 0);
	return tr;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median RSS of the points with `live` contexts alive; NAN when none. */
static double median_rss_at(struct trace *tr, int live, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < tr->n; i++)
		if (tr->p[i].live == live)
			tr->y[(*n)++] = tr->p[i].rss_kib;
	if (!*n)
		return NAN;
	qsort(tr->y, *n, sizeof(tr->y[0]), cmp_double);
	return tr->y[*n / 2];
}

/* RSS by the number of contexts alive, RSS against generations, and the points. */
static void trace_report(struct trace *tr, int ndev)
{
	size_t step = tr->n > 24 ? tr->n / 24 : 1;

	for (int live = 0; live <= ndev; live++) {
		size_t n;
		double m = median_rss_at(tr, live, &n);

		if (n)
			gc_info("trace: %d of %d primary contexts alive in %zu samples: median RSS "
				"%.0f KiB", live, ndev, n, m);
	}
	for (size_t i = 0; i < tr->n; i++)
		tr->x[i] = tr->p[i].gens, tr->y[i] = tr->p[i].rss_kib;
	if (tr->n > 1)
		gc_info("trace: %.0f retains found the context inactive; RSS against them: "
			"Theil-Sen %.1f KiB each", tr->p[tr->n - 1].gens,
			gc_theil_sen(tr->x, tr->y, tr->n));

	for (size_t i = 0; i < tr->n; i += step)
		gc_info("trace: t %.3f s, cycle %.0f, inactive found %.0f, alive %d, RSS %.0f KiB",
			tr->p[i].t, tr->p[i].cycles, tr->p[i].gens, tr->p[i].live,
			tr->p[i].rss_kib);
}

static void trace_end(struct trace *tr, int ndev)
{
	__atomic_store_n(&tr->stop, 1, __ATOMIC_RELEASE);
	pthread_join(tr->th, NULL);
	trace_report(tr, ndev);
	free(tr);
}

/* One round: retain device dev's primary context, launch and check, release. */
static bool round_once(struct shared *s, int dev, uint32_t seed, uint32_t *host)
{
	const struct gc_cuda *cu = s->f->cu;
	CUdevice d = cu->devices[dev].dev;
	CUcontext ctx;
	unsigned flags;
	int on = 1;
	bool ok;

	STEP(s, cu->cuDevicePrimaryCtxGetState(d, &flags, &on));
	if (!on)
		__atomic_fetch_add(&s->found_inactive, 1, __ATOMIC_RELAXED);
	STEP(s, cu->cuDevicePrimaryCtxRetain(&ctx, d));
	STEP(s, cu->cuCtxSetCurrent(ctx));
	ok = launch_and_check(s, seed, host);
	STEP(s, cu->cuCtxSetCurrent(NULL));
	STEP(s, cu->cuDevicePrimaryCtxRelease(d));
	return ok;
}

/* Whether another round may start: nothing went wrong, and the soak has rounds left. */
static bool next_round(struct shared *s, unsigned r)
{
	if (gc_problems_count(&s->pr) || __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		return false;
	if (s->soak ? gc_soak_claim(s->soak) : r < s->rounds)
		return true;
	__atomic_add_fetch(&s->exhausted, 1, __ATOMIC_RELAXED);
	return false;
}

static void *worker(void *p)
{
	struct worker *w = p;
	struct shared *s = w->s;
	uint32_t *host = malloc(WORDS * 4);

	for (unsigned r = 0; host && next_round(s, r); r++) {
		if (!round_once(s, (int)((w->id + r) % (unsigned)s->f->ndev), w->id * 100003u + r,
				host))
			break;
		gc_progress_round(&s->pg);
		if (s->soak)
			gc_soak_done(s->soak);
	}
	if (!host)
		gc_problem(&s->pr, "thread %u: out of host memory", w->id);
	free(host);
	gc_progress_done(&s->pg);
	return NULL;
}

/*
 * The soak's device memory in use: every device's used bytes as NVML sees
 * them (the fixture's session; NVML is thread-safe), or -EIO. Not
 * cuMemGetInfo: it needs a current context, and the worker that samples has
 * just released its own.
 */
static long long nvml_used(void *arg)
{
	const struct fx *f = arg;
	long long sum = 0;
	gc_nvml_memory m;

	for (int i = 0; i < f->ndev; i++) {
		if (f->n.fn.memory(f->nv[i], &m) != GC_NVML_SUCCESS)
			return -EIO;
		sum += (long long)m.used;
	}
	return sum;
}

static struct gc_soak *retain_soak(struct fx *f)
{
	return gc_soak_start(&(struct gc_soak_cfg){
		.name = "concurrent-retain", .cycles = THREADS * (unsigned long)ROUNDS,
		.quick = THREADS * (unsigned long)ROUNDS_QUICK,
		.cycle = "one thread's round: retain a device's primary context, allocate 16 KiB, "
			 "fill on the GPU, read back and check, free, release",
		.dev_used = nvml_used, .dev_arg = f });
}

/* 256 threads through their rounds (s->soak's, else s->rounds each), traced; their count. */
static unsigned long run_rounds(struct shared *s)
{
	pthread_t th[THREADS];
	uint64_t t0 = gc_now_ns();
	unsigned long rounds;

	gc_problems_init(&s->pr);
	s->trace = trace_start(s);
	for (unsigned i = 0; i < THREADS; i++) {
		s->wk[i] = (struct worker){ s, i };
		gc_assert(pthread_create(&th[i], NULL, worker, &s->wk[i]) == 0);
	}
	gc_progress_await(&s->pg, THREADS, STALL_S, &s->stop, "the driver");
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	rounds = gc_progress_rounds(&s->pg);
	gc_info("%u threads on %d devices: %lu rounds in %.2f s, %u problems; %lu retains found "
		"the context inactive (a new generation, or a race with one)", THREADS, s->f->ndev,
		rounds, (double)(gc_now_ns() - t0) / 1e9, gc_problems_count(&s->pr),
		s->found_inactive);
	trace_end(s->trace, s->f->ndev);
	return rounds;
}

/* The rounds all ran, right, and every thread ran until they ran out. */
static void expect_rounds(struct shared *s, unsigned long want)
{
	gc_problems_assert_none(&s->pr);
	gc_assert_cmpuint(gc_progress_rounds(&s->pg), ==, want);
	gc_assert_f(s->exhausted == THREADS, "%u of %u threads stopped before the rounds ran out",
		    THREADS - s->exhausted, THREADS);
	gc_problems_destroy(&s->pr);
}

/*
 * concurrent-retain: 256 threads sharing the level's rounds (a soak: 256 x
 * 100 at standard, 256 x 20 at quick, as many as fit at long) of retain ->
 * allocate, launch, read back, check -> release, spread over every device,
 * while the main thread holds a reference on each (no reset under them:
 * concurrent-reset races those): every result correct, no error, no deadlock
 * (watchdog), every thread ran until the rounds ran out, the process's
 * memory, fds and device memory flat across the rounds; after the last
 * release, every context inactive and memory and fds as before.
 *
 * Why held: without it the threads sometimes let go of a device all at once,
 * and then keep doing so (on four H200s, 1 run of 3 alone: 25 s and 156-160
 * resets, where the others took 1.1 s and saw 4), and RSS grew with the
 * resets: by 550 MB in one attempt on two H200s while glibc's arenas kept a
 * reset context's memory on every thread that had made one (lib/soak now
 * bounds them), and still by 47-60 MB (about 300 KiB a reset) with two
 * arenas. A verdict that follows the threads' timing tells nothing of a
 * leak of the rounds; what a reset gives back is generations', on eight
 * threads in turn.
 */
static void test_concurrent(void *data)
{
	struct shared *s = calloc(1, sizeof(*s));
	struct fx *f = data;
	unsigned long rounds;
	CUcontext held;

	gc_assert(s);
	s->f = f;
	for (int i = 0; i < f->ndev; i++)
		gc_cu_assert(f->cu, f->cu->cuDevicePrimaryCtxRetain(&held, f->cu->devices[i].dev));
	s->soak = retain_soak(f);
	run_rounds(s);
	rounds = gc_soak_count(s->soak);
	gc_soak_end(s->soak);
	expect_rounds(s, rounds);
	for (int i = 0; i < f->ndev; i++)
		gc_cu_assert(f->cu, f->cu->cuDevicePrimaryCtxRelease(f->cu->devices[i].dev));
	expect_baseline(f, "after every thread's last release and the held ones");
	free(s);
}

#define RESET_ROUNDS 20 /* each thread's in concurrent-reset */

/*
 * concurrent-reset: concurrent-retain's rounds (256 threads x 20, spread
 * over every device) with nothing else holding the contexts, so that a
 * release resets one while other threads retain it again: every result
 * correct, no error, no deadlock, every thread through its rounds; after,
 * every context inactive and memory and fds as before. How many resets the
 * threads made and what RSS did are printed, not judged: both follow the
 * threads' timing (see concurrent-retain).
 */
static void test_concurrent_reset(void *data)
{
	struct shared *s = calloc(1, sizeof(*s));
	long rss0 = gc_usage_now(0).rss_kib;

	gc_assert(s);
	s->f = data;
	s->rounds = RESET_ROUNDS;
	run_rounds(s);
	gc_info("RSS %ld -> %ld KiB over the rounds", rss0, gc_usage_now(0).rss_kib);
	expect_rounds(s, (unsigned long)THREADS * RESET_ROUNDS);
	expect_baseline(s->f, "after every thread's last release");
	free(s);
}

/* ------------------------------------------------------------ generations */

#define GENERATIONS 32 /* at standard: about 6 s on one H200 (a generation: 0.17 s) */
#define GENERATIONS_QUICK 6
#define GEN_THREADS 8  /* the threads that make the generations, in turn */

/* Device 0's used memory as NVML sees it, for the soak (see nvml_used). */
static long long device0_used(void *arg)
{
	const struct fx *f = arg;
	gc_nvml_memory m;

	if (f->n.fn.memory(f->nv[0], &m) != GC_NVML_SUCCESS)
		return -EIO;
	return (long long)m.used;
}

/* The generations' threads: each makes one when its turn comes. */
struct gen_turns {
	struct fx *f;
	struct gc_soak *soak;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	unsigned turn; /* the thread whose generation is next */
	bool done;
	struct gc_problems pr;
};

struct gen_thread {
	struct gen_turns *t;
	unsigned id;
};

#define GEN_STEP(t, call)                                                                \
	do {                                                                             \
		CUresult r_ = (call);                                                    \
		char b_[160];                                                            \
		if (r_ != CUDA_SUCCESS) {                                                \
			gc_problem(&(t)->pr, "%s: %s", #call,                            \
				   gc_cu_strerror((t)->f->cu, r_, b_, sizeof(b_)));      \
			return false;                                                    \
		}                                                                        \
	} while (0)

/* Generation g: create (retain), 16 KiB filled on the GPU and checked, reset (release). */
static bool one_generation(struct gen_turns *t, uint32_t g, uint32_t *host)
{
	const struct gc_cuda *cu = t->f->cu;
	CUdevice d = cu->devices[0].dev;
	CUcontext ctx;
	CUdeviceptr p;
	uint64_t bad;
	unsigned flags;
	int on = 0;

	GEN_STEP(t, cu->cuDevicePrimaryCtxRetain(&ctx, d));
	GEN_STEP(t, cu->cuCtxSetCurrent(ctx));
	GEN_STEP(t, cu->cuMemAlloc(&p, WORDS * 4));
	GEN_STEP(t, gc_cu_launch_fill(cu, (CUfunction)t->f->fill, p, WORDS, g, 0));
	GEN_STEP(t, cu->cuMemcpyDtoH(host, p, WORDS * 4));
	GEN_STEP(t, cu->cuMemFree(p));
	GEN_STEP(t, cu->cuCtxSetCurrent(NULL));
	GEN_STEP(t, cu->cuDevicePrimaryCtxRelease(d));
	GEN_STEP(t, cu->cuDevicePrimaryCtxGetState(d, &flags, &on));
	bad = mismatches(host, WORDS, g);
	if (bad)
		gc_problem(&t->pr, "generation %u: %llu of %d words wrong after the kernel", g,
			   (unsigned long long)bad, WORDS);
	if (on)
		gc_problem(&t->pr, "generation %u: its only release left the context active", g);
	return !bad && !gc_problems_count(&t->pr);
}

/* Wait for this thread's turn; whether a generation may start. */
static bool my_turn(struct gen_turns *t, unsigned id)
{
	bool go;

	pthread_mutex_lock(&t->lock);
	while (t->turn != id && !t->done)
		pthread_cond_wait(&t->cv, &t->lock);
	go = !t->done && gc_soak_claim(t->soak);
	t->done = !go;
	pthread_mutex_unlock(&t->lock);
	return go;
}

static void pass_turn(struct gen_turns *t, unsigned id, bool stop)
{
	pthread_mutex_lock(&t->lock);
	t->turn = (id + 1) % GEN_THREADS;
	t->done = t->done || stop;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

static void *gen_worker(void *p)
{
	struct gen_thread *w = p;
	struct gen_turns *t = w->t;
	uint32_t *host = malloc(WORDS * 4);
	bool ok = host != NULL;

	if (!host)
		gc_problem(&t->pr, "thread %u: out of host memory", w->id);
	while (ok && my_turn(t, w->id)) {
		ok = one_generation(t, (uint32_t)gc_soak_count(t->soak), host);
		if (ok)
			gc_soak_done(t->soak);
		pass_turn(t, w->id, !ok);
	}
	pass_turn(t, w->id, true);
	free(host);
	return NULL;
}

/*
 * generations: device 0's primary context created and reset over and over, one
 * generation a cycle (a soak), made in turn by GEN_THREADS threads all alive:
 * retain, the fill kernel run and checked, release with nothing else holding
 * it, so that, by cuda.h's cuDevicePrimaryCtxRelease, "The context is
 * automatically reset once the last reference to it is released." [src
 * zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA 12.6.3). What a
 * reset gives back must be what the creation took: the process's memory (RSS
 * less what malloc keeps free), fds and device memory flat from one generation
 * to the next. concurrent-retain makes generations only when its threads
 * happen to let go of a device all at once, each on whichever thread retains
 * first; here every cycle is one, on a known thread, so what the allocator
 * keeps per thread (an arena a thread: RSS alone grows by a context's worth on
 * each new thread) is seen every time, apart from a leak.
 */
static void test_generations(void *data)
{
	struct gen_turns t = { .f = data };
	struct gen_thread w[GEN_THREADS];
	pthread_t th[GEN_THREADS];
	long rss0 = gc_usage_now(0).rss_kib, trimmed0 = gc_rss_trimmed_kib();

	gc_problems_init(&t.pr);
	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cv, NULL);
	t.soak = gc_soak_start(&(struct gc_soak_cfg){
		.name = "generations", .cycles = GENERATIONS, .quick = GENERATIONS_QUICK,
		.cycle = "one primary context generation of device 0, made by the next of 8 "
			 "threads: retain (create), allocate 16 KiB, fill on the GPU, read back "
			 "and check, free, release (reset)",
		.dev_used = device0_used, .dev_arg = t.f });
	for (unsigned i = 0; i < GEN_THREADS; i++) {
		w[i] = (struct gen_thread){ &t, i };
		gc_assert(pthread_create(&th[i], NULL, gen_worker, &w[i]) == 0);
	}
	for (unsigned i = 0; i < GEN_THREADS; i++)
		pthread_join(th[i], NULL);
	gc_info("%lu generations by %d threads: RSS %ld -> %ld KiB; once malloc gave back what it "
		"keeps free %ld -> %ld KiB", gc_soak_count(t.soak), GEN_THREADS, rss0,
		gc_usage_now(0).rss_kib, trimmed0, gc_rss_trimmed_kib());
	gc_soak_end(t.soak);
	gc_problems_assert_none(&t.pr);
	gc_problems_destroy(&t.pr);
	expect_baseline(t.f, "after the last generation");
}

/* ------------------------------------------------------------ cost */

#define COST_REPS 20

/*
 * cost: creating the primary context (the first retain) and resetting it
 * (the last release) on device 0, and a retain / release pair while another
 * reference holds it: what a library that retains per call pays. COST_REPS
 * of each a node: the runner runs this once per GPU, one GPU at a time, and
 * joins the copies' samples under one metric, so each copy takes its share
 * (gc_node_share).
 */
static void test_cost(void *data)
{
	struct fx *f = data;
	struct gc_cuda *cu = f->cu;
	CUdevice d = cu->devices[0].dev;
	const unsigned reps = (unsigned)gc_node_share(COST_REPS);
	double create[COST_REPS], reset[COST_REPS], warm[COST_REPS];
	CUcontext ctx;

	gc_info("%u of the node's %d repetitions on this GPU", reps, COST_REPS);
	for (unsigned i = 0; i < reps; i++) {
		uint64_t t0 = gc_now_ns();

		gc_cu_assert(cu, cu->cuDevicePrimaryCtxRetain(&ctx, d));
		create[i] = (double)(gc_now_ns() - t0);
		t0 = gc_now_ns();
		gc_cu_assert(cu, cu->cuDevicePrimaryCtxRelease(d));
		reset[i] = (double)(gc_now_ns() - t0);
	}
	gc_cu_assert(cu, cu->cuDevicePrimaryCtxRetain(&ctx, d));
	for (unsigned i = 0; i < reps; i++) {
		uint64_t t0 = gc_now_ns();

		gc_cu_assert(cu, cu->cuDevicePrimaryCtxRetain(&ctx, d));
		gc_cu_assert(cu, cu->cuDevicePrimaryCtxRelease(d));
		warm[i] = (double)(gc_now_ns() - t0);
	}
	gc_cu_assert(cu, cu->cuDevicePrimaryCtxRelease(d));
	gc_metric("retain-create", "ns", GC_LOWER_IS_BETTER, create, reps);
	gc_metric("release-reset", "ns", GC_LOWER_IS_BETTER, reset, reps);
	gc_metric("retain-release-warm", "ns", GC_LOWER_IS_BETTER, warm, reps);
	expect_baseline(f, "after the cost cycles");
}

/* ------------------------------------------------------------ main */

static const struct gc_fixture fixture = { .setup = fx_setup, .teardown = fx_teardown };

static const struct gc_subtest subtests[] = {
	{ "refcount", test_refcount, "k retains, k releases per device: one context, alive until "
	  "the k-th, memory and fds back after it, one more is INVALID_CONTEXT" },
	{ "stale-pointer", test_stale, "a pointer of an ended context generation: "
	  "INVALID_VALUE, and cuMemFree of it fails; address reuse recorded" },
	{ "concurrent-retain", test_concurrent, "256 threads retain / launch / check / release "
	  "over every device, each context held: correct results, no deadlock, nothing grows" },
	{ "concurrent-reset", test_concurrent_reset, "the same rounds with nothing holding the "
	  "contexts, reset under the threads: correct results, no deadlock, everything back" },
	{ "generations", test_generations, "device 0's primary context created and reset "
	  "again and again: host RSS, fds and device memory flat across generations" },
	{ "cost", test_cost, "primary context create, reset, and a warm retain / release" },
	{ 0 }
};

static const char *const soaks[] = { "concurrent-retain", "generations", NULL };

/*
 * One GPU at a time, but concurrent-retain's rounds go over every device at
 * once; and cost alone, GPU after GPU: contexts created on four GPUs at once
 * are not made side by side (on four H200s, driver 580.159.04, a primary
 * context's creation took 105 ms alone and 349-363 ms beside three others,
 * its reset 66 ms and 282-309 ms).
 */
static const struct gc_placement_rule placements[] = {
	{ "concurrent-retain", GC_PLACE_NODE },
	{ "concurrent-reset", GC_PLACE_NODE },
	{ "cost", GC_PLACE_GPU_ALONE },
	{ 0 }
};

GC_MAIN(.name = "cuda_context",
	.description = "CUDA primary context retain / release: refcount, generations, 256 threads",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks,
	.placement = GC_PLACE_GPU, .placements = placements)
