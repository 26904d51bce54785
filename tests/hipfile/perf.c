// SPDX-License-Identifier: MIT
/*
 * hipfile_io: throughput, as metrics the runner baselines (no threshold
 * here), the same paths and names as cufile_io's perf.c where they mean the
 * same. Paths for the same bytes:
 *   hipFile, hipAmdFile, hsa_amd_ais_file
 *              each entry point found, between the file and device memory
 *              (hipFile with the device buffer registered);
 *   reference  O_DIRECT pread into pinned host memory (hipHostMalloc) +
 *              hipMemcpy to the device (hipMemcpy back + O_DIRECT pwrite for
 *              writes): the bounce a fastpath must beat;
 *   host       O_DIRECT pread / pwrite with pinned host memory alone: the
 *              storage ceiling.
 * At 1, 16 and 256 MiB, one thread and four (each a quarter of the range),
 * five times each, paths interleaved, writes timed up to fdatasync, the page
 * cache dropped before every read when permitted (said in the output when
 * not). Ratios are per repetition, from one run. The timed loop and the
 * metric names are lib/fastpath_perf's, shared with cufile_io. UNVERIFIED ON
 * HARDWARE.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fastpath_perf.h"
#include "hf_io.h"

#define PMAX MAX_SIZE

/* The entry points first, in enum gc_hf_entry order. */
enum path { P_HIPFILE, P_HIP_AMD_FILE, P_HSA_AIS, P_REF, P_HOST, NPATH };
static const char *const path_names[] = { "hipFile", "hipAmdFile", "hsa_amd_ais_file",
					   "reference", "host" };

struct perf {
	struct hf_env *e;
	bool write;
	bool have[NPATH];
	int fd;        /* the read or the write file, O_DIRECT */
	gc_hipfile_handle fh;
	char *pinned;
};

static int64_t do_entry(const struct perf *p, enum path k, uint64_t off, uint64_t len,
			char *what, size_t what_len)
{
	enum gc_hf_entry x = (enum gc_hf_entry)k;
	char *dev = p->e->dev;
	struct gc_hf_req r = x == GC_HF_HIPFILE ?
		hf_req(x, p->write, -1, p->fh, dev, (int64_t)off, len, (int64_t)off) :
		hf_req(x, p->write, p->fd, NULL, dev + off, 0, len, (int64_t)off);
	struct gc_hf_res res;

	gc_hf_io(&p->e->h, &r, &res);
	if (res.n != (int64_t)len)
		gc_hf_res_str(&p->e->h, &r, &res, what, what_len);
	return res.n == (int64_t)len ? 0 : res.n < 0 ? res.n : -EIO;
}

static int64_t do_host(const struct perf *p, uint64_t off, uint64_t len)
{
	return gc_fp_perf_host_io(p->fd, p->write, p->pinned, off, len);
}

static int64_t do_ref(const struct perf *p, uint64_t off, uint64_t len)
{
	const struct gc_hip *hip = p->e->h.hip;
	char *h = p->pinned + off, *d = (char *)p->e->dev + off;
	int64_t r;

	if (p->write) {
		if (hip->hipMemcpy(h, d, len, hipMemcpyDeviceToHost) != hipSuccess)
			return -EIO;
		return do_host(p, off, len);
	}
	r = do_host(p, off, len);
	if (r == 0 && hip->hipMemcpy(d, h, len, hipMemcpyHostToDevice) != hipSuccess)
		r = -EIO;
	return r;
}

static int perf_thread_init(void *ctx)
{
	const struct perf *p = ctx;

	return p->e->h.hip->hipSetDevice(0) == hipSuccess ? 0 : -ENODEV;
}

static int64_t perf_transfer(void *ctx, int path, uint64_t off, uint64_t len, char *what,
			     size_t what_len)
{
	if (path < P_REF)
		return do_entry(ctx, (enum path)path, off, len, what, what_len);
	return path == P_REF ? do_ref(ctx, off, len) : do_host(ctx, off, len);
}

