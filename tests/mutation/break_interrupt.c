// SPDX-License-Identifier: MIT
/*
 * break_interrupt.so: an LD_PRELOAD shim that breaks the interrupt contract
 * one way at a time, so that host_interrupt can be shown to catch it.
 * $GPUCONFORM_BREAK picks the break:
 *
 *   read-eintr-scribbles  an interrupted read(2) writes into its buffer
 *   read-eintr-consumes   an interrupted read(2) of a pipe stays queued and
 *                         eats the first byte written to that pipe afterwards
 *   write-overreport      a partial write(2) reports one byte more than it wrote
 *   nanosleep-rem-zero    an interrupted nanosleep reports rem = 0
 *   nanosleep-rem-short   an interrupted nanosleep reports half its real rem,
 *                         so restarting with it wakes early
 *   futex-wait-clobbers   an interrupted FUTEX_WAIT changes the futex word
 *   futex-wake-phantom    the FUTEX_WAKE after an interrupted FUTEX_WAIT on the
 *                         same word counts one waiter more woken: the old one
 *                         stayed queued
 *   sa-restart-ignored    sigaction() drops SA_RESTART from the action it installs,
 *                         so a storm asked to restart calls gives EINTR instead
 *
 * Wrapped: read, __read_chk (_FORTIFY_SOURCE builds), write, nanosleep,
 * clock_nanosleep (relative), syscall (futex), sigaction. The first time a break changes
 * a result the shim writes `break_interrupt: applied NAME` to stderr, so a
 * failure can be told from a break that never took effect. An unknown name
 * exits 2 at load. The shim's globals are set once at load, or touched only by
 * the one thread the storm is aimed at.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* glibc's fortified read(2); declared by <bits/unistd.h> only under _FORTIFY_SOURCE. */
ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen);

enum brk {
	BRK_NONE,
	BRK_READ_SCRIBBLES,
	BRK_READ_CONSUMES,
	BRK_WRITE_OVERREPORT,
	BRK_REM_ZERO,
	BRK_REM_SHORT,
	BRK_FUTEX_CLOBBERS,
	BRK_FUTEX_PHANTOM,
	BRK_SA_RESTART_IGNORED,
};

static const char *const brk_names[] = {
	[BRK_READ_SCRIBBLES] = "read-eintr-scribbles",
	[BRK_READ_CONSUMES] = "read-eintr-consumes",
	[BRK_WRITE_OVERREPORT] = "write-overreport",
	[BRK_REM_ZERO] = "nanosleep-rem-zero",
	[BRK_REM_SHORT] = "nanosleep-rem-short",
	[BRK_FUTEX_CLOBBERS] = "futex-wait-clobbers",
	[BRK_FUTEX_PHANTOM] = "futex-wake-phantom",
	[BRK_SA_RESTART_IGNORED] = "sa-restart-ignored",
};

static enum brk mode;
static bool announced;

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_read_chk)(int, void *, size_t, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_nanosleep)(const struct timespec *, struct timespec *);
static int (*real_clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
static long (*real_syscall)(long, ...);
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

/*
 * read-eintr-consumes: the pipe an interrupted read left its reader on.
 * Per thread: only a write by the thread that was interrupted pays the byte,
 * so the shim's own read never races (and blocks behind) another reader.
 */
static _Thread_local int owed_fd = -1;
static _Thread_local dev_t owed_dev;
static _Thread_local ino_t owed_ino;
/* futex-wake-phantom: the word an interrupted waiter stayed queued on. */
static uintptr_t phantom_addr;

static void say(const char *a, const char *b)
{
	if (!real_write || real_write(2, a, strlen(a)) < 0 || real_write(2, b, strlen(b)) < 0)
		return;
	real_write(2, "\n", 1);
}

static void applied(void)
{
	int e = errno;

	if (!announced) {
		announced = true;
		say("break_interrupt: applied ", brk_names[mode]);
	}
	errno = e;
}

static void *next_sym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		say("break_interrupt: no next symbol ", name);
		_exit(2);
	}
	return p;
}

__attribute__((constructor)) static void shim_init(void)
{
	const char *want = getenv("GPUCONFORM_BREAK");

	real_write = (ssize_t (*)(int, const void *, size_t))next_sym("write");
	real_read = (ssize_t (*)(int, void *, size_t))next_sym("read");
	real_read_chk = (ssize_t (*)(int, void *, size_t, size_t))next_sym("__read_chk");
	real_nanosleep = (int (*)(const struct timespec *, struct timespec *))
		next_sym("nanosleep");
	real_clock_nanosleep = (int (*)(clockid_t, int, const struct timespec *,
					struct timespec *))next_sym("clock_nanosleep");
	real_syscall = (long (*)(long, ...))next_sym("syscall");
	real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))
		next_sym("sigaction");
	if (!want || !*want)
		return;
	for (size_t i = 1; i < sizeof(brk_names) / sizeof(brk_names[0]); i++)
		if (!strcmp(want, brk_names[i]))
			mode = (enum brk)i;
	if (mode == BRK_NONE) {
		say("break_interrupt: unknown GPUCONFORM_BREAK=", want);
		_exit(2);
	}
}

