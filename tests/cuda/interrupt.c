// SPDX-License-Identifier: MIT
/*
 * cuda_interrupt: the interrupt contract on the CUDA driver API. The driver
 * API has no EINTR (no CUresult says that the call was interrupted and may be
 * tried again): a call that a signal lands in must behave as if no signal had
 * come. It returns CUDA_SUCCESS, the data it moved or made is right, it does
 * not hang, and nothing is left behind (the fixture's leak check after every
 * subtest). Any other CUresult from a valid call under a storm is a spurious
 * error.
 *
 * Every call under test is bracketed (lib/interrupt.h) and counted per
 * operation: calls, calls with a signal inside, signals inside, errors. A
 * subtest only counts when signals landed inside its calls. A signal counted
 * inside may have reached the thread while it was in libcuda's user-space
 * code rather than in a system call: a hit says the call was interrupted
 * somewhere between its entry and its return, no more.
 *
 * Storms run over a sweep of intervals (a few coprime-ish periods) so that
 * the signals drift across the phases of each call; sigiter-sweep places
 * one-shot signals at growing depths into one call (IGT's sigiter).
 * vmm-ops and alloc-copy-free are soaks (lib/soak.h): one sweep's cycles at
 * level standard, a tenth of them at quick, sweep after sweep at long.
 *
 * Experiments record what happened, give back what they took and stop the
 * storm before asserting anything: a failed assert leaves the subtest at once
 * (after_each stops a storm left running, all the same).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "gc_cuda.h"
#include "interrupt.h"
#include "measure.h"
#include "soak.h"

#define SEED_BASE 0x1e7a0000u
#define DEV 0 /* every subtest runs on device 0, the one the fixture makes current */

/*
 * Free device memory and /dev/nvidia* fds must come back exactly after every
 * subtest. 0 is where the lead asked to start; raise it only with a measured
 * reason from a real run.
 */
#define LEAK_SLACK 0

struct fx {
	struct gc_cuda_fixture dev; /* leak-checked after each subtest */
	struct gc_cu_kernels k;
};

/* ---------------------------------------------------------------- helpers */

static const char *cu_str(const struct gc_cuda *cu, CUresult r, char *buf, size_t len)
{
	return gc_cu_strerror(cu, r, buf, len);
}

static void pattern_fill(uint32_t *p, uint64_t n, uint32_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		p[i] = gc_pattern_u32(i, seed);
}

/* Words of p[0..n) that are not pattern(i, seed); *first: the first one. */
static uint64_t pattern_bad(const volatile uint32_t *p, uint64_t n, uint32_t seed,
			    uint64_t *first)
{
	uint64_t bad = 0;

	*first = UINT64_MAX;
	for (uint64_t i = 0; i < n; i++) {
		if (p[i] == gc_pattern_u32(i, seed))
			continue;
		if (!bad++)
			*first = i;
	}
	return bad;
}

/* Words where a and b differ; *first: the first one. */
static uint64_t words_differ(const uint32_t *a, const uint32_t *b, uint64_t n, uint64_t *first)
{
	uint64_t bad = 0;

	*first = UINT64_MAX;
	if (!memcmp(a, b, n * sizeof(*a)))
		return 0;
	for (uint64_t i = 0; i < n; i++) {
		if (a[i] == b[i])
			continue;
		if (!bad++)
			*first = i;
	}
	return bad;
}

static void require_vmm(const struct gc_cuda *cu, int dev)
{
	gc_require_f(cu->devices[dev].vmm, "device %d (%s) does not support virtual memory "
		     "management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)",
		     dev, cu->devices[dev].name);
}

/* size rounded up to device dev's minimum VMM granularity. */
static size_t vmm_size(const struct gc_cuda *cu, int dev, size_t size)
{
	struct gc_vmm_gran g;

	gc_cu_assert(cu, gc_vmm_granularity(cu, dev, &g));
	return gc_align_up(size, g.minimum);
}

/* The first data error of a run: what, in which cycle (or sigiter pass), how many words. */
struct data_err {
	const char *what;
	const char *unit; /* NULL: `cycle` */
	unsigned cycle;
	uint64_t bad, first;
};

static void data_record(struct data_err *d, const char *what, unsigned cycle, uint64_t bad,
			uint64_t first)
{
	if (!bad || d->bad)
		return;
	*d = (struct data_err){ .what = what, .cycle = cycle, .bad = bad, .first = first };
}

static void data_assert(const struct data_err *d)
{
	gc_assert_f(!d->bad, "%s, %s %u: %" PRIu64 " words wrong, the first at word %" PRIu64,
		    d->what, d->unit ? d->unit : "cycle", d->cycle, d->bad, d->first);
}

/* The first error of an unbracketed clean-up call. */
static void cleanup_record(CUresult *first, CUresult r)
{
	if (r && !*first)
		*first = r;
}

/* ------------------------------------------------------ per-op accounting */

struct op_stat {
	const char *name;
	uint64_t calls, hit, signals, errors;
	CUresult first_err;
	uint64_t landed0; /* the storm's landed_inside when the bracket opened */
};

static void ops_init(struct op_stat *ops, const char *const *names, size_t n)
{
	memset(ops, 0, n * sizeof(*ops));
	for (size_t i = 0; i < n; i++)
		ops[i].name = names[i];
}

/* Opens the bracket (s NULL: a quiet call, counted but not bracketed). */
static void op_enter(struct gc_storm *s, struct op_stat *o)
{
	if (!s)
		return;
	o->landed0 = gc_storm_counts(s).landed_inside;
	gc_storm_enter(s);
}

/* Closes the bracket and accounts r; true when the call failed. */
static bool op_leave(struct gc_storm *s, struct op_stat *o, CUresult r)
{
	if (s) {
		o->hit += gc_storm_leave(s);
		o->signals += gc_storm_counts(s).landed_inside - o->landed0;
	}
	o->calls++;
	if (r != CUDA_SUCCESS && !o->errors++)
		o->first_err = r;
	return r != CUDA_SUCCESS;
}

/* Make `call` bracketed under storm s and account it to op o; true if it failed. */
#define STORMED(s, o, call) op_leave((s), (o), (op_enter((s), (o)), (call)))

static void ops_report(const struct gc_cuda *cu, const struct op_stat *ops, size_t n,
		       const char *what)
{
	char err[160];

	for (size_t i = 0; i < n; i++) {
		if (!ops[i].calls)
			continue;
		gc_info("%s %s: %" PRIu64 " calls, %" PRIu64 " with a signal inside (%" PRIu64
			" signals), %" PRIu64 " errors%s%s", what, ops[i].name, ops[i].calls,
			ops[i].hit, ops[i].signals, ops[i].errors, ops[i].errors ? ", first " : "",
			ops[i].errors ? cu_str(cu, ops[i].first_err, err, sizeof(err)) : "");
	}
}

/* Contract: no spurious error. Every call was valid: any error is the storm's doing. */
static void ops_assert_no_error(const struct gc_cuda *cu, const struct op_stat *ops, size_t n)
{
	char err[160];

	for (size_t i = 0; i < n; i++)
		gc_assert_f(!ops[i].errors, "%s: %" PRIu64 " of %" PRIu64 " calls failed under the "
			    "storm, the first with %s (the driver API has no EINTR: any error "
			    "is spurious)", ops[i].name, ops[i].errors, ops[i].calls,
			    cu_str(cu, ops[i].first_err, err, sizeof(err)));
}

