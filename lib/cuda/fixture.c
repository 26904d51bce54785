// SPDX-License-Identifier: MIT
/*
 * What every CUDA binary's fixture is made of: the leak snapshot and check,
 * the leak-checked fixture, and dynamic subtests per device and per pair of
 * devices (lib/core.h's gc_each_case() and gc_each_pair() over cu->devices).
 */
#include "gc_cuda.h"
#include "devfd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- leak checks */

int gc_cuda_snapshot(const struct gc_cuda *cu, struct gc_cuda_snapshot *s)
{
	CUcontext saved = NULL;

	memset(s, 0, sizeof(*s));
	s->n_devices = cu->n_devices < GC_CUDA_SNAPSHOT_MAX ? cu->n_devices : GC_CUDA_SNAPSHOT_MAX;
	cu->cuCtxGetCurrent(&saved);
	for (int i = 0; i < s->n_devices; i++) {
		size_t total;

		if (gc_cuda_use(cu, i) || cu->cuMemGetInfo(&s->free_mem[i], &total))
			return -EIO;
	}
	cu->cuCtxSetCurrent(saved);
	s->nvidia_fds = gc_devfd_count("/dev/nvidia");
	return s->nvidia_fds < 0 ? s->nvidia_fds : 0;
}

void gc_cuda_leak_check(const struct gc_cuda *cu, const struct gc_cuda_snapshot *before,
			size_t slack)
{
	struct gc_cuda_snapshot now;
	char fds[512];

	if (gc_cuda_snapshot(cu, &now))
		gc_fail("leak check: cannot read device memory or /proc/self/fd");
	for (int i = 0; i < now.n_devices; i++) {
		long long lost = (long long)before->free_mem[i] - (long long)now.free_mem[i];

		if (lost > (long long)slack || lost < -(long long)slack)
			gc_fail("leak: device %d has %lld bytes less free memory than before the "
				"subtest (%zu -> %zu; slack %zu)", i, lost, before->free_mem[i],
				now.free_mem[i], slack);
	}
	if (now.nvidia_fds != before->nvidia_fds) {
		gc_devfd_list("/dev/nvidia", fds, sizeof(fds));
		gc_fail("leak: %d /dev/nvidia* fds open, %d before the subtest (now: %s)",
			now.nvidia_fds, before->nvidia_fds, fds);
	}
}

/* ------------------------------------------------------------ fixture */

void *gc_cuda_fixture_new(struct gc_cuda *cu, size_t size, size_t slack)
{
	struct gc_cuda_fixture *dev = calloc(1, size);

	if (!dev) {
		gc_cuda_close(cu);
		gc_fail("calloc(%zu) failed", size);
	}
	dev->cu = cu;
	dev->slack = slack;
	return dev;
}

void gc_cuda_fixture_snapshot(void *data)
{
	struct gc_cuda_fixture *dev = data;

	gc_cu_assert(dev->cu, gc_cuda_use(dev->cu, 0));
	if (gc_cuda_snapshot(dev->cu, &dev->before))
		gc_fail("leak snapshot: cannot read device free memory or /proc/self/fd");
}

void gc_cuda_fixture_check(void *data)
{
	struct gc_cuda_fixture *dev = data;

	for (int i = 0; i < dev->before.n_devices; i++) {
		gc_cu_assert(dev->cu, gc_cuda_use(dev->cu, i));
		gc_cu_assert(dev->cu, dev->cu->cuCtxSynchronize());
	}
	gc_cu_assert(dev->cu, gc_cuda_use(dev->cu, 0));
	gc_cuda_leak_check(dev->cu, &dev->before, dev->slack);
}

void gc_cuda_fixture_free(void *data)
{
	struct gc_cuda_fixture *dev = data;

	gc_cuda_close(dev->cu);
	free(dev);
}

/* ------------------------------------------------- per device, per pair */

const char *gc_cuda_device_name(const struct gc_cuda_device *d, char *buf, size_t len)
{
	return gc_device_name(d->ordinal, buf, len);
}

struct device_call {
	void (*body)(void *ctx, const struct gc_cuda_device *d);
	void (*pair)(void *ctx, const struct gc_cuda_device *a, const struct gc_cuda_device *b);
	void *ctx;
};

static const char *device_case_name(const void *d, char *buf, size_t len)
{
	return gc_cuda_device_name(d, buf, len);
}

static void device_case_run(void *ctx, const void *d)
{
	const struct device_call *k = ctx;

	k->body(k->ctx, d);
}

static int devices_upto(const struct gc_cuda *cu, int n)
{
	return n < 0 || n > cu->n_devices ? cu->n_devices : n;
}

void gc_cuda_each_device(const struct gc_cuda *cu, int n,
			 void (*body)(void *ctx, const struct gc_cuda_device *d), void *ctx)
{
	struct device_call k = { .body = body, .ctx = ctx };

	gc_each_case(&(const struct gc_cases){ cu->devices, (size_t)devices_upto(cu, n),
					       sizeof(cu->devices[0]), device_case_name,
					       device_case_run },
		     &k);
}

static const char *device_pair_name(const void *a, const void *b, char *buf, size_t len)
{
	char na[32], nb[32];

	snprintf(buf, len, "%s-%s", gc_cuda_device_name(a, na, sizeof(na)),
		 gc_cuda_device_name(b, nb, sizeof(nb)));
	return buf;
}

static void device_pair_run(void *ctx, const void *a, const void *b)
{
	const struct device_call *k = ctx;

	k->pair(k->ctx, a, b);
}

void gc_cuda_each_device_pair(const struct gc_cuda *cu, int n, enum gc_pairs which,
			      void (*body)(void *ctx, const struct gc_cuda_device *a,
					   const struct gc_cuda_device *b),
			      void *ctx)
{
	const struct gc_cases devs = { cu->devices, (size_t)devices_upto(cu, n),
				       sizeof(cu->devices[0]), NULL, NULL };
	struct device_call k = { .pair = body, .ctx = ctx };

	gc_each_pair(&(const struct gc_product){ devs, devs, device_pair_name, device_pair_run,
						 which },
		     &k);
}
