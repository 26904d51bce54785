// SPDX-License-Identifier: MIT
/*
 * hipfile_io: hipFile's batch and stream-ordered APIs. hipFile's API
 * reference says of both that they are not yet supported on AMD and return
 * errors there: "Batch IO is not yet supported on AMD backends in the
 * current release. Calling batch IO functions on an AMD backend returns
 * error codes." [src ROCm/rocm-systems
 * projects/hipfile/docs/reference/api-batch-io.rst @ 5b50b9d9ea8b];
 * "Asynchronous IO is not yet supported on AMD ROCm backends in the current
 * release. Calls to the functions documented on this page return the error
 * code `hipFileAsyncNotSupported`." [src ROCm/rocm-systems
 * projects/hipfile/docs/reference/api-async-io.rst @ 5b50b9d9ea8b]. A setup
 * or first call answering so skips with those words; a library that accepts
 * them is held to the contracts below. UNVERIFIED ON HARDWARE.
 *
 * What hipFile's own code does [src ROCm/hipFile
 * src/amd_detail/hipfile.cpp @ e875da7de04c]. hipFileReadAsync /
 * WriteAsync are served through its fallback (`Fallback().async_io(...)`),
 * so the async subtests should run rather than skip. hipFileBatchIOSetUp
 * creates a context and hipFileBatchIOSubmit queues the entries it can look
 * up, but hipFileBatchIOGetStatus always throws a `std::runtime_error` (its
 * text: Not Implemented), returned as hipFileInternalError (and
 * hipFileBatchIODestroy does nothing). So the source predicts that
 * batch-bad-entry does not skip there: a batch submitted whole fails in
 * batch_wait(), and only a batch refused at submission passes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "hf_io.h"
#include "measure.h"

/* ------------------------------------------------------------ batch */

#define B_N 4
#define B_SIZE (64 * KIB)
#define B_BAD 2
#define B_STRIDE (B_SIZE + 4 * GUARD) /* room for the odd-size entry and both guards */
#define B_DEADLINE_NS 30000000000ull

/* The kinds of bad entry (lib/fastpath_subtests.h), a dynamic subtest each. */
GC_FASTPATH_BAD_ENTRIES(batch_kind);

struct batch {
	struct hf_env *e;
	const struct gc_fp_bad_case *bad;
	gc_hipfile_batch b;
	gc_hipfile_io_params io[B_N];
	int status[B_N]; /* terminal status per entry, 0 until one came */
	ssize_t ret[B_N];
};

static char *region(const struct hf_env *e, int k)
{
	return (char *)e->dev + GUARD + (size_t)k * B_STRIDE;
}

static void batch_params(struct batch *t, gc_hipfile_handle fh, gc_hipfile_handle stale)
{
	for (int k = 0; k < B_N; k++)
		t->io[k] = (gc_hipfile_io_params){
			.mode = GC_HIPFILE_BATCH_MODE,
			.u.batch = { .dev_base = t->e->dev, .file_offset = 4096 + k * B_SIZE,
				     .dev_offset = region(t->e, k) - (char *)t->e->dev,
				     .size = B_SIZE },
			.fh = fh,
			.opcode = GC_HIPFILE_BATCH_READ,
			.cookie = &t->io[k],
		};
	switch (t->bad->kind) {
	case GC_FP_BAD_NEGATIVE_OFFSET:
		t->io[B_BAD].u.batch.file_offset = -4096;
		break;
	case GC_FP_BAD_PAST_EOF:
		t->io[B_BAD].u.batch.file_offset = (int64_t)(FILE_LEN + MiB);
		break;
	case GC_FP_BAD_ODD_SIZE:
		t->io[B_BAD].u.batch.size = B_SIZE + 1;
		break;
	case GC_FP_BAD_CLOSED_HANDLE:
		t->io[B_BAD].fh = stale;
		break;
	}
}

/* A handle that was registered and deregistered again. */
static gc_hipfile_handle stale_handle(struct hf_env *e)
{
	gc_hipfile_handle fh = hf_register_ok(e, hf_reopen(e, e->rd.fd, O_RDONLY | O_DIRECT));

	hf_deregister(e, fh);
	return fh;
}