/* A subtest counts only when signals landed inside its calls. */
static void ops_require_hits(const struct op_stat *ops, size_t n)
{
	uint64_t hit = 0, calls = 0;

	for (size_t i = 0; i < n; i++) {
		hit += ops[i].hit;
		calls += ops[i].calls;
	}
	gc_assert_f(hit > 0, "no signal landed inside any of %" PRIu64 " bracketed calls", calls);
}

/* The op named must have been hit at least once (a call long enough not to be missed). */
static void op_require_hit(const struct op_stat *o)
{
	gc_assert_f(o->hit > 0, "no signal landed inside any of %" PRIu64 " %s calls (%" PRIu64
		    " signals inside)", o->calls, o->name, o->signals);
}

/* ------------------------------------------------------------ soaked sweeps */

/* The soak of one storm sweep's cycles (today's length at standard). */
static struct gc_soak *sweep_soak(const struct fx *f, const char *name, const char *cycle,
				  unsigned per_period)
{
	return gc_soak_start(&(struct gc_soak_cfg){
		.name = name, .cycle = cycle, .cycles = GC_STORM_SWEEP_PERIODS * per_period,
		.dev_used = gc_cuda_soak_dev0, .dev_arg = f->dev.cu }); /* DEV */
}

/* ------------------------------------------------------------------ vmm-ops */

#define VMM_SIZE (16 * MiB)
#define VMM_CYCLES 20 /* per storm period */

enum { V_CREATE, V_RESERVE, V_MAP, V_ACCESS, V_FILL, V_DTOH, V_UNMAP, V_ADDRFREE, V_RELEASE,
       V_N };
static const char *const vmm_op_names[V_N] = {
	"cuMemCreate", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess", "fill launch",
	"cuMemcpyDtoH", "cuMemUnmap", "cuMemAddressFree", "cuMemRelease",
};

struct vmm_ops {
	const struct fx *f;
	size_t size;
	uint32_t *host;
	struct op_stat op[V_N];
	struct data_err data;
	CUresult cleanup;
};

