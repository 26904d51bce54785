// SPDX-License-Identifier: MIT
/*
 * The VMM memory contract's shared subtests (lib/contract/mem.h): each is
 * the steps cuda_mem and hip_mem both took, in their order, over the
 * stack's table of calls. A call that must succeed and does not fails the
 * subtest with the stack's own message (`<call>\n  returned X\n  expected
 * Y`), the call named as the stack names it.
 */
#include "contract/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core.h"
#include "measure.h"
#include "soak.h"
#include "vmm_cases.h"

#define SITE __FILE__, __LINE__, __func__
#define SITE_PARAMS const char *file, int line, const char *func

/* The call named by fmt (its arguments after it) returned got; it must succeed. */
#define OK(m, call, ...) mem_ok((m), SITE, (call), __VA_ARGS__)

static void __attribute__((format(printf, 6, 7)))
mem_ok(const struct gc_mem *m, SITE_PARAMS, int got, const char *fmt, ...)
{
	char what[160];

	if (got == 0)
		return;
	GC_VFORMAT(what, sizeof(what), fmt);
	m->vmm->fail(m->ctx, file, line, func, what, 0, got);
}

/* buf, printed with fmt: a message naming the stack's call. */
static const char *__attribute__((format(printf, 3, 4)))
say(char *buf, size_t len, const char *fmt, ...)
{
	GC_VFORMAT(buf, len, fmt);
	return buf;
}

static void host_in(const struct gc_mem *m, uint64_t va, size_t size, const char *what)
{
	if (m->data->host_in)
		m->data->host_in(m->ctx, va, size, what);
}

static void host_out(const struct gc_mem *m, uint64_t va, size_t size, uint32_t seed,
		     const char *what)
{
	if (m->data->host_out)
		m->data->host_out(m->ctx, va, size, seed, what);
}

void gc_mem_alloc_rw(const struct gc_mem *m, size_t size, struct gc_mem_alloc *a)
{
	const struct gc_mem_vmm *v = m->vmm;

	a->size = size;
	OK(m, v->create(m->ctx, size, &a->h), "%sMemCreate", v->api);
	OK(m, v->reserve(m->ctx, size, &a->va), "%sMemAddressReserve", v->api);
	OK(m, v->map(m->ctx, a->va, size, a->h), "%sMemMap", v->api);
	OK(m, v->set_rw(m->ctx, a->va, size), "%sMemSetAccess(%s)", v->api, v->rw_name);
}

void gc_mem_alloc_free(const struct gc_mem *m, struct gc_mem_alloc *a)
{
	const struct gc_mem_vmm *v = m->vmm;

	OK(m, v->unmap(m->ctx, a->va, a->size), "%sMemUnmap", v->api);
	OK(m, v->addr_free(m->ctx, a->va, a->size), "%sMemAddressFree", v->api);
	OK(m, v->release(m->ctx, a->h), "%sMemRelease", v->api);
}

void gc_mem_roundtrip(const struct gc_mem *m, size_t size, uint32_t seed, const char *what)
{
	struct gc_mem_alloc a;

	gc_mem_alloc_rw(m, size, &a);
	host_in(m, a.va, size, what);
	m->data->fill(m->ctx, a.va, size, seed);
	m->data->expect_gpu(m->ctx, a.va, size, seed, what);
	host_out(m, a.va, size, seed, what);
	gc_mem_alloc_free(m, &a);
}

/* ---------------------------------------------------------- granularity */

void gc_mem_gran_maps(const struct gc_mem *m, uint64_t va, uint64_t h)
{
	const struct gc_mem_vmm *v = m->vmm;
	size_t g = m->gran;
	uint32_t seed = m->data->seed(m->ctx, GC_MEM_SEED_GRAN, 0);

	/* Nothing was mapped by the failed calls: the whole range maps and works. */
	OK(m, v->map(m->ctx, va, 2 * g, h), "%sMemMap after the refused ones", v->api);
	OK(m, v->set_rw(m->ctx, va, 2 * g), "%sMemSetAccess", v->api);
	host_in(m, va, 2 * g, "granularity");
	m->data->fill(m->ctx, va, 2 * g, seed);
	m->data->expect_gpu(m->ctx, va, 2 * g, seed, "granularity");
	OK(m, v->unmap(m->ctx, va, 2 * g), "%sMemUnmap", v->api);
	OK(m, v->addr_free(m->ctx, va, 4 * g), "%sMemAddressFree", v->api);
	OK(m, v->release(m->ctx, h), "%sMemRelease", v->api);
}

