// SPDX-License-Identifier: MIT
/*
 * cufile_io: sustained transfers, a soak: the body is lib/fastpath_io.c's
 * gc_fp_sustained_run() (shared with hipfile_io), this file its cuFile
 * operations. cufile.h (cuFileRead): "@return size of bytes successfully read
 * [...]" [src denglin-github/cuda11_cudnn8 include/cufile.h @ 20c191daf9a2]
 * (a CUDA 11-era copy of NVIDIA's header), so every cycle must move all
 * 16 MiB both ways.
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
#include "fastpath_io.h"
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
static void cf_sust_open(void *ctx, struct gc_soak_cfg *cfg)
{
	struct sustained *x = ctx;
	struct cf_env *e = x->e;
	char why[600];

	cf_env_gpu(e);
	if (gc_cu_kernels_load(e->cu, &x->k, why, sizeof(why)) != CUDA_SUCCESS)
		gc_fail("%s", why);
	x->fh = cf_file_registered(e, "sust", GC_FP_SUSTAINED_BYTES, SEED_A, O_RDWR, &x->f);
	x->src = cf_dev_alloc(e, GC_FP_SUSTAINED_BYTES);
	x->dst = cf_dev_alloc(e, GC_FP_SUSTAINED_BYTES);
	buf_register(e, x->src);
	buf_register(e, x->dst);
	cfg->dev_used = gc_cuda_soak_dev0, cfg->dev_arg = e->cu;
}

static void cf_sust_close(void *ctx)
{
	struct sustained *x = ctx;
	struct cf_env *e = x->e;

	e->cf.fn.buf_deregister((const void *)(uintptr_t)x->dst);
	e->cf.fn.buf_deregister((const void *)(uintptr_t)x->src);
	e->cf.fn.handle_deregister(x->fh);
	cf_dev_free(e, x->dst);
	cf_dev_free(e, x->src);
	gc_fp_file_destroy(&x->f);
	gc_cu_kernels_unload(e->cu, &x->k);
}

/* All 16 MiB one way; on cycle 0 the path it took. */
static int64_t cf_sust_transfer(void *ctx, bool write, unsigned long cycle, char *fail,
				size_t fail_len, char *info, size_t info_len)
{
	struct sustained *x = ctx;
	char path[96] = "", rb[128];
	int err_no;
	ssize_t r = write ? cf_write(x->e, x->fh, x->src, GC_FP_SUSTAINED_BYTES, 0, 0, &err_no,
				     cycle ? NULL : path, sizeof(path)) :
			    cf_read(x->e, x->fh, x->dst, GC_FP_SUSTAINED_BYTES, 0, 0, &err_no,
				    cycle ? NULL : path, sizeof(path));

	if (r != (ssize_t)GC_FP_SUSTAINED_BYTES)
		snprintf(fail, fail_len, " returned %s", cf_ret(r, err_no, rb, sizeof(rb)));
	snprintf(info, info_len, "path %s", path);
	return r;
}

/* The cycle's pattern into src (cuFileWrite is not ordered with the stream: synchronized). */
static void cf_sust_fill(void *ctx, unsigned long cycle)
{
	struct sustained *x = ctx;
	struct gc_cuda *cu = x->e->cu;
	uint32_t seed = SEED_B ^ (uint32_t)cycle;

	gc_cu_assert(cu, gc_cu_fill_u32(cu, &x->k, x->src, WORDS, seed, 0));
	gc_cu_assert(cu, cu->cuCtxSynchronize());
}

/* dst checked on the GPU. */
static void cf_sust_check(void *ctx, unsigned long cycle)
{
	struct sustained *x = ctx;
	struct gc_cuda *cu = x->e->cu;
	uint32_t seed = SEED_B ^ (uint32_t)cycle;
	uint64_t bad = 0, first = 0;

	gc_cu_assert(cu, gc_cu_check_u32(cu, &x->k, x->dst, WORDS, seed, &bad, &first));
	gc_assert_f(bad == 0, "cycle %lu: %llu of %llu words read back differ from what was "
		    "written, the first at byte %llu", cycle, (unsigned long long)bad,
		    (unsigned long long)WORDS, (unsigned long long)first * 4);
}

static const struct gc_fp_sustained_ops cf_sust_ops = {
	.cycle = "fill 16 MiB of device memory, cuFileWrite it to the scratch file, "
		 "cuFileRead it into another device buffer, compare on the GPU",
	.call = { "cuFileRead", "cuFileWrite" },
	.open = cf_sust_open, .fill = cf_sust_fill, .transfer = cf_sust_transfer,
	.check = cf_sust_check, .close = cf_sust_close,
};

void test_sustained(void *data)
{
	gc_fp_sustained_run(&cf_sust_ops, &(struct sustained){ .e = data });
}
