// SPDX-License-Identifier: MIT
/*
 * cufile_io: throughput, as metrics the runner baselines (no threshold
 * here). Three paths for the same bytes:
 *   fastpath   cuFileRead/Write between the file and device memory
 *              (registered buffer);
 *   reference  O_DIRECT pread into pinned host memory + cuMemcpyHtoD (and
 *              cuMemcpyDtoH + O_DIRECT pwrite for writes): the bounce a
 *              fastpath must beat;
 *   host       O_DIRECT pread/pwrite with pinned host memory alone: the
 *              storage ceiling.
 * At 1, 16 and 256 MiB, one thread and four (each a quarter of the range),
 * five times each, the page cache dropped before every read when permitted
 * (said in the output when not). Ratios are per repetition, from one run.
 * The timed loop and the metric names are lib/fastpath_perf's, shared with
 * hipfile_io.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cf_io.h"
#include "fastpath_perf.h"

enum path { P_FAST, P_REF, P_HOST, NPATH };
static const char *const path_names[] = { "fastpath", "reference", "host" };

struct perf {
	struct cf_env *e;
	struct gc_fp_file f;
	void *fh;
	CUdeviceptr d;
	void *pinned;
	bool write;
};

static int64_t do_fast(const struct perf *p, uint64_t off, uint64_t len)
{
	ssize_t r = p->write ? p->e->cf.fn.write(p->fh, (void *)(uintptr_t)p->d, len, (off_t)off,
						 (off_t)off) :
			       p->e->cf.fn.read(p->fh, (void *)(uintptr_t)p->d, len, (off_t)off,
						(off_t)off);

	return r == (ssize_t)len ? 0 : r < 0 ? r : -EIO;
}

static int64_t do_host(const struct perf *p, uint64_t off, uint64_t len)
{
	return gc_fp_perf_host_io(p->f.fd, p->write, p->pinned, off, len);
}

static int64_t do_ref(const struct perf *p, uint64_t off, uint64_t len)
{
	uint8_t *h = (uint8_t *)p->pinned + off;
	int64_t r;

	if (p->write) {
		if (p->e->cu->cuMemcpyDtoH(h, p->d + off, len) != CUDA_SUCCESS)
			return -EIO;
		return do_host(p, off, len);
	}
	r = do_host(p, off, len);
	if (r == 0 && p->e->cu->cuMemcpyHtoD(p->d + off, h, len) != CUDA_SUCCESS)
		r = -EIO;
	return r;
}

static int perf_thread_init(void *ctx)
{
	const struct perf *p = ctx;

	return gc_cuda_use(p->e->cu, 0) == CUDA_SUCCESS ? 0 : -EIO;
}

static int64_t perf_transfer(void *ctx, int path, uint64_t off, uint64_t len, char *what,
			     size_t what_len)
{
	(void)what, (void)what_len;
	if (path == P_FAST)
		return do_fast(ctx, off, len);
	return path == P_REF ? do_ref(ctx, off, len) : do_host(ctx, off, len);
}

static const char *perf_err_str(void *ctx, int64_t err, const char *what, char *buf, size_t len)
{
	(void)ctx, (void)what;
	snprintf(buf, len, "error %d", (int)err);
	return buf;
}

static const struct gc_fp_perf_ops perf_ops = {
	.thread_init = perf_thread_init,
	.transfer = perf_transfer,
	.err_str = perf_err_str,
};

/*
 * The first call of each path pays one-time costs (cuFile's bounce buffers
 * and per-thread state, the page-locked staging of the first copy): the
 * loop records it on its own, then warms every path with one and four
 * threads, so the timed repetitions compare steady states.
 */
static void perf_subtest(struct cf_env *e, bool write)
{
	const uint64_t max = 256 * MiB;
	struct perf p = { .e = e, .write = write };
	struct gc_fp_perf run = { .write = write, .n_paths = NPATH, .names = path_names,
				  .sync_fd = -1, .ops = &perf_ops, .ctx = &p };

	cf_env_gpu(e);
	p.fh = cf_file_registered(e, write ? "perfw" : "perfr", max, SEED_A, O_RDWR, &p.f);
	p.d = cf_dev_alloc(e, max);
	gc_cu_assert(e->cu, e->cu->cuMemAllocHost(&p.pinned, max));
	gc_assert(e->cf.fn.buf_register((void *)(uintptr_t)p.d, max, 0).err == 0);
	if (write)
		cf_dev_fill(e, p.d, 0, max, 0, SEED_B);
	gc_fp_perf_run(&run);
	if (!write) {
		gc_info("%s", run.dropped ? "page cache dropped before every read" :
			"page cache NOT dropped (no permission): reads may be cached");
		cf_dev_expect(e, p.d, max, 0, max, 0, SEED_A, "device after the timed reads");
	} else
		cf_file_expect(&p.f, 0, max, SEED_B, "file after the timed writes");
	e->cf.fn.buf_deregister((void *)(uintptr_t)p.d);
	gc_cu_assert(e->cu, e->cu->cuMemFreeHost(p.pinned));
	e->cf.fn.handle_deregister(p.fh);
	cf_dev_free(e, p.d);
	gc_fp_file_destroy(&p.f);
}

void test_perf_read(void *data) { perf_subtest(data, false); }
void test_perf_write(void *data) { perf_subtest(data, true); }