/* ------------------------------------------------------------ lifecycle */

/*
 * Contract (cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease,
 * cuMemGetAccess): create -> reserve -> map -> set access gives memory the
 * GPU writes and the GPU and the CPU read back; a fresh mapping has no
 * access (cuMemUnmap: "Any new mapping to this virtual address will need to
 * have access granted through ::cuMemSetAccess, as all mappings start with
 * no accessibility setup."); after cuMemUnmap the memory stays allocated
 * while its handle is unreleased ("Any backing memory allocations will be
 * freed if there are no existing mappings and there are no unreleased
 * memory handles."); after cuMemRelease free memory is back where it was.
 * [src zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713] (CUDA 12.6.3)
 *
 * Contract (hipMemCreate "Creates a memory allocation described by the
 * properties and size [...]", hipMemAddressReserve "Reserves an address
 * range [...]", hipMemMap "Maps an allocation handle to a reserved virtual
 * address range.", hipMemSetAccess "Set the access flags for each location
 * specified in desc for the given virtual address range.", hipMemUnmap,
 * hipMemRelease "Release a memory handle representing a memory allocation
 * which was previously allocated through hipMemCreate."): create -> reserve
 * -> map -> set access gives memory the CPU writes and reads back
 * (hipMemcpy) and the GPU writes and reads back; a fresh mapping has
 * hipMemAccessFlagsProtNone ("Default, make the address range not
 * accessible [...]") and ProtReadWrite after the grant ("Set the address
 * range read-write accessible [...]"); unmapped, the memory stays allocated
 * while its handle is unreleased; released, free memory is back where it
 * was. [src ROCm/HIP include/hip/hip_runtime_api.h @ rocm-5.2.3] (the
 * @brief lines and the enumerators' comments end without a full stop:
 * `[...]` marks it)
 */
void gc_mem_lifecycle(const struct gc_mem *m)
{
	const struct gc_mem_vmm *v = m->vmm;
	const struct gc_mem_data *d = m->data;
	const struct gc_mem_checks *c = m->checks;
	size_t size = gc_align_up(GC_VMM_LIFECYCLE_SIZE, m->gran), f0 = c->dev_free(m->ctx);
	uint32_t seed = d->seed(m->ctx, GC_MEM_SEED_LIFE, 0);
	uint64_t h = 0, va = 0;
	char w[96];

	OK(m, v->create(m->ctx, size, &h), "%sMemCreate", v->api);
	c->expect_backed(m->ctx, f0, size, say(w, sizeof(w), "after %sMemCreate", v->api));
	OK(m, v->reserve(m->ctx, size, &va), "%sMemAddressReserve", v->api);
	c->expect_reserved(m->ctx, va);
	OK(m, v->map(m->ctx, va, size, h), "%sMemMap", v->api);
	c->expect_access(m->ctx, va, false);
	OK(m, v->set_rw(m->ctx, va, size), "%sMemSetAccess", v->api);
	c->expect_access(m->ctx, va, true);

	host_in(m, va, size, "lifecycle");
	d->fill(m->ctx, va, size, seed);
	d->expect_gpu(m->ctx, va, size, seed, "lifecycle");
	d->expect_gpu_detects(m->ctx, va, size, seed);
	host_out(m, va, size, seed, "lifecycle");

	OK(m, v->unmap(m->ctx, va, size), "%sMemUnmap", v->api);
	c->expect_backed(m->ctx, f0, size,
			 say(w, sizeof(w), "after %sMemUnmap, handle not yet released", v->api));
	OK(m, v->addr_free(m->ctx, va, size), "%sMemAddressFree", v->api);
	OK(m, v->release(m->ctx, h), "%sMemRelease", v->api);
	c->expect_free_back(m->ctx, f0, say(w, sizeof(w), "after %sMemRelease", v->api));
}

