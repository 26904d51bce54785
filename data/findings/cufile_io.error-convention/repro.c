/*
 * cufile_io@error-convention: cuFileRead/cuFileWrite errors in neither documented form (compat).
 * Build: cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcufile -lcuda
 * Run:   ./repro [SCRATCH_DIR]   (default $GPUCONFORM_SCRATCH_DIR, else /var/tmp)
 *
 * cufile.h (cuFileRead, cuFileWrite): "@return  -1 on error, in which case errno is set to
 * indicate filesystem errors." "@return  all other errors will return a negative integer value
 * of @ref CUfileOpError enum value." [src denglin-github/cuda11_cudnn8 include/cufile.h
 * @ 20c191daf9a2]. Checked, for the suite's three mistakes (tests/cufile/edge.c, conv_one, in
 * its order, each on a new 64 KiB file opened O_DIRECT and a 64 KiB device buffer): the result
 * is a negative CUfileOpError, or -1 with the errno that pread(2)/pwrite(2) give for the same
 * mistake (a negative offset: EINVAL; a closed descriptor: EBADF; a write through a descriptor
 * opened O_RDONLY: EBADF), never -1 with a cuFile status in errno.
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

#define FSIZE (64 * 1024)

/* The suite turns level-3 statistics on where the library has them (weak: libcufile >= 1.14). */
CUfileError_t cuFileSetStatsLevel(int level) __attribute__((weak));
CUfileError_t cuFileStatsStart(void) __attribute__((weak));

static const struct { int code; const char *name; } statuses[] = {
#define CUFILE_OP(code, name, string) { code, #name },
	CUFILEOP_STATUS_ENTRIES
#undef CUFILE_OP
};
static const char *status_name(long code)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].code == code && code > CUFILEOP_BASE_ERR)
			return statuses[i].name;
	return NULL;
}

static const struct conv {
	const char *name;
	int flags, write, close_fd;
	off_t foff;
	int want; /* what pread(2)/pwrite(2) give */
} cases[] = {
	{ "negative-offset", O_RDWR, 0, 0, -4096, EINVAL },
	{ "closed-fd", O_RDWR, 0, 1, 0, EBADF },
	{ "write-rdonly", O_RDONLY, 1, 0, 0, EBADF },
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
	static char zeros[FSIZE];
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
		const struct conv *c = &cases[i];
		CUfileDescr_t desc = { 0 };
		CUfileHandle_t fh;
		CUdeviceptr d;
		int bfd, fd, err;
		ssize_t r;

		/* A file written buffered, fsync'd, reopened O_DIRECT; linked while registered. */
		snprintf(path, sizeof(path), "%s/repro-error-convention-XXXXXX", dir ? dir : "/var/tmp");
		if ((bfd = mkostemp(path, O_CLOEXEC)) < 0)
			return cannot("mkostemp in the scratch directory", strerror(errno), errno);
		if (pwrite(bfd, zeros, FSIZE, 0) != FSIZE || fsync(bfd) != 0)
			return cannot("writing the test file", strerror(errno), errno);
		if ((fd = open(path, c->flags | O_DIRECT | O_CLOEXEC)) < 0)
			return cannot("open O_DIRECT", strerror(errno), errno);
		close(bfd);
		desc.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
		desc.handle.fd = fd;
		CF(cuFileHandleRegister(&fh, &desc));
		CU(cuMemAlloc(&d, FSIZE));
		if (c->close_fd)
			close(fd), fd = -1;
		errno = 0;
		r = c->write ? cuFileWrite(fh, (const void *)(uintptr_t)d, 4096, c->foff, 0)
			     : cuFileRead(fh, (void *)(uintptr_t)d, 4096, c->foff, 0);
		err = errno;
		cuFileHandleDeregister(fh);
		cuMemFree(d);
		if (fd >= 0)
			close(fd);
		unlink(path);
		path[0] = 0;

		const char *ename = strerrorname_np(err), *sname = status_name(err);
		printf("expected: %s: cuFile%s(4096 bytes at %lld) = -1 with errno %s, or -CU_FILE_*\n",
		       c->name, c->write ? "Write" : "Read", (long long)c->foff, strerrorname_np(c->want));
		if (r == -1)
			printf("actual:   %s: -1 with errno %d (%s)\n", c->name, err,
			       ename ? ename : sname ? sname : "?");
		else
			printf("actual:   %s: %zd%s%s\n", c->name, r, r < 0 ? " = -" : "",
			       r < 0 ? (status_name(-r) ? status_name(-r) : "unknown") : "");
		broken += !((r == -1 && err == c->want) || (r < -1 && status_name(-r)));
	}
	cuFileDriverClose();
	return broken ? 1 : 0;
}
