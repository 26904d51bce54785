// SPDX-License-Identifier: MIT
/*
 * cufile_io: batch-bad-entry. The partial-failure contract of gpuconform:
 * a batch with one bad entry either fails that entry alone (its own status,
 * the other entries' bytes right) or is rejected whole with nothing changed.
 * Never a silent partial state. Completions may arrive in any order: they
 * are matched by cookie.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cf_io.h"

#define NENT 4
#define BAD 2            /* the bad entry's index */
#define ENT (64 * KIB)   /* bytes per entry */
#define STRIDE (ENT + GUARD)
#define FSIZE (1 * MiB)

/* The kinds of bad entry (lib/fastpath_subtests.h), a dynamic subtest each. */
GC_FASTPATH_BAD_ENTRIES(batch_case);

struct bcase {
	struct cf_env *e;
	struct gc_fp_file *f;
	void *fh;
	const struct gc_fp_bad_case *bad;
};

static void make_params(struct bcase *c, CUdeviceptr d, void *bad_fh, gc_cufile_io_params *io)
{
	memset(io, 0, sizeof(*io) * NENT);
	for (int i = 0; i < NENT; i++) {
		io[i].mode = GC_CUFILE_BATCH;
		io[i].u.batch.dev_ptr_base = (void *)(uintptr_t)d;
		io[i].u.batch.file_offset = (off_t)(i * ENT);
		io[i].u.batch.dev_ptr_offset = (off_t)(i * STRIDE);
		io[i].u.batch.size = ENT;
		io[i].fh = c->fh;
		io[i].opcode = GC_CUFILE_READ;
		io[i].cookie = (void *)(uintptr_t)(i + 1);
	}
	if (c->bad->kind == GC_FP_BAD_NEGATIVE_OFFSET)
		io[BAD].u.batch.file_offset = -4096;
	else if (c->bad->kind == GC_FP_BAD_PAST_EOF)
		io[BAD].u.batch.file_offset = FSIZE + 4096;
	else if (c->bad->kind == GC_FP_BAD_ODD_SIZE)
		io[BAD].u.batch.file_offset = 3, io[BAD].u.batch.size = 1000;
	else
		io[BAD].fh = bad_fh;
}

static void hang(struct bcase *c, const gc_cufile_io_event *by_cookie, unsigned got)
{
	char pending[64] = "";
	size_t n = 0;

	for (int i = 0; i < NENT; i++)
		if (!by_cookie[i].cookie)
			n += (size_t)snprintf(pending + n, sizeof(pending) - n, " %d", i);
	gc_fail("hang: %u of %d batch entries completed within 10 s; pending entries:%s "
		"(entry %d is the bad one: %s)", got, NENT, pending, BAD, c->bad->name);
}

/* Wait for all NENT completions (10 s watchdog), each placed by its cookie. */
static void collect(struct bcase *c, void *batch, gc_cufile_io_event *by_cookie)
{
	struct timespec t0, now, tmo = { 0, 100 * 1000 * 1000 };
	gc_cufile_io_event ev[NENT];
	unsigned got = 0, nr;
	gc_cufile_err ce;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < NENT) {
		nr = NENT - got;
		ce = c->e->cf.fn.batch_get_status(batch, 0, &nr, ev, &tmo);
		gc_assert_f(ce.err == 0, "cuFileBatchIOGetStatus: %s", gc_cufile_err_name(ce.err));
		for (unsigned i = 0; i < nr; i++) {
			uintptr_t k = (uintptr_t)ev[i].cookie;

			gc_assert_f(k >= 1 && k <= NENT, "completion with unknown cookie %p",
				    ev[i].cookie);
			gc_assert_f(by_cookie[k - 1].cookie == NULL, "entry %lu completed twice",
				    (unsigned long)k - 1);
			by_cookie[k - 1] = ev[i];
			got++;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= 10)
			hang(c, by_cookie, got);
	}
}

static const char *status_name(int s)
{
	switch (s) {
	case GC_CUFILE_WAITING: return "WAITING";
	case GC_CUFILE_PENDING: return "PENDING";
	case GC_CUFILE_INVALID: return "INVALID";
	case GC_CUFILE_CANCELED: return "CANCELED";
	case GC_CUFILE_COMPLETE: return "COMPLETE";
	case GC_CUFILE_TIMEOUT: return "TIMEOUT";
	case GC_CUFILE_FAILED: return "FAILED";
	default: return "unknown status";
	}
}