/* ------------------------------------------------------ map-over-mapped */

/* Map h over [va, va + size): refused with a listed code (which one: printed). */
static void over_refused(const struct gc_mem *m, uint64_t va, size_t size, uint64_t h,
			 const char *what)
{
	char w[96];

	m->vmm->map_refused(m->ctx, m->vmm->map(m->ctx, va, size, h),
			    say(w, sizeof(w), "%sMemMap(%s)", m->vmm->api, what));
}

/* B after A in the range the half-overlap left unmapped; both work; all given back. */
static void over_rest(const struct gc_mem *m, uint64_t va, const uint64_t *abc)
{
	const struct gc_mem_vmm *v = m->vmm;
	const struct gc_mem_data *d = m->data;
	size_t g = m->gran;
	uint32_t all = d->seed(m->ctx, GC_MEM_SEED_OVER_ALL, 0);

	OK(m, v->map(m->ctx, va + 2 * g, g, abc[1]), "%sMemMap(B after A)", v->api);
	OK(m, v->set_rw(m->ctx, va, 3 * g), "%sMemSetAccess(A and B)", v->api);
	d->fill(m->ctx, va, 3 * g, all);
	d->expect_gpu(m->ctx, va, 3 * g, all, "A and B");

	OK(m, v->unmap(m->ctx, va + 2 * g, g), "%sMemUnmap(B)", v->api);
	OK(m, v->unmap(m->ctx, va, 2 * g), "%sMemUnmap(A)", v->api);
	OK(m, v->addr_free(m->ctx, va, 3 * g), "%sMemAddressFree", v->api);
	OK(m, v->release(m->ctx, abc[0]), "%sMemRelease(A)", v->api);
	OK(m, v->release(m->ctx, abc[1]), "%sMemRelease(B)", v->api);
	OK(m, v->release(m->ctx, abc[2]), "%sMemRelease(C)", v->api);
}

/*
 * Contract (cuMemMap): "::cuMemMap can only create mappings on VA range
 * reservations that are not currently mapped." [src zspace/system.cuda-12.6
 * include/cuda.h @ b3d92c837713] (CUDA 12.6.3). Mapping over a whole
 * mapping, the same handle again, or a range half mapped fails (which code:
 * undocumented, observed) and changes nothing: the mapped data is intact and
 * the unmapped half still maps.
 *
 * Contract (hipMemMap, header silent on a range already mapped): mapping
 * over a whole mapping, the same handle again, or a range half mapped is
 * refused with a listed code and changes nothing: the mapped data is intact
 * and the unmapped half still maps.
 */
void gc_mem_map_over_mapped(const struct gc_mem *m)
{
	const struct gc_mem_vmm *v = m->vmm;
	const struct gc_mem_data *d = m->data;
	size_t g = m->gran;
	uint32_t a_seed = d->seed(m->ctx, GC_MEM_SEED_OVER_A, 0);
	uint64_t abc[3] = { 0, 0, 0 }, va = 0;

	OK(m, v->reserve(m->ctx, 3 * g, &va), "%sMemAddressReserve(3 * granularity)", v->api);
	OK(m, v->create(m->ctx, 2 * g, &abc[0]), "%sMemCreate(A, 2 * granularity)", v->api);
	OK(m, v->create(m->ctx, g, &abc[1]), "%sMemCreate(B, granularity)", v->api);
	OK(m, v->create(m->ctx, 2 * g, &abc[2]), "%sMemCreate(C, 2 * granularity)", v->api);
	OK(m, v->map(m->ctx, va, 2 * g, abc[0]), "%sMemMap(A at va)", v->api);
	OK(m, v->set_rw(m->ctx, va, 2 * g), "%sMemSetAccess", v->api);
	host_in(m, va, 2 * g, "A");
	d->fill(m->ctx, va, 2 * g, a_seed);

	over_refused(m, va, g, abc[1], "B over the start of A");
	over_refused(m, va, 2 * g, abc[0], "A again over itself");
	over_refused(m, va + g, 2 * g, abc[2], "C over A's second half and the unmapped rest");
	d->expect_gpu(m->ctx, va, 2 * g, a_seed, "A after the refused maps");
	over_rest(m, va, abc);
}

