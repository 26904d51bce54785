// SPDX-License-Identifier: MIT
/*
 * hipfile_io: sustained transfers, a soak: the body is lib/fastpath_io.c's
 * gc_fp_sustained_run() (shared with cufile_io), this file its hipFile
 * operations. hipfile.h (hipFileRead): "@return if >= 0: Number of bytes read
 * [...]" [src ROCm/rocm-systems projects/hipfile/include/hipfile.h @
 * 50391dc3c770], so every cycle must move all 16 MiB both ways.
 *
 * Each cycle: 16 MiB of lib/io's pattern (its seed new each cycle, so that
 * a transfer that silently did nothing leaves the last cycle's bytes and is
 * seen) copied into a device buffer; hipFileWrite puts it in a scratch
 * file; hipFileRead reads it back into a second device buffer, which is
 * copied back and compared. Both buffers and the file's handle are
 * registered once. hipFile only: the GPU-direct-only entries have their own
 * alignment rules and no fallback, so a soak of them says less about a
 * steady stream. UNVERIFIED ON HARDWARE (see io.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "fastpath_io.h"
#include "hf_io.h"
#include "soak.h"

struct sustained {
	struct hf_env *e;
	gc_hipfile_handle fh;
	char *src, *dst;
	/* hipMemGetInfo: in lib/hip's table, not among hipfile_io's needs (may be NULL) */
	__typeof__(hipMemGetInfo) *mem_get_info;
};

/* The soak's device memory in use: total - free from hipMemGetInfo on device 0. */
static long long dev_used(void *arg)
{
	const struct sustained *x = arg;
	size_t free_b, total_b;

	if (x->e->h.hip->hipSetDevice(0) != hipSuccess ||
	    x->mem_get_info(&free_b, &total_b) != hipSuccess)
		return -EIO;
	return (long long)(total_b - free_b);
}

/* The file, its handle and both buffers, registered; all held (after_each releases them). */
static void hf_sust_open(void *ctx, struct gc_soak_cfg *cfg)
{
	struct sustained *x = ctx;
	struct hf_env *e = x->e;
	struct gc_fp_file *f;

	hf_require(e, GC_HF_HIPFILE);
	f = hf_file(e, "hipfile-sust", GC_FP_SUSTAINED_BYTES, WR_OLD, O_RDWR);
	x->fh = hf_handle_for(e, GC_HF_HIPFILE, f->fd);
	x->src = hf_dev_alloc(e, GC_FP_SUSTAINED_BYTES);
	x->dst = hf_dev_alloc(e, GC_FP_SUSTAINED_BYTES);
	hf_buf_register_ok(e, x->src, GC_FP_SUSTAINED_BYTES);
	hf_buf_register_ok(e, x->dst, GC_FP_SUSTAINED_BYTES);
	x->mem_get_info = e->h.hip->hipMemGetInfo;
	if (!x->mem_get_info)
		gc_info("%s has no hipMemGetInfo: device memory not watched", e->h.hip->soname);
	cfg->dev_used = x->mem_get_info ? dev_used : NULL, cfg->dev_arg = x;
}

static void hf_sust_close(void *ctx)
{
	struct sustained *x = ctx;

	hf_release_all(x->e);
}

/* All 16 MiB one way: what happened, for the failure and for cycle 0. */
static int64_t hf_sust_transfer(void *ctx, bool write, unsigned long cycle, char *fail,
				size_t fail_len, char *info, size_t info_len)
{
	struct sustained *x = ctx;
	struct gc_hf_req r = hf_req(GC_HF_HIPFILE, write, -1, x->fh, write ? x->src : x->dst, 0,
				    GC_FP_SUSTAINED_BYTES, 0);
	struct gc_hf_res res;
	char desc[800];

	(void)cycle;
	hf_io(x->e, &r, &res, desc, sizeof(desc));
	snprintf(fail, fail_len, ": %s", desc);
	snprintf(info, info_len, "%s", desc);
	return res.n;
}

/* 16 MiB of the cycle's pattern copied into src. */
static void hf_sust_fill(void *ctx, unsigned long cycle)
{
	struct sustained *x = ctx;

	hf_dev_fill(x->e, x->src, GC_FP_SUSTAINED_BYTES, 0, WR_NEW + cycle, false);
}

/* dst copied back and compared. */
static void hf_sust_check(void *ctx, unsigned long cycle)
{
	struct sustained *x = ctx;
	char what[64];

	snprintf(what, sizeof(what), "cycle %lu: the 16 MiB read back", cycle);
	hf_dev_expect(x->e, what, x->dst, GC_FP_SUSTAINED_BYTES, 0, WR_NEW + cycle, false);
}

static const struct gc_fp_sustained_ops hf_sust_ops = {
	.cycle = "copy 16 MiB into device memory, hipFileWrite it to the scratch file, "
		 "hipFileRead it into another device buffer, copy back and compare",
	.call = { "hipFileRead", "hipFileWrite" },
	.open = hf_sust_open, .fill = hf_sust_fill, .transfer = hf_sust_transfer,
	.check = hf_sust_check, .close = hf_sust_close,
};

void test_sustained(void *data)
{
	gc_fp_sustained_run(&hf_sust_ops, &(struct sustained){ .e = data });
}
