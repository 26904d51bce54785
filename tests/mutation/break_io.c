// SPDX-License-Identifier: MIT
/*
 * break_io.so: an LD_PRELOAD shim that breaks the host_io contract in the way
 * $GPUCONFORM_BREAK names, so tests/mutation/test_io_breaks.py can show that
 * host_io notices. Only files whose name starts with `gpuconform-` (the
 * scratch files) are touched; everything else passes straight through.
 *
 *   pread-flip             pread returns the right count, one byte inverted
 *   pread-overrun          pread also changes the byte just past the request
 *   pwrite-drop-last       buffered pwrite writes count - 1 bytes, claims count
 *   dio-accept-misaligned  an O_DIRECT pread/pwrite refused with EINVAL is
 *                          redone without O_DIRECT and reports success
 *
 * Which names are called depends on the build: meson's -D_FILE_OFFSET_BITS=64
 * makes host_io import pread64/pwrite64 (nm -D), a plain build pread/pwrite
 * (on x86_64 glibc exports both names for the same code), a _FORTIFY_SOURCE
 * build may call __pread_chk/__pread64_chk. All six are wrapped.
 */
/*
 * Both would rename or wrap the functions defined below: _FILE_OFFSET_BITS=64
 * (meson's default) makes the header's pread an alias of pread64, and
 * _FORTIFY_SOURCE adds inline pread wrappers. Each name is defined here.
 */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

enum mode { M_NONE, M_PREAD_FLIP, M_PREAD_OVERRUN, M_PWRITE_DROP_LAST, M_DIO_ACCEPT };

static const char *const mode_names[] = {
	[M_PREAD_FLIP] = "pread-flip",
	[M_PREAD_OVERRUN] = "pread-overrun",
	[M_PWRITE_DROP_LAST] = "pwrite-drop-last",
	[M_DIO_ACCEPT] = "dio-accept-misaligned",
};

static enum mode mode;
static pread_fn real_pread;
static pwrite_fn real_pwrite;

__attribute__((constructor)) static void init(void)
{
	const char *b = getenv("GPUCONFORM_BREAK");

	real_pread = (pread_fn)dlsym(RTLD_NEXT, "pread");
	real_pwrite = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
	if (!real_pread || !real_pwrite) {
		fprintf(stderr, "break_io: dlsym: %s\n", dlerror());
		abort();
	}
	if (!b || !*b)
		return;
	for (size_t i = 1; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (strcmp(b, mode_names[i]) == 0)
			mode = (enum mode)i;
	if (mode == M_NONE) {
		fprintf(stderr, "break_io: unknown GPUCONFORM_BREAK=%s\n", b);
		abort();
	}
}

static bool is_scratch(int fd)
{
	char link[64], target[4096];
	const char *base;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	base = strrchr(target, '/');
	return base && strncmp(base + 1, "gpuconform-", 11) == 0;
}

static bool is_direct(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_DIRECT);
}

/* Run the real call with O_DIRECT cleared, then put the flags back. */
static ssize_t without_direct(int fd, void *rbuf, const void *wbuf, size_t n, off_t off)
{
	int fl = fcntl(fd, F_GETFL), saved;
	ssize_t r;

	fcntl(fd, F_SETFL, fl & ~O_DIRECT);
	r = rbuf ? real_pread(fd, rbuf, n, off) : real_pwrite(fd, wbuf, n, off);
	saved = errno;
	fcntl(fd, F_SETFL, fl);
	errno = saved;
	return r;
}

static ssize_t broken_pread(int fd, void *buf, size_t n, off_t off)
{
	ssize_t r = real_pread(fd, buf, n, off);

	if (mode == M_NONE || !is_scratch(fd))
		return r;
	if (mode == M_DIO_ACCEPT && r < 0 && errno == EINVAL && is_direct(fd))
		return without_direct(fd, buf, NULL, n, off);
	if (mode == M_PREAD_FLIP && r > 0)
		((unsigned char *)buf)[r / 2] ^= 0xff;
	if (mode == M_PREAD_OVERRUN && r > 0)
		((unsigned char *)buf)[n] ^= 0xff;
	return r;
}

static ssize_t broken_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t r;

	if (mode == M_PWRITE_DROP_LAST && n > 1 && is_scratch(fd) && !is_direct(fd)) {
		r = real_pwrite(fd, buf, n - 1, off);
		return r == (ssize_t)(n - 1) ? (ssize_t)n : r;
	}
	r = real_pwrite(fd, buf, n, off);
	if (mode == M_DIO_ACCEPT && r < 0 && errno == EINVAL && is_scratch(fd) && is_direct(fd))
		return without_direct(fd, NULL, buf, n, off);
	return r;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return broken_pread(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	return broken_pread(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return broken_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	return broken_pwrite(fd, buf, n, off);
}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	if (n > buflen)
		abort(); /* what glibc's __chk_fail does, minus the message */
	return broken_pread(fd, buf, n, off);
}

ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
	return __pread_chk(fd, buf, n, off, buflen);
}
