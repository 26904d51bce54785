/*
 * cuda_bubbles@profiler-sessions: a CUPTI activity session, enabled then disabled,
 * leaves graph launches slower for the rest of the process.
 *
 * cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/usr/local/cuda/include -I/usr/local/cuda/extras/CUPTI/include -ldl
 *
 * cupti_activity.h, cuptiActivityDisable: "Disable collection of a specific kind of
 * activity record. [...] By default all activity kinds are disabled for collection."
 * [src zspace/system.cuda-12.6 extras/CUPTI/include/cupti_activity.h @ b3d92c837713]
 * (CUDA 12.6.3; the same in CUDA 13.0's, whose `\param kind` is the kind of record to
 * stop collecting). A disabled kind is in its default state: launches cost what they did.
 *
 * The suite's wide256 graph (a root, 256 branches, a join; each node one block of 256
 * threads of gc_stamp, whose thread 0 spins 1 us on %globaltimer and stamps its start
 * and end) timed on the device: one launch's last end - first start, the median of 300
 * launches after 100 unmeasured, before libcupti is loaded (dlopen'd at the session, as
 * the suite does) and after one session: CUPTI_ACTIVITY_KIND_KERNEL around one launch.
 * libcuda is loaded at run time too, so that a machine without the driver says so.
 * Exit 1: after / before > 1.05; 0: within; 2: cannot check (no device, a call failed).
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define W 256     /* branches */
#define K (W + 2) /* dispatches: root, branches, join */
#define N 300     /* measured launches */
#define BOUND 1.05 /* the suite's rounds agree within 0.1%, its runs 0.5%; +20% was seen */

/* gc_stamp of the suite's data/kernels/gpuconform.ptx: thread 0 of block 0 spins `work` ns. */
static const char ptx[] = ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry "
	"gc_stamp(.param .u64 p0, .param .u64 p1, .param .u32 p2, .param .u64 p3)\n{\n"
	".reg .pred %p<3>; .reg .b32 %r<5>; .reg .b64 %rd<17>;\nmov.u32 %r2, %ctaid.x; "
	"mul.wide.s32 %rd6, %r2, 256; mov.u32 %r3, %tid.x; cvt.s64.s32 %rd7, %r3; neg.s64 %rd8, "
	"%rd7;\nsetp.ne.s64 %p1, %rd6, %rd8; @%p1 bra DONE;\nld.param.u64 %rd5, [p3]; ld.param.u32 "
	"%r1, [p2]; ld.param.u64 %rd4, [p1]; ld.param.u64 %rd3, [p0];\nmov.u64 %rd1, %globaltimer;"
	"\nSPIN: mov.u64 %rd2, %globaltimer; sub.s64 %rd11, %rd2, %rd1; setp.lt.u64 %p2, %rd11, "
	"%rd5; @%p2 bra SPIN;\nmul.wide.u32 %rd13, %r1, 2; shl.b64 %rd14, %rd13, 3; add.s64 %rd15, "
	"%rd3, %rd14;\nst.global.u64 [%rd15], %rd1; st.global.u64 [%rd15+8], %rd2;\nmul.wide.u32 "
	"%rd16, %r1, 4; add.s64 %rd12, %rd4, %rd16; atom.global.add.u32 %r4, [%rd12], 1;\n"
	"DONE: ret;\n}\n";

#define STR2(x) #x
#define STR(x) STR2(x)
#define CUF(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)      \
	X(cuModuleLoadData) X(cuModuleGetFunction) X(cuStreamCreate) X(cuMemAlloc)          \
	X(cuMemsetD32Async) X(cuGraphCreate) X(cuGraphAddKernelNode) X(cuGraphInstantiate)  \
	X(cuGraphLaunch) X(cuStreamQuery) X(cuMemcpyDtoH) X(cuCtxSynchronize)
#define CUPTIF(X) X(cuptiActivityRegisterCallbacks) X(cuptiActivityEnable)                 \
	X(cuptiActivityDisable) X(cuptiActivityFlushAll)
#define MEMBER(f) __typeof__(f) *f;
static struct { CUF(MEMBER) CUPTIF(MEMBER) } p;

static CUstream s;
static CUgraphExec x; /* the wide256 graph, instantiated once, before the session */
static CUdeviceptr stamps, counts; /* stamps[2 i], [2 i + 1]: dispatch i's start, end (ns) */
static unsigned long long host[2 * K];

