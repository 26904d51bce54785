// SPDX-License-Identifier: MIT
/*
 * Subjects of the runner's placement tests: one subtest of each placement
 * (--list-placement), telling what they were given (the device variables)
 * and showing what the runner did with them: whether the copies of a gpu
 * subtest ran at the same time (rendezvous), whether those of a gpu-alone one
 * never did (alone), a failure on one GPU only, a GPU that goes away.
 *
 * They use no GPU: the runner's tests give the runner a directory standing
 * for the machine's GPU files. Each subtest that needs a variable skips
 * without it, so a plain run of the selftest manifest stays harmless.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DIR_ENV "GPUCONFORM_SELFTEST_PLACEMENT_DIR" /* where the markers go */
#define N_ENV "GPUCONFORM_SELFTEST_PLACEMENT_N"     /* how many copies meet */
#define FAIL_ENV "GPUCONFORM_SELFTEST_FAIL_ON"      /* the GPU index fail-on fails on */
#define HIDE_ENV "GPUCONFORM_SELFTEST_HIDE"         /* INDEX:PATH: on GPU INDEX, remove PATH */
#define WAIT_ENV "GPUCONFORM_SELFTEST_PLACEMENT_WAIT_MS" /* how long a copy waits (30000) */
#define XID_ENV "GPUCONFORM_SELFTEST_XID"           /* INDEX:BUS: on GPU INDEX, an Xid 79 */
#define KMSG_ENV "GPUCONFORM_SELFTEST_KMSG"

static const char *env_or_skip(const char *var)
{
	const char *v = getenv(var);

	gc_require_f(v && *v, "needs %s (set by the runner's placement tests)", var);
	return v;
}

static const char *my_gpu(void)
{
	const char *v = getenv(GC_DEVICES_ENV);

	return v && *v ? v : "none";
}

