/* SPDX-License-Identifier: MIT */
/*
 * The VMM memory contract, one body for both vendors: cuda_mem
 * (tests/cuda/mem.c) and hip_mem (tests/hip/mem.c) run the subtests below
 * through tables of their own calls and checks (struct gc_mem), so that the two
 * do the same steps in the same order and name them alike. Sizes and
 * counts: lib/vmm_cases.h.
 *
 * Shared here: lifecycle, map-over-mapped, stress-10k, fill-near-limit and
 * latency, whole; an allocation made, given back and used end to end, and
 * granularity's closing steps, for the rest. Each binary keeps the subtests
 * whose verdicts its header words differently (granularity,
 * map-past-reservation, unmap-unmapped, release-while-mapped,
 * address-free-ordering, alloc-90pct, oom, peer-access-self; read-only-fault
 * is cuda_mem's alone).
 *
 * Every function here is subtest-level: it fails the subtest as gc_assert
 * does. A call is named in a message as the stack names it: <api>MemCreate,
 * <api>MemAddressReserve, ... (cuMemCreate, hipMemCreate).
 */
#ifndef GPUCONFORM_CONTRACT_MEM_H
#define GPUCONFORM_CONTRACT_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the contract writes data; the stack turns it (and a cycle) into a pattern seed. */
enum gc_mem_seed {
	GC_MEM_SEED_LIFE,     /* lifecycle */
	GC_MEM_SEED_OVER_A,   /* map-over-mapped: A alone */
	GC_MEM_SEED_OVER_ALL, /* map-over-mapped: A and B */
	GC_MEM_SEED_STRESS,   /* stress-10k, per soak cycle */
	GC_MEM_SEED_FILL,     /* fill-near-limit, per soak cycle */
	GC_MEM_SEED_LAT,      /* latency's checked round */
	GC_MEM_SEED_GRAN,     /* granularity: the mapping after the refused ones */
};

/*
 * Where the two binaries drifted apart in wording, kept as each had it:
 * GC_MEM_NEED: stress-10k's skip says `... mappings need N MiB` (hip_mem)
 * where cuda_mem says `needs`.
 */
#define GC_MEM_NEED 1u

/*
 * A stack's side of the contract, in three tables. Addresses and handles
 * travel as uint64_t (CUdeviceptr, CUmemGenericAllocationHandle; a HIP
 * void * or handle pointer). A status is the stack's own (CUresult,
 * hipError_t), 0 success.
 *
 * The VMM calls, each recording what it made in the stack's ledger
 * (lib/ledger.h; and forgetting what it gave back), so that after_each
 * gives back what a failed subtest left. reserve: no alignment, no address
 * hint; map: offset 0; set_rw: read-write access for the device.
 */
struct gc_mem_vmm {
	const char *api;      /* `cu` or `hip` */
	const char *rw_name;  /* read-write access in a message: PROT_READWRITE */
	int oom;              /* the out-of-memory status ... */
	const char *oom_name; /* ... and its name: CUDA_ERROR_OUT_OF_MEMORY */
	/* Fail the subtest: what returned got, want expected (the stack's message). */
	void (*fail)(void *ctx, const char *file, int line, const char *func, const char *what,
		     int want, int got);
	int (*create)(void *ctx, size_t size, uint64_t *h);
	int (*reserve)(void *ctx, size_t size, uint64_t *va);
	int (*map)(void *ctx, uint64_t va, size_t size, uint64_t h);
	int (*set_rw)(void *ctx, uint64_t va, size_t size);
	int (*unmap)(void *ctx, uint64_t va, size_t size);
	int (*addr_free)(void *ctx, uint64_t va, size_t size);
	int (*release)(void *ctx, uint64_t h);
	/* map-over-mapped: a map over a mapping must be refused with a code the stack lists. */
	void (*map_refused)(void *ctx, int got, const char *what);
};

