// SPDX-License-Identifier: MIT
/*
 * hipfile_io: hipFile's library lifecycle, the first-use (lazy
 * initialisation) race, concurrency and signal storms. UNVERIFIED ON
 * HARDWARE (see io.c for the documents cited).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fastpath_io.h"
#include "hf_io.h"
#include "interrupt.h"

/* --------------------------------------------------------- lifecycle */

static int64_t use_count(const struct hf_env *e)
{
	return e->h.hf.use_count();
}

static void expect_count(const struct hf_env *e, int64_t want, const char *after)
{
	int64_t n = use_count(e);

	gc_assert_f(n == want, "hipFileUseCount() = %lld after %s, want %lld", (long long)n, after,
		    (long long)want);
}

/* A 64 KiB read through a fresh handle: exact. */
static void read_ok(struct hf_env *e, const char *what)
{
	gc_hipfile_handle fh = hf_register_ok(e, hf_reopen(e, e->rd.fd, O_RDONLY | O_DIRECT));
	char *data = (char *)e->dev + GUARD;
	struct gc_hf_req r = hf_req_dev(e, GC_HF_HIPFILE, false, -1, fh, data, 64 * KIB, 4096);
	struct gc_hf_res res;
	char desc[768];

	hf_poison(e, data, 64 * KIB, 4096, RD_SEED);
	hf_io(e, &r, &res, desc, sizeof(desc));
	gc_assert_f(res.n == 64 * KIB, "%s: %s", what, desc);
	hf_expect_read(e, what, data, 64 * KIB, 64 * KIB, 4096, RD_SEED);
	hf_deregister(e, fh);
}

/*
 * driver-lifecycle: "A reference count of zero means the driver is
 * uninitialized. API calls that require an initialized driver return
 * `hipFileDriverNotInitialized`, though synchronous `hipFileRead()` and
 * `hipFileWrite()` may surface a POSIX error (`-1` with `errno` set) instead."
 * [src ROCm/rocm-systems projects/hipfile/docs/reference/driver-lifecycle.rst
 * @ 996998c6d468]: a close with the count at 0 fails and leaves it at 0 (never
 * negative). The code is recorded.
 */
