// SPDX-License-Identifier: MIT
/*
 * Subjects of the runner's run-flow tests: kernel log lines, a kernel taint
 * (simulated through a file), and subtests that take a little time.
 *
 * Nothing here touches the machine unless asked: the kmsg-* subtests write to
 * /dev/kmsg only when GPUCONFORM_SELFTEST_KMSG=1 (otherwise they skip), and
 * `taint` writes only to the file named by GPUCONFORM_SELFTEST_TAINT_FILE,
 * never to /proc. So a plain run of the selftest manifest stays harmless.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KMSG_ENV "GPUCONFORM_SELFTEST_KMSG"
#define TAINT_ENV "GPUCONFORM_SELFTEST_TAINT_FILE"
#define SLEEP_ENV "GPUCONFORM_SELFTEST_SLEEP_MS"
#define LONG_SLEEP_ENV "GPUCONFORM_SELFTEST_LONG_SLEEP_MS"

static void kmsg_write(const char *line)
{
	const char *want = getenv(KMSG_ENV);
	size_t len = strlen(line);
	int fd;

	gc_require_f(want && strcmp(want, "1") == 0,
		     "writes to /dev/kmsg only with " KMSG_ENV "=1");
	fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	gc_require_f(fd >= 0, "/dev/kmsg: %s", strerror(errno));
	gc_assert_cmpint(write(fd, line, len), ==, (intmax_t)len);
	close(fd);
}

static void kmsg_warn(void *fx)
{
	(void)fx;
	kmsg_write("<4>gpuconform-selftest: simulated warning\n");
}

static void kmsg_warn_fail(void *fx)
{
	(void)fx;
	kmsg_write("<4>gpuconform-selftest: simulated warning before a failure\n");
	gc_fail("selftest: failing after a kernel warning");
}

static void kmsg_gpu_reset(void *fx)
{
	(void)fx;
	kmsg_write("<3>gpuconform-selftest: amdgpu 0000:00:00.0: amdgpu: GPU reset begin! "
		   "(simulated)\n");
}

/* Bit 9 (W, a WARN_ON happened) in the file the runner was told to watch. */
static void taint(void *fx)
{
	const char *path = getenv(TAINT_ENV);
	FILE *f;

	(void)fx;
	gc_require_f(path && *path, "needs " TAINT_ENV " (a file standing for "
		     "/proc/sys/kernel/tainted)");
	f = fopen(path, "w");
	gc_assert_f(f != NULL, "%s: %s", path, strerror(errno));
	gc_assert_cmpint(fprintf(f, "512\n"), ==, 4);
	gc_assert_cmpint(fclose(f), ==, 0);
}

static void sleep_ms(const char *var, long dflt)
{
	const char *env = getenv(var);
	long ms = env ? strtol(env, NULL, 10) : dflt;
	struct timespec ts;

	gc_assert_f(ms >= 0 && ms <= 600000, "%s=%s: not 0..600000", var, env);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void nap(void *fx)
{
	(void)fx;
	sleep_ms(SLEEP_ENV, 300);
}

static void long_nap(void *fx)
{
	(void)fx;
	sleep_ms(LONG_SLEEP_ENV, 30000);
}

/* What the runner put in the environment: devices, run id. */
static void print_env(void *fx)
{
	static const char *const vars[] = {
		"GPUCONFORM_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
		"HIP_VISIBLE_DEVICES", "GPUCONFORM_RUN_ID",
	};
	size_t i;

	(void)fx;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		gc_info("env %s=%s", vars[i], v ? v : "(unset)");
	}
}

static const struct gc_subtest subtests[] = {
	{ "kmsg-warn", kmsg_warn, "writes a warning to /dev/kmsg and passes: dmesg-warn" },
	{ "kmsg-warn-fail", kmsg_warn_fail, "writes a warning to /dev/kmsg and fails: dmesg-fail" },
	{ "kmsg-gpu-reset", kmsg_gpu_reset, "writes a simulated GPU reset: the run aborts" },
	{ "taint", taint, "sets bit 9 in the simulated taint file: the run aborts" },
	{ "sleep-1", nap, "sleeps " SLEEP_ENV " ms (default 300) and passes" },
	{ "sleep-2", nap, "the same" },
	{ "sleep-3", nap, "the same" },
	{ "sleep-long", long_nap, "sleeps " LONG_SLEEP_ENV " ms (default 30000) and passes" },
	{ "print-env", print_env, "prints the device variables and the run id it was given" },
	{ 0 }
};

GC_MAIN(.name = "selftest_flow", .description = "run-flow subjects", .subtests = subtests)