static const char *perf_err_str(void *ctx, int64_t err, const char *what, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "%s (%s)", strerrorname_np((int)-err) ?: "?", what);
	return buf;
}

/* Before a path's first call: the 1 MiB it will move poisoned (read) or restored (write). */
static void verify_prepare(void *ctx, int k)
{
	struct perf *p = ctx;
	struct hf_env *e = p->e;

	if (p->write)
		hf_file_restore(e, e->wr_bfd, 0, MiB, WR_OLD);
	else if (k == P_HOST)
		gc_pattern_fill_inv(p->pinned, MiB, 0, RD_SEED);
	else
		hf_dev_fill(e, e->dev, MiB, 0, RD_SEED, true);
}

/* ... and after it: exactly those bytes moved, by this path alone. */
static void verify_check(void *ctx, int k)
{
	struct perf *p = ctx;
	struct hf_env *e = p->e;
	struct gc_mismatch mm;
	char what[96], m[192];

	snprintf(what, sizeof(what), "%s %s of 1 MiB", path_names[k], p->write ? "write" : "read");
	if (p->write) {
		hf_file_expect(&e->wr, e->wr_bfd, 0, MiB, WR_NEW, what);
	} else if (k == P_HOST) {
		gc_assert_f(gc_pattern_check(p->pinned, MiB, 0, RD_SEED, &mm) < 0, "%s: host %s",
			    what, gc_mismatch_str(&mm, m, sizeof(m)));
	} else {
		hf_dev_expect(e, what, e->dev, MiB, 0, RD_SEED, false);
	}
}

static const struct gc_fp_perf_ops perf_ops = {
	.thread_init = perf_thread_init,
	.transfer = perf_transfer,
	.err_str = perf_err_str,
	.first_before = verify_prepare,
	.first_after = verify_check,
};

static void perf_setup(struct perf *p)
{
	struct hf_env *e = p->e;

	hf_require_any(e);
	hf_release_all(e);
	for (int k = 0; k < NPATH; k++)
		p->have[k] = k >= P_REF || hf_have(e, (enum gc_hf_entry)k);
	p->fd = p->write ? e->wr.fd : e->rd.fd;
	p->pinned = hf_pinned_alloc(e, PMAX);
	if (p->have[P_HIPFILE]) {
		p->fh = hf_handle_for(e, GC_HF_HIPFILE, p->fd);
		hf_buf_register_ok(e, e->dev, DEV_LEN);
	}
	if (p->write) {
		hf_dev_fill(e, e->dev, PMAX, 0, WR_NEW, false);
		gc_pattern_fill(p->pinned, PMAX, 0, WR_NEW);
	}
}

/*
 * The first call of each path pays one-time costs (hipFile's backend setup,
 * the runtime's first AIS request, page-locking): the loop records it on its
 * own and verify_check() checks it byte-exact, then every path is warmed
 * with one and four threads, so the timed repetitions compare steady states.
 */
static void perf_subtest(struct hf_env *e, bool write)
{
	struct perf p = { .e = e, .write = write };
	struct gc_fp_perf run = { .write = write, .n_paths = NPATH, .names = path_names,
				  .have = p.have, .ops = &perf_ops, .ctx = &p };

	perf_setup(&p);
	run.sync_fd = p.fd;
	gc_fp_perf_run(&run);
	if (!write) {
		gc_info(run.dropped ? "page cache dropped before every read" :
				      "page cache NOT dropped (/proc/sys/vm/drop_caches not "
				      "writable): reads may have come from memory, not storage");
		hf_dev_expect(e, "device after the timed reads", e->dev, PMAX, 0, RD_SEED, false);
	} else {
		hf_file_expect(&e->wr, e->wr_bfd, 0, PMAX, WR_NEW, "file after the timed writes");
	}
	hf_release_all(e);
}

void test_perf_read(void *data)
{
	perf_subtest(data, false);
}

void test_perf_write(void *data)
{
	perf_subtest(data, true);
}
