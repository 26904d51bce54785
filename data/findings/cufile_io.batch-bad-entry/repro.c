/*
 * cufile_io@batch-bad-entry: a batch entry whose handle's descriptor was closed never completes,
 * nor does the entry after it (compat mode).
 * Build: cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcufile -lcuda
 * Run:   ./repro [SCRATCH_DIR]   (default $GPUCONFORM_SCRATCH_DIR, else /var/tmp)
 *
 * cufile.h gives a batch entry that cannot be served a status of its own, CUFILE_INVALID
 * (`request was ill-formed or could not be enqueued`) or CUFILE_FAILED (`unable to complete`)
 * [src denglin-github/cuda11_cudnn8 include/cufile.h @ 20c191daf9a2]. Checked: a batch of 4
 * reads whose entry 2 uses a handle whose descriptor was closed is rejected by
 * cuFileBatchIOSubmit, or all 4 entries complete within 10 s (entry 2 with any status, the
 * others CUFILE_COMPLETE with their 64 KiB).
 * The suite's steps (tests/cufile/batch.c): a 1 MiB file opened O_DIRECT and registered; one
 * batch per kind of bad entry 2, in its order (a negative offset, past EOF, an odd size at an
 * odd offset: run first, as the suite does, not judged), then the one checked: entry 2's handle
 * registered on a dup of the descriptor, the dup closed before the batch.
 * Exit 1 while the finding holds, 0 once the promise holds, 2 when it cannot check.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cufile.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NENT 4
#define BAD 2
#define ENT (64 * 1024)
#define STRIDE (ENT + 4096) /* entry i reads into buffer offset i * STRIDE */
#define FSIZE (1024 * 1024)

/* The suite turns level-3 statistics on where the library has them (weak: libcufile >= 1.14). */
CUfileError_t cuFileSetStatsLevel(int level) __attribute__((weak));
CUfileError_t cuFileStatsStart(void) __attribute__((weak));

static const char *const kinds[] = { "negative-offset", "past-eof", "odd-size", "closed-handle" };
static char path[4200];
static void remove_file(void) { if (path[0]) unlink(path); }

static int cannot(const char *call, const char *why, long code)
{
	return printf("cannot check: %s failed: %s (%ld)\n", call, why, code), 2;
}
#define CU(call) do { CUresult r_ = (call); const char *s_ = "CUresult"; \
	if (r_) return cuGetErrorName(r_, &s_), cannot(#call, s_, r_); } while (0)
#define CF(call) do { CUfileError_t e_ = (call); \
	if (e_.err) return cannot(#call, cufileop_status_error(e_.err), e_.err); } while (0)

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("GPUCONFORM_SCRATCH_DIR");
	static char zeros[FSIZE];
	CUfileDescr_t desc = { 0 };
	CUfileHandle_t fh, bad_fh = NULL;
	CUcontext ctx;
	CUdevice dev;
	int bfd, fd;

	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	if (access("/proc/driver/nvidia-fs/version", F_OK) == 0)
		return cannot("compat mode", "nvidia-fs is loaded", 0);
	CF(cuFileDriverOpen());
	if (cuFileSetStatsLevel && cuFileStatsStart && cuFileSetStatsLevel(3).err == 0)
		cuFileStatsStart();
	/* The file: written buffered, fsync'd, reopened O_DIRECT, kept linked (compat mode reopens it). */
	snprintf(path, sizeof(path), "%s/repro-batch-bad-entry-XXXXXX", dir ? dir : "/var/tmp");
	if ((bfd = mkostemp(path, O_CLOEXEC)) < 0)
		return cannot("mkostemp in the scratch directory", strerror(errno), errno);
	atexit(remove_file);
	if (pwrite(bfd, zeros, FSIZE, 0) != FSIZE || fsync(bfd) != 0)
		return cannot("writing the test file", strerror(errno), errno);
	if ((fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC)) < 0)
		return cannot("open O_DIRECT", strerror(errno), errno);
	close(bfd);
	desc.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	desc.handle.fd = fd;
	CF(cuFileHandleRegister(&fh, &desc));

	printf("expected: closed-handle: the batch rejected at submit, or all 4 entries complete "
	       "within 10 s, entries 0, 1, 3 with %d bytes each\n", ENT);
	for (int kind = 0; kind < 4; kind++) {
		const char *tag = kind == 3 ? "actual:  " : "before: ";
		CUfileIOParams_t io[NENT] = { 0 };
		CUfileIOEvents_t ev[NENT], done[NENT] = { 0 };
		CUfileBatchHandle_t batch;
		CUfileError_t ce;
		struct timespec t0, now, tmo = { 0, 100 * 1000 * 1000 };
		unsigned got = 0, nr;
		CUdeviceptr d;

		CU(cuMemAlloc(&d, NENT * STRIDE));
		if (kind == 3) {
			desc.handle.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
			CF(cuFileHandleRegister(&bad_fh, &desc));
			close(desc.handle.fd);
		}
		for (int i = 0; i < NENT; i++) {
			io[i].mode = CUFILE_BATCH;
			io[i].u.batch.devPtr_base = (void *)(uintptr_t)d;
			io[i].u.batch.file_offset = (off_t)i * ENT;
			io[i].u.batch.devPtr_offset = (off_t)i * STRIDE;
			io[i].u.batch.size = ENT;
			io[i].fh = i == BAD && kind == 3 ? bad_fh : fh;
			io[i].opcode = CUFILE_READ;
			io[i].cookie = (void *)(uintptr_t)(i + 1);
		}
		if (kind == 0)
			io[BAD].u.batch.file_offset = -4096;
		if (kind == 1)
			io[BAD].u.batch.file_offset = FSIZE + 4096;
		if (kind == 2)
			io[BAD].u.batch.file_offset = 3, io[BAD].u.batch.size = 1000;
		CF(cuFileBatchIOSetUp(&batch, NENT));
		if ((ce = cuFileBatchIOSubmit(batch, NENT, io, 0)).err != CU_FILE_SUCCESS) {
			printf("%s%s: rejected at submit (cuFile status %d)\n", tag, kinds[kind], ce.err);
			cuFileBatchIODestroy(batch);
			cuMemFree(d);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do { /* completions come in any order: placed by cookie */
			nr = NENT - got;
			CF(cuFileBatchIOGetStatus(batch, 0, &nr, ev, &tmo));
			for (unsigned k = 0; k < nr; k++) {
				uintptr_t c = (uintptr_t)ev[k].cookie;
				if (c >= 1 && c <= NENT && !done[c - 1].cookie)
					done[c - 1] = ev[k], got++;
			}
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (got < NENT && now.tv_sec - t0.tv_sec < 10);
		printf("%s%s: %u of 4 entries completed within 10 s;", tag, kinds[kind], got);
		for (int i = 0; i < NENT; i++)
			if (done[i].cookie)
				printf(" %d: status 0x%x, ret %zd;", i, (unsigned)done[i].status,
				       (ssize_t)done[i].ret);
			else
				printf(" %d: pending;", i);
		printf("\n");
		int ok = got == NENT;
		for (int i = 0; i < NENT; i++)
			ok &= i == BAD || (done[i].status == CUFILE_COMPLETE && done[i].ret == ENT);
		if (!ok) { /* pending entries: leave without destroying the batch, as the suite does */
			fflush(stdout);
			remove_file();
			_exit(kind == 3 ? 1 : 2);
		}
		cuFileBatchIODestroy(batch);
		cuMemFree(d);
	}
	cuFileHandleDeregister(bad_fh);
	cuFileHandleDeregister(fh);
	close(fd);
	cuFileDriverClose();
	return 0;
}
