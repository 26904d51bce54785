/* SPDX-License-Identifier: MIT */
/*
 * gpuconform's device kernels: one OpenCL C source for every vendor, compiled
 * by clang to PTX (NVIDIA, JIT-compiled by the driver) and to AMDGPU code
 * objects (scripts/build-kernels.sh). The outputs are committed so machines
 * without clang run the suite; CI regenerates them and requires no change.
 *
 * No OpenCL runtime library is linked (no libclc, -nogpulib): the few
 * builtins needed come from the target's own intrinsics below. Every kernel
 * is launched with GC_BLOCK work-items per group, one-dimensional.
 */
#define GC_BLOCK 256

#if defined(__NVPTX__)
/* %globaltimer: nanoseconds (its resolution is the GPU's: 32 ns seen on H100). */
static inline ulong gc_clock(void)
{
	ulong t;

	__asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static inline void gc_inc_u32(__global uint *p)
{
	uint old;

	__asm__ volatile("atom.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"((ulong)p) : "memory");
}

static inline ulong gc_gid(void)
{
	return (ulong)__nvvm_read_ptx_sreg_ctaid_x() * GC_BLOCK + __nvvm_read_ptx_sreg_tid_x();
}

static inline void gc_add_u64(__global ulong *p, ulong v)
{
	ulong old;

	__asm__ volatile("atom.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"((ulong)p), "l"(v)
			 : "memory");
}

static inline void gc_min_u64(__global ulong *p, ulong v)
{
	ulong old;

	__asm__ volatile("atom.global.min.u64 %0, [%1], %2;" : "=l"(old) : "l"((ulong)p), "l"(v)
			 : "memory");
}
#elif defined(__AMDGCN__)
/* s_memrealtime: the constant-rate "real time" counter (its frequency is the host's to know). */
static inline ulong gc_clock(void)
{
	return __builtin_amdgcn_s_memrealtime();
}

static inline void gc_inc_u32(__global uint *p)
{
	__atomic_fetch_add(p, 1u, __ATOMIC_RELAXED);
}

static inline ulong gc_gid(void)
{
	return (ulong)__builtin_amdgcn_workgroup_id_x() * GC_BLOCK + __builtin_amdgcn_workitem_id_x();
}

static inline void gc_add_u64(__global ulong *p, ulong v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static inline void gc_min_u64(__global ulong *p, ulong v)
{
	__atomic_fetch_min(p, v, __ATOMIC_RELAXED);
}
#else
#error "gpuconform kernels are built for nvptx64 or amdgcn only"
#endif

/* Must equal gc_pattern_u32() in lib/ (a murmur3 finaliser of index and seed). */
static inline uint gc_pattern_u32(ulong i, uint seed)
{
	ulong x = i * 0x9E3779B97F4A7C15ul ^ (ulong)seed;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdul;
	x ^= x >> 33;
	return (uint)x;
}

/* p[i] = pattern(i, seed) for i < n. */
__kernel __attribute__((reqd_work_group_size(GC_BLOCK, 1, 1)))
void gc_fill_u32(__global uint *p, ulong n, uint seed)
{
	ulong i = gc_gid();

	if (i < n)
		p[i] = gc_pattern_u32(i, seed);
}

/*
 * Counts the i < n with p[i] != pattern(i, seed) into out[0] and keeps the
 * smallest such i in out[1] (the caller sets out[0] = 0, out[1] = ~0).
 */
__kernel __attribute__((reqd_work_group_size(GC_BLOCK, 1, 1)))
void gc_check_u32(__global const uint *p, ulong n, uint seed, __global ulong *out)
{
	ulong i = gc_gid();

	if (i < n && p[i] != gc_pattern_u32(i, seed)) {
		gc_add_u64(&out[0], 1);
		gc_min_u64(&out[1], i);
	}
}

/*
 * A dispatch that says when it ran: work-item 0 stamps the device clock at
 * its start into stamps[2 * idx], spins for `work` clock units, stamps its
 * end into stamps[2 * idx + 1] and counts itself in counts[idx]. A count of
 * 0 means the dispatch never ran (lost), 2 or more that it ran again
 * (replayed); the gap between two dependent dispatches is the second's start
 * minus the first's end, with no profiler involved.
 */
__kernel __attribute__((reqd_work_group_size(GC_BLOCK, 1, 1)))
void gc_stamp(__global ulong *stamps, __global uint *counts, uint idx, ulong work)
{
	ulong t0, t;

	if (gc_gid() != 0)
		return;
	t0 = gc_clock();
	do
		t = gc_clock();
	while (t - t0 < work);
	stamps[2 * (ulong)idx] = t0;
	stamps[2 * (ulong)idx + 1] = t;
	gc_inc_u32(&counts[idx]);
}

/*
 * A gate: spins until the host writes a non-zero value to *flag (host-mapped
 * memory), or until `timeout` clock units have passed, so it ends even when
 * the host never opens it. result[0] = 1 when opened, 2 when it timed out.
 * Every dispatch queued behind it waits.
 */
__kernel __attribute__((reqd_work_group_size(GC_BLOCK, 1, 1)))
void gc_gate(volatile __global uint *flag, ulong timeout, __global uint *result)
{
	ulong t0;

	if (gc_gid() != 0)
		return;
	t0 = gc_clock();
	while (*flag == 0) {
		if (gc_clock() - t0 >= timeout) {
			result[0] = 2;
			return;
		}
	}
	result[0] = 1;
}