static void close_too_many(struct hf_env *e)
{
	gc_hipfile_err r = e->h.hf.driver_close();
	char b[256];

	gc_info("hipFileDriverClose with the count at 0: %s",
		gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	gc_assert_f(r.err != GC_HIPFILE_SUCCESS, "a close with the use count at 0 succeeded");
	expect_count(e, 0, "a close too many");
}

/*
 * hipfile.h (hipFileHandleRegister): "If the library has not already been
 * initialized, the first call to `hipFileHandleRegister()` will initialize the
 * library and increment the reference count." [src ROCm/rocm-systems
 * projects/hipfile/include/hipfile.h @ 50391dc3c770].
 */
static void implicit_init(struct hf_env *e)
{
	gc_hipfile_handle fh = hf_register_ok(e, hf_reopen(e, e->rd.fd, O_RDONLY | O_DIRECT));
	gc_hipfile_err r;
	char b[256];

	expect_count(e, 1, "hipFileHandleRegister with the count at 0");
	hf_deregister(e, fh);
	r = e->h.hf.driver_close();
	gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFileDriverClose after an implicit open: %s",
		    gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	expect_count(e, 0, "closing the implicit open");
}

/*
 * driver-lifecycle: "After the reference count reaches zero, any previously
 * obtained file handles or buffer registrations are no longer valid.
 * Attempting to use them results in errors such as
 * `hipFileHandleNotRegistered` or `hipFileMemoryNotRegistered`." [src
 * ROCm/rocm-systems projects/hipfile/docs/reference/driver-lifecycle.rst @
 * 996998c6d468]: a read on a handle registered before the last close fails and
 * changes nothing; deregistering it then must not crash.
 */
static void close_under_handle(struct hf_env *e)
{
	char *data = (char *)e->dev + GUARD;
	gc_hipfile_handle fh;
	struct gc_hf_req r;
	struct gc_hf_res res;
	char desc[768];

	hf_driver_open_ok(e);
	fh = hf_register_ok(e, hf_reopen(e, e->rd.fd, O_RDONLY | O_DIRECT));
	hf_driver_close_ok(e);
	expect_count(e, 0, "the last close with a handle registered");
	r = hf_req_dev(e, GC_HF_HIPFILE, false, -1, fh, data, 64 * KIB, 4096);
	hf_poison(e, data, 64 * KIB, 4096, RD_SEED);
	hf_io(e, &r, &res, desc, sizeof(desc));
	gc_info("read on a handle of a closed driver: %s", desc);
	gc_assert_f(res.n < 0, "a handle outlived the last hipFileDriverClose: %s", desc);
	hf_expect_read(e, "read after the last close", data, 64 * KIB, 0, 4096, RD_SEED);
	hf_deregister(e, fh);
}

/*
 * driver-lifecycle: hipfile.h (hipFileDriverOpen) "Each call to
 * `hipFileDriverOpen()` increments the library's reference count.",
 * (hipFileDriverClose) "Each call to `hipFileDriverClose()` decrements the
 * library's reference count.", hipFileUseCount "@brief Obtain the current
 * reference count for the library [...]" [src ROCm/rocm-systems
 * projects/hipfile/include/hipfile.h @ 50391dc3c770]. Checked: two opens and
 * two closes count exactly; a close too many fails and the count stays 0; a
 * reopen after the last close gives a working library; a first registration
 * opens it implicitly; a handle does not outlive the last close. The steps
 * needing a count of 0 run only if nothing else holds the library.
 */
void test_driver_lifecycle(void *data)
{
	struct hf_env *e = data;
	int64_t c0;

	hf_require(e, GC_HF_HIPFILE);
	hf_release_all(e);
	c0 = use_count(e);
	hf_driver_open_ok(e);
	expect_count(e, c0 + 1, "hipFileDriverOpen");
	hf_driver_open_ok(e);
	expect_count(e, c0 + 2, "a second hipFileDriverOpen");
	hf_driver_close_ok(e);
	expect_count(e, c0 + 1, "hipFileDriverClose");
	hf_driver_close_ok(e);
	expect_count(e, c0, "the second hipFileDriverClose");
	if (c0 != 0)
		gc_info("hipFileUseCount() = %lld before the subtest: the steps needing a count "
			"of 0 are not run", (long long)c0);
	if (c0 == 0)
		close_too_many(e);
	hf_driver_open_ok(e);
	read_ok(e, "read after reopen");
	hf_driver_close_ok(e);
	if (c0 == 0) {
		implicit_init(e);
		close_under_handle(e);
	}
	hf_release_all(e);
}

/* ---------------------------------------------------- first-use race */

#define RACE_THREADS GC_FP_RACE_THREADS
#define RACE_SLICE GC_FP_RACE_SLICE

struct race {
	struct gc_hipfile *h;
	enum gc_hf_entry x;
	char *dev;
	int fds[RACE_THREADS];
	struct gc_hf_req req[RACE_THREADS];
	struct gc_hf_res res[RACE_THREADS];
	gc_hipfile_err reg[RACE_THREADS];
};

/* Before the barrier: thread i's request, ready to go. */
static void race_before(void *ctx, int i)
{
	struct race *r = ctx;
	uint64_t off = (uint64_t)i * RACE_SLICE;

	r->req[i] = r->x == GC_HF_HIPFILE ?
		hf_req(r->x, false, -1, NULL, r->dev, (int64_t)off, RACE_SLICE, (int64_t)off) :
		hf_req(r->x, false, r->fds[i], NULL, r->dev + off, 0, RACE_SLICE, (int64_t)off);
}

/* The first call of the entry point in this process, made by 64 threads at once. */
static void race_first(void *ctx, int i)
{
	struct race *r = ctx;
	gc_hipfile_descr d = { .type = GC_HIPFILE_HANDLE_TYPE_OPAQUE_FD, .handle.fd = r->fds[i] };
	gc_hipfile_handle fh = NULL;

	if (r->x == GC_HF_HIPFILE) {
		r->reg[i] = r->h->hf.handle_register(&fh, &d);
		if (r->reg[i].err != GC_HIPFILE_SUCCESS)
			return;
		r->req[i].fh = fh;
	}
	gc_hf_io(r->h, &r->req[i], &r->res[i]);
	if (fh)
		r->h->hf.handle_deregister(fh);
}

/* Outside any subtest (the child runs before gc_main): say so and exit 2. */
static void race_cannot_start(void *ctx, int i)
{
	(void)ctx;
	fprintf(stderr, "race: pthread_create %d: %s\n", i, strerror(errno));
	_exit(2); /* the others wait at the barrier forever */
}

static const struct gc_fp_race_ops race_ops = {
	.before = race_before, .first = race_first, .cannot_start = race_cannot_start,
};

static int race_report(struct race *r, char *stage)
{
	struct gc_mismatch mm;
	hipError_t he = hipSuccess;
	char b[384];
	int bad = 0, c;

	for (int i = 0; i < RACE_THREADS; i++) {
		struct gc_hf_req q = hf_req(r->x, false, r->fds[i], NULL, NULL, 0, RACE_SLICE, 0);

		if (r->reg[i].err != GC_HIPFILE_SUCCESS)
			fprintf(stderr, "race thread %d: hipFileHandleRegister: %s\n", i,
				gc_hipfile_strerror(r->h, r->reg[i], b, sizeof(b)));
		else if (r->res[i].n != RACE_SLICE)
			fprintf(stderr, "race thread %d: %s\n", i,
				gc_hf_res_str(r->h, &q, &r->res[i], b, sizeof(b)));
		bad += r->reg[i].err != GC_HIPFILE_SUCCESS || r->res[i].n != RACE_SLICE;
	}
	c = gc_hip_check_pattern(r->h, r->dev, RACE_THREADS * RACE_SLICE, 0, RD_SEED, false,
				 stage, RACE_THREADS * RACE_SLICE, &mm, &he);
	if (c)
		fprintf(stderr, "race: device bytes after the race: %s\n",
			c < 0 ? gc_hip_errstr(r->h->hip, he, b, sizeof(b))
			      : gc_mismatch_str(&mm, b, sizeof(b)));
	return bad || c ? 1 : 0;
}

static int race_prepare(struct race *r, int fd, char *stage)
{
	hipError_t he = hipSuccess;
	char p[64], b[192];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	for (int i = 0; i < RACE_THREADS; i++) {
		r->fds[i] = open(p, O_RDONLY | O_DIRECT | O_CLOEXEC); /* a descriptor of its own */
		if (r->fds[i] < 0) {
			fprintf(stderr, "race: open %s: %s\n", p, strerror(errno));
			return 2;
		}
	}
	he = r->h->hip->hipMalloc((void **)&r->dev, RACE_THREADS * RACE_SLICE);
	if (he == hipSuccess &&
	    gc_hip_fill_pattern(r->h, r->dev, RACE_THREADS * RACE_SLICE, 0, RD_SEED, true, stage,
				RACE_THREADS * RACE_SLICE, &he) == 0)
		return 0;
	fprintf(stderr, "race: device buffer: %s\n", gc_hip_errstr(r->h->hip, he, b, sizeof(b)));
	return 2;
}

static int race_run(struct gc_hipfile *h, enum gc_hf_entry x, int fd)
{
	struct race *r = calloc(1, sizeof(*r)); /* 64 threads share it; the process exits after */
	char *stage = malloc(RACE_THREADS * RACE_SLICE);
	int rc;

	if (!r || !stage) {
		fprintf(stderr, "race: out of memory\n");
		return 2;
	}
	r->h = h, r->x = x;
	rc = race_prepare(r, fd, stage);
	if (rc)
		return rc;
	gc_fp_race_threads(&race_ops, r);
	return race_report(r, stage);
}

/*
 * The child: `<entry>:<fd>` in $GPUCONFORM_HIPFILE_RACE_CHILD. Exit 0 when
 * all 64 threads read their exact slice, 1 when one did not, 2 when the race
 * could not be set up.
 */
int hf_race_child(const char *spec)
{
	struct gc_hipfile h;
	char why[512];
	int x, fd;

	if (sscanf(spec, "%d:%d", &x, &fd) != 2 || x < 0 || x >= GC_HF_N_ENTRIES) {
		fprintf(stderr, "%s=%s: want <entry>:<fd>\n", HF_RACE_ENV, spec);
		return 2;
	}
	if (gc_hipfile_open(&h, why, sizeof(why)) != 0 || !h.backend[x].found) {
		fprintf(stderr, "race child: %s\n", h.backend[x].found ? why : h.backend[x].why);
		return 2;
	}
	return race_run(&h, (enum gc_hf_entry)x, fd);
}

struct race_spec {
	enum gc_hf_entry x;
	int fd;
};

/* In the forked child: a fresh process image, handed the read file. */
static void race_exec(void *arg)
{
	const struct race_spec *sp = arg;
	int fd = fcntl(sp->fd, F_DUPFD, 10); /* F_DUPFD clears close-on-exec */
	char spec[32];

	snprintf(spec, sizeof(spec), "%d:%d", (int)sp->x, fd);
	setenv(HF_RACE_ENV, spec, 1);
	execl("/proc/self/exe", "hipfile_io", (char *)NULL);
	fprintf(stderr, "exec /proc/self/exe: %s\n", strerror(errno));
	_exit(127);
}

static void race(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	int iters = gc_fp_race_iterations("GPUCONFORM_HIPFILE_RACE_ITERATIONS"); /* 100 a node */
	struct race_spec sp = { x, e->rd.fd };

	(void)write;
	gc_fp_race_run(iters, race_exec, &sp);
	gc_info("%d fresh processes, %d threads each racing to make the first %s call: every read "
		"exact, no error", iters, RACE_THREADS, gc_hf_entry_symbol(x, false));
}

/*
 * first-use-race: the lazy-initialisation race the AMD fastpath review found
 * (a backend list initialised lazily, read empty or raced by concurrent first
 * users): the first call of an entry point in a process, made by 64 threads
 * at once, gives every thread its exact bytes, no crash, no error. hipFile:
 * registration and read race, with no hipFileDriverOpen (hipfile.h: the
 * first hipFileHandleRegister initializes the library). A fresh process per
 * iteration ($GPUCONFORM_HIPFILE_RACE_ITERATIONS, default 100): this binary
 * re-executed, since HIP state does not survive fork().
 */
void test_first_use_race(void *data)
{
	hf_each_entry(data, false, false, race);
}

/* -------------------------------------------------------- concurrency */

struct job {
	struct gc_hipfile *h;
	struct gc_hf_req req;
	struct gc_hf_res res;
	hipError_t set_device;
};

/* No assertion here: a helper thread cannot leave the subtest. */
static int job_init(void *p)
{
	struct job *j = p;

	j->set_device = j->h->hip->hipSetDevice(0);
	return j->set_device != hipSuccess;
}

static void job_io(void *p)
{
	struct job *j = p;

	gc_hf_io(j->h, &j->req, &j->res);
}

static void job_check(void *p, int i, int n)
{
	struct job *jobs = p;
	char b[384];

	gc_hip_assert(jobs[i].h->hip, jobs[i].set_device);
	gc_assert_f(jobs[i].res.n == (int64_t)jobs[i].req.size, "job %d of %d: %s", i, n,
		    gc_hf_res_str(jobs[i].h, &jobs[i].req, &jobs[i].res, b, sizeof(b)));
}

/* Every job's I/O starts once every thread has made the device current. */
static const struct gc_fp_jobs_ops job_ops = {
	.barrier = true, .thread_init = job_init, .io = job_io, .check = job_check,
};

static void run_jobs(struct hf_env *e, struct job *jobs, int n)
{
	for (int i = 0; i < n; i++)
		jobs[i].h = &e->h;
	gc_fp_jobs_run(&job_ops, jobs, sizeof(jobs[0]), n);
}

#define SLICES 8
#define SLICE (8 * MiB)

/*
 * concurrent-slices: 8 threads, one handle (hipFile) or one descriptor, one
 * device buffer, disjoint 8 MiB slices (aligned: every entry must move them,
 * see read-matrix): the buffer ends up byte-exact, guards untouched.
 */
static void slices(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	char *data = (char *)e->dev + GUARD;
	gc_hipfile_handle fh = hf_handle_for(e, x, e->rd.fd);
	struct job jobs[SLICES];

	(void)write;
	hf_poison(e, data, SLICES * SLICE, 4096, RD_SEED);
	for (int i = 0; i < SLICES; i++) {
		int64_t off = (int64_t)i * (int64_t)SLICE;

		jobs[i] = (struct job){
			.req = hf_req_dev(e, x, false, e->rd.fd, fh, data + off, SLICE, 4096 + off)
		};
	}
	run_jobs(e, jobs, SLICES);
	hf_expect_read(e, "8 concurrent slices", data, SLICES * SLICE, SLICES * SLICE, 4096,
		       RD_SEED);
}

void test_concurrent_slices(void *data)
{
	hf_each_entry(data, false, false, slices);
}

#define RW_N 4
#define RW_LEN (8 * MiB)

/*
 * concurrent-readers-writers: 4 readers of the read file and 4 writers of a
 * file each, at once: every read byte-exact into its own region, every
 * written file byte-exact, nothing between the regions touched.
 */
static void readers_writers(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	char *rd = (char *)e->dev + GUARD, *wr = rd + RW_N * RW_LEN + GUARD;
	gc_hipfile_handle rfh = hf_handle_for(e, x, e->rd.fd);
	struct gc_fp_file *f[RW_N];
	struct job jobs[2 * RW_N];
	char what[64];

	(void)write;
	hf_poison(e, rd, RW_N * RW_LEN, 0, RD_SEED);
	for (int i = 0; i < RW_N; i++) {
		gc_hipfile_handle wfh;

		f[i] = hf_file(e, "hipfile-cw", RW_LEN, WR_OLD, O_RDWR);
		wfh = hf_handle_for(e, x, f[i]->fd);
		hf_dev_fill(e, wr + i * RW_LEN, RW_LEN, 0, WR_NEW, false);
		jobs[i] = (struct job){ .req = hf_req_dev(e, x, false, e->rd.fd, rfh,
							  rd + i * RW_LEN, RW_LEN,
							  (int64_t)(i * RW_LEN)) };
		jobs[RW_N + i] = (struct job){ .req = hf_req_dev(e, x, true, f[i]->fd, wfh,
								 wr + i * RW_LEN, RW_LEN, 0) };
	}
	run_jobs(e, jobs, 2 * RW_N);
	hf_expect_read(e, "4 concurrent readers", rd, RW_N * RW_LEN, RW_N * RW_LEN, 0, RD_SEED);
	for (int i = 0; i < RW_N; i++) {
		snprintf(what, sizeof(what), "concurrent writer %d", i);
		hf_file_expect(f[i], hf_reopen(e, f[i]->fd, O_RDONLY), 0, RW_LEN, WR_NEW, what);
	}
}

void test_concurrent_readers_writers(void *data)
{
	hf_each_entry(data, false, false, readers_writers);
}

/* ---------------------------------------------------------- signal storm */

#define STORM_LEN MAX_SIZE
#define STORM_MAX_CALLS 10000

struct storm_run {
	struct hf_env *e;
	enum gc_hf_entry x;
	bool write;
	int fd;
	gc_hipfile_handle fh;
	char *data;
	struct gc_progress p;
	struct gc_hf_req last_req;
	struct gc_hf_res last;
	int error;          /* what gc_progress_advance refused, or another errno */
	bool misaligned;    /* a partial count the GPU-direct-only entries cannot resume from */
	char past[256];     /* the first partial count that was not exact, if any */
};

/* After a partial count: the 64 KiB past it must still be untouched (no assertion: storm on). */
static void storm_check_partial(struct storm_run *s)
{
	struct hf_env *e = s->e;
	uint64_t at = s->p.done, len = STORM_LEN - at < 64 * KIB ? STORM_LEN - at : 64 * KIB;
	hipError_t he = hipSuccess;
	struct gc_mismatch mm;
	char m[192];
	int r;

	if (s->past[0] || len == 0)
		return;
	if (s->write) {
		(void)posix_fadvise(e->wr_bfd, 0, 0, POSIX_FADV_DONTNEED);
		r = gc_fp_file_check(&e->wr, at, len, WR_OLD, &mm) >= 0;
	} else {
		r = gc_hip_check_pattern(&e->h, s->data + at, len, at, RD_SEED, true, e->stage.ptr,
					 STAGE_LEN, &mm, &he);
	}
	if (r)
		snprintf(s->past, sizeof(s->past), "after a partial count of %llu: %s past it",
			 (unsigned long long)at, r < 0 ? "HIP error" : gc_mismatch_str(&mm, m,
										     sizeof(m)));
}

static bool storm_step(struct storm_run *s, struct gc_storm *st)
{
	uint64_t done = s->p.done, left = gc_progress_remaining(&s->p);
	int r;

	s->last_req = hf_req_dev(s->e, s->x, s->write, s->fd, s->fh, s->data + done, left,
				 (int64_t)done);
	gc_storm_enter(st);
	gc_hf_io(&s->e->h, &s->last_req, &s->last);
	gc_storm_leave(st);
	r = gc_progress_advance(&s->p, s->last.n);
	if (r) {
		s->error = r;
		return false;
	}
	if (s->last.n > 0 && !gc_progress_finished(&s->p))
		storm_check_partial(s);
	s->misaligned = s->x != GC_HF_HIPFILE && s->p.done % PAGE;
	return !s->misaligned && !gc_progress_finished(&s->p);
}

static void storm_verify(struct storm_run *s, struct gc_storm *st)
{
	char b[384], c[192];

	gc_assert_f(s->error == 0, "after %llu of %llu bytes: %s (%s)",
		    (unsigned long long)s->p.done, (unsigned long long)STORM_LEN,
		    gc_hf_res_str(&s->e->h, &s->last_req, &s->last, b, sizeof(b)),
		    s->error == -EPROTO ? "a count the request cannot have"
					: "an error, not EINTR");
	gc_assert_f(!s->misaligned, "a partial count leaves %llu bytes done, not a 4 KiB "
		    "multiple: the GPU-direct-only call cannot be resumed from there",
		    (unsigned long long)s->p.done);
	gc_assert_f(gc_progress_finished(&s->p), "%llu of %llu bytes after %u calls: no "
		    "convergence", (unsigned long long)s->p.done, (unsigned long long)STORM_LEN,
		    s->p.calls);
	gc_assert_f(!s->past[0], "a partial count was not exact: %s", s->past);
	gc_storm_require_hits(st);
	gc_info("%s of %llu MiB under a storm: %u calls, %u partial, %u EINTR; %s",
		gc_hf_entry_symbol(s->x, s->write), (unsigned long long)(STORM_LEN / MiB),
		s->p.calls, s->p.partials, s->p.eintrs, gc_storm_counts_str(st, c, sizeof(c)));
}

/*
 * The interrupt contract (DESIGN.md): a call interrupted by a signal either
 * completes or fails with EINTR and no visible effect, or reports a partial
 * count that is exact; restarting it from there converges. 256 MiB in one
 * request under a 100 us storm aimed at the calling thread; after every
 * partial count the bytes past it are checked untouched; at the end every
 * byte is checked.
 */
static void storm(struct hf_env *e, enum gc_hf_entry x, bool write)
{
	struct storm_run s = { .e = e, .x = x, .write = write, .data = (char *)e->dev + GUARD };
	struct gc_storm st;

	s.fd = write ? e->wr.fd : e->rd.fd;
	s.fh = hf_handle_for(e, x, s.fd);
	gc_progress_init(&s.p, STORM_LEN);
	if (write) {
		hf_file_restore(e, e->wr_bfd, 0, STORM_LEN + TAIL, WR_OLD);
		hf_source(e, s.data, STORM_LEN, 0);
	} else {
		hf_poison(e, s.data, STORM_LEN, 0, RD_SEED);
	}
	gc_assert_ok(gc_storm_start(&st, &(struct gc_storm_cfg){ .interval_ns = 100000 }));
	while (s.p.calls < STORM_MAX_CALLS && storm_step(&s, &st))
		;
	gc_assert_ok(gc_storm_stop(&st));
	storm_verify(&s, &st);
	if (write) {
		hf_expect_source(e, "storm", s.data, STORM_LEN, 0);
		hf_expect_written(e, &e->wr, e->wr_bfd, 0, STORM_LEN + TAIL, 0, STORM_LEN, "storm");
	} else {
		hf_expect_read(e, "storm", s.data, STORM_LEN, STORM_LEN, 0, RD_SEED);
	}
}

/* interrupt-storm: per entry point and direction (hipFileRead, hipFileWrite...). */
void test_interrupt_storm(void *data)
{
	hf_each_entry(data, false, true, storm);
	hf_each_entry(data, true, true, storm);
}