/* ----------------------------------------------------------- stress-10k */

static void stress_map_all(const struct gc_mem *m, uint64_t va, uint64_t *h)
{
	const struct gc_mem_vmm *v = m->vmm;
	size_t g = m->gran;

	for (size_t i = 0; i < GC_VMM_STRESS_N; i++) {
		uint64_t at = va + i * g;

		OK(m, v->create(m->ctx, g, &h[i]), "%sMemCreate", v->api);
		OK(m, v->map(m->ctx, at, g, h[i]), "%sMemMap", v->api);
		OK(m, v->set_rw(m->ctx, at, g), "%sMemSetAccess", v->api);
		if ((i + 1) % 1000 == 0)
			gc_info("mapped %zu / %d", i + 1, GC_VMM_STRESS_N);
	}
}

static void stress_unmap_all(const struct gc_mem *m, uint64_t va, const uint64_t *h)
{
	const struct gc_mem_vmm *v = m->vmm;
	size_t g = m->gran;

	for (size_t i = GC_VMM_STRESS_N; i-- > 0;) {
		OK(m, v->unmap(m->ctx, va + i * g, g), "%sMemUnmap", v->api);
		OK(m, v->release(m->ctx, h[i]), "%sMemRelease", v->api);
		if ((GC_VMM_STRESS_N - i) % 1000 == 0)
			gc_info("unmapped and released %zu / %d", GC_VMM_STRESS_N - i,
				GC_VMM_STRESS_N);
	}
}

/* One round: reserve, map 10,000, fill and check, unmap and release, free; seed its own. */
static void stress_round(const struct gc_mem *m, uint64_t *h, uint32_t seed)
{
	const struct gc_mem_vmm *v = m->vmm;
	const struct gc_mem_data *d = m->data;
	const struct gc_mem_checks *c = m->checks;
	size_t g = m->gran, size = (size_t)GC_VMM_STRESS_N * g, f0 = c->dev_free(m->ctx);
	uint64_t va = 0, t0, t1;

	OK(m, v->reserve(m->ctx, size, &va), "%sMemAddressReserve(10,000 * granularity)",
	   v->api);
	t0 = gc_now_ns();
	stress_map_all(m, va, h);
	t1 = gc_now_ns();
	host_in(m, va, size, "10,000 mappings");
	d->fill(m->ctx, va, size, seed);
	d->expect_gpu(m->ctx, va, size, seed, "10,000 mappings");
	host_out(m, va, size, seed, "10,000 mappings");
	stress_unmap_all(m, va, h);
	gc_info("map + set-access %.3f s, unmap + release %.3f s", (double)(t1 - t0) / 1e9,
		(double)(gc_now_ns() - t1) / 1e9);
	OK(m, v->addr_free(m->ctx, va, size), "%sMemAddressFree", v->api);
	c->expect_free_back(m->ctx, f0, "after the 10,000 mappings");
}

/*
 * Contract (cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease at scale;
 * hipMemMap, hipMemSetAccess, hipMemUnmap, hipMemRelease likewise):
 * 10,000 minimum-granularity allocations mapped side by side in one
 * reservation, each access-set, hold a pattern written over the whole range
 * (each mapping is memory of its own: aliasing would break the pattern); all
 * of it is given back, and free memory is back where it was. A soak of such
 * rounds: one a cycle, since a cycle must give back what it took for the
 * soak's series to mean anything (one round at standard and quick, as many
 * as fit at long).
 */