static void batch_setup(struct batch *t)
{
	struct hf_env *e = t->e;
	gc_hipfile_err r;
	char b[256];

	if (!e->h.hf.batch_setup || !e->h.hf.batch_submit || !e->h.hf.batch_get_status ||
	    !e->h.hf.batch_destroy)
		gc_skip("%s has no hipFileBatchIO* entry points (%s)", e->h.hf_soname,
			e->h.backend[GC_HF_HIPFILE].how);
	r = e->h.hf.batch_setup(&t->b, B_N);
	if (r.err != GC_HIPFILE_SUCCESS)
		gc_skip("hipFileBatchIOSetUp: %s (hipFile's batch API reference: \"Batch IO is not "
			"yet supported on AMD backends in the current release\")",
			gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	hf_hold(e, HF_BATCH, t->b);
}

/* Record the events; 0, or a message in why[] for what must fail the subtest. */
static int batch_collect(struct batch *t, const gc_hipfile_io_events *ev, unsigned n, int *got,
			 char *why, size_t len)
{
	const int terminal = GC_HIPFILE_ST_COMPLETE | GC_HIPFILE_ST_FAILED |
			     GC_HIPFILE_ST_INVALID | GC_HIPFILE_ST_CANCELED | GC_HIPFILE_ST_TIMEOUT;

	for (unsigned i = 0; i < n; i++) {
		int k = 0;

		while (k < B_N && ev[i].cookie != (void *)&t->io[k])
			k++;
		if (k == B_N) {
			snprintf(why, len, "an event with a cookie no entry has (%p)",
				 ev[i].cookie);
			return -EPROTO;
		}
		if (!(ev[i].status & terminal))
			continue;
		if (t->status[k]) {
			snprintf(why, len, "entry %d completed twice (status 0x%x, then 0x%x)", k,
				 t->status[k], ev[i].status);
			return -EPROTO;
		}
		t->status[k] = ev[i].status;
		t->ret[k] = (ssize_t)ev[i].ret;
		(*got)++;
	}
	return 0;
}

static void batch_wait(struct batch *t)
{
	uint64_t deadline = gc_now_ns() + B_DEADLINE_NS;
	gc_hipfile_io_events ev[B_N];
	char why[256] = "", b[256];
	int got = 0;

	while (got < B_N && gc_now_ns() < deadline) {
		struct timespec ts = { 1, 0 };
		unsigned nr = B_N;
		gc_hipfile_err r = t->e->h.hf.batch_get_status(t->b, 1, &nr, ev, &ts);

		gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFileBatchIOGetStatus: %s",
			    gc_hipfile_strerror(&t->e->h, r, b, sizeof(b)));
		gc_assert_f(nr <= B_N, "hipFileBatchIOGetStatus returned %u events, room for %d",
			    nr, B_N);
		gc_assert_f(batch_collect(t, ev, nr, &got, why, sizeof(why)) == 0, "%s", why);
	}
	gc_assert_f(got == B_N, "silent partial state: %d of %d entries reported a final status "
		    "within %llu s", got, B_N, B_DEADLINE_NS / 1000000000ull);
}

static const char *status_name(int s)
{
	switch (s) {
	case GC_HIPFILE_ST_COMPLETE:
		return "complete";
	case GC_HIPFILE_ST_FAILED:
		return "failed";
	case GC_HIPFILE_ST_INVALID:
		return "invalid";
	case GC_HIPFILE_ST_CANCELED:
		return "canceled";
	case GC_HIPFILE_ST_TIMEOUT:
		return "timeout";
	default:
		return "?";
	}
}

/* What the bad entry may legitimately report complete with: bytes, or -1 for never. */
static ssize_t bad_may_complete(const struct batch *t)
{
	switch (t->bad->kind) {
	case GC_FP_BAD_PAST_EOF:
		return 0;              /* pread's answer past EOF */
	case GC_FP_BAD_ODD_SIZE:
		return B_SIZE + 1;     /* the fallback serves any alignment */
	default:
		return -1;
	}
}

static void batch_judge(struct batch *t)
{
	struct hf_env *e = t->e;
	char what[96];

	for (int k = 0; k < B_N; k++) {
		const gc_hipfile_io_params *p = &t->io[k];
		bool good = k != B_BAD;
		ssize_t want = good ? (ssize_t)B_SIZE : bad_may_complete(t);
		bool done = t->status[k] == GC_HIPFILE_ST_COMPLETE;

		gc_info("entry %d (%s): %s, ret %zd", k, good ? "good" : t->bad->name,
			status_name(t->status[k]), t->ret[k]);
		gc_assert_f(!good || (done && t->ret[k] == B_SIZE), "good entry %d: %s, ret %zd", k,
			    status_name(t->status[k]), t->ret[k]);
		gc_assert_f(good || !done || t->ret[k] == want, "the bad entry (%s) reported "
			    "complete with ret %zd", t->bad->name, t->ret[k]);
		snprintf(what, sizeof(what), "batch entry %d", k);
		hf_expect_read(e, what, region(e, k), p->u.batch.size, done ? (uint64_t)want : 0,
			       (uint64_t)p->u.batch.file_offset, RD_SEED);
	}
}

