/*
 * hipfile_io@batch-bad-entry, predicted from the source (not yet seen on
 * hardware): hipFile accepts a batch (SetUp and Submit succeed), then never
 * reports its entries: hipFileBatchIOGetStatus fails whatever it is given.
 *
 * cc -std=c11 -O2 -Wall -Wextra -D__HIP_PLATFORM_AMD__ -o repro repro.c -I/opt/rocm/include -L/opt/rocm/lib -lhipfile -lamdhip64
 *
 * hipFile's batch API page: "Batch IO operations are currently not supported
 * in hipFile. API calls from the batch section of the reference manual will
 * fail and return error codes." [src ROCm/hipFile docs/api/batch.rst @
 * e875da7de04c] So a batch is refused (at SetUp or Submit), or, once
 * accepted, every entry reports a final status: never an accepted batch whose
 * entries are never reported.
 *
 * The prediction: hipFileBatchIOSetUp creates a context, hipFileBatchIOSubmit
 * queues the entries it can look up, and hipFileBatchIOGetStatus is `throw
 * std::runtime_error("Not Implemented");`, returned as hipFileInternalError
 * [src ROCm/hipFile src/amd_detail/hipfile.cpp @ e875da7de04c].
 *
 * As the suite's past-eof case: 4 reads of 64 KiB at file offsets 4096 +
 * k x 64 KiB into one hipMalloc'd buffer (base + offset 4 KiB + k x 80 KiB),
 * entry 2 at 1 MiB past EOF, through a handle of the file opened O_DIRECT
 * after hipFileDriverOpen; GetStatus(min 1, up to 4, 1 s) until 4 entries
 * reported or 30 s. The file: 1 MiB in argv[1] (default:
 * $GPUCONFORM_SCRATCH_DIR, else /var/tmp), removed at the end.
 * Exit 1: an accepted batch did not report its 4 entries (the prediction);
 * 0: refused, or all 4 reported; 2: cannot check (no GPU, no O_DIRECT, a
 * setup call failed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <hipfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KIB 1024
#define FILE_SIZE (1024 * KIB)
#define N 4
#define BAD 2
#define SIZE (64 * KIB)
#define STRIDE (SIZE + 16 * KIB)

#define HF(call) do { hipFileError_t r_ = (call); if (r_.err != hipFileSuccess) { \
	printf("cannot check: %s: %s\n", #call, hipFileGetOpErrorString(r_.err)); \
	goto out; } } while (0)

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("GPUCONFORM_SCRATCH_DIR");
	char path[4096], *buf = malloc(FILE_SIZE);
	hipFileIOParams_t io[N];
	hipFileIOEvents_t ev[N];
	hipFileBatchHandle_t b;
	hipFileHandle_t fh;
	hipFileError_t r;
	int fd = -1, n = 0, got = 0, rc = 2, status[N] = { 0 };
	void *dev = NULL;

	if (hipGetDeviceCount(&n) != hipSuccess || n < 1)
		return printf("cannot check: no AMD GPU (hipGetDeviceCount)\n"), 2;
	snprintf(path, sizeof(path), "%s/hipfile-batch-XXXXXX", dir && *dir ? dir : "/var/tmp");
	fd = mkstemp(path);
	for (int i = 0; buf && i < FILE_SIZE; i++)
		buf[i] = (char)(i * 131 + 7);
	if (fd < 0 || !buf || pwrite(fd, buf, FILE_SIZE, 0) != FILE_SIZE || fsync(fd)) {
		printf("cannot check: writing a 1 MiB file in %s: %s\n", path, strerror(errno));
		goto out;
	}
	close(fd);
	if ((fd = open(path, O_RDONLY | O_DIRECT)) < 0) {
		printf("cannot check: open(%s, O_DIRECT): %s\n", path, strerror(errno));
		goto out;
	}
	if (hipMalloc(&dev, 2 * 4 * KIB + N * STRIDE) != hipSuccess) {
		printf("cannot check: hipMalloc failed\n");
		goto out;
	}
	HF(hipFileDriverOpen());
	HF(hipFileHandleRegister(&fh, &(hipFileDescr_t){ .type = hipFileHandleTypeOpaqueFD,
							 .handle.fd = fd }));
	printf("expected: the batch refused, or all %d entries reported\n", N);
	r = hipFileBatchIOSetUp(&b, N);
	if (r.err != hipFileSuccess) {
		printf("actual: hipFileBatchIOSetUp: %s (refused, as the docs say)\n",
		       hipFileGetOpErrorString(r.err));
		rc = 0;
		goto deregister;
	}
	for (int k = 0; k < N; k++)
		io[k] = (hipFileIOParams_t){ .mode = hipFileBatch, .u.batch = { .devPtr_base = dev,
			.file_offset = k == BAD ? FILE_SIZE + 1024 * KIB : 4096 + k * SIZE,
			.devPtr_offset = 4 * KIB + k * STRIDE, .size = SIZE }, .fh = fh,
			.opcode = hipFileBatchRead, .cookie = &io[k] };
	r = hipFileBatchIOSubmit(b, N, io, 0);
	if (r.err != hipFileSuccess) {
		printf("actual: hipFileBatchIOSubmit: %s (the batch rejected whole)\n",
		       hipFileGetOpErrorString(r.err));
		rc = 0;
		goto destroy;
	}
	for (time_t end = time(NULL) + 30; got < N && time(NULL) < end;) {
		struct timespec ts = { 1, 0 };
		unsigned nr = N;

		r = hipFileBatchIOGetStatus(b, 1, &nr, ev, &ts);
		if (r.err != hipFileSuccess)
			break;
		for (unsigned i = 0; i < nr && i < N; i++)
			for (int k = 0; k < N; k++)
				if (ev[i].cookie == &io[k] && !status[k] && (ev[i].status &
				    (hipFileComplete | hipFileFailed | hipFileInvalid |
				     hipFileCanceled | hipFileTimeout)))
					status[k] = ev[i].status, got++;
	}
	printf("actual: SetUp and Submit succeeded; %d of %d entries reported%s%s\n", got, N,
	       r.err != hipFileSuccess ? ", hipFileBatchIOGetStatus: " : " within 30 s",
	       r.err != hipFileSuccess ? hipFileGetOpErrorString(r.err) : "");
	rc = got < N;
destroy:
	hipFileBatchIODestroy(b);
deregister:
	hipFileHandleDeregister(fh);
	(void)hipFileDriverClose();
out:
	if (dev)
		(void)hipFree(dev);
	if (fd >= 0)
		close(fd);
	unlink(path);
	free(buf);
	return rc;
}
