/*
 * cuda_bubbles@traced-serialized: with CUPTI_ACTIVITY_KIND_KERNEL enabled, a
 * graph launch's kernel that depends on another kernel gets a record with
 * start = end = 0.
 *
 * cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/usr/local/cuda/include -I/usr/local/cuda/extras/CUPTI/include -ldl
 *
 * cupti_activity.h: CUPTI_ACTIVITY_KIND_KERNEL is "A kernel executing on the
 * GPU. This activity kind may significantly change the overall performance
 * characteristics of the application because all kernel executions are
 * serialized on the GPU." Its record's start: "The start timestamp for the
 * kernel execution, in ns." [src zspace/system.cuda-12.6
 * extras/CUPTI/include/cupti_activity.h @ b3d92c837713] (CUDA 12.6.3; the
 * same words in CUDA 13.0's, whose record is CUpti_ActivityKernel10).
 *
 * The suite's steps for its first shape, chain2 (tests/cuda/bubbles_trace.c,
 * lib/contract/trace.c): CUPTI opened once the context exists, its buffer
 * callbacks registered, the graph-node-clone callback subscribed (records
 * name the instantiated copies); a graph of two kernel nodes, 1 depending on
 * 0, each one block of 256 threads whose thread 0 spins 1 us; 100 launches
 * untraced, a flush; the kernel kind enabled, 100 launches, disabled, a
 * flush. A launch: memset on the stream, cuGraphLaunch, wait, copy back.
 * Exit 1: a kernel record has no timestamps; 0: none; 2: cannot check.
 */
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define LAUNCHES 100
#define STR2(x) #x
#define STR(x) STR2(x)
#define CU(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)     \
	X(cuModuleLoadData) X(cuModuleGetFunction) X(cuStreamCreate) X(cuMemAlloc)         \
	X(cuMemsetD32Async) X(cuGraphCreate) X(cuGraphAddKernelNode) X(cuGraphInstantiate) \
	X(cuGraphLaunch) X(cuStreamSynchronize) X(cuMemcpyDtoH)
#define CUPTI(X) X(cuptiActivityRegisterCallbacks) X(cuptiSubscribe) X(cuptiEnableCallback) \
	X(cuptiGetGraphNodeId) X(cuptiActivityEnable) X(cuptiActivityDisable)             \
	X(cuptiActivityFlushAll) X(cuptiActivityGetNextRecord)
#define MEMBER(f) __typeof__(f) *f;
static struct { CU(MEMBER) CUPTI(MEMBER) } p;

static const char ptx[] = ".version 6.0\n.target sm_70\n.address_size 64\n"
	".visible .entry spin(.param .u64 ns)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<2>;\n"
	".reg .b64 %rd<5>;\nmov.u32 %r1, %tid.x;\nsetp.ne.u32 %p1, %r1, 0;\n@%p1 bra DONE;\n"
	"ld.param.u64 %rd1, [ns];\nmov.u64 %rd2, %globaltimer;\nSPIN:\n"
	"mov.u64 %rd3, %globaltimer;\nsub.s64 %rd4, %rd3, %rd2;\nsetp.lt.u64 %p1, %rd4, %rd1;\n"
	"@%p1 bra SPIN;\nDONE:\nret;\n}\n";

static CUgraphNode node[2];      /* the template's nodes */
static uint64_t copy_id[2];      /* their copies' ids, which the records name */
static atomic_ulong recs[3], untimed[3]; /* per node; [2]: a record naming neither */

static void CUPTIAPI cloned(void *u, CUpti_CallbackDomain d, CUpti_CallbackId cb, const void *data)
{
	const CUpti_GraphData *g = ((const CUpti_ResourceData *)data)->resourceDescriptor;

	(void)u;
	for (int i = 0; i < 2 && d == CUPTI_CB_DOMAIN_RESOURCE &&
			cb == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED; i++)
		if (g->originalNode == node[i])
			p.cuptiGetGraphNodeId(g->node, &copy_id[i]);
}

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	*buf = aligned_alloc(8, *size = 4u << 20);
	*max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;

	(void)c, (void)s, (void)size;
	while (p.cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		const CUpti_ActivityKernel10 *k = (const void *)r;
		int i = r->kind != CUPTI_ACTIVITY_KIND_KERNEL ? -1 : k->graphNodeId == copy_id[0] ? 0 :
			k->graphNodeId == copy_id[1] ? 1 : 2;

		if (i >= 0) {
			recs[i]++;
			untimed[i] += !k->start || !k->end;
		}
	}
	free(buf);
}