void gc_mem_stress_10k(const struct gc_mem *m)
{
	const struct gc_mem_data *d = m->data;
	const struct gc_mem_checks *c = m->checks;
	size_t size = (size_t)GC_VMM_STRESS_N * m->gran, have = c->dev_free(m->ctx);
	size_t need = size + GC_VMM_STRESS_MARGIN;
	uint64_t *h;
	struct gc_soak *s;

	gc_require_f(have >= need, "10,000 minimum-granularity mappings %s %zu MiB of free device "
		     "memory, %zu MiB free", c->drift & GC_MEM_NEED ? "need" : "needs",
		     need / MiB, have / MiB);
	h = calloc(GC_VMM_STRESS_N, sizeof(*h));
	gc_assert_f(h != NULL, "calloc failed");
	s = gc_soak_start(&(struct gc_soak_cfg){
		.name = "stress-10k", .cycles = 1, .quick = 1,
		.cycle = "reserve 10,000 minimum-granularity slots; create, map and set access "
			 "each; fill and check all; unmap, release, free the reservation",
		.dev_used = c->dev_used, .dev_arg = m->ctx });
	while (gc_soak_claim(s)) {
		stress_round(m, h, d->seed(m->ctx, GC_MEM_SEED_STRESS, (unsigned)gc_soak_count(s)));
		gc_soak_done(s);
	}
	gc_soak_end(s);
	free(h);
}

/* ------------------------------------------------------- fill-near-limit */

#define FILL_FRACTION_PCT 90
#define FILL_PIECE (512 * MiB)
#define FILL_SLACK (64 * MiB) /* free memory a cycle may leave below the start */
#define FILL_CYCLES 20
#define FILL_QUICK 2

struct fill_run {
	const struct gc_mem *m;
	size_t f0;       /* free memory at the subtest's start */
	size_t target;   /* what each cycle fills: FILL_FRACTION_PCT% of f0 */
	size_t piece;    /* FILL_PIECE rounded up to the granularity */
	struct gc_mem_alloc *a; /* the pieces of the running cycle */
	size_t cap, n;
};

/* One piece of size bytes; false (nothing held) when create is out of memory. */
static bool fill_piece(const struct gc_mem *m, size_t size, struct gc_mem_alloc *a)
{
	const struct gc_mem_vmm *v = m->vmm;
	int r = v->create(m->ctx, size, &a->h);

	if (r == v->oom)
		return false;
	OK(m, r, "%sMemCreate(a piece)", v->api);
	a->size = size;
	OK(m, v->reserve(m->ctx, size, &a->va), "%sMemAddressReserve(a piece)", v->api);
	OK(m, v->map(m->ctx, a->va, size, a->h), "%sMemMap(a piece)", v->api);
	OK(m, v->set_rw(m->ctx, a->va, size), "%sMemSetAccess(a piece)", v->api);
	return true;
}

/* Pieces up to the target; a word written into each. Returns the bytes filled. */
static size_t fill_up(struct fill_run *r, unsigned long cycle, uint32_t seed)
{
	const struct gc_mem *m = r->m;
	const struct gc_mem_vmm *v = m->vmm;
	const struct gc_mem_data *d = m->data;
	size_t done = 0;

	for (r->n = 0; done < r->target; r->n++) {
		size_t size = r->target - done < r->piece ? r->target - done : r->piece;
		struct gc_mem_alloc *a = &r->a[r->n];

		gc_assert(r->n < r->cap);
		if (!fill_piece(m, size, a)) {
			gc_info("cycle %lu: %sMemCreate(%zu MiB) gave %s after %zu of %zu MiB "
				"(memory taken by another process since the start?): this cycle "
				"fills no further", cycle, v->api, size / MiB, v->oom_name,
				done / MiB, r->target / MiB);
			break;
		}
		OK(m, d->put_word(m->ctx, a->va, d->word(seed, r->n)),
		   "%s(the piece's first word)", d->put_name);
		done += size;
	}
	return done;
}

/* Every piece's first word reads back what was written into it: pieces do not alias. */
static void fill_check(struct fill_run *r, uint32_t seed)
{
	const struct gc_mem_data *d = r->m->data;

	for (size_t i = 0; i < r->n; i++) {
		uint32_t got = 0, want = d->word(seed, i);
		char at[32];

		OK(r->m, d->get_word(r->m->ctx, r->a[i].va, &got), "%s(a piece's first word)",
		   d->get_name);
		gc_assert_f(got == want, "piece %zu of %zu (%zu MiB at %s): first word %#x, "
			    "written %#x", i, r->n, r->a[i].size / MiB,
			    r->m->checks->va_str(r->a[i].va, at, sizeof(at)), got, want);
	}
}

