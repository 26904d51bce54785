/*
 * cufile_io@read-across-eof: stale bytes past EOF in a cuFileRead's buffer (compat mode).
 * Build: cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcufile -lcuda
 * Run:   ./repro [SCRATCH_DIR]   (default $GPUCONFORM_SCRATCH_DIR, else /var/tmp)
 *
 * cufile.h (cuFileRead): "@note  If the devPtr is not registered with @ref cuFileBufRegister,
 * the data will be buffered through preallocated pinned buffers." "@note  This is useful for
 * applications that need to perform IO to unaligned file offsets and/or size."
 * [src denglin-github/cuda11_cudnn8 include/cufile.h @ 20c191daf9a2]. It returns the `size of
 * bytes successfully read`; checked: the requested bytes past that count are left untouched or
 * zero-filled (as an O_DIRECT pread(2) leaves them), never stale file data.
 * The suite's steps (tests/cufile/edge.c): an 8292-byte file opened O_DIRECT, an unregistered
 * 32 KiB device buffer filled with a known pattern before each read, an aligned read across EOF
 * (16384 bytes at 4096), then the one checked: 4097 bytes at 8000 into buffer offset 1.
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

#define FSIZE 8292 /* 8 KiB + 100: EOF not block-aligned */
#define TOTAL (32 * 1024)

/* The suite turns level-3 statistics on where the library has them (weak: libcufile >= 1.14). */
CUfileError_t cuFileSetStatsLevel(int level) __attribute__((weak));
CUfileError_t cuFileStatsStart(void) __attribute__((weak));

static char path[4200];
static void remove_file(void) { if (path[0]) unlink(path); }

/* The test file's byte at offset o: the suite's pattern (splitmix64 of seed ^ o / 8). */
static uint8_t pat(uint64_t o)
{
	uint64_t x = (0xa11ce001u ^ (o >> 3)) + 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return (uint8_t)((x ^ (x >> 31)) >> (8 * (o & 7)));
}
static uint8_t untouched(uint64_t key) { return (uint8_t)~pat(key); }

static int cannot(const char *call, const char *why, long code)
{
	return printf("cannot check: %s failed: %s (%ld)\n", call, why, code), 2;
}
#define CU(call) do { CUresult r_ = (call); const char *s_ = "CUresult"; \
	if (r_) return cuGetErrorName(r_, &s_), cannot(#call, s_, r_); } while (0)
#define CF(call) do { CUfileError_t e_ = (call); \
	if (e_.err) return cannot(#call, cufileop_status_error(e_.err), e_.err); } while (0)

/* Before each read, as the suite: byte j of the buffer holds untouched(key + j). */
static CUresult poison(CUdeviceptr d, uint8_t *h, uint64_t key)
{
	for (uint64_t j = 0; j < TOTAL; j++)
		h[j] = untouched(key + j);
	return cuMemcpyHtoD(d, h, TOTAL);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("GPUCONFORM_SCRATCH_DIR");
	static uint8_t file[FSIZE], h[TOTAL];
	CUfileDescr_t desc = { 0 };
	CUfileHandle_t fh;
	CUdeviceptr d;
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
	snprintf(path, sizeof(path), "%s/repro-read-across-eof-XXXXXX", dir ? dir : "/var/tmp");
	if ((bfd = mkostemp(path, O_CLOEXEC)) < 0)
		return cannot("mkostemp in the scratch directory", strerror(errno), errno);
	atexit(remove_file);
	for (uint64_t o = 0; o < FSIZE; o++)
		file[o] = pat(o);
	if (pwrite(bfd, file, FSIZE, 0) != FSIZE || fsync(bfd) != 0)
		return cannot("writing the test file", strerror(errno), errno);
	if ((fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC)) < 0)
		return cannot("open O_DIRECT", strerror(errno), errno);
	close(bfd);
	desc.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	desc.handle.fd = fd;
	CF(cuFileHandleRegister(&fh, &desc));
	CU(cuMemAlloc(&d, TOTAL));

	/* The request before: aligned, across EOF (the suite saw 4196, the rest zero-filled). */
	CU(poison(d, h, 4096 - 0));
	ssize_t n1 = cuFileRead(fh, (void *)(uintptr_t)d, 16384, 4096, 0);
	if (n1 < 0)
		return cannot("cuFileRead(16384 bytes at 4096)", "returned", (long)n1);
	/* The request checked: 4097 bytes at 8000 (292 before EOF) into buffer offset 1. */
	CU(poison(d, h, 8000 - 1));
	ssize_t n = cuFileRead(fh, (void *)(uintptr_t)d, 4097, 8000, 1);
	if (n < 0 || n > 4097)
		return cannot("cuFileRead(4097 bytes at 8000)", "returned", (long)n);
	CU(cuMemcpyDtoH(h, d, TOTAL));

	uint64_t from = 1 + (uint64_t)n, to = 1 + 4097, zero = 0, kept = 0;
	for (uint64_t j = from; j < to; j++)
		zero += h[j] == 0, kept += h[j] == untouched(8000 - 1 + j);
	printf("expected: cuFileRead(4097 bytes at 8000 of %d, buffer offset 1) = %d; the buffer's "
	       "bytes [%llu, %llu) past it untouched or all zero\n", FSIZE, FSIZE - 8000,
	       (unsigned long long)(1 + FSIZE - 8000), (unsigned long long)to);
	printf("actual:   = %zd (the read before it: %zd); of the %llu bytes past it, %llu untouched, "
	       "%llu zero", n, n1, (unsigned long long)(to - from), (unsigned long long)kept,
	       (unsigned long long)zero);
	uint8_t *hit = to - from >= 64 ? memmem(file, FSIZE, h + from, 64) : NULL;
	if (hit)
		printf("; the first 64 equal the file's bytes at offset %td: stale data", hit - file);
	printf("\n");
	cuFileHandleDeregister(fh);
	cuMemFree(d);
	close(fd);
	cuFileDriverClose();
	return zero == to - from || kept == to - from ? 0 : 1;
}
