/*
 * cufile_io@read-async: cuFileReadAsync at an unaligned file offset reports -5 bytes read
 * (compat mode).
 * Build: cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcufile -lcuda
 * Run:   ./repro [SCRATCH_DIR]   (default $GPUCONFORM_SCRATCH_DIR, else /var/tmp)
 *
 * cufile.h (cuFileReadAsync), read from libcufile-dev 1.9.1.3~12.4.1 (no stored repository holds
 * a cufile.h with it): "@param bytes_read_p  pointer to the number of bytes that were
 * successfully read." "@note  If the bufPtr_base is not registered with @ref cuFileBufRegister,
 * the data will be buffered through preallocated pinned buffers." "@note  This is useful for
 * applications that need to perform IO to unaligned file offsets and/or size." Checked: once
 * the stream has run it, each read below has status CU_FILE_SUCCESS and *bytes_read_p equal to
 * its size (every byte is inside the file).
 * The suite's steps (tests/cufile/conc.c, async_case), its three cases in order: per case a new
 * file of foff + size + 4096 bytes opened O_DIRECT and registered, an unregistered device buffer
 * of boff + size + 4096 bytes, a stream from cuStreamCreate(&s, 0) (not registered with
 * cuFileStreamRegister), cuFileReadAsync, cuStreamSynchronize, cuFileStreamDeregister,
 * cuStreamDestroy. The first case (aligned) is the control the suite sees pass.
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
#include <unistd.h>

#define MIB (1024 * 1024)

/* The suite turns level-3 statistics on where the library has them (weak: libcufile >= 1.14). */
CUfileError_t cuFileSetStatsLevel(int level) __attribute__((weak));
CUfileError_t cuFileStatsStart(void) __attribute__((weak));

static const struct { size_t size; off_t foff, boff; } cases[] = {
	{ 4 * MIB, 4096, 0 },
	{ 4097, 512, 1 },
	{ MIB + 4096, MIB + 1, 4096 },
};

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
	CUcontext ctx;
	CUdevice dev;
	int broken = 0;

	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	if (access("/proc/driver/nvidia-fs/version", F_OK) == 0)
		return cannot("compat mode", "nvidia-fs is loaded", 0);
	CF(cuFileDriverOpen());
	if (cuFileSetStatsLevel && cuFileStatsStart && cuFileSetStatsLevel(3).err == 0)
		cuFileStatsStart();
	atexit(remove_file);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t size = cases[i].size, fsize = (size_t)cases[i].foff + size + 4096;
		off_t foff = cases[i].foff, boff = cases[i].boff;
		ssize_t done = -1;
		CUfileDescr_t desc = { 0 };
		CUfileHandle_t fh;
		CUfileError_t ce;
		CUdeviceptr d;
		CUstream s;
		int bfd, fd;

		/* A file written buffered, fsync'd, reopened O_DIRECT; linked while registered. */
		snprintf(path, sizeof(path), "%s/repro-read-async-XXXXXX", dir ? dir : "/var/tmp");
		char *data = calloc(1, fsize);
		if (!data || (bfd = mkostemp(path, O_CLOEXEC)) < 0)
			return cannot("mkostemp in the scratch directory", strerror(errno), errno);
		if (pwrite(bfd, data, fsize, 0) != (ssize_t)fsize || fsync(bfd) != 0)
			return cannot("writing the test file", strerror(errno), errno);
		if ((fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC)) < 0)
			return cannot("open O_DIRECT", strerror(errno), errno);
		close(bfd);
		free(data);
		desc.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
		desc.handle.fd = fd;
		CF(cuFileHandleRegister(&fh, &desc));
		CU(cuMemAlloc(&d, (size_t)boff + size + 4096));
		CU(cuStreamCreate(&s, 0));
		ce = cuFileReadAsync(fh, (void *)(uintptr_t)d, &size, &foff, &boff, &done, s);
		CU(cuStreamSynchronize(s));
		cuFileStreamDeregister(s);
		CU(cuStreamDestroy(s));
		cuFileHandleDeregister(fh);
		cuMemFree(d);
		close(fd);
		unlink(path);
		path[0] = 0;
		printf("expected: cuFileReadAsync(size %zu, file offset %lld, buffer offset %lld): "
		       "status 0, bytes read %zu\n", cases[i].size, (long long)cases[i].foff,
		       (long long)cases[i].boff, cases[i].size);
		printf("actual:   status %d, bytes read %zd\n", ce.err, done);
		broken += ce.err != CU_FILE_SUCCESS || done != (ssize_t)cases[i].size;
	}
	cuFileDriverClose();
	return broken ? 1 : 0;
}