/* Entry i's region of the buffer holds what its event says, and nothing else changed. */
static void check_entry(struct bcase *c, CUdeviceptr d, gc_cufile_io_params *io, int i,
			const gc_cufile_io_event *ev)
{
	uint64_t done = ev->status == GC_CUFILE_COMPLETE ? ev->ret : 0;
	char what[96];

	snprintf(what, sizeof(what), "entry %d (%s, ret %zd)", i, status_name(ev->status),
		 (ssize_t)ev->ret);
	if (i != BAD) {
		gc_assert_f(ev->status == GC_CUFILE_COMPLETE && ev->ret == ENT,
			    "good %s: a batch that was accepted must complete it", what);
	} else {
		gc_assert_f(ev->status != GC_CUFILE_COMPLETE || done <= io[i].u.batch.size,
			    "bad %s: more bytes than requested", what);
	}
	if (io[i].u.batch.file_offset < 0)
		gc_assert_f(done == 0, "bad %s: bytes from a negative offset", what);
	cf_dev_expect(c->e, d + (CUdeviceptr)(i * STRIDE), STRIDE, 0, done,
		      (uint64_t)io[i].u.batch.file_offset, SEED_A, what);
}

static void batch_case(void *ctx, const struct gc_fp_bad_case *bad)
{
	struct bcase *c = ctx;
	gc_cufile_io_params io[NENT];
	gc_cufile_io_event by_cookie[NENT];
	void *batch = NULL, *bad_fh = NULL;
	gc_cufile_err ce;
	CUdeviceptr d;
	int bad_fd = -1;

	c->bad = bad;
	d = cf_dev_alloc(c->e, NENT * STRIDE);
	if (bad->kind == GC_FP_BAD_CLOSED_HANDLE) {
		bad_fd = fcntl(c->f->fd, F_DUPFD_CLOEXEC, 0);
		gc_assert_syscall(bad_fd);
		bad_fh = cf_register_ok(c->e, bad_fd);
		close(bad_fd);
	}
	make_params(c, d, bad_fh, io);
	for (int i = 0; i < NENT; i++)
		cf_dev_poison(c->e, d + (CUdeviceptr)(i * STRIDE), STRIDE,
			      (uint64_t)io[i].u.batch.file_offset, SEED_A);
	ce = c->e->cf.fn.batch_setup(&batch, NENT);
	gc_assert_f(ce.err == 0, "cuFileBatchIOSetUp: %s", gc_cufile_err_name(ce.err));
	ce = c->e->cf.fn.batch_submit(batch, NENT, io, 0);
	memset(by_cookie, 0, sizeof(by_cookie));
	if (ce.err != 0) {
		gc_info("%s: the whole batch was rejected: %s", bad->name,
			gc_cufile_err_name(ce.err));
		for (int i = 0; i < NENT; i++)
			cf_dev_expect(c->e, d + (CUdeviceptr)(i * STRIDE), STRIDE, 0, 0,
				      (uint64_t)io[i].u.batch.file_offset, SEED_A,
				      "rejected batch");
	} else {
		collect(c, batch, by_cookie);
		for (int i = 0; i < NENT; i++)
			check_entry(c, d, io, i, &by_cookie[i]);
		gc_info("%s: accepted; bad entry %s, ret %zd; the other 3 complete and exact",
			bad->name, status_name(by_cookie[BAD].status),
			(ssize_t)by_cookie[BAD].ret);
	}
	c->e->cf.fn.batch_destroy(batch);
	if (bad_fh)
		c->e->cf.fn.handle_deregister(bad_fh);
	cf_dev_free(c->e, d);
}

/*
 * batch-bad-entry: per kind of bad entry (a negative offset, past EOF, an odd
 * size at an odd offset, a handle whose descriptor was closed), which of the
 * two lawful outcomes cuFile gives. An odd size is lawful for the fallback:
 * it must then complete with exact bytes; past EOF may complete with 0.
 */
void test_batch_bad_entry(void *data)
{
	struct cf_env *e = data;
	struct gc_fp_file f;
	struct bcase c = { .e = e, .f = &f };

	cf_env_gpu(e);
	if (!e->cf.fn.batch_setup || !e->cf.fn.batch_submit || !e->cf.fn.batch_get_status ||
	    !e->cf.fn.batch_destroy)
		gc_skip("%s has no cuFileBatchIO* entry points", e->cf.soname);
	c.fh = cf_file_registered(e, "batch", FSIZE, SEED_A, O_RDWR, &f);
	gc_variants(gc_fp_bad_entries, &c);
	e->cf.fn.handle_deregister(c.fh);
	gc_fp_file_destroy(&f);
}