static void fill_cycle(struct fill_run *r, unsigned long cycle)
{
	const struct gc_mem *m = r->m;
	uint32_t seed = m->data->seed(m->ctx, GC_MEM_SEED_FILL, (unsigned)cycle);
	size_t filled = fill_up(r, cycle, seed), now;
	long long lost;

	if (filled)
		m->checks->expect_backed(m->ctx, r->f0, filled, "with the device filled");
	fill_check(r, seed);
	for (size_t i = r->n; i-- > 0;)
		gc_mem_alloc_free(m, &r->a[i]);
	now = m->checks->dev_free(m->ctx);
	lost = (long long)r->f0 - (long long)now;
	gc_check_f(lost <= (long long)FILL_SLACK, "cycle %lu: %zu MiB in %zu pieces given back, "
		   "free memory %zu MiB, %lld MiB below the %zu MiB at the start (at most %zu MiB)",
		   cycle, filled / MiB, r->n, now / MiB, lost / (long long)MiB, r->f0 / MiB,
		   FILL_SLACK / MiB);
}

/*
 * Contract (cuMemRelease: "The memory allocation will be freed when all
 * outstanding mappings to the memory are unmapped and when all outstanding
 * references to the handle (including it's shareable counterparts) are
 * also released."; cuMemGetInfo: "Returns in \p *free the amount of memory
 * on the device that is free according to the OS. CUDA is not guaranteed
 * to be able to allocate all of the memory that the OS reports as free.",
 * hence 90% [src zspace/system.cuda-12.6 include/cuda.h @ b3d92c837713]
 * (CUDA 12.6.3); hipMemCreate "Creates a memory allocation described by the
 * properties and size [...]" (an @brief without a full stop),
 * hipMemRelease "Release a memory handle representing a memory allocation
 * which was previously allocated through hipMemCreate."; hipMemGetInfo
 * "Returns in *free a snapshot of the current free memory." [src ROCm/HIP
 * include/hip/hip_runtime_api.h @ rocm-5.2.3]): the device filled to 90%
 * of the memory free at the start, in 512 MiB pieces each created, reserved,
 * mapped, access-set and written (a word: cuMemsetD32, hipMemcpyHtoD), then
 * given back, again and again. Each piece reads back its own word; after
 * each cycle free memory is back within 64 MiB of the start (and the soak
 * watches it across cycles). An out-of-memory create before 90% (another
 * process took memory) ends that cycle's filling, noted.
 */
void gc_mem_fill_near_limit(const struct gc_mem *m)
{
	struct fill_run r = { .m = m, .f0 = m->checks->dev_free(m->ctx) };
	size_t g = m->gran;
	struct gc_soak *s;

	r.target = r.f0 / 100 * FILL_FRACTION_PCT / g * g;
	r.piece = gc_align_up(FILL_PIECE, g);
	gc_require_f(r.target >= g, "only %zu bytes of device memory free", r.f0);
	r.cap = r.target / r.piece + 1;
	r.a = calloc(r.cap, sizeof(*r.a));
	gc_assert_f(r.a != NULL, "calloc(%zu pieces) failed", r.cap);
	gc_info("filling %zu of %zu MiB free, in %zu MiB pieces", r.target / MiB, r.f0 / MiB,
		r.piece / MiB);
	s = gc_soak_start(&(struct gc_soak_cfg){
		.name = "fill-near-limit", .cycles = FILL_CYCLES, .quick = FILL_QUICK,
		.cycle = "fill 90% of the free device memory in 512 MiB VMM pieces (create, "
			 "reserve, map, set access, write a word), check, give it all back",
		.dev_used = m->checks->dev_used, .dev_arg = m->ctx });
	while (gc_soak_claim(s)) {
		fill_cycle(&r, gc_soak_count(s));
		gc_soak_done(s);
	}
	gc_soak_end(s);
	free(r.a);
}

/* ------------------------------------------------------------- latency */

enum lat_op { OP_CREATE, OP_RESERVE, OP_MAP, OP_ACCESS, OP_UNMAP, OP_RELEASE, N_OPS };
/* The metric names: `<op>-<size>`. */
static const char *const lat_names[N_OPS] = {
	[OP_CREATE] = "create", [OP_RESERVE] = "reserve", [OP_MAP] = "map",
	[OP_ACCESS] = "set-access", [OP_UNMAP] = "unmap", [OP_RELEASE] = "release",
};