#define CHECK(call) do { int r_ = (int)(call); if (r_) \
	return printf("cannot check: %s: error %d\n", #call, r_), 2; } while (0)
#define LOAD(lib, f) if (!(p.f = (__typeof__(f) *)dlsym(lib, STR(f)))) \
	return printf("cannot check: no %s\n", STR(f)), 2;
#define LOAD_CU(f) LOAD(lcu, f)
#define LOAD_CUPTI(f) LOAD(lcupti, f)

int main(void)
{
	static const char *const cupti[] = { "libcupti.so.13", "libcupti.so",
		"/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so" };
	void *lcu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *lcupti = NULL;
	unsigned long long ns = 1000;
	void *args[] = { &ns };
	CUDA_KERNEL_NODE_PARAMS kp = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = 256, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args };
	CUpti_SubscriberHandle sub; CUcontext ctx; CUdevice dev; CUmodule mod; CUstream st;
	CUdeviceptr buf; CUgraph g; CUgraphExec x; uint32_t host[2]; unsigned long n, none;

	if (!lcu)
		return printf("cannot check: no CUDA driver: %s\n", dlerror()), 2;
	CU(LOAD_CU)
	CHECK(p.cuInit(0));
	CHECK(p.cuDeviceGet(&dev, 0));
	CHECK(p.cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(p.cuCtxSetCurrent(ctx));
	CHECK(p.cuModuleLoadData(&mod, ptx));
	CHECK(p.cuModuleGetFunction(&kp.func, mod, "spin"));
	CHECK(p.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CHECK(p.cuMemAlloc(&buf, sizeof(host)));
	for (size_t i = 0; i < sizeof(cupti) / sizeof(cupti[0]) && !lcupti; i++)
		lcupti = dlopen(cupti[i], RTLD_NOW | RTLD_LOCAL);
	if (!lcupti)
		return printf("cannot check: no CUPTI: %s\n", dlerror()), 2;
	CUPTI(LOAD_CUPTI)
	CHECK(p.cuptiActivityRegisterCallbacks(buf_requested, buf_completed));
	CHECK(p.cuptiSubscribe(&sub, cloned, NULL));
	CHECK(p.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
				    CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
	CHECK(p.cuGraphCreate(&g, 0));
	CHECK(p.cuGraphAddKernelNode(&node[0], g, NULL, 0, &kp));
	CHECK(p.cuGraphAddKernelNode(&node[1], g, &node[0], 1, &kp));
	CHECK(p.cuGraphInstantiate(&x, g, 0));
	for (int traced = 0; traced < 2; traced++) {
		if (traced)
			CHECK(p.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL));
		for (int l = 0; l < LAUNCHES; l++) {
			CHECK(p.cuMemsetD32Async(buf, 0, 2, st));
			CHECK(p.cuGraphLaunch(x, st));
			CHECK(p.cuStreamSynchronize(st));
			CHECK(p.cuMemcpyDtoH(host, buf, sizeof(host)));
		}
		if (traced)
			CHECK(p.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL));
		CHECK(p.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
	}
	printf("expected: %d kernel records (%d launches of 2 kernels), each with start and end "
	       "timestamps (not 0)\n", 2 * LAUNCHES, LAUNCHES);
	n = recs[0] + recs[1] + recs[2], none = untimed[0] + untimed[1] + untimed[2];
	printf("actual:   %lu kernel records, %lu with start = end = 0: node 0's %lu of %lu, node 1's "
	       "(after node 0) %lu of %lu, other records' %lu of %lu\n", n, none,
	       (unsigned long)untimed[0], (unsigned long)recs[0], (unsigned long)untimed[1],
	       (unsigned long)recs[1], (unsigned long)untimed[2], (unsigned long)recs[2]);
	if (!n)
		return printf("cannot check: CUPTI delivered no kernel record\n"), 2;
	return none ? 1 : 0;
}