static void print_env(void *fx)
{
	static const char *const vars[] = {
		GC_DEVICES_ENV, "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES",
		"HIP_VISIBLE_DEVICES",
	};

	(void)fx;
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		const char *v = getenv(vars[i]);

		gc_info("env %s=%s", vars[i], v ? v : "(unset)");
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void marker(char *buf, size_t len, const char *dir, const char *what, const char *gpu)
{
	gc_assert_f((size_t)snprintf(buf, len, "%s/%s-%s", dir, what, gpu) < len, "path too long");
}

static int count_markers(const char *dir, const char *what, long n)
{
	char path[4096], gpu[24];
	int found = 0;

	for (long i = 0; i < n; i++) {
		snprintf(gpu, sizeof(gpu), "%ld", i);
		marker(path, sizeof(path), dir, what, gpu);
		found += access(path, F_OK) == 0;
	}
	return found;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	gc_assert_f(fd >= 0, "%s: %s", path, strerror(errno));
	close(fd);
}

/* Every copy (one a GPU) leaves its marker and waits for all N: they ran at once. */
static void rendezvous(void *fx)
{
	const char *dir = env_or_skip(DIR_ENV), *wait = getenv(WAIT_ENV);
	long n = strtol(env_or_skip(N_ENV), NULL, 10);
	long wait_ms = wait && *wait ? strtol(wait, NULL, 10) : 30000;
	char path[4096];
	int found = 0;

	(void)fx;
	marker(path, sizeof(path), dir, "met", my_gpu());
	touch(path);
	for (long ms = 0; ms < wait_ms && (found = count_markers(dir, "met", n)) < n; ms += 10)
		sleep_ms(10);
	gc_assert_f(found == n, "gpu %s: %d of %ld copies met within %ld ms", my_gpu(), found, n,
		    wait_ms);
}

/* No other copy runs while this one does. */
static void alone(void *fx)
{
	const char *dir = env_or_skip(DIR_ENV);
	long n = strtol(env_or_skip(N_ENV), NULL, 10);
	char path[4096];
	int others;

	(void)fx;
	marker(path, sizeof(path), dir, "running", my_gpu());
	touch(path);
	sleep_ms(200);
	others = count_markers(dir, "running", n) - 1;
	unlink(path);
	gc_assert_f(others == 0, "gpu %s: %d other copies were running beside it", my_gpu(),
		    others);
}

static void fail_on(void *fx)
{
	const char *bad = env_or_skip(FAIL_ENV);

	(void)fx;
	gc_assert_f(strcmp(bad, my_gpu()) != 0, "fails on gpu %s, as asked", bad);
}

/* On GPU INDEX, move PATH (the directory standing for that GPU) aside: it is gone. */
static void hide_device(void *fx)
{
	const char *spec = env_or_skip(HIDE_ENV), *path = strchr(spec, ':');
	char gone[4200];

	(void)fx;
	gc_assert_f(path, "%s=%s: not INDEX:PATH", HIDE_ENV, spec);
	if ((size_t)(path - spec) != strlen(my_gpu()) || strncmp(spec, my_gpu(), strlen(my_gpu())))
		return;
	path++;
	gc_assert_f((size_t)snprintf(gone, sizeof(gone), "%s.gone", path) < sizeof(gone),
		    "path too long");
	gc_assert_f(rename(path, gone) == 0, "rename %s: %s", path, strerror(errno));
	gc_info("gpu %s: moved %s aside", my_gpu(), path);
}

/*
 * On the GPU $GPUCONFORM_SELFTEST_XID names (INDEX:BUS, BUS as `0000:20:00`),
 * write the NVIDIA driver's line for a GPU fallen off the bus to /dev/kmsg,
 * only with GPUCONFORM_SELFTEST_KMSG=1 (root): the runner must lose that GPU,
 * not stop the run.
 */
static void xid(void *fx)
{
	const char *spec = env_or_skip(XID_ENV), *bus = strchr(spec, ':'), *kmsg = getenv(KMSG_ENV);
	char line[256];
	int fd, n;

	(void)fx;
	gc_require_f(kmsg && !strcmp(kmsg, "1"), "writes to /dev/kmsg only with " KMSG_ENV "=1");
	gc_assert_f(bus, "%s=%s: not INDEX:BUS", XID_ENV, spec);
	if ((size_t)(bus - spec) != strlen(my_gpu()) || strncmp(spec, my_gpu(), strlen(my_gpu())))
		return;
	n = snprintf(line, sizeof(line), "<3>NVRM: Xid (PCI:%s): 79, pid='<unknown>', "
		     "name=<unknown>, GPU has fallen off the bus. (gpuconform-selftest)\n", bus + 1);
	fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	gc_require_f(fd >= 0, "/dev/kmsg: %s", strerror(errno));
	gc_assert_cmpint(write(fd, line, (size_t)n), ==, n);
	close(fd);
}

static const struct gc_subtest subtests[] = {
	{ "hide-device", hide_device, "one GPU: on the GPU " HIDE_ENV " names, removes its files" },
	{ "xid", xid, "one GPU: on the GPU " XID_ENV " names, an Xid 79 in the kernel log" },
	{ "env", print_env, "one GPU: prints the device variables it was given" },
	{ "rendezvous", rendezvous, "one GPU: every copy waits for all the others to start" },
	{ "alone", alone, "one GPU, alone: fails when another copy runs beside it" },
	{ "fail-on", fail_on, "one GPU: fails on the GPU " FAIL_ENV " names" },
	{ "node", print_env, "every GPU: prints the device variables it was given" },
	{ "host", print_env, "no GPU: prints the device variables it was given" },
	{ 0 }
};

static const struct gc_placement_rule placements[] = {
	{ "alone", GC_PLACE_GPU_ALONE },
	{ "node", GC_PLACE_NODE },
	{ "host", GC_PLACE_HOST },
	{ 0 }
};

GC_MAIN(.name = "selftest_placement", .description = "placement subjects",
	.subtests = subtests, .placement = GC_PLACE_GPU, .placements = placements)