/* ------------------------------------------------------------------ read */

static bool fifo_id(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

static void after_read(ssize_t r, int fd, void *buf, size_t n)
{
	int e = errno;

	if (r != -1 || e != EINTR)
		return;
	if (mode == BRK_READ_SCRIBBLES && n > 0) {
		memset(buf, 0x5a, n < 8 ? n : 8);
		applied();
	} else if (mode == BRK_READ_CONSUMES && fifo_id(fd, &owed_dev, &owed_ino)) {
		owed_fd = fd;
	}
	errno = e;
}

ssize_t read(int fd, void *buf, size_t n)
{
	ssize_t r = real_read(fd, buf, n);

	after_read(r, fd, buf, n);
	return r;
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	ssize_t r = real_read_chk(fd, buf, n, buflen);

	after_read(r, fd, buf, n);
	return r;
}

/* ----------------------------------------------------------------- write */

/* read-eintr-consumes: the first write into the owed pipe loses a byte to the stale reader. */
static void pay_owed_byte(int fd)
{
	dev_t dev;
	ino_t ino;
	uint8_t b;

	if (!fifo_id(fd, &dev, &ino) || dev != owed_dev || ino != owed_ino)
		return;
	if (real_read(owed_fd, &b, 1) == 1)
		applied();
	owed_fd = -1;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	ssize_t r = real_write(fd, buf, n);
	int e = errno;

	if (mode == BRK_WRITE_OVERREPORT && r > 0 && (size_t)r < n) {
		r++;
		applied();
	} else if (mode == BRK_READ_CONSUMES && r > 0 && owed_fd >= 0) {
		pay_owed_byte(fd);
	}
	errno = e;
	return r;
}

/* ------------------------------------------------------------- nanosleep */

static void break_rem(struct timespec *rem)
{
	uint64_t ns;

	if (mode == BRK_REM_ZERO) {
		rem->tv_sec = 0;
		rem->tv_nsec = 0;
		applied();
	} else if (mode == BRK_REM_SHORT) {
		ns = ((uint64_t)rem->tv_sec * 1000000000u + (uint64_t)rem->tv_nsec) / 2;
		rem->tv_sec = (time_t)(ns / 1000000000u);
		rem->tv_nsec = (long)(ns % 1000000000u);
		applied();
	}
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	int r = real_nanosleep(req, rem);
	int e = errno;

	if (r == -1 && e == EINTR && rem)
		break_rem(rem);
	errno = e;
	return r;
}

int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	int r = real_clock_nanosleep(clk, flags, req, rem);

	if (r == EINTR && rem && !(flags & TIMER_ABSTIME))
		break_rem(rem);
	return r;
}

/* --------------------------------------------------------------- syscall */

static long break_futex(long r, const long a[6])
{
	int op = (int)a[1] & FUTEX_CMD_MASK;
	bool eintr = r == -1 && errno == EINTR;

	if (mode == BRK_FUTEX_CLOBBERS && op == FUTEX_WAIT && eintr) {
		(*(volatile uint32_t *)a[0])++;
		applied();
	} else if (mode == BRK_FUTEX_PHANTOM && op == FUTEX_WAIT && eintr) {
		phantom_addr = (uintptr_t)a[0];
	} else if (mode == BRK_FUTEX_PHANTOM && op == FUTEX_WAKE && r >= 0 &&
		   phantom_addr == (uintptr_t)a[0]) {
		phantom_addr = 0;
		r++;
		applied();
	}
	return r;
}

/* x86-64 and aarch64 pass all six arguments in registers: reading six is what glibc does. */
long syscall(long nr, ...)
{
	va_list ap;
	long a[6], r;
	int e;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	r = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	e = errno;
	if (nr == SYS_futex)
		r = break_futex(r, a);
	errno = e;
	return r;
}

/* ------------------------------------------------------------- sigaction */

int sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction dropped;

	if (mode != BRK_SA_RESTART_IGNORED || !act || !(act->sa_flags & SA_RESTART))
		return real_sigaction(signo, act, old);
	dropped = *act;
	dropped.sa_flags &= ~SA_RESTART;
	applied();
	return real_sigaction(signo, &dropped, old);
}
