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
 * REPS times each, the page cache dropped before every read when permitted
 * (said in the output when not). Ratios are per repetition, from one run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cf_io.h"
#include "measure.h"

#define REPS 5
#define MAXT 4

enum path { P_FAST, P_REF, P_HOST, NPATH };
static const char *const path_names[] = { "fastpath", "reference", "host" };

struct perf {
	struct cf_env *e;
	struct gc_fp_file f;
	void *fh;
	CUdeviceptr d;
	void *pinned;
	bool write;
	bool dropped;       /* every read started from a dropped page cache */
};

struct pjob {
	struct perf *p;
	enum path path;
	uint64_t off, len;
	pthread_barrier_t *go;
	int err;            /* 0, or what failed (-errno / cuFile status) */
};

static int do_fast(struct pjob *j)
{
	struct perf *p = j->p;
	ssize_t r = p->write ? p->e->cf.fn.write(p->fh, (void *)(uintptr_t)p->d, j->len,
						 (off_t)j->off, (off_t)j->off) :
			       p->e->cf.fn.read(p->fh, (void *)(uintptr_t)p->d, j->len,
						(off_t)j->off, (off_t)j->off);

	return r == (ssize_t)j->len ? 0 : r < 0 ? (int)r : -EIO;
}

static int do_host(struct pjob *j)
{
	struct perf *p = j->p;
	uint8_t *h = (uint8_t *)p->pinned + j->off;
	ssize_t r = p->write ? gc_io_pwrite_all(p->f.fd, h, j->len, (off_t)j->off) :
			       gc_io_pread_all(p->f.fd, h, j->len, (off_t)j->off);

	return r == (ssize_t)j->len ? 0 : r < 0 ? (int)r : -EIO;
}

static int do_ref(struct pjob *j)
{
	struct perf *p = j->p;
	uint8_t *h = (uint8_t *)p->pinned + j->off;
	int r;

	if (p->write) {
		if (p->e->cu->cuMemcpyDtoH(h, p->d + j->off, j->len) != CUDA_SUCCESS)
			return -EIO;
		return do_host(j);
	}
	r = do_host(j);
	if (r == 0 && p->e->cu->cuMemcpyHtoD(p->d + j->off, h, j->len) != CUDA_SUCCESS)
		r = -EIO;
	return r;
}

static void *pjob_thread(void *arg)
{
	struct pjob *j = arg;

	if (gc_cuda_use(j->p->e->cu, 0) != CUDA_SUCCESS)
		j->err = -EIO;
	pthread_barrier_wait(j->go);
	if (!j->err)
		j->err = j->path == P_FAST ? do_fast(j) : j->path == P_REF ? do_ref(j) : do_host(j);
	pthread_barrier_wait(j->go);
	return NULL;
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
		jobs[i] = (struct pjob){ p, path, size / nt * i, size / nt, &go, 0 };
		gc_assert(pthread_create(&t[i], NULL, pjob_thread, &jobs[i]) == 0);
	}
	pthread_barrier_wait(&go);
	t0 = gc_now_ns();
	pthread_barrier_wait(&go);
	t1 = gc_now_ns();
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < nt; i++)
		gc_assert_f(jobs[i].err == 0, "%s %s of %llu bytes, thread %d: error %d",
			    path_names[path], p->write ? "write" : "read",
			    (unsigned long long)size, i, jobs[i].err);
	return (double)size / (double)(1ull << 30) / ((double)(t1 - t0) / 1e9);
}

static void perf_point(struct perf *p, uint64_t size, int nt)
{
	double s[NPATH][REPS], rf[REPS], rh[REPS];
	const char *dir = p->write ? "write" : "read";
	char name[96];

	for (int r = 0; r < REPS; r++)
		for (int k = 0; k < NPATH; k++) /* interleaved: drift hits every path alike */
			s[k][r] = timed(p, (enum path)k, size, nt);
	for (int k = 0; k < NPATH; k++) {
		snprintf(name, sizeof(name), "%s.%s.%lluMiB.t%d", dir, path_names[k],
			 (unsigned long long)(size / MiB), nt);
		gc_metric(name, "GiB/s", GC_HIGHER_IS_BETTER, s[k], REPS);
	}
	for (int r = 0; r < REPS; r++)
		rf[r] = s[P_FAST][r] / s[P_REF][r], rh[r] = s[P_FAST][r] / s[P_HOST][r];
	snprintf(name, sizeof(name), "%s.ratio.fastpath-over-reference.%lluMiB.t%d", dir,
		 (unsigned long long)(size / MiB), nt);
	gc_metric(name, "x", GC_HIGHER_IS_BETTER, rf, REPS);
	snprintf(name, sizeof(name), "%s.ratio.fastpath-over-host.%lluMiB.t%d", dir,
		 (unsigned long long)(size / MiB), nt);
	gc_metric(name, "x", GC_HIGHER_IS_BETTER, rh, REPS);
}

/*
 * The first call of each path pays one-time costs (cuFile's bounce buffers
 * and per-thread state, the page-locked staging of the first copy): it is
 * recorded on its own, then every path is warmed with one and four threads,
 * so the timed repetitions compare steady states.
 */
static void warm_up(struct perf *p)
{
	char name[96];
	double s;

	for (int k = 0; k < NPATH; k++) {
		s = 1e3 * (double)MiB / (double)(1ull << 30) / timed(p, (enum path)k, MiB, 1);
		snprintf(name, sizeof(name), "%s.first-call.%s.1MiB", p->write ? "write" : "read",
			 path_names[k]);
		gc_metric(name, "ms", GC_LOWER_IS_BETTER, &s, 1);
		timed(p, (enum path)k, MiB, MAXT);
	}
}

static void perf_subtest(struct cf_env *e, bool write)
{
	static const uint64_t psizes[] = { 1 * MiB, 16 * MiB, 256 * MiB };
	const uint64_t max = 256 * MiB;
	struct perf p = { .e = e, .write = write, .dropped = true };

	cf_env_gpu(e);
	cf_file(e, write ? "perfw" : "perfr", max, SEED_A, O_RDWR, &p.f);
	p.fh = cf_register_ok(e, p.f.fd);
	p.d = cf_dev_alloc(e, max);
	gc_cu_assert(e->cu, e->cu->cuMemAllocHost(&p.pinned, max));
	gc_assert(e->cf.fn.buf_register((void *)(uintptr_t)p.d, max, 0).err == 0);
	if (write)
		cf_dev_fill(e, p.d, 0, max, 0, SEED_B);
	warm_up(&p);
	for (size_t i = 0; i < ARRAY_SIZE(psizes); i++)
		for (int nt = 1; nt <= MAXT; nt *= MAXT)
			perf_point(&p, psizes[i], nt);
	if (!write) {
		gc_info(p.dropped ? "page cache dropped before every read" :
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
