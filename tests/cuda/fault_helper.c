// SPDX-License-Identifier: MIT
/*
 * cuda_fault_helper [DEVICE]: a write through a read-only VMM mapping, in a
 * process of its own. cuda_mem@read-only-fault execs it (a forked child of a
 * process that initialised CUDA must not use CUDA) and judges its exit status:
 *
 *   0  the write faulted (CUDA_ERROR_ILLEGAL_ADDRESS at the launch or the
 *      synchronisation after it)
 *   1  the write succeeded: read-only access was not enforced
 *   2  anything else: CUDA could not be opened, the setup or the read through
 *      the read-only mapping failed, the write failed with another error
 *
 * Steps: map one allocation read-write, fill it and check it on the GPU; set
 * the mapping read-only (cuMemSetAccess PROT_READ) and read it back with
 * cuMemGetAccess; check the data through the read-only mapping (a read must
 * succeed); then launch gc_fill_u32 over it and synchronise. Every step
 * prints what it saw. A faulted context is left as it is: exiting the
 * process gives everything back.
 *
 * Not a suite binary (the runner does not collect it) and not a gc_main()
 * test: it is the subject of one, so it reports through its exit status.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "fault_helper.h"
#include "gc_cuda.h"

#define SEED_RW 0x524f3031u /* what the read-write mapping is filled with */
#define SEED_RO 0x524f3032u /* what the write through the read-only mapping tries */

static const struct gc_cuda *g_cu; /* for CUresult names in messages */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	fputs(FAULT_HELPER_NAME ": ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static const char *err_name(CUresult r)
{
	static char buf[160];

	return gc_cu_strerror(g_cu, r, buf, sizeof(buf));
}

/* Exit FAULT_HELPER_ERROR unless r is CUDA_SUCCESS. */
static void must(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return;
	say("%s failed: %s", what, err_name(r));
	exit(FAULT_HELPER_ERROR);
}

struct helper {
	struct gc_cuda *cu;
	struct gc_cu_kernels k;
	int dev;
	struct gc_vmm m;
};

/* The GPU check of the whole allocation against seed; exits 2 on any mismatch. */
static void must_hold_pattern(struct helper *h, uint32_t seed, const char *what)
{
	uint64_t bad = 0, first = 0, n = h->m.size / 4;

	must(gc_cu_check_u32(h->cu, &h->k, h->m.va, n, seed, &bad, &first), what);
	if (bad) {
		say("%s: %" PRIu64 " of %" PRIu64 " words differ from the pattern, first at "
		    "%" PRIu64, what, bad, n, first);
		exit(FAULT_HELPER_ERROR);
	}
	say("%s: all %" PRIu64 " words hold the pattern", what, n);
}

static void open_cuda(struct helper *h)
{
	char why[512];
	int err = gc_cuda_open(&h->cu, why, sizeof(why));

	if (err) {
		say("cannot open CUDA: %s", why);
		exit(FAULT_HELPER_ERROR);
	}
	g_cu = h->cu;
	if (h->dev < 0 || h->dev >= h->cu->n_devices) {
		say("no device %d (%d present)", h->dev, h->cu->n_devices);
		exit(FAULT_HELPER_ERROR);
	}
	must(gc_cuda_use(h->cu, h->dev), "cuCtxSetCurrent");
	if (gc_cu_kernels_load(h->cu, &h->k, why, sizeof(why))) {
		say("%s", why);
		exit(FAULT_HELPER_ERROR);
	}
}

/* One minimum-granularity allocation, read-write, filled and checked. */
static void map_read_write(struct helper *h)
{
	must(gc_vmm_alloc(h->cu, h->dev, 1, &h->m), "gc_vmm_alloc (create, reserve, map, RW)");
	must(gc_cu_fill_u32(h->cu, &h->k, h->m.va, h->m.size / 4, SEED_RW, 0),
	     "gc_fill_u32 launch (read-write)");
	must(h->cu->cuCtxSynchronize(), "cuCtxSynchronize after the read-write fill");
	must_hold_pattern(h, SEED_RW, "read-write mapping, GPU check");
}

static void make_read_only(struct helper *h)
{
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = h->dev };
	unsigned long long flags = ~0ull;

	must(gc_vmm_set_access(h->cu, h->m.va, h->m.size, &h->dev, 1,
			       CU_MEM_ACCESS_FLAGS_PROT_READ), "cuMemSetAccess(PROT_READ)");
	must(h->cu->cuMemGetAccess(&flags, &loc, h->m.va), "cuMemGetAccess");
	if (flags != CU_MEM_ACCESS_FLAGS_PROT_READ) {
		say("cuMemGetAccess reports flags %#llx after cuMemSetAccess(PROT_READ = %#x)",
		    flags, (unsigned)CU_MEM_ACCESS_FLAGS_PROT_READ);
		exit(FAULT_HELPER_ERROR);
	}
	say("mapping at %#llx (%zu bytes) is now PROT_READ for device %d",
	    (unsigned long long)h->m.va, h->m.size, h->dev);
}

/* The write did not fault: say whether it landed or was dropped. */
static void report_unfaulted_write(struct helper *h)
{
	uint64_t bad = 0, first = 0;
	CUresult r = gc_cu_check_u32(h->cu, &h->k, h->m.va, h->m.size / 4, SEED_RO, &bad,
				     &first);

	say("write through the read-only mapping SUCCEEDED (no error); the memory %s",
	    r ? err_name(r) : bad ? "still holds the old data (the write was dropped)"
				  : "holds the new data (the write landed)");
}

/* The write through the read-only mapping; returns the exit status. */
static int write_read_only(struct helper *h)
{
	CUresult r = gc_cu_fill_u32(h->cu, &h->k, h->m.va, h->m.size / 4, SEED_RO, 0);
	const char *where = "at the launch";

	if (r == CUDA_SUCCESS) {
		r = h->cu->cuCtxSynchronize();
		where = "at cuCtxSynchronize";
	}
	if (r == CUDA_ERROR_ILLEGAL_ADDRESS) {
		say("write through the read-only mapping faulted %s: %s", where, err_name(r));
		return FAULT_HELPER_FAULTED;
	}
	if (r != CUDA_SUCCESS) {
		say("write through the read-only mapping failed %s with %s, not "
		    "CUDA_ERROR_ILLEGAL_ADDRESS", where, err_name(r));
		return FAULT_HELPER_ERROR;
	}
	report_unfaulted_write(h);
	return FAULT_HELPER_WROTE;
}

int main(int argc, char **argv)
{
	struct helper h = { .dev = argc > 1 ? atoi(argv[1]) : 0 };
	int status;

	open_cuda(&h);
	map_read_write(&h);
	make_read_only(&h);
	must_hold_pattern(&h, SEED_RW, "read through the read-only mapping, GPU check");
	status = write_read_only(&h);
	if (status == FAULT_HELPER_WROTE)
		must(gc_vmm_free(h.cu, &h.m), "gc_vmm_free");
	say("exit %d", status);
	return status;
}
