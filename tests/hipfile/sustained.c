// SPDX-License-Identifier: MIT
/*
 * hipfile_io: sustained transfers, a soak (lib/soak.h), cufile_io's
 * sustained on hipFile (the cycle and its counts are
 * lib/fastpath_subtests.h's). hipfile.h (hipFileRead): "if >= 0: Number of
 * bytes read", so every cycle must move all 16 MiB both ways; DESIGN.md, of
 * a soak: "a long run samples resources per cycle and fails on a leak or
 * latency slope".
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
static void sustained_open(struct sustained *x)
{
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
}

/* One transfer of all 16 MiB, else fail naming the cycle; the path it took on cycle 0. */
static void transfer(struct sustained *x, bool write, unsigned long cycle)
{
	struct gc_hf_req r = hf_req(GC_HF_HIPFILE, write, -1, x->fh, write ? x->src : x->dst, 0,
				    GC_FP_SUSTAINED_BYTES, 0);
	const char *call = write ? "hipFileWrite" : "hipFileRead";
	struct gc_hf_res res;
	char desc[800];

	hf_io(x->e, &r, &res, desc, sizeof(desc));
	gc_assert_f(res.n == (int64_t)GC_FP_SUSTAINED_BYTES, "cycle %lu: %s of 16 MiB: %s", cycle,
		    call, desc);
	if (!cycle)
		gc_info("%s of 16 MiB: %s", call, desc);
}

/* Pattern into src, src -> file -> dst, dst copied back and compared. */
static void sustained_cycle(struct sustained *x, unsigned long cycle)
{
	uint64_t seed = WR_NEW + cycle;
	char what[64];

	hf_dev_fill(x->e, x->src, GC_FP_SUSTAINED_BYTES, 0, seed, false);
	transfer(x, true, cycle);
	transfer(x, false, cycle);
	snprintf(what, sizeof(what), "cycle %lu: the 16 MiB read back", cycle);
	hf_dev_expect(x->e, what, x->dst, GC_FP_SUSTAINED_BYTES, 0, seed, false);
}

void test_sustained(void *data)
{
	struct sustained x = { .e = data };
	struct gc_soak *s;
	unsigned long n = 0;

	sustained_open(&x);
	s = gc_soak_start(&(struct gc_soak_cfg){
		.name = "sustained", .cycles = GC_FP_SUSTAINED, .quick = GC_FP_SUSTAINED_QUICK,
		.cycle = "copy 16 MiB into device memory, hipFileWrite it to the scratch file, "
			 "hipFileRead it into another device buffer, copy back and compare",
		.dev_used = x.mem_get_info ? dev_used : NULL, .dev_arg = &x });
	while (gc_soak_claim(s)) {
		sustained_cycle(&x, n++);
		gc_soak_done(s);
	}
	gc_soak_end(s);
	hf_release_all(x.e);
}