/* One lifecycle, each of the six operations timed alone (with its bookkeeping: ns). */
struct lat_round {
	uint64_t h, va;
	double us[N_OPS];
};

static int timed(struct lat_round *r, enum lat_op op, uint64_t t0, int st)
{
	r->us[op] = (double)(gc_now_raw_ns() - t0) / 1e3;
	return st;
}

static void lat_up(const struct gc_mem *m, size_t size, struct lat_round *r)
{
	const struct gc_mem_vmm *v = m->vmm;
	uint64_t t = gc_now_raw_ns();

	OK(m, timed(r, OP_CREATE, t, v->create(m->ctx, size, &r->h)), "%sMemCreate", v->api);
	t = gc_now_raw_ns();
	OK(m, timed(r, OP_RESERVE, t, v->reserve(m->ctx, size, &r->va)), "%sMemAddressReserve",
	   v->api);
	t = gc_now_raw_ns();
	OK(m, timed(r, OP_MAP, t, v->map(m->ctx, r->va, size, r->h)), "%sMemMap", v->api);
	t = gc_now_raw_ns();
	OK(m, timed(r, OP_ACCESS, t, v->set_rw(m->ctx, r->va, size)), "%sMemSetAccess", v->api);
}

static void lat_down(const struct gc_mem *m, size_t size, struct lat_round *r)
{
	const struct gc_mem_vmm *v = m->vmm;
	uint64_t t = gc_now_raw_ns();

	OK(m, timed(r, OP_UNMAP, t, v->unmap(m->ctx, r->va, size)), "%sMemUnmap", v->api);
	/* not one of the six */
	OK(m, v->addr_free(m->ctx, r->va, size), "%sMemAddressFree", v->api);
	t = gc_now_raw_ns();
	OK(m, timed(r, OP_RELEASE, t, v->release(m->ctx, r->h)), "%sMemRelease", v->api);
}

static void lat_size(const struct gc_mem *m, size_t size, int reps, const char *label)
{
	double s[N_OPS][GC_VMM_LAT_SMALL_REPS];
	struct lat_round r;
	uint32_t seed = m->data->seed(m->ctx, GC_MEM_SEED_LAT, 0);
	char name[64];

	gc_assert(reps <= GC_VMM_LAT_SMALL_REPS);
	gc_require_f(size % m->gran == 0, "%s is not a multiple of the minimum granularity %zu",
		     label, m->gran);
	for (int i = 0; i < reps; i++) {
		lat_up(m, size, &r);
		if (i == 0) { /* the first round is also checked */
			m->data->fill(m->ctx, r.va, size, seed);
			m->data->expect_gpu(m->ctx, r.va, size, seed, "latency round");
		}
		lat_down(m, size, &r);
		for (int op = 0; op < N_OPS; op++)
			s[op][i] = r.us[op];
	}
	for (int op = 0; op < N_OPS; op++) {
		snprintf(name, sizeof(name), "%s-%s", lat_names[op], label);
		gc_metric(name, "us", GC_LOWER_IS_BETTER, s[op], (size_t)reps);
	}
}

/*
 * Contract (the six VMM operations succeed repeatedly; their latency is
 * recorded, never asserted): create, reserve, map, set-access, unmap and
 * release timed one by one, 50 times at 2 MiB and 10 times at 1 GiB; the
 * metric names are one for both vendors.
 */
void gc_mem_latency(const struct gc_mem *m)
{
	size_t have, need = 2 * GC_VMM_LAT_LARGE;

	lat_size(m, GC_VMM_LAT_SMALL, GC_VMM_LAT_SMALL_REPS, "2MiB");
	have = m->checks->dev_free(m->ctx);
	gc_require_f(have >= need, "the 1 GiB latency case needs %zu MiB of free device memory, "
		     "%zu MiB free", need / MiB, have / MiB);
	lat_size(m, GC_VMM_LAT_LARGE, GC_VMM_LAT_LARGE_REPS, "1GiB");
}