static bool vmm_map_stormed(struct vmm_ops *v, struct gc_storm *s, struct gc_vmm *m)
{
	const struct gc_cuda *cu = v->f->dev.cu;
	CUmemAllocationProp p = gc_vmm_prop(DEV);
	int dev = DEV;

	if (STORMED(s, &v->op[V_CREATE], cu->cuMemCreate(&m->handle, m->size, &p, 0)))
		return false;
	m->created = true;
	if (STORMED(s, &v->op[V_RESERVE], cu->cuMemAddressReserve(&m->va, m->size, 0, 0, 0)))
		return false;
	m->reserved = true;
	if (STORMED(s, &v->op[V_MAP], cu->cuMemMap(m->va, m->size, 0, m->handle, 0)))
		return false;
	m->mapped = true;
	return !STORMED(s, &v->op[V_ACCESS], gc_vmm_set_access(cu, m->va, m->size, &dev, 1,
						CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
}

static bool vmm_unmap_stormed(struct vmm_ops *v, struct gc_storm *s, struct gc_vmm *m)
{
	const struct gc_cuda *cu = v->f->dev.cu;

	if (STORMED(s, &v->op[V_UNMAP], cu->cuMemUnmap(m->va, m->size)))
		return false;
	m->mapped = false;
	if (STORMED(s, &v->op[V_ADDRFREE], cu->cuMemAddressFree(m->va, m->size)))
		return false;
	m->reserved = false;
	if (STORMED(s, &v->op[V_RELEASE], cu->cuMemRelease(m->handle)))
		return false;
	m->created = false;
	return true;
}

/* One cycle: create, reserve, map, set access, fill, read back, check, unmap, free, release. */
static bool vmm_cycle(void *ctx, struct gc_storm *s, unsigned i)
{
	struct vmm_ops *v = ctx;
	const struct gc_cuda *cu = v->f->dev.cu;
	struct gc_vmm m = { .size = v->size };
	uint64_t n = v->size / sizeof(uint32_t), bad, first;
	uint32_t seed = SEED_BASE + i;
	bool ok;

	memset(v->host, 0, v->size);
	ok = vmm_map_stormed(v, s, &m) &&
	     !STORMED(s, &v->op[V_FILL], gc_cu_fill_u32(cu, &v->f->k, m.va, n, seed, 0)) &&
	     !STORMED(s, &v->op[V_DTOH], cu->cuMemcpyDtoH(v->host, m.va, v->size));
	if (ok) {
		bad = pattern_bad(v->host, n, seed, &first);
		data_record(&v->data, "VMM memory filled on the GPU, read back by DtoH", i, bad,
			    first);
		ok = !bad;
	}
	ok = ok && vmm_unmap_stormed(v, s, &m);
	cleanup_record(&v->cleanup, gc_vmm_free(cu, &m)); /* what a failed cycle left */
	return ok;
}

/*
 * Contract (DESIGN interrupt, CUDA column): cuMemCreate, cuMemAddressReserve,
 * cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemAddressFree and cuMemRelease
 * interrupted by signals return CUDA_SUCCESS (the driver API has no EINTR),
 * the mapping holds what the GPU wrote into it, and nothing leaks.
 */
static void test_vmm_ops(void *data)
{
	static struct gc_storm s;
	struct fx *f = data;
	struct vmm_ops v = { .f = f };
	struct gc_storm_sweep sr = { .cycle = vmm_cycle, .ctx = &v, .per_period = VMM_CYCLES };
	struct gc_soak *soak;
	unsigned long done;

	require_vmm(f->dev.cu, DEV);
	v.size = vmm_size(f->dev.cu, DEV, VMM_SIZE);
	ops_init(v.op, vmm_op_names, V_N);
	v.host = malloc(v.size);
	gc_assert(v.host);
	soak = sweep_soak(f, "vmm-ops", "under a signal storm: cuMemCreate, cuMemAddressReserve, "
			  "cuMemMap, cuMemSetAccess of 16 MiB, GPU fill, cuMemcpyDtoH and check, "
			  "cuMemUnmap, cuMemAddressFree, cuMemRelease", VMM_CYCLES);
	gc_storm_sweep_soak(&s, &sr, soak);
	free(v.host);
	done = gc_soak_count(soak);
	gc_soak_end(soak);

	gc_storm_sweep_report(&sr, "vmm-ops");
	ops_report(f->dev.cu, v.op, V_N, "vmm-ops");
	gc_assert_ok(sr.storm_err);
	ops_assert_no_error(f->dev.cu, v.op, V_N);
	data_assert(&v.data);
	gc_cu_assert(f->dev.cu, v.cleanup);
	gc_assert_eq_uint(sr.cycles, done); /* every cycle ran to its end */
	ops_require_hits(v.op, V_N);
}

/* ---------------------------------------------------------- alloc-copy-free */

#define ACF_SIZE (4 * MiB)
#define ACF_CYCLES 40 /* per storm period */

enum { A_ALLOC, A_HTOD, A_CHECK, A_DTOH, A_FREE, A_N };
static const char *const acf_op_names[A_N] = {
	"cuMemAlloc", "cuMemcpyHtoD", "GPU check", "cuMemcpyDtoH", "cuMemFree",
};

struct acf {
	const struct fx *f;
	uint32_t *src, *dst; /* pageable host memory */
	struct op_stat op[A_N];
	struct data_err data;
	CUresult cleanup;
};

/* HtoD, checked on the GPU; DtoH, checked on the host: each copy checked on its own. */
static bool acf_copies(struct acf *a, struct gc_storm *s, CUdeviceptr d, unsigned i)
{
	const struct gc_cuda *cu = a->f->dev.cu;
	uint64_t n = ACF_SIZE / sizeof(uint32_t), bad = 0, first = UINT64_MAX;
	uint32_t seed = SEED_BASE + i;

	if (STORMED(s, &a->op[A_HTOD], cu->cuMemcpyHtoD(d, a->src, ACF_SIZE)) ||
	    STORMED(s, &a->op[A_CHECK], gc_cu_check_u32(cu, &a->f->k, d, n, seed, &bad, &first)))
		return false;
	data_record(&a->data, "cuMemcpyHtoD (checked on the GPU)", i, bad, first);
	if (bad || STORMED(s, &a->op[A_DTOH], cu->cuMemcpyDtoH(a->dst, d, ACF_SIZE)))
		return false;
	bad = words_differ(a->dst, a->src, n, &first);
	data_record(&a->data, "cuMemcpyDtoH (checked on the host)", i, bad, first);
	return !bad;
}

static bool acf_cycle(void *ctx, struct gc_storm *s, unsigned i)
{
	struct acf *a = ctx;
	const struct gc_cuda *cu = a->f->dev.cu;
	CUdeviceptr d = 0;
	bool ok;

	pattern_fill(a->src, ACF_SIZE / sizeof(uint32_t), SEED_BASE + i);
	memset(a->dst, 0, ACF_SIZE);
	if (STORMED(s, &a->op[A_ALLOC], cu->cuMemAlloc(&d, ACF_SIZE)))
		return false;
	ok = acf_copies(a, s, d, i);
	if (ok)
		return !STORMED(s, &a->op[A_FREE], cu->cuMemFree(d));
	cleanup_record(&a->cleanup, cu->cuMemFree(d));
	return false;
}

/*
 * Contract (DESIGN interrupt, CUDA column): cuMemAlloc, cuMemcpyHtoD,
 * cuMemcpyDtoH and cuMemFree interrupted by signals return CUDA_SUCCESS and
 * every copy delivers exactly the bytes of its source; nothing leaks.
 */
static void test_alloc_copy_free(void *data)
{
	static struct gc_storm s;
	struct fx *f = data;
	struct acf a = { .f = f };
	struct gc_storm_sweep sr = { .cycle = acf_cycle, .ctx = &a, .per_period = ACF_CYCLES };
	struct gc_soak *soak;
	unsigned long done;

	ops_init(a.op, acf_op_names, A_N);
	a.src = malloc(ACF_SIZE);
	a.dst = malloc(ACF_SIZE);
	gc_assert(a.src && a.dst);
	soak = sweep_soak(f, "alloc-copy-free", "under a signal storm: cuMemAlloc of 4 MiB, "
			  "cuMemcpyHtoD and GPU check, cuMemcpyDtoH and host check, cuMemFree",
			  ACF_CYCLES);
	gc_storm_sweep_soak(&s, &sr, soak);
	free(a.src);
	free(a.dst);
	done = gc_soak_count(soak);
	gc_soak_end(soak);

	gc_storm_sweep_report(&sr, "alloc-copy-free");
	ops_report(f->dev.cu, a.op, A_N, "alloc-copy-free");
	gc_assert_ok(sr.storm_err);
	ops_assert_no_error(f->dev.cu, a.op, A_N);
	data_assert(&a.data);
	gc_cu_assert(f->dev.cu, a.cleanup);
	gc_assert_eq_uint(sr.cycles, done); /* every cycle ran to its end */
	/* A 4 MiB copy lasts longer than the slowest storm's period: each copy kind is hit. */
	op_require_hit(&a.op[A_HTOD]);
	op_require_hit(&a.op[A_DTOH]);
}

/* ---------------------------------------------------- queued GPU work */

#define WORK_SIZE (256 * MiB)
#define WORK_TARGET_NS 20000000ull /* aim: ~20 ms of queued fills per batch */
#define WORK_CALIBRATE_FILLS 16
#define WORK_MIN_FILLS 16
#define WORK_MAX_FILLS 4096
#define MARKER_WORDS GC_CU_BLOCK

/*
 * A batch of fills of a large buffer, then one small fill of a pinned host
 * marker: when a synchronisation returns, the host reads the marker with no
 * CUDA call. A sync that returned before the batch was done shows the old
 * (zeroed) marker.
 */
struct work {
	CUdeviceptr buf;
	uint64_t n;
	uint32_t *marker; /* cuMemAllocHost: the same pointer on the device (UVA) */
	unsigned fills;
};

static void require_uva(const struct gc_cuda *cu, int dev)
{
	int uva = 0;

	gc_cu_assert(cu, cu->cuDeviceGetAttribute(&uva, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
						  cu->devices[dev].dev));
	gc_require_f(uva, "device %d has no unified addressing: the pinned marker cannot be "
		     "written by a kernel", dev);
}

static CUresult work_alloc(const struct gc_cuda *cu, struct work *w)
{
	void *marker = NULL;
	CUresult r;

	memset(w, 0, sizeof(*w));
	w->n = WORK_SIZE / sizeof(uint32_t);
	r = cu->cuMemAlloc(&w->buf, WORK_SIZE);
	if (!r)
		r = cu->cuMemAllocHost(&marker, MARKER_WORDS * sizeof(uint32_t));
	w->marker = marker;
	return r;
}

static CUresult work_free(const struct gc_cuda *cu, struct work *w)
{
	CUresult first = CUDA_SUCCESS;

	if (w->marker)
		cleanup_record(&first, cu->cuMemFreeHost(w->marker));
	if (w->buf)
		cleanup_record(&first, cu->cuMemFree(w->buf));
	w->marker = NULL;
	w->buf = 0;
	return first;
}

static void marker_clear(struct work *w)
{
	volatile uint32_t *m = w->marker;

	for (unsigned i = 0; i < MARKER_WORDS; i++)
		m[i] = 0;
}

static uint64_t marker_bad(const struct work *w, uint32_t seed, uint64_t *first)
{
	return pattern_bad(w->marker, MARKER_WORDS, seed, first);
}

/* fills - 1 fills with other seeds, the last with seed, then the marker: each a launch on st. */
static bool work_launch(const struct gc_cuda *cu, const struct gc_cu_kernels *k, struct work *w,
			CUstream st, uint32_t seed, struct gc_storm *s, struct op_stat *o)
{
	for (unsigned j = 0; j + 1 < w->fills; j++)
		if (STORMED(s, o, gc_cu_fill_u32(cu, k, w->buf, w->n, seed + 0x01000000u + j, st)))
			return false;
	return !STORMED(s, o, gc_cu_fill_u32(cu, k, w->buf, w->n, seed, st)) &&
	       !STORMED(s, o, gc_cu_fill_u32(cu, k, (CUdeviceptr)(uintptr_t)w->marker,
					       MARKER_WORDS, seed, st));
}

/* Quietly time a few fills; size the batches to about WORK_TARGET_NS of GPU time. */
static CUresult work_calibrate(const struct gc_cuda *cu, const struct gc_cu_kernels *k,
			       struct work *w)
{
	struct op_stat o = { .name = "calibration" };
	uint64_t t0, ns, fills;
	CUresult r;

	w->fills = WORK_CALIBRATE_FILLS;
	t0 = gc_now_ns();
	if (!work_launch(cu, k, w, 0, SEED_BASE, NULL, &o))
		return o.first_err;
	r = cu->cuCtxSynchronize();
	ns = gc_now_ns() - t0;
	if (r)
		return r;
	fills = WORK_TARGET_NS * WORK_CALIBRATE_FILLS / (ns ? ns : 1);
	w->fills = (unsigned)(fills < WORK_MIN_FILLS ? WORK_MIN_FILLS :
			      fills > WORK_MAX_FILLS ? WORK_MAX_FILLS : fills);
	gc_info("%d fills of %zu MiB took %.3f ms: batches of %u fills", WORK_CALIBRATE_FILLS,
		WORK_SIZE / MiB, (double)ns / 1e6, w->fills);
	return CUDA_SUCCESS;
}

/* --------------------------------------------------------------------- sync */

#define SYNC_ROUNDS 12 /* per storm period; a multiple of the 4 sync kinds */

enum { S_LAUNCH, S_RECORD, S_CTX, S_STREAM, S_EVENT, S_EVENT_BLOCKING, S_CHECK, S_N };
static const char *const sync_op_names[S_N] = {
	"cuLaunchKernel", "cuEventRecord", "cuCtxSynchronize", "cuStreamSynchronize",
	"cuEventSynchronize", "cuEventSynchronize (CU_EVENT_BLOCKING_SYNC)", "GPU check",
};

struct sync_run {
	const struct fx *f;
	struct work w;
	CUstream stream;
	CUevent ev_spin, ev_block;
	struct op_stat op[S_N];
	struct data_err data;
};

/* The sync of round i: kind S_CTX + i % 4. */
static bool sync_wait(struct sync_run *y, struct gc_storm *s, int kind, CUstream st)
{
	const struct gc_cuda *cu = y->f->dev.cu;
	CUevent ev = kind == S_EVENT ? y->ev_spin : y->ev_block;

	switch (kind) {
	case S_CTX:
		return !STORMED(s, &y->op[S_CTX], cu->cuCtxSynchronize());
	case S_STREAM:
		return !STORMED(s, &y->op[S_STREAM], cu->cuStreamSynchronize(st));
	default:
		return !STORMED(s, &y->op[S_RECORD], cu->cuEventRecord(ev, st)) &&
		       !STORMED(s, &y->op[kind], cu->cuEventSynchronize(ev));
	}
}

static bool sync_round(void *ctx, struct gc_storm *s, unsigned i)
{
	static const char *const what[S_N] = {
		[S_CTX] = "pinned marker after cuCtxSynchronize returned",
		[S_STREAM] = "pinned marker after cuStreamSynchronize returned",
		[S_EVENT] = "pinned marker after cuEventSynchronize returned",
		[S_EVENT_BLOCKING] = "pinned marker after a blocking cuEventSynchronize returned",
	};
	struct sync_run *y = ctx;
	const struct gc_cuda *cu = y->f->dev.cu;
	int kind = S_CTX + (int)(i % 4);
	CUstream st = kind == S_CTX ? 0 : y->stream;
	uint32_t seed = SEED_BASE + i;
	uint64_t bad = 0, first;

	marker_clear(&y->w);
	if (!work_launch(cu, &y->f->k, &y->w, st, seed, s, &y->op[S_LAUNCH]) ||
	    !sync_wait(y, s, kind, st))
		return false;
	/* Read at once, with no CUDA call between the sync's return and the read. */
	bad = marker_bad(&y->w, seed, &first);
	data_record(&y->data, what[kind], i, bad, first);
	if (bad || STORMED(s, &y->op[S_CHECK], gc_cu_check_u32(cu, &y->f->k, y->w.buf, y->w.n,
								 seed, &bad, &first)))
		return false;
	data_record(&y->data, "the batch's last fill of the large buffer", i, bad, first);
	return !bad;
}

static CUresult sync_setup(struct sync_run *y)
{
	const struct gc_cuda *cu = y->f->dev.cu;
	CUresult r = work_alloc(cu, &y->w);

	if (!r)
		r = work_calibrate(cu, &y->f->k, &y->w);
	if (!r)
		r = cu->cuStreamCreate(&y->stream, CU_STREAM_DEFAULT);
	if (!r)
		r = cu->cuEventCreate(&y->ev_spin, CU_EVENT_DEFAULT);
	if (!r)
		r = cu->cuEventCreate(&y->ev_block, CU_EVENT_BLOCKING_SYNC);
	return r;
}

static CUresult sync_teardown(struct sync_run *y)
{
	const struct gc_cuda *cu = y->f->dev.cu;
	CUresult first = cu->cuCtxSynchronize();

	if (y->ev_block)
		cleanup_record(&first, cu->cuEventDestroy(y->ev_block));
	if (y->ev_spin)
		cleanup_record(&first, cu->cuEventDestroy(y->ev_spin));
	if (y->stream)
		cleanup_record(&first, cu->cuStreamDestroy(y->stream));
	cleanup_record(&first, work_free(cu, &y->w));
	return first;
}

/*
 * Contract (DESIGN interrupt, CUDA column; cuda.h): cuCtxSynchronize "Blocks
 * until the current context has completed all preceding requested tasks."
 * [src zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA 12.6.3),
 * cuStreamSynchronize / cuEventSynchronize wait for the work before them,
 * with a busy-wait or, for CU_EVENT_BLOCKING_SYNC, a blocking wait; under a
 * signal storm each returns CUDA_SUCCESS and only once the work is done (the
 * pinned marker written by the last kernel is there when it returns), and
 * the data is right.
 */
static void test_sync(void *data)
{
	static struct gc_storm s;
	struct fx *f = data;
	struct sync_run y = { .f = f };
	struct gc_storm_sweep sr = { .cycle = sync_round, .ctx = &y, .per_period = SYNC_ROUNDS };
	CUresult setup, teardown;

	require_uva(f->dev.cu, DEV);
	ops_init(y.op, sync_op_names, S_N);
	setup = sync_setup(&y);
	if (!setup)
		gc_storm_sweep(&s, &sr);
	teardown = sync_teardown(&y);

	gc_cu_assert(f->dev.cu, setup);
	gc_storm_sweep_report(&sr, "sync");
	ops_report(f->dev.cu, y.op, S_N, "sync");
	gc_assert_ok(sr.storm_err);
	ops_assert_no_error(f->dev.cu, y.op, S_N);
	data_assert(&y.data);
	gc_cu_assert(f->dev.cu, teardown);
	gc_assert_eq_uint(sr.cycles, GC_STORM_SWEEP_PERIODS * SYNC_ROUNDS);
	/* Each sync waits for ~20 ms of queued fills, longer than the slowest storm's period. */
	for (int kind = S_CTX; kind <= S_EVENT_BLOCKING; kind++)
		op_require_hit(&y.op[kind]);
}

/* ------------------------------------------------------------ sigiter-sweep */

#define SWEEP_SIZE (64 * MiB)

/* Three sweeps, first delays 2^(1/3) apart: the depths of one fall between the other's. */
static const uint64_t sweep_first_ns[] = { 1000, 1260, 1587 };
#define SWEEPS_MAX 60

struct sweep_target;

struct sweep_ctx {
	const struct fx *f;
	const struct sweep_target *t; /* the call this dynamic subtest sweeps */
	size_t size;        /* SWEEP_SIZE rounded up to the VMM granularity */
	uint64_t n;         /* words */
	uint32_t *src, *dst; /* pageable host memory */
	CUdeviceptr d;
	struct gc_vmm m;
	CUmemGenericAllocationHandle h2;
	struct work w;
	CUevent ev;
	uint32_t seed;      /* of the current pass */
	uint32_t prev_seed; /* mem-map: what the memory held before the pass */
	unsigned kept, lost; /* mem-map: passes that found the old content / did not */
};

struct sweep_target {
	const char *name;
	CUresult (*setup)(struct sweep_ctx *c);
	CUresult (*prepare)(struct sweep_ctx *c); /* before each pass, outside the bracket */
	CUresult (*call)(struct sweep_ctx *c);    /* the call the signal lands in */
	/* after a pass whose call succeeded: words wrong in *bad */
	CUresult (*verify)(struct sweep_ctx *c, uint64_t *bad, uint64_t *first);
	CUresult (*teardown)(struct sweep_ctx *c);
};

static CUresult gpu_check(struct sweep_ctx *c, CUdeviceptr p, uint64_t n, uint32_t seed,
			  uint64_t *bad, uint64_t *first)
{
	return gc_cu_check_u32(c->f->dev.cu, &c->f->k, p, n, seed, bad, first);
}

/* htod-64m: the copy from pageable memory into a zeroed buffer. */
static CUresult htod_setup(struct sweep_ctx *c)
{
	pattern_fill(c->src, c->n, c->seed);
	return c->f->dev.cu->cuMemAlloc(&c->d, c->size);
}

static CUresult htod_prepare(struct sweep_ctx *c)
{
	return c->f->dev.cu->cuMemsetD32(c->d, 0, c->n);
}

static CUresult htod_call(struct sweep_ctx *c)
{
	return c->f->dev.cu->cuMemcpyHtoD(c->d, c->src, c->size);
}

static CUresult htod_verify(struct sweep_ctx *c, uint64_t *bad, uint64_t *first)
{
	return gpu_check(c, c->d, c->n, c->seed, bad, first);
}

static CUresult dev_teardown(struct sweep_ctx *c)
{
	CUresult r = c->d ? c->f->dev.cu->cuMemFree(c->d) : CUDA_SUCCESS;

	c->d = 0;
	return r;
}

/* dtoh-64m: the copy of a filled buffer into zeroed pageable memory. */
static CUresult dtoh_setup(struct sweep_ctx *c)
{
	const struct gc_cuda *cu = c->f->dev.cu;
	CUresult r = cu->cuMemAlloc(&c->d, c->size);

	pattern_fill(c->src, c->n, c->seed);
	if (!r)
		r = cu->cuMemcpyHtoD(c->d, c->src, c->size);
	return r;
}

static CUresult dtoh_prepare(struct sweep_ctx *c)
{
	memset(c->dst, 0, c->size);
	return CUDA_SUCCESS;
}

static CUresult dtoh_call(struct sweep_ctx *c)
{
	return c->f->dev.cu->cuMemcpyDtoH(c->dst, c->d, c->size);
}

static CUresult dtoh_verify(struct sweep_ctx *c, uint64_t *bad, uint64_t *first)
{
	*bad = words_differ(c->dst, c->src, c->n, first);
	return CUDA_SUCCESS;
}

/* mem-create-64m: the physical allocation; released after each pass. */
static CUresult nothing(struct sweep_ctx *c)
{
	(void)c;
	return CUDA_SUCCESS;
}

static CUresult create_call(struct sweep_ctx *c)
{
	CUmemAllocationProp p = gc_vmm_prop(DEV);

	return c->f->dev.cu->cuMemCreate(&c->h2, c->size, &p, 0);
}

static CUresult create_verify(struct sweep_ctx *c, uint64_t *bad, uint64_t *first)
{
	*bad = 0;
	*first = UINT64_MAX;
	return c->f->dev.cu->cuMemRelease(c->h2); /* the handle made under the signal is valid */
}

/* A whole mapping of c->size on DEV, filled with c->seed. */
static CUresult mapping_setup(struct sweep_ctx *c)
{
	const struct gc_cuda *cu = c->f->dev.cu;
	CUresult r = gc_vmm_alloc(cu, DEV, c->size, &c->m);

	if (!r)
		r = gc_cu_fill_u32(cu, &c->f->k, c->m.va, c->n, c->seed, 0);
	if (!r)
		r = cu->cuCtxSynchronize();
	return r;
}

static CUresult mapping_teardown(struct sweep_ctx *c)
{
	return gc_vmm_free(c->f->dev.cu, &c->m);
}

/* mem-map-64m: cuMemMap of a held handle into its reservation; unmapped after each pass. */
static CUresult map_setup(struct sweep_ctx *c)
{
	CUresult r = mapping_setup(c);

	c->prev_seed = c->seed;
	if (!r)
		r = c->f->dev.cu->cuMemUnmap(c->m.va, c->m.size);
	if (!r)
		c->m.mapped = false;
	return r;
}

static CUresult map_call(struct sweep_ctx *c)
{
	CUresult r = c->f->dev.cu->cuMemMap(c->m.va, c->m.size, 0, c->m.handle, 0);

	c->m.mapped = !r;
	return r;
}

static CUresult map_verify(struct sweep_ctx *c, uint64_t *bad, uint64_t *first)
{
	const struct gc_cuda *cu = c->f->dev.cu;
	int dev = DEV;
	uint64_t old_bad = 0, old_first;
	CUresult r = gc_vmm_set_access(cu, c->m.va, c->m.size, &dev, 1,
				       CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

	/* undocumented: whether the content survives unmap + map (counted, see sweep_one) */
	if (!r)
		r = gpu_check(c, c->m.va, c->n, c->prev_seed, &old_bad, &old_first);
	if (!r) {
		c->kept += !old_bad;
		c->lost += !!old_bad;
		/* documented: the new mapping, once accessible, is usable: fill and read back */
		c->seed = c->prev_seed + 1;
		r = gc_cu_fill_u32(cu, &c->f->k, c->m.va, c->n, c->seed, 0);
	}
	if (!r)
		r = gpu_check(c, c->m.va, c->n, c->seed, bad, first);
	c->prev_seed = c->seed;
	if (!r)
		r = cu->cuMemUnmap(c->m.va, c->m.size);
	if (!r)
		c->m.mapped = false;
	return r;
}

/* set-access-64m: read-write access granted again to a mapping that already has it. */
static CUresult access_call(struct sweep_ctx *c)
{
	int dev = DEV;

	return gc_vmm_set_access(c->f->dev.cu, c->m.va, c->m.size, &dev, 1,
				 CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

static CUresult access_verify(struct sweep_ctx *c, uint64_t *bad, uint64_t *first)
{
	/* cuMemSetAccess sets access flags: the memory under the mapping keeps its content. */
	return gpu_check(c, c->m.va, c->n, c->seed, bad, first);
}

/* ctx-sync / event-sync-blocking: a wait for ~20 ms of queued fills. */
static CUresult queued_setup(struct sweep_ctx *c)
{
	const struct gc_cuda *cu = c->f->dev.cu;
	CUresult r = work_alloc(cu, &c->w);

	if (!r)
		r = work_calibrate(cu, &c->f->k, &c->w);
	if (!r)
		r = cu->cuEventCreate(&c->ev, CU_EVENT_BLOCKING_SYNC);
	return r;
}

static CUresult queued_prepare(struct sweep_ctx *c)
{
	struct op_stat o = { .name = "launch" };

	marker_clear(&c->w);
	c->seed++;
	if (!work_launch(c->f->dev.cu, &c->f->k, &c->w, 0, c->seed, NULL, &o))
		return o.first_err;
	return CUDA_SUCCESS;
}

static CUresult ctx_sync_call(struct sweep_ctx *c)
{
	return c->f->dev.cu->cuCtxSynchronize();
}

static CUresult event_prepare(struct sweep_ctx *c)
{
	CUresult r = queued_prepare(c);

	return r ? r : c->f->dev.cu->cuEventRecord(c->ev, 0);
}

static CUresult event_sync_call(struct sweep_ctx *c)
{
	return c->f->dev.cu->cuEventSynchronize(c->ev);
}

static CUresult queued_verify(struct sweep_ctx *c, uint64_t *bad, uint64_t *first)
{
	*bad = marker_bad(&c->w, c->seed, first); /* no CUDA call since the wait returned */
	return CUDA_SUCCESS;
}

static CUresult queued_teardown(struct sweep_ctx *c)
{
	const struct gc_cuda *cu = c->f->dev.cu;
	CUresult first = cu->cuCtxSynchronize();

	if (c->ev)
		cleanup_record(&first, cu->cuEventDestroy(c->ev));
	c->ev = NULL;
	cleanup_record(&first, work_free(cu, &c->w));
	return first;
}

/* One dynamic subtest per call swept, named by the target. */
GC_VARIANTS(struct sweep_target, sweep_targets, sweep_one) = {
	{ "htod-64m", htod_setup, htod_prepare, htod_call, htod_verify, dev_teardown },
	{ "dtoh-64m", dtoh_setup, dtoh_prepare, dtoh_call, dtoh_verify, dev_teardown },
	{ "mem-create-64m", nothing, nothing, create_call, create_verify, nothing },
	{ "mem-map-64m", map_setup, nothing, map_call, map_verify, mapping_teardown },
	{ "set-access-64m", mapping_setup, nothing, access_call, access_verify,
	  mapping_teardown },
	{ "ctx-sync", queued_setup, queued_prepare, ctx_sync_call, queued_verify,
	  queued_teardown },
	{ "event-sync-blocking", queued_setup, event_prepare, event_sync_call, queued_verify,
	  queued_teardown },
};

/* What one target's sweeps did; the first failure of each kind. */
struct sweep_result {
	CUresult setup, prepare, call, verify, teardown;
	unsigned call_pass;     /* the pass whose call failed */
	uint64_t call_delay_ns; /* its signal's delay */
	int iter_err;
	struct data_err data;
	unsigned passes, interrupted, early, sweeps, completed;
	uint64_t delivered, landed, calls_hit;
};

/* Runs passes until the sigiter ends; false when a pass failed (recorded in res). */
static bool sweep_passes(struct sweep_ctx *c, const struct sweep_target *t,
			 struct gc_sigiter *it, struct sweep_result *res)
{
	uint64_t bad, first;
	CUresult r;

	while (gc_sigiter_next(it)) {
		if ((r = t->prepare(c))) {
			cleanup_record(&res->prepare, r);
			return false;
		}
		gc_sigiter_enter(it);
		r = t->call(c);
		gc_sigiter_leave(it);
		if (r) {
			res->call = r;
			res->call_pass = it->passes;
			res->call_delay_ns = it->delay_ns;
			return false;
		}
		if ((r = t->verify(c, &bad, &first))) {
			cleanup_record(&res->verify, r);
			return false;
		}
		data_record(&res->data, t->name, it->passes, bad, first);
		if (bad) {
			res->data.unit = "pass";
			return false;
		}
	}
	return true;
}

static void sweep_account(const struct gc_sigiter *it, struct sweep_result *res)
{
	struct gc_storm_counts sc = gc_storm_counts(&it->storm);

	res->sweeps++;
	res->passes += it->passes;
	res->interrupted += it->passes_interrupted;
	res->early += it->passes_early;
	res->completed += it->completed;
	res->delivered += sc.delivered;
	res->landed += sc.landed_inside;
	res->calls_hit += sc.calls_hit;
}

static void sweep_target_run(struct sweep_ctx *c, const struct sweep_target *t,
			     struct sweep_result *res)
{
	static struct gc_sigiter it;
	bool ok;

	res->setup = t->setup(c);
	/*
	 * Calls shorter than the signal's delivery latency (a few tens of us on
	 * these VMs: cuMemSetAccess, cuMemMap) are hit only by chance: sweep again,
	 * up to SWEEPS_MAX, until one was.
	 */
	for (size_t k = 0; !res->setup && (k < ARRAY_SIZE(sweep_first_ns) ||
					   (res->calls_hit == 0 && k < SWEEPS_MAX)); k++) {
		struct gc_sigiter_cfg cfg = {
			.first_delay_ns = sweep_first_ns[k % ARRAY_SIZE(sweep_first_ns)],
		};
		int r = gc_sigiter_begin(&it, &cfg);

		if (r) {
			res->iter_err = r;
			break;
		}
		ok = sweep_passes(c, t, &it, res);
		r = gc_sigiter_end(&it);
		if (r && !res->iter_err)
			res->iter_err = r;
		sweep_account(&it, res);
		if (!ok || r)
			break;
	}
	res->teardown = t->teardown(c);
}

static void sweep_assert(const struct gc_cuda *cu, const struct sweep_target *t,
			 const struct sweep_result *res)
{
	char err[160];

	gc_info("%s: %u sweeps, %u completed; %u passes, %u interrupted, %u early; signals "
		"delivered %" PRIu64 ", landed inside %" PRIu64 " (in %" PRIu64 " calls)",
		t->name, res->sweeps, res->completed, res->passes, res->interrupted, res->early,
		res->delivered, res->landed, res->calls_hit);
	gc_cu_assert(cu, res->setup);
	gc_assert_ok(res->iter_err);
	gc_assert_f(!res->call, "%s: pass %u (signal after %" PRIu64 " ns) returned %s: the "
		    "driver API has no EINTR, any error under a signal is spurious", t->name,
		    res->call_pass, res->call_delay_ns, cu_str(cu, res->call, err, sizeof(err)));
	gc_cu_assert(cu, res->prepare);
	gc_cu_assert(cu, res->verify);
	data_assert(&res->data);
	gc_cu_assert(cu, res->teardown);
	gc_assert_f(res->calls_hit > 0, "%s: no signal landed inside any of %u passes", t->name,
		    res->passes);
	gc_assert_f(res->completed == res->sweeps, "%s: %u of %u sweeps reached a pass with no "
		    "signal inside (the call outlasted every delay up to 1 s?)", t->name,
		    res->completed, res->sweeps);
}

static void sweep_one(void *ctx, const struct sweep_target *t)
{
	struct sweep_ctx *c = ctx;
	struct sweep_result res = { 0 };

	c->t = t;
	c->seed = SEED_BASE;
	c->prev_seed = 0;
	c->kept = c->lost = 0;
	sweep_target_run(c, c->t, &res);
	/*
	 * undocumented: cuMemUnmap frees the memory only when no handle is left,
	 * but whether its content survives an unmap + map of the held handle is
	 * not said. Reported, not asserted; observed: (not yet run on hardware).
	 */
	if (c->kept + c->lost)
		gc_info("%s: the old content was still there after unmap + map in %u of %u "
			"passes", c->t->name, c->kept, c->kept + c->lost);
	sweep_assert(c->f->dev.cu, c->t, &res);
}

/*
 * Contract (DESIGN interrupt, CUDA column): one call interrupted at every
 * depth from 1 us up to its own length (sigiter) returns CUDA_SUCCESS each
 * time, its effect is complete and right, and the iteration ends with a pass
 * the signal no longer reaches. One dynamic subtest per call.
 */
static void test_sigiter_sweep(void *data)
{
	struct fx *f = data;
	struct sweep_ctx c = { .f = f };

	require_vmm(f->dev.cu, DEV);
	require_uva(f->dev.cu, DEV);
	c.size = vmm_size(f->dev.cu, DEV, SWEEP_SIZE);
	c.n = c.size / sizeof(uint32_t);
	c.src = malloc(c.size);
	c.dst = malloc(c.size);
	if (c.src && c.dst)
		gc_variants(sweep_targets, &c);
	free(c.src);
	free(c.dst);
	gc_assert(c.src && c.dst);
}

/* ------------------------------------------------------------------ latency */

#define LAT_SAMPLES 200
#define LAT_BLOCK 20 /* samples per quiet / storm block, the blocks alternating */
#define LAT_WARMUP 10
#define LAT_VMM_SIZE (2 * MiB)
#define LAT_HTOD_SIZE (1 * MiB)
#define LAT_STORM_NS 50000ull

enum { L_VMM, L_HTOD, L_CHECK, L_N };
static const char *const lat_op_names[L_N] = {
	"VMM cycle (create .. release)", "cuMemcpyHtoD", "GPU check",
};

struct lat_run {
	const struct fx *f;
	size_t vmm_size;
	uint32_t *src[2]; /* two patterns: each copy overwrites the other's */
	CUdeviceptr d;
	double vmm[2][LAT_SAMPLES], htod[2][LAT_SAMPLES]; /* [0] quiet, [1] storm */
	struct op_stat op[L_N];
	struct data_err data;
	CUresult cleanup;
};

/* create + reserve + map + set access + unmap + address free + release, no granularity query. */
static CUresult vmm_cycle_plain(const struct gc_cuda *cu, size_t size)
{
	CUmemAllocationProp p = gc_vmm_prop(DEV);
	struct gc_vmm m = { .size = size };
	int dev = DEV;
	CUresult r = cu->cuMemCreate(&m.handle, size, &p, 0), r2;

	m.created = !r;
	if (!r)
		r = cu->cuMemAddressReserve(&m.va, size, 0, 0, 0);
	m.reserved = m.created && !r;
	if (!r)
		r = cu->cuMemMap(m.va, size, 0, m.handle, 0);
	m.mapped = m.reserved && !r;
	if (!r)
		r = gc_vmm_set_access(cu, m.va, size, &dev, 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	r2 = gc_vmm_free(cu, &m);
	return r ? r : r2;
}

static uint32_t lat_seed(unsigned i)
{
	return SEED_BASE + (i & 1);
}

/* One timed sample of each op (s NULL: quiet); false when a call failed or data was wrong. */
static bool lat_sample(struct lat_run *l, struct gc_storm *s, unsigned i, double *vmm_us,
		       double *htod_us)
{
	const struct gc_cuda *cu = l->f->dev.cu;
	uint64_t n = LAT_HTOD_SIZE / sizeof(uint32_t), bad = 0, first, t0;
	bool failed;

	t0 = gc_now_raw_ns();
	failed = STORMED(s, &l->op[L_VMM], vmm_cycle_plain(cu, l->vmm_size));
	*vmm_us = (double)(gc_now_raw_ns() - t0) / 1e3;
	if (failed)
		return false;
	t0 = gc_now_raw_ns();
	failed = STORMED(s, &l->op[L_HTOD], cu->cuMemcpyHtoD(l->d, l->src[i & 1], LAT_HTOD_SIZE));
	*htod_us = (double)(gc_now_raw_ns() - t0) / 1e3;
	/* Untimed, synchronous: the copy just made is there (the one before had the other seed). */
	if (failed || STORMED(s, &l->op[L_CHECK], gc_cu_check_u32(cu, &l->f->k, l->d, n,
								   lat_seed(i), &bad, &first)))
		return false;
	data_record(&l->data, "cuMemcpyHtoD (latency run, checked on the GPU)", i, bad, first);
	return !bad;
}

/* Alternating blocks of quiet and stormed samples; false when one failed. */
static bool lat_blocks(struct lat_run *l, struct gc_storm *s, uint64_t *delivered, int *serr)
{
	double scratch;
	bool ok = true;

	for (unsigned i = 0; i < LAT_WARMUP && ok; i++)
		ok = lat_sample(l, NULL, i, &scratch, &scratch);
	for (unsigned b = 0; b < LAT_SAMPLES / LAT_BLOCK && ok; b++) {
		for (unsigned i = b * LAT_BLOCK; i < (b + 1) * LAT_BLOCK && ok; i++)
			ok = lat_sample(l, NULL, i, &l->vmm[0][i], &l->htod[0][i]);
		*serr = gc_storm_start(s, &(struct gc_storm_cfg){ .interval_ns = LAT_STORM_NS });
		if (*serr)
			return false;
		for (unsigned i = b * LAT_BLOCK; i < (b + 1) * LAT_BLOCK && ok; i++)
			ok = lat_sample(l, s, i, &l->vmm[1][i], &l->htod[1][i]);
		*serr = gc_storm_stop(s);
		*delivered += gc_storm_counts(s).delivered;
		ok = ok && !*serr;
	}
	return ok;
}

/*
 * Contract (DESIGN interrupt, CUDA column: no spurious errors, no hang,
 * correct data), measured: a 2 MiB VMM cycle and a 1 MiB HtoD copy succeed
 * under a 50 us storm as without one; their latency with and without the
 * storm goes to metrics (no threshold).
 */
static void test_latency(void *data)
{
	static struct gc_storm s;
	struct fx *f = data;
	static struct lat_run l;
	uint64_t delivered = 0;
	int serr = 0;
	bool ok = false;

	require_vmm(f->dev.cu, DEV);
	memset(&l, 0, sizeof(l));
	l.f = f;
	l.vmm_size = vmm_size(f->dev.cu, DEV, LAT_VMM_SIZE);
	ops_init(l.op, lat_op_names, L_N);
	l.src[0] = malloc(LAT_HTOD_SIZE);
	l.src[1] = malloc(LAT_HTOD_SIZE);
	if (l.src[0] && l.src[1]) {
		pattern_fill(l.src[0], LAT_HTOD_SIZE / sizeof(uint32_t), lat_seed(0));
		pattern_fill(l.src[1], LAT_HTOD_SIZE / sizeof(uint32_t), lat_seed(1));
		l.cleanup = f->dev.cu->cuMemAlloc(&l.d, LAT_HTOD_SIZE);
		if (!l.cleanup)
			ok = lat_blocks(&l, &s, &delivered, &serr);
		if (l.d)
			cleanup_record(&l.cleanup, f->dev.cu->cuMemFree(l.d));
	}
	free(l.src[0]);
	free(l.src[1]);
	gc_assert(l.src[0] && l.src[1]);

	gc_info("latency: %" PRIu64 " signals delivered over %d stormed samples of each op",
		delivered, LAT_SAMPLES);
	ops_report(f->dev.cu, l.op, L_N, "latency");
	gc_assert_ok(serr);
	gc_cu_assert(f->dev.cu, l.cleanup);
	ops_assert_no_error(f->dev.cu, l.op, L_N);
	data_assert(&l.data);
	gc_assert(ok);
	ops_require_hits(l.op, L_N);
	gc_metric("vmm-2m-cycle-quiet", "us", GC_LOWER_IS_BETTER, l.vmm[0], LAT_SAMPLES);
	gc_metric("vmm-2m-cycle-storm", "us", GC_LOWER_IS_BETTER, l.vmm[1], LAT_SAMPLES);
	gc_metric("htod-1m-quiet", "us", GC_LOWER_IS_BETTER, l.htod[0], LAT_SAMPLES);
	gc_metric("htod-1m-storm", "us", GC_LOWER_IS_BETTER, l.htod[1], LAT_SAMPLES);
}

/* ------------------------------------------------------------------ fixture */

#define CONTROL_WORDS (64 * 1024)

/*
 * Loads the kernels and runs each once (lazy module loading and the first
 * launch's allocations happen here, before any leak snapshot). Then the
 * controls every data check relies on: a check of what was filled finds
 * nothing wrong, a check with another seed finds the words wrong.
 */
static void kernels_ready(struct gc_cuda *cu, struct gc_cu_kernels *k)
{
	uint64_t good = 1, bad = 0, first, n = CONTROL_WORDS;
	CUdeviceptr d = 0;
	char why[512];
	CUresult r = gc_cu_kernels_load(cu, k, why, sizeof(why));

	if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
		gc_skip("%s", why);
	gc_assert_f(!r, "%s", why);
	r = cu->cuMemAlloc(&d, n * sizeof(uint32_t));
	if (!r)
		r = gc_cu_fill_u32(cu, k, d, n, SEED_BASE, 0);
	if (!r)
		r = gc_cu_check_u32(cu, k, d, n, SEED_BASE, &good, &first);
	if (!r)
		r = gc_cu_check_u32(cu, k, d, n, SEED_BASE + 1, &bad, &first);
	if (d)
		cu->cuMemFree(d);
	gc_cu_assert(cu, r);
	gc_assert_f(good == 0, "control: the check kernel found %" PRIu64 " wrong words right "
		    "after the fill", good);
	gc_assert_f(bad > n / 2, "control: the check kernel found only %" PRIu64 " of %" PRIu64
		    " words wrong for another seed: it does not check", bad, n);
}

/*
 * The first use of every kind of call the subtests make, so that what the
 * driver allocates lazily on first use (staging buffers, internal kernels,
 * stream and event pools) is there before the first leak snapshot.
 */
static CUresult warm_up(const struct gc_cuda *cu)
{
	static uint32_t host[CONTROL_WORDS];
	CUdeviceptr d = 0;
	void *pinned = NULL;
	CUstream st = NULL;
	CUevent ev[2] = { NULL, NULL };
	CUresult r = cu->cuMemAlloc(&d, sizeof(host)), r2;

	if (!r)
		r = cu->cuMemsetD32(d, 0, CONTROL_WORDS);
	if (!r)
		r = cu->cuMemcpyHtoD(d, host, sizeof(host));
	if (!r)
		r = cu->cuMemcpyDtoH(host, d, sizeof(host));
	if (!r)
		r = cu->cuMemAllocHost(&pinned, sizeof(host));
	if (!r)
		r = cu->cuStreamCreate(&st, CU_STREAM_DEFAULT);
	if (!r)
		r = cu->cuEventCreate(&ev[0], CU_EVENT_DEFAULT);
	if (!r)
		r = cu->cuEventCreate(&ev[1], CU_EVENT_BLOCKING_SYNC);
	for (int i = 0; i < 2 && !r; i++)
		r = cu->cuEventRecord(ev[i], st);
	for (int i = 0; i < 2 && !r; i++)
		r = cu->cuEventSynchronize(ev[i]);
	if (!r)
		r = cu->cuStreamSynchronize(st);
	if (!r && cu->devices[DEV].vmm)
		r = vmm_cycle_plain(cu, vmm_size(cu, DEV, LAT_VMM_SIZE));
	r2 = cu->cuCtxSynchronize();
	for (int i = 0; i < 2; i++)
		if (ev[i])
			cleanup_record(&r2, cu->cuEventDestroy(ev[i]));
	if (st)
		cleanup_record(&r2, cu->cuStreamDestroy(st));
	if (pinned)
		cleanup_record(&r2, cu->cuMemFreeHost(pinned));
	if (d)
		cleanup_record(&r2, cu->cuMemFree(d));
	return r ? r : r2;
}

static void *setup(void)
{
	struct gc_cuda *cu = gc_cuda_require();
	struct fx *f = gc_cuda_fixture_new(cu, sizeof(*f), LEAK_SLACK);

	gc_cu_assert(cu, gc_cuda_use(cu, DEV));
	kernels_ready(cu, &f->k);
	gc_cu_assert(cu, warm_up(cu));
	return f;
}

static void teardown(void *data)
{
	struct fx *f = data;

	gc_cu_kernels_unload(f->dev.cu, &f->k);
	gc_cuda_fixture_free(f);
}

/* A subtest that failed with a storm running left it here: stop it before any CUDA call. */
static void after_each(void *data)
{
	gc_storm_stop_leftover();
	gc_cuda_fixture_check(data);
}

static const struct gc_fixture fixture = {
	.setup = setup,
	.teardown = teardown,
	.before_each = gc_cuda_fixture_snapshot,
	.after_each = after_each,
};

static const struct gc_subtest subtests[] = {
	{ "vmm-ops", test_vmm_ops,
	  "VMM create / reserve / map / set-access / unmap / free / release cycles under storms: "
	  "no error, data right" },
	{ "alloc-copy-free", test_alloc_copy_free,
	  "cuMemAlloc, 4 MiB HtoD and DtoH, cuMemFree under storms: no error, every copy right" },
	{ "sync", test_sync,
	  "ctx / stream / event (spin and blocking) syncs on queued kernels under storms: "
	  "no error, no early return" },
	{ "sigiter-sweep", test_sigiter_sweep,
	  "one-shot signals at every depth of one call (copies, create, map, set-access, syncs)" },
	{ "latency", test_latency,
	  "VMM cycle and HtoD latency with and without a storm (metrics, no threshold)" },
	{ 0 }
};

static const char *const soaks[] = { "vmm-ops", "alloc-copy-free", NULL };

GC_MAIN(.name = "cuda_interrupt",
	.description = "the interrupt contract on the CUDA driver API: no spurious error under "
		       "signal storms",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks,
	.placement = GC_PLACE_GPU)