/* How the stack writes and reads data in a mapping. */
struct gc_mem_data {
	/* One 32-bit word written at / read from va by the host, named put_name / get_name. */
	int (*put_word)(void *ctx, uint64_t va, uint32_t w);
	int (*get_word)(void *ctx, uint64_t va, uint32_t *w);
	const char *put_name, *get_name;
	/* The word piece i of a fill-near-limit cycle holds. Pure. */
	uint32_t (*word)(uint32_t seed, size_t i);
	uint32_t (*seed)(void *ctx, enum gc_mem_seed where, unsigned cycle);
	/* The GPU pattern: written, checked, and a check with a wrong seed seen to fail. */
	void (*fill)(void *ctx, uint64_t va, size_t size, uint32_t seed);
	void (*expect_gpu)(void *ctx, uint64_t va, size_t size, uint32_t seed, const char *what);
	void (*expect_gpu_detects)(void *ctx, uint64_t va, size_t size, uint32_t seed);
	/*
	 * The CPU side, each optional: host_in writes and reads back a host
	 * pattern before the GPU fill (hip_mem); host_out reads the GPU's pattern
	 * after the GPU check (cuda_mem).
	 */
	void (*host_in)(void *ctx, uint64_t va, size_t size, const char *what);
	void (*host_out)(void *ctx, uint64_t va, size_t size, uint32_t seed, const char *what);
};

/* Device memory, and the checks the stack words its own way. */
struct gc_mem_checks {
	unsigned drift; /* GC_MEM_* wordings */
	/* Free device memory (bytes); a soak's .dev_used. */
	size_t (*dev_free)(void *ctx);
	long long (*dev_used)(void *ctx);
	/* Free memory at least size below base (still held) / back to base (given back). */
	void (*expect_backed)(void *ctx, size_t base, size_t size, const char *when);
	void (*expect_free_back)(void *ctx, size_t base, const char *when);
	/* lifecycle: a fresh reservation is usable (non-zero, granularity-aligned) ... */
	void (*expect_reserved)(void *ctx, uint64_t va);
	/* ... and its access reads back as none, then read-write. */
	void (*expect_access)(void *ctx, uint64_t va, bool rw);
	/* va as the stack prints an address (%#llx, %p). */
	const char *(*va_str)(uint64_t va, char *buf, size_t len);
};

/* A stack's contract: its tables, the context they take, the minimum granularity. */
struct gc_mem {
	const struct gc_mem_vmm *vmm;
	const struct gc_mem_data *data;
	const struct gc_mem_checks *checks;
	void *ctx;
	size_t gran;
};

/* One VMM allocation: handle, reservation, mapping. */
struct gc_mem_alloc {
	uint64_t h;
	uint64_t va;
	size_t size;
};

/* create, reserve, map, set read-write access: a of size bytes, usable. */
void gc_mem_alloc_rw(const struct gc_mem *m, size_t size, struct gc_mem_alloc *a);
/* unmap, free the reservation, release. */
void gc_mem_alloc_free(const struct gc_mem *m, struct gc_mem_alloc *a);
/* An allocation of size works end to end (seed's pattern, what in messages), then given back. */
void gc_mem_roundtrip(const struct gc_mem *m, size_t size, uint32_t seed, const char *what);

/*
 * granularity's end, after the refused calls: the allocation h (2
 * granularities) maps at the start of the reservation va (4 granularities)
 * and works; then all of it is given back.
 */
void gc_mem_gran_maps(const struct gc_mem *m, uint64_t va, uint64_t h);

/* The shared subtests (subtest-level), each on m's stack. */
void gc_mem_lifecycle(const struct gc_mem *m);
void gc_mem_map_over_mapped(const struct gc_mem *m);
void gc_mem_stress_10k(const struct gc_mem *m);
void gc_mem_fill_near_limit(const struct gc_mem *m);
void gc_mem_latency(const struct gc_mem *m);

/*
 * Defines a binary's subtest functions of the shared subtests,
 * test_lifecycle, test_map_over_mapped, test_stress_10k,
 * test_fill_near_limit and test_latency (for its gc_subtest table), each
 * running its body on the struct gc_mem its fixture (a fx_type) holds as
 * member.
 */
#define GC_MEM__SUBTEST(name, fx_type, member)                  \
	static void test_##name(void *data)                     \
	{                                                       \
		gc_mem_##name(&((fx_type *)data)->member);      \
	}
#define GC_MEM_SUBTESTS(fx_type, member)                        \
	GC_MEM__SUBTEST(lifecycle, fx_type, member)             \
	GC_MEM__SUBTEST(map_over_mapped, fx_type, member)       \
	GC_MEM__SUBTEST(stress_10k, fx_type, member)            \
	GC_MEM__SUBTEST(fill_near_limit, fx_type, member)       \
	GC_MEM__SUBTEST(latency, fx_type, member)               \
	_Static_assert(1, "GC_MEM_SUBTESTS")

#endif
