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
 * REPS times each, paths interleaved, writes timed up to fdatasync, the page
 * cache dropped before every read when permitted (said in the output when
 * not). Ratios are per repetition, from one run. UNVERIFIED ON HARDWARE.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hf_io.h"
#include "measure.h"

#define REPS 5
#define MAXT 4
#define PMAX MAX_SIZE

/* The entry points first, in enum gc_hf_entry order. */
enum path { P_HIPFILE, P_HIP_AMD_FILE, P_HSA_AIS, P_REF, P_HOST, NPATH };
static const char *const path_names[] = { "hipFile", "hipAmdFile", "hsa_amd_ais_file",
					   "reference", "host" };

struct perf {
	struct hf_env *e;
	bool write;
	bool dropped;  /* every read started from a dropped page cache */
	bool have[NPATH];
	int fd;        /* the read or the write file, O_DIRECT */
	gc_hipfile_handle fh;
	char *pinned;
};

struct pjob {
	struct perf *p;
	enum path path;
	uint64_t off, len;
	pthread_barrier_t *go;
	int64_t err;   /* 0, or what failed (-errno) */
	char what[384];
};

static int64_t do_entry(struct pjob *j)
{
	struct perf *p = j->p;
	enum gc_hf_entry x = (enum gc_hf_entry)j->path;
	char *dev = p->e->dev;
	struct gc_hf_req r = x == GC_HF_HIPFILE ?
		hf_req(x, p->write, -1, p->fh, dev, (int64_t)j->off, j->len, (int64_t)j->off) :
		hf_req(x, p->write, p->fd, NULL, dev + j->off, 0, j->len, (int64_t)j->off);
	struct gc_hf_res res;

	gc_hf_io(&p->e->h, &r, &res);
	if (res.n != (int64_t)j->len)
		gc_hf_res_str(&p->e->h, &r, &res, j->what, sizeof(j->what));
	return res.n == (int64_t)j->len ? 0 : res.n < 0 ? res.n : -EIO;
}

static int64_t do_host(struct pjob *j)
{
	struct perf *p = j->p;
	char *h = p->pinned + j->off;
	ssize_t r = p->write ? gc_io_pwrite_all(p->fd, h, j->len, (off_t)j->off) :
			       gc_io_pread_all(p->fd, h, j->len, (off_t)j->off);

	return r == (ssize_t)j->len ? 0 : r < 0 ? r : -EIO;
}

static int64_t do_ref(struct pjob *j)
{
	struct perf *p = j->p;
	const struct gc_hip_fns *hip = &p->e->h.hip;
	char *h = p->pinned + j->off, *d = (char *)p->e->dev + j->off;
	int64_t r;

	if (p->write) {
		if (hip->hipMemcpy(h, d, j->len, hipMemcpyDeviceToHost) != hipSuccess)
			return -EIO;
		return do_host(j);
	}
	r = do_host(j);
	if (r == 0 && hip->hipMemcpy(d, h, j->len, hipMemcpyHostToDevice) != hipSuccess)
		r = -EIO;
	return r;
}

/* No assertion here: a helper thread cannot leave the subtest. */
static void *pjob_thread(void *arg)
{
	struct pjob *j = arg;

	if (j->p->e->h.hip.hipSetDevice(0) != hipSuccess)
		j->err = -ENODEV;
	pthread_barrier_wait(j->go);
	if (!j->err)
		j->err = j->path < P_REF ? do_entry(j) : j->path == P_REF ? do_ref(j) : do_host(j);
	pthread_barrier_wait(j->go);
	return NULL;
}

static void check_jobs(const struct perf *p, const struct pjob *jobs, int nt, uint64_t size)
{
	for (int i = 0; i < nt; i++)
		gc_assert_f(jobs[i].err == 0, "%s %s of %llu bytes, thread %d: %s (%s)",
			    path_names[jobs[i].path], p->write ? "write" : "read",
			    (unsigned long long)size, i, strerrorname_np((int)-jobs[i].err) ?: "?",
			    jobs[i].what);
}

