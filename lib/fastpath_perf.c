// SPDX-License-Identifier: MIT
/* The fastpath throughput loop: see fastpath_perf.h. */
#include "fastpath_perf.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "core.h"
#include "fastpath.h"
#include "io.h"
#include "measure.h"

/* One thread's share of one timed transfer. */
struct job {
	const struct gc_fp_perf *p;
	int path;
	uint64_t off, len;
	pthread_barrier_t *go;
	int64_t err;   /* 0, or what failed */
	char what[384];
};

static const char *dir_name(const struct gc_fp_perf *p)
{
	return p->write ? "write" : "read";
}

static bool have(const struct gc_fp_perf *p, int path)
{
	return !p->have || p->have[path];
}

/* No assertion here: a helper thread cannot leave the subtest. */
static void *job_thread(void *arg)
{
	struct job *j = arg;
	const struct gc_fp_perf_ops *ops = j->p->ops;

	j->err = ops->thread_init ? ops->thread_init(j->p->ctx) : 0;
	pthread_barrier_wait(j->go);
	if (!j->err)
		j->err = ops->transfer(j->p->ctx, j->path, j->off, j->len, j->what,
				       sizeof(j->what));
	pthread_barrier_wait(j->go);
	return NULL;
}

static void check_jobs(const struct gc_fp_perf *p, const struct job *jobs, int nt, uint64_t size)
{
	char b[512];

	for (int i = 0; i < nt; i++)
		gc_assert_f(jobs[i].err == 0, "%s %s of %llu bytes, thread %d: %s",
			    p->names[jobs[i].path], dir_name(p), (unsigned long long)size, i,
			    p->ops->err_str(p->ctx, jobs[i].err, jobs[i].what, b, sizeof(b)));
}

/* One timed transfer of size bytes by nt threads on path; GiB/s. */
static double timed(struct gc_fp_perf *p, int path, uint64_t size, int nt)
{
	struct job jobs[GC_FP_PERF_MAX_THREADS];
	pthread_t t[GC_FP_PERF_MAX_THREADS];
	pthread_barrier_t go;
	uint64_t t0, t1;

	if (!p->write)
		p->dropped &= gc_fp_drop_caches() == 0;
	pthread_barrier_init(&go, NULL, (unsigned)nt + 1);
	for (int i = 0; i < nt; i++) {
		jobs[i] = (struct job){ p, path, size / (uint64_t)nt * (uint64_t)i,
					size / (uint64_t)nt, &go, 0, "" };
		gc_assert(pthread_create(&t[i], NULL, job_thread, &jobs[i]) == 0);
	}
	pthread_barrier_wait(&go);
	t0 = gc_now_ns();
	pthread_barrier_wait(&go);
	if (p->write && p->sync_fd >= 0)
		gc_assert_syscall(fdatasync(p->sync_fd));
	t1 = gc_now_ns();
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	check_jobs(p, jobs, nt, size);
	return (double)size / (double)(1ull << 30) / ((double)(t1 - t0 ? t1 - t0 : 1) / 1e9);
}

/* Per repetition: how many times faster path a was than path b. */
static void ratio(const struct gc_fp_perf *p, const double s[][GC_FP_PERF_REPS], int reps,
		  int a, int b, uint64_t size, int nt)
{
	double r[GC_FP_PERF_REPS];
	char name[128];

	for (int i = 0; i < reps; i++)
		r[i] = s[a][i] / s[b][i];
	snprintf(name, sizeof(name), "%s.ratio.%s-over-%s.%lluMiB.t%d", dir_name(p), p->names[a],
		 p->names[b], (unsigned long long)(size / MiB), nt);
	gc_metric(name, "x", GC_HIGHER_IS_BETTER, r, (size_t)reps);
}

static void point(struct gc_fp_perf *p, int reps, uint64_t size, int nt)
{
	const int ref = p->n_paths - 2, host = p->n_paths - 1;
	double s[GC_FP_PERF_MAX_PATHS][GC_FP_PERF_REPS];
	char name[128];

	for (int r = 0; r < reps; r++)
		for (int k = 0; k < p->n_paths; k++) /* interleaved: drift hits every path alike */
			if (have(p, k))
				s[k][r] = timed(p, k, size, nt);
	for (int k = 0; k < p->n_paths; k++) {
		if (!have(p, k))
			continue;
		snprintf(name, sizeof(name), "%s.%s.%lluMiB.t%d", dir_name(p), p->names[k],
			 (unsigned long long)(size / MiB), nt);
		gc_metric(name, "GiB/s", GC_HIGHER_IS_BETTER, s[k], (size_t)reps);
	}
	for (int k = 0; k < ref; k++) {
		if (!have(p, k))
			continue;
		ratio(p, s, reps, k, ref, size, nt);
		ratio(p, s, reps, k, host, size, nt);
	}
}

/* Each path's first call pays one-time costs: recorded on its own, then every path warmed. */
static void warm_up(struct gc_fp_perf *p)
{
	const struct gc_fp_perf_ops *ops = p->ops;
	char name[128];
	double ms;

	for (int k = 0; k < p->n_paths; k++) {
		if (!have(p, k))
			continue;
		if (ops->first_before)
			ops->first_before(p->ctx, k);
		ms = 1e3 * (double)MiB / (double)(1ull << 30) / timed(p, k, MiB, 1);
		if (ops->first_after)
			ops->first_after(p->ctx, k);
		snprintf(name, sizeof(name), "%s.first-call.%s.1MiB", dir_name(p), p->names[k]);
		gc_metric(name, "ms", GC_LOWER_IS_BETTER, &ms, 1);
		timed(p, k, MiB, GC_FP_PERF_MAX_THREADS);
	}
}

void gc_fp_perf_run(struct gc_fp_perf *p)
{
	static const uint64_t sizes[] = { 1 * MiB, 16 * MiB, 256 * MiB };
	const int reps = (int)gc_node_share(GC_FP_PERF_REPS);

	gc_assert_f(p->n_paths >= 3 && p->n_paths <= GC_FP_PERF_MAX_PATHS,
		    "%d paths: want the fastpaths, the reference and the host", p->n_paths);
	p->dropped = true;
	gc_info("%d of the node's %d repetitions a point on this GPU", reps, GC_FP_PERF_REPS);
	warm_up(p);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		for (int nt = 1; nt <= GC_FP_PERF_MAX_THREADS; nt *= GC_FP_PERF_MAX_THREADS)
			point(p, reps, sizes[i], nt);
}

int64_t gc_fp_perf_host_io(int fd, bool write, void *host, uint64_t off, uint64_t len)
{
	char *h = (char *)host + off;
	ssize_t r = write ? gc_io_pwrite_all(fd, h, len, (off_t)off) :
			    gc_io_pread_all(fd, h, len, (off_t)off);

	return r == (ssize_t)len ? 0 : r < 0 ? r : -EIO;
}
