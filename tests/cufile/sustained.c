// SPDX-License-Identifier: MIT
/*
 * cufile_io: sustained transfers, a soak (lib/soak.h; the cycle and its
 * counts are lib/fastpath_subtests.h's, shared with hipfile_io). The
 * fastpath contract, DESIGN.md: GPU-direct file I/O "reads/writes the right
 * bytes"; and of a soak, "a long run samples resources per cycle and fails
 * on a leak or latency slope". cufile.h (cuFileRead): it returns the "size
 * of bytes successfully read", so every cycle must move all 16 MiB both
 * ways.
 *
 * Each cycle: gc_fill_u32 writes a pattern (its seed new each cycle, so
 * that a transfer that silently did nothing leaves the last cycle's bytes
 * and is seen) into a device buffer; cuFileWrite puts it in a scratch file;
 * cuFileRead reads it back into a second device buffer, which gc_check_u32
 * compares on the GPU. Both buffers are registered (cuFileBufRegister) and
 * the file's handle is registered once, as a program streaming through
 * GPUDirect Storage does. Where nvidia-fs is absent the library serves it
 * all in compat mode (cf_env_gpu says which).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "cf_io.h"
#include "soak.h"

#define WORDS (GC_FP_SUSTAINED_BYTES / 4)

struct sustained {
	struct cf_env *e;
	struct gc_cu_kernels k;
	struct gc_fp_file f;
	void *fh;
	CUdeviceptr src, dst;
};

static void buf_register(const struct cf_env *e, CUdeviceptr d)
{
	char eb[96];
	gc_cufile_err ce = e->cf.fn.buf_register((const void *)(uintptr_t)d,
						 GC_FP_SUSTAINED_BYTES, 0);

	gc_assert_f(ce.err == 0, "cuFileBufRegister(16 MiB): %s",
		    gc_cufile_strerror(ce, eb, sizeof(eb)));
}

/* The file, its handle, the kernels and both buffers, registered. */
static void sustained_open(struct sustained *x)
{
	struct cf_env *e = x->e;
	char why[600];

	cf_env_gpu(e);
	if (gc_cu_kernels_load(e->cu, &x->k, why, sizeof(why)) != CUDA_SUCCESS)
		gc_fail("%s", why);
	cf_file(e, "sust", GC_FP_SUSTAINED_BYTES, SEED_A, O_RDWR, &x->f);
	x->fh = cf_register_ok(e, x->f.fd);
	x->src = cf_dev_alloc(e, GC_FP_SUSTAINED_BYTES);
	x->dst = cf_dev_alloc(e, GC_FP_SUSTAINED_BYTES);
	buf_register(e, x->src);
	buf_register(e, x->dst);
}

static void sustained_close(struct sustained *x)
{
	struct cf_env *e = x->e;

	e->cf.fn.buf_deregister((const void *)(uintptr_t)x->dst);
	e->cf.fn.buf_deregister((const void *)(uintptr_t)x->src);
	e->cf.fn.handle_deregister(x->fh);
	cf_dev_free(e, x->dst);
	cf_dev_free(e, x->src);
	gc_fp_file_destroy(&x->f);
	gc_cu_kernels_unload(e->cu, &x->k);
}

/* One transfer of all 16 MiB, else fail naming the cycle; the path it took on cycle 0. */
static void transfer(struct sustained *x, bool write, unsigned long cycle)
{
	const char *call = write ? "cuFileWrite" : "cuFileRead";
	char path[96] = "", rb[128];
	int err_no;
	ssize_t r = write ? cf_write(x->e, x->fh, x->src, GC_FP_SUSTAINED_BYTES, 0, 0, &err_no,
				     cycle ? NULL : path, sizeof(path)) :
			    cf_read(x->e, x->fh, x->dst, GC_FP_SUSTAINED_BYTES, 0, 0, &err_no,
				    cycle ? NULL : path, sizeof(path));

	gc_assert_f(r == (ssize_t)GC_FP_SUSTAINED_BYTES, "cycle %lu: %s of 16 MiB returned %s",
		    cycle, call, cf_ret(r, err_no, rb, sizeof(rb)));
	if (!cycle)
		gc_info("%s of 16 MiB: path %s", call, path);
}

/* Pattern into src, src -> file -> dst, dst checked on the GPU. */
static void sustained_cycle(struct sustained *x, unsigned long cycle)
{
	struct gc_cuda *cu = x->e->cu;
	uint32_t seed = SEED_B ^ (uint32_t)cycle;
	uint64_t bad = 0, first = 0;

	gc_cu_assert(cu, gc_cu_fill_u32(cu, &x->k, x->src, WORDS, seed, 0));
	gc_cu_assert(cu, cu->cuCtxSynchronize()); /* cuFileWrite is not ordered with the stream */
	transfer(x, true, cycle);
	transfer(x, false, cycle);
	gc_cu_assert(cu, gc_cu_check_u32(cu, &x->k, x->dst, WORDS, seed, &bad, &first));
	gc_assert_f(bad == 0, "cycle %lu: %llu of %llu words read back differ from what was "
		    "written, the first at byte %llu", cycle, (unsigned long long)bad,
		    (unsigned long long)WORDS, (unsigned long long)first * 4);
}

void test_sustained(void *data)
{
	struct sustained x = { .e = data };
	struct gc_soak *s;
	unsigned long n = 0;

	sustained_open(&x);
	s = gc_soak_start(&(struct gc_soak_cfg){
		.name = "sustained", .cycles = GC_FP_SUSTAINED, .quick = GC_FP_SUSTAINED_QUICK,
		.cycle = "fill 16 MiB of device memory, cuFileWrite it to the scratch file, "
			 "cuFileRead it into another device buffer, compare on the GPU",
		.dev_used = gc_cuda_soak_dev0, .dev_arg = x.e->cu });
	while (gc_soak_claim(s)) {
		sustained_cycle(&x, n++);
		gc_soak_done(s);
	}
	gc_soak_end(s);
	sustained_close(&x);
}