#define CHECK(call) do { int r_ = (int)(call); if (r_) { \
	printf("cannot check: %s: error %d\n", #call, r_); exit(2); } } while (0)
#define LOAD(lib, f) if (!(p.f = (__typeof__(f) *)dlsym(lib, STR(f)))) \
	return printf("cannot check: no %s\n", STR(f)), 2;
#define LOAD_CU(f) LOAD(lcu, f)
#define LOAD_CUPTI(f) LOAD(lcupti, f)

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max)
{
	*buf = aligned_alloc(8, *size = 4u << 20), *max = 0;
}

static void CUPTIAPI completed(CUcontext c, uint32_t id, uint8_t *buf, size_t size, size_t valid)
{
	(void)c, (void)id, (void)size, (void)valid;
	free(buf); /* the records are not this check's business: the cost after the session is */
}

/* One launch as the suite runs it: counts zeroed, launch, poll, stamps back; its time, ns. */
static double launch(void)
{
	struct timespec t = { 0, 100000 };
	unsigned long long first = ~0ull, last = 0;
	CUresult r;

	CHECK(p.cuMemsetD32Async(counts, 0, K, s));
	CHECK(p.cuGraphLaunch(x, s));
	while ((r = p.cuStreamQuery(s)) == CUDA_ERROR_NOT_READY)
		nanosleep(&t, NULL);
	CHECK(r);
	CHECK(p.cuMemcpyDtoH(host, stamps, sizeof(host)));
	for (int i = 0; i < K; i++) {
		first = host[2 * i] < first ? host[2 * i] : first;
		last = host[2 * i + 1] > last ? host[2 * i + 1] : last;
	}
	return (double)(last - first);
}

static int cmp(const void *a, const void *b)
{
	double u = *(const double *)a, v = *(const double *)b;

	return (u > v) - (u < v);
}

/* The median of N launches' times, after 100 unmeasured. */
static double median_time(void)
{
	static double v[N];

	for (int i = 0; i < 100 + N; i++)
		v[i < 100 ? 0 : i - 100] = launch();
	qsort(v, N, sizeof(v[0]), cmp);
	return v[N / 2];
}

int main(void)
{
	static const char *const cupti[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so",
		"/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so" };
	void *lcu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *lcupti = NULL;
	unsigned long long work = 1000;
	CUcontext ctx; CUmodule mod; CUfunction f; CUdevice dev; CUgraph g; CUgraphNode n[K];
	double before, after;

	if (!lcu)
		return printf("cannot check: no CUDA driver: %s\n", dlerror()), 2;
	CUF(LOAD_CU)
	CHECK(p.cuInit(0));
	CHECK(p.cuDeviceGet(&dev, 0));
	CHECK(p.cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(p.cuCtxSetCurrent(ctx));
	CHECK(p.cuModuleLoadData(&mod, ptx));
	CHECK(p.cuModuleGetFunction(&f, mod, "gc_stamp"));
	CHECK(p.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(p.cuMemAlloc(&stamps, sizeof(host)));
	CHECK(p.cuMemAlloc(&counts, K * 4));
	CHECK(p.cuGraphCreate(&g, 0));
	for (unsigned i = 0; i < K; i++) { /* i: 0 the root, 1..W the branches, K - 1 the join */
		void *args[] = { &stamps, &counts, &i, &work };
		CUDA_KERNEL_NODE_PARAMS kp = { .func = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
			.blockDimX = 256, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args };

		CHECK(p.cuGraphAddKernelNode(&n[i], g, i ? &n[i <= W ? 0 : 1] : NULL,
					     !i ? 0 : i <= W ? 1 : W, &kp));
	}
	CHECK(p.cuGraphInstantiate(&x, g, 0));
	launch(); /* the first launch uploads the graph */
	before = median_time();
	for (size_t i = 0; i < sizeof(cupti) / sizeof(cupti[0]) && !lcupti; i++)
		lcupti = dlopen(cupti[i], RTLD_NOW | RTLD_LOCAL);
	if (!lcupti)
		return printf("cannot check: no CUPTI: %s\n", dlerror()), 2;
	CUPTIF(LOAD_CUPTI)
	CHECK(p.cuptiActivityRegisterCallbacks(requested, completed));
	CHECK(p.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
	CHECK(p.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL));
	launch();
	CHECK(p.cuCtxSynchronize());
	CHECK(p.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL));
	CHECK(p.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
	after = median_time();
	printf("expected: wide256 graph time after the session (KIND_KERNEL enabled, one launch, "
	       "disabled) / before libcupti was loaded <= %.2f\n", BOUND);
	printf("actual: before %.0f ns, after %.0f ns: %.3f\n", before, after, after / before);
	return after / before > BOUND ? 1 : 0;
}
