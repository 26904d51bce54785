// SPDX-License-Identifier: MIT
/*
 * The HIP twins' fixture: the leak snapshot (device free memory, /dev/kfd and
 * /dev/dri descriptors) and check, the leak-checked fixture, and dynamic
 * subtests per device and per pair of devices over hip->devices. See gc_hip.h.
 */
#include "gc_hip.h"
#include "devfd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- leak checks */

int gc_hip_snapshot(const struct gc_hip *hip, struct gc_hip_snapshot *s, hipError_t *err)
{
	size_t total;

	memset(s, 0, sizeof(*s));
	*err = hipSuccess;
	s->n_devices = hip->n_devices < GC_HIP_SNAPSHOT_MAX ? hip->n_devices : GC_HIP_SNAPSHOT_MAX;
	for (int i = 0; i < s->n_devices && *err == hipSuccess; i++) {
		*err = gc_hip_use(hip, i);
		if (*err == hipSuccess)
			*err = hip->hipMemGetInfo(&s->free_mem[i], &total);
	}
	if (*err == hipSuccess)
		*err = gc_hip_use(hip, 0);
	if (*err != hipSuccess)
		return -EIO;
	s->kfd_fds = gc_devfd_count("/dev/kfd");
	s->dri_fds = gc_devfd_count("/dev/dri");
	return s->kfd_fds < 0 ? s->kfd_fds : s->dri_fds < 0 ? s->dri_fds : 0;
}

static void snapshot_or_fail(const struct gc_hip *hip, struct gc_hip_snapshot *s,
			     const char *when)
{
	hipError_t e;
	char err[160];
	int r = gc_hip_snapshot(hip, s, &e);

	if (r == -EIO)
		gc_fail("%s: reading device free memory: %s", when,
			gc_hip_errstr(hip, e, err, sizeof(err)));
	if (r)
		gc_fail("%s: reading /proc/self/fd: %s", when, strerror(-r));
}

static void fds_check(const char *node, int before, int now)
{
	char list[512];

	if (now == before)
		return;
	gc_devfd_list(node, list, sizeof(list));
	gc_fail("leak: %d %s* fds open, %d before the subtest (now: %s)", now, node, before, list);
}

void gc_hip_leak_check(const struct gc_hip *hip, const struct gc_hip_snapshot *before,
		       size_t slack)
{
	struct gc_hip_snapshot now;

	snapshot_or_fail(hip, &now, "leak check");
	for (int i = 0; i < now.n_devices; i++) {
		long long lost = (long long)before->free_mem[i] - (long long)now.free_mem[i];

		if (lost > (long long)slack || -lost > (long long)slack)
			gc_fail("leak: gpu%d has %lld bytes less free memory than before the "
				"subtest (%zu -> %zu; slack %zu)", i, lost, before->free_mem[i],
				now.free_mem[i], slack);
	}
	fds_check("/dev/kfd", before->kfd_fds, now.kfd_fds);
	fds_check("/dev/dri", before->dri_fds, now.dri_fds);
}

/* ------------------------------------------------------------ fixture */

void *gc_hip_fixture_new(struct gc_hip *hip, size_t size, size_t slack)
{
	struct gc_hip_fixture *f = calloc(1, size);

	if (!f) {
		gc_hip_close(hip);
		gc_fail("calloc(%zu) failed", size);
	}
	f->hip = hip;
	f->slack = slack;
	return f;
}

void gc_hip_fixture_snapshot(void *data)
{
	struct gc_hip_fixture *f = data;

	snapshot_or_fail(f->hip, &f->before, "leak snapshot");
}

void gc_hip_fixture_check(void *data)
{
	struct gc_hip_fixture *f = data;

	if (f->give_back)
		f->give_back(data);
	for (int i = 0; i < f->before.n_devices; i++) {
		gc_hip_assert(f->hip, gc_hip_use(f->hip, i));
		gc_hip_assert(f->hip, f->hip->hipDeviceSynchronize());
	}
	gc_hip_assert(f->hip, gc_hip_use(f->hip, 0));
	gc_hip_leak_check(f->hip, &f->before, f->slack);
}

void gc_hip_fixture_free(void *data)
{
	struct gc_hip_fixture *f = data;

	if (f->give_back)
		f->give_back(data);
	gc_hip_close(f->hip);
	free(f);
}

/* ------------------------------------------------- per device, per pair */

/* What the case engine hands back to one of the two callbacks below. */
struct hip_visit {
	void (*one)(void *ctx, const struct gc_hip_device *d);
	void (*two)(void *ctx, const struct gc_hip_device *a, const struct gc_hip_device *b);
	void *ctx;
};

static const char *gpu_name(const void *d, char *buf, size_t len)
{
	return gc_device_name(((const struct gc_hip_device *)d)->ordinal, buf, len);
}

static const char *gpu_pair_name(const void *a, const void *b, char *buf, size_t len)
{
	char na[32], nb[32];

	snprintf(buf, len, "%s-%s",
		 gc_device_name(((const struct gc_hip_device *)a)->ordinal, na, sizeof(na)),
		 gc_device_name(((const struct gc_hip_device *)b)->ordinal, nb, sizeof(nb)));
	return buf;
}

static void visit_one(void *ctx, const void *d)
{
	const struct hip_visit *v = ctx;

	v->one(v->ctx, d);
}

static void visit_two(void *ctx, const void *a, const void *b)
{
	const struct hip_visit *v = ctx;

	v->two(v->ctx, a, b);
}

static struct gc_cases device_cases(const struct gc_hip *hip, int n)
{
	size_t count = n < 0 || n > hip->n_devices ? (size_t)hip->n_devices : (size_t)n;

	return (struct gc_cases){ .first = hip->devices, .n = count,
				  .size = sizeof(hip->devices[0]), .name = gpu_name,
				  .run = visit_one };
}

void gc_hip_each_device(const struct gc_hip *hip, int n,
			void (*body)(void *ctx, const struct gc_hip_device *d), void *ctx)
{
	struct hip_visit v = { .one = body, .ctx = ctx };
	struct gc_cases cases = device_cases(hip, n);

	gc_each_case(&cases, &v);
}

void gc_hip_each_pair(const struct gc_hip *hip, int n, enum gc_pairs which,
		      void (*body)(void *ctx, const struct gc_hip_device *a,
				   const struct gc_hip_device *b),
		      void *ctx)
{
	struct hip_visit v = { .two = body, .ctx = ctx };
	struct gc_product p = { .a = device_cases(hip, n), .b = device_cases(hip, n),
				.name = gpu_pair_name, .run = visit_two, .pairs = which };

	gc_each_pair(&p, &v);
}