/* One timed transfer of size bytes by nt threads on path; GiB/s. */
static double timed(struct perf *p, enum path path, uint64_t size, int nt)
{
	struct pjob jobs[MAXT];
	pthread_barrier_t go;
	pthread_t t[MAXT];
	uint64_t t0, t1;

	if (!p->write)
		p->dropped &= gc_fp_drop_caches() == 0;
	pthread_barrier_init(&go, NULL, (unsigned)nt + 1);
	for (int i = 0; i < nt; i++) {
		jobs[i] = (struct pjob){ p, path, size / (uint64_t)nt * (uint64_t)i,
					 size / (uint64_t)nt, &go, 0, "" };
		gc_assert(pthread_create(&t[i], NULL, pjob_thread, &jobs[i]) == 0);
	}
	pthread_barrier_wait(&go);
	t0 = gc_now_ns();
	pthread_barrier_wait(&go);
	if (p->write)
		gc_assert_syscall(fdatasync(p->fd));
	t1 = gc_now_ns();
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	check_jobs(p, jobs, nt, size);
	return (double)size / (double)(1ull << 30) / ((double)(t1 - t0 ? t1 - t0 : 1) / 1e9);
}

static void ratio(const struct perf *p, const double s[NPATH][REPS], enum path a, enum path b,
		  uint64_t size, int nt)
{
	double r[REPS];
	char name[128];

	for (int i = 0; i < REPS; i++)
		r[i] = s[a][i] / s[b][i];
	snprintf(name, sizeof(name), "%s.ratio.%s-over-%s.%lluMiB.t%d", p->write ? "write" : "read",
		 path_names[a], path_names[b], (unsigned long long)(size / MiB), nt);
	gc_metric(name, "x", GC_HIGHER_IS_BETTER, r, REPS);
}

static void perf_point(struct perf *p, uint64_t size, int nt)
{
	double s[NPATH][REPS];
	const char *dir = p->write ? "write" : "read";
	char name[128];

	for (int r = 0; r < REPS; r++)
		for (int k = 0; k < NPATH; k++) /* interleaved: drift hits every path alike */
			if (p->have[k])
				s[k][r] = timed(p, (enum path)k, size, nt);
	for (int k = 0; k < NPATH; k++) {
		if (!p->have[k])
			continue;
		snprintf(name, sizeof(name), "%s.%s.%lluMiB.t%d", dir, path_names[k],
			 (unsigned long long)(size / MiB), nt);
		gc_metric(name, "GiB/s", GC_HIGHER_IS_BETTER, s[k], REPS);
	}
	for (int k = 0; k < P_REF; k++) {
		if (!p->have[k])
			continue;
		ratio(p, s, (enum path)k, P_REF, size, nt);
		ratio(p, s, (enum path)k, P_HOST, size, nt);
	}
}

/* Before a path's first call: the 1 MiB it will move poisoned (read) or restored (write). */
static void verify_prepare(struct perf *p, enum path k)
{
	struct hf_env *e = p->e;

	if (p->write)
		hf_file_restore(e, e->wr_bfd, 0, MiB, WR_OLD);
	else if (k == P_HOST)
		gc_pattern_fill_inv(p->pinned, MiB, 0, RD_SEED);
	else
		hf_dev_fill(e, e->dev, MiB, 0, RD_SEED, true);
}

/* ... and after it: exactly those bytes moved, by this path alone. */
static void verify_check(struct perf *p, enum path k)
{
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

/*
 * The first call of each path pays one-time costs (hipFile's backend setup,
 * the runtime's first AIS request, page-locking): it is recorded on its own
 * and checked byte-exact, then every path is warmed with one and four
 * threads, so the timed repetitions compare steady states.
 */
static void warm_up(struct perf *p)
{
	char name[96];
	double s;

	for (int k = 0; k < NPATH; k++) {
		if (!p->have[k])
			continue;
		verify_prepare(p, (enum path)k);
		s = 1e3 * (double)MiB / (double)(1ull << 30) / timed(p, (enum path)k, MiB, 1);
		verify_check(p, (enum path)k);
		snprintf(name, sizeof(name), "%s.first-call.%s.1MiB", p->write ? "write" : "read",
			 path_names[k]);
		gc_metric(name, "ms", GC_LOWER_IS_BETTER, &s, 1);
		timed(p, (enum path)k, MiB, MAXT);
	}
}

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

static void perf_subtest(struct hf_env *e, bool write)
{
	static const uint64_t psizes[] = { 1 * MiB, 16 * MiB, 256 * MiB };
	struct perf p = { .e = e, .write = write, .dropped = true };

	perf_setup(&p);
	warm_up(&p);
	for (size_t i = 0; i < ARRAY_SIZE(psizes); i++)
		for (int nt = 1; nt <= MAXT; nt *= MAXT)
			perf_point(&p, psizes[i], nt);
	if (!write) {
		gc_info(p.dropped ? "page cache dropped before every read" :
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
