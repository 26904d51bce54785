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