/*
 * One batch of 4 reads, entry 2 bad. hipFileBatchIOSubmit: "Enqueue a
 * batch of IO requests for the GPU to complete asynchronously."; of
 * hipFileIOEvents_t's `ret`: "[...] Number of bytes transferred, or a POSIX
 * error code if negative [...]"; statuses include hipFileInvalid ("[...]
 * Batch IO operation was rejected for being invalid or could not be queued
 * [...]") and hipFileFailed [src ROCm/rocm-systems
 * projects/hipfile/docs/reference/api-batch-io.rst @ 5b50b9d9ea8b]. The
 * partial-failure contract: the bad entry fails alone (its own status, the
 * others complete with their bytes right, its region untouched), or the
 * submit is rejected whole with nothing changed; never a silent partial
 * state. Events are matched by cookie, in whatever order they come.
 */
static void batch_kind(void *ctx, const struct gc_fp_bad_case *bad)
{
	struct batch *t = ctx;
	struct hf_env *e = t->e;
	gc_hipfile_handle fh, stale;
	gc_hipfile_err r;
	char b[256];

	t->bad = bad;
	hf_release_all(e);
	memset(t->status, 0, sizeof(t->status));
	hf_driver_ensure(e);
	fh = hf_register_ok(e, hf_reopen(e, e->rd.fd, O_RDONLY | O_DIRECT));
	stale = stale_handle(e);
	batch_setup(t);
	batch_params(t, fh, stale);
	for (int k = 0; k < B_N; k++)
		hf_poison(e, region(e, k), t->io[k].u.batch.size,
			  (uint64_t)t->io[k].u.batch.file_offset, RD_SEED);
	r = e->h.hf.batch_submit(t->b, B_N, t->io, 0);
	if (r.err != GC_HIPFILE_SUCCESS) {
		gc_info("the batch was rejected whole: %s",
			gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
		for (int k = 0; k < B_N; k++)
			hf_expect_read(e, "rejected batch", region(e, k), t->io[k].u.batch.size, 0,
				       (uint64_t)t->io[k].u.batch.file_offset, RD_SEED);
	} else {
		batch_wait(t);
		batch_judge(t);
	}
	hf_release_all(e);
}

/* batch-bad-entry: one dynamic subtest per kind of bad entry. */
void test_batch_bad_entry(void *data)
{
	struct hf_env *e = data;
	struct batch t = { .e = e };

	hf_require(e, GC_HF_HIPFILE);
	gc_variants(gc_fp_bad_entries, &t);
}

/* ------------------------------------------------------ stream-ordered */

static gc_hipfile_async_fn *async_fn(struct hf_env *e, bool write)
{
	gc_hipfile_async_fn *fn = write ? e->h.hf.write_async : e->h.hf.read_async;

	hf_require(e, GC_HF_HIPFILE);
	if (!fn)
		gc_skip("%s (%s) has no hipFile%sAsync", e->h.hf_soname,
			e->h.backend[GC_HF_HIPFILE].how, write ? "Write" : "Read");
	return fn;
}

static void skip_unsupported(struct hf_env *e, gc_hipfile_err r, const char *call)
{
	char b[256];

	if (r.err == GC_HIPFILE_ASYNC_NOT_SUPPORTED)
		gc_skip("%s: %s (hipFile's async API reference: \"Asynchronous IO is not yet "
			"supported on AMD ROCm backends in the current release\")", call,
			gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
}

/* A stream, registered with hipFile where it has hipFileStreamRegister; both held. */
static hipStream_t async_stream(struct hf_env *e)
{
	hipStream_t s;
	gc_hipfile_err r;
	char b[256];

	gc_hip_assert(e->h.hip, e->h.hip->hipStreamCreate(&s));
	hf_hold(e, HF_STREAM, s);
	if (!e->h.hf.stream_register)
		return s;
	r = e->h.hf.stream_register(s, 0);
	skip_unsupported(e, r, "hipFileStreamRegister");
	gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFileStreamRegister: %s",
		    gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	if (e->h.hf.stream_deregister)
		hf_hold(e, HF_FSTREAM, s);
	return s;
}

struct async_case {
	size_t size;
	off_t foff, boff;
};

/* One stream-ordered request; returns the bytes it reports done after the stream drained. */
static ssize_t async_call(struct hf_env *e, bool write, gc_hipfile_handle fh, hipStream_t s,
			  char *data, struct async_case c)
{
	gc_hipfile_async_fn *fn = async_fn(e, write);
	ssize_t done = -12345; /* set once the stream completes it (async_io's comment) */
	off_t boff = data - (char *)e->dev; /* the allocation as base, the target's offset in it */
	gc_hipfile_err r = fn(fh, e->dev, &c.size, &c.foff, &boff, &done, s);
	char b[256];

	skip_unsupported(e, r, write ? "hipFileWriteAsync" : "hipFileReadAsync");
	gc_assert_f(r.err == GC_HIPFILE_SUCCESS, "hipFile%sAsync: %s", write ? "Write" : "Read",
		    gc_hipfile_strerror(&e->h, r, b, sizeof(b)));
	gc_hip_assert(e->h.hip, e->h.hip->hipStreamSynchronize(s));
	return done;
}

static void async_one(struct hf_env *e, bool write, gc_hipfile_handle fh, hipStream_t s,
		      struct async_case c)
{
	char *data = (char *)e->dev + GUARD + c.boff;
	uint64_t lo = 0, hi = (uint64_t)c.foff + c.size + TAIL;
	ssize_t done;

	if (write) {
		hf_file_restore(e, e->wr_bfd, lo, hi, WR_OLD);
		hf_source(e, data, c.size, (uint64_t)c.foff);
	} else {
		hf_poison(e, data, c.size, (uint64_t)c.foff, RD_SEED);
	}
	done = async_call(e, write, fh, s, data, c);
	gc_info("hipFile%sAsync of %zu bytes at %lld (buffer offset %lld): %zd bytes",
		write ? "Write" : "Read", c.size, (long long)c.foff, (long long)c.boff, done);
	gc_assert_f(done == (ssize_t)c.size, "want %zu bytes done, got %zd", c.size, done);
	if (write) {
		hf_expect_source(e, "hipFileWriteAsync", data, c.size, (uint64_t)c.foff);
		hf_expect_written(e, &e->wr, e->wr_bfd, lo, hi, (uint64_t)c.foff, c.size,
				  "hipFileWriteAsync");
	} else {
		hf_expect_read(e, "hipFileReadAsync", data, c.size, c.size, (uint64_t)c.foff,
			       RD_SEED);
	}
}

/*
 * hipFileReadAsync / WriteAsync: the size and offsets are read through
 * their pointers at submission time ("The library reads the pointed-to
 * values at submission time (when the operation is dequeued from the
 * stream), not at the time you call `hipFileReadAsync`."), and of the
 * result pointer: "Pointer populated with the number of bytes read after the
 * operation completes on the stream." [src ROCm/rocm-systems
 * projects/hipfile/docs/reference/api-async-io.rst @ 5b50b9d9ea8b]: after
 * the stream drains, exactly size bytes, byte-exact, for an aligned and a
 * misaligned request.
 */
static void async_io(struct hf_env *e, bool write)
{
	static const struct async_case cases[] = { { MiB, 4096, 0 }, { 4097, 513, 1 } };
	gc_hipfile_handle fh;
	hipStream_t s;

	async_fn(e, write);
	hf_release_all(e);
	hf_driver_ensure(e);
	fh = hf_register_ok(e, write ? e->wr.fd : e->rd.fd);
	s = async_stream(e);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		async_one(e, write, fh, s, cases[i]);
	hf_release_all(e);
}

void test_read_async(void *data)
{
	async_io(data, false);
}

void test_write_async(void *data)
{
	async_io(data, true);
}

/* size-zero, stream-ordered: nothing transferred, nothing changed; the answer recorded. */
void hf_zero_async(struct hf_env *e, bool write)
{
	char *data = (char *)e->dev + GUARD;
	gc_hipfile_async_fn *fn = async_fn(e, write);
	struct async_case c = { 0, 4096, 0 };
	ssize_t done = -12345;
	gc_hipfile_handle fh;
	gc_hipfile_err r;
	hipStream_t s;
	char b[256];

	hf_release_all(e);
	hf_driver_ensure(e);
	fh = hf_register_ok(e, write ? e->wr.fd : e->rd.fd);
	s = async_stream(e);
	hf_poison(e, data, 0, 4096, write ? WR_OLD : RD_SEED);
	if (write)
		hf_file_restore(e, e->wr_bfd, 0, MiB, WR_OLD);
	c.boff = data - (char *)e->dev;
	r = fn(fh, e->dev, &c.size, &c.foff, &c.boff, &done, s);
	skip_unsupported(e, r, write ? "hipFileWriteAsync" : "hipFileReadAsync");
	gc_hip_assert(e->h.hip, e->h.hip->hipStreamSynchronize(s));
	gc_info("hipFile%sAsync(size 0) = %s, bytes done %zd", write ? "Write" : "Read",
		gc_hipfile_strerror(&e->h, r, b, sizeof(b)), done);
	gc_assert_f(r.err != GC_HIPFILE_SUCCESS || done <= 0, "size 0 transferred %zd bytes", done);
	hf_expect_read(e, "size 0 async", data, 0, 0, 4096, write ? WR_OLD : RD_SEED);
	if (write)
		hf_file_expect(&e->wr, e->wr_bfd, 0, MiB, WR_OLD, "size 0 async write");
	hf_release_all(e);
}
